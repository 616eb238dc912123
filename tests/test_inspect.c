/* test_inspect.c — ./inspect: the worked examples, sin-cos similarities, attention rollout, the
 * PNGs it writes (decoded back), the dot graph, and its errors. Runs ./inspect (from $VG_BIN when
 * tests/run.sh sets it) via popen (skips visibly if it is not built) and uses the library for the
 * reference values. */
#include "test.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include "data/data.h"
#include "vit/vit.h"
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static bool have_inspect(void) { return vg_test_have_program("inspect"); }

/* a shell command; "./inspect …" runs our inspect program (vg_test_run, tests/test_main.c) */
static const char *T(const char *s);
static int run(const char *cmd, char *out, size_t n) { return vg_test_run(T(cmd), out, n); }

/* this process's own scratch directory (mkdtemp: parallel runs cannot collide), removed at exit */
static char tmp_dir[64];
static void remove_tmp(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "test_inspect: could not remove %s\n", tmp_dir);
}
static void mktmp(void) {
    if (tmp_dir[0]) return;
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/vg_test_inspect-XXXXXX");
    if (!mkdtemp(tmp_dir)) { perror("test_inspect: mkdtemp"); tmp_dir[0] = 0; return; }
    atexit(remove_tmp);
}
/* s with every "$TMP" replaced by the scratch directory (a few rotating buffers: several results
 * may be alive in one expression) */
static const char *T(const char *s) {
    static char buf[8][4096];
    static int next;
    mktmp();
    char *o = buf[next++ % 8];
    size_t len = 0;
    for (const char *p = s; *p && len + 1 < sizeof buf[0]; ) {
        if (!strncmp(p, "$TMP", 4)) { len += (size_t)snprintf(o + len, sizeof buf[0] - len, "%s", tmp_dir); p += 4; }
        else o[len++] = *p++;
        if (len >= sizeof buf[0]) len = sizeof buf[0] - 1;
    }
    o[len] = 0;
    return o;
}

/* decode a PNG with data/'s decoder; -1 if it does not decode */
static int png_size(const char *path, int *w, int *h) {
    uint8_t *px; int src; char err[VG_DATA_ERRLEN];
    if (vg_image_decode_file(path, &px, h, w, &src, err, sizeof err)) return -1;
    free(px);
    return 0;
}

/* "... (WxH)" printed after "wrote PATH " */
static bool printed_size(const char *out, int *w, int *h) {
    const char *p = strstr(out, "wrote ");
    return p && (p = strchr(p, '(')) && sscanf(p, "(%dx%d)", w, h) == 2;
}

/* a small gradient test image as an RGB PNG, written with libpng */
static int write_test_png(const char *path, int w, int h) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) { png_destroy_write_struct(&png, &info); fclose(f); return -1; }
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    uint8_t *row = malloc(3 * w);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) { row[3 * x] = (uint8_t)(x * 255 / w); row[3 * x + 1] = (uint8_t)(y * 255 / h); row[3 * x + 2] = 128; }
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    return fclose(f);
}

/* a small random model saved as ./train does (weights + "model.*" metadata), optionally with
 * mean pooling and "data.class_names" metadata (one name a line) */
static vg_vit_config small_config(int in_chans, int img, int patch, bool mean_pool, bool class_token) {
    vg_vit_config c = vg_vit_config_default();
    c.img_size = img; c.patch_size = patch; c.in_chans = in_chans; c.num_classes = 10;
    c.embed_dim = 16; c.depth = 2; c.num_heads = 2;
    if (mean_pool) c.pool = VG_VIT_POOL_MEAN;
    c.class_token = class_token;
    return c;
}
static int save_model(const char *path, int in_chans, int img, int patch, bool mean_pool, bool class_token,
                      const char *class_names) {
    vg_vit_config c = small_config(in_chans, img, patch, mean_pool, class_token);
    vg_vit m;
    vg_rng rng = vg_rng_seed(1);
    if (!vg_vit_init(&m, &c, &rng)) return -1;
    vg_params st = {0};
    vg_vit_state(&m, &st);
    vg_st_writer *w = vg_st_writer_new();
    char err[512];
    int rc = vg_params_to_writer(&st, w, err, sizeof err) || vg_vit_config_to_meta(&c, w, err, sizeof err) ||
             (class_names && vg_st_writer_meta(w, "data.class_names", class_names, err, sizeof err)) ||
             vg_st_write(w, path, err, sizeof err);
    if (rc) fprintf(stderr, "    %s\n", err);
    vg_st_writer_free(w);
    vg_params_free(&st);
    vg_vit_free(&m);
    return rc ? -1 : 0;
}
static int save_small_model(const char *path, int in_chans, int img, int patch) {
    return save_model(path, in_chans, img, patch, false, true, NULL);
}

