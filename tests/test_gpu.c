/* tests/test_gpu.c - the CUDA kernels on a real device (ctest label gpu).
 *
 * Without a usable device main() prints "skipped: no CUDA device (...)" and
 * returns 77, which ctest reports as skipped. The device probe runs in a
 * child process so that the Criterion runner itself never initialises CUDA
 * before it forks the tests.
 *
 * Covered: the checked runner (pf_gpu_bench_run) over dtypes fp32/fp16/bf16,
 * head dims 64/128, GQA groups 1..8 (and 6, which is served in tiles of 2),
 * block sizes 8..256 (and 24 and 10, not powers of two), variable lengths (1, B-1,
 * B, B+1, ...), split-KV, every numbered kernel version; the public API on
 * device pointers (append through a shuffled block table, paged and naive
 * attention) against core's CPU reference; plan/run with lengths of zero or
 * less (zeros, one split or many) and captured in a CUDA graph replayed 100
 * times; pf_gpu_run_layout with a shared frame and its error answers; the
 * block timeline of versions 7 on; several versions compared in one run;
 * the pools in FlashInfer's layout (a page's K and V side by side).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/attn.h"
#include "core/err.h"
#include "core/paging.h"
#include "core/rng.h"
#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"

/* How far a version whose sums' order moves at run time (v11, v37) may
 * be from its own naive pass: the tolerance and one output ulp at |o| <= 1
 * (the data are drawn in [-1, 1), so are the outputs; gpu/gpu.cu,
 * diff_scan). */
static double nondet_tol(const pf_gpu_bench_cfg *cfg)
{
    return cfg->tolerance + pf_gpu_out_ulp(cfg->dtype, 1.0);
}

static void run_ok_vt(int n, const int *lens, int hq, int hkv, int D, int B, pf_gpu_dtype dt,
                      int version, int tile)
{
    int cap = 1;
    for (int i = 0; i < n; i++)
        if (lens[i] > cap)
            cap = lens[i];
    pf_gpu_bench_cfg cfg = {
        .num_seqs = n, .seq_lens = lens, .naive_cap = cap + 3, .num_q_heads = hq,
        .num_kv_heads = hkv, .head_dim = D, .block_size = B, .dtype = dt, .iters = 2,
        .seed = 11u + (unsigned)hq * 7u + (unsigned)B, .shuffle_seed = 3, .tolerance = 1e-3,
        .ref_all_heads = 1, .measure_bw = 0, .version = version, .group_tile = tile,
    };
    pf_gpu_bench_result res;
    char err[300] = "";
    int rc = pf_gpu_bench_run(&cfg, &res, err, sizeof err);
    cr_assert_eq(rc, PF_OK, "v%d hq %d hkv %d D %d B %d %s: %s", version, hq, hkv, D, B,
                 pf_gpu_dtype_name(dt), err);
    cr_assert(res.pass, "v%d hq %d hkv %d D %d B %d %s: %s", version, hq, hkv, D, B,
              pf_gpu_dtype_name(dt), res.failure);
    cr_assert_eq(res.version, version);
    if (tile)
        cr_assert_eq(res.group_tile, tile);
    cr_assert_gt(res.host_us_per_run, 0.0);
    cr_assert_gt(res.launch_floor_us, 0.0);
    cr_assert_gt(res.launch_direct_us, 0.0);
    cr_assert_gt(res.graph_us_per_replay, 0.0);
    /* a batch that changes every run: one plan a batch size, run in turn;
     * once the graph cache has settled the loop makes no graph */
    cr_assert_eq(res.churn_plans, n < 24 ? n : 24);
    cr_assert_eq(res.churn_layers, PF_GPU_BENCH_LAYERS);
    cr_assert_gt(res.plan_make_us, 0.0);
    cr_assert_gt(res.churn_run.us_per_run, 0.0);
    cr_assert_gt(res.churn_step.us_per_run, 0.0);
    cr_assert_gt(res.churn_run.direct_us, 0.0);
    cr_assert_gt(res.churn_step.direct_us, 0.0);
    /* a step whose grid left the cache makes its graph once: at most one
     * a step over the 20 timed steps */
    cr_assert_leq(res.churn_step.graph_makes, 20, "v%d: %d graphs over 20 steps", version,
                  res.churn_step.graph_makes);
    cr_assert_eq(res.churn_run.graph_makes, 0, "v%d: the changing-batch loop made %d graphs",
                 version, res.churn_run.graph_makes);
    cr_assert(res.readback_ok);
    cr_assert(res.have_shuffled);
    /* same algorithm, same order of operations: the gather changes nothing
     * (v11 shares tokens out at run time, v37 tiles among its warps: within
     * the tolerance and an output ulp) */
    if (pf_gpu_version_exact(version)) {
        cr_assert_eq(res.max_diff_ordered, 0.0);
        cr_assert_eq(res.max_diff_shuffled, 0.0);
    } else {
        cr_assert_leq(res.max_diff_ordered, nondet_tol(&cfg));
        cr_assert_leq(res.max_diff_shuffled, nondet_tol(&cfg));
    }
    cr_assert_eq(res.ref_checked, (long long)n * hq * D);
    cr_assert_gt(res.naive.median_ms, 0.0);
}

static void run_ok_v(int n, const int *lens, int hq, int hkv, int D, int B, pf_gpu_dtype dt,
                     int version)
{
    run_ok_vt(n, lens, hq, hkv, D, B, dt, version, 0);
}

/* every numbered kernel version on the same case */
static void run_ok(int n, const int *lens, int hq, int hkv, int D, int B, pf_gpu_dtype dt)
{
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++)
        run_ok_v(n, lens, hq, hkv, D, B, dt, v);
}

Test(gpu, every_dtype_and_head_dim)
{
    int lens[] = {1, 15, 16, 17, 100, 257};
    const pf_gpu_dtype dts[] = {PF_GPU_F32, PF_GPU_F16, PF_GPU_BF16};
    for (int t = 0; t < 3; t++) {
        run_ok(6, lens, 8, 2, 64, 16, dts[t]);
        run_ok(6, lens, 8, 2, 128, 16, dts[t]);
    }
}

Test(gpu, gqa_groups)
{
    int lens[] = {3, 64, 200};
    run_ok(3, lens, 1, 1, 64, 16, PF_GPU_F32);   /* the seed: one head */
    run_ok(3, lens, 4, 4, 128, 16, PF_GPU_BF16); /* MHA */
    run_ok(3, lens, 8, 1, 128, 16, PF_GPU_BF16); /* MQA, group 8 */
    /* group 8 with 8 and with 32 lanes a row (bf16 D 64, fp32 D 128): v7's
     * reduce-scatter then leaves 4 scores a lane, and one a lane over 32 */
    run_ok(3, lens, 8, 1, 64, 16, PF_GPU_BF16);
    run_ok(3, lens, 8, 1, 128, 16, PF_GPU_F32);
    run_ok(3, lens, 12, 2, 64, 16, PF_GPU_F16);  /* group 6: tiles of 2 */
}

/* A group served in smaller tiles than the planner's (bench --group-tile):
 * more blocks, each reading its KV head for fewer query heads. */
Test(gpu, group_in_smaller_tiles)
{
    int lens[] = {3, 64, 200, 1000};
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++)
        run_ok_vt(4, lens, 8, 1, 128, 16, PF_GPU_BF16, v, 2);
    const int tiles[] = {1, 4};
    for (int t = 0; t < 2; t++)
        for (int v = 7; v <= PF_GPU_KERNEL_VERSIONS; v++)
            run_ok_vt(4, lens, 8, 1, 128, 16, PF_GPU_BF16, v, tiles[t]);
}

Test(gpu, block_sizes)
{
    int lens[] = {1, 7, 8, 9, 255, 256, 300};
    /* 10: not a multiple of 4, so v7/v8 walk the table per row, not per 4 rows */
    const int bs[] = {8, 10, 24, 32, 128, 256};
    for (int i = 0; i < 6; i++)
        run_ok(7, lens, 4, 2, 64, bs[i], PF_GPU_BF16);
    /* D = 128 at 8-token pages: version 18's 16-token tile lies in two
     * pages (a walk for each half), and its rows are 2 a warp step, not 4 */
    for (int v = 12; v <= PF_GPU_KERNEL_VERSIONS; v++)
        run_ok_v(7, lens, 8, 2, 128, 8, PF_GPU_F16, v);
}

Test(gpu, split_kv_long_sequences)
{
    /* few sequences, long: the plan cuts them into chunks merged by LSE */
    int lens[] = {9000, 1, 4097};
    int cap = 9000;
    pf_gpu_bench_cfg cfg = {
        .num_seqs = 3, .seq_lens = lens, .naive_cap = cap, .num_q_heads = 8, .num_kv_heads = 2,
        .head_dim = 128, .block_size = 16, .dtype = PF_GPU_BF16, .iters = 2, .seed = 9,
        .shuffle_seed = 4, .tolerance = 1e-3, .ref_all_heads = 1, .measure_bw = 0,
    };
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        pf_gpu_bench_result res;
        char err[300] = "";
        cfg.version = v;
        cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
        cr_assert_gt(res.splits, 1);
        cr_assert(res.pass, "v%d: %s", v, res.failure);
        cr_assert(pf_gpu_version_exact(v) ? res.max_diff_shuffled == 0.0
                                          : res.max_diff_shuffled <= nondet_tol(&cfg));
    }
}

/* More chunks than the in-place merge loads at once (kMergeBatch, 8, in
 * gpu/kernels/v2.cuh): its later batches rescale the running sums to a new max.
 * 20 chunks of 464 tokens for 9000, 9 for 4097, one for 1; every version
 * that merges through the workspace (not v9, v10 or v31, at most 8 in a cluster),
 * fp16 and bf16, checked against the CPU reference and paged = naive. */
Test(gpu, split_kv_more_chunks_than_one_merge_batch)
{
    int lens[] = {9000, 1, 4097};
    pf_gpu_bench_cfg cfg = {
        .num_seqs = 3, .seq_lens = lens, .naive_cap = 9000, .num_q_heads = 8, .num_kv_heads = 2,
        .head_dim = 128, .block_size = 16, .dtype = PF_GPU_BF16, .iters = 1, .seed = 13,
        .shuffle_seed = 4, .tolerance = 1e-3, .ref_all_heads = 1, .measure_bw = 0, .splits = 20,
    };
    for (int v = 5; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        if (pf_gpu_version_cluster(v))
            continue;
        for (int d = 0; d < 2; d++) {
            pf_gpu_bench_result res;
            char err[300] = "";
            cfg.version = v;
            cfg.dtype = d ? PF_GPU_F16 : PF_GPU_BF16;
            cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "v%d: %s", v, err);
            cr_assert_eq(res.splits, 20, "v%d: %d chunks", v, res.splits);
            cr_assert(res.pass, "v%d %s: %s", v, pf_gpu_dtype_name(cfg.dtype), res.failure);
            cr_assert(pf_gpu_version_exact(v) ? res.max_diff_shuffled == 0.0
                                              : res.max_diff_shuffled <= nondet_tol(&cfg));
        }
    }
}

