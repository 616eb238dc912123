/* ops_view.c — zero-copy views and their gradient routing.
 * Gradient rules pair up: reshape ↔ reshape back, permute ↔ inverse permute,
 * narrow/select ↔ pad with zeros, expand ↔ sum over the expanded axes, concat ↔ narrow. */
#include "autograd.h"
#include <string.h>

static int norm_dim(int d, int ndim, const char *op, bool *ok) {
    int r = d < 0 ? d + ndim : d;
    if (r < 0 || r >= ndim) { vg_set_error("%s: dim %d out of range for a %d-d tensor", op, d, ndim); *ok = false; }
    return r;
}

static vg_tensor *contiguous_view(const vg_tensor *base, int ndim, const int64_t *shape) {
    int64_t strides[VG_MAX_DIMS], s = 1;
    for (int d = ndim - 1; d >= 0; d--) { strides[d] = s; s *= shape[d]; }
    return vg_view_raw(base, ndim, shape, strides, base->offset);
}

/* ---- reshape family (reshape, view, flatten, squeeze, unsqueeze, contiguous):
 *      backward = the gradient reshaped to the input's shape ---- */
static void reshape_backward(vg_node *n, const vg_tensor *g) {
    vg_tensor *a = n->inputs[0];
    vg_accumulate_grad(a, contiguous_view(vg_contiguous_raw(g), a->ndim, a->shape));
}

static vg_tensor *record_view(vg_tensor *a, vg_tensor *out, const char *op, vg_backward_fn bw) {
    if (out && vg_needs_grad(1, &a)) vg_record(out, op, bw, 1, &a);
    return out;
}

static vg_tensor *reshape_impl(vg_tensor *a, int ndim, const int64_t *shape_in, bool allow_copy, const char *op) {
    if (!a) return NULL;
    if (ndim > VG_MAX_DIMS || ndim < 0) { vg_set_error("%s: %d dimensions", op, ndim); return NULL; }
    int64_t shape[VG_MAX_DIMS], known = 1;
    int infer = -1;
    for (int d = 0; d < ndim; d++) {
        shape[d] = shape_in[d];
        if (shape[d] == -1) {
            if (infer >= 0) { vg_set_error("%s: only one dimension can be -1", op); return NULL; }
            infer = d;
        } else if (shape[d] < 0) { vg_set_error("%s: invalid size %lld", op, (long long)shape[d]); return NULL; }
        else known *= shape[d];
    }
    int64_t numel = vg_numel(a);
    if (infer >= 0) {
        if (known == 0 || numel % known) { vg_set_error("%s: cannot infer -1 for %lld elements", op, (long long)numel); return NULL; }
        shape[infer] = numel / known;
        known *= shape[infer];
    }
    if (known != numel) {
        char s[96]; vg_shape_str(a, s, sizeof s);
        vg_set_error("%s: shape %s has %lld elements, the new shape %lld", op, s, (long long)numel, (long long)known);
        return NULL;
    }
    int64_t strides[VG_MAX_DIMS];
    vg_tensor *out;
    if (vg_view_strides(a, ndim, shape, strides)) out = vg_view_raw(a, ndim, shape, strides, a->offset);
    else if (allow_copy) out = contiguous_view(vg_contiguous_raw(a), ndim, shape);
    else {
        vg_set_error("view: the tensor's strides do not allow this view; use reshape (which copies) or contiguous()");
        return NULL;
    }
    return record_view(a, out, op, reshape_backward);
}

vg_tensor *vg_reshape(vg_tensor *a, int ndim, const int64_t *shape) { return reshape_impl(a, ndim, shape, true, "reshape"); }
vg_tensor *vg_view(vg_tensor *a, int ndim, const int64_t *shape) { return reshape_impl(a, ndim, shape, false, "view"); }

