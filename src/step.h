/* Synchronous data-parallel steps over a trainer (see step.c). */
#ifndef CLNET_STEP_H
#define CLNET_STEP_H

#include "optim.h"
#include "trainer.h"

/* One training step on n samples: forward and backward on every replica's
 * share, gradients summed on the host in a fixed order, the optimizer
 * applied once to m's parameters, the new parameters sent to every
 * replica. targets: the data's float targets (n, clnet_model_target_size)
 * for a model that takes them, else NULL. loss and correct (may be NULL) get
 * the sums over the batch.
 * CLNET_ERR_NONFINITE, and nothing applied (the replicas' buffers put
 * back), when the loss, the summed gradient or the update is not finite;
 * *loss and *correct are set then too. */
clnet_status clnet_step_train(clnet_trainer *t, clnet_model *m, clnet_optim *o, const float *images,
                              const int32_t *labels, const float *targets, int n, double *loss,
                              int *correct);
/* Forward only, split as optimizer step `step` would be (the next one);
 * labels, targets and probs (n, classes) may be NULL. */
clnet_status clnet_step_forward(clnet_trainer *t, int64_t step, const float *images,
                                const int32_t *labels, const float *targets, int n, float *probs,
                                double *loss, int *correct);
/* Forward only: the loss layer's input (the logits), (n, classes). */
clnet_status clnet_step_logits(clnet_trainer *t, int64_t step, const float *images, int n,
                               float *logits);

#endif
