/* params.c — the named parameter list and the seeded init helpers (PyTorch / timm conventions).
 *
 * A vg_params is a growable array of (dotted name, tensor, weight_decay). Modules register their
 * tensors with vg_*_params(m, list, "blocks.0.attn"); the optimizer, checkpointing and zero_grad
 * walk the list. Init helpers fill a tensor in row-major order from a vg_rng, so the same seed
 * gives the same model on any machine and any thread count. */
#include "nn.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ parameter list */
/* weight_decay is forced off for 1-D (and 0-D) tensors: biases and norm scales never decay. */
void vg_params_add(vg_params *p, const char *prefix, const char *name, vg_tensor *t, bool weight_decay) {
    if (!p || !t) return;
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        vg_param_entry *items = realloc(p->items, sizeof *items * (size_t)cap);
        if (!items) { fprintf(stderr, "vitgrad: out of memory\n"); abort(); }
        p->items = items; p->cap = cap;
    }
    vg_param_entry *e = &p->items[p->n++];
    if (prefix && prefix[0]) snprintf(e->name, sizeof e->name, "%s.%s", prefix, name);
    else snprintf(e->name, sizeof e->name, "%s", name);
    e->tensor = t;
    e->weight_decay = weight_decay && t->ndim >= 2;
}

vg_tensor *vg_params_find(const vg_params *p, const char *name) {
    for (int i = 0; p && i < p->n; i++)
        if (!strcmp(p->items[i].name, name)) return p->items[i].tensor;
    return NULL;
}

int64_t vg_params_count(const vg_params *p) {
    int64_t n = 0;
    for (int i = 0; p && i < p->n; i++) n += vg_numel(p->items[i].tensor);
    return n;
}

void vg_params_zero_grad(const vg_params *p) {
    for (int i = 0; p && i < p->n; i++) vg_zero_grad(p->items[i].tensor);
}

void vg_params_free(vg_params *p) {
    if (!p) return;
    free(p->items);
    p->items = NULL; p->n = p->cap = 0;
}

/* ------------------------------------------------------------------ init */
/* Write v = draw(…) into every element of t, row-major order (any strides). */
#define FILL_ROW_MAJOR(t, EXPR)                                                           \
    do {                                                                                  \
        int64_t idx_[VG_MAX_DIMS] = {0}, n_ = vg_numel(t);                                \
        for (int64_t e_ = 0; e_ < n_; e_++) {                                             \
            int64_t off_ = (t)->offset;                                                   \
            for (int d_ = 0; d_ < (t)->ndim; d_++) off_ += idx_[d_] * (t)->strides[d_];   \
            (t)->storage->data[off_] = (real)(EXPR);                                      \
            for (int d_ = (t)->ndim - 1; d_ >= 0; d_--) {                                 \
                if (++idx_[d_] < (t)->shape[d_]) break;                                   \
                idx_[d_] = 0;                                                             \
            }                                                                             \
        }                                                                                 \
    } while (0)

/* timm trunc_normal_(t, std=std, a=-2, b=2): the bounds are absolute values, not multiples of std */
void vg_init_trunc_normal(vg_tensor *t, vg_rng *rng, double std) {
    if (t) FILL_ROW_MAJOR(t, vg_rng_trunc_normal(rng, 0.0, std, -2.0, 2.0));
}
void vg_init_normal(vg_tensor *t, vg_rng *rng, double std) {
    if (t) FILL_ROW_MAJOR(t, std * vg_rng_normal(rng));
}
void vg_init_uniform(vg_tensor *t, vg_rng *rng, double lo, double hi) {
    if (t) FILL_ROW_MAJOR(t, lo + (hi - lo) * vg_rng_uniform(rng));
}
void vg_init_constant(vg_tensor *t, double v) {
    if (t) FILL_ROW_MAJOR(t, v);
}

/* PyTorch _calculate_fan_in_and_fan_out: receptive field = Π shape[2:];
 * fan_in = shape[1]·rf, fan_out = shape[0]·rf. (PyTorch refuses < 2 dims; we use shape[0].) */
static int64_t receptive_field(const vg_tensor *w) {
    int64_t rf = 1;
    for (int d = 2; d < w->ndim; d++) rf *= w->shape[d];
    return rf;
}
int64_t vg_fan_in(const vg_tensor *w) {
    if (!w || w->ndim == 0) return 1;
    if (w->ndim == 1) return w->shape[0];
    return w->shape[1] * receptive_field(w);
}
static int64_t fan_out(const vg_tensor *w) {
    if (!w || w->ndim == 0) return 1;
    if (w->ndim == 1) return w->shape[0];
    return w->shape[0] * receptive_field(w);
}

/* xavier_uniform_(gain 1): U(−b, b), b = √(6 / (fan_in + fan_out)) */
void vg_init_xavier_uniform(vg_tensor *t, vg_rng *rng) {
    if (!t) return;
    double bound = sqrt(6.0 / (double)(vg_fan_in(t) + fan_out(t)));
    vg_init_uniform(t, rng, -bound, bound);
}

/* kaiming_uniform_(a, mode=fan_in, leaky_relu): gain = √(2 / (1 + a²)), b = gain·√(3 / fan_in).
 * With a = √5 (nn.Linear / nn.Conv2d default) b = 1/√fan_in. */
void vg_init_kaiming_uniform(vg_tensor *t, vg_rng *rng, double a) {
    if (!t) return;
    double gain = sqrt(2.0 / (1.0 + a * a));
    double bound = gain * sqrt(3.0 / (double)vg_fan_in(t));
    vg_init_uniform(t, rng, -bound, bound);
}
