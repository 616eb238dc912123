/* fuzz_cifar10.c — the CIFAR-10 binary batch reader (data/cifar10.c), which reads a directory.
 * Input: byte 0 = length L of an optional batches.meta.txt (0: none), the next L bytes are that
 * file, the rest is test_batch.bin; both are written to a scratch directory and opened as the
 * test split. A rejected directory gets an error naming the file; an accepted one is 32x32x3
 * with labels 0..9 and ten class names. */
#include "fuzz/batches.h"
#include "fuzz/common.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t meta = data[0] < size - 1 ? data[0] : size - 1;
    const char *dir = fuzz_scratch();
    fuzz_scratch_clear();
    if (meta && fuzz_write_file(dir, "batches.meta.txt", data + 1, meta)) return 0;
    if (fuzz_write_file(dir, "test_batch.bin", data + 1 + meta, size - 1 - meta)) return 0;
    char err[VG_DATA_ERRLEN] = "";
    vg_dataset *d = vg_cifar10_open(dir, VG_SPLIT_TEST, err, sizeof err);
    if (!d) { fuzz_expect_error(err, "test_batch.bin"); return 0; }
    fuzz_require(d->n > 0 && d->channels == 3 && d->height == 32 && d->width == 32 && d->n_classes == 10,
                 "a CIFAR-10 dataset is 32x32 RGB with 10 classes");
    for (int c = 0; c < 10; c++) fuzz_require(d->class_names && d->class_names[c] && d->class_names[c][0], "ten class names");
    for (int i = 0; i < d->n; i++) fuzz_require(d->labels[i] >= 0 && d->labels[i] < 10, "labels 0..9");
    fuzz_note("accepted: %d images", d->n);
    fuzz_batches(d, 0);
    vg_dataset_free(d);
    return 0;
}
