/* tui/cmd_calc.c - `pagefault calc`: memory accounting on the CPU.
 *
 * Prints, from the formulas in core/memory.h:
 *   config       paging sizes and the KV bytes per token of the model
 *   workload     the lengths (the seed's 50/30/20 mix from --seed, or --lengths,
 *                optionally with each sequence's prompt in --prompts)
 *   utilization  naive vs paged reserved memory at --block-size, and the
 *                measured internal fragmentation next to the expected (B-1)/2
 *   sweep        the same workload for each of --sweep-sizes
 *   fig2         the PagedAttention paper's Figure 2: the KV memory of naive
 *                max / pow2 / oracle and paged split into token states,
 *                reserved, internal and external fragmentation, at final
 *                lengths and averaged over the sequences' lifetimes
 *   model        (only when --model is given) sequences that fit --budget-gb,
 *                reserved by the naive policy or paged at --mean-len
 * The naive side of every figure reserves by --naive-reserve (max, the
 * seed's: --max-len for everyone; pow2; oracle), the paper's three Orca
 * baselines. --model takes every preset of core/config (pf_model_list).
 * Without --model the bytes per token are the seed's (1 layer, 1 KV head,
 * D 64, fp32: 512 B); with --model, every byte figure uses that model's.
 * Memory is shown in decimal MB (10^6 bytes) like the seed; the budget in
 * GB is 10^9 bytes. Every flag is validated through the tui/cli.h table:
 * a bad value prints one line on stderr and exits 2 with nothing on stdout.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/err.h"
#include "core/memory.h"
#include "core/workload.h"
#include "tui/cli.h"
#include "tui/commands.h"
#include "tui/report.h"

#define PROG "pagefault calc"
#define CALC_MAX_SEQS 1000000
#define CALC_MAX_SWEEP 32
#define CALC_MAX_BLOCK 65536
#define MB 1e6

#define CALC_MAX_MODELS 64

/* --naive-reserve choices, in pf_mem_reserve's order (max, pow2, oracle):
 * the index the parser stores is the policy. */
static const char *const reserve_names[] = {"max", "pow2", "oracle", NULL};

/* --model choices: every preset of core/config in pf_model_list's order,
 * then "custom". Filled once by calc_model_names() so that a preset added
 * to core/config is selectable without touching calc. */
static const char *model_names[CALC_MAX_MODELS + 2];

/* Fill model_names; returns the index of "custom" (= the preset count). */
static int calc_model_names(void)
{
    int n = 0;
    for (const pf_model *const *m = pf_model_list(); *m && n < CALC_MAX_MODELS; m++)
        model_names[n++] = (*m)->name;
    model_names[n] = "custom";
    model_names[n + 1] = NULL;
    return n;
}

typedef struct {
    int seqs;
    long long seed;
    int model;
    int model_custom; /* index of "custom" in model_names */
    int naive_reserve; /* pf_mem_reserve: max, pow2 or oracle */
    double budget_gb;
    int max_len, mean_len;
    int layers, kv_heads, head_dim, dtype_bytes;
    int block_size, pool_blocks;
    const char *lengths;
    const char *prompts;
    const char *sweep;
    int format;
} calc_args;

/* What the run computes before anything is printed. */
typedef struct {
    pf_config cfg;
    size_t bpt;
    const char *model_name; /* NULL: no model sizing */
    int modified;           /* a preset with a shape flag on top */
    int *lens;
    int *prompts;           /* --prompts: prefilled length of each; NULL: 1 */
    int n;
    int sweep[CALC_MAX_SWEEP];
    int nsweep;
    pf_mem_reserve policy;  /* --naive-reserve */
} calc_run;

/* --sweep-sizes into out[]; *count gets how many. PF_CLI_OK or PF_CLI_USAGE. */
static int parse_sweep(const char *s, int *out, int *count)
{
    int n = pf_workload_parse_lengths(s, out, CALC_MAX_SWEEP);
    if (n == PF_ERR_RANGE)
        return pf_cli_error(PROG, "--sweep-sizes: at most %d block sizes, got '%s'", CALC_MAX_SWEEP, s);
    if (n < 0)
        return pf_cli_error(PROG,
                            "--sweep-sizes: expected a comma-separated list of block sizes in [1, %d], "
                            "got '%s'",
                            CALC_MAX_BLOCK, s);
    for (int i = 0; i < n; i++)
        if (out[i] > CALC_MAX_BLOCK)
            return pf_cli_error(PROG, "--sweep-sizes: block size %d out of range [1, %d]", out[i],
                                CALC_MAX_BLOCK);
    *count = n;
    return PF_CLI_OK;
}

/* Validate the combinations the flag table cannot see, fill `run`. Returns
 * PF_CLI_OK or PF_CLI_USAGE (message printed). */
