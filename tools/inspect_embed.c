/* inspect_embed.c — `./inspect embed`: how good are the image embeddings by themselves?
 * Every image of the train split (the memory bank) and of the test split goes through the model in
 * eval mode (eval transform, no_grad, batches) to vg_vit_embed: the pooled features after the final
 * norm, L2-normalised. Each test image is classified by its k nearest train embeddings under cosine
 * similarity with DINO's weighted vote (Caron et al. 2021, eval_knn.py): class score
 * Σ_neighbours exp(sim / 0.07). Also printed: 1-NN accuracy. */
#include "base/clock.h"
#include "inspect_common.h"
#include "gemm/gemm.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int inspect_embed_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect embed (--ckpt FILE | --model PRESET [--seed N]) --dataset KIND [--data DIR]\n"
               "                     [--k K] [--limit-train N] [--limit-test N] [--batch B]\n"
               "  KIND: cifar10 | fashion-mnist | mnist | imagefolder (its val/ split is the test split)\n"
               "  --k: neighbours (default 20); --limit-*: use only the first N images of a split\n"
               "  --batch: images per forward (default 256)\n"
               "k-NN accuracy of L2-normalised embeddings (vg_vit_embed), train split as memory bank,\n"
               "cosine similarity, DINO's vote: score(class) = sum over the k neighbours of that class of\n"
               "exp(sim / 0.07). Also prints 1-NN accuracy.\n");
}


/* embeddings of the first n images of d → out (n, D) */
static int embed_split(vg_vit *m, const vg_dataset *d, int n, int batch, real *out) {
    const int C = m->cfg.in_chans, S = m->cfg.img_size, D = m->cfg.embed_dim;
    real *x = malloc(sizeof *x * (size_t)batch * C * S * S);
    if (!x) { vg_set_error("out of memory"); return -1; }
    vg_no_grad_begin();
    int rc = 0;
    for (int b0 = 0; b0 < n && !rc; b0 += batch) {
        int B = n - b0 < batch ? n - b0 : batch;
        for (int i = 0; i < B; i++) {
            int h, w;
            const uint8_t *p = vg_dataset_image(d, b0 + i, &h, &w);
            vg_resize_center_crop(p, C, h, w, S, x + (size_t)i * C * S * S, d->mean, d->std);
        }
        vg_tensor *e = vg_vit_embed(m, vg_from_array(VG_DIMS(B, C, S, S), x));
        if (!e) rc = -1;
        else vg_copy_to_array(e, out + (size_t)b0 * D);
        vg_arena_reset();
    }
    vg_no_grad_end();
    free(x);
    return rc;
}

