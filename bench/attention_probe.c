/* attention_probe.c — attention's four per-head product kinds (65×65×64 for the CIFAR ViTs: 128
 * images × 3 heads, head dim 64, rows of the fused qkv 576 floats apart), with their operands in
 * cache ("hot": the same image and head every time) or fresh ("cold": every (image, head) once, as
 * in the training step). Not a test; the hot/cold figures in docs/benchmarks.md come from it.
 *
 *   gcc -std=c11 -D_GNU_SOURCE -O3 -march=native -fopenmp -ffp-contract=fast -I. \
 *       bench/attention_probe.c tensor/gemm.c -o attention_probe
 *   OMP_NUM_THREADS=1 chrt -f 1 ./attention_probe */
#include "tensor/gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
    enum { B = 128, N = 65, D = 192, H = 3, HD = 64, LD = 3 * D };
    float *qkv = aligned_alloc(64, 4L * B * N * LD), *S = aligned_alloc(64, 4L * B * H * N * N + 64);
    float *O = aligned_alloc(64, 4L * B * N * D);
    if (!qkv || !S || !O) { fputs("attention_probe: out of memory\n", stderr); return 1; }
    for (long i = 0; i < (long)B * N * LD; i++) qkv[i] = (float)(i % 13) * 0.01f;
    for (long i = 0; i < (long)B * H * N * N; i++) S[i] = (float)(i % 7) * 0.01f;
    for (long i = 0; i < (long)B * N * D; i++) O[i] = (float)(i % 11) * 0.01f;
    static const char *names[4] = { "Q·Kᵀ  (NT 65×65×64)", "P·V   (NN 65×64×65)",
                                    "Pᵀ·dO (TN 65×64×65)", "dO·Vᵀ (NT 65×65×64)" };
    for (int hot = 1; hot >= 0; hot--)
        for (int kind = 0; kind < 4; kind++) {
            double best = 1e30;
            for (int rep = 0; rep < 7; rep++) {
                const double t = now();
                for (int bh = 0; bh < B * H; bh++) {
                    const int b = hot ? 0 : bh / H, h = bh % H;
                    float *Q = qkv + (long)b * N * LD + h * HD, *K = Q + D, *V = Q + 2 * D;
                    float *P = S + (long)(hot ? 0 : bh) * N * N, *o = O + (long)b * N * D + h * HD;
                    if (kind == 0) vg_gemm(0, 1, N, N, HD, 0.125f, Q, LD, K, LD, 0, P, N);
                    if (kind == 1) vg_gemm(0, 0, N, HD, N, 1, P, N, V, LD, 0, o, D);
                    if (kind == 2) vg_gemm(1, 0, N, HD, N, 1, P, N, o, D, 0, V, LD);
                    if (kind == 3) vg_gemm(0, 1, N, N, HD, 1, o, D, V, LD, 0, P, N);
                }
                const double dt = now() - t;
                if (dt < best) best = dt;
            }
            printf("%s %s: %.1f GFLOP/s (%.1f µs per product)\n", names[kind], hot ? "hot " : "cold",
                   2.0 * N * N * HD * B * H / best / 1e9, best / (B * H) * 1e6);
        }
    return 0;
}
