/* tests/test_core_memory.c - memory accounting (core/memory.h) and sizes
 * (core/config.h): the worked example, the seed's configuration, the
 * Llama-3-70B budget, fragmentation near (B-1)/2 for uniform lengths. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <math.h>

#include "core/config.h"
#include "core/err.h"
#include "core/memory.h"
#include "core/rng.h"
#include "core/workload.h"

Test(config, seed_defaults)
{
    pf_config c;
    pf_config_default(&c);
    cr_assert_eq(c.block_size, 16);
    cr_assert_eq(c.max_seq_len, 2048);
    cr_assert_eq(c.pool_blocks, 4096);
    cr_assert_eq(c.head_dim, 64);
    cr_assert_eq(c.dtype_bytes, 4);
    cr_assert_eq(pf_config_bytes_per_token(&c), 512u, "2 * 64 * 4");
    cr_assert_eq(pf_mem_naive_capacity(c.pool_blocks, c.block_size, c.max_seq_len), 32);
}

Test(config, model_presets)
{
    struct {
        const char *name;
        int layers, q, kv, d, dt;
        size_t bpt;
    } want[] = {
        {"seed", 1, 1, 1, 64, 4, 512},
        {"llama2-7b", 32, 32, 32, 128, 2, 524288},  /* 512 KiB */
        {"llama3-8b", 32, 32, 8, 128, 2, 131072},   /* 128 KiB */
        {"llama3-70b", 80, 64, 8, 128, 2, 327680},  /* 320 KiB */
        {"mistral-7b", 32, 32, 8, 128, 2, 131072},  /* 128 KiB */
        {"qwen2.5-7b", 28, 28, 4, 128, 2, 57344},   /* 56 KiB */
    };
    int n = 0;
    for (const pf_model *const *m = pf_model_list(); *m; m++)
        n++;
    cr_assert_eq(n, 6);
    for (int i = 0; i < 6; i++) {
        const pf_model *m = pf_model_find(want[i].name);
        cr_assert_not_null(m, "%s", want[i].name);
        cr_assert_eq(m->num_layers, want[i].layers);
        cr_assert_eq(m->num_q_heads, want[i].q);
        cr_assert_eq(m->num_kv_heads, want[i].kv);
        cr_assert_eq(m->head_dim, want[i].d);
        cr_assert_eq(m->dtype_bytes, want[i].dt);
        pf_config c;
        pf_config_default(&c);
        pf_config_apply_model(&c, m);
        cr_assert_eq(pf_config_bytes_per_token(&c), want[i].bpt, "%s", want[i].name);
        cr_assert_eq(c.block_size, 16, "a model does not change the paging config");
    }
    cr_assert_null(pf_model_find("custom"));
    cr_assert_null(pf_model_find("llama3-71b"));
    cr_assert_null(pf_model_find(NULL));
}

Test(memory, worked_example)
{
    const int lens[] = {1, 16, 17, 100};
    pf_mem_report r;
    cr_assert_eq(pf_mem_account(lens, 4, 16, 2048, 512, &r), PF_OK);
    cr_assert_eq(r.tokens, 134);
    cr_assert_eq(r.blocks, 11);                /* 1 + 1 + 2 + 7 */
    cr_assert_eq(r.paged_reserved_tokens, 176);
    cr_assert_eq(r.frag_tokens, 42);           /* 15 + 0 + 15 + 12 */
    cr_assert_eq(r.naive_reserved_tokens, 4 * 2048);
    cr_assert_float_eq(r.util_paged, 134.0 / 176.0, 1e-12);
    cr_assert_float_eq(r.util_naive, 134.0 / 8192.0, 1e-12);
    cr_assert_float_eq(r.savings, 8192.0 / 176.0, 1e-12);
    cr_assert_float_eq(r.frag_per_seq, 10.5, 1e-12);
    cr_assert_float_eq(r.paged_bytes, 176.0 * 512, 1e-6);
    cr_assert_float_eq(r.frag_bytes, 42.0 * 512, 1e-6);
    cr_assert_eq(r.table_entries_max, 128);
}

Test(memory, block_size_one_and_large)
{
    const int lens[] = {1, 16, 17, 100};
    pf_mem_report r;
    cr_assert_eq(pf_mem_account(lens, 4, 1, 2048, 512, &r), PF_OK);
    cr_assert_eq(r.frag_tokens, 0);
    cr_assert_float_eq(r.util_paged, 1.0, 1e-12);
    cr_assert_eq(r.table_entries_max, 2048);
    cr_assert_eq(pf_mem_account(lens, 4, 256, 2048, 512, &r), PF_OK);
    cr_assert_eq(r.blocks, 4);
    cr_assert_eq(r.frag_tokens, 4 * 256 - 134);
    cr_assert_eq(r.table_entries_max, 8);
}

Test(memory, lengths_above_max_are_clamped_for_naive_only)
{
    const int lens[] = {3000, 10};
    pf_mem_report r;
    cr_assert_eq(pf_mem_account(lens, 2, 16, 2048, 1, &r), PF_OK);
    cr_assert_eq(r.tokens, 3010);
    cr_assert_eq(r.blocks, 188 + 1);
    cr_assert_float_eq(r.util_naive, (2048.0 + 10.0) / 4096.0, 1e-12);
}

