/* gpu/host.c - host-side pieces of the GPU stage that need no CUDA: dtype
 * names and sizes, float <-> fp16/bf16 rounding, shape validation and the
 * threaded CPU-reference check. Built in every configuration (the stub too).
 */
#include <math.h>
#include <pthread.h>
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
 * (rounded) inputs. An element passes when |out - ref| <= tol + eps * |ref|,
 * eps being the output type's rounding (0 for fp32); NaN or inf never passes. */
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
    double *ref = malloc(sizeof(double) * (size_t)c->hq * D);
    if (!ref) {
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
            pf_attn_shape sh = {ng, 1, D, c->scale};
            int rc = pf_attn_ref_contig_f64(&sh, qs + ((size_t)h * G + g0) * D,
                                            ks + (size_t)h * len * D, vs + (size_t)h * len * D,
                                            len, len, ref);
            if (rc != PF_OK) {
                j->err = rc;
                free(ref);
                return NULL;
            }
            for (int g = 0; g < ng; g++) {
                const int qh = h * G + g0 + g;
                for (int d = 0; d < D; d++) {
                    double r = ref[(size_t)g * D + d];
                    double x = pf_gpu_host_load(c->dtype, c->out, ((size_t)s * c->hq + qh) * D + d);
                    double err = fabs(x - r);
                    double allowed = c->tol + eps * fabs(r);
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
    free(ref);
    return NULL;
}

int pf_gpu_ref_check(const pf_gpu_refcheck *c, pf_gpu_refcheck_out *o)
{
    if (!c || !o || c->num_seqs < 1 || c->hkv < 1 || c->hq % c->hkv || !c->q || !c->k || !c->v ||
        !c->out || !c->lens || !c->off)
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
