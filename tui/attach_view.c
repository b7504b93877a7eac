/* tui/attach_view.c - draw `pagefault attach`'s screen (see attach_view.h).
 *
 * Layout (W x H):
 *   row 0            header: endpoints, ranks live/silent, metrics state, time
 *   rows 1..H-9      left: the slot grid, one cell per tracked block;
 *                    right (34 columns): counters
 *   rows H-8..H-4    charts: KV usage (metrics) and blocks held (events)
 *   rows H-3..H-1    warnings: counts, then the newest warning line
 * When the grid has more slots than cells, each cell stands for several
 * consecutive slots and takes the colour of the first live one among them.
 */
#include "tui/attach_view.h"

#include <math.h>
#include <stdio.h>

#define RIGHT_W 34

static void num_or_dash(char *out, size_t cap, double v, const char *fmt, double scale)
{
    if (isnan(v))
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, fmt, v * scale);
}

static void draw_grid(pf_cells *b, const pf_attach *m, int x0, int y0, int w, int h)
{
    const pf_attach_counts *c = pf_attach_counts_get(m);
    uint32_t slots = pf_attach_slot_count(m);
    pf_cells_printf(b, x0, y0, w, PF_COL_TITLE, PF_ATTR_BOLD,
                    "prefix cache: %llu blocks in %llu prefixes (one colour per prefix)",
                    (unsigned long long)c->blocks_live, (unsigned long long)c->prefixes_live);
    y0++;
    h--;
    if (w < 1 || h < 2)
        return;
    uint64_t cells = (uint64_t)w * (uint64_t)(h - 1);
    uint32_t per = slots > cells ? (uint32_t)((slots + cells - 1) / cells) : 1;
    for (uint64_t i = 0; i < cells; i++) {
        int x = x0 + (int)(i % (uint64_t)w), y = y0 + (int)(i / (uint64_t)w);
        uint64_t s0 = i * per;
        if (s0 >= slots) {
            pf_cells_put(b, x, y, ' ', PF_COL_DEFAULT, 0);
            continue;
        }
        const pf_attach_block *blk = NULL;
        for (uint32_t k = 0; k < per && s0 + k < slots && !blk; k++)
            blk = pf_attach_slot(m, (uint32_t)(s0 + k));
        if (blk)
            pf_cells_put(b, x, y, 0x2588, (uint8_t)(PF_COL_OWNER0 + ((blk->prefix * 0x9e3779b97f4a7c15ull) >> 58) % PF_OWNER_COLORS), 0);
        else
            pf_cells_put(b, x, y, 0x00b7, PF_COL_DIM, 0); /* a freed slot */
    }
    pf_cells_printf(b, x0, y0 + h - 1, w, PF_COL_DIM, 0,
                    "slot = our arrival place (%u%s), not vLLM's block id; \xc2\xb7 freed",
                    per, per > 1 ? " slots per cell" : " slot per cell");
}

/* The counters column, rows y .. y + h - 1: the events' counts, then the
 * server's metrics, as many rows of them as fit (at the view's smallest
 * height the last rows give way to the charts below). */
