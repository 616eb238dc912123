/* dnnl_gemm.c — vitgrad's bf16 GEMM (vg_gemm_bf16, what --amp's products run on) against oneDNN's
 * bf16 matmul, on vit-tiny-cifar's Linear shapes (batch 128: M = 8,320 tokens; the forward NT, dX
 * NN and dW TN products of qkv, fc1 and fc2 — bench/bf16_gemm_probe.c's six and the three it
 * leaves out), with vitgrad's FP32 vg_gemm beside them. oneDNN is the bf16 anchor as OpenBLAS is
 * the FP32 one (../shared/PERF_NOTES.md): PyTorch's bf16 autocast runs on it. Not a test.
 *
 * Both take the operands in the layouts vitgrad has them (row-major, Aᵀ of dW and Wᵀ of the
 * forward read through strides, nothing pre-packed) and write FP32 C. What is timed differs:
 *   vitgrad bf16     vg_gemm_bf16 on FP32 A and B: its FP32 → bf16 conversion (while packing) is
 *                    inside the time, as it is in training
 *   oneDNN           the matmul primitive alone (src, weights bf16, dst f32), its inputs already
 *                    bf16: oneDNN's best case, the time PyTorch sees when the bf16 copies exist
 *   oneDNN + reorders  two reorder primitives f32 → bf16 (A, B) and then the matmul: the same work
 *                    as vitgrad's call
 * Each round runs the four in turn (vitgrad bf16, oneDNN, oneDNN + reorders, vitgrad FP32); a row
 * reports the median GFLOP/s (2·M·N·K / time) of ROUNDS rounds (default 5) after a warm-up round.
 * The last column checks both C against a reference that is neither: vg_gemm on copies of A and B
 * rounded to bf16 (nearest even), i.e. the same products summed in another order, so oneDNN's
 * distance is ~1e-6 of max|C| and more than 1e-4 means a layout error here (the program then says
 * so and exits 1); vitgrad's is as small unless its backend is "fp32", which does not round.
 * Threads: OMP_NUM_THREADS (both libraries run on the same OpenMP runtime, libgomp: Debian's oneDNN
 * is built with DNNL_CPU_RUNTIME=OMP). The oneDNN column names the implementation it chose
 * (dnnl_query_impl_info_str, e.g. brg:avx512_core_amx_bf16); the header names vitgrad's bf16
 * backend and kernel (VG_BF16_GEMM picks another).
 *
 *   make build/dnnl_gemm          (needs libdnnl-dev: apt-get install libdnnl-dev)
 *   or: gcc -std=c11 -D_GNU_SOURCE -O3 -march=native -fopenmp -Wall -Wextra -Wshadow -I. \
 *           bench/dnnl_gemm.c build/libvitgrad.a -o dnnl_gemm -ldnnl -fopenmp -lstb -lpng -lz -lm -lpthread
 *   OMP_NUM_THREADS=2 ./build/dnnl_gemm [ROUNDS] [USE]      USE: only rows whose use contains it,
 *                                                          e.g. "qkv forward" */
#include "../base/clock.h"
#include "gemm/gemm.h"
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* a failed oneDNN call: which one and its status, then the caller returns 1 */
#define DNNL(call) do { dnnl_status_t st_ = (call); if (st_ != dnnl_success) { \
    fprintf(stderr, "dnnl_gemm: %s failed: %s (line %d)\n", #call, dnnl_status2str(st_), __LINE__); \
    return 1; } } while (0)

typedef struct { int tA, tB, M, N, K; const char *use; } shape;

/* a plain row-major matrix of `rows`×`cols` as oneDNN sees op(X): X stored as is (strides ld, 1)
 * or transposed (X stored cols×rows, so op(X)[i][j] is at j·ld + i) */
static dnnl_status_t plain_md(dnnl_memory_desc_t *md, int rows, int cols, int trans, int ld, dnnl_data_type_t dt) {
    const dnnl_dims_t dims = { rows, cols };
    const dnnl_dims_t strides_n = { ld, 1 }, strides_t = { 1, ld };
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, trans ? strides_t : strides_n);
}

/* oneDNN's objects for one shape: the bf16 copies of A and B, the reorders that make them, the
 * matmul, and the memories they run on */
typedef struct {
    dnnl_primitive_t matmul, reorder_a, reorder_b;
    dnnl_memory_t a32, b32, a16, b16, c;
    const char *impl;                   /* the matmul's implementation, owned by matmul_pd */
    dnnl_primitive_desc_t matmul_pd;
} onednn_gemm;

