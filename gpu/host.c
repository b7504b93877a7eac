/* gpu/host.c - host-side pieces of the GPU stage that need no CUDA: dtype
 * names and sizes, float <-> fp16/bf16 rounding, shape validation (with the
 * overflow checks of the public API), the split-KV planner, the threaded
 * CPU-reference check and the cost-model profile writer. Built in every
 * configuration (the stub too), so all of it is tested without a device.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/attn.h"
#include "core/err.h"
#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"

const char *pf_gpu_dtype_name(pf_gpu_dtype t)
{
    switch (t) {
    case PF_GPU_F32: return "fp32";
    case PF_GPU_F16: return "fp16";
    case PF_GPU_BF16: return "bf16";
    }
    return "?";
}

size_t pf_gpu_dtype_size(pf_gpu_dtype t)
{
    return t == PF_GPU_F32 ? 4 : 2;
}

int pf_gpu_shape_ok(int num_q_heads, int num_kv_heads, int head_dim, int block_size, char *why,
                    size_t whylen)
{
    const char *msg = NULL;
    char buf[160];
    if (num_kv_heads < 1 || num_q_heads < 1) {
        msg = "head counts must be >= 1";
    } else if (num_q_heads % num_kv_heads) {
        snprintf(buf, sizeof buf, "q heads (%d) must be a multiple of kv heads (%d)", num_q_heads,
                 num_kv_heads);
        msg = buf;
    } else if (num_q_heads > 65535 || num_kv_heads > 4096) {
        msg = "too many heads (at most 65535 q heads, 4096 kv heads)";
    } else if (head_dim != 64 && head_dim != 128) {
        snprintf(buf, sizeof buf, "head dim must be 64 or 128, got %d", head_dim);
        msg = buf;
    } else if (block_size < 8 || block_size > 256) {
        snprintf(buf, sizeof buf, "block size must be in [8, 256], got %d", block_size);
        msg = buf;
    }
    if (msg) {
        if (why && whylen)
            snprintf(why, whylen, "%s", msg);
        return 0;
    }
    return 1;
}

/* ---- element conversion ----------------------------------------------
 * bf16 is the top half of a float: round to nearest even by adding
 * 0x7fff plus the lowest kept bit, NaN kept quiet. fp16 goes through the
 * usual exponent rebias with subnormals and round to nearest even. */
static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t pf_gpu_f32_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float pf_gpu_bf16_to_f32(uint16_t h)
{
    return u2f((uint32_t)h << 16);
}

uint16_t pf_gpu_f32_to_f16(float f)
{
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00u;           /* NaN */
    if (a >= 0x477ff000u)                /* rounds to >= 65520: inf */
        return sign | 0x7c00u;
    if (a < 0x33000001u)                 /* below half the smallest subnormal */
        return sign;
    int e = (int)(a >> 23) - 127;
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    int shift; /* bits to drop from the 24-bit mantissa */
    uint32_t base;
    if (e < -14) { /* subnormal half */
        shift = 13 + (-14 - e);
        base = 0;
    } else {
        shift = 13;
        base = (uint32_t)(e + 15) << 10;
        mant &= 0x7fffffu;
    }
    uint32_t kept = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    uint32_t h = base + kept;
    if (rest > half || (rest == half && (kept & 1u)))
        h++; /* may carry into the exponent: still correct */
    return (uint16_t)(sign | h);
}

float pf_gpu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return u2f(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f); /* m * 2^-24 */
        return sign ? -v : v;
    }
    return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

float pf_gpu_host_store(pf_gpu_dtype t, void *dst, size_t i, float v)
{
    switch (t) {
    case PF_GPU_F16: {
        uint16_t h = pf_gpu_f32_to_f16(v);
        ((uint16_t *)dst)[i] = h;
        return pf_gpu_f16_to_f32(h);
    }
    case PF_GPU_BF16: {
        uint16_t h = pf_gpu_f32_to_bf16(v);
        ((uint16_t *)dst)[i] = h;
        return pf_gpu_bf16_to_f32(h);
    }
    default: ((float *)dst)[i] = v; return v;
    }
}

float pf_gpu_host_load(pf_gpu_dtype t, const void *src, size_t i)
{
    switch (t) {
    case PF_GPU_F16: return pf_gpu_f16_to_f32(((const uint16_t *)src)[i]);
    case PF_GPU_BF16: return pf_gpu_bf16_to_f32(((const uint16_t *)src)[i]);
    default: return ((const float *)src)[i];
    }
}

double pf_gpu_dtype_rel_eps(pf_gpu_dtype t)
{
    switch (t) {
    case PF_GPU_F16: return 1.0 / 1024.0;
    case PF_GPU_BF16: return 1.0 / 128.0;
    default: return 0.0;
    }
}

/* ---- CPU reference check ---------------------------------------------
 * Sequences are dealt round-robin to worker threads; each thread keeps its
 * own maxima and counts, merged on the calling thread afterwards. The
 * reference is core's double-accumulating contiguous attention on the same
 * (rounded) inputs. An element passes when
 *   |out - ref| <= tol + eps |ref| + p_eps sum_t p_t |v_t| / sum_t p_t,
 * eps being the output type's rounding (0 for fp32) and p_eps the rounding
 * of the weights p the kernel feeds to its P V product (the last term
 * bounds what that rounding moves the output by); NaN or inf never passes. */
typedef struct {
    const pf_gpu_refcheck *c;
    int tid, nthreads;
    pf_gpu_refcheck_out o;
    int err;
} ref_job;

static void *ref_worker(void *arg)
{
    ref_job *j = arg;
    const pf_gpu_refcheck *c = j->c;
    const int D = c->head_dim, G = c->hq / c->hkv;
    const double eps = pf_gpu_dtype_rel_eps(c->dtype);
    /* the reference rows of one kv head (and their weights over |V|, for
     * the allowance of rounded weights): in the caller's cache, where its
     * rows for q heads h G + g0 .. + ng lie one after another, else here */
    const size_t rows = (size_t)c->hq * D;
    const int need_ref = !c->ref, need_abs = !c->ref_abs && c->p_eps > 0;
    double *own = NULL;
    if ((need_ref || need_abs) &&
        !(own = malloc(sizeof(double) * (size_t)(need_ref + need_abs) * rows))) {
        j->err = PF_ERR_NOMEM;
        return NULL;
    }
    for (int s = j->tid; s < c->num_seqs; s += j->nthreads) {
        const int len = c->lens[s];
        const float *qs = c->q + (size_t)s * c->hq * D;
        const float *ks = c->k + c->off[s], *vs = c->v + c->off[s];
        for (int h = 0; h < c->hkv; h++) {
            /* one kv head at a time, as a 1-kv-head problem of G (or 1) q heads */
            int g0 = c->all_heads ? 0 : (s + h) % G;
            int ng = c->all_heads ? G : 1;
            const size_t at = ((size_t)s * c->hq + (size_t)h * G + g0) * D;
            double *ref = c->ref ? c->ref + at : own;
            double *wabs = c->ref_abs ? c->ref_abs + at : need_abs ? own + need_ref * rows : NULL;
            if (!(c->ref && c->ref_ready)) {
                pf_attn_shape sh = {ng, 1, D, c->scale};
                int rc = pf_attn_ref_contig_f64_abs(&sh, qs + ((size_t)h * G + g0) * D,
                                                    ks + (size_t)h * len * D,
                                                    vs + (size_t)h * len * D, len, len, ref, wabs);
                if (rc != PF_OK) {
                    j->err = rc;
                    free(own);
                    return NULL;
                }
            }
            for (int g = 0; g < ng; g++) {
                const int qh = h * G + g0 + g;
                for (int d = 0; d < D; d++) {
                    double r = ref[(size_t)g * D + d];
                    double x = pf_gpu_host_load(c->dtype, c->out, ((size_t)s * c->hq + qh) * D + d);
                    double err = fabs(x - r);
                    double allowed = c->tol + eps * fabs(r);
                    if (c->p_eps > 0)
                        allowed += c->p_eps * wabs[(size_t)g * D + d];
                    j->o.checked++;
                    if (!(err <= allowed)) { /* NaN fails here too */
                        if (j->o.bad++ == 0) {
                            j->o.first_bad_seq = s;
                            j->o.first_bad_head = qh;
                        }
                    }
                    if (!isfinite(x)) {
                        j->o.max_err = INFINITY;
                        j->o.allowed_at_max = allowed;
                    } else if (err > j->o.max_err) {
                        j->o.max_err = err;
                        j->o.allowed_at_max = allowed;
                    }
                }
            }
        }
    }
    free(own);
    return NULL;
}

