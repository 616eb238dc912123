/* rng.c — xoshiro256** (Blackman & Vigna), seeded through splitmix64. */
#include "rng.h"
#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

vg_rng vg_rng_seed(uint64_t seed) {
    vg_rng r;
    for (int i = 0; i < 4; i++) r.s[i] = splitmix64(&seed);
    return r;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t vg_rng_next(vg_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double vg_rng_uniform(vg_rng *r) { return (double)(vg_rng_next(r) >> 11) * 0x1.0p-53; }

uint32_t vg_rng_below(vg_rng *r, uint32_t n) {
    /* Lemire's multiply-shift with rejection: unbiased */
    uint64_t m = (uint64_t)(uint32_t)(vg_rng_next(r) >> 32) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)(uint32_t)(vg_rng_next(r) >> 32) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double vg_rng_normal(vg_rng *r) {
    double u1 = vg_rng_uniform(r), u2 = vg_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

double vg_rng_trunc_normal(vg_rng *r, double mean, double std, double a, double b) {
    for (;;) {
        double x = mean + std * vg_rng_normal(r);
        if (x >= a && x <= b) return x;
    }
}

static uint64_t mix64(uint64_t z) {
    z ^= z >> 30; z *= 0xbf58476d1ce4e5b9ULL;
    z ^= z >> 27; z *= 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
vg_rng vg_rng_derive(const vg_rng *root, uint64_t a, uint64_t b) {
    uint64_t k = mix64(root->s[0] ^ mix64(a + 0x9e3779b97f4a7c15ULL));
    k = mix64(k ^ root->s[1] ^ mix64(b + 0x632be59bd9b4e019ULL));
    k ^= mix64(root->s[2] + 0x2545f4914f6cdd1dULL * root->s[3]);
    return vg_rng_seed(k);
}

