/* net/zsub.h - subscriber to vLLM's KV-event stream over ZeroMQ (libzmq).
 *
 * What it is: one SUB socket per data-parallel rank (rank r listens on the
 * endpoint's port + r, as vLLM's publishers bind), reading multipart messages
 * [topic, seq, payload] with seq an 8-byte big-endian counter and payload a
 * msgpack event batch (net/kvev.h). It keeps each rank's last seq and:
 *  - a gap (seq > last + 1): asks the rank's ROUTER replay socket for the
 *    missing batches, sending [b"", start_seq as 8 bytes big-endian] from a
 *    fresh DEALER socket and reading [b"", seq, payload] ... until seq = -1
 *    (vLLM's end marker, payload empty); replayed batches are delivered in
 *    order before the one that revealed the gap; what replay cannot supply
 *    is counted as lost;
 *  - seq going back (seq < last): the server restarted (its counter begins
 *    at 0 again): reported, and the rank's baseline reset; the new life's
 *    batches before this one (0 .. seq - 1) are a gap as above, replayed
 *    from the new server or counted lost;
 *  - with replay_history, a rank's first message also asks for everything
 *    the publisher still buffers before it, so the view starts from the
 *    cache's recent history instead of empty;
 *  - a dropped connection (libzmq's socket monitor says so) or silence past
 *    silence_ms: the sockets are closed and opened again (a reconnect).
 *    libzmq reconnects by itself after a server restart, but not after it
 *    refused an oversized message, and a half-open TCP connection can leave
 *    us waiting forever. An idle vLLM server is silent too, so a reconnect
 *    is cheap and harmless. A rank is "live" while its connection is up.
 *
 * Contract: single-threaded (call pf_zsub_poll from one thread); every frame
 * is untrusted (ZMQ_MAXMSGSIZE caps inbound messages, ZMQ_RCVHWM how many
 * wait, the decoder bounds the rest); malformed messages are counted, never fatal. A replay stops after
 * replay_timeout_ms without a reply, after 30 s in all, or after as many
 * messages as it asked for plus 64. A replay that stops so (no end marker,
 * not everything it asked for) pauses that rank's replays for
 * PF_ZSUB_REPLAY_PAUSE x replay_timeout_ms: gaps meanwhile are counted lost
 * at once, so a dead or stalling replay socket cannot hold every poll.
 * Callers: tui/cmd_attach.c, tests.
 */
#ifndef PF_NET_ZSUB_H
#define PF_NET_ZSUB_H

#include <stddef.h>
#include <stdint.h>

#include "net/kvev.h"

#define PF_ZSUB_MAX_RANKS 64
/* Messages libzmq may queue per socket before it drops (the high-water
 * mark). With payloads capped at limits.max_bytes (2 MiB) this bounds what a
 * flood can make us hold to 100 x 2 MiB per socket; vLLM sends about one
 * batch per scheduler step and we drain every 20 ms, so 100 is a second of
 * slack, and what is dropped past it comes back as a gap, by replay. */
#define PF_ZSUB_RCVHWM 100
#define PF_ZSUB_ENDPOINT_MAX 256
/* After an unanswered replay, no replay on that rank for this many replay
 * timeouts (20 s with the defaults): the rank spends at most about 1/11 of
 * its time waiting on a replay socket that does not answer. */
#define PF_ZSUB_REPLAY_PAUSE 10

typedef struct {
    const char *endpoint;        /* tcp://HOST:PORT (rank 0); ipc:// and inproc:// too */
    const char *replay_endpoint; /* tcp://HOST:PORT or NULL: gaps are then only counted */
    int dp_ranks;                /* 1..64 */
    const char *topic;           /* subscription prefix; NULL or "" = every topic */
    int silence_ms;              /* reconnect after this much silence (0 = never)  */
    int replay_timeout_ms;       /* a replay gives up after this long without a reply */
    int replay_history;          /* on a rank's first message, replay from seq 0: the
                                    blocks stored before we attached, as far back as
                                    the publisher's buffer reaches (vLLM: 10,000 steps) */
    pf_kvev_limits limits;       /* per payload                                    */
} pf_zsub_config;

/* Defaults: one rank, every topic, silence 10 s (vLLM publishes every
 * scheduler step that changes the cache: a busy server is never silent that
 * long), replay timeout 2 s, the decoder's default limits. */
pf_zsub_config pf_zsub_config_default(void);

typedef struct {
    uint64_t messages;        /* multipart messages received (live + replayed)  */
    uint64_t batches;         /* batches decoded and delivered                  */
    uint64_t malformed;       /* messages or payloads refused (frames, msgpack) */
    uint64_t bad_events;      /* events skipped inside good batches             */
    uint64_t unknown_events;  /* events with a tag we do not know               */
    uint64_t gaps;            /* gaps in seq seen                               */
    uint64_t missed;          /* batches those gaps left out                    */
    uint64_t replays;         /* replay requests sent                           */
    uint64_t replayed;        /* batches recovered by replay                    */
    uint64_t history;         /* batches from before we attached (replay_history) */
    uint64_t lost;            /* missed batches replay could not supply         */
    uint64_t restarts;        /* seq went back: the server restarted            */
    uint64_t reconnects;      /* sockets reopened after silence                 */
    uint64_t duplicates;      /* seq equal to the last one: dropped             */
} pf_zsub_stats;

typedef enum {
    PF_ZSUB_BATCH = 1, /* a decoded batch (live or replayed)                      */
    PF_ZSUB_RESTART,   /* the rank's server restarted: its old blocks are gone    */
    PF_ZSUB_RECONNECT  /* the rank's sockets were reopened after silence          */
} pf_zsub_kind;

typedef struct {
    pf_zsub_kind kind;
    int rank;
    uint64_t seq;
    int replayed;               /* BATCH: came from the replay socket */
    const pf_kvev_batch *batch; /* BATCH only; valid during the call   */
} pf_zsub_note;

typedef void (*pf_zsub_fn)(void *ctx, const pf_zsub_note *note);

typedef struct pf_zsub pf_zsub;

/* Validate the configuration and connect. Returns 0, PF_ERR_ARG (bad
 * endpoint, ranks out of range: *why says which), PF_ERR_NOMEM or PF_ERR_IO
 * (libzmq refused: *why has its message). */
int pf_zsub_open(const pf_zsub_config *cfg, pf_zsub **out, const char **why);

/* Wait up to timeout_ms for messages, then handle every message waiting,
 * calling fn for each batch and event. Returns the number of batches
 * delivered, or a negative pf_err (PF_ERR_IO: polling failed). */
int pf_zsub_poll(pf_zsub *s, int timeout_ms, pf_zsub_fn fn, void *ctx);

void pf_zsub_stats_get(const pf_zsub *s, pf_zsub_stats *st);
/* 1 when rank r's connection is up (the socket monitor's word) or a
 * message arrived within silence_ms. */
int pf_zsub_rank_live(const pf_zsub *s, int r);
void pf_zsub_close(pf_zsub *s);

/* The endpoint of data-parallel rank r, as vLLM derives it: tcp ports are
 * offset by r; ipc/inproc names get "_dp<r>" appended (rank 0 unchanged).
 * Returns 0 or PF_ERR_ARG (malformed endpoint, port out of range). */
int pf_zsub_rank_endpoint(const char *endpoint, int r, char *out, size_t cap);

#endif
