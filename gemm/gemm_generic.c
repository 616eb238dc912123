/* gemm_generic.c — the GEMM for any CPU: the portable C micro-kernel (4×8), vectorised by the
 * compiler for the build's baseline target. Also the float64 library's only GEMM. */
enum { MR = 4, NR = 8 };
#define VG_GEMM_MICRO_KERNEL "kernel_c.h"
#define VG_GEMM_OPS vg_gemm_generic
#define VG_GEMM_ISA VG_ISA_GENERIC
#define VG_GEMM_EMULATED false
#ifdef VG_DOUBLE
#define VG_GEMM_NAME "portable C 4x8 (float64)"
#else
#define VG_GEMM_NAME "portable C 4x8"
#endif
#include "driver.h"