static char out[1 << 16];

VG_TEST(inspect_examples_match_expected) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    CHECK(run("./inspect examples", out, sizeof out) == 0);
    CHECK(strstr(out, "all examples match the expected values") != NULL);
    CHECK(!strstr(out, "DIFFERS"));
    CHECK(strstr(out, "[     1,      2,      5,      6]   expected [     1,      2,      5,      6]  ok") != NULL);
    CHECK(strstr(out, "[   3.5,     -5]   expected [   3.5,     -5]  ok") != NULL);
    CHECK(strstr(out, "(1, 785, 768)") != NULL);
    CHECK(strstr(out, "(1, 2, 197, 197)") != NULL && strstr(out, "(1, 2, 196, 196)") != NULL);
}

/* cosine similarities of MAE's 14x14, D = 768 table around patch (7, 7), from the library and as
 * printed by the tool: 1 at the centre, .986 at the 4 neighbours, .973 diagonally, .904 at the
 * corners of the 5x5 window */
VG_TEST(inspect_posembed_sincos_similarity) {
    vg_tensor *p = vg_sincos_2d_pos_embed(768, 14, 14, true);
    REQUIRE(p);
    const real *t = vg_data(p) + 768;
    const int me = 7 * 14 + 7;
    double want[5][5] = {{.90427, .93851, .95214, .93851, .90427}, {.93851, .97275, .98637, .97275, .93851},
                         {.95214, .98637, 1, .98637, .95214}, {.93851, .97275, .98637, .97275, .93851},
                         {.90427, .93851, .95214, .93851, .90427}};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            int o = (5 + i) * 14 + 5 + j;
            double ab = 0, aa = 0, bb = 0;
            for (int k = 0; k < 768; k++) { ab += t[me * 768 + k] * t[o * 768 + k]; aa += t[me * 768 + k] * t[me * 768 + k]; bb += t[o * 768 + k] * t[o * 768 + k]; }
            CHECK_CLOSE(ab / sqrt(aa * bb), want[i][j], 1e-4);
        }
    vg_arena_reset();
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    CHECK(run("./inspect posembed --sincos", out, sizeof out) == 0);
    CHECK(strstr(out, "     7   0.95  0.99  1.00  0.99  0.95") != NULL);
    CHECK(strstr(out, "     5   0.90  0.94  0.95  0.94  0.90") != NULL);
    CHECK(run("./inspect posembed --random", out, sizeof out) == 0);            /* ≈ 0 off the centre */
    const char *r7 = strstr(out, "\n     7  ");
    REQUIRE(r7);
    double v[5];
    REQUIRE(sscanf(r7, " 7 %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5);
    CHECK_CLOSE(v[2], 1, 1e-9);
    for (int j = 0; j < 5; j++) if (j != 2) CHECK(fabs(v[j]) < 0.2);
}

VG_TEST(inspect_attention_rollout_rows_sum_to_one) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    mktmp();
    REQUIRE(save_small_model(T("$TMP/model.safetensors"), 3, 16, 4) == 0);
    REQUIRE(write_test_png(T("$TMP/img.png"), 40, 30) == 0);
    CHECK(run("./inspect attention --ckpt $TMP/model.safetensors --image $TMP/img.png --out $TMP/att.png", out, sizeof out) == 0);
    const char *s = strstr(out, "rollout row sums: min ");
    REQUIRE(s);
    double mn, mx;
    REQUIRE(sscanf(s, "rollout row sums: min %lf max %lf", &mn, &mx) == 2);
    CHECK_CLOSE(mn, 1, 1e-6);
    CHECK_CLOSE(mx, 1, 1e-6);
    CHECK(strstr(out, "1. patch (") != NULL);
    int w, h, pw, ph;
    REQUIRE(printed_size(out, &pw, &ph));
    REQUIRE(png_size(T("$TMP/att.png"), &w, &h) == 0);
    CHECK(w == pw && h == ph);
    CHECK(w == 28 + 4 * (96 + 6) && h == 44 + 2 * (96 + 6 + 10) + 40);   /* 16 px × zoom 6; image, 2 heads, rollout */
    /* cls pooling: the class token's attention, named as such; no class names: "class N" */
    CHECK(strstr(out, "cls pooling: the head reads the class token") != NULL);
    int pred;
    double prob;
    const char *p = strstr(out, "prediction: class ");
    REQUIRE(p && sscanf(p, "prediction: class %d (class %*d), probability %lf", &pred, &prob) == 2);
    CHECK(pred >= 0 && pred < 10 && prob >= 0.1 && prob <= 1);
    /* the run directory form of --ckpt and a missing image */
    CHECK(run("./inspect attention --ckpt $TMP/model.safetensors --image $TMP/missing.png", out, sizeof out) == 1);
    CHECK(strstr(out, "missing.png") != NULL);
}

