/* docs_check.c — the program outputs quoted in the docs are what the programs print now.
 *
 *   build/docs_check [--bin DIR] [--slow] [--run NAME=DIR]… [--images DIR] FILE.md…
 *
 * In a checked file every plain fenced block (``` with no language; code is ```sh, ```c …) is a
 * quoted output and must be marked by an HTML comment on the line before it:
 *
 *   <!-- output -->                      checked by `make test`
 *   <!-- output: cifar10 -->             needs the CIFAR-10 data (skipped visibly without it)
 *   <!-- output: slow -->                takes more than seconds: checked only with --slow
 *                                        (docs/tutorial_assets.sh)
 *   <!-- output: timing -->              wall-clock numbers: numbers with a decimal point are not
 *                                        compared (nor the spaces that align them), and the quoted
 *                                        lines may come in any order
 *                                        (attributes combine: "output: slow, cifar10")
 *
 * Inside the block a line "$ COMMAND" starts a command (run with sh in a scratch directory where
 * ./inspect, ./train, ./gradcheck are links to the programs in --bin, docs/img/ is writable and
 * runs/ is the repository's runs/ or what --run NAME=DIR maps); the lines after it are its quoted
 * output, compared line by line (trailing spaces ignored) with what it prints on stdout. Cuts are
 * marked: a line that is only "…" stands for any number of lines; a line ending in "…" for a line
 * that starts with what comes before the "…". A command that names runs/NAME which does not
 * exist (a training run) is skipped visibly; docs/tutorial_assets.sh RUN checks those.
 * With --images DIR, docs/img/ is DIR (tutorial_assets.sh: the pictures land in the repository).
 *
 * Every compared block is also checked the other way: a copy with one quoted line edited must
 * fail, so a block whose lines are all cut cannot pass silently.
 * Prints one line per command, then "N passed, N failed, N skipped"; exit 1 if any failed. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ELLIPSIS "\xe2\x80\xa6"          /* "…" in UTF-8 */
#define MAX_LINES 4096

typedef struct { char **v; int n; } lines;

static int passed, failed, skipped;
static bool opt_slow;
static char scratch[PATH_MAX], cifar_dir[PATH_MAX];

static void lines_push(lines *l, const char *s, size_t len) {
    if (l->n % 64 == 0) l->v = realloc(l->v, sizeof *l->v * (size_t)(l->n + 64));
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\r' || s[len - 1] == '\n' || s[len - 1] == '\t')) len--;
    l->v[l->n] = strndup(s, len);
    l->n++;
}
static void lines_free(lines *l) { for (int i = 0; i < l->n; i++) free(l->v[i]); free(l->v); l->v = NULL; l->n = 0; }

static bool read_lines(const char *path, lines *out) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t k;
    while ((k = getline(&buf, &cap, f)) >= 0) lines_push(out, buf, (size_t)k);
    free(buf);
    fclose(f);
    return true;
}

/* ---- comparing quoted lines with a program's output ---- */
static bool is_gap(const char *q) {
    while (*q == ' ') q++;
    return !strcmp(q, ELLIPSIS);
}
/* numbers with a decimal point replaced by '#' and runs of spaces by one (timing blocks: the
 * columns' widths follow the numbers) */
