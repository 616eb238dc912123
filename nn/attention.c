/* attention.c — multi-head attention: the fused core (vg_attention_fn for self-attention,
 * vg_attention_cross_fn for R queries over N tokens) and timm's Attention module (vg_mhsa: qkv
 * Linear → core → proj Linear → dropout).
 *
 * Core, timm layout. Self-attention: qkv (B, N, 3·D), D = H·hd; the last dim is (3, H, hd), so for
 * batch b and head h the (N, hd) matrices Q, K, V are read in place with row stride 3·D:
 *   Q = qkv[b, :, 0·D + h·hd …],  K = qkv[b, :, 1·D + h·hd …],  V = qkv[b, :, 2·D + h·hd …]
 * Cross: q (B, R, D) and kv (B, N, 2·D) laid out (2, H, hd): Q = q[b, :, h·hd …] (R rows, stride
 * D), K and V as above with row stride 2·D (a ViT's last block, R = 1: the class token's query).
 * forward, per (b, h):   S = Q Kᵀ · scale          (R, N), scale = hd^-½; R = N for self
 *                        A = softmax(S) over rows  (saved, (B, H, R, N))
 *                        Â = A ⊙ M                 dropout mask M (train and attn_drop > 0)
 *                        O = Â V                   (R, hd) written to out[b, :, h·hd …]
 * backward, per (b, h):  dV = Âᵀ dO
 *                        dÂ = dO Vᵀ,  dA = dÂ ⊙ M
 *                        dS = A ⊙ (dA − rowsum(dA ⊙ A))      (softmax backward)
 *                        dQ = dS K · scale,  dK = dSᵀ Q · scale
 * The (b, h) pairs are independent: OpenMP runs over them, each writing its own slots of out
 * (forward) or of the input gradients (backward), so results do not depend on the thread count.
 * The small GEMMs (65×65×64 for ViT on CIFAR) go through vg_gemm, single-threaded inside (under
 * autocast vg_gemm_bf16: bf16 inputs, FP32 sums; softmax and its backward stay FP32).
 * LSA (vg_attention_lsa_fn): scale = exp(s) for a learned s, and the diagonal S_ii = −∞ before the
 * softmax (A_ii then set to exactly 0); dS_ii = 0 follows from A_ii = 0, and
 *   ds = Σ_ij dS_ij S_ij = Σ_i ⟨Q_i, dQ_i⟩   (dQ = dS K · scale), per (b, h), summed in order. */
#include "nn.h"
#include "gemm/gemm.h"
#include "tensor/lanes.h"
#include "simd/simd.h"
#include <math.h>
#include <string.h>

typedef struct {
    int64_t B, N, R, H, hd, D;   /* R query rows, N keys and values */
    double scale;
    const real *q, *k, *v;       /* image 0, head 0: Q (R rows), K and V (N rows) */
    int ldq, ldkv;               /* their row strides (self: both 3D; cross: D and 2D) */
    real *attn;                  /* A (B, H, R, N): softmax weights, before dropout */
    real *mask, *dropped;        /* M and Â = A ⊙ M, or NULL without dropout */
    bool bf16;                   /* autocast at forward: the four products take bf16 inputs */
    bool diag;                   /* LSA: query row i does not see key i (N > 1) */
    vg_tensor *log_scale;        /* LSA: the learned log-scale (1), or NULL */
} attn_ctx;