/* a mean-pooling model: the maps are the attention each patch receives (mean over the patch
 * queries), labelled so; the prediction is named from the checkpoint's data.class_names */
VG_TEST(inspect_attention_mean_pooling_and_class_names) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    mktmp();
    REQUIRE(save_model(T("$TMP/mean.safetensors"), 3, 16, 4, true, true, "n0\nn1\nn2\nn3\nn4\nn5\nn6\nn7\nn8\nn9") == 0);
    REQUIRE(write_test_png(T("$TMP/img.png"), 40, 30) == 0);
    CHECK(run("./inspect attention --ckpt $TMP/mean.safetensors --image $TMP/img.png --out $TMP/att_mean.png", out, sizeof out) == 0);
    CHECK(strstr(out, "mean pooling: the head reads the average of the 16 patch tokens, not the class token") != NULL);
    CHECK(strstr(out, "averaged over the 16 patch queries") != NULL);
    CHECK(strstr(out, "CLS -> patches") == NULL && strstr(out, "mean attention each patch receives") != NULL);
    int pred, pred2;
    double prob;
    const char *p = strstr(out, "prediction: n");
    REQUIRE(p && sscanf(p, "prediction: n%d (class %d), probability %lf", &pred, &pred2, &prob) == 3);
    CHECK(pred == pred2 && prob >= 0.1 && prob <= 1);
    /* the pooled row of the rollout: its mass on the class token and on the patches adds up to 1 */
    double on_cls, on_patches;
    p = strstr(out, "what the pooled vector draws on): ");
    REQUIRE(p && sscanf(p, "what the pooled vector draws on): %lf of the mass on the class token,\n  %lf", &on_cls, &on_patches) == 2);
    CHECK_CLOSE(on_cls + on_patches, 1, 2e-3);
    int w, h;
    REQUIRE(png_size(T("$TMP/att_mean.png"), &w, &h) == 0);
    /* layer 1, head 1 from the library: the same model (config, seed 1), the image through the eval
     * transform with CIFAR-10's normalisation (a file's default), each key's weight averaged over
     * the 16 patch queries */
    {
        vg_vit_config c = small_config(3, 16, 4, true, true);
        vg_vit m;
        vg_rng rng = vg_rng_seed(1);
        REQUIRE(vg_vit_init(&m, &c, &rng));
        uint8_t *px; int ih, iw, src; char err[VG_DATA_ERRLEN];
        REQUIRE(vg_image_decode_file(T("$TMP/img.png"), &px, &ih, &iw, &src, err, sizeof err) == 0);
        const float mean[3] = VG_CIFAR10_MEAN, stdv[3] = VG_CIFAR10_STD;
        vg_tensor *x = vg_empty(VG_DIMS(1, 3, 16, 16)), *a = NULL;
        vg_resize_center_crop(px, 3, ih, iw, 16, vg_data(x), mean, stdv);
        free(px);
        vg_no_grad_begin();
        x = vg_vit_pos_embed(&m, vg_vit_patch_embed(&m, x));
        for (int l = 0; l < 2 && x; l++) x = vg_vit_block_forward(&m, l, x, false, NULL, &a);   /* a: layer 1's (1, 2, 17, 17) */
        vg_no_grad_end();
        REQUIRE(x && a);
        vg_tensor *ac = vg_contiguous(a);
        double v[16] = {0}, cls_w = 0;
        for (int q = 1; q < 17; q++) {
            const real *row = vg_data(ac) + (size_t)(17 + q) * 17;          /* head 1, query q */
            cls_w += row[0] / 16;
            for (int k = 0; k < 16; k++) v[k] += row[1 + k] / 16;
        }
        int best = 0;
        for (int k = 1; k < 16; k++) if (v[k] > v[best]) best = k;
        char want[64];
        snprintf(want, sizeof want, "h1 (%d,%d) %.3f cls %.2f", best / 4, best % 4, v[best], cls_w);
        p = strstr(out, "  layer 1:");
        CHECK_MSG(p && strstr(p, want), "expected '%s' in layer 1's line", want);
        vg_arena_reset();
        vg_vit_free(&m);
    }
    /* class names that are not one per class are not used */
    REQUIRE(save_model(T("$TMP/mean3.safetensors"), 3, 16, 4, true, true, "a\nb\nc") == 0);
    CHECK(run("./inspect attention --ckpt $TMP/mean3.safetensors --image $TMP/img.png", out, sizeof out) == 0);
    CHECK(strstr(out, "prediction: class ") != NULL);
    /* no class token (timm's class_token=False): 16 tokens, all patches */
    REQUIRE(save_model(T("$TMP/gap.safetensors"), 3, 16, 4, true, false, NULL) == 0);
    CHECK(run("./inspect attention --ckpt $TMP/gap.safetensors --image $TMP/img.png --out $TMP/gap.png", out, sizeof out) == 0);
    CHECK(strstr(out, "patches of 4 px, 16 tokens") && strstr(out, "mean of the 16 patch rows") && !strstr(out, " cls "));
    CHECK(strstr(out, "= token 0:") || strstr(out, "= token 1:"));
}

