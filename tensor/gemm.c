/* gemm.c — straightforward reference GEMM (to be replaced by the packed AVX-512 kernel). */
#include "gemm.h"
#include <string.h>

void vg_gemm(int transA, int transB, int M, int N, int K,
             real alpha, const real *A, int lda, const real *B, int ldb,
             real beta, real *C, int ldc) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        real *c = C + (long)i * ldc;
        if (beta == 0) memset(c, 0, sizeof(real) * N);
        else if (beta != 1) for (int j = 0; j < N; j++) c[j] *= beta;
        for (int k = 0; k < K; k++) {
            real a = alpha * (transA ? A[(long)k * lda + i] : A[(long)i * lda + k]);
            if (!transB) { const real *b = B + (long)k * ldb; for (int j = 0; j < N; j++) c[j] += a * b[j]; }
            else for (int j = 0; j < N; j++) c[j] += a * B[(long)j * ldb + k];
        }
    }
}

void vg_gemm_batched(int batch, int transA, int transB, int M, int N, int K,
                     real alpha, const real *A, int lda, long strideA,
                     const real *B, int ldb, long strideB,
                     real beta, real *C, int ldc, long strideC) {
    for (int b = 0; b < batch; b++)
        vg_gemm(transA, transB, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb,
                beta, C + b * strideC, ldc);
}