/* The model shape into run->cfg: a preset, then any shape flag on top;
 * custom needs all four. The shape and sizing flags need --model. */
static int calc_model(calc_args *a, pf_opt *opts, calc_run *run)
{
    static const char *const shape_flags[] = {"layers", "kv-heads", "head-dim", "dtype-bytes"};
    int *shape_vals[] = {&a->layers, &a->kv_heads, &a->head_dim, &a->dtype_bytes};
    int model_given = pf_cli_find(opts, "model")->seen;
    if (model_given && a->model == a->model_custom) {
        for (int i = 0; i < 4; i++)
            if (!pf_cli_find(opts, shape_flags[i])->seen)
                return pf_cli_error(PROG,
                                    "--model custom: missing --%s (custom needs --layers, --kv-heads, "
                                    "--head-dim and --dtype-bytes)",
                                    shape_flags[i]);
        run->model_name = "custom";
    } else {
        const pf_model *m = pf_model_find(model_names[model_given ? a->model : 0]);
        pf_config_apply_model(&run->cfg, m);
        run->model_name = model_given ? m->name : NULL;
    }
    int *cfg_fields[] = {&run->cfg.num_layers, &run->cfg.num_kv_heads, &run->cfg.head_dim,
                         &run->cfg.dtype_bytes};
    for (int i = 0; i < 4; i++)
        if (pf_cli_find(opts, shape_flags[i])->seen) {
            if (!model_given)
                return pf_cli_error(PROG, "--%s: only used with --model (a preset to modify, or custom)",
                                    shape_flags[i]);
            if (*cfg_fields[i] != *shape_vals[i] && a->model != a->model_custom)
                run->modified = 1;
            *cfg_fields[i] = *shape_vals[i];
        }
    if (!model_given)
        for (int i = 0; i < 2; i++) {
            const char *f = i ? "mean-len" : "budget-gb";
            if (pf_cli_find(opts, f)->seen)
                return pf_cli_error(PROG, "--%s: only used with --model (model sizing)", f);
        }
    return PF_CLI_OK;
}

/* The sequences into run->lens (and run->prompts): explicit lengths, or
 * the seed mix. */
static int calc_sequences(calc_args *a, pf_opt *opts, calc_run *run)
{
    if (a->lengths) {
        if (pf_cli_find(opts, "seqs")->seen || pf_cli_find(opts, "seed")->seen)
            return pf_cli_error(PROG, "--lengths: gives the sequences itself; do not combine it "
                                      "with --seqs or --seed");
        /* at most one length per character pair "1," */
        int cap = (int)(strlen(a->lengths) / 2 + 1);
        if (cap > CALC_MAX_SEQS)
            cap = CALC_MAX_SEQS;
        run->lens = malloc((size_t)cap * sizeof *run->lens);
        if (!run->lens)
            return pf_cli_error(PROG, "out of memory");
        int n = pf_workload_parse_lengths(a->lengths, run->lens, cap);
        if (n == PF_ERR_RANGE)
            return pf_cli_error(PROG, "--lengths: at most %d lengths", CALC_MAX_SEQS);
        if (n < 0)
            return pf_cli_error(PROG,
                                "--lengths: expected a comma-separated list of lengths >= 1 "
                                "(e.g. 1,16,17,100), got '%s'",
                                a->lengths);
        run->n = n;
        if (a->prompts) {
            run->prompts = malloc((size_t)cap * sizeof *run->prompts);
            if (!run->prompts)
                return pf_cli_error(PROG, "out of memory");
            int np = pf_workload_parse_lengths(a->prompts, run->prompts, cap);
            if (np == PF_ERR_ARG || (np > 0 && np != n) || np == PF_ERR_RANGE)
                return pf_cli_error(PROG,
                                    "--prompts: expected %d comma-separated prompt lengths >= 1, "
                                    "one per --lengths entry, got '%s'",
                                    n, a->prompts);
            for (int i = 0; i < n; i++)
                if (run->prompts[i] > run->lens[i])
                    return pf_cli_error(PROG,
                                        "--prompts: prompt %d of sequence %d is longer than its "
                                        "length %d",
                                        run->prompts[i], i + 1, run->lens[i]);
        }
    } else {
        if (a->prompts)
            return pf_cli_error(PROG, "--prompts: only used with --lengths (one prompt length "
                                      "per sequence)");
        run->n = a->seqs;
        run->lens = malloc((size_t)run->n * sizeof *run->lens);
        if (!run->lens)
            return pf_cli_error(PROG, "out of memory");
        if (pf_workload_lengths(pf_mix_seed(), (uint64_t)a->seed, run->n, 1, 0, run->lens) != PF_OK)
            return pf_cli_error(PROG, "internal error: workload generation failed");
    }
    return PF_CLI_OK;
}

