/* vit.h — the Vision Transformer (Dosovitskiy et al. 2021), timm's layout and names.
 *
 *   image (B, C, H, W)
 *   → conv stem (optional, not timm's): n × [Conv2d 3×3, stride 2, padding 1 → ReLU]
 *                                                              (B, C_n, H/2^n, W/2^n)
 *   → patch_embed: Conv2d(C, D, kernel = stride = P/2^n)      (B, D, H/P, W/P)
 *   → flatten + transpose                                      (B, N, D),   N = (H/P)·(W/P)
 *   → prefix tokens [cls_token][reg_token ×R] before the patches, pos_embed added (to every row,
 *     or with no_embed_class to the patches alone, before the prefix is put in front), dropout
 *                                                              (B, T, D),   T = S + N, S = cls + R
 *   → patch dropout (training only): keep K of the N patches    (B, S+K, D)
 *   → depth × Block: x + ls1·attn(norm1(x)); x + ls2·mlp(norm2(x))   (ls: LayerScale, optional)
 *   → norm (LayerNorm, eps 1e-6; absent with fc_norm)          (B, T, D)
 *   → pool: token 0 (cls), the mean of the N patch tokens (mean), or sequence pooling (seq,
 *     CCT's SeqPool): Σ_n a_n x_n with a = softmax over n of x_n·w, w = seq_pool.weight (1, D)
 *                                                              (B, D)
 *   → fc_norm (LayerNorm; only with fc_norm)                   (B, D)
 *   → head: Linear(D, num_classes); none when num_classes is 0 (B, num_classes)
 *
 * Token order: row 0 is the CLS token, rows 1..R the register tokens, row S + i·(W/P) + j is
 * patch (i, j) (row-major); a patch flattened as a vector is in (C, P, P) order — the order of the
 * conv weight's last three dims. State-dict keys are timm's (cls_token, reg_token, pos_embed,
 * patch_embed.proj.*, blocks.{i}.…, norm.*, fc_norm.*, head.*), in timm's order, so weights move
 * between vitgrad and timm unchanged. The fields class_token, reg_tokens, no_embed_class, fc_norm,
 * init_values and num_classes = 0 have the meaning of timm's VisionTransformer arguments of the
 * same names; mean pooling is its global_pool='avg'. */
#ifndef VG_VIT_H
#define VG_VIT_H
#include <stdio.h>
#include "nn/nn.h"
#include "vit/vit_fields.h"

enum { VG_VIT_MAX_STEM = 4 };      /* layers of the optional conv stem */
typedef enum { VG_VIT_POOL_CLS = 0, VG_VIT_POOL_MEAN = 1, VG_VIT_POOL_SEQ = 2 } vg_vit_pool;
/* learned: a trained parameter (timm). sincos2d: MAE's fixed 2-D sin-cos table, not trained,
 * not in vg_vit_params, but in vg_vit_state (saved as pos_embed in checkpoints). */
typedef enum { VG_VIT_POS_LEARNED = 0, VG_VIT_POS_SINCOS2D = 1 } vg_vit_posembed;
typedef enum { VG_INTERP_BILINEAR = 0, VG_INTERP_BICUBIC = 1 } vg_interp_mode;

typedef int vg_vit_stem[VG_VIT_MAX_STEM];   /* conv stem channels, ending at the first 0 */

/* The configuration: one member per row of vit_fields.h, where each field's meaning, default,
 * range, checkpoint key and ./train flag are. */
typedef struct {
#define VG_X_MEMBER(KIND, type, name, ...) type name;
    VG_VIT_FIELDS(VG_X_MEMBER)
#undef VG_X_MEMBER
} vg_vit_config;

/* ---- the fields as data (vit/fields.c): for metadata, flags, checks and diffs */
enum {
#define VG_X_ID(KIND, type, name, ...) VG_VIT_F_##name,
    VG_VIT_FIELDS(VG_X_ID)
#undef VG_X_ID
    VG_VIT_NFIELDS
};
typedef enum { VG_FIELD_INT, VG_FIELD_REAL, VG_FIELD_BOOL, VG_FIELD_CHOICE, VG_FIELD_STEM } vg_vit_field_kind;
typedef enum { VG_FIELD_CMP_NO, VG_FIELD_CMP_SAME, VG_FIELD_CMP_ON } vg_vit_field_cmp;
typedef struct {
    const char       *name;          /* member and metadata key model.<name> */
    vg_vit_field_kind kind;
    size_t            offset;        /* in vg_vit_config */
    double            lo, hi;        /* accepted range, bounds included (STEM: each layer's channels) */
    bool              meta_always;   /* false: written only when not the default */
    vg_vit_field_cmp  cmp;           /* what vg_vit_config_diff compares */
    const char       *cmp_label;     /* CMP_ON: the name it is reported under */
    const char       *flag;          /* ./train's flag ("--patch"), or NULL */
    const char       *metavar;       /* CHOICE: the names, "a|b" */
    const char       *help;
} vg_vit_field;
extern const vg_vit_field vg_vit_fields[VG_VIT_NFIELDS];
/* the value as text, as the metadata holds it: "%d", "%.17g", "0"/"1", the choice's name, the stem
 * "C1,C2,…" ("none" without one) */
