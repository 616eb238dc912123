/* inspect_patches.c — `./inspect patches`: an image with its patch grid drawn and numbered, and
 * next to it the same patches laid out as the token sequence the transformer reads (CLS first,
 * then patch (i, j) as token 1 + i·(S/P) + j), as a PNG. */
#include "inspect_common.h"
#include "png_write.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int inspect_patches_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect patches (--image FILE | --dataset KIND [--data DIR] --index N [--split train|test])\n"
               "                       --patch P [--size S] --out OUT.png\n"
               "  --image: a JPEG or PNG file;  KIND: cifar10 | imagefolder | fashion-mnist | mnist\n"
               "  --patch: patch size in pixels\n"
               "  --size:  resize the shorter side to S and centre-crop S x S (default: the image's\n"
               "           shorter side, at most 224), rounded down to a multiple of P\n"
               "Writes the image with its patch grid (patch numbers = token indices) and the token\n"
               "sequence: CLS (token 0) then the patches row by row, 16 tokens per line.\n");
}

int inspect_patches_main(int argc, char **argv) {
    ic_source_opts o = {0};
    o.split = VG_SPLIT_TEST;
    int P = 0, S = 0;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if ((r = ic_source_arg("patches", argc, argv, &i, &o))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("patches", argc, argv, &i, "--patch", &v))) { if (r < 0 || !ic_int("patches", "--patch", v, 1, 4096, &P)) return IC_USAGE; continue; }
        if ((r = ic_take("patches", argc, argv, &i, "--size", &v))) { if (r < 0 || !ic_int("patches", "--size", v, 1, 4096, &S)) return IC_USAGE; continue; }
        if ((r = ic_take("patches", argc, argv, &i, "--out", &out))) { if (r < 0) return IC_USAGE; continue; }
        fprintf(stderr, "inspect patches: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    if (!o.image == !o.dataset) { fprintf(stderr, "inspect patches: give exactly one of --image FILE or --dataset KIND\n"); usage(stderr); return IC_USAGE; }
    if (!P || !out) { fprintf(stderr, "inspect patches: --patch and --out are required\n"); usage(stderr); return IC_USAGE; }
    if (o.ckpt || o.preset) { fprintf(stderr, "inspect patches: --ckpt/--model are not used here\n"); return IC_USAGE; }

    ic_image im;
    if (ic_source_image("patches", &o, NULL, &im)) return IC_FAIL;
    if (!S) { S = im.h < im.w ? im.h : im.w; if (S > 224) S = 224; }
    S -= S % P;
    if (S < P) { fprintf(stderr, "inspect patches: image size %d is smaller than the patch %d\n", S + S % P, P); ic_image_free(&im); return IC_USAGE; }
    uint8_t *crop = ic_image_crop_u8(&im, S);
    if (!crop) { fprintf(stderr, "inspect patches: out of memory\n"); ic_image_free(&im); return IC_FAIL; }
    const int g = S / P, N = g * g;

    /* left: the image zoomed to ≥ 256 px with the grid; right: tokens in order, cols per line */
    const int zoom = S >= 256 ? 1 : (256 + S - 1) / S;
    const int tz = P >= 24 ? 1 : (24 + P - 1) / P, tile = P * tz;         /* token tiles ≥ 24 px */
    const int cols = 16, lines = (N + 1 + cols - 1) / cols;
    const int gap = 4, lab = 10, margin = 12, top = 24;
    const int left_w = S * zoom, seq_w = cols * (tile + gap);
    const int W = margin + left_w + 2 * margin + seq_w + margin;
    const int seq_h = lines * (tile + lab + gap);
    const int H = top + (left_w > seq_h ? left_w : seq_h) + margin;
    vg_canvas *cv = vg_canvas_new(W, H, VG_WHITE);
    if (!cv) { fprintf(stderr, "inspect patches: picture too large (%dx%d)\n", W, H); free(crop); ic_image_free(&im); return IC_FAIL; }
    char t[160];
    snprintf(t, sizeof t, "%dX%d PX, PATCH %d: %dX%d = %d PATCHES", S, S, P, g, g, N);
    vg_canvas_text(cv, margin, 8, t, VG_BLACK, 1);
    snprintf(t, sizeof t, "TOKEN SEQUENCE: CLS + %d = %d TOKENS", N, N + 1);
    vg_canvas_text(cv, margin + left_w + 2 * margin, 8, t, VG_BLACK, 1);

    const int x0 = margin, y0 = top;
    vg_canvas_image(cv, x0, y0, crop, im.c, S, S, zoom);
    const vg_rgb grid = {255, 220, 0};
    for (int k = 0; k <= g; k++) {
        int p = k * P * zoom - (k == g);
        vg_canvas_fill(cv, x0 + p, y0, 1, S * zoom, grid);
        vg_canvas_fill(cv, x0, y0 + p, S * zoom, 1, grid);
    }
    const int cell = P * zoom;
    for (int i = 0; i < g; i++)                                 /* token numbers where they fit */
        for (int j = 0; j < g; j++) {
            snprintf(t, sizeof t, "%d", 1 + i * g + j);
            if (vg_text_width(t, 1) + 3 > cell || cell < 11) continue;
            vg_canvas_fill(cv, x0 + j * cell + 1, y0 + i * cell + 1, vg_text_width(t, 1) + 2, 9, VG_BLACK);
            vg_canvas_text(cv, x0 + j * cell + 2, y0 + i * cell + 2, t, VG_WHITE, 1);
        }

    const int sx = margin + left_w + 2 * margin;
    for (int k = 0; k <= N; k++) {                              /* token k: 0 = CLS, else patch k − 1 */
        int tx = sx + (k % cols) * (tile + gap), ty = top + (k / cols) * (tile + lab + gap);
        snprintf(t, sizeof t, k ? "%d" : "CLS", k);
        vg_canvas_text(cv, tx, ty, t, k ? VG_BLACK : (vg_rgb){200, 0, 0}, 1);
        if (!k) { vg_canvas_fill(cv, tx, ty + lab, tile, tile, (vg_rgb){230, 200, 200}); vg_canvas_rect(cv, tx, ty + lab, tile, tile, (vg_rgb){200, 0, 0}); continue; }
        int pi = (k - 1) / g, pj = (k - 1) % g;
        for (int y = 0; y < P; y++)
            for (int x = 0; x < P; x++) {
                size_t o2 = (size_t)(pi * P + y) * S + (pj * P + x), hw = (size_t)S * S;
                vg_rgb c = im.c >= 3 ? (vg_rgb){crop[o2], crop[hw + o2], crop[2 * hw + o2]} : (vg_rgb){crop[o2], crop[o2], crop[o2]};
                vg_canvas_fill(cv, tx + x * tz, ty + lab + y * tz, tz, tz, c);
            }
    }
    char err[IC_ERRLEN];
    int rc = vg_canvas_write_png(cv, out, err, sizeof err);
    if (rc) fprintf(stderr, "inspect patches: %s\n", err);
    else printf("%s: %dx%d px, patch %d -> %dx%d grid = %d patches, %d tokens with CLS; patch vector length %d (C*P*P)\n"
                "wrote %s (%dx%d)\n", im.what, S, S, P, g, g, N, N + 1, im.c * P * P, out, W, H);
    vg_canvas_free(cv); free(crop); ic_image_free(&im);
    return rc ? IC_FAIL : 0;
}
