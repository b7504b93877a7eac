/* tui/render.h - draws one dashboard screen into a cell buffer.
 *
 * What it is: pure functions from data (a simulator snapshot, the GPU
 * panel's state, the UI's state: colouring, marks, cursor, history, ...)
 * to cells. No curses, no threads, no clock of its own (the marks' time is
 * an input): the same inputs give the same cells, so tests assert on the
 * buffer, headless mode prints it and a replay reproduces it. The curses
 * backend (tui/term.c) copies it out.
 *
 * The screen (at least PF_DASH_MIN_W x PF_DASH_MIN_H; smaller buffers get a
 * centred "terminal too small" message instead):
 *   row 0          header: mode, step, running/paused/done, run, status
 *   left column    the KV meter; the pool grid (one cell = N frames,
 *                  coloured by owner, state or age, with flashes) and its
 *                  legend, or in their place the charts (t), the split
 *                  view (2) or the watermark curve (x); the event log or
 *                  the inspector
 *   right column   counters, history over the chart window, parameters
 *   bottom         the GPU panel (naive / paged now / paged ordered at the
 *                  seed's head shape and at a real model's), the key line
 *   overlays       the help (3 pages), a run's end, a start's progress
 * Callers: tui/dash.c (live and headless), tests/test_tui_*.c, bench/.
 */
#ifndef PF_TUI_RENDER_H
#define PF_TUI_RENDER_H

#include <stdint.h>

#include "gpu/gpu.h"
#include "sim/sim.h"
#include "tui/cells.h"
#include "tui/hist.h"
#include "tui/marks.h"

#define PF_DASH_MIN_W 80
#define PF_DASH_MIN_H 24

/* ---- the GPU panel's state (filled by the dashboard's GPU thread) ------- */

typedef enum {
    PF_GPU_PANEL_IDLE = 0,    /* nothing run yet: says "press g"          */
    PF_GPU_PANEL_RUNNING,     /* a background pass is in flight           */
    PF_GPU_PANEL_UNAVAILABLE, /* no CUDA / no device: msg has the reason  */
    PF_GPU_PANEL_ERROR,       /* the layout could not be taken: msg       */
    PF_GPU_PANEL_DONE         /* res[] hold results (or err[] per shape)  */
} pf_gpu_panel_state;

#define PF_GPU_PANEL_SHAPES 2

typedef struct {
    const char *name;     /* "seed: 1 head, D=64, fp32" */
    pf_gpu_head_shape hs;
} pf_gpu_panel_shape;

/* The two head shapes the panel runs: the seed's (1 head, D=64, fp32) and a
 * real model's (Llama-3-8B: GQA 32/8, D=128, bf16). */
extern const pf_gpu_panel_shape pf_gpu_panel_shapes[PF_GPU_PANEL_SHAPES];

typedef struct {
    int state;              /* pf_gpu_panel_state                         */
    char msg[200];          /* reason (unavailable, error)                */
    int64_t step;           /* simulator step of the layout               */
    int nseqs, nframes;     /* sequences and frames in that layout         */
    int ok[PF_GPU_PANEL_SHAPES];          /* 1: res valid, 0: err says why */
    char err[PF_GPU_PANEL_SHAPES][120];
    pf_gpu_pass_result res[PF_GPU_PANEL_SHAPES];
} pf_gpu_panel;

/* ---- what one screen shows ------------------------------------------------ */

/* The watermark sweep's results (tui/sweep.c fills it; key x). */
#define PF_SWEEP_POINTS 12
enum { PF_SWEEP_PENDING = 0, PF_SWEEP_RUNNING, PF_SWEEP_DONE, PF_SWEEP_FAILED };
typedef struct {
    int n;                            /* points                          */
    double wm[PF_SWEEP_POINTS];       /* watermarks, ascending           */
    double tput[PF_SWEEP_POINTS];     /* output tokens per second        */
    long long preempt[PF_SWEEP_POINTS];
    int state[PF_SWEEP_POINTS];       /* PF_SWEEP_*                      */
    double naive_tput;                /* the baseline, 0: unknown        */
    double current;                   /* the live watermark when started */
} pf_sweep_view;

