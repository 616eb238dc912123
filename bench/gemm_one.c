/* gemm_one.c — one vg_gemm shape timed on its own, with the caches flushed before every product
 * (as in the training step, where operands come from memory). Not a test; used for the single-shape
 * figures in docs/benchmarks.md (e.g. alternate two builds of it to compare a change).
 *
 *   make && gcc -std=c11 -D_GNU_SOURCE -O3 -fopenmp -ffp-contract=fast -I. \
 *       bench/gemm_one.c build/libvitgrad.a -o gemm_one -lpng -lz -lm
 *   OMP_NUM_THREADS=1 chrt -f 1 ./gemm_one M N K OP REPS      (OP: NN, NT, TN or TT)
 *
 * Prints the best time (and its GFLOP/s) and the mean GFLOP/s over REPS products. */
#include "../base/clock.h"
#include "gemm/gemm.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


int main(int argc, char **argv) {
    if (argc != 6 || strlen(argv[4]) != 2 || !strchr("NT", argv[4][0]) || !strchr("NT", argv[4][1])) {
        fprintf(stderr, "usage: %s M N K OP REPS   (OP one of NN NT TN TT)\n", argv[0]);
        return 2;
    }
    const int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]), reps = atoi(argv[5]);
    const int tA = argv[4][0] == 'T', tB = argv[4][1] == 'T';
    if (M < 1 || N < 1 || K < 1 || reps < 1) { fprintf(stderr, "%s: M, N, K and REPS must be ≥ 1\n", argv[0]); return 2; }
    float *A = aligned_alloc(64, ((size_t)M * K * 4 + 63) / 64 * 64);
    float *B = aligned_alloc(64, ((size_t)K * N * 4 + 63) / 64 * 64);
    float *C = aligned_alloc(64, ((size_t)M * N * 4 + 63) / 64 * 64);
    const long flush_bytes = 64L << 20;                  /* twice the L3 */
    char *flush = malloc(flush_bytes);
    if (!A || !B || !C || !flush) { fprintf(stderr, "%s: out of memory\n", argv[0]); return 1; }
    for (long i = 0; i < (long)M * K; i++) A[i] = (float)(i % 7) * 0.1f;
    for (long i = 0; i < (long)K * N; i++) B[i] = (float)(i % 5) * 0.1f;
    memset(flush, 0, flush_bytes);
    double best = 1e30, sum = 0;
    for (int r = 0; r < reps; r++) {
        for (long i = 0; i < flush_bytes; i += 64) flush[i]++;
        const double t = vg_now_s();
        vg_gemm(tA, tB, M, N, K, 1.0f, A, tA ? M : K, B, tB ? K : N, 0.0f, C, N);
        const double dt = vg_now_s() - t;
        if (dt < best) best = dt;
        sum += dt;
    }
    const double flop = 2.0 * M * N * K;
    printf("%dx%dx%d %s threads %d: best %.2f ms (%.1f GFLOP/s), mean %.1f GFLOP/s\n", M, N, K,
           argv[4], omp_get_max_threads(), best * 1e3, flop / best / 1e9, flop / (sum / reps) / 1e9);
    return flush[0] == 42 && C[0] == 42;                 /* keeps the work */
}