static int calc_setup(calc_args *a, pf_opt *opts, calc_run *run)
{
    pf_config_default(&run->cfg);
    run->cfg.block_size = a->block_size;
    run->cfg.pool_blocks = a->pool_blocks;
    run->cfg.max_seq_len = a->max_len;
    run->policy = (pf_mem_reserve)a->naive_reserve;

    if (calc_model(a, opts, run) != PF_CLI_OK)
        return PF_CLI_USAGE;
    run->bpt = pf_config_bytes_per_token(&run->cfg);

    if (parse_sweep(a->sweep, run->sweep, &run->nsweep) != PF_CLI_OK)
        return PF_CLI_USAGE;

    return calc_sequences(a, opts, run);
}

/* Tokens a contiguous (naive) layout reserves for a sequence of final
 * length L under policy r (core/memory.h). A contiguous layout cannot hold
 * more than max_len, so a longer sequence counts clamped to max_len, as
 * pf_mem_account does for its naive figures. */
static int64_t naive_reserve(pf_mem_reserve r, int L, int max_len)
{
    int64_t f = L < max_len ? L : max_len;
    return pf_mem_reserved_tokens(r, f, f, 1, max_len);
}

/* Redo the naive side of m (pf_mem_account reserves max_len for everyone)
 * under run->policy: reserved tokens and bytes, utilization, savings. */
static void apply_naive_policy(pf_mem_report *m, const calc_run *run)
{
    int64_t reserved = 0, stored = 0;
    int max_len = run->cfg.max_seq_len;
    for (int i = 0; i < run->n; i++) {
        reserved += naive_reserve(run->policy, run->lens[i], max_len);
        stored += run->lens[i] < max_len ? run->lens[i] : max_len;
    }
    m->naive_reserved_tokens = reserved;
    m->naive_bytes = (double)reserved * (double)run->bpt;
    m->util_naive = (double)stored / (double)reserved;
    m->savings = (double)reserved / (double)m->paged_reserved_tokens;
}

/* Sequences of the pool a naive layout holds: pool tokens / max_len under
 * max (the seed's figure, independent of the workload); under pow2 and
 * oracle the reservation depends on the length, so the pool is divided by
 * the workload's mean reservation. */
static double naive_capacity(const calc_run *run, const pf_mem_report *m)
{
    const pf_config *c = &run->cfg;
    if (run->policy == PF_RESERVE_MAX)
        return pf_mem_naive_capacity(c->pool_blocks, c->block_size, c->max_seq_len);
    double pool_tokens = (double)c->pool_blocks * c->block_size;
    return floor(pool_tokens * run->n / (double)m->naive_reserved_tokens);
}

static void add_config(pf_report *r, const calc_run *run, const pf_mem_report *m)
{
    const pf_config *c = &run->cfg;
    char model[64];
    snprintf(model, sizeof model, "%s%s", run->model_name ? run->model_name : "seed",
             run->modified ? " (modified)" : "");
    pf_report_section(r, "config", "Configuration");
    pf_report_num(r, "block_size", "block size", c->block_size, "%.0f", "tokens");
    pf_report_num(r, "max_seq_len", "max sequence length", c->max_seq_len,
                  "%.0f", "tokens");
    pf_report_num(r, "pool_blocks", "pool", c->pool_blocks, "%.0f", "blocks");
    pf_report_num(r, "pool_tokens", "pool tokens", (double)c->pool_blocks * c->block_size, "%.0f",
                  "tokens");
    pf_report_str(r, "model", "model", model);
    pf_report_num(r, "layers", "layers", c->num_layers, "%.0f", NULL);
    pf_report_num(r, "kv_heads", "KV heads", c->num_kv_heads, "%.0f", NULL);
    pf_report_num(r, "head_dim", "head dim", c->head_dim, "%.0f", NULL);
    pf_report_num(r, "dtype_bytes", "bytes per element", c->dtype_bytes, "%.0f", "B");
    pf_report_num(r, "bytes_per_token", "KV bytes per token",
                  (double)run->bpt, "%.0f", "B");
    pf_report_num(r, "pool_mb", "pool memory", (double)c->pool_blocks * c->block_size * run->bpt / MB,
                  "%.2f", "MB");
    pf_report_str(r, "naive_reserve", "naive reservation", pf_mem_reserve_name(run->policy));
    pf_report_num(r, "naive_capacity", "naive capacity", naive_capacity(run, m), "%.0f",
                  "sequences");
    if (run->policy != PF_RESERVE_MAX)
        pf_report_note(r, "naive capacity under %s: pool tokens / the workload's mean %s "
                          "reservation (%.1f tokens)",
                       pf_mem_reserve_name(run->policy), pf_mem_reserve_name(run->policy),
                       (double)m->naive_reserved_tokens / run->n);
}

