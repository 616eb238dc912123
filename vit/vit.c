/* vit.c — the Vision Transformer: the rules between config fields, its tensors by name, timm's
 * init, forward. The layers are nn/'s modules (vg_linear, vg_conv2d, vg_layernorm, vg_mhsa): vit.c
 * allocates and initialises their tensors from one list (each_tensor) and runs their _forward. */
#include "vit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ config (the fields: fields.c) */
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
            const vg_vit_field *d = &vg_vit_fields[VG_VIT_F_conv_stem];     /* each layer's range */
            if (end == p || x < d->lo || x > d->hi || (*end && *end != ',')) {
                vg_set_error("conv stem \"%s\": expected channel counts %g..%g separated by commas, e.g. 32,64", s,
                             d->lo, d->hi);
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

/* The rules between fields, after each field's own range (vit_fields.h). n[f] names field f. */
static bool check_rules(const vg_vit_config *c, const char *const *n) {
    const int n_stem = vg_vit_stem_depth(c);
    char stem[64];
    vg_vit_stem_str(c, stem, sizeof stem);
    if (n_stem && c->patch_size % (1 << n_stem)) {
        vg_set_error("%s %s (%d stride-2 layers) needs a patch size divisible by %d, not %s %d",
                     n[VG_VIT_F_conv_stem], stem, n_stem, 1 << n_stem, n[VG_VIT_F_patch_size], c->patch_size);
        return false;
    }
    if (c->stem_pool && !n_stem) {
        vg_set_error("%s needs a %s to pool in (e.g. %s 32,64)", n[VG_VIT_F_stem_pool], n[VG_VIT_F_conv_stem],
                     n[VG_VIT_F_conv_stem]);
        return false;
    }
    if (c->img_size % c->patch_size) {
        vg_set_error("%s %d is not a multiple of %s %d", n[VG_VIT_F_img_size], c->img_size, n[VG_VIT_F_patch_size],
                     c->patch_size);
        return false;
    }
    if (c->embed_dim % c->num_heads) {
        vg_set_error("%s %d is not divisible by %s %d", n[VG_VIT_F_embed_dim], c->embed_dim, n[VG_VIT_F_num_heads],
                     c->num_heads);
        return false;
    }
    if (c->pos_embed == VG_VIT_POS_SINCOS2D && c->embed_dim % 4) {
        vg_set_error("%s sincos2d needs %s divisible by 4 (got %d)", n[VG_VIT_F_pos_embed], n[VG_VIT_F_embed_dim],
                     c->embed_dim);
        return false;
    }
    if (!c->class_token && c->pool == VG_VIT_POOL_CLS) {
        vg_set_error("%s cls needs the class token (%s is 0: use mean pooling)", n[VG_VIT_F_pool], n[VG_VIT_F_class_token]);
        return false;
    }
    if (((int64_t)vg_vit_num_patches(c) + vg_vit_num_prefix_tokens(c)) * c->embed_dim > (1 << 28)) {
        vg_set_error("%d tokens of %d dims (%s %d, %s %d): a position table over 2^28 values",
                     vg_vit_num_patches(c) + vg_vit_num_prefix_tokens(c), c->embed_dim, n[VG_VIT_F_img_size],
                     c->img_size, n[VG_VIT_F_patch_size], c->patch_size);
        return false;
    }
    if (!(c->mlp_ratio * c->embed_dim < (1 << 18)) || vg_vit_hidden_dim(c) <= 0) {
        vg_set_error("%s %g with %s %d gives an MLP %d wide (1 to 2^18 - 1)", n[VG_VIT_F_mlp_ratio], c->mlp_ratio,
                     n[VG_VIT_F_embed_dim], c->embed_dim, vg_vit_hidden_dim(c));
        return false;
    }
    return true;
}

bool vg_vit_config_check_as(const vg_vit_config *c, const char *const names[VG_VIT_NFIELDS]) {
    if (!c) { vg_set_error("config is NULL"); return false; }
    const char *n[VG_VIT_NFIELDS];
    for (int f = 0; f < VG_VIT_NFIELDS; f++) n[f] = names && names[f] ? names[f] : vg_vit_fields[f].name;
    for (int f = 0; f < VG_VIT_NFIELDS; f++) {
        if (vg_vit_field_in_range(c, f)) continue;
        const vg_vit_field *d = &vg_vit_fields[f];
        char v[64];
        vg_vit_field_format(c, f, v, sizeof v);
        if (d->kind == VG_FIELD_STEM)
            vg_set_error("%s %s: each layer %g to %g channels, a 0 ends the list", n[f], v, d->lo, d->hi);
        else vg_set_error("%s %s is not in [%g, %g]", n[f], v, d->lo, d->hi);
        return false;
    }
    return check_rules(c, n);
}

bool vg_vit_config_check(const vg_vit_config *c) {
    if (vg_vit_config_check_as(c, NULL)) return true;
    char e[512];
    snprintf(e, sizeof e, "%s", vg_error());
    vg_set_error("vit: %s", e);
    return false;
}

/* ------------------------------------------------------------------ the tensors, by name */
/* One tensor of the state dict: its name, shape, whether it decays and is trained, and where it
 * lives in the model (NULL when only shapes are asked for). */
typedef struct {
    vg_tensor **slot;
    const char *fmt; int index;      /* name = fmt with the block or layer index */
    int ndim; int64_t shape[4];
    bool wd, trainable;
} tensor_decl;
typedef void (*decl_fn)(const tensor_decl *d, void *ctx);

#define DECL(m_slot, wd_, train_, fmt_, i_, ...) \
    fn(&(tensor_decl){(m_slot), (fmt_), (i_), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                      {__VA_ARGS__}, (wd_), (train_)}, ctx)

/* Every tensor of a model of configuration c, in timm's state-dict order (the model's own
 * parameters first, then its submodules in order). m may be NULL (shapes only). This is the one
 * list of the model's tensors: allocation, names, the parameter count and the optimizer's list
 * all come from it. */
static void each_tensor(vg_vit *m, const vg_vit_config *c, decl_fn fn, void *ctx) {
    const int64_t D = c->embed_dim, H = vg_vit_hidden_dim(c);
    const int64_t T = vg_vit_pos_prefix_rows(c) + (int64_t)vg_vit_num_patches(c);
    const int64_t k = vg_vit_patch_stride(c) + 2 * c->patch_overlap;     /* the patch conv's kernel */
    #define AT(field) (m ? &m->field : NULL)
    if (c->class_token) DECL(AT(cls_token), false, true, "cls_token", 0, 1, 1, D);
    if (c->reg_tokens) DECL(AT(reg_token), false, true, "reg_token", 0, 1, c->reg_tokens, D);
    DECL(AT(pos_embed), false, c->pos_embed == VG_VIT_POS_LEARNED, "pos_embed", 0, 1, T, D);
    for (int i = 0, in = c->in_chans; i < vg_vit_stem_depth(c); in = c->conv_stem[i++]) {
        DECL(AT(stem[i].weight), true, true, "patch_embed.backbone.%d.conv.weight", i, c->conv_stem[i], in, 3, 3);
        DECL(AT(stem[i].bias), false, true, "patch_embed.backbone.%d.conv.bias", i, c->conv_stem[i]);
    }
    DECL(AT(patch_embed.weight), true, true, "patch_embed.proj.weight", 0, D, vg_vit_patch_in_chans(c), k, k);
    DECL(AT(patch_embed.bias), false, true, "patch_embed.proj.bias", 0, D);
    for (int i = 0; i < c->depth; i++) {
        #define B(field) (m && m->blocks ? &m->blocks[i].field : NULL)
        DECL(B(norm1.weight), false, true, "blocks.%d.norm1.weight", i, D);
        DECL(B(norm1.bias), false, true, "blocks.%d.norm1.bias", i, D);
        if (c->lsa) DECL(B(attn.log_scale), false, true, "blocks.%d.attn.scale", i, 1);
        DECL(B(attn.qkv.weight), true, true, "blocks.%d.attn.qkv.weight", i, 3 * D, D);
        if (c->qkv_bias) DECL(B(attn.qkv.bias), false, true, "blocks.%d.attn.qkv.bias", i, 3 * D);
        DECL(B(attn.proj.weight), true, true, "blocks.%d.attn.proj.weight", i, D, D);
        DECL(B(attn.proj.bias), false, true, "blocks.%d.attn.proj.bias", i, D);
        if (c->init_values > 0) DECL(B(ls1), false, true, "blocks.%d.ls1.gamma", i, D);
        DECL(B(norm2.weight), false, true, "blocks.%d.norm2.weight", i, D);
        DECL(B(norm2.bias), false, true, "blocks.%d.norm2.bias", i, D);
        DECL(B(fc1.weight), true, true, "blocks.%d.mlp.fc1.weight", i, H, D);
        DECL(B(fc1.bias), false, true, "blocks.%d.mlp.fc1.bias", i, H);
        DECL(B(fc2.weight), true, true, "blocks.%d.mlp.fc2.weight", i, D, H);
        DECL(B(fc2.bias), false, true, "blocks.%d.mlp.fc2.bias", i, D);
        if (c->init_values > 0) DECL(B(ls2), false, true, "blocks.%d.ls2.gamma", i, D);
        #undef B
    }
    if (!c->fc_norm) {
        DECL(AT(norm.weight), false, true, "norm.weight", 0, D);
        DECL(AT(norm.bias), false, true, "norm.bias", 0, D);
    } else {
        DECL(AT(fc_norm.weight), false, true, "fc_norm.weight", 0, D);
        DECL(AT(fc_norm.bias), false, true, "fc_norm.bias", 0, D);
    }
    /* sequence pooling's scoring vector; CCT's Linear(D, 1) also has a bias, left out here: adding
     * one constant to every score leaves the softmax unchanged (its gradient is exactly 0) */
    if (c->pool == VG_VIT_POOL_SEQ) DECL(AT(seq_pool), true, true, "seq_pool.weight", 0, 1, D);
    if (c->num_classes > 0) {
        DECL(AT(head.weight), true, true, "head.weight", 0, c->num_classes, D);
        DECL(AT(head.bias), false, true, "head.bias", 0, c->num_classes);
    }
    #undef AT
}

static void count_numel(const tensor_decl *d, void *ctx) {
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++) n *= d->shape[i];
    *(int64_t *)ctx += n;
}
int64_t vg_vit_param_count(const vg_vit_config *c) {
    int64_t n = 0;
    each_tensor(NULL, c, count_numel, &n);
    return n;
}

