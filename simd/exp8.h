/* exp8.h — e^x for x ≤ 0, eight floats at a time (AVX2 + FMA builds only; the caller checks
 * VG_HAVE_EXP8), and the constants it shares with the scalar float e^x in nn/gelu.c. Cephes range
 * reduction x = n·ln2 + r (ln2 split in two) and e^r = 1 + r + r²·P(r), 2^n written as exponent
 * bits: ≤ 2 ulp for x ≥ −87. x below −87 is treated as −87 (e^−87 ≈ 1.6e-38: 0 next to anything
 * it is added to); NaN stays NaN. Used by the softmax (nn/attention.c) and GELU (nn/gelu.c). */
#ifndef VG_TENSOR_EXP8_H
#define VG_TENSOR_EXP8_H

#define VG_EXP_LOG2E  1.44269504088896341f
#define VG_EXP_LN2_HI 0.693359375f              /* ln 2 = VG_EXP_LN2_HI − VG_EXP_LN2_LO */
#define VG_EXP_LN2_LO 2.12194440e-4f
/* P(r), highest power first */
static const float vg_exp_poly[6] = { 1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f };

#if !defined(VG_DOUBLE) && defined(__AVX2__) && defined(__FMA__)
#define VG_HAVE_EXP8 1
#include <immintrin.h>

static inline __m256 vg_exp_neg8(__m256 x) {
    x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x);             /* NaN x stays NaN (2nd operand) */
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(VG_EXP_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(VG_EXP_LN2_HI), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(VG_EXP_LN2_LO), r);
    __m256 p = _mm256_set1_ps(vg_exp_poly[0]);
    for (int k = 1; k < 6; k++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(vg_exp_poly[k]));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}
#endif
#endif
