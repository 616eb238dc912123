/* pool.h — max pooling of one (H, W) plane (nn/pool.c's forward), compiled once per instruction set
 * by simd/rows.h. The window max is separable, and so is its rule:
 *   across:  for every input row r and output column j, the row's taps ix = j·s − p + dx in the
 *            image, dx = 0 … k−1 in order:  m = v, a = r·W + ix  where v > m or v is NaN
 *            (m starts at −∞, a at the row's first tap)  →  hv[r, j], ha[r, j]
 *   down:    y[i, j], a[i, j] = the same rule over hv[iy, j] for the window's rows iy in order,
 *            starting from the first row's pair.
 * Both passes keep the first largest value of a scan (or its last NaN), so the two together keep
 * the first largest tap in row-major scan order (or the last NaN) — the rule `v > max || isnan(v)`
 * of PyTorch's CPU kernel, value and position bit for bit. Branch-free (both compares evaluated,
 * the selects as masks) so the compiler vectorises across j; strides 1 and 2 are literal, so a run
 * of taps loads as whole vectors instead of being gathered. Scratch: pr (Wo − 1)·s + k values,
 * hv and ha H·Wo each. */
#ifndef VG_SIMD_POOL_H
#define VG_SIMD_POOL_H
#include "tensor/real.h"
#include <math.h>
#include <stdint.h>

/* the across pass over the H input rows of x (row stride W) with a literal stride s; pr: one
 * row padded with −∞ on both sides (−∞ never replaces a value, so padding never wins and leaves
 * the row's first in-image tap as the position when every tap is −∞) */
static inline void maxpool_across(const real *restrict x, int64_t H, int64_t W, int32_t k, int32_t s,
                                  int32_t pad, int32_t Wo, real *restrict pr, real *restrict hv,
                                  int32_t *restrict ha) {
    const int32_t Wp = (Wo - 1) * s + k;                  /* every tap of every window */
    const int32_t n = (int32_t)W < Wp - pad ? (int32_t)W : Wp - pad;   /* the image columns in it */
    for (int32_t c = 0; c < pad; c++) pr[c] = -INFINITY;
    for (int32_t c = pad + n; c < Wp; c++) pr[c] = -INFINITY;
    for (int64_t r = 0; r < H; r++) {
        for (int32_t c = 0; c < n; c++) pr[pad + c] = x[r * W + c];
        real *restrict v_r = hv + r * Wo;
        int32_t *restrict a_r = ha + r * Wo;
        const int32_t row0 = (int32_t)(r * W) - pad;      /* position of padded column c: row0 + c */
        for (int32_t j = 0; j < Wo; j++) {
            v_r[j] = -INFINITY;
            a_r[j] = row0 + (j * s < pad ? pad : j * s);
        }
        for (int32_t dx = 0; dx < k; dx++)
            for (int32_t j = 0; j < Wo; j++) {
                const real v = pr[j * s + dx], m = v_r[j];
                const int take = (v > m) | (v != v);
                v_r[j] = take ? v : m;
                a_r[j] = take ? row0 + j * s + dx : a_r[j];
            }
    }
}

static void maxpool_plane(const real *x, int64_t H, int64_t W, int64_t k, int64_t s, int64_t pad,
                          int64_t Ho, int64_t Wo, real *pr, real *hv, int32_t *ha, real *y, int32_t *a) {
    if (s == 2) maxpool_across(x, H, W, (int32_t)k, 2, (int32_t)pad, (int32_t)Wo, pr, hv, ha);
    else if (s == 1) maxpool_across(x, H, W, (int32_t)k, 1, (int32_t)pad, (int32_t)Wo, pr, hv, ha);
    else maxpool_across(x, H, W, (int32_t)k, (int32_t)s, (int32_t)pad, (int32_t)Wo, pr, hv, ha);
    for (int64_t i = 0; i < Ho; i++) {
        const int64_t top = i * s - pad, y0 = top < 0 ? 0 : top, y1 = top + k > H ? H : top + k;
        real *restrict yr = y + i * Wo;
        int32_t *restrict ar = a + i * Wo;
        for (int64_t j = 0; j < Wo; j++) { yr[j] = hv[y0 * Wo + j]; ar[j] = ha[y0 * Wo + j]; }
        for (int64_t iy = y0 + 1; iy < y1; iy++) {
            const real *restrict v_r = hv + iy * Wo;
            const int32_t *restrict a_r = ha + iy * Wo;
            for (int64_t j = 0; j < Wo; j++) {
                const real v = v_r[j], m = yr[j];
                const int take = (v > m) | (v != v);
                yr[j] = take ? v : m;
                ar[j] = take ? a_r[j] : ar[j];
            }
        }
    }
}
#endif
