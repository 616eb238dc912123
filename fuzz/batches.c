/* batches.c — see batches.h. */
#include "fuzz/batches.h"
#include "fuzz/common.h"
#include <math.h>
#include <stdio.h>

void fuzz_batches(const vg_dataset *d, int image_size) {
    double mean[3], std[3];
    vg_dataset_channel_stats(d, mean, std);
    int counts[1024];
    if (d->n_classes <= 1024) vg_dataset_class_counts(d, counts);
    for (int train = 0; train <= 1; train++) {
        vg_loader_config c = vg_loader_config_default();
        c.batch_size = d->n < 3 ? d->n : 3;
        c.train = train; c.n_threads = 0; c.prefetch = 1; c.image_size = image_size;
        char err[VG_DATA_ERRLEN] = "";
        vg_loader *L = vg_loader_new(d, &c, err, sizeof err);
        if (!L) { fuzz_require(err[0] != 0, "the loader says why it refuses"); continue; }
        vg_batch b;
        if (vg_loader_next(L, &b)) {
            size_t n = (size_t)b.n * b.c * b.h * b.w;
            for (size_t i = 0; i < n; i++) fuzz_require(isfinite(b.x[i]), "every batch value is finite");
            for (int i = 0; i < b.n; i++) fuzz_require(b.y[i] >= 0 && b.y[i] < d->n_classes, "labels in range");
        }
        vg_loader_free(L);
    }
}
