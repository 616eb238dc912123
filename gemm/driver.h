/* driver.h — the FP32 (and, in the float64 library, float64) GEMM around one micro-kernel:
 * packed, cache-blocked (GotoBLAS/BLIS structure). Each instruction set's file (gemm_generic.c,
 * gemm_avx2.c, gemm_avx512.c, gemm_neon.c) defines MR, NR, its micro-kernel header and the names
 * of its ops table, then includes this driver; isa/dispatch.c picks one table at run time.
 *
 *
 * Loop nest of one (single-threaded) product over a sub-block of C:
 *   for jc over N in steps of nc          B block kc×nc lives in L3 (packed per thread)
 *     for pc over K in steps of kc        every C element sums its K blocks in order 0,1,2,...
 *       pack B[pc.., jc..] into NR-wide panels      (transB handled here)
 *       for ic over M in steps of mc      A block mc×kc lives in L2
 *         pack A[ic.., pc..] into MR-tall panels    (transA handled here)
 *         for jr over NR panels, ir over MR panels: micro-kernel  (B panel stays in L1)
 * When all of B's K blocks fit in 1 MiB (every forward and dX product of the ViT), B is packed
 * whole first and the ic and pc loops swap: each row block runs through all its K blocks (same
 * summation order), and row blocks become independent units.
 *
 * Threads split C by rows (taking those independent row blocks from a shared counter as they free
 * up, or fixed ranges of whole MR tiles) or by columns (ranges of whole NR tiles). Every block size
 * depends only on the shape, so the tile grid, the K blocking and the FMA order of every element
 * are the same for any thread count and any assignment: results are bitwise identical.
 * Packing buffers are per thread, allocated once at their maximum size and reused (first-touching
 * fresh pages is slow on our machines). Small products (attention heads) skip A packing: the
 * micro-kernel reads A in place through its strides; a last column or two of C that would fill a
 * mostly empty tile column are dot products instead (NT only: both operands contiguous along k). */
#ifndef VG_GEMM_OPS
#error "include gemm/driver.h from an instruction set's gemm_*.c, after defining MR, NR and its kernel"
#endif
#include "gemm.h"
#include "kernels.h"
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "common.h"

/* Nominal block sizes; the actual ones are balanced so blocks are about equal (see gemm_packed).
 * The B micro-panel KC×NR stays in L1 (AVX2: 384×16×4 B = 24 KiB; AVX-512: 256×32×4 B = 32 KiB),
 * the A block MC×KC in L2 (180 KiB / 240 KiB), the B block KC×NC in L3. Measured on the ViT
 * shapes: KC 384 beat 192/256 (fewer passes over C for K = 576, 768) and 512/768 (L1). */
#ifndef VG_GEMM_KC
#if defined(VG_GEMM_AVX512)
#define VG_GEMM_KC 256
#else
#define VG_GEMM_KC 384
#endif
#endif
#ifndef VG_GEMM_MC
#define VG_GEMM_MC (MR * 20)
#endif
enum { KC = VG_GEMM_KC, MC = VG_GEMM_MC, NC = NR * 192 };
/* Small NT products whose last tile column would hold at most this many columns of C compute
 * those columns as dot products (gemm_small). */
#define N_EDGE_DOT 2
/* Products with M·N·K up to this run single-threaded without packing A. */
#define SMALL_WORK (1L << 19)


/* Per-thread packing buffers (gemm/common.h). */
static _Thread_local vg_gemm_scratch tl_bufA, tl_bufB;
static real *buf_get(vg_gemm_scratch *b, size_t n) { return vg_gemm_scratch_get(b, n * sizeof(real)); }

/* ---------------------------------------------------------------------------------------------
 * Packing. Both operands are described as "element (r, k) sits at src[r*rs + k*cs]", which
 * absorbs the transposes: dst holds panels of W rows, dst[k*W + r], zero-padded past `rows`. */
#if defined(VG_GEMM_AVX512) || defined(VG_GEMM_AVX2)
/* Rows s[0..7] (k contiguous) → for k in [0, kc8) (a multiple of 8) store the first n ∈ {4,6,8}
 * values of the transposed column at dst + k*W. 8×8 transposes in ymm registers. */
