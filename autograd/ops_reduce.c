/* ops_reduce.c — sum / mean / max over any set of axes, sum_to_shape, softmax, log_softmax.
 * Reductions accumulate in double, in row-major order of the input: deterministic and accurate. */
#include "autograd.h"
#include "tensor/strided.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum { R_SUM, R_MAX } reduce_kind;

/* Normalise `axes` into a bitmask over a->ndim dimensions (none given = all). */
static bool axes_mask(const vg_tensor *a, int naxes, const int *axes, unsigned *mask, const char *op) {
    *mask = 0;
    if (naxes == 0 || !axes) { *mask = (1u << a->ndim) - 1; return true; }
    for (int i = 0; i < naxes; i++) {
        int d = axes[i] < 0 ? axes[i] + a->ndim : axes[i];
        if (d < 0 || d >= a->ndim) { vg_set_error("%s: axis %d out of range for a %d-d tensor", op, axes[i], a->ndim); return false; }
        if (*mask & (1u << d)) { vg_set_error("%s: axis %d given twice", op, axes[i]); return false; }
        *mask |= 1u << d;
    }
    return true;
}

/* Reduce a over the dims in mask; the result keeps every dim (reduced ones have size 1).
 * For R_MAX, *argmax (if given) receives, per output element, the row-major index into a. */
static vg_tensor *reduce_raw(const vg_tensor *a, unsigned mask, reduce_kind kind, int64_t **argmax) {
    int nd = a->ndim;
    int64_t oshape[VG_MAX_DIMS] = {0}, ostr[VG_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) oshape[d] = (mask >> d & 1) ? 1 : a->shape[d];
    vg_tensor *out = vg_empty(nd, oshape);
    int64_t on = vg_numel(out);
    for (int d = 0; d < nd; d++) ostr[d] = (mask >> d & 1) ? 0 : out->strides[d];
    if (kind == R_MAX && vg_numel(a) == 0) { vg_set_error("max: empty tensor"); return NULL; }
    double *acc = vg_arena_alloc(sizeof(double) * (size_t)(on ? on : 1));
    int64_t *arg = kind == R_MAX ? vg_arena_alloc(sizeof(int64_t) * (size_t)(on ? on : 1)) : NULL;
    for (int64_t i = 0; i < on; i++) acc[i] = kind == R_SUM ? 0.0 : -INFINITY;
    if (arg) for (int64_t i = 0; i < on; i++) arg[i] = -1;
    const real *x = a->storage->data;
    if (nd == 0) {
        acc[0] = kind == R_SUM ? (double)x[a->offset] : (double)x[a->offset];
        if (arg) arg[0] = 0;
    } else {
        strided_iter it = {nd, a->shape, {ostr, a->strides, NULL}, {0, a->offset, 0}, 2};
        int64_t len = a->shape[nd - 1], os = ostr[nd - 1], xs = a->strides[nd - 1];
        int64_t flat = 0;
        FOR_EACH_ROW(it, {
            const real *xr = x + o_[1];
            double *ar = acc + o_[0];
            if (kind == R_SUM) {
                for (int64_t j = 0; j < len; j++) ar[j * os] += (double)xr[j * xs];
            } else {
                int64_t *gr = arg + o_[0];
                for (int64_t j = 0; j < len; j++) {
                    double v = (double)xr[j * xs];
                    /* first maximum wins; NaN propagates as in PyTorch */
                    if (v > ar[j * os] || (isnan(v) && !isnan(ar[j * os])) || gr[j * os] < 0) { ar[j * os] = v; gr[j * os] = flat + j; }
                }
            }
            flat += len;
        });
    }
    real *o = vg_data(out);
    for (int64_t i = 0; i < on; i++) o[i] = (real)acc[i];
    if (argmax) *argmax = arg;
    return out;
}

/* Drop the reduced dims of a keepdim-shaped contiguous tensor (a view). */
static vg_tensor *squeeze_mask(vg_tensor *t, unsigned mask) {
    int64_t shape[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < t->ndim; d++)
        if (!(mask >> d & 1)) { shape[k] = t->shape[d]; strides[k] = t->strides[d]; k++; }
    vg_tensor *v = vg_view_raw(t, k, shape, strides, t->offset);
    return v;
}

/* A gradient of the reduced shape, viewed with the reduced dims back as size 1 then expanded. */
static vg_tensor *expand_back(const vg_tensor *g, const vg_tensor *a, unsigned mask) {
    int64_t strides[VG_MAX_DIMS];
    vg_tensor *gc = vg_contiguous_raw(g);
    int k = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (mask >> d & 1) strides[d] = 0;
        else strides[d] = gc->ndim == a->ndim ? gc->strides[d] : gc->strides[k++];
    }
    return vg_view_raw(gc, a->ndim, a->shape, strides, gc->offset);
}

