/* layernorm.h — LayerNorm's row kernels, behind nn/layernorm.c (whose comment has the math).
 * Compiled once per instruction set by simd/rows.h. Sums run in 8 double lanes (tensor/lanes.h)
 * in a fixed order, so the AVX-512 form of the backward's sums gives the same bits as the loop. */
#ifndef VG_SIMD_LAYERNORM_H
#define VG_SIMD_LAYERNORM_H
#include "tensor/real.h"
#include "tensor/lanes.h"
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#if defined(__AVX512F__) && !defined(VG_DOUBLE)
#include <immintrin.h>
#endif

/* y = (x − μ)·rstd ⊙ w + b over one row of D (w, b NULL: 1, 0); *mu, *rs_out get μ and rstd */
static void layernorm_row(const real *xr, const real *wp, const real *bp, real *yr, int64_t D,
                          double eps, double *mu_out, double *rs_out) {
    const double mu = vg_sum_lanes(xr, D) / (double)D;
    const double v = vg_sumsq_dev_lanes(xr, mu, D);
    const double rs = 1.0 / sqrt(v / (double)D + eps);
    *mu_out = mu; *rs_out = rs;
    for (int64_t i = 0; i < D; i++) {
        double xh = ((double)xr[i] - mu) * rs;
        yr[i] = (real)(xh * (wp ? (double)wp[i] : 1.0) + (bp ? (double)bp[i] : 0.0));
    }
}

/* One row's dx = rstd·(dŷ − mean(dŷ) − x̂·mean(dŷ ⊙ x̂)), dŷ = dy ⊙ w, written to dx (added to it
 * when accumulate); with pw, pb: pw += dy ⊙ x̂, pb += dy (the parameters' partial sums). */
static void layernorm_grad_row(const real *xr, const real *gr, const real *w, double mu, double rs,
                               int64_t D, real *dx, bool accumulate, double *pw, double *pb) {
    double a1[8] = {0}, a2[8] = {0};                 /* Σ dŷ,  Σ dŷ ⊙ x̂ in 8 lanes */
    int64_t i = 0;
#if defined(__AVX512F__) && !defined(VG_DOUBLE)
    /* the 8 lanes as one vector: the same operations per lane as the loop below (gcc
     * left that loop scalar), so the same bits */
    __m512d v1 = _mm512_setzero_pd(), v2 = _mm512_setzero_pd();
    const __m512d vmu = _mm512_set1_pd(mu), vrs = _mm512_set1_pd(rs);
    for (; i + 8 <= D; i += 8) {
        __m512d dxh = _mm512_cvtps_pd(_mm256_loadu_ps(gr + i));
        if (w) dxh = _mm512_mul_pd(dxh, _mm512_cvtps_pd(_mm256_loadu_ps(w + i)));
        const __m512d xh = _mm512_mul_pd(_mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(xr + i)), vmu), vrs);
        v1 = _mm512_add_pd(v1, dxh);
        v2 = _mm512_fmadd_pd(dxh, xh, v2);
    }
    _mm512_storeu_pd(a1, v1);
    _mm512_storeu_pd(a2, v2);
#endif
    for (; i + 8 <= D; i += 8)
        for (int l = 0; l < 8; l++) {
            double dxh = (double)gr[i + l] * (w ? (double)w[i + l] : 1.0);
            double xh = ((double)xr[i + l] - mu) * rs;
            a1[l] += dxh;
            a2[l] += dxh * xh;
        }
    for (; i < D; i++) {
        double dxh = (double)gr[i] * (w ? (double)w[i] : 1.0);
        double xh = ((double)xr[i] - mu) * rs;
        a1[i % 8] += dxh;
        a2[i % 8] += dxh * xh;
    }
    const double m1 = vg_lanes_total(a1) / (double)D, m2 = vg_lanes_total(a2) / (double)D;
    real *o = dx;
    for (i = 0; i < D; i++) {
        double dxh = (double)gr[i] * (w ? (double)w[i] : 1.0);
        double xh = ((double)xr[i] - mu) * rs;
        const real v = (real)(rs * (dxh - m1 - xh * m2));   /* final scale · (term 1 + 2 + 3) */
        o[i] = accumulate ? o[i] + v : v;
        if (pw) { pw[i] += (double)gr[i] * xh; pb[i] += (double)gr[i]; }
    }
}
#endif
