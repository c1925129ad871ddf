/* A step's batch split into shares (see split.c). */
#ifndef CLNET_SPLIT_H
#define CLNET_SPLIT_H

#include "trainer.h"

/* The shares of n samples of optimizer step `step` (training or not) and
 * where each begins (offsets), for every device of every rank (total): a
 * pure function of the balancer's state, so a split made ahead (step.c's
 * stage_next) is the one the step makes. With batch statistics a training
 * share runs in one pass: the shares are capped at what each device holds,
 * and a batch that fits nowhere is refused (CLNET_ERR_DEVICE_MEMORY, naming
 * every device). In an MPI job, with agree, rank 0's split is the one
 * every rank uses (every rank holds the same state, so it is the same
 * split: the broadcast only makes sure). */
clnet_status clnet_split_batch(clnet_trainer *t, int n, int64_t step, int train, int agree,
                               int *shares, int *offsets);

#endif
