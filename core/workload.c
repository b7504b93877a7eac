/* core/workload.c - deterministic length lists (see workload.h). */
#include "core/workload.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "core/err.h"
#include "core/rng.h"

static const pf_mix seed_mix = {3, {{50, 32, 128}, {30, 256, 512}, {20, 1024, 2048}}};

const pf_mix *pf_mix_seed(void)
{
    return &seed_mix;
}

static int mix_valid(const pf_mix *mix, int *total_out)
{
    if (!mix || mix->nclasses < 1 || mix->nclasses > 8)
        return 0;
    int total = 0;
    for (int i = 0; i < mix->nclasses; i++) {
        const pf_mix_class *c = &mix->cls[i];
        if (c->weight < 0 || c->lo < 1 || c->hi < c->lo || c->weight > INT_MAX - total)
            return 0;
        total += c->weight;
    }
    *total_out = total;
    return total > 0;
}

/* Two draws per length, always in this order: the class (a uniform integer
 * in [0, total weight) mapped through the cumulative weights), then the
 * length inside the class. The list for a seed therefore depends only on
 * the mix, the seed and the PRNG, and the first k lengths of a longer list
 * equal the list of k lengths. */
int pf_workload_lengths(const pf_mix *mix, uint64_t seed, int n, int scale, int max_len, int *out)
{
    int total;
    if (!mix_valid(mix, &total) || n < 0 || scale < 1 || max_len < 0 || (n > 0 && !out))
        return PF_ERR_ARG;
    pf_rng r;
    pf_rng_seed(&r, seed);
    for (int i = 0; i < n; i++) {
        int pick = (int)pf_rng_range(&r, 0, total - 1);
        int c = 0;
        while (pick >= mix->cls[c].weight) {
            pick -= mix->cls[c].weight;
            c++;
        }
        int64_t len = pf_rng_range(&r, mix->cls[c].lo, mix->cls[c].hi) * (int64_t)scale;
        if (max_len > 0 && len > max_len)
            len = max_len;
        if (len > INT_MAX)
            len = INT_MAX;
        out[i] = (int)len;
    }
    return PF_OK;
}

/* Strict comma-separated list of positive decimal integers: no empty
 * fields, no signs, no spaces, nothing trailing. */
int pf_workload_parse_lengths(const char *s, int *out, int cap)
{
    if (!s || !out || cap < 1)
        return PF_ERR_ARG;
    int count = 0;
    const char *p = s;
    for (;;) {
        if (!isdigit((unsigned char)*p))
            return PF_ERR_ARG;
        errno = 0;
        char *end;
        long v = strtol(p, &end, 10);
        if (errno == ERANGE || v < 1 || v > INT_MAX)
            return PF_ERR_ARG;
        if (*end != ',' && *end != '\0')
            return PF_ERR_ARG;
        if (count == cap)
            return PF_ERR_RANGE;
        out[count++] = (int)v;
        if (*end == '\0')
            return count;
        p = end + 1;
    }
}
