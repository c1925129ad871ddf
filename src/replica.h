/* A net's replica on one device: parameters, gradients, activation arenas,
 * planned once for a largest batch, and the passes over them. */
#ifndef CLNET_REPLICA_H
#define CLNET_REPLICA_H

#include "layer.h"
#include "memory.h"

typedef struct clnet_net clnet_net;
typedef struct clnet_replica clnet_replica;

/* Called on the replica's thread right after the backward pass of parameter
 * layer `layer` has been enqueued (on the last micro-batch of a step): the
 * coordinator starts moving that layer's gradients to the host while the
 * device goes on with the layers below. */
typedef clnet_status (*clnet_bucket_fn)(clnet_replica *r, int layer, void *ctx);

struct clnet_replica {
    clnet_device *d;
    int max_batch;
    size_t nparams;
    cl_mem params, grads; /* (nparams) each */
    cl_mem act, dact;     /* activation arenas: input, then each layer's output */
    cl_mem keep, work;    /* per-layer kept memory; shared scratch */
    cl_mem labels, loss, correct;
    size_t *out_off;       /* per layer: its output's offset in act/dact */
    size_t *keep_off;      /* per layer: its kept memory's offset in keep */
    clnet_staging staging; /* gradients read to the host (discrete devices) */
    float *loss_host;      /* (max_batch) */
    int32_t *correct_host;
    /* When not NULL, each pass waits for every layer and adds its seconds
     * here: [2i] forward and [2i+1] backward of layer i (for benchmarks). */
    double *profile;
    clnet_bucket_fn on_bucket; /* NULL: no per-bucket transfers */
    void *bucket_ctx;
};

/* Plans and allocates; fails with CLNET_ERR_DEVICE_MEMORY, saying how much is
 * needed and how much the device has, before allocating anything. */
clnet_status clnet_replica_create(clnet_replica **out, const clnet_net *net, clnet_device *d,
                                  int max_batch);
void clnet_replica_free(clnet_replica *r);

clnet_status clnet_replica_write_params(clnet_replica *r, const float *params, size_t n);

/* Forward (and with train, backward) over n <= max_batch samples; labels may
 * be NULL when only probabilities are wanted. Sums the loss and counts the
 * correct answers when labels are given; copies the output probabilities
 * (n, classes) to probs when it is not NULL. With accumulate, parameter
 * gradients are added to what the buffer holds (later micro-batches of a
 * step); last marks the step's last micro-batch, after which on_bucket runs. */
typedef struct {
    int train, accumulate, last;
} clnet_run_mode;
clnet_status clnet_replica_run(clnet_replica *r, const clnet_net *net, const float *images,
                               const int32_t *labels, int n, clnet_run_mode mode, double *loss_sum,
                               int *correct, float *probs);

/* Adds the replica's summed gradients into host[0..nparams), in order. */
clnet_status clnet_replica_add_grads(clnet_replica *r, float *host);

#endif