/* ------------------------------------------------------------------ backward */
/* dQ, dK, dV (same layout and strides as Q, K, V) of every (b, h) pair from dout (B, R, D) */
static void attention_grads(const attn_ctx *c, const real *dout, real *dq, real *dk, real *dv, double *dscale) {
    const int64_t B = c->B, N = c->N, R = c->R, H = c->H, hd = c->hd, D = c->D, RN = R * N;
    const int ldq = c->ldq, ldkv = c->ldkv;
    const real alpha = (real)c->scale;
    const vg_arena_mark mark = vg_arena_get_mark();                 /* dS scratch: freed below */
    real *scratch = vg_arena_alloc(sizeof(real) * (size_t)(B * H * RN + 1));
    double *ds_part = dscale ? vg_arena_alloc(sizeof(double) * (size_t)(B * H)) : NULL;
    #pragma omp parallel for schedule(static) if (B * H > 1 && B * H * RN * hd > 65536)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        const int64_t qo = b * R * ldq + h * hd, kvo = b * N * ldkv + h * hd;
        const real *Q = c->q + qo, *K = c->k + kvo, *V = c->v + kvo;
        real *dQ = dq + qo, *dK = dk + kvo, *dV = dv + kvo;
        const real *dO = dout + b * R * D + h * hd;                 /* (R, hd), row stride D */
        const real *A = c->attn + bh * RN;
        const real *Ahat = c->dropped ? c->dropped + bh * RN : A;
        real *dS = scratch + bh * RN;
        /* dV = Âᵀ dO */
        vg_amp_gemm(c->bf16, 1, 0, (int)N, (int)hd, (int)R, 1, Ahat, (int)N, dO, (int)D, 0, dV, ldkv);
        /* dÂ = dO Vᵀ, then through the dropout mask: dA = dÂ ⊙ M */
        vg_amp_gemm(c->bf16, 0, 1, (int)R, (int)N, (int)hd, 1, dO, (int)D, V, ldkv, 0, dS, (int)N);
        if (c->mask) { const real *M = c->mask + bh * RN; for (int64_t i = 0; i < RN; i++) dS[i] *= M[i]; }
        /* dS = A ⊙ (dA − rowsum(dA ⊙ A)) */
        for (int64_t i = 0; i < R; i++) {
            const real *ar = A + i * N;
            real *sr = dS + i * N;
            const real dot = (real)vg_dot_lanes(sr, ar, N);
            for (int64_t j = 0; j < N; j++) sr[j] = ar[j] * (sr[j] - dot);
        }
        /* dQ = dS K · scale,  dK = dSᵀ Q · scale */
        vg_amp_gemm(c->bf16, 0, 0, (int)R, (int)hd, (int)N, alpha, dS, (int)N, K, ldkv, 0, dQ, ldq);
        vg_amp_gemm(c->bf16, 1, 0, (int)N, (int)hd, (int)R, alpha, dS, (int)N, Q, ldq, 0, dK, ldkv);
        if (ds_part) {                                              /* ds = Σ_i ⟨Q_i, dQ_i⟩ */
            double s = 0;
            for (int64_t i = 0; i < R; i++) for (int64_t d = 0; d < hd; d++) s += (double)Q[i * ldq + d] * dQ[i * ldq + d];
            ds_part[bh] = s;
        }
    }
    if (dscale) { *dscale = 0; for (int64_t bh = 0; bh < B * H; bh++) *dscale += ds_part[bh]; }
    vg_arena_release(mark);
}

/* the log-scale's gradient (LSA), into its .grad */
static void accumulate_dscale(vg_node *n, int input, double ds) {
    vg_tensor *g = vg_empty(VG_DIMS(1));
    vg_data(g)[0] = (real)ds;
    vg_accumulate_grad_owned(n->inputs[input], g);
}

static void self_attention_backward(vg_node *n, const vg_tensor *g) {
    const attn_ctx *c = n->ctx;
    vg_tensor *dqkv = vg_empty(VG_DIMS(c->B, c->N, 3 * c->D));     /* every element written once */
    real *d = vg_data(dqkv);
    const bool ls = c->log_scale && vg_input_needs_grad(n, 1);
    double ds = 0;
    attention_grads(c, vg_data(g), d, d + c->D, d + 2 * c->D, ls ? &ds : NULL);
    vg_accumulate_grad_owned(n->inputs[0], dqkv);
    if (ls) accumulate_dscale(n, 1, ds);
}

static void cross_attention_backward(vg_node *n, const vg_tensor *g) {
    const attn_ctx *c = n->ctx;
    vg_tensor *dq = vg_empty(VG_DIMS(c->B, c->R, c->D)), *dkv = vg_empty(VG_DIMS(c->B, c->N, 2 * c->D));
    const bool ls = c->log_scale && vg_input_needs_grad(n, 2);
    double ds = 0;
    attention_grads(c, vg_data(g), vg_data(dq), vg_data(dkv), vg_data(dkv) + c->D, ls ? &ds : NULL);
    if (vg_input_needs_grad(n, 0)) vg_accumulate_grad_owned(n->inputs[0], dq);
    if (vg_input_needs_grad(n, 1)) vg_accumulate_grad_owned(n->inputs[1], dkv);
    if (ls) accumulate_dscale(n, 2, ds);
}

