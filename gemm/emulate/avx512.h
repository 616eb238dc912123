/* avx512.h — the AVX-512 intrinsics gemm/kernel_avx512.h's 12×32 micro-kernel uses, in plain C,
 * so `make test` runs that kernel (and the MR = 12, NR = 32 blocking and packing around it) on
 * machines without AVX-512 (tests/run.sh: "GEMM kernel avx512 12x32, emulated in C"). Only for
 * that build: gemm/gemm_avx512.c includes this file when compiled with -DVG_GEMM_EMULATE_AVX512 and
 * without __AVX512F__.
 *
 * Each function keeps the semantics the kernel relies on, and checks what real hardware would
 * fault on: fmadd rounds once per lane (fmaf); masked loads read only the lanes their mask selects
 * and zero the others; masked stores write only the selected lanes (so a partial tile never touches
 * memory past the end of a row: ASan sees it in `make asan`); the aligned load aborts on an address
 * that is not 64-byte aligned (a general-protection fault on hardware). Included after
 * <immintrin.h>, whose own declarations of these names the macros below hide. */
#ifndef VG_AVX512_EMULATED_H
#define VG_AVX512_EMULATED_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { float v[16]; } vg_emu_m512;
typedef uint16_t vg_emu_mask16;
#define __m512 vg_emu_m512
#define __mmask16 vg_emu_mask16

static inline vg_emu_m512 vg_emu_setzero_ps(void) { vg_emu_m512 r = {{0}}; return r; }
static inline vg_emu_m512 vg_emu_set1_ps(float x) {
    vg_emu_m512 r;
    for (int i = 0; i < 16; i++) r.v[i] = x;
    return r;
}
static inline vg_emu_m512 vg_emu_load_ps(const float *p) {
    if ((uintptr_t)p % 64) {
        fprintf(stderr, "avx512_emulated: _mm512_load_ps at %p, not 64-byte aligned\n", (const void *)p);
        abort();
    }
    vg_emu_m512 r;
    for (int i = 0; i < 16; i++) r.v[i] = p[i];
    return r;
}
static inline vg_emu_m512 vg_emu_maskz_loadu_ps(vg_emu_mask16 m, const float *p) {
    vg_emu_m512 r;
    for (int i = 0; i < 16; i++) r.v[i] = (m >> i) & 1 ? p[i] : 0.0f;
    return r;
}
static inline void vg_emu_mask_storeu_ps(float *p, vg_emu_mask16 m, vg_emu_m512 x) {
    for (int i = 0; i < 16; i++)
        if ((m >> i) & 1) p[i] = x.v[i];
}
static inline vg_emu_m512 vg_emu_fmadd_ps(vg_emu_m512 a, vg_emu_m512 b, vg_emu_m512 c) {
    vg_emu_m512 r;
    for (int i = 0; i < 16; i++) r.v[i] = fmaf(a.v[i], b.v[i], c.v[i]);
    return r;
}

#define _mm512_setzero_ps vg_emu_setzero_ps
#define _mm512_set1_ps vg_emu_set1_ps
#define _mm512_load_ps vg_emu_load_ps
#define _mm512_maskz_loadu_ps vg_emu_maskz_loadu_ps
#define _mm512_mask_storeu_ps vg_emu_mask_storeu_ps
#define _mm512_fmadd_ps vg_emu_fmadd_ps

#endif
