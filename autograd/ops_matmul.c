/* ops_matmul.c — batched matrix product with broadcasting over batch dimensions.
 *
 *   forward:  C[..., M, N] = A[..., M, K] · B[..., K, N]
 *   backward: dA = dC · Bᵀ   (summed over A's broadcast batch axes)
 *             dB = Aᵀ · dC   (summed over B's broadcast batch axes)
 * An operand whose last two dims are transposed-contiguous is handed to GEMM with its transpose
 * flag instead of being copied. 1-D operands follow PyTorch (vector as a row / a column). */
#include "autograd.h"
#include "gemm/gemm.h"
#include <string.h>

/* Can the (…, R, C) matrix block of t be passed to GEMM as-is? *trans and *ld describe how. */
static bool gemm_layout(const vg_tensor *t, int *trans, int64_t *ld) {
    int nd = t->ndim;
    int64_t rows = t->shape[nd - 2], cols = t->shape[nd - 1];
    int64_t rs = t->strides[nd - 2], cs = t->strides[nd - 1];
    if ((cs == 1 || cols == 1) && rs >= (cols > 1 ? cols : 1)) { *trans = 0; *ld = rs > 0 ? rs : 1; return true; }
    if ((rs == 1 || rows == 1) && cs >= (rows > 1 ? rows : 1)) { *trans = 1; *ld = cs > 0 ? cs : 1; return true; }
    return false;
}

/* C = A · B for ≥2-d A and B (batch dims broadcast). No graph. */
static vg_tensor *matmul_raw(const vg_tensor *a, const vg_tensor *b) {
    int na = a->ndim, nb = b->ndim;
    int64_t M = a->shape[na - 2], K = a->shape[na - 1], N = b->shape[nb - 1];
    if (b->shape[nb - 2] != K) {
        char s1[96], s2[96]; vg_shape_str(a, s1, sizeof s1); vg_shape_str(b, s2, sizeof s2);
        vg_set_error("matmul: %s @ %s: inner sizes %lld and %lld differ", s1, s2, (long long)K, (long long)b->shape[nb - 2]);
        return NULL;
    }
    int64_t batch_shape[VG_MAX_DIMS], sa[VG_MAX_DIMS], sb[VG_MAX_DIMS];
    int nbatch = vg_broadcast_shapes(na - 2, a->shape, nb - 2, b->shape, batch_shape);
    if (nbatch < 0) {
        char s1[96], s2[96], msg[200]; vg_shape_str(a, s1, sizeof s1); vg_shape_str(b, s2, sizeof s2);
        snprintf(msg, sizeof msg, "%s", vg_error());
        vg_set_error("matmul: batch dimensions of %s and %s do not broadcast: %s", s1, s2, msg);
        return NULL;
    }
    int64_t oshape[VG_MAX_DIMS];
    memcpy(oshape, batch_shape, sizeof(int64_t) * (size_t)nbatch);
    oshape[nbatch] = M; oshape[nbatch + 1] = N;
    vg_tensor *out = vg_empty(nbatch + 2, oshape);
    int ta = 0, tb = 0; int64_t lda = 1, ldb = 1;
    if (!gemm_layout(a, &ta, &lda)) { a = vg_contiguous_raw(a); gemm_layout(a, &ta, &lda); }
    if (!gemm_layout(b, &tb, &ldb)) { b = vg_contiguous_raw(b); gemm_layout(b, &tb, &ldb); }
    /* batch strides of a and b seen in the broadcast batch shape (0 where broadcast) */
    for (int d = 0; d < nbatch; d++) {
        int da = d - (nbatch - (na - 2)), db = d - (nbatch - (nb - 2));
        sa[d] = da >= 0 && a->shape[da] != 1 ? a->strides[da] : 0;
        sb[d] = db >= 0 && b->shape[db] != 1 ? b->strides[db] : 0;
    }
    int64_t nmat = 1;
    for (int d = 0; d < nbatch; d++) nmat *= batch_shape[d];
    const real *A = a->storage->data, *Bm = b->storage->data;
    real *C = vg_data(out);
    if (nmat == 1 || nbatch == 0) {
        vg_gemm(ta, tb, (int)M, (int)N, (int)K, 1, A + a->offset, (int)lda, Bm + b->offset, (int)ldb, 0, C, (int)N);
        return out;
    }
    /* uniform batch stride (the common case: one batch dim, or contiguous batches) → batched GEMM */
    bool uniform = true;
    int64_t ua = sa[nbatch - 1], ub = sb[nbatch - 1];
    for (int d = nbatch - 2; d >= 0 && uniform; d--) {
        int64_t inner = 1;
        for (int k = d + 1; k < nbatch; k++) inner *= batch_shape[k];
        if (sa[d] != ua * inner || sb[d] != ub * inner) uniform = false;
    }
    if (uniform) {
        vg_gemm_batched((int)nmat, ta, tb, (int)M, (int)N, (int)K, 1, A + a->offset, (int)lda, (long)ua,
                        Bm + b->offset, (int)ldb, (long)ub, 0, C, (int)N, (long)(M * N));
        return out;
    }
    int64_t idx[VG_MAX_DIMS] = {0};
    for (int64_t m = 0; m < nmat; m++) {
        int64_t oa = a->offset, ob = b->offset;
        for (int d = 0; d < nbatch; d++) { oa += idx[d] * sa[d]; ob += idx[d] * sb[d]; }
        vg_gemm(ta, tb, (int)M, (int)N, (int)K, 1, A + oa, (int)lda, Bm + ob, (int)ldb, 0, C + m * M * N, (int)N);
        for (int d = nbatch - 1; d >= 0; d--) { if (++idx[d] < batch_shape[d]) break; idx[d] = 0; }
    }
    return out;
}

