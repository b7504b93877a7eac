/* sim/crew.h - a fixed pool of OS threads that work in lockstep, one job per
 * step, each thread on its own shard.
 *
 * What it is: the threaded engine's workforce. pf_crew_run(c, fn, ctx) calls
 * fn(ctx, k, n) once for every shard k in [0, n) - shard 0 on the calling
 * thread, the others on the crew's threads - and returns when all have
 * returned. A step costs O(threads), whatever the work inside fn: one
 * generation counter wakes everyone and one counter of shards left tells the
 * caller when they are done. Threads spin briefly on those counters (a step
 * lasts microseconds) and then sleep on a condition variable, so an idle or
 * oversubscribed crew costs no CPU; when there are more threads than cores
 * they do not spin at all.
 *
 * Contract: one caller (the engine's driver) calls run and resize; fn must
 * not call back into the crew. pf_crew_resize changes the thread count
 * between runs (joins or starts threads). Timed waits, if any, use
 * CLOCK_MONOTONIC. Errors are returned: create/resize fail cleanly when a
 * thread cannot be started (the crew keeps the threads it has).
 * Callers: the simulator's threaded engine (sim/sim.c: the shards of a
 * step's landing), bench/bench_sched.c, tests.
 */
#ifndef PF_SIM_CREW_H
#define PF_SIM_CREW_H

typedef struct pf_crew pf_crew;

typedef void (*pf_crew_fn)(void *ctx, int shard, int nshards);

#define PF_CREW_MAX 1024

/* A crew of n threads in all (n - 1 started here; the caller is shard 0).
 * NULL on a bad n (1..PF_CREW_MAX) or when threads cannot be started. */
pf_crew *pf_crew_create(int n);
void pf_crew_destroy(pf_crew *c);

/* Run fn on every shard; returns when every shard returned. */
void pf_crew_run(pf_crew *c, pf_crew_fn fn, void *ctx);

/* Change the number of threads (1..PF_CREW_MAX). PF_OK, PF_ERR_ARG, or
 * PF_ERR_NOMEM when threads could not be started (the old count stays). */
int pf_crew_resize(pf_crew *c, int n);
int pf_crew_size(const pf_crew *c);

#endif
