/* ops_elementwise.c — broadcasting binary ops and unary ops, each forward with its backward.
 *
 * Binary ops broadcast as NumPy/PyTorch (align trailing dimensions, size 1 stretches). Their
 * backward produces a gradient of the broadcast shape; vg_accumulate_grad sums it back to each
 * input's shape. Gradients handed to backward rules are always contiguous. */
#include "autograd.h"
#include "tensor/strided.h"
#include <math.h>
#include <string.h>

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV } binary_op;

static inline real apply_binary(binary_op op, real x, real y) {
    switch (op) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    default:    return x / y;
    }
}

/* one row: o[j] = x[j·xs] ∘ y[j·ys]; the op and the common strides (1, or 0 for a broadcast
 * operand) chosen outside the loop, so each loop vectorises */
#define BINARY_ROW(EXPR)                                                                   \
    do {                                                                                   \
        if (xs == 1 && ys == 1) for (int64_t j = 0; j < len; j++) { real u = x[j], v = y[j]; o[j] = (EXPR); } \
        else if (xs == 1 && ys == 0) { const real v = y[0]; for (int64_t j = 0; j < len; j++) { real u = x[j]; o[j] = (EXPR); } } \
        else if (xs == 0 && ys == 1) { const real u = x[0]; for (int64_t j = 0; j < len; j++) { real v = y[j]; o[j] = (EXPR); } } \
        else for (int64_t j = 0; j < len; j++) { real u = x[j * xs], v = y[j * ys]; o[j] = (EXPR); } \
    } while (0)
static void binary_row(binary_op op, real *restrict o, const real *x, int64_t xs, const real *y, int64_t ys,
                       int64_t len) {
    switch (op) {
    case B_ADD: BINARY_ROW(u + v); break;
    case B_SUB: BINARY_ROW(u - v); break;
    case B_MUL: BINARY_ROW(u * v); break;
    case B_DIV: BINARY_ROW(u / v); break;
    }
}
#undef BINARY_ROW

/* out = a ∘ b with broadcasting; no graph. */
static vg_tensor *binary_raw(binary_op op, const vg_tensor *a, const vg_tensor *b) {
    int64_t shape[VG_MAX_DIMS], sa[VG_MAX_DIMS], sb[VG_MAX_DIMS];
    if (a->ndim > VG_MAX_DIMS || b->ndim > VG_MAX_DIMS) { vg_set_error("too many dimensions"); return NULL; }
    int nd = vg_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, shape);
    if (nd < 0) {
        char s1[96], s2[96], msg[256];
        vg_shape_str(a, s1, sizeof s1); vg_shape_str(b, s2, sizeof s2);
        snprintf(msg, sizeof msg, "%s", vg_error());
        vg_set_error("shapes %s and %s are not broadcastable: %s", s1, s2, msg);
        return NULL;
    }
    vg_tensor *out = vg_empty(nd, shape);
    int64_t n = vg_numel(out);
    real *o = vg_data(out);
    if (vg_same_shape(a, b) && vg_is_contiguous(a) && vg_is_contiguous(b)) {
        const real *x = vg_data(a), *y = vg_data(b);
        const int64_t CH = 16384;
        #pragma omp parallel for schedule(static) if (n > 4 * CH)
        for (int64_t c = 0; c < (n + CH - 1) / CH; c++)
            binary_row(op, o + c * CH, x + c * CH, 1, y + c * CH, 1, n - c * CH < CH ? n - c * CH : CH);
        return out;
    }
    if (nd == 0) { o[0] = apply_binary(op, vg_data(a)[0], vg_data(b)[0]); return out; }
    vg_broadcast_strides(a, nd, shape, sa);
    vg_broadcast_strides(b, nd, shape, sb);
    strided_iter it = {nd, shape, {out->strides, sa, sb}, {0, a->offset, b->offset}, 3};
    const real *x = a->storage->data, *y = b->storage->data;
    const int64_t len = shape[nd - 1], xs = sa[nd - 1], ys = sb[nd - 1];
    FOR_EACH_ROW_PARALLEL(it, n > 65536, binary_row(op, o + o_[0], x + o_[1], xs, y + o_[2], ys, len));
    return out;
}

/* ---- add: d/da = 1, d/db = 1 ----
 * g (the output's gradient) is final when this rule runs and nothing reads it afterwards, so b
 * adopts it as its gradient when it has none (no copy); a gets its own copy (sum). */