vg_tensor *vg_flatten(vg_tensor *a, int start, int end) {
    if (!a) return NULL;
    bool ok = true;
    if (a->ndim == 0) return vg_reshape(a, VG_DIMS(1));
    start = norm_dim(start, a->ndim, "flatten", &ok);
    end = norm_dim(end, a->ndim, "flatten", &ok);
    if (!ok) return NULL;
    if (start > end) { vg_set_error("flatten: start_dim %d after end_dim %d", start, end); return NULL; }
    int64_t shape[VG_MAX_DIMS]; int k = 0;
    for (int d = 0; d < start; d++) shape[k++] = a->shape[d];
    int64_t m = 1;
    for (int d = start; d <= end; d++) m *= a->shape[d];
    shape[k++] = m;
    for (int d = end + 1; d < a->ndim; d++) shape[k++] = a->shape[d];
    return reshape_impl(a, k, shape, true, "flatten");
}

vg_tensor *vg_unsqueeze(vg_tensor *a, int dim) {
    if (!a) return NULL;
    bool ok = true;
    int d = norm_dim(dim, a->ndim + 1, "unsqueeze", &ok);
    if (!ok) return NULL;
    if (a->ndim + 1 > VG_MAX_DIMS) { vg_set_error("unsqueeze: would exceed %d dimensions", VG_MAX_DIMS); return NULL; }
    int64_t shape[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    for (int i = 0, k = 0; i <= a->ndim; i++) {
        if (i == d) { shape[i] = 1; strides[i] = d < a->ndim ? a->strides[d] * a->shape[d] : 1; continue; }
        shape[i] = a->shape[k]; strides[i] = a->strides[k]; k++;
    }
    return record_view(a, vg_view_raw(a, a->ndim + 1, shape, strides, a->offset), "unsqueeze", reshape_backward);
}

vg_tensor *vg_squeeze(vg_tensor *a, int dim) {
    if (!a) return NULL;
    bool ok = true;
    int d = norm_dim(dim, a->ndim, "squeeze", &ok);
    if (!ok) return NULL;
    if (a->shape[d] != 1) { vg_set_error("squeeze: dimension %d has size %lld, not 1", dim, (long long)a->shape[d]); return NULL; }
    int64_t shape[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    for (int i = 0, k = 0; i < a->ndim; i++) if (i != d) { shape[k] = a->shape[i]; strides[k] = a->strides[i]; k++; }
    return record_view(a, vg_view_raw(a, a->ndim - 1, shape, strides, a->offset), "squeeze", reshape_backward);
}

vg_tensor *vg_contiguous(vg_tensor *a) {
    if (!a) return NULL;
    if (vg_is_contiguous(a)) return a;
    vg_tensor *out = vg_empty(a->ndim, a->shape);
    vg_copy_raw(out, a);
    return record_view(a, out, "contiguous", reshape_backward);
}

/* ---- permute: backward applies the inverse permutation ---- */
static vg_tensor *permute_raw(const vg_tensor *a, const int *perm) {
    int64_t shape[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++) { shape[d] = a->shape[perm[d]]; strides[d] = a->strides[perm[d]]; }
    return vg_view_raw(a, a->ndim, shape, strides, a->offset);
}

static void permute_backward(vg_node *n, const vg_tensor *g) {
    int inv[VG_MAX_DIMS];
    for (int d = 0; d < n->inputs[0]->ndim; d++) inv[n->ints[d]] = d;
    vg_accumulate_grad(n->inputs[0], permute_raw(g, inv));
}

vg_tensor *vg_permute(vg_tensor *a, const int *perm_in) {
    if (!a) return NULL;
    int perm[VG_MAX_DIMS]; unsigned seen = 0;
    for (int d = 0; d < a->ndim; d++) {
        int p = perm_in[d] < 0 ? perm_in[d] + a->ndim : perm_in[d];
        if (p < 0 || p >= a->ndim || (seen >> p & 1)) { vg_set_error("permute: invalid permutation for a %d-d tensor", a->ndim); return NULL; }
        seen |= 1u << p; perm[d] = p;
    }
    vg_tensor *out = permute_raw(a, perm);
    if (vg_needs_grad(1, &a)) {
        vg_node *n = vg_record(out, "permute", permute_backward, 1, &a);
        for (int d = 0; d < a->ndim; d++) n->ints[d] = perm[d];
    }
    return out;
}

vg_tensor *vg_transpose(vg_tensor *a, int d0, int d1) {
    if (!a) return NULL;
    bool ok = true;
    d0 = norm_dim(d0, a->ndim, "transpose", &ok);
    d1 = norm_dim(d1, a->ndim, "transpose", &ok);
    if (!ok) return NULL;
    int perm[VG_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++) perm[d] = d;
    perm[d0] = d1; perm[d1] = d0;
    return vg_permute(a, perm);
}

/* ---- narrow / select: backward writes the gradient into a zero tensor at the slice ---- */
static void narrow_backward(vg_node *n, const vg_tensor *g) {
    vg_tensor *a = n->inputs[0];
    int dim = (int)n->ints[0];
    int64_t start = n->ints[1], len = n->ints[2];
    vg_tensor *ga = vg_zeros(a->ndim, a->shape);
    int64_t shape[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    memcpy(shape, ga->shape, sizeof shape); memcpy(strides, ga->strides, sizeof strides);
    shape[dim] = len;
    vg_tensor *slot = vg_view_raw(ga, a->ndim, shape, strides, start * ga->strides[dim]);
    vg_copy_raw(slot, contiguous_view(vg_contiguous_raw(g), a->ndim, shape));  /* select: g lacks dim */
    vg_accumulate_grad(a, ga);
}

vg_tensor *vg_narrow(vg_tensor *a, int dim, int64_t start, int64_t length) {
    if (!a) return NULL;
    bool ok = true;
    int d = norm_dim(dim, a->ndim, "narrow", &ok);
    if (!ok) return NULL;
    if (start < 0) start += a->shape[d];
    if (start < 0 || length < 0 || start + length > a->shape[d]) {
        vg_set_error("narrow: [%lld, %lld) is outside dimension %d of size %lld", (long long)start,
                     (long long)(start + length), dim, (long long)a->shape[d]);
        return NULL;
    }
    int64_t shape[VG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[d] = length;
    vg_tensor *out = vg_view_raw(a, a->ndim, shape, a->strides, a->offset + start * a->strides[d]);
    if (vg_needs_grad(1, &a)) {
        vg_node *n = vg_record(out, "narrow", narrow_backward, 1, &a);
        n->ints[0] = d; n->ints[1] = start; n->ints[2] = length;
    }
    return out;
}

vg_tensor *vg_select(vg_tensor *a, int dim, int64_t index) {
    if (!a) return NULL;
    bool ok = true;
    int d = norm_dim(dim, a->ndim, "select", &ok);
    if (!ok) return NULL;
    if (index < 0) index += a->shape[d];
    if (index < 0 || index >= a->shape[d]) {
        vg_set_error("select: index %lld out of range for dimension %d of size %lld", (long long)index, dim, (long long)a->shape[d]);
        return NULL;
    }
    int64_t shape[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    for (int i = 0, k = 0; i < a->ndim; i++) if (i != d) { shape[k] = a->shape[i]; strides[k] = a->strides[i]; k++; }
    vg_tensor *out = vg_view_raw(a, a->ndim - 1, shape, strides, a->offset + index * a->strides[d]);
    if (vg_needs_grad(1, &a)) {
        vg_node *n = vg_record(out, "select", narrow_backward, 1, &a);
        n->ints[0] = d; n->ints[1] = index; n->ints[2] = 1;
    }
    return out;
}

/* ---- expand: stride 0 on the broadcast axes; backward sums them (in vg_accumulate_grad) ---- */
static void expand_backward(vg_node *n, const vg_tensor *g) { vg_accumulate_grad(n->inputs[0], g); }

vg_tensor *vg_expand(vg_tensor *a, int ndim, const int64_t *shape_in) {
    if (!a) return NULL;
    if (ndim < a->ndim || ndim > VG_MAX_DIMS) { vg_set_error("expand: cannot expand %d dims to %d", a->ndim, ndim); return NULL; }
    int64_t shape[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    int lead = ndim - a->ndim;
    for (int d = 0; d < ndim; d++) {
        shape[d] = shape_in[d];
        if (shape[d] == -1) {
            if (d < lead) { vg_set_error("expand: -1 is not allowed for a new leading dimension"); return NULL; }
            shape[d] = a->shape[d - lead];
        }
    }
    if (!vg_broadcast_strides(a, ndim, shape, strides)) {
        char msg[256]; snprintf(msg, sizeof msg, "expand: %s", vg_error()); vg_set_error("%s", msg);
        return NULL;
    }
    return record_view(a, vg_view_raw(a, ndim, shape, strides, a->offset), "expand", expand_backward);
}

/* ---- concat: backward hands each input its slice of the gradient ---- */
static void concat_backward(vg_node *n, const vg_tensor *g) {
    int dim = (int)n->ints[0];
    int64_t start = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        vg_tensor *in = n->inputs[i];
        int64_t len = in->shape[dim];
        if (in->requires_grad) {
            int64_t shape[VG_MAX_DIMS];
            memcpy(shape, g->shape, sizeof shape);
            shape[dim] = len;
            vg_accumulate_grad(in, vg_view_raw(g, g->ndim, shape, g->strides, g->offset + start * g->strides[dim]));
        }
        start += len;
    }
}

vg_tensor *vg_concat(int n, vg_tensor *const *ts, int dim) {
    if (n <= 0) { vg_set_error("concat: no tensors"); return NULL; }
    for (int i = 0; i < n; i++) if (!ts[i]) return NULL;
    bool ok = true;
    int d = norm_dim(dim, ts[0]->ndim, "concat", &ok);
    if (!ok) return NULL;
    int64_t shape[VG_MAX_DIMS];
    memcpy(shape, ts[0]->shape, sizeof shape);
    shape[d] = 0;
    for (int i = 0; i < n; i++) {
        bool match = ts[i]->ndim == ts[0]->ndim;
        for (int k = 0; match && k < ts[0]->ndim; k++) if (k != d && ts[i]->shape[k] != ts[0]->shape[k]) match = false;
        if (!match) {
            char s0[96], si[96]; vg_shape_str(ts[0], s0, sizeof s0); vg_shape_str(ts[i], si, sizeof si);
            vg_set_error("concat: tensor %d has shape %s, incompatible with %s along dim %d", i, si, s0, dim);
            return NULL;
        }
        shape[d] += ts[i]->shape[d];
    }
    vg_tensor *out = vg_empty(ts[0]->ndim, shape);
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        int64_t sh[VG_MAX_DIMS];
        memcpy(sh, out->shape, sizeof sh);
        sh[d] = ts[i]->shape[d];
        vg_copy_raw(vg_view_raw(out, out->ndim, sh, out->strides, start * out->strides[d]), ts[i]);
        start += sh[d];
    }
    /* more inputs than a node holds: chain concats of at most VG_NODE_MAX_INPUTS */
    if (vg_needs_grad(n, ts)) {
        if (n > VG_NODE_MAX_INPUTS) {
            vg_tensor *head = vg_concat(VG_NODE_MAX_INPUTS - 1, ts, d);
            vg_tensor *rest = vg_concat(n - (VG_NODE_MAX_INPUTS - 1), ts + VG_NODE_MAX_INPUTS - 1, d);
            vg_tensor *pair[2] = {head, rest};
            return vg_concat(2, pair, d);
        }
        vg_node *node = vg_record(out, "concat", concat_backward, n, ts);
        node->ints[0] = d;
    }
    return out;
}
