/* bf16_dp.c — the vdpbf16ps backend of the bf16 GEMM (gemm/bf16.c picks it): C = alpha ·
 * bf16(op(A)) · bf16(op(B)) + beta·C + bias, every input rounded to bf16 (round to nearest even, as
 * vcvtne2ps2bf16), products summed in FP32.
 *
 * Kernel (builds with AVX512_BF16): vdpbf16ps, which per FP32 lane adds two bf16 products, so the
 * operands are packed as *pairs*: two bf16 neighbours along k in one 32-bit word (k even in the low
 * half). Each operand is converted and packed once per call, whole:
 *   A (M×K) → MR-tall panels, panel[p·MR + r] = pair (A(r, 2p), A(r, 2p+1))
 *   B (K×N) → NR-wide panels, panel[p·NR + j] = pair (B(2p, j), B(2p+1, j))     (odd K: a zero pad)
 * The MR×NR = 12×32 tile lives in 24 zmm accumulators; per pair of k it takes two B loads, 12
 * broadcast A pairs and 24 vdpbf16ps. Loop nest over independent units of C (row block × column
 * block, handed out dynamically), K in blocks of KCP pairs outermost inside a unit (the B panel,
 * KCP×NR pairs = 16 KiB, stays in L1 over the unit's row panels; the A block, ≤ 240×KCP pairs =
 * 120 KiB, in L2 over its column panels). Every element's sum runs over the same K blocks in the
 * same order whatever the units and the thread count: bitwise deterministic.
 *
 * make test also runs this kernel with its intrinsics emulated in C (gemm/emulate/avx512_bf16.h,
 * -DVG_GEMM_EMULATE_BF16). Not built in the float64 library. */
#ifndef VG_DOUBLE
#include "gemm.h"
#include "bf16.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512BF16__) || (defined(VG_GEMM_EMULATE_BF16) && \
                                (defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))))
#include <immintrin.h>
#if defined(VG_GEMM_EMULATE_BF16)
#if !defined(__AVX512F__)
#include "gemm/emulate/avx512.h"
#endif
#include "gemm/emulate/avx512_bf16.h"
#endif
#define VG_BF16_DP 1
#endif

#include "common.h"
#include "backend.h"

#if defined(VG_BF16_DP)
/* Per-thread scratch (gemm/common.h); a multi-threaded product's packed operands belong to
 * the calling thread. */
static _Thread_local vg_gemm_scratch tl_A, tl_B;

enum { MR = 12, NR = 32, KCP = 128, MC = MR * 20, NC = NR * 24 };

/* ---------------------------------------------------------------------------------------------
 * Packing: rows [0, rows) of an operand, element (r, k) at src[r*rs + k*cs], into one W-wide
 * panel of kp pairs, dst[p*W + r]; rows past `rows` and the k past K are zero. */
#include "bf16_pairs.h"

static VG_ALWAYS_INLINE void pack_panel(uint32_t *restrict dst, const float *src, long rs, long cs,
                                        int rows, int K, int W) {
    const int kp = (K + 1) / 2;
    uint32_t tmp[16];
    if (rs == 1) {                      /* each k's rows side by side: two rows → pairs, in order */
        for (int p = 0; p < kp; p++) {
            const float *lo = src + 2L * p * cs, *hi = 2 * p + 1 < K ? lo + cs : NULL;
            for (int r0 = 0; r0 < W; r0 += 16) {
                pairs_across_rows(tmp, lo + r0, hi ? hi + r0 : NULL, rows - r0);
                memcpy(dst + (long)p * W + r0, tmp, sizeof(uint32_t) * (size_t)(W - r0 < 16 ? W - r0 : 16));
            }
        }
        return;
    }
    for (int r = 0; r < W; r++) {
        if (r >= rows) { for (int p = 0; p < kp; p++) dst[(long)p * W + r] = 0; continue; }
        const float *s = src + r * rs;
        if (cs == 1) {                  /* k contiguous: 32 values → 16 pairs, spread over panel */
            for (int k0 = 0; k0 < K; k0 += 32) {
                pairs_along_k(tmp, s + k0, K - k0);
                const int np = (K - k0 < 32 ? K - k0 + 1 : 32) / 2;
                for (int i = 0; i < np; i++) dst[(long)(k0 / 2 + i) * W + r] = tmp[i];
            }
        } else {
            for (int p = 0; p < kp; p++) {
                const uint32_t lo = vg_f32_to_bf16(s[2L * p * cs]);
                const uint32_t hi = 2 * p + 1 < K ? vg_f32_to_bf16(s[(2L * p + 1) * cs]) : 0;
                dst[(long)p * W + r] = lo | hi << 16;
            }
        }
    }
}
static void pack_A_panel(uint32_t *dst, const float *src, long rs, long cs, int rows, int K) {
    pack_panel(dst, src, rs, cs, rows, K, MR);
}
static void pack_B_panel(uint32_t *dst, const float *src, long rs, long cs, int rows, int K) {
    pack_panel(dst, src, rs, cs, rows, K, NR);
}

