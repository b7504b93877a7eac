/* tui/render.c - one dashboard screen into a cell buffer (see render.h).
 *
 * Everything here is a pure function of its inputs. Names shown on screen
 * (events, policies) come from sim/'s one name table (sim/names.c, a
 * library of its own), so the renderer still needs none of the engines: it
 * is tested and benchmarked on hand-built snapshots.
 */
#include "tui/render.h"

#include "core/pool.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const pf_gpu_panel_shape pf_gpu_panel_shapes[PF_GPU_PANEL_SHAPES] = {
    {"seed: 1 head, D=64, fp32", {1, 1, 64, PF_GPU_F32}},
    {"llama3-8b: GQA 32/8, D=128, bf16", {32, 8, 128, PF_GPU_BF16}},
};

/* UTF-8 glyphs and their ASCII fallbacks; they differ in shape, not only in
 * colour, so a no-colour terminal (NO_COLOR, --no-color, a monochrome
 * screen, the headless text) still tells the states apart. */
static const uint32_t glyph_utf8[PF_GLYPH_COUNT] = {
    0x2588, /* █ used (running)  */
    0x2591, /* ░ reserved        */
    0x2593, /* ▓ shared          */
    0x259A, /* ▚ swapped         */
    0x00B7, /* · free            */
    0x250A, /* ┊ reserve         */
    0x2218, /* ∘ cached          */
    0x2592, /* ▒ stalled         */
    0x258C, /* ▌ prefilling      */
    0x2599, /* ▙ recomputing     */
};
static const char glyph_ascii[PF_GLYPH_COUNT] = {'#', '+', '=', 'S', '.', ':', '~', '!', '>', '%'};

uint32_t pf_render_glyph(pf_glyph_kind k, int ascii)
{
    if ((int)k < 0 || k >= PF_GLYPH_COUNT)
        return '?';
    return ascii ? (uint32_t)glyph_ascii[k] : glyph_utf8[k];
}

uint32_t pf_render_owner_letter(int32_t owner)
{
    if (owner < 0)
        return '?';
    return (uint32_t)('a' + ((uint32_t)owner % 26u) * 7u % 26u);
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
    return pf_event_name((pf_event_kind)kind);
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
    case PF_EV_ABORT:
        return PF_COL_BAD;
    case PF_EV_WATERMARK:
        return PF_COL_RESERVE;
    default:
        return PF_COL_DEFAULT;
    }
}

static const char *victim_label(int p)
{
    return pf_victim_name((pf_victim_policy)p);
}

static const char *preempt_label(int m)
{
    return pf_preempt_name((pf_preempt_mode)m);
}

/* ---- the grid ---------------------------------------------------------------
 *
 * Scaling: with C = w*h cells and F frames, N = ceil(F / C) frames per cell
 * and the grid uses ceil(F / N) cells, row-major from the top left, so frame
 * f sits in cell f / N. Per cell we count the frames in each state and show
 * the dominant one (ties go to the rarer, more telling states: swapped,
 * shared, used, reserved, then free); among the frames in that state the
 * owner is found by a Boyer-Moore majority vote (the true majority whenever
 * one exists, with no memory). One pass over the frames in total: O(F), or
 * a fixed sample per cell when cells are large (see below).
 *
 * The watermark's reserve is a count of frames admission keeps free, not a
 * particular set of frames. The grid pictures that count: the last
 * ceil(reserve / N) cells are underlined in the reserve colour and their
 * free frames drawn with the reserve glyph. A used frame showing there is
 * simply a frame that happens to sit at the end of the pool; it does not
 * mean that a sequence dipped into the reserve.
 *
 * Colourings (pf_coloring): by owner, each sequence its stable colour; by
 * state, the owner's state (running, stalled, prefilling, recomputing,
 * swapped) or the frame's own (shared, cached, reserved, free, reserve),
 * each with a glyph of its own as well as a colour; by age, the owner's
 * seconds since it was first scheduled, in PF_AGE_COLORS buckets. Without
 * colour (v->no_color) the owner colouring draws the owner's letter and the
 * age colouring the bucket's digit, so no colouring depends on colour
 * alone (the flashes and the highlight are attributes: reverse and bold
 * survive NO_COLOR). In every colouring a live mark
 * (tui/marks.h) overrides the colour: a frame taken from a preemption
 * victim flashes (reverse, red), a frame a newly admitted sequence took is
 * marked (bold, bright green); the frames of the inspected sequence are
 * drawn reversed and the cursor cell underlined and reversed. */

const char *const pf_coloring_names[PF_COLORING_COUNT + 1] = {"owner", "state", "age", NULL};

int pf_render_age_bucket(double age)
{
    int k = 0;
    for (double lim = 1; k < PF_AGE_COLORS - 1 && age >= lim; lim *= 4)
        k++;
    return k;
}

/* The state colouring of a used frame: the owner's state as a glyph and a
 * colour. */
static void owner_state_look(const pf_sim_snapshot *s, int32_t seqi, int ascii, uint32_t *ch,
                             uint8_t *col)
{
    int st = s->frame_seq && seqi >= 0 && seqi < s->nseqs ? s->seqs[seqi].state : PF_SEQ_DECODING;
    pf_glyph_kind g = PF_GLYPH_USED;
    *col = PF_COL_RUNNING;
    switch (st) {
    case PF_SEQ_STALLED:
        g = PF_GLYPH_STALLED;
        *col = PF_COL_STALLED;
        break;
    case PF_SEQ_PREFILLING:
        g = PF_GLYPH_PREFILL;
        *col = PF_COL_PREFILL;
        break;
    case PF_SEQ_RECOMPUTING:
        g = PF_GLYPH_RECOMPUTE;
        *col = PF_COL_RECOMPUTE;
        break;
    case PF_SEQ_SWAPPED:
        g = PF_GLYPH_SWAPPED;
        *col = PF_COL_SWAPPED;
        break;
    default:
        break;
    }
    *ch = pf_render_glyph(g, ascii);
}

static int age_bucket_of(const pf_sim_snapshot *s, int32_t seqi)
{
    if (!s->frame_seq || seqi < 0 || seqi >= s->nseqs || s->seqs[seqi].admit_time < 0)
        return 0;
    return pf_render_age_bucket(s->stats.time_s - s->seqs[seqi].admit_time);
}

static int grid_scale(int F, int w, int h)
{
    const long C = (long)w * h;
    int N = (int)((F + C - 1) / C);
    return N < 1 ? 1 : N;
}

/* state order for tie-breaking: index into this list, lower wins ties */
enum { GRID_NST = 6 }; /* frame states: PF_FRAME_FREE .. PF_FRAME_CACHED */
static const uint8_t grid_order[GRID_NST] = {PF_FRAME_SWAPPED, PF_FRAME_SHARED, PF_FRAME_USED,
                                             PF_FRAME_RESERVED, PF_FRAME_CACHED, PF_FRAME_FREE};

/* Large cells are sampled: with N > GRID_SAMPLE (16) frames a cell, its
 * state, owner, marks and highlight come from GRID_SEGS runs of GRID_SEG
 * consecutive frames at the start and the middle of the cell (each run one
 * or two cache lines), not from all N. Reading all 4M frames of the largest
 * pool took about 65 ms a frame on the development VM; a sample of 16 per
 * cell (N = 733 at 200x60) about 1 ms. What a cell shows is then the
 * dominant state of its sample: a state held by a small part of a large
 * cell can be missed, but the counters, the meter and the inspector stay
 * exact. At N <= 16 every frame is read. */
enum { GRID_SEGS = 2, GRID_SEG = 8, GRID_SAMPLE = GRID_SEGS * GRID_SEG };

/* What the frames of one cell say, from its sample. */
typedef struct {
    int count[GRID_NST]; /* frames of each state in the sample            */
    uint8_t st;          /* the dominant state (ties: grid_order)         */
    int32_t cand;        /* the majority owner of the dominant state's frames */
    int32_t candseq;     /* its sequence (frame_seq), or -1 when not needed */
    int mark;            /* the strongest live mark (PF_MARK_*)           */
    int mine;            /* a frame of the inspected sequence             */
} grid_cell;

/* Reads cell c (frames [c*N, c*N + N) of F) into *gc. */
static void grid_sample(const pf_sim_snapshot *snap, const pf_dash_view *v, const pf_marks *mk, int c, int N,
                        int cells, grid_cell *gc)
{
    const int F = snap->nframes, sampled = N > GRID_SAMPLE;
    const int32_t insp = v->inspect - 1; /* -1: none */
    int lo = c * N, hi = lo + N < F ? lo + N : F;
    int seg_lo[GRID_SEGS], seg_hi[GRID_SEGS], nseg = 1;
    seg_lo[0] = lo;
    seg_hi[0] = hi;
    if (sampled) {
        nseg = GRID_SEGS;
        for (int j = 0; j < nseg; j++) {
            int a = lo + (int)((long)j * (hi - lo) / nseg);
            seg_lo[j] = a;
            seg_hi[j] = a + GRID_SEG < hi ? a + GRID_SEG : hi;
        }
    }
    /* the runs of the next cell are fetched while this one is counted: the
     * reads are scattered over a large array, so memory latency, not
     * arithmetic, is what a sampled frame costs */
    if (sampled && c + 1 < cells)
        for (int j = 0; j < GRID_SEGS; j++) {
            long nlo = (long)(c + 1) * N, nhi = nlo + N < F ? nlo + N : F;
            __builtin_prefetch(&snap->frames[nlo + j * (nhi - nlo) / GRID_SEGS]);
        }
    memset(gc, 0, sizeof *gc);
    gc->mark = PF_MARK_NONE;
    for (int j = 0; j < nseg; j++)
        for (int f = seg_lo[j]; f < seg_hi[j]; f++) {
            unsigned st = snap->frames[f].state;
            gc->count[st < GRID_NST ? st : PF_FRAME_USED]++;
            if (mk && mk->kind[f] > gc->mark && pf_marks_at(mk, f, v->now) > gc->mark)
                gc->mark = mk->kind[f];
            gc->mine |= insp >= 0 && snap->frames[f].owner == insp;
        }
    gc->st = grid_order[0];
    for (int i = 1; i < GRID_NST; i++)
        if (gc->count[grid_order[i]] > gc->count[gc->st])
            gc->st = grid_order[i];
    /* the owner: Boyer-Moore majority vote over the dominant state's frames */
    int votes = 0, candf = -1;
    gc->cand = gc->candseq = -1;
    for (int j = 0; j < nseg; j++)
        for (int f = seg_lo[j]; f < seg_hi[j]; f++) {
            unsigned fs = snap->frames[f].state;
            if ((fs < GRID_NST ? fs : PF_FRAME_USED) != gc->st)
                continue;
            if (votes == 0) {
                gc->cand = snap->frames[f].owner;
                votes = 1;
            } else if (snap->frames[f].owner == gc->cand)
                votes++;
            else
                votes--;
            if (snap->frames[f].owner == gc->cand)
                candf = f;
        }
    if (candf >= 0 && snap->frame_seq && v->coloring != PF_COLORING_OWNER)
        gc->candseq = snap->frame_seq[candf]; /* one read, and only when used */
}

