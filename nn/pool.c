/* pool.c — 2-D max and average pooling over NCHW, as torch.nn.functional.max_pool2d and avg_pool2d
 * (square kernel k, stride s, zero padding p, dilation 1, ceil_mode=False; avg_pool2d's default
 * count_include_pad=True), and global average pooling.
 *
 *   x (B, C, H, W) → y (B, C, Ho, Wo),  Ho = (H + 2p − k) / s + 1,  Wo likewise
 *   window of output (i, j): rows i·s − p … i·s − p + k − 1, columns likewise; taps outside the
 *   image are padding.
 *   max:  y = the largest tap inside the image (padding never wins); a[i, j] = its position, the
 *         first largest in row-major scan order (PyTorch's CPU kernel: `v > max || isnan(v)`, so
 *         a NaN is taken and carried on)
 *         dx[a[i, j]] += dy[i, j]                 (only the chosen tap gets the gradient)
 *   avg:  y = Σ taps inside the image / k²        (padding counts as zeros in the divisor)
 *         dx[tap] += dy[i, j] / k²                for every tap of the window inside the image
 *
 * Max pooling's forward is the row kernel simd/pool.h (vectorised per instruction set): the max
 * across each row's taps, then down the window's rows, which keeps the rule above bit for bit.
 * Every (b, c) plane is independent: forward and backward run one plane per OpenMP iteration, and
 * each plane's gradient is added in a fixed (i, j, tap) order, so the bits do not depend on the
 * thread count. */
#include "nn.h"
#include "simd/simd.h"
#include <math.h>
#include <omp.h>

typedef struct {
    int64_t B, C, H, W, k, s, pad, Ho, Wo;
    int32_t *argmax;             /* max pooling: (B, C, Ho, Wo) positions within the plane, iy·W + ix */
} pool_geom;

/* the geometry of `op` on x, or NULL with the error set; stride 0 means stride = kernel */
static pool_geom *pool_check(const char *op, const vg_tensor *x, int kernel, int stride, int padding) {
    char sx[96];
    vg_shape_str(x, sx, sizeof sx);
    if (x->ndim != 4) { vg_set_error("%s: input %s must be 4-d (B, C, H, W)", op, sx); return NULL; }
    if (stride == 0) stride = kernel;
    if (kernel < 1 || stride < 1 || padding < 0) {
        vg_set_error("%s: kernel %d and stride %d must be ≥ 1 and padding %d ≥ 0", op, kernel, stride, padding);
        return NULL;
    }
    if (2 * padding > kernel) {      /* PyTorch's rule: a window must hold at least one image tap */
        vg_set_error("%s: padding %d is more than half the kernel %d", op, padding, kernel);
        return NULL;
    }
    pool_geom *g = vg_arena_alloc(sizeof *g);
    *g = (pool_geom){.B = x->shape[0], .C = x->shape[1], .H = x->shape[2], .W = x->shape[3],
                     .k = kernel, .s = stride, .pad = padding};
    g->Ho = g->H + 2 * g->pad >= g->k ? (g->H + 2 * g->pad - g->k) / g->s + 1 : 0;
    g->Wo = g->W + 2 * g->pad >= g->k ? (g->W + 2 * g->pad - g->k) / g->s + 1 : 0;
    if (g->Ho < 1 || g->Wo < 1) {
        vg_set_error("%s: kernel %d larger than the padded input %s (padding %d)", op, kernel, sx, padding);
        return NULL;
    }
    int64_t npp, nhv;            /* max pooling's positions and padded plane are 32-bit offsets */
    vg_maxpool_scratch(g->H, g->W, g->k, g->s, g->pad, g->Wo, &npp, &nhv);
    if (g->H * g->W > INT32_MAX || npp > INT32_MAX) {
        vg_set_error("%s: a plane of %s has more than 2^31 elements", op, sx);
        return NULL;
    }
    return g;
}

/* the window of output index o along an axis of n input taps: [*lo, *hi) clipped to the image */
static inline void window(int64_t o, int64_t s, int64_t pad, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
    int64_t a = o * s - pad, b = a + k;
    *lo = a < 0 ? 0 : a;
    *hi = b > n ? n : b;
}

static bool big(const pool_geom *g) { return g->B * g->C * g->Ho * g->Wo * g->k * g->k > 65536; }

/* ------------------------------------------------------------------ max pooling */
static void max_pool2d_backward(vg_node *n, const vg_tensor *gy) {
    const pool_geom *g = n->ctx;
    const int64_t HW = g->H * g->W, P = g->Ho * g->Wo;
    const real *dy = vg_data(gy);
    vg_tensor *dx = vg_zeros(VG_DIMS(g->B, g->C, g->H, g->W));
    real *d = vg_data(dx);
    #pragma omp parallel for schedule(static) if (big(g))
    for (int64_t plane = 0; plane < g->B * g->C; plane++)
        for (int64_t o = 0; o < P; o++) d[plane * HW + g->argmax[plane * P + o]] += dy[plane * P + o];
    vg_accumulate_grad_owned(n->inputs[0], dx);
}