static void draw_counters(pf_cells *b, const pf_attach *m, int x, int y, int h)
{
    const pf_attach_counts *c = pf_attach_counts_get(m);
    char a[32], d[32], e[32];
    struct {
        uint8_t color, attr;
        char text[112]; /* RIGHT_W clips it; room for three numbers whole */
    } row[17];
    int n = 0;
#define ROW(col, at, ...) \
    (row[n].color = (col), row[n].attr = (at), snprintf(row[n].text, sizeof row[n].text, __VA_ARGS__), n++)
    ROW(PF_COL_TITLE, PF_ATTR_BOLD, "events (exact)");
    ROW(0, 0, "batches   %llu", (unsigned long long)c->batches);
    ROW(PF_COL_GOOD, 0, "stored    %llu blk in %llu ev", (unsigned long long)c->blocks_stored,
        (unsigned long long)c->events_stored);
    ROW(PF_COL_WARN, 0, "removed   %llu blk in %llu ev", (unsigned long long)c->blocks_removed,
        (unsigned long long)c->events_removed);
    ROW(0, 0, "cleared   %llu", (unsigned long long)c->events_cleared);
    ROW(PF_COL_DIM, 0, "before us %llu removed", (unsigned long long)c->removed_unknown);
    ROW(0, 0, "%s", "");
    ROW(PF_COL_TITLE, PF_ATTR_BOLD, "metrics (server's own)");
    num_or_dash(a, sizeof a, c->usage, "%.1f%%", 100);
    ROW(0, 0, "KV usage  %s", a);
    num_or_dash(a, sizeof a, c->running, "%.0f", 1);
    num_or_dash(d, sizeof d, c->waiting, "%.0f", 1);
    ROW(0, 0, "running   %s  waiting %s", a, d);
    num_or_dash(a, sizeof a, c->preemptions, "%.0f", 1);
    num_or_dash(d, sizeof d, c->preempt_rate, "%.2f/s", 1);
    ROW(isnan(c->preempt_rate) || c->preempt_rate == 0 ? 0 : PF_COL_BAD, 0, "preempt   %s  %s", a, d);
    num_or_dash(a, sizeof a, c->hit_rate, "%.1f%%", 100);
    num_or_dash(d, sizeof d, c->hit_rate_recent, "%.1f%%", 100);
    ROW(0, 0, "hit rate  %s  now %s", a, d);
    num_or_dash(a, sizeof a, c->ttft[0], "%.3g", 1);
    num_or_dash(d, sizeof d, c->ttft[1], "%.3g", 1);
    num_or_dash(e, sizeof e, c->ttft[2], "%.3g", 1);
    ROW(0, 0, "TTFT s    %s/%s/%s", a, d, e);
    num_or_dash(a, sizeof a, c->e2e[0], "%.3g", 1);
    num_or_dash(d, sizeof d, c->e2e[1], "%.3g", 1);
    num_or_dash(e, sizeof e, c->e2e[2], "%.3g", 1);
    ROW(0, 0, "e2e s     %s/%s/%s", a, d, e);
    ROW(PF_COL_DIM, 0, "%s", "(p50/p90/p99, from the buckets)");
#undef ROW
    for (int i = 0; i < n && i < h; i++)
        pf_cells_text(b, x, y + i, RIGHT_W, row[i].color, row[i].attr, row[i].text);
}

/* A sparkline of the last w points of one series; NAN points are blank.
 * scale_max 0: scale to the largest value shown. */
static void draw_chart(pf_cells *b, const pf_attach *m, int x, int y, int w, const char *label,
                       double (*get)(const pf_attach_point *), double scale_max)
{
    static const uint32_t bars[8] = {0x2581, 0x2582, 0x2583, 0x2584, 0x2585, 0x2586, 0x2587, 0x2588};
    int n = pf_attach_history_len(m);
    int lw = pf_cells_text(b, x, y, 18, PF_COL_TITLE, 0, label);
    int cw = w - 19;
    if (cw < 1)
        return;
    (void)lw;
    int first = n > cw ? n - cw : 0;
    double mx = scale_max;
    if (mx <= 0)
        for (int i = first; i < n; i++) {
            double v = get(pf_attach_history_at(m, i));
            if (!isnan(v) && v > mx)
                mx = v;
        }
    for (int i = first; i < n; i++) {
        double v = get(pf_attach_history_at(m, i));
        int cx = x + 19 + (i - first);
        if (isnan(v) || mx <= 0) {
            pf_cells_put(b, cx, y, ' ', 0, 0);
            continue;
        }
        int k = (int)(v / mx * 7.0 + 0.5);
        k = k < 0 ? 0 : k > 7 ? 7 : k;
        pf_cells_put(b, cx, y, bars[k], PF_COL_GOOD, 0);
    }
}

static double get_usage(const pf_attach_point *p) { return p->usage; }
static double get_blocks(const pf_attach_point *p) { return p->blocks_live; }
static double get_running(const pf_attach_point *p) { return p->running; }
static double get_preempt(const pf_attach_point *p) { return p->preempt_rate; }

