/* tui/cmd_bench.c - `pagefault bench`: naive vs paged decode attention on
 * the GPU (the seed's Stages 1-3), checked and timed in one run.
 *
 * Prints: the device and its streaming read bandwidth measured in the same
 * run; the workload; memory reserved naive vs paged and utilization; naive,
 * paged-ordered and paged-shuffled times (median, mean, sd, min of CUDA-event
 * timings, L2 flushed before each launch), effective KV bandwidth and its
 * fraction of the measured read bandwidth; the ratios (paged slowdown vs
 * naive, cost of scattering = shuffled / ordered); and the checks (naive vs
 * the CPU reference for every sequence, max |paged - naive|, pool read-back).
 *
 * --kernel N selects a numbered kernel version (gpu/kernels.cuh); --compare
 * LIST times more versions on the same data in the same process, their
 * passes interleaved with --kernel's, and gives each one's times against
 * --kernel's (a comparison that a machine's start, which moves a figure by
 * about a point on the shared H200, cannot tilt); --profile-out FILE also
 * writes the simulator's cost-model figures (gpu/gpu.h, (e)).
 *
 * Exit status: 0 all checks passed, 1 a check failed (or the run failed),
 * 2 usage error, 3 no usable GPU (built without CUDA, or no device): the
 * reason is printed on stderr.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "core/workload.h"
#include "gpu/gpu.h"
#include "tui/cli.h"
#include "tui/commands.h"
#include "tui/report.h"

#define PROG "pagefault bench"
#define PF_BENCH_STR_(x) #x
#define PF_BENCH_STR(x) PF_BENCH_STR_(x) /* a number macro as a string literal */
#define BENCH_MAX_SEQS 65535
#define BENCH_MAX_LEN (1 << 20)

/* The named workloads (../shared/design.md). len 0: the seed's length mix,
 * scaled by mix_scale and clamped to cap. */
typedef struct {
    const char *name;
    int seqs, len, mix_scale, cap;
    int hq, hkv, head_dim, block_size;
    pf_gpu_dtype dtype;
    const char *why;
} bench_workload;

static const bench_workload workloads[] = {
    {"seed", 32, 0, 1, 2048, 1, 1, 64, 16, PF_GPU_F32, "parity with the seed's Stage 3"},
    {"llama", 64, 4096, 1, 4096, 32, 8, 128, 16, PF_GPU_BF16,
     "a decode step of a Llama-3-8B layer, 1 GiB of KV"},
    {"mixed", 256, 0, 2, 4096, 32, 8, 128, 16, PF_GPU_BF16, "many short, some long"},
    {"long", 8, 32768, 1, 32768, 32, 8, 128, 16, PF_GPU_BF16, "needs split-KV"},
    {"single", 1, 1024, 1, 1024, 32, 8, 128, 16, PF_GPU_BF16, "latency"},
    {"batch", 256, 1024, 1, 1024, 32, 8, 128, 16, PF_GPU_BF16, "a large batch of mid-length"},
    {"mha", 32, 2048, 1, 2048, 32, 32, 128, 16, PF_GPU_F16, "multi-head (no GQA), fp16"},
};
static const char *const workload_names[] = {"seed", "llama", "mixed", "long", "single",
                                             "batch", "mha", NULL};
static const char *const dtype_names[] = {"fp32", "fp16", "bf16", NULL};
/* --kv-layout: the paged pools, pf_gpu_bench_cfg's kv_interleaved */
static const char *const kv_layout_names[] = {"split", "interleaved", NULL};

typedef struct {
    int workload;
    int seqs, len, max_len, mix_scale;
    const char *lengths;
    int hq, hkv, head_dim, block_size, dtype;
    int iters;
    long long seed, shuffle_seed;
    int shuffle_window;
    double tolerance;
    int ref_all_heads;
    int no_read_bw;
    int check_only;
    int kernel;
    const char *compare;
    int kv_layout;
    int rivals[PF_GPU_BENCH_MAX_RIVALS];
    int num_rivals;
    int splits;
    int grid_order;
    int tail;
    int pack;
    int group_tile;
    int layers;
    const char *timeline;
    const char *profile_out;
    int format;
} bench_args;

static const char bench_summary[] =
    "GPU decode attention, naive (contiguous per-sequence KV) vs paged (every K/V read through\n"
    "the block table), on ordered and on shuffled frames. Workloads: seed (32 seqs, seed mix,\n"
    "1 head, D=64, fp32), llama (64 x 4096, GQA 32/8, D=128, bf16), mixed (256 seqs, seed mix\n"
    "x2), long (8 x 32768), single (1 x 1024), batch (256 x 1024), mha (32 x 2048, 32/32\n"
    "heads, fp16); any shape flag overrides the workload's value. --kernel N picks a numbered\n"
    "kernel version (docs/gpu.md); every version is checked before it is timed. --compare\n"
    "V1,V2 also runs those versions on the same data, their passes interleaved with --kernel's,\n"
    "and gives each one's time against --kernel's (a repeat of --kernel measures the noise).\n"
    "--splits N cuts the longest sequence into N split-KV chunks instead of the planner's\n"
    "choice; --pack N has version 33 stream N whole sequences a block.\n"
    "Every pass is checked before it is timed: naive vs a CPU reference (double) for every\n"
    "sequence, paged vs naive within --tolerance, pool read-back through the page tables;\n"
    "outputs are NaN-poisoned first. Times are CUDA-event timings with the L2 flushed before\n"
    "each launch. --profile-out FILE also measures the simulator's cost-model figures (read\n"
    "bandwidth, paged attention at the llama shape, the single 1x1024 launch) and writes\n"
    "them as `pagefault-gpu-profile/1`. --timeline FILE runs one more paged launch with the\n"
    "kernel's block timeline on (versions 7 on): when each thread block started, got its\n"
    "first K/V and ended, on which SM; it prints a summary (start spread, first data, tail,\n"
    "SM busy) and writes the blocks as CSV. --check-only runs the checks alone (every version,\n"
    "every pass, once) and times nothing: what compute-sanitizer runs need. Exit status: 0\n"
    "pass, 1 a check failed, 2 usage, 3 no GPU.";

/* --compare's list: 1 to PF_GPU_BENCH_MAX_RIVALS versions 0..
 * PF_GPU_KERNEL_VERSIONS, comma-separated, nothing else. 0, or -1 when
 * the list is not that. */