VG_TEST(inspect_pngs_decode_with_expected_size) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    mktmp();
    REQUIRE(write_test_png(T("$TMP/img.png"), 40, 30) == 0);
    int w, h, pw, ph;
    /* 30 px shorter side → 28 (multiple of 7), 4x4 patches */
    CHECK(run("./inspect patches --image $TMP/img.png --patch 7 --out $TMP/patches.png", out, sizeof out) == 0);
    CHECK(strstr(out, "28x28 px, patch 7 -> 4x4 grid = 16 patches, 17 tokens") != NULL);
    REQUIRE(printed_size(out, &pw, &ph));
    REQUIRE(png_size(T("$TMP/patches.png"), &w, &h) == 0);
    CHECK(w == pw && h == ph && w > 256 && h > 256);

    CHECK(run("./inspect posembed --random --grid 6 --dim 32 --out $TMP/pos.png", out, sizeof out) == 0);
    REQUIRE(printed_size(out, &pw, &ph));
    REQUIRE(png_size(T("$TMP/pos.png"), &w, &h) == 0);
    CHECK(w == pw && h == ph);

    FILE *f = fopen(T("$TMP/metrics.csv"), "w");
    REQUIRE(f);
    fprintf(f, "step,epoch,loss,lr,train_acc,test_loss,test_acc,images_per_s,wall_s\n"
               "50,0.5,2.2,1e-3,0.15,,,100,10\n100,1,2.0,1e-3,0.25,1.9,0.3,100,20\n"
               "150,1.5,1.8,1e-3,0.35,,,100,30\n200,2,1.7,1e-3,0.4,1.6,0.42,100,40\n");
    fclose(f);
    CHECK(run("./inspect plot --csv $TMP/metrics.csv --out $TMP/curves.png", out, sizeof out) == 0);
    REQUIRE(png_size(T("$TMP/curves.png"), &w, &h) == 0);
    CHECK(w == 960 && h == 640);
    CHECK(strstr(out, "test acc 0.4200 (step 200)") != NULL);

    /* two runs compared: each summarised under its label (given, or the CSV's directory) */
    mkdir(T("$TMP/amp"), 0755);
    f = fopen(T("$TMP/amp/metrics.csv"), "w");
    REQUIRE(f);
    fprintf(f, "step,epoch,loss,lr,train_acc,test_loss,test_acc,images_per_s,wall_s\n"
               "50,0.5,2.3,1e-3,0.14,,,60,15\n100,1,2.1,1e-3,0.22,1.95,0.28,60,31\n"
               "150,1.5,1.9,1e-3,0.33,,,60,46\n200,2,1.75,1e-3,0.39,1.65,0.41,60,62\n");
    fclose(f);
    CHECK(run("./inspect plot --csv $TMP/metrics.csv --label FP32 --csv $TMP/amp/metrics.csv --out $TMP/cmp.png", out, sizeof out) == 0);
    REQUIRE(png_size(T("$TMP/cmp.png"), &w, &h) == 0);
    CHECK(w == 960 && h == 640);
    CHECK(strstr(out, T("[FP32] $TMP/metrics.csv: 4 rows")) != NULL);
    CHECK(strstr(out, T("[amp] $TMP/amp/metrics.csv: 4 rows, last step 200, train loss 1.7500, test loss 1.6500, test acc 0.4100 (step 200)")) != NULL);
    /* a label before any --csv, two labels for one run, a missing second file */
    CHECK(run("./inspect plot --label X --csv $TMP/metrics.csv --out $TMP/x.png", out, sizeof out) == 2 && strstr(out, "--label"));
    CHECK(run("./inspect plot --csv $TMP/metrics.csv --label A --label B --out $TMP/x.png", out, sizeof out) == 2);
    CHECK(run("./inspect plot --csv $TMP/metrics.csv --label 123456789012345678901234567890123 --out $TMP/x.png", out, sizeof out) == 2 && strstr(out, "at most 32"));
    CHECK(run("./inspect plot --csv $TMP/metrics.csv --csv $TMP/none.csv --out $TMP/x.png", out, sizeof out) == 1 && strstr(out, T("$TMP/none.csv")));
}

