/* inspect_plot.c — `./inspect plot --csv metrics.csv --out curves.png`: training curves from the
 * metrics.csv ./train writes (columns step, loss, train_acc, test_loss, test_acc, wall_s; an
 * empty cell = not measured at that row). Four panels: loss and accuracy, against step and
 * against wall-clock time; train in blue (lines), test in orange (lines with dots). Drawn with
 * the built-in canvas and font (png_write.h); no plotting dependency. */
#include "inspect_common.h"
#include "png_write.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int inspect_plot_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect plot --csv METRICS.csv --out CURVES.png\n"
               "  METRICS.csv: written by ./train (header step,epoch,loss,lr,train_acc,test_loss,test_acc,…,wall_s)\n"
               "Draws train/test loss and train/test accuracy against step and against wall time.\n");
}

enum { C_STEP, C_LOSS, C_TRAIN_ACC, C_TEST_LOSS, C_TEST_ACC, C_WALL, N_COLS };
static const char *const col_names[N_COLS] = {"step", "loss", "train_acc", "test_loss", "test_acc", "wall_s"};

typedef struct { const double *y; vg_rgb col; const char *name; bool dots; } series;

/* 1, 2 or 5 × 10^k, about n ticks over [lo, hi] */
static double nice_step(double lo, double hi, int n) {
    double raw = (hi - lo) / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* legend_low: put the legend in the lower right corner (rising curves), else the upper right */
static void panel(vg_canvas *cv, int X, int Y, int W, int H, const char *title, const char *xlabel,
                  const double *x, int n, const series *s, int ns, bool legend_low) {
    const int ml = 52, mr = 12, mt = 22, mb = 34;
    const int px = X + ml, py = Y + mt, pw = W - ml - mr, ph = H - mt - mb;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < ns; k++)
            if (isfinite(s[k].y[i]) && isfinite(x[i])) {
                x0 = fmin(x0, x[i]); x1 = fmax(x1, x[i]); y0 = fmin(y0, s[k].y[i]); y1 = fmax(y1, s[k].y[i]);
            }
    vg_canvas_text(cv, px, Y + 6, title, VG_BLACK, 1);
    vg_canvas_rect(cv, px, py, pw, ph, VG_BLACK);
    if (!isfinite(x0)) { vg_canvas_text(cv, px + 10, py + ph / 2, "NO DATA", VG_GRAY, 1); return; }
    if (x1 == x0) { x0 -= 1; x1 += 1; }
    if (y1 == y0) { y0 -= .5; y1 += .5; }
    double pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
    x0 = fmin(x0, 0); if (x0 < 0 && x[0] >= 0) x0 = 0;
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
        for (int i = 0; i < n; i++) {
            if (!isfinite(s[k].y[i]) || !isfinite(x[i])) continue;
            int gx = px + (int)lround((x[i] - x0) / (x1 - x0) * (pw - 1));
            int gy = py + ph - 1 - (int)lround((s[k].y[i] - y0) / (y1 - y0) * (ph - 1));
            if (lx >= 0) { vg_canvas_line(cv, lx, ly, gx, gy, s[k].col); vg_canvas_line(cv, lx, ly + 1, gx, gy + 1, s[k].col); }
            if (s[k].dots) vg_canvas_fill(cv, gx - 2, gy - 2, 5, 5, s[k].col);
            lx = gx; ly = gy;
        }
    }
    const int lw = 64, lh = 12 * ns + 6, lx = px + pw - lw - 6, ly = legend_low ? py + ph - lh - 6 : py + 6;
    vg_canvas_fill(cv, lx, ly, lw, lh, VG_WHITE);                             /* legend */
    vg_canvas_rect(cv, lx, ly, lw, lh, VG_GRAY);
    for (int k = 0; k < ns; k++) {
        vg_canvas_fill(cv, lx + 6, ly + 8 + 12 * k, 12, 2, s[k].col);
        if (s[k].dots) vg_canvas_fill(cv, lx + 10, ly + 7 + 12 * k, 4, 4, s[k].col);
        vg_canvas_text(cv, lx + 24, ly + 5 + 12 * k, s[k].name, s[k].col, 1);
    }
}

