/* tui/look.h - how the screen looks: the flags the dashboard and replay share.
 *
 * What it is: the five choices of look (--ascii, --no-color, --coloring,
 * --charts, --window), their option rows, the environment's say in them
 * (NO_COLOR, the locale's character set) and their copy into a view. The
 * dashboard and `pagefault replay` draw the same screens, so they take the
 * same flags with the same words and ranges from here.
 *
 * Contract: pf_look_default before parsing; pf_look_opts writes
 * PF_LOOK_NOPTS rows that point into the look (it must outlive the parse);
 * pf_look_settle once after parsing (it sets LC_CTYPE from the environment,
 * so the caller's main thread, before any other thread starts; numbers stay
 * C numbers).
 * Callers: tui/dash.c, tui/replay.c.
 */
#ifndef PF_TUI_LOOK_H
#define PF_TUI_LOOK_H

#include "tui/cli.h"
#include "tui/render.h"

typedef struct {
    int ascii;     /* ASCII glyphs instead of UTF-8             */
    int no_color;  /* --no-color, or NO_COLOR set               */
    int coloring;  /* pf_coloring: what the grid's colour means */
    int charts;    /* start with the charts in the grid's place */
    double window; /* chart window, simulated seconds           */
} pf_dash_look;

#define PF_LOOK_NOPTS 5

void pf_look_default(pf_dash_look *l);

/* The option rows, written to rows[0..PF_LOOK_NOPTS-1] (no {0} end). */
void pf_look_opts(pf_dash_look *l, pf_opt *rows);

/* After parsing: NO_COLOR (https://no-color.org: set and non-empty) turns
 * colour off; ASCII unless the locale's character set is UTF-8. */
void pf_look_settle(pf_dash_look *l);

/* The look's fields of a view (the rest of *v is left as it is). */
void pf_look_view(const pf_dash_look *l, pf_dash_view *v);

#endif