int pf_gpu_ref_check(const pf_gpu_refcheck *c, pf_gpu_refcheck_out *o)
{
    if (!c || !o || c->num_seqs < 1 || c->hkv < 1 || c->hq % c->hkv || !c->q || !c->k || !c->v ||
        !c->out || !c->lens || !c->off || !(c->p_eps >= 0) ||
        (c->ref_ready && (!c->ref || (c->p_eps > 0 && !c->ref_abs))))
        return PF_ERR_ARG;
    int n = c->threads;
    if (n <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (int)cpus : 1;
    }
    if (n > 32)
        n = 32;
    if (n > c->num_seqs)
        n = c->num_seqs;
    ref_job jobs[32];
    pthread_t th[32];
    int started[32] = {0};
    for (int i = 0; i < n; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].c = c;
        jobs[i].tid = i;
        jobs[i].nthreads = n;
        jobs[i].o.first_bad_seq = jobs[i].o.first_bad_head = -1;
    }
    /* thread 0's work runs on the caller; the rest on workers (if any start) */
    for (int i = 1; i < n; i++)
        started[i] = pthread_create(&th[i], NULL, ref_worker, &jobs[i]) == 0;
    ref_worker(&jobs[0]);
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            ref_worker(&jobs[i]); /* could not start a thread: do its share here */
    }
    memset(o, 0, sizeof *o);
    o->first_bad_seq = o->first_bad_head = -1;
    int err = PF_OK;
    for (int i = 0; i < n; i++) {
        const pf_gpu_refcheck_out *p = &jobs[i].o;
        if (jobs[i].err && !err)
            err = jobs[i].err;
        o->checked += p->checked;
        if (p->bad && (o->first_bad_seq < 0 || p->first_bad_seq < o->first_bad_seq)) {
            o->first_bad_seq = p->first_bad_seq;
            o->first_bad_head = p->first_bad_head;
        }
        o->bad += p->bad;
        if (p->max_err > o->max_err || (i == 0 && p->checked)) {
            o->max_err = p->max_err;
            o->allowed_at_max = p->allowed_at_max;
        }
    }
    return err;
}

/* ---- shape validation --------------------------------------------------
 * The kernels index tokens with int and elements with size_t; the grid has
 * num_seqs in z (at most 65535) and num_seqs * num_q_heads merge rows in x
 * (at most INT_MAX). Every product they form is checked here once, with
 * overflow-checked multiplication, so a shape either fits all of them or is
 * refused before anything touches the device. */
