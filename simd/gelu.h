/* gelu.h — GELU's value and derivative over a span of values, the row kernel behind nn/gelu.c:
 *   y[i] = gelu(x[i] + b[i]),  dx[i] = dy[i] · gelu'(x[i] + b[i]),
 *   gelu(u) = u·Φ(u),  gelu'(u) = Φ(u) + u·φ(u),  φ(u) = e^{−u²/2}/√(2π).
 * Compiled once per instruction set by simd/rows.h (AVX2+FMA: the intrinsic form below; otherwise
 * the branch-free scalar form, which the compiler vectorises for its target). Never -ffast-math: it
 * broke llm.c's GELU backward. */
#ifndef VG_SIMD_GELU_H
#define VG_SIMD_GELU_H
#include "tensor/real.h"
#include "simd/exp8.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

#ifdef VG_DOUBLE
/* float64 (gradcheck) build: libm's erf and exp, exact to the last bit that matters */
static inline real gelu(real u) { return 0.5 * u * (1.0 + erf(u * INV_SQRT2)); }
static inline real gelu_grad(real u) { return 0.5 * (1.0 + erf(u * INV_SQRT2)) + u * INV_SQRT_2PI * exp(-0.5 * u * u); }
#else
/* float32 build: branch-free so the loops vectorise (scalar erff/expf made this layer cost more
 * than the MLP's GEMMs). Selects are integer bit masks: a float compare may trap, and GCC then
 * refuses to if-convert the loop. Error vs exact: |Δgelu| ≤ 1.2e-7·max(1, |u|), |Δgelu'| ≤ 2.3e-7
 * (tests/test_nn.c checks it over [−15, 15]).
 *   e^x (x ≤ 0):  x = n·ln2 + r (ln2 split in two, Cephes), e^r by a degree-6 polynomial, 2^n
 *                 written as exponent bits; n < −127 gives 0.
 *   Φ(u):  z = |u|/√2, t = 1/(1 + z/2), erfc(z) = t·Q(t)·e^(−z²), Q(t) = erfc(z)·e^(z²)/t a
 *          degree-9 polynomial in t ∈ [0.177, 1] (relative-error fit, 1.9e-8 in exact arithmetic,
 *          1.5e-7 evaluated in float; the same t as Numerical Recipes' erfcc, whose
 *          t·exp(−z² + P(t)) needs a second e^x); Φ(u) = erfc(z)/2 for u < 0, else 1 − erfc(z)/2.
 *          e^(−z²) = e^(−u²/2) is also φ(u)·√(2π), so gelu' needs no other e^x. Beyond z = 9.3,
 *          erfc and e^(−z²) are 0 in float. */
typedef union { float f; int32_t i; } fbits;
/* Q(t), highest power first (shared with the AVX2 form below); fitted by
 * tests/reference/fit_erfc_poly.py */
static const float ERFC_Q[10] = { 1.366633609e-02f, -1.308119530e-01f, 4.467753772e-01f, -6.938542170e-01f,
                                  4.410457931e-01f, -1.088527082e-01f, 2.291355424e-01f, 2.378904606e-01f,
                                  2.829452143e-01f, 2.820601355e-01f };
/* e^x for x ≤ 0 with tensor/exp8.h's constants (x ≥ −87 exact to ~2 ulp; below, 0 or a
 * denormal-size value) */
static inline float exp_neg(float x) {
    int32_t ni = (int32_t)(x * VG_EXP_LOG2E + 128.5f) - 128;          /* ⌊x·log2 e + ½⌋ for x ≥ −88 */
    ni = ni < -127 ? -127 : ni;                                        /* 2^−127 → scale bits 0 → 0 */
    float n = (float)ni;
    float r = x - n * VG_EXP_LN2_HI + n * VG_EXP_LN2_LO;
    float p = vg_exp_poly[0];
    for (int k = 1; k < 6; k++) p = p * r + vg_exp_poly[k];
    p = p * r * r + r + 1.0f;
    fbits s = {.i = (ni + 127) << 23};
    return p * s.f;
}
/* Φ(u) and e^(−u²/2) */
static inline float phi_cdf(float u, float *e_half_u2) {
    fbits ub = {.f = u}, z = {.f = fabsf(u) * 0.70710678118654752440f};
    const fbits zmax = {.f = 9.3f};
    const int32_t big = -(int32_t)(z.i > zmax.i);  /* all ones if |u|/√2 > 9.3 or NaN (integer compare: */
    z.i = (z.i & ~big) | (zmax.i & big);           /* no FP trap, so the loop stays branch-free) */
    float t = 1.0f / (1.0f + 0.5f * z.f);
    float q = ERFC_Q[0];
    for (int k = 1; k < 10; k++) q = q * t + ERFC_Q[k];
    fbits e = {.f = exp_neg(-z.f * z.f)};
    e.i &= ~big;
    *e_half_u2 = e.f;
    const fbits h = {.f = 0.5f * t * q * e.f};              /* erfc(z)/2 = Φ(−|u|) */
    float pos = (float)(1 - (int32_t)((uint32_t)ub.i >> 31)); /* 1 for u ≥ 0, 0 for u < 0 */
    return pos + (1.0f - 2.0f * pos) * h.f;
}
/* the scalar forms: used without AVX2 (VG_HAVE_EXP8), where the spans below take over */
__attribute__((unused)) static inline real gelu(real u) { float e; return u * phi_cdf(u, &e); }
__attribute__((unused)) static inline real gelu_grad(real u) {                       /* Φ(u) + u·φ(u), φ(u) = e^(−u²/2)/√(2π) */
    float e, c = phi_cdf(u, &e);
    return c + u * (float)INV_SQRT_2PI * e;
}
#endif

