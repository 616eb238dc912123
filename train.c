/* train.c — train a Vision Transformer: ./train --help.
 *
 * One training step: batch from the background loader → ViT forward (train mode) → cross-entropy
 * (label smoothing) → backward → global-norm clip → AdamW at the scheduled lr → arena reset.
 * Checkpoints are safetensors pairs switched atomically (checkpoint/); resume restores weights,
 * AdamW moments, step, the dropout RNG and the loader position, so a resumed run continues with
 * exactly the same numbers as an uninterrupted one. */
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include "data/data.h"
#include "optim/optim.h"
#include "vit/vit.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ERRLEN 1024

/* ------------------------------------------------------------------ options */
typedef struct {
    const char *dataset, *data, *model, *out, *resume, *init;
    vg_vit_config vit;
    int epochs; int64_t steps;
    int batch;
    double lr, wd, min_lr, label_smoothing, clip;
    double warmup;               /* < 0: default (10% of training) */
    enum { UNIT_DEFAULT, UNIT_STEPS, UNIT_EPOCHS } warmup_unit;
    int64_t eval_every, save_every, log_every; bool every_in_steps;
    uint64_t seed;
    int threads, loader_threads;
    bool eval_only, trace_shapes, profile, full_last_block;
    int bench;
    int64_t stop_at;
    vg_interp_mode interp;
    const char *aug;
} options;

static void usage(FILE *f) {
    fprintf(f,
"usage: ./train [FLAGS]\n"
"Train a Vision Transformer (timm layout) with AdamW, warmup + cosine, label smoothing.\n\n"
"data\n"
"  --dataset NAME       cifar10 | imagefolder | fashion-mnist            (default cifar10)\n"
"  --data DIR           dataset folder (default: $CIFAR10_DIR, ./data/cifar-10-batches-bin,\n"
"                       ../shared/data/cifar-10-batches-bin; fashion-mnist: $FASHION_MNIST_DIR,\n"
"                       /usr/share/datasets/fashion-mnist; imagefolder: $IMAGENET_SUBSET_DIR,\n"
"                       ../shared/data/imagenet-subset)\n"
"  --aug KIND           auto | none | crop | rrc  (crop = 4-px pad + random crop, rrc =\n"
"                       random-resized-crop; both with horizontal flip)      (default auto)\n"
"model\n"
"  --model PRESET       vit-tiny-cifar | vit-micro-cifar | vit-mnist | vit-tiny-in64\n"
"                       (default: vit-tiny-cifar; vit-mnist for fashion-mnist; vit-tiny-in64\n"
"                       for imagefolder)\n"
"  --img-size N --patch N --dim N --depth N --heads N --mlp-ratio X\n"
"  --pool cls|mean --pos learned|sincos2d --drop P --attn-drop P    override the preset\n"
"schedule\n"
"  --epochs N           epochs to train (default 30)\n"
"  --steps N            train N steps instead of whole epochs\n"
"  --batch N            batch size (default 128)\n"
"  --lr X               peak learning rate (default 1e-3)\n"
"  --wd X               AdamW weight decay (default 0.05)\n"
"  --warmup N[s|e]      linear warmup, in epochs with --epochs, in steps with --steps;\n"
"                       a suffix 's' or 'e' says which (default 10%% of training)\n"
"  --min-lr X           cosine decays to this (default 1e-5)\n"
"  --label-smoothing X  (default 0.1)\n"
"  --clip X             clip the global gradient norm to X; 0 = off (default 1.0)\n"
"  --seed N             seeds init, shuffling, augmentation, dropout (default 0)\n"
"  --threads N          compute threads (default: all cores)\n"
"  --loader-threads N   background data threads (default 1)\n"
"output\n"
"  --out DIR            metrics.csv, checkpoints (default runs/last)\n"
"  --eval-every N       evaluate every N epochs (steps with --steps) (default 1; 0 = only at end)\n"
"  --save-every N       checkpoint every N epochs (steps with --steps) (default 1; 0 = only at end)\n"
"  --log-every N        log line / metrics row every N steps (default 50)\n"
"  --stop-at N          save a checkpoint and stop after step N, as if interrupted (the\n"
"                       schedule still spans --epochs/--steps; continue with --resume)\n"
"  --resume PATH        continue a run: an OUT dir, a checkpoint dir or its .safetensors file\n"
"  --init FILE          start from these weights only (model.safetensors); the position\n"
"                       embedding is interpolated if the resolution differs\n"
"  --interp bicubic|bilinear   position-embedding interpolation (default bicubic)\n"
"  --eval-only          evaluate (--init or --resume weights) on the test split and exit\n"
"  --trace-shapes       print the shape flow of one forward pass and exit\n"
"  --bench N            time N training steps on random data; print median step ms,\n"
"                       images/s and GFLOP/s, then exit\n"
"  --profile            with --bench: also print where each step's wall time goes, by op\n"
"                       (forward and backward, per input and output shapes) and phase\n"
"  --full-last-block    compute every token in the last block, as timm does (with CLS\n"
"                       pooling only the class token's output is read, so by default the\n"
"                       last block computes that token alone: the same results, less work);\n"
"                       for timing against PyTorch on equal work\n"
"  --help               this text\n");
}

