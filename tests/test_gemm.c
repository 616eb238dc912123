/* test_gemm.c — vg_gemm / vg_gemm_batched against a naive double-accumulation reference:
 * all four transpose combinations, alpha/beta variants (beta 0 over NaN-filled C), odd and
 * non-square sizes that hit every edge tile, padded leading dimensions, the batched entry point,
 * and bitwise determinism between 1 and 2 threads. Tolerance per element: 1e-5·Σ|a||b| in float
 * (1e-13 in double) plus the rounding of beta·C. vg_gemm_bias against the fill-then-accumulate form. */
#include "test.h"
#include "gemm/gemm.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#ifdef VG_DOUBLE
#define REL_TOL 1e-13
#else
#define REL_TOL 1e-5
#endif

static unsigned rng_state = 12345u;
static real rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return (real)((rng_state >> 8) * (1.0 / 16777216.0) * 2.0 - 1.0);
}
static real *rnd_alloc(long n) {
    real *p = malloc(sizeof(real) * (n > 0 ? n : 1));
    for (long i = 0; i < n; i++) p[i] = rnd();
    return p;
}

/* Runs one product on C (ldc-padded, pre-filled with C0 or NaN) and compares with the reference;
 * returns the number of bad elements (entries outside the M×N block must stay untouched). */
static int check_gemm(int tA, int tB, int M, int N, int K, real alpha, real beta, int pad) {
    const int lda = (tA ? M : K) + pad, ldb = (tB ? K : N) + pad, ldc = N + pad;
    const long rowsA = tA ? K : M, rowsB = tB ? N : K;
    real *A = rnd_alloc(rowsA * lda), *B = rnd_alloc(rowsB * ldb);
    real *C = rnd_alloc((long)M * ldc), *C0 = malloc(sizeof(real) * ((long)M * ldc + 1));
    if (beta == 0)
        for (long i = 0; i < (long)M * ldc; i++) C[i] = (real)NAN;
    memcpy(C0, C, sizeof(real) * M * ldc);
    vg_gemm(tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            real got = C[(long)i * ldc + j], old = C0[(long)i * ldc + j];
            if (j >= N) {                           /* padding: must be untouched (NaN-safe) */
                if (memcmp(&got, &old, sizeof got) != 0) bad++;
                continue;
            }
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double a = tA ? A[(long)k * lda + i] : A[(long)i * lda + k];
                double b = tB ? B[(long)j * ldb + k] : B[(long)k * ldb + j];
                s += a * b; mag += fabs(a * b);
            }
            double oldterm = beta != 0 ? beta * (double)old : 0.0;
            double want = alpha * s + oldterm;
            double tol = REL_TOL * (fabs(alpha) * mag + fabs(oldterm)) + 1e-30;
            if (!(fabs(got - want) <= tol)) {
                if (bad < 3)
                    vg_test_fail(__FILE__, __LINE__, "%c%c M=%d N=%d K=%d alpha=%g beta=%g pad=%d: "
                                 "C[%d][%d] = %.9g, want %.9g (tol %.3g)", tA ? 'T' : 'N', tB ? 'T' : 'N',
                                 M, N, K, (double)alpha, (double)beta, pad, i, j, (double)got, want, tol);
                bad++;
            }
        }
    free(A); free(B); free(C); free(C0);
    return bad;
}

VG_TEST(gemm_all_transposes_odd_sizes) {
    static const int sizes[] = { 1, 3, 17, 33, 65, 100 };
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    int bad = 0;
    for (int t = 0; t < 4; t++)
        for (int a = 0; a < ns; a++)
            for (int b = 0; b < ns; b += 2)
                for (int c = 1; c < ns; c += 2)
                    bad += check_gemm(t >> 1, t & 1, sizes[a], sizes[b], sizes[c], 1, 0, 0);
    CHECK(bad == 0);
}

VG_TEST(gemm_alpha_beta_variants) {
    static const real ab[][2] = { { 1, 0 }, { 1, 1 }, { 0.75f, 0.5f }, { -2, 0 }, { 0, 0.5f }, { 0, 0 } };
    int bad = 0;
    for (int t = 0; t < 4; t++)
        for (int v = 0; v < 6; v++) {
            bad += check_gemm(t >> 1, t & 1, 37, 29, 45, ab[v][0], ab[v][1], 0);       /* small path */
            bad += check_gemm(t >> 1, t & 1, 37, 34, 45, ab[v][0], ab[v][1], 2);       /* NT: 2 edge dots */
            bad += check_gemm(t >> 1, t & 1, 131, 75, 70, ab[v][0], ab[v][1], 3);      /* packed */
        }
    CHECK(bad == 0);
}

/* Sizes that span several MC/KC blocks and leave partial tiles in every direction; N = 6500 spans
 * more than one NC column block (NC = 3072 with AVX2, 6144 with AVX-512). */
