/* net/zpub.h - publisher of KV-event batches in vLLM's wire format (libzmq).
 *
 * What it is: the other end of net/zsub, as vLLM's ZmqEventPublisher does it:
 * a PUB socket sending [topic, seq (8 bytes big-endian), payload (msgpack
 * batch)], seq counting from 0, and a ROUTER replay socket that answers
 * [identity, b"", start_seq] with every buffered [seq, payload] from start_seq
 * on, then [-1, b""]. The buffer is a bounded ring: the last buffer_steps
 * batches (vLLM's default 10,000) and at most buffer_bytes of payload.
 * Both sockets bind (tcp://HOST:5557, or port "*" to let the kernel pick a free
 * port: see pf_zpub_endpoint); data-parallel rank r binds port + r.
 *
 * Contract: single-threaded, no thread of its own: the owner calls
 * pf_zpub_service() regularly (every simulator step) to answer replays.
 * Callers: the simulator (`sim --kv-events-publish`, later), tests.
 */
#ifndef PF_NET_ZPUB_H
#define PF_NET_ZPUB_H

#include <stddef.h>
#include <stdint.h>

#include "net/kvev.h"

typedef struct {
    const char *endpoint;        /* "tcp://" "*:5557" (any interface) */
    const char *replay_endpoint; /* "tcp://" "*:5558" or NULL */
    int dp_rank;                 /* 0..63: port offset */
    const char *topic;           /* "" by default, as vLLM */
    int array_like;              /* 0: maps (current vLLM), 1: arrays (older) */
    uint32_t buffer_steps;       /* batches kept for replay */
    size_t buffer_bytes;         /* and at most this many payload bytes */
} pf_zpub_config;

/* Defaults: topic "", maps, 10,000 batches (vLLM's buffer_steps), 256 MiB. */
pf_zpub_config pf_zpub_config_default(void);

typedef struct pf_zpub pf_zpub;

int pf_zpub_open(const pf_zpub_config *cfg, pf_zpub **out, const char **why);

/* Encode and publish one batch (seq = the next counter value); it is also
 * kept for replay. Returns 0 or a negative pf_err. */
int pf_zpub_publish(pf_zpub *p, const pf_kvev_batch *b);

/* Publish an already-encoded payload. flags PF_ZPUB_BUFFER_ONLY keeps it for
 * replay without sending it: a batch lost on the wire, for tests. */
#define PF_ZPUB_BUFFER_ONLY 1
int pf_zpub_publish_payload(pf_zpub *p, const void *payload, size_t len, int flags);

/* The simulator's side, a few calls per step: queue events as its prefix
 * cache changes, then publish them as one batch per scheduler step, as vLLM
 * does. Hashes are 64-bit integers (vLLM's older int hashes; they decode
 * the same as bytes ones for every consumer that keys by hash). parent NULL:
 * none. token_ids may be NULL (n_tokens 0). Each returns 0, PF_ERR_ARG or
 * PF_ERR_NOMEM (or the error of the early flush below); the queue is bounded
 * by the decoder's default limits (events, hashes per batch, payload bytes):
 * an event past them flushes the queue first, and one that no payload within
 * them can hold (a million large token ids) is PF_ERR_ARG. */
int pf_zpub_stored(pf_zpub *p, const uint64_t *hashes, uint32_t n, const uint64_t *parent,
                   const uint32_t *token_ids, uint32_t n_tokens, int block_size);
int pf_zpub_removed(pf_zpub *p, const uint64_t *hashes, uint32_t n);
int pf_zpub_cleared(pf_zpub *p);
/* Publish the queued events as one batch stamped ts (seconds); nothing to
 * publish is not an error. Returns 0 or a negative pf_err. */
int pf_zpub_flush(pf_zpub *p, double ts);
/* Events queued and not yet flushed. */
uint32_t pf_zpub_pending(const pf_zpub *p);

/* Go on with the replays in progress, as far as their peers take them (up
 * to 2 ms of sending while they move), and take in the requests waiting
 * (up to timeout_ms for the first; 5 ms while a replay waits on its peer).
 * A replay is sent over this and later calls, never blocking: a peer's
 * pipe holds 16 replies at most, 8 replays run at once, and one whose peer
 * takes nothing for 10 s is dropped (zpub.c, zpub_replay). Returns the
 * number of requests taken, or a negative pf_err. */
int pf_zpub_service(pf_zpub *p, int timeout_ms);

/* The endpoints actually bound (a '*' port resolved), for tests. */
const char *pf_zpub_endpoint(const pf_zpub *p);
const char *pf_zpub_replay_endpoint(const pf_zpub *p);
uint64_t pf_zpub_next_seq(const pf_zpub *p);

void pf_zpub_close(pf_zpub *p);

#endif
