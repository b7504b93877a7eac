/* core/memory.c - naive vs paged accounting (formulas in memory.h). */
#include "core/memory.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "core/err.h"

/* ceil(len / B) in 64 bits: the int version in paging.h would overflow for
 * lengths near INT_MAX, which calc's flags can reach. */
static int64_t blocks_for(int64_t len, int64_t block_size)
{
    return (len + block_size - 1) / block_size;
}

int pf_mem_account(const int *lens, int n, int block_size, int max_seq_len,
                   size_t bytes_per_token, pf_mem_report *out)
{
    if (!lens || !out || n < 1 || block_size < 1 || max_seq_len < 1)
        return PF_ERR_ARG;
    for (int i = 0; i < n; i++)
        if (lens[i] < 1)
            return PF_ERR_ARG;

    memset(out, 0, sizeof *out);
    out->num_seqs = n;
    out->block_size = block_size;
    out->max_seq_len = max_seq_len;
    out->bytes_per_token = bytes_per_token;

    int64_t naive_stored = 0; /* tokens the naive layout can actually hold */
    for (int i = 0; i < n; i++) {
        int64_t blocks = blocks_for(lens[i], block_size);
        out->tokens += lens[i];
        out->blocks += blocks;
        out->frag_tokens += blocks * block_size - lens[i];
        naive_stored += lens[i] < max_seq_len ? lens[i] : max_seq_len;
    }
    out->paged_reserved_tokens = out->blocks * block_size;
    out->naive_reserved_tokens = (int64_t)n * max_seq_len;

    double bpt = (double)bytes_per_token;
    out->paged_bytes = (double)out->paged_reserved_tokens * bpt;
    out->naive_bytes = (double)out->naive_reserved_tokens * bpt;
    out->frag_bytes = (double)out->frag_tokens * bpt;
    out->util_paged = (double)out->tokens / (double)out->paged_reserved_tokens;
    out->util_naive = (double)naive_stored / (double)out->naive_reserved_tokens;
    out->savings = (double)out->naive_reserved_tokens / (double)out->paged_reserved_tokens;
    out->frag_per_seq = (double)out->frag_tokens / n;
    out->table_entries_max = (int)blocks_for(max_seq_len, block_size);
    return PF_OK;
}

/* floor(budget / per_seq) as a count: any finite budget is accepted, and a
 * quotient of 2^63 or more has no int64 (converting it is undefined; x86
 * gives INT64_MIN), so it saturates at INT64_MAX. */
static int64_t seqs_in(double budget, double per_seq)
{
    double q = floor(budget / per_seq);
    return q >= 9223372036854775808.0 ? INT64_MAX : (int64_t)q;
}

int pf_mem_fit_budget(size_t bytes_per_token, double budget_bytes, int max_len, int mean_len,
                      int block_size, pf_mem_budget *out)
{
    if (!out || bytes_per_token == 0 || !(budget_bytes > 0) || !isfinite(budget_bytes) ||
        max_len < 1 || mean_len < 1 || block_size < 1)
        return PF_ERR_ARG;
    memset(out, 0, sizeof *out);
    out->bytes_per_token = bytes_per_token;
    out->budget_bytes = budget_bytes;
    out->max_len = max_len;
    out->mean_len = mean_len;
    out->block_size = block_size;
    /* Integer sizes are exact in double up to 2^53; the quotient of exact
     * operands is correctly rounded, so a budget that is an exact multiple
     * floors to the exact count. */
    double naive_seq = (double)max_len * (double)bytes_per_token;
    double paged_seq = (double)blocks_for(mean_len, block_size) * block_size *
                       (double)bytes_per_token;
    out->naive_seqs = seqs_in(budget_bytes, naive_seq);
    out->paged_seqs = seqs_in(budget_bytes, paged_seq);
    /* 0 when not even one naive sequence fits (no finite ratio; JSON has no inf). */
    out->ratio = out->naive_seqs > 0 ? (double)out->paged_seqs / (double)out->naive_seqs : 0.0;
    return PF_OK;
}

