/* net/kvev.h - vLLM's KV-cache event batches: decode from msgpack, encode back.
 *
 * What it is: the payload codec of vLLM's KV-event stream
 * (vllm/distributed/kv_events.py). A payload is one msgpack value, an event
 * batch, in one of two encodings that vLLM has used:
 *   map        (current vLLM):  {"ts": f64, "events": [...], "data_parallel_rank": int}
 *              events: {"type": "BlockStored", "block_hashes": [...], ...}
 *   array_like (older vLLM):    [ts, [events...], data_parallel_rank?]
 *              events: ["BlockStored", block_hashes, parent_block_hash,
 *                       token_ids, block_size, lora_id, medium, lora_name...]
 *                      ["BlockRemoved", block_hashes, medium, group_idx?]
 *                      ["AllBlocksCleared"]
 * (msgspec Structs with tag=True: the tag is the class name, under the key
 * "type" in a map, first in an array; omit_defaults drops trailing fields
 * that hold their default.) Block hashes are ExternalBlockHash = bytes | int:
 * both are kept exactly, so an encoded batch says what it was told.
 *
 * Contract: every payload is untrusted. pf_kvev_decode never reads past the
 * buffer, never allocates more than a bounded multiple of the payload size
 * (a structural pre-scan rejects containers that claim more elements than
 * bytes remain, before msgpack-c allocates for them) and enforces the limits
 * in pf_kvev_limits. An event of a known kind with wrong field types is
 * skipped and counted (n_malformed); an unknown tag is skipped and counted
 * (n_unknown); a payload that is not msgpack, not a batch, or over a limit is
 * rejected whole with a reason. The batch owns its arrays: pf_kvev_batch_free.
 * Callers: net/zsub (subscriber), net/attach_model, net/zpub users, tests.
 */
#ifndef PF_NET_KVEV_H
#define PF_NET_KVEV_H

#include <stddef.h>
#include <stdint.h>

#define PF_KVEV_HASH_BYTES_MAX 64 /* vLLM's bytes hashes are 32 (sha256) */
#define PF_KVEV_MEDIUM_MAX 16     /* "GPU", "CPU", "DISK"...              */

typedef enum {
    PF_KVEV_HASH_NONE = 0, /* absent (parent of a first block)           */
    PF_KVEV_HASH_UINT,     /* msgpack positive integer: u                 */
    PF_KVEV_HASH_INT,      /* msgpack negative integer: (int64_t)u        */
    PF_KVEV_HASH_BYTES     /* msgpack bin: bytes[0..len)                  */
} pf_kvev_hash_kind;

typedef struct {
    uint8_t kind; /* pf_kvev_hash_kind */
    uint8_t len;  /* bytes used when kind == BYTES (1..64) */
    uint64_t u;   /* integer value (two's complement when INT) */
    uint8_t bytes[PF_KVEV_HASH_BYTES_MAX];
} pf_kvev_hash;

typedef enum {
    PF_KVEV_STORED = 1,  /* BlockStored      */
    PF_KVEV_REMOVED = 2, /* BlockRemoved     */
    PF_KVEV_CLEARED = 3  /* AllBlocksCleared */
} pf_kvev_type;

typedef struct {
    pf_kvev_type type;
    pf_kvev_hash *hashes; /* owned; n_hashes of them           */
    uint32_t n_hashes;
    pf_kvev_hash parent;  /* kind NONE when null / absent      */
    uint32_t *token_ids;  /* owned; BlockStored only           */
    uint32_t n_tokens;
    int32_t block_size;   /* BlockStored: 1..65536; else 0     */
    int has_lora;
    int64_t lora_id;
    char medium[PF_KVEV_MEDIUM_MAX]; /* "" when null / absent  */
    int has_group;
    int64_t group_idx;
} pf_kvev_event;

typedef struct {
    double ts;
    int has_dp_rank;
    int64_t dp_rank;
    pf_kvev_event *events; /* owned; n_events of them */
    uint32_t n_events;
    uint32_t n_unknown;    /* events with a tag we do not know: skipped       */
    uint32_t n_malformed;  /* known events with wrong types/sizes: skipped    */
    int array_like;        /* the encoding this batch came in (1 = arrays)    */
} pf_kvev_batch;

/* Hard bounds on one payload. Defaults (pf_kvev_limits_default):
 *   max_bytes   2 MiB: vLLM publishes one batch per scheduler step, and the
 *               blocks a step stores are bounded by its token budget
 *               (max_num_batched_tokens: thousands to a few tens of thousands);
 *               token ids dominate at 1-5 bytes each, so a 40,000-token step is
 *               at most 200 KB: 10x headroom;
 *   max_objects 2 M msgpack values (a 2 MiB payload cannot hold more than about
 *               that): msgpack-c builds a 24-byte object per value, so decoding
 *               is capped near 48 MB whatever the payload says;
 *   max_events  65,536 per batch; max_hashes 65,536 per event (a 1 M-token prompt
 *               in 16-token blocks); max_tokens 1 M per event (the same prompt);
 *   max_batch_hashes 262,144 per batch (4 M tokens of 16-token blocks, 100x a
 *               step's budget). A hash takes one payload byte and 80 decoded
 *               ones (pf_kvev_hash): without this cap a 2 MiB payload of
 *               small integers would decode to 160 MB of hashes; with it, to
 *               at most 21 MB.
 */
typedef struct {
    size_t max_bytes;
    uint32_t max_objects;
    uint32_t max_events;
    uint32_t max_hashes;
    uint32_t max_tokens;
    uint32_t max_batch_hashes;
} pf_kvev_limits;

pf_kvev_limits pf_kvev_limits_default(void);

/* Decode `len` bytes into *out (zeroed first; free it with pf_kvev_batch_free
 * whatever the result). lim NULL means the defaults. Returns 0, PF_ERR_IO for
 * a malformed payload, PF_ERR_RANGE for one over a limit, PF_ERR_NOMEM;
 * *why (if not NULL) then points to a static one-line reason. */
int pf_kvev_decode(const void *data, size_t len, const pf_kvev_limits *lim,
                   pf_kvev_batch *out, const char **why);

void pf_kvev_batch_free(pf_kvev_batch *b);

/* Encode a batch in vLLM's format (array_like 0: maps, as current vLLM;
 * 1: arrays, as older vLLM). *out is malloc'd (caller frees), *out_len its
 * size. Returns 0, PF_ERR_ARG (also for a hash of a kind out of the enum,
 * or of bytes with a length outside 1..64) or PF_ERR_NOMEM. */
int pf_kvev_encode(const pf_kvev_batch *b, int array_like, char **out, size_t *out_len);

/* Helpers for building events (the publisher's side). */
pf_kvev_hash pf_kvev_hash_uint(uint64_t v);
pf_kvev_hash pf_kvev_hash_bytes(const void *p, size_t len); /* len clipped to 64 */
/* Equal hashes: same kind and value. */
int pf_kvev_hash_eq(const pf_kvev_hash *a, const pf_kvev_hash *b);
/* A 64-bit key for tables: the integer itself, or FNV-1a of the bytes. */
uint64_t pf_kvev_hash_key(const pf_kvev_hash *h);
/* "BlockStored", "BlockRemoved", "AllBlocksCleared" (or "?"). */
const char *pf_kvev_type_name(pf_kvev_type t);

#endif
