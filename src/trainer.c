/* Binding a model to devices: replicas, workers, the step's memory. */
#include "trainer.h"
#include "alloc.h"
#include "error.h"

#include <stdio.h>
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
    clnet_dist_free(t->dist);
    free(t->peers), free(t->rank_count), free(t->rank_active), free(t->record);
    free(t->grad_sum), free(t->coll), free(t->ctx), free(t->caps);
    free(t->step.shares), free(t->step.offsets), free(t->step.active);
    free(t->step.correct), free(t->step.finished), free(t->step.loss), free(t->step.seconds);
    free(t->step.posted), free(t->step.events), free(t->step.data), free(t->step.mapped);
    free(t);
}

clnet_status clnet_trainer_share(clnet_trainer *t, void *items, size_t size) {
    int ranks = clnet_mpi_size(), bytes[CLNET_MAX_DEVICES];
    if (!t->dist) return CLNET_OK;
    for (int r = 0; r < ranks; r++) bytes[r] = (int)((size_t)t->rank_count[r] * size);
    unsigned char *mine = (unsigned char *)items + (size_t)t->first * size;
    return clnet_dist_allgatherv(t->dist, CLNET_LANE_CONTROL, mine, bytes, items,
                                 "sharing device facts between ranks");
}

/* In an MPI job: how many devices each rank has, and where this one's begin. */
static clnet_status count_devices(clnet_trainer *t) {
    int ranks = clnet_mpi_size(), *counts = clnet_calloc((size_t)ranks, sizeof *counts);
    if (!counts) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    t->rank_count = counts;
    t->first = 0;
    t->total = counts[0] = t->count;
    if (!t->dist) return CLNET_OK;
    if (ranks > CLNET_MAX_DEVICES)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%d ranks: clnet trains on 1 to %d", ranks,
                          CLNET_MAX_DEVICES);
    clnet_status s = clnet_dist_allgather(t->dist, CLNET_LANE_CONTROL, &t->count, sizeof(int),
                                          counts, "counting the devices of every rank");
    if (s != CLNET_OK) return s;
    t->total = 0;
    for (int r = 0; r < ranks; r++) {
        if (r == clnet_mpi_rank()) t->first = t->total;
        t->total += counts[r];
    }
    if (t->total > CLNET_MAX_DEVICES)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%d devices on %d ranks: clnet trains on 1 to %d devices in all",
                          t->total, ranks, CLNET_MAX_DEVICES);
    return CLNET_OK;
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
    TRY(clnet_dist_create(&t->dist));
    t->overlap = !getenv("CLNET_MPI_OVERLAP") || atoi(getenv("CLNET_MPI_OVERLAP")) != 0;
    TRY(count_devices(t));
    size_t R = (size_t)n, all = (size_t)t->total, buckets = R * (size_t)m->count + 1;
    t->replicas = clnet_calloc(R, sizeof *t->replicas);
    index = clnet_calloc(all, sizeof *index);
    t->peers = clnet_calloc(all, sizeof *t->peers);
    t->rank_active = clnet_calloc((size_t)clnet_mpi_size(), sizeof *t->rank_active);
    t->record = clnet_calloc(2 * (size_t)clnet_mpi_size() + all, sizeof *t->record);
    t->grad_sum = clnet_calloc(m->nparams + 1, sizeof *t->grad_sum);
    t->coll = clnet_calloc(R, sizeof *t->coll);
    t->ctx = clnet_calloc(R, sizeof *t->ctx);
    t->caps = clnet_calloc(all, sizeof *t->caps);
    t->step.shares = clnet_calloc(all, sizeof(int));
    t->step.offsets = clnet_calloc(all, sizeof(int));
    t->step.active = clnet_calloc(R, sizeof(int));
    t->step.correct = clnet_calloc(R, sizeof(int));
    t->step.finished = clnet_calloc(R, sizeof(int));
    t->step.loss = clnet_calloc(R, sizeof(double));
    t->step.seconds = clnet_calloc(all, sizeof(double));
    t->step.posted = clnet_calloc(buckets, sizeof(int));
    t->step.events = clnet_calloc(buckets, sizeof(cl_event));
    t->step.data = clnet_calloc(buckets, sizeof(float *));
    t->step.mapped = clnet_calloc(R, sizeof(void *));
    if (!t->replicas || !index || !t->peers || !t->rank_active || !t->record || !t->grad_sum ||
        !t->coll || !t->ctx || !t->caps || !t->step.shares || !t->step.offsets || !t->step.active ||
        !t->step.correct || !t->step.finished || !t->step.loss || !t->step.seconds ||
        !t->step.posted || !t->step.events || !t->step.data || !t->step.mapped) {
        free(t->step.shares);
        t->step.shares = NULL; /* the lock was never made */
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory binding the net");
    }
    pthread_mutex_init(&t->step.lock, NULL);
    pthread_cond_init(&t->step.changed, NULL);
    for (int i = 0; i < n; i++) {
        clnet_peer_device *p = &t->peers[t->first + i];
        clnet_device *d = clnet_runtime_device(rt, i);
        p->rank = clnet_mpi_rank();
        p->index = d->info.index;
        snprintf(p->name, sizeof p->name, "%s", d->info.name);
    }
    TRY(clnet_trainer_share(t, t->peers, sizeof *t->peers));
    for (int i = 0; i < n; i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        TRY(fit_replica(m, d, max_batch, t->total, &t->replicas[i]));
        t->caps[t->first + i] = t->replicas[i]->max_batch;
    }
    TRY(clnet_trainer_share(t, t->caps, sizeof *t->caps));
    for (int i = m->count - 1; i >= 0; i--)
        if (m->nodes[i].kind->batch_stats) t->batch_stats = &m->nodes[i];
    for (int i = 0; i < t->total; i++) index[i] = t->peers[i].index;
    TRY(clnet_balance_init(&t->balance, index, t->total));
    TRY(clnet_local_group_create(&t->group, t->total, COLLECTIVE_BYTES));
    TRY(clnet_workers_create(&t->workers, n));
    *out = t;
    t = NULL;
cleanup:
    free(index);
    clnet_trainer_free(t);
    return status;
}
