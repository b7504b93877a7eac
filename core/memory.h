/* core/memory.h - memory accounting: what naive and paged layouts reserve.
 *
 * Formulas (B = block size, L_i = sequence lengths):
 *   naive reserved  = n * MAX_SEQ_LEN tokens
 *   paged reserved  = sum(ceil(L_i / B)) * B tokens
 *   utilization     = sum(L_i) / reserved
 *   internal frag   = sum(ceil(L_i / B) * B - L_i)   ~ (B-1)/2 per sequence
 *   naive capacity  = pool tokens / MAX_SEQ_LEN
 * Bytes are tokens * bytes_per_token. Pure functions; used by calc, the
 * simulator's statistics, bench and the dashboard.
 */
#ifndef PF_CORE_MEMORY_H
#define PF_CORE_MEMORY_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int num_seqs;
    int block_size;
    int max_seq_len;
    size_t bytes_per_token;
    int64_t tokens;                /* sum of lengths                       */
    int64_t blocks;                /* sum of ceil(L/B)                     */
    int64_t paged_reserved_tokens; /* blocks * B                           */
    int64_t naive_reserved_tokens; /* n * max_seq_len                      */
    int64_t frag_tokens;           /* internal fragmentation               */
    double paged_bytes, naive_bytes, frag_bytes;
    double util_paged, util_naive; /* tokens / reserved, 0..1              */
    double savings;                /* naive / paged reserved               */
    double frag_per_seq;           /* frag_tokens / n                      */
    int table_entries_max;         /* block-table length at max_seq_len    */
} pf_mem_report;

/* Account lens[0..n) (each >= 1). Lengths above max_seq_len are counted as
 * they are for paged and clamped for naive (naive cannot hold them; the
 * caller reports that). Returns PF_OK or PF_ERR_ARG. */
int pf_mem_account(const int *lens, int n, int block_size, int max_seq_len,
                   size_t bytes_per_token, pf_mem_report *out);

/* Model sizing against a budget. */
typedef struct {
    size_t bytes_per_token;
    double budget_bytes;
    int max_len, mean_len, block_size;
    int64_t naive_seqs;    /* floor(budget / (max_len * bpt)), at most INT64_MAX */
    int64_t paged_seqs;    /* floor(budget / (ceil(mean/B) * B * bpt)), likewise */
    double ratio;          /* paged / naive                                   */
} pf_mem_budget;

int pf_mem_fit_budget(size_t bytes_per_token, double budget_bytes, int max_len, int mean_len,
                      int block_size, pf_mem_budget *out);

/* Naive capacity of a pool: pool_blocks * B / max_seq_len sequences
 * (clamped to INT_MAX), or PF_ERR_ARG for a bad size. */
int pf_mem_naive_capacity(int pool_blocks, int block_size, int max_seq_len);

/* ---- The PagedAttention paper's Figure 2: where KV memory goes ------------
 * Kwon et al., "Efficient Memory Management for Large Language Model Serving
 * with PagedAttention" (SOSP 2023), Figure 2 splits the KV memory of Orca
 * (contiguous reservations of three kinds) and vLLM (paged) into:
 *   token states       slots holding a token's K and V now
 *   reserved           slots reserved for tokens the sequence will produce
 *                      later (used eventually, idle now)
 *   internal frag.     slots reserved that no token will ever fill
 *   external frag.     free memory the allocator cannot hand out (gaps
 *                      between contiguous reservations; measured by the
 *                      caller, who knows its allocator: 0 for a packed
 *                      layout, and for a paged pool, where any free frame
 *                      fits any request)
 * The reservation of a sequence with final length F (prompt + output) and
 * current length C:
 *   max     MAX_SEQ_LEN                    Orca (Max)
 *   pow2    next power of two >= F, at most MAX_SEQ_LEN   Orca (Pow2)
 *   oracle  F                              Orca (Oracle): knows the length
 *   paged   ceil(C / B) x B                vLLM: one block at a time
 * and then token = C, reserved = min(R, F) - C, internal = R - min(R, F).
 * The paper's shares are time averages over a run: sum the splits of
 * snapshots with pf_mem_split_accumulate. */
typedef enum {
    PF_RESERVE_MAX = 0,
    PF_RESERVE_POW2,
    PF_RESERVE_ORACLE,
    PF_RESERVE_PAGED,
    PF_RESERVE_COUNT
} pf_mem_reserve;

/* "max", "pow2", "oracle", "paged"; NULL for a bad value. */
const char *pf_mem_reserve_name(pf_mem_reserve r);
/* Name to policy: PF_OK, or PF_ERR_ARG for an unknown name. */
int pf_mem_reserve_parse(const char *name, pf_mem_reserve *out);

/* Tokens reserved for one sequence (see above); PF_ERR_ARG for bad sizes
 * (current < 0, final < max(current, 1), block or max < 1), PF_ERR_RANGE when
 * a naive policy cannot hold final (final > max_seq_len). */
int64_t pf_mem_reserved_tokens(pf_mem_reserve r, int64_t current, int64_t final_len,
                               int block_size, int max_seq_len);

typedef struct {
    int64_t token_tokens, reserved_tokens, internal_tokens, external_tokens;
    int64_t total_tokens;  /* the four together */
    /* Shares of the total: they sum to 1, or are all 0 when the total is 0. */
    double token_share, reserved_share, internal_share, external_share;
} pf_mem_split;

/* Split of n sequences (current[i], final_len[i]) under policy r, plus
 * external_tokens of unusable free memory (>= 0). Errors as
 * pf_mem_reserved_tokens; PF_ERR_ARG for NULLs or n < 1. out is filled only
 * on success. */
int pf_mem_split_compute(const int *current, const int *final_len, int n, pf_mem_reserve r,
                         int block_size, int max_seq_len, int64_t external_tokens,
                         pf_mem_split *out);

/* acc += s (token counts), shares recomputed: the time average of snapshots. */
void pf_mem_split_accumulate(pf_mem_split *acc, const pf_mem_split *s);

#endif
