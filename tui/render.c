/* tui/render.c - one dashboard screen into a cell buffer (see render.h).
 *
 * Everything here is a pure function of its inputs. Names shown on screen
 * (events, policies) are spelled here rather than taken from sim/, so that
 * the renderer depends only on sim.h's data types: it can be tested and
 * benchmarked on hand-built snapshots without the simulator's code.
 */
#include "tui/render.h"

#include "core/pool.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const pf_gpu_panel_shape pf_gpu_panel_shapes[PF_GPU_PANEL_SHAPES] = {
    {"seed: 1 head, D=64, fp32", {1, 1, 64, PF_GPU_F32}},
    {"llama3-8b: GQA 32/8, D=128, bf16", {32, 8, 128, PF_GPU_BF16}},
};

/* UTF-8 glyphs and their ASCII fallbacks; they differ in shape, not only in
 * colour, so a no-colour terminal still tells the states apart. */
static const uint32_t glyph_utf8[PF_GLYPH_COUNT] = {
    0x2588, /* █ used     */
    0x2591, /* ░ reserved */
    0x2593, /* ▓ shared   */
    0x259A, /* ▚ swapped  */
    0x00B7, /* · free     */
    0x250A, /* ┊ reserve  */
};
static const char glyph_ascii[PF_GLYPH_COUNT] = {'#', '+', '=', 'S', '.', ':'};

uint32_t pf_render_glyph(pf_glyph_kind k, int ascii)
{
    if ((int)k < 0 || k >= PF_GLYPH_COUNT)
        return '?';
    return ascii ? (uint32_t)glyph_ascii[k] : glyph_utf8[k];
}

uint8_t pf_render_owner_color(int32_t owner)
{
    if (owner < 0)
        return PF_COL_DIM;
    uint32_t h = ((uint32_t)owner % PF_OWNER_COLORS) * 7u % PF_OWNER_COLORS;
    return (uint8_t)(PF_COL_OWNER0 + h);
}

static const char *event_label(int kind)
{
    static const char *const names[] = {"admit",    "stall",  "preempt",   "swap-out",
                                        "swap-in",  "finish", "ping-pong", "reset"};
    return kind >= 0 && kind < (int)(sizeof names / sizeof names[0]) ? names[kind] : "?";
}

static uint8_t event_color(int kind)
{
    switch (kind) {
    case PF_EV_ADMIT:
    case PF_EV_FINISH:
        return PF_COL_GOOD;
    case PF_EV_STALL:
    case PF_EV_SWAP_OUT:
    case PF_EV_SWAP_IN:
        return PF_COL_WARN;
    case PF_EV_PREEMPT:
    case PF_EV_PINGPONG:
        return PF_COL_BAD;
    default:
        return PF_COL_DEFAULT;
    }
}

static const char *victim_label(int p)
{
    static const char *const names[] = {"faulting", "newest", "fewest-generated", "most-frames",
                                        "lowest-priority"};
    return p >= 0 && p < PF_VICTIM_COUNT ? names[p] : "?";
}

static const char *preempt_label(int m) { return m == PF_PREEMPT_SWAP ? "swap" : "recompute"; }

/* ---- the grid ---------------------------------------------------------------
 *
 * Scaling: with C = w*h cells and F frames, N = ceil(F / C) frames per cell
 * and the grid uses ceil(F / N) cells, row-major from the top left, so frame
 * f sits in cell f / N. Per cell we count the frames in each state and show
 * the dominant one (ties go to the rarer, more telling states: swapped,
 * shared, used, reserved, then free); among the frames in that state the
 * owner is found by a Boyer-Moore majority vote (the true majority whenever
 * one exists, with no memory). One pass over the frames in total: O(F).
 *
 * The watermark's reserve is a count of frames admission keeps free, not a
 * particular set; we mark the last ceil(reserve / N) cells, where the LIFO
 * free list leaves the never-used frames, underlined in the reserve colour,
 * with their free frames drawn as the reserve glyph. A used frame showing
 * there is a running sequence that dipped into the reserve (allowed). */
