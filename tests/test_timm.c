/* test_timm.c — timm's ViT layouts: class_token off, register tokens, no_embed_class,
 * fc_norm, LayerScale, no head. Each tiny model of tests/reference/timm/ is a bare timm state dict
 * (no vitgrad metadata), read through vg_vit_config_from_file's shape inference, and must give
 * PyTorch's outputs, loss and every gradient (tests/reference/make_timm_reference.py, which
 * `make check-timm` proves equal to the real timm). Then the inference on files written here:
 * each layout, heads from embed_dim/64, F16/BF16 tensors, a file that is not a ViT, unused and
 * missing keys; position tables with prefix rows resized; patch dropout keeping the prefix. */
#include "test.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMM_REF "tests/reference/timm_reference.safetensors"
#define TIMM_DIR "tests/reference/timm"

/* max abs error relative to the reference's largest magnitude; fails above 1e-4 */
static double compare_ref(const char *what, vg_tensor *got, const vg_st_file *f, const char *key) {
    return vg_test_check_ref(what, got, f, key, 1e-4);
}

/* "key": value in the JSON of the variant's kwargs (flat, numbers and booleans) */
static double kwarg(const char *json, const char *key, double dflt) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(json, pat);
    if (!p) return dflt;
    p += strlen(pat);
    if (!strncmp(p, "true", 4)) return 1;
    if (!strncmp(p, "false", 5) || !strncmp(p, "null", 4)) return 0;
    if (*p == '"') return !strncmp(p, "\"avg\"", 5);          /* global_pool: 1 = avg */
    return strtod(p, NULL);
}