/* ---------------------------------------------------------------------------------------------
 * Micro-kernel: C[0:mr, 0:nr] = alpha·(A panel · B panel) + beta·C + bias over kcp pairs
 * (beta 0: C's old contents ignored; bias nr values or NULL), stored as gemm/fp32.c's kernels do. */
/* the pair at *p in all 16 lanes, built in a register (vpbroadcastd). Never through a stack array:
 * where -march=native prefers 256-bit vectors, gcc stores such an array as two ymm halves and the
 * zmm reload stalls on store forwarding, once per row per k (a 5.5x slower kernel, measured). */
#if defined(VG_GEMM_EMULATE_BF16)
static VG_ALWAYS_INLINE __m512bh broadcast_pair(const uint32_t *p) {
    __m512bh r;
    for (int i = 0; i < 16; i++) { r.w[2 * i] = (uint16_t)*p; r.w[2 * i + 1] = (uint16_t)(*p >> 16); }
    return r;
}
static VG_ALWAYS_INLINE __m512bh load_pairs(const uint32_t *p) {
    __m512bh r;
    memcpy(&r, p, 64);
    return r;
}
#else
static VG_ALWAYS_INLINE __m512bh broadcast_pair(const uint32_t *p) {
    return (__m512bh)_mm512_set1_epi32((int)*p);
}
static VG_ALWAYS_INLINE __m512bh load_pairs(const uint32_t *p) {
    return (__m512bh)_mm512_loadu_si512(p);
}
#endif

static void micro_kernel(int kcp, const uint32_t *restrict a, const uint32_t *restrict b, float *c,
                         long ldc, int mr, int nr, float alpha, float beta, const float *bias) {
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define ROW_ZERO(r) __m512 c##r##_0 = _mm512_setzero_ps(), c##r##_1 = _mm512_setzero_ps();
#define ROW_DP(r) { const __m512bh x = broadcast_pair(a + r);                                   \
                    c##r##_0 = _mm512_dpbf16_ps(c##r##_0, x, b0);                               \
                    c##r##_1 = _mm512_dpbf16_ps(c##r##_1, x, b1); }
#define ROW_STORE(r) if (r < mr) store_row(c + r * ldc, c##r##_0, c##r##_1, alpha, beta, bias, m0, m1);
    ROWS(ROW_ZERO)
    for (int p = 0; p < kcp; p++) {
        const __m512bh b0 = load_pairs(b), b1 = load_pairs(b + 16);
        ROWS(ROW_DP)
        a += MR; b += NR;
    }
    const __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xffff : (1u << nr) - 1);
    const __mmask16 m1 = (__mmask16)(nr >= 32 ? 0xffff : nr > 16 ? (1u << (nr - 16)) - 1 : 0);
    ROWS(ROW_STORE)
#undef ROWS
#undef ROW_ZERO
#undef ROW_DP
#undef ROW_STORE
}

