/* tests/test_net_kvev.c - net/kvev: vLLM KV-event batches in both encodings,
 * round trips, and hostile payloads (rejected or counted, never trusted). */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "net/kvev.h"

/* A packer over an sbuffer, for writing payloads the way vLLM would. */
typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} buf;

static void buf_init(buf *b)
{
    msgpack_sbuffer_init(&b->sb);
    msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
}

static void str(buf *b, const char *s)
{
    msgpack_pack_str(&b->pk, strlen(s));
    msgpack_pack_str_body(&b->pk, s, strlen(s));
}

static int decode(buf *b, pf_kvev_batch *out, const char **why)
{
    return pf_kvev_decode(b->sb.data, b->sb.size, NULL, out, why);
}

static void buf_done(buf *b, pf_kvev_batch *bt)
{
    pf_kvev_batch_free(bt);
    msgpack_sbuffer_destroy(&b->sb);
}

/* An event's opening: a map of n pairs, the first "type": tag (current
 * vLLM), or an array of n fields, the first the tag (older vLLM). */
static void ev_map(buf *b, uint32_t n, const char *tag)
{
    msgpack_pack_map(&b->pk, n);
    str(b, "type");
    str(b, tag);
}

static void ev_arr(buf *b, uint32_t n, const char *tag)
{
    msgpack_pack_array(&b->pk, n);
    str(b, tag);
}

/* A 32-byte bytes hash (vLLM's sha256 digests), every byte `fill`. */
static void bin_hash(buf *b, unsigned char fill)
{
    unsigned char h[32];
    memset(h, fill, sizeof h);
    msgpack_pack_bin(&b->pk, sizeof h);
    msgpack_pack_bin_body(&b->pk, h, sizeof h);
}

/* Current vLLM: maps, tag under "type", bytes hashes, omitted defaults. */
Test(net_kvev, decodes_vllm_map_encoding)
{
    buf b;
    buf_init(&b);
    msgpack_pack_map(&b.pk, 3);
    str(&b, "ts");
    msgpack_pack_double(&b.pk, 1733150000.25);
    str(&b, "events");
    msgpack_pack_array(&b.pk, 3);
    /* BlockStored with two 32-byte hashes, a parent, 32 tokens */
    ev_map(&b, 8, "BlockStored");
    str(&b, "block_hashes");
    msgpack_pack_array(&b.pk, 2);
    for (int k = 0; k < 2; k++)
        bin_hash(&b, (unsigned char)(0xa0 + k));
    str(&b, "parent_block_hash");
    bin_hash(&b, 0x11);
    str(&b, "token_ids");
    msgpack_pack_array(&b.pk, 32);
    for (int i = 0; i < 32; i++)
        msgpack_pack_uint32(&b.pk, 1000u + (unsigned)i);
    str(&b, "block_size");
    msgpack_pack_int(&b.pk, 16);
    str(&b, "lora_id");
    msgpack_pack_nil(&b.pk);
    str(&b, "medium");
    str(&b, "GPU");
    str(&b, "lora_name");
    msgpack_pack_nil(&b.pk);
    /* BlockRemoved with an int hash and a group */
    ev_map(&b, 4, "BlockRemoved");
    str(&b, "block_hashes");
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_int64(&b.pk, -42);
    str(&b, "medium");
    msgpack_pack_nil(&b.pk);
    str(&b, "group_idx");
    msgpack_pack_int(&b.pk, 1);
    ev_map(&b, 1, "AllBlocksCleared");
    str(&b, "data_parallel_rank");
    msgpack_pack_int(&b.pk, 3);

    pf_kvev_batch bt;
    const char *why;
    cr_assert_eq(decode(&b, &bt, &why), 0, "%s", why);
    cr_expect_eq(bt.array_like, 0);
    cr_expect_float_eq(bt.ts, 1733150000.25, 1e-9);
    cr_expect(bt.has_dp_rank && bt.dp_rank == 3);
    cr_assert_eq(bt.n_events, 3);
    pf_kvev_event *s = &bt.events[0];
    cr_expect_eq(s->type, PF_KVEV_STORED);
    cr_assert_eq(s->n_hashes, 2);
    cr_expect_eq(s->hashes[1].kind, PF_KVEV_HASH_BYTES);
    cr_expect_eq(s->hashes[1].len, 32);
    cr_expect_eq(s->hashes[1].bytes[31], 0xa1);
    cr_expect_eq(s->parent.kind, PF_KVEV_HASH_BYTES);
    cr_expect_eq(s->parent.bytes[0], 0x11);
    cr_assert_eq(s->n_tokens, 32);
    cr_expect_eq(s->token_ids[31], 1031u);
    cr_expect_eq(s->block_size, 16);
    cr_expect_eq(s->has_lora, 0);
    cr_expect_str_eq(s->medium, "GPU");
    cr_expect_eq(s->has_group, 0);
    pf_kvev_event *r = &bt.events[1];
    cr_expect_eq(r->type, PF_KVEV_REMOVED);
    cr_assert_eq(r->n_hashes, 1);
    cr_expect_eq(r->hashes[0].kind, PF_KVEV_HASH_INT);
    cr_expect_eq((int64_t)r->hashes[0].u, -42);
    cr_expect(r->has_group && r->group_idx == 1);
    cr_expect_eq(bt.events[2].type, PF_KVEV_CLEARED);
    buf_done(&b, &bt);
}