void pf_render_grid(pf_cells *b, int x, int y, int w, int h, const pf_sim_snapshot *snap,
                    int ascii, pf_grid_info *info)
{
    pf_grid_info gi = {x, y, w, h, 0, 0, 0, 0};
    if (w < 1 || h < 1 || !snap || snap->nframes < 1 || !snap->frames) {
        if (info)
            *info = gi;
        return;
    }
    const int F = snap->nframes;
    const long C = (long)w * h;
    int N = (int)((F + C - 1) / C);
    if (N < 1)
        N = 1;
    int cells = (F + N - 1) / N;
    double wm = snap->params.watermark;
    if (!(wm > 0) || snap->params.mode == PF_SIM_NAIVE) /* naive admits by reservation only */
        wm = 0;
    if (wm > 1)
        wm = 1;
    int reserve = pf_pool_reserve_for(F, wm);
    if (reserve < 0)
        reserve = 0;
    int reserve_cells = (reserve + N - 1) / N;
    if (reserve_cells > cells)
        reserve_cells = cells;
    gi.frames_per_cell = N;
    gi.cells = cells;
    gi.reserve_frames = reserve;
    gi.reserve_cells = reserve_cells;

    /* state order for tie-breaking: index into this list, lower wins ties */
    static const uint8_t order[5] = {PF_FRAME_SWAPPED, PF_FRAME_SHARED, PF_FRAME_USED,
                                     PF_FRAME_RESERVED, PF_FRAME_FREE};
    for (int c = 0; c < cells; c++) {
        int lo = c * N, hi = lo + N < F ? lo + N : F;
        int count[5] = {0, 0, 0, 0, 0};
        for (int f = lo; f < hi; f++) {
            unsigned s = snap->frames[f].state;
            count[s < 5 ? s : PF_FRAME_USED]++;
        }
        uint8_t st = order[0];
        for (int i = 1; i < 5; i++)
            if (count[order[i]] > count[st])
                st = order[i];
        int32_t cand = -1;
        int votes = 0;
        for (int f = lo; f < hi; f++) {
            unsigned s = snap->frames[f].state;
            if ((s < 5 ? s : PF_FRAME_USED) != st)
                continue;
            if (votes == 0) {
                cand = snap->frames[f].owner;
                votes = 1;
            } else if (snap->frames[f].owner == cand)
                votes++;
            else
                votes--;
        }
        int in_reserve = c >= cells - reserve_cells;
        uint32_t ch;
        uint8_t col, attr = 0;
        switch (st) {
        case PF_FRAME_USED:
            ch = pf_render_glyph(PF_GLYPH_USED, ascii);
            col = pf_render_owner_color(cand);
            break;
        case PF_FRAME_RESERVED:
            ch = pf_render_glyph(PF_GLYPH_RESERVED, ascii);
            col = pf_render_owner_color(cand);
            attr = PF_ATTR_DIM;
            break;
        case PF_FRAME_SHARED:
            ch = pf_render_glyph(PF_GLYPH_SHARED, ascii);
            col = pf_render_owner_color(cand);
            attr = PF_ATTR_BOLD;
            break;
        case PF_FRAME_SWAPPED:
            ch = pf_render_glyph(PF_GLYPH_SWAPPED, ascii);
            col = PF_COL_WARN;
            attr = PF_ATTR_BOLD;
            break;
        default:
            ch = pf_render_glyph(in_reserve ? PF_GLYPH_RESERVE : PF_GLYPH_FREE, ascii);
            col = in_reserve ? PF_COL_RESERVE : PF_COL_DIM;
            attr = in_reserve ? 0 : PF_ATTR_DIM;
            break;
        }
        if (in_reserve)
            attr |= PF_ATTR_UNDERLINE;
        pf_cells_put(b, x + c % w, y + c / w, ch, col, attr);
    }
    if (info)
        *info = gi;
}

/* ---- panels ---------------------------------------------------------------- */

static void title(pf_cells *b, int x, int y, int w, const char *text)
{
    pf_cells_fill(b, x, y, w, 1, ' ', PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE);
    pf_cells_text(b, x, y, w, PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE, text);
}

/* "12.3k" style for big counters so columns stay narrow. */
static void fmt_count(char *out, size_t len, int64_t v)
{
    if (v < 100000 && v > -100000)
        snprintf(out, len, "%lld", (long long)v);
    else if (v < 100000000 && v > -100000000)
        snprintf(out, len, "%.1fk", (double)v / 1e3);
    else
        snprintf(out, len, "%.1fM", (double)v / 1e6);
}

