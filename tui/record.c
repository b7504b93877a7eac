/* tui/record.c - session recordings (format and contract in record.h). */
#include "tui/record.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

#define REC_VERSION 3 /* 2: time in seconds, the step's time, tokens and queue;
                         3: first tokens and their TTFT sum per step, and
                         the snapshot's last first tokens */
#define REC_SNAP 0x50414E53u /* "SNAP" */
#define REC_MAX_FRAMES (1 << 24)
#define REC_MAX_SEQS (1 << 20)

int pf_record_begin(FILE *f)
{
    unsigned char h[16] = {'P', 'F', 'R', 'E', 'C', 0};
    uint16_t v = REC_VERSION, ps = (uint16_t)sizeof(pf_sim_params);
    uint32_t ss = (uint32_t)sizeof(pf_sim_stats);
    memcpy(h + 6, &v, 2);
    memcpy(h + 8, &ps, 2);
    memcpy(h + 10, &ss, 4);
    return fwrite(h, 1, sizeof h, f) == sizeof h ? 0 : PF_ERR_IO;
}

/* The parameters' pointers (the cost model's names of the model and the
 * GPU) set to NULL: a recording holds no address of the process that made
 * it, and a replay reads none from a file. Nothing a replay draws reads
 * them. The profile's device name is a string again whatever the file
 * held. */
static void params_unlink(pf_sim_params *p)
{
    p->cost.model.name = NULL;
    p->cost.gpu.name = NULL;
    p->cost.gpu.long_name = NULL;
    p->cost.profile_device[sizeof p->cost.profile_device - 1] = '\0';
}

/* A growable byte buffer for one record's payload. */
typedef struct {
    unsigned char *p;
    size_t n, cap;
    int oom;
} wbuf;

static void put(wbuf *b, const void *src, size_t len)
{
    if (b->oom)
        return;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + len)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, len);
    b->n += len;
}

static void put_i32(wbuf *b, int32_t v) { put(b, &v, 4); }

int pf_record_put(FILE *f, const pf_sim_snapshot *s, int tick, int final)
{
    wbuf b = {NULL, 0, 0, 0};
    put_i32(&b, tick);
    uint8_t fin = (uint8_t)(final != 0);
    put(&b, &fin, 1);
    pf_sim_params params;
    memcpy(&params, &s->params, sizeof params); /* its padding too, not this stack's bytes */
    params_unlink(&params);
    put(&b, &params, sizeof params);
    put(&b, &s->stats, sizeof s->stats);
    put_i32(&b, s->paused);
    put_i32(&b, s->nframes);
    /* frames as runs of the same (owner, state) */
    int32_t runs = 0;
    for (int i = 0; i < s->nframes; i++)
        runs += i == 0 || s->frames[i].owner != s->frames[i - 1].owner ||
                s->frames[i].state != s->frames[i - 1].state;
    put_i32(&b, runs);
    for (int i = 0; i < s->nframes;) {
        int j = i + 1;
        while (j < s->nframes && s->frames[j].owner == s->frames[i].owner &&
               s->frames[j].state == s->frames[i].state)
            j++;
        put_i32(&b, s->frames[i].owner);
        put(&b, &s->frames[i].state, 1);
        put_i32(&b, j - i);
        i = j;
    }
    put_i32(&b, s->nseqs);
    put(&b, s->seqs, (size_t)s->nseqs * sizeof *s->seqs);
    put_i32(&b, s->nevents);
    put(&b, s->events, (size_t)s->nevents * sizeof s->events[0]);
    put_i32(&b, s->nhistory);
    put(&b, &s->hist_step0, sizeof s->hist_step0);
    size_t hn = (size_t)s->nhistory * sizeof(float);
    put(&b, s->hist_decoding, hn);
    put(&b, s->hist_stalled, hn);
    put(&b, s->hist_preempt, hn);
    put(&b, s->hist_usage, hn);
    put(&b, s->hist_time, (size_t)s->nhistory * sizeof(double));
    put(&b, s->hist_tokens, hn);
    put(&b, s->hist_waiting, hn);
    put(&b, s->hist_firsts, hn);
    put(&b, s->hist_ttft_sum, hn);
    put(&b, &s->ft_first, sizeof s->ft_first);
    put_i32(&b, s->nft);
    put(&b, s->ft, (size_t)s->nft * sizeof s->ft[0]);
    int rc = PF_ERR_IO;
    if (!b.oom && b.n < UINT32_MAX) {
        uint32_t hdr[2] = {REC_SNAP, (uint32_t)b.n};
        if (fwrite(hdr, 4, 2, f) == 2 && fwrite(b.p, 1, b.n, f) == b.n)
            rc = 0;
    }
    free(b.p);
    return rc;
}