/* ------------------------------------------------------------------ forward */
/* The core on c (sizes, operands, scale set): draws the dropout mask, computes A and out. */
static vg_tensor *attention_forward(attn_ctx *c, double attn_drop, bool train, vg_rng *rng, vg_tensor **attn_tensor) {
    const int64_t B = c->B, N = c->N, R = c->R, H = c->H, hd = c->hd, D = c->D, RN = R * N;
    const bool drop = train && attn_drop > 0;
    vg_tensor *attn = vg_empty(VG_DIMS(B, H, R, N));
    c->attn = vg_data(attn);
    if (drop) {        /* the mask is drawn up front, per sample, so it does not depend on threads */
        c->mask = vg_arena_alloc(sizeof(real) * (size_t)(B * H * RN + 1));
        c->dropped = vg_arena_alloc(sizeof(real) * (size_t)(B * H * RN + 1));
        vg_dropout_mask(c->mask, B, H * RN, attn_drop, rng);
    }
    vg_tensor *out = vg_empty(VG_DIMS(B, R, D));
    real *op = vg_data(out);
    const real alpha = (real)c->scale;
    const int ldq = c->ldq, ldkv = c->ldkv;
    const vg_row_ops *rows = vg_rows();
    #pragma omp parallel for schedule(static) if (B * H > 1 && B * H * RN * hd > 65536)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        const real *Q = c->q + b * R * ldq + h * hd, *K = c->k + b * N * ldkv + h * hd, *V = c->v + b * N * ldkv + h * hd;
        real *A = c->attn + bh * RN, *Ahat = A;
        /* S = Q Kᵀ · scale, A = softmax(S) */
        vg_amp_gemm(c->bf16, 0, 1, (int)R, (int)N, (int)hd, alpha, Q, ldq, K, ldkv, 0, A, (int)N);
        if (c->diag) for (int64_t i = 0; i < R; i++) A[i * N + i] = -INFINITY;    /* LSA: not itself */
        rows->softmax_rows(A, R, N);   /* simd/softmax.h */
        if (c->diag) for (int64_t i = 0; i < R; i++) A[i * N + i] = 0;            /* exactly (e^x clamps at −87) */
        if (drop) {
            const real *M = c->mask + bh * RN;
            Ahat = c->dropped + bh * RN;
            for (int64_t i = 0; i < RN; i++) Ahat[i] = A[i] * M[i];
        }
        /* O = Â V, written as out[b, :, h·hd …] (heads merged back, row stride D) */
        vg_amp_gemm(c->bf16, 0, 0, (int)R, (int)hd, (int)N, 1, Ahat, (int)N, V, ldkv, 0, op + b * R * D + h * hd, (int)D);
    }
    *attn_tensor = attn;
    return out;
}

/* the checks both entry points share; D = per-token width of Q */
static bool check_heads_and_drop(int64_t D, int heads, double attn_drop, bool train, vg_rng *rng, const char *shapes) {
    if (heads < 1 || D % heads != 0) { vg_set_error("attention: dim %lld of %s is not divisible by %d heads", (long long)D, shapes, heads); return false; }
    if (!(attn_drop >= 0 && attn_drop < 1)) { vg_set_error("attention: attn_drop %g is not in [0, 1)", attn_drop); return false; }
    if (train && attn_drop > 0 && !rng) { vg_set_error("attention: attn_drop %g in training needs an rng (got NULL)", attn_drop); return false; }
    return true;
}

/* a context for both entry points: sizes and scale set, operands and saved tensors still NULL */
static attn_ctx *new_ctx(int64_t B, int64_t N, int64_t R, int64_t D, int heads) {
    attn_ctx *c = vg_arena_alloc(sizeof *c);
    memset(c, 0, sizeof *c);
    c->B = B; c->N = N; c->R = R; c->H = heads; c->hd = D / heads; c->D = D;
    c->scale = 1.0 / sqrt((double)c->hd);
    c->bf16 = vg_autocast_enabled();
    return c;
}