vg_tensor *vg_max_pool2d_fn(vg_tensor *x, int kernel, int stride, int padding) {
    if (!x) return NULL;
    pool_geom *g = pool_check("max_pool2d", x, kernel, stride, padding);
    if (!g) return NULL;
    const int64_t HW = g->H * g->W, P = g->Ho * g->Wo;
    g->argmax = vg_arena_alloc(sizeof(int32_t) * (size_t)(g->B * g->C * P));
    vg_tensor *xc = vg_contiguous_raw(x), *y = vg_empty(VG_DIMS(g->B, g->C, g->Ho, g->Wo));
    const real *X = vg_data(xc);
    real *Y = vg_data(y);
    /* one plane per call of the row kernel (simd/pool.h), with its scratch per thread */
    const vg_row_ops *rows = vg_rows();
    const int nt = big(g) ? omp_get_max_threads() : 1;
    int64_t npp, nhv;
    vg_maxpool_scratch(g->H, g->W, g->k, g->s, g->pad, g->Wo, &npp, &nhv);
    real *pp = vg_arena_alloc(sizeof(real) * (size_t)(nt * npp)), *hv = vg_arena_alloc(sizeof(real) * (size_t)(nt * nhv));
    int32_t *hd = vg_arena_alloc(sizeof(int32_t) * (size_t)(nt * nhv));
    #pragma omp parallel for schedule(static) if (big(g))
    for (int64_t plane = 0; plane < g->B * g->C; plane++) {
        const int64_t t = big(g) ? omp_get_thread_num() : 0;
        rows->maxpool_plane(X + plane * HW, g->H, g->W, g->k, g->s, g->pad, g->Ho, g->Wo, pp + t * npp,
                            hv + t * nhv, hd + t * nhv, Y + plane * P, g->argmax + plane * P);
    }
    if (vg_needs_grad(1, &x)) {
        vg_node *n = vg_record(y, "max_pool2d", max_pool2d_backward, 1, &x);
        n->ctx = g;
    }
    return y;
}

/* ------------------------------------------------------------------ average pooling */
static void avg_pool2d_backward(vg_node *n, const vg_tensor *gy) {
    const pool_geom *g = n->ctx;
    const int64_t HW = g->H * g->W, P = g->Ho * g->Wo;
    const real kk = (real)(g->k * g->k);
    const real *dy = vg_data(gy);
    vg_tensor *dx = vg_zeros(VG_DIMS(g->B, g->C, g->H, g->W));
    real *d = vg_data(dx);
    #pragma omp parallel for schedule(static) if (big(g))
    for (int64_t plane = 0; plane < g->B * g->C; plane++) {
        real *dp = d + plane * HW;
        for (int64_t i = 0; i < g->Ho; i++) {
            int64_t y0, y1;
            window(i, g->s, g->pad, g->k, g->H, &y0, &y1);
            for (int64_t j = 0; j < g->Wo; j++) {
                int64_t x0, x1;
                window(j, g->s, g->pad, g->k, g->W, &x0, &x1);
                const real gv = dy[plane * P + i * g->Wo + j] / kk;
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++) dp[iy * g->W + ix] += gv;
            }
        }
    }
    vg_accumulate_grad_owned(n->inputs[0], dx);
}

vg_tensor *vg_avg_pool2d_fn(vg_tensor *x, int kernel, int stride, int padding) {
    if (!x) return NULL;
    pool_geom *g = pool_check("avg_pool2d", x, kernel, stride, padding);
    if (!g) return NULL;
    const int64_t HW = g->H * g->W, P = g->Ho * g->Wo;
    const double kk = (double)(g->k * g->k);
    vg_tensor *xc = vg_contiguous_raw(x), *y = vg_empty(VG_DIMS(g->B, g->C, g->Ho, g->Wo));
    const real *X = vg_data(xc);
    real *Y = vg_data(y);
    #pragma omp parallel for schedule(static) if (big(g))
    for (int64_t plane = 0; plane < g->B * g->C; plane++) {
        const real *xp = X + plane * HW;
        for (int64_t i = 0; i < g->Ho; i++) {
            int64_t y0, y1;
            window(i, g->s, g->pad, g->k, g->H, &y0, &y1);
            for (int64_t j = 0; j < g->Wo; j++) {
                int64_t x0, x1;
                window(j, g->s, g->pad, g->k, g->W, &x0, &x1);
                double acc = 0;                          /* in double, in scan order */
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++) acc += (double)xp[iy * g->W + ix];
                Y[plane * P + i * g->Wo + j] = (real)(acc / kk);
            }
        }
    }
    if (vg_needs_grad(1, &x)) {
        vg_node *n = vg_record(y, "avg_pool2d", avg_pool2d_backward, 1, &x);
        n->ctx = g;
    }
    return y;
}

/* ------------------------------------------------------------------ global average pooling */
/* y[b, c] = mean over (H, W) of x[b, c] (torch: x.mean((2, 3)), adaptive_avg_pool2d(x, 1) flattened);
 * a reduction the autograd engine already differentiates (dx = dy / (H·W) everywhere) */
vg_tensor *vg_global_avg_pool2d_fn(vg_tensor *x) {
    if (!x) return NULL;
    if (x->ndim != 4) {
        char sx[96];
        vg_shape_str(x, sx, sizeof sx);
        vg_set_error("global_avg_pool2d: input %s must be 4-d (B, C, H, W)", sx);
        return NULL;
    }
    return vg_mean(x, 2, (const int[]){2, 3}, false);
}
