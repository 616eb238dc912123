/* gemm_avx512.c — the GEMM on AVX-512 (compiled with -march=x86-64-v4; run only where the CPU has
 * AVX-512 F/BW/DQ/VL and the OS saves the zmm state): a 12×32 tile in 24 zmm accumulators, K
 * blocks of 256. make test also builds it with -DVG_GEMM_EMULATE_AVX512 for AVX2 machines, its
 * 512-bit intrinsics in plain C (gemm/emulate/avx512.h). */
#if defined(__x86_64__) && !defined(VG_DOUBLE)
#include <immintrin.h>
#if defined(VG_GEMM_EMULATE_AVX512)
#include "gemm/emulate/avx512.h"
#define VG_GEMM_EMULATED true
#define VG_GEMM_NAME "avx512 12x32, emulated in C"
#else
#define VG_GEMM_EMULATED false
#define VG_GEMM_NAME "avx512 12x32"
#endif
#define VG_GEMM_AVX512 1
enum { MR = 12, NR = 32 };
#define VG_GEMM_MICRO_KERNEL "kernel_avx512.h"
#define VG_GEMM_OPS vg_gemm_avx512
#define VG_GEMM_ISA VG_ISA_AVX512
#include "driver.h"
#endif