static void add_backward(vg_node *n, const vg_tensor *g) {
    vg_accumulate_grad(n->inputs[0], g);
    vg_accumulate_grad_owned(n->inputs[1], (vg_tensor *)g);
}
/* ---- sub: d/da = 1, d/db = −1 ---- */
static void sub_backward(vg_node *n, const vg_tensor *g) {
    vg_accumulate_grad(n->inputs[0], g);
    if (vg_input_needs_grad(n, 1)) vg_accumulate_grad(n->inputs[1], vg_neg((vg_tensor *)g));
}
/* ---- mul: d/da = b, d/db = a ---- */
static void mul_backward(vg_node *n, const vg_tensor *g) {
    vg_tensor *a = n->inputs[0], *b = n->inputs[1];
    if (vg_input_needs_grad(n, 0)) vg_accumulate_grad(a, binary_raw(B_MUL, g, b));
    if (vg_input_needs_grad(n, 1)) vg_accumulate_grad(b, binary_raw(B_MUL, g, a));
}
/* ---- div: out = a/b; d/da = 1/b, d/db = −a/b² = −out/b ---- */
static void div_backward(vg_node *n, const vg_tensor *g) {
    vg_tensor *b = n->inputs[1];
    if (vg_input_needs_grad(n, 0)) vg_accumulate_grad(n->inputs[0], binary_raw(B_DIV, g, b));
    if (vg_input_needs_grad(n, 1)) {
        vg_tensor *t = binary_raw(B_MUL, g, n->out);
        t = binary_raw(B_DIV, t, b);
        vg_accumulate_grad(b, vg_neg(t));
    }
}

static vg_tensor *binary(binary_op op, vg_tensor *a, vg_tensor *b, const char *name, vg_backward_fn bw) {
    if (!a || !b) return NULL;
    vg_tensor *out = binary_raw(op, a, b);
    vg_tensor *in[2] = {a, b};
    if (out && vg_needs_grad(2, in)) vg_record(out, name, bw, 2, in)->reads_out = op == B_DIV;  /* div_backward: out / b */
    return out;
}

vg_tensor *vg_add(vg_tensor *a, vg_tensor *b) { return binary(B_ADD, a, b, "add", add_backward); }

/* a + b stored over b (see autograd.h): saves one activation per residual connection. */
vg_tensor *vg_add_into(vg_tensor *a, vg_tensor *b) {
    if (!a || !b) return NULL;
    const bool b_needed = b->storage->consumers > 0 || (b->node ? b->node->reads_out : b->requires_grad);
    if (!vg_same_shape(a, b) || !vg_is_contiguous(a) || !vg_is_contiguous(b) ||
        b->persistent || b->storage->persistent || a->storage == b->storage || b_needed)
        return vg_add(a, b);
    const real *x = vg_data(a);
    real *y = vg_data(b);
    const int64_t n = vg_numel(b);
    #pragma omp parallel for schedule(static) if (n > (1 << 18))
    for (int64_t i = 0; i < n; i++) y[i] = x[i] + y[i];
    vg_tensor *out = vg_view_raw(b, b->ndim, b->shape, b->strides, b->offset);
    out->requires_grad = false;
    vg_tensor *inputs[2] = {a, b};
    if (vg_needs_grad(2, inputs)) vg_record(out, "add", add_backward, 2, inputs);
    return out;
}
vg_tensor *vg_sub(vg_tensor *a, vg_tensor *b) { return binary(B_SUB, a, b, "sub", sub_backward); }
vg_tensor *vg_mul(vg_tensor *a, vg_tensor *b) { return binary(B_MUL, a, b, "mul", mul_backward); }
vg_tensor *vg_div(vg_tensor *a, vg_tensor *b) { return binary(B_DIV, a, b, "div", div_backward); }

/* ================================================================ unary ops */
typedef enum { U_NEG, U_ADDS, U_MULS, U_POW, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_TANH, U_RELU } unary_op;

/* The loops below are written once per op (the switch is outside the element loop), so that the
 * cheap ops (neg, scalar add/mul, relu, sqrt) vectorise; the math per element is the same. */
#define MAP_ELEMENTS(expr)                                                        \
    do {                                                                          \
        _Pragma("omp parallel for schedule(static) if (len > 65536)")             \
        for (int64_t i = 0; i < len; i++) { const real x = xp[i]; o[i] = (expr); } \
    } while (0)

