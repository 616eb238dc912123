/* test_main.c — runs every registered test (or only those whose name or file contains one of the
 * arguments) and
 * prints "N passed, N failed[, N skipped]" as its last line. `--gemm-kernel` / `--bf16-kernel` print
 * the FP32 / bf16 GEMM micro-kernel the program was built with instead (tests/run.sh: the emulated
 * run). */
#include "test.h"
#include "isa/isa.h"
#include "base/clock.h"
#include "gemm/gemm.h"
#include "tensor/rng.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 1024
static struct { const char *name, *file; vg_test_fn fn; } tests[MAX_TESTS];
static int n_tests, cur_failed, cur_skipped;

void vg_test_register(const char *name, const char *file, vg_test_fn fn) {
    if (n_tests < MAX_TESTS) { tests[n_tests].name = name; tests[n_tests].file = file; tests[n_tests].fn = fn; n_tests++; }
}
void vg_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line); vfprintf(stderr, fmt, ap); fputc('\n', stderr);
    va_end(ap);
    cur_failed++;
}
void vg_test_skip(const char *why) { printf("    skipped: %s\n", why); cur_skipped = 1; }
int vg_test_failed_now(void) { return cur_failed; }

static const char *bin_dir(void) {
    const char *b = getenv("VG_BIN");
    return b && *b ? b : ".";
}

int vg_test_have_program(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%.500s/%.500s", bin_dir(), name);
    return access(path, X_OK) == 0;
}

const char *vg_test_train_faults(void) {
    const char *t = getenv("VG_TRAIN_FAULTS");
    if (!t || !*t) t = "build/train-faults";
    return access(t, X_OK) == 0 ? t : NULL;
}

/* VG_EXEC_WRAPPER: what our programs run under when they are not this machine's (make test-arm64:
 * "qemu-aarch64 -L /usr/aarch64-linux-gnu"); "" when unset, else the wrapper and a space */
const char *vg_test_exec_wrapper(void) {
    static char w[101];
    const char *e = getenv("VG_EXEC_WRAPPER");
    snprintf(w, sizeof w, "%.99s%s", e && *e ? e : "", e && *e ? " " : "");
    return w;
}

/* cmd with a leading "./" pointing at our programs' directory, then `suffix`; under
 * VG_EXEC_WRAPPER, a command naming one of our programs (by "./" or by that directory, as the
 * resume command ./train prints does) runs through the wrapper */
static void full_command(const char *cmd, const char *suffix, char *full, size_t n) {
    const char *w = vg_test_exec_wrapper(), *b = bin_dir();
    const size_t bl = strlen(b);
    if (strncmp(cmd, "./", 2) == 0) snprintf(full, n, "%.100s%.500s/%.2900s%.500s", w, b, cmd + 2, suffix);
    else if (*w && strncmp(cmd, b, bl) == 0 && cmd[bl] == '/') snprintf(full, n, "%.100s%.3400s%.500s", w, cmd, suffix);
    else snprintf(full, n, "%.3500s%.500s", cmd, suffix);
}

int vg_test_spawn(const char *cmd, const char *log_path) {
    char full[4200], suffix[600];
    snprintf(suffix, sizeof suffix, " > '%.500s' 2>&1", log_path);
    full_command(cmd, suffix, full, sizeof full);
    /* "exec": the program replaces the shell, so the pid returned is the program's */
    char script[4300];
    snprintf(script, sizeof script, "exec %s", full);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { execl("/bin/sh", "sh", "-c", script, (char *)NULL); _exit(127); }
    return (int)pid;
}

int vg_test_wait(int pid) {
    int st;
    if (waitpid((pid_t)pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

int vg_test_run(const char *cmd, char *out, size_t n) {
    char full[4096];
    full_command(cmd, " 2>&1", full, sizeof full);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t len = 0;
    if (out && n) out[0] = 0;
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) {
        size_t k = strlen(buf);
        if (out && len + k < n) { memcpy(out + len, buf, k + 1); len += k; }
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* vg_test_write_cifar: a small dataset in the real CIFAR-10 binary format: 5×64 train records, 64 test records.
 * Class c is a horizontal gradient whose slope depends on c, plus noise: learnable. */
bool vg_test_write_cifar(const char *dir) {
    vg_rng r = vg_rng_seed(77);
    unsigned char rec[3073];
    for (int f = 0; f < 6; f++) {
        char path[512];
        if (f < 5) snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, f + 1);
        else snprintf(path, sizeof path, "%s/test_batch.bin", dir);
        FILE *fp = fopen(path, "wb");
        if (!fp) return false;
        for (int i = 0; i < 64; i++) {
            int c = (int)vg_rng_below(&r, 10);
            rec[0] = (unsigned char)c;
            for (int k = 0; k < 3072; k++) {
                int x = k % 32, ch = k / 1024;
                int v = 128 + (x - 16) * (c - 4) * (ch + 1) / 4 + (int)(vg_rng_normal(&r) * 10);
                rec[1 + k] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
            fwrite(rec, 1, sizeof rec, fp);
        }
        fclose(fp);
    }
    return true;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--gemm-kernel") == 0) { puts(vg_gemm_kernel()); return 0; }
    if (argc > 1 && strcmp(argv[1], "--bf16-kernel") == 0) { puts(vg_gemm_bf16_kernel()); return 0; }
    if (argc > 1 && strcmp(argv[1], "--isa-levels") == 0) {          /* the levels this CPU runs */
        for (int l = 0; l < VG_ISA_COUNT; l++)
            if (vg_isa_allows((vg_isa)l)) printf("%s\n", vg_isa_name((vg_isa)l));
        return 0;
    }
    int passed = 0, failed = 0, skipped = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < n_tests; i++) {
        bool selected = argc == 1;
        for (int a = 1; a < argc && !selected; a++)
            selected = strstr(tests[i].name, argv[a]) || strstr(tests[i].file, argv[a]);
        if (!selected) continue;
        cur_failed = 0; cur_skipped = 0;
        const double t0 = vg_now_s();
        tests[i].fn();
        const double ms = 1e3 * (vg_now_s() - t0);
        const char *status = cur_failed ? "FAIL" : cur_skipped ? "SKIP" : "ok";
        printf("  %-4s %-48s %8.1f ms  (%s)\n", status, tests[i].name, ms, tests[i].file);
        fflush(stderr);
        if (cur_failed) failed++; else if (cur_skipped) skipped++; else passed++;
    }
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
