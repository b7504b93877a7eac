/* tests/test_sim_cost.c - the roofline cost model (sim/cost.h) against hand
 * computations: a decode step of Llama 3 8B on an H200 (memory bound), a long
 * prefill (compute bound), the switch point between them, chunking, swap
 * time, and the GPU-profile reader with its error messages. Also the model
 * presets' parameter counts (core/config.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/err.h"
#include "sim/cost.h"

/* Llama 3 8B, written out from its config.json rather than read back from
 * the preset, so the test checks the preset too. */
#define L3_PARAMS 8030261248.0
#define L3_EMBED (128256.0 * 4096.0) /* input embedding = LM head (untied) */
#define L3_BPT 131072.0              /* 2 x 32 x 8 x 128 x 2 */
#define L3_ATTN (4.0 * 32 * 32 * 128)
#define H200_BW (4800e9 * 0.90)
#define H200_FLOPS (989e12 * 0.70)

static pf_cost llama_h200(void)
{
    pf_cost c;
    cr_assert_eq(pf_cost_init(&c, pf_model_find("llama3-8b"), pf_gpu_find("h200"), 1e-3), PF_OK);
    return c;
}

Test(cost_model, presets_parameter_counts)
{
    /* Published totals (model cards / safetensors). */
    struct {
        const char *name;
        int64_t params;
    } want[] = {{"llama2-7b", 6738415616}, {"llama3-8b", 8030261248},
                {"llama3-70b", 70553706496}, {"mistral-7b", 7248023552},
                {"qwen2.5-7b", 7615616512}, {"seed", 16576}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const pf_model *m = pf_model_find(want[i].name);
        cr_assert_not_null(m, "%s", want[i].name);
        cr_assert_eq(m->num_params, want[i].params, "%s", want[i].name);
        cr_assert_eq(pf_model_param_count(m), want[i].params, "%s: shape gives %lld", want[i].name,
                     (long long)pf_model_param_count(m));
        cr_assert_eq(m->hidden_size, m->num_q_heads * m->head_dim, "%s", want[i].name);
    }
    const pf_model *q = pf_model_find("qwen2.5-7b");
    cr_assert_eq(q->qkv_bias, 1);
    cr_assert_eq(pf_model_unread_embedding_params(q), 152064LL * 3584);
}

Test(cost_model, gpu_presets)
{
    int n = 0;
    for (const pf_gpu *const *g = pf_gpu_list(); *g; g++) {
        cr_assert_eq(pf_gpu_find((*g)->name), *g);
        cr_assert_gt((*g)->hbm_gbps, 0);
        n++;
    }
    cr_assert_eq(n, 3);
    cr_assert_float_eq(pf_gpu_find("h200")->hbm_gbps, 4800.0, 1e-9);
    cr_assert_float_eq(pf_gpu_find("h100")->hbm_gbps, 3350.0, 1e-9);
    cr_assert_float_eq(pf_gpu_find("a100")->bf16_tflops, 312.0, 1e-9);
    cr_assert_null(pf_gpu_find("h300"));
    cr_assert_null(pf_gpu_find(NULL));
}

Test(cost_model, bad_arguments)
{
    pf_cost c;
    const pf_model *m = pf_model_find("llama3-8b");
    const pf_gpu *g = pf_gpu_find("h100");
    cr_assert_eq(pf_cost_init(&c, NULL, g, 0), PF_ERR_ARG);
    cr_assert_eq(pf_cost_init(&c, m, NULL, 0), PF_ERR_ARG);
    cr_assert_eq(pf_cost_init(&c, m, g, -1e-3), PF_ERR_ARG);
    cr_assert_eq(pf_cost_init(&c, m, g, NAN), PF_ERR_ARG);
    pf_model broken = *m;
    broken.num_kv_heads = 0;
    cr_assert_eq(pf_cost_init(&c, &broken, g, 0), PF_ERR_ARG);
    cr_assert_eq(pf_cost_init(&c, m, g, 0), PF_OK);
    cr_assert_eq(pf_cost_set_efficiency(&c, 0, 0.5), PF_ERR_ARG);
    cr_assert_eq(pf_cost_set_efficiency(&c, 0.5, 1.5), PF_ERR_ARG);
    cr_assert_eq(pf_cost_set_efficiency(&c, NAN, 0.5), PF_ERR_ARG);
}

