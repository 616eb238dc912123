/* test_gemm_bf16.c — the bf16 GEMM of --amp (gemm/bf16_dp.c) and the bf16 semantics it is
 * built on (gemm/bf16.h):
 *   - the scalar conversion and vdpbf16ps step on chosen values (ties to even, NaN, denormals,
 *     overflow, the two products added one after the other, odd element first), and bit for bit
 *     against the instructions themselves on random values when this CPU has AVX512_BF16;
 *   - the GEMM against a float64 product of the bf16-rounded inputs: every transpose case, odd
 *     sizes and partial tiles, several K blocks, more than one column block, alpha/beta/bias,
 *     padded leading dimensions; tolerance (K + 2)·2⁻²⁴·Σ|a·b|, FP32 accumulation only (an input
 *     not rounded, or rounded another way, is off by ~2⁻⁹ relative);
 *   - 1 vs 2 threads bit for bit, batched = single, inside a parallel region.
 * tests/run.sh runs this file twice: with this machine's kernel, and with the vdpbf16ps kernel's
 * intrinsics emulated in C (gemm/emulate/avx512_bf16.h). */
#include "test.h"
#include "gemm/gemm.h"
#include "gemm/bf16.h"
#include "isa/isa.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifndef VG_DOUBLE
static unsigned rng_state = 777u;
static float rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) * (1.0 / 16777216.0) * 2.0 - 1.0);
}
static float *rnd_alloc(long n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (long i = 0; i < n; i++) p[i] = rnd();
    return p;
}

