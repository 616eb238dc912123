/* model_meta.c — vg_vit_config ⇄ "model.*" safetensors metadata (see model_meta.h). */
#include "model_meta.h"
#include "checkpoint.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vg_vit_config_to_meta(const vg_vit_config *c, vg_st_writer *w, char *err, size_t errlen) {
    char v[64];
    int rc = 0;
    #define META_I(key, x) (snprintf(v, sizeof v, "%d", (int)(x)), rc |= vg_st_writer_meta(w, "model." key, v, err, errlen))
    #define META_D(key, x) (snprintf(v, sizeof v, "%.17g", (double)(x)), rc |= vg_st_writer_meta(w, "model." key, v, err, errlen))
    META_I("img_size", c->img_size); META_I("patch_size", c->patch_size); META_I("in_chans", c->in_chans);
    META_I("num_classes", c->num_classes); META_I("embed_dim", c->embed_dim); META_I("depth", c->depth);
    META_I("num_heads", c->num_heads); META_D("mlp_ratio", c->mlp_ratio); META_I("qkv_bias", c->qkv_bias);
    META_D("drop_rate", c->drop_rate); META_D("attn_drop_rate", c->attn_drop_rate);
    META_D("drop_path_rate", c->drop_path_rate);
    if (c->patch_drop_rate > 0) META_D("patch_drop_rate", c->patch_drop_rate);
    rc |= vg_st_writer_meta(w, "model.pool", c->pool == VG_VIT_POOL_MEAN ? "mean" : "cls", err, errlen);
    rc |= vg_st_writer_meta(w, "model.pos_embed", c->pos_embed == VG_VIT_POS_SINCOS2D ? "sincos2d" : "learned", err, errlen);
    META_D("norm_eps", c->norm_eps);
    #undef META_I
    #undef META_D
    return rc ? -1 : 0;
}

/* "model.<key>" as a whole decimal int / a finite number; absent: *out untouched. -1 (err names
 * path, key and value) when present but not that. */
static int meta_int(const vg_st_file *f, const char *key, int *out, const char *path, char *err, size_t errlen) {
    const char *v = vg_st_meta(f, key);
    if (!v) return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno == ERANGE || x < INT_MIN || x > INT_MAX) {
        snprintf(err, errlen, "%s: metadata %s = \"%.40s\" is not an integer", path, key, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}
static int meta_double(const vg_st_file *f, const char *key, double *out, const char *path, char *err, size_t errlen) {
    const char *v = vg_st_meta(f, key);
    if (!v) return 0;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x)) {
        snprintf(err, errlen, "%s: metadata %s = \"%.40s\" is not a finite number", path, key, v);
        return -1;
    }
    *out = x;
    return 0;
}
/* "model.<key>" as one of two names (index 0 or 1) */
static int meta_choice(const vg_st_file *f, const char *key, const char *a, const char *b, int *out,
                       const char *path, char *err, size_t errlen) {
    const char *v = vg_st_meta(f, key);
    if (!v) return 0;
    if (strcmp(v, a) && strcmp(v, b)) {
        snprintf(err, errlen, "%s: metadata %s = \"%.40s\", expected \"%s\" or \"%s\"", path, key, v, a, b);
        return -1;
    }
    *out = strcmp(v, a) ? 1 : 0;
    return 0;
}