/* One unit of C: row block × column block, every K block in order. */
static void dp_unit(const gemm_problem *p, const uint32_t *bufA, const uint32_t *bufB, int u,
                    int col_blocks, int mc, int nc, int kp, int kcp_n) {
    const int M = p->M, N = p->N;
    const int i0 = (u / col_blocks) * mc, j0 = (u % col_blocks) * nc;
    const int i1 = i0 + mc < M ? i0 + mc : M, j1 = j0 + nc < N ? j0 + nc : N;
    for (int pc = 0; pc < kp; pc += kcp_n) {
        const int kcp = kp - pc < kcp_n ? kp - pc : kcp_n;
        const float beta = pc == 0 ? p->beta : 1;                        /* later K blocks add */
        for (int j = j0; j < j1; j += NR) {
            const uint32_t *bp = bufB + (long)j * kp + (long)pc * NR;
            const float *bias = pc == 0 && p->bias ? p->bias + j : NULL;
            for (int i = i0; i < i1; i += MR)
                micro_kernel(kcp, bufA + (long)i * kp + (long)pc * MR, bp,
                             p->C + (long)i * p->ldc + j, p->ldc,
                             i1 - i < MR ? i1 - i : MR, j1 - j < NR ? j1 - j : NR,
                             p->alpha, beta, bias);
        }
    }
}

/* The product on nt threads (1: the calling thread alone, e.g. inside a parallel region). */
static void gemm_dp(const gemm_problem *p, int nt) {
    const int M = p->M, N = p->N, K = p->K, kp = (K + 1) / 2;
    const int mpanels = ceil_div(M, MR), npanels = ceil_div(N, NR);
    uint32_t *bufA = vg_gemm_scratch_get(&tl_A, sizeof(uint32_t) * (size_t)mpanels * MR * kp);
    uint32_t *bufB = vg_gemm_scratch_get(&tl_B, sizeof(uint32_t) * (size_t)npanels * NR * kp);
    if (!bufA || !bufB) abort();                                         /* out of memory */
    const int kcp_n = balanced_block(kp, KCP, 1);
    const unit_grid g = make_unit_grid(M, N, MC, NC, MR, NR, nt);
    const int mc = g.mc, nc = g.nc, col_blocks = g.col_blocks, units = g.units;
#define PACK_A(i) pack_A_panel(bufA + (long)(i) * MR * kp, p->A + (long)(i) * MR * p->rsA, p->rsA, p->csA, \
                               M - (i) * MR < MR ? M - (i) * MR : MR, K)
#define PACK_B(j) pack_B_panel(bufB + (long)(j) * NR * kp, p->B + (long)(j) * NR * p->csB, p->csB, p->rsB, \
                               N - (j) * NR < NR ? N - (j) * NR : NR, K)
    if (nt == 1) {          /* no parallel region: attention calls this thousands of times a step */
        for (int i = 0; i < mpanels; i++) PACK_A(i);
        for (int j = 0; j < npanels; j++) PACK_B(j);
        for (int u = 0; u < units; u++) dp_unit(p, bufA, bufB, u, col_blocks, mc, nc, kp, kcp_n);
        return;
    }
    #pragma omp parallel num_threads(nt)
    {
        #pragma omp for schedule(static) nowait
        for (int i = 0; i < mpanels; i++) PACK_A(i);
        #pragma omp for schedule(static)
        for (int j = 0; j < npanels; j++) PACK_B(j);
        #pragma omp for schedule(dynamic, 1)
        for (int u = 0; u < units; u++) dp_unit(p, bufA, bufB, u, col_blocks, mc, nc, kp, kcp_n);
    }
#undef PACK_A
#undef PACK_B
}

void vg_bf16_dp_gemm(const gemm_problem *p, int nt) { gemm_dp(p, nt); }
#else
void vg_bf16_dp_gemm(const gemm_problem *p, int nt) { (void)p; (void)nt; abort(); }
#endif  /* VG_BF16_DP */

bool vg_bf16_dp_compiled(const char **why) {
#if defined(VG_BF16_DP)
    (void)why;
    return true;
#else
    if (why) *why = "this build has no AVX512_BF16 (-march=native on a CPU without it)";
    return false;
#endif
}

const char *vg_bf16_dp_name(void) {
#if defined(VG_BF16_DP) && defined(VG_GEMM_EMULATE_BF16)
    return "avx512_bf16 vdpbf16ps 12x32, emulated in C";
#else
    return "avx512_bf16 vdpbf16ps 12x32";
#endif
}
#endif  /* VG_DOUBLE */
