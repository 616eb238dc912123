/* pool.h — max pooling of one (H, W) plane (nn/pool.c's forward), compiled once per instruction set
 * by simd/rows.h. The window max is separable, and so is its rule:
 *   across:  for every input row r and output column j, the row's taps c = j·s + dx of the padded
 *            row, dx = 0 … k−1 in order:  m = v, d = dx  where v > m or v is NaN (m starts at −∞,
 *            d at 0)  →  hv[r, j], hd[r, j]
 *   down:    y[i, j], a[i, j] = the same rule over the window's rows iy in order, starting from the
 *            first row's pair; the position of row iy's pair is iy·W + max(j·s + d, p) − p (a
 *            window whose taps are all −∞ keeps its first tap in the image).
 * Both passes keep the first largest value of a scan (or its last NaN), so the two together keep
 * the first largest tap in row-major scan order (or the last NaN) — the rule `v > max || isnan(v)`
 * of PyTorch's CPU kernel, value and position bit for bit.
 * The across pass runs over the whole plane at once: the plane is copied into H padded rows of
 * pitch Wv·s (−∞ before and after each row, vg_maxpool_width), so output q = r·Wv + j reads its
 * taps at q·s + dx, one flat loop of H·Wv outputs per tap (columns j ≥ Wo are computed and never
 * read). Branch-free (both compares evaluated, the selects as masks) so the compiler vectorises
 * it; strides 1 and 2 are literal, so a run of taps loads as whole vectors instead of being
 * gathered. Scratch: pp H·Wv·s + k values, hv and hd H·Wv each (vg_maxpool_scratch). */
#ifndef VG_SIMD_POOL_H
#define VG_SIMD_POOL_H
#include "simd/simd.h"
#include <math.h>
#include <string.h>

/* the across pass over the H rows of x (row stride W) with a literal stride s */
static inline void maxpool_across(const real *restrict x, int32_t H, int32_t W, int32_t k, int32_t s,
                                  int32_t pad, int32_t Wv, real *restrict pp, real *restrict hv,
                                  int32_t *restrict hd) {
    const int32_t pitch = Wv * s, n = H * Wv;
    for (int32_t r = 0; r < H; r++) {
        real *restrict row = pp + r * pitch;
        for (int32_t c = 0; c < pad; c++) row[c] = -INFINITY;
        memcpy(row + pad, x + r * W, sizeof(real) * (size_t)W);
        for (int32_t c = pad + W; c < pitch; c++) row[c] = -INFINITY;
    }
    for (int32_t c = 0; c < k; c++) pp[H * pitch + c] = -INFINITY;   /* the last junk column's taps */
    for (int32_t q = 0; q < n; q++) { hv[q] = -INFINITY; hd[q] = 0; }
    for (int32_t dx = 0; dx < k; dx++)
        for (int32_t q = 0; q < n; q++) {
            const real v = pp[q * s + dx], m = hv[q];
            const int take = (v > m) | (v != v);
            hv[q] = take ? v : m;
            hd[q] = take ? dx : hd[q];
        }
}

static void maxpool_plane(const real *x, int64_t H, int64_t W, int64_t k, int64_t s, int64_t pad,
                          int64_t Ho, int64_t Wo, real *pp, real *hv, int32_t *hd, real *y, int32_t *a) {
    const int32_t Wv = (int32_t)vg_maxpool_width(W, k, s, pad, Wo), S = (int32_t)s, P = (int32_t)pad;
    const int32_t h = (int32_t)H, w = (int32_t)W, kk = (int32_t)k, wo = (int32_t)Wo;
    if (s == 2) maxpool_across(x, h, w, kk, 2, P, Wv, pp, hv, hd);
    else if (s == 1) maxpool_across(x, h, w, kk, 1, P, Wv, pp, hv, hd);
    else maxpool_across(x, h, w, kk, S, P, Wv, pp, hv, hd);
    for (int32_t i = 0; i < (int32_t)Ho; i++) {
        const int32_t top = i * S - P, y0 = top < 0 ? 0 : top, y1 = top + kk > h ? h : top + kk;
        real *restrict yr = y + i * wo;
        int32_t *restrict ar = a + i * wo;
        const real *restrict v0 = hv + y0 * Wv;
        const int32_t *restrict d0 = hd + y0 * Wv;
        for (int32_t j = 0; j < wo; j++) {
            const int32_t c = j * S + d0[j];
            yr[j] = v0[j];
            ar[j] = y0 * w - P + (c > P ? c : P);
        }
        for (int32_t iy = y0 + 1; iy < y1; iy++) {
            const real *restrict v_r = hv + iy * Wv;
            const int32_t *restrict d_r = hd + iy * Wv;
            const int32_t base = iy * w - P;
            for (int32_t j = 0; j < wo; j++) {
                const int32_t c = j * S + d_r[j];
                const real v = v_r[j], m = yr[j];
                const int take = (v > m) | (v != v);
                yr[j] = take ? v : m;
                ar[j] = take ? base + (c > P ? c : P) : ar[j];
            }
        }
    }
}
#endif
