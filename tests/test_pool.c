/* test_pool.c — nn/pool.c: max, average and global average pooling against PyTorch
 * (tests/reference/pool_reference.safetensors, written by make_nn_reference.py: F.max_pool2d,
 * F.avg_pool2d, x.mean((2, 3)); outputs and input gradients, rel ≤ 1e-4 as tests/test_nn.c), the
 * tie rule on whole-number inputs, NaN, strided inputs, thread-count determinism and the errors. */
#include "test.h"
#include "nn/nn.h"
#include "simd/simd.h"
#include "tensor/safetensors.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define REF_PATH "tests/reference/pool_reference.safetensors"
#define PARITY_RTOL 1e-4

/* tensor `cs.name` of the reference as a persistent leaf (requires grad if asked), or NULL (failed) */
static vg_tensor *ref_get(const vg_st_file *f, const char *cs, const char *name, bool grad) {
    char key[128], err[512];
    snprintf(key, sizeof key, "%s.%s", cs, name);
    const vg_st_tensor *e = vg_st_find(f, key);
    if (!e) { vg_test_fail(__FILE__, __LINE__, "reference tensor %s is missing from %s (run `make reference`)", key, REF_PATH); return NULL; }
    vg_tensor *t = vg_persistent_zeros(e->ndim, e->shape);
    float *tmp = malloc(sizeof(float) * (e->numel ? e->numel : 1));
    int rc = vg_st_read_f32(f, key, tmp, e->numel, err, sizeof err);
    for (size_t i = 0; rc == 0 && i < e->numel; i++) vg_data(t)[i] = (real)tmp[i];
    free(tmp);
    if (rc != 0) { vg_test_fail(__FILE__, __LINE__, "%s", err); vg_tensor_free(t); return NULL; }
    t->requires_grad = grad;
    return t;
}

/* got against `cs.name`: shape equal and max|got − ref| / max|ref| ≤ PARITY_RTOL; prints one line */
static void ref_cmp(const vg_st_file *f, const char *cs, const char *name, const vg_tensor *got) {
    if (!got) { vg_test_fail(__FILE__, __LINE__, "%s.%s: nothing computed (%s)", cs, name, vg_error()); return; }
    vg_tensor *want = ref_get(f, cs, name, false);
    if (!want) return;
    if (want->ndim != got->ndim || memcmp(want->shape, got->shape, sizeof(int64_t) * (size_t)want->ndim)) {
        char s1[96], s2[96];
        vg_shape_str(got, s1, sizeof s1); vg_shape_str(want, s2, sizeof s2);
        vg_test_fail(__FILE__, __LINE__, "%s.%s: shape %s, reference %s", cs, name, s1, s2);
        vg_tensor_free(want);
        return;
    }
    vg_tensor *gc = vg_contiguous_raw(got);
    double max_abs = 0, max_ref = 0;
    for (int64_t i = 0, n = vg_numel(want); i < n; i++) {
        double a = (double)vg_data(gc)[i], b = (double)vg_data(want)[i];
        if (!(fabs(a - b) <= max_abs)) max_abs = fabs(a - b);   /* NaN propagates */
        if (fabs(b) > max_ref) max_ref = fabs(b);
    }
    double rel = max_ref > 0 ? max_abs / max_ref : max_abs;
    printf("    parity %s.%-10s max abs %.2e  max rel %.2e  %s\n", cs, name, max_abs, rel, rel <= PARITY_RTOL ? "ok" : "FAIL");
    CHECK_MSG(rel <= PARITY_RTOL, "%s.%s differs from PyTorch: max abs %.3e, max rel %.3e", cs, name, max_abs, rel);
    vg_tensor_free(want);
}

typedef enum { MAX, AVG, GLOBAL } pool_kind;
static vg_tensor *pool(pool_kind kind, vg_tensor *x, int k, int s, int p) {
    return kind == MAX ? vg_max_pool2d_fn(x, k, s, p) : kind == AVG ? vg_avg_pool2d_fn(x, k, s, p)
                                                                    : vg_global_avg_pool2d_fn(x);
}

