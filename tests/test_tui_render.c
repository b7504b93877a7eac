/* tests/test_tui_render.c - the dashboard's screens, asserted on the cell
 * buffer: the pool grid (owner colours, naive waste, shared/swapped marks,
 * N-per-cell scaling, the watermark's reserve), the panels, the too-small
 * message, ASCII fallback, and the pure key helpers. Snapshots are built by
 * hand, so these tests need no simulator. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/cells.h"
#include "tui/dash.h"
#include "tui/render.h"

/* A snapshot of nframes frames, all free, with plausible parameters. */
static pf_sim_snapshot *snap_new(int nframes)
{
    pf_sim_snapshot *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    s->nframes = nframes;
    s->frames = calloc((size_t)nframes, sizeof *s->frames);
    cr_assert_not_null(s->frames);
    for (int i = 0; i < nframes; i++)
        s->frames[i] = (pf_frame_view){-1, PF_FRAME_FREE};
    s->params.cfg.block_size = 16;
    s->params.cfg.max_seq_len = 2048;
    s->params.cfg.pool_blocks = nframes;
    s->params.mode = PF_SIM_PAGED;
    s->params.engine = PF_ENGINE_THREADED;
    s->params.workers = 128;
    s->params.policy = PF_VICTIM_NEWEST;
    s->params.tick_us = 1000;
    s->stats.pool_free = nframes;
    return s;
}

static void snap_del(pf_sim_snapshot *s)
{
    free(s->frames);
    free(s->seqs);
    free(s);
}

static void own(pf_sim_snapshot *s, int lo, int hi, int owner, int state)
{
    for (int f = lo; f < hi; f++)
        s->frames[f] = (pf_frame_view){owner, (uint8_t)state};
}

static pf_cells buf_new(int w, int h)
{
    pf_cells b = {0, 0, NULL};
    cr_assert_eq(pf_cells_resize(&b, w, h), 0);
    return b;
}

/* Cell of frame-cell index c in a grid drawn at (gx, gy) with width gw. */
static const pf_cell *gcell(const pf_cells *b, const pf_grid_info *gi, int c)
{
    return pf_cells_at(b, gi->x + c % gi->w, gi->y + c / gi->w);
}

/* ---- cell buffer ------------------------------------------------------------ */

Test(cells, text_clips_and_reads_back)
{
    pf_cells b = buf_new(10, 2);
    int n = pf_cells_text(&b, 7, 0, -1, PF_COL_DEFAULT, 0, "abcdef");
    cr_assert_eq(n, 3, "text must stop at the right edge");
    pf_cells_text(&b, 0, 1, -1, PF_COL_DEFAULT, 0, "\xe2\x96\x88x"); /* █x */
    cr_assert_eq(pf_cells_at(&b, 0, 1)->ch, 0x2588u);
    cr_assert_eq(pf_cells_at(&b, 1, 1)->ch, (uint32_t)'x');
    char line[64];
    pf_cells_row_text(&b, 0, line, sizeof line);
    cr_assert_str_eq(line, "       abc");
    pf_cells_row_text(&b, 1, line, sizeof line);
    cr_assert_str_eq(line, "\xe2\x96\x88x");
    cr_assert_null(pf_cells_at(&b, 10, 0));
    pf_cells_put(&b, -1, 5, 'z', 0, 0); /* ignored, no crash */
    int x, y;
    cr_assert(pf_cells_find(&b, "bc", &x, &y));
    cr_assert_eq(x, 8);
    cr_assert_eq(y, 0);
    cr_assert_not(pf_cells_find(&b, "zz", NULL, NULL));
    pf_cells_free(&b);
}

Test(cells, invalid_utf8_and_controls_become_visible)
{
    pf_cells b = buf_new(8, 1);
    pf_cells_text(&b, 0, 0, -1, PF_COL_DEFAULT, 0, "a\xff\tb");
    cr_assert_eq(pf_cells_at(&b, 1, 0)->ch, (uint32_t)'?');
    cr_assert_eq(pf_cells_at(&b, 2, 0)->ch, (uint32_t)' ');
    cr_assert_eq(pf_cells_at(&b, 3, 0)->ch, (uint32_t)'b');
    pf_cells_free(&b);
}

/* C1 controls (U+0080..U+009F) are controls too: U+009B is CSI, which a
 * terminal may act on. They were drawn as they came. */
Test(cells, c1_controls_become_blanks)
{
    pf_cells b = {0, 0, NULL};
    cr_assert_eq(pf_cells_resize(&b, 8, 1), 0);
    pf_cells_text(&b, 0, 0, -1, 0, 0, "a\xc2\x9b" "2J\xc2\x85z");
    cr_assert_eq(pf_cells_at(&b, 0, 0)->ch, 'a');
    cr_assert_eq(pf_cells_at(&b, 1, 0)->ch, ' ', "U+009B drawn as 0x%x", pf_cells_at(&b, 1, 0)->ch);
    cr_assert_eq(pf_cells_at(&b, 4, 0)->ch, ' ', "U+0085 drawn as 0x%x", pf_cells_at(&b, 4, 0)->ch);
    cr_assert_eq(pf_cells_at(&b, 5, 0)->ch, 'z');
    pf_cells_free(&b);
}

/* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not
 * UTF-8: each was decoded to a code point (an overlong "\xc0\xaf" to '/',
 * a surrogate that the headless dump then wrote out as invalid UTF-8). */
Test(cells, invalid_utf8_decodes_to_question_mark)
{
    static const char *const bad[] = {"\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xed\xa0\x80",
                                      "\xf4\x90\x80\x80", "\xf7\xbf\xbf\xbf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t cp = 0;
        int n = pf_utf8_decode(bad[i], &cp);
        cr_assert_eq(cp, '?', "case %zu decoded to U+%04X", i, cp);
        cr_assert_eq(n, 1, "case %zu used %d bytes", i, n);
    }
    /* the valid neighbours still decode */
    uint32_t cp;
    cr_assert_eq(pf_utf8_decode("\xc2\x80", &cp), 2);
    cr_assert_eq(cp, 0x80u);
    cr_assert_eq(pf_utf8_decode("\xed\x9f\xbf", &cp), 3);
    cr_assert_eq(cp, 0xD7FFu);
    cr_assert_eq(pf_utf8_decode("\xf4\x8f\xbf\xbf", &cp), 4);
    cr_assert_eq(cp, 0x10FFFFu);
}

/* A needle longer than 256 code points was cut to its first 256, so text
 * that is not on the screen was "found". */
Test(cells, find_matches_the_whole_needle)
{
    pf_cells b = {0, 0, NULL};
    cr_assert_eq(pf_cells_resize(&b, 400, 1), 0);
    char row[401], needle[302];
    memset(row, 'a', 400);
    row[400] = 0;
    pf_cells_text(&b, 0, 0, -1, 0, 0, row);
    memset(needle, 'a', 300);
    needle[300] = 'b';
    needle[301] = 0;
    cr_assert_eq(pf_cells_find(&b, needle, NULL, NULL), 0);
    needle[300] = 0; /* 300 a's are there */
    int x = -1, y = -1;
    cr_assert_eq(pf_cells_find(&b, needle, &x, &y), 1);
    cr_assert_eq(x, 0);
    cr_assert_eq(y, 0);
    cr_assert_eq(pf_cells_find(&b, "", NULL, NULL), 0);
    pf_cells_free(&b);
}

/* ---- grid ------------------------------------------------------------------- */

Test(grid, owner_colours_stable_and_distinct)
{
    pf_sim_snapshot *s = snap_new(256);
    own(s, 0, 10, 1, PF_FRAME_USED);
    own(s, 10, 20, 2, PF_FRAME_USED);
    pf_cells b = buf_new(32, 8);
    pf_grid_info gi;
    pf_render_grid(&b, 0, 0, 32, 8, s, 0, &gi);
    cr_assert_eq(gi.frames_per_cell, 1);
    const pf_cell *c0 = gcell(&b, &gi, 0), *c10 = gcell(&b, &gi, 10), *c30 = gcell(&b, &gi, 30);
    cr_assert_eq(c0->ch, pf_render_glyph(PF_GLYPH_USED, 0));
    cr_assert_eq(c0->color, pf_render_owner_color(1));
    cr_assert_eq(c10->color, pf_render_owner_color(2));
    cr_assert_neq(c0->color, c10->color, "neighbouring sequences need different colours");
    cr_assert_eq(c30->ch, pf_render_glyph(PF_GLYPH_FREE, 0));
    cr_assert_eq(c30->color, PF_COL_DIM);
    cr_assert(c30->attr & PF_ATTR_DIM, "free frames are dim");

    /* stable: sequence 1 keeps its colour when it moves and others change */
    own(s, 0, 256, -1, PF_FRAME_FREE);
    own(s, 100, 110, 1, PF_FRAME_USED);
    own(s, 0, 50, 7, PF_FRAME_USED);
    pf_render_grid(&b, 0, 0, 32, 8, s, 0, &gi);
    cr_assert_eq(gcell(&b, &gi, 105)->color, pf_render_owner_color(1));

    /* any PF_OWNER_COLORS consecutive ids get distinct colours */
    for (int base = 0; base < 200; base += 37) {
        int seen[PF_COL_COUNT] = {0};
        for (int id = base; id < base + PF_OWNER_COLORS; id++) {
            uint8_t col = pf_render_owner_color(id);
            cr_assert(col >= PF_COL_OWNER0 && col < PF_COL_COUNT);
            cr_assert_not(seen[col], "ids %d..%d share a colour", base, base + PF_OWNER_COLORS - 1);
            seen[col] = 1;
        }
    }
    pf_cells_free(&b);
    snap_del(s);
}

Test(grid, naive_waste_shared_swapped_look_different)
{
    pf_sim_snapshot *s = snap_new(64);
    s->params.mode = PF_SIM_NAIVE;
    own(s, 0, 4, 3, PF_FRAME_USED);
    own(s, 4, 32, 3, PF_FRAME_RESERVED); /* naive: reserved, no token yet */
    own(s, 32, 34, 5, PF_FRAME_SHARED);
    own(s, 34, 36, 6, PF_FRAME_SWAPPED);
    for (int ascii = 0; ascii <= 1; ascii++) {
        pf_cells b = buf_new(16, 4);
        pf_grid_info gi;
        pf_render_grid(&b, 0, 0, 16, 4, s, ascii, &gi);
        const pf_cell *used = gcell(&b, &gi, 0), *rsv = gcell(&b, &gi, 10);
        const pf_cell *shr = gcell(&b, &gi, 32), *swp = gcell(&b, &gi, 35), *fre = gcell(&b, &gi, 50);
        cr_assert_eq(rsv->ch, pf_render_glyph(PF_GLYPH_RESERVED, ascii));
        cr_assert_neq(used->ch, rsv->ch, "waste must differ in shape, not only colour");
        cr_assert_eq(used->color, rsv->color, "same owner, same colour");
        cr_assert_eq(shr->ch, pf_render_glyph(PF_GLYPH_SHARED, ascii));
        cr_assert_eq(swp->ch, pf_render_glyph(PF_GLYPH_SWAPPED, ascii));
        /* all five states distinct glyphs */
        uint32_t g[5] = {used->ch, rsv->ch, shr->ch, swp->ch, fre->ch};
        for (int i = 0; i < 5; i++)
            for (int j = i + 1; j < 5; j++)
                cr_assert_neq(g[i], g[j], "states %d and %d share a glyph (ascii=%d)", i, j, ascii);
        if (ascii)
            cr_assert_eq(used->ch, (uint32_t)'#');
        pf_cells_free(&b);
    }
    snap_del(s);
}

