/* model_meta.c — vg_vit_config ⇄ "model.*" safetensors metadata (see model_meta.h). */
#include "model_meta.h"
#include "checkpoint.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* every field of vit_fields.h in its order, as "model.<name>" (IF_SET fields only when set) */
int vg_vit_config_to_meta(const vg_vit_config *c, vg_st_writer *w, char *err, size_t errlen) {
    int rc = 0;
    for (int f = 0; f < VG_VIT_NFIELDS; f++) {
        if (!vg_vit_fields[f].meta_always && vg_vit_field_is_default(c, f)) continue;
        char key[96], v[64];
        snprintf(key, sizeof key, "model.%s", vg_vit_fields[f].name);
        vg_vit_field_format(c, f, v, sizeof v);
        rc |= vg_st_writer_meta(w, key, v, err, errlen);
    }
    return rc ? -1 : 0;
}

/* The configuration must fit the file before anything is allocated for it: a model file holds
 * every tensor of the state dict, a train state both AdamW moments of every trained one. Damaged
 * metadata (or shapes) cannot ask for more memory than the file could fill. */
static int fits_file(const vg_st_file *f, const vg_vit_config *c, const char *source, int64_t slack, const char *path,
                     char *err, size_t errlen) {
    int64_t trained = vg_vit_param_count(c), held = 0;
    if (c->pos_embed == VG_VIT_POS_SINCOS2D)
        trained -= ((int64_t)vg_vit_num_patches(c) + vg_vit_pos_prefix_rows(c)) * c->embed_dim;
    for (size_t i = 0; i < vg_st_count(f); i++) held += (int64_t)vg_st_at(f, i)->numel;
    const char *fmt = vg_st_meta(f, "format");
    int64_t need = fmt && !strcmp(fmt, "vitgrad-train-state/1") ? 2 * trained : vg_vit_param_count(c);
    if (need > held + slack) {
        snprintf(err, errlen, "%s: the model configuration %s needs %lld values, the file holds %lld "
                 "(damaged metadata or tensors?)", path, source, (long long)need, (long long)held);
        return -1;
    }
    return 0;
}

int vg_vit_config_from_meta(const vg_st_file *f_, vg_vit_config *c, const char *path, char *err,
                            size_t errlen) {
    if (!vg_st_meta(f_, "model.embed_dim")) {
        snprintf(err, errlen, "%s: no model configuration in its metadata (not written by vitgrad?)", path);
        return -1;
    }
    for (int f = 0; f < VG_VIT_NFIELDS; f++) {
        char key[96];
        snprintf(key, sizeof key, "model.%s", vg_vit_fields[f].name);
        const char *v = vg_st_meta(f_, key);
        if (v && !vg_vit_field_parse(c, f, v)) {
            snprintf(err, errlen, "%s: metadata %s = \"%.40s\": %.200s", path, key, v, vg_error());
            return -1;
        }
    }
    if (!vg_vit_config_check(c)) {
        snprintf(err, errlen, "%s: invalid model configuration in metadata: %s", path, vg_error());
        return -1;
    }
    return fits_file(f_, c, "in its metadata", 0, path, err, errlen);
}

/* ------------------------------------------------------------------ a timm state dict's shapes */
static const vg_st_tensor *find_dims(const vg_st_file *f, const char *name, int ndim) {
    const vg_st_tensor *t = vg_st_find(f, name);
    return t && t->ndim == ndim ? t : NULL;
}

/* Keys of timm ViT features vitgrad does not have: named in the error rather than left to the
 * list of unused keys */
static const struct { const char *key, *what; } unsupported[] = {
    {"dist_token", "a distillation token (DeiT distilled: deit_*_distilled_*)"},
    {"head_dist.weight", "a distillation head (DeiT distilled)"},
    {"norm_pre.weight", "a LayerNorm before the blocks (pre_norm, CLIP-style)"},
    {"attn_pool.latent", "attention pooling (global_pool='map')"},
    {"blocks.0.attn.q_norm.weight", "qk_norm"},
    {"blocks.0.mlp.fc1_g.weight", "a gated MLP (SwiGLU)"},
    {"blocks.0.mlp.w12.weight", "a gated MLP (SwiGLU)"},
    {"patch_embed.norm.weight", "a LayerNorm in the patch embedding"},
    {"blocks.0.attn.norm.weight", "a norm inside attention (scale_attn_norm)"},
    {"blocks.0.mlp.norm.weight", "a norm inside the MLP (scale_mlp_norm)"},
};

