/* inspect_augment.c — `./inspect augment`: what the model is shown in training. One training
 * batch of a dataset through the loader's augmentation (crop/flip, RandAugment, random erasing)
 * and the training step's Mixup/CutMix, with the same flags and the same generators as ./train
 * (sample from (seed, epoch, index), batch from (seed, step)), drawn as a PNG grid with each
 * image's soft label; the labels are printed too. With --patch-drop, a last row greys out the
 * patches that patch dropout removes before the first block. */
#include "inspect_common.h"
#include "png_write.h"
#include "run/run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int inspect_augment_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect augment [--dataset KIND] [--data DIR] [--aug auto|none|crop|rrc] [--size S]\n"
               "                       [--aa SPEC] [--reprob P] [--mixup A] [--cutmix A] [--mixup-prob P]\n"
               "                       [--mixup-switch-prob P] [--smoothing X] [--n N] [--seed N]\n"
               "                       [--step K] [--patch-drop P] [--patch N] --out OUT.png\n"
               "  The flags mean what they mean for ./train (./train --help). KIND default cifar10;\n"
               "  --n: batch size shown (default 16; Mixup pairs image b with image n-1-b);\n"
               "  --step: the training step whose batch is shown (default 0);\n"
               "  --patch-drop P with --patch N (default 4): the patches of N x N pixels that\n"
               "  ./train --patch-drop P keeps at that step, when patch dropout is its only random\n"
               "  layer (no --drop, --attn-drop, --drop-path; as in make train).\n"
               "Writes a grid: top row the images after the per-sample augmentation, below them the\n"
               "same batch after Mixup/CutMix, each captioned with its soft label (the two largest\n"
               "class weights); prints every image's label weights.\n");
}

static bool parse_real(const char *flag, const char *s, double lo, double hi, double *out) {
    char *end; double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) { fprintf(stderr, "inspect augment: %s: expected a number in [%g, %g], got '%s'\n", flag, lo, hi, s); return false; }
    *out = v; return true;
}

/* normalised (C, S, S) → uint8 for drawing */
static void to_u8(const real *x, int C, int S, const float *mean, const float *std, uint8_t *out) {
    for (int c = 0; c < C; c++)
        for (int k = 0; k < S * S; k++) {
            double v = ((double)x[c * S * S + k] * std[c] + mean[c]) * 255.0;
            out[c * S * S + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lrint(v));
        }
}

/* the two largest weights of a soft label as "NAME .62 NAME .38" (or just "NAME" when one) */
static void caption(const real *t, int K, const vg_dataset *d, char *s, size_t n, bool numbers) {
    int a = 0, b = -1;
    for (int k = 1; k < K; k++) if (t[k] > t[a]) a = k;
    for (int k = 0; k < K; k++) if (k != a && (b < 0 || t[k] > t[b])) b = k;
    const char *na = d->class_names ? d->class_names[a] : "?", *nb = b >= 0 && d->class_names ? d->class_names[b] : "?";
    if (!numbers) snprintf(s, n, "%.10s", na);
    else if (b < 0 || t[b] < 0.05) snprintf(s, n, "%.10s %.2f", na, (double)t[a]);
    else snprintf(s, n, "%.7s %.2f %.7s %.2f", na, (double)t[a], nb, (double)t[b]);
}

