/* tui/cmdq.h - the dashboard's command queue: an unbounded FIFO of ints.
 *
 * What it is: the queue between the UI thread (which appends a command per
 * key press) and the control thread (which takes them all at once and runs
 * them in order). It grows by doubling, so a burst of key presses is never
 * dropped; the only way an append can fail is running out of memory, and
 * then it says so (-1) so the UI can show that the key was refused.
 *
 * Contract: not thread-safe by itself; the bridge calls it under its mutex.
 * pf_cmdq_take moves the whole content out in O(1) (the arrays are
 * swapped), so the lock is held for a pointer swap, not for a copy.
 * Callers: tui/bridge.c, tests/test_tui_render.c.
 */
#ifndef PF_TUI_CMDQ_H
#define PF_TUI_CMDQ_H

typedef struct {
    int *v;  /* [cap], owned */
    int n;   /* commands queued, oldest first */
    int cap;
} pf_cmdq;

/* Append one command. 0, or -1 when memory ran out (the queue is unchanged). */
int pf_cmdq_push(pf_cmdq *q, int cmd);

/* Move every queued command into *out (whose old content is discarded but
 * whose array is reused), leaving q empty. Returns the count. */
int pf_cmdq_take(pf_cmdq *q, pf_cmdq *out);

void pf_cmdq_free(pf_cmdq *q);

#endif
