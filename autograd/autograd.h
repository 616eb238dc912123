/* autograd.h — define-by-run reverse-mode differentiation over vg_tensor.
 *
 * Every differentiable op, when grad mode is on and an input requires grad, records a vg_node:
 * its inputs, what it saved for backward, and its backward rule. vg_backward(loss) sorts the nodes
 * topologically and walks them in reverse, each rule accumulating (+=) into its inputs' .grad.
 * Backward rules run with grad mode off and may use the ops below freely. */
#ifndef VG_AUTOGRAD_H
#define VG_AUTOGRAD_H
#include "tensor/tensor.h"

#define VG_NODE_MAX_INPUTS 4
#define VG_NODE_MAX_SAVED 6

typedef struct vg_node vg_node;
/* Given the gradient of the node's output, accumulate into each input that requires grad. */
typedef void (*vg_backward_fn)(vg_node *node, const vg_tensor *grad_out);

struct vg_node {
    const char    *op;                               /* "add", "matmul", "layernorm", … */
    vg_backward_fn backward;
    vg_tensor     *out;                              /* the tensor this node produced */
    int            n_inputs;
    vg_tensor     *inputs[VG_NODE_MAX_INPUTS];
    vg_tensor     *saved[VG_NODE_MAX_SAVED];         /* tensors kept for backward */
    double         scalars[4];                       /* small saved values (eps, exponent…) */
    int64_t        ints[VG_MAX_DIMS * 2];            /* axes, permutations, offsets */
    void          *ctx;                              /* op-specific arena data */
    int            mark;                             /* engine bookkeeping */
    bool           reads_out;                        /* backward reads `out`'s values (tanh, exp,
                                                        sqrt, div): out must not be overwritten */
};

/* ---- grad mode ---- */
bool vg_grad_enabled(void);
void vg_no_grad_begin(void);        /* nests; no graph is recorded inside */
void vg_no_grad_end(void);

/* ---- bf16 autocast (autograd/autocast.c), as torch.autocast("cpu", dtype=torch.bfloat16) ----
 * While on, Linear, Conv2d and attention multiply bf16-rounded inputs with FP32 accumulation,
 * forward and backward; everything else stays FP32. Process-wide; set between steps. Returns false
 * (vg_error says why) when turning it on in the float64 build. */
bool vg_autocast_set(bool on);
bool vg_autocast_enabled(void);
/* vg_gemm / _bias / _batched, or their bf16 forms (gemm/bf16_dp.c) when bf16 is true: what an
 * op noted from vg_autocast_enabled() in its forward. */
void vg_amp_gemm(bool bf16, int transA, int transB, int M, int N, int K, real alpha, const real *A,
                 int lda, const real *B, int ldb, real beta, real *C, int ldc);
void vg_amp_gemm_bias(bool bf16, int transA, int transB, int M, int N, int K, real alpha,
                      const real *A, int lda, const real *B, int ldb, const real *bias, real *C, int ldc);
void vg_amp_gemm_batched(bool bf16, int batch, int transA, int transB, int M, int N, int K, real alpha,
                         const real *A, int lda, long strideA, const real *B, int ldb, long strideB,
                         real beta, real *C, int ldc, long strideC);

/* ---- recording (for op implementers) ---- */
/* Does an op with these inputs need a node? (grad mode on and some input requires grad) */
bool     vg_needs_grad(int n, vg_tensor *const *inputs);
/* Create the node for `out` with the given inputs; marks out->requires_grad. NULL-safe. */
vg_node *vg_record(vg_tensor *out, const char *op, vg_backward_fn backward, int n, vg_tensor *const *inputs);
/* grad += g, allocating .grad (zeros) on first use; sums g over broadcast axes to t's shape. */
void     vg_accumulate_grad(vg_tensor *t, const vg_tensor *g);
/* the same for a gradient g the caller has just created and hands over (it keeps no other
 * reference): when t has no gradient yet, g becomes t.grad with no copy */
void     vg_accumulate_grad_owned(vg_tensor *t, vg_tensor *g);
/* t's existing gradient buffer (contiguous, t's shape) for a rule that adds its contribution in
 * the same pass that computes it, or NULL when t has no gradient yet (then hand over a fresh
 * one with vg_accumulate_grad_owned) or needs none. Element i of the buffer is element i of t
 * in row-major order. Adding v to it with `grad[i] += v` gives the same bits as writing v to a
 * fresh tensor and accumulating that. */
