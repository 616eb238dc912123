/* test_augment.c — Mixup/CutMix (λ and box statistics, the label weight equals the pasted area,
 * the pairing and targets), RandAugment (the config string, each operation's effect at known
 * magnitudes) and random erasing (box statistics, probability). The loader-level properties
 * (thread independence, resume) are in test_data.c; the PyTorch parity of the targets with the
 * soft-target loss in test_nn.c. */
#include "tests/test.h"
#include "data/augment.h"
#include <stdlib.h>
#include <string.h>

/* ---------- Mixup / CutMix ---------- */
VG_TEST(augment_beta_sample_moments) {
    const double ab[3][2] = {{0.8, 0.8}, {1.0, 1.0}, {0.2, 0.2}};
    for (int k = 0; k < 3; k++) {
        vg_rng r = vg_rng_seed(10 + k);
        double a = ab[k][0], b = ab[k][1], s = 0, s2 = 0;
        const int n = 40000;
        for (int i = 0; i < n; i++) {
            double x = vg_beta_sample(&r, a, b);
            CHECK(x >= 0 && x <= 1);
            s += x; s2 += x * x;
        }
        double mean = s / n, var = s2 / n - mean * mean;
        double want_var = a * b / ((a + b) * (a + b) * (a + b + 1));
        CHECK_CLOSE(mean, a / (a + b), 0.01);
        CHECK_CLOSE(var, want_var, 0.01 * want_var + 0.002);
    }
}

/* a batch whose image b is filled with the value b + 1 */
static real *constant_batch(int B, int C, int H, int W) {
    real *x = malloc(sizeof(real) * (size_t)B * C * H * W);
    for (int b = 0; b < B; b++)
        for (size_t k = 0; k < (size_t)C * H * W; k++) x[(size_t)b * C * H * W + k] = (real)(b + 1);
    return x;
}

VG_TEST(augment_cutmix_lambda_is_the_pasted_area) {
    const int B = 6, C = 3, H = 32, W = 24;
    vg_mixup_config c = {0, 1.0, 1.0, 0.5, 0.0, 10};
    vg_rng r = vg_rng_seed(3);
    int clipped = 0;
    double lam_sum = 0;
    const int n = 400;
    for (int t = 0; t < n; t++) {
        vg_mixup_params p = vg_mixup_draw(&c, &r, H, W);
        REQUIRE(p.cutmix);
        CHECK(0 <= p.y0 && p.y0 <= p.y1 && p.y1 <= H && 0 <= p.x0 && p.x0 <= p.x1 && p.x1 <= W);
        CHECK(p.lam == 1.0 - (double)(p.y1 - p.y0) * (p.x1 - p.x0) / (H * W));
        double uncut = sqrt(1 - p.lam);   /* the box before clipping would be at least this big */
        clipped += (p.y1 - p.y0) < (int)(H * uncut) - 1 || (p.x1 - p.x0) < (int)(W * uncut) - 1;
        lam_sum += p.lam;
        real *x = constant_batch(B, C, H, W);
        vg_mixup_apply(&p, x, B, C, H, W);
        /* the share of each image's pixels that are still its own is λ; the rest is its partner's */
        for (int b = 0; b < B; b++) {
            int own = 0, partner = 0;
            for (size_t k = 0; k < (size_t)C * H * W; k++) {
                real v = x[(size_t)b * C * H * W + k];
                own += v == (real)(b + 1); partner += v == (real)(B - b);
            }
            CHECK_CLOSE((double)own / (C * H * W), p.lam, 1e-12);
            CHECK(own + partner == C * H * W);
        }
        /* the label weights: own label λ, the partner's 1 − λ */
        int32_t y[6] = {0, 1, 2, 3, 4, 5};
        real tg[6 * 10];
        vg_mixup_targets(y, B, 10, p.lam, 0.0, tg);
        CHECK_CLOSE(tg[0 * 10 + 0], p.lam, 1e-6);
        CHECK_CLOSE(tg[0 * 10 + 5], 1 - p.lam, 1e-6);
        free(x);
    }
    CHECK_MSG(clipped > 20, "boxes near the border should be clipped often (got %d of %d)", clipped, n);
    /* Beta(1, 1): E[uncorrected λ] = ½; clipping only raises λ */
    CHECK(lam_sum / n > 0.5 && lam_sum / n < 0.7);
}

