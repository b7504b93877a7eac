/* core/workload.h - deterministic sequence-length workloads.
 *
 * Contract: lengths come only from pf_rng, so one seed gives the same list
 * everywhere. The seed's mix is 50% short (32-128 tokens), 30% medium
 * (256-512) and 20% long (1024-2048). Each length draws its class from the
 * weights, then a uniform length inside the class. Used by calc, the
 * simulator (total length of a job), bench and the tests.
 */
#ifndef PF_CORE_WORKLOAD_H
#define PF_CORE_WORKLOAD_H

#include <stdint.h>

typedef struct {
    int weight; /* relative weight (percent in the seed's mix) */
    int lo, hi; /* inclusive token range */
} pf_mix_class;

typedef struct {
    int nclasses;
    pf_mix_class cls[8];
} pf_mix;

/* The seed's 50/30/20 mix. */
const pf_mix *pf_mix_seed(void);

/* Fill out[0..n) with lengths drawn from mix; lengths are scaled by `scale`
 * (1 for the seed's, 2 for the "mixed" GPU workload) then clamped to
 * max_len when max_len > 0. Returns PF_OK or PF_ERR_ARG. */
int pf_workload_lengths(const pf_mix *mix, uint64_t seed, int n, int scale, int max_len, int *out);

/* Parse "1,16,17,100" into out (capacity cap). Returns the count (>0), or a
 * negative pf_err: PF_ERR_ARG for garbage or lengths < 1, PF_ERR_RANGE if
 * more than cap values. */
int pf_workload_parse_lengths(const char *s, int *out, int cap);

#endif
