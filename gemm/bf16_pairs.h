/* bf16_pairs.h — FP32 → bf16 pairs, the unit both bf16 kernels pack their operands in: a 32-bit
 * word holding two bf16 neighbours along k, k even in the low half (what vdpbf16ps and tdpbf16ps
 * multiply). Internal to gemm/: included by bf16_dp.c and amx.c after the intrinsics (or their
 * emulations in gemm/emulate/) and common.h. */
#ifndef VG_GEMM_BF16_PAIRS_H
#define VG_GEMM_BF16_PAIRS_H
#include <stdint.h>
#include <string.h>

static inline __m512 load_n(const float *p, int n) {            /* n ≤ 16 floats, the rest 0 */
    return _mm512_maskz_loadu_ps((__mmask16)(n >= 16 ? 0xffff : (1u << (n > 0 ? n : 0)) - 1), p);
}

/* 32 values along k (n of them present) → 16 pairs, at tmp */
static VG_ALWAYS_INLINE void pairs_along_k(uint32_t tmp[16], const float *s, int n) {
    __m512bh v = _mm512_cvtne2ps_pbh(load_n(s + 16, n - 16), load_n(s, n));
    memcpy(tmp, &v, 64);
}
/* 16 rows at k (lo) and k+1 (hi), n of them present → 16 pairs (lo[r], hi[r]), at tmp */
static const uint16_t interleave_idx[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                            8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
static VG_ALWAYS_INLINE void pairs_across_rows(uint32_t tmp[16], const float *lo, const float *hi, int n) {
    __m512bh v = _mm512_cvtne2ps_pbh(hi ? load_n(hi, n) : load_n(lo, 0), load_n(lo, n));
    __m512i w, idx;
    memcpy(&w, &v, 64); memcpy(&idx, interleave_idx, 64);
    w = _mm512_permutexvar_epi16(idx, w);
    memcpy(tmp, &w, 64);
}

#endif
