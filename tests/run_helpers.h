/* run_helpers.h — what the tests that drive ./train share (tests/test_run_helpers.c): files and
 * metrics.csv columns (the small CIFAR-10 set is vg_test_write_cifar in test.h). */
#ifndef VG_RUN_HELPERS_H
#define VG_RUN_HELPERS_H
#include <stdbool.h>
#include <stddef.h>

/* the whole file, NUL-terminated (free it); NULL if unreadable. *n gets its length when n != NULL */
char *vg_test_read_file(const char *path, size_t *n);
/* the number of lines of a file (of metrics.csv rows, header included); 0 if it is missing */
int   vg_test_count_lines(const char *path);
/* both files readable and byte for byte the same */
bool  vg_test_same_bytes(const char *a, const char *b);
/* the first five columns of metrics.csv training rows (step, epoch, loss, lr, train_acc), one per line */
void  vg_test_loss_columns(const char *csv_path, char *out, size_t n);
/* A learnable image folder in dir: train/ and val/ with `classes` class folders (c00, c01, …) of
 * train_per_class and val_per_class size×size RGB PNGs; class c's images have their own mean
 * colour and a horizontal ramp, plus noise. false if a file cannot be written. */
bool  vg_test_write_imagefolder(const char *dir, int classes, int train_per_class, int val_per_class, int size);
#endif
