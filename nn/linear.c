/* linear.c — y = x Wᵀ + b over the last dimension, any number of leading dims.
 *
 *   x (…, in) seen as X (R, in) with R = Π leading dims, W (out, in), b (out) → Y (R, out)
 *   forward:   Y  = X · Wᵀ + b          one GEMM (NT), bias pre-filled and added with beta = 1
 *   backward:  dX = dY · W              GEMM (NN)            (R, out)·(out, in) → (R, in)
 *              dW += dYᵀ · X            GEMM (TN), beta = 1  (out, R)·(R, in)   → (out, in)
 *              db += Σ_r dY[r, :]       column sums (by row chunks, vg_column_sums)
 * Under autocast (autograd/autocast.c, noted at forward) the three GEMMs take bf16 inputs with
 * FP32 sums (gemm/bf16_dp.c); the bias and its gradient stay FP32.
 * Also home of the two helpers the other layers share (column sums, GEMM into a gradient). */
#include "nn.h"
#include "gemm/gemm.h"
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ shared helpers */
double *vg_chunk_partials(int64_t rows, int64_t cols, int k) {
    size_t n = (size_t)(vg_row_chunks(rows) * cols * k);
    double *p = vg_arena_alloc(sizeof(double) * (n + 1));
    memset(p, 0, sizeof(double) * n);
    return p;
}

void vg_combine_chunks(const double *part, int64_t rows, int64_t cols, real *out, bool accumulate) {
    enum { CB = 64 };                               /* columns per task */
    const int64_t nchunks = vg_row_chunks(rows), nblocks = (cols + CB - 1) / CB;
    #pragma omp parallel for schedule(static) if (nchunks * cols > 32768)
    for (int64_t blk = 0; blk < nblocks; blk++) {
        const int64_t c0 = blk * CB, w = cols - c0 < CB ? cols - c0 : CB;
        double acc[CB] = {0};
        for (int64_t ch = 0; ch < nchunks; ch++) {
            const double *p = part + ch * cols + c0;
            for (int64_t j = 0; j < w; j++) acc[j] += p[j];
        }
        for (int64_t j = 0; j < w; j++)
            out[c0 + j] = accumulate ? (real)((double)out[c0 + j] + acc[j]) : (real)acc[j];
    }
}

void vg_column_sums(const real *x, int64_t rows, int64_t cols, real *out, bool accumulate) {
    const int64_t nchunks = vg_row_chunks(rows);
    const vg_arena_mark mark = vg_arena_get_mark();  /* the partials die here */
    double *part = vg_chunk_partials(rows, cols, 1);
    #pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t ch = 0; ch < nchunks; ch++) {
        double *p = part + ch * cols;
        const int64_t r1 = vg_chunk_end(ch, rows);
        for (int64_t r = ch * VG_ROW_CHUNK; r < r1; r++)
            for (int64_t j = 0; j < cols; j++) p[j] += (double)x[r * cols + j];
    }
    vg_combine_chunks(part, rows, cols, out, accumulate);
    vg_arena_release(mark);
}

void vg_accumulate_grad_gemm(vg_tensor *t, bool bf16, int transA, int transB, int M, int N, int K, real alpha,
                             const real *A, int lda, const real *B, int ldb) {
    if (!t || !t->requires_grad) return;
    if (t->grad) {                                  /* grads are contiguous: accumulate in place */
        vg_amp_gemm(bf16, transA, transB, M, N, K, alpha, A, lda, B, ldb, 1, vg_data(t->grad), N);
        return;
    }
    vg_tensor *g = vg_empty(t->ndim, t->shape);     /* first contribution: the engine adopts it */
    vg_amp_gemm(bf16, transA, transB, M, N, K, alpha, A, lda, B, ldb, 0, vg_data(g), N);
    vg_accumulate_grad_owned(t, g);
}

