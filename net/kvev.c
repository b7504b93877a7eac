/* net/kvev.c - decode and encode vLLM KV-event batches (see kvev.h). */
#include "net/kvev.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

pf_kvev_limits pf_kvev_limits_default(void)
{
    pf_kvev_limits l = {
        .max_bytes = 2u << 20,
        .max_objects = 2u << 20,
        .max_events = 65536,
        .max_hashes = 65536,
        .max_tokens = 1u << 20,
        .max_batch_hashes = 1u << 18,
    };
    return l;
}

/* What a msgpack value's first byte says: the payload bytes after it
 * (skip), or the elements of the array (container 1) or map (2) it opens,
 * and how many big-endian length bytes follow it (lenbytes; the length
 * then gives skip, plus extra for an ext's type byte, or elems). 0, or -1
 * for the one byte msgpack never uses (0xc1). */
typedef struct {
    uint64_t skip, elems;
    int container, lenbytes, extra;
} mp_head;

static int mp_classify(uint8_t c, mp_head *h)
{
    *h = (mp_head){0};
    if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3)
        return 0; /* fixint, nil, false, true */
    if (c <= 0x8f) { /* fixmap */
        h->container = 2;
        h->elems = 2u * (c & 0x0f);
        return 0;
    }
    if (c <= 0x9f) { /* fixarray */
        h->container = 1;
        h->elems = c & 0x0f;
        return 0;
    }
    if (c <= 0xbf) { /* fixstr */
        h->skip = c & 0x1f;
        return 0;
    }
    switch (c) {
    case 0xc4: case 0xd9: h->lenbytes = 1; break;               /* bin8, str8  */
    case 0xc5: case 0xda: h->lenbytes = 2; break;               /* bin16, str16 */
    case 0xc6: case 0xdb: h->lenbytes = 4; break;               /* bin32, str32 */
    case 0xc7: h->lenbytes = 1; h->extra = 1; break;            /* ext8        */
    case 0xc8: h->lenbytes = 2; h->extra = 1; break;            /* ext16       */
    case 0xc9: h->lenbytes = 4; h->extra = 1; break;            /* ext32       */
    case 0xca: h->skip = 4; break;                              /* float32     */
    case 0xcb: h->skip = 8; break;                              /* float64     */
    case 0xcc: case 0xd0: h->skip = 1; break;
    case 0xcd: case 0xd1: h->skip = 2; break;
    case 0xce: case 0xd2: h->skip = 4; break;
    case 0xcf: case 0xd3: h->skip = 8; break;
    case 0xd4: h->skip = 2; break;                              /* fixext1..16 */
    case 0xd5: h->skip = 3; break;
    case 0xd6: h->skip = 5; break;
    case 0xd7: h->skip = 9; break;
    case 0xd8: h->skip = 17; break;
    case 0xdc: h->container = 1; h->lenbytes = 2; break;        /* array16     */
    case 0xdd: h->container = 1; h->lenbytes = 4; break;        /* array32     */
    case 0xde: h->container = 2; h->lenbytes = 2; break;        /* map16       */
    case 0xdf: h->container = 2; h->lenbytes = 4; break;        /* map32       */
    default:
        return -1;
    }
    return 0;
}

/* ---- structural pre-scan ----------------------------------------------
 *
 * msgpack-c allocates n * sizeof(msgpack_object) as soon as it reads an
 * array or map header claiming n elements, before any element arrives: a
 * five-byte payload "dd ff ff ff ff" would ask for 96 GB. So before handing
 * the bytes to msgpack-c we walk them once ourselves, without allocating:
 * a stack holds, per open container, how many values it still expects; each
 * step reads one header, checks that the bytes it needs are there, and for a
 * container checks that it claims no more elements than bytes remain (every
 * msgpack value takes at least one byte). The walk counts values (capped by
 * max_objects), caps nesting at PRESCAN_DEPTH (msgpack-c's own stack is 32),
 * and requires the value to end exactly at the end of the buffer. After it
 * succeeds, msgpack-c allocates at most 24 bytes per counted value. */
#define PRESCAN_DEPTH 24

