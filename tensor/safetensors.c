/* safetensors.c — the safetensors format: an atomic writer and a validating reader.
 * See safetensors.h for the layout. The reader never trusts the file: every length is checked
 * against what is really there before it is used, and the JSON parser is strict and bounded
 * (nesting depth limit, no recursion on untrusted data deeper than that). */
#include "safetensors.h"
#include "base/crc32c.h"
#include "base/durable.h"
#include "base/json.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (the format is little-endian)"
#endif

#define VG_ST_MAX_HEADER  (100u * 1024 * 1024)   /* same limit as the official implementation */

__attribute__((format(printf, 3, 4)))
static void seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap; va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- dtypes ------------------------------------------------------------------------------ */

static const struct { const char *name; size_t size; } dtypes[VG_ST_NUM_DTYPES] = {
    [VG_ST_F64] = {"F64", 8}, [VG_ST_F32] = {"F32", 4}, [VG_ST_F16] = {"F16", 2},
    [VG_ST_BF16] = {"BF16", 2}, [VG_ST_I64] = {"I64", 8}, [VG_ST_I32] = {"I32", 4},
    [VG_ST_U8] = {"U8", 1},
};

static int dtype_ok(vg_st_dtype dt) { return (int)dt >= 0 && dt < VG_ST_NUM_DTYPES; }
size_t vg_st_dtype_size(vg_st_dtype dt) { return dtype_ok(dt) ? dtypes[dt].size : 0; }
const char *vg_st_dtype_name(vg_st_dtype dt) { return dtype_ok(dt) ? dtypes[dt].name : "?"; }
int vg_st_dtype_parse(const char *s, vg_st_dtype *out) {
    for (int i = 0; i < VG_ST_NUM_DTYPES; i++)
        if (strcmp(s, dtypes[i].name) == 0) { *out = (vg_st_dtype)i; return 0; }
    return -1;
}

float vg_st_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);            /* inf / NaN */
    else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);  /* normal: rebias 15→127 */
    else if (man == 0) bits = sign;                                      /* ±0 */
    else {                                                               /* subnormal: man·2^-24 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    float f; memcpy(&f, &bits, 4); return f;
}
float vg_st_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16; float f; memcpy(&f, &bits, 4); return f;
}

/* metadata keys "crc32c.<tensor name>" hold each tensor's checksum (8 hex digits): they belong to
 * the format, not to the caller's metadata (the writer sets them, the reader checks them) */
#define CRC_PREFIX "crc32c."
static int is_crc_key(const char *k) { return strncmp(k, CRC_PREFIX, sizeof CRC_PREFIX - 1) == 0; }

/* ---- writer ------------------------------------------------------------------------------ */

typedef struct st_wentry {
    char *name; vg_st_dtype dtype; int ndim; int64_t shape[VG_ST_MAX_DIMS];
    const void *data; size_t nbytes; size_t offset;
} st_wentry;

struct vg_st_writer {
    st_wentry *e; size_t n, cap;
    char **mkey, **mval; size_t nm, mcap;
};

vg_st_writer *vg_st_writer_new(void) { return calloc(1, sizeof(vg_st_writer)); }

void vg_st_writer_free(vg_st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->e[i].name);
    for (size_t i = 0; i < w->nm; i++) { free(w->mkey[i]); free(w->mval[i]); }
    free(w->e); free(w->mkey); free(w->mval); free(w);
}

