/* inspect_data.c — `./inspect data --dataset cifar10|imagefolder|fashion-mnist|mnist --data DIR`:
 * images per split and per class, image size, per-channel mean/std, skipped files and why.
 * The ./inspect dispatcher calls inspect_data_main with argv[0] = "data" (a "data" in argv[1]
 * is skipped too). Returns 0, 1 when the data cannot be read, 2 for bad arguments. */
#include "base/clock.h"
#include "data/data.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int inspect_data_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f,
        "usage: inspect data --dataset KIND [--data DIR] [--quiet]\n"
        "  KIND: cifar10 | imagefolder | fashion-mnist | mnist\n"
        "  DIR:  cifar10: folder with data_batch_1..5.bin, test_batch.bin\n"
        "        imagefolder: ROOT with train/<class>/ and val/<class>/\n"
        "        fashion-mnist, mnist: folder with train-images-idx3-ubyte[.gz] etc.\n"
        "        default: $CIFAR10_DIR, $IMAGENET_SUBSET_DIR or $FASHION_MNIST_DIR\n"
        "  --quiet: do not list every skipped file\n"
        "Prints images per split and class, image size, per-channel mean/std of pixel/255\n"
        "(population std over all pixels), and for image folders the skipped files.\n");
}


static void size_str(const vg_dataset *d, char *s, size_t n) {
    if (d->height) { snprintf(s, n, "%dx%d", d->height, d->width); return; }
    int h0 = d->heights[0], h1 = h0, w0 = d->widths[0], w1 = w0;
    for (int i = 1; i < d->n; i++) {
        if (d->heights[i] < h0) h0 = d->heights[i];
        if (d->heights[i] > h1) h1 = d->heights[i];
        if (d->widths[i] < w0) w0 = d->widths[i];
        if (d->widths[i] > w1) w1 = d->widths[i];
    }
    snprintf(s, n, "varies: h %d..%d, w %d..%d", h0, h1, w0, w1);
}

int inspect_data_main(int argc, char **argv) {
    const char *kind = NULL, *dir = NULL;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (i == 1 && !strcmp(argv[i], "data")) continue;   /* called with the whole ./inspect argv */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        else if (!strcmp(argv[i], "--dataset") && i + 1 < argc) kind = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else { fprintf(stderr, "inspect data: unknown or incomplete argument '%s'\n", argv[i]); usage(stderr); return 2; }
    }
    if (!kind) { fprintf(stderr, "inspect data: --dataset is required\n"); usage(stderr); return 2; }
    const char *env = !strcmp(kind, "cifar10") ? "CIFAR10_DIR" : !strcmp(kind, "imagefolder") ? "IMAGENET_SUBSET_DIR"
                    : !strcmp(kind, "fashion-mnist") || !strcmp(kind, "mnist") ? "FASHION_MNIST_DIR" : NULL;
    if (!env) { fprintf(stderr, "inspect data: unknown dataset '%s'\n", kind); usage(stderr); return 2; }
    if (!dir) dir = getenv(env);
    if (!dir || !*dir) { fprintf(stderr, "inspect data: --data DIR is required (or set %s)\n", env); return 2; }

    vg_dataset *ds[2] = {NULL, NULL};
    const char *split_name[2] = {"train", !strcmp(kind, "imagefolder") ? "val" : "test"};
    double secs[2];
    char err[VG_DATA_ERRLEN];
    for (int s = 0; s < 2; s++) {
        double t0 = vg_now_s();
        ds[s] = vg_dataset_open(kind, dir, s == 0 ? VG_SPLIT_TRAIN : VG_SPLIT_TEST, err, sizeof err);
        secs[s] = vg_now_s() - t0;
        if (!ds[s]) { fprintf(stderr, "inspect data: %s split: %s\n", split_name[s], err); vg_dataset_free(ds[0]); return 1; }
    }
    const vg_dataset *tr = ds[0];
    printf("dataset %s at %s: %d classes, %d channel%s\n", kind, dir, tr->n_classes, tr->channels, tr->channels > 1 ? "s" : "");
    printf("%-6s %8s  %-28s %8s  %-26s %-26s\n", "split", "images", "size", "load s", "mean (R G B, 0..1)", "std");
    for (int s = 0; s < 2; s++) {
        char sz[64]; double m[3], sd[3];
        size_str(ds[s], sz, sizeof sz);
        vg_dataset_channel_stats(ds[s], m, sd);
        if (ds[s]->channels == 1) printf("%-6s %8d  %-28s %8.2f  %-26.6f %-26.6f\n", split_name[s], ds[s]->n, sz, secs[s], m[0], sd[0]);
        else printf("%-6s %8d  %-28s %8.2f  %.6f %.6f %.6f   %.6f %.6f %.6f\n", split_name[s], ds[s]->n, sz, secs[s],
                    m[0], m[1], m[2], sd[0], sd[1], sd[2]);
    }
    if (tr->channels == 1) printf("loader normalization constants: mean %.6f std %.6f\n", tr->mean[0], tr->std[0]);
    else printf("loader normalization constants: mean %.6f %.6f %.6f  std %.6f %.6f %.6f\n",
                tr->mean[0], tr->mean[1], tr->mean[2], tr->std[0], tr->std[1], tr->std[2]);

    int *c0 = calloc((size_t)tr->n_classes, sizeof(int)), *c1 = calloc((size_t)tr->n_classes, sizeof(int));
    if (c0 && c1) {
        vg_dataset_class_counts(ds[0], c0); vg_dataset_class_counts(ds[1], c1);
        printf("%5s  %-32s %8s %8s\n", "class", "name", split_name[0], split_name[1]);
        for (int c = 0; c < tr->n_classes; c++) {
            char name[128];
            if (tr->class_descr && tr->class_descr[c][0]) snprintf(name, sizeof name, "%s (%s)", tr->class_names[c], tr->class_descr[c]);
            else snprintf(name, sizeof name, "%s", tr->class_names[c]);
            printf("%5d  %-32s %8d %8d\n", c, name, c0[c], c1[c]);
        }
    }
    free(c0); free(c1);
    for (int s = 0; s < 2; s++) {
        if (!ds[s]->src_channels) continue;
        int gray = 0, alpha = 0;
        for (int i = 0; i < ds[s]->n; i++) { gray += ds[s]->src_channels[i] <= 2; alpha += ds[s]->src_channels[i] == 2 || ds[s]->src_channels[i] == 4; }
        printf("%s: %d grayscale file%s expanded to RGB, %d with alpha (dropped); %d file%s skipped\n", split_name[s], gray,
               gray == 1 ? "" : "s", alpha, ds[s]->n_skipped, ds[s]->n_skipped == 1 ? "" : "s");
        int show = quiet ? 0 : ds[s]->n_skipped < 50 ? ds[s]->n_skipped : 50;
        for (int i = 0; i < show; i++) printf("  skipped %s\n", ds[s]->skipped[i]);
        if (show < ds[s]->n_skipped) printf("  ... %d more\n", ds[s]->n_skipped - show);
    }
    vg_dataset_free(ds[0]); vg_dataset_free(ds[1]);
    return 0;
}