static int onednn_create(onednn_gemm *g, dnnl_engine_t eng, const shape *s, float *A, float *B,
                         void *A16, void *B16, float *C) {
    const int lda = s->tA ? s->M : s->K, ldb = s->tB ? s->K : s->N;
    dnnl_memory_desc_t a32_md, b32_md, a16_md, b16_md, c_md;
    DNNL(plain_md(&a32_md, s->M, s->K, s->tA, lda, dnnl_f32));
    DNNL(plain_md(&a16_md, s->M, s->K, s->tA, lda, dnnl_bf16));
    DNNL(plain_md(&b32_md, s->K, s->N, s->tB, ldb, dnnl_f32));
    DNNL(plain_md(&b16_md, s->K, s->N, s->tB, ldb, dnnl_bf16));
    DNNL(plain_md(&c_md, s->M, s->N, 0, s->N, dnnl_f32));
    DNNL(dnnl_memory_create(&g->a32, &a32_md, eng, A));
    DNNL(dnnl_memory_create(&g->b32, &b32_md, eng, B));
    DNNL(dnnl_memory_create(&g->a16, &a16_md, eng, A16));
    DNNL(dnnl_memory_create(&g->b16, &b16_md, eng, B16));
    DNNL(dnnl_memory_create(&g->c, &c_md, eng, C));

    dnnl_matmul_desc_t md;
    DNNL(dnnl_matmul_desc_init(&md, &a16_md, &b16_md, NULL, &c_md));
    DNNL(dnnl_primitive_desc_create(&g->matmul_pd, &md, NULL, eng, NULL));
    DNNL(dnnl_primitive_desc_query(g->matmul_pd, dnnl_query_impl_info_str, 0, &g->impl));
    DNNL(dnnl_primitive_create(&g->matmul, g->matmul_pd));

    dnnl_primitive_desc_t pd;
    DNNL(dnnl_reorder_primitive_desc_create(&pd, &a32_md, eng, &a16_md, eng, NULL));
    DNNL(dnnl_primitive_create(&g->reorder_a, pd));
    DNNL(dnnl_primitive_desc_destroy(pd));
    DNNL(dnnl_reorder_primitive_desc_create(&pd, &b32_md, eng, &b16_md, eng, NULL));
    DNNL(dnnl_primitive_create(&g->reorder_b, pd));
    DNNL(dnnl_primitive_desc_destroy(pd));
    return 0;
}

static int onednn_matmul(const onednn_gemm *g, dnnl_stream_t st) {
    const dnnl_exec_arg_t args[] = { { DNNL_ARG_SRC, g->a16 }, { DNNL_ARG_WEIGHTS, g->b16 }, { DNNL_ARG_DST, g->c } };
    DNNL(dnnl_primitive_execute(g->matmul, st, 3, args));
    DNNL(dnnl_stream_wait(st));
    return 0;
}

static int onednn_reorders(const onednn_gemm *g, dnnl_stream_t st) {
    const dnnl_exec_arg_t ra[] = { { DNNL_ARG_FROM, g->a32 }, { DNNL_ARG_TO, g->a16 } };
    const dnnl_exec_arg_t rb[] = { { DNNL_ARG_FROM, g->b32 }, { DNNL_ARG_TO, g->b16 } };
    DNNL(dnnl_primitive_execute(g->reorder_a, st, 2, ra));
    DNNL(dnnl_primitive_execute(g->reorder_b, st, 2, rb));
    DNNL(dnnl_stream_wait(st));
    return 0;
}

static void onednn_destroy(onednn_gemm *g) {
    dnnl_primitive_destroy(g->matmul); dnnl_primitive_destroy(g->reorder_a); dnnl_primitive_destroy(g->reorder_b);
    dnnl_primitive_desc_destroy(g->matmul_pd);
    dnnl_memory_destroy(g->a32); dnnl_memory_destroy(g->b32); dnnl_memory_destroy(g->a16);
    dnnl_memory_destroy(g->b16); dnnl_memory_destroy(g->c);
}

/* x rounded to the nearest bf16, ties to even (finite x), as FP32 */
static float round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

