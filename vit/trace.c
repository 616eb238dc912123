/* trace.c — the shape-flow table of one forward pass, and the analytic FLOP count.
 * FLOPs are 2 × multiply-adds of the conv, the Linears and attention's QKᵀ and AV (what dominates
 * a ViT); LayerNorm, softmax, GELU and the adds are not counted. */
#include "vit.h"

/* per image; T tokens enter the blocks: S + N (S prefix tokens), or S + K in training with patch dropout */
/* stem layer i: a 3×3 conv at stride 2, so its output side is img_size / 2^(i+1); with stem_pool
 * at stride 1 (side img_size / 2^i) before the pool halves it (the pool's comparisons not counted) */
static double stem_layer_flops(const vg_vit_config *c, int i) {
    const double side = c->img_size / (double)((c->stem_pool ? 1 : 2) << i), in = i ? c->conv_stem[i - 1] : c->in_chans;
    return 2.0 * side * side * c->conv_stem[i] * in * 9;
}
static double stem_flops(const vg_vit_config *c) {
    double f = 0;
    for (int i = 0; i < vg_vit_stem_depth(c); i++) f += stem_layer_flops(c, i);
    return f;
}
/* the patch conv alone, from the stem's last map (or the image) */
static double patch_conv_flops(const vg_vit_config *c) {
    const double k = vg_vit_patch_stride(c) + 2 * c->patch_overlap;   /* the patch conv's kernel */
    return 2.0 * vg_vit_num_patches(c) * c->embed_dim * vg_vit_patch_in_chans(c) * k * k;
}
static double patch_flops(const vg_vit_config *c) { return stem_flops(c) + patch_conv_flops(c); }
static double block_flops(const vg_vit_config *c, double T) {
    double D = c->embed_dim, H = vg_vit_hidden_dim(c);
    return 2.0 * (T * D * 3 * D      /* qkv */
                + 2 * T * T * D      /* QKᵀ and AV over all heads */
                + T * D * D          /* proj */
                + 2 * T * D * H);    /* fc1, fc2 */
}
/* the last block for the class token alone: keys and values for every token, the query, one row
 * against T keys (QKᵀ and AV), proj and MLP for one token */
static double cls_block_flops(const vg_vit_config *c, double T) {
    double D = c->embed_dim, H = vg_vit_hidden_dim(c);
    return 2.0 * (T * D * 2 * D + D * D + 2 * T * D + D * D + 2 * D * H);
}
static double head_flops(const vg_vit_config *c) { return 2.0 * c->embed_dim * c->num_classes; }
/* sequence pooling over n patch tokens: the scores x·w and the weighted sum (mean and cls: 0) */
static double pool_flops(const vg_vit_config *c, double n) {
    return c->pool == VG_VIT_POOL_SEQ ? 4.0 * n * c->embed_dim : 0;
}
static double eval_tokens(const vg_vit_config *c) { return vg_vit_num_patches(c) + (double)vg_vit_num_prefix_tokens(c); }
static double train_tokens(const vg_vit_config *c) {
    if (!(c->patch_drop_rate > 0)) return eval_tokens(c);
    return vg_vit_num_prefix_tokens(c) + (double)vg_patch_dropout_keep(vg_vit_num_patches(c), c->patch_drop_rate);
}
static double flops(const vg_vit_config *c, double T, bool cls_only) {
    return patch_flops(c) + (c->depth - cls_only) * block_flops(c, T) + (cls_only ? cls_block_flops(c, T) : 0)
         + pool_flops(c, T - vg_vit_num_prefix_tokens(c)) + head_flops(c);
}

double vg_vit_forward_flops(const vg_vit_config *c) { return flops(c, eval_tokens(c), false); }
/* backward of a matmul is two matmuls of the same size (dX and dW): 2× forward */
double vg_vit_train_flops(const vg_vit_config *c) { return 3.0 * flops(c, train_tokens(c), false); }

double vg_vit_forward_flops_done(const vg_vit *m) {
    return flops(&m->cfg, eval_tokens(&m->cfg), vg_vit_last_block_cls_only(m));
}
double vg_vit_train_flops_done(const vg_vit *m) {
    return 3.0 * flops(&m->cfg, train_tokens(&m->cfg), vg_vit_last_block_cls_only(m));
}

