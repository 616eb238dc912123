/* kernel_probe.c — what bounds the GEMM micro-kernel and the memory-bound passes on this machine.
 * Not a test, not part of `make bench`; the numbers it printed are in docs/benchmarks.md.
 *
 *   gcc -O2 -march=native -fopenmp bench/kernel_probe.c -o kernel_probe && chrt -f 1 ./kernel_probe
 *
 * 1. Micro-kernel shapes, hand-written AVX2 loops over L1-resident panels (no C traffic, no
 *    packing), GFLOP/s on one core: the 6×16 kernel of gemm/fp32.c (2 B loads + 6 broadcasts per
 *    12 FMAs), the same loop with vector loads in place of the broadcasts, 2×48 (2 broadcasts + 6
 *    loads) and 4×24 (4 broadcasts + 2 loads + 4 FMAs with a memory operand), next to 12 FMAs per
 *    iteration with no loads at all. If the broadcasts bounded the kernel, the variants would differ.
 * 2. Read bandwidth from memory: one thread and two threads summing a 256 MiB array. */
#include "../base/clock.h"
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define ZERO12 "vxorps %%ymm0,%%ymm0,%%ymm0\n vxorps %%ymm1,%%ymm1,%%ymm1\n vxorps %%ymm2,%%ymm2,%%ymm2\n" \
    "vxorps %%ymm3,%%ymm3,%%ymm3\n vxorps %%ymm4,%%ymm4,%%ymm4\n vxorps %%ymm5,%%ymm5,%%ymm5\n"         \
    "vxorps %%ymm6,%%ymm6,%%ymm6\n vxorps %%ymm7,%%ymm7,%%ymm7\n vxorps %%ymm8,%%ymm8,%%ymm8\n"         \
    "vxorps %%ymm9,%%ymm9,%%ymm9\n vxorps %%ymm10,%%ymm10,%%ymm10\n vxorps %%ymm11,%%ymm11,%%ymm11\n"
/* two accumulators fed by one A value x (ymm14/15) and the B vectors in ymm12, ymm13 */
#define FMA2(x, c0, c1) "vfmadd231ps %%ymm" #x ",%%ymm12,%%ymm" #c0 "\n vfmadd231ps %%ymm" #x ",%%ymm13,%%ymm" #c1 "\n"
#define LOADB(bo) "vmovaps " #bo "(%1),%%ymm12\n vmovaps " #bo "+32(%1),%%ymm13\n"
/* one k step of each shape; ao / bo: byte offsets of this step's A and B values */
#define K6x16(ao, bo) LOADB(bo)                                                                   \
    "vbroadcastss " #ao "(%0),%%ymm14\n" FMA2(14, 0, 1) "vbroadcastss " #ao "+4(%0),%%ymm15\n" FMA2(15, 2, 3) \
    "vbroadcastss " #ao "+8(%0),%%ymm14\n" FMA2(14, 4, 5) "vbroadcastss " #ao "+12(%0),%%ymm15\n" FMA2(15, 6, 7) \
    "vbroadcastss " #ao "+16(%0),%%ymm14\n" FMA2(14, 8, 9) "vbroadcastss " #ao "+20(%0),%%ymm15\n" FMA2(15, 10, 11)
#define K6x16_LOADS(ao, bo) LOADB(bo)                                                             \
    "vmovups " #ao "(%0),%%ymm14\n" FMA2(14, 0, 1) "vmovups " #ao "+4(%0),%%ymm15\n" FMA2(15, 2, 3)             \
    "vmovups " #ao "+8(%0),%%ymm14\n" FMA2(14, 4, 5) "vmovups " #ao "+12(%0),%%ymm15\n" FMA2(15, 6, 7)          \
    "vmovups " #ao "+16(%0),%%ymm14\n" FMA2(14, 8, 9) "vmovups " #ao "+20(%0),%%ymm15\n" FMA2(15, 10, 11)
#define B2(bo, r, c0, c1) "vmovaps " #bo "(%1),%%ymm" #r "\n vfmadd231ps %%ymm14,%%ymm" #r ",%%ymm" #c0 \
    "\n vfmadd231ps %%ymm15,%%ymm" #r ",%%ymm" #c1 "\n"
#define K2x48(ao, bo) "vbroadcastss " #ao "(%0),%%ymm14\n vbroadcastss " #ao "+4(%0),%%ymm15\n"        \
    B2(bo, 12, 0, 1) B2(bo+32, 13, 2, 3) B2(bo+64, 12, 4, 5) B2(bo+96, 13, 6, 7) B2(bo+128, 12, 8, 9)  \
    B2(bo+160, 13, 10, 11)
