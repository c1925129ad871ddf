/* The model's state between the host and the replicas (see broadcast.h).
 * Each replica's part runs on its own worker thread (worker.h says why). */
#include "broadcast.h"
#include "alloc.h"
#include "error.h"
#include "fileio.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return clnet_workers_run(t->workers, write_state, &j, t->alive);
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
        idle += !active[i] && t->alive[i];
    }
    if (!m->nbuffers || !idle || source < 0) return CLNET_OK;
    clnet_status s = clnet_replica_read_buffers(t->replicas[source], m->buffers);
    idle_job j = {t, m->buffers, active};
    return s == CLNET_OK ? clnet_workers_run(t->workers, write_idle, &j, t->alive) : s;
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
    TRY(clnet_workers_run(t->workers, write_folded, &j, t->alive));
cleanup:
    free(folded);
    return status;
}

static clnet_status read_buffers(int i, void *arg) {
    state_job *j = arg;
    return clnet_replica_read_buffers(j->t->replicas[i], j->m->buffers);
}

/* The first replica still training: every one holds the same buffers. */
static int first_alive(const clnet_trainer *t) {
    for (int i = 0; i < t->count; i++)
        if (t->alive[i]) return i;
    return 0;
}

clnet_status clnet_broadcast_gather(clnet_trainer *t, clnet_model *m) {
    int one[CLNET_MAX_DEVICES] = {0};
    state_job j = {t, m, 1};
    if (!m->nbuffers) return CLNET_OK;
    one[first_alive(t)] = 1;
    return clnet_workers_run(t->workers, read_buffers, &j, one);
}

/* ---- --check-replicas ---------------------------------------------------------------- */

typedef struct {
    clnet_trainer *t;
    const clnet_model *m;
    float *host; /* (count, nparams + nbuffers) what each replica holds */
} check_job;

static clnet_status read_state(int i, void *arg) {
    check_job *j = arg;
    clnet_replica *r = j->t->replicas[i];
    size_t np = j->m->nparams, nb = j->m->nbuffers;
    float *p = j->host + (size_t)i * (np + nb);
    clnet_status s = clnet_buffer_read(r->d, r->params, 0, np, p);
    return s == CLNET_OK && nb ? clnet_replica_read_buffers(r, p + np) : s;
}

/* The first element where a and b differ bit for bit, or n. */
static size_t first_difference(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float))) return i;
    return n;
}

static clnet_status drifted(const clnet_model *m, const clnet_replica *r, int buffers, size_t i,
                            float have, float want, const char *whose) {
    char what[512];
    clnet_model_describe(m, buffers, i, what, sizeof what);
    return clnet_fail(CLNET_ERR_WRONG_RESULT,
                      "device %d (%s) has drifted from %s: %s %s is %.9g there, %.9g in %s",
                      r->d->info.index, r->d->info.name, whose, buffers ? "buffer" : "parameter",
                      what, have, want, whose);
}

/* Under MPI: this rank's state against rank 0's, by checksum. */
static clnet_status check_ranks(clnet_trainer *t, const float *state, size_t n) {
    int ranks = clnet_mpi_size();
    uint64_t mine = clnet_fnv1a(state, n * sizeof(float), CLNET_FNV_BASIS),
             *all = clnet_calloc((size_t)ranks, sizeof *all);
    if (!all) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory checking the replicas");
    clnet_status s = clnet_dist_allgather(t->ranks.dist, CLNET_LANE_CONTROL, &mine, sizeof mine,
                                          all, "comparing the ranks' replicas");
    for (int r = 1; s == CLNET_OK && r < ranks; r++)
        if (all[r] != all[0])
            s = clnet_fail(CLNET_ERR_WRONG_RESULT,
                           "rank %d's parameters and buffers differ from rank 0's (checksums "
                           "%016llx and %016llx): the replicas have drifted apart",
                           r, (unsigned long long)all[r], (unsigned long long)all[0]);
    free(all);
    return s;
}

clnet_status clnet_broadcast_check(clnet_trainer *t, const clnet_model *m) {
    clnet_status status = CLNET_OK;
    size_t np = m->nparams, nb = m->nbuffers, each = np + nb;
    check_job j = {t, m, clnet_malloc((size_t)t->count * each * sizeof(float) + 1)};
    if (!j.host) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory checking the replicas");
    TRY(clnet_workers_run(t->workers, read_state, &j, t->alive));
    int f = first_alive(t);
    for (int i = 0; i < t->count; i++) {
        if (!t->alive[i]) continue;
        const float *p = j.host + (size_t)i * each, *first = j.host + (size_t)f * each;
        size_t k = first_difference(p, m->params, np);
        if (k < np) TRY(drifted(m, t->replicas[i], 0, k, p[k], m->params[k], "the host's copy"));
        k = i != f ? first_difference(p + np, first + np, nb) : nb;
        if (k < nb) {
            char whose[64];
            snprintf(whose, sizeof whose, "device %d's copy", t->replicas[f]->d->info.index);
            TRY(drifted(m, t->replicas[i], 1, k, p[np + k], first[np + k], whose));
        }
    }
    if (t->ranks.dist) { /* the host's parameters, and the first device's buffers */
        memmove(j.host + np, j.host + (size_t)f * each + np, nb * sizeof(float));
        memcpy(j.host, m->params, np * sizeof(float));
        TRY(check_ranks(t, j.host, each));
    }
cleanup:
    free(j.host);
    return status;
}