VG_TEST(gemm_large_padded_multiblock) {
    int bad = 0;
    for (int t = 0; t < 4; t++) {
        bad += check_gemm(t >> 1, t & 1, 257, 100, 600, 1, 0, 5);
        bad += check_gemm(t >> 1, t & 1, 300, 257, 33, 0.5f, 1, 1);
        bad += check_gemm(t >> 1, t & 1, 50, 6500, 40, 1, 0.5f, 3);
    }
    bad += check_gemm(0, 1, 65, 65, 64, 0.125f, 0, 0);         /* attention shapes */
    bad += check_gemm(0, 0, 65, 64, 65, 1, 1, 0);
    bad += check_gemm(1, 0, 65, 64, 65, 1, 0.5f, 0);
    bad += check_gemm(0, 0, 2, 3000, 5, 1, 0, 0);              /* wide and flat */
    bad += check_gemm(1, 1, 3000, 2, 7, 1, 0, 0);              /* tall and thin */
    CHECK(bad == 0);
}

VG_TEST(gemm_degenerate_k0_and_alpha0) {
    real C[6] = { 1, 2, 3, 4, 5, 6 }, A[1] = { 0 }, B[1] = { 0 };
    vg_gemm(0, 0, 2, 3, 0, 1, A, 1, B, 3, 0.5f, C, 3);
    CHECK_CLOSE(C[5], 3, 0);
    C[0] = (real)NAN;
    vg_gemm(0, 0, 2, 3, 0, 1, A, 1, B, 3, 0, C, 3);
    CHECK(C[0] == 0 && C[5] == 0);
    vg_gemm(0, 0, 0, 3, 4, 1, A, 1, B, 3, 0, C, 3);              /* M == 0: nothing happens */
}

VG_TEST(gemm_batched_matches_single) {
    const int batch = 7, M = 65, N = 64, K = 65;
    for (int t = 0; t < 4; t++) {
        const int tA = t >> 1, tB = t & 1;
        const int lda = (tA ? M : K) + 1, ldb = (tB ? K : N) + 2, ldc = N + 3;
        const long sA = (long)(tA ? K : M) * lda + 5, sB = (long)(tB ? N : K) * ldb + 7;
        const long sC = (long)M * ldc + 1;
        real *A = rnd_alloc(sA * batch), *B = rnd_alloc(sB * batch);
        real *C1 = rnd_alloc(sC * batch), *C2 = malloc(sizeof(real) * sC * batch);
        memcpy(C2, C1, sizeof(real) * sC * batch);
        vg_gemm_batched(batch, tA, tB, M, N, K, 0.5f, A, lda, sA, B, ldb, sB, 0.25f, C1, ldc, sC);
        for (int b = 0; b < batch; b++)
            vg_gemm(tA, tB, M, N, K, 0.5f, A + b * sA, lda, B + b * sB, ldb, 0.25f, C2 + b * sC, ldc);
        CHECK_MSG(memcmp(C1, C2, sizeof(real) * sC * batch) == 0, "batched %c%c differs from single",
                  tA ? 'T' : 'N', tB ? 'T' : 'N');
        free(A); free(B); free(C1); free(C2);
    }
    /* big matrices, few of them (each product uses all threads) */
    int bad = 0;
    {
        const int m = 200, n = 130, k = 90, batch2 = 2;
        real *A = rnd_alloc((long)m * k * batch2), *B = rnd_alloc((long)k * n * batch2);
        real *C = rnd_alloc((long)m * n * batch2), *R = malloc(sizeof(real) * m * n * batch2);
        vg_gemm_batched(batch2, 0, 0, m, n, k, 1, A, k, (long)m * k, B, n, (long)k * n, 0, C, n, (long)m * n);
        for (int b = 0; b < batch2; b++)
            vg_gemm(0, 0, m, n, k, 1, A + (long)b * m * k, k, B + (long)b * k * n, n, 0, R + (long)b * m * n, n);
        bad += memcmp(C, R, sizeof(real) * m * n * batch2) != 0;
        free(A); free(B); free(C); free(R);
    }
    CHECK(bad == 0);
}

/* The same product with 1 and 2 threads must agree bit for bit (K is never split). The shapes
 * take every threaded path: rows handed out one block at a time with one K block (523×200×300) and
 * with B packed whole over two (1000×40×513), fixed row halves with B too big to pack whole
 * (600×300×1000), column halves (96×700×260), column halves each wider than one NC block
 * (40×6500×70: the column blocks differ between 1 and 2 threads, the sums must not). */
