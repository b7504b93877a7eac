/* tests/test_core_memsplit.c - the PagedAttention paper's Figure 2 split of
 * KV memory (core/memory.h): token states, reserved, internal and external
 * fragmentation for max / pow2 / oracle reservations and for paging, by hand
 * on small cases, summing to 100% on random ones. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/err.h"
#include "core/memory.h"
#include "core/rng.h"

static pf_mem_split split(const int *cur, const int *fin, int n, pf_mem_reserve r, int64_t ext)
{
    pf_mem_split s;
    cr_assert_eq(pf_mem_split_compute(cur, fin, n, r, 16, 128, ext, &s), PF_OK, "%s",
                 pf_mem_reserve_name(r));
    cr_assert_eq(s.total_tokens,
                 s.token_tokens + s.reserved_tokens + s.internal_tokens + s.external_tokens);
    cr_assert_float_eq(s.token_share + s.reserved_share + s.internal_share + s.external_share, 1.0,
                       1e-12);
    return s;
}

Test(memsplit, names)
{
    const char *names[] = {"max", "pow2", "oracle", "paged"};
    for (int i = 0; i < PF_RESERVE_COUNT; i++) {
        pf_mem_reserve r;
        cr_assert_str_eq(pf_mem_reserve_name((pf_mem_reserve)i), names[i]);
        cr_assert_eq(pf_mem_reserve_parse(names[i], &r), PF_OK);
        cr_assert_eq(r, (pf_mem_reserve)i);
    }
    pf_mem_reserve r;
    cr_assert_eq(pf_mem_reserve_parse("buddy", &r), PF_ERR_ARG);
    cr_assert_eq(pf_mem_reserve_parse(NULL, &r), PF_ERR_ARG);
    cr_assert_null(pf_mem_reserve_name(PF_RESERVE_COUNT));
}

Test(memsplit, reservations)
{
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_MAX, 5, 20, 16, 128), 128);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_POW2, 5, 20, 16, 128), 32);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_POW2, 5, 32, 16, 128), 32);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_POW2, 5, 33, 16, 100), 64);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_POW2, 5, 65, 16, 100), 100, "capped at max");
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_ORACLE, 5, 20, 16, 128), 20);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_PAGED, 5, 20, 16, 128), 16);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_PAGED, 17, 20, 16, 128), 32);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_PAGED, 0, 20, 16, 128), 0);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_PAGED, 300, 300, 16, 128), 304,
                 "paging holds what naive cannot");
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_ORACLE, 5, 129, 16, 128), PF_ERR_RANGE);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_MAX, 21, 20, 16, 128), PF_ERR_ARG);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_MAX, -1, 20, 16, 128), PF_ERR_ARG);
    cr_assert_eq(pf_mem_reserved_tokens(PF_RESERVE_PAGED, 1, 1, 0, 128), PF_ERR_ARG);
}

/* Finished sequences (current = final): the calc worked example. */
Test(memsplit, worked_example_static)
{
    const int lens[] = {1, 16, 17, 100};
    pf_mem_split p = split(lens, lens, 4, PF_RESERVE_PAGED, 0);
    cr_assert_eq(p.token_tokens, 134);
    cr_assert_eq(p.reserved_tokens, 0);
    cr_assert_eq(p.internal_tokens, 42, "the same 42 tokens calc reports");
    pf_mem_report rep;
    cr_assert_eq(pf_mem_account(lens, 4, 16, 128, 1, &rep), PF_OK);
    cr_assert_eq(p.internal_tokens, rep.frag_tokens);

    pf_mem_split m = split(lens, lens, 4, PF_RESERVE_MAX, 0);
    cr_assert_eq(m.internal_tokens, 4 * 128 - 134);
    pf_mem_split w = split(lens, lens, 4, PF_RESERVE_POW2, 0);
    cr_assert_eq(w.internal_tokens, (1 - 1) + (16 - 16) + (32 - 17) + (128 - 100));
    pf_mem_split o = split(lens, lens, 4, PF_RESERVE_ORACLE, 0);
    cr_assert_eq(o.internal_tokens, 0);
    cr_assert_float_eq(o.token_share, 1.0, 0);
}

