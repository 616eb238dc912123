/* test_run_helpers.c — the helpers of run_helpers.h (no tests here). */
#include "run_helpers.h"
#include "tensor/rng.h"
#include <png.h>
#include <sys/stat.h>
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

int vg_test_count_lines(const char *path) {
    char *s = vg_test_read_file(path, NULL);
    int n = 0;
    for (char *p = s; p && *p; p++) n += *p == '\n';
    free(s);
    return n;
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

bool vg_test_write_imagefolder(const char *dir, int classes, int train_per_class, int val_per_class, int size) {
    vg_rng r = vg_rng_seed(4242);
    unsigned char *pix = malloc((size_t)size * size * 3);
    if (!pix) return false;
    mkdir(dir, 0755);
    bool ok = true;
    for (int split = 0; split < 2 && ok; split++) {
        char sd[1024];
        snprintf(sd, sizeof sd, "%s/%s", dir, split ? "val" : "train");
        mkdir(sd, 0755);
        for (int c = 0; c < classes && ok; c++) {
            char cd[1100];
            snprintf(cd, sizeof cd, "%s/c%02d", sd, c);
            mkdir(cd, 0755);
            /* the class's colour: three "digits" of c in base 4 spread over 0..255, and a ramp sign */
            int base[3] = {32 + 64 * (c % 4), 32 + 64 * (c / 4 % 4), 32 + 64 * (c / 16 % 4)};
            int ramp = c % 2 ? 3 : -3;
            for (int i = 0; i < (split ? val_per_class : train_per_class) && ok; i++) {
                for (int y = 0; y < size; y++) for (int x = 0; x < size; x++) for (int ch = 0; ch < 3; ch++) {
                    int v = base[ch] + ramp * (x - size / 2) + (int)(vg_rng_normal(&r) * 12);
                    pix[(y * size + x) * 3 + ch] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
                char path[1200];
                snprintf(path, sizeof path, "%s/img%03d.png", cd, i);
                png_image im;
                memset(&im, 0, sizeof im);
                im.version = PNG_IMAGE_VERSION; im.width = (png_uint_32)size; im.height = (png_uint_32)size;
                im.format = PNG_FORMAT_RGB;
                ok = png_image_write_to_file(&im, path, 0, pix, 0, NULL) != 0;
            }
        }
    }
    free(pix);
    return ok;
}
