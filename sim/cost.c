/* sim/cost.c - the roofline cost model (formulas and contract in cost.h). */
#include "sim/cost.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

/* GPU presets. Peak figures are the vendor's datasheet numbers for the SXM
 * parts (dense bf16, i.e. without the 2:4 structured-sparsity doubling):
 *   H200 SXM: 4.8 TB/s HBM3e, 989 TFLOP/s bf16 dense (1,979 with sparsity)
 *             - NVIDIA H200 Tensor Core GPU datasheet.
 *   H100 SXM: 3.35 TB/s HBM3, 989 TFLOP/s bf16 dense (1,979 with sparsity)
 *             - NVIDIA H100 Tensor Core GPU datasheet.
 *   A100 80GB SXM: 2,039 GB/s HBM2e, 312 TFLOP/s bf16 dense (624 sparse)
 *             - NVIDIA A100 Tensor Core GPU datasheet.
 * Host link (what a swap to host memory crosses), one direction: H100 and
 * H200 sit on PCIe Gen5 x16 (32 GT/s x 16 lanes, 128b/130b: 63 GB/s raw),
 * A100 on PCIe Gen4 x16 (31.5 GB/s raw). Pinned 256 MiB cudaMemcpy measured
 * 55.4 / 55.3 GB/s (host to device / back) on an H200 host and 55.1 / 55.2 on
 * an H100 host (2026-12-02, CUDA events, best of 5): 0.88 of raw, so 55.
 * The A100's is 0.88 x 31.5 = 27.7, scaled, not measured.
 * Memory (what weights and KV share): the H100's 81,079 MiB is what
 * cudaMemGetInfo reported as total on an H100 80GB HBM3 (2026-12-02); the
 * H200's 141 GB and the A100's 80 GB are the datasheets' (GiB, as NVIDIA
 * counts; the H200 shows about 139 GiB usable). */
static const pf_gpu gpu_h200 = {"h200", "NVIDIA H200 SXM", 4800.0, 989.0, 55.0, 141.0};
static const pf_gpu gpu_h100 = {"h100", "NVIDIA H100 SXM", 3350.0, 989.0, 55.0, 81079.0 / 1024};
static const pf_gpu gpu_a100 = {"a100", "NVIDIA A100 80GB SXM", 2039.0, 312.0, 27.7, 80.0};
static const pf_gpu *const gpus[] = {&gpu_h200, &gpu_h100, &gpu_a100, NULL};

/* Why these defaults (cost.h):
 * - PF_COST_MEM_EFFICIENCY 0.90: streaming reads on the H200 (4.8 TB/s
 *   peak) measured 4.27 TB/s for PyTorch's fp16 sum over 4 GiB and 4.38-4.49
 *   TB/s for cuDNN's decode attention (shared/anchors.md), and a plain
 *   16-byte-load read kernel over 4 GiB reached 4.48 TB/s on the H200 and
 *   3.11 TB/s on an H100 (3.35 peak) (2026-12-02, best of 10): 0.89-0.94 of
 *   the datasheet. A step's weights are streamed by GEMMs that do no better
 *   than these, so 0.90. A measured profile replaces it.
 * - PF_COST_FLOP_EFFICIENCY 0.70: a prefill's work is large bf16 GEMMs.
 *   cuBLAS (2026-12-02, random bf16 data, CUDA events, mean of 20) ran
 *   8192^3 at 788 TFLOP/s on the H200 and 800 on an H100 (0.80 of 989), but
 *   the shapes of a Llama 3 8B layer over 8192 tokens (4096x14336,
 *   14336x4096, 6144x4096) at 691-724 on the H200 and 710-750 on the H100
 *   (0.70-0.76); attention's quadratic FLOPs run in FlashAttention kernels of
 *   similar efficiency (FlashAttention-3 reports up to 75% of H100 peak in
 *   bf16). The lower end, since a step also runs norms and small kernels.
 * - PF_COST_OVERHEAD_S 1 ms: what a step costs besides its kernels: the
 *   scheduler, input preparation, sampling, launch gaps. An estimate, not a
 *   measurement (it is host-side: a device profile cannot see it). vLLM's
 *   v0.6.0 performance update (2024) profiled Llama 3 8B on one H100 and
 *   found the API server (33%) and scheduling (29%) taking most of the
 *   execution time; the fixes it describes and V1's engine overlap that CPU
 *   work with the GPU and replay decode steps as CUDA graphs, leaving the
 *   exposed part on the order of a millisecond. At 1 ms it is 8% of a
 *   memory-bound decode step of Llama 3 8B with 64 x 4k tokens on the H200
 *   (12.4 ms) and dominates only tiny models like the seed's. Settable. */

const pf_gpu *pf_gpu_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; gpus[i]; i++)
        if (!strcmp(gpus[i]->name, name))
            return gpus[i];
    return NULL;
}