/* y = pool(x) and dx from the stored dy, against the reference */
static void parity(const char *cs, pool_kind kind, int k, int s, int p) {
    char err[512];
    vg_st_file *f = vg_st_open(REF_PATH, err, sizeof err);
    if (!f) { vg_test_fail(__FILE__, __LINE__, "cannot open the reference (run `make reference`): %s", err); return; }
    vg_tensor *x = ref_get(f, cs, "x", true), *dy = ref_get(f, cs, "dy", false);
    if (x && dy) {
        vg_tensor *y = pool(kind, x, k, s, p);
        ref_cmp(f, cs, "y", y);
        if (y) {
            CHECK_MSG(vg_backward(y, dy), "%s: backward failed: %s", cs, vg_error());
            if (x->grad) ref_cmp(f, cs, "dx", x->grad);
            else vg_test_fail(__FILE__, __LINE__, "%s: no gradient reached x", cs);
        }
    }
    vg_tensor_free(x); vg_tensor_free(dy);
    vg_st_close(f);
    vg_arena_reset();
}

VG_TEST(pool_parity_max_k2) { parity("max_pool_k2", MAX, 2, 2, 0); }
VG_TEST(pool_parity_max_k3_s2_p1) { parity("max_pool_k3s2p1", MAX, 3, 2, 1); }
/* whole numbers in [-2, 2], windows 3×3 stride 1: most windows hold several equal maxima, and
 * PyTorch hands the gradient to the first in row-major order (any other rule moves whole dy values) */
VG_TEST(pool_parity_max_ties_first_in_scan_order) { parity("max_pool_ties", MAX, 3, 1, 1); }
VG_TEST(pool_parity_avg_k2) { parity("avg_pool_k2", AVG, 2, 2, 0); }
VG_TEST(pool_parity_avg_k3_s2_p1_counts_padding) { parity("avg_pool_k3s2p1", AVG, 3, 2, 1); }
VG_TEST(pool_parity_avg_k3_s1) { parity("avg_pool_k3s1", AVG, 3, 1, 0); }
VG_TEST(pool_parity_global_avg) { parity("global_avg_pool", GLOBAL, 0, 0, 0); }

/* stride 0 is the kernel (PyTorch's stride=None); a transposed (strided) input gives the same as
 * its contiguous copy; a NaN in a window comes out of max pooling */
VG_TEST(pool_default_stride_strided_input_and_nan) {
    vg_rng rng = vg_rng_seed(3);
    vg_tensor *x = vg_randn(&rng, VG_DIMS(2, 3, 6, 8), 0, 1);
    vg_tensor *a = vg_max_pool2d_fn(x, 2, 0, 0), *b = vg_max_pool2d_fn(x, 2, 2, 0);
    REQUIRE(a && b);
    CHECK(a->shape[2] == 3 && a->shape[3] == 4);
    CHECK(memcmp(vg_data(a), vg_data(b), sizeof(real) * (size_t)vg_numel(a)) == 0);
    vg_tensor *xt = vg_transpose(x, 2, 3), *xtc = vg_contiguous_raw(xt);
    REQUIRE(xt && xtc && xt->strides[3] != 1);
    for (int kind = MAX; kind <= AVG; kind++) {
        vg_tensor *u = pool((pool_kind)kind, xt, 3, 2, 1), *v = pool((pool_kind)kind, xtc, 3, 2, 1);
        REQUIRE(u && v);
        CHECK(memcmp(vg_data(u), vg_data(v), sizeof(real) * (size_t)vg_numel(u)) == 0);
    }
    vg_data(x)[1] = NAN;                             /* plane (0, 0), row 0, column 1 */
    vg_tensor *m = vg_max_pool2d_fn(x, 2, 2, 0);
    REQUIRE(m);
    CHECK(isnan(vg_data(m)[0]));
    CHECK(!isnan(vg_data(m)[1]));
    vg_arena_reset();
}