static int bench_parse_versions(const char *s, int *out, int *n)
{
    int k = 0;
    for (;;) {
        char *end = NULL;
        if (*s < '0' || *s > '9')
            return -1; /* no sign, no space, no empty item */
        errno = 0;
        const long v = strtol(s, &end, 10);
        if (errno || v > PF_GPU_KERNEL_VERSIONS || k == PF_GPU_BENCH_MAX_RIVALS)
            return -1;
        out[k++] = (int)v;
        if (*end == '\0') {
            *n = k;
            return 0;
        }
        if (*end != ',')
            return -1;
        s = end + 1;
    }
}

/* Resolve the lengths: --lengths, else --len, else the workload's. */
static int *bench_lengths(const bench_args *a, const bench_workload *w, int *n_out)
{
    int *lens = NULL;
    if (a->lengths) {
        lens = malloc(sizeof(int) * BENCH_MAX_SEQS);
        if (!lens) {
            fprintf(stderr, "%s: out of memory\n", PROG);
            return NULL;
        }
        int n = pf_workload_parse_lengths(a->lengths, lens, BENCH_MAX_SEQS);
        if (n < 0) {
            pf_cli_error(PROG, "--lengths: expected comma-separated lengths >= 1 (at most %d), "
                               "got '%s'", BENCH_MAX_SEQS, a->lengths);
            free(lens);
            return NULL;
        }
        for (int i = 0; i < n; i++)
            if (lens[i] > BENCH_MAX_LEN) {
                pf_cli_error(PROG, "--lengths: %d is over the limit of %d tokens", lens[i],
                             BENCH_MAX_LEN);
                free(lens);
                return NULL;
            }
        *n_out = n;
        return lens;
    }
    const int n = a->seqs;
    lens = malloc(sizeof(int) * (size_t)n);
    if (!lens) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return NULL;
    }
    const int len = a->len > 0 ? a->len : w->len;
    if (len > 0) {
        for (int i = 0; i < n; i++)
            lens[i] = len;
    } else if (pf_workload_lengths(pf_mix_seed(), (uint64_t)a->seed, n, a->mix_scale,
                                   a->max_len, lens) != PF_OK) {
        pf_cli_error(PROG, "internal error: could not draw the lengths");
        free(lens);
        return NULL;
    }
    *n_out = n;
    return lens;
}

/* --profile-out and --timeline: a file the run writes, put in place only
 * when the run succeeds. The bytes go to a temporary file beside the
 * target (same directory: the rename is atomic) that replaces it at the
 * end; a failed run removes only its temporary file. Opening the target
 * with "w" up front, as before, truncated an existing file (a profile
 * measured earlier) and the failure path then removed it: a usage error or
 * a machine without a GPU destroyed it. A target that exists and is not a
 * regular file (a pipe, /dev/stdout) is written directly and never
 * removed: there is nothing to keep and renaming over it would be wrong. */
typedef struct {
    const char *path; /* the target as given; NULL when not asked for   */
    char *tmp;        /* the temporary file; NULL when writing directly */
} bench_out;

/* A run stopped by a signal (Ctrl-C in a long --compare) must not leave
 * its temporary files behind either: while one exists, SIGINT, SIGTERM and
 * SIGHUP (those not ignored) remove every one and then take their default
 * action (the exit status still says which signal). unlink, signal and raise are
 * async-signal-safe; a path enters the table once mkstemp has written it
 * and leaves it only after the file has been renamed or removed, so the
 * handler never reads a half-written or freed path, and unlinking one
 * already gone is harmless. Two slots: --timeline and --profile-out. */
static char *volatile bench_tmp_live[2];

static void bench_out_on_signal(int sig)
{
    for (int i = 0; i < 2; i++)
        if (bench_tmp_live[i])
            unlink(bench_tmp_live[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Track tmp (slot: a free one) and install the handlers once. */
static void bench_out_track(char *tmp)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    static int installed;
    for (int i = 0; i < 2; i++)
        if (!bench_tmp_live[i]) {
            bench_tmp_live[i] = tmp;
            break;
        }
    for (size_t i = 0; !installed && i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        /* one ignored stays ignored (nohup, a background job's SIGINT) */
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = bench_out_on_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) /* one cleanup at a time */
            sigaddset(&sa.sa_mask, sigs[k]);
        sigaction(sigs[i], &sa, NULL);
    }
    installed = 1;
}

static void bench_out_untrack(const char *tmp)
{
    for (int i = 0; i < 2; i++)
        if (bench_tmp_live[i] == tmp)
            bench_tmp_live[i] = NULL;
}

/* Check that the target can be written and make the temporary file.
 * PF_CLI_OK, or PF_CLI_USAGE after one line naming the flag. */
static int bench_out_open(bench_out *o, const char *flag, const char *path)
{
    struct stat st;
    o->path = path;
    o->tmp = NULL;
    int exists = lstat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return pf_cli_error(PROG, "--%s: cannot write '%s': %s", flag, path, strerror(EISDIR));
    if (exists && !S_ISREG(st.st_mode)) {
        FILE *f = fopen(path, "a"); /* a pipe or device: check, write later */
        if (!f)
            return pf_cli_error(PROG, "--%s: cannot write '%s': %s", flag, path, strerror(errno));
        fclose(f);
        return PF_CLI_OK;
    }
    if (exists && access(path, W_OK) != 0)
        return pf_cli_error(PROG, "--%s: cannot write '%s': %s", flag, path, strerror(errno));
    size_t n = strlen(path);
    o->tmp = malloc(n + sizeof ".XXXXXX");
    if (!o->tmp)
        return pf_cli_error(PROG, "out of memory");
    memcpy(o->tmp, path, n);
    memcpy(o->tmp + n, ".XXXXXX", sizeof ".XXXXXX");
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        return pf_cli_error(PROG, "--%s: cannot write '%s': %s", flag, path, strerror(e));
    }
    /* the mode the target has, or a new file's (mkstemp makes it 0600) */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, exists ? st.st_mode & 07777 : 0666 & ~mask);
    close(fd);
    bench_out_track(o->tmp);
    return PF_CLI_OK;
}

/* Where the run writes: the temporary file, or the target itself. */
static const char *bench_out_name(const bench_out *o) { return o->tmp ? o->tmp : o->path; }

/* Put the file in place after a successful run (ok), else drop the
 * temporary file. Returns 0, or -1 after a line on stderr. */
static int bench_out_finish(bench_out *o, const char *flag, int ok)
{
    int rc = 0;
    if (o->tmp && ok && rename(o->tmp, o->path) != 0) {
        fprintf(stderr, "%s: --%s: cannot replace '%s': %s\n", PROG, flag, o->path, strerror(errno));
        rc = -1;
    }
    if (o->tmp && (!ok || rc != 0))
        remove(o->tmp);
    bench_out_untrack(o->tmp);
    free(o->tmp);
    o->tmp = NULL;
    return rc;
}