const pf_gpu *const *pf_gpu_list(void)
{
    return gpus;
}

static void derive_rates(pf_cost *c)
{
    c->flops = c->gpu.bf16_tflops * 1e12 * c->flop_efficiency;
    if (!c->profiled) {
        c->mem_bps = c->gpu.hbm_gbps * 1e9 * c->mem_efficiency;
        c->attn_bps = c->mem_bps;
        c->attn_fixed_s = 0.0;
    }
}

int pf_cost_init(pf_cost *c, const pf_model *m, const pf_gpu *g, double overhead_s)
{
    if (!c || !m || !g || !isfinite(overhead_s) || overhead_s < 0)
        return PF_ERR_ARG;
    if (m->num_layers < 1 || m->num_q_heads < 1 || m->num_kv_heads < 1 || m->head_dim < 1 ||
        m->dtype_bytes < 1 || m->num_params < 0)
        return PF_ERR_ARG;
    if (!(g->hbm_gbps > 0) || !(g->bf16_tflops > 0) || !(g->host_gbps > 0))
        return PF_ERR_ARG;
    memset(c, 0, sizeof *c);
    c->model = *m;
    c->gpu = *g;
    c->overhead_s = overhead_s;
    c->mem_efficiency = PF_COST_MEM_EFFICIENCY;
    c->flop_efficiency = PF_COST_FLOP_EFFICIENCY;

    /* A forward pass streams every weight once, except the input embedding
     * table when it is a separate matrix: only the rows of the batch's tokens
     * are gathered (for Llama 3 8B that table is 1.05 GB of 16 GB). */
    double unread = (double)pf_model_unread_embedding_params(m);
    double streamed = (double)m->num_params - unread;
    if (streamed < 0)
        streamed = 0;
    c->weight_bytes = streamed * m->dtype_bytes;
    c->kv_bytes_per_token = 2.0 * m->num_layers * m->num_kv_heads * m->head_dim * m->dtype_bytes;
    /* FLOPs: 2 per multiply-add. Every token goes through every projection
     * and MLP matrix; the LM head only runs where a token is sampled (vLLM
     * computes logits for the last position of each sequence). */
    c->lm_head_params = (double)pf_model_lm_head_params(m);
    c->matmul_params = streamed - c->lm_head_params;
    if (c->matmul_params < 0)
        c->matmul_params = 0;
    /* Attention per (query, key) pair and query head: q.k (D multiply-adds)
     * and p.v (D multiply-adds) = 4 D FLOPs, in every layer. */
    c->attn_flops_per_pair = 4.0 * m->num_layers * m->num_q_heads * m->head_dim;
    c->host_bps = g->host_gbps * 1e9;
    derive_rates(c);
    return PF_OK;
}

int pf_cost_set_efficiency(pf_cost *c, double mem_efficiency, double flop_efficiency)
{
    if (!c || !(mem_efficiency > 0 && mem_efficiency <= 1) ||
        !(flop_efficiency > 0 && flop_efficiency <= 1))
        return PF_ERR_ARG;
    c->mem_efficiency = mem_efficiency;
    c->flop_efficiency = flop_efficiency;
    derive_rates(c);
    return PF_OK;
}

void pf_cost_batch_clear(pf_cost_batch *b)
{
    memset(b, 0, sizeof *b);
}

void pf_cost_batch_add_decode(pf_cost_batch *b, int64_t context)
{
    b->seqs++;
    b->decode_tokens++;
    b->logit_tokens++;
    b->kv_read_tokens += context + 1;
    b->kv_write_tokens++;
    b->attn_pairs += (double)context + 1.0;
}

void pf_cost_batch_add_prefill(pf_cost_batch *b, int64_t context, int64_t tokens, int last_chunk)
{
    if (tokens <= 0)
        return;
    b->seqs++;
    b->prefill_tokens += tokens;
    if (last_chunk)
        b->logit_tokens++;
    b->kv_read_tokens += context + tokens;
    b->kv_write_tokens += tokens;
    /* Causal: new token j (0-based) sees the context and new tokens 0..j. */
    double t = (double)tokens;
    b->attn_pairs += t * (double)context + t * (t + 1.0) / 2.0;
}