static void parity(const char *v) {
    char err[1024], path[256], key[256];
    vg_st_file *ref = vg_st_open(TIMM_REF, err, sizeof err);
    if (!ref) { vg_test_skip(err); return; }
    snprintf(path, sizeof path, TIMM_DIR "/%s.safetensors", v);
    vg_st_file *f = vg_st_open(path, err, sizeof err);
    snprintf(key, sizeof key, "kwargs.%s", v);
    const char *kw = vg_st_meta(ref, key);
    if (!f || !kw) { vg_test_fail(__FILE__, __LINE__, "%s", f ? "no kwargs" : err); vg_st_close(f); vg_st_close(ref); return; }
    CHECK(!vg_st_meta(f, "model.embed_dim"));                  /* a bare state dict, as timm writes */
    vg_vit m;
    if (vg_vit_from_file(f, &m, (int)kwarg(kw, "num_heads", 0), path, err, sizeof err)) {
        vg_test_fail(__FILE__, __LINE__, "%s", err); vg_st_close(f); vg_st_close(ref); return;
    }
    /* the configuration read from the shapes is the one the model was made with */
    const vg_vit_config *c = &m.cfg;
    const bool avg = kwarg(kw, "global_pool", 0) == 1;
    const double fcn = kwarg(kw, "fc_norm", -1);
    CHECK(c->img_size == 16 && c->patch_size == 4 && c->in_chans == 3 && c->embed_dim == 16 && c->depth == 2 &&
          c->num_heads == 2 && c->mlp_ratio == 4.0);
    CHECK_MSG(c->num_classes == (int)kwarg(kw, "num_classes", 5), "%s: num_classes %d", v, c->num_classes);
    CHECK_MSG(c->qkv_bias == (kwarg(kw, "qkv_bias", 1) != 0), "%s: qkv_bias", v);
    CHECK_MSG(c->class_token == (kwarg(kw, "class_token", 1) != 0), "%s: class_token", v);
    CHECK_MSG(c->reg_tokens == (int)kwarg(kw, "reg_tokens", 0), "%s: reg_tokens %d", v, c->reg_tokens);
    CHECK_MSG(c->no_embed_class == (kwarg(kw, "no_embed_class", 0) != 0), "%s: no_embed_class", v);
    CHECK_MSG((c->init_values > 0) == (kwarg(kw, "init_values", 0) > 0), "%s: LayerScale", v);
    CHECK_MSG(c->fc_norm == (fcn < 0 ? avg : fcn != 0), "%s: fc_norm", v);
    /* pooling is not in the shapes: the inference says mean without a class token or with fc_norm */
    CHECK_MSG((c->pool == VG_VIT_POOL_MEAN) == avg, "%s: pool", v);
    /* timm's key order */
    snprintf(key, sizeof key, "keys.%s", v);
    const char *keys = vg_st_meta(ref, key);
    char (*names)[128] = calloc(64, sizeof *names);
    int n = vg_vit_slots(&m, false, NULL, names, NULL, 64);
    char order[4096] = "[";
    for (int i = 0; i < n && i < 64; i++)
        snprintf(order + strlen(order), sizeof order - strlen(order), "%s\"%s\"", i ? ", " : "", names[i]);
    strncat(order, "]", sizeof order - strlen(order) - 1);
    CHECK_MSG(keys && !strcmp(order, keys), "%s: state-dict order\n  ours %s\n  timm %s", v, order, keys ? keys : "?");
    free(names);

    vg_tensor *x = vg_empty(VG_DIMS(3, 3, 16, 16));
    int64_t lab64[3];
    int32_t labels[3];
    REQUIRE(!vg_st_read_f32(ref, "input", vg_data(x), (size_t)vg_numel(x), err, sizeof err) &&
            !vg_st_read_i64(ref, "labels", lab64, 3, err, sizeof err));
    for (int i = 0; i < 3; i++) labels[i] = (int32_t)lab64[i];
    vg_params tr = {0};
    vg_vit_params(&m, &tr);
    vg_params_zero_grad(&tr);
    vg_tensor *y = vg_vit_forward(&m, x, true, NULL), *loss;   /* train mode, every rate 0 */
    snprintf(key, sizeof key, "out.%s", v);
    double worst = compare_ref(key, y, ref, key);
    if (c->num_classes) loss = vg_cross_entropy_fn(y, labels, 0.1);
    else {
        snprintf(key, sizeof key, "lossw.%s", v);
        vg_tensor *w = vg_empty(VG_DIMS(3, c->embed_dim));
        REQUIRE(!vg_st_read_f32(ref, key, vg_data(w), (size_t)vg_numel(w), err, sizeof err));
        loss = vg_sum_all(vg_mul(y, w));
    }
    double ref_loss = 0;
    snprintf(key, sizeof key, "loss.%s", v);
    REQUIRE(loss && !vg_st_read_f64(ref, key, &ref_loss, 1, err, sizeof err));
    CHECK_MSG(fabs(vg_item(loss) - ref_loss) <= 1e-4 * fabs(ref_loss), "%s: loss %.8f vs PyTorch %.8f", v, (double)vg_item(loss), ref_loss);
    REQUIRE(vg_backward(loss, NULL));
    for (int i = 0; i < tr.n; i++) {
        snprintf(key, sizeof key, "grad.%s.%s", v, tr.items[i].name);
        worst = vg_test_max(worst, compare_ref(key, tr.items[i].tensor->grad, ref, key));
    }
    /* every tensor trained, as in PyTorch: the reference has one gradient per parameter */
    int ref_grads = 0;
    snprintf(key, sizeof key, "grad.%s.", v);
    for (size_t i = 0; i < vg_st_count(ref); i++) ref_grads += !strncmp(vg_st_at(ref, i)->name, key, strlen(key));
    CHECK_MSG(ref_grads == tr.n, "%s: %d gradients, PyTorch %d", v, tr.n, ref_grads);
    /* the last block for the class token alone (cls pooling) against every token */
    if (c->pool == VG_VIT_POOL_CLS) {
        m.full_last_block = true;
        vg_no_grad_begin();
        snprintf(key, sizeof key, "out.%s", v);
        compare_ref("full last block", vg_vit_forward(&m, x, false, NULL), ref, key);
        vg_no_grad_end();
    }
    printf("    %-14s %2d gradients + output + loss, worst rel err %.2e\n", v, tr.n, worst);
    vg_params_free(&tr);
    vg_vit_free(&m);
    vg_st_close(f);
    vg_st_close(ref);
    vg_arena_reset();
}