static void add_workload(pf_report *r, const calc_args *a, const calc_run *run)
{
    int64_t sum = 0;
    int lo = run->lens[0], hi = run->lens[0], over = 0;
    int cls[3] = {0};
    for (int i = 0; i < run->n; i++) {
        int L = run->lens[i];
        sum += L;
        lo = L < lo ? L : lo;
        hi = L > hi ? L : hi;
        over += L > run->cfg.max_seq_len;
        cls[L <= 128 ? 0 : L <= 512 ? 1 : 2]++;
    }
    char src[96];
    if (a->lengths)
        snprintf(src, sizeof src, "--lengths");
    else
        snprintf(src, sizeof src, "seed mix 50/30/20, seed %lld", a->seed);
    pf_report_section(r, "workload", "Workload");
    pf_report_str(r, "source", "source", src);
    pf_report_num(r, "seqs", "sequences", run->n, "%.0f", NULL);
    pf_report_num(r, "tokens", "tokens", (double)sum, "%.0f", NULL);
    pf_report_num(r, "mean_len", "mean length", (double)sum / run->n, "%.1f", "tokens");
    pf_report_num(r, "min_len", "shortest", lo, "%.0f", "tokens");
    pf_report_num(r, "max_len", "longest", hi, "%.0f", "tokens");
    pf_report_num(r, "short", "short (<= 128)", cls[0], "%.0f", NULL);
    pf_report_num(r, "medium", "medium (129-512)", cls[1], "%.0f", NULL);
    pf_report_num(r, "long", "long (> 512)", cls[2], "%.0f", NULL);
    pf_report_num(r, "over_max_len", "longer than max length", over, "%.0f", NULL);
    if (over)
        pf_report_note(r, "%d sequence(s) exceed --max-len %d: naive cannot hold them (counted "
                          "clamped), paged holds them whole",
                       over, run->cfg.max_seq_len);
}

static void add_utilization(pf_report *r, const pf_mem_report *m, const calc_run *run)
{
    int pool_blocks = run->cfg.pool_blocks;
    double expected = (m->block_size - 1) / 2.0;
    char title[64];
    snprintf(title, sizeof title, "Utilization (naive %s vs paged)",
             pf_mem_reserve_name(run->policy));
    pf_report_section(r, "utilization", title);
    pf_report_num(r, "blocks", "blocks used", (double)m->blocks, "%.0f", NULL);
    pf_report_num(r, "pool_blocks", "of pool", pool_blocks, "%.0f", "blocks");
    pf_report_str(r, "fits_pool", "fits the pool", m->blocks <= pool_blocks ? "yes" : "no");
    pf_report_num(r, "naive_reserved_tokens", "naive reserved", (double)m->naive_reserved_tokens,
                  "%.0f", "tokens");
    pf_report_num(r, "paged_reserved_tokens", "paged reserved", (double)m->paged_reserved_tokens,
                  "%.0f", "tokens");
    pf_report_num(r, "naive_mb", "naive reserved memory", m->naive_bytes / MB, "%.2f", "MB");
    pf_report_num(r, "paged_mb", "paged reserved memory", m->paged_bytes / MB, "%.2f", "MB");
    pf_report_num(r, "savings", "savings (naive / paged)", m->savings, "%.2f", "x");
    pf_report_num(r, "util_naive_pct", "utilization naive", 100.0 * m->util_naive, "%.1f", "%");
    pf_report_num(r, "util_paged_pct", "utilization paged", 100.0 * m->util_paged, "%.1f", "%");
    pf_report_num(r, "frag_tokens", "internal fragmentation", (double)m->frag_tokens, "%.0f",
                  "tokens");
    pf_report_num(r, "frag_mb", "internal fragmentation mem", m->frag_bytes / MB, "%.2f", "MB");
    pf_report_num(r, "frag_per_seq", "frag per sequence, measured", m->frag_per_seq,
                  "%.2f", "tokens");
    pf_report_num(r, "frag_per_seq_expected", "frag per sequence, expected (B-1)/2",
                  expected, "%.2f", "tokens");
    if (run->policy != PF_RESERVE_MAX)
        pf_report_note(r, "naive %s reserves at admission what a sequence holds at its end; "
                          "these figures compare final lengths, so they leave out the time the "
                          "reservation sits unused while the sequence grows (the lifetime rows "
                          "of the KV split below count it)",
                       pf_mem_reserve_name(run->policy));
    if (m->blocks > pool_blocks)
        pf_report_note(r, "the workload needs %lld blocks, more than the pool's %d",
                       (long long)m->blocks, pool_blocks);
}

