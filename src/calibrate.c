/* Calibration: each device's speed measured once, at binding, so that the
 * first split is already in proportion (the balancer refines it from the
 * steps' timings after). Probes are bounded in time: a device thousands of
 * times slower than the others (Oclgrind) costs seconds, not minutes. */
#include "calibrate.h"
#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "memory.h"

#include <stdlib.h>

/* A probe may take this long before its rate is trusted, and calibration
 * stops growing probes after this much time per device. */
#define PROBE_SECONDS       0.2
#define CALIBRATION_SECONDS 2.0
#define PROBE_MAX           32

typedef struct {
    clnet_trainer *t;
    float *images;
    int32_t *labels;
} probe_job;

/* One training pass of m samples on replica i, finished. */
static clnet_status probe_run(clnet_replica *r, const clnet_ctx *ctx, const probe_job *p, int m) {
    clnet_status status = CLNET_OK;
    TRY(clnet_replica_load(r, p->images, p->labels, NULL, m));
    TRY(clnet_replica_forward(r, ctx, m));
    TRY(clnet_replica_backward(r, ctx, m, 0));
    CL_CHECK(clnet_finish(r->d), "clFinish");
cleanup:
    return status;
}

/* Times replica i on probes of one size, after a warm-up run of that size
 * (the first run of a size builds kernels, and CPU drivers compile
 * work-group functions): m samples, with m chosen from a 1-sample run so
 * that a probe takes about PROBE_SECONDS, at most PROBE_MAX samples. */
static clnet_status probe(int i, void *arg) {
    clnet_status status = CLNET_OK;
    probe_job *p = arg;
    clnet_trainer *t = p->t;
    clnet_replica *r = t->replicas[i];
    /* each device alone: no collective (a layer that needs one has none to call) */
    clnet_ctx ctx = {.train = 1, .d = r->d, .probe = 1};
    /* batch statistics need two samples (one value per channel has no variance) */
    int first = t->split.batch_stats && r->max_batch >= 2 ? 2 : 1;
    double t1 = 0;
    for (int k = 0; k < 2; k++) { /* the first builds the kernels */
        double t0 = clnet_now();
        TRY(probe_run(r, &ctx, p, first));
        t1 = (clnet_now() - t0) / first;
    }
    int m = t1 > 0 ? (int)(PROBE_SECONDS / t1) : PROBE_MAX;
    if (m > PROBE_MAX) m = PROBE_MAX;
    if (m > r->max_batch) m = r->max_batch;
    if (m < first) m = first;
    double rate = 1.0 / (t1 > 0 ? t1 : 1e-9);
    if (m > 1) { /* warm up this size, then time it until it has taken long enough */
        TRY(probe_run(r, &ctx, p, m));
        int runs = 0;
        double t0 = clnet_now(), spent = 0;
        do {
            TRY(probe_run(r, &ctx, p, m));
            runs++;
            spent = clnet_now() - t0;
        } while (spent < PROBE_SECONDS && spent < CALIBRATION_SECONDS);
        rate = runs * m / spent;
    }
    t->split.balance.rate[t->ranks.first + i] =
        rate / clnet_throttle_factor(&t->split.faults, t->ranks.first + i);
cleanup:
    if (status != CLNET_OK)
        clnet_error_context(status, "calibrating device %d (%s)", r->d->info.index,
                            r->d->info.name);
    return status;
}

clnet_status clnet_calibrate(clnet_trainer *t) {
    clnet_status status = CLNET_OK;
    probe_job p = {.t = t};
    if (t->ranks.total < 2) return CLNET_OK; /* nothing to balance */
    size_t in = clnet_shape_size(t->model->input);
    p.images = clnet_calloc((size_t)PROBE_MAX * in, sizeof(float));
    p.labels = clnet_calloc((size_t)PROBE_MAX, sizeof(int32_t));
    if (!p.images || !p.labels) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    TRY(clnet_workers_run(t->workers, probe, &p, NULL));
    TRY(clnet_ranks_share(&t->ranks, t->split.balance.rate, sizeof *t->split.balance.rate));
cleanup:
    free(p.images);
    free(p.labels);
    return status;
}
