/* vit.c — the Vision Transformer: config checks, timm init, named parameters, forward.
 * The forward is written out with functional ops so the whole model reads in one screen. */
#include "vit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ config */
vg_vit_config vg_vit_config_default(void) {
    return (vg_vit_config){
        .img_size = 32, .patch_size = 4, .in_chans = 3, .num_classes = 10,
        .embed_dim = 192, .depth = 6, .num_heads = 3, .mlp_ratio = 4.0, .qkv_bias = true,
        .drop_rate = 0.0, .attn_drop_rate = 0.0,
        .pool = VG_VIT_POOL_CLS, .pos_embed = VG_VIT_POS_LEARNED, .norm_eps = 1e-6,
        .class_token = true,
    };
}

int vg_vit_hidden_dim(const vg_vit_config *c) { return (int)(c->embed_dim * c->mlp_ratio); }

double vg_vit_drop_path_at(const vg_vit_config *c, int i) {
    return c->depth > 1 ? c->drop_path_rate * i / (c->depth - 1) : 0.0;   /* linspace(0, rate, depth) */
}
int vg_vit_num_patches(const vg_vit_config *c) {
    int g = c->img_size / c->patch_size;
    return g * g;
}
int vg_vit_stem_depth(const vg_vit_config *c) {
    int n = 0;
    while (n < VG_VIT_MAX_STEM && c->conv_stem[n] > 0) n++;
    return n;
}
int vg_vit_patch_stride(const vg_vit_config *c) { return c->patch_size >> vg_vit_stem_depth(c); }
void vg_vit_stem_str(const vg_vit_config *c, char *out, size_t n) {
    size_t len = 0;
    if (n) out[0] = 0;
    for (int i = 0; i < vg_vit_stem_depth(c); i++) {
        int w = snprintf(out + len, n - len, "%s%d", i ? "," : "", c->conv_stem[i]);
        if (w < 0 || (size_t)w >= n - len) return;
        len += (size_t)w;
    }
    if (!len) snprintf(out, n, "none");
}
bool vg_vit_parse_stem(const char *s, vg_vit_config *c) {
    int ch[VG_VIT_MAX_STEM] = {0}, n = 0;
    if (*s && strcmp(s, "none")) {
        for (const char *p = s;;) {
            char *end;
            long x = strtol(p, &end, 10);
            if (end == p || x < 1 || x > 4096 || (*end && *end != ',')) {
                vg_set_error("conv stem \"%s\": expected channel counts 1..4096 separated by commas, e.g. 32,64", s);
                return false;
            }
            if (n == VG_VIT_MAX_STEM) {
                vg_set_error("conv stem \"%s\": at most %d layers", s, VG_VIT_MAX_STEM);
                return false;
            }
            ch[n++] = (int)x;
            if (!*end) break;
            p = end + 1;
        }
    }
    memcpy(c->conv_stem, ch, sizeof ch);
    return true;
}
/* the input channels of the patch conv: the image's, or the stem's last layer's */
int vg_vit_patch_in_chans(const vg_vit_config *c) {
    const int n = vg_vit_stem_depth(c);
    return n ? c->conv_stem[n - 1] : c->in_chans;
}
int vg_vit_num_prefix_tokens(const vg_vit_config *c) { return (c->class_token ? 1 : 0) + c->reg_tokens; }
int vg_vit_pos_prefix_rows(const vg_vit_config *c) { return c->no_embed_class ? 0 : vg_vit_num_prefix_tokens(c); }