static int64_t numel_or0(const vg_tensor *t) { return t ? vg_numel(t) : 0; }

static void row(FILE *f, const char *stage, const vg_tensor *t, int64_t params, double flops) {
    char s[96] = "?";
    if (t) vg_shape_str(t, s, sizeof s);
    fprintf(f, "  %-26s %-22s %12lld %14.4g\n", stage, s, (long long)params, flops);
}

bool vg_vit_trace(vg_vit *m, int batch, FILE *f) {
    const vg_vit_config *c = &m->cfg;
    const int P = c->patch_size, D = c->embed_dim;
    const double B = batch;
    vg_arena_mark mk = vg_arena_get_mark();
    vg_no_grad_begin();
    bool ok = false;
    vg_tensor *img = vg_zeros(VG_DIMS(batch, c->in_chans, (int64_t)m->grid_h * P, (int64_t)m->grid_w * P));
    const int64_t pos_params = c->pos_embed == VG_VIT_POS_LEARNED ? numel_or0(m->pos_embed) : 0;
    int64_t total = 0;
    double total_flops = 0;

    char pool_name[16];
    vg_vit_field_format(c, VG_VIT_F_pool, pool_name, sizeof pool_name);
    fprintf(f, "ViT forward, batch %d: %d px, patch %d, dim %d, depth %d, heads %d, mlp %d, %s pooling, %s pos_embed\n",
            batch, c->img_size, P, D, c->depth, c->num_heads, vg_vit_hidden_dim(c),
            pool_name, c->pos_embed == VG_VIT_POS_LEARNED ? "learned" : "fixed sincos2d");
    if (!c->class_token || c->reg_tokens || c->no_embed_class || c->fc_norm || c->init_values > 0 || !c->num_classes)
        fprintf(f, "  timm layout: %s, %d register tokens%s%s%s%s\n", c->class_token ? "class token" : "no class token",
                c->reg_tokens, c->no_embed_class ? ", no_embed_class" : "", c->fc_norm ? ", fc_norm" : "",
                c->init_values > 0 ? ", LayerScale" : "", c->num_classes ? "" : ", no head (features out)");
    fprintf(f, "  %-26s %-22s %12s %14s\n", "stage", "output shape", "params", "FLOPs (fwd)");
    row(f, "input", img, 0, 0);

    vg_tensor *x = img;
    char label[64];
    for (int i = 0; i < vg_vit_stem_depth(c); i++) {
        x = vg_conv2d_fn(x, m->stem[i].weight, m->stem[i].bias, c->stem_pool ? 1 : 2, 1);
        if (c->stem_pool) x = vg_max_pool2d_fn(x, 3, 2, 1);    /* before the ReLU, as vit.c */
        x = vg_relu(x);
        const int64_t n = numel_or0(m->stem[i].weight) + numel_or0(m->stem[i].bias);
        const double fl = B * stem_layer_flops(c, i);
        snprintf(label, sizeof label, c->stem_pool ? "stem.%d (conv 3x3, max/2)" : "stem.%d (conv 3x3/2, ReLU)", i);
        row(f, label, x, n, fl); total += n; total_flops += fl;
    }
    const int ps = vg_vit_patch_stride(c), kern = ps + 2 * c->patch_overlap;
    x = vg_conv2d_fn(x, m->patch_embed.weight, m->patch_embed.bias, ps, c->patch_overlap);
    int64_t np = numel_or0(m->patch_embed.weight) + numel_or0(m->patch_embed.bias);
    snprintf(label, sizeof label, "patch_embed (conv %dx%d/%d)", kern, kern, ps);
    const double pf = B * patch_conv_flops(c);
    row(f, label, x, np, pf); total += np; total_flops += pf;

    x = vg_transpose(vg_flatten(x, 2, 3), 1, 2);
    row(f, "token sequence", x, 0, 0);
    const char *pos_label = c->pos_embed == VG_VIT_POS_LEARNED ? "+ pos_embed" : "+ pos_embed (fixed)";
    if (c->no_embed_class) {                    /* timm's _pos_embed: patches first, then the prefix */
        x = vg_add(x, m->pos_embed);
        row(f, pos_label, x, pos_params, 0); total += pos_params;
    }
    if (m->cls_token) {
        x = vg_concat(2, (vg_tensor *[]){vg_expand(m->cls_token, VG_DIMS(batch, -1, -1)), x}, 1);
        row(f, "+ cls_token", x, numel_or0(m->cls_token), 0); total += numel_or0(m->cls_token);
    }
    if (m->reg_token) {                         /* after the class token, before the patches */
        vg_tensor *rest = m->cls_token ? vg_narrow(x, 1, 1, x->shape[1] - 1) : x;
        vg_tensor *reg = vg_expand(m->reg_token, VG_DIMS(batch, -1, -1));
        x = m->cls_token ? vg_concat(3, (vg_tensor *[]){vg_narrow(x, 1, 0, 1), reg, rest}, 1)
                         : vg_concat(2, (vg_tensor *[]){reg, rest}, 1);
        row(f, "+ reg_token", x, numel_or0(m->reg_token), 0); total += numel_or0(m->reg_token);
    }
    if (!c->no_embed_class) {
        x = vg_add(x, m->pos_embed);
        row(f, pos_label, x, pos_params, 0); total += pos_params;
    }

    for (int i = 0; i < c->depth && x; i++) {
        x = vg_vit_block_forward(m, i, x, false, NULL, NULL);
        int64_t bp = 0;
        vg_vit_block *b = &m->blocks[i];
        const vg_tensor *ts[] = {b->norm1.weight, b->norm1.bias, b->attn.qkv.weight, b->attn.qkv.bias,
                                 b->attn.proj.weight, b->attn.proj.bias, b->ls1, b->norm2.weight, b->norm2.bias,
                                 b->fc1.weight, b->fc1.bias, b->fc2.weight, b->fc2.bias, b->ls2};
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) bp += numel_or0(ts[k]);
        snprintf(label, sizeof label, "blocks.%d", i);
        row(f, label, x, bp, B * block_flops(c, eval_tokens(c))); total += bp; total_flops += B * block_flops(c, eval_tokens(c));
    }
    if (m->norm.weight) {
        x = vg_layernorm_fn(x, m->norm.weight, m->norm.bias, c->norm_eps);
        int64_t nn_ = numel_or0(m->norm.weight) + numel_or0(m->norm.bias);
        row(f, "norm", x, nn_, 0); total += nn_;
    }
    x = vg_vit_pool_tokens(m, x);               /* with fc_norm, the norm after pooling too */
    int64_t fp = numel_or0(m->fc_norm.weight) + numel_or0(m->fc_norm.bias) + numel_or0(m->seq_pool);
    static const char *const pooled[] = {"pooled (cls token)", "pooled (mean of patches)", "pooled (seq. pooling)"};
    snprintf(label, sizeof label, "%s%s", pooled[c->pool], m->fc_norm.weight ? ", fc_norm" : "");
    row(f, label, x, fp, B * pool_flops(c, vg_vit_num_patches(c))); total += fp; total_flops += B * pool_flops(c, vg_vit_num_patches(c));
    if (m->head.weight) {
        x = vg_linear_fn(x, m->head.weight, m->head.bias);
        int64_t hp = numel_or0(m->head.weight) + numel_or0(m->head.bias);
        row(f, "head (logits)", x, hp, B * head_flops(c)); total += hp; total_flops += B * head_flops(c);
    }
    if (x) {
        fprintf(f, "  %-26s %-22s %12lld %14.4g\n", "total", "", (long long)total, total_flops);
        fprintf(f, "  trainable parameters %lld; forward %.4g GFLOP/image, training ≈ 3× = %.4g GFLOP/image\n",
                (long long)total, vg_vit_forward_flops(c) / 1e9, vg_vit_train_flops(c) / 1e9);
        ok = true;
    } else {
        fprintf(f, "  trace failed: %s\n", vg_error());
    }
    vg_no_grad_end();
    vg_arena_release(mk);
    return ok;
}