static int mul_ok(size_t a, size_t b, size_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

int pf_gpu_attn_validate(const pf_gpu_attn_shape *s, int paged)
{
    if (!s || s->num_seqs < 1 || s->num_seqs > 65535)
        return PF_ERR_ARG;
    if (!pf_gpu_shape_ok(s->num_q_heads, s->num_kv_heads, s->head_dim,
                         paged ? s->block_size : 16, NULL, 0))
        return PF_ERR_ARG;
    if (s->dtype != PF_GPU_F32 && s->dtype != PF_GPU_F16 && s->dtype != PF_GPU_BF16)
        return PF_ERR_ARG;
    if (!(s->scale >= 0.f) || isinf(s->scale)) /* NaN fails the first test */
        return PF_ERR_ARG;
    size_t rows, elems;
    if (!mul_ok((size_t)s->num_seqs, (size_t)s->num_q_heads, &rows) || rows > INT32_MAX ||
        !mul_ok(rows, (size_t)s->head_dim, &elems) || !mul_ok(elems, sizeof(float), &elems))
        return PF_ERR_ARG;
    if (paged) {
        size_t tokens, entries;
        if (s->max_blocks_per_seq < 1 ||
            !mul_ok((size_t)s->max_blocks_per_seq, (size_t)s->block_size, &tokens) ||
            tokens > INT32_MAX ||
            !mul_ok((size_t)s->num_seqs, (size_t)s->max_blocks_per_seq, &entries) ||
            !mul_ok(entries, sizeof(int), &entries))
            return PF_ERR_ARG;
    } else {
        /* naive buffers [S][Hkv][cap][D] in bytes must fit a size_t */
        size_t n;
        if (s->naive_cap < 1 || !mul_ok((size_t)s->num_seqs, (size_t)s->num_kv_heads, &n) ||
            !mul_ok(n, (size_t)s->naive_cap, &n) || !mul_ok(n, (size_t)s->head_dim, &n) ||
            !mul_ok(n, pf_gpu_dtype_size(s->dtype), &n))
            return PF_ERR_ARG;
    }
    return PF_OK;
}

int pf_gpu_group_tile(int group)
{
    return group % 8 == 0 ? 8 : group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : 1;
}

/* Version 0 for a launch that is not small (gpu_internal.h says why). */
static int default_large(const pf_gpu_attn_shape *s)
{
    if (s->dtype == PF_GPU_F32)
        return 7;
    return pf_gpu_group_tile(s->num_q_heads / s->num_kv_heads) == 1 ? 8 : PF_GPU_GQA_VERSION;
}

int pf_gpu_default_version(const pf_gpu_attn_shape *s)
{
    if (s->dtype != PF_GPU_F32 &&
        (long long)s->num_seqs * pf_gpu__head_tiles(s) <= PF_GPU_SMALL_LAUNCH)
        return 9;
    return default_large(s);
}

/* ---- split-KV planning ---------------------------------------------------
 * A thread block reads one chunk of one sequence's tokens for one KV head
 * (and GQA tile); the hardware hands blocks to free slots (sm_count x
 * blocks_per_sm of them) in grid order, chunk index fastest. The plan picks
 * the chunk that finishes soonest under a model of that, evaluated on the
 * actual blocks (the real lengths, or every sequence at the bound) for each
 * chunk that cuts the longest sequence into 1, 2, 3... equal whole pages.
 *
 * The model is processor sharing: the blocks resident at a time share the
 * memory bandwidth equally, but one block streams at most one SM's share (BW
 * / sm_count), so the machine is saturated only while about one block per SM
 * is resident. (Until the fifth session the cap was half an SM's share, from
 * version 5, which was bound by issuing instructions; with version 7's fewer
 * instructions and the work list, the H200 measured the mixed workload at
 * 0.219 ms in one chunk against 0.227 in two, 0.236 in four, where the
 * half-share model preferred two: with one SM's share the model orders all
 * three as measured, and keeps every other workload's choice,
 * docs/gpu-journal.md, fifth session.) Each block also pays a fixed start-up
 * (table read, first loads in flight); more than one chunk per sequence adds
 * the merge (a second launch, the partial outputs written and read back). So
 * a few long sequences get split until every SM has work, and a batch that
 * already fills the machine is not split for nothing: a partial last wave
 * costs only what it leaves idle. (Issue 4's rule, eight blocks per SM from
 * the capacity, split llama into 3 chunks and mha not at all whatever the
 * lengths.)
 *
 * Constants: the bandwidth only converts between bytes and the fixed costs,
 * so an H100/H200-class 4 bytes/ns is close enough; a block's start-up about
 * 1.5 us of memory latency; the merge launch about 3 us (0.5 us when the
 * kernel merges in place, version 5); a block with no tokens (a short
 * sequence's unused chunk) 0.2 us. */
#define PLAN_BW_BYTES_PER_NS 4000.0
#define PLAN_BLOCK_NS 1500.0
#define PLAN_EMPTY_NS 200.0
#define PLAN_MERGE_NS 3000.0
#define PLAN_FUSED_MERGE_NS 500.0
#define PLAN_MAX_SIM_BLOCKS (1 << 20)
/* version 33: a packed block's cost at each sequence after its first (a
 * warp's output written from its registers and its next Q read: about one
 * memory latency, less what the pipeline keeps in flight), and the share
 * of the slots its packs must keep busy (see "packing") */
#define PLAN_PACK_SEQ_NS 300.0
#define PLAN_PACK_FILL 0.9
/* Chunks longer than PLAN_FILL_FREE_CHUNK tokens (the cap until the
 * thirty-second session, so every plan it allowed is as it was) are
 * candidates only where the launch keeps PLAN_LONG_CHUNK_FILL blocks an SM
 * share. The model lets a lone block stream a whole SM's share, and with
 * chunks of up to 8192 it picked launches of about a block an SM, which
 * the H100 measured slower than the cut below them (thirty-second
 * session, v29, shuffled 16-token pages): 16 x 6144 in 128 blocks 0.871 of
 * the read bandwidth against 0.930 in 256; 8 x 16384 in 192 blocks 0.928
 * against 0.937 in 256. At 1.94 an SM (256 blocks on 132 SMs: long, 32 x
 * 8192, 16 x 12288, mha's 8 x 8192) the longer chunks were level or
 * faster on both machines. */
#define PLAN_FILL_FREE_CHUNK 4096
#define PLAN_LONG_CHUNK_FILL 1.9

/* The simulation's resident blocks, grouped: `n` blocks that end at work
 * mark `end`. A min-heap on end. */
typedef struct {
    double end;
    int n;
} plan_group;

static void heap_sift_down(plan_group *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l].end < h[m].end)
            m = l;
        if (r < n && h[r].end < h[m].end)
            m = r;
        if (m == i)
            return;
        plan_group t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void heap_push(plan_group *h, int *n, plan_group v)
{
    int i = (*n)++;
    h[i] = v;
    while (i > 0 && h[(i - 1) / 2].end > h[i].end) {
        plan_group t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

/* ---- the work list --------------------------------------------------------
 * Launched as a grid of (chunk, head tile, sequence), the blocks start in
 * that order whatever the lengths: a batch of mixed lengths starts its long
 * sequences wherever they sit and ends on whichever comes last, and every
 * short sequence still launches one block per chunk of the longest, which
 * finds no tokens and exits (mixed: about 3,500 of 6,144 blocks). When the
 * plan has the host lengths and the version merges in place (5-8), it makes
 * a list of units instead: one (sequence, chunk) for each chunk that holds
 * tokens (a sequence of length <= 0 keeps one, which writes its zeros),
 * longest first (ties: sequence, then chunk), each unit one block per head
 * tile, so the hardware, which starts blocks in index order, runs the
 * classic longest-processing-time-first schedule and ends on the shortest
 * units. The list lives in the workspace, written once per plan by
 * pf_gpu_attn_workspace_init; a unit also carries the number of chunks its
 * sequence was planned with, and the kernel reads the sequence's device
 * length up to their end. */
#define PLAN_MAX_UNITS (1 << 20) /* a longer list: grid order */

static int unit_cmp(const void *pa, const void *pb)
{
    const pf_gpu_unit *a = pa, *b = pb;
    if (a->tok != b->tok)
        return a->tok > b->tok ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return (a->chunk > b->chunk) - (a->chunk < b->chunk);
}

/* The units of sequence `seq` (length len, read up to its bound) at
 * `chunk` tokens, written to out when it is not NULL; returns how many.
 * Without a tail, a unit a chunk with tokens (one for an empty sequence).
 * With one, each run of 8 x tail chunks (a block's worth before the cut;
 * the sequence's last run may hold fewer) is a unit of all but its last
 * `tail` chunks, then a unit for each of those: the big units start
 * first (longest first), the small ones fill the SMs that finish early. */
static int seq_units(int len, int seq, int chunk, int tail, pf_gpu_unit *out)
{
    const int nch = len > 0 ? (len + chunk - 1) / chunk : 1;
    const int run = tail ? 8 * tail : 1;
    int u = 0;
    for (int c0 = 0; c0 < nch; c0 += run) {
        const int n = nch - c0 < run ? nch - c0 : run;
        const int head = n > tail ? n - tail : 0; /* tail 0: n (= 1) */
        for (int c = c0, span; c < c0 + n; c += span) {
            span = c == c0 && head ? head : 1;
            if (out) {
                int tok = len - c * chunk;
                tok = tok < 0 ? 0 : tok > span * chunk ? span * chunk : tok;
                out[u] = (pf_gpu_unit){tok, seq, c, nch, span};
            }
            u++;
        }
    }
    return u;
}

/* Sequence i's length as the planner reads it: up to bound (every
 * sequence at bound without host lengths). */
static int plan_len(const int *lens, int i, int bound)
{
    const int len = lens ? lens[i] : bound;
    return len > bound ? bound : len;
}

/* Units a list at `chunk` tokens has; lengths read up to bound. */
static long long plan_units_count(const int *lens, int n, int bound, int chunk, int tail)
{
    long long u = 0;
    for (int i = 0; i < n; i++)
        u += seq_units(plan_len(lens, i, bound), i, chunk, tail, NULL);
    return u;
}

/* The list without a tail, in unit_cmp's order with no sort of the whole:
 * the full chunks (chunk tokens, the most a unit holds) in (sequence,
 * chunk) order, then each sequence's partial last chunk, sorted (at most
 * one a sequence), then a unit for each empty sequence, in order. */
static long long plan_units_ordered(const int *lens, int n, int bound, int chunk, pf_gpu_unit *out)
{
    long long u = 0;
    for (int i = 0; i < n; i++) {
        const int len = plan_len(lens, i, bound);
        const int nch = len > 0 ? (len + chunk - 1) / chunk : 1;
        for (int c = 0; c < (len > 0 ? len / chunk : 0); c++)
            out[u++] = (pf_gpu_unit){chunk, i, c, nch, 1};
    }
    const long long parts = u;
    for (int i = 0; i < n; i++) {
        const int len = plan_len(lens, i, bound);
        if (len > 0 && len % chunk)
            out[u++] = (pf_gpu_unit){len % chunk, i, len / chunk, (len + chunk - 1) / chunk, 1};
    }
    qsort(out + parts, (size_t)(u - parts), sizeof *out, unit_cmp);
    for (int i = 0; i < n; i++)
        if (plan_len(lens, i, bound) <= 0)
            out[u++] = (pf_gpu_unit){0, i, 0, 1, 1};
    return u;
}

/* The list as seq_units makes it, sorted whole (the exhaustive search's
 * reference, and any list with a tail). */
static long long plan_units_sorted(const int *lens, int n, int bound, int chunk, int tail,
                                   pf_gpu_unit *out)
{
    long long u = 0;
    for (int i = 0; i < n; i++)
        u += seq_units(plan_len(lens, i, bound), i, chunk, tail, out + u);
    qsort(out, (size_t)u, sizeof *out, unit_cmp);
    return u;
}

long long pf_gpu__plan_units(const int *lens, int n, int bound, int chunk, int tail,
                             pf_gpu_unit *out)
{
    return tail ? plan_units_sorted(lens, n, bound, chunk, tail, out)
                : plan_units_ordered(lens, n, bound, chunk, out);
}

/* FNV-1a over the lengths: the plan keeps it so that the workspace is
 * prepared from the very lengths the list was planned on. */
static unsigned long long lens_hash(const int *lens, int n)
{
    unsigned long long h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 32; b += 8) {
            h ^= ((unsigned)lens[i] >> b) & 0xffu;
            h *= 0x100000001b3ull;
        }
    return h;
}

/* A block's work alone (ns at a lone block's rate blk_rate): a start-up,
 * extra (a pack's further sequences) and its tokens' bytes; an empty
 * block only starts and exits. The simulation and its floor both cost
 * blocks this way. */
static double plan_block_ns(int tok, double extra, double tok_bytes, double blk_rate)
{
    return tok ? PLAN_BLOCK_NS + extra + tok * tok_bytes / blk_rate : PLAN_EMPTY_NS;
}

/* Time (ns) to run the blocks of one candidate chunk. Every resident block
 * advances at the same rate, so progress is one "work mark" W (ns of work
 * at a lone block's rate); a block that needs w ns alone ends at mark
 * W_start + w. With n blocks resident, W advances at full speed while
 * n <= sm_count and n / sm_count times slower beyond (the bandwidth is
 * shared), so real time = dW * max(1, n / sm_count). Blocks come in
 * grid order, or from `list` (units of `heads` blocks) when it is given.
 *
 * Blocks that start at one mark with the same work end together: with
 * `group` they are one heap entry of n blocks (a uniform batch is then a
 * few entries a wave, not one a block). That changes no time: of a group
 * ending at mark E, the first to end moves real time by (E - W) at the
 * resident count, and each other by E - E = 0 whatever the count, so
 * ending them at once and then starting as many blocks, all at mark E,
 * adds exactly the same terms in the same order. Without `group` every
 * block is its own entry (the exhaustive search, the tests' reference).
 * The heap holds `slots` entries. */
static double plan_cost(const int *lens, int n, int bound, int heads, int chunk, int splits,
                        const pf_gpu_unit *list, long long units, double tok_bytes, int slots,
                        int sms, plan_group *heap, size_t merge_bytes, double merge_ns, int group)
{
    const double blk_rate = PLAN_BW_BYTES_PER_NS / sms; /* bytes/ns of a lone block */
    int live = 0, entries = 0;
    double W = 0, now = 0;
    long long next = 0;
    const long long total = list ? units * heads : (long long)n * heads * splits;
    for (;;) {
        plan_group pend = {0, 0}; /* the blocks started at W with one work, not yet in the heap */
        while (live < slots && next < total) {
            int tok;
            if (list) {
                tok = list[next / heads].tok;
            } else { /* block `next` in grid order: chunk fastest, then head, then sequence */
                const int c = (int)(next % splits);
                const int s = (int)(next / ((long long)splits * heads));
                tok = plan_len(lens, s, bound) - c * chunk;
                tok = tok < 0 ? 0 : tok > chunk ? chunk : tok;
            }
            /* a packed block (version 33: span is its sequences) pays one
             * start-up and PLAN_PACK_SEQ_NS at each further sequence */
            const double seqs_ns = list ? (list[next / heads].span - 1) * PLAN_PACK_SEQ_NS : 0.0;
            next++;
            const double w = plan_block_ns(tok, seqs_ns, tok_bytes, blk_rate);
            live++;
            if (group && pend.n && pend.end == W + w) {
                pend.n++;
                continue;
            }
            if (pend.n)
                heap_push(heap, &entries, pend);
            pend = (plan_group){W + w, 1};
        }
        if (pend.n)
            heap_push(heap, &entries, pend);
        if (!live)
            break;
        const plan_group end = heap[0];
        const double slow = live > sms ? (double)live / sms : 1.0;
        now += (end.end - W) * slow;
        W = end.end;
        live -= end.n;
        heap[0] = heap[--entries];
        heap_sift_down(heap, entries, 0);
    }
    if (splits > 1)
        now += merge_ns + 2.0 * (double)merge_bytes / PLAN_BW_BYTES_PER_NS;
    return now;
}

/* A floor under plan_cost's time for one candidate, in O(sequences)
 * instead of a simulation of every block. In the model the resident blocks
 * complete min(resident, sms) ns of work a ns between them, and one block
 * at most 1 ns of its own work a ns; so no order of the blocks ends before
 * the work of all of them over sms, nor before the largest block's work.
 * The same blocks as plan_cost's, from the same lengths: a chunk with
 * tokens costs PLAN_BLOCK_NS and its bytes, an empty one PLAN_EMPTY_NS (a
 * listed sequence of length 0 keeps one such unit; grid order launches
 * every chunk of the longest); no pack (the search makes none). At most
 * `slots` blocks are resident, so the work completes at most
 * min(slots, sms) ns a ns.
 * *rising is the part that never falls as the candidates' chunks shrink
 * (the search's order): the work over the machine plus the merge. Chunks
 * with tokens only multiply, grid order's empty ones turn into them one
 * for one at 1300 ns more each, and the merge grows with the splits; the
 * largest block's work is the part that falls. */
static double plan_cost_floor(const int *lens, int n, int bound, int heads, int chunk, int splits,
                              int listed, double tok_bytes, int slots, int sms, size_t merge_bytes,
                              double merge_ns, double *rising)
{
    const double blk_rate = PLAN_BW_BYTES_PER_NS / sms;
    double work = 0;
    int longest = 0;
    for (int i = 0; i < n; i++) {
        int len = plan_len(lens, i, bound);
        len = len < 0 ? 0 : len;
        const int full = len ? (len + chunk - 1) / chunk : 0; /* chunks with tokens */
        const int empty = listed ? !len : splits - full;
        work += full * PLAN_BLOCK_NS + len * tok_bytes / blk_rate + empty * PLAN_EMPTY_NS;
        longest = len > longest ? len : longest;
    }
    const int top = longest < chunk ? longest : chunk;
    const double w_max = plan_block_ns(top, 0.0, tok_bytes, blk_rate);
    const double span = work * heads / (slots < sms ? slots : sms);
    const double merge = splits > 1 ? merge_ns + 2.0 * (double)merge_bytes / PLAN_BW_BYTES_PER_NS : 0;
    *rising = span + merge;
    return (span > w_max ? span : w_max) + merge;
}

int pf_gpu__head_tiles(const pf_gpu_attn_shape *s)
{
    const int group = s->num_q_heads / s->num_kv_heads;
    return s->num_kv_heads * (group / pf_gpu_group_tile(group));
}

int pf_gpu__plan_head_tiles(const pf_gpu_attn_plan *plan)
{
    const pf_gpu_attn_shape *s = &plan->shape;
    const int tiles = s->num_kv_heads * (s->num_q_heads / s->num_kv_heads / plan->group_tile);
    const int per = pf_gpu_version_heads(plan->version, s->dtype);
    return (tiles + per - 1) / per;
}

long long pf_gpu__plan_blocks(const pf_gpu_attn_plan *plan)
{
    const long long heads = pf_gpu__plan_head_tiles(plan);
    if (!plan->units)
        return (long long)plan->splits * heads * plan->shape.num_seqs;
    const long long packs = plan->pack > 1 ? (plan->units + plan->pack - 1) / plan->pack : plan->units;
    const long long items = packs * heads;
    const long long wave = (long long)plan->sm_count * plan->blocks_per_sm;
    return pf_gpu_version_steal(plan->version) && wave < items ? wave : items;
}

void pf_gpu__ws_layout(const pf_gpu_attn_plan *plan, pf_gpu_ws_layout *l)
{
    const pf_gpu_attn_shape *s = &plan->shape;
    const int steal = pf_gpu_version_steal(plan->version);
    const size_t pairs = (size_t)s->num_seqs * pf_gpu__plan_head_tiles(plan);
    size_t at = 0;
    /* a tail: a slot a unit, 1 + tail a run of 8 x tail chunks (kernels.cu,
     * slot_of) */
    const int runs = plan->tail ? (plan->splits + 8 * plan->tail - 1) / (8 * plan->tail) : 0;
    l->slots = steal ? plan->splits * PF_GPU_STEAL_VISITS
               : plan->tail ? runs * (1 + plan->tail)
               : plan->splits > 1 && !pf_gpu_version_cluster(plan->version) ? plan->splits
                                                                             : 0;
    if (l->slots) {
        const size_t rows = (size_t)s->num_seqs * s->num_q_heads * l->slots;
        at = rows * (size_t)s->head_dim * sizeof(float);
        l->lse = at;
        at += rows * sizeof(float);
        l->counters = at;
        if (steal) /* next item, blocks exited; tokens done, partials taken */
            at += (2 + 2 * pairs) * sizeof(unsigned);
        else if (pf_gpu_version_fused(plan->version)) /* one per (sequence, head tile) */
            at += pairs * sizeof(unsigned);
    } else {
        l->lse = l->counters = 0;
    }
    at = (at + 7) / 8 * 8;
    l->claims = at;
    if (steal)
        at += (size_t)plan->units * pf_gpu__plan_head_tiles(plan) * sizeof(unsigned long long);
    l->work = at;
    if (plan->units > 0) /* the header, then the units: int pairs */
        at += (size_t)(plan->units + 1) * 2 * sizeof(int);
    l->bytes = at;
}

static void plan_workspace(pf_gpu_attn_plan *plan)
{
    pf_gpu_ws_layout l;
    pf_gpu__ws_layout(plan, &l);
    plan->workspace_bytes = l.bytes;
}

void pf_gpu__plan_drop_list(pf_gpu_attn_plan *plan)
{
    plan->units = 0;
    plan->tail = 0; /* a tail is units of the list: its chunks stay, each a block */
    plan->pack = 0; /* so is a pack */
    plan->lens_hash = 0;
    plan_workspace(plan);
}

/* a made plan, and a workspace where it needs one, on the merge's grid */
static int plan_ws_ok(const pf_gpu_attn_plan *plan, const void *workspace)
{
    return plan && plan->magic == PF_GPU_PLAN_MAGIC && (!plan->workspace_bytes || workspace) &&
           (uintptr_t)workspace % PF_GPU_WORKSPACE_ALIGN == 0;
}

int pf_gpu__append_args(const pf_gpu_attn_shape *s, const void *k_new, const void *v_new,
                        int n_tokens, const int *block_tables, const int *seq_lens,
                        const void *k_pool, const void *v_pool)
{
    const int rc = pf_gpu_attn_validate(s, 1);
    if (rc != PF_OK)
        return rc;
    return n_tokens < 0 || !k_new || !v_new || !block_tables || !seq_lens || !k_pool || !v_pool
               ? PF_ERR_ARG
               : PF_OK;
}

int pf_gpu__run_args(const pf_gpu_attn_plan *plan, const void *q, const void *k, const void *v,
                     const int *block_tables, const int *seq_lens, const void *out,
                     const void *workspace)
{
    if (!plan_ws_ok(plan, workspace) || !q || !k || !v || !seq_lens || !out ||
        (plan->paged && !block_tables))
        return PF_ERR_ARG;
    return PF_OK;
}

int pf_gpu__workspace_args(const pf_gpu_attn_plan *plan, const int *lens_host,
                           const void *workspace)
{
    if (!plan_ws_ok(plan, workspace))
        return PF_ERR_ARG;
    if (plan->units && (!lens_host || lens_hash(lens_host, plan->shape.num_seqs) != plan->lens_hash))
        return PF_ERR_ARG;
    return PF_OK;
}

int pf_gpu__work_list(const pf_gpu_attn_plan *plan, const int *lens_host, int *pairs)
{
    if (!plan || plan->magic != PF_GPU_PLAN_MAGIC || plan->units < 1 || !lens_host || !pairs)
        return PF_ERR_ARG;
    const int n = plan->shape.num_seqs;
    if (lens_hash(lens_host, n) != plan->lens_hash)
        return PF_ERR_ARG;
    pf_gpu_unit *u = malloc(sizeof *u * (size_t)plan->units);
    if (!u)
        return PF_ERR_NOMEM;
    const long long units =
        pf_gpu__plan_units(lens_host, n, plan->max_len, plan->chunk, plan->tail, u);
    int rc = units == plan->units ? PF_OK : PF_ERR_ARG;
    if (rc == PF_OK) {
        pairs[0] = PF_GPU_WORK_MAGIC;
        pairs[1] = (int)units;
        for (long long i = 0; i < units; i++) {
            pairs[2 * i + 2] = u[i].seq;
            pairs[2 * i + 3] = PF_GPU_WORK_Y(u[i].chunk, u[i].span, u[i].nch);
        }
    }
    free(u);
    return rc;
}

int pf_gpu__plan_begin(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged, int version)
{
    if (!plan)
        return PF_ERR_ARG;
    memset(plan, 0, sizeof *plan);
    int rc = pf_gpu_attn_validate(s, paged);
    if (rc != PF_OK)
        return rc;
    return version < 0 || version > PF_GPU_KERNEL_VERSIONS ? PF_ERR_ARG : PF_OK;
}

/* The longest sequence the plan serves: the host lengths' maximum, or the
 * caller's bound without them; at least 1 token, at most the capacity and
 * PF_GPU_MAX_SEQ_TOKENS (the same at every page size, though from 16-token
 * pages on 256 chunks would hold twice that). PF_OK or PF_ERR_ARG. */
static int plan_bound(const pf_gpu_attn_shape *s, int paged, const int *lens_host, int max_len, int *bound_out)
{
    int cap = paged ? s->max_blocks_per_seq * s->block_size : s->naive_cap;
    cap = cap < PF_GPU_MAX_SEQ_TOKENS ? cap : PF_GPU_MAX_SEQ_TOKENS;
    int bound = 0;
    if (lens_host) {
        for (int i = 0; i < s->num_seqs; i++)
            if (lens_host[i] > bound)
                bound = lens_host[i]; /* lengths <= 0 are allowed: zeros */
        if (bound > cap)
            return PF_ERR_ARG;
    } else {
        if (max_len < 1 || max_len > cap)
            return PF_ERR_ARG;
        bound = max_len;
    }
    *bound_out = bound < 1 ? 1 : bound;
    return PF_OK;
}

/* The version a plan runs: `version`, or for 0 the shape's default; a
 * launch with few enough pairs for version 9 (pf_gpu_default_version) is
 * small only if its tokens are too (PF_GPU_SMALL_TOKENS: `bound`, the
 * longest sequence, for each), else the large launch's version. */
static int resolve_version(const pf_gpu_attn_shape *s, int bound, int version)
{
    if (version)
        return version;
    const int v = pf_gpu_default_version(s);
    if (pf_gpu_version_cluster(v) && (long long)s->num_seqs * bound > PF_GPU_SMALL_TOKENS)
        return default_large(s);
    return v;
}
/* A cluster merges at most PF_GPU_CLUSTER_MAX chunks of whole pages of at
 * most PF_GPU_CLUSTER_CHUNK_MAX_TOKENS (8 x 4080 tokens at 48-token pages,
 * 8 x 3841 at worst for pages of 8-256 tokens), so the small launch's
 * sequence fits one at any page size. */
_Static_assert(PF_GPU_SMALL_TOKENS <= PF_GPU_CLUSTER_MAX * (PF_GPU_CLUSTER_CHUNK_MAX_TOKENS - 255),
               "a small launch's sequence must fit one cluster");

int pf_gpu__plan_version(const pf_gpu_attn_shape *s, int paged, const int *lens_host, int max_len,
                         int version, int *v_out)
{
    int bound, rc = plan_bound(s, paged, lens_host, max_len, &bound);
    if (rc == PF_OK)
        *v_out = resolve_version(s, bound, version);
    return rc;
}

/* What the planner's search weighs: the shape, the lengths and the
 * machine as the cost model sees them (pf_gpu_attn_plan_compute). */
typedef struct {
    const pf_gpu_attn_shape *s;
    const int *lens;  /* the host lengths, or NULL: every sequence at bound */
    int bound;        /* the longest sequence                               */
    int B;            /* chunks are whole multiples of B tokens             */
    int v;            /* the version planned                                */
    int heads;        /* blocks a chunk of a sequence takes                 */
    double tok_bytes; /* bytes a block reads a token                        */
    int slots;        /* blocks resident at once                            */
    int shares;       /* the SM shares the bandwidth is divided into        */
    double merge_ns;  /* the merge launch's cost when a sequence splits     */
    int listed;       /* from a work list of units                          */
    int unsplit_only; /* wanted only if unsplit: stop once the pick splits  */
    int exhaustive;   /* simulate every candidate (no floor, no early stop) */
} plan_model;

/* The chunk the plan takes: its length, the longest sequence's splits, and
 * the work list's units (listed plans). */
typedef struct {
    int chunk, splits;
    long long units;
} plan_pick;

/* The search's scratch: the simulation's heap (a slot a resident block)
 * and a work list grown to the largest candidate's units. */
typedef struct {
    plan_group *heap;
    pf_gpu_unit *list;
    long long cap;
} plan_scratch;

/* One candidate's cost (chunk c, `splits` chunks of the longest, `units`
 * units when listed): simulated from its work list or in grid order, or,
 * past PLAN_MAX_SIM_BLOCKS blocks in grid order, estimated as a machine
 * that stays saturated. PF_OK or PF_ERR_NOMEM. */
static int plan_candidate_cost(const plan_model *m, int c, int splits, long long units,
                               size_t merge_bytes, plan_scratch *sc, double *cost)
{
    const pf_gpu_attn_shape *s = m->s;
    const int heads = m->heads, bound = m->bound;
    if (m->listed) {
        if (units > sc->cap) {
            pf_gpu_unit *grown = realloc(sc->list, sizeof *grown * (size_t)units);
            if (!grown)
                return PF_ERR_NOMEM;
            sc->list = grown;
            sc->cap = units;
        }
        if (m->exhaustive)
            plan_units_sorted(m->lens, s->num_seqs, bound, c, 0, sc->list);
        else
            plan_units_ordered(m->lens, s->num_seqs, bound, c, sc->list);
        *cost = plan_cost(NULL, s->num_seqs, bound, heads, c, splits, sc->list, units, m->tok_bytes,
                          m->slots, m->shares, sc->heap, merge_bytes, m->merge_ns, !m->exhaustive);
    } else if ((double)s->num_seqs * heads * splits <= PLAN_MAX_SIM_BLOCKS)
        *cost = plan_cost(m->lens, s->num_seqs, bound, heads, c, splits, NULL, 0, m->tok_bytes,
                          m->slots, m->shares, sc->heap, merge_bytes, m->merge_ns, !m->exhaustive);
    else
        *cost = (double)s->num_seqs * heads * splits * PLAN_BLOCK_NS / m->slots +
                (double)s->num_seqs * heads * bound * m->tok_bytes / PLAN_BW_BYTES_PER_NS +
                (splits > 1 ? m->merge_ns : 0);
    return PF_OK;
}

/* The candidates: the longest sequence in 1, 2, 3... equal whole-page
 * chunks, each costed by the model; the cheapest wins, fewer splits on a
 * tie (within 1%: less merge traffic). PF_OK, PF_ERR_NOMEM, or PF_ERR_ARG
 * when no candidate fits (longer than PF_GPU_MAX_SPLITS chunks of
 * pf_gpu_chunk_max_tokens, or than a cluster's chunks). */
static int plan_search(const plan_model *m, plan_pick *best_pick)
{
    const pf_gpu_attn_shape *s = m->s;
    plan_scratch sc = {malloc(sizeof(plan_group) * (size_t)m->slots), NULL, 0};
    if (!sc.heap)
        return PF_ERR_NOMEM;
    const int B = m->B, bound = m->bound, heads = m->heads;
    const int max_chunk = pf_gpu_chunk_max_tokens(B, m->v);
    plan_pick pick = {0, 0, 0};
    double best = INFINITY;
    int rc = PF_OK;
    /* every candidate is simulated: listed ones (a list too long stops
     * the search), or grid order whose finest cut stays within
     * PLAN_MAX_SIM_BLOCKS; once no simulated candidate can win, only an
     * estimated one is weighed (simulated_lost) */
    const int all_simulated =
        m->listed || (double)s->num_seqs * heads * PF_GPU_MAX_SPLITS <= PLAN_MAX_SIM_BLOCKS;
    int simulated_lost = 0;
    for (int sp = 1; sp <= PF_GPU_MAX_SPLITS; sp++) {
        /* in 64 bits: no overflow near the bound's cap (plan_bound) */
        const long long c_ll = (((long long)bound + sp - 1) / sp + B - 1) / B * B;
        if (c_ll > max_chunk)
            continue; /* too long for one block: needs more splits */
        const int c = (int)c_ll;
        if (c < PF_GPU_MIN_CHUNK && sp > 1)
            break;
        const int splits = (bound + c - 1) / c;
        if (splits != sp)
            continue; /* the same chunk as an earlier candidate */
        if (pf_gpu_version_cluster(m->v) && splits > PF_GPU_CLUSTER_MAX)
            break; /* one cluster holds a sequence's chunks */
        const size_t merge_bytes =
            splits > 1 ? (size_t)s->num_seqs * s->num_q_heads * splits * (s->head_dim + 1) * 4 : 0;
        const long long units = m->listed ? plan_units_count(m->lens, s->num_seqs, bound, c, 0) : 0;
        const long long blocks = m->listed ? units * heads : (long long)s->num_seqs * heads * splits;
        if (c > PLAN_FILL_FREE_CHUNK && blocks < PLAN_LONG_CHUNK_FILL * m->shares)
            continue; /* too few blocks for so long a chunk: a finer cut */
        if (m->listed && (units > PLAN_MAX_UNITS || units * heads > PLAN_MAX_SIM_BLOCKS))
            break; /* finer chunks only make more */
        /* A candidate whose floor cannot win is not simulated, and once
         * the floor's rising part cannot win, no later simulated candidate
         * can: the same pick, in a small part of the time (most candidates
         * of a long sequence pay more start-ups than the best one's whole
         * cost). The search stops there unless a later candidate is past
         * PLAN_MAX_SIM_BLOCKS in grid order: that one is estimated, not
         * simulated, the floor does not bound the estimate, and it is
         * still weighed. The floor is shaved by 1e-9, more than the
         * rounding of a sum over at most 2^20 blocks (about 2^20 x 2^-53),
         * so that rounding never prunes a candidate the simulation would
         * pick. */
        if (!m->exhaustive && pick.chunk && blocks <= PLAN_MAX_SIM_BLOCKS) {
            if (simulated_lost)
                continue;
            double rising;
            const double floor =
                plan_cost_floor(m->lens, s->num_seqs, bound, heads, c, splits, m->listed,
                                m->tok_bytes, m->slots, m->shares, merge_bytes, m->merge_ns, &rising);
            if (rising * (1 - 1e-9) >= best * 0.99) {
                if (all_simulated)
                    break;
                simulated_lost = 1;
                continue;
            }
            if (floor * (1 - 1e-9) >= best * 0.99)
                continue;
        }
        double cost;
        if ((rc = plan_candidate_cost(m, c, splits, units, merge_bytes, &sc, &cost)) != PF_OK)
            break;
        if (cost < best * 0.99) {
            best = cost;
            pick = (plan_pick){c, splits, units};
            /* a pick that splits is never replaced by the unsplit one,
             * the first candidate */
            if (m->unsplit_only && !m->exhaustive && splits > 1)
                break;
        }
    }
    free(sc.heap);
    free(sc.list);
    *best_pick = pick;
    if (rc != PF_OK)
        return rc;
    return pick.chunk ? PF_OK : PF_ERR_ARG;
}

/* ---- packing (version 33) ------------------------------------------------
 * A plan that splits no sequence has a unit a sequence, a block a unit and
 * head tile. When a batch of short sequences makes many more blocks than
 * slots (batch: 2048 blocks of 1024 tokens for 528 slots), every block's
 * start (three memory latencies in a row: its unit, its table slice and
 * length, its first tiles) and its drained end recur for each sequence.
 * Version 33 streams `pack` consecutive units of the list in one block,
 * a multiple of PF_GPU_PACK_STEP (its warps, each streaming its own
 * sequences; whole sequences, so no merge; the list is longest first, so
 * the packs are too, and a pack's sequences are of about one length). The
 * pack is the one the cost model finishes soonest (a packed block pays one
 * start-up and PLAN_PACK_SEQ_NS at each further sequence; no tolerance
 * for a tie, as plan_search has, since a pack adds no traffic), among
 * those that keep at least PLAN_PACK_FILL of the slots busy: a resident block's pipeline is what
 * keeps its slot's bytes in flight, and the model, in which one block an
 * SM saturates the memory, would otherwise pack a full machine into a
 * block an SM. A pack's table slices (chunk / B entries a sequence) share
 * the block's table cache, so pack x chunk <= pf_gpu_chunk_max_tokens. fp32 has
 * no 16-bit mma (version 33 runs version 5's kernel there): not packed.
 * Sets *pack (0: none). PF_OK or PF_ERR_NOMEM. */
static int plan_pack(const plan_model *m, const plan_pick *pick, int *pack)
{
    *pack = 0;
    int pmax = pf_gpu_chunk_max_tokens(m->B, m->v) / pick->chunk;
    pmax = pmax < PF_GPU_PACK_MAX ? pmax : PF_GPU_PACK_MAX;
    if (!m->listed || !pf_gpu_version_packs(m->v) || m->s->dtype == PF_GPU_F32 ||
        pick->splits != 1 || pick->units < 2 || pmax < PF_GPU_PACK_STEP)
        return PF_OK;
    const long long units = pick->units;
    pf_gpu_unit *list = malloc(sizeof *list * (size_t)units);
    pf_gpu_unit *packed = malloc(sizeof *packed * (size_t)units);
    plan_group *heap = malloc(sizeof *heap * (size_t)m->slots);
    int rc = PF_ERR_NOMEM;
    if (!list || !packed || !heap)
        goto out;
    pf_gpu__plan_units(m->lens, m->s->num_seqs, m->bound, pick->chunk, 0, list);
    double best = INFINITY;
    for (int p = 1; p <= pmax; p = p == 1 ? PF_GPU_PACK_STEP : p + PF_GPU_PACK_STEP) {
        const long long packs = (units + p - 1) / p;
        if (p > 1 && (double)packs * m->heads < PLAN_PACK_FILL * m->slots)
            break; /* larger packs leave more slots empty */
        for (long long i = 0; i < packs; i++) {
            pf_gpu_unit u = {.nch = 1}; /* tok: the pack's; span: its sequences */
            for (long long j = i * p; j < units && j < (i + 1) * p; j++) {
                u.tok += list[j].tok;
                u.span++;
            }
            packed[i] = u;
        }
        const double cost = plan_cost(NULL, m->s->num_seqs, m->bound, m->heads, pick->chunk, 1,
                                      packed, packs, m->tok_bytes, m->slots, m->shares, heap, 0,
                                      m->merge_ns, !m->exhaustive);
        if (cost < best) {
            best = cost;
            *pack = p > 1 ? p : 0;
        }
    }
    rc = PF_OK;
out:
    free(list);
    free(packed);
    free(heap);
    return rc;
}

/* The model's costs of version v's blocks: how many a chunk of a
 * sequence takes, the bytes each reads a token, the SM shares the
 * bandwidth divides into, the merge's cost, and whether it plans from a
 * work list. */
static void plan_model_costs(plan_model *m, int v, int sm_count)
{
    m->v = v;
    /* blocks per chunk of a sequence, and the bytes a block reads a token
     * (version 14: a block serves several head tiles, each its own KV) */
    const int tiles = pf_gpu__head_tiles(m->s), per = pf_gpu_version_heads(v, m->s->dtype);
    m->heads = (tiles + per - 1) / per;
    m->tok_bytes =
        2.0 * m->s->head_dim * (double)pf_gpu_dtype_size(m->s->dtype) * (per < tiles ? per : tiles);
    /* The model's SM shares. A block of a version serving `per` tiles has
     * the bytes in flight of a one-tile block (2 stages of 4 warps), so it
     * is modelled as one of `per` shares of an SM: the machine saturates at
     * per x sm_count such blocks, each streaming at most 1/per of an SM's
     * share. That cap is pessimistic (the seventh session's probe had a
     * block draw at least twice it), but it plans as many blocks as slots;
     * with one share an SM, the tenth session's first call planned llama at
     * 2 chunks (256 blocks; 0.932 of the read bandwidth) and long at 9 (144
     * blocks; 0.665). per = 1 leaves every other version's plan as it was. */
    m->shares = sm_count * per;
    m->merge_ns = pf_gpu_version_fused(v) ? PLAN_FUSED_MERGE_NS : PLAN_MERGE_NS;
    /* a work list: the lengths known, a version that merges in place, a
     * list short enough to simulate (its first candidate has a unit per
     * sequence) */
    m->listed = m->lens && pf_gpu_version_listed(v) &&
                (long long)m->s->num_seqs * m->heads <= PLAN_MAX_SIM_BLOCKS;
}

/* The plan's fields from the search's pick: the shape (its scale and a
 * naive plan's block size filled in), the version, the cut, the machine,
 * the group tile, a listed plan's units and packs, version 0's depth, and
 * the workspace. */
static int plan_fill(pf_gpu_attn_plan *plan, const plan_model *m, const plan_pick *pick, int paged,
                     int version, int sm_count, int blocks_per_sm)
{
    int rc;
    plan->shape = *m->s;
    if (!(plan->shape.scale > 0.f))
        plan->shape.scale = 1.f / sqrtf((float)m->s->head_dim);
    if (!paged && plan->shape.block_size < 1)
        plan->shape.block_size = 16;
    plan->paged = paged ? 1 : 0;
    plan->version = m->v;
    plan->max_len = m->bound;
    plan->chunk = pick->chunk;
    plan->splits = pick->splits;
    plan->sm_count = sm_count;
    plan->blocks_per_sm = blocks_per_sm;
    plan->group_tile = pf_gpu_group_tile(m->s->num_q_heads / m->s->num_kv_heads);
    if (!version && pf_gpu_version_cluster(m->v)) /* a small launch: see PF_GPU_SMALL_TILE */
        plan->group_tile = PF_GPU_SMALL_TILE;
    if (m->listed) {
        plan->units = (int)pick->units;
        plan->lens_hash = lens_hash(m->lens, m->s->num_seqs);
        if ((rc = plan_pack(m, pick, &plan->pack)) != PF_OK)
            return rc;
    }
    if (!version)
        pf_gpu__plan_pick_depth(plan); /* 29's plan: 29 or 36 by its blocks */
    plan_workspace(plan);
    return PF_OK;
}

int pf_gpu_attn_plan_compute(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                             const int *lens_host, int max_len, int version, int sm_count,
                             int blocks_per_sm)
{
    return pf_gpu__plan_compute_occ(plan, s, paged, lens_host, max_len, version, sm_count,
                                    blocks_per_sm, blocks_per_sm);
}

/* The plan of pf_gpu__plan_compute_occ. unsplit_only: the caller keeps the
 * plan only if it splits no sequence (version 0's try of version 34), so
 * the search may stop at the first candidate that shows the pick will
 * split (plan_model, unsplit_only); such a plan is not the cheapest.
 * exhaustive: every candidate simulated, as before the thirty-ninth
 * session (the tests' and bench_gpu_plan's reference). */
static int plan_compute(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                        const int *lens_host, int max_len, int version, int sm_count,
                        int blocks_per_sm, int mh_blocks_per_sm, int unsplit_only, int exhaustive)
{
    int rc = pf_gpu__plan_begin(plan, s, paged, version);
    if (rc != PF_OK)
        return rc;
    if (sm_count < 1 || blocks_per_sm < 1 || mh_blocks_per_sm < 1)
        return PF_ERR_ARG;
    plan_model m = {.s = s, .lens = lens_host, .unsplit_only = unsplit_only, .exhaustive = exhaustive};
    if ((rc = plan_bound(s, paged, lens_host, max_len, &m.bound)) != PF_OK)
        return rc;
    m.B = paged ? s->block_size : 16; /* naive chunks: any multiple of 16 */
    long long slots_ll = (long long)sm_count * blocks_per_sm;
    m.slots = slots_ll > 65536 ? 65536 : (int)slots_ll;
    const int v = resolve_version(s, m.bound, version);
    if (!version && v == PF_GPU_GQA_VERSION &&
        pf_gpu__head_tiles(s) % pf_gpu_version_heads(PF_GPU_MH_GQA_VERSION, s->dtype) == 0) {
        /* version 0's head tile a warp, where it needs no split
         * (gpu_internal.h, PF_GPU_MH_GQA_VERSION); a plan 34 cannot make
         * leaves the choice to 29's, which reports its own errors. Its
         * slots are its own kernel's: whether it fills the machine unsplit
         * depends on how many of its blocks an SM holds */
        pf_gpu_attn_plan mh;
        if (plan_compute(&mh, s, paged, lens_host, max_len, PF_GPU_MH_GQA_VERSION, sm_count,
                         mh_blocks_per_sm, mh_blocks_per_sm, 1, exhaustive) == PF_OK &&
            mh.splits == 1) {
            *plan = mh;
            return PF_OK;
        }
    }
    plan_model_costs(&m, v, sm_count);
    if (pf_gpu_version_steal(v) && !m.listed)
        return PF_ERR_ARG; /* version 11 runs from a work list only */
    plan_pick pick;
    rc = plan_search(&m, &pick);
    if (rc != PF_OK && m.listed && !pf_gpu_version_steal(v)) {
        /* A sequence past one chunk among very many (one of 8192 tokens in
         * 32768 of 1, 32 heads): every candidate's list had too many units
         * to simulate, and the plan failed where a bound plans fine. Such a
         * list is planned as a longer one is: in grid order. */
        m.listed = 0;
        rc = plan_search(&m, &pick);
    }
    if (rc != PF_OK)
        return rc;
    if ((rc = plan_fill(plan, &m, &pick, paged, version, sm_count, blocks_per_sm)) != PF_OK)
        return rc;
    plan->magic = PF_GPU_PLAN_MAGIC;
    return PF_OK;
}

int pf_gpu__plan_compute_occ(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                             const int *lens_host, int max_len, int version, int sm_count,
                             int blocks_per_sm, int mh_blocks_per_sm)
{
    return plan_compute(plan, s, paged, lens_host, max_len, version, sm_count, blocks_per_sm,
                        mh_blocks_per_sm, 0, 0);
}

int pf_gpu__plan_compute_exhaustive(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                                    const int *lens_host, int max_len, int version, int sm_count,
                                    int blocks_per_sm, int mh_blocks_per_sm)
{
    return plan_compute(plan, s, paged, lens_host, max_len, version, sm_count, blocks_per_sm,
                        mh_blocks_per_sm, 0, 1);
}

void pf_gpu__plan_pick_depth(pf_gpu_attn_plan *plan)
{
    if (plan->version != PF_GPU_GQA_VERSION && plan->version != PF_GPU_DEEP_GQA_VERSION)
        return;
    const long long thin = (long long)PF_GPU_DEEP_BLOCKS_PER_SM * plan->sm_count;
    plan->version = pf_gpu__plan_blocks(plan) <= thin ? PF_GPU_DEEP_GQA_VERSION : PF_GPU_GQA_VERSION;
}

int pf_gpu__plan_set_splits(pf_gpu_attn_plan *plan, int splits, const int *lens_host)
{
    if (!plan || plan->magic != PF_GPU_PLAN_MAGIC || splits < 1 || splits > PF_GPU_MAX_SPLITS ||
        (plan->units && !lens_host))
        return PF_ERR_ARG;
    const int B = plan->paged ? plan->shape.block_size : 16;
    int c = (plan->max_len + splits - 1) / splits;
    c = (c + B - 1) / B * B;
    if (c > pf_gpu_chunk_max_tokens(B, plan->version) ||
        (pf_gpu_version_cluster(plan->version) && (plan->max_len + c - 1) / c > PF_GPU_CLUSTER_MAX))
        return PF_ERR_ARG;
    if (plan->units) {
        if (lens_hash(lens_host, plan->shape.num_seqs) != plan->lens_hash)
            return PF_ERR_ARG;
        const long long units =
            plan_units_count(lens_host, plan->shape.num_seqs, plan->max_len, c, 0);
        if (units > PLAN_MAX_UNITS || units * pf_gpu__plan_head_tiles(plan) > INT_MAX)
            return PF_ERR_ARG;
        plan->units = (int)units;
    }
    plan->chunk = c;
    plan->splits = (plan->max_len + c - 1) / c;
    plan->tail = 0;
    plan->pack = 0; /* a forced split is not packed */
    plan_workspace(plan);
    return PF_OK;
}

void pf_gpu_attn_plan_layout(size_t *bytes, size_t *magic_at)
{
    if (bytes)
        *bytes = sizeof(pf_gpu_attn_plan);
    if (magic_at)
        *magic_at = offsetof(pf_gpu_attn_plan, magic);
}

int pf_gpu_version_takes_tail(int version)
{
    return version >= 1 && version <= PF_GPU_KERNEL_VERSIONS && pf_gpu_version_tail(version);
}

int pf_gpu_version_takes_pack(int version)
{
    return pf_gpu_version_packs(version);
}

int pf_gpu_version_max_splits(int version)
{
    return pf_gpu_version_cluster(version) ? PF_GPU_CLUSTER_MAX : PF_GPU_MAX_SPLITS;
}

int pf_gpu_chunk_max_tokens(int block_size, int version)
{
    if (block_size < 1)
        return 0;
    const int tokens = pf_gpu_version_cluster(version) ? PF_GPU_CLUSTER_CHUNK_MAX_TOKENS
                                                       : PF_GPU_CHUNK_MAX_TOKENS;
    const long long pages = PF_GPU_CHUNK_MAX_PAGES * (long long)block_size;
    const int most = pages < tokens ? (int)pages : tokens;
    return most / block_size * block_size;
}

void pf_gpu_tail_versions(char *buf, size_t n)
{
    if (!buf || !n)
        return;
    buf[0] = '\0';
    size_t at = 0;
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        if (!pf_gpu_version_tail(v))
            continue;
        int end = v; /* the run of versions that can, from v */
        while (end < PF_GPU_KERNEL_VERSIONS && pf_gpu_version_tail(end + 1))
            end++;
        const char *sep = at ? ", " : "";
        const int k = end - v >= 2 ? snprintf(buf + at, n - at, "%s%d-%d", sep, v, end)
                      : end > v    ? snprintf(buf + at, n - at, "%s%d, %d", sep, v, end)
                                   : snprintf(buf + at, n - at, "%s%d", sep, v);
        if (k < 0 || (size_t)k >= n - at) {
            buf[at] = '\0'; /* no room: the list so far, no half entry */
            return;
        }
        at += (size_t)k;
        v = end;
    }
}

