/* The multi-device coordinator (see coordinator.c for the step). */
#ifndef CLNET_COORDINATOR_H
#define CLNET_COORDINATOR_H

#include "clnet.h"

/* Forward and backward on every replica's share of the n samples; leaves
 * the SUM of all samples' gradients in net->grads. */
clnet_status clnet_coordinator_step(clnet_net *net, const float *images, const int32_t *labels,
                                    int n, double *loss, int *correct);
/* Forward only, split the same way; probs (n, classes) and labels optional. */
clnet_status clnet_coordinator_forward(clnet_net *net, const float *images, const int32_t *labels,
                                       int n, float *probs, double *loss, int *correct);
/* net->params to every replica. */
clnet_status clnet_coordinator_broadcast(clnet_net *net);
/* Measures each replica's speed on probes bounded in time (a device
 * thousands of times slower costs seconds), for the first split. */
clnet_status clnet_coordinator_calibrate(clnet_net *net);

#endif
