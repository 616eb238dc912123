/* transforms.c — per-sample image transforms from uint8 (C, H, W) to normalized `real`.
 * Resampling follows PIL's ImagingResample (also torchvision's antialias=True path): for each
 * output pixel, a triangle filter centred on the source position, widened by the shrink factor
 * when shrinking, weights normalised to sum 1 over the pixels inside the image. */
#include "data/internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline real normalize(double v, int c, const float *mean, const float *std) {
    return mean ? (real)((v / 255.0 - mean[c]) / std[c]) : (real)(v / 255.0);
}

static inline double triangle(double x) { x = fabs(x); return x < 1.0 ? 1.0 - x : 0.0; }

/* per output index: first source index lo[i], count n[i], weights w[i*ksize ..] */
typedef struct { int ksize; int *lo, *n; double *w; } coeffs;

static int coeffs_make(coeffs *k, double in0, double in1, int in_size, int out_size) {
    double scale = (in1 - in0) / out_size;
    double fscale = scale < 1.0 ? 1.0 : scale;
    double support = 1.0 * fscale;          /* bilinear support is 1 source pixel, widened */
    k->ksize = (int)ceil(support) * 2 + 1;
    k->lo = malloc((size_t)out_size * sizeof(int));
    k->n = malloc((size_t)out_size * sizeof(int));
    k->w = calloc((size_t)out_size * k->ksize, sizeof(double));
    if (!k->lo || !k->n || !k->w) return -1;
    for (int o = 0; o < out_size; o++) {
        double center = in0 + (o + 0.5) * scale;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in_size) hi = in_size;
        if (hi - lo > k->ksize) hi = lo + k->ksize;
        if (hi <= lo) { lo = (int)center; if (lo > in_size - 1) lo = in_size - 1; if (lo < 0) lo = 0; hi = lo + 1; }
        double *w = k->w + (size_t)o * k->ksize, sum = 0;
        for (int x = lo; x < hi; x++) { w[x - lo] = triangle((x - center + 0.5) / fscale); sum += w[x - lo]; }
        if (sum > 0) for (int x = 0; x < hi - lo; x++) w[x] /= sum;
        else w[0] = 1.0;        /* degenerate box: nearest pixel */
        k->lo[o] = lo; k->n[o] = hi - lo;
    }
    return 0;
}
static void coeffs_free(coeffs *k) { free(k->lo); free(k->n); free(k->w); }

void vg_resample_box(const uint8_t *src, int C, int H, int W, double x0, double y0, double bw,
                     double bh, real *dst, int oh, int ow, int flip, const float *mean,
                     const float *std) {
    coeffs kx = {0}, ky = {0};
    double *tmp = NULL;
    if (coeffs_make(&kx, x0, x0 + bw, W, ow) || coeffs_make(&ky, y0, y0 + bh, H, oh)) goto out;
    int r0 = ky.lo[0], r1 = 0;   /* source rows any output row touches */
    for (int o = 0; o < oh; o++) {
        if (ky.lo[o] < r0) r0 = ky.lo[o];
        if (ky.lo[o] + ky.n[o] > r1) r1 = ky.lo[o] + ky.n[o];
    }
    tmp = malloc((size_t)(r1 - r0) * ow * sizeof *tmp);
    if (!tmp) goto out;
    for (int c = 0; c < C; c++) {
        const uint8_t *sc = src + (size_t)c * H * W;
        /* horizontal pass: rows r0..r1-1 -> tmp (r1-r0, ow) */
        for (int y = r0; y < r1; y++) {
            const uint8_t *row = sc + (size_t)y * W;
            double *t = tmp + (size_t)(y - r0) * ow;
            for (int o = 0; o < ow; o++) {
                const double *w = kx.w + (size_t)o * kx.ksize;
                const uint8_t *p = row + kx.lo[o];
                double s = 0;
                for (int k = 0; k < kx.n[o]; k++) s += w[k] * p[k];
                t[o] = s;
            }
        }
        /* vertical pass, mirror and normalize into dst (oh, ow) */
        real *dc = dst + (size_t)c * oh * ow;
        for (int o = 0; o < oh; o++) {
            const double *w = ky.w + (size_t)o * ky.ksize;
            const double *t = tmp + (size_t)(ky.lo[o] - r0) * ow;
            real *d = dc + (size_t)o * ow;
            for (int x = 0; x < ow; x++) {
                double s = 0;
                for (int k = 0; k < ky.n[o]; k++) s += w[k] * t[(size_t)k * ow + x];
                d[flip ? ow - 1 - x : x] = normalize(s, c, mean, std);
            }
        }
    }
out:
    free(tmp); coeffs_free(&kx); coeffs_free(&ky);
}

