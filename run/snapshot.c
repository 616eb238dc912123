/* snapshot.c — what `./inspect report` needs from a training run and cannot recompute later,
 * written into OUT/snapshots/ while ./train runs (--snapshots N, default 8; 0 = off):
 *
 *   norms.csv                     step,param,weight_norm,grad_norm,update_norm,update_ratio — per
 *                                 parameter tensor after step 1 and about 50 times over the run:
 *                                 ‖w‖₂, ‖g‖₂ of the gradient the step used (after clipping), ‖Δw‖₂
 *                                 of the step's update and ‖Δw‖ / ‖w‖
 *   step-00000000.safetensors …   the model's weights (model.safetensors's keys and metadata) at N
 *                                 moments: step 0, about 1 % of the run, and evaluations up to the
 *                                 last step, spaced geometrically (denser early)
 *
 * It only reads the weights and gradients: a run with snapshots trains the same bits as one
 * without. The moments follow from the run's length and flags alone, so a resumed run (which
 * first drops what the interrupted process wrote after its checkpoint) ends with the same files
 * as an uninterrupted one. Cost (docs/report.md): a copy of the weights before each norm step,
 * three norms, and N weight files — under 0.1 % of the training time of `make train`. */
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include "run/run.h"
#include "base/clock.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRLEN RUN_ERRLEN
#define NORM_ROWS 50                      /* norm moments over a run, besides step 1 */

struct run_snapshots {
    char dir[2100];
    int64_t total, norm_every;
    int64_t *moments; int n_moments;      /* steps whose weights are saved, ascending */
    real *before; int64_t before_step;    /* the weights before step before_step (−1: none) */
    FILE *norms;
    double seconds, started;              /* spent here; when this process started (closing line) */
    int64_t bytes; int files;             /* written by this process */
};

static bool is_moment(const run_snapshots *s, int64_t step) {
    for (int i = 0; i < s->n_moments; i++) if (s->moments[i] == step) return true;
    return false;
}
static bool is_norm_step(const run_snapshots *s, int64_t step) {
    return step == 1 || step == s->total || step % s->norm_every == 0;
}

/* the evaluation steps are multiples of `period` and the last step: the k-th of n (1-based) */
static int64_t eval_step(int64_t k, int64_t n, int64_t period, int64_t total) { return k == n ? total : k * period; }

/* step 0, ~1 % of the run, then evaluations up to the last step, spaced geometrically (denser early,
 * where the model changes fastest): n moments at most */
static int choose_moments(run_snapshots *s, const options *o, int64_t total, int64_t unit) {
    const int n = o->snapshots;
    s->moments = calloc((size_t)n + 2, sizeof *s->moments);
    if (!s->moments) return -1;
    int64_t period = o->eval_every > 0 ? unit * o->eval_every : 0;
    int64_t n_eval = period > 0 ? total / period + (total % period != 0) : 1;
    int c = 0;
    if (n >= 2) s->moments[c++] = 0;
    if (n >= 3) s->moments[c++] = total / 100 > 1 ? total / 100 : 1;
    const int want = n - c;
    int64_t prev = 0;
    for (int k = 1; k <= want; k++) {
        /* the k-th of want evaluations: n_eval^(k/want), after the previous one, leaving room for the rest */
        int64_t idx = n_eval <= want ? k : llround(pow((double)n_eval, (double)k / want));
        if (idx <= prev) idx = prev + 1;
        if (idx > n_eval - (want - k) && n_eval > want) idx = n_eval - (want - k);
        if (idx > n_eval) break;
        prev = idx;
        int64_t st = eval_step(idx, n_eval, period, total);
        if (c == 0 || st > s->moments[c - 1]) s->moments[c++] = st;
    }
    s->n_moments = c;
    return 0;
}

static int write_weights(run_snapshots *s, trainer *t, char *err) {
    char path[2300], v[32];
    snprintf(path, sizeof path, "%s/step-%08lld.safetensors", s->dir, (long long)t->step);
    vg_st_writer *w = vg_st_writer_new();
    int rc = !w || vg_params_to_writer(&t->state_dict, w, err, ERRLEN) ||
             vg_vit_config_to_meta(&t->model.cfg, w, err, ERRLEN) || vg_data_meta_write(&t->data, w, err, ERRLEN) ||
             vg_st_writer_meta(w, "format", "pt", err, ERRLEN);
    snprintf(v, sizeof v, "%lld", (long long)t->step);
    rc = rc || vg_st_writer_meta(w, "snapshot.step", v, err, ERRLEN) || vg_st_write(w, path, err, ERRLEN);
    vg_st_writer_free(w);
    if (rc) return -1;
    struct stat st;
    if (stat(path, &st) == 0) s->bytes += st.st_size;
    s->files++;
    return 0;
}

/* drop norms.csv rows after `step` and weight files of later steps (an interrupted process wrote
 * them after its last checkpoint); a fresh run (step 0) starts both over */