static int be_read(const uint8_t *p, int n, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < n; i++)
        x = (x << 8) | p[i];
    *v = x;
    return 0;
}

static int prescan(const uint8_t *p, size_t len, uint32_t max_objects, const char **why)
{
    uint64_t stack[PRESCAN_DEPTH];
    int sp = 0;
    size_t pos = 0;
    uint64_t objects = 0;
    stack[sp++] = 1;
    while (sp > 0) {
        if (stack[sp - 1] == 0) {
            sp--;
            continue;
        }
        stack[sp - 1]--;
        if (pos >= len) {
            *why = "msgpack value cut short";
            return PF_ERR_IO;
        }
        if (++objects > max_objects) {
            *why = "too many msgpack values in one payload";
            return PF_ERR_RANGE;
        }
        uint8_t c = p[pos++];
        size_t left = len - pos;
        mp_head h;
        if (mp_classify(c, &h) != 0) {
            *why = "invalid msgpack byte (0xc1)";
            return PF_ERR_IO;
        }
        if (h.lenbytes) {
            uint64_t n;
            if (left < (size_t)h.lenbytes) {
                *why = "msgpack header cut short";
                return PF_ERR_IO;
            }
            be_read(p + pos, h.lenbytes, &n);
            pos += (size_t)h.lenbytes;
            left -= (size_t)h.lenbytes;
            if (h.container)
                h.elems = h.container == 2 ? 2 * n : n;
            else
                h.skip = n + (uint64_t)h.extra;
        }
        if (h.container) {
            if (h.elems > left) {
                *why = "msgpack container claims more elements than bytes remain";
                return PF_ERR_IO;
            }
            if (h.elems > 0) {
                if (sp == PRESCAN_DEPTH) {
                    *why = "msgpack nested too deep";
                    return PF_ERR_IO;
                }
                stack[sp++] = h.elems;
            }
        } else {
            if (h.skip > left) {
                *why = "msgpack value cut short";
                return PF_ERR_IO;
            }
            pos += (size_t)h.skip;
        }
    }
    if (pos != len) {
        *why = "bytes after the msgpack value";
        return PF_ERR_IO;
    }
    return 0;
}

/* ---- object helpers ---------------------------------------------------- */

static int obj_is_str(const msgpack_object *o, const char *s)
{
    size_t n = strlen(s);
    return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n && memcmp(o->via.str.ptr, s, n) == 0;
}

static int obj_i64(const msgpack_object *o, int64_t *v)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > (uint64_t)INT64_MAX)
            return -1;
        *v = (int64_t)o->via.u64;
        return 0;
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *v = o->via.i64;
        return 0;
    }
    return -1;
}

static int obj_hash(const msgpack_object *o, pf_kvev_hash *h)
{
    memset(h, 0, sizeof *h);
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        h->kind = PF_KVEV_HASH_UINT;
        h->u = o->via.u64;
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        h->kind = PF_KVEV_HASH_INT;
        h->u = (uint64_t)o->via.i64;
        return 0;
    case MSGPACK_OBJECT_BIN:
        if (o->via.bin.size == 0 || o->via.bin.size > PF_KVEV_HASH_BYTES_MAX)
            return -1;
        h->kind = PF_KVEV_HASH_BYTES;
        h->len = (uint8_t)o->via.bin.size;
        memcpy(h->bytes, o->via.bin.ptr, o->via.bin.size);
        return 0;
    default:
        return -1;
    }
}

/* A view of one event's fields, by position (array_like: index + 1, after
 * the tag) or by name (map). */
typedef struct {
    const msgpack_object *arr; /* array_like: the event array, else NULL */
    uint32_t arr_n;
    const msgpack_object_map *map;
} ev_view;

static const msgpack_object *ev_field(const ev_view *v, uint32_t idx, const char *name)
{
    if (v->arr)
        return idx + 1 < v->arr_n ? &v->arr[idx + 1] : NULL;
    for (uint32_t i = 0; i < v->map->size; i++)
        if (obj_is_str(&v->map->ptr[i].key, name))
            return &v->map->ptr[i].val;
    return NULL;
}

