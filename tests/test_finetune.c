/* test_finetune.c — your own data and another model's weights: the patch-kernel resize (FlexiViT)
 * against PyTorch, layer-wise lr decay, and ./train on generated image folders of 3 and 37
 * classes, --num-classes, and --init from a checkpoint of another head, patch size and resolution. */
#include "test.h"
#include "run_helpers.h"
#include "checkpoint/checkpoint.h"
#include "optim/optim.h"
#include "vit/patch_resample.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RESAMPLE_REF "tests/reference/patch_resample_reference.safetensors"

/* ------------------------------------------------------------------ the patch-kernel resize */
VG_TEST(finetune_patch_resample_matches_pytorch) {
    char err[512];
    vg_st_file *f = vg_st_open(RESAMPLE_REF, err, sizeof err);
    REQUIRE(f);
    const char *cases = vg_st_meta(f, "cases");
    REQUIRE(cases);
    char list[512];
    snprintf(list, sizeof list, "%s", cases);
    int n_cases = 0;
    for (char *save = NULL, *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save), n_cases++) {
        char mode[16]; int p, P;
        REQUIRE(sscanf(c, "%15[a-z]_%d_%d", mode, &p, &P) == 3);
        vg_interp_mode m = !strcmp(mode, "bilinear") ? VG_INTERP_BILINEAR : VG_INTERP_BICUBIC;
        char name[64];
        /* the 1-D resize matrix: F.interpolate(antialias=True) */
        double R[64 * 64];
        vg_resize_matrix_aa(p, P, m, R);
        snprintf(name, sizeof name, "r1.%s", c);
        vg_tensor *r1 = vg_empty(VG_DIMS(P, p));
        REQUIRE(vg_st_read_tensor(f, name, r1, err, sizeof err) == 0);
        const double dr = vg_test_compare_f64(R, vg_data(r1), (size_t)(P * p)).max_abs;
        CHECK_MSG(dr < 1e-6, "%s: resize matrix differs from PyTorch's by %g", c, dr);
        /* the kernels: pinv(Rᵀ) w */
        vg_tensor *in = vg_empty(VG_DIMS(3, p, p)), *want = vg_empty(VG_DIMS(3, P, P)), *got = vg_empty(VG_DIMS(3, P, P));
        snprintf(name, sizeof name, "in.%s", c);
        REQUIRE(vg_st_read_tensor(f, name, in, err, sizeof err) == 0);
        snprintf(name, sizeof name, "out.%s", c);
        REQUIRE(vg_st_read_tensor(f, name, want, err, sizeof err) == 0);
        REQUIRE(vg_resample_patch_kernels(vg_data(in), 3, p, vg_data(got), P, m));
        const vg_test_diff diff = vg_test_compare(vg_data(got), vg_data(want), (size_t)(3 * P * P));
        const double d = diff.max_abs, scale = diff.ref_max;
        CHECK_MSG(d < 2e-5 * scale, "%s: resampled kernel differs from numpy's pinv by %g (max |w'| %g)", c, d, scale);
        vg_arena_reset();
    }
    CHECK(n_cases == 6);
    vg_st_close(f);
}

/* Upsampling keeps every token exactly: ⟨R x, w'⟩ = ⟨x, w⟩ for any patch x (FlexiViT's point).
 * A wrong transpose or a wrong pseudo-inverse breaks it. */
VG_TEST(finetune_patch_resample_keeps_tokens_when_upsampling) {
    const int p = 3, P = 7;
    vg_rng r = vg_rng_seed(11);
    real w[9], w2[49];
    for (int i = 0; i < 9; i++) w[i] = (real)vg_rng_normal(&r);
    REQUIRE(vg_resample_patch_kernels(w, 1, p, w2, P, VG_INTERP_BICUBIC));
    double R[7 * 3];
    vg_resize_matrix_aa(p, P, VG_INTERP_BICUBIC, R);
    for (int trial = 0; trial < 5; trial++) {
        double x[9], X[49], before = 0, after = 0;
        for (int i = 0; i < 9; i++) x[i] = vg_rng_normal(&r);
        for (int i = 0; i < P; i++) for (int j = 0; j < P; j++) {        /* X = R x Rᵀ */
            double s = 0;
            for (int a = 0; a < p; a++) for (int b = 0; b < p; b++) s += R[i * p + a] * x[a * p + b] * R[j * p + b];
            X[i * P + j] = s;
        }
        for (int i = 0; i < 9; i++) before += x[i] * w[i];
        for (int i = 0; i < 49; i++) after += X[i] * w2[i];
        CHECK_CLOSE(after, before, 1e-5 * (1 + fabs(before)));
    }
}