int pf_mem_naive_capacity(int pool_blocks, int block_size, int max_seq_len)
{
    if (pool_blocks < 0 || block_size < 1 || max_seq_len < 1)
        return PF_ERR_ARG;
    int64_t cap = (int64_t)pool_blocks * block_size / max_seq_len;
    return cap > INT_MAX ? INT_MAX : (int)cap;
}

/* ---- Figure 2 split (see memory.h) ---------------------------------------- */

static const char *const reserve_names[PF_RESERVE_COUNT] = {"max", "pow2", "oracle", "paged"};

const char *pf_mem_reserve_name(pf_mem_reserve r)
{
    return (unsigned)r < PF_RESERVE_COUNT ? reserve_names[r] : NULL;
}

int pf_mem_reserve_parse(const char *name, pf_mem_reserve *out)
{
    if (!name || !out)
        return PF_ERR_ARG;
    for (int i = 0; i < PF_RESERVE_COUNT; i++)
        if (!strcmp(name, reserve_names[i])) {
            *out = (pf_mem_reserve)i;
            return PF_OK;
        }
    return PF_ERR_ARG;
}

int64_t pf_mem_reserved_tokens(pf_mem_reserve r, int64_t current, int64_t final_len,
                               int block_size, int max_seq_len)
{
    if (current < 0 || final_len < 1 || final_len < current || block_size < 1 || max_seq_len < 1)
        return PF_ERR_ARG;
    if (r != PF_RESERVE_PAGED && final_len > max_seq_len)
        return PF_ERR_RANGE;
    switch (r) {
    case PF_RESERVE_MAX:
        return max_seq_len;
    case PF_RESERVE_POW2: {
        int64_t p = 1;
        while (p < final_len)
            p <<= 1;
        return p < max_seq_len ? p : max_seq_len;
    }
    case PF_RESERVE_ORACLE:
        return final_len;
    case PF_RESERVE_PAGED:
        return blocks_for(current, block_size) * block_size;
    default:
        return PF_ERR_ARG;
    }
}

static void split_shares(pf_mem_split *s)
{
    s->total_tokens =
        s->token_tokens + s->reserved_tokens + s->internal_tokens + s->external_tokens;
    if (s->total_tokens <= 0) {
        s->token_share = s->reserved_share = s->internal_share = s->external_share = 0.0;
        return;
    }
    double t = (double)s->total_tokens;
    s->token_share = (double)s->token_tokens / t;
    s->reserved_share = (double)s->reserved_tokens / t;
    s->internal_share = (double)s->internal_tokens / t;
    s->external_share = (double)s->external_tokens / t;
}

int pf_mem_split_compute(const int *current, const int *final_len, int n, pf_mem_reserve r,
                         int block_size, int max_seq_len, int64_t external_tokens,
                         pf_mem_split *out)
{
    if (!current || !final_len || !out || n < 1 || external_tokens < 0 ||
        (unsigned)r >= PF_RESERVE_COUNT)
        return PF_ERR_ARG;
    pf_mem_split s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < n; i++) {
        int64_t res = pf_mem_reserved_tokens(r, current[i], final_len[i], block_size, max_seq_len);
        if (res < 0)
            return (int)res;
        int64_t used_eventually = res < final_len[i] ? res : final_len[i];
        s.token_tokens += current[i];
        s.reserved_tokens += used_eventually - current[i];
        s.internal_tokens += res - used_eventually;
    }
    s.external_tokens = external_tokens;
    split_shares(&s);
    *out = s;
    return PF_OK;
}

void pf_mem_split_accumulate(pf_mem_split *acc, const pf_mem_split *s)
{
    acc->token_tokens += s->token_tokens;
    acc->reserved_tokens += s->reserved_tokens;
    acc->internal_tokens += s->internal_tokens;
    acc->external_tokens += s->external_tokens;
    split_shares(acc);
}