/* LSA's arguments, checked; sets c's scale and mask */
static bool lsa_setup(attn_ctx *c, vg_tensor *log_scale, bool diag_mask) {
    if (log_scale) {
        if (vg_numel(log_scale) != 1) { vg_set_error("attention: the LSA log-scale must have one element (got %lld)", (long long)vg_numel(log_scale)); return false; }
        const double s = (double)vg_data(vg_contiguous_raw(log_scale))[0];
        if (!(fabs(s) < 80)) { vg_set_error("attention: the LSA log-scale %g is not a finite number in (-80, 80)", s); return false; }
        c->scale = exp(s);
        c->log_scale = log_scale;
    }
    c->diag = diag_mask && c->N > 1;
    return true;
}

vg_tensor *vg_attention_fn(vg_tensor *qkv, int heads, double attn_drop, bool train, vg_rng *rng,
                           vg_tensor **attn_out) {
    return vg_attention_lsa_fn(qkv, NULL, false, heads, attn_drop, train, rng, attn_out);
}

vg_tensor *vg_attention_lsa_fn(vg_tensor *qkv, vg_tensor *log_scale, bool diag_mask, int heads, double attn_drop,
                               bool train, vg_rng *rng, vg_tensor **attn_out) {
    if (attn_out) *attn_out = NULL;
    if (!qkv) return NULL;
    char s[96], what[112]; vg_shape_str(qkv, s, sizeof s);
    snprintf(what, sizeof what, "qkv %s", s);
    if (qkv->ndim != 3 || qkv->shape[2] % 3 != 0) { vg_set_error("attention: qkv %s must be (B, N, 3·D)", s); return NULL; }
    const int64_t B = qkv->shape[0], N = qkv->shape[1], D = qkv->shape[2] / 3;
    if (!check_heads_and_drop(D, heads, attn_drop, train, rng, what)) return NULL;
    attn_ctx *c = new_ctx(B, N, N, D, heads);
    if (!lsa_setup(c, log_scale, diag_mask)) return NULL;
    vg_tensor *qc = vg_contiguous_raw(qkv);
    c->q = vg_data(qc); c->k = c->q + D; c->v = c->q + 2 * D;
    c->ldq = c->ldkv = (int)(3 * D);
    vg_tensor *attn, *out = attention_forward(c, attn_drop, train, rng, &attn);
    vg_tensor *inputs[2] = {qkv, log_scale};
    const int ni = log_scale ? 2 : 1;
    if (vg_needs_grad(ni, inputs)) {
        vg_node *n = vg_record(out, "attention", self_attention_backward, ni, inputs);
        n->saved[0] = qc; n->saved[1] = attn;
        n->ctx = c;
    }
    if (attn_out) *attn_out = attn;   /* read-only: the backward pass uses the same buffer */
    return out;
}

vg_tensor *vg_attention_cross_fn(vg_tensor *q, vg_tensor *kv, int heads, double attn_drop, bool train,
                                 vg_rng *rng, vg_tensor **attn_out) {
    return vg_attention_cross_lsa_fn(q, kv, NULL, false, heads, attn_drop, train, rng, attn_out);
}

