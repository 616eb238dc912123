/* kernel_neon.h — the aarch64 NEON FP32 micro-kernel: an 8×12 tile of C in 24 q-register
 * accumulators (of 32). Per k: the B row as three 4-float loads, the 8 A values as two, and 24
 * vfmaq_laneq_f32 (c[r][j] += b[j] · a[r], a[r] taken from its lane: no broadcast instruction).
 * Included by gemm/driver.h at its micro-kernel slot (store_c and ROW_OFFSET are defined there).
 *
 * Every element's sum is fused multiply-adds in k order; the store is c = alpha·acc + (beta·c +
 * bias) as two fused multiply-adds, also for partial tiles (through a padded row), so a value's
 * result does not depend on where it sits in the tile. */

/* One row of the tile: cr[0..nr) = alpha·acc + (beta·cr + bias), nr ≤ 12 (beta 0: cr not read). */
static VG_ALWAYS_INLINE void store_row(float *cr, float32x4_t acc0, float32x4_t acc1,
                                       float32x4_t acc2, float alpha, float beta,
                                       const float *bias, int nr) {
    float cb[NR], bb[NR];
    float *dst = cr;
    const float *bs = bias;
    if (nr < NR) {                                  /* partial width: through padded copies */
        memset(cb, 0, sizeof cb);
        if (beta != 0) memcpy(cb, cr, sizeof(float) * (size_t)nr);
        if (bias) { memset(bb, 0, sizeof bb); memcpy(bb, bias, sizeof(float) * (size_t)nr); bs = bb; }
        dst = cb;
    }
    float32x4_t t0 = vdupq_n_f32(0), t1 = t0, t2 = t0;
    if (bs) { t0 = vld1q_f32(bs); t1 = vld1q_f32(bs + 4); t2 = vld1q_f32(bs + 8); }
    if (beta != 0) {
        const float32x4_t vb = vdupq_n_f32(beta);
        t0 = vfmaq_f32(t0, vb, vld1q_f32(dst));
        t1 = vfmaq_f32(t1, vb, vld1q_f32(dst + 4));
        t2 = vfmaq_f32(t2, vb, vld1q_f32(dst + 8));
    }
    const float32x4_t va = vdupq_n_f32(alpha);
    vst1q_f32(dst, vfmaq_f32(t0, va, acc0));
    vst1q_f32(dst + 4, vfmaq_f32(t1, va, acc1));
    vst1q_f32(dst + 8, vfmaq_f32(t2, va, acc2));
    if (nr < NR) memcpy(cr, cb, sizeof(float) * (size_t)nr);
}

static VG_ALWAYS_INLINE void micro_kernel(int kc, const float *a, long rsA, long csA, int mra,
                                          const float *restrict b, float *c, long ldc,
                                          int mr, int nr, float alpha, float beta,
                                          const float *bias) {
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ROW_ZERO(r) float32x4_t c##r##_0 = vdupq_n_f32(0), c##r##_1 = c##r##_0, c##r##_2 = c##r##_0;
#define ROW_PREFETCH(r) if (r < mr) __builtin_prefetch(c + r * ldc, 1, 3);
/* row r's value sits in lane r % 4 of a0 (rows 0-3) or a1 (rows 4-7) */
#define ROW_FMA(r) { const float32x4_t x = r < 4 ? a0 : a1;                                   \
                     c##r##_0 = vfmaq_laneq_f32(c##r##_0, b0, x, r % 4);                      \
                     c##r##_1 = vfmaq_laneq_f32(c##r##_1, b1, x, r % 4);                      \
                     c##r##_2 = vfmaq_laneq_f32(c##r##_2, b2, x, r % 4); }
#define ROW_STORE(r) if (r < mr) store_row(c + r * ldc, c##r##_0, c##r##_1, c##r##_2, alpha, beta, bias, nr);
    ROWS(ROW_OFFSET)
    ROWS(ROW_ZERO)
    ROWS(ROW_PREFETCH)
    if (rsA == 1 && mra == MR) {                    /* the 8 values of one k side by side (packed A) */
#pragma GCC unroll 4
        for (int k = 0; k < kc; k++) {
            const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
            const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
            ROWS(ROW_FMA)
            a += csA; b += NR;
        }
    } else {                                        /* A read in place through its strides */
#pragma GCC unroll 2
        for (int k = 0; k < kc; k++) {
            const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
            const float32x4_t a0 = { a[o0], a[o1], a[o2], a[o3] }, a1 = { a[o4], a[o5], a[o6], a[o7] };
            ROWS(ROW_FMA)
            a += csA; b += NR;
        }
    }
    ROWS(ROW_STORE)
#undef ROWS
#undef ROW_ZERO
#undef ROW_PREFETCH
#undef ROW_FMA
#undef ROW_STORE
}
