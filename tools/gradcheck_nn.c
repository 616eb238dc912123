/* gradcheck_nn.c — gradcheck cases for the nn layers (float64). Every input and every parameter
 * is differentiated; labels (cross-entropy) live in the case's ctx. Random layers (dropout) reseed
 * a local rng on each call so the mask is the same for every evaluation. */
#include "gradcheck.h"
#include "nn/nn.h"

/* ---- linear: y = x Wᵀ (+ b), 2-d / 3-d / transposed input */
typedef struct { bool bias, transposed; } lin_ctx;
static vg_tensor *f_linear(vg_tensor *const *in, void *ctx) {
    const lin_ctx *c = ctx;
    vg_tensor *x = c->transposed ? vg_transpose(in[0], 0, 1) : in[0];
    return vg_linear_fn(x, in[1], c->bias ? in[2] : NULL);
}
static lin_ctx lin_b = {true, false}, lin_nb = {false, false}, lin_t = {true, true};
GC_REGISTER(lin_2d, {"linear", "2-d, bias", f_linear, &lin_b, 3, {GC_IN(3, 4), GC_IN(5, 4), GC_IN(5)}})
GC_REGISTER(lin_3d, {"linear", "3-d, bias", f_linear, &lin_b, 3, {GC_IN(2, 3, 4), GC_IN(5, 4), GC_IN(5)}})
GC_REGISTER(lin_2d_nb, {"linear", "2-d, no bias", f_linear, &lin_nb, 2, {GC_IN(3, 4), GC_IN(5, 4)}})
GC_REGISTER(lin_3d_nb, {"linear", "3-d, no bias", f_linear, &lin_nb, 2, {GC_IN(2, 3, 4), GC_IN(5, 4)}})
GC_REGISTER(lin_t, {"linear", "transposed x, bias", f_linear, &lin_t, 3, {GC_IN(4, 3), GC_IN(5, 4), GC_IN(5)}})

/* ---- conv2d */
typedef struct { int stride, padding; bool bias; } conv_ctx;
static vg_tensor *f_conv(vg_tensor *const *in, void *ctx) {
    const conv_ctx *c = ctx;
    return vg_conv2d_fn(in[0], in[1], c->bias ? in[2] : NULL, c->stride, c->padding);
}
static conv_ctx cv_s1p1 = {1, 1, true}, cv_patch = {4, 0, true}, cv_patch_nb = {4, 0, false}, cv_s2p1 = {2, 1, true};
GC_REGISTER(cv_a, {"conv2d", "3x3 s1 p1, bias", f_conv, &cv_s1p1, 3, {GC_IN(2, 3, 5, 5), GC_IN(4, 3, 3, 3), GC_IN(4)}})
GC_REGISTER(cv_b, {"conv2d", "patch k=s=4, bias", f_conv, &cv_patch, 3, {GC_IN(2, 3, 8, 8), GC_IN(4, 3, 4, 4), GC_IN(4)}})
GC_REGISTER(cv_c, {"conv2d", "patch k=s=4, no bias", f_conv, &cv_patch_nb, 2, {GC_IN(2, 3, 8, 8), GC_IN(4, 3, 4, 4)}})
GC_REGISTER(cv_d, {"conv2d", "3x3 s2 p1 6x7, bias", f_conv, &cv_s2p1, 3, {GC_IN(2, 2, 6, 7), GC_IN(3, 2, 3, 3), GC_IN(3)}})

/* ---- layernorm */
typedef struct { bool affine; } ln_ctx;
static vg_tensor *f_layernorm(vg_tensor *const *in, void *ctx) {
    const ln_ctx *c = ctx;
    return vg_layernorm_fn(in[0], c->affine ? in[1] : NULL, c->affine ? in[2] : NULL, 1e-6);
}
static ln_ctx ln_aff = {true}, ln_plain = {false};
GC_REGISTER(ln_a, {"layernorm", "affine, eps 1e-6", f_layernorm, &ln_aff, 3, {GC_IN(2, 3, 6), GC_IN(6), GC_IN(6)}})
GC_REGISTER(ln_b, {"layernorm", "no affine", f_layernorm, &ln_plain, 1, {GC_IN(4, 7)}})