/* usage error naming the flag: exit status 2 */
static void bad_flag(const char *flag, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    fprintf(stderr, "train: %s: ", flag);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see ./train --help)\n");
    va_end(ap);
    exit(2);
}

static int64_t parse_int(const char *flag, const char *v, int64_t lo, int64_t hi) {
    char *end; errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end) bad_flag(flag, "expected an integer, got '%s'", v);
    if (x < lo || x > hi) bad_flag(flag, "%lld is out of range [%lld, %lld]", x, (long long)lo, (long long)hi);
    return x;
}

static double parse_real(const char *flag, const char *v, double lo, double hi) {
    char *end; errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x)) bad_flag(flag, "expected a number, got '%s'", v);
    if (x < lo || x > hi) bad_flag(flag, "%g is out of range [%g, %g]", x, lo, hi);
    return x;
}

static options parse_args(int argc, char **argv) {
    options o = {0};
    o.dataset = "cifar10"; o.out = "runs/last"; o.epochs = 30; o.batch = 128;
    o.lr = 1e-3; o.wd = 0.05; o.min_lr = 1e-5; o.label_smoothing = 0.1; o.clip = 1.0;
    o.warmup = -1; o.eval_every = 1; o.save_every = 1; o.log_every = 50;
    o.threads = 0; o.loader_threads = 1; o.interp = VG_INTERP_BICUBIC; o.aug = "auto";
    /* model overrides are applied after the preset: remember them */
    const char *ov_img = NULL, *ov_patch = NULL, *ov_dim = NULL, *ov_depth = NULL, *ov_heads = NULL,
               *ov_mlp = NULL, *ov_pool = NULL, *ov_pos = NULL, *ov_drop = NULL, *ov_adrop = NULL;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) { usage(stdout); exit(0); }
        bool is_switch = !strcmp(f, "--eval-only") || !strcmp(f, "--trace-shapes") || !strcmp(f, "--profile") ||
                         !strcmp(f, "--full-last-block");
        if (is_switch) {
            if (!strcmp(f, "--eval-only")) o.eval_only = true;
            else if (!strcmp(f, "--profile")) o.profile = true;
            else if (!strcmp(f, "--full-last-block")) o.full_last_block = true;
            else o.trace_shapes = true;
            continue;
        }
        if (strncmp(f, "--", 2)) bad_flag(f, "unexpected argument (flags start with --)");
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        #define FLAG(name) (!strcmp(f, name) && (v ? 1 : (bad_flag(f, "needs a value"), 0)) && (++i, 1))
        if (FLAG("--dataset")) {
            if (strcmp(v, "cifar10") && strcmp(v, "imagefolder") && strcmp(v, "fashion-mnist") && strcmp(v, "mnist"))
                bad_flag(f, "unknown dataset '%s' (cifar10, imagefolder, fashion-mnist)", v);
            o.dataset = v;
        }
        else if (FLAG("--data")) o.data = v;
        else if (FLAG("--aug")) {
            if (strcmp(v, "auto") && strcmp(v, "none") && strcmp(v, "crop") && strcmp(v, "rrc")) bad_flag(f, "unknown augmentation '%s'", v);
            o.aug = v;
        }
        else if (FLAG("--model")) o.model = v;
        else if (FLAG("--img-size")) ov_img = v;
        else if (FLAG("--patch")) ov_patch = v;
        else if (FLAG("--dim")) ov_dim = v;
        else if (FLAG("--depth")) ov_depth = v;
        else if (FLAG("--heads")) ov_heads = v;
        else if (FLAG("--mlp-ratio")) ov_mlp = v;
        else if (FLAG("--pool")) ov_pool = v;
        else if (FLAG("--pos")) ov_pos = v;
        else if (FLAG("--drop")) ov_drop = v;
        else if (FLAG("--attn-drop")) ov_adrop = v;
        else if (FLAG("--epochs")) o.epochs = (int)parse_int(f, v, 1, 100000);
        else if (FLAG("--steps")) o.steps = parse_int(f, v, 1, INT64_MAX / 4);
        else if (FLAG("--batch")) o.batch = (int)parse_int(f, v, 1, 65536);
        else if (FLAG("--lr")) o.lr = parse_real(f, v, 0, 10);
        else if (FLAG("--wd")) o.wd = parse_real(f, v, 0, 10);
        else if (FLAG("--min-lr")) o.min_lr = parse_real(f, v, 0, 10);
        else if (FLAG("--label-smoothing")) o.label_smoothing = parse_real(f, v, 0, 0.999);
        else if (FLAG("--clip")) o.clip = parse_real(f, v, 0, 1e9);
        else if (FLAG("--warmup")) {             /* N, Ns (steps) or Ne (epochs) */
            char buf[64]; snprintf(buf, sizeof buf, "%s", v);
            size_t n = strlen(buf);
            o.warmup_unit = UNIT_DEFAULT;
            if (n && (buf[n - 1] == 's' || buf[n - 1] == 'e')) { o.warmup_unit = buf[n - 1] == 's' ? UNIT_STEPS : UNIT_EPOCHS; buf[n - 1] = 0; }
            o.warmup = parse_real(f, buf, 0, 1e12);
        }
        else if (FLAG("--seed")) o.seed = (uint64_t)parse_int(f, v, 0, INT64_MAX);
        else if (FLAG("--threads")) o.threads = (int)parse_int(f, v, 1, 1024);
        else if (FLAG("--loader-threads")) o.loader_threads = (int)parse_int(f, v, 0, 64);
        else if (FLAG("--eval-every")) o.eval_every = parse_int(f, v, 0, INT64_MAX / 4);
        else if (FLAG("--save-every")) o.save_every = parse_int(f, v, 0, INT64_MAX / 4);
        else if (FLAG("--log-every")) o.log_every = parse_int(f, v, 1, INT64_MAX / 4);
        else if (FLAG("--out")) o.out = v;
        else if (FLAG("--resume")) o.resume = v;
        else if (FLAG("--init")) o.init = v;
        else if (FLAG("--interp")) {
            if (!strcmp(v, "bicubic")) o.interp = VG_INTERP_BICUBIC;
            else if (!strcmp(v, "bilinear")) o.interp = VG_INTERP_BILINEAR;
            else bad_flag(f, "expected bicubic or bilinear, got '%s'", v);
        }
        else if (FLAG("--stop-at")) o.stop_at = parse_int(f, v, 1, INT64_MAX / 4);
        else if (FLAG("--bench")) o.bench = (int)parse_int(f, v, 1, 100000);
        else bad_flag(f, "unknown flag");
        #undef FLAG
    }
    if (o.resume && o.init) bad_flag("--init", "cannot be combined with --resume");
    if (o.profile && !o.bench) bad_flag("--profile", "needs --bench N (it profiles the benchmark's steps)");
    /* the model: preset by dataset unless named */
    if (!o.model) o.model = !strcmp(o.dataset, "fashion-mnist") || !strcmp(o.dataset, "mnist") ? "vit-mnist"
                          : !strcmp(o.dataset, "imagefolder") ? "vit-tiny-in64" : "vit-tiny-cifar";
    if (!vg_vit_preset(o.model, &o.vit)) {
        char names[256] = "";
        for (int k = 0; vg_vit_preset_names[k]; k++) { strcat(names, k ? ", " : ""); strcat(names, vg_vit_preset_names[k]); }
        bad_flag("--model", "unknown preset '%s' (%s)", o.model, names);
    }
    if (ov_img) o.vit.img_size = (int)parse_int("--img-size", ov_img, 1, 4096);
    if (ov_patch) o.vit.patch_size = (int)parse_int("--patch", ov_patch, 1, 4096);
    if (ov_dim) o.vit.embed_dim = (int)parse_int("--dim", ov_dim, 1, 65536);
    if (ov_depth) o.vit.depth = (int)parse_int("--depth", ov_depth, 0, 1000);
    if (ov_heads) o.vit.num_heads = (int)parse_int("--heads", ov_heads, 1, 1024);
    if (ov_mlp) o.vit.mlp_ratio = parse_real("--mlp-ratio", ov_mlp, 0.01, 64);
    if (ov_drop) o.vit.drop_rate = parse_real("--drop", ov_drop, 0, 0.99);
    if (ov_adrop) o.vit.attn_drop_rate = parse_real("--attn-drop", ov_adrop, 0, 0.99);
    if (ov_pool) {
        if (!strcmp(ov_pool, "cls")) o.vit.pool = VG_VIT_POOL_CLS;
        else if (!strcmp(ov_pool, "mean")) o.vit.pool = VG_VIT_POOL_MEAN;
        else bad_flag("--pool", "expected cls or mean, got '%s'", ov_pool);
    }
    if (ov_pos) {
        if (!strcmp(ov_pos, "learned")) o.vit.pos_embed = VG_VIT_POS_LEARNED;
        else if (!strcmp(ov_pos, "sincos2d")) o.vit.pos_embed = VG_VIT_POS_SINCOS2D;
        else bad_flag("--pos", "expected learned or sincos2d, got '%s'", ov_pos);
    }
    if (!vg_vit_config_check(&o.vit)) bad_flag("--model", "invalid model configuration: %s", vg_error());
    if (o.min_lr > o.lr) bad_flag("--min-lr", "%g is above --lr %g", o.min_lr, o.lr);
    o.every_in_steps = o.steps > 0;
    return o;
}