static int add_sweep(pf_report *r, const calc_run *run)
{
    static const char *const keys[] = {"block_size", "blocks", "reserved_mb", "frag_mb",
                                       "util_pct", "frag_per_seq", "frag_expected", "table_entries"};
    static const char *const labels[] = {"block size", "blocks", "reserved MB", "frag MB",
                                         "utilization %", "frag/seq", "(B-1)/2", "table entries/seq"};
    pf_report_table(r, "sweep", "Block-size sweep", 8, keys, labels);
    for (int i = 0; i < run->nsweep; i++) {
        pf_mem_report m;
        if (pf_mem_account(run->lens, run->n, run->sweep[i], run->cfg.max_seq_len, run->bpt, &m) !=
            PF_OK)
            return -1;
        pf_report_cell_num(r, run->sweep[i], "%.0f");
        pf_report_cell_num(r, (double)m.blocks, "%.0f");
        pf_report_cell_num(r, m.paged_bytes / MB, "%.2f");
        pf_report_cell_num(r, m.frag_bytes / MB, "%.2f");
        pf_report_cell_num(r, 100.0 * m.util_paged, "%.1f");
        pf_report_cell_num(r, m.frag_per_seq, "%.2f");
        pf_report_cell_num(r, (run->sweep[i] - 1) / 2.0, "%.2f");
        pf_report_cell_num(r, m.table_entries_max, "%.0f");
    }
    pf_report_note(r, "table entries per sequence at max length %d; smaller blocks waste less "
                      "but need longer block tables",
                   run->cfg.max_seq_len);
    return 0;
}

/* One row of the Figure 2 table: token counts of the four categories
 * (token-steps in the lifetime view) and how many sequences (sequence-steps)
 * they are spread over. Doubles: the lifetime sums exceed int64. */
typedef struct {
    double token, reserved, internal, external, seqs;
} fig2_row;

/* sum_{C=1..x} ceil(C/B): the blocks held over x steps of one token each.
 * With k = ceil(x/B) and s = x - (k-1)B steps in the last block:
 * B k(k-1)/2 + k s (0 for x = 0). */
static int64_t block_steps(int64_t x, int64_t B)
{
    int64_t k = (x + B - 1) / B, s = x - (k - 1) * B;
    return B * k * (k - 1) / 2 + k * s;
}

/* The lifetime view of layout r: a sequence is prefilled to its prompt
 * length P (--prompts; 1 without), then grows one token a step to its final
 * length F, and each category is summed over the states C = P..F of every
 * sequence. In a steady state where finished sequences are replaced by new
 * ones of the same mix, that sum is proportional to the time average of the
 * KV memory (Little's law: a category's mean occupancy is the arrival rate
 * times what one sequence accumulates over its life), which is what the
 * paper's Figure 2 shows. Closed forms per sequence over its m = F-P+1
 * states (a loop over the steps would be O(sum of lengths)):
 *   token states  sum C = F(F+1)/2 - (P-1)P/2
 *   naive, reservation R fixed at admission (R >= F):
 *     reserved    sum (F - C) = m F - token states
 *     internal    m (R - F)
 *   paged, R(C) = ceil(C/B) B; only the last block, k = ceil(F/B), reaches
 *   past F, during the states C > max(P-1, (k-1)B):
 *     sum R(C)    = B (block_steps(F) - block_steps(P-1))
 *     internal    (F - max(P-1, (k-1)B)) (kB - F)
 *     reserved    sum R(C) - internal - token states
 * Each term fits int64 per sequence (F < 2^31, B <= 65536); the sums over
 * sequences are doubles. Naive layouts see F clamped to max_len. */
static fig2_row fig2_lifetime(const calc_run *run, pf_mem_reserve r)
{
    fig2_row row = {0};
    int64_t B = run->cfg.block_size, max_len = run->cfg.max_seq_len;
    for (int i = 0; i < run->n; i++) {
        int64_t F = run->lens[i], P = run->prompts ? run->prompts[i] : 1;
        if (r != PF_RESERVE_PAGED && F > max_len) {
            F = max_len; /* naive holds it clamped */
            P = P < F ? P : F;
        }
        int64_t m = F - P + 1;
        int64_t token = F * (F + 1) / 2 - (P - 1) * P / 2, reserved, internal;
        if (r == PF_RESERVE_PAGED) {
            int64_t k = (F + B - 1) / B, last_from = (k - 1) * B;
            int64_t sum_res = B * (block_steps(F, B) - block_steps(P - 1, B));
            internal = (F - (P - 1 > last_from ? P - 1 : last_from)) * (k * B - F);
            reserved = sum_res - internal - token;
        } else {
            int64_t R = pf_mem_reserved_tokens(r, F, F, (int)B, (int)max_len);
            reserved = m * F - token;
            internal = m * (R - F);
        }
        row.token += (double)token;
        row.reserved += (double)reserved;
        row.internal += (double)internal;
        row.seqs += (double)m;
    }
    return row;
}

