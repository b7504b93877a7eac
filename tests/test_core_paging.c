/* tests/test_core_paging.c - page-table math (core/paging.h) against
 * hand-calculated addresses, and no two tokens of several sequences that
 * share one pool ever map to the same slot. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>

#include "core/err.h"
#include "core/paging.h"
#include "core/pool.h"

Test(paging, block_offset_and_counts)
{
    cr_assert_eq(pf_page_block(0, 16), 0);
    cr_assert_eq(pf_page_block(15, 16), 0);
    cr_assert_eq(pf_page_block(16, 16), 1);
    cr_assert_eq(pf_page_offset(17, 16), 1);
    cr_assert_eq(pf_page_offset(40, 16), 8);
    cr_assert_eq(pf_page_blocks_for(1, 16), 1);
    cr_assert_eq(pf_page_blocks_for(16, 16), 1);
    cr_assert_eq(pf_page_blocks_for(17, 16), 2);
    cr_assert_eq(pf_page_blocks_for(100, 16), 7);
    cr_assert_eq(pf_page_tail_waste(1, 16), 15);
    cr_assert_eq(pf_page_tail_waste(16, 16), 0);
    cr_assert_eq(pf_page_tail_waste(17, 16), 15);
    cr_assert_eq(pf_page_tail_waste(100, 16), 12);
    cr_assert_eq(pf_page_tail_waste(5, 1), 0, "B = 1 wastes nothing");
}

Test(paging, seed_block_table_addresses)
{
    /* The seed's picture: logical blocks 0,1,2 -> frames 7,2,19, B = 16. */
    const int table[] = {7, 2, 19};
    cr_assert_eq(pf_page_slot(table, 0, 16), 112);  /* 7 * 16 + 0  */
    cr_assert_eq(pf_page_slot(table, 15, 16), 127); /* 7 * 16 + 15 */
    cr_assert_eq(pf_page_slot(table, 16, 16), 32);  /* 2 * 16 + 0  */
    cr_assert_eq(pf_page_slot(table, 17, 16), 33);  /* 2 * 16 + 1  */
    cr_assert_eq(pf_page_slot(table, 40, 16), 312); /* 19 * 16 + 8 */
    cr_assert_eq(pf_page_slot(table, 47, 16), 319);
}

Test(paging, pool_and_contig_indices)
{
    /* head-major pool [frame][kv_head][offset][d], hkv = 8, B = 16, D = 128 */
    cr_assert_eq(pf_page_pool_index(0, 0, 0, 8, 16, 128), 0);
    cr_assert_eq(pf_page_pool_index(0, 0, 1, 8, 16, 128), 128);
    cr_assert_eq(pf_page_pool_index(0, 1, 0, 8, 16, 128), 16 * 128);
    cr_assert_eq(pf_page_pool_index(1, 0, 0, 8, 16, 128), 8 * 16 * 128);
    cr_assert_eq(pf_page_pool_index(3, 5, 7, 8, 16, 128), ((3 * 8 + 5) * 16 + 7) * 128);
    const int table[] = {7, 2, 19};
    /* token 40 -> frame 19, offset 8; kv head 2 of 4, B = 16, D = 64 */
    cr_assert_eq(pf_page_kv_index(table, 40, 2, 4, 16, 64), ((19 * 4 + 2) * 16 + 8) * 64);
    /* contiguous [kv_head][token][d], cap 2048, D 64 */
    cr_assert_eq(pf_page_contig_index(5, 0, 2048, 64), 5 * 64);
    cr_assert_eq(pf_page_contig_index(5, 3, 2048, 64), (3 * 2048 + 5) * 64);
    /* 64-bit: a pool of 1<<24 frames with a large page does not overflow int */
    cr_assert_eq(pf_page_pool_index(1 << 24, 0, 0, 8, 16, 128), (size_t)(1 << 24) * 8 * 16 * 128);
}

/* Several sequences get their blocks from one shuffled pool; every token of
 * every sequence must land on a distinct slot, and every element of every
 * (token, kv head) row on a distinct pool element. */
Test(paging, no_two_tokens_share_a_slot)
{
    enum { NF = 64, B = 16, HKV = 2, D = 4 };
    const int lens[] = {1, 16, 17, 100, 255, 33, 64};
    const int nseq = (int)(sizeof lens / sizeof lens[0]);
    pf_pool *p = pf_pool_create(NF);
    /* churn so that frames come out scattered */
    int tmp[NF];
    cr_assert_eq(pf_pool_alloc_n(p, 99, NF, tmp), PF_OK);
    for (int i = 0; i < NF; i += 3)
        cr_assert_eq(pf_pool_free(p, 99, tmp[i]), PF_OK);
    for (int i = 1; i < NF; i += 3)
        cr_assert_eq(pf_pool_free(p, 99, tmp[i]), PF_OK);
    for (int i = 2; i < NF; i += 3)
        cr_assert_eq(pf_pool_free(p, 99, tmp[i]), PF_OK);

    int tables[7][16];
    unsigned char *slot_seen = calloc((size_t)NF * B, 1);
    unsigned char *elem_seen = calloc((size_t)NF * HKV * B * D, 1);
    int total = 0;
    for (int s = 0; s < nseq; s++) {
        int nb = pf_page_blocks_for(lens[s], B);
        cr_assert_eq(pf_pool_alloc_n(p, s, nb, tables[s]), PF_OK);
        for (int t = 0; t < lens[s]; t++) {
            long slot = pf_page_slot(tables[s], t, B);
            cr_assert(slot >= 0 && slot < NF * B);
            cr_assert_eq(slot_seen[slot], 0, "seq %d token %d reuses slot %ld", s, t, slot);
            slot_seen[slot] = 1;
            total++;
            for (int h = 0; h < HKV; h++) {
                size_t base = pf_page_kv_index(tables[s], t, h, HKV, B, D);
                for (int d = 0; d < D; d++) {
                    cr_assert_lt(base + d, (size_t)NF * HKV * B * D);
                    cr_assert_eq(elem_seen[base + d], 0);
                    elem_seen[base + d] = 1;
                }
            }
        }
    }
    cr_assert_eq(total, 1 + 16 + 17 + 100 + 255 + 33 + 64);
    free(slot_seen);
    free(elem_seen);
    pf_pool_destroy(p);
}

/* len + B - 1 overflowed int for lengths within B of INT_MAX: the block
 * count came out negative and the tail waste wrong. */
Test(paging, blocks_for_near_int_max)
{
    volatile int len = INT_MAX; /* volatile: no constant folding of the UB */
    cr_assert_eq(pf_page_blocks_for(len, 16), 134217728); /* ceil((2^31 - 1) / 16) */
    cr_assert_eq(pf_page_blocks_for(len, 1), INT_MAX);
    cr_assert_eq(pf_page_blocks_for(len, INT_MAX), 1);
    cr_assert_eq(pf_page_blocks_for(len, 2), 1 << 30);
    cr_assert_eq(pf_page_blocks_for(len - 1, 2), (1 << 30) - 1);
    cr_assert_eq(pf_page_tail_waste(len, 16), 1); /* 2^31 - (2^31 - 1) */
    cr_assert_eq(pf_page_tail_waste(len, 1), 0);
    cr_assert_eq(pf_page_tail_waste(len, 65536), 1);
    /* the small cases keep their values, 0 tokens included */
    cr_assert_eq(pf_page_blocks_for(0, 16), 0);
    cr_assert_eq(pf_page_tail_waste(0, 16), 0);
    cr_assert_eq(pf_page_blocks_for(17, 16), 2);
    cr_assert_eq(pf_page_tail_waste(17, 16), 15);
}