static vg_tensor *transpose_last2(const vg_tensor *t) {
    int64_t shape[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    int nd = t->ndim;
    memcpy(shape, t->shape, sizeof shape); memcpy(strides, t->strides, sizeof strides);
    shape[nd - 2] = t->shape[nd - 1]; shape[nd - 1] = t->shape[nd - 2];
    strides[nd - 2] = t->strides[nd - 1]; strides[nd - 1] = t->strides[nd - 2];
    return vg_view_raw(t, nd, shape, strides, t->offset);
}

/* grad (already summed to the promoted operand's shape) reshaped to the input's own shape */
static void accumulate_reshaped(vg_tensor *in, vg_tensor *grad) {
    vg_tensor *gc = vg_contiguous_raw(grad);
    int64_t strides[VG_MAX_DIMS], s = 1;
    for (int d = in->ndim - 1; d >= 0; d--) { strides[d] = s; s *= in->shape[d]; }
    vg_accumulate_grad(in, vg_view_raw(gc, in->ndim, in->shape, strides, gc->offset));
}

static void matmul_backward(vg_node *n, const vg_tensor *g_in) {
    const vg_tensor *a = n->saved[0], *b = n->saved[1];      /* the ≥2-d operands */
    /* g in the promoted (…, M, N) shape */
    int nd = (int)n->ints[0];
    int64_t strides[VG_MAX_DIMS], s = 1;
    for (int d = nd - 1; d >= 0; d--) { strides[d] = s; s *= n->ints[1 + d]; }
    vg_tensor *gc = vg_contiguous_raw(g_in);
    vg_tensor *g = vg_view_raw(gc, nd, &n->ints[1], strides, gc->offset);
    if (vg_input_needs_grad(n, 0))
        accumulate_reshaped(n->inputs[0], vg_sum_to_shape(matmul_raw(g, transpose_last2(b)), a->ndim, a->shape));
    if (vg_input_needs_grad(n, 1))
        accumulate_reshaped(n->inputs[1], vg_sum_to_shape(matmul_raw(transpose_last2(a), g), b->ndim, b->shape));
}

vg_tensor *vg_matmul(vg_tensor *a, vg_tensor *b) {
    if (!a || !b) return NULL;
    if (a->ndim == 0 || b->ndim == 0) { vg_set_error("matmul: both operands need at least 1 dimension"); return NULL; }
    /* 1-d a: (K) → (1, K); 1-d b: (K) → (K, 1); the added dims are removed from the result */
    const vg_tensor *a2 = a, *b2 = b;
    if (a->ndim == 1) { int64_t sh[2] = {1, a->shape[0]}, st[2] = {a->shape[0] * a->strides[0], a->strides[0]}; a2 = vg_view_raw(a, 2, sh, st, a->offset); }
    if (b->ndim == 1) { int64_t sh[2] = {b->shape[0], 1}, st[2] = {b->strides[0], 1}; b2 = vg_view_raw(b, 2, sh, st, b->offset); }
    vg_tensor *out = matmul_raw(a2, b2), *full = out;
    if (!out) return NULL;
    if (a->ndim == 1 || b->ndim == 1) {
        int64_t shape[VG_MAX_DIMS]; int k = 0;
        for (int d = 0; d < out->ndim - 2; d++) shape[k++] = out->shape[d];
        if (a->ndim != 1) shape[k++] = out->shape[out->ndim - 2];
        if (b->ndim != 1) shape[k++] = out->shape[out->ndim - 1];
        int64_t strides[VG_MAX_DIMS], s = 1;
        for (int d = k - 1; d >= 0; d--) { strides[d] = s; s *= shape[d]; }
        out = vg_view_raw(out, k, shape, strides, 0);
    }
    vg_tensor *in[2] = {a, b};
    if (vg_needs_grad(2, in)) {
        vg_node *n = vg_record(out, "matmul", matmul_backward, 2, in);
        n->saved[0] = (vg_tensor *)a2; n->saved[1] = (vg_tensor *)b2;
        n->ints[0] = full->ndim;
        for (int d = 0; d < full->ndim; d++) n->ints[1 + d] = full->shape[d];
    }
    return out;
}
