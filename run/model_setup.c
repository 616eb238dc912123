/* model_setup.c — which model a run trains, and how --init weights are fitted to it.
 *
 * The configuration, decided before the model is built:
 *   --resume      the one saved with the checkpoint (train_state's metadata); a --num-classes
 *                 that differs from it is refused, naming both counts;
 *   --init FILE   without --model: FILE's model (vitgrad's metadata, or read off a timm state
 *                 dict's shapes), the model flags applied on top (--img-size, --patch,
 *                 --num-classes, dropout rates, …); with --model: the preset and its flags;
 *   otherwise     the preset with the model flags (run/options.c).
 * The head has --num-classes classes, else the data's: the class folders of an image folder, 10
 * for CIFAR-10 and Fashion-MNIST. --eval-only evaluates a checkpoint's own head: without --init
 * or --resume, or with a head of another class count, it is refused (never a random head).
 *
 * --init's weights are then fitted to the model (run_fit_init_weights; training runs only, an
 * evaluation loads the file strictly) the way timm's pretrained loading does: a head of another class count is left at its new initialisation, a
 * patch-embedding kernel of another patch size is resampled (FlexiViT), and the position
 * embedding of another grid is interpolated (trainer_load_weights). */
#include "run/run.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include "vit/patch_resample.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN RUN_ERRLEN

/* --eval-only evaluates the checkpoint's own head: refused (2) when there is none to evaluate, or
 * when its class count is not the data's (or --num-classes'), which would mean a new, random head */
static int eval_only_head(const options *o, int file_classes, const char *model_path, int data_classes, char *err) {
    const int want = o->ov[VG_VIT_F_num_classes] ? atoi(o->ov[VG_VIT_F_num_classes]) : data_classes;
    if (!o->eval_only || want <= 0 || file_classes == want) return 0;
    snprintf(err, ERRLEN, "--eval-only: %.400s has a head of %d classes, %s %d: there is no trained head to evaluate "
             "(to train a new one from its weights: --init without --eval-only)", model_path, file_classes,
             o->ov[VG_VIT_F_num_classes] ? "--num-classes says" : "the data has", want);
    return 2;
}

