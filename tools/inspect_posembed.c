/* inspect_posembed.c — `./inspect posembed`: how similar is one patch's position embedding to
 * every other patch's? Cosine similarity of pos_embed rows (CLS row excluded), printed as a window
 * around the chosen patch, and as a PNG with one small similarity map per patch — the ViT
 * paper's Figure 7. The table comes from a checkpoint, a fresh preset, MAE's 2-D sin-cos table or
 * a random normal(0, .02) table. */
#include "inspect_common.h"
#include "report.h"
#include "png_write.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int inspect_posembed_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect posembed (--ckpt FILE | --model PRESET [--seed N] | --sincos | --random [--seed N])\n"
               "                        [--grid G] [--dim D] [--patch ROW,COL] [--window W] [--out SIM.png]\n"
               "  --ckpt:   model.safetensors (or run dir) written by ./train: its learned pos_embed\n"
               "  --model:  a freshly initialised preset (trunc-normal .02: what training starts from)\n"
               "  --sincos: MAE's fixed 2-D sin-cos table; --random: normal(0, .02) entries\n"
               "  --grid G, --dim D: table size for --sincos/--random (default 14x14, D = 768: ViT-B/16)\n"
               "  --patch:  the patch to compare with all others (default the centre, G/2,G/2)\n"
               "  --window: odd size of the printed window around it (default 5)\n"
               "  --out:    PNG: one G x G similarity map per patch, colour -1 .. 1\n");
}

/* the (N, N) cosine similarities of the table's patch rows (rm_posembed_similarity, shared with ./inspect report) */
static double cosine(const float *sim, int N, int a, int b) { return sim[(size_t)a * N + b]; }