VG_TEST(bf16_conversion_rounds_to_nearest_even) {
    CHECK(vg_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(vg_f32_to_bf16(vg_bits_f32(0x3f808000)) == 0x3f80);    /* tie, even below */
    CHECK(vg_f32_to_bf16(vg_bits_f32(0x3f818000)) == 0x3f82);    /* tie, even above */
    CHECK(vg_f32_to_bf16(vg_bits_f32(0x3f808001)) == 0x3f81);    /* above the tie */
    CHECK(vg_f32_to_bf16(vg_bits_f32(0xbf807fff)) == 0xbf80);    /* below the tie, negative */
    CHECK(vg_f32_to_bf16(vg_bits_f32(0x7f7fffff)) == 0x7f80);    /* FLT_MAX rounds to +inf */
    CHECK(vg_f32_to_bf16(vg_bits_f32(0x7f800001)) == 0x7fc0);    /* signalling NaN made quiet */
    CHECK(vg_f32_to_bf16(vg_bits_f32(0xffc12345)) == 0xffc1);    /* quiet NaN keeps its top bits */
    CHECK(vg_f32_to_bf16(vg_bits_f32(0x807fffff)) == 0x8000);    /* denormal → zero of its sign */
    CHECK(vg_f32_to_bf16(vg_bits_f32(0x00800000)) == 0x0080);    /* FLT_MIN stays */
}

VG_TEST(bf16_dot_is_two_rounded_fma_steps_odd_first) {
    const uint32_t one = 0x3f80, half_ulp = 0x3380;          /* 1.0 and 2⁻²⁴ (half an ulp of 1) */
    /* 1 + 2⁻²⁴ + 2⁻²⁴: each step is a tie that rounds back to 1 (the exact sum would be 1 + ulp) */
    CHECK(vg_bf16_dot_pair(1.0f, half_ulp | half_ulp << 16, one | one << 16) == 1.0f);
    /* (1 + ulp) + 2⁻²⁴ (odd) − 2⁻²⁴ (even): odd first gives 1 + 2 ulp, even first would give 1 */
    const float acc = vg_bits_f32(0x3f800001);
    const uint32_t a = (half_ulp | 0x8000) | half_ulp << 16;  /* even −2⁻²⁴, odd +2⁻²⁴ */
    CHECK(vg_bf16_dot_pair(acc, a, one | one << 16) == vg_bits_f32(0x3f800002));
    /* denormals: a bf16 denormal input is zero, a result below FLT_MIN is flushed */
    CHECK(vg_bf16_dot_pair(1.0f, 0x0001u << 16 | 0x0001u, 0x3f803f80u) == 1.0f);
    const uint32_t tiny = 0x2000;                           /* 2⁻⁶³: tiny² = 2⁻¹²⁶ = FLT_MIN */
    CHECK(vg_bf16_dot_pair(0, tiny, tiny) == 0x1p-126f);
    CHECK(vg_bf16_dot_pair(0, 0x1fff, tiny) == 0);            /* just below FLT_MIN: flushed */
    CHECK(vg_bf16_dot_pair(vg_bits_f32(0x00400000), one, one) == 1.0f);   /* denormal acc is 0 */
    float nan = vg_bf16_dot_pair(0, 0x7f80, 0);               /* inf · 0 */
    CHECK(nan != nan);
}

#if defined(__x86_64__) && defined(__GNUC__)
static uint64_t xs = 88172645463325252ull;
static uint32_t r32(void) { xs ^= xs << 13; xs ^= xs >> 7; xs ^= xs << 17; return (uint32_t)xs; }
/* floats over the whole range, a third of them tiny, denormal, huge, infinite or NaN */
static uint32_t special_float(void) {
    uint32_t u = r32(), s = u & 0x80000000u, f = u & 0x7fffffu;
    switch (r32() % 9) {
    case 0: return s | f;                                              /* denormal or zero */
    case 1: return s | 0x7f800000u | (r32() % 4 ? f : 0);              /* NaN or infinity */
    case 2: return s | (1 + r32() % 8) << 23 | f;                      /* just above FLT_MIN */
    case 3: return s | (100 + r32() % 60) << 23 | f;                   /* around 1 */
    default: return s | (50 + r32() % 40) << 23 | f;                   /* products near FLT_MIN */
    }
}
__attribute__((target("avx512f,avx512bf16")))
static long hw_compare(int iters) {
    long bad = 0;
    for (int it = 0; it < iters; it++) {
        uint32_t A[16], B[16], C[16], F[32], R[16];
        uint16_t H[32];
        for (int i = 0; i < 16; i++) {
            A[i] = special_float() >> 16 | (special_float() & 0xffff0000u);
            B[i] = special_float() >> 16 | (special_float() & 0xffff0000u);
            C[i] = special_float();
        }
        for (int i = 0; i < 32; i++) F[i] = special_float() ^ (r32() & 0xffffu);
        __m512 c, lo, hi;
        __m512bh a, b;
        memcpy(&c, C, 64); memcpy(&a, A, 64); memcpy(&b, B, 64);
        memcpy(&lo, F, 64); memcpy(&hi, F + 16, 64);
        __m512 r = _mm512_dpbf16_ps(c, a, b);
        __m512bh cv = _mm512_cvtne2ps_pbh(hi, lo);
        memcpy(R, &r, 64); memcpy(H, &cv, 64);
        for (int i = 0; i < 16; i++) {
            const float e = vg_bf16_dot_pair(vg_bits_f32(C[i]), A[i], B[i]), h = vg_bits_f32(R[i]);
            if (!(vg_f32_bits(e) == R[i] || (e != e && h != h)) && bad++ < 3)
                vg_test_fail(__FILE__, __LINE__, "vdpbf16ps acc %08x a %08x b %08x: cpu %08x, C %08x",
                             C[i], A[i], B[i], R[i], vg_f32_bits(e));
        }
        for (int i = 0; i < 32; i++)
            if (vg_f32_to_bf16(vg_bits_f32(F[i])) != H[i] && bad++ < 3)
                vg_test_fail(__FILE__, __LINE__, "vcvtne2ps2bf16 %08x: cpu %04x, C %04x", F[i], H[i],
                             vg_f32_to_bf16(vg_bits_f32(F[i])));
    }
    return bad;
}
#endif

/* 960,000 vdpbf16ps lanes and 1.9 million conversions of random and special values */
VG_TEST(bf16_emulation_matches_the_instructions) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (!__builtin_cpu_supports("avx512bf16")) VG_SKIP("this CPU has no AVX512_BF16 to compare with");
    CHECK(hw_compare(60000) == 0);
#else
    VG_SKIP("not an x86-64 build");
#endif
}

