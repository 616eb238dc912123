/* amx.c — the AMX backend of the bf16 GEMM (gemm/bf16.c picks it where isa/cpu.c finds the tiles
 * usable): C = alpha · bf16(op(A)) · bf16(op(B)) + beta·C + bias, products summed in FP32 by
 * tdpbf16ps on tiles.
 *
 * The instruction: C tile (16×16 FP32) += A tile (16 rows × 32 bf16 along k) · B tile (16 rows ×
 * 16 pairs: row p holds (B(2p, j), B(2p+1, j)) for j = 0..15), 16,384 FLOP per issue. Register
 * blocking 2×2, as oneDNN's and OpenBLAS's AMX kernels: a 32×32 block of C in tiles 0–3, two A
 * tiles (4, 5) and two B tiles (6, 7) per 32 k, one tile load per tdpbf16ps.
 *
 * Packing, once per call into per-thread scratch, FP32 → bf16 (nearest even) as it goes, each tile
 * 1 KiB contiguous (loads at stride 64):
 *   A → 32-row panels, per 32 k two row-major tiles   [kb][half][row 0..15][32 k]
 *   B → 32-col panels, per 32 k two pair-major tiles  [kb][half][pair 0..15][16 cols × 2]
 * rows past M, columns past N and k past K zero (a zero pair adds nothing). Both operand layouts
 * are handled: along k in memory (A of NN/NT, B of NT = PyTorch's Linear weight) or across rows
 * (A of TN = dW's Xᵀ, B of NN): the one that does not match the tile's layout goes through a 16×16
 * transpose of 32-bit pairs.
 *
 * Blocking: units of C (row block × column block, handed out dynamically) as gemm/bf16_dp.c; in a
 * unit, K in blocks of KB·32 outermost (the B panel block, KB·2 KiB, stays in L1 over the unit's
 * row panels; the A block, MC·KB·64 bytes, in L2), column panels, row panels. A full 32×32 block
 * with alpha 1 and beta 0 or 1 accumulates in place: its tiles start from zero, from C (beta 1),
 * or from a 32-row copy of the bias, and every K block
 * stores the FP32 tiles to C and the next loads them back, which is exact — so the sums are the
 * same bits for any K blocking. Other blocks (edges, alpha ≠ 1, other beta) run all of K in the
 * tiles and finish through a 4 KiB buffer: c = alpha·acc + beta·c + bias. Each element's sum runs
 * over the same tiles in the same order whatever the units and the thread count: deterministic.
 *
 * Tile configuration (palette 1, all eight tiles 16 rows × 64 bytes) is loaded once per thread and
 * kept. make test runs this file with the tile instructions emulated in C (gemm/emulate/amx.h,
 * -DVG_GEMM_EMULATE_AMX), on any x86-64 machine with AVX2+FMA. Not built in the float64 library. */
#ifndef VG_DOUBLE
#include "gemm.h"
#include "bf16.h"
#include "backend.h"
#include "isa/isa.h"
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#if defined(VG_GEMM_EMULATE_AMX)
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#if !defined(__AVX512F__)
#include "gemm/emulate/avx512.h"
#endif
#if !defined(__AVX512BF16__)
#include "gemm/emulate/avx512_bf16.h"
#endif
#include "gemm/emulate/amx.h"
#define VG_AMX 1
#endif
#else
#include <immintrin.h>
#define VG_AMX 1
#define VG_AMX_NATIVE 1
#endif
#endif

#include "common.h"

#if defined(VG_AMX)
#if defined(VG_AMX_NATIVE)
/* Every CPU with AMX-BF16 has AVX-512 (F, BW) and AVX512_BF16: the kernel and its packing use them,
 * whatever -march the rest of the build has. Only this region is compiled for them; it runs only
 * after isa/cpu.c said yes. */
#if defined(__clang__)        /* clang ignores GCC's target pragma: the same through an attribute */
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512bf16,amx-tile,amx-bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512bf16,amx-tile,amx-bf16")
#endif
#endif
#include "bf16_pairs.h"

