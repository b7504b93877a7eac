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
    double tput[PF_SWEEP_POINTS];     /* tokens per step                 */
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

extern const char *const pf_coloring_names[PF_COLORING_COUNT];

/* Age buckets of PF_COLORING_AGE: [0, 32), [32, 128), [128, 512),
 * [512, 2048), 2048+ steps; a factor of 4 apart, spanning the seed's
 * lengths (32 to 2048 tokens, one token per step). */
int pf_render_age_bucket(int64_t age_steps);

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
    int window;                  /* chart window in steps; 0: 256           */
    int charts;                  /* 1: charts in the grid's place (key t)   */
    const char *time_unit;       /* the time axis' unit; NULL: "steps"      */
    double unit_per_step;        /* time units per step; 0: 1 (steps). The
                                    simulator counts steps today; when it has
                                    seconds, pass "s" and the step length.  */
    int run_no;                  /* the run on screen (1, 2...); 0: not shown */
    int run_ended, run_exact;    /* it ended; final is exact                */
    const pf_sim_stats *final;   /* its final figures when ended            */
    int loop;                    /* --loop: the next run starts by itself   */
    int finishing;               /* the dashboard steps the run's last jobs:
                                    shown as running though the simulator is paused */
    const char *starting;        /* non-NULL: a start in progress, this says what */
    const pf_sim_snapshot *split_naive; /* split view (key 2): the naive side;
                                    snap is then the paged side             */
    const pf_sweep_view *sweep;  /* non-NULL: the watermark curve in the grid's place */
} pf_dash_view;

/* Chart windows: PF_CHART_MIN_WINDOW .. PF_HIST_CAP steps, zoomed by 2x. */
#define PF_CHART_MIN_WINDOW 16
#define PF_CHART_DEFAULT_WINDOW 256
int pf_render_window_zoom(int window, int out);

/* One chart: the last `window` samples of series k of h in the rectangle
 * (x, y, w, rows >= 3): a title row, rows-2 rows of bars with the scale in
 * a 7-column gutter, and a time axis. Returns the scale's top value (the
 * series' largest visible value rounded up to 1, 2 or 5 x 10^k; > 0). */
double pf_render_chart(pf_cells *b, int x, int y, int w, int rows, const pf_hist *h, int k,
                       int window, const pf_dash_view *v, const char *name, uint8_t col,
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
} pf_grid_info;

/* Glyph kinds of a grid cell. */
typedef enum {
    PF_GLYPH_USED = 0,
    PF_GLYPH_RESERVED, /* naive: reserved, no token yet (the waste)   */
    PF_GLYPH_SHARED,
    PF_GLYPH_SWAPPED,
    PF_GLYPH_FREE,
    PF_GLYPH_RESERVE,  /* free, inside the watermark's reserve        */
    PF_GLYPH_COUNT
} pf_glyph_kind;

uint32_t pf_render_glyph(pf_glyph_kind k, int ascii);

/* The stable colour of a sequence: id * 7 mod PF_OWNER_COLORS (7 is prime
 * to 24), so any PF_OWNER_COLORS consecutive ids get distinct colours, and
 * any 6 consecutive ids stay distinct on an 8-colour terminal. */
uint8_t pf_render_owner_color(int32_t owner);

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
