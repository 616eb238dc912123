/* predict.c — ./predict: classify images with a trained model.
 *
 *   ./predict --ckpt RUN_DIR_OR_FILE IMAGE_OR_FOLDER… [--top K] [--json] [--classes FILE]
 *             [--batch N] [--threads T] [--heads H]
 *
 * The model comes from a checkpoint as ./inspect loads it (tools/inspect_common.c: a run or step
 * directory, or a model.safetensors — vitgrad's, with its "model.*" metadata, or a timm state
 * dict); the class names and the input normalisation from its "data.*" metadata
 * (checkpoint/data_meta.h), with fallbacks for files written before those were stored. Each image
 * (JPEG or PNG, any size; a folder: every .png/.jpg/.jpeg under it) is decoded, converted to the
 * model's channels and put through the evaluation transform (vg_eval_transform: resize the shorter
 * side, centre crop), in batches through the forward pass without a graph; the top-K classes are
 * printed by name with their softmax probabilities. An image that cannot be read is reported by
 * name and the others go on; the exit status is then 1. Bad flags: 2. */
#include "tools/inspect_common.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/data_meta.h"
#include "checkpoint/model_meta.h"
#include "autograd/autograd.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f) {
    fprintf(f,
        "usage: ./predict --ckpt RUN_DIR_OR_FILE IMAGE_OR_FOLDER... [options]\n"
        "  classify JPEG/PNG images (any size; a folder: every .png/.jpg/.jpeg under it) with a trained model:\n"
        "  the top classes by name with their probabilities (softmax of the logits)\n"
        "  --ckpt P        a run directory, a step directory or a model.safetensors (vitgrad's or a timm state dict)\n"
        "  --top K         classes shown per image (default 5, at most the class count)\n"
        "  --json          one JSON object per line and image: {\"file\", \"top\": [{\"index\", \"class\", \"prob\"}]}\n"
        "                  (an image that cannot be read: {\"file\", \"error\"})\n"
        "  --classes FILE  class names, one per line (for a file that stores none, e.g. a timm checkpoint)\n"
        "  --batch N       images per forward pass (default 32)\n"
        "  --threads T     threads (default: every core)\n"
        "  --heads H       attention heads of a timm state dict whose embed_dim is not a multiple of 64\n"
        "Images are resized and centre-cropped to the model's input as evaluation does, normalised with the\n"
        "checkpoint's stored mean and std. Exit status: 0, 1 if any image (or the model) could not be read, 2 usage.\n");
}

/* ------------------------------------------------------------------ the list of images */
typedef struct { char **v; int n, cap; } paths;

static int paths_add(paths *p, const char *s) {
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        char **v = realloc(p->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        p->v = v; p->cap = cap;
    }
    size_t n = strlen(s) + 1;
    if (!(p->v[p->n] = malloc(n))) return -1;
    memcpy(p->v[p->n++], s, n);
    return 0;
}

static void paths_free(paths *p) {
    for (int i = 0; i < p->n; i++) free(p->v[i]);
    free(p->v);
    *p = (paths){0};
}

static bool image_ext(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return false;
    char e[8] = "";
    for (int i = 0; dot[i + 1] && i < 6; i++) e[i] = (char)tolower((unsigned char)dot[i + 1]);
    return !strcmp(e, "png") || !strcmp(e, "jpg") || !strcmp(e, "jpeg");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* every image file under dir (sorted at each level; no dotfiles), depth-first */
static int walk(const char *dir, paths *out, int depth) {
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "predict: %s: cannot open directory: %s\n", dir, strerror(errno)); return -1; }
    paths names = {0};
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && paths_add(&names, e->d_name)) rc = -1;
    closedir(d);
    if (names.n > 1) qsort(names.v, (size_t)names.n, sizeof *names.v, cmp_str);
    for (int i = 0; i < names.n && !rc; i++) {
        char p[PATH_MAX];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, names.v[i]) >= (int)sizeof p || stat(p, &st)) continue;
        if (S_ISDIR(st.st_mode)) { if (depth < 32) rc = walk(p, out, depth + 1); }
        else if (image_ext(names.v[i])) rc = paths_add(out, p);
    }
    for (int i = 0; i < names.n; i++) free(names.v[i]);
    free(names.v);
    return rc;
}

/* ------------------------------------------------------------------ output */
static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

static void report_failure(const char *file, const char *why, bool json) {
    fprintf(stderr, "predict: %s\n", why);
    if (!json) return;
    printf("{\"file\": "); json_str(file); printf(", \"error\": "); json_str(why); printf("}\n");
}