enum { TR = 16, TK = 32, BLK = 32, KB = 16, MC = BLK * 8, NC = BLK * 8 };

static _Thread_local vg_gemm_scratch tl_A, tl_B;
static _Thread_local int tl_configured;

static void configure_tiles(void) {
    if (tl_configured) return;
    uint8_t cfg[64] = {0};
    cfg[0] = 1;                                                  /* palette 1 */
    for (int t = 0; t < 8; t++) { cfg[16 + 2 * t] = 64; cfg[48 + t] = TR; }
    _tile_loadconfig(cfg);
    tl_configured = 1;
}

/* ---------------------------------------------------------------------------------------------
 * Packing one 1 KiB tile: rows [0, rows) of an operand (element (r, k) at src[r*rs + k*cs]), k in
 * [0, kn), kn ≤ 32. Row-major (A): dst word [r][p] = pair (r, 2p); pair-major (B): [p][r]. */
static void pack_tile(uint32_t *restrict dst, const float *src, long rs, long cs, int rows, int kn,
                      int pair_major) {
    __m512i v[16];                 /* v[i]: row i of the tile in the order the source gives */
    int have_pair_major;
    if (rs == 1 && cs != 1) {                    /* rows side by side in memory: pairs of k rows */
        have_pair_major = 1;
#define ACROSS(q) { const float *lo = src + 2L * q * cs, *hi = 2 * q + 1 < kn ? lo + cs : NULL;   \
                    v[q] = pairs_across_rows_v(lo, hi, 2 * q < kn ? rows : 0); }
        X16(ACROSS)
#undef ACROSS
    } else if (cs == 1) {                        /* k contiguous: 32 values of a row → 16 pairs */
        have_pair_major = 0;
#define ALONG(r) v[r] = pairs_along_k_v(src + r * rs, r < rows ? kn : 0);
        X16(ALONG)
#undef ALONG
    } else {                                     /* neither: one value at a time, row-major */
        have_pair_major = 0;
        uint32_t tmp[256];
        for (int r = 0; r < 16; r++)
            for (int p = 0; p < 16; p++) {
                const int k = 2 * p;
                const uint32_t lo = r < rows && k < kn ? vg_f32_to_bf16(src[r * rs + k * cs]) : 0;
                const uint32_t hi = r < rows && k + 1 < kn ? vg_f32_to_bf16(src[r * rs + (k + 1) * cs]) : 0;
                tmp[r * 16 + p] = lo | hi << 16;
            }
        memcpy(v, tmp, sizeof tmp);
    }
    if (have_pair_major != pair_major) transpose16_epi32(v);          /* in registers */
    memcpy(dst, v, sizeof v);
}

/* One 32-row (A) or 32-column (B) panel: all K blocks, two tiles each. */
static void pack_panel(uint32_t *dst, const float *src, long rs, long cs, int rows, int K, int pair_major) {
    for (int k0 = 0, kb = 0; k0 < K; k0 += TK, kb++)
        for (int h = 0; h < 2; h++) {
            const int hr = rows - h * TR;
            pack_tile(dst + (2L * kb + h) * 256, src + (long)h * TR * rs + (long)k0 * cs, rs, cs,
                      hr < 0 ? 0 : hr > TR ? TR : hr, K - k0 < TK ? K - k0 : TK, pair_major);
        }
}

/* ---------------------------------------------------------------------------------------------
 * The 2×2-tile block: tiles 0..3 = C (rows 0–15 | 16–31) × (cols 0–15 | 16–31) over nkb K blocks
 * of the packed panels a, b. init: NULL (zero) or 32×32 floats at init with row stride init_ld;
 * result stored to dst (row stride dst_ld floats). */