/* One product into C (ldc-padded, pre-filled with random values or NaN for beta 0) against a
 * float64 product of the bf16-rounded inputs; returns the number of bad elements. */
static int check_bf16(int tA, int tB, int M, int N, int K, float alpha, float beta, int pad, int with_bias) {
    const int lda = (tA ? M : K) + pad, ldb = (tB ? K : N) + pad, ldc = N + pad;
    const long rowsA = tA ? K : M, rowsB = tB ? N : K;
    float *A = rnd_alloc(rowsA * lda), *B = rnd_alloc(rowsB * ldb), *bias = with_bias ? rnd_alloc(N) : NULL;
    float *C = rnd_alloc((long)M * ldc), *C0 = malloc(sizeof(float) * (size_t)((long)M * ldc + 1));
    if (beta == 0)
        for (long i = 0; i < (long)M * ldc; i++) C[i] = NAN;
    memcpy(C0, C, sizeof(float) * (size_t)M * ldc);
    if (with_bias) vg_gemm_bf16_bias(tA, tB, M, N, K, alpha, A, lda, B, ldb, bias, C, ldc);
    else vg_gemm_bf16(tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (with_bias) beta = 0;
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            const float got = C[(long)i * ldc + j], old = C0[(long)i * ldc + j];
            if (j >= N) { if (memcmp(&got, &old, sizeof got) != 0) bad++; continue; }
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                const double a = vg_round_bf16(tA ? A[(long)k * lda + i] : A[(long)i * lda + k]);
                const double b = vg_round_bf16(tB ? B[(long)j * ldb + k] : B[(long)k * ldb + j]);
                s += a * b; mag += fabs(a * b);
            }
            const double extra = (beta != 0 ? beta * (double)old : 0.0) + (bias ? bias[j] : 0.0);
            const double want = alpha * s + extra;
            const double tol = (K + 2) * 0x1p-24 * (fabs(alpha) * mag + fabs(extra)) + 1e-30;
            if (!(fabs(got - want) <= tol)) {
                if (bad < 3)
                    vg_test_fail(__FILE__, __LINE__, "%s %c%c M=%d N=%d K=%d alpha=%g beta=%g pad=%d bias=%d: "
                                 "C[%d][%d] = %.9g, want %.9g (tol %.3g)", vg_gemm_bf16_backend(), tA ? 'T' : 'N', tB ? 'T' : 'N',
                                 M, N, K, (double)alpha, (double)beta, pad, with_bias, i, j, (double)got, want, tol);
                bad++;
            }
        }
    free(A); free(B); free(bias); free(C); free(C0);
    return bad;
}

/* The backends with bf16 semantics this binary can run, each selected in turn by for_backends;
 * the process's choice is restored after. A backend this machine lacks is said so, once. */
static const char *const bf16_backends[] = { "amx", "vdpbf16ps", "rounded" };
static int backend_i = -1;
static int next_backend(void) {
    for (backend_i++; backend_i < 3; backend_i++) {
        const char *why = NULL;
        if (vg_gemm_bf16_available(bf16_backends[backend_i], &why)) {
            vg_gemm_bf16_use(bf16_backends[backend_i]);
            return 1;
        }
    }
    backend_i = -1;
    vg_gemm_bf16_use("auto");
    return 0;
}
#define for_backends() while (next_backend())
#define BACKEND bf16_backends[backend_i]

VG_TEST(gemm_bf16_backends_available_here) {
    for (int b = 0; b < 3; b++) {
        const char *why = NULL;
        if (vg_gemm_bf16_available(bf16_backends[b], &why)) printf("    %-9s runs here\n", bf16_backends[b]);
        else printf("    %-9s not here (the emulated run covers it): %s\n", bf16_backends[b], why);
    }
    CHECK(vg_gemm_bf16_available("rounded", NULL) && vg_gemm_bf16_available("fp32", NULL));
    const char *why = NULL;
    CHECK(!vg_gemm_bf16_available("tf32", &why) && why != NULL);
    CHECK(!vg_gemm_bf16_use("tf32"));
}