/* One "label  value" pair in a column of width w. */
static void pair(pf_cells *b, int x, int y, int w, const char *label, const char *value,
                 uint8_t vcol)
{
    pf_cells_text(b, x, y, w, PF_COL_DIM, 0, label);
    int vl = (int)strlen(value);
    int vx = x + w - 1 - vl;
    if (vx < x + (int)strlen(label) + 1)
        vx = x + (int)strlen(label) + 1;
    pf_cells_text(b, vx, y, x + w - vx, vcol, PF_ATTR_BOLD, value);
}

static void panel_counters(pf_cells *b, int x, int y, int w, const pf_sim_snapshot *s)
{
    title(b, x, y, w, "Counters");
    if (!s) {
        pf_cells_text(b, x, y + 1, w, PF_COL_DIM, 0, "waiting for the simulator...");
        return;
    }
    const pf_sim_stats *st = &s->stats;
    char v[12][32];
    fmt_count(v[0], sizeof v[0], st->waiting);
    fmt_count(v[1], sizeof v[1], st->running);
    fmt_count(v[2], sizeof v[2], st->decoding);
    fmt_count(v[3], sizeof v[3], st->stalled);
    fmt_count(v[4], sizeof v[4], st->preemptions);
    fmt_count(v[5], sizeof v[5], st->recomputed_tokens);
    snprintf(v[6], sizeof v[6], "%.1f%%", 100.0 * st->kv_usage);
    snprintf(v[7], sizeof v[7], "%.1f%%", 100.0 * st->goodput);
    if (st->throughput_vs_naive > 0)
        snprintf(v[8], sizeof v[8], "%.2fx", st->throughput_vs_naive);
    else
        snprintf(v[8], sizeof v[8], "n/a");
    snprintf(v[9], sizeof v[9], "%.1f", st->throughput);
    fmt_count(v[10], sizeof v[10], st->finished);
    fmt_count(v[11], sizeof v[11], st->pingpongs);
    static const char *const labels[12] = {"waiting",  "running",    "decoding", "stalled",
                                           "preempts", "recomputed", "util",     "goodput",
                                           "vs naive", "tok/step",   "finished", "ping-pong"};
    uint8_t cols[12] = {PF_COL_DEFAULT, PF_COL_DEFAULT, PF_COL_GOOD, PF_COL_WARN,
                        PF_COL_BAD,     PF_COL_BAD,     PF_COL_DEFAULT, PF_COL_GOOD,
                        PF_COL_GOOD,    PF_COL_DEFAULT, PF_COL_DEFAULT, PF_COL_BAD};
    if (st->throughput_vs_naive > 0 && st->throughput_vs_naive < 1)
        cols[8] = PF_COL_BAD;
    int half = w / 2;
    for (int i = 0; i < 12; i++)
        pair(b, x + (i % 2) * half, y + 1 + i / 2, half - 1, labels[i], v[i], cols[i]);
}

/* Sparkline of the last w samples of hist[0..n) (oldest first), scaled to
 * the largest visible value. */
static void sparkline(pf_cells *b, int x, int y, int w, const float *hist, int n, int ascii,
                      uint8_t col)
{
    static const char levels_ascii[8] = {'_', '.', '-', ':', '=', '+', '*', '#'};
    int first = n > w ? n - w : 0;
    float mx = 0;
    for (int i = first; i < n; i++)
        if (hist[i] > mx)
            mx = hist[i];
    if (mx <= 0)
        mx = 1;
    for (int i = first; i < n; i++) {
        float v = hist[i] > 0 ? hist[i] : 0;
        int lv = (int)lrintf(v / mx * 7.0f);
        if (lv < 0)
            lv = 0;
        if (lv > 7)
            lv = 7;
        uint32_t ch = ascii ? (uint32_t)levels_ascii[lv] : 0x2581u + (uint32_t)lv;
        pf_cells_put(b, x + (i - first), y, ch, col, 0);
    }
}

static void panel_history(pf_cells *b, int x, int y, int w, const pf_sim_snapshot *s, int ascii)
{
    title(b, x, y, w, "History (per step)");
    if (!s)
        return;
    int n = s->nhistory < 0 ? 0 : s->nhistory > PF_SIM_HISTORY ? PF_SIM_HISTORY : s->nhistory;
    const float *h[3] = {s->hist_decoding, s->hist_stalled, s->hist_preempt};
    static const char *const labels[3] = {"decoding", "stalled", "preempts"};
    static const uint8_t cols[3] = {PF_COL_GOOD, PF_COL_WARN, PF_COL_BAD};
    for (int i = 0; i < 3; i++) {
        pf_cells_text(b, x, y + 1 + i, 9, PF_COL_DIM, 0, labels[i]);
        sparkline(b, x + 9, y + 1 + i, w - 9 - 7, h[i], n, ascii, cols[i]);
        char v[16];
        snprintf(v, sizeof v, "%6.0f", n ? h[i][n - 1] : 0.0f);
        pf_cells_text(b, x + w - 6, y + 1 + i, 6, cols[i], PF_ATTR_BOLD, v);
    }
}