Test(grid, n_frames_per_cell_and_dominant_owner)
{
    pf_sim_snapshot *s = snap_new(4096);
    /* 40 x 20 = 800 cells for 4096 frames: N = ceil(4096 / 800) = 6 */
    /* cell 0 = frames 0..5: five of seq 5 and one of seq 9 */
    own(s, 0, 5, 5, PF_FRAME_USED);
    own(s, 5, 6, 9, PF_FRAME_USED);
    /* cell 1 = frames 6..11: two used by seq 2, four free -> free wins */
    own(s, 6, 8, 2, PF_FRAME_USED);
    /* cell 2 = frames 12..17: three reserved + three used by seq 4 -> tie goes to used */
    own(s, 12, 15, 4, PF_FRAME_RESERVED);
    own(s, 15, 18, 4, PF_FRAME_USED);
    pf_cells b = buf_new(40, 20);
    pf_grid_info gi;
    pf_render_grid(&b, 0, 0, 40, 20, s, 0, &gi);
    cr_assert_eq(gi.frames_per_cell, 6);
    cr_assert_eq(gi.cells, (4096 + 5) / 6);
    cr_assert_eq(gcell(&b, &gi, 0)->color, pf_render_owner_color(5));
    cr_assert_eq(gcell(&b, &gi, 0)->ch, pf_render_glyph(PF_GLYPH_USED, 0));
    cr_assert_eq(gcell(&b, &gi, 1)->ch, pf_render_glyph(PF_GLYPH_FREE, 0));
    cr_assert_eq(gcell(&b, &gi, 2)->ch, pf_render_glyph(PF_GLYPH_USED, 0));
    /* cells past the last one stay blank */
    cr_assert_eq(gcell(&b, &gi, gi.cells)->ch, (uint32_t)' ');
    cr_assert_neq(gcell(&b, &gi, gi.cells - 1)->ch, (uint32_t)' ');

    /* a small pool on the same area: one frame per cell */
    pf_sim_snapshot *t = snap_new(100);
    pf_render_grid(&b, 0, 0, 40, 20, t, 0, &gi);
    cr_assert_eq(gi.frames_per_cell, 1);
    pf_cells_free(&b);
    snap_del(t);
    snap_del(s);
}

Test(grid, legend_says_n)
{
    pf_sim_snapshot *s = snap_new(4096);
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .gpu = NULL, .ascii = 0, .help = 0, .status = NULL};
    pf_grid_info gi;
    cr_assert_eq(pf_render_screen(&b, &v, &gi), 0);
    cr_assert_gt(gi.frames_per_cell, 1, "4096 frames do not fit one per cell at 120x40");
    char want[64];
    snprintf(want, sizeof want, "N=%d frames/cell", gi.frames_per_cell);
    cr_assert(pf_cells_find(&b, want, NULL, NULL), "legend lacks '%s'", want);
    snprintf(want, sizeof want, "1 cell = %d frames", gi.frames_per_cell);
    cr_assert(pf_cells_find(&b, want, NULL, NULL), "grid title lacks '%s'", want);
    /* every frame has a cell inside the grid's rectangle */
    cr_assert_leq(gi.cells, gi.w * gi.h);
    cr_assert_geq(gi.cells * gi.frames_per_cell, 4096);
    pf_cells_free(&b);
    snap_del(s);
}

Test(grid, watermark_reserve_marked)
{
    pf_sim_snapshot *s = snap_new(1000);
    s->params.watermark = 0.05; /* ceil(0.05 * 1000) = 50 frames */
    own(s, 0, 100, 1, PF_FRAME_USED);
    own(s, 990, 1000, 2, PF_FRAME_USED); /* a sequence dipped into the reserve */
    pf_cells b = buf_new(50, 20);
    pf_grid_info gi;
    pf_render_grid(&b, 0, 0, 50, 20, s, 0, &gi);
    cr_assert_eq(gi.frames_per_cell, 1);
    cr_assert_eq(gi.reserve_frames, 50);
    cr_assert_eq(gi.reserve_cells, 50);
    for (int c = 0; c < 1000; c++) {
        const pf_cell *cell = gcell(&b, &gi, c);
        int in = c >= 950;
        cr_assert_eq(!!(cell->attr & PF_ATTR_UNDERLINE), in, "cell %d reserve mark", c);
        if (in && c < 990) {
            cr_assert_eq(cell->ch, pf_render_glyph(PF_GLYPH_RESERVE, 0));
            cr_assert_eq(cell->color, PF_COL_RESERVE);
        }
    }
    cr_assert_eq(gcell(&b, &gi, 995)->ch, pf_render_glyph(PF_GLYPH_USED, 0));
    /* watermark 0: nothing marked */
    s->params.watermark = 0;
    pf_render_grid(&b, 0, 0, 50, 20, s, 0, &gi);
    cr_assert_eq(gi.reserve_cells, 0);
    cr_assert_not(gcell(&b, &gi, 999)->attr & PF_ATTR_UNDERLINE);
    /* the screen's parameters and legend state it */
    s->params.watermark = 0.05;
    pf_cells scr = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .gpu = NULL, .ascii = 1, .help = 0, .status = NULL};
    pf_render_screen(&scr, &v, NULL);
    cr_assert(pf_cells_find(&scr, "reserve 50 fr", NULL, NULL));
    cr_assert(pf_cells_find(&scr, "watermark 5.0% = 50 frames", NULL, NULL));
    pf_cells_free(&scr);
    pf_cells_free(&b);
    snap_del(s);
}

/* ---- panels ---------------------------------------------------------------------- */

static int row_has_both(const pf_cells *b, const char *a, const char *c)
{
    char line[4096];
    for (int y = 0; y < b->h; y++) {
        pf_cells_row_text(b, y, line, sizeof line);
        char *pa = strstr(line, a);
        if (pa && strstr(pa + strlen(a), c))
            return 1;
    }
    return 0;
}

Test(panels, counters_params_events)
{
    pf_sim_snapshot *s = snap_new(4096);
    s->stats.waiting = 311;
    s->stats.running = 128;
    s->stats.decoding = 117;
    s->stats.stalled = 11;
    s->stats.preemptions = 4321;
    s->stats.recomputed_tokens = 198765;
    s->stats.kv_usage = 0.5;
    s->stats.kv_util = 0.873;
    s->stats.throughput_vs_naive = 1.92;
    s->stats.goodput = 0.931;
    s->stats.step = 777;
    s->stats.time_s = 7.77;
    s->stats.throughput = 123456;
    s->params.watermark = 0.02;
    s->params.workers = 144;
    s->params.policy = PF_VICTIM_MOST_FRAMES;
    s->params.preempt = PF_PREEMPT_SWAP;
    s->nevents = 4;
    s->events[0] = (pf_event){770, PF_EV_ADMIT, 42, 7, 770 * 0.01};
    s->events[1] = (pf_event){775, PF_EV_PREEMPT, 13, 20, 775 * 0.01};
    s->events[2] = (pf_event){776, PF_EV_FINISH, 42, 9, 776 * 0.01};
    s->events[3] = (pf_event){776, PF_EV_WATERMARK, -1, 35, 776 * 0.01};
    s->nhistory = 3; /* 10 ms steps: 0 (no length known), 5000, 11700 tok/s */
    s->hist_tokens[0] = 10, s->hist_tokens[1] = 50, s->hist_tokens[2] = 117;
    s->hist_time[0] = 7.75, s->hist_time[1] = 7.76, s->hist_time[2] = 7.77;
    for (int ascii = 0; ascii <= 1; ascii++) {
        pf_cells b = buf_new(120, 40);
        pf_dash_view v = {.snap = s, .gpu = NULL, .ascii = ascii, .help = 0, .status = "watermark 2.0%"};
        pf_render_screen(&b, &v, NULL);
        cr_assert(row_has_both(&b, "waiting", "311"));
        cr_assert(row_has_both(&b, "running", "128"));
        cr_assert(row_has_both(&b, "decoding", "117"));
        cr_assert(row_has_both(&b, "stalled", "11"));
        cr_assert(row_has_both(&b, "preempts", "4321"));
        cr_assert(row_has_both(&b, "recomputed", "199k"), "three significant digits, whole");
        cr_assert(row_has_both(&b, "util", "87.3%"));
        cr_assert(row_has_both(&b, "vs naive", "1.92x"));
        cr_assert(row_has_both(&b, "goodput", "93.1%"));
        cr_assert(pf_cells_find(&b, "step 777 | 7.77 s", NULL, NULL), "steps and simulated seconds");
        cr_assert(row_has_both(&b, "tok/s", "123k"), "output tokens per second, whole");
        cr_assert(pf_cells_find(&b, "RUNNING", NULL, NULL));
        cr_assert(pf_cells_find(&b, "watermark 2.0% = 82 frames", NULL, NULL));
        cr_assert(pf_cells_find(&b, "max seqs 144", NULL, NULL));
        cr_assert(pf_cells_find(&b, "victim most-frames", NULL, NULL));
        cr_assert(pf_cells_find(&b, "preempt swap", NULL, NULL));
        cr_assert(row_has_both(&b, "admit", "seq 42"));
        cr_assert(row_has_both(&b, "preempt", "seq 13"));
        cr_assert(row_has_both(&b, "finish", "seq 42"));
        cr_assert(row_has_both(&b, "7.760s", "seq 42"), "event times in simulated seconds");
        cr_assert(row_has_both(&b, "watermark", "load controller: watermark -> 3.5%"),
                  "the load controller's decision in the log");
        cr_assert_not(pf_cells_find(&b, "waste", NULL, NULL), "no waste figure when the event has none");
        /* sparkline under the History title: "tok/s" then one level glyph
         * per step, the last (11700 tok/s, the largest) at the top level */
        uint32_t top = ascii ? (uint32_t)'#' : 0x2588u;
        int hx, hy;
        cr_assert(pf_cells_find(&b, "History (per step)", &hx, &hy));
        char row[512];
        pf_cells_row_text(&b, hy + 1, row, sizeof row);
        cr_assert(strstr(row, "tok/s"), "%s", row);
        int n = 0;
        while (pf_cells_at(&b, hx + 10 + n, hy + 1)->ch != ' ')
            n++;
        cr_assert_eq(n, 3, "one glyph per sample");
        cr_assert_eq(pf_cells_at(&b, hx + 10 + 2, hy + 1)->ch, top);
        cr_assert_neq(pf_cells_at(&b, hx + 10, hy + 1)->ch, top);
        cr_assert(pf_cells_find(&b, "quit", NULL, NULL), "key help line");
        if (ascii)
            for (int i = 0; i < b.w * b.h; i++)
                cr_assert_lt(b.cells[i].ch, 128u, "non-ASCII at %d in --ascii", i);
        pf_cells_free(&b);
    }
    /* the waste of the window that decided a move, when the simulator gives it */
    s->events[3].seq = 125;
    {
        pf_cells b = buf_new(120, 40);
        pf_dash_view v = {.snap = s};
        pf_render_screen(&b, &v, NULL);
        cr_assert(pf_cells_find(&b, "load controller: watermark -> 3.5% (recompute waste 12.5%)", NULL, NULL));
        pf_cells_free(&b);
    }
    /* paused shows in the header */
    s->paused = 1;
    pf_cells b = buf_new(100, 30);
    pf_dash_view v = {.snap = s, .gpu = NULL, .ascii = 0, .help = 0, .status = NULL};
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "PAUSED", NULL, NULL));
    pf_cells_free(&b);
    snap_del(s);
}