/* The final view of layout r: every sequence at its final length, through
 * core's pf_mem_split_compute (reserved is 0: nothing is left to produce).
 * Naive layouts see lengths clamped to max_len. clamped[] is scratch of n. */
static int fig2_final(const calc_run *run, pf_mem_reserve r, int *clamped, fig2_row *row)
{
    const int *lens = run->lens;
    if (r != PF_RESERVE_PAGED) {
        for (int i = 0; i < run->n; i++)
            clamped[i] = run->lens[i] < run->cfg.max_seq_len ? run->lens[i] : run->cfg.max_seq_len;
        lens = clamped;
    }
    pf_mem_split sp;
    int rc = pf_mem_split_compute(lens, lens, run->n, r, run->cfg.block_size, run->cfg.max_seq_len,
                                  0, &sp);
    if (rc != PF_OK)
        return rc;
    *row = (fig2_row){(double)sp.token_tokens, (double)sp.reserved_tokens,
                      (double)sp.internal_tokens, (double)sp.external_tokens, run->n};
    return PF_OK;
}

/* The PagedAttention paper's Figure 2 for this workload: for each naive
 * policy and for paging, the share of the memory the layout holds that is
 * token states, reserved for later tokens, internal and external
 * fragmentation; each row sums to 100%. Two views (see the notes). */
static int add_fig2(pf_report *r, const calc_run *run)
{
    static const char *const keys[] = {"view",         "layout",       "token_pct",
                                       "reserved_pct", "internal_pct", "external_pct",
                                       "reserved_per_seq"};
    static const char *const labels[] = {"view",      "layout",     "token states %",
                                         "reserved %", "internal %", "external %",
                                         "reserved/seq"};
    static const char *const layout[] = {"naive max", "naive pow2", "naive oracle", "paged"};
    int *clamped = malloc((size_t)run->n * sizeof *clamped);
    if (!clamped)
        return PF_ERR_NOMEM;
    int rc = PF_OK;
    pf_report_table(r, "fig2", "KV memory split (PagedAttention paper, Figure 2)", 7, keys, labels);
    for (int view = 0; view < 2 && rc == PF_OK; view++)
        for (int p = 0; p < PF_RESERVE_COUNT; p++) {
            fig2_row row;
            if (view == 0) {
                rc = fig2_final(run, (pf_mem_reserve)p, clamped, &row);
                if (rc != PF_OK)
                    break;
            } else {
                row = fig2_lifetime(run, (pf_mem_reserve)p);
            }
            double total = row.token + row.reserved + row.internal + row.external;
            pf_report_cell_str(r, view ? "lifetime" : "final");
            pf_report_cell_str(r, layout[p]);
            pf_report_cell_num(r, 100.0 * row.token / total, "%.1f");
            pf_report_cell_num(r, 100.0 * row.reserved / total, "%.1f");
            pf_report_cell_num(r, 100.0 * row.internal / total, "%.1f");
            pf_report_cell_num(r, 100.0 * row.external / total, "%.1f");
            pf_report_cell_num(r, total / row.seqs, "%.1f");
        }
    free(clamped);
    if (rc != PF_OK)
        return rc;
    pf_report_note(r, "shares of the memory each layout holds: token states = slots holding a "
                      "token's K and V; reserved = slots held for tokens the sequence has yet to "
                      "produce; internal = slots reserved that no token will ever fill; external "
                      "= free memory between contiguous reservations that no request can use");
    pf_report_note(r, "final: every sequence at its final length (nothing left to produce, so "
                      "reserved is 0); lifetime: each sequence is prefilled to its prompt, then "
                      "grows one token a step to its final length, and every step counts (the "
                      "time average of a server that replaces finished sequences with new ones "
                      "of this mix); %s",
                   run->prompts ? "prompts from --prompts"
                                : "no --prompts: every sequence starts at 1 token, all of its "
                                  "length generated");
    pf_report_note(r, "external is 0 for this static set: paging has none (any free frame fits "
                      "any page); a contiguous allocator's depends on the order of allocations "
                      "and frees, which calc does not model (`pagefault sim` runs one)");
    pf_report_note(r, "reserved/seq: tokens held per live sequence; paper (Kwon et al., SOSP "
                      "2023, ShareGPT): token states 20.4%% / 26.8%% / 38.2%% naive max / pow2 "
                      "/ oracle, 96.3%% paged");
    return PF_OK;
}

/* Model sizing: how many sequences a budget holds, reserved at max_len
 * (naive) or paged at mean_len (rounded up to whole blocks). */
