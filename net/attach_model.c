/* net/attach_model.c - the attached server's blocks, prefixes, counters and
 * history (see attach_model.h). */
#include "net/attach_model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/zsub.h" /* PF_ZSUB_MAX_RANKS (the header only: no libzmq) */

/* ---- a u64 -> u32 map: open addressing, linear probing -------------------
 *
 * Deletion shifts later entries of the same probe run back into the hole
 * (no tombstones), so lookups never slow down however long the server runs.
 * Capacity is a power of two kept at least twice the size. */
typedef struct {
    uint64_t key;
    uint32_t val;
    uint32_t used;
} slot_t;

typedef struct {
    slot_t *s;
    uint32_t cap, n;
} map_t;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int map_grow(map_t *m)
{
    uint32_t nc = m->cap ? m->cap * 2 : 1024;
    slot_t *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return -1;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->s[i].used)
            continue;
        uint32_t j = (uint32_t)mix(m->s[i].key) & (nc - 1);
        while (ns[j].used)
            j = (j + 1) & (nc - 1);
        ns[j] = m->s[i];
    }
    free(m->s);
    m->s = ns;
    m->cap = nc;
    return 0;
}

static slot_t *map_find(const map_t *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    uint32_t j = (uint32_t)mix(key) & (m->cap - 1);
    while (m->s[j].used) {
        if (m->s[j].key == key)
            return &m->s[j];
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

static slot_t *map_put(map_t *m, uint64_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap && map_grow(m) != 0)
        return NULL;
    uint32_t j = (uint32_t)mix(key) & (m->cap - 1);
    while (m->s[j].used && m->s[j].key != key)
        j = (j + 1) & (m->cap - 1);
    if (!m->s[j].used)
        m->n++;
    m->s[j].used = 1;
    m->s[j].key = key;
    m->s[j].val = val;
    return &m->s[j];
}

static void map_del(map_t *m, slot_t *e)
{
    uint32_t mask = m->cap - 1;
    uint32_t i = (uint32_t)(e - m->s);
    uint32_t j = i;
    m->n--;
    for (;;) {
        m->s[i].used = 0;
        for (;;) {
            j = (j + 1) & mask;
            if (!m->s[j].used)
                return;
            uint32_t home = (uint32_t)mix(m->s[j].key) & mask;
            /* can entry j move back to i? yes if its home is not in (i, j] */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        m->s[i] = m->s[j];
        i = j;
    }
}

/* Empty m. The table keeps its size, so an empty map is not cleared again:
 * a model emptied by its removals has empty maps already, and a payload of
 * 65536 AllBlocksCleared each clearing a table grown to a million blocks
 * froze attach for 45 s (twenty-seventh session's review). */
static void map_clear(map_t *m)
{
    if (m->s && m->n)
        memset(m->s, 0, m->cap * sizeof *m->s);
    m->n = 0;
}

/* ---- the model --------------------------------------------------------- */

#define ATTACH_SOCKETS PF_ZSUB_MAX_RANKS /* the subscriber's sockets, a rank each */

struct pf_attach {
    uint32_t max_blocks;
    pf_attach_block *blocks; /* by display slot */
    uint32_t n_slots, cap_slots;
    uint32_t *free_slots; /* a stack */
    uint32_t n_free, cap_free;
    map_t by_key;    /* block key -> slot      */
    map_t prefixes;  /* prefix id -> live blocks */
    /* Each rank's live blocks as a doubly linked list through the slots
     * (link_next/link_prev by slot, PF_ATTACH_NO_BLOCK ends it), its first
     * slot in rank_first: AllBlocksCleared for one rank then costs that
     * rank's blocks, not a walk over every slot. A payload can carry ~100k
     * clears; with a walk each, one batch froze the caller for minutes. */
    uint32_t *link_next, *link_prev;
    map_t rank_first; /* rank -> first slot of its list */
    /* Per socket (the caller's rank, 0..ATTACH_SOCKETS-1): 1 + the rank its
     * latest batch named in data_parallel_rank, 0 for none. The blocks are
     * keyed by that rank, and a restart is reported per socket: attached to
     * rank 3's port alone, socket 0 carries rank 3's blocks. */
    int32_t named[ATTACH_SOCKETS];
    uint32_t order;
    pf_attach_counts c;
    /* previous poll, for rates */
    double prev_t, prev_pre, prev_hits, prev_queries;
    int have_prev;
    pf_attach_point hist[PF_ATTACH_HISTORY];
    int hist_head, hist_n;
    char notes[PF_ATTACH_NOTES][PF_ATTACH_NOTE_LEN];
    double note_t[PF_ATTACH_NOTES];
    int note_head, note_n;
};

static uint64_t block_key(int rank, const pf_kvev_hash *h)
{
    return pf_kvev_hash_key(h) ^ ((uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull);
}

pf_attach *pf_attach_new(uint32_t max_blocks)
{
    pf_attach *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->max_blocks = max_blocks ? max_blocks : (1u << 20);
    pf_attach_counts *c = &m->c;
    c->usage = c->running = c->waiting = c->preemptions = c->preempt_rate = NAN;
    c->hit_rate = c->hit_rate_recent = NAN;
    for (int i = 0; i < 3; i++)
        c->ttft[i] = c->e2e[i] = NAN;
    return m;
}

void pf_attach_free(pf_attach *m)
{
    if (!m)
        return;
    free(m->blocks);
    free(m->free_slots);
    free(m->by_key.s);
    free(m->prefixes.s);
    free(m->link_next);
    free(m->link_prev);
    free(m->rank_first.s);
    free(m);
}

static void prefix_ref(pf_attach *m, uint64_t prefix, int d)
{
    slot_t *e = map_find(&m->prefixes, prefix);
    if (d > 0) {
        if (e)
            e->val++;
        else if (map_put(&m->prefixes, prefix, 1))
            m->c.prefixes_live++;
    } else if (e) {
        if (--e->val == 0) {
            map_del(&m->prefixes, e);
            m->c.prefixes_live--;
        }
    }
}

static uint32_t take_slot(pf_attach *m)
{
    if (m->n_free)
        return m->free_slots[--m->n_free];
    if (m->n_slots == m->cap_slots) {
        uint32_t nc = m->cap_slots ? m->cap_slots * 2 : 1024;
        if (nc > m->max_blocks)
            nc = m->max_blocks;
        if (nc <= m->cap_slots)
            return PF_ATTACH_NO_BLOCK;
        /* three arrays by slot; cap_slots grows only once all three have:
         * one that grew alone is merely larger than needed */
        uint32_t *nn = realloc(m->link_next, (size_t)nc * sizeof *nn);
        if (!nn)
            return PF_ATTACH_NO_BLOCK;
        m->link_next = nn;
        uint32_t *np = realloc(m->link_prev, (size_t)nc * sizeof *np);
        if (!np)
            return PF_ATTACH_NO_BLOCK;
        m->link_prev = np;
        pf_attach_block *nb = realloc(m->blocks, (size_t)nc * sizeof *nb);
        if (!nb)
            return PF_ATTACH_NO_BLOCK;
        m->blocks = nb;
        m->cap_slots = nc;
    }
    m->blocks[m->n_slots].live = 0; /* until stored: a failed store frees it as it is */
    return m->n_slots++;
}

/* Put slot s first in its rank's list. Returns 0, or -1 (no memory). */
static int link_add(pf_attach *m, int16_t rank, uint32_t s)
{
    slot_t *f = map_find(&m->rank_first, (uint64_t)(int64_t)rank);
    if (!f) {
        if (!map_put(&m->rank_first, (uint64_t)(int64_t)rank, s))
            return -1;
        m->link_next[s] = PF_ATTACH_NO_BLOCK;
    } else {
        m->link_next[s] = f->val;
        m->link_prev[f->val] = s;
        f->val = s;
    }
    m->link_prev[s] = PF_ATTACH_NO_BLOCK;
    return 0;
}

static void link_del(pf_attach *m, int16_t rank, uint32_t s)
{
    uint32_t nx = m->link_next[s], pv = m->link_prev[s];
    if (nx != PF_ATTACH_NO_BLOCK)
        m->link_prev[nx] = pv;
    if (pv != PF_ATTACH_NO_BLOCK) {
        m->link_next[pv] = nx;
        return;
    }
    slot_t *f = map_find(&m->rank_first, (uint64_t)(int64_t)rank);
    if (!f)
        return;
    if (nx != PF_ATTACH_NO_BLOCK)
        f->val = nx;
    else
        map_del(&m->rank_first, f);
}

static void free_slot(pf_attach *m, uint32_t s)
{
    if (m->n_free == m->cap_free) {
        uint32_t nc = m->cap_free ? m->cap_free * 2 : 1024;
        uint32_t *nf = realloc(m->free_slots, (size_t)nc * sizeof *nf);
        if (!nf)
            return; /* the slot stays unused: a hole, never a leak */
        m->free_slots = nf;
        m->cap_free = nc;
    }
    m->free_slots[m->n_free++] = s;
}

static void remove_slot(pf_attach *m, uint32_t s)
{
    pf_attach_block *b = &m->blocks[s];
    slot_t *e = map_find(&m->by_key, b->key);
    if (e)
        map_del(&m->by_key, e);
    link_del(m, b->rank, s);
    prefix_ref(m, b->prefix, -1);
    b->live = 0;
    m->c.blocks_live--;
    free_slot(m, s);
}

static void store(pf_attach *m, int rank, const pf_kvev_event *e)
{
    uint64_t prefix = 0;
    int have_prefix = 0;
    if (e->parent.kind != PF_KVEV_HASH_NONE) {
        slot_t *p = map_find(&m->by_key, block_key(rank, &e->parent));
        if (p) {
            prefix = m->blocks[p->val].prefix;
            have_prefix = 1;
        }
    }
    for (uint32_t i = 0; i < e->n_hashes; i++) {
        uint64_t key = block_key(rank, &e->hashes[i]);
        if (!have_prefix) {
            prefix = key;
            have_prefix = 1;
        }
        m->c.blocks_stored++;
        slot_t *dup = map_find(&m->by_key, key);
        if (dup) {
            if (i == 0 && prefix == key) /* the chain goes on from a block we hold */
                prefix = m->blocks[dup->val].prefix;
            m->c.stored_again++;
            continue;
        }
        uint32_t s = take_slot(m);
        slot_t *k = s == PF_ATTACH_NO_BLOCK ? NULL : map_put(&m->by_key, key, s);
        /* keyed by the rank the block records (int16_t), so removal finds
         * the same list */
        if (!k || link_add(m, (int16_t)rank, s) != 0) {
            if (k)
                map_del(&m->by_key, k);
            if (s != PF_ATTACH_NO_BLOCK)
                free_slot(m, s);
            m->c.untracked++;
            continue;
        }
        pf_attach_block *b = &m->blocks[s];
        b->key = key;
        b->prefix = prefix;
        b->order = m->order++;
        b->rank = (int16_t)rank;
        b->live = 1;
        m->c.blocks_live++;
        prefix_ref(m, prefix, +1);
    }
}

static void clear_rank(pf_attach *m, int rank)
{
    if (rank < 0) {
        for (uint32_t s = 0; s < m->n_slots; s++)
            if (m->blocks[s].live)
                remove_slot(m, s);
    } else if (rank <= INT16_MAX) { /* a larger rank was never stored as such */
        slot_t *f;
        while ((f = map_find(&m->rank_first, (uint64_t)(int64_t)rank)))
            remove_slot(m, f->val);
    }
    if (rank < 0 || m->c.blocks_live == 0) {
        /* everything gone: start the layout afresh */
        map_clear(&m->by_key);
        map_clear(&m->prefixes);
        map_clear(&m->rank_first);
        m->c.blocks_live = m->c.prefixes_live = 0;
        m->n_slots = m->n_free = 0;
    }
}

void pf_attach_apply(pf_attach *m, int rank, const pf_kvev_batch *b)
{
    if (!m || !b)
        return;
    int sock = rank;
    if (b->has_dp_rank && b->dp_rank < 0x7fff)
        rank = (int)b->dp_rank; /* the batch's own word wins over the socket's */
    if (sock >= 0 && sock < ATTACH_SOCKETS)
        m->named[sock] = rank != sock ? rank + 1 : 0;
    m->c.batches++;
    for (uint32_t i = 0; i < b->n_events; i++) {
        const pf_kvev_event *e = &b->events[i];
        if (e->type == PF_KVEV_STORED) {
            m->c.events_stored++;
            store(m, rank, e);
        } else if (e->type == PF_KVEV_REMOVED) {
            m->c.events_removed++;
            for (uint32_t k = 0; k < e->n_hashes; k++) {
                m->c.blocks_removed++;
                slot_t *s = map_find(&m->by_key, block_key(rank, &e->hashes[k]));
                if (s)
                    remove_slot(m, s->val);
                else
                    m->c.removed_unknown++;
            }
        } else if (e->type == PF_KVEV_CLEARED) {
            m->c.events_cleared++;
            clear_rank(m, rank);
        }
    }
}

void pf_attach_restart(pf_attach *m, int rank)
{
    if (!m)
        return;
    m->c.restarts++;
    clear_rank(m, rank);
    if (rank >= 0 && rank < ATTACH_SOCKETS && m->named[rank]) {
        clear_rank(m, m->named[rank] - 1); /* the rank this socket's blocks are keyed by */
        m->named[rank] = 0;
    }
    m->have_prev = 0;
}

/* Sum of the first name present; *n gets the number of samples. */
static int metric(const pf_prom_page *pg, const char *a, const char *b, double *v, int *n)
{
    int k = pf_prom_sum(pg, a, v);
    if (!k && b)
        k = pf_prom_sum(pg, b, v);
    if (n)
        *n = k;
    return k > 0;
}

static void quantiles(const pf_prom_page *pg, const char *base, double out[3])
{
    pf_prom_hist h;
    static const double q[3] = {0.5, 0.9, 0.99};
    if (pf_prom_histogram(pg, base, &h) <= 0)
        return;
    for (int i = 0; i < 3; i++)
        out[i] = pf_prom_quantile(&h, q[i]);
}

void pf_attach_metrics(pf_attach *m, const pf_prom_page *pg, double t)
{
    if (!m || !pg)
        return;
    pf_attach_counts *c = &m->c;
    double v, hits = NAN, queries = NAN;
    int n;
    c->metric_polls++;
    c->w_metrics_bad_lines += pg->n_bad + pg->n_long;
    c->w_metrics_truncated += pg->truncated != 0;
    if (metric(pg, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", &v, &n))
        c->usage = v / n; /* one gauge per engine: their mean */
    if (metric(pg, "vllm:num_requests_running", NULL, &v, NULL))
        c->running = v;
    if (metric(pg, "vllm:num_requests_waiting", NULL, &v, NULL))
        c->waiting = v;
    double pre = NAN;
    if (metric(pg, "vllm:num_preemptions_total", "vllm:num_preemptions", &v, NULL))
        pre = c->preemptions = v;
    if (metric(pg, "vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total", &v, NULL))
        hits = v;
    if (metric(pg, "vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total", &v, NULL))
        queries = v;
    if (queries > 0)
        c->hit_rate = hits / queries;
    quantiles(pg, "vllm:time_to_first_token_seconds", c->ttft);
    quantiles(pg, "vllm:e2e_request_latency_seconds", c->e2e);
    if (m->have_prev && t > m->prev_t) {
        if (!isnan(pre) && !isnan(m->prev_pre))
            c->preempt_rate = pre >= m->prev_pre ? (pre - m->prev_pre) / (t - m->prev_t) : 0;
        double dq = queries - m->prev_queries, dh = hits - m->prev_hits;
        if (dq > 0 && dh >= 0)
            c->hit_rate_recent = dh / dq;
    }
    m->prev_t = t;
    m->prev_pre = pre;
    m->prev_hits = hits;
    m->prev_queries = queries;
    m->have_prev = 1;
}

void pf_attach_sample(pf_attach *m, double t)
{
    if (!m)
        return;
    int i = (m->hist_head + m->hist_n) % PF_ATTACH_HISTORY;
    if (m->hist_n == PF_ATTACH_HISTORY) {
        i = m->hist_head;
        m->hist_head = (m->hist_head + 1) % PF_ATTACH_HISTORY;
    } else {
        m->hist_n++;
    }
    pf_attach_point *p = &m->hist[i];
    p->t = t;
    p->usage = m->c.usage;
    p->running = m->c.running;
    p->waiting = m->c.waiting;
    p->preempt_rate = m->c.preempt_rate;
    p->hit_rate = m->c.hit_rate_recent;
    p->ttft_p50 = m->c.ttft[0];
    p->ttft_p99 = m->c.ttft[2];
    p->blocks_live = (double)m->c.blocks_live;
}

void pf_attach_note(pf_attach *m, double t, const char *fmt, ...)
{
    if (!m)
        return;
    int i = (m->note_head + m->note_n) % PF_ATTACH_NOTES;
    if (m->note_n == PF_ATTACH_NOTES) {
        i = m->note_head;
        m->note_head = (m->note_head + 1) % PF_ATTACH_NOTES;
    } else {
        m->note_n++;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->notes[i], PF_ATTACH_NOTE_LEN, fmt, ap);
    va_end(ap);
    m->note_t[i] = t;
}

const pf_attach_counts *pf_attach_counts_get(const pf_attach *m) { return &m->c; }
pf_attach_counts *pf_attach_counts_mut(pf_attach *m) { return &m->c; }
uint32_t pf_attach_slot_count(const pf_attach *m) { return m->n_slots; }

const pf_attach_block *pf_attach_slot(const pf_attach *m, uint32_t s)
{
    return s < m->n_slots && m->blocks[s].live ? &m->blocks[s] : NULL;
}

int pf_attach_history_len(const pf_attach *m) { return m->hist_n; }

const pf_attach_point *pf_attach_history_at(const pf_attach *m, int i)
{
    if (i < 0 || i >= m->hist_n)
        return NULL;
    return &m->hist[(m->hist_head + i) % PF_ATTACH_HISTORY];
}

int pf_attach_note_count(const pf_attach *m) { return m->note_n; }

const char *pf_attach_note_get(const pf_attach *m, int i, double *t)
{
    if (i < 0 || i >= m->note_n)
        return NULL;
    int k = (m->note_head + m->note_n - 1 - i) % PF_ATTACH_NOTES;
    if (t)
        *t = m->note_t[k];
    return m->notes[k];
}
