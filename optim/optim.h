/* optim.h — AdamW exactly as torch.optim.AdamW (and Muon for chosen matrices), the learning-rate
 * schedule, grad-norm clipping. */
#ifndef VG_OPTIM_H
#define VG_OPTIM_H
#include "nn/nn.h"

/* AdamW (Loshchilov & Hutter), in PyTorch's order of operations:
 *   θ ← θ·(1 − lr·wd)                        decoupled decay, only where the parameter's flag says
 *   m ← β₁m + (1−β₁)g ;  v ← β₂v + (1−β₂)g²
 *   θ ← θ − (lr / (1−β₁ᵗ)) · m / (√v / √(1−β₂ᵗ) + ε) */
typedef struct vg_muon vg_muon;
typedef struct {
    double beta1, beta2, eps, weight_decay;
    int64_t step;                 /* updates taken so far */
    const vg_params *params;
    vg_tensor **exp_avg, **exp_avg_sq;   /* persistent, one per parameter, same order */
    double *lr_scale;             /* NULL, or per parameter: its lr is lr·lr_scale[i] (timm's
                                     param-group lr_scale; decay uses the scaled lr too) */
    vg_muon *muon;                /* NULL, or the parameters Muon updates instead (optim/muon.c) */
} vg_adamw;

vg_adamw *vg_adamw_new(const vg_params *params, double weight_decay);  /* betas (0.9, 0.999), eps 1e-8 */
void      vg_adamw_step(vg_adamw *opt, double lr);                      /* one update of every parameter */
void      vg_adamw_free(vg_adamw *opt);
/* per-parameter lr scales (copied; NULL = all 1) */
void      vg_adamw_set_lr_scale(vg_adamw *opt, const double *scale);

/* Muon (torch.optim.Muon, nesterov; optim/muon.c) for the parameters with which[i] set, all 2-d:
 *   B ← μB + (1−μ)g;  U = g + μ(B − g);  O = NS₅(U)  (Newton–Schulz: U's singular values → ~1)
 *   θ ← θ·(1 − lr·wd) − lr'·O,  lr = the step's lr · lr_ratio (· lr_scale), lr' = lr·√max(1, rows/cols)
 *   (VG_MUON_ORIGINAL) or 0.2·lr·√max(rows, cols) (VG_MUON_MATCH_RMS_ADAMW)
 * The rest keep AdamW. B is kept in exp_avg. false (vg_error() says why) if a chosen one is not 2-d. */
typedef enum { VG_MUON_ORIGINAL, VG_MUON_MATCH_RMS_ADAMW } vg_muon_adjust;
bool   vg_adamw_use_muon(vg_adamw *opt, const bool *which, double lr_ratio, double momentum, vg_muon_adjust adjust);
bool   vg_muon_on(const vg_adamw *opt, int i);
void   vg_muon_update(vg_adamw *opt, int i, double lr);     /* one update of parameter i (called by vg_adamw_step) */
double vg_muon_flops(const vg_adamw *opt);                  /* the Newton–Schulz FLOPs of one step */
void   vg_muon_free(vg_muon *m);
/* NS₅ of a rows × cols matrix u into out (which may be u) */
void   vg_muon_orthogonalize(const real *u, int64_t rows, int64_t cols, real *out);

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
