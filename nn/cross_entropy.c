/* cross_entropy.c — softmax cross-entropy from logits with label smoothing, fused with its
 * backward; and top-1 accuracy.
 *
 *   logits x (B, C), labels y[B] ∈ [0, C), smoothing ε:  q = (1 − ε)·onehot(y) + ε/C
 *   per row:   lse = m + log Σ_c exp(x_c − m),  m = max_c x_c       (stable log-sum-exp)
 *              ℓ = −Σ_c q_c (x_c − lse) = lse − (1 − ε)·x_y − (ε/C)·Σ_c x_c
 *   loss = (1/B) Σ_rows ℓ                   (torch.nn.CrossEntropyLoss(label_smoothing=ε))
 *   backward:  dx = g · (softmax(x) − q) / B,  softmax(x)_c = exp(x_c − lse)
 * lse is saved per row; the labels are copied into the arena (the caller's array may go away). */
#include "nn.h"
#include <math.h>
#include <string.h>

typedef struct { int32_t *labels; double *lse; int64_t B, C; double eps; } ce_ctx;

static void cross_entropy_backward(vg_node *n, const vg_tensor *g) {
    const ce_ctx *c = n->ctx;
    const int64_t B = c->B, C = c->C;
    const real *x = vg_data(n->saved[0]);
    const double scale = (double)vg_data(g)[0] / (double)B, off = c->eps / (double)C;
    vg_tensor *dx = vg_empty(VG_DIMS(B, C));
    real *o = vg_data(dx);
    #pragma omp parallel for schedule(static) if (B * C > 16384)
    for (int64_t r = 0; r < B; r++)
        for (int64_t k = 0; k < C; k++) {
            double q = off + (k == c->labels[r] ? 1.0 - c->eps : 0.0);
            o[r * C + k] = (real)(scale * (exp((double)x[r * C + k] - c->lse[r]) - q));
        }
    vg_accumulate_grad_owned(n->inputs[0], dx);
}

vg_tensor *vg_cross_entropy_fn(vg_tensor *logits, const int32_t *labels, double label_smoothing) {
    if (!logits) return NULL;
    char s[96]; vg_shape_str(logits, s, sizeof s);
    if (logits->ndim != 2 || logits->shape[0] < 1 || logits->shape[1] < 1) {
        vg_set_error("cross_entropy: logits %s must be (B, C) with B, C ≥ 1", s); return NULL;
    }
    if (!labels) { vg_set_error("cross_entropy: labels is NULL"); return NULL; }
    if (!(label_smoothing >= 0 && label_smoothing <= 1)) {
        vg_set_error("cross_entropy: label_smoothing %g is not in [0, 1]", label_smoothing); return NULL;
    }
    const int64_t B = logits->shape[0], C = logits->shape[1];
    for (int64_t r = 0; r < B; r++)
        if (labels[r] < 0 || labels[r] >= C) {
            vg_set_error("cross_entropy: label %d at row %lld is out of range [0, %lld) for logits %s",
                         (int)labels[r], (long long)r, (long long)C, s);
            return NULL;
        }
    ce_ctx *c = vg_arena_alloc(sizeof *c);
    c->B = B; c->C = C; c->eps = label_smoothing;
    c->labels = vg_arena_alloc(sizeof(int32_t) * (size_t)B);
    memcpy(c->labels, labels, sizeof(int32_t) * (size_t)B);
    c->lse = vg_arena_alloc(sizeof(double) * (size_t)B);
    double *row_loss = vg_arena_alloc(sizeof(double) * (size_t)B);
    vg_tensor *xc = vg_contiguous_raw(logits);
    const real *x = vg_data(xc);
    #pragma omp parallel for schedule(static) if (B * C > 16384)
    for (int64_t r = 0; r < B; r++) {
        const real *xr = x + r * C;
        double m = -INFINITY, se = 0, sx = 0;
        for (int64_t k = 0; k < C; k++) if ((double)xr[k] > m) m = (double)xr[k];
        for (int64_t k = 0; k < C; k++) { se += exp((double)xr[k] - m); sx += (double)xr[k]; }
        const double lse = m + log(se);
        c->lse[r] = lse;
        row_loss[r] = lse - (1.0 - label_smoothing) * (double)xr[labels[r]] - label_smoothing / (double)C * sx;
    }
    double total = 0;                                /* fixed order: deterministic */
    for (int64_t r = 0; r < B; r++) total += row_loss[r];
    vg_tensor *loss = vg_empty(0, (int64_t[1]){0});
    vg_data(loss)[0] = (real)(total / (double)B);
    if (vg_needs_grad(1, &logits)) {
        vg_node *n = vg_record(loss, "cross_entropy", cross_entropy_backward, 1, &logits);
        n->saved[0] = xc;
        n->scalars[0] = label_smoothing;
        n->ctx = c;
    }
    return loss;
}

/* rows whose first maximum sits at the label (PyTorch argmax picks the first maximum) */
int64_t vg_top1_correct(const vg_tensor *logits, const int32_t *labels) {
    if (!logits || !labels || logits->ndim != 2) return 0;
    const int64_t B = logits->shape[0], C = logits->shape[1];
    vg_tensor *xc = vg_contiguous_raw(logits);
    const real *x = vg_data(xc);
    int64_t correct = 0;
    for (int64_t r = 0; r < B; r++) {
        int64_t best = 0;
        for (int64_t k = 1; k < C; k++) if (x[r * C + k] > x[r * C + best]) best = k;
        correct += best == labels[r];
    }
    return correct;
}
