/* data_meta.c — "data.*" safetensors metadata: the class names, the normalisation and the input
 * size a model was trained with (see data_meta.h). */
#include "data_meta.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* timm's IMAGENET_DEFAULT_MEAN / _STD: what a timm checkpoint expects */
static const float timm_mean[3] = {0.485f, 0.456f, 0.406f}, timm_std[3] = {0.229f, 0.224f, 0.225f};

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static void free_list(char **v, int n) {
    if (!v) return;
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

void vg_data_meta_free(vg_data_meta *m) {
    free_list(m->class_names, m->n_classes);
    free_list(m->class_descr, m->n_classes);
    memset(m, 0, sizeof *m);
}

/* a copy of n strings (NULL entries become "") */
static char **copy_list(char *const *src, int n) {
    char **v = calloc((size_t)n, sizeof *v);
    for (int i = 0; v && i < n; i++)
        if (!(v[i] = dup_str(src[i] ? src[i] : ""))) { free_list(v, i); return NULL; }
    return v;
}

int vg_data_meta_from_dataset(vg_data_meta *m, const vg_dataset *d, int img_size, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    snprintf(m->dataset, sizeof m->dataset, "%s", d->name);
    m->n_classes = d->n_classes;
    m->class_names = d->class_names ? copy_list(d->class_names, d->n_classes) : NULL;
    m->class_descr = d->class_descr ? copy_list(d->class_descr, d->n_classes) : NULL;
    if ((d->class_names && !m->class_names) || (d->class_descr && !m->class_descr)) {
        vg_data_meta_free(m);
        snprintf(err, errlen, "out of memory copying %d class names", d->n_classes);
        return -1;
    }
    if (!m->class_names) m->n_classes = 0;
    m->has_norm = true;
    memcpy(m->mean, d->mean, sizeof m->mean); memcpy(m->std, d->std, sizeof m->std);
    m->img_size = img_size; m->channels = d->channels;
    return 0;
}

/* the strings joined by newlines (a newline inside one becomes a space); malloc'ed */
static char *join_lines(char *const *v, int n) {
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(v[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < n; i++) {
        if (i) *p++ = '\n';
        for (const char *q = v[i]; *q; q++) *p++ = *q == '\n' ? ' ' : *q;
    }
    *p = 0;
    return s;
}

int vg_data_meta_write(const vg_data_meta *m, vg_st_writer *w, char *err, size_t errlen) {
    char v[128];
    int rc = 0;
    if (m->dataset[0]) rc |= vg_st_writer_meta(w, "data.dataset", m->dataset, err, errlen);
    const char *keys[2] = {"data.class_names", "data.class_descr"};
    char **lists[2] = {m->class_names, m->class_descr};
    for (int k = 0; k < 2; k++) {
        if (!lists[k] || m->n_classes < 1) continue;
        char *s = join_lines(lists[k], m->n_classes);
        if (!s) { snprintf(err, errlen, "out of memory writing %s", keys[k]); return -1; }
        rc |= vg_st_writer_meta(w, keys[k], s, err, errlen);
        free(s);
    }
    if (m->has_norm) {
        snprintf(v, sizeof v, "%.6f,%.6f,%.6f", m->mean[0], m->mean[1], m->mean[2]);
        rc |= vg_st_writer_meta(w, "data.mean", v, err, errlen);
        snprintf(v, sizeof v, "%.6f,%.6f,%.6f", m->std[0], m->std[1], m->std[2]);
        rc |= vg_st_writer_meta(w, "data.std", v, err, errlen);
    }
    if (m->img_size > 0) { snprintf(v, sizeof v, "%d", m->img_size); rc |= vg_st_writer_meta(w, "data.img_size", v, err, errlen); }
    if (m->channels > 0) { snprintf(v, sizeof v, "%d", m->channels); rc |= vg_st_writer_meta(w, "data.channels", v, err, errlen); }
    return rc ? -1 : 0;
}

/* "a,b,c": three finite floats (positive ones when positive) */
static int read_triple(const vg_st_file *f, const char *key, bool positive, float out[3], const char *path, char *err,
                       size_t errlen) {
    const char *v = vg_st_meta(f, key), *p = v;
    for (int c = 0; c < 3; c++) {
        char *end;
        double x = strtod(p, &end);
        if (end == p || !isfinite(x) || (positive && !(x > 0)) || *end != (c < 2 ? ',' : 0)) {
            snprintf(err, errlen, "%s: metadata %s = \"%.60s\" is not three %s numbers separated by commas", path, key, v,
                     positive ? "positive" : "finite");
            return -1;
        }
        out[c] = (float)x;
        p = end + 1;
    }
    return 0;
}

/* the lines of "a\nb\nc" as n strings; NULL when out of memory */
static char **split_lines(const char *s, int *n) {
    *n = 1;
    for (const char *p = s; *p; p++) *n += *p == '\n';
    char **v = calloc((size_t)*n, sizeof *v);
    const char *start = s;
    for (int i = 0; v && i < *n; i++) {
        const char *e = strchr(start, '\n');
        size_t len = e ? (size_t)(e - start) : strlen(start);
        if (!(v[i] = malloc(len + 1))) { free_list(v, i); return NULL; }
        memcpy(v[i], start, len); v[i][len] = 0;
        start = e ? e + 1 : start + len;
    }
    return v;
}

static int read_int(const vg_st_file *f, const char *key, int lo, int hi, int *out, const char *path, char *err, size_t errlen) {
    const char *v = vg_st_meta(f, key);
    if (!v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) {
        snprintf(err, errlen, "%s: metadata %s = \"%.40s\" is not an integer in %d..%d", path, key, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

int vg_data_meta_read(const vg_st_file *f, vg_data_meta *m, const char *path, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    const char *ds = vg_st_meta(f, "data.dataset");
    if (ds) snprintf(m->dataset, sizeof m->dataset, "%s", ds);
    const char *names = vg_st_meta(f, "data.class_names"), *descr = vg_st_meta(f, "data.class_descr");
    if (names) {
        int n = 0, nd = 0;
        m->class_names = split_lines(names, &n);
        m->n_classes = m->class_names ? n : 0;
        const char *nc = vg_st_meta(f, "model.num_classes");
        if (m->class_names && nc && atoi(nc) != n) {
            snprintf(err, errlen, "%s: metadata data.class_names lists %d classes, model.num_classes says %s", path, n, nc);
            vg_data_meta_free(m);
            return -1;
        }
        if (m->class_names && descr) {
            m->class_descr = split_lines(descr, &nd);
            if (m->class_descr && nd != n) {
                snprintf(err, errlen, "%s: metadata data.class_descr has %d lines, data.class_names %d", path, nd, n);
                vg_data_meta_free(m);
                return -1;
            }
        }
        if (!m->class_names || (descr && !m->class_descr)) {
            snprintf(err, errlen, "%s: out of memory reading the class names", path);
            vg_data_meta_free(m);
            return -1;
        }
    }
    if (vg_st_meta(f, "data.mean") || vg_st_meta(f, "data.std")) {
        if (!vg_st_meta(f, "data.mean") || !vg_st_meta(f, "data.std")) {
            snprintf(err, errlen, "%s: metadata has data.%s without data.%s", path, vg_st_meta(f, "data.mean") ? "mean" : "std",
                     vg_st_meta(f, "data.mean") ? "std" : "mean");
            vg_data_meta_free(m);
            return -1;
        }
        if (read_triple(f, "data.mean", false, m->mean, path, err, errlen) ||
            read_triple(f, "data.std", true, m->std, path, err, errlen)) { vg_data_meta_free(m); return -1; }
        m->has_norm = true;
    }
    if (read_int(f, "data.img_size", 1, 1 << 16, &m->img_size, path, err, errlen) ||
        read_int(f, "data.channels", 1, 3, &m->channels, path, err, errlen)) { vg_data_meta_free(m); return -1; }
    return 0;
}

int vg_data_meta_fallback(vg_data_meta *m, const char *dataset, int n_classes, char *note, size_t n) {
    size_t len = 0;
    note[0] = 0;
    if (!m->dataset[0] && dataset) snprintf(m->dataset, sizeof m->dataset, "%s", dataset);
    if (!m->class_names && n_classes > 0) {
        const char *const *std_names = vg_dataset_default_names(m->dataset, n_classes);
        m->class_names = calloc((size_t)n_classes, sizeof *m->class_names);
        if (!m->class_names) return -1;
        m->n_classes = n_classes;
        for (int c = 0; c < n_classes; c++) {
            char s[32];
            snprintf(s, sizeof s, "class %d", c);
            if (!(m->class_names[c] = dup_str(std_names ? std_names[c] : s))) return -1;
        }
        int w = snprintf(note + len, n - len, "%s", std_names ? "no class names stored: the dataset's standard names"
                                                             : "no class names stored: classes are shown as \"class N\"");
        if (w > 0) len += (size_t)w < n - len ? (size_t)w : n - len - 1;
    }
    if (!m->has_norm) {
        bool known = vg_dataset_default_norm(m->dataset, m->mean, m->std) == 0;
        if (!known) { memcpy(m->mean, timm_mean, sizeof m->mean); memcpy(m->std, timm_std, sizeof m->std); }
        m->has_norm = true;
        snprintf(note + len, n - len, "%sno normalisation stored: %s", len ? "; " : "",
                 !known ? "timm's ImageNet mean and std" : !strcmp(m->dataset, "imagefolder")
                 ? "the ImageNet-subset constants (what ./train used for image folders before it stored its own)"
                 : "the dataset's constants");
    }
    return 0;
}

const char *vg_data_meta_label(const vg_data_meta *m, int c) {
    if (c < 0 || c >= m->n_classes) return "";
    if (m->class_descr && m->class_descr[c] && m->class_descr[c][0]) return m->class_descr[c];
    return m->class_names ? m->class_names[c] : "";
}