Test(panels, too_small_message)
{
    pf_sim_snapshot *s = snap_new(4096);
    pf_cells b = buf_new(60, 20);
    pf_dash_view v = {.snap = s, .gpu = NULL, .ascii = 0, .help = 0, .status = NULL};
    cr_assert_eq(pf_render_screen(&b, &v, NULL), 1);
    cr_assert(pf_cells_find(&b, "terminal too small: 60x20", NULL, NULL));
    cr_assert(pf_cells_find(&b, "need at least 80x24", NULL, NULL));
    cr_assert_not(pf_cells_find(&b, "Counters", NULL, NULL), "no panels when too small");
    pf_cells_free(&b);
    /* exactly the minimum draws the dashboard, every panel inside */
    b = buf_new(PF_DASH_MIN_W, PF_DASH_MIN_H);
    pf_grid_info gi;
    cr_assert_eq(pf_render_screen(&b, &v, &gi), 0);
    const char *must[] = {"Counters", "History", "Parameters", "Events", "GPU passes", "Pool",
                          "victim", "N=", "quit"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        cr_assert(pf_cells_find(&b, must[i], NULL, NULL), "'%s' missing at 80x24", must[i]);
    cr_assert_geq(gi.h, 5, "grid too short at 80x24");
    pf_cells_free(&b);
    snap_del(s);
}

Test(panels, gpu_states)
{
    pf_sim_snapshot *s = snap_new(512);
    pf_gpu_panel g;
    memset(&g, 0, sizeof g);
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .gpu = &g, .ascii = 0, .help = 0, .status = NULL};
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "press g", NULL, NULL));

    g.state = PF_GPU_PANEL_UNAVAILABLE;
    snprintf(g.msg, sizeof g.msg, "built without CUDA");
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "GPU unavailable: built without CUDA", NULL, NULL));

    g.state = PF_GPU_PANEL_DONE;
    g.step = 1234;
    g.nseqs = 17;
    g.nframes = 300;
    g.ok[0] = 1;
    g.res[0].naive_ms = 0.0123;
    g.res[0].paged_ms = 0.0456;
    g.res[0].ordered_ms = 0.0345;
    g.res[0].paged_gbps = 876.5;
    g.res[0].max_err_paged = 2.5e-7;
    snprintf(g.res[0].device, sizeof g.res[0].device, "NVIDIA H200");
    g.ok[1] = 0;
    snprintf(g.err[1], sizeof g.err[1], "out of device memory");
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "NVIDIA H200", NULL, NULL));
    cr_assert(row_has_both(&b, "naive", "0.0123 ms"));
    cr_assert(row_has_both(&b, "paged (now)", "0.0456 ms"));
    cr_assert(row_has_both(&b, "paged (now)", "876.5 GB/s"));
    cr_assert(row_has_both(&b, "paged (now)", "2.5e-07"));
    cr_assert(row_has_both(&b, "paged (ord.)", "0.0345 ms"));
    cr_assert(pf_cells_find(&b, "out of device memory", NULL, NULL));
    cr_assert(pf_cells_find(&b, pf_gpu_panel_shapes[1].name, NULL, NULL));
    pf_cells_free(&b);
    snap_del(s);
}

Test(panels, help_overlay_and_no_snapshot)
{
    pf_cells b = buf_new(100, 30);
    pf_dash_view v = {.snap = NULL, .gpu = NULL, .ascii = 0, .help = 1, .status = NULL};
    cr_assert_eq(pf_render_screen(&b, &v, NULL), 0);
    cr_assert(pf_cells_find(&b, "waiting for the simulator", NULL, NULL));
    cr_assert(pf_cells_find(&b, "single step", NULL, NULL));
    cr_assert(pf_cells_find(&b, "watermark down / up", NULL, NULL));
    pf_cells_free(&b);
}

/* ---- keys and helpers --------------------------------------------------------------- */

Test(keys, map)
{
    cr_assert_eq(pf_dash_key('w'), PF_DASH_CMD_WATERMARK_DOWN);
    cr_assert_eq(pf_dash_key('W'), PF_DASH_CMD_WATERMARK_UP);
    cr_assert_eq(pf_dash_key('+'), PF_DASH_CMD_WORKERS_UP);
    cr_assert_eq(pf_dash_key(']'), PF_DASH_CMD_WORKERS_UP);
    cr_assert_eq(pf_dash_key('-'), PF_DASH_CMD_WORKERS_DOWN);
    cr_assert_eq(pf_dash_key('['), PF_DASH_CMD_WORKERS_DOWN);
    cr_assert_eq(pf_dash_key('v'), PF_DASH_CMD_POLICY_NEXT);
    cr_assert_eq(pf_dash_key('p'), PF_DASH_CMD_PREEMPT_NEXT);
    cr_assert_eq(pf_dash_key('m'), PF_DASH_CMD_MODE_TOGGLE);
    cr_assert_eq(pf_dash_key(' '), PF_DASH_CMD_PAUSE_TOGGLE);
    cr_assert_eq(pf_dash_key('s'), PF_DASH_CMD_STEP);
    cr_assert_eq(pf_dash_key('.'), PF_DASH_CMD_STEP);
    cr_assert_eq(pf_dash_key('f'), PF_DASH_CMD_SLOWER);
    cr_assert_eq(pf_dash_key('F'), PF_DASH_CMD_FASTER);
    cr_assert_eq(pf_dash_key('r'), PF_DASH_CMD_RESET);
    cr_assert_eq(pf_dash_key('g'), PF_DASH_CMD_GPU);
    cr_assert_eq(pf_dash_key('?'), PF_DASH_CMD_HELP);
    cr_assert_eq(pf_dash_key('q'), PF_DASH_CMD_QUIT);
    cr_assert_eq(pf_dash_key('z'), PF_DASH_CMD_NONE);
}

Test(keys, watermark_and_worker_steps)
{
    cr_assert_float_eq(pf_dash_watermark_step(0.01, 1), 0.02, 1e-12);
    cr_assert_float_eq(pf_dash_watermark_step(0.0, 0), 0.0, 1e-12);
    cr_assert_float_eq(pf_dash_watermark_step(0.09, 1), 0.10, 1e-12);
    cr_assert_float_eq(pf_dash_watermark_step(0.10, 1), 0.15, 1e-12);
    cr_assert_float_eq(pf_dash_watermark_step(0.15, 0), 0.10, 1e-12);
    cr_assert_float_eq(pf_dash_watermark_step(0.10, 0), 0.09, 1e-12);
    cr_assert_float_eq(pf_dash_watermark_step(1.0, 1), 1.0, 1e-12);
    cr_assert_float_eq(pf_dash_watermark_step(0.013, 1), 0.02, 1e-12, "lands on round values");
    /* ten presses up and ten down return to the start */
    double w = 0.03;
    for (int i = 0; i < 10; i++)
        w = pf_dash_watermark_step(w, 1);
    for (int i = 0; i < 10; i++)
        w = pf_dash_watermark_step(w, 0);
    cr_assert_float_eq(w, 0.03, 1e-12);
    cr_assert_eq(pf_dash_workers_step(128, 1), 144);
    cr_assert_eq(pf_dash_workers_step(144, 0), 128);
    cr_assert_eq(pf_dash_workers_step(1, 0), 1);
    cr_assert_eq(pf_dash_workers_step(PF_SIM_MAX_SEQS, 1), PF_SIM_MAX_SEQS);
    cr_assert_eq(pf_dash_workers_step(1024, 1), 1088, "vLLM's default is a few presses from its neighbours");
    cr_assert_eq(pf_dash_workers_step(1088, 0), 1024);
    int n = 5;
    for (int i = 0; i < 40; i++)
        n = pf_dash_workers_step(n, 1);
    for (int i = 0; i < 40; i++)
        n = pf_dash_workers_step(n, 0);
    cr_assert_eq(n, 5, "up and down steps are symmetric");
}

Test(keys, dump_writes_every_row)
{
    pf_cells b = buf_new(20, 3);
    pf_cells_text(&b, 0, 1, -1, PF_COL_DEFAULT, 0, "hello  ");
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    pf_dash_dump(f, &b);
    rewind(f);
    char got[256];
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    cr_assert_str_eq(got, "\nhello\n\n");
    fclose(f);
    pf_cells_free(&b);
}

/* Audit regression: at 80x24 the grid title was clipped mid-number
 * ("... | 4096 x 16 tok | 40" for 4096 used) and the legend's N lost its
 * unit; on a narrow column the pool's shape is dropped instead. */
Test(grid, narrow_title_keeps_counts_whole)
{
    pf_sim_snapshot *s = snap_new(4096);
    own(s, 0, 4096, 5, PF_FRAME_RESERVED);
    s->params.mode = PF_SIM_NAIVE;
    s->stats.pool_used = 4096;
    s->stats.pool_free = 0;
    pf_cells b = buf_new(PF_DASH_MIN_W, PF_DASH_MIN_H);
    pf_dash_view v = {.snap = s, .gpu = NULL, .ascii = 1, .help = 0, .status = NULL};
    pf_grid_info gi;
    cr_assert_eq(pf_render_screen(&b, &v, &gi), 0);
    cr_assert(pf_cells_find(&b, "4096 used 0 free", NULL, NULL), "used/free clipped at 80x24");
    char want[64];
    snprintf(want, sizeof want, "1 cell = %d frames", gi.frames_per_cell);
    cr_assert(pf_cells_find(&b, want, NULL, NULL), "title lacks '%s'", want);
    char longer[64];
    snprintf(want, sizeof want, "N=%d/cell", gi.frames_per_cell);
    snprintf(longer, sizeof longer, "N=%d frames/cell", gi.frames_per_cell);
    cr_assert(pf_cells_find(&b, want, NULL, NULL) || pf_cells_find(&b, longer, NULL, NULL),
              "legend's N clipped at 80x24");
    pf_cells_free(&b);
    snap_del(s);
}

/* Audit regression: naive admits by reservation and ignores the watermark,
 * but the grid marked a watermark reserve under naive too, as if frames
 * were held back. Under naive nothing is marked and the panels say so. */
