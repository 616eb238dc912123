/* inspect_common.c — see inspect_common.h. */
#include "inspect_common.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/data_meta.h"
#include "checkpoint/model_meta.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ic_take(const char *cmd, int argc, char **argv, int *i, const char *flag, const char **val) {
    if (strcmp(argv[*i], flag)) return 0;
    if (*i + 1 >= argc) { fprintf(stderr, "inspect %s: %s needs a value\n", cmd, flag); return -1; }
    *val = argv[++*i];
    return 1;
}
void ic_print_presets(FILE *f) {
    fputs("  PRESET:", f);
    for (int i = 0; vg_vit_preset_names[i]; i++) fprintf(f, "%s %s", i ? " |" : "", vg_vit_preset_names[i]);
    fputc('\n', f);
}

bool ic_is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

bool ic_int(const char *cmd, const char *flag, const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "inspect %s: %s: expected an integer in %d..%d, got '%s'\n", cmd, flag, lo, hi, s);
        return false;
    }
    *out = (int)v;
    return true;
}
bool ic_int_pair(const char *cmd, const char *flag, const char *s, int *a, int *b) {
    char *end, *end2;
    long x = strtol(s, &end, 10);
    if (end == s || *end != ',') goto bad;
    long y = strtol(end + 1, &end2, 10);
    if (end2 == end + 1 || *end2 || x < 0 || y < 0 || x > 100000 || y > 100000) goto bad;
    *a = (int)x; *b = (int)y;
    return true;
bad:
    fprintf(stderr, "inspect %s: %s: expected ROW,COL (two non-negative integers), got '%s'\n", cmd, flag, s);
    return false;
}

int ic_model_load(const char *ckpt, ic_model *out, char *err, size_t errlen) {
    char model_path[4096], state_path[4096];
    memset(out, 0, sizeof *out);
    if (vg_checkpoint_resolve(ckpt, model_path, state_path, sizeof model_path, err, errlen)) return -1;
    vg_st_file *f = vg_st_open(model_path, err, errlen);
    if (!f) return -1;
    int rc = vg_vit_from_checkpoint(f, &out->m, model_path, err, errlen);
    vg_data_meta dm;                             /* the normalisation it was trained with, if stored */
    if (!rc && vg_data_meta_read(f, &dm, model_path, err, errlen) == 0) {
        out->has_norm = dm.has_norm;
        memcpy(out->mean, dm.mean, sizeof out->mean); memcpy(out->std, dm.std, sizeof out->std);
        vg_data_meta_free(&dm);
    }
    vg_st_close(f);
    if (rc) return -1;
    snprintf(out->source, sizeof out->source, "%s", model_path);
    if (state_path[0]) {                         /* which dataset it was trained on (optional) */
        char e2[256];
        vg_st_file *s = vg_st_open(state_path, e2, sizeof e2);
        const char *ds = s ? vg_st_meta(s, "dataset") : NULL;
        if (ds) snprintf(out->dataset, sizeof out->dataset, "%s", ds);
        vg_st_close(s);
    }
    return 0;
}

int ic_model_fresh(const char *preset, uint64_t seed, ic_model *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    vg_vit_config cfg;
    if (!vg_vit_preset(preset, &cfg)) {
        int n = snprintf(err, errlen, "unknown model preset '%s' (known:", preset);
        for (int i = 0; vg_vit_preset_names[i] && n > 0 && (size_t)n < errlen; i++)
            n += snprintf(err + n, errlen - n, " %s", vg_vit_preset_names[i]);
        if (n > 0 && (size_t)n < errlen) snprintf(err + n, errlen - n, ")");
        return -1;
    }
    vg_rng rng = vg_rng_seed(seed);
    if (!vg_vit_init(&out->m, &cfg, &rng)) { snprintf(err, errlen, "%s: %s", preset, vg_error()); return -1; }
    snprintf(out->source, sizeof out->source, "fresh %s (seed %llu, untrained)", preset, (unsigned long long)seed);
    snprintf(out->dataset, sizeof out->dataset, "%s", cfg.in_chans == 1 ? "fashion-mnist" : cfg.img_size == 64 ? "imagefolder" : "cifar10");
    return 0;
}
void ic_model_free(ic_model *m) { vg_vit_free(&m->m); }

void ic_norm_for(const char *ds, int channels, float mean[3], float std[3]) {
    if (!(ds && *ds) || vg_dataset_default_norm(ds, mean, std)) vg_dataset_default_norm(channels == 1 ? "fashion-mnist" : "cifar10", mean, std);
}

void ic_model_norm(const ic_model *m, float mean[3], float std[3]) {
    if (!m->has_norm) { ic_norm_for(m->dataset, m->m.cfg.in_chans, mean, std); return; }
    memcpy(mean, m->mean, sizeof m->mean); memcpy(std, m->std, sizeof m->std);
}

const char *ic_default_data_dir(const char *kind) {
    const char *env = !strcmp(kind, "cifar10") ? "CIFAR10_DIR" : !strcmp(kind, "imagefolder") ? "IMAGENET_SUBSET_DIR" : "FASHION_MNIST_DIR";
    const char *v = getenv(env);
    if (v && *v) return v;
    if (!strcmp(kind, "cifar10")) return "../shared/data/cifar-10-batches-bin";
    if (!strcmp(kind, "imagefolder")) return "../shared/data/imagenet-subset";
    return "/usr/share/datasets/fashion-mnist";
}

