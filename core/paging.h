/* core/paging.h - page-table math, shared verbatim by C and CUDA code.
 *
 * A sequence's KV-cache is split into logical blocks of B tokens (virtual
 * pages). Its block table maps logical block i to a physical frame of the
 * pool. Everything here is a static inline function with no dependencies so
 * that the CPU reference, the simulator and the GPU kernels compute the same
 * addresses from the same source.
 *
 * Pool layout (the one the GPU kernels and the CPU reference both use):
 * head-major pages, so one (frame, kv head) is one contiguous run of
 * B * D elements:
 *
 *     k_pool[frame][kv_head][offset_in_block][d]      (same for v_pool)
 *
 * Contiguous (naive) layout, one buffer per sequence with capacity `cap`:
 *
 *     k_seq[kv_head][token][d]
 */
#ifndef PF_CORE_PAGING_H
#define PF_CORE_PAGING_H

#include <stddef.h>

#if defined(__CUDACC__)
#define PF_HD __host__ __device__ /* "static inline" is already written */
#else
#define PF_HD
#endif

/* token -> logical block (virtual page number) */
static inline PF_HD int pf_page_block(int token, int block_size)
{
    return token / block_size;
}

/* token -> offset inside its block */
static inline PF_HD int pf_page_offset(int token, int block_size)
{
    return token % block_size;
}

/* number of blocks needed to hold len tokens: ceil(len / B). Quotient plus
 * a partial block, not (len + B - 1) / B: that sum overflows int for
 * lengths within B of INT_MAX, and the result is an int that fits. */
static inline PF_HD int pf_page_blocks_for(int len, int block_size)
{
    return len / block_size + (len % block_size > 0);
}

/* tokens wasted in the last block of a sequence of len tokens; from the
 * remainder, since blocks * B itself may pass INT_MAX */
static inline PF_HD int pf_page_tail_waste(int len, int block_size)
{
    int rem = len % block_size;
    return rem > 0 ? block_size - rem : 0;
}

/* token -> pool slot (frame * B + offset): the page-table walk. */
static inline PF_HD long pf_page_slot(const int *block_table, int token, int block_size)
{
    return (long)block_table[pf_page_block(token, block_size)] * block_size +
           pf_page_offset(token, block_size);
}

/* Element index of (frame, kv_head, offset, 0) in a head-major pool. */
static inline PF_HD size_t pf_page_pool_index(int frame, int kv_head, int offset, int num_kv_heads,
                                              int block_size, int head_dim)
{
    return (((size_t)frame * num_kv_heads + kv_head) * block_size + offset) * head_dim;
}

/* Element index of token's K (or V) vector for one kv head, through the table. */
static inline PF_HD size_t pf_page_kv_index(const int *block_table, int token, int kv_head,
                                            int num_kv_heads, int block_size, int head_dim)
{
    return pf_page_pool_index(block_table[pf_page_block(token, block_size)], kv_head,
                              pf_page_offset(token, block_size), num_kv_heads, block_size,
                              head_dim);
}

/* Element index of (kv_head, token, 0) in a contiguous per-sequence buffer. */
static inline PF_HD size_t pf_page_contig_index(int token, int kv_head, int cap, int head_dim)
{
    return ((size_t)kv_head * cap + token) * head_dim;
}

#endif
