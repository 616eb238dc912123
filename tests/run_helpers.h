/* run_helpers.h — what the tests that drive ./train share (tests/test_run_helpers.c): files and
 * metrics.csv columns (the small CIFAR-10 set is vg_test_write_cifar in test.h). */
#ifndef VG_RUN_HELPERS_H
#define VG_RUN_HELPERS_H
#include <stdbool.h>
#include <stddef.h>

/* the whole file, NUL-terminated (free it); NULL if unreadable. *n gets its length when n != NULL */
char *vg_test_read_file(const char *path, size_t *n);
/* both files readable and byte for byte the same */
bool  vg_test_same_bytes(const char *a, const char *b);
/* the first five columns of metrics.csv training rows (step, epoch, loss, lr, train_acc), one per line */
void  vg_test_loss_columns(const char *csv_path, char *out, size_t n);
#endif