Test(cost_model, empty_batch_costs_nothing)
{
    pf_cost c = llama_h200();
    pf_cost_batch b;
    pf_cost_batch_clear(&b);
    pf_cost_detail d;
    pf_cost_step_detail(&c, &b, &d);
    cr_assert_eq(d.bound, PF_COST_IDLE);
    cr_assert_eq(pf_cost_step_s(&c, &b), 0.0);
    pf_cost_batch_add_prefill(&b, 0, 0, 1); /* zero tokens: nothing scheduled */
    cr_assert_eq(pf_cost_step_s(&c, &b), 0.0);
}

/* 64 sequences of 4096 tokens each decode one token: the GPU workload
 * "llama" of the design notes, over the whole model. */
Test(cost_model, decode_llama3_8b_h200_is_memory_bound)
{
    pf_cost c = llama_h200();
    pf_cost_batch b;
    pf_cost_batch_clear(&b);
    for (int i = 0; i < 64; i++)
        pf_cost_batch_add_decode(&b, 4096);
    cr_assert_eq(b.decode_tokens, 64);
    cr_assert_eq(b.kv_read_tokens, 64 * 4097);

    double weights = (L3_PARAMS - L3_EMBED) * 2;                 /* 15.0 GB */
    double kv = 64 * 4097 * L3_BPT + 64 * L3_BPT;                /* 34.4 GB */
    double mem = (weights + kv) / H200_BW;
    double flops = 2 * (L3_PARAMS - 2 * L3_EMBED) * 64 + 2 * L3_EMBED * 64 + L3_ATTN * 64 * 4097;
    double comp = flops / H200_FLOPS;

    pf_cost_detail d;
    pf_cost_step_detail(&c, &b, &d);
    cr_assert_eq(d.bound, PF_COST_MEMORY);
    cr_assert_float_eq(d.memory_s, mem, 1e-12);
    cr_assert_float_eq(d.compute_s, comp, 1e-12);
    cr_assert_float_eq(d.step_s, mem + 1e-3, 1e-12);
    /* The figures by hand: 49.4 GB at 4.32 TB/s is 11.4 ms; 1.10 TFLOP at
     * 692 TFLOP/s is 1.6 ms. */
    cr_assert(d.memory_s > 11.3e-3 && d.memory_s < 11.5e-3, "%g", d.memory_s);
    cr_assert(d.compute_s > 1.5e-3 && d.compute_s < 1.7e-3, "%g", d.compute_s);
    cr_assert_float_eq(pf_cost_step_s(&c, &b), d.step_s, 0.0);
}

/* One 8192-token prompt prefilled in one chunk. */
Test(cost_model, long_prefill_is_compute_bound)
{
    pf_cost c = llama_h200();
    pf_cost_batch b;
    pf_cost_batch_clear(&b);
    pf_cost_batch_add_prefill(&b, 0, 8192, 1);
    cr_assert_eq(b.logit_tokens, 1, "only the last position is sampled");
    double pairs = 8192.0 * 8193.0 / 2.0;
    double flops = 2 * (L3_PARAMS - 2 * L3_EMBED) * 8192 + 2 * L3_EMBED * 1 + L3_ATTN * pairs;
    double mem = ((L3_PARAMS - L3_EMBED) * 2 + 2 * 8192 * L3_BPT) / H200_BW;

    pf_cost_detail d;
    pf_cost_step_detail(&c, &b, &d);
    cr_assert_eq(d.bound, PF_COST_COMPUTE);
    cr_assert_float_eq(d.compute_s, flops / H200_FLOPS, 1e-12);
    cr_assert_float_eq(d.memory_s, mem, 1e-12);
    cr_assert_float_eq(d.step_s, flops / H200_FLOPS + 1e-3, 1e-12);
    /* 132 TFLOP at 692 TFLOP/s: 0.19 s; 17 GB of traffic: 4 ms. */
    cr_assert(d.compute_s > 0.185 && d.compute_s < 0.195, "%g", d.compute_s);
    cr_assert(d.memory_s > 3.9e-3 && d.memory_s < 4.1e-3, "%g", d.memory_s);
}

