/* Asynchronous (parameter-server) training over a trainer (see async.c). */
#ifndef CLNET_ASYNC_H
#define CLNET_ASYNC_H

#include "optim.h"
#include "trainer.h"

/* Takes `updates` batches from the loader and pushes each, with the
 * staleness bound; loss, correct and samples sum the pushed batches. */
clnet_status clnet_async_train(clnet_trainer *t, clnet_model *m, clnet_optim *o,
                               clnet_loader *loader, int updates, int staleness, double *loss,
                               int *correct, int *samples);
/* Frees t->async (call before freeing the trainer). */
void clnet_async_free(clnet_trainer *t);

#endif
