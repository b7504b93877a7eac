/* core/config.h - run-time configuration and model presets.
 *
 * Contract: pf_config_default() fills the seed's defaults (block 16 tokens,
 * MAX_SEQ_LEN 2048, pool 4096 blocks, one layer, one KV head, head dim 64,
 * fp32), which give the seed's 512 bytes per token. Model presets describe
 * real models for KV sizing. Called by calc, sim, bench and the dashboard.
 */
#ifndef PF_CORE_CONFIG_H
#define PF_CORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int block_size;  /* tokens per block (page)            default 16   */
    int max_seq_len; /* naive reservation per sequence      default 2048 */
    int pool_blocks; /* frames in the pool                  default 4096 */
    int num_layers;  /* layers whose KV is stored           default 1    */
    int num_kv_heads;/* KV heads                            default 1    */
    int head_dim;    /* D                                   default 64   */
    int dtype_bytes; /* bytes per element                   default 4    */
} pf_config;

void pf_config_default(pf_config *cfg);

/* KV-cache bytes per token: 2 (K and V) * layers * kv_heads * head_dim * dtype. */
size_t pf_config_bytes_per_token(const pf_config *cfg);

/* A model's shape. The first six fields size the KV cache; the rest (from
 * the model's published config.json) size the weights and FLOPs for the
 * simulator's cost model (sim/cost.h). */
typedef struct {
    const char *name;   /* "seed", "llama2-7b", "llama3-8b", ... */
    int num_layers;
    int num_q_heads;
    int num_kv_heads;
    int head_dim;
    int dtype_bytes;    /* KV and weights: 2 (bf16/fp16) for real models */
    int hidden_size;
    int intermediate_size; /* gated MLP width (0: no MLP, the seed) */
    int vocab_size;        /* 0: no embeddings (the seed) */
    int qkv_bias;          /* 1: q/k/v projections carry a bias (Qwen2) */
    int tied_embeddings;   /* 1: the LM head reuses the input embedding */
    int64_t num_params;    /* published parameter count */
} pf_model;

/* Preset by name, or NULL if unknown ("custom" is not a preset). */
const pf_model *pf_model_find(const char *name);

/* NULL-terminated list of presets, for --help and tests. */
const pf_model *const *pf_model_list(void);

/* Parameter count from the shape (Llama-style decoder: embeddings, per layer
 * q/k/v/o projections (+ q/k/v biases), a gated MLP of three matrices and two
 * RMSNorm weights, a final norm, an untied LM head). Equals num_params for
 * every preset (the test checks), which is how the presets are cross-checked. */
int64_t pf_model_param_count(const pf_model *m);

/* Parameters of the input embedding table that a forward pass does not
 * stream: vocab x hidden when the LM head is a separate matrix, 0 when tied
 * (the LM head then reads the whole table). */
int64_t pf_model_unread_embedding_params(const pf_model *m);

/* Parameters of the LM head (vocab x hidden): applied only to the positions
 * whose logits are computed, not to every prompt token. */
int64_t pf_model_lm_head_params(const pf_model *m);

/* Copy a model's shape into cfg (layers, kv heads, head dim, dtype). */
void pf_config_apply_model(pf_config *cfg, const pf_model *m);

#endif