/* One row of the timing table. */
static void bench_timing_row(pf_report *r, const char *name, const pf_gpu_timing *t)
{
    pf_report_cell_str(r, name);
    pf_report_cell_num(r, t->median_ms, "%.4f");
    pf_report_cell_num(r, t->mean_ms, "%.4f");
    pf_report_cell_num(r, t->sd_ms, "%.4f");
    pf_report_cell_num(r, t->min_ms, "%.4f");
    pf_report_cell_num(r, t->gbps, "%.0f");
    pf_report_cell_num(r, t->frac_bw, "%.3f");
}

/* One figure of compared version k: key c<k+1>_<name> (the position in
 * the list, so a repeated version keeps its own keys), label given. */
static void bench_compare_num(pf_report *r, int k, const char *name, const char *label, double v,
                              const char *fmt, const char *unit)
{
    char key[48];
    snprintf(key, sizeof key, "c%d_%s", k + 1, name);
    pf_report_num(r, key, label, v, fmt, unit);
}

/* --compare: each version's plan, its time against --kernel's pass by
 * pass (below 1: faster) and its checks. */
static void bench_add_compare(pf_report *r, const pf_gpu_bench_result *res)
{
    pf_report_section(r, "compare", res->timed ? "Versions compared (same process, passes interleaved)"
                                               : "Versions compared (same data, checked, not timed)");
    pf_report_num(r, "base_version", "against version", res->version, "%.0f", NULL);
    static const char *const pass[3] = {"naive", "ordered", "shuffled"};
    const double base[3] = {res->naive.median_ms, res->ordered.median_ms,
                            res->shuffled.median_ms};
    for (int k = 0; k < res->num_rivals; k++) {
        const pf_gpu_bench_rival *v = &res->rival[k];
        const double t[3] = {v->naive.median_ms, v->ordered.median_ms, v->shuffled.median_ms};
        const int n = v->version;
        char name[32], label[96];
        snprintf(label, sizeof label, "version %d (compared #%d)", n, k + 1);
        bench_compare_num(r, k, "version", label, n, "%.0f", NULL);
        snprintf(label, sizeof label, "  v%d split-KV chunk", n);
        bench_compare_num(r, k, "chunk", label, v->chunk_tokens, "%.0f", "tokens");
        snprintf(label, sizeof label, "  v%d whole sequences a block (0: one)", n);
        bench_compare_num(r, k, "pack", label, v->pack, "%.0f", NULL);
        for (int i = 0; i < 3 && res->timed; i++) {
            if (i == 2 && !res->have_shuffled)
                continue;
            snprintf(name, sizeof name, "%s_ratio", pass[i]);
            snprintf(label, sizeof label, "  v%d / v%d, %s time", n, res->version, pass[i]);
            bench_compare_num(r, k, name, label, base[i] > 0 ? t[i] / base[i] : 0, "%.3f", "x");
        }
        snprintf(label, sizeof label, "  v%d max |naive - CPU reference|", n);
        bench_compare_num(r, k, "max_err_ref", label, v->max_err_ref, "%.3g", NULL);
        snprintf(label, sizeof label, "  v%d max |naive - v%d's naive|", n, res->version);
        bench_compare_num(r, k, "max_diff_base", label, v->max_diff_base, "%.3g", NULL);
        snprintf(label, sizeof label, "  v%d max |paged-ordered - naive|", n);
        bench_compare_num(r, k, "max_diff_ordered", label, v->max_diff_ordered, "%.3g", NULL);
        if (res->have_shuffled) {
            snprintf(label, sizeof label, "  v%d max |paged-shuffled - naive|", n);
            bench_compare_num(r, k, "max_diff_shuffled", label, v->max_diff_shuffled, "%.3g",
                              NULL);
        }
    }
    if (res->timed)
        pf_report_note(r, "a ratio is the compared version's median over --kernel's for the same "
                          "pass, both timed in one round-robin; a repeat of --kernel shows the "
                          "noise");
}

/* The report of a run, a section a function, in the order printed. */
static void results_setup(pf_report *r, const bench_args *a, const bench_workload *w, const int *lens, int n,
                          const pf_gpu_bench_cfg *cfg, const pf_gpu_bench_result *res)
{
    long long total = 0;
    int mn = lens[0], mx = lens[0];
    for (int i = 0; i < n; i++) {
        total += lens[i];
        if (lens[i] < mn)
            mn = lens[i];
        if (lens[i] > mx)
            mx = lens[i];
    }
    pf_report_section(r, "device", "Device");
    pf_report_str(r, "name", "GPU", res->device);
    pf_report_num(r, "sms", "multiprocessors", res->sm_count, "%.0f", NULL);
    pf_report_num(r, "read_bw_gbps", "streaming read bandwidth (measured now)", res->read_bw_gbps,
                  "%.0f", "GB/s");

    pf_report_section(r, "workload", "Workload");
    pf_report_str(r, "name", "workload", w->name);
    pf_report_num(r, "seqs", "sequences", n, "%.0f", NULL);
    pf_report_num(r, "tokens", "tokens", (double)total, "%.0f", NULL);
    pf_report_num(r, "len_min", "length min", mn, "%.0f", NULL);
    pf_report_num(r, "len_mean", "length mean", (double)total / n, "%.1f", NULL);
    pf_report_num(r, "len_max", "length max", mx, "%.0f", NULL);
    pf_report_num(r, "q_heads", "query heads", cfg->num_q_heads, "%.0f", NULL);
    pf_report_num(r, "kv_heads", "KV heads", cfg->num_kv_heads, "%.0f", NULL);
    pf_report_num(r, "head_dim", "head dim", cfg->head_dim, "%.0f", NULL);
    pf_report_str(r, "dtype", "dtype", pf_gpu_dtype_name(cfg->dtype));
    pf_report_num(r, "block_size", "block size", cfg->block_size, "%.0f", "tokens");
    pf_report_num(r, "naive_cap", "naive capacity", cfg->naive_cap, "%.0f", "tokens/seq");
    pf_report_num(r, "frames", "frames mapped", res->frames, "%.0f", NULL);
    pf_report_num(r, "chunk", "split-KV chunk", res->chunk_tokens, "%.0f", "tokens");
    pf_report_num(r, "splits", "chunks of the longest sequence", res->splits, "%.0f", NULL);
    pf_report_num(r, "units", "work-list units (0: grid order)", res->units, "%.0f", NULL);
    pf_report_num(r, "tail", "tail units a block's worth (0: none)", a->tail, "%.0f", NULL);
    pf_report_num(r, "pack", "whole sequences a block (v33; 0: one)", res->pack, "%.0f", NULL);
    pf_report_num(r, "kernel", "kernel version", res->version, "%.0f", NULL);
    pf_report_num(r, "group_tile", "query heads a block serves", res->group_tile, "%.0f", NULL);
    pf_report_num(r, "iters", "timed iterations per pass", a->iters, "%.0f", NULL);
    pf_report_num(r, "seed", "data seed", (double)a->seed, "%.0f", NULL);
    pf_report_num(r, "shuffle_seed", "shuffle seed", (double)a->shuffle_seed, "%.0f", NULL);
    pf_report_num(r, "shuffle_window", "shuffle window, frames (0: the whole pool)",
                  a->shuffle_window, "%.0f", NULL);
    pf_report_str(r, "kv_layout",
                  res->kv_interleaved ? "paged pools (interleaved: a page's K and V side by side)"
                                      : "paged pools (split: a K pool and a V pool)",
                  kv_layout_names[res->kv_interleaved ? 1 : 0]);
}

