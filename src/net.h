/* The private side of a net: its layers, the host master copy of the
 * parameters and optimizer state, and its replica on a device. */
#ifndef CLNET_NET_H
#define CLNET_NET_H

#include "balance.h"
#include "layer.h"
#include "replica.h"

struct clnet_net {
    int has_input;
    clnet_shape input;
    clnet_layer *layers;
    int nlayers, cap;
    size_t nparams;     /* all weights and biases, in layer order */
    float *params;      /* the master copy (host) */
    float *momentum;    /* SGD velocity, same layout; NULL until momentum is used */
    int velocity_ready; /* 0: the next step starts the velocity (PyTorch's first step) */
    float *grads;       /* summed gradients gathered from the replica */
    int initialised;
    clnet_sgd_config sgd;
    int64_t step;
    clnet_replica **replicas; /* one per selected device, in device order */
    int nreplicas;
    clnet_balance balance;
    int max_batch;           /* the global batch the net is bound for */
    int deterministic;       /* a fixed split: runs repeat bit for bit */
    int64_t worst_staleness; /* async: the oldest parameters a push was computed on */
    char source[256];        /* the model file, for messages */
};

/* The loss layer (the last), or NULL when the net has none yet. */
const clnet_layer *clnet_net_loss(const clnet_net *net);
/* Releases the replicas (the net stays usable; bind again to train). */
void clnet_net_unbind(clnet_net *net);
/* Checks that the net is complete (input first, loss last). */
clnet_status clnet_net_check_complete(const clnet_net *net);

#endif