static void add_model(pf_report *r, const calc_args *a, const calc_run *run)
{
    int mean = a->mean_len;
    /* The naive side reserves for a sequence of the mean length by the
     * policy: max_len (max), the next power of two (pow2), the mean itself
     * (oracle); a mean above max_len counts clamped like any naive length. */
    int64_t reserve = naive_reserve(run->policy, mean, run->cfg.max_seq_len);
    pf_mem_budget b;
    if (pf_mem_fit_budget(run->bpt, a->budget_gb * 1e9, (int)reserve, mean, run->cfg.block_size,
                          &b) != PF_OK)
        return; /* cannot happen: every input was validated */
    static const char *const naive_label[] = {"sequences reserved at max length",
                                              "sequences reserved at pow2 of mean",
                                              "sequences reserved at mean (oracle)"};
    char model[64];
    snprintf(model, sizeof model, "%s%s", run->model_name, run->modified ? " (modified)" : "");
    pf_report_section(r, "model", "Model sizing");
    pf_report_str(r, "model", "model", model);
    pf_report_num(r, "bytes_per_token", "KV bytes per token", (double)run->bpt, "%.0f", "B");
    pf_report_num(r, "kib_per_token", "KV per token", (double)run->bpt / 1024.0, "%.2f", "KiB");
    pf_report_num(r, "budget_gb", "budget", a->budget_gb, "%g", "GB");
    pf_report_num(r, "max_len", "naive reservation per sequence", b.max_len, "%.0f", "tokens");
    pf_report_num(r, "mean_len", "paged mean length", b.mean_len, "%.0f", "tokens");
    pf_report_str(r, "naive_reserve", "naive reservation", pf_mem_reserve_name(run->policy));
    pf_report_num(r, "naive_seqs", naive_label[run->policy], (double)b.naive_seqs, "%.0f", NULL);
    pf_report_num(r, "paged_seqs", "paged sequences at mean length", (double)b.paged_seqs, "%.0f",
                  NULL);
    pf_report_num(r, "ratio", "paged / naive", b.ratio, "%.2f", "x");
    pf_report_note(r, "%s: 2 x %d layers x %d kv heads x %d dim x %d B = %zu B/token; "
                      "%g GB / (%d x %zu B) = %lld naive, / (%d x %zu B) = %lld paged",
                   model, run->cfg.num_layers, run->cfg.num_kv_heads, run->cfg.head_dim,
                   run->cfg.dtype_bytes, run->bpt, a->budget_gb, b.max_len, run->bpt,
                   (long long)b.naive_seqs,
                   (int)((b.mean_len + b.block_size - 1) / b.block_size * b.block_size), run->bpt,
                   (long long)b.paged_seqs);
    pf_report_note(r, "the paged figure assumes every sequence holds exactly the mean length at "
                      "the same moment; real lengths vary and live sequences grow, so a pool "
                      "sized this way needs headroom (`pagefault sim` measures it)");
}

static const char calc_summary[] =
    "Memory accounting on the CPU: the configuration, a workload (the seed's 50/30/20 length mix\n"
    "from --seed, or --lengths), naive vs paged reserved memory and internal fragmentation at\n"
    "--block-size, a block-size sweep, and with --model the KV sizing of a real model against\n"
    "--budget-gb. Byte figures use the model's KV bytes per token (the seed's 512 B without\n"
    "--model); MB and GB are decimal (10^6, 10^9 bytes).";