real    *vg_grad_accumulator(vg_tensor *t);
static inline bool vg_input_needs_grad(const vg_node *n, int i) { return n->inputs[i]->requires_grad; }

/* ---- the engine ---- */
/* Backpropagate from `root`. grad_root NULL means ones (the usual scalar loss). Non-leaf grads are
 * reset first, so calling it twice after vg_zero_grad gives identical gradients. A non-leaf
 * tensor's .grad is working memory of the walk (rules hand buffers on, e.g. an add's inputs share
 * its output's buffer): read the gradients of leaves. Returns false
 * with vg_error() set if root is NULL or does not require grad. */
bool vg_backward(vg_tensor *root, const vg_tensor *grad_root);
void vg_zero_grad(vg_tensor *t);            /* grad := 0 (keeps the buffer) */
vg_tensor *vg_detach(vg_tensor *t);         /* same storage, no history, no grad */
/* Visit the nodes reachable from root in topological order (inputs first). */
int  vg_graph_nodes(vg_tensor *root, vg_node **out, int max);
/* Gradient-ready hook (data-parallel training starts summing a gradient over processes while
 * backward goes on, dist/): during vg_backward, fn(leaf, ctx) is called once for every persistent
 * leaf that requires grad and is an input of the graph, right after the last rule that takes it
 * as an input has run, so its .grad is final for this walk. The engine counts each leaf's
 * consumers before the walk. NULL removes the hook. */
typedef void (*vg_grad_ready_fn)(vg_tensor *leaf, void *ctx);
void vg_set_grad_ready_hook(vg_grad_ready_fn fn, void *ctx);

/* ---- op profile: where a training step's wall time goes (a user feature: ./train --profile) ----
 * While a profiled step runs (between vg_profile_step_begin and _end), every moment is charged to
 * one row: an op's forward (the time up to its vg_record, as ops record after computing), its
 * backward rule (the time inside it), the engine between rules ("backward: engine"), a phase the
 * caller names with vg_profile_phase (the time since the last charge), or "other" (what is left
 * at the step's end). A step's rows add up to its wall time. Rows are keyed by op name, first
 * input's shape and output shape. Off unless started; then each call costs two clock reads. */
bool vg_profile_start(int max_steps);           /* profile the next max_steps steps; clears rows */
void vg_profile_stop(void);                     /* off; frees the rows */
bool vg_profile_active(void);                   /* inside a profiled step */
void vg_profile_step_begin(void);
void vg_profile_phase(const char *name);        /* name: a string that outlives the profile */
void vg_profile_step_end(void);
typedef struct {
    const char *name;
    bool is_phase;                              /* a named phase (time in fwd_ms), not an op */
    int ndim, in_ndim;
    int64_t shape[VG_MAX_DIMS];                 /* the op's output shape */
    int64_t in_shape[VG_MAX_DIMS];              /* its first input's shape */
    double fwd_calls, bwd_calls;                /* per step */
    double fwd_ms, bwd_ms;                      /* mean per step */
    double median_ms;                           /* median over steps of fwd + bwd */
} vg_profile_row;
int  vg_profile_rows(vg_profile_row *out, int max);   /* rows in order of first appearance */
int  vg_profile_steps(void);                    /* profiled steps so far */
void vg_profile_report(FILE *f);                /* the rows as a table, largest first */
/* engine hooks */
void vg_profile_recorded_(const vg_node *n);
void vg_profile_rule_begin_(void);
void vg_profile_rule_end_(const vg_node *n);

/* ---- elementwise, with NumPy/PyTorch broadcasting ---- */
vg_tensor *vg_add(vg_tensor *a, vg_tensor *b);
/* a + b written over b's storage, for a residual connection x + f(x) (saves one activation per
 * residual): b's values are gone afterwards. It writes in place only when nothing can need them:
 * b is a contiguous arena tensor of a's shape, not a's storage, not a leaf that requires grad, no
 * recorded op took b's storage as an input (storage->consumers == 0; views included), and the op
 * that produced b does not read its output in backward (node->reads_out: tanh, exp, sqrt,
 * div do). A Linear's, dropout's or drop-path's output qualifies. Otherwise it is vg_add.
 * Gradients and values as vg_add. */
