/* net/attach_model.h - what `pagefault attach` knows about a live vLLM server.
 *
 * What it is: the state behind attach's screen and its jsonl lines, built
 * from the two streams and nothing else (no curses, no sockets):
 *  - the prefix cache's blocks, keyed by (data-parallel rank, block hash):
 *    BlockStored adds them, BlockRemoved drops them, AllBlocksCleared drops a
 *    rank's all. Each block gets a display slot (the lowest recently freed
 *    one first, else the next new one): a stable place on the grid. The
 *    slot is ours, NOT vLLM's physical block id, which the events never carry.
 *  - prefix chains: a stored block whose parent hash is known inherits the
 *    parent's prefix id; one without (a first block, or a parent stored
 *    before we attached) starts a prefix with its own hash as id. The grid
 *    colours blocks by prefix id, so a shared prompt prefix reads as one
 *    colour. Blocks keep their prefix id when the parent is evicted.
 *  - counters from /metrics (vLLM's names; older names as fallbacks): KV
 *    usage, running, waiting, preemptions (and per second between polls),
 *    prefix-cache hit rate (cumulative, and over the last poll interval), TTFT
 *    and end-to-end latency quantiles from their histograms;
 *  - a time series per chart (one point per tick, the last PF_ATTACH_HISTORY);
 *  - warnings: counts set by the caller from the transports, and a short list
 *    of recent warning lines.
 *
 * Contract: bounded: at most max_blocks blocks are tracked (more stores are
 * counted as untracked, never grown past); single-threaded. Hash identity is
 * the 64-bit key of net/kvev.h (bytes hashes folded with FNV-1a: a collision
 * among a million blocks has odds near 3e-8). Callers: tui/cmd_attach.c,
 * tui/attach_view.c, tests.
 */
#ifndef PF_NET_ATTACH_MODEL_H
#define PF_NET_ATTACH_MODEL_H

#include <stdint.h>

#include "net/kvev.h"
#include "net/prom.h"

#define PF_ATTACH_HISTORY 512
#define PF_ATTACH_NOTES 16
#define PF_ATTACH_NOTE_LEN 120
#define PF_ATTACH_NO_BLOCK UINT32_MAX

typedef struct {
    uint64_t key;     /* (rank, hash) key                       */
    uint64_t prefix;  /* prefix id: key of the chain's first block */
    uint32_t order;   /* store counter when it arrived           */
    int16_t rank;
    uint8_t live;
} pf_attach_block;

typedef struct {
    /* from the events (exact, for what was seen since attaching) */
    uint64_t batches, events_stored, events_removed, events_cleared;
    uint64_t blocks_stored, blocks_removed; /* hashes in those events */
    uint64_t blocks_live, prefixes_live;
    uint64_t removed_unknown;  /* removed hashes stored before we attached */
    uint64_t stored_again;     /* stored hashes already live               */
    uint64_t untracked;        /* stores past max_blocks                   */
    uint64_t restarts;
    /* from /metrics (NAN until a page provided them) */
    double usage;              /* KV-cache usage, 0..1 (mean over engines) */
    double running, waiting;   /* summed over engines                       */
    double preemptions;        /* cumulative                                */
    double preempt_rate;       /* per second between the last two polls      */
    double hit_rate;           /* prefix-cache hits / queries, cumulative    */
    double hit_rate_recent;    /* the same over the last poll interval       */
    double ttft[3], e2e[3];    /* p50, p90, p99 in seconds                   */
    uint64_t metric_polls;
    /* warnings (set by the caller from the transports, and by the model) */
    uint64_t w_malformed, w_bad_events, w_unknown_events, w_gaps, w_missed, w_replays, w_replayed, w_lost,
        w_reconnects, w_restarts, w_metrics_failed, w_metrics_bad_lines, w_metrics_truncated;
    uint64_t history; /* batches from before attaching, replayed on request (not a warning) */
} pf_attach_counts;

typedef struct {
    double t;
    double usage, running, waiting, preempt_rate, hit_rate, ttft_p50, ttft_p99;
    double blocks_live;
} pf_attach_point;

typedef struct pf_attach pf_attach;

/* max_blocks: 0 means the default, 1 M (a 80 GB GPU holds about 400 k
 * 16-token blocks of an 8B model: with data parallelism, a few ranks' worth). */
pf_attach *pf_attach_new(uint32_t max_blocks);
void pf_attach_free(pf_attach *m);

void pf_attach_apply(pf_attach *m, int rank, const pf_kvev_batch *b);
/* A rank's server restarted: its blocks are gone (rank: the caller's, as
 * given to pf_attach_apply; the blocks its batches filed under another
 * data_parallel_rank go too). */
void pf_attach_restart(pf_attach *m, int rank);
/* Read the counters from a freshly polled page, t its time in seconds. */
void pf_attach_metrics(pf_attach *m, const pf_prom_page *page, double t);
/* Append the current values to the time series. */
void pf_attach_sample(pf_attach *m, double t);
/* Record a warning line (shown newest first). */
void pf_attach_note(pf_attach *m, double t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

const pf_attach_counts *pf_attach_counts_get(const pf_attach *m);
pf_attach_counts *pf_attach_counts_mut(pf_attach *m); /* for the warning counts */

/* Display slots: slot_count() slots, each a block or none. */
uint32_t pf_attach_slot_count(const pf_attach *m);
const pf_attach_block *pf_attach_slot(const pf_attach *m, uint32_t slot); /* NULL: empty slot */

/* Time series: history_len() points (<= PF_ATTACH_HISTORY), i = 0 oldest. */
int pf_attach_history_len(const pf_attach *m);
const pf_attach_point *pf_attach_history_at(const pf_attach *m, int i);
/* Recent warning lines, newest first: i in [0, count). */
int pf_attach_note_count(const pf_attach *m);
const char *pf_attach_note_get(const pf_attach *m, int i, double *t);

#endif