VG_TEST(gemm_bf16_all_transposes_and_edges) {
    static const int sizes[] = { 1, 2, 13, 33, 70 };
    int bad = 0;
    for_backends()
    for (int t = 0; t < 4; t++)
        for (int a = 0; a < 5; a++)
            for (int b = 0; b < 5; b++)
                for (int c = 0; c < 5; c += 1 + (a + b) % 2)
                    bad += check_bf16(t >> 1, t & 1, sizes[a], sizes[b], sizes[c], 1, 0, (a + c) % 3, 0);
    CHECK(bad == 0);
}

/* alpha/beta/bias, several K blocks (K = 600: 300 pairs, blocks of ≤ 128), more than one column
 * block (N = 800 > 768), a small C over a long K that vdpbf16ps takes in two chunks of K blocks
 * (13×33×3001, as the dW products), row blocks spanning every column that pack their own A
 * (1000×40×50), the attention and ViT shapes in small */
VG_TEST(gemm_bf16_blocks_alpha_beta_bias) {
    static const float ab[][2] = { { 1, 1 }, { 0.75f, 0.5f }, { -2, 0 }, { 0, 0.5f }, { 0, 0 } };
    int bad = 0;
    for_backends() {
    for (int t = 0; t < 4; t++) {
        for (int v = 0; v < 5; v++) bad += check_bf16(t >> 1, t & 1, 37, 45, 29, ab[v][0], ab[v][1], 1, 0);
        bad += check_bf16(t >> 1, t & 1, 45, 40, 601, 1, 0.5f, 3, 0);
        bad += check_bf16(t >> 1, t & 1, 26, 800, 24, 0.5f, 0, 0, 0);
        bad += check_bf16(t >> 1, t & 1, 250, 67, 48, 1, 0, 1, 1);
        bad += check_bf16(t >> 1, t & 1, 13, 33, 3001, 0.75f, 0.5f, 2, 1);
        bad += check_bf16(t >> 1, t & 1, 1000, 40, 50, 1, 0.25f, 1, 1);
        bad += check_bf16(t >> 1, t & 1, 13, 35, 0, 1, 0.5f, 0, t & 1);            /* K = 0 */
    }
    bad += check_bf16(0, 1, 65, 65, 64, 0.125f, 0, 0, 0);                           /* Q·Kᵀ */
    bad += check_bf16(0, 0, 65, 64, 65, 1, 0, 0, 0);                                /* A·V */
    }
    CHECK(bad == 0);
}

/* Same bits on 1 and 2 threads (each shape big enough for two): units split by rows (180×100×130),
 * by columns (24×800×120), with several K blocks (60×40×900), in chunks of K blocks (13×33×3001),
 * row blocks spanning every column, each packing its own A (1000×40×50) */
VG_TEST(gemm_bf16_deterministic_across_threads) {
    static const int shapes[][3] = { { 180, 100, 130 }, { 24, 800, 120 }, { 60, 40, 900 }, { 13, 33, 3001 }, { 1000, 40, 50 } };
    const int saved = omp_get_max_threads();
    for_backends()
    for (int s = 0; s < 5; s++)
        for (int t = 0; t < 4; t++) {
            const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], tA = t >> 1, tB = t & 1;
            float *A = rnd_alloc((long)M * K), *B = rnd_alloc((long)K * N);
            float *C1 = rnd_alloc((long)M * N), *C2 = malloc(sizeof(float) * (size_t)M * N);
            memcpy(C2, C1, sizeof(float) * (size_t)M * N);
            omp_set_num_threads(1);
            vg_gemm_bf16(tA, tB, M, N, K, 0.5f, A, tA ? M : K, B, tB ? K : N, 1, C1, N);
            omp_set_num_threads(2);
            vg_gemm_bf16(tA, tB, M, N, K, 0.5f, A, tA ? M : K, B, tB ? K : N, 1, C2, N);
            CHECK_MSG(memcmp(C1, C2, sizeof(float) * (size_t)M * N) == 0, "%s %dx%dx%d %c%c: 1 vs 2 threads differ",
                      BACKEND, M, N, K, tA ? 'T' : 'N', tB ? 'T' : 'N');
            free(A); free(B); free(C1); free(C2);
        }
    omp_set_num_threads(saved);
}