/* ------------------------------------------------------------------ small utilities */
static double now_s(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bool dir_exists(const char *p) { struct stat st; return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode); }

static const char *default_data_dir(const char *dataset) {
    const char *env = NULL, *cands[3] = {NULL, NULL, NULL};
    if (!strcmp(dataset, "cifar10")) {
        env = getenv("CIFAR10_DIR");
        cands[0] = "data/cifar-10-batches-bin"; cands[1] = "../shared/data/cifar-10-batches-bin";
    } else if (!strcmp(dataset, "imagefolder")) {
        env = getenv("IMAGENET_SUBSET_DIR");
        cands[0] = "../shared/data/imagenet-subset";
    } else {
        env = getenv("FASHION_MNIST_DIR");
        cands[0] = "/usr/share/datasets/fashion-mnist";
    }
    if (env && *env) return env;
    for (int i = 0; i < 3; i++) if (cands[i] && dir_exists(cands[i])) return cands[i];
    return cands[0];
}

static int mkdir_p(const char *path) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) if (*p == '/') { *p = 0; mkdir(buf, 0755); *p = '/'; }
    if (mkdir(buf, 0755) && errno != EEXIST) return -1;
    return 0;
}

static long peak_rss_mib(void) { struct rusage r; getrusage(RUSAGE_SELF, &r); return r.ru_maxrss / 1024; }

