/* rng.h — the library's seeded random number generator (xoshiro256**).
 * The whole state is a plain value: copy it to save, assign it to restore (bit-exact resume). */
#ifndef VG_RNG_H
#define VG_RNG_H
#include <stdint.h>

typedef struct vg_rng { uint64_t s[4]; } vg_rng;

vg_rng   vg_rng_seed(uint64_t seed);            /* splitmix64-expanded seed */
uint64_t vg_rng_next(vg_rng *r);                /* 64 random bits */
double   vg_rng_uniform(vg_rng *r);             /* [0, 1), 53 bits */
uint32_t vg_rng_below(vg_rng *r, uint32_t n);   /* uniform integer in [0, n), unbiased */
double   vg_rng_normal(vg_rng *r);              /* N(0, 1), Box–Muller, no cached spare */
/* normal(mean, std) redrawn until it lies in [a, b] (absolute bounds, as timm's trunc_normal_) */
double   vg_rng_trunc_normal(vg_rng *r, double mean, double std, double a, double b);
/* a generator that is a pure function of (root, a, b), by hashing: e.g. (seed, epoch, sample) for
 * a sample's augmentation, (seed, step, micro-batch) for Mixup. Does not advance root. */
vg_rng   vg_rng_derive(const vg_rng *root, uint64_t a, uint64_t b);
#endif