/* A prompt of n tokens from an empty cache: compute(n) - memory(n) is the
 * quadratic a n^2 + b n + c (attention's pairs n(n+1)/2), so the first n
 * that is compute bound is the ceiling of its positive root: about 172
 * tokens, the ratio of the FLOP rate to the bandwidth times the bytes per
 * parameter over the FLOPs per parameter. */
Test(cost_model, switch_point_matches_the_roofline_ridge)
{
    pf_cost c = llama_h200();
    double W = (L3_PARAMS - L3_EMBED) * 2, M = L3_PARAMS - 2 * L3_EMBED;
    double a = L3_ATTN / 2 / H200_FLOPS;
    double bq = (2 * M + L3_ATTN / 2) / H200_FLOPS - 2 * L3_BPT / H200_BW;
    double cq = 2 * L3_EMBED / H200_FLOPS - W / H200_BW;
    double root = (-bq + sqrt(bq * bq - 4 * a * cq)) / (2 * a);
    int want = (int)ceil(root);
    cr_assert(want > 160 && want < 185, "ridge at %g tokens", root);

    int first_compute = -1;
    for (int n = 1; n <= 1000 && first_compute < 0; n++) {
        pf_cost_batch b;
        pf_cost_batch_clear(&b);
        pf_cost_batch_add_prefill(&b, 0, n, 1);
        pf_cost_detail d;
        pf_cost_step_detail(&c, &b, &d);
        if (d.bound == PF_COST_COMPUTE)
            first_compute = n;
    }
    cr_assert_eq(first_compute, want);
}

Test(cost_model, chunked_prefill_costs_the_same_attention)
{
    pf_cost_batch one, two;
    pf_cost_batch_clear(&one);
    pf_cost_batch_clear(&two);
    pf_cost_batch_add_prefill(&one, 0, 1000, 1);
    pf_cost_batch_add_prefill(&two, 0, 600, 0);
    pf_cost_batch_add_prefill(&two, 600, 400, 1);
    cr_assert_float_eq(one.attn_pairs, two.attn_pairs, 0.0);
    cr_assert_float_eq(one.attn_pairs, 1000.0 * 1001.0 / 2.0, 0.0);
    cr_assert_eq(one.kv_write_tokens, two.kv_write_tokens);
    cr_assert_eq(one.prefill_tokens, two.prefill_tokens);
    cr_assert_eq(one.logit_tokens, two.logit_tokens);
    /* A decode is a one-token prefill that is always sampled. */
    pf_cost_batch d, p;
    pf_cost_batch_clear(&d);
    pf_cost_batch_clear(&p);
    pf_cost_batch_add_decode(&d, 77);
    pf_cost_batch_add_prefill(&p, 77, 1, 1);
    cr_assert_float_eq(d.attn_pairs, p.attn_pairs, 0.0);
    cr_assert_eq(d.kv_read_tokens, p.kv_read_tokens);
}