int vg_st_writer_add(vg_st_writer *w, const char *name, vg_st_dtype dtype,
                     int ndim, const int64_t *shape, const void *data, size_t nbytes,
                     char *err, size_t errlen) {
    if (!w || !name) { seterr(err, errlen, "safetensors writer: NULL writer or name"); return -1; }
    if (!name[0] || strcmp(name, "__metadata__") == 0 || !vg_utf8_valid(name)) {
        seterr(err, errlen, "safetensors writer: invalid tensor name \"%s\" "
               "(must be non-empty UTF-8 and not __metadata__)", name);
        return -1;
    }
    if (!dtype_ok(dtype)) { seterr(err, errlen, "safetensors writer: tensor \"%s\": unknown dtype %d", name, (int)dtype); return -1; }
    if (ndim < 0 || ndim > VG_ST_MAX_DIMS || (ndim > 0 && !shape)) {
        seterr(err, errlen, "safetensors writer: tensor \"%s\": ndim %d not in 0..%d", name, ndim, VG_ST_MAX_DIMS);
        return -1;
    }
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || __builtin_mul_overflow(numel, (uint64_t)shape[d], &numel)) {
            seterr(err, errlen, "safetensors writer: tensor \"%s\": bad dimension %" PRId64, name, shape[d]);
            return -1;
        }
    }
    size_t want;
    if (__builtin_mul_overflow(numel, dtypes[dtype].size, &want) || want != nbytes) {
        seterr(err, errlen, "safetensors writer: tensor \"%s\": %zu bytes given, shape and dtype %s need %zu",
               name, nbytes, dtypes[dtype].name, want);
        return -1;
    }
    if (nbytes > 0 && !data) { seterr(err, errlen, "safetensors writer: tensor \"%s\": NULL data", name); return -1; }
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->e[i].name, name) == 0) {
            seterr(err, errlen, "safetensors writer: duplicate tensor name \"%s\"", name);
            return -1;
        }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        st_wentry *e = realloc(w->e, cap * sizeof *e);
        if (!e) { seterr(err, errlen, "safetensors writer: out of memory"); return -1; }
        w->e = e; w->cap = cap;
    }
    st_wentry *e = &w->e[w->n];
    memset(e, 0, sizeof *e);
    if (!(e->name = strdup(name))) { seterr(err, errlen, "safetensors writer: out of memory"); return -1; }
    e->dtype = dtype; e->ndim = ndim; e->data = data; e->nbytes = nbytes;
    for (int d = 0; d < ndim; d++) e->shape[d] = shape[d];
    w->n++;
    return 0;
}

int vg_st_writer_meta(vg_st_writer *w, const char *key, const char *value, char *err, size_t errlen) {
    if (!w || !key || !value) { seterr(err, errlen, "safetensors writer: NULL writer, key or value"); return -1; }
    if (!vg_utf8_valid(key) || !vg_utf8_valid(value)) {
        seterr(err, errlen, "safetensors writer: metadata \"%s\": key or value is not valid UTF-8", key);
        return -1;
    }
    if (is_crc_key(key)) {
        seterr(err, errlen, "safetensors writer: metadata key \"%s\" is reserved: the writer records each "
               "tensor's checksum under \"" CRC_PREFIX "<name>\"", key);
        return -1;
    }
    for (size_t i = 0; i < w->nm; i++)
        if (strcmp(w->mkey[i], key) == 0) {
            seterr(err, errlen, "safetensors writer: duplicate metadata key \"%s\"", key);
            return -1;
        }
    if (w->nm == w->mcap) {
        size_t cap = w->mcap ? 2 * w->mcap : 8;
        char **k = realloc(w->mkey, cap * sizeof *k);
        if (!k) { seterr(err, errlen, "safetensors writer: out of memory"); return -1; }
        w->mkey = k;
        char **v = realloc(w->mval, cap * sizeof *v);
        if (!v) { seterr(err, errlen, "safetensors writer: out of memory"); return -1; }
        w->mval = v; w->mcap = cap;
    }
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) { free(k); free(v); seterr(err, errlen, "safetensors writer: out of memory"); return -1; }
    w->mkey[w->nm] = k; w->mval[w->nm] = v; w->nm++;
    return 0;
}

