/* simd.h — the row kernels whose speed depends on the instruction set (GELU, softmax, LayerNorm,
 * max pooling), one table per level: simd/rows.h holds their code, compiled once per instruction set
 * (rows_generic.c, rows_avx2.c, rows_avx512.c, rows_neon.c, each with its own target flags), and
 * isa/dispatch.c picks the table this CPU runs, once per process. nn/ calls them through vg_rows(). */
#ifndef VG_SIMD_H
#define VG_SIMD_H
#include "tensor/real.h"
#include "isa/isa.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const char *name;           /* e.g. "avx2 (exp and erf in 8 lanes)" */
    vg_isa isa;                 /* the level whose instructions it needs */
    /* y[0..n) = gelu(x + b);  dx[0..n) = dy ⊙ gelu'(x + b)   (simd/gelu.h) */
    void (*gelu)(const real *x, const real *b, real *y, int64_t n);
    void (*gelu_grad)(const real *x, const real *b, const real *dy, real *dx, int64_t n);
    /* each of `rows` rows of N values replaced by its softmax   (simd/softmax.h) */
    void (*softmax_rows)(real *s, int64_t rows, int64_t N);
    /* LayerNorm of one row, and its backward   (simd/layernorm.h) */
    void (*layernorm_row)(const real *x, const real *w, const real *b, real *y, int64_t D,
                          double eps, double *mean, double *rstd);
    void (*layernorm_grad_row)(const real *x, const real *dy, const real *w, double mean,
                               double rstd, int64_t D, real *dx, bool accumulate, double *pw,
                               double *pb);
    /* max pooling of one (H, W) plane to y, a (Ho, Wo): values and positions iy·W + ix; scratch
     * pp, hv and hd of the sizes vg_maxpool_scratch gives   (simd/pool.h) */
    void (*maxpool_plane)(const real *x, int64_t H, int64_t W, int64_t k, int64_t s, int64_t pad,
                          int64_t Ho, int64_t Wo, real *pp, real *hv, int32_t *hd, real *y, int32_t *a);
} vg_row_ops;

/* Max pooling's padded row: Wv columns of stride s, so that its pitch Wv·s holds the padding, the
 * W image columns and every tap of the Wo windows. */
static inline int64_t vg_maxpool_width(int64_t W, int64_t k, int64_t s, int64_t pad, int64_t Wo) {
    const int64_t taps = (Wo - 1) * s + k, need = taps > pad + W ? taps : pad + W;
    return (need + s - 1) / s;
}
/* its scratch per plane: *pp values of the padded plane, *hv = *hd entries of the across pass */
static inline void vg_maxpool_scratch(int64_t H, int64_t W, int64_t k, int64_t s, int64_t pad, int64_t Wo,
                                      int64_t *pp, int64_t *hv) {
    const int64_t Wv = vg_maxpool_width(W, k, s, pad, Wo);
    *pp = H * Wv * s + k;
    *hv = H * Wv;
}

/* The table in use (isa/dispatch.c). */
const vg_row_ops *vg_rows(void);

extern const vg_row_ops vg_rows_generic;
#if defined(__x86_64__) && !defined(VG_DOUBLE)
extern const vg_row_ops vg_rows_avx2, vg_rows_avx512;
#endif
#if defined(__aarch64__) && !defined(VG_DOUBLE)
extern const vg_row_ops vg_rows_neon;
#endif
#endif