/* Older vLLM: arrays, tag first, int hashes, no data_parallel_rank; the
 * oldest BlockStored had no medium (5 fields). */
Test(net_kvev, decodes_vllm_array_like_encoding)
{
    buf b;
    buf_init(&b);
    msgpack_pack_array(&b.pk, 2);
    msgpack_pack_double(&b.pk, 12.5);
    msgpack_pack_array(&b.pk, 3);
    ev_arr(&b, 7, "BlockStored");
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 0xfedcba9876543210ull);
    msgpack_pack_uint64(&b.pk, 77); /* parent */
    msgpack_pack_array(&b.pk, 2);
    msgpack_pack_uint32(&b.pk, 5);
    msgpack_pack_uint32(&b.pk, 6);
    msgpack_pack_int(&b.pk, 2);
    msgpack_pack_int(&b.pk, 9); /* lora_id */
    str(&b, "CPU");
    ev_arr(&b, 3, "BlockRemoved");
    msgpack_pack_array(&b.pk, 2);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 2);
    msgpack_pack_nil(&b.pk);
    ev_arr(&b, 5, "BlockStored"); /* oldest BlockStored: no medium */
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 3);
    msgpack_pack_nil(&b.pk);
    msgpack_pack_array(&b.pk, 0);
    msgpack_pack_int(&b.pk, 16);

    pf_kvev_batch bt;
    const char *why;
    cr_assert_eq(decode(&b, &bt, &why), 0, "%s", why);
    cr_expect_eq(bt.array_like, 1);
    cr_expect_eq(bt.has_dp_rank, 0);
    cr_assert_eq(bt.n_events, 3);
    cr_expect_eq(bt.events[0].hashes[0].kind, PF_KVEV_HASH_UINT);
    cr_expect_eq(bt.events[0].hashes[0].u, 0xfedcba9876543210ull);
    cr_expect_eq(bt.events[0].parent.u, 77u);
    cr_expect_eq(bt.events[0].block_size, 2);
    cr_expect(bt.events[0].has_lora && bt.events[0].lora_id == 9);
    cr_expect_str_eq(bt.events[0].medium, "CPU");
    cr_expect_eq(bt.events[1].n_hashes, 2);
    cr_expect_eq(bt.events[2].parent.kind, PF_KVEV_HASH_NONE);
    cr_expect_str_eq(bt.events[2].medium, "");
    buf_done(&b, &bt);
}

