/* Running one task per device on its own host thread. Some drivers (PoCL's
 * basic device) run kernels on the thread that waits for them, so devices
 * driven from one thread would take turns. */
#ifndef CLNET_PARALLEL_H
#define CLNET_PARALLEL_H

#include "clnet.h"

typedef clnet_status (*clnet_task_fn)(int index, void *ctx);

/* Runs fn(0..n-1, ctx), each on its own thread, and waits for all. If any
 * fails, returns the failure of the lowest index, with its message on the
 * calling thread (as if it had failed here). */
clnet_status clnet_parallel_for(int n, clnet_task_fn fn, void *ctx);

#endif