int pf_gpu__plan_set_tail(pf_gpu_attn_plan *plan, int tail, const int *lens_host)
{
    if (!plan || plan->magic != PF_GPU_PLAN_MAGIC || tail < 1 || tail > 8 || plan->tail ||
        !plan->units || !lens_host || !pf_gpu_version_tail(plan->version) ||
        lens_hash(lens_host, plan->shape.num_seqs) != plan->lens_hash)
        return PF_ERR_ARG;
    const int B = plan->paged ? plan->shape.block_size : 16;
    const int run = 8 * tail, c = plan->chunk / run;
    if (plan->chunk % run || c % B || c < 16)
        return PF_ERR_ARG;
    const int splits = (plan->max_len + c - 1) / c;
    const long long units =
        plan_units_count(lens_host, plan->shape.num_seqs, plan->max_len, c, tail);
    if (splits > PF_GPU_MAX_SPLITS || units > PLAN_MAX_UNITS ||
        units * pf_gpu__plan_head_tiles(plan) > INT_MAX)
        return PF_ERR_ARG;
    plan->chunk = c;
    plan->splits = splits;
    plan->units = (int)units;
    plan->tail = tail;
    plan->pack = 0; /* a tail splits: its units are not whole sequences */
    plan_workspace(plan);
    return PF_OK;
}