void   vg_vit_field_format(const vg_vit_config *c, int f, char *out, size_t n);
/* text (as above; a BOOL any integer, nonzero = true) into the field; false and vg_error() ("not
 * an integer", "expected cls or mean", …) when it does not read; the range is not checked here */
bool   vg_vit_field_parse(vg_vit_config *c, int f, const char *text);
/* the value as a number (BOOL 0/1, CHOICE its index, STEM its number of layers) */
double vg_vit_field_number(const vg_vit_config *c, int f);
/* whether the field is inside [lo, hi] (STEM: every layer, zeros only after the last) */
bool   vg_vit_field_in_range(const vg_vit_config *c, int f);
bool   vg_vit_field_is_default(const vg_vit_config *c, int f);

/* the defaults of vit_fields.h: timm's VisionTransformer() defaults (mlp_ratio 4, qkv_bias, no
 * dropout, cls pooling, learned pos_embed, eps 1e-6, a class token, …) at a CIFAR size */
vg_vit_config vg_vit_config_default(void);
/* a preset of presets.c (the names: vg_vit_preset_names); false and vg_error() if unknown */
bool          vg_vit_preset(const char *name, vg_vit_config *out);
extern const char *const vg_vit_preset_names[];            /* NULL-terminated */
/* false (and vg_error() says why) if a field is out of its range, sizes do not divide, … */
bool          vg_vit_config_check(const vg_vit_config *cfg);
/* the same, naming field f as names[f] in the message (e.g. ./train's flags; NULL entries: the
 * field's name) and without the "vit: " prefix */
bool          vg_vit_config_check_as(const vg_vit_config *cfg, const char *const names[VG_VIT_NFIELDS]);
int           vg_vit_hidden_dim(const vg_vit_config *cfg);
int           vg_vit_num_patches(const vg_vit_config *cfg); /* (img/P)² */
/* n: the layers of the conv stem (0: none); the patch conv then has stride P/2^n */
int           vg_vit_stem_depth(const vg_vit_config *cfg);
int           vg_vit_patch_stride(const vg_vit_config *cfg);
int           vg_vit_patch_in_chans(const vg_vit_config *cfg);   /* the image's channels, or the stem's last layer's */
/* the stem as "C1,C2,…" ("none" without one); and back: false (vg_error says why) unless 1 to
 * VG_VIT_MAX_STEM channel counts in 1..4096 ("none" or "" clears the stem) */
void          vg_vit_stem_str(const vg_vit_config *cfg, char *out, size_t n);
bool          vg_vit_parse_stem(const char *s, vg_vit_config *cfg);
/* S: the class token (if any) + the register tokens, in front of the patches (timm's
 * num_prefix_tokens) */
int           vg_vit_num_prefix_tokens(const vg_vit_config *cfg);
/* the rows of pos_embed in front of the patch rows: S, or 0 with no_embed_class */
int           vg_vit_pos_prefix_rows(const vg_vit_config *cfg);
/* the stochastic-depth rate of block i: timm's dpr = linspace(0, drop_path_rate, depth)[i] */
double        vg_vit_drop_path_at(const vg_vit_config *cfg, int i);
/* scalars in the state dict (what PyTorch's sum(p.numel() for p in m.parameters()) counts) */
int64_t       vg_vit_param_count(const vg_vit_config *cfg);

typedef struct {
    vg_layernorm norm1;
    vg_mhsa      attn;          /* attn.qkv (3D, D), attn.proj (D, D) */
    vg_tensor   *ls1;           /* ls1.gamma (D), LayerScale of the attention branch; or NULL */
    vg_layernorm norm2;
    vg_linear    fc1, fc2;      /* mlp.fc1 (hidden, D), mlp.fc2 (D, hidden) */
    vg_tensor   *ls2;           /* ls2.gamma (D), of the MLP branch; or NULL */
} vg_vit_block;

