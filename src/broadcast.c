/* The model's state between the host and the replicas (see broadcast.h).
 * Each replica's part runs on its own worker thread (worker.h says why). */
#include "broadcast.h"
#include "alloc.h"
#include "error.h"

#include <stdlib.h>

typedef struct {
    clnet_trainer *t;
    const clnet_model *m;
    int buffers;
} state_job;

static clnet_status write_state(int i, void *arg) {
    state_job *j = arg;
    return clnet_replica_write_state(j->t->replicas[i], j->m->params,
                                     j->buffers ? j->m->buffers : NULL);
}

clnet_status clnet_broadcast(clnet_trainer *t, const clnet_model *m, int buffers) {
    state_job j = {t, m, buffers};
    return clnet_workers_run(t->workers, write_state, &j, NULL);
}

typedef struct {
    clnet_trainer *t;
    const float *buffers;
    const int *active;
} idle_job;

static clnet_status write_idle(int i, void *arg) {
    idle_job *j = arg;
    clnet_replica *r = j->t->replicas[i];
    if (j->active[i]) return CLNET_OK;
    return clnet_replica_write_buffers(r, j->buffers);
}

clnet_status clnet_broadcast_to_idle(clnet_trainer *t, clnet_model *m, const int *active) {
    int source = -1, idle = 0;
    for (int i = 0; i < t->count; i++) {
        if (active[i] && source < 0) source = i;
        idle += !active[i];
    }
    if (!m->nbuffers || !idle || source < 0) return CLNET_OK;
    clnet_status s = clnet_replica_read_buffers(t->replicas[source], m->buffers);
    idle_job j = {t, m->buffers, active};
    return s == CLNET_OK ? clnet_workers_run(t->workers, write_idle, &j, NULL) : s;
}

typedef struct {
    clnet_trainer *t;
    const float *params;
} folded_job;

static clnet_status write_folded(int i, void *arg) {
    folded_job *j = arg;
    clnet_replica *r = j->t->replicas[i];
    return clnet_replica_folds(r) ? clnet_replica_write_folded(r, j->params) : CLNET_OK;
}

clnet_status clnet_broadcast_folded(clnet_trainer *t, clnet_model *m) {
    clnet_status status = CLNET_OK;
    int stale = 0;
    for (int i = 0; i < t->count; i++)
        stale |= clnet_replica_folds(t->replicas[i]) && !clnet_replica_folded_now(t->replicas[i]);
    if (!stale) return CLNET_OK;
    float *folded = clnet_malloc(m->nparams * sizeof(float));
    if (!folded) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory folding batch norms");
    TRY(clnet_broadcast_gather(t, m));
    TRY(clnet_model_fold(m, folded));
    folded_job j = {t, folded};
    TRY(clnet_workers_run(t->workers, write_folded, &j, NULL));
cleanup:
    free(folded);
    return status;
}

static clnet_status read_buffers(int i, void *arg) {
    state_job *j = arg;
    return i ? CLNET_OK : clnet_replica_read_buffers(j->t->replicas[0], j->m->buffers);
}

clnet_status clnet_broadcast_gather(clnet_trainer *t, clnet_model *m) {
    state_job j = {t, m, 1};
    if (!m->nbuffers) return CLNET_OK;
    return clnet_workers_run(t->workers, read_buffers, &j, NULL);
}
