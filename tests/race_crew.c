/* tests/race_crew.c - the lockstep thread crew (sim/crew.h) under
 * ThreadSanitizer: every shard runs exactly once per run, the caller sees
 * every shard's writes when run returns, and resizing between runs keeps
 * that true. Plain executable (no Criterion under TSan); exit 0 on success. */
#include <stdio.h>
#include <stdlib.h>

#include "core/err.h"
#include "sim/crew.h"

enum { SLOTS = 1000 };

typedef struct {
    long slot[SLOTS];   /* written by shards, read by the caller after run */
    int runs_seen[64];  /* shard k's count of runs, written only by shard k */
    int nshards_seen;
} work;

static void job(void *ctx, int k, int n)
{
    work *w = ctx;
    for (int i = SLOTS * k / n; i < SLOTS * (k + 1) / n; i++)
        w->slot[i] += i;
    w->runs_seen[k]++;
    if (k == 0)
        w->nshards_seen = n;
}

int main(void)
{
    static work w;
    pf_crew *c = pf_crew_create(4);
    if (!c) {
        fprintf(stderr, "race_crew: cannot start a crew\n");
        return 1;
    }
    long runs = 0;
    const int sizes[] = {4, 1, 3, 8, 2, 5};
    for (int s = 0; s < 6; s++) {
        if (pf_crew_resize(c, sizes[s]) != PF_OK || pf_crew_size(c) != sizes[s]) {
            fprintf(stderr, "race_crew: resize to %d failed\n", sizes[s]);
            return 1;
        }
        for (int r = 0; r < 2000; r++) {
            pf_crew_run(c, job, &w);
            runs++;
            if (w.nshards_seen != sizes[s]) {
                fprintf(stderr, "race_crew: %d shards seen, %d expected\n", w.nshards_seen, sizes[s]);
                return 1;
            }
        }
    }
    for (int i = 0; i < SLOTS; i++)
        if (w.slot[i] != (long)i * runs) {
            fprintf(stderr, "race_crew: slot %d = %ld, expected %ld\n", i, w.slot[i], (long)i * runs);
            return 1;
        }
    int total = 0;
    for (int k = 0; k < 64; k++)
        total += w.runs_seen[k];
    long expect = 0;
    for (int s = 0; s < 6; s++)
        expect += 2000L * sizes[s];
    pf_crew_destroy(c);
    if (total != expect) {
        fprintf(stderr, "race_crew: %d shard runs, expected %ld\n", total, expect);
        return 1;
    }
    if (pf_crew_create(0) != NULL || pf_crew_create(PF_CREW_MAX + 1) != NULL) {
        fprintf(stderr, "race_crew: bad sizes accepted\n");
        return 1;
    }
    printf("race_crew: %ld runs over 6 crew sizes, every shard once per run\n", runs);
    return 0;
}