Test(memory, bad_arguments)
{
    const int lens[] = {1, 0};
    pf_mem_report r;
    cr_assert_eq(pf_mem_account(lens, 2, 16, 2048, 512, &r), PF_ERR_ARG, "length 0");
    cr_assert_eq(pf_mem_account(lens, 0, 16, 2048, 512, &r), PF_ERR_ARG);
    cr_assert_eq(pf_mem_account(lens, 1, 0, 2048, 512, &r), PF_ERR_ARG);
    cr_assert_eq(pf_mem_account(lens, 1, 16, 0, 512, &r), PF_ERR_ARG);
    pf_mem_budget b;
    cr_assert_eq(pf_mem_fit_budget(0, 1e9, 8192, 2000, 16, &b), PF_ERR_ARG);
    cr_assert_eq(pf_mem_fit_budget(512, 0, 8192, 2000, 16, &b), PF_ERR_ARG);
    cr_assert_eq(pf_mem_fit_budget(512, NAN, 8192, 2000, 16, &b), PF_ERR_ARG);
    cr_assert_eq(pf_mem_fit_budget(512, 1e9, 0, 2000, 16, &b), PF_ERR_ARG);
    cr_assert_lt(pf_mem_naive_capacity(4096, 0, 2048), 0);
}

Test(memory, llama3_70b_budget)
{
    const pf_model *m = pf_model_find("llama3-70b");
    pf_config c;
    pf_config_default(&c);
    pf_config_apply_model(&c, m);
    size_t bpt = pf_config_bytes_per_token(&c);
    cr_assert_eq(bpt, 2u * 80 * 8 * 128 * 2);
    pf_mem_budget b;
    cr_assert_eq(pf_mem_fit_budget(bpt, 80e9, 8192, 2000, 16, &b), PF_OK);
    cr_assert_eq(b.naive_seqs, 29);  /* 80e9 / (8192 * 327680) = 29.8 */
    cr_assert_eq(b.paged_seqs, 122); /* 80e9 / (2000 * 327680) = 122.07 */
    cr_assert_float_eq(b.ratio, 122.0 / 29.0, 1e-12);
    /* the mean is rounded up to whole blocks: 2001 tokens take 2016 */
    cr_assert_eq(pf_mem_fit_budget(bpt, 80e9, 8192, 2001, 16, &b), PF_OK);
    cr_assert_eq(b.paged_seqs, (int64_t)(80e9 / (2016.0 * 327680)));
    /* an exact multiple floors to the exact count */
    cr_assert_eq(pf_mem_fit_budget(512, 512.0 * 2048 * 7, 2048, 2048, 16, &b), PF_OK);
    cr_assert_eq(b.naive_seqs, 7);
    cr_assert_eq(b.paged_seqs, 7);
    /* not even one naive sequence: ratio 0, not infinity */
    cr_assert_eq(pf_mem_fit_budget(512, 1000.0, 2048, 1, 16, &b), PF_OK);
    cr_assert_eq(b.naive_seqs, 0);
    cr_assert_eq(b.ratio, 0.0);
}

/* Lengths uniform over a range much wider than B: the tail waste is uniform
 * over 0..B-1, so the mean fragmentation tends to (B-1)/2. */
Test(memory, fragmentation_near_half_block)
{
    enum { N = 20000 };
    static int lens[N];
    pf_rng r;
    pf_rng_seed(&r, 77);
    for (int i = 0; i < N; i++)
        lens[i] = (int)pf_rng_range(&r, 1, 4096);
    const int sizes[] = {4, 16, 64};
    for (int k = 0; k < 3; k++) {
        pf_mem_report rep;
        cr_assert_eq(pf_mem_account(lens, N, sizes[k], 4096, 1, &rep), PF_OK);
        double want = (sizes[k] - 1) / 2.0;
        /* sd of one tail is about B/sqrt(12); of the mean, that / sqrt(N) */
        double tol = 5.0 * sizes[k] / sqrt(12.0) / sqrt((double)N);
        cr_assert(fabs(rep.frag_per_seq - want) < tol, "B %d: %f vs %f", sizes[k],
                  rep.frag_per_seq, want);
    }
}

Test(memory, seed_workload_is_consistent)
{
    int lens[32];
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 42, 32, 1, 2048, lens), PF_OK);
    pf_mem_report r;
    cr_assert_eq(pf_mem_account(lens, 32, 16, 2048, 512, &r), PF_OK);
    int64_t tokens = 0, blocks = 0;
    for (int i = 0; i < 32; i++) {
        tokens += lens[i];
        blocks += (lens[i] + 15) / 16;
    }
    cr_assert_eq(r.tokens, tokens);
    cr_assert_eq(r.blocks, blocks);
    cr_assert_eq(r.paged_reserved_tokens - r.tokens, r.frag_tokens);
    cr_assert_float_eq(r.naive_bytes, 32.0 * 2048 * 512, 1e-3); /* 33.55 MB, as the seed */
    cr_assert_leq(r.blocks, 4096, "fits the seed's pool");
}

/* Any finite positive budget is accepted; one whose count exceeds int64
 * converted the quotient out of range (undefined; INT64_MIN on x86, a
 * negative number of sequences). The counts saturate at INT64_MAX. */
Test(memory, fit_budget_huge_budget_saturates)
{
    pf_mem_budget b;
    cr_assert_eq(pf_mem_fit_budget(1, 1e300, 1, 1, 1, &b), PF_OK);
    cr_assert_eq(b.naive_seqs, INT64_MAX);
    cr_assert_eq(b.paged_seqs, INT64_MAX);
    cr_assert_float_eq(b.ratio, 1.0, 1e-12);
    /* exactly 2^63 is one past INT64_MAX as well */
    cr_assert_eq(pf_mem_fit_budget(1, 9223372036854775808.0, 1, 1, 1, &b), PF_OK);
    cr_assert_eq(b.naive_seqs, INT64_MAX);
    /* below the bound the count stays exact */
    cr_assert_eq(pf_mem_fit_budget(2, 1e18, 1, 1, 1, &b), PF_OK);
    cr_assert_eq(b.naive_seqs, 500000000000000000LL);
}
