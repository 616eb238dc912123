/* kernels.h — the FP32 GEMM's per-instruction-set tables (float64 in the gradcheck library). Each
 * gemm_<isa>.c instantiates gemm/driver.h around its micro-kernel and exports one table;
 * isa/dispatch.c picks the best one this CPU runs, once per process. Internal to gemm/ and isa/. */
#ifndef VG_GEMM_KERNELS_H
#define VG_GEMM_KERNELS_H
#include "tensor/real.h"
#include "isa/isa.h"
#include <stdbool.h>

typedef struct {
    const char *name;           /* "avx512 12x32", "avx2+fma 6x16", "portable C 4x8", … */
    vg_isa isa;                 /* the level whose instructions it needs */
    bool emulated;              /* its intrinsics in plain C (make test): runs with AVX2+FMA */
    void (*gemm)(int transA, int transB, int M, int N, int K, real alpha, const real *A, int lda,
                 const real *B, int ldb, real beta, real *C, int ldc);
    void (*gemm_bias)(int transA, int transB, int M, int N, int K, real alpha, const real *A,
                      int lda, const real *B, int ldb, const real *bias, real *C, int ldc);
    void (*gemm_batched)(int batch, int transA, int transB, int M, int N, int K, real alpha,
                         const real *A, int lda, long strideA, const real *B, int ldb, long strideB,
                         real beta, real *C, int ldc, long strideC);
} vg_gemm_ops;

extern const vg_gemm_ops vg_gemm_generic;
#if defined(__x86_64__) && !defined(VG_DOUBLE)
extern const vg_gemm_ops vg_gemm_avx2, vg_gemm_avx512;
#endif
#if defined(__aarch64__) && !defined(VG_DOUBLE)
extern const vg_gemm_ops vg_gemm_neon;
#endif
#endif