int pf_gpu__plan_set_pack(pf_gpu_attn_plan *plan, int pack)
{
    if (!plan || plan->magic != PF_GPU_PLAN_MAGIC || !pf_gpu_version_packs(plan->version) ||
        plan->shape.dtype == PF_GPU_F32 || !plan->units || plan->splits != 1 || plan->tail ||
        pack < 1 || pack > PF_GPU_PACK_MAX || (pack > 1 && pack % PF_GPU_PACK_STEP) ||
        (long long)pack * plan->chunk >
            pf_gpu_chunk_max_tokens(plan->paged ? plan->shape.block_size : 16, plan->version))
        return PF_ERR_ARG;
    plan->pack = pack > 1 ? pack : 0;
    return PF_OK;
}

int pf_gpu__plan_set_group_tile(pf_gpu_attn_plan *plan, int tile)
{
    if (!plan || plan->magic != PF_GPU_PLAN_MAGIC)
        return PF_ERR_ARG;
    const int group = plan->shape.num_q_heads / plan->shape.num_kv_heads;
    if ((tile != 1 && tile != 2 && tile != 4 && tile != 8) || group % tile)
        return PF_ERR_ARG;
    /* a smaller tile is more head tiles: the launch's items must still
     * fit an int, as set_splits and set_tail check */
    const int old = plan->group_tile;
    plan->group_tile = tile;
    if ((plan->units ? (long long)plan->units
                     : (long long)plan->shape.num_seqs * plan->splits) *
            pf_gpu__plan_head_tiles(plan) > INT_MAX) {
        plan->group_tile = old;
        return PF_ERR_ARG;
    }
    plan_workspace(plan);
    return PF_OK;
}