int run_model_config(options *o, char *model_path, char *state_path, size_t pathlen, int data_classes, char *err) {
    if (o->eval_only && !o->resume && !o->init && !o->bench && !o->trace_shapes) {
        snprintf(err, ERRLEN, "--eval-only: no model to evaluate: give the trained checkpoint with --init FILE_OR_RUN_DIR "
                 "(or --resume RUN_DIR)");
        return 2;
    }
    if (o->resume || o->init) {
        const char *p = o->resume ? o->resume : o->init;
        if (vg_checkpoint_resolve(p, model_path, state_path, pathlen, err, ERRLEN)) return -1;
    }
    if (o->resume) {
        if (!state_path[0]) { snprintf(err, ERRLEN, "--resume %.400s: no train_state.safetensors next to %.400s", o->resume, model_path); return -1; }
        if (trainer_config_from_state(state_path, o, err)) return -1;
        if (o->ov[VG_VIT_F_num_classes] && atoi(o->ov[VG_VIT_F_num_classes]) != o->vit.num_classes) {
            snprintf(err, ERRLEN, "--resume %.400s: the checkpoint's head has %d classes, --num-classes says %d "
                     "(to train a new head from its weights: --init)", o->resume, o->vit.num_classes, atoi(o->ov[VG_VIT_F_num_classes]));
            return -1;
        }
        return eval_only_head(o, o->vit.num_classes, state_path, data_classes, err);
    }
    if (o->init && o->model_given && o->eval_only) {     /* the preset's model: the file's head count */
        vg_st_file *f = vg_st_open(model_path, err, ERRLEN);
        if (!f) return -1;
        vg_vit_config c = vg_vit_config_default();
        int rc = vg_vit_config_from_file(f, &c, o->ov[VG_VIT_F_num_heads] ? atoi(o->ov[VG_VIT_F_num_heads]) : 0, model_path, err, ERRLEN);
        vg_st_close(f);
        if (rc || (rc = eval_only_head(o, c.num_classes, model_path, data_classes, err))) return rc;
    }
    if (o->init && !o->model_given) {                  /* the --init file's model */
        vg_st_file *f = vg_st_open(model_path, err, ERRLEN);
        if (!f) return -1;
        vg_vit_config c = vg_vit_config_default();
        int heads = o->ov[VG_VIT_F_num_heads] ? atoi(o->ov[VG_VIT_F_num_heads]) : 0;
        int rc = vg_vit_config_from_file(f, &c, heads, model_path, err, ERRLEN);
        vg_st_close(f);
        if (rc) return -1;
        vg_vit_config file_cfg = c;
        if ((rc = eval_only_head(o, c.num_classes, model_path, data_classes, err))) return rc;
        vg_options_apply_model_flags(o, &c);
        if (!o->ov[VG_VIT_F_num_classes] && data_classes > 0) c.num_classes = data_classes;
        o->vit = c;
        o->model = "the --init file's model";
        printf("model: from %s: %d px, patch %d, dim %d, depth %d, %d heads, MLP ratio %g, %d classes",
               model_path, file_cfg.img_size, file_cfg.patch_size, file_cfg.embed_dim, file_cfg.depth,
               file_cfg.num_heads, file_cfg.mlp_ratio, file_cfg.num_classes);
        if (c.img_size != file_cfg.img_size || c.patch_size != file_cfg.patch_size || c.num_classes != file_cfg.num_classes)
            printf("; this run: %d px, patch %d, %d classes", c.img_size, c.patch_size, c.num_classes);
        printf("\n");
    } else if (!o->ov[VG_VIT_F_num_classes] && data_classes > 0) {
        o->vit.num_classes = data_classes;
    }
    if (!vg_vit_config_check(&o->vit)) { snprintf(err, ERRLEN, "model: %.900s", vg_error()); return -1; }
    return 0;
}

/* the head: left at its new initialisation when the file's has another class count */
static int fit_head(trainer *t, const vg_st_file *f, const char *path, const char **skip, int *nskip) {
    const vg_st_tensor *hw = vg_st_find(f, "head.weight");
    if (!hw && t->model.head.weight) {                 /* a headless file (timm num_classes=0, DINOv2) */
        skip[(*nskip)++] = "head.weight";
        skip[(*nskip)++] = "head.bias";
        printf("head: %s has none, this run %d classes: a new head (trunc-normal .02, zero bias)\n", path,
               t->model.cfg.num_classes);
        return 0;
    }
    if (!hw || hw->ndim != 2 || hw->shape[0] == t->model.cfg.num_classes) return 0;
    skip[(*nskip)++] = "head.weight";
    skip[(*nskip)++] = "head.bias";
    printf("head: %s has %lld classes, this run %d: a new head (trunc-normal .02, zero bias)\n", path,
           (long long)hw->shape[0], t->model.cfg.num_classes);
    return 0;
}