/* ---- bias + gelu */
static vg_tensor *f_bias_gelu(vg_tensor *const *in, void *ctx) { return vg_bias_gelu_fn(in[0], ctx ? in[1] : NULL); }
static int with_bias = 1;
GC_REGISTER(bg_a, {"bias_gelu", "bias", f_bias_gelu, &with_bias, 2, {GC_IN_RANGE(-3.0, 3.0, 2, 3, 5), GC_IN(5)}})
GC_REGISTER(bg_b, {"bias_gelu", "no bias", f_bias_gelu, NULL, 1, {GC_IN_RANGE(-3.0, 3.0, 4, 6)}})

/* ---- dropout: a local rng reseeded every call = a fixed mask */
static vg_tensor *f_dropout(vg_tensor *const *in, void *ctx) {
    vg_rng rng = vg_rng_seed(7);
    return vg_dropout_fn(in[0], 0.4, true, &rng);
}
GC_REGISTER(dr_a, {"dropout", "p 0.4, fixed mask", f_dropout, NULL, 1, {GC_IN(3, 7)}})

/* ---- attention core: qkv (B, N, 3D) */
typedef struct { int heads; double drop; } at_ctx;
static vg_tensor *f_attention(vg_tensor *const *in, void *ctx) {
    const at_ctx *c = ctx;
    vg_rng rng = vg_rng_seed(11);
    return vg_attention_fn(in[0], c->heads, c->drop, true, &rng, NULL);
}
static at_ctx at1 = {1, 0}, at2 = {2, 0}, at4 = {4, 0}, at2d = {2, 0.3};
GC_REGISTER(at_a, {"attention", "1 head", f_attention, &at1, 1, {GC_IN(2, 5, 24)}})
GC_REGISTER(at_b, {"attention", "2 heads", f_attention, &at2, 1, {GC_IN(2, 5, 24)}})
GC_REGISTER(at_c, {"attention", "4 heads", f_attention, &at4, 1, {GC_IN(2, 5, 24)}})
GC_REGISTER(at_d, {"attention", "2 heads, attn_drop 0.3", f_attention, &at2d, 1, {GC_IN(2, 5, 24)}})
/* cross-attention: q (B, R, D) over kv (B, N, 2D) (a ViT's last block: the class token's query) */
static vg_tensor *f_attention_cross(vg_tensor *const *in, void *ctx) {
    const at_ctx *c = ctx;
    vg_rng rng = vg_rng_seed(11);
    return vg_attention_cross_fn(in[0], in[1], c->heads, c->drop, true, &rng, NULL);
}
GC_REGISTER(atx_a, {"attention", "cross, 1 query, 2 heads", f_attention_cross, &at2, 2, {GC_IN(2, 1, 8), GC_IN(2, 5, 16)}})
GC_REGISTER(atx_b, {"attention", "cross, 3 queries, drop .3", f_attention_cross, &at2d, 2, {GC_IN(2, 3, 8), GC_IN(2, 5, 16)}})
/* LSA: the learned log-scale (1) is an input too; every row masks the diagonal */
static vg_tensor *f_attention_lsa(vg_tensor *const *in, void *ctx) {
    const at_ctx *c = ctx;
    vg_rng rng = vg_rng_seed(11);
    return vg_attention_lsa_fn(in[0], in[1], true, c->heads, c->drop, true, &rng, NULL);
}
static vg_tensor *f_attention_cross_lsa(vg_tensor *const *in, void *ctx) {
    const at_ctx *c = ctx;
    vg_rng rng = vg_rng_seed(11);
    return vg_attention_cross_lsa_fn(in[0], in[1], in[2], true, c->heads, c->drop, true, &rng, NULL);
}
GC_REGISTER(atl_a, {"attention", "LSA, 2 heads", f_attention_lsa, &at2, 2, {GC_IN(2, 5, 24), GC_IN(1)}})
GC_REGISTER(atl_b, {"attention", "LSA, 2 heads, attn_drop 0.3", f_attention_lsa, &at2d, 2, {GC_IN(2, 5, 24), GC_IN(1)}})
GC_REGISTER(atl_c, {"attention", "LSA, cross, 3 queries", f_attention_cross_lsa, &at2, 3, {GC_IN(2, 3, 8), GC_IN(2, 5, 16), GC_IN(1)}})