bool vg_vit_config_check(const vg_vit_config *c) {
    if (!c) { vg_set_error("vit: config is NULL"); return false; }
    if (c->img_size <= 0 || c->patch_size <= 0 || c->in_chans <= 0 || c->num_classes < 0 ||
        c->embed_dim <= 0 || c->depth <= 0 || c->num_heads <= 0 || !(c->mlp_ratio > 0)) {
        vg_set_error("vit: sizes must be positive (img %d patch %d chans %d classes %d (0: no head) dim %d depth %d heads %d mlp_ratio %g)",
                     c->img_size, c->patch_size, c->in_chans, c->num_classes, c->embed_dim, c->depth,
                     c->num_heads, c->mlp_ratio);
        return false;
    }
    /* Upper bounds far above any ViT (ViT-22B: 6144 wide, 48 deep, 24576 hidden) yet low enough
     * that no size derived from them overflows: a configuration can come from a damaged
     * checkpoint's metadata (fuzz/regressions/checkpoint). */
    if (c->img_size > 16384 || c->in_chans > 1024 || c->num_classes > (1 << 24) || c->embed_dim > 16384 ||
        c->depth > 1024 || !(c->mlp_ratio * c->embed_dim < (1 << 18))) {
        vg_set_error("vit: sizes too large (img %d chans %d classes %d dim %d depth %d mlp_ratio %g; at most "
                     "16384, 1024, 2^24, 16384, 1024 and an MLP under 2^18 wide)", c->img_size, c->in_chans,
                     c->num_classes, c->embed_dim, c->depth, c->mlp_ratio);
        return false;
    }
    if (c->patch_overlap < 0 || c->patch_overlap > 64) {
        vg_set_error("vit: patch_overlap %d is not in [0, 64]", c->patch_overlap);
        return false;
    }
    const int n_stem = vg_vit_stem_depth(c);
    for (int i = 0; i < VG_VIT_MAX_STEM; i++)
        if (c->conv_stem[i] < 0 || c->conv_stem[i] > 4096 || (i >= n_stem && c->conv_stem[i])) {
            vg_set_error("vit: conv_stem layer %d has %d channels (1..4096, a 0 ends the list)", i, c->conv_stem[i]);
            return false;
        }
    if (n_stem && c->patch_size % (1 << n_stem)) {
        vg_set_error("vit: a conv stem of %d stride-2 layers needs a patch size divisible by %d (got %d)",
                     n_stem, 1 << n_stem, c->patch_size);
        return false;
    }
    if (c->img_size % c->patch_size) {
        vg_set_error("vit: image size %d is not a multiple of the patch size %d", c->img_size, c->patch_size);
        return false;
    }
    if (c->embed_dim % c->num_heads) {
        vg_set_error("vit: embed_dim %d is not divisible by num_heads %d", c->embed_dim, c->num_heads);
        return false;
    }
    if (c->pos_embed == VG_VIT_POS_SINCOS2D && c->embed_dim % 4) {
        vg_set_error("vit: sincos2d position embedding needs embed_dim %% 4 == 0 (got %d)", c->embed_dim);
        return false;
    }
    if (c->reg_tokens < 0 || c->reg_tokens > 1024) {
        vg_set_error("vit: reg_tokens %d is not in [0, 1024]", c->reg_tokens);
        return false;
    }
    if (!c->class_token && c->pool == VG_VIT_POOL_CLS) {
        vg_set_error("vit: cls pooling needs the class token (class_token is false: use mean pooling)");
        return false;
    }
    if (!(c->init_values >= 0 && isfinite(c->init_values))) {
        vg_set_error("vit: init_values (LayerScale) %g must be finite and >= 0", c->init_values);
        return false;
    }
    if (((int64_t)vg_vit_num_patches(c) + vg_vit_num_prefix_tokens(c)) * c->embed_dim > (1 << 28)) {
        vg_set_error("vit: %d tokens of %d dims: a position table over 2^28 values",
                     vg_vit_num_patches(c) + vg_vit_num_prefix_tokens(c), c->embed_dim);
        return false;
    }
    if (vg_vit_hidden_dim(c) <= 0) { vg_set_error("vit: MLP hidden size is 0"); return false; }
    if (!(c->norm_eps >= 0 && isfinite(c->norm_eps))) { vg_set_error("vit: norm_eps %g must be finite and >= 0", c->norm_eps); return false; }
    if (!(c->drop_rate >= 0 && c->drop_rate < 1 && c->attn_drop_rate >= 0 && c->attn_drop_rate < 1 &&
          c->drop_path_rate >= 0 && c->drop_path_rate < 1 && c->patch_drop_rate >= 0 && c->patch_drop_rate < 1)) {
        vg_set_error("vit: dropout rates must be in [0, 1) (drop %g, attn_drop %g, drop_path %g, patch_drop %g)",
                     c->drop_rate, c->attn_drop_rate, c->drop_path_rate, c->patch_drop_rate);
        return false;
    }
    return true;
}