void pf_cost_step_detail(const pf_cost *c, const pf_cost_batch *b, pf_cost_detail *out)
{
    memset(out, 0, sizeof *out);
    if (b->seqs <= 0)
        return; /* PF_COST_IDLE, all zero */
    double kv_read = (double)b->kv_read_tokens * c->kv_bytes_per_token;
    double kv_write = (double)b->kv_write_tokens * c->kv_bytes_per_token;
    out->bytes = c->weight_bytes + kv_read + kv_write;
    out->memory_s = c->weight_bytes / c->mem_bps + kv_write / c->mem_bps +
                    c->model.num_layers * c->attn_fixed_s + kv_read / c->attn_bps;
    double tokens = (double)(b->decode_tokens + b->prefill_tokens);
    out->flops = 2.0 * c->matmul_params * tokens +
                 2.0 * c->lm_head_params * (double)b->logit_tokens +
                 c->attn_flops_per_pair * b->attn_pairs;
    out->compute_s = out->flops / c->flops;
    out->overhead_s = c->overhead_s;
    out->bound = out->compute_s > out->memory_s ? PF_COST_COMPUTE : PF_COST_MEMORY;
    out->step_s = fmax(out->memory_s, out->compute_s) + out->overhead_s;
}

double pf_cost_step_s(const pf_cost *c, const pf_cost_batch *b)
{
    pf_cost_detail d;
    pf_cost_step_detail(c, b, &d);
    return d.step_s;
}

int64_t pf_cost_kv_capacity_tokens(const pf_cost *c, double memory_utilization)
{
    if (!c || !(memory_utilization > 0 && memory_utilization <= 1))
        return PF_ERR_ARG;
    /* Every weight lives on the device, the input embedding included. */
    double weights = (double)c->model.num_params * c->model.dtype_bytes;
    double budget = c->gpu.mem_gib * 1073741824.0 * memory_utilization - weights;
    if (budget < c->kv_bytes_per_token)
        return PF_ERR_RANGE;
    return (int64_t)floor(budget / c->kv_bytes_per_token);
}

double pf_cost_swap_s(const pf_cost *c, int64_t tokens)
{
    if (tokens <= 0)
        return 0.0;
    return (double)tokens * c->kv_bytes_per_token / c->host_bps;
}

/* The profile format, one `key = value` per line:
 *
 *   format = pagefault-gpu-profile/1     required, first setting of the file
 *   device = NVIDIA H200                 free text, kept for reports
 *   mem_read_gbps = 4600.0               required: streaming read, GB/s (1e9)
 *   attn_kv_gbps = 4400.0                required: paged decode attention,
 *                                        effective KV bytes/s, GB/s
 *   attn_fixed_us = 6.5                  optional: smallest launch, us
 *
 * '#' starts a comment, blank lines are skipped, unknown keys are ignored (a
 * newer writer may add figures), a known key given twice is an error. Lines
 * are at most 1023 bytes. Values must be finite; bandwidths > 0, the launch
 * floor >= 0 and under one second. */

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
} prof_ctx;

