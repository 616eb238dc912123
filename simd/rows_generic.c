/* rows_generic.c — the row kernels for any CPU (the build's baseline target; also the float64
 * library's): scalar forms the compiler vectorises as far as that target allows. */
#define VG_ROWS_OPS vg_rows_generic
#define VG_ROWS_NAME "generic"
#define VG_ROWS_ISA VG_ISA_GENERIC
#include "simd/rows.h"
