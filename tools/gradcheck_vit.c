/* gradcheck_vit.c — the whole Vision Transformer against central differences (float64).
 *
 * Config: 8×8 images, 3 channels, patch 4, dim 8, depth 2, 2 heads, 5 classes, batch 2; one row
 * per (pooling, position embedding). The checked inputs are the image and EVERY trainable
 * parameter. gc_case holds at most GC_MAX_INPUTS inputs, fewer than the model's 33 tensors, so
 * the parameters are one flat vector: each call re-points the model's parameter slots
 * (vg_vit_slots) at views (narrow + reshape) of it, in timm's state-dict order, so one flat index
 * maps to exactly one parameter element (a failing "input 1 element k" is found by summing the
 * sizes of the tensors in that order). Eval mode (dropout off).
 * The timm layout variants (class token off, register tokens, no_embed_class, fc_norm,
 * LayerScale, no head) have rows of their own, in combinations the published checkpoints use. */
#include "gradcheck.h"
#include "vit/vit.h"
#include <string.h>

enum { GC_D = 8, GC_C = 3, GC_P = 4, GC_IMG = 8, GC_N = (GC_IMG / GC_P) * (GC_IMG / GC_P), GC_H = 4 * GC_D,
       GC_K = 5, GC_DEPTH = 2, GC_B = 2 };
#define GC_VIT_NPARAMS(learned)                                                                     \
    (GC_D * GC_C * GC_P * GC_P + GC_D                   /* patch_embed.proj */                      \
     + GC_D + ((learned) ? (GC_N + 1) * GC_D : 0)       /* cls_token, pos_embed */                  \
     + GC_DEPTH * (2 * GC_D + 3 * GC_D * GC_D + 3 * GC_D + GC_D * GC_D + GC_D + 2 * GC_D           \
                   + GC_H * GC_D + GC_H + GC_D * GC_H + GC_D)                                       \
     + 2 * GC_D + GC_D * GC_K + GC_K)                   /* norm, head */
/* a timm layout: S prefix tokens (cls + R reg), pos rows (0 when fixed), LayerScale, head */
#define GC_VIT_NPARAMS_LAYOUT(S, pos_rows, ls, head)                                                \
    (GC_D * GC_C * GC_P * GC_P + GC_D + (S) * GC_D + (pos_rows) * GC_D                              \
     + GC_DEPTH * (2 * GC_D + 3 * GC_D * GC_D + 3 * GC_D + GC_D * GC_D + GC_D + 2 * GC_D           \
                   + GC_H * GC_D + GC_H + GC_D * GC_H + GC_D + ((ls) ? 2 * GC_D : 0))              \
     + 2 * GC_D + ((head) ? GC_D * GC_K + GC_K : 0))

#define MAX_SLOTS 64
typedef struct {
    vg_vit_pool pool; vg_vit_posembed pos;
    double drop_path;                       /* > 0: train mode, a fixed per-sample mask */
    double patch_drop;                      /* > 0: train mode, fixed kept patches */
    bool no_cls; int reg; bool no_embed_class, fc_norm; double init_values; bool no_head;   /* layout */
    int overlap;                            /* patch_overlap: kernel P + 2·overlap */
    int stem[2];                            /* conv_stem channels (0: none) */
    bool stem_pool;                         /* the stem convolves at stride 1 and max-pools */
    bool lsa;                               /* locality self-attention */
    vg_vit model;
    bool ready;
    int n;                                  /* trainable slots */
    vg_tensor **slot[MAX_SLOTS];
    vg_tensor *owned[MAX_SLOTS];            /* the model's own tensors (shapes; kept reachable) */
    char names[MAX_SLOTS][128];
} vit_gc;

