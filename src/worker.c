/* Persistent worker threads (see worker.h). */
#include "worker.h"
#include "alloc.h"
#include "error.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    pthread_t thread;
    int started;
    int busy; /* a job is posted and not finished */
    clnet_error_slot error;
    struct clnet_workers *pool;
    int index;
} worker;

struct clnet_workers {
    int n;
    worker *w;
    pthread_mutex_t lock;
    pthread_cond_t posted, finished;
    unsigned long generation; /* bumped for every job */
    clnet_job_fn fn;
    void *ctx;
    int stopping;
    int failed; /* the worker whose failure the last wait returned, or -1 */
};

static void *worker_main(void *arg) {
    worker *me = arg;
    clnet_workers *pool = me->pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stopping && !(pool->generation != seen && me->busy))
            pthread_cond_wait(&pool->posted, &pool->lock);
        if (pool->stopping) break;
        seen = pool->generation;
        clnet_job_fn fn = pool->fn;
        void *ctx = pool->ctx;
        pthread_mutex_unlock(&pool->lock);
        clnet_status s = fn(me->index, ctx);
        clnet_error_save(&me->error, s);
        pthread_mutex_lock(&pool->lock);
        me->busy = 0;
        pthread_cond_broadcast(&pool->finished);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

clnet_status clnet_workers_create(clnet_workers **out, int n) {
    clnet_workers *pool = clnet_calloc(1, sizeof *pool);
    *out = NULL;
    if (!pool) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    pool->n = n;
    pool->failed = -1;
    pool->w = clnet_calloc((size_t)n + 1, sizeof *pool->w);
    if (!pool->w) {
        free(pool);
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->posted, NULL);
    pthread_cond_init(&pool->finished, NULL);
    for (int i = 0; i < n; i++) {
        pool->w[i] = (worker){.pool = pool, .index = i};
        clnet_count_thread();
        if (pthread_create(&pool->w[i].thread, NULL, worker_main, &pool->w[i]) != 0) {
            clnet_workers_free(pool);
            return clnet_fail(CLNET_ERR_THREAD, "cannot start a worker thread for device %d", i);
        }
        pool->w[i].started = 1;
    }
    *out = pool;
    return CLNET_OK;
}

void clnet_workers_free(clnet_workers *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = 1;
    pthread_cond_broadcast(&pool->posted);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->n; i++) {
        if (pool->w[i].started) pthread_join(pool->w[i].thread, NULL);
        free(pool->w[i].error.message);
    }
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->posted);
    pthread_cond_destroy(&pool->finished);
    free(pool->w);
    free(pool);
}

void clnet_workers_start(clnet_workers *pool, clnet_job_fn fn, void *ctx, const int *active) {
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->generation++;
    for (int i = 0; i < pool->n; i++) {
        pool->w[i].busy = !active || active[i];
        pool->w[i].error.status = CLNET_OK;
    }
    pthread_cond_broadcast(&pool->posted);
    pthread_mutex_unlock(&pool->lock);
}

clnet_status clnet_workers_wait_prefer(clnet_workers *pool, int prefer) {
    clnet_status status = CLNET_OK;
    pthread_mutex_lock(&pool->lock);
    for (int i = 0; i < pool->n; i++)
        while (pool->w[i].busy) pthread_cond_wait(&pool->finished, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    if (prefer < 0 || prefer >= pool->n || pool->w[prefer].error.status == CLNET_OK) prefer = -1;
    pool->failed = -1;
    for (int k = -1; k < pool->n; k++) { /* the preferred one first, then in order */
        int i = k < 0 ? prefer : k;
        if (i < 0 || (k >= 0 && i == prefer) || pool->w[i].error.status == CLNET_OK) continue;
        if (status == CLNET_OK)
            status = clnet_error_restore(&pool->w[i].error), pool->failed = i;
        else
            free(pool->w[i].error.message);
        pool->w[i].error = (clnet_error_slot){CLNET_OK, NULL};
    }
    return status;
}

clnet_status clnet_workers_wait(clnet_workers *pool) {
    return clnet_workers_wait_prefer(pool, -1);
}

int clnet_workers_failed(const clnet_workers *pool) {
    return pool->failed;
}

clnet_status clnet_workers_run(clnet_workers *pool, clnet_job_fn fn, void *ctx, const int *active) {
    clnet_workers_start(pool, fn, ctx, active);
    return clnet_workers_wait(pool);
}