Test(grid, naive_marks_no_reserve)
{
    pf_sim_snapshot *s = snap_new(1000);
    s->params.watermark = 0.05;
    s->params.mode = PF_SIM_NAIVE;
    own(s, 0, 256, 1, PF_FRAME_RESERVED);
    pf_cells b = buf_new(50, 20);
    pf_grid_info gi;
    pf_render_grid(&b, 0, 0, 50, 20, s, 0, &gi);
    cr_assert_eq(gi.reserve_frames, 0);
    cr_assert_eq(gi.reserve_cells, 0);
    for (int c = 0; c < gi.cells; c++)
        cr_assert_not(gcell(&b, &gi, c)->attr & PF_ATTR_UNDERLINE, "cell %d marked as reserve", c);
    pf_cells scr = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .gpu = NULL, .ascii = 1, .help = 0, .status = NULL};
    cr_assert_eq(pf_render_screen(&scr, &v, NULL), 0);
    cr_assert(pf_cells_find(&scr, "no reserve (naive)", NULL, NULL));
    cr_assert(pf_cells_find(&scr, "watermark 5.0% (naive: unused)", NULL, NULL));
    cr_assert_not(pf_cells_find(&scr, "reserve 50 fr", NULL, NULL));
    /* the same snapshot under paged marks it */
    s->params.mode = PF_SIM_PAGED;
    pf_render_grid(&b, 0, 0, 50, 20, s, 0, &gi);
    cr_assert_eq(gi.reserve_frames, 50);
    pf_cells_free(&scr);
    pf_cells_free(&b);
    snap_del(s);
}

/* ---- the command queue: no key press is dropped ------------------------------ */

#include "tui/cmdq.h"

Test(cmdq, burst_is_kept_whole_and_in_order)
{
    /* the old bridge dropped everything past 64 pending presses */
    pf_cmdq q = {0}, out = {0};
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(pf_cmdq_push(&q, i % 97), 0);
    cr_assert_eq(pf_cmdq_take(&q, &out), 10000);
    cr_assert_eq(q.n, 0, "take leaves the queue empty");
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(out.v[i], i % 97, "command %d out of order", i);
    /* the next round reuses the arrays and still keeps order */
    pf_cmdq_push(&q, 5);
    pf_cmdq_push(&q, 6);
    cr_assert_eq(pf_cmdq_take(&q, &out), 2);
    cr_assert_eq(out.v[0], 5);
    cr_assert_eq(out.v[1], 6);
    cr_assert_eq(pf_cmdq_take(&q, &out), 0);
    pf_cmdq_free(&q);
    pf_cmdq_free(&out);
}

/* ---- issue 12: conventions, colourings, flashes, inspector -------------------- */

#include "tui/marks.h"
#include "tui/term.h"

Test(keys, conventions)
{
    cr_assert_eq(pf_dash_key(PF_TERM_KEY_F1), PF_DASH_CMD_HELP);
    cr_assert_eq(pf_dash_key(PF_TERM_KEY_F10), PF_DASH_CMD_QUIT);
    cr_assert_eq(pf_dash_key(PF_TERM_KEY_ESC), PF_DASH_CMD_CLOSE);
    cr_assert_eq(pf_dash_key('c'), PF_DASH_CMD_COLORING);
    cr_assert_eq(pf_dash_key(PF_TERM_KEY_LEFT), PF_DASH_CMD_CURSOR_LEFT);
    cr_assert_eq(pf_dash_key(PF_TERM_KEY_DOWN), PF_DASH_CMD_CURSOR_DOWN);
    /* the key line's entries answer a click with the key drawn there */
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = NULL};
    pf_render_screen(&b, &v, NULL);
    char row[2048];
    pf_cells_row_text(&b, 39, row, sizeof row);
    const char *f10 = strstr(row, "F10"), *col = strstr(row, "colour");
    cr_assert(f10 && col, "key line: %s", row);
    cr_assert_eq(pf_render_keybar_key(120, (int)(f10 - row)), 'q');
    cr_assert_eq(pf_render_keybar_key(120, 0), '?');
    cr_assert_eq(pf_dash_key(pf_render_keybar_key(120, (int)(col - row))), PF_DASH_CMD_COLORING);
    cr_assert_eq(pf_render_keybar_key(120, 119), 0, "past the last entry: nothing");
    pf_cells_free(&b);
}

Test(keys, cursor_moves_and_clamps)
{
    cr_assert_eq(pf_dash_cursor_move(-1, PF_DASH_CMD_CURSOR_LEFT, 100, 10), 50, "first move: middle");
    cr_assert_eq(pf_dash_cursor_move(50, PF_DASH_CMD_CURSOR_LEFT, 100, 10), 49);
    cr_assert_eq(pf_dash_cursor_move(50, PF_DASH_CMD_CURSOR_DOWN, 100, 10), 60);
    cr_assert_eq(pf_dash_cursor_move(5, PF_DASH_CMD_CURSOR_UP, 100, 10), 5, "top row stays");
    cr_assert_eq(pf_dash_cursor_move(99, PF_DASH_CMD_CURSOR_RIGHT, 100, 10), 99, "clamped");
    cr_assert_eq(pf_dash_cursor_move(95, PF_DASH_CMD_CURSOR_DOWN, 100, 10), 95);
    cr_assert_eq(pf_dash_cursor_move(3, PF_DASH_CMD_CURSOR_LEFT, 0, 10), -1, "no grid");
}

Test(format, counts_never_cut_mid_digit)
{
    char t[32];
    pf_render_fmt_count(t, sizeof t, 4190000);
    cr_assert_str_eq(t, "4.19M");
    pf_render_fmt_count(t, sizeof t, 99999);
    cr_assert_str_eq(t, "99999");
    pf_render_fmt_count(t, sizeof t, 100000);
    cr_assert_str_eq(t, "100k");
    pf_render_fmt_count(t, sizeof t, 41900000);
    cr_assert_str_eq(t, "41.9M");
    pf_render_fmt_count(t, sizeof t, 999600);
    cr_assert_str_eq(t, "1.00M", "rounding carries into the next unit");
    pf_render_fmt_count(t, sizeof t, -2500000);
    cr_assert_str_eq(t, "-2.50M");
    /* a huge counter in the panel: the value whole at the right edge */
    pf_sim_snapshot *s = snap_new(4096);
    s->stats.recomputed_tokens = 123456789012LL;
    pf_cells b = buf_new(80, 24);
    pf_dash_view v = {.snap = s};
    pf_render_screen(&b, &v, NULL);
    cr_assert(row_has_both(&b, "recomputed", "123G"));
    pf_cells_free(&b);
    snap_del(s);
}

Test(panels, util_is_tokens_over_held_capacity)
{
    /* naive: every frame held, most reserved with no token: not "100%" */
    pf_sim_snapshot *s = snap_new(4096);
    s->params.mode = PF_SIM_NAIVE;
    own(s, 0, 800, 1, PF_FRAME_USED);
    own(s, 800, 4096, 1, PF_FRAME_RESERVED);
    s->stats.pool_used = 4096;
    s->stats.pool_free = 0;
    s->stats.kv_usage = 1.0;
    s->stats.kv_util = 0.176;
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s};
    pf_render_screen(&b, &v, NULL);
    cr_assert(row_has_both(&b, "util", "17.6%"));
    cr_assert_not(row_has_both(&b, "util", "100.0%"), "util must not be the pool's fill");
    /* the pool's fill is the header's meter */
    cr_assert(pf_cells_find(&b, "100.0% 4096/4096", NULL, NULL));
    int x, y;
    cr_assert(pf_cells_find(&b, "KV[", &x, &y));
    cr_assert_eq(pf_cells_at(&b, x + 3, y)->ch, (uint32_t)'|');
    pf_cells_free(&b);
    snap_del(s);
}

Test(grid, legend_promises_shared_only_when_some_exist)
{
    pf_sim_snapshot *s = snap_new(256);
    own(s, 0, 40, 1, PF_FRAME_USED);
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s};
    pf_grid_info gi;
    pf_render_screen(&b, &v, &gi);
    cr_assert_eq(gi.shared_frames, 0);
    cr_assert_not(pf_cells_find(&b, "shared", NULL, NULL), "legend promises shared frames");
    own(s, 40, 44, 2, PF_FRAME_SHARED);
    pf_render_screen(&b, &v, &gi);
    cr_assert_eq(gi.shared_frames, 4);
    cr_assert(pf_cells_find(&b, "shared", NULL, NULL));
    pf_cells_free(&b);
    snap_del(s);
}

/* seqs[] and frame_seq[] for the colourings and the inspector */
static void seqs_add(pf_sim_snapshot *s, int32_t id, int state, int64_t admit, int lo, int hi)
{
    s->seqs = realloc(s->seqs, (size_t)(s->nseqs + 1) * sizeof *s->seqs);
    cr_assert_not_null(s->seqs);
    if (!s->frame_seq) {
        s->frame_seq = malloc((size_t)s->nframes * sizeof *s->frame_seq);
        s->frame_block = malloc((size_t)s->nframes * sizeof *s->frame_block);
        cr_assert(s->frame_seq && s->frame_block);
        for (int f = 0; f < s->nframes; f++)
            s->frame_seq[f] = s->frame_block[f] = -1;
    }
    pf_seq_view q;
    memset(&q, 0, sizeof q);
    q.id = id;
    q.state = (uint8_t)state;
    q.prompt = 100;
    q.output = 50;
    q.generated = 7;
    q.frames = hi - lo;
    q.preemptions = 2;
    q.arrival = 0.03; /* seconds; the tests' steps are 10 ms */
    q.admit_step = admit;
    q.admit_time = admit >= 0 ? admit * 0.01 : -1;
    q.ttft = -1;
    q.computed = 100;
    s->seqs[s->nseqs] = q;
    for (int f = lo; f < hi; f++) {
        s->frames[f] = (pf_frame_view){id, PF_FRAME_USED};
        s->frame_seq[f] = s->nseqs;
        s->frame_block[f] = hi - 1 - f; /* scattered: logical order reversed */
    }
    s->nseqs++;
}

static void snap_del2(pf_sim_snapshot *s)
{
    free(s->frame_seq);
    free(s->frame_block);
    snap_del(s);
}

Test(grid, colourings_by_state_and_age)
{
    pf_sim_snapshot *s = snap_new(256);
    s->stats.step = 3000;
    seqs_add(s, 1, PF_SEQ_DECODING, 2990, 0, 10);    /* young, running  */
    seqs_add(s, 2, PF_SEQ_STALLED, 100, 10, 20);     /* old, stalled    */
    seqs_add(s, 3, PF_SEQ_RECOMPUTING, 2900, 20, 30);
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .coloring = PF_COLORING_STATE};
    pf_grid_info gi;
    pf_render_screen(&b, &v, &gi);
    cr_assert_eq(gi.frames_per_cell, 1);
    cr_assert_eq(gcell(&b, &gi, 0)->color, PF_COL_RUNNING);
    cr_assert_eq(gcell(&b, &gi, 15)->color, PF_COL_STALLED, "a stalled sequence must not look running");
    cr_assert_eq(gcell(&b, &gi, 25)->color, PF_COL_RECOMPUTE);
    cr_assert_eq(gcell(&b, &gi, 100)->color, PF_COL_DIM, "free stays dim");
    cr_assert(pf_cells_find(&b, "stalled", NULL, NULL) && pf_cells_find(&b, "recomputing", NULL, NULL),
              "the legend names the states");
    cr_assert(pf_cells_find(&b, "Pool by state", NULL, NULL));

    v.coloring = PF_COLORING_AGE;
    s->stats.time_s = 30.0; /* step 3000 at 10 ms */
    pf_render_screen(&b, &v, &gi);
    cr_assert_eq(gcell(&b, &gi, 0)->color, PF_COL_AGE0 + 0, "scheduled 0.1 s ago: youngest");
    cr_assert_eq(gcell(&b, &gi, 15)->color, PF_COL_AGE0 + 3, "29 s: 16..64 s");
    cr_assert_neq(gcell(&b, &gi, 0)->color, gcell(&b, &gi, 15)->color);
    cr_assert(pf_cells_find(&b, "age<1s", NULL, NULL));
    cr_assert_eq(pf_render_age_bucket(0), 0);
    cr_assert_eq(pf_render_age_bucket(0.999), 0);
    cr_assert_eq(pf_render_age_bucket(1.0), 1);
    cr_assert_eq(pf_render_age_bucket(63.9), 3);
    cr_assert_eq(pf_render_age_bucket(64.0), 4);

    v.coloring = PF_COLORING_OWNER;
    pf_render_screen(&b, &v, &gi);
    cr_assert_eq(gcell(&b, &gi, 15)->color, pf_render_owner_color(2));
    cr_assert(pf_cells_find(&b, "colour: owner", NULL, NULL));
    pf_cells_free(&b);
    snap_del2(s);
}