/* ---- the cost-model profile -------------------------------------------- */
/* The one writer of the format sim/cost.c's pf_cost_load_profile reads
 * (test_gpu_host loads what this writes and gets the figures back exactly):
 * figures in %.17g; a '#' or line break in the device name, which the reader
 * would take for a comment or a new line, becomes a space. */
int pf_gpu_profile_write(FILE *f, const pf_gpu_profile *p)
{
    if (!f || !p || !p->device[0])
        return PF_ERR_ARG;
    const double v[3] = {p->mem_read_gbps, p->attn_kv_gbps, p->attn_fixed_us};
    for (int i = 0; i < 3; i++)
        if (!isfinite(v[i]) || !(v[i] > 0))
            return PF_ERR_ARG;
    char dev[sizeof p->device];
    snprintf(dev, sizeof dev, "%s", p->device);
    for (char *c = dev; *c; c++)
        if (*c == '#' || *c == '\n' || *c == '\r')
            *c = ' ';
    int n = fprintf(f,
                    "# PageFault GPU profile: figures measured by `pagefault bench --profile-out`,\n"
                    "# read by the simulator's cost model (unknown keys are ignored).\n"
                    "format = pagefault-gpu-profile/1\n"
                    "device = %s\n"
                    "mem_read_gbps = %.17g    # streaming read bandwidth, same process, GB/s (1e9)\n"
                    "attn_kv_gbps = %.17g     # paged decode attention, effective KV GB/s, llama\n"
                    "attn_fixed_us = %.17g    # smallest launch (single 1x1024), microseconds\n",
                    dev, v[0], v[1], v[2]);
    if (n < 0 || fflush(f) != 0 || ferror(f))
        return PF_ERR_IO;
    return PF_OK;
}

