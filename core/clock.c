/* core/clock.c - the monotonic clock (clock.h). */
#include "core/clock.h"

#include <time.h>

double pf_clock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
