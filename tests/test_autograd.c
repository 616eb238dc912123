/* test_autograd.c — backward semantics: accumulation, broadcasting, views, idempotence, no_grad,
 * detach, vg_gradcheck refusing in the float32 build, and memory stability over 1,000 steps. */
#include "test.h"
#include "autograd/autograd.h"
#include "base/clock.h"
#include "nn/nn.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

VG_TEST(backward_simple_chain) {
    vg_tensor *x = vg_param(VG_DIMS(3));
    vg_data(x)[0] = 1; vg_data(x)[1] = 2; vg_data(x)[2] = 3;
    /* L = Σ x² · 2 + x₀  → dL/dx = 4x + [1, 0, 0] */
    vg_tensor *l = vg_add(vg_sum_all(vg_mul_scalar(vg_mul(x, x), 2)), vg_select(x, 0, 0));
    REQUIRE(vg_backward(l, NULL));
    CHECK(vg_data(x->grad)[0] == 5 && vg_data(x->grad)[1] == 8 && vg_data(x->grad)[2] == 12);
    CHECK(x->grad->persistent);                             /* parameters keep grads off-arena */
    /* backward accumulates: a second call without zero_grad doubles */
    l = vg_add(vg_sum_all(vg_mul_scalar(vg_mul(x, x), 2)), vg_select(x, 0, 0));
    vg_backward(l, NULL);
    CHECK(vg_data(x->grad)[0] == 10);
    vg_tensor_free(x);
    vg_arena_reset();
}

VG_TEST(backward_is_idempotent_after_zero_grad) {
    vg_rng r = vg_rng_seed(11);
    vg_tensor *w = vg_persist(vg_randn(&r, VG_DIMS(4, 3), 0, 1)); w->requires_grad = true;
    vg_tensor *x = vg_randn(&r, VG_DIMS(5, 4), 0, 1);
    real first[12];
    for (int rep = 0; rep < 3; rep++) {
        vg_zero_grad(w);
        vg_tensor *h = vg_tanh(vg_matmul(x, w));
        vg_tensor *l = vg_mean_all(vg_mul(h, h));           /* h used twice: grads accumulate inside */
        REQUIRE(vg_backward(l, NULL));
        if (rep == 0) memcpy(first, vg_data(w->grad), sizeof first);
        else CHECK(memcmp(first, vg_data(w->grad), sizeof first) == 0);
    }
    /* the same graph backpropagated twice after zero_grad gives the same gradient */
    vg_tensor *h = vg_tanh(vg_matmul(x, w));
    vg_tensor *l = vg_mean_all(vg_mul(h, h));
    vg_zero_grad(w); vg_backward(l, NULL);
    memcpy(first, vg_data(w->grad), sizeof first);
    vg_zero_grad(w); vg_backward(l, NULL);
    CHECK(memcmp(first, vg_data(w->grad), sizeof first) == 0);
    vg_tensor_free(w);
    vg_arena_reset();
}

VG_TEST(broadcast_grads_sum_back_to_shape) {
    vg_tensor *b = vg_param(VG_DIMS(3, 1));
    vg_tensor *x = vg_ones(VG_DIMS(2, 3, 4));
    vg_tensor *l = vg_sum_all(vg_add(x, b));                /* b broadcast over 2 × 4 */
    REQUIRE(vg_backward(l, NULL));
    CHECK(b->grad->ndim == 2 && b->grad->shape[0] == 3 && b->grad->shape[1] == 1);
    CHECK(vg_data(b->grad)[0] == 8 && vg_data(b->grad)[2] == 8);
    vg_tensor_free(b);
    vg_arena_reset();
}

VG_TEST(views_route_gradients_to_their_base) {
    vg_tensor *x = vg_param(VG_DIMS(2, 3));
    /* use x through a transpose, a narrow and a select at once */
    vg_tensor *t = vg_transpose(x, 0, 1);                                   /* (3,2) */
    vg_tensor *n = vg_narrow(x, 1, 1, 2);                                   /* x[:,1:3] */
    vg_tensor *s = vg_select(x, 0, 1);                                      /* x[1] */
    vg_tensor *l = vg_add(vg_add(vg_sum_all(vg_mul_scalar(t, 1)), vg_sum_all(vg_mul_scalar(n, 10))),
                          vg_sum_all(vg_mul_scalar(s, 100)));
    REQUIRE(vg_backward(l, NULL));
    real want[6] = {1, 11, 11, 101, 111, 111};
    CHECK(memcmp(vg_data(x->grad), want, sizeof want) == 0);
    vg_tensor_free(x);
    vg_arena_reset();
}

