/* tui/hist.c - the dashboard's long per-step history (see hist.h). */
#include "tui/hist.h"

#include <stdlib.h>

static int ensure(pf_hist *h)
{
    if (h->v[0])
        return 0;
    for (int k = 0; k < PF_HIST_SERIES; k++) {
        h->v[k] = calloc(PF_HIST_CAP, sizeof *h->v[k]);
        if (!h->v[k]) {
            pf_hist_free(h);
            return -1;
        }
    }
    h->head = h->n = 0;
    h->next_step = -1;
    return 0;
}

int pf_hist_push(pf_hist *h, const float sample[PF_HIST_SERIES])
{
    if (ensure(h) != 0)
        return -1;
    int at = (h->head + h->n) % PF_HIST_CAP;
    if (h->n == PF_HIST_CAP)
        h->head = (h->head + 1) % PF_HIST_CAP;
    else
        h->n++;
    for (int k = 0; k < PF_HIST_SERIES; k++)
        h->v[k][at] = sample[k];
    return 0;
}

int pf_hist_update(pf_hist *h, const pf_sim_snapshot *s)
{
    if (ensure(h) != 0)
        return -1;
    int n = s->nhistory < 0 ? 0 : s->nhistory > PF_SIM_HISTORY ? PF_SIM_HISTORY : s->nhistory;
    int64_t end = s->hist_step0 + n; /* one past the newest sample's step */
    if (h->next_step >= 0 && end < h->next_step)
        pf_hist_clear(h); /* the run started again */
    for (int i = 0; i < n; i++) {
        int64_t step = s->hist_step0 + i;
        if (h->next_step >= 0 && step < h->next_step)
            continue; /* seen already */
        float smp[PF_HIST_SERIES] = {s->hist_decoding[i], s->hist_stalled[i], s->hist_preempt[i],
                                     s->hist_usage[i], (float)s->stats.waiting};
        pf_hist_push(h, smp);
        h->next_step = step + 1;
    }
    return 0;
}

double pf_hist_mean(const pf_hist *h, int series, int window)
{
    if (!h->v[0] || h->n == 0 || window < 1)
        return 0.0;
    int k = window < h->n ? window : h->n;
    double sum = 0;
    for (int i = h->n - k; i < h->n; i++)
        sum += pf_hist_at(h, series, i);
    return sum / k;
}

void pf_hist_clear(pf_hist *h)
{
    h->head = h->n = 0;
    h->next_step = -1;
}

void pf_hist_free(pf_hist *h)
{
    for (int k = 0; k < PF_HIST_SERIES; k++) {
        free(h->v[k]);
        h->v[k] = NULL;
    }
    h->head = h->n = 0;
    h->next_step = -1;
}