static void make_batch(pf_kvev_batch *bt, pf_kvev_event ev[3], pf_kvev_hash hs[3], uint32_t tok[4])
{
    memset(bt, 0, sizeof *bt);
    memset(ev, 0, 3 * sizeof *ev);
    unsigned char raw[32];
    for (int i = 0; i < 32; i++)
        raw[i] = (unsigned char)(i * 7);
    hs[0] = pf_kvev_hash_bytes(raw, 32);
    hs[1] = pf_kvev_hash_uint(123456789);
    hs[2].kind = PF_KVEV_HASH_INT;
    hs[2].u = (uint64_t)(int64_t)-5;
    for (int i = 0; i < 4; i++)
        tok[i] = 100u + (uint32_t)i;
    ev[0].type = PF_KVEV_STORED;
    ev[0].hashes = hs;
    ev[0].n_hashes = 2;
    ev[0].parent = hs[2];
    ev[0].token_ids = tok;
    ev[0].n_tokens = 4;
    ev[0].block_size = 2;
    strcpy(ev[0].medium, "GPU");
    ev[0].has_group = 1;
    ev[0].group_idx = 3;
    ev[1].type = PF_KVEV_REMOVED;
    ev[1].hashes = &hs[1];
    ev[1].n_hashes = 1;
    ev[1].has_group = 1;
    ev[1].group_idx = 4;
    ev[2].type = PF_KVEV_CLEARED;
    bt->ts = 99.75;
    bt->events = ev;
    bt->n_events = 3;
    bt->has_dp_rank = 1;
    bt->dp_rank = 2;
}

static void check_roundtrip(int array_like)
{
    pf_kvev_batch in, out;
    pf_kvev_event ev[3];
    pf_kvev_hash hs[3];
    uint32_t tok[4];
    make_batch(&in, ev, hs, tok);
    char *p;
    size_t n;
    cr_assert_eq(pf_kvev_encode(&in, array_like, &p, &n), 0);
    const char *why;
    cr_assert_eq(pf_kvev_decode(p, n, NULL, &out, &why), 0, "%s", why);
    cr_expect_eq(out.array_like, array_like);
    cr_expect_float_eq(out.ts, 99.75, 1e-12);
    cr_expect(out.has_dp_rank && out.dp_rank == 2);
    cr_assert_eq(out.n_events, 3);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(out.events[i].type, ev[i].type);
        cr_assert_eq(out.events[i].n_hashes, ev[i].n_hashes);
        for (uint32_t k = 0; k < ev[i].n_hashes; k++)
            cr_expect(pf_kvev_hash_eq(&out.events[i].hashes[k], &ev[i].hashes[k]));
    }
    cr_expect(pf_kvev_hash_eq(&out.events[0].parent, &hs[2]));
    cr_assert_eq(out.events[0].n_tokens, 4);
    cr_expect_eq(out.events[0].token_ids[3], 103u);
    cr_expect_str_eq(out.events[0].medium, "GPU");
    /* group_idx in both forms: the array form once dropped it from a
     * BlockStored (7 fields, where group_idx is the 10th) */
    cr_expect(out.events[0].has_group && out.events[0].group_idx == 3, "BlockStored's group_idx");
    cr_expect(out.events[1].has_group && out.events[1].group_idx == 4, "BlockRemoved's group_idx");
    pf_kvev_batch_free(&out);
    free(p);
}

Test(net_kvev, roundtrip_maps) { check_roundtrip(0); }
Test(net_kvev, roundtrip_arrays) { check_roundtrip(1); }

Test(net_kvev, hash_key_and_eq)
{
    pf_kvev_hash a = pf_kvev_hash_bytes("abc", 3), b = pf_kvev_hash_bytes("abd", 3);
    cr_expect_not(pf_kvev_hash_eq(&a, &b));
    cr_expect_neq(pf_kvev_hash_key(&a), pf_kvev_hash_key(&b));
    pf_kvev_hash u = pf_kvev_hash_uint(7), u2 = pf_kvev_hash_uint(7);
    cr_expect(pf_kvev_hash_eq(&u, &u2));
    cr_expect_eq(pf_kvev_hash_key(&u), 7u);
}

