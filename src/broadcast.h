/* The model's state between the host and the replicas, outside the step's
 * own hand-over: parameters (and float buffers) to every replica, buffers
 * back from one (see broadcast.c). */
#ifndef CLNET_BROADCAST_H
#define CLNET_BROADCAST_H

#include "trainer.h"

/* m's parameters to every replica, and with buffers its float buffers too
 * (binding, initialising, loading: buffers otherwise live on the devices). */
clnet_status clnet_broadcast(clnet_trainer *t, const clnet_model *m, int buffers);
/* Replicas that had no share in a step (active[i] 0, for the count
 * replicas) did not move their buffers (running statistics): they get
 * those of the first replica that did, through m's. */
clnet_status clnet_broadcast_to_idle(clnet_trainer *t, clnet_model *m, const int *active);
/* The first replica's float buffers back into m (before saving). */
clnet_status clnet_broadcast_gather(clnet_trainer *t, clnet_model *m);
/* Before an evaluation: where the replicas' folded parameters (batch norms
 * folded into their convolutions) are older than the state they hold, they
 * are made again on the host from m's parameters and the first replica's
 * buffers (model.c's clnet_model_fold), the same floats for every replica. */
clnet_status clnet_broadcast_folded(clnet_trainer *t, clnet_model *m);

/* --check-replicas: every replica's parameters against m's (the host's
 * master copy) and its buffers against the first replica's, bit for bit
 * (read back whole); under MPI each rank's against rank 0's, by checksum.
 * CLNET_ERR_WRONG_RESULT naming the device and the first tensor that
 * differs. Not for asynchronous training, whose replicas differ by design. */
clnet_status clnet_broadcast_check(clnet_trainer *t, const clnet_model *m);

#endif
