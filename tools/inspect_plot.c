/* inspect_plot.c — `./inspect plot --csv metrics.csv --out curves.png`: training curves from the
 * metrics.csv ./train writes (columns step, loss, train_acc, test_loss, test_acc, wall_s; an
 * empty cell = not measured at that row). Four panels: loss and accuracy, against step and
 * against wall-clock time; train in blue (lines), test in orange (lines with dots).
 * With several --csv (up to MAX_RUNS, each optionally followed by --label NAME) the runs are
 * compared side by side, one colour per run: train loss, test accuracy and test loss against
 * step, test accuracy against wall time. Drawn with the built-in canvas and font (png_write.h);
 * no plotting dependency. */
#include "inspect_common.h"
#include "png_write.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int inspect_plot_main(int argc, char **argv);

enum { MAX_RUNS = 6 };

static void usage(FILE *f) {
    fprintf(f, "usage: inspect plot --csv METRICS.csv [--label NAME] [--csv METRICS.csv [--label NAME] …] --out CURVES.png\n"
               "  METRICS.csv: written by ./train (header step,epoch,loss,lr,train_acc,test_loss,test_acc,…,wall_s)\n"
               "One run: train/test loss and train/test accuracy against step and against wall time.\n"
               "2 to %d runs: compared, one colour each: train loss, test accuracy, test loss against step,\n"
               "test accuracy against wall time. NAME (default: the CSV's directory) labels the run before it.\n",
               MAX_RUNS);
}

enum { C_STEP, C_LOSS, C_TRAIN_ACC, C_TEST_LOSS, C_TEST_ACC, C_WALL, N_COLS };
static const char *const col_names[N_COLS] = {"step", "loss", "train_acc", "test_loss", "test_acc", "wall_s"};

/* one curve: points (x[i], y[i]) for i < n, NaN = no point */
typedef struct { const double *x, *y; int n; vg_rgb col; const char *name; bool dots; } series;

/* the columns of one metrics.csv, n rows */
enum { MAX_LABEL = 32 };   /* characters of a legend entry: 32 of them fill half a panel */
typedef struct { const char *path; char label[MAX_LABEL + 1]; double *v[N_COLS]; int n; } run_metrics;

