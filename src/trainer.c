/* Binding a model to devices: replicas, workers, the step's memory. */
#include "trainer.h"
#include "alloc.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

/* Room for one replica's contribution to one collective call (8192
 * doubles: per-channel statistics of the widest layers fit many times); a
 * larger call fails with a message giving both sizes. */
#define COLLECTIVE_BYTES (64 * 1024)

/* The largest micro-batch up to max_batch whose replica fits the device.
 * CLNET_MICRO_BATCH=N caps it (to exercise micro-batches on big devices). */
static clnet_status fit_replica(const clnet_model *m, clnet_device *d, int max_batch, int ranks,
                                clnet_replica **out) {
    clnet_status s = CLNET_ERR_DEVICE_MEMORY;
    const char *cap = getenv("CLNET_MICRO_BATCH");
    if (cap && atoi(cap) >= 1 && atoi(cap) < max_batch) max_batch = atoi(cap);
    for (int b = max_batch; b >= 1; b /= 2) {
        s = clnet_replica_create(out, m, d, b, ranks);
        if (s != CLNET_ERR_DEVICE_MEMORY) return s;
        if (b == 1) break;
    }
    return s; /* the message of the 1-sample attempt says what is needed */
}

void clnet_trainer_free(clnet_trainer *t) {
    if (!t) return;
    if (t->step.shares) {
        pthread_mutex_destroy(&t->step.lock);
        pthread_cond_destroy(&t->step.changed);
    }
    clnet_workers_free(t->workers); /* first: no job may still use what follows */
    for (int i = 0; i < t->count && t->replicas; i++) clnet_replica_free(t->replicas[i]);
    free(t->replicas);
    clnet_balance_free(&t->balance);
    clnet_local_group_free(t->group);
    free(t->grad_sum), free(t->coll), free(t->ctx), free(t->caps);
    free(t->step.shares), free(t->step.offsets), free(t->step.active);
    free(t->step.correct), free(t->step.finished), free(t->step.loss), free(t->step.seconds);
    free(t->step.posted), free(t->step.events), free(t->step.data), free(t->step.mapped);
    free(t);
}

clnet_status clnet_trainer_create(clnet_trainer **out, const clnet_model *m, clnet_runtime *rt,
                                  int max_batch) {
    clnet_status status = CLNET_OK;
    int n = clnet_runtime_device_count(rt), *index = NULL;
    clnet_trainer *t = clnet_calloc(1, sizeof *t);
    *out = NULL;
    if (!t) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory binding the net");
    t->model = m;
    t->count = n;
    t->max_batch = max_batch;
    size_t R = (size_t)n, buckets = R * (size_t)m->count + 1;
    t->replicas = clnet_calloc(R, sizeof *t->replicas);
    index = clnet_calloc(R, sizeof *index);
    t->grad_sum = clnet_calloc(m->nparams + 1, sizeof *t->grad_sum);
    t->coll = clnet_calloc(R, sizeof *t->coll);
    t->ctx = clnet_calloc(R, sizeof *t->ctx);
    t->caps = clnet_calloc(R, sizeof *t->caps);
    t->step.shares = clnet_calloc(R, sizeof(int));
    t->step.offsets = clnet_calloc(R, sizeof(int));
    t->step.active = clnet_calloc(R, sizeof(int));
    t->step.correct = clnet_calloc(R, sizeof(int));
    t->step.finished = clnet_calloc(R, sizeof(int));
    t->step.loss = clnet_calloc(R, sizeof(double));
    t->step.seconds = clnet_calloc(R, sizeof(double));
    t->step.posted = clnet_calloc(buckets, sizeof(int));
    t->step.events = clnet_calloc(buckets, sizeof(cl_event));
    t->step.data = clnet_calloc(buckets, sizeof(float *));
    t->step.mapped = clnet_calloc(R, sizeof(void *));
    if (!t->replicas || !index || !t->grad_sum || !t->coll || !t->ctx || !t->caps ||
        !t->step.shares || !t->step.offsets || !t->step.active || !t->step.correct ||
        !t->step.finished || !t->step.loss || !t->step.seconds || !t->step.posted ||
        !t->step.events || !t->step.data || !t->step.mapped) {
        free(t->step.shares);
        t->step.shares = NULL; /* the lock was never made */
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory binding the net");
    }
    pthread_mutex_init(&t->step.lock, NULL);
    pthread_cond_init(&t->step.changed, NULL);
    for (int i = 0; i < n; i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        index[i] = d->info.index;
        TRY(fit_replica(m, d, max_batch, n, &t->replicas[i]));
        t->caps[i] = t->replicas[i]->max_batch;
    }
    for (int i = m->count - 1; i >= 0; i--)
        if (m->nodes[i].kind->batch_stats) t->batch_stats = &m->nodes[i];
    TRY(clnet_balance_init(&t->balance, index, n));
    TRY(clnet_local_group_create(&t->group, n, COLLECTIVE_BYTES));
    TRY(clnet_workers_create(&t->workers, n));
    *out = t;
    t = NULL;
cleanup:
    free(index);
    clnet_trainer_free(t);
    return status;
}