static VG_ALWAYS_INLINE void block_2x2(const uint32_t *a, const uint32_t *b, int nkb, const float *init,
                                       long init_ld, float *dst, long dst_ld) {
    if (init) {
        _tile_loadd(0, init, init_ld * 4);
        _tile_loadd(1, init + 16, init_ld * 4);
        _tile_loadd(2, init + 16 * init_ld, init_ld * 4);
        _tile_loadd(3, init + 16 * init_ld + 16, init_ld * 4);
    } else {
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    }
    for (int kb = 0; kb < nkb; kb++, a += 512, b += 512) {
        _tile_loadd(4, a, 64);
        _tile_loadd(6, b, 64);
        _tile_loadd(5, a + 256, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b + 256, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, dst, dst_ld * 4);
    _tile_stored(1, dst + 16, dst_ld * 4);
    _tile_stored(2, dst + 16 * dst_ld, dst_ld * 4);
    _tile_stored(3, dst + 16 * dst_ld + 16, dst_ld * 4);
}

/* c[0:mr, 0:nr] = alpha·acc + beta·c + bias (beta 0: c's old contents ignored, NaN included) */
static void finish_block(const float *acc, float *c, long ldc, int mr, int nr, float alpha, float beta,
                         const float *bias) {
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) {
            const float t = bias ? bias[j] : 0;
            c[r * ldc + j] = alpha * acc[r * BLK + j] + (beta == 0 ? t : beta * c[r * ldc + j] + t);
        }
}

/* What one product's units share, and one unit of C: row block × column block, K blocks outermost. */
typedef struct {
    const gemm_problem *p;
    const uint32_t *bufA, *bufB;
    long panel;
    int nkb, kbs, mc, nc, col_blocks, in_place;
} amx_plan;

static void amx_unit(const amx_plan *pl, int u) {
    const gemm_problem *p = pl->p;
    const int M = p->M, N = p->N, nkb = pl->nkb, kbs = pl->kbs, in_place = pl->in_place;
    const long panel = pl->panel;
    const uint32_t *bufA = pl->bufA, *bufB = pl->bufB;
    float acc[BLK * BLK] __attribute__((aligned(64)));
    float bias_rows[BLK * BLK] __attribute__((aligned(64)));
    const int i0 = (u / pl->col_blocks) * pl->mc, j0 = (u % pl->col_blocks) * pl->nc;
    const int i1 = i0 + pl->mc < M ? i0 + pl->mc : M, j1 = j0 + pl->nc < N ? j0 + pl->nc : N;
    for (int kb0 = 0; kb0 < nkb; kb0 += kbs) {
        const int n_kb = nkb - kb0 < kbs ? nkb - kb0 : kbs;
        for (int j = j0; j < j1; j += BLK) {
            const uint32_t *bp = bufB + (j / BLK) * panel;
            const int nr = j1 - j < BLK ? j1 - j : BLK;
            const float *bias = p->bias ? p->bias + j : NULL;
            if (bias && kb0 == 0 && nr == BLK)
                for (int r = 0; r < BLK; r++) memcpy(bias_rows + r * BLK, bias, sizeof(float) * BLK);
            for (int i = i0; i < i1; i += BLK) {
                const uint32_t *ap = bufA + (i / BLK) * panel;
                const int mr = i1 - i < BLK ? i1 - i : BLK;
                float *c = p->C + (long)i * p->ldc + j;
                if (in_place && mr == BLK && nr == BLK) {
                    const float *init = kb0 > 0 || p->beta == 1 ? c : bias ? bias_rows : NULL;
                    const long init_ld = init == bias_rows ? BLK : p->ldc;
                    block_2x2(ap + kb0 * 512L, bp + kb0 * 512L, n_kb, init, init_ld, c, p->ldc);
                } else if (kb0 == 0) {                   /* edges, alpha, beta: all of K */
                    block_2x2(ap, bp, nkb, NULL, 0, acc, BLK);
                    finish_block(acc, c, p->ldc, mr, nr, p->alpha, p->beta, bias);
                }
            }
        }
    }
}

