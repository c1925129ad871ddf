/* Binding a model to devices: replicas, workers, the step's memory. */
#include "trainer.h"
#include "alloc.h"
#include "env.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for one replica's contribution to one collective call (8192
 * doubles: per-channel statistics of the widest layers fit many times); a
 * larger call fails with a message giving both sizes. */
#define COLLECTIVE_BYTES (64 * 1024)

/* The largest micro-batch up to max_batch whose replica fits the device.
 * CLNET_MICRO_BATCH=N, `cap` (0: none), caps it (to exercise micro-batches
 * on big devices). */
static clnet_status fit_replica(const clnet_model *m, clnet_device *d, int max_batch, int cap,
                                int ranks, clnet_replica **out) {
    clnet_status s = CLNET_ERR_DEVICE_MEMORY;
    if (cap >= 1 && cap < max_batch) max_batch = cap;
    for (int b = max_batch; b >= 1; b /= 2) {
        s = clnet_replica_create(out, m, d, b, ranks);
        if (s != CLNET_ERR_DEVICE_MEMORY) return s;
        if (b == 1) break;
    }
    return s; /* the message of the 1-sample attempt says what is needed */
}

/* The step's memory, made once for every step to come; 0 when out of
 * memory (step_state_free frees what was made). */
static int step_state_make(clnet_step_state *s, size_t replicas, size_t devices, size_t nparams,
                           size_t nodes) {
    size_t R = replicas, buckets = R * nodes + 1;
    s->shares = clnet_calloc(devices, sizeof(int));
    s->offsets = clnet_calloc(devices, sizeof(int));
    s->active = clnet_calloc(R, sizeof(int));
    s->correct = clnet_calloc(R, sizeof(int));
    s->finished = clnet_calloc(R, sizeof(int));
    s->loss = clnet_calloc(R, sizeof(double));
    s->seconds = clnet_calloc(devices, sizeof(double));
    s->posted = clnet_calloc(buckets, sizeof(int));
    s->events = clnet_calloc(buckets, sizeof(cl_event));
    s->data = clnet_calloc(buckets, sizeof(float *));
    s->grad_sum = clnet_calloc(nparams + 1, sizeof(float));
    s->next = clnet_calloc(nparams + 1, sizeof(float));
    s->updated = clnet_calloc(nodes + 1, sizeof(int));
    s->coll = clnet_calloc(R, sizeof *s->coll);
    s->ctx = clnet_calloc(R, sizeof *s->ctx);
    if (!s->shares || !s->offsets || !s->active || !s->correct || !s->finished || !s->loss ||
        !s->seconds || !s->posted || !s->events || !s->data || !s->grad_sum || !s->next ||
        !s->updated || !s->coll || !s->ctx) {
        free(s->shares);
        s->shares = NULL; /* the lock was never made */
        return 0;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    return 1;
}

static void step_state_free(clnet_step_state *s) {
    if (s->shares) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->changed);
    }
    free(s->shares), free(s->offsets), free(s->active), free(s->correct), free(s->finished);
    free(s->loss), free(s->seconds), free(s->posted), free(s->events), free(s->data);
    free(s->grad_sum), free(s->next), free(s->updated), free(s->coll), free(s->ctx);
    clnet_local_group_free(s->group);
}

static void ranks_free(clnet_ranks *r) {
    clnet_dist_free(r->dist);
    free(r->peers), free(r->rank_count), free(r->rank_active), free(r->record);
}

void clnet_trainer_free(clnet_trainer *t) {
    if (!t) return;
    clnet_workers_free(t->workers); /* first: no job may still use what follows */
    for (int i = 0; i < t->count && t->replicas; i++) clnet_replica_free(t->replicas[i]);
    free(t->replicas);
    clnet_balance_free(&t->split.balance);
    clnet_faults_free(&t->split.faults);
    free(t->split.caps);
    free(t->alive), free(t->dropped_step), free(t->dropped_why);
    step_state_free(&t->step);
    ranks_free(&t->ranks);
    free(t);
}

/* In an MPI job: how many devices each rank has, and where this one's begin. */
static clnet_status count_devices(clnet_trainer *t) {
    int ranks = clnet_mpi_size(), *counts = clnet_calloc((size_t)ranks, sizeof *counts);
    if (!counts) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    t->ranks.rank_count = counts;
    t->ranks.first = 0;
    t->ranks.total = counts[0] = t->count;
    if (!t->ranks.dist) return CLNET_OK;
    if (ranks > CLNET_MAX_DEVICES)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%d ranks: clnet trains on 1 to %d", ranks,
                          CLNET_MAX_DEVICES);
    clnet_status s = clnet_dist_allgather(t->ranks.dist, CLNET_LANE_CONTROL, &t->count, sizeof(int),
                                          counts, "counting the devices of every rank");
    if (s != CLNET_OK) return s;
    t->ranks.total = 0;
    for (int r = 0; r < ranks; r++) {
        if (r == clnet_mpi_rank()) t->ranks.first = t->ranks.total;
        t->ranks.total += counts[r];
    }
    if (t->ranks.total > CLNET_MAX_DEVICES)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%d devices on %d ranks: clnet trains on 1 to %d devices in all",
                          t->ranks.total, ranks, CLNET_MAX_DEVICES);
    return CLNET_OK;
}

