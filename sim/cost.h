/* sim/cost.h - the roofline cost model: how long one scheduler step takes.
 *
 * A step runs one forward pass over a batch: some sequences decode one token,
 * some prefill a chunk of prompt (or recompute a preempted one). It has to
 * stream every weight once and every scheduled sequence's KV once, and it has
 * to do the batch's FLOPs; whichever takes longer bounds it (the roofline):
 *
 *   memory_s  = weight_bytes / mem_bw
 *             + layers x attn_fixed + kv_read_bytes / attn_bw
 *             + kv_write_bytes / mem_bw
 *   compute_s = (2 x matmul_params x tokens + 2 x lm_head_params x logits
 *                + 4 x layers x q_heads x head_dim x attn_pairs) / flop_rate
 *   step_s    = max(memory_s, compute_s) + overhead_s
 *
 * where tokens = decode + prefill tokens of the step, logits = positions whose
 * next token is sampled, kv_read = context each sequence's attention reads,
 * attn_pairs = (query, key) pairs of causal attention. The batch is summed by
 * pf_cost_batch_add_* in O(1) per sequence; pf_cost_step_s is O(1).
 * mem_bw = HBM peak x mem_efficiency, flop_rate = dense bf16 peak x
 * flop_efficiency; attn_bw = mem_bw and attn_fixed = 0 unless a measured GPU
 * profile (pf_cost_load_profile, written by `pagefault bench --profile-out`)
 * replaces them with what our kernels reach on the device.
 *
 * Pure and thread-compatible: a pf_cost is read-only after setup. Callers:
 * the scheduler core (sim/sched.c sums its batches with pf_cost_batch_add_*;
 * the step's seconds come from its caller's cost function: the simulator,
 * sim/sim.c), the front end's flags (--model, --gpu, --gpu-profile, in
 * tui/simflags.c) and tests.
 */
#ifndef PF_SIM_COST_H
#define PF_SIM_COST_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

/* A GPU's datasheet figures (sources beside each preset in cost.c). */
typedef struct {
    const char *name;      /* "h200", "h100", "a100" */
    const char *long_name; /* "NVIDIA H200 SXM" */
    double hbm_gbps;       /* peak HBM bandwidth, GB/s (1e9 B/s) */
    double bf16_tflops;    /* peak dense bf16 tensor rate, TFLOP/s (no sparsity) */
    double host_gbps;      /* host link, one direction, sustained, GB/s */
    double mem_gib;        /* device memory, GiB */
} pf_gpu;

/* Preset by name ("h200", "h100", "a100"), or NULL. */
const pf_gpu *pf_gpu_find(const char *name);
/* NULL-terminated list of presets, for --help and tests. */
const pf_gpu *const *pf_gpu_list(void);

/* Defaults, each defended in cost.c. */
#define PF_COST_MEM_EFFICIENCY 0.90  /* sustained / peak HBM read bandwidth */
#define PF_COST_FLOP_EFFICIENCY 0.70 /* sustained / peak dense bf16 rate */
#define PF_COST_OVERHEAD_S 1.0e-3    /* fixed time per step (CPU, launches) */

typedef struct {
    pf_model model; /* copied: the cost model owns no pointers but names */
    pf_gpu gpu;
    double overhead_s;
    double mem_efficiency, flop_efficiency;
    /* Derived by pf_cost_init / pf_cost_set_efficiency / the profile: */
    double weight_bytes;        /* weights one forward pass streams */
    double kv_bytes_per_token;  /* 2 x layers x kv_heads x head_dim x dtype */
    double matmul_params;       /* parameters applied to every token */
    double lm_head_params;      /* applied to sampled positions only */
    double attn_flops_per_pair; /* 4 x layers x q_heads x head_dim */
    double mem_bps;             /* sustained HBM bytes/s */
    double attn_bps;            /* KV bytes/s of the attention kernel */
    double attn_fixed_s;        /* per-layer attention launch floor */
    double flops;               /* sustained FLOP/s */
    double host_bps;            /* host link bytes/s */
    int profiled;               /* 1 after pf_cost_load_profile */
    char profile_device[64];    /* "device =" of the profile, or "" */
} pf_cost;