/* dot: balanced braces, every edge's ends declared, one edge per op input (counted from the
 * library's own graph of the same forward + loss) */
VG_TEST(inspect_graph_dot_well_formed) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    mktmp();
    CHECK(run("./inspect graph --model vit-mnist --out $TMP/g.dot", out, sizeof out) == 0);
    int n_ops, n_leaves, n_named, n_edges;
    const char *s = strstr(out, "forward + loss = ");
    REQUIRE(s && sscanf(s, "forward + loss = %d ops, %d leaves (%d named parameters), %d edges", &n_ops, &n_leaves, &n_named, &n_edges) == 4);

    vg_vit m;
    vg_vit_config c;
    REQUIRE(vg_vit_preset("vit-mnist", &c));
    vg_rng rng = vg_rng_seed(0);
    REQUIRE(vg_vit_init(&m, &c, &rng));
    int32_t labels[2] = {0, 1};
    vg_tensor *loss = vg_cross_entropy_fn(vg_vit_forward(&m, vg_zeros(VG_DIMS(2, 1, 28, 28)), false, NULL), labels, 0.1);
    vg_node *nodes[4096];
    int n = vg_graph_nodes(loss, nodes, 4096), inputs = 0;
    for (int k = 0; k < n; k++) inputs += nodes[k]->n_inputs;
    vg_params st = {0};
    vg_vit_state(&m, &st);
    CHECK(n_named == st.n);                        /* every tensor of the state dict, by name */
    vg_params_free(&st);
    CHECK(n == n_ops);
    CHECK(inputs == n_edges);
    vg_arena_reset();
    vg_vit_free(&m);

    FILE *f = fopen(T("$TMP/g.dot"), "r");
    REQUIRE(f);
    static char dot[1 << 20];
    size_t len = fread(dot, 1, sizeof dot - 1, f);
    dot[len] = 0;
    fclose(f);
    int depth = 0, min_depth = 0, arrows = 0, bad = 0;
    for (const char *p = dot; *p; p++) {
        if (*p == '{') depth++;
        if (*p == '}') { depth--; if (depth < min_depth) min_depth = depth; }
    }
    CHECK(depth == 0 && min_depth == 0);
    CHECK(strncmp(dot, "//", 2) == 0 && strstr(dot, "digraph vit {") != NULL);
    for (char *line = strtok(dot, "\n"); line; line = strtok(NULL, "\n")) {
        char a[32], b[32];
        if (sscanf(line, " %31s -> %31[^;];", a, b) == 2 && strstr(line, "->")) {
            arrows++;
            if (!((a[0] == 'n' && atoi(a + 1) < n_ops) || (a[0] == 'l' && atoi(a + 1) < n_leaves)) || b[0] != 'n' || atoi(b + 1) >= n_ops) bad++;
        }
    }
    CHECK(arrows == n_edges);
    CHECK(bad == 0);
    if (access("/usr/bin/dot", X_OK) == 0) {               /* graphviz is not a dependency */
        CHECK(run("dot -Tsvg $TMP/g.dot -o $TMP/g.svg", out, sizeof out) == 0);
    }
}

