/* test_nn.c — the nn layers: PyTorch parity on tests/reference/nn_reference.safetensors (written by
 * tests/reference/make_nn_reference.py), and unit tests of dropout, cross-entropy errors,
 * attention weights, parameters and init, and thread-count determinism.
 *
 * Parity: every output and gradient is compared with rel = max|ours − torch| / max|torch| (one
 * number per tensor, norm-wise; max|torch| = 0 falls back to the absolute error) and must be
 * ≤ 1e-4. Each compared tensor prints one line: name, max abs error, max rel error. */
#include "test.h"
#include "nn/nn.h"
#include "data/augment.h"
#include "tensor/safetensors.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define REF_PATH "tests/reference/nn_reference.safetensors"
#define PARITY_RTOL 1e-4

/* ------------------------------------------------------------------ reference helpers */
static const char *ref_path = REF_PATH;     /* the file the open reference came from */
static vg_st_file *ref_open_file(const char *path) {
    char err[512];
    ref_path = path;
    vg_st_file *f = vg_st_open(path, err, sizeof err);
    if (!f) vg_test_fail(__FILE__, __LINE__, "cannot open the reference (run `make reference` from the repo root): %s", err);
    return f;
}
static vg_st_file *ref_open(void) { return ref_open_file(REF_PATH); }

/* tensor `case.name` as a persistent float tensor (a leaf that requires grad if asked) */
static vg_tensor *ref_tensor(const vg_st_file *f, const char *cs, const char *name, bool grad) {
    char key[128], err[512];
    snprintf(key, sizeof key, "%s.%s", cs, name);
    const vg_st_tensor *e = vg_st_find(f, key);
    if (!e) { vg_test_fail(__FILE__, __LINE__, "reference tensor %s is missing from %s", key, ref_path); return NULL; }
    vg_tensor *t = vg_persistent_zeros(e->ndim, e->shape);
    float *tmp = malloc(sizeof(float) * (e->numel ? e->numel : 1));
    if (vg_st_read_f32(f, key, tmp, e->numel, err, sizeof err) != 0) {
        vg_test_fail(__FILE__, __LINE__, "%s", err); free(tmp); vg_tensor_free(t); return NULL;
    }
    for (size_t i = 0; i < e->numel; i++) vg_data(t)[i] = (real)tmp[i];
    free(tmp);
    t->requires_grad = grad;
    return t;
}

/* compare `got` with `case.name`; prints one line and fails the test if rel > PARITY_RTOL */
static void ref_check(const vg_st_file *f, const char *cs, const char *name, const vg_tensor *got) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", cs, name);
    if (!got) { vg_test_fail(__FILE__, __LINE__, "%s: no tensor computed (%s)", key, vg_error()); return; }
    vg_tensor *want = ref_tensor(f, cs, name, false);
    if (!want) return;
    if (vg_numel(want) != vg_numel(got) || want->ndim != got->ndim || memcmp(want->shape, got->shape, sizeof(int64_t) * (size_t)want->ndim)) {
        char s1[96], s2[96]; vg_shape_str(got, s1, sizeof s1); vg_shape_str(want, s2, sizeof s2);
        vg_test_fail(__FILE__, __LINE__, "%s: shape %s, reference %s", key, s1, s2);
        vg_tensor_free(want); return;
    }
    const vg_test_diff d = vg_test_compare(vg_data(vg_contiguous_raw(got)), vg_data(want), (size_t)vg_numel(want));
    const double max_abs = d.max_abs, rel = d.rel;
    bool ok = rel <= PARITY_RTOL;
    printf("    parity %-26s max abs %.2e  max rel %.2e  %s\n", key, max_abs, rel, ok ? "ok" : "FAIL");
    if (!ok) vg_test_fail(__FILE__, __LINE__, "%s differs from PyTorch: max abs %.3e, max rel %.3e > %g", key, max_abs, rel, PARITY_RTOL);
    vg_tensor_free(want);
}

/* check each leaf's gradient against "case.d<name>" */
static void ref_check_grad(const vg_st_file *f, const char *cs, const char *name, const vg_tensor *leaf) {
    char dname[96];
    snprintf(dname, sizeof dname, "d%s", name);
    if (!leaf->grad) { vg_test_fail(__FILE__, __LINE__, "%s.%s: no gradient was computed", cs, name); return; }
    ref_check(f, cs, dname, leaf->grad);
}

