/* Buffer guards (see guard.h). */
#include "guard.h"
#include "error.h"

#include <stdint.h>
#include <stdio.h>

/* A NaN no kernel computes: a float that kept it was never written. */
#define PATTERN 0x7fbadbadu

int clnet_guard_on(const clnet_device *d) {
    return d->env->guard;
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

clnet_status clnet_guard_tail(cl_mem mem, const char *what, clnet_guard_region *out) {
    clnet_status status = CLNET_OK;
    size_t bytes = 0;
    CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL),
             "clGetMemObjectInfo(CL_MEM_SIZE)");
    size_t floats = bytes / sizeof(float);
    size_t from = floats > CLNET_GUARD_FLOATS ? floats - CLNET_GUARD_FLOATS : 0;
    *out = (clnet_guard_region){mem, 0, from, floats, what};
cleanup:
    return status;
}

/* Reads go out in batches without waiting, one wait a batch: a pass has
 * dozens of regions, and a blocking read each would cost more than the pass. */
#define BATCH_FLOATS 16384
#define BATCH_PIECES 256

/* A piece of region `region` read into the batch: floats [at, at + n) of
 * the buffer, at `pos` in the batch. */
typedef struct {
    int region;
    size_t at, n, pos;
} piece;

/* What the scan has found: the region it is in, the first and last float of
 * it that lost the pattern (first == SIZE_MAX: none yet), and the message. */
typedef struct {
    const clnet_guard_region *r;
    int region;
    size_t first, last, used;
    char damage[768];
} scan;

static void end_region(scan *s) {
    const clnet_guard_region *r = s->region >= 0 ? &s->r[s->region] : NULL;
    if (r && s->first != SIZE_MAX && s->used < sizeof s->damage)
        s->used += (size_t)snprintf(s->damage + s->used, sizeof s->damage - s->used,
                                    "%s%s (it may use %zu floats there; floats %zu to %zu changed)",
                                    s->used ? ", and " : "", r->what, r->from - r->base,
                                    s->first - r->base, s->last - r->base);
    s->first = SIZE_MAX;
}

/* Waits for the batch's reads and scans its pieces, in order. */
static clnet_status scan_batch(clnet_device *d, scan *s, const piece *p, int count,
                               const uint32_t *got) {
    clnet_status status = CLNET_OK;
    CL_CHECK(clFinish(d->queue), "clFinish(guard)");
    for (int i = 0; i < count; i++) {
        if (p[i].region != s->region) {
            end_region(s);
            s->region = p[i].region;
        }
        for (size_t k = 0; k < p[i].n; k++)
            if (got[p[i].pos + k] != PATTERN) {
                if (s->first == SIZE_MAX) s->first = p[i].at + k;
                s->last = p[i].at + k;
            }
    }
cleanup:
    return status;
}

clnet_status clnet_guard_check(clnet_device *d, const clnet_guard_region *r, int count,
                               const char *where) {
    clnet_status status = CLNET_OK;
    uint32_t got[BATCH_FLOATS];
    piece pieces[BATCH_PIECES];
    int np = 0;
    size_t fill = 0;
    scan s = {.r = r, .region = -1, .first = SIZE_MAX};
    CL_CHECK(clFinish(d->queue), "clFinish(guard)");
    for (int i = 0; i < count; i++)
        for (size_t at = r[i].from, n; at < r[i].to; at += n) {
            n = r[i].to - at < BATCH_FLOATS ? r[i].to - at : BATCH_FLOATS;
            if (fill + n > BATCH_FLOATS || np == BATCH_PIECES) {
                TRY(scan_batch(d, &s, pieces, np, got));
                np = 0, fill = 0;
            }
            CL_CHECK(clEnqueueReadBuffer(d->queue, r[i].mem, CL_FALSE, at * sizeof(float),
                                         n * sizeof(float), got + fill, 0, NULL, NULL),
                     "clEnqueueReadBuffer(guard)");
            pieces[np++] = (piece){i, at, n, fill};
            fill += n;
        }
    TRY(scan_batch(d, &s, pieces, np, got));
    end_region(&s);
    if (s.used) FAIL(CLNET_ERR_GUARD, "CLNET_GUARD: %s wrote past %s", where, s.damage);
cleanup:
    if (status != CLNET_OK) clFinish(d->queue); /* no read may still write into got */
    return status;
}
