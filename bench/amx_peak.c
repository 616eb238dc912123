/* amx_peak.c — the AMX bf16 ceiling of this machine (tdpbf16ps on tiles), for the bf16 GEMM rows of
 * `make bench` where vitgrad's bf16 backend is "amx". Not a test. The counterpart of
 * bench/fma_peak.c and bench/bf16_peak.c, with the same arguments and output (bench/peak_run.h).
 *
 * Each thread loads its own tile configuration (palette 1, eight tiles of 16 rows × 64 bytes) and
 * runs four independent C tiles in a 2×2 block, as gemm/amx.c and ../shared/tools/amx_probe.c:
 * tiles 0–3 += {A4, A6} · {B5, B7}. One tdpbf16ps is 16×16 outputs × 32 products, each a multiply
 * and an add: 16,384 FLOP. A and B hold bf16 1.0, so every tdpbf16ps adds exactly 32 to each C
 * element; the tiles are stored and checked every SEG iterations, before the sums leave the
 * integers a float holds exactly (32 · SEG = 2^23), and a wrong value fails the program.
 * Prints one line per thread count, "amx_peak threads T GFLOP/s X (…)", the best of RUNS runs
 * (default 5). Without AMX — the CPU (CPUID.(7,0):EDX bits 24 AMX-TILE, 22 AMX-BF16), the OS (XCR0
 * bits 17, 18) or Linux's permission (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), once
 * per process: it covers every thread) — it prints "amx_peak: skipped: <why>" and exits 0.
 *
 * The tile code is compiled for amx-tile/amx-bf16 by a target attribute, so the file builds with
 * any -march on x86-64 (gcc ≥ 11):
 *   gcc -std=c11 -O2 -march=native -fopenmp bench/amx_peak.c -o amx_peak && ./amx_peak [max_threads] [RUNS] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE                     /* syscall() under -std=c11 */
#endif
#include "peak_run.h"
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <errno.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

enum { SEG = 1 << 18 };                 /* iterations between checks: C reaches 32 · SEG = 2^23 */

/* palette 1: byte 0 palette_id, bytes 16–47 colsb[16] (bytes per row), bytes 48–63 rows[16] */
typedef struct { uint8_t palette_id, start_row, reserved[14]; uint16_t colsb[16]; uint8_t rows[16]; } tile_config;
_Static_assert(sizeof(tile_config) == 64, "the tile configuration is 64 bytes");

static uint16_t ones[16 * 32] __attribute__((aligned(64)));    /* 16 rows × 32 bf16 1.0 (0x3f80) */
static int wrong;                       /* set by a thread that stored a wrong sum */
static float wrong_value;

static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

/* NULL when this process may use AMX bf16 tiles, else why not (a sentence) */
static const char *amx_unusable(void) {
    static char why[160];
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22)))
        return "the CPU does not report AMX-TILE and AMX-BF16 (CPUID.7.0:EDX bits 24, 22; a VM may hide them)";
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
        return "the OS has not enabled XSAVE (CPUID.1:ECX.OSXSAVE), so no tile state";
    if ((xgetbv0() & (3ull << 17)) != (3ull << 17))
        return "the OS has not enabled the tile state (XCR0 bits 17, 18)";
    unsigned long long perm = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) {
        snprintf(why, sizeof why, "the kernel refused the tile data (arch_prctl(ARCH_REQ_XCOMP_PERM, "
                 "XTILEDATA): %s; Linux >= 5.16 needed)", strerror(errno));
        return why;
    }
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &perm) != 0 || !(perm & (1ull << XFEATURE_XTILEDATA)))
        return "the kernel did not grant the tile data (ARCH_GET_XCOMP_PERM lacks XTILEDATA)";
    return NULL;
}

/* iters × 4 tdpbf16ps on one thread (iters a multiple of SEG); returns a value so the work counts.
 * The tile intrinsics are volatile asm, so none is dropped or merged; the empty asm with a memory
 * clobber keeps the stores of the configuration and of `ones` before the tile loads that read them
 * (the loads' asm does not tell the compiler it reads memory). */
__attribute__((target("amx-tile,amx-bf16")))
static float amx_loop(long iters, float seed) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int t = 0; t < 8; t++) { cfg.rows[t] = 16; cfg.colsb[t] = 64; }
    static _Thread_local float C[4][16 * 16] __attribute__((aligned(64)));
    __asm__ volatile("" ::: "memory");
    _tile_loadconfig(&cfg);             /* tile state is per thread: each thread configures its own */
    _tile_loadd(4, ones, 64); _tile_loadd(6, ones, 64);             /* A: 16 rows × 32 bf16 */
    _tile_loadd(5, ones, 64); _tile_loadd(7, ones, 64);             /* B: 16 pairs × 16 columns */
    const float expect = 32.0f * SEG;
    float sum = seed;
    for (long done = 0; done < iters; done += SEG) {
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        for (long i = 0; i < SEG; i++) {
            _tile_dpbf16ps(0, 4, 5); _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 6, 5); _tile_dpbf16ps(3, 6, 7);
        }
        _tile_stored(0, C[0], 64); _tile_stored(1, C[1], 64);
        _tile_stored(2, C[2], 64); _tile_stored(3, C[3], 64);
        __asm__ volatile("" ::: "memory");
        for (int t = 0; t < 4; t++)
            for (int e = 0; e < 16 * 16; e++)
                if (C[t][e] != expect) {
                    #pragma omp critical(amx_peak_wrong)
                    { wrong = 1; wrong_value = C[t][e]; }
                }
        sum += C[0][0];
    }
    _tile_release();
    return sum;
}
#endif

int main(int argc, char **argv) {
    int maxt, reps;
    if (peak_args(argc, argv, &maxt, &reps)) return 2;
#if !(defined(__x86_64__) && defined(__GNUC__))
    printf("amx_peak: skipped: not an x86-64 build\n");
    return 0;
#else
    const char *why = amx_unusable();
    if (why) { printf("amx_peak: skipped: %s\n", why); return 0; }
    for (int i = 0; i < 16 * 32; i++) ones[i] = 0x3f80;
    /* one short pass on every thread first: a wrong sum stops us before any figure is printed */
    float s = 0;
    #pragma omp parallel num_threads(maxt) reduction(+ : s)
    s += amx_loop(SEG, 0);
    int rc = 0;
    if (!wrong)
        rc = peak_main(maxt, reps, "amx", "tdpbf16ps, 2x2 tiles of 16x16", amx_loop, 32L * SEG, 4.0 * 16 * 16 * 32 * 2);
    if (wrong) {
        printf("amx_peak: wrong result %g (expected %g): the tile instructions did not compute the "
               "product\n", wrong_value, 32.0 * SEG);
        return 1;
    }
    return rc || s == 12345.f;
#endif
}