/* --full-last-block: the textbook graph, every token through the last block; without it a class-token
 * model's last block narrows to the class token. The same loss either way; the op counts from the
 * library's own graph with full_last_block set. */
VG_TEST(inspect_graph_full_last_block) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    mktmp();
    int ops[2], edges[2];
    double loss[2];
    for (int full = 0; full < 2; full++) {
        CHECK(run(full ? "./inspect graph --model vit-mnist --depth 1 --full-last-block --out $TMP/gf.dot"
                       : "./inspect graph --model vit-mnist --depth 1 --out $TMP/gf.dot", out, sizeof out) == 0);
        const char *s = strstr(out, "forward + loss = ");
        REQUIRE(s && sscanf(s, "forward + loss = %d ops, %*d leaves (%*d named parameters), %d edges, loss %lf", &ops[full], &edges[full], &loss[full]) == 3);
        CHECK(strstr(out, full ? "full last block" : "last block for the class token") != NULL);
        FILE *f = fopen(T("$TMP/gf.dot"), "r");
        REQUIRE(f);
        static char dot[1 << 20];
        size_t len = fread(dot, 1, sizeof dot - 1, f);
        dot[len] = 0;
        fclose(f);
        CHECK_MSG((strstr(dot, "\"narrow\\n") == NULL) == (full == 1), "full %d: narrow ops %s", full, full ? "present" : "absent");
    }
    CHECK(ops[1] < ops[0] && edges[1] < edges[0]);
    CHECK(loss[0] == loss[1]);
    vg_vit m;
    vg_vit_config c;
    REQUIRE(vg_vit_preset("vit-mnist", &c));
    c.depth = 1;
    vg_rng rng = vg_rng_seed(0);
    REQUIRE(vg_vit_init(&m, &c, &rng));
    m.full_last_block = true;
    int32_t labels[2] = {0, 1};
    vg_tensor *l = vg_cross_entropy_fn(vg_vit_forward(&m, vg_zeros(VG_DIMS(2, 1, 28, 28)), false, NULL), labels, 0.1);
    vg_node *nodes[1024];
    CHECK(vg_graph_nodes(l, nodes, 1024) == ops[1]);
    vg_arena_reset();
    vg_vit_free(&m);
}

