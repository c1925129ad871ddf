/* Collectives across the replicas of one step: every replica that takes
 * part makes the same calls in the same order, and each call returns when
 * all have made it. Results never depend on timing: contributions are
 * combined in rank order (replicas in device order).
 *
 * This is the one place where replicas talk to each other during a pass
 * (batch norm synchronized across devices exchanges its statistics here).
 * The in-process implementation below serves the devices of one process;
 * in an MPI job an outer level (clnet_outer_group) takes each process's
 * combined contribution across the ranks, behind the same table. */
#ifndef CLNET_COLLECTIVE_H
#define CLNET_COLLECTIVE_H

#include "clnet.h"

#include <stddef.h>

typedef struct clnet_collective clnet_collective;
struct clnet_collective {
    int rank, size; /* this replica's place among those taking part */
    /* values[0..n) := the sum over ranks, added in rank order, in double. */
    clnet_status (*sum)(clnet_collective *c, double *values, size_t n);
    /* all[r * bytes ..] := rank r's `mine` (bytes each), for every rank. */
    clnet_status (*gather)(clnet_collective *c, const void *mine, size_t bytes, void *all);
    void *impl;
};

/* The shared state of an in-process collective for up to `capacity`
 * replicas in all processes, with room for `bytes_per_rank` per
 * contribution (a larger call fails). Made once when a net is bound. */
typedef struct clnet_local_group clnet_local_group;
clnet_status clnet_local_group_create(clnet_local_group **out, int capacity, size_t bytes_per_rank);
void clnet_local_group_free(clnet_local_group *g);
/* The processes above a local group (MPI). The local replicas are ranks
 * base .. base + size - 1 of `total` taking part in all processes. */
typedef struct {
    /* values[0..n) := the sum over every process, given this one's sum */
    clnet_status (*sum)(void *arg, double *values, size_t n);
    /* all := every process's contributions in rank order, given this
     * process's own, which are `bytes` each */
    clnet_status (*gather)(void *arg, const void *mine, size_t bytes, void *all);
    void *arg;
    int base, total;
} clnet_outer_group;

/* Starts a round of steps with `size` replicas taking part; handles[r] is
 * local replica r's view, for r < size. outer: the processes above, or
 * NULL. Not while a collective call is in flight. */
void clnet_local_group_reset(clnet_local_group *g, int size, clnet_collective *handles,
                             const clnet_outer_group *outer);
/* Wakes every waiting rank with a failure, and makes later calls fail at
 * once: for a replica that failed, so that the others do not wait for it
 * forever. Lasts until the next reset. */
void clnet_local_group_abort(clnet_local_group *g);

#endif