/* Chunks of 8192 tokens, 512 pages at 16 tokens: the whole table cache
 * (PF_GPU_CHUNK_MAX_PAGES) and the cap since the thirty-second session.
 * 16384 tokens in 2 chunks, 8200 in 2 (the second of 8 tokens), 1 in one;
 * every version that is not a cluster's (those keep 4096-token chunks and
 * refuse the cut), bf16, against the CPU reference and paged = naive. */
Test(gpu, split_kv_chunks_of_the_whole_table_cache)
{
    int lens[] = {16384, 1, 8200};
    pf_gpu_bench_cfg cfg = {
        .num_seqs = 3, .seq_lens = lens, .naive_cap = 16384, .num_q_heads = 8,
        .num_kv_heads = 2, .head_dim = 128, .block_size = 16, .dtype = PF_GPU_BF16, .iters = 1,
        .seed = 17, .shuffle_seed = 5, .tolerance = 1e-3, .ref_all_heads = 1, .measure_bw = 0,
        .splits = 2,
    };
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        pf_gpu_bench_result res;
        char err[300] = "";
        cfg.version = v;
        const int rc = pf_gpu_bench_run(&cfg, &res, err, sizeof err);
        if (pf_gpu_version_cluster(v)) {
            cr_assert_neq(rc, PF_OK, "v%d: a cluster's chunks stop at 4096 tokens", v);
            continue;
        }
        cr_assert_eq(rc, PF_OK, "v%d: %s", v, err);
        cr_assert_eq(res.chunk_tokens, 8192, "v%d: chunk %d", v, res.chunk_tokens);
        cr_assert(res.pass, "v%d: %s", v, res.failure);
        cr_assert(pf_gpu_version_exact(v) ? res.max_diff_shuffled == 0.0
                                          : res.max_diff_shuffled <= nondet_tol(&cfg));
    }
}

/* The block timeline (bench --timeline): a record for every block of the
 * launch grid (the work list's units, or every chunk of a cluster launch),
 * consistent with itself; the traced launch's output is the checked one
 * (the runner fails the run otherwise). Versions before 7 record none. */
Test(gpu, block_timeline_records_every_block)
{
    int lens[] = {9000, 1, 4097};
    pf_gpu_bench_cfg cfg = {
        .num_seqs = 3, .seq_lens = lens, .naive_cap = 9000, .num_q_heads = 8, .num_kv_heads = 2,
        .head_dim = 128, .block_size = 16, .dtype = PF_GPU_BF16, .iters = 1, .seed = 5,
        .shuffle_seed = 6, .tolerance = 1e-3, .ref_all_heads = 1, .measure_bw = 0,
        .timeline = 1,
    };
    for (int v = PF_GPU_TRACE_MIN_VERSION; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        /* 2 KV heads, the group of 4 in one tile: 2 blocks a chunk, or one
         * serving both (version 14) */
        const int per = pf_gpu_version_heads(v, cfg.dtype), htiles = (2 + per - 1) / per;
        pf_gpu_bench_result res;
        char err[300] = "";
        cfg.version = v;
        cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "v%d: %s", v, err);
        cr_assert(res.pass, "v%d: %s", v, res.failure);
        cr_assert(res.have_timeline);
        const pf_gpu_timeline *t = &res.timeline;
        /* v11: one wave at most (this case has fewer items than one) */
        const int want = res.units ? res.units * htiles : res.splits * htiles * 3;
        cr_assert_eq(t->blocks, want, "v%d: %d blocks recorded, %d launched", v, t->blocks, want);
        cr_assert_geq(t->sms, 1);
        cr_assert_leq(t->sms, t->blocks);
        cr_assert_gt(t->ready_us, 0.0, "v%d: blocks with tokens saw their first tile", v);
        cr_assert_gt(t->stream_us, 0.0);
        cr_assert_leq(t->run_us, t->span_us);
        cr_assert_leq(t->first_end_us, t->median_end_us);
        cr_assert_leq(t->median_end_us, t->span_us);
        cr_assert_leq(t->last_start_us, t->span_us);
        cr_assert(t->sm_busy > 0.0 && t->sm_busy <= 1.0, "v%d: sm_busy %g", v, t->sm_busy);
    }
    pf_gpu_bench_result res;
    char err[300] = "";
    /* v11 with more items than one wave holds: a record for each of its
     * (persistent) blocks, fewer than the items */
    enum { MANY = 2000 };
    static int many[MANY];
    for (int i = 0; i < MANY; i++)
        many[i] = 20 + i % 7;
    pf_gpu_bench_cfg mc = cfg;
    mc.num_seqs = MANY;
    mc.seq_lens = many;
    mc.naive_cap = 32;
    mc.version = 11;
    cr_assert_eq(pf_gpu_bench_run(&mc, &res, err, sizeof err), PF_OK, "%s", err);
    cr_assert(res.pass, "%s", res.failure);
    cr_assert(res.have_timeline);
    cr_assert_gt(res.timeline.blocks, 0);
    cr_assert_lt(res.timeline.blocks, res.units * 2, "%d blocks for %d items",
                 res.timeline.blocks, res.units * 2);
    cfg.version = PF_GPU_TRACE_MIN_VERSION - 1;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "timeline"), "%s", err);
}

/* --layers: the changing-batch step loop runs that many runs of a plan
 * before the next (a smaller model's layers), and says so. */
Test(gpu, changing_batch_steps_run_the_layers_given)
{
    int lens[30];
    for (int i = 0; i < 30; i++)
        lens[i] = 40 + 13 * i;
    pf_gpu_bench_cfg cfg = {
        .num_seqs = 30, .seq_lens = lens, .naive_cap = 480, .num_q_heads = 8, .num_kv_heads = 2,
        .head_dim = 128, .block_size = 16, .dtype = PF_GPU_BF16, .iters = 1, .tolerance = 1e-2,
        .layers = 8,
    };
    pf_gpu_bench_result res;
    char err[300] = "";
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
    cr_assert(res.pass, "%s", res.failure);
    cr_assert_eq(res.churn_plans, 24);
    cr_assert_eq(res.churn_layers, 8);
    cr_assert_gt(res.churn_step.us_per_run, 0.0);
    cr_assert_gt(res.churn_step.direct_us, 0.0);
    /* steps of 8 runs: a graph evicted after them did not pay for its
     * making, so once the warm rounds have marked them the timed steps
     * make none (pf_gpu_graph_lru's payback) */
    cr_assert_eq(res.churn_step.graph_makes, 0, "%d graphs over 20 steps of 8 runs",
                 res.churn_step.graph_makes);
}

Test(gpu, runner_refuses_bad_input)
{
    int lens[] = {10, 0};
    char err[300] = "";
    pf_gpu_bench_result res;
    pf_gpu_bench_cfg cfg = {
        .num_seqs = 2, .seq_lens = lens, .naive_cap = 10, .num_q_heads = 4, .num_kv_heads = 2,
        .head_dim = 64, .block_size = 16, .dtype = PF_GPU_F32, .iters = 1, .tolerance = 1e-3,
    };
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "length") != NULL, "%s", err);
    lens[1] = 20; /* longer than the naive capacity */
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cfg.naive_cap = 20;
    cfg.head_dim = 80;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "head dim") != NULL, "%s", err);
    /* an element type out of the enum: refused before any buffer is sized
     * by it (it overflowed the host copies: 2 bytes sized, 4 stored) */
    cfg.head_dim = 64;
    cfg.dtype = (pf_gpu_dtype)7;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "element type 7") != NULL, "%s", err);
    /* a step of one run is the every-run loop; the flag's range is 2..1000 */
    cfg.dtype = PF_GPU_F32;
    cfg.layers = 1;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "layers 1") != NULL, "%s", err);
    cfg.layers = PF_GPU_BENCH_MAX_LAYERS + 1;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cfg.layers = 0;
    const int tab[2] = {0, 1};
    pf_gpu_layout lay = {.num_seqs = 2, .seq_lens = lens, .block_tables = tab,
                         .max_blocks_per_seq = 1, .pool_frames = 2, .block_size = 16};
    pf_gpu_head_shape hs = {.num_q_heads = 4, .num_kv_heads = 2, .head_dim = 64,
                            .dtype = (pf_gpu_dtype)-1};
    pf_gpu_pass_result pr;
    cr_assert_eq(pf_gpu_run_layout(&lay, &hs, &pr, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "element type -1") != NULL, "%s", err);
}

/* Versions 19, 20 and 25 are 12, 18 and 13 with bf16's weights fed to P V
 * as one term: in fp16 they run their base's arithmetic (bitwise the same
 * outputs), in bf16 their own (other outputs, within the allowance for
 * one-term weights: res.pass). Each runs beside its base in one process
 * (--compare), whose naive output max_diff_base is measured against. */
Test(gpu, one_term_weights)
{
    int lens[] = {1, 17, 300, 700};
    const pf_gpu_dtype dts[] = {PF_GPU_F16, PF_GPU_BF16};
    const int pairs[][2] = {{12, 19}, {18, 20}, {13, 25}};
    for (int t = 0; t < 2; t++)
        for (int p = 0; p < 3; p++) {
            pf_gpu_bench_cfg cfg = {
                .num_seqs = 4, .seq_lens = lens, .naive_cap = 700, .num_q_heads = 8,
                .num_kv_heads = 2, .head_dim = 128, .block_size = 16, .dtype = dts[t],
                .iters = 2, .seed = 5, .shuffle_seed = 3, .tolerance = 1e-3,
                .ref_all_heads = 1, .version = pairs[p][0], .num_rivals = 1,
                .rivals = {pairs[p][1]},
            };
            pf_gpu_bench_result res;
            char err[300] = "";
            const char *dt = pf_gpu_dtype_name(dts[t]);
            cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
            cr_assert(res.pass, "%s, v%d: %s", dt, pairs[p][1], res.failure);
            const pf_gpu_bench_rival *v = &res.rival[0];
            cr_assert_eq(v->version, pairs[p][1]);
            cr_assert_eq(v->chunk_tokens, res.chunk_tokens, "%s: the base's plan", dt);
            if (dts[t] == PF_GPU_F16)
                cr_assert_eq(v->max_diff_base, 0.0, "fp16: v%d's arithmetic, bitwise",
                             pairs[p][0]);
            else
                cr_assert_gt(v->max_diff_base, 0.0, "bf16: v%d's weights as one term",
                             pairs[p][1]);
            cr_assert_eq(v->max_diff_shuffled, 0.0);
        }
}

/* Versions 21-24 and 26-30 change how a tile is copied or addressed, not its
 * arithmetic: 21 is version 19 with K and V copied as two groups and each
 * half of a stage refilled as soon as it is read, 22 is 21 with 3 stages,
 * 23 is 19 with 3 stages, 24 is version 20 with 21's two groups, 26 is 25
 * with padded rows in shared memory and the stages unrolled, 27 is 26 with
 * Q held in registers, 28 and 29 are 26 and 27 with 25's swizzled rows and
 * their lane addresses taken once, 30 is 29 with P's mma pairs built once
 * a tile. So their outputs are bitwise their base's (19 for 21-23, 20 for
 * 24, 25 for 26-30),
 * in both element types, at block sizes whose tiles are copied at fixed
 * offsets (8: a page an 8-token tile, two a 16-token one; 16) or row by row
 * (10: tiles straddle pages), with sequences that end inside a tile (17,
 * 300: their tails go row by row too) and one of one token. */
