/* Buffer guards (see guard.h). */
#include "guard.h"
#include "error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A NaN no kernel computes: a float that kept it was never written. */
#define PATTERN 0x7fbadbadu

static int guard_on;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void read_env(void) {
    const char *v = getenv("CLNET_GUARD");
    guard_on = v && strcmp(v, "1") == 0;
}

int clnet_guard_on(void) {
    pthread_once(&guard_once, read_env);
    return guard_on;
}

clnet_status clnet_guard_fill(clnet_device *d, const clnet_guard_region *r, int count) {
    clnet_status status = CLNET_OK;
    const uint32_t pattern = PATTERN;
    for (int i = 0; i < count; i++) {
        if (r[i].to <= r[i].from) continue;
        CL_CHECK(clEnqueueFillBuffer(d->queue, r[i].mem, &pattern, sizeof pattern,
                                     r[i].from * sizeof(float),
                                     (r[i].to - r[i].from) * sizeof(float), 0, NULL, NULL),
                 "clEnqueueFillBuffer(guard)");
    }
cleanup:
    return status;
}

clnet_guard_region clnet_guard_tail(cl_mem mem, const char *what) {
    size_t bytes = 0;
    clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    size_t floats = bytes / sizeof(float);
    size_t from = floats > CLNET_GUARD_FLOATS ? floats - CLNET_GUARD_FLOATS : 0;
    return (clnet_guard_region){mem, 0, from, floats, what};
}

/* The first and last float of [from, to) of mem that lost the pattern
 * (*first == to: none), read a piece at a time (nothing allocated). */
static clnet_status changed(clnet_device *d, cl_mem mem, size_t from, size_t to, size_t *first,
                            size_t *last) {
    clnet_status status = CLNET_OK;
    uint32_t got[4096];
    *first = *last = to;
    for (size_t at = from; at < to; at += sizeof got / sizeof *got) {
        size_t n = to - at < sizeof got / sizeof *got ? to - at : sizeof got / sizeof *got;
        CL_CHECK(clEnqueueReadBuffer(d->queue, mem, CL_TRUE, at * sizeof(float), n * sizeof(float),
                                     got, 0, NULL, NULL),
                 "clEnqueueReadBuffer(guard)");
        for (size_t k = 0; k < n; k++)
            if (got[k] != PATTERN) {
                if (*first == to) *first = at + k;
                *last = at + k;
            }
    }
cleanup:
    return status;
}

clnet_status clnet_guard_check(clnet_device *d, const clnet_guard_region *r, int count,
                               const char *where) {
    clnet_status status = CLNET_OK;
    size_t used = 0;
    char damage[768] = "";
    CL_CHECK(clFinish(d->queue), "clFinish(guard)");
    for (int i = 0; i < count; i++) {
        size_t first, last;
        if (r[i].to <= r[i].from) continue;
        TRY(changed(d, r[i].mem, r[i].from, r[i].to, &first, &last));
        if (first == r[i].to || used >= sizeof damage) continue;
        used += (size_t)snprintf(damage + used, sizeof damage - used,
                                 "%s%s (it may use %zu floats there; floats %zu to %zu changed)",
                                 used ? ", and " : "", r[i].what, r[i].from - r[i].base,
                                 first - r[i].base, last - r[i].base);
    }
    if (used) FAIL(CLNET_ERR_GUARD, "CLNET_GUARD: %s wrote past %s", where, damage);
cleanup:
    return status;
}
