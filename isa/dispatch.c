/* dispatch.c — chooses every instruction-set-dependent kernel, once per process: for the FP32 GEMM
 * and for the row kernels, the highest table whose level vg_isa_allows (the CPU has it and VG_ISA
 * does not cap it below). A table built with its intrinsics emulated in C (make test's
 * run_tests_emulated) runs wherever AVX2+FMA does. The float64 library has only the generic
 * tables. The bf16 GEMM's backends (gemm/bf16.c) check their own levels. */
#include "dispatch.h"
#include <pthread.h>
#include <stdio.h>

static const vg_gemm_ops *const gemm_tables[] = {   /* highest level first */
#if defined(__x86_64__) && !defined(VG_DOUBLE)
    &vg_gemm_avx512, &vg_gemm_avx2,
#endif
#if defined(__aarch64__) && !defined(VG_DOUBLE)
    &vg_gemm_neon,
#endif
    &vg_gemm_generic,
};
static const vg_row_ops *const row_tables[] = {
#if defined(__x86_64__) && !defined(VG_DOUBLE)
    &vg_rows_avx512, &vg_rows_avx2,
#endif
#if defined(__aarch64__) && !defined(VG_DOUBLE)
    &vg_rows_neon,
#endif
    &vg_rows_generic,
};

static vg_kernel_set chosen;
static char summary[320];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool runs_here(vg_isa level, bool emulated) {
    if (vg_isa_allows(level)) return true;
    /* emulated: the level's intrinsics are C, so the CPU needs only AVX2+FMA; the cap still holds */
    return emulated && vg_isa_allows(VG_ISA_AVX2) && vg_isa_within_cap(level);
}

static void choose(void) {
    chosen.gemm = &vg_gemm_generic;
    chosen.rows = &vg_rows_generic;
    for (size_t i = 0; i < sizeof gemm_tables / sizeof gemm_tables[0]; i++)
        if (runs_here(gemm_tables[i]->isa, gemm_tables[i]->emulated)) { chosen.gemm = gemm_tables[i]; break; }
    for (size_t i = 0; i < sizeof row_tables / sizeof row_tables[0]; i++)
        if (runs_here(row_tables[i]->isa, false)) { chosen.rows = row_tables[i]; break; }
    const char *note = vg_isa_cap_note();
    snprintf(summary, sizeof summary, "kernels: %s (this CPU: %s); GEMM %s, rows %s%s%s",
             vg_isa_name(vg_isa_level()), vg_isa_name(vg_isa_best()), chosen.gemm->name,
             chosen.rows->name, note ? "; " : "", note ? note : "");
}

const vg_kernel_set *vg_kernels(void) {
    pthread_once(&once, choose);
    return &chosen;
}

const vg_row_ops *vg_rows(void) { return vg_kernels()->rows; }

const char *vg_kernels_summary(void) {
    pthread_once(&once, choose);
    return summary;
}
