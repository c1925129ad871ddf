/* SGD on the host master copy, and learning-rate schedules. */
#ifndef CLNET_OPTIM_H
#define CLNET_OPTIM_H

#include "clnet.h"

/* The learning rate for step t (0-based). */
float clnet_sgd_lr(const clnet_sgd_config *c, int64_t t);

/* One step on n parameters: grad_sum holds the SUM of the batch's per-sample
 * gradients (batch samples); velocity may be NULL when momentum is 0. */
void clnet_sgd_apply(const clnet_sgd_config *c, float lr, float *w, const float *grad_sum,
                     float *velocity, size_t n, int batch, int first_step);

#endif
