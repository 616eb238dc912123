/* mixup.c — Mixup (Zhang et al. 2018) and CutMix (Yun et al. 2019) as timm's Mixup in batch mode:
 * one λ per batch, image b paired with image B−1−b (the batch flipped), soft targets with label
 * smoothing folded in (timm's mixup_target), trained with SoftTargetCrossEntropy.
 *
 *   per batch: with probability prob mix, else λ = 1;
 *              both alphas > 0: CutMix with probability switch_prob, else Mixup;
 *              λ ~ Beta(α, α) of the chosen method
 *   Mixup:     x_b ← λ·x_b + (1 − λ)·x_{B−1−b}
 *   CutMix:    cut = (⌊H·√(1−λ)⌋, ⌊W·√(1−λ)⌋), centre (cy, cx) uniform over the image,
 *              box = centre ± cut//2 clipped to the image; x_b[box] ← x_{B−1−b}[box];
 *              λ ← 1 − box area / (H·W)   (the label weight equals the area actually kept)
 *   targets:   t_b = λ·q(y_b) + (1 − λ)·q(y_{B−1−b}) */
#include "data/augment.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool vg_mixup_enabled(const vg_mixup_config *c) { return c && (c->mixup_alpha > 0 || c->cutmix_alpha > 0); }

vg_rng vg_mixup_rng(uint64_t seed, int64_t step, int micro) {
    const vg_rng root = vg_rng_seed(seed ^ 0x6d69787570ULL);         /* "mixup": apart from the loader's */
    return vg_rng_derive(&root, (uint64_t)step, (uint64_t)micro);
}

/* Gamma(a, 1), Marsaglia & Tsang (2000); for a < 1, Gamma(a+1)·U^(1/a) */
static double gamma_sample(vg_rng *r, double a) {
    if (a < 1) {
        double u = vg_rng_uniform(r);
        return gamma_sample(r, a + 1) * pow(u > 0 ? u : 0x1p-53, 1.0 / a);
    }
    const double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = vg_rng_normal(r), v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = vg_rng_uniform(r);
        if (u < 1 - 0.0331 * x * x * x * x) return d * v;
        if (u > 0 && log(u) < 0.5 * x * x + d * (1 - v + log(v))) return d * v;
    }
}

double vg_beta_sample(vg_rng *r, double a, double b) {
    double x = gamma_sample(r, a), y = gamma_sample(r, b);
    return x + y > 0 ? x / (x + y) : 0.5;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

vg_mixup_params vg_mixup_draw(const vg_mixup_config *c, vg_rng *r, int H, int W) {
    vg_mixup_params p = {1.0, false, 0, 0, 0, 0};
    if (!vg_mixup_enabled(c) || !(vg_rng_uniform(r) < c->prob)) return p;
    double alpha;
    if (c->mixup_alpha > 0 && c->cutmix_alpha > 0) {
        p.cutmix = vg_rng_uniform(r) < c->switch_prob;
        alpha = p.cutmix ? c->cutmix_alpha : c->mixup_alpha;
    } else {
        p.cutmix = c->cutmix_alpha > 0;
        alpha = p.cutmix ? c->cutmix_alpha : c->mixup_alpha;
    }
    p.lam = vg_beta_sample(r, alpha, alpha);
    if (p.cutmix) {            /* timm's rand_bbox (margin 0) + cutmix_bbox_and_lam(correct_lam) */
        double ratio = sqrt(1 - p.lam);
        int cut_h = (int)(H * ratio), cut_w = (int)(W * ratio);
        int cy = (int)vg_rng_below(r, (uint32_t)H), cx = (int)vg_rng_below(r, (uint32_t)W);
        p.y0 = clampi(cy - cut_h / 2, 0, H); p.y1 = clampi(cy + cut_h / 2, 0, H);
        p.x0 = clampi(cx - cut_w / 2, 0, W); p.x1 = clampi(cx + cut_w / 2, 0, W);
        p.lam = 1.0 - (double)(p.y1 - p.y0) * (double)(p.x1 - p.x0) / ((double)H * (double)W);
    }
    return p;
}

void vg_mixup_apply_with(const vg_mixup_params *p, real *x, const real *partner, int B, int C, int H, int W) {
    if (p->lam == 1.0) return;
    const size_t img = (size_t)C * H * W;
    const bool in_place = partner == x;
    const double l = p->lam, m = 1.0 - p->lam;
    for (int b = 0; b < B; b++) {
        const int q = B - 1 - b;
        if (in_place && q <= b) break;          /* in place: pairs (b, q) are updated together, so both
                                                 * read the unmixed images; an odd batch's middle image
                                                 * is paired with itself and stays as it is */
        real *u = x + (size_t)b * img;
        const real *v = partner + (size_t)q * img;
        real *w = in_place ? x + (size_t)q * img : NULL;   /* the partner, mixed the other way */
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int i = 0; i < W; i++) {
                    size_t k = ((size_t)c * H + y) * W + i;
                    double a = (double)u[k], bb = (double)v[k];
                    if (p->cutmix) {
                        if (y < p->y0 || y >= p->y1 || i < p->x0 || i >= p->x1) continue;
                        u[k] = (real)bb;
                        if (w) w[k] = (real)a;
                    } else {
                        u[k] = (real)(l * a + m * bb);
                        if (w) w[k] = (real)(l * bb + m * a);
                    }
                }
    }
}

void vg_mixup_apply(const vg_mixup_params *p, real *x, int B, int C, int H, int W) {
    vg_mixup_apply_with(p, x, x, B, C, H, W);
}

void vg_mixup_targets_with(const int32_t *y, const int32_t *partner_y, int B, int classes, double lam,
                           double smoothing, real *out) {
    const double off = smoothing / classes, on = 1.0 - smoothing + off;
    for (int b = 0; b < B; b++) {
        real *t = out + (size_t)b * classes;
        for (int k = 0; k < classes; k++) {
            double q1 = k == y[b] ? on : off, q2 = k == partner_y[B - 1 - b] ? on : off;
            t[k] = (real)(q1 * lam + q2 * (1.0 - lam));
        }
    }
}

void vg_mixup_targets(const int32_t *y, int B, int classes, double lam, double smoothing, real *out) {
    vg_mixup_targets_with(y, y, B, classes, lam, smoothing, out);
}
