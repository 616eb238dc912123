/* export_image.c — write image N of a dataset split as a PNG file, with its label; `make demo`
 * feeds the file to ./predict. Written against data/data.h and libpng.
 *
 *   build/export_image KIND DIR SPLIT N OUT.png
 *
 * KIND: cifar10 | imagefolder | fashion-mnist | mnist; SPLIT: train | test. Prints
 * "OUT.png: <split> image N, label L (<class name>)". Exit status 0, or 1 with the reason. */
#include "data/data.h"
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* chw (C, h, w) uint8, C = 1 (gray) or 3 (RGB) → path; 0, or -1 with a message on stderr */
static int write_png(const char *path, const uint8_t *chw, int C, int h, int w) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); return -1; }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint8_t *row = malloc((size_t)w * (size_t)C);
    if (!png || !info || !row || setjmp(png_jmpbuf(png))) {
        fprintf(stderr, "export_image: cannot write %s\n", path);
        png_destroy_write_struct(&png, &info); free(row); fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, C == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) {                    /* planar (C, h, w) → interleaved rows */
        for (int x = 0; x < w; x++)
            for (int c = 0; c < C; c++) row[x * C + c] = chw[((size_t)c * (size_t)h + (size_t)y) * (size_t)w + (size_t)x];
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 6 || (strcmp(argv[3], "train") && strcmp(argv[3], "test"))) {
        fprintf(stderr, "usage: %s KIND DIR train|test N OUT.png\n", argv[0]);
        return 1;
    }
    char err[VG_DATA_ERRLEN];
    vg_dataset *d = vg_dataset_open(argv[1], argv[2], strcmp(argv[3], "train") ? VG_SPLIT_TEST : VG_SPLIT_TRAIN, err, sizeof err);
    if (!d) { fprintf(stderr, "export_image: %s\n", err); return 1; }
    const int i = atoi(argv[4]);
    if (i < 0 || i >= d->n) { fprintf(stderr, "export_image: index %s is not in [0, %d)\n", argv[4], d->n); vg_dataset_free(d); return 1; }
    int h, w;
    const uint8_t *chw = vg_dataset_image(d, i, &h, &w);
    int rc = write_png(argv[5], chw, d->channels, h, w);
    if (rc == 0) {
        const int y = d->labels[i];
        printf("%s: %s image %d, label %d (%s)\n", argv[5], argv[3], i, y, d->class_names ? d->class_names[y] : "?");
    }
    vg_dataset_free(d);
    return rc == 0 ? 0 : 1;
}