VG_TEST(inspect_embed_knn_small) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    const char *dir = getenv("FASHION_MNIST_DIR");
    if (!dir) dir = "/usr/share/datasets/fashion-mnist";
    char path[1200];
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", dir);
    if (access(path, R_OK)) VG_SKIP("Fashion-MNIST not found (FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist)");
    mktmp();
    REQUIRE(save_small_model(T("$TMP/mnist.safetensors"), 1, 28, 7) == 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "./inspect embed --ckpt $TMP/mnist.safetensors --dataset fashion-mnist --data %s --limit-train 300 --limit-test 100 --k 5", dir);
    CHECK(run(cmd, out, sizeof out) == 0);
    double acc;
    int corr, tot;
    const char *s = strstr(out, "5-NN accuracy (cosine, weighted vote exp(sim/0.07)): ");
    REQUIRE(s && sscanf(s + strlen("5-NN accuracy (cosine, weighted vote exp(sim/0.07)): "), "%lf%% (%d / %d)", &acc, &corr, &tot) == 3);
    CHECK(tot == 100 && corr >= 0 && corr <= 100);
    CHECK(acc > 15);                    /* random features already beat chance (10%) on Fashion-MNIST */
    /* a 1-channel model on 3-channel data is a clear error */
    CHECK(run("./inspect embed --ckpt $TMP/mnist.safetensors --dataset cifar10 --data /nonexistent-dir", out, sizeof out) == 1);
}

/* augment: a Fashion-MNIST batch (1 channel) through RandAugment, erasing and CutMix; the printed
 * λ is 1 − box area / image area, and the PNG decodes at the printed size */
VG_TEST(inspect_augment_grid_and_soft_labels) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    const char *dir = getenv("FASHION_MNIST_DIR");
    if (!dir) dir = "/usr/share/datasets/fashion-mnist";
    char path[1200], cmd[2048];
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
    if (access(path, R_OK)) VG_SKIP("Fashion-MNIST not found (FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist)");
    mktmp();
    snprintf(cmd, sizeof cmd, "./inspect augment --dataset fashion-mnist --data %s --aa rand-m9-mstd0.5-inc1 --reprob 0.5 "
             "--cutmix 1.0 --n 6 --seed 2 --out $TMP/augment.png", dir);
    CHECK(run(cmd, out, sizeof out) == 0);
    int y0, y1, x0, x1, w, h, pw, ph;
    double lam;
    const char *s = strstr(out, "CutMix: box rows ");
    REQUIRE(s && sscanf(s, "CutMix: box rows %d..%d, columns %d..%d from the flipped batch; lambda = 1 - box/area = %lf",
                        &y0, &y1, &x0, &x1, &lam) == 5);
    CHECK_CLOSE(lam, 1.0 - (y1 - y0 + 1) * (x1 - x0 + 1) / 784.0, 1e-4);
    CHECK(strstr(out, "soft labels (smoothing 0.10):"));
    REQUIRE(printed_size(out, &pw, &ph));
    REQUIRE(png_size(T("$TMP/augment.png"), &w, &h) == 0);
    CHECK(w == pw && h == ph);
    CHECK(run("./inspect augment --aa rand-x --out $TMP/a.png", out, sizeof out) == 2 && strstr(out, "rand-x"));
    /* patch dropout 0.5 on 7x7-pixel patches of 28 px: 8 of 16 kept, listed in increasing order,
     * shown in a second row; a patch size that does not divide the image is refused */
    snprintf(cmd, sizeof cmd, "./inspect augment --dataset fashion-mnist --data %s --patch-drop 0.5 --patch 7 --n 6 "
             "--step 5 --out $TMP/augment_pd.png", dir);
    CHECK(run(cmd, out, sizeof out) == 0);
    s = strstr(out, "each image keeps 8 of its 16 patches of 7x7 pixels (row-major), e.g. image 0:");
    REQUIRE(s);
    s = strchr(s, ':') + 1;
    int kept[9], got = 0, ordered = 1;
    for (int used; got < 9 && sscanf(s, "%d%n", &kept[got], &used) == 1 && s[0] == ' '; s += used, got++)
        if (got && kept[got] <= kept[got - 1]) ordered = 0;
    CHECK(got == 8 && ordered && kept[0] >= 0 && kept[7] < 16);
    int w2, h2;
    REQUIRE(png_size(T("$TMP/augment_pd.png"), &w2, &h2) == 0);
    CHECK(w2 == w && h2 == h);            /* two rows each: augmented + CutMix, augmented + patches kept */
    snprintf(cmd, sizeof cmd, "./inspect augment --dataset fashion-mnist --data %s --patch-drop 0.5 --patch 5 --out $TMP/a.png", dir);
    CHECK(run(cmd, out, sizeof out) == 2 && strstr(out, "--patch 5 does not divide"));
}

