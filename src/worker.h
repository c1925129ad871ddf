/* Persistent worker threads, one per device, started when a net is bound.
 * Some drivers (PoCL's basic device) run kernels on the thread that waits
 * for them, so devices driven from one thread would take turns; and
 * starting threads every step would cost time and allocations. A job is a
 * function run on chosen workers; failures are carried back to the caller
 * with their messages. */
#ifndef CLNET_WORKER_H
#define CLNET_WORKER_H

#include "clnet.h"

typedef clnet_status (*clnet_job_fn)(int index, void *ctx);
typedef struct clnet_workers clnet_workers;

/* Starts n threads (they wait for jobs). */
clnet_status clnet_workers_create(clnet_workers **out, int n);
/* Stops and joins the threads. NULL is harmless. */
void clnet_workers_free(clnet_workers *w);

/* Runs fn(i, ctx) on worker i for every i with active[i] (NULL: all) and
 * returns at once; the caller may work meanwhile. */
void clnet_workers_start(clnet_workers *w, clnet_job_fn fn, void *ctx, const int *active);
/* Waits for the started jobs. If any failed, returns the failure of the
 * lowest index, with its message on the calling thread. */
clnet_status clnet_workers_wait(clnet_workers *w);
/* The same, but returns worker `prefer`'s failure when it failed (the one
 * whose failure made the others fail); -1: none preferred. */
clnet_status clnet_workers_wait_prefer(clnet_workers *w, int prefer);
/* The worker whose failure the last wait returned, or -1. */
int clnet_workers_failed(const clnet_workers *w);
/* start + wait */
clnet_status clnet_workers_run(clnet_workers *w, clnet_job_fn fn, void *ctx, const int *active);

#endif
