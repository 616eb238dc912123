/* optim.h — AdamW exactly as torch.optim.AdamW, the learning-rate schedule, grad-norm clipping. */
#ifndef VG_OPTIM_H
#define VG_OPTIM_H
#include "nn/nn.h"

/* AdamW (Loshchilov & Hutter), in PyTorch's order of operations:
 *   θ ← θ·(1 − lr·wd)                        decoupled decay, only where the parameter's flag says
 *   m ← β₁m + (1−β₁)g ;  v ← β₂v + (1−β₂)g²
 *   θ ← θ − (lr / (1−β₁ᵗ)) · m / (√v / √(1−β₂ᵗ) + ε) */
typedef struct {
    double beta1, beta2, eps, weight_decay;
    int64_t step;                 /* updates taken so far */
    const vg_params *params;
    vg_tensor **exp_avg, **exp_avg_sq;   /* persistent, one per parameter, same order */
    double *lr_scale;             /* NULL, or per parameter: its lr is lr·lr_scale[i] (timm's
                                     param-group lr_scale; decay uses the scaled lr too) */
} vg_adamw;

vg_adamw *vg_adamw_new(const vg_params *params, double weight_decay);  /* betas (0.9, 0.999), eps 1e-8 */
void      vg_adamw_step(vg_adamw *opt, double lr);                      /* one update of every parameter */
void      vg_adamw_free(vg_adamw *opt);
/* per-parameter lr scales (copied; NULL = all 1) */
void      vg_adamw_set_lr_scale(vg_adamw *opt, const double *scale);

/* Layer-wise lr decay (BEiT; timm's param_groups_layer_decay) for a ViT of `depth` blocks: the
 * scale of a parameter by its timm name — the embeddings (cls_token, reg_token, pos_embed,
 * patch_embed.*) decay^(depth+1), blocks.i.* decay^(depth−i), the rest (norm, fc_norm, head)
 * 1. */
double vg_layer_decay_scale(const char *name, int depth, double decay);

/* torch.nn.utils.clip_grad_norm_: total = ‖(‖g₁‖, ‖g₂‖, …)‖₂; if max_norm > 0 every gradient is
 * scaled by min(1, max_norm / (total + 1e-6)). Returns the total norm before clipping. */
double vg_clip_grad_norm(const vg_params *params, double max_norm);

/* Weight EMA (timm's ModelEmaV2) between two state dicts of the same model layout (same names,
 * sizes and order, contiguous persistent tensors): after each optimizer step
 *   ema ← decay·ema + (1 − decay)·model   (in double, rounded once)
 * vg_ema_copy starts the average at the model. false (vg_error() says why) if the layouts differ. */
bool vg_ema_update(const vg_params *ema, const vg_params *model, double decay);
bool vg_ema_copy(const vg_params *ema, const vg_params *model);

/* Linear warmup from base_lr/warmup to base_lr over `warmup_steps`, then cosine decay to min_lr at
 * total_steps. Step s is 0-based (the update about to be taken). */
typedef struct { double base_lr, min_lr; int64_t warmup_steps, total_steps; } vg_lr_schedule;
double vg_lr_at(const vg_lr_schedule *s, int64_t step);
#endif
