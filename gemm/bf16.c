/* bf16.c — the bf16 GEMM's front end (what --amp's matrix products call): the entry points, the
 * choice of backend, and the two backends that need no bf16 hardware.
 *
 * The choice is made once per process, by the caller (vg_gemm_bf16_use, ./train --amp-kernel), by
 * the environment (VG_BF16_GEMM), or else by "auto" from what the CPU has (isa/cpu.c):
 *   1. AMX tiles where CPUID, XCR0 and the kernel's permission allow them: tdpbf16ps runs at
 *      1,024 FLOP/cycle/core, 14x the FP32 FMAs (3,376 vs 239.6 GFLOP/s per core, measured on an
 *      AMX Xeon).
 *   2. vdpbf16ps on AMD: Zen 4 and Zen 5 run it at twice their FP32 FMA rate (233 vs 117 GFLOP/s
 *      per core on Zen 4, measured).
 *   3. Otherwise FP32: on Intel cores without AMX (Emerald Rapids with AMX hidden, 85.7 vs 172.8;
 *      the AMX Xeon, 119.7 vs 239.6) vdpbf16ps runs at half the FMA rate, so a bf16 GEMM cannot
 *      beat FP32 there, and --amp would only be slower. The "fp32" backend is the FP32 GEMM on
 *      unrounded inputs: --amp then gives the same bits as a run without it, and says so.
 * The choice never depends on timing, so the same machine always makes the same one (determinism).
 * "rounded" (bf16-rounded FP32 copies, then the FP32 GEMM) is there for who wants bf16 rounding on
 * any CPU; it is slower than FP32 by the copies. Not built in the float64 library. */
#ifndef VG_DOUBLE
#include "gemm.h"
#include "bf16.h"
#include "backend.h"
#include "isa/isa.h"
#include "tensor/tensor.h"
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum backend { B_AMX, B_DP, B_ROUNDED, B_FP32, B_COUNT };
static const char *const names[B_COUNT] = { "amx", "vdpbf16ps", "rounded", "fp32" };

static int chosen = -1;                 /* the backend in use; -1 until the first product or use() */
static char reason[256];
static pthread_mutex_t choice_lock = PTHREAD_MUTEX_INITIALIZER;

bool vg_gemm_bf16_available(const char *name, const char **why) {
    const char *w = NULL;
    bool ok = false;
    if (strcmp(name, "amx") == 0) ok = vg_amx_usable(&w);
    else if (strcmp(name, "vdpbf16ps") == 0) ok = vg_bf16_dp_usable(&w);
    else if (strcmp(name, "rounded") == 0 || strcmp(name, "fp32") == 0 || strcmp(name, "auto") == 0) ok = true;
    else w = "not a bf16 GEMM backend (amx, vdpbf16ps, rounded, fp32, auto)";
    if (why) *why = ok ? NULL : w;
    return ok;
}

static int auto_choice(void) {
    const char *amx_why = NULL, *dp_why = NULL;
    if (vg_amx_usable(&amx_why)) {
        snprintf(reason, sizeof reason, "auto: AMX tiles usable");
        return B_AMX;
    }
    const vg_cpu_features *cpu = vg_cpu();
    const bool dp = vg_bf16_dp_usable(&dp_why);
    if (dp && !cpu->intel) {
        snprintf(reason, sizeof reason, "auto: no AMX (%s); vdpbf16ps runs at twice the FP32 FMA rate "
                 "on AMD Zen 4/5", amx_why);
        return B_DP;
    }
    if (dp)
        snprintf(reason, sizeof reason, "auto: no AMX (%s); vdpbf16ps runs at half the FP32 FMA rate on "
                 "Intel cores, so --amp runs FP32 GEMMs (same bits as without --amp)", amx_why);
    else
        snprintf(reason, sizeof reason, "auto: no AMX (%s) and %s, so --amp runs FP32 GEMMs (same bits as "
                 "without --amp)", amx_why, dp_why);
    return B_FP32;
}

/* Sets the backend; false with vg_error when it cannot run here. Called with choice_lock held. */
static bool use_locked(const char *name, const char *by) {
    const char *why = NULL;
    if (!vg_gemm_bf16_available(name, &why)) {
        vg_set_error("bf16 GEMM backend \"%s\": %s", name, why);
        return false;
    }
    if (strcmp(name, "auto") == 0) { chosen = auto_choice(); return true; }
    for (int b = 0; b < B_COUNT; b++)
        if (strcmp(name, names[b]) == 0) chosen = b;
    snprintf(reason, sizeof reason, "chosen by %s", by);
    return true;
}

bool vg_gemm_bf16_use(const char *name) {
    pthread_mutex_lock(&choice_lock);
    const bool ok = use_locked(name, "the caller");
    pthread_mutex_unlock(&choice_lock);
    return ok;
}

