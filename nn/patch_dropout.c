/* patch_dropout.c — patch dropout (Liu et al. 2022, "PatchDropout: Economizing Vision Transformers
 * Using Patch Dropout"; timm's PatchDropout, VisionTransformer(patch_drop_rate=p)): in training each
 * sample keeps a random subset of its patch tokens, so every later layer runs on fewer tokens.
 *
 *   x (B, T, D): `prefix` leading tokens (the class token) and N = T − prefix patch tokens
 *   K = max(1, ⌊N·(1 − p)⌋) patches kept per sample (timm's num_keep)
 *   train and p > 0:  idx_b = [0, …, prefix−1, prefix + s_1, …, prefix + s_K]: the prefix tokens,
 *                     then K distinct patches chosen uniformly (s_1 < … < s_K, timm's ordered=True)
 *                     y[b, k, :] = x[b, idx_b[k], :]                          (B, prefix + K, D)
 *   eval or p == 0:   identity (x itself, nothing recorded)
 *   backward:         dx[b, idx_b[k], :] = dy[b, k, :], 0 on the dropped rows
 * No rescaling: kept tokens are passed as they are. Sample b's choice comes from a generator seeded by
 * one key from the rng and b's index in the global batch (vg_dropout_sample_rng), as dropout's masks. */
#include "nn.h"
#include <string.h>

int64_t vg_patch_dropout_keep(int64_t patches, double p) {
    int64_t k = (int64_t)((double)patches * (1.0 - p));
    return k < 1 ? 1 : k;
}

/* saved: [0] idx (B, R) as reals; scalars[0] = T, the input's row count */
static void gather_backward(vg_node *n, const vg_tensor *g) {
    const real *dy = vg_data(g), *idx = vg_data(n->saved[0]);
    const int64_t B = g->shape[0], R = g->shape[1], D = g->shape[2], T = (int64_t)n->scalars[0];
    vg_tensor *dx = vg_zeros(VG_DIMS(B, T, D));
    real *o = vg_data(dx);
    #pragma omp parallel for schedule(static) if (B * R * D > 65536)
    for (int64_t b = 0; b < B; b++)
        for (int64_t r = 0; r < R; r++) {
            const int64_t t = (int64_t)idx[b * R + r];
            for (int64_t d = 0; d < D; d++) o[(b * T + t) * D + d] += dy[(b * R + r) * D + d];
        }
    vg_accumulate_grad_owned(n->inputs[0], dx);
}

vg_tensor *vg_token_gather_fn(vg_tensor *x, vg_tensor *idx) {
    if (!x || !idx) return NULL;
    if (x->ndim != 3 || idx->ndim != 2 || idx->shape[0] != x->shape[0]) {
        char s1[96], s2[96]; vg_shape_str(x, s1, sizeof s1); vg_shape_str(idx, s2, sizeof s2);
        vg_set_error("token_gather: indices %s must be (B, R) for x %s = (B, T, D)", s2, s1); return NULL;
    }
    const int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2], R = idx->shape[1];
    vg_tensor *ic = vg_contiguous_raw(idx);
    const real *ip = vg_data(ic);
    for (int64_t i = 0; i < B * R; i++)
        if (!(ip[i] >= 0 && ip[i] < (real)T && ip[i] == (real)(int64_t)ip[i])) {
            vg_set_error("token_gather: index %g at (%lld, %lld) is not a row of 0..%lld", (double)ip[i],
                         (long long)(i / (R ? R : 1)), (long long)(i % (R ? R : 1)), (long long)T - 1);
            return NULL;
        }
    vg_tensor *xc = vg_contiguous_raw(x);
    vg_tensor *y = vg_empty(VG_DIMS(B, R, D));
    const real *xp = vg_data(xc);
    real *yp = vg_data(y);
    #pragma omp parallel for schedule(static) if (B * R * D > 65536)
    for (int64_t b = 0; b < B; b++)
        for (int64_t r = 0; r < R; r++) {
            const real *src = xp + (b * T + (int64_t)ip[b * R + r]) * D;
            for (int64_t d = 0; d < D; d++) yp[(b * R + r) * D + d] = src[d];
        }
    if (vg_needs_grad(1, &x)) {
        vg_node *n = vg_record(y, "token_gather", gather_backward, 1, &x);
        n->saved[0] = ic;
        n->scalars[0] = (double)T;
    }
    return y;
}

void vg_patch_dropout_indices(real *idx, int64_t B, int64_t T, int prefix, double p, vg_rng *rng) {
    const int64_t N = T - prefix, K = vg_patch_dropout_keep(N, p), R = prefix + K;
    const uint64_t key = vg_rng_next(rng);
    uint32_t *perm_all = vg_arena_alloc(sizeof *perm_all * (size_t)(B * N));
    unsigned char *keep_all = vg_arena_alloc((size_t)(B * N));
    memset(keep_all, 0, (size_t)(B * N));
    #pragma omp parallel for schedule(static) if (B > 1 && B * N > 65536)
    for (int64_t b = 0; b < B; b++) {
        vg_rng g = vg_dropout_sample_rng(key, b);
        /* partial Fisher–Yates over 0..N−1: the first K entries are a uniform K-subset; a flag per
         * patch then lists the chosen ones in increasing order */
        uint32_t *perm = perm_all + b * N;
        unsigned char *keep = keep_all + b * N;
        real *row = idx + b * R;
        for (int i = 0; i < prefix; i++) row[i] = (real)i;
        for (int64_t i = 0; i < N; i++) perm[i] = (uint32_t)i;
        for (int64_t i = 0; i < K; i++) {
            const int64_t j = i + vg_rng_below(&g, (uint32_t)(N - i));
            const uint32_t s = perm[i]; perm[i] = perm[j]; perm[j] = s;
            keep[perm[i]] = 1;
        }
        for (int64_t i = 0, k = prefix; i < N; i++) if (keep[i]) row[k++] = (real)(prefix + i);
    }
}

vg_tensor *vg_patch_dropout_fn(vg_tensor *x, double p, int prefix, bool train, vg_rng *rng) {
    if (!x) return NULL;
    if (!(p >= 0 && p < 1)) { vg_set_error("patch_dropout: probability %g is not in [0, 1)", p); return NULL; }
    if (!train || p == 0) return x;
    if (x->ndim != 3 || prefix < 0 || x->shape[1] <= prefix) {
        char s[96]; vg_shape_str(x, s, sizeof s);
        vg_set_error("patch_dropout: expected (B, T, D) with more than %d prefix tokens, got %s", prefix, s); return NULL;
    }
    if (!rng) { vg_set_error("patch_dropout: training with p = %g needs an rng (got NULL)", p); return NULL; }
    if (x->shape[1] - prefix > UINT32_MAX) { vg_set_error("patch_dropout: %lld patches is too many", (long long)x->shape[1]); return NULL; }
    const int64_t B = x->shape[0], R = prefix + vg_patch_dropout_keep(x->shape[1] - prefix, p);
    vg_tensor *idx = vg_empty(VG_DIMS(B, R));
    vg_patch_dropout_indices(vg_data(idx), B, x->shape[1], prefix, p, rng);
    return vg_token_gather_fn(x, idx);
}
