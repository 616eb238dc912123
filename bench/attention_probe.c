/* attention_probe.c — attention's four per-head product kinds (65×65×64 for the CIFAR ViTs: 128
 * images × 3 heads, head dim 64, rows of the fused qkv 576 floats apart), with their operands in
 * cache ("hot": the same image and head every time) or fresh ("cold": every (image, head) once, as
 * in the training step). Then the whole per-pair loops of nn/attention.c (forward: Q·Kᵀ and P·V;
 * backward: the four products and the softmax backward) on OMP_NUM_THREADS threads, with L3
 * flushed before each repetition: operands in timm's layout, in a head-major layout (each (image,
 * head)'s Q, K, V contiguous 65×64 blocks), or hot. Not a test; the hot/cold figures in
 * docs/benchmarks.md come from it.
 *
 *   make && gcc -std=c11 -D_GNU_SOURCE -O3 -fopenmp -ffp-contract=fast -I. \
 *       bench/attention_probe.c build/libvitgrad.a -o attention_probe -lpng -lz -lm
 *   OMP_NUM_THREADS=1 chrt -f 1 ./attention_probe */
#include "../base/clock.h"
#include "gemm/gemm.h"
#include "tensor/lanes.h"
#include <stdio.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


enum { B = 128, N = 65, D = 192, H = 3, HD = 64, LD = 3 * D, NN = N * N };

/* One pass of the forward (backward when bwd) loop over all pairs. layout 0: timm (Q, K, V of a
 * pair strided inside the image's qkv rows), 1: head-major, 2: hot (every pair reads image 0's
 * operands and writes the same outputs). */
static void pair_loop(int bwd, int layout, const float *qkv, float *dqkv, float *S, float *dS, float *O) {
    #pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; bh++) {
        const int hot = layout == 2, b = hot ? 0 : bh / H, h = bh % H, p = hot ? h : bh;
        const long blk = (long)N * HD;
        const float *Q = layout == 1 ? qkv + (long)bh * blk : qkv + (long)b * N * LD + h * HD;
        const long off = layout == 1 ? (long)B * H * blk : D;
        const int ld = layout == 1 ? HD : LD;
        const float *K = Q + off, *V = Q + 2 * off;
        float *A = S + (long)p * NN, *o = O + (long)b * N * D + h * HD;
        if (!bwd) {
            vg_gemm(0, 1, N, N, HD, 0.125f, Q, ld, K, ld, 0, A, N);
            vg_gemm(0, 0, N, HD, N, 1, A, N, V, ld, 0, o, D);
            continue;
        }
        float *dQ = dqkv + (Q - qkv), *dK = dQ + off, *dV = dQ + 2 * off, *ds = dS + (long)p * NN;
        vg_gemm(1, 0, N, HD, N, 1, A, N, o, D, 0, dV, ld);
        vg_gemm(0, 1, N, N, HD, 1, o, D, V, ld, 0, ds, N);
        for (int i = 0; i < N; i++) {
            const float dot = (float)vg_dot_lanes(ds + i * N, A + i * N, N);
            for (int j = 0; j < N; j++) ds[i * N + j] = A[i * N + j] * (ds[i * N + j] - dot);
        }
        vg_gemm(0, 0, N, HD, N, 0.125f, ds, N, K, ld, 0, dQ, ld);
        vg_gemm(1, 0, N, HD, N, 0.125f, ds, N, Q, ld, 0, dK, ld);
    }
}

static void whole_loops(float *qkv, float *S, float *O) {
    float *dqkv = aligned_alloc(64, 4L * B * N * LD), *dS = aligned_alloc(64, 4L * B * H * NN + 64);
    float *junk = aligned_alloc(64, 64L << 20);
    if (!dqkv || !dS || !junk) { fputs("attention_probe: out of memory\n", stderr); exit(1); }
    memset(dqkv, 0, 4L * B * N * LD); memset(dS, 0, 4L * B * H * NN); memset(junk, 0, 64L << 20);
    static const char *layouts[3] = { "timm layout, fresh", "head-major, fresh", "in cache" };
    printf("\nwhole loops, %d thread(s), best of 9 (L3 flushed before each):\n", omp_get_max_threads());
    for (int bwd = 0; bwd < 2; bwd++)
        for (int layout = 0; layout < 3; layout++) {
            double best = 1e30;
            for (int rep = 0; rep < 9; rep++) {
                for (long i = 0; i < (16L << 20); i += 16) junk[i] += 1.f;    /* 64 MiB: evicts L3 */
                const double t = vg_now_s();
                pair_loop(bwd, layout, qkv, dqkv, S, dS, O);
                const double dt = vg_now_s() - t;
                if (dt < best) best = dt;
            }
            printf("%s %-19s %6.2f ms\n", bwd ? "backward" : "forward ", layouts[layout], best * 1e3);
        }
}

int main(void) {
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
                const double t = vg_now_s();
                for (int bh = 0; bh < B * H; bh++) {
                    const int b = hot ? 0 : bh / H, h = bh % H;
                    float *Q = qkv + (long)b * N * LD + h * HD, *K = Q + D, *V = Q + 2 * D;
                    float *P = S + (long)(hot ? 0 : bh) * N * N, *o = O + (long)b * N * D + h * HD;
                    if (kind == 0) vg_gemm(0, 1, N, N, HD, 0.125f, Q, LD, K, LD, 0, P, N);
                    if (kind == 1) vg_gemm(0, 0, N, HD, N, 1, P, N, V, LD, 0, o, D);
                    if (kind == 2) vg_gemm(1, 0, N, HD, N, 1, P, N, o, D, 0, V, LD);
                    if (kind == 3) vg_gemm(0, 1, N, N, HD, 1, o, D, V, LD, 0, P, N);
                }
                const double dt = vg_now_s() - t;
                if (dt < best) best = dt;
            }
            printf("%s %s: %.1f GFLOP/s (%.1f µs per product)\n", names[kind], hot ? "hot " : "cold",
                   2.0 * N * N * HD * B * H / best / 1e9, best / (B * H) * 1e6);
        }
    whole_loops(qkv, S, O);
    return 0;
}
