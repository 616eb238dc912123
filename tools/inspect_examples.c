/* inspect_examples.c — `./inspect examples`: the worked examples of ViT courses, computed by the
 * library (vg_patchify, vg_matmul, vg_vit_embed_tokens, vg_conv2d_fn, vg_attention_fn,
 * vg_resize_pos_embed) and printed next to the values the courses give. Exit 1 if any differs. */
#include "inspect_common.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

int inspect_examples_main(int argc, char **argv);

static int n_fail;

/* print a (rows, cols) result next to its expected values; exact comparison unless tol > 0 */
static void show(const char *title, const vg_tensor *t, int rows, int cols, const double *want, double tol) {
    printf("%s\n", title);
    if (!t) { printf("  error: %s\n  FAIL\n\n", vg_error()); n_fail++; return; }
    real got[256];
    vg_copy_to_array(t, got);
    bool ok = vg_numel(t) == (int64_t)rows * cols;
    for (int r = 0; r < rows && ok; r++) {
        printf("  [");
        for (int c = 0; c < cols; c++) printf("%s%6g", c ? ", " : "", (double)got[r * cols + c]);
        printf("]   expected [");
        for (int c = 0; c < cols; c++) printf("%s%6g", c ? ", " : "", want[r * cols + c]);
        bool row_ok = true;
        for (int c = 0; c < cols; c++) if (fabs(got[r * cols + c] - want[r * cols + c]) > tol) row_ok = false;
        printf("]  %s\n", row_ok ? "ok" : "DIFFERS");
        if (!row_ok) ok = false;
    }
    if (!ok) n_fail++;
    printf("\n");
}

static void check_int(const char *what, long long got, long long want) {
    bool ok = got == want;
    printf("  %-58s %10lld   expected %10lld  %s\n", what, got, want, ok ? "ok" : "DIFFERS");
    if (!ok) n_fail++;
}

static void usage(FILE *f) {
    fprintf(f, "usage: inspect examples\n"
               "Computes the worked examples ViT courses use with the library itself and prints them\n"
               "next to the expected values: 4x4 image -> 2x2 patches, patch projection, CLS + position\n"
               "embedding, Conv2d = unfold + Linear, token counts, attention sizes, position-table resize.\n"
               "Exit status 1 if any computed value differs from the expected one.\n");
}