static void vit_prepare(vg_tensor **inputs, void *vctx) {
    vit_gc *c = vctx;
    if (c->ready) return;
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = GC_IMG; cfg.patch_size = GC_P; cfg.in_chans = GC_C; cfg.num_classes = GC_K;
    cfg.embed_dim = GC_D; cfg.depth = GC_DEPTH; cfg.num_heads = 2;
    cfg.pool = c->pool; cfg.pos_embed = c->pos; cfg.drop_path_rate = c->drop_path;
    cfg.patch_drop_rate = c->patch_drop;
    cfg.class_token = !c->no_cls; cfg.reg_tokens = c->reg; cfg.no_embed_class = c->no_embed_class;
    cfg.fc_norm = c->fc_norm; cfg.init_values = c->init_values; cfg.patch_overlap = c->overlap;
    cfg.conv_stem[0] = c->stem[0]; cfg.conv_stem[1] = c->stem[1];
    cfg.lsa = c->lsa; cfg.stem_pool = c->stem_pool;
    if (c->no_head) cfg.num_classes = 0;
    vg_rng rng = vg_rng_seed(7);
    if (!vg_vit_init(&c->model, &cfg, &rng)) return;
    c->n = vg_vit_slots(&c->model, true, c->slot, c->names, NULL, MAX_SLOTS);
    for (int i = 0; i < c->n && i < MAX_SLOTS; i++) c->owned[i] = *c->slot[i];
    c->ready = c->n <= MAX_SLOTS;
    (void)inputs;
}

static vg_tensor *f_vit(vg_tensor *const *in, void *vctx) {
    vit_gc *c = vctx;
    if (!c->ready) { vg_set_error("vit gradcheck: model not built: %s", vg_error()); return NULL; }
    int64_t off = 0;
    for (int i = 0; i < c->n; i++) {
        const vg_tensor *o = c->owned[i];
        int64_t n = vg_numel(o);
        *c->slot[i] = vg_reshape(vg_narrow(in[1], 0, off, n), o->ndim, o->shape);
        off += n;
    }
    if (off != in[1]->shape[0]) {
        vg_set_error("vit gradcheck: the model has %lld trainable scalars, the flat input %lld",
                     (long long)off, (long long)in[1]->shape[0]);
        return NULL;
    }
    /* reseeded: the same masks every evaluation; seed 13 drops sample 0 in block 1's attention
     * branch and sample 1 in its MLP branch, keeping the others (scaled by 2.5) */
    vg_rng rng = vg_rng_seed(13);
    return vg_vit_forward(&c->model, in[0], c->drop_path > 0 || c->patch_drop > 0, &rng);
}

static vit_gc ctx_cls_learned = {VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED};
static vit_gc ctx_mean_learned = {VG_VIT_POOL_MEAN, VG_VIT_POS_LEARNED};
static vit_gc ctx_cls_sincos = {VG_VIT_POOL_CLS, VG_VIT_POS_SINCOS2D};
static vit_gc ctx_mean_sincos = {VG_VIT_POOL_MEAN, VG_VIT_POS_SINCOS2D};
static vit_gc ctx_cls_drop_path = {VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, 0.6};
static vit_gc ctx_mean_patch_drop = {VG_VIT_POOL_MEAN, VG_VIT_POS_LEARNED, 0, 0.5};
static vit_gc ctx_cls_patch_drop = {VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, 0, 0.25};
static vit_gc ctx_seq_learned = {VG_VIT_POOL_SEQ, VG_VIT_POS_LEARNED};
static vit_gc ctx_seq_patch_drop = {VG_VIT_POOL_SEQ, VG_VIT_POS_SINCOS2D, 0, 0.5};

/* EXTRA: trainable scalars beyond the plain model's (sequence pooling's D, LSA's one per block) */
#define VIT_CASE_EXTRA(ID, VARIANT, CTX, LEARNED, EXTRA)                                                 \
    GC_REGISTER(ID, {"vit", VARIANT, f_vit, &CTX, 2,                                                     \
                     {GC_IN(GC_B, GC_C, GC_IMG, GC_IMG), GC_IN_RANGE(-0.5, 0.5, GC_VIT_NPARAMS(LEARNED) + (EXTRA))}, \
                     vit_prepare})