static void mask_decimals(const char *s, char *out, size_t n) {
    size_t o = 0;
    for (const char *p = s; *p && o + 1 < n; ) {
        if (*p == ' ' && o > 0 && out[o - 1] == ' ') { p++; continue; }
        const char *q = p;
        while (*q >= '0' && *q <= '9') q++;
        if (q > p && *q == '.' && q[1] >= '0' && q[1] <= '9') {
            q++;
            while (*q >= '0' && *q <= '9') q++;
            out[o++] = '#';
            p = q;
        } else if (q > p) { while (p < q && o + 1 < n) out[o++] = *p++; }
        else out[o++] = *p++;
    }
    out[o] = 0;
}
static bool line_matches(const char *q, const char *o, bool timing) {
    char qm[4096], om[4096];
    if (timing) { mask_decimals(q, qm, sizeof qm); mask_decimals(o, om, sizeof om); q = qm; o = om; }
    size_t lq = strlen(q), le = strlen(ELLIPSIS);
    if (lq >= le && !strcmp(q + lq - le, ELLIPSIS)) return !strncmp(o, q, lq - le);   /* "prefix…" */
    return !strcmp(q, o);
}
/* in-order match with gaps; *furthest: the first quoted line no attempt got past */
static bool match_from(char **q, int nq, int qi, char **o, int no, int oi, int *furthest, int *at_out) {
    if (qi > *furthest) { *furthest = qi; *at_out = oi; }
    if (qi == nq) return oi == no;
    if (is_gap(q[qi])) {
        for (int k = oi; k <= no; k++) if (match_from(q, nq, qi + 1, o, no, k, furthest, at_out)) return true;
        return false;
    }
    return oi < no && line_matches(q[qi], o[oi], false) && match_from(q, nq, qi + 1, o, no, oi + 1, furthest, at_out);
}
/* timing: every quoted line (gaps aside) matches a different output line, in any order */
static bool match_any_order(char **q, int nq, char **o, int no, int *bad) {
    bool *used = calloc((size_t)no + 1, 1);
    bool ok = true;
    for (int i = 0; i < nq && ok; i++) {
        if (is_gap(q[i])) continue;
        int k = 0;
        while (k < no && (used[k] || !line_matches(q[i], o[k], true))) k++;
        if (k == no) { ok = false; *bad = i; }
        else used[k] = true;
    }
    free(used);
    return ok;
}
static bool compare(char **q, int nq, char **o, int no, bool timing, int *bad, int *at) {
    *bad = 0; *at = 0;
    if (timing) return match_any_order(q, nq, o, no, bad);
    return match_from(q, nq, 0, o, no, 0, bad, at);
}

/* ---- running one command ---- */
typedef struct { bool slow, timing, cifar10; } attrs;

static bool parse_marker(const char *line, attrs *a) {
    memset(a, 0, sizeof *a);
    const char *p = line;
    while (*p == ' ') p++;
    if (strncmp(p, "<!-- output", 11)) return false;
    p += 11;
    if (*p == ':') p++;
    const char *end = strstr(p, "-->");
    if (!end) return false;
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(end - p), p);
    for (char *t = strtok(buf, ", "); t; t = strtok(NULL, ", ")) {
        if (!strcmp(t, "slow")) a->slow = true;
        else if (!strcmp(t, "timing")) a->timing = true;
        else if (!strcmp(t, "cifar10")) a->cifar10 = true;
        else { fprintf(stderr, "docs_check: unknown attribute '%s' in %s\n", t, line); return false; }
    }
    return true;
}

/* the runs/NAME a command names that does not exist in the scratch directory, or NULL */
static const char *missing_run(const char *cmd, char *name, size_t n) {
    for (const char *p = strstr(cmd, "runs/"); p; p = strstr(p + 1, "runs/")) {
        if (p > cmd && p[-1] != ' ' && p[-1] != '=') continue;
        size_t len = strcspn(p + 5, "/ ");
        char path[2 * PATH_MAX];
        snprintf(path, sizeof path, "%s/runs/%.*s", scratch, (int)len, p + 5);
        if (access(path, F_OK)) { snprintf(name, n, "runs/%.*s", (int)len, p + 5); return name; }
    }
    return NULL;
}