/* the same bits for 1 and 2 threads, forward and backward, on a size that takes the parallel path */
VG_TEST(pool_same_bits_for_any_thread_count) {
    const int saved = omp_get_max_threads();
    real *first[2][2] = {{0}};
    for (int run = 0; run < 2; run++) {
        omp_set_num_threads(run == 0 ? 1 : 2);
        vg_rng rng = vg_rng_seed(9);
        vg_tensor *x = vg_persist(vg_randn(&rng, VG_DIMS(8, 16, 24, 24), 0, 1));
        x->requires_grad = true;
        for (int kind = MAX; kind <= AVG; kind++) {
            vg_tensor *y = pool((pool_kind)kind, x, 3, 2, 1);
            REQUIRE(y);
            vg_tensor *dy = vg_randn(&rng, y->ndim, y->shape, 0, 1);
            vg_zero_grad(x);
            REQUIRE(vg_backward(y, dy));
            const size_t bytes = sizeof(real) * (size_t)vg_numel(x);
            if (run == 0) { first[kind][0] = malloc(bytes); memcpy(first[kind][0], vg_data(x->grad), bytes); }
            else CHECK_MSG(memcmp(first[kind][0], vg_data(x->grad), bytes) == 0, "%s pooling: dx differs between 1 and 2 threads", kind == MAX ? "max" : "avg");
        }
        vg_tensor_free(x);
        vg_arena_reset();
    }
    for (int kind = 0; kind < 2; kind++) free(first[kind][0]);
    omp_set_num_threads(saved);
}

