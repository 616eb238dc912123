/* bf16_dp.c — the vdpbf16ps backend of the bf16 GEMM (gemm/bf16.c picks it): C = alpha ·
 * bf16(op(A)) · bf16(op(B)) + beta·C + bias, every input rounded to bf16 (round to nearest even, as
 * vcvtne2ps2bf16), products summed in FP32.
 *
 * Kernel (builds with AVX512_BF16): vdpbf16ps, which per FP32 lane adds two bf16 products, so the
 * operands are packed as *pairs*: two bf16 neighbours along k in one 32-bit word (k even in the low
 * half). Each operand is converted and packed once per call:
 *   A (M×K) → MR-tall panels, panel[p·MR + r] = pair (A(r, 2p), A(r, 2p+1))
 *   B (K×N) → NR-wide panels, panel[p·NR + j] = pair (B(2p, j), B(2p+1, j))     (odd K: a zero pad)
 * in vectors (16 rows × 16 pairs transposed in registers where k is contiguous; 48 rows per k pair
 * where rows lie side by side). The packing is bound by memory, so packed data should not go out
 * to memory and come back: where a unit of C spans all columns, its thread packs its own A rows
 * just before use; a small C over a long K (dW) runs in chunks of K blocks that fit in L2.
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
#include <math.h>
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
#include "isa/isa.h"

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
    if (rs == 1) {                      /* each k's rows side by side: two rows → pairs, in order */
        for (int p = 0; p < kp; p++) {
            const float *lo = src + 2L * p * cs, *hi = 2 * p + 1 < K ? lo + cs : NULL;
            for (int r0 = 0; r0 < W; r0 += 16) {
                const __mmask16 m = (__mmask16)(W - r0 >= 16 ? 0xffff : (1u << (W - r0)) - 1);
                _mm512_mask_storeu_epi32(dst + (long)p * W + r0, m,
                                         pairs_across_rows_v(lo + r0, hi ? hi + r0 : NULL, rows - r0));
            }
        }
        return;
    }
    if (cs == 1) {    /* k contiguous: per 16 rows and 32 k, 16 vectors of 16 pairs, transposed */
        __m512i zero;
        memset(&zero, 0, sizeof zero);
        for (int r0 = 0; r0 < W; r0 += 16) {
            const int nrow = W - r0 < 16 ? W - r0 : 16, live = rows - r0 < nrow ? rows - r0 : nrow;
            const __mmask16 m = (__mmask16)(nrow == 16 ? 0xffff : (1u << nrow) - 1);
            for (int k0 = 0; k0 < K; k0 += 32) {
                const int np = (K - k0 < 32 ? K - k0 + 1 : 32) / 2;
                __m512i v[16];
#define LOAD(r) v[r] = r < live ? pairs_along_k_v(src + (r0 + r) * rs + k0, K - k0) : zero;
#define STORE(q) if (q < np) _mm512_mask_storeu_epi32(dst + (long)(k0 / 2 + q) * W + r0, m, v[q]);
                X16(LOAD)
                transpose16_epi32(v);
                X16(STORE)
#undef LOAD
#undef STORE
            }
        }
        return;
    }
    for (int r = 0; r < W; r++) {       /* neither: one value at a time */
        const float *s = src + r * rs;
        for (int p = 0; p < kp; p++) {
            const uint32_t lo = r < rows ? vg_f32_to_bf16(s[2L * p * cs]) : 0;
            const uint32_t hi = r < rows && 2 * p + 1 < K ? vg_f32_to_bf16(s[(2L * p + 1) * cs]) : 0;
            dst[(long)p * W + r] = lo | hi << 16;
        }
    }
}
static void pack_A_panel(uint32_t *dst, const float *src, long rs, long cs, int rows, int K) {
    pack_panel(dst, src, rs, cs, rows, K, MR);
}
static void pack_B_panel(uint32_t *dst, const float *src, long rs, long cs, int rows, int K) {
    pack_panel(dst, src, rs, cs, rows, K, NR);
}
/* A whose rows lie side by side (op(A) = Xᵀ, dW's products), k pairs [p0, p1): per pair, the two
 * rows k, k+1 read once, front to back, 48 at a time (three 16-lane vectors of pairs) and split
 * into four MR = 12-row panels with vpermt2d; rows ≥ M are zero. */