#define VIT_CASE(ID, VARIANT, CTX, LEARNED) VIT_CASE_EXTRA(ID, VARIANT, CTX, LEARNED, 0)
VIT_CASE(vit_cls_learned, "cls, learned pos", ctx_cls_learned, 1)
VIT_CASE(vit_mean_learned, "mean, learned pos", ctx_mean_learned, 1)
VIT_CASE(vit_cls_sincos, "cls, sincos2d pos", ctx_cls_sincos, 0)
VIT_CASE(vit_mean_sincos, "mean, sincos2d pos", ctx_mean_sincos, 0)
VIT_CASE(vit_cls_drop_path, "cls, drop_path 0.6", ctx_cls_drop_path, 1)
VIT_CASE(vit_mean_patch_drop, "mean, patch_drop 0.5", ctx_mean_patch_drop, 1)
VIT_CASE(vit_cls_patch_drop, "cls, patch_drop 0.25", ctx_cls_patch_drop, 1)
/* sequence pooling: + seq_pool.weight (D) */
VIT_CASE_EXTRA(vit_seq_learned, "seq pooling, learned pos", ctx_seq_learned, 1, GC_D)
VIT_CASE_EXTRA(vit_seq_patch_drop, "seq pooling, sincos2d, patch_drop 0.5", ctx_seq_patch_drop, 0, GC_D)
/* locality self-attention: + blocks.{i}.attn.scale (1) per block; the CLS row takes the last block's
 * cross-attention path (mask (0, 0)), mean pooling the self-attention one, with patch dropout too */
static vit_gc ctx_lsa_cls = {VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, .lsa = true};
static vit_gc ctx_lsa_mean_patch_drop = {VG_VIT_POOL_MEAN, VG_VIT_POS_SINCOS2D, 0, 0.5, .lsa = true};
VIT_CASE_EXTRA(vit_lsa_cls, "LSA, cls, learned pos", ctx_lsa_cls, 1, GC_DEPTH)
VIT_CASE_EXTRA(vit_lsa_mean_patch_drop, "LSA, mean, sincos, patch_drop 0.5", ctx_lsa_mean_patch_drop, 0, GC_DEPTH)

/* timm's layouts: fields after patch_drop are no_cls, reg, no_embed_class, fc_norm, init_values, no_head */
static vit_gc ctx_reg_noembed_cls = {VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, 0, 0, false, 2, true};     /* DINOv2-like */
static vit_gc ctx_reg_embed_mean_fcnorm = {VG_VIT_POOL_MEAN, VG_VIT_POS_LEARNED, 0, 0, false, 2, false, true};
static vit_gc ctx_gap = {VG_VIT_POOL_MEAN, VG_VIT_POS_LEARNED, 0, 0, true, 2, true, true};         /* reg4_gap */
static vit_gc ctx_no_cls_mean = {VG_VIT_POOL_MEAN, VG_VIT_POS_LEARNED, 0, 0, true, 0, false, false};
static vit_gc ctx_layerscale = {VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, 0, 0, false, 1, true, false, 0.3};  /* DeiT-3 */
static vit_gc ctx_no_head = {VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, 0, 0, false, 1, true, false, 0.3, true};
static vit_gc ctx_reg_patch_drop = {VG_VIT_POOL_MEAN, VG_VIT_POS_LEARNED, 0, 0.5, false, 2, false, true};
static vit_gc ctx_reg_sincos = {VG_VIT_POOL_CLS, VG_VIT_POS_SINCOS2D, 0, 0, false, 2, false, true};

#define VIT_LAYOUT_CASE(ID, VARIANT, CTX, S, POS_ROWS, LS, HEAD)                                      \
    GC_REGISTER(ID, {"vit", VARIANT, f_vit, &CTX, 2,                                                   \
                     {GC_IN(GC_B, GC_C, GC_IMG, GC_IMG),                                               \
                      GC_IN_RANGE(-0.5, 0.5, GC_VIT_NPARAMS_LAYOUT(S, POS_ROWS, LS, HEAD))}, vit_prepare})
VIT_LAYOUT_CASE(vit_reg_noembed_cls, "cls, reg 2, no_embed_class", ctx_reg_noembed_cls, 3, GC_N, 0, 1)
VIT_LAYOUT_CASE(vit_reg_mean_fcnorm, "mean+fc_norm, reg 2", ctx_reg_embed_mean_fcnorm, 3, GC_N + 3, 0, 1)
VIT_LAYOUT_CASE(vit_gap, "no cls, reg 2, gap, fc_norm", ctx_gap, 2, GC_N, 0, 1)
VIT_LAYOUT_CASE(vit_no_cls_mean, "no cls, mean", ctx_no_cls_mean, 0, GC_N, 0, 1)
VIT_LAYOUT_CASE(vit_layerscale, "LayerScale, reg 1, no_emb", ctx_layerscale, 2, GC_N, 1, 1)
VIT_LAYOUT_CASE(vit_no_head, "no head (features), LS", ctx_no_head, 2, GC_N, 1, 0)
VIT_LAYOUT_CASE(vit_reg_patch_drop, "mean+fc_norm, reg 2, pdrop", ctx_reg_patch_drop, 3, GC_N + 3, 0, 1)
VIT_LAYOUT_CASE(vit_reg_sincos, "cls+fc_norm, reg 2, sincos", ctx_reg_sincos, 3, 0, 0, 1)

