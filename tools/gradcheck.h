/* gradcheck.h — the case registry of the ./gradcheck program (compiled in float64).
 * A case names an op, a variant (contiguous / transposed / broadcast …), a function building the
 * op's output from persistent leaf inputs, and how to fill those inputs. Files tools/gradcheck_*.c
 * register cases with GC_CASE; ./gradcheck runs them all and prints one row per case. */
#ifndef VG_GRADCHECK_TOOL_H
#define VG_GRADCHECK_TOOL_H
#include "autograd/autograd.h"

#define GC_MAX_INPUTS 8
typedef struct {
    int     ndim;
    int64_t shape[VG_MAX_DIMS];
    double  lo, hi;          /* uniform in [lo, hi]; lo == hi == 0 means standard normal */
    bool    no_grad;         /* an input that is not differentiated (e.g. labels) */
} gc_input;

typedef struct {
    const char     *name, *variant;
    vg_gradcheck_fn f;
    void           *ctx;
    int             n_inputs;
    gc_input        in[GC_MAX_INPUTS];
    /* optional: fill inputs by hand (e.g. integer labels) after the random fill */
    void          (*prepare)(vg_tensor **inputs, void *ctx);
} gc_case;

void gc_register(const gc_case *c);
#define GC_REGISTER(id, ...)                                                        \
    __attribute__((constructor)) static void gc_register_##id(void) {              \
        static const gc_case c = __VA_ARGS__;                                       \
        gc_register(&c);                                                            \
    }
/* shorthand for an input: GC_IN(2, 3, 4) is a normal (2, 3, 4) input */
#define GC_IN(...) {.ndim = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), .shape = {__VA_ARGS__}}
#define GC_IN_RANGE(lo_, hi_, ...) {.ndim = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), .shape = {__VA_ARGS__}, .lo = lo_, .hi = hi_}
#endif
