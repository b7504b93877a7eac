/* tui/cells.h - the dashboard's cell buffer: the screen as data.
 *
 * What it is: a W x H grid of cells, each one Unicode codepoint (always one
 * terminal column wide), a logical colour index (pf_col) and attribute bits.
 * The renderer (tui/render.c) draws a whole screen into it; the curses
 * backend (tui/term.c) only copies it to the terminal, and headless mode and
 * the tests read it back as text. Nothing here knows about curses.
 *
 * Contract: every write is clipped to the buffer (out-of-range positions are
 * ignored, never an error); text is UTF-8 in, invalid bytes become '?'.
 * A buffer owns its cell array: pf_cells_resize allocates, pf_cells_free
 * releases. Not thread-safe: one buffer belongs to one thread.
 * Callers: tui/render.c, tui/term.c, tui/dash.c, tests/test_tui_*.c, bench.
 */
#ifndef PF_TUI_CELLS_H
#define PF_TUI_CELLS_H

#include <stddef.h>
#include <stdint.h>

/* Logical colours. The backend maps them to curses pairs according to what
 * the terminal offers (256 colours, 8 colours, or none). */
enum {
    PF_COL_DEFAULT = 0,
    PF_COL_TITLE,   /* panel titles                               */
    PF_COL_HEADER,  /* the top bar                                */
    PF_COL_DIM,     /* free frames, secondary text                */
    PF_COL_GOOD,    /* admit, finish, good figures                */
    PF_COL_WARN,    /* stall, swap, paused                        */
    PF_COL_BAD,     /* preempt, ping-pong, errors                 */
    PF_COL_RESERVE, /* the watermark reserve                      */
    PF_COL_KEY,     /* key names in the help line                 */
    /* the grid coloured by state (key c) and its flashes */
    PF_COL_RUNNING,   /* frames of a decoding sequence            */
    PF_COL_STALLED,   /* frames of a sequence stalled on a fault  */
    PF_COL_RECOMPUTE, /* frames being rebuilt after a preemption  */
    PF_COL_SWAPPED,   /* frames copying to/from host swap         */
    PF_COL_SHARED,    /* frames with a reference count above one  */
    PF_COL_FLASH,     /* taken from a preemption victim just now  */
    PF_COL_ADMIT,     /* taken by a newly admitted sequence       */
    PF_COL_OWNER0 = 16 /* PF_OWNER_COLORS owner colours follow     */
};
#define PF_OWNER_COLORS 24
/* the grid coloured by age (key c): PF_AGE_COLORS buckets, young to old */
#define PF_COL_AGE0 (PF_COL_OWNER0 + PF_OWNER_COLORS)
#define PF_AGE_COLORS 5
/* added with the rebuilt simulator (issue 9's states), after the age
 * colours so that the indices above stay put */
#define PF_COL_PREFILL (PF_COL_AGE0 + PF_AGE_COLORS)  /* owner computing its prompt   */
#define PF_COL_CACHED (PF_COL_PREFILL + 1) /* kept by the prefix cache, no holder */
#define PF_COL_COUNT (PF_COL_CACHED + 1)

/* Attribute bits. */
enum {
    PF_ATTR_BOLD = 1,
    PF_ATTR_DIM = 2,
    PF_ATTR_REVERSE = 4,
    PF_ATTR_UNDERLINE = 8
};

typedef struct {
    uint32_t ch;   /* Unicode codepoint, one column wide */
    uint8_t color; /* PF_COL_*                           */
    uint8_t attr;  /* PF_ATTR_* bits                     */
} pf_cell;

typedef struct {
    int w, h;
    pf_cell *cells; /* [h][w], owned */
} pf_cells;

/* (Re)size to w x h (each >= 1) and clear. Returns 0, or -1 on bad size or
 * allocation failure (the old contents are kept then). */
int pf_cells_resize(pf_cells *b, int w, int h);
void pf_cells_free(pf_cells *b);

/* Every cell becomes a blank of the default colour. */
void pf_cells_clear(pf_cells *b);

/* One cell; NULL when out of range. */
const pf_cell *pf_cells_at(const pf_cells *b, int x, int y);

void pf_cells_put(pf_cells *b, int x, int y, uint32_t ch, uint8_t color, uint8_t attr);

/* Fill the rectangle with one character. */
void pf_cells_fill(pf_cells *b, int x, int y, int w, int h, uint32_t ch, uint8_t color,
                   uint8_t attr);

/* UTF-8 text at (x, y), at most maxw columns (maxw < 0: to the right edge).
 * Returns the columns written. */
int pf_cells_text(pf_cells *b, int x, int y, int maxw, uint8_t color, uint8_t attr,
                  const char *utf8);

/* printf-style pf_cells_text. */
int pf_cells_printf(pf_cells *b, int x, int y, int maxw, uint8_t color, uint8_t attr,
                    const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Row y as UTF-8 text, trailing blanks trimmed, NUL-terminated. Returns the length, or -1 if y is out of
 * range or cap is too small (out is then truncated but terminated). */
int pf_cells_row_text(const pf_cells *b, int y, char *out, size_t cap);

/* Find UTF-8 text on one row; on success sets *x, *y (may be NULL) and
 * returns 1, else 0. For tests and the headless dump. */
int pf_cells_find(const pf_cells *b, const char *utf8, int *x, int *y);

/* Decode one UTF-8 codepoint from s; returns the bytes used (>= 1 unless *s
 * is NUL, then 0). Invalid sequences give '?' and consume one byte. */
int pf_utf8_decode(const char *s, uint32_t *cp);

/* Encode cp into out (>= 4 bytes); returns the bytes written. */
int pf_utf8_encode(uint32_t cp, char *out);

#endif