/* softmax of one row of logits (in double) and its top k, printed */
static void report(const char *file, const real *logits, int K, int top, const vg_data_meta *names, bool json) {
    double mx = logits[0], sum = 0;
    for (int c = 1; c < K; c++) if (logits[c] > mx) mx = logits[c];
    double *p = malloc(sizeof(double) * (size_t)K);
    int *order = malloc(sizeof(int) * (size_t)K);
    if (!p || !order) { free(p); free(order); report_failure(file, "out of memory", json); return; }
    for (int c = 0; c < K; c++) sum += p[c] = exp((double)logits[c] - mx);
    for (int c = 0; c < K; c++) { p[c] /= sum; order[c] = c; }
    for (int i = 0; i < top; i++)                       /* the k largest, ties in class order */
        for (int j = i + 1; j < K; j++)
            if (p[order[j]] > p[order[i]]) { int t = order[i]; order[i] = order[j]; order[j] = t; }
    if (json) {
        printf("{\"file\": "); json_str(file); printf(", \"top\": [");
        for (int i = 0; i < top; i++) {
            int c = order[i];
            printf("%s{\"index\": %d, \"class\": ", i ? ", " : "", c); json_str(names->class_names[c]);
            if (names->class_descr && names->class_descr[c][0]) { printf(", \"description\": "); json_str(names->class_descr[c]); }
            printf(", \"prob\": %.9g}", p[c]);
        }
        printf("]}\n");
    } else {
        printf("%s\n", file);
        for (int i = 0; i < top; i++) printf("  %8.4f%%  %s\n", 100 * p[order[i]], vg_data_meta_label(names, order[i]));
    }
    free(p); free(order);
}

/* ------------------------------------------------------------------ the model's side */
/* --classes FILE: one name per line (empty lines skipped); exactly K of them */
static int read_classes(const char *path, int K, vg_data_meta *m) {
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "predict: --classes %s: %s\n", path, strerror(errno)); return -1; }
    paths names = {0};
    char line[1024];
    int rc = 0;
    while (fgets(line, sizeof line, f) && !rc) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n) rc = paths_add(&names, line);
    }
    fclose(f);
    if (!rc && names.n != K) {
        fprintf(stderr, "predict: --classes %s: %d names, the model has %d classes\n", path, names.n, K);
        rc = -1;
    }
    if (rc) { for (int i = 0; i < names.n; i++) free(names.v[i]); free(names.v); return -1; }
    m->class_names = names.v; m->n_classes = K;
    return 0;
}

static void free_names(char **v, int n) {
    for (int i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

/* the class names (--classes FILE, else the stored ones) and the normalisation stored with the
 * model; the fallbacks for what is not stored are said on stderr. 0, 1 (an error) or 2 (usage) */
static int model_data(const ic_model *model, const char *classes, vg_data_meta *m) {
    char err[IC_ERRLEN], note[512];
    vg_st_file *f = vg_st_open(model->source, err, sizeof err);
    if (!f || vg_data_meta_read(f, m, model->source, err, sizeof err)) {
        vg_st_close(f);
        fprintf(stderr, "predict: %s\n", err);
        return 1;
    }
    vg_st_close(f);
    if (classes) {
        free_names(m->class_names, m->n_classes); free_names(m->class_descr, m->n_classes);
        m->class_names = m->class_descr = NULL; m->n_classes = 0;
        if (read_classes(classes, model->m.cfg.num_classes, m)) return 2;
    }
    if (vg_data_meta_fallback(m, model->dataset[0] ? model->dataset : NULL, model->m.cfg.num_classes, note, sizeof note)) {
        fprintf(stderr, "predict: out of memory\n");
        return 1;
    }
    if (note[0]) fprintf(stderr, "predict: %s: %s\n", model->source, note);
    return 0;
}

/* the model as ./inspect loads it; with --heads H (a timm state dict whose embed_dim is not a
 * multiple of 64, which its shapes cannot give) the head count is H */
static int load_model(const char *ckpt, int heads, ic_model *model, char *err, size_t errlen) {
    if (!heads) return ic_model_load(ckpt, model, err, errlen);
    char model_path[4096], state_path[4096];
    memset(model, 0, sizeof *model);
    if (vg_checkpoint_resolve(ckpt, model_path, state_path, sizeof model_path, err, errlen)) return -1;
    vg_st_file *f = vg_st_open(model_path, err, errlen);
    if (!f) return -1;
    int rc = vg_vit_from_file(f, &model->m, heads, model_path, err, errlen);
    vg_st_close(f);
    snprintf(model->source, sizeof model->source, "%s", model_path);
    return rc;
}

/* ------------------------------------------------------------------ main */
static bool parse_int(const char *flag, const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "predict: %s: expected an integer in %d..%d, got '%s'\n", flag, lo, hi, s ? s : "(nothing)");
        return false;
    }
    *out = (int)v;
    return true;
}