/* the batch as an arena tensor */
static vg_tensor *batch_tensor(const vg_batch *b) {
    return vg_from_array(VG_DIMS(b->n, b->c, b->h, b->w), b->x);
}

/* ------------------------------------------------------------------ the model config as metadata */
/* ------------------------------------------------------------------ training state */
typedef struct {
    vg_vit model;
    vg_params params;           /* trainable (optimizer order) */
    vg_params state_dict;       /* every tensor saved in model.safetensors */
    vg_adamw *opt;
    vg_rng dropout_rng;
    int64_t step;
    double wall_offset;         /* training seconds before this process (resume) */
} trainer;

static void rng_to_i64(const vg_rng *r, int64_t out[4]) { memcpy(out, r->s, sizeof r->s); }
static void rng_from_i64(vg_rng *r, const int64_t in[4]) { memcpy(r->s, in, sizeof r->s); }

static int save_checkpoint(trainer *t, const options *o, const vg_lr_schedule *sched, vg_loader *loader, double wall, char *err) {
    vg_st_writer *mw = vg_st_writer_new(), *sw = vg_st_writer_new();
    int rc = -1;
    char v[64];
    int64_t step = t->step, rng[4], lrng[4], lpos[2];
    vg_loader_state ls = vg_loader_state_get(loader);
    rng_to_i64(&t->dropout_rng, rng);
    rng_to_i64(&ls.rng, lrng);
    lpos[0] = (int64_t)ls.epoch; lpos[1] = (int64_t)ls.index;
    if (vg_params_to_writer(&t->state_dict, mw, err, ERRLEN)) goto done;
    vg_vit_config_to_meta(&t->model.cfg, mw, err, ERRLEN);
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
        vg_st_writer_add(sw, "loader.rng", VG_ST_I64, 1, &four, lrng, 32, err, ERRLEN)) goto done;
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
    };
    for (size_t k = 0; k < sizeof hyper / sizeof hyper[0]; k++) {
        snprintf(v, sizeof v, "%.17g", hyper[k].value);
        vg_st_writer_meta(sw, hyper[k].key, v, err, ERRLEN);
    }
    vg_st_writer_meta(sw, "train.aug", o->aug, err, ERRLEN);
    rc = vg_checkpoint_save(o->out, t->step, mw, sw, err, ERRLEN);
done:
    vg_st_writer_free(mw); vg_st_writer_free(sw);
    return rc;
}

static int read_i64s(const vg_st_file *f, const char *name, int64_t *out, size_t n, const char *path, char *err) {
    char e2[ERRLEN];
    if (vg_st_read_i64(f, name, out, n, e2, sizeof e2)) { snprintf(err, ERRLEN, "%.400s: %.600s", path, e2); return -1; }
    return 0;
}

/* restore optimizer, step, dropout RNG and loader position from a train_state file */
static int load_train_state(trainer *t, const char *path, vg_loader_state *ls, int batch, char *err) {
    char e2[ERRLEN];
    vg_st_file *f = vg_st_open(path, err, ERRLEN);
    if (!f) return -1;
    int rc = -1;
    const char *fmt = vg_st_meta(f, "format");
    if (!fmt || strcmp(fmt, "vitgrad-train-state/1")) { snprintf(err, ERRLEN, "%.400s: not a vitgrad train state (format %.100s)", path, fmt ? fmt : "missing"); goto done; }
    const char *b = vg_st_meta(f, "batch");
    if (b && atoi(b) != batch) { snprintf(err, ERRLEN, "%.400s: saved with --batch %.20s, resumed with --batch %d (the loader position would not match)", path, b, batch); goto done; }
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
    rc = 0;
done:
    vg_st_close(f);
    return rc;
}

/* load weights from a model.safetensors; resize pos_embed when its grid differs from the model's */
static int load_weights(trainer *t, const char *path, vg_interp_mode interp, bool strict, char *err) {
    char e2[ERRLEN];
    vg_st_file *f = vg_st_open(path, err, ERRLEN);
    if (!f) return -1;
    int rc = -1;
    const vg_st_tensor *pe = vg_st_find(f, "pos_embed");
    const char *skip[2] = {NULL, NULL};
    int64_t D = t->model.cfg.embed_dim, want_rows = (int64_t)vg_vit_num_patches(&t->model.cfg) + 1;
    if (pe && pe->ndim == 3 && pe->shape[2] == D && pe->shape[1] != want_rows) {
        int64_t n = pe->shape[1] - 1, g = (int64_t)llround(sqrt((double)n));
        if (g * g != n) { snprintf(err, ERRLEN, "%.400s: pos_embed has %lld patch rows, not a square grid", path, (long long)n); goto done; }
        vg_tensor *src = vg_empty(VG_DIMS(1, pe->shape[1], D));
        if (vg_st_read_tensor(f, "pos_embed", src, e2, sizeof e2)) { snprintf(err, ERRLEN, "%.1000s", e2); goto done; }
        vg_tensor *r = vg_resize_pos_embed(src, (int)g, (int)g, t->model.grid_h, t->model.grid_w, interp);
        if (!r) { snprintf(err, ERRLEN, "%.400s: resizing pos_embed: %.500s", path, vg_error()); goto done; }
        vg_copy_raw(t->model.pos_embed, r);
        printf("pos_embed: resized %lldx%lld -> %dx%d (%s)\n", (long long)g, (long long)g, t->model.grid_h, t->model.grid_w,
               interp == VG_INTERP_BICUBIC ? "bicubic" : "bilinear");
        skip[0] = "pos_embed";
    }
    if (vg_params_load(&t->state_dict, f, "", strict, skip, e2, sizeof e2)) { snprintf(err, ERRLEN, "%.400s: %.600s", path, e2); goto done; }
    rc = 0;
done:
    vg_st_close(f);
    vg_arena_reset();
    return rc;
}