/* 1, 2 or 5 × 10^k, about n ticks over [lo, hi] */
static double nice_step(double lo, double hi, int n) {
    double raw = (hi - lo) / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* legend_low: put the legend in the lower right corner (rising curves), else the upper right */
static void panel(vg_canvas *cv, int X, int Y, int W, int H, const char *title, const char *xlabel,
                  const series *s, int ns, bool legend_low) {
    const int ml = 52, mr = 12, mt = 22, mb = 34;
    const int px = X + ml, py = Y + mt, pw = W - ml - mr, ph = H - mt - mb;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    bool x_from_zero = true;                                   /* no series starts at a negative x */
    for (int k = 0; k < ns; k++) {
        if (s[k].n > 0 && s[k].x[0] < 0) x_from_zero = false;
        for (int i = 0; i < s[k].n; i++)
            if (isfinite(s[k].y[i]) && isfinite(s[k].x[i])) {
                x0 = fmin(x0, s[k].x[i]); x1 = fmax(x1, s[k].x[i]); y0 = fmin(y0, s[k].y[i]); y1 = fmax(y1, s[k].y[i]);
            }
    }
    vg_canvas_text(cv, px, Y + 6, title, VG_BLACK, 1);
    vg_canvas_rect(cv, px, py, pw, ph, VG_BLACK);
    if (!isfinite(x0)) { vg_canvas_text(cv, px + 10, py + ph / 2, "NO DATA", VG_GRAY, 1); return; }
    if (x1 == x0) { x0 -= 1; x1 += 1; }
    if (y1 == y0) { y0 -= .5; y1 += .5; }
    double pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
    x0 = fmin(x0, 0); if (x0 < 0 && x_from_zero) x0 = 0;
    char lab[32];
    double st = nice_step(x0, x1, 6);                          /* x ticks and vertical grid */
    for (double t = ceil(x0 / st) * st; t <= x1 + 1e-9 * st; t += st) {
        int gx = px + (int)lround((t - x0) / (x1 - x0) * (pw - 1));
        for (int yy = py + 1; yy < py + ph - 1; yy += 3) vg_canvas_set(cv, gx, yy, (vg_rgb){210, 210, 210});
        vg_canvas_fill(cv, gx, py + ph, 1, 4, VG_BLACK);
        snprintf(lab, sizeof lab, "%g", fabs(t) < 1e-9 * st ? 0.0 : t);
        vg_canvas_text(cv, gx - vg_text_width(lab, 1) / 2, py + ph + 7, lab, VG_BLACK, 1);
    }
    st = nice_step(y0, y1, 5);                                 /* y ticks and horizontal grid */
    for (double t = ceil(y0 / st) * st; t <= y1 + 1e-9 * st; t += st) {
        int gy = py + ph - 1 - (int)lround((t - y0) / (y1 - y0) * (ph - 1));
        for (int xx = px + 1; xx < px + pw - 1; xx += 3) vg_canvas_set(cv, xx, gy, (vg_rgb){210, 210, 210});
        vg_canvas_fill(cv, px - 4, gy, 4, 1, VG_BLACK);
        snprintf(lab, sizeof lab, "%g", fabs(t) < 1e-9 * st ? 0.0 : t);
        vg_canvas_text(cv, px - 7 - vg_text_width(lab, 1), gy - 3, lab, VG_BLACK, 1);
    }
    vg_canvas_text(cv, px + pw / 2 - vg_text_width(xlabel, 1) / 2, py + ph + 20, xlabel, VG_BLACK, 1);
    for (int k = 0; k < ns; k++) {
        int lx = -1, ly = -1;
        const double *x = s[k].x;
        for (int i = 0; i < s[k].n; i++) {
            if (!isfinite(s[k].y[i]) || !isfinite(x[i])) continue;
            int gx = px + (int)lround((x[i] - x0) / (x1 - x0) * (pw - 1));
            int gy = py + ph - 1 - (int)lround((s[k].y[i] - y0) / (y1 - y0) * (ph - 1));
            if (lx >= 0) { vg_canvas_line(cv, lx, ly, gx, gy, s[k].col); vg_canvas_line(cv, lx, ly + 1, gx, gy + 1, s[k].col); }
            if (s[k].dots) vg_canvas_fill(cv, gx - 2, gy - 2, 5, 5, s[k].col);
            lx = gx; ly = gy;
        }
    }
    int tw = 0;
    for (int k = 0; k < ns; k++) tw = tw > vg_text_width(s[k].name, 1) ? tw : vg_text_width(s[k].name, 1);
    const int lw = 30 + tw, lh = 12 * ns + 6, lx = px + pw - lw - 6, ly = legend_low ? py + ph - lh - 6 : py + 6;
    vg_canvas_fill(cv, lx, ly, lw, lh, VG_WHITE);                             /* legend */
    vg_canvas_rect(cv, lx, ly, lw, lh, VG_GRAY);
    for (int k = 0; k < ns; k++) {
        vg_canvas_fill(cv, lx + 6, ly + 8 + 12 * k, 12, 2, s[k].col);
        if (s[k].dots) vg_canvas_fill(cv, lx + 10, ly + 7 + 12 * k, 4, 4, s[k].col);
        vg_canvas_text(cv, lx + 24, ly + 5 + 12 * k, s[k].name, s[k].col, 1);
    }
}

/* Read one ./train metrics.csv into m (m->path set). Returns 0, or IC_FAIL with a message naming
 * the file (and line) printed; m->v is to be freed either way. */
static int read_metrics(run_metrics *m) {
    const char *csv = m->path;
    for (int c = 0; c < N_COLS; c++) m->v[c] = NULL;
    m->n = 0;
    FILE *f = fopen(csv, "r");
    if (!f) { fprintf(stderr, "inspect plot: %s: %s\n", csv, strerror(errno)); return IC_FAIL; }
    char line[4096];
    int idx[N_COLS];
    for (int c = 0; c < N_COLS; c++) idx[c] = -1;
    if (!fgets(line, sizeof line, f)) { fprintf(stderr, "inspect plot: %s: empty file\n", csv); fclose(f); return IC_FAIL; }
    {
        int col = 0;
        for (char *p = line, *tok; (tok = strsep(&p, ",\r\n")); col++)
            for (int c = 0; c < N_COLS; c++) if (!strcmp(tok, col_names[c])) idx[c] = col;
    }
    if (idx[C_STEP] < 0 || (idx[C_LOSS] < 0 && idx[C_TEST_LOSS] < 0)) {
        fprintf(stderr, "inspect plot: %s: header has no 'step' and 'loss' columns (not a ./train metrics.csv?)\n", csv);
        fclose(f); return IC_FAIL;
    }
    int cap = 0, lineno = 1, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n' || line[0] == '\r' || !line[0]) continue;
        if (m->n == cap) {
            cap = cap ? 2 * cap : 1024;
            for (int c = 0; c < N_COLS && !rc; c++) {
                double *nv = realloc(m->v[c], sizeof(double) * (size_t)cap);
                if (nv) m->v[c] = nv;
                else { fprintf(stderr, "inspect plot: %s:%d: out of memory\n", csv, lineno); rc = IC_FAIL; }
            }
            if (rc) break;
        }
        for (int c = 0; c < N_COLS; c++) m->v[c][m->n] = NAN;
        int col = 0;
        for (char *p = line, *tok; (tok = strsep(&p, ",")); col++) {
            tok[strcspn(tok, "\r\n")] = 0;
            for (int c = 0; c < N_COLS; c++)
                if (idx[c] == col && *tok) {
                    char *end;
                    double x = strtod(tok, &end);
                    if (*end) { fprintf(stderr, "inspect plot: %s:%d: '%s' is not a number (column %s)\n", csv, lineno, tok, col_names[c]); rc = IC_FAIL; }
                    m->v[c][m->n] = x;
                }
        }
        if (!rc) m->n++;
    }
    fclose(f);
    if (!rc && !m->n) { fprintf(stderr, "inspect plot: %s: no data rows\n", csv); rc = IC_FAIL; }
    return rc;
}