int vg_st_write(const vg_st_writer *w, const char *path, char *err, size_t errlen) {
    if (!w || !path || !path[0]) { seterr(err, errlen, "safetensors: vg_st_write: NULL writer or empty path"); return -1; }

    /* data layout: element size 8, 4, 2, 1 in turn, insertion order within each — no gaps, and
     * each tensor aligned to its element size since the data section starts at a multiple of 8 */
    size_t *offset = calloc(w->n ? w->n : 1, sizeof *offset), *order = calloc(w->n ? w->n : 1, sizeof *order);
    if (!offset || !order) { free(offset); free(order); seterr(err, errlen, "%s: out of memory", path); return -1; }
    size_t pos = 0, k = 0;
    for (size_t sz = 8; sz >= 1; sz /= 2)
        for (size_t i = 0; i < w->n; i++)
            if (dtypes[w->e[i].dtype].size == sz) { offset[i] = pos; pos += w->e[i].nbytes; order[k++] = i; }

    vg_jbuf h = {0};
    vg_jbuf_str(&h, "{");
    int first = 1;
    if (w->nm > 0 || w->n > 0) {
        vg_jbuf_str(&h, "\"__metadata__\":{");
        for (size_t i = 0; i < w->nm; i++) {
            if (i) vg_jbuf_str(&h, ",");
            vg_jbuf_string(&h, w->mkey[i]); vg_jbuf_str(&h, ":"); vg_jbuf_string(&h, w->mval[i]);
        }
        /* then every tensor's CRC-32C, so damage to the data after writing is found when read */
        for (size_t i = 0; i < w->n && !h.oom; i++) {
            size_t kn = sizeof CRC_PREFIX + strlen(w->e[i].name);
            char *key = malloc(kn), hex[16];
            if (!key) { h.oom = 1; break; }
            snprintf(key, kn, CRC_PREFIX "%s", w->e[i].name);
            snprintf(hex, sizeof hex, "%08" PRIx32, w->e[i].nbytes ? vg_crc32c(w->e[i].data, w->e[i].nbytes) : 0u);
            if (i || w->nm) vg_jbuf_str(&h, ",");
            vg_jbuf_string(&h, key); vg_jbuf_str(&h, ":"); vg_jbuf_string(&h, hex);
            free(key);
        }
        vg_jbuf_str(&h, "}");
        first = 0;
    }
    for (size_t i = 0; i < w->n; i++) {
        const st_wentry *e = &w->e[i];
        if (!first) vg_jbuf_str(&h, ",");
        first = 0;
        vg_jbuf_string(&h, e->name);
        vg_jbuf_fmt(&h, ":{\"dtype\":\"%s\",\"shape\":[", dtypes[e->dtype].name);
        for (int d = 0; d < e->ndim; d++) vg_jbuf_fmt(&h, d ? ",%" PRId64 : "%" PRId64, e->shape[d]);
        vg_jbuf_fmt(&h, "],\"data_offsets\":[%zu,%zu]}", offset[i], offset[i] + e->nbytes);
    }
    vg_jbuf_str(&h, "}");
    while (!h.oom && h.n % 8 != 0) vg_jbuf_str(&h, " ");
    free(offset);
    if (h.oom) { free(h.p); free(order); seterr(err, errlen, "%s: out of memory building header", path); return -1; }
    if (h.n > VG_ST_MAX_HEADER) {
        free(h.p); free(order);
        seterr(err, errlen, "%s: header would be %zu bytes, over the 100 MB limit", path, h.n);
        return -1;
    }

    /* the file: 8-byte little-endian header length, the header, the data in `order` */
    vg_atomic_file file;
    if (vg_atomic_open(&file, path, err, errlen)) { free(h.p); free(order); return -1; }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    vg_atomic_write(&file, len8, 8);
    vg_atomic_write(&file, h.p, h.n);
    for (size_t i = 0; i < w->n; i++)
        if (w->e[order[i]].nbytes) vg_atomic_write(&file, w->e[order[i]].data, w->e[order[i]].nbytes);
    free(h.p); free(order);
    return vg_atomic_commit(&file, err, errlen);
}

/* ---- reader: strict JSON, driven by the schema of a safetensors header ---------------------- */

struct vg_st_file {
    char *label;                      /* the path, for messages */
    unsigned char *buf; size_t size;  /* the whole file */
    const unsigned char *data; size_t data_size;
    vg_st_tensor *t; size_t nt, tcap;
    const vg_st_tensor **by_name;     /* sorted by name, for vg_st_find */
    char **mkey, **mval; size_t nm, mcap;
    char **ckey, **cval; size_t nc, ccap;   /* the crc32c.* keys, apart from the caller's metadata */
};

/* an array of integers, at most `max` of them (more is an error); count in *n */
static int jint_array(vg_json *j, const char *tname, const char *what, int64_t *out, int max, int *n) {
    *n = 0;
    if (vg_json_peek(j) != '[') return vg_json_fail(j, "tensor \"%s\": %s must be an array", tname, what);
    j->pos++;
    if (vg_json_peek(j) == ']') { j->pos++; return 0; }
    for (;;) {
        int64_t v; int isi;
        if (vg_json_number(j, &v, &isi)) return -1;
        if (!isi || v < 0) return vg_json_fail(j, "tensor \"%s\": %s must hold non-negative integers", tname, what);
        if (*n >= max) return vg_json_fail(j, "tensor \"%s\": %s has more than %d entries", tname, what, max);
        out[(*n)++] = v;
        int d = vg_json_peek(j);
        if (d == ',') { j->pos++; continue; }
        return vg_json_expect(j, ']');
    }
}

