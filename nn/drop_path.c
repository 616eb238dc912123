/* drop_path.c — stochastic depth per sample (Huang et al. 2016; timm's DropPath): a residual
 * branch is dropped for whole samples.
 *
 *   x (B, …), p = drop probability, keep = 1 − p
 *   train and p > 0:  m_b = 1/keep with probability keep, else 0   (one draw per sample b)
 *                     y[b, …] = x[b, …] · m_b
 *   eval or p == 0:   identity (x itself, nothing recorded)
 *   backward:         dx[b, …] = dy[b, …] · m_b   (the mask is saved)
 * The mask is vg_dropout_mask over B samples of one entry each: sample b's draw depends on one key
 * from the rng and b's index in the global batch (vg_dropout_first_sample), not on the process. */
#include "nn.h"

/* saved: [0] the mask (B) */
static void drop_path_backward(vg_node *n, const vg_tensor *g) {
    const real *m = vg_data(n->saved[0]), *dy = vg_data(g);
    const int64_t B = g->shape[0], per = vg_numel(g) / (B ? B : 1);
    vg_tensor *dx = vg_empty(g->ndim, g->shape);
    real *o = vg_data(dx);
    #pragma omp parallel for schedule(static) if (B * per > 65536)
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < per; i++) o[b * per + i] = dy[b * per + i] * m[b];
    vg_accumulate_grad_owned(n->inputs[0], dx);
}

vg_tensor *vg_drop_path_fn(vg_tensor *x, double p, bool train, vg_rng *rng) {
    if (!x) return NULL;
    if (!(p >= 0 && p < 1)) { vg_set_error("drop_path: probability %g is not in [0, 1)", p); return NULL; }
    if (!train || p == 0) return x;
    if (x->ndim < 1) { vg_set_error("drop_path: needs a batch dimension (got a scalar)"); return NULL; }
    if (!rng) { vg_set_error("drop_path: training with p = %g needs an rng (got NULL)", p); return NULL; }
    vg_tensor *mask = vg_empty(VG_DIMS(x->shape[0]));
    vg_dropout_mask(vg_data(mask), x->shape[0], 1, p, rng);
    return vg_drop_path_masked_fn(x, mask);
}

vg_tensor *vg_drop_path_masked_fn(vg_tensor *x, vg_tensor *mask) {
    if (!x || !mask) return NULL;
    if (x->ndim < 1 || mask->ndim != 1 || mask->shape[0] != x->shape[0]) {
        char s1[96], s2[96]; vg_shape_str(x, s1, sizeof s1); vg_shape_str(mask, s2, sizeof s2);
        vg_set_error("drop_path: mask %s must be (B,) for x %s", s2, s1); return NULL;
    }
    const int64_t B = x->shape[0], per = vg_numel(x) / (B ? B : 1);
    vg_tensor *xc = vg_contiguous_raw(x), *mc = vg_contiguous_raw(mask);
    vg_tensor *y = vg_empty(x->ndim, x->shape);
    const real *xp = vg_data(xc), *m = vg_data(mc);
    real *yp = vg_data(y);
    #pragma omp parallel for schedule(static) if (B * per > 65536)
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < per; i++) yp[b * per + i] = xp[b * per + i] * m[b];
    if (vg_needs_grad(1, &x)) {
        vg_node *n = vg_record(y, "drop_path", drop_path_backward, 1, &x);
        n->saved[0] = mc;
    }
    return y;
}