/* ---- mhsa module: x, qkv.weight, qkv.bias, proj.weight, proj.bias are all inputs */
static vg_tensor *f_mhsa(vg_tensor *const *in, void *ctx) {
    const at_ctx *c = ctx;
    vg_mhsa m = {.qkv = {in[1], in[2]}, .proj = {in[3], in[4]}, .heads = c->heads, .attn_drop = c->drop, .proj_drop = c->drop};
    vg_rng rng = vg_rng_seed(13);
    return vg_mhsa_forward(&m, in[0], 0, true, &rng, NULL);
}
static at_ctx mh2 = {2, 0}, mh2d = {2, 0.25};
GC_REGISTER(mh_a, {"mhsa", "2 heads", f_mhsa, &mh2, 5, {GC_IN(2, 5, 8), GC_IN(24, 8), GC_IN(24), GC_IN(8, 8), GC_IN(8)}})
GC_REGISTER(mh_b, {"mhsa", "2 heads, dropout 0.25", f_mhsa, &mh2d, 5, {GC_IN(2, 5, 8), GC_IN(24, 8), GC_IN(24), GC_IN(8, 8), GC_IN(8)}})

/* ---- cross-entropy: the labels are not differentiated, they live in the ctx */
typedef struct { double smoothing; int32_t labels[4]; } ce_ctx;
static vg_tensor *f_cross_entropy(vg_tensor *const *in, void *ctx) {
    const ce_ctx *c = ctx;
    return vg_cross_entropy_fn(in[0], c->labels, c->smoothing);
}
static ce_ctx ce0 = {0.0, {2, 0, 5, 3}}, ce1 = {0.1, {2, 0, 5, 3}};
GC_REGISTER(ce_a, {"cross_entropy", "no smoothing", f_cross_entropy, &ce0, 1, {GC_IN(4, 6)}})
GC_REGISTER(ce_b, {"cross_entropy", "label smoothing 0.1", f_cross_entropy, &ce1, 1, {GC_IN(4, 6)}})

/* ---- soft-target cross-entropy: the targets (mixed, smoothed one-hots) live in the ctx */
typedef struct { real targets[4 * 6]; } sce_ctx;
static vg_tensor *f_soft_cross_entropy(vg_tensor *const *in, void *ctx) {
    return vg_soft_cross_entropy_fn(in[0], ((const sce_ctx *)ctx)->targets);
}
/* rows: λ·q(y) + (1−λ)·q(y flipped) with smoothing 0.1 over 6 classes, λ = 0.7; the last row a
 * target whose mass is not 1 (the general formula) */
static sce_ctx sce_mix = {{
    0.0167 + 0.63, 0.0167, 0.0167 + 0.27, 0.0167, 0.0167, 0.0167,
    0.0167, 0.0167 + 0.27, 0.0167, 0.0167, 0.0167 + 0.63, 0.0167,
    0.0167, 0.0167 + 0.63, 0.0167, 0.0167, 0.0167 + 0.27, 0.0167,
    0.2, 0.0, 0.5, 0.1, 0.0, 0.4}};
GC_REGISTER(sce_a, {"soft_cross_entropy", "mixed targets", f_soft_cross_entropy, &sce_mix, 1, {GC_IN(4, 6)}})

/* ---- drop_path: a local rng reseeded every call = a fixed per-sample mask */
static vg_tensor *f_drop_path(vg_tensor *const *in, void *ctx) {
    vg_rng rng = vg_rng_seed(5);
    return vg_drop_path_fn(in[0], 0.5, true, &rng);
}
GC_REGISTER(dp_a, {"drop_path", "p 0.5, (6, 3, 4), fixed mask", f_drop_path, NULL, 1, {GC_IN(6, 3, 4)}})