void pf_attach_view_render(pf_cells *b, const pf_attach *m, const pf_attach_view_info *in)
{
    pf_cells_clear(b);
    if (b->w < PF_ATTACH_VIEW_MIN_W || b->h < PF_ATTACH_VIEW_MIN_H) {
        pf_cells_printf(b, 0, 0, -1, PF_COL_BAD, 0, "terminal too small: %dx%d, attach needs %dx%d (q quits)",
                        b->w, b->h, PF_ATTACH_VIEW_MIN_W, PF_ATTACH_VIEW_MIN_H);
        return;
    }
    /* header */
    pf_cells_fill(b, 0, 0, b->w, 1, ' ', PF_COL_HEADER, PF_ATTR_REVERSE);
    int x = pf_cells_printf(b, 0, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE | PF_ATTR_BOLD, " pagefault attach ");
    if (in->events) {
        int live = 0;
        for (int r = 0; r < in->ranks; r++)
            live += in->live[r] != 0;
        x += pf_cells_printf(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE, " events %s: %d/%d rank%s live ",
                             in->events, live, in->ranks, in->ranks > 1 ? "s" : "");
    }
    if (in->metrics)
        x += pf_cells_printf(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE, " metrics %s ",
                             in->metrics_ok ? "ok" : "failing");
    pf_cells_printf(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE, " %.0fs  q quits", in->elapsed);

    int charts_y = b->h - 8, warn_y = b->h - 3;
    int gw = b->w - RIGHT_W - 2;
    draw_grid(b, m, 0, 1, gw, charts_y - 1);
    draw_counters(b, m, gw + 2, 1, charts_y - 1);

    draw_chart(b, m, 0, charts_y + 1, b->w, "KV usage (metrics)", get_usage, 1.0);
    draw_chart(b, m, 0, charts_y + 2, b->w, "blocks (events)", get_blocks, 0);
    draw_chart(b, m, 0, charts_y + 3, b->w, "running", get_running, 0);
    draw_chart(b, m, 0, charts_y + 4, b->w, "preemptions/s", get_preempt, 0);
    pf_cells_text(b, 0, charts_y, -1, PF_COL_TITLE, PF_ATTR_BOLD, "history (one column per tick, newest right)");

    const pf_attach_counts *c = pf_attach_counts_get(m);
    uint64_t total = c->w_malformed + c->w_bad_events + c->w_unknown_events + c->w_gaps + c->w_lost +
                     c->w_reconnects + c->w_restarts + c->w_metrics_failed + c->w_metrics_bad_lines +
                     c->w_metrics_truncated + c->untracked;
    pf_cells_printf(b, 0, warn_y, -1, total ? PF_COL_WARN : PF_COL_TITLE, PF_ATTR_BOLD, "warnings %llu",
                    (unsigned long long)total);
    pf_cells_printf(b, 0, warn_y + 1, -1, PF_COL_DIM, 0,
                    "malformed %llu  bad/unknown events %llu/%llu  gaps %llu (replayed %llu, lost %llu)  "
                    "reconnects %llu  restarts %llu  metrics failed %llu, bad lines %llu, cut %llu",
                    (unsigned long long)c->w_malformed, (unsigned long long)c->w_bad_events,
                    (unsigned long long)c->w_unknown_events, (unsigned long long)c->w_gaps,
                    (unsigned long long)c->w_replayed, (unsigned long long)c->w_lost,
                    (unsigned long long)c->w_reconnects, (unsigned long long)c->w_restarts,
                    (unsigned long long)c->w_metrics_failed, (unsigned long long)c->w_metrics_bad_lines,
                    (unsigned long long)c->w_metrics_truncated);
    double t;
    const char *note = pf_attach_note_get(m, 0, &t);
    if (note)
        pf_cells_printf(b, 0, warn_y + 2, -1, PF_COL_WARN, 0, "%6.1fs  %s", t, note);
}