typedef struct {
    vg_tensor ***slots; char (*names)[128]; bool *wd;
    int max, n; bool trainable_only;
} slot_list;

static void put(const tensor_decl *d, void *ctx) {
    slot_list *l = ctx;
    if (!d->slot || !*d->slot || (l->trainable_only && !d->trainable)) return;   /* not allocated (yet) */
    if (l->n < l->max) {
        if (l->slots) l->slots[l->n] = d->slot;
        if (l->names) snprintf(l->names[l->n], 128, d->fmt, d->index);
        if (l->wd) l->wd[l->n] = d->wd;
    }
    l->n++;
}

int vg_vit_slots(vg_vit *m, bool trainable_only, vg_tensor ***slots, char (*names)[128],
                 bool *weight_decay, int max) {
    slot_list l = {slots, names, weight_decay, max, 0, trainable_only};
    each_tensor(m, &m->cfg, put, &l);
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
/* every tensor of the list, zeros: trained ones as parameters (with a gradient) */
static void allocate(const tensor_decl *d, void *ctx) {
    (void)ctx;
    *d->slot = d->trainable ? vg_param(d->ndim, d->shape) : vg_persistent_zeros(d->ndim, d->shape);
}

/* Advance rng past n draws. timm builds each Linear (and the stem's convs) with PyTorch's default
 * init, U(±1/√fan_in) for weight and bias, one draw per value, and then draws the weight again
 * (init_weights_vit_timm; the stem's He init). vitgrad draws each value once, but skips the
 * default init's draws so that a seed gives the same weights as it always has. */
static void skip_draws(vg_rng *rng, const vg_tensor *w, const vg_tensor *b) {
    int64_t n = vg_numel(w) + (b ? vg_numel(b) : 0);
    for (int64_t i = 0; i < n; i++) vg_rng_next(rng);
}

bool vg_vit_init(vg_vit *m, const vg_vit_config *cfg, vg_rng *rng) {
    memset(m, 0, sizeof *m);
    if (!vg_vit_config_check(cfg)) return false;
    m->cfg = *cfg;
    m->grid_h = m->grid_w = cfg->img_size / cfg->patch_size;
    m->blocks = calloc((size_t)cfg->depth, sizeof *m->blocks);
    if (!m->blocks) { vg_set_error("vit: out of memory"); return false; }
    each_tensor(m, cfg, allocate, NULL);
    /* what each module's forward reads besides its tensors */
    const int ps = vg_vit_patch_stride(cfg), n_stem = vg_vit_stem_depth(cfg);
    m->patch_embed.stride = ps; m->patch_embed.padding = cfg->patch_overlap;
    for (int i = 0; i < n_stem; i++) { m->stem[i].stride = cfg->stem_pool ? 1 : 2; m->stem[i].padding = 1; }
    m->norm.eps = m->fc_norm.eps = cfg->norm_eps;
    for (int i = 0; i < cfg->depth; i++) {
        vg_vit_block *b = &m->blocks[i];
        b->norm1.eps = b->norm2.eps = cfg->norm_eps;
        b->attn.heads = cfg->num_heads; b->attn.attn_drop = cfg->attn_drop_rate; b->attn.proj_drop = cfg->drop_rate;
        b->attn.diag_mask = cfg->lsa;
    }

    /* the draws, in this order (a seed's weights depend on it) */
    {   /* patch conv: nn.Conv2d's default, W ~ kaiming_uniform(a = √5) = U(±1/√fan_in), b ~ U(±1/√fan_in) */
        vg_tensor *w = m->patch_embed.weight;
        vg_init_kaiming_uniform(w, rng, sqrt(5.0));
        const double bound = 1.0 / sqrt((double)vg_fan_in(w));
        vg_init_uniform(m->patch_embed.bias, rng, -bound, bound);
    }
    for (int i = 0; i < n_stem; i++) {          /* He init for a ReLU: std √(2 / fan_in), zero bias */
        skip_draws(rng, m->stem[i].weight, m->stem[i].bias);
        vg_init_normal(m->stem[i].weight, rng, sqrt(2.0 / (double)vg_fan_in(m->stem[i].weight)));
    }
    vg_init_normal(m->cls_token, rng, 1e-6);
    vg_init_normal(m->reg_token, rng, 1e-6);                 /* timm: normal std 1e-6 as cls */
    if (cfg->pos_embed == VG_VIT_POS_LEARNED) vg_init_trunc_normal(m->pos_embed, rng, 0.02);
    else {
        vg_arena_mark mk = vg_arena_get_mark();
        vg_tensor *t = vg_sincos_2d_pos_embed(cfg->embed_dim, m->grid_h, m->grid_w, vg_vit_pos_prefix_rows(cfg));
        if (t) vg_copy_raw(m->pos_embed, t);
        vg_arena_release(mk);
        if (!t) { vg_vit_free(m); return false; }
    }
    for (int i = 0; i < cfg->depth; i++) {
        vg_vit_block *b = &m->blocks[i];
        vg_linear *lin[4] = {&b->attn.qkv, &b->attn.proj, &b->fc1, &b->fc2};
        for (int j = 0; j < 4; j++) skip_draws(rng, lin[j]->weight, lin[j]->bias);
        for (int j = 0; j < 4; j++) vg_init_trunc_normal(lin[j]->weight, rng, 0.02);   /* timm: bias 0 */
        vg_init_constant(b->norm1.weight, 1.0);
        vg_init_constant(b->norm2.weight, 1.0);
        vg_init_constant(b->ls1, cfg->init_values);          /* timm's LayerScale: init_values · 1 */
        vg_init_constant(b->attn.log_scale, -0.5 * log((double)(cfg->embed_dim / cfg->num_heads)));   /* LSA: hd^-1/2 */
        vg_init_constant(b->ls2, cfg->init_values);
    }
    vg_init_constant(cfg->fc_norm ? m->fc_norm.weight : m->norm.weight, 1.0);
    if (m->seq_pool) vg_init_trunc_normal(m->seq_pool, rng, 0.02);   /* CCT: trunc_normal(.02), as every Linear */
    if (m->head.weight) {
        skip_draws(rng, m->head.weight, m->head.bias);
        vg_init_trunc_normal(m->head.weight, rng, 0.02);
    }
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
    /* With stem_pool each conv runs at stride 1 and the max pool halves the map. The pool comes
     * before the ReLU: max commutes with the monotone ReLU, so these are the values and gradients
     * of CCT's conv → ReLU → pool (for finite activations: a window whose taps are all ≤ 0 gives 0
     * either way, and its gradient is 0 either way), with the ReLU on a quarter of the elements. */
    for (int i = 0; i < vg_vit_stem_depth(c); i++) {     /* (B, C_i, H/2^(i+1), W/2^(i+1)) */
        x = vg_conv2d_forward(&m->stem[i], x);
        if (c->stem_pool) x = vg_max_pool2d_fn(x, 3, 2, 1);
        x = vg_relu(x);
    }
    x = vg_conv2d_forward(&m->patch_embed, x);                  /* stride P/2^n, padding overlap: (B, D, h, w) */
    x = vg_flatten(x, 2, 3);                                                                     /* (B, D, N) */
    return vg_transpose(x, 1, 2);                                                                /* (B, N, D) */
}

/* timm's _pos_embed: [cls][reg] in front of the patches (either may be NULL); pos added after the
 * concatenation, or (no_embed_class: the table has patch rows only) to the patches before it */
static vg_tensor *prefix_and_pos(vg_tensor *tokens, vg_tensor *cls, vg_tensor *reg, vg_tensor *pos, bool no_embed_class) {
    if (!tokens) return NULL;
    const int64_t B = tokens->shape[0];
    if (no_embed_class) tokens = vg_add(tokens, pos);                                  /* (B, N, D) */
    vg_tensor *parts[3];
    int k = 0;
    if (cls) parts[k++] = vg_expand(cls, VG_DIMS(B, -1, -1));                          /* (B, 1, D) */
    if (reg) parts[k++] = vg_expand(reg, VG_DIMS(B, -1, -1));                          /* (B, R, D) */
    parts[k++] = tokens;
    vg_tensor *x = k > 1 ? vg_concat(k, parts, 1) : tokens;                           /* (B, S+N, D) */
    return no_embed_class ? x : vg_add(x, pos);
}

vg_tensor *vg_vit_embed_tokens(vg_tensor *tokens, vg_tensor *cls, vg_tensor *pos) {
    if (!tokens || !cls || !pos) return NULL;
    return prefix_and_pos(tokens, cls, NULL, pos, false);
}

vg_tensor *vg_vit_pos_embed(vg_vit *m, vg_tensor *tokens) {
    return prefix_and_pos(tokens, m->cls_token, m->reg_token, m->pos_embed, m->cfg.no_embed_class);
}

/* One block, (B, T, D) → (B, T', D): T' = T, or with rows > 0 only the first T' = rows tokens'
 * outputs (a ViT's last block when only the class token is read; see vg_mhsa_forward). Every
 * step after attention acts on each token separately, so the rows come out as in the whole block. */
static vg_tensor *block_forward(vg_vit *m, int i, vg_tensor *x, int64_t rows, bool train, vg_rng *rng,
                                vg_tensor **attn_out) {
    const vg_vit_config *c = &m->cfg;
    vg_vit_block *b = &m->blocks[i];
    const double dpr = vg_vit_drop_path_at(c, i);
    /* x + drop_path(ls1 · attn(norm1(x))); attn ends with proj and its dropout */
    vg_tensor *h = vg_layernorm_forward(&b->norm1, x);
    h = vg_mhsa_forward(&b->attn, h, rows, train, rng, attn_out);   /* (B, T', D) */
    if (b->ls1) h = vg_mul(h, b->ls1);                               /* ls1: LayerScale (D) */
    h = vg_drop_path_fn(h, dpr, train, rng);                         /* drop_path1 */
    if (rows) x = vg_narrow(x, 1, 0, rows);                          /* (B, rows, D) */
    x = vg_add_into(x, h);       /* h (proj, dropout or drop-path output) is overwritten: unneeded */
    /* x + drop_path(ls2 · mlp(norm2(x))), mlp = drop(fc2(drop(gelu(fc1(·))))) */
    h = vg_layernorm_forward(&b->norm2, x);
    h = vg_linear_gelu_forward(&b->fc1, h);                          /* (B, T', hidden) */
    h = vg_dropout_fn(h, c->drop_rate, train, rng);
    h = vg_linear_forward(&b->fc2, h);                               /* (B, T', D) */
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
    return vg_layernorm_forward(&m->norm, x);
}

vg_tensor *vg_vit_forward_features(vg_vit *m, vg_tensor *image, bool train, vg_rng *rng) {
    return features(m, image, train, rng, false);
}

bool vg_vit_last_block_cls_only(const vg_vit *m) {
    return m->cfg.pool == VG_VIT_POOL_CLS && !m->full_last_block;
}

/* a = softmax over the N tokens of s_n = x_n·w: (B, N, D) → (B, 1, N). Written as exp(s − max s) / Σ
 * exp(s − max s) with the max detached (the softmax does not depend on it). */
vg_tensor *vg_vit_seq_pool_weights(vg_vit *m, vg_tensor *tokens) {
    if (!tokens || !m->seq_pool) { if (!m->seq_pool) vg_set_error("vit: no sequence pooling in this model"); return NULL; }
    vg_tensor *s = vg_transpose(vg_matmul(tokens, vg_transpose(m->seq_pool, 0, 1)), 1, 2);    /* (B, 1, N) */
    vg_tensor *e = vg_exp(vg_sub(s, vg_detach(vg_max(s, 1, (const int[]){2}, true))));
    return vg_div(e, vg_sum(e, 1, (const int[]){2}, true));
}

vg_tensor *vg_vit_pool_tokens(vg_vit *m, vg_tensor *x) {
    if (!x) return NULL;
    const int S = vg_vit_num_prefix_tokens(&m->cfg);
    if (m->cfg.pool == VG_VIT_POOL_CLS) x = vg_select(x, 1, 0);                    /* (B, D) */
    else {
        if (x->ndim != 3 || x->shape[1] <= S) { vg_set_error("vit: pooling: no patch tokens after %d prefix tokens", S); return NULL; }
        x = vg_narrow(x, 1, S, x->shape[1] - S);                                     /* (B, N, D) */
        if (m->cfg.pool == VG_VIT_POOL_SEQ) x = vg_squeeze(vg_matmul(vg_vit_seq_pool_weights(m, x), x), 1);
        else x = vg_mean(x, 1, (const int[]){1}, false);                              /* (B, D) */
    }
    if (m->fc_norm.weight) x = vg_layernorm_forward(&m->fc_norm, x);
    return x;
}

vg_tensor *vg_vit_forward(vg_vit *m, vg_tensor *image, bool train, vg_rng *rng) {
    vg_tensor *x = features(m, image, train, rng, vg_vit_last_block_cls_only(m));
    x = vg_vit_pool_tokens(m, x);
    if (!m->head.weight) return x;                                      /* num_classes 0: features */
    return vg_linear_forward(&m->head, x);                             /* (B, classes) */
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