static VG_ALWAYS_INLINE void pack_transpose8(float *restrict dst, const float *const s[8], int kc8,
                                             int W, int n) {
    for (int k = 0; k < kc8; k += 8) {
        __m256 r0 = _mm256_loadu_ps(s[0] + k), r1 = _mm256_loadu_ps(s[1] + k);
        __m256 r2 = _mm256_loadu_ps(s[2] + k), r3 = _mm256_loadu_ps(s[3] + k);
        __m256 r4 = _mm256_loadu_ps(s[4] + k), r5 = _mm256_loadu_ps(s[5] + k);
        __m256 r6 = _mm256_loadu_ps(s[6] + k), r7 = _mm256_loadu_ps(s[7] + k);
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
        __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
        __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
        __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
        __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
        __m256 col[8] = {
            _mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
            _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
            _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
            _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31) };
        float *d = dst + (long)k * W;
        for (int j = 0; j < 8; j++, d += W) {
            if (n == 8) _mm256_storeu_ps(d, col[j]);
            else {
                __m128 lo = _mm256_castps256_ps128(col[j]);
                _mm_storeu_ps(d, lo);
                if (n == 6) _mm_storel_pi((__m64 *)(d + 4), _mm256_extractf128_ps(col[j], 1));
            }
        }
    }
}
#endif

/* dst[0..W) = src[0..W) for a compile-time W, in vector moves: GCC turns the plain loop for
 * W = 6 into scalar moves (a third of the speed, measured on the dW product's A operand). */
static VG_ALWAYS_INLINE void copy_w(real *restrict dst, const real *restrict src, int W) {
    int r = 0;
#if defined(VG_GEMM_AVX512) || defined(VG_GEMM_AVX2)
    for (; r + 8 <= W; r += 8) _mm256_storeu_ps(dst + r, _mm256_loadu_ps(src + r));
    if (r + 4 <= W) { _mm_storeu_ps(dst + r, _mm_loadu_ps(src + r)); r += 4; }
    if (r + 2 <= W) {
        _mm_storel_pi((__m64 *)(dst + r), _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(src + r)));
        r += 2;
    }
#endif
    for (; r < W; r++) dst[r] = src[r];
}

static VG_ALWAYS_INLINE void pack_panel(real *restrict dst, const real *restrict src, long rs,
                                        long cs, int rows, int kc, int W) {
    if (rs == 1 && rows == W) {                     /* W contiguous values per k: plain copy */
        for (int k = 0; k < kc; k++) copy_w(dst + (long)k * W, src + k * cs, W);
        return;
    }
    int k0 = 0;
#if defined(VG_GEMM_AVX512) || defined(VG_GEMM_AVX2)
    if (cs == 1 && rows == W && W % 2 == 0) {       /* rows strided, k contiguous: transpose */
        k0 = kc / 8 * 8;
        for (int g = 0; g < W; g += 8) {
            const int n = W - g < 8 ? W - g : 8;
            const float *s[8];
            for (int i = 0; i < 8; i++) s[i] = src + (g + (i < n ? i : 0)) * rs;
            pack_transpose8(dst + g, s, k0, W, n);
        }
    }
#endif
    if (cs == 1) {
        for (int r = 0; r < rows; r++) {
            const real *s = src + r * rs;
            for (int k = k0; k < kc; k++) dst[(long)k * W + r] = s[k];
        }
    } else {
        for (int k = 0; k < kc; k++)
            for (int r = 0; r < rows; r++) dst[(long)k * W + r] = src[r * rs + k * cs];
    }
    if (rows < W)
        for (int k = 0; k < kc; k++)
            for (int r = rows; r < W; r++) dst[(long)k * W + r] = 0;
}

/* A whole block of `rows` rows (all its panels) when each row's values at one k sit next to each
 * other in memory (rs = 1: the A of a dW product, the B of dX and dW): one sweep along k, each
 * step copying `rows` contiguous values into the panels and prefetching the source row
 * PACK_AHEAD steps on. Panel by panel, each panel walked all kc source rows again, W values per
 * row (perf, one thread, qkv's dW: packing A took a quarter of the kernels' time). The sweep
 * alone was no faster; with the prefetch the dW products ran 3 % slower to 4 % faster in a quiet
 * spell of the machine, 3–8 % faster in a busier one (docs/benchmarks.md, seventh round).
 * Same values as pack_panel, panel after panel kc·W apart, zero rows padding the last. */