/* ------------------------------------------------------------------ layer-wise lr decay */
VG_TEST(finetune_layer_decay_scales_as_timm) {
    const double d = 0.5;       /* depth 4: the embeddings 0.5⁵, block i 0.5^(4−i), norm and head 1 */
    CHECK_CLOSE(vg_layer_decay_scale("patch_embed.proj.weight", 4, d), 1.0 / 32, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("cls_token", 4, d), 1.0 / 32, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("pos_embed", 4, d), 1.0 / 32, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("reg_token", 4, d), 1.0 / 32, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("blocks.0.attn.qkv.weight", 4, d), 1.0 / 16, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("blocks.3.mlp.fc2.bias", 4, d), 0.5, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("blocks.12.norm1.weight", 14, d), 0.25, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("norm.weight", 4, d), 1, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("fc_norm.bias", 4, d), 1, 1e-15);
    CHECK_CLOSE(vg_layer_decay_scale("head.weight", 4, d), 1, 1e-15);
}

/* a parameter with lr scale s takes exactly the step of an optimizer run at lr·s (decay too) */
VG_TEST(finetune_adamw_lr_scale_is_a_per_parameter_lr) {
    vg_params pa = {0}, pb = {0};
    vg_tensor *a0 = vg_persistent_zeros(VG_DIMS(4, 3)), *a1 = vg_persistent_zeros(VG_DIMS(5));
    vg_tensor *b0 = vg_persistent_zeros(VG_DIMS(4, 3));
    vg_rng r = vg_rng_seed(5);
    for (int i = 0; i < 12; i++) vg_data(a0)[i] = vg_data(b0)[i] = (real)vg_rng_normal(&r);
    for (int i = 0; i < 5; i++) vg_data(a1)[i] = (real)vg_rng_normal(&r);
    vg_params_add(&pa, "", "w", a0, true); vg_params_add(&pa, "", "b", a1, false);
    vg_params_add(&pb, "", "w", b0, true);
    a0->grad = vg_persistent_zeros(VG_DIMS(4, 3)); a1->grad = vg_persistent_zeros(VG_DIMS(5));
    b0->grad = vg_persistent_zeros(VG_DIMS(4, 3));
    vg_adamw *oa = vg_adamw_new(&pa, 0.05), *ob = vg_adamw_new(&pb, 0.05);
    const double scale[2] = {0.25, 1.0};
    vg_adamw_set_lr_scale(oa, scale);
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < 12; i++) vg_data(a0->grad)[i] = vg_data(b0->grad)[i] = (real)vg_rng_normal(&r);
        for (int i = 0; i < 5; i++) vg_data(a1->grad)[i] = (real)vg_rng_normal(&r);
        vg_adamw_step(oa, 1e-2);
        vg_adamw_step(ob, 1e-2 * 0.25);
    }
    CHECK(memcmp(vg_data(a0), vg_data(b0), 12 * sizeof(real)) == 0);
    vg_adamw_free(oa); vg_adamw_free(ob);
    vg_params_free(&pa); vg_params_free(&pb);
    vg_tensor_free(a0); vg_tensor_free(a1); vg_tensor_free(b0);
}

/* ------------------------------------------------------------------ ./train on your own image folder */
static char root[256];
static const char *tmp(void) {
    if (!root[0]) {
        snprintf(root, sizeof root, "/tmp/vitgrad-finetune-test-XXXXXX");
        if (!mkdtemp(root)) return NULL;
        char d[300];
        snprintf(d, sizeof d, "%s/three", root);
        if (!vg_test_write_imagefolder(d, 3, 40, 10, 16)) return NULL;
        snprintf(d, sizeof d, "%s/many", root);
        if (!vg_test_write_imagefolder(d, 37, 6, 2, 16)) return NULL;
        snprintf(d, sizeof d, "%s/cifar", root);
        mkdir(d, 0755);
        if (!vg_test_write_cifar(d)) return NULL;
    }
    return root;
}

#define SMALL "--img-size 16 --patch 4 --dim 16 --depth 1 --heads 2 --batch 20 --threads 2 --eval-every 0 " \
              "--save-every 0 --log-every 5 --lr 3e-3 --warmup 2s --seed 1"

/* the test top-1 of a report */
static double top1(const char *out) {
    const char *s = strstr(out, "test top-1: ");
    return s ? atof(s + 12) : -1;
}