static void panel_params(pf_cells *b, int x, int y, int w, const pf_sim_snapshot *s)
{
    title(b, x, y, w, "Parameters");
    if (!s)
        return;
    const pf_sim_params *p = &s->params;
    int reserve = pf_pool_reserve_for(s->nframes, p->watermark);
    pf_cells_printf(b, x, y + 1, w, PF_COL_DEFAULT, 0, "mode %s  engine %s",
                    p->mode == PF_SIM_NAIVE ? "naive" : "paged",
                    p->engine == PF_ENGINE_THREADED ? "threaded" : "deterministic");
    if (p->mode == PF_SIM_NAIVE) /* the watermark gates paged admission only */
        pf_cells_printf(b, x, y + 2, w, PF_COL_DEFAULT, 0, "watermark %.1f%% (naive: unused)",
                        100.0 * p->watermark);
    else
        pf_cells_printf(b, x, y + 2, w, PF_COL_DEFAULT, 0, "watermark %.1f%% = %d frames",
                        100.0 * p->watermark, reserve);
    pf_cells_printf(b, x, y + 3, w, PF_COL_DEFAULT, 0, "workers %d  preempt %s", p->workers,
                    preempt_label(p->preempt));
    pf_cells_printf(b, x, y + 4, w, PF_COL_DEFAULT, 0, "victim %s", victim_label(p->policy));
    if (p->tick_us >= 1000)
        pf_cells_printf(b, x, y + 5, w, PF_COL_DEFAULT, 0, "pool %dx%d max %d tick %.1fms",
                        p->cfg.pool_blocks, p->cfg.block_size, p->cfg.max_seq_len,
                        p->tick_us / 1000.0);
    else
        pf_cells_printf(b, x, y + 5, w, PF_COL_DEFAULT, 0, "pool %dx%d max %d tick %dus",
                        p->cfg.pool_blocks, p->cfg.block_size, p->cfg.max_seq_len, p->tick_us);
}

static void panel_events(pf_cells *b, int x, int y, int w, int h, const pf_sim_snapshot *s)
{
    title(b, x, y, w, "Events (newest last)");
    if (!s || h < 2)
        return;
    int lines = h - 1;
    int n = s->nevents < 0 ? 0 : s->nevents > PF_SIM_EVENTS ? PF_SIM_EVENTS : s->nevents;
    int first = n > lines ? n - lines : 0;
    for (int i = first; i < n; i++) {
        const pf_event *e = &s->events[i];
        int row = y + 1 + (i - first);
        pf_cells_printf(b, x, row, 8, PF_COL_DIM, 0, "%7lld", (long long)e->step);
        pf_cells_text(b, x + 8, row, 10, event_color(e->kind), PF_ATTR_BOLD, event_label(e->kind));
        if (e->kind == PF_EV_RESET)
            continue;
        pf_cells_printf(b, x + 18, row, w - 18, PF_COL_DEFAULT, 0, "seq %-6d %d frames",
                        (int)e->seq, (int)e->frames);
    }
    if (n == 0)
        pf_cells_text(b, x, y + 1, w, PF_COL_DIM, 0, "(none yet)");
}

static void gpu_cell(pf_cells *b, int x, int y, int w, double ms, double gbps, double err)
{
    pf_cells_printf(b, x, y, w, PF_COL_DEFAULT, 0, "%8.4f ms %8.1f GB/s  err %.1e", ms, gbps, err);
}