static void apply_unary(unary_op op, const real *xp, real *o, int64_t len, double s) {
    const real rs = (real)s;
    switch (op) {
    case U_NEG:   MAP_ELEMENTS(-x); break;
    case U_ADDS:  MAP_ELEMENTS(x + rs); break;
    case U_MULS:  MAP_ELEMENTS(x * rs); break;
    case U_POW:   MAP_ELEMENTS((real)pow((double)x, s)); break;
    case U_EXP:   MAP_ELEMENTS((real)exp((double)x)); break;
    case U_LOG:   MAP_ELEMENTS((real)log((double)x)); break;
    case U_SQRT:  MAP_ELEMENTS((real)sqrt((double)x)); break;
    case U_RSQRT: MAP_ELEMENTS((real)(1.0 / sqrt((double)x))); break;
    case U_TANH:  MAP_ELEMENTS((real)tanh((double)x)); break;
    case U_RELU:  MAP_ELEMENTS(x > 0 ? x : 0); break;
    }
}

/* o = g · op'(x) for the incoming gradient g, y the op's output */
#define MAP_GRAD(expr)                                                            \
    do {                                                                           \
        _Pragma("omp parallel for schedule(static) if (len > 65536)")              \
        for (int64_t i = 0; i < len; i++) {                                        \
            const real x = xp[i], y = yp[i], g = gp[i];                            \
            (void)x; (void)y;                                                      \
            o[i] = (expr);                                                         \
        }                                                                          \
    } while (0)

static void unary_grad(unary_op op, const real *xp, const real *yp, const real *gp, real *o,
                       int64_t len, double s) {
    switch (op) {
    case U_NEG:   MAP_GRAD(-g); break;
    case U_ADDS:  MAP_GRAD(g); break;
    case U_MULS:  MAP_GRAD(g * (real)s); break;
    case U_POW:   MAP_GRAD(g * (real)(s * pow((double)x, s - 1))); break;
    case U_EXP:   MAP_GRAD(g * y); break;
    case U_LOG:   MAP_GRAD(g * (1 / x)); break;
    case U_SQRT:  MAP_GRAD(g * (real)(0.5 / (double)y)); break;
    case U_RSQRT: MAP_GRAD(g * (real)(-0.5 * (double)y * (double)y * (double)y)); break;
    case U_TANH:  MAP_GRAD(g * (1 - y * y)); break;
    case U_RELU:  MAP_GRAD(x > 0 ? g : 0); break;
    }
}

static const char *unary_names[] = {"neg", "add_scalar", "mul_scalar", "pow", "exp", "log",
                                    "sqrt", "rsqrt", "tanh", "relu"};

static void unary_backward(vg_node *n, const vg_tensor *g) {
    vg_tensor *x = vg_contiguous_raw(n->inputs[0]);
    vg_tensor *gi = vg_empty_like(g);
    unary_grad((unary_op)n->ints[0], vg_data(x), vg_data(n->out), vg_data(g), vg_data(gi),
               vg_numel(g), n->scalars[0]);
    vg_accumulate_grad(n->inputs[0], gi);
}

static vg_tensor *unary(unary_op op, vg_tensor *a, double s) {
    if (!a) return NULL;
    vg_tensor *out = vg_empty(a->ndim, a->shape);
    vg_tensor *x = vg_contiguous_raw(a);
    apply_unary(op, vg_data(x), vg_data(out), vg_numel(out), s);
    if (vg_needs_grad(1, &a)) {
        vg_node *n = vg_record(out, unary_names[op], unary_backward, 1, &a);
        n->reads_out = op == U_EXP || op == U_SQRT || op == U_RSQRT || op == U_TANH;  /* unary_grad's y */
        n->ints[0] = op;
        n->scalars[0] = s;
    }
    return out;
}

vg_tensor *vg_neg(vg_tensor *a) { return unary(U_NEG, a, 0); }
vg_tensor *vg_add_scalar(vg_tensor *a, double s) { return unary(U_ADDS, a, s); }
vg_tensor *vg_mul_scalar(vg_tensor *a, double s) { return unary(U_MULS, a, s); }
vg_tensor *vg_pow_scalar(vg_tensor *a, double p) { return unary(U_POW, a, p); }
vg_tensor *vg_exp(vg_tensor *a) { return unary(U_EXP, a, 0); }
vg_tensor *vg_log(vg_tensor *a) { return unary(U_LOG, a, 0); }
vg_tensor *vg_sqrt(vg_tensor *a) { return unary(U_SQRT, a, 0); }
vg_tensor *vg_rsqrt(vg_tensor *a) { return unary(U_RSQRT, a, 0); }
vg_tensor *vg_tanh(vg_tensor *a) { return unary(U_TANH, a, 0); }
vg_tensor *vg_relu(vg_tensor *a) { return unary(U_RELU, a, 0); }