int64_t vg_vit_param_count(const vg_vit_config *c) {
    int64_t D = c->embed_dim, H = vg_vit_hidden_dim(c), N = vg_vit_num_patches(c);
    int64_t k = vg_vit_patch_stride(c) + 2 * c->patch_overlap;   /* the patch conv's kernel */
    int64_t patch = D * vg_vit_patch_in_chans(c) * k * k + D;
    for (int i = 0, in = c->in_chans; i < vg_vit_stem_depth(c); in = c->conv_stem[i++])
        patch += (int64_t)c->conv_stem[i] * in * 9 + c->conv_stem[i];          /* 3×3 conv + bias */
    int64_t block = 2 * D                                   /* norm1 */
                  + 3 * D * D + (c->qkv_bias ? 3 * D : 0)  /* attn.qkv */
                  + D * D + D                               /* attn.proj */
                  + 2 * D                                   /* norm2 */
                  + H * D + H + D * H + D                   /* mlp.fc1, mlp.fc2 */
                  + (c->init_values > 0 ? 2 * D : 0);       /* ls1, ls2 */
    return patch + (int64_t)vg_vit_num_prefix_tokens(c) * D /* cls, reg */
         + (N + vg_vit_pos_prefix_rows(c)) * D /* pos */ + c->depth * block + 2 * D /* norm or fc_norm */
         + D * c->num_classes + c->num_classes;
}

/* ------------------------------------------------------------------ parameters, by name */
typedef struct {
    vg_tensor ***slots; char (*names)[128]; bool *wd;
    int max, n;
} slot_list;

static void put(slot_list *l, vg_tensor **slot, bool wd, const char *fmt, int i) {
    if (!*slot) return;                         /* e.g. qkv without bias */
    if (l->n < l->max) {
        if (l->slots) l->slots[l->n] = slot;
        if (l->names) snprintf(l->names[l->n], 128, fmt, i);
        if (l->wd) l->wd[l->n] = wd;
    }
    l->n++;
}

