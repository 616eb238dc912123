/* autocast.c — bf16 autocast, vitgrad's torch.autocast("cpu", dtype=torch.bfloat16).
 *
 * While on, the ops on PyTorch's CPU autocast "lower precision" list that vitgrad has — Linear,
 * Conv2d (im2col GEMM) and attention's Q·Kᵀ and Â·V — multiply bf16-rounded inputs with FP32
 * accumulation (gemm/bf16_dp.c), forward and backward (dX, dW, dQ, dK, dV): each op notes the
 * mode when it runs forward and its backward follows that note, as PyTorch's backward follows the
 * dtype of what forward saved. Everything else stays FP32: LayerNorm, softmax, GELU, dropout,
 * cross-entropy, reductions, AdamW, the parameters and their gradients. Unlike PyTorch, the
 * products' outputs stay FP32 (not rounded to bf16), and so does every saved activation.
 *
 * Process-wide, not per thread: the attention kernels read it on OpenMP worker threads. Set it
 * between steps (train.c: --amp). The float64 build has no bf16 GEMM and refuses to turn it on. */
#include "autograd.h"
#include "gemm/gemm.h"

static bool autocast_on;

bool vg_autocast_set(bool on) {
#ifdef VG_DOUBLE
    if (on) { vg_set_error("autocast: bf16 matrix products exist only in the float32 build"); return false; }
#endif
    autocast_on = on;
    return true;
}

bool vg_autocast_enabled(void) { return autocast_on; }

void vg_amp_gemm(bool bf16, int transA, int transB, int M, int N, int K, real alpha, const real *A,
                 int lda, const real *B, int ldb, real beta, real *C, int ldc) {
#ifndef VG_DOUBLE
    if (bf16) { vg_gemm_bf16(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); return; }
#endif
    vg_gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void vg_amp_gemm_bias(bool bf16, int transA, int transB, int M, int N, int K, real alpha,
                      const real *A, int lda, const real *B, int ldb, const real *bias, real *C, int ldc) {
#ifndef VG_DOUBLE
    if (bf16) { vg_gemm_bf16_bias(transA, transB, M, N, K, alpha, A, lda, B, ldb, bias, C, ldc); return; }
#endif
    vg_gemm_bias(transA, transB, M, N, K, alpha, A, lda, B, ldb, bias, C, ldc);
}

void vg_amp_gemm_batched(bool bf16, int batch, int transA, int transB, int M, int N, int K, real alpha,
                         const real *A, int lda, long strideA, const real *B, int ldb, long strideB,
                         real beta, real *C, int ldc, long strideC) {
#ifndef VG_DOUBLE
    if (bf16) {
        vg_gemm_bf16_batched(batch, transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB,
                             beta, C, ldc, strideC);
        return;
    }
#endif
    vg_gemm_batched(batch, transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC);
}