static void check_command(const char *file, int line_no, const char *cmd, char **q, int nq, const attrs *a) {
    char why[512];
    if (a->slow && !opt_slow) {
        printf("  skip %s:%d $ %s (slow: docs/tutorial_assets.sh checks it)\n", file, line_no, cmd); skipped++; return;
    }
    if (a->cifar10 && !cifar_dir[0]) {
        printf("  skip %s:%d $ %s (no CIFAR-10: set CIFAR10_DIR)\n", file, line_no, cmd); skipped++; return;
    }
    if (missing_run(cmd, why, sizeof why)) {
        printf("  skip %s:%d $ %s (needs the training run %s: docs/tutorial_assets.sh RUN checks it)\n", file, line_no, cmd, why);
        skipped++; return;
    }
    char sh[4 * PATH_MAX + 8192], out_path[PATH_MAX + 16], err_path[PATH_MAX + 16];
    snprintf(out_path, sizeof out_path, "%s/.stdout", scratch);
    snprintf(err_path, sizeof err_path, "%s/.stderr", scratch);
    snprintf(sh, sizeof sh, "cd '%s' && { %s\n} > '%s' 2> '%s'", scratch, cmd, out_path, err_path);
    int st = system(sh);
    lines o = {0}, e = {0};
    read_lines(out_path, &o);
    read_lines(err_path, &e);
    int bad, at;
    bool ok = st == 0 && compare(q, nq, o.v, o.n, a->timing, &bad, &at);
    if (st != 0) {
        printf("  FAIL %s:%d $ %s: exit status %d\n", file, line_no, cmd, WEXITSTATUS(st));
        for (int i = 0; i < e.n && i < 10; i++) printf("       stderr: %s\n", e.v[i]);
    } else if (!ok) {
        printf("  FAIL %s:%d $ %s: quoted line %d does not match what it prints now\n", file, line_no, cmd, bad + 1);
        if (bad < nq) printf("       quoted : %s\n", q[bad]);
        else printf("       quoted : (end of the block)\n");
        if (!a->timing) printf("       printed: %s\n", at < o.n ? o.v[at] : "(end of the output)");
        printf("       the output now (%d lines):\n", o.n);
        for (int i = 0; i < o.n && i < 60; i++) printf("       | %s\n", o.v[i]);
    } else {
        /* the block must be able to fail: edit its first compared line */
        int k = 0;
        while (k < nq && is_gap(q[k])) k++;
        bool can_fail = false;
        if (k < nq) {
            char *orig = q[k], edited[4200];
            snprintf(edited, sizeof edited, "%sX", orig);
            q[k] = edited;
            can_fail = !compare(q, nq, o.v, o.n, a->timing, &bad, &at);
            q[k] = orig;
        }
        if (!can_fail) { ok = false; printf("  FAIL %s:%d $ %s: an edited copy of the block still matches (every line cut?)\n", file, line_no, cmd); }
        else printf("  ok   %s:%d $ %s\n", file, line_no, cmd);
    }
    if (ok) passed++; else failed++;
    lines_free(&o); lines_free(&e);
}

/* ---- one markdown file ---- */
static void check_file(const char *path) {
    lines md = {0};
    if (!read_lines(path, &md)) { printf("  FAIL %s: cannot read (%s)\n", path, strerror(errno)); failed++; return; }
    for (int i = 0; i < md.n; i++) {
        if (strncmp(md.v[i], "```", 3)) continue;
        int open = i, close = i + 1;
        while (close < md.n && strncmp(md.v[close], "```", 3)) close++;
        i = close;
        if (md.v[open][3]) continue;                   /* ```sh, ```c …: code, not output */
        int prev = open - 1;
        while (prev >= 0 && !md.v[prev][0]) prev--;
        attrs a;
        if (prev < 0 || !parse_marker(md.v[prev], &a)) {
            printf("  FAIL %s:%d: a plain ``` block without an <!-- output --> marker before it (a quoted output must be "
                   "checked; code takes a language: ```sh, ```c)\n", path, open + 1);
            failed++; continue;
        }
        if (close >= md.n) { printf("  FAIL %s:%d: the block is not closed\n", path, open + 1); failed++; continue; }
        if (close == open + 1 || strncmp(md.v[open + 1], "$ ", 2)) {
            printf("  FAIL %s:%d: a marked block starts with \"$ COMMAND\"\n", path, open + 2); failed++; continue;
        }
        /* each "$ " line starts a command; its quoted output runs to the next one (trailing blank lines dropped) */
        for (int c = open + 1; c < close; ) {
            int end = c + 1;
            while (end < close && strncmp(md.v[end], "$ ", 2)) end++;
            int nq = end - (c + 1);
            while (nq > 0 && !md.v[c + 1 + nq - 1][0]) nq--;
            check_command(path, c + 1, md.v[c] + 2, md.v + c + 1, nq, &a);
            c = end;
        }
    }
    lines_free(&md);
}

