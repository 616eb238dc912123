/* ema.c — an exponential moving average of the weights (timm's ModelEmaV2), taken over the whole
 * state dict after every optimizer step:
 *
 *   ema ← decay·ema + (1 − decay)·model          (element-wise, every tensor of the state dict)
 *
 * computed in double and rounded once, so a tensor that does not change (a fixed sin-cos
 * pos_embed) stays bit-identical to the model's. The average lives in a second model of the same
 * configuration (its own persistent tensors), so it is evaluated, saved and loaded like the model. */
#include "optim/optim.h"
#include <string.h>

static int same_layout(const vg_params *ema, const vg_params *model) {
    if (ema->n != model->n) { vg_set_error("ema: %d tensors, the model %d", ema->n, model->n); return 0; }
    for (int i = 0; i < ema->n; i++)
        if (vg_numel(ema->items[i].tensor) != vg_numel(model->items[i].tensor) || strcmp(ema->items[i].name, model->items[i].name)) {
            vg_set_error("ema: tensor %d is %s, the model's %s (or another size)", i, ema->items[i].name, model->items[i].name);
            return 0;
        }
    return 1;
}

bool vg_ema_copy(const vg_params *ema, const vg_params *model) {
    if (!same_layout(ema, model)) return false;
    for (int i = 0; i < ema->n; i++) vg_copy_raw(ema->items[i].tensor, model->items[i].tensor);
    return true;
}

bool vg_ema_update(const vg_params *ema, const vg_params *model, double decay) {
    if (!same_layout(ema, model)) return false;
    const double keep = decay, take = 1.0 - decay;
    for (int i = 0; i < ema->n; i++) {
        real *e = vg_data(ema->items[i].tensor);
        const real *m = vg_data(model->items[i].tensor);
        const int64_t n = vg_numel(ema->items[i].tensor);
        #pragma omp parallel for schedule(static) if (n > 65536)
        for (int64_t k = 0; k < n; k++) e[k] = (real)(keep * (double)e[k] + take * (double)m[k]);
    }
    return true;
}
