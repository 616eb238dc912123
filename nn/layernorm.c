/* layernorm.c — LayerNorm over the last dimension, one fused op with a hand-written backward.
 *
 *   x (…, D) seen as R rows of D; w, b (D) optional (no affine when NULL)
 *   forward, per row:  μ = mean(x),  σ² = mean((x − μ)²)   (two passes, in double: simd/layernorm.h)
 *                      rstd = 1/√(σ² + eps),  x̂ = (x − μ)·rstd,  y = x̂ ⊙ w + b
 *   saved: μ and rstd per row (double, arena), x (contiguous), w.
 * The biased variance (divide by D) is PyTorch's; timm's ViT uses eps = 1e-6, PyTorch 1e-5. */
#include "nn.h"
#include <math.h>
#include "simd/simd.h"
#include <string.h>

typedef struct { double *mean, *rstd; int64_t R, D; int iw, ib; } ln_ctx;   /* iw/ib: input slots or −1 */

/* ------------------------------------------------------------------ backward
 * With dŷ = dy ⊙ w (the gradient reaching x̂), per row:
 *   dx = rstd · (dŷ − mean(dŷ) − x̂ · mean(dŷ ⊙ x̂))
 * term 1  dŷ               : the direct path through x̂ = (x − μ)·rstd
 * term 2  − mean(dŷ)       : through μ (every x_j moves μ by 1/D)
 * term 3  − x̂·mean(dŷ⊙x̂)  : through rstd (∂rstd/∂x_j = −rstd³·(x_j − μ)/D)
 * final scale rstd         : common factor of the three.
 * Parameters, summed over rows:  dw = Σ dy ⊙ x̂,  db = Σ dy. */
static void layernorm_backward(vg_node *n, const vg_tensor *g) {
    const ln_ctx *c = n->ctx;
    const int64_t R = c->R, D = c->D;
    const real *x = vg_data(n->saved[0]), *dy = vg_data(g);
    const real *w = n->saved[1] ? vg_data(n->saved[1]) : NULL;
    const bool need_x = vg_input_needs_grad(n, 0);
    const bool need_w = c->iw >= 0 && vg_input_needs_grad(n, c->iw), need_b = c->ib >= 0 && vg_input_needs_grad(n, c->ib);
    if (!need_x && !need_w && !need_b) return;
    /* x already has a gradient (a residual stream: the add's backward ran first): add dx into it
     * in this pass instead of writing dx and adding it in a second one */
    real *acc = need_x ? vg_grad_accumulator(n->inputs[0]) : NULL;
    vg_tensor *dx = need_x && !acc ? vg_empty(n->saved[0]->ndim, n->saved[0]->shape) : NULL;
    real *dxp = acc ? acc : dx ? vg_data(dx) : NULL;
    /* One pass over the rows: dx, and the partial sums of dw, db per chunk of rows (combined in
     * chunk order afterwards, vg_combine_chunks). */
    vg_tensor *dw = need_w ? vg_empty(1, &D) : NULL, *db = need_b ? vg_empty(1, &D) : NULL;
    const vg_arena_mark mark = vg_arena_get_mark();             /* the partials die below */
    double *part = need_w || need_b ? vg_chunk_partials(R, D, 2) : NULL;
    const int64_t nchunks = vg_row_chunks(R);
    const vg_row_ops *rows = vg_rows();
    #pragma omp parallel for schedule(static) if (R * D > 16384)
    for (int64_t ch = 0; ch < nchunks; ch++) {
        double *pw = part ? part + ch * D : NULL, *pb = part ? part + (nchunks + ch) * D : NULL;
        const int64_t r1 = vg_chunk_end(ch, R);
        for (int64_t r = ch * VG_ROW_CHUNK; r < r1; r++) {
            const real *xr = x + r * D, *gr = dy + r * D;
            const double mu = c->mean[r], rs = c->rstd[r];
            if (dxp)                            /* simd/layernorm.h: dx and this row's dw, db */
                rows->layernorm_grad_row(xr, gr, w, mu, rs, D, dxp + r * D, acc != NULL, pw, pb);
            else if (part)
                for (int64_t i = 0; i < D; i++) {
                    pw[i] += (double)gr[i] * (((double)xr[i] - mu) * rs);
                    pb[i] += (double)gr[i];
                }
        }
    }
    if (dw) vg_combine_chunks(part, R, D, vg_data(dw), false);
    if (db) vg_combine_chunks(part + nchunks * D, R, D, vg_data(db), false);
    vg_arena_release(mark);
    if (dx) vg_accumulate_grad_owned(n->inputs[0], dx);
    if (dw) vg_accumulate_grad_owned(n->inputs[c->iw], dw);
    if (db) vg_accumulate_grad_owned(n->inputs[c->ib], db);
}

