/* dataset.c — the vg_dataset container: lifetime, pixel access, statistics, open-by-name. */
#include "data/internal.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int vg__err(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap; va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

char *vg__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

vg_dataset *vg__dataset_new(const char *name, const char *path) {
    vg_dataset *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->path, sizeof d->path, "%s", path);
    for (int c = 0; c < 3; c++) { d->mean[c] = 0.5f; d->std[c] = 0.5f; }
    return d;
}

void vg__free_strings(char **s, int n) {
    if (!s) return;
    for (int i = 0; i < n; i++) free(s[i]);
    free(s);
}

int vg__read_file(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen) {
    *buf = NULL; *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return vg__err(err, errlen, "cannot open %s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return vg__err(err, errlen, "%s: cannot seek (not a regular file?)", path); }
    long n = ftell(f);
    if (n < 0) { fclose(f); return vg__err(err, errlen, "%s: cannot determine size", path); }
    rewind(f);
    uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
    if (!p) { fclose(f); return vg__err(err, errlen, "%s: out of memory (%ld bytes)", path, n); }
    size_t got = fread(p, 1, (size_t)n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != (size_t)n) { free(p); return vg__err(err, errlen, "%s: read error after %zu of %ld bytes", path, got, n); }
    *buf = p; *len = (size_t)n;
    return 0;
}

int vg__read_lines(const char *path, char ***lines, int max_lines) {
    *lines = NULL;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char **out = calloc((size_t)max_lines, sizeof *out);
    int n = 0;
    char line[1024];
    while (out && n < max_lines && fgets(line, sizeof line, f)) {
        size_t k = strlen(line);
        while (k && (line[k - 1] == '\n' || line[k - 1] == '\r' || line[k - 1] == ' ' || line[k - 1] == '\t')) line[--k] = 0;
        if (!k) continue;
        out[n++] = vg__strdup(line);
    }
    fclose(f);
    if (!out) return -1;
    *lines = out;
    return n;
}

void vg_dataset_free(vg_dataset *d) {
    if (!d) return;
    vg__free_strings(d->class_names, d->n_classes);
    vg__free_strings(d->class_descr, d->n_classes);
    vg__free_strings(d->files, d->files ? d->n : 0);
    vg__free_strings(d->skipped, d->n_skipped);
    free(d->labels); free(d->pixels); free(d->offsets); free(d->heights); free(d->widths);
    free(d->src_channels);
    free(d);
}

const uint8_t *vg_dataset_image(const vg_dataset *d, int i, int *h, int *w) {
    if (d->offsets) {
        *h = d->heights[i]; *w = d->widths[i];
        return d->pixels + d->offsets[i];
    }
    *h = d->height; *w = d->width;
    return d->pixels + (size_t)i * d->channels * d->height * d->width;
}

void vg_dataset_channel_stats(const vg_dataset *d, double mean[3], double std[3]) {
    /* integer sums are exact: 255^2 * 2^40 pixels still fits in 64 bits */
    uint64_t s[3] = {0, 0, 0}, s2[3] = {0, 0, 0}, cnt = 0;
    for (int i = 0; i < d->n; i++) {
        int h, w;
        const uint8_t *p = vg_dataset_image(d, i, &h, &w);
        size_t hw = (size_t)h * w;
        for (int c = 0; c < d->channels; c++) {
            uint64_t a = 0, b = 0;
            for (size_t k = 0; k < hw; k++) { uint64_t v = p[c * hw + k]; a += v; b += v * v; }
            s[c] += a; s2[c] += b;
        }
        cnt += hw;
    }
    for (int c = 0; c < 3; c++) {
        int cc = c < d->channels ? c : 0;
        if (!cnt) { mean[c] = 0; std[c] = 0; continue; }
        double m = (double)s[cc] / (double)cnt;
        double v = (double)s2[cc] / (double)cnt - m * m;
        mean[c] = m / 255.0;
        std[c] = sqrt(v > 0 ? v : 0) / 255.0;
    }
}

void vg_dataset_norm_stats(const vg_dataset *d, float mean[3], float std[3]) {
    double m[3], s[3];
    vg_dataset_channel_stats(d, m, s);
    char v[32];
    for (int c = 0; c < 3; c++) {       /* through the same text a checkpoint stores ("%.6f") */
        snprintf(v, sizeof v, "%.6f", m[c]); mean[c] = strtof(v, NULL);
        snprintf(v, sizeof v, "%.6f", s[c]); std[c] = strtof(v, NULL);
    }
}

const char *const *vg_dataset_default_names(const char *kind, int n_classes) {
    static const char *const cifar10[10] = {"airplane", "automobile", "bird", "cat", "deer",
                                            "dog", "frog", "horse", "ship", "truck"};
    static const char *const fashion[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                            "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
    static const char *const digits[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    if (!kind || n_classes != 10) return NULL;
    if (!strcmp(kind, "cifar10") || !strcmp(kind, "cifar-10")) return cifar10;
    if (!strcmp(kind, "fashion-mnist") || !strcmp(kind, "fashion_mnist")) return fashion;
    if (!strcmp(kind, "mnist")) return digits;
    return NULL;
}

int vg_dataset_default_norm(const char *kind, float mean[3], float std[3]) {
    static const float cm[3] = VG_CIFAR10_MEAN, cs[3] = VG_CIFAR10_STD, im[3] = VG_IMAGENET_SUBSET_MEAN,
                       is[3] = VG_IMAGENET_SUBSET_STD, fm[3] = VG_FASHION_MNIST_MEAN, fs[3] = VG_FASHION_MNIST_STD,
                       mm[3] = {0.1307f, 0.1307f, 0.1307f}, ms[3] = {0.3081f, 0.3081f, 0.3081f};
    const float *m = NULL, *s = NULL;
    if (!kind) return -1;
    if (!strcmp(kind, "cifar10") || !strcmp(kind, "cifar-10")) { m = cm; s = cs; }
    else if (!strcmp(kind, "imagefolder")) { m = im; s = is; }
    else if (!strcmp(kind, "fashion-mnist") || !strcmp(kind, "fashion_mnist")) { m = fm; s = fs; }
    else if (!strcmp(kind, "mnist")) { m = mm; s = ms; }
    else return -1;
    memcpy(mean, m, 3 * sizeof *m); memcpy(std, s, 3 * sizeof *s);
    return 0;
}

void vg_dataset_class_counts(const vg_dataset *d, int *counts) {
    for (int c = 0; c < d->n_classes; c++) counts[c] = 0;
    for (int i = 0; i < d->n; i++)
        if (d->labels[i] >= 0 && d->labels[i] < d->n_classes) counts[d->labels[i]]++;
}

vg_dataset *vg_dataset_open(const char *kind, const char *dir, vg_split split, char *err, size_t errlen) {
    if (!kind || !dir) { vg__err(err, errlen, "vg_dataset_open: kind and dir are required"); return NULL; }
    if (!strcmp(kind, "cifar10") || !strcmp(kind, "cifar-10")) return vg_cifar10_open(dir, split, err, errlen);
    if (!strcmp(kind, "imagefolder")) return vg_imagefolder_open(dir, split, 0, err, errlen);
    if (!strcmp(kind, "fashion-mnist") || !strcmp(kind, "fashion_mnist")) return vg_fashion_mnist_open(dir, split, err, errlen);
    if (!strcmp(kind, "mnist")) return vg_mnist_open(dir, split, err, errlen);
    vg__err(err, errlen, "unknown dataset kind '%s' (expected cifar10, imagefolder, fashion-mnist or mnist)", kind);
    return NULL;
}
