/* A model on one device: its parameters, gradients and buffers, the
 * activation arenas planned for a largest batch, and the passes over them.
 * A replica is driven from one thread at a time (its device's worker). */
#ifndef CLNET_REPLICA_H
#define CLNET_REPLICA_H

#include "gemm.h"
#include "guard.h"
#include "links.h"
#include "memory.h"
#include "model.h"
#include "plan.h"

typedef struct {
    clnet_device *d;
    const clnet_model *model;
    int max_batch;
    size_t bytes; /* device memory the replica needs at max_batch */
    clnet_plan plan;
    cl_mem params, grads, buffers; /* (nparams), (nparams), (nbuffers) */
    /* (nparams) the next step's parameters while that step may still be
     * withdrawn: written bucket by bucket, made `params` by a swap */
    cl_mem params_next;
    /* (nbuffers) the buffers as a training step found them, so that a step
     * whose numbers are not finite can be undone (clnet_replica_keep_buffers) */
    cl_mem buffers_before;
    /* Evaluation's parameters with the batch norms folded in (clnet_model_fold), or
     * NULL when the model folds none: made for `folded_state`, and used
     * while that is still `state`, which every write of the parameters or
     * buffers and every training forward pass moves on. */
    cl_mem folded;
    uint64_t state, folded_state;
    cl_mem act, dact;              /* activation arenas */
    cl_mem *keeps;                 /* (model count) each node's kept memory, or NULL */
    clnet_links links;             /* what fused layers' passes share (links.h) */
    cl_kernel *kernels;            /* (model count x CLNET_NODE_KERNELS) kept kernels */
    clnet_gemm_site *gemms;        /* (model count x CLNET_NODE_GEMMS) GEMM call sites */
    clnet_gemm_record gemm_record; /* the GEMM choices its passes made (checkpoints) */
    cl_mem work;                   /* scratch shared by all nodes (plan.work floats) */
    unsigned work_version;         /* the device's gemm_version plan.work was sized under */
    cl_mem labels, loss, correct;  /* (max_batch) each */
    cl_mem targets;                /* (max_batch, target_size) floats, or NULL (none) */
    size_t target_size;            /* clnet_model_target_size */
    clnet_staging staging;         /* gradients read to the host (step.c) */
    float *loss_host;              /* (max_batch) */
    int32_t *correct_host;         /* (max_batch) */
    void *host;                    /* the nodes' host scratch (kind->host_bytes) */
    clnet_guard_region *guards;    /* CLNET_GUARD: room for a pass's regions, or NULL */
    /* What clnet_replica_stage uploaded ahead: a load of these very images,
     * labels and n takes them without copying again. */
    struct {
        const float *images;
        const int32_t *labels;
        const float *targets;
        int n;
    } staged;
    int64_t staged_loads; /* loads that found their batch uploaded ahead */
    int64_t staged_ahead; /* uploads started during the step before, by stage_ahead */
    /* An exchange of a batch norm on its way while later nodes' work runs
     * (clnet_pass.later): its node + 1 (0: none). */
    clnet_later later;
    int later_node;
    int later_ran; /* a pass ran while it was on its way */
    /* (model count) node b + 1 whose output gradient node i's backward
     * completes (b's first reader, through views), for b with a finish; 0:
     * none. overlap: 0 with CLNET_OVERLAP=off (the trainer sets it). */
    int *starts;
    int overlap;
    /* When not NULL, passes wait for every node and add its seconds here:
     * [2i] forward and [2i+1] backward of node i (for benchmarks). */
    double *profile;
} clnet_replica;

/* Plans and allocates, for steps shared by up to `ranks` replicas; fails
 * with CLNET_ERR_DEVICE_MEMORY, saying how much is needed and how much the
 * device has, before allocating anything. */
clnet_status clnet_replica_create(clnet_replica **out, const clnet_model *m, clnet_device *d,
                                  int max_batch, int ranks);
void clnet_replica_free(clnet_replica *r);

/* Sizes the scratch again when the device's GEMM choices changed since it
 * was planned (d->gemm_version: pins, tuning), and grows it when the
 * candidates chosen now take more; nothing when they did not change. Every
 * forward pass calls it first; call it between steps so that no step
 * allocates. */
clnet_status clnet_replica_fit_work(clnet_replica *r);

/* The model's parameters, and its float buffers when buffers is not NULL,
 * to the device. Buffers live on the devices while a net is bound (layers
 * update them there), so only binding, initialising and loading send them. */
