/* kernel_avx2.h — the AVX2+FMA FP32 micro-kernel: a 6×16 tile of C in 12 ymm accumulators.
 * Included by gemm/driver.h at its micro-kernel slot (store_c and ROW_OFFSET are defined there). */

static VG_ALWAYS_INLINE void store_row(float *cr, __m256 acc0, __m256 acc1, float alpha,
                                       float beta, const float *bias, int full,
                                       __m256i m0, __m256i m1) {
    __m256 t0 = _mm256_setzero_ps(), t1 = _mm256_setzero_ps();
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    if (full) {
        if (bias) { t0 = _mm256_loadu_ps(bias); t1 = _mm256_loadu_ps(bias + 8); }
        if (beta != 0) {
            t0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr), t0);
            t1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8), t1);
        }
        _mm256_storeu_ps(cr, _mm256_fmadd_ps(va, acc0, t0));
        _mm256_storeu_ps(cr + 8, _mm256_fmadd_ps(va, acc1, t1));
    } else {                                        /* partial width: masked loads/stores */
        if (bias) { t0 = _mm256_maskload_ps(bias, m0); t1 = _mm256_maskload_ps(bias + 8, m1); }
        if (beta != 0) {
            t0 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cr, m0), t0);
            t1 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cr + 8, m1), t1);
        }
        _mm256_maskstore_ps(cr, m0, _mm256_fmadd_ps(va, acc0, t0));
        _mm256_maskstore_ps(cr + 8, m1, _mm256_fmadd_ps(va, acc1, t1));
    }
}

static VG_ALWAYS_INLINE void micro_kernel(int kc, const float *a, long rsA, long csA, int mra,
                                          const float *restrict b, float *c, long ldc,
                                          int mr, int nr, float alpha, float beta,
                                          const float *bias) {
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROW_ZERO(r) __m256 c##r##_0 = _mm256_setzero_ps(), c##r##_1 = _mm256_setzero_ps();
#define ROW_PREFETCH(r) if (r < mr) _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
#define ROW_FMA(r) { __m256 x = _mm256_broadcast_ss(a + o##r);                              \
                     c##r##_0 = _mm256_fmadd_ps(x, b0, c##r##_0);                           \
                     c##r##_1 = _mm256_fmadd_ps(x, b1, c##r##_1); }
#define ROW_STORE(r) if (r < mr) store_row(c + r * ldc, c##r##_0, c##r##_1, alpha, beta,  \
                                           bias, nr == NR, m0, m1);
    ROWS(ROW_OFFSET)
    ROWS(ROW_ZERO)
    ROWS(ROW_PREFETCH)
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        ROWS(ROW_FMA)
        a += csA; b += NR;
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8), lane);
    ROWS(ROW_STORE)
#undef ROWS
#undef ROW_ZERO
#undef ROW_PREFETCH
#undef ROW_FMA
#undef ROW_STORE
}