/* What colour means on the grid (key c cycles). */
typedef enum {
    PF_COLORING_OWNER = 0, /* the owning sequence (stable per id)          */
    PF_COLORING_STATE,     /* the owner's state: running, stalled, ...     */
    PF_COLORING_AGE,       /* steps since the owner's (re)admission        */
    PF_COLORING_COUNT
} pf_coloring;

extern const char *const pf_coloring_names[PF_COLORING_COUNT + 1]; /* NULL-ended: a flag's choices */

/* Age buckets of PF_COLORING_AGE, in simulated seconds since the owner was
 * first scheduled: [0, 1), [1, 4), [4, 16), [16, 64), 64+. A factor of 4
 * apart: under the default cost model (Llama-3-8B on an H200) a decode step
 * takes 5-10 ms, so 1 s is a short answer's whole life and 64 s is past the
 * end-to-end p99 of the default run (about 20 s); the seed's 32..2048-token
 * lengths fall across the middle buckets. */
int pf_render_age_bucket(double age_s);

#define PF_HELP_PAGES 3

typedef struct {
    const pf_sim_snapshot *snap; /* NULL before the first snapshot          */
    const pf_gpu_panel *gpu;     /* NULL: drawn as idle                     */
    int ascii;                   /* ASCII glyphs instead of UTF-8           */
    int help;                    /* 0, or the help page shown (1..PF_HELP_PAGES) */
    const char *status;          /* last status message, may be NULL        */
    double fps, render_ms;       /* UI figures shown on the key line; 0: hidden */
    /* added for issue 12 (all zero: the screen as before): */
    int coloring;                /* pf_coloring                             */
    const pf_marks *marks;       /* flashes (preempted, admitted), may be NULL */
    double now;                  /* the marks' clock, seconds               */
    int cursor;                  /* selected grid cell + 1; 0: no cursor    */
    int32_t inspect;             /* sequence id + 1 in the inspector; 0: none */
    const pf_hist *hist;         /* the long history, may be NULL (then the
                                    snapshot's last 256 steps)               */
    double window_s;             /* chart window, simulated seconds; 0: the
                                    default (PF_CHART_DEFAULT_WINDOW_S)      */
    int charts;                  /* 1: charts in the grid's place (key t)   */
    int run_no;                  /* the run on screen (1, 2...); 0: not shown */
    int run_ended;               /* it ended (the simulator holds the end) */
    const pf_sim_stats *final;   /* its final figures when ended            */
    int loop;                    /* --loop: the next run starts by itself   */
    const char *starting;        /* non-NULL: a start in progress, this says what */
    const pf_sim_snapshot *split_naive; /* split view (key 2): the naive side;
                                    snap is then the paged side             */
    const pf_sweep_view *sweep;  /* non-NULL: the watermark curve in the grid's place */
    int no_color;                /* NO_COLOR / --no-color: every colouring
                                    also tells its classes apart by glyph
                                    (owner letters, age digits), since the
                                    colour is not there to do it            */
} pf_dash_view;

/* Chart windows in simulated seconds, zoomed by 2x between the two ends.
 * The default, 8 s, is about 1000 steps of the default cost model and a
 * third of the default 512-job run (21 s): the thrash at the start and the
 * recovery after it both fit. The longest, 4096 s, is past what the
 * history's 65536 steps hold at 5-10 ms a step. */
#define PF_CHART_MIN_WINDOW_S 0.25
#define PF_CHART_DEFAULT_WINDOW_S 8.0
#define PF_CHART_MAX_WINDOW_S 4096.0
double pf_render_window_zoom(double window_s, int out);

/* One chart: series k of h over the last window_s simulated seconds, in
 * the rectangle (x, y, w, rows >= 3): a title row, rows-2 rows of bars with
 * the scale in a 7-column gutter, and a time axis in seconds. Counts
 * (tokens, preemptions) are drawn per second, levels as their time-weighted
 * mean per column (pf_hist_resample). Returns the scale's top value (the
 * largest column rounded up to 1, 2 or 5 x 10^k; > 0). */
double pf_render_chart(pf_cells *b, int x, int y, int w, int rows, const pf_hist *h, int k,
                       double window_s, const pf_dash_view *v, const char *name, uint8_t col,
                       double mul);

