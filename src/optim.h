/* The optimizer: its configuration and state (SGD's velocity, Adam's moment
 * estimates, the step count), applied on the host to the model's parameters
 * (the master copy) with the gradient summed over the global batch. */
#ifndef CLNET_OPTIM_H
#define CLNET_OPTIM_H

#include "clnet.h"

#define CLNET_OPTIM_SLOTS 2

typedef struct {
    clnet_optimizer_config config;
    /* State per parameter, as PyTorch names it: SGD "momentum" (the
     * velocity), Adam and AdamW "exp_avg" and "exp_avg_sq". NULL until
     * needed; `kind` says whose state they hold. */
    clnet_optimizer kind;
    float *slot[CLNET_OPTIM_SLOTS];
    float *next[CLNET_OPTIM_SLOTS]; /* the state an update out of place writes (apply_next) */
    int ready;    /* the slots hold state from earlier steps (0: the next step starts it) */
    int64_t step; /* optimizer steps taken */
    /* clnet_optim_apply with clip_grad_norm > 0: the norm of its gradient before
     * clipping (0 otherwise) */
    double grad_norm;
    double lr_scale; /* a factor on the schedule's rate (1; reduce-on-plateau's, clnet_plateau) */
} clnet_optim;

void clnet_optim_init(clnet_optim *o);
void clnet_optim_release(clnet_optim *o);
/* Checks a configuration (clear messages for every bad field). */
clnet_status clnet_optim_check(const clnet_optimizer_config *cfg);
/* Takes a new configuration; state of another optimizer is dropped (with
 * a warning), since it cannot carry over. */
void clnet_optim_configure(clnet_optim *o, const clnet_optimizer_config *cfg);
/* Makes the state the configuration needs for n parameters; nothing when it
 * is there already. */
clnet_status clnet_optim_prepare(clnet_optim *o, size_t n);

/* "sgd", "adam", "adamw": the name in checkpoints ("optimizer.<name>.<slot>.<tensor>"). */
const char *clnet_optim_name(clnet_optimizer k);
/* The state slots an optimizer keeps (SGD: 1, its velocity, used when momentum > 0). */
int clnet_optim_slot_count(clnet_optimizer k);
const char *clnet_optim_slot_name(clnet_optimizer k, int slot);

/* The learning rate for step t (0-based). */
float clnet_optim_lr(const clnet_optimizer_config *c, int64_t t);
/* SGD's momentum (Adam's and AdamW's beta1) for step t: one-cycle's cycled
 * value with cycle_momentum, else the configuration's. */
float clnet_optim_momentum(const clnet_optimizer_config *c, int64_t t);
/* The L2 norm of the gradient grad_sum / batch over its n values (in double,
 * in a fixed order). */
double clnet_optim_grad_norm(const float *grad_sum, size_t n, int batch);
/* The learning rate of o's next step: the schedule's times o->lr_scale. */
float clnet_optim_rate(const clnet_optim *o);

/* One step on n parameters w: grad_sum holds the SUM of the batch's
 * per-sample gradients (batch samples), clipped first as clip_grad_norm says
 * (the whole of grad_sum is the model's gradient). Counts the step and returns n; or,
 * when the update would leave a parameter or its state NaN or infinite
 * (finite gradients times a huge learning rate), changes nothing and
 * returns the index of the first parameter concerned. */
size_t clnet_optim_apply(clnet_optim *o, float *w, const float *grad_sum, size_t n, int batch);
/* The same update of parameters [from, end) out of place, unclipped (a part
 * of the gradient has no global norm: with clip_grad_norm the step uses
 * clnet_optim_apply), so that a step can
 * be withdrawn until it is complete: reads w and the state, writes w_next
 * and the state's next copy. Returns end, or (writing nothing) the first
 * parameter whose update would not be finite. Every range of the step is
 * updated with the same step count and batch; then clnet_optim_commit_next
 * makes the next state current and counts the step once. */
size_t clnet_optim_apply_next(clnet_optim *o, const float *w, float *w_next, const float *grad_sum,
                              size_t from, size_t end, int batch);
void clnet_optim_commit_next(clnet_optim *o);

#endif
