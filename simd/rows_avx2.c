/* rows_avx2.c — the row kernels on AVX2+FMA (compiled with -march=x86-64-v3): e^x and erf in 8
 * lanes (simd/exp8.h, simd/gelu.h), softmax in 8 lanes. */
#if defined(__x86_64__) && !defined(VG_DOUBLE)
#define VG_ROWS_OPS vg_rows_avx2
#define VG_ROWS_NAME "avx2+fma"
#define VG_ROWS_ISA VG_ISA_AVX2
#include "simd/rows.h"
#endif
