/* gemm_bench.c — vg_gemm against OpenBLAS's cblas_sgemm on the ViT's shapes. Not a test.
 *
 * Build (float build only) and run, with OpenBLAS free to pick its best kernel:
 *   make && gcc -std=c11 -D_GNU_SOURCE -O3 -fopenmp -Wall -Wextra -Wshadow \
 *       -Wno-unused-parameter -I. bench/gemm_bench.c build/libvitgrad.a -o gemm_bench -lopenblas -lpng -lz -lm
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./gemm_bench [reps]
 *
 * Each row times both libraries in alternation (vitgrad, OpenBLAS, vitgrad, ...) on the same
 * operands and reports the median GFLOP/s of `reps` rounds. Threads: omp_set_num_threads for
 * vitgrad, openblas_set_num_threads for OpenBLAS. Between the two libraries we sleep briefly so
 * the other library's idle worker threads stop spinning on the shared cores. */
#include "../base/clock.h"
#include "gemm/gemm.h"
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int);

static void nap(int threads) {
    if (threads > 1) { struct timespec t = { 0, 200 * 1000 * 1000 }; nanosleep(&t, NULL); }
}
static float *make(long n, unsigned seed) {
    float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
    for (long i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) * (1.0 / 16777216.0) - 0.5);
    }
    return p;
}
static double max_rel_diff(const float *x, const float *y, long n) {
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)x[i] - y[i]);
        if (d > num) num = d;
        if (fabs(y[i]) > den) den = fabs(y[i]);
    }
    return den > 0 ? num / den : num;
}

typedef struct { int M, N, K, tA, tB, batch; const char *what; } bench_case;

/* Runs one case (batch > 1: `batch` independent products with packed strides). */
static void run_case(const bench_case *c, int threads, int reps) {
    const int M = c->M, N = c->N, K = c->K, tA = c->tA, tB = c->tB, batch = c->batch;
    const int lda = tA ? M : K, ldb = tB ? K : N, ldc = N;
    const long sA = (long)M * K, sB = (long)K * N, sC = (long)M * N;
    float *A = make(sA * batch, 1), *B = make(sB * batch, 2);
    float *C1 = make(sC * batch, 3), *C2 = make(sC * batch, 4);
    const double flop = 2.0 * M * N * K * batch;
    /* one round is `inner` calls, so a round takes ≥ ~20 ms */
    int inner = (int)(20e9 / (flop * 100.0 * threads)) + 1;
    double *tv = malloc(sizeof(double) * reps), *to = malloc(sizeof(double) * reps);

    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    for (int r = -1; r < reps; r++) {              /* round -1 is warm-up */
        double t0 = vg_now_s();
        for (int it = 0; it < inner; it++)
            vg_gemm_batched(batch, tA, tB, M, N, K, 1.0f, A, lda, sA, B, ldb, sB, 0.0f, C1, ldc, sC);
        double t1 = vg_now_s();
        nap(threads);
        double t2 = vg_now_s();
        for (int it = 0; it < inner; it++)
            for (int b = 0; b < batch; b++)
                cblas_sgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans,
                            tB ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A + b * sA, lda,
                            B + b * sB, ldb, 0.0f, C2 + b * sC, ldc);
        double t3 = vg_now_s();
        nap(threads);
        if (r >= 0) { tv[r] = flop * inner / (t1 - t0) * 1e-9; to[r] = flop * inner / (t3 - t2) * 1e-9; }
    }
    double gv = vg_median(tv, reps), go = vg_median(to, reps);
    char shape[64];
    if (batch > 1) snprintf(shape, sizeof shape, "%d x %dx%dx%d", batch, M, N, K);
    else snprintf(shape, sizeof shape, "%dx%dx%d", M, N, K);
    printf("| %-20s | %s%s | %d | %7.1f | %7.1f | %5.2f | %-14s | %.1e |\n", shape, tA ? "T" : "N",
           tB ? "T" : "N", threads, gv, go, gv / go, c->what, max_rel_diff(C1, C2, sC * batch));
    fflush(stdout);
    free(A); free(B); free(C1); free(C2); free(tv); free(to);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1) reps = 1;
    const int T = 8320;  /* tokens per batch: 128 images × 65 (64 patches + CLS) */
    const bench_case cases[] = {
        /* Linear forward Y = X·Wᵀ: NT, M tokens, K = in, N = out */
        { T, 576, 192, 0, 1, 1, "qkv fwd" },   { T, 192, 192, 0, 1, 1, "proj fwd" },
        { T, 768, 192, 0, 1, 1, "fc1 fwd" },   { T, 192, 768, 0, 1, 1, "fc2 fwd" },
        /* Linear backward dX = dY·W: NN, K = out, N = in */
        { T, 192, 576, 0, 0, 1, "qkv dX" },    { T, 192, 192, 0, 0, 1, "proj dX" },
        { T, 192, 768, 0, 0, 1, "fc1 dX" },    { T, 768, 192, 0, 0, 1, "fc2 dX" },
        /* TN with M = tokens (Aᵀ stored K×M) */
        { T, 576, 192, 1, 0, 1, "TN M=tokens" }, { T, 192, 768, 1, 0, 1, "TN M=tokens" },
        { T, 768, 576, 1, 0, 1, "TN M=tokens" },
        /* Linear backward dW = dYᵀ·X: TN, M = out, N = in, K = tokens */
        { 576, 192, T, 1, 0, 1, "qkv dW" },    { 768, 192, T, 1, 0, 1, "fc1 dW" },
        { 192, 768, T, 1, 0, 1, "fc2 dW" },
        /* attention per (image, head): 128 images × 3 heads = 384 products */
        { 65, 65, 64, 0, 1, 384, "attn Q·Kᵀ" }, { 65, 64, 65, 0, 0, 384, "attn P·V" },
        { 65, 64, 65, 1, 0, 384, "attn Pᵀ·dO" },
    };
    const int ncase = (int)(sizeof cases / sizeof cases[0]);
    printf("GEMM GFLOP/s, median of %d alternating rounds (vitgrad's %s micro-kernel vs OpenBLAS "
           "cblas_sgemm)\n\n", reps, vg_gemm_kernel());
    printf("| shape M×N×K          | op | thr | vitgrad | OpenBLAS | ratio | use            | max rel diff |\n");
    printf("|----------------------|----|-----|---------|----------|-------|----------------|--------------|\n");
    for (int threads = 1; threads <= 2; threads++)
        for (int i = 0; i < ncase; i++) run_case(&cases[i], threads, reps);
    return 0;
}