int pf_record_open(FILE *f, const char *name, char *err, size_t errlen)
{
    unsigned char h[16];
    if (fread(h, 1, sizeof h, f) != sizeof h || memcmp(h, "PFREC\0", 6) != 0) {
        snprintf(err, errlen, "%s: not a pagefault recording (no PFREC header)", name);
        return PF_ERR_IO;
    }
    uint16_t v, ps;
    uint32_t ss;
    memcpy(&v, h + 6, 2);
    memcpy(&ps, h + 8, 2);
    memcpy(&ss, h + 10, 4);
    if (v != REC_VERSION) {
        snprintf(err, errlen, "%s: recording version %u, this build reads %d", name, v, REC_VERSION);
        return PF_ERR_IO;
    }
    if (ps != sizeof(pf_sim_params) || ss != sizeof(pf_sim_stats)) {
        snprintf(err, errlen, "%s: recorded by another build (parameter/statistics sizes %u/%u, here %zu/%zu)",
                 name, ps, ss, sizeof(pf_sim_params), sizeof(pf_sim_stats));
        return PF_ERR_IO;
    }
    return 0;
}

/* Reading the payload from memory, bounded. */
typedef struct {
    const unsigned char *p;
    size_t n, at;
    int bad;
} rbuf;

static void get(rbuf *r, void *dst, size_t len)
{
    if (r->bad || len > r->n - r->at) {
        r->bad = 1;
        memset(dst, 0, len);
        return;
    }
    memcpy(dst, r->p + r->at, len);
    r->at += len;
}

static int32_t get_i32(rbuf *r)
{
    int32_t v;
    get(r, &v, 4);
    return v;
}

static int grow(void **arr, int *cap, int want, size_t elt)
{
    if (*arr && *cap >= want)
        return 0;
    void *p = realloc(*arr, (size_t)(want > 0 ? want : 1) * elt);
    if (!p)
        return -1;
    *arr = p;
    *cap = want;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    int32_t x = ((const int32_t *)a)[0], y = ((const int32_t *)b)[0];
    return (x > y) - (x < y);
}

/* The frames, run-length coded: (owner, state, count) runs that cover the
 * pool exactly. 0, or a PF_ERR_* after a line in err. */
static int get_frames(rbuf *r, const char *name, pf_sim_snapshot *s, char *err, size_t errlen)
{
    int nframes = get_i32(r), runs = get_i32(r);
    if (r->bad || nframes < 1 || nframes > REC_MAX_FRAMES || runs < 1 || runs > nframes) {
        snprintf(err, errlen, "%s: a damaged record (%d frames in %d runs)", name, nframes, runs);
        return PF_ERR_IO;
    }
    int aux = s->frame_aux_cap;
    if (grow((void **)&s->frames, &s->frames_cap, nframes, sizeof *s->frames) ||
        grow((void **)&s->frame_seq, &aux, nframes, sizeof *s->frame_seq)) {
        snprintf(err, errlen, "%s: out of memory for %d frames", name, nframes);
        return PF_ERR_NOMEM;
    }
    s->frame_aux_cap = aux;
    free(s->frame_block); /* not recorded: the inspector shows no page table */
    s->frame_block = NULL;
    s->nframes = nframes;
    int at = 0;
    for (int i = 0; i < runs && !r->bad; i++) {
        int32_t owner = get_i32(r);
        uint8_t st;
        get(r, &st, 1);
        int32_t cnt = get_i32(r);
        if (cnt < 1 || cnt > nframes - at || st > PF_FRAME_CACHED || owner < -1) {
            r->bad = 1;
            break;
        }
        for (int k = 0; k < cnt; k++)
            s->frames[at + k] = (pf_frame_view){owner, st};
        at += cnt;
    }
    if (r->bad || at != nframes) {
        snprintf(err, errlen, "%s: a damaged record (frames)", name);
        return PF_ERR_IO;
    }
    return 0;
}

