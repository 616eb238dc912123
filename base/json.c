/* json.c — the JSON writer and the strict reader of json.h. */
#include "json.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writer ------------------------------------------------------------------------------ */

void vg_jbuf_put(vg_jbuf *b, const char *s, size_t n) {
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
void vg_jbuf_str(vg_jbuf *b, const char *s) { vg_jbuf_put(b, s, strlen(s)); }
void vg_jbuf_fmt(vg_jbuf *b, const char *fmt, ...) {
    char tmp[64]; va_list ap; va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0 && (size_t)k < sizeof tmp) vg_jbuf_put(b, tmp, (size_t)k); else b->oom = 1;
}
/* JSON string literal; UTF-8 bytes pass through, control characters are escaped */
void vg_jbuf_string(vg_jbuf *b, const char *s) {
    vg_jbuf_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"':  vg_jbuf_put(b, "\\\"", 2); break;
        case '\\': vg_jbuf_put(b, "\\\\", 2); break;
        case '\n': vg_jbuf_put(b, "\\n", 2); break;
        case '\r': vg_jbuf_put(b, "\\r", 2); break;
        case '\t': vg_jbuf_put(b, "\\t", 2); break;
        default:
            if (*c < 0x20) vg_jbuf_fmt(b, "\\u%04x", *c);
            else vg_jbuf_put(b, (const char *)c, 1);
        }
    }
    vg_jbuf_put(b, "\"", 1);
}

/* ---- UTF-8 ------------------------------------------------------------------------------- */

/* UTF-8 validity of s[0..n): well-formed, shortest form, no surrogates, ≤ U+10FFFF.
 * Returns the length of the sequence starting at s, or 0 if it is invalid. */
size_t vg_utf8_seq(const unsigned char *s, size_t n) {
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
int vg_utf8_valid(const char *str) {
    const unsigned char *s = (const unsigned char *)str; size_t n = strlen(str);
    for (size_t i = 0; i < n;) { size_t k = vg_utf8_seq(s + i, n - i); if (!k) return 0; i += k; }
    return 1;
}

/* ---- reader ------------------------------------------------------------------------------ */

int vg_json_fail(vg_json *j, const char *fmt, ...) {
    char msg[256]; va_list ap; va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* the position as a file offset, so `xxd` finds it */
    if (j->err && j->errlen) snprintf(j->err, j->errlen, "%s: %s at file byte %zu: %s", j->label, j->what, j->base + j->pos, msg);
    return -1;
}
void vg_json_ws(vg_json *j) {
    while (j->pos < j->n && (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' ||
                             j->s[j->pos] == '\n' || j->s[j->pos] == '\r')) j->pos++;
}
int vg_json_peek(vg_json *j) { vg_json_ws(j); return j->pos < j->n ? (unsigned char)j->s[j->pos] : -1; }
int vg_json_expect(vg_json *j, char c) {
    int p = vg_json_peek(j);
    if (p == c) { j->pos++; return 0; }
    if (p < 0) return vg_json_fail(j, "unexpected end of header, expected '%c'", c);
    return vg_json_fail(j, "expected '%c', found '%c'", c, p >= 0x20 && p < 0x7f ? p : '?');
}

static int hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
static int json_hex4(vg_json *j, size_t at, unsigned *out) {
    if (at + 4 > j->n) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) { int h = hex_value((unsigned char)j->s[at + i]); if (h < 0) return -1; v = v * 16 + (unsigned)h; }
    *out = v; return 0;
}

/* A string literal. If out is non-NULL it receives the decoded, NUL-terminated UTF-8 (malloc'd);
 * decoding never grows the text, so the literal's length bounds the allocation. */