static void results_memory(pf_report *r, const pf_gpu_bench_result *res)
{
    pf_report_section(r, "memory", "KV memory reserved (decimal MB)");
    pf_report_num(r, "naive_mb", "naive (seqs x capacity)", res->naive_reserved / 1e6, "%.2f",
                  "MB");
    pf_report_num(r, "paged_mb", "paged (frames mapped)", res->paged_reserved / 1e6, "%.2f", "MB");
    pf_report_num(r, "savings", "naive / paged",
                  res->paged_reserved ? (double)res->naive_reserved / res->paged_reserved : 0,
                  "%.2f", "x");
    pf_report_num(r, "util_naive_pct", "utilization naive",
                  res->naive_reserved ? 100.0 * res->kv_bytes / res->naive_reserved : 0, "%.1f",
                  "%");
    pf_report_num(r, "util_paged_pct", "utilization paged",
                  res->paged_reserved ? 100.0 * res->kv_bytes / res->paged_reserved : 0, "%.1f",
                  "%");
    pf_report_num(r, "kv_mb", "KV bytes read per pass", res->kv_bytes / 1e6, "%.2f", "MB");
}

/* The timing table: --kernel's passes, each compared version's, the stream. */
static void results_timing(pf_report *r, const pf_gpu_bench_result *res)
{
    static const char *const keys[] = {"pass", "median_ms", "mean_ms", "sd_ms", "min_ms",
                                       "kv_gbps", "frac_read_bw"};
    static const char *const labels[] = {"pass", "median ms", "mean ms", "sd ms", "min ms",
                                         "KV GB/s", "of read BW"};
    pf_report_table(r, "timing", "Attention latency (CUDA events)", 7, keys, labels);
    const pf_gpu_timing *t[3] = {&res->naive, &res->ordered, &res->shuffled};
    const char *names[3] = {"naive", "paged-ordered", "paged-shuffled"};
    const int npass = res->have_shuffled ? 3 : 2;
    for (int i = 0; i < npass; i++)
        bench_timing_row(r, names[i], t[i]);
    for (int k = 0; k < res->num_rivals; k++) {
        const pf_gpu_bench_rival *v = &res->rival[k];
        const pf_gpu_timing *vt[3] = {&v->naive, &v->ordered, &v->shuffled};
        /* a version named twice (or --kernel's own) keeps its place in the
         * list in its rows' names, as in the c<k>_ keys: "v12 #2 naive" */
        int repeat = v->version == res->version;
        for (int j = 0; j < k; j++)
            repeat |= res->rival[j].version == v->version;
        char tag[16] = "";
        if (repeat)
            snprintf(tag, sizeof tag, " #%d", k + 1);
        for (int i = 0; i < npass; i++) {
            char name[48];
            snprintf(name, sizeof name, "v%d%s %s", v->version, tag, names[i]);
            bench_timing_row(r, name, vt[i]);
        }
    }
    if (res->have_stream)
        bench_timing_row(r, "stream, same bytes", &res->stream);
    pf_report_note(r, "KV GB/s = K+V bytes of the real tokens / median time (1 GB = 1e9 B)");
    if (res->num_rivals)
        pf_report_note(r, "vN rows: --compare's versions, their passes interleaved with the "
                          "others' (the unnamed rows are --kernel's)");
    if (res->have_stream)
        pf_report_note(r, "stream, same bytes: the read probe's kernel over a buffer of the pass's "
                          "K+V bytes, flushed and interleaved with the passes");
}

static void results_ratios(pf_report *r, const pf_gpu_bench_result *res)
{
    pf_report_section(r, "ratios", "Ratios (medians of this run)");
    const double paged = res->have_shuffled ? res->shuffled.median_ms : res->ordered.median_ms;
    pf_report_num(r, "paged_slowdown", "paged slowdown vs naive",
                  res->naive.median_ms > 0 ? paged / res->naive.median_ms : 0, "%.3f", "x");
    pf_report_num(r, "ordered_vs_naive", "paged-ordered / naive",
                  res->naive.median_ms > 0 ? res->ordered.median_ms / res->naive.median_ms : 0,
                  "%.3f", "x");
    if (res->have_shuffled)
        pf_report_num(r, "scatter_cost", "cost of scattering (shuffled / ordered)",
                      res->ordered.median_ms > 0 ? res->shuffled.median_ms / res->ordered.median_ms
                                                 : 0,
                      "%.3f", "x");
    if (res->have_stream)
        pf_report_num(r, "paged_vs_stream", "paged / a stream of the same bytes (throughput)",
                      paged > 0 ? res->stream.median_ms / paged : 0, "%.3f", NULL);
    if (!res->have_shuffled)
        pf_report_note(r, "--shuffle-seed 0: ordered frames only; slowdown is ordered / naive");
}

/* One changing-batch loop's rows (gpu/gpu.cu, case_host_churn): its host
 * time a run by the graph path, the graphs it made, and its time launched
 * directly, timed in turn with it; keys KEY_us, KEY_makes, KEY_direct_us. */
static void churn_rows(pf_report *r, const char *key, const char *every, int plans,
                       const pf_gpu_churn *ch, const char *makes_what)
{
    char k[48], what[96];
    snprintf(what, sizeof what, "host time per run, batch changing every %s (%d sizes)", every,
             plans);
    snprintf(k, sizeof k, "%s_us", key);
    pf_report_num(r, k, what, ch->us_per_run, "%.2f", "us");
    snprintf(k, sizeof k, "%s_makes", key);
    pf_report_num(r, k, makes_what, ch->graph_makes, "%.0f", NULL);
    snprintf(k, sizeof k, "%s_direct_us", key);
    pf_report_num(r, k, "the same, launched directly (timed in turn)", ch->direct_us, "%.2f",
                  "us");
}

