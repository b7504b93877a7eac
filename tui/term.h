/* tui/term.h - the curses backend of the dashboard.
 *
 * What it is: the only code that talks to the terminal. It opens curses
 * (ncursesw) on the controlling terminal, maps the cell buffer's logical
 * colours onto what the terminal offers (256 colours, 8 colours, or none
 * with NO_COLOR / --no-color), copies a pf_cells buffer to the screen, reads
 * keys with a timeout, and reports resizes.
 *
 * Contract: curses is not thread-safe, so every function here is called
 * from the UI thread only. pf_term_open installs handlers so the terminal is
 * restored on SIGINT, SIGTERM and SIGHUP (they set a flag the UI loop polls,
 * then the loop exits through pf_term_close with status 128 + the signal) and on SIGSEGV, SIGABRT, SIGBUS,
 * SIGFPE (endwin, then the signal is re-raised with its default action).
 * pf_term_close is idempotent and also runs at exit.
 * Callers: tui/dash.c.
 */
#ifndef PF_TUI_TERM_H
#define PF_TUI_TERM_H

#include <stddef.h>

#include "tui/cells.h"

/* Keys beyond plain characters. */
enum {
    PF_TERM_KEY_NONE = -1,
    PF_TERM_KEY_ESC = 27,
    PF_TERM_KEY_RESIZE = 0x110000, /* past the last Unicode codepoint */
    PF_TERM_KEY_F1,
    PF_TERM_KEY_F10,
    PF_TERM_KEY_UP,
    PF_TERM_KEY_DOWN,
    PF_TERM_KEY_LEFT,
    PF_TERM_KEY_RIGHT,
    PF_TERM_KEY_MOUSE /* a button-1 press: pf_term_mouse says where */
};

/* Where the last PF_TERM_KEY_MOUSE happened (column, row). */
void pf_term_mouse(int *x, int *y);

/* Open the terminal. no_color: attributes only. Returns 0, or -1 with a
 * one-line reason in err (not a terminal, unknown TERM...). */
int pf_term_open(int no_color, char *err, size_t errlen);

/* Restore the terminal (endwin). Safe to call twice or when not open. */
void pf_term_close(void);

/* Current size in columns and rows. */
void pf_term_size(int *w, int *h);

/* Copy the buffer to the screen; full: repaint everything (after a resize). */
void pf_term_draw(const pf_cells *b, int full);

/* Wait up to timeout_ms for a key. Returns the character, PF_TERM_KEY_RESIZE,
 * or PF_TERM_KEY_NONE on timeout or signal. */
int pf_term_getkey(int timeout_ms);

/* 0, or the number of the SIGINT, SIGTERM or SIGHUP that arrived (the
 * caller exits with 128 + it, as shells expect). */
int pf_term_quit_requested(void);

/* Colours in use: 0 (none), 8 or 256. */
int pf_term_colors(void);

#endif
