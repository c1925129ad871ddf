/* The in-process collective: replicas of one step meet at a barrier; the
 * last to arrive combines the contributions in rank order and wakes the
 * others. A contribution goes into its rank's own slot and the result into
 * a separate area, so a fast rank may deposit its next contribution while a
 * slow one still reads the last result: the next result is written only
 * once every rank has deposited again, that is after all have read. */
#include "collective.h"
#include "alloc.h"
#include "error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct clnet_local_group {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int capacity, size;
    int arrived;         /* ranks that have deposited this round */
    unsigned long round; /* completed rounds */
    int aborted;
    clnet_outer_group outer; /* total 0: none */
    size_t slot_bytes;       /* room per rank */
    unsigned char *slots;    /* capacity x slot_bytes: contributions */
    unsigned char *result;   /* capacity x slot_bytes: the round's result */
};

clnet_status clnet_local_group_create(clnet_local_group **out, int capacity,
                                      size_t bytes_per_rank) {
    clnet_local_group *g = clnet_calloc(1, sizeof *g);
    *out = NULL;
    if (!g) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    g->capacity = capacity;
    g->slot_bytes = bytes_per_rank;
    g->slots = clnet_malloc((size_t)capacity * bytes_per_rank);
    g->result = clnet_malloc((size_t)capacity * bytes_per_rank);
    if (!g->slots || !g->result) {
        clnet_local_group_free(g);
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->changed, NULL);
    *out = g;
    return CLNET_OK;
}

void clnet_local_group_free(clnet_local_group *g) {
    if (!g) return;
    if (g->slots && g->result) {
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->changed);
    }
    free(g->slots);
    free(g->result);
    free(g);
}

typedef enum { OP_SUM, OP_GATHER } op_kind;

/* One collective call of `rank`: deposit, wait for the round, read. */
static clnet_status meet(clnet_collective *c, op_kind op, const void *mine, size_t bytes,
                         void *out) {
    clnet_local_group *g = c->impl;
    clnet_status status = CLNET_OK;
    pthread_mutex_lock(&g->lock);
    if (g->aborted) {
        status =
            clnet_fail(CLNET_ERR_INTERNAL, "a collective was abandoned: another device failed");
        goto done;
    }
    if (bytes > g->slot_bytes) {
        status =
            clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                       "a collective of %zu bytes exceeds its room of %zu", bytes, g->slot_bytes);
        goto done;
    }
    int local = c->rank - g->outer.base, total = g->outer.total ? g->outer.total : g->size;
    memcpy(g->slots + (size_t)local * g->slot_bytes, mine, bytes);
    unsigned long round = g->round;
    if (++g->arrived == g->size) { /* the last one combines, in rank order */
        if (op == OP_SUM) {
            double *sum = (double *)(void *)g->result;
            size_t n = bytes / sizeof(double);
            memcpy(sum, g->slots, bytes);
            for (int r = 1; r < g->size; r++) {
                const double *v = (const double *)(void *)(g->slots + (size_t)r * g->slot_bytes);
                for (size_t i = 0; i < n; i++) sum[i] += v[i];
            }
            if (g->outer.total) status = g->outer.sum(g->outer.arg, sum, n);
        } else {
            /* this process's contributions at their ranks' places; the outer
             * level fills in the others' */
            unsigned char *at = g->result + (size_t)g->outer.base * bytes;
            for (int r = 0; r < g->size; r++)
                memcpy(at + (size_t)r * bytes, g->slots + (size_t)r * g->slot_bytes, bytes);
            if (g->outer.total) status = g->outer.gather(g->outer.arg, at, bytes, g->result);
        }
        if (status != CLNET_OK) g->aborted = 1; /* the others must not read a partial result */
        g->arrived = 0;
        g->round++;
        pthread_cond_broadcast(&g->changed);
    } else {
        while (g->round == round && !g->aborted) pthread_cond_wait(&g->changed, &g->lock);
        if (g->aborted) {
            status =
                clnet_fail(CLNET_ERR_INTERNAL, "a collective was abandoned: another device failed");
            goto done;
        }
    }
    if (status == CLNET_OK) memcpy(out, g->result, op == OP_SUM ? bytes : bytes * (size_t)total);
done:
    pthread_mutex_unlock(&g->lock);
    return status;
}

static clnet_status local_sum(clnet_collective *c, double *values, size_t n) {
    return meet(c, OP_SUM, values, n * sizeof *values, values);
}

static clnet_status local_gather(clnet_collective *c, const void *mine, size_t bytes, void *all) {
    return meet(c, OP_GATHER, mine, bytes, all);
}

void clnet_local_group_reset(clnet_local_group *g, int size, clnet_collective *handles,
                             const clnet_outer_group *outer) {
    pthread_mutex_lock(&g->lock);
    g->size = size;
    g->arrived = 0;
    g->aborted = 0;
    g->outer = outer ? *outer : (clnet_outer_group){0};
    pthread_mutex_unlock(&g->lock);
    int base = g->outer.base, total = g->outer.total ? g->outer.total : size;
    for (int r = 0; r < size; r++)
        handles[r] = (clnet_collective){
            .rank = base + r, .size = total, .sum = local_sum, .gather = local_gather, .impl = g};
}

void clnet_local_group_abort(clnet_local_group *g) {
    pthread_mutex_lock(&g->lock);
    g->aborted = 1;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
}