Test(gpu, copy_and_address_changes_keep_outputs)
{
    int lens[] = {1, 17, 300, 700};
    const pf_gpu_dtype dts[] = {PF_GPU_F16, PF_GPU_BF16};
    const int blocks[] = {8, 10, 16};
    const struct {
        int base, n, rivals[PF_GPU_BENCH_MAX_RIVALS];
    } sets[] = {{19, 3, {21, 22, 23}}, {20, 1, {24}}, {25, 3, {26, 27, 28}}, {25, 2, {29, 30}}};
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
        for (int t = 0; t < 2; t++)
            for (int b = 0; b < 3; b++) {
                pf_gpu_bench_cfg cfg = {
                    .num_seqs = 4, .seq_lens = lens, .naive_cap = 700, .num_q_heads = 8,
                    .num_kv_heads = 2, .head_dim = 128, .block_size = blocks[b],
                    .dtype = dts[t], .iters = 2, .seed = 5, .shuffle_seed = 3,
                    .tolerance = 1e-3, .ref_all_heads = 1, .version = sets[k].base,
                    .num_rivals = sets[k].n, .check_only = 1,
                };
                for (int r = 0; r < sets[k].n; r++)
                    cfg.rivals[r] = sets[k].rivals[r];
                pf_gpu_bench_result res;
                char err[300] = "";
                const char *dt = pf_gpu_dtype_name(dts[t]);
                cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
                cr_assert(res.pass, "%s, B %d, base v%d: %s", dt, blocks[b], sets[k].base,
                          res.failure);
                for (int r = 0; r < sets[k].n; r++) {
                    const pf_gpu_bench_rival *v = &res.rival[r];
                    cr_assert_eq(v->version, sets[k].rivals[r]);
                    cr_assert_eq(v->max_diff_base, 0.0, "%s, B %d: v%d's outputs are v%d's", dt,
                                 blocks[b], v->version, sets[k].base);
                    cr_assert_eq(v->max_diff_ordered, 0.0);
                    cr_assert_eq(v->max_diff_shuffled, 0.0);
                }
            }
}

/* Versions 31 and 32 change how version 29 merges a split sequence's
 * chunks, not the arithmetic: 31 launches them as one thread-block cluster
 * and merges through distributed shared memory, 32 merges through the
 * workspace as 29 does but counts with one acquire-release atomic instead
 * of fences. The cluster's merge sums in the order of 29's and divides as
 * it does (gpu/kernels/v2.cuh, attn_finish_cluster), so both give bitwise
 * 29's outputs: here with 8 chunks a sequence, some sequences filling all
 * 8, some fewer (31's empty ranks join the barriers with weight 0), one of
 * one token; fp16 and bf16; pages of 8, 10 (chunks and tiles straddle
 * pages) and 16 tokens. */
Test(gpu, merge_changes_keep_outputs)
{
    int lens[] = {9000, 1, 4097, 300};
    const pf_gpu_dtype dts[] = {PF_GPU_F16, PF_GPU_BF16};
    const int blocks[] = {8, 10, 16};
    for (int t = 0; t < 2; t++)
        for (int b = 0; b < 3; b++) {
            pf_gpu_bench_cfg cfg = {
                .num_seqs = 4, .seq_lens = lens, .naive_cap = 9000, .num_q_heads = 8,
                .num_kv_heads = 2, .head_dim = 128, .block_size = blocks[b], .dtype = dts[t],
                .iters = 1, .seed = 11, .shuffle_seed = 3, .tolerance = 1e-3,
                .ref_all_heads = 1, .version = 29, .num_rivals = 2, .rivals = {31, 32},
                .splits = PF_GPU_CLUSTER_MAX, .check_only = 1,
            };
            pf_gpu_bench_result res;
            char err[300] = "";
            const char *dt = pf_gpu_dtype_name(dts[t]);
            cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
            cr_assert(res.pass, "%s, B %d: %s", dt, blocks[b], res.failure);
            cr_assert_eq(res.splits, PF_GPU_CLUSTER_MAX);
            cr_assert_gt(res.units, 0, "v29 runs from its work list");
            for (int r = 0; r < 2; r++) {
                const pf_gpu_bench_rival *v = &res.rival[r];
                cr_assert_eq(v->version, cfg.rivals[r]);
                cr_assert_eq(v->splits, PF_GPU_CLUSTER_MAX, "%s, B %d", dt, blocks[b]);
                cr_assert_eq(v->units > 0, v->version == 32, "only 31 runs in grid order");
                cr_assert_eq(v->max_diff_base, 0.0, "%s, B %d: v%d's outputs are v29's", dt,
                             blocks[b], v->version);
                cr_assert_eq(v->max_diff_ordered, 0.0);
                cr_assert_eq(v->max_diff_shuffled, 0.0);
            }
        }
}

/* Version 33 streams several whole sequences a block, a warp each. The
 * planner packs only when the blocks outnumber the slots, so the packs
 * here are forced (pf_gpu__plan_set_pack): 4 (a sequence a warp) and 8
 * (two, one after the other), 13 sequences (the last pack short), of one
 * token, under a tile of 8, a partial last tile, and long ones, at head
 * tiles of 1, 4 and 8 query heads, D 64 and 128, pages of 8, 10 and 16
 * tokens. Each version's naive pass is checked against the CPU reference
 * (res.pass), its paged passes against its naive bitwise. */
Test(gpu, pack_checks_against_the_reference)
{
    int lens[] = {500, 1, 31, 32, 33, 317, 8, 64, 499, 100, 2, 450, 3};
    const struct {
        int hq, hkv, D, B;
        pf_gpu_dtype dt;
    } cs[] = {
        {8, 2, 128, 16, PF_GPU_BF16}, {16, 2, 128, 10, PF_GPU_F16}, {4, 4, 64, 8, PF_GPU_BF16},
        {32, 8, 128, 16, PF_GPU_F16},
    };
    const int packs[] = {4, 8};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int k = 0; k < 2; k++) {
            pf_gpu_bench_cfg cfg = {
                .num_seqs = 13, .seq_lens = lens, .naive_cap = 512, .num_q_heads = cs[i].hq,
                .num_kv_heads = cs[i].hkv, .head_dim = cs[i].D, .block_size = cs[i].B,
                .dtype = cs[i].dt, .iters = 1, .seed = 17, .shuffle_seed = 3, .tolerance = 1e-3,
                .ref_all_heads = 1, .version = 29, .num_rivals = 1, .rivals = {33},
                .splits = 1, .pack = packs[k], .check_only = 1,
            };
            pf_gpu_bench_result res;
            char err[300] = "";
            cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
            cr_assert(res.pass, "case %zu pack %d: %s", i, packs[k], res.failure);
            cr_assert_eq(res.pack, 0, "version 29 does not pack");
            const pf_gpu_bench_rival *v = &res.rival[0];
            cr_assert_eq(v->version, 33);
            cr_assert_eq(v->pack, packs[k], "case %zu", i);
            cr_assert_eq(v->splits, 1);
            cr_assert_eq(v->max_diff_ordered, 0.0);
            cr_assert_eq(v->max_diff_shuffled, 0.0);
        }
}

/* --compare: more versions in one run. Each is planned, checked and timed
 * on its own (its fields filled, its plan its own), and the first
 * version's figures are those of a run without rivals: its outputs are
 * bitwise the same, so are its errors. A rival that breaks a rule the
 * runner enforces (grid order on v11) or out of range is refused. */
Test(gpu, runner_compares_versions)
{
    int lens[] = {1, 17, 300, 700};
    pf_gpu_bench_cfg cfg = {
        .num_seqs = 4, .seq_lens = lens, .naive_cap = 700, .num_q_heads = 8, .num_kv_heads = 2,
        .head_dim = 128, .block_size = 16, .dtype = PF_GPU_BF16, .iters = 2, .seed = 5,
        .shuffle_seed = 3, .tolerance = 1e-3, .ref_all_heads = 1, .version = 12,
    };
    pf_gpu_bench_result alone, res;
    char err[300] = "";
    cr_assert_eq(pf_gpu_bench_run(&cfg, &alone, err, sizeof err), PF_OK, "%s", err);
    cr_assert(alone.pass, "%s", alone.failure);
    cr_assert_eq(alone.num_rivals, 0);
    cfg.num_rivals = 3;
    cfg.rivals[0] = 18;
    cfg.rivals[1] = 6;
    cfg.rivals[2] = 12; /* a repeat: the noise floor */
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
    cr_assert(res.pass, "%s", res.failure);
    cr_assert_eq(res.version, 12);
    cr_assert_eq(res.num_rivals, 3);
    cr_assert_eq(res.max_err_ref, alone.max_err_ref);
    cr_assert_eq(res.max_diff_shuffled, 0.0);
    for (int k = 0; k < 3; k++) {
        const pf_gpu_bench_rival *v = &res.rival[k];
        cr_assert_eq(v->version, cfg.rivals[k]);
        cr_assert_gt(v->chunk_tokens, 0);
        cr_assert_gt(v->naive.median_ms, 0.0);
        cr_assert_gt(v->ordered.median_ms, 0.0);
        cr_assert_gt(v->shuffled.median_ms, 0.0, "rival %d (v%d) timed", k, v->version);
        /* checked against the reference (res.pass says within bounds):
         * bf16's rounding leaves an error, so a zero would mean no check */
        cr_assert_gt(v->max_err_ref, 0.0, "v%d checked", v->version);
        cr_assert_eq(v->max_diff_ordered, 0.0, "v%d: same chunks, same sums", v->version);
        cr_assert_eq(v->max_diff_shuffled, 0.0);
    }
    /* the repeat runs version 12's plan and kernel: its error is the same */
    cr_assert_eq(res.rival[2].max_err_ref, res.max_err_ref);
    cr_assert_eq(res.rival[2].max_diff_base, 0.0, "the same outputs as version 12's");
    cr_assert_eq(res.rival[2].chunk_tokens, res.chunk_tokens);
    cfg.num_rivals = PF_GPU_BENCH_MAX_RIVALS + 1;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "compare"), "%s", err);
    cfg.num_rivals = 1;
    cfg.rivals[0] = PF_GPU_KERNEL_VERSIONS + 1;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "kernel version"), "%s", err);
    cfg.rivals[0] = 11;
    cfg.grid_order = 1;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "version 11"), "%s", err);
    /* a forcing flag one version's plan refuses names that version: 15
     * chunks of 48 tokens suit v12, not v9's cluster of at most 8 */
    cfg.grid_order = 0;
    cfg.rivals[0] = 9;
    cfg.splits = 16;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_ARG);
    cr_assert(strstr(err, "version 9's --splits"), "%s", err);
    /* ordered frames only: two passes a version, numbered as with three */
    cfg.splits = 0;
    cfg.shuffle_seed = 0;
    cfg.num_rivals = 2;
    cfg.rivals[0] = 18;
    cfg.rivals[1] = 7;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
    cr_assert(res.pass, "%s", res.failure);
    cr_assert(!res.have_shuffled);
    cr_assert_eq(res.num_rivals, 2);
    for (int k = 0; k < 2; k++) {
        const pf_gpu_bench_rival *v = &res.rival[k];
        cr_assert_eq(v->version, cfg.rivals[k]);
        cr_assert(v->naive.median_ms > 0.0 && v->ordered.median_ms > 0.0, "v%d", v->version);
        cr_assert_eq(v->shuffled.median_ms, 0.0, "v%d: no second layout", v->version);
        cr_assert_gt(v->max_err_ref, 0.0);
    }
    cr_assert_eq(res.shuffled.median_ms, 0.0);
}