VG_TEST(gemm_deterministic_across_threads) {
    static const int shapes[][3] = { { 523, 200, 300 }, { 96, 700, 260 }, { 1000, 40, 513 },
                                     { 600, 300, 1000 }, { 40, 6500, 70 } };
    const int saved = omp_get_max_threads();
    for (int s = 0; s < 5; s++)
        for (int t = 0; t < 4; t++) {
            const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], tA = t >> 1, tB = t & 1;
            real *A = rnd_alloc((long)M * K), *B = rnd_alloc((long)K * N);
            real *C1 = rnd_alloc((long)M * N), *C2 = malloc(sizeof(real) * M * N);
            memcpy(C2, C1, sizeof(real) * M * N);
            omp_set_num_threads(1);
            vg_gemm(tA, tB, M, N, K, 0.5f, A, tA ? M : K, B, tB ? K : N, 1, C1, N);
            omp_set_num_threads(2);
            vg_gemm(tA, tB, M, N, K, 0.5f, A, tA ? M : K, B, tB ? K : N, 1, C2, N);
            CHECK_MSG(memcmp(C1, C2, sizeof(real) * M * N) == 0, "%dx%dx%d %c%c: 1 vs 2 threads differ",
                      M, N, K, tA ? 'T' : 'N', tB ? 'T' : 'N');
            free(A); free(B); free(C1); free(C2);
        }
    omp_set_num_threads(saved);
}

/* Called from inside a parallel region, every call must run single-threaded and still be right. */
VG_TEST(gemm_inside_parallel_region) {
    const int M = 150, N = 120, K = 100;
    real *A = rnd_alloc((long)M * K), *B = rnd_alloc((long)K * N);
    real *R = malloc(sizeof(real) * M * N), *C = malloc(sizeof(real) * 2 * M * N);
    vg_gemm(0, 1, M, N, K, 1, A, K, B, K, 0, R, N);
    #pragma omp parallel for num_threads(2)
    for (int t = 0; t < 2; t++) vg_gemm(0, 1, M, N, K, 1, A, K, B, K, 0, C + (long)t * M * N, N);
    CHECK(memcmp(C, R, sizeof(real) * M * N) == 0);
    CHECK(memcmp(C + (long)M * N, R, sizeof(real) * M * N) == 0);
    free(A); free(B); free(R); free(C);
}

/* vg_gemm_bias(…, b, C) must give exactly what filling every row of C with b and calling vg_gemm
 * with beta = 1 gives (the Linear layer's old two-pass form): same bits on the small path, the
 * packed path with several K blocks and partial tiles, with alpha ≠ 1, K == 0, on 1 and 2
 * threads; C's padding columns stay untouched and old C contents (NaN here) are ignored. */
VG_TEST(gemm_bias_equals_fill_then_accumulate) {
    static const int shapes[][3] = { { 37, 29, 45 }, { 131, 75, 70 }, { 523, 200, 900 },
                                     { 65, 65, 64 }, { 8, 3, 0 } };
    const int saved = omp_get_max_threads();
    for (int s = 0; s < 5; s++)
        for (int t = 0; t < 4; t++)
            for (int nt = 1; nt <= 2; nt++) {
                const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], tA = t >> 1, tB = t & 1;
                const int lda = (tA ? M : K) + 1, ldb = (tB ? K : N) + 1, ldc = N + 2;
                const real alpha = s == 2 ? 0.75f : 1;
                real *A = rnd_alloc((long)(tA ? K : M) * lda + 1), *B = rnd_alloc((long)(tB ? N : K) * ldb + 1);
                real *bias = rnd_alloc(N), *C1 = malloc(sizeof(real) * M * ldc), *C2 = malloc(sizeof(real) * M * ldc);
                for (long i = 0; i < (long)M * ldc; i++) C1[i] = C2[i] = (real)NAN;
                for (int i = 0; i < M; i++) memcpy(C2 + (long)i * ldc, bias, sizeof(real) * N);
                omp_set_num_threads(nt);
                vg_gemm_bias(tA, tB, M, N, K, alpha, A, lda, B, ldb, bias, C1, ldc);
                vg_gemm(tA, tB, M, N, K, alpha, A, lda, B, ldb, 1, C2, ldc);
                CHECK_MSG(memcmp(C1, C2, sizeof(real) * M * ldc) == 0, "%dx%dx%d %c%c %d thr: bias "
                          "epilogue differs from fill + beta 1", M, N, K, tA ? 'T' : 'N', tB ? 'T' : 'N', nt);
                free(A); free(B); free(bias); free(C1); free(C2);
            }
    omp_set_num_threads(saved);
    /* NULL bias: plain overwrite, like beta = 0 */
    real A[6] = { 1, 2, 3, 4, 5, 6 }, B[3] = { 1, 1, 1 }, C[2] = { (real)NAN, (real)NAN };
    vg_gemm_bias(0, 0, 2, 1, 3, 1, A, 3, B, 1, NULL, C, 1);
    CHECK(C[0] == 6 && C[1] == 15);
}
