/* test_vit.c — the Vision Transformer: patch order worked examples, conv = unfold + Linear,
 * names/order/counts/init as timm, position tables and resampling against PyTorch, dropout and
 * train/eval, the shape trace, and full PyTorch parity (logits, loss, every gradient) read from
 * tests/reference/vit_reference.safetensors (tests/reference/make_vit_reference.py). */
#include "test.h"
#include "vit/vit.h"
#include "tensor/safetensors.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define VIT_REF "tests/reference/vit_reference.safetensors"
#define POS_REF "tests/reference/posembed_reference.safetensors"

static vg_tensor *from_values(int ndim, const int64_t *shape, const double *v) {
    vg_tensor *t = vg_empty(ndim, shape);
    for (int64_t i = 0, n = vg_numel(t); i < n; i++) vg_data(t)[i] = (real)v[i];
    return t;
}

/* max |a − b| over two same-shape tensors (any strides) */
static double max_abs_diff(const vg_tensor *a, const vg_tensor *b) {
    vg_tensor *ca = vg_contiguous_raw(a), *cb = vg_contiguous_raw(b);
    return vg_test_compare(vg_data(ca), vg_data(cb), (size_t)vg_numel(ca)).max_abs;
}

/* ------------------------------------------------------------------ worked examples */
VG_TEST(vit_patch_example_zeros_cls_pos) {
    vg_arena_reset();
    /* zeros(1, 1, 4, 4), patch 2 → 4 patches of 4 values; Linear(4 → 3) all-ones weight, no bias */
    vg_tensor *img = vg_zeros(VG_DIMS(1, 1, 4, 4));
    vg_tensor *patches = vg_patchify(img, 2);
    REQUIRE(patches && patches->ndim == 3 && patches->shape[1] == 4 && patches->shape[2] == 4);
    vg_tensor *tok = vg_linear_fn(patches, vg_ones(VG_DIMS(3, 4)), NULL);
    static const double cls_values[] = {1, 2, 3};     /* named: gcc 12 misreads a compound literal here */
    vg_tensor *cls = from_values(VG_DIMS(1, 1, 3), cls_values);
    vg_tensor *x = vg_vit_embed_tokens(tok, cls, vg_full(VG_DIMS(1, 5, 3), 0.5));
    REQUIRE(x && x->shape[0] == 1 && x->shape[1] == 5 && x->shape[2] == 3);
    const double want[5][3] = {{1.5, 2.5, 3.5}, {.5, .5, .5}, {.5, .5, .5}, {.5, .5, .5}, {.5, .5, .5}};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) CHECK_CLOSE(vg_get(x, (int64_t[]){0, i, j}), want[i][j], 1e-6);

    /* the same through the model's conv patch embedding (conv weight ones(3, 1, 2, 2)) */
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 4; cfg.patch_size = 2; cfg.in_chans = 1; cfg.embed_dim = 3; cfg.num_heads = 1; cfg.depth = 1;
    vg_rng rng = vg_rng_seed(1);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    vg_fill_raw(m.patch_embed.weight, 1); vg_fill_raw(m.patch_embed.bias, 0);
    vg_copy_raw(m.cls_token, cls); vg_fill_raw(m.pos_embed, 0.5);
    vg_tensor *y = vg_vit_embed_tokens(vg_vit_patch_embed(&m, img), m.cls_token, m.pos_embed);
    REQUIRE(y);
    CHECK(max_abs_diff(x, y) < 1e-6);
    vg_vit_free(&m);
    vg_arena_reset();
}

VG_TEST(vit_patch_example_1_to_16) {
    vg_arena_reset();
    vg_tensor *img = vg_arange(1, 17, 1);
    img = vg_reshape(img, VG_DIMS(1, 1, 4, 4));
    vg_tensor *p = vg_patchify(img, 2);
    REQUIRE(p);
    const double rows[4][4] = {{1, 2, 5, 6}, {3, 4, 7, 8}, {9, 10, 13, 14}, {11, 12, 15, 16}};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) CHECK_CLOSE(vg_get(p, (int64_t[]){0, i, k}), rows[i][k], 0);
    /* x·W with W (4, 2) = [[.25, 1], [.25, 0], [.25, 0], [.25, −1]] is a Linear with weight Wᵀ */
    vg_tensor *W = from_values(VG_DIMS(4, 2), (const double[]){.25, 1, .25, 0, .25, 0, .25, -1});
    vg_tensor *e = vg_linear_fn(p, vg_contiguous(vg_transpose(W, 0, 1)), NULL);
    REQUIRE(e);
    const double want[4][2] = {{3.5, -5}, {5.5, -5}, {11.5, -5}, {13.5, -5}};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++) CHECK_CLOSE(vg_get(e, (int64_t[]){0, i, k}), want[i][k], 1e-6);
    /* a multi-channel patch is flattened (C, P, P): channel 1 follows all of channel 0 */
    vg_tensor *two = vg_concat(2, (vg_tensor *[]){img, vg_mul_scalar(img, 100)}, 1);  /* (1, 2, 4, 4) */
    vg_tensor *q = vg_patchify(two, 2);
    REQUIRE(q && q->shape[2] == 8);
    const double first[8] = {1, 2, 5, 6, 100, 200, 500, 600};
    for (int k = 0; k < 8; k++) CHECK_CLOSE(vg_get(q, (int64_t[]){0, 0, k}), first[k], 0);
    CHECK(vg_patchify(vg_zeros(VG_DIMS(1, 1, 5, 4)), 2) == NULL && strstr(vg_error(), "patchify"));
    vg_arena_reset();
}

