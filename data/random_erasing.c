/* random_erasing.c — Random Erasing (Zhong et al. 2020) as timm's RandomErasing(mode='pixel'),
 * on a normalised image (after Normalize, as in timm's transform pipeline):
 *
 *   with probability p:  up to 10 attempts of
 *       area   = U(0.02, 1/3) · H·W
 *       aspect = exp(U(log 0.3, log 1/0.3))
 *       h = round(√(area·aspect)), w = round(√(area/aspect))   (Python's round: half to even)
 *       if h < H and w < W: top ∈ [0, H−h], left ∈ [0, W−w] uniformly, fill the box in every
 *       channel with N(0, 1) values (one per pixel and channel), stop */
#include "data/augment.h"
#include <math.h>

vg_erase_box vg_random_erasing(real *img, int C, int H, int W, double prob, vg_rng *r) {
    vg_erase_box e = {false, 0, 0, 0, 0};
    if (!(prob > 0) || vg_rng_uniform(r) > prob) return e;      /* timm: random() > p skips */
    const double area = (double)H * W, lo = log(0.3), hi = log(1 / 0.3);
    for (int attempt = 0; attempt < 10; attempt++) {
        double target = (0.02 + (1.0 / 3.0 - 0.02) * vg_rng_uniform(r)) * area;
        double aspect = exp(lo + (hi - lo) * vg_rng_uniform(r));
        int h = (int)nearbyint(sqrt(target * aspect)), w = (int)nearbyint(sqrt(target / aspect));
        if (w < W && h < H) {
            e.erased = true; e.h = h; e.w = w;
            e.top = (int)vg_rng_below(r, (uint32_t)(H - h + 1));
            e.left = (int)vg_rng_below(r, (uint32_t)(W - w + 1));
            for (int c = 0; c < C; c++)
                for (int y = e.top; y < e.top + h; y++)
                    for (int x = e.left; x < e.left + w; x++)
                        img[((size_t)c * H + y) * W + x] = (real)vg_rng_normal(r);
            break;
        }
    }
    return e;
}
