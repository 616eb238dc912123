/* gradcheck_example.c — check the gradient of your own function against float64 finite
 * differences with vg_gradcheck.
 *
 * vg_gradcheck lives in the float64 library only: compile with -DVG_DOUBLE (so `real` is double
 * in the headers) and link build/libvitgrad64.a (the same sources compiled that way):
 *   make build/libvitgrad64.a
 *   cc -std=c11 -O2 -DVG_DOUBLE -I. examples/gradcheck_example.c build/libvitgrad64.a \
 *      -fopenmp -lstb -lpng -lz -lm -lpthread -o gradcheck_example
 * (`make test` builds it as build/gradcheck_example and runs it.) Against build/libvitgrad.a the
 * call returns ok = false with "vg_gradcheck needs the float64 build: …".
 *
 * Three checks: a composite of library ops (passes), a new op with a hand-written backward rule
 * (passes), and the same op with a wrong rule (must fail: a check that cannot fail proves nothing).
 * Exit status 0 when all three come out as expected. */
#include "autograd/autograd.h"
#include <string.h>

#ifndef VG_DOUBLE
#error "build this example with -DVG_DOUBLE and link build/libvitgrad64.a (vg_gradcheck is float64 only)"
#endif

/* 1. A composite: a two-layer MLP with swish, h = x·W1, s = h·sigmoid(h) = h / (1 + e^(−h)),
 * then tanh(s·W2). in: x (4, 6), W1 (6, 5), W2 (5, 3) → (4, 3). */
static vg_tensor *swish_mlp(vg_tensor *const *in, void *ctx) {
    vg_tensor *h = vg_matmul(in[0], in[1]);
    vg_tensor *s = vg_div(h, vg_add_scalar(vg_exp(vg_neg(h)), 1.0));
    return vg_tanh(vg_matmul(s, in[2]));
}

/* 2. A new op: softplus(x) = log(1 + e^x), forward computed without a graph, then one node with
 * its own rule: d softplus / dx = sigmoid(x) = 1 / (1 + e^(−x)), so grad_x += g / (1 + e^(−x)). */
static void softplus_backward(vg_node *n, const vg_tensor *g) {
    vg_tensor *x = n->inputs[0];
    vg_accumulate_grad(x, vg_div((vg_tensor *)g, vg_add_scalar(vg_exp(vg_neg(x)), 1.0)));
}
/* the same rule with a typical slip: e^x instead of e^(−x) (the derivative of the wrong function) */
static void softplus_backward_wrong(vg_node *n, const vg_tensor *g) {
    vg_tensor *x = n->inputs[0];
    vg_accumulate_grad(x, vg_div((vg_tensor *)g, vg_add_scalar(vg_exp(x), 1.0)));
}
static vg_tensor *softplus_op(vg_tensor *x, vg_backward_fn rule) {
    vg_no_grad_begin();
    vg_tensor *out = vg_log(vg_add_scalar(vg_exp(x), 1.0));
    vg_no_grad_end();
    if (out && vg_needs_grad(1, &x)) vg_record(out, "softplus", rule, 1, &x);
    return out;
}
/* softplus applied to a transposed view, to exercise strides as well */
static vg_tensor *softplus_right(vg_tensor *const *in, void *ctx) { return softplus_op(vg_transpose(in[0], 0, 1), softplus_backward); }
static vg_tensor *softplus_wrong(vg_tensor *const *in, void *ctx) { return softplus_op(vg_transpose(in[0], 0, 1), softplus_backward_wrong); }

static bool check(const char *what, vg_gradcheck_fn f, int n, vg_tensor **inputs, bool expect_ok) {
    vg_gradcheck_result r = vg_gradcheck(f, NULL, n, inputs, VG_GRADCHECK_EPS, VG_GRADCHECK_ATOL, VG_GRADCHECK_RTOL);
    printf("%-38s max abs %.2e  max rel %.2e  %s%s\n", what, r.max_abs_err, r.max_rel_err, r.ok ? "PASS" : "FAIL",
           r.ok == expect_ok ? (expect_ok ? "" : " (as it must)") : "  <- unexpected");
    if (!r.ok) printf("    %s\n", r.message);
    return r.ok == expect_ok;
}

int main(void) {
    vg_rng rng = vg_rng_seed(0);
    /* inputs are persistent leaves that require grad (vg_gradcheck perturbs their memory) */
    vg_tensor *x = vg_persist(vg_randn(&rng, VG_DIMS(4, 6), 0, 1));
    vg_tensor *w1 = vg_persist(vg_randn(&rng, VG_DIMS(6, 5), 0, 0.5));
    vg_tensor *w2 = vg_persist(vg_randn(&rng, VG_DIMS(5, 3), 0, 0.5));
    vg_tensor *z = vg_persist(vg_randn(&rng, VG_DIMS(5, 3), 0, 2));
    x->requires_grad = w1->requires_grad = w2->requires_grad = z->requires_grad = true;
    vg_arena_reset();
    printf("vg_gradcheck: float64 central differences, eps %g, pass when |analytic - numeric| <= %g + %g * |numeric|\n",
           VG_GRADCHECK_EPS, VG_GRADCHECK_ATOL, VG_GRADCHECK_RTOL);
    vg_tensor *mlp_in[3] = {x, w1, w2};
    bool ok = check("swish MLP + tanh (library ops)", swish_mlp, 3, mlp_in, true);
    ok &= check("softplus, hand-written backward", softplus_right, 1, &z, true);
    ok &= check("softplus, wrong backward", softplus_wrong, 1, &z, false);
    printf("%s\n", ok ? "all three checks came out as expected" : "some check did not come out as expected");
    vg_tensor_free(x); vg_tensor_free(w1); vg_tensor_free(w2); vg_tensor_free(z);
    return ok ? 0 : 1;
}
