/* replay.c — a plain main() for a fuzz harness: runs LLVMFuzzerTestOneInput on every file given
 * (directories: every file in them, sorted), each in its own child process, so one input that
 * crashes (or, under `make asan`, trips a sanitizer or leaks) is reported by name and the others
 * still run. Needs no clang: `make test` builds it with the project's compiler.
 *   replay_<harness> fuzz/corpus/<harness> fuzz/regressions/<harness>
 * Last line: "N passed, N failed". */
#include "fuzz/common.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