int inspect_posembed_main(int argc, char **argv) {
    ic_source_opts o = {0};
    int sincos = 0, random_ = 0, G = 14, D = 768, pr = -1, pc = -1, win = 5;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--sincos")) { sincos = 1; continue; }
        if (!strcmp(argv[i], "--random")) { random_ = 1; continue; }
        if ((r = ic_source_arg("posembed", argc, argv, &i, &o))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("posembed", argc, argv, &i, "--grid", &v))) { if (r < 0 || !ic_int("posembed", "--grid", v, 1, 256, &G)) return IC_USAGE; continue; }
        if ((r = ic_take("posembed", argc, argv, &i, "--dim", &v))) { if (r < 0 || !ic_int("posembed", "--dim", v, 4, 8192, &D)) return IC_USAGE; continue; }
        if ((r = ic_take("posembed", argc, argv, &i, "--window", &v))) { if (r < 0 || !ic_int("posembed", "--window", v, 1, 99, &win)) return IC_USAGE; continue; }
        if ((r = ic_take("posembed", argc, argv, &i, "--patch", &v))) { if (r < 0 || !ic_int_pair("posembed", "--patch", v, &pr, &pc)) return IC_USAGE; continue; }
        if ((r = ic_take("posembed", argc, argv, &i, "--out", &out))) { if (r < 0) return IC_USAGE; continue; }
        fprintf(stderr, "inspect posembed: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    if (!!o.ckpt + !!o.preset + sincos + random_ != 1) {
        fprintf(stderr, "inspect posembed: give exactly one of --ckpt FILE, --model PRESET, --sincos, --random\n"); usage(stderr); return IC_USAGE;
    }
    if (o.image || o.dataset) { fprintf(stderr, "inspect posembed: --image/--dataset are not used here\n"); return IC_USAGE; }
    if (sincos && D % 4) { fprintf(stderr, "inspect posembed: --dim must be a multiple of 4 for --sincos\n"); return IC_USAGE; }

    /* the table as (N, D) doubles, CLS row dropped */
    int gh = G, gw = G;
    char what[4400];
    float *t = NULL;
    ic_model m;
    bool have_model = false;
    vg_tensor *pos = NULL;
    int pre = 1;                                        /* rows in front of the grid: CLS (+ registers) */
    if (o.ckpt || o.preset) {
        if (ic_source_model("posembed", &o, &m)) return o.preset ? IC_USAGE : IC_FAIL;
        have_model = true;
        gh = m.m.grid_h; gw = m.m.grid_w; D = m.m.cfg.embed_dim; pos = m.m.pos_embed; pre = vg_vit_pos_prefix_rows(&m.m.cfg);
        snprintf(what, sizeof what, "%s pos_embed of %s", m.m.cfg.pos_embed == VG_VIT_POS_SINCOS2D ? "fixed sin-cos" : "learned", m.source);
    } else if (sincos) {
        pos = vg_sincos_2d_pos_embed(D, gh, gw, true);
        snprintf(what, sizeof what, "2-D sin-cos table (MAE), %dx%d patches, D = %d", gh, gw, D);
    } else {
        vg_rng rng = vg_rng_seed((uint64_t)o.seed);
        pos = vg_randn(&rng, VG_DIMS(1, 1 + gh * gw, D), 0, .02);
        snprintf(what, sizeof what, "random normal(0, .02) table (seed %d), %dx%d patches, D = %d", o.seed, gh, gw, D);
    }
    const int N = gh * gw;
    if (!pos || pos->ndim != 3 || pos->shape[1] != pre + N || pos->shape[2] != D) {
        fprintf(stderr, "inspect posembed: no usable position table (expected (1, %d, %d))%s%s\n", pre + N, D, vg_error()[0] ? ": " : "", vg_error());
        if (have_model) ic_model_free(&m);
        return IC_FAIL;
    }
    t = malloc(sizeof *t * N * N);
    if (!t) { fprintf(stderr, "inspect posembed: out of memory\n"); if (have_model) ic_model_free(&m); return IC_FAIL; }
    rm_posembed_similarity(pos, pre, N, t);
    if (have_model) ic_model_free(&m);
    vg_arena_reset();

    if (pr < 0) { pr = gh / 2; pc = gw / 2; }
    if (pr >= gh || pc >= gw) { fprintf(stderr, "inspect posembed: --patch %d,%d is outside the %dx%d grid\n", pr, pc, gh, gw); free(t); return IC_USAGE; }
    const int me = pr * gw + pc, hw = win / 2;
    printf("%s\ncosine similarity of patch (%d, %d) [token %d] to its neighbours (rows down, columns across):\n", what, pr, pc, me + 1);
    printf("       ");
    for (int j = pc - hw; j <= pc + hw; j++) if (j >= 0 && j < gw) printf(" %5d", j);
    printf("\n");
    for (int i = pr - hw; i <= pr + hw; i++) {
        if (i < 0 || i >= gh) continue;
        printf("  %4d ", i);
        for (int j = pc - hw; j <= pc + hw; j++) if (j >= 0 && j < gw) { double c = cosine(t, N, me, i * gw + j); printf(" %5.2f", fabs(c) < .005 ? 0.0 : c); }
        printf("\n");
    }
    /* summary: by distance from the chosen patch */
    double s1 = 0, sall = 0; int n1 = 0, nall = 0;
    for (int i = 0; i < gh; i++)
        for (int j = 0; j < gw; j++) {
            int d = abs(i - pr) + abs(j - pc);
            if (!d) continue;
            double c = cosine(t, N, me, i * gw + j);
            if (d == 1) { s1 += c; n1++; }
            sall += c; nall++;
        }
    printf("mean similarity to the %d adjacent patches %.3f, to all %d other patches %.3f\n", n1, n1 ? s1 / n1 : 0, nall, nall ? sall / nall : 0);

    int rc = 0;
    if (out) {
        const int cs = gh * gw <= 64 ? 6 : gh <= 14 ? 3 : 2, map_w = gw * cs, map_h = gh * cs, gap = 3;
        const int ml = 24, mt = 30, bar = 40;
        const int W = ml + gw * (map_w + gap) + bar + 30, H = mt + gh * (map_h + gap) + 24;
        vg_canvas *cv = vg_canvas_new(W, H, VG_WHITE);
        if (!cv) { fprintf(stderr, "inspect posembed: picture too large\n"); free(t); return IC_FAIL; }
        vg_canvas_text(cv, ml, 4, "POSITION EMBEDDING SIMILARITY (COSINE)", VG_BLACK, 1);
        vg_canvas_text(cv, ml, H - 12, "MAP AT ROW I, COLUMN J: PATCH (I, J) VS ALL", VG_BLACK, 1);
        for (int i = 0; i < gh; i++) {
            char lab[16]; snprintf(lab, sizeof lab, "%d", i);
            vg_canvas_text(cv, 2, mt + i * (map_h + gap) + map_h / 2 - 3, lab, VG_BLACK, 1);
            for (int j = 0; j < gw; j++) {
                int x0 = ml + j * (map_w + gap), y0 = mt + i * (map_h + gap);
                for (int a = 0; a < gh; a++)
                    for (int b = 0; b < gw; b++)
                        vg_canvas_fill(cv, x0 + b * cs, y0 + a * cs, cs, cs, vg_colormap((cosine(t, N, i * gw + j, a * gw + b) + 1) / 2));
                if (i == pr && j == pc) vg_canvas_rect(cv, x0 - 1, y0 - 1, map_w + 2, map_h + 2, (vg_rgb){255, 0, 0});
            }
        }
        for (int j = 0; j < gw; j += gw > 10 ? 2 : 1) {
            char lab[16]; snprintf(lab, sizeof lab, "%d", j);
            vg_canvas_text(cv, ml + j * (map_w + gap) + map_w / 2 - 3, mt - 11, lab, VG_BLACK, 1);
        }
        const int bx = W - bar - 10 + 8, by = mt, bh = gh * (map_h + gap) - gap;     /* colour bar */
        for (int y = 0; y < bh; y++) vg_canvas_fill(cv, bx, by + y, 10, 1, vg_colormap(1.0 - (double)y / (bh - 1)));
        vg_canvas_text(cv, bx + 13, by, "1", VG_BLACK, 1);
        vg_canvas_text(cv, bx + 13, by + bh / 2 - 3, "0", VG_BLACK, 1);
        vg_canvas_text(cv, bx + 13, by + bh - 7, "-1", VG_BLACK, 1);
        char err[IC_ERRLEN];
        if (vg_canvas_write_png(cv, out, err, sizeof err)) { fprintf(stderr, "inspect posembed: %s\n", err); rc = IC_FAIL; }
        else printf("wrote %s (%dx%d): row i, column j = similarity of patch (i, j) to every patch\n", out, W, H);
        vg_canvas_free(cv);
    }
    free(t);
    return rc;
}
