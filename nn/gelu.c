/* gelu.c — fused bias + GELU (exact erf form, PyTorch's default approximate='none').
 *
 *   x (…, D), b (D) or NULL:  u = x + b,  y = gelu(u) = u·Φ(u) = u/2 · (1 + erf(u/√2))
 *   backward:  dx = dy ⊙ gelu'(u),  gelu'(u) = Φ(u) + u·φ(u),  φ(u) = e^{−u²/2}/√(2π)
 *              db = Σ_rows dx
 * u is not stored: the backward recomputes it from x and b (one add, saves an activation).
 * Never -ffast-math: it broke llm.c's GELU backward. */
#include "nn.h"
#include "simd/simd.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

/* saved: [0] x contiguous, [1] b contiguous or NULL; ints: R, D */
static void bias_gelu_backward(vg_node *n, const vg_tensor *g) {
    const int64_t R = n->ints[0], D = n->ints[1];
    const real *x = vg_data(n->saved[0]), *dy = vg_data(g);
    const real *b = n->saved[1] ? vg_data(n->saved[1]) : vg_data(vg_zeros(1, &n->ints[1]));
    vg_tensor *dx = vg_empty(n->saved[0]->ndim, n->saved[0]->shape);
    real *dxp = vg_data(dx);
    /* one pass: dx row by row, and db's partial sums per chunk of rows (vg_column_sums' order) */
    const bool need_b = n->n_inputs > 1 && vg_input_needs_grad(n, 1);
    vg_tensor *db = need_b ? vg_empty(1, &n->ints[1]) : NULL;
    const vg_arena_mark mark = vg_arena_get_mark();             /* the partials die below */
    double *part = need_b ? vg_chunk_partials(R, D, 1) : NULL;
    const int64_t nchunks = vg_row_chunks(R);
    const vg_row_ops *rows = vg_rows();
    #pragma omp parallel for schedule(static) if (R * D > 16384)
    for (int64_t ch = 0; ch < nchunks; ch++) {
        const int64_t r1 = vg_chunk_end(ch, R);
        for (int64_t r = ch * VG_ROW_CHUNK; r < r1; r++) {
            rows->gelu_grad(x + r * D, b, dy + r * D, dxp + r * D, D);
            if (part)
                for (int64_t i = 0; i < D; i++) part[ch * D + i] += (double)dxp[r * D + i];
        }
    }
    if (need_b) {                                               /* db = Σ_rows dx */
        vg_combine_chunks(part, R, D, vg_data(db), false);
        vg_arena_release(mark);
        vg_accumulate_grad_owned(n->inputs[1], db);
    }
    if (vg_input_needs_grad(n, 0)) vg_accumulate_grad_owned(n->inputs[0], dx);
}

vg_tensor *vg_bias_gelu_fn(vg_tensor *x, vg_tensor *b) {
    if (!x) return NULL;
    if (x->ndim < 1) { vg_set_error("bias_gelu: input must have at least 1 dimension"); return NULL; }
    const int64_t D = x->shape[x->ndim - 1];
    if (b && (b->ndim != 1 || b->shape[0] != D)) {
        char sx[96], sb[96]; vg_shape_str(x, sx, sizeof sx); vg_shape_str(b, sb, sizeof sb);
        vg_set_error("bias_gelu: bias %s must be (%lld) for input %s", sb, (long long)D, sx);
        return NULL;
    }
    const int64_t R = D ? vg_numel(x) / D : 0;
    vg_tensor *xc = vg_contiguous_raw(x), *bc = b ? vg_contiguous_raw(b) : NULL;
    const real *xp = vg_data(xc), *bp = vg_data(bc ? bc : vg_zeros(1, &D));   /* no bias: add zeros */
    vg_tensor *y = vg_empty(x->ndim, x->shape);
    real *yp = vg_data(y);
    const vg_row_ops *rows = vg_rows();
    #pragma omp parallel for schedule(static) if (R * D > 16384)
    for (int64_t r = 0; r < R; r++) rows->gelu(xp + r * D, bp, yp + r * D, D);
    vg_tensor *inputs[2] = {x, b};
    int n_in = b ? 2 : 1;
    if (vg_needs_grad(n_in, inputs)) {
        vg_node *n = vg_record(y, "bias_gelu", bias_gelu_backward, n_in, inputs);
        n->saved[0] = xc; n->saved[1] = bc;
        n->ints[0] = R; n->ints[1] = D;
    }
    return y;
}