/* The glyph, colour and attributes cell c is drawn with; counts the marks
 * drawn in *gi. */
static void grid_look(const pf_sim_snapshot *snap, const pf_dash_view *v, const grid_cell *gc, int c,
                      int in_reserve, pf_grid_info *gi, uint32_t *ch_out, uint8_t *col_out, uint8_t *attr_out)
{
    const int ascii = v->ascii;
    const uint8_t st = gc->st;
    uint32_t ch;
    uint8_t col, attr = 0;
    switch (st) {
    case PF_FRAME_USED:
        ch = pf_render_glyph(PF_GLYPH_USED, ascii);
        col = pf_render_owner_color(gc->cand);
        break;
    case PF_FRAME_RESERVED:
        ch = pf_render_glyph(PF_GLYPH_RESERVED, ascii);
        col = pf_render_owner_color(gc->cand);
        attr = PF_ATTR_DIM;
        break;
    case PF_FRAME_SHARED:
        ch = pf_render_glyph(PF_GLYPH_SHARED, ascii);
        col = pf_render_owner_color(gc->cand);
        attr = PF_ATTR_BOLD;
        break;
    case PF_FRAME_SWAPPED:
        ch = pf_render_glyph(PF_GLYPH_SWAPPED, ascii);
        col = PF_COL_WARN;
        attr = PF_ATTR_BOLD;
        break;
    case PF_FRAME_CACHED: /* free to take, but still findable by hash */
        ch = pf_render_glyph(PF_GLYPH_CACHED, ascii);
        col = PF_COL_CACHED;
        break;
    default:
        ch = pf_render_glyph(in_reserve ? PF_GLYPH_RESERVE : PF_GLYPH_FREE, ascii);
        col = in_reserve ? PF_COL_RESERVE : PF_COL_DIM;
        attr = in_reserve ? 0 : PF_ATTR_DIM;
        break;
    }
    if (st == PF_FRAME_USED || st == PF_FRAME_RESERVED || st == PF_FRAME_SHARED) {
        if (v->coloring == PF_COLORING_STATE) {
            if (st == PF_FRAME_USED)
                owner_state_look(snap, gc->candseq, ascii, &ch, &col);
            else
                col = st == PF_FRAME_SHARED ? PF_COL_SHARED : PF_COL_DIM;
        } else if (v->coloring == PF_COLORING_AGE) {
            int k = age_bucket_of(snap, gc->candseq);
            col = (uint8_t)(PF_COL_AGE0 + k);
            if (v->no_color && st == PF_FRAME_USED)
                ch = (uint32_t)('0' + k);
        } else if (v->no_color && st == PF_FRAME_USED)
            ch = pf_render_owner_letter(gc->cand);
    } else if (st == PF_FRAME_SWAPPED && v->coloring != PF_COLORING_OWNER)
        col = PF_COL_SWAPPED;
    if (in_reserve)
        attr |= PF_ATTR_UNDERLINE;
    if (gc->mark == PF_MARK_PREEMPTED) {
        col = PF_COL_FLASH;
        attr = PF_ATTR_REVERSE | PF_ATTR_BOLD;
        gi->flashes++;
    } else if (gc->mark == PF_MARK_ADMITTED) {
        col = PF_COL_ADMIT;
        attr = PF_ATTR_BOLD;
        gi->admits++;
    }
    if (gc->mine)
        attr |= PF_ATTR_REVERSE | PF_ATTR_BOLD;
    if (v->cursor - 1 == c) {
        col = PF_COL_KEY;
        attr = PF_ATTR_REVERSE | PF_ATTR_UNDERLINE | PF_ATTR_BOLD;
    }
    *ch_out = ch;
    *col_out = col;
    *attr_out = attr;
}

/* The grid's geometry: N frames a cell, the cells, and the watermark's
 * reserve (the last cells, drawn underlined). */
static void grid_geometry(const pf_sim_snapshot *snap, pf_grid_info *gi)
{
    const int F = snap->nframes;
    const int N = grid_scale(F, gi->w, gi->h);
    const int cells = (F + N - 1) / N;
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
    gi->frames_per_cell = N;
    gi->cells = cells;
    gi->reserve_frames = reserve;
    gi->reserve_cells = reserve_cells;
}

void pf_render_grid_view(pf_cells *b, int x, int y, int w, int h, const pf_dash_view *v,
                         pf_grid_info *info)
{
    const pf_sim_snapshot *snap = v->snap;
    pf_grid_info gi;
    memset(&gi, 0, sizeof gi);
    gi.x = x;
    gi.y = y;
    gi.w = w;
    gi.h = h;
    if (w < 1 || h < 1 || !snap || snap->nframes < 1 || !snap->frames) {
        if (info)
            *info = gi;
        return;
    }
    grid_geometry(snap, &gi);
    const int N = gi.frames_per_cell, cells = gi.cells;
    const pf_marks *mk = v->marks && v->marks->n == snap->nframes ? v->marks : NULL;
    for (int c = 0; c < cells; c++) {
        grid_cell gc;
        grid_sample(snap, v, mk, c, N, cells, &gc);
        /* the counters are scaled back up from a sample */
        const int scale = N > GRID_SAMPLE;
        gi.shared_frames += scale ? gc.count[PF_FRAME_SHARED] * N / GRID_SAMPLE : gc.count[PF_FRAME_SHARED];
        gi.cached_frames += scale ? gc.count[PF_FRAME_CACHED] * N / GRID_SAMPLE : gc.count[PF_FRAME_CACHED];
        uint32_t ch;
        uint8_t col, attr;
        grid_look(snap, v, &gc, c, c >= cells - gi.reserve_cells, &gi, &ch, &col, &attr);
        pf_cells_put(b, x + c % w, y + c / w, ch, col, attr);
    }
    if (info)
        *info = gi;
}

void pf_render_grid(pf_cells *b, int x, int y, int w, int h, const pf_sim_snapshot *snap,
                    int ascii, pf_grid_info *info)
{
    pf_dash_view v;
    memset(&v, 0, sizeof v);
    v.snap = snap;
    v.ascii = ascii;
    pf_render_grid_view(b, x, y, w, h, &v, info);
}

int pf_render_grid_hit(const pf_grid_info *gi, int sx, int sy)
{
    if (!gi || gi->frames_per_cell < 1 || sx < gi->x || sy < gi->y || sx >= gi->x + gi->w ||
        sy >= gi->y + gi->h)
        return -1;
    int c = (sy - gi->y) * gi->w + (sx - gi->x);
    return c < gi->cells ? c : -1;
}

int32_t pf_render_cell_owner(const pf_sim_snapshot *s, const pf_grid_info *gi, int c)
{
    if (!s || !s->frames || !gi || gi->frames_per_cell < 1 || c < 0 || c >= gi->cells)
        return -1;
    int lo = c * gi->frames_per_cell, hi = lo + gi->frames_per_cell;
    if (hi > s->nframes)
        hi = s->nframes;
    int32_t cand = -1;
    int votes = 0;
    for (int f = lo; f < hi; f++) { /* majority of the held frames */
        int32_t o = s->frames[f].owner;
        if (o < 0)
            continue;
        if (votes == 0) {
            cand = o;
            votes = 1;
        } else
            votes += o == cand ? 1 : -1;
    }
    return cand;
}

/* ---- panels ---------------------------------------------------------------- */

static void title(pf_cells *b, int x, int y, int w, const char *text)
{
    pf_cells_fill(b, x, y, w, 1, ' ', PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE);
    pf_cells_text(b, x, y, w, PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE, text);
}

void pf_render_fmt_count(char *out, size_t len, double v)
{
    double a = v < 0 ? -v : v;
    if (a < 100000) {
        snprintf(out, len, "%.0f", v);
        return;
    }
    static const char suffix[] = "kMGTP";
    double d = v / 1e3;
    int k = 0;
    while ((d < 0 ? -d : d) >= 999.5 && k < 4) {
        d /= 1e3;
        k++;
    }
    double ad = d < 0 ? -d : d;
    /* three significant digits: 4.19M, 41.9M, 419M */
    snprintf(out, len, ad < 9.995 ? "%.2f%c" : ad < 99.95 ? "%.1f%c" : "%.0f%c", d, suffix[k]);
}

static void fmt_count(char *out, size_t len, int64_t v) { pf_render_fmt_count(out, len, (double)v); }

/* Text in at most w columns, cut at the last blank that fits rather than in
 * the middle of a word or a number (ASCII text: one byte, one column). */
static int text_fit(pf_cells *b, int x, int y, int w, uint8_t col, uint8_t attr, const char *t)
{
    int n = (int)strlen(t);
    if (n > w) {
        n = w;
        while (n > 0 && t[n] != ' ')
            n--;
        while (n > 0 && t[n - 1] == ' ')
            n--;
    }
    char tmp[256];
    if (n > (int)sizeof tmp - 1)
        n = (int)sizeof tmp - 1;
    memcpy(tmp, t, (size_t)n);
    tmp[n] = 0;
    return pf_cells_text(b, x, y, w, col, attr, tmp);
}