#ifdef VG_HAVE_EXP8
/* AVX2: the same Φ(u) as phi_cdf, with intrinsics, on nv independent vectors at once, step by
 * step (one value is a chain of ~40 dependent operations: a division, the 10-term polynomial,
 * e^x). Against GCC's vectorisation of the scalar form above, on 8320×768 values: forward 12.9 →
 * 10.1 ms on 1 thread (a copy of the same data: 3–4 ms); backward (with its seed copy and the
 * gradient accumulation) 27–29 → 21–25 ms. Every value, tails included, goes through this code
 * (tails via a padded buffer), so a value's result does not depend on its position. */
enum { GV = 4, GW = 8 * GV };
static inline void phi_cdf_v(int nv, const __m256 *u, __m256 *cdf, __m256 *e_half_u2) {
    const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f), zmax = _mm256_set1_ps(9.3f);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 z[GV], big[GV], t[GV], q[GV];
    for (int j = 0; j < nv; j++) {
        z[j] = _mm256_mul_ps(_mm256_and_ps(u[j], absmask), _mm256_set1_ps(0.70710678118654752440f));
        big[j] = _mm256_cmp_ps(z[j], zmax, _CMP_GT_OQ);   /* erfc(z) is 0 in float */
        z[j] = _mm256_min_ps(z[j], zmax);                  /* NaN → 9.3: u carries the NaN */
        t[j] = _mm256_div_ps(one, _mm256_fmadd_ps(half, z[j], one));
        q[j] = _mm256_set1_ps(ERFC_Q[0]);
    }
    for (int k = 1; k < 10; k++)
        for (int j = 0; j < nv; j++) q[j] = _mm256_fmadd_ps(q[j], t[j], _mm256_set1_ps(ERFC_Q[k]));
    for (int j = 0; j < nv; j++) {
        const __m256 nz2 = _mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), z[j]), z[j]);
        const __m256 e = _mm256_andnot_ps(big[j], vg_exp_neg8(nz2));
        if (e_half_u2) e_half_u2[j] = e;
        const __m256 h = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(half, t[j]), q[j]), e);   /* erfc(z)/2 = Φ(−|u|) */
        cdf[j] = _mm256_blendv_ps(_mm256_sub_ps(one, h), h, u[j]);   /* sign bit set: Φ = h */
    }
}

/* out[0..n) = gelu(x + b) (dy NULL), or dy ⊙ gelu'(x + b); nv vectors in flight: 4 forward, 2
 * backward (which also keeps e^(−u²/2): four spilled registers and ran no faster) */
static inline __attribute__((always_inline))
void gelu_span_v(int nv, const float *x, const float *b, const float *dy, float *out, int64_t n) {
    float xb[GW], bb[GW], gb[GW], ob[GW];
    const int width = 8 * nv;
    for (int64_t i = 0; i < n; i += width) {
        const int64_t w = n - i < width ? n - i : width;
        const float *xs = x + i, *bs = b + i, *gs = dy ? dy + i : NULL;
        if (w < width) {                                   /* tail: zero-padded copies */
            memset(xb, 0, sizeof xb); memset(bb, 0, sizeof bb);
            memcpy(xb, xs, sizeof(float) * (size_t)w); memcpy(bb, bs, sizeof(float) * (size_t)w);
            xs = xb; bs = bb;
            if (gs) { memset(gb, 0, sizeof gb); memcpy(gb, gs, sizeof(float) * (size_t)w); gs = gb; }
        }
        __m256 u[GV], c[GV], e[GV];
        for (int j = 0; j < nv; j++) u[j] = _mm256_add_ps(_mm256_loadu_ps(xs + 8 * j), _mm256_loadu_ps(bs + 8 * j));
        phi_cdf_v(nv, u, c, gs ? e : NULL);
        float *os = w < width ? ob : out + i;
        for (int j = 0; j < nv; j++) {
            if (!gs) { _mm256_storeu_ps(os + 8 * j, _mm256_mul_ps(u[j], c[j])); continue; }
            const __m256 d = _mm256_fmadd_ps(_mm256_mul_ps(u[j], _mm256_set1_ps((float)INV_SQRT_2PI)), e[j], c[j]);
            _mm256_storeu_ps(os + 8 * j, _mm256_mul_ps(_mm256_loadu_ps(gs + 8 * j), d));
        }
        if (w < width) memcpy(out + i, ob, sizeof(float) * (size_t)w);
    }
}
#endif

/* one row: y[0..n) = gelu(x + b), and dx[0..n) = dy ⊙ gelu'(x + b) */
static void gelu_span(const real *x, const real *b, real *y, int64_t n) {
#ifdef VG_HAVE_EXP8
    gelu_span_v(GV, x, b, NULL, y, n);
#else
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] = gelu(x[i] + b[i]);
#endif
}

static void gelu_grad_span(const real *x, const real *b, const real *dy, real *dx, int64_t n) {
#ifdef VG_HAVE_EXP8
    gelu_span_v(2, x, b, dy, dx, n);
#else
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * gelu_grad(x[i] + b[i]);
#endif
}

#endif
