/* net/kvpub.h - the simulator's prefix cache published as vLLM's KV-cache events.
 *
 * What it is: the bridge from the scheduler core's block events
 * (sim/sched.h, pf_sched_on_block) to vLLM's KV-event stream (net/zpub: a PUB
 * socket of [topic, seq, msgpack batch] and a ROUTER replay socket), so a
 * consumer built for vLLM's `--kv-events-config` (a KV-aware router,
 * `pagefault attach`) reads the simulator unchanged. Per scheduler step:
 *   - pf_kvpub_on_block (the pf_sched_block_fn) queues the step's events:
 *     a stored block becomes a BlockStored {block_hashes: [hash],
 *     parent_block_hash: the parent's hash (none for a first block, whose
 *     parent is PF_PREFIX_ROOT_HASH), token_ids: the block's B token ids
 *     (pf_token_at over the filling request's pf_sched_token_src), block_size
 *     B, lora_id null, medium "GPU"}; an evicted one a BlockRemoved
 *     {block_hashes: [hash], medium "GPU"}. Consecutive blocks one request
 *     stores in a step (each the parent of the next) are merged into one
 *     BlockStored carrying them all, as vLLM's block pool reports a request's
 *     newly full blocks in one event;
 *   - pf_kvpub_flush sends the queue as one batch {ts, events,
 *     data_parallel_rank}, in vLLM's map encoding by default (net/kvev), and
 *     keeps it in zpub's replay ring;
 *   - pf_kvpub_service answers replay requests.
 * Hashes are the scheduler's 64-bit chained hashes, sent as msgpack integers
 * (vLLM's ExternalBlockHash is bytes | int).
 *
 * Contract: bounded memory: a batch holds at most max_blocks block hashes and
 * max_tokens token ids; an event that would pass either cap flushes the queue
 * first (an early batch stamped with the scheduler's current time), so a
 * burst is split, never grown past the caps; the queue's arrays are kept
 * between steps. Single-threaded, on the scheduler's thread (the callback
 * runs inside pf_sched_plan/commit). Errors inside the callback (no memory,
 * a failed send) are kept and returned by the next flush; events are never
 * silently reordered. Callers: the simulator's `sim` and dashboard
 * (--kv-events-publish, wired by tui/), tests/test_net_kvpub.c,
 * tests/race_net_kvpub.c.
 */
#ifndef PF_NET_KVPUB_H
#define PF_NET_KVPUB_H

#include <stdint.h>

#include "net/zpub.h"
#include "sim/sched.h"

typedef struct {
    pf_zpub_config zpub; /* endpoint, replay endpoint, rank, topic, encoding, replay ring */
    uint32_t max_blocks; /* block hashes per batch */
    uint32_t max_tokens; /* token ids per batch    */
} pf_kvpub_config;

/* Defaults: zpub's (port 5557 on every interface, no replay socket, maps,
 * vLLM's 10,000 batches of replay), max_blocks 4096 and max_tokens 65,536 per batch.
 * Why those caps: vLLM's default step schedules 8192 tokens, so it fills at
 * most 512 16-token blocks from prefill plus one per decoding request (1024
 * at most): under 4096 blocks, one step is one batch, as in vLLM. 65,536
 * token ids take at most 328 KB of msgpack (5 bytes each), well inside the
 * 2 MiB a subscriber accepts per payload (net/kvev.h), whatever block size. */
pf_kvpub_config pf_kvpub_config_default(void);

typedef struct pf_kvpub pf_kvpub;

/* Bind the sockets. Returns 0, PF_ERR_ARG (bad endpoint or caps: *why),
 * PF_ERR_IO (libzmq refused to bind: *why) or PF_ERR_NOMEM. */
int pf_kvpub_open(const pf_kvpub_config *cfg, pf_kvpub **out, const char **why);

/* Publish s's block events: registers pf_kvpub_on_block with
 * pf_sched_on_block(s, ..., k) and reads token ids and the block size from s
 * (which must outlive the attachment). Attaching to a new run (after blocks
 * of an earlier one were published) queues an AllBlocksCleared first: the
 * old run's blocks are gone; the old scheduler is not touched (it may be
 * destroyed already). s NULL detaches: unregisters from the attached
 * scheduler, which must still exist then. pf_kvpub_close never touches a
 * scheduler: detach first if one outlives the publisher. */
void pf_kvpub_attach(pf_kvpub *k, pf_sched *s);

/* The pf_sched_block_fn (ctx is the pf_kvpub); pf_kvpub_attach registers it.
 * Callers that chain their own block callback forward to it. */
void pf_kvpub_on_block(void *ctx, const pf_sched_block_event *e);

/* Queue an AllBlocksCleared (a prefix-cache reset, vLLM's
 * reset_prefix_cache). Returns 0 or PF_ERR_NOMEM. */
int pf_kvpub_cleared(pf_kvpub *k);

/* Send the queued events as one batch stamped ts (seconds on the
 * simulator's clock); nothing queued sends nothing. Call once per step,
 * after pf_sched_step (or pf_sched_commit). Returns 0, or the first error
 * since the last flush (PF_ERR_NOMEM, PF_ERR_IO). */
int pf_kvpub_flush(pf_kvpub *k, double ts);

/* Send an empty batch: a heartbeat that tells a subscriber the publisher is
 * alive without changing its view (tests use it to wait for the
 * subscription to be live). Returns 0 or a negative pf_err. */
int pf_kvpub_heartbeat(pf_kvpub *k, double ts);

/* Answer waiting replay requests (up to timeout_ms for the first): call
 * after each flush; 0 never blocks. Returns the number answered or a
 * negative pf_err. */
int pf_kvpub_service(pf_kvpub *k, int timeout_ms);

/* Test knob: the next n batches are kept for replay but not sent, as if lost
 * on the wire (a subscriber must repair the gap through the replay socket). */
void pf_kvpub_drop_next(pf_kvpub *k, uint32_t n);

typedef struct {
    uint64_t batches;        /* batches sent (or dropped by the knob)       */
    uint64_t early_flushes;  /* batches sent early because a cap was reached */
    uint64_t events_stored, events_removed, events_cleared;
    uint64_t blocks_stored, blocks_removed; /* hashes in those events      */
    uint64_t dropped;        /* batches kept back by pf_kvpub_drop_next     */
    uint64_t errors;         /* callback errors (also returned by flush)    */
} pf_kvpub_stats;
void pf_kvpub_stats_get(const pf_kvpub *k, pf_kvpub_stats *st);

/* The endpoints bound (a '*' port resolved), the next seq to be sent. */
const char *pf_kvpub_endpoint(const pf_kvpub *k);
const char *pf_kvpub_replay_endpoint(const pf_kvpub *k); /* NULL without replay */
uint64_t pf_kvpub_next_seq(const pf_kvpub *k);

void pf_kvpub_close(pf_kvpub *k);

#endif