static int printf_fit(pf_cells *b, int x, int y, int w, uint8_t col, uint8_t attr, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static int printf_fit(pf_cells *b, int x, int y, int w, uint8_t col, uint8_t attr, const char *fmt, ...)
{
    char t[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    return text_fit(b, x, y, w, col, attr, t);
}

/* One "label  value" pair in a column of width w. The value is never cut:
 * when both do not fit, the label gives way. */
static void pair(pf_cells *b, int x, int y, int w, const char *label, const char *value,
                 uint8_t vcol)
{
    int vl = (int)strlen(value);
    if (vl > w)
        vl = w; /* cannot happen with the formats above (at most 7 columns) */
    int vx = x + w - vl;
    int lw = vx - x - 1;
    if (lw > 0)
        pf_cells_text(b, x, y, lw, PF_COL_DIM, 0, label);
    pf_cells_text(b, vx, y, vl, vcol, PF_ATTR_BOLD, value);
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
    /* util: tokens held over the capacity of the frames held, the same
     * measure in every mode (naive's reserved-but-empty frames count as
     * held, so they pull it down); the pool's fill is the header's meter */
    snprintf(v[6], sizeof v[6], "%.1f%%", 100.0 * st->kv_util);
    snprintf(v[7], sizeof v[7], "%.1f%%", 100.0 * st->goodput);
    if (st->throughput_vs_naive > 0)
        snprintf(v[8], sizeof v[8], "%.2fx", st->throughput_vs_naive);
    else
        snprintf(v[8], sizeof v[8], "n/a");
    fmt_count(v[9], sizeof v[9], (int64_t)llround(st->throughput));
    fmt_count(v[10], sizeof v[10], st->finished);
    fmt_count(v[11], sizeof v[11], st->pingpongs);
    static const char *const labels[12] = {"waiting",  "running",    "decoding", "stalled",
                                           "preempts", "recomputed", "util",     "goodput",
                                           "vs naive", "tok/s",      "finished", "ping-pong"};
    uint8_t cols[12] = {PF_COL_DEFAULT, PF_COL_DEFAULT, PF_COL_GOOD, PF_COL_WARN,
                        PF_COL_BAD,     PF_COL_BAD,     PF_COL_DEFAULT, PF_COL_GOOD,
                        PF_COL_GOOD,    PF_COL_DEFAULT, PF_COL_DEFAULT, PF_COL_BAD};
    if (st->throughput_vs_naive > 0 && st->throughput_vs_naive < 1)
        cols[8] = PF_COL_BAD;
    int half = w / 2;
    for (int i = 0; i < 12; i++)
        pair(b, x + (i % 2) * half, y + 1 + i / 2, half - 2, labels[i], v[i], cols[i]);
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

/* ---- charts ------------------------------------------------------------------
 *
 * A chart shows the last window_s simulated seconds on its w - 7 plot
 * columns, each column an equal slice of time (pf_hist_resample: counts per
 * second, levels as their time-weighted mean; steps have different lengths,
 * so a column may hold many steps or part of one). Bars are drawn in eighths
 * of a row (U+2581..U+2588; ASCII '.', ':', '#') against a scale whose top
 * is the largest column rounded up to 1, 2 or 5 x 10^k, so one preemption
 * does not draw full height next to fifty; the scale's top and 0 are in the
 * gutter. The title line gives the newest column, the largest and the mean
 * over the window. The time axis runs from -window to now, in seconds. */

double pf_render_window_zoom(double window_s, int out)
{
    double w = window_s > 0 ? window_s : PF_CHART_DEFAULT_WINDOW_S;
    w = out ? w * 2 : w / 2;
    return w < PF_CHART_MIN_WINDOW_S ? PF_CHART_MIN_WINDOW_S : w > PF_CHART_MAX_WINDOW_S ? PF_CHART_MAX_WINDOW_S : w;
}

static double nice_max(double m)
{
    if (!(m > 0))
        return 1;
    double p = pow(10.0, floor(log10(m)));
    double f = m / p;
    double n = f <= 1.0 + 1e-9 ? 1 : f <= 2.0 + 1e-9 ? 2 : f <= 5.0 + 1e-9 ? 5 : 10;
    return n * p;
}

static void fmt_axis(char *out, size_t len, double v)
{
    if (v != 0 && fabs(v) < 10 && fabs(v - rint(v)) > 1e-9)
        snprintf(out, len, "%.3g", v);
    else
        pf_render_fmt_count(out, len, rint(v));
}

/* A window or a time in seconds, short: 0.25 s, 8 s, 1.5 ks is not used:
 * minutes are spelt out (4096 s = 68.3 min). */
static void fmt_secs(char *out, size_t len, double s)
{
    if (s >= 600)
        snprintf(out, len, "%.4g min", s / 60);
    else
        snprintf(out, len, "%.4g s", s);
}

double pf_render_chart(pf_cells *b, int x, int y, int w, int rows, const pf_hist *h, int k,
                       double window_s, const pf_dash_view *v, const char *name, uint8_t col, double mul)
{
    const int gut = 7, pw = w - gut, bars = rows - 2;
    if (pw < 4 || bars < 1 || !h || !h->v[0])
        return 1;
    if (!(window_s > 0))
        window_s = PF_CHART_DEFAULT_WINDOW_S;
    double vals[1024];
    int cols = pw < 1024 ? pw : 1024;
    const double t_end = pf_hist_now(h);
    double mean;
    pf_hist_resample(h, k, t_end, window_s, cols, vals, &mean);
    double mx = 0, now = 0;
    for (int c = 0; c < cols; c++) {
        if (vals[c] < 0) /* -1: no step covers this column */
            continue;
        vals[c] *= mul;
        now = vals[c];
        if (vals[c] > mx)
            mx = vals[c];
    }
    double top = nice_max(mx);
    char t1[24], t2[24], t3[24];
    fmt_axis(t1, sizeof t1, now);
    fmt_axis(t2, sizeof t2, mx);
    fmt_axis(t3, sizeof t3, mean * mul);
    pf_cells_printf(b, x, y, w, col, PF_ATTR_BOLD, "%s", name);
    pf_cells_printf(b, x + (int)strlen(name) + 2, y, w - (int)strlen(name) - 2, PF_COL_DIM, 0,
                    "now %s  max %s  mean %s", t1, t2, t3);
    for (int r = 0; r < bars; r++) { /* r = 0: the top row */
        int yy = y + 1 + r;
        char lab[24] = "";
        if (r == 0)
            fmt_axis(lab, sizeof lab, top);
        else if (r == bars - 1)
            snprintf(lab, sizeof lab, "0");
        pf_cells_printf(b, x, yy, gut - 1, PF_COL_DIM, 0, "%5s", lab);
        pf_cells_put(b, x + gut - 1, yy, v->ascii ? '|' : 0x2524, PF_COL_DIM, 0);
        for (int c = 0; c < cols; c++) {
            if (vals[c] < 0)
                continue;
            int eighths = (int)lrint(vals[c] / top * bars * 8);
            int fill = eighths - (bars - 1 - r) * 8;
            if (fill <= 0)
                continue;
            if (fill > 8)
                fill = 8;
            uint32_t ch = v->ascii ? (uint32_t)(fill >= 6 ? '#' : fill >= 3 ? ':' : '.')
                                   : 0x2580u + (uint32_t)fill;
            pf_cells_put(b, x + gut + c, yy, ch, col, 0);
        }
    }
    /* the time axis: -window at the left, half-way, now at the right */
    int ay = y + rows - 1;
    pf_cells_fill(b, x + gut, ay, cols, 1, v->ascii ? '-' : 0x2500, PF_COL_DIM, 0);
    char a0[32], a1[32], tmp[24];
    fmt_secs(tmp, sizeof tmp, window_s);
    snprintf(a0, sizeof a0, "-%s", tmp);
    snprintf(a1, sizeof a1, "-%.4g", window_s >= 600 ? window_s / 120 : window_s / 2);
    pf_cells_text(b, x + gut, ay, cols, PF_COL_DIM, 0, a0);
    int mid = x + gut + cols / 2 - (int)strlen(a1) / 2;
    if (mid > x + gut + (int)strlen(a0) + 1)
        pf_cells_text(b, mid, ay, -1, PF_COL_DIM, 0, a1);
    pf_cells_text(b, x + gut + cols - 3, ay, 3, PF_COL_DIM, 0, "now");
    return top;
}

/* The naive baseline in output tokens per second (0: unknown). */
static double naive_rate(const pf_sim_stats *st)
{
    return st->throughput_vs_naive > 0 ? st->throughput / st->throughput_vs_naive : 0;
}

/* The charts view (key t), in the grid's place: the window's rates beside
 * the run's totals (so a recovery shows: the run's totals keep the thrash
 * in them for ever, the window's do not), then as many charts as fit. */
static void panel_charts(pf_cells *b, int x, int y, int w, int h, const pf_dash_view *v)
{
    const pf_sim_snapshot *s = v->snap;
    const pf_hist *hs = v->hist;
    double win = v->window_s > 0 ? v->window_s : PF_CHART_DEFAULT_WINDOW_S;
    if (!s || !hs || !hs->v[0] || hs->n == 0) {
        pf_cells_text(b, x, y, w, PF_COL_DIM, 0, "charts: waiting for history...");
        return;
    }
    const pf_sim_stats *st = &s->stats;
    double tok = pf_hist_window(hs, PF_HIST_TOKENS, win), pre = pf_hist_window(hs, PF_HIST_PREEMPT, win);
    double naive = naive_rate(st);
    char r[200], ws[24], a[16], c[16];
    fmt_secs(ws, sizeof ws, win);
    pf_render_fmt_count(a, sizeof a, rint(tok));
    pf_render_fmt_count(c, sizeof c, rint(st->throughput));
    if (naive > 0)
        snprintf(r, sizeof r, "last %s: %s tok/s %.2fx naive, %.2f preempt/s | run: %s tok/s %.2fx", ws, a,
                 tok / naive, pre, c, st->throughput_vs_naive);
    else
        snprintf(r, sizeof r, "last %s: %s tok/s, %.2f preempt/s | run: %s tok/s", ws, a, pre, c);
    text_fit(b, x, y, w, PF_COL_TITLE, PF_ATTR_BOLD, r);
    static const struct {
        int k;
        const char *name;
        uint8_t col;
        double mul;
    } ch[] = {
        {PF_HIST_TOKENS, "tokens/s", PF_COL_GOOD, 1},
        {PF_HIST_PREEMPT, "preemptions/s", PF_COL_BAD, 1},
        {PF_HIST_USAGE, "KV use %", PF_COL_RESERVE, 100},
        {PF_HIST_WAITING, "waiting requests", PF_COL_WARN, 1},
        {PF_HIST_TTFT_P99W, "TTFT p99 (s, first tokens in each slice)", PF_COL_STALLED, 1},
    };
    int avail = h - 1, nch = 5;
    while (nch > 1 && avail / nch < 4)
        nch--;
    int each = avail / nch;
    for (int i = 0; i < nch; i++)
        pf_render_chart(b, x, y + 1 + i * each, w, each, hs, ch[i].k, win, v, ch[i].name, ch[i].col,
                        ch[i].mul);
}

/* The right column's three sparklines: tokens/s, preemptions/s and the
 * waiting queue over the chart window (as wide as the panel), with the
 * window's mean at the right; before the dashboard has a history of its
 * own, the snapshot's last steps, one column a step. */
static void panel_history(pf_cells *b, int x, int y, int w, const pf_dash_view *v)
{
    const pf_sim_snapshot *s = v->snap;
    const pf_hist *hs = v->hist && v->hist->v[0] && v->hist->n > 0 ? v->hist : NULL;
    double win = v->window_s > 0 ? v->window_s : PF_CHART_DEFAULT_WINDOW_S;
    char t[64], ws[24];
    fmt_secs(ws, sizeof ws, win);
    if (hs)
        snprintf(t, sizeof t, "History, last %s", ws);
    else
        snprintf(t, sizeof t, "History (per step)");
    title(b, x, y, w, t);
    if (!s)
        return;
    static const char *const labels[3] = {"tok/s", "preempt/s", "waiting"};
    static const uint8_t cols[3] = {PF_COL_GOOD, PF_COL_BAD, PF_COL_WARN};
    static const int ks[3] = {PF_HIST_TOKENS, PF_HIST_PREEMPT, PF_HIST_WAITING};
    const int lw = 10, pw = w - lw - 7;
    for (int i = 0; i < 3; i++) {
        float tmp[256];
        int cols_n = pw < 256 ? pw : 256, n = 0;
        double m = 0;
        if (hs) {
            double d[256];
            pf_hist_resample(hs, ks[i], pf_hist_now(hs), win, cols_n, d, &m);
            for (int c = 0; c < cols_n; c++)
                tmp[c] = d[c] > 0 ? (float)d[c] : 0;
            n = cols_n;
        } else {
            const float *src[3] = {s->hist_tokens, s->hist_preempt, s->hist_waiting};
            int nh = s->nhistory < 0 ? 0 : s->nhistory > PF_SIM_HISTORY ? PF_SIM_HISTORY : s->nhistory;
            int first = nh > cols_n ? nh - cols_n : 0;
            for (int j = first; j < nh; j++) {
                double val = src[i][j];
                if (pf_hist_is_rate(ks[i])) { /* per second, over the step's length */
                    double dt = j > 0 ? s->hist_time[j] - s->hist_time[j - 1] : 0;
                    val = dt > 0 ? val / dt : 0;
                }
                tmp[n++] = (float)val;
            }
            m = n ? tmp[n - 1] : 0;
        }
        pf_cells_text(b, x, y + 1 + i, lw, PF_COL_DIM, 0, labels[i]);
        sparkline(b, x + lw, y + 1 + i, cols_n, tmp, n, v->ascii, cols[i]);
        char val[16];
        if (m >= 100)
            pf_render_fmt_count(val, sizeof val, rint(m));
        else
            snprintf(val, sizeof val, m < 10 ? "%.2f" : "%.1f", m);
        pf_cells_printf(b, x + w - 6, y + 1 + i, 6, cols[i], PF_ATTR_BOLD, "%6s", val);
    }
}

/* The watermark in force: the load controller's current value under
 * --watermark auto (stats.watermark), else the one set. */
static double wm_in_force(const pf_sim_snapshot *s)
{
    return s->params.watermark_auto && s->stats.watermark > 0 ? s->stats.watermark : s->params.watermark;
}

/* The recent window beside the run (right column, under the parameters,
 * when the screen is tall enough): output tokens/s, vs naive and
 * preemptions/s over the chart window and over the whole run, so a
 * recovery shows on the main screen too, while the run's figures still
 * carry the thrash; then the run's TTFT p99. */
static void panel_window(pf_cells *b, int x, int y, int w, const pf_dash_view *v)
{
    const pf_sim_snapshot *s = v->snap;
    const pf_hist *hs = v->hist && v->hist->v[0] && v->hist->n > 0 ? v->hist : NULL;
    double win = v->window_s > 0 ? v->window_s : PF_CHART_DEFAULT_WINDOW_S;
    char ws[24], t[64];
    fmt_secs(ws, sizeof ws, win);
    snprintf(t, sizeof t, "Last %s vs the run", ws);
    title(b, x, y, w, t);
    if (!s)
        return;
    const pf_sim_stats *st = &s->stats;
    const int cw = 9, c2 = x + w - cw, c1 = c2 - cw - 1;
    pf_cells_printf(b, c1, y + 1, cw, PF_COL_DIM, 0, "%*s", cw, "window");
    pf_cells_printf(b, c2, y + 1, cw, PF_COL_DIM, 0, "%*s", cw, "run");
    double naive = naive_rate(st);
    double tok_w = hs ? pf_hist_window(hs, PF_HIST_TOKENS, win) : 0;
    double pre_w = hs ? pf_hist_window(hs, PF_HIST_PREEMPT, win) : 0;
    double pre_r = st->time_s > 0 ? (double)st->preemptions / st->time_s : 0;
    char a[16], r[16];
    pf_cells_text(b, x, y + 2, c1 - x, PF_COL_DIM, 0, "tok/s");
    pf_render_fmt_count(a, sizeof a, rint(tok_w));
    pf_render_fmt_count(r, sizeof r, rint(st->throughput));
    pf_cells_printf(b, c1, y + 2, cw, PF_COL_GOOD, PF_ATTR_BOLD, "%*s", cw, hs ? a : "-");
    pf_cells_printf(b, c2, y + 2, cw, PF_COL_GOOD, PF_ATTR_BOLD, "%*s", cw, r);
    pf_cells_text(b, x, y + 3, c1 - x, PF_COL_DIM, 0, "vs naive");
    if (naive > 0 && hs)
        snprintf(a, sizeof a, "%.2fx", tok_w / naive);
    else
        snprintf(a, sizeof a, "n/a");
    if (st->throughput_vs_naive > 0)
        snprintf(r, sizeof r, "%.2fx", st->throughput_vs_naive);
    else
        snprintf(r, sizeof r, "n/a");
    pf_cells_printf(b, c1, y + 3, cw, naive > 0 && hs && tok_w < naive ? PF_COL_BAD : PF_COL_GOOD, PF_ATTR_BOLD,
                    "%*s", cw, a);
    pf_cells_printf(b, c2, y + 3, cw, PF_COL_GOOD, PF_ATTR_BOLD, "%*s", cw, r);
    pf_cells_text(b, x, y + 4, c1 - x, PF_COL_DIM, 0, "preempt/s");
    snprintf(a, sizeof a, "%.2f", pre_w);
    snprintf(r, sizeof r, "%.2f", pre_r);
    pf_cells_printf(b, c1, y + 4, cw, PF_COL_BAD, PF_ATTR_BOLD, "%*s", cw, hs ? a : "-");
    pf_cells_printf(b, c2, y + 4, cw, PF_COL_BAD, PF_ATTR_BOLD, "%*s", cw, r);
    pf_cells_text(b, x, y + 5, c1 - x, PF_COL_DIM, 0, "TTFT p99, s");
    snprintf(r, sizeof r, "%.3f", st->lat[PF_MET_TTFT].p99);
    pf_cells_printf(b, c2, y + 5, cw, PF_COL_STALLED, PF_ATTR_BOLD, "%*s", cw, st->lat[PF_MET_TTFT].count ? r : "-");
}

static void panel_params(pf_cells *b, int x, int y, int w, const pf_sim_snapshot *s)
{
    title(b, x, y, w, "Parameters");
    if (!s)
        return;
    const pf_sim_params *p = &s->params;
    double wm = wm_in_force(s);
    int reserve = pf_pool_reserve_for(s->nframes, wm);
    pf_cells_printf(b, x, y + 1, w, PF_COL_DEFAULT, 0, "%s, %s rules, %s",
                    p->mode == PF_SIM_NAIVE ? "naive" : "paged",
                    p->scheduler == PF_SCHED_SEED ? "seed" : "vllm",
                    p->engine == PF_ENGINE_THREADED ? "threaded" : "deterministic");
    if (p->mode == PF_SIM_NAIVE) /* the watermark gates paged admission only */
        pf_cells_printf(b, x, y + 2, w, PF_COL_DEFAULT, 0, "watermark %.1f%% (naive: unused)",
                        100.0 * p->watermark);
    else if (p->watermark_auto)
        pf_cells_printf(b, x, y + 2, w, PF_COL_RESERVE, PF_ATTR_BOLD, "watermark auto %.1f%% = %d fr",
                        100.0 * wm, reserve);
    else
        pf_cells_printf(b, x, y + 2, w, PF_COL_DEFAULT, 0, "watermark %.1f%% = %d frames", 100.0 * wm,
                        reserve);
    pf_cells_printf(b, x, y + 3, w, PF_COL_DEFAULT, 0, "max seqs %d  preempt %s", p->workers,
                    preempt_label(p->preempt));
    pf_cells_printf(b, x, y + 4, w, PF_COL_DEFAULT, 0, "victim %s  prefix cache %s", victim_label(p->policy),
                    p->prefix_caching ? "on" : "off");
    if (p->tick_us >= 1000)
        pf_cells_printf(b, x, y + 5, w, PF_COL_DEFAULT, 0, "pool %dx%d max %d tick %.1fms",
                        p->cfg.pool_blocks, p->cfg.block_size, p->cfg.max_seq_len,
                        p->tick_us / 1000.0);
    else
        pf_cells_printf(b, x, y + 5, w, PF_COL_DEFAULT, 0, "pool %dx%d max %d tick %dus",
                        p->cfg.pool_blocks, p->cfg.block_size, p->cfg.max_seq_len, p->tick_us);
}

/* The event log: simulated time in seconds, what happened, to whom. A
 * watermark event is the load controller's decision: its new value, and
 * the waste (recomputed / computed tokens) of the window that decided it
 * when the simulator gives it (seq >= 0, in thousandths). */
static void panel_events(pf_cells *b, int x, int y, int w, int h, const pf_sim_snapshot *s)
{
    title(b, x, y, w, "Events (newest last; time in simulated seconds)");
    if (!s || h < 2)
        return;
    int lines = h - 1;
    int n = s->nevents < 0 ? 0 : s->nevents > PF_SIM_EVENTS ? PF_SIM_EVENTS : s->nevents;
    int first = n > lines ? n - lines : 0;
    for (int i = first; i < n; i++) {
        const pf_event *e = &s->events[i];
        int row = y + 1 + (i - first);
        pf_cells_printf(b, x, row, 10, PF_COL_DIM, 0, "%9.3fs", e->time);
        pf_cells_text(b, x + 11, row, 10, event_color(e->kind), PF_ATTR_BOLD, event_label(e->kind));
        if (e->kind == PF_EV_RESET)
            continue;
        if (e->kind == PF_EV_WATERMARK && e->seq >= 0) /* seq: the deciding window's waste */
            printf_fit(b, x + 21, row, w - 21, PF_COL_RESERVE, 0,
                       "load controller: watermark -> %.1f%% (recompute waste %.1f%%)", e->frames / 10.0,
                       e->seq / 10.0);
        else if (e->kind == PF_EV_WATERMARK)
            pf_cells_printf(b, x + 21, row, w - 21, PF_COL_RESERVE, 0, "load controller: watermark -> %.1f%%",
                            e->frames / 10.0);
        else
            pf_cells_printf(b, x + 21, row, w - 21, PF_COL_DEFAULT, 0, "seq %-6d %d frames", (int)e->seq,
                            (int)e->frames);
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
        x += pf_cells_printf(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE, "| %s | step %lld | %.2f s | ",
                             v->split_naive ? "NAIVE + PAGED"
                             : s->params.mode == PF_SIM_NAIVE ? "NAIVE" : "PAGED",
                             (long long)s->stats.step, s->stats.time_s);
        /* done: every job finished (the live simulator holds there, the
         * headless run stops there), ended: a livelock too */
        x += pf_cells_text(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE | PF_ATTR_BOLD,
                           v->run_ended || s->stats.done ? "DONE"
                           : s->paused                   ? "PAUSED"
                                                         : "RUNNING");
        if (v->run_no > 0)
            x += pf_cells_printf(b, x, 0, -1, PF_COL_HEADER, PF_ATTR_REVERSE, " | run %d", v->run_no);
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

/* The key line: the entries that fit, left to right. One table serves the
 * drawing and the mouse (pf_render_keybar_key), so a click always means
 * the key drawn under it. */
static const struct {
    const char *label, *word;
    int key;
} keybar[] = {
    {"F1", "help", '?'},   {"F10", "quit", 'q'},   {"spc", "pause", ' '}, {"s", "step", 's'},
    {"c", "colour", 'c'},  {"t", "charts", 't'},   {"</>", "zoom", '>'},  {"w/W", "wmark", 'W'},  {"-/+", "seqs", '+'}, {"arrows", "inspect", 'i'},
    {"a", "auto", 'a'}, {"2", "split", '2'},   {"x", "sweep", 'x'},    {"g", "GPU", 'g'},     {"m", "mode", 'm'},     {"v", "victim", 'v'},  {"p", "preempt", 'p'},
    {"f/F", "speed", 'F'}, {"r", "reset", 'r'},
};

static int keybar_walk(int w, int y, pf_cells *b, int hit_x)
{
    int x = 0;
    for (size_t i = 0; i < sizeof keybar / sizeof keybar[0]; i++) {
        int need = (int)(strlen(keybar[i].label) + strlen(keybar[i].word) + 2);
        if (x + need > w)
            break;
        if (hit_x >= x && hit_x < x + need - 1)
            return keybar[i].key;
        if (b) {
            pf_cells_text(b, x, y, -1, PF_COL_KEY, PF_ATTR_BOLD | PF_ATTR_REVERSE, keybar[i].label);
            pf_cells_text(b, x + (int)strlen(keybar[i].label) + 1, y, -1, PF_COL_DEFAULT, 0,
                          keybar[i].word);
        }
        x += need;
    }
    return 0;
}

static void key_line(pf_cells *b, int y) { keybar_walk(b->w, y, b, -1); }

int pf_render_keybar_key(int w, int x) { return x < 0 ? 0 : keybar_walk(w, 0, NULL, x); }

/* The help, in pages that fit the smallest screen (80x24): the keys, what
 * the grid's glyphs and colours mean, and every counter. */
static const char *const help_keys[] = {
    "Keys (1/3; Tab or Right: next page, Esc or any other key: close)",
    "",
    "  F1 ?       this help          F10 q       quit (Ctrl-C too)",
    "  c          colouring: owner / state / age (the legend follows)",
    "  t   < >    charts in the grid's place / chart window half, double",
    "  2   x      naive beside paged in lockstep / the watermark curve",
    "  a          load controller on / off (--watermark auto); its moves",
    "             show in the events and on the watermark curve",
    "  arrows     move the cursor on the grid: inspect the owning sequence",
    "             (or click a cell); Esc closes the inspector",
    "  w / W      watermark down / up (1% steps below 10%, then 5%);",
    "             setting it by hand turns the load controller off",
    "  - / + [ ]  max sequences (max_num_seqs) down / up",
    "  v  p  m    victim policy / recompute or swap / naive or paged",
    "  space  s . pause / single step (pauses first)",
    "  f / F      slower / faster       r   reset: the same jobs again",
    "  g          GPU passes on the current layout (background)",
    "  mouse      click a key on the bottom line, or a cell of the grid",
};
static const char *const help_grid[] = {
    "The grid (2/3): one cell is N frames of the pool (N in the legend)",
    "",
    "  # or full block     used: holds tokens (state colouring: running)",
    "  ! or medium shade   stalled      > or left half   prefilling",
    "  % or 3 quadrants    recomputing  S or quadrants   swapped out",
    "  = or dark shade     shared: held by several sequences (prefix)",
    "  ~ or ring           cached: no holder, kept by the prefix cache",
    "  + or light shade    reserved: naive's reservation, no token (waste)",
    "  . or dot  : or bar  free / free, in the watermark's reserve",
    "  underlined          the reserve: a count of frames kept free",
    "Colours: owner = one stable colour per sequence; state = running",
    "  green, stalled orange, prefilling pale, recomputing cyan, swapped",
    "  blue, shared white, cached grey; age = simulated seconds since first",
    "  scheduled: blue <1 <4 <16 <64 red.",
    "No colour (NO_COLOR, --no-color): owner draws a letter a-z per",
    "  sequence, age the bucket's digit 0-4, state the glyphs above.",
    "  Reverse flash: frames a preemption just took from its victim;",
    "  bold: frames a newly admitted sequence just took.",
};
static const char *const help_counters[] = {
    "Counters (3/3)",
    "",
    "  KV[...]     header meter: held frames / pool, the reserve (:), swap",
    "  waiting     requests arrived, not admitted  running  admitted",
    "  decoding    made a token this step       stalled  waiting for a frame",
    "  preempts    preemptions so far           recomputed  tokens redone",
    "  util        tokens held / capacity of the frames held (every mode)",
    "  goodput     useful tokens / computed tokens (recompute is waste)",
    "  vs naive    output tokens/s so far / naive's, the same jobs",
    "  tok/s       output tokens per simulated second; finished: requests",
    "  ping-pong   preempted again soon after readmission",
    "  History     tokens/s, preemptions/s, waiting over the chart window",
    "              (< >), the window's mean at the right",
    "  Charts (t)  the same in time, KV use, mean TTFT, the run's TTFT p99;",
    "              top line: the window's rates and vs naive, then the run's",
    "  time        simulated seconds (the cost model's), header and events",
    "  ui fps ms   the dashboard's frame rate and render time",
};

static void help_overlay(pf_cells *b, int page)
{
    const char *const *lines = help_keys;
    int n = (int)(sizeof help_keys / sizeof help_keys[0]);
    if (page == 2) {
        lines = help_grid;
        n = (int)(sizeof help_grid / sizeof help_grid[0]);
    } else if (page == 3) {
        lines = help_counters;
        n = (int)(sizeof help_counters / sizeof help_counters[0]);
    }
    int bw = 76 < b->w - 2 ? 76 : b->w - 2, bh = n + 2;
    int bx = (b->w - bw) / 2, by = (b->h - bh) / 2;
    pf_cells_fill(b, bx, by, bw, bh, ' ', PF_COL_DEFAULT, PF_ATTR_REVERSE);
    for (int i = 0; i < n; i++)
        pf_cells_text(b, bx + 2, by + 1 + i, bw - 4, PF_COL_DEFAULT,
                      PF_ATTR_REVERSE | (i == 0 ? PF_ATTR_BOLD : 0), lines[i]);
}

/* The end of a run: a box over the grid with the run's final figures. */
static void run_end_box(pf_cells *b, const pf_dash_view *v)
{
    const pf_sim_stats *st = v->final;
    if (!st)
        return;
    char l[9][112];
    int n = 0;
    snprintf(l[n++], sizeof l[0], "Run %d complete: %s at step %lld, %.2f s", v->run_no,
             st->done ? "every job finished" : st->livelock ? "stopped in a livelock" : "the run ended",
             (long long)st->step, st->time_s);
    snprintf(l[n++], sizeof l[0], "jobs %lld finished, %lld preemptions, %lld tokens recomputed",
             (long long)st->finished, (long long)st->preemptions, (long long)st->recomputed_tokens);
    if (st->throughput_vs_naive > 0)
        snprintf(l[n++], sizeof l[0], "throughput %.0f tok/s = %.2fx naive, goodput %.1f%%",
                 st->throughput, st->throughput_vs_naive, 100.0 * st->goodput);
    else
        snprintf(l[n++], sizeof l[0], "throughput %.0f tok/s, goodput %.1f%%", st->throughput,
                 100.0 * st->goodput);
    snprintf(l[n++], sizeof l[0], "TTFT p50 %.3f s, p99 %.3f s; queue time mean %.3f s, p99 %.3f s",
             st->lat[PF_MET_TTFT].p50, st->lat[PF_MET_TTFT].p99, st->wait_mean, st->wait_p99);
    snprintf(l[n++], sizeof l[0], "KV use mean %.1f%%; requests %.2f/s", 100.0 * st->kv_usage_mean,
             st->request_throughput);
    snprintf(l[n++], sizeof l[0], "%s", v->loop ? "--loop: the next run starts in a few seconds"
                                                : "r: run again    q: quit");
    int bw = 0;
    for (int i = 0; i < n; i++)
        if ((int)strlen(l[i]) > bw)
            bw = (int)strlen(l[i]);
    bw += 4;
    if (bw > b->w - 2)
        bw = b->w - 2;
    int bh = n + 2, bx = (b->w - bw) / 2, by = (b->h - bh) / 2 - 2;
    if (by < 1)
        by = 1;
    pf_cells_fill(b, bx, by, bw, bh, ' ', PF_COL_GOOD, PF_ATTR_REVERSE);
    for (int i = 0; i < n; i++)
        pf_cells_text(b, bx + 2, by + 1 + i, bw - 4, PF_COL_GOOD,
                      PF_ATTR_REVERSE | (i == 0 ? PF_ATTR_BOLD : 0), l[i]);
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

/* ---- the meter, the legend, the inspector ---------------------------------- */

/* htop-style meter over the left column: KV[||||||   ::] used/pool, the
 * held frames as bars (swap-in in the swap colour), the watermark's reserve
 * as ':' at the right end, then the host swap pool's own meter when swap is
 * in use. */
static void meter(pf_cells *b, int x, int y, int w, const pf_sim_snapshot *s, int reserve)
{
    if (!s || w < 30)
        return;
    const int F = s->nframes > 0 ? s->nframes : 1;
    /* a live run's swapped frames fit the host pool; a recording's are as
     * many as its sequences say (each checked on reading, not their sum) */
    int swapping = 0;
    long long host = 0;
    for (int i = 0; i < s->nseqs; i++) {
        if (s->seqs[i].state != PF_SEQ_SWAPPED)
            continue;
        swapping++;
        host += s->seqs[i].frames;
    }
    char tail[64], swp[48] = "";
    int used = s->stats.pool_used;
    snprintf(tail, sizeof tail, "] %.1f%% %d/%d", 100.0 * used / F, used, F);
    int cap = s->params.swap_host_blocks;
    if (s->params.preempt == PF_PREEMPT_SWAP || host > 0)
        snprintf(swp, sizeof swp, " Swp %lld/%d", host, cap);
    int bw = w - 3 - (int)strlen(tail) - (int)strlen(swp);
    if (bw < 8)
        return;
    int ux = pf_cells_text(b, x, y, 3, PF_COL_TITLE, PF_ATTR_BOLD, "KV[");
    int ub = (int)((double)used / F * bw + 0.5), rb = reserve > 0 ? (int)((double)reserve / F * bw + 0.999) : 0;
    if (ub > bw)
        ub = bw;
    for (int i = 0; i < bw; i++) {
        if (i < ub)
            pf_cells_put(b, x + ux + i, y, '|', i >= bw - rb ? PF_COL_WARN : PF_COL_GOOD, PF_ATTR_BOLD);
        else if (i >= bw - rb)
            pf_cells_put(b, x + ux + i, y, ':', PF_COL_RESERVE, 0);
        else
            pf_cells_put(b, x + ux + i, y, ' ', PF_COL_DEFAULT, 0);
    }
    int tx = x + ux + bw;
    tx += pf_cells_text(b, tx, y, -1, PF_COL_DEFAULT, 0, tail);
    if (swp[0])
        pf_cells_text(b, tx, y, x + w - tx, host > 0 ? PF_COL_SWAPPED : PF_COL_DIM, 0, swp);
    (void)swapping;
}

typedef struct {
    uint32_t glyph;
    uint8_t col, attr;
    const char *word;
} legend_item;

static int legend_put(pf_cells *b, int x, int y, int maxx, const legend_item *it)
{
    int need = 2 + (int)strlen(it->word) + 1;
    if (x + need - 1 > maxx)
        return -1;
    pf_cells_put(b, x, y, it->glyph, it->col, it->attr);
    pf_cells_text(b, x + 2, y, maxx - x - 2, PF_COL_DIM, 0, it->word);
    return need;
}

/* Two rows: what the glyphs and colours mean in the current colouring,
 * left to right and on into the second row, with N (frames per cell)
 * always whole at the end of the second row. Shared and cached appear once
 * prefix caching is on or something shows in those states (a legend entry
 * for a state that cannot happen would promise what never shows). Without
 * colour the entries say what tells the classes apart instead: letters,
 * digits, glyphs. */
static void legend(pf_cells *b, int y, int L, const pf_dash_view *v, const pf_grid_info *gi)
{
    const pf_sim_snapshot *s = v->snap;
    const int ascii = v->ascii, nc = v->no_color;
    legend_item items[20];
    int n = 0;
    const int naive = s && s->params.mode == PF_SIM_NAIVE;
    const int prefix = (s && s->params.prefix_caching) || gi->shared_frames > 0 || gi->cached_frames > 0;
    if (v->coloring == PF_COLORING_STATE) {
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_USED, ascii), PF_COL_RUNNING, 0, "running"};
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_STALLED, ascii), PF_COL_STALLED, 0, "stalled"};
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_PREFILL, ascii), PF_COL_PREFILL, 0, "prefilling"};
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_RECOMPUTE, ascii), PF_COL_RECOMPUTE, 0, "recomputing"};
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_SWAPPED, ascii), PF_COL_SWAPPED, 0, "swapped"};
    } else if (v->coloring == PF_COLORING_AGE) {
        static const char *const ages[PF_AGE_COLORS] = {"age<1s", "<4s", "<16s", "<64s", "older"};
        for (int k = 0; k < PF_AGE_COLORS; k++)
            items[n++] = (legend_item){nc ? (uint32_t)('0' + k) : pf_render_glyph(PF_GLYPH_USED, ascii),
                                       (uint8_t)(PF_COL_AGE0 + k), 0, ages[k]};
    } else {
        items[n++] = (legend_item){nc ? 'a' : pf_render_glyph(PF_GLYPH_USED, ascii), PF_COL_OWNER0 + 3, 0,
                                   nc ? "used (letter: owner)" : "used (colour: owner)"};
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_SWAPPED, ascii), PF_COL_WARN, 0, "swapped"};
    }
    if (naive || (s && gi->frames_per_cell > 0 && v->coloring != PF_COLORING_AGE))
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_RESERVED, ascii), PF_COL_DIM, 0, "reserved"};
    if (prefix) {
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_SHARED, ascii),
                                   v->coloring == PF_COLORING_STATE ? PF_COL_SHARED : PF_COL_OWNER0 + 3,
                                   0, "shared"};
        items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_CACHED, ascii), PF_COL_CACHED, 0, "cached"};
    }
    items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_FREE, ascii), PF_COL_DIM, 0, "free"};
    char rs[32];
    if (naive)
        snprintf(rs, sizeof rs, "no reserve (naive)");
    else
        snprintf(rs, sizeof rs, "reserve %d fr", gi->reserve_frames);
    items[n++] = (legend_item){naive ? ' ' : pf_render_glyph(PF_GLYPH_RESERVE, ascii), PF_COL_RESERVE,
                               PF_ATTR_UNDERLINE, rs};
    items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_USED, ascii), PF_COL_FLASH, PF_ATTR_REVERSE,
                               nc ? "reverse: preempted" : "preempted"};
    items[n++] = (legend_item){pf_render_glyph(PF_GLYPH_USED, ascii), PF_COL_ADMIT, PF_ATTR_BOLD,
                               nc ? "bold: admitted" : "admitted"};
    char t[48];
    int tn = snprintf(t, sizeof t, " N=%d frames/cell", gi->frames_per_cell);
    if (tn > L / 3) /* narrow: keep N whole */
        tn = snprintf(t, sizeof t, " N=%d/cell", gi->frames_per_cell);
    int row = 0, lx = 0;
    for (int i = 0; i < n && row < 2; i++) {
        int maxx = row == 0 ? L : L - tn;
        int k = legend_put(b, lx, y + row, maxx, &items[i]);
        if (k < 0 && row == 0) { /* on to the second row */
            row = 1;
            lx = 0;
            k = legend_put(b, lx, y + row, L - tn, &items[i]);
        }
        if (k < 0)
            break;
        lx += k;
    }
    if (row == 0)
        lx = 0;
    pf_cells_text(b, row == 1 ? lx : 0, y + 1, L - (row == 1 ? lx : 0), PF_COL_DIM, 0, row == 1 ? t : t + 1);
}