Test(net_kvev, unknown_tags_and_bad_events_are_counted_and_skipped)
{
    buf b;
    buf_init(&b);
    msgpack_pack_array(&b.pk, 2);
    msgpack_pack_double(&b.pk, 1.0);
    msgpack_pack_array(&b.pk, 5);
    ev_arr(&b, 2, "BlockMoved"); /* unknown tag */
    msgpack_pack_int(&b.pk, 1);
    ev_arr(&b, 3, "BlockRemoved"); /* hashes is a string: malformed */
    str(&b, "oops");
    msgpack_pack_nil(&b.pk);
    ev_arr(&b, 5, "BlockStored"); /* block_size -1: malformed */
    msgpack_pack_array(&b.pk, 0);
    msgpack_pack_nil(&b.pk);
    msgpack_pack_array(&b.pk, 0);
    msgpack_pack_int(&b.pk, -1);
    msgpack_pack_int(&b.pk, 42); /* not an event at all */
    ev_arr(&b, 1, "AllBlocksCleared");
    pf_kvev_batch bt;
    const char *why;
    cr_assert_eq(decode(&b, &bt, &why), 0, "%s", why);
    cr_expect_eq(bt.n_unknown, 1);
    cr_expect_eq(bt.n_malformed, 3);
    cr_assert_eq(bt.n_events, 1);
    cr_expect_eq(bt.events[0].type, PF_KVEV_CLEARED);
    buf_done(&b, &bt);
}

static int decode_raw(const void *p, size_t n, const char **why)
{
    pf_kvev_batch bt;
    int rc = pf_kvev_decode(p, n, NULL, &bt, why);
    pf_kvev_batch_free(&bt);
    return rc;
}

/* A header that claims 4 G elements in a 5-byte payload must be refused
 * before msgpack-c allocates for it (under ASan an attempt would abort). */
