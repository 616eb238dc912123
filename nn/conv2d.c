/* conv2d.c — 2-D convolution, NCHW, any stride, zero padding, optional bias: im2col + GEMM.
 *
 *   x (B, C, H, W), w (O, C, kH, kW), b (O) → y (B, O, Ho, Wo)
 *   Ho = (H + 2·pad − kH) / stride + 1,  Wo likewise;  P = Ho·Wo,  K = C·kH·kW
 *
 * im2col writes one matrix `cols` (K, B·P) for the whole batch: row (c, ki, kj) — the order of
 * w.reshape(O, K) — column (b, oh, ow) holds x[b, c, oh·s − pad + ki, ow·s − pad + kj] (0 outside).
 *   forward:   y[b] (O, P)  = Wm (O, K) · cols[:, b·P : (b+1)·P]      one batched GEMM, + b[o]
 *   backward:  dYt (O, B·P) = dy with its batch axis moved inside     (a transpose copy)
 *              dW  += dYt · colsᵀ         one GEMM (NT) over K = B·P
 *              db  += row sums of dYt
 *              dcols = Wmᵀ · dYt          one GEMM (TN), then col2im adds each column back
 *                                          into the pixels it was read from.
 * Both loops work out once per kernel offset which output rows and columns read inside the image,
 * so each row is a plain (strided) copy or add with no test per element. Under autocast
 * (autograd/autocast.c) the three GEMMs take bf16 inputs with FP32 sums. */
#include "nn.h"
#include "gemm/gemm.h"
#include <math.h>
#include <string.h>

typedef struct {
    int64_t B, C, H, W, O, kH, kW, s, pad, Ho, Wo;
    bool bf16;                   /* autocast at forward: the three GEMMs take bf16 inputs */
} conv_geom;

/* The output columns ow whose input column iw = ow·s − pad + kj lies in [0, W): [*lo, *hi), so the
 * loops below run without a bounds test per element (outside it im2col writes 0, col2im adds
 * nothing). The same for rows with kH, H, Ho. */
static void valid_range(int64_t n_out, int64_t n_in, int64_t s, int64_t pad, int64_t k, int64_t *lo, int64_t *hi) {
    const int64_t first = pad - k, last = n_in - 1 + pad - k;   /* need first ≤ ow·s ≤ last */
    int64_t l = first <= 0 ? 0 : (first + s - 1) / s, h = last < 0 ? 0 : last / s + 1;
    if (h > n_out) h = n_out;
    *lo = l < h ? l : h;
    *hi = h;
}

/* d[i] = src[i·s] for i < n; the strides 1 and 2 (the stems' 3×3 stride-2 convs) as literals so
 * that the compiler vectorises them */
static inline void copy_strided(real *restrict d, const real *restrict src, int64_t n, int64_t s) {
    if (s == 1) memcpy(d, src, sizeof(real) * (size_t)n);
    else if (s == 2) for (int64_t i = 0; i < n; i++) d[i] = src[2 * i];
    else for (int64_t i = 0; i < n; i++) d[i] = src[i * s];
}
/* x[i·s] += src[i] for i < n (distinct elements: the order of additions into each is unchanged) */
static inline void add_strided(real *restrict x, const real *restrict src, int64_t n, int64_t s) {
    if (s == 1) for (int64_t i = 0; i < n; i++) x[i] += src[i];
    else if (s == 2) for (int64_t i = 0; i < n; i++) x[2 * i] += src[i];
    else for (int64_t i = 0; i < n; i++) x[i * s] += src[i];
}

/* Both loops go through cols row by row, (c, ki, kj), and through each row in order, in chunks
 * of BCH images: cols is the big one (vit-micro's 3×3 stem conv: 288 rows × 8,192 columns, 9.4 MB);
 * written per (image, channel), as 288 interleaved streams of 256 bytes with a bounds test per
 * element, its im2col took 1.9–2.0 ms a step on Zen 4, now 1.1–1.6 (docs/benchmarks.md). */
enum { BCH = 16 };

/* cols (K, B·P) from x (B, C, H, W) contiguous. Parallel over (row, chunk of images): each writes
 * its own stretch of one row. */
