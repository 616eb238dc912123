/* gemm.h — the single matrix-product entry point. Every matmul in vitgrad goes through here.
 *
 *   C = alpha * op(A) * op(B) + beta * C        (row-major)
 *   op(A) is M×K: A is M×K (lda ≥ K) when transA == 0, or K×M (lda ≥ M) when transA != 0.
 *   op(B) is K×N: B is K×N (ldb ≥ N) when transB == 0, or N×K (ldb ≥ K) when transB != 0.
 *   C is M×N with ldc ≥ N. beta == 0 means C is overwritten (its old contents, even NaN, ignored).
 *
 * Deterministic: every C element is summed over K in the same order whatever the thread count. */
#ifndef VG_GEMM_H
#define VG_GEMM_H
#include "real.h"

void vg_gemm(int transA, int transB, int M, int N, int K,
             real alpha, const real *A, int lda, const real *B, int ldb,
             real beta, real *C, int ldc);

/* C = alpha * op(A) * op(B) + bias, bias (N) added to every row (NULL: none); C overwritten.
 * The Linear layer's Y = X Wᵀ + b in one pass: the bias enters where the first K block stores
 * C, the same sum as filling C with b and calling vg_gemm with beta = 1. */
void vg_gemm_bias(int transA, int transB, int M, int N, int K,
                  real alpha, const real *A, int lda, const real *B, int ldb,
                  const real *bias, real *C, int ldc);

/* batch independent products: A_i = A + i*strideA, B_i = B + i*strideB, C_i = C + i*strideC.
 * For many small matrices (attention heads): parallel over the batch, no per-matrix packing. */
void vg_gemm_batched(int batch, int transA, int transB, int M, int N, int K,
                     real alpha, const real *A, int lda, long strideA,
                     const real *B, int ldb, long strideB,
                     real beta, real *C, int ldc, long strideC);
/* The micro-kernel this build uses ("avx512 12x32", "avx2+fma 6x16", "portable C 4x8"; make
 * test's second run names its AVX-512 kernel "avx512 12x32, emulated in C"). */
const char *vg_gemm_kernel(void);
/* Threads a product of M·N·K = work uses: 1 inside a parallel region, else OpenMP's count capped
 * so every thread gets at least ~2 MFLOP. */
int vg_gemm_threads(long work);

/* ---- bf16 GEMM (tensor/gemm_bf16.c), what --amp's matrix products run on: the same arguments
 * and contract as vg_gemm / _bias / _batched above, but every element of op(A) and op(B) is
 * first rounded to bfloat16 (round to nearest even) and the products are summed in FP32.
 * Deterministic for a given thread count like vg_gemm. Float32 build only (not in -DVG_DOUBLE). */
void vg_gemm_bf16(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc);
void vg_gemm_bf16_bias(int transA, int transB, int M, int N, int K, float alpha, const float *A,
                       int lda, const float *B, int ldb, const float *bias, float *C, int ldc);
void vg_gemm_bf16_batched(int batch, int transA, int transB, int M, int N, int K, float alpha,
                          const float *A, int lda, long strideA, const float *B, int ldb, long strideB,
                          float beta, float *C, int ldc, long strideC);
/* "avx512_bf16 vdpbf16ps 12x32" (CPUs with AVX512_BF16), "… emulated in C" (make test's second
 * run), or the fallback "bf16-rounded inputs, FP32 kernel (no AVX512_BF16)". */
const char *vg_gemm_bf16_kernel(void);
#endif