static void results_api(pf_report *r, const pf_gpu_bench_result *res)
{
    pf_report_section(r, "api", "Public API (plan once, run many times)");
    pf_report_num(r, "host_us_per_run", "host time per pf_gpu_attn_run (loop of 50, no sync)",
                  res->host_us_per_run, "%.2f", "us");
    pf_report_num(r, "launch_floor_us", "host time per empty launch (same loop and arguments)",
                  res->launch_floor_us, "%.2f", "us");
    pf_report_num(r, "launch_direct_us",
                  "host time per empty launch, direct (cuLaunchKernel, no graph)",
                  res->launch_direct_us, "%.2f", "us");
    pf_report_num(r, "graph_us_per_replay",
                  "host time per replay of a CUDA graph of one run (same loop)",
                  res->graph_us_per_replay, "%.2f", "us");
    if (res->churn_plans > 0) {
        char what[96];
        snprintf(what, sizeof what,
                 "host time per pf_gpu_attn_plan_make from host lengths (median of %d batches)",
                 res->churn_plans);
        pf_report_num(r, "plan_make_us", what, res->plan_make_us, "%.1f", "us");
        char every[32];
        snprintf(every, sizeof every, "%d-run step", res->churn_layers);
        churn_rows(r, "churn_step", every, res->churn_plans, &res->churn_step,
                   "graphs made over its 20 timed steps");
        churn_rows(r, "churn_run", "run", res->churn_plans, &res->churn_run,
                   "graphs made by that loop after two warm rounds");
    }
}

/* --timeline: the block timeline's figures (when the run took one). */
static void results_timeline(pf_report *r, const bench_args *a, const pf_gpu_bench_result *res)
{
    const pf_gpu_timeline *tl = &res->timeline;
    pf_report_section(r, "timeline", "Block timeline (one more paged launch, globaltimer)");
    pf_report_num(r, "tl_blocks", "thread blocks", tl->blocks, "%.0f", NULL);
    pf_report_num(r, "tl_sms", "SMs that ran one", tl->sms, "%.0f", NULL);
    pf_report_num(r, "tl_span_us", "first start to last end", tl->span_us, "%.2f", "us");
    pf_report_num(r, "tl_last_start_us", "first start to last start", tl->last_start_us,
                  "%.2f", "us");
    pf_report_num(r, "tl_ready_us", "start to first K/V landed (median)", tl->ready_us,
                  "%.2f", "us");
    pf_report_num(r, "tl_stream_us", "first K/V to last tile done (median)", tl->stream_us,
                  "%.2f", "us");
    pf_report_num(r, "tl_finish_us", "last tile to block end: merge (median)", tl->finish_us,
                  "%.2f", "us");
    pf_report_num(r, "tl_run_us", "block duration (median)", tl->run_us, "%.2f", "us");
    pf_report_num(r, "tl_first_end_us", "first start to first end", tl->first_end_us, "%.2f",
                  "us");
    pf_report_num(r, "tl_median_end_us", "first start to median end", tl->median_end_us,
                  "%.2f", "us");
    pf_report_num(r, "tl_tail_us", "median end to last end",
                  tl->span_us - tl->median_end_us, "%.2f", "us");
    pf_report_num(r, "tl_sm_busy", "SM time holding a block", tl->sm_busy, "%.3f", NULL);
    if (a->timeline)
        pf_report_str(r, "tl_csv", "per-block records (CSV)", a->timeline);
}

static void results_checks(pf_report *r, const bench_args *a, const pf_gpu_bench_result *res)
{
    pf_report_section(r, "checks", "Checks");
    pf_report_num(r, "max_err_ref", "max |naive - CPU reference|", res->max_err_ref, "%.3g",
                  NULL);
    pf_report_num(r, "ref_allowed", "  allowed there (tol + dtype eps x |ref|)", res->ref_allowed,
                  "%.3g", NULL);
    pf_report_num(r, "ref_checked", "  output elements checked (all sequences)",
                  (double)res->ref_checked, "%.0f", NULL);
    pf_report_num(r, "max_diff_ordered", "max |paged-ordered - naive|", res->max_diff_ordered,
                  "%.3g", NULL);
    if (res->have_shuffled)
        pf_report_num(r, "max_diff_shuffled", "max |paged-shuffled - naive|",
                      res->max_diff_shuffled, "%.3g", NULL);
    pf_report_num(r, "tolerance", "tolerance", a->tolerance, "%.3g", NULL);
    pf_report_str(r, "readback", "pool read-back through the page tables",
                  res->readback_ok ? "ok" : "MISMATCH");
    pf_report_str(r, "result", "result", res->pass ? "PASS" : "FAIL");
    if (!res->pass)
        pf_report_str(r, "failure", "first failure", res->failure);
}

static void add_results(pf_report *r, const bench_args *a, const bench_workload *w,
                        const int *lens, int n, const pf_gpu_bench_cfg *cfg,
                        const pf_gpu_bench_result *res)
{
    results_setup(r, a, w, lens, n, cfg, res);
    results_memory(r, res);
    if (res->timed) {
        results_timing(r, res);
        results_ratios(r, res);
    }
    if (res->num_rivals)
        bench_add_compare(r, res);
    if (res->timed)
        results_api(r, res);
    if (res->have_timeline)
        results_timeline(r, a, res);
    results_checks(r, a, res);
}

/* --profile-out: measure the cost-model figures and write them. 0 or -1
 * (the reason on stderr). */
static int write_profile(FILE *f, int iters)
{
    pf_gpu_profile p;
    char err[300] = "";
    int rc = pf_gpu_profile_measure(&p, iters, err, sizeof err);
    if (rc != PF_OK) {
        fprintf(stderr, "%s: --profile-out: %s\n", PROG, err[0] ? err : pf_strerror(rc));
        return -1;
    }
    rc = pf_gpu_profile_write(f, &p);
    if (rc != PF_OK) {
        fprintf(stderr, "%s: --profile-out: %s\n", PROG, pf_strerror(rc));
        return -1;
    }
    return 0;
}