static void panel_gpu(pf_cells *b, int x, int y, int w, const pf_gpu_panel *g)
{
    title(b, x, y, w, "GPU passes on the live layout (g)");
    int st = g ? g->state : PF_GPU_PANEL_IDLE;
    switch (st) {
    case PF_GPU_PANEL_IDLE:
        pf_cells_text(b, x, y + 1, w, PF_COL_DIM, 0,
                      "press g: naive, paged (frames as laid out now) and paged (frames in order)");
        pf_cells_text(b, x, y + 2, w, PF_COL_DIM, 0,
                      "decode attention on the current block tables, in the background,");
        pf_cells_printf(b, x, y + 3, w, PF_COL_DIM, 0, "at %s and %s.", pf_gpu_panel_shapes[0].name,
                        pf_gpu_panel_shapes[1].name);
        return;
    case PF_GPU_PANEL_RUNNING:
        pf_cells_printf(b, x, y + 1, w, PF_COL_WARN, PF_ATTR_BOLD,
                        "running on the layout of step %lld (%d sequences, %d frames)...",
                        (long long)g->step, g->nseqs, g->nframes);
        return;
    case PF_GPU_PANEL_UNAVAILABLE:
        pf_cells_printf(b, x, y + 1, w, PF_COL_WARN, PF_ATTR_BOLD, "GPU unavailable: %s", g->msg);
        pf_cells_text(b, x, y + 2, w, PF_COL_DIM, 0,
                      "the simulator runs on the CPU either way; g needs a CUDA device.");
        return;
    case PF_GPU_PANEL_ERROR:
        pf_cells_printf(b, x, y + 1, w, PF_COL_BAD, PF_ATTR_BOLD, "GPU pass failed: %s", g->msg);
        return;
    default:
        break;
    }
    /* DONE: two shapes side by side */
    const char *dev = "";
    for (int k = 0; k < PF_GPU_PANEL_SHAPES; k++)
        if (g->ok[k] && g->res[k].device[0])
            dev = g->res[k].device;
    pf_cells_printf(b, x + 34, y, w - 34, PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE,
                    " step %lld, %d seqs, %d frames  %s", (long long)g->step, g->nseqs, g->nframes,
                    dev);
    int lw = 13, cw = (w - lw) / 2;
    static const char *const rows[3] = {"naive", "paged (now)", "paged (ord.)"};
    for (int r = 0; r < 3; r++)
        pf_cells_text(b, x, y + 2 + r, lw, PF_COL_DIM, 0, rows[r]);
    for (int k = 0; k < PF_GPU_PANEL_SHAPES; k++) {
        int cx = x + lw + k * cw;
        pf_cells_text(b, cx, y + 1, cw - 1, PF_COL_TITLE, PF_ATTR_BOLD, pf_gpu_panel_shapes[k].name);
        if (!g->ok[k]) {
            pf_cells_text(b, cx, y + 2, cw - 1, PF_COL_BAD, 0, g->err[k]);
            continue;
        }
        const pf_gpu_pass_result *r = &g->res[k];
        gpu_cell(b, cx, y + 2, cw - 1, r->naive_ms, r->naive_gbps, r->max_err_naive);
        gpu_cell(b, cx, y + 3, cw - 1, r->paged_ms, r->paged_gbps, r->max_err_paged);
        gpu_cell(b, cx, y + 4, cw - 1, r->ordered_ms, r->ordered_gbps, r->max_err_ordered);
    }
}

/* ---- header, key line, overlays ----------------------------------------- */

static void header(pf_cells *b, const pf_dash_view *v)
{
    const pf_sim_snapshot *s = v->snap;
    pf_cells_fill(b, 0, 0, b->w, 1, ' ', PF_COL_HEADER, PF_ATTR_REVERSE);
    int x = pf_cells_text(b, 0, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE | PF_ATTR_BOLD,
                          " PageFault - paged KV pool ");
    if (s) {
        x += pf_cells_printf(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE, "| %s | step %lld | ",
                             s->params.mode == PF_SIM_NAIVE ? "NAIVE" : "PAGED",
                             (long long)s->stats.step);
        x += pf_cells_text(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE | PF_ATTR_BOLD,
                           s->paused ? "PAUSED" : "RUNNING");
        if (s->stats.done)
            x += pf_cells_text(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE, " (all done)");
    } else {
        x += pf_cells_text(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE, "| starting");
    }
    if (v->status && v->status[0]) {
        int len = 0;
        for (const char *p = v->status; *p; p++)
            len += ((unsigned char)*p & 0xC0) != 0x80;
        int sx = b->w - len - 1;
        if (sx < x + 2)
            sx = x + 2;
        pf_cells_text(b, sx, 0, b->w - sx, PF_COL_HEADER, PF_ATTR_REVERSE, v->status);
    }
}