/* ------------------------------------------------------------------ forward */
vg_tensor *vg_layernorm_fn(vg_tensor *x, vg_tensor *w, vg_tensor *b, double eps) {
    if (!x) return NULL;
    if (x->ndim < 1) { vg_set_error("layernorm: input must have at least 1 dimension"); return NULL; }
    const int64_t D = x->shape[x->ndim - 1];
    char sx[96]; vg_shape_str(x, sx, sizeof sx);
    if ((w && (w->ndim != 1 || w->shape[0] != D)) || (b && (b->ndim != 1 || b->shape[0] != D))) {
        vg_set_error("layernorm: weight and bias must be (%lld) for input %s", (long long)D, sx);
        return NULL;
    }
    if (D == 0) { vg_set_error("layernorm: input %s has an empty last dimension", sx); return NULL; }
    const int64_t R = vg_numel(x) / D;
    vg_tensor *xc = vg_contiguous_raw(x);
    vg_tensor *wc = w ? vg_contiguous_raw(w) : NULL, *bc = b ? vg_contiguous_raw(b) : NULL;
    const real *xp = vg_data(xc), *wp = wc ? vg_data(wc) : NULL, *bp = bc ? vg_data(bc) : NULL;
    ln_ctx *c = vg_arena_alloc(sizeof *c);
    c->mean = vg_arena_alloc(sizeof(double) * (size_t)(R + 1));
    c->rstd = vg_arena_alloc(sizeof(double) * (size_t)(R + 1));
    c->R = R; c->D = D;
    vg_tensor *y = vg_empty(x->ndim, x->shape);
    real *yp = vg_data(y);
    const vg_row_ops *rows = vg_rows();
    #pragma omp parallel for schedule(static) if (R * D > 16384)
    for (int64_t r = 0; r < R; r++)
        rows->layernorm_row(xp + r * D, wp, bp, yp + r * D, D, eps, &c->mean[r], &c->rstd[r]);
    vg_tensor *inputs[3] = {x, NULL, NULL};
    int n_in = 1;
    c->iw = c->ib = -1;
    if (w) { c->iw = n_in; inputs[n_in++] = w; }
    if (b) { c->ib = n_in; inputs[n_in++] = b; }
    if (vg_needs_grad(n_in, inputs)) {
        vg_node *n = vg_record(y, "layernorm", layernorm_backward, n_in, inputs);
        n->saved[0] = xc; n->saved[1] = wc;
        n->scalars[0] = eps;
        n->ctx = c;
    }
    return y;
}

/* ------------------------------------------------------------------ module */
void vg_layernorm_init(vg_layernorm *m, int dim, double eps) {
    memset(m, 0, sizeof *m);
    m->eps = eps;
    m->weight = vg_param(VG_DIMS(dim));
    m->bias = vg_param(VG_DIMS(dim));
    vg_init_constant(m->weight, 1.0);                /* bias stays 0 */
}

void vg_layernorm_params(vg_layernorm *m, vg_params *p, const char *prefix) {
    vg_params_add(p, prefix, "weight", m->weight, false);
    vg_params_add(p, prefix, "bias", m->bias, false);
}

vg_tensor *vg_layernorm_forward(vg_layernorm *m, vg_tensor *x) { return vg_layernorm_fn(x, m->weight, m->bias, m->eps); }

void vg_layernorm_free(vg_layernorm *m) {
    vg_tensor_free(m->weight); vg_tensor_free(m->bias);
    m->weight = m->bias = NULL;
}