static int file_add_tensor(vg_st_file *f, vg_json *j, char *name) {
    if (f->nt == f->tcap) {
        size_t cap = f->tcap ? 2 * f->tcap : 64;
        vg_st_tensor *t = realloc(f->t, cap * sizeof *t);
        if (!t) { free(name); return vg_json_fail(j, "out of memory"); }
        f->t = t; f->tcap = cap;
    }
    memset(&f->t[f->nt], 0, sizeof f->t[0]);
    f->t[f->nt++].name = name;       /* owned by the file from now on */
    return 0;
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e]} → f->t[f->nt-1]; offsets in *b, *e */
static int jentry(vg_json *j, vg_st_tensor *t, uint64_t *b, uint64_t *e) {
    const char *nm = t->name;
    if (vg_json_peek(j) != '{') return vg_json_fail(j, "tensor \"%s\": entry must be an object", nm);
    j->pos++;
    int have_dtype = 0, have_shape = 0, have_off = 0;
    if (vg_json_peek(j) == '}') j->pos++;
    else for (;;) {
        char *key;
        if (vg_json_string(j, &key)) return -1;
        if (vg_json_expect(j, ':')) { free(key); return -1; }
        int rc = 0;
        if (strcmp(key, "dtype") == 0) {
            char *dt;
            if (have_dtype++) rc = vg_json_fail(j, "tensor \"%s\": dtype given twice", nm);
            else if (!(rc = vg_json_string(j, &dt))) {
                if (vg_st_dtype_parse(dt, &t->dtype))
                    rc = vg_json_fail(j, "tensor \"%s\": unknown dtype \"%.32s\" (supported: F64 F32 F16 BF16 I64 I32 U8)", nm, dt);
                free(dt);
            }
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++) rc = vg_json_fail(j, "tensor \"%s\": shape given twice", nm);
            else rc = jint_array(j, nm, "shape", t->shape, VG_ST_MAX_DIMS, &t->ndim);
        } else if (strcmp(key, "data_offsets") == 0) {
            int64_t off[2]; int n;
            if (have_off++) rc = vg_json_fail(j, "tensor \"%s\": data_offsets given twice", nm);
            else if (!(rc = jint_array(j, nm, "data_offsets", off, 2, &n))) {
                if (n != 2) rc = vg_json_fail(j, "tensor \"%s\": data_offsets must be [begin, end]", nm);
                else { *b = (uint64_t)off[0]; *e = (uint64_t)off[1]; }
            }
        } else rc = vg_json_skip(j, 1);
        free(key);
        if (rc) return -1;
        int d = vg_json_peek(j);
        if (d == ',') { j->pos++; continue; }
        if (vg_json_expect(j, '}')) return -1;
        break;
    }
    if (!have_dtype || !have_shape || !have_off)
        return vg_json_fail(j, "tensor \"%s\": missing %s", nm, !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return 0;
}

/* append (k, v) to a growable pair of string arrays; takes k and v (freed on failure) */
static int push_pair(char ***keys, char ***vals, size_t *n, size_t *cap, char *k, char *v) {
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        char **nk = realloc(*keys, c * sizeof *nk);
        if (nk) *keys = nk;
        char **nv = nk ? realloc(*vals, c * sizeof *nv) : NULL;
        if (nv) *vals = nv;
        if (!nk || !nv) { free(k); free(v); return -1; }
        *cap = c;
    }
    (*keys)[*n] = k; (*vals)[*n] = v; (*n)++;
    return 0;
}

static int jmetadata(vg_json *j, vg_st_file *f) {
    if (vg_json_peek(j) != '{') return vg_json_fail(j, "__metadata__ must be an object of strings");
    j->pos++;
    if (vg_json_peek(j) == '}') { j->pos++; return 0; }
    for (;;) {
        char *k = NULL, *v = NULL;
        if (vg_json_string(j, &k)) return -1;
        if (vg_json_expect(j, ':')) { free(k); return -1; }
        if (vg_json_peek(j) != '"') { free(k); return vg_json_fail(j, "__metadata__ values must be strings"); }
        if (vg_json_string(j, &v)) { free(k); return -1; }
        int rc = is_crc_key(k) ? push_pair(&f->ckey, &f->cval, &f->nc, &f->ccap, k, v)    /* checksums */
                               : push_pair(&f->mkey, &f->mval, &f->nm, &f->mcap, k, v);
        if (rc) return vg_json_fail(j, "out of memory");
        int d = vg_json_peek(j);
        if (d == ',') { j->pos++; continue; }
        return vg_json_expect(j, '}');
    }
}

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp((*(const vg_st_tensor *const *)a)->name, (*(const vg_st_tensor *const *)b)->name);
}
static int cmp_tensor_data(const void *a, const void *b) {
    const vg_st_tensor *x = *(const vg_st_tensor *const *)a, *y = *(const vg_st_tensor *const *)b;
    const unsigned char *px = x->data, *py = y->data;
    return px < py ? -1 : px > py ? 1 : 0;
}
static int cmp_strp(const void *a, const void *b) { return strcmp(**(char **const *)a, **(char **const *)b); }

