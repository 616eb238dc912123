/* bf16.h — bfloat16 and the operations the --amp GEMMs are built on, in scalar C with the
 * instructions' semantics: the two AVX512_BF16 ones (Intel SDM pseudo-code; tests/test_gemm_bf16.c
 * checks them bit for bit against the instructions on CPUs that have them) and AMX's tdpbf16ps
 * (as Bochs's emulator defines it; checked against the tiles where a CPU has them). Used by the GEMM's fallback,
 * by gemm/emulate/avx512_bf16.h (the kernel with its intrinsics in C) and by the tests.
 *
 * A bf16 is the top 16 bits of an IEEE float: sign, 8 exponent bits, 7 fraction bits. */
#ifndef VG_BF16_H
#define VG_BF16_H
#include <stdint.h>
#include <math.h>
#include <string.h>

typedef uint16_t vg_bf16;

static inline uint32_t vg_f32_bits(float x) { uint32_t u; memcpy(&u, &x, sizeof u); return u; }
static inline float vg_bits_f32(uint32_t u) { float x; memcpy(&x, &u, sizeof x); return x; }
static inline float vg_bf16_to_f32(vg_bf16 h) { return vg_bits_f32((uint32_t)h << 16); }

/* vcvtne2ps2bf16 / vcvtneps2bf16 on one value: NaN → the same NaN made quiet (bit 6 of the bf16
 * set); a denormal → zero of its sign (the instruction treats denormal inputs as zero); otherwise
 * round to nearest, ties to even, on the 16 bits dropped (a carry may reach the exponent, up to
 * infinity). MXCSR is not consulted. */
static inline vg_bf16 vg_f32_to_bf16(float x) {
    const uint32_t u = vg_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (vg_bf16)((u >> 16) | 0x40u);
    if ((u & 0x7f800000u) == 0) return (vg_bf16)((u >> 16) & 0x8000u);
    return (vg_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
/* x rounded to bf16 and back: the value an FP32 operand has inside a bf16 product */
static inline float vg_round_bf16(float x) { return vg_bf16_to_f32(vg_f32_to_bf16(x)); }

/* One FP32 FMA step of vdpbf16ps: acc + a·b with denormal inputs (acc, a, b) taken as zero, the
 * product exact (two 8-bit significands), one rounding to nearest even at 24 bits, and a result
 * below FLT_MIN after that rounding flushed to zero of its sign (DAZ, FTZ; MXCSR not consulted).
 * Computed in double: p = a·b is exact there; s + e = p + acc exactly (TwoSum); s is rounded to a
 * 24-bit significand with an unbounded exponent, a tie broken by the sign of e. */
static inline float vg_bf16_fma_step(float acc, vg_bf16 a, vg_bf16 b) {
    if ((a & 0x7f80u) == 0) a &= 0x8000u;                      /* DAZ on the bf16 inputs */
    if ((b & 0x7f80u) == 0) b &= 0x8000u;
    if ((vg_f32_bits(acc) & 0x7f800000u) == 0) acc = vg_bits_f32(vg_f32_bits(acc) & 0x80000000u);
    const double p = (double)vg_bf16_to_f32(a) * (double)vg_bf16_to_f32(b), c = acc;
    const double s = p + c;
    if (s != s || s == 0 || s - s != 0) return (float)s;         /* NaN, exact zero, infinity */
    const double t = s - p, e = (p - (s - t)) + (c - t);         /* TwoSum: s + e == p + c */
    const int neg = s < 0;
    int ex;
    (void)frexp(s, &ex);                                         /* |s| = f·2^ex, f in [0.5, 1) */
    const double unit = ldexp(1.0, ex - 24);                     /* the 24th significant bit */
    const double q = fabs(s) / unit, fl = floor(q), frac = q - fl;   /* all exact */
    const double ea = neg ? -e : e;                              /* e, toward |s| */
    const int up = frac > 0.5 || (frac == 0.5 && (ea > 0 || (ea == 0 && fmod(fl, 2.0) != 0)));
    const double r = (up ? fl + 1 : fl) * unit;                  /* |v| to nearest even, exact */
    if (r < 0x1p-126) return neg ? -0.0f : 0.0f;                 /* FTZ */
    if (r >= 0x1p128) return neg ? -INFINITY : INFINITY;
    return neg ? -(float)r : (float)r;
}

/* One lane of vdpbf16ps: acc += a_odd·b_odd, then += a_even·b_even, two FMA steps in that order
 * (the SDM's pseudo-code: element 2i+1 first). A pair holds element 2i in its low 16 bits. */
static inline float vg_bf16_dot_pair(float acc, uint32_t a, uint32_t b) {
    acc = vg_bf16_fma_step(acc, (vg_bf16)(a >> 16), (vg_bf16)(b >> 16));
    return vg_bf16_fma_step(acc, (vg_bf16)(a & 0xffffu), (vg_bf16)(b & 0xffffu));
}

/* a + b in FP32 with denormal inputs taken as zero and a denormal result flushed (DAZ, FTZ) */
static inline float vg_bf16_add_daz_ftz(float a, float b) {
    if ((vg_f32_bits(a) & 0x7f800000u) == 0) a = vg_bits_f32(vg_f32_bits(a) & 0x80000000u);
    if ((vg_f32_bits(b) & 0x7f800000u) == 0) b = vg_bits_f32(vg_f32_bits(b) & 0x80000000u);
    const float s = a + b;
    return (vg_f32_bits(s) & 0x7f800000u) == 0 ? vg_bits_f32(vg_f32_bits(s) & 0x80000000u) : s;
}

/* tdpbf16ps on one row of C: c[n] += Σ_p a[2p]·b[p][2n] + a[2p+1]·b[p][2n+1] for n < nn, p < kp,
 * the way Bochs's emulator of the instruction does it (bochs/cpu/avx/amx.cc): per n, the even and
 * the odd products are each accumulated from zero in their own FP32 sum, p ascending, one rounding
 * per step (vg_bf16_fma_step: DAZ, FTZ, nearest even); then c[n] + (even + odd), DAZ/FTZ adds.
 * a: the row of the A tile (2·kp bf16); b: the B tile, row p holding 2·nn bf16 at b + p·ldb. */
static inline void vg_tdpbf16ps_row(float *c, const vg_bf16 *a, const vg_bf16 *b, int ldb, int kp, int nn) {
    for (int n = 0; n < nn; n++) {
        float even = 0, odd = 0;
        for (int p = 0; p < kp; p++) {
            even = vg_bf16_fma_step(even, a[2 * p], b[(long)p * ldb + 2 * n]);
            odd = vg_bf16_fma_step(odd, a[2 * p + 1], b[(long)p * ldb + 2 * n + 1]);
        }
        c[n] = vg_bf16_add_daz_ftz(c[n], vg_bf16_add_daz_ftz(even, odd));
    }
}
#endif
