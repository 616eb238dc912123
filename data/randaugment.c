/* randaugment.c — RandAugment (Cubuk et al. 2020) as timm's rand_augment_transform, on a uint8
 * image (C, H, W) after the crop and flip, before normalisation (timm's order).
 *
 * Policy (timm RandAugment + AugmentOp): choose num_layers ops uniformly with replacement; each
 * is applied with probability prob at magnitude m' = m, or N(m, mstd) when mstd > 0, or U(0, m)
 * when mstd = ∞, clipped to [0, mmax]. The level of an op at magnitude m' (timm's _LEVEL_DENOM
 * = 10), ± meaning a random sign (p = ½):
 *   AutoContrast, Equalize, Invert        no level
 *   Rotate                                ±30°·m'/10, about the centre
 *   ShearX/Y                              ±0.3·m'/10
 *   TranslateX/YRel                       ±0.45·m'/10 of the width/height (relative: 14 px on a
 *                                         32-px image at m' = 10, as on any image size)
 *   Posterize                             keep ⌊4·m'/10⌋ bits (increasing: 4 − that)
 *   Solarize                              threshold ⌊256·m'/10⌋ (increasing: 256 − that)
 *   SolarizeAdd                           add ⌊110·m'/10⌋ below 128
 *   Color, Contrast, Brightness, Sharpness  blend factor 0.1 + 1.8·m'/10
 *                                         (increasing: max(0.1, 1 ± 0.9·m'/10))
 * The pixel operations are PIL's (ImageOps / ImageEnhance, which timm calls): luminance
 * L = (19595 R + 38470 G + 7471 B + 2^15) >> 16, blends truncated to uint8, the SMOOTH kernel for
 * Sharpness, affine maps sampled bilinearly at pixel centres with uncovered pixels set to `fill`
 * (timm passes the dataset mean). timm picks bilinear or bicubic at random for affine ops; here
 * always bilinear. */
#include "data/augment.h"
#include "data/internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { AUTOCONTRAST, EQUALIZE, INVERT, ROTATE, POSTERIZE, SOLARIZE, SOLARIZE_ADD, COLOR, CONTRAST,
       BRIGHTNESS, SHARPNESS, SHEAR_X, SHEAR_Y, TRANSLATE_X_REL, TRANSLATE_Y_REL, N_OPS };