/* FlashInfer's pool layout in the runner (a page's K and V side by side,
 * the tables naming frame 2 p, V's pool a frame into K's; the public
 * calls are checked on it in public_api_on_device_pointers): each kernel
 * family reads it through its own walk (v1's shift, attn_v2, attn_v7 and
 * its clusters, the work stealing of v11, attn_mma with 8- and 16-token
 * tiles and head tiles (v14), and the copy engine's tensor maps (v15, v16,
 * whose frame is a coordinate; where the encoder refuses, v12 runs)),
 * checked as the split pools are (the pool read-back walks the doubled
 * tables, so K and V in the wrong halves fail), with the naive pass's
 * output the same on both layouts. */
Test(gpu, interleaved_pool)
{
    int lens[] = {1, 7, 8, 9, 300, 1000};
    static const struct {
        int version, B, hq, hkv, D;
        pf_gpu_dtype dt;
    } cases[] = {
        {12, 16, 8, 2, 128, PF_GPU_BF16}, {12, 8, 8, 2, 128, PF_GPU_BF16},
        {18, 16, 8, 2, 128, PF_GPU_F16},  {18, 8, 8, 2, 128, PF_GPU_BF16},
        {7, 32, 4, 4, 64, PF_GPU_F32},    {1, 16, 4, 1, 64, PF_GPU_F16},
        {0, 24, 8, 2, 128, PF_GPU_BF16},  {2, 16, 8, 2, 64, PF_GPU_BF16},
        {6, 16, 8, 2, 128, PF_GPU_BF16},  {9, 16, 8, 2, 128, PF_GPU_F16},
        {11, 16, 8, 2, 128, PF_GPU_BF16}, {14, 16, 8, 2, 128, PF_GPU_BF16},
        {15, 8, 8, 2, 128, PF_GPU_BF16},  {16, 16, 8, 2, 128, PF_GPU_F16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_gpu_bench_cfg cfg = {
            .num_seqs = 6, .seq_lens = lens, .naive_cap = 1000, .num_q_heads = cases[i].hq,
            .num_kv_heads = cases[i].hkv, .head_dim = cases[i].D, .block_size = cases[i].B,
            .dtype = cases[i].dt, .iters = 2, .seed = 9, .shuffle_seed = 4, .tolerance = 1e-3,
            .ref_all_heads = 1, .version = cases[i].version,
        };
        pf_gpu_bench_result split, inter;
        char err[300] = "";
        cr_assert_eq(pf_gpu_bench_run(&cfg, &split, err, sizeof err), PF_OK, "%s", err);
        cfg.kv_interleaved = 1;
        cr_assert_eq(pf_gpu_bench_run(&cfg, &inter, err, sizeof err), PF_OK, "case %zu: %s", i,
                     err);
        cr_assert(inter.pass, "case %zu (v%d, B %d): %s", i, cases[i].version, cases[i].B,
                  inter.failure);
        cr_assert(inter.readback_ok);
        cr_assert(inter.kv_interleaved && !split.kv_interleaved, "case %zu: the layout ran", i);
        if (pf_gpu_version_exact(inter.version)) {
            cr_assert_eq(inter.max_err_ref, split.max_err_ref, "case %zu: the same naive pass", i);
            cr_assert_eq(inter.max_diff_ordered, 0.0, "case %zu", i);
            cr_assert_eq(inter.max_diff_shuffled, 0.0, "case %zu", i);
        }
        cr_assert_eq(inter.paged_reserved, split.paged_reserved, "the same frames in use");
    }
}

/* The public API on device pointers, checked against core's CPU reference:
 * K/V appended through a shuffled block table in two steps (prompt, then
 * one decode token), paged and naive attention, read back. fp32 so the
 * float reference applies with a tight tolerance. */
#define CK(x) cr_assert_eq((x), PF_OK, "%s", #x)

/* Append every sequence's K/V through the public API into the pools
 * (kp, vp) the device tables dtab name: each prompt (all but the last
 * token) on its own, then one decode token for all. Host rows are
 * token-major [s][cap][hkv][d]; dk, dv, dkn, dvn are device staging. */
static void append_through_api(pf_gpu_attn_shape sh, int S, const int *lens, int cap, int maxb,
                               const float *k_all, const float *v_all, float *dk, float *dv,
                               float *dkn, float *dvn, int *dlens, const int *dtab, void *kp,
                               void *vp)
{
    const int HKV = sh.num_kv_heads, D = sh.head_dim;
    sh.num_seqs = 1;
    for (int s = 0; s < S; s++) {
        const int prompt = lens[s] - 1;
        if (prompt == 0)
            continue;
        CK(pf_gpu_memcpy(dlens + s, &prompt, sizeof(int), PF_GPU_H2D));
        CK(pf_gpu_memcpy(dk, k_all + (size_t)s * cap * HKV * D, sizeof(float) * prompt * HKV * D,
                         PF_GPU_H2D));
        CK(pf_gpu_memcpy(dv, v_all + (size_t)s * cap * HKV * D, sizeof(float) * prompt * HKV * D,
                         PF_GPU_H2D));
        cr_assert_eq(
            pf_gpu_append_kv(&sh, dk, dv, prompt, dtab + s * maxb, dlens + s, kp, vp, NULL), PF_OK);
    }
    for (int s = 0; s < S; s++) {
        const float *src_k = k_all + (((size_t)s * cap + lens[s] - 1) * HKV) * D;
        const float *src_v = v_all + (((size_t)s * cap + lens[s] - 1) * HKV) * D;
        CK(pf_gpu_memcpy(dkn + (size_t)s * HKV * D, src_k, sizeof(float) * HKV * D, PF_GPU_H2D));
        CK(pf_gpu_memcpy(dvn + (size_t)s * HKV * D, src_v, sizeof(float) * HKV * D, PF_GPU_H2D));
    }
    CK(pf_gpu_memcpy(dlens, lens, sizeof(int) * S, PF_GPU_H2D));
    sh.num_seqs = S;
    cr_assert_eq(pf_gpu_append_kv(&sh, dkn, dvn, 1, dtab, dlens, kp, vp, NULL), PF_OK);
}

Test(gpu, public_api_on_device_pointers)
{
    enum { S = 3, HQ = 4, HKV = 2, D = 64, B = 16, MAXB = 5, FRAMES = 16 };
    const int lens[S] = {1, 33, 80}; /* 80 = 5 blocks */
    int tables[S * MAXB];
    /* frames handed out in a scrambled order */
    const int order[FRAMES] = {7, 2, 3, 11, 0, 14, 5, 9, 1, 12, 6, 15, 4, 10, 8, 13};
    int next = 0;
    for (int s = 0; s < S; s++)
        for (int b = 0; b < MAXB; b++)
            tables[s * MAXB + b] = b < pf_page_blocks_for(lens[s], B) ? order[next++] : 0;

    /* host data: k_all[s][t][h][d] token-major, q[s][hq][d] */
    const int cap = 80;
    float *q = calloc(S * HQ * D, sizeof(float));
    float *k_all = calloc((size_t)S * cap * HKV * D, sizeof(float));
    float *v_all = calloc((size_t)S * cap * HKV * D, sizeof(float));
    float *naive_k = calloc((size_t)S * HKV * cap * D, sizeof(float));
    float *naive_v = calloc((size_t)S * HKV * cap * D, sizeof(float));
    float *out_p = calloc(S * HQ * D, sizeof(float));
    float *out_n = calloc(S * HQ * D, sizeof(float));
    cr_assert(q && k_all && v_all && naive_k && naive_v && out_p && out_n);
    pf_rng r;
    pf_rng_seed(&r, 77);
    for (int i = 0; i < S * HQ * D; i++)
        q[i] = pf_rng_symf(&r);
    for (int s = 0; s < S; s++)
        for (int t = 0; t < lens[s]; t++)
            for (int h = 0; h < HKV; h++)
                for (int d = 0; d < D; d++) {
                    size_t i = (((size_t)s * cap + t) * HKV + h) * D + d;
                    k_all[i] = pf_rng_symf(&r);
                    v_all[i] = pf_rng_symf(&r);
                    size_t j = (size_t)s * HKV * cap * D + pf_page_contig_index(t, h, cap, D) + d;
                    naive_k[j] = k_all[i];
                    naive_v[j] = v_all[i];
                }

    float *dq, *dk, *dv, *dkp, *dvp, *dnk, *dnv, *dop, *don, *dkn, *dvn;
    int *dtab, *dlens;
    const size_t pool_elems = (size_t)FRAMES * HKV * B * D;
    CK(pf_gpu_malloc((void **)&dq, sizeof(float) * S * HQ * D));
    CK(pf_gpu_malloc((void **)&dkp, sizeof(float) * pool_elems));
    CK(pf_gpu_malloc((void **)&dvp, sizeof(float) * pool_elems));
    CK(pf_gpu_malloc((void **)&dnk, sizeof(float) * S * HKV * cap * D));
    CK(pf_gpu_malloc((void **)&dnv, sizeof(float) * S * HKV * cap * D));
    CK(pf_gpu_malloc((void **)&dop, sizeof(float) * S * HQ * D));
    CK(pf_gpu_malloc((void **)&don, sizeof(float) * S * HQ * D));
    CK(pf_gpu_malloc((void **)&dk, sizeof(float) * S * cap * HKV * D));
    CK(pf_gpu_malloc((void **)&dv, sizeof(float) * S * cap * HKV * D));
    CK(pf_gpu_malloc((void **)&dkn, sizeof(float) * S * HKV * D));
    CK(pf_gpu_malloc((void **)&dvn, sizeof(float) * S * HKV * D));
    CK(pf_gpu_malloc((void **)&dtab, sizeof tables));
    CK(pf_gpu_malloc((void **)&dlens, sizeof(int) * S));
    CK(pf_gpu_memcpy(dq, q, sizeof(float) * S * HQ * D, PF_GPU_H2D));
    CK(pf_gpu_memcpy(dtab, tables, sizeof tables, PF_GPU_H2D));
    CK(pf_gpu_memcpy(dnk, naive_k, sizeof(float) * S * HKV * cap * D, PF_GPU_H2D));
    CK(pf_gpu_memcpy(dnv, naive_v, sizeof(float) * S * HKV * cap * D, PF_GPU_H2D));
    CK(pf_gpu_memset(dkp, 0xff, sizeof(float) * pool_elems)); /* NaN */
    CK(pf_gpu_memset(dvp, 0xff, sizeof(float) * pool_elems));
    CK(pf_gpu_memset(dop, 0xff, sizeof(float) * S * HQ * D));
    CK(pf_gpu_memset(don, 0xff, sizeof(float) * S * HQ * D));

    pf_gpu_attn_shape sh = {.num_seqs = S, .num_q_heads = HQ, .num_kv_heads = HKV, .head_dim = D,
                            .block_size = B, .max_blocks_per_seq = MAXB, .naive_cap = cap,
                            .dtype = PF_GPU_F32, .scale = 0.f};
    append_through_api(sh, S, lens, cap, MAXB, k_all, v_all, dk, dv, dkn, dvn, dlens, dtab, dkp,
                       dvp);
    cr_assert_eq(pf_gpu_paged_attention(&sh, dq, dkp, dvp, dtab, dlens, dop, NULL), PF_OK);
    cr_assert_eq(pf_gpu_naive_attention(&sh, dq, dnk, dnv, dlens, don, NULL), PF_OK);
    CK(pf_gpu_sync());
    CK(pf_gpu_memcpy(out_p, dop, sizeof(float) * S * HQ * D, PF_GPU_D2H));
    CK(pf_gpu_memcpy(out_n, don, sizeof(float) * S * HQ * D, PF_GPU_D2H));

    /* the pool, read back and walked through the tables, is the data */
    float *pool_k = malloc(sizeof(float) * pool_elems);
    cr_assert(pool_k);
    CK(pf_gpu_memcpy(pool_k, dkp, sizeof(float) * pool_elems, PF_GPU_D2H));
    for (int s = 0; s < S; s++)
        for (int t = 0; t < lens[s]; t++)
            for (int h = 0; h < HKV; h++) {
                size_t pi = pf_page_kv_index(tables + s * MAXB, t, h, HKV, B, D);
                size_t i = (((size_t)s * cap + t) * HKV + h) * D;
                cr_assert_eq(memcmp(pool_k + pi, k_all + i, sizeof(float) * D), 0,
                             "seq %d token %d head %d", s, t, h);
            }
    for (int s = 0; s < S; s++) {
        pf_attn_shape ash = {HQ, HKV, D, 0.f};
        double ref[HQ * D];
        cr_assert_eq(pf_attn_ref_contig_f64(&ash, q + (size_t)s * HQ * D,
                                            naive_k + (size_t)s * HKV * cap * D,
                                            naive_v + (size_t)s * HKV * cap * D, lens[s], cap, ref),
                     PF_OK);
        for (int i = 0; i < HQ * D; i++) {
            float p = out_p[s * HQ * D + i], n = out_n[s * HQ * D + i];
            cr_assert(isfinite(p) && isfinite(n), "seq %d elem %d: %g %g", s, i, p, n);
            cr_assert_lt(fabs(p - ref[i]), 1e-5, "seq %d elem %d: paged %g ref %g", s, i, p, ref[i]);
            cr_assert_lt(fabs(n - ref[i]), 1e-5, "seq %d elem %d: naive %g ref %g", s, i, n, ref[i]);
        }
    }
    /* FlashInfer's layout as gpu.h's *Layouts* gives it to callers: one
     * pool, page p's K at frame 2 p and its V one frame later (v_pool =
     * k_pool + one frame, the tables naming 2 p). Appended and read through
     * the same calls, the output is bitwise the split pools', and the
     * buffer holds each page's K and V side by side. */
    const size_t frame = (size_t)HKV * B * D;
    float *dkv, *doi;
    int *dtab2, tables2[S * MAXB];
    for (int i = 0; i < S * MAXB; i++)
        tables2[i] = 2 * tables[i];
    CK(pf_gpu_malloc((void **)&dkv, sizeof(float) * 2 * pool_elems));
    CK(pf_gpu_malloc((void **)&doi, sizeof(float) * S * HQ * D));
    CK(pf_gpu_malloc((void **)&dtab2, sizeof tables2));
    CK(pf_gpu_memcpy(dtab2, tables2, sizeof tables2, PF_GPU_H2D));
    CK(pf_gpu_memset(dkv, 0xff, sizeof(float) * 2 * pool_elems));
    CK(pf_gpu_memset(doi, 0xff, sizeof(float) * S * HQ * D));
    append_through_api(sh, S, lens, cap, MAXB, k_all, v_all, dk, dv, dkn, dvn, dlens, dtab2, dkv,
                       dkv + frame);
    cr_assert_eq(pf_gpu_paged_attention(&sh, dq, dkv, dkv + frame, dtab2, dlens, doi, NULL),
                 PF_OK);
    CK(pf_gpu_sync());
    float *out_i = malloc(sizeof(float) * S * HQ * D), *kv = malloc(sizeof(float) * 2 * pool_elems);
    cr_assert(out_i && kv);
    CK(pf_gpu_memcpy(out_i, doi, sizeof(float) * S * HQ * D, PF_GPU_D2H));
    cr_assert_eq(memcmp(out_i, out_p, sizeof(float) * S * HQ * D), 0, "interleaved = split");
    CK(pf_gpu_memcpy(kv, dkv, sizeof(float) * 2 * pool_elems, PF_GPU_D2H));
    for (int s = 0; s < S; s++)
        for (int t = 0; t < lens[s]; t++)
            for (int h = 0; h < HKV; h++) {
                const size_t pk = pf_page_kv_index(tables2 + s * MAXB, t, h, HKV, B, D);
                const size_t i = (((size_t)s * cap + t) * HKV + h) * D;
                cr_assert_eq(memcmp(kv + pk, k_all + i, sizeof(float) * D), 0, "K %d %d", s, t);
                cr_assert_eq(memcmp(kv + frame + pk, v_all + i, sizeof(float) * D), 0, "V %d %d",
                             s, t);
            }
    free(out_i);
    free(kv);
    CK(pf_gpu_free(dkv));
    CK(pf_gpu_free(doi));
    CK(pf_gpu_free(dtab2));
    /* a shape the kernels cannot serve is refused, not run */
    sh.head_dim = 80;
    cr_assert_eq(pf_gpu_paged_attention(&sh, dq, dkp, dvp, dtab, dlens, dop, NULL), PF_ERR_ARG);
    free(pool_k);
    free(q);
    free(k_all);
    free(v_all);
    free(naive_k);
    free(naive_v);
    free(out_p);
    free(out_n);
    void *ptrs[] = {dq, dk, dv, dkp, dvp, dnk, dnv, dop, don, dkn, dvn, dtab, dlens};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        CK(pf_gpu_free(ptrs[i]));
}

/* A small fp32 paged case on the device for the plan/run tests: pools filled
 * on the host in the pool layout through scattered tables, lengths as given
 * (<= 0 allowed), a CPU reference per sequence. */
enum { PS = 4, PHQ = 8, PHKV = 2, PD = 64, PB = 16, PMAXB = 20, PCAP = PMAXB * PB,
       PFRAMES = PS * PMAXB };
typedef struct {
    int lens[PS];              /* on the device                            */
    int host[PS];              /* given to the plan (= lens unless a test
                                  changes the device's)                     */
    int want[PS];              /* tokens the output must attend to         */
    float *q, *kc, *vc;        /* host: q, contiguous K/V [s][h][cap][d] */
    void *dq, *dk, *dv, *dout, *dws;
    int *dtab, *dlens;
    pf_gpu_attn_shape sh;
    int keep_ws;               /* 1: run on the workspace as the last run
                                  left it (no new one, no init)            */
} pcase;

static void pcase_make(pcase *c, const int *lens)
{
    memset(c, 0, sizeof *c);
    memcpy(c->lens, lens, sizeof c->lens);
    memcpy(c->host, lens, sizeof c->host);
    memcpy(c->want, lens, sizeof c->want);
    const size_t kv = (size_t)PS * PHKV * PCAP * PD, pool = (size_t)PFRAMES * PHKV * PB * PD;
    c->q = malloc(sizeof(float) * PS * PHQ * PD);
    c->kc = malloc(sizeof(float) * kv);
    c->vc = malloc(sizeof(float) * kv);
    float *kp = malloc(sizeof(float) * pool), *vp = malloc(sizeof(float) * pool);
    int tables[PS * PMAXB];
    cr_assert(c->q && c->kc && c->vc && kp && vp);
    pf_rng r;
    pf_rng_seed(&r, 1234);
    for (int i = 0; i < PS * PHQ * PD; i++)
        c->q[i] = pf_rng_symf(&r);
    for (size_t i = 0; i < kv; i++) {
        c->kc[i] = pf_rng_symf(&r);
        c->vc[i] = pf_rng_symf(&r);
    }
    for (size_t i = 0; i < pool; i++)
        kp[i] = vp[i] = NAN; /* a wrong frame shows up as NaN */
    for (int s = 0; s < PS; s++)
        for (int b = 0; b < PMAXB; b++)
            tables[s * PMAXB + b] = (s * PMAXB + b) * 37 % PFRAMES; /* scattered */
    for (int s = 0; s < PS; s++)
        for (int t = 0; t < PCAP; t++)
            for (int h = 0; h < PHKV; h++) {
                size_t pi = pf_page_kv_index(tables + s * PMAXB, t, h, PHKV, PB, PD);
                size_t ci = (size_t)s * PHKV * PCAP * PD + pf_page_contig_index(t, h, PCAP, PD);
                memcpy(kp + pi, c->kc + ci, sizeof(float) * PD);
                memcpy(vp + pi, c->vc + ci, sizeof(float) * PD);
            }
    CK(pf_gpu_malloc(&c->dq, sizeof(float) * PS * PHQ * PD));
    CK(pf_gpu_malloc(&c->dk, sizeof(float) * pool));
    CK(pf_gpu_malloc(&c->dv, sizeof(float) * pool));
    CK(pf_gpu_malloc(&c->dout, sizeof(float) * PS * PHQ * PD));
    CK(pf_gpu_malloc((void **)&c->dtab, sizeof tables));
    CK(pf_gpu_malloc((void **)&c->dlens, sizeof c->lens));
    CK(pf_gpu_memcpy(c->dq, c->q, sizeof(float) * PS * PHQ * PD, PF_GPU_H2D));
    CK(pf_gpu_memcpy(c->dk, kp, sizeof(float) * pool, PF_GPU_H2D));
    CK(pf_gpu_memcpy(c->dv, vp, sizeof(float) * pool, PF_GPU_H2D));
    CK(pf_gpu_memcpy(c->dtab, tables, sizeof tables, PF_GPU_H2D));
    CK(pf_gpu_memcpy(c->dlens, c->lens, sizeof c->lens, PF_GPU_H2D));
    free(kp);
    free(vp);
    pf_gpu_attn_shape sh = {.num_seqs = PS, .num_q_heads = PHQ, .num_kv_heads = PHKV,
                            .head_dim = PD, .block_size = PB, .max_blocks_per_seq = PMAXB,
                            .naive_cap = PCAP, .dtype = PF_GPU_F32, .scale = 0.f};
    c->sh = sh;
}

static void pcase_free(pcase *c)
{
    void *d[] = {c->dq, c->dk, c->dv, c->dout, c->dws, c->dtab, c->dlens};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (d[i])
            CK(pf_gpu_free(d[i]));
    free(c->q);
    free(c->kc);
    free(c->vc);
}

static void pcase_verify(pcase *c, const pf_gpu_attn_plan *p, const char *what);

/* A workspace of its own for plan p, prepared for the case's lengths once
 * before its first use, as gpu.h asks (NULL when p needs none): a plan with
 * a work list reads its own list there. Poisoned first: init must clear it. */
static void *pcase_workspace(pcase *c, const pf_gpu_attn_plan *p)
{
    void *ws = NULL;
    if (p->workspace_bytes) {
        CK(pf_gpu_malloc(&ws, p->workspace_bytes));
        CK(pf_gpu_memset(ws, 0x5a, p->workspace_bytes));
        CK(pf_gpu_attn_workspace_init(p, c->host, ws, NULL));
    }
    return ws;
}

/* Run plan p on NaN-poisoned output, on stream st (NULL: the legacy
 * default stream), and check it (pcase_verify). */
static void pcase_check_on(pcase *c, const pf_gpu_attn_plan *p, void *st, const char *what)
{
    float out[PS * PHQ * PD];
    if (!c->keep_ws) {
        if (c->dws)
            CK(pf_gpu_free(c->dws));
        c->dws = pcase_workspace(c, p);
    }
    CK(pf_gpu_memset(c->dout, 0xff, sizeof out));
    CK(pf_gpu_sync()); /* a stream of its own does not wait for the legacy one */
    CK(pf_gpu_attn_run(p, c->dq, c->dk, c->dv, c->dtab, c->dlens, c->dout, c->dws, st));
    CK(pf_gpu_sync());
    pcase_verify(c, p, what);
}

/* The output c->dout holds, as plan p's run must have written it: zeros
 * for a length <= 0, the CPU reference otherwise. */
static void pcase_verify(pcase *c, const pf_gpu_attn_plan *p, const char *what)
{
    float out[PS * PHQ * PD];
    CK(pf_gpu_memcpy(out, c->dout, sizeof out, PF_GPU_D2H));
    for (int s = 0; s < PS; s++) {
        double ref[PHQ * PD];
        if (c->want[s] > 0) {
            pf_attn_shape ash = {PHQ, PHKV, PD, 0.f};
            cr_assert_eq(pf_attn_ref_contig_f64(&ash, c->q + (size_t)s * PHQ * PD,
                                                c->kc + (size_t)s * PHKV * PCAP * PD,
                                                c->vc + (size_t)s * PHKV * PCAP * PD, c->want[s],
                                                PCAP, ref),
                         PF_OK);
        }
        for (int i = 0; i < PHQ * PD; i++) {
            const float x = out[s * PHQ * PD + i];
            if (c->want[s] <= 0)
                cr_assert_eq(x, 0.f, "%s v%d splits %d: seq %d (len %d) elem %d = %g, want 0",
                             what, p->version, p->splits, s, c->want[s], i, x);
            else
                cr_assert(fabs(x - ref[i]) < 1e-5, "%s v%d splits %d: seq %d elem %d %g vs %g",
                          what, p->version, p->splits, s, i, x, ref[i]);
        }
    }
}

static void pcase_check(pcase *c, const pf_gpu_attn_plan *p, const char *what)
{
    pcase_check_on(c, p, NULL, what);
}

Test(gpu, lengths_of_zero_or_less_give_zeros_with_one_split_or_many)
{
    const int lens[PS] = {0, 50, -3, 300};
    pcase c;
    pcase_make(&c, lens);
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        pf_gpu_attn_plan one, many;
        /* plans from the bound, but v11 runs from a work list only: from
         * the lengths (its one block on a machine of one slot then does
         * every item in turn) */
        const int *hl = pf_gpu_version_steal(v) ? lens : NULL;
        cr_assert_eq(pf_gpu_attn_plan_compute(&one, &c.sh, 1, NULL, PCAP, v, 1, 1),
                     pf_gpu_version_steal(v) ? PF_ERR_ARG : PF_OK);
        /* one slot on the machine: splitting cannot help, one chunk */
        cr_assert_eq(pf_gpu_attn_plan_compute(&one, &c.sh, 1, hl, PCAP, v, 1, 1), PF_OK);
        cr_assert_eq(one.splits, 1);
        pcase_check(&c, &one, "one split");
        /* a big machine, and the chunking forced to 3 (the planner may keep
         * 320 tokens whole: versions 1-4 merge in a second launch) */
        cr_assert_eq(pf_gpu_attn_plan_compute(&many, &c.sh, 1, hl, PCAP, v, 132, 8), PF_OK);
        cr_assert_eq(pf_gpu__plan_set_splits(&many, 3, hl), PF_OK);
        cr_assert_eq(many.splits, 3);
        pcase_check(&c, &many, "many splits");
    }
    pcase_free(&c);
}

