/* gradcheck.c — ./gradcheck [NAME…]: every registered op and layer against central differences
 * in float64 (eps 1e-6, atol 1e-5, rtol 1e-3, PyTorch's defaults). One row per case; exits
 * non-zero if any row fails. NAME selects the rows whose op name contains it. */
#include "gradcheck.h"
#include <stdlib.h>
#include <string.h>

#define MAX_CASES 512
static const gc_case *cases[MAX_CASES];
static int n_cases;

void gc_register(const gc_case *c) { if (n_cases < MAX_CASES) cases[n_cases++] = c; }

static int by_name(const void *a, const void *b) {
    const gc_case *x = *(const gc_case *const *)a, *y = *(const gc_case *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->variant, y->variant);
}

static void shapes_text(const gc_case *c, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < c->n_inputs && len < n; i++) {
        len += (size_t)snprintf(buf + len, n - len, "%s(", i ? " " : "");
        for (int d = 0; d < c->in[i].ndim && len < n; d++)
            len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? "," : "", (long long)c->in[i].shape[d]);
        if (len < n) len += (size_t)snprintf(buf + len, n - len, ")");
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: ./gradcheck [NAME...]\n"
               "Checks every registered op and layer's analytic gradient against central finite\n"
               "differences in float64 (eps %g, atol %g, rtol %g). NAME runs only rows whose op\n"
               "name contains it. Exit status 1 if any row fails.\n", VG_GRADCHECK_EPS, VG_GRADCHECK_ATOL, VG_GRADCHECK_RTOL);
        return 0;
    }
    qsort(cases, (size_t)n_cases, sizeof cases[0], by_name);
    printf("%-22s %-22s %-34s %10s %10s  %s\n", "op", "variant", "inputs", "max abs", "max rel", "result");
    int passed = 0, failed = 0;
    for (int k = 0; k < n_cases; k++) {
        const gc_case *c = cases[k];
        if (argc > 1) {
            bool match = false;
            for (int a = 1; a < argc; a++) if (strstr(c->name, argv[a])) match = true;
            if (!match) continue;
        }
        vg_rng rng = vg_rng_seed(42 + (uint64_t)k);
        vg_tensor *inputs[GC_MAX_INPUTS];
        for (int i = 0; i < c->n_inputs; i++) {
            const gc_input *in = &c->in[i];
            vg_tensor *t = in->lo == 0 && in->hi == 0 ? vg_randn(&rng, in->ndim, in->shape, 0, 1)
                                                      : vg_rand(&rng, in->ndim, in->shape, in->lo, in->hi);
            inputs[i] = vg_persist(t);
            inputs[i]->requires_grad = !in->no_grad;
        }
        if (c->prepare) c->prepare(inputs, c->ctx);
        vg_arena_reset();
        vg_gradcheck_result r = vg_gradcheck(c->f, c->ctx, c->n_inputs, inputs,
                                             VG_GRADCHECK_EPS, VG_GRADCHECK_ATOL, VG_GRADCHECK_RTOL);
        char shapes[128];
        shapes_text(c, shapes, sizeof shapes);
        printf("%-22s %-22s %-34s %10.2e %10.2e  %s\n", c->name, c->variant, shapes, r.max_abs_err, r.max_rel_err,
               r.ok ? "PASS" : "FAIL");
        if (!r.ok) printf("    %s\n", r.message);
        fflush(stdout);
        if (r.ok) passed++; else failed++;
        for (int i = 0; i < c->n_inputs; i++) vg_tensor_free(inputs[i]);
        vg_arena_reset();
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
