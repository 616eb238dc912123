/* run_dir.c — the output directory of a run (--out): never overwritten by accident.
 *
 * A directory "holds a run" when it has a metrics.csv, a checkpoints/ directory or a `latest`
 * link. ./train refuses to start a new run there unless told: --resume continues it, --overwrite
 * removes its checkpoints and starts over, --continue resumes it when it has a checkpoint (and
 * reports it when it is finished: its step is the schedule's last). On resume, metrics.csv rows
 * logged after the checkpoint (by the interrupted process) are dropped, so each step appears once.
 * OUT/command.txt records how every start and resume of the run was invoked (time, host, CPU,
 * processes x threads, the source version (git describe), the command line): any run can be re-run from its directory. */
#include "checkpoint/checkpoint.h"
#include "run/run.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ERRLEN RUN_ERRLEN
#ifndef VG_SOURCE
#define VG_SOURCE "unknown"             /* the Makefile passes git describe of the tree */
#endif

static bool exists(const char *dir, const char *name) {
    char p[4200]; struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

static bool holds_run(const char *out) {
    return exists(out, "metrics.csv") || exists(out, "checkpoints") || exists(out, "latest");
}

static bool has_checkpoint(const char *out) {
    char p[4200]; struct stat st;
    snprintf(p, sizeof p, "%s/latest/train_state.safetensors", out);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* whether path (a --resume argument) lies inside dir */
static bool is_inside(const char *path, const char *dir) {
    char a[PATH_MAX], b[PATH_MAX];
    if (!realpath(path, a) || !realpath(dir, b)) return false;
    size_t n = strlen(b);
    return !strncmp(a, b, n) && (a[n] == 0 || a[n] == '/');
}

static int clear_run(const char *out, char *err) {
    char p[4200];
    if (vg_checkpoint_clear(out, err, ERRLEN)) return -1;
    const char *files[] = {"metrics.csv", "confusion.txt", "command.txt"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", out, files[i]);
        if (unlink(p) != 0 && errno != ENOENT) { snprintf(err, ERRLEN, "%.400s: cannot remove: %.100s", p, strerror(errno)); return -1; }
    }
    return 0;
}

int run_dir_prepare(options *o, bool may_write, char *err) {
    if (o->bench || o->trace_shapes || o->eval_only) return 0;     /* they write nothing there */
    const char *out = o->out;
    if (o->continue_run && !o->resume) {
        if (has_checkpoint(out)) {
            printf("%s holds a run: continuing it from its last checkpoint\n", out);
            o->resume = out;
            return 0;
        }
        if (holds_run(out)) {
            printf("%s holds a run without a checkpoint yet: starting it over\n", out);
            return may_write ? clear_run(out, err) : 0;
        }
        return 0;
    }
    if (!holds_run(out) || (o->resume && is_inside(o->resume, out))) return 0;
    if (o->overwrite) {
        printf("--overwrite: removing the run in %s (its checkpoints and metrics)\n", out);
        return may_write ? clear_run(out, err) : 0;
    }
    snprintf(err, ERRLEN,
             "%.400s already holds a run (metrics.csv or checkpoints/). Continue it with --resume %.400s, "
             "choose a fresh --out DIR, or pass --overwrite to replace it", out, out);
    return -1;
}

/* the step of a metrics.csv row (its first field); -1 for the header or a malformed line */
static long long row_step(const char *line) {
    char *end;
    long long s = strtoll(line, &end, 10);
    return end != line && *end == ',' ? s : -1;
}

int run_dir_trim_metrics(const char *out, int64_t step, char *err) {
    char path[4200], tmp[4300], line[4096];
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    FILE *in = fopen(path, "r");
    if (!in) return 0;                          /* nothing logged yet */
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *o = fopen(tmp, "w");
    if (!o) { fclose(in); snprintf(err, ERRLEN, "%.400s: %.200s", tmp, strerror(errno)); return -1; }
    long dropped = 0;
    for (bool header = true; fgets(line, sizeof line, in); header = false) {
        /* the header, and whole rows up to the checkpoint's step; not a row cut short by a kill */
        long long s = row_step(line);
        bool whole = strchr(line, '\n') != NULL;
        if (!(header && whole) && !(whole && s >= 0 && s <= step)) { dropped++; continue; }
        fputs(line, o);
    }
    fclose(in);
    if (fclose(o) != 0 || rename(tmp, path) != 0) {
        snprintf(err, ERRLEN, "%.400s: rewriting it failed: %.200s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (dropped) printf("metrics.csv: dropped %ld rows logged after step %lld (the interrupted process)\n", dropped, (long long)step);
    return 0;
}

bool run_dir_metrics_has(const char *path, const char *column) {
    char line[4096];
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool has = false;
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        for (char *s = line, *e; s && !has; s = e ? e + 1 : NULL) {
            e = strchr(s, ',');
            if (e) *e = 0;
            has = !strcmp(s, column);
        }
    }
    fclose(f);
    return has;
}

void run_dir_report_finished(const char *out, int64_t step, int64_t total) {
    printf("%s holds a finished run (step %lld of %lld): nothing to train\n", out, (long long)step, (long long)total);
    char path[4200], line[512];
    snprintf(path, sizeof path, "%s/confusion.txt", out);
    FILE *f = fopen(path, "r");
    if (f && fgets(line, sizeof line, f)) printf("  %s", line);      /* "test top-1: …% (N images), test loss …" */
    else printf("  (no final evaluation recorded in %s: --eval-only --init %s evaluates its weights)\n", path, out);
    if (f) fclose(f);
    printf("  weights: %s/model.safetensors\n"
           "  to train it again: --overwrite (replaces it) or another --out\n", out);
}

/* the "model name" line of /proc/cpuinfo, else "unknown CPU" */
static void cpu_model(char *buf, size_t n) {
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        snprintf(buf, n, "%s", colon + 2);
        buf[strcspn(buf, "\n")] = 0;
        break;
    }
    fclose(f);
}

void run_dir_log_command(const char *out, int argc, char **argv, int processes, int threads) {
    char path[4200], cmd[8192], cpu[256], host[256] = "", when[64];
    snprintf(path, sizeof path, "%s/command.txt", out);
    FILE *f = fopen(path, "a");
    if (!f) return;                                    /* a record, not a reason to stop the run */
    run_command_line(argc, argv, cmd, sizeof cmd);
    cpu_model(cpu, sizeof cpu);
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    fprintf(f, "# %s on %s (%s), %d process%s x %d threads, vitgrad %s\n%s\n", when, host, cpu, processes,
            processes > 1 ? "es" : "", threads, VG_SOURCE, cmd);
    fclose(f);
}