/* Without colour every colouring must still tell its classes apart on the
 * text alone: the state colouring by a glyph per state (running, stalled,
 * prefilling, recomputing, swapped, shared, cached, reserved, free,
 * reserve), the owner colouring by a letter per owner, the age colouring by
 * a digit per bucket; and each legend names the glyphs it uses. */
Test(grid, no_color_every_colouring_reads_as_text)
{
    pf_sim_snapshot *s = snap_new(256);
    s->stats.step = 3000;
    s->stats.time_s = 30.0;
    s->params.watermark = 0.05; /* 13 frames of reserve at the end */
    s->params.prefix_caching = 1;
    seqs_add(s, 1, PF_SEQ_DECODING, 2990, 0, 10);
    seqs_add(s, 2, PF_SEQ_STALLED, 100, 10, 20);
    seqs_add(s, 3, PF_SEQ_RECOMPUTING, 2900, 20, 30);
    seqs_add(s, 4, PF_SEQ_PREFILLING, 2999, 30, 40);
    own(s, 40, 50, 1, PF_FRAME_SHARED);
    own(s, 50, 60, -1, PF_FRAME_CACHED);
    own(s, 60, 70, 5, PF_FRAME_RESERVED);
    own(s, 70, 80, 6, PF_FRAME_SWAPPED);
    /* one cell per class: running, stalled, recomputing, prefilling,
     * shared, cached, reserved, swapped, free, reserve */
    static const int cell[10] = {5, 15, 25, 35, 45, 55, 65, 75, 100, 255};
    static const char *const words[10] = {"running", "stalled", "recomputing", "prefilling", "shared",
                                          "cached", "reserved", "swapped", "free", "reserve"};
    for (int ascii = 0; ascii <= 1; ascii++) {
        pf_cells b = buf_new(120, 40);
        pf_dash_view v = {.snap = s, .coloring = PF_COLORING_STATE, .no_color = 1, .ascii = ascii};
        pf_grid_info gi;
        pf_render_screen(&b, &v, &gi);
        cr_assert_eq(gi.frames_per_cell, 1);
        uint32_t g[10];
        for (int k = 0; k < 10; k++) {
            g[k] = gcell(&b, &gi, cell[k])->ch;
            for (int j = 0; j < k; j++)
                cr_assert_neq(g[k], g[j], "%s and %s look alike (ascii %d)", words[k], words[j], ascii);
            /* the legend pairs the glyph with its word: "<glyph> word" */
            char want[32], enc[8];
            enc[pf_utf8_encode(g[k], enc)] = 0;
            snprintf(want, sizeof want, "%s %s", enc, words[k]);
            cr_assert(pf_cells_find(&b, want, NULL, NULL), "legend lacks '%s' (ascii %d)", want, ascii);
        }
        /* the same with colour: the shapes do not depend on no_color */
        v.no_color = 0;
        pf_render_screen(&b, &v, &gi);
        for (int k = 0; k < 10; k++)
            cr_assert_eq(gcell(&b, &gi, cell[k])->ch, g[k]);
        /* owner: a letter per sequence without colour, the same block with it */
        v.coloring = PF_COLORING_OWNER;
        v.no_color = 1;
        pf_render_screen(&b, &v, &gi);
        cr_assert_eq(gcell(&b, &gi, 5)->ch, pf_render_owner_letter(1));
        cr_assert_eq(gcell(&b, &gi, 15)->ch, pf_render_owner_letter(2));
        cr_assert_neq(pf_render_owner_letter(1), pf_render_owner_letter(2));
        cr_assert(pf_render_owner_letter(7) >= 'a' && pf_render_owner_letter(7) <= 'z');
        cr_assert(pf_cells_find(&b, "letter: owner", NULL, NULL));
        cr_assert_eq(gcell(&b, &gi, 45)->ch, g[4], "shared keeps its glyph");
        v.no_color = 0;
        pf_render_screen(&b, &v, &gi);
        cr_assert_eq(gcell(&b, &gi, 5)->ch, gcell(&b, &gi, 15)->ch, "with colour, colour tells owners apart");
        /* age: the bucket's digit; 0.1 s old is 0, 29 s old is 3 */
        v.coloring = PF_COLORING_AGE;
        v.no_color = 1;
        pf_render_screen(&b, &v, &gi);
        cr_assert_eq(gcell(&b, &gi, 5)->ch, (uint32_t)'0');
        cr_assert_eq(gcell(&b, &gi, 15)->ch, (uint32_t)'3');
        cr_assert(pf_cells_find(&b, "0 age<1s", NULL, NULL));
        cr_assert(pf_cells_find(&b, "4 older", NULL, NULL));
        /* the flashes are attributes, which survive NO_COLOR; the legend says so */
        cr_assert(pf_cells_find(&b, "reverse: preempted", NULL, NULL));
        if (ascii)
            for (int i = 0; i < b.w * b.h; i++)
                cr_assert_lt(b.cells[i].ch, 128u, "non-ASCII at %d in --ascii", i);
        pf_cells_free(&b);
    }
    snap_del2(s);
}

Test(grid, preemption_flashes_and_admission_marks_then_fade)
{
    pf_sim_snapshot *s = snap_new(256);
    own(s, 0, 10, 1, PF_FRAME_USED);
    own(s, 10, 20, 2, PF_FRAME_USED);
    s->stats.step = 100;
    pf_marks m;
    memset(&m, 0, sizeof m);
    cr_assert_eq(pf_marks_update(&m, s, 10.0), 0);
    cr_assert_eq(m.preempted + m.admitted, 0, "a first look flashes nothing");
    /* step 101: sequence 2 is preempted, frames 10..14 go free and 15..19
     * to sequence 3, which was admitted; sequence 4 takes 30..32 */
    s->stats.step = 101;
    own(s, 10, 15, -1, PF_FRAME_FREE);
    own(s, 15, 20, 3, PF_FRAME_USED);
    own(s, 30, 33, 4, PF_FRAME_USED);
    s->nevents = 3;
    s->events[0] = (pf_event){101, PF_EV_PREEMPT, 2, 10, 101 * 0.01};
    s->events[1] = (pf_event){101, PF_EV_ADMIT, 3, 5, 101 * 0.01};
    s->events[2] = (pf_event){101, PF_EV_ADMIT, 4, 3, 101 * 0.01};
    cr_assert_eq(pf_marks_update(&m, s, 10.1), 0);
    cr_assert_eq(m.preempted, 10, "every frame taken from the victim flashes");
    cr_assert_eq(m.admitted, 3);
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .marks = &m, .now = 10.2};
    pf_grid_info gi;
    for (int coloring = 0; coloring < PF_COLORING_COUNT; coloring++) {
        v.coloring = coloring;
        pf_render_screen(&b, &v, &gi);
        cr_assert_eq(gi.flashes, 10, "colouring %d", coloring);
        cr_assert_eq(gi.admits, 3);
        cr_assert_eq(gcell(&b, &gi, 12)->color, PF_COL_FLASH);
        cr_assert(gcell(&b, &gi, 12)->attr & PF_ATTR_REVERSE);
        cr_assert_eq(gcell(&b, &gi, 17)->color, PF_COL_FLASH, "reused victim frame still flashes");
        cr_assert_eq(gcell(&b, &gi, 31)->color, PF_COL_ADMIT);
        cr_assert_neq(gcell(&b, &gi, 5)->color, PF_COL_FLASH, "untouched frames do not flash");
    }
    /* about half a second later the flashes are gone */
    v.now = 10.1 + PF_MARK_SECONDS + 0.01;
    pf_render_screen(&b, &v, &gi);
    cr_assert_eq(gi.flashes, 0);
    cr_assert_eq(gi.admits, 0);
    /* a reset (step going back) clears everything */
    s->stats.step = 0;
    own(s, 0, 256, -1, PF_FRAME_FREE);
    cr_assert_eq(pf_marks_update(&m, s, 11.0), 0);
    v.now = 11.0;
    pf_render_screen(&b, &v, &gi);
    cr_assert_eq(gi.flashes, 0, "a reset is not a storm of preemptions");
    pf_marks_free(&m);
    pf_cells_free(&b);
    snap_del(s);
}