int inspect_plot_main(int argc, char **argv) {
    const char *csv = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if ((r = ic_take("plot", argc, argv, &i, "--csv", &csv))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("plot", argc, argv, &i, "--out", &out))) { if (r < 0) return IC_USAGE; continue; }
        fprintf(stderr, "inspect plot: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    if (!csv || !out) { fprintf(stderr, "inspect plot: --csv and --out are required\n"); usage(stderr); return IC_USAGE; }
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
    int n = 0, cap = 1024;
    double *v[N_COLS];
    for (int c = 0; c < N_COLS; c++) v[c] = malloc(sizeof(double) * cap);
    int lineno = 1, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n' || line[0] == '\r' || !line[0]) continue;
        if (n == cap) { cap *= 2; for (int c = 0; c < N_COLS; c++) v[c] = realloc(v[c], sizeof(double) * cap); }
        for (int c = 0; c < N_COLS; c++) v[c][n] = NAN;
        int col = 0;
        for (char *p = line, *tok; (tok = strsep(&p, ",")); col++) {
            tok[strcspn(tok, "\r\n")] = 0;
            for (int c = 0; c < N_COLS; c++)
                if (idx[c] == col && *tok) {
                    char *end;
                    double x = strtod(tok, &end);
                    if (*end) { fprintf(stderr, "inspect plot: %s:%d: '%s' is not a number (column %s)\n", csv, lineno, tok, col_names[c]); rc = IC_FAIL; }
                    v[c][n] = x;
                }
        }
        if (rc) break;
        n++;
    }
    fclose(f);
    if (!rc && !n) { fprintf(stderr, "inspect plot: %s: no data rows\n", csv); rc = IC_FAIL; }
    if (!rc) {
        vg_canvas *cv = vg_canvas_new(960, 640, VG_WHITE);
        const vg_rgb blue = {31, 119, 180}, orange = {230, 110, 0};
        series loss[2] = {{v[C_LOSS], blue, "TRAIN", false}, {v[C_TEST_LOSS], orange, "TEST", true}};
        series acc[2] = {{v[C_TRAIN_ACC], blue, "TRAIN", false}, {v[C_TEST_ACC], orange, "TEST", true}};
        panel(cv, 0, 0, 480, 320, "LOSS", "STEP", v[C_STEP], n, loss, 2, false);
        panel(cv, 480, 0, 480, 320, "ACCURACY", "STEP", v[C_STEP], n, acc, 2, true);
        panel(cv, 0, 320, 480, 320, "LOSS", "WALL TIME (S)", v[C_WALL], n, loss, 2, false);
        panel(cv, 480, 320, 480, 320, "ACCURACY", "WALL TIME (S)", v[C_WALL], n, acc, 2, true);
        char err[IC_ERRLEN];
        if (vg_canvas_write_png(cv, out, err, sizeof err)) { fprintf(stderr, "inspect plot: %s\n", err); rc = IC_FAIL; }
        else {
            int lt = -1, le = -1;
            for (int i = 0; i < n; i++) { if (isfinite(v[C_LOSS][i])) lt = i; if (isfinite(v[C_TEST_ACC][i])) le = i; }
            printf("%s: %d rows, last step %g", csv, n, v[C_STEP][n - 1]);
            if (lt >= 0) printf(", train loss %.4f", v[C_LOSS][lt]);
            if (le >= 0) printf(", test loss %.4f, test acc %.4f (step %g)", v[C_TEST_LOSS][le], v[C_TEST_ACC][le], v[C_STEP][le]);
            printf("\nwrote %s (960x640)\n", out);
        }
        vg_canvas_free(cv);
    }
    for (int c = 0; c < N_COLS; c++) free(v[c]);
    return rc;
}
