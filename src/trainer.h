/* The training state of a bound net, apart from the model: one replica per
 * device with its persistent worker thread, where the devices of every rank
 * stand, the load balancer, and everything a step needs, allocated here
 * once so that a steady-state step allocates nothing. step.c drives
 * synchronous steps over it, async.c the parameter server. */
#ifndef CLNET_TRAINER_H
#define CLNET_TRAINER_H

#include "balance.h"
#include "fault.h"
#include "ranks.h"
#include "replica.h"
#include "worker.h"

#include <pthread.h>

/* How a batch is split across the devices: the balancer, and the limits
 * a split must keep. */
typedef struct {
    clnet_balance balance;
    clnet_faults faults; /* the tests' slowdowns and faults (fault.h) */
    int deterministic;   /* a fixed split: runs repeat bit for bit */
    /* The first node with batch statistics (batch norm), or NULL: then a
     * training share runs in one pass, so shares are capped at caps[i], the
     * most samples device i holds. */
    const clnet_node *batch_stats;
    int *caps; /* (total) */
} clnet_trainer_split;

/* A step in flight: step.c's alone (trainer.c only allocates it, tests
 * read grad_sum after a step), so that one file drives the step and no
 * other writes into it mid-way. The step's batch and mode are not here:
 * they reach the step, and its workers, as the arguments of its call. */
typedef struct {
    /* the shares and what each replica made of its own */
    int *shares, *offsets;            /* (total) */
    int *active, *correct, *finished; /* (count) */
    double *loss;                     /* (count) */
    double *seconds;                  /* (total) */
    /* the gradient buckets' hand-over from the workers to the reducer */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int *posted;        /* [replica * nodes + node]: bucket ready */
    cl_event *events;   /* its transfer, until the host waited for it */
    const float **data; /* where the host reads it */
    float *grad_sum;    /* (nparams) the summed gradient */
    int bad_node;       /* the first node whose summed gradient is not finite, or -1 */
    int first_failed;   /* the replica that failed first (the others may fail for it), or -1 */
    int reduced;        /* nodes the host has reduced so far in this step */
    int started;        /* the replicas started this training step (their buffers kept) */
    /* The update of a step in one process, bucket by bucket as they are
     * reduced (step.c): new parameters to `next`, which each replica's
     * worker sends on to its params_next while the backward pass of the
     * nodes below may still run; the optimizer's state to its next copy.
     * Made current when the whole step is known to be applied; until then
     * the step can be withdrawn. */
    float *next;       /* (nparams) the new parameters */
    int *updated;      /* (nodes) node's new parameters are in `next` */
    int updates_over;  /* the reducer makes no more updates in this step */
    size_t bad_update; /* the first parameter whose update is not finite, or nparams */
    /* the replicas' passes: their collectives and execution contexts */
    clnet_local_group *group; /* collectives across the replicas of a step */
    clnet_collective *coll;   /* (count) each taking replica's view of the group */
    clnet_ctx *ctx;           /* (count) */
} clnet_step_state;

/* What a training step staged of the batch of the step after it, which
 * the caller's feed gives (clnet_step_feed, step.h). */
typedef struct {
    uint64_t staged; /* the ticket of the batch staged on the devices */
    /* The next batch split during the update by bucket (step.c's
     * stage_ahead), under the step's lock: ahead -1 not tried yet in this
     * step, 2 being split, 0 not to be had, 1 split into shares and offsets
     * (as the next step will split it unless this step's timings move the
     * balancer). */
    int ahead;
    clnet_batch batch;
    uint64_t ticket;
    int shares[CLNET_MAX_DEVICES], offsets[CLNET_MAX_DEVICES];
} clnet_trainer_feed;

typedef struct {
    const clnet_model *model;
    int max_batch; /* the global batch the net is bound for */
    /* 1: a step's update runs bucket by bucket during the backward pass
     * (step.c); 0 in an MPI job and with CLNET_OVERLAP=off: after it */
    int by_bucket;
    int overlap; /* 0 with CLNET_OVERLAP=off (read once, here): every replica's too */
    /* this process's devices */
    int count; /* replicas, one per device, in device order */
    clnet_replica **replicas;
    clnet_workers *workers; /* worker i drives replica i */

    /* Devices dropped after a failure, with CLNET_ON_FAILURE_CONTINUE
     * (step.c): alive[i] 0 once replica i is; its step and why. Jobs run
     * on the alive replicas alone. */
    int on_failure;
    int *alive; /* (count) */
    int alive_count;
    int64_t *dropped_step;    /* (count) */
    char (*dropped_why)[256]; /* (count) */

    clnet_ranks ranks;
    clnet_trainer_split split;
    clnet_step_state step;
    clnet_trainer_feed feed;
    /* Asynchronous training's state (async.c), made on its first use and
     * freed by clnet_async_free before the trainer. */
    struct clnet_async *async;
} clnet_trainer;

/* Places a replica of m on every device of rt, each the largest micro-batch
 * up to max_batch that fits, starts the workers and allocates the step's
 * state. The model must outlive the trainer. */
clnet_status clnet_trainer_create(clnet_trainer **out, const clnet_model *m, clnet_runtime *rt,
                                  int max_batch);
void clnet_trainer_free(clnet_trainer *t);
/* With CLNET_ON_FAILURE_CONTINUE, one process (under MPI the other ranks'
 * collectives would be left half done) and another device left, replica
 * i, which failed in `step` with s (not CLNET_ERR_NONFINITE: that is the
 * numbers', not the device's), is dropped: alive[i] 0, no share and no job
 * from now on, and a warning says so. Returns whether it was; callers
 * serialize it. */
int clnet_trainer_drop(clnet_trainer *t, int i, int64_t step, clnet_status s);

/* Every replica's scratch fitted to its device's GEMM choices as they stand
 * (clnet_replica_fit_work): between steps, after pins or tuning. */
clnet_status clnet_trainer_fit_work(clnet_trainer *t);

#endif
