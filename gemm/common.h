/* common.h — what the FP32 GEMM (gemm/driver.h) and the bf16 GEMMs (bf16_dp.c, amx.c) share:
 * per-thread scratch buffers, block arithmetic, the problem description, and the AVX-512 kernels'
 * store of one C row. Internal:
 * include it after defining VG_GEMM_AVX512 / VG_BF16_DP and including the intrinsics. */
#ifndef VG_GEMM_COMMON_H
#define VG_GEMM_COMMON_H
#include <stdlib.h>
#include "tensor/real.h"

#define VG_ALWAYS_INLINE inline __attribute__((always_inline))

/* Grow-only, 64-byte aligned, never freed while its thread lives: a steady-state training step
 * allocates nothing, and pages once touched stay (first-touching fresh pages is slow on our
 * machines). NULL when out of memory. */
typedef struct { void *p; size_t cap; } vg_gemm_scratch;
static inline void *vg_gemm_scratch_get(vg_gemm_scratch *s, size_t bytes) {
    if (bytes > s->cap) {
        free(s->p);
        bytes = (bytes + 63) / 64 * 64;
        s->p = aligned_alloc(64, bytes);
        s->cap = s->p ? bytes : 0;
    }
    return s->p;
}

static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
static inline int round_up(int a, int b) { return ceil_div(a, b) * b; }
/* split n into about-equal blocks of at most nominal, each a multiple of unit */
static inline int balanced_block(int n, int nominal, int unit) {
    return round_up(ceil_div(n, ceil_div(n, nominal)), unit);
}

/* The units of C the bf16 kernels hand out to threads: row blocks of at most mc_max rows and column
 * blocks of at most nc_max columns (multiples of the tile, mr × nr), with enough column blocks for
 * every one of nt threads to take about two units. Depends on the shape and nt only. */
typedef struct { int mc, nc, col_blocks, units; } unit_grid;
static inline unit_grid make_unit_grid(int M, int N, int mc_max, int nc_max, int mr, int nr, int nt) {
    unit_grid g;
    g.mc = balanced_block(M, mc_max, mr);
    const int row_blocks = ceil_div(M, g.mc), npanels = ceil_div(N, nr);
    int col_blocks = ceil_div(N, nc_max);
    if (row_blocks * col_blocks < 2 * nt) col_blocks = ceil_div(2 * nt, row_blocks);
    if (col_blocks > npanels) col_blocks = npanels;
    g.nc = round_up(ceil_div(N, col_blocks), nr);
    g.col_blocks = ceil_div(N, g.nc);
    g.units = row_blocks * g.col_blocks;
    return g;
}

/* One product C = alpha·op(A)·op(B) + beta·C + bias, as both GEMMs' paths see it (`real`: float,
 * or double in gemm.c's float64 build): op(A)(i,k) = A[i*rsA + k*csA], op(B)(k,j) = B[k*rsB + j*csB];
 * the flags and leading dimensions as given are kept for paths that pass them on. */
typedef struct {
    int M, N, K;
    real alpha, beta;
    const real *A; long rsA, csA;
    const real *B; long rsB, csB;
    real *C; long ldc;
    const real *bias;                /* N values added to every row of C, or NULL */
    int transA, lda, transB, ldb;
} gemm_problem;

static inline gemm_problem make_problem(int transA, int transB, int M, int N, int K, real alpha,
                                        const real *A, int lda, const real *B, int ldb, real beta,
                                        real *C, int ldc, const real *bias) {
    gemm_problem p = { M, N, K, alpha, beta, A, 0, 0, B, 0, 0, C, ldc, bias, transA, lda, transB, ldb };
    if (transA) { p.rsA = 1; p.csA = lda; } else { p.rsA = lda; p.csA = 1; }
    if (transB) { p.rsB = 1; p.csB = ldb; } else { p.rsB = ldb; p.csB = 1; }
    return p;
}

/* C = beta*C + bias on rows [m0,m1) × cols [n0,n1) (K == 0 or alpha == 0); beta 0 ignores C's old
 * contents */
static inline void scale_c(const gemm_problem *p, int m0, int m1, int n0, int n1) {
    for (int i = m0; i < m1; i++) {
        real *c = p->C + i * p->ldc;
        for (int j = n0; j < n1; j++) {
            const real t = p->bias ? p->bias[j] : 0;
            c[j] = p->beta == 0 ? t : p->beta * c[j] + t;
        }
    }
}

#if defined(VG_GEMM_AVX512) || defined(VG_BF16_DP)
/* One row of a 32-wide tile: c = alpha·acc + (beta·c + bias) in masked lanes, beta 0 ignoring c's
 * old contents (NaN included), bias 32 values or NULL. */
static VG_ALWAYS_INLINE void store_row(float *cr, __m512 acc0, __m512 acc1, float alpha,
                                       float beta, const float *bias, __mmask16 m0, __mmask16 m1) {
    __m512 t0 = _mm512_setzero_ps(), t1 = _mm512_setzero_ps();
    if (bias) { t0 = _mm512_maskz_loadu_ps(m0, bias); t1 = _mm512_maskz_loadu_ps(m1, bias + 16); }
    if (beta != 0) {
        t0 = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(m0, cr), t0);
        t1 = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(m1, cr + 16), t1);
    }
    _mm512_mask_storeu_ps(cr, m0, _mm512_fmadd_ps(_mm512_set1_ps(alpha), acc0, t0));
    _mm512_mask_storeu_ps(cr + 16, m1, _mm512_fmadd_ps(_mm512_set1_ps(alpha), acc1, t1));
}
#endif
#endif
