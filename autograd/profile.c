/* profile.c — where a training step's wall-clock time goes, op by op.
 *
 * One clock mark is kept. Between vg_profile_step_begin and vg_profile_step_end every interval
 * since the mark is charged to exactly one row, and the mark moves on:
 *   - an op's forward: the time up to vg_record (ops record their node after computing, so this
 *     is the op's own work plus any unrecorded work since the previous charge, e.g. a copy);
 *   - a backward rule: the time inside it; the engine's work between rules goes to the row
 *     "backward: engine";
 *   - a phase the caller names (vg_profile_phase), e.g. the optimizer;
 *   - "other": what is left when the step ends.
 * So the rows of a step add up to its wall time. Rows are keyed by op name, first input's shape
 * and output shape (the qkv, projection and MLP Linears are different rows). Each row keeps its
 * forward and backward sums and its per-step totals (for the median). Rows are created in the
 * first profiled step; later steps allocate nothing. */
#include "autograd.h"
#include "base/clock.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_ROWS = 128 };

typedef struct {
    const char *name;
    bool is_phase;
    int ndim, in_ndim;
    int64_t shape[VG_MAX_DIMS], in_shape[VG_MAX_DIMS];
    long fwd_calls, bwd_calls;
    double cur_fwd, cur_bwd;        /* this step's seconds */
    double sum_fwd, sum_bwd;        /* seconds over the finished steps */
    double *step_total;             /* fwd + bwd seconds of each finished step */
} row;

static bool on, in_step;
static int n_rows, max_steps, steps_done;
static row rows[MAX_ROWS];
static double mark;


/* The row for an op (n) or a phase (n NULL). When the table is full, new keys share its last row
 * ("more ops"). NULL when out of memory. */
static bool same_shape(int nd, const int64_t *a, int nd2, const int64_t *b) {
    return nd == nd2 && (nd == 0 || memcmp(a, b, sizeof(int64_t) * (size_t)nd) == 0);
}

static row *find_row(const char *name, const vg_node *n) {
    const vg_tensor *out = n ? n->out : NULL, *in = n && n->n_inputs ? n->inputs[0] : NULL;
    const int ndim = out ? out->ndim : 0, in_ndim = in ? in->ndim : 0;
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        if (r->is_phase == !n && strcmp(r->name, name) == 0 && (!n ||
            (same_shape(r->ndim, r->shape, ndim, out->shape) &&
             same_shape(r->in_ndim, r->in_shape, in_ndim, in ? in->shape : NULL))))
            return r;
    }
    if (n_rows >= MAX_ROWS - 1) {
        if (n_rows == MAX_ROWS) return &rows[MAX_ROWS - 1];
        name = "more ops"; n = NULL; out = in = NULL;
    }
    row *r = &rows[n_rows];
    memset(r, 0, sizeof *r);
    r->step_total = calloc((size_t)max_steps, sizeof(double));
    if (!r->step_total) return NULL;
    r->name = name; r->is_phase = !n;
    if (out) { r->ndim = out->ndim; memcpy(r->shape, out->shape, sizeof r->shape); }
    if (in) { r->in_ndim = in->ndim; memcpy(r->in_shape, in->shape, sizeof r->in_shape); }
    n_rows++;
    return r;
}

/* charge the time since the mark to r's forward (or phase) column and move the mark */
static void charge(row *r) {
    const double t = vg_now_s();
    if (r) r->cur_fwd += t - mark;
    mark = t;
}

bool vg_profile_start(int steps) {
    vg_profile_stop();
    if (steps < 1) return false;
    max_steps = steps;
    on = true;
    return true;
}

void vg_profile_stop(void) {
    for (int i = 0; i < n_rows; i++) free(rows[i].step_total);
    n_rows = 0; steps_done = 0; max_steps = 0;
    on = in_step = false;
}

bool vg_profile_active(void) { return on && in_step; }

void vg_profile_step_begin(void) {
    if (!on || steps_done >= max_steps) return;
    in_step = true;
    mark = vg_now_s();
}

void vg_profile_phase(const char *name) {
    if (!on || !in_step) return;
    row *r = find_row(name, NULL);
    if (r) r->fwd_calls++;
    charge(r);
}

void vg_profile_step_end(void) {
    if (!on || !in_step) return;
    row *o = find_row("other", NULL);
    if (o) o->fwd_calls++;
    charge(o);
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        r->step_total[steps_done] = r->cur_fwd + r->cur_bwd;
        r->sum_fwd += r->cur_fwd; r->sum_bwd += r->cur_bwd;
        r->cur_fwd = r->cur_bwd = 0;
    }
    steps_done++;
    in_step = false;
}