VG_TEST(timm_augreg_nobias_matches_pytorch) { parity("augreg_nobias"); }
VG_TEST(timm_deit3_no_embed_class_layerscale_matches_pytorch) { parity("deit3"); }
VG_TEST(timm_dinov2_reg_no_head_matches_pytorch) { parity("dinov2_reg"); }
VG_TEST(timm_reg_tokens_with_pos_rows_matches_pytorch) { parity("reg_embed"); }
VG_TEST(timm_reg4_gap_no_class_token_fc_norm_matches_pytorch) { parity("reg4_gap"); }
VG_TEST(timm_avg_fc_norm_matches_pytorch) { parity("avg_fcnorm"); }
VG_TEST(timm_no_class_token_avg_matches_pytorch) { parity("no_cls_avg"); }

/* ------------------------------------------------------------------ shape inference on files written here */
static char tmpdir[64];
static const char *tmp_path(const char *name) {
    static char p[160];
    if (!tmpdir[0]) { snprintf(tmpdir, sizeof tmpdir, "/tmp/vitgrad-timm-XXXXXX"); if (!mkdtemp(tmpdir)) return NULL; }
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

/* m's state dict into `path` as timm writes it (no vitgrad metadata); dtype F32, F16 or BF16 (values
 * rounded by truncation: the test compares against what the file holds). drop / extra: a key left
 * out / a key added. */
static uint16_t to_bf16(float x) { uint32_t u; memcpy(&u, &x, 4); return (uint16_t)(u >> 16); }
static uint16_t to_f16(float x) {
    uint32_t u; memcpy(&u, &x, 4);
    uint32_t sign = (u >> 16) & 0x8000; int e = (int)((u >> 23) & 0xff) - 127 + 15;
    if (e <= 0) return (uint16_t)sign;                    /* tiny: zero */
    if (e >= 31) return (uint16_t)(sign | 0x7bff);        /* large: the largest finite half */
    return (uint16_t)(sign | (uint32_t)e << 10 | (u >> 13 & 0x3ff));
}
static bool write_timm(vg_vit *m, const char *path, vg_st_dtype dt, const char *drop, const char *extra, bool meta) {
    vg_params st = {0};
    vg_vit_state(m, &st);
    vg_st_writer *w = vg_st_writer_new();
    char err[512];
    int rc = 0;
    uint16_t *half[256] = {0};
    for (int i = 0; i < st.n && !rc; i++) {
        const vg_tensor *t = st.items[i].tensor;
        if (drop && !strcmp(drop, st.items[i].name)) continue;
        const size_t n = (size_t)vg_numel(t);
        if (dt == VG_ST_F32) {
            rc = vg_st_writer_add(w, st.items[i].name, VG_ST_F32, t->ndim, t->shape, vg_data(t), 4 * n, err, sizeof err);
        } else {
            half[i] = malloc(2 * n);
            for (size_t k = 0; k < n; k++) half[i][k] = dt == VG_ST_BF16 ? to_bf16(vg_data(t)[k]) : to_f16(vg_data(t)[k]);
            rc = vg_st_writer_add(w, st.items[i].name, dt, t->ndim, t->shape, half[i], 2 * n, err, sizeof err);
        }
    }
    float one = 1;
    if (extra) rc |= vg_st_writer_add(w, extra, VG_ST_F32, 1, (int64_t[]){1}, &one, 4, err, sizeof err);
    if (meta) rc |= vg_vit_config_to_meta(&m->cfg, w, err, sizeof err);
    rc |= vg_st_writer_meta(w, "format", "pt", err, sizeof err);
    rc |= vg_st_write(w, path, err, sizeof err);
    if (rc) fprintf(stderr, "    write_timm: %s\n", err);
    vg_st_writer_free(w);
    for (int i = 0; i < 256; i++) free(half[i]);
    vg_params_free(&st);
    return rc == 0;
}

static vg_vit_config small_cfg(int dim, int heads) {
    vg_vit_config c = vg_vit_config_default();
    c.img_size = 12; c.patch_size = 4; c.in_chans = 2; c.num_classes = 3; c.embed_dim = dim; c.depth = 2;
    c.num_heads = heads; c.mlp_ratio = 2;
    return c;
}

static bool same_layout(const vg_vit_config *a, const vg_vit_config *b) {
    return a->img_size == b->img_size && a->patch_size == b->patch_size && a->in_chans == b->in_chans &&
           a->num_classes == b->num_classes && a->embed_dim == b->embed_dim && a->depth == b->depth &&
           a->num_heads == b->num_heads && vg_vit_hidden_dim(a) == vg_vit_hidden_dim(b) && a->qkv_bias == b->qkv_bias &&
           a->class_token == b->class_token && a->reg_tokens == b->reg_tokens && a->no_embed_class == b->no_embed_class &&
           a->fc_norm == b->fc_norm && (a->init_values > 0) == (b->init_values > 0) && a->pool == b->pool;
}

VG_TEST(timm_config_from_shapes_every_layout) {
    struct { bool cls; int reg; bool noemb, fcn; double ls; int classes; bool bias; int img; } cases[] = {
        {true, 0, false, false, 0, 3, true, 12},   {true, 0, false, false, 0, 3, false, 8},
        {true, 4, true, false, 1e-5, 0, true, 12}, {true, 2, false, false, 0, 3, true, 12},
        {false, 4, true, true, 0, 3, true, 16},    {true, 0, false, true, 0, 3, true, 12},
        {false, 0, false, false, 0, 3, true, 12},  {true, 1, true, true, 0.1, 0, true, 12},
    };
    const char *path = tmp_path("layout.safetensors");
    REQUIRE(path);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vg_vit_config c = small_cfg(64, 1);                     /* 64 wide: heads = 64/64 inferred */
        c.class_token = cases[k].cls; c.reg_tokens = cases[k].reg; c.no_embed_class = cases[k].noemb;
        c.fc_norm = cases[k].fcn; c.init_values = cases[k].ls; c.num_classes = cases[k].classes;
        c.qkv_bias = cases[k].bias; c.img_size = cases[k].img;
        c.pool = !c.class_token || c.fc_norm ? VG_VIT_POOL_MEAN : VG_VIT_POOL_CLS;
        vg_rng rng = vg_rng_seed(k);
        vg_vit m, back;
        REQUIRE(vg_vit_init(&m, &c, &rng));
        REQUIRE(write_timm(&m, path, VG_ST_F32, NULL, NULL, false));
        char err[1024];
        vg_st_file *f = vg_st_open(path, err, sizeof err);
        REQUIRE(f);
        vg_vit_config got;
        err[0] = 0;
        CHECK_MSG(!vg_vit_config_from_file(f, &got, 0, path, err, sizeof err) && same_layout(&got, &c), "case %zu: %s (got img %d cls %d reg %d noemb %d fcn %d ls %g classes %d pool %d heads %d)", k, err, got.img_size, got.class_token, got.reg_tokens, got.no_embed_class, got.fc_norm, got.init_values, got.num_classes, got.pool, got.num_heads);
        CHECK_MSG(!vg_vit_from_checkpoint(f, &back, path, err, sizeof err), "case %zu: %s", k, err);
        if (!vg_test_failed_now()) {
            /* the same function: one forward on the same input */
            vg_no_grad_begin();
            vg_tensor *x = vg_full(VG_DIMS(2, c.in_chans, c.img_size, c.img_size), 0.3);
            vg_tensor *a = vg_vit_forward(&m, x, false, NULL), *b = vg_vit_forward(&back, x, false, NULL);
            vg_no_grad_end();
            CHECK(a && b && vg_numel(a) == vg_numel(b) && !memcmp(vg_data(a), vg_data(b), sizeof(real) * (size_t)vg_numel(a)));
            CHECK(vg_vit_param_count(&back.cfg) == vg_vit_param_count(&c));
            vg_vit_free(&back);
        }
        /* with its own metadata (as ./train writes it) the same configuration comes back */
        REQUIRE(write_timm(&m, path, VG_ST_F32, NULL, NULL, true));
        vg_st_close(f);
        f = vg_st_open(path, err, sizeof err);
        REQUIRE(f);
        CHECK_MSG(!vg_vit_config_from_file(f, &got, 0, path, err, sizeof err) && same_layout(&got, &c) &&
                  got.init_values == c.init_values, "case %zu (metadata): %s", k, err);
        vg_st_close(f);
        vg_vit_free(&m);
        vg_arena_reset();
    }
    unlink(path);
}