Test(cost_model, more_context_costs_more_and_efficiency_scales)
{
    pf_cost c = llama_h200();
    pf_cost_batch small, big;
    pf_cost_batch_clear(&small);
    pf_cost_batch_clear(&big);
    for (int i = 0; i < 32; i++) {
        pf_cost_batch_add_decode(&small, 512);
        pf_cost_batch_add_decode(&big, 8192);
    }
    double ts = pf_cost_step_s(&c, &small), tb = pf_cost_step_s(&c, &big);
    cr_assert_gt(tb, ts);
    /* Memory bound both: the difference is exactly the extra KV read. */
    cr_assert_float_eq(tb - ts, 32.0 * (8192 - 512) * L3_BPT / H200_BW, 1e-12);
    /* Halving the sustained bandwidth doubles the memory time. */
    pf_cost_detail before, after;
    pf_cost_step_detail(&c, &big, &before);
    cr_assert_eq(pf_cost_set_efficiency(&c, 0.45, 0.70), PF_OK);
    pf_cost_step_detail(&c, &big, &after);
    cr_assert_float_eq(after.memory_s, 2 * before.memory_s, 1e-12);
    cr_assert_float_eq(after.compute_s, before.compute_s, 1e-15);
}

Test(cost_model, swap_time_over_the_host_link)
{
    pf_cost c = llama_h200();
    cr_assert_float_eq(pf_cost_swap_s(&c, 1000), 1000 * L3_BPT / 55e9, 1e-15);
    cr_assert_eq(pf_cost_swap_s(&c, 0), 0.0);
    pf_cost a;
    cr_assert_eq(pf_cost_init(&a, pf_model_find("llama3-8b"), pf_gpu_find("a100"), 0), PF_OK);
    cr_assert_gt(pf_cost_swap_s(&a, 1000), pf_cost_swap_s(&c, 1000), "Gen4 is slower");
}

/* ---- the GPU profile reader ---------------------------------------------- */

/* n bytes of text (NULs too) to a fresh file, its name in path. */
static void write_bytes(char *path, size_t len, const char *text, size_t n)
{
    snprintf(path, len, "/tmp/pf_test_profile_%d_%u.txt", (int)getpid(), (unsigned)rand());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, n, f), n);
    fclose(f);
}

static void write_file(char *path, size_t len, const char *text)
{
    write_bytes(path, len, text, strlen(text));
}

static const char *good_profile = "# written by pagefault bench --profile-out\n"
                                  "format = pagefault-gpu-profile/1\n"
                                  "\n"
                                  "device = NVIDIA H200\n"
                                  "mem_read_gbps = 4600.0        # streaming read\n"
                                  "attn_kv_gbps = 4400.0\n"
                                  "attn_fixed_us = 6.5\n"
                                  "future_key = 17\n";

Test(cost_profile, reads_the_measured_figures)
{
    char path[256], err[256];
    write_file(path, sizeof path, good_profile);
    pf_cost c = llama_h200();
    cr_assert_eq(pf_cost_load_profile(&c, path, err, sizeof err), PF_OK, "%s", err);
    unlink(path);
    cr_assert_eq(c.profiled, 1);
    cr_assert_str_eq(c.profile_device, "NVIDIA H200");
    cr_assert_float_eq(c.mem_bps, 4600e9, 1e-3);
    cr_assert_float_eq(c.attn_bps, 4400e9, 1e-3);
    cr_assert_float_eq(c.attn_fixed_s, 6.5e-6, 1e-18);

    pf_cost_batch b;
    pf_cost_batch_clear(&b);
    for (int i = 0; i < 64; i++)
        pf_cost_batch_add_decode(&b, 4096);
    double want = (L3_PARAMS - L3_EMBED) * 2 / 4600e9 + 64 * L3_BPT / 4600e9 + 32 * 6.5e-6 +
                  64 * 4097 * L3_BPT / 4400e9;
    pf_cost_detail d;
    pf_cost_step_detail(&c, &b, &d);
    cr_assert_float_eq(d.memory_s, want, 1e-12);
    /* Measured figures are not scaled again by the efficiency. */
    cr_assert_eq(pf_cost_set_efficiency(&c, 0.5, 0.5), PF_OK);
    cr_assert_float_eq(c.mem_bps, 4600e9, 1e-3);
    cr_assert_float_eq(c.flops, 989e12 * 0.5, 1.0);
}