/* timm's state_dict order: the model's own parameters first, then its submodules in order */
int vg_vit_slots(vg_vit *m, bool trainable_only, vg_tensor ***slots, char (*names)[128],
                 bool *weight_decay, int max) {
    slot_list l = {slots, names, weight_decay, max, 0};
    put(&l, &m->cls_token, false, "cls_token", 0);
    put(&l, &m->reg_token, false, "reg_token", 0);
    if (!trainable_only || m->cfg.pos_embed == VG_VIT_POS_LEARNED) put(&l, &m->pos_embed, false, "pos_embed", 0);
    for (int i = 0; i < VG_VIT_MAX_STEM; i++) {
        put(&l, &m->stem[i].weight, true, "patch_embed.backbone.%d.conv.weight", i);
        put(&l, &m->stem[i].bias, false, "patch_embed.backbone.%d.conv.bias", i);
    }
    put(&l, &m->patch_embed.weight, true, "patch_embed.proj.weight", 0);
    put(&l, &m->patch_embed.bias, false, "patch_embed.proj.bias", 0);
    for (int i = 0; m->blocks && i < m->cfg.depth; i++) {
        vg_vit_block *b = &m->blocks[i];
        put(&l, &b->norm1.weight, false, "blocks.%d.norm1.weight", i);
        put(&l, &b->norm1.bias, false, "blocks.%d.norm1.bias", i);
        put(&l, &b->attn.qkv.weight, true, "blocks.%d.attn.qkv.weight", i);
        put(&l, &b->attn.qkv.bias, false, "blocks.%d.attn.qkv.bias", i);
        put(&l, &b->attn.proj.weight, true, "blocks.%d.attn.proj.weight", i);
        put(&l, &b->attn.proj.bias, false, "blocks.%d.attn.proj.bias", i);
        put(&l, &b->ls1, false, "blocks.%d.ls1.gamma", i);
        put(&l, &b->norm2.weight, false, "blocks.%d.norm2.weight", i);
        put(&l, &b->norm2.bias, false, "blocks.%d.norm2.bias", i);
        put(&l, &b->fc1.weight, true, "blocks.%d.mlp.fc1.weight", i);
        put(&l, &b->fc1.bias, false, "blocks.%d.mlp.fc1.bias", i);
        put(&l, &b->fc2.weight, true, "blocks.%d.mlp.fc2.weight", i);
        put(&l, &b->fc2.bias, false, "blocks.%d.mlp.fc2.bias", i);
        put(&l, &b->ls2, false, "blocks.%d.ls2.gamma", i);
    }
    put(&l, &m->norm.weight, false, "norm.weight", 0);
    put(&l, &m->norm.bias, false, "norm.bias", 0);
    put(&l, &m->fc_norm.weight, false, "fc_norm.weight", 0);
    put(&l, &m->fc_norm.bias, false, "fc_norm.bias", 0);
    put(&l, &m->head.weight, true, "head.weight", 0);
    put(&l, &m->head.bias, false, "head.bias", 0);
    return l.n;
}

static void add_all(vg_vit *m, vg_params *p, bool trainable_only) {
    int n = vg_vit_slots(m, trainable_only, NULL, NULL, NULL, 0);
    vg_tensor ***slots = malloc(sizeof *slots * (size_t)n);
    char (*names)[128] = malloc(sizeof *names * (size_t)n);
    bool *wd = malloc(sizeof *wd * (size_t)n);
    if (slots && names && wd) {
        vg_vit_slots(m, trainable_only, slots, names, wd, n);
        for (int i = 0; i < n; i++) vg_params_add(p, NULL, names[i], *slots[i], wd[i]);
    }
    free(slots); free(names); free(wd);
}
void vg_vit_params(vg_vit *m, vg_params *p) { add_all(m, p, true); }
void vg_vit_state(vg_vit *m, vg_params *p) { add_all(m, p, false); }

/* ------------------------------------------------------------------ init */
/* timm's init_weights_vit_timm for a Linear: trunc-normal std .02, bias zero */
static void init_linear_timm(vg_linear *l, vg_rng *rng) {
    vg_init_trunc_normal(l->weight, rng, 0.02);
    if (l->bias) vg_init_constant(l->bias, 0.0);
}