vg_tensor *vg_attention_cross_lsa_fn(vg_tensor *q, vg_tensor *kv, vg_tensor *log_scale, bool diag_mask, int heads,
                                     double attn_drop, bool train, vg_rng *rng, vg_tensor **attn_out) {
    if (attn_out) *attn_out = NULL;
    if (!q || !kv) return NULL;
    char sq[96], skv[96], what[224]; vg_shape_str(q, sq, sizeof sq); vg_shape_str(kv, skv, sizeof skv);
    snprintf(what, sizeof what, "q %s (kv %s)", sq, skv);
    if (q->ndim != 3 || kv->ndim != 3 || q->shape[0] != kv->shape[0] || kv->shape[2] != 2 * q->shape[2]) {
        vg_set_error("attention: q %s and kv %s must be (B, R, D) and (B, N, 2·D)", sq, skv);
        return NULL;
    }
    const int64_t B = q->shape[0], R = q->shape[1], N = kv->shape[1], D = q->shape[2];
    if (!check_heads_and_drop(D, heads, attn_drop, train, rng, what)) return NULL;
    attn_ctx *c = new_ctx(B, N, R, D, heads);
    if (!lsa_setup(c, log_scale, diag_mask)) return NULL;
    if (c->diag && R > N) { vg_set_error("attention: the diagonal mask needs the %lld queries among the %lld tokens", (long long)R, (long long)N); return NULL; }
    vg_tensor *qc = vg_contiguous_raw(q), *kvc = vg_contiguous_raw(kv);
    c->q = vg_data(qc); c->k = vg_data(kvc); c->v = c->k + D;
    c->ldq = (int)D; c->ldkv = (int)(2 * D);
    vg_tensor *attn, *out = attention_forward(c, attn_drop, train, rng, &attn);
    vg_tensor *inputs[3] = {q, kv, log_scale};
    const int ni = log_scale ? 3 : 2;
    if (vg_needs_grad(ni, inputs)) {
        vg_node *n = vg_record(out, "attention", cross_attention_backward, ni, inputs);
        n->saved[0] = qc; n->saved[1] = kvc; n->saved[2] = attn;
        n->ctx = c;
    }
    if (attn_out) *attn_out = attn;
    return out;
}

/* ------------------------------------------------------------------ module: timm Attention */
void vg_mhsa_init(vg_mhsa *m, int dim, int heads, bool qkv_bias, double attn_drop, double proj_drop, vg_rng *rng) {
    memset(m, 0, sizeof *m);
    m->heads = heads; m->attn_drop = attn_drop; m->proj_drop = proj_drop;
    vg_linear_init(&m->qkv, dim, 3 * dim, qkv_bias, rng);
    vg_linear_init(&m->proj, dim, dim, true, rng);
}

void vg_mhsa_params(vg_mhsa *m, vg_params *p, const char *prefix) {
    char name[128];
    snprintf(name, sizeof name, "%s%sqkv", prefix && prefix[0] ? prefix : "", prefix && prefix[0] ? "." : "");
    vg_linear_params(&m->qkv, p, name);
    snprintf(name, sizeof name, "%s%sproj", prefix && prefix[0] ? prefix : "", prefix && prefix[0] ? "." : "");
    vg_linear_params(&m->proj, p, name);
}

vg_tensor *vg_mhsa_forward(vg_mhsa *m, vg_tensor *x, int64_t rows, bool train, vg_rng *rng, vg_tensor **attn_out) {
    if (attn_out) *attn_out = NULL;
    vg_tensor *a, *w = m->qkv.weight, *b = m->qkv.bias;
    if (rows) {
        const int64_t D = w ? w->shape[1] : 0;
        vg_tensor *q = vg_linear_fn(vg_narrow(x, 1, 0, rows), vg_narrow(w, 0, 0, D),
                                    b ? vg_narrow(b, 0, 0, D) : NULL);                    /* (B, rows, D) */
        vg_tensor *kv = vg_linear_fn(x, vg_narrow(w, 0, D, 2 * D), b ? vg_narrow(b, 0, D, 2 * D) : NULL); /* (B, T, 2D) */
        a = vg_attention_cross_lsa_fn(q, kv, m->log_scale, m->diag_mask, m->heads, m->attn_drop, train, rng, attn_out); /* (B, rows, D) */
    } else {
        vg_tensor *qkv = vg_linear_forward(&m->qkv, x);                                   /* (B, T, 3D) */
        a = vg_attention_lsa_fn(qkv, m->log_scale, m->diag_mask, m->heads, m->attn_drop, train, rng, attn_out); /* (B, T, D) */
    }
    vg_tensor *y = vg_linear_forward(&m->proj, a);
    return vg_dropout_fn(y, m->proj_drop, train, rng);
}

void vg_mhsa_free(vg_mhsa *m) {
    vg_linear_free(&m->qkv);
    vg_linear_free(&m->proj);
}
