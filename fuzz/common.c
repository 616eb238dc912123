/* common.c — see common.h. */
#include "fuzz/common.h"
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fuzz_note(const char *fmt, ...) {
    static int verbose = -1;
    if (verbose < 0) { const char *v = getenv("FUZZ_VERBOSE"); verbose = v && *v && strcmp(v, "0"); }
    if (!verbose) return;
    va_list ap; va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void fuzz_expect_error(const char *err, const char *name) {
    fuzz_note("refused: %s", err ? err : "(null)");
    if (err && err[0] && strstr(err, name)) return;
    fprintf(stderr, "fuzz: a failed read gave no clear error naming %s: \"%s\"\n", name, err ? err : "(null)");
    abort();
}

void fuzz_require(int cond, const char *what) {
    if (cond) return;
    fprintf(stderr, "fuzz: property violated: %s\n", what);
    abort();
}

static char scratch[256];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag;
    if (ftw->level > 0) remove(path);
    return 0;
}
void fuzz_scratch_clear(void) {
    if (scratch[0]) nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
static void scratch_remove(void) {
    fuzz_scratch_clear();
    if (scratch[0]) rmdir(scratch);
}
const char *fuzz_scratch(void) {
    if (!scratch[0]) {
        const char *base = getenv("TMPDIR");
        struct stat st;
        if (!base || !*base) base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(scratch, sizeof scratch, "%s/vg-fuzz-XXXXXX", base);
        if (!mkdtemp(scratch)) { perror(scratch); abort(); }
        atexit(scratch_remove);
    }
    return scratch;
}

int fuzz_write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}