VG_TEST(gemm_bf16_batched_and_inside_parallel_region) {
    const int batch = 5, M = 65, N = 64, K = 65;
    for_backends()
    for (int t = 0; t < 4; t++) {
        const int tA = t >> 1, tB = t & 1, lda = (tA ? M : K) + 1, ldb = (tB ? K : N) + 2, ldc = N + 3;
        const long sA = (long)(tA ? K : M) * lda + 5, sB = (long)(tB ? N : K) * ldb + 7, sC = (long)M * ldc + 1;
        float *A = rnd_alloc(sA * batch), *B = rnd_alloc(sB * batch);
        float *C1 = rnd_alloc(sC * batch), *C2 = malloc(sizeof(float) * (size_t)(sC * batch)), *C3 = malloc(sizeof(float) * (size_t)(sC * batch));
        memcpy(C2, C1, sizeof(float) * (size_t)(sC * batch)); memcpy(C3, C1, sizeof(float) * (size_t)(sC * batch));
        vg_gemm_bf16_batched(batch, tA, tB, M, N, K, 0.5f, A, lda, sA, B, ldb, sB, 0.25f, C1, ldc, sC);
        for (int b = 0; b < batch; b++)
            vg_gemm_bf16(tA, tB, M, N, K, 0.5f, A + b * sA, lda, B + b * sB, ldb, 0.25f, C2 + b * sC, ldc);
        #pragma omp parallel for num_threads(2)
        for (int b = 0; b < batch; b++)
            vg_gemm_bf16(tA, tB, M, N, K, 0.5f, A + b * sA, lda, B + b * sB, ldb, 0.25f, C3 + b * sC, ldc);
        CHECK_MSG(memcmp(C1, C2, sizeof(float) * (size_t)(sC * batch)) == 0, "%s batched %c%c differs from single", BACKEND, tA ? 'T' : 'N', tB ? 'T' : 'N');
        CHECK_MSG(memcmp(C3, C2, sizeof(float) * (size_t)(sC * batch)) == 0, "%s %c%c inside a parallel region differs", BACKEND, tA ? 'T' : 'N', tB ? 'T' : 'N');
        free(A); free(B); free(C1); free(C2); free(C3);
    }
}

/* The AMX kernel's own paths: full 32×32 blocks accumulated in place (alpha 1, beta 0 or 1, bias)
 * over more than one K block of 512 (K = 1100: 35 tiles of 32 k, blocks of ≤ 16), mixed with edge
 * blocks (M, N not multiples of 32) that finish through the buffer; dW's shape in small (TN, K
 * long); the ViT's Linear shapes in small (NT with bias). On every backend: they are the products
 * the training step runs. */
VG_TEST(gemm_bf16_in_place_blocks_and_long_k) {
    int bad = 0;
    for_backends() {
        for (int t = 0; t < 4; t++) {
            bad += check_bf16(t >> 1, t & 1, 64, 64, 1100, 1, 0, 0, 0);
            bad += check_bf16(t >> 1, t & 1, 70, 96, 1100, 1, 1, 2, 0);
            bad += check_bf16(t >> 1, t & 1, 96, 45, 530, 1, 0, 1, 1);
        }
        bad += check_bf16(1, 0, 64, 32, 2080, 1, 1, 0, 0);            /* dW = Xᵀ·dY, accumulated */
        bad += check_bf16(0, 1, 130, 96, 64, 1, 0, 0, 1);             /* Linear forward + bias */
    }
    CHECK(bad == 0);
}