bool vg_vit_init(vg_vit *m, const vg_vit_config *cfg, vg_rng *rng) {
    memset(m, 0, sizeof *m);
    if (!vg_vit_config_check(cfg)) return false;
    m->cfg = *cfg;
    const int D = cfg->embed_dim, hidden = vg_vit_hidden_dim(cfg);
    m->grid_h = m->grid_w = cfg->img_size / cfg->patch_size;
    const int prefix = vg_vit_pos_prefix_rows(cfg);
    const int64_t T = prefix + (int64_t)m->grid_h * m->grid_w;

    const int ps = vg_vit_patch_stride(cfg), n_stem = vg_vit_stem_depth(cfg);
    vg_conv2d_init(&m->patch_embed, vg_vit_patch_in_chans(cfg), D, ps + 2 * cfg->patch_overlap, ps, cfg->patch_overlap,
                   true, rng);
    for (int i = 0; i < n_stem; i++) {          /* He init for a ReLU: std √(2 / fan_in), zero bias */
        const int in = i ? cfg->conv_stem[i - 1] : cfg->in_chans;
        vg_conv2d_init(&m->stem[i], in, cfg->conv_stem[i], 3, 2, 1, true, rng);
        if (m->stem[i].weight) vg_init_normal(m->stem[i].weight, rng, sqrt(2.0 / (in * 9)));
        if (m->stem[i].bias) vg_init_constant(m->stem[i].bias, 0.0);
    }
    if (cfg->class_token) {
        m->cls_token = vg_param(VG_DIMS(1, 1, D));
        vg_init_normal(m->cls_token, rng, 1e-6);
    }
    if (cfg->reg_tokens) {                                      /* timm: normal std 1e-6 as cls */
        m->reg_token = vg_param(VG_DIMS(1, cfg->reg_tokens, D));
        vg_init_normal(m->reg_token, rng, 1e-6);
    }
    if (cfg->pos_embed == VG_VIT_POS_LEARNED) {
        m->pos_embed = vg_param(VG_DIMS(1, T, D));
        vg_init_trunc_normal(m->pos_embed, rng, 0.02);
    } else {
        vg_arena_mark mk = vg_arena_get_mark();
        m->pos_embed = vg_persist(vg_sincos_2d_pos_embed(D, m->grid_h, m->grid_w, prefix));
        vg_arena_release(mk);
        if (m->pos_embed) m->pos_embed->requires_grad = false;
    }
    m->blocks = calloc((size_t)cfg->depth, sizeof *m->blocks);
    if (!m->blocks || (cfg->class_token && !m->cls_token) || (cfg->reg_tokens && !m->reg_token) || !m->pos_embed) {
        vg_set_error("vit: out of memory"); vg_vit_free(m); return false;
    }
    for (int i = 0; i < cfg->depth; i++) {
        vg_vit_block *b = &m->blocks[i];
        vg_layernorm_init(&b->norm1, D, cfg->norm_eps);
        vg_mhsa_init(&b->attn, D, cfg->num_heads, cfg->qkv_bias, cfg->attn_drop_rate, cfg->drop_rate, rng);
        vg_layernorm_init(&b->norm2, D, cfg->norm_eps);
        vg_linear_init(&b->fc1, D, hidden, true, rng);
        vg_linear_init(&b->fc2, hidden, D, true, rng);
        init_linear_timm(&b->attn.qkv, rng);
        init_linear_timm(&b->attn.proj, rng);
        init_linear_timm(&b->fc1, rng);
        init_linear_timm(&b->fc2, rng);
        if (cfg->init_values > 0) {                             /* timm's LayerScale: init_values · 1 */
            b->ls1 = vg_param(VG_DIMS(D));
            b->ls2 = vg_param(VG_DIMS(D));
            vg_init_constant(b->ls1, cfg->init_values);
            vg_init_constant(b->ls2, cfg->init_values);
        }
    }
    vg_layernorm_init(cfg->fc_norm ? &m->fc_norm : &m->norm, D, cfg->norm_eps);
    if (cfg->num_classes > 0) {
        vg_linear_init(&m->head, D, cfg->num_classes, true, rng);
        init_linear_timm(&m->head, rng);
    }

    /* every slot must be allocated */
    int n = vg_vit_slots(m, false, NULL, NULL, NULL, 0);
    int expect = 3 + 2 * n_stem + vg_vit_num_prefix_tokens(cfg) - cfg->reg_tokens + (cfg->reg_tokens > 0)
               + cfg->depth * ((cfg->qkv_bias ? 12 : 11) + (cfg->init_values > 0 ? 2 : 0)) + 2
               + (cfg->num_classes > 0 ? 2 : 0);
    if (n != expect) { vg_set_error("vit: %d of %d tensors allocated", n, expect); vg_vit_free(m); return false; }
    return true;
}