void vg_resize_center_crop(const uint8_t *src, int C, int H, int W, int size, real *dst,
                           const float *mean, const float *std) {
    /* torchvision Resize(size): shorter side -> size, longer -> int(size * long / short) */
    int nh, nw;
    if (H <= W) { nh = size; nw = (int)((double)size * W / H); }
    else        { nw = size; nh = (int)((double)size * H / W); }
    /* CenterCrop: offsets int(round((n - size) / 2)) with Python's half-to-even round */
    double top = nearbyint((nh - size) / 2.0), left = nearbyint((nw - size) / 2.0);
    double sy = (double)H / nh, sx = (double)W / nw;
    vg_resample_box(src, C, H, W, left * sx, top * sy, size * sx, size * sy, dst, size, size, 0, mean, std);
}

void vg_eval_transform(const uint8_t *src, int C, int H, int W, int size, real *dst,
                       const float *mean, const float *std) {
    if (H == size && W == size) vg_pad_crop_flip(src, C, H, W, 0, 0, 0, 0, dst, mean, std);
    else vg_resize_center_crop(src, C, H, W, size, dst, mean, std);
}

void vg_pad_crop_flip(const uint8_t *src, int C, int H, int W, int pad, int oy, int ox, int flip,
                      real *dst, const float *mean, const float *std) {
    real lut[256];   /* the normalized value of each byte: same formula as everywhere else */
    for (int c = 0; c < C; c++) {
        const uint8_t *sc = src + (size_t)c * H * W;
        real *dc = dst + (size_t)c * H * W;
        for (int v = 0; v < 256; v++) lut[v] = normalize(v, c, mean, std);
        real zero = lut[0];
        for (int y = 0; y < H; y++) {
            int sy = y + oy - pad;
            real *d = dc + (size_t)y * W;
            for (int x = 0; x < W; x++) {
                int sx = x + ox - pad;
                real v = (sy < 0 || sy >= H || sx < 0 || sx >= W) ? zero
                       : lut[sc[(size_t)sy * W + sx]];
                d[flip ? W - 1 - x : x] = v;
            }
        }
    }
}

void vg_rrc_params(vg_rng *r, int H, int W, double scale_min, double scale_max, double ratio_min,
                   double ratio_max, int *x0, int *y0, int *bw, int *bh) {
    double area = (double)H * W, lr0 = log(ratio_min), lr1 = log(ratio_max);
    for (int attempt = 0; attempt < 10; attempt++) {
        double target = area * (scale_min + (scale_max - scale_min) * vg_rng_uniform(r));
        double aspect = exp(lr0 + (lr1 - lr0) * vg_rng_uniform(r));
        int w = (int)nearbyint(sqrt(target * aspect)), h = (int)nearbyint(sqrt(target / aspect));
        if (w > 0 && w <= W && h > 0 && h <= H) {
            *y0 = (int)vg_rng_below(r, (uint32_t)(H - h + 1));
            *x0 = (int)vg_rng_below(r, (uint32_t)(W - w + 1));
            *bw = w; *bh = h;
            return;
        }
    }
    /* fallback: central crop with the aspect ratio clamped into range */
    double in_ratio = (double)W / H;
    int w = W, h = H;
    if (in_ratio < ratio_min) h = (int)nearbyint(w / ratio_min);
    else if (in_ratio > ratio_max) w = (int)nearbyint(h * ratio_max);
    *bw = w; *bh = h; *y0 = (H - h) / 2; *x0 = (W - w) / 2;
}
