/* replay.c — a plain main() for a fuzz harness: runs LLVMFuzzerTestOneInput on every file given
 * (directories: every file in them, sorted), each in its own child process, so one input that
 * crashes (or, under `make asan`, trips a sanitizer or leaks) is reported by name and the others
 * still run. Needs no clang: `make test` builds it with the project's compiler.
 *   replay_<harness> fuzz/corpus/<harness> fuzz/regressions/<harness>
 * Prints "inputs: N passed, N failed", then, for tests/run.sh, the harness as one test:
 * "1 passed, 0 failed" when every input passed, else "0 passed, 1 failed".
 * Like libFuzzer's -malloc_limit_mb and -rss_limit_mb, an allocation over 2 GB, or more than 2 GB
 * allocated at once, is a failure: the program is linked with -Wl,--wrap=malloc,... so every
 * allocation and free of the library and of stb_image passes through the wrappers below. That
 * keeps the out-of-memory regressions (a header promising gigabytes, a model larger than its file)
 * failing if their fix is reverted, as the fuzzer saw them, instead of exhausting the machine. */
#include "fuzz/common.h"
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MALLOC_LIMIT ((size_t)2048 << 20)
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
/* bytes live through the wrappers (frees of blocks libc allocated itself, e.g. by strdup, make it
 * smaller than the truth: lenient, never a false failure) */
static long long live;
static void check_size(const char *fn, size_t n) {
    if (n <= MALLOC_LIMIT && live + (long long)n <= (long long)MALLOC_LIMIT) return;
    fprintf(stderr, "replay: %s of %zu bytes with %lld live, over the %zu-MB limit (libFuzzer: out-of-memory)\n",
            fn, n, live, MALLOC_LIMIT >> 20);
    abort();
}
static void *counted(void *p) { if (p) live += (long long)malloc_usable_size(p); return p; }
void *__wrap_malloc(size_t n) { check_size("malloc", n); return counted(__real_malloc(n)); }
void *__wrap_calloc(size_t k, size_t n) {
    check_size("calloc", k && n > SIZE_MAX / k ? SIZE_MAX : k * n);
    return counted(__real_calloc(k, n));
}
void *__wrap_realloc(void *p, size_t n) {
    check_size("realloc", n);
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __real_realloc(p, n);
    if (q || !n) live -= (long long)old;
    return counted(q);
}
void *__wrap_aligned_alloc(size_t a, size_t n) { check_size("aligned_alloc", n); return counted(__real_aligned_alloc(a, n)); }
void __wrap_free(void *p) { if (p) live -= (long long)malloc_usable_size(p); __real_free(p); }

static int read_all(const char *path, uint8_t **buf, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 4096, len = 0;
    uint8_t *p = malloc(cap);
    for (size_t k; p && (k = fread(p + len, 1, cap - len, f)) > 0;) {
        len += k;
        if (len == cap) { uint8_t *q = realloc(p, cap *= 2); if (!q) { free(p); p = NULL; } else p = q; }
    }
    int bad = ferror(f);
    fclose(f);
    if (!p || bad) { free(p); return -1; }
    *buf = p; *n = len;
    return 0;
}

static int passed, failed;

static void run_one(const char *path) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { printf("  FAIL %s: fork: %s\n", path, strerror(errno)); failed++; return; }
    if (pid == 0) {
        uint8_t *buf; size_t n;
        if (read_all(path, &buf, &n)) { fprintf(stderr, "%s: cannot read\n", path); _exit(2); }
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
        exit(0);                     /* exit, not _exit: sanitizers check for leaks at exit */
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) { passed++; return; }
    failed++;
    if (WIFSIGNALED(st)) printf("  FAIL %s: killed by signal %d\n", path, WTERMSIG(st));
    else printf("  FAIL %s: exit status %d\n", path, WEXITSTATUS(st));
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void run_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) { printf("  FAIL %s: %s\n", path, strerror(errno)); failed++; return; }
    if (!S_ISDIR(st.st_mode)) { run_one(path); return; }
    DIR *d = opendir(path);
    if (!d) { printf("  FAIL %s: %s\n", path, strerror(errno)); failed++; return; }
    char **names = NULL; size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) { cap = cap ? 2 * cap : 64; names = realloc(names, cap * sizeof *names); if (!names) abort(); }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    int before = passed + failed;
    for (size_t i = 0; i < n; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, names[i]);
        run_one(p);
        free(names[i]);
    }
    free(names);
    printf("  %s: %d inputs\n", path, passed + failed - before);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]); return 2; }
    for (int i = 1; i < argc; i++) run_path(argv[i]);
    printf("  inputs: %d passed, %d failed\n%d passed, %d failed\n", passed, failed, !failed, !!failed);
    return failed ? 1 : 0;
}