#define PACK_AHEAD 4
static VG_ALWAYS_INLINE void pack_block_rows(real *restrict dst, const real *restrict src, long cs,
                                             int rows, int kc, int W) {
    const int full = rows / W, tail = rows - full * W;
    const long panel = (long)kc * W;
    for (int k = 0; k < kc; k++) {
        const real *s = src + k * cs;
        real *d = dst + (long)k * W;
        if (k + PACK_AHEAD < kc) {                  /* the row PACK_AHEAD steps on, into L1 */
            const char *f = (const char *)(s + PACK_AHEAD * cs);
            for (long o = 0; o < (long)(rows * sizeof(real)) + 63; o += 64) __builtin_prefetch(f + o, 0, 3);
        }
        for (int q = 0; q < full; q++) copy_w(d + q * panel, s + q * W, W);
        if (tail) {
            real *t = d + full * panel;
            for (int r = 0; r < tail; r++) t[r] = s[full * W + r];
            for (int r = tail; r < W; r++) t[r] = 0;
        }
    }
}

/* Rows of a block into consecutive W-wide panels: in one sweep when each row's values at one k
 * sit side by side (rs = 1), else panel by panel. */
static VG_ALWAYS_INLINE void pack_block(real *dst, const real *src, long rs, long cs, int rows,
                                        int kc, int W) {
    if (rs == 1) { pack_block_rows(dst, src, cs, rows, kc, W); return; }
    for (int i = 0; i < rows; i += W)
        pack_panel(dst + (long)i * kc, src + i * rs, rs, cs, rows - i < W ? rows - i : W, kc, W);
}

/* The packers of the two operands, W a compile-time constant in each: a block of A's rows into
 * MR-tall panels, of B's columns into NR-wide ones, and one B panel (the small-product path). */
static void pack_A_block(real *dst, const real *src, long rs, long cs, int rows, int kc) {
    pack_block(dst, src, rs, cs, rows, kc, MR);
}
static void pack_B_cols(real *dst, const real *src, long rs, long cs, int rows, int kc) {
    pack_block(dst, src, rs, cs, rows, kc, NR);
}
static void pack_B(real *dst, const real *src, long rs, long cs, int rows, int kc) {
    pack_panel(dst, src, rs, cs, rows, kc, NR);
}

/* One element's store, the scalar form of every kernel's: c = alpha·acc + (beta·c) + bias, with
 * beta 0 ignoring c's old contents (NaN included). */
static inline void store_c(real *c, real alpha, real acc, real beta, real bias) {
    real t = bias;
    if (beta != 0) t = beta * *c + t;
    *c = alpha * acc + t;
}

/* ---------------------------------------------------------------------------------------------
 * Micro-kernels: C[0:mr, 0:nr] = alpha * (A panel · B panel) + beta * C + bias
 * (beta 0: C's old contents ignored; bias a row of nr values or NULL).
 * A element (r, k) at a[r*rsA + k*csA] for r < mra (rows ≥ mra re-read row mra-1, result
 * discarded); B panel packed as b[k*NR + j]. With rsA = 1, csA = MR, mra = MR (packed A) the
 * compiler folds every offset into an immediate. Update: c = fma(alpha, acc, beta*c + bias). */
/* Accumulators are named variables (an array of vectors would live on the stack). */
#define ROW_OFFSET(r) const long o##r = (r < mra ? r : mra - 1) * rsA;

#include VG_GEMM_MICRO_KERNEL


/* The two instantiations: packed A (all offsets compile-time) and A read in place. */
static void kernel_packed(int kc, const real *a, const real *b, real *c, long ldc,
                          int mr, int nr, real alpha, real beta, const real *bias) {
    micro_kernel(kc, a, 1, MR, MR, b, c, ldc, mr, nr, alpha, beta, bias);
}
static void kernel_strided(int kc, const real *a, long rsA, long csA, int mra, const real *b,
                           real *c, long ldc, int mr, int nr, real alpha, real beta,
                           const real *bias) {
    micro_kernel(kc, a, rsA, csA, mra, b, c, ldc, mr, nr, alpha, beta, bias);
}