/* ---- sum: d/da = 1 broadcast back over the reduced axes ---- */
static void sum_backward(vg_node *n, const vg_tensor *g) {
    vg_accumulate_grad(n->inputs[0], expand_back(g, n->inputs[0], (unsigned)n->ints[0]));
}
/* ---- mean: d/da = 1/count broadcast back ---- */
static void mean_backward(vg_node *n, const vg_tensor *g) {
    vg_tensor *e = expand_back(g, n->inputs[0], (unsigned)n->ints[0]);
    vg_accumulate_grad(n->inputs[0], vg_mul_scalar(e, n->scalars[0]));
}
/* ---- max: the gradient goes to the (first) position of the maximum ---- */
static void max_backward(vg_node *n, const vg_tensor *g) {
    vg_tensor *a = n->inputs[0];
    vg_tensor *ga = vg_zeros(a->ndim, a->shape);
    const int64_t *arg = n->ctx;
    vg_tensor *gc = vg_contiguous_raw(g);
    int64_t on = vg_numel(gc);
    for (int64_t i = 0; i < on; i++) vg_data(ga)[arg[i]] += vg_data(gc)[i];
    vg_accumulate_grad(a, ga);
}

static vg_tensor *reduce_op(vg_tensor *a, int naxes, const int *axes, bool keepdim, int which) {
    static const char *names[] = {"sum", "mean", "max"};
    if (!a) return NULL;
    unsigned mask;
    if (!axes_mask(a, naxes, axes, &mask, names[which])) return NULL;
    int64_t *arg = NULL;
    vg_tensor *out = reduce_raw(a, mask, which == 2 ? R_MAX : R_SUM, &arg);
    if (!out) return NULL;
    double count = 1;
    for (int d = 0; d < a->ndim; d++) if (mask >> d & 1) count *= (double)a->shape[d];
    if (which == 1) {
        real *o = vg_data(out);
        for (int64_t i = 0, n = vg_numel(out); i < n; i++) o[i] = (real)((double)o[i] / count);
    }
    if (!keepdim) out = squeeze_mask(out, mask);
    if (vg_needs_grad(1, &a)) {
        vg_backward_fn bw = which == 0 ? sum_backward : which == 1 ? mean_backward : max_backward;
        vg_node *n = vg_record(out, names[which], bw, 1, &a);
        n->ints[0] = mask;
        n->scalars[0] = 1.0 / count;
        n->ctx = arg;
    }
    return out;
}

vg_tensor *vg_sum(vg_tensor *a, int naxes, const int *axes, bool keepdim) { return reduce_op(a, naxes, axes, keepdim, 0); }
vg_tensor *vg_mean(vg_tensor *a, int naxes, const int *axes, bool keepdim) { return reduce_op(a, naxes, axes, keepdim, 1); }
vg_tensor *vg_max(vg_tensor *a, int naxes, const int *axes, bool keepdim) { return reduce_op(a, naxes, axes, keepdim, 2); }
vg_tensor *vg_sum_all(vg_tensor *a) { return reduce_op(a, 0, NULL, false, 0); }
vg_tensor *vg_mean_all(vg_tensor *a) { return reduce_op(a, 0, NULL, false, 1); }

vg_tensor *vg_sum_to_shape(const vg_tensor *g, int ndim, const int64_t *shape) {
    if (!g) return NULL;
    int lead = g->ndim - ndim;
    if (lead < 0) { vg_set_error("sum_to_shape: target has more dimensions than the gradient"); return NULL; }
    unsigned mask = 0;
    for (int d = 0; d < g->ndim; d++) {
        if (d < lead) { mask |= 1u << d; continue; }
        int64_t want = shape[d - lead];
        if (want == 1 && g->shape[d] != 1) mask |= 1u << d;
        else if (want != g->shape[d]) { vg_set_error("sum_to_shape: size %lld cannot sum to %lld", (long long)g->shape[d], (long long)want); return NULL; }
    }
    if (!mask) return (vg_tensor *)g;
    vg_tensor *r = reduce_raw(g, mask, R_SUM, NULL);
    int64_t strides[VG_MAX_DIMS], s = 1;
    for (int d = ndim - 1; d >= 0; d--) { strides[d] = s; s *= shape[d]; }
    return vg_view_raw(r, ndim, shape, strides, 0);
}
