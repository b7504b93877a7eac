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

/* Shapes from the models' published Hugging Face config.json files
 * (num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim =
 * hidden_size / num_attention_heads, hidden_size, intermediate_size,
 * vocab_size, tie_word_embeddings; bf16 weights and KV), and the parameter
 * counts their model cards publish (safetensors totals; each equals
 * pf_model_param_count() of the shape, which the tests check):
 *   llama2-7b   meta-llama/Llama-2-7b-hf              6,738,415,616
 *   llama3-8b   meta-llama/Meta-Llama-3-8B            8,030,261,248
 *   llama3-70b  meta-llama/Meta-Llama-3-70B          70,553,706,496
 *   mistral-7b  mistralai/Mistral-7B-v0.3             7,248,023,552
 *               (v0.3: no sliding window, so the KV cache is the full context)
 *   qwen2.5-7b  Qwen/Qwen2.5-7B                       7,615,616,512
 *               (q/k/v biases, 28 query heads over 4 KV heads, untied head)
 * "seed" is the original single-head fp32 configuration (512 B/token): one
 * attention layer of D = 64, no MLP and no embeddings, so its weights are
 * negligible and a simulated step costs its KV traffic and the overhead. */
static const pf_model model_seed = {"seed", 1, 1, 1, 64, 4, 64, 0, 0, 0, 0, 16576};
static const pf_model model_llama2_7b = {"llama2-7b", 32, 32, 32, 128, 2,
                                         4096, 11008, 32000, 0, 0, 6738415616};
static const pf_model model_llama3_8b = {"llama3-8b", 32, 32, 8, 128, 2,
                                         4096, 14336, 128256, 0, 0, 8030261248};
static const pf_model model_llama3_70b = {"llama3-70b", 80, 64, 8, 128, 2,
                                          8192, 28672, 128256, 0, 0, 70553706496};
static const pf_model model_mistral_7b = {"mistral-7b", 32, 32, 8, 128, 2,
                                          4096, 14336, 32768, 0, 0, 7248023552};
static const pf_model model_qwen25_7b = {"qwen2.5-7b", 28, 28, 4, 128, 2,
                                         3584, 18944, 152064, 1, 0, 7615616512};

/* The first four keep their historical order (calc's --model indexes them). */
static const pf_model *const models[] = {&model_seed,       &model_llama2_7b,  &model_llama3_8b,
                                         &model_llama3_70b, &model_mistral_7b, &model_qwen25_7b,
                                         NULL};

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

int64_t pf_model_param_count(const pf_model *m)
{
    if (!m)
        return 0;
    int64_t h = m->hidden_size, q = (int64_t)m->num_q_heads * m->head_dim,
            kv = (int64_t)m->num_kv_heads * m->head_dim;
    /* q and o are hidden x q; k and v are hidden x kv; the MLP's gate, up and
     * down are hidden x intermediate; two RMSNorm weight vectors. */
    int64_t layer = 2 * h * q + 2 * h * kv + 3 * h * (int64_t)m->intermediate_size + 2 * h;
    if (m->qkv_bias)
        layer += q + 2 * kv;
    int64_t embed = (int64_t)m->vocab_size * h;
    return (int64_t)m->num_layers * layer + h /* final norm */ + embed +
           (m->tied_embeddings ? 0 : embed);
}

int64_t pf_model_unread_embedding_params(const pf_model *m)
{
    return (m && !m->tied_embeddings) ? (int64_t)m->vocab_size * m->hidden_size : 0;
}

int64_t pf_model_lm_head_params(const pf_model *m)
{
    return m ? (int64_t)m->vocab_size * m->hidden_size : 0;
}