static void pack_A_side_by_side(uint32_t *restrict bufA, int kp, int mpanels, const float *A, long cs,
                                int M, int K, int p0, int p1) {
    _Static_assert(MR == 12, "four 12-row panels are three 16-lane vectors");
    static const uint32_t i1[16] = {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23},
                          i2[16] = {8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19},
                          i3[16] = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    __m512i idx1, idx2, idx3;
    memcpy(&idx1, i1, 64); memcpy(&idx2, i2, 64); memcpy(&idx3, i3, 64);
    const __mmask16 m = 0x0fff;
    const long pstride = (long)MR * kp;
    for (int p = p0; p < p1; p++) {
        const float *lo = A + 2L * p * cs, *hi = 2 * p + 1 < K ? lo + cs : NULL;
        for (int g = 0; 4 * g < mpanels; g++) {
            const int r0 = 48 * g, rows = M - r0, npan = mpanels - 4 * g;
            const __m512i v0 = pairs_across_rows_v(lo + r0, hi ? hi + r0 : NULL, rows);
            const __m512i v1 = pairs_across_rows_v(lo + r0 + 16, hi ? hi + r0 + 16 : NULL, rows - 16);
            const __m512i v2 = pairs_across_rows_v(lo + r0 + 32, hi ? hi + r0 + 32 : NULL, rows - 32);
            uint32_t *d = bufA + 4 * g * pstride + (long)p * MR;
            _mm512_mask_storeu_epi32(d, m, v0);
            if (npan > 1) _mm512_mask_storeu_epi32(d + pstride, m, _mm512_permutex2var_epi32(v0, idx1, v1));
            if (npan > 2) _mm512_mask_storeu_epi32(d + 2 * pstride, m, _mm512_permutex2var_epi32(v1, idx2, v2));
            if (npan > 3) _mm512_mask_storeu_epi32(d + 3 * pstride, m, _mm512_permutex2var_epi32(v2, idx3, v2));
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * Micro-kernel: C[0:mr, 0:nr] = alpha·(A panel · B panel) + beta·C + bias over kcp pairs
 * (beta 0: C's old contents ignored; bias nr values or NULL), stored as the FP32 kernels do (gemm/driver.h). */
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
static VG_ALWAYS_INLINE __m512bh load_panel_pairs(const uint32_t *p) {
    __m512bh r;
    memset(&r, 0, 64);
    memcpy(&r, p, 4 * MR);
    return r;
}
#else
static VG_ALWAYS_INLINE __m512bh broadcast_pair(const uint32_t *p) {
    return (__m512bh)_mm512_set1_epi32((int)*p);
}
static VG_ALWAYS_INLINE __m512bh load_pairs(const uint32_t *p) {
    return (__m512bh)_mm512_loadu_si512(p);
}
/* the MR = 12 rows' pairs at one k pair of an A panel, in lanes 0–11 (the rest 0) */
static VG_ALWAYS_INLINE __m512bh load_panel_pairs(const uint32_t *p) {
    return (__m512bh)_mm512_maskz_loadu_epi32((__mmask16)((1u << MR) - 1), p);
}
#endif

/* A tile column with at most NARROW live columns (the 33rd or the 65th of attention's S = QKᵀ and
 * dÂ = dO·Vᵀ, 33 or 65 tokens): the tile's rows in the vector lanes instead of its columns, one
 * vdpbf16ps per live column per k pair instead of 12 for a 16-wide half of the tile. Each element
 * still adds its pairs in the same order with the same instruction (its two products commute), and
 * is stored by the same formula c = alpha·acc + (beta·c + bias): the same bits as the 12×32 tile. */
enum { NARROW = 4 };
static void micro_kernel_narrow(int kcp, const uint32_t *restrict a, const uint32_t *restrict b, float *c,
                                long ldc, int mr, int nr, float alpha, float beta, const float *bias) {
    /* all NARROW columns every k pair (the panel is NR wide, zero past N): a loop count of nr (or an
     * array) kept the accumulators on the stack, a store and a reload per vdpbf16ps (objdump) */
    _Static_assert(NARROW == 4, "four named accumulators");
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    for (int p = 0; p < kcp; p++) {
        const __m512bh rows = load_panel_pairs(a);
        c0 = _mm512_dpbf16_ps(c0, rows, broadcast_pair(b));
        c1 = _mm512_dpbf16_ps(c1, rows, broadcast_pair(b + 1));
        c2 = _mm512_dpbf16_ps(c2, rows, broadcast_pair(b + 2));
        c3 = _mm512_dpbf16_ps(c3, rows, broadcast_pair(b + 3));
        a += MR; b += NR;
    }
    const __m512 acc[NARROW] = {c0, c1, c2, c3};
    for (int j = 0; j < nr; j++) {
        float v[16];
        _mm512_mask_storeu_ps(v, (__mmask16)0xffff, acc[j]);
        for (int r = 0; r < mr; r++) {
            float *cr = c + r * ldc + j;
            float t = bias ? bias[j] : 0.0f;
            if (beta != 0) t = fmaf(beta, *cr, t);
            *cr = fmaf(alpha, v[r], t);
        }
    }
}

static void micro_kernel(int kcp, const uint32_t *restrict a, const uint32_t *restrict b, float *c,
                         long ldc, int mr, int nr, float alpha, float beta, const float *bias) {
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define ROW_ZERO(r) __m512 c##r##_0 = _mm512_setzero_ps(), c##r##_1 = _mm512_setzero_ps();
#define ROW_DP(r) { const __m512bh x = broadcast_pair(a + r);                                   \
                    c##r##_0 = _mm512_dpbf16_ps(c##r##_0, x, b0);                               \
                    c##r##_1 = _mm512_dpbf16_ps(c##r##_1, x, b1); }
#define ROW_STORE(r) if (r < mr) store_row(c + r * ldc, c##r##_0, c##r##_1, alpha, beta, bias, m0, m1);
#define ROW_DP_HALF(r) c##r##_0 = _mm512_dpbf16_ps(c##r##_0, broadcast_pair(a + r), b0);
    if (nr <= NARROW) { micro_kernel_narrow(kcp, a, b, c, ldc, mr, nr, alpha, beta, bias); return; }
    ROWS(ROW_ZERO)
    if (nr <= 16)            /* a tile column at most half full (attention's 33×33 S): its half */
        for (int p = 0; p < kcp; p++) {
            const __m512bh b0 = load_pairs(b);
            ROWS(ROW_DP_HALF)
            a += MR; b += NR;
        }
    else
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
#undef ROW_DP_HALF
#undef ROW_STORE
}

/* One unit of C: row block × column block, every K block in order; bufA holds A's panels from row
 * a_row0 on. */
static void dp_unit(const gemm_problem *p, const uint32_t *bufA, const uint32_t *bufB, int u,
                    int col_blocks, int mc, int nc, int kp, int kcp_n, int a_row0) {
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
                micro_kernel(kcp, bufA + (long)(i - a_row0) * kp + (long)pc * MR, bp,
                             p->C + (long)i * p->ldc + j, p->ldc,
                             i1 - i < MR ? i1 - i : MR, j1 - j < NR ? j1 - j : NR,
                             p->alpha, beta, bias);
        }
    }
}

/* A unit whose rows of C span every column (one column block, the forward and dX products): its
 * A panels packed by the thread that runs it, into its own buffer (≤ MC × kp pairs, in L2), just
 * before use; packed whole, vit-tiny's forward X is 3.2 MB written out to memory and read back. */
static _Thread_local vg_gemm_scratch tl_Aunit;
static void dp_unit_packing_A(const gemm_problem *p, const uint32_t *bufB, int u, int mc, int nc,
                              int kp, int kcp_n) {
    const int i0 = u * mc, rows = p->M - i0 < mc ? p->M - i0 : mc;
    uint32_t *a = vg_gemm_scratch_get(&tl_Aunit, sizeof(uint32_t) * (size_t)round_up(rows, MR) * kp);
    if (!a) abort();                                                     /* out of memory */
    for (int q = 0; q * MR < rows; q++)
        pack_A_panel(a + (long)q * MR * kp, p->A + (long)(i0 + q * MR) * p->rsA, p->rsA, p->csA,
                     rows - q * MR < MR ? rows - q * MR : MR, p->K);
    dp_unit(p, a, bufB, u, 1, mc, nc, kp, kcp_n, i0);
}

/* The product on nt threads (1: the calling thread alone, e.g. inside a parallel region), K in
 * blocks of kcp_n pairs: B packed whole; A packed whole too, or unit by unit where a unit spans
 * all of C's columns (and A's rows are not side by side); then the units of C. */
static void gemm_dp_whole(const gemm_problem *p, int nt, int kcp_n) {
    const int M = p->M, N = p->N, K = p->K, kp = (K + 1) / 2;
    const int mpanels = ceil_div(M, MR), npanels = ceil_div(N, NR);
    const unit_grid g = make_unit_grid(M, N, MC, NC, MR, NR, nt);
    const int mc = g.mc, nc = g.nc, col_blocks = g.col_blocks, units = g.units;
    /* A's packing units: panels, or runs of PU pairs where A's rows lie side by side; none where
     * each unit packs its own */
    enum { PU = 64 };
    const int side = p->rsA == 1, per_unit = col_blocks == 1 && !side;
    const int aunits = per_unit ? 0 : side ? ceil_div(kp, PU) : mpanels;
    uint32_t *bufA = per_unit ? NULL : vg_gemm_scratch_get(&tl_A, sizeof(uint32_t) * (size_t)mpanels * MR * kp);
    uint32_t *bufB = vg_gemm_scratch_get(&tl_B, sizeof(uint32_t) * (size_t)npanels * NR * kp);
    if ((!per_unit && !bufA) || !bufB) abort();                          /* out of memory */
#define PACK_A(i) (side ? pack_A_side_by_side(bufA, kp, mpanels, p->A, p->csA, M, K, (i) * PU,         \
                                              (i) * PU + PU < kp ? (i) * PU + PU : kp)                 \
                        : pack_A_panel(bufA + (long)(i) * MR * kp, p->A + (long)(i) * MR * p->rsA,      \
                                       p->rsA, p->csA, M - (i) * MR < MR ? M - (i) * MR : MR, K))
#define PACK_B(j) pack_B_panel(bufB + (long)(j) * NR * kp, p->B + (long)(j) * NR * p->csB, p->csB, p->rsB, \
                               N - (j) * NR < NR ? N - (j) * NR : NR, K)