int inspect_augment_main(int argc, char **argv) {
    const char *kind = "cifar10", *dir = NULL, *aug = "auto", *aa = NULL, *out = NULL;
    double reprob = 0, smoothing = 0.1, patch_drop = 0;
    vg_mixup_config mc = {0, 0, 1.0, 0.5, 0.1, 0};
    int n = 16, size = 0, seed = 0, step = 0, patch = 4;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r = 0;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        #define TAKE(flag) ((r = ic_take("augment", argc, argv, &i, flag, &v)) != 0)
        if (TAKE("--dataset")) kind = v;
        else if (TAKE("--data")) dir = v;
        else if (TAKE("--aug")) aug = v;
        else if (TAKE("--aa")) aa = v;
        else if (TAKE("--out")) out = v;
        else if (TAKE("--reprob")) { if (r > 0 && !parse_real("--reprob", v, 0, 1, &reprob)) return IC_USAGE; }
        else if (TAKE("--mixup")) { if (r > 0 && !parse_real("--mixup", v, 0, 100, &mc.mixup_alpha)) return IC_USAGE; }
        else if (TAKE("--cutmix")) { if (r > 0 && !parse_real("--cutmix", v, 0, 100, &mc.cutmix_alpha)) return IC_USAGE; }
        else if (TAKE("--mixup-prob")) { if (r > 0 && !parse_real("--mixup-prob", v, 0, 1, &mc.prob)) return IC_USAGE; }
        else if (TAKE("--mixup-switch-prob")) { if (r > 0 && !parse_real("--mixup-switch-prob", v, 0, 1, &mc.switch_prob)) return IC_USAGE; }
        else if (TAKE("--smoothing")) { if (r > 0 && !parse_real("--smoothing", v, 0, 0.999, &smoothing)) return IC_USAGE; }
        else if (TAKE("--n")) { if (r > 0 && !ic_int("augment", "--n", v, 1, 64, &n)) return IC_USAGE; }
        else if (TAKE("--size")) { if (r > 0 && !ic_int("augment", "--size", v, 1, 512, &size)) return IC_USAGE; }
        else if (TAKE("--seed")) { if (r > 0 && !ic_int("augment", "--seed", v, 0, 1 << 30, &seed)) return IC_USAGE; }
        else if (TAKE("--patch-drop")) { if (r > 0 && !parse_real("--patch-drop", v, 0, 0.99, &patch_drop)) return IC_USAGE; }
        else if (TAKE("--patch")) { if (r > 0 && !ic_int("augment", "--patch", v, 1, 512, &patch)) return IC_USAGE; }
        else if (TAKE("--step")) { if (r > 0 && !ic_int("augment", "--step", v, 0, 1 << 30, &step)) return IC_USAGE; }
        else { fprintf(stderr, "inspect augment: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE; }
        #undef TAKE
        if (r < 0) return IC_USAGE;
    }
    if (!out) { fprintf(stderr, "inspect augment: --out is required\n"); usage(stderr); return IC_USAGE; }
    vg_loader_config lc = vg_loader_config_default();
    char err[IC_ERRLEN];
    if (aa && vg_randaugment_parse(aa, &lc.ra, err, sizeof err)) { fprintf(stderr, "inspect augment: --aa %s\n", err); return IC_USAGE; }
    if (strcmp(aug, "auto") && strcmp(aug, "none") && strcmp(aug, "crop") && strcmp(aug, "rrc")) { fprintf(stderr, "inspect augment: --aug: unknown augmentation '%s'\n", aug); return IC_USAGE; }
    const char *env = !strcmp(kind, "cifar10") ? "CIFAR10_DIR" : !strcmp(kind, "imagefolder") ? "IMAGENET_SUBSET_DIR" : "FASHION_MNIST_DIR";
    const char *fallback = !strcmp(kind, "cifar10") ? "../shared/data/cifar-10-batches-bin" : !strcmp(kind, "imagefolder") ? "../shared/data/imagenet-subset" : "/usr/share/datasets/fashion-mnist";
    if (!dir) dir = getenv(env) && *getenv(env) ? getenv(env) : fallback;
    vg_dataset *d = vg_dataset_open(kind, dir, VG_SPLIT_TRAIN, err, sizeof err);
    if (!d) { fprintf(stderr, "inspect augment: %s\n", err); return IC_FAIL; }
    if (n > d->n) n = d->n;
    /* the loader exactly as ./train builds it, at the position of step `step` */
    lc.batch_size = n; lc.train = 1; lc.image_size = size; lc.n_threads = 0; lc.seed = (uint64_t)seed;
    lc.aug = !strcmp(aug, "none") ? VG_AUG_NONE : !strcmp(aug, "crop") ? VG_AUG_PAD_CROP : !strcmp(aug, "rrc") ? VG_AUG_RRC : VG_AUG_AUTO;
    lc.randaugment = aa != NULL; lc.reprob = reprob;
    if (!lc.image_size && !(d->height && d->height == d->width)) lc.image_size = 64;
    vg_loader *L = vg_loader_new(d, &lc, err, sizeof err);
    if (!L) { fprintf(stderr, "inspect augment: %s\n", err); vg_dataset_free(d); return IC_FAIL; }
    int per_epoch = vg_loader_batches_per_epoch(L);
    vg_loader_state st = vg_loader_state_get(L);
    st.epoch = (uint64_t)(step / per_epoch); st.index = (uint64_t)(step % per_epoch) * (uint64_t)n;
    vg_batch b;
    if (vg_loader_state_set(L, &st, err, sizeof err) || vg_loader_next(L, &b) != 1) {
        fprintf(stderr, "inspect augment: no batch: %s\n", err); vg_loader_free(L); vg_dataset_free(d); return IC_FAIL;
    }
    const int C = b.c, S = b.h, K = d->n_classes;
    if (patch_drop > 0 && (S % patch || b.w != S)) {
        fprintf(stderr, "inspect augment: --patch %d does not divide the %dx%d images\n", patch, b.w, S);
        vg_loader_free(L); vg_dataset_free(d); return IC_USAGE;
    }
    const size_t img = (size_t)C * S * S;
    real *mixed = malloc(sizeof(real) * img * (size_t)n), *targets = malloc(sizeof(real) * (size_t)n * K);
    uint8_t *u8 = malloc(img);
    memcpy(mixed, b.x, sizeof(real) * img * (size_t)n);
    mc.label_smoothing = smoothing; mc.num_classes = K;
    vg_rng mr = vg_mixup_rng((uint64_t)seed, step, 0);
    vg_mixup_params mp = vg_mixup_draw(&mc, &mr, S, S);
    vg_mixup_apply(&mp, mixed, n, C, S, S);
    vg_mixup_targets(b.y, n, K, mp.lam, smoothing, targets);

    /* patch dropout's rows as ./train draws them at `step`: its dropout generator, one key per
     * earlier step (patch dropout is the only layer drawing), sample b's rows from (key, b) */
    const int G = S / patch, N = G * G, R = patch_drop > 0 ? 1 + (int)vg_patch_dropout_keep(N, patch_drop) : 0;
    real *rows = R ? malloc(sizeof(real) * (size_t)n * (size_t)R) : NULL;
    unsigned char *keep = R ? malloc((size_t)N) : NULL;                 /* per patch: kept */
    if (R && rows) {
        vg_rng dr = trainer_dropout_rng((uint64_t)seed);
        for (int s = 0; s < step; s++) vg_rng_next(&dr);
        vg_dropout_first_sample(0);
        vg_patch_dropout_indices(rows, n, 1 + N, 1, patch_drop, &dr);
    }

    /* the grid: per image a column; row 1 augmented, row 2 mixed (when mixing is on), last row
     * the dropped patches greyed (with --patch-drop) */
    const bool mixing = vg_mixup_enabled(&mc);
    const int zoom = S >= 96 ? 1 : (96 + S - 1) / S, tile = S * zoom, cols = n < 8 ? n : 8;
    const int cap = 12, gap = 8, margin = 10, top = 22;
    const int rows_per = 1 + mixing + (R > 0), groups = (n + cols - 1) / cols;
    const int cell_w = tile > 150 ? tile : 150;
    const int W = 2 * margin + cols * (cell_w + gap), H = top + groups * rows_per * (tile + cap + gap) + margin;
    vg_canvas *cv = vg_canvas_new(W, H, VG_WHITE);
    if (!cv || !mixed || !targets || !u8 || (R && (!rows || !keep))) { fprintf(stderr, "inspect augment: out of memory\n"); return IC_FAIL; }
    char t[200];
    snprintf(t, sizeof t, "%s  AA %s  REPROB %.2f", kind, aa ? aa : "OFF", reprob);
    if (mixing) snprintf(t + strlen(t), sizeof t - strlen(t), "  %s LAMBDA %.3f", mp.lam == 1.0 ? "NOT MIXED" : mp.cutmix ? "CUTMIX" : "MIXUP", mp.lam);
    if (R) snprintf(t + strlen(t), sizeof t - strlen(t), "  PATCH DROP %.2f: %d OF %d KEPT", patch_drop, R - 1, N);
    vg_canvas_text(cv, margin, 6, t, VG_BLACK, 1);
    for (int k = 0; k < n; k++) {
        int gx = margin + (k % cols) * (cell_w + gap), gy = top + (k / cols) * rows_per * (tile + cap + gap);
        for (int row = 0; row < rows_per; row++) {
            const bool dropped_row = R && row == rows_per - 1;
            const real *x = (row ? mixed : b.x) + (size_t)k * img;      /* the last row: what the model sees */
            int y = gy + row * (tile + cap + gap);
            to_u8(x, C, S, d->mean, d->std, u8);
            if (dropped_row) {        /* grey every patch not among sample k's kept rows */
                memset(keep, 0, (size_t)N);
                for (int r = 1; r < R; r++) { int p = (int)rows[(size_t)k * R + r] - 1; if (p >= 0 && p < N) keep[p] = 1; }
                for (int p = 0; p < N; p++)
                    if (!keep[p])
                        for (int c = 0; c < C; c++)
                            for (int i = 0; i < patch; i++)
                                memset(u8 + (size_t)c * S * S + (size_t)((p / G) * patch + i) * S + (p % G) * patch, 128, (size_t)patch);
            }
            vg_canvas_image(cv, gx, y, u8, C, S, S, zoom);
            if (row && !dropped_row && mp.cutmix && mp.lam < 1) vg_canvas_rect(cv, gx + mp.x0 * zoom, y + mp.y0 * zoom, (mp.x1 - mp.x0) * zoom, (mp.y1 - mp.y0) * zoom, (vg_rgb){255, 220, 0});
            real onehot[1024];
            if (!row) { for (int c = 0; c < K && c < 1024; c++) onehot[c] = c == b.y[k]; }
            if (dropped_row) snprintf(t, sizeof t, "%d of %d patches", R - 1, N);
            else caption(row ? targets + (size_t)k * K : onehot, K, d, t, sizeof t, row);
            vg_canvas_text(cv, gx, y + tile + 3, t, row ? (vg_rgb){0, 0, 160} : VG_BLACK, 1);
        }
    }
    int rc = vg_canvas_write_png(cv, out, err, sizeof err);
    if (rc) fprintf(stderr, "inspect augment: %s\n", err);
    else {
        printf("%s train, step %d (epoch %llu, images %llu..%llu of its order), %dx%d, seed %d\n", kind, step,
               (unsigned long long)b.epoch, (unsigned long long)b.index, (unsigned long long)b.index + (unsigned long long)n - 1, S, S, seed);
        if (mixing) {
            if (mp.lam == 1.0) printf("batch not mixed (--mixup-prob %.2f)\n", mc.prob);
            else if (mp.cutmix) printf("CutMix: box rows %d..%d, columns %d..%d from the flipped batch; lambda = 1 - box/area = %.4f\n", mp.y0, mp.y1 - 1, mp.x0, mp.x1 - 1, mp.lam);
            else printf("Mixup: lambda %.4f (image b = lambda * b + (1 - lambda) * image %d - b)\n", mp.lam, n - 1);
        }
        if (R) {
            printf("patch dropout %.2f: each image keeps %d of its %d patches of %dx%d pixels (row-major), e.g. image 0:", patch_drop, R - 1, N, patch, patch);
            for (int r = 1; r < R; r++) printf(" %d", (int)rows[r] - 1);
            printf("\n");
        }
        printf("soft labels (smoothing %.2f):\n", smoothing);
        for (int k = 0; k < n; k++) {
            printf("  %2d %-10s", k, d->class_names ? d->class_names[b.y[k]] : "?");
            for (int c = 0; c < K; c++)
                if (targets[(size_t)k * K + c] > smoothing / K + 1e-6) printf("  %s %.3f", d->class_names ? d->class_names[c] : "?", (double)targets[(size_t)k * K + c]);
            printf("\n");
        }
        printf("wrote %s (%dx%d)\n", out, W, H);
    }
    vg_canvas_free(cv); free(mixed); free(targets); free(u8); free(rows); free(keep);
    vg_loader_free(L); vg_dataset_free(d);
    return rc ? IC_FAIL : 0;
}
