/* common.h — what the fuzz harnesses share: the libFuzzer entry point, the "clear error"
 * property every reader must keep, and a scratch directory for the readers that take paths.
 *
 * Each fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput. It is linked two ways (see the
 * Makefile): with clang's libFuzzer for `make fuzz`, and with fuzz/replay.c — a plain main() —
 * for `make test` / `make asan`, which replay the committed corpora and regressions. */
#ifndef VG_FUZZ_COMMON_H
#define VG_FUZZ_COMMON_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A reader that fails must say why, naming the file: err is non-empty and contains `name`.
 * Otherwise print the message and abort() — the fuzzer records the input as a finding. */
void fuzz_expect_error(const char *err, const char *name);
/* with FUZZ_VERBOSE=1 in the environment, print a line about the input's outcome (to stderr) */
void fuzz_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* abort() with a message when cond is false (a property of a successful read) */
void fuzz_require(int cond, const char *what);

/* A private scratch directory (created on first use under /dev/shm or $TMPDIR, removed at exit);
 * fuzz_scratch_clear() empties it between inputs. */
const char *fuzz_scratch(void);
void fuzz_scratch_clear(void);
/* write n bytes to dir/name (name may contain '/': parents must exist); 0 or -1 */
int fuzz_write_file(const char *dir, const char *name, const void *data, size_t n);
#endif