#define UNIT(u) (per_unit ? dp_unit_packing_A(p, bufB, u, mc, nc, kp, kcp_n)                           \
                          : dp_unit(p, bufA, bufB, u, col_blocks, mc, nc, kp, kcp_n, 0))
    if (nt == 1) {          /* no parallel region: attention calls this thousands of times a step */
        for (int i = 0; i < aunits; i++) PACK_A(i);
        for (int j = 0; j < npanels; j++) PACK_B(j);
        for (int u = 0; u < units; u++) UNIT(u);
        return;
    }
    #pragma omp parallel num_threads(nt)
    {
        #pragma omp for schedule(static) nowait
        for (int i = 0; i < aunits; i++) PACK_A(i);
        #pragma omp for schedule(static)
        for (int j = 0; j < npanels; j++) PACK_B(j);
        #pragma omp for schedule(dynamic, 1)
        for (int u = 0; u < units; u++) UNIT(u);
    }
#undef PACK_A
#undef PACK_B
#undef UNIT
}

/* A small C and a long K (the dW products: 576×192 over 8,320 tokens) in chunks of whole K blocks,
 * each packed and used while it is in L2 (≤ 512 KiB of pairs): packed whole, vit-tiny's qkv dW's
 * operands are 12.8 MB, written out to memory and read back. The chunks add to C in the order the
 * K blocks would: the same bits as one pass. */
