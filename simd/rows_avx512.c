/* rows_avx512.c — the row kernels on AVX-512 (compiled with -march=x86-64-v4): GELU and softmax as
 * on AVX2 (the same bits), LayerNorm's backward sums in one zmm of 8 doubles. */
#if defined(__x86_64__) && !defined(VG_DOUBLE)
#define VG_ROWS_OPS vg_rows_avx512
#define VG_ROWS_NAME "avx512"
#define VG_ROWS_ISA VG_ISA_AVX512
#include "simd/rows.h"
#endif