static const char *seq_state_label(int st)
{
    static const char *const names[] = {"waiting", "running", "stalled", "swapped out",
                                        "recomputing", "done", "prefilling"};
    return st >= 0 && st < (int)(sizeof names / sizeof names[0]) ? names[st] : "?";
}

/* The inspector's second and third lines: when the sequence arrived and
 * was scheduled (or how long it has waited); its TTFT, or how long the
 * first token has been awaited, and the prefill progress: the prompt (and,
 * after a recompute preemption, the tokens generated before it) whose KV
 * is computed. Times in simulated seconds. */
static void inspect_times(pf_cells *b, int x, int y, int w, int h, const pf_seq_view *q,
                          double now)
{
    if (q->admit_time >= 0)
        printf_fit(b, x, y, w, PF_COL_DEFAULT, 0, "arrived %.3f s, scheduled %.3f s: queue wait %.3f s",
                   q->arrival, q->admit_time, q->admit_time - q->arrival);
    else
        printf_fit(b, x, y, w, PF_COL_DEFAULT, 0, "arrived %.3f s, waiting %.3f s", q->arrival,
                   now - q->arrival);
    if (h < 2)
        return;
    char ttft[64];
    if (q->ttft >= 0)
        snprintf(ttft, sizeof ttft, "TTFT %.3f s", q->ttft);
    else
        snprintf(ttft, sizeof ttft, "no token yet: TTFT so far %.3f s", now - q->arrival);
    int target = q->state == PF_SEQ_RECOMPUTING ? q->prompt + q->generated : q->prompt;
    int done = q->computed < target ? q->computed : target;
    if (q->state == PF_SEQ_PREFILLING || q->state == PF_SEQ_RECOMPUTING)
        printf_fit(b, x, y + 1, w, PF_COL_PREFILL, PF_ATTR_BOLD, "%s; %s %d/%d tokens (%.0f%%)", ttft,
                   q->state == PF_SEQ_RECOMPUTING ? "recompute" : "prefill", done, target,
                   target > 0 ? 100.0 * done / target : 0.0);
    else
        printf_fit(b, x, y + 1, w, PF_COL_DEFAULT, 0, "%s; prefill %d/%d tokens (done)", ttft, done, target);
}