static void event_free(pf_kvev_event *e)
{
    free(e->hashes);
    free(e->token_ids);
    e->hashes = NULL;
    e->token_ids = NULL;
}

/* Returns 0, -1 malformed, -2 over a limit, -3 no memory. */
static int ev_hashes(const msgpack_object *o, const pf_kvev_limits *lim, pf_kvev_event *e)
{
    if (!o || o->type != MSGPACK_OBJECT_ARRAY)
        return -1;
    if (o->via.array.size > lim->max_hashes)
        return -2;
    uint32_t n = o->via.array.size;
    if (n == 0)
        return 0;
    e->hashes = malloc(n * sizeof *e->hashes);
    if (!e->hashes)
        return -3;
    for (uint32_t i = 0; i < n; i++)
        if (obj_hash(&o->via.array.ptr[i], &e->hashes[i]) != 0)
            return -1;
    e->n_hashes = n;
    return 0;
}

static int ev_medium(const msgpack_object *o, pf_kvev_event *e)
{
    if (!o || o->type == MSGPACK_OBJECT_NIL)
        return 0;
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= PF_KVEV_MEDIUM_MAX)
        return -1;
    for (uint32_t i = 0; i < o->via.str.size; i++)
        if (o->via.str.ptr[i] < 0x20 || o->via.str.ptr[i] > 0x7e)
            return -1; /* printable ASCII only: it is shown on screen */
    memcpy(e->medium, o->via.str.ptr, o->via.str.size);
    e->medium[o->via.str.size] = '\0';
    return 0;
}

static int ev_group(const msgpack_object *o, pf_kvev_event *e)
{
    if (!o || o->type == MSGPACK_OBJECT_NIL)
        return 0;
    if (obj_i64(o, &e->group_idx) != 0)
        return -1;
    e->has_group = 1;
    return 0;
}

static int ev_stored(const ev_view *v, const pf_kvev_limits *lim, pf_kvev_event *e)
{
    int rc = ev_hashes(ev_field(v, 0, "block_hashes"), lim, e);
    if (rc)
        return rc;
    const msgpack_object *o = ev_field(v, 1, "parent_block_hash");
    if (o && o->type != MSGPACK_OBJECT_NIL && obj_hash(o, &e->parent) != 0)
        return -1;
    o = ev_field(v, 2, "token_ids");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        if (o->type != MSGPACK_OBJECT_ARRAY)
            return -1;
        if (o->via.array.size > lim->max_tokens)
            return -2;
        uint32_t n = o->via.array.size;
        if (n) {
            e->token_ids = malloc(n * sizeof *e->token_ids);
            if (!e->token_ids)
                return -3;
        }
        for (uint32_t i = 0; i < n; i++) {
            const msgpack_object *t = &o->via.array.ptr[i];
            if (t->type != MSGPACK_OBJECT_POSITIVE_INTEGER || t->via.u64 > UINT32_MAX)
                return -1;
            e->token_ids[i] = (uint32_t)t->via.u64;
        }
        e->n_tokens = n;
    }
    int64_t bs;
    o = ev_field(v, 3, "block_size");
    if (!o || obj_i64(o, &bs) != 0 || bs < 1 || bs > 65536)
        return -1;
    e->block_size = (int32_t)bs;
    o = ev_field(v, 4, "lora_id");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        if (obj_i64(o, &e->lora_id) != 0)
            return -1;
        e->has_lora = 1;
    }
    if (ev_medium(ev_field(v, 5, "medium"), e) != 0)
        return -1;
    /* 6 lora_name, 7 extra_keys: not used here (any type accepted) */
    return ev_group(ev_field(v, 8, "group_idx"), e);
}

static int ev_removed(const ev_view *v, const pf_kvev_limits *lim, pf_kvev_event *e)
{
    int rc = ev_hashes(ev_field(v, 0, "block_hashes"), lim, e);
    if (rc)
        return rc;
    if (ev_medium(ev_field(v, 1, "medium"), e) != 0)
        return -1;
    return ev_group(ev_field(v, 2, "group_idx"), e);
}

/* One event into *e. Returns 0 decoded, 1 unknown tag, -1 malformed, -2 over
 * a limit, -3 no memory. */
