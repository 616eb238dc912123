/* bf16_emulated.h — the AVX512_BF16 intrinsics gemm/bf16_dp.c's kernel and packing use, in
 * plain C on the scalar definitions of gemm/bf16.h, so `make test` runs the vdpbf16ps kernel (and
 * the blocking and pair packing around it) on any machine, and on machines with AVX512_BF16 checks
 * the C against the instructions (tests/test_gemm_bf16.c). Only for that build: gemm/bf16_dp.c
 * includes this file when compiled with -DVG_GEMM_EMULATE_BF16, after <immintrin.h> (and after
 * gemm/emulate/avx512.h where AVX-512F itself is emulated), whose declarations the macros hide.
 *
 *   _mm512_dpbf16_ps(acc, a, b)    vdpbf16ps: per lane i, two FMA steps, element 2i+1 then 2i,
 *                                  DAZ/FTZ, round to nearest even (vg_bf16_dot_pair)
 *   _mm512_cvtne2ps_pbh(hi, lo)    vcvtne2ps2bf16: 32 bf16, lo's 16 values first (vg_f32_to_bf16)
 *   _mm512_permutexvar_epi16(i, x) vpermw: word j = x's word i[j] mod 32
 *   _mm512_permutex2var_epi32(a, i, b)   vpermt2d: dword j = (i[j] & 16 ? b : a)'s dword i[j] mod 16
 *   _mm512_mask_storeu_epi32(p, m, x)    the dwords of x whose mask bit is set, to p (only those)
 * The 512-bit integer and bf16 vectors are structs of lanes; the kernel moves them with memcpy. */
#ifndef VG_BF16_EMULATED_H
#define VG_BF16_EMULATED_H
#include "gemm/bf16.h"
#include <string.h>

typedef struct { uint16_t w[32]; } vg_emu_m512bh;
typedef struct { uint16_t w[32]; } vg_emu_m512i;
#define __m512bh vg_emu_m512bh
#define __m512i vg_emu_m512i

static inline __m512 vg_emu_dpbf16_ps(__m512 acc, vg_emu_m512bh a, vg_emu_m512bh b) {
    float f[16];
    memcpy(f, &acc, sizeof f);
    for (int i = 0; i < 16; i++)
        f[i] = vg_bf16_dot_pair(f[i], a.w[2 * i] | (uint32_t)a.w[2 * i + 1] << 16,
                                b.w[2 * i] | (uint32_t)b.w[2 * i + 1] << 16);
    memcpy(&acc, f, sizeof f);
    return acc;
}
static inline vg_emu_m512bh vg_emu_cvtne2ps_pbh(__m512 hi, __m512 lo) {
    float h[16], l[16];
    memcpy(h, &hi, sizeof h); memcpy(l, &lo, sizeof l);
    vg_emu_m512bh r;
    for (int i = 0; i < 16; i++) { r.w[i] = vg_f32_to_bf16(l[i]); r.w[16 + i] = vg_f32_to_bf16(h[i]); }
    return r;
}
static inline vg_emu_m512i vg_emu_permutexvar_epi16(vg_emu_m512i idx, vg_emu_m512i x) {
    vg_emu_m512i r;
    for (int j = 0; j < 32; j++) r.w[j] = x.w[idx.w[j] & 31];
    return r;
}

static inline vg_emu_m512i vg_emu_permutex2var_epi32(vg_emu_m512i a, vg_emu_m512i idx, vg_emu_m512i b) {
    uint32_t x[16], y[16], i[16], r[16];
    memcpy(x, &a, 64); memcpy(y, &b, 64); memcpy(i, &idx, 64);
    for (int j = 0; j < 16; j++) r[j] = (i[j] & 16 ? y : x)[i[j] & 15];
    vg_emu_m512i out;
    memcpy(&out, r, 64);
    return out;
}
static inline void vg_emu_mask_storeu_epi32(void *p, __mmask16 m, vg_emu_m512i x) {
    uint32_t v[16];
    memcpy(v, &x, 64);
    for (int j = 0; j < 16; j++)
        if ((m >> j) & 1) memcpy((char *)p + 4 * j, &v[j], 4);
}

#define _mm512_dpbf16_ps vg_emu_dpbf16_ps
#define _mm512_cvtne2ps_pbh vg_emu_cvtne2ps_pbh
#define _mm512_permutexvar_epi16 vg_emu_permutexvar_epi16
#define _mm512_permutex2var_epi32 vg_emu_permutex2var_epi32
#define _mm512_mask_storeu_epi32 vg_emu_mask_storeu_epi32
#endif