int main(int argc, char **argv) {
    const char *ckpt = NULL, *classes = NULL;
    int top = 5, batch = 32, threads = 0, heads = 0;
    bool json = false, top_given = false;
    paths inputs = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); paths_free(&inputs); return 0; }
        else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--ckpt") || !strcmp(a, "--classes")) {
            if (!v) { fprintf(stderr, "predict: %s needs a value\n", a); paths_free(&inputs); return 2; }
            *(!strcmp(a, "--ckpt") ? &ckpt : &classes) = v; i++;
        } else if (!strcmp(a, "--top")) { if (!parse_int(a, v, 1, 1 << 20, &top)) { paths_free(&inputs); return 2; } top_given = true; i++; }
        else if (!strcmp(a, "--batch")) { if (!parse_int(a, v, 1, 4096, &batch)) { paths_free(&inputs); return 2; } i++; }
        else if (!strcmp(a, "--threads")) { if (!parse_int(a, v, 1, 1024, &threads)) { paths_free(&inputs); return 2; } i++; }
        else if (!strcmp(a, "--heads")) { if (!parse_int(a, v, 1, 4096, &heads)) { paths_free(&inputs); return 2; } i++; }
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "predict: unknown flag %s (see ./predict --help)\n", a); paths_free(&inputs); return 2; }
        else if (paths_add(&inputs, a)) { fprintf(stderr, "predict: out of memory\n"); paths_free(&inputs); return 1; }
    }
    if (!ckpt || !inputs.n) {
        fprintf(stderr, "predict: %s\n", !ckpt ? "--ckpt RUN_DIR_OR_FILE is required" : "no image or folder given");
        usage(stderr);
        paths_free(&inputs);
        return 2;
    }
    if (threads) omp_set_num_threads(threads);

    ic_model model;
    vg_data_meta names = {0};
    char err[IC_ERRLEN];
    if (load_model(ckpt, heads, &model, err, sizeof err)) { fprintf(stderr, "predict: %s\n", err); paths_free(&inputs); return 1; }
    const int K = model.m.cfg.num_classes, C = model.m.cfg.in_chans, S = model.m.cfg.img_size;
    int status = 0;
    if (K < 1) { fprintf(stderr, "predict: %s has no classification head (num_classes 0)\n", model.source); status = 1; goto out; }
    if ((status = model_data(&model, classes, &names))) goto out;
    if (names.n_classes != K) {
        fprintf(stderr, "predict: %s names %d classes, its head has %d\n", model.source, names.n_classes, K);
        status = 1;
        goto out;
    }
    if (!top_given && top > K) top = K;
    if (top > K) { fprintf(stderr, "predict: --top %d: the model has %d classes\n", top, K); status = 2; goto out; }
    if (!json) {
        printf("model %s: %d classes, %d px, %d channel%s; normalised with mean", model.source, K, S, C, C == 1 ? "" : "s");
        for (int ch = 0; ch < C && ch < 3; ch++) printf("%s%.6g", ch ? "," : " ", names.mean[ch]);
        printf(" std");
        for (int ch = 0; ch < C && ch < 3; ch++) printf("%s%.6g", ch ? "," : " ", names.std[ch]);
        printf("\n");
    }

    paths files = {0};
    for (int i = 0; i < inputs.n; i++) {
        struct stat st;
        const char *in = inputs.v[i];
        int before = files.n;
        if (stat(in, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (walk(in, &files, 0)) status = 1;
            else if (files.n == before) { snprintf(err, sizeof err, "%s: no .png/.jpg/.jpeg files in this folder", in); report_failure(in, err, json); status = 1; }
        } else if (paths_add(&files, in)) status = 1;
    }

    const size_t per = (size_t)C * S * S;
    char **batch_files = malloc(sizeof(char *) * (size_t)batch);
    real *pixels = malloc(sizeof(real) * per * (size_t)batch);
    if (!batch_files || !pixels) { fprintf(stderr, "predict: out of memory for a batch of %d\n", batch); status = 1; }
    for (int at = 0; at < files.n && batch_files && pixels; at += batch) {
        int n = 0;
        for (int i = at; i < files.n && i < at + batch; i++) {
            ic_image im;
            if (ic_image_load(files.v[i], NULL, NULL, 0, VG_SPLIT_TEST, &im, err, sizeof err)) {
                report_failure(files.v[i], err, json);
                status = 1;
                continue;
            }
            memcpy(im.mean, names.mean, sizeof im.mean); memcpy(im.std, names.std, sizeof im.std);
            vg_tensor *xi = ic_image_input(&im, C, S);
            ic_image_free(&im);
            if (!xi) { snprintf(err, sizeof err, "%s: %s", files.v[i], vg_error()); report_failure(files.v[i], err, json); status = 1; continue; }
            memcpy(pixels + (size_t)n * per, vg_data(xi), per * sizeof(real));
            batch_files[n++] = files.v[i];
        }
        if (n) {
            vg_tensor *x = vg_empty(VG_DIMS(n, C, S, S));
            if (x) memcpy(vg_data(x), pixels, sizeof(real) * per * (size_t)n);
            vg_no_grad_begin();
            vg_tensor *logits = vg_vit_forward(&model.m, x, false, NULL);     /* (n, K) */
            vg_no_grad_end();
            if (!logits) { fprintf(stderr, "predict: forward pass: %s\n", vg_error()); status = 1; vg_arena_reset(); break; }
            for (int i = 0; i < n; i++) report(batch_files[i], vg_data(logits) + (size_t)i * K, K, top, &names, json);
            fflush(stdout);
        }
        vg_arena_reset();
    }
    free(batch_files); free(pixels);
    for (int i = 0; i < files.n; i++) free(files.v[i]);
    free(files.v);
out:
    paths_free(&inputs);
    vg_data_meta_free(&names);
    ic_model_free(&model);
    vg_arena_free_all();
    return status;
}