clnet_status clnet_replica_write_state(clnet_replica *r, const float *params, const float *buffers);
/* Parameters [from, end) of the next step into params_next, queued behind
 * the work already on the device's queue (in order: no kernel of this step
 * reads params_next), from host memory that must stay unchanged until the
 * queue is finished. clnet_replica_take_next makes them the parameters. */
clnet_status clnet_replica_write_next(clnet_replica *r, const float *host, size_t from, size_t end);
void clnet_replica_take_next(clnet_replica *r);
/* The device's float buffers to the host (nbuffers floats). */
clnet_status clnet_replica_read_buffers(clnet_replica *r, float *buffers);
/* The float buffers alone to the device. */
clnet_status clnet_replica_write_buffers(clnet_replica *r, const float *buffers);
/* A training step's first act: a copy of the buffers (running statistics)
 * on the device, queued; and the undoing of a step that is not applied
 * (a NaN or infinity in it): the buffers back from that copy. Nothing for a
 * model without buffers. */
clnet_status clnet_replica_keep_buffers(clnet_replica *r);
clnet_status clnet_replica_restore_buffers(clnet_replica *r);

/* Batch norms folded for evaluation (broadcast.c): whether the model folds any;
 * whether the folded parameters are those of the state the replica holds
 * now (evaluation passes then use them); and the folded parameters to the
 * device (nparams floats), made for the state it holds now. */
int clnet_replica_folds(const clnet_replica *r);
int clnet_replica_folded_now(const clnet_replica *r);
clnet_status clnet_replica_write_folded(clnet_replica *r, const float *params);

/* A batch of n <= max_batch samples: images (n, sample) and labels (n) or
 * NULL when only the outputs are wanted, and the data's float targets (n,
 * target_size) where the model takes them (else NULL). The copies run
 * asynchronously, in the queue's order: the memory must stay unchanged until
 * the pass is done. */
clnet_status clnet_replica_load(clnet_replica *r, const float *images, const int32_t *labels,
                                const float *targets, int n);
/* Starts the copies of a batch that a later clnet_replica_load of the same
 * images, labels and n will find in place (the next step's first
 * micro-batch, while the host updates the parameters). Any other load
 * overwrites it. Call only after every pass that reads the input is queued. */
clnet_status clnet_replica_stage(clnet_replica *r, const float *images, const int32_t *labels,
                                 const float *targets, int n);
/* Forgets what clnet_replica_stage uploaded: the next load copies its batch
 * even from the same addresses (their contents changed). */
void clnet_replica_unstage(clnet_replica *r);
/* The forward pass over the loaded batch (with ctx->train, the loss also
 * writes its gradient). */
clnet_status clnet_replica_forward(clnet_replica *r, const clnet_ctx *ctx, int n);
/* The backward pass of node i (nothing when the plan skips it); with
 * accumulate, parameter gradients are added to what the buffer holds
 * (later micro-batches of a step). Nodes go last to first. */
clnet_status clnet_replica_backward_node(clnet_replica *r, const clnet_ctx *ctx, int n, int i,
                                         int accumulate);
/* Every node's backward pass, last to first. */
clnet_status clnet_replica_backward(clnet_replica *r, const clnet_ctx *ctx, int n, int accumulate);
/* A tuner's timing: node i's forward and backward passes over the n samples
 * the arenas hold (a step's), `reps` times, waiting for the device; the
 * scratch fitted first to what the device chooses now. *seconds: one
 * forward and backward. The node's output and gradients are overwritten. */
clnet_status clnet_replica_time_node(clnet_replica *r, const clnet_ctx *ctx, int i, int n, int reps,
                                     double *seconds);
/* After a pass with labels: the summed loss and the count of correct
 * answers; probs (n, classes) when not NULL: the loss layer's output (the
 * probabilities), or with logits its input. Blocking. */
clnet_status clnet_replica_results(clnet_replica *r, int n, int with_labels, double *loss_sum,
                                   int *correct, float *probs, int logits);

/* Adds the replica's summed gradients into host[0..nparams). */
clnet_status clnet_replica_add_grads(clnet_replica *r, float *host);

/* ---- replica_guard.c: the passes' memory checks ---- */

/* Runs fn (a pass of node), counting the memory it says it uses (its scratch
 * and kept floats) and the running statistics it moves; with guards on
 * (r->guards), fills the regions the pass must leave alone first and checks
 * them and every buffer's guard after, naming the pass where one changed. */
clnet_status clnet_replica_guarded(clnet_replica *r,
                                   clnet_status (*fn)(const clnet_node *, const clnet_pass *),
                                   const clnet_node *node, const clnet_pass *p);

#endif
