/* bench/bench_gpu_plan.c - the planner's host time (gpu/host.c), no GPU needed.
 *
 * A decode loop plans every step: the batch and its lengths change, and a
 * plan made from the host lengths (the work list, the split-KV cut) is
 * only right for them (docs/gpu.md, *Plan and run*). So a plan's cost is
 * host time on every step, like FlashInfer's plan. This prints, in one
 * run, microseconds a plan for each workload of `pagefault bench` but
 * seed and mixed (and batch with 244 sequences, whose last wave is partial,
 * and two batches of varied lengths), for:
 *   plan        - pf_gpu__plan_compute_occ, as pf_gpu_attn_plan_make plans
 *   exhaustive  - the same search with every candidate chunk simulated
 *                 (the planner before the thirty-ninth session; it gives
 *                 the same plan, which this checks)
 * and their ratio. The machine is an H200's 132 SMs at 2 blocks an SM for
 * both of version 0's GQA candidates (v29 and v34; pf_gpu_attn_plan_make
 * asks the device for each kernel's own). Each point repeats for a fixed
 * time; on a shared machine compare the ratios of one run.
 *
 *   bench_gpu_plan [--seconds S] [--help]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"

#define SMS 132
#define PER_SM 2
#define MAX_SEQS 1024

typedef struct {
    const char *name;
    int n, hq, hkv, len; /* len 0: varied lengths (below) */
    pf_gpu_dtype dtype;
} plan_case;

static const plan_case cases[] = {
    {"llama", 64, 32, 8, 4096, PF_GPU_BF16},
    {"batch", 256, 32, 8, 1024, PF_GPU_BF16},
    {"batch of 244", 244, 32, 8, 1024, PF_GPU_BF16}, /* a partial last wave */
    {"long", 8, 32, 8, 32768, PF_GPU_BF16},
    {"mha", 32, 32, 32, 2048, PF_GPU_F16},
    {"single", 1, 32, 8, 1024, PF_GPU_BF16},
    {"varied 256", 256, 32, 8, 0, PF_GPU_BF16},
    {"varied 1024", 1024, 32, 8, 0, PF_GPU_BF16},
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef int (*plan_fn)(pf_gpu_attn_plan *, const pf_gpu_attn_shape *, int, const int *, int, int,
                       int, int, int);

/* Seconds a plan, planning for at least `seconds`; *out the last plan. */
static double time_plan(plan_fn fn, const pf_gpu_attn_shape *s, const int *lens, double seconds,
                        pf_gpu_attn_plan *out)
{
    long reps = 0;
    const double t0 = now_s();
    double t;
    do {
        if (fn(out, s, 1, lens, 0, 0, SMS, PER_SM, PER_SM) != PF_OK)
            return -1;
        reps++;
    } while ((t = now_s() - t0) < seconds);
    return t / reps;
}

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "bench_gpu_plan: %s\n", why);
    fprintf(why ? stderr : stdout, "usage: bench_gpu_plan [--seconds S] [--help]\n"
                                   "  --seconds S   time per point, 0.01..60 [0.3]\n");
    return why ? 2 : 0;
}

int main(int argc, char **argv)
{
    double seconds = 0.3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help"))
            return usage(NULL);
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            char *end;
            seconds = strtod(argv[++i], &end);
            if (*end || !(seconds >= 0.01 && seconds <= 60))
                return usage("--seconds must be a number in [0.01, 60]");
            continue;
        }
        char why[96];
        snprintf(why, sizeof why, "unknown or incomplete flag '%.40s'", argv[i]);
        return usage(why);
    }
    static int lens[MAX_SEQS];
    printf("%-17s %-22s %12s %14s %8s\n", "workload", "plan (version, cut)", "plan us", "exhaustive us",
           "ratio");
    int status = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const plan_case *w = &cases[c];
        /* varied: 64-4096 tokens, a fixed draw (a 32-bit LCG) */
        unsigned x = 12345;
        int longest = 1;
        for (int i = 0; i < w->n; i++) {
            x = x * 1664525u + 1013904223u;
            lens[i] = w->len ? w->len : 64 + (int)(x >> 8) % 4033;
            longest = lens[i] > longest ? lens[i] : longest;
        }
        const pf_gpu_attn_shape s = {w->n, w->hq, w->hkv, 128, 16, (longest + 15) / 16, longest,
                                     w->dtype, 0};
        pf_gpu_attn_plan fast, slow;
        const double tf = time_plan(pf_gpu__plan_compute_occ, &s, lens, seconds, &fast);
        const double ts = time_plan(pf_gpu__plan_compute_exhaustive, &s, lens, seconds, &slow);
        if (tf < 0 || ts < 0) {
            fprintf(stderr, "bench_gpu_plan: %s: the planner refused the shape\n", w->name);
            return 1;
        }
        char pick[48];
        snprintf(pick, sizeof pick, "v%d, %d x %d tokens", fast.version, fast.splits, fast.chunk);
        const int same = fast.version == slow.version && fast.chunk == slow.chunk &&
                         fast.splits == slow.splits && fast.units == slow.units &&
                         fast.pack == slow.pack;
        printf("%-17s %-22s %12.1f %14.1f %7.0fx%s\n", w->name, pick, tf * 1e6, ts * 1e6, ts / tf,
               same ? "" : "  DIFFERENT PLANS");
        if (!same)
            status = 1;
    }
    return status;
}