static void key_line(pf_cells *b, int y)
{
    static const char *const keys[][2] = {
        {"q", "quit"},    {"?", "help"},     {"spc", "pause"},  {"s", "step"},
        {"w/W", "wmark"}, {"-/+", "workers"}, {"g", "GPU"},      {"m", "mode"},
        {"v", "victim"},  {"p", "preempt"},  {"f/F", "speed"},  {"r", "reset"},
    };
    int x = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int need = (int)(strlen(keys[i][0]) + strlen(keys[i][1]) + 2);
        if (x + need > b->w)
            break;
        x += pf_cells_text(b, x, y, -1, PF_COL_KEY, PF_ATTR_BOLD | PF_ATTR_REVERSE, keys[i][0]);
        x += pf_cells_text(b, x, y, -1, PF_COL_DEFAULT, 0, " ");
        x += pf_cells_text(b, x, y, -1, PF_COL_DEFAULT, 0, keys[i][1]);
        x += pf_cells_text(b, x, y, -1, PF_COL_DEFAULT, 0, " ");
    }
}

static void help_overlay(pf_cells *b)
{
    static const char *const lines[] = {
        "Keys (they act on the running simulator at once)",
        "",
        "  w / W      watermark down / up (1% steps below 10%, then 5%)",
        "  - / +  [ ] workers down / up",
        "  v          next victim policy",
        "  p          preemption mode: recompute / swap",
        "  m          naive / paged (restarts the jobs)",
        "  space      pause / resume",
        "  s or .     single step (pauses first)",
        "  f / F      slower / faster",
        "  r          reset: the same jobs from step 0",
        "  g          GPU passes on the current layout (background)",
        "  ?          this help (any key closes it)",
        "  q          quit",
    };
    int n = (int)(sizeof lines / sizeof lines[0]);
    int bw = 68 < b->w - 2 ? 68 : b->w - 2, bh = n + 2;
    int bx = (b->w - bw) / 2, by = (b->h - bh) / 2;
    pf_cells_fill(b, bx, by, bw, bh, ' ', PF_COL_DEFAULT, PF_ATTR_REVERSE);
    for (int i = 0; i < n; i++)
        pf_cells_text(b, bx + 2, by + 1 + i, bw - 4, PF_COL_DEFAULT,
                      PF_ATTR_REVERSE | (i == 0 ? PF_ATTR_BOLD : 0), lines[i]);
}

static void too_small(pf_cells *b)
{
    char l1[96], l2[96];
    snprintf(l1, sizeof l1, "terminal too small: %dx%d", b->w, b->h);
    snprintf(l2, sizeof l2, "need at least %dx%d (resize, or q to quit)", PF_DASH_MIN_W,
             PF_DASH_MIN_H);
    int y = b->h / 2 - 1;
    if (y < 0)
        y = 0;
    int x1 = (b->w - (int)strlen(l1)) / 2, x2 = (b->w - (int)strlen(l2)) / 2;
    pf_cells_text(b, x1 < 0 ? 0 : x1, y, -1, PF_COL_WARN, PF_ATTR_BOLD, l1);
    pf_cells_text(b, x2 < 0 ? 0 : x2, y + 1, -1, PF_COL_DEFAULT, 0, l2);
}

/* ---- the whole screen ------------------------------------------------------
 *
 * Layout for W x H (>= 80 x 24): header row 0, key line row H-1, the GPU
 * panel on the 5 rows above the key line, and between them a right column
 * of R = 34..40 columns (counters 7 rows, history 4, parameters 6) and a
 * left column with the grid's title, the grid, its legend and the event log
 * (a third of the height, 4..13 rows). */