/* The inspector shows at most this many of a sequence's blocks (a
 * 1M-token sequence of 16-token pages has 65536; no panel holds them). */
#define INSPECT_MAX_BLOCKS 4096

/* Sequence q's page table, logical block k -> frame (-1: none here) and
 * whether that frame is shared, for its first n blocks, in one pass. A live
 * snapshot carries the sequence's own table (tab_buf): every frame, shared
 * ones numbered too. A replayed one has only each frame's holder and
 * logical block. */
static void inspect_gather(const pf_sim_snapshot *s, const pf_seq_view *q, int n, int32_t *table,
                           uint8_t *shared)
{
    for (int k = 0; k < n; k++)
        table[k] = -1;
    memset(shared, 0, (size_t)n);
    const int nb = q->frames > 0 ? q->frames : 0;
    if (s->tab_buf && q->table_at >= 0 && q->table_at + nb <= s->tab_cap) {
        for (int k = 0; k < n; k++) {
            int32_t f = s->tab_buf[q->table_at + k];
            table[k] = f;
            shared[k] = f >= 0 && f < s->nframes && s->frames[f].state == PF_FRAME_SHARED;
        }
        return;
    }
    for (int f = 0; f < s->nframes; f++)
        if (s->frames[f].owner == q->id) {
            int k = s->frame_block[f];
            if (k >= 0 && k < n) {
                table[k] = f;
                shared[k] = s->frames[f].state == PF_FRAME_SHARED;
            }
        }
}