/* A plan from host lengths runs from its work list (versions 5-8, 11, 12); the
 * device lengths may differ: shorter (its later chunks find no tokens), 0
 * (zeros), or longer, read up to the end of the chunks planned for the
 * sequence (gpu.h). */
Test(gpu, work_list_reads_each_length_up_to_its_planned_chunks)
{
    const int host[PS] = {300, 40, 200, 1};
    const int dev[PS] = {150, 0, 250, 200};
    pcase c;
    pcase_make(&c, host);
    memcpy(c.lens, dev, sizeof dev);
    CK(pf_gpu_memcpy(c.dlens, dev, sizeof dev, PF_GPU_H2D));
    const int listed[] = {5, 6, 7, 8, 11, 12}; /* the versions with a work list */
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++) {
        const int v = listed[i];
        cr_assert(pf_gpu_version_listed(v));
        pf_gpu_attn_plan p;
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &c.sh, 1, host, 0, v, 132, 8), PF_OK);
        cr_assert_eq(pf_gpu__plan_set_splits(&p, 3, host), PF_OK);
        cr_assert_gt(p.units, 0);
        cr_assert_eq(p.splits, 3);
        for (int s = 0; s < PS; s++) {
            const int nch = (host[s] + p.chunk - 1) / p.chunk;
            int w = dev[s] < nch * p.chunk ? dev[s] : nch * p.chunk;
            c.want[s] = w < p.max_len ? w : p.max_len;
        }
        cr_assert_lt(c.want[3], dev[3], "the test must cut one length (chunk %d)", p.chunk);
        pcase_check(&c, &p, "work list");
    }
    pcase_free(&c);
}

