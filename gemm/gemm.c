/* gemm.c — the GEMM's public entry points (gemm.h): each forwards to the instruction set's table
 * isa/dispatch.c chose for this process (gemm/driver.h around the best micro-kernel the CPU runs). */
#include "gemm.h"
#include "kernels.h"
#include "isa/dispatch.h"
#include <omp.h>

void vg_gemm(int transA, int transB, int M, int N, int K, real alpha, const real *A, int lda,
             const real *B, int ldb, real beta, real *C, int ldc) {
    vg_kernels()->gemm->gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void vg_gemm_bias(int transA, int transB, int M, int N, int K, real alpha, const real *A, int lda,
                  const real *B, int ldb, const real *bias, real *C, int ldc) {
    vg_kernels()->gemm->gemm_bias(transA, transB, M, N, K, alpha, A, lda, B, ldb, bias, C, ldc);
}

void vg_gemm_batched(int batch, int transA, int transB, int M, int N, int K, real alpha,
                     const real *A, int lda, long strideA, const real *B, int ldb, long strideB,
                     real beta, real *C, int ldc, long strideC) {
    vg_kernels()->gemm->gemm_batched(batch, transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb,
                                     strideB, beta, C, ldc, strideC);
}

const char *vg_gemm_kernel(void) { return vg_kernels()->gemm->name; }

/* Threads to use: 1 inside a parallel region, otherwise OpenMP's count, capped so every thread
 * gets at least ~2 MFLOP. */
int vg_gemm_threads(long work) {
    if (omp_in_parallel()) return 1;
    int nt = omp_get_max_threads();
    long cap = work / (1L << 20);
    if (cap < nt) nt = cap < 1 ? 1 : (int)cap;
    return nt;
}
