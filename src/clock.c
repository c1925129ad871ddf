/* Monotonic time and sleeping. */
#include "clock.h"

#include "clnet.h"

#include <time.h>

double clnet_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double clnet_seconds(void) {
    return clnet_now();
}

void clnet_sleep(double s) {
    if (s <= 0) return;
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0) {
    }
}
