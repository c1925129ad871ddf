/* Asynchronous (parameter-server) training over a trainer (see async.c). */
#ifndef CLNET_ASYNC_H
#define CLNET_ASYNC_H

#include "optim.h"
#include "trainer.h"

/* What the pushed batches of a call sum to. */
typedef struct {
    double loss;
    int correct, samples;
} clnet_async_sums;

/* Takes `updates` batches from the loader and pushes each, with the
 * staleness bound; *sums the pushed batches'. */
clnet_status clnet_async_train(clnet_trainer *t, clnet_model *m, clnet_optim *o,
                               clnet_loader *loader, int updates, int staleness,
                               clnet_async_sums *sums);
/* The most updates a push was ever applied after its parameters were
 * pulled, over every call (0 before the first). */
int64_t clnet_async_worst_staleness(const clnet_trainer *t);
/* Frees t->async (call before freeing the trainer). */
void clnet_async_free(clnet_trainer *t);

#endif
