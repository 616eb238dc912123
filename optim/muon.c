/* muon.c — Muon (Jordan et al. 2024, as torch.optim.Muon with nesterov) for the parameters chosen
 * by vg_adamw_use_muon; vg_adamw_step calls vg_muon_update for them and AdamW for the rest.
 *
 *   B ← μB + (1 − μ)g          (torch: buf.lerp_(grad, 1 − μ))
 *   U = g + μ(B − g)           (nesterov: grad.lerp(buf, μ))
 *   O = NS₅(U)                 Newton–Schulz, below
 *   θ ← θ·(1 − lr·wd) − lr'·O  lr' = lr·√max(1, rows/cols)   ("original", Keller Jordan's)
 *                              lr' = 0.2·lr·√max(rows, cols)  ("match_rms_adamw", Moonshot's:
 *                              O's RMS becomes AdamW's typical 0.2, so AdamW's lr and wd carry over)
 *
 * NS₅ orthogonalises U: X = U / max(‖U‖_F, 1e-7), transposed so that rows ≤ cols (X Xᵀ is the
 * smaller Gram matrix), then five times  A = X Xᵀ;  X ← aX + (bA + cA²)X  with (a, b, c) =
 * (3.4445, −4.7750, 2.0315): the singular values of X go to ~[0.7, 1.2] (not exactly 1: the
 * quintic is tuned for slope at 0), the singular vectors stay U's. In FP32 here; torch runs it in
 * bf16. Per matrix r×c (r ≤ c) one step costs 5·(4r²c + 2r³) FLOPs (vg_muon_flops).
 *
 * The momentum buffer B is the parameter's exp_avg (its exp_avg_sq stays 0), so a checkpoint's
 * layout is the same with or without Muon; as with every hyperparameter, resuming takes --muon
 * from the command line. Deterministic: vg_gemm sums in a fixed order for a thread count, and the
 * element-wise loops here run on one thread. */
#include "optim.h"
#include "gemm/gemm.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { NS_STEPS = 5 };
static const double NS_A = 3.4445, NS_B = -4.7750, NS_C = 2.0315, NS_EPS = 1e-7;

struct vg_muon {
    bool *on;                    /* per parameter */
    double lr_ratio, momentum;
    vg_muon_adjust adjust;
    real *x, *y, *a, *b;         /* scratch for the largest matrix: r·c, r·c, r², r² */
};

static void dims(const vg_tensor *p, int64_t *r, int64_t *c) {
    *r = p->shape[0] < p->shape[1] ? p->shape[0] : p->shape[1];
    *c = p->shape[0] < p->shape[1] ? p->shape[1] : p->shape[0];
}

bool vg_adamw_use_muon(vg_adamw *o, const bool *which, double lr_ratio, double momentum, vg_muon_adjust adjust) {
    int64_t rc = 0, rr = 0;
    for (int i = 0; i < o->params->n; i++) {
        if (!which[i]) continue;
        const vg_tensor *p = o->params->items[i].tensor;
        if (p->ndim != 2) {
            vg_set_error("muon: %s is %d-d; Muon takes 2-d weights only", o->params->items[i].name, p->ndim);
            return false;
        }
        int64_t r, c;
        dims(p, &r, &c);
        if (r * c > rc) rc = r * c;
        if (r * r > rr) rr = r * r;
    }
    const size_t np = o->params->n > 0 ? (size_t)o->params->n : 1;
    vg_muon *m = calloc(1, sizeof *m);
    m->on = calloc(np, sizeof(bool));
    for (int i = 0; i < o->params->n; i++) m->on[i] = which[i];
    m->lr_ratio = lr_ratio; m->momentum = momentum; m->adjust = adjust;
    m->x = malloc(sizeof(real) * (size_t)(rc ? rc : 1)); m->y = malloc(sizeof(real) * (size_t)(rc ? rc : 1));
    m->a = malloc(sizeof(real) * (size_t)(rr ? rr : 1)); m->b = malloc(sizeof(real) * (size_t)(rr ? rr : 1));
    vg_muon_free(o->muon);
    o->muon = m;
    return true;
}

void vg_muon_free(vg_muon *m) {
    if (!m) return;
    free(m->on); free(m->x); free(m->y); free(m->a); free(m->b); free(m);
}

bool vg_muon_on(const vg_adamw *o, int i) { return o->muon && o->muon->on[i]; }