/* The flag table, pointing into *a. BENCH_NOPTS rows and the end. */
#define BENCH_NOPTS 31
static void bench_opts(pf_opt o[BENCH_NOPTS + 1], bench_args *a)
{
    const pf_opt t[] = {
        {"workload", PF_OPT_CHOICE, &a->workload, 0, 0, workload_names, NULL,
         "named workload (shape flags below override it)", 0},
        {"seqs", PF_OPT_INT, &a->seqs, 1, BENCH_MAX_SEQS, NULL, "N", "sequences", 0},
        {"len", PF_OPT_INT, &a->len, 1, BENCH_MAX_LEN, NULL, "N",
         "every sequence this long (instead of the workload's lengths)", 0},
        {"lengths", PF_OPT_STRING, &a->lengths, 0, 0, NULL, "L1,L2,...",
         "explicit lengths (sets the sequence count)", 0},
        {"mix-scale", PF_OPT_INT, &a->mix_scale, 1, 512, NULL, "K",
         "seed length mix scaled by K (when no --len)", 0},
        {"max-len", PF_OPT_INT, &a->max_len, 1, BENCH_MAX_LEN, NULL, "N",
         "naive capacity per sequence (and the mix's clamp)", 0},
        {"q-heads", PF_OPT_INT, &a->hq, 1, 1024, NULL, "N", "query heads", 0},
        {"kv-heads", PF_OPT_INT, &a->hkv, 1, 1024, NULL, "N", "KV heads (divides q heads)", 0},
        {"head-dim", PF_OPT_INT, &a->head_dim, 64, 128, NULL, "D", "head dim: 64 or 128", 0},
        {"dtype", PF_OPT_CHOICE, &a->dtype, 0, 0, dtype_names, NULL, "element type", 0},
        {"block-size", PF_OPT_INT, &a->block_size, 8, 256, NULL, "B", "tokens per block", 0},
        {"iters", PF_OPT_INT, &a->iters, 1, 100000, NULL, "N", "timed iterations per pass", 0},
        {"seed", PF_OPT_I64, &a->seed, 0, 9007199254740991.0, NULL, "S",
         "seed of the lengths and the data", 0},
        {"shuffle-seed", PF_OPT_I64, &a->shuffle_seed, 0, 9007199254740991.0, NULL, "S",
         "frame permutation seed; 0: ordered frames only", 0},
        {"shuffle-window", PF_OPT_INT, &a->shuffle_window, 1, 1 << 30, NULL, "N",
         "shuffle frames only within runs of N (default: across the whole pool)", 0},
        {"tolerance", PF_OPT_DOUBLE, &a->tolerance, 0, 1, NULL, "F",
         "max |paged - naive|, and the absolute part of the reference check", 0},
        {"ref-all-heads", PF_OPT_FLAG, &a->ref_all_heads, 0, 0, NULL, NULL,
         "CPU reference on every head even for large workloads", 0},
        {"no-read-bw", PF_OPT_FLAG, &a->no_read_bw, 0, 0, NULL, NULL,
         "skip the read-bandwidth probe (fractions of it then print as 0)", 0},
        {"check-only", PF_OPT_FLAG, &a->check_only, 0, 0, NULL, NULL,
         "check every pass and time nothing (for compute-sanitizer runs)", 0},
        {"kernel", PF_OPT_INT, &a->kernel, 0, PF_GPU_KERNEL_VERSIONS, NULL, "N",
         "kernel version, 0: the default (docs/gpu.md)", 0},
        {"compare", PF_OPT_STRING, &a->compare, 0, 0, NULL, "V1,V2,...",
         "also time these versions (at most " PF_BENCH_STR(PF_GPU_BENCH_MAX_RIVALS)
         ") on the same data, interleaved", 0},
        {"kv-layout", PF_OPT_CHOICE, &a->kv_layout, 0, 0, kv_layout_names, NULL,
         "paged pools: split (a K and a V pool) or interleaved (a page's K and V together)", 0},
        {"splits", PF_OPT_INT, &a->splits, 0, 256, NULL, "N",
         "split-KV chunks of the longest sequence; 0: the planner's choice", 0},
        {"grid-order", PF_OPT_FLAG, &a->grid_order, 0, 0, NULL, NULL,
         "launch every chunk in grid order, without the planner's work list", 0},
        {"tail", PF_OPT_INT, &a->tail, 1, 8, NULL, "N",
         "cut each block's last 1/8 into N blocks of its own (balanced by the hardware)", 0},
        {"pack", PF_OPT_INT, &a->pack, 1, PF_GPU_PACK_MAX, NULL, "N",
         "version 33: stream N whole sequences a block (1: one), not the planner's pack", 0},
        {"group-tile", PF_OPT_INT, &a->group_tile, 0, 8, NULL, "N",
         "query heads one block serves (1, 2, 4, 8 dividing the group); 0: the planner's", 0},
        {"layers", PF_OPT_INT, &a->layers, 2, PF_GPU_BENCH_MAX_LAYERS, NULL, "N",
         "runs of one plan a step in the changing-batch host-time loop: the model's layers "
         "(llama-3-8B's 32)", 0},
        {"timeline", PF_OPT_STRING, &a->timeline, 0, 0, NULL, "FILE",
         "one more paged launch with the block timeline on; its blocks as CSV to FILE", 0},
        {"profile-out", PF_OPT_STRING, &a->profile_out, 0, 0, NULL, "FILE",
         "also measure and write the simulator's GPU profile to FILE", 0},
        {"format", PF_OPT_CHOICE, &a->format, 0, 0, pf_fmt_names, NULL, "output format", 0},
        {0},
    };
    _Static_assert(sizeof t / sizeof t[0] == BENCH_NOPTS + 1, "BENCH_NOPTS");
    memcpy(o, t, sizeof t);
}

/* The workload gives every value a flag did not. */
static void bench_apply_workload(bench_args *a, pf_opt *opts, const bench_workload *w)
{
    if (!pf_cli_find(opts, "seqs")->seen)
        a->seqs = w->seqs;
    if (!pf_cli_find(opts, "mix-scale")->seen)
        a->mix_scale = w->mix_scale;
    if (!pf_cli_find(opts, "q-heads")->seen)
        a->hq = w->hq;
    if (!pf_cli_find(opts, "kv-heads")->seen)
        a->hkv = w->hkv;
    if (!pf_cli_find(opts, "head-dim")->seen)
        a->head_dim = w->head_dim;
    if (!pf_cli_find(opts, "block-size")->seen)
        a->block_size = w->block_size;
    if (!pf_cli_find(opts, "dtype")->seen)
        a->dtype = (int)w->dtype;
    if (!pf_cli_find(opts, "max-len")->seen)
        a->max_len = w->cap;
}

/* The flags' combinations, before any length is drawn or GPU touched.
 * PF_CLI_OK, or PF_CLI_USAGE after one line. */
