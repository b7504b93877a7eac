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

typedef struct {
    const char *name;   /* "seed", "llama2-7b", "llama3-8b", "llama3-70b" */
    int num_layers;
    int num_q_heads;
    int num_kv_heads;
    int head_dim;
    int dtype_bytes;
} pf_model;

/* Preset by name, or NULL if unknown ("custom" is not a preset). */
const pf_model *pf_model_find(const char *name);

/* NULL-terminated list of presets, for --help and tests. */
const pf_model *const *pf_model_list(void);

/* Copy a model's shape into cfg (layers, kv heads, head dim, dtype). */
void pf_config_apply_model(pf_config *cfg, const pf_model *m);

#endif
