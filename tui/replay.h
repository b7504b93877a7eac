/* tui/replay.h - `pagefault replay FILE`: a recorded session played back.
 *
 * What it is: the snapshots a `--record FILE` run wrote (tui/record.h),
 * drawn by the same renderer. Live: space pauses, s steps one record,
 * Left/Right seek 10 records, f/F slower/faster (records per second), r
 * back to the start, c/t/</> as in the dashboard, q quits. --headless
 * prints every record as the headless dashboard printed it, so a replay of
 * a headless recording (--dump-every <= 256) gives the same frames byte for
 * byte. A malformed file: one line naming it and what is wrong, status 2.
 * Callers: tui/main.c.
 */
#ifndef PF_TUI_REPLAY_H
#define PF_TUI_REPLAY_H

int pf_cmd_replay(int argc, char **argv);

#endif