/* the patch embedding: a kernel of another size resampled to the model's (FlexiViT) */
static int fit_patch_embed(trainer *t, const vg_st_file *f, const char *path, vg_interp_mode interp, const char **skip,
                           int *nskip, char *err) {
    const vg_st_tensor *pw = vg_st_find(f, "patch_embed.proj.weight");
    vg_tensor *w = t->model.patch_embed.weight;                        /* (D, C, P, P) */
    if (!pw || pw->ndim != 4 || pw->shape[2] != pw->shape[3] || pw->shape[2] == w->shape[2]) return 0;
    if (t->model.cfg.patch_overlap || vg_vit_stem_depth(&t->model.cfg)) return 0;   /* not a resized patch */
    if (pw->shape[0] != w->shape[0] || pw->shape[1] != w->shape[1]) return 0;   /* vg_params_load names it */
    const int p = (int)pw->shape[2], P = (int)w->shape[2];
    char e2[ERRLEN];
    vg_tensor *src = vg_empty(VG_DIMS(pw->shape[0], pw->shape[1], p, p));
    if (vg_st_read_tensor(f, "patch_embed.proj.weight", src, e2, sizeof e2)) { snprintf(err, ERRLEN, "%.1000s", e2); return -1; }
    if (!vg_resample_patch_kernels(vg_data(src), pw->shape[0] * pw->shape[1], p, vg_data(w), P, interp)) {
        snprintf(err, ERRLEN, "%.400s: patch_embed.proj.weight: %.500s", path, vg_error());
        return -1;
    }
    skip[(*nskip)++] = "patch_embed.proj.weight";
    printf("patch_embed: kernel %dx%d -> %dx%d (FlexiViT pseudo-inverse resize, %s)\n", p, p, P, P,
           interp == VG_INTERP_BICUBIC ? "bicubic" : "bilinear");
    return 0;
}

int run_fit_init_weights(trainer *t, const vg_st_file *f, const char *path, vg_interp_mode interp, const char **skip,
                         int *nskip, char *err) {
    char unused[600];
    int nu = vg_vit_unused_keys(&t->model, f, unused, sizeof unused);
    if (nu) printf("--init: %d tensors of %s are not used by this model: %s\n", nu, path, unused);
    if (fit_head(t, f, path, skip, nskip)) return -1;
    return fit_patch_embed(t, f, path, interp, skip, nskip, err);
}

void run_layer_decay(trainer *t, double decay) {
    double *scale = malloc(sizeof(double) * (size_t)t->params.n);
    if (!scale) return;
    const int depth = t->model.cfg.depth;
    for (int i = 0; i < t->params.n; i++) scale[i] = vg_layer_decay_scale(t->params.items[i].name, depth, decay);
    vg_adamw_set_lr_scale(t->opt, scale);
    free(scale);
    printf("layer decay %g: lr x %.3g for the embeddings", decay, vg_layer_decay_scale("patch_embed.proj.weight", depth, decay));
    for (int i = 0; i < depth; i++) {
        if (i == 2 && depth > 4) { printf(", ..."); i = depth - 2; }
        char name[32];
        snprintf(name, sizeof name, "blocks.%d.", i);
        printf(", x %.3g for block %d", vg_layer_decay_scale(name, depth, decay), i);
    }
    printf(", x 1 for the final norm and head\n");
}

int run_muon(trainer *t, const options *o, char *err) {
    bool *on = calloc((size_t)(t->params.n > 0 ? t->params.n : 1), sizeof(bool));
    int n = 0;
    int64_t elems = 0;
    for (int i = 0; i < t->params.n; i++) {
        const vg_tensor *p = t->params.items[i].tensor;
        on[i] = !strncmp(t->params.items[i].name, "blocks.", 7) && p->ndim == 2;
        if (on[i]) { n++; elems += vg_numel(p); }
    }
    const vg_muon_adjust adj = !strcmp(o->muon_adjust, "original") ? VG_MUON_ORIGINAL : VG_MUON_MATCH_RMS_ADAMW;
    const double lr = o->muon_lr > 0 ? o->muon_lr : o->lr;
    const bool ok = vg_adamw_use_muon(t->opt, on, lr / o->lr, o->muon_momentum, adj);
    free(on);
    if (!ok) { snprintf(err, RUN_ERRLEN, "--muon: %.900s", vg_error()); return -1; }
    const double per_image = vg_muon_flops(t->opt) / ((double)o->batch * o->grad_accum_steps) / 1e9;
    printf("muon: %d matrices of the blocks (%lld weights), lr %g, momentum %g, %s; AdamW for the other %d tensors; "
           "Newton-Schulz %.4f GFLOP per image (%.1f %% on top of the model's)\n", n, (long long)elems, lr,
           o->muon_momentum, o->muon_adjust, t->params.n - n, per_image, 100 * per_image / trainer_gflop_per_image(t));
    return 0;
}