static int infer_from_shapes(const vg_st_file *f, vg_vit_config *c, int num_heads, const char *path,
                             char *err, size_t errlen) {
    const vg_st_tensor *pw = vg_st_find(f, "patch_embed.proj.weight");
    if (!pw) {
        char keys[200] = "";
        for (size_t i = 0; i < vg_st_count(f) && i < 4; i++)
            snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%.40s", i ? ", " : "", vg_st_at(f, i)->name);
        snprintf(err, errlen, "%s: not a Vision Transformer in timm's layout: no patch_embed.proj.weight and no "
                 "vitgrad metadata (%zu tensors%s%s%s)", path, vg_st_count(f), vg_st_count(f) ? ": " : "", keys,
                 vg_st_count(f) > 4 ? ", …" : "");
        return -1;
    }
    if (pw->ndim != 4 || pw->shape[2] != pw->shape[3] || pw->shape[0] <= 0 || pw->shape[1] <= 0 || pw->shape[2] <= 0 ||
        pw->shape[0] > 16384 || pw->shape[1] > 1024 || pw->shape[2] > 16384) {
        snprintf(err, errlen, "%s: patch_embed.proj.weight is not (embed_dim, in_chans, P, P) with a square patch "
                 "of sane size", path);
        return -1;
    }
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (unsupported[i].what && vg_st_find(f, unsupported[i].key)) {
            snprintf(err, errlen, "%s: a timm ViT with %s (tensor %s): not supported by vitgrad", path,
                     unsupported[i].what, unsupported[i].key);
            return -1;
        }
    const int D = (int)pw->shape[0];
    vg_vit_config d = vg_vit_config_default();
    d.embed_dim = D; d.in_chans = (int)pw->shape[1]; d.patch_size = (int)pw->shape[2];
    /* depth: blocks.0, blocks.1, … as long as their qkv exists */
    char name[64];
    d.depth = 0;
    for (;; d.depth++) {
        snprintf(name, sizeof name, "blocks.%d.attn.qkv.weight", d.depth);
        if (!vg_st_find(f, name) || d.depth > 1024) break;
    }
    const vg_st_tensor *fc1 = find_dims(f, "blocks.0.mlp.fc1.weight", 2);
    if (!d.depth || !fc1 || fc1->shape[1] != D || fc1->shape[0] <= 0 || fc1->shape[0] >= (1 << 18)) {
        snprintf(err, errlen, "%s: no transformer blocks in timm's layout (blocks.0.attn.qkv.weight and "
                 "blocks.0.mlp.fc1.weight (hidden, %d))", path, D);
        return -1;
    }
    const int hidden = (int)fc1->shape[0];
    d.mlp_ratio = (double)hidden / D;
    if (vg_vit_hidden_dim(&d) != hidden) d.mlp_ratio = (hidden + 0.5) / D;   /* (int)(D·ratio) = hidden */
    d.qkv_bias = vg_st_find(f, "blocks.0.attn.qkv.bias") != NULL;
    d.class_token = vg_st_find(f, "cls_token") != NULL;
    const vg_st_tensor *reg = find_dims(f, "reg_token", 3);
    if (vg_st_find(f, "reg_token") && (!reg || reg->shape[1] <= 0 || reg->shape[1] > 1024)) {
        snprintf(err, errlen, "%s: reg_token is not (1, R, %d) with 0 < R <= 1024", path, D);
        return -1;
    }
    d.reg_tokens = reg ? (int)reg->shape[1] : 0;
    d.init_values = vg_st_find(f, "blocks.0.ls1.gamma") ? 1e-5 : 0;   /* any > 0; the file's gammas replace it */
    d.fc_norm = vg_st_find(f, "fc_norm.weight") && !vg_st_find(f, "norm.weight");
    /* timm: class_token=False needs global_pool='avg'; fc_norm is the default of 'avg' alone */
    d.pool = !d.class_token || d.fc_norm ? VG_VIT_POOL_MEAN : VG_VIT_POOL_CLS;
    const vg_st_tensor *hw = find_dims(f, "head.weight", 2);
    d.num_classes = hw ? (int)(hw->shape[0] > (1 << 24) ? -1 : hw->shape[0]) : 0;
    /* pos_embed (1, rows, D): rows = S + g² (a row for every token), or g² (no_embed_class) */
    const vg_st_tensor *pe = find_dims(f, "pos_embed", 3);
    if (!pe || pe->shape[0] != 1 || pe->shape[2] != D) {
        snprintf(err, errlen, "%s: no pos_embed (1, rows, %d) (a ViT without a position table is not supported)", path, D);
        return -1;
    }
    const int64_t rows = pe->shape[1], S = vg_vit_num_prefix_tokens(&d);
    /* Both readings can fit a small grid (S = 5, rows = 9: 2×2 or 3×3). Register-token models take
     * no_embed_class first (every timm reg model is no_embed_class), the others timm's default. */
    int64_t g = -1;
    for (int k = 0; k < 2 && g < 0; k++) {
        const int noemb = d.reg_tokens ? !k : k;
        int64_t n = rows - (noemb ? 0 : S), r = n > 0 && n < (1 << 28) ? (int64_t)llround(sqrt((double)n)) : -1;
        if (r > 0 && r * r == n) { g = r; d.no_embed_class = noemb && S > 0; }
    }
    if (g < 0 || g * d.patch_size > 16384) {
        snprintf(err, errlen, "%s: pos_embed has %lld rows: neither %lld prefix rows and a square patch grid nor a "
                 "square grid alone (or a grid too large)", path, (long long)rows, (long long)S);
        return -1;
    }
    d.img_size = (int)g * d.patch_size;
    if (num_heads > 0) d.num_heads = num_heads;
    else if (D % 64 == 0) d.num_heads = D / 64;              /* timm's published ViTs: head_dim 64 */
    else {
        snprintf(err, errlen, "%s: embed_dim %d is not a multiple of 64, so the head count cannot be taken as "
                 "embed_dim/64 (timm's head_dim): give the number of heads", path, D);
        return -1;
    }
    if (!vg_vit_config_check(&d)) {
        snprintf(err, errlen, "%s: the configuration read from its tensor shapes is not valid: %s", path, vg_error());
        return -1;
    }
    /* shapes read from the file's own tensors: a missing tensor or two is reported by name when the
     * model is loaded, but no reading may ask for far more memory than the file holds */
    int64_t held = 0;
    for (size_t i = 0; i < vg_st_count(f); i++) held += (int64_t)vg_st_at(f, i)->numel;
    if (fits_file(f, &d, "read from its shapes", held + (1 << 20), path, err, errlen)) return -1;
    *c = d;
    return 0;
}

