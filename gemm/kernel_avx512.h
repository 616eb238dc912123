/* kernel_avx512.h — the AVX-512 FP32 micro-kernel: a 12×32 tile of C in 24 zmm accumulators,
 * one B row of two zmm loads and 12 broadcast A values per k.
 * Included by gemm/driver.h at its micro-kernel slot (store_c and ROW_OFFSET are defined there). */

static VG_ALWAYS_INLINE void micro_kernel(int kc, const float *a, long rsA, long csA, int mra,
                                          const float *restrict b, float *c, long ldc,
                                          int mr, int nr, float alpha, float beta,
                                          const float *bias) {
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define ROW_ZERO(r) __m512 c##r##_0 = _mm512_setzero_ps(), c##r##_1 = _mm512_setzero_ps();
#define ROW_PREFETCH(r) if (r < mr) _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
#define ROW_FMA(r) { __m512 x = _mm512_set1_ps(a[o##r]);                                    \
                     c##r##_0 = _mm512_fmadd_ps(x, b0, c##r##_0);                           \
                     c##r##_1 = _mm512_fmadd_ps(x, b1, c##r##_1); }
#define ROW_STORE(r) if (r < mr) store_row(c + r * ldc, c##r##_0, c##r##_1, alpha, beta, bias, m0, m1);
    ROWS(ROW_OFFSET)
    ROWS(ROW_ZERO)
    ROWS(ROW_PREFETCH)
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        ROWS(ROW_FMA)
        a += csA; b += NR;
    }
    const __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    ROWS(ROW_STORE)
#undef ROWS
#undef ROW_ZERO
#undef ROW_PREFETCH
#undef ROW_FMA
#undef ROW_STORE
}