typedef struct {
    vg_vit_config cfg;
    int           grid_h, grid_w;   /* patch grid; pos_embed has pos_prefix_rows + grid_h·grid_w rows */
    vg_conv2d     stem[VG_VIT_MAX_STEM];   /* patch_embed.backbone.{i}.conv; weight NULL past the stem */
    vg_conv2d     patch_embed;      /* patch_embed.proj */
    vg_tensor    *cls_token;        /* (1, 1, D), NULL without a class token */
    vg_tensor    *reg_token;        /* (1, R, D), NULL without register tokens */
    vg_tensor    *pos_embed;        /* (1, [S +] N, D); requires_grad only when learned */
    vg_vit_block *blocks;           /* [depth] */
    vg_layernorm  norm;             /* weight NULL with fc_norm (timm: Identity) */
    vg_layernorm  fc_norm;          /* weight NULL without fc_norm */
    vg_tensor    *seq_pool;         /* seq_pool.weight (1, D) with sequence pooling, else NULL */
    vg_linear     head;             /* weight NULL when num_classes is 0 */
    /* With CLS pooling the logits read only the class token of the last block, so vg_vit_forward
     * computes that block's proj, norm2 and MLP (and attention's queries) for token 0 alone: the
     * same logits and gradients for less work. true: every token, as timm does (for comparing
     * speed on equal work). false after vg_vit_init. */
    bool          full_last_block;
} vg_vit;

/* whether vg_vit_forward computes the last block for the class token alone (CLS pooling and not
 * full_last_block) */
bool vg_vit_last_block_cls_only(const vg_vit *m);

/* Allocates every tensor (persistent) and initialises as timm: pos_embed trunc-normal .02 (or the
 * sin-cos table), cls_token normal 1e-6, every Linear trunc-normal .02 with zero bias, LayerNorm
 * ones/zeros, patch conv PyTorch's default. Returns false with vg_error() on a bad config. */
bool vg_vit_init(vg_vit *m, const vg_vit_config *cfg, vg_rng *rng);
void vg_vit_free(vg_vit *m);

/* The model's tensors in timm's state-dict order, as slots (vg_tensor **) that may be read or
 * replaced — e.g. by views of one flat vector (gradcheck) or by loaded tensors. Writes up to max
 * entries (names may be NULL) and returns the total count. trainable_only skips a fixed pos_embed. */
int  vg_vit_slots(vg_vit *m, bool trainable_only, vg_tensor ***slots, char (*names)[128],
                  bool *weight_decay, int max);
/* trainable parameters (for the optimizer): weight decay on ≥2-D weights only — not on biases,
 * norms, pos_embed, cls_token */
void vg_vit_params(vg_vit *m, vg_params *p);
/* every tensor of the state dict (also a fixed sin-cos pos_embed) — what a checkpoint saves */
void vg_vit_state(vg_vit *m, vg_params *p);

/* ---- forward, in pieces (each differentiable; the pieces ./inspect shows) ---- */
/* image (B, C, H, W) → (B, N, C·P·P): patches row-major, each flattened in (C, P, P) order */
vg_tensor *vg_patchify(vg_tensor *image, int patch);
/* Conv2d patch embedding → (B, N, D) */
vg_tensor *vg_vit_patch_embed(vg_vit *m, vg_tensor *image);
/* tokens (B, N, D), cls (1, 1, D), pos (1, N+1, D) → [cls; tokens] + pos (B, N+1, D): the
 * default layout's embedding (a class token, pos_embed over every row) */
vg_tensor *vg_vit_embed_tokens(vg_tensor *tokens, vg_tensor *cls, vg_tensor *pos);
/* timm's _pos_embed for m's layout: tokens (B, N, D) → (B, S + N, D) — [cls][reg] in front and
 * pos_embed added to every row, or (no_embed_class) added to the patches before the prefix */
vg_tensor *vg_vit_pos_embed(vg_vit *m, vg_tensor *tokens);
/* one pre-norm block (B, T, D) → (B, T, D); attn_out as vg_attention_fn */
vg_tensor *vg_vit_block_forward(vg_vit *m, int i, vg_tensor *x, bool train, vg_rng *rng,
                                vg_tensor **attn_out);