int vg_vit_config_from_file(const vg_st_file *f, vg_vit_config *c, int num_heads_or_0, const char *path,
                            char *err, size_t errlen) {
    if (!vg_st_meta(f, "model.embed_dim")) return infer_from_shapes(f, c, num_heads_or_0, path, err, errlen);
    vg_vit_config d = vg_vit_config_default();
    if (vg_vit_config_from_meta(f, &d, path, err, errlen)) return -1;
    if (num_heads_or_0 > 0 && num_heads_or_0 != d.num_heads) {
        snprintf(err, errlen, "%s: its metadata says num_heads %d, %d was asked for", path, d.num_heads, num_heads_or_0);
        return -1;
    }
    *c = d;
    return 0;
}

/* "a, b, c" of at most n bytes, "…" when cut; returns how many were listed */
static void list_add(char *out, size_t n, size_t *len, int k, const char *name) {
    if (!n || *len >= n - 1) return;
    int w = snprintf(out + *len, n - *len, "%s%s", k ? ", " : "", name);
    if (w < 0) return;
    if ((size_t)w >= n - *len) {                       /* cut: end with an ellipsis */
        if (n >= 5) snprintf(out + n - 5, 5, "...");
        *len = n - 1;
    } else *len += (size_t)w;
}

int vg_vit_unused_keys(vg_vit *m, const vg_st_file *f, char *out, size_t n) {
    if (n) out[0] = 0;
    vg_params st = {0};
    vg_vit_state(m, &st);
    size_t len = 0;
    int k = 0;
    for (size_t i = 0; i < vg_st_count(f); i++) {
        const char *key = vg_st_at(f, i)->name;
        if (vg_params_find(&st, key)) continue;
        list_add(out, n, &len, k++, key);
    }
    vg_params_free(&st);
    return k;
}