VG_TEST(vit_conv_patch_embed_equals_unfold_linear) {
    vg_arena_reset();
    vg_rng rng = vg_rng_seed(3);
    const int B = 2, C = 3, S = 12, P = 4, D = 7;
    vg_tensor *img = vg_randn(&rng, VG_DIMS(B, C, S, S), 0, 1);
    vg_tensor *w = vg_randn(&rng, VG_DIMS(D, C, P, P), 0, 0.3), *b = vg_randn(&rng, VG_DIMS(D), 0, 1);
    vg_tensor *conv = vg_conv2d_fn(img, w, b, P, 0);                          /* (B, D, 3, 3) */
    conv = vg_transpose(vg_flatten(conv, 2, 3), 1, 2);                        /* (B, 9, D) */
    vg_tensor *lin = vg_linear_fn(vg_patchify(img, P), vg_reshape(w, VG_DIMS(D, C * P * P)), b);
    REQUIRE(conv && lin && vg_same_shape(conv, lin));
    double err = max_abs_diff(conv, lin);
    CHECK_MSG(err < 1e-5, "conv vs unfold+linear: max abs err %g", err);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ names, counts, init */
VG_TEST(vit_param_names_order_and_counts_match_pytorch) {
    char err[256];
    vg_st_file *f = vg_st_open(VIT_REF, err, sizeof err);
    if (!f) VG_SKIP(err);
    /* the preset counts PyTorch computed */
    for (int i = 0; vg_vit_preset_names[i]; i++) {
        vg_vit_config cfg;
        REQUIRE(vg_vit_preset(vg_vit_preset_names[i], &cfg));
        char key[64]; snprintf(key, sizeof key, "params.%s", vg_vit_preset_names[i]);
        const char *v = vg_st_meta(f, key);
        REQUIRE(v);
        long long want = atoll(v);
        CHECK_MSG(vg_vit_param_count(&cfg) == want, "%s: %lld vs PyTorch %lld", vg_vit_preset_names[i],
                  (long long)vg_vit_param_count(&cfg), want);
        vg_rng rng = vg_rng_seed(0);
        vg_vit m;
        REQUIRE(vg_vit_init(&m, &cfg, &rng));
        vg_params p = {0};
        vg_vit_params(&m, &p);
        CHECK_MSG(vg_params_count(&p) == want, "%s: instantiated %lld vs %lld", vg_vit_preset_names[i],
                  (long long)vg_params_count(&p), want);
        vg_params_free(&p);
        vg_vit_free(&m);
    }
    vg_vit_config tiny;
    REQUIRE(vg_vit_preset("vit-tiny-cifar", &tiny));
    CHECK(vg_vit_param_count(&tiny) == 2693578);
    CHECK(!vg_vit_preset("vit-huge", &tiny) && strstr(vg_error(), "vit-huge"));

    /* names and order: timm's state_dict keys, as the script listed them */
    const char *keys = vg_st_meta(f, "keys");
    REQUIRE(keys);
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 16; cfg.embed_dim = 32; cfg.depth = 2; cfg.num_heads = 2;
    vg_rng rng = vg_rng_seed(0);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    vg_params p = {0};
    vg_vit_state(&m, &p);
    const char *s = keys;
    for (int i = 0; i < p.n; i++) {
        char quoted[160]; snprintf(quoted, sizeof quoted, "\"%s\"", p.items[i].name);
        const char *at = strstr(s, quoted);
        CHECK_MSG(at != NULL, "state key %d '%s' missing or out of timm's order", i, p.items[i].name);
        if (at) s = at + strlen(quoted);
        vg_tensor *t = p.items[i].tensor;
        const vg_st_tensor *r = vg_st_find(f, p.items[i].name);
        CHECK_MSG(r && r->ndim == t->ndim && !memcmp(r->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim),
                  "%s: shape differs from PyTorch's", p.items[i].name);
        /* weight decay: only ≥ 2-D weights, never pos_embed / cls_token */
        bool wd = t->ndim >= 2 && strcmp(p.items[i].name, "pos_embed") && strcmp(p.items[i].name, "cls_token");
        CHECK_MSG(p.items[i].weight_decay == wd, "%s: weight_decay %d", p.items[i].name, p.items[i].weight_decay);
    }
    CHECK(p.n == 4 + 2 * 12 + 4);
    CHECK(!strcmp(p.items[0].name, "cls_token") && !strcmp(p.items[1].name, "pos_embed") &&
          !strcmp(p.items[2].name, "patch_embed.proj.weight") && !strcmp(p.items[p.n - 1].name, "head.bias"));
    vg_params_free(&p);
    vg_vit_free(&m);

    /* fixed sin-cos: saved in the state, not trained */
    cfg.pos_embed = VG_VIT_POS_SINCOS2D;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    vg_params tr = {0}, st = {0};
    vg_vit_params(&m, &tr);
    vg_vit_state(&m, &st);
    CHECK(vg_params_find(&tr, "pos_embed") == NULL && vg_params_find(&st, "pos_embed") == m.pos_embed);
    CHECK(st.n == tr.n + 1 && !m.pos_embed->requires_grad);
    vg_params_free(&tr); vg_params_free(&st);
    vg_vit_free(&m);
    vg_st_close(f);
}

typedef struct { double mean, std, maxabs; } stats;
static stats tensor_stats(const vg_tensor *t) {
    stats s = {0, 0, 0};
    int64_t n = vg_numel(t);
    const real *d = vg_data(t);
    for (int64_t i = 0; i < n; i++) { s.mean += d[i]; s.maxabs = vg_test_max(s.maxabs, fabs(d[i])); }
    s.mean /= n;
    for (int64_t i = 0; i < n; i++) s.std += (d[i] - s.mean) * (d[i] - s.mean);
    s.std = sqrt(s.std / n);
    return s;
}

VG_TEST(vit_init_as_timm_and_seeded) {
    vg_vit_config cfg;
    REQUIRE(vg_vit_preset("vit-tiny-cifar", &cfg));
    vg_rng r1 = vg_rng_seed(11), r2 = vg_rng_seed(11);
    vg_vit a, b;
    REQUIRE(vg_vit_init(&a, &cfg, &r1));
    REQUIRE(vg_vit_init(&b, &cfg, &r2));
    vg_params pa = {0}, pb = {0};
    vg_vit_params(&a, &pa); vg_vit_params(&b, &pb);
    REQUIRE(pa.n == pb.n);
    for (int i = 0; i < pa.n; i++) {
        const char *name = pa.items[i].name;
        vg_tensor *t = pa.items[i].tensor;
        CHECK_MSG(max_abs_diff(t, pb.items[i].tensor) == 0, "%s: same seed, different values", name);
        CHECK_MSG(t->requires_grad && t->persistent, "%s: not a persistent parameter", name);
        stats s = tensor_stats(t);
        if (!strcmp(name, "cls_token")) {
            CHECK_MSG(s.maxabs < 1e-5 && s.maxabs > 0, "cls_token max %g", s.maxabs);
        } else if (!strcmp(name, "pos_embed") || (strstr(name, ".weight") && t->ndim == 2)) {
            CHECK_MSG(fabs(s.std - 0.02) < 0.002 && fabs(s.mean) < 0.002 && s.maxabs < 0.2,
                      "%s: mean %g std %g (trunc-normal .02)", name, s.mean, s.std);
        } else if (!strcmp(name, "patch_embed.proj.weight") || !strcmp(name, "patch_embed.proj.bias")) {
            double bound = 1.0 / sqrt(3.0 * 4 * 4);        /* PyTorch Conv2d default: U(±1/√fan_in) */
            CHECK_MSG(s.maxabs <= bound && s.maxabs > 0.9 * bound, "%s: max %g, bound %g", name, s.maxabs, bound);
        } else if (strstr(name, "norm") && strstr(name, ".weight")) {
            CHECK_MSG(s.mean == 1 && s.std == 0, "%s: not ones", name);
        } else {                                            /* Linear and norm biases */
            CHECK_MSG(s.maxabs == 0, "%s: not zeros", name);
        }
    }
    vg_params_free(&pa); vg_params_free(&pb);
    vg_vit_free(&a); vg_vit_free(&b);
}

VG_TEST(vit_config_errors) {
    vg_vit_config cfg = vg_vit_config_default();
    vg_vit m;
    vg_rng rng = vg_rng_seed(0);
    cfg.img_size = 30;
    CHECK(!vg_vit_init(&m, &cfg, &rng) && strstr(vg_error(), "vit: img_size 30 is not a multiple of patch_size 4"));
    cfg = vg_vit_config_default(); cfg.depth = 0;               /* a field's range (vit_fields.h) */
    CHECK_MSG(!vg_vit_init(&m, &cfg, &rng) && strstr(vg_error(), "vit: depth 0 is not in [1, 1024]"), "%s", vg_error());
    cfg = vg_vit_config_default(); cfg.num_heads = 5;
    CHECK(!vg_vit_init(&m, &cfg, &rng) && strstr(vg_error(), "num_heads"));
    cfg = vg_vit_config_default(); cfg.embed_dim = 6; cfg.num_heads = 2; cfg.pos_embed = VG_VIT_POS_SINCOS2D;
    CHECK(!vg_vit_init(&m, &cfg, &rng) && strstr(vg_error(), "sincos2d"));
    cfg = vg_vit_config_default(); cfg.embed_dim = 16; cfg.num_heads = 2; cfg.depth = 1;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    vg_arena_reset();
    CHECK(vg_vit_forward(&m, vg_zeros(VG_DIMS(2, 3, 28, 28)), false, NULL) == NULL &&
          strstr(vg_error(), "(2, 3, 28, 28)"));
    CHECK(vg_vit_forward(&m, NULL, false, NULL) == NULL);
    vg_vit_free(&m);
    /* without qkv bias: 11 tensors per block, counts still agree */
    cfg.qkv_bias = false;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    vg_params p = {0};
    vg_vit_params(&m, &p);
    CHECK(p.n == 4 + 11 + 4 && vg_params_count(&p) == vg_vit_param_count(&cfg));
    CHECK(vg_vit_forward(&m, vg_zeros(VG_DIMS(1, 3, 32, 32)), false, NULL) != NULL);
    vg_params_free(&p);
    vg_vit_free(&m);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ PyTorch parity */
static bool load_tensor(const vg_st_file *f, const char *name, vg_tensor *t, char *err, size_t n) {
    int64_t cnt = vg_numel(t);
    float *buf = malloc(sizeof(float) * (size_t)cnt);
    if (!buf) return false;
    bool ok = vg_st_read_f32(f, name, buf, (size_t)cnt, err, n) == 0;
    if (ok) for (int64_t i = 0; i < cnt; i++) vg_data(t)[i] = (real)buf[i];
    free(buf);
    return ok;
}

/* max abs error, and relative to the reference's largest magnitude; prints one line */
static double compare(const char *what, vg_tensor *got, const vg_st_file *f, const char *key, double *max_rel_seen) {
    const double rel = vg_test_check_ref(what, got, f, key, 1e-4);
    *max_rel_seen = vg_test_max(*max_rel_seen, rel);
    return rel;
}

static void parity_variant_stem(const char *variant, vg_vit_pool pool, vg_vit_posembed pos, int overlap,
                                const char *stem, bool lsa, bool stem_pool) {
    char err[256];
    vg_st_file *f = vg_st_open(VIT_REF, err, sizeof err);
    if (!f) { vg_test_skip(err); return; }
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 16; cfg.patch_size = 4; cfg.in_chans = 3; cfg.num_classes = 10;
    cfg.embed_dim = 32; cfg.depth = 2; cfg.num_heads = 2; cfg.pool = pool; cfg.pos_embed = pos;
    cfg.patch_overlap = overlap; cfg.lsa = lsa; cfg.stem_pool = stem_pool;
    if (stem && !vg_vit_parse_stem(stem, &cfg)) vg_test_fail(__FILE__, __LINE__, "stem: %s", vg_error());
    vg_rng rng = vg_rng_seed(0);
    vg_vit m;
    if (!vg_vit_init(&m, &cfg, &rng)) { vg_test_fail(__FILE__, __LINE__, "init: %s", vg_error()); vg_st_close(f); return; }
    vg_arena_reset();
    /* our own sin-cos table must equal the one PyTorch used; load the learned weights otherwise */
    vg_params st = {0};
    vg_vit_state(&m, &st);
    for (int i = 0; i < st.n; i++) {
        const char *key = st.items[i].name;
        if (pos == VG_VIT_POS_SINCOS2D && !strcmp(key, "pos_embed")) continue;
        char okey[160];                 /* the overlapping or stem-fed kernel has a key of its own */
        snprintf(okey, sizeof okey, "%s.%s", key, variant);
        if ((overlap || stem) && !strcmp(key, "patch_embed.proj.weight")) key = okey;
        if (!strcmp(key, "seq_pool.weight")) key = okey;                 /* the variant's own scoring vector */
        if (strstr(key, "attn.scale")) key = okey;                         /* LSA: each block's log-scale */
        if (stem_pool && strstr(key, "backbone")) key = okey;                /* the pooled stem's own weights */
        if (!load_tensor(f, key, st.items[i].tensor, err, sizeof err)) vg_test_fail(__FILE__, __LINE__, "%s", err);
    }
    double worst = 0;
    char what[192];
    if (pos == VG_VIT_POS_SINCOS2D) compare("sincos pos_embed (ours vs PyTorch's)", m.pos_embed, f, "pos_embed.sincos", &worst);

    vg_tensor *x = vg_empty(VG_DIMS(4, 3, 16, 16));
    int64_t lab64[4];
    int32_t labels[4];
    if (!load_tensor(f, "input", x, err, sizeof err) || vg_st_read_i64(f, "labels", lab64, 4, err, sizeof err))
        vg_test_fail(__FILE__, __LINE__, "%s", err);
    for (int i = 0; i < 4; i++) labels[i] = (int32_t)lab64[i];

    vg_params tr = {0};
    vg_vit_params(&m, &tr);
    vg_params_zero_grad(&tr);
    vg_tensor *logits = vg_vit_forward(&m, x, true, NULL);       /* train mode, all rates 0 */
    vg_tensor *loss = vg_cross_entropy_fn(logits, labels, 0.1);
    snprintf(what, sizeof what, "logits.%s", variant);
    compare(what, logits, f, what, &worst);
    double ref_loss = 0;
    vg_st_read_f64(f, (snprintf(what, sizeof what, "loss.%s", variant), what), &ref_loss, 1, err, sizeof err);
    if (loss) {
        CHECK_MSG(fabs(vg_item(loss) - ref_loss) <= 1e-4 * fabs(ref_loss), "%s: %.8f vs PyTorch %.8f", what,
                  (double)vg_item(loss), ref_loss);
        worst = vg_test_max(worst, fabs(vg_item(loss) - ref_loss) / fabs(ref_loss));
    }
    if (vg_backward(loss, NULL)) {
        for (int i = 0; i < tr.n; i++) {
            char key[192];
            snprintf(key, sizeof key, "grad.%s.%s", variant, tr.items[i].name);
            snprintf(what, sizeof what, "grad %s", tr.items[i].name);
            compare(what, tr.items[i].tensor->grad, f, key, &worst);
        }
    } else {
        vg_test_fail(__FILE__, __LINE__, "backward: %s", vg_error());
    }
    /* the retrieval embedding: L2-normalised pooled features */
    vg_tensor *e = vg_vit_embed(&m, x);
    snprintf(what, sizeof what, "embed.%s", variant);
    compare(what, e, f, what, &worst);
    for (int b = 0; e && b < 4; b++) {
        double n2 = 0;
        for (int d = 0; d < 32; d++) n2 += vg_get(e, (int64_t[]){b, d}) * vg_get(e, (int64_t[]){b, d});
        CHECK_CLOSE(sqrt(n2), 1.0, 1e-6);
    }
    printf("    parity %-6s: %d gradients + logits + loss + embed, worst rel err %.2e\n", variant, tr.n, worst);
    vg_params_free(&tr); vg_params_free(&st);
    vg_vit_free(&m);
    vg_st_close(f);
    vg_arena_reset();
}

static void parity_variant(const char *variant, vg_vit_pool pool, vg_vit_posembed pos, int overlap) {
    parity_variant_stem(variant, pool, pos, overlap, NULL, false, false);
}

VG_TEST(vit_pytorch_parity_cls) { parity_variant("cls", VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, 0); }
VG_TEST(vit_pytorch_parity_mean) { parity_variant("mean", VG_VIT_POOL_MEAN, VG_VIT_POS_LEARNED, 0); }
/* locality self-attention: a learned log-scale per block (moved off its start) and no token
 * attending to itself; CLS pooling, so block 1 takes the class-token-only (cross) path */
VG_TEST(vit_pytorch_parity_lsa) { parity_variant_stem("lsa", VG_VIT_POOL_CLS, VG_VIT_POS_LEARNED, 0, NULL, true, false); }
/* sequence pooling (CCT's SeqPool without its bias): softmax over the patch tokens of x·w */
VG_TEST(vit_pytorch_parity_seq_pool) { parity_variant("seq", VG_VIT_POOL_SEQ, VG_VIT_POS_LEARNED, 0); }
VG_TEST(vit_pytorch_parity_sincos) { parity_variant("sincos", VG_VIT_POOL_CLS, VG_VIT_POS_SINCOS2D, 0); }
/* the overlapping patch embedding: nn.Conv2d(kernel 6, stride 4, padding 1) */
VG_TEST(vit_pytorch_parity_overlap) { parity_variant("overlap", VG_VIT_POOL_MEAN, VG_VIT_POS_SINCOS2D, 1); }
/* the conv stem: two [Conv2d(3x3, stride 2, padding 1), ReLU] (8, 16 channels), then a 1x1 patch conv */
VG_TEST(vit_pytorch_parity_conv_stem) {
    parity_variant_stem("stem", VG_VIT_POOL_MEAN, VG_VIT_POS_SINCOS2D, 0, "8,16", false, false);
}
/* CCT's tokenizer (--stem-pool 1): two [Conv2d(3x3, stride 1, padding 1), ReLU, MaxPool2d(3, 2, 1)]
 * (8, 16 channels, weights of their own), then a 1x1 patch conv */
VG_TEST(vit_pytorch_parity_stem_pool) {
    parity_variant_stem("stempool", VG_VIT_POOL_MEAN, VG_VIT_POS_SINCOS2D, 0, "8,16", false, true);
}

/* ------------------------------------------------------------------ position embeddings */
VG_TEST(vit_sincos_table_matches_mae) {
    char err[256];
    vg_st_file *f = vg_st_open(POS_REF, err, sizeof err);
    if (!f) VG_SKIP(err);
    const int cases[][2] = {{32, 4}, {64, 8}, {16, 3}};
    for (int c = 0; c < 3; c++) {
        vg_arena_reset();
        char key[64]; snprintf(key, sizeof key, "sincos.d%d.g%d", cases[c][0], cases[c][1]);
        vg_tensor *t = vg_sincos_2d_pos_embed(cases[c][0], cases[c][1], cases[c][1], true);
        double worst = 0;
        compare(key, t, f, key, &worst);
        CHECK_MSG(worst < 1e-6, "%s: rel err %g", key, worst);
    }
    /* layout: row 1 + i·gw + j; first half column j, second half row i; CLS zeros */
    vg_tensor *t = vg_sincos_2d_pos_embed(8, 2, 3, true);      /* quarter 2: ω = 1, 1/100 */
    REQUIRE(t && t->shape[1] == 7);
    for (int d = 0; d < 8; d++) CHECK(vg_get(t, (int64_t[]){0, 0, d}) == 0);
    int64_t r = 1 + 1 * 3 + 2;                                  /* patch (i=1, j=2) */
    CHECK_CLOSE(vg_get(t, (int64_t[]){0, r, 0}), sin(2.0), 1e-6);
    CHECK_CLOSE(vg_get(t, (int64_t[]){0, r, 1}), sin(0.02), 1e-6);
    CHECK_CLOSE(vg_get(t, (int64_t[]){0, r, 2}), cos(2.0), 1e-6);
    CHECK_CLOSE(vg_get(t, (int64_t[]){0, r, 4}), sin(1.0), 1e-6);
    CHECK_CLOSE(vg_get(t, (int64_t[]){0, r, 7}), cos(0.01), 1e-6);
    CHECK(vg_sincos_2d_pos_embed(6, 2, 2, true) == NULL);
    vg_st_close(f);
    vg_arena_reset();
}

/* t[0, i, j] = sin(a·i + b·j) + c·j, the formula the script used */
static vg_tensor *formula_table(int64_t tokens, int64_t dim, double a, double b, double c) {
    vg_tensor *t = vg_empty(VG_DIMS(1, tokens, dim));
    for (int64_t i = 0; i < tokens; i++)
        for (int64_t j = 0; j < dim; j++) vg_data(t)[i * dim + j] = (real)(float)(sin(a * i + b * j) + c * j);
    return t;
}

VG_TEST(vit_pos_embed_interpolation_matches_pytorch) {
    char err[256];
    vg_st_file *f = vg_st_open(POS_REF, err, sizeof err);
    if (!f) VG_SKIP(err);
    const char *modes[2] = {"bilinear", "bicubic"};
    vg_tensor *small = formula_table(17, 8, 0.3, 0.7, 0.01);
    double worst = 0;
    for (int m = 0; m < 2; m++) {
        const int sizes[][2] = {{6, 6}, {3, 3}, {7, 5}, {4, 4}};
        for (int s = 0; s < 4; s++) {
            char key[64]; snprintf(key, sizeof key, "small.%s.%dx%d", modes[m], sizes[s][0], sizes[s][1]);
            vg_tensor *r = vg_resize_pos_embed(small, 4, 4, sizes[s][0], sizes[s][1], (vg_interp_mode)m);
            REQUIRE(r && r->shape[1] == 1 + sizes[s][0] * sizes[s][1]);
            compare(key, r, f, key, &worst);
        }
        /* same size is the identity */
        CHECK(max_abs_diff(vg_resize_pos_embed(small, 4, 4, 4, 4, (vg_interp_mode)m), small) < 1e-6);
    }
    /* ViT-B: (1, 197, 768) 14×14 → (1, 785, 768) 28×28, sampled values + whole-tensor stats */
    vg_tensor *big = formula_table(197, 768, 0.01, 0.1, 0.0);
    const vg_st_tensor *ix = vg_st_find(f, "big.index");
    REQUIRE(ix);
    int64_t *idx = malloc(sizeof(int64_t) * ix->numel);
    float *want = malloc(sizeof(float) * ix->numel);
    REQUIRE(idx && want && !vg_st_read_i64(f, "big.index", idx, ix->numel, err, sizeof err));
    for (int m = 0; m < 2; m++) {
        vg_tensor *r = vg_resize_pos_embed(big, 14, 14, 28, 28, (vg_interp_mode)m);
        REQUIRE(r && r->shape[0] == 1 && r->shape[1] == 785 && r->shape[2] == 768);
        char key[64]; snprintf(key, sizeof key, "big.%s.values", modes[m]);
        REQUIRE(!vg_st_read_f32(f, key, want, ix->numel, err, sizeof err));
        double max_err = 0;
        for (size_t k = 0; k < ix->numel; k++) max_err = vg_test_max(max_err, fabs(vg_data(r)[idx[k]] - (double)want[k]));
        double st[3], got[3] = {0, 0, 0};
        snprintf(key, sizeof key, "big.%s.stats", modes[m]);
        REQUIRE(!vg_st_read_f64(f, key, st, 3, err, sizeof err));
        for (int64_t k = 0; k < vg_numel(r); k++) {
            double v = vg_data(r)[k];
            got[0] = vg_test_max(got[0], fabs(v)); got[1] += fabs(v); got[2] += v;
        }
        printf("    %-8s 14x14→28x28: %zu sampled values max abs err %.2e; max|y| %.7f (torch %.7f), "
               "Σ|y| %.4f (torch %.4f)\n", modes[m], ix->numel, max_err, got[0], st[0], got[1], st[1]);
        CHECK_MSG(max_err < 2e-6, "%s: sampled max abs err %g", modes[m], max_err);
        CHECK_CLOSE(got[0], st[0], 1e-6);
        CHECK_CLOSE(got[1], st[1], 1e-6 * st[1]);
        CHECK_CLOSE(got[2], st[2], 1e-5 * st[1]);
    }
    free(idx); free(want);
    CHECK(vg_resize_pos_embed(big, 14, 13, 28, 28, VG_INTERP_BICUBIC) == NULL && strstr(vg_error(), "resize_pos_embed"));
    vg_st_close(f);
    vg_arena_reset();
}

VG_TEST(vit_resize_model_for_new_resolution) {
    vg_vit_config cfg;
    REQUIRE(vg_vit_preset("vit-micro-cifar", &cfg));
    cfg.depth = 1;
    for (int pos = 0; pos < 2; pos++) {
        cfg.pos_embed = (vg_vit_posembed)pos;
        vg_rng rng = vg_rng_seed(5);
        vg_vit m;
        REQUIRE(vg_vit_init(&m, &cfg, &rng));
        real cls0 = vg_data(m.pos_embed)[3];
        const int sizes[2] = {48, 64};
        for (int s = 0; s < 2; s++) {
            vg_arena_reset();
            REQUIRE(vg_vit_set_img_size(&m, sizes[s], s ? VG_INTERP_BICUBIC : VG_INTERP_BILINEAR));
            int g = sizes[s] / 4;
            CHECK(m.pos_embed->shape[1] == 1 + g * g && m.pos_embed->persistent);
            CHECK(m.pos_embed->requires_grad == (pos == 0));
            CHECK(vg_data(m.pos_embed)[3] == cls0);
            vg_tensor *logits = vg_vit_forward(&m, vg_zeros(VG_DIMS(2, 3, sizes[s], sizes[s])), false, NULL);
            CHECK_MSG(logits && logits->shape[0] == 2 && logits->shape[1] == 10, "%s", vg_error());
        }
        CHECK(!vg_vit_set_img_size(&m, 50, VG_INTERP_BICUBIC));
        vg_vit_free(&m);
    }
    vg_arena_reset();
}

/* ------------------------------------------------------------------ pooling, dropout, embed */
VG_TEST(vit_mean_pool_and_dropout_modes) {
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 16; cfg.embed_dim = 32; cfg.depth = 2; cfg.num_heads = 2; cfg.pool = VG_VIT_POOL_MEAN;
    vg_rng rng = vg_rng_seed(9);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    vg_arena_reset();
    vg_tensor *x = vg_randn(&rng, VG_DIMS(3, 3, 16, 16), 0, 1);
    /* mean pooling = the mean of tokens 1..N of the normed features */
    vg_tensor *feat = vg_vit_forward_features(&m, x, false, NULL);
    vg_tensor *pooled = vg_vit_pool_tokens(&m, feat);
    REQUIRE(feat && pooled && feat->shape[1] == 17 && pooled->shape[1] == 32);
    double err = 0;
    for (int b = 0; b < 3; b++)
        for (int d = 0; d < 32; d++) {
            double s = 0;
            for (int t = 1; t < 17; t++) s += vg_get(feat, (int64_t[]){b, t, d});
            err = vg_test_max(err, fabs(s / 16 - vg_get(pooled, (int64_t[]){b, d})));
        }
    CHECK(err < 1e-6);

    vg_tensor *eval = vg_vit_forward(&m, x, false, NULL);
    /* all rates 0: train == eval, rng untouched */
    vg_rng r0 = vg_rng_seed(1), r0c = r0;
    CHECK(max_abs_diff(vg_vit_forward(&m, x, true, &r0), eval) == 0);
    CHECK(!memcmp(&r0, &r0c, sizeof r0));
    /* with dropout: train differs from eval, is reproducible from the rng state; eval unchanged */
    m.cfg.drop_rate = 0.1; m.cfg.attn_drop_rate = 0.1;
    vg_rng ra = vg_rng_seed(2), rb = vg_rng_seed(2);
    vg_tensor *ta = vg_vit_forward(&m, x, true, &ra), *tb = vg_vit_forward(&m, x, true, &rb);
    REQUIRE(ta && tb);
    CHECK(max_abs_diff(ta, tb) == 0);
    CHECK(max_abs_diff(ta, eval) > 1e-4);
    CHECK(max_abs_diff(vg_vit_forward(&m, x, false, NULL), eval) == 0);
    vg_vit_free(&m);
    vg_arena_reset();
}

/* stochastic depth: timm's linspace of rates over the blocks, one per-sample mask per residual
 * branch (drop_path1 after attention, drop_path2 after the MLP); off in eval */
VG_TEST(vit_drop_path_rates_and_masks) {
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 16; cfg.embed_dim = 32; cfg.depth = 5; cfg.num_heads = 2; cfg.drop_path_rate = 0.4;
    for (int i = 0; i < 5; i++) CHECK_CLOSE(vg_vit_drop_path_at(&cfg, i), 0.1 * i, 1e-15);
    vg_rng rng = vg_rng_seed(6);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    vg_tensor *x = vg_randn(&rng, VG_DIMS(32, 3, 16, 16), 0, 1);
    x->requires_grad = true;
    vg_tensor *y = vg_vit_forward(&m, x, true, &rng);
    REQUIRE(y);
    vg_node *nodes[4096];
    int n = vg_graph_nodes(y, nodes, 4096), k = 0, dropped = 0;
    for (int j = 0; j < n; j++) {
        if (strcmp(nodes[j]->op, "drop_path")) continue;
        /* in forward order: block 1's two branches, block 2's, …: rate 0.1·(1 + k/2) */
        double keep = 1 - 0.1 * (1 + k / 2);
        const vg_tensor *mask = nodes[j]->saved[0];
        REQUIRE(vg_numel(mask) == 32);
        for (int b = 0; b < 32; b++) {
            double v = vg_data(mask)[b];
            CHECK(v == 0 || fabs(v - 1 / keep) < 1e-6);
            dropped += v == 0;
        }
        k++;
    }
    CHECK(k == 8);                                     /* block 0 has rate 0: no node */
    CHECK(dropped > 32 * 8 * 0.25 * 0.5 && dropped < 32 * 8 * 0.25 * 1.6);   /* mean rate 0.25 */
    vg_rng before = rng;
    vg_tensor *e1 = vg_vit_forward(&m, x, false, &rng);
    m.cfg.drop_path_rate = 0;
    vg_tensor *e0 = vg_vit_forward(&m, x, true, &rng);
    CHECK(max_abs_diff(e1, e0) == 0 && !memcmp(&before, &rng, sizeof rng));
    vg_vit_free(&m);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ the last block for the class token alone */
/* attention ops in the graph of `out` whose output holds one token (B, 1, D) */
/* a 16-px model from cfg initialised with seed, and a persistent input batch (B, 3, 16, 16) drawn next */
static vg_tensor *small_vit_and_input(vg_vit *m, const vg_vit_config *cfg, uint64_t seed, int64_t B) {
    vg_rng rng = vg_rng_seed(seed);
    if (!vg_vit_init(m, cfg, &rng)) return NULL;
    vg_arena_reset();
    return vg_persist(vg_randn(&rng, VG_DIMS(B, 3, 16, 16), 0, 1));
}

static int one_token_attentions(vg_tensor *out) {
    vg_node *nodes[2048];
    int n = vg_graph_nodes(out, nodes, 2048), k1 = 0;
    for (int k = 0; k < n && k < 2048; k++)
        if (!strcmp(nodes[k]->op, "attention") && nodes[k]->out->shape[1] == 1) k1++;
    return k1;
}

VG_TEST(vit_cls_only_last_block_same_logits_and_gradients) {
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 16; cfg.embed_dim = 32; cfg.depth = 2; cfg.num_heads = 2;
    for (int pool = 0; pool < 2; pool++) {
        cfg.pool = pool ? VG_VIT_POOL_MEAN : VG_VIT_POOL_CLS;
        vg_vit m;
        vg_tensor *x = small_vit_and_input(&m, &cfg, 5, 3);
        REQUIRE(x);
        const int32_t labels[3] = {1, 7, 4};
        vg_params tr = {0};
        vg_vit_params(&m, &tr);
        /* gradients of the full last block (timm's work), then of the one vg_vit_forward picks */
        vg_tensor *grads[64], *logits[2];
        REQUIRE(tr.n <= 64);
        int one_token[2];
        for (int full = 1; full >= 0; full--) {
            m.full_last_block = full;
            vg_params_zero_grad(&tr);
            vg_tensor *y = vg_vit_forward(&m, x, true, NULL);
            REQUIRE(y && y->shape[0] == 3 && y->shape[1] == 10);
            one_token[full] = one_token_attentions(y);
            logits[full] = vg_persist(y);
            REQUIRE(vg_backward(vg_cross_entropy_fn(y, labels, 0.1), NULL));
            for (int i = 0; i < tr.n; i++)
                if (full) grads[i] = vg_persist(tr.items[i].tensor->grad);
                else {
                    double scale = 1e-30;
                    vg_tensor *g = vg_contiguous_raw(grads[i]);
                    for (int64_t j = 0; j < vg_numel(g); j++) scale = vg_test_max(scale, fabs((double)vg_data(g)[j]));
                    CHECK_MSG(max_abs_diff(tr.items[i].tensor->grad, grads[i]) <= 1e-5 * scale,
                              "pool %d: gradient of %s differs", pool, tr.items[i].name);
                }
            vg_arena_reset();
        }
        CHECK(max_abs_diff(logits[0], logits[1]) < 1e-5);
        /* CLS pooling: the last block's attention computes one query row; mean pooling needs them all */
        CHECK(one_token[1] == 0 && one_token[0] == (pool ? 0 : 1));
        CHECK(vg_vit_forward_flops_done(&m) == (pool ? vg_vit_forward_flops(&cfg) : vg_vit_forward_flops(&cfg) - 2.0 *
              (2 * 17 * 17 * 32 - 2 * 17 * 32 + 2 * 16 * 32 * 32 + 2 * 16 * 32 * 128)));
        /* with dropout: the same rng state gives the same logits (reproducible) */
        m.cfg.drop_rate = 0.2; m.cfg.attn_drop_rate = 0.2;
        vg_rng ra = vg_rng_seed(3), rb = vg_rng_seed(3);
        vg_tensor *ta = vg_vit_forward(&m, x, true, &ra), *tb = vg_vit_forward(&m, x, true, &rb);
        REQUIRE(ta && tb);
        CHECK(max_abs_diff(ta, tb) == 0);
        for (int i = 0; i < 2; i++) vg_tensor_free(logits[i]);
        for (int i = 0; i < tr.n; i++) vg_tensor_free(grads[i]);
        vg_tensor_free(x);
        vg_params_free(&tr);
        vg_vit_free(&m);
        vg_arena_reset();
    }
}

/* Patch dropout in the ViT: in training the blocks see the class token and the kept patches (the
 * forward equals patch dropout applied by hand after the embedding, drawn from the same rng); the
 * eval forward is untouched; both poolings. */
VG_TEST(vit_patch_dropout_in_forward) {
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 16; cfg.embed_dim = 32; cfg.num_heads = 2; cfg.depth = 2;
    for (int pool = 0; pool < 2; pool++) {
        cfg.pool = pool ? VG_VIT_POOL_MEAN : VG_VIT_POOL_CLS;
        cfg.patch_drop_rate = 0;
        vg_vit m;
        vg_tensor *x = small_vit_and_input(&m, &cfg, 17, 3);
        REQUIRE(x);
        vg_tensor *eval0 = vg_persist(vg_vit_forward(&m, x, false, NULL));
        m.cfg.patch_drop_rate = 0.5;                             /* 8 of 16 patches */
        vg_tensor *eval1 = vg_vit_forward(&m, x, false, NULL);
        REQUIRE(eval0 && eval1);
        CHECK(max_abs_diff(eval0, eval1) == 0);
        vg_rng ra = vg_rng_seed(9), rb = vg_rng_seed(9);
        vg_tensor *logits = vg_vit_forward(&m, x, true, &ra);
        vg_tensor *h = vg_vit_embed_tokens(vg_vit_patch_embed(&m, x), m.cls_token, m.pos_embed);
        h = vg_patch_dropout_fn(h, 0.5, 1, true, &rb);
        REQUIRE(h && h->shape[1] == 9);
        for (int i = 0; i < cfg.depth; i++) h = vg_vit_block_forward(&m, i, h, true, &rb, NULL);
        h = vg_layernorm_fn(h, m.norm.weight, m.norm.bias, cfg.norm_eps);
        vg_tensor *by_hand = vg_linear_fn(vg_vit_pool_tokens(&m, h), m.head.weight, m.head.bias);
        REQUIRE(logits && by_hand);
        CHECK_MSG(max_abs_diff(logits, by_hand) < 1e-6, "pool %d: patch-dropout forward differs from by hand", pool);
        CHECK(max_abs_diff(logits, eval0) > 1e-4);
        vg_tensor_free(eval0); vg_tensor_free(x);
        vg_vit_free(&m);
        vg_arena_reset();
    }
}

/* Without a graph (vg_no_grad_begin), the forward keeps one block's intermediates at a time: the
 * logits are the same bytes as with a graph, and the arena holds as much after a 6-block forward as
 * after a 1-block one (with a graph, every block's activations stay for backward). */
VG_TEST(vit_no_grad_forward_releases_each_block) {
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 16; cfg.embed_dim = 32; cfg.num_heads = 2;
    for (int pool = 0; pool < 2; pool++) {
        size_t used_no_grad[2], used_grad[2];
        for (int d = 0; d < 2; d++) {
            cfg.depth = d ? 6 : 1;
            cfg.pool = pool ? VG_VIT_POOL_MEAN : VG_VIT_POOL_CLS;
            vg_vit m;
            vg_tensor *x = small_vit_and_input(&m, &cfg, 11, 4);
            REQUIRE(x);
            for (int train = 0; train < 2; train++) {      /* eval, then train mode with dropout */
                m.cfg.drop_rate = m.cfg.attn_drop_rate = train ? 0.2 : 0.0;
                vg_rng ra = vg_rng_seed(3), rb = vg_rng_seed(3);
                vg_tensor *with_graph = vg_vit_forward(&m, x, train, &ra);
                REQUIRE(with_graph && with_graph->node);
                used_grad[d] = vg_arena_bytes_used();
                vg_no_grad_begin();
                vg_tensor *no_graph = vg_vit_forward(&m, x, train, &rb);
                vg_no_grad_end();
                REQUIRE(no_graph && !no_graph->node);
                CHECK_MSG(max_abs_diff(with_graph, no_graph) == 0, "pool %d depth %d train %d: logits differ", pool, cfg.depth, train);
                vg_arena_reset();
                vg_no_grad_begin();
                REQUIRE(vg_vit_forward(&m, x, train, &rb));
                vg_no_grad_end();
                if (!train) used_no_grad[d] = vg_arena_bytes_used();
                vg_arena_reset();
            }
            vg_tensor_free(x);
            vg_vit_free(&m);
        }
        CHECK_MSG(used_no_grad[1] == used_no_grad[0], "pool %d: no-grad forward holds %zu bytes at depth 6, %zu at depth 1",
                  pool, used_no_grad[1], used_no_grad[0]);
        CHECK(used_grad[1] > 3 * used_grad[0]);
        CHECK(used_grad[0] > used_no_grad[0]);
    }
}

/* ------------------------------------------------------------------ trace and FLOPs */
VG_TEST(vit_trace_shapes_and_flops) {
    vg_vit_config cfg;
    REQUIRE(vg_vit_preset("vit-tiny-cifar", &cfg));
    /* per image: conv 2·64·192·48; per block 2·(65·192·576 + 2·65²·192 + 65·192² + 2·65·192·768); head 2·192·10 */
    CHECK(vg_vit_forward_flops(&cfg) == 365699328.0);
    CHECK(vg_vit_train_flops(&cfg) == 3 * 365699328.0);
    vg_rng rng0 = vg_rng_seed(0);
    vg_vit m0;
    REQUIRE(vg_vit_init(&m0, &cfg, &rng0));
    /* what vg_vit_forward performs: the last block's keys and values for 65 tokens, the rest for the
     * class token: 2·(65·192·384 + 192² + 2·65·192 + 192² + 2·192·768) instead of the block above */
    CHECK(vg_vit_forward_flops_done(&m0) == 315318528.0);
    m0.full_last_block = true;
    CHECK(vg_vit_forward_flops_done(&m0) == 365699328.0);
    /* patch dropout 0.25: training runs the blocks on 1 + 48 tokens, evaluation on all 65 */
    m0.cfg.patch_drop_rate = 0.25;
    CHECK(vg_vit_train_flops_done(&m0) == 817079040.0);
    CHECK(vg_vit_forward_flops_done(&m0) == 365699328.0);
    m0.full_last_block = false;
    CHECK(vg_vit_train_flops_done(&m0) == 705491712.0);
    CHECK(vg_vit_train_flops(&m0.cfg) == 817079040.0);
    vg_vit_free(&m0);
    vg_rng rng = vg_rng_seed(0);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    char *buf = NULL; size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    CHECK(vg_vit_trace(&m, 8, f));
    fclose(f);
    const char *want[] = {"(8, 3, 32, 32)", "(8, 192, 8, 8)", "(8, 64, 192)", "(8, 65, 192)", "blocks.5",
                          "(8, 192)", "(8, 10)", "2693578", "9408", "444864"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) CHECK_MSG(buf && strstr(buf, want[i]), "trace lacks %s", want[i]);
    if (getenv("VG_VERBOSE")) fputs(buf, stdout);
    free(buf);
    vg_vit_free(&m);
    /* the overlapping patch conv (kernel 6, padding 1) and the conv stem keep the 8x8 grid, and
     * the trace's FLOP total is the analytic count; v 2: the stem at stride 1 with max pools (CCT) */
    for (int v = 0; v < 3; v++) {
        vg_vit_config c2 = cfg;
        c2.patch_overlap = 1;
        if (v) REQUIRE(vg_vit_parse_stem("8,16", &c2));
        c2.stem_pool = v == 2;
        REQUIRE(vg_vit_init(&m, &c2, &rng));
        buf = NULL; len = 0;
        f = open_memstream(&buf, &len);
        REQUIRE(f);
        CHECK(vg_vit_trace(&m, 2, f));
        fclose(f);
        char total[64];
        snprintf(total, sizeof total, "%.4g", 2 * vg_vit_forward_flops(&c2));
        const char *want2[] = {v ? "(2, 16, 8, 8)" : "(2, 192, 8, 8)", "(2, 65, 192)",
                               v == 2 ? "stem.1 (conv 3x3, max/2)" : v ? "stem.1 (conv 3x3/2, ReLU)" : "conv 6x6/4",
                               v ? "conv 3x3/1" : "(2, 10)", v == 2 ? "(2, 8, 16, 16)" : total, total};
        for (size_t i = 0; i < sizeof want2 / sizeof want2[0]; i++) CHECK_MSG(buf && strstr(buf, want2[i]), "trace (%s) lacks %s:\n%s", v ? "stem" : "overlap", want2[i], buf ? buf : "");
        free(buf);
        vg_vit_free(&m);
        if (v == 2) {   /* stride 1 quadruples the stem's FLOPs: 2·16²·8·3·9 + 2·8²·16·8·9 = 258048 at stride 2 */
            vg_vit_config c1 = c2;
            c1.stem_pool = false;
            CHECK_CLOSE(vg_vit_forward_flops(&c2) - vg_vit_forward_flops(&c1), 3.0 * 258048, 0.5);
        }
    }
}

/* the fields of vit_fields.h as text (what the metadata and the flags hold) read back to the same
 * value, and refuse what is not one */
VG_TEST(vit_fields_text_round_trip) {
    vg_vit_config c = vg_vit_config_default(), d = vg_vit_config_default();
    c.mlp_ratio = 2.5; c.qkv_bias = false; c.pool = VG_VIT_POOL_MEAN; c.pos_embed = VG_VIT_POS_SINCOS2D;
    c.conv_stem[0] = 8; c.conv_stem[1] = 16; c.init_values = 1e-5; c.norm_eps = 1e-5; c.patch_drop_rate = 0.25;
    c.stem_pool = true;
    for (int f = 0; f < VG_VIT_NFIELDS; f++) {
        char a[64], b[64];
        vg_vit_field_format(&c, f, a, sizeof a);
        CHECK_MSG(vg_vit_field_parse(&d, f, a), "%s = %s: %s", vg_vit_fields[f].name, a, vg_error());
        vg_vit_field_format(&d, f, b, sizeof b);
        CHECK_MSG(!strcmp(a, b) && vg_vit_field_in_range(&c, f), "%s: %s read back as %s", vg_vit_fields[f].name, a, b);
    }
    CHECK(!memcmp(c.conv_stem, d.conv_stem, sizeof c.conv_stem) && d.pool == VG_VIT_POOL_MEAN && d.mlp_ratio == 2.5);
    CHECK(!vg_vit_field_parse(&d, VG_VIT_F_depth, "4x") && strstr(vg_error(), "expected an integer"));
    CHECK(!vg_vit_field_parse(&d, VG_VIT_F_pool, "avg") && strstr(vg_error(), "expected cls, mean or seq"));
    CHECK(!vg_vit_field_parse(&d, VG_VIT_F_mlp_ratio, "nan") && strstr(vg_error(), "finite"));
    d.depth = 2000;
    CHECK(!vg_vit_field_in_range(&d, VG_VIT_F_depth));
    CHECK(vg_vit_field_is_default(&d, VG_VIT_F_reg_tokens) && !vg_vit_field_is_default(&c, VG_VIT_F_conv_stem));
}
