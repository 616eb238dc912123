/* imagefolder.c — ROOT/train/<class>/<image> and ROOT/val/<class>/<image> (ImageNet layout).
 * Every image is decoded at open into memory (uint8, (3, h, w), native size); the loader applies
 * the transform per sample. The train split's normalisation is its own per-channel mean and std
 * (vg_dataset_norm_stats), computed here once the pixels are in memory. Fine for the 64x64 subset (~60 MB); folders of large photos would
 * need decoding on the fly instead (not implemented). */
#include "data/internal.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct { char **v; int n, cap; } strvec;

static int sv_push(strvec *s, const char *x) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        char **v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        s->v = v; s->cap = cap;
    }
    if (!(s->v[s->n] = vg__strdup(x))) return -1;
    s->n++;
    return 0;
}
static void sv_free(strvec *s) { vg__free_strings(s->v, s->n); s->v = NULL; s->n = s->cap = 0; }
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* a/b into out; -1 if it does not fit */
static int path_join(char *out, size_t n, const char *a, const char *b) {
    int k = snprintf(out, n, "%s/%s", a, b);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

static int is_dir(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISDIR(st.st_mode); }

/* sorted entries of dir (no dotfiles); want_dirs: 1 = directories only, 0 = everything */
static int list_dir(const char *dir, int want_dirs, strvec *out, char *err, size_t errlen) {
    DIR *dp = opendir(dir);
    if (!dp) return vg__err(err, errlen, "cannot open directory %s: %s", dir, strerror(errno));
    struct dirent *e;
    char p[4096];
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.') continue;
        if (want_dirs) { snprintf(p, sizeof p, "%s/%s", dir, e->d_name); if (!is_dir(p)) continue; }
        if (sv_push(out, e->d_name)) { closedir(dp); return vg__err(err, errlen, "out of memory listing %s", dir); }
    }
    closedir(dp);
    if (out->n > 1) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str);
    return 0;
}

/* classes.txt lines: "wnid", "wnid<ws>name" or "index<ws>wnid<ws>name" */
static int read_classes_txt(const char *path, strvec *wnids, strvec *descr, char *err, size_t errlen) {
    char **lines = NULL;
    int n = vg__read_lines(path, &lines, 100000);
    if (n < 0) return vg__err(err, errlen, "cannot read %s", path);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char *s = lines[i], *tok[2] = {NULL, NULL};
        char *rest = s;
        for (int k = 0; k < 2; k++) {
            while (*rest && isspace((unsigned char)*rest)) rest++;
            if (!*rest) break;
            tok[k] = rest;
            while (*rest && !isspace((unsigned char)*rest)) rest++;
            if (*rest) *rest++ = 0;
        }
        while (*rest && isspace((unsigned char)*rest)) rest++;
        if (!tok[0]) continue;                      /* a line of other white space (\v, \f) */
        const char *wnid = tok[0], *name = tok[1] ? tok[1] : "";
        int numeric = tok[0] && tok[1] && strspn(tok[0], "0123456789") == strlen(tok[0]);
        if (numeric) {
            if (atoi(tok[0]) != wnids->n) { rc = vg__err(err, errlen, "%s line %d: index %s, expected %d", path, i + 1, tok[0], wnids->n); break; }
            wnid = tok[1]; name = rest;
        } else if (tok[1]) {
            /* "wnid name with spaces": the name is everything after the first token */
            name = tok[1];
            if (*rest) { tok[1][strlen(tok[1])] = ' '; }
        }
        for (int j = 0; j < wnids->n && !rc; j++)
            if (!strcmp(wnids->v[j], wnid)) rc = vg__err(err, errlen, "%s: class %s listed twice", path, wnid);
        if (!rc && (sv_push(wnids, wnid) || sv_push(descr, name))) rc = vg__err(err, errlen, "%s: out of memory", path);
        if (rc) break;
    }
    vg__free_strings(lines, n);          /* only now: the messages above quote the lines */
    if (!rc && !wnids->n) rc = vg__err(err, errlen, "%s: no classes listed", path);
    return rc;
}