double vg_muon_flops(const vg_adamw *o) {
    double f = 0;
    for (int i = 0; o->muon && i < o->params->n; i++) {
        if (!o->muon->on[i]) continue;
        int64_t r, c;
        dims(o->params->items[i].tensor, &r, &c);
        f += NS_STEPS * (4.0 * (double)r * (double)r * (double)c + 2.0 * (double)r * (double)r * (double)r);
    }
    return f;
}

/* out (rows × cols) = NS₅(u); x, y scratch of rows·cols, a, b of min(rows, cols)² */
static void orthogonalize(const real *u, int64_t rows, int64_t cols, real *out, real *x, real *y, real *a, real *b) {
    const bool tr = rows > cols;
    const int r = (int)(tr ? cols : rows), c = (int)(tr ? rows : cols);
    double ss = 0;
    for (int64_t k = 0; k < rows * cols; k++) ss += (double)u[k] * (double)u[k];
    const double norm = sqrt(ss);
    const real inv = (real)(1.0 / (norm > NS_EPS ? norm : NS_EPS));
    for (int i = 0; i < r; i++)                     /* X (r × c): u, or uᵀ */
        for (int j = 0; j < c; j++) x[(int64_t)i * c + j] = (tr ? u[(int64_t)j * cols + i] : u[(int64_t)i * c + j]) * inv;
    for (int s = 0; s < NS_STEPS; s++) {
        vg_gemm(0, 1, r, r, c, 1, x, c, x, c, 0, a, r);                 /* A = X Xᵀ */
        vg_gemm(0, 0, r, r, r, (real)NS_C, a, r, a, r, 0, b, r);        /* B = cA² */
        for (int64_t k = 0; k < (int64_t)r * r; k++) b[k] += (real)NS_B * a[k];   /* + bA */
        for (int64_t k = 0; k < (int64_t)r * c; k++) y[k] = (real)NS_A * x[k];    /* aX */
        vg_gemm(0, 0, r, c, r, 1, b, r, x, c, 1, y, c);                 /* + B X */
        real *t = x; x = y; y = t;
    }
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++) {
            if (tr) out[(int64_t)j * cols + i] = x[(int64_t)i * c + j];
            else out[(int64_t)i * c + j] = x[(int64_t)i * c + j];
        }
}

void vg_muon_orthogonalize(const real *u, int64_t rows, int64_t cols, real *out) {
    const int64_t r = rows < cols ? rows : cols;
    real *x = malloc(sizeof(real) * (size_t)(rows * cols)), *y = malloc(sizeof(real) * (size_t)(rows * cols));
    real *a = malloc(sizeof(real) * (size_t)(r * r)), *b = malloc(sizeof(real) * (size_t)(r * r));
    orthogonalize(u, rows, cols, out, x, y, a, b);
    free(x); free(y); free(a); free(b);
}

void vg_muon_update(vg_adamw *o, int i, double lr) {
    vg_muon *m = o->muon;
    lr *= m->lr_ratio;                               /* --muon-lr / --lr: Muon's lr on the same schedule */
    const vg_param_entry *e = &o->params->items[i];
    vg_tensor *pt = e->tensor;
    const int64_t rows = pt->shape[0], cols = pt->shape[1], n = rows * cols;
    real *p = vg_data(pt), *g = vg_data(pt->grad), *buf = vg_data(o->exp_avg[i]);
    real *u = vg_data(o->exp_avg_sq[i]);            /* borrowed as the update's scratch, zeroed after */
    const real mu = (real)m->momentum, one_minus_mu = (real)(1.0 - m->momentum);
    for (int64_t k = 0; k < n; k++) {
        buf[k] += one_minus_mu * (g[k] - buf[k]);   /* torch's lerp_(grad, 1 − μ) */
        u[k] = g[k] + mu * (buf[k] - g[k]);          /* grad.lerp(buf, μ) */
    }
    int64_t r, c;
    dims(pt, &r, &c);
    orthogonalize(u, rows, cols, u, m->x, m->y, m->a, m->b);      /* u is read once, first: O can go there */
    const double adj = m->adjust == VG_MUON_MATCH_RMS_ADAMW ? 0.2 * sqrt((double)c)
                                                            : sqrt(rows > cols ? (double)rows / (double)cols : 1.0);
    const real decay = (real)(1.0 - lr * (e->weight_decay ? o->weight_decay : 0.0)), step = (real)(lr * adj);
    for (int64_t k = 0; k < n; k++) {
        p[k] *= decay;
        p[k] -= step * u[k];
        u[k] = 0;
    }
}
