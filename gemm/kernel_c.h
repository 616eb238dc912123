/* kernel_c.h — the portable C micro-kernel (4×8; also the float64 library's), which the
 * compiler vectorises for the target it is built for.
 * Included by gemm/driver.h at its micro-kernel slot (store_c and ROW_OFFSET are defined there). */

static VG_ALWAYS_INLINE void micro_kernel(int kc, const real *a, long rsA, long csA, int mra,
                                          const real *restrict b, real *c, long ldc,
                                          int mr, int nr, real alpha, real beta,
                                          const real *bias) {
    long o[MR];
    for (int r = 0; r < MR; r++) o[r] = (r < mra ? r : mra - 1) * rsA;
    real acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (int k = 0; k < kc; k++) {
        for (int r = 0; r < MR; r++) {
            real x = a[o[r]];
            for (int j = 0; j < NR; j++) acc[r][j] += x * b[j];
        }
        a += csA; b += NR;
    }
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) store_c(c + r * ldc + j, alpha, acc[r][j], beta, bias ? bias[j] : 0);
}