static int decode_event(const msgpack_object *o, const pf_kvev_limits *lim, pf_kvev_event *e)
{
    ev_view v = {0};
    const msgpack_object *tag = NULL;
    memset(e, 0, sizeof *e);
    if (o->type == MSGPACK_OBJECT_ARRAY) {
        if (o->via.array.size == 0)
            return -1;
        v.arr = o->via.array.ptr;
        v.arr_n = o->via.array.size;
        tag = &v.arr[0];
    } else if (o->type == MSGPACK_OBJECT_MAP) {
        v.map = &o->via.map;
        for (uint32_t i = 0; i < v.map->size; i++)
            if (obj_is_str(&v.map->ptr[i].key, "type"))
                tag = &v.map->ptr[i].val;
        if (!tag)
            return -1;
    } else {
        return -1;
    }
    if (tag->type != MSGPACK_OBJECT_STR)
        return -1;
    if (obj_is_str(tag, "BlockStored")) {
        e->type = PF_KVEV_STORED;
        return ev_stored(&v, lim, e);
    }
    if (obj_is_str(tag, "BlockRemoved")) {
        e->type = PF_KVEV_REMOVED;
        return ev_removed(&v, lim, e);
    }
    if (obj_is_str(tag, "AllBlocksCleared")) {
        e->type = PF_KVEV_CLEARED;
        return 0;
    }
    return 1;
}

/* The batch's three fields, from either of vLLM's encodings: an array
 * [ts, events, data_parallel_rank?] (msgspec's array_like structs) or a
 * map keyed by name. A field the batch lacks stays NULL; events must be
 * there. */
static int batch_fields(const msgpack_object *root, pf_kvev_batch *b, const msgpack_object **ts,
                        const msgpack_object **events, const msgpack_object **dp, const char **why)
{
    if (root->type == MSGPACK_OBJECT_ARRAY) {
        b->array_like = 1;
        if (root->via.array.size < 2) {
            *why = "event batch array has fewer than 2 fields";
            return PF_ERR_IO;
        }
        *ts = &root->via.array.ptr[0];
        *events = &root->via.array.ptr[1];
        if (root->via.array.size > 2)
            *dp = &root->via.array.ptr[2];
        return 0;
    }
    if (root->type != MSGPACK_OBJECT_MAP) {
        *why = "event batch is neither an array nor a map";
        return PF_ERR_IO;
    }
    for (uint32_t i = 0; i < root->via.map.size; i++) {
        const msgpack_object_kv *kv = &root->via.map.ptr[i];
        if (obj_is_str(&kv->key, "ts"))
            *ts = &kv->val;
        else if (obj_is_str(&kv->key, "events"))
            *events = &kv->val;
        else if (obj_is_str(&kv->key, "data_parallel_rank"))
            *dp = &kv->val;
    }
    if (!*events) {
        *why = "event batch map has no 'events'";
        return PF_ERR_IO;
    }
    return 0;
}

/* The batch's time stamp (a number, or nil) and data-parallel rank (a
 * rank, or nil), each where the batch has it. */
