/* bf16_pairs.h — FP32 → bf16 pairs, the unit both bf16 kernels pack their operands in: a 32-bit
 * word holding two bf16 neighbours along k, k even in the low half (what vdpbf16ps and tdpbf16ps
 * multiply). Internal to gemm/: included by bf16_dp.c and amx.c after the intrinsics (or their
 * emulations in gemm/emulate/) and common.h. */
#ifndef VG_GEMM_BF16_PAIRS_H
#define VG_GEMM_BF16_PAIRS_H
#include <stdint.h>
#include <string.h>

#define X16(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15)

static inline __m512 load_n(const float *p, int n) {            /* n ≤ 16 floats, the rest 0 */
    return _mm512_maskz_loadu_ps((__mmask16)(n >= 16 ? 0xffff : (1u << (n > 0 ? n : 0)) - 1), p);
}

/* 32 values along k (n of them present) → 16 pairs */
static VG_ALWAYS_INLINE __m512i pairs_along_k_v(const float *s, int n) {
    __m512bh v = _mm512_cvtne2ps_pbh(load_n(s + 16, n - 16), load_n(s, n));
    __m512i w;
    memcpy(&w, &v, 64);
    return w;
}
/* 16 rows at k (lo) and k+1 (hi, or NULL: zeros), n of them present → 16 pairs (lo[r], hi[r]) */
static const uint16_t interleave_idx[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                            8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
static VG_ALWAYS_INLINE __m512i pairs_across_rows_v(const float *lo, const float *hi, int n) {
    __m512bh v = _mm512_cvtne2ps_pbh(hi ? load_n(hi, n) : load_n(lo, 0), load_n(lo, n));
    __m512i w, idx;
    memcpy(&w, &v, 64); memcpy(&idx, interleave_idx, 64);
    return _mm512_permutexvar_epi16(idx, w);
}

/* The transpose of 16 vectors of 16 dwords, in registers (lane j of r[i] ↔ lane i of r[j]): four
 * rounds s = 1, 2, 4, 8, each swapping the off-diagonal s×s blocks of every 2s×2s block with two
 * vpermt2d per pair of rows (lo: a's lanes where j & s is clear, else c's lane j − s; hi: a's lane
 * j + s where j & s is clear, else c's lane j). 64 shuffles for 256 dwords; written out so that
 * r stays in registers. */
static VG_ALWAYS_INLINE __m512i transpose_index(int round, int hi) {
    uint32_t v[16];
    const int s = 1 << round;
    for (int j = 0; j < 16; j++) v[j] = (uint32_t)(hi ? (j & s ? 16 + j : j + s) : (j & s ? 16 + j - s : j));
    __m512i r;
    memcpy(&r, v, 64);
    return r;
}
static VG_ALWAYS_INLINE void transpose16_epi32(__m512i r[16]) {
#define SWAP(i, s) { const __m512i a_ = r[i], c_ = r[(i) + (s)];                                      \
                     r[i] = _mm512_permutex2var_epi32(a_, il, c_);                                 \
                     r[(i) + (s)] = _mm512_permutex2var_epi32(a_, ih, c_); }
/* round k (s = 2^k): the rows i with bit k clear, in two runs of four */
#define ROUND(k, i0, i1, i2, i3, i4, i5, i6, i7)                                                   \
    { const __m512i il = transpose_index(k, 0), ih = transpose_index(k, 1);                        \
      SWAP(i0, 1 << k) SWAP(i1, 1 << k) SWAP(i2, 1 << k) SWAP(i3, 1 << k)                          \
      SWAP(i4, 1 << k) SWAP(i5, 1 << k) SWAP(i6, 1 << k) SWAP(i7, 1 << k) }
    ROUND(0, 0, 2, 4, 6, 8, 10, 12, 14)
    ROUND(1, 0, 1, 4, 5, 8, 9, 12, 13)
    ROUND(2, 0, 1, 2, 3, 8, 9, 10, 11)
    ROUND(3, 0, 1, 2, 3, 4, 5, 6, 7)
#undef ROUND
#undef SWAP
}

#endif