/* the overlapping patch embedding (kernel 6, stride 4, padding 1), mean pooling, sin-cos positions:
 * the 6×6 kernel has 36 instead of 16 weights per (D, C) pair */
static vit_gc ctx_overlap = {VG_VIT_POOL_MEAN, VG_VIT_POS_SINCOS2D, .overlap = 1};
GC_REGISTER(vit_overlap, {"vit", "mean, sincos, patch overlap 1", f_vit, &ctx_overlap, 2,
                          {GC_IN(GC_B, GC_C, GC_IMG, GC_IMG),
                           GC_IN_RANGE(-0.5, 0.5, GC_VIT_NPARAMS(0) + GC_D * GC_C * (36 - GC_P * GC_P))}, vit_prepare})

/* the conv stem: 8×8 → 3×3 conv /2 + ReLU → 4×4×4 → 3×3 conv /2 + ReLU → 2×2×6 → 1×1 patch conv
 * (6 → D); and one stem layer (4×4×4) under a 2×2 patch conv at stride 2 with overlap 1 (kernel
 * 4, padding 1). In place of the D·C·16 patch weights: the stem (4·3·9 + 4, 6·4·9 + 6) and the
 * patch conv's D·6·1, resp. D·4·16 */
static vit_gc ctx_stem = {VG_VIT_POOL_MEAN, VG_VIT_POS_SINCOS2D, .stem = {4, 6}};
static vit_gc ctx_stem_overlap = {VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, .overlap = 1, .stem = {4}};
GC_REGISTER(vit_stem, {"vit", "mean, sincos, conv stem 4,6", f_vit, &ctx_stem, 2,
                       {GC_IN(GC_B, GC_C, GC_IMG, GC_IMG),
                        GC_IN_RANGE(-0.5, 0.5, GC_VIT_NPARAMS(0) - GC_D * GC_C * GC_P * GC_P + (4 * 3 * 9 + 4)
                                                   + (6 * 4 * 9 + 6) + GC_D * 6)}, vit_prepare})
/* CCT's tokenizer: the same stem's convs at stride 1, each followed by a 3×3 max pool at stride 2
 * (8×8 → 8×8×4 → 4×4×4 → 4×4×6 → 2×2×6): the same weights, the gradient through each window's max */
static vit_gc ctx_stem_pool = {VG_VIT_POOL_MEAN, VG_VIT_POS_SINCOS2D, .stem = {4, 6}, .stem_pool = true};
GC_REGISTER(vit_stem_pool, {"vit", "mean, sincos, conv stem 4,6 + max pool", f_vit, &ctx_stem_pool, 2,
                            {GC_IN(GC_B, GC_C, GC_IMG, GC_IMG),
                             GC_IN_RANGE(-0.5, 0.5, GC_VIT_NPARAMS(0) - GC_D * GC_C * GC_P * GC_P + (4 * 3 * 9 + 4)
                                                        + (6 * 4 * 9 + 6) + GC_D * 6)}, vit_prepare})
GC_REGISTER(vit_stem_overlap, {"vit", "cls, conv stem 4, overlap 1", f_vit, &ctx_stem_overlap, 2,
                               {GC_IN(GC_B, GC_C, GC_IMG, GC_IMG),
                                GC_IN_RANGE(-0.5, 0.5, GC_VIT_NPARAMS(1) - GC_D * GC_C * GC_P * GC_P
                                                           + (4 * 3 * 9 + 4) + GC_D * 4 * 16)}, vit_prepare})

/* vg_patchify: a pure view chain (reshape → permute → reshape), checked on its own */
static vg_tensor *f_patchify(vg_tensor *const *in, void *ctx) { (void)ctx; return vg_patchify(in[0], 2); }
GC_REGISTER(patchify, {"patchify", "P=2, (2,3,4,6)", f_patchify, NULL, 1, {GC_IN(2, 3, 4, 6)}})
