/* A replica's share of a batch in micro-batches (see share.c). */
#ifndef CLNET_SHARE_H
#define CLNET_SHARE_H

#include "replica.h"

typedef struct {
    const float *images;   /* (n, input) */
    const int32_t *labels; /* (n), or NULL */
    const float *targets;  /* (n, the replica's target_size), or NULL; with neither: no loss */
    float *probs;          /* (n, classes) the outputs, or NULL */
    int logits;            /* probs gets the loss layer's input instead of its output */
    int n;
    int64_t first; /* the index of its first sample in the step's batch (ctx->first_sample) */
    /* Training: called once a node with parameters has its last
     * micro-batch's backward pass queued (its gradient is then whole), last
     * node first; NULL: nothing to call. */
    clnet_status (*node_done)(void *arg, int node);
    void *arg;
    int fault_after_forward; /* CLNET_FAULT's kernels point: fail once the forward pass ran */
} clnet_share;

/* Runs s on r in micro-batches of at most r->max_batch: forward, with
 * ctx->train backward too (the share's gradients summed in r->grads), and
 * the results; the share's loss and correct answers are added into *loss
 * and *correct. Sets ctx->first_sample for each micro-batch. */
clnet_status clnet_share_run(clnet_replica *r, clnet_ctx *ctx, const clnet_share *s, double *loss,
                             int *correct);

#endif