int inspect_examples_main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        fprintf(stderr, "inspect examples: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    n_fail = 0;
    vg_no_grad_begin();

    /* 1. the 4×4 image 1..16 cut into 2×2 patches, row-major, each flattened */
    real px[16];
    for (int k = 0; k < 16; k++) px[k] = (real)(k + 1);
    vg_tensor *img = vg_from_array(VG_DIMS(1, 1, 4, 4), px);
    printf("1. image (1, 1, 4, 4) = 1..16 row by row:\n     1  2  3  4\n     5  6  7  8\n     9 10 11 12\n    13 14 15 16\n\n");
    vg_tensor *patches = vg_patchify(img, 2);                               /* (1, 4, 4) */
    const double rows[] = {1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16};
    show("   vg_patchify(image, 2) -> (1, 4, 4): 4 patches, each flattened row by row", patches, 4, 4, rows, 0);

    /* 2. projection of the patches with W (4 → 2) */
    const real W[] = {.25f, 1, .25f, 0, .25f, 0, .25f, -1};
    vg_tensor *w = vg_from_array(VG_DIMS(4, 2), W);
    printf("2. W (4, 2) = [[.25, 1], [.25, 0], [.25, 0], [.25, -1]]: column 0 averages the patch,\n"
           "   column 1 is top-left minus bottom-right\n");
    const double proj1[] = {3.5, -5};
    show("   first patch [1, 2, 5, 6] @ W", vg_matmul(vg_select(vg_select(patches, 0, 0), 0, 0), w), 1, 2, proj1, 0);
    const double proj[] = {3.5, -5, 5.5, -5, 11.5, -5, 13.5, -5};
    show("   all patches @ W -> (1, 4, 2)", vg_matmul(patches, w), 4, 2, proj, 0);

    /* 3. zeros image: tokens are 0, so each row is exactly its position (+ CLS) */
    vg_rng rng = vg_rng_seed(0);
    vg_tensor *tok0 = vg_matmul(vg_patchify(vg_zeros(VG_DIMS(1, 1, 4, 4)), 2), vg_randn(&rng, VG_DIMS(4, 3), 0, 1));
    vg_tensor *cls = vg_from_array(VG_DIMS(1, 1, 3), (const real[]){1, 2, 3});
    vg_tensor *pos = vg_full(VG_DIMS(1, 5, 3), 0.5f);
    const double emb[] = {1.5, 2.5, 3.5, .5, .5, .5, .5, .5, .5, .5, .5, .5, .5, .5, .5};
    show("3. zeros image, D = 3: vg_vit_embed_tokens(tokens = 0, cls = [1, 2, 3], pos = full((5, 3), 0.5))",
         vg_vit_embed_tokens(tok0, cls, pos), 5, 3, emb, 0);

    /* 4. Conv2d(kernel = stride = P) patch embedding = patchify + Linear with the reshaped weight */
    vg_tensor *x = vg_randn(&rng, VG_DIMS(2, 3, 16, 16), 0, 1);
    vg_tensor *cw = vg_randn(&rng, VG_DIMS(8, 3, 4, 4), 0, .1), *cb = vg_randn(&rng, VG_DIMS(8), 0, .1);
    vg_tensor *conv = vg_transpose(vg_flatten(vg_conv2d_fn(x, cw, cb, 4, 0), 2, 3), 1, 2);     /* (2, 16, 8) */
    vg_tensor *lin = vg_linear_fn(vg_patchify(x, 4), vg_reshape(cw, VG_DIMS(8, 48)), cb);     /* (2, 16, 8) */
    printf("4. Conv2d(3, 8, kernel = stride = 4) on (2, 3, 16, 16) vs vg_patchify + Linear(48, 8) with the\n"
           "   conv weight reshaped to (8, 48):\n");
    if (!conv || !lin) { printf("  error: %s\n  FAIL\n", vg_error()); n_fail++; }
    else {
        vg_tensor *cc = vg_contiguous(conv), *lc = vg_contiguous(lin);
        double md = 0;
        for (int64_t k = 0; k < vg_numel(cc); k++) md = fmax(md, fabs(vg_data(cc)[k] - vg_data(lc)[k]));
        bool ok = md <= 1e-5;
        printf("  max |conv - (patchify + Linear)| = %.3g over %lld values (float32 rounding; tolerance 1e-5)  %s\n\n",
               md, (long long)vg_numel(cc), ok ? "ok" : "DIFFERS");
        if (!ok) n_fail++;
    }

    /* 5. token counts */
    printf("5. tokens for a 224x224 image\n");
    vg_vit_config c = vg_vit_config_default();
    c.img_size = 224; c.patch_size = 16; c.in_chans = 3; c.embed_dim = 768; c.depth = 12; c.num_heads = 12; c.num_classes = 1000;
    check_int("patch 16: (224/16)^2 patches", vg_vit_num_patches(&c), 196);
    check_int("patch 16: + CLS = tokens", vg_vit_num_patches(&c) + 1, 197);
    c.patch_size = 14;
    check_int("patch 14: (224/14)^2 patches", vg_vit_num_patches(&c), 256);
    check_int("patch 14: + CLS = tokens", vg_vit_num_patches(&c) + 1, 257);
    printf("\n");

    /* 6. the attention matrix per head: run vg_attention_fn and read attn_out's shape */
    printf("6. attention weights per head, 224 px / patch 16 (vg_attention_fn's attn_out, 2 heads of dim 4)\n");
    for (int with_cls = 1; with_cls >= 0; with_cls--) {
        int T = 196 + with_cls;
        vg_tensor *att = NULL;
        vg_attention_fn(vg_randn(&rng, VG_DIMS(1, T, 24), 0, 1), 2, 0, false, NULL, &att);
        char s[64] = "?";
        if (att) vg_shape_str(att, s, sizeof s);
        printf("  %s: attn_out %s\n", with_cls ? "with CLS   " : "without CLS", s);
        check_int(with_cls ? "  rows x cols per head (197 x 197)" : "  rows x cols per head (196 x 196)",
                  att ? att->shape[2] * att->shape[3] : -1, (long long)T * T);
    }
    printf("\n");

    /* 7. resizing the position table for a larger image: 14x14 → 28x28 (224 → 448 px) */
    printf("7. position table (1, 197, 768) for 14x14 patches resized to 28x28 (vg_resize_pos_embed, bicubic)\n");
    vg_tensor *p = vg_randn(&rng, VG_DIMS(1, 197, 768), 0, .02);
    vg_tensor *q = vg_resize_pos_embed(p, 14, 14, 28, 28, VG_INTERP_BICUBIC);
    char s[64] = "?";
    if (q) vg_shape_str(q, s, sizeof s);
    printf("  result %s\n", s);
    check_int("rows: 1 + 28*28", q ? q->shape[1] : -1, 785);
    check_int("dim", q ? q->shape[2] : -1, 768);
    check_int("CLS row kept unchanged (1 = yes)", q ? !memcmp(vg_data(p), vg_data(q), 768 * sizeof(real)) : -1, 1);
    printf("\n");

    vg_no_grad_end();
    vg_arena_reset();
    if (n_fail) { printf("%d example(s) DIFFER from the expected values\n", n_fail); return IC_FAIL; }
    printf("all examples match the expected values\n");
    return 0;
}