static const char *const op_names[N_OPS] = {
    "AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize", "SolarizeAdd", "Color",
    "Contrast", "Brightness", "Sharpness", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"};
static const char *const op_names_inc[N_OPS] = {
    "AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing", "SolarizeIncreasing",
    "SolarizeAdd", "ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing",
    "SharpnessIncreasing", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"};

int vg_randaugment_op_count(bool increasing) { (void)increasing; return N_OPS; }
const char *vg_randaugment_op_name(int op, bool increasing) {
    return op >= 0 && op < N_OPS ? (increasing ? op_names_inc : op_names)[op] : "?";
}

/* ---- pixel operations ---- */
static uint8_t clip8(double v) { return v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)v; }   /* truncates */

static void apply_lut(uint8_t *ch, size_t n, const uint8_t lut[256]) { for (size_t i = 0; i < n; i++) ch[i] = lut[ch[i]]; }

static void autocontrast(uint8_t *img, int C, size_t hw) {
    for (int c = 0; c < C; c++) {
        uint8_t *p = img + (size_t)c * hw, lo = 255, hi = 0, lut[256];
        for (size_t i = 0; i < hw; i++) { if (p[i] < lo) lo = p[i]; if (p[i] > hi) hi = p[i]; }
        if (hi <= lo) continue;
        double scale = 255.0 / (hi - lo), offset = -lo * scale;
        for (int i = 0; i < 256; i++) { int v = (int)(i * scale + offset); lut[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }
        apply_lut(p, hw, lut);
    }
}

static void equalize(uint8_t *img, int C, size_t hw) {
    for (int c = 0; c < C; c++) {
        uint8_t *p = img + (size_t)c * hw, lut[256];
        long h[256] = {0}, total = 0, last = 0;
        int used = 0;
        for (size_t i = 0; i < hw; i++) h[p[i]]++;
        for (int i = 0; i < 256; i++) if (h[i]) { used++; total += h[i]; last = h[i]; }
        if (used <= 1) continue;
        long step = (total - last) / 256;
        if (!step) continue;
        long n = step / 2;
        for (int i = 0; i < 256; i++) { long v = n / step; lut[i] = (uint8_t)(v > 255 ? 255 : v); n += h[i]; }
        apply_lut(p, hw, lut);
    }
}

/* the per-pixel luminance of an RGB image (PIL's convert("L")); a 1-channel image is its own */
static uint8_t luma(const uint8_t *img, int C, size_t hw, size_t i) {
    if (C < 3) return img[i];
    return (uint8_t)((img[i] * 19595u + img[hw + i] * 38470u + img[2 * hw + i] * 7471u + 0x8000u) >> 16);
}

/* ImageEnhance: img ← degenerate + f·(img − degenerate); degenerate given per pixel (deg) or as
 * one constant (deg == NULL) */
static void blend(uint8_t *img, size_t n, const uint8_t *deg, uint8_t constant, double f) {
    for (size_t i = 0; i < n; i++) {
        double d = deg ? deg[i] : constant;
        img[i] = clip8(d + f * ((double)img[i] - d));
    }
}

static void enhance(int op, uint8_t *img, int C, int H, int W, double f, uint8_t *scratch) {
    const size_t hw = (size_t)H * W;
    if (op == BRIGHTNESS) { blend(img, (size_t)C * hw, NULL, 0, f); return; }
    if (op == COLOR) {
        if (C < 3) return;
        for (size_t i = 0; i < hw; i++) scratch[i] = luma(img, C, hw, i);
        for (int c = 0; c < C; c++) blend(img + (size_t)c * hw, hw, scratch, 0, f);
        return;
    }
    if (op == CONTRAST) {
        double sum = 0;
        for (size_t i = 0; i < hw; i++) sum += luma(img, C, hw, i);
        blend(img, (size_t)C * hw, NULL, (uint8_t)(int)(sum / (double)hw + 0.5), f);
        return;
    }
    /* SHARPNESS: the degenerate is the SMOOTH filter [1 1 1; 1 5 1; 1 1 1]/13, border unchanged */
    memcpy(scratch, img, (size_t)C * hw);
    for (int c = 0; c < C; c++) {
        const uint8_t *s = img + (size_t)c * hw;
        uint8_t *d = scratch + (size_t)c * hw;
        for (int y = 1; y < H - 1; y++)
            for (int x = 1; x < W - 1; x++) {
                int acc = 4 * s[y * W + x];
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) acc += s[(y + dy) * W + x + dx];
                d[y * W + x] = clip8(acc / 13.0 + 0.5);
            }
    }
    blend(img, (size_t)C * hw, scratch, 0, f);
}

/* PIL's Image.transform(AFFINE, (a, b, c, d, e, f)): output pixel centre (x+½, y+½) reads the
 * input at (a·x' + b·y' + c, d·x' + e·y' + f); outside [0, W) × [0, H) → fill; else bilinear
 * between the four nearest pixel centres (indices clamped at the border) */
static void affine(uint8_t *img, int C, int H, int W, const double m[6], const uint8_t *fill, uint8_t *scratch) {
    const size_t hw = (size_t)H * W;
    memcpy(scratch, img, (size_t)C * hw);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double xo = x + 0.5, yo = y + 0.5;
            double u = m[0] * xo + m[1] * yo + m[2], v = m[3] * xo + m[4] * yo + m[5];
            size_t o = (size_t)y * W + x;
            if (!(u >= 0 && u < W && v >= 0 && v < H)) {
                for (int c = 0; c < C; c++) img[(size_t)c * hw + o] = fill[c];
                continue;
            }
            u -= 0.5; v -= 0.5;
            int x0 = (int)floor(u), y0 = (int)floor(v);
            double fx = u - x0, fy = v - y0;
            int xa = x0 < 0 ? 0 : x0, xb = x0 + 1 > W - 1 ? W - 1 : x0 + 1;
            int ya = y0 < 0 ? 0 : y0, yb = y0 + 1 > H - 1 ? H - 1 : y0 + 1;
            for (int c = 0; c < C; c++) {
                const uint8_t *s = scratch + (size_t)c * hw;
                double top = s[ya * W + xa] + fx * (s[ya * W + xb] - s[ya * W + xa]);
                double bot = s[yb * W + xa] + fx * (s[yb * W + xb] - s[yb * W + xa]);
                img[(size_t)c * hw + o] = clip8(top + fy * (bot - top) + 0.5);
            }
        }
}

static double signed_level(double v, vg_rng *r) { return vg_rng_uniform(r) < 0.5 ? -v : v; }

