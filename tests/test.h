/* test.h — a tiny self-registering test harness.
 *   VG_TEST(name) { CHECK(x == 1); CHECK_CLOSE(a, b, tol); }
 * Each test counts once: passed if no check failed. Skips are visible: VG_SKIP("why"). */
#ifndef VG_TEST_H
#define VG_TEST_H
#include <stdio.h>
#include <math.h>

typedef void (*vg_test_fn)(void);
void vg_test_register(const char *name, const char *file, vg_test_fn fn);
void vg_test_fail(const char *file, int line, const char *fmt, ...);
void vg_test_skip(const char *why);
int  vg_test_failed_now(void);
/* Runs a shell command whose leading "./" names one of our programs: it runs from $VG_BIN when
 * set (tests/run.sh sets it to where the programs were built), else from the repo root. Its
 * combined output goes into out (truncated to n bytes; out may be NULL); returns the exit status. */
int  vg_test_run(const char *cmd, char *out, size_t n);
/* "" or $VG_EXEC_WRAPPER and a space: what vg_test_run puts before our programs (qemu-aarch64 in
 * make test-arm64), for a test that names one inside a command (./launch … -- TRAIN) */
const char *vg_test_exec_wrapper(void);
/* A small learnable dataset in the CIFAR-10 binary format in dir: 5 x 64 train records, 64 test
 * records (test_train.c, test_mpi.c). */
#include <stdbool.h>
bool vg_test_write_cifar(const char *dir);
/* Starts cmd (as vg_test_run: a leading "./" names our program) in the background, its combined
 * output into the file log_path; returns the pid of the program itself (the shell execs it), so a
 * signal sent to it reaches the program. vg_test_wait returns its exit status, or 128 + the
 * signal that ended it. */
int  vg_test_spawn(const char *cmd, const char *log_path);
int  vg_test_wait(int pid);
/* Whether our program `name` (e.g. "inspect") is built, in the same directory. */
int  vg_test_have_program(const char *name);
/* ./train built with the test faults (base/fault.h): $VG_TRAIN_FAULTS (tests/run.sh sets it to
 * build/train-faults), else build/train-faults; NULL when it is not there (the test skips). */
const char *vg_test_train_faults(void);

/* Comparing results with a reference (every PyTorch-parity test): max |got − want|, max |want| and
 * max_abs / max |want| (max_abs itself when the reference is all zeros). Any NaN — in got, in want,
 * or inf − inf — makes max_abs and rel NaN, so a `rel <= tol` check fails (fmax would drop it). */
typedef struct { double max_abs, ref_max, rel; long nans; } vg_test_diff;
vg_test_diff vg_test_compare(const float *got, const float *want, size_t n);
vg_test_diff vg_test_compare_f64(const double *got, const float *want, size_t n);
/* `got` against the reference tensor `key` of the safetensors file f (read as float32): fails the
 * test, naming `what`, when the relative error (vg_test_compare) is not <= tol, or the reference is
 * missing or of another size; prints both errors with VG_VERBOSE=1. Returns the relative error
 * (INFINITY when it could not compare). */
struct vg_tensor; struct vg_st_file;
double vg_test_check_ref(const char *what, struct vg_tensor *got, const struct vg_st_file *f, const char *key, double tol);
/* max |x[i]|, NaN if any x[i] is */
double vg_test_max_abs(const float *x, size_t n);
/* the larger of a and b, NaN if either is (a running worst error that a NaN cannot reset) */
static inline double vg_test_max(double a, double b) { return a != a || b != b ? NAN : a > b ? a : b; }

#define VG_TEST(name)                                                         \
    static void name(void);                                                   \
    __attribute__((constructor)) static void name##_register(void) {          \
        vg_test_register(#name, __FILE__, name);                              \
    }                                                                         \
    static void name(void)

#define CHECK(cond) do { if (!(cond)) vg_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) vg_test_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_CLOSE(a, b, tol) do { double _a = (double)(a), _b = (double)(b);               \
    if (!(fabs(_a - _b) <= (tol))) vg_test_fail(__FILE__, __LINE__, "%s = %.9g, expected %s = %.9g (tol %g)", \
                                             #a, _a, #b, _b, (double)(tol)); } while (0)
#define REQUIRE(cond) do { if (!(cond)) { vg_test_fail(__FILE__, __LINE__, "REQUIRE(%s)", #cond); return; } } while (0)
#define REQUIRE_MSG(cond, ...) do { if (!(cond)) { vg_test_fail(__FILE__, __LINE__, __VA_ARGS__); return; } } while (0)
#define VG_SKIP(why) do { vg_test_skip(why); return; } while (0)
#endif
