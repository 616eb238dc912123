/* dist_check.c — the gradient bucketer over real MPI ranks (run by tests/test_mpi.c as
 * `mpirun -np N build/dist_check`). Every rank knows the whole global batch, so it computes each
 * rank's local gradient itself and their mean: that is what vg_grad_sync must leave in every
 * rank's .grad after a backward on its own slice only, for any bucket size (one bucket per
 * parameter, several, one for all). Prints "dist_check: ok ..." on rank 0 or the first mismatch. */
#include "dist/dist.h"
#include "vit/vit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B 8                                           /* global batch */

static vg_tensor *slice_loss(vg_vit *m, vg_tensor *x, const int32_t *y, int lo, int n) {
    vg_dropout_first_sample(lo);
    return vg_cross_entropy_fn(vg_vit_forward(m, vg_narrow(x, 0, lo, n), true, NULL), y + lo, 0.1);
}

int main(int argc, char **argv) {
    char err[256];
    if (vg_dist_init(&argc, &argv, err, sizeof err)) { fprintf(stderr, "dist_check: %s\n", err); return 1; }
    const int rank = vg_dist_rank(), N = vg_dist_size(), n = B / N;
    vg_vit_config c;
    vg_vit_preset("vit-micro-cifar", &c);
    c.embed_dim = 32; c.depth = 2; c.num_heads = 2; c.img_size = 16;
    vg_rng r = vg_rng_seed(5);
    vg_vit m; vg_params p = {0};
    if (B % N || !vg_vit_init(&m, &c, &r)) { fprintf(stderr, "dist_check: needs N | %d\n", B); vg_dist_abort(1); }
    vg_vit_params(&m, &p);
    vg_tensor *x = vg_persist(vg_randn(&r, VG_DIMS(B, 3, 16, 16), 0, 1));
    int32_t y[B];
    for (int i = 0; i < B; i++) y[i] = (int32_t)(i * 7 % 10);
    /* the expected mean gradient, from every rank's slice computed here */
    vg_tensor **want = calloc((size_t)p.n, sizeof *want);
    for (int q = 0; q < N; q++) {
        vg_params_zero_grad(&p);
        vg_backward(slice_loss(&m, x, y, q * n, n), NULL);
        for (int i = 0; i < p.n; i++) {
            vg_tensor *g = p.items[i].tensor->grad;
            if (!want[i]) want[i] = vg_persistent_zeros(g->ndim, g->shape);
            for (int64_t k = 0; k < vg_numel(g); k++) vg_data(want[i])[k] += vg_data(g)[k] / N;
        }
        vg_arena_reset();
    }
    const size_t sizes[3] = {1, 4096, (size_t)1 << 30};
    double worst = 0;
    int bad = 0;
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < p.n; i++) { vg_tensor_free(p.items[i].tensor->grad); p.items[i].tensor->grad = NULL; }
        vg_grad_sync *gs = vg_grad_sync_new(&p, sizes[s], err, sizeof err);
        if (!gs) { fprintf(stderr, "dist_check: %s\n", err); vg_dist_abort(1); }
        for (int step = 0; step < 2; step++) {
            vg_params_zero_grad(&p);
            vg_grad_sync_begin(gs);
            vg_backward(slice_loss(&m, x, y, rank * n, n), NULL);
            vg_grad_sync_finish(gs);
            vg_arena_reset();
        }
        for (int i = 0; i < p.n; i++) {
            const vg_tensor *g = p.items[i].tensor->grad;
            double scale = 1e-12;
            for (int64_t k = 0; k < vg_numel(g); k++) scale = fmax(scale, fabs(vg_data(want[i])[k]));
            for (int64_t k = 0; k < vg_numel(g); k++) {
                double d = fabs(vg_data(g)[k] - vg_data(want[i])[k]) / scale;
                if (d > worst) worst = d;
                if (!(d <= 1e-5) && !bad++)
                    fprintf(stderr, "dist_check: rank %d, bucket size %zu: %s[%lld] = %g, expected %g\n", rank, sizes[s],
                            p.items[i].name, (long long)k, (double)vg_data(g)[k], (double)vg_data(want[i])[k]);
            }
        }
        for (int i = 0; i < p.n; i++) { vg_tensor_free(p.items[i].tensor->grad); p.items[i].tensor->grad = NULL; }
        vg_grad_sync_free(gs);
    }
    int64_t total_bad = bad;
    vg_dist_sum_i64(&total_bad, 1);
    double w = worst;
    vg_dist_sum_f64(&w, 1);                            /* (a sum is enough to report) */
    if (rank == 0) {
        if (total_bad) printf("dist_check: FAIL: %lld gradient elements differ from the mean over %d ranks\n", (long long)total_bad, N);
        else printf("dist_check: ok: %d ranks, %d parameters, 3 bucket sizes: gradients = the mean of every rank's (worst relative difference %.2e)\n", N, p.n, worst);
    }
    for (int i = 0; i < p.n; i++) vg_tensor_free(want[i]);
    free(want);
    vg_tensor_free(x);
    vg_params_free(&p); vg_vit_free(&m);
    vg_arena_free_all();
    vg_dist_finalize();
    return total_bad ? 1 : 0;
}