/* everything up to and including the final norm (none with fc_norm) → (B, S+N, D) */
vg_tensor *vg_vit_forward_features(vg_vit *m, vg_tensor *image, bool train, vg_rng *rng);
/* (B, S+N, D) → (B, D): token 0, or the mean of tokens S..S+N−1; then fc_norm when the model
 * has it (timm's forward_head up to the head) */
vg_tensor *vg_vit_pool_tokens(vg_vit *m, vg_tensor *features);
/* sequence pooling's weights over the patch tokens (B, N, D) → (B, 1, N), each row summing to 1
 * (NULL and vg_error() without sequence pooling) */
vg_tensor *vg_vit_seq_pool_weights(vg_vit *m, vg_tensor *patch_tokens);
/* image → logits (B, num_classes); with num_classes 0 (no head) the pooled features (B, D).
 * rng is only used when train and some dropout rate > 0. */
vg_tensor *vg_vit_forward(vg_vit *m, vg_tensor *image, bool train, vg_rng *rng);
/* image → pooled features after the final norm (or fc_norm), L2-normalised (every row has norm 1), (B, D):
 * for retrieval / kNN. Eval mode (no dropout). */
vg_tensor *vg_vit_embed(vg_vit *m, vg_tensor *image);
/* rows of x (…, D) divided by sqrt(Σx² + 1e-24): F.normalize except on near-zero rows */
vg_tensor *vg_l2_normalize(vg_tensor *x);

/* ---- position embeddings (posembed.c) ---- */
/* MAE's get_2d_sincos_pos_embed, generalised to grid_h × grid_w: (1, prefix_rows + gh·gw, D),
 * arena. Row prefix_rows + i·gw + j: the first D/2 dims encode the column j, the last D/2 the row
 * i, each half [sin(p·ω_k) for k < D/4, cos(p·ω_k) for k < D/4], ω_k = 10000^(−k/(D/4)). The
 * prefix rows (MAE: 1, the CLS row) are zeros. D must be a multiple of 4. */
vg_tensor *vg_sincos_2d_pos_embed(int dim, int grid_h, int grid_w, int prefix_rows);
/* Resize an image-like grid: src (C, h, w) values → dst (C, H, W), as PyTorch's F.interpolate
 * with align_corners=False (bicubic: A = −0.75, indices clamped at the border). No graph. */
void vg_interpolate_2d(const real *src, int channels, int h, int w, real *dst, int H, int W,
                       vg_interp_mode mode);
/* pos (1, 1 + h·w, D) → (1, 1 + H·W, D): CLS row kept, the rest resized on its grid. No graph. */
vg_tensor *vg_resize_pos_embed(const vg_tensor *pos, int h, int w, int H, int W, vg_interp_mode mode);
/* the same with `prefix` rows kept in front (timm's resample_abs_pos_embed num_prefix_tokens:
 * vg_vit_pos_prefix_rows of the model; 0 for a no_embed_class table) */
vg_tensor *vg_resize_pos_embed_prefix(const vg_tensor *pos, int prefix, int h, int w, int H, int W,
                                      vg_interp_mode mode);
/* Adapt a model to a new image size in place: pos_embed is resized (interpolated, learned or
 * sin-cos alike) and replaced by a new persistent tensor; cfg.img_size and the grid updated.
 * Any vg_params list taken before (and optimizer state) must be rebuilt. */
bool vg_vit_set_img_size(vg_vit *m, int img_size, vg_interp_mode mode);

/* ---- cost model (trace.c) ---- */
/* forward FLOPs per image: 2 × multiply-adds of the conv, every Linear and attention's two
 * matmuls (QKᵀ and AV); elementwise ops (norm, softmax, GELU) not counted */
double vg_vit_forward_flops(const vg_vit_config *cfg);
/* training FLOPs per image: forward + backward ≈ 3 × forward, on the tokens patch dropout keeps */
double vg_vit_train_flops(const vg_vit_config *cfg);
/* the forward FLOPs per image vg_vit_forward performs (counted as above): less than
 * vg_vit_forward_flops when the last block computes the class token alone (see full_last_block) */
double vg_vit_forward_flops_done(const vg_vit *m);
/* the FLOPs per image of a training step (forward + backward, 3×), with patch dropout's tokens */
double vg_vit_train_flops_done(const vg_vit *m);
/* Run one eval forward on a zero batch of B images and print the shape-flow table: stage,
 * output shape, parameters, forward FLOPs (per batch). Returns false on error. */
bool vg_vit_trace(vg_vit *m, int batch, FILE *out);
#endif
