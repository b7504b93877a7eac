/* tui/hist.c - the dashboard's long history in simulated time (see hist.h). */
#include "tui/hist.h"

#include <math.h>
#include <stdlib.h>

#define PF_HIST_MAX_BINS 1024

static int ensure(pf_hist *h)
{
    if (h->v[0])
        return 0;
    for (int k = 0; k < PF_HIST_SERIES; k++) {
        h->v[k] = calloc(PF_HIST_CAP, sizeof *h->v[k]);
        h->cum[k] = calloc(PF_HIST_CAP, sizeof *h->cum[k]);
        if (!h->v[k] || !h->cum[k]) {
            pf_hist_free(h);
            return -1;
        }
    }
    h->t = calloc(PF_HIST_CAP, sizeof *h->t);
    h->ft_t = calloc(PF_HIST_FT_CAP, sizeof *h->ft_t);
    h->ft_v = calloc(PF_HIST_FT_CAP, sizeof *h->ft_v);
    h->ft_tmp = malloc(PF_HIST_FT_EXACT * sizeof *h->ft_tmp);
    if (!h->t || !h->ft_t || !h->ft_v || !h->ft_tmp) {
        pf_hist_free(h);
        return -1;
    }
    pf_hist_clear(h);
    return 0;
}

double pf_hist_now(const pf_hist *h)
{
    return h->t && h->n > 0 ? pf_hist_time(h, h->n - 1) : 0.0;
}

int pf_hist_is_rate(int series)
{
    return series == PF_HIST_TOKENS || series == PF_HIST_PREEMPT || series == PF_HIST_FIRSTS ||
           series == PF_HIST_TTFT_SUM;
}

static inline double cum_at(const pf_hist *h, int k, int i)
{
    return h->cum[k][(unsigned)(h->head + i) & (PF_HIST_CAP - 1)];
}

/* What a step adds to series k's integral over its dur seconds: a count
 * itself, a level its value x the time it held. */
static double step_area(int k, float v, double dur)
{
    return pf_hist_is_rate(k) ? (double)v : (double)v * (dur > 0 ? dur : 0);
}

int pf_hist_push(pf_hist *h, const float sample[PF_HIST_SERIES], double t)
{
    if (ensure(h) != 0)
        return -1;
    if (h->n > 0 && t < pf_hist_now(h))
        pf_hist_clear(h); /* time went back: a new run */
    if (h->n == PF_HIST_CAP) { /* the oldest goes: its end starts the rest */
        h->t0 = h->t[h->head];
        for (int k = 0; k < PF_HIST_SERIES; k++)
            h->cum0[k] = h->cum[k][h->head];
        h->t0_guessed = 0;
        h->head = (h->head + 1) % PF_HIST_CAP;
        h->n--;
    }
    if (h->n == 0) { /* a first step: its start is not known yet */
        h->t0 = t;
        for (int k = 0; k < PF_HIST_SERIES; k++)
            h->cum0[k] = 0;
        h->t0_guessed = 1;
    } else if (h->n == 1 && h->t0_guessed) {
        /* the second step: the first is taken as long as this one */
        int f = h->head;
        double d = t - h->t[f];
        h->t0 = h->t[f] - d;
        for (int k = 0; k < PF_HIST_SERIES; k++)
            h->cum[k][f] = h->cum0[k] + step_area(k, h->v[k][f], d);
        h->t0_guessed = 0;
    }
    double prev_t = h->n ? pf_hist_time(h, h->n - 1) : h->t0;
    int at = (h->head + h->n) % PF_HIST_CAP;
    for (int k = 0; k < PF_HIST_SERIES; k++) {
        double prev = h->n ? cum_at(h, k, h->n - 1) : h->cum0[k];
        h->v[k][at] = sample[k];
        h->cum[k][at] = prev + step_area(k, sample[k], t - prev_t);
    }
    h->t[at] = t;
    h->n++;
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
                                     s->hist_usage[i],  s->hist_waiting[i], ttft,
                                     s->hist_firsts[i], s->hist_ttft_sum[i]};
        if (pf_hist_push(h, smp, s->hist_time[i]) != 0)
            return -1;
        h->next_step = step + 1;
    }
    /* the first tokens this snapshot has and the history has not */
    for (int i = 0; i < s->nft; i++) {
        int64_t idx = s->ft_first + i;
        if (idx < h->ft_next)
            continue;
        pf_hist_push_first(h, s->ft[i].t, s->ft[i].ttft);
        h->ft_next = idx + 1;
    }
    return 0;
}

