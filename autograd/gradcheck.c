/* gradcheck.c — analytic gradients against central finite differences, in float64 only.
 *
 * f(inputs) may return any shape; the checked scalar is L = Σ f(inputs) ⊙ w with a fixed random w,
 * so every output element contributes. For input x and element i:
 *     numeric  = (L(x + eps·e_i) − L(x − eps·e_i)) / (2·eps)
 *     analytic = ∂L/∂x_i from one vg_backward
 *     pass iff |analytic − numeric| ≤ atol + rtol·|numeric|.
 *
 * The float32 library (build/libvitgrad.a) refuses instead of checking. Every op computes in
 * `real`, so there the perturbed evaluations are float32: with eps 1e-6 the step is below float32's
 * resolution (x + eps == x for |x| > 8) and the difference quotient is rounding noise; with a large
 * eps the truncation error (eps² times the third derivative) and the rounding error (ulp(L)/eps)
 * depend on f and its scale, so no fixed tolerance both passes correct rules and catches wrong
 * ones (a correct composite gave "analytic 0.649 vs numeric 0.514" with the default eps). A float32
 * answer that is sometimes wrong is worse than none: the check belongs in float64 (STYLE.md,
 * tinygrad's lesson), where the same sources compile with -DVG_DOUBLE into build/libvitgrad64.a. */
#include "autograd.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef VG_DOUBLE
vg_gradcheck_result vg_gradcheck(vg_gradcheck_fn f, void *ctx, int n, vg_tensor **inputs,
                                 double eps, double atol, double rtol) {
    vg_gradcheck_result r;
    memset(&r, 0, sizeof r);
    r.worst_input = -1;
    snprintf(r.message, sizeof r.message, "vg_gradcheck needs the float64 build: compile with -DVG_DOUBLE and "
             "link build/libvitgrad64.a (this is the float32 library, where finite differences are rounding noise)");
    vg_set_error("%s", r.message);
    return r;
}
#else

static double weighted_sum(const vg_tensor *out, const vg_tensor *w) {
    vg_tensor *c = vg_contiguous_raw(out);
    const real *o = vg_data(c), *wp = vg_data(w);
    double s = 0;
    for (int64_t i = 0, n = vg_numel(c); i < n; i++) s += (double)o[i] * (double)wp[i];
    return s;
}

static bool has_zero_stride(const vg_tensor *t) {
    for (int d = 0; d < t->ndim; d++) if (t->strides[d] == 0 && t->shape[d] > 1) return true;
    return false;
}

vg_gradcheck_result vg_gradcheck(vg_gradcheck_fn f, void *ctx, int n, vg_tensor **inputs,
                                 double eps, double atol, double rtol) {
    vg_gradcheck_result r;
    memset(&r, 0, sizeof r);
    r.ok = true; r.worst_input = -1;
    for (int i = 0; i < n; i++) {
        if (!inputs[i] || !inputs[i]->persistent) {
            r.ok = false; snprintf(r.message, sizeof r.message, "input %d is not a persistent tensor", i); return r;
        }
        if (has_zero_stride(inputs[i])) {     /* perturbing one element would move many */
            vg_tensor *m = vg_persist(inputs[i]);
            m->requires_grad = inputs[i]->requires_grad;
            inputs[i] = m;
        }
    }
    vg_arena_mark mark = vg_arena_get_mark();
    /* the fixed weights w, kept persistent across evaluations */
    vg_tensor *out0 = f(inputs, ctx);
    if (!out0) { r.ok = false; snprintf(r.message, sizeof r.message, "f failed: %s", vg_error()); vg_arena_release(mark); return r; }
    vg_rng rng = vg_rng_seed(1234);
    vg_tensor *w = vg_persist(vg_rand(&rng, out0->ndim, out0->shape, -1.0, 1.0));
    vg_arena_release(mark);

    /* analytic */
    for (int i = 0; i < n; i++) vg_zero_grad(inputs[i]);
    vg_tensor *out = f(inputs, ctx);
    if (!out || !out->requires_grad) {
        r.ok = false; snprintf(r.message, sizeof r.message, "f produced no graph: %s", out ? "output does not require grad" : vg_error());
        vg_arena_release(mark); vg_tensor_free(w); return r;
    }
    vg_tensor *wv = vg_view_raw(w, w->ndim, w->shape, w->strides, 0);
    if (!vg_backward(out, wv)) {
        r.ok = false; snprintf(r.message, sizeof r.message, "backward failed: %s", vg_error());
        vg_arena_release(mark); vg_tensor_free(w); return r;
    }
    vg_arena_release(mark);

    for (int i = 0; i < n; i++) {
        vg_tensor *x = inputs[i];
        if (!x->requires_grad) continue;
        int64_t numel = vg_numel(x), idx[VG_MAX_DIMS] = {0};
        for (int64_t e = 0; e < numel; e++) {
            int64_t off = x->offset;
            for (int d = 0; d < x->ndim; d++) off += idx[d] * x->strides[d];
            real *p = x->storage->data + off;
            real orig = *p;
            vg_no_grad_begin();
            *p = (real)((double)orig + eps);
            double lp = weighted_sum(f(inputs, ctx), w);
            vg_arena_release(mark);
            *p = (real)((double)orig - eps);
            double lm = weighted_sum(f(inputs, ctx), w);
            vg_arena_release(mark);
            *p = orig;
            vg_no_grad_end();
            double numeric = (lp - lm) / (2 * eps);
            double analytic = x->grad ? (double)vg_data(x->grad)[e] : 0.0;
            double abs_err = fabs(analytic - numeric);
            if (abs_err > r.max_abs_err) r.max_abs_err = abs_err;
            /* relative error where it means something: gradients above atol in size */
            if (fabs(numeric) > atol && abs_err / fabs(numeric) > r.max_rel_err) r.max_rel_err = abs_err / fabs(numeric);
            if (!(abs_err <= atol + rtol * fabs(numeric))) {
                if (r.ok || abs_err > fabs(r.worst_analytic - r.worst_numeric)) {
                    r.worst_input = i; r.worst_index = e; r.worst_analytic = analytic; r.worst_numeric = numeric;
                }
                r.ok = false;
            }
            for (int d = x->ndim - 1; d >= 0; d--) { if (++idx[d] < x->shape[d]) break; idx[d] = 0; }
        }
    }
    if (!r.ok)
        snprintf(r.message, sizeof r.message, "input %d element %lld: analytic %.10g vs numeric %.10g",
                 r.worst_input, (long long)r.worst_index, r.worst_analytic, r.worst_numeric);
    vg_tensor_free(w);
    return r;
}
#endif