/* bad shapes and arguments are errors naming the op and the problem; NULL passes through */
VG_TEST(pool_errors_are_values) {
    vg_tensor *x3 = vg_zeros(VG_DIMS(2, 4, 4)), *x = vg_zeros(VG_DIMS(1, 2, 4, 4));
    /* a plane of 2^32 elements (a broadcast view: nothing is allocated before the check) */
    vg_tensor *huge = vg_expand(vg_zeros(VG_DIMS(1, 1, 1, 1)), VG_DIMS(1, 1, 65536, 65536));
    REQUIRE(huge);
    struct { vg_tensor *x; int k, s, p; const char *want; } bad[] = {
        {x3, 2, 2, 0, "must be 4-d"},
        {x, 0, 1, 0, "must be ≥ 1"},
        {x, 2, -1, 0, "must be ≥ 1"},
        {x, 2, 2, -1, "padding -1"},
        {x, 3, 1, 2, "more than half the kernel"},
        {x, 5, 1, 0, "larger than the padded input"},
        {huge, 2, 2, 0, "more than 2^31 elements"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int kind = MAX; kind <= AVG; kind++) {
            vg_tensor *y = pool((pool_kind)kind, bad[i].x, bad[i].k, bad[i].s, bad[i].p);
            CHECK_MSG(y == NULL, "case %zu (%s): accepted", i, bad[i].want);
            CHECK_MSG(strstr(vg_error(), bad[i].want) && strstr(vg_error(), kind == MAX ? "max_pool2d" : "avg_pool2d"),
                      "case %zu: error \"%s\" does not say \"%s\"", i, vg_error(), bad[i].want);
        }
    CHECK(vg_global_avg_pool2d_fn(x3) == NULL && strstr(vg_error(), "global_avg_pool2d"));
    CHECK(vg_max_pool2d_fn(NULL, 2, 2, 0) == NULL && vg_avg_pool2d_fn(NULL, 2, 2, 0) == NULL &&
          vg_global_avg_pool2d_fn(NULL) == NULL);
    /* the largest padding allowed: half the kernel */
    vg_tensor *y = vg_max_pool2d_fn(x, 4, 1, 2);
    CHECK(y && y->shape[2] == 5 && y->shape[3] == 5);
    vg_arena_reset();
}

/* the forward's row kernel (simd/pool.h, the table this level runs) against the rule written out
 * as loops over each window, on every kernel 1–5, stride 1–3 and padding up to half the kernel over
 * odd plane sizes. The inputs hold ties (whole numbers in [−2, 2]), −∞ and NaNs, so the
 * first-largest and NaN rules meet every edge. Values are compared bit for bit; the positions
 * through the backward: dy = 1, 2, 3, … (distinct whole numbers, exact sums) sends each output's
 * own number to the position it chose, so dx equals the loops' only if every position does. */
VG_TEST(pool_max_row_kernel_matches_the_window_loops) {
    vg_rng rng = vg_rng_seed(21);
    int cases = 0, geoms = 0, bad_y = 0, bad_dx = 0;
    for (int k = 1; k <= 5; k++)
        for (int s = 1; s <= 3; s++)
            for (int p = 0; 2 * p <= k; p++)
                for (int hw = 0; hw < 3; hw++) {
                    const int64_t B = 2, C = 3, H = 5 + 4 * hw + k, W = 7 + 6 * hw + k;
                    vg_tensor *x = vg_randn(&rng, VG_DIMS(B, C, H, W), 0, 1);
                    real *xd = vg_data(x);
                    for (int64_t e = 0; e < vg_numel(x); e++) {
                        const uint64_t r = vg_rng_next(&rng) % 50;
                        xd[e] = r == 0 ? NAN : r == 1 ? -INFINITY : r < 25 ? (real)(int)(xd[e] * 2) : xd[e];
                    }
                    for (int64_t e = 0; e < H * W; e++) xd[e] = -INFINITY;   /* plane 0: every window all −∞ */
                    x->requires_grad = true;
                    vg_tensor *y = vg_max_pool2d_fn(x, k, s, p);
                    REQUIRE(y);
                    const int64_t Ho = y->shape[2], Wo = y->shape[3];
                    vg_tensor *dy = vg_empty(y->ndim, y->shape), *want_dx = vg_zeros(VG_DIMS(B, C, H, W));
                    for (int64_t o = 0; o < vg_numel(dy); o++) vg_data(dy)[o] = (real)(o + 1);
                    REQUIRE(vg_backward(y, dy) && x->grad);
                    for (int64_t pl = 0; pl < B * C; pl++)
                        for (int64_t i = 0; i < Ho; i++)
                            for (int64_t j = 0; j < Wo; j++) {
                                const int64_t y0 = i * s - p < 0 ? 0 : i * s - p, x0 = j * s - p < 0 ? 0 : j * s - p;
                                const int64_t y1 = i * s - p + k > H ? H : i * s - p + k, x1 = j * s - p + k > W ? W : j * s - p + k;
                                real m = -INFINITY;
                                int64_t best = y0 * W + x0;
                                for (int64_t iy = y0; iy < y1; iy++)
                                    for (int64_t ix = x0; ix < x1; ix++) {
                                        const real v = xd[pl * H * W + iy * W + ix];
                                        if (v > m || isnan(v)) { m = v; best = iy * W + ix; }
                                    }
                                const int64_t o = (pl * Ho + i) * Wo + j;
                                const real got = vg_data(y)[o];
                                bad_y += !(isnan(m) ? isnan(got) : memcmp(&got, &m, sizeof m) == 0);
                                vg_data(want_dx)[pl * H * W + best] += (real)(o + 1);
                                cases++;
                            }
                    geoms++;
                    bad_dx += memcmp(vg_data(want_dx), vg_data(x->grad), sizeof(real) * (size_t)vg_numel(x)) != 0;
                    vg_arena_reset();
                }
    printf("    %d outputs over %d geometries (%s rows)\n", cases, geoms, vg_rows()->name);
    CHECK_MSG(bad_y == 0, "%d of %d max-pool outputs differ from the window loops", bad_y, cases);
    CHECK_MSG(bad_dx == 0, "%d geometries: a max-pool position differs from the window loops", bad_dx);
}