VG_TEST(augment_mixup_pairs_the_flipped_batch) {
    const int B = 5, C = 2, H = 3, W = 4;
    size_t img = (size_t)C * H * W;
    real *x = malloc(sizeof(real) * B * img), *orig = malloc(sizeof(real) * B * img);
    vg_rng r = vg_rng_seed(1);
    for (size_t k = 0; k < B * img; k++) orig[k] = x[k] = (real)vg_rng_normal(&r);
    vg_mixup_config c = {0.8, 0, 1.0, 0.5, 0.1, 4};
    vg_mixup_params p = vg_mixup_draw(&c, &r, H, W);
    CHECK(!p.cutmix && p.lam > 0 && p.lam < 1);
    vg_mixup_apply(&p, x, B, C, H, W);
    for (int b = 0; b < B; b++)
        for (size_t k = 0; k < img; k++)
            CHECK_CLOSE(x[b * img + k], p.lam * orig[b * img + k] + (1 - p.lam) * orig[(B - 1 - b) * img + k], 1e-5);
    /* targets: smoothed one-hots mixed the same way, each row sums to 1 */
    int32_t y[5] = {0, 3, 1, 1, 2};
    real t[5 * 4];
    vg_mixup_targets(y, B, 4, p.lam, 0.1, t);
    for (int b = 0; b < B; b++) {
        double s = 0;
        for (int k = 0; k < 4; k++) {
            double q1 = k == y[b] ? 0.925 : 0.025, q2 = k == y[B - 1 - b] ? 0.925 : 0.025;
            CHECK_CLOSE(t[b * 4 + k], p.lam * q1 + (1 - p.lam) * q2, 1e-6);
            s += t[b * 4 + k];
        }
        CHECK_CLOSE(s, 1.0, 1e-6);
    }
    free(x); free(orig);
}

VG_TEST(augment_mixup_prob_and_switch) {
    vg_rng r = vg_rng_seed(9);
    vg_mixup_config c = {0.8, 1.0, 0.6, 0.3, 0.1, 10};
    int mixed = 0, cut = 0;
    const int n = 20000;
    for (int t = 0; t < n; t++) {
        vg_mixup_params p = vg_mixup_draw(&c, &r, 32, 32);
        mixed += p.lam != 1.0 || p.cutmix;
        cut += p.cutmix;
    }
    CHECK_CLOSE((double)mixed / n, 0.6, 0.015);
    CHECK_CLOSE((double)cut / mixed, 0.3, 0.015);
    vg_mixup_config off = {0, 0, 1.0, 0.5, 0.1, 10};
    CHECK(!vg_mixup_enabled(&off));
    CHECK(vg_mixup_draw(&off, &r, 32, 32).lam == 1.0);
    c.prob = 0;
    CHECK(vg_mixup_draw(&c, &r, 32, 32).lam == 1.0);
    /* the same generator state gives the same draw */
    c.prob = 1;
    vg_rng a = vg_rng_seed(77), b = vg_rng_seed(77);
    vg_mixup_params pa = vg_mixup_draw(&c, &a, 32, 32), pb = vg_mixup_draw(&c, &b, 32, 32);
    CHECK(pa.lam == pb.lam && pa.cutmix == pb.cutmix && pa.y0 == pb.y0 && pa.y1 == pb.y1 && pa.x0 == pb.x0 && pa.x1 == pb.x1);
}