/* A plan with a tail (pf_gpu__plan_set_tail): units of several chunks
 * and single chunks, their partial slots sparse. Every version that can
 * run one gives the reference on the plan's lengths; then, on the same
 * workspace without a new init, on other device lengths (shorter, zero,
 * longer up to the planned chunks), so a slot a unit of the first run
 * wrote and no unit of the second does must not enter the merge. */
Test(gpu, tail_units_cover_every_token_once_run_after_run)
{
    const int host[PS] = {256, 40, 200, 1};
    const int dev[PS] = {150, 0, 250, 37};
    pcase c;
    pcase_make(&c, host);
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        pf_gpu_attn_plan p;
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &c.sh, 1, host, 0, v, 132, 8), PF_OK);
        if (!pf_gpu_version_tail(v)) {
            cr_assert_eq(pf_gpu__plan_set_tail(&p, 1, host), PF_ERR_ARG, "v%d", v);
            continue;
        }
        /* 128-token blocks (2 of the longest), each 7 units of 16 tokens
         * and 1 of its own */
        cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, host), PF_OK);
        cr_assert_eq(p.chunk, 128);
        cr_assert_eq(pf_gpu__plan_set_tail(&p, 2, host), PF_ERR_ARG, "8-token chunks");
        cr_assert_eq(pf_gpu__plan_set_tail(&p, 1, host), PF_OK, "v%d", v);
        cr_assert_eq(p.chunk, 16);
        cr_assert_eq(p.splits, 16);
        cr_assert_eq(p.tail, 1);
        cr_assert_eq(pf_gpu__plan_set_tail(&p, 1, host), PF_ERR_ARG, "a tail already");
        memcpy(c.lens, host, sizeof host);
        memcpy(c.want, host, sizeof host);
        CK(pf_gpu_memcpy(c.dlens, host, sizeof host, PF_GPU_H2D));
        c.keep_ws = 0;
        pcase_check(&c, &p, "tail, the plan's lengths");
        memcpy(c.lens, dev, sizeof dev);
        CK(pf_gpu_memcpy(c.dlens, dev, sizeof dev, PF_GPU_H2D));
        for (int s = 0; s < PS; s++) {
            const int nch = host[s] > 0 ? (host[s] + p.chunk - 1) / p.chunk : 1;
            c.want[s] = dev[s] < nch * p.chunk ? dev[s] : nch * p.chunk;
        }
        cr_assert_eq(c.want[2], 208, "read up to its planned chunks");
        cr_assert_eq(c.want[3], 16);
        c.keep_ws = 1;
        pcase_check(&c, &p, "tail, other device lengths, same workspace");
        c.keep_ws = 0;
    }
    pcase_free(&c);
}

/* --check-only: every pass of every version checked as in a timed run,
 * nothing timed (no timings, no stream row, no host-time loops); the same
 * configuration timed fills them. */
Test(gpu, check_only_checks_every_version_and_times_nothing)
{
    const int lens[] = {5, 300, 1000};
    pf_gpu_bench_cfg cfg = {
        .num_seqs = 3, .seq_lens = lens, .naive_cap = 1024, .num_q_heads = 8,
        .num_kv_heads = 2, .head_dim = 128, .block_size = 16, .dtype = PF_GPU_BF16,
        .iters = 2, .seed = 5, .shuffle_seed = 3, .tolerance = 1e-3, .ref_all_heads = 1,
        .measure_bw = 1, .version = 0, .rivals = {19}, .num_rivals = 1, .check_only = 1,
    };
    pf_gpu_bench_result res;
    char err[300] = "";
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
    cr_assert(res.pass, "%s", res.failure);
    cr_assert(!res.timed);
    cr_assert_eq(res.ref_checked, 3LL * 8 * 128, "every head of every sequence checked");
    cr_assert(res.have_shuffled && res.readback_ok);
    cr_assert_eq(res.rival[0].version, 19);
    cr_assert_gt(res.rival[0].max_err_ref, 0.0, "the rival's naive pass was checked");
    cr_assert_eq(res.rival[0].max_diff_shuffled, 0.0);
    cr_assert_eq(res.naive.median_ms, 0.0);
    cr_assert_eq(res.rival[0].shuffled.median_ms, 0.0);
    cr_assert(!res.have_stream);
    cr_assert_eq(res.read_bw_gbps, 0.0, "no read probe");
    cr_assert_eq(res.host_us_per_run, 0.0);
    cfg.check_only = 0;
    cfg.measure_bw = 0;
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_OK, "%s", err);
    cr_assert(res.pass && res.timed);
    cr_assert_gt(res.naive.median_ms, 0.0);
    cr_assert_gt(res.rival[0].shuffled.median_ms, 0.0);
    cr_assert_gt(res.host_us_per_run, 0.0);
}

/* The public planner (device queries) resolves version 0 as
 * pf_gpu_attn_plan_compute does: a small launch serves one query head a
 * block, one with more tokens than a small launch's runs the large
 * launch's plan (with version 36 at one block an SM or fewer, as on an
 * H100 or H200 here), and a batch that fills the machine unsplit runs
 * version 34. (Until the twenty-first session plan_make handed the planner the
 * resolved version, so the first two never reached a caller.) */
