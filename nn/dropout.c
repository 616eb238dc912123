/* dropout.c — inverted dropout: y = x ⊙ m, m_i = 1/(1−p) with probability 1−p, else 0.
 *
 *   train and p > 0:  draw m from the rng (one uniform per element, row-major), y = x ⊙ m
 *   eval or p == 0:   identity (x itself is returned, nothing is recorded)
 *   backward:         dx = dy ⊙ m   (the mask is saved, so forward and backward agree exactly)
 * Kept values are scaled at train time so eval needs no rescaling (E[y] = x).
 * The mask of sample i (dim 0) comes from its own generator, seeded by (one key drawn from the
 * caller's rng per call, i's index in the global batch): the same sample gets the same mask
 * whichever data-parallel rank computes it and whatever the batch split. */
#include "nn.h"

static int64_t first_sample;
void vg_dropout_first_sample(int64_t index) { first_sample = index; }

vg_rng vg_dropout_sample_rng(uint64_t key, int64_t r) {
    return vg_rng_seed(key + 0x9e3779b97f4a7c15ULL * (uint64_t)(first_sample + r + 1));
}

void vg_dropout_mask(real *mask, int64_t rows, int64_t row_len, double p, vg_rng *rng) {
    const real scale = p < 1 ? (real)(1.0 / (1.0 - p)) : 0;
    const uint64_t key = vg_rng_next(rng);
    #pragma omp parallel for schedule(static) if (rows > 1 && rows * row_len > 65536)
    for (int64_t r = 0; r < rows; r++) {
        vg_rng g = vg_dropout_sample_rng(key, r);
        real *m = mask + r * row_len;
        for (int64_t i = 0; i < row_len; i++) m[i] = vg_rng_uniform(&g) >= p ? scale : 0;
    }
}

/* saved: [0] the mask, shape of x */
static void dropout_backward(vg_node *n, const vg_tensor *g) {
    const real *m = vg_data(n->saved[0]), *dy = vg_data(g);
    vg_tensor *dx = vg_empty(g->ndim, g->shape);
    real *o = vg_data(dx);
    int64_t len = vg_numel(g);
    #pragma omp parallel for schedule(static) if (len > 65536)
    for (int64_t i = 0; i < len; i++) o[i] = dy[i] * m[i];
    vg_accumulate_grad_owned(n->inputs[0], dx);
}

vg_tensor *vg_dropout_fn(vg_tensor *x, double p, bool train, vg_rng *rng) {
    if (!x) return NULL;
    if (!(p >= 0 && p <= 1)) { vg_set_error("dropout: probability %g is not in [0, 1]", p); return NULL; }
    if (!train || p == 0) return x;
    if (!rng) { vg_set_error("dropout: training with p = %g needs an rng (got NULL)", p); return NULL; }
    vg_tensor *mask = vg_empty(x->ndim, x->shape);
    int64_t len = vg_numel(x);
    const int64_t rows = x->ndim >= 2 ? x->shape[0] : 1;
    vg_dropout_mask(vg_data(mask), rows, rows ? len / rows : 0, p, rng);
    vg_tensor *xc = vg_contiguous_raw(x);
    vg_tensor *y = vg_empty(x->ndim, x->shape);
    const real *xp = vg_data(xc), *m = vg_data(mask);
    real *yp = vg_data(y);
    #pragma omp parallel for schedule(static) if (len > 65536)
    for (int64_t i = 0; i < len; i++) yp[i] = xp[i] * m[i];
    if (vg_needs_grad(1, &x)) {
        vg_node *n = vg_record(y, "dropout", dropout_backward, 1, &x);
        n->saved[0] = mask;
        n->scalars[0] = p;
    }
    return y;
}
