/* lanes.h — reductions over a row in 8 double lanes (element j goes to lane j mod 8), combined in
 * lane order at the end. The compiler vectorises the lane loop (each lane is its own sum, so no
 * reassociation is needed), and the order is fixed: results do not depend on the thread count.
 * A plain `s += x[j]` loop is one serial chain of FP adds (latency-bound, 4 cycles each). */
#ifndef VG_TENSOR_LANES_H
#define VG_TENSOR_LANES_H
#include "real.h"
#include <stdint.h>

static inline double vg_lanes_total(const double acc[8]) {
    double s = 0;
    for (int l = 0; l < 8; l++) s += acc[l];
    return s;
}

/* Σ_j x[j] */
static inline double vg_sum_lanes(const real *x, int64_t n) {
    double acc[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)x[j + l];
    for (; j < n; j++) acc[j % 8] += (double)x[j];
    return vg_lanes_total(acc);
}

/* Σ_j (x[j] − mu)² */
static inline double vg_sumsq_dev_lanes(const real *x, double mu, int64_t n) {
    double acc[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) { double d = (double)x[j + l] - mu; acc[l] += d * d; }
    for (; j < n; j++) { double d = (double)x[j] - mu; acc[j % 8] += d * d; }
    return vg_lanes_total(acc);
}

/* Σ_j a[j]·b[j] */
static inline double vg_dot_lanes(const real *a, const real *b, int64_t n) {
    double acc[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)a[j + l] * (double)b[j + l];
    for (; j < n; j++) acc[j % 8] += (double)a[j] * (double)b[j];
    return vg_lanes_total(acc);
}

#endif