/* The page table in cells of 11 columns, as many a line as fit over h
 * lines, the last cell "+N more" when they do not all fit. */
static void inspect_table(pf_cells *b, int x, int y, int w, int h, const pf_sim_snapshot *s,
                          const pf_seq_view *q)
{
    int nb = q->frames > 0 ? q->frames : 0, shown = 0, px = x, py = y;
    pf_cells_text(b, x, py, w, PF_COL_TITLE, 0, "page table (block->frame, * shared):");
    py++;
    int per_line = w / 11 > 0 ? w / 11 : 1, lines = h - 1;
    int cap = per_line * lines;
    if (cap < 1 || nb < 1)
        return;
    int n = nb < INSPECT_MAX_BLOCKS ? nb : INSPECT_MAX_BLOCKS;
    int32_t table[INSPECT_MAX_BLOCKS];
    uint8_t shared[INSPECT_MAX_BLOCKS];
    inspect_gather(s, q, n, table, shared);
    for (int k = 0; k < n && shown < cap; k++) {
        if (shown == cap - 1 && n - k > 1) {
            pf_cells_printf(b, px, py, w - (px - x), PF_COL_DIM, 0, "+%d more", n - k);
            break;
        }
        if (table[k] < 0 && q->state == PF_SEQ_SWAPPED)
            pf_cells_printf(b, px, py, 11, PF_COL_DIM, 0, "%d->host", k);
        else if (table[k] < 0) /* held under an earlier sharer's id */
            pf_cells_printf(b, px, py, 11, PF_COL_SHARED, PF_ATTR_BOLD, "%d->sh*", k);
        else
            pf_cells_printf(b, px, py, 11, shared[k] ? PF_COL_SHARED : PF_COL_DEFAULT,
                            shared[k] ? PF_ATTR_BOLD : 0, "%d->%d%s", k, (int)table[k],
                            shared[k] ? "*" : "");
        shown++;
        px += 11;
        if (shown % per_line == 0) {
            px = x;
            py++;
        }
    }
}

