/* model_meta.c — vg_vit_config ⇄ "model.*" safetensors metadata (see model_meta.h). */
#include "model_meta.h"
#include "checkpoint.h"
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
    rc |= vg_st_writer_meta(w, "model.pool", c->pool == VG_VIT_POOL_MEAN ? "mean" : "cls", err, errlen);
    rc |= vg_st_writer_meta(w, "model.pos_embed", c->pos_embed == VG_VIT_POS_SINCOS2D ? "sincos2d" : "learned", err, errlen);
    META_D("norm_eps", c->norm_eps);
    #undef META_I
    #undef META_D
    return rc ? -1 : 0;
}

int vg_vit_config_from_meta(const vg_st_file *f, vg_vit_config *c, const char *path, char *err,
                            size_t errlen) {
    const char *v;
    #define GET_I(key, field) if ((v = vg_st_meta(f, "model." key))) c->field = atoi(v)
    #define GET_D(key, field) if ((v = vg_st_meta(f, "model." key))) c->field = strtod(v, NULL)
    if (!vg_st_meta(f, "model.embed_dim")) {
        snprintf(err, errlen, "%s: no model configuration in its metadata (not written by vitgrad?)", path);
        return -1;
    }
    GET_I("img_size", img_size); GET_I("patch_size", patch_size); GET_I("in_chans", in_chans);
    GET_I("num_classes", num_classes); GET_I("embed_dim", embed_dim); GET_I("depth", depth);
    GET_I("num_heads", num_heads); GET_D("mlp_ratio", mlp_ratio); GET_I("qkv_bias", qkv_bias);
    GET_D("drop_rate", drop_rate); GET_D("attn_drop_rate", attn_drop_rate); GET_D("norm_eps", norm_eps);
    GET_D("drop_path_rate", drop_path_rate);
    if ((v = vg_st_meta(f, "model.pool"))) c->pool = !strcmp(v, "mean") ? VG_VIT_POOL_MEAN : VG_VIT_POOL_CLS;
    if ((v = vg_st_meta(f, "model.pos_embed"))) c->pos_embed = !strcmp(v, "sincos2d") ? VG_VIT_POS_SINCOS2D : VG_VIT_POS_LEARNED;
    #undef GET_I
    #undef GET_D
    if (!vg_vit_config_check(c)) {
        snprintf(err, errlen, "%s: invalid model configuration in metadata: %s", path, vg_error());
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
