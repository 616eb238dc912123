/* internal.h — helpers shared by the data module sources (not part of the public API). */
#ifndef VG_DATA_INTERNAL_H
#define VG_DATA_INTERNAL_H
#include "data/data.h"
#include <stdio.h>

/* snprintf into err (if err != NULL); always returns -1 so callers can `return vg__err(...)` */
int vg__err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
vg_dataset *vg__dataset_new(const char *name, const char *path);
char *vg__strdup(const char *s);
/* read a whole file into a malloc'ed buffer; -1 with err set ("cannot open PATH: reason") */
int vg__read_file(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen);
/* read up to max_lines non-empty lines of a text file (trailing whitespace stripped) */
int vg__read_lines(const char *path, char ***lines, int max_lines);
void vg__free_strings(char **s, int n);
#endif