/* The inspector, in the event log's place: the selected sequence's figures
 * (times in simulated seconds), its prefill progress and its page table,
 * logical block -> frame, shared frames marked '*'.
 * A live snapshot carries each running sequence's table (tab_buf), so every
 * block shows its frame. A replayed one lists each frame under one holder
 * (the first in slot order) only, so there a prefix block this sequence
 * shares with an earlier one shows as "k->sh*" without a frame number.
 * Blocks missing from a swapped-out sequence are on the host. */
static void panel_inspect(pf_cells *b, int x, int y, int w, int h, const pf_sim_snapshot *s,
                          int32_t id)
{
    char t[96];
    snprintf(t, sizeof t, "Sequence %d (Esc closes)", (int)id);
    title(b, x, y, w, t);
    if (!s || h < 2)
        return;
    const pf_seq_view *q = NULL;
    for (int i = 0; i < s->nseqs; i++)
        if (s->seqs[i].id == id)
            q = &s->seqs[i];
    if (!q) {
        pf_cells_text(b, x, y + 1, w, PF_COL_DIM, 0,
                      "no longer in the pool (finished, or back in the queue)");
        return;
    }
    printf_fit(b, x, y + 1, w, PF_COL_DEFAULT, 0,
               "%s  prompt %d  generated %d/%d  frames %d (%d shared)  preempted %d",
               seq_state_label(q->state), q->prompt, q->generated, q->output, q->frames,
               q->shared_frames, q->preemptions);
    if (h < 3)
        return;
    inspect_times(b, x, y + 2, w, h - 2, q, s->stats.time_s);
    if (h < 5 || !s->frame_block)
        return;
    inspect_table(b, x, y + 4, w, h - 4, s, q);
}

/* ---- the split view --------------------------------------------------------
 *
 * Naive and paged side by side over the same jobs, stepped in lockstep:
 * each half has a title (its mode, step and tokens per step), its grid
 * coloured by owner, and its own counters; utilisation on both sides is
 * the same measure (tokens held / capacity of the frames held), so naive's
 * reserved-but-empty frames show as what they are. Between them, the ratio
 * of tokens per step. */
static void split_half(pf_cells *b, int x, int y, int w, int h, const pf_dash_view *v,
                       const pf_sim_snapshot *s, const char *name)
{
    const pf_sim_stats *st = &s->stats;
    pf_cells_fill(b, x, y, w, 1, ' ', PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE);
    printf_fit(b, x, y, w, PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE, "%s  %.2f s%s", name,
               st->time_s, st->done ? "  done" : "");
    pf_dash_view g = *v;
    g.snap = s;
    g.marks = NULL; /* the flashes belong to the live pool */
    g.cursor = g.inspect = 0;
    pf_render_grid_view(b, x, y + 1, w, h - 4, &g, NULL);
    char a[16], c2[16], d[16];
    fmt_count(a, sizeof a, st->waiting);
    fmt_count(c2, sizeof c2, st->running);
    fmt_count(d, sizeof d, st->preemptions);
    /* narrow halves (an 80-column screen) get the short labels */
    const int nw = w < 38;
    printf_fit(b, x, y + h - 3, w, PF_COL_DEFAULT, 0,
               nw ? "util %.1f%% pool %.0f%% %.0f t/s" : "util %.1f%%  pool %.1f%%  tok/s %.0f",
               100.0 * st->kv_util, 100.0 * st->kv_usage, st->throughput);
    printf_fit(b, x, y + h - 2, w, PF_COL_DEFAULT, 0,
               nw ? "wait %s run %s pre %s" : "waiting %s  running %s  preempts %s", a, c2, d);
    printf_fit(b, x, y + h - 1, w, PF_COL_DIM, 0,
               nw ? "done %lld/%d good %.0f%%" : "finished %lld of %d  goodput %.1f%%",
               (long long)st->finished, st->njobs, 100.0 * st->goodput);
}

static void panel_split(pf_cells *b, int x, int y, int w, int h, const pf_dash_view *v)
{
    const pf_sim_snapshot *nv = v->split_naive, *pg = v->snap;
    int hw = (w - 1) / 2;
    double tn = nv->stats.throughput, tp = pg->stats.throughput;
    if (tn > 0)
        printf_fit(b, x, y, w, PF_COL_GOOD, PF_ATTR_BOLD,
                   w < 60 ? "paged/naive %.2fx, util %.1f%% vs %.1f%%"
                          : "paged / naive: %.2fx tokens per second, utilisation %.1f%% vs %.1f%%",
                   tp / tn, 100.0 * pg->stats.kv_util, 100.0 * nv->stats.kv_util);
    else
        pf_cells_text(b, x, y, w, PF_COL_DIM, 0, "paged / naive: waiting for tokens...");
    /* the naive side's reservation policy (the PagedAttention paper's
     * three: max-len, power of two, oracle) */
    static const char *const reserve_words[] = {"max-len", "pow2", "oracle"}; /* PF_RESERVE_MAX.. */
    int rp = nv->params.naive_reserve;
    char nname[48];
    snprintf(nname, sizeof nname, "NAIVE (reserve %s)", rp >= 0 && rp < 3 ? reserve_words[rp] : "?");
    split_half(b, x, y + 1, hw, h - 1, v, nv, hw < 30 ? "NAIVE" : nname);
    for (int r = y + 1; r < y + h; r++)
        pf_cells_put(b, x + hw, r, v->ascii ? '|' : 0x2502, PF_COL_DIM, 0);
    split_half(b, x + hw + 1, y + 1, w - hw - 1, h - 1, v, pg, hw < 30 ? "PAGED" : "PAGED (on demand)");
}

/* ---- the watermark curve ----------------------------------------------------
 *
 * One row per swept watermark, ascending: throughput as a bar (and as a
 * multiple of naive), preemptions as a second bar, each scaled to its
 * largest value; the row nearest the live watermark is marked. Read down
 * the rows, the bars are the two curves against the watermark, turned a
 * quarter: the thrash at 0, the knee at a few percent, the slow fall as a
 * large reserve starves admission. */
/* The swept point whose watermark is nearest wm (the first of a tie). */
static int sweep_nearest(const pf_sweep_view *sv, double wm)
{
    int k = 0;
    for (int i = 1; i < sv->n; i++)
        if (fabs(sv->wm[i] - wm) < fabs(sv->wm[k] - wm))
            k = i;
    return k;
}

/* The curve's scale: the largest throughput and preemption count over
 * the finished points; returns how many are finished. */
static int sweep_scale(const pf_sweep_view *sv, double *tmax, long long *pmax)
{
    int done = 0;
    *tmax = 0;
    *pmax = 0;
    for (int i = 0; i < sv->n; i++) {
        if (sv->state[i] != PF_SWEEP_DONE)
            continue;
        done++;
        if (sv->tput[i] > *tmax)
            *tmax = sv->tput[i];
        if (sv->preempt[i] > *pmax)
            *pmax = sv->preempt[i];
    }
    return done;
}

/* One row's figures after its watermark: the throughput and its multiple
 * of naive, its bar, the preemptions (and, wide, their bar), and "<- now"
 * on the row nearest the live watermark. bw is a bar's width. */
static void sweep_row(pf_cells *b, int x, int y, int w, const pf_sweep_view *sv, int i, int mine,
                      double tmax, long long pmax, int bw, int ascii)
{
    const int wide = w >= 70;
    const uint32_t full = ascii ? '#' : 0x2588;
    char t[48];
    double ratio = sv->naive_tput > 0 ? sv->tput[i] / sv->naive_tput : 0;
    if (wide)
        snprintf(t, sizeof t, "%7.0f tok/s %6.2fx", sv->tput[i], ratio);
    else
        snprintf(t, sizeof t, "%6.0f %5.2fx", sv->tput[i], ratio);
    if (!(sv->naive_tput > 0)) /* no baseline: no ratio */
        t[wide ? 13 : 6] = 0;
    int tw = wide ? 22 : 13;
    pf_cells_text(b, x + 8, y, tw, PF_COL_GOOD, 0, t);
    int cx = x + 8 + tw + 1;
    int n1 = tmax > 0 ? (int)lrint(sv->tput[i] / tmax * bw) : 0;
    pf_cells_fill(b, cx, y, n1, 1, full, PF_COL_GOOD, 0);
    cx += bw + 1;
    char p[24];
    pf_render_fmt_count(p, sizeof p, (double)sv->preempt[i]);
    pf_cells_printf(b, cx, y, wide ? 15 : 10, PF_COL_BAD, 0, wide ? "%7s preempt" : "%6s pre", p);
    cx += wide ? 16 : 11;
    if (wide) {
        int n2 = pmax > 0 ? (int)lrint((double)sv->preempt[i] / (double)pmax * bw) : 0;
        if (n2 == 0 && sv->preempt[i] > 0)
            n2 = 1;
        pf_cells_fill(b, cx, y, n2, 1, full, PF_COL_BAD, 0);
        cx += bw + 1;
    }
    if (mine && cx < x + w)
        pf_cells_text(b, cx, y, x + w - cx, PF_COL_KEY, PF_ATTR_BOLD, wide ? "<- now" : "<-");
}