VG_TEST(timm_f16_and_bf16_checkpoints_load) {
    vg_vit_config c = small_cfg(16, 2);
    c.reg_tokens = 2; c.no_embed_class = true;
    vg_rng rng = vg_rng_seed(3);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &c, &rng));
    const vg_st_dtype dts[] = {VG_ST_F16, VG_ST_BF16};
    for (int d = 0; d < 2; d++) {
        const char *path = tmp_path(d ? "bf16.safetensors" : "f16.safetensors");
        REQUIRE(write_timm(&m, path, dts[d], NULL, NULL, false));
        char err[1024];
        vg_st_file *f = vg_st_open(path, err, sizeof err);
        vg_vit back;
        REQUIRE(f);
        CHECK_MSG(!vg_vit_from_file(f, &back, 2, path, err, sizeof err), "%s", err);
        if (!vg_test_failed_now()) {
            /* every value is the file's half / bfloat16 value, exactly */
            vg_params a = {0}, b = {0};
            vg_vit_state(&m, &a); vg_vit_state(&back, &b);
            int bad = 0;
            for (int i = 0; i < a.n; i++)
                for (int64_t k = 0; k < vg_numel(a.items[i].tensor); k++) {
                    float x = vg_data(a.items[i].tensor)[k];
                    float want = d ? vg_st_bf16_to_f32(to_bf16(x)) : vg_st_f16_to_f32(to_f16(x));
                    bad += vg_data(b.items[i].tensor)[k] != want;
                }
            CHECK_MSG(bad == 0, "%s: %d values differ from the file's", vg_st_dtype_name(dts[d]), bad);
            vg_params_free(&a); vg_params_free(&b);
            vg_vit_free(&back);
        }
        vg_st_close(f);
        unlink(path);
    }
    vg_vit_free(&m);
    vg_arena_reset();
}