Test(cost_profile, fixed_floor_is_optional)
{
    char path[256], err[256];
    write_file(path, sizeof path,
               "format = pagefault-gpu-profile/1\nmem_read_gbps = 3000\nattn_kv_gbps=2900\n");
    pf_cost c = llama_h200();
    cr_assert_eq(pf_cost_load_profile(&c, path, err, sizeof err), PF_OK, "%s", err);
    unlink(path);
    cr_assert_eq(c.attn_fixed_s, 0.0);
    cr_assert_str_eq(c.profile_device, "");
}

/* Each malformed file: the error names the file and the line (or the file
 * alone when the problem is what is missing) and leaves the model as it was. */
Test(cost_profile, malformed_files_are_reported_with_their_line)
{
    struct {
        const char *text;
        int line; /* 0: no line in the message */
        const char *what;
    } bad[] = {
        {"", 0, "empty"},
        {"# only a comment\n\n", 0, "empty"},
        {"mem_read_gbps = 4600\nformat = pagefault-gpu-profile/1\n", 1, "first setting"},
        {"format = pagefault-gpu-profile/2\n", 1, "unsupported format"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps 4600\n", 2, "expected 'key = value'"},
        {"format = pagefault-gpu-profile/1\n = 4\n", 2, "missing key"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = 4600x\nattn_kv_gbps = 1\n", 2,
         "not a number"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps =\n", 2, "not a number"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = -4600\n", 2, "out of range"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = inf\n", 2, "not a number"},
        /* numbers as the command line takes them: strtod took these */
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = +4600\n", 2, "not a number"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = 0x1p12\n", 2, "not a number"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = \v4600\n", 2, "not a number"},
        {"format = pagefault-gpu-profile/1\nattn_fixed_us = -1\n", 2, "out of range"},
        /* a bandwidth of 3e-308 GB/s made every step infinite, the run all zeros */
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = 3e-308\n", 2, "out of range"},
        {"format = pagefault-gpu-profile/1\nattn_kv_gbps = 0.01\n", 2, "out of range"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = 1\n\nmem_read_gbps = 2\n", 4,
         "given twice"},
        {"format = pagefault-gpu-profile/1\nformat = pagefault-gpu-profile/1\n", 2, "given twice"},
        {"format = pagefault-gpu-profile/1\nattn_kv_gbps = 4400\n", 0, "missing mem_read_gbps"},
        {"format = pagefault-gpu-profile/1\nmem_read_gbps = 4400\n", 0, "missing attn_kv_gbps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256], err[512], want[300];
        write_file(path, sizeof path, bad[i].text);
        pf_cost c = llama_h200(), before = c;
        int rc = pf_cost_load_profile(&c, path, err, sizeof err);
        unlink(path);
        cr_assert_eq(rc, PF_ERR_ARG, "case %zu", i);
        cr_assert_eq(memcmp(&c, &before, sizeof c), 0, "case %zu changed the model", i);
        if (bad[i].line)
            snprintf(want, sizeof want, "%s:%d: ", path, bad[i].line);
        else
            snprintf(want, sizeof want, "%s: ", path);
        cr_assert_eq(strncmp(err, want, strlen(want)), 0, "case %zu: '%s'", i, err);
        cr_assert_not_null(strstr(err, bad[i].what), "case %zu: '%s'", i, err);
    }
}

Test(cost_profile, long_lines_and_missing_files)
{
    char text[3000], path[256], err[512];
    strcpy(text, "format = pagefault-gpu-profile/1\ndevice = ");
    size_t n = strlen(text);
    memset(text + n, 'x', 2000);
    strcpy(text + n + 2000, "\nmem_read_gbps = 1\nattn_kv_gbps = 1\n");
    write_file(path, sizeof path, text);
    pf_cost c = llama_h200();
    int rc = pf_cost_load_profile(&c, path, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, PF_ERR_ARG);
    cr_assert_not_null(strstr(err, ":2: line longer"), "%s", err);

    /* The last line may lack its newline. */
    write_file(path, sizeof path,
               "format = pagefault-gpu-profile/1\nmem_read_gbps = 1\nattn_kv_gbps = 2");
    cr_assert_eq(pf_cost_load_profile(&c, path, err, sizeof err), PF_OK, "%s", err);
    unlink(path);
    cr_assert_float_eq(c.attn_bps, 2e9, 1e-3);

    /* NUL bytes (a binary or UTF-16 file): a NUL mid-line was called a line
     * too long, one at a line's start dropped that setting unseen */
    static const char nul_mid[] = "format = pagefault-gpu-profile/1\nmem_read\0_gbps = 1\n"
                                  "attn_kv_gbps = 2\n";
    static const char nul_start[] = "format = pagefault-gpu-profile/1\nmem_read_gbps = 1\n"
                                    "attn_kv_gbps = 2\n\0attn_fixed_us = 6.5\n";
    const struct {
        const char *text;
        size_t n;
        const char *where;
    } nul[] = {{nul_mid, sizeof nul_mid - 1, ":2: a NUL byte"},
               {nul_start, sizeof nul_start - 1, ":4: a NUL byte"}};
    for (size_t i = 0; i < 2; i++) {
        write_bytes(path, sizeof path, nul[i].text, nul[i].n);
        const pf_cost before = c;
        rc = pf_cost_load_profile(&c, path, err, sizeof err);
        unlink(path);
        cr_assert_eq(rc, PF_ERR_ARG, "NUL case %zu", i);
        cr_assert_not_null(strstr(err, nul[i].where), "NUL case %zu: %s", i, err);
        cr_assert_eq(memcmp(&c, &before, sizeof c), 0, "NUL case %zu changed the model", i);
    }

    /* a line that never ends is refused at its limit, not read until
     * memory runs out (getline grew it, then the message named the file
     * as empty) */
    const pf_cost before = c;
    rc = pf_cost_load_profile(&c, "/dev/zero", err, sizeof err);
    cr_assert_eq(rc, PF_ERR_ARG);
    cr_assert_not_null(strstr(err, "/dev/zero:1: line longer"), "%s", err);
    cr_assert_eq(memcmp(&c, &before, sizeof c), 0);

    cr_assert_eq(pf_cost_load_profile(&c, "/nonexistent/pf.profile", err, sizeof err), PF_ERR_IO);
    cr_assert_not_null(strstr(err, "/nonexistent/pf.profile: cannot open"), "%s", err);
    cr_assert_eq(pf_cost_load_profile(&c, NULL, err, sizeof err), PF_ERR_ARG);
}

/* Llama 3 8B on an H200 at vLLM's 0.9: (141 GiB x 0.9 - 16.06 GB) / 128 KiB. */
Test(cost_model, kv_capacity_beside_the_weights)
{
    pf_cost c = llama_h200();
    double budget = 141.0 * 1073741824.0 * 0.9 - L3_PARAMS * 2;
    cr_assert_eq(pf_cost_kv_capacity_tokens(&c, 0.9), (int64_t)floor(budget / L3_BPT));
    int64_t cap = pf_cost_kv_capacity_tokens(&c, 0.9);
    cr_assert(cap > 900000 && cap < 950000, "%lld", (long long)cap); /* 120 GB of KV */
    cr_assert_lt(pf_cost_kv_capacity_tokens(&c, 0.5), pf_cost_kv_capacity_tokens(&c, 0.9));
    cr_assert_eq(pf_cost_kv_capacity_tokens(&c, 0), PF_ERR_ARG);
    cr_assert_eq(pf_cost_kv_capacity_tokens(&c, 1.01), PF_ERR_ARG);
    pf_cost big;
    cr_assert_eq(pf_cost_init(&big, pf_model_find("llama3-70b"), pf_gpu_find("h200"), 0), PF_OK);
    cr_assert_eq(pf_cost_kv_capacity_tokens(&big, 0.9), PF_ERR_RANGE, "141 GB of weights");
    int64_t all = pf_cost_kv_capacity_tokens(&big, 1.0); /* 151.4 GB - 141.1 GB */
    cr_assert(all > 0 && all < 40000, "%lld", (long long)all);
}
