/* tui/hist.c - the dashboard's long history in simulated time (see hist.h). */
#include "tui/hist.h"

#include <stdlib.h>

#define PF_HIST_MAX_BINS 1024

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
    h->t = calloc(PF_HIST_CAP, sizeof *h->t);
    if (!h->t) {
        pf_hist_free(h);
        return -1;
    }
    h->head = h->n = 0;
    h->next_step = -1;
    return 0;
}

double pf_hist_now(const pf_hist *h)
{
    return h->t && h->n > 0 ? pf_hist_time(h, h->n - 1) : 0.0;
}

int pf_hist_push(pf_hist *h, const float sample[PF_HIST_SERIES], double t)
{
    if (ensure(h) != 0)
        return -1;
    if (h->n > 0 && t < pf_hist_now(h))
        pf_hist_clear(h); /* time went back: a new run */
    int at = (h->head + h->n) % PF_HIST_CAP;
    if (h->n == PF_HIST_CAP)
        h->head = (h->head + 1) % PF_HIST_CAP;
    else
        h->n++;
    for (int k = 0; k < PF_HIST_SERIES; k++)
        h->v[k][at] = sample[k];
    h->t[at] = t;
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
    /* the run's TTFT p99 as this snapshot knows it: every step it brings in
     * gets it (the simulator keeps no per-step latency history) */
    float ttft = (float)s->stats.lat[PF_MET_TTFT].p99;
    for (int i = 0; i < n; i++) {
        int64_t step = s->hist_step0 + i;
        if (h->next_step >= 0 && step < h->next_step)
            continue; /* seen already */
        float smp[PF_HIST_SERIES] = {s->hist_tokens[i], s->hist_stalled[i], s->hist_preempt[i],
                                     s->hist_usage[i],  s->hist_waiting[i], ttft};
        if (pf_hist_push(h, smp, s->hist_time[i]) != 0)
            return -1;
        h->next_step = step + 1;
    }
    return 0;
}

int pf_hist_is_rate(int series) { return series == PF_HIST_TOKENS || series == PF_HIST_PREEMPT; }

/* The first sample whose end time is after t (n when none): times never
 * decrease within the ring (pf_hist_push clears on a step back). */
static int first_after(const pf_hist *h, double t)
{
    int lo = 0, hi = h->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (pf_hist_time(h, mid) > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Resampling. Bin c covers [b0 + c*bw, b0 + (c+1)*bw). Step i spreads its
 * value uniformly over its interval (s, e]: a count as value / (e - s) per
 * second, a level as itself; each bin accumulates value x overlap and the
 * overlap, so the result is the time-weighted mean over the covered part
 * of the bin. One pass over the steps in the span plus one over the bins. */
double pf_hist_resample(const pf_hist *h, int series, double t_end, double span, int ncols,
                        double *out, double *mean)
{
    if (mean)
        *mean = 0;
    if (ncols < 1)
        return 0;
    if (ncols > PF_HIST_MAX_BINS)
        ncols = PF_HIST_MAX_BINS;
    double acc[PF_HIST_MAX_BINS], wt[PF_HIST_MAX_BINS];
    for (int c = 0; c < ncols; c++)
        acc[c] = wt[c] = 0;
    if (!h->v[0] || !h->t || h->n == 0 || !(span > 0) || series < 0 || series >= PF_HIST_SERIES) {
        for (int c = 0; c < ncols; c++)
            out[c] = -1;
        return 0;
    }
    const double b0 = t_end - span, bw = span / ncols, inv_bw = ncols / span;
    const int rate = pf_hist_is_rate(series);
    const float *v = h->v[series];
    const unsigned mask = PF_HIST_CAP - 1;
    double covered = 0;
    int i = first_after(h, b0);
    /* the previous step's end is this one's start */
    double s = i > 0 ? pf_hist_time(h, i - 1)
                     : h->n > 1 ? 2 * pf_hist_time(h, 0) - pf_hist_time(h, 1) /* the oldest kept
                                   step: as long as the one after it */
                                : pf_hist_time(h, 0);
    for (; i < h->n; i++) {
        const unsigned at = (unsigned)(h->head + i) & mask;
        const double e = h->t[at];
        double st = s;
        s = e;
        if (st >= t_end)
            break;
        if (!(e - st > 1e-12)) /* an instant step: a sliver, so it still counts */
            st = e - 1e-12;
        double val = v[at];
        if (rate)
            val /= e - st;
        double lo = st > b0 ? st : b0, hi = e < t_end ? e : t_end;
        int c = (int)((lo - b0) * inv_bw);
        if (c >= ncols)
            c = ncols - 1;
        /* most steps fall inside one bin: no loop */
        double be = b0 + (c + 1) * bw;
        if (hi <= be || c == ncols - 1) {
            double ov = hi - lo;
            if (ov > 0) {
                acc[c] += val * ov;
                wt[c] += ov;
                covered += ov;
            }
            continue;
        }
        for (; c < ncols && lo < hi; c++) {
            be = b0 + (c + 1) * bw;
            double seg_hi = hi < be ? hi : be;
            if (c == ncols - 1)
                seg_hi = hi;
            if (seg_hi < lo) /* rounding put lo past this bin: on to the next */
                seg_hi = lo;
            double ov = seg_hi - lo;
            if (ov > 0) {
                acc[c] += val * ov;
                wt[c] += ov;
                covered += ov;
            }
            lo = seg_hi;
        }
    }
    double total = 0;
    for (int c = 0; c < ncols; c++) {
        out[c] = wt[c] > 0 ? acc[c] / wt[c] : -1;
        total += acc[c];
    }
    if (mean && covered > 0)
        *mean = total / covered;
    return covered;
}

double pf_hist_window(const pf_hist *h, int series, double span)
{
    double v, m;
    pf_hist_resample(h, series, pf_hist_now(h), span, 1, &v, &m);
    return m;
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
    free(h->t);
    h->t = NULL;
    h->head = h->n = 0;
    h->next_step = -1;
}