VG_TEST(timm_bad_files_are_named) {
    char err[1024];
    const char *path = tmp_path("bad.safetensors");
    REQUIRE(path);
    vg_st_file *f;
    vg_vit_config got;
    vg_vit m;
    /* a ResNet state dict */
    vg_st_writer *w = vg_st_writer_new();
    float z[64] = {0};
    vg_st_writer_add(w, "conv1.weight", VG_ST_F32, 4, (int64_t[]){4, 3, 2, 2}, z, 4 * 48, err, sizeof err);
    vg_st_writer_add(w, "bn1.weight", VG_ST_F32, 1, (int64_t[]){4}, z, 16, err, sizeof err);
    REQUIRE(!vg_st_write(w, path, err, sizeof err));
    vg_st_writer_free(w);
    f = vg_st_open(path, err, sizeof err);
    REQUIRE(f);
    CHECK(vg_vit_from_checkpoint(f, &m, path, err, sizeof err) && strstr(err, path) &&
          strstr(err, "not a Vision Transformer") && strstr(err, "conv1.weight"));
    vg_st_close(f);

    vg_vit_config c = small_cfg(16, 2);
    vg_rng rng = vg_rng_seed(1);
    vg_vit src;
    REQUIRE(vg_vit_init(&src, &c, &rng));
    /* 16 wide without a head count: embed_dim/64 does not apply */
    REQUIRE(write_timm(&src, path, VG_ST_F32, NULL, NULL, false));
    f = vg_st_open(path, err, sizeof err);
    REQUIRE(f);
    CHECK_MSG(vg_vit_config_from_file(f, &got, 0, path, err, sizeof err) && strstr(err, "multiple of 64") &&
              strstr(err, path), "%s", err);
    CHECK(!vg_vit_config_from_file(f, &got, 2, path, err, sizeof err) && got.num_heads == 2);
    CHECK(vg_vit_config_from_file(f, &got, 3, path, err, sizeof err) && strstr(err, "not divisible"));
    vg_st_close(f);
    /* metadata says 2 heads, 4 asked for */
    REQUIRE(write_timm(&src, path, VG_ST_F32, NULL, NULL, true));
    f = vg_st_open(path, err, sizeof err);
    REQUIRE(f);
    CHECK(vg_vit_config_from_file(f, &got, 4, path, err, sizeof err) && strstr(err, "num_heads 2"));
    vg_st_close(f);
    /* a key the model does not use, and a missing tensor: both named */
    REQUIRE(write_timm(&src, path, VG_ST_F32, "blocks.1.mlp.fc2.bias", "blocks.0.attn.extra", false));
    f = vg_st_open(path, err, sizeof err);
    REQUIRE(f);
    CHECK_MSG(vg_vit_from_file(f, &m, 2, path, err, sizeof err) && strstr(err, "blocks.1.mlp.fc2.bias") &&
              strstr(err, "blocks.0.attn.extra") && strstr(err, path), "%s", err);
    char list[256];
    CHECK(vg_vit_unused_keys(&src, f, list, sizeof list) == 1 && !strcmp(list, "blocks.0.attn.extra"));
    CHECK(vg_vit_missing_keys(&src, f, list, sizeof list) == 1 && !strcmp(list, "blocks.1.mlp.fc2.bias"));
    CHECK(vg_vit_unused_keys(&src, f, list, 8) == 1 && strlen(list) < 8);     /* cut, never overflows */
    vg_st_close(f);
    /* features vitgrad lacks are named */
    REQUIRE(write_timm(&src, path, VG_ST_F32, NULL, "dist_token", false));
    f = vg_st_open(path, err, sizeof err);
    REQUIRE(f);
    CHECK_MSG(vg_vit_from_file(f, &m, 2, path, err, sizeof err) && strstr(err, "distillation"), "%s", err);
    vg_st_close(f);
    /* a pos_embed whose rows fit no square grid */
    vg_tensor *keep = src.pos_embed;
    src.pos_embed = vg_persist(vg_narrow(keep, 1, 0, 8));
    REQUIRE(write_timm(&src, path, VG_ST_F32, NULL, NULL, false));
    vg_tensor_free(src.pos_embed);
    src.pos_embed = keep;
    f = vg_st_open(path, err, sizeof err);
    REQUIRE(f);
    CHECK_MSG(vg_vit_config_from_file(f, &got, 2, path, err, sizeof err) && strstr(err, "8 rows"), "%s", err);
    vg_st_close(f);
    vg_vit_free(&src);
    unlink(path);
    rmdir(tmpdir);
    vg_arena_reset();
}

