/* test_run_helpers.c — the helpers of run_helpers.h (no tests here). */
#include "run_helpers.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *vg_test_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END); long len = ftell(f); fseek(f, 0, SEEK_SET);
    char *b = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) { free(b); fclose(f); return NULL; }
    b[len] = 0; fclose(f);
    if (n) *n = (size_t)len;
    return b;
}

bool vg_test_same_bytes(const char *a, const char *b) {
    size_t na, nb;
    char *x = vg_test_read_file(a, &na), *y = vg_test_read_file(b, &nb);
    bool same = x && y && na == nb && !memcmp(x, y, na);
    free(x); free(y);
    return same;
}

void vg_test_loss_columns(const char *csv_path, char *out, size_t n) {
    char *s = vg_test_read_file(csv_path, NULL);
    out[0] = 0;
    if (!s) return;
    size_t len = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        int commas = 0; char *p = line;
        while (*p && commas < 5) if (*p++ == ',') commas++;
        if (p - line > 2 && line[p - line - 2] != ',' && len + (size_t)(p - line) + 2 < n) {  /* rows with a loss */
            memcpy(out + len, line, (size_t)(p - line)); len += (size_t)(p - line);
            out[len++] = '\n'; out[len] = 0;
        }
    }
    free(s);
}