int vg_json_string(vg_json *j, char **out) {
    if (out) *out = NULL;
    if (vg_json_peek(j) != '"') return vg_json_peek(j) < 0 ? vg_json_fail(j, "unexpected end of header, expected a string")
                                             : vg_json_fail(j, "expected a string");
    size_t start = ++j->pos, end = start;
    while (end < j->n && j->s[end] != '"') end += (j->s[end] == '\\') ? 2 : 1;
    if (end >= j->n) return vg_json_fail(j, "unterminated string");
    char *o = NULL; size_t on = 0;
    if (out && !(o = malloc(end - start + 1))) return vg_json_fail(j, "out of memory");
    const unsigned char *s = (const unsigned char *)j->s;
    while (j->pos < end) {
        unsigned c = s[j->pos];
        if (c < 0x20) { free(o); return vg_json_fail(j, "control character 0x%02x in string", c); }
        if (c != '\\') {
            size_t k = vg_utf8_seq(s + j->pos, end - j->pos);
            if (!k) { free(o); return vg_json_fail(j, "invalid UTF-8 in string"); }
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
        if (e != 'u') { free(o); return vg_json_fail(j, "invalid escape '\\%c' in string", e >= 0x20 && e < 0x7f ? e : '?'); }
        unsigned cp, lo;
        if (json_hex4(j, j->pos + 2, &cp) || j->pos + 6 > end) { free(o); return vg_json_fail(j, "invalid \\u escape"); }
        j->pos += 6;
        if (cp >= 0xdc00 && cp <= 0xdfff) { free(o); return vg_json_fail(j, "unpaired low surrogate \\u%04x", cp); }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (j->pos + 6 > end || s[j->pos] != '\\' || s[j->pos + 1] != 'u' ||
                json_hex4(j, j->pos + 2, &lo) || lo < 0xdc00 || lo > 0xdfff) {
                free(o); return vg_json_fail(j, "unpaired high surrogate \\u%04x", cp);
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            j->pos += 6;
        }
        if (cp == 0) { free(o); return vg_json_fail(j, "\\u0000 in a string is not supported"); }
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
int vg_json_number(vg_json *j, int64_t *out, int *is_int) {
    vg_json_ws(j);
    size_t p = j->pos; int neg = 0, integer = 1, overflow = 0; uint64_t v = 0;
    const char *s = j->s;
    if (p < j->n && s[p] == '-') { neg = 1; p++; }
    if (p >= j->n || s[p] < '0' || s[p] > '9') return vg_json_fail(j, "expected a number");
    if (s[p] == '0') p++;
    else while (p < j->n && s[p] >= '0' && s[p] <= '9') {
        if (v > (UINT64_MAX - 9) / 10) overflow = 1;
        v = v * 10 + (uint64_t)(s[p] - '0'); p++;
    }
    if (p < j->n && s[p] == '.') {
        integer = 0; p++;
        if (p >= j->n || s[p] < '0' || s[p] > '9') { j->pos = p; return vg_json_fail(j, "expected a digit after '.'"); }
        while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < j->n && (s[p] == 'e' || s[p] == 'E')) {
        integer = 0; p++;
        if (p < j->n && (s[p] == '+' || s[p] == '-')) p++;
        if (p >= j->n || s[p] < '0' || s[p] > '9') { j->pos = p; return vg_json_fail(j, "expected a digit in exponent"); }
        while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    j->pos = p;
    if (overflow || v > (uint64_t)INT64_MAX) integer = 0;
    *is_int = integer;
    *out = integer ? (neg ? -(int64_t)v : (int64_t)v) : 0;
    return 0;
}

static int json_literal(vg_json *j, const char *word) {
    size_t k = strlen(word);
    if (j->pos + k <= j->n && memcmp(j->s + j->pos, word, k) == 0) { j->pos += k; return 0; }
    return vg_json_fail(j, "invalid literal");
}

/* skip any value (used for keys inside an entry that we do not know) */
int vg_json_skip(vg_json *j, int depth) {
    if (depth > VG_JSON_MAX_DEPTH) return vg_json_fail(j, "nesting deeper than %d", VG_JSON_MAX_DEPTH);
    int c = vg_json_peek(j);
    if (c < 0) return vg_json_fail(j, "unexpected end of header, expected a value");
    if (c == '"') return vg_json_string(j, NULL);
    if (c == 't') return json_literal(j, "true");
    if (c == 'f') return json_literal(j, "false");
    if (c == 'n') return json_literal(j, "null");
    if (c == '-' || (c >= '0' && c <= '9')) { int64_t v; int isi; return vg_json_number(j, &v, &isi); }
    if (c == '[') {
        j->pos++;
        if (vg_json_peek(j) == ']') { j->pos++; return 0; }
        for (;;) {
            if (vg_json_skip(j, depth + 1)) return -1;
            int d = vg_json_peek(j);
            if (d == ',') { j->pos++; continue; }
            return vg_json_expect(j, ']');
        }
    }
    if (c == '{') {
        j->pos++;
        if (vg_json_peek(j) == '}') { j->pos++; return 0; }
        for (;;) {
            if (vg_json_string(j, NULL) || vg_json_expect(j, ':') || vg_json_skip(j, depth + 1)) return -1;
            int d = vg_json_peek(j);
            if (d == ',') { j->pos++; continue; }
            return vg_json_expect(j, '}');
        }
    }
    return vg_json_fail(j, "unexpected character '%c'", c >= 0x20 && c < 0x7f ? c : '?');
}