clnet_status clnet_trainer_create(clnet_trainer **out, const clnet_model *m, clnet_runtime *rt,
                                  int max_batch) {
    clnet_status status = CLNET_OK;
    int n = clnet_runtime_device_count(rt), *index = NULL;
    clnet_env env = {0}; /* read once, here: the overlaps, the micro-batch cap, the test hooks */
    clnet_trainer *t = clnet_calloc(1, sizeof *t);
    *out = NULL;
    if (!t) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory binding the net");
    t->model = m;
    t->count = n;
    t->max_batch = max_batch;
    TRY(clnet_env_read(&env));
    TRY(clnet_dist_create(&t->ranks.dist));
    t->ranks.overlap = env.mpi_overlap;
    TRY(count_devices(t));
    t->overlap = env.overlap;
    t->by_bucket = !t->ranks.dist && t->overlap;
    size_t all = (size_t)t->ranks.total;
    t->replicas = clnet_calloc((size_t)n, sizeof *t->replicas);
    index = clnet_calloc(all, sizeof *index);
    t->ranks.peers = clnet_calloc(all, sizeof *t->ranks.peers);
    t->ranks.rank_active = clnet_calloc((size_t)clnet_mpi_size(), sizeof *t->ranks.rank_active);
    t->ranks.record = clnet_calloc(2 * (size_t)clnet_mpi_size() + all, sizeof *t->ranks.record);
    t->split.caps = clnet_calloc(all, sizeof *t->split.caps);
    t->alive = clnet_calloc((size_t)n, sizeof *t->alive);
    t->dropped_step = clnet_calloc((size_t)n, sizeof *t->dropped_step);
    t->dropped_why = clnet_calloc((size_t)n, sizeof *t->dropped_why);
    if (!step_state_make(&t->step, (size_t)n, all, m->nparams, (size_t)m->count) || !t->replicas ||
        !index || !t->ranks.peers || !t->ranks.rank_active || !t->ranks.record || !t->split.caps ||
        !t->alive || !t->dropped_step || !t->dropped_why)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory binding the net");
    for (int i = 0; i < n; i++) t->alive[i] = 1, t->dropped_step[i] = -1;
    t->alive_count = n;
    for (int i = 0; i < n; i++) {
        clnet_peer_device *p = &t->ranks.peers[t->ranks.first + i];
        clnet_device *d = clnet_runtime_device(rt, i);
        p->rank = clnet_mpi_rank();
        p->index = d->info.index;
        snprintf(p->name, sizeof p->name, "%s", d->info.name);
    }
    TRY(clnet_ranks_share(&t->ranks, t->ranks.peers, sizeof *t->ranks.peers));
    for (int i = 0; i < n; i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        TRY(fit_replica(m, d, max_batch, env.micro_batch, t->ranks.total, &t->replicas[i]));
        t->replicas[i]->overlap = t->overlap;
        t->split.caps[t->ranks.first + i] = t->replicas[i]->max_batch;
    }
    TRY(clnet_ranks_share(&t->ranks, t->split.caps, sizeof *t->split.caps));
    for (int i = m->count - 1; i >= 0; i--)
        if (m->nodes[i].kind->batch_stats) t->split.batch_stats = &m->nodes[i];
    for (int i = 0; i < t->ranks.total; i++) index[i] = t->ranks.peers[i].index;
    TRY(clnet_balance_init(&t->split.balance, t->ranks.total));
    TRY(clnet_faults_init(&t->split.faults, &env, index, t->ranks.total));
    TRY(clnet_local_group_create(&t->step.group, t->ranks.total, COLLECTIVE_BYTES));
    TRY(clnet_workers_create(&t->workers, n));
    *out = t;
    t = NULL;
cleanup:
    free(index);
    clnet_env_free(&env);
    clnet_trainer_free(t);
    return status;
}

clnet_status clnet_trainer_fit_work(clnet_trainer *t) {
    for (int i = 0; t && i < t->count; i++) {
        if (!t->alive[i]) continue;
        clnet_status s = clnet_replica_fit_work(t->replicas[i]);
        if (s != CLNET_OK) return s;
    }
    return CLNET_OK;
}

int clnet_trainer_drop(clnet_trainer *t, int i, int64_t step, clnet_status s) {
    if (s == CLNET_ERR_NONFINITE || i < 0 || t->on_failure != CLNET_ON_FAILURE_CONTINUE ||
        t->ranks.dist || t->alive_count < 2 || !t->alive[i])
        return 0;
    t->alive[i] = 0;
    t->alive_count--;
    t->dropped_step[i] = step;
    snprintf(t->dropped_why[i], sizeof t->dropped_why[i], "%s", clnet_last_error());
    clnet_balance_lose(&t->split.balance, t->ranks.first + i);
    t->split.caps[t->ranks.first + i] = 0;
    clnet_warn("step %lld: %s; that device is dropped, and %d device%s go%s on", (long long)step,
               t->dropped_why[i], t->alive_count, t->alive_count > 1 ? "s" : "",
               t->alive_count > 1 ? "" : "es");
    return 1;
}
