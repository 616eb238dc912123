/* idx.c — MNIST-style IDX files (Fashion-MNIST, MNIST), gzip-compressed or raw: zlib's gzread
 * reads both. Header: big-endian magic (0x00000803 images, 0x00000801 labels), then the sizes. */
#include "data/internal.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static int read_exact(gzFile g, void *buf, size_t n, size_t *got) {
    size_t at = 0;
    while (at < n) {
        unsigned chunk = n - at > (1u << 30) ? (1u << 30) : (unsigned)(n - at);
        int r = gzread(g, (uint8_t *)buf + at, chunk);
        if (r <= 0) break;
        at += (size_t)r;
    }
    *got = at;
    return at == n ? 0 : -1;
}

static const char *gz_reason(gzFile g) {
    int code = 0;
    const char *m = gzerror(g, &code);
    return code != Z_OK && code != Z_BUF_ERROR && m && *m ? m : "unexpected end of file";
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* reads one IDX file: dims[0..ndim-1] and the uint8 payload */
static int idx_read(const char *path, uint32_t want_magic, int ndim, uint32_t *dims, uint8_t **data,
                    char *err, size_t errlen) {
    *data = NULL;
    errno = 0;
    gzFile g = gzopen(path, "rb");
    if (!g) return vg__err(err, errlen, "cannot open %s: %s", path, errno ? strerror(errno) : "gzopen failed");
    uint8_t hdr[16];
    size_t got;
    size_t hbytes = 4 + 4 * (size_t)ndim;
    if (read_exact(g, hdr, hbytes, &got)) {
        vg__err(err, errlen, "%s: truncated header (%zu of %zu bytes; %s)", path, got, hbytes, gz_reason(g));
        gzclose(g); return -1;
    }
    uint32_t magic = be32(hdr);
    if (magic != want_magic) {
        vg__err(err, errlen, "%s: wrong IDX magic 0x%08x, expected 0x%08x (%s)", path, magic, want_magic,
                want_magic == 0x803 ? "uint8 images, 3 dims" : "uint8 labels, 1 dim");
        gzclose(g); return -1;
    }
    size_t total = 1;
    for (int k = 0; k < ndim; k++) {
        dims[k] = be32(hdr + 4 + 4 * k);
        if (dims[k] == 0 || dims[k] > (1u << 28)) {
            vg__err(err, errlen, "%s: implausible dimension %d = %u in the header", path, k, dims[k]);
            gzclose(g); return -1;
        }
        total *= dims[k];
    }
    if (total > ((size_t)1 << 34)) { vg__err(err, errlen, "%s: header promises %zu bytes, too large", path, total); gzclose(g); return -1; }
    /* The buffer grows with the data actually read (doubling, from 1 MB), not with what the
     * header promises: a damaged header cannot make us allocate gigabytes for a short file. */
    size_t cap = total < ((size_t)1 << 20) ? total : (size_t)1 << 20, have = 0;
    uint8_t *p = malloc(cap);
    for (;;) {
        if (!p) { vg__err(err, errlen, "%s: out of memory for %zu bytes", path, cap); gzclose(g); return -1; }
        int short_read = read_exact(g, p + have, cap - have, &got);
        have += got;
        if (short_read) {
            vg__err(err, errlen, "%s: truncated: header promises %zu data bytes, file has %zu (%s)", path, total, have, gz_reason(g));
            free(p); gzclose(g); return -1;
        }
        if (have == total) break;
        cap = total - cap < cap ? total : 2 * cap;
        uint8_t *q = realloc(p, cap);
        if (!q) free(p);
        p = q;
    }
    uint8_t extra;
    if (gzread(g, &extra, 1) == 1) {
        vg__err(err, errlen, "%s: longer than its header says (more than %zu data bytes); wrong file?", path, total);
        free(p); gzclose(g); return -1;
    }
    gzclose(g);
    *data = p;
    return 0;
}

vg_dataset *vg_idx_open(const char *images_path, const char *labels_path, char *err, size_t errlen) {
    uint32_t idim[3] = {0, 0, 0}, ldim[1] = {0};
    uint8_t *img = NULL, *lab = NULL;
    if (idx_read(images_path, 0x803, 3, idim, &img, err, errlen)) return NULL;
    if (idx_read(labels_path, 0x801, 1, ldim, &lab, err, errlen)) { free(img); return NULL; }
    if (idim[0] != ldim[0]) {
        vg__err(err, errlen, "%s has %u images but %s has %u labels", images_path, idim[0], labels_path, ldim[0]);
        free(img); free(lab); return NULL;
    }
    for (uint32_t i = 0; i < ldim[0]; i++)
        if (lab[i] >= 10) {
            vg__err(err, errlen, "%s: label %u of item %u is out of range 0..9", labels_path, lab[i], i);
            free(img); free(lab); return NULL;
        }
    vg_dataset *d = vg__dataset_new("idx", images_path);
    if (!d) { free(img); free(lab); vg__err(err, errlen, "out of memory"); return NULL; }
    d->n = (int)idim[0]; d->channels = 1; d->height = (int)idim[1]; d->width = (int)idim[2];
    d->pixels = img;
    d->labels = malloc((size_t)d->n * sizeof *d->labels);
    d->n_classes = 10;
    d->class_names = calloc(10, sizeof *d->class_names);
    if (!d->labels || !d->class_names) { free(lab); vg_dataset_free(d); vg__err(err, errlen, "out of memory"); return NULL; }
    for (int i = 0; i < d->n; i++) d->labels[i] = lab[i];
    free(lab);
    for (int c = 0; c < 10; c++) { char s[16]; snprintf(s, sizeof s, "%d", c); d->class_names[c] = vg__strdup(s); }
    return d;
}

/* dir/<base>.gz, else dir/<base>; the .gz name is used in messages when neither exists */
static void idx_path(char *out, size_t n, const char *dir, const char *base) {
    char gz[1100], raw[1100];
    snprintf(gz, sizeof gz, "%.1000s/%.60s.gz", dir, base);
    snprintf(raw, sizeof raw, "%.1000s/%.60s", dir, base);
    const char *pick = access(gz, F_OK) != 0 && access(raw, F_OK) == 0 ? raw : gz;
    size_t len = strlen(pick);
    if (len >= n) len = n - 1;
    memcpy(out, pick, len);
    out[len] = 0;
}

static vg_dataset *mnist_like(const char *name, const char *dir, vg_split split, char *err, size_t errlen) {
    char ip[1200], lp[1200];
    const char *pre = split == VG_SPLIT_TRAIN ? "train" : "t10k";
    char base[64];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", pre); idx_path(ip, sizeof ip, dir, base);
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", pre); idx_path(lp, sizeof lp, dir, base);
    vg_dataset *d = vg_idx_open(ip, lp, err, errlen);
    if (!d) return NULL;
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->path, sizeof d->path, "%s", dir);
    return d;
}

vg_dataset *vg_fashion_mnist_open(const char *dir, vg_split split, char *err, size_t errlen) {
    const char *const *names = vg_dataset_default_names("fashion-mnist", 10);
    vg_dataset *d = mnist_like("fashion-mnist", dir, split, err, errlen);
    if (!d) return NULL;
    for (int c = 0; c < 10; c++) { free(d->class_names[c]); d->class_names[c] = vg__strdup(names[c]); }
    const float m[3] = VG_FASHION_MNIST_MEAN, s[3] = VG_FASHION_MNIST_STD;
    memcpy(d->mean, m, sizeof m); memcpy(d->std, s, sizeof s);
    return d;
}

vg_dataset *vg_mnist_open(const char *dir, vg_split split, char *err, size_t errlen) {
    vg_dataset *d = mnist_like("mnist", dir, split, err, errlen);
    if (!d) return NULL;
    /* the widely published MNIST training-set values (no MNIST copy here to recompute them) */
    vg_dataset_default_norm("mnist", d->mean, d->std);
    return d;
}