static void panel_sweep(pf_cells *b, int x, int y, int w, int h, const pf_sweep_view *sv,
                        const pf_dash_view *v)
{
    const pf_sim_snapshot *snap = v->snap;
    double tmax;
    long long pmax;
    const int done = sweep_scale(sv, &tmax, &pmax);
    /* the row nearest the watermark in force now (it moves under the load
     * controller), and the rows the controller's recent decisions landed
     * nearest to (PF_EV_WATERMARK in the snapshot's events), marked '*' */
    const int near = sweep_nearest(sv, snap ? wm_in_force(snap) : sv->current);
    int visits[PF_SWEEP_POINTS] = {0}, moves = 0;
    for (int e = 0; snap && e < snap->nevents && e < PF_SIM_EVENTS; e++) {
        if (snap->events[e].kind != PF_EV_WATERMARK || sv->n < 1)
            continue;
        visits[sweep_nearest(sv, snap->events[e].frames / 1000.0)]++;
        moves++;
    }
    const int autoc = snap && snap->params.watermark_auto;
    if (autoc || moves)
        printf_fit(b, x, y, w, PF_COL_TITLE, PF_ATTR_BOLD,
                   "Watermark curve: %d of %d points; load controller %s, * = its last %d moves (a, x)", done,
                   sv->n, autoc ? "on" : "off", moves);
    else
        printf_fit(b, x, y, w, PF_COL_TITLE, PF_ATTR_BOLD,
                   "Watermark curve: %d of %d points (x closes; a: load controller)", done, sv->n);
    int rows = h - 1 < sv->n ? h - 1 : sv->n;
    /* Wide (>= 70 columns): "%5.1f%%" 8, the throughput 22 + 1, its bar,
     * the preemptions 15 + 1, their bar, "<- now" 6 (55 fixed). Narrow:
     * the throughput 13 + 1, its bar, the preemptions 10 + 1, "<-" 2. */
    int bw = w >= 70 ? (w - 55 - 2) / 2 : w - 8 - 14 - 11 - 3 - 1;
    if (bw < 2)
        bw = 2;
    for (int i = 0; i < rows; i++) {
        const int yy = y + 1 + i, mine = i == near;
        pf_cells_printf(b, x, yy, 8, mine ? PF_COL_KEY : PF_COL_DEFAULT, mine ? PF_ATTR_BOLD : 0,
                        "%5.1f%%", 100.0 * sv->wm[i]);
        if (visits[i])
            pf_cells_put(b, x + 6, yy, '*', PF_COL_RESERVE, PF_ATTR_BOLD);
        if (sv->state[i] != PF_SWEEP_DONE)
            pf_cells_text(b, x + 8, yy, w - 8, PF_COL_DIM, 0,
                          sv->state[i] == PF_SWEEP_RUNNING ? "running..."
                          : sv->state[i] == PF_SWEEP_FAILED ? "no result (the run cannot finish)"
                                                            : "waiting");
        else
            sweep_row(b, x, yy, w, sv, i, mine, tmax, pmax, bw, v->ascii);
    }
}

/* ---- the whole screen ------------------------------------------------------
 *
 * Layout for W x H (>= 80 x 24): header row 0, key line row H-1, the GPU
 * panel on the 5 rows above the key line, and between them a right column
 * of R = 34..40 columns (counters 7 rows, history 4, parameters 6) and a
 * left column with the KV meter, the grid's title, the grid, its legend and
 * the event log or the inspector (a third of the height, 4..13 rows). */
/* The left column's title row when it shows the pool or the charts (the
 * split view and the sweep draw their own): the charts' window, or the
 * pool's colouring, shape and counts, shortened to fit the column and
 * never clipped (an 80-column screen once cut "4096 used" to "40"). */
static void pool_title(pf_cells *b, int y, int L, const pf_dash_view *v, const pf_grid_info *gi)
{
    const pf_sim_snapshot *s = v->snap;
    title(b, 0, y, L, "Pool");
    if (v->charts) {
        char ws[24];
        fmt_secs(ws, sizeof ws, v->window_s > 0 ? v->window_s : PF_CHART_DEFAULT_WINDOW_S);
        printf_fit(b, 0, y, L, PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE,
                   "Charts over the last %s of simulated time (< > zoom, t: back to the grid)", ws);
        return;
    }
    if (!s || gi->frames_per_cell <= 0)
        return;
    char t[160];
    const int fpc = gi->frames_per_cell;
    const char *pl = fpc > 1 ? "s" : "";
    const char *cn =
        pf_coloring_names[v->coloring >= 0 && v->coloring < PF_COLORING_COUNT ? v->coloring : 0];
    int n = snprintf(t, sizeof t, "Pool by %s: 1 cell = %d frame%s | %d x %d tok | %d used %d free",
                     cn, fpc, pl, s->nframes, s->params.cfg.block_size, s->stats.pool_used,
                     s->stats.pool_free);
    if (n > L) /* the pool's shape dropped */
        n = snprintf(t, sizeof t, "Pool by %s: 1 cell = %d frame%s | %d used %d free", cn, fpc, pl,
                     s->stats.pool_used, s->stats.pool_free);
    if (n > L) /* the colouring is in the legend too */
        n = snprintf(t, sizeof t, "Pool: 1 cell = %d frame%s | %d used %d free", fpc, pl,
                     s->stats.pool_used, s->stats.pool_free);
    if (n > L) { /* a pool of millions on 80 columns: the counts rounded, never cut */
        char cell[16], used[16], free_[16];
        fmt_count(cell, sizeof cell, fpc);
        fmt_count(used, sizeof used, s->stats.pool_used);
        fmt_count(free_, sizeof free_, s->stats.pool_free);
        snprintf(t, sizeof t, "Pool: %s fr/cell | %s used %s free", cell, used, free_);
    }
    pf_cells_text(b, 0, y, L, PF_COL_TITLE, PF_ATTR_BOLD | PF_ATTR_UNDERLINE, t);
}

/* Below the legend: the inspector of a sequence, a word on a free cell
 * under the cursor, or the event log. */
static void left_lower(pf_cells *b, int y, int L, int h, const pf_dash_view *v,
                       const pf_grid_info *gi)
{
    const pf_sim_snapshot *s = v->snap;
    if (v->inspect > 0) {
        panel_inspect(b, 0, y, L, h, s, v->inspect - 1);
    } else if (v->cursor > 0 && v->cursor <= gi->cells && gi->frames_per_cell > 0) {
        const int lo = (v->cursor - 1) * gi->frames_per_cell;
        int hi = lo + gi->frames_per_cell - 1;
        if (hi >= s->nframes)
            hi = s->nframes - 1;
        title(b, 0, y, L, "Inspector (Esc closes)");
        pf_cells_printf(b, 0, y + 1, L, PF_COL_DIM, 0,
                        "frames %d-%d: no sequence holds them; move to a coloured cell", lo, hi);
    } else {
        panel_events(b, 0, y, L, h, s);
    }
}

/* A large start: a box in the middle says what it is doing (q works). */
static void starting_box(pf_cells *b, const char *what)
{
    const int W = b->w, H = b->h;
    int bw = (int)strlen(what) + 4;
    if (bw > W - 2)
        bw = W - 2;
    pf_cells_fill(b, (W - bw) / 2, H / 2 - 2, bw, 3, ' ', PF_COL_WARN, PF_ATTR_REVERSE);
    pf_cells_text(b, (W - bw) / 2 + 2, H / 2 - 1, bw - 4, PF_COL_WARN,
                  PF_ATTR_REVERSE | PF_ATTR_BOLD, what);
}

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
    panel_history(b, rx, mid_top + 7, R, v);
    if (v->fps > 0) { /* the UI's own pace, right of the History title */
        char t[48];
        int n = snprintf(t, sizeof t, "ui %.0f fps %.2f ms", v->fps, v->render_ms);
        int tl = v->hist ? 21 : 20; /* keep the panel's title whole */
        if (n > 0 && n <= R - tl)
            pf_cells_text(b, rx + R - n, mid_top + 7, n, PF_COL_TITLE, PF_ATTR_UNDERLINE, t);
    }
    panel_params(b, rx, mid_top + 11, R, s);
    if (mid_h >= 17 + 6) /* room below the parameters (not at 80x24) */
        panel_window(b, rx, mid_top + 18, R, v);

    /* left column: meter, title, grid, legend, events (or the inspector) */
    int ev_h = (mid_h - 4) / 3;
    if (ev_h < 4)
        ev_h = 4;
    if (ev_h > 13)
        ev_h = 13;
    const int legend_rows = 2;
    int grid_y = mid_top + 2;
    int grid_h = mid_h - 2 - legend_rows - ev_h;
    pf_grid_info gi;
    memset(&gi, 0, sizeof gi);
    const int split = (v->split_naive && s) || v->sweep;
    if (v->sweep) /* the grid, its title and its legend hold the curve */
        panel_sweep(b, 0, grid_y - 1, L, grid_h + legend_rows + 1, v->sweep, v);
    else if (split) /* the grid, its title and its legend hold the two sides */
        panel_split(b, 0, grid_y - 1, L, grid_h + legend_rows + 1, v);
    else if (v->charts) /* the grid's rectangle and its legend hold the charts */
        panel_charts(b, 0, grid_y, L, grid_h + legend_rows, v);
    else
        pf_render_grid_view(b, 0, grid_y, L, grid_h, v, &gi);
    if (grid)
        *grid = gi;
    meter(b, 0, mid_top, L, s, gi.reserve_frames);
    if (!split)
        pool_title(b, mid_top + 1, L, v, &gi);
    int ly = grid_y + grid_h;
    if (!v->charts && !split)
        legend(b, ly, L, v, &gi);
    left_lower(b, ly + 2, L, ev_h, v, &gi);
    panel_gpu(b, 0, gpu_y, W, v->gpu);
    key_line(b, H - 1);
    if (v->run_ended)
        run_end_box(b, v);
    if (v->starting)
        starting_box(b, v->starting);
    if (v->help)
        help_overlay(b, v->help);
    return 0;
}