int ic_image_load(const char *file, const char *kind, const char *dir, int index, vg_split split,
                  ic_image *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->label = -1;
    if (file) {
        int src;
        if (vg_image_decode_file(file, &out->chw, &out->h, &out->w, &src, err, errlen)) return -1;
        out->c = 3;
        snprintf(out->what, sizeof out->what, "%s", file);
        ic_norm_for(NULL, 3, out->mean, out->std);
        return 0;
    }
    if (!dir) dir = ic_default_data_dir(kind);
    vg_dataset *d = vg_dataset_open(kind, dir, split, err, errlen);
    if (!d) return -1;
    if (index < 0 || index >= d->n) {
        snprintf(err, errlen, "--index %d out of range: %s %s split has %d images", index, kind,
                 split == VG_SPLIT_TRAIN ? "train" : "test", d->n);
        vg_dataset_free(d); return -1;
    }
    int h, w;
    const uint8_t *p = vg_dataset_image(d, index, &h, &w);
    size_t bytes = (size_t)d->channels * h * w;
    out->chw = malloc(bytes);
    if (!out->chw) { snprintf(err, errlen, "out of memory"); vg_dataset_free(d); return -1; }
    memcpy(out->chw, p, bytes);
    out->c = d->channels; out->h = h; out->w = w;
    out->label = d->labels[index];
    snprintf(out->label_name, sizeof out->label_name, "%s", d->class_names ? d->class_names[out->label] : "?");
    snprintf(out->what, sizeof out->what, "%s %s #%d (%s)", kind, split == VG_SPLIT_TRAIN ? "train" : "test", index, out->label_name);
    memcpy(out->mean, d->mean, sizeof out->mean); memcpy(out->std, d->std, sizeof out->std);
    vg_dataset_free(d);
    return 0;
}
void ic_image_free(ic_image *im) { free(im->chw); im->chw = NULL; }

/* the image with `channels` channels: gray → RGB by repetition, RGB → gray by the mean */
static uint8_t *convert_channels(const ic_image *im, int channels) {
    size_t hw = (size_t)im->h * im->w;
    uint8_t *o = malloc(channels * hw);
    if (!o) return NULL;
    for (int c = 0; c < channels; c++)
        for (size_t k = 0; k < hw; k++) {
            if (im->c == channels) o[c * hw + k] = im->chw[c * hw + k];
            else if (im->c == 1) o[c * hw + k] = im->chw[k];
            else o[c * hw + k] = (uint8_t)((im->chw[k] + im->chw[hw + k] + im->chw[2 * hw + k] + 1) / 3);
        }
    return o;
}

vg_tensor *ic_image_input(const ic_image *im, int channels, int size) {
    uint8_t *src = convert_channels(im, channels);
    if (!src) { vg_set_error("out of memory"); return NULL; }
    vg_tensor *x = vg_empty(VG_DIMS(1, channels, size, size));
    if (x) vg_eval_transform(src, channels, im->h, im->w, size, vg_data(x), im->mean, im->std);
    free(src);
    return x;
}

uint8_t *ic_image_crop_u8(const ic_image *im, int size) {
    const float zero[3] = {0, 0, 0}, one[3] = {1, 1, 1};
    size_t n = (size_t)im->c * size * size;
    real *tmp = malloc(n * sizeof *tmp);
    uint8_t *o = malloc(n);
    if (!tmp || !o) { free(tmp); free(o); return NULL; }
    vg_resize_center_crop(im->chw, im->c, im->h, im->w, size, tmp, zero, one);
    for (size_t k = 0; k < n; k++) {
        double v = tmp[k] * 255.0 + 0.5;
        o[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    free(tmp);
    return o;
}

int ic_source_arg(const char *cmd, int argc, char **argv, int *i, ic_source_opts *o) {
    const char *v = NULL;
    int r;
    if ((r = ic_take(cmd, argc, argv, i, "--ckpt", &o->ckpt))) return r;
    if ((r = ic_take(cmd, argc, argv, i, "--model", &o->preset))) return r;
    if ((r = ic_take(cmd, argc, argv, i, "--image", &o->image))) return r;
    if ((r = ic_take(cmd, argc, argv, i, "--dataset", &o->dataset))) return r;
    if ((r = ic_take(cmd, argc, argv, i, "--data", &o->data))) return r;
    if ((r = ic_take(cmd, argc, argv, i, "--seed", &v))) return r < 0 ? r : ic_int(cmd, "--seed", v, 0, INT_MAX, &o->seed) ? 1 : -1;
    if ((r = ic_take(cmd, argc, argv, i, "--index", &v))) return r < 0 ? r : ic_int(cmd, "--index", v, 0, INT_MAX, &o->index) ? 1 : -1;
    if ((r = ic_take(cmd, argc, argv, i, "--split", &v))) {
        if (r < 0) return r;
        if (!strcmp(v, "train")) o->split = VG_SPLIT_TRAIN;
        else if (!strcmp(v, "test") || !strcmp(v, "val")) o->split = VG_SPLIT_TEST;
        else { fprintf(stderr, "inspect %s: --split: expected train or test, got '%s'\n", cmd, v); return -1; }
        return 1;
    }
    return 0;
}

int ic_source_model(const char *cmd, const ic_source_opts *o, ic_model *m) {
    char err[IC_ERRLEN];
    int rc = o->ckpt ? ic_model_load(o->ckpt, m, err, sizeof err) : ic_model_fresh(o->preset, (uint64_t)o->seed, m, err, sizeof err);
    if (rc) fprintf(stderr, "inspect %s: %s\n", cmd, err);
    return rc;
}

int ic_source_image(const char *cmd, const ic_source_opts *o, const ic_model *m, ic_image *im) {
    char err[IC_ERRLEN];
    if (ic_image_load(o->image, o->dataset, o->data, o->index, o->split, im, err, sizeof err)) {
        fprintf(stderr, "inspect %s: %s\n", cmd, err);
        return -1;
    }
    if (m && (o->image || m->has_norm)) ic_model_norm(m, im->mean, im->std);   /* the model's own, when stored */
    return 0;
}