vg_tensor *vg_add_into(vg_tensor *a, vg_tensor *b);
vg_tensor *vg_sub(vg_tensor *a, vg_tensor *b);
vg_tensor *vg_mul(vg_tensor *a, vg_tensor *b);
vg_tensor *vg_div(vg_tensor *a, vg_tensor *b);
vg_tensor *vg_add_scalar(vg_tensor *a, double s);
vg_tensor *vg_mul_scalar(vg_tensor *a, double s);
vg_tensor *vg_neg(vg_tensor *a);
vg_tensor *vg_pow_scalar(vg_tensor *a, double p);
vg_tensor *vg_exp(vg_tensor *a);
vg_tensor *vg_log(vg_tensor *a);
vg_tensor *vg_sqrt(vg_tensor *a);
vg_tensor *vg_rsqrt(vg_tensor *a);
vg_tensor *vg_tanh(vg_tensor *a);
vg_tensor *vg_relu(vg_tensor *a);

/* ---- reductions over a set of axes (negative axes count from the end) ---- */
vg_tensor *vg_sum(vg_tensor *a, int naxes, const int *axes, bool keepdim);
vg_tensor *vg_mean(vg_tensor *a, int naxes, const int *axes, bool keepdim);
vg_tensor *vg_max(vg_tensor *a, int naxes, const int *axes, bool keepdim); /* grad to the first maximum */
vg_tensor *vg_sum_all(vg_tensor *a);
vg_tensor *vg_mean_all(vg_tensor *a);
/* Sum g over its broadcast axes so it has `ndim, shape` (the inverse of expand). No graph. */
vg_tensor *vg_sum_to_shape(const vg_tensor *g, int ndim, const int64_t *shape);

/* ---- matrix product: (…, M, K) @ (…, K, N), batch dims broadcast; 1-D operands as PyTorch ---- */
vg_tensor *vg_matmul(vg_tensor *a, vg_tensor *b);

/* ---- views (zero-copy; gradients are routed back to the viewed tensor) ---- */
vg_tensor *vg_reshape(vg_tensor *a, int ndim, const int64_t *shape);   /* copies only if it must; one -1 allowed */
vg_tensor *vg_view(vg_tensor *a, int ndim, const int64_t *shape);      /* error if not viewable */
vg_tensor *vg_permute(vg_tensor *a, const int *perm);
vg_tensor *vg_transpose(vg_tensor *a, int d0, int d1);
vg_tensor *vg_narrow(vg_tensor *a, int dim, int64_t start, int64_t length);
vg_tensor *vg_select(vg_tensor *a, int dim, int64_t index);             /* removes dim */
vg_tensor *vg_expand(vg_tensor *a, int ndim, const int64_t *shape);     /* -1 keeps a size */
vg_tensor *vg_unsqueeze(vg_tensor *a, int dim);
vg_tensor *vg_squeeze(vg_tensor *a, int dim);                          /* dim must have size 1 */
vg_tensor *vg_flatten(vg_tensor *a, int start_dim, int end_dim);
vg_tensor *vg_contiguous(vg_tensor *a);
vg_tensor *vg_concat(int n, vg_tensor *const *ts, int dim);

/* ---- gradient checking (a user feature): central differences in float64 ----
 * Only in the float64 library: compile your program with -DVG_DOUBLE (so `real` is double in
 * these headers) and link build/libvitgrad64.a (`make build/libvitgrad64.a`); see
 * examples/gradcheck_example.c and docs/layers.md. In the float32 library (build/libvitgrad.a)
 * vg_gradcheck checks nothing and returns ok = false with the message "vg_gradcheck needs the
 * float64 build: …": float32 finite differences are too noisy to tell a right rule from a wrong one. */
typedef vg_tensor *(*vg_gradcheck_fn)(vg_tensor *const *inputs, void *ctx);
typedef struct {
    bool   ok;
    double max_abs_err, max_rel_err;
    int    worst_input; int64_t worst_index;
    double worst_analytic, worst_numeric;
    char   message[256];
} vg_gradcheck_result;
/* Checks d(sum(f(inputs) * w))/d(input) for every input with requires_grad, w a fixed random
 * weight. Inputs must be persistent; stride-0 inputs are materialised before perturbation.
 * Passes when |analytic − numeric| ≤ atol + rtol·|numeric| everywhere. */
vg_gradcheck_result vg_gradcheck(vg_gradcheck_fn f, void *ctx, int n, vg_tensor **inputs,
                                 double eps, double atol, double rtol);
#define VG_GRADCHECK_EPS 1e-6
#define VG_GRADCHECK_ATOL 1e-5
#define VG_GRADCHECK_RTOL 1e-3
#endif