/* The product on nt threads (1: the calling thread alone). */
static void gemm_amx(const gemm_problem *p, int nt) {
    const int M = p->M, N = p->N, K = p->K, nkb = ceil_div(K, TK);
    const int mpanels = ceil_div(M, BLK), npanels = ceil_div(N, BLK);
    const long panel = 512L * nkb;                       /* 32-bit words in one packed panel */
    uint32_t *bufA = vg_gemm_scratch_get(&tl_A, sizeof(uint32_t) * (size_t)(mpanels * panel));
    uint32_t *bufB = vg_gemm_scratch_get(&tl_B, sizeof(uint32_t) * (size_t)(npanels * panel));
    if (!bufA || !bufB) abort();                                         /* out of memory */
    const int kbs = balanced_block(nkb, KB, 1);
    const unit_grid g = make_unit_grid(M, N, MC, NC, BLK, BLK, nt);
    const int mc = g.mc, nc = g.nc, col_blocks = g.col_blocks, units = g.units;
    /* in place (see the top): alpha 1, beta 0 or 1, and no bias with beta 1 */
    const int in_place = p->alpha == 1 && (p->beta == 0 || (p->beta == 1 && !p->bias));
#define PACK_A(i) pack_panel(bufA + (i) * panel, p->A + (long)(i) * BLK * p->rsA, p->rsA, p->csA, \
                           M - (i) * BLK < BLK ? M - (i) * BLK : BLK, K, 0)
#define PACK_B(j) pack_panel(bufB + (j) * panel, p->B + (long)(j) * BLK * p->csB, p->csB, p->rsB, \
                           N - (j) * BLK < BLK ? N - (j) * BLK : BLK, K, 1)
    const amx_plan plan = { p, bufA, bufB, panel, nkb, kbs, mc, nc, col_blocks, in_place };
    if (nt == 1) {          /* no parallel region: attention calls this thousands of times a step */
        for (int i = 0; i < mpanels; i++) PACK_A(i);
        for (int j = 0; j < npanels; j++) PACK_B(j);
        configure_tiles();
        for (int u = 0; u < units; u++) amx_unit(&plan, u);
        return;
    }
    #pragma omp parallel num_threads(nt)
    {
        #pragma omp for schedule(static) nowait
        for (int i = 0; i < mpanels; i++) PACK_A(i);
        #pragma omp for schedule(static)
        for (int j = 0; j < npanels; j++) PACK_B(j);
        configure_tiles();
        #pragma omp for schedule(dynamic, 1)
        for (int u = 0; u < units; u++) amx_unit(&plan, u);
    }
#undef PACK_A
#undef PACK_B
}
#if defined(VG_AMX_NATIVE)
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
#endif  /* VG_AMX */

bool vg_amx_usable(const char **why) {
#if defined(VG_AMX) && defined(VG_GEMM_EMULATE_AMX)
    const bool ok = vg_isa_allows(VG_ISA_AVX2) && vg_isa_within_cap(VG_ISA_AMX);
    if (!ok && why) *why = "VG_ISA caps the level below amx (or no AVX2+FMA to emulate it)";
    return ok;
#elif defined(VG_AMX)
    const vg_cpu_features *cpu = vg_cpu();
    if (!cpu->amx) { if (why) *why = cpu->amx_why; return false; }
    if (!vg_isa_allows(VG_ISA_AMX)) { if (why) *why = "VG_ISA caps the level below amx"; return false; }
    return true;
#else
    if (why) *why = "this build has no AMX kernel (not x86-64 with GCC, or no AVX2+FMA to emulate it)";
    return false;
#endif
}

void vg_amx_gemm(const gemm_problem *p, int nt) {
#if defined(VG_AMX)
    gemm_amx(p, nt);
#else
    (void)p; (void)nt;
    abort();
#endif
}

const char *vg_amx_name(void) {
#if defined(VG_GEMM_EMULATE_AMX)
    return "amx tdpbf16ps 32x32 (2x2 tiles), emulated in C";
#else
    return "amx tdpbf16ps 32x32 (2x2 tiles)";
#endif
}
#endif  /* VG_DOUBLE */
