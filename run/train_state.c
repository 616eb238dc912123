/* train_state.c — the checkpoint pair of a run: model.safetensors (the state dict in timm's names,
 * the model config as metadata: loads into PyTorch) and train_state.safetensors (AdamW moments,
 * step, dropout RNG, loader position, images processed, the weight EMA, wall time and the run's
 * hyperparameters); each with the data's class names and normalisation (checkpoint/data_meta.h); with --model-ema also model_ema.safetensors (the average, the same keys as
 * model.safetensors). All are written together and switched atomically by checkpoint/. Resume restores all of it, so a resumed run continues
 * with exactly the numbers of an uninterrupted one. */
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include "run/run.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN RUN_ERRLEN

static void rng_to_i64(const vg_rng *r, int64_t out[4]) { memcpy(out, r->s, sizeof r->s); }
static void rng_from_i64(vg_rng *r, const int64_t in[4]) { memcpy(r->s, in, sizeof r->s); }

int trainer_save_checkpoint(trainer *t, const options *o, const vg_lr_schedule *sched, vg_loader *loader, double wall, char *err) {
    vg_st_writer *mw = vg_st_writer_new(), *sw = vg_st_writer_new(), *ew = vg_st_writer_new();
    int rc = -1;
    char v[64];
    int64_t step = t->step, images = t->images, rng[4], lrng[4], lpos[2];
    vg_loader_state ls = vg_loader_state_get(loader);
    rng_to_i64(&t->dropout_rng, rng);
    rng_to_i64(&ls.rng, lrng);
    lpos[0] = (int64_t)ls.epoch; lpos[1] = (int64_t)ls.index;
    if (vg_params_to_writer(&t->state_dict, mw, err, ERRLEN)) goto done;
    vg_vit_config_to_meta(&t->model.cfg, mw, err, ERRLEN);
    if (vg_data_meta_write(&t->data, mw, err, ERRLEN) || vg_data_meta_write(&t->data, sw, err, ERRLEN)) goto done;
    vg_st_writer_meta(mw, "format", "pt", err, ERRLEN);       /* what timm/HF tooling expects */
    for (int i = 0; i < t->params.n; i++) {
        char name[200];
        const vg_tensor *m = t->opt->exp_avg[i], *s = t->opt->exp_avg_sq[i];
        snprintf(name, sizeof name, "optimizer.exp_avg.%s", t->params.items[i].name);
        if (vg_st_writer_add(sw, name, VG_ST_F32, m->ndim, m->shape, vg_data(m), sizeof(real) * (size_t)vg_numel(m), err, ERRLEN)) goto done;
        snprintf(name, sizeof name, "optimizer.exp_avg_sq.%s", t->params.items[i].name);
        if (vg_st_writer_add(sw, name, VG_ST_F32, s->ndim, s->shape, vg_data(s), sizeof(real) * (size_t)vg_numel(s), err, ERRLEN)) goto done;
    }
    int64_t one = 1, four = 4, two = 2;
    if (vg_st_writer_add(sw, "state.step", VG_ST_I64, 1, &one, &step, 8, err, ERRLEN) ||
        vg_st_writer_add(sw, "state.dropout_rng", VG_ST_I64, 1, &four, rng, 32, err, ERRLEN) ||
        vg_st_writer_add(sw, "loader.position", VG_ST_I64, 1, &two, lpos, 16, err, ERRLEN) ||
        vg_st_writer_add(sw, "loader.rng", VG_ST_I64, 1, &four, lrng, 32, err, ERRLEN) ||
        vg_st_writer_add(sw, "state.images", VG_ST_I64, 1, &one, &images, 8, err, ERRLEN)) goto done;
    if (t->has_ema) {
        /* the average twice: in the train state (resume) and as model_ema.safetensors (users) */
        for (int i = 0; i < t->ema_state.n; i++) {
            char name[200];
            const vg_tensor *e = t->ema_state.items[i].tensor;
            snprintf(name, sizeof name, "ema.%s", t->ema_state.items[i].name);
            if (vg_st_writer_add(sw, name, VG_ST_F32, e->ndim, e->shape, vg_data(e), sizeof(real) * (size_t)vg_numel(e), err, ERRLEN)) goto done;
        }
        if (vg_params_to_writer(&t->ema_state, ew, err, ERRLEN)) goto done;
        vg_vit_config_to_meta(&t->model.cfg, ew, err, ERRLEN);
        if (vg_data_meta_write(&t->data, ew, err, ERRLEN)) goto done;
        vg_st_writer_meta(ew, "format", "pt", err, ERRLEN);
        snprintf(v, sizeof v, "%.17g", o->model_ema_decay); vg_st_writer_meta(ew, "ema_decay", v, err, ERRLEN);
    }
    vg_vit_config_to_meta(&t->model.cfg, sw, err, ERRLEN);
    vg_st_writer_meta(sw, "format", "vitgrad-train-state/1", err, ERRLEN);
    snprintf(v, sizeof v, "%.6f", wall); vg_st_writer_meta(sw, "wall_time", v, err, ERRLEN);
    snprintf(v, sizeof v, "%llu", (unsigned long long)o->seed); vg_st_writer_meta(sw, "seed", v, err, ERRLEN);
    vg_st_writer_meta(sw, "dataset", o->dataset, err, ERRLEN);
    snprintf(v, sizeof v, "%d", o->batch); vg_st_writer_meta(sw, "batch", v, err, ERRLEN);
    /* the rest of the training configuration, for the record (resume takes flags from the command line) */
    const struct { const char *key; double value; } hyper[] = {
        {"train.lr", o->lr}, {"train.weight_decay", o->wd}, {"train.min_lr", o->min_lr},
        {"train.warmup_steps", (double)sched->warmup_steps}, {"train.total_steps", (double)sched->total_steps},
        {"train.label_smoothing", o->label_smoothing}, {"train.clip", o->clip},
        {"train.epochs", o->steps > 0 ? 0 : o->epochs}, {"train.steps", (double)o->steps},
        {"train.grad_accum_steps", o->grad_accum_steps}, {"train.mixup", o->mixup}, {"train.cutmix", o->cutmix},
        {"train.mixup_prob", o->mixup_prob}, {"train.mixup_switch_prob", o->mixup_switch_prob},
        {"train.reprob", o->reprob}, {"train.patch_drop_until_step", (double)o->patch_drop_until_step}, {"train.model_ema_decay", o->model_ema ? o->model_ema_decay : 0},
        {"train.muon_lr", o->muon ? (o->muon_lr > 0 ? o->muon_lr : o->lr) : 0}, {"train.muon_momentum", o->muon ? o->muon_momentum : 0},
    };
    for (size_t k = 0; k < sizeof hyper / sizeof hyper[0]; k++) {
        snprintf(v, sizeof v, "%.17g", hyper[k].value);
        vg_st_writer_meta(sw, hyper[k].key, v, err, ERRLEN);
    }
    vg_st_writer_meta(sw, "train.aug", o->aug, err, ERRLEN);
    vg_st_writer_meta(sw, "train.aa", o->aa ? o->aa : "", err, ERRLEN);
    vg_st_writer_meta(sw, "train.optimizer", o->muon ? (strcmp(o->muon_adjust, "original") ? "muon+adamw (match_rms_adamw)" : "muon+adamw (original)") : "adamw", err, ERRLEN);
    const char *names[3] = {"model.safetensors", "train_state.safetensors", "model_ema.safetensors"};
    const vg_st_writer *writers[3] = {mw, sw, ew};
    rc = vg_checkpoint_save_files(o->out, t->step, t->has_ema ? 3 : 2, names, writers, err, ERRLEN);
done:
    vg_st_writer_free(mw); vg_st_writer_free(sw); vg_st_writer_free(ew);
    return rc;
}