/* the default label of a run: the directory its CSV is in ("runs/cifar10/metrics.csv" →
 * "cifar10"), else "RUN k" */
static void default_label(run_metrics *m, int k) {
    const char *e = strrchr(m->path, '/'), *b = e;
    while (b && b > m->path && b[-1] != '/') b--;
    if (e && e > b) snprintf(m->label, sizeof m->label, "%.*s", (int)(e - b), b);   /* cut at MAX_LABEL */
    else snprintf(m->label, sizeof m->label, "RUN %d", k + 1);
}

static void print_summary(const run_metrics *m) {
    int lt = -1, le = -1;
    for (int i = 0; i < m->n; i++) { if (isfinite(m->v[C_LOSS][i])) lt = i; if (isfinite(m->v[C_TEST_ACC][i])) le = i; }
    printf("%s: %d rows, last step %g", m->path, m->n, m->v[C_STEP][m->n - 1]);
    if (lt >= 0) printf(", train loss %.4f", m->v[C_LOSS][lt]);
    if (le >= 0) printf(", test loss %.4f, test acc %.4f (step %g)", m->v[C_TEST_LOSS][le], m->v[C_TEST_ACC][le], m->v[C_STEP][le]);
    printf("\n");
}

/* one run: train (blue) and test (orange) loss and accuracy, against step (top) and wall time */
static void draw_one(vg_canvas *cv, const run_metrics *m) {
    const vg_rgb blue = {31, 119, 180}, orange = {230, 110, 0};
    double *const *v = m->v;
    for (int w = 0; w < 2; w++) {
        const double *x = v[w ? C_WALL : C_STEP];
        const char *xl = w ? "WALL TIME (S)" : "STEP";
        series loss[2] = {{x, v[C_LOSS], m->n, blue, "TRAIN", false}, {x, v[C_TEST_LOSS], m->n, orange, "TEST", true}};
        series acc[2] = {{x, v[C_TRAIN_ACC], m->n, blue, "TRAIN", false}, {x, v[C_TEST_ACC], m->n, orange, "TEST", true}};
        panel(cv, 0, 320 * w, 480, 320, "LOSS", xl, loss, 2, false);
        panel(cv, 480, 320 * w, 480, 320, "ACCURACY", xl, acc, 2, true);
    }
}