/* vdpbf16ps: a product whose last tile column has 1–4 live columns (attention's 33 or 65 tokens)
 * gives those columns the same bits as a wider product in which they are interior columns: they
 * run with the rows in the vector lanes, which must add each element's pairs in the same order.
 * Every transpose, alpha/beta/bias, rows not a multiple of 12, two K blocks (K = 300). (The other
 * backends make no such promise: the FP32 GEMM and AMX's edge blocks sum in another order.) */
VG_TEST(gemm_bf16_narrow_columns_same_bits_as_wide) {
    int ran = 0;
    for_backends()
    for (int t = 0; t < 4 && !strcmp(BACKEND, "vdpbf16ps") && ++ran; t++)
        for (int extra = 1; extra <= 5; extra++) {
            const int tA = t >> 1, tB = t & 1, M = 29, K = t == 3 ? 300 : 65, Nn = 32 + extra, Nw = 64;
            float *A = rnd_alloc((long)M * K), *Bw = rnd_alloc((long)K * Nw), *bias = rnd_alloc(Nw);
            float *Bn = malloc(sizeof(float) * (size_t)K * Nn), *Cw = rnd_alloc((long)M * Nw), *Cn = malloc(sizeof(float) * (size_t)M * Nn);
            for (int k = 0; k < K; k++)                 /* B's first Nn columns (tB: its first Nn rows) */
                for (int j = 0; j < Nn; j++) Bn[tB ? (long)j * K + k : (long)k * Nn + j] = Bw[tB ? (long)j * K + k : (long)k * Nw + j];
            for (int i = 0; i < M; i++) memcpy(Cn + (long)i * Nn, Cw + (long)i * Nw, sizeof(float) * (size_t)Nn);
            const float alpha = extra % 2 ? 0.75f : 1, beta = extra > 2 ? 0.5f : 0;
            if (extra == 4) {
                vg_gemm_bf16_bias(tA, tB, M, Nw, K, alpha, A, tA ? M : K, Bw, tB ? K : Nw, bias, Cw, Nw);
                vg_gemm_bf16_bias(tA, tB, M, Nn, K, alpha, A, tA ? M : K, Bn, tB ? K : Nn, bias, Cn, Nn);
            } else {
                vg_gemm_bf16(tA, tB, M, Nw, K, alpha, A, tA ? M : K, Bw, tB ? K : Nw, beta, Cw, Nw);
                vg_gemm_bf16(tA, tB, M, Nn, K, alpha, A, tA ? M : K, Bn, tB ? K : Nn, beta, Cn, Nn);
            }
            int diff = 0;
            for (int i = 0; i < M; i++) diff += memcmp(Cn + (long)i * Nn, Cw + (long)i * Nw, sizeof(float) * (size_t)Nn) != 0;
            CHECK_MSG(diff == 0, "%s %dx%dx%d %c%c: %d rows differ from the 64-wide product", BACKEND, M, Nn, K,
                      tA ? 'T' : 'N', tB ? 'T' : 'N', diff);
            free(A); free(Bw); free(bias); free(Bn); free(Cw); free(Cn);
        }
    if (!ran) VG_SKIP("no vdpbf16ps backend in this binary (the emulated run has it)");
}

/* "fp32" is vg_gemm itself: the same bits, inputs not rounded */
VG_TEST(gemm_bf16_fp32_backend_is_the_fp32_gemm) {
    const int M = 70, N = 45, K = 130;
    float *A = rnd_alloc((long)M * K), *B = rnd_alloc((long)K * N), *bias = rnd_alloc(N);
    float *C1 = rnd_alloc((long)M * N), *C2 = malloc(sizeof(float) * (size_t)M * N);
    memcpy(C2, C1, sizeof(float) * (size_t)M * N);
    REQUIRE(vg_gemm_bf16_use("fp32"));
    CHECK(strcmp(vg_gemm_bf16_backend(), "fp32") == 0);
    vg_gemm_bf16(0, 1, M, N, K, 0.5f, A, K, B, K, 0.25f, C1, N);
    vg_gemm(0, 1, M, N, K, 0.5f, A, K, B, K, 0.25f, C2, N);
    CHECK(memcmp(C1, C2, sizeof(float) * (size_t)M * N) == 0);
    vg_gemm_bf16_bias(0, 0, M, N, K, 1, A, K, B, N, bias, C1, N);
    vg_gemm_bias(0, 0, M, N, K, 1, A, K, B, N, bias, C2, N);
    CHECK(memcmp(C1, C2, sizeof(float) * (size_t)M * N) == 0);
    vg_gemm_bf16_use("auto");
    free(A); free(B); free(bias); free(C1); free(C2);
}