/* ------------------------------------------------------------------ backward */
/* saved: [0] X contiguous (…, in), [1] W contiguous (out, in); ints: R, in, out, bf16 (autocast) */
static void linear_backward(vg_node *n, const vg_tensor *g) {
    const vg_tensor *x = n->saved[0], *w = n->saved[1];
    const int R = (int)n->ints[0], in = (int)n->ints[1], out = (int)n->ints[2];
    const bool bf16 = n->ints[3];
    const real *dy = vg_data(g);                                    /* (R, out) */
    /* dX last: the op that runs next reads it, and then finds it in cache */
    if (n->n_inputs > 2 && vg_input_needs_grad(n, 2)) {             /* db += Σ_r dY[r, :] */
        vg_tensor *db = vg_empty(1, (int64_t[]){out});
        vg_column_sums(dy, R, out, vg_data(db), false);
        vg_accumulate_grad_owned(n->inputs[2], db);
    }
    if (vg_input_needs_grad(n, 1))                                  /* dW += dYᵀ · X */
        vg_accumulate_grad_gemm(n->inputs[1], bf16, 1, 0, out, in, R, 1, dy, out, vg_data(x), in);
    if (vg_input_needs_grad(n, 0)) {                                /* dX = dY · W */
        vg_tensor *dx = vg_empty(x->ndim, x->shape);
        vg_amp_gemm(bf16, 0, 0, R, in, out, 1, dy, out, vg_data(w), in, 0, vg_data(dx), in);
        vg_accumulate_grad_owned(n->inputs[0], dx);
    }
}

/* ------------------------------------------------------------------ forward */
vg_tensor *vg_linear_fn(vg_tensor *x, vg_tensor *w, vg_tensor *b) {
    if (!x || !w) return NULL;
    char sx[96], sw[96];
    vg_shape_str(x, sx, sizeof sx); vg_shape_str(w, sw, sizeof sw);
    if (w->ndim != 2) { vg_set_error("linear: weight %s must be 2-d (out, in)", sw); return NULL; }
    const int64_t out = w->shape[0], in = w->shape[1];
    if (x->ndim < 1 || x->shape[x->ndim - 1] != in) {
        vg_set_error("linear: input %s does not end in in_features = %lld (weight %s)", sx, (long long)in, sw);
        return NULL;
    }
    if (b && (b->ndim != 1 || b->shape[0] != out)) {
        char sb[96]; vg_shape_str(b, sb, sizeof sb);
        vg_set_error("linear: bias %s must be (%lld) for weight %s", sb, (long long)out, sw);
        return NULL;
    }
    vg_tensor *xc = vg_contiguous_raw(x), *wc = vg_contiguous_raw(w);
    const int64_t R = in ? vg_numel(x) / in : 0;
    int64_t yshape[VG_MAX_DIMS];
    memcpy(yshape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    yshape[x->ndim - 1] = out;
    vg_tensor *y = vg_empty(x->ndim, yshape);
    real *Y = vg_data(y);
    /* Y = X Wᵀ + b: the GEMM adds b as it stores each tile (no separate pass over Y) */
    const real *bp = b ? vg_data(vg_contiguous_raw(b)) : NULL;
    const bool bf16 = vg_autocast_enabled();
    vg_amp_gemm_bias(bf16, 0, 1, (int)R, (int)out, (int)in, 1, vg_data(xc), (int)in, vg_data(wc), (int)in, bp, Y, (int)out);
    vg_tensor *inputs[3] = {x, w, b};
    int n_in = b ? 3 : 2;
    if (vg_needs_grad(n_in, inputs)) {
        vg_node *n = vg_record(y, "linear", linear_backward, n_in, inputs);
        n->saved[0] = xc; n->saved[1] = wc;
        n->ints[0] = R; n->ints[1] = in; n->ints[2] = out; n->ints[3] = bf16;
    }
    return y;
}

/* ------------------------------------------------------------------ module */
/* nn.Linear.reset_parameters: W ~ kaiming_uniform(a=√5) = U(±1/√in), b ~ U(±1/√in) */
void vg_linear_init(vg_linear *m, int in, int out, bool bias, vg_rng *rng) {
    memset(m, 0, sizeof *m);
    m->weight = vg_param(VG_DIMS(out, in));
    vg_init_kaiming_uniform(m->weight, rng, sqrt(5.0));
    if (bias) {
        m->bias = vg_param(VG_DIMS(out));
        double bound = in > 0 ? 1.0 / sqrt((double)in) : 0.0;
        vg_init_uniform(m->bias, rng, -bound, bound);
    }
}

void vg_linear_params(vg_linear *m, vg_params *p, const char *prefix) {
    vg_params_add(p, prefix, "weight", m->weight, true);
    if (m->bias) vg_params_add(p, prefix, "bias", m->bias, false);
}

vg_tensor *vg_linear_forward(vg_linear *m, vg_tensor *x) { return vg_linear_fn(x, m->weight, m->bias); }

vg_tensor *vg_linear_gelu_forward(vg_linear *m, vg_tensor *x) {
    return vg_bias_gelu_fn(vg_linear_fn(x, m->weight, NULL), m->bias);
}

void vg_linear_free(vg_linear *m) {
    vg_tensor_free(m->weight); vg_tensor_free(m->bias);
    m->weight = m->bias = NULL;
}
