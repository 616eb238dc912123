/* test_dist.c — the pieces of data-parallel training that run in one process: the engine's
 * gradient-ready hook, the gradient bucketer (one rank: it must not change a bit), and the
 * loader's shards (the union of the shards is the unsharded batch, bit for bit). The runs over
 * several MPI ranks are in tests/mpi.sh. */
#include "test.h"
#include "data/data.h"
#include "dist/dist.h"
#include "optim/optim.h"
#include "vit/vit.h"
#include <stdlib.h>
#include <string.h>

/* a ViT small enough for a unit test, on a fixed random batch */
static bool small_vit(vg_vit *m, vg_params *p) {
    vg_vit_config c;
    if (!vg_vit_preset("vit-micro-cifar", &c)) return false;
    c.embed_dim = 32; c.depth = 2; c.num_heads = 2; c.img_size = 16;
    vg_rng r = vg_rng_seed(5);
    if (!vg_vit_init(m, &c, &r)) return false;
    memset(p, 0, sizeof *p);
    vg_vit_params(m, p);
    return true;
}

static vg_tensor *small_loss(vg_vit *m, int B) {
    vg_rng r = vg_rng_seed(9);
    vg_tensor *x = vg_randn(&r, VG_DIMS(B, 3, 16, 16), 0, 1);
    int32_t y[8];
    for (int i = 0; i < B; i++) y[i] = (int32_t)(i * 3 % 10);
    return vg_cross_entropy_fn(vg_vit_forward(m, x, true, NULL), y, 0.1);
}

typedef struct { const vg_params *p; int *calls; vg_tensor **snap; int order; int *when; } hook_log;
static void log_ready(vg_tensor *leaf, void *ctx) {
    hook_log *h = ctx;
    for (int i = 0; i < h->p->n; i++)
        if (h->p->items[i].tensor == leaf) {
            h->calls[i]++;
            h->when[i] = h->order++;
            h->snap[i] = vg_persist(leaf->grad);         /* the gradient as the hook saw it */
        }
}

VG_TEST(dist_grad_ready_hook_fires_once_per_parameter_with_its_final_gradient) {
    vg_vit m; vg_params p;
    REQUIRE(small_vit(&m, &p));
    int calls[256] = {0}, when[256] = {0};
    vg_tensor *snap[256] = {0};
    REQUIRE(p.n <= 256);
    hook_log h = {&p, calls, snap, 0, when};
    vg_tensor *loss = small_loss(&m, 4);
    REQUIRE(loss);
    vg_params_zero_grad(&p);
    vg_set_grad_ready_hook(log_ready, &h);
    CHECK(vg_backward(loss, NULL));
    vg_set_grad_ready_hook(NULL, NULL);
    int once = 0, same = 0;
    for (int i = 0; i < p.n; i++) {
        once += calls[i] == 1;
        if (snap[i] && p.items[i].tensor->grad &&
            !memcmp(vg_data(snap[i]), vg_data(p.items[i].tensor->grad), sizeof(real) * (size_t)vg_numel(snap[i]))) same++;
        vg_tensor_free(snap[i]);
    }
    CHECK_MSG(once == p.n, "%d of %d parameters reported exactly once", once, p.n);
    CHECK_MSG(same == p.n, "%d of %d gradients were final when reported", same, p.n);
    /* backward finishes the head before the patch embedding: the bucket order relies on it */
    int head = -1, patch = -1;
    for (int i = 0; i < p.n; i++) {
        if (!strcmp(p.items[i].name, "head.weight")) head = i;
        if (!strcmp(p.items[i].name, "patch_embed.proj.weight")) patch = i;
    }
    REQUIRE(head >= 0 && patch >= 0);
    CHECK(when[head] < when[patch]);
    vg_arena_reset();
    vg_params_free(&p); vg_vit_free(&m);
}

