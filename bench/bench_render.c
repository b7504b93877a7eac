/* bench/bench_render.c - how long one dashboard frame takes to render into
 * the cell buffer, for a 4096-frame pool (the seed's) and a 65536-frame one.
 *
 * The snapshot is built by hand to look like a busy paged run: 256 live
 * sequences holding scattered frames (a shuffled pool), some naive-reserved,
 * shared and swapped frames, a full event log and full histories. Each
 * configuration renders the whole screen (grid, panels, legend, GPU panel)
 * `iters` times; we print the mean, median, p99 and max per frame.
 * The largest pool the simulator accepts (4M frames) at 200x60 is the bar
 * of issue 12: under 2 ms per frame, p99. The charts view (key t) is timed
 * too, over a full history (PF_HIST_CAP steps of 5-10 ms each) at the
 * default window and at the widest, which resamples every step held.
 * Usage: bench_render [--iters N] [--help]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/rng.h"
#include "tui/render.h"

static pf_rng rng; /* seeded in main: the same snapshot every run */

static uint64_t rnd(void)
{
    return pf_rng_next(&rng);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One configuration's frame times, microseconds. */
typedef struct {
    double mean, median, p99, max;
    unsigned sink; /* a cell of every frame, so no render is optimised away */
} frame_times;

/* Renders v into b `iters` times (t: scratch for iters times; the step
 * changes every frame, so every frame differs) and sums the times up. */
static void time_frames(pf_cells *b, const pf_dash_view *v, pf_sim_snapshot *s, pf_grid_info *gi, int iters,
                        double *t, frame_times *ft)
{
    unsigned sink = 0;
    for (int i = 0; i < iters; i++) {
        s->stats.step = i;
        double t0 = pf_clock_s();
        pf_render_screen(b, v, gi);
        t[i] = (pf_clock_s() - t0) * 1e6;
        sink += b->cells[(size_t)i % ((size_t)b->w * (size_t)b->h)].ch;
    }
    double sum = 0;
    for (int i = 0; i < iters; i++)
        sum += t[i];
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    *ft = (frame_times){sum / iters, t[iters / 2], t[(int)(iters * 0.99)], t[iters - 1], sink & 1};
}

static int fill_snapshot(pf_sim_snapshot *s, int nframes)
{
    memset(s, 0, sizeof *s);
    s->nframes = nframes;
    s->frames = malloc((size_t)nframes * sizeof *s->frames);
    if (!s->frames)
        return -1;
    /* 90% used by 256 sequences in shuffled order, the rest free */
    for (int f = 0; f < nframes; f++) {
        uint64_t r = rnd();
        if (r % 100 < 90) {
            int state = r % 1000 < 5 ? PF_FRAME_SHARED : r % 1000 < 8 ? PF_FRAME_SWAPPED
                      : r % 1000 < 20 ? PF_FRAME_CACHED
                      : r % 1000 < 100 ? PF_FRAME_RESERVED : PF_FRAME_USED;
            if (state == PF_FRAME_CACHED)
                r = (uint64_t)-1 << 20; /* no holder */
            s->frames[f] = (pf_frame_view){(int32_t)((r >> 20) % 256), (uint8_t)state};
        } else {
            s->frames[f] = (pf_frame_view){-1, PF_FRAME_FREE};
        }
    }
    s->params.cfg.block_size = 16;
    s->params.cfg.max_seq_len = 2048;
    s->params.cfg.pool_blocks = nframes;
    s->params.mode = PF_SIM_PAGED;
    s->params.engine = PF_ENGINE_THREADED;
    s->params.watermark = 0.05;
    s->params.workers = 256;
    s->params.tick_us = 1000;
    s->stats.running = 256;
    s->stats.decoding = 240;
    s->stats.kv_usage = 0.9;
    s->nevents = PF_SIM_EVENTS;
    for (int i = 0; i < PF_SIM_EVENTS; i++)
        s->events[i] = (pf_event){1000 + i, (uint8_t)(i % PF_EV_COUNT), (int32_t)(i * 3), 5, (1000 + i) * 0.02};
    s->nhistory = PF_SIM_HISTORY;
    for (int i = 0; i < PF_SIM_HISTORY; i++) {
        s->hist_decoding[i] = (float)(rnd() % 256);
        s->hist_stalled[i] = (float)(rnd() % 16);
        s->hist_preempt[i] = (float)(rnd() % 3);
        s->hist_tokens[i] = s->hist_decoding[i];
        s->hist_waiting[i] = (float)(rnd() % 64);
        s->hist_time[i] = 10.0 + i * 0.007;
    }
    return 0;
}

/* The charts view over a full long history: window_s of simulated time. */
static int run_charts(int w, int h, double window_s, int iters)
{
    pf_sim_snapshot s;
    pf_cells b = {0, 0, NULL};
    pf_hist hist;
    memset(&hist, 0, sizeof hist);
    double *t = malloc((size_t)iters * sizeof *t);
    int rc = -1;
    if (!t || fill_snapshot(&s, 4096) != 0 || pf_cells_resize(&b, w, h) != 0)
        goto out;
    double tt = 0;
    for (int i = 0; i < PF_HIST_CAP; i++) { /* steps of 5 to 10 ms */
        tt += 0.005 + (double)(rnd() % 5000) * 1e-6;
        float smp[PF_HIST_SERIES] = {(float)(rnd() % 256), (float)(rnd() % 4), (float)(rnd() % 3 == 0),
                                     0.9f, (float)(rnd() % 64), 0.5f};
        if (pf_hist_push(&hist, smp, tt) != 0)
            goto out;
        /* a busy server's first tokens: 16 a step, 1M in the ring at the
         * end, so the TTFT p99 chart's slices are full */
        for (int k = 0; k < 16; k++)
            if (pf_hist_push_first(&hist, tt, 0.01f + (float)(rnd() % 10000) * 1e-4f) != 0)
                goto out;
    }
    pf_dash_view v = {.snap = &s, .charts = 1, .hist = &hist, .window_s = window_s};
    frame_times ft;
    time_frames(&b, &v, &s, NULL, iters, t, &ft);
    printf("charts %5d steps %4dx%-3d window %6.0f s  mean %6.1f us  median %6.1f us  p99 %7.1f us  max %7.1f us  (%d renders, sink %u)\n",
           hist.n, w, h, window_s, ft.mean, ft.median, ft.p99, ft.max, iters, ft.sink);
    rc = 0;
out:
    free(t);
    free(s.frames);
    pf_hist_free(&hist);
    pf_cells_free(&b);
    return rc;
}

static int run(int nframes, int w, int h, int ascii, int iters)
{
    pf_sim_snapshot s;
    pf_cells b = {0, 0, NULL};
    double *t = malloc((size_t)iters * sizeof *t);
    int rc = -1;
    if (!t || fill_snapshot(&s, nframes) != 0 || pf_cells_resize(&b, w, h) != 0)
        goto out;
    pf_dash_view v = {.snap = &s, .gpu = NULL, .ascii = ascii, .help = 0, .status = "watermark 5.0%"};
    pf_grid_info gi;
    frame_times ft;
    time_frames(&b, &v, &s, &gi, iters, t, &ft);
    printf("%6d frames  %4dx%-3d %-5s  N=%-3d  mean %6.1f us  median %6.1f us  p99 %7.1f us  max %7.1f us  (%d renders, sink %u)\n",
           nframes, w, h, ascii ? "ascii" : "utf8", gi.frames_per_cell, ft.mean, ft.median, ft.p99, ft.max, iters,
           ft.sink);
    rc = 0;
out:
    free(t);
    free(s.frames);
    pf_cells_free(&b);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_render [--iters N] [--help]\n"
               "Renders one full dashboard frame into the cell buffer N times (default 2000;\n"
               "the 4M-frame pool runs N/20) for pools of 4096, 65536 and 4194304 frames and\n"
               "prints mean, median, p99 and max per frame. The bar: under 2 ms at 200x60 for\n"
               "the largest pool (4M frames), p99. Then the charts view over a full history\n"
               "at the default and the widest window.\n");
}