void vg_st_close(vg_st_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->nt; i++) free((char *)f->t[i].name);
    for (size_t i = 0; i < f->nm; i++) { free(f->mkey[i]); free(f->mval[i]); }
    for (size_t i = 0; i < f->nc; i++) { free(f->ckey[i]); free(f->cval[i]); }
    free(f->t); free(f->by_name); free(f->mkey); free(f->mval); free(f->ckey); free(f->cval);
    free(f->buf); free(f->label); free(f);
}

/* st_parse's steps, in order. Each returns 0, or -1 with the message in err. */

/* the 8-byte little-endian header length: the header must fit in the file and the 100 MB limit */
static int parse_length(vg_st_file *f, uint64_t *hlen, char *err, size_t errlen) {
    const char *label = f->label;
    if (f->size < 8) {
        seterr(err, errlen, "%s: file is %zu bytes, too small for a safetensors file (needs at least 8)", label, f->size);
        return -1;
    }
    *hlen = 0;
    for (int i = 7; i >= 0; i--) *hlen = (*hlen << 8) | f->buf[i];
    if (*hlen > f->size - 8) {
        seterr(err, errlen, "%s: header length %" PRIu64 " exceeds the %zu bytes after the length field "
               "(truncated file, or not a safetensors file)", label, *hlen, f->size - 8);
        return -1;
    }
    if (*hlen > VG_ST_MAX_HEADER) {
        seterr(err, errlen, "%s: header length %" PRIu64 " is over the 100 MB limit", label, *hlen);
        return -1;
    }
    f->data = f->buf + 8 + *hlen; f->data_size = f->size - 8 - (size_t)*hlen;
    return 0;
}

/* The header object: "__metadata__" (at most once) and one entry per tensor, into f. Each tensor's
 * data_offsets go to (*ob)[i], (*oe)[i] (malloc'd; the caller frees them, also on failure): they
 * are checked once the whole JSON is known to be sound. */
static int parse_header(vg_st_file *f, vg_json *j, uint64_t **ob, uint64_t **oe) {
    size_t ocap = 0;
    int have_meta = 0;
    if (vg_json_peek(j) != '{')
        return vg_json_peek(j) < 0 ? vg_json_fail(j, "header is empty, expected a JSON object")
                                   : vg_json_fail(j, "header is not a JSON object (does not start with '{')");
    j->pos++;
    if (vg_json_peek(j) == '}') j->pos++;
    else for (;;) {
        char *key;
        if (vg_json_string(j, &key)) return -1;
        if (vg_json_expect(j, ':')) { free(key); return -1; }
        if (strcmp(key, "__metadata__") == 0) {
            free(key);
            if (have_meta++) return vg_json_fail(j, "__metadata__ given twice");
            if (jmetadata(j, f)) return -1;
        } else {
            if (file_add_tensor(f, j, key)) return -1;
            if (f->nt > ocap) {
                size_t cap = ocap ? 2 * ocap : 64;
                uint64_t *nb = realloc(*ob, cap * sizeof *nb);
                if (nb) *ob = nb;
                uint64_t *ne = nb ? realloc(*oe, cap * sizeof *ne) : NULL;
                if (ne) *oe = ne;
                if (!nb || !ne) return vg_json_fail(j, "out of memory");
                ocap = cap;
            }
            if (jentry(j, &f->t[f->nt - 1], &(*ob)[f->nt - 1], &(*oe)[f->nt - 1])) return -1;
        }
        int d = vg_json_peek(j);
        if (d == ',') { j->pos++; continue; }
        if (vg_json_expect(j, '}')) return -1;
        break;
    }
    if (vg_json_peek(j) >= 0) return vg_json_fail(j, "unexpected text after the header object");
    return 0;
}