void vg_randaugment_op(int op, bool inc, double m, uint8_t *img, int C, int H, int W,
                       const uint8_t *fill, vg_rng *r, uint8_t *scratch) {
    const size_t hw = (size_t)H * W, n = (size_t)C * hw;
    const double t = m / 10.0;                           /* timm: level / _LEVEL_DENOM */
    uint8_t lut[256];
    switch (op) {
    case AUTOCONTRAST: autocontrast(img, C, hw); break;
    case EQUALIZE: equalize(img, C, hw); break;
    case INVERT: for (size_t i = 0; i < n; i++) img[i] = (uint8_t)(255 - img[i]); break;
    case POSTERIZE: {
        int bits = (int)(t * 4);
        if (inc) bits = 4 - bits;
        if (bits >= 8) break;
        uint8_t mask = (uint8_t)~((1u << (8 - bits)) - 1);
        for (size_t i = 0; i < n; i++) img[i] &= mask;
        break;
    }
    case SOLARIZE: {
        int thresh = (int)(t * 256) < 256 ? (int)(t * 256) : 256;
        if (inc) thresh = 256 - thresh;
        for (int i = 0; i < 256; i++) lut[i] = (uint8_t)(i < thresh ? i : 255 - i);
        apply_lut(img, n, lut);
        break;
    }
    case SOLARIZE_ADD: {
        int add = (int)(t * 110) < 128 ? (int)(t * 110) : 128;
        for (int i = 0; i < 256; i++) lut[i] = (uint8_t)(i < 128 ? (i + add < 255 ? i + add : 255) : i);
        apply_lut(img, n, lut);
        break;
    }
    case COLOR: case CONTRAST: case BRIGHTNESS: case SHARPNESS: {
        double f = inc ? fmax(0.1, 1.0 + signed_level(t * 0.9, r)) : t * 1.8 + 0.1;
        enhance(op, img, C, H, W, f, scratch);
        break;
    }
    case ROTATE: {
        /* PIL's rotate(angle) about (W/2, H/2), counter-clockwise: the inverse map */
        double a = -signed_level(t * 30.0, r) * M_PI / 180.0, cx = W / 2.0, cy = H / 2.0;
        double mt[6] = {cos(a), sin(a), 0, -sin(a), cos(a), 0};
        mt[2] = mt[0] * -cx + mt[1] * -cy + cx;
        mt[5] = mt[3] * -cx + mt[4] * -cy + cy;
        affine(img, C, H, W, mt, fill, scratch);
        break;
    }
    case SHEAR_X: case SHEAR_Y: {
        double s = signed_level(t * 0.3, r);
        double mt[6] = {1, op == SHEAR_X ? s : 0, 0, op == SHEAR_Y ? s : 0, 1, 0};
        affine(img, C, H, W, mt, fill, scratch);
        break;
    }
    case TRANSLATE_X_REL: case TRANSLATE_Y_REL: {
        double p = signed_level(t * 0.45, r);
        double mt[6] = {1, 0, op == TRANSLATE_X_REL ? p * W : 0, 0, 1, op == TRANSLATE_Y_REL ? p * H : 0};
        affine(img, C, H, W, mt, fill, scratch);
        break;
    }
    default: break;
    }
}

void vg_randaugment_apply(const vg_randaugment_config *c, uint8_t *img, int C, int H, int W,
                          const uint8_t *fill, vg_rng *r, uint8_t *scratch) {
    for (int k = 0; k < c->num_layers; k++) {
        int op = (int)vg_rng_below(r, N_OPS);
        if (c->prob < 1.0 && vg_rng_uniform(r) > c->prob) continue;
        double m = c->magnitude;
        if (isinf(c->magnitude_std)) m = vg_rng_uniform(r) * m;
        else if (c->magnitude_std > 0) m += c->magnitude_std * vg_rng_normal(r);
        m = fmax(0.0, fmin(m, (double)c->magnitude_max));
        vg_randaugment_op(op, c->increasing, m, img, C, H, W, fill, r, scratch);
    }
}

int vg_randaugment_parse(const char *spec, vg_randaugment_config *c, char *err, size_t errlen) {
    *c = (vg_randaugment_config){2, 10, 0, 10, 0.5, false};
    if (!strcmp(spec, "trivial")) { *c = (vg_randaugment_config){1, 10, INFINITY, 10, 1.0, false}; return 0; }
    if (strncmp(spec, "rand", 4) || (spec[4] && spec[4] != '-'))
        return vg__err(err, errlen, "'%s': expected rand-m<M>[-n<N>][-mstd<S>][-mmax<X>][-p<P>][-inc<0|1>] or trivial", spec);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec[4] ? spec + 5 : "");
    for (char *save = NULL, *part = strtok_r(buf, "-", &save); part; part = strtok_r(NULL, "-", &save)) {
        size_t k = strcspn(part, "0123456789.");
        char key[16]; snprintf(key, sizeof key, "%.*s", (int)(k < 15 ? k : 15), part);
        const char *val = part + k;
        char *end; double v = strtod(val, &end);
        if (!*val || *end) return vg__err(err, errlen, "'%s': '%s' needs a number after '%s'", spec, part, key);
        if (!strcmp(key, "m") && v >= 0 && v <= 100 && v == (int)v) c->magnitude = (int)v;
        else if (!strcmp(key, "n") && v >= 0 && v <= 16 && v == (int)v) c->num_layers = (int)v;
        else if (!strcmp(key, "mstd") && v >= 0) c->magnitude_std = v > 100 ? INFINITY : v;   /* timm: > 100 = uniform */
        else if (!strcmp(key, "mmax") && v >= 0 && v <= 100 && v == (int)v) c->magnitude_max = (int)v;
        else if (!strcmp(key, "p") && v >= 0 && v <= 1) c->prob = v;
        else if (!strcmp(key, "inc") && (v == 0 || v == 1)) c->increasing = v == 1;
        else return vg__err(err, errlen, "'%s': '%s' is not a known setting in range (m 0..100, n 0..16, mstd >= 0, mmax 0..100, p 0..1, inc 0|1)", spec, part);
    }
    return 0;
}
