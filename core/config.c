/* core/config.c - the seed's defaults and the model presets (see config.h). */
#include "core/config.h"

#include <string.h>

void pf_config_default(pf_config *cfg)
{
    cfg->block_size = 16;
    cfg->max_seq_len = 2048;
    cfg->pool_blocks = 4096;
    cfg->num_layers = 1;
    cfg->num_kv_heads = 1;
    cfg->head_dim = 64;
    cfg->dtype_bytes = 4;
}

size_t pf_config_bytes_per_token(const pf_config *cfg)
{
    /* size_t all the way: 2 * 80 * 8 * 128 * 2 fits an int, but custom
     * shapes may not. Non-positive fields give 0 (the caller validates). */
    if (cfg->num_layers < 1 || cfg->num_kv_heads < 1 || cfg->head_dim < 1 || cfg->dtype_bytes < 1)
        return 0;
    return (size_t)2 * (size_t)cfg->num_layers * (size_t)cfg->num_kv_heads *
           (size_t)cfg->head_dim * (size_t)cfg->dtype_bytes;
}

/* Shapes from the models' published configs (num_hidden_layers,
 * num_attention_heads, num_key_value_heads, head_dim), fp16/bf16 KV.
 * "seed" is the original single-head fp32 configuration (512 B/token). */
static const pf_model model_seed = {"seed", 1, 1, 1, 64, 4};
static const pf_model model_llama2_7b = {"llama2-7b", 32, 32, 32, 128, 2};
static const pf_model model_llama3_8b = {"llama3-8b", 32, 32, 8, 128, 2};
static const pf_model model_llama3_70b = {"llama3-70b", 80, 64, 8, 128, 2};

static const pf_model *const models[] = {&model_seed, &model_llama2_7b, &model_llama3_8b,
                                         &model_llama3_70b, NULL};

const pf_model *pf_model_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; models[i]; i++)
        if (!strcmp(models[i]->name, name))
            return models[i];
    return NULL;
}

const pf_model *const *pf_model_list(void)
{
    return models;
}

void pf_config_apply_model(pf_config *cfg, const pf_model *m)
{
    cfg->num_layers = m->num_layers;
    cfg->num_kv_heads = m->num_kv_heads;
    cfg->head_dim = m->head_dim;
    cfg->dtype_bytes = m->dtype_bytes;
}
