/* mlp_probe.c — the ViT block's MLP (linear → bias_gelu → linear, as vit.c runs it) forward and
 * backward on vit-tiny-cifar's shapes: input (128, 65, 192), hidden 768, every input needing its
 * gradient. Not a test; the MLP figures in docs/benchmarks.md come from it.
 *
 *   make && gcc -std=c11 -D_GNU_SOURCE -O3 -march=native -fopenmp -I. bench/mlp_probe.c \
 *       build/libvitgrad.a -o mlp_probe -lpng -lz -lm && OMP_NUM_THREADS=2 chrt -f 1 ./mlp_probe
 *
 * Prints the best and the mean of 25 forward and backward passes (after 5 warm-up rounds). */
#include "autograd/autograd.h"
#include "nn/nn.h"
#include <math.h>
#include <omp.h>
#include <stdio.h>

int main(void) {
    enum { WARMUP = 5, RUNS = 25 };
    vg_rng rng = vg_rng_seed(1);
    const int64_t D = 192, H = 768;
    vg_tensor *x = vg_param(VG_DIMS(128, 65, D)), *dy = vg_param(VG_DIMS(128, 65, D));
    vg_tensor *w1 = vg_param(VG_DIMS(H, D)), *b1 = vg_param(VG_DIMS(H));
    vg_tensor *w2 = vg_param(VG_DIMS(D, H)), *b2 = vg_param(VG_DIMS(D));
    vg_tensor *all[] = {x, dy, w1, b1, w2, b2};
    for (int i = 0; i < 6; i++) vg_init_normal(all[i], &rng, i < 2 ? 1.0 : 0.05);
    double best_f = 1e9, best_b = 1e9, sum_f = 0, sum_b = 0;
    for (int it = 0; it < WARMUP + RUNS; it++) {
        const double t0 = omp_get_wtime();
        vg_tensor *h = vg_linear_fn(x, w1, NULL);
        h = vg_bias_gelu_fn(h, b1);
        vg_tensor *y = vg_linear_fn(h, w2, b2);
        const double t1 = omp_get_wtime();
        if (!y || !vg_backward(y, dy)) { fprintf(stderr, "mlp_probe: %s\n", vg_error()); return 1; }
        const double t2 = omp_get_wtime();
        if (it >= WARMUP) {
            best_f = fmin(best_f, t1 - t0); best_b = fmin(best_b, t2 - t1);
            sum_f += t1 - t0; sum_b += t2 - t1;
        }
        for (int i = 0; i < 6; i++) if (all[i] != dy) vg_zero_grad(all[i]);
        vg_arena_reset();
    }
    printf("MLP (128, 65, 192) → 768 → 192, %d threads: forward best %.2f mean %.2f ms, backward best %.2f mean %.2f ms\n",
           omp_get_max_threads(), best_f * 1e3, sum_f / RUNS * 1e3, best_b * 1e3, sum_b / RUNS * 1e3);
    for (int i = 0; i < 6; i++) vg_tensor_free(all[i]);
    return 0;
}
