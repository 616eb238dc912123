/* dispatch.h — the one place where vitgrad chooses its kernels: once per process, from what the
 * CPU has (isa/cpu.c) capped by VG_ISA, the FP32 GEMM's micro-kernel table (gemm/kernels.h) and the
 * row kernels' table (simd/simd.h). The bf16 GEMM's backend (gemm/bf16.c) asks vg_isa_allows for
 * its own levels. */
#ifndef VG_ISA_DISPATCH_H
#define VG_ISA_DISPATCH_H
#include "gemm/kernels.h"
#include "simd/simd.h"

typedef struct {
    const vg_gemm_ops *gemm;
    const vg_row_ops *rows;
} vg_kernel_set;

const vg_kernel_set *vg_kernels(void);
/* One line for start-up and --bench: e.g. "kernels: avx512 (this CPU: avx512bf16); GEMM avx512
 * 12x32, rows avx512", with VG_ISA's note when it is set. */
const char *vg_kernels_summary(void);
#endif