/* ------------------------------------------------------------------ evaluation */
typedef struct { double loss, acc; int64_t n; int64_t *confusion; int classes; } eval_result;

static eval_result evaluate(trainer *t, const vg_dataset *test, int batch, int loader_threads, char *err, bool *ok) {
    eval_result r = {0};
    r.classes = t->model.cfg.num_classes;
    r.confusion = calloc((size_t)r.classes * (size_t)r.classes, sizeof(int64_t));
    vg_loader_config lc = vg_loader_config_default();
    lc.train = 0; lc.batch_size = batch; lc.image_size = t->model.cfg.img_size; lc.n_threads = loader_threads;
    vg_loader *L = vg_loader_new(test, &lc, err, ERRLEN);
    *ok = L != NULL;
    if (!L) return r;
    vg_batch b;
    double loss_sum = 0; int64_t correct = 0;
    vg_no_grad_begin();
    while (vg_loader_next(L, &b) == 1) {
        vg_tensor *logits = vg_vit_forward(&t->model, batch_tensor(&b), false, NULL);
        vg_tensor *loss = vg_cross_entropy_fn(logits, b.y, 0.0);
        if (!loss) { snprintf(err, ERRLEN, "evaluation: %.900s", vg_error()); *ok = false; break; }
        loss_sum += (double)vg_item(loss) * b.n;
        const real *lp = vg_data(logits);
        for (int i = 0; i < b.n; i++) {
            int best = 0;
            for (int c = 1; c < r.classes; c++) if (lp[i * r.classes + c] > lp[i * r.classes + best]) best = c;
            r.confusion[b.y[i] * r.classes + best]++;
            correct += best == b.y[i];
        }
        r.n += b.n;
        vg_arena_reset();
    }
    vg_no_grad_end();
    vg_loader_free(L);
    r.loss = r.n ? loss_sum / (double)r.n : NAN;
    r.acc = r.n ? (double)correct / (double)r.n : NAN;
    return r;
}

static void print_eval_report(const eval_result *r, const vg_dataset *d, FILE *f) {
    fprintf(f, "test top-1: %.2f%% (%lld images), test loss %.4f\n", 100 * r->acc, (long long)r->n, r->loss);
    fprintf(f, "per-class accuracy:\n");
    for (int c = 0; c < r->classes; c++) {
        int64_t tot = 0;
        for (int k = 0; k < r->classes; k++) tot += r->confusion[c * r->classes + k];
        const char *name = d->class_descr && d->class_descr[c] && d->class_descr[c][0] ? d->class_descr[c]
                         : d->class_names ? d->class_names[c] : "";
        fprintf(f, "  %2d %-20.20s %6.2f%%  (%lld)\n", c, name, tot ? 100.0 * (double)r->confusion[c * r->classes + c] / (double)tot : 0.0, (long long)tot);
    }
    fprintf(f, "confusion matrix (rows: true class, columns: predicted):\n     ");
    for (int k = 0; k < r->classes; k++) fprintf(f, "%6d", k);
    fputc('\n', f);
    for (int c = 0; c < r->classes; c++) {
        fprintf(f, "  %2d ", c);
        for (int k = 0; k < r->classes; k++) fprintf(f, "%6lld", (long long)r->confusion[c * r->classes + k]);
        fputc('\n', f);
    }
}

/* ------------------------------------------------------------------ one training step */
/* returns the loss; *correct gets the batch's top-1 hits; NAN loss is reported by the caller */
static double train_step(trainer *t, const options *o, const vg_batch *b, double lr, int64_t *correct, double *gnorm) {
    vg_profile_step_begin();                        /* no-op unless --profile */
    vg_tensor *x = batch_tensor(b);
    vg_profile_phase("batch to tensor");
    vg_tensor *logits = vg_vit_forward(&t->model, x, true, &t->dropout_rng);
    vg_tensor *loss = vg_cross_entropy_fn(logits, b->y, o->label_smoothing);
    if (!loss) { fprintf(stderr, "train: step %lld: %s\n", (long long)t->step, vg_error()); exit(1); }
    double lv = (double)vg_item(loss);
    *correct = vg_top1_correct(logits, b->y);
    vg_profile_phase("loss value, top-1");
    /* test hook: VG_TEST_NAN_AT_STEP=N makes the loss of step N (1-based) NaN */
    const char *nan_at = getenv("VG_TEST_NAN_AT_STEP");
    if (nan_at && atoll(nan_at) == t->step + 1) lv = NAN;
    if (!isfinite(lv)) { vg_profile_step_end(); return lv; }
    vg_params_zero_grad(&t->params);
    vg_profile_phase("zero_grad");
    if (!vg_backward(loss, NULL)) { fprintf(stderr, "train: backward: %s\n", vg_error()); exit(1); }
    vg_profile_phase("backward: engine");
    *gnorm = vg_clip_grad_norm(&t->params, o->clip);
    vg_profile_phase("clip grad norm");
    if (!isfinite(*gnorm)) { vg_profile_step_end(); return NAN; }
    vg_adamw_step(t->opt, lr);
    vg_profile_phase("AdamW");
    t->step++;
    vg_arena_reset();
    vg_profile_step_end();
    return lv;
}