/* Set up from a model and a GPU preset with the default efficiencies.
 * overhead_s >= 0 and finite. PF_ERR_ARG for NULLs, a bad overhead or a model
 * without layers or heads. */
int pf_cost_init(pf_cost *c, const pf_model *m, const pf_gpu *g, double overhead_s);

/* Change the sustained fractions (each in (0, 1]). Keeps a loaded profile's
 * measured bandwidths (they are already sustained figures). PF_ERR_ARG. */
int pf_cost_set_efficiency(pf_cost *c, double mem_efficiency, double flop_efficiency);

/* One step's work, summed over the scheduled sequences. */
typedef struct {
    int64_t seqs;           /* sequences scheduled */
    int64_t decode_tokens;  /* one per decoding sequence */
    int64_t prefill_tokens; /* prompt or recompute tokens */
    int64_t logit_tokens;   /* positions whose logits are computed */
    int64_t kv_read_tokens; /* sum of context each sequence's attention reads */
    int64_t kv_write_tokens;/* new tokens whose K and V are written */
    double attn_pairs;      /* sum of causal (query, key) pairs; double: it
                             * grows with the square of prompt lengths */
} pf_cost_batch;

void pf_cost_batch_clear(pf_cost_batch *b);

/* A sequence with `context` tokens already in its KV cache decodes one token:
 * it reads context + 1 tokens of KV (its new one included), writes one, and
 * samples one. */
void pf_cost_batch_add_decode(pf_cost_batch *b, int64_t context);

/* A sequence with `context` tokens cached (earlier chunks, prefix-cache hits)
 * prefills the next `tokens` prompt tokens; `last_chunk` != 0 when this
 * completes the prompt, so its last position's logits are computed (the first
 * output token). Causal pairs: tokens x context + tokens x (tokens + 1) / 2. */
void pf_cost_batch_add_prefill(pf_cost_batch *b, int64_t context, int64_t tokens,
                               int last_chunk);

typedef enum { PF_COST_IDLE = 0, PF_COST_MEMORY, PF_COST_COMPUTE } pf_cost_bound;

typedef struct {
    double memory_s, compute_s, overhead_s, step_s;
    double bytes, flops;
    pf_cost_bound bound;
} pf_cost_detail;

/* Duration in seconds of a step running batch b; 0 for an empty batch (no
 * step runs, so no overhead either). */
double pf_cost_step_s(const pf_cost *c, const pf_cost_batch *b);

/* The same with its parts. */
void pf_cost_step_detail(const pf_cost *c, const pf_cost_batch *b, pf_cost_detail *out);

/* vLLM's default share of device memory (--gpu-memory-utilization 0.9). */
#define PF_COST_MEMORY_UTILIZATION 0.90

/* KV tokens that fit beside the weights: floor((mem x utilization - all
 * weight bytes) / KV bytes per token), as vLLM sizes its block pool, less
 * the activation and CUDA-graph memory vLLM also sets aside (a few GiB: an
 * upper bound). PF_ERR_RANGE when not even one token fits (Llama 3 70B in
 * bf16 on one GPU of 80 or 141 GB at 0.9), PF_ERR_ARG for a utilization outside
 * (0, 1]. */
int64_t pf_cost_kv_capacity_tokens(const pf_cost *c, double memory_utilization);

/* Seconds to move `tokens` tokens of KV over the host link (one direction):
 * a swap-out or a swap-in of a preempted sequence. */
double pf_cost_swap_s(const pf_cost *c, int64_t tokens);

/* Read a `pagefault-gpu-profile/1` file (format in cost.c) and replace the
 * memory bandwidth, the attention bandwidth and the attention launch floor
 * with its measured figures. On error c is unchanged, err holds
 * "FILE:LINE: what" (or "FILE: what") and the result is PF_ERR_IO (cannot
 * read) or PF_ERR_ARG (malformed). The writer is gpu/'s pf_gpu_profile_write
 * (test_gpu_host reads back what it writes, exactly). */
int pf_cost_load_profile(pf_cost *c, const char *path, char *err, size_t errlen);

#endif
