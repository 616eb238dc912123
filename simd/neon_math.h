/* neon_math.h — e^x (x ≤ 0) and GELU's Φ(u) in four float32 lanes, for aarch64 NEON (simd/rows_neon.c).
 * The same schemes and constants, operation for operation, as the AVX2 forms (simd/exp8.h's
 * vg_exp_neg8, simd/gelu.h's phi_cdf_v): Cephes range reduction for e^x, the erfc polynomial
 * ERFC_Q for Φ. Include after simd/gelu.h (ERFC_Q) and simd/exp8.h (vg_exp_poly). */
#ifndef VG_SIMD_NEON_MATH_H
#define VG_SIMD_NEON_MATH_H
#include <arm_neon.h>

/* e^x for x ≤ 0: x = n·ln2 + r (ln2 split in two), e^r = 1 + r + r²·P(r), 2^n as exponent bits;
 * ≤ 2 ulp for x ≥ −87, x below −87 treated as −87; NaN stays NaN (FMAX propagates it). */
static inline float32x4_t vg_exp_neg4(float32x4_t x) {
    x = vmaxq_f32(vdupq_n_f32(-87.0f), x);
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(VG_EXP_LOG2E)));   /* to nearest, ties even */
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(VG_EXP_LN2_HI));                 /* x − n·hi */
    r = vfmaq_f32(r, n, vdupq_n_f32(VG_EXP_LN2_LO));                             /* + n·lo */
    float32x4_t p = vdupq_n_f32(vg_exp_poly[0]);
    for (int k = 1; k < 6; k++) p = vfmaq_f32(vdupq_n_f32(vg_exp_poly[k]), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), vmulq_f32(p, r), r);
    const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(bits));
}

/* Φ(u) and e^(−u²/2) of nv ≤ 4 vectors at once (independent chains in flight), as simd/gelu.h:
 * z = |u|/√2 (capped at 9.3, where erfc and e^(−z²) are 0 in float; NaN → 9.3, u carries the
 * NaN), t = 1/(1 + z/2), erfc(z)/2 = t·Q(t)·e^(−z²)/2 = Φ(−|u|), Φ(u) = that or 1 − that. */
static inline void vg_phi_cdf4(int nv, const float32x4_t *u, float32x4_t *cdf, float32x4_t *e_half_u2) {
    const float32x4_t one = vdupq_n_f32(1.0f), half = vdupq_n_f32(0.5f), zmax = vdupq_n_f32(9.3f);
    float32x4_t z[4], t[4], q[4];
    uint32x4_t big[4];
    for (int j = 0; j < nv; j++) {
        z[j] = vmulq_f32(vabsq_f32(u[j]), vdupq_n_f32(0.70710678118654752440f));
        big[j] = vcgtq_f32(z[j], zmax);                 /* erfc(z) is 0 in float (NaN: false) */
        z[j] = vminnmq_f32(z[j], zmax);                 /* minNum: NaN → 9.3 */
        t[j] = vdivq_f32(one, vfmaq_f32(one, half, z[j]));
        q[j] = vdupq_n_f32(ERFC_Q[0]);
    }
    for (int k = 1; k < 10; k++)
        for (int j = 0; j < nv; j++) q[j] = vfmaq_f32(vdupq_n_f32(ERFC_Q[k]), q[j], t[j]);
    for (int j = 0; j < nv; j++) {
        const float32x4_t nz2 = vmulq_f32(vsubq_f32(vdupq_n_f32(0.0f), z[j]), z[j]);
        const float32x4_t e = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(vg_exp_neg4(nz2)), big[j]));
        if (e_half_u2) e_half_u2[j] = e;
        const float32x4_t h = vmulq_f32(vmulq_f32(vmulq_f32(half, t[j]), q[j]), e);  /* Φ(−|u|) */
        const uint32x4_t neg = vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_f32(u[j]), 31));
        cdf[j] = vbslq_f32(neg, h, vsubq_f32(one, h));  /* sign bit set: Φ = h */
    }
}
#endif
