/* softmax.h — in-place row softmax of a (rows, N) block, the row kernel behind nn/attention.c.
 * Compiled once per instruction set by simd/rows.h. */
#ifndef VG_SIMD_SOFTMAX_H
#define VG_SIMD_SOFTMAX_H
#include "tensor/real.h"
#include "simd/exp8.h"
#include <math.h>
#include <stdint.h>

/* In-place row softmax of a (rows, N) block: max subtracted, then e = exp(s − max), then e / Σe.
 * float32 with AVX2: e^x by vg_exp_neg8 (tensor/exp8.h, ≤ 2 ulp), 8 lanes at a time; the per-lane
 * sums are combined in double in a fixed order. A NaN in a row makes the whole row NaN (it
 * survives into its own e and the sum). Other builds (and the float64 gradcheck build): libm exp
 * in double. */
#ifdef VG_HAVE_EXP8
static void softmax_rows_inplace(real *s, int64_t rows, int64_t N) {
    const int64_t N8 = N / 8 * 8, tail = N - N8;
    const __m256i tail_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)tail),
                                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int64_t i = 0; i < rows; i++) {
        float *r = s + i * N;
        __m256 vm = _mm256_set1_ps(-INFINITY);
        for (int64_t j = 0; j < N8; j += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(r + j));
        float lanes[8], m = -INFINITY;
        _mm256_storeu_ps(lanes, vm);
        for (int l = 0; l < 8; l++) m = lanes[l] > m ? lanes[l] : m;
        for (int64_t j = N8; j < N; j++) m = r[j] > m ? r[j] : m;
        const __m256 vmax = _mm256_set1_ps(m);
        __m256 vs = _mm256_setzero_ps();
        for (int64_t j = 0; j < N8; j += 8) {
            __m256 e = vg_exp_neg8(_mm256_sub_ps(_mm256_loadu_ps(r + j), vmax));
            _mm256_storeu_ps(r + j, e);
            vs = _mm256_add_ps(vs, e);
        }
        if (tail) {                         /* the last N % 8 values, masked (other lanes add 0) */
            __m256 e = vg_exp_neg8(_mm256_sub_ps(_mm256_maskload_ps(r + N8, tail_mask), vmax));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(tail_mask));
            _mm256_maskstore_ps(r + N8, tail_mask, e);
            vs = _mm256_add_ps(vs, e);
        }
        _mm256_storeu_ps(lanes, vs);
        double sum = 0;
        for (int l = 0; l < 8; l++) sum += (double)lanes[l];
        const float inv = (float)(1.0 / sum);
        const __m256 vinv = _mm256_set1_ps(inv);
        for (int64_t j = 0; j < N8; j += 8) _mm256_storeu_ps(r + j, _mm256_mul_ps(_mm256_loadu_ps(r + j), vinv));
        for (int64_t j = N8; j < N; j++) r[j] *= inv;
    }
}
#else
static void softmax_rows_inplace(real *s, int64_t rows, int64_t N) {
    for (int64_t i = 0; i < rows; i++) {
        real *r = s + i * N;
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < N; j++) if ((double)r[j] > m) m = (double)r[j];
        for (int64_t j = 0; j < N; j++) { double e = exp((double)r[j] - m); r[j] = (real)e; sum += e; }
        const double inv = 1.0 / sum;
        for (int64_t j = 0; j < N; j++) r[j] = (real)((double)r[j] * inv);
    }
}
#endif

#endif
