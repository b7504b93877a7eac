/* tui/cmdq.c - an unbounded FIFO of commands (see cmdq.h). */
#include "tui/cmdq.h"

#include <stdlib.h>

int pf_cmdq_push(pf_cmdq *q, int cmd)
{
    if (q->n == q->cap) {
        /* 64 covers any human burst; doubling keeps appends O(1) amortised */
        int cap = q->cap ? q->cap * 2 : 64;
        if (cap < q->cap) /* int overflow: billions of queued keys */
            return -1;
        int *v = realloc(q->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n++] = cmd;
    return 0;
}

int pf_cmdq_take(pf_cmdq *q, pf_cmdq *out)
{
    pf_cmdq t = *out;
    *out = *q;
    t.n = 0;
    *q = t; /* q reuses out's old array: no allocation in the steady state */
    return out->n;
}

void pf_cmdq_free(pf_cmdq *q)
{
    free(q->v);
    q->v = NULL;
    q->n = q->cap = 0;
}