int vg_vit_config_from_meta(const vg_st_file *f, vg_vit_config *c, const char *path, char *err,
                            size_t errlen) {
    if (!vg_st_meta(f, "model.embed_dim")) {
        snprintf(err, errlen, "%s: no model configuration in its metadata (not written by vitgrad?)", path);
        return -1;
    }
    int qkv_bias = c->qkv_bias, pool = c->pool == VG_VIT_POOL_MEAN, pos = c->pos_embed == VG_VIT_POS_SINCOS2D;
    if (meta_int(f, "model.img_size", &c->img_size, path, err, errlen) ||
        meta_int(f, "model.patch_size", &c->patch_size, path, err, errlen) ||
        meta_int(f, "model.in_chans", &c->in_chans, path, err, errlen) ||
        meta_int(f, "model.num_classes", &c->num_classes, path, err, errlen) ||
        meta_int(f, "model.embed_dim", &c->embed_dim, path, err, errlen) ||
        meta_int(f, "model.depth", &c->depth, path, err, errlen) ||
        meta_int(f, "model.num_heads", &c->num_heads, path, err, errlen) ||
        meta_double(f, "model.mlp_ratio", &c->mlp_ratio, path, err, errlen) ||
        meta_int(f, "model.qkv_bias", &qkv_bias, path, err, errlen) ||
        meta_double(f, "model.drop_rate", &c->drop_rate, path, err, errlen) ||
        meta_double(f, "model.attn_drop_rate", &c->attn_drop_rate, path, err, errlen) ||
        meta_double(f, "model.norm_eps", &c->norm_eps, path, err, errlen) ||
        meta_double(f, "model.drop_path_rate", &c->drop_path_rate, path, err, errlen) ||
        meta_double(f, "model.patch_drop_rate", &c->patch_drop_rate, path, err, errlen) ||
        meta_choice(f, "model.pool", "cls", "mean", &pool, path, err, errlen) ||
        meta_choice(f, "model.pos_embed", "learned", "sincos2d", &pos, path, err, errlen))
        return -1;
    c->qkv_bias = qkv_bias != 0;
    c->pool = pool ? VG_VIT_POOL_MEAN : VG_VIT_POOL_CLS;
    c->pos_embed = pos ? VG_VIT_POS_SINCOS2D : VG_VIT_POS_LEARNED;
    if (!vg_vit_config_check(c)) {
        snprintf(err, errlen, "%s: invalid model configuration in metadata: %s", path, vg_error());
        return -1;
    }
    /* The configuration must fit the file before anything is allocated for it: a model file
     * holds every tensor of the state dict, a train state both AdamW moments of every trained
     * one. Damaged metadata cannot ask for more memory than the file could fill. */
    int64_t trained = vg_vit_param_count(c), held = 0;
    if (c->pos_embed == VG_VIT_POS_SINCOS2D) trained -= ((int64_t)vg_vit_num_patches(c) + 1) * c->embed_dim;
    for (size_t i = 0; i < vg_st_count(f); i++) held += (int64_t)vg_st_at(f, i)->numel;
    const char *fmt = vg_st_meta(f, "format");
    int64_t need = fmt && !strcmp(fmt, "vitgrad-train-state/1") ? 2 * trained : vg_vit_param_count(c);
    if (need > held) {
        snprintf(err, errlen, "%s: the model configuration in its metadata needs %lld values, the file holds %lld "
                 "(damaged metadata or tensors?)", path, (long long)need, (long long)held);
        return -1;
    }
    return 0;
}

int vg_vit_from_checkpoint(const vg_st_file *f, vg_vit *m, const char *path, char *err,
                           size_t errlen) {
    memset(m, 0, sizeof *m);
    vg_vit_config cfg = vg_vit_config_default();
    if (vg_vit_config_from_meta(f, &cfg, path, err, errlen)) return -1;
    vg_rng rng = vg_rng_seed(0);
    if (!vg_vit_init(m, &cfg, &rng)) {
        snprintf(err, errlen, "%s: cannot build the model: %s", path, vg_error());
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

int vg_vit_config_diff(const vg_st_file *f, const vg_vit_config *c, char *out, size_t n) {
    out[0] = 0;
    if (!vg_st_meta(f, "model.embed_dim")) return 0;
    vg_vit_config saved = *c;
    char e[256];
    if (vg_vit_config_from_meta(f, &saved, "", e, sizeof e)) return 0;
    const struct { const char *name; double a, b; } fields[] = {
        {"patch_size", saved.patch_size, c->patch_size}, {"in_chans", saved.in_chans, c->in_chans},
        {"num_classes", saved.num_classes, c->num_classes}, {"embed_dim", saved.embed_dim, c->embed_dim},
        {"depth", saved.depth, c->depth}, {"num_heads", saved.num_heads, c->num_heads},
        {"mlp_ratio", saved.mlp_ratio, c->mlp_ratio}, {"qkv_bias", saved.qkv_bias, c->qkv_bias},
        {"pool (0 cls, 1 mean)", saved.pool, c->pool}, {"pos_embed (0 learned, 1 sincos2d)", saved.pos_embed, c->pos_embed},
    };
    int k = 0;
    size_t len = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (fields[i].a == fields[i].b) continue;
        int w = snprintf(out + len, n - len, "%s%s %g (this run: %g)", k ? ", " : "", fields[i].name, fields[i].a, fields[i].b);
        if (w > 0 && (size_t)w < n - len) len += (size_t)w;
        k++;
    }
    return k;
}
