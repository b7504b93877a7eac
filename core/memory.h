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
    int64_t naive_seqs;    /* floor(budget / (max_len * bpt))                 */
    int64_t paged_seqs;    /* floor(budget / (ceil(mean/B) * B * bpt))        */
    double ratio;          /* paged / naive                                   */
} pf_mem_budget;

int pf_mem_fit_budget(size_t bytes_per_token, double budget_bytes, int max_len, int mean_len,
                      int block_size, pf_mem_budget *out);

/* Naive capacity of a pool: pool_blocks * B / max_seq_len sequences
 * (clamped to INT_MAX), or PF_ERR_ARG for a bad size. */
int pf_mem_naive_capacity(int pool_blocks, int block_size, int max_seq_len);

#endif
