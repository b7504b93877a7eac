/* bench/bench_render.c - how long one dashboard frame takes to render into
 * the cell buffer, for a 4096-frame pool (the seed's) and a 65536-frame one.
 *
 * The snapshot is built by hand to look like a busy paged run: 256 live
 * sequences holding scattered frames (a shuffled pool), some naive-reserved,
 * shared and swapped frames, a full event log and full histories. Each
 * configuration renders the whole screen (grid, panels, legend, GPU panel)
 * `iters` times; we print the mean, median, p99 and max per frame.
 * The largest pool the simulator accepts (4M frames) at 200x60 is the bar
 * of issue 12: under 2 ms per frame, p99.
 * Usage: bench_render [--iters N] [--help]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tui/render.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
                      : r % 1000 < 100 ? PF_FRAME_RESERVED : PF_FRAME_USED;
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
        s->events[i] = (pf_event){1000 + i, (uint8_t)(i % 7), (int32_t)(i * 3), 5};
    s->nhistory = PF_SIM_HISTORY;
    for (int i = 0; i < PF_SIM_HISTORY; i++) {
        s->hist_decoding[i] = (float)(rnd() % 256);
        s->hist_stalled[i] = (float)(rnd() % 16);
        s->hist_preempt[i] = (float)(rnd() % 3);
    }
    return 0;
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
    unsigned sink = 0;
    for (int i = 0; i < iters; i++) {
        s.stats.step = i; /* something changes every frame */
        double t0 = now_us();
        pf_render_screen(&b, &v, &gi);
        t[i] = now_us() - t0;
        sink += b.cells[(size_t)(i % (w * h))].ch;
    }
    double sum = 0;
    for (int i = 0; i < iters; i++)
        sum += t[i];
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    printf("%6d frames  %4dx%-3d %-5s  N=%-3d  mean %6.1f us  median %6.1f us  p99 %7.1f us  max %7.1f us  (%d renders, sink %u)\n",
           nframes, w, h, ascii ? "ascii" : "utf8", gi.frames_per_cell, sum / iters, t[iters / 2],
           t[(int)(iters * 0.99)], t[iters - 1], iters, sink & 1);
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
               "the largest pool (4M frames), p99.\n");
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
    printf("bench_render: one full dashboard frame into the cell buffer\n");
    int rc = 0;
    rc |= run(4096, 80, 24, 0, iters);
    rc |= run(4096, 120, 40, 0, iters);
    rc |= run(4096, 200, 60, 0, iters);
    rc |= run(4096, 120, 40, 1, iters);
    rc |= run(65536, 200, 60, 0, iters / 4 > 0 ? iters / 4 : 1);
    rc |= run(1 << 22, 200, 60, 0, iters / 20 > 0 ? iters / 20 : 1);
    return rc ? 1 : 0;
}