/* The flag table, pointing into *a. CALC_NOPTS rows and the end. */
#define CALC_NOPTS 17
static void calc_opts(pf_opt o[CALC_NOPTS + 1], calc_args *a)
{
    const pf_opt t[] = {
        {"seqs", PF_OPT_INT, &a->seqs, 1, CALC_MAX_SEQS, NULL, "N", "sequences drawn from the seed mix", 0},
        {"seed", PF_OPT_I64, &a->seed, 0, 9007199254740991.0, NULL, "S", "workload seed", 0},
        {"model", PF_OPT_CHOICE, &a->model, 0, 0, model_names, NULL,
         "model for KV sizing (adds the model section); the presets of core/config", 0},
        {"naive-reserve", PF_OPT_CHOICE, &a->naive_reserve, 0, 0, reserve_names, NULL,
         "what the naive (contiguous) side reserves per sequence: max = --max-len for every "
         "sequence, pow2 = the next power of two >= its length (at most --max-len), oracle = "
         "exactly its length (known in advance, which no server does); the three Orca baselines "
         "of the PagedAttention paper (Kwon et al., SOSP 2023)", 0},
        {"budget-gb", PF_OPT_DOUBLE, &a->budget_gb, 0.001, 1e6, NULL, "F",
         "KV memory budget for model sizing, GB = 1e9 bytes", 0},
        {"max-len", PF_OPT_INT, &a->max_len, 1, 1 << 24, NULL, "N",
         "max sequence length: the naive reservation per sequence", 0},
        {"mean-len", PF_OPT_INT, &a->mean_len, 1, 1 << 24, NULL, "N",
         "mean sequence length for paged model sizing", 0},
        {"layers", PF_OPT_INT, &a->layers, 1, 1024, NULL, "N", "layers (custom model)", 0},
        {"kv-heads", PF_OPT_INT, &a->kv_heads, 1, 1024, NULL, "N", "KV heads (custom model)", 0},
        {"head-dim", PF_OPT_INT, &a->head_dim, 1, 4096, NULL, "N", "head dim (custom model)", 0},
        {"dtype-bytes", PF_OPT_INT, &a->dtype_bytes, 1, 8, NULL, "N",
         "bytes per KV element (custom model)", 0},
        {"block-size", PF_OPT_INT, &a->block_size, 1, CALC_MAX_BLOCK, NULL, "N", "tokens per block", 0},
        {"pool-blocks", PF_OPT_INT, &a->pool_blocks, 1, 1 << 24, NULL, "N", "blocks in the pool", 0},
        {"lengths", PF_OPT_STRING, &a->lengths, 0, 0, NULL, "L1,L2,...",
         "explicit sequence lengths instead of the seed mix (each 1..2147483647, at most 1000000)", 0},
        {"prompts", PF_OPT_STRING, &a->prompts, 0, 0, NULL, "P1,P2,...",
         "with --lengths: each sequence's prompt (prefilled at once, 1..its length); only the "
         "lifetime view of the KV split uses it [1 each]", 0},
        {"sweep-sizes", PF_OPT_STRING, &a->sweep, 0, 0, NULL, "B1,B2,...",
         "block sizes for the sweep (each 1..65536, at most 32) [1,16,64,256]", 0},
        {"format", PF_OPT_CHOICE, &a->format, 0, 0, pf_fmt_names, NULL, "output format", 0},
        {0},
    };
    _Static_assert(sizeof t / sizeof t[0] == CALC_NOPTS + 1, "CALC_NOPTS");
    memcpy(o, t, sizeof t);
}

/* The report's sections: configuration, workload, utilization, the
 * block-size sweep, the KV split (Figure 2) and, with a model, its
 * sizing. 0, or -1 with the message printed. */
static int calc_report(pf_report *r, const calc_args *a, const calc_run *run,
                       const pf_mem_report *mem)
{
    add_config(r, run, mem);
    add_workload(r, a, run);
    add_utilization(r, mem, run);
    if (add_sweep(r, run) != 0) {
        fprintf(stderr, "%s: internal error: sweep failed\n", PROG);
        return -1;
    }
    int frc = add_fig2(r, run);
    if (frc != PF_OK) {
        fprintf(stderr, "%s: %s while splitting KV memory (Figure 2)\n", PROG,
                frc == PF_ERR_NOMEM ? "out of memory" : "internal error");
        return -1;
    }
    if (run->model_name)
        add_model(r, a, run);
    return 0;
}

int pf_cmd_calc(int argc, char **argv)
{
    calc_args a = {
        .seqs = 32, .seed = 42, .model = 0, .naive_reserve = PF_RESERVE_MAX, .budget_gb = 80.0, .max_len = 2048, .mean_len = 2000,
        .layers = 1, .kv_heads = 1, .head_dim = 64, .dtype_bytes = 4, .block_size = 16,
        .pool_blocks = 4096, .lengths = NULL, .prompts = NULL, .sweep = "1,16,64,256", .format = PF_FMT_TABLE,
    };
    pf_opt opts[CALC_NOPTS + 1];
    calc_opts(opts, &a);
    a.model_custom = calc_model_names();
    int rc = pf_cli_start(PROG, calc_summary, opts, argc, argv);
    if (rc != PF_CLI_GO)
        return rc;

    calc_run run = {0};
    pf_report *r = NULL;
    int status = 2;
    if (calc_setup(&a, opts, &run) != PF_CLI_OK)
        goto out;

    pf_mem_report mem;
    if (pf_mem_account(run.lens, run.n, run.cfg.block_size, run.cfg.max_seq_len, run.bpt, &mem) !=
        PF_OK) {
        pf_cli_error(PROG, "internal error: accounting failed");
        goto out;
    }
    apply_naive_policy(&mem, &run);
    status = 1;
    r = pf_report_new();
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        goto out;
    }
    if (calc_report(r, &a, &run, &mem) != 0)
        goto out;
    if (pf_report_print(r, (pf_fmt)a.format, stdout) != 0) {
        fprintf(stderr, "%s: out of memory while building the report\n", PROG);
        goto out;
    }
    status = 0;
out:
    pf_report_free(r);
    free(run.lens);
    free(run.prompts);
    return status;
}