/* several runs, one colour each */
static void draw_compare(vg_canvas *cv, const run_metrics *r, int nr) {
    static const vg_rgb cols[MAX_RUNS] = {{31, 119, 180}, {230, 110, 0}, {44, 160, 44},
                                          {214, 39, 40},  {148, 103, 189}, {140, 86, 75}};
    series s[4][MAX_RUNS];
    for (int k = 0; k < nr; k++) {
        double *const *v = r[k].v;
        s[0][k] = (series){v[C_STEP], v[C_LOSS], r[k].n, cols[k], r[k].label, false};
        s[1][k] = (series){v[C_STEP], v[C_TEST_ACC], r[k].n, cols[k], r[k].label, true};
        s[2][k] = (series){v[C_STEP], v[C_TEST_LOSS], r[k].n, cols[k], r[k].label, true};
        s[3][k] = (series){v[C_WALL], v[C_TEST_ACC], r[k].n, cols[k], r[k].label, true};
    }
    panel(cv, 0, 0, 480, 320, "TRAIN LOSS", "STEP", s[0], nr, false);
    panel(cv, 480, 0, 480, 320, "TEST ACCURACY", "STEP", s[1], nr, true);
    panel(cv, 0, 320, 480, 320, "TEST LOSS", "STEP", s[2], nr, false);
    panel(cv, 480, 320, 480, 320, "TEST ACCURACY", "WALL TIME (S)", s[3], nr, true);
}

int inspect_plot_main(int argc, char **argv) {
    const char *out = NULL;
    run_metrics runs[MAX_RUNS];
    bool labelled[MAX_RUNS] = {false};
    int nr = 0;
    for (int i = 1; i < argc; i++) {
        int r;
        const char *val;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if ((r = ic_take("plot", argc, argv, &i, "--csv", &val))) {
            if (r < 0) return IC_USAGE;
            if (nr == MAX_RUNS) { fprintf(stderr, "inspect plot: at most %d --csv\n", MAX_RUNS); return IC_USAGE; }
            runs[nr++].path = val;
            continue;
        }
        if ((r = ic_take("plot", argc, argv, &i, "--label", &val))) {
            if (r < 0) return IC_USAGE;
            if (!nr || labelled[nr - 1]) { fprintf(stderr, "inspect plot: --label names the --csv before it (one label each)\n"); return IC_USAGE; }
            if (strlen(val) > MAX_LABEL) { fprintf(stderr, "inspect plot: --label '%s': at most %d characters\n", val, MAX_LABEL); return IC_USAGE; }
            snprintf(runs[nr - 1].label, sizeof runs[nr - 1].label, "%s", val);
            labelled[nr - 1] = true;
            continue;
        }
        if ((r = ic_take("plot", argc, argv, &i, "--out", &out))) { if (r < 0) return IC_USAGE; continue; }
        fprintf(stderr, "inspect plot: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    if (!nr || !out) { fprintf(stderr, "inspect plot: --csv and --out are required\n"); usage(stderr); return IC_USAGE; }

    int rc = 0, nread = 0;
    while (nread < nr && !rc) {
        if (!labelled[nread]) default_label(&runs[nread], nread);
        rc = read_metrics(&runs[nread++]);
    }
    if (!rc) {
        vg_canvas *cv = vg_canvas_new(960, 640, VG_WHITE);
        if (nr == 1) draw_one(cv, &runs[0]);
        else draw_compare(cv, runs, nr);
        char err[IC_ERRLEN];
        if (vg_canvas_write_png(cv, out, err, sizeof err)) { fprintf(stderr, "inspect plot: %s\n", err); rc = IC_FAIL; }
        else {
            for (int k = 0; k < nr; k++) {
                if (nr > 1) printf("[%s] ", runs[k].label);
                print_summary(&runs[k]);
            }
            printf("wrote %s (960x640)\n", out);
        }
        vg_canvas_free(cv);
    }
    for (int k = 0; k < nread; k++)
        for (int c = 0; c < N_COLS; c++) free(runs[k].v[c]);
    return rc;
}