/* engine hooks */
void vg_profile_recorded_(const vg_node *n) {
    if (!on || !in_step) return;
    row *r = find_row(n->op, n);
    if (r) r->fwd_calls++;
    charge(r);
}

void vg_profile_rule_begin_(void) {
    if (!on || !in_step) return;
    charge(find_row("backward: engine", NULL));
}

void vg_profile_rule_end_(const vg_node *n) {
    if (!on || !in_step) return;
    const double t = vg_now_s();
    row *r = find_row(n->op, n);
    if (r) { r->cur_bwd += t - mark; r->bwd_calls++; }
    mark = t;
}

/* ---------------------------------------------------------------- results */

int vg_profile_rows(vg_profile_row *out, int max) {
    const int n = steps_done;
    if (n == 0) return 0;
    double *tmp = malloc(sizeof(double) * (size_t)n);
    if (!tmp) return 0;
    int k = 0;
    for (int i = 0; i < n_rows && k < max; i++) {
        const row *r = &rows[i];
        vg_profile_row *o = &out[k++];
        memset(o, 0, sizeof *o);
        o->name = r->name; o->is_phase = r->is_phase;
        o->ndim = r->ndim; memcpy(o->shape, r->shape, sizeof o->shape);
        o->in_ndim = r->in_ndim; memcpy(o->in_shape, r->in_shape, sizeof o->in_shape);
        o->fwd_calls = (double)r->fwd_calls / n; o->bwd_calls = (double)r->bwd_calls / n;
        o->fwd_ms = 1e3 * r->sum_fwd / n; o->bwd_ms = 1e3 * r->sum_bwd / n;
        for (int s = 0; s < n; s++) tmp[s] = 1e3 * r->step_total[s];
        o->median_ms = vg_median(tmp, n);
    }
    free(tmp);
    return k;
}

int vg_profile_steps(void) { return steps_done; }

/* "128x65x192" into buf; returns the length written */
static int shape_str(char *buf, size_t size, int ndim, const int64_t *shape) {
    int p = 0;
    buf[0] = 0;
    if (ndim == 0) return snprintf(buf, size, "()");
    for (int d = 0; d < ndim && (size_t)p + 24 < size; d++)
        p += snprintf(buf + p, size - (size_t)p, d ? "x%lld" : "%lld", (long long)shape[d]);
    return p;
}

static int by_total(const void *a, const void *b) {
    const vg_profile_row *x = a, *y = b;
    const double tx = x->fwd_ms + x->bwd_ms, ty = y->fwd_ms + y->bwd_ms;
    return (tx < ty) - (tx > ty);
}

void vg_profile_report(FILE *f) {
    vg_profile_row *r = malloc(sizeof *r * MAX_ROWS);
    if (!r) return;
    const int n = vg_profile_rows(r, MAX_ROWS);
    double total = 0;
    for (int i = 0; i < n; i++) total += r[i].fwd_ms + r[i].bwd_ms;
    qsort(r, (size_t)n, sizeof *r, by_total);
    fprintf(f, "profile: wall time per step by op (input 0 -> output shapes) and phase, mean of %d steps\n", steps_done);
    fprintf(f, "%-18s %-28s %6s %9s %9s %9s %7s %9s\n", "op / phase", "input 0 -> output", "calls", "fwd ms",
            "bwd ms", "total ms", "share", "median ms");
    for (int i = 0; i < n; i++) {
        char shape[96] = "";
        if (!r[i].is_phase) {
            int p = shape_str(shape, sizeof shape, r[i].in_ndim, r[i].in_shape);
            p += snprintf(shape + p, sizeof shape - (size_t)p, " -> ");
            shape_str(shape + p, sizeof shape - (size_t)p, r[i].ndim, r[i].shape);
        }
        const double t = r[i].fwd_ms + r[i].bwd_ms;
        const double calls = r[i].fwd_calls > r[i].bwd_calls ? r[i].fwd_calls : r[i].bwd_calls;
        char fwd[16] = "", bwd[16] = "";
        if (!r[i].is_phase) {
            snprintf(fwd, sizeof fwd, "%.2f", r[i].fwd_ms);
            snprintf(bwd, sizeof bwd, "%.2f", r[i].bwd_ms);
        }
        fprintf(f, "%-18s %-28s %6.1f %9s %9s %9.2f %6.1f%% %9.2f\n", r[i].name, shape, calls, fwd,
                bwd, t, total > 0 ? 100 * t / total : 0, r[i].median_ms);
    }
    fprintf(f, "%-18s %-28s %6s %9s %9s %9.2f %6.1f%%\n", "all", "", "", "", "", total, 100.0);
    free(r);
}
