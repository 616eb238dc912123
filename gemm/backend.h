/* backend.h — the bf16 kernels behind gemm/bf16.c's front end. Internal to gemm/.
 * Each takes one product (gemm/common.h's gemm_problem, with M, N, K > 0 and alpha != 0) on nt
 * threads (1: the calling thread alone, e.g. inside a parallel region) and computes
 * C = alpha · bf16(op(A)) · bf16(op(B)) + beta·C + bias with FP32 sums, the same bits for any nt. */
#ifndef VG_GEMM_BACKEND_H
#define VG_GEMM_BACKEND_H
#include <stdbool.h>
#include "common.h"

/* vdpbf16ps (gemm/bf16_dp.c): usable where the CPU has AVX512_BF16 and VG_ISA allows it (or
 * emulated in C, make test). */
bool vg_bf16_dp_usable(const char **why);
void vg_bf16_dp_gemm(const gemm_problem *p, int nt);
const char *vg_bf16_dp_name(void);

/* AMX tiles (gemm/amx.c): usable where isa/cpu.c says so and VG_ISA allows it, or emulated in C. */
bool vg_amx_usable(const char **why);
void vg_amx_gemm(const gemm_problem *p, int nt);
const char *vg_amx_name(void);
#endif