/* ---------------------------------------------------------------------------------------------
 * The paths share gemm_problem, make_problem and scale_c (gemm_common.h). */

/* Packs B[pc.., jc..] (kc × nc) into NR-wide panels at bufB. */
static void pack_B_block(const gemm_problem *p, real *bufB, int jc, int nc, int pc, int kc) {
    pack_B_cols(bufB, p->B + pc * p->rsB + jc * p->csB, p->csB, p->rsB, nc, kc);
}

/* C[ic.., jc..] (mc × nc) op= A[ic.., pc..] · the packed B block at bufB: packs the A block into
 * MR-tall panels and runs the micro-kernel over the tiles, B panel outer so it stays in L1. */
static void block_product(const gemm_problem *p, real *bufA, const real *bufB,
                          int ic, int mc, int jc, int nc, int pc, int kc) {
    const real beta = pc == 0 ? p->beta : 1;                  /* later K blocks add to C */
    const real *bias = pc == 0 && p->bias ? p->bias + jc : NULL;
    pack_A_block(bufA, p->A + ic * p->rsA + pc * p->csA, p->rsA, p->csA, mc, kc);
    for (int j = 0; j < nc; j += NR) {
        const int nr = nc - j < NR ? nc - j : NR;
        for (int i = 0; i < mc; i += MR)
            kernel_packed(kc, bufA + (long)i * kc, bufB + (long)j * kc,
                          p->C + (ic + i) * p->ldc + jc + j, p->ldc,
                          mc - i < MR ? mc - i : MR, nr, p->alpha, beta, bias ? bias + j : NULL);
    }
}

/* Whether B can be packed whole (all its K blocks for one column block of C, in WHOLE_B bytes):
 * then every row block of C is an independent unit that runs through all K blocks at once. */
#define WHOLE_B (1L << 20)
_Static_assert(WHOLE_B <= (long)NC * KC * (long)sizeof(float), "the whole B fits the B buffer");
static int b_packs_whole(int K, int cols) {
    const int kc_n = balanced_block(K, KC, 1), nc_n = balanced_block(cols, NC, NR);
    return K <= kc_n || (long)K * round_up(nc_n, NR) * (long)sizeof(real) <= WHOLE_B;
}

/* The next row block for this thread: the one after `prev`, or with a team sharing the counter
 * *next, whichever block nobody has taken yet. */
static int take_row_block(int *next, int prev) {
    if (!next) return prev + 1;
    int b;
    #pragma omp atomic capture
    b = (*next)++;
    return b;
}

/* Packed product on the C block [m0,m1) × [n0,n1); m0 % MR == 0, n0 % NR == 0.
 * When B packs whole, each row block runs through every K block before the next one starts: its
 * C block stays in L2 between K blocks (instead of streaming all of C from memory again for every
 * K block) and A's rows are read in one pass. A team may then share the row blocks through the
 * counter `next` (each thread packs all of B and takes row blocks as it frees up; which thread
 * computes a block never changes its bits). Otherwise (`next` NULL) K blocks are outermost and B
 * is packed one K block at a time. Either way every C element sums its K blocks in the order
 * 0, 1, 2, ...: the same bits for any thread count. */