static void gemm_dp(const gemm_problem *p, int nt) {
    const int kp = (p->K + 1) / 2, kcp_n = balanced_block(kp, KCP, 1);
    const long mp = round_up(p->M, MR), np = round_up(p->N, NR);
    if (mp * np * 4 <= (1L << 20) && kp >= 4 * kcp_n) {
        const long fit = (512L << 10) / 4 / ((mp + np) * kcp_n);
        const int chunk = (fit > 1 ? (int)fit : 1) * kcp_n;
        for (int c0 = 0; c0 < kp; c0 += chunk) {
            gemm_problem s = *p;
            const long k0 = 2L * c0;
            s.K = p->K - k0 < 2L * chunk ? (int)(p->K - k0) : 2 * chunk;
            s.A = p->A + k0 * p->csA;
            s.B = p->B + k0 * p->rsB;
            if (c0 > 0) { s.beta = 1; s.bias = NULL; }
            gemm_dp_whole(&s, nt, kcp_n);
        }
        return;
    }
    gemm_dp_whole(p, nt, kcp_n);
}

void vg_bf16_dp_gemm(const gemm_problem *p, int nt) { gemm_dp(p, nt); }
#else
void vg_bf16_dp_gemm(const gemm_problem *p, int nt) { (void)p; (void)nt; abort(); }
#endif  /* VG_BF16_DP */

bool vg_bf16_dp_usable(const char **why) {
#if defined(VG_BF16_DP) && defined(VG_GEMM_EMULATE_BF16)
    const bool ok = vg_isa_allows(VG_ISA_AVX2) && vg_isa_within_cap(VG_ISA_AVX512BF16);
    if (!ok && why) *why = "VG_ISA caps the level below avx512bf16 (or no AVX2+FMA to emulate it)";
    return ok;
#elif defined(VG_BF16_DP)
    const bool ok = vg_isa_allows(VG_ISA_AVX512BF16);
    if (!ok && why)
        *why = vg_isa_best() >= VG_ISA_AVX512BF16 && vg_isa_best() != VG_ISA_NEON
                   ? "VG_ISA caps the level below avx512bf16"
                   : "the CPU has no AVX512_BF16 (CPUID.(7,1):EAX bit 5) with AVX-512";
    return ok;
#else
    if (why) *why = "this build has no vdpbf16ps kernel (not x86-64)";
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
