/* gemm_avx2.c — the GEMM on AVX2+FMA (compiled with -march=x86-64-v3 whatever the rest of the build
 * targets; isa/dispatch.c runs it only where the CPU has AVX2 and FMA): a 6×16 tile in 12 ymm
 * accumulators, K blocks of 384. */
#if defined(__x86_64__) && !defined(VG_DOUBLE)
#include <immintrin.h>
#define VG_GEMM_AVX2 1
enum { MR = 6, NR = 16 };
#define VG_GEMM_MICRO_KERNEL "kernel_avx2.h"
#define VG_GEMM_OPS vg_gemm_avx2
#define VG_GEMM_ISA VG_ISA_AVX2
#define VG_GEMM_EMULATED false
#define VG_GEMM_NAME "avx2+fma 6x16"
#include "driver.h"
#endif