/* Two sequences mid-generation: 10 of 20 and 30 of 100 tokens. */
Test(memsplit, mid_generation_by_hand)
{
    const int cur[] = {10, 30}, fin[] = {20, 100};
    pf_mem_split m = split(cur, fin, 2, PF_RESERVE_MAX, 0);
    cr_assert_eq(m.token_tokens, 40);
    cr_assert_eq(m.reserved_tokens, 10 + 70);
    cr_assert_eq(m.internal_tokens, 108 + 28);
    cr_assert_float_eq(m.token_share, 40.0 / 256, 1e-15);

    pf_mem_split w = split(cur, fin, 2, PF_RESERVE_POW2, 0); /* 32 and 128 */
    cr_assert_eq(w.reserved_tokens, 80);
    cr_assert_eq(w.internal_tokens, 12 + 28);

    pf_mem_split o = split(cur, fin, 2, PF_RESERVE_ORACLE, 0);
    cr_assert_eq(o.reserved_tokens, 80);
    cr_assert_eq(o.internal_tokens, 0);
    cr_assert_float_eq(o.token_share, 40.0 / 120, 1e-15);

    pf_mem_split p = split(cur, fin, 2, PF_RESERVE_PAGED, 0); /* 16 and 32 slots */
    cr_assert_eq(p.reserved_tokens, 6 + 2, "only the open blocks' free slots");
    cr_assert_eq(p.internal_tokens, 0);
    cr_assert_float_eq(p.token_share, 40.0 / 48, 1e-15);

    /* The paper's ordering: paged > oracle > pow2 > max in token share. */
    cr_assert_gt(p.token_share, o.token_share);
    cr_assert_gt(o.token_share, w.token_share);
    cr_assert_gt(w.token_share, m.token_share);

    /* A sequence ending inside its last block: the slots past its end are
     * internal fragmentation, not reservation. */
    const int c2[] = {10}, f2[] = {12};
    pf_mem_split q = split(c2, f2, 1, PF_RESERVE_PAGED, 0);
    cr_assert_eq(q.reserved_tokens, 2);
    cr_assert_eq(q.internal_tokens, 4);

    pf_mem_split e = split(cur, fin, 2, PF_RESERVE_PAGED, 60);
    cr_assert_eq(e.external_tokens, 60);
    cr_assert_float_eq(e.external_share, 60.0 / 108, 1e-15);
}

Test(memsplit, bad_input_leaves_output_alone)
{
    const int cur[] = {10, 30}, fin[] = {20, 200};
    pf_mem_split s, before;
    memset(&s, 0x5a, sizeof s);
    before = s;
    cr_assert_eq(pf_mem_split_compute(cur, fin, 2, PF_RESERVE_MAX, 16, 128, 0, &s), PF_ERR_RANGE,
                 "200 tokens do not fit a 128 reservation");
    cr_assert_eq(memcmp(&s, &before, sizeof s), 0);
    cr_assert_eq(pf_mem_split_compute(cur, fin, 2, PF_RESERVE_PAGED, 16, 128, 0, &s), PF_OK);
    cr_assert_eq(pf_mem_split_compute(cur, fin, 0, PF_RESERVE_PAGED, 16, 128, 0, &s), PF_ERR_ARG);
    cr_assert_eq(pf_mem_split_compute(cur, fin, 2, PF_RESERVE_PAGED, 16, 128, -1, &s), PF_ERR_ARG);
    cr_assert_eq(pf_mem_split_compute(cur, fin, 2, PF_RESERVE_COUNT, 16, 128, 0, &s), PF_ERR_ARG);
    cr_assert_eq(pf_mem_split_compute(NULL, fin, 2, PF_RESERVE_MAX, 16, 128, 0, &s), PF_ERR_ARG);
    const int beyond[] = {30, 10};
    cr_assert_eq(pf_mem_split_compute(beyond, fin, 2, PF_RESERVE_PAGED, 16, 128, 0, &s),
                 PF_ERR_ARG, "current beyond final");
}

/* Snapshots summed are the split of all their sequences at once; random
 * sets always sum to 100% and paging wastes under a block per sequence. */
Test(memsplit, accumulate_and_random_sets)
{
    pf_rng rng;
    pf_rng_seed(&rng, 5);
    enum { N = 300 };
    int cur[N], fin[N];
    for (int i = 0; i < N; i++) {
        fin[i] = (int)pf_rng_range(&rng, 1, 128);
        cur[i] = (int)pf_rng_range(&rng, 0, fin[i]);
    }
    for (int r = 0; r < PF_RESERVE_COUNT; r++) {
        pf_mem_split all = split(cur, fin, N, (pf_mem_reserve)r, 7);
        pf_mem_split a = split(cur, fin, 100, (pf_mem_reserve)r, 3);
        pf_mem_split b = split(cur + 100, fin + 100, N - 100, (pf_mem_reserve)r, 4);
        pf_mem_split_accumulate(&a, &b);
        cr_assert_eq(memcmp(&a, &all, sizeof a), 0, "%s", pf_mem_reserve_name((pf_mem_reserve)r));
        if (r == PF_RESERVE_PAGED)
            cr_assert_lt(all.reserved_tokens + all.internal_tokens, (int64_t)N * 16);
    }
    pf_mem_split zero;
    const int z[] = {0};
    const int one[] = {1};
    cr_assert_eq(pf_mem_split_compute(z, one, 1, PF_RESERVE_PAGED, 16, 128, 0, &zero), PF_OK);
    cr_assert_eq(zero.total_tokens, 0);
    cr_assert_eq(zero.token_share, 0.0, "nothing reserved: no shares, no division by zero");
}
