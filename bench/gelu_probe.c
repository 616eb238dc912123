/* gelu_probe.c — the bias-GELU layer's speed on the ViT's MLP activations (vit-tiny-cifar:
 * 8320 × 768 per block). Not a test; the GELU timings in docs/benchmarks.md come from it (its
 * accuracy is tests/test_nn.c's nn_bias_gelu_accuracy, which prints the errors it measures).
 *
 *   make && gcc -std=c11 -D_GNU_SOURCE -O3 -march=native -fopenmp -I. bench/gelu_probe.c \
 *       build/libvitgrad.a -o gelu_probe -lpng -lz -lm && OMP_NUM_THREADS=2 chrt -f 1 ./gelu_probe
 *
 * Prints the best of 36 forward and backward passes (after 4 warm-up rounds). */
#include "autograd/autograd.h"
#include "nn/nn.h"
#include <math.h>
#include <omp.h>
#include <stdio.h>

int main(void) {
    vg_rng rng = vg_rng_seed(1);
    vg_tensor *x = vg_param(VG_DIMS(8320, 768)), *dy = vg_param(VG_DIMS(8320, 768));
    vg_init_normal(x, &rng, 1);
    vg_init_normal(dy, &rng, 1);
    double best_f = 1e9, best_b = 1e9;
    for (int it = 0; it < 40; it++) {
        const double t0 = omp_get_wtime();
        vg_tensor *h = vg_bias_gelu_fn(x, NULL);
        const double t1 = omp_get_wtime();
        if (!h || !vg_backward(h, dy)) { fprintf(stderr, "gelu_probe: %s\n", vg_error()); return 1; }
        const double t2 = omp_get_wtime();
        if (it >= 4) { best_f = fmin(best_f, t1 - t0); best_b = fmin(best_b, t2 - t1); }
        vg_zero_grad(x);
        vg_arena_reset();
    }
    printf("8320 x 768, %d threads: forward best %.2f ms, backward best %.2f ms\n", omp_get_max_threads(), best_f * 1e3, best_b * 1e3);
    vg_tensor_free(x);
    vg_tensor_free(dy);
    return 0;
}