VG_TEST(no_grad_and_detach) {
    vg_tensor *x = vg_param(VG_DIMS(2));
    vg_no_grad_begin();
    vg_tensor *y = vg_mul(x, x);
    vg_no_grad_end();
    CHECK(!y->requires_grad && y->node == NULL);
    CHECK(!vg_backward(y, NULL) && strstr(vg_error(), "does not require grad"));
    vg_no_grad_begin(); vg_no_grad_begin(); vg_no_grad_end();
    CHECK(!vg_grad_enabled());                              /* nesting */
    vg_no_grad_end();
    CHECK(vg_grad_enabled());
    vg_tensor *z = vg_mul(x, x);
    CHECK(z->requires_grad && z->node && !strcmp(z->node->op, "mul"));
    vg_tensor *d = vg_detach(z);
    CHECK(!d->requires_grad && d->node == NULL && d->storage == z->storage);
    vg_tensor *l = vg_sum_all(vg_add(z, d));                /* only z's path carries gradient */
    vg_data(x)[0] = 3;
    vg_tensor *l2 = vg_sum_all(vg_mul(x, vg_detach(x)));    /* d/dx (x · const) = const */
    vg_backward(l2, NULL);
    CHECK(vg_data(x->grad)[0] == 3);
    (void)l;
    CHECK(!vg_backward(NULL, NULL) && strstr(vg_error(), "NULL"));
    vg_tensor_free(x);
    vg_arena_reset();
}

VG_TEST(graph_order_is_topological) {
    vg_tensor *x = vg_param(VG_DIMS(2));
    vg_tensor *a = vg_exp(x), *b = vg_mul(a, a), *c = vg_add(b, a);
    vg_node *nodes[8];
    int n = vg_graph_nodes(c, nodes, 8);
    CHECK(n == 3 && nodes[0] == a->node && nodes[2] == c->node);
    vg_tensor_free(x);
    vg_arena_reset();
}

/* vg_gradcheck in the float32 library (this binary) refuses with a clear message instead of
 * comparing float32 finite differences (autograd/gradcheck.c says why). That gradcheck can fail on
 * a wrong rule is shown in float64 by examples/gradcheck_example.c (run by make test). */
static vg_tensor *cube(vg_tensor *const *in, void *ctx) { return vg_pow_scalar(in[0], 3); }

VG_TEST(gradcheck_refuses_in_the_float32_build) {
    vg_rng r = vg_rng_seed(2);
    vg_tensor *x = vg_persist(vg_rand(&r, VG_DIMS(4), 0.5, 1.5)); x->requires_grad = true;
    vg_gradcheck_result res = vg_gradcheck(cube, NULL, 1, &x, VG_GRADCHECK_EPS, VG_GRADCHECK_ATOL, VG_GRADCHECK_RTOL);
    CHECK(!res.ok);
    CHECK_MSG(strstr(res.message, "vg_gradcheck needs the float64 build") && strstr(res.message, "-DVG_DOUBLE")
              && strstr(res.message, "libvitgrad64.a"), "message: %s", res.message);
    CHECK(strstr(vg_error(), "needs the float64 build") != NULL);
    vg_tensor_free(x);
    vg_arena_reset();
}

