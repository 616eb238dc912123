/* clock.h — the monotonic clock in seconds, and the median of repeated timings (for timings and
 * timeouts only; never for results). */
#ifndef VG_CLOCK_H
#define VG_CLOCK_H
#include <stdlib.h>
#include <time.h>

static inline double vg_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* qsort order of doubles (ascending) */
static inline int vg_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median of v[0..n), n >= 1 (the mean of the middle two when n is even); sorts v */
static inline double vg_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, vg_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
#endif