/* ------------------------------------------------------------------ position tables with prefix rows */
VG_TEST(timm_resize_pos_embed_keeps_prefix_rows) {
    /* (1, 3 + 4·4, 8): the 3 prefix rows stay, the grid is resized as with one CLS row */
    vg_tensor *p = vg_empty(VG_DIMS(1, 19, 8));
    for (int64_t i = 0; i < vg_numel(p); i++) vg_data(p)[i] = (real)sin(0.37 * (double)i);
    vg_tensor *r = vg_resize_pos_embed_prefix(p, 3, 4, 4, 6, 6, VG_INTERP_BICUBIC);
    vg_tensor *one = vg_resize_pos_embed(vg_narrow(p, 1, 2, 17), 4, 4, 6, 6, VG_INTERP_BICUBIC);
    vg_tensor *none = vg_resize_pos_embed_prefix(vg_narrow(p, 1, 3, 16), 0, 4, 4, 6, 6, VG_INTERP_BICUBIC);
    REQUIRE(r && one && none && r->shape[1] == 39 && one->shape[1] == 37 && none->shape[1] == 36);
    CHECK(!memcmp(vg_data(r), vg_data(p), sizeof(real) * 24));
    CHECK(!memcmp(vg_data(r) + 24, vg_data(one) + 8, sizeof(real) * 36 * 8));
    CHECK(!memcmp(vg_data(none), vg_data(one) + 8, sizeof(real) * 36 * 8));
    CHECK(vg_resize_pos_embed_prefix(p, 2, 4, 4, 6, 6, VG_INTERP_BICUBIC) == NULL && strstr(vg_error(), "2 + 4"));
    /* a model: a learned table with cls + 2 register rows, and a no_embed_class table; 12 → 20 px */
    for (int noemb = 0; noemb < 2; noemb++) {
        vg_vit_config c = small_cfg(16, 2);
        c.reg_tokens = 2; c.no_embed_class = noemb;
        vg_rng rng = vg_rng_seed(5);
        vg_vit m;
        REQUIRE(vg_vit_init(&m, &c, &rng));
        const int S = vg_vit_pos_prefix_rows(&c);
        CHECK(S == (noemb ? 0 : 3) && m.pos_embed->shape[1] == S + 9);
        vg_tensor *before = vg_contiguous_raw(m.pos_embed);
        real first = vg_data(before)[0];
        REQUIRE(vg_vit_set_img_size(&m, 20, VG_INTERP_BICUBIC));
        CHECK(m.pos_embed->shape[1] == S + 25 && m.grid_h == 5);
        if (S) CHECK(vg_data(m.pos_embed)[0] == first);
        vg_no_grad_begin();
        vg_tensor *y = vg_vit_forward(&m, vg_full(VG_DIMS(1, 2, 20, 20), 0.1), false, NULL);
        vg_no_grad_end();
        CHECK(y && y->shape[1] == 3);
        /* patch dropout keeps the 3 prefix tokens and drops patches: (B, 3 + K, D) */
        m.cfg.patch_drop_rate = 0.5;
        vg_rng r2 = vg_rng_seed(9);
        vg_tensor *feat = vg_vit_forward_features(&m, vg_full(VG_DIMS(2, 2, 20, 20), 0.1), true, &r2);
        CHECK(feat && feat->shape[1] == 3 + vg_patch_dropout_keep(25, 0.5));
        vg_vit_free(&m);
        vg_arena_reset();
    }
}