/* one rank: the bucketer's gradients are the engine's own, bit for bit, for any bucket size */
VG_TEST(dist_grad_sync_one_rank_keeps_gradients_bit_exact) {
    vg_vit ref, m; vg_params pr, p;
    REQUIRE(small_vit(&ref, &pr) && small_vit(&m, &p));
    vg_params_zero_grad(&pr);
    REQUIRE(vg_backward(small_loss(&ref, 4), NULL));
    vg_arena_reset();
    const size_t sizes[3] = {1, 4096, 1 << 30};          /* a bucket per parameter, several, one */
    for (int k = 0; k < 3; k++) {
        char err[256];
        vg_grad_sync *s = vg_grad_sync_new(&p, sizes[k], err, sizeof err);
        REQUIRE(s);
        vg_grad_sync_stats st = vg_grad_sync_stats_get(s);
        CHECK(k != 0 || st.buckets == p.n);
        CHECK(k != 2 || st.buckets == 1);
        for (int step = 0; step < 2; step++) {             /* the second step reuses the buffers */
            vg_params_zero_grad(&p);
            vg_grad_sync_begin(s);
            REQUIRE(vg_backward(small_loss(&m, 4), NULL));
            vg_grad_sync_finish(s);
            vg_arena_reset();
        }
        int same = 0;
        for (int i = 0; i < p.n; i++)
            same += !memcmp(vg_data(p.items[i].tensor->grad), vg_data(pr.items[i].tensor->grad),
                            sizeof(real) * (size_t)vg_numel(pr.items[i].tensor));
        CHECK_MSG(same == p.n, "bucket size %zu: %d of %d gradients identical", sizes[k], same, p.n);
        /* the grads live in the flat buffer now: free the model's view structs before the buffer */
        for (int i = 0; i < p.n; i++) { vg_tensor_free(p.items[i].tensor->grad); p.items[i].tensor->grad = NULL; }
        vg_grad_sync_free(s);
    }
    vg_params_free(&pr); vg_params_free(&p);
    vg_vit_free(&ref); vg_vit_free(&m);
}

/* an in-memory dataset of n 8x8 RGB images with distinct pixels */
static vg_dataset *tiny_dataset(int n) {
    vg_dataset *d = calloc(1, sizeof *d);
    snprintf(d->name, sizeof d->name, "test"); snprintf(d->path, sizeof d->path, "(memory)");
    d->n = n; d->channels = 3; d->height = d->width = 8; d->n_classes = 10;
    d->labels = malloc(sizeof(int32_t) * (size_t)n);
    d->pixels = malloc((size_t)n * 192);
    vg_rng r = vg_rng_seed(3);
    for (int i = 0; i < n; i++) d->labels[i] = (int32_t)(i % 10);
    for (int i = 0; i < n * 192; i++) d->pixels[i] = (uint8_t)vg_rng_below(&r, 256);
    for (int c = 0; c < 3; c++) { d->mean[c] = 0.5f; d->std[c] = 0.25f; }
    return d;
}

/* every shard's batches, concatenated, are the unsharded loader's batches (train and eval) */
static void check_shards(const vg_dataset *d, int train, int B, int N, int threads) {
    char err[512];
    vg_loader_config c = vg_loader_config_default();
    c.batch_size = B; c.train = train; c.n_threads = threads; c.seed = 11;
    vg_loader *whole = vg_loader_new(d, &c, err, sizeof err);
    vg_loader *part[4];
    for (int s = 0; s < N; s++) { c.shard = s; c.n_shards = N; part[s] = vg_loader_new(d, &c, err, sizeof err); }
    REQUIRE(whole && part[0] && part[N - 1]);
    const size_t img = 3 * 8 * 8;
    int batches = 0, mismatches = 0;
    for (int epoch = 0; epoch < 2; epoch++) {
        vg_batch w, b;
        while (vg_loader_next(whole, &w) == 1) {
            int covered = 0;
            for (int s = 0; s < N; s++) {
                if (vg_loader_next(part[s], &b) != 1) { mismatches++; continue; }
                mismatches += b.index != w.index || b.epoch != w.epoch || b.global_n != w.n || b.offset != covered;
                mismatches += memcmp(b.x, w.x + (size_t)covered * img, sizeof(real) * img * (size_t)b.n) != 0;
                mismatches += memcmp(b.y, w.y + covered, sizeof(int32_t) * (size_t)b.n) != 0;
                covered += b.n;
            }
            mismatches += covered != w.n;
            batches++;
        }
        for (int s = 0; s < N; s++) mismatches += vg_loader_next(part[s], &b) != 0;   /* epoch ends together */
    }
    vg_loader_state a = vg_loader_state_get(whole), z = vg_loader_state_get(part[N - 1]);
    CHECK(a.epoch == z.epoch && a.index == z.index);                     /* the position is global */
    CHECK_MSG(batches > 0 && mismatches == 0, "train %d, batch %d, %d shards: %d mismatches over %d batches",
              train, B, N, mismatches, batches);
    vg_loader_free(whole);
    for (int s = 0; s < N; s++) vg_loader_free(part[s]);
}