typedef struct { char *path; int label; uint8_t *chw; int h, w, src_c; char *why; } item;

vg_dataset *vg_imagefolder_open(const char *root, vg_split split, int quiet, char *err, size_t errlen) {
    strvec classes = {0}, descr = {0}, folders = {0}, files = {0};
    item *items = NULL;
    int n_items = 0, cap_items = 0;
    vg_dataset *d = NULL;
    int *per_class = NULL;
    char p[4096], splitdir[4096];

    if (!is_dir(root)) { vg__err(err, errlen, "image folder root %s: %s", root, errno ? strerror(errno) : "not a directory"); return NULL; }
    const char *sname = split == VG_SPLIT_TRAIN ? "train" : "val";
    snprintf(splitdir, sizeof splitdir, "%s/%s", root, sname);
    if (!is_dir(splitdir)) { vg__err(err, errlen, "missing %s split: %s is not a directory", sname, splitdir); return NULL; }

    /* class order: classes.txt, else sorted train/ folders (so val labels match train labels) */
    snprintf(p, sizeof p, "%s/classes.txt", root);
    struct stat st;
    int have_txt = stat(p, &st) == 0;
    if (have_txt) {
        if (read_classes_txt(p, &classes, &descr, err, errlen)) goto fail;
    } else {
        snprintf(p, sizeof p, "%s/train", root);
        if (list_dir(is_dir(p) ? p : splitdir, 1, &classes, err, errlen)) goto fail;
        if (!classes.n) { vg__err(err, errlen, "%s: no class folders", is_dir(p) ? p : splitdir); goto fail; }
    }
    if (list_dir(splitdir, 1, &folders, err, errlen)) goto fail;
    for (int i = 0; i < folders.n; i++) {
        int found = 0;
        for (int c = 0; c < classes.n && !found; c++) found = !strcmp(folders.v[i], classes.v[c]);
        if (!found) {
            vg__err(err, errlen, "%s/%s: folder is not one of the %d classes (%s)", splitdir, folders.v[i], classes.n,
                    have_txt ? "listed in classes.txt" : "folders of train/");
            goto fail;
        }
    }

    for (int c = 0; c < classes.n; c++) {
        char cdir[4096];
        if (path_join(cdir, sizeof cdir, splitdir, classes.v[c])) { vg__err(err, errlen, "%s/%s: path too long", splitdir, classes.v[c]); goto fail; }
        if (!is_dir(cdir)) { vg__err(err, errlen, "%s: missing class folder for class %d (%s)", cdir, c, classes.v[c]); goto fail; }
        sv_free(&files);
        if (list_dir(cdir, 0, &files, err, errlen)) goto fail;
        if (!files.n) { vg__err(err, errlen, "%s: empty class folder (no image files)", cdir); goto fail; }
        for (int k = 0; k < files.n; k++) {
            if (n_items == cap_items) {
                cap_items = cap_items ? 2 * cap_items : 1024;
                item *t = realloc(items, (size_t)cap_items * sizeof *t);
                if (!t) { vg__err(err, errlen, "out of memory"); goto fail; }
                items = t;
            }
            item *it = &items[n_items];
            memset(it, 0, sizeof *it);
            it->path = path_join(p, sizeof p, cdir, files.v[k]) ? NULL : vg__strdup(p);
            it->label = c;
            n_items++;
            if (!it->path) { vg__err(err, errlen, "out of memory"); goto fail; }
        }
    }

    /* decode in parallel; results land in their own slot, so the outcome is order-independent */
    #pragma omp parallel for schedule(dynamic, 16)
    for (int i = 0; i < n_items; i++) {
        char e[VG_DATA_ERRLEN];
        if (is_dir(items[i].path)) { snprintf(e, sizeof e, "%s: is a directory, not an image", items[i].path); items[i].why = vg__strdup(e); continue; }
        if (vg_image_decode_file(items[i].path, &items[i].chw, &items[i].h, &items[i].w, &items[i].src_c, e, sizeof e))
            items[i].why = vg__strdup(e[0] ? e : "decode failed");
    }

    d = vg__dataset_new("imagefolder", root);
    per_class = calloc((size_t)(unsigned)classes.n, sizeof *per_class);
    if (!d || !per_class) { vg__err(err, errlen, "out of memory"); goto fail; }
    size_t bytes = 0;
    int n_ok = 0, n_bad = 0;
    for (int i = 0; i < n_items; i++) {
        if (items[i].chw) { n_ok++; per_class[items[i].label]++; bytes += (size_t)3 * items[i].h * items[i].w; }
        else n_bad++;
    }
    d->skipped = n_bad ? calloc((size_t)n_bad, sizeof *d->skipped) : NULL;
    for (int i = 0; i < n_items; i++)
        if (!items[i].chw) {
            if (!quiet) fprintf(stderr, "warning: skipping %s\n", items[i].why ? items[i].why : items[i].path);
            if (d->skipped) d->skipped[d->n_skipped++] = items[i].why ? items[i].why : vg__strdup(items[i].path);
            else free(items[i].why);
            items[i].why = NULL;
        }
    if (n_bad && !quiet) fprintf(stderr, "warning: %s: %d of %d files skipped\n", splitdir, n_bad, n_items);
    if (!n_ok) { vg__err(err, errlen, "%s: nothing usable: all %d files were skipped (first: %s)", splitdir, n_items, d->n_skipped ? d->skipped[0] : "?"); goto fail; }
    for (int c = 0; c < classes.n; c++)
        if (!per_class[c]) { vg__err(err, errlen, "%s/%s: no usable image in class folder (all files skipped)", splitdir, classes.v[c]); goto fail; }

    d->n = n_ok; d->channels = 3; d->n_classes = classes.n;
    d->labels = malloc((size_t)n_ok * sizeof *d->labels);
    d->pixels = malloc(bytes);
    d->offsets = malloc((size_t)n_ok * sizeof *d->offsets);
    d->heights = malloc((size_t)n_ok * sizeof(int));
    d->widths = malloc((size_t)n_ok * sizeof(int));
    d->src_channels = malloc((size_t)n_ok);
    d->files = calloc((size_t)n_ok, sizeof *d->files);
    if (!d->labels || !d->pixels || !d->offsets || !d->heights || !d->widths || !d->src_channels || !d->files) {
        d->n = 0; vg__err(err, errlen, "out of memory for %d images (%zu bytes)", n_ok, bytes); goto fail;
    }
    size_t at = 0;
    int j = 0, same = 1;
    for (int i = 0; i < n_items; i++) {
        if (!items[i].chw) continue;
        size_t sz = (size_t)3 * items[i].h * items[i].w;
        memcpy(d->pixels + at, items[i].chw, sz);
        d->offsets[j] = at; d->heights[j] = items[i].h; d->widths[j] = items[i].w;
        d->labels[j] = items[i].label; d->src_channels[j] = (uint8_t)items[i].src_c;
        d->files[j] = items[i].path; items[i].path = NULL;
        if (items[i].h != d->heights[0] || items[i].w != d->widths[0]) same = 0;
        at += sz; j++;
    }
    if (same) { d->height = d->heights[0]; d->width = d->widths[0]; }
    /* descriptions only when classes.txt gave them */
    d->class_names = classes.v; classes.v = NULL; classes.n = 0;
    if (have_txt) { d->class_descr = descr.v; descr.v = NULL; descr.n = 0; }
    /* the train split normalises with its own statistics; the val split takes the train split's
     * from the caller (./train, a checkpoint's data.mean), the old constants until then */
    if (split == VG_SPLIT_TRAIN) vg_dataset_norm_stats(d, d->mean, d->std);
    else vg_dataset_default_norm("imagefolder", d->mean, d->std);
    goto done;
fail:
    vg_dataset_free(d);
    d = NULL;
done:
    for (int i = 0; i < n_items; i++) { free(items[i].path); free(items[i].chw); free(items[i].why); }
    free(items); free(per_class);
    sv_free(&classes); sv_free(&descr); sv_free(&folders); sv_free(&files);
    return d;
}