static void im2col(const real *x, real *cols, const conv_geom *g) {
    const int64_t P = g->Ho * g->Wo, BP = g->B * P, s = g->s, Wo = g->Wo, K = g->C * g->kH * g->kW;
    const int64_t chunks = (g->B + BCH - 1) / BCH;
    #pragma omp parallel for collapse(2) schedule(static) if (g->B * g->C * g->H * g->W * g->kH > 65536)
    for (int64_t row = 0; row < K; row++)
        for (int64_t ch = 0; ch < chunks; ch++) {
            const int64_t c = row / (g->kH * g->kW), ki = row / g->kW % g->kH, kj = row % g->kW;
            int64_t oh0, oh1, ow0, ow1;
            valid_range(g->Ho, g->H, s, g->pad, ki, &oh0, &oh1);
            valid_range(Wo, g->W, s, g->pad, kj, &ow0, &ow1);
            const int64_t b1 = ch * BCH + BCH < g->B ? ch * BCH + BCH : g->B;
            for (int64_t b = ch * BCH; b < b1; b++) {
                const real *xc = x + (b * g->C + c) * g->H * g->W;
                real *dst = cols + row * BP + b * P;
                memset(dst, 0, sizeof(real) * (size_t)(oh0 * Wo));                    /* rows above */
                for (int64_t oh = oh0; oh < oh1; oh++) {
                    real *d = dst + oh * Wo;
                    for (int64_t ow = 0; ow < ow0; ow++) d[ow] = 0;
                    copy_strided(d + ow0, xc + (oh * s - g->pad + ki) * g->W + ow0 * s - g->pad + kj, ow1 - ow0, s);
                    for (int64_t ow = ow1; ow < Wo; ow++) d[ow] = 0;
                }
                memset(dst + oh1 * Wo, 0, sizeof(real) * (size_t)((g->Ho - oh1) * Wo));      /* below */
            }
        }
}

/* dx (B, C, H, W) += col2im(dcols (K, B·P)). Parallel over (c, chunk of images): each plane (b, c)
 * has one writer, and its contributions are added in the fixed (ki, kj, oh, ow) order. */
static void col2im(const real *dcols, real *dx, const conv_geom *g) {
    const int64_t P = g->Ho * g->Wo, BP = g->B * P, s = g->s, Wo = g->Wo;
    const int64_t chunks = (g->B + BCH - 1) / BCH;
    #pragma omp parallel for collapse(2) schedule(static) if (g->B * g->C * g->H * g->W * g->kH > 65536)
    for (int64_t c = 0; c < g->C; c++)
        for (int64_t ch = 0; ch < chunks; ch++) {
            const int64_t b1 = ch * BCH + BCH < g->B ? ch * BCH + BCH : g->B;
            for (int64_t ki = 0; ki < g->kH; ki++) {
                int64_t oh0, oh1;
                valid_range(g->Ho, g->H, s, g->pad, ki, &oh0, &oh1);
                for (int64_t kj = 0; kj < g->kW; kj++) {
                    const real *src = dcols + ((c * g->kH + ki) * g->kW + kj) * BP;
                    int64_t ow0, ow1;
                    valid_range(Wo, g->W, s, g->pad, kj, &ow0, &ow1);
                    for (int64_t b = ch * BCH; b < b1; b++) {
                        real *xc = dx + (b * g->C + c) * g->H * g->W;
                        for (int64_t oh = oh0; oh < oh1; oh++)
                            add_strided(xc + (oh * s - g->pad + ki) * g->W + ow0 * s - g->pad + kj,
                                        src + b * P + oh * Wo + ow0, ow1 - ow0, s);
                    }
                }
            }
        }
}

