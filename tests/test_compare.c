/* test_compare.c — the comparison every parity test uses (test.h: vg_test_compare), and the proof
 * that a NaN result fails it. */
#include "test.h"
#include "tensor/safetensors.h"
#include "tensor/tensor.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* One loop for both element types of `got`; an explicit NaN test and comparisons instead of fmax,
 * which drops NaN (fmax(0, NaN) = 0) and, reducing over a float array, crashes gcc 12 for aarch64
 * at -O3. */
#define COMPARE_LOOP(got, want, n)                                               \
    vg_test_diff r = {0, 0, 0, 0};                                               \
    for (size_t i = 0; i < (n); i++) {                                           \
        const double g = (double)(got)[i], w = (double)(want)[i], d = fabs(g - w); \
        if (isnan(d)) { r.nans++; continue; }                                    \
        if (d > r.max_abs) r.max_abs = d;                                        \
        if (fabs(w) > r.ref_max) r.ref_max = fabs(w);                            \
    }                                                                            \
    r.rel = r.ref_max > 0 ? r.max_abs / r.ref_max : r.max_abs;                   \
    if (r.nans) r.max_abs = r.rel = NAN;                                         \
    return r

vg_test_diff vg_test_compare(const float *got, const float *want, size_t n) { COMPARE_LOOP(got, want, n); }
vg_test_diff vg_test_compare_f64(const double *got, const float *want, size_t n) { COMPARE_LOOP(got, want, n); }

double vg_test_check_ref(const char *what, vg_tensor *got, const vg_st_file *f, const char *key, double tol) {
    const vg_st_tensor *r = vg_st_find(f, key);
    if (!r || !got || (int64_t)r->numel != vg_numel(got)) {
        vg_test_fail(__FILE__, __LINE__, "%s: %s", what, !got ? vg_error() : !r ? "not in the reference" : "size differs");
        return INFINITY;
    }
    float *ref = malloc(sizeof(float) * (r->numel ? r->numel : 1));
    char err[256];
    if (!ref || vg_st_read_f32(f, key, ref, r->numel, err, sizeof err)) {
        free(ref);
        vg_test_fail(__FILE__, __LINE__, "%s: %s", what, err);
        return INFINITY;
    }
    const vg_test_diff d = vg_test_compare(vg_data(vg_contiguous_raw(got)), ref, r->numel);
    free(ref);
    if (getenv("VG_VERBOSE")) printf("      %-44s max abs %.3e  rel %.3e  (|ref| ≤ %.3e)\n", what, d.max_abs, d.rel, d.ref_max);
    if (!(d.rel <= tol))
        vg_test_fail(__FILE__, __LINE__, "%s: max abs err %.3e, rel %.3e (|ref| max %.3e) > %g", what, d.max_abs, d.rel, d.ref_max, tol);
    return d.rel;
}

double vg_test_max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double a = fabs((double)x[i]);
        if (isnan(a)) return NAN;
        if (a > m) m = a;
    }
    return m;
}

VG_TEST(compare_fails_on_any_nan) {
    const float want[4] = {1, -2, 3, 0.5f};
    float got[4] = {1, -2, 3, 0.5f};
    vg_test_diff d = vg_test_compare(got, want, 4);
    CHECK(d.max_abs == 0 && d.rel == 0 && d.ref_max == 3 && d.nans == 0);
    got[1] = -2.0006f;                                        /* a small error: rel 2e-4 */
    d = vg_test_compare(got, want, 4);
    CHECK(d.rel > 1.9e-4 && d.rel < 2.1e-4 && !(d.rel <= 1e-4));
    got[1] = NAN;                                             /* a NaN result must fail a 1e-4 check */
    d = vg_test_compare(got, want, 4);
    CHECK(d.nans == 1 && !(d.rel <= 1e-4) && !(d.max_abs < 1e30));
    got[1] = -2; got[0] = INFINITY;                           /* inf vs a finite reference: rel inf */
    d = vg_test_compare(got, want, 4);
    CHECK(!(d.rel <= 1e-4));
    const float want_nan[2] = {NAN, 1};                       /* a NaN in the reference fails too */
    const double got_d[2] = {0, 1};
    CHECK(!(vg_test_compare_f64(got_d, want_nan, 2).rel <= 1e-4));
    CHECK(vg_test_max_abs(got, 4) == INFINITY && vg_test_max_abs(want, 4) == 3);
    got[2] = NAN;
    CHECK(vg_test_max_abs(got, 4) != vg_test_max_abs(got, 4));
    CHECK(vg_test_max(1, NAN) != vg_test_max(1, NAN) && vg_test_max(NAN, 1) != vg_test_max(NAN, 1) && vg_test_max(1, 2) == 2);
}
