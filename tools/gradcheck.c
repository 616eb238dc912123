/* gradcheck.c — ./gradcheck [--list] [NAME…]: every registered op and layer against central
 * differences in float64 (eps 1e-6, atol 1e-5, rtol 1e-3, PyTorch's defaults). One row per case;
 * exits 1 if any row fails, 2 on a NAME that selects no case. NAME selects the rows whose op name
 * contains it. */
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

/* the distinct op names, in sorted order (cases are sorted by name first) */
static void print_names(FILE *f, const char *indent) {
    for (int k = 0; k < n_cases; k++)
        if (k == 0 || strcmp(cases[k]->name, cases[k - 1]->name)) fprintf(f, "%s%s\n", indent, cases[k]->name);
}

static bool selected(const gc_case *c, int argc, char **argv) {
    if (argc < 2) return true;
    for (int a = 1; a < argc; a++) if (strstr(c->name, argv[a])) return true;
    return false;
}

static void usage(FILE *f) {
    fprintf(f, "usage: ./gradcheck [--list] [NAME...]\n"
               "Checks every registered op and layer's analytic gradient against central finite\n"
               "differences in float64 (eps %g; a row passes when |analytic - numeric| <= atol %g +\n"
               "rtol %g * |numeric| for every input element). NAME runs only the rows whose op name\n"
               "contains it; a NAME that matches no op is an error (exit 2). --list prints the op\n"
               "names, one per line. Exit status 1 if any row fails.\n",
            VG_GRADCHECK_EPS, VG_GRADCHECK_ATOL, VG_GRADCHECK_RTOL);
}

int main(int argc, char **argv) {
    qsort(cases, (size_t)n_cases, sizeof cases[0], by_name);
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[a], "--list")) {
            if (argc > 2) { fprintf(stderr, "gradcheck: --list takes no other argument\n"); return 2; }
            print_names(stdout, "");
            return 0;
        }
        if (argv[a][0] == '-') { fprintf(stderr, "gradcheck: unknown flag '%s'\n", argv[a]); usage(stderr); return 2; }
        bool any = false;
        for (int k = 0; k < n_cases && !any; k++) any = strstr(cases[k]->name, argv[a]) != NULL;
        if (!any) {
            fprintf(stderr, "gradcheck: no op name contains '%s'; the op names are:\n", argv[a]);
            print_names(stderr, "  ");
            return 2;
        }
    }
    /* column widths from the rows that will be printed */
    char shapes[MAX_CASES][128];
    int w_name = (int)strlen("op"), w_var = (int)strlen("variant"), w_in = (int)strlen("inputs");
    for (int k = 0; k < n_cases; k++) {
        if (!selected(cases[k], argc, argv)) continue;
        shapes_text(cases[k], shapes[k], sizeof shapes[k]);
        int a = (int)strlen(cases[k]->name), b = (int)strlen(cases[k]->variant), c = (int)strlen(shapes[k]);
        if (a > w_name) w_name = a;
        if (b > w_var) w_var = b;
        if (c > w_in) w_in = c;
    }
    printf("float64 central differences, eps %g; a row passes when |analytic - numeric| <= atol %g + rtol %g * |numeric|\n",
           VG_GRADCHECK_EPS, VG_GRADCHECK_ATOL, VG_GRADCHECK_RTOL);
    printf("%-*s  %-*s  %-*s  %9s  %9s  %s\n", w_name, "op", w_var, "variant", w_in, "inputs", "max abs", "max rel", "result");
    int passed = 0, failed = 0;
    for (int k = 0; k < n_cases; k++) {
        const gc_case *c = cases[k];
        if (!selected(c, argc, argv)) continue;
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
        printf("%-*s  %-*s  %-*s  %9.2e  %9.2e  %s\n", w_name, c->name, w_var, c->variant, w_in, shapes[k],
               r.max_abs_err, r.max_rel_err, r.ok ? "PASS" : "FAIL");
        if (!r.ok) printf("    %s\n", r.message);
        fflush(stdout);
        if (r.ok) passed++; else failed++;
        for (int i = 0; i < c->n_inputs; i++) vg_tensor_free(inputs[i]);
        vg_arena_reset();
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
