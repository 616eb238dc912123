/* gemm.h — the single matrix-product entry point. Every matmul in vitgrad goes through here.
 *
 * gemm/ holds every kernel (gemm/README.md); isa/dispatch.c chooses them at run time:
 *   driver.h + gemm_<isa>.c   FP32: one blocked, packed driver around each instruction set's
 *               micro-kernel (AVX-512 12×32, AVX2+FMA 6×16, NEON, portable C 4×8)
 *   bf16.c      the bf16 front end (--amp): picks a backend once per process (vg_gemm_bf16_use)
 *   amx.c       AMX tiles: tdpbf16ps on 2×2 tiles of 16×16
 *   bf16_dp.c   AVX512_BF16: vdpbf16ps 12×32
 *   emulate/    the intrinsics of each SIMD backend in plain C, so make test runs every kernel
 *               on any x86-64 machine with AVX2+FMA
 *
 *   C = alpha * op(A) * op(B) + beta * C        (row-major)
 *   op(A) is M×K: A is M×K (lda ≥ K) when transA == 0, or K×M (lda ≥ M) when transA != 0.
 *   op(B) is K×N: B is K×N (ldb ≥ N) when transB == 0, or N×K (ldb ≥ K) when transB != 0.
 *   C is M×N with ldc ≥ N. beta == 0 means C is overwritten (its old contents, even NaN, ignored).
 *
 * Deterministic: every C element is summed over K in the same order whatever the thread count. */
#ifndef VG_GEMM_H
#define VG_GEMM_H
#include "tensor/real.h"
#include <stdbool.h>

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
/* The micro-kernel in use ("avx512 12x32", "avx2+fma 6x16", "portable C 4x8", …; make test's
 * emulated run names its AVX-512 kernel "avx512 12x32, emulated in C"). */
const char *vg_gemm_kernel(void);
/* Threads a product of M·N·K = work uses: 1 inside a parallel region, else OpenMP's count capped
 * so every thread gets at least ~2 MFLOP. */
int vg_gemm_threads(long work);

/* ---- bf16 GEMM (gemm/bf16.c and its backends), what --amp's matrix products run on: the same arguments
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
/* The bf16 backends, one chosen per process (gemm/bf16.c):
 *   "amx"        AMX tiles (tdpbf16ps), where CPUID, XCR0 and Linux's permission allow them
 *   "vdpbf16ps"  AVX512_BF16 vdpbf16ps, where the CPU has it
 *   "rounded"    op(A), op(B) rounded to bf16 into FP32 copies, then the FP32 GEMM: the bf16
 *                semantics on any CPU (FP32 sums in another order), slower than FP32
 *   "fp32"       the FP32 GEMM itself, inputs not rounded: what --amp runs where no bf16 kernel
 *                is faster than FP32 (the same bits as without --amp)
 *   "auto"       amx if usable; else vdpbf16ps on CPUs whose vdpbf16ps outruns their FP32 FMAs
 *                (AMD Zen 4/5: twice the rate, measured); else fp32 (Intel without AMX: vdpbf16ps
 *                at half the FMA rate, measured; CPUs without AVX512_BF16).
 * The environment variable VG_BF16_GEMM names the backend when vg_gemm_bf16_use was not called.
 * vg_gemm_bf16_use returns false (vg_error() says why) for a backend this CPU or build lacks; call
 * it between products, not while one runs. */
bool vg_gemm_bf16_use(const char *name);
/* The backend's name as vg_gemm_bf16_use takes it ("amx", "vdpbf16ps", "rounded", "fp32"). */
const char *vg_gemm_bf16_backend(void);
/* Its kernel, for start-up lines: e.g. "amx tdpbf16ps 32x32 (2x2 tiles)", "avx512_bf16 vdpbf16ps
 * 12x32", "… emulated in C" (make test's emulated run), "FP32 GEMM (avx512 12x32)". */
const char *vg_gemm_bf16_kernel(void);
/* Why auto chose it, or "chosen by VG_BF16_GEMM" / "chosen by the caller"; one line. */
const char *vg_gemm_bf16_reason(void);
/* Whether a backend can run here (false: why, as a sentence, in *why when why is not NULL). */
bool vg_gemm_bf16_available(const char *name, const char **why);
#endif
