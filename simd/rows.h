/* rows.h — the row kernels' table for one instruction set: included by rows_<isa>.c after it
 * defines VG_ROWS_OPS, VG_ROWS_NAME and VG_ROWS_ISA; the code is the same, the target flags of
 * the including file decide what the compiler makes of it (and whether gelu.h and softmax.h take
 * their AVX2 forms, layernorm.h its AVX-512 one). */
#include "simd/simd.h"
#include "simd/gelu.h"
#include "simd/softmax.h"
#include "simd/layernorm.h"
#include "simd/pool.h"

const vg_row_ops VG_ROWS_OPS = { VG_ROWS_NAME, VG_ROWS_ISA, gelu_span, gelu_grad_span,
                                 softmax_rows_inplace, layernorm_row, layernorm_grad_row,
                                 maxpool_plane };