/* A sequence view as a simulator makes one: its state one of the enum's,
 * its counts not negative, its frames within what a recording can hold
 * (the renderer sums them) and its shared frames among them. */
static int seq_sane(const pf_seq_view *q)
{
    return q->state <= PF_SEQ_PREFILLING && q->prompt >= 0 && q->output >= 0 &&
           q->generated >= 0 && q->preemptions >= 0 && q->computed >= 0 && q->frames >= 0 &&
           q->frames <= REC_MAX_FRAMES && q->shared_frames >= 0 && q->shared_frames <= q->frames;
}

/* The sequences, events, history and first tokens, each count checked
 * against its array before a byte is copied, and the values that the
 * history and the renderer do arithmetic on checked in range. 0, or
 * PF_ERR_IO after a line in err. */
static int get_lists(rbuf *r, const char *name, pf_sim_snapshot *s, char *err, size_t errlen)
{
    int nseqs = get_i32(r);
    if (r->bad || nseqs < 0 || nseqs > REC_MAX_SEQS ||
        grow((void **)&s->seqs, &s->seqs_cap, nseqs > 16 ? nseqs : 16, sizeof *s->seqs)) {
        snprintf(err, errlen, "%s: a damaged record (%d sequences)", name, nseqs);
        return PF_ERR_IO;
    }
    get(r, s->seqs, (size_t)nseqs * sizeof *s->seqs);
    s->nseqs = nseqs;
    for (int i = 0; i < nseqs && !r->bad; i++) {
        if (!seq_sane(&s->seqs[i])) {
            snprintf(err, errlen, "%s: a damaged record (sequence %d)", name, i);
            return PF_ERR_IO;
        }
        s->seqs[i].table_at = -1; /* its block table is not recorded */
    }
    int nev = get_i32(r);
    if (r->bad || nev < 0 || nev > PF_SIM_EVENTS) {
        snprintf(err, errlen, "%s: a damaged record (%d events)", name, nev);
        return PF_ERR_IO;
    }
    get(r, s->events, (size_t)nev * sizeof s->events[0]);
    s->nevents = nev;
    int nh = get_i32(r);
    if (r->bad || nh < 0 || nh > PF_SIM_HISTORY) {
        snprintf(err, errlen, "%s: a damaged record (%d history steps)", name, nh);
        return PF_ERR_IO;
    }
    get(r, &s->hist_step0, sizeof s->hist_step0);
    /* the history adds its length to its first step, and a step to the
     * first tokens' first index (tui/hist.c): in range, no sum overflows */
    if (s->hist_step0 < 0 || s->hist_step0 > INT64_MAX - PF_SIM_HISTORY) {
        snprintf(err, errlen, "%s: a damaged record (history from step %lld)", name,
                 (long long)s->hist_step0);
        return PF_ERR_IO;
    }
    size_t hn = (size_t)nh * sizeof(float);
    get(r, s->hist_decoding, hn);
    get(r, s->hist_stalled, hn);
    get(r, s->hist_preempt, hn);
    get(r, s->hist_usage, hn);
    get(r, s->hist_time, (size_t)nh * sizeof(double));
    get(r, s->hist_tokens, hn);
    get(r, s->hist_waiting, hn);
    get(r, s->hist_firsts, hn);
    get(r, s->hist_ttft_sum, hn);
    s->nhistory = nh;
    get(r, &s->ft_first, sizeof s->ft_first);
    int nft = get_i32(r);
    if (r->bad || nft < 0 || nft > PF_SIM_FIRSTS) {
        snprintf(err, errlen, "%s: a damaged record (%d first tokens)", name, nft);
        return PF_ERR_IO;
    }
    if (s->ft_first < 0 || s->ft_first > INT64_MAX - PF_SIM_FIRSTS) {
        snprintf(err, errlen, "%s: a damaged record (first tokens from index %lld)", name,
                 (long long)s->ft_first);
        return PF_ERR_IO;
    }
    get(r, s->ft, (size_t)nft * sizeof s->ft[0]);
    s->nft = nft;
    return 0;
}