static int backend(void) {
    int b;
    #pragma omp atomic read
    b = chosen;
    if (b >= 0) return b;
    pthread_mutex_lock(&choice_lock);
    if (chosen < 0) {
        const char *env = getenv("VG_BF16_GEMM");
        if (!env || !*env || !use_locked(env, "VG_BF16_GEMM")) {
            if (env && *env) fprintf(stderr, "warning: VG_BF16_GEMM=%s ignored: %s\n", env, vg_error());
            chosen = auto_choice();
        }
    }
    b = chosen;
    pthread_mutex_unlock(&choice_lock);
    return b;
}

const char *vg_gemm_bf16_backend(void) { return names[backend()]; }
const char *vg_gemm_bf16_reason(void) { (void)backend(); return reason; }

const char *vg_gemm_bf16_kernel(void) {
    static char fp32_name[96], rounded_name[96];
    switch (backend()) {
    case B_AMX: return vg_amx_name();
    case B_DP: return vg_bf16_dp_name();
    case B_ROUNDED:
        snprintf(rounded_name, sizeof rounded_name, "bf16-rounded copies, FP32 GEMM (%s)", vg_gemm_kernel());
        return rounded_name;
    default:
        snprintf(fp32_name, sizeof fp32_name, "FP32 GEMM (%s), inputs not rounded", vg_gemm_kernel());
        return fp32_name;
    }
}

/* The FP32 GEMM on operands A, B laid out as p's (p's own, or their rounded copies). */
static void fp32_product(const gemm_problem *p, const float *A, const float *B) {
    if (p->bias) vg_gemm_bias(p->transA, p->transB, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->bias, p->C, (int)p->ldc);
    else vg_gemm(p->transA, p->transB, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, p->C, (int)p->ldc);
}

/* "rounded": bf16-rounded FP32 copies of A and B (same layout), then the FP32 GEMM. Its products
 * are the exact FP32 values of the bf16 ones; only the order of the FP32 additions differs (and
 * results below FLT_MIN, which the bf16 instructions flush to zero). */
static _Thread_local vg_gemm_scratch tl_A, tl_B;
static void gemm_rounded(const gemm_problem *p, int nt) {
    const long na = (long)((p->transA ? p->K : p->M) - 1) * p->lda + (p->transA ? p->M : p->K);
    const long nb = (long)((p->transB ? p->N : p->K) - 1) * p->ldb + (p->transB ? p->K : p->N);
    float *ra = vg_gemm_scratch_get(&tl_A, sizeof(float) * (size_t)na);
    float *rb = vg_gemm_scratch_get(&tl_B, sizeof(float) * (size_t)nb);
    if (!ra || !rb) abort();                                             /* out of memory */
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (long i = 0; i < na; i++) ra[i] = vg_round_bf16(p->A[i]);
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (long i = 0; i < nb; i++) rb[i] = vg_round_bf16(p->B[i]);
    fp32_product(p, ra, rb);
}

/* One product on nt threads (single: the calling thread alone), vg_gemm_threads. */
static void gemm_run(gemm_problem p, int single) {
    if (p.M <= 0 || p.N <= 0) return;
    const int b = backend();
    if (b == B_FP32) { fp32_product(&p, p.A, p.B); return; }
    if (p.K <= 0 || p.alpha == 0) { scale_c(&p, 0, p.M, 0, p.N); return; }
    const int nt = single ? 1 : vg_gemm_threads((long)p.M * p.N * p.K);
    if (b == B_AMX) vg_amx_gemm(&p, nt);
    else if (b == B_DP) vg_bf16_dp_gemm(&p, nt);
    else gemm_rounded(&p, nt);
}

void vg_gemm_bf16(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc) {
    gemm_run(make_problem(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL), 0);
}

void vg_gemm_bf16_bias(int transA, int transB, int M, int N, int K, float alpha, const float *A,
                       int lda, const float *B, int ldb, const float *bias, float *C, int ldc) {
    gemm_run(make_problem(transA, transB, M, N, K, alpha, A, lda, B, ldb, 0, C, ldc, bias), 0);
}

void vg_gemm_bf16_batched(int batch, int transA, int transB, int M, int N, int K, float alpha,
                          const float *A, int lda, long strideA, const float *B, int ldb, long strideB,
                          float beta, float *C, int ldc, long strideC) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    if (backend() == B_FP32) {
        vg_gemm_batched(batch, transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC);
        return;
    }
    const long work = (long)M * N * K;
    const int nt = vg_gemm_threads(work * batch);
    if (nt > 1 && batch < 2 * nt) {            /* few products: each on every thread */
        for (int b = 0; b < batch; b++)
            vg_gemm_bf16(transA, transB, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb,
                         beta, C + b * strideC, ldc);
        return;
    }
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int b = 0; b < batch; b++)
        gemm_run(make_problem(transA, transB, M, N, K, alpha, A + b * strideA, lda, B + b * strideB,
                              ldb, beta, C + b * strideC, ldc, NULL), 1);
}
#endif  /* VG_DOUBLE */
