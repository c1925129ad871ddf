/* Several processes: the MPI level of the coordinator (dist.c with MPI,
 * dist_none.c without; dist_job.c in both).
 *
 * A job started by mpirun has R ranks; each drives its own devices as one
 * process does, and the ranks meet here. Every call below is collective:
 * every rank of the group makes it, in the same order per lane. A wait that
 * outlasts the timeout (clnet_mpi_set_timeout) fails with CLNET_ERR_MPI
 * instead of hanging. In a build without MPI the job is always one rank,
 * nothing here is called, and clnet_dist_create gives NULL. */
#ifndef CLNET_DIST_H
#define CLNET_DIST_H

#include "clnet.h"

#include <stddef.h>
#include <stdint.h>

/* Calls from different threads go on different lanes (communicators), so
 * that each lane's calls come in the same order on every rank: the step's
 * thread uses CONTROL and BUCKETS, the one device thread per rank that
 * combines a collective (batch norm) uses BATCH. SERVER carries the
 * point-to-point messages of asynchronous training (async.c), which are
 * matched by tag, not by order. */
typedef enum {
    CLNET_LANE_CONTROL,
    CLNET_LANE_BUCKETS,
    CLNET_LANE_BATCH,
    CLNET_LANE_SERVER,
    CLNET_LANE_ARRIVALS, /* (inside dist.c) who is where, for timeouts */
    CLNET_LANES
} clnet_lane;

typedef struct clnet_dist clnet_dist;

/* This process's place in the job: clnet_mpi_rank() and clnet_mpi_size()
 * (clnet.h), 0 and 1 unless clnet_mpi_init joined one. */

/* The whole job's control lane, for calls before a net is bound (loading a
 * checkpoint); NULL in a job of one rank. */
clnet_dist *clnet_dist_world(void);

/* How long a wait may last (clnet_mpi_set_timeout), in seconds. */
double clnet_dist_timeout(void);

/* The size of the job a launcher (mpirun, or a PMI launcher) started this
 * process in, from its environment (read now), and *rank this process's; 1
 * and 0 when none did (or, out of memory, when it could not be read: the
 * status says so). */
clnet_status clnet_job_launched(int *size, int *rank);

/* A group for one bound net, with lanes of its own; *out is NULL in a job
 * of one rank. Collective. */
clnet_status clnet_dist_create(clnet_dist **out);
void clnet_dist_free(clnet_dist *d);

/* A training step begins: from now on a wait that times out names the
 * ranks that did not arrive, with the step each was last heard from in. */
clnet_status clnet_dist_begin_step(clnet_dist *d, int64_t step);

/* buf (bytes) from rank root to every rank. */
clnet_status clnet_dist_bcast(clnet_dist *d, clnet_lane lane, void *buf, size_t bytes, int root,
                              const char *what);
/* all[r * bytes ..] := rank r's mine, for every rank. */
clnet_status clnet_dist_allgather(clnet_dist *d, clnet_lane lane, const void *mine, size_t bytes,
                                  void *all, const char *what);
/* all := every rank's mine, rank after rank; rank r gives bytes[r]. mine
 * NULL: this rank's part is in place in all already. */
clnet_status clnet_dist_allgatherv(clnet_dist *d, clnet_lane lane, const void *mine,
                                   const int *bytes, void *all, const char *what);
/* values[0..n) := the sum over ranks, added in rank order (so every rank
 * gets the same bits, and runs repeat them). */
clnet_status clnet_dist_sum(clnet_dist *d, clnet_lane lane, double *values, size_t n,
                            const char *what);

/* ---- point to point (lane SERVER) ---------------------------------------------------- */

/* Sends buf (bytes) to rank `to` with `tag`; returns when buf may be reused. */
clnet_status clnet_dist_send(clnet_dist *d, int to, int tag, const void *buf, size_t bytes,
                             const char *what);
/* Receives the next message from rank `from` with `tag` into buf (room for
 * `bytes`); *got (when not NULL) its size. */
clnet_status clnet_dist_recv(clnet_dist *d, int from, int tag, void *buf, size_t bytes, size_t *got,
                             const char *what);
/* Takes a message with `tag` from any rank if one has come, without
 * waiting: *from its rank and *got its size, or *from -1. */
clnet_status clnet_dist_poll(clnet_dist *d, int tag, void *buf, size_t bytes, int *from,
                             size_t *got, const char *what);

/* ---- the gradient buckets of a step (lane BUCKETS) -------------------------------- */

/* Room for up to `buckets` buckets of `floats` floats in all in one step.
 * deterministic: buckets are summed in rank order from every rank's copy
 * (R times the memory and the traffic); else by MPI's allreduce, whose
 * order is its own. Made once: the steps allocate nothing. */
clnet_status clnet_dist_buckets_prepare(clnet_dist *d, size_t floats, int buckets,
                                        int deterministic);
/* Starts summing data[0..n) over ranks, in place; `name` (the layer) is for
 * messages and must outlive the step. */
clnet_status clnet_dist_bucket_start(clnet_dist *d, float *data, size_t n, const char *name);
/* Lets MPI move the buckets in flight (Open MPI has no progress thread of
 * its own): called while the step waits for its devices. 1 while any is in flight. */
int clnet_dist_progress(clnet_dist *d);
/* Waits for every bucket started; step names the step for messages. */
clnet_status clnet_dist_buckets_finish(clnet_dist *d, int64_t step);

/* Figures of the buckets since the group was made. */
typedef struct {
    uint64_t steps;          /* steps whose buckets were reduced */
    uint64_t bytes;          /* bytes each rank handed to reductions */
    double seconds_exposed;  /* waiting in clnet_dist_buckets_finish */
    double seconds_inflight; /* from each first start to each finish's end */
} clnet_dist_stats;
void clnet_dist_get_stats(const clnet_dist *d, clnet_dist_stats *out);

#endif