/* ------------------------------------------------------------------ --bench */
static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

static int run_bench(trainer *t, const options *o) {
    const vg_vit_config *c = &t->model.cfg;
    vg_rng r = vg_rng_seed(o->seed);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)o->batch);
    real *pix = malloc(sizeof(real) * (size_t)o->batch * (size_t)(c->in_chans * c->img_size * c->img_size));
    for (int i = 0; i < o->batch; i++) labels[i] = (int32_t)vg_rng_below(&r, (uint32_t)c->num_classes);
    for (int64_t i = 0; i < (int64_t)o->batch * c->in_chans * c->img_size * c->img_size; i++) pix[i] = (real)vg_rng_normal(&r);
    vg_batch b = {o->batch, c->in_chans, c->img_size, c->img_size, pix, labels, 0, 0};
    int warm = 2, n = o->bench;
    double *ms = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < warm + n; i++) {
        int64_t correct; double gn;
        if (o->profile && i == warm && !vg_profile_start(n)) { fprintf(stderr, "train: --profile: out of memory\n"); return 1; }
        double t0 = now_s();
        train_step(t, o, &b, 1e-4, &correct, &gn);
        if (i >= warm) ms[i - warm] = (now_s() - t0) * 1e3;
    }
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    double med = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    double ips = o->batch / (med / 1e3);
    const double flops = 3 * vg_vit_forward_flops_done(&t->model);      /* what a step computes */
    printf("bench: model %s batch %d threads %d%s: median step %.1f ms (min %.1f, max %.1f), %.1f images/s, "
           "%.1f GFLOP/s (%.4f GFLOP per image per step; timm's model %.4f), peak RSS %ld MiB\n",
           o->model, o->batch, omp_get_max_threads(), t->model.full_last_block ? " full last block" : "",
           med, ms[0], ms[n - 1], ips, flops * ips / 1e9, flops / 1e9, vg_vit_train_flops(c) / 1e9,
           peak_rss_mib());
    if (o->profile) { vg_profile_report(stdout); vg_profile_stop(); }
    free(ms); free(pix); free(labels);
    return 0;
}

/* ------------------------------------------------------------------ progress output */
static void progress(bool tty, int64_t step, int64_t total, int64_t epoch_step, int64_t epoch_steps, int epoch,
                     double ips, double loss, double lr, double eta) {
    if (tty) {
        int width = 24, filled = epoch_steps ? (int)(width * epoch_step / epoch_steps) : 0;
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
        bar[width] = 0;
        printf("\repoch %3d [%s] %5lld/%lld  step %lld/%lld  %6.0f img/s  loss %.4f  lr %.2e  ETA %02d:%02d:%02d ",
               epoch + 1, bar, (long long)epoch_step, (long long)epoch_steps, (long long)step, (long long)total, ips, loss, lr,
               (int)(eta / 3600), (int)fmod(eta / 60, 60), (int)fmod(eta, 60));
        fflush(stdout);
    } else {
        printf("step %lld/%lld epoch %d  loss %.4f  lr %.3e  %.0f img/s  ETA %.0f s\n",
               (long long)step, (long long)total, epoch + 1, loss, lr, ips, eta);
        fflush(stdout);
    }
}

/* ------------------------------------------------------------------ main */
/* What main owns, released on every exit path by finish(). */
static struct {
    trainer t; bool model_ready;
    vg_dataset *train, *test;
    vg_loader *loader;
    FILE *csv;
} run_state;

