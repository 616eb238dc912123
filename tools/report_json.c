/* report_json.c — the JSON the report page carries inline (see report.h). */
#include "report.h"
#include <math.h>

void rj_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '<') fputs("\\u003c", f);          /* never "</script>" inside the data */
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

void rj_key(FILE *f, const char *key) { rj_str(f, key); fputc(':', f); }

void rj_nums(FILE *f, const double *v, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        if (isfinite(v[i])) fprintf(f, "%.5g", v[i]); else fputs("null", f);
    }
    fputc(']', f);
}

void rj_numsf(FILE *f, const float *v, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        if (isfinite(v[i])) fprintf(f, "%.5g", (double)v[i]); else fputs("null", f);
    }
    fputc(']', f);
}

void rj_b64(FILE *f, const uint8_t *b, size_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fputc('"', f);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
        fputc(abc[v >> 18 & 63], f);
        fputc(abc[v >> 12 & 63], f);
        fputc(i + 1 < n ? abc[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? abc[v & 63] : '=', f);
    }
    fputc('"', f);
}
