/* adamw.c — AdamW, one vectorised pass per parameter tensor (OpenMP over elements: each element
 * is updated by exactly one thread, so results do not depend on the thread count). */
#include "optim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tensor/lanes.h"

#ifdef VG_DOUBLE
#define SQRT_REAL sqrt
#else
#define SQRT_REAL sqrtf     /* = (float)sqrt((double)v) bit for bit: sqrt never double-rounds */
#endif

vg_adamw *vg_adamw_new(const vg_params *params, double weight_decay) {
    vg_adamw *o = calloc(1, sizeof *o);
    o->beta1 = 0.9; o->beta2 = 0.999; o->eps = 1e-8; o->weight_decay = weight_decay;
    o->params = params;
    o->exp_avg = calloc((size_t)params->n, sizeof *o->exp_avg);
    o->exp_avg_sq = calloc((size_t)params->n, sizeof *o->exp_avg_sq);
    for (int i = 0; i < params->n; i++) {
        vg_tensor *p = params->items[i].tensor;
        o->exp_avg[i] = vg_persistent_zeros(p->ndim, p->shape);
        o->exp_avg_sq[i] = vg_persistent_zeros(p->ndim, p->shape);
    }
    return o;
}

void vg_adamw_step(vg_adamw *o, double lr) {
    o->step++;
    /* scalars computed in double, as PyTorch does in Python, then used in the element type */
    double bc1 = 1.0 - pow(o->beta1, (double)o->step);
    double bc2_sqrt = sqrt(1.0 - pow(o->beta2, (double)o->step));
    const real bc2_sqrt_r = (real)bc2_sqrt;
    const real b1 = (real)o->beta1, b2 = (real)o->beta2, eps = (real)o->eps;
    const real one_minus_b1 = (real)(1.0 - o->beta1), one_minus_b2 = (real)(1.0 - o->beta2);
    for (int i = 0; i < o->params->n; i++) {
        const vg_param_entry *e = &o->params->items[i];
        vg_tensor *pt = e->tensor;
        if (!pt->grad) continue;                      /* unused parameter: PyTorch skips it too */
        const double lr_i = o->lr_scale ? lr * o->lr_scale[i] : lr;
        if (vg_muon_on(o, i)) { vg_muon_update(o, i, lr_i); continue; }
        const real step_size = (real)(lr_i / bc1);
        real *p = vg_data(pt), *g = vg_data(pt->grad);
        real *m = vg_data(o->exp_avg[i]), *v = vg_data(o->exp_avg_sq[i]);
        const real decay = (real)(1.0 - lr_i * (e->weight_decay ? o->weight_decay : 0.0));
        int64_t n = vg_numel(pt);
        #pragma omp parallel for schedule(static) if (n > 32768)
        for (int64_t k = 0; k < n; k++) {
            p[k] *= decay;
            m[k] = m[k] * b1 + one_minus_b1 * g[k];
            v[k] = v[k] * b2 + one_minus_b2 * g[k] * g[k];
            real denom = SQRT_REAL(v[k]) / bc2_sqrt_r + eps;   /* the rounded sqrt of v, as torch */
            p[k] = p[k] - step_size * (m[k] / denom);
        }
    }
}

void vg_adamw_free(vg_adamw *o) {
    if (!o) return;
    for (int i = 0; i < o->params->n; i++) { vg_tensor_free(o->exp_avg[i]); vg_tensor_free(o->exp_avg_sq[i]); }
    free(o->exp_avg); free(o->exp_avg_sq); free(o->lr_scale); vg_muon_free(o->muon); free(o);
}

void vg_adamw_set_lr_scale(vg_adamw *o, const double *scale) {
    free(o->lr_scale);
    o->lr_scale = NULL;
    if (!scale) return;
    o->lr_scale = malloc(sizeof(double) * (size_t)o->params->n);
    for (int i = 0; i < o->params->n; i++) o->lr_scale[i] = scale[i];
}

double vg_layer_decay_scale(const char *name, int depth, double decay) {
    int layer = depth + 1;                                           /* norm, fc_norm, head */
    if (!strncmp(name, "blocks.", 7)) layer = atoi(name + 7) + 1;
    else if (!strcmp(name, "cls_token") || !strcmp(name, "reg_token") || !strcmp(name, "pos_embed") ||
             !strncmp(name, "patch_embed.", 12)) layer = 0;
    return pow(decay, depth + 1 - layer);
}

double vg_clip_grad_norm(const vg_params *params, double max_norm) {
    double total_sq = 0;
    for (int i = 0; i < params->n; i++) {             /* fixed order: deterministic */
        vg_tensor *g = params->items[i].tensor->grad;
        if (!g) continue;
        total_sq += vg_dot_lanes(vg_data(g), vg_data(g), vg_numel(g));
    }
    double total = sqrt(total_sq);
    if (max_norm > 0) {
        double coef = max_norm / (total + 1e-6);
        if (coef < 1.0) {
            for (int i = 0; i < params->n; i++) {
                vg_tensor *g = params->items[i].tensor->grad;
                if (!g) continue;
                real *gp = vg_data(g);
                for (int64_t k = 0, n = vg_numel(g); k < n; k++) gp[k] *= (real)coef;
            }
        }
    }
    return total;
}

double vg_lr_at(const vg_lr_schedule *s, int64_t step) {
    if (s->warmup_steps > 0 && step < s->warmup_steps)
        return s->base_lr * (double)(step + 1) / (double)s->warmup_steps;
    int64_t decay_steps = s->total_steps - s->warmup_steps;
    if (decay_steps <= 0) return s->base_lr;
    double progress = (double)(step - s->warmup_steps) / (double)decay_steps;
    if (progress > 1) progress = 1;
    return s->min_lr + 0.5 * (s->base_lr - s->min_lr) * (1.0 + cos(3.14159265358979323846 * progress));
}
