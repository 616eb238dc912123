/* gradcheck_ops.c — gradcheck cases for the autograd ops: each op contiguous, on a
 * non-contiguous (transposed or narrowed) input, and with broadcasting where meaningful. */
#include "gradcheck.h"

/* ---- binary ops: mode 0 plain, 1 first operand transposed (stored (4,3), used as (3,4)), 2 broadcast */
typedef struct { vg_tensor *(*op)(vg_tensor *, vg_tensor *); int mode; } bin_ctx;
static vg_tensor *f_binary(vg_tensor *const *in, void *ctx) {
    const bin_ctx *c = ctx;
    vg_tensor *a = c->mode == 1 ? vg_transpose(in[0], 0, 1) : in[0];
    return c->op(a, in[1]);
}
#define BINARY_CASES(NAME, FN, LO, HI)                                                                  \
    static bin_ctx NAME##_c0 = {FN, 0}, NAME##_c1 = {FN, 1}, NAME##_c2 = {FN, 2};                       \
    GC_REGISTER(NAME##_0, {#NAME, "contiguous", f_binary, &NAME##_c0, 2, {GC_IN(3, 4), GC_IN_RANGE(LO, HI, 3, 4)}}) \
    GC_REGISTER(NAME##_1, {#NAME, "transposed a", f_binary, &NAME##_c1, 2, {GC_IN(4, 3), GC_IN_RANGE(LO, HI, 3, 4)}}) \
    GC_REGISTER(NAME##_2, {#NAME, "broadcast", f_binary, &NAME##_c2, 2, {GC_IN(2, 3, 4), GC_IN_RANGE(LO, HI, 3, 1)}})
BINARY_CASES(add, vg_add, 0, 0)
BINARY_CASES(sub, vg_sub, 0, 0)
BINARY_CASES(mul, vg_mul, 0, 0)
BINARY_CASES(div, vg_div, 0.5, 2.0)
/* add_into: b is made a step temporary first (1.5·b), as in a residual connection */
static vg_tensor *add_into_tmp(vg_tensor *a, vg_tensor *b) { return vg_add_into(a, vg_mul_scalar(b, 1.5)); }
static bin_ctx add_into_c0 = {add_into_tmp, 0}, add_into_c1 = {add_into_tmp, 1};
GC_REGISTER(add_into_0, {"add_into", "over a temporary", f_binary, &add_into_c0, 2, {GC_IN(3, 4), GC_IN(3, 4)}})
GC_REGISTER(add_into_1, {"add_into", "transposed a (falls back to add)", f_binary, &add_into_c1, 2, {GC_IN(4, 3), GC_IN(3, 4)}})

/* ---- unary ops: mode 0 plain, 1 on a transposed view */
typedef struct { vg_tensor *(*op)(vg_tensor *); int mode; } un_ctx;
static vg_tensor *f_unary(vg_tensor *const *in, void *ctx) {
    const un_ctx *c = ctx;
    return c->op(c->mode ? vg_transpose(in[0], 0, 1) : in[0]);
}
#define UNARY_CASES(NAME, FN, LO, HI)                                                                   \
    static un_ctx NAME##_c0 = {FN, 0}, NAME##_c1 = {FN, 1};                                             \
    GC_REGISTER(NAME##_0, {#NAME, "contiguous", f_unary, &NAME##_c0, 1, {GC_IN_RANGE(LO, HI, 3, 4)}})   \
    GC_REGISTER(NAME##_1, {#NAME, "transposed", f_unary, &NAME##_c1, 1, {GC_IN_RANGE(LO, HI, 5, 3)}})
static vg_tensor *add_s(vg_tensor *a) { return vg_add_scalar(a, 0.75); }
static vg_tensor *mul_s(vg_tensor *a) { return vg_mul_scalar(a, -1.5); }
static vg_tensor *pow_s(vg_tensor *a) { return vg_pow_scalar(a, 2.5); }
UNARY_CASES(neg, vg_neg, 0, 0)
UNARY_CASES(add_scalar, add_s, 0, 0)
UNARY_CASES(mul_scalar, mul_s, 0, 0)
UNARY_CASES(pow, pow_s, 0.5, 2.0)
UNARY_CASES(exp, vg_exp, 0, 0)
UNARY_CASES(log, vg_log, 0.5, 2.0)
UNARY_CASES(sqrt, vg_sqrt, 0.5, 2.0)
UNARY_CASES(rsqrt, vg_rsqrt, 0.5, 2.0)
UNARY_CASES(tanh, vg_tanh, 0, 0)
UNARY_CASES(relu, vg_relu, 0, 0)

/* ---- reductions */
typedef struct { int which, naxes, axes[3]; bool keepdim, transposed; } red_ctx;
static vg_tensor *f_reduce(vg_tensor *const *in, void *ctx) {
    const red_ctx *c = ctx;
    vg_tensor *a = c->transposed ? vg_transpose(in[0], 0, 2) : in[0];
    switch (c->which) {
    case 0: return vg_sum(a, c->naxes, c->axes, c->keepdim);
    case 1: return vg_mean(a, c->naxes, c->axes, c->keepdim);
    default: return vg_max(a, c->naxes, c->axes, c->keepdim);
    }
}
#define REDUCE_CASES(NAME, W)                                                                           \
    static red_ctx NAME##_c0 = {W, 1, {1}, false, false}, NAME##_c1 = {W, 2, {0, 2}, true, false},     \
                   NAME##_c2 = {W, 0, {0}, false, false}, NAME##_c3 = {W, 1, {-1}, false, true};       \
    GC_REGISTER(NAME##_0, {#NAME, "axis 1", f_reduce, &NAME##_c0, 1, {GC_IN(2, 3, 4)}})               \
    GC_REGISTER(NAME##_1, {#NAME, "axes 0,2 keepdim", f_reduce, &NAME##_c1, 1, {GC_IN(2, 3, 4)}})     \
    GC_REGISTER(NAME##_2, {#NAME, "all", f_reduce, &NAME##_c2, 1, {GC_IN(2, 3, 4)}})                  \
    GC_REGISTER(NAME##_3, {#NAME, "axis -1 transposed", f_reduce, &NAME##_c3, 1, {GC_IN(4, 3, 2)}})
REDUCE_CASES(sum, 0)
REDUCE_CASES(mean, 1)
REDUCE_CASES(max, 2)

/* ---- matmul */
typedef struct { int mode; } mm_ctx;
static vg_tensor *f_matmul(vg_tensor *const *in, void *ctx) {
    const mm_ctx *c = ctx;
    if (c->mode == 1) return vg_matmul(vg_transpose(in[0], -1, -2), in[1]);   /* Aᵀ as a strided view */
    if (c->mode == 2) return vg_matmul(in[0], vg_transpose(in[1], -1, -2));
    return vg_matmul(in[0], in[1]);
}
static mm_ctx mm0 = {0}, mm1 = {1}, mm2 = {2};
GC_REGISTER(mm_a, {"matmul", "2-d", f_matmul, &mm0, 2, {GC_IN(3, 4), GC_IN(4, 5)}})
GC_REGISTER(mm_b, {"matmul", "batched", f_matmul, &mm0, 2, {GC_IN(2, 3, 4), GC_IN(2, 4, 5)}})
GC_REGISTER(mm_c, {"matmul", "broadcast batch", f_matmul, &mm0, 2, {GC_IN(2, 1, 3, 4), GC_IN(3, 4, 2)}})
GC_REGISTER(mm_d, {"matmul", "3-d @ 2-d", f_matmul, &mm0, 2, {GC_IN(2, 3, 4), GC_IN(4, 5)}})
GC_REGISTER(mm_e, {"matmul", "transposed a", f_matmul, &mm1, 2, {GC_IN(2, 4, 3), GC_IN(2, 4, 5)}})
GC_REGISTER(mm_f, {"matmul", "transposed b", f_matmul, &mm2, 2, {GC_IN(3, 4), GC_IN(5, 4)}})
GC_REGISTER(mm_g, {"matmul", "vector @ matrix", f_matmul, &mm0, 2, {GC_IN(4), GC_IN(4, 3)}})
GC_REGISTER(mm_h, {"matmul", "matrix @ vector", f_matmul, &mm0, 2, {GC_IN(2, 3, 4), GC_IN(4)}})

/* ---- views (each followed by a multiply so the gradient is not uniform) */
static vg_tensor *scale_by_position(vg_tensor *t) {
    vg_tensor *w = vg_arange(1, 1 + (double)vg_numel(t), 1);
    return vg_mul(t, vg_reshape(w, t->ndim, t->shape));
}
static vg_tensor *f_reshape(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_reshape(in[0], VG_DIMS(4, -1))); }
static vg_tensor *f_reshape_copy(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_reshape(vg_transpose(in[0], 0, 1), VG_DIMS(12))); }
static vg_tensor *f_view(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_view(in[0], VG_DIMS(2, 2, 6))); }
static vg_tensor *f_permute(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_permute(in[0], (int[]){2, 0, 1})); }
static vg_tensor *f_transpose(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_transpose(in[0], 0, 2)); }
static vg_tensor *f_narrow(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_narrow(in[0], 1, 1, 2)); }
static vg_tensor *f_select(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_select(in[0], -1, 2)); }
static vg_tensor *f_expand(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_expand(in[0], VG_DIMS(2, 3, 4))); }
static vg_tensor *f_unsqueeze(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_unsqueeze(in[0], 1)); }
static vg_tensor *f_squeeze(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_squeeze(in[0], 1)); }
static vg_tensor *f_flatten(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_flatten(in[0], 1, 2)); }
static vg_tensor *f_contig(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_contiguous(vg_transpose(in[0], 0, 1))); }
static vg_tensor *f_concat(vg_tensor *const *in, void *ctx) { return scale_by_position(vg_concat(3, in, 1)); }
static vg_tensor *f_concat_t(vg_tensor *const *in, void *ctx) {
    vg_tensor *parts[2] = {vg_transpose(in[0], 0, 1), in[1]};
    return scale_by_position(vg_concat(2, parts, 0));
}
GC_REGISTER(v_reshape, {"reshape", "view", f_reshape, NULL, 1, {GC_IN(2, 3, 4)}})
GC_REGISTER(v_reshape2, {"reshape", "copy (transposed)", f_reshape_copy, NULL, 1, {GC_IN(3, 4)}})
GC_REGISTER(v_view, {"view", "contiguous", f_view, NULL, 1, {GC_IN(4, 6)}})
GC_REGISTER(v_permute, {"permute", "(2,0,1)", f_permute, NULL, 1, {GC_IN(2, 3, 4)}})
GC_REGISTER(v_transpose, {"transpose", "0<->2", f_transpose, NULL, 1, {GC_IN(2, 3, 4)}})
GC_REGISTER(v_narrow, {"narrow", "dim 1 [1,3)", f_narrow, NULL, 1, {GC_IN(2, 4, 3)}})
GC_REGISTER(v_select, {"select", "dim -1 index 2", f_select, NULL, 1, {GC_IN(2, 3, 4)}})
GC_REGISTER(v_expand, {"expand", "stride-0 axes", f_expand, NULL, 1, {GC_IN(3, 1)}})
GC_REGISTER(v_unsqueeze, {"unsqueeze", "dim 1", f_unsqueeze, NULL, 1, {GC_IN(3, 4)}})
GC_REGISTER(v_squeeze, {"squeeze", "dim 1", f_squeeze, NULL, 1, {GC_IN(3, 1, 4)}})
GC_REGISTER(v_flatten, {"flatten", "dims 1..2", f_flatten, NULL, 1, {GC_IN(2, 3, 4)}})
GC_REGISTER(v_contig, {"contiguous", "transposed", f_contig, NULL, 1, {GC_IN(3, 4)}})
GC_REGISTER(v_concat, {"concat", "3 inputs dim 1", f_concat, NULL, 3, {GC_IN(2, 1, 3), GC_IN(2, 2, 3), GC_IN(2, 3, 3)}})
GC_REGISTER(v_concat_t, {"concat", "transposed input", f_concat_t, NULL, 2, {GC_IN(3, 2), GC_IN(1, 3)}})
