/* Private parts of the data module: a hook that lets the tests make the
 * loader's prefetch thread fail, to check that its failure reaches the caller
 * (nothing on that thread can fail on its own: its memory is allocated up
 * front). */
#ifndef CLNET_DATA_H
#define CLNET_DATA_H

#include "clnet.h"

/* Makes the prefetch thread fail with CLNET_ERR_INTERNAL, once, when it
 * prepares the batch that starts at (epoch, position). Set it before that
 * batch is requested: a batch already prepared ahead is not prepared again. */
void clnet_loader_inject_failure(clnet_loader *l, int epoch, int64_t position);

/* The batch the next clnet_loader_next will return, once the prefetch thread
 * has it ready (this waits for it): 1, *out and its serial, its memory
 * valid until the call after that next. 0 when there is none (a failure
 * waits for next to report it). The caller's current batch stays valid. */
int clnet_loader_peek(clnet_loader *l, clnet_batch *out, uint64_t *serial);

/* The serial of the batch the last clnet_loader_next returned (0: none).
 * Every batch a loader prepares gets a serial no other batch of the process
 * has had: two batches with one serial hold the same samples. */
uint64_t clnet_loader_serial(const clnet_loader *l);

/* 1 for images read from IDX files: they feed any model input that has as
 * many values (Fashion-MNIST read as channels=1 length=784). */
int clnet_dataset_from_idx(const clnet_dataset *ds);

#endif