/* max |C - R| / max |R| */
static double rel_diff(const float *C, const float *R, size_t n) {
    double diff = 0, big = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)C[i] - R[i]));
        big = fmax(big, fabs((double)R[i]));
    }
    return big > 0 ? diff / big : diff;
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 5;
    const char *only = argc > 2 ? argv[2] : NULL;
    if (rounds < 1 || rounds > 100) {
        fprintf(stderr, "usage: %s [rounds 1..100] [use, e.g. \"qkv forward\"]\n", argv[0]);
        return 2;
    }
    static const shape shapes[] = {
        { 0, 1, 8320, 576, 192, "qkv forward" }, { 0, 0, 8320, 192, 576, "qkv dX" },
        { 1, 0, 576, 192, 8320, "qkv dW" },      { 0, 1, 8320, 768, 192, "fc1 forward" },
        { 0, 0, 8320, 192, 768, "fc1 dX" },      { 1, 0, 768, 192, 8320, "fc1 dW" },
        { 0, 1, 8320, 192, 768, "fc2 forward" }, { 0, 0, 8320, 768, 192, "fc2 dX" },
        { 1, 0, 192, 768, 8320, "fc2 dW" },
    };
    const int threads = omp_get_max_threads();
    dnnl_engine_t eng;
    dnnl_stream_t st;
    DNNL(dnnl_engine_create(&eng, dnnl_cpu, 0));
    DNNL(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();
    printf("bf16 GEMM: vitgrad vs oneDNN %d.%d.%d matmul (runtime %s, ISA %s); %d thread%s (OMP_NUM_THREADS)\n",
           v->major, v->minor, v->patch, dnnl_runtime2str(v->cpu_runtime),
           dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()), threads, threads == 1 ? "" : "s");
    printf("vitgrad bf16 backend: %s — %s (%s); FP32: %s\n", vg_gemm_bf16_backend(), vg_gemm_bf16_kernel(),
           vg_gemm_bf16_reason(), vg_gemm_kernel());
    printf("GFLOP/s = 2·M·N·K / time, median of %d alternating rounds. vitgrad bf16 takes FP32 A, B: its time "
           "includes the FP32 → bf16 conversion. oneDNN: the bf16 matmul alone (inputs already bf16), and "
           "with the two f32 → bf16 reorders of A and B first (vitgrad's work). All write FP32 C.\n\n", rounds);
    printf("| shape M×N×K | op | use | thr | vitgrad bf16 | oneDNN bf16 | oneDNN bf16 + reorders | vitgrad / oneDNN "
           "| vitgrad / (oneDNN + reorders) | vitgrad FP32 | oneDNN kernel | C vs bf16 reference: oneDNN, vitgrad |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int shown = 0, mismatch = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const shape *s = &shapes[si];
        if (only && !strstr(s->use, only)) continue;
        const int M = s->M, N = s->N, K = s->K, lda = s->tA ? M : K, ldb = s->tB ? K : N;
        const size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
        float *A = aligned_alloc(64, sizeof(float) * na), *B = aligned_alloc(64, sizeof(float) * nb);
        float *Cv = aligned_alloc(64, sizeof(float) * nc), *Cd = aligned_alloc(64, sizeof(float) * nc);
        float *Cf = aligned_alloc(64, sizeof(float) * nc);
        void *A16 = aligned_alloc(64, 2 * na), *B16 = aligned_alloc(64, 2 * nb);
        if (!A || !B || !Cv || !Cd || !Cf || !A16 || !B16) { fprintf(stderr, "dnnl_gemm: out of memory\n"); return 1; }
        for (size_t i = 0; i < na; i++) A[i] = (float)rand() / RAND_MAX - 0.5f;
        for (size_t i = 0; i < nb; i++) B[i] = (float)rand() / RAND_MAX - 0.5f;
        onednn_gemm g;
        if (onednn_create(&g, eng, s, A, B, A16, B16, Cd) || onednn_reorders(&g, st)) return 1;
        const double flop = 2.0 * M * N * K;
        double vb[100], dm[100], dr[100], vf[100];
        for (int r = -1; r < rounds; r++) {                          /* round -1 warms up */
            double t0 = vg_now_s();
            vg_gemm_bf16(s->tA, s->tB, M, N, K, 1, A, lda, B, ldb, 0, Cv, N);
            double t1 = vg_now_s();
            if (onednn_matmul(&g, st)) return 1;
            double t2 = vg_now_s();
            if (onednn_reorders(&g, st) || onednn_matmul(&g, st)) return 1;
            double t3 = vg_now_s();
            vg_gemm(s->tA, s->tB, M, N, K, 1, A, lda, B, ldb, 0, Cf, N);
            double t4 = vg_now_s();
            if (r >= 0) {
                vb[r] = flop / (t1 - t0) * 1e-9; dm[r] = flop / (t2 - t1) * 1e-9;
                dr[r] = flop / (t3 - t2) * 1e-9; vf[r] = flop / (t4 - t3) * 1e-9;
            }
        }
        /* the reference: the FP32 GEMM on bf16-rounded copies (A, B reused: the timing is done) */
        for (size_t i = 0; i < na; i++) A[i] = round_bf16(A[i]);
        for (size_t i = 0; i < nb; i++) B[i] = round_bf16(B[i]);
        vg_gemm(s->tA, s->tB, M, N, K, 1, A, lda, B, ldb, 0, Cf, N);
        const double diff_d = rel_diff(Cd, Cf, nc), diff_v = rel_diff(Cv, Cf, nc);
        const double gvb = vg_median(vb, rounds), gdm = vg_median(dm, rounds);
        const double gdr = vg_median(dr, rounds), gvf = vg_median(vf, rounds);
        printf("| %dx%dx%d | %c%c | %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %s | %.1e, %.1e |\n", M, N, K,
               s->tA ? 'T' : 'N', s->tB ? 'T' : 'N', s->use, threads, gvb, gdm, gdr, gvb / gdm, gvb / gdr, gvf,
               g.impl, diff_d, diff_v);
        fflush(stdout);
        if (!(diff_d <= 1e-4)) {
            printf("dnnl_gemm: oneDNN's C is %.2e of max|C| from the bf16 reference on %s: a layout "
                   "error in this program\n", diff_d, s->use);
            mismatch = 1;
        }
        shown++;
        onednn_destroy(&g);
        free(A); free(B); free(Cv); free(Cd); free(Cf); free(A16); free(B16);
    }
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    if (!shown) { fprintf(stderr, "dnnl_gemm: no shape's use contains \"%s\"\n", only); return 2; }
    return mismatch;
}