Test(gpu, plan_make_plans_version_0_as_the_planner_does)
{
    pf_gpu_attn_shape s = {.num_seqs = 1, .num_q_heads = 32, .num_kv_heads = 8, .head_dim = 128,
                           .block_size = 16, .max_blocks_per_seq = 4096, .naive_cap = 4096,
                           .dtype = PF_GPU_BF16, .scale = 0.f};
    int len = 1024; /* the single workload */
    pf_gpu_attn_plan p, q;
    cr_assert_eq(pf_gpu_attn_plan_make(&p, &s, 1, &len, 0, 0), PF_OK);
    cr_assert_eq(p.version, 9);
    cr_assert_eq(p.group_tile, PF_GPU_SMALL_TILE);
    cr_assert_eq(pf_gpu_attn_plan_make(&q, &s, 1, &len, 0, 9), PF_OK);
    cr_assert_eq(q.group_tile, 4, "an explicit version keeps the group's tile");
    len = 2 * PF_GPU_SMALL_TOKENS;
    cr_assert_eq(pf_gpu_attn_plan_make(&p, &s, 1, &len, 0, 0), PF_OK);
    cr_assert_eq(p.version, PF_GPU_DEEP_GQA_VERSION,
                 "past a small launch's tokens, 29's plan, run by 36 at one block an SM or fewer");
    len = 8 * PF_GPU_CLUSTER_CHUNK_MAX_TOKENS + 16;
    cr_assert_neq(pf_gpu_attn_plan_make(&q, &s, 1, &len, 0, 9), PF_OK,
                  "version 9 itself cannot merge more chunks than a cluster holds");
    /* batch (256 x 1024): version 34's plan splits nothing, so it is
     * version 0's (PF_GPU_MH_GQA_VERSION) */
    enum { N = 256 };
    int lens[N];
    for (int i = 0; i < N; i++)
        lens[i] = 1024;
    s.num_seqs = N;
    s.max_blocks_per_seq = 64;
    cr_assert_eq(pf_gpu_attn_plan_make(&p, &s, 1, lens, 0, 0), PF_OK);
    cr_assert_eq(p.version, PF_GPU_MH_GQA_VERSION);
    cr_assert_eq(p.splits, 1);
}

/* A packed plan reads the device's lengths as a work list does (gpu.h):
 * shorter, 0 (zeros), or longer up to the sequence's planned chunk. With
 * the same lengths version 29's unpacked plan reads the same tokens, so
 * the outputs must agree to bf16's rounding (the sums' order differs: a
 * warp a sequence), run after run on one workspace, and a CUDA graph of
 * the packed run replays it bitwise. bf16, GQA 8/2, D 128. */
Test(gpu, pack_reads_device_lengths_as_the_list_does)
{
    enum { S = 12, HQ = 8, HKV = 2, D = 128, B = 16, MAXB = 32, FR = S * MAXB };
    const int host[S] = {500, 0, 1, 31, 32, 33, 300, 8, 64, 499, 100, 17};
    const int dev[S] = {250, 0, 0, 40, 512, 1, 300, 8, 3, 499, 0, 33};
    const size_t nq = (size_t)S * HQ * D, npool = (size_t)FR * HKV * B * D;
    uint16_t *hq = malloc(2 * nq), *hk = malloc(2 * npool), *hv = malloc(2 * npool);
    uint16_t *o29 = malloc(2 * nq), *o33 = malloc(2 * nq);
    int tab[S * MAXB];
    cr_assert(hq && hk && hv && o29 && o33);
    pf_rng r;
    pf_rng_seed(&r, 77);
    for (size_t i = 0; i < nq; i++)
        hq[i] = pf_gpu_f32_to_bf16(pf_rng_symf(&r));
    for (size_t i = 0; i < npool; i++) {
        hk[i] = pf_gpu_f32_to_bf16(pf_rng_symf(&r));
        hv[i] = pf_gpu_f32_to_bf16(pf_rng_symf(&r));
    }
    for (int i = 0; i < S * MAXB; i++)
        tab[i] = i * 37 % FR; /* scattered */
    void *dq, *dk, *dv, *dout, *dws29, *dws33;
    int *dtab, *dlens;
    CK(pf_gpu_malloc(&dq, 2 * nq));
    CK(pf_gpu_malloc(&dk, 2 * npool));
    CK(pf_gpu_malloc(&dv, 2 * npool));
    CK(pf_gpu_malloc(&dout, 2 * nq));
    CK(pf_gpu_malloc((void **)&dtab, sizeof tab));
    CK(pf_gpu_malloc((void **)&dlens, sizeof host));
    CK(pf_gpu_memcpy(dq, hq, 2 * nq, PF_GPU_H2D));
    CK(pf_gpu_memcpy(dk, hk, 2 * npool, PF_GPU_H2D));
    CK(pf_gpu_memcpy(dv, hv, 2 * npool, PF_GPU_H2D));
    CK(pf_gpu_memcpy(dtab, tab, sizeof tab, PF_GPU_H2D));
    const pf_gpu_attn_shape sh = {.num_seqs = S, .num_q_heads = HQ, .num_kv_heads = HKV,
                                  .head_dim = D, .block_size = B, .max_blocks_per_seq = MAXB,
                                  .naive_cap = MAXB * B, .dtype = PF_GPU_BF16, .scale = 0.f};
    /* one slot: no split, one chunk of 512 tokens a sequence */
    pf_gpu_attn_plan p29, p33;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p29, &sh, 1, host, 0, 29, 1, 1), PF_OK);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p33, &sh, 1, host, 0, 33, 1, 1), PF_OK);
    cr_assert_eq(p33.splits, 1);
    cr_assert_eq(p33.chunk, 512);
    CK(pf_gpu_malloc(&dws29, p29.workspace_bytes));
    CK(pf_gpu_malloc(&dws33, p33.workspace_bytes));
    CK(pf_gpu_attn_workspace_init(&p29, host, dws29, NULL));
    CK(pf_gpu_attn_workspace_init(&p33, host, dws33, NULL));
    const int *lens_of[2] = {host, dev};
    const int packs[] = {4, 8};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(pf_gpu__plan_set_pack(&p33, packs[k]), PF_OK);
        for (int l = 0; l < 2; l++) {
            CK(pf_gpu_memcpy(dlens, lens_of[l], sizeof host, PF_GPU_H2D));
            CK(pf_gpu_memset(dout, 0xff, 2 * nq));
            CK(pf_gpu_attn_run(&p29, dq, dk, dv, dtab, dlens, dout, dws29, NULL));
            CK(pf_gpu_memcpy(o29, dout, 2 * nq, PF_GPU_D2H));
            CK(pf_gpu_memset(dout, 0xff, 2 * nq));
            CK(pf_gpu_attn_run(&p33, dq, dk, dv, dtab, dlens, dout, dws33, NULL));
            CK(pf_gpu_sync());
            CK(pf_gpu_memcpy(o33, dout, 2 * nq, PF_GPU_D2H));
            for (size_t i = 0; i < nq; i++) {
                const float x = pf_gpu_bf16_to_f32(o33[i]), y = pf_gpu_bf16_to_f32(o29[i]);
                cr_assert(fabsf(x - y) <= 2e-3f + 0x1p-7f * fabsf(y),
                          "pack %d, %s lengths: elem %zu %g vs v29's %g", packs[k],
                          l ? "other device" : "the plan's", i, x, y);
            }
            for (int s = 0; s < S; s++) /* the test's cases: zeros, and not all zero */
                for (int i = 0; i < HQ * D; i += 97)
                    cr_assert((o33[s * HQ * D + i] == 0) == (lens_of[l][s] <= 0), "seq %d", s);
        }
        /* a graph of the packed run (other device lengths) replays it */
        pf_gpu_attn_graph *g = NULL;
        CK(pf_gpu_attn_graph_make(&g, &p33, dq, dk, dv, dtab, dlens, dout, dws33));
        CK(pf_gpu_memset(dout, 0xff, 2 * nq));
        CK(pf_gpu_attn_graph_launch(g, 100, NULL));
        CK(pf_gpu_sync());
        CK(pf_gpu_memcpy(o29, dout, 2 * nq, PF_GPU_D2H)); /* (o29: the replays' output) */
        cr_assert_eq(memcmp(o29, o33, 2 * nq), 0, "pack %d: 100 replays", packs[k]);
        pf_gpu_attn_graph_free(g);
    }
    void *d[] = {dq, dk, dv, dout, dws29, dws33, dtab, dlens};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        CK(pf_gpu_free(d[i]));
    free(hq);
    free(hk);
    free(hv);
    free(o29);
    free(o33);
}

Test(gpu, plan_run_is_capturable_in_a_cuda_graph)
{
    const int lens[PS] = {1, 77, 160, 320};
    pcase c;
    pcase_make(&c, lens);
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        pf_gpu_attn_plan p;
        /* the real planner (device queries) from host lengths, and a split
         * plan, so the graph holds both kernels */
        cr_assert_eq(pf_gpu_attn_plan_make(&p, &c.sh, 1, lens, 0, v), PF_OK);
        pcase_check(&c, &p, "plan_make");
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &c.sh, 1, lens, 0, v, 132, 8), PF_OK);
        cr_assert_eq(pf_gpu__plan_set_splits(&p, 3, lens), PF_OK);
        cr_assert_eq(p.splits, 3);
        pcase_check(&c, &p, "direct");
        float want[PS * PHQ * PD], got[PS * PHQ * PD];
        CK(pf_gpu_memcpy(want, c.dout, sizeof want, PF_GPU_D2H));
        pf_gpu_attn_graph *g = NULL;
        const unsigned makes = pf_gpu__graph_makes();
        CK(pf_gpu_attn_graph_make(&g, &p, c.dq, c.dk, c.dv, c.dtab, c.dlens, c.dout, c.dws));
        /* a run into a stream being captured launches directly: a graph
         * launched into the capture would invalidate it */
        cr_assert_eq(pf_gpu__graph_makes(), makes, "v%d: the capture made a graph of its own", v);
        CK(pf_gpu_memset(c.dout, 0xff, sizeof got)); /* capture ran nothing: replays must write */
        CK(pf_gpu_attn_graph_launch(g, 100, NULL));
        CK(pf_gpu_sync());
        CK(pf_gpu_memcpy(got, c.dout, sizeof got, PF_GPU_D2H));
        if (pf_gpu_version_exact(v)) {
            cr_assert_eq(memcmp(got, want, sizeof got), 0, "v%d: 100 replays differ from one run",
                         v);
        } else { /* v11: its counters reset themselves; the sums' order may move */
            for (int i = 0; i < PS * PHQ * PD; i++)
                cr_assert(fabsf(got[i] - want[i]) < 1e-5f, "v%d: replay elem %d: %g vs %g", v, i,
                          got[i], want[i]);
        }
        pf_gpu_attn_graph_free(g);
    }
    pcase_free(&c);
}

/* A run launches as a replay of its stream's graph (gpu/kernels.cu,
 * graph_launch): the second run of a kernel at a grid on a stream from a
 * host thread makes that graph (the first launches directly:
 * pf_gpu_graph_lru), and every later run there only gives it new
 * arguments; another grid of the same kernel (a split plan), another
 * stream or another thread gets graphs of its own. A
 * cluster launch (version 9 split: its chunks one cluster) launches
 * directly, with no graph. Every run's output is the reference's.
 * With PF_GPU_LAUNCH=driver or runtime there are no graphs at all. */
typedef struct {
    pcase *c;
    const pf_gpu_attn_plan *p;
    void *ws;         /* the plan's workspace                               */
    void *st;
    int rc;           /* the first failing run's code, else PF_OK          */
    unsigned makes;   /* graphs the thread's runs made                      */
} graph_thread;