static int trim(run_snapshots *s, int64_t step, char *err) {
    char path[2400], tmp[2500], line[1024];
    DIR *d = opendir(s->dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        long long st;
        if (sscanf(e->d_name, "step-%lld.safetensors", &st) == 1 && (st > step || step == 0)) {
            snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
            unlink(path);
        }
    }
    if (d) closedir(d);
    snprintf(path, sizeof path, "%s/norms.csv", s->dir);
    FILE *in = step > 0 ? fopen(path, "r") : NULL;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *o = fopen(tmp, "w");
    if (!o) { if (in) fclose(in); snprintf(err, ERRLEN, "%.400s: %.200s", tmp, strerror(errno)); return -1; }
    if (in) {
        for (bool header = true; fgets(line, sizeof line, in); header = false) {
            bool whole = strchr(line, '\n') != NULL;
            if (whole && (header || atoll(line) <= step)) fputs(line, o);
        }
        fclose(in);
    }
    if (ftell(o) == 0) fprintf(o, "step,param,weight_norm,grad_norm,update_norm,update_ratio\n");
    if (fclose(o) != 0 || rename(tmp, path) != 0) { snprintf(err, ERRLEN, "%.400s: %.200s", path, strerror(errno)); return -1; }
    s->norms = fopen(path, "a");
    if (!s->norms) { snprintf(err, ERRLEN, "%.400s: %.200s", path, strerror(errno)); return -1; }
    return 0;
}

int run_snapshots_start(trainer *t, const options *o, int64_t total, int64_t unit, char *err) {
    if (o->snapshots <= 0) return 0;
    run_snapshots *s = t->snap = calloc(1, sizeof *s);
    if (!s || choose_moments(s, o, total, unit)) { snprintf(err, ERRLEN, "snapshots: out of memory"); return -1; }
    double t0 = vg_now_s();
    s->total = total; s->before_step = -1; s->started = t0;
    s->norm_every = total / NORM_ROWS > 1 ? total / NORM_ROWS : 1;
    snprintf(s->dir, sizeof s->dir, "%s/snapshots", o->out);
    if (mkdir(s->dir, 0755) && errno != EEXIST) { snprintf(err, ERRLEN, "%.400s: cannot create: %.200s", s->dir, strerror(errno)); return -1; }
    if (trim(s, t->step, err)) return -1;
    int64_t n = 0;
    for (int i = 0; i < t->params.n; i++) n += vg_numel(t->params.items[i].tensor);
    s->before = malloc(sizeof *s->before * (size_t)n);
    if (!s->before) { snprintf(err, ERRLEN, "snapshots: out of memory"); return -1; }
    if (t->step == 0 && is_moment(s, 0) && write_weights(s, t, err)) return -1;
    s->seconds += vg_now_s() - t0;
    return 0;
}

void run_snapshots_before_step(trainer *t) {
    run_snapshots *s = t->snap;
    if (!s || !is_norm_step(s, t->step + 1)) return;
    double t0 = vg_now_s();
    real *p = s->before;
    for (int i = 0; i < t->params.n; i++) {
        const vg_tensor *w = t->params.items[i].tensor;
        memcpy(p, vg_data(w), sizeof *p * (size_t)vg_numel(w));
        p += vg_numel(w);
    }
    s->before_step = t->step + 1;
    s->seconds += vg_now_s() - t0;
}

int run_snapshots_after_step(trainer *t, char *err) {
    run_snapshots *s = t->snap;
    if (!s) return 0;
    double t0 = vg_now_s();
    if (s->before_step == t->step) {
        const real *p = s->before;
        for (int i = 0; i < t->params.n; i++) {
            const vg_tensor *w = t->params.items[i].tensor;
            const int64_t n = vg_numel(w);
            const real *x = vg_data(w), *g = w->grad ? vg_data(w->grad) : NULL;
            double ww = 0, gg = 0, uu = 0;
            for (int64_t k = 0; k < n; k++) {
                ww += (double)x[k] * x[k];
                if (g) gg += (double)g[k] * g[k];
                double u = (double)x[k] - p[k];
                uu += u * u;
            }
            p += n;
            fprintf(s->norms, "%lld,%s,%.6e,%.6e,%.6e,%.6e\n", (long long)t->step, t->params.items[i].name, sqrt(ww), sqrt(gg),
                    sqrt(uu), ww > 0 ? sqrt(uu / ww) : 0.0);
        }
        fflush(s->norms);
        s->before_step = -1;
    }
    if (is_moment(s, t->step) && write_weights(s, t, err)) return -1;
    s->seconds += vg_now_s() - t0;
    if (t->step == s->total)
        printf("snapshots: %d weight files (%.1f MiB) and norms.csv in %s: %.2f s, %.2f%% of this process's time\n", s->files,
               (double)s->bytes / (1 << 20), s->dir, s->seconds, 100 * s->seconds / (vg_now_s() - s->started));
    return 0;
}

void run_snapshots_free(trainer *t) {
    run_snapshots *s = t->snap;
    if (!s) return;
    if (s->norms) fclose(s->norms);
    free(s->moments); free(s->before); free(s);
    t->snap = NULL;
}
