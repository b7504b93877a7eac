/* core/rng.c - xoshiro256** (Blackman & Vigna) seeded through splitmix64.
 *
 * Only fixed-width unsigned integer arithmetic is used, so the stream is the
 * same on every platform. splitmix64 spreads any 64-bit seed (0 included)
 * over the 256-bit state, which must not be all zero; splitmix64 output of
 * four consecutive steps never is in practice, and we guard anyway.
 */
#include "core/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void pf_rng_seed(pf_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
        r->s[0] = 1; /* the one forbidden state */
}

uint64_t pf_rng_next(pf_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Unbiased bounded integers by rejection: of the 2^64 raw values, the
 * lowest (2^64 mod span) are rejected so that the rest is an exact multiple
 * of span and `x % span` is uniform. (-span) % span computes 2^64 mod span
 * in 64-bit unsigned arithmetic. At most half the draws are ever rejected,
 * and for the small spans used here practically none. */
int64_t pf_rng_range(pf_rng *r, int64_t lo, int64_t hi)
{
    if (hi <= lo)
        return lo;
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1u; /* 0 means the full 2^64 range */
    if (span == 0)
        return (int64_t)pf_rng_next(r);
    uint64_t threshold = (0u - span) % span;
    for (;;) {
        uint64_t x = pf_rng_next(r);
        if (x >= threshold)
            return (int64_t)((uint64_t)lo + x % span);
    }
}

double pf_rng_unit(pf_rng *r)
{
    return (double)(pf_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); /* 2^-53 */
}

float pf_rng_symf(pf_rng *r)
{
    /* 24 random bits -> k in [-2^23, 2^23), k / 2^23 in [-1, 1): exact in float. */
    int32_t k = (int32_t)(pf_rng_next(r) >> 40) - (1 << 23);
    return (float)k * (1.0f / 8388608.0f);
}