/* the common pattern: y from the leaves, backward with the stored dy, check y and every grad */
typedef vg_tensor *(*layer_fn)(vg_tensor **leaves);
static void parity_case(const char *cs, int n, const char *const *names, layer_fn fn) {
    vg_st_file *f = ref_open();
    if (!f) return;
    vg_tensor *leaves[8] = {0};
    bool ok = true;
    for (int i = 0; i < n; i++) ok &= (leaves[i] = ref_tensor(f, cs, names[i], true)) != NULL;
    vg_tensor *dy = ref_tensor(f, cs, "dy", false);
    if (ok && dy) {
        vg_tensor *y = fn(leaves);
        ref_check(f, cs, "y", y);
        if (y) {
            CHECK_MSG(vg_backward(y, dy), "%s: backward failed: %s", cs, vg_error());
            for (int i = 0; i < n; i++) ref_check_grad(f, cs, names[i], leaves[i]);
        }
    }
    for (int i = 0; i < n; i++) vg_tensor_free(leaves[i]);
    vg_tensor_free(dy);
    vg_st_close(f);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ parity, one test per layer */
static vg_tensor *l_linear(vg_tensor **t) { return vg_linear_fn(t[0], t[1], t[2]); }
static vg_tensor *l_linear_nb(vg_tensor **t) { return vg_linear_fn(t[0], t[1], NULL); }
static vg_tensor *l_conv3x3(vg_tensor **t) { return vg_conv2d_fn(t[0], t[1], t[2], 1, 1); }
static vg_tensor *l_patch(vg_tensor **t) { return vg_conv2d_fn(t[0], t[1], t[2], 4, 0); }
static vg_tensor *l_layernorm(vg_tensor **t) { return vg_layernorm_fn(t[0], t[1], t[2], 1e-6); }
static vg_tensor *l_bias_gelu(vg_tensor **t) { return vg_bias_gelu_fn(t[0], t[1]); }
static vg_tensor *l_attention(vg_tensor **t) { return vg_attention_fn(t[0], 2, 0, false, NULL, NULL); }
static vg_tensor *l_mhsa(vg_tensor **t) {
    vg_mhsa m = {.qkv = {t[1], t[2]}, .proj = {t[3], t[4]}, .heads = 2};
    return vg_mhsa_forward(&m, t[0], 0, true, NULL, NULL);      /* dropout 0: no rng needed */
}

VG_TEST(nn_parity_linear) { parity_case("linear", 3, (const char *[]){"x", "weight", "bias"}, l_linear); }
VG_TEST(nn_parity_linear_4d_nobias) { parity_case("linear_nobias", 2, (const char *[]){"x", "weight"}, l_linear_nb); }
VG_TEST(nn_parity_conv3x3) { parity_case("conv3x3", 3, (const char *[]){"x", "weight", "bias"}, l_conv3x3); }
VG_TEST(nn_parity_patch_embed) { parity_case("patch", 3, (const char *[]){"x", "weight", "bias"}, l_patch); }
/* conv2d (im2col, col2im, the three GEMMs) against the convolution written out as loops over
 * every output and kernel tap, summed in double: y, dx, dw, db, on geometries the parity and
 * gradcheck cases do not cover — every stride from 1 to 3 with padding 0–2, kernels 1–5, odd and
 * non-square images, taps that fall off an edge for some output rows only, and batches of 17–33
 * (im2col and col2im go through the images in chunks of 16: full and partial chunks). */
VG_TEST(nn_conv2d_geometries_vs_direct) {
    static const struct { int B, C, H, W, O, k, s, pad; } cases[] = {
        {18, 2, 7, 9, 3, 3, 2, 1}, {3, 3, 8, 8, 4, 1, 1, 0}, {17, 1, 5, 6, 2, 5, 3, 2},
        {2, 2, 6, 6, 2, 4, 4, 0}, {2, 3, 9, 7, 2, 2, 1, 1}, {33, 2, 4, 4, 2, 3, 1, 2},
        {1, 1, 3, 3, 1, 3, 2, 0}, {4, 2, 10, 5, 3, 3, 3, 1}, {16, 3, 8, 8, 2, 3, 2, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int B = cases[ci].B, C = cases[ci].C, H = cases[ci].H, W = cases[ci].W, O = cases[ci].O;
        const int k = cases[ci].k, s = cases[ci].s, pad = cases[ci].pad;
        const int Ho = (H + 2 * pad - k) / s + 1, Wo = (W + 2 * pad - k) / s + 1;
        vg_rng rng = vg_rng_seed(100 + ci);
        vg_tensor *x = vg_persistent_zeros(VG_DIMS(B, C, H, W)), *w = vg_persistent_zeros(VG_DIMS(O, C, k, k));
        vg_tensor *b = vg_persistent_zeros(VG_DIMS(O)), *dy = vg_persistent_zeros(VG_DIMS(B, O, Ho, Wo));
        vg_init_uniform(x, &rng, -1, 1); vg_init_uniform(w, &rng, -1, 1);
        vg_init_uniform(b, &rng, -1, 1); vg_init_uniform(dy, &rng, -1, 1);
        x->requires_grad = w->requires_grad = b->requires_grad = true;
        vg_tensor *y = vg_conv2d_fn(x, w, b, s, pad);
        CHECK_MSG(y && vg_backward(y, dy), "case %zu: %s", ci, vg_error());
        if (!y || !x->grad || !w->grad || !b->grad) break;
        const real *X = vg_data(x), *Wt = vg_data(w), *DY = vg_data(dy);
        double *dx = calloc((size_t)B * C * H * W, sizeof(double)), *dw = calloc((size_t)O * C * k * k, sizeof(double));
        double err_y = 0, err_dx = 0, err_dw = 0, err_db = 0, scale = 1;
        for (int n = 0; n < B; n++)
            for (int o = 0; o < O; o++)
                for (int oh = 0; oh < Ho; oh++)
                    for (int ow = 0; ow < Wo; ow++) {
                        double acc = vg_data(b)[o];
                        const double g = DY[((n * O + o) * Ho + oh) * Wo + ow];
                        for (int c = 0; c < C; c++)
                            for (int ki = 0; ki < k; ki++)
                                for (int kj = 0; kj < k; kj++) {
                                    const int ih = oh * s - pad + ki, iw = ow * s - pad + kj;
                                    if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                    const long xi = ((long)(n * C + c) * H + ih) * W + iw, wi = ((o * C + c) * k + ki) * k + kj;
                                    acc += (double)X[xi] * Wt[wi];
                                    dx[xi] += g * Wt[wi];
                                    dw[wi] += g * X[xi];
                                }
                        const double got = vg_data(y)[((n * O + o) * Ho + oh) * Wo + ow];
                        if (fabs(got - acc) > err_y) err_y = fabs(got - acc);
                    }
        for (long i = 0; i < (long)B * C * H * W; i++)
            if (fabs(vg_data(x->grad)[i] - dx[i]) > err_dx) err_dx = fabs(vg_data(x->grad)[i] - dx[i]);
        for (long i = 0; i < (long)O * C * k * k; i++)
            if (fabs(vg_data(w->grad)[i] - dw[i]) > err_dw) err_dw = fabs(vg_data(w->grad)[i] - dw[i]);
        for (int o = 0; o < O; o++) {
            double db = 0;
            for (int n = 0; n < B; n++) for (int p = 0; p < Ho * Wo; p++) db += DY[(n * O + o) * Ho * Wo + p];
            if (fabs(vg_data(b->grad)[o] - db) > err_db) err_db = fabs(vg_data(b->grad)[o] - db);
        }
        scale = (double)C * k * k + (double)B * Ho * Wo;   /* terms in the longest sum, each |·| ≤ 1 */
        printf("    B %d C %d %dx%d O %d k %d s %d pad %d: max err y %.1e dx %.1e dw %.1e db %.1e\n", B, C, H, W, O, k, s, pad,
               err_y, err_dx, err_dw, err_db);
        CHECK_MSG(err_y <= 1e-6 * scale && err_dx <= 1e-6 * scale && err_dw <= 1e-6 * scale && err_db <= 1e-6 * scale,
                  "case %zu: conv2d differs from the direct convolution", ci);
        free(dx); free(dw);
        vg_tensor_free(x); vg_tensor_free(w); vg_tensor_free(b); vg_tensor_free(dy);
        vg_arena_reset();
    }
}

VG_TEST(nn_parity_layernorm) { parity_case("layernorm", 3, (const char *[]){"x", "weight", "bias"}, l_layernorm); }
VG_TEST(nn_parity_bias_gelu) { parity_case("bias_gelu", 2, (const char *[]){"x", "bias"}, l_bias_gelu); }
VG_TEST(nn_parity_attention) { parity_case("attention", 1, (const char *[]){"qkv"}, l_attention); }
VG_TEST(nn_parity_mhsa) {
    parity_case("mhsa", 5, (const char *[]){"x", "qkv.weight", "qkv.bias", "proj.weight", "proj.bias"}, l_mhsa);
}

VG_TEST(nn_parity_attention_weights) {
    vg_st_file *f = ref_open();
    REQUIRE(f);
    vg_tensor *qkv = ref_tensor(f, "attention", "qkv", false);
    vg_tensor *attn = NULL;
    vg_tensor *y = vg_attention_fn(qkv, 2, 0, false, NULL, &attn);
    REQUIRE(y && attn);
    ref_check(f, "attention", "weights", attn);
    vg_tensor_free(qkv);
    vg_st_close(f);
    vg_arena_reset();
}

static void cross_entropy_parity(const char *cs, double eps) {
    vg_st_file *f = ref_open();
    if (!f) return;
    vg_tensor *logits = ref_tensor(f, cs, "logits", true);
    char key[96], err[256];
    snprintf(key, sizeof key, "%s.labels", cs);
    int64_t lab64[6];
    int32_t labels[6];
    REQUIRE(logits && vg_st_read_i64(f, key, lab64, 6, err, sizeof err) == 0);
    for (int i = 0; i < 6; i++) labels[i] = (int32_t)lab64[i];
    vg_tensor *loss = vg_cross_entropy_fn(logits, labels, eps);
    ref_check(f, cs, "loss", loss);
    REQUIRE(loss && vg_backward(loss, NULL));
    ref_check(f, cs, "dlogits", logits->grad);
    vg_tensor_free(logits);
    vg_st_close(f);
    vg_arena_reset();
}
VG_TEST(nn_parity_cross_entropy) { cross_entropy_parity("cross_entropy", 0.0); }
VG_TEST(nn_parity_cross_entropy_smoothing) { cross_entropy_parity("cross_entropy_ls", 0.1); }

/* ---- regularisation: timm's SoftTargetCrossEntropy on Mixup targets, drop_path given a mask
 * (tests/reference/make_regularization_reference.py) */
#define REG_REF_PATH "tests/reference/regularization_reference.safetensors"
VG_TEST(nn_parity_soft_target_cross_entropy_mixup) {
    vg_st_file *f = ref_open_file(REG_REF_PATH);
    REQUIRE(f);
    vg_tensor *logits = ref_tensor(f, "soft_ce", "logits", true);
    int64_t lab64[6]; int32_t labels[6];
    char err[256];
    REQUIRE(logits && vg_st_read_i64(f, "soft_ce.labels", lab64, 6, err, sizeof err) == 0);
    for (int i = 0; i < 6; i++) labels[i] = (int32_t)lab64[i];
    /* our mixup_target (λ 0.7, smoothing 0.1) against timm's */
    vg_tensor *t = vg_empty(VG_DIMS(6, 10));
    vg_mixup_targets(labels, 6, 10, 0.7, 0.1, vg_data(t));
    ref_check(f, "soft_ce", "targets", t);
    vg_tensor *loss = vg_soft_cross_entropy_fn(logits, vg_data(t));
    ref_check(f, "soft_ce", "loss", loss);
    REQUIRE(loss && vg_backward(loss, NULL));
    ref_check(f, "soft_ce", "dlogits", logits->grad);
    vg_tensor_free(logits);
    vg_st_close(f);
    vg_arena_reset();
    ref_path = REF_PATH;
}

VG_TEST(nn_parity_drop_path_given_mask) {
    vg_st_file *f = ref_open_file(REG_REF_PATH);
    REQUIRE(f);
    vg_tensor *x = ref_tensor(f, "drop_path", "x", true), *mask = ref_tensor(f, "drop_path", "mask", false);
    vg_tensor *dy = ref_tensor(f, "drop_path", "dy", false);
    REQUIRE(x && mask && dy);
    vg_tensor *y = vg_drop_path_masked_fn(x, mask);
    ref_check(f, "drop_path", "y", y);
    REQUIRE(y && vg_backward(y, dy));
    ref_check(f, "drop_path", "dx", x->grad);
    vg_tensor_free(x); vg_tensor_free(mask); vg_tensor_free(dy);
    vg_st_close(f);
    vg_arena_reset();
    ref_path = REF_PATH;
}

/* timm's PatchDropout with its kept patches given: the gather and its backward */
VG_TEST(nn_parity_patch_dropout_given_indices) {
    vg_st_file *f = ref_open_file(REG_REF_PATH);
    REQUIRE(f);
    vg_tensor *x = ref_tensor(f, "patch_drop", "x", true), *dy = ref_tensor(f, "patch_drop", "dy", false);
    int64_t keep[3 * 4];
    char err[256];
    REQUIRE(x && dy && vg_st_read_i64(f, "patch_drop.keep", keep, 12, err, sizeof err) == 0);
    vg_tensor *idx = vg_empty(VG_DIMS(3, 5));      /* the class token, then patch k is row 1 + k */
    for (int b = 0; b < 3; b++) {
        vg_data(idx)[b * 5] = 0;
        for (int k = 0; k < 4; k++) vg_data(idx)[b * 5 + 1 + k] = (real)(1 + keep[b * 4 + k]);
    }
    vg_tensor *y = vg_token_gather_fn(x, idx);
    ref_check(f, "patch_drop", "y", y);
    REQUIRE(y && vg_backward(y, dy));
    ref_check(f, "patch_drop", "dx", x->grad);
    vg_tensor_free(x); vg_tensor_free(dy);
    vg_st_close(f);
    vg_arena_reset();
    ref_path = REF_PATH;
}

/* kept rows: the prefix, then K distinct patches in increasing order, each patch kept with
 * probability K/N; a sample's rows depend on its index in the global batch, not on the batch split */
VG_TEST(nn_patch_dropout_rows_and_modes) {
    enum { B = 3000, T = 17, N = 16 };
    CHECK(vg_patch_dropout_keep(16, 0.25) == 12 && vg_patch_dropout_keep(16, 0.5) == 8 &&
          vg_patch_dropout_keep(64, 0.25) == 48 && vg_patch_dropout_keep(3, 0.9) == 1);
    const int64_t K = 12, R = 1 + K;
    real *idx = malloc(sizeof *idx * B * R);
    REQUIRE(idx);
    vg_rng rng = vg_rng_seed(3);
    vg_dropout_first_sample(0);
    vg_patch_dropout_indices(idx, B, T, 1, 0.25, &rng);
    int count[N] = {0}, bad = 0;
    for (int b = 0; b < B; b++) {
        bad += idx[b * R] != 0;
        for (int k = 1; k < R; k++) {
            const int r = (int)idx[b * R + k];
            bad += r < 1 || r >= T || (k > 1 && r <= (int)idx[b * R + k - 1]);
            if (r >= 1 && r < T) count[r - 1]++;
        }
    }
    CHECK(bad == 0);
    for (int i = 0; i < N; i++) CHECK_CLOSE(count[i] / (double)B, 0.75, 0.03);
    /* samples 1000.. drawn as a batch of their own (a second rank's slice) get the same rows */
    real *part = malloc(sizeof *part * 500 * R);
    REQUIRE(part);
    vg_rng again = vg_rng_seed(3);
    vg_dropout_first_sample(1000);
    vg_patch_dropout_indices(part, 500, T, 1, 0.25, &again);
    vg_dropout_first_sample(0);
    CHECK(!memcmp(part, idx + 1000 * R, sizeof *part * 500 * R));
    free(part); free(idx);
    /* the op: (B, 1 + K, D) rows of x; eval and p = 0 are the identity (no node, no draw) */
    vg_tensor *x = vg_persist(vg_randn(&rng, VG_DIMS(2, T, 3), 0, 1));
    vg_tensor *y = vg_patch_dropout_fn(x, 0.5, 1, true, &rng);
    REQUIRE(y);
    CHECK(y->ndim == 3 && y->shape[0] == 2 && y->shape[1] == 9 && y->shape[2] == 3);
    CHECK(!memcmp(vg_data(y), vg_data(x), sizeof(real) * 3));          /* sample 0's class token */
    vg_rng before = rng;
    CHECK(vg_patch_dropout_fn(x, 0.5, 1, false, &rng) == x && vg_patch_dropout_fn(x, 0.0, 1, true, &rng) == x);
    CHECK(!memcmp(&before, &rng, sizeof rng));
    CHECK(vg_patch_dropout_fn(x, 1.0, 1, true, &rng) == NULL && strstr(vg_error(), "probability"));
    CHECK(vg_patch_dropout_fn(x, 0.2, 1, true, NULL) == NULL && strstr(vg_error(), "rng"));
    CHECK(vg_patch_dropout_fn(x, 0.2, T, true, &rng) == NULL && strstr(vg_error(), "prefix"));
    vg_tensor *bad_idx = vg_full(VG_DIMS(2, 2), (real)T);
    CHECK(vg_token_gather_fn(x, bad_idx) == NULL && strstr(vg_error(), "not a row"));
    vg_tensor_free(x);
    vg_arena_reset();
}

VG_TEST(nn_drop_path_per_sample_and_modes) {
    vg_rng rng = vg_rng_seed(21);
    vg_tensor *x = vg_persist(vg_randn(&rng, VG_DIMS(4000, 3, 2), 0, 1));
    /* every sample is either all zero or all x/keep; about p of them are dropped */
    vg_tensor *y = vg_drop_path_fn(x, 0.3, true, &rng);
    REQUIRE(y);
    int dropped = 0;
    for (int b = 0; b < 4000; b++) {
        int zeros = 0, scaled = 0;
        for (int i = 0; i < 6; i++) {
            real v = vg_data(y)[b * 6 + i], u = vg_data(x)[b * 6 + i];
            zeros += v == 0; scaled += fabs((double)v - (double)u / 0.7) < 1e-5;
        }
        CHECK(zeros == 6 || scaled == 6);
        dropped += zeros == 6;
    }
    CHECK_CLOSE(dropped / 4000.0, 0.3, 0.03);
    /* eval and p = 0 are the identity (no node, no draw) */
    vg_rng before = rng;
    CHECK(vg_drop_path_fn(x, 0.3, false, &rng) == x && vg_drop_path_fn(x, 0.0, true, &rng) == x);
    CHECK(!memcmp(&before, &rng, sizeof rng));
    CHECK(vg_drop_path_fn(x, 1.0, true, &rng) == NULL);
    CHECK(vg_drop_path_fn(x, 0.2, true, NULL) == NULL);
    vg_tensor_free(x);
    vg_arena_reset();
}

VG_TEST(nn_soft_target_cross_entropy_equals_hard_labels) {
    /* one-hot targets smoothed by ε give exactly the hard-label loss and gradient */
    vg_rng rng = vg_rng_seed(2);
    vg_tensor *a = vg_persist(vg_randn(&rng, VG_DIMS(5, 7), 0, 2)), *b = vg_persist(a);
    a->requires_grad = b->requires_grad = true;
    int32_t y[5] = {0, 6, 3, 3, 1};
    real t[35];
    vg_mixup_targets(y, 5, 7, 1.0, 0.1, t);
    vg_tensor *la = vg_cross_entropy_fn(a, y, 0.1), *lb = vg_soft_cross_entropy_fn(b, t);
    REQUIRE(la && lb && vg_backward(la, NULL) && vg_backward(lb, NULL));
    CHECK_CLOSE(vg_item(la), vg_item(lb), 1e-6);
    for (int i = 0; i < 35; i++) CHECK_CLOSE(vg_data(a->grad)[i], vg_data(b->grad)[i], 1e-7);
    t[3] = NAN;
    CHECK(vg_soft_cross_entropy_fn(b, t) == NULL && strstr(vg_error(), "target (0, 3)"));
    vg_tensor_free(a); vg_tensor_free(b);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ gelu accuracy */
/* The float build evaluates Φ with a vectorisable erfc approximation: check it against double
 * erfc on a fine grid over [−15, 15] (tails, zero, and the region that matters), its relative
 * error where Φ is small (u in [−9, −1]: an approximation with only an absolute error bound, such
 * as Abramowitz–Stegun 7.1.26, fails here), and that NaN propagates. */
VG_TEST(nn_bias_gelu_accuracy) {
    const int64_t n = 300001;
    vg_tensor *u = vg_param(1, &n);
    for (int64_t i = 0; i < n; i++) vg_data(u)[i] = (real)(-15.0 + 30.0 * (double)i / (double)(n - 1));
    vg_tensor *y = vg_bias_gelu_fn(u, NULL);
    REQUIRE(y && vg_backward(y, vg_ones(1, &n)));
    double ey = 0, ed = 0, ry = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = (double)vg_data(u)[i], cdf = 0.5 * erfc(-x / sqrt(2.0));
        double gy = x * cdf, gd = cdf + x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
        ey = vg_test_max(ey, fabs((double)vg_data(y)[i] - gy) / fmax(1.0, fabs(x)));
        ed = vg_test_max(ed, fabs((double)vg_data(u->grad)[i] - gd));
        if (x >= -9 && x <= -1) ry = vg_test_max(ry, fabs((double)vg_data(y)[i] / gy - 1));
    }
    printf("    gelu over [-15, 15]: error %.3g (scaled by max(1,|u|)), gelu' error %.3g; relative on [-9, -1] %.3g\n", ey, ed, ry);
    CHECK_MSG(ey <= 3e-7 && ed <= 5e-7, "gelu error %.3g (scaled by max(1,|u|)), gelu' error %.3g", ey, ed);
    /* e^(−u²/2)'s argument alone carries u²/2 · 2^−24 relative error: 2.4e-6 at u = −9 */
    CHECK_MSG(ry <= 1e-5, "gelu relative error %.3g on [−9, −1]", ry);
    vg_tensor_free(u);
    vg_arena_reset();
    /* NaN in → NaN out, forward and backward, wherever it sits (vector body or tail) */
    const int64_t m = 37;
    vg_tensor *v = vg_param(1, &m);
    for (int64_t i = 0; i < m; i++) vg_data(v)[i] = (real)(0.1 * (double)i - 1.0);
    vg_data(v)[3] = (real)NAN; vg_data(v)[35] = (real)NAN;
    vg_tensor *w = vg_bias_gelu_fn(v, NULL);
    REQUIRE(w && vg_backward(w, vg_ones(1, &m)));
    for (int64_t i = 0; i < m; i++) {
        const bool nan_in = i == 3 || i == 35;
        CHECK_MSG(isnan(vg_data(w)[i]) == nan_in && isnan(vg_data(v->grad)[i]) == nan_in,
                  "gelu(%g) = %g, gelu' %g", (double)vg_data(v)[i], (double)vg_data(w)[i], (double)vg_data(v->grad)[i]);
    }
    vg_tensor_free(v);
    vg_arena_reset();
}

/* LayerNorm's backward adds dx into an input gradient that already exists (x feeding both the
 * norm and a residual add, as in every ViT block): the same bits as writing dx and adding it. */
VG_TEST(nn_layernorm_backward_adds_into_existing_grad) {
    const int64_t R = 70, D = 48;                    /* rows span two 64-row chunks */
    vg_rng rng = vg_rng_seed(11);
    vg_tensor *x = vg_param(VG_DIMS(R, D)), *x2 = vg_param(VG_DIMS(R, D));
    vg_tensor *w = vg_param(VG_DIMS(D)), *b = vg_param(VG_DIMS(D));
    vg_copy_raw(x, vg_randn(&rng, VG_DIMS(R, D), 0, 1)); vg_copy_raw(x2, x);
    vg_copy_raw(w, vg_randn(&rng, VG_DIMS(D), 1, 0.2)); vg_copy_raw(b, vg_randn(&rng, VG_DIMS(D), 0, 0.2));
    vg_tensor *g = vg_randn(&rng, VG_DIMS(R, D), 0, 1);
    /* y = LN(x) + x: the add's backward gives x its gradient g first, then LN adds dx into it */
    vg_tensor *y = vg_add(vg_layernorm_fn(x, w, b, 1e-6), x);
    REQUIRE(y && vg_backward(y, g));
    /* reference: LN alone gives dx; the sum g + dx in float */
    vg_tensor *y2 = vg_layernorm_fn(x2, w, b, 1e-6);
    REQUIRE(y2 && vg_backward(y2, g));
    int diff = 0;
    for (int64_t i = 0; i < R * D; i++) {
        const real want = vg_data(g)[i] + vg_data(x2->grad)[i];
        diff += memcmp(&want, &vg_data(x->grad)[i], sizeof want) != 0;
    }
    CHECK_MSG(diff == 0, "%d of %lld gradient values differ from g + dx", diff, (long long)(R * D));
    vg_tensor_free(x); vg_tensor_free(x2); vg_tensor_free(w); vg_tensor_free(b);
    vg_arena_reset();
}

/* LayerNorm without weight and bias is LayerNorm with weight 1 and bias 0, bit for bit: the
 * output and dx (its backward's sums run in vector lanes where the CPU has AVX-512, with or
 * without a weight); D = 19 leaves a tail after two groups of 8. */
VG_TEST(nn_layernorm_without_affine_is_unit_affine) {
    const int64_t R = 40, D = 19;
    vg_rng rng = vg_rng_seed(12);
    vg_tensor *x = vg_param(VG_DIMS(R, D)), *x2 = vg_param(VG_DIMS(R, D));
    vg_tensor *w = vg_param(VG_DIMS(D)), *b = vg_param(VG_DIMS(D));
    vg_copy_raw(x, vg_randn(&rng, VG_DIMS(R, D), 0.5, 2)); vg_copy_raw(x2, x);
    vg_fill_raw(w, 1);
    vg_tensor *g = vg_randn(&rng, VG_DIMS(R, D), 0, 1);
    vg_tensor *y = vg_layernorm_fn(x, NULL, NULL, 1e-6), *y2 = vg_layernorm_fn(x2, w, b, 1e-6);
    REQUIRE(y && y2 && vg_backward(y, g) && vg_backward(y2, g));
    CHECK(memcmp(vg_data(y), vg_data(y2), sizeof(real) * (size_t)(R * D)) == 0);
    CHECK(memcmp(vg_data(x->grad), vg_data(x2->grad), sizeof(real) * (size_t)(R * D)) == 0);
    vg_tensor_free(x); vg_tensor_free(x2); vg_tensor_free(w); vg_tensor_free(b);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ dropout */
VG_TEST(nn_dropout_fraction_and_scale) {
    const int64_t n = 200000;
    const double p = 0.3;
    vg_tensor *x = vg_ones(1, &n);
    vg_rng rng = vg_rng_seed(5);
    vg_tensor *y = vg_dropout_fn(x, p, true, &rng);
    REQUIRE(y);
    int64_t zeros = 0, bad = 0;
    const real scale = (real)(1.0 / (1.0 - p));
    for (int64_t i = 0; i < n; i++) {
        real v = vg_data(y)[i];
        if (v == 0) zeros++;
        else if (v != scale) bad++;
    }
    CHECK_CLOSE((double)zeros / (double)n, p, 0.005);   /* ±5σ for n = 2e5 */
    CHECK(bad == 0);
    /* the mean is preserved in expectation */
    double mean = 0;
    for (int64_t i = 0; i < n; i++) mean += (double)vg_data(y)[i];
    CHECK_CLOSE(mean / (double)n, 1.0, 0.01);
    vg_arena_reset();
}

VG_TEST(nn_dropout_eval_is_identity) {
    vg_rng rng = vg_rng_seed(1);
    vg_tensor *x = vg_randn(&rng, VG_DIMS(4, 5), 0, 1);
    vg_rng before = rng;
    CHECK(vg_dropout_fn(x, 0.5, false, &rng) == x);
    CHECK(vg_dropout_fn(x, 0.0, true, &rng) == x);
    CHECK(memcmp(&before, &rng, sizeof rng) == 0);       /* eval draws nothing */
    CHECK(vg_dropout_fn(x, 1.5, true, &rng) == NULL && strstr(vg_error(), "not in [0, 1]"));
    vg_arena_reset();
}

VG_TEST(nn_dropout_same_rng_same_mask) {
    vg_tensor *x = vg_param(VG_DIMS(64, 33));
    vg_init_constant(x, 2.0);
    vg_rng r1 = vg_rng_seed(99), r2 = vg_rng_seed(99), r3 = vg_rng_seed(100);
    vg_tensor *a = vg_dropout_fn(x, 0.5, true, &r1), *b = vg_dropout_fn(x, 0.5, true, &r2);
    vg_tensor *c = vg_dropout_fn(x, 0.5, true, &r3);
    REQUIRE(a && b && c);
    CHECK(memcmp(vg_data(a), vg_data(b), sizeof(real) * 64 * 33) == 0);
    CHECK(memcmp(vg_data(a), vg_data(c), sizeof(real) * 64 * 33) != 0);
    REQUIRE(vg_backward(a, vg_ones(VG_DIMS(64, 33))));
    int mismatched = 0;                                  /* dx = mask = y / x */
    for (int i = 0; i < 64 * 33; i++) mismatched += vg_data(x->grad)[i] * 2 != vg_data(a)[i];
    CHECK(mismatched == 0);
    vg_tensor_free(x);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ cross-entropy, accuracy */
VG_TEST(nn_cross_entropy_rejects_bad_label) {
    vg_tensor *logits = vg_zeros(VG_DIMS(3, 4));
    int32_t labels[3] = {0, 4, 1};
    vg_clear_error();
    CHECK(vg_cross_entropy_fn(logits, labels, 0) == NULL);
    CHECK_MSG(strstr(vg_error(), "label 4 at row 1 is out of range [0, 4)"), "message was: %s", vg_error());
    labels[1] = -1;
    CHECK(vg_cross_entropy_fn(logits, labels, 0) == NULL);
    CHECK_MSG(strstr(vg_error(), "label -1 at row 1"), "message was: %s", vg_error());
    CHECK(vg_cross_entropy_fn(vg_zeros(VG_DIMS(3)), labels, 0) == NULL);
    /* uniform logits: loss = log C whatever the smoothing */
    labels[1] = 2;
    vg_tensor *loss = vg_cross_entropy_fn(logits, labels, 0.2);
    REQUIRE(loss);
    CHECK_CLOSE(vg_item(loss), log(4.0), 1e-6);
    vg_arena_reset();
}

VG_TEST(nn_top1_correct) {
    real v[] = {0, 3, 1,   5, 5, 0,   -1, -2, -0.5};      /* argmax 1, 0 (first max), 2 */
    vg_tensor *logits = vg_from_array(VG_DIMS(3, 3), v);
    CHECK(vg_top1_correct(logits, (int32_t[]){1, 0, 2}) == 3);
    CHECK(vg_top1_correct(logits, (int32_t[]){1, 1, 0}) == 1);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ attention */
VG_TEST(nn_attention_weights_rows_sum_to_one) {
    vg_rng rng = vg_rng_seed(3);
    vg_tensor *qkv = vg_randn(&rng, VG_DIMS(2, 7, 3 * 12), 0, 3);
    vg_tensor *attn = NULL;
    vg_tensor *y = vg_attention_fn(qkv, 3, 0.5, true, &rng, &attn);   /* weights are before dropout */
    REQUIRE(y && attn);
    CHECK(attn->ndim == 4 && attn->shape[0] == 2 && attn->shape[1] == 3 && attn->shape[2] == 7 && attn->shape[3] == 7);
    CHECK(y->ndim == 3 && y->shape[2] == 12);
    double worst = 0;
    for (int64_t r = 0; r < 2 * 3 * 7; r++) {
        double s = 0;
        for (int j = 0; j < 7; j++) { real a = vg_data(attn)[r * 7 + j]; s += a; CHECK(a >= 0); }
        if (fabs(s - 1) > worst) worst = fabs(s - 1);
    }
    CHECK_CLOSE(worst, 0, 1e-5);
    CHECK(vg_attention_fn(qkv, 5, 0, false, NULL, NULL) == NULL && strstr(vg_error(), "not divisible by 5 heads"));
    vg_arena_reset();
}

/* LSA: with log-scale s the weights are softmax over j ≠ i of (q_i·k_j)·e^s, and A_ii is exactly 0;
 * in the cross form query r is token r (the mask is (r, r)); one token alone keeps its key; a
 * log-scale of two values is refused. Against double sums here (N = 11: a vector and a tail). */
VG_TEST(nn_attention_lsa_masks_the_diagonal) {
    vg_rng rng = vg_rng_seed(5);
    const int B = 2, N = 11, H = 2, hd = 4, D = H * hd;
    vg_tensor *qkv = vg_persist(vg_randn(&rng, VG_DIMS(B, N, 3 * D), 0, 1.5));
    vg_tensor *ls = vg_persist(vg_full(VG_DIMS(1), 0.3));
    vg_tensor *attn = NULL;
    REQUIRE(vg_attention_lsa_fn(qkv, ls, true, H, 0, false, NULL, &attn) && attn);
    const real *x = vg_data(qkv), *a = vg_data(attn);
    double worst = 0;
    int diag_nonzero = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++) {
                double sc[16], mx = -INFINITY, sum = 0;
                for (int j = 0; j < N; j++) {
                    double d = 0;
                    for (int k = 0; k < hd; k++) d += (double)x[(b * N + i) * 3 * D + h * hd + k] * x[(b * N + j) * 3 * D + D + h * hd + k];
                    sc[j] = d * exp(0.3);
                    if (j != i && sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j < N; j++) if (j != i) sum += exp(sc[j] - mx);
                const real *row = a + (((size_t)b * H + h) * N + i) * N;
                diag_nonzero += row[i] != 0;
                for (int j = 0; j < N; j++) if (j != i) worst = fmax(worst, fabs(row[j] - exp(sc[j] - mx) / sum));
            }
    CHECK_MSG(diag_nonzero == 0, "%d diagonal weights are not 0", diag_nonzero);
    CHECK_MSG(worst < 2e-6, "weights off by %.3g from softmax over j != i", worst);
    /* cross: 3 queries = tokens 0..2 */
    vg_tensor *q = vg_persist(vg_randn(&rng, VG_DIMS(1, 3, D), 0, 1)), *kv = vg_persist(vg_randn(&rng, VG_DIMS(1, 5, 2 * D), 0, 1));
    REQUIRE(vg_attention_cross_lsa_fn(q, kv, ls, true, H, 0, false, NULL, &attn) && attn);
    for (int h = 0; h < H; h++) for (int r = 0; r < 3; r++) CHECK(vg_data(attn)[((size_t)h * 3 + r) * 5 + r] == 0);
    /* one token: its only key stays (weight 1), nothing becomes NaN */
    vg_tensor *one = vg_persist(vg_randn(&rng, VG_DIMS(1, 1, 3 * D), 0, 1));
    REQUIRE(vg_attention_lsa_fn(one, ls, true, H, 0, false, NULL, &attn) && attn);
    CHECK(vg_data(attn)[0] == 1 && vg_data(attn)[1] == 1);
    vg_tensor *two = vg_persist(vg_full(VG_DIMS(2), 0.1));
    CHECK(vg_attention_lsa_fn(qkv, two, true, H, 0, false, NULL, NULL) == NULL && strstr(vg_error(), "one element"));
    vg_tensor_free(qkv); vg_tensor_free(ls); vg_tensor_free(q); vg_tensor_free(kv); vg_tensor_free(one); vg_tensor_free(two);
    vg_arena_reset();
}

/* The float softmax (vectorised e^x, 8 lanes + masked tail) against softmax(Q·Kᵀ·scale) in double,
 * with N = 65 (ViT on CIFAR: 8 full vectors and a 1-wide tail) and logits spread so far apart
 * that many e^(s − max) underflow (the clamp at −87). q and k are small integers and the scale is
 * 1/4 (hd = 16), so the float GEMM computes S exactly and the error is the softmax's alone. */
VG_TEST(nn_attention_softmax_matches_double) {
    vg_rng rng = vg_rng_seed(11);
    const int B = 2, N = 65, H = 2, hd = 16, D = H * hd;
    for (int spread = 0; spread < 2; spread++) {
        vg_tensor *qkv = vg_randn(&rng, VG_DIMS(B, N, 3 * D), 0, spread ? 6 : 1);
        for (int64_t i = 0; i < vg_numel(qkv); i++) vg_data(qkv)[i] = (real)nearbyint(vg_data(qkv)[i]);
        vg_tensor *attn = NULL;
        REQUIRE(vg_attention_fn(qkv, H, 0, false, NULL, &attn) && attn);
        const real *q = vg_data(qkv), *a = vg_data(attn);
        double worst = 0;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < N; i++) {
                    double s[65], m = -INFINITY, sum = 0;
                    for (int j = 0; j < N; j++) {
                        double d = 0;
                        for (int k = 0; k < hd; k++)
                            d += (double)q[(b * N + i) * 3 * D + h * hd + k] * (double)q[(b * N + j) * 3 * D + D + h * hd + k];
                        s[j] = d / sqrt((double)hd);
                        if (s[j] > m) m = s[j];
                    }
                    for (int j = 0; j < N; j++) { s[j] = exp(s[j] - m); sum += s[j]; }
                    for (int j = 0; j < N; j++) {
                        double e = fabs((double)a[((b * H + h) * N + i) * N + j] - s[j] / sum);
                        if (e > worst) worst = e;
                    }
                }
        CHECK_CLOSE(worst, 0, 3e-7);
        vg_arena_reset();
    }
}

/* ------------------------------------------------------------------ linear shapes and errors */
VG_TEST(nn_linear_accepts_4d_and_reports_mismatch) {
    vg_rng rng = vg_rng_seed(4);
    vg_linear m;
    vg_linear_init(&m, 6, 5, true, &rng);
    vg_tensor *x = vg_randn(&rng, VG_DIMS(2, 3, 4, 6), 0, 1);
    vg_tensor *y = vg_linear_forward(&m, x);
    REQUIRE(y);
    CHECK(y->ndim == 4 && y->shape[0] == 2 && y->shape[1] == 3 && y->shape[2] == 4 && y->shape[3] == 5);
    /* row (1, 2, 3) by hand */
    double want = (double)vg_data(m.bias)[4];
    for (int i = 0; i < 6; i++) want += (double)vg_get(x, (int64_t[]){1, 2, 3, i}) * (double)vg_data(m.weight)[4 * 6 + i];
    CHECK_CLOSE(vg_get(y, (int64_t[]){1, 2, 3, 4}), want, 1e-5);
    CHECK(vg_linear_forward(&m, vg_zeros(VG_DIMS(2, 7))) == NULL);
    CHECK_MSG(strstr(vg_error(), "in_features = 6"), "message was: %s", vg_error());
    vg_linear_free(&m);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ parameters and init */
VG_TEST(nn_params_names_and_weight_decay) {
    vg_rng rng = vg_rng_seed(8);
    vg_mhsa attn;
    vg_layernorm norm;
    vg_mhsa_init(&attn, 16, 4, true, 0, 0, &rng);
    vg_layernorm_init(&norm, 16, 1e-6);
    vg_params p = {0};
    vg_mhsa_params(&attn, &p, "blocks.0.attn");
    vg_layernorm_params(&norm, &p, "blocks.0.norm1");
    REQUIRE(p.n == 6);
    CHECK(!strcmp(p.items[0].name, "blocks.0.attn.qkv.weight") && p.items[0].weight_decay);
    CHECK(!strcmp(p.items[1].name, "blocks.0.attn.qkv.bias") && !p.items[1].weight_decay);
    CHECK(!strcmp(p.items[2].name, "blocks.0.attn.proj.weight") && p.items[2].weight_decay);
    CHECK(!strcmp(p.items[3].name, "blocks.0.attn.proj.bias") && !p.items[3].weight_decay);
    CHECK(!strcmp(p.items[4].name, "blocks.0.norm1.weight") && !p.items[4].weight_decay);
    CHECK(vg_params_find(&p, "blocks.0.attn.proj.weight") == attn.proj.weight);
    CHECK(vg_params_find(&p, "blocks.0.attn.nope") == NULL);
    CHECK(vg_params_count(&p) == 48 * 16 + 48 + 16 * 16 + 16 + 16 + 16);
    CHECK(vg_data(norm.weight)[3] == 1 && vg_data(norm.bias)[3] == 0);
    vg_params_free(&p);
    vg_mhsa_free(&attn);
    vg_layernorm_free(&norm);
    /* a conv: weight decays (4-D), bias does not */
    vg_conv2d conv;
    vg_conv2d_init(&conv, 3, 8, 4, 4, 0, true, &rng);
    vg_conv2d_params(&conv, &p, "patch_embed.proj");
    CHECK(p.n == 2 && !strcmp(p.items[0].name, "patch_embed.proj.weight") && p.items[0].weight_decay &&
          !strcmp(p.items[1].name, "patch_embed.proj.bias") && !p.items[1].weight_decay && vg_params_count(&p) == 8 * 48 + 8);
    vg_params_free(&p);
    vg_conv2d_free(&conv);
}

VG_TEST(nn_init_bounds_and_statistics) {
    vg_rng rng = vg_rng_seed(12);
    vg_linear lin;
    vg_linear_init(&lin, 100, 50, true, &rng);           /* bound 1/√100 = 0.1 for W and b */
    const double wmax = vg_test_max_abs(vg_data(lin.weight), 5000), bmax = vg_test_max_abs(vg_data(lin.bias), 50);
    CHECK(wmax <= 0.1 && wmax > 0.095);
    CHECK(bmax <= 0.1);
    vg_conv2d conv;
    vg_conv2d_init(&conv, 3, 8, 4, 4, 0, true, &rng);
    CHECK(vg_fan_in(conv.weight) == 48);
    vg_tensor *t = vg_param(VG_DIMS(200, 100));
    vg_init_trunc_normal(t, &rng, 0.02);
    double s = 0, s2 = 0, amax = vg_test_max_abs(vg_data(t), 20000);
    for (int i = 0; i < 20000; i++) { double v = vg_data(t)[i]; s += v; s2 += v * v; }
    CHECK_CLOSE(s / 20000, 0, 1e-3);
    CHECK_CLOSE(sqrt(s2 / 20000), 0.02, 1e-3);
    CHECK(amax <= 2.0);
    vg_init_trunc_normal(t, &rng, 1.5);                  /* bounds ±2 absolute bite here */
    amax = vg_test_max_abs(vg_data(t), 20000);
    CHECK(amax <= 2.0 && amax > 1.9);
    vg_init_xavier_uniform(t, &rng);                     /* √(6 / 300) */
    amax = vg_test_max_abs(vg_data(t), 20000);
    CHECK(amax <= sqrt(6.0 / 300.0) && amax > 0.95 * sqrt(6.0 / 300.0));
    /* same seed → same parameters */
    vg_rng a = vg_rng_seed(77), b = vg_rng_seed(77);
    vg_linear l1, l2;
    vg_linear_init(&l1, 9, 7, true, &a);
    vg_linear_init(&l2, 9, 7, true, &b);
    CHECK(memcmp(vg_data(l1.weight), vg_data(l2.weight), sizeof(real) * 63) == 0);
    vg_linear_free(&lin); vg_linear_free(&l1); vg_linear_free(&l2);
    vg_conv2d_free(&conv);
    vg_tensor_free(t);
}

/* ------------------------------------------------------------------ determinism across threads */
/* conv → layernorm → linear → bias_gelu → attention → cross-entropy; all gradients */
static void run_stack(int threads, real *out, int64_t *n_out) {
    omp_set_num_threads(threads);
    vg_rng rng = vg_rng_seed(2024);
    vg_conv2d conv; vg_layernorm ln; vg_linear fc, head;
    vg_conv2d_init(&conv, 3, 24, 4, 4, 0, true, &rng);
    vg_layernorm_init(&ln, 24, 1e-6);
    vg_linear_init(&fc, 24, 72, true, &rng);
    vg_linear_init(&head, 24, 10, true, &rng);
    vg_tensor *x = vg_randn(&rng, VG_DIMS(16, 3, 32, 32), 0, 1);
    vg_tensor *p = vg_conv2d_forward(&conv, x);                                    /* (16, 24, 8, 8) */
    p = vg_transpose(vg_flatten(p, 2, 3), 1, 2);                                   /* (16, 64, 24) */
    vg_tensor *h = vg_linear_forward(&fc, vg_layernorm_forward(&ln, p));           /* (16, 64, 72) */
    h = vg_bias_gelu_fn(h, NULL);
    h = vg_attention_fn(h, 3, 0.1, true, &rng, NULL);                              /* (16, 64, 24) */
    vg_tensor *logits = vg_linear_forward(&head, vg_mean(h, 1, (int[]){1}, false)); /* (16, 10) */
    int32_t labels[16];
    for (int i = 0; i < 16; i++) labels[i] = i % 10;
    vg_tensor *loss = vg_cross_entropy_fn(logits, labels, 0.1);
    bool ok = loss && vg_backward(loss, NULL);
    CHECK_MSG(ok, "stack failed: %s", vg_error());
    int64_t k = 0;
    if (ok) {
        vg_tensor *ts[] = {loss, conv.weight->grad, conv.bias->grad, ln.weight->grad, ln.bias->grad,
                           fc.weight->grad, fc.bias->grad, head.weight->grad};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
            memcpy(out + k, vg_data(ts[i]), sizeof(real) * (size_t)vg_numel(ts[i]));
            k += vg_numel(ts[i]);
        }
    }
    *n_out = k;
    vg_conv2d_free(&conv); vg_layernorm_free(&ln); vg_linear_free(&fc); vg_linear_free(&head);
    vg_arena_reset();
}

VG_TEST(nn_same_bits_for_any_thread_count) {
    const int64_t cap = 20000;
    real *a = malloc(sizeof(real) * cap), *b = malloc(sizeof(real) * cap);
    int64_t na = 0, nb = 0;
    int saved = omp_get_max_threads();
    run_stack(1, a, &na);
    run_stack(saved > 1 ? saved : 4, b, &nb);
    omp_set_num_threads(saved);
    CHECK(na > 0 && na == nb && na <= cap);
    CHECK_MSG(memcmp(a, b, sizeof(real) * (size_t)na) == 0, "gradients differ between 1 and %d threads", saved);
    free(a); free(b);
}

/* the log-softmax inside cross-entropy subtracts the row maximum: logits of 1000 do not overflow */
VG_TEST(nn_cross_entropy_no_overflow_at_large_logits) {
    vg_tensor *logits = vg_from_array(VG_DIMS(2, 3), (real[]){1, 2, 3, 1000, 1000, 1000});
    vg_tensor *loss = vg_cross_entropy_fn(logits, (const int32_t[]){2, 0}, 0);
    REQUIRE(loss);
    CHECK_CLOSE(vg_item(loss), 0.5 * (0.40760596 + log(3.0)), 1e-6);   /* −log softmax: 0.4076…, log 3 */
    vg_arena_reset();
}