/* ---------- RandAugment ---------- */
VG_TEST(augment_randaugment_config_string) {
    vg_randaugment_config c;
    char err[256];
    REQUIRE(vg_randaugment_parse("rand-m9-mstd0.5-inc1", &c, err, sizeof err) == 0);
    CHECK(c.magnitude == 9 && c.num_layers == 2 && c.magnitude_std == 0.5 && c.increasing && c.prob == 0.5 && c.magnitude_max == 10);
    REQUIRE(vg_randaugment_parse("rand-n3-m7-mstd101-p0.8-mmax12", &c, err, sizeof err) == 0);
    CHECK(c.num_layers == 3 && c.magnitude == 7 && isinf(c.magnitude_std) && c.prob == 0.8 && c.magnitude_max == 12 && !c.increasing);
    REQUIRE(vg_randaugment_parse("trivial", &c, err, sizeof err) == 0);
    CHECK(c.num_layers == 1 && isinf(c.magnitude_std) && c.prob == 1.0);
    const char *bad[] = {"rand-mx", "rand-q3", "rand-m9-inc2", "augmix-m3", "rand-p2", "randm9"};
    for (int i = 0; i < 6; i++) {
        err[0] = 0;
        CHECK_MSG(vg_randaugment_parse(bad[i], &c, err, sizeof err) == -1 && err[0], "'%s' was accepted", bad[i]);
    }
    CHECK(vg_randaugment_op_count(false) == 15);
    CHECK(!strcmp(vg_randaugment_op_name(4, true), "PosterizeIncreasing"));
}

static int op_index(const char *name) {
    for (int i = 0; i < vg_randaugment_op_count(false); i++) if (!strcmp(vg_randaugment_op_name(i, false), name)) return i;
    return -1;
}

VG_TEST(augment_randaugment_operations) {
    enum { C = 3, H = 32, W = 32, N = C * H * W };
    uint8_t img[N], ref[N], scratch[N], fill[3] = {125, 123, 114};
    vg_rng r = vg_rng_seed(4);
    /* a horizontal ramp in channel 0, a vertical one in 1, noise in 2 */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            ref[y * W + x] = (uint8_t)(40 + 4 * x);
            ref[H * W + y * W + x] = (uint8_t)(60 + 3 * y);
            ref[2 * H * W + y * W + x] = (uint8_t)vg_rng_below(&r, 256);
        }
    #define APPLY(name, m) (memcpy(img, ref, N), vg_randaugment_op(op_index(name), false, (m), img, C, H, W, fill, &r, scratch))
    /* identities: zero magnitude for the geometric ops, factor 1 (m = 5) for the enhancers */
    const char *ident0[] = {"Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel", "SolarizeAdd"};
    for (int i = 0; i < 6; i++) { APPLY(ident0[i], 0); CHECK_MSG(!memcmp(img, ref, N), "%s at m 0 changed the image", ident0[i]); }
    const char *ident5[] = {"Color", "Contrast", "Brightness", "Sharpness"};
    for (int i = 0; i < 4; i++) { APPLY(ident5[i], 5); CHECK_MSG(!memcmp(img, ref, N), "%s at factor 1 changed the image", ident5[i]); }
    /* Invert, Posterize (m 10: keep 4 bits), Solarize (m 5: threshold 128) */
    APPLY("Invert", 3);
    for (int i = 0; i < N; i++) CHECK(img[i] == 255 - ref[i]);
    APPLY("Posterize", 10);
    for (int i = 0; i < N; i++) CHECK(img[i] == (ref[i] & 0xF0));
    APPLY("Solarize", 5);
    for (int i = 0; i < N; i++) CHECK(img[i] == (ref[i] < 128 ? ref[i] : 255 - ref[i]));
    /* AutoContrast stretches each channel to 0..255 (PIL truncates: the top may land on 254) */
    APPLY("AutoContrast", 0);
    for (int c = 0; c < 2; c++) {
        uint8_t lo = 255, hi = 0;
        for (int i = 0; i < H * W; i++) { uint8_t v = img[c * H * W + i]; lo = v < lo ? v : lo; hi = v > hi ? v : hi; }
        CHECK(lo == 0 && hi >= 254);
    }
    /* Brightness m 0 (factor 0.1): 10 % of each value, truncated */
    APPLY("Brightness", 0);
    for (int i = 0; i < N; i++) CHECK(img[i] == (uint8_t)(0.1 * ref[i]));
    /* TranslateXRel m 10: 0.45·32 = 14.4 px either way; uncovered columns take the fill */
    APPLY("TranslateXRel", 10);
    bool left = img[0] != fill[0];    /* content moved left: column 0 reads column 14.4 */
    int x_in = left ? 0 : W - 1, x_fill = left ? W - 1 : 0;
    CHECK(img[x_fill] == fill[0] && img[H * W + x_fill] == fill[1]);
    CHECK_CLOSE(img[x_in], 40 + 4 * (left ? 14.4 : W - 1 - 14.4), 1.0);
    /* Rotate m 10 (±30°) keeps the centre pixel's neighbourhood and fills the corners */
    APPLY("Rotate", 10);
    CHECK(img[0] == fill[0] && img[W - 1] == fill[0]);
    CHECK(abs((int)img[H * W + 16 * W + 16] - ref[H * W + 16 * W + 16]) <= 3);
    /* Equalize spreads the ramp over the whole range */
    APPLY("Equalize", 0);
    CHECK(img[0] < 16 && img[W - 1] > 230);
    /* the policy with the same generator state gives the same image; others differ */
    vg_randaugment_config c;
    char err[128];
    REQUIRE(vg_randaugment_parse("rand-m9-mstd0.5-inc1", &c, err, sizeof err) == 0);
    uint8_t a[N], b[N];
    vg_rng ra = vg_rng_seed(8), rb = vg_rng_seed(8);
    memcpy(a, ref, N); memcpy(b, ref, N);
    vg_randaugment_apply(&c, a, C, H, W, fill, &ra, scratch);
    vg_randaugment_apply(&c, b, C, H, W, fill, &rb, scratch);
    CHECK(!memcmp(a, b, N));
    int changed = 0;
    for (int t = 0; t < 50; t++) { memcpy(a, ref, N); vg_randaugment_apply(&c, a, C, H, W, fill, &ra, scratch); changed += memcmp(a, ref, N) != 0; }
    CHECK(changed > 30 && changed < 50);     /* two ops at p ½: about ¾ of images change */
    #undef APPLY
}