static long resident_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = -1;
    fclose(f);
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* 1,000 forward+backward steps of a small MLP: resident memory must not grow after warm-up */
VG_TEST(memory_is_stable_over_1000_steps) {
    vg_rng r = vg_rng_seed(9);
    vg_tensor *w1 = vg_persist(vg_randn(&r, VG_DIMS(32, 64), 0, 0.1)); w1->requires_grad = true;
    vg_tensor *b1 = vg_param(VG_DIMS(64));
    vg_tensor *w2 = vg_persist(vg_randn(&r, VG_DIMS(64, 10), 0, 0.1)); w2->requires_grad = true;
    vg_tensor *params[3] = {w1, b1, w2};
    long rss_warm = 0;
    size_t arena_warm = 0;
    double first_loss = 0, last_loss = 0;
    vg_tensor *x = vg_persist(vg_randn(&r, VG_DIMS(16, 32), 0, 1));
    const int32_t class0[16] = {0};
    for (int step = 0; step < 1000; step++) {
        vg_tensor *h = vg_bias_gelu_fn(vg_matmul(x, w1), b1);
        vg_tensor *logits = vg_matmul(h, w2);
        vg_tensor *loss = vg_cross_entropy_fn(logits, class0, 0);         /* every sample is class 0 */
        for (int i = 0; i < 3; i++) vg_zero_grad(params[i]);
        REQUIRE(vg_backward(loss, NULL));
        if (step == 0) first_loss = vg_item(loss);
        last_loss = vg_item(loss);
        for (int i = 0; i < 3; i++) {                        /* plain SGD */
            real *p = vg_data(params[i]), *g = vg_data(params[i]->grad);
            for (int64_t k = 0; k < vg_numel(params[i]); k++) p[k] -= (real)0.05 * g[k];
        }
        vg_arena_reset();                                    /* O(1): the whole step's graph is gone */
        if (step == 10) { rss_warm = resident_kib(); arena_warm = vg_arena_bytes_reserved(); }
    }
    long rss_end = resident_kib();
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer quarantines freed heap blocks, so resident memory grows by design there;
     * the arena check below still proves the step's memory is reused. */
    (void)rss_end; (void)rss_warm;
    printf("    (ASan build: resident-memory check skipped, arena reuse checked)\n");
#else
    CHECK_MSG(rss_end - rss_warm <= 256, "resident memory grew from %ld KiB to %ld KiB", rss_warm, rss_end);
#endif
    CHECK(vg_arena_bytes_reserved() == arena_warm);
    CHECK(last_loss < first_loss * 0.1);                     /* and it learned */
    for (int i = 0; i < 3; i++) vg_tensor_free(params[i]);
    vg_tensor_free(x);
}

/* The op profile charges every moment of a profiled step to one row: ops by (name, input shape,
 * output shape), forward and backward, the engine between rules, named phases and "other". */
VG_TEST(profile_charges_each_step_to_ops_and_phases) {
    vg_rng r = vg_rng_seed(5);
    vg_tensor *w = vg_persist(vg_randn(&r, VG_DIMS(8, 3), 0, 1)); w->requires_grad = true;
    vg_tensor *w2 = vg_persist(vg_randn(&r, VG_DIMS(3, 2), 0, 1)); w2->requires_grad = true;
    CHECK(!vg_profile_active());
    REQUIRE(vg_profile_start(3));
    double outside_ms = 0;
    for (int step = 0; step < 4; step++) {                   /* the 4th is past max_steps: ignored */
        const double t0 = vg_now_s();
        vg_profile_step_begin();
        CHECK(vg_profile_active() == (step < 3));
        vg_tensor *x = vg_randn(&r, VG_DIMS(4, 8), 0, 1);
        vg_tensor *h = vg_tanh(vg_matmul(x, w));             /* matmul (4x8 -> 4x3) */
        vg_tensor *y = vg_tanh(vg_matmul(h, w2));            /* matmul (4x3 -> 4x2): its own row */
        vg_tensor *l = vg_mean_all(vg_mul(y, y));
        vg_profile_phase("loss");
        vg_zero_grad(w); vg_zero_grad(w2);
        REQUIRE(vg_backward(l, NULL));
        vg_profile_phase("after backward");
        vg_profile_step_end();
        if (step < 3) outside_ms += 1e3 * (vg_now_s() - t0);
        vg_arena_reset();
    }
    CHECK(vg_profile_steps() == 3 && !vg_profile_active());
    vg_profile_row rows[64];
    const int n = vg_profile_rows(rows, 64);
    int matmuls = 0, tanhs = 0, phases = 0;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        const vg_profile_row *q = &rows[i];
        sum += 3 * (q->fwd_ms + q->bwd_ms);
        CHECK(q->fwd_ms >= 0 && q->bwd_ms >= 0 && q->median_ms >= 0);
        if (!strcmp(q->name, "matmul")) {
            matmuls++;
            CHECK(q->fwd_calls == 1 && q->bwd_calls == 1 && q->ndim == 2 && q->in_ndim == 2 && q->in_shape[0] == 4);
            CHECK((q->in_shape[1] == 8 && q->shape[1] == 3) || (q->in_shape[1] == 3 && q->shape[1] == 2));
        }
        if (!strcmp(q->name, "tanh")) tanhs++;
        if (q->is_phase) {
            phases++;
            CHECK(q->bwd_ms == 0 && q->bwd_calls == 0);
            if (strcmp(q->name, "backward: engine")) CHECK(q->fwd_calls == 1);   /* charged once a step */
        }
    }
    CHECK(matmuls == 2 && tanhs == 2);
    CHECK(phases == 4);                        /* loss, after backward, backward: engine, other */
    /* the rows cover the steps' wall time: all of it, from begin to end */
    CHECK_MSG(sum <= outside_ms + 1e-6 && sum >= outside_ms - 0.5, "rows %.4f ms, measured %.4f ms", sum, outside_ms);
    vg_profile_stop();
    CHECK(vg_profile_rows(rows, 64) == 0 && vg_profile_steps() == 0);
    vg_profile_step_begin();                   /* off: no rows, no effect */
    vg_tensor *z = vg_tanh(vg_matmul(vg_randn(&r, VG_DIMS(2, 8), 0, 1), w));
    CHECK(z && !vg_profile_active());
    vg_profile_step_end();
    CHECK(vg_profile_rows(rows, 64) == 0);
    vg_tensor_free(w); vg_tensor_free(w2);
    vg_arena_reset();
}