int vg_vit_missing_keys(vg_vit *m, const vg_st_file *f, char *out, size_t n) {
    if (n) out[0] = 0;
    vg_params st = {0};
    vg_vit_state(m, &st);
    size_t len = 0;
    int k = 0;
    for (int i = 0; i < st.n; i++) {
        if (vg_st_find(f, st.items[i].name)) continue;
        list_add(out, n, &len, k++, st.items[i].name);
    }
    vg_params_free(&st);
    return k;
}

int vg_vit_from_file(const vg_st_file *f, vg_vit *m, int num_heads_or_0, const char *path, char *err,
                     size_t errlen) {
    memset(m, 0, sizeof *m);
    vg_vit_config cfg = vg_vit_config_default();
    if (vg_vit_config_from_file(f, &cfg, num_heads_or_0, path, err, errlen)) return -1;
    vg_rng rng = vg_rng_seed(0);
    if (!vg_vit_init(m, &cfg, &rng)) {
        snprintf(err, errlen, "%s: cannot build the model: %s", path, vg_error());
        return -1;
    }
    char missing[300], unused[300];
    int nm = vg_vit_missing_keys(m, f, missing, sizeof missing), nu = vg_vit_unused_keys(m, f, unused, sizeof unused);
    if (nm || nu) {
        snprintf(err, errlen, "%s: the file does not match the model read from it: %d tensors of the model missing%s%s; "
                 "%d keys of the file unused%s%s", path, nm, nm ? ": " : "", missing, nu, nu ? ": " : "", unused);
        vg_vit_free(m);
        return -1;
    }
    vg_params st = {0};
    vg_vit_state(m, &st);
    char e2[512];
    int rc = vg_params_load(&st, f, "", true, NULL, e2, sizeof e2);
    vg_params_free(&st);
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, e2);
        vg_vit_free(m);
        return -1;
    }
    return 0;
}

int vg_vit_from_checkpoint(const vg_st_file *f, vg_vit *m, const char *path, char *err, size_t errlen) {
    return vg_vit_from_file(f, m, 0, path, err, errlen);
}

int vg_vit_config_diff(const vg_st_file *f, const vg_vit_config *c, char *out, size_t n) {
    out[0] = 0;
    vg_vit_config saved = *c;
    char e[512];
    if (!vg_st_meta(f, "model.embed_dim")) {
        /* a bare timm state dict: its shapes (one head always divides; the head count and the
         * pooling are not in the shapes, so they are not compared) */
        if (infer_from_shapes(f, &saved, 1, "", e, sizeof e)) return 0;
        saved.num_heads = c->num_heads; saved.pool = c->pool; saved.pos_embed = c->pos_embed;
    } else if (vg_vit_config_from_meta(f, &saved, "", e, sizeof e)) return 0;
    int k = 0;
    size_t len = 0;
    for (int i = 0; i < VG_VIT_NFIELDS; i++) {
        const vg_vit_field *d = &vg_vit_fields[i];
        char a[64], b[64];
        if (d->cmp == VG_FIELD_CMP_ON) {            /* compared as present or not: "LayerScale 1 (this run: 0)" */
            snprintf(a, sizeof a, "%d", vg_vit_field_number(&saved, i) > 0);
            snprintf(b, sizeof b, "%d", vg_vit_field_number(c, i) > 0);
        } else if (d->cmp == VG_FIELD_CMP_SAME) {
            vg_vit_field_format(&saved, i, a, sizeof a);
            vg_vit_field_format(c, i, b, sizeof b);
            if (!strcmp(a, b)) continue;
            if (d->kind == VG_FIELD_REAL) {          /* shown with %g, as people write them */
                snprintf(a, sizeof a, "%g", vg_vit_field_number(&saved, i));
                snprintf(b, sizeof b, "%g", vg_vit_field_number(c, i));
            }
        } else continue;
        if (!strcmp(a, b) && d->cmp == VG_FIELD_CMP_ON) continue;
        int w = snprintf(out + len, n - len, "%s%s %s (this run: %s)", k ? ", " : "", d->cmp_label ? d->cmp_label : d->name, a, b);
        if (w > 0 && (size_t)w < n - len) len += (size_t)w;
        k++;
    }
    return k;
}