static int bench_check(bench_args *a, pf_opt *opts)
{
    if (pf_cli_find(opts, "lengths")->seen && pf_cli_find(opts, "len")->seen)
        return pf_cli_error(PROG, "--len and --lengths exclude each other");
    if (pf_cli_find(opts, "lengths")->seen && pf_cli_find(opts, "seqs")->seen)
        return pf_cli_error(PROG, "--seqs and --lengths exclude each other (the lengths give the "
                                  "count)");
    if (pf_cli_find(opts, "mix-scale")->seen &&
        (pf_cli_find(opts, "lengths")->seen || pf_cli_find(opts, "len")->seen))
        return pf_cli_error(PROG, "--mix-scale scales the workload's drawn lengths: not with "
                                  "--len or --lengths");
    char why[200];
    if (!pf_gpu_shape_ok(a->hq, a->hkv, a->head_dim, a->block_size, why, sizeof why))
        return pf_cli_error(PROG, "%s", why);
    if (a->group_tile && ((a->group_tile & (a->group_tile - 1)) || (a->hq / a->hkv) % a->group_tile))
        return pf_cli_error(PROG, "--group-tile %d: a block serves 1, 2, 4 or 8 query heads "
                                  "dividing the group of %d", a->group_tile, a->hq / a->hkv);
    if (a->shuffle_window && !a->shuffle_seed)
        return pf_cli_error(PROG, "--shuffle-window: --shuffle-seed 0 leaves the frames in order");
    if (a->tail && a->grid_order)
        return pf_cli_error(PROG, "--tail: the tail's units need the work list (no --grid-order)");
    if (a->compare && bench_parse_versions(a->compare, a->rivals, &a->num_rivals) != 0)
        return pf_cli_error(PROG, "--compare: expected 1 to %d comma-separated kernel versions "
                                  "0..%d, got '%s'", PF_GPU_BENCH_MAX_RIVALS,
                            PF_GPU_KERNEL_VERSIONS, a->compare);
    /* the flags that force a plan apply to every version timed */
    int packs = 0;
    for (int k = 0; k <= a->num_rivals; k++) {
        const int v = k ? a->rivals[k - 1] : a->kernel;
        if (a->tail && v && !pf_gpu_version_takes_tail(v)) {
            char can[64];
            pf_gpu_tail_versions(can, sizeof can);
            return pf_cli_error(PROG, "--tail: kernel version %d cannot run one (versions %s can)",
                                v, can);
        }
        if (a->grid_order && v == 11)
            return pf_cli_error(PROG,
                                "--grid-order: kernel version 11 runs from its work list only");
        packs += pf_gpu_version_takes_pack(v);
    }
    if (a->pack && !packs)
        return pf_cli_error(PROG, "--pack: only kernel version 33 packs sequences (--kernel 33 "
                                  "or --compare 33)");
    if (a->pack && a->grid_order)
        return pf_cli_error(PROG, "--pack: a pack is units of the work list (no --grid-order)");
    if (a->pack > 1 && a->pack % PF_GPU_PACK_STEP)
        return pf_cli_error(PROG, "--pack %d: 1 or a multiple of %d (a block's warps stream a "
                                  "sequence each)", a->pack, PF_GPU_PACK_STEP);
    if (a->pack && a->dtype == PF_GPU_F32)
        return pf_cli_error(PROG, "--pack: fp32 plans never pack (16-bit only)");
    if (a->pack && (a->tail || a->splits > 1))
        return pf_cli_error(PROG, "--pack: a pack is whole sequences (no --tail, --splits 1)");
    /* --check-only times nothing, so a flag that asks for a measurement
     * contradicts it (--iters and --no-read-bw have nothing to act on, and
     * are accepted) */
    const int layers = pf_cli_find(opts, "layers")->seen;
    if (a->check_only && (a->timeline || a->profile_out || layers))
        return pf_cli_error(PROG, "--check-only times nothing: %s measures",
                            a->timeline      ? "--timeline"
                            : a->profile_out ? "--profile-out"
                                             : "--layers");
    if (a->timeline && a->kernel > 0 && a->kernel < PF_GPU_TRACE_MIN_VERSION)
        return pf_cli_error(PROG, "--timeline: kernel version %d records no timeline (versions "
                                  "%d to %d do)", a->kernel, PF_GPU_TRACE_MIN_VERSION,
                            PF_GPU_KERNEL_VERSIONS);
    return PF_CLI_OK;
}

/* The lengths against the naive capacity and --splits: a longer --len or
 * --lengths raises the capacity the workload gave, but not one typed.
 * PF_CLI_OK, or PF_CLI_USAGE after one line. */
static int bench_check_lengths(bench_args *a, int max_len_seen, const int *lens, int n)
{
    int maxlen = 0;
    for (int i = 0; i < n; i++)
        if (lens[i] > maxlen)
            maxlen = lens[i];
    if (maxlen > a->max_len) {
        if (max_len_seen)
            return pf_cli_error(PROG, "--max-len: the naive capacity %d is below the longest "
                                      "sequence (%d)", a->max_len, maxlen);
        a->max_len = maxlen;
    }
    /* --pack: its sequences, whole pages each, share a block's tokens
     * (version 33's: pf_gpu_chunk_max_tokens) */
    const long long whole = ((long long)maxlen + a->block_size - 1) / a->block_size * a->block_size;
    const int pack_max = pf_gpu_chunk_max_tokens(a->block_size, 33);
    if (a->pack > 1 && a->pack * whole > pack_max)
        return pf_cli_error(PROG, "--pack %d: %d sequences of up to %lld tokens (whole pages) "
                                  "exceed a block's %d", a->pack, a->pack, whole, pack_max);
    /* --splits: a chunk is whole pages and at most pf_gpu_chunk_max_tokens
     * (the smallest over the versions run); a sequence is at most each
     * version's chunks of it */
    int chunk_max = pf_gpu_chunk_max_tokens(a->block_size, a->kernel);
    for (int k = 0; k <= a->num_rivals; k++) {
        const int v = k ? a->rivals[k - 1] : a->kernel;
        const int most = pf_gpu_version_max_splits(v);
        const int its = pf_gpu_chunk_max_tokens(a->block_size, v);
        chunk_max = its < chunk_max ? its : chunk_max;
        if (a->splits > most)
            return pf_cli_error(PROG, "--splits %d: kernel version %d runs at most %d chunks a "
                                      "sequence", a->splits, v, most);
        if ((long long)maxlen > (long long)most * its)
            return pf_cli_error(PROG, "a sequence of %d tokens: kernel version %d runs at most %d "
                                      "chunks of %d tokens (%d-token pages)", maxlen, v, most,
                                its, a->block_size);
    }
    if (a->splits > 0 && (maxlen + a->splits - 1) / a->splits > chunk_max)
        return pf_cli_error(PROG, "--splits %d: a sequence of %d tokens needs at least %d chunks of "
                                  "at most %d tokens", a->splits, maxlen,
                            (maxlen + chunk_max - 1) / chunk_max, chunk_max);
    return PF_CLI_OK;
}