/* ---------- random erasing ---------- */
VG_TEST(augment_random_erasing_boxes) {
    enum { C = 3, H = 32, W = 32 };
    static real img[C * H * W];
    vg_rng r = vg_rng_seed(12);
    int erased = 0;
    double area = 0;
    const int n = 4000;
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < C * H * W; i++) img[i] = 100;
        vg_erase_box e = vg_random_erasing(img, C, H, W, 0.25, &r);
        if (!e.erased) { for (int i = 0; i < C * H * W; i++) CHECK(img[i] == 100); continue; }
        erased++;
        CHECK(e.top >= 0 && e.left >= 0 && e.top + e.h <= H && e.left + e.w <= W && e.h >= 1 && e.w >= 1);
        double a = (double)e.h * e.w / (H * W);
        CHECK(a > 0.01 && a < 0.40);
        double aspect = (double)e.h / e.w;
        CHECK(aspect > 0.2 && aspect < 5);
        area += a;
        int inside = 0, kept = 0;
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    bool in = y >= e.top && y < e.top + e.h && x >= e.left && x < e.left + e.w;
                    real v = img[(c * H + y) * W + x];
                    inside += in && v != 100 && fabs(v) < 8;   /* N(0, 1) values */
                    kept += !in && v == 100;
                }
        CHECK(inside == C * e.h * e.w && kept == C * (H * W - e.h * e.w));
    }
    CHECK_CLOSE((double)erased / n, 0.25, 0.02);
    /* area U(0.02, 1/3) except boxes that do not fit: the mean a little under 0.177 */
    CHECK(area / erased > 0.13 && area / erased < 0.19);
    vg_erase_box none = vg_random_erasing(img, C, H, W, 0.0, &r);
    CHECK(!none.erased);
}