/* ./train --init from bare timm state dicts with prefix tokens at another resolution: 16 px files
 * (cls + 2 registers with their pos_embed rows; 2 registers, no_embed_class) trained at 32 px.
 * pos_embed is interpolated on its grid with the prefix rows kept (trainer_load_weights). */
VG_TEST(timm_train_init_from_reg_token_files_at_another_resolution) {
    if (!vg_test_have_program("train")) VG_SKIP("./train not built");
    char dir[] = "/tmp/vitgrad-timm-train-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char data[128], path[320], cmd[2048], run[160];
    snprintf(data, sizeof data, "%s/cifar", dir);
    REQUIRE(mkdir(data, 0755) == 0 && vg_test_write_cifar(data));
    static char out[1 << 16];
    for (int noemb = 0; noemb < 2; noemb++) {
        vg_vit_config c = small_cfg(16, 2);
        c.img_size = 16; c.in_chans = 3; c.num_classes = 10; c.depth = 1; c.reg_tokens = 2; c.no_embed_class = noemb;
        vg_rng rng = vg_rng_seed(11);
        vg_vit m;
        REQUIRE(vg_vit_init(&m, &c, &rng));
        snprintf(path, sizeof path, "%s/timm%d.safetensors", dir, noemb);
        REQUIRE(write_timm(&m, path, VG_ST_F32, NULL, NULL, false));
        snprintf(run, sizeof run, "%s/run%d", dir, noemb);
        snprintf(cmd, sizeof cmd, "./train --dataset cifar10 --data %s --init %s --heads 2 --img-size 32 --batch 16 "
                 "--threads 1 --loader-threads 1 --steps 2 --lr 0 --min-lr 0 --warmup 0s --eval-every 0 --save-every 0 --out %s", data, path, run);
        int rc = vg_test_run(cmd, out, sizeof out);
        CHECK_MSG(rc == 0 && strstr(out, "pos_embed: resized 4x4 -> 8x8"), "%s\nexit %d: %s", cmd, rc, out);
        /* the saved model: S + 64 rows, the prefix rows the file's (lr 0: nothing moved) */
        snprintf(path, sizeof path, "%s/model.safetensors", run);
        char err[1024];
        vg_st_file *f = vg_st_open(path, err, sizeof err);
        vg_vit back;
        if (rc == 0 && f && !vg_vit_from_checkpoint(f, &back, path, err, sizeof err)) {
            const int S = vg_vit_pos_prefix_rows(&c);
            CHECK(back.cfg.reg_tokens == 2 && back.cfg.no_embed_class == noemb && back.cfg.img_size == 32);
            CHECK(back.pos_embed->shape[1] == S + 64);
            CHECK(!memcmp(vg_data(back.pos_embed), vg_data(m.pos_embed), sizeof(real) * (size_t)(S * 16)));
            CHECK(!memcmp(vg_data(back.reg_token), vg_data(m.reg_token), sizeof(real) * 32));
            vg_vit_free(&back);
        } else CHECK_MSG(false, "%s", f ? err : "no model.safetensors");
        vg_st_close(f);
        vg_vit_free(&m);
        vg_arena_reset();
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* the shape trace of a DINOv2-like layout: pos_embed on the patches first, then the class and
 * register tokens in front; no head; the parameter total is the configuration's */
VG_TEST(timm_trace_of_a_register_layout) {
    vg_vit_config c = small_cfg(16, 2);
    c.reg_tokens = 4; c.no_embed_class = true; c.init_values = 1e-5; c.num_classes = 0;
    vg_rng rng = vg_rng_seed(2);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &c, &rng));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    CHECK(vg_vit_trace(&m, 2, f));
    fclose(f);
    const char *pos = strstr(buf, "+ pos_embed"), *cls = strstr(buf, "+ cls_token"), *reg = strstr(buf, "+ reg_token");
    CHECK_MSG(pos && cls && reg && pos < cls && cls < reg && strstr(reg, "(2, 14, 16)"), "%s", buf);
    CHECK_MSG(strstr(buf, "4 register tokens, no_embed_class, LayerScale, no head") && !strstr(buf, "head (logits)"), "%s", buf);
    char total[64];
    snprintf(total, sizeof total, "trainable parameters %lld;", (long long)vg_vit_param_count(&c));
    CHECK_MSG(strstr(buf, total), "%s in\n%s", total, buf);
    free(buf);
    vg_vit_free(&m);
    vg_arena_reset();
}