static void gemm_packed(const gemm_problem *p, int m0, int m1, int n0, int n1, int *next) {
    const int K = p->K;
    const int kc_n = balanced_block(K, KC, 1);
    const int mc_n = balanced_block(m1 - m0, MC, MR);
    const int nc_n = balanced_block(n1 - n0, NC, NR);
    real *bufA = buf_get(&tl_bufA, (size_t)MC * KC);
    real *bufB = buf_get(&tl_bufB, (size_t)NC * KC);
    if (!bufA || !bufB || kc_n > KC || mc_n > MC || nc_n > NC) abort();  /* out of memory */
    const int row_blocks = ceil_div(m1 - m0, mc_n);

    for (int jc = n0; jc < n1; jc += nc_n) {
        const int nc = n1 - jc < nc_n ? n1 - jc : nc_n;
        if (b_packs_whole(K, n1 - n0)) {     /* K block pc sits at bufB + pc·(nc in panels) */
            const long ncp = round_up(nc, NR);
            for (int pc = 0; pc < K; pc += kc_n)
                pack_B_block(p, bufB + pc * ncp, jc, nc, pc, K - pc < kc_n ? K - pc : kc_n);
            for (int b = take_row_block(next, -1); b < row_blocks; b = take_row_block(next, b)) {
                const int ic = m0 + b * mc_n;
                for (int pc = 0; pc < K; pc += kc_n)
                    block_product(p, bufA, bufB + pc * ncp, ic, m1 - ic < mc_n ? m1 - ic : mc_n,
                                  jc, nc, pc, K - pc < kc_n ? K - pc : kc_n);
            }
        } else {
            for (int pc = 0; pc < K; pc += kc_n) {
                const int kc = K - pc < kc_n ? K - pc : kc_n;
                pack_B_block(p, bufB, jc, nc, pc, kc);
                for (int ic = m0; ic < m1; ic += mc_n)
                    block_product(p, bufA, bufB, ic, m1 - ic < mc_n ? m1 - ic : mc_n, jc, nc, pc, kc);
            }
        }
    }
}

/* Columns [j0, N) of C as dot products, for A rows and B columns that both run along k in
 * memory: Σ_k A(i,k)·B(k,j) in 8 lanes (lane = k mod 8) added in lane order at the end, four rows
 * at a time (four independent chains), stored as the kernels store (store_c). */
static void edge_columns(const gemm_problem *p, int j0) {
    const int M = p->M, K = p->K, K8 = K / 8 * 8;
    for (int j = j0; j < p->N; j++) {
        const real *b = p->B + j * p->csB;
        for (int i = 0; i < M; i += 4) {
            const int rows = M - i < 4 ? M - i : 4;
            const real *a[4];
            for (int q = 0; q < 4; q++) a[q] = p->A + (i + (q < rows ? q : rows - 1)) * p->rsA;
            real acc[4][8] = {{0}};
            for (int k = 0; k < K8; k += 8)
                for (int q = 0; q < 4; q++)
                    for (int l = 0; l < 8; l++) acc[q][l] += a[q][k + l] * b[k + l];
            for (int k = K8; k < K; k++)
                for (int q = 0; q < 4; q++) acc[q][k - K8] += a[q][k] * b[k];
            for (int q = 0; q < rows; q++) {
                real sum = 0;
                for (int l = 0; l < 8; l++) sum += acc[q][l];
                store_c(p->C + (i + q) * p->ldc + j, p->alpha, sum, p->beta, p->bias ? p->bias[j] : 0);
            }
        }
    }
}

/* Single-threaded product for small shapes: only B is packed (whole K at once); A is read in
 * place by the micro-kernel, so there is no per-call A packing. A last tile column holding one or
 * two columns of C (attention's 65-wide Q·Kᵀ and dO·Vᵀ) would cost as much as a full one: when A
 * and B both run along k in memory (NT), those columns are dot products instead. */
static void gemm_small(const gemm_problem *p) {
    const int M = p->M, K = p->K;
    const int edge = p->csA == 1 && p->rsB == 1 && p->N > NR ? p->N % NR : 0;
    const int N = edge && edge <= N_EDGE_DOT ? p->N - edge : p->N;
    if (N < p->N) edge_columns(p, N);
    const size_t need = (size_t)round_up(N, NR) * K;
    real *bufB = buf_get(&tl_bufB, need > (size_t)NC * KC ? need : (size_t)NC * KC);
    if (!bufB) abort();
    for (int j = 0; j < N; j += NR) {
        const int nr = N - j < NR ? N - j : NR;
        pack_B(bufB + (long)j * K, p->B + j * p->csB, p->csB, p->rsB, nr, K);
        for (int i = 0; i < M; i += MR) {
            const int mr = M - i < MR ? M - i : MR;
            kernel_strided(K, p->A + i * p->rsA, p->rsA, p->csA, mr, bufB + (long)j * K,
                           p->C + i * p->ldc + j, p->ldc, mr, nr, p->alpha, p->beta,
                           p->bias ? p->bias + j : NULL);
        }
    }
}