/* What the GPU stage runs: the flags as its configuration. */
static pf_gpu_bench_cfg bench_config(const bench_args *a, const int *lens, int n,
                                     const char *timeline_csv)
{
    pf_gpu_bench_cfg cfg = {
        .num_seqs = n, .seq_lens = lens, .naive_cap = a->max_len, .num_q_heads = a->hq,
        .num_kv_heads = a->hkv, .head_dim = a->head_dim, .block_size = a->block_size,
        .dtype = (pf_gpu_dtype)a->dtype, .iters = a->iters, .seed = (unsigned long long)a->seed,
        .shuffle_seed = (unsigned long long)a->shuffle_seed, .shuffle_window = a->shuffle_window,
        .tolerance = a->tolerance,
        .ref_all_heads = a->ref_all_heads, .measure_bw = !a->no_read_bw,
        .check_only = a->check_only, .version = a->kernel,
        .grid_order = a->grid_order,
        .tail = a->tail,
        .pack = a->pack,
        .splits = a->splits,
        .timeline = timeline_csv != NULL,
        .group_tile = a->group_tile,
        .layers = a->layers,
        .timeline_csv = timeline_csv,
        .num_rivals = a->num_rivals,
        .kv_interleaved = a->kv_layout,
    };
    memcpy(cfg.rivals, a->rivals, sizeof cfg.rivals);
    /* every sequence is always checked; heads are sampled (one q head per
     * kv head) only when all of them would cost the CPU too long */
    long long work = 0;
    for (int i = 0; i < n; i++)
        work += (long long)lens[i] * a->hq * a->head_dim;
    if (work <= (1LL << 32))
        cfg.ref_all_heads = 1;
    return cfg;
}

/* The device's passes: 0 when they ran (their checks may still have
 * failed: res->pass), else the exit status, the message printed: 3 with
 * no GPU, 2 for flags the plan refused (--splits, --tail), 1 for a
 * failure on the device. */
static int bench_gpu_run(const pf_gpu_bench_cfg *cfg, pf_gpu_bench_result *res)
{
    char err[300] = "";
    const int rc = pf_gpu_available(err, sizeof err) ? pf_gpu_bench_run(cfg, res, err, sizeof err)
                                                     : PF_ERR_UNAVAILABLE;
    if (rc == PF_OK)
        return 0;
    if (rc == PF_ERR_UNAVAILABLE) {
        fprintf(stderr, "%s: no GPU: %s\n", PROG, err);
        return 3;
    }
    fprintf(stderr, "%s: %s\n", PROG, err[0] ? err : pf_strerror(rc));
    return rc == PF_ERR_ARG ? 2 : 1;
}

/* --profile-out: the measured profile into the file's temporary name
 * (bench_out puts it in place); 0, or 1 with the message printed. */
static int bench_profile_save(const bench_args *a, const bench_out *o)
{
    FILE *f = fopen(bench_out_name(o), "w");
    if (!f) {
        fprintf(stderr, "%s: --profile-out: cannot write '%s': %s\n", PROG, a->profile_out,
                strerror(errno));
        return 1;
    }
    int status = write_profile(f, a->iters) != 0 ? 1 : 0;
    if (fclose(f) != 0 && status == 0) {
        fprintf(stderr, "%s: --profile-out: writing '%s' failed: %s\n", PROG, a->profile_out,
                strerror(errno));
        status = 1;
    }
    return status;
}

int pf_cmd_bench(int argc, char **argv)
{
    bench_args a = {
        .workload = 0, .seqs = 32, .len = 0, .max_len = 2048, .mix_scale = 1, .lengths = NULL,
        .hq = 1, .hkv = 1, .head_dim = 64, .block_size = 16, .dtype = PF_GPU_F32, .iters = 20,
        .seed = 42, .shuffle_seed = 1, .tolerance = 1e-3, .ref_all_heads = 0,
        .layers = PF_GPU_BENCH_LAYERS, .format = PF_FMT_TABLE,
    };
    pf_opt opts[BENCH_NOPTS + 1];
    bench_opts(opts, &a);
    int rc = pf_cli_start(PROG, bench_summary, opts, argc, argv);
    if (rc != PF_CLI_GO)
        return rc;
    const bench_workload *w = &workloads[a.workload];
    bench_apply_workload(&a, opts, w);
    if (bench_check(&a, opts) != PF_CLI_OK)
        return 2;
    /* both checked (a bad path is a usage error before any GPU work) and
     * put in place only by a run that succeeds (bench_out) */
    bench_out tl_out = {NULL, NULL}, prof_out = {NULL, NULL};
    if (a.timeline && bench_out_open(&tl_out, "timeline", a.timeline) != PF_CLI_OK)
        return 2;
    if (a.profile_out && bench_out_open(&prof_out, "profile-out", a.profile_out) != PF_CLI_OK) {
        bench_out_finish(&tl_out, "timeline", 0);
        return 2;
    }
    int n = 0, status = 2;
    pf_report *r = NULL;
    int *lens = bench_lengths(&a, w, &n);
    if (!lens || bench_check_lengths(&a, pf_cli_find(opts, "max-len")->seen, lens, n) != PF_CLI_OK)
        goto out;
    pf_gpu_bench_cfg cfg = bench_config(&a, lens, n, a.timeline ? bench_out_name(&tl_out) : NULL);
    pf_gpu_bench_result res;
    status = bench_gpu_run(&cfg, &res);
    if (status != 0)
        goto out;
    status = 1;
    r = pf_report_new();
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        goto out;
    }
    add_results(r, &a, w, lens, n, &cfg, &res);
    if (pf_report_print(r, (pf_fmt)a.format, stdout) != 0) {
        fprintf(stderr, "%s: out of memory while building the report\n", PROG);
        goto out;
    }
    if (!res.pass) {
        fprintf(stderr, "%s: check failed: %s\n", PROG, res.failure);
        goto out;
    }
    status = a.profile_out ? bench_profile_save(&a, &prof_out) : 0;
out:
    /* no half-written or empty profile or timeline left behind, and an
     * earlier one kept unless this run wrote a new one */
    if (bench_out_finish(&prof_out, "profile-out", status == 0) != 0 && status == 0)
        status = 1;
    if (bench_out_finish(&tl_out, "timeline", status == 0) != 0 && status == 0)
        status = 1;
    pf_report_free(r);
    free(lens);
    return status;
}