/* ------------------------------------------------------------------ backward */
/* saved: [0] cols (K, B·P), [1] W contiguous; ctx: the geometry */
static void conv2d_backward(vg_node *n, const vg_tensor *gy) {
    const conv_geom *g = n->ctx;
    const int64_t P = g->Ho * g->Wo, BP = g->B * P, K = g->C * g->kH * g->kW;
    const real *dy = vg_data(gy);                            /* (B, O, P) */
    /* dYt (O, B·P): dYt[o, b·P + p] = dy[b, o, p] */
    real *dyt = vg_arena_alloc(sizeof(real) * (size_t)(g->O * BP + 1));
    #pragma omp parallel for schedule(static) if (g->O * BP > 65536)
    for (int64_t o = 0; o < g->O; o++)
        for (int64_t b = 0; b < g->B; b++)
            memcpy(dyt + o * BP + b * P, dy + (b * g->O + o) * P, sizeof(real) * (size_t)P);
    if (vg_input_needs_grad(n, 1))                           /* dW (O, K) += dYt · colsᵀ */
        vg_accumulate_grad_gemm(n->inputs[1], g->bf16, 0, 1, (int)g->O, (int)K, (int)BP, 1,
                                dyt, (int)BP, vg_data(n->saved[0]), (int)BP);
    if (n->n_inputs > 2 && vg_input_needs_grad(n, 2)) {      /* db[o] += Σ_{b,p} dy[b, o, p] */
        vg_tensor *db = vg_empty(1, (int64_t[]){g->O});
        real *dbp = vg_data(db);
        /* each o's sum runs over j in order, in double; eight o's side by side, so that eight
         * independent chains of additions overlap instead of one waiting on the last */
        enum { OB = 8 };
        #pragma omp parallel for schedule(static) if (g->O * BP > 65536)
        for (int64_t o0 = 0; o0 < g->O; o0 += OB) {
            const real *r = dyt + o0 * BP;
            if (g->O - o0 >= OB) {
                double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
                for (int64_t j = 0; j < BP; j++) {
                    a0 += (double)r[j];          a1 += (double)r[BP + j];
                    a2 += (double)r[2 * BP + j]; a3 += (double)r[3 * BP + j];
                    a4 += (double)r[4 * BP + j]; a5 += (double)r[5 * BP + j];
                    a6 += (double)r[6 * BP + j]; a7 += (double)r[7 * BP + j];
                }
                const double a[OB] = {a0, a1, a2, a3, a4, a5, a6, a7};
                for (int l = 0; l < OB; l++) dbp[o0 + l] = (real)a[l];
                continue;
            }
            for (int64_t o = o0; o < g->O; o++) {
                double acc = 0;
                for (int64_t j = 0; j < BP; j++) acc += (double)dyt[o * BP + j];
                dbp[o] = (real)acc;
            }
        }
        vg_accumulate_grad(n->inputs[2], db);
    }
    if (vg_input_needs_grad(n, 0)) {                         /* dcols (K, B·P) = Wmᵀ · dYt, col2im */
        real *dcols = vg_arena_alloc(sizeof(real) * (size_t)(K * BP + 1));
        vg_amp_gemm(g->bf16, 1, 0, (int)K, (int)BP, (int)g->O, 1, vg_data(n->saved[1]), (int)K, dyt, (int)BP, 0, dcols, (int)BP);
        vg_tensor *dx = vg_zeros(VG_DIMS(g->B, g->C, g->H, g->W));
        col2im(dcols, vg_data(dx), g);
        vg_accumulate_grad_owned(n->inputs[0], dx);
    }
}