#define R3(x, bo, c0, c1, c2) FMA2(x, c0, c1) "vfmadd231ps " #bo "+64(%1),%%ymm" #x ",%%ymm" #c2 "\n"
#define K4x24(ao, bo) LOADB(bo)                                                                   \
    "vbroadcastss " #ao "(%0),%%ymm14\n" R3(14, bo, 0, 1, 2) "vbroadcastss " #ao "+4(%0),%%ymm15\n" R3(15, bo, 3, 4, 5) \
    "vbroadcastss " #ao "+8(%0),%%ymm14\n" R3(14, bo, 6, 7, 8) "vbroadcastss " #ao "+12(%0),%%ymm15\n" R3(15, bo, 9, 10, 11)
#define FMA_ONLY(ao, bo) FMA2(14, 0, 1) FMA2(14, 2, 3) FMA2(14, 4, 5) FMA2(14, 6, 7) FMA2(14, 8, 9) FMA2(14, 10, 11)

/* kc k steps (4 per loop iteration) of one shape over panels a, b; repeated `calls` times */
#define SHAPE(NAME, STEP, ASTEP, BSTEP)                                                            \
    static double NAME(const float *a, const float *b, int kc, long calls) {                      \
        double t = vg_now_s();                                                                           \
        for (long c = 0; c < calls; c++) {                                                          \
            const float *pa = a, *pb = b;                                                           \
            long n = kc / 4;                                                                        \
            __asm__ volatile(ZERO12 "1:\n" STEP(0, 0) STEP(ASTEP, BSTEP) STEP(2 * ASTEP, 2 * BSTEP)   \
                             STEP(3 * ASTEP, 3 * BSTEP)                                             \
                             "add $4*" #ASTEP ", %0\n add $4*" #BSTEP ", %1\n dec %2\n jnz 1b\n"      \
                             : "+r"(pa), "+r"(pb), "+r"(n) : : "memory", "xmm0", "xmm1", "xmm2",     \
                               "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",      \
                               "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");                       \
        }                                                                                           \
        return 192.0 * kc * calls / (vg_now_s() - t) / 1e9;  /* 12 FMAs × 8 lanes × 2 per k step */     \
    }
SHAPE(k6x16, K6x16, 24, 64)
SHAPE(k6x16_loads, K6x16_LOADS, 24, 64)
SHAPE(k2x48, K2x48, 8, 192)
SHAPE(k4x24, K4x24, 16, 96)
SHAPE(fma_only, FMA_ONLY, 0, 0)

static double read_gbs(const float *x, long n, int threads) {
    double t = vg_now_s();
    float total = 0;
    #pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        const int th = omp_get_thread_num();
        const long lo = n * th / threads, hi = n * (th + 1) / threads;
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (long i = lo; i + 32 <= hi; i += 32) {
            s0 = _mm256_add_ps(s0, _mm256_load_ps(x + i));
            s1 = _mm256_add_ps(s1, _mm256_load_ps(x + i + 8));
            s2 = _mm256_add_ps(s2, _mm256_load_ps(x + i + 16));
            s3 = _mm256_add_ps(s3, _mm256_load_ps(x + i + 24));
        }
        float f[8];
        _mm256_storeu_ps(f, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
        for (int j = 0; j < 8; j++) total += f[j];
    }
    t = vg_now_s() - t;
    if (total == 12345.f) puts("");                 /* keeps the sum */
    return 4.0 * n / t / 1e9;
}

int main(void) {
    const int kcs[3] = { 64, 192, 384 };
    float *a = aligned_alloc(64, 4 * 64 * 384), *b = aligned_alloc(64, 4 * 64 * 384);
    memset(a, 0, 4 * 64 * 384);
    memset(b, 0, 4 * 64 * 384);
    puts("micro-kernel shapes, L1-resident, 1 thread, GFLOP/s (best of 3)");
    puts("   kc | 6x16 broadcasts | 6x16 vector loads | 2x48 | 4x24 | FMAs only");
    for (int i = 0; i < 3; i++) {
        const int kc = kcs[i];
        const long calls = 2000000000L / (192L * kc);
        double best[5] = { 0 };
        for (int r = 0; r < 3; r++) {
            const double v[5] = { k6x16(a, b, kc, calls), k6x16_loads(a, b, kc, calls),
                                  k2x48(a, b, kc, calls), k4x24(a, b, kc, calls),
                                  fma_only(a, b, kc, calls) };
            for (int j = 0; j < 5; j++) if (v[j] > best[j]) best[j] = v[j];
        }
        printf("  %3d | %15.1f | %17.1f | %4.1f | %4.1f | %9.1f\n", kc, best[0], best[1], best[2],
               best[3], best[4]);
    }
    const long n = 64L << 20;                       /* 256 MiB of floats */
    float *x = aligned_alloc(64, 4 * n);
    for (long i = 0; i < n; i++) x[i] = 1e-9f;
    for (int threads = 1; threads <= 2; threads++) {
        double best = 0;
        for (int r = 0; r < 3; r++) { const double g = read_gbs(x, n, threads); if (g > best) best = g; }
        printf("read bandwidth, %d thread%s: %.1f GB/s (best of 3)\n", threads, threads > 1 ? "s" : "", best);
    }
    return 0;
}
