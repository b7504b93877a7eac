/* tests/test_tui_record.c - session recordings (tui/record.c) read back as
 * they were written, and a file's values refused where the history or the
 * renderer would do arithmetic on them out of range. A fuzzer's damaged
 * recordings (a history step, a first-token index near INT64_MAX; two
 * swapped sequences whose frames summed past INT_MAX) each overflowed a
 * signed sum in tui/hist.c or tui/render.c. Snapshots are built by hand and
 * written through pf_record_put, which writes whatever a snapshot holds, so
 * a bad value reaches the reader as a damaged file's would. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "tui/record.h"

enum { NFRAMES = 64, NSEQS = 3 };

/* A small snapshot: 64 frames, the first 8 owned by sequence 1, three
 * sequences (one swapped out with 3 frames on the host), a few history
 * steps and first tokens, and the cost model's names set as a live run
 * sets them (pointers into this process). */
static void snap_fill(pf_sim_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->nframes = NFRAMES;
    s->frames = calloc(NFRAMES, sizeof *s->frames);
    s->seqs = calloc(NSEQS, sizeof *s->seqs);
    cr_assert(s->frames && s->seqs);
    for (int i = 0; i < NFRAMES; i++)
        s->frames[i] = (pf_frame_view){i < 8 ? 1 : -1, i < 8 ? PF_FRAME_USED : PF_FRAME_FREE};
    s->nseqs = NSEQS;
    for (int i = 0; i < NSEQS; i++)
        s->seqs[i] = (pf_seq_view){.id = i + 1, .state = PF_SEQ_DECODING, .prompt = 100,
                                   .output = 50, .generated = 10, .frames = i == 0 ? 8 : 0,
                                   .admit_step = 5, .admit_time = 0.1, .ttft = 0.2,
                                   .computed = 110, .table_at = 7};
    s->seqs[2].state = PF_SEQ_SWAPPED;
    s->seqs[2].frames = 3;
    s->params.cfg.block_size = 16;
    s->params.cfg.pool_blocks = NFRAMES;
    s->params.cost.model.name = "llama3-8b";
    s->params.cost.gpu.name = "h200";
    s->params.cost.gpu.long_name = "NVIDIA H200 SXM";
    s->stats.pool_used = 8;
    s->nhistory = 4;
    s->hist_step0 = 96;
    for (int i = 0; i < 4; i++)
        s->hist_time[i] = 0.01 * (96 + i);
    s->ft_first = 40;
    s->nft = 2;
}

static void snap_drop(pf_sim_snapshot *s)
{
    free(s->frames);
    free(s->seqs);
    free(s->frame_seq);
    free(s->frame_block);
    memset(s, 0, sizeof *s);
}

/* Write s as a one-snapshot recording into a temporary file, read it back
 * into *back. Returns pf_record_get's status; err gets its message. The
 * file's bytes go to *bytes (freed by the caller) when bytes is not NULL. */
static int round_trip(const pf_sim_snapshot *s, pf_sim_snapshot *back, char *err, size_t errlen,
                      unsigned char **bytes, long *nbytes)
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(pf_record_begin(f), 0);
    cr_assert_eq(pf_record_put(f, s, 12, 1), 0);
    long n = ftell(f);
    rewind(f);
    if (bytes) {
        *bytes = malloc((size_t)n);
        cr_assert_not_null(*bytes);
        cr_assert_eq(fread(*bytes, 1, (size_t)n, f), (size_t)n);
        *nbytes = n;
        rewind(f);
    }
    cr_assert_eq(pf_record_open(f, "t.pfrec", err, errlen), 0, "%s", err);
    memset(back, 0, sizeof *back);
    int tick = 0, final = 0;
    err[0] = '\0';
    int rc = pf_record_get(f, "t.pfrec", back, &tick, &final, err, errlen);
    if (rc == 1) {
        cr_assert_eq(tick, 12);
        cr_assert_eq(final, 1);
    }
    fclose(f);
    return rc;
}