VG_TEST(finetune_imagefolder_classes_from_the_data) {
    const char *r = tmp();
    REQUIRE(r);
    static char out[1 << 16];
    char cmd[2048];
    /* 3 classes: the head follows the folders, and it learns (chance is 33 %) */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three --model vit-micro-cifar " SMALL
             " --steps 60 --out %s/run3", r, r);
    int rc = vg_test_run(cmd, out, sizeof out);
    REQUIRE(rc == 0);
    CHECK_MSG(strstr(out, "per-class accuracy:\n   0 c00") && strstr(out, "   2 c02") && !strstr(out, "   3 "),
              "3-class report: %s", out);
    CHECK_MSG(top1(out) > 80, "3 classes: test top-1 %.2f%% after 60 steps: %s", top1(out), out);
    /* the run directory records how it was started: the command line, processes x threads */
    char cpath[600];
    snprintf(cpath, sizeof cpath, "%s/run3/command.txt", r);
    char *rec = vg_test_read_file(cpath, NULL);
    CHECK_MSG(rec && strstr(rec, "1 process x 2 threads, vitgrad ") && strstr(rec, "train --dataset imagefolder --data ") &&
              strstr(rec, " --steps 60 --out "), "command.txt: %s", rec ? rec : "(missing)");
    free(rec);
    /* 37 classes: 37 report rows, a 37 x 37 matrix */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/many --model vit-micro-cifar " SMALL
             " --steps 40 --out %s/run37", r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    REQUIRE(rc == 0);
    CHECK_MSG(strstr(out, "  36 c36") && strstr(out, "    36"), "37-class report: %s", out);
    CHECK_MSG(top1(out) > 100.0 / 37 * 3, "37 classes: test top-1 %.2f%% (chance 2.7%%)", top1(out));
    /* --eval-only of that model reports the 37 classes again, the same accuracy */
    char out2[1 << 16];
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/many --init %s/run37 --eval-only --img-size 16 "
             "--threads 2 --batch 20 --out %s/eval37", r, r, r);
    rc = vg_test_run(cmd, out2, sizeof out2);
    CHECK_MSG(rc == 0 && strstr(out2, "model: from") && strstr(out2, "37 classes") && strstr(out2, "  36 c36"),
              "--eval-only of the 37-class model: %s", out2);
    CHECK_CLOSE(top1(out2), top1(out), 1e-9);
    /* --num-classes that does not match the data is refused, naming both counts */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three --model vit-micro-cifar " SMALL
             " --steps 2 --num-classes 5 --out %s/bad", r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "has 3 classes, the model 5") && strstr(out, "--num-classes"), "exit %d: %s", rc, out);
    /* --resume with another --num-classes is refused, naming both */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three --model vit-micro-cifar " SMALL
             " --steps 60 --num-classes 4 --resume %s/run3 --out %s/run3", r, r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "head has 3 classes, --num-classes says 4"), "exit %d: %s", rc, out);
}

/* --init from a 10-class CIFAR-10 model at 32 px, patch 4, to a 3-class folder at 24 px, patch 2:
 * a new head, the kernel resampled, the position table interpolated (24 px / 2 = a 12x12 grid);
 * then it learns */
VG_TEST(finetune_init_from_another_head_patch_and_resolution) {
    const char *r = tmp();
    REQUIRE(r);
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "./train --dataset cifar10 --data %s/cifar --model vit-micro-cifar --dim 16 --depth 1 "
             "--heads 2 --batch 32 --threads 2 --steps 10 --eval-every 0 --save-every 0 --out %s/pre", r, r);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three --init %s/pre --img-size 24 --patch 2 "
             "--batch 20 --threads 2 --steps 40 --eval-every 0 --save-every 0 --lr 3e-3 --warmup 2s --layer-decay 0.75 "
             "--out %s/ft", r, r, r);
    int rc = vg_test_run(cmd, out, sizeof out);
    REQUIRE(rc == 0);
    CHECK_MSG(strstr(out, "model: from") && strstr(out, "patch 4, dim 16, depth 1") &&
              strstr(out, "this run: 24 px, patch 2, 3 classes"), "%s", out);
    CHECK_MSG(strstr(out, "has 10 classes, this run 3: a new head"), "%s", out);
    CHECK_MSG(strstr(out, "patch_embed: kernel 4x4 -> 2x2"), "%s", out);
    CHECK_MSG(strstr(out, "pos_embed: resized 8x8 -> 12x12"), "%s", out);
    CHECK_MSG(strstr(out, "layer decay 0.75"), "%s", out);
    CHECK_MSG(top1(out) > 80, "fine-tuned: test top-1 %.2f%%: %s", top1(out), out);
    /* the resampled kernel is what the pseudo-inverse gives, not the file's and not a fresh init */
    char e[512], p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/pre/model.safetensors", r);
    vg_st_file *f = vg_st_open(p1, e, sizeof e);
    REQUIRE(f);
    vg_tensor *w4 = vg_empty(VG_DIMS(16, 3, 4, 4)), *w2 = vg_empty(VG_DIMS(16, 3, 2, 2));
    REQUIRE(vg_st_read_tensor(f, "patch_embed.proj.weight", w4, e, sizeof e) == 0);
    vg_st_close(f);
    REQUIRE(vg_resample_patch_kernels(vg_data(w4), 48, 4, vg_data(w2), 2, VG_INTERP_BICUBIC));
    /* a 0-step fine-tune keeps the fitted weights unchanged: compare them */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three --init %s/pre --img-size 24 --patch 2 "
             "--batch 20 --threads 2 --steps 1 --lr 0 --min-lr 0 --eval-every 0 --save-every 0 --out %s/ft0", r, r, r);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    snprintf(p2, sizeof p2, "%s/ft0/model.safetensors", r);
    f = vg_st_open(p2, e, sizeof e);
    REQUIRE(f);
    vg_tensor *got = vg_empty(VG_DIMS(16, 3, 2, 2));
    REQUIRE(vg_st_read_tensor(f, "patch_embed.proj.weight", got, e, sizeof e) == 0);
    vg_st_close(f);
    const double d = vg_test_compare(vg_data(got), vg_data(w2), 16 * 12).max_abs;
    CHECK_MSG(d < 1e-6, "the saved kernel differs from the resampled one by %g", d);
    vg_arena_reset();
}
