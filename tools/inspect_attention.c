/* inspect_attention.c — `./inspect attention`: which patches does the head read, and through which
 * attention? For one image, per layer and head, the attention weights (vg_vit_block_forward's
 * attn_out, softmax output) reduced to one value per patch the way the model's head reads tokens:
 *   cls pooling:  the class token's row (query 0) — the head reads the class token;
 *   mean pooling: the attention each patch receives, averaged over the patch queries — the head
 *                 reads the mean of the patch tokens, never the class token's row;
 *   seq pooling:  the same, the patch queries weighted by the pooling weights a_n the model
 *                 computes for this image (the head reads Σ a_n x_n).
 * In each case a weight per query row, qw (T), the rows the head reads.
 * And attention rollout (Abnar & Zuidema 2020): per layer average the heads, add the identity for
 * the residual path, renormalise the rows, and multiply the layers, R = Â_L · … · Â_1 — each row of
 * R sums to 1. The row the head reads (the class token's, or the mean of the patch rows) says how
 * much each patch flows into it at the top.
 * The PNG overlays each map on the image: rows = layers, columns = image, heads, rollout up to
 * that layer; above them the prediction (class name, probability) and what the maps show; under
 * each map its maximum, and a colour bar. Colour scale per map: 0 → max(map maximum, 4/N), so a
 * near-uniform map stays dark.
 * Class names: the checkpoint's "data.class_names" metadata (one per line) when it has them, else
 * CIFAR-10's for a 10-class CIFAR-10 model, else "class N". */
#include "inspect_common.h"
#include "png_write.h"
#include "tensor/safetensors.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int inspect_attention_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect attention (--ckpt FILE | --model PRESET [--seed N])\n"
               "                         (--image FILE | --dataset KIND [--data DIR] --index N [--split train|test])\n"
               "                         [--out ATT.png] [--top K]\n"
               "  --ckpt:  model.safetensors (or run dir) from ./train; --model: a fresh, untrained preset\n"
               "  the image gets the eval transform (resize + centre crop to the model's size)\n"
               "  --out:   heat maps over the image: rows = layers, columns = heads + rollout up to that\n"
               "           layer; each map is scaled to its own maximum (written under it), but at least\n"
               "           to 4x uniform attention (4/N), so a near-uniform map stays dark; a colour bar\n"
               "  --top:   patches of the rollout to list (default 5)\n"
               "Shows the attention the model's head reads: with cls pooling the class token's attention\n"
               "to each patch; with mean pooling (the head averages the patch tokens and never reads the\n"
               "class token) the attention each patch receives, averaged over the patch queries.\n"
               "Prints the predicted class (name, probability), per layer and head the patch with the\n"
               "largest weight, the rollout's row-sum check and its top patches.\n");
}

/* Â = (mean over heads + I), rows renormalised; R ← Â·R. att (L, H, T, T) → R (T, T) */
static void rollout(const float *att, int L, int H, int T, double *R) {
    double *A = malloc(sizeof *A * T * T), *tmp = malloc(sizeof *tmp * T * T);
    for (int i = 0; i < T; i++) for (int j = 0; j < T; j++) R[i * T + j] = i == j;
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < T; i++) {
            double s = 0;
            for (int j = 0; j < T; j++) {
                double a = 0;
                for (int h = 0; h < H; h++) a += att[(((size_t)l * H + h) * T + i) * T + j];
                A[i * T + j] = a / H + (i == j);
                s += A[i * T + j];
            }
            for (int j = 0; j < T; j++) A[i * T + j] /= s;
        }
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                double s = 0;
                for (int k = 0; k < T; k++) s += A[i * T + k] * R[k * T + j];
                tmp[i * T + j] = s;
            }
        memcpy(R, tmp, sizeof *R * T * T);
    }
    free(A); free(tmp);
}

/* The map the head reads, for layer l and head h (h = -1: the mean over heads) of att (L, H, T, T):
 * v[k] for patch k (token S + k) and the weight on the prefix tokens: Σ_q qw[q] · row q (cls:
 * query 0's row; mean: each key's column averaged over the N patch queries; seq: weighted by a). */