VG_TEST(inspect_errors_are_clear) {
    if (!have_inspect()) VG_SKIP("./inspect not built (run make first)");
    const char *subs[] = {"data", "examples", "trace", "patches", "posembed", "attention", "graph", "embed", "plot", "augment", "verify"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "./inspect %s --help", subs[i]);
        CHECK_MSG(run(cmd, out, sizeof out) == 0 && strstr(out, "usage: inspect"), "%s --help", subs[i]);
        snprintf(cmd, sizeof cmd, "./inspect %s --no-such-flag", subs[i]);
        CHECK_MSG(run(cmd, out, sizeof out) == 2 && strstr(out, "--no-such-flag"), "%s with a bad flag", subs[i]);
    }
    CHECK(run("./inspect", out, sizeof out) == 2);
    CHECK(run("./inspect frobnicate", out, sizeof out) == 2 && strstr(out, "unknown subcommand 'frobnicate'"));
    CHECK(run("./inspect trace --model vit-huge", out, sizeof out) == 2 && strstr(out, "unknown model preset 'vit-huge'"));
    CHECK(run("./inspect trace --model vit-micro-cifar --batch zero", out, sizeof out) == 2 && strstr(out, "--batch"));
    CHECK(run("./inspect patches --image x.png", out, sizeof out) == 2);                       /* no --patch/--out */
    CHECK(run("./inspect patches --image /nonexistent.png --patch 4 --out $TMP/x.png", out, sizeof out) == 1 && strstr(out, "/nonexistent.png"));
    CHECK(run("./inspect posembed --ckpt /nonexistent/model.safetensors", out, sizeof out) == 1 && strstr(out, "/nonexistent/model.safetensors"));
    CHECK(run("./inspect posembed --sincos --random", out, sizeof out) == 2);
    CHECK(run("./inspect posembed --sincos --patch 3", out, sizeof out) == 2 && strstr(out, "ROW,COL"));
    CHECK(run("./inspect plot --csv /nonexistent.csv --out $TMP/x.png", out, sizeof out) == 1 && strstr(out, "/nonexistent.csv"));
    CHECK(run("./inspect plot --csv /etc/hostname --out $TMP/x.png", out, sizeof out) == 1);
    CHECK(run("./inspect graph --model vit-micro-cifar", out, sizeof out) == 2 && strstr(out, "--out"));
    CHECK(run("./inspect graph --model vit-micro-cifar --out /nonexistent-dir/g.dot", out, sizeof out) == 1);
    /* a file that is not a checkpoint */
    mktmp();
    FILE *f = fopen(T("$TMP/junk.safetensors"), "w");
    REQUIRE(f);
    fputs("not a safetensors file", f);
    fclose(f);
    CHECK(run("./inspect attention --ckpt $TMP/junk.safetensors --dataset cifar10 --index 0", out, sizeof out) == 1 && strstr(out, "junk.safetensors"));
}