/* Each frame's owner as an index into seqs[] (frame_seq): by id, through a
 * sorted (id, index) list. 0 or PF_ERR_NOMEM. */
static int link_owners(pf_sim_snapshot *s)
{
    const int nseqs = s->nseqs;
    int32_t *idx = malloc((size_t)(nseqs > 0 ? nseqs : 1) * 2 * sizeof *idx);
    if (!idx)
        return PF_ERR_NOMEM;
    for (int i = 0; i < nseqs; i++) {
        idx[2 * i] = s->seqs[i].id;
        idx[2 * i + 1] = i;
    }
    qsort(idx, (size_t)nseqs, 2 * sizeof *idx, cmp_id);
    for (int f = 0; f < s->nframes; f++) {
        int32_t key[2] = {s->frames[f].owner, 0};
        const int32_t *hit = key[0] >= 0 && nseqs > 0
                                 ? bsearch(key, idx, (size_t)nseqs, 2 * sizeof *idx, cmp_id)
                                 : NULL;
        s->frame_seq[f] = hit ? hit[1] : -1;
    }
    free(idx);
    return 0;
}

int pf_record_get(FILE *f, const char *name, pf_sim_snapshot *s, int *tick, int *final, char *err,
                  size_t errlen)
{
    uint32_t hdr[2];
    size_t got = fread(hdr, 4, 2, f);
    if (got == 0 && feof(f))
        return 0;
    if (got != 2 || hdr[0] != REC_SNAP || hdr[1] > (1u << 30)) {
        snprintf(err, errlen, "%s: a damaged record (bad record header)", name);
        return PF_ERR_IO;
    }
    unsigned char *p = malloc(hdr[1] ? hdr[1] : 1);
    if (!p) {
        snprintf(err, errlen, "%s: out of memory for a record of %u bytes", name, hdr[1]);
        return PF_ERR_NOMEM;
    }
    int rc = PF_ERR_IO;
    if (fread(p, 1, hdr[1], f) != hdr[1]) {
        snprintf(err, errlen, "%s: the file ends inside a record", name);
        goto out;
    }
    rbuf r = {p, hdr[1], 0, 0};
    *tick = get_i32(&r);
    uint8_t fin;
    get(&r, &fin, 1);
    *final = fin;
    get(&r, &s->params, sizeof s->params);
    params_unlink(&s->params); /* a file's pointers point nowhere here */
    get(&r, &s->stats, sizeof s->stats);
    s->paused = get_i32(&r);
    if ((rc = get_frames(&r, name, s, err, errlen)) != 0 || (rc = get_lists(&r, name, s, err, errlen)) != 0)
        goto out;
    rc = PF_ERR_IO;
    if (r.bad || r.at != r.n) {
        snprintf(err, errlen, "%s: a damaged record (length)", name);
        goto out;
    }
    if ((rc = link_owners(s)) != 0) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto out;
    }
    rc = 1;
out:
    free(p);
    return rc;
}
