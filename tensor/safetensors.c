/* safetensors.c — the safetensors format: an atomic writer and a validating reader.
 * See safetensors.h for the layout. The reader never trusts the file: every length is checked
 * against what is really there before it is used, and the JSON parser is strict and bounded
 * (nesting depth limit, no recursion on untrusted data deeper than that). */
#include "safetensors.h"
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
#define VG_ST_MAX_DEPTH   64                     /* JSON nesting we are willing to skip */

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

/* ---- CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78) ------------------------
 * The checksum every written tensor carries. SSE4.2 has it as an instruction (8 bytes per
 * crc32q); elsewhere a slicing-by-8 table (tables built once). Same values either way. */
#if defined(__SSE4_2__)
#include <nmmintrin.h>
uint32_t vg_crc32c(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t c = 0xffffffffu;
    for (; n >= 8; n -= 8, p += 8) { uint64_t v; memcpy(&v, p, 8); c = _mm_crc32_u64(c, v); }
    uint32_t c32 = (uint32_t)c;
    for (; n > 0; n--, p++) c32 = _mm_crc32_u8(c32, *p);
    return ~c32;
}
#else
#include <pthread.h>
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static void crc_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}
uint32_t vg_crc32c(const void *data, size_t n) {
    pthread_once(&crc_once, crc_tables);
    const unsigned char *p = data;
    uint32_t c = 0xffffffffu;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
            crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
    }
    for (; n > 0; n--, p++) c = (c >> 8) ^ crc_table[0][(c ^ *p) & 0xff];
    return ~c;
}
#endif

/* metadata keys "crc32c.<tensor name>" hold each tensor's checksum (8 hex digits): they belong to
 * the format, not to the caller's metadata (the writer sets them, the reader checks them) */
#define CRC_PREFIX "crc32c."
static int is_crc_key(const char *k) { return strncmp(k, CRC_PREFIX, sizeof CRC_PREFIX - 1) == 0; }

/* UTF-8 validity of s[0..n): well-formed, shortest form, no surrogates, ≤ U+10FFFF.
 * Returns the length of the sequence starting at s, or 0 if it is invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len; unsigned cp;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}
static int utf8_valid(const char *str) {
    const unsigned char *s = (const unsigned char *)str; size_t n = strlen(str);
    for (size_t i = 0; i < n;) { size_t k = utf8_seq(s + i, n - i); if (!k) return 0; i += k; }
    return 1;
}

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
    if (!name[0] || strcmp(name, "__metadata__") == 0 || !utf8_valid(name)) {
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
    if (!utf8_valid(key) || !utf8_valid(value)) {
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

/* growable string for the JSON header; `oom` sticks once set */
typedef struct st_buf { char *p; size_t n, cap; int oom; } st_buf;

static void buf_put(st_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p; b->cap = cap;
    }
    memcpy(b->p + b->n, s, n); b->n += n; b->p[b->n] = 0;
}
static void buf_str(st_buf *b, const char *s) { buf_put(b, s, strlen(s)); }
__attribute__((format(printf, 2, 3)))
static void buf_fmt(st_buf *b, const char *fmt, ...) {
    char tmp[64]; va_list ap; va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0 && (size_t)k < sizeof tmp) buf_put(b, tmp, (size_t)k); else b->oom = 1;
}
/* JSON string literal; UTF-8 bytes pass through, control characters are escaped */
static void buf_json_str(st_buf *b, const char *s) {
    buf_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"':  buf_put(b, "\\\"", 2); break;
        case '\\': buf_put(b, "\\\\", 2); break;
        case '\n': buf_put(b, "\\n", 2); break;
        case '\r': buf_put(b, "\\r", 2); break;
        case '\t': buf_put(b, "\\t", 2); break;
        default:
            if (*c < 0x20) buf_fmt(b, "\\u%04x", *c);
            else buf_put(b, (const char *)c, 1);
        }
    }
    buf_put(b, "\"", 1);
}

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
        if (k < 0) { if (errno == EINTR) continue; return -1; }
        c += k; n -= (size_t)k;
    }
    return 0;
}

