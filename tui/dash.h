/* tui/dash.h - the dashboard application's testable pieces.
 *
 * What it is: the part of `pagefault` (no subcommand) between the flags and
 * the screen: options, headless mode, and the key map. The interactive
 * loop itself lives in dash.c (pf_cmd_dash, declared in tui/commands.h).
 *
 * Contract: pf_dash_key maps a key to a command without side effects, so
 * the key table is tested directly; pf_dash_dump writes frames as text
 * to a FILE and never touches a terminal.
 * Callers: tui/dash.c, tests/test_tui_*.c.
 */
#ifndef PF_TUI_DASH_H
#define PF_TUI_DASH_H

#include <stdio.h>

#include "sim/sim.h"
#include "tui/cells.h"

/* Commands the keys send to the simulator (through the control thread). */
typedef enum {
    PF_DASH_CMD_NONE = 0,
    PF_DASH_CMD_WATERMARK_DOWN,
    PF_DASH_CMD_WATERMARK_UP,
    PF_DASH_CMD_WORKERS_DOWN,
    PF_DASH_CMD_WORKERS_UP,
    PF_DASH_CMD_POLICY_NEXT,
    PF_DASH_CMD_PREEMPT_NEXT,
    PF_DASH_CMD_MODE_TOGGLE,
    PF_DASH_CMD_PAUSE_TOGGLE,
    PF_DASH_CMD_STEP,
    PF_DASH_CMD_SLOWER,
    PF_DASH_CMD_FASTER,
    PF_DASH_CMD_RESET,
    /* handled by the UI thread itself */
    PF_DASH_CMD_GPU,
    PF_DASH_CMD_HELP,
    PF_DASH_CMD_QUIT,
    PF_DASH_CMD_COLORING,   /* c: owner / state / age                   */
    PF_DASH_CMD_CLOSE,      /* Esc: close the help or the inspector     */
    PF_DASH_CMD_CURSOR_UP,  /* arrows: move the grid cursor (inspector) */
    PF_DASH_CMD_CURSOR_DOWN,
    PF_DASH_CMD_CURSOR_LEFT,
    PF_DASH_CMD_CURSOR_RIGHT,
    PF_DASH_CMD_INSPECT,    /* i: put the cursor on the grid            */
    PF_DASH_CMD_HELP_NEXT,  /* Tab: next help page (while the help shows) */
    PF_DASH_CMD_CHARTS,     /* t: charts in the grid's place and back   */
    PF_DASH_CMD_ZOOM_IN,    /* <: a shorter chart window                */
    PF_DASH_CMD_ZOOM_OUT,   /* >: a longer chart window                 */
    PF_DASH_CMD_SPLIT,      /* 2: naive beside paged, in lockstep (bridge) */
    PF_DASH_CMD_SWEEP,      /* x: the watermark curve (background sweep) */
    PF_DASH_CMD_WATERMARK_AUTO /* a: the load controller on / off (bridge) */
} pf_dash_cmd;

/* key: a character or a PF_TERM_KEY_* code (tui/term.h). */
pf_dash_cmd pf_dash_key(int key);

/* Move a grid cursor (cell index, -1: none yet) on a grid of `cells` cells
 * `w` wide; the first move puts it in the middle. Clamped to the grid. */
int pf_dash_cursor_move(int cursor, pf_dash_cmd cmd, int cells, int w);

/* The next watermark for a key press: 1% steps below 10%, 5% steps above,
 * clamped to [0, 1] and rounded to the step so repeated presses land on
 * round values. */
double pf_dash_watermark_step(double w, int up);

/* The next sequence cap (max_num_seqs; "workers" in the API): steps of 1
 * below 16, 4 below 64, 16 below 256, then 64; [1, PF_SIM_MAX_SEQS]. vLLM's
 * default is 1024, so the keys must reach it and beyond in few presses. */
int pf_dash_workers_step(int workers, int up);

/* Write the cell buffer as text, one line per row, trailing blanks trimmed. */
void pf_dash_dump(FILE *f, const pf_cells *b);

#endif
