/* posembed.c — the fixed 2-D sin-cos position table (MAE / MoCo v3) and resampling a position
 * table to a new patch grid (bilinear / bicubic as PyTorch's F.interpolate, align_corners=False). */
#include "vit.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ 2-D sin-cos table
 * MAE builds grid = meshgrid(arange(w), arange(h)) ('xy' indexing), so grid[0] is the COLUMN
 * index j and grid[1] the ROW index i, and concatenates [1d(D/2, grid[0]), 1d(D/2, grid[1])].
 * 1d(E, pos) = [sin(pos·ω_k) for k < E/2, cos(pos·ω_k) for k < E/2], ω_k = 1 / 10000^(k/(E/2)),
 * computed in float64 as numpy does. */
vg_tensor *vg_sincos_2d_pos_embed(int dim, int grid_h, int grid_w, int prefix_rows) {
    if (dim <= 0 || dim % 4 || grid_h <= 0 || grid_w <= 0 || prefix_rows < 0) {
        vg_set_error("sincos_2d_pos_embed: need dim %% 4 == 0, a non-empty grid and prefix rows >= 0 (dim %d, grid %dx%d, prefix %d)",
                     dim, grid_h, grid_w, prefix_rows);
        return NULL;
    }
    const int64_t rows = (int64_t)grid_h * grid_w + prefix_rows;
    vg_tensor *t = vg_zeros(VG_DIMS(1, rows, dim));
    if (!t) return NULL;
    real *out = vg_data(t) + (int64_t)prefix_rows * dim;    /* the CLS (prefix) rows stay zero */
    const int quarter = dim / 4;
    for (int i = 0; i < grid_h; i++)
        for (int j = 0; j < grid_w; j++) {
            real *r = out + ((int64_t)i * grid_w + j) * dim;
            for (int k = 0; k < quarter; k++) {
                double omega = 1.0 / pow(10000.0, (double)k / quarter);
                r[k]               = (real)sin(j * omega);   /* column: sin, cos */
                r[quarter + k]     = (real)cos(j * omega);
                r[2 * quarter + k] = (real)sin(i * omega);   /* row: sin, cos */
                r[3 * quarter + k] = (real)cos(i * omega);
            }
        }
    return t;
}

/* ------------------------------------------------------------------ resampling
 * PyTorch (aten/src/ATen/native/UpSample.h), align_corners=False, output size given:
 *   scale = in / out, src = (dst + 0.5)·scale − 0.5
 *   bilinear: src clamped below at 0; i0 = floor(src), i1 = min(i0 + 1, in − 1), λ = src − i0
 *   bicubic:  src not clamped; i = floor(src), t = src − i, taps i−1..i+2 clamped to [0, in−1],
 *             Keys' cubic convolution with A = −0.75. */
static double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }           /* |x| ≤ 1 */
static double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }    /* 1 < |x| < 2 */

typedef struct { int idx[4]; double w[4]; } taps;   /* source indices and weights of one output */

static void make_taps(taps *t, int in, int out, vg_interp_mode mode) {
    const double scale = (double)in / out;
    for (int o = 0; o < out; o++) {
        double src = (o + 0.5) * scale - 0.5;
        taps *p = &t[o];
        if (mode == VG_INTERP_BILINEAR) {
            if (src < 0) src = 0;
            int i0 = (int)src; if (i0 > in - 1) i0 = in - 1;
            double l = src - i0; if (l < 0) l = 0; if (l > 1) l = 1;
            p->idx[0] = i0; p->idx[1] = i0 < in - 1 ? i0 + 1 : i0;
            p->w[0] = 1 - l; p->w[1] = l;
            p->idx[2] = p->idx[3] = i0; p->w[2] = p->w[3] = 0;
        } else {
            int i = (int)floor(src);
            double f = src - i, A = -0.75;
            p->w[0] = cubic2(f + 1, A); p->w[1] = cubic1(f, A);
            p->w[2] = cubic1(1 - f, A); p->w[3] = cubic2(2 - f, A);
            for (int k = 0; k < 4; k++) {
                int s = i - 1 + k;
                p->idx[k] = s < 0 ? 0 : s > in - 1 ? in - 1 : s;
            }
        }
    }
}