int pf_hist_push_first(pf_hist *h, double t, float ttft)
{
    if (ensure(h) != 0)
        return -1;
    if (h->ft_n > 0 && t < h->ft_t[(h->ft_head + h->ft_n - 1) % PF_HIST_FT_CAP])
        return 0; /* out of time order: not from this run */
    int at = (h->ft_head + h->ft_n) % PF_HIST_FT_CAP;
    if (h->ft_n == PF_HIST_FT_CAP)
        h->ft_head = (h->ft_head + 1) % PF_HIST_FT_CAP;
    else
        h->ft_n++;
    h->ft_t[at] = t;
    h->ft_v[at] = ttft;
    return 0;
}

/* The first first token at or after time t (ft_n when none). */
static int ft_at_or_after(const pf_hist *h, double t)
{
    int lo = 0, hi = h->ft_n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (h->ft_t[(h->ft_head + mid) % PF_HIST_FT_CAP] >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Nearest-rank quantile q of the TTFTs of first tokens [a, b) of the ring:
 * the ceil(q n)-th smallest, by quickselect on a copy of at most
 * PF_HIST_FT_EXACT of them (every k-th when there are more: a bin over a
 * long window costs the same as a short one). -1 when the range is empty. */
static double ft_quantile(const pf_hist *h, int a, int b, double q, float *tmp)
{
    int n = b - a;
    if (n <= 0)
        return -1;
    int stride = n > PF_HIST_FT_EXACT ? (n + PF_HIST_FT_EXACT - 1) / PF_HIST_FT_EXACT : 1;
    int m = 0;
    for (int i = a; i < b; i += stride)
        tmp[m++] = h->ft_v[(h->ft_head + i) % PF_HIST_FT_CAP];
    int k = (int)ceil(q * m) - 1;
    if (k < 0)
        k = 0;
    if (k >= m)
        k = m - 1;
    int lo = 0, hi = m - 1;
    while (lo < hi) { /* Hoare's quickselect: tmp[k] ends in its sorted place */
        float pivot = tmp[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (tmp[i] < pivot)
                i++;
            while (tmp[j] > pivot)
                j--;
            if (i <= j) {
                float x = tmp[i];
                tmp[i++] = tmp[j];
                tmp[j--] = x;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return tmp[k];
}

/* PF_HIST_TTFT_P99W: per bin, the p99 of the TTFTs of the first tokens that
 * came in it. */
static double resample_ttft_p99(const pf_hist *h, double t_end, double span, int ncols,
                                double *out, double *mean)
{
    float *tmp = h->ft_tmp;
    const double b0 = t_end - span, bw = span / ncols;
    int any = 0;
    for (int c = 0; c < ncols; c++) {
        int a = ft_at_or_after(h, b0 + c * bw);
        int b = c == ncols - 1 ? ft_at_or_after(h, nextafter(t_end, INFINITY))
                               : ft_at_or_after(h, b0 + (c + 1) * bw);
        out[c] = ft_quantile(h, a, b, 0.99, tmp);
        any |= out[c] >= 0;
    }
    if (mean) {
        int a = ft_at_or_after(h, b0), b = ft_at_or_after(h, nextafter(t_end, INFINITY));
        double v = ft_quantile(h, a, b, 0.99, tmp);
        *mean = v >= 0 ? v : 0;
    }
    return any ? span : 0;
}

/* The first sample whose end time is at or after t (n when none): times
 * never decrease within the ring (pf_hist_push clears on a step back). */
static int first_at_or_after(const pf_hist *h, double t)
{
    int lo = 0, hi = h->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (pf_hist_time(h, mid) >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Series k's integral from the start of the history to time t, t within
 * [t0, now]: the integral at the end of the step before, plus the part of
 * this step's area up to t (a step spreads uniformly over its interval). */
static double integral_to(const pf_hist *h, int k, double t)
{
    if (t <= h->t0)
        return h->cum0[k];
    int i = first_at_or_after(h, t);
    if (i >= h->n)
        return cum_at(h, k, h->n - 1);
    double e = pf_hist_time(h, i), s = i ? pf_hist_time(h, i - 1) : h->t0;
    double c1 = cum_at(h, k, i), c0 = i ? cum_at(h, k, i - 1) : h->cum0[k];
    if (!(e - s > 0))
        return c1;
    return c0 + (c1 - c0) * (t - s) / (e - s);
}

/* Resampling. Bin c covers [b0 + c*bw, b0 + (c+1)*bw); its value is the
 * series' integral over the part of the bin the history covers, [t0, now],
 * over the length of that part: for a count, per second; for a level, its
 * time-weighted mean. With the running integrals this is two lookups per
 * bin edge, each a binary search: O(ncols x log n), however many steps
 * the span holds (a 65536-step window used to cost a pass over every step
 * for every chart). */
/* The derived mean TTFT: per bin, the TTFTs summed over the bin divided
 * by the first tokens in it (both counts, so both resample to per-second
 * rates over the same covered time and the ratio is exact). */
static double resample_ttft_mean(const pf_hist *h, double t_end, double span, int ncols,
                                 double *out, double *mean)
{
    double num[PF_HIST_MAX_BINS], den[PF_HIST_MAX_BINS], mn = 0, md = 0;
    double cov = pf_hist_resample(h, PF_HIST_TTFT_SUM, t_end, span, ncols, num, &mn);
    pf_hist_resample(h, PF_HIST_FIRSTS, t_end, span, ncols, den, &md);
    for (int c = 0; c < ncols && c < PF_HIST_MAX_BINS; c++)
        out[c] = num[c] >= 0 && den[c] > 0 ? num[c] / den[c] : -1;
    if (mean)
        *mean = md > 0 ? mn / md : 0;
    return cov;
}

double pf_hist_resample(const pf_hist *h, int series, double t_end, double span, int ncols,
                        double *out, double *mean)
{
    if (series == PF_HIST_TTFT_MEAN)
        return resample_ttft_mean(h, t_end, span, ncols, out, mean);
    if (series == PF_HIST_TTFT_P99W) {
        if (ncols > PF_HIST_MAX_BINS)
            ncols = PF_HIST_MAX_BINS;
        if (!h->ft_t || !(span > 0) || ncols < 1) {
            for (int c = 0; c < ncols; c++)
                out[c] = -1;
            if (mean)
                *mean = 0;
            return 0;
        }
        return resample_ttft_p99(h, t_end, span, ncols, out, mean);
    }
    if (mean)
        *mean = 0;
    if (ncols < 1)
        return 0;
    if (ncols > PF_HIST_MAX_BINS)
        ncols = PF_HIST_MAX_BINS;
    if (!h->v[0] || !h->t || h->n == 0 || !(span > 0) || series < 0 || series >= PF_HIST_SERIES) {
        for (int c = 0; c < ncols; c++)
            out[c] = -1;
        return 0;
    }
    const double lo_cov = h->t0, hi_cov = pf_hist_now(h);
    const double b0 = t_end - span, bw = span / ncols;
    double x_prev = 0, f_prev = 0, covered = 0;
    double first_x = 0, first_f = 0;
    for (int c = 0; c <= ncols; c++) {
        double x = c == ncols ? t_end : b0 + c * bw;
        if (x < lo_cov)
            x = lo_cov;
        if (x > hi_cov)
            x = hi_cov;
        double f = integral_to(h, series, x);
        if (c == 0) {
            first_x = x;
            first_f = f;
        } else {
            double len = x - x_prev;
            out[c - 1] = len > 0 ? (f - f_prev) / len : -1;
            if (len > 0)
                covered += len;
        }
        x_prev = x;
        f_prev = f;
    }
    if (mean && covered > 0)
        *mean = (f_prev - first_f) / (x_prev - first_x);
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
    h->ft_head = h->ft_n = 0;
    h->ft_next = 0;
    h->next_step = -1;
    h->t0 = 0;
    h->t0_guessed = 0;
    for (int k = 0; k < PF_HIST_SERIES; k++)
        h->cum0[k] = 0;
}

void pf_hist_free(pf_hist *h)
{
    for (int k = 0; k < PF_HIST_SERIES; k++) {
        free(h->v[k]);
        free(h->cum[k]);
        h->v[k] = NULL;
        h->cum[k] = NULL;
    }
    free(h->t);
    free(h->ft_t);
    free(h->ft_v);
    free(h->ft_tmp);
    h->ft_tmp = NULL;
    h->t = NULL;
    h->ft_t = NULL;
    h->ft_v = NULL;
    pf_hist_clear(h);
}