/* each tensor's [ob, oe) lies in the data section and spans exactly its shape × dtype size */
static int check_offsets(vg_st_file *f, const uint64_t *ob, const uint64_t *oe, char *err, size_t errlen) {
    const char *label = f->label;
    for (size_t i = 0; i < f->nt; i++) {
        vg_st_tensor *t = &f->t[i];
        size_t numel = 1, nbytes = 0;
        int ovf = 0;
        for (int d = 0; d < t->ndim; d++) ovf |= __builtin_mul_overflow(numel, (uint64_t)t->shape[d], &numel);
        ovf |= __builtin_mul_overflow(numel, dtypes[t->dtype].size, &nbytes);
        if (ovf) { seterr(err, errlen, "%s: tensor \"%s\": shape is too large", label, t->name); return -1; }
        if (ob[i] > oe[i]) {
            seterr(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin",
                   label, t->name, ob[i], oe[i]);
            return -1;
        }
        if (oe[i] > f->data_size) {
            seterr(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] out of range: "
                   "the data section has only %zu bytes (truncated file?)", label, t->name, ob[i], oe[i], f->data_size);
            return -1;
        }
        if (oe[i] - ob[i] != nbytes) {
            char shp[160] = ""; size_t sp = 0;
            for (int d = 0; d < t->ndim && sp < sizeof shp - 24; d++)
                sp += (size_t)snprintf(shp + sp, sizeof shp - sp, d ? ", %" PRId64 : "%" PRId64, t->shape[d]);
            seterr(err, errlen, "%s: tensor \"%s\": shape [%s] of %s needs %zu bytes but data_offsets "
                   "[%" PRIu64 ", %" PRIu64 "] span %" PRIu64, label, t->name, shp, dtypes[t->dtype].name,
                   nbytes, ob[i], oe[i], oe[i] - ob[i]);
            return -1;
        }
        t->numel = numel; t->nbytes = nbytes; t->data = f->data + ob[i];
    }
    return 0;
}

/* unique tensor names (the sorted view f->by_name is kept for vg_st_find), then no two non-empty
 * data ranges overlapping */
static int check_names_and_ranges(vg_st_file *f, char *err, size_t errlen) {
    const char *label = f->label;
    size_t nt = f->nt ? f->nt : 1;
    f->by_name = malloc(nt * sizeof *f->by_name);
    const vg_st_tensor **by_data = malloc(nt * sizeof *by_data);
    if (!f->by_name || !by_data) { free(by_data); seterr(err, errlen, "%s: out of memory", label); return -1; }
    size_t ne = 0;
    for (size_t i = 0; i < f->nt; i++) {
        f->by_name[i] = &f->t[i];
        if (f->t[i].nbytes) by_data[ne++] = &f->t[i];
    }
    qsort(f->by_name, f->nt, sizeof *f->by_name, cmp_tensor_name);
    for (size_t i = 1; i < f->nt; i++)
        if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0) {
            seterr(err, errlen, "%s: duplicate tensor name \"%s\"", label, f->by_name[i]->name);
            free(by_data); return -1;
        }
    qsort(by_data, ne, sizeof *by_data, cmp_tensor_data);
    for (size_t i = 1; i < ne; i++) {
        const vg_st_tensor *a = by_data[i - 1], *b = by_data[i];
        if ((const unsigned char *)a->data + a->nbytes > (const unsigned char *)b->data) {
            size_t ab = (size_t)((const unsigned char *)a->data - f->data), bb = (size_t)((const unsigned char *)b->data - f->data);
            seterr(err, errlen, "%s: tensors \"%s\" [%zu, %zu] and \"%s\" [%zu, %zu] overlap in the data section",
                   label, a->name, ab, ab + a->nbytes, b->name, bb, bb + b->nbytes);
            free(by_data); return -1;
        }
    }
    free(by_data);
    return 0;
}

static int check_metadata_keys(vg_st_file *f, char *err, size_t errlen) {
    if (f->nm < 2) return 0;
    char ***keys = malloc(f->nm * sizeof *keys);
    if (!keys) { seterr(err, errlen, "%s: out of memory", f->label); return -1; }
    for (size_t i = 0; i < f->nm; i++) keys[i] = &f->mkey[i];
    qsort(keys, f->nm, sizeof *keys, cmp_strp);
    int rc = 0;
    for (size_t i = 1; i < f->nm && !rc; i++)
        if (strcmp(*keys[i - 1], *keys[i]) == 0) {
            seterr(err, errlen, "%s: duplicate __metadata__ key \"%s\"", f->label, *keys[i]);
            rc = -1;
        }
    free(keys);
    return rc;
}

/* the crc32c.* keys: each names a tensor of the file, once, as 8 hex digits; with verify, the
 * data must match them */