void vg_interpolate_2d(const real *src, int channels, int h, int w, real *dst, int H, int W, vg_interp_mode mode) {
    taps *ty = malloc(sizeof *ty * (size_t)H), *tx = malloc(sizeof *tx * (size_t)W);
    if (!ty || !tx) { free(ty); free(tx); return; }
    make_taps(ty, h, H, mode);
    make_taps(tx, w, W, mode);
    const int n = mode == VG_INTERP_BILINEAR ? 2 : 4;
    for (int c = 0; c < channels; c++) {
        const real *s = src + (int64_t)c * h * w;
        real *d = dst + (int64_t)c * H * W;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                double acc = 0;
                for (int a = 0; a < n; a++) {            /* rows, then columns within each row */
                    const real *row = s + (int64_t)ty[y].idx[a] * w;
                    double r = 0;
                    for (int b = 0; b < n; b++) r += tx[x].w[b] * row[tx[x].idx[b]];
                    acc += ty[y].w[a] * r;
                }
                d[(int64_t)y * W + x] = (real)acc;
            }
    }
    free(ty); free(tx);
}

vg_tensor *vg_resize_pos_embed_prefix(const vg_tensor *pos, int prefix, int h, int w, int H, int W,
                                      vg_interp_mode mode) {
    if (!pos) return NULL;
    if (prefix < 0 || pos->ndim != 3 || pos->shape[0] != 1 || pos->shape[1] != prefix + (int64_t)h * w || H <= 0 || W <= 0) {
        char s[64]; vg_shape_str(pos, s, sizeof s);
        vg_set_error("resize_pos_embed: expected (1, %d + %d·%d, D) and a non-empty new grid, got %s → %dx%d",
                     prefix, h, w, s, H, W);
        return NULL;
    }
    const int64_t D = pos->shape[2], n = (int64_t)h * w, N = (int64_t)H * W, S = prefix;
    const vg_tensor *pc = vg_contiguous_raw(pos);
    vg_tensor *out = vg_empty(VG_DIMS(1, S + N, D));
    real *grid = vg_arena_alloc(sizeof(real) * (size_t)(D * (n + N)));
    if (!pc || !out || !grid) return NULL;
    const real *p = vg_data(pc);
    real *o = vg_data(out), *g_in = grid, *g_out = grid + D * n;
    if (S) memcpy(o, p, sizeof(real) * (size_t)(S * D));               /* prefix (CLS) rows unchanged */
    for (int64_t t = 0; t < n; t++)                                      /* (n, D) → (D, h, w) */
        for (int64_t d = 0; d < D; d++) g_in[d * n + t] = p[(S + t) * D + d];
    vg_interpolate_2d(g_in, (int)D, h, w, g_out, H, W, mode);
    for (int64_t t = 0; t < N; t++)                                      /* (D, H, W) → (N, D) */
        for (int64_t d = 0; d < D; d++) o[(S + t) * D + d] = g_out[d * N + t];
    return out;
}

vg_tensor *vg_resize_pos_embed(const vg_tensor *pos, int h, int w, int H, int W, vg_interp_mode mode) {
    return vg_resize_pos_embed_prefix(pos, 1, h, w, H, W, mode);
}

bool vg_vit_set_img_size(vg_vit *m, int img_size, vg_interp_mode mode) {
    const int P = m->cfg.patch_size;
    if (img_size <= 0 || img_size % P) {
        vg_set_error("vit: new image size %d is not a positive multiple of the patch size %d", img_size, P);
        return false;
    }
    const int g = img_size / P;
    vg_arena_mark mk = vg_arena_get_mark();
    vg_tensor *np = vg_persist(vg_resize_pos_embed_prefix(m->pos_embed, vg_vit_pos_prefix_rows(&m->cfg),
                                                          m->grid_h, m->grid_w, g, g, mode));
    vg_arena_release(mk);
    if (!np) return false;
    np->requires_grad = m->pos_embed->requires_grad;
    vg_tensor_free(m->pos_embed);
    m->pos_embed = np;
    m->grid_h = m->grid_w = g;
    m->cfg.img_size = img_size;
    return true;
}