int inspect_embed_main(int argc, char **argv) {
    ic_source_opts o = {0};
    int k = 20, lim_train = INT_MAX, lim_test = INT_MAX, batch = 256;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if ((r = ic_source_arg("embed", argc, argv, &i, &o))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("embed", argc, argv, &i, "--k", &v))) { if (r < 0 || !ic_int("embed", "--k", v, 1, 1000, &k)) return IC_USAGE; continue; }
        if ((r = ic_take("embed", argc, argv, &i, "--limit-train", &v))) { if (r < 0 || !ic_int("embed", "--limit-train", v, 1, INT_MAX, &lim_train)) return IC_USAGE; continue; }
        if ((r = ic_take("embed", argc, argv, &i, "--limit-test", &v))) { if (r < 0 || !ic_int("embed", "--limit-test", v, 1, INT_MAX, &lim_test)) return IC_USAGE; continue; }
        if ((r = ic_take("embed", argc, argv, &i, "--batch", &v))) { if (r < 0 || !ic_int("embed", "--batch", v, 1, 4096, &batch)) return IC_USAGE; continue; }
        fprintf(stderr, "inspect embed: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    if (!o.ckpt == !o.preset) { fprintf(stderr, "inspect embed: give exactly one of --ckpt FILE or --model PRESET\n"); usage(stderr); return IC_USAGE; }
    if (!o.dataset) { fprintf(stderr, "inspect embed: --dataset KIND is required\n"); usage(stderr); return IC_USAGE; }
    if (o.image) { fprintf(stderr, "inspect embed: --image is not used here\n"); return IC_USAGE; }

    ic_model mm;
    if (ic_source_model("embed", &o, &mm)) return o.preset ? IC_USAGE : IC_FAIL;
    vg_vit *m = &mm.m;
    char err[IC_ERRLEN];
    const char *dir = o.data;
    ic_image probe;                                   /* resolves the default folder and checks it */
    if (ic_image_load(NULL, o.dataset, dir, 0, VG_SPLIT_TEST, &probe, err, sizeof err)) {
        fprintf(stderr, "inspect embed: %s\n", err); ic_model_free(&mm); return IC_FAIL;
    }
    ic_image_free(&probe);
    if (!dir) dir = getenv(!strcmp(o.dataset, "cifar10") ? "CIFAR10_DIR" : !strcmp(o.dataset, "imagefolder") ? "IMAGENET_SUBSET_DIR" : "FASHION_MNIST_DIR");
    if (!dir || !*dir) dir = !strcmp(o.dataset, "cifar10") ? "../shared/data/cifar-10-batches-bin" : !strcmp(o.dataset, "imagefolder") ? "../shared/data/imagenet-subset" : "/usr/share/datasets/fashion-mnist";
    vg_dataset *tr = vg_dataset_open(o.dataset, dir, VG_SPLIT_TRAIN, err, sizeof err), *te = NULL;
    if (tr) te = vg_dataset_open(o.dataset, dir, VG_SPLIT_TEST, err, sizeof err);
    if (!tr || !te) { fprintf(stderr, "inspect embed: %s\n", err); vg_dataset_free(tr); ic_model_free(&mm); return IC_FAIL; }
    int rc = 0;
    if (tr->channels != m->cfg.in_chans || tr->n_classes > 100000) {
        fprintf(stderr, "inspect embed: the model takes %d-channel images, %s has %d channels\n", m->cfg.in_chans, o.dataset, tr->channels);
        rc = IC_FAIL; goto done;
    }
    const int ntr = tr->n < lim_train ? tr->n : lim_train, nte = te->n < lim_test ? te->n : lim_test, D = m->cfg.embed_dim;
    if (k > ntr) k = ntr;
    real *Etr = malloc(sizeof *Etr * (size_t)ntr * D), *Ete = malloc(sizeof *Ete * (size_t)nte * D);
    const int chunk = 256;
    real *sim = malloc(sizeof *sim * (size_t)chunk * ntr);
    double *score = calloc(tr->n_classes, sizeof *score);
    int *nb = malloc(sizeof *nb * k);
    if (!Etr || !Ete || !sim || !score || !nb) { fprintf(stderr, "inspect embed: out of memory\n"); rc = IC_FAIL; goto free_all; }

    printf("model: %s\n%s: %d train images (memory bank), %d test images, embedding dim %d, eval transform %dx%d\n",
           mm.source, o.dataset, ntr, nte, D, m->cfg.img_size, m->cfg.img_size);
    double t0 = vg_now_s();
    if (embed_split(m, tr, ntr, batch, Etr) || embed_split(m, te, nte, batch, Ete)) {
        fprintf(stderr, "inspect embed: forward failed: %s\n", vg_error()); rc = IC_FAIL; goto free_all;
    }
    double t1 = vg_now_s();
    int correct_k = 0, correct_1 = 0;
    double mean_sim1 = 0;
    for (int q0 = 0; q0 < nte; q0 += chunk) {
        int M = nte - q0 < chunk ? nte - q0 : chunk;
        vg_gemm(0, 1, M, ntr, D, 1, Ete + (size_t)q0 * D, D, Etr, D, 0, sim, ntr);   /* cosine: rows have norm 1 */
        for (int q = 0; q < M; q++) {
            const real *s = sim + (size_t)q * ntr;
            int cnt = 0;                                    /* top k by insertion, descending */
            for (int j = 0; j < ntr; j++) {
                if (cnt == k && s[j] <= s[nb[k - 1]]) continue;
                int p = cnt < k ? cnt++ : k - 1;
                while (p > 0 && s[nb[p - 1]] < s[j]) { nb[p] = nb[p - 1]; p--; }
                nb[p] = j;
            }
            memset(score, 0, sizeof *score * tr->n_classes);
            for (int t = 0; t < cnt; t++) score[tr->labels[nb[t]]] += exp(s[nb[t]] / 0.07);
            int best = 0;
            for (int c = 1; c < tr->n_classes; c++) if (score[c] > score[best]) best = c;
            int y = te->labels[q0 + q];
            correct_k += best == y;
            correct_1 += tr->labels[nb[0]] == y;
            mean_sim1 += s[nb[0]];
        }
    }
    printf("embedding %.1f s (%.0f images/s), search %.1f s\n", t1 - t0, (ntr + nte) / (t1 - t0), vg_now_s() - t1);
    printf("mean cosine similarity to the nearest train image: %.3f\n", mean_sim1 / nte);
    printf("%d-NN accuracy (cosine, weighted vote exp(sim/0.07)): %.2f%% (%d / %d)\n", k, 100.0 * correct_k / nte, correct_k, nte);
    printf("1-NN accuracy: %.2f%% (%d / %d)\n", 100.0 * correct_1 / nte, correct_1, nte);
free_all:
    free(Etr); free(Ete); free(sim); free(score); free(nb);
done:
    vg_dataset_free(tr); vg_dataset_free(te);
    ic_model_free(&mm);
    return rc;
}
