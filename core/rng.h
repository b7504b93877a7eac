/* core/rng.h - deterministic pseudo-random numbers (xoshiro256**, seeded by
 * splitmix64).
 *
 * Contract: the same seed yields the same stream on every OS, compiler and
 * word size; no libc rand(), no floating point in the integer paths. Used by
 * workloads, the simulator, the benchmark's data and the tests. Not
 * thread-safe: one pf_rng per thread.
 */
#ifndef PF_CORE_RNG_H
#define PF_CORE_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} pf_rng;

void pf_rng_seed(pf_rng *r, uint64_t seed);
uint64_t pf_rng_next(pf_rng *r);
/* Uniform integer in [lo, hi] inclusive, unbiased (rejection). lo <= hi. */
int64_t pf_rng_range(pf_rng *r, int64_t lo, int64_t hi);
/* Uniform double in [0, 1) with 53 random bits. */
double pf_rng_unit(pf_rng *r);
/* Uniform float in [-1, 1), for test and benchmark data. */
float pf_rng_symf(pf_rng *r);

#endif