static double head_map(const float *att, int l, int H, int h, int T, int S, const double *qw, double *v) {
    const int N = T - S, h0 = h < 0 ? 0 : h, h1 = h < 0 ? H : h + 1;
    double prefix = 0;
    for (int k = 0; k < N; k++) v[k] = 0;
    for (int hh = h0; hh < h1; hh++) {
        const float *A = att + ((size_t)l * H + hh) * T * T;
        for (int q = 0; q < T; q++) {
            if (qw[q] == 0) continue;
            const double wq = qw[q] / (h1 - h0);
            for (int j = 0; j < S; j++) prefix += wq * A[(size_t)q * T + j];
            for (int k = 0; k < N; k++) v[k] += wq * A[(size_t)q * T + S + k];
        }
    }
    return prefix;
}

/* the row of the rollout R (T, T) the head reads: Σ_q qw[q] · row q */
static void rollout_row(const double *R, int T, const double *qw, double *row) {
    for (int j = 0; j < T; j++) row[j] = 0;
    for (int q = 0; q < T; q++)
        if (qw[q] != 0)
            for (int j = 0; j < T; j++) row[j] += qw[q] * R[(size_t)q * T + j];
}

/* the map's colour scale: its maximum, but at least 4× uniform (flat maps stay dark) */
static double map_scale(const double *v, int N) {
    double mx = 4.0 / N;
    for (int k = 0; k < N; k++) if (v[k] > mx) mx = v[k];
    return mx;
}

/* the image in gray with the N patch values (scaled to map_scale) blended over it */
static void heatmap(vg_canvas *cv, int x0, int y0, const uint8_t *img, int C, int S, int zoom,
                    int g, int P, const double *v) {
    const double mx = map_scale(v, g * g);
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            size_t o = (size_t)y * S + x, hw = (size_t)S * S;
            int gray = C >= 3 ? (img[o] * 30 + img[hw + o] * 59 + img[2 * hw + o] * 11) / 100 : img[o];
            vg_rgb c = vg_colormap(mx > 0 ? v[(y / P) * g + x / P] / mx : 0);
            for (int dy = 0; dy < zoom; dy++)
                for (int dx = 0; dx < zoom; dx++) {
                    vg_canvas_set(cv, x0 + x * zoom + dx, y0 + y * zoom + dy, (vg_rgb){(uint8_t)gray, (uint8_t)gray, (uint8_t)gray});
                    vg_canvas_blend(cv, x0 + x * zoom + dx, y0 + y * zoom + dy, c, 0.7);
                }
        }
}

/* data/cifar10.c's default names, for checkpoints written before they carried data.class_names */
static const char *const cifar10_names[10] = {"airplane", "automobile", "bird", "cat", "deer",
                                              "dog", "frog", "horse", "ship", "truck"};

/* class c's name into out: the checkpoint's data.class_names line c when it has one line per
 * class, else CIFAR-10's names for a 10-class cifar10 model, else "class c" */
static void class_name(const ic_model *mm, const char *ckpt_file, int c, char *out, size_t n) {
    snprintf(out, n, "class %d", c);
    if (ckpt_file) {
        char err[IC_ERRLEN];
        vg_st_file *f = vg_st_open(ckpt_file, err, sizeof err);
        const char *names = f ? vg_st_meta(f, "data.class_names") : NULL;
        if (names) {
            int lines = 1;
            for (const char *p = names; *p; p++) lines += *p == '\n';
            const char *p = names;
            for (int i = 0; i < c && p; i++) { p = strchr(p, '\n'); if (p) p++; }
            if (lines == mm->m.cfg.num_classes && p) {
                size_t len = strcspn(p, "\n");
                if (len > 0) { snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), p); vg_st_close(f); return; }
            }
        }
        vg_st_close(f);
    }
    if (mm->m.cfg.num_classes == 10 && !strcmp(mm->dataset, "cifar10") && c >= 0 && c < 10) snprintf(out, n, "%s", cifar10_names[c]);
}

/* a weight for the 5x7 font (digits and '.'): three decimals */
static void fmt_value(char *buf, size_t n, double v) { snprintf(buf, n, "%.3f", v); }

