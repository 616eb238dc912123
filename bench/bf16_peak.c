/* bf16_peak.c — the bf16 dot-product ceiling of this machine (vdpbf16ps, AVX512_BF16), for the
 * "share of the bf16 peak" column of `make bench`'s --amp rows. Not a test. The counterpart of
 * bench/fma_peak.c.
 *
 * Each thread runs 12 independent chains of vdpbf16ps on zmm registers only. One instruction
 * does 16 lanes × 2 products, each a multiply and an add: 64 FLOP. Prints one line per thread
 * count, "bf16_peak threads T GFLOP/s X", the best of RUNS runs (default 5); on a CPU without
 * AVX512_BF16 it says so and prints no figure.
 *
 *   gcc -std=c11 -O2 -march=native -fopenmp bench/bf16_peak.c -o bf16_peak && ./bf16_peak [max_threads] [RUNS] */
#include "peak_run.h"
#include <immintrin.h>

enum { CHAINS = 12 };

#if defined(__AVX512BF16__)
/* iters × CHAINS vdpbf16ps on one thread. As in fma_peak.c every chain starts from its own value
 * and passes through the empty asm each iteration, so the compiler cannot merge the chains. */
static float dp_loop(long iters, float seed) {
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f7f3f7f), b = (__m512bh)_mm512_set1_epi32(0x33d633d6);
    __m512 c0 = _mm512_set1_ps(seed), c1 = _mm512_set1_ps(seed + 1), c2 = _mm512_set1_ps(seed + 2);
    __m512 c3 = _mm512_set1_ps(seed + 3), c4 = _mm512_set1_ps(seed + 4), c5 = _mm512_set1_ps(seed + 5);
    __m512 c6 = _mm512_set1_ps(seed + 6), c7 = _mm512_set1_ps(seed + 7), c8 = _mm512_set1_ps(seed + 8);
    __m512 c9 = _mm512_set1_ps(seed + 9), c10 = _mm512_set1_ps(seed + 10), c11 = _mm512_set1_ps(seed + 11);
    for (long i = 0; i < iters; i++) {
        c0 = _mm512_dpbf16_ps(c0, a, b); c1 = _mm512_dpbf16_ps(c1, a, b);
        c2 = _mm512_dpbf16_ps(c2, a, b); c3 = _mm512_dpbf16_ps(c3, a, b);
        c4 = _mm512_dpbf16_ps(c4, a, b); c5 = _mm512_dpbf16_ps(c5, a, b);
        c6 = _mm512_dpbf16_ps(c6, a, b); c7 = _mm512_dpbf16_ps(c7, a, b);
        c8 = _mm512_dpbf16_ps(c8, a, b); c9 = _mm512_dpbf16_ps(c9, a, b);
        c10 = _mm512_dpbf16_ps(c10, a, b); c11 = _mm512_dpbf16_ps(c11, a, b);
        __asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5),
                              "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                             _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
    return _mm512_reduce_add_ps(s);
}
#endif

int main(int argc, char **argv) {
    int maxt, reps;
    if (peak_args(argc, argv, &maxt, &reps)) return 2;
#if !defined(__AVX512BF16__)
    printf("bf16_peak: not measured (built without AVX512_BF16: this CPU or compiler lacks vdpbf16ps)\n");
    return 0;
#else
    return peak_main(maxt, reps, "bf16", "vdpbf16ps, 512-bit", dp_loop, 50L * 1000 * 1000, CHAINS * 64);
#endif
}