/* Where the grid went and at what scale; for tests and the legend. */
typedef struct {
    int x, y, w, h;          /* the grid's rectangle                         */
    int frames_per_cell;     /* N >= 1                                       */
    int cells;               /* cells used: ceil(nframes / N)                */
    int reserve_frames;      /* ceil(watermark * nframes)                    */
    int reserve_cells;       /* the last reserve_cells cells are marked      */
    int shared_frames;       /* frames in the shared state (legend shows it) */
    int flashes;             /* cells drawn with a preemption flash          */
    int admits;              /* cells drawn with an admission mark           */
    int cached_frames;       /* frames only the prefix cache keeps           */
} pf_grid_info;

/* Glyph kinds of a grid cell. The first six are the frame's own state; the
 * next three are the owner's state where it is not plain running (the
 * state colouring draws them, so that stalled, prefilling and recomputing
 * differ in shape too, not only in colour). Every glyph differs from every
 * other in both sets, UTF-8 and ASCII. */
typedef enum {
    PF_GLYPH_USED = 0, /* holds tokens (running, in the state colouring) */
    PF_GLYPH_RESERVED, /* naive: reserved, no token yet (the waste)   */
    PF_GLYPH_SHARED,   /* held by more than one sequence (prefix)     */
    PF_GLYPH_SWAPPED,
    PF_GLYPH_FREE,
    PF_GLYPH_RESERVE,  /* free, inside the watermark's reserve        */
    PF_GLYPH_CACHED,   /* no holder; the prefix cache keeps it (free) */
    PF_GLYPH_STALLED,  /* owner stalled on a page fault               */
    PF_GLYPH_PREFILL,  /* owner computing its prompt                  */
    PF_GLYPH_RECOMPUTE,/* owner recomputing after a preemption        */
    PF_GLYPH_COUNT
} pf_glyph_kind;

uint32_t pf_render_glyph(pf_glyph_kind k, int ascii);

/* The stable colour of a sequence: id * 7 mod PF_OWNER_COLORS (7 is prime
 * to 24), so any PF_OWNER_COLORS consecutive ids get distinct colours, and
 * any 6 consecutive ids stay distinct on an 8-colour terminal. */
uint8_t pf_render_owner_color(int32_t owner);

/* Without colour (pf_dash_view.no_color) the owner colouring draws a used
 * frame as its owner's letter: a-z, the same id * 7 rule over 26, so
 * neighbouring ids differ. */
uint32_t pf_render_owner_letter(int32_t owner);

/* Draw the pool grid of snap into the rectangle (x, y, w, h). Every frame
 * lands in exactly one cell; with more frames than cells, N frames share a
 * cell, which shows their dominant state and, within it, the majority
 * owner. info (may be NULL) receives the geometry. */
void pf_render_grid(pf_cells *b, int x, int y, int w, int h, const pf_sim_snapshot *snap,
                    int ascii, pf_grid_info *info);

/* The same with a view's colouring, marks, cursor and inspected sequence
 * (pf_render_grid is this with v = {.ascii = ascii}). */
void pf_render_grid_view(pf_cells *b, int x, int y, int w, int h, const pf_dash_view *v,
                         pf_grid_info *info);

/* The grid cell under the screen position (sx, sy), or -1. */
int pf_render_grid_hit(const pf_grid_info *gi, int sx, int sy);

/* The owner of the majority of the frames of grid cell c (-1: none). */
int32_t pf_render_cell_owner(const pf_sim_snapshot *s, const pf_grid_info *gi, int c);

/* The key a click at column x of the key line (screen width w) stands for,
 * or 0 when x falls between entries. */
int pf_render_keybar_key(int w, int x);

/* Format v for a narrow column: exact below 100000, else three significant
 * digits and k, M or G (4.19M), never cut mid-digit. */
void pf_render_fmt_count(char *out, size_t len, double v);

/* Draw the whole screen (clears the buffer first). grid (may be NULL)
 * receives the grid's geometry; its frames_per_cell is 0 when the screen
 * was too small or no snapshot was given. Returns 1 when the buffer was too
 * small and got the message instead, 0 otherwise. */
int pf_render_screen(pf_cells *b, const pf_dash_view *v, pf_grid_info *grid);

#endif