Test(panels, inspector_shows_sequence_and_page_table)
{
    pf_sim_snapshot *s = snap_new(256);
    s->stats.step = 500;
    s->stats.time_s = 5.0;
    seqs_add(s, 7, PF_SEQ_STALLED, 40, 100, 104);
    s->frames[101].state = PF_FRAME_SHARED;
    seqs_add(s, 8, PF_SEQ_DECODING, 45, 0, 3);
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .cursor = 101 + 1, .inspect = 7 + 1};
    pf_grid_info gi;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "Sequence 7", NULL, NULL));
    cr_assert(pf_cells_find(&b, "stalled  prompt 100  generated 7/50  frames 4 (0 shared)  preempted 2", NULL, NULL));
    cr_assert(pf_cells_find(&b, "arrived 0.030 s, scheduled 0.400 s: queue wait 0.370 s", NULL, NULL));
    cr_assert(pf_cells_find(&b, "no token yet: TTFT so far 4.970 s", NULL, NULL), "5 s now, arrived at 0.03");
    cr_assert(pf_cells_find(&b, "prefill 100/100 tokens (done)", NULL, NULL));
    /* logical block k -> frame 103 - k (reversed above); frame 101 shared */
    cr_assert(pf_cells_find(&b, "0->103", NULL, NULL));
    cr_assert(pf_cells_find(&b, "2->101*", NULL, NULL), "shared frames are marked");
    cr_assert(pf_cells_find(&b, "3->100", NULL, NULL));
    cr_assert_not(pf_cells_find(&b, "Events", NULL, NULL), "the inspector takes the log's place");
    /* its frames are highlighted, the others not; the cursor is drawn */
    cr_assert(gcell(&b, &gi, 100)->attr & PF_ATTR_REVERSE);
    cr_assert(gcell(&b, &gi, 103)->attr & PF_ATTR_REVERSE);
    cr_assert_not(gcell(&b, &gi, 1)->attr & PF_ATTR_REVERSE);
    cr_assert_eq(gcell(&b, &gi, 101)->color, PF_COL_KEY, "cursor cell");
    /* hit-testing a click and the cell's owner */
    int c = pf_render_grid_hit(&gi, gi.x + 100 % gi.w, gi.y + 100 / gi.w);
    cr_assert_eq(c, 100);
    cr_assert_eq(pf_render_cell_owner(s, &gi, c), 7);
    cr_assert_eq(pf_render_grid_hit(&gi, gi.x + gi.w, gi.y), -1);
    cr_assert_eq(pf_render_cell_owner(s, &gi, 200), -1, "a free cell has no owner");
    /* a prefilling sequence: its progress; two of its blocks are shared
     * with sequence 7, which holds them in the snapshot (the first holder):
     * they show as shared without a frame number */
    seqs_add(s, 9, PF_SEQ_PREFILLING, 490, 150, 152);
    s->seqs[s->nseqs - 1].computed = 40;
    s->seqs[s->nseqs - 1].frames = 4;
    s->seqs[s->nseqs - 1].shared_frames = 2;
    for (int f = 150; f < 152; f++)
        s->frame_block[f] += 2; /* its own frames are blocks 2 and 3 */
    v.inspect = 9 + 1;
    v.cursor = 0;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "prefilling  prompt 100  generated 7/50  frames 4 (2 shared)", NULL, NULL));
    cr_assert(pf_cells_find(&b, "prefill 40/100 tokens (40%)", NULL, NULL), "prefill progress");
    cr_assert(pf_cells_find(&b, "0->sh*", NULL, NULL) && pf_cells_find(&b, "1->sh*", NULL, NULL),
              "shared blocks held under another sequence are marked shared");
    cr_assert(pf_cells_find(&b, "2->151", NULL, NULL) || pf_cells_find(&b, "2->150", NULL, NULL));
    /* a live snapshot carries the table itself (tab_buf): the shared
     * blocks get their frame numbers */
    int32_t tab[4] = {101, 102, 150, 151};
    s->frames[102].state = PF_FRAME_SHARED;
    s->tab_buf = tab;
    s->tab_cap = 4;
    s->seqs[s->nseqs - 1].table_at = 0;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "0->101*", NULL, NULL) && pf_cells_find(&b, "1->102*", NULL, NULL),
              "shared blocks numbered from the sequence's own table");
    cr_assert_not(pf_cells_find(&b, "->sh*", NULL, NULL));
    s->tab_buf = NULL; /* the stack's, not the snapshot's to free */
    s->tab_cap = 0;
    s->seqs[s->nseqs - 1].table_at = -1;
    /* once it has its first token, the TTFT itself */
    s->seqs[s->nseqs - 1].state = PF_SEQ_DECODING;
    s->seqs[s->nseqs - 1].ttft = 0.125;
    s->seqs[s->nseqs - 1].computed = 107;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "TTFT 0.125 s; prefill 100/100 tokens (done)", NULL, NULL));
    /* a sequence gone from the pool says so */
    v.inspect = 99 + 1;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "no longer in the pool", NULL, NULL));
    pf_cells_free(&b);
    snap_del2(s);
}

/* The page table's two edges: a swapped-out sequence's blocks missing
 * from the pool are on the host, and a table longer than the panel ends
 * in "+N more", N the blocks not shown. */
Test(panels, inspector_page_table_host_blocks_and_overflow)
{
    pf_sim_snapshot *s = snap_new(512);
    s->stats.time_s = 1.0;
    seqs_add(s, 11, PF_SEQ_SWAPPED, 10, 20, 22); /* blocks 1, 0 in frames 20, 21 */
    s->seqs[0].frames = 5;                       /* blocks 2-4 went to the host */
    pf_cells b = buf_new(120, 30);
    pf_dash_view v = {.snap = s, .inspect = 11 + 1};
    pf_grid_info gi;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "swapped out", NULL, NULL));
    cr_assert(pf_cells_find(&b, "0->21", NULL, NULL) && pf_cells_find(&b, "1->20", NULL, NULL));
    for (int k = 2; k < 5; k++) {
        char want[16];
        snprintf(want, sizeof want, "%d->host", k);
        cr_assert(pf_cells_find(&b, want, NULL, NULL), "block %d on the host", k);
    }
    cr_assert_not(pf_cells_find(&b, "5->", NULL, NULL), "5 blocks, no sixth");
    cr_assert_not(pf_cells_find(&b, "more", NULL, NULL));

    /* 400 blocks: far more than the panel's cells */
    seqs_add(s, 12, PF_SEQ_DECODING, 10, 100, 500);
    v.inspect = 12 + 1;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "0->499", NULL, NULL), "block 0 is frame 499 (reversed)");
    cr_assert_not(pf_cells_find(&b, "399->100", NULL, NULL), "the last block does not fit");
    int shown = 0;
    for (int k = 0; k < 400; k++) {
        char want[16];
        snprintf(want, sizeof want, "%d->%d", k, 499 - k);
        if (pf_cells_find(&b, want, NULL, NULL))
            shown++;
        else
            break;
    }
    char more[24];
    snprintf(more, sizeof more, "+%d more", 400 - shown);
    cr_assert(shown > 0 && shown < 400);
    cr_assert(pf_cells_find(&b, more, NULL, NULL), "the rest counted: '%s' after %d shown", more,
              shown);
    pf_cells_free(&b);
    snap_del2(s);
}

Test(panels, help_pages_explain_glyphs_and_counters)
{
    pf_cells b = buf_new(80, 24);
    pf_dash_view v = {.snap = NULL, .help = 1};
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "F10 q", NULL, NULL));
    cr_assert(pf_cells_find(&b, "Esc", NULL, NULL));
    cr_assert(pf_cells_find(&b, "load controller on / off", NULL, NULL), "the a key");
    v.help = 2;
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "reserved: naive's reservation", NULL, NULL));
    cr_assert(pf_cells_find(&b, "stalled orange", NULL, NULL));
    cr_assert(pf_cells_find(&b, "prefilling", NULL, NULL) && pf_cells_find(&b, "cached:", NULL, NULL),
              "the new states");
    cr_assert(pf_cells_find(&b, "No colour (NO_COLOR", NULL, NULL), "what tells classes apart without colour");
    cr_assert(pf_cells_find(&b, "flash", NULL, NULL));
    v.help = 3;
    pf_render_screen(&b, &v, NULL);
    static const char *const counters[] = {"waiting", "decoding", "preempts", "util", "goodput",
                                           "vs naive", "tok/s", "ping-pong", "KV[", "TTFT p99",
                                           "simulated seconds"};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        cr_assert(pf_cells_find(&b, counters[i], NULL, NULL), "help lacks %s", counters[i]);
    /* each page fits the smallest screen: its first and last lines show */
    static const char *const first[PF_HELP_PAGES] = {"Keys (1/3", "The grid (2/3", "Counters (3/3"};
    static const char *const last[PF_HELP_PAGES] = {"click a key on the bottom line",
                                                    "bold: frames a newly admitted", "frame rate and render time"};
    for (int page = 1; page <= PF_HELP_PAGES; page++) {
        v.help = page;
        pf_render_screen(&b, &v, NULL);
        cr_assert(pf_cells_find(&b, first[page - 1], NULL, NULL), "page %d: no title", page);
        cr_assert(pf_cells_find(&b, last[page - 1], NULL, NULL), "page %d: cut at 80x24", page);
    }
    pf_cells_free(&b);
}

/* ---- charts ------------------------------------------------------------------- */

/* n steps of 10 ms: tokens i % 100, one preemption in the last step */
static pf_hist hist_ramp(int n)
{
    pf_hist h;
    memset(&h, 0, sizeof h);
    for (int i = 0; i < n; i++) {
        float smp[PF_HIST_SERIES] = {(float)(i % 100), 0, i == n - 1 ? 1.0f : 0.0f, 0.5f, 7, 0.25f};
        cr_assert_eq(pf_hist_push(&h, smp, (i + 1) * 0.01), 0);
    }
    return h;
}

Test(charts, history_folds_in_snapshots_and_resets)
{
    pf_sim_snapshot *s = snap_new(64);
    pf_hist h;
    memset(&h, 0, sizeof h);
    s->nhistory = 200;
    s->hist_step0 = 0;
    s->stats.lat[PF_MET_TTFT].p99 = 0.75;
    for (int i = 0; i < 200; i++) {
        s->hist_tokens[i] = (float)i;
        s->hist_time[i] = (i + 1) * 0.01;
        s->hist_waiting[i] = 3;
    }
    cr_assert_eq(pf_hist_update(&h, s), 0);
    cr_assert_eq(h.n, 200);
    /* the next snapshot overlaps the last one: only the new steps count */
    s->hist_step0 = 100;
    s->stats.lat[PF_MET_TTFT].p99 = 1.5;
    for (int i = 0; i < 200; i++) {
        s->hist_tokens[i] = (float)(100 + i);
        s->hist_time[i] = (100 + i + 1) * 0.01;
    }
    pf_hist_update(&h, s);
    cr_assert_eq(h.n, 300);
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(pf_hist_at(&h, PF_HIST_TOKENS, i), (float)i, "sample %d", i);
        cr_assert_float_eq(pf_hist_time(&h, i), (i + 1) * 0.01, 1e-12);
        /* TTFT p99 is the value of the snapshot that brought the step in */
        cr_assert_float_eq(pf_hist_at(&h, PF_HIST_TTFT_P99, i), i < 200 ? 0.75f : 1.5f, 1e-6);
    }
    /* the last 0.1 s: steps 290..299, 2945 tokens -> 29450 tokens/s */
    cr_assert_float_eq(pf_hist_window(&h, PF_HIST_TOKENS, 0.1), 29450.0, 1e-3);
    cr_assert_float_eq(pf_hist_window(&h, PF_HIST_WAITING, 0.5), 3.0, 1e-9, "a level is its mean");
    /* a reset: the history starts again */
    s->hist_step0 = 0;
    s->nhistory = 5;
    pf_hist_update(&h, s);
    cr_assert_eq(h.n, 5);
    pf_hist_free(&h);
    snap_del(s);
}

/* Steps of different lengths: a chart's columns are slices of time, not
 * samples, and a window's rate divides by the time steps cover. */
Test(charts, resampling_is_in_time_not_in_steps)
{
    pf_hist h;
    memset(&h, 0, sizeof h);
    /* steps end at 1, 2 and 4 s (the first one taken as long as the next):
     * 10, 10 and 40 tokens = 10, 10 and 20 tokens/s; waiting 1, 2, 3 */
    const double t[3] = {1, 2, 4};
    const float tok[3] = {10, 10, 40}, wait[3] = {1, 2, 3};
    for (int i = 0; i < 3; i++) {
        float smp[PF_HIST_SERIES] = {tok[i], 0, 0, 0, wait[i], 0};
        cr_assert_eq(pf_hist_push(&h, smp, t[i]), 0);
    }
    double out[6], m = -1;
    cr_assert_float_eq(pf_hist_resample(&h, PF_HIST_TOKENS, 4, 4, 4, out, NULL), 4.0, 1e-9);
    const double want_tok[4] = {10, 10, 20, 20}, want_wait[4] = {1, 2, 3, 3};
    for (int c = 0; c < 4; c++)
        cr_assert_float_eq(out[c], want_tok[c], 1e-9, "tokens/s, column %d", c);
    pf_hist_resample(&h, PF_HIST_WAITING, 4, 4, 4, out, &m);
    for (int c = 0; c < 4; c++)
        cr_assert_float_eq(out[c], want_wait[c], 1e-9, "waiting, column %d", c);
    cr_assert_float_eq(m, 9.0 / 4, 1e-9, "the span's time-weighted mean: (1 + 2 + 3 x 2) / 4");
    /* columns before the history have no value (-1), not a zero */
    cr_assert_float_eq(pf_hist_resample(&h, PF_HIST_TOKENS, 4, 6, 6, out, &m), 4.0, 1e-9);
    cr_assert_float_eq(out[0], -1.0, 1e-12);
    cr_assert_float_eq(out[1], -1.0, 1e-12);
    cr_assert_float_eq(out[2], 10.0, 1e-9);
    cr_assert_float_eq(m, 15.0, 1e-9, "60 tokens over the 4 s covered, not the 6 s asked");
    /* half a step in a column: its rate, not half its tokens */
    pf_hist_resample(&h, PF_HIST_TOKENS, 4, 1, 1, out, NULL);
    cr_assert_float_eq(out[0], 20.0, 1e-9);
    cr_assert_float_eq(pf_hist_window(&h, PF_HIST_TOKENS, 2.0), 20.0, 1e-9);
    cr_assert_float_eq(pf_hist_window(&h, PF_HIST_TOKENS, 100.0), 15.0, 1e-9,
                       "a window longer than the history: over the time covered");
    /* time going back is a new run */
    float smp[PF_HIST_SERIES] = {5, 0, 0, 0, 0, 0};
    pf_hist_push(&h, smp, 0.5);
    cr_assert_eq(h.n, 1);
    pf_hist_free(&h);
}