Test(net_kvev, huge_container_headers_are_refused_without_allocating)
{
    const char *why;
    const unsigned char arr32[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    cr_expect_eq(decode_raw(arr32, sizeof arr32, &why), PF_ERR_IO);
    cr_expect(strstr(why, "claims more elements") != NULL, "%s", why);
    const unsigned char map32[] = {0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xdf, 0x7f, 0xff, 0xff, 0xff};
    cr_expect_eq(decode_raw(map32, sizeof map32, &why), PF_ERR_IO);
    const unsigned char bin32[] = {0xc6, 0xff, 0xff, 0xff, 0xf0, 1, 2};
    cr_expect_eq(decode_raw(bin32, sizeof bin32, &why), PF_ERR_IO);
}

Test(net_kvev, structural_errors_are_rejected_with_a_reason)
{
    const char *why;
    const unsigned char c1[] = {0xc1};
    cr_expect_eq(decode_raw(c1, 1, &why), PF_ERR_IO);
    const unsigned char trailing[] = {0x90, 0x90};
    cr_expect_eq(decode_raw(trailing, 2, &why), PF_ERR_IO);
    cr_expect(strstr(why, "after") != NULL, "%s", why);
    const unsigned char notbatch[] = {0x2a};
    cr_expect_eq(decode_raw(notbatch, 1, &why), PF_ERR_IO);
    const unsigned char short_arr[] = {0x91, 0x01};
    cr_expect_eq(decode_raw(short_arr, 2, &why), PF_ERR_IO);
    cr_expect_eq(decode_raw(NULL, 0, &why), PF_ERR_IO);
    /* nesting deeper than the pre-scan's stack */
    unsigned char deep[64];
    memset(deep, 0x91, sizeof deep);
    deep[63] = 0xc0;
    cr_expect_eq(decode_raw(deep, sizeof deep, &why), PF_ERR_IO);
    cr_expect(strstr(why, "deep") != NULL, "%s", why);
}

/* A hand-built hash that no decoder makes is refused, not packed: bytes
 * of a length past the 64-byte array (the packer would read past it), of
 * length 0, or a kind out of the enum; a parent hash as well as a block's. */
Test(net_kvev, encode_refuses_malformed_hashes)
{
    pf_kvev_batch in;
    pf_kvev_event ev[3];
    pf_kvev_hash hs[3];
    uint32_t tok[4];
    char *p = NULL;
    size_t n;
    for (int c = 0; c < 4; c++) {
        make_batch(&in, ev, hs, tok);
        cr_assert_gt(ev[0].n_hashes, 0);
        pf_kvev_hash *h = c == 3 ? &ev[0].parent : &ev[0].hashes[0];
        *h = pf_kvev_hash_bytes("abc", 3);
        if (c == 0 || c == 3)
            h->len = PF_KVEV_HASH_BYTES_MAX + 1;
        else if (c == 1)
            h->len = 0;
        else
            h->kind = PF_KVEV_HASH_BYTES + 1;
        cr_expect_eq(pf_kvev_encode(&in, c & 1, &p, &n), PF_ERR_ARG, "case %d", c);
        /* the same hash made well is packed */
        *h = pf_kvev_hash_bytes("abc", 3);
        cr_assert_eq(pf_kvev_encode(&in, c & 1, &p, &n), 0, "case %d", c);
        free(p);
    }
}

Test(net_kvev, limits_are_enforced)
{
    pf_kvev_batch in, out;
    pf_kvev_event ev[3];
    pf_kvev_hash hs[3];
    uint32_t tok[4];
    make_batch(&in, ev, hs, tok);
    char *p;
    size_t n;
    cr_assert_eq(pf_kvev_encode(&in, 0, &p, &n), 0);
    const char *why;
    pf_kvev_limits lim = pf_kvev_limits_default();
    lim.max_events = 2;
    cr_expect_eq(pf_kvev_decode(p, n, &lim, &out, &why), PF_ERR_RANGE);
    pf_kvev_batch_free(&out);
    lim = pf_kvev_limits_default();
    lim.max_hashes = 1;
    cr_expect_eq(pf_kvev_decode(p, n, &lim, &out, &why), PF_ERR_RANGE);
    pf_kvev_batch_free(&out);
    lim = pf_kvev_limits_default();
    lim.max_tokens = 3;
    cr_expect_eq(pf_kvev_decode(p, n, &lim, &out, &why), PF_ERR_RANGE);
    pf_kvev_batch_free(&out);
    /* the batch's hashes, over its events: the whole count passes, one
     * fewer does not */
    uint32_t total = 0;
    for (uint32_t i = 0; i < in.n_events; i++)
        total += in.events[i].n_hashes;
    cr_assert_gt(total, 1);
    lim = pf_kvev_limits_default();
    lim.max_batch_hashes = total;
    cr_expect_eq(pf_kvev_decode(p, n, &lim, &out, &why), 0);
    pf_kvev_batch_free(&out);
    lim.max_batch_hashes = total - 1;
    cr_expect_eq(pf_kvev_decode(p, n, &lim, &out, &why), PF_ERR_RANGE);
    pf_kvev_batch_free(&out);
    lim = pf_kvev_limits_default();
    lim.max_bytes = n - 1;
    cr_expect_eq(pf_kvev_decode(p, n, &lim, &out, &why), PF_ERR_RANGE);
    pf_kvev_batch_free(&out);
    lim = pf_kvev_limits_default();
    lim.max_objects = 10;
    cr_expect_eq(pf_kvev_decode(p, n, &lim, &out, &why), PF_ERR_RANGE);
    pf_kvev_batch_free(&out);
    /* every truncation of a valid payload is refused, never read past */
    for (size_t k = 0; k < n; k++) {
        cr_expect_neq(pf_kvev_decode(p, k, NULL, &out, &why), 0);
        pf_kvev_batch_free(&out);
    }
    free(p);
}