static bool link_into(const char *target, const char *name) {
    char path[PATH_MAX + 512];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    return symlink(target, path) == 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *bin = ".", *images = NULL, *runs[32];
    int n_runs = 0, first_file = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bin") && i + 1 < argc) bin = argv[++i];
        else if (!strcmp(argv[i], "--slow")) opt_slow = true;
        else if (!strcmp(argv[i], "--images") && i + 1 < argc) images = argv[++i];
        else if (!strcmp(argv[i], "--run") && i + 1 < argc && n_runs < 32 && strchr(argv[i + 1], '=')) runs[n_runs++] = argv[++i];
        else if (argv[i][0] == '-') { fprintf(stderr, "usage: docs_check [--bin DIR] [--slow] [--run NAME=DIR]... [--images DIR] FILE.md...\n"); return 2; }
        else { first_file = i; break; }
    }
    if (first_file == argc) { fprintf(stderr, "docs_check: no markdown file given\n"); return 2; }
    char bin_abs[PATH_MAX], cwd[PATH_MAX];
    if (!realpath(bin, bin_abs) || !getcwd(cwd, sizeof cwd)) { fprintf(stderr, "docs_check: %s: %s\n", bin, strerror(errno)); return 2; }
    /* the CIFAR-10 copy the tests use: CIFAR10_DIR, else ../shared/data (absolute: commands run elsewhere) */
    const char *cd = getenv("CIFAR10_DIR");
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/test_batch.bin", cd && *cd ? cd : "../shared/data/cifar-10-batches-bin");
    if (access(probe, R_OK) == 0 && realpath(cd && *cd ? cd : "../shared/data/cifar-10-batches-bin", cifar_dir)) setenv("CIFAR10_DIR", cifar_dir, 1);
    else cifar_dir[0] = 0;

    snprintf(scratch, sizeof scratch, "/tmp/vg_docs_check-XXXXXX");
    if (!mkdtemp(scratch)) { perror("docs_check: mkdtemp"); return 1; }
    char p[PATH_MAX + 64];
    bool ok = true;
    const char *progs[] = {"inspect", "train", "gradcheck", "launch"};
    for (int i = 0; i < 4; i++) { snprintf(p, sizeof p, "%s/%s", bin_abs, progs[i]); ok &= link_into(p, progs[i]); }
    snprintf(p, sizeof p, "%s/docs", scratch);
    ok &= mkdir(p, 0755) == 0;
    if (images) {
        char img_abs[PATH_MAX];
        ok &= realpath(images, img_abs) != NULL && link_into(img_abs, "docs/img");
    } else { snprintf(p, sizeof p, "%s/docs/img", scratch); ok &= mkdir(p, 0755) == 0; }
    if (n_runs) {
        snprintf(p, sizeof p, "%s/runs", scratch);
        ok &= mkdir(p, 0755) == 0;
        for (int i = 0; i < n_runs; i++) {
            char name[256], dir_abs[PATH_MAX];
            snprintf(name, sizeof name, "runs/%.*s", (int)(strchr(runs[i], '=') - runs[i]), runs[i]);
            if (!realpath(strchr(runs[i], '=') + 1, dir_abs)) { fprintf(stderr, "docs_check: --run %s: %s\n", runs[i], strerror(errno)); ok = false; continue; }
            ok &= link_into(dir_abs, name);
        }
    } else {
        snprintf(p, sizeof p, "%s/runs", cwd);
        if (access(p, F_OK) == 0) ok &= link_into(p, "runs");
    }
    if (!ok) fprintf(stderr, "docs_check: could not prepare %s\n", scratch);
    for (int i = first_file; ok && i < argc; i++) check_file(argv[i]);
    snprintf(p, sizeof p, "rm -rf '%s'", scratch);
    if (system(p) != 0) fprintf(stderr, "docs_check: could not remove %s\n", scratch);
    if (!ok) return 1;
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
