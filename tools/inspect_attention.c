/* inspect_attention.c — `./inspect attention`: where does the CLS token look?
 * For one image: per layer and head the CLS row of the attention weights (vg_vit_block_forward's
 * attn_out, softmax output) restricted to the patches, and attention rollout (Abnar & Zuidema
 * 2020): per layer average the heads, add the identity for the residual path, renormalise the
 * rows, and multiply the layers, R = Â_L · … · Â_1 — each row of R sums to 1. The CLS row of R
 * (patch part) says how much each patch flows into the CLS token at the top.
 * The PNG overlays each map on the image: rows = layers, columns = image, heads, rollout up to
 * that layer. Colour scale per map: 0 → max(map maximum, 4/N), so a near-uniform map stays dark. */
#include "inspect_common.h"
#include "report.h"
#include "png_write.h"
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
               "           layer; each map is scaled to its own maximum, but at least to 4x uniform\n"
               "           attention (4/N), so a near-uniform map stays dark\n"
               "  --top:   patches of the rollout to list (default 5)\n"
               "Prints per layer and head the patch the CLS token attends to most, the rollout's row-sum\n"
               "check and its top patches.\n");
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

/* the image in gray with the N patch values (scaled to their max) blended over it */
static void heatmap(vg_canvas *cv, int x0, int y0, const uint8_t *img, int C, int S, int zoom,
                    int g, int P, const double *v) {
    double mx = 4.0 / (g * g);          /* own maximum, but at least 4× uniform: flat maps stay dark */
    for (int k = 0; k < g * g; k++) if (v[k] > mx) mx = v[k];
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
    if (!m->cls_token || m->reg_token || m->cfg.no_embed_class || !m->norm.weight || !m->head.weight) {
        /* the maps below read the class token's row, patches from token 1, the final norm and head */
        fprintf(stderr, "inspect attention: %s is a timm layout this view does not show (it needs a class token, no "
                "register tokens, a pos_embed row per token, the final norm before pooling and a head)\n", mm.source);
        ic_model_free(&mm);
        return IC_FAIL;
    }
    ic_image im;
    if (ic_source_image("attention", &o, &mm, &im)) { ic_model_free(&mm); return IC_FAIL; }
    const int S = m->cfg.img_size, P = m->cfg.patch_size, g = m->grid_h, N = g * g, T = N + 1;
    const int L = m->cfg.depth, H = m->cfg.num_heads;

    float *att = malloc(sizeof *att * (size_t)L * H * T * T), *logits = malloc(sizeof *logits * m->cfg.num_classes);
    double *R = malloc(sizeof *R * T * T);
    /* the blocks one at a time, keeping each one's attention (L, H, T, T): shared with ./inspect report */
    if (!att || !R || !logits || rm_forward(m, ic_image_input(&im, m->cfg.in_chans, S), att, NULL, NULL, logits, NULL)) {
        fprintf(stderr, "inspect attention: forward failed: %s\n", vg_error());
        free(att); free(R); free(logits); ic_image_free(&im); ic_model_free(&mm); return IC_FAIL;
    }
    int pred = 0;
    for (int c = 1; c < m->cfg.num_classes; c++) if (logits[c] > logits[pred]) pred = c;
    free(logits);
    vg_arena_reset();

    printf("model: %s\nimage: %s, %dx%d px -> %dx%d patches of %d px, %d tokens\n", mm.source, im.what, S, S, g, g, P, T);
    if (im.label >= 0) printf("prediction: class %d (%s; label %d %s)\n", pred, pred == im.label ? "correct" : "wrong", im.label, im.label_name);
    else printf("prediction: class %d\n", pred);
    printf("CLS -> patches attention, per layer and head: the most attended patch (row, col), its weight,\n"
           "and the CLS token's attention to itself\n");
    for (int l = 0; l < L; l++) {
        printf("  layer %d:", l);
        for (int h = 0; h < H; h++) {
            const float *row = att + (((size_t)l * H + h) * T) * T;   /* query 0 = CLS */
            int best = 1;
            for (int j = 2; j < T; j++) if (row[j] > row[best]) best = j;
            printf("  h%d (%d,%d) %.3f self %.2f", h, (best - 1) / g, (best - 1) % g, row[best], row[0]);
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
    double *cls = malloc(sizeof *cls * N), tot = 0;
    for (int k = 0; k < N; k++) { cls[k] = R[k + 1]; tot += cls[k]; }
    printf("  CLS row: %.3f of the mass on the CLS token itself, %.3f on the patches; top patches:\n", R[0], tot);
    int *used = calloc(N, sizeof *used);
    for (int t = 0; t < top && t < N; t++) {
        int b = -1;
        for (int k = 0; k < N; k++) if (!used[k] && (b < 0 || cls[k] > cls[b])) b = k;
        used[b] = 1;
        printf("    %d. patch (%d, %d) = token %d: %.4f (%.1f%% of the patch mass)\n", t + 1, b / g, b % g, b + 1, cls[b], 100 * cls[b] / tot);
    }
    free(used);

    int rc = 0;
    if (out) {
        uint8_t *img = ic_image_crop_u8(&im, S);
        const int zoom = S >= 96 ? 1 : (96 + S - 1) / S, cw = S * zoom, gap = 6, ml = 28, mt = 20;
        const int cols = 2 + H, W = ml + cols * (cw + gap), Hh = mt + L * (cw + gap) + 4;
        vg_canvas *cv = img ? vg_canvas_new(W, Hh, VG_WHITE) : NULL;
        if (!cv) { fprintf(stderr, "inspect attention: out of memory\n"); free(img); rc = IC_FAIL; }
        else {
            char lab[32];
            vg_canvas_text(cv, ml, 6, "IMAGE", VG_BLACK, 1);
            for (int h = 0; h < H; h++) { snprintf(lab, sizeof lab, "HEAD %d", h); vg_canvas_text(cv, ml + (1 + h) * (cw + gap), 6, lab, VG_BLACK, 1); }
            vg_canvas_text(cv, ml + (1 + H) * (cw + gap), 6, "ROLLOUT", VG_BLACK, 1);
            double *v = malloc(sizeof *v * N);
            for (int l = 0; l < L; l++) {
                int y0 = mt + l * (cw + gap);
                snprintf(lab, sizeof lab, "L%d", l);
                vg_canvas_text(cv, 4, y0 + cw / 2 - 3, lab, VG_BLACK, 1);
                if (l == 0) vg_canvas_image(cv, ml, y0, img, im.c, S, S, zoom);
                for (int h = 0; h < H; h++) {
                    const float *row = att + (((size_t)l * H + h) * T) * T;
                    for (int k = 0; k < N; k++) v[k] = row[k + 1];
                    heatmap(cv, ml + (1 + h) * (cw + gap), y0, img, im.c, S, zoom, g, P, v);
                }
            }
            /* the rollout over all layers, in the last row; the rollout up to layer l in row l */
            for (int l = 0; l < L; l++) {
                rollout(att, l + 1, H, T, R);
                for (int k = 0; k < N; k++) v[k] = R[k + 1];
                heatmap(cv, ml + (1 + H) * (cw + gap), mt + l * (cw + gap), img, im.c, S, zoom, g, P, v);
            }
            free(v);
            char err[IC_ERRLEN];
            if (vg_canvas_write_png(cv, out, err, sizeof err)) { fprintf(stderr, "inspect attention: %s\n", err); rc = IC_FAIL; }
            else printf("wrote %s (%dx%d): rows = layers 0..%d, columns = image, heads 0..%d, rollout up to that layer\n", out, W, Hh, L - 1, H - 1);
            vg_canvas_free(cv);
            free(img);
        }
    }
    free(cls); free(att); free(R);
    ic_image_free(&im); ic_model_free(&mm);
    return rc;
}