/* vg_add_into overwrites b only when nothing needs b's values: here tanh's backward reads its
 * output (1 - y²), a second consumer reads b, a view of b is consumed, b is a leaf that requires
 * grad. Each time the gradient of w must be vg_add's (overwriting b gave 13.84 instead of 7.09
 * in the first case), and where b is free (a matmul's output) the sum really lands in b. */
static void add_into_vs_add(int which, real *g_into, real *g_add, bool *in_place) {
    for (int pass = 0; pass < 2; pass++) {
        vg_rng r = vg_rng_seed(46);
        vg_tensor *w = vg_persist(vg_randn(&r, VG_DIMS(4, 3), 0, 1)); w->requires_grad = true;
        vg_tensor *x = vg_randn(&r, VG_DIMS(4, 3), 0, 1);
        vg_tensor *a = vg_mul_scalar(w, 2), *b = NULL, *other = NULL;
        switch (which) {
        case 0: b = vg_tanh(w); break;                                   /* backward reads b */
        case 1: b = vg_mul_scalar(w, 3); other = vg_mul(b, w); break;   /* mul reads b for w's grad */
        case 2: b = vg_mul_scalar(w, 3); other = vg_mul(vg_reshape(b, VG_DIMS(12)), vg_reshape(w, VG_DIMS(12))); break;
        case 3: b = vg_randn(&r, VG_DIMS(4, 3), 0, 1); b->requires_grad = true; other = vg_mul(b, b); break;
        default: b = vg_matmul(x, vg_ones(VG_DIMS(3, 3))); break;       /* free: matmul saved its inputs */
        }
        const real *b_data = vg_data(b);
        vg_tensor *y = pass ? vg_add(a, b) : vg_add_into(a, b);
        if (!pass) *in_place = vg_data(y) == b_data;
        vg_tensor *l = vg_sum_all(vg_mul(y, y));
        if (other) l = vg_add(l, vg_sum_all(other));
        vg_zero_grad(w);
        if (!vg_backward(l, NULL)) { vg_tensor_free(w); vg_arena_reset(); return; }
        memcpy(pass ? g_add : g_into, vg_data(w->grad), 12 * sizeof(real));
        vg_tensor_free(w);
        vg_arena_reset();
    }
}

VG_TEST(add_into_writes_in_place_only_when_no_backward_needs_b) {
    for (int which = 0; which < 5; which++) {
        real g_into[12] = {0}, g_add[12] = {1};
        bool in_place = false;
        add_into_vs_add(which, g_into, g_add, &in_place);
        CHECK_MSG(!memcmp(g_into, g_add, sizeof g_into), "case %d: the gradient differs from vg_add's (%g vs %g)",
                  which, (double)g_into[0], (double)g_add[0]);
        CHECK_MSG(in_place == (which == 4), "case %d: %s", which, in_place ? "wrote over b" : "did not write in place");
    }
}