int main(int argc, char **argv)
{
    int iters = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 10000000) {
                fprintf(stderr, "bench_render: --iters must be an integer in [1, 10000000], got '%s'\n", argv[i]);
                return 2;
            }
            iters = (int)v;
            continue;
        }
        fprintf(stderr, "bench_render: unknown argument '%s' (try --help)\n", argv[i]);
        return 2;
    }
    pf_rng_seed(&rng, 0x9E3779B97F4A7C15ull);
    printf("bench_render: one full dashboard frame into the cell buffer\n");
    int rc = 0;
    rc |= run(4096, 80, 24, 0, iters);
    rc |= run(4096, 120, 40, 0, iters);
    rc |= run(4096, 200, 60, 0, iters);
    rc |= run(4096, 120, 40, 1, iters);
    rc |= run(65536, 200, 60, 0, iters / 4 > 0 ? iters / 4 : 1);
    rc |= run(1 << 22, 200, 60, 0, iters / 20 > 0 ? iters / 20 : 1);
    rc |= run_charts(200, 60, PF_CHART_DEFAULT_WINDOW_S, iters / 4 > 0 ? iters / 4 : 1);
    rc |= run_charts(200, 60, PF_CHART_MAX_WINDOW_S, iters / 20 > 0 ? iters / 20 : 1);
    return rc ? 1 : 0;
}
