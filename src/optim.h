/* The optimizer: its configuration and state (SGD velocity, the step
 * count), applied on the host to the model's parameters (the master copy)
 * with the gradient summed over the global batch. */
#ifndef CLNET_OPTIM_H
#define CLNET_OPTIM_H

#include "clnet.h"

typedef struct {
    clnet_sgd_config sgd;
    float *velocity;    /* (n) SGD velocity; NULL until momentum is used */
    int velocity_ready; /* 0: the next step starts the velocity (PyTorch's first step) */
    int64_t step;       /* optimizer steps taken */
} clnet_optim;

void clnet_optim_init(clnet_optim *o);
void clnet_optim_release(clnet_optim *o);
/* Checks a configuration (clear messages for every bad field). */
clnet_status clnet_optim_check(const clnet_sgd_config *cfg);
/* Makes the state the configuration needs for n parameters (the velocity
 * when momentum is on); nothing when it is there already. */
clnet_status clnet_optim_prepare(clnet_optim *o, size_t n);

/* The learning rate for step t (0-based). */
float clnet_optim_lr(const clnet_sgd_config *c, int64_t t);

/* One step on n parameters w: grad_sum holds the SUM of the batch's
 * per-sample gradients (batch samples). Counts the step. */
void clnet_optim_apply(clnet_optim *o, float *w, const float *grad_sum, size_t n, int batch);

#endif
