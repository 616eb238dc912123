/* rows_neon.c — the row kernels on aarch64 NEON (Advanced SIMD, every ARMv8-A CPU): GELU and
 * softmax with e^x and erf in 4 lanes (simd/neon_math.h, the AVX2 forms' schemes and constants,
 * operation for operation: GELU, its gradient and softmax give the AVX2 kernels' bits); LayerNorm's
 * row kernels are simd/layernorm.h's C, which the compiler vectorises for NEON. */
#if defined(__aarch64__) && !defined(VG_DOUBLE)
#include "simd/simd.h"
#include "simd/exp8.h"
/* gelu.h: ERFC_Q; its scalar spans, which this file replaces, stay unused here */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "simd/gelu.h"
#pragma GCC diagnostic pop
#include "simd/layernorm.h"
#include "simd/neon_math.h"
#include "simd/pool.h"
#include <math.h>
#include <string.h>

/* out[0..n) = gelu(x + b) (dy NULL), or dy ⊙ gelu'(x + b), gelu'(u) = Φ(u) + u·e^(−u²/2)/√(2π);
 * 4 vectors in flight. Every value, tails included (through zero-padded copies), goes through the
 * same code, so a value's result does not depend on its position. */
enum { NV = 4, NW = 4 * NV };
static void gelu_neon(const float *x, const float *b, const float *dy, float *out, int64_t n) {
    float xb[NW], bb[NW], gb[NW], ob[NW];
    for (int64_t i = 0; i < n; i += NW) {
        const int64_t w = n - i < NW ? n - i : NW;
        const float *xs = x + i, *bs = b + i, *gs = dy ? dy + i : NULL;
        if (w < NW) {                                      /* tail: zero-padded copies */
            memset(xb, 0, sizeof xb); memset(bb, 0, sizeof bb);
            memcpy(xb, xs, sizeof(float) * (size_t)w); memcpy(bb, bs, sizeof(float) * (size_t)w);
            xs = xb; bs = bb;
            if (gs) { memset(gb, 0, sizeof gb); memcpy(gb, gs, sizeof(float) * (size_t)w); gs = gb; }
        }
        float32x4_t u[NV], c[NV], e[NV];
        for (int j = 0; j < NV; j++) u[j] = vaddq_f32(vld1q_f32(xs + 4 * j), vld1q_f32(bs + 4 * j));
        vg_phi_cdf4(NV, u, c, gs ? e : NULL);
        float *os = w < NW ? ob : out + i;
        for (int j = 0; j < NV; j++) {
            if (!gs) { vst1q_f32(os + 4 * j, vmulq_f32(u[j], c[j])); continue; }
            const float32x4_t d = vfmaq_f32(c[j], vmulq_f32(u[j], vdupq_n_f32((float)INV_SQRT_2PI)), e[j]);
            vst1q_f32(os + 4 * j, vmulq_f32(vld1q_f32(gs + 4 * j), d));
        }
        if (w < NW) memcpy(out + i, ob, sizeof(float) * (size_t)w);
    }
}
static void gelu_span_neon(const float *x, const float *b, float *y, int64_t n) { gelu_neon(x, b, NULL, y, n); }
static void gelu_grad_span_neon(const float *x, const float *b, const float *dy, float *dx, int64_t n) {
    gelu_neon(x, b, dy, dx, n);
}

/* In-place row softmax of a (rows, N) block: max subtracted, e = exp(s − max) by vg_exp_neg4, e / Σe.
 * The sum runs in 8 lanes (two vectors: lane l adds the values at j ≡ l mod 8; the last N % 8
 * values through a padded pair whose other lanes add 0), combined in double in lane order: the
 * AVX2 form's order, so the same bits as it. A NaN in a row makes the whole row NaN. */
static void softmax_rows_neon(float *s, int64_t rows, int64_t N) {
    const int64_t N8 = N / 8 * 8, tail = N - N8;
    const uint32x4_t lane = { 0, 1, 2, 3 };
    const uint32x4_t mask0 = vcltq_u32(lane, vdupq_n_u32((uint32_t)tail));
    const uint32x4_t mask1 = vcltq_u32(vaddq_u32(lane, vdupq_n_u32(4)), vdupq_n_u32((uint32_t)tail));
    for (int64_t i = 0; i < rows; i++) {
        float *r = s + i * N;
        float32x4_t vm = vdupq_n_f32(-INFINITY);
        for (int64_t j = 0; j < N8; j += 4) vm = vmaxq_f32(vm, vld1q_f32(r + j));   /* NaN propagates */
        float m = vmaxvq_f32(vm);
        for (int64_t j = N8; j < N; j++) m = r[j] > m || isnan(r[j]) ? r[j] : m;
        const float32x4_t vmax = vdupq_n_f32(m);
        float32x4_t vs0 = vdupq_n_f32(0.0f), vs1 = vs0;
        for (int64_t j = 0; j < N8; j += 8) {
            const float32x4_t e0 = vg_exp_neg4(vsubq_f32(vld1q_f32(r + j), vmax));
            const float32x4_t e1 = vg_exp_neg4(vsubq_f32(vld1q_f32(r + j + 4), vmax));
            vst1q_f32(r + j, e0);
            vst1q_f32(r + j + 4, e1);
            vs0 = vaddq_f32(vs0, e0);
            vs1 = vaddq_f32(vs1, e1);
        }
        if (tail) {
            float t[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
            memcpy(t, r + N8, sizeof(float) * (size_t)tail);
            float32x4_t e0 = vg_exp_neg4(vsubq_f32(vld1q_f32(t), vmax));
            float32x4_t e1 = vg_exp_neg4(vsubq_f32(vld1q_f32(t + 4), vmax));
            e0 = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(e0), mask0));
            e1 = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(e1), mask1));
            vst1q_f32(t, e0);
            vst1q_f32(t + 4, e1);
            memcpy(r + N8, t, sizeof(float) * (size_t)tail);
            vs0 = vaddq_f32(vs0, e0);
            vs1 = vaddq_f32(vs1, e1);
        }
        float lanes[8];
        vst1q_f32(lanes, vs0);
        vst1q_f32(lanes + 4, vs1);
        double sum = 0;
        for (int l = 0; l < 8; l++) sum += (double)lanes[l];
        const float inv = (float)(1.0 / sum);
        const float32x4_t vinv = vdupq_n_f32(inv);
        for (int64_t j = 0; j < N8; j += 4) vst1q_f32(r + j, vmulq_f32(vld1q_f32(r + j), vinv));
        for (int64_t j = N8; j < N; j++) r[j] *= inv;
    }
}

const vg_row_ops vg_rows_neon = { "neon", VG_ISA_NEON, gelu_span_neon, gelu_grad_span_neon,
                                  softmax_rows_neon, layernorm_row, layernorm_grad_row,
                                  maxpool_plane };
#endif
