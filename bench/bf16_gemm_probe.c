/* bf16_gemm_probe.c — vg_gemm_bf16 (the --amp GEMM) against vg_gemm (FP32) on a preset's Linear
 * products at batch 128, alternating, median GFLOP/s of ROUNDS rounds (default 5), on 1 and 2
 * threads. Not a test; the figures in docs/benchmarks.md ("bf16") come from it.
 *   tiny (the default): vit-tiny-cifar, 8,320 tokens; the six products make bench has always shown
 *   micro: vit-micro-cifar as make train runs it (patch dropout 0.5: 128 × 33 = 4,224 tokens),
 *          all twelve products: forward (NT), dX (NN) and dW (TN) of qkv, proj, fc1, fc2
 *
 *   make build/bf16_gemm_probe && build/bf16_gemm_probe [ROUNDS [tiny|micro]] */
#include "../base/clock.h"
#include "gemm/gemm.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <time.h>


int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 5;
    const char *preset = argc > 2 ? argv[2] : "tiny";
    const bool micro = !strcmp(preset, "micro");
    if (rounds < 1 || rounds > 100 || (!micro && strcmp(preset, "tiny"))) {
        fprintf(stderr, "usage: %s [rounds 1..100 [tiny|micro]]\n", argv[0]);
        return 2;
    }
    typedef struct { int tA, tB, M, N, K; const char *use; } shape;
    static const shape tiny[] = {
        { 0, 1, 8320, 576, 192, "qkv forward" }, { 0, 0, 8320, 192, 576, "qkv dX" },
        { 1, 0, 576, 192, 8320, "qkv dW" },      { 0, 1, 8320, 768, 192, "fc1 forward" },
        { 0, 1, 8320, 192, 768, "fc2 forward" }, { 1, 0, 192, 768, 8320, "fc2 dW" },
    };
    static const shape micro_shapes[] = {
        { 0, 1, 4224, 384, 128, "qkv forward" }, { 0, 0, 4224, 128, 384, "qkv dX" },
        { 1, 0, 384, 128, 4224, "qkv dW" },      { 0, 1, 4224, 128, 128, "proj forward" },
        { 0, 0, 4224, 128, 128, "proj dX" },     { 1, 0, 128, 128, 4224, "proj dW" },
        { 0, 1, 4224, 512, 128, "fc1 forward" }, { 0, 0, 4224, 128, 512, "fc1 dX" },
        { 1, 0, 512, 128, 4224, "fc1 dW" },      { 0, 1, 4224, 128, 512, "fc2 forward" },
        { 0, 0, 4224, 512, 128, "fc2 dX" },      { 1, 0, 128, 512, 4224, "fc2 dW" },
    };
    const shape *shapes = micro ? micro_shapes : tiny;
    const size_t nshapes = micro ? sizeof micro_shapes / sizeof *micro_shapes : sizeof tiny / sizeof *tiny;
    printf("bf16 GEMM kernel: %s; FP32: %s\n", vg_gemm_bf16_kernel(), vg_gemm_kernel());
    printf("| shape M×N×K | op | use | thr | FP32 GFLOP/s | bf16 GFLOP/s | bf16 / FP32 |\n|---|---|---|---|---|---|---|\n");
    for (int t = 1; t <= 2; t++) {
        omp_set_num_threads(t);
        for (size_t s = 0; s < nshapes; s++) {
            const int tA = shapes[s].tA, tB = shapes[s].tB, M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
            float *A = malloc(sizeof(float) * (size_t)M * K), *B = malloc(sizeof(float) * (size_t)K * N);
            float *C = malloc(sizeof(float) * (size_t)M * N);
            if (!A || !B || !C) return 1;
            for (long i = 0; i < (long)M * K; i++) A[i] = (float)rand() / RAND_MAX - 0.5f;
            for (long i = 0; i < (long)K * N; i++) B[i] = (float)rand() / RAND_MAX - 0.5f;
            double f32[100], b16[100];
            for (int r = -1; r < rounds; r++) {                      /* round -1 warms up */
                double t0 = vg_now_s();
                vg_gemm(tA, tB, M, N, K, 1, A, tA ? M : K, B, tB ? K : N, 0, C, N);
                double t1 = vg_now_s();
                vg_gemm_bf16(tA, tB, M, N, K, 1, A, tA ? M : K, B, tB ? K : N, 0, C, N);
                double t2 = vg_now_s();
                if (r >= 0) { f32[r] = 2.0 * M * N * K / (t1 - t0) * 1e-9; b16[r] = 2.0 * M * N * K / (t2 - t1) * 1e-9; }
            }
            qsort(f32, (size_t)rounds, sizeof(double), vg_cmp_double);
            qsort(b16, (size_t)rounds, sizeof(double), vg_cmp_double);
            printf("| %dx%dx%d | %c%c | %s | %d | %.1f | %.1f | %.2f |\n", M, N, K, tA ? 'T' : 'N', tB ? 'T' : 'N',
                   shapes[s].use, t, f32[rounds / 2], b16[rounds / 2], b16[rounds / 2] / f32[rounds / 2]);
            free(A); free(B); free(C);
        }
    }
    return 0;
}