Test(charts, scale_axis_and_zoom)
{
    pf_hist h = hist_ramp(1000); /* 10 s */
    pf_cells b = buf_new(80, 10);
    pf_dash_view v = {.snap = NULL};
    double top = pf_render_chart(&b, 0, 0, 80, 6, &h, PF_HIST_TOKENS, 8.0, &v, "tokens/s", PF_COL_GOOD, 1);
    /* columns of 8 s / 73 (about 11 steps) of a 0..99 ramp at 100 steps a
     * second: the largest column is below 9900 tokens/s -> scale 10000 */
    cr_assert_float_eq(top, 10000.0, 1e-9);
    cr_assert(pf_cells_find(&b, "tokens/s", NULL, NULL));
    cr_assert(pf_cells_find(&b, "-8 s", NULL, NULL), "time axis in seconds");
    cr_assert(pf_cells_find(&b, "-4", NULL, NULL), "half-way mark");
    cr_assert(pf_cells_find(&b, "now", NULL, NULL));
    cr_assert(pf_cells_find(&b, "10000", NULL, NULL), "scale label");
    /* the plot is as wide as the panel: bars reach the last column */
    cr_assert_neq(pf_cells_at(&b, 79, 4)->ch, (uint32_t)' ', "last column empty");
    /* one preemption among zeros: per second over its column (8 s / 73),
     * about 9.1/s, on a scale of 10, not a tall unlabeled bar */
    pf_cells_clear(&b);
    top = pf_render_chart(&b, 0, 0, 80, 6, &h, PF_HIST_PREEMPT, 8.0, &v, "preemptions/s", PF_COL_BAD, 1);
    cr_assert_float_eq(top, 10.0, 1e-9);
    /* a level is drawn as itself: TTFT p99 0.25 s on a scale of 0.5 */
    pf_cells_clear(&b);
    top = pf_render_chart(&b, 0, 0, 80, 6, &h, PF_HIST_TTFT_P99, 0.25, &v, "TTFT p99", PF_COL_BAD, 1);
    cr_assert_float_eq(top, 0.5, 1e-9);
    cr_assert(pf_cells_find(&b, "-0.25 s", NULL, NULL));
    cr_assert(pf_cells_find(&b, "0.5", NULL, NULL), "a fractional scale is written as one");
    /* a window longer than the history leaves its left part empty */
    pf_cells_clear(&b);
    pf_render_chart(&b, 0, 0, 80, 6, &h, PF_HIST_USAGE, 20.0, &v, "KV", PF_COL_GOOD, 100);
    cr_assert_eq(pf_cells_at(&b, 8, 4)->ch, (uint32_t)' ', "before the history: no bar");
    cr_assert_neq(pf_cells_at(&b, 79, 4)->ch, (uint32_t)' ');
    /* zoom: 2x, clamped */
    cr_assert_float_eq(pf_render_window_zoom(8, 1), 16, 1e-12);
    cr_assert_float_eq(pf_render_window_zoom(8, 0), 4, 1e-12);
    cr_assert_float_eq(pf_render_window_zoom(0, 1), 2 * PF_CHART_DEFAULT_WINDOW_S, 1e-12);
    cr_assert_float_eq(pf_render_window_zoom(PF_CHART_MIN_WINDOW_S, 0), PF_CHART_MIN_WINDOW_S, 1e-12);
    cr_assert_float_eq(pf_render_window_zoom(PF_CHART_MAX_WINDOW_S, 1), PF_CHART_MAX_WINDOW_S, 1e-12);
    cr_assert_eq(pf_dash_key('<'), PF_DASH_CMD_ZOOM_IN);
    cr_assert_eq(pf_dash_key('>'), PF_DASH_CMD_ZOOM_OUT);
    cr_assert_eq(pf_dash_key('t'), PF_DASH_CMD_CHARTS);
    pf_cells_free(&b);
    pf_hist_free(&h);
}

Test(charts, view_shows_window_rates_beside_run_totals)
{
    pf_sim_snapshot *s = snap_new(4096);
    s->stats.throughput = 10000;
    s->stats.throughput_vs_naive = 2.0; /* naive: 5000 tok/s */
    pf_hist h;
    memset(&h, 0, sizeof h);
    for (int i = 0; i < 600; i++) { /* 10 ms steps: 12000 tok/s, then 2500 in the last 2.56 s */
        float smp[PF_HIST_SERIES] = {i < 344 ? 120.0f : 25.0f, 0, i < 344 ? 1.0f : 0.0f, 0.9f, 3, 0.5f};
        pf_hist_push(&h, smp, (i + 1) * 0.01);
    }
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .hist = &h, .window_s = 2, .charts = 1};
    pf_grid_info gi;
    pf_render_screen(&b, &v, &gi);
    cr_assert_eq(gi.frames_per_cell, 0, "no grid under the charts");
    cr_assert(pf_cells_find(&b, "last 2 s: 2500 tok/s 0.50x naive, 0.00 preempt/s", NULL, NULL),
              "the recent window shows the recovery from the fall");
    cr_assert(pf_cells_find(&b, "run: 10000 tok/s 2.00x", NULL, NULL), "beside the run totals");
    cr_assert(pf_cells_find(&b, "preemptions/s", NULL, NULL));
    cr_assert(pf_cells_find(&b, "KV use %", NULL, NULL));
    cr_assert(pf_cells_find(&b, "waiting requests", NULL, NULL));
    cr_assert(pf_cells_find(&b, "History, last 2 s", NULL, NULL));
    cr_assert(pf_cells_find(&b, "of simulated time", NULL, NULL));
    v.window_s = 4;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "-4 s", NULL, NULL));
    cr_assert(pf_cells_find(&b, "last 4 s: 5920 tok/s 1.18x naive", NULL, NULL));
    /* the main screen too (tall enough): the window beside the run */
    v.charts = 0;
    v.window_s = 2;
    s->stats.time_s = 6.0;
    s->stats.preemptions = 344;
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "Last 2 s vs the run", NULL, NULL));
    cr_assert(row_has_both(&b, "vs naive", "0.50x") && row_has_both(&b, "0.50x", "2.00x"),
              "the window's ratio beside the run's");
    cr_assert(row_has_both(&b, "preempt/s", "57.33"), "the run's: 344 preemptions in 6 s");
    pf_cells_free(&b);
    b = buf_new(80, 24);
    pf_render_screen(&b, &v, &gi);
    cr_assert_not(pf_cells_find(&b, "vs the run", NULL, NULL), "no room at 80x24: left out, not cut");
    v.charts = 1;
    v.window_s = 4;
    /* a taller screen has room for the fifth chart, TTFT p99 */
    pf_cells_free(&b);
    b = buf_new(120, 60);
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "TTFT p99", NULL, NULL));
    pf_cells_free(&b);
    pf_hist_free(&h);
    snap_del(s);
}

/* ---- the split view ----------------------------------------------------------- */

Test(split, naive_beside_paged_with_honest_util_and_ratio)
{
    pf_sim_snapshot *nv = snap_new(4096), *pg = snap_new(4096);
    nv->params.mode = PF_SIM_NAIVE;
    own(nv, 0, 300, 1, PF_FRAME_USED);
    own(nv, 300, 4096, 1, PF_FRAME_RESERVED);
    nv->stats.kv_util = 0.175;
    nv->stats.kv_usage = 1.0;
    nv->stats.throughput = 32;
    nv->stats.step = 298;
    nv->stats.njobs = 512;
    own(pg, 0, 2900, 2, PF_FRAME_USED);
    pg->stats.kv_util = 0.981;
    pg->stats.kv_usage = 0.705;
    pg->stats.throughput = 128;
    pg->stats.step = 298;
    pg->stats.njobs = 512;
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = pg, .split_naive = nv};
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "paged / naive: 4.00x tokens per second", NULL, NULL));
    cr_assert(pf_cells_find(&b, "utilisation 98.1% vs 17.5%", NULL, NULL));
    int xn, yn, xp, yp;
    cr_assert(pf_cells_find(&b, "NAIVE (reserve max-len)", &xn, &yn));
    nv->params.naive_reserve = PF_RESERVE_ORACLE;
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "NAIVE (reserve oracle)", NULL, NULL), "the naive side names its policy");
    nv->params.naive_reserve = PF_RESERVE_MAX;
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "PAGED (on demand)", &xp, &yp));
    cr_assert_eq(yn, yp, "side by side");
    cr_assert_lt(xn, xp);
    cr_assert(pf_cells_find(&b, "util 17.5%  pool 100.0%", NULL, NULL), "naive: its own honest counters");
    cr_assert(pf_cells_find(&b, "util 98.1%  pool 70.5%", NULL, NULL));
    cr_assert(pf_cells_find(&b, "NAIVE + PAGED", NULL, NULL));
    /* the naive grid shows its waste, the paged one its tokens */
    cr_assert_eq(pf_cells_at(&b, xn + 2, yn + 5)->ch, pf_render_glyph(PF_GLYPH_RESERVED, 0));
    cr_assert_eq(pf_cells_at(&b, xp + 2, yp + 1)->ch, pf_render_glyph(PF_GLYPH_USED, 0));
    cr_assert_eq(pf_dash_key('2'), PF_DASH_CMD_SPLIT);
    pf_cells_free(&b);
    snap_del(nv);
    snap_del(pg);
}

/* ---- the watermark curve -------------------------------------------------------- */