VG_TEST(dist_loader_shards_are_slices_of_the_global_batch) {
    vg_dataset *d = tiny_dataset(37);
    check_shards(d, 1, 8, 2, 0);
    check_shards(d, 1, 12, 3, 1);
    check_shards(d, 0, 8, 2, 0);       /* eval: the last batch has 5 samples, split 2 + 3 */
    check_shards(d, 0, 16, 4, 2);      /* eval: the last batch has 5, split 1 + 1 + 1 + 2 */
    char err[512];
    vg_loader_config c = vg_loader_config_default();
    c.batch_size = 10; c.n_shards = 4; c.shard = 1;
    CHECK(vg_loader_new(d, &c, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "not divisible by 4"), "error was: %s", err);
    vg_dataset_free(d);
}

VG_TEST(dist_single_process_is_rank_0_of_1) {
    char err[128];
    CHECK(vg_dist_init(NULL, NULL, err, sizeof err) == 0);
    CHECK(vg_dist_rank() == 0 && vg_dist_size() == 1 && vg_dist_local_size() == 1);
    double x[2] = {1.5, -2};
    vg_dist_sum_f64(x, 2);
    CHECK(x[0] == 1.5 && x[1] == -2);
    CHECK(vg_dist_any(true) && !vg_dist_any(false));
}

/* A sample's dropout masks do not depend on the batch split: a ViT with dropout and attention
 * dropout on a batch of 4 gives the same logits as on its halves, each told where it starts. */
VG_TEST(dist_dropout_masks_follow_the_sample_not_the_split) {
    vg_vit m; vg_params p;
    REQUIRE(small_vit(&m, &p));
    m.cfg.drop_rate = 0.3; m.cfg.attn_drop_rate = 0.2;
    for (int i = 0; i < m.cfg.depth; i++) { m.blocks[i].attn.attn_drop = 0.2; m.blocks[i].attn.proj_drop = 0.3; }
    vg_rng r = vg_rng_seed(9);
    vg_tensor *x = vg_persist(vg_randn(&r, VG_DIMS(4, 3, 16, 16), 0, 1));
    vg_rng d_whole = vg_rng_seed(21), d_a = d_whole, d_b = d_whole;
    vg_dropout_first_sample(0);
    vg_tensor *whole = vg_vit_forward(&m, x, true, &d_whole);
    vg_tensor *a = vg_vit_forward(&m, vg_narrow(x, 0, 0, 2), true, &d_a);
    vg_dropout_first_sample(2);
    vg_tensor *b = vg_vit_forward(&m, vg_narrow(x, 0, 2, 2), true, &d_b);
    vg_dropout_first_sample(0);
    REQUIRE(whole && a && b);
    double worst = 0;
    for (int i = 0; i < 20; i++) {
        double w = vg_data(whole)[i], h = vg_data(a)[i], k = vg_data(b)[i];
        if (fabs(w - h) > worst) worst = fabs(w - h);
        if (fabs(vg_data(whole)[20 + i] - k) > worst) worst = fabs(vg_data(whole)[20 + i] - k);
    }
    CHECK_MSG(worst <= 1e-5, "logits differ by %g between the whole batch and its halves", worst);
    CHECK(!memcmp(&d_whole, &d_a, sizeof d_a) && !memcmp(&d_whole, &d_b, sizeof d_b));  /* streams agree */
    vg_rng d_eval = vg_rng_seed(21);                      /* and dropout is really on */
    vg_tensor *e = vg_vit_forward(&m, x, false, &d_eval);
    CHECK(e && memcmp(vg_data(e), vg_data(whole), sizeof(real) * 40) != 0);
    vg_arena_reset();
    vg_tensor_free(x);
    vg_params_free(&p); vg_vit_free(&m);
}
