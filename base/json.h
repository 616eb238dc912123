/* json.h — the JSON that file headers are made of: a writer (a growable string with JSON string
 * literals) and a strict, bounded reader of untrusted text (RFC 8259: no trailing commas, no
 * comments, UTF-8 checked, \u escapes with surrogate pairs, nesting at most VG_JSON_MAX_DEPTH).
 * The reader is a set of steps a schema-driven parser calls (safetensors.c reads its header with
 * them); it builds no tree. Every step returns 0, or -1 with the message in j->err naming the
 * label and the file byte. */
#ifndef VG_JSON_H
#define VG_JSON_H
#include <stddef.h>
#include <stdint.h>

#define VG_JSON_MAX_DEPTH 64   /* nesting vg_json_skip is willing to walk */

/* ---- writer: a growable NUL-terminated string; `oom` sticks once an allocation failed */
typedef struct vg_jbuf { char *p; size_t n, cap; int oom; } vg_jbuf;
void vg_jbuf_put(vg_jbuf *b, const char *s, size_t n);
void vg_jbuf_str(vg_jbuf *b, const char *s);
/* printf into the buffer; the formatted piece must be under 64 bytes (numbers, short keys) */
__attribute__((format(printf, 2, 3))) void vg_jbuf_fmt(vg_jbuf *b, const char *fmt, ...);
/* s as a JSON string literal: UTF-8 passes through, quotes, backslashes and controls are escaped */
void vg_jbuf_string(vg_jbuf *b, const char *s);

/* ---- UTF-8: well-formed, shortest form, no surrogates, <= U+10FFFF */
/* the length of the valid sequence starting at s[0..n), or 0 if it is invalid */
size_t vg_utf8_seq(const unsigned char *s, size_t n);
int vg_utf8_valid(const char *str);   /* 1 if the NUL-terminated str is valid UTF-8 */

/* ---- reader over s[0..n); base: the file offset of s[0], for messages */
typedef struct vg_json {
    const char *s; size_t n, pos;
    size_t base; const char *label, *what;   /* "<label>: <what> at file byte N: ..." */
    char *err; size_t errlen;
} vg_json;

__attribute__((format(printf, 2, 3))) int vg_json_fail(vg_json *j, const char *fmt, ...);  /* always -1 */
void vg_json_ws(vg_json *j);                  /* skip whitespace */
int vg_json_peek(vg_json *j);                 /* the next non-space byte, -1 at the end; not consumed */
int vg_json_expect(vg_json *j, char c);       /* consume c or fail */
/* a string literal; out (may be NULL: only checked) receives the decoded UTF-8, malloc'd */
int vg_json_string(vg_json *j, char **out);
/* a number; *is_int: it was a plain integer (no fraction or exponent) that fits in int64, in *out */
int vg_json_number(vg_json *j, int64_t *out, int *is_int);
int vg_json_skip(vg_json *j, int depth);      /* any value, nested at most VG_JSON_MAX_DEPTH deep */
#endif
