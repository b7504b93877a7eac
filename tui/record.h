/* tui/record.h - recording a dashboard session, and reading it back.
 *
 * What it is: `pagefault --record FILE` (live or headless) appends the
 * snapshots the dashboard shows to FILE; `pagefault replay FILE` plays them
 * back through the same renderer (headless: the same frames as the run
 * that recorded them, byte for byte).
 *
 * Format (version 3): a 16-byte header, "PFREC\0", a u16 version, a u16
 * word size check (sizeof(pf_sim_params)), a u32 sizeof(pf_sim_stats); then
 * one record per snapshot: u32 magic 'SNAP', u32 payload bytes, and the
 * payload: i32 tick, u8 final, the parameters and statistics as the
 * structs of this build (the header's sizes guard against another build),
 * i32 paused, the frames run-length encoded (i32 runs; per run i32 owner,
 * u8 state, i32 count), i32 nseqs and the sequence views, i32 nevents and
 * the events, i32 nhistory, i64 hist_step0 and the history series
 * (decoding, stalled, preempt, usage as float; the steps' end times in
 * seconds as double; tokens and waiting as float). Version 1 (time in
 * steps) is refused with its number.
 * Numbers are in the machine's byte order: a recording is read back on the
 * kind of machine that made it. The owner's index in seqs[] is rebuilt on
 * reading (a sequence's id is its key); a sequence's logical block of each
 * frame is not recorded, so a replay's inspector shows no page table.
 *
 * Contract: every read is bounded (frames up to 1<<24, sequences up to
 * 1<<20, runs up to the frames) and a malformed file gives PF_ERR_IO with
 * "FILE: what" in err, never a crash. One writer or reader per FILE*.
 * Callers: tui/dash.c, tui/replay.c, tests/test_tui_headless.sh.
 */
#ifndef PF_TUI_RECORD_H
#define PF_TUI_RECORD_H

#include <stddef.h>
#include <stdio.h>

#include "sim/sim.h"

/* Write the header. 0, or PF_ERR_IO. */
int pf_record_begin(FILE *f);

/* Append one snapshot. 0, or PF_ERR_IO. */
int pf_record_put(FILE *f, const pf_sim_snapshot *s, int tick, int final);

/* Check the header. 0, or PF_ERR_IO with the reason in err. */
int pf_record_open(FILE *f, const char *name, char *err, size_t errlen);

/* Read the next snapshot into s (arrays allocated or grown as needed;
 * pf_sim_snapshot_free releases them). 1 read, 0 at the end of the file,
 * PF_ERR_IO or PF_ERR_NOMEM with the reason in err. */
int pf_record_get(FILE *f, const char *name, pf_sim_snapshot *s, int *tick, int *final, char *err,
                  size_t errlen);

#endif