static int batch_header(const msgpack_object *ts, const msgpack_object *dp, pf_kvev_batch *b,
                        const char **why)
{
    if (ts) {
        if (ts->type == MSGPACK_OBJECT_FLOAT64 || ts->type == MSGPACK_OBJECT_FLOAT32)
            b->ts = ts->via.f64;
        else if (ts->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            b->ts = (double)ts->via.u64;
        else if (ts->type != MSGPACK_OBJECT_NIL) {
            *why = "event batch 'ts' is not a number";
            return PF_ERR_IO;
        }
    }
    if (dp && dp->type != MSGPACK_OBJECT_NIL) {
        if (obj_i64(dp, &b->dp_rank) != 0 || b->dp_rank < 0) {
            *why = "event batch 'data_parallel_rank' is not a rank";
            return PF_ERR_IO;
        }
        b->has_dp_rank = 1;
    }
    return 0;
}

/* The events, each decoded into b->events or counted as unknown or
 * malformed and skipped; a batch over the limits is refused whole. Each
 * event is held to what is left of the batch's hash budget: the cap is
 * checked before an event's hashes are allocated, not after. */
static int batch_events(const msgpack_object *events, const pf_kvev_limits *lim, pf_kvev_batch *b,
                        const char **why)
{
    if (events->type != MSGPACK_OBJECT_ARRAY) {
        *why = "event batch 'events' is not an array";
        return PF_ERR_IO;
    }
    uint32_t n = events->via.array.size;
    if (n > lim->max_events) {
        *why = "too many events in one batch";
        return PF_ERR_RANGE;
    }
    if (n == 0)
        return 0;
    b->events = calloc(n, sizeof *b->events);
    if (!b->events) {
        *why = "out of memory";
        return PF_ERR_NOMEM;
    }
    pf_kvev_limits left = *lim;
    uint32_t hashes_left = lim->max_batch_hashes;
    for (uint32_t i = 0; i < n; i++) {
        pf_kvev_event *e = &b->events[b->n_events];
        left.max_hashes = lim->max_hashes < hashes_left ? lim->max_hashes : hashes_left;
        int rc = decode_event(&events->via.array.ptr[i], &left, e);
        if (rc == 0) {
            hashes_left -= e->n_hashes;
            b->n_events++;
            continue;
        }
        event_free(e);
        memset(e, 0, sizeof *e);
        if (rc == 1)
            b->n_unknown++;
        else if (rc == -1)
            b->n_malformed++;
        else if (rc == -2) {
            *why = "more block hashes or token ids than allowed (in an event or in the batch)";
            return PF_ERR_RANGE;
        } else {
            *why = "out of memory";
            return PF_ERR_NOMEM;
        }
    }
    return 0;
}

static int decode_batch(const msgpack_object *root, const pf_kvev_limits *lim, pf_kvev_batch *b,
                        const char **why)
{
    const msgpack_object *ts = NULL, *events = NULL, *dp = NULL;
    int rc = batch_fields(root, b, &ts, &events, &dp, why);
    if (rc == 0)
        rc = batch_header(ts, dp, b, why);
    if (rc == 0)
        rc = batch_events(events, lim, b, why);
    return rc;
}

int pf_kvev_decode(const void *data, size_t len, const pf_kvev_limits *lim, pf_kvev_batch *out,
                   const char **why)
{
    const char *dummy;
    pf_kvev_limits def = pf_kvev_limits_default();
    if (!why)
        why = &dummy;
    *why = "";
    if (!out)
        return PF_ERR_ARG;
    memset(out, 0, sizeof *out);
    if (!lim)
        lim = &def;
    if (!data || len == 0) {
        *why = "empty payload";
        return PF_ERR_IO;
    }
    if (len > lim->max_bytes) {
        *why = "payload larger than the limit";
        return PF_ERR_RANGE;
    }
    int rc = prescan(data, len, lim->max_objects, why);
    if (rc)
        return rc;

    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_return ur = msgpack_unpack_next(&up, data, len, &off);
    if (ur != MSGPACK_UNPACK_SUCCESS) {
        *why = ur == MSGPACK_UNPACK_NOMEM_ERROR ? "out of memory" : "malformed msgpack";
        rc = ur == MSGPACK_UNPACK_NOMEM_ERROR ? PF_ERR_NOMEM : PF_ERR_IO;
    } else {
        rc = decode_batch(&up.data, lim, out, why);
    }
    msgpack_unpacked_destroy(&up);
    if (rc) {
        pf_kvev_batch_free(out);
        out->n_events = 0;
    }
    return rc;
}

void pf_kvev_batch_free(pf_kvev_batch *b)
{
    if (!b)
        return;
    for (uint32_t i = 0; i < b->n_events; i++)
        event_free(&b->events[i]);
    /* events past n_events were freed as they were skipped */
    free(b->events);
    b->events = NULL;
    b->n_events = 0;
}

/* ---- encoding ---------------------------------------------------------- */

static void pack_cstr(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_hash(msgpack_packer *pk, const pf_kvev_hash *h)
{
    switch (h->kind) {
    case PF_KVEV_HASH_UINT:
        msgpack_pack_uint64(pk, h->u);
        break;
    case PF_KVEV_HASH_INT:
        msgpack_pack_int64(pk, (int64_t)h->u);
        break;
    case PF_KVEV_HASH_BYTES:
        msgpack_pack_bin(pk, h->len);
        msgpack_pack_bin_body(pk, h->bytes, h->len);
        break;
    default:
        msgpack_pack_nil(pk);
    }
}

static void pack_hashes(msgpack_packer *pk, const pf_kvev_event *e)
{
    msgpack_pack_array(pk, e->n_hashes);
    for (uint32_t i = 0; i < e->n_hashes; i++)
        pack_hash(pk, &e->hashes[i]);
}

static void pack_medium(msgpack_packer *pk, const pf_kvev_event *e)
{
    if (e->medium[0])
        pack_cstr(pk, e->medium);
    else
        msgpack_pack_nil(pk);
}

/* Keys and values in vLLM's field order; in a map, fields that hold their
 * default (group_idx None) are omitted as msgspec's omit_defaults does. */
static void pack_event(msgpack_packer *pk, const pf_kvev_event *e, int arr)
{
    const char *tag = pf_kvev_type_name(e->type);
#define KEY(k) do { if (!arr) pack_cstr(pk, k); } while (0)
    if (e->type == PF_KVEV_STORED) {
        /* an array ends at its last field that is not a default (msgspec's
         * omit_defaults on an array_like struct): 7 without group_idx, 10
         * with it (lora_name and extra_keys then held as nil) */
        if (arr)
            msgpack_pack_array(pk, e->has_group ? 10 : 7);
        else
            msgpack_pack_map(pk, 8 + (e->has_group ? 1 : 0));
        KEY("type");
        pack_cstr(pk, tag);
        KEY("block_hashes");
        pack_hashes(pk, e);
        KEY("parent_block_hash");
        pack_hash(pk, &e->parent);
        KEY("token_ids");
        msgpack_pack_array(pk, e->n_tokens);
        for (uint32_t i = 0; i < e->n_tokens; i++)
            msgpack_pack_uint32(pk, e->token_ids[i]);
        KEY("block_size");
        msgpack_pack_int32(pk, e->block_size);
        KEY("lora_id");
        if (e->has_lora)
            msgpack_pack_int64(pk, e->lora_id);
        else
            msgpack_pack_nil(pk);
        KEY("medium");
        pack_medium(pk, e);
        if (!arr) {
            KEY("lora_name");
            msgpack_pack_nil(pk);
            if (e->has_group) {
                KEY("group_idx");
                msgpack_pack_int64(pk, e->group_idx);
            }
        } else if (e->has_group) {
            msgpack_pack_nil(pk); /* lora_name */
            msgpack_pack_nil(pk); /* extra_keys */
            msgpack_pack_int64(pk, e->group_idx);
        }
    } else if (e->type == PF_KVEV_REMOVED) {
        int grp = e->has_group;
        if (arr)
            msgpack_pack_array(pk, 3 + (grp ? 1 : 0));
        else
            msgpack_pack_map(pk, 3 + (grp ? 1 : 0));
        KEY("type");
        pack_cstr(pk, tag);
        KEY("block_hashes");
        pack_hashes(pk, e);
        KEY("medium");
        pack_medium(pk, e);
        if (grp) {
            KEY("group_idx");
            msgpack_pack_int64(pk, e->group_idx);
        }
    } else {
        if (arr)
            msgpack_pack_array(pk, 1);
        else
            msgpack_pack_map(pk, 1);
        KEY("type");
        pack_cstr(pk, tag);
    }
#undef KEY
}

/* The packer ignores its write callback's result, so a failed realloc is
 * remembered here and the whole encoding reported as out of memory. */
typedef struct {
    msgpack_sbuffer sb;
    int failed;
} enc_buf;

static int enc_write(void *data, const char *buf, size_t len)
{
    enc_buf *w = data;
    if (!w->failed && msgpack_sbuffer_write(&w->sb, buf, len) != 0)
        w->failed = 1;
    return w->failed ? -1 : 0;
}

/* A hash a caller built by hand, checked before it is packed: a kind out
 * of the enum, or bytes of a length past the array (pack_hash copies len
 * bytes from it), would otherwise be packed as garbage or read past it. */
static int hash_ok(const pf_kvev_hash *h)
{
    if (h->kind == PF_KVEV_HASH_BYTES)
        return h->len >= 1 && h->len <= PF_KVEV_HASH_BYTES_MAX;
    return h->kind <= PF_KVEV_HASH_INT;
}

int pf_kvev_encode(const pf_kvev_batch *b, int array_like, char **out, size_t *out_len)
{
    if (!b || !out || !out_len || (b->n_events && !b->events))
        return PF_ERR_ARG;
    for (uint32_t i = 0; i < b->n_events; i++) {
        const pf_kvev_event *e = &b->events[i];
        if (e->type < PF_KVEV_STORED || e->type > PF_KVEV_CLEARED ||
            (e->n_hashes && !e->hashes) || (e->n_tokens && !e->token_ids) ||
            !hash_ok(&e->parent))
            return PF_ERR_ARG;
        for (uint32_t j = 0; j < e->n_hashes; j++)
            if (!hash_ok(&e->hashes[j]))
                return PF_ERR_ARG;
    }
    enc_buf w = {0};
    msgpack_sbuffer_init(&w.sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &w, enc_write);
    int nf = 2 + (b->has_dp_rank ? 1 : 0);
    if (array_like) {
        msgpack_pack_array(&pk, nf);
    } else {
        msgpack_pack_map(&pk, nf);
        pack_cstr(&pk, "ts");
    }
    msgpack_pack_double(&pk, b->ts);
    if (!array_like)
        pack_cstr(&pk, "events");
    msgpack_pack_array(&pk, b->n_events);
    for (uint32_t i = 0; i < b->n_events; i++)
        pack_event(&pk, &b->events[i], array_like);
    if (b->has_dp_rank) {
        if (!array_like)
            pack_cstr(&pk, "data_parallel_rank");
        msgpack_pack_int64(&pk, b->dp_rank);
    }
    if (w.failed || !w.sb.data) {
        msgpack_sbuffer_destroy(&w.sb);
        return PF_ERR_NOMEM;
    }
    *out_len = w.sb.size;
    *out = msgpack_sbuffer_release(&w.sb);
    msgpack_sbuffer_destroy(&w.sb);
    return 0;
}

pf_kvev_hash pf_kvev_hash_uint(uint64_t v)
{
    pf_kvev_hash h;
    memset(&h, 0, sizeof h);
    h.kind = PF_KVEV_HASH_UINT;
    h.u = v;
    return h;
}

pf_kvev_hash pf_kvev_hash_bytes(const void *p, size_t len)
{
    pf_kvev_hash h;
    memset(&h, 0, sizeof h);
    if (!p || len == 0)
        return h;
    if (len > PF_KVEV_HASH_BYTES_MAX)
        len = PF_KVEV_HASH_BYTES_MAX;
    h.kind = PF_KVEV_HASH_BYTES;
    h.len = (uint8_t)len;
    memcpy(h.bytes, p, len);
    return h;
}

int pf_kvev_hash_eq(const pf_kvev_hash *a, const pf_kvev_hash *b)
{
    if (a->kind != b->kind)
        return 0;
    if (a->kind == PF_KVEV_HASH_BYTES)
        return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
    return a->kind == PF_KVEV_HASH_NONE || a->u == b->u;
}

uint64_t pf_kvev_hash_key(const pf_kvev_hash *h)
{
    if (h->kind != PF_KVEV_HASH_BYTES)
        return h->u;
    uint64_t x = 1469598103934665603ull; /* FNV-1a 64 */
    for (int i = 0; i < h->len; i++) {
        x ^= h->bytes[i];
        x *= 1099511628211ull;
    }
    return x;
}

const char *pf_kvev_type_name(pf_kvev_type t)
{
    switch (t) {
    case PF_KVEV_STORED: return "BlockStored";
    case PF_KVEV_REMOVED: return "BlockRemoved";
    case PF_KVEV_CLEARED: return "AllBlocksCleared";
    }
    return "?";
}
