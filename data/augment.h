/* augment.h — timm's augmentation and regularisation of inputs: Mixup/CutMix on a batch
 * (mixup.c), RandAugment on a uint8 image (randaugment.c), random erasing on a normalised image
 * (random_erasing.c). Every function draws only from the generator it is given, so the loader can
 * make each sample's augmentation a function of (seed, epoch, sample) and the training step each
 * batch's mixing a function of (seed, step, micro-batch). Semantics and ranges: docs/data.md. */
#ifndef VG_DATA_AUGMENT_H
#define VG_DATA_AUGMENT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tensor/real.h"
#include "tensor/rng.h"

/* ---- Mixup / CutMix, timm's Mixup in mode 'batch' ---- */
typedef struct vg_mixup_config {
    double mixup_alpha;      /* λ ~ Beta(α, α) for Mixup; 0 = off (timm --mixup) */
    double cutmix_alpha;     /* λ ~ Beta(α, α) for CutMix; 0 = off (timm --cutmix) */
    double prob;             /* chance a batch is mixed at all (timm --mixup-prob, default 1) */
    double switch_prob;      /* both on: chance of CutMix rather than Mixup (--mixup-switch-prob, 0.5) */
    double label_smoothing;  /* folded into the targets (timm's mixup_target) */
    int    num_classes;
} vg_mixup_config;

/* one batch's draw: image b is mixed with image B−1−b (the batch flipped) */
typedef struct vg_mixup_params {
    double lam;              /* weight of the image's own label; 1 = not mixed */
    bool   cutmix;           /* paste the box [y0, y1) × [x0, x1) from the flipped batch */
    int    y0, y1, x0, x1;
} vg_mixup_params;

bool   vg_mixup_enabled(const vg_mixup_config *c);        /* either alpha > 0 */
/* the generator of optimizer step `step`'s micro-batch `micro` under `seed` (./train and
 * ./inspect augment draw the same batches) */
vg_rng vg_mixup_rng(uint64_t seed, int64_t step, int micro);
/* X / (X + Y), X ~ Gamma(a), Y ~ Gamma(b) (Marsaglia–Tsang; a < 1 by the boost U^(1/a)) */
double vg_beta_sample(vg_rng *r, double a, double b);
/* timm's _params_per_batch and, for CutMix, rand_bbox on (H, W) with λ corrected to the clipped
 * box: λ = 1 − box area / (H·W) */
vg_mixup_params vg_mixup_draw(const vg_mixup_config *c, vg_rng *r, int H, int W);
/* x (B, C, H, W) in place: Mixup x_b ← λ·x_b + (1−λ)·x_{B−1−b}; CutMix copies the box from
 * x_{B−1−b}. Both read the unmixed batch. */
void   vg_mixup_apply(const vg_mixup_params *p, real *x, int B, int C, int H, int W);
/* the same with the partner images given: x_b is mixed with partner_{B−1−b} (unmixed). With N
 * processes, rank r's slice of a global batch pairs with rank N−1−r's slice (./train exchanges
 * them), so every sample meets the partner it has in one process. partner == x: vg_mixup_apply */
void   vg_mixup_apply_with(const vg_mixup_params *p, real *x, const real *partner, int B, int C, int H, int W);
/* timm's mixup_target: out (B, classes) = λ·q(y_b) + (1−λ)·q(y_{B−1−b}),
 * q = smoothed one-hot (1 − ε + ε/C on the label, ε/C elsewhere) */
void   vg_mixup_targets(const int32_t *y, int B, int classes, double lam, double smoothing, real *out);
/* the same with the partners' labels: q(partner_y_{B−1−b}) for the second term */
void   vg_mixup_targets_with(const int32_t *y, const int32_t *partner_y, int B, int classes, double lam,
                             double smoothing, real *out);

/* ---- RandAugment, timm's rand_augment_transform ---- */
typedef struct vg_randaugment_config {
    int    num_layers;       /* n: operations per image (default 2), chosen with replacement */
    int    magnitude;        /* m: 0..magnitude_max (default 10) */
    double magnitude_std;    /* mstd: m ~ N(m, mstd) per op; INFINITY: uniform(0, m) (mstd > 100) */
    int    magnitude_max;    /* mmax: clip of the noisy magnitude (default 10) */
    double prob;             /* p: chance each chosen operation is applied (default 0.5) */
    bool   increasing;       /* inc1: the "increasing" variants (severity grows with m) */
} vg_randaugment_config;

/* "rand-m9-mstd0.5-inc1" (timm's config string: m, n, mstd, mmax, p, inc; '-'-separated) or
 * "trivial" (TrivialAugment: one op, magnitude uniform in 0..10, always applied: rand-n1-m10-mstd101-p1).
 * Returns 0, or -1 with err naming the bad part. */
int  vg_randaugment_parse(const char *spec, vg_randaugment_config *c, char *err, size_t errlen);
/* number of operations and their names (timm's op set) */
int  vg_randaugment_op_count(bool increasing);
const char *vg_randaugment_op_name(int op, bool increasing);
/* apply operation `op` at magnitude m (0..10 scale, after noise) to img (C, H, W) uint8 in place;
 * rng only for the sign of signed ops. fill: per-channel value for pixels an affine op uncovers.
 * scratch: C·H·W bytes. */
void vg_randaugment_op(int op, bool increasing, double m, uint8_t *img, int C, int H, int W,
                       const uint8_t *fill, vg_rng *r, uint8_t *scratch);
/* the whole policy: num_layers draws of (op, apply?, magnitude) then the op */
void vg_randaugment_apply(const vg_randaugment_config *c, uint8_t *img, int C, int H, int W,
                          const uint8_t *fill, vg_rng *r, uint8_t *scratch);

/* ---- random erasing, timm's RandomErasing(mode='pixel') ---- */
typedef struct { bool erased; int top, left, h, w; } vg_erase_box;
/* With probability prob erase one box of img (C, H, W), normalised values, with per-pixel N(0, 1)
 * values: area uniform in [0.02, 1/3] of the image, log aspect ratio uniform in
 * [log 0.3, log 1/0.3], up to 10 attempts to fit (timm's defaults). */
vg_erase_box vg_random_erasing(real *img, int C, int H, int W, double prob, vg_rng *r);
#endif
