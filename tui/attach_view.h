/* tui/attach_view.h - the screen of `pagefault attach`, drawn into a cell buffer.
 *
 * What it is: one function that draws the attach model (net/attach_model.h)
 * into a pf_cells buffer: a header (endpoints, each rank live or silent,
 * metrics ok or failing), the prefix cache as a grid of display slots
 * coloured by prefix chain, the counters, two charts (KV usage from
 * /metrics and blocks held from the events), and the warnings with the
 * latest warning lines. No curses: tui/cmd_attach.c copies the buffer to the
 * terminal with tui/term.c, and tests read it as text.
 *
 * Contract: any size is drawn without writing outside the buffer; below
 * PF_ATTACH_VIEW_MIN_W x PF_ATTACH_VIEW_MIN_H a one-line "terminal too
 * small" message is drawn instead. Callers: tui/cmd_attach.c, tests.
 */
#ifndef PF_TUI_ATTACH_VIEW_H
#define PF_TUI_ATTACH_VIEW_H

#include "net/attach_model.h"
#include "tui/cells.h"

#define PF_ATTACH_VIEW_MIN_W 72
#define PF_ATTACH_VIEW_MIN_H 20

typedef struct {
    const char *events;  /* the KV-event endpoint, or NULL          */
    const char *metrics; /* the metrics URL, or NULL                */
    int ranks;
    const int *live;     /* ranks entries: 1 live, 0 silent         */
    int metrics_ok;      /* the last poll succeeded                 */
    double elapsed;      /* seconds since attaching                 */
} pf_attach_view_info;

void pf_attach_view_render(pf_cells *b, const pf_attach *m, const pf_attach_view_info *info);

#endif