/* ---- patch dropout: reseeded rng = the same kept rows every call; 3 of 6 patches + the prefix */
static vg_tensor *f_patch_dropout(vg_tensor *const *in, void *ctx) {
    vg_rng rng = vg_rng_seed(5);
    (void)ctx;
    return vg_patch_dropout_fn(in[0], 0.5, 1, true, &rng);
}
GC_REGISTER(pd_a, {"patch_dropout", "p 0.5, prefix 1, (3, 7, 4), fixed rows", f_patch_dropout, NULL, 1, {GC_IN(3, 7, 4)}})

/* ---- token gather with a repeated row (its gradient is the sum of both) and a skipped one */
static vg_tensor *f_token_gather(vg_tensor *const *in, void *ctx) {
    static const real rows[2 * 4] = {0, 3, 3, 1, 2, 0, 4, 4};
    (void)ctx;
    vg_tensor *idx = vg_from_array(VG_DIMS(2, 4), rows);
    return vg_token_gather_fn(in[0], idx);
}
GC_REGISTER(tg_a, {"token_gather", "(2, 5, 3) rows repeated and skipped", f_token_gather, NULL, 1, {GC_IN(2, 5, 3)}})

/* ---- pooling: uniform inputs, so no two taps of a window lie within eps of each other (max
 * pooling's gradient jumps where the maximum changes hands) */
typedef struct { int kernel, stride, padding; bool max; } pool_ctx;
static vg_tensor *f_pool(vg_tensor *const *in, void *ctx) {
    const pool_ctx *c = ctx;
    return c->max ? vg_max_pool2d_fn(in[0], c->kernel, c->stride, c->padding)
                  : vg_avg_pool2d_fn(in[0], c->kernel, c->stride, c->padding);
}
static vg_tensor *f_pool_transposed(vg_tensor *const *in, void *ctx) {
    const pool_ctx *c = ctx;
    return vg_max_pool2d_fn(vg_transpose(in[0], 2, 3), c->kernel, c->stride, c->padding);
}
static vg_tensor *f_global_avg_pool(vg_tensor *const *in, void *ctx) { return vg_global_avg_pool2d_fn(in[0]); }
static pool_ctx mp_k2 = {2, 0, 0, true}, mp_k3s2p1 = {3, 2, 1, true}, mp_k3s1 = {3, 1, 0, true},
                ap_k2 = {2, 0, 0, false}, ap_k3s2p1 = {3, 2, 1, false}, ap_k3s1 = {3, 1, 0, false};
GC_REGISTER(mp_a, {"max_pool2d", "k2 s2, (2, 3, 6, 6)", f_pool, &mp_k2, 1, {GC_IN_RANGE(-1.0, 1.0, 2, 3, 6, 6)}})
GC_REGISTER(mp_b, {"max_pool2d", "k3 s2 p1, 7x5", f_pool, &mp_k3s2p1, 1, {GC_IN_RANGE(-1.0, 1.0, 2, 2, 7, 5)}})
GC_REGISTER(mp_c, {"max_pool2d", "k3 s1 overlapping, 5x6", f_pool, &mp_k3s1, 1, {GC_IN_RANGE(-1.0, 1.0, 1, 2, 5, 6)}})
GC_REGISTER(mp_d, {"max_pool2d", "k2 s2, transposed x", f_pool_transposed, &mp_k2, 1, {GC_IN_RANGE(-1.0, 1.0, 2, 2, 4, 6)}})
GC_REGISTER(ap_a, {"avg_pool2d", "k2 s2, (2, 3, 6, 6)", f_pool, &ap_k2, 1, {GC_IN(2, 3, 6, 6)}})
GC_REGISTER(ap_b, {"avg_pool2d", "k3 s2 p1, 7x5", f_pool, &ap_k3s2p1, 1, {GC_IN(2, 2, 7, 5)}})
GC_REGISTER(ap_c, {"avg_pool2d", "k3 s1 overlapping, 5x6", f_pool, &ap_k3s1, 1, {GC_IN(1, 2, 5, 6)}})
GC_REGISTER(gap_a, {"global_avg_pool2d", "(2, 3, 4, 5)", f_global_avg_pool, NULL, 1, {GC_IN(2, 3, 4, 5)}})