/* ------------------------------------------------------------------ forward */
vg_tensor *vg_conv2d_fn(vg_tensor *x, vg_tensor *w, vg_tensor *b, int stride, int padding) {
    if (!x || !w) return NULL;
    char sx[96], sw[96];
    vg_shape_str(x, sx, sizeof sx); vg_shape_str(w, sw, sizeof sw);
    if (x->ndim != 4 || w->ndim != 4) { vg_set_error("conv2d: input %s and weight %s must both be 4-d (NCHW, OCkk)", sx, sw); return NULL; }
    if (x->shape[1] != w->shape[1]) { vg_set_error("conv2d: input %s has %lld channels, weight %s expects %lld", sx, (long long)x->shape[1], sw, (long long)w->shape[1]); return NULL; }
    if (stride < 1 || padding < 0) { vg_set_error("conv2d: stride %d must be ≥ 1 and padding %d ≥ 0", stride, padding); return NULL; }
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0])) { vg_set_error("conv2d: bias must be (%lld) for weight %s", (long long)w->shape[0], sw); return NULL; }
    conv_geom *g = vg_arena_alloc(sizeof *g);
    *g = (conv_geom){.B = x->shape[0], .C = x->shape[1], .H = x->shape[2], .W = x->shape[3], .O = w->shape[0],
                     .kH = w->shape[2], .kW = w->shape[3], .s = stride, .pad = padding,
                     .bf16 = vg_autocast_enabled()};
    g->Ho = g->H + 2 * g->pad >= g->kH ? (g->H + 2 * g->pad - g->kH) / g->s + 1 : 0;
    g->Wo = g->W + 2 * g->pad >= g->kW ? (g->W + 2 * g->pad - g->kW) / g->s + 1 : 0;
    if (g->Ho < 1 || g->Wo < 1) { vg_set_error("conv2d: kernel %s larger than the padded input %s (padding %d)", sw, sx, padding); return NULL; }
    const int64_t P = g->Ho * g->Wo, BP = g->B * P, K = g->C * g->kH * g->kW;

    vg_tensor *xc = vg_contiguous_raw(x), *wc = vg_contiguous_raw(w);
    vg_tensor *cols = vg_empty(VG_DIMS(K, BP));
    im2col(vg_data(xc), vg_data(cols), g);
    vg_tensor *y = vg_empty(VG_DIMS(g->B, g->O, g->Ho, g->Wo));
    real *Y = vg_data(y);
    if (b) {                                                 /* y[b, o, :] = bias[o], then += */
        vg_tensor *bc = vg_contiguous_raw(b);
        const real *bp = vg_data(bc);
        #pragma omp parallel for schedule(static) if (g->O * BP > 65536)
        for (int64_t i = 0; i < g->B * g->O; i++)
            for (int64_t p = 0; p < P; p++) Y[i * P + p] = bp[i % g->O];
    }
    /* y[b] (O, P) = Wm (O, K) · cols[:, b·P…] for every b: A shared (stride 0), B strided by P */
    vg_amp_gemm_batched(g->bf16, (int)g->B, 0, 0, (int)g->O, (int)P, (int)K, 1, vg_data(wc), (int)K, 0,
                    vg_data(cols), (int)BP, (long)P, b ? 1 : 0, Y, (int)P, (long)(g->O * P));
    vg_tensor *inputs[3] = {x, w, b};
    int n_in = b ? 3 : 2;
    if (vg_needs_grad(n_in, inputs)) {
        vg_node *n = vg_record(y, "conv2d", conv2d_backward, n_in, inputs);
        n->saved[0] = cols; n->saved[1] = wc;
        n->ctx = g;
    }
    return y;
}

/* ------------------------------------------------------------------ module */
/* nn.Conv2d.reset_parameters: W ~ kaiming_uniform(a=√5) = U(±1/√fan_in), b ~ U(±1/√fan_in),
 * fan_in = C·k·k */
void vg_conv2d_init(vg_conv2d *m, int in_ch, int out_ch, int kernel, int stride, int padding, bool bias, vg_rng *rng) {
    memset(m, 0, sizeof *m);
    m->stride = stride; m->padding = padding;
    m->weight = vg_param(VG_DIMS(out_ch, in_ch, kernel, kernel));
    vg_init_kaiming_uniform(m->weight, rng, sqrt(5.0));
    if (bias) {
        m->bias = vg_param(VG_DIMS(out_ch));
        int64_t fan_in = vg_fan_in(m->weight);
        double bound = fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 0.0;
        vg_init_uniform(m->bias, rng, -bound, bound);
    }
}

void vg_conv2d_params(vg_conv2d *m, vg_params *p, const char *prefix) {
    vg_params_add(p, prefix, "weight", m->weight, true);
    if (m->bias) vg_params_add(p, prefix, "bias", m->bias, false);
}

vg_tensor *vg_conv2d_forward(vg_conv2d *m, vg_tensor *x) {
    return vg_conv2d_fn(x, m->weight, m->bias, m->stride, m->padding);
}

void vg_conv2d_free(vg_conv2d *m) {
    vg_tensor_free(m->weight); vg_tensor_free(m->bias);
    m->weight = m->bias = NULL;
}