Test(record, reads_back_what_it_wrote_and_no_address)
{
    pf_sim_snapshot s, back;
    snap_fill(&s);
    char err[256];
    unsigned char *bytes;
    long n;
    cr_assert_eq(round_trip(&s, &back, err, sizeof err, &bytes, &n), 1, "%s", err);
    cr_assert_eq(back.nframes, NFRAMES);
    cr_assert_eq(back.nseqs, NSEQS);
    cr_assert_eq(back.seqs[2].state, PF_SEQ_SWAPPED);
    cr_assert_eq(back.seqs[2].frames, 3);
    cr_assert_eq(back.frames[3].owner, 1);
    cr_assert_eq(back.frame_seq[3], 0, "frame 3's owner is seqs[0]");
    cr_assert_eq(back.frame_seq[30], -1);
    cr_assert_eq(back.hist_step0, 96);
    cr_assert_eq(back.ft_first, 40);
    /* the block table is not recorded, so a replay's sequence has none */
    cr_assert_eq(back.seqs[0].table_at, -1);
    /* no pointer of the writing process is in the file, nor read back */
    cr_assert_null(back.params.cost.model.name);
    cr_assert_null(back.params.cost.gpu.long_name);
    const void *ptrs[3] = {s.params.cost.model.name, s.params.cost.gpu.name,
                           s.params.cost.gpu.long_name};
    for (int k = 0; k < 3; k++)
        for (long i = 0; i + (long)sizeof ptrs[k] <= n; i++)
            cr_assert(memcmp(bytes + i, &ptrs[k], sizeof ptrs[k]) != 0,
                      "pointer %d written at byte %ld", k, i);
    free(bytes);
    snap_drop(&back);
    snap_drop(&s);
}

/* One damaged value: set by edit on a good snapshot; the reader must say
 * want in its message and return PF_ERR_IO. */
static void refused(void (*edit)(pf_sim_snapshot *), const char *want)
{
    pf_sim_snapshot s, back;
    snap_fill(&s);
    edit(&s);
    char err[256];
    int rc = round_trip(&s, &back, err, sizeof err, NULL, NULL);
    cr_assert_eq(rc, PF_ERR_IO, "%s: read back with status %d", want, rc);
    cr_assert(strstr(err, want) != NULL, "want '%s' in: %s", want, err);
    cr_assert(strstr(err, "t.pfrec: a damaged record") == err, "%s", err);
    snap_drop(&back);
    snap_drop(&s);
}

static void step0_max(pf_sim_snapshot *s) { s->hist_step0 = INT64_MAX; }
static void step0_near_max(pf_sim_snapshot *s) { s->hist_step0 = INT64_MAX - PF_SIM_HISTORY + 1; }
static void step0_negative(pf_sim_snapshot *s) { s->hist_step0 = -1; }
static void ft_first_max(pf_sim_snapshot *s) { s->ft_first = INT64_MAX; }
static void ft_first_negative(pf_sim_snapshot *s) { s->ft_first = -3; }
static void swapped_frames_huge(pf_sim_snapshot *s)
{
    s->seqs[1].state = PF_SEQ_SWAPPED;
    s->seqs[1].frames = INT_MAX;
}
static void state_unknown(pf_sim_snapshot *s) { s->seqs[1].state = PF_SEQ_PREFILLING + 1; }
static void shared_past_frames(pf_sim_snapshot *s) { s->seqs[0].shared_frames = 9; }
static void generated_negative(pf_sim_snapshot *s) { s->seqs[2].generated = -1; }

Test(record, history_and_first_token_indices_in_range)
{
    refused(step0_max, "history from step 9223372036854775807");
    refused(step0_near_max, "history from step");
    refused(step0_negative, "history from step -1");
    refused(ft_first_max, "first tokens from index 9223372036854775807");
    refused(ft_first_negative, "first tokens from index -3");
}

Test(record, sequence_views_checked)
{
    refused(swapped_frames_huge, "sequence 1");
    refused(state_unknown, "sequence 1");
    refused(shared_past_frames, "sequence 0");
    refused(generated_negative, "sequence 2");
}

/* The edges a real run can reach are kept: the last step the history's
 * sum allows, and a sequence whose frames are all shared. */
Test(record, in_range_edges_read_back)
{
    pf_sim_snapshot s, back;
    snap_fill(&s);
    s.hist_step0 = INT64_MAX - PF_SIM_HISTORY;
    s.ft_first = INT64_MAX - PF_SIM_FIRSTS;
    s.seqs[0].shared_frames = 8;
    char err[256];
    cr_assert_eq(round_trip(&s, &back, err, sizeof err, NULL, NULL), 1, "%s", err);
    cr_assert_eq(back.hist_step0, INT64_MAX - PF_SIM_HISTORY);
    cr_assert_eq(back.seqs[0].shared_frames, 8);
    snap_drop(&back);
    snap_drop(&s);
}
