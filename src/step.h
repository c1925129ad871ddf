/* Synchronous data-parallel steps over a trainer (see step.c). */
#ifndef CLNET_STEP_H
#define CLNET_STEP_H

#include "optim.h"
#include "trainer.h"

/* Where a training step learns the batch of the step after it (next NULL,
 * or no feed: nowhere): 1 with the batch (images, labels, targets, n) and
 * its ticket, or 0. Its first micro-batches go to the devices before the
 * step returns (clnet_replica_stage). A ticket names a batch's contents,
 * never 0 and never reused in the process (the loader's batch serial): a
 * step whose batch's ticket (current; 0 for unknown) is not the one staged
 * copies its batch again, even at the same addresses. */
typedef struct {
    int (*next)(void *arg, clnet_batch *batch, uint64_t *ticket);
    void *arg;
    uint64_t current; /* the ticket of the batch of the step about to run */
} clnet_step_feed;

/* What a step adds up over its batch. */
typedef struct {
    double loss; /* the sum of the samples' losses */
    int correct; /* the correct answers */
} clnet_step_sums;

/* One training step on batch b (b->n samples; b->targets: the data's float
 * targets (n, clnet_model_target_size) for a model that takes them, else
 * NULL; epoch and position are not read): forward and backward on every
 * replica's share, gradients summed on the host in a fixed order, the
 * optimizer applied once to m's parameters, the new parameters sent to
 * every replica. feed (may be NULL): where the next step's batch comes
 * from. *sums gets the sums over the batch.
 * CLNET_ERR_NONFINITE, and nothing applied (the replicas' buffers put
 * back), when the loss, the summed gradient or the update is not finite;
 * *sums is set then too. */
clnet_status clnet_step_train(clnet_trainer *t, clnet_model *m, clnet_optim *o,
                              const clnet_batch *b, const clnet_step_feed *feed,
                              clnet_step_sums *sums);
/* Forward only on batch b, split as optimizer step `step` would be (the
 * next one); b's labels and targets, probs (n, classes) and sums may be
 * NULL. */
clnet_status clnet_step_forward(clnet_trainer *t, int64_t step, const clnet_batch *b, float *probs,
                                clnet_step_sums *sums);
/* Forward only: the loss layer's input (the logits), (n, classes). */
clnet_status clnet_step_logits(clnet_trainer *t, int64_t step, const float *images, int n,
                               float *logits);

#endif