/* fsync the directory holding `path`, so the rename itself survives a power cut */
static int fsync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) dir = strdup(".");
    else if (slash == path) dir = strdup("/");
    else dir = strndup(path, (size_t)(slash - path));
    if (!dir) { errno = ENOMEM; return -1; }
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    free(dir);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    if (rc != 0 && (errno == EINVAL || errno == EROFS)) rc = 0;   /* fs without directory fsync */
    int e = errno; close(fd); errno = e;
    return rc;
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

    st_buf h = {0};
    buf_str(&h, "{");
    int first = 1;
    if (w->nm > 0 || w->n > 0) {
        buf_str(&h, "\"__metadata__\":{");
        for (size_t i = 0; i < w->nm; i++) {
            if (i) buf_str(&h, ",");
            buf_json_str(&h, w->mkey[i]); buf_str(&h, ":"); buf_json_str(&h, w->mval[i]);
        }
        /* then every tensor's CRC-32C, so damage to the data after writing is found when read */
        for (size_t i = 0; i < w->n && !h.oom; i++) {
            size_t kn = sizeof CRC_PREFIX + strlen(w->e[i].name);
            char *key = malloc(kn), hex[16];
            if (!key) { h.oom = 1; break; }
            snprintf(key, kn, CRC_PREFIX "%s", w->e[i].name);
            snprintf(hex, sizeof hex, "%08" PRIx32, w->e[i].nbytes ? vg_crc32c(w->e[i].data, w->e[i].nbytes) : 0u);
            if (i || w->nm) buf_str(&h, ",");
            buf_json_str(&h, key); buf_str(&h, ":"); buf_json_str(&h, hex);
            free(key);
        }
        buf_str(&h, "}");
        first = 0;
    }
    for (size_t i = 0; i < w->n; i++) {
        const st_wentry *e = &w->e[i];
        if (!first) buf_str(&h, ",");
        first = 0;
        buf_json_str(&h, e->name);
        buf_fmt(&h, ":{\"dtype\":\"%s\",\"shape\":[", dtypes[e->dtype].name);
        for (int d = 0; d < e->ndim; d++) buf_fmt(&h, d ? ",%" PRId64 : "%" PRId64, e->shape[d]);
        buf_fmt(&h, "],\"data_offsets\":[%zu,%zu]}", offset[i], offset[i] + e->nbytes);
    }
    buf_str(&h, "}");
    while (!h.oom && h.n % 8 != 0) buf_str(&h, " ");
    free(offset);
    if (h.oom) { free(h.p); free(order); seterr(err, errlen, "%s: out of memory building header", path); return -1; }
    if (h.n > VG_ST_MAX_HEADER) {
        free(h.p); free(order);
        seterr(err, errlen, "%s: header would be %zu bytes, over the 100 MB limit", path, h.n);
        return -1;
    }

    size_t tlen = strlen(path) + 32;
    char *tmp = malloc(tlen);
    if (!tmp) { free(h.p); free(order); seterr(err, errlen, "%s: out of memory", path); return -1; }
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());

    int rc = -1, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { seterr(err, errlen, "%s: cannot create temp file %s: %s", path, tmp, strerror(errno)); goto done; }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    int bad = write_all(fd, len8, 8) || write_all(fd, h.p, h.n);
    for (size_t i = 0; i < w->n && !bad; i++)
        if (w->e[order[i]].nbytes) bad = write_all(fd, w->e[order[i]].data, w->e[order[i]].nbytes);
    if (bad || fsync(fd) != 0) {
        seterr(err, errlen, "%s: writing temp file %s failed: %s", path, tmp, strerror(errno));
        close(fd); unlink(tmp); goto done;
    }
    if (close(fd) != 0) {
        seterr(err, errlen, "%s: closing temp file %s failed: %s", path, tmp, strerror(errno));
        unlink(tmp); goto done;
    }
    const char *crash = getenv("VG_ST_CRASH_BEFORE_RENAME");
    if (crash && crash[0] && strcmp(crash, "0") != 0) {
        seterr(err, errlen, "%s: simulated crash before rename (VG_ST_CRASH_BEFORE_RENAME is set); "
               "temp file left at %s", path, tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        seterr(err, errlen, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
        unlink(tmp); goto done;
    }
    if (fsync_parent_dir(path) != 0) {
        seterr(err, errlen, "%s: written, but fsync of its directory failed: %s", path, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(tmp); free(h.p); free(order);
    return rc;
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

typedef struct st_json {
    const char *s; size_t n, pos;     /* the header text */
    const char *label; char *err; size_t errlen;
} st_json;

__attribute__((format(printf, 2, 3)))
static int jfail(st_json *j, const char *fmt, ...) {
    char msg[256]; va_list ap; va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* position as a file offset (the header starts at byte 8) so `xxd` finds it */
    seterr(j->err, j->errlen, "%s: header JSON at file byte %zu: %s", j->label, j->pos + 8, msg);
    return -1;
}
static void jws(st_json *j) {
    while (j->pos < j->n && (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' ||
                             j->s[j->pos] == '\n' || j->s[j->pos] == '\r')) j->pos++;
}
static int jpeek(st_json *j) { jws(j); return j->pos < j->n ? (unsigned char)j->s[j->pos] : -1; }
static int jexpect(st_json *j, char c) {
    int p = jpeek(j);
    if (p == c) { j->pos++; return 0; }
    if (p < 0) return jfail(j, "unexpected end of header, expected '%c'", c);
    return jfail(j, "expected '%c', found '%c'", c, p >= 0x20 && p < 0x7f ? p : '?');
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
static int jhex4(st_json *j, size_t at, unsigned *out) {
    if (at + 4 > j->n) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) { int h = hexval((unsigned char)j->s[at + i]); if (h < 0) return -1; v = v * 16 + (unsigned)h; }
    *out = v; return 0;
}

/* A string literal. If out is non-NULL it receives the decoded, NUL-terminated UTF-8 (malloc'd);
 * decoding never grows the text, so the literal's length bounds the allocation. */
static int jstring(st_json *j, char **out) {
    if (out) *out = NULL;
    if (jpeek(j) != '"') return jpeek(j) < 0 ? jfail(j, "unexpected end of header, expected a string")
                                             : jfail(j, "expected a string");
    size_t start = ++j->pos, end = start;
    while (end < j->n && j->s[end] != '"') end += (j->s[end] == '\\') ? 2 : 1;
    if (end >= j->n) return jfail(j, "unterminated string");
    char *o = NULL; size_t on = 0;
    if (out && !(o = malloc(end - start + 1))) return jfail(j, "out of memory");
    const unsigned char *s = (const unsigned char *)j->s;
    while (j->pos < end) {
        unsigned c = s[j->pos];
        if (c < 0x20) { free(o); return jfail(j, "control character 0x%02x in string", c); }
        if (c != '\\') {
            size_t k = utf8_seq(s + j->pos, end - j->pos);
            if (!k) { free(o); return jfail(j, "invalid UTF-8 in string"); }
            if (o) memcpy(o + on, s + j->pos, k);
            on += k; j->pos += k;
            continue;
        }
        char e = (char)s[j->pos + 1];    /* pos + 1 < end: the scan above skipped escapes in pairs */
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char repl[] = "\"\\/\b\f\n\r\t";
            if (o) o[on] = repl[simple - "\"\\/bfnrt"];
            on++; j->pos += 2;
            continue;
        }
        if (e != 'u') { free(o); return jfail(j, "invalid escape '\\%c' in string", e >= 0x20 && e < 0x7f ? e : '?'); }
        unsigned cp, lo;
        if (jhex4(j, j->pos + 2, &cp) || j->pos + 6 > end) { free(o); return jfail(j, "invalid \\u escape"); }
        j->pos += 6;
        if (cp >= 0xdc00 && cp <= 0xdfff) { free(o); return jfail(j, "unpaired low surrogate \\u%04x", cp); }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (j->pos + 6 > end || s[j->pos] != '\\' || s[j->pos + 1] != 'u' ||
                jhex4(j, j->pos + 2, &lo) || lo < 0xdc00 || lo > 0xdfff) {
                free(o); return jfail(j, "unpaired high surrogate \\u%04x", cp);
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            j->pos += 6;
        }
        if (cp == 0) { free(o); return jfail(j, "\\u0000 in a string is not supported"); }
        unsigned char u[4]; size_t k;
        if (cp < 0x80) { u[0] = (unsigned char)cp; k = 1; }
        else if (cp < 0x800) { u[0] = (unsigned char)(0xc0 | (cp >> 6)); u[1] = (unsigned char)(0x80 | (cp & 0x3f)); k = 2; }
        else if (cp < 0x10000) { u[0] = (unsigned char)(0xe0 | (cp >> 12)); u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                                 u[2] = (unsigned char)(0x80 | (cp & 0x3f)); k = 3; }
        else { u[0] = (unsigned char)(0xf0 | (cp >> 18)); u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
               u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); u[3] = (unsigned char)(0x80 | (cp & 0x3f)); k = 4; }
        if (o) memcpy(o + on, u, k);
        on += k;
    }
    j->pos = end + 1;
    if (o) { o[on] = 0; *out = o; }
    return 0;
}

/* A JSON number. *is_int tells whether it was a plain integer (no fraction or exponent) that
 * fits in int64; the value is then in *out. */
static int jnumber(st_json *j, int64_t *out, int *is_int) {
    jws(j);
    size_t p = j->pos; int neg = 0, integer = 1, overflow = 0; uint64_t v = 0;
    const char *s = j->s;
    if (p < j->n && s[p] == '-') { neg = 1; p++; }
    if (p >= j->n || s[p] < '0' || s[p] > '9') return jfail(j, "expected a number");
    if (s[p] == '0') p++;
    else while (p < j->n && s[p] >= '0' && s[p] <= '9') {
        if (v > (UINT64_MAX - 9) / 10) overflow = 1;
        v = v * 10 + (uint64_t)(s[p] - '0'); p++;
    }
    if (p < j->n && s[p] == '.') {
        integer = 0; p++;
        if (p >= j->n || s[p] < '0' || s[p] > '9') { j->pos = p; return jfail(j, "expected a digit after '.'"); }
        while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < j->n && (s[p] == 'e' || s[p] == 'E')) {
        integer = 0; p++;
        if (p < j->n && (s[p] == '+' || s[p] == '-')) p++;
        if (p >= j->n || s[p] < '0' || s[p] > '9') { j->pos = p; return jfail(j, "expected a digit in exponent"); }
        while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    j->pos = p;
    if (overflow || v > (uint64_t)INT64_MAX) integer = 0;
    *is_int = integer;
    *out = integer ? (neg ? -(int64_t)v : (int64_t)v) : 0;
    return 0;
}

static int jliteral(st_json *j, const char *word) {
    size_t k = strlen(word);
    if (j->pos + k <= j->n && memcmp(j->s + j->pos, word, k) == 0) { j->pos += k; return 0; }
    return jfail(j, "invalid literal");
}

/* skip any value (used for keys inside an entry that we do not know) */
static int jskip(st_json *j, int depth) {
    if (depth > VG_ST_MAX_DEPTH) return jfail(j, "nesting deeper than %d", VG_ST_MAX_DEPTH);
    int c = jpeek(j);
    if (c < 0) return jfail(j, "unexpected end of header, expected a value");
    if (c == '"') return jstring(j, NULL);
    if (c == 't') return jliteral(j, "true");
    if (c == 'f') return jliteral(j, "false");
    if (c == 'n') return jliteral(j, "null");
    if (c == '-' || (c >= '0' && c <= '9')) { int64_t v; int isi; return jnumber(j, &v, &isi); }
    if (c == '[') {
        j->pos++;
        if (jpeek(j) == ']') { j->pos++; return 0; }
        for (;;) {
            if (jskip(j, depth + 1)) return -1;
            int d = jpeek(j);
            if (d == ',') { j->pos++; continue; }
            return jexpect(j, ']');
        }
    }
    if (c == '{') {
        j->pos++;
        if (jpeek(j) == '}') { j->pos++; return 0; }
        for (;;) {
            if (jstring(j, NULL) || jexpect(j, ':') || jskip(j, depth + 1)) return -1;
            int d = jpeek(j);
            if (d == ',') { j->pos++; continue; }
            return jexpect(j, '}');
        }
    }
    return jfail(j, "unexpected character '%c'", c >= 0x20 && c < 0x7f ? c : '?');
}

/* an array of integers, at most `max` of them (more is an error); count in *n */
static int jint_array(st_json *j, const char *tname, const char *what, int64_t *out, int max, int *n) {
    *n = 0;
    if (jpeek(j) != '[') return jfail(j, "tensor \"%s\": %s must be an array", tname, what);
    j->pos++;
    if (jpeek(j) == ']') { j->pos++; return 0; }
    for (;;) {
        int64_t v; int isi;
        if (jnumber(j, &v, &isi)) return -1;
        if (!isi || v < 0) return jfail(j, "tensor \"%s\": %s must hold non-negative integers", tname, what);
        if (*n >= max) return jfail(j, "tensor \"%s\": %s has more than %d entries", tname, what, max);
        out[(*n)++] = v;
        int d = jpeek(j);
        if (d == ',') { j->pos++; continue; }
        return jexpect(j, ']');
    }
}

static int file_add_tensor(vg_st_file *f, st_json *j, char *name) {
    if (f->nt == f->tcap) {
        size_t cap = f->tcap ? 2 * f->tcap : 64;
        vg_st_tensor *t = realloc(f->t, cap * sizeof *t);
        if (!t) { free(name); return jfail(j, "out of memory"); }
        f->t = t; f->tcap = cap;
    }
    memset(&f->t[f->nt], 0, sizeof f->t[0]);
    f->t[f->nt++].name = name;       /* owned by the file from now on */
    return 0;
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e]} → f->t[f->nt-1]; offsets in *b, *e */
static int jentry(st_json *j, vg_st_tensor *t, uint64_t *b, uint64_t *e) {
    const char *nm = t->name;
    if (jpeek(j) != '{') return jfail(j, "tensor \"%s\": entry must be an object", nm);
    j->pos++;
    int have_dtype = 0, have_shape = 0, have_off = 0;
    if (jpeek(j) == '}') j->pos++;
    else for (;;) {
        char *key;
        if (jstring(j, &key)) return -1;
        if (jexpect(j, ':')) { free(key); return -1; }
        int rc = 0;
        if (strcmp(key, "dtype") == 0) {
            char *dt;
            if (have_dtype++) rc = jfail(j, "tensor \"%s\": dtype given twice", nm);
            else if (!(rc = jstring(j, &dt))) {
                if (vg_st_dtype_parse(dt, &t->dtype))
                    rc = jfail(j, "tensor \"%s\": unknown dtype \"%.32s\" (supported: F64 F32 F16 BF16 I64 I32 U8)", nm, dt);
                free(dt);
            }
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++) rc = jfail(j, "tensor \"%s\": shape given twice", nm);
            else rc = jint_array(j, nm, "shape", t->shape, VG_ST_MAX_DIMS, &t->ndim);
        } else if (strcmp(key, "data_offsets") == 0) {
            int64_t off[2]; int n;
            if (have_off++) rc = jfail(j, "tensor \"%s\": data_offsets given twice", nm);
            else if (!(rc = jint_array(j, nm, "data_offsets", off, 2, &n))) {
                if (n != 2) rc = jfail(j, "tensor \"%s\": data_offsets must be [begin, end]", nm);
                else { *b = (uint64_t)off[0]; *e = (uint64_t)off[1]; }
            }
        } else rc = jskip(j, 1);
        free(key);
        if (rc) return -1;
        int d = jpeek(j);
        if (d == ',') { j->pos++; continue; }
        if (jexpect(j, '}')) return -1;
        break;
    }
    if (!have_dtype || !have_shape || !have_off)
        return jfail(j, "tensor \"%s\": missing %s", nm, !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
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

static int jmetadata(st_json *j, vg_st_file *f) {
    if (jpeek(j) != '{') return jfail(j, "__metadata__ must be an object of strings");
    j->pos++;
    if (jpeek(j) == '}') { j->pos++; return 0; }
    for (;;) {
        char *k = NULL, *v = NULL;
        if (jstring(j, &k)) return -1;
        if (jexpect(j, ':')) { free(k); return -1; }
        if (jpeek(j) != '"') { free(k); return jfail(j, "__metadata__ values must be strings"); }
        if (jstring(j, &v)) { free(k); return -1; }
        int rc = is_crc_key(k) ? push_pair(&f->ckey, &f->cval, &f->nc, &f->ccap, k, v)    /* checksums */
                               : push_pair(&f->mkey, &f->mval, &f->nm, &f->mcap, k, v);
        if (rc) return jfail(j, "out of memory");
        int d = jpeek(j);
        if (d == ',') { j->pos++; continue; }
        return jexpect(j, '}');
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

/* takes ownership of buf (malloc'd, `size` bytes) */
static vg_st_file *st_parse(unsigned char *buf, size_t size, const char *label, int verify, char *err, size_t errlen) {
    vg_st_file *f = calloc(1, sizeof *f);
    char *lab = strdup(label);
    if (!f || !lab) { free(f); free(lab); free(buf); seterr(err, errlen, "%s: out of memory", label); return NULL; }
    f->label = lab; f->buf = buf; f->size = size;

    if (size < 8) {
        seterr(err, errlen, "%s: file is %zu bytes, too small for a safetensors file (needs at least 8)", label, size);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    if (hlen > size - 8) {
        seterr(err, errlen, "%s: header length %" PRIu64 " exceeds the %zu bytes after the length field "
               "(truncated file, or not a safetensors file)", label, hlen, size - 8);
        goto fail;
    }
    if (hlen > VG_ST_MAX_HEADER) {
        seterr(err, errlen, "%s: header length %" PRIu64 " is over the 100 MB limit", label, hlen);
        goto fail;
    }
    f->data = buf + 8 + hlen; f->data_size = size - 8 - (size_t)hlen;

    st_json j = { .s = (const char *)buf + 8, .n = (size_t)hlen, .pos = 0, .label = label, .err = err, .errlen = errlen };
    /* first, the whole structure; offsets are checked once the JSON is known to be sound */
    uint64_t *ob = NULL, *oe = NULL; size_t ocap = 0;
    int have_meta = 0;
    if (jpeek(&j) != '{') {
        if (jpeek(&j) < 0) jfail(&j, "header is empty, expected a JSON object");
        else jfail(&j, "header is not a JSON object (does not start with '{')");
        goto fail;
    }
    j.pos++;
    if (jpeek(&j) == '}') j.pos++;
    else for (;;) {
        char *key;
        if (jstring(&j, &key)) goto fail_o;
        if (jexpect(&j, ':')) { free(key); goto fail_o; }
        if (strcmp(key, "__metadata__") == 0) {
            free(key);
            if (have_meta++) { jfail(&j, "__metadata__ given twice"); goto fail_o; }
            if (jmetadata(&j, f)) goto fail_o;
        } else {
            if (file_add_tensor(f, &j, key)) goto fail_o;
            if (f->nt > ocap) {
                size_t cap = ocap ? 2 * ocap : 64;
                uint64_t *nb = realloc(ob, cap * sizeof *nb);
                if (nb) ob = nb;
                uint64_t *ne = nb ? realloc(oe, cap * sizeof *ne) : NULL;
                if (ne) oe = ne;
                if (!nb || !ne) { jfail(&j, "out of memory"); goto fail_o; }
                ocap = cap;
            }
            if (jentry(&j, &f->t[f->nt - 1], &ob[f->nt - 1], &oe[f->nt - 1])) goto fail_o;
        }
        int d = jpeek(&j);
        if (d == ',') { j.pos++; continue; }
        if (jexpect(&j, '}')) goto fail_o;
        break;
    }
    if (jpeek(&j) >= 0) { jfail(&j, "unexpected text after the header object"); goto fail_o; }

    /* sizes and offsets */
    for (size_t i = 0; i < f->nt; i++) {
        vg_st_tensor *t = &f->t[i];
        size_t numel = 1, nbytes = 0;
        int ovf = 0;
        for (int d = 0; d < t->ndim; d++) ovf |= __builtin_mul_overflow(numel, (uint64_t)t->shape[d], &numel);
        ovf |= __builtin_mul_overflow(numel, dtypes[t->dtype].size, &nbytes);
        if (ovf) { seterr(err, errlen, "%s: tensor \"%s\": shape is too large", label, t->name); goto fail_o; }
        if (ob[i] > oe[i]) {
            seterr(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin",
                   label, t->name, ob[i], oe[i]);
            goto fail_o;
        }
        if (oe[i] > f->data_size) {
            seterr(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] out of range: "
                   "the data section has only %zu bytes (truncated file?)", label, t->name, ob[i], oe[i], f->data_size);
            goto fail_o;
        }
        if (oe[i] - ob[i] != nbytes) {
            char shp[160] = ""; size_t sp = 0;
            for (int d = 0; d < t->ndim && sp < sizeof shp - 24; d++)
                sp += (size_t)snprintf(shp + sp, sizeof shp - sp, d ? ", %" PRId64 : "%" PRId64, t->shape[d]);
            seterr(err, errlen, "%s: tensor \"%s\": shape [%s] of %s needs %zu bytes but data_offsets "
                   "[%" PRIu64 ", %" PRIu64 "] span %" PRIu64, label, t->name, shp, dtypes[t->dtype].name,
                   nbytes, ob[i], oe[i], oe[i] - ob[i]);
            goto fail_o;
        }
        t->numel = numel; t->nbytes = nbytes; t->data = f->data + ob[i];
    }
    free(ob); free(oe); ob = oe = NULL;

    /* unique names (sorted view kept for lookups), then no two non-empty ranges overlapping */
    size_t nt = f->nt ? f->nt : 1;
    f->by_name = malloc(nt * sizeof *f->by_name);
    const vg_st_tensor **by_data = malloc(nt * sizeof *by_data);
    if (!f->by_name || !by_data) { free(by_data); seterr(err, errlen, "%s: out of memory", label); goto fail; }
    size_t ne = 0;
    for (size_t i = 0; i < f->nt; i++) {
        f->by_name[i] = &f->t[i];
        if (f->t[i].nbytes) by_data[ne++] = &f->t[i];
    }
    qsort(f->by_name, f->nt, sizeof *f->by_name, cmp_tensor_name);
    for (size_t i = 1; i < f->nt; i++)
        if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0) {
            seterr(err, errlen, "%s: duplicate tensor name \"%s\"", label, f->by_name[i]->name);
            free(by_data); goto fail;
        }
    qsort(by_data, ne, sizeof *by_data, cmp_tensor_data);
    for (size_t i = 1; i < ne; i++) {
        const vg_st_tensor *a = by_data[i - 1], *b = by_data[i];
        if ((const unsigned char *)a->data + a->nbytes > (const unsigned char *)b->data) {
            size_t ab = (size_t)((const unsigned char *)a->data - f->data), bb = (size_t)((const unsigned char *)b->data - f->data);
            seterr(err, errlen, "%s: tensors \"%s\" [%zu, %zu] and \"%s\" [%zu, %zu] overlap in the data section",
                   label, a->name, ab, ab + a->nbytes, b->name, bb, bb + b->nbytes);
            free(by_data); goto fail;
        }
    }
    free(by_data);

    if (f->nm > 1) {
        char ***keys = malloc(f->nm * sizeof *keys);
        if (!keys) { seterr(err, errlen, "%s: out of memory", label); goto fail; }
        for (size_t i = 0; i < f->nm; i++) keys[i] = &f->mkey[i];
        qsort(keys, f->nm, sizeof *keys, cmp_strp);
        for (size_t i = 1; i < f->nm; i++)
            if (strcmp(*keys[i - 1], *keys[i]) == 0) {
                seterr(err, errlen, "%s: duplicate __metadata__ key \"%s\"", label, *keys[i]);
                free(keys); goto fail;
            }
        free(keys);
    }

    /* checksums: each names a tensor of the file, once, as 8 hex digits; then the data must match */
    for (size_t i = 0; i < f->nc; i++) {
        const char *tname = f->ckey[i] + sizeof CRC_PREFIX - 1, *hex = f->cval[i];
        vg_st_tensor *t = (vg_st_tensor *)vg_st_find(f, tname);     /* an element of f->t */
        if (!t) {
            seterr(err, errlen, "%s: __metadata__ holds a checksum for tensor \"%s\", which the file does not have "
                   "(a damaged header, or a tool removed tensors and kept the metadata)", label, tname);
            goto fail;
        }
        if (t->has_checksum) { seterr(err, errlen, "%s: tensor \"%s\": checksum given twice", label, tname); goto fail; }
        int ok = strlen(hex) == 8;
        for (int k = 0; ok && k < 8; k++) ok = strchr("0123456789abcdefABCDEF", hex[k]) != NULL;
        if (!ok) {
            seterr(err, errlen, "%s: tensor \"%s\": checksum \"%.40s\" is not 8 hexadecimal digits", label, tname, hex);
            goto fail;
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
            goto fail;
        }
    }
    return f;
fail_o:
    free(ob); free(oe);
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
