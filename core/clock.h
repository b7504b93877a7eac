/* core/clock.h - the monotonic clock, in seconds, for the wall time of
 * everything that waits, paces or reports a rate.
 *
 * Contract: CLOCK_MONOTONIC (never steps back with the wall clock; the
 * condition variables of sim/ and tui/ wait on the same clock); seconds as a
 * double, good to well under a microsecond for a century of uptime;
 * thread-safe. The simulated time of the cost model is not this clock.
 * Callers: the dashboard and replay (frame pacing), `sim` (wall time),
 * attach and the ZeroMQ subscriber (timeouts, poll rates), the benchmarks.
 */
#ifndef PF_CORE_CLOCK_H
#define PF_CORE_CLOCK_H

double pf_clock_s(void);

#endif