/* ./train --init from a headless DINOv2-like file gets a new head; a file with a key this model
 * does not use has it listed; a bare timm file of another layout into a preset names the fields
 * that differ (read from its shapes) */
VG_TEST(timm_train_init_headless_unused_keys_and_another_layout) {
    if (!vg_test_have_program("train")) VG_SKIP("./train not built");
    char dir[] = "/tmp/vitgrad-timm-init-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char data[128], path[320], cmd[2048];
    snprintf(data, sizeof data, "%s/cifar", dir);
    REQUIRE(mkdir(data, 0755) == 0 && vg_test_write_cifar(data));
    static char out[1 << 16];
    vg_vit_config c = small_cfg(16, 2);
    c.img_size = 32; c.in_chans = 3; c.depth = 1; c.reg_tokens = 4; c.no_embed_class = true; c.init_values = 1e-5;
    c.num_classes = 0;
    vg_rng rng = vg_rng_seed(4);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &c, &rng));
    snprintf(path, sizeof path, "%s/dinov2.safetensors", dir);
    REQUIRE(write_timm(&m, path, VG_ST_F32, NULL, "mask_token", false));
    vg_vit_free(&m);
    snprintf(cmd, sizeof cmd, "./train --dataset cifar10 --data %s --init %s --heads 2 --batch 16 --threads 1 "
             "--loader-threads 1 --steps 2 --eval-every 0 --save-every 0 --out %s/run", data, path, dir);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "0 classes; this run: 32 px, patch 4, 10 classes") &&
              strstr(out, "has none, this run 10 classes: a new head") &&
              strstr(out, "1 tensors of") && strstr(out, "not used by this model: mask_token"), "exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "./train --dataset cifar10 --data %s --init %s --model vit-micro-cifar --dim 16 --depth 1 "
             "--heads 2 --batch 16 --threads 1 --steps 2 --out %s/run2", data, path, dir);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "a checkpoint of another model") && strstr(out, "reg_tokens 4 (this run: 0)") &&
              strstr(out, "no_embed_class 1 (this run: 0)") && strstr(out, "LayerScale 1"), "exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}
