/* One thread per task, failures carried back to the caller. */
#include "parallel.h"
#include "error.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    int index;
    clnet_task_fn fn;
    void *ctx;
    clnet_error_slot error;
} task;

static void *run_task(void *arg) {
    task *t = arg;
    clnet_error_save(&t->error, t->fn(t->index, t->ctx));
    return NULL;
}

clnet_status clnet_parallel_for(int n, clnet_task_fn fn, void *ctx) {
    if (n <= 0) return CLNET_OK;
    if (n == 1) return fn(0, ctx);
    task *tasks = calloc((size_t)n, sizeof *tasks);
    pthread_t *threads = calloc((size_t)n, sizeof *threads);
    int *started = calloc((size_t)n, sizeof *started);
    clnet_status status = CLNET_OK;
    if (!tasks || !threads || !started) {
        status = clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory starting %d threads", n);
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        tasks[i] = (task){.index = i, .fn = fn, .ctx = ctx};
        started[i] = pthread_create(&threads[i], NULL, run_task, &tasks[i]) == 0;
        if (!started[i]) /* run it here instead: slower, still correct */
            run_task(&tasks[i]);
    }
    for (int i = 0; i < n; i++)
        if (started[i]) pthread_join(threads[i], NULL);
    for (int i = 0; i < n; i++) {
        if (status == CLNET_OK && tasks[i].error.status != CLNET_OK)
            status = clnet_error_restore(&tasks[i].error);
        else
            free(tasks[i].error.message);
    }
cleanup:
    free(tasks);
    free(threads);
    free(started);
    return status;
}