static int read_i64s(const vg_st_file *f, const char *name, int64_t *out, size_t n, const char *path, char *err) {
    char e2[ERRLEN];
    if (vg_st_read_i64(f, name, out, n, e2, sizeof e2)) { snprintf(err, ERRLEN, "%.400s: %.600s", path, e2); return -1; }
    return 0;
}


int trainer_load_state(trainer *t, const char *path, vg_loader_state *ls, int batch, char *err) {
    char e2[ERRLEN];
    vg_st_file *f = vg_st_open(path, err, ERRLEN);
    if (!f) return -1;
    int rc = -1;
    const char *fmt = vg_st_meta(f, "format");
    if (!fmt || strcmp(fmt, "vitgrad-train-state/1")) { snprintf(err, ERRLEN, "%.400s: not a vitgrad train state (format %.100s)", path, fmt ? fmt : "missing"); goto done; }
    const char *b = vg_st_meta(f, "batch"), *ga = vg_st_meta(f, "train.grad_accum_steps");
    int saved_k = ga ? atoi(ga) : 1;
    if (b && atoi(b) * saved_k != batch) {
        snprintf(err, ERRLEN, "%.400s: saved with --batch %.20s x %d micro-batches, resumed with %d images per step (the loader position would not match)",
                 path, b, saved_k, batch);
        goto done;
    }
    vg_params moments = {0};
    for (int i = 0; i < t->params.n; i++) {
        char name[200];
        snprintf(name, sizeof name, "exp_avg.%s", t->params.items[i].name);
        vg_params_add(&moments, NULL, name, t->opt->exp_avg[i], false);
        snprintf(name, sizeof name, "exp_avg_sq.%s", t->params.items[i].name);
        vg_params_add(&moments, NULL, name, t->opt->exp_avg_sq[i], false);
    }
    int lrc = vg_params_load(&moments, f, "optimizer.", true, NULL, e2, sizeof e2);
    vg_params_free(&moments);
    if (lrc) { snprintf(err, ERRLEN, "%.400s: %.600s", path, e2); goto done; }
    int64_t step, rng[4], lpos[2], lrng[4];
    if (read_i64s(f, "state.step", &step, 1, path, err) || read_i64s(f, "state.dropout_rng", rng, 4, path, err) ||
        read_i64s(f, "loader.position", lpos, 2, path, err) || read_i64s(f, "loader.rng", lrng, 4, path, err)) goto done;
    if (step < 0 || lpos[0] < 0 || lpos[1] < 0) { snprintf(err, ERRLEN, "%.400s: negative step or loader position", path); goto done; }
    t->step = step; t->opt->step = step;
    rng_from_i64(&t->dropout_rng, rng);
    ls->epoch = (uint64_t)lpos[0]; ls->index = (uint64_t)lpos[1];
    rng_from_i64(&ls->rng, lrng);
    const char *wt = vg_st_meta(f, "wall_time");
    t->wall_offset = wt ? strtod(wt, NULL) : 0;
    t->images = step * batch;                           /* states from before the count was kept */
    if (vg_st_find(f, "state.images") && read_i64s(f, "state.images", &t->images, 1, path, err)) goto done;
    if (t->has_ema) {
        if (vg_st_find(f, "ema.cls_token")) {
            if (vg_params_load(&t->ema_state, f, "ema.", true, NULL, e2, sizeof e2)) { snprintf(err, ERRLEN, "%.400s: %.600s", path, e2); goto done; }
        } else {
            printf("%s has no weight average: --model-ema starts it from the resumed weights\n", path);
            vg_ema_copy(&t->ema_state, &t->state_dict);
        }
    }
    rc = 0;
done:
    vg_st_close(f);
    return rc;
}