int inspect_attention_main(int argc, char **argv) {
    ic_source_opts o = {0};
    o.split = VG_SPLIT_TEST;
    const char *out = NULL;
    int top = 5;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if ((r = ic_source_arg("attention", argc, argv, &i, &o))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("attention", argc, argv, &i, "--out", &out))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("attention", argc, argv, &i, "--top", &v))) { if (r < 0 || !ic_int("attention", "--top", v, 1, 100000, &top)) return IC_USAGE; continue; }
        fprintf(stderr, "inspect attention: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    if (!o.ckpt == !o.preset) { fprintf(stderr, "inspect attention: give exactly one of --ckpt FILE or --model PRESET\n"); usage(stderr); return IC_USAGE; }
    if (!o.image == !o.dataset) { fprintf(stderr, "inspect attention: give exactly one of --image FILE or --dataset KIND\n"); usage(stderr); return IC_USAGE; }

    ic_model mm;
    if (ic_source_model("attention", &o, &mm)) return o.preset ? IC_USAGE : IC_FAIL;
    vg_vit *m = &mm.m;
    if (m->reg_token || m->cfg.no_embed_class || !m->norm.weight || !m->head.weight) {
        /* the maps below take the patches after at most a class token, the final norm and head */
        fprintf(stderr, "inspect attention: %s is a timm layout this view does not show (it needs no register tokens, "
                "a pos_embed row per token, the final norm before pooling and a head)\n", mm.source);
        ic_model_free(&mm);
        return IC_FAIL;
    }
    ic_image im;
    if (ic_source_image("attention", &o, &mm, &im)) { ic_model_free(&mm); return IC_FAIL; }
    const bool mean_pool = m->cfg.pool != VG_VIT_POOL_CLS, seq_pool = m->cfg.pool == VG_VIT_POOL_SEQ;
    const int Sz = m->cfg.img_size, P = m->cfg.patch_size, g = m->grid_h, N = g * g;
    const int S = vg_vit_num_prefix_tokens(&m->cfg), T = N + S;      /* S: 1 with a class token, else 0 */
    const int L = m->cfg.depth, H = m->cfg.num_heads;

    vg_no_grad_begin();
    float *att = malloc(sizeof *att * (size_t)L * H * T * T);
    double *R = malloc(sizeof *R * T * T);
    vg_tensor *x = vg_vit_pos_embed(m, vg_vit_patch_embed(m, ic_image_input(&im, m->cfg.in_chans, Sz)));
    for (int l = 0; l < L && x; l++) {
        vg_tensor *a = NULL;
        x = vg_vit_block_forward(m, l, x, false, NULL, &a);         /* a: (1, H, T, T) */
        if (!x || !a) { x = NULL; break; }
        vg_tensor *ac = vg_contiguous(a);
        for (size_t k = 0; k < (size_t)H * T * T; k++) att[(size_t)l * H * T * T + k] = (float)vg_data(ac)[k];
    }
    vg_tensor *feat = x ? vg_layernorm_fn(x, m->norm.weight, m->norm.bias, m->cfg.norm_eps) : NULL;
    vg_tensor *logits = feat ? vg_linear_fn(vg_vit_pool_tokens(m, feat), m->head.weight, m->head.bias) : NULL;
    /* qw: the weight of each query row in what the head reads */
    double *qw = calloc((size_t)T, sizeof *qw);
    vg_tensor *a = logits && seq_pool ? vg_contiguous(vg_vit_seq_pool_weights(m, vg_narrow(feat, 1, S, N))) : NULL;
    if (!logits || !att || !R || !qw || (seq_pool && !a)) {
        fprintf(stderr, "inspect attention: forward failed: %s\n", logits && qw ? vg_error() : "out of memory");
        free(att); free(R); free(qw); ic_image_free(&im); ic_model_free(&mm); vg_no_grad_end(); return IC_FAIL;
    }
    for (int k = 0; k < N; k++) qw[S + k] = seq_pool ? (double)vg_data(a)[k] : mean_pool ? 1.0 / N : 0;
    if (!mean_pool) qw[0] = 1;
    int amax = 0;                                                      /* the patch seq pooling weighs most */
    for (int k = 1; k < N; k++) if (qw[S + k] > qw[S + amax]) amax = k;
    /* the predicted class and its softmax probability (in double: logits are few) */
    int pred = 0;
    for (int c = 1; c < m->cfg.num_classes; c++) if (vg_data(logits)[c] > vg_data(logits)[pred]) pred = c;
    double zsum = 0;
    for (int c = 0; c < m->cfg.num_classes; c++) zsum += exp((double)vg_data(logits)[c] - (double)vg_data(logits)[pred]);
    const double prob = 1.0 / zsum;
    vg_no_grad_end();
    vg_arena_reset();
    char pred_name[128];
    /* a file without its training data's name (a snapshot written before they carried it): the
     * image's dataset names the classes when it has the model's class count */
    if (!mm.dataset[0] && o.dataset) snprintf(mm.dataset, sizeof mm.dataset, "%s", o.dataset);
    class_name(&mm, o.ckpt ? mm.source : NULL, pred, pred_name, sizeof pred_name);

    printf("model: %s\nimage: %s, %dx%d px -> %dx%d patches of %d px, %d tokens\n", mm.source, im.what, Sz, Sz, g, g, P, T);
    if (im.label >= 0) printf("prediction: %s (class %d), probability %.3f (%s; label %d %s)\n", pred_name, pred, prob,
                              pred == im.label ? "correct" : "wrong", im.label, im.label_name);
    else printf("prediction: %s (class %d), probability %.3f\n", pred_name, pred, prob);
    double *v = malloc(sizeof *v * (N > T ? N : T)), *rrow = malloc(sizeof *rrow * T);
    if (!v || !rrow) {
        fprintf(stderr, "inspect attention: out of memory\n");
        free(v); free(rrow); free(qw); free(att); free(R); ic_image_free(&im); ic_model_free(&mm); return IC_FAIL;
    }
    if (seq_pool) {
        printf("seq pooling: the head reads the %d patch tokens weighted by its pooling weights for this image\n"
               "(largest: patch (%d,%d) %.3f, uniform %.3f); shown is the attention each patch receives, the patch\n"
               "queries weighted alike. Per layer and head: the patch that receives the most (row, col), its weight%s\n",
               N, amax / g, amax % g, qw[S + amax], 1.0 / N, S ? ", and the class token's" : "");
    } else if (mean_pool) {
        printf("mean pooling: the head reads the average of the %d patch tokens, not the class token; shown is\n"
               "the attention each patch receives, averaged over the %d patch queries. Per layer and head: the\n"
               "patch that receives the most (row, col), its mean weight%s\n", N, N, S ? ", and the class token's" : "");
    } else {
        printf("cls pooling: the head reads the class token; shown is the class token's attention to each patch.\n"
               "CLS -> patches attention, per layer and head: the most attended patch (row, col), its weight,\n"
               "and the CLS token's attention to itself\n");
    }
    for (int l = 0; l < L; l++) {
        printf("  layer %d:", l);
        for (int h = 0; h < H; h++) {
            const double pre = head_map(att, l, H, h, T, S, qw, v);
            int best = 0;
            for (int k = 1; k < N; k++) if (v[k] > v[best]) best = k;
            printf("  h%d (%d,%d) %.3f", h, best / g, best % g, v[best]);
            if (S) printf(mean_pool ? " cls %.2f" : " self %.2f", pre);
        }
        printf("\n");
    }
    rollout(att, L, H, T, R);
    double mn = 1e9, mx = -1e9;
    for (int i = 0; i < T; i++) {
        double s = 0;
        for (int j = 0; j < T; j++) s += R[i * T + j];
        if (s < mn) mn = s;
        if (s > mx) mx = s;
    }
    printf("attention rollout over %d layers (heads averaged, + identity, rows renormalised):\n"
           "  rollout row sums: min %.6f max %.6f\n", L, mn, mx);
    double *cls = malloc(sizeof *cls * N), tot = 0, pre = 0;
    rollout_row(R, T, qw, rrow);
    for (int j = 0; j < S; j++) pre += rrow[j];
    for (int k = 0; k < N; k++) { cls[k] = rrow[S + k]; tot += cls[k]; }
    if (!mean_pool) printf("  CLS row: %.3f of the mass on the CLS token itself, %.3f on the patches; top patches:\n", pre, tot);
    else if (S) printf("  %s of the %d patch rows (what the pooled vector draws on): %.3f of the mass on the class token,\n"
                       "  %.3f on the patches; top patches:\n", seq_pool ? "pooling-weighted sum" : "mean", N, pre, tot);
    else printf("  %s of the %d patch rows (what the pooled vector draws on); top patches:\n", seq_pool ? "pooling-weighted sum" : "mean", N);
    int *used = calloc(N, sizeof *used);
    for (int t = 0; t < top && t < N; t++) {
        int b = -1;
        for (int k = 0; k < N; k++) if (!used[k] && (b < 0 || cls[k] > cls[b])) b = k;
        used[b] = 1;
        printf("    %d. patch (%d, %d) = token %d: %.4f (%.1f%% of the patch mass)\n", t + 1, b / g, b % g, b + S, cls[b], 100 * cls[b] / tot);
    }
    free(used);

    int rc = 0;
    if (out) {
        uint8_t *img = ic_image_crop_u8(&im, Sz);
        /* layout: two title lines, column labels, then per layer a row of maps each with its
         * maximum written under it, then the colour bar */
        const int zoom = Sz >= 96 ? 1 : (96 + Sz - 1) / Sz, cw = Sz * zoom, gap = 6, ml = 28, mt = 44, rowh = cw + gap + 10;
        const int cols = 2 + H, W = ml + cols * (cw + gap), Hh = mt + L * rowh + 40;
        vg_canvas *cv = img ? vg_canvas_new(W, Hh, VG_WHITE) : NULL;
        if (!cv) { fprintf(stderr, "inspect attention: out of memory\n"); free(img); rc = IC_FAIL; }
        else {
            char lab[256], num[32];
            snprintf(lab, sizeof lab, "PREDICTED: %s (CLASS %d), P = %.3f", pred_name, pred, prob);
            vg_canvas_text(cv, ml, 4, lab, VG_BLACK, 1);
            vg_canvas_text(cv, ml, 16, seq_pool ? "SEQ POOLING: ATTENTION EACH PATCH RECEIVES, PATCH QUERIES WEIGHTED BY POOLING"
                                     : mean_pool ? "MEAN POOLING: ATTENTION EACH PATCH RECEIVES, MEAN OVER PATCH QUERIES"
                                                 : "CLS POOLING: CLASS TOKEN ATTENTION TO EACH PATCH", VG_BLACK, 1);
            vg_canvas_text(cv, ml, mt - 14, "IMAGE", VG_BLACK, 1);
            for (int h = 0; h < H; h++) { snprintf(lab, sizeof lab, "HEAD %d", h); vg_canvas_text(cv, ml + (1 + h) * (cw + gap), mt - 14, lab, VG_BLACK, 1); }
            vg_canvas_text(cv, ml + (1 + H) * (cw + gap), mt - 14, "ROLLOUT", VG_BLACK, 1);
            for (int l = 0; l < L; l++) {
                int y0 = mt + l * rowh;
                snprintf(lab, sizeof lab, "L%d", l);
                vg_canvas_text(cv, 4, y0 + cw / 2 - 3, lab, VG_BLACK, 1);
                if (l == 0) vg_canvas_image(cv, ml, y0, img, im.c, Sz, Sz, zoom);
                for (int h = 0; h <= H; h++) {
                    if (h < H) head_map(att, l, H, h, T, S, qw, v);
                    else {           /* the rollout up to layer l, the row the head reads */
                        rollout(att, l + 1, H, T, R);
                        rollout_row(R, T, qw, rrow);
                        for (int k = 0; k < N; k++) v[k] = rrow[S + k];
                    }
                    const int x0 = ml + (1 + h) * (cw + gap);
                    heatmap(cv, x0, y0, img, im.c, Sz, zoom, g, P, v);
                    fmt_value(num, sizeof num, map_scale(v, N));
                    snprintf(lab, sizeof lab, "MAX %s", num);
                    vg_canvas_text(cv, x0, y0 + cw + 2, lab, VG_BLACK, 1);
                }
            }
            /* the colour bar: 0 at the left, the map's own maximum (written under each map) at the right */
            const int by = mt + L * rowh + 4, bw = 3 * cw < W - 2 * ml ? 3 * cw : W - 2 * ml;
            for (int bx = 0; bx < bw; bx++) vg_canvas_fill(cv, ml + bx, by, 1, 10, vg_colormap((double)bx / (bw - 1)));
            vg_canvas_rect(cv, ml - 1, by - 1, bw + 2, 12, VG_BLACK);
            vg_canvas_text(cv, ml, by + 14, "0", VG_BLACK, 1);
            vg_canvas_text(cv, ml + bw - vg_text_width("MAX", 1), by + 14, "MAX", VG_BLACK, 1);
            fmt_value(num, sizeof num, 4.0 / N);
            snprintf(lab, sizeof lab, "EACH MAP: 0 TO THE MAX UNDER IT (AT LEAST 4/N = %s)", num);
            vg_canvas_text(cv, ml, by + 26, lab, VG_BLACK, 1);
            char err[IC_ERRLEN];
            if (vg_canvas_write_png(cv, out, err, sizeof err)) { fprintf(stderr, "inspect attention: %s\n", err); rc = IC_FAIL; }
            else printf("wrote %s (%dx%d): rows = layers 0..%d, columns = image, heads 0..%d, rollout up to that layer;\n"
                        "  %s, each map coloured from 0 to the maximum written under it\n", out, W, Hh, L - 1, H - 1,
                        mean_pool ? "mean attention each patch receives" : "the class token's attention");
            vg_canvas_free(cv);
            free(img);
        }
    }
    free(cls); free(att); free(R); free(v); free(rrow); free(qw);
    ic_image_free(&im); ic_model_free(&mm);
    return rc;
}
