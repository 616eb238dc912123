/* fuzz_idx.c — the IDX reader (data/idx.c; Fashion-MNIST, MNIST): images and labels files, raw
 * or gzip (zlib's gzread tells them apart by the gzip magic, so both come out of the fuzzer).
 * Input: bytes 0-1 = little-endian length L of the images file, the next L bytes are that file,
 * the rest is the labels file. A rejected pair gets an error naming one of the two files; an
 * accepted one is N gray images of one size with labels 0..9. */
#include "fuzz/batches.h"
#include "fuzz/common.h"
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t ilen = (size_t)data[0] | (size_t)data[1] << 8;
    if (ilen > size - 2) ilen = size - 2;
    const char *dir = fuzz_scratch();
    fuzz_scratch_clear();
    if (fuzz_write_file(dir, "images-idx3-ubyte", data + 2, ilen) ||
        fuzz_write_file(dir, "labels-idx1-ubyte", data + 2 + ilen, size - 2 - ilen)) return 0;
    char ip[4200], lp[4200], err[VG_DATA_ERRLEN] = "";
    snprintf(ip, sizeof ip, "%s/images-idx3-ubyte", dir);
    snprintf(lp, sizeof lp, "%s/labels-idx1-ubyte", dir);
    vg_dataset *d = vg_idx_open(ip, lp, err, sizeof err);
    if (!d) { fuzz_expect_error(err, "-idx"); return 0; }
    fuzz_require(d->n > 0 && d->channels == 1 && d->height > 0 && d->width > 0 && d->n_classes == 10,
                 "an IDX dataset is N gray images of one size, 10 classes");
    for (int i = 0; i < d->n; i++) fuzz_require(d->labels[i] >= 0 && d->labels[i] < 10, "labels 0..9");
    fuzz_note("accepted: %d images of %dx%d", d->n, d->height, d->width);
    fuzz_batches(d, 8);
    vg_dataset_free(d);
    return 0;
}