static int check_checksums(vg_st_file *f, int verify, char *err, size_t errlen) {
    const char *label = f->label;
    for (size_t i = 0; i < f->nc; i++) {
        const char *tname = f->ckey[i] + sizeof CRC_PREFIX - 1, *hex = f->cval[i];
        vg_st_tensor *t = (vg_st_tensor *)vg_st_find(f, tname);     /* an element of f->t */
        if (!t) {
            seterr(err, errlen, "%s: __metadata__ holds a checksum for tensor \"%s\", which the file does not have "
                   "(a damaged header, or a tool removed tensors and kept the metadata)", label, tname);
            return -1;
        }
        if (t->has_checksum) { seterr(err, errlen, "%s: tensor \"%s\": checksum given twice", label, tname); return -1; }
        int ok = strlen(hex) == 8;
        for (int k = 0; ok && k < 8; k++) ok = strchr("0123456789abcdefABCDEF", hex[k]) != NULL;
        if (!ok) {
            seterr(err, errlen, "%s: tensor \"%s\": checksum \"%.40s\" is not 8 hexadecimal digits", label, tname, hex);
            return -1;
        }
        t->has_checksum = 1;
        t->checksum = (uint32_t)strtoul(hex, NULL, 16);
    }
    for (size_t i = 0; verify && i < f->nt; i++) {
        const vg_st_tensor *t = &f->t[i];
        if (!t->has_checksum) continue;
        uint32_t c = t->nbytes ? vg_crc32c(t->data, t->nbytes) : 0;
        if (c != t->checksum) {
            seterr(err, errlen, "%s: tensor \"%s\" is damaged: the CRC-32C of its %zu bytes is %08" PRIx32 ", the "
                   "file recorded %08" PRIx32 " when it was written (changed since: a disk, copy or transfer error)",
                   label, t->name, t->nbytes, c, t->checksum);
            return -1;
        }
    }
    return 0;
}

/* A safetensors file from its bytes; takes ownership of buf (malloc'd, `size` bytes). Nothing in
 * the file is trusted: the length, then the JSON header, then every tensor's range, names,
 * metadata keys and checksums are checked before the file is handed out. */
static vg_st_file *st_parse(unsigned char *buf, size_t size, const char *label, int verify, char *err, size_t errlen) {
    vg_st_file *f = calloc(1, sizeof *f);
    char *lab = strdup(label);
    if (!f || !lab) { free(f); free(lab); free(buf); seterr(err, errlen, "%s: out of memory", label); return NULL; }
    f->label = lab; f->buf = buf; f->size = size;

    uint64_t hlen, *ob = NULL, *oe = NULL;
    if (parse_length(f, &hlen, err, errlen)) goto fail;
    vg_json j = { .s = (const char *)buf + 8, .n = (size_t)hlen, .base = 8, .label = label, .what = "header JSON",
                  .err = err, .errlen = errlen };
    int bad = parse_header(f, &j, &ob, &oe) || check_offsets(f, ob, oe, err, errlen);
    free(ob); free(oe);
    if (bad || check_names_and_ranges(f, err, errlen) || check_metadata_keys(f, err, errlen) ||
        check_checksums(f, verify, err, errlen)) goto fail;
    return f;
fail:
    vg_st_close(f);
    return NULL;
}

/* read the whole file; verify: check every tensor that has a checksum */
static vg_st_file *st_open_file(const char *path, int verify, char *err, size_t errlen) {
    if (!path) { seterr(err, errlen, "safetensors: NULL path"); return NULL; }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return NULL; }
    struct stat st;
    if (fstat(fd, &st) != 0) { seterr(err, errlen, "%s: cannot stat: %s", path, strerror(errno)); close(fd); return NULL; }
    if (!S_ISREG(st.st_mode)) { seterr(err, errlen, "%s: not a regular file", path); close(fd); return NULL; }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX / 2) { seterr(err, errlen, "%s: file too large", path); close(fd); return NULL; }
    size_t size = (size_t)st.st_size, got = 0;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) { seterr(err, errlen, "%s: out of memory reading %zu bytes", path, size); close(fd); return NULL; }
    while (got < size) {
        ssize_t k = read(fd, buf + got, size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { seterr(err, errlen, "%s: read failed: %s", path, strerror(errno)); free(buf); close(fd); return NULL; }
        if (k == 0) break;     /* shrank while we read: validate what we got */
        got += (size_t)k;
    }
    close(fd);
    return st_parse(buf, got, path, verify, err, errlen);
}

vg_st_file *vg_st_open(const char *path, char *err, size_t errlen) { return st_open_file(path, 1, err, errlen); }
vg_st_file *vg_st_open_unverified(const char *path, char *err, size_t errlen) { return st_open_file(path, 0, err, errlen); }

vg_st_file *vg_st_open_memory(const void *bytes, size_t n, const char *label, char *err, size_t errlen) {
    if (!label) label = "<memory>";
    if (!bytes && n) { seterr(err, errlen, "%s: NULL buffer", label); return NULL; }
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) { seterr(err, errlen, "%s: out of memory", label); return NULL; }
    if (n) memcpy(buf, bytes, n);
    return st_parse(buf, n, label, 1, err, errlen);
}