static void *graph_thread_main(void *arg)
{
    graph_thread *t = arg;
    const unsigned before = pf_gpu__graph_makes();
    t->rc = PF_OK;
    for (int i = 0; i < 10 && t->rc == PF_OK; i++)
        t->rc = pf_gpu_attn_run(t->p, t->c->dq, t->c->dk, t->c->dv, t->c->dtab, t->c->dlens,
                                t->c->dout, t->ws, t->st);
    if (t->rc == PF_OK)
        t->rc = pf_gpu_sync();
    t->makes = pf_gpu__graph_makes() - before; /* the main thread runs nothing meanwhile */
    return NULL;
}

/* pcase_check_on with plan p's own workspace ws. */
static void pcase_check_ws(pcase *c, const pf_gpu_attn_plan *p, void *ws, void *st,
                           const char *what)
{
    c->dws = ws;
    pcase_check_on(c, p, st, what);
    c->dws = NULL;
}

Test(gpu, runs_replay_a_graph_a_stream)
{
    const char *way = getenv("PF_GPU_LAUNCH");
    const unsigned graphs = !(way && (!strcmp(way, "driver") || !strcmp(way, "runtime")));
    const int lens[PS] = {1, 77, 160, 320};
    pcase c;
    pcase_make(&c, lens);
    c.keep_ws = 1; /* each plan runs on the workspace pcase_workspace made it */
    void *s1 = NULL, *s2 = NULL;
    CK(pf_gpu_stream_create(&s1));
    CK(pf_gpu_stream_create(&s2));
    const int versions[] = {12, 9};
    for (size_t k = 0; k < sizeof versions / sizeof *versions; k++) {
        const int v = versions[k];
        /* a graph a stream and grid: version 12 has one kernel for both
         * plans, launched on two grids (1 and 3 chunks a sequence); version
         * 9's split plan is a cluster launch, which makes none */
        const unsigned per_stream = v == 9 ? graphs : 2 * graphs;
        pf_gpu_attn_plan one, split;
        CK(pf_gpu_attn_plan_make(&one, &c.sh, 1, lens, 0, v));
        split = one;
        CK(pf_gpu__plan_set_splits(&one, 1, lens));
        CK(pf_gpu__plan_set_splits(&split, 3, lens));
        cr_assert_eq(one.splits, 1);
        cr_assert_eq(split.splits, 3);
        void *ws_one = pcase_workspace(&c, &one), *ws_split = pcase_workspace(&c, &split);

        /* a key's first run launches directly, its second makes the graph
         * (pf_gpu_graph_lru: a grid seen once never pays for one) */
        unsigned m0 = pf_gpu__graph_makes();
        pcase_check_ws(&c, &one, ws_one, s1, "first unsplit run on s1");
        pcase_check_ws(&c, &split, ws_split, s1, "first split run on s1");
        cr_assert_eq(pf_gpu__graph_makes() - m0, 0, "v%d: the first runs on s1 made %u graphs", v,
                     pf_gpu__graph_makes() - m0);
        pcase_check_ws(&c, &one, ws_one, s1, "second unsplit run on s1");
        pcase_check_ws(&c, &split, ws_split, s1, "second split run on s1");
        cr_assert_eq(pf_gpu__graph_makes() - m0, per_stream,
                     "v%d: the second runs on s1 made %u graphs", v, pf_gpu__graph_makes() - m0);
        m0 = pf_gpu__graph_makes();
        for (int i = 0; i < 4; i++) {
            pcase_check_ws(&c, &split, ws_split, s1, "split plan on s1");
            pcase_check_ws(&c, &one, ws_one, s1, "unsplit plan on s1");
        }
        cr_assert_eq(pf_gpu__graph_makes(), m0, "v%d: later runs on s1 made %u more graphs", v,
                     pf_gpu__graph_makes() - m0);
        for (int i = 0; i < 2; i++) {
            pcase_check_ws(&c, &split, ws_split, s2, "split plan on s2");
            pcase_check_ws(&c, &one, ws_one, s2, "unsplit plan on s2");
        }
        cr_assert_eq(pf_gpu__graph_makes() - m0, per_stream, "v%d: a second stream made %u graphs",
                     v, pf_gpu__graph_makes() - m0);

        /* another thread's runs on s1 make their own graph, once */
        graph_thread t = {.c = &c, .st = s1};
        t.p = v == 9 ? &one : &split;
        t.ws = v == 9 ? ws_one : ws_split;
        CK(pf_gpu_memset(c.dout, 0xff, sizeof(float) * PS * PHQ * PD));
        CK(pf_gpu_sync());
        pthread_t th;
        cr_assert_eq(pthread_create(&th, NULL, graph_thread_main, &t), 0);
        cr_assert_eq(pthread_join(th, NULL), 0);
        cr_assert_eq(t.rc, PF_OK, "v%d: the thread's runs: %d", v, t.rc);
        cr_assert_eq(t.makes, graphs, "v%d: the thread's 10 runs made %u graphs", v, t.makes);
        pcase_verify(&c, t.p, "the thread's runs");
        pcase_check_ws(&c, &split, ws_split, s1, "s1 after the thread ended");
        if (ws_one)
            CK(pf_gpu_free(ws_one));
        if (ws_split)
            CK(pf_gpu_free(ws_split));
    }
    CK(pf_gpu_stream_destroy(s1));
    CK(pf_gpu_stream_destroy(s2));
    pcase_free(&c);
}

Test(gpu, run_layout_as_the_dashboard_calls_it)
{
    /* three live sequences and one finished (length 0); sequences 0 and 2
     * share their first frame (a shared prefix block), frames scattered */
    enum { MB = 4 };
    int lens[4] = {40, 0, 20, 64};
    int tables[4 * MB] = {9, 3, 12, 0, /**/ 0, 0, 0, 0, /**/ 9, 5, 0, 0, /**/ 1, 14, 7, 2};
    pf_gpu_layout lay = {4, lens, tables, MB, 16, 16};
    pf_gpu_head_shape hs = {8, 2, 128, PF_GPU_BF16};
    pf_gpu_pass_result out;
    char err[300] = "";
    cr_assert_eq(pf_gpu_run_layout(&lay, &hs, &out, err, sizeof err), PF_OK, "%s", err);
    cr_assert_gt(strlen(out.device), 0);
    cr_assert_gt(out.naive_ms, 0.0);
    cr_assert_gt(out.paged_ms, 0.0);
    cr_assert_gt(out.ordered_ms, 0.0);
    cr_assert_eq(out.max_err_paged, 0.0);
    cr_assert_eq(out.max_err_ordered, 0.0);
    cr_assert_lt(out.max_err_naive, 0.02);
    cr_assert_eq(out.kv_bytes, (40LL + 20 + 64) * 2 * 128 * 2 * 2);
    /* a frame outside the pool is named, not read */
    tables[3 * MB + 2] = 16;
    cr_assert_eq(pf_gpu_run_layout(&lay, &hs, &out, err, sizeof err), PF_ERR_RANGE);
    cr_assert(strstr(err, "frame 16") != NULL, "%s", err);
}

/* Probe the device in a child: the parent must not initialise CUDA before
 * Criterion forks the tests. */
static int device_usable(char *why, size_t len)
{
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(why, len, "pipe failed");
        return 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char w[200] = "";
        int ok = pf_gpu_available(w, sizeof w);
        ssize_t n = write(fd[1], w, strlen(w));
        (void)n;
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    ssize_t n = pid > 0 ? read(fd[0], why, len - 1) : -1;
    why[n > 0 ? n : 0] = '\0';
    close(fd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
    char why[200];
    if (!device_usable(why, sizeof why)) {
        printf("skipped: no CUDA device (%s)\n", why);
        return 77;
    }
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}

/* A run after plan_make queries nothing: plan_make sets up the kernel the
 * plan launches (its shared memory reservation, the driver's handle), so
 * the first run finds it ready. Before, the planner set up only the kernel
 * of its occupancy query: a plan of version 33 without a pack (few
 * sequences, nothing to pack) runs version 29's kernel, and its first run
 * made the setup's device queries (inside a graph capture, too). Counted
 * by pf_gpu__kernel_setups; each test runs in a fresh process, so nothing
 * is set up before it. */
Test(gpu, a_run_after_plan_make_sets_up_nothing)
{
    enum { S = 4, HQ = 8, HKV = 2, D = 128, B = 16, MAXB = 32, FR = S * MAXB };
    const int lens[S] = {300, 17, 512, 1};
    const size_t nq = (size_t)S * HQ * D, npool = (size_t)FR * HKV * B * D;
    int tab[S * MAXB];
    for (int i = 0; i < S * MAXB; i++)
        tab[i] = i;
    void *dq, *dk, *dv, *dout, *dws;
    int *dtab, *dlens;
    CK(pf_gpu_malloc(&dq, 2 * nq));
    CK(pf_gpu_malloc(&dk, 2 * npool));
    CK(pf_gpu_malloc(&dv, 2 * npool));
    CK(pf_gpu_malloc(&dout, 2 * nq));
    CK(pf_gpu_memset(dq, 0, 2 * nq));
    CK(pf_gpu_memset(dk, 0, 2 * npool));
    CK(pf_gpu_memset(dv, 0, 2 * npool));
    CK(pf_gpu_malloc((void **)&dtab, sizeof tab));
    CK(pf_gpu_malloc((void **)&dlens, sizeof lens));
    CK(pf_gpu_memcpy(dtab, tab, sizeof tab, PF_GPU_H2D));
    CK(pf_gpu_memcpy(dlens, lens, sizeof lens, PF_GPU_H2D));
    const pf_gpu_attn_shape sh = {.num_seqs = S, .num_q_heads = HQ, .num_kv_heads = HKV,
                                  .head_dim = D, .block_size = B, .max_blocks_per_seq = MAXB,
                                  .naive_cap = MAXB * B, .dtype = PF_GPU_BF16, .scale = 0.f};
    const int versions[] = {33, 0, 29, 8, 9};
    for (size_t k = 0; k < sizeof versions / sizeof *versions; k++) {
        pf_gpu_attn_plan p;
        CK(pf_gpu_attn_plan_make(&p, &sh, 1, lens, 0, versions[k]));
        if (versions[k] == 33)
            cr_assert_eq(p.pack, 0, "a pack of %d: the test wants version 33 unpacked", p.pack);
        CK(pf_gpu_malloc(&dws, p.workspace_bytes ? p.workspace_bytes : 16));
        CK(pf_gpu_attn_workspace_init(&p, lens, dws, NULL));
        const unsigned before = pf_gpu__kernel_setups();
        CK(pf_gpu_attn_run(&p, dq, dk, dv, dtab, dlens, dout, dws, NULL));
        CK(pf_gpu_sync());
        const unsigned after = pf_gpu__kernel_setups();
        cr_expect_eq(after, before, "version %d (runs %d): its first run made %u kernel setups",
                     versions[k], p.version, after - before);
        CK(pf_gpu_free(dws));
    }
    CK(pf_gpu_free(dq));
    CK(pf_gpu_free(dk));
    CK(pf_gpu_free(dv));
    CK(pf_gpu_free(dout));
    CK(pf_gpu_free(dtab));
    CK(pf_gpu_free(dlens));
}