int trainer_load_weights(trainer *t, const char *path, vg_interp_mode interp, bool strict, char *err) {
    char e2[ERRLEN];
    vg_st_file *f = vg_st_open(path, err, ERRLEN);
    if (!f) return -1;
    int rc = -1;
    const vg_st_tensor *pe = vg_st_find(f, "pos_embed");
    const char *skip[8] = {NULL};
    int nskip = 0;
    /* S rows in front of the patch grid: the class and register tokens' (none with no_embed_class) */
    const int S = vg_vit_pos_prefix_rows(&t->model.cfg);
    int64_t D = t->model.cfg.embed_dim, want_rows = (int64_t)vg_vit_num_patches(&t->model.cfg) + S;
    if (pe && pe->ndim == 3 && pe->shape[2] == D && pe->shape[1] != want_rows) {
        int64_t n = pe->shape[1] - S, g = n > 0 ? (int64_t)llround(sqrt((double)n)) : 0;
        if (g <= 0 || g * g != n) {
            char diff[400];
            if (vg_vit_config_diff(f, &t->model.cfg, diff, sizeof diff))
                snprintf(err, ERRLEN, "%.300s: a checkpoint of another model: %.400s", path, diff);
            else snprintf(err, ERRLEN, "%.400s: pos_embed has %lld patch rows (after %d prefix rows), not a square grid", path, (long long)n, S);
            goto done;
        }
        vg_tensor *src = vg_empty(VG_DIMS(1, pe->shape[1], D));
        if (vg_st_read_tensor(f, "pos_embed", src, e2, sizeof e2)) { snprintf(err, ERRLEN, "%.1000s", e2); goto done; }
        vg_tensor *r = vg_resize_pos_embed_prefix(src, S, (int)g, (int)g, t->model.grid_h, t->model.grid_w, interp);
        if (!r) { snprintf(err, ERRLEN, "%.400s: resizing pos_embed: %.500s", path, vg_error()); goto done; }
        vg_copy_raw(t->model.pos_embed, r);
        printf("pos_embed: resized %lldx%lld -> %dx%d (%s)\n", (long long)g, (long long)g, t->model.grid_h, t->model.grid_w,
               interp == VG_INTERP_BICUBIC ? "bicubic" : "bilinear");
        skip[nskip++] = "pos_embed";
    }
    if (!strict && run_fit_init_weights(t, f, path, interp, skip, &nskip, err)) goto done;
    if (vg_params_load(&t->state_dict, f, "", strict, skip, e2, sizeof e2)) {
        char diff[400];
        if (vg_vit_config_diff(f, &t->model.cfg, diff, sizeof diff))
            snprintf(err, ERRLEN, "%.300s: a checkpoint of another model: %.300s; %.380s", path, diff, e2);
        else snprintf(err, ERRLEN, "%.400s: %.600s", path, e2);
        goto done;
    }
    rc = 0;
done:
    vg_st_close(f);
    vg_arena_reset();
    return rc;
}


int trainer_config_from_state(const char *path, options *o, char *err) {
    vg_st_file *f = vg_st_open(path, err, ERRLEN);
    if (!f) return -1;
    int rc = vg_vit_config_from_meta(f, &o->vit, path, err, ERRLEN);
    const char *ds = vg_st_meta(f, "dataset");
    if (!rc && ds && strcmp(ds, o->dataset)) {
        snprintf(err, ERRLEN, "%.400s: saved by a run on --dataset %.100s, resumed with --dataset %.100s "
                 "(to start from its weights on another dataset: --init)", path, ds, o->dataset);
        rc = -1;
    }
    vg_st_close(f);
    return rc;
}