int pf_render_screen(pf_cells *b, const pf_dash_view *v, pf_grid_info *grid)
{
    pf_cells_clear(b);
    if (grid)
        memset(grid, 0, sizeof *grid);
    if (b->w < PF_DASH_MIN_W || b->h < PF_DASH_MIN_H) {
        too_small(b);
        return 1;
    }
    const pf_sim_snapshot *s = v->snap;
    const int W = b->w, H = b->h;
    const int R = W >= 120 ? 40 : W >= 100 ? 36 : 34;
    const int L = W - R - 1;
    const int rx = L + 1;
    const int gpu_y = H - 6;
    const int mid_top = 1, mid_h = gpu_y - mid_top; /* >= 17 */

    header(b, v);

    /* right column */
    panel_counters(b, rx, mid_top, R, s);
    panel_history(b, rx, mid_top + 7, R, s, v->ascii);
    if (v->fps > 0) { /* the UI's own pace, right of the History title */
        char t[48];
        int n = snprintf(t, sizeof t, "ui %.0f fps %.2f ms", v->fps, v->render_ms);
        if (n > 0 && n < R - 20)
            pf_cells_text(b, rx + R - n, mid_top + 7, n, PF_COL_TITLE, PF_ATTR_UNDERLINE, t);
    }
    panel_params(b, rx, mid_top + 11, R, s);

    /* left column: title, grid, legend, events */
    int ev_h = (mid_h - 3) / 3;
    if (ev_h < 4)
        ev_h = 4;
    if (ev_h > 13)
        ev_h = 13;
    const int legend_rows = 2;
    int grid_h = mid_h - 1 - legend_rows - ev_h;
    int grid_y = mid_top + 1;
    pf_grid_info gi;
    pf_render_grid(b, 0, grid_y, L, grid_h, s, v->ascii, &gi);
    if (grid)
        *grid = gi;
    title(b, 0, mid_top, L, "Pool");
    if (s && gi.frames_per_cell > 0) {
        /* On a narrow column drop the pool's shape rather than clip the
         * counts (an 80-column screen cut "4096 used" to "40"). */
        char t[160];
        int n = snprintf(t, sizeof t, "Pool: 1 cell = %d frame%s | %d x %d tok | %d used %d free",
                         gi.frames_per_cell, gi.frames_per_cell > 1 ? "s" : "", s->nframes,
                         s->params.cfg.block_size, s->stats.pool_used, s->stats.pool_free);
        if (n > L)
            snprintf(t, sizeof t, "Pool: 1 cell = %d frame%s | %d used %d free", gi.frames_per_cell,
                     gi.frames_per_cell > 1 ? "s" : "", s->stats.pool_used, s->stats.pool_free);
        pf_cells_text(b, 0, mid_top, L, PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE, t);
    }

    /* legend: glyph + word for every state, then the reserve and N (on a
     * second row when the column is narrow) */
    int ly = grid_y + grid_h, lx = 0;
    static const struct {
        pf_glyph_kind k;
        const char *word;
        uint8_t col;
    } legend[] = {
        {PF_GLYPH_USED, "used", PF_COL_OWNER0 + 3},
        {PF_GLYPH_RESERVED, "reserved", PF_COL_OWNER0 + 3},
        {PF_GLYPH_SHARED, "shared", PF_COL_OWNER0 + 3},
        {PF_GLYPH_SWAPPED, "swapped", PF_COL_WARN},
        {PF_GLYPH_FREE, "free", PF_COL_DIM},
    };
    for (size_t i = 0; i < sizeof legend / sizeof legend[0]; i++) {
        pf_cells_put(b, lx, ly, pf_render_glyph(legend[i].k, v->ascii), legend[i].col, 0);
        lx += 2 + pf_cells_text(b, lx + 2, ly, L - lx - 2, PF_COL_DIM, 0, legend[i].word);
        lx += 1;
    }
    ly++;
    if (!s || s->params.mode != PF_SIM_NAIVE)
        pf_cells_put(b, 0, ly, pf_render_glyph(PF_GLYPH_RESERVE, v->ascii), PF_COL_RESERVE,
                     PF_ATTR_UNDERLINE);
    if (s && s->params.mode == PF_SIM_NAIVE)
        lx = 2 + pf_cells_printf(b, 2, ly, L - 2, PF_COL_RESERVE, 0, "no reserve (naive)");
    else
        lx = 2 + pf_cells_printf(b, 2, ly, L - 2, PF_COL_RESERVE, 0, "reserve %d fr (watermark)",
                                 gi.reserve_frames);
    {
        char t[48];
        int n = snprintf(t, sizeof t, "  N=%d frames/cell", gi.frames_per_cell);
        if (n > L - lx) /* narrow: keep N whole */
            snprintf(t, sizeof t, "  N=%d/cell", gi.frames_per_cell);
        pf_cells_text(b, lx, ly, L - lx, PF_COL_DIM, 0, t);
    }

    panel_events(b, 0, ly + 1, L, ev_h, s);
    panel_gpu(b, 0, gpu_y, W, v->gpu);
    key_line(b, H - 1);
    if (v->help)
        help_overlay(b);
    return 0;
}