Test(sweep, curve_rows_bars_and_the_current_setting)
{
    pf_sweep_view sv;
    memset(&sv, 0, sizeof sv);
    sv.n = 4;
    double wm[4] = {0, 0.02, 0.05, 0.5}, tp[4] = {19, 63.7, 64.6, 43.5};
    long long pre[4] = {1189, 46, 30, 0};
    for (int i = 0; i < 4; i++) {
        sv.wm[i] = wm[i];
        sv.tput[i] = tp[i];
        sv.preempt[i] = pre[i];
        sv.state[i] = PF_SWEEP_DONE;
    }
    sv.state[3] = PF_SWEEP_RUNNING;
    sv.naive_tput = 27.2;
    sv.current = 0.04; /* nearest swept point: 5% */
    pf_sim_snapshot *s = snap_new(4096);
    s->params.watermark = 0.04; /* the live setting, which the row follows */
    for (int W = 80; W <= 200; W += 120) {
        pf_cells b = buf_new(W, 40);
        pf_dash_view v = {.snap = s, .sweep = &sv};
        pf_render_screen(&b, &v, NULL);
        cr_assert(pf_cells_find(&b, "3 of 4 points", NULL, NULL));
        cr_assert(row_has_both(&b, "0.0%", "0.70x"), "no watermark: below naive");
        cr_assert(row_has_both(&b, "5.0%", "2.38x"));
        cr_assert(row_has_both(&b, "5.0%", "<-"), "the live setting is marked");
        cr_assert_not(row_has_both(&b, "2.0%", "<-"));
        cr_assert(row_has_both(&b, "0.0%", "1189 pre"));
        cr_assert(row_has_both(&b, "50.0%", "running..."));
        /* the bars: the largest throughput the longest */
        int x0, y0, x5, y5;
        cr_assert(pf_cells_find(&b, " 0.0%", &x0, &y0));
        cr_assert(pf_cells_find(&b, " 5.0%", &x5, &y5));
        int len0 = 0, len5 = 0;
        for (int x = 8; x < W - 41; x++) {
            len0 += pf_cells_at(&b, x, y0)->ch == 0x2588u && pf_cells_at(&b, x, y0)->color == PF_COL_GOOD;
            len5 += pf_cells_at(&b, x, y5)->ch == 0x2588u && pf_cells_at(&b, x, y5)->color == PF_COL_GOOD;
        }
        cr_assert_gt(len5, len0, "throughput bars: %d at 5%%, %d at 0%%", len5, len0);
        pf_cells_free(&b);
    }
    /* the load controller: the row follows the watermark in force, and
     * its recent decisions are marked '*' on the rows nearest them */
    s->params.watermark_auto = 1;
    s->stats.watermark = 0.021;
    s->nevents = 2;
    s->events[0] = (pf_event){10, PF_EV_WATERMARK, -1, 48, 0.1};
    s->events[1] = (pf_event){20, PF_EV_WATERMARK, -1, 21, 0.2};
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s, .sweep = &sv};
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "load controller on, * = its last 2 moves", NULL, NULL));
    cr_assert(row_has_both(&b, "2.0%", "<-"), "the row of the watermark in force");
    cr_assert_not(row_has_both(&b, "5.0%", "<-"));
    cr_assert(pf_cells_find(&b, "2.0%*", NULL, NULL), "a decision near 2%");
    cr_assert(pf_cells_find(&b, "5.0%*", NULL, NULL), "a decision near 5%");
    cr_assert_not(pf_cells_find(&b, "0.0%*", NULL, NULL));
    pf_cells_free(&b);
    cr_assert_eq(pf_dash_key('x'), PF_DASH_CMD_SWEEP);
    cr_assert_eq(pf_dash_key('a'), PF_DASH_CMD_WATERMARK_AUTO);
    snap_del(s);
}

/* An 80-column split view: short labels, and no number cut mid-digit */
Test(split, narrow_screen_keeps_numbers_whole)
{
    pf_sim_snapshot *nv = snap_new(4096), *pg = snap_new(4096);
    nv->params.mode = PF_SIM_NAIVE;
    nv->stats.running = 32;
    nv->stats.waiting = 444;
    nv->stats.throughput = 31.9;
    nv->stats.njobs = pg->stats.njobs = 512;
    pg->stats.running = 128;
    pg->stats.waiting = 270;
    pg->stats.throughput = 126.8;
    pf_cells b = buf_new(80, 24);
    pf_dash_view v = {.snap = pg, .split_naive = nv};
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "wait 444 run 32 pre 0", NULL, NULL), "naive side's counters whole");
    cr_assert(pf_cells_find(&b, "wait 270 run 128 pre 0", NULL, NULL));
    cr_assert(pf_cells_find(&b, "paged/naive 3.97x", NULL, NULL));
    pf_cells_free(&b);
    snap_del(nv);
    snap_del(pg);
}

/* The mean TTFT over a chart's slices is the TTFTs summed in each slice over
 * the first tokens in it (a ratio of two counts, not a mean of per-step
 * means); a slice with no first token has no value. 100 steps of 0.1 s:
 * steps 0-39 bring 2 first tokens of 0.5 s each, steps 40-49 none, steps
 * 50-99 one of 2 s each. */
Test(charts, ttft_mean_is_a_ratio_per_slice)
{
    pf_hist h;
    memset(&h, 0, sizeof h);
    for (int i = 0; i < 100; i++) {
        float smp[PF_HIST_SERIES] = {0};
        if (i < 40) {
            smp[PF_HIST_FIRSTS] = 2;
            smp[PF_HIST_TTFT_SUM] = 1.0f;
        } else if (i >= 50) {
            smp[PF_HIST_FIRSTS] = 1;
            smp[PF_HIST_TTFT_SUM] = 2.0f;
        }
        cr_assert_eq(pf_hist_push(&h, smp, 0.1 * (i + 1)), 0);
    }
    double out[10], mean = 0;
    pf_hist_resample(&h, PF_HIST_TTFT_MEAN, 10.0, 10.0, 10, out, &mean);
    for (int c = 0; c < 4; c++)
        cr_assert_float_eq(out[c], 0.5, 1e-6, "slice %d: %g", c, out[c]);
    cr_assert_float_eq(out[4], -1.0, 1e-12, "no first token in 4-5 s: no value");
    for (int c = 5; c < 10; c++)
        cr_assert_float_eq(out[c], 2.0, 1e-6, "slice %d: %g", c, out[c]);
    /* 80 tokens of 0.5 s and 50 of 2 s */
    cr_assert_float_eq(mean, (80 * 0.5 + 50 * 2.0) / 130.0, 1e-6);
    pf_hist_free(&h);
}

/* The windowed TTFT p99: per slice, the nearest-rank p99 of the TTFTs of
 * the first tokens that came in it, from the first tokens themselves. In
 * 0-5 s, 100 first tokens with TTFTs 1..100 ms (p99: the 99th, 99 ms);
 * none in 5-6 s; in 6-10 s, 50 of 2 s and one of 7 s (p99: the 51st
 * smallest of 51, 7 s). Snapshots bring first tokens by index: one seen
 * already is not added twice. */
Test(charts, ttft_p99_per_slice_from_the_first_tokens)
{
    pf_hist h;
    memset(&h, 0, sizeof h);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(pf_hist_push_first(&h, 0.05 * i, 0.001f * (float)(100 - i)), 0);
    for (int i = 0; i < 50; i++)
        cr_assert_eq(pf_hist_push_first(&h, 6.0 + 0.07 * i, 2.0f), 0);
    cr_assert_eq(pf_hist_push_first(&h, 9.9, 7.0f), 0);
    cr_assert_eq(pf_hist_push_first(&h, 3.0, 9.0f), 0, "an older one is ignored");
    double out[2], whole = 0;
    pf_hist_resample(&h, PF_HIST_TTFT_P99W, 10.0, 10.0, 2, out, &whole);
    cr_assert_float_eq(out[0], 0.099, 1e-6, "0-5 s: %g", out[0]);
    cr_assert_float_eq(out[1], 7.0, 1e-6, "5-10 s: %g", out[1]);
    /* 151 in the window: the ceil(0.99 x 151) = 150th smallest is a 2 s one */
    cr_assert_float_eq(whole, 2.0, 1e-6, "the whole window: %g", whole);
    double ten[10];
    pf_hist_resample(&h, PF_HIST_TTFT_P99W, 10.0, 10.0, 10, ten, NULL);
    cr_assert_float_eq(ten[5], -1.0, 1e-12, "5-6 s: no first token, no value");
    /* from snapshots: indices decide, a second delivery adds nothing */
    pf_hist g;
    memset(&g, 0, sizeof g);
    pf_sim_snapshot *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    s->nft = 3;
    s->ft_first = 0;
    for (int i = 0; i < 3; i++)
        s->ft[i] = (pf_first_token){0.5 * (i + 1), 0.25f * (float)(i + 1)};
    cr_assert_eq(pf_hist_update(&g, s), 0);
    cr_assert_eq(pf_hist_update(&g, s), 0);
    cr_assert_eq(g.ft_n, 3, "each first token once: %d", g.ft_n);
    free(s);
    pf_hist_free(&g);
    pf_hist_free(&h);
}

/* A pool of millions on an 80-column screen: the title's counts are
 * rounded, never cut mid-digit, and "free" survives (it read "| 9852 used
 * 41844" for 4184452 free). */
Test(render, pool_title_keeps_its_counts_whole_at_80_columns)
{
    const int n = 4194304;
    pf_sim_snapshot *s = snap_new(n);
    s->stats.pool_used = 9852;
    s->stats.pool_free = n - 9852;
    pf_cells b = buf_new(80, 24);
    pf_dash_view v = {.snap = s};
    pf_grid_info gi;
    cr_assert_eq(pf_render_screen(&b, &v, &gi), 0);
    int x, y;
    cr_assert(pf_cells_find(&b, "Pool", &x, &y), "no pool title");
    char row[96] = "";
    for (int i = 0; i < 79 && i < b.w; i++)
        row[i] = (char)pf_cells_at(&b, i, y)->ch;
    cr_assert(strstr(row, "9852 used 4.18M free") != NULL, "the title reads: %s", row);
    pf_cells_free(&b);
    snap_del(s);
}

/* The cursor past the grid (a resize left fewer cells than its index):
 * no inspector line for frames past the pool ("frames 22528-4095"). */
Test(render, cursor_past_the_grid_names_no_frames)
{
    pf_sim_snapshot *s = snap_new(4096);
    pf_cells b = buf_new(120, 40);
    pf_dash_view v = {.snap = s};
    pf_grid_info gi;
    pf_render_screen(&b, &v, &gi);
    cr_assert_gt(gi.cells, 0);
    v.cursor = gi.cells; /* the last cell (the view counts from 1) */
    pf_render_screen(&b, &v, &gi);
    cr_assert(pf_cells_find(&b, "no sequence holds them", NULL, NULL));
    v.cursor = gi.cells + 1; /* one past it */
    pf_render_screen(&b, &v, &gi);
    cr_assert(!pf_cells_find(&b, "no sequence holds them", NULL, NULL),
              "a cursor past the grid named frames");
    pf_cells_free(&b);
    snap_del(s);
}

/* A finished run reads DONE in the header whether or not a bridge saw its
 * end (headless said "RUNNING (all done)"). */
Test(render, a_finished_run_reads_done)
{
    pf_sim_snapshot *s = snap_new(256);
    pf_cells b = buf_new(100, 30);
    pf_dash_view v = {.snap = s};
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "RUNNING", NULL, NULL));
    s->stats.done = 1;
    pf_render_screen(&b, &v, NULL);
    cr_assert(pf_cells_find(&b, "DONE", NULL, NULL) && !pf_cells_find(&b, "RUNNING", NULL, NULL),
              "a finished run must read DONE");
    pf_cells_free(&b);
    snap_del(s);
}
