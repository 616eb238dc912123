/* cross_entropy.c — softmax cross-entropy from logits: hard labels with label smoothing, and soft
 * targets (Mixup/CutMix); each fused with its backward. And top-1 accuracy.
 *
 *   logits x (B, C); per row lse = m + log Σ_c exp(x_c − m), m = max_c x_c   (stable log-sum-exp)
 *   hard labels y[B] ∈ [0, C), smoothing ε:  q = (1 − ε)·onehot(y) + ε/C
 *              ℓ = −Σ_c q_c (x_c − lse) = lse − (1 − ε)·x_y − (ε/C)·Σ_c x_c
 *              (torch.nn.CrossEntropyLoss(label_smoothing=ε))
 *   soft targets t (B, C) (timm's SoftTargetCrossEntropy):
 *              ℓ = −Σ_c t_c (x_c − lse) = (Σ_c t_c)·lse − Σ_c t_c x_c
 *   loss = (1/B) Σ_rows ℓ
 *   backward:  dx_c = g · (softmax(x)_c · Σ_k q_k − q_c) / B,  softmax(x)_c = exp(x_c − lse)
 *              (Σ_k q_k = 1 for smoothed one-hot rows and for mixed targets; kept general for t)
 * lse is saved per row; labels / targets are copied into the arena (the caller's array may go away). */
#include "nn.h"
#include <math.h>
#include <string.h>

/* labels != NULL: hard labels with smoothing eps; else soft targets (B, C) */
typedef struct { int32_t *labels; real *targets; double *lse; int64_t B, C; double eps; } ce_ctx;

/* q_k of row r (the target distribution) */
static inline double target_at(const ce_ctx *c, int64_t r, int64_t k) {
    if (!c->labels) return (double)c->targets[r * c->C + k];
    return c->eps / (double)c->C + (k == c->labels[r] ? 1.0 - c->eps : 0.0);
}

static void cross_entropy_backward(vg_node *n, const vg_tensor *g) {
    const ce_ctx *c = n->ctx;
    const int64_t B = c->B, C = c->C;
    const real *x = vg_data(n->saved[0]);
    const double scale = (double)vg_data(g)[0] / (double)B;
    vg_tensor *dx = vg_empty(VG_DIMS(B, C));
    real *o = vg_data(dx);
    #pragma omp parallel for schedule(static) if (B * C > 16384)
    for (int64_t r = 0; r < B; r++) {
        double mass = 1.0;             /* smoothed one-hot rows: (1 − ε) + C·ε/C, taken as exactly 1 */
        if (!c->labels) { mass = 0; for (int64_t k = 0; k < C; k++) mass += (double)c->targets[r * C + k]; }
        for (int64_t k = 0; k < C; k++)
            o[r * C + k] = (real)(scale * (exp((double)x[r * C + k] - c->lse[r]) * mass - target_at(c, r, k)));
    }
    vg_accumulate_grad_owned(n->inputs[0], dx);
}

/* the forward both entry points share: c has labels or targets set; returns the loss */
static vg_tensor *cross_entropy(vg_tensor *logits, ce_ctx *c) {
    const int64_t B = c->B, C = c->C;
    c->lse = vg_arena_alloc(sizeof(double) * (size_t)B);
    double *row_loss = vg_arena_alloc(sizeof(double) * (size_t)B);
    vg_tensor *xc = vg_contiguous_raw(logits);
    const real *x = vg_data(xc);
    #pragma omp parallel for schedule(static) if (B * C > 16384)
    for (int64_t r = 0; r < B; r++) {
        const real *xr = x + r * C;
        double m = -INFINITY, se = 0, sx = 0, mass = 0;
        for (int64_t k = 0; k < C; k++) if ((double)xr[k] > m) m = (double)xr[k];
        for (int64_t k = 0; k < C; k++) se += exp((double)xr[k] - m);
        const double lse = m + log(se);
        c->lse[r] = lse;
        if (c->labels) {
            for (int64_t k = 0; k < C; k++) sx += (double)xr[k];
            row_loss[r] = lse - (1.0 - c->eps) * (double)xr[c->labels[r]] - c->eps / (double)C * sx;
        } else {
            const real *t = c->targets + r * C;
            for (int64_t k = 0; k < C; k++) { sx += (double)t[k] * (double)xr[k]; mass += (double)t[k]; }
            row_loss[r] = mass * lse - sx;
        }
    }
    double total = 0;                                /* fixed order: deterministic */
    for (int64_t r = 0; r < B; r++) total += row_loss[r];
    vg_tensor *loss = vg_empty(0, (int64_t[1]){0});
    vg_data(loss)[0] = (real)(total / (double)B);
    if (vg_needs_grad(1, &logits)) {
        vg_node *n = vg_record(loss, c->labels ? "cross_entropy" : "soft_target_cross_entropy",
                               cross_entropy_backward, 1, &logits);
        n->saved[0] = xc;
        n->scalars[0] = c->eps;
        n->ctx = c;
    }
    return loss;
}

/* logits must be (B, C) with B, C ≥ 1; s receives its shape for messages */
static bool check_logits(const char *op, const vg_tensor *logits, char *s, size_t n) {
    vg_shape_str(logits, s, n);
    if (logits->ndim != 2 || logits->shape[0] < 1 || logits->shape[1] < 1) {
        vg_set_error("%s: logits %s must be (B, C) with B, C ≥ 1", op, s); return false;
    }
    return true;
}

vg_tensor *vg_cross_entropy_fn(vg_tensor *logits, const int32_t *labels, double label_smoothing) {
    if (!logits) return NULL;
    char s[96];
    if (!check_logits("cross_entropy", logits, s, sizeof s)) return NULL;
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
    memset(c, 0, sizeof *c);
    c->B = B; c->C = C; c->eps = label_smoothing;
    c->labels = vg_arena_alloc(sizeof(int32_t) * (size_t)B);
    memcpy(c->labels, labels, sizeof(int32_t) * (size_t)B);
    return cross_entropy(logits, c);
}

vg_tensor *vg_soft_cross_entropy_fn(vg_tensor *logits, const real *targets) {
    if (!logits) return NULL;
    char s[96];
    if (!check_logits("soft_target_cross_entropy", logits, s, sizeof s)) return NULL;
    if (!targets) { vg_set_error("soft_target_cross_entropy: targets is NULL"); return NULL; }
    const int64_t B = logits->shape[0], C = logits->shape[1];
    for (int64_t i = 0; i < B * C; i++)
        if (!isfinite((double)targets[i])) {
            vg_set_error("soft_target_cross_entropy: target (%lld, %lld) is %g for logits %s",
                         (long long)(i / C), (long long)(i % C), (double)targets[i], s);
            return NULL;
        }
    ce_ctx *c = vg_arena_alloc(sizeof *c);
    memset(c, 0, sizeof *c);
    c->B = B; c->C = C;
    c->targets = vg_arena_alloc(sizeof(real) * (size_t)(B * C));
    memcpy(c->targets, targets, sizeof(real) * (size_t)(B * C));
    return cross_entropy(logits, c);
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
