/* tui/hist.h - the dashboard's long history: per-step series in simulated
 * time, for the charts.
 *
 * What it is: the simulator keeps only its last PF_SIM_HISTORY (256) steps;
 * the dashboard's charts zoom out to minutes of simulated time, so the UI
 * keeps its own ring of PF_HIST_CAP steps and folds in each snapshot's
 * history (the steps it has not seen yet). Every sample is one simulator
 * step and carries the step's end time in simulated seconds (hist_time);
 * step i covers the interval (t[i-1], t[i]], and steps have different
 * lengths (the cost model times each one), so charts are drawn against
 * time, never against the sample index.
 * Series: output tokens in the step and preemptions in the step (counts:
 * charts show them per second), stalled sequences, KV use (held frames /
 * pool), requests waiting after the step, TTFT p99 (seconds, the run's
 * p99 so far, stats.lat[PF_MET_TTFT].p99, sampled from the snapshot that
 * brought the step in: about 30 times a second live, at every dump
 * headless), and the requests whose first token came in the step with the
 * sum of their TTFTs (counts: a windowed mean TTFT is their ratio,
 * PF_HIST_TTFT_MEAN). Besides the steps, a ring of first tokens (time,
 * TTFT) from the snapshots' ft[] arrays, for the windowed TTFT p99 chart
 * (PF_HIST_TTFT_P99W).
 *
 * Contract: one thread (the UI); a snapshot whose step or time went
 * backwards (reset, mode change) clears the history; steps that fell out of
 * the simulator's ring between two snapshots (more than 256 steps apart)
 * are missing, and the time axis shows the gap as time no step covers.
 * Memory: per step 8 float samples, their 8 running integrals (double)
 * and the time, PF_HIST_CAP steps (6.8 MB), and PF_HIST_FT_CAP first
 * tokens (12 MB, touched as they come), allocated on the first update.
 * Callers: tui/dash.c, tui/replay.c, tui/render.c (reads), tests, bench.
 */
#ifndef PF_TUI_HIST_H
#define PF_TUI_HIST_H

#include <stdint.h>

#include "sim/sim.h"

#define PF_HIST_CAP 65536 /* steps: at the default cost model's 5-10 ms a
                             step, 5 to 10 minutes of simulated time      */

enum {
    PF_HIST_TOKENS = 0, /* output tokens in the step (count)             */
    PF_HIST_STALLED,    /* stalled sequences after it (level)            */
    PF_HIST_PREEMPT,    /* preemptions in the step (count)               */
    PF_HIST_USAGE,      /* KV use, held frames / pool, 0..1 (level)      */
    PF_HIST_WAITING,    /* requests waiting after it (level)             */
    PF_HIST_TTFT_P99,   /* the run's TTFT p99 so far, seconds (level)    */
    PF_HIST_FIRSTS,     /* requests whose first token came in the step (count) */
    PF_HIST_TTFT_SUM,   /* the sum of their TTFTs, seconds (count)       */
    PF_HIST_SERIES,
    /* derived, for pf_hist_resample only: TTFT_SUM / FIRSTS over each bin,
     * the mean time to first token of the requests whose first token came
     * in it (-1 where none did) */
    PF_HIST_TTFT_MEAN = PF_HIST_SERIES,
    /* derived: the p99 (nearest rank) of those requests' TTFTs, from the
     * first tokens themselves (pf_hist's ft ring); *mean gets the p99 over
     * the whole window */
    PF_HIST_TTFT_P99W
};

#define PF_HIST_FT_CAP (1 << 20) /* first tokens kept: hours at a busy server's rate */
#define PF_HIST_FT_EXACT 4096    /* a bin's quantile from at most this many
                                    of its first tokens (evenly strided) */

typedef struct {
    float *v[PF_HIST_SERIES]; /* rings of PF_HIST_CAP, owned            */
    double *t;                /* ring: each step's end time, seconds    */
    /* ring: each series' integral over time up to the step's end, from
     * the start of the history: a count's sum, a level's value x seconds.
     * A window's mean is then a difference of two integrals, found by
     * binary search: a chart costs O(columns x log steps), whatever the
     * window (pf_hist_resample). */
    double *cum[PF_HIST_SERIES];
    double t0;                /* start of the oldest kept step's interval */
    double cum0[PF_HIST_SERIES]; /* the integrals up to t0              */
    int t0_guessed;           /* t0 waits for the second step: the first
                                 is taken as long as the second          */
    int head, n;              /* oldest sample at head, n samples       */
    /* ring of first tokens (time, TTFT), oldest at ft_head, in time order;
     * ft_next: the run's index of the next one wanted from a snapshot */
    double *ft_t;
    float *ft_v;
    int ft_head, ft_n;
    int64_t ft_next;
    float *ft_tmp;            /* [PF_HIST_FT_EXACT]: quickselect scratch */
    int64_t next_step;        /* step of the next sample to append; -1: empty */
} pf_hist;

/* Fold in a snapshot's history. 0, or -1 when memory ran out. */
int pf_hist_update(pf_hist *h, const pf_sim_snapshot *s);

/* Append one step's sample, ending at time t seconds, by hand (tests). A
 * time before the last sample's clears the history first (a new run). */
int pf_hist_push(pf_hist *h, const float sample[PF_HIST_SERIES], double t);

/* Sample i (0 = oldest of the n) of a series, and its end time. The ring
 * is a power of two long, so the index wraps with a mask (a charts frame
 * reads every step of the window several times). */
_Static_assert((PF_HIST_CAP & (PF_HIST_CAP - 1)) == 0, "PF_HIST_CAP must be a power of two");
static inline float pf_hist_at(const pf_hist *h, int series, int i)
{
    return h->v[series][(unsigned)(h->head + i) & (PF_HIST_CAP - 1)];
}
static inline double pf_hist_time(const pf_hist *h, int i)
{
    return h->t[(unsigned)(h->head + i) & (PF_HIST_CAP - 1)];
}

/* The newest sample's time (0 when empty). */
double pf_hist_now(const pf_hist *h);

/* Is a series a count per step (shown per second) rather than a level? */
int pf_hist_is_rate(int series);

/* Series k resampled onto ncols equal bins of time covering
 * (t_end - span, t_end]. Each step spreads over its interval (t[i-1],
 * t[i]] (the first step's interval is taken as long as the second's),
 * and a bin gets the time-weighted mean over the part of it the steps
 * cover: for a count, per second (the tokens of the steps in it over the
 * time they cover); for a level, its mean. A bin no step covers gets -1.
 * ncols is at most 1024.
 * Returns the seconds of (t_end - span, t_end] that steps cover (0: none);
 * *mean (may be NULL) gets the same time-weighted mean over the whole span
 * (what pf_hist_window gives; 0 when nothing is covered), from the same
 * pass. */
double pf_hist_resample(const pf_hist *h, int series, double t_end, double span, int ncols,
                        double *out, double *mean);

/* The same over one bin: the last `span` seconds up to the newest sample;
 * 0 when no step covers it. */
double pf_hist_window(const pf_hist *h, int series, double span);

/* One first token (its time, its TTFT) into the first-token ring; ignored
 * when older than the newest one kept. 0, or -1 out of memory. */
int pf_hist_push_first(pf_hist *h, double t, float ttft);

void pf_hist_clear(pf_hist *h);
void pf_hist_free(pf_hist *h);

#endif
