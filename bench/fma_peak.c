/* fma_peak.c — the FP32 multiply-add ceiling of this machine at one vector width, for the "share of
 * peak" columns of `make bench` (its fp32 part, and its isa part: one ceiling per kernel level).
 * Not a test.
 *
 * Each thread runs independent chains of vector multiply-adds (enough of them to cover latency ×
 * ports) on registers only and reports FLOP/s = chains · lanes · 2 · iterations / time. WIDTH
 * (argv[3]) says which instructions, each width's loop in its own function built for its target
 * (__attribute__((target))), so the program builds with the baseline flags and runs on any x86-64:
 *   128  SSE mulps + addps, no FMA: what vitgrad's generic kernels (plain C, baseline x86-64) can do
 *   256  ymm FMA (AVX2 + FMA): the avx2 level's ceiling
 *   512  zmm FMA (AVX-512F): the avx512, avx512bf16 and amx levels' FP32 ceiling
 * Default: the widest this CPU runs (512 or 256, else 128); a width it lacks is refused. Prints one
 * line per thread count: "fma_peak threads T GFLOP/s X (W-bit vectors …)", the best of RUNS runs
 * (default 5). With RUNS ≥ 10 also "fma_spread …": the median, 10th percentile and worst run, i.e.
 * how much of the ceiling a run of ~0.2 s typically gets on this machine (docs/benchmarks.md, ninth
 * round).
 *
 *   gcc -std=c11 -O2 -fopenmp -Wall -Wextra bench/fma_peak.c -o fma_peak && ./fma_peak [max_threads] [RUNS] [WIDTH] */
#include "peak_run.h"
#include <immintrin.h>
#include <string.h>

enum { CHAINS = 12 };

/* iters × CHAINS multiply-adds on one thread; returns a value so the compiler keeps the work. Every
 * chain starts from its own value and every accumulator passes through the empty asm each iteration:
 * with identical chains the compiler merges them into one (an earlier version of this file ran 7
 * FMAs per iteration while counting 12, and so reported 12/7 of the real peak). STEP(c) is one
 * multiply-add of chain c by a and b; the three widths below differ only in these macros. */
#define CHAIN_LOOP(NAME, TARGET, VEC, SET1, ADD, STEP, REDUCE)                                       \
    __attribute__((target(TARGET))) static float NAME(long iters, float seed) {                       \
        const VEC a = SET1(0.999999f), b = SET1(1e-7f);                                                \
        VEC c0 = SET1(seed), c1 = SET1(seed + 1), c2 = SET1(seed + 2), c3 = SET1(seed + 3);            \
        VEC c4 = SET1(seed + 4), c5 = SET1(seed + 5), c6 = SET1(seed + 6), c7 = SET1(seed + 7);        \
        VEC c8 = SET1(seed + 8), c9 = SET1(seed + 9), c10 = SET1(seed + 10), c11 = SET1(seed + 11);    \
        for (long i = 0; i < iters; i++) {                                                             \
            c0 = STEP(c0); c1 = STEP(c1); c2 = STEP(c2); c3 = STEP(c3);                                \
            c4 = STEP(c4); c5 = STEP(c5); c6 = STEP(c6); c7 = STEP(c7);                                \
            c8 = STEP(c8); c9 = STEP(c9); c10 = STEP(c10); c11 = STEP(c11);                            \
            __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5),          \
                                  "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));       \
        }                                                                                              \
        VEC s = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));                     \
        s = ADD(s, ADD(ADD(c8, c9), ADD(c10, c11)));                                                   \
        return REDUCE(s);                                                                              \
    }

/* 128-bit: c·a then + b, two instructions (SSE has no FMA) */
#define STEP128(c) _mm_add_ps(_mm_mul_ps(c, a), b)
static float reduce128(__m128 v) { float f[4]; _mm_storeu_ps(f, v); return f[0] + f[1] + f[2] + f[3]; }
CHAIN_LOOP(loop128, "sse2", __m128, _mm_set1_ps, _mm_add_ps, STEP128, reduce128)

/* 256-bit: ymm FMA */
#define STEP256(c) _mm256_fmadd_ps(c, a, b)
__attribute__((target("avx"))) static float reduce256(__m256 v) {
    float f[8]; _mm256_storeu_ps(f, v);
    return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
CHAIN_LOOP(loop256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_add_ps, STEP256, reduce256)

/* 512-bit: zmm FMA */
#define STEP512(c) _mm512_fmadd_ps(c, a, b)
CHAIN_LOOP(loop512, "avx512f", __m512, _mm512_set1_ps, _mm512_add_ps, STEP512, _mm512_reduce_add_ps)

int main(int argc, char **argv) {
    int maxt, reps;
    if (peak_args(argc, argv, &maxt, &reps)) return 2;
    __builtin_cpu_init();
    const int has256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const int has512 = __builtin_cpu_supports("avx512f");
    int width = has512 ? 512 : has256 ? 256 : 128;
    if (argc > 3) {
        width = atoi(argv[3]);
        if (width != 128 && width != 256 && width != 512) {
            fprintf(stderr, "fma_peak: width '%s' is not 128, 256 or 512\n", argv[3]);
            return 2;
        }
        if ((width == 256 && !has256) || (width == 512 && !has512)) {
            fprintf(stderr, "fma_peak: this CPU does not run %d-bit %s\n", width,
                    width == 512 ? "AVX-512F FMAs" : "AVX2 + FMA");
            return 2;
        }
    }
    float (*loop)(long, float) = width == 512 ? loop512 : width == 256 ? loop256 : loop128;
    char note[48];
    snprintf(note, sizeof note, "%d-bit vectors%s", width, width == 128 ? ", mul+add, no FMA" : "");
    return peak_main(maxt, reps, "fma", note, loop, 100L * 1000 * 1000, CHAINS * (width / 32) * 2);
}