size_t vg_st_count(const vg_st_file *f) { return f ? f->nt : 0; }
const vg_st_tensor *vg_st_at(const vg_st_file *f, size_t i) { return f && i < f->nt ? &f->t[i] : NULL; }
const vg_st_tensor *vg_st_find(const vg_st_file *f, const char *name) {
    if (!f || !name) return NULL;
    size_t lo = 0, hi = f->nt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->by_name[mid]->name, name);
        if (c == 0) return f->by_name[mid];
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

const char *vg_st_meta(const vg_st_file *f, const char *key) {
    if (!f || !key) return NULL;
    for (size_t i = 0; i < f->nm; i++) if (strcmp(f->mkey[i], key) == 0) return f->mval[i];
    return NULL;
}
size_t vg_st_meta_count(const vg_st_file *f) { return f ? f->nm : 0; }
const char *vg_st_meta_key(const vg_st_file *f, size_t i) { return f && i < f->nm ? f->mkey[i] : NULL; }
const char *vg_st_meta_value(const vg_st_file *f, size_t i) { return f && i < f->nm ? f->mval[i] : NULL; }

/* element i of t as double (memcpy: the data need not be aligned) */
static double elem_f64(const vg_st_tensor *t, size_t i) {
    const unsigned char *p = (const unsigned char *)t->data + i * dtypes[t->dtype].size;
    switch (t->dtype) {
    case VG_ST_F64:  { double v;   memcpy(&v, p, 8); return v; }
    case VG_ST_F32:  { float v;    memcpy(&v, p, 4); return v; }
    case VG_ST_F16:  { uint16_t v; memcpy(&v, p, 2); return vg_st_f16_to_f32(v); }
    case VG_ST_BF16: { uint16_t v; memcpy(&v, p, 2); return vg_st_bf16_to_f32(v); }
    case VG_ST_I64:  { int64_t v;  memcpy(&v, p, 8); return (double)v; }
    case VG_ST_I32:  { int32_t v;  memcpy(&v, p, 4); return v; }
    case VG_ST_U8:   return p[0];
    default:         return 0;
    }
}

static const vg_st_tensor *lookup_n(const vg_st_file *f, const char *name, size_t n, char *err, size_t errlen) {
    if (!f || !name) { seterr(err, errlen, "safetensors: NULL file or name"); return NULL; }
    const vg_st_tensor *t = vg_st_find(f, name);
    if (!t) { seterr(err, errlen, "%s: no tensor named \"%s\"", f->label, name); return NULL; }
    if (t->numel != n) {
        seterr(err, errlen, "%s: tensor \"%s\" has %zu elements, expected %zu", f->label, name, t->numel, n);
        return NULL;
    }
    return t;
}

int vg_st_read_f32(const vg_st_file *f, const char *name, float *out, size_t n, char *err, size_t errlen) {
    const vg_st_tensor *t = lookup_n(f, name, n, err, errlen);
    if (!t) return -1;
    if (t->dtype == VG_ST_F32) { if (n) memcpy(out, t->data, n * 4); return 0; }
    if (t->dtype == VG_ST_F16 || t->dtype == VG_ST_BF16) {    /* exact in float: skip the double */
        const unsigned char *p = t->data;
        for (size_t i = 0; i < n; i++) {
            uint16_t v; memcpy(&v, p + 2 * i, 2);
            out[i] = t->dtype == VG_ST_F16 ? vg_st_f16_to_f32(v) : vg_st_bf16_to_f32(v);
        }
        return 0;
    }
    for (size_t i = 0; i < n; i++) out[i] = (float)elem_f64(t, i);
    return 0;
}

int vg_st_read_f64(const vg_st_file *f, const char *name, double *out, size_t n, char *err, size_t errlen) {
    const vg_st_tensor *t = lookup_n(f, name, n, err, errlen);
    if (!t) return -1;
    if (t->dtype == VG_ST_F64) { if (n) memcpy(out, t->data, n * 8); return 0; }
    for (size_t i = 0; i < n; i++) out[i] = elem_f64(t, i);
    return 0;
}

int vg_st_read_i64(const vg_st_file *f, const char *name, int64_t *out, size_t n, char *err, size_t errlen) {
    const vg_st_tensor *t = lookup_n(f, name, n, err, errlen);
    if (!t) return -1;
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case VG_ST_I64: if (n) memcpy(out, p, n * 8); return 0;
    case VG_ST_I32: for (size_t i = 0; i < n; i++) { int32_t v; memcpy(&v, p + 4 * i, 4); out[i] = v; } return 0;
    case VG_ST_U8:  for (size_t i = 0; i < n; i++) out[i] = p[i]; return 0;
    default:
        seterr(err, errlen, "%s: tensor \"%s\" is %s, not an integer dtype", f->label, name, dtypes[t->dtype].name);
        return -1;
    }
}