void vg_vit_free(vg_vit *m) {
    if (!m) return;
    if (m->blocks || m->cls_token || m->reg_token || m->pos_embed) {
        int n = vg_vit_slots(m, false, NULL, NULL, NULL, 0);
        vg_tensor ***slots = malloc(sizeof *slots * (size_t)(n ? n : 1));
        if (slots) {
            vg_vit_slots(m, false, slots, NULL, NULL, n);
            for (int i = 0; i < n; i++) { vg_tensor_free(*slots[i]); *slots[i] = NULL; }
        }
        free(slots);
    }
    free(m->blocks);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------ forward */
vg_tensor *vg_patchify(vg_tensor *image, int P) {
    if (!image) return NULL;
    if (image->ndim != 4 || P <= 0 || image->shape[2] % P || image->shape[3] % P) {
        char s[64]; vg_shape_str(image, s, sizeof s);
        vg_set_error("patchify: expected (B, C, H, W) with H, W multiples of %d, got %s", P, s);
        return NULL;
    }
    int64_t B = image->shape[0], C = image->shape[1], h = image->shape[2] / P, w = image->shape[3] / P;
    vg_tensor *x = vg_reshape(image, VG_DIMS(B, C, h, P, w, P));   /* (B, C, i, pi, j, pj) */
    x = vg_permute(x, (const int[]){0, 2, 4, 1, 3, 5});             /* (B, i, j, C, pi, pj) */
    return vg_reshape(x, VG_DIMS(B, h * w, C * P * P));
}

vg_tensor *vg_vit_patch_embed(vg_vit *m, vg_tensor *image) {
    if (!image) return NULL;
    const vg_vit_config *c = &m->cfg;
    if (image->ndim != 4 || image->shape[1] != c->in_chans ||
        image->shape[2] != (int64_t)m->grid_h * c->patch_size || image->shape[3] != (int64_t)m->grid_w * c->patch_size) {
        char s[64]; vg_shape_str(image, s, sizeof s);
        vg_set_error("vit: expected images (B, %d, %d, %d), got %s", c->in_chans,
                     m->grid_h * c->patch_size, m->grid_w * c->patch_size, s);
        return NULL;
    }
    vg_tensor *x = image;
    for (int i = 0; i < vg_vit_stem_depth(c); i++)       /* (B, C_i, H/2^(i+1), W/2^(i+1)) */
        x = vg_relu(vg_conv2d_fn(x, m->stem[i].weight, m->stem[i].bias, 2, 1));
    x = vg_conv2d_fn(x, m->patch_embed.weight, m->patch_embed.bias, vg_vit_patch_stride(c), c->patch_overlap); /* (B, D, h, w) */
    x = vg_flatten(x, 2, 3);                                                                     /* (B, D, N) */
    return vg_transpose(x, 1, 2);                                                                /* (B, N, D) */
}

vg_tensor *vg_vit_embed_tokens(vg_tensor *tokens, vg_tensor *cls, vg_tensor *pos) {
    if (!tokens || !cls || !pos) return NULL;
    vg_tensor *c = vg_expand(cls, VG_DIMS(tokens->shape[0], -1, -1));   /* (B, 1, D) */
    vg_tensor *x = vg_concat(2, (vg_tensor *[]){c, tokens}, 1);          /* (B, N+1, D) */
    return vg_add(x, pos);
}

/* timm's _pos_embed: [cls][reg] in front of the patches; pos_embed added after the concatenation,
 * or (no_embed_class: the table has patch rows only) to the patches before it */
vg_tensor *vg_vit_pos_embed(vg_vit *m, vg_tensor *tokens) {
    if (!tokens) return NULL;
    const int64_t B = tokens->shape[0];
    if (m->cfg.no_embed_class) tokens = vg_add(tokens, m->pos_embed);                 /* (B, N, D) */
    vg_tensor *parts[3];
    int k = 0;
    if (m->cls_token) parts[k++] = vg_expand(m->cls_token, VG_DIMS(B, -1, -1));       /* (B, 1, D) */
    if (m->reg_token) parts[k++] = vg_expand(m->reg_token, VG_DIMS(B, -1, -1));       /* (B, R, D) */
    parts[k++] = tokens;
    vg_tensor *x = k > 1 ? vg_concat(k, parts, 1) : tokens;                           /* (B, S+N, D) */
    return m->cfg.no_embed_class ? x : vg_add(x, m->pos_embed);
}

/* One block, (B, T, D) → (B, T', D): T' = T, or with rows > 0 only the first T' = rows tokens'
 * outputs (a ViT's last block when only the class token is read). Then every token still passes
 * norm1 and the key and value part of qkv (rows D..3D of its weight); the query part, attention
 * (as cross-attention of those rows over all tokens), proj, norm2 and the MLP run on those rows
 * alone. Each of these acts on each token separately, so the rows come out as in the whole block. */
static vg_tensor *block_forward(vg_vit *m, int i, vg_tensor *x, int64_t rows, bool train, vg_rng *rng,
                                vg_tensor **attn_out) {
    const vg_vit_config *c = &m->cfg;
    vg_vit_block *b = &m->blocks[i];
    vg_tensor *w = b->attn.qkv.weight, *bias = b->attn.qkv.bias;
    const int64_t D = c->embed_dim;
    /* x + drop_path(attn(norm1(x))) */
    vg_tensor *h = vg_layernorm_fn(x, b->norm1.weight, b->norm1.bias, c->norm_eps);
    if (rows) {
        vg_tensor *q = vg_linear_fn(vg_narrow(h, 1, 0, rows), vg_narrow(w, 0, 0, D),
                                    bias ? vg_narrow(bias, 0, 0, D) : NULL);            /* (B, rows, D) */
        vg_tensor *kv = vg_linear_fn(h, vg_narrow(w, 0, D, 2 * D), bias ? vg_narrow(bias, 0, D, 2 * D) : NULL);
        h = vg_attention_cross_fn(q, kv, c->num_heads, c->attn_drop_rate, train, rng, attn_out);
    } else {
        h = vg_linear_fn(h, w, bias);                                            /* (B, T, 3D) */
        h = vg_attention_fn(h, c->num_heads, c->attn_drop_rate, train, rng, attn_out); /* (B, T, D) */
    }
    const double dpr = vg_vit_drop_path_at(c, i);
    h = vg_linear_fn(h, b->attn.proj.weight, b->attn.proj.bias);
    h = vg_dropout_fn(h, c->drop_rate, train, rng);
    if (b->ls1) h = vg_mul(h, b->ls1);                               /* ls1: LayerScale (D) */
    h = vg_drop_path_fn(h, dpr, train, rng);                         /* drop_path1 */
    if (rows) x = vg_narrow(x, 1, 0, rows);                          /* (B, rows, D) */
    x = vg_add_into(x, h);       /* h (proj, dropout or drop-path output) is overwritten: unneeded */
    /* x + drop_path(mlp(norm2(x))), mlp = fc2(drop(gelu(fc1(·)))) then drop */
    h = vg_layernorm_fn(x, b->norm2.weight, b->norm2.bias, c->norm_eps);
    h = vg_linear_fn(h, b->fc1.weight, NULL);                                   /* (B, T', hidden) */
    h = vg_bias_gelu_fn(h, b->fc1.bias);
    h = vg_dropout_fn(h, c->drop_rate, train, rng);
    h = vg_linear_fn(h, b->fc2.weight, b->fc2.bias);                            /* (B, T', D) */
    h = vg_dropout_fn(h, c->drop_rate, train, rng);
    if (b->ls2) h = vg_mul(h, b->ls2);                               /* ls2 */
    h = vg_drop_path_fn(h, dpr, train, rng);                         /* drop_path2 */
    return vg_add_into(x, h);
}

vg_tensor *vg_vit_block_forward(vg_vit *m, int i, vg_tensor *x, bool train, vg_rng *rng, vg_tensor **attn_out) {
    return block_forward(m, i, x, 0, train, rng, attn_out);
}

/* Up to and including the final norm; cls_only: the last block computes token 0 alone (B, 1, D).
 * When no graph is recorded (vg_no_grad_begin: evaluation), nothing but the residual stream x is
 * read again after a block, so each stage runs above one arena mark and only its output is kept,
 * moved back down to the mark (vg_arena_release_keep): evaluation holds one block's intermediates
 * at a time, not the whole network's. With a graph, backward needs them all; nothing is released. */
static vg_tensor *features(vg_vit *m, vg_tensor *image, bool train, vg_rng *rng, bool cls_only) {
    const bool release = !vg_grad_enabled();
    const vg_arena_mark mark = vg_arena_get_mark();
    vg_tensor *x = vg_vit_patch_embed(m, image);                        /* (B, N, D) */
    x = vg_vit_pos_embed(m, x);                                         /* (B, S+N, D) */
    x = vg_dropout_fn(x, m->cfg.drop_rate, train, rng);
    x = vg_patch_dropout_fn(x, m->cfg.patch_drop_rate, vg_vit_num_prefix_tokens(&m->cfg), train, rng); /* (B, S+K, D) in training */
    if (release) x = vg_arena_release_keep(mark, x);
    for (int i = 0; i < m->cfg.depth; i++) {
        x = block_forward(m, i, x, cls_only && i == m->cfg.depth - 1 ? 1 : 0, train, rng, NULL);
        if (release) x = vg_arena_release_keep(mark, x);
    }
    if (!m->norm.weight) return x;                                       /* fc_norm: after pooling */
    return vg_layernorm_fn(x, m->norm.weight, m->norm.bias, m->cfg.norm_eps);
}

vg_tensor *vg_vit_forward_features(vg_vit *m, vg_tensor *image, bool train, vg_rng *rng) {
    return features(m, image, train, rng, false);
}

bool vg_vit_last_block_cls_only(const vg_vit *m) {
    return m->cfg.pool == VG_VIT_POOL_CLS && !m->full_last_block;
}

vg_tensor *vg_vit_pool_tokens(vg_vit *m, vg_tensor *x) {
    if (!x) return NULL;
    const int S = vg_vit_num_prefix_tokens(&m->cfg);
    if (m->cfg.pool == VG_VIT_POOL_CLS) x = vg_select(x, 1, 0);                    /* (B, D) */
    else {
        if (x->ndim != 3 || x->shape[1] <= S) { vg_set_error("vit: pooling: no patch tokens after %d prefix tokens", S); return NULL; }
        x = vg_mean(vg_narrow(x, 1, S, x->shape[1] - S), 1, (const int[]){1}, false); /* (B, D) */
    }
    if (m->fc_norm.weight) x = vg_layernorm_fn(x, m->fc_norm.weight, m->fc_norm.bias, m->cfg.norm_eps);
    return x;
}

vg_tensor *vg_vit_forward(vg_vit *m, vg_tensor *image, bool train, vg_rng *rng) {
    vg_tensor *x = features(m, image, train, rng, vg_vit_last_block_cls_only(m));
    x = vg_vit_pool_tokens(m, x);
    if (!m->head.weight) return x;                                      /* num_classes 0: features */
    return vg_linear_fn(x, m->head.weight, m->head.bias);               /* (B, classes) */
}

vg_tensor *vg_l2_normalize(vg_tensor *x) {
    if (!x) return NULL;
    /* ‖x‖ = sqrt(Σx² + 1e-24): equal to F.normalize's max(‖x‖, 1e-12) except for near-zero rows,
     * and differentiable everywhere */
    vg_tensor *ss = vg_sum(vg_mul(x, x), 1, (const int[]){-1}, true);
    return vg_mul(x, vg_rsqrt(vg_add_scalar(ss, 1e-24)));
}

vg_tensor *vg_vit_embed(vg_vit *m, vg_tensor *image) {
    return vg_l2_normalize(vg_vit_pool_tokens(m, features(m, image, false, NULL, vg_vit_last_block_cls_only(m))));
}
