/* cifar10.c — the CIFAR-10 binary format: records of 1 label byte + 3072 pixel bytes
 * (1024 R, 1024 G, 1024 B; each plane 32x32 row-major), i.e. already (C, H, W). */
#include "data/internal.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REC_PIXELS 3072
#define REC_BYTES  (1 + REC_PIXELS)

vg_dataset *vg_cifar10_open(const char *dir, vg_split split, char *err, size_t errlen) {
    const char *train_files[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                 "data_batch_4.bin", "data_batch_5.bin"};
    const char *test_files[] = {"test_batch.bin"};
    const char **files = split == VG_SPLIT_TRAIN ? train_files : test_files;
    int n_files = split == VG_SPLIT_TRAIN ? 5 : 1;
    char path[1200];

    /* sizes first, so one allocation holds everything and a bad file is reported before reading */
    long records[5];
    long total = 0;
    for (int f = 0; f < n_files; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        struct stat st;
        if (stat(path, &st) != 0) { vg__err(err, errlen, "cannot open %s: %s", path, strerror(errno)); return NULL; }
        if (!S_ISREG(st.st_mode)) { vg__err(err, errlen, "%s: not a regular file", path); return NULL; }
        if (st.st_size == 0 || st.st_size % REC_BYTES != 0) {
            vg__err(err, errlen, "%s: size %lld bytes is not a whole number of %d-byte CIFAR-10 records "
                    "(%lld records + %lld bytes; truncated or not a CIFAR-10 binary batch)",
                    path, (long long)st.st_size, REC_BYTES, (long long)(st.st_size / REC_BYTES),
                    (long long)(st.st_size % REC_BYTES));
            return NULL;
        }
        records[f] = (long)(st.st_size / REC_BYTES);
        total += records[f];
    }

    vg_dataset *d = vg__dataset_new("cifar10", dir);
    if (!d) { vg__err(err, errlen, "out of memory"); return NULL; }
    d->n = (int)total; d->channels = 3; d->height = 32; d->width = 32; d->n_classes = 10;
    d->labels = malloc((size_t)total * sizeof *d->labels);
    d->pixels = malloc((size_t)total * REC_PIXELS);
    uint8_t *rec = malloc((size_t)REC_BYTES * 1000);
    if (!d->labels || !d->pixels || !rec) { free(rec); vg_dataset_free(d); vg__err(err, errlen, "out of memory for %ld CIFAR-10 images", total); return NULL; }

    long at = 0;
    for (int f = 0; f < n_files; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        FILE *fp = fopen(path, "rb");
        if (!fp) { vg__err(err, errlen, "cannot open %s: %s", path, strerror(errno)); goto fail; }
        for (long r = 0; r < records[f];) {
            long chunk = records[f] - r < 1000 ? records[f] - r : 1000;
            size_t got = fread(rec, REC_BYTES, (size_t)chunk, fp);
            if (got != (size_t)chunk) {
                vg__err(err, errlen, "%s: read error / file shrank at record %ld", path, r + (long)got);
                fclose(fp); goto fail;
            }
            for (long k = 0; k < chunk; k++) {
                const uint8_t *p = rec + k * REC_BYTES;
                if (p[0] >= 10) {
                    vg__err(err, errlen, "%s: record %ld has label %d, expected 0..9", path, r + k, p[0]);
                    fclose(fp); goto fail;
                }
                d->labels[at] = p[0];
                memcpy(d->pixels + (size_t)at * REC_PIXELS, p + 1, REC_PIXELS);
                at++;
            }
            r += chunk;
        }
        fclose(fp);
    }
    free(rec); rec = NULL;

    d->class_names = calloc(10, sizeof *d->class_names);
    char **meta = NULL;
    snprintf(path, sizeof path, "%s/batches.meta.txt", dir);
    int n_meta = vg__read_lines(path, &meta, 10);
    for (int c = 0; c < 10 && d->class_names; c++)
        d->class_names[c] = vg__strdup(n_meta == 10 ? meta[c] : vg_dataset_default_names("cifar10", 10)[c]);
    vg__free_strings(meta, n_meta > 0 ? n_meta : 0);
    const float m[3] = VG_CIFAR10_MEAN, s[3] = VG_CIFAR10_STD;
    memcpy(d->mean, m, sizeof m); memcpy(d->std, s, sizeof s);
    return d;
fail:
    free(rec);
    vg_dataset_free(d);
    return NULL;
}