static int finish(int rc) {
    trainer *t = &run_state.t;
    if (run_state.csv) fclose(run_state.csv);
    vg_loader_free(run_state.loader);
    vg_dataset_free(run_state.train); vg_dataset_free(run_state.test);
    vg_adamw_free(t->opt);
    vg_params_free(&t->params); vg_params_free(&t->state_dict);
    if (run_state.model_ready) vg_vit_free(&t->model);
    vg_arena_free_all();
    return rc;
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    char err[ERRLEN];
    if (o.threads > 0) omp_set_num_threads(o.threads);
    trainer *t = &run_state.t;
    vg_rng init_rng = vg_rng_seed(o.seed);
    t->dropout_rng = vg_rng_seed(o.seed ^ 0x5eedd120u);

    /* resume: the model configuration comes from the checkpoint */
    char model_path[4096] = "", state_path[4096] = "";
    if (o.resume || o.init) {
        const char *p = o.resume ? o.resume : o.init;
        if (vg_checkpoint_resolve(p, model_path, state_path, sizeof model_path, err, sizeof err)) { fprintf(stderr, "train: %s\n", err); return finish(1); }
        if (o.resume) {
            if (!state_path[0]) { fprintf(stderr, "train: --resume %s: no train_state.safetensors next to %s\n", p, model_path); return finish(1); }
            vg_st_file *f = vg_st_open(state_path, err, sizeof err);
            if (!f || vg_vit_config_from_meta(f, &o.vit, state_path, err, ERRLEN)) { fprintf(stderr, "train: %s\n", err); vg_st_close(f); return finish(1); }
            vg_st_close(f);
        }
    }
    if (!vg_vit_init(&t->model, &o.vit, &init_rng)) { fprintf(stderr, "train: model: %s\n", vg_error()); return finish(1); }
    t->model.full_last_block = o.full_last_block;
    run_state.model_ready = true;
    vg_vit_params(&t->model, &t->params);
    vg_vit_state(&t->model, &t->state_dict);
    t->opt = vg_adamw_new(&t->params, o.wd);

    if (o.trace_shapes) {
        printf("model %s: %lld parameters\n", o.model, (long long)vg_vit_param_count(&t->model.cfg));
        return finish(vg_vit_trace(&t->model, 2, stdout) ? 0 : 1);
    }
    if (o.bench) return finish(run_bench(t, &o));
    if (model_path[0] && load_weights(t, model_path, o.interp, o.resume != NULL, err)) { fprintf(stderr, "train: %s\n", err); return finish(1); }

    /* data */
    const char *dir = o.data ? o.data : default_data_dir(o.dataset);
    vg_dataset *test = run_state.test = vg_dataset_open(o.dataset, dir, VG_SPLIT_TEST, err, sizeof err);
    if (!test) { fprintf(stderr, "train: %s\n", err); if (!strcmp(o.dataset, "cifar10")) fprintf(stderr, "(run `make data` to download CIFAR-10, or pass --data DIR)\n"); return finish(1); }
    if (test->n_classes != t->model.cfg.num_classes) {
        fprintf(stderr, "train: %s has %d classes, the model %d (pass a matching model)\n", dir, test->n_classes, t->model.cfg.num_classes);
        return finish(1);
    }
    if (test->channels != t->model.cfg.in_chans) {
        fprintf(stderr, "train: %s has %d-channel images, the model expects %d (choose a matching --model)\n", dir, test->channels, t->model.cfg.in_chans);
        return finish(1);
    }
    if (o.eval_only) {
        if (!model_path[0]) fprintf(stderr, "train: warning: --eval-only without --init/--resume evaluates a random model\n");
        bool ok; eval_result r = evaluate(t, test, 256, o.loader_threads, err, &ok);
        if (!ok) { fprintf(stderr, "train: %s\n", err); return finish(1); }
        print_eval_report(&r, test, stdout);
        free(r.confusion);
        return finish(0);
    }
    vg_dataset *train = run_state.train = vg_dataset_open(o.dataset, dir, VG_SPLIT_TRAIN, err, sizeof err);
    if (!train) { fprintf(stderr, "train: %s\n", err); return finish(1); }
    vg_loader_config lc = vg_loader_config_default();
    lc.batch_size = o.batch; lc.train = 1; lc.image_size = t->model.cfg.img_size;
    lc.n_threads = o.loader_threads; lc.seed = o.seed;
    lc.aug = !strcmp(o.aug, "none") ? VG_AUG_NONE : !strcmp(o.aug, "crop") ? VG_AUG_PAD_CROP : !strcmp(o.aug, "rrc") ? VG_AUG_RRC : VG_AUG_AUTO;
    vg_loader *loader = run_state.loader = vg_loader_new(train, &lc, err, sizeof err);
    if (!loader) { fprintf(stderr, "train: %s\n", err); return finish(1); }
    int64_t per_epoch = vg_loader_batches_per_epoch(loader);
    if (per_epoch < 1) { fprintf(stderr, "train: %s: %d training images is less than one batch of %d\n", dir, train->n, o.batch); return finish(1); }
    int64_t total = o.steps > 0 ? o.steps : per_epoch * o.epochs;
    /* --warmup counts epochs when training by --epochs, steps with --steps, unless a suffix says */
    int64_t warmup;
    bool warmup_epochs = o.warmup_unit == UNIT_EPOCHS || (o.warmup_unit == UNIT_DEFAULT && o.steps == 0);
    if (o.warmup < 0) warmup = total / 10;
    else warmup = (int64_t)llround(warmup_epochs ? o.warmup * (double)per_epoch : o.warmup);
    vg_lr_schedule sched = {o.lr, o.min_lr, warmup, total};
    int64_t unit = o.every_in_steps ? 1 : per_epoch;       /* --eval-every / --save-every unit */

    if (state_path[0] && o.resume) {
        vg_loader_state ls;
        if (load_train_state(t, state_path, &ls, o.batch, err) || vg_loader_state_set(loader, &ls, err, sizeof err)) {
            fprintf(stderr, "train: %s\n", err); return finish(1);
        }
        printf("resumed from %s at step %lld\n", state_path, (long long)t->step);
    }
    if (mkdir_p(o.out)) { fprintf(stderr, "train: %s: cannot create the output directory: %s\n", o.out, strerror(errno)); return finish(1); }
    char csv_path[2100];
    snprintf(csv_path, sizeof csv_path, "%s/metrics.csv", o.out);
    FILE *csv = run_state.csv = fopen(csv_path, t->step > 0 ? "a" : "w");
    if (!csv) { fprintf(stderr, "train: %s: %s\n", csv_path, strerror(errno)); return finish(1); }
    if (t->step == 0) fprintf(csv, "step,epoch,loss,lr,train_acc,test_loss,test_acc,images_per_s,wall_s\n");

    bool tty = isatty(STDOUT_FILENO);
    printf("training %s (%lld parameters) on %s: %d train / %d test images, %lld steps (%lld per epoch), "
           "batch %d, lr %g, warmup %lld steps, %d threads\n",
           o.model, (long long)vg_vit_param_count(&t->model.cfg), dir, train->n, test->n, (long long)total,
           (long long)per_epoch, o.batch, o.lr, (long long)warmup, omp_get_max_threads());
    double t_start = now_s(), t_log = t_start;
    int64_t last_saved = -1, log_n = 0, log_correct = 0, log_images = 0;
    double log_loss = 0;
    char last_ckpt[2200] = "";
    vg_batch b;
    while (t->step < total) {
        if (vg_loader_next(loader, &b) != 1) continue;      /* epoch boundary */
        double lr = vg_lr_at(&sched, t->step);
        int64_t correct; double gnorm = 0;
        double loss = train_step(t, &o, &b, lr, &correct, &gnorm);
        if (!isfinite(loss)) {
            if (tty) printf("\n");
            fprintf(stderr, "train: step %lld: the loss is %s (gradient norm %g); stopping. ", (long long)t->step + 1,
                    isnan(loss) ? "NaN" : "infinite", gnorm);
            if (last_ckpt[0]) fprintf(stderr, "The last good checkpoint is %s (step %lld), untouched.\n", last_ckpt, (long long)last_saved);
            else fprintf(stderr, "No checkpoint was saved in this run.\n");
            fprintf(stderr, "Try a lower --lr, a smaller --clip, or a longer --warmup.\n");
            return finish(3);
        }
        log_loss += loss; log_correct += correct; log_images += b.n; log_n++;
        int64_t epoch = (t->step - 1) / per_epoch;
        bool epoch_end = t->step % per_epoch == 0 || t->step == total;
        double wall = t->wall_offset + now_s() - t_start;
        if (t->step % o.log_every == 0 || epoch_end) {
            double ips = log_images / (now_s() - t_log);
            double eta = (now_s() - t_log) / (double)log_n * (double)(total - t->step);
            progress(tty, t->step, total, (t->step - 1) % per_epoch + 1, per_epoch, (int)epoch, ips, log_loss / (double)log_n, lr, eta);
            fprintf(csv, "%lld,%.4f,%.6f,%.6e,%.4f,,,%.1f,%.1f\n", (long long)t->step, (double)t->step / (double)per_epoch,
                    log_loss / (double)log_n, lr, (double)log_correct / (double)log_images, ips, wall);
            fflush(csv);
            log_n = 0; log_loss = 0; log_correct = 0; log_images = 0; t_log = now_s();
        }
        bool at_unit = t->step % unit == 0;
        bool do_eval = t->step == total || (o.eval_every > 0 && at_unit && (t->step / unit) % o.eval_every == 0);
        bool stop_now = o.stop_at > 0 && t->step == o.stop_at;
        bool do_save = t->step == total || stop_now || (o.save_every > 0 && at_unit && (t->step / unit) % o.save_every == 0);
        if (do_eval) {
            if (tty) printf("\n");
            bool ok; eval_result r = evaluate(t, test, 256, o.loader_threads, err, &ok);
            if (!ok) { fprintf(stderr, "train: %s\n", err); return finish(1); }
            printf("step %lld (epoch %.2f): test loss %.4f, test top-1 %.2f%%, wall %.0f s\n", (long long)t->step,
                   (double)t->step / (double)per_epoch, r.loss, 100 * r.acc, wall);
            fprintf(csv, "%lld,%.4f,,,,%.6f,%.4f,,%.1f\n", (long long)t->step, (double)t->step / (double)per_epoch, r.loss, r.acc, wall);
            fflush(csv);
            if (t->step == total) {
                print_eval_report(&r, test, stdout);
                char cpath[2100];
                snprintf(cpath, sizeof cpath, "%s/confusion.txt", o.out);
                FILE *cf = fopen(cpath, "w");
                if (cf) { print_eval_report(&r, test, cf); fclose(cf); }
            }
            free(r.confusion);
            t_log = now_s();
        }
        if (do_save) {
            if (save_checkpoint(t, &o, &sched, loader, wall, err)) { fprintf(stderr, "train: checkpoint: %s\n", err); return finish(1); }
            last_saved = t->step;
            snprintf(last_ckpt, sizeof last_ckpt, "%s/checkpoints/step-%08lld", o.out, (long long)t->step);
            t_log = now_s();
        }
        if (stop_now) { printf("stopped after step %lld (--stop-at); continue with --resume %s\n", (long long)t->step, o.out); break; }
    }
    double wait = vg_loader_wait_seconds(loader), total_s = now_s() - t_start;
    printf("done: %lld steps in %.1f s; data-loader wait %.2f s (%.2f%% of the time); peak RSS %ld MiB\n",
           (long long)t->step, total_s, wait, total_s > 0 ? 100 * wait / total_s : 0.0, peak_rss_mib());
    printf("weights: %s/model.safetensors\n", o.out);
    return finish(0);
}