VG_TEST(gemm_bf16_names_its_kernel) {
    REQUIRE(vg_gemm_bf16_use("auto"));
    const char *k = vg_gemm_bf16_kernel();
    printf("    bf16 GEMM: %s (%s; %s)\n", vg_gemm_bf16_backend(), k, vg_gemm_bf16_reason());
    CHECK(strncmp(vg_gemm_bf16_reason(), "auto: ", 6) == 0);
    if (strcmp(vg_gemm_bf16_backend(), "amx") == 0) CHECK(strstr(k, "tdpbf16ps") != NULL);
    else if (strcmp(vg_gemm_bf16_backend(), "vdpbf16ps") == 0) CHECK(strstr(k, "vdpbf16ps") != NULL);
    else CHECK(strstr(k, "FP32 GEMM") != NULL && strstr(vg_gemm_bf16_reason(), "FP32 GEMMs") != NULL);
    /* an AMD CPU with AVX512_BF16 (and VG_ISA not capping it) takes vdpbf16ps (twice the FMA rate
     * there) */
    if (vg_isa_allows(VG_ISA_AVX512BF16) && vg_cpu()->amd && !vg_gemm_bf16_available("amx", NULL))
        CHECK(strcmp(vg_gemm_bf16_backend(), "vdpbf16ps") == 0);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* One hardware tdpbf16ps (tiles 16×16 ← 16×32 · 16×32) on random and special values */
__attribute__((target("amx-tile,amx-bf16")))
static void hw_tdpbf16ps(float *c, const uint16_t *a, const uint16_t *b) {
    uint8_t cfg[64] = {0};
    cfg[0] = 1;
    for (int t = 0; t < 3; t++) { cfg[16 + 2 * t] = 64; cfg[48 + t] = 16; }
    _tile_loadconfig(cfg);
    _tile_loadd(0, c, 64); _tile_loadd(1, a, 64); _tile_loadd(2, b, 64);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
}
#endif

/* tdpbf16ps bit for bit against its C definition (gemm/bf16.h vg_tdpbf16ps_row, which the emulated
 * kernel runs), on the CPU's tiles where it has them */
VG_TEST(amx_emulation_matches_the_tiles) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (!vg_cpu()->amx) {
        printf("    AMX: %s\n", vg_cpu()->amx_why);
        VG_SKIP("no AMX tiles to compare with here (the emulated run checks the kernel against float64)");
    }
    long bad = 0;
    for (int it = 0; it < 2000; it++) {
        uint16_t a[16 * 32], b[16 * 32];
        float c[256], e[256];
        for (int i = 0; i < 16 * 32; i++) { a[i] = (uint16_t)(special_float() >> 16); b[i] = (uint16_t)(special_float() >> 16); }
        for (int i = 0; i < 256; i++) c[i] = e[i] = vg_bits_f32(it % 2 ? special_float() : (r32() & 0xbfffffffu));
        hw_tdpbf16ps(c, a, b);
        for (int r = 0; r < 16; r++) vg_tdpbf16ps_row(e + r * 16, a + r * 32, b, 32, 16, 16);
        for (int i = 0; i < 256; i++)
            if (!(vg_f32_bits(c[i]) == vg_f32_bits(e[i]) || (c[i] != c[i] && e[i] != e[i])) && bad++ < 3)
                vg_test_fail(__FILE__, __LINE__, "tdpbf16ps row %d col %d: tiles %08x, C %08x", i / 16, i % 16,
                             vg_f32_bits(c[i]), vg_f32_bits(e[i]));
    }
    CHECK(bad == 0);
#else
    VG_SKIP("not an x86-64 build");
#endif
}
#endif