/* ---- the block timeline ------------------------------------------------- */
static int timeline_check(const unsigned long long *rec, int blocks, unsigned long long *t0)
{
    if (!rec || blocks < 1)
        return PF_ERR_ARG;
    *t0 = ULLONG_MAX;
    for (int b = 0; b < blocks; b++) {
        const unsigned long long *r = rec + (size_t)b * PF_GPU_TRACE_WORDS;
        const int tiles = r[1] != 0; /* the block had tokens: both tile marks */
        if (!r[0] || r[3] < r[0] || (r[2] != 0) != tiles || r[4] >= 4096 ||
            (tiles && (r[1] < r[0] || r[2] < r[1] || r[3] < r[2])))
            return PF_ERR_ARG;
        if (r[0] < *t0)
            *t0 = r[0];
    }
    return PF_OK;
}

static int u64_cmp(const void *a, const void *b)
{
    const unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* the median of n values (sorted in place), 0 when n is 0 */
static double u64_median(unsigned long long *x, int n)
{
    if (n < 1)
        return 0;
    qsort(x, (size_t)n, sizeof *x, u64_cmp);
    return n % 2 ? (double)x[n / 2] : 0.5 * ((double)x[n / 2 - 1] + (double)x[n / 2]);
}

/* The SMs' busy time: the records sorted by (SM, start), then per SM the
 * union of the blocks' [start, end) intervals, swept left to right (a
 * block that starts before the SM's current stretch ends extends it). */
typedef struct {
    unsigned sm;
    unsigned long long start, end;
} timeline_iv;

static int iv_cmp(const void *a, const void *b)
{
    const timeline_iv *x = a, *y = b;
    if (x->sm != y->sm)
        return x->sm < y->sm ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

int pf_gpu_timeline_summarize(const unsigned long long *rec, int blocks, pf_gpu_timeline *t)
{
    unsigned long long t0;
    if (!t || timeline_check(rec, blocks, &t0) != PF_OK)
        return PF_ERR_ARG;
    /* one array of 5 x blocks medians' inputs: ready, stream, finish, run, end */
    unsigned long long *x = malloc(sizeof *x * 5 * (size_t)blocks);
    timeline_iv *iv = malloc(sizeof *iv * (size_t)blocks);
    int rc = x && iv ? PF_OK : PF_ERR_NOMEM;
    if (rc == PF_OK) {
        memset(t, 0, sizeof *t);
        t->blocks = blocks;
        unsigned long long *ready = x, *stream = x + blocks, *finish = x + 2 * (size_t)blocks;
        unsigned long long *run = x + 3 * (size_t)blocks, *end = x + 4 * (size_t)blocks;
        unsigned long long last_start = 0, last_end = 0, first_end = ULLONG_MAX;
        int nt = 0; /* blocks with tokens */
        for (int b = 0; b < blocks; b++) {
            const unsigned long long *r = rec + (size_t)b * PF_GPU_TRACE_WORDS;
            if (r[1]) {
                ready[nt] = r[1] - r[0];
                stream[nt] = r[2] - r[1];
                finish[nt++] = r[3] - r[2];
            }
            run[b] = r[3] - r[0];
            end[b] = r[3] - t0;
            last_start = r[0] - t0 > last_start ? r[0] - t0 : last_start;
            last_end = r[3] - t0 > last_end ? r[3] - t0 : last_end;
            first_end = r[3] - t0 < first_end ? r[3] - t0 : first_end;
            iv[b] = (timeline_iv){(unsigned)r[4], r[0], r[3]};
        }
        t->span_us = last_end / 1e3;
        t->last_start_us = last_start / 1e3;
        t->first_end_us = first_end / 1e3;
        t->ready_us = u64_median(ready, nt) / 1e3;
        t->stream_us = u64_median(stream, nt) / 1e3;
        t->finish_us = u64_median(finish, nt) / 1e3;
        t->run_us = u64_median(run, blocks) / 1e3;
        t->median_end_us = u64_median(end, blocks) / 1e3;
        qsort(iv, (size_t)blocks, sizeof *iv, iv_cmp);
        double busy = 0;
        for (int b = 0; b < blocks;) {
            const unsigned sm = iv[b].sm;
            t->sms++;
            unsigned long long s0 = iv[b].start, s1 = iv[b].end;
            for (; b < blocks && iv[b].sm == sm; b++) {
                if (iv[b].start > s1) { /* a gap: close the stretch */
                    busy += (double)(s1 - s0);
                    s0 = iv[b].start;
                }
                if (iv[b].end > s1)
                    s1 = iv[b].end;
            }
            busy += (double)(s1 - s0);
        }
        t->sm_busy = last_end ? busy / ((double)t->sms * (double)last_end) : 1.0;
    }
    free(x);
    free(iv);
    return rc;
}

int pf_gpu_timeline_write(FILE *f, const unsigned long long *rec, int blocks)
{
    unsigned long long t0;
    if (!f || timeline_check(rec, blocks, &t0) != PF_OK)
        return PF_ERR_ARG;
    int bad = fprintf(f, "block,sm,start_us,ready_us,streamed_us,end_us\n") < 0;
    for (int b = 0; b < blocks && !bad; b++) {
        const unsigned long long *r = rec + (size_t)b * PF_GPU_TRACE_WORDS;
        char tiles[64] = ","; /* a block without tokens: both empty */
        if (r[1])
            snprintf(tiles, sizeof tiles, "%.3f,%.3f", (r[1] - t0) / 1e3, (r[2] - t0) / 1e3);
        bad = fprintf(f, "%d,%llu,%.3f,%s,%.3f\n", b, r[4], (r[0] - t0) / 1e3, tiles,
                      (r[3] - t0) / 1e3) < 0;
    }
    if (bad || fflush(f) != 0 || ferror(f))
        return PF_ERR_IO;
    return PF_OK;
}

/* ---- which launches get a graph (gpu_internal.h) --------------------------
 *
 * The policy is pure bookkeeping over slot numbers, ticks and key hashes, so
 * that it is tested here without a device (test_gpu_host); kernels.cu holds
 * the graphs and the exact keys. */
void pf_gpu__graph_lru_hit(pf_gpu_graph_lru *c, int slot)
{
    c->last[slot] = ++c->tick;
    c->served[slot]++;
}

/* The remembered entry of hash, or -1. */
static int lru_seen(const pf_gpu_graph_lru *c, unsigned long long hash)
{
    for (int i = 0; i < PF_GPU_GRAPH_SEEN; i++)
        if (c->seen[i] == hash)
            return i;
    return -1;
}

/* hash remembered (a new entry replaces the ring's oldest), unpaid or not. */
static void lru_remember(pf_gpu_graph_lru *c, unsigned long long hash, int unpaid)
{
    int i = lru_seen(c, hash);
    if (i < 0) {
        i = (int)(c->seen_next++ % PF_GPU_GRAPH_SEEN);
        c->seen[i] = hash;
    }
    c->unpaid[i] = (unsigned char)unpaid;
}

int pf_gpu__graph_lru_miss(pf_gpu_graph_lru *c, unsigned long long hash)
{
    const unsigned long long now = ++c->tick;
    if (c->run_key != hash) {
        c->run_key = hash;
        c->run_len = 0;
    }
    c->run_len++;
    const int known = lru_seen(c, hash);
    if (known < 0) { /* first miss: remember the key, launch directly */
        lru_remember(c, hash, 0);
        return -1;
    }
    if (c->unpaid[known] && c->run_len < PF_GPU_GRAPH_PAYBACK)
        return -1; /* its last graph did not pay for itself: no new one */
    int victim = 0; /* an empty slot (last 0) is the least recently used */
    for (int i = 1; i < PF_GPU_GRAPH_SLOTS; i++)
        if (c->last[i] < c->last[victim])
            victim = i;
    if (c->last[victim] && now - c->last[victim] <= PF_GPU_GRAPH_IDLE)
        return -1; /* every slot in use lately: keep them, launch directly */
    c->unpaid[known] = 0; /* (an unpaid key's steps grew: paid again) */
    if (c->last[victim] && c->served[victim] < PF_GPU_GRAPH_PAYBACK)
        lru_remember(c, c->key[victim], 1);
    c->last[victim] = now;
    c->key[victim] = hash;
    c->served[victim] = c->run_len;
    return victim;
}
