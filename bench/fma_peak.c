/* fma_peak.c — the FP32 FMA ceiling of this machine, for the "share of peak" columns of
 * `make bench`. Not a test.
 *
 * Each thread runs independent chains of vector FMAs (enough of them to cover latency × ports)
 * on registers only and reports FLOP/s = chains · lanes · 2 · iterations / time. Uses 256-bit
 * (AVX2+FMA) registers, or 512-bit when compiled with AVX-512 available. Prints one line per
 * thread count: "fma_peak threads T GFLOP/s X", the best of RUNS runs (default 5). With RUNS ≥ 10
 * also "fma_spread …": the median, 10th percentile and worst run, i.e. how much of the ceiling a
 * run of ~0.2 s typically gets on this machine (docs/benchmarks.md, ninth round).
 *
 *   gcc -std=c11 -O2 -march=native -fopenmp bench/fma_peak.c -o fma_peak && ./fma_peak [max_threads] [RUNS] */
#include "peak_run.h"
#include <immintrin.h>

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define RED(v) _mm512_reduce_add_ps(v)
#else
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define ADD _mm256_add_ps
static float RED(__m256 v) { float f[8]; _mm256_storeu_ps(f, v); return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7]; }
#endif
enum { CHAINS = 12 };

/* iters × CHAINS FMAs on one thread; returns a value so the compiler keeps the work. Every chain
 * starts from its own value and every accumulator passes through the empty asm each iteration:
 * with identical chains the compiler merges them into one (an earlier version of this file ran 7
 * FMAs per iteration while counting 12, and so reported 12/7 of the real peak). */
static float fma_loop(long iters, float seed) {
    vec a = SET1(0.999999f), b = SET1(1e-7f);
    vec c0 = SET1(seed), c1 = SET1(seed + 1), c2 = SET1(seed + 2), c3 = SET1(seed + 3);
    vec c4 = SET1(seed + 4), c5 = SET1(seed + 5), c6 = SET1(seed + 6), c7 = SET1(seed + 7);
    vec c8 = SET1(seed + 8), c9 = SET1(seed + 9), c10 = SET1(seed + 10), c11 = SET1(seed + 11);
    for (long i = 0; i < iters; i++) {
        c0 = FMA(c0, a, b); c1 = FMA(c1, a, b); c2 = FMA(c2, a, b); c3 = FMA(c3, a, b);
        c4 = FMA(c4, a, b); c5 = FMA(c5, a, b); c6 = FMA(c6, a, b); c7 = FMA(c7, a, b);
        c8 = FMA(c8, a, b); c9 = FMA(c9, a, b); c10 = FMA(c10, a, b); c11 = FMA(c11, a, b);
        __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5),
                              "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
    }
    vec s = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));
    s = ADD(s, ADD(ADD(c8, c9), ADD(c10, c11)));
    return RED(s);
}

int main(int argc, char **argv) {
    int maxt, reps;
    if (peak_args(argc, argv, &maxt, &reps)) return 2;
    char note[32];
    snprintf(note, sizeof note, "%d-bit vectors", LANES * 32);
    return peak_main(maxt, reps, "fma", note, fma_loop, 100L * 1000 * 1000, CHAINS * LANES * 2);
}