static int is_small(const gemm_problem *p) {
    return (long)p->M * p->N * p->K <= SMALL_WORK;
}

/* One whole product on the calling thread. */
static void gemm_single(const gemm_problem *p) {
    if (p->M <= 0 || p->N <= 0) return;
    if (p->K <= 0 || p->alpha == 0) { scale_c(p, 0, p->M, 0, p->N); return; }
    if (is_small(p)) gemm_small(p);
    else gemm_packed(p, 0, p->M, 0, p->N, NULL);
}

static void gemm_run(gemm_problem p) {
    const int M = p.M, N = p.N, K = p.K;
    if (M <= 0 || N <= 0) return;
    const int nt = vg_gemm_threads((long)M * N * K);
    if (nt <= 1 || K <= 0 || p.alpha == 0 || is_small(&p)) { gemm_single(&p); return; }

    /* Split C by rows or by columns. Splitting rows makes every thread pack all of B (K×N) and
     * its own rows of A; splitting columns, all of A (M×K) and its own columns of B. So split the
     * longer side: the duplicated packing is then of the smaller operand (for dW = dYᵀ·X with
     * K = tokens, both operands are K-long, and fc2's 192×768 product would otherwise pack the
     * whole 8320×768 X on every thread). Rows are handed out one block at a time when B packs
     * whole (a thread slowed by the machine then takes fewer; fixed halves left the faster
     * thread waiting 5–10 % of the time in the training step), else split in fixed ranges. */
    const int mtiles = ceil_div(M, MR), ntiles = ceil_div(N, NR);
    const int split_m = ntiles < 2 * nt || (mtiles >= 4 * nt && M >= N);
    const int shared_rows = split_m && N <= NC && b_packs_whole(K, N);
    int next_row_block = 0;
    #pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        if (shared_rows) gemm_packed(&p, 0, M, 0, N, &next_row_block);
        else if (split_m) {
            int m0 = (int)((long)mtiles * t / T) * MR, m1 = (int)((long)mtiles * (t + 1) / T) * MR;
            if (m1 > M) m1 = M;
            if (m0 < m1) gemm_packed(&p, m0, m1, 0, N, NULL);
        } else {
            int n0 = (int)((long)ntiles * t / T) * NR, n1 = (int)((long)ntiles * (t + 1) / T) * NR;
            if (n1 > N) n1 = N;
            if (n0 < n1) gemm_packed(&p, 0, M, n0, n1, NULL);
        }
    }
}

static void gemm_entry(int transA, int transB, int M, int N, int K,
                       real alpha, const real *A, int lda, const real *B, int ldb,
                       real beta, real *C, int ldc) {
    gemm_run(make_problem(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL));
}

static void gemm_bias_entry(int transA, int transB, int M, int N, int K,
                            real alpha, const real *A, int lda, const real *B, int ldb,
                            const real *bias, real *C, int ldc) {
    gemm_run(make_problem(transA, transB, M, N, K, alpha, A, lda, B, ldb, 0, C, ldc, bias));
}

static void gemm_batched_entry(int batch, int transA, int transB, int M, int N, int K,
                               real alpha, const real *A, int lda, long strideA,
                               const real *B, int ldb, long strideB,
                               real beta, real *C, int ldc, long strideC) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    const long work = (long)M * N * K;
    const int nt = vg_gemm_threads(work * batch);
    /* Big matrices and too few of them to share out: let each product use every thread. */
    if (nt > 1 && work > SMALL_WORK && batch < 2 * nt) {
        for (int b = 0; b < batch; b++)
            gemm_entry(transA, transB, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb,
                       beta, C + b * strideC, ldc);
        return;
    }
    /* One thread per product; the products themselves run single-threaded. */
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int b = 0; b < batch; b++) {
        gemm_problem p = make_problem(transA, transB, M, N, K, alpha, A + b * strideA, lda,
                                      B + b * strideB, ldb, beta, C + b * strideC, ldc, NULL);
        gemm_single(&p);
    }
}

const vg_gemm_ops VG_GEMM_OPS = { VG_GEMM_NAME, VG_GEMM_ISA, VG_GEMM_EMULATED,
                                  gemm_entry, gemm_bias_entry, gemm_batched_entry };