static int prof_fail(const prof_ctx *x, int line, int code, const char *fmt, ...)
{
    if (x->err && x->errlen) {
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        if (line > 0)
            snprintf(x->err, x->errlen, "%s:%d: %s", x->path, line, what);
        else
            snprintf(x->err, x->errlen, "%s: %s", x->path, what);
    }
    return code;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* A number that is the whole of text, finite, written out plainly as the
 * command line takes one (tui/cli.c): no leading blank or plus sign, no
 * hexadecimal, which strtod would take. */
static int parse_number(const char *text, double *out)
{
    if (!*text || isspace((unsigned char)text[0]) || text[0] == '+' || strpbrk(text, "xX"))
        return 0;
    errno = 0;
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

enum { KEY_MEM, KEY_ATTN, KEY_FIXED, KEY_DEVICE, KEY_N };

/* The longest line a profile may have (the format writes lines of a few
 * dozen bytes). */
#define PROF_LINE_MAX 1022

static const char *const prof_names[KEY_N] = {"mem_read_gbps", "attn_kv_gbps", "attn_fixed_us",
                                               "device"};

/* What the lines read so far have set. */
typedef struct {
    double val[KEY_N];
    int seen[KEY_N];
    char device[sizeof ((pf_cost *)0)->profile_device];
    int have_format;
} prof_read;

/* One line (its comment cut, trimmed, not empty) into *r. The format line
 * must come first; a known key may come once; a figure must be a number in
 * its range. */
static int prof_line(const prof_ctx *x, int lineno, char *line, prof_read *r)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return prof_fail(x, lineno, PF_ERR_ARG, "expected 'key = value'");
    *eq = '\0';
    char *key = trim(line), *value = trim(eq + 1);
    if (!*key)
        return prof_fail(x, lineno, PF_ERR_ARG, "missing key before '='");
    if (!r->have_format) {
        if (strcmp(key, "format") != 0)
            return prof_fail(x, lineno, PF_ERR_ARG,
                             "first setting must be 'format = pagefault-gpu-profile/1'");
        if (strcmp(value, "pagefault-gpu-profile/1") != 0)
            return prof_fail(x, lineno, PF_ERR_ARG,
                             "unsupported format '%.64s' (expected pagefault-gpu-profile/1)", value);
        r->have_format = 1;
        return PF_OK;
    }
    if (!strcmp(key, "format"))
        return prof_fail(x, lineno, PF_ERR_ARG, "format given twice");
    int k = -1;
    for (int i = 0; i < KEY_N; i++)
        if (!strcmp(key, prof_names[i]))
            k = i;
    if (k < 0)
        return PF_OK; /* unknown key: a newer writer's extra figure */
    if (r->seen[k])
        return prof_fail(x, lineno, PF_ERR_ARG, "%s given twice", prof_names[k]);
    r->seen[k] = 1;
    if (k == KEY_DEVICE) {
        snprintf(r->device, sizeof r->device, "%s", value);
        return PF_OK;
    }
    double *v = &r->val[k];
    if (!parse_number(value, v))
        return prof_fail(x, lineno, PF_ERR_ARG, "%s: '%.64s' is not a number", prof_names[k], value);
    /* a bandwidth from 0.1 GB/s: one of 3e-308 passed, every step took
     * an infinite time and the run printed zeros with status 0 */
    if (k == KEY_FIXED ? !(*v >= 0 && *v < 1e6) : !(*v >= 0.1 && *v < 1e9))
        return prof_fail(x, lineno, PF_ERR_ARG, "%s: %g is out of range (%s)", prof_names[k], *v,
                         k == KEY_FIXED ? "0 to 1e6 us" : "0.1 to 1e9 GB/s");
    return PF_OK;
}

/* One line of f into buf (cap bytes: PROF_LINE_MAX, its newline and the
 * terminator), its newline kept. Returns its length, -1 at the end of the
 * file, or -2 for a line longer than PROF_LINE_MAX. Read a byte at a time,
 * not by fgets, whose strlen stops at a NUL byte (a NUL mid-line would be
 * called a line too long, one at a line's start would drop the setting
 * unseen); nor by getline, which grows an endless line (/dev/zero's) until
 * memory runs out: the rest of a line too long is not read. */
static long prof_getline(FILE *f, char *buf, size_t cap)
{
    size_t n = 0;
    int c;
    while ((c = getc(f)) != EOF) {
        if (n + 2 > cap)
            return -2;
        buf[n++] = (char)c;
        if (c == '\n')
            break;
    }
    buf[n] = '\0';
    return n == 0 && c == EOF ? -1 : (long)n;
}

/* Every line of f through prof_line. */
static int prof_lines(const prof_ctx *x, FILE *f, prof_read *r)
{
    char buf[PROF_LINE_MAX + 2];
    long n;
    int lineno = 0, rc = PF_OK;
    while (rc == PF_OK && (n = prof_getline(f, buf, sizeof buf)) != -1) {
        lineno++;
        if (n == -2)
            rc = prof_fail(x, lineno, PF_ERR_ARG, "line longer than %d bytes", PROF_LINE_MAX);
        else if (memchr(buf, '\0', (size_t)n))
            rc = prof_fail(x, lineno, PF_ERR_ARG, "a NUL byte (a binary or UTF-16 file?)");
        else {
            char *hash = strchr(buf, '#');
            if (hash)
                *hash = '\0';
            char *line = trim(buf);
            if (*line)
                rc = prof_line(x, lineno, line, r);
        }
    }
    if (rc == PF_OK && ferror(f))
        rc = prof_fail(x, 0, PF_ERR_IO, "read error");
    return rc;
}

int pf_cost_load_profile(pf_cost *c, const char *path, char *err, size_t errlen)
{
    prof_ctx x = {path ? path : "(null)", err, errlen};
    if (err && errlen)
        err[0] = '\0';
    if (!c || !path)
        return prof_fail(&x, 0, PF_ERR_ARG, "no profile given");
    FILE *f = fopen(path, "r");
    if (!f)
        return prof_fail(&x, 0, PF_ERR_IO, "cannot open: %s", strerror(errno));
    prof_read r = {0};
    int rc = prof_lines(&x, f, &r);
    fclose(f);
    if (rc != PF_OK)
        return rc;
    if (!r.have_format)
        return prof_fail(&x, 0, PF_ERR_ARG, "empty: no 'format = pagefault-gpu-profile/1' line");
    for (int k = KEY_MEM; k <= KEY_ATTN; k++)
        if (!r.seen[k])
            return prof_fail(&x, 0, PF_ERR_ARG, "missing %s", prof_names[k]);

    /* Measured figures are sustained rates already: no efficiency applies. */
    c->profiled = 1;
    c->mem_bps = r.val[KEY_MEM] * 1e9;
    c->attn_bps = r.val[KEY_ATTN] * 1e9;
    c->attn_fixed_s = r.val[KEY_FIXED] * 1e-6;
    snprintf(c->profile_device, sizeof c->profile_device, "%s", r.device);
    return PF_OK;
}
