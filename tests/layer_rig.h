/* A single layer on a device, with buffers of its own, for layer tests:
 * set parameters, run forward and backward, read everything back. */
#ifndef CLNET_TEST_LAYER_RIG_H
#define CLNET_TEST_LAYER_RIG_H

#include "harness.h"
#include "layer.h"

typedef struct {
    clnet_net *net; /* holds the one layer (and its input shape) */
    const clnet_layer *l;
    clnet_device *d;
    int n;
    size_t in_count, out_count; /* n * per-sample sizes */
    cl_mem params, grads, act, dact, keep, work, labels, loss, correct;
} layer_rig;

/* Makes the layer from a model-file line on input (n, in); fails the test on error. */
void rig_create(layer_rig *r, clnet_device *d, clnet_shape in, const char *line, int n);
void rig_free(layer_rig *r);
void rig_set_params(layer_rig *r, const float *w, const float *b); /* either may be NULL */
/* y may be NULL; labels/loss/correct only for the loss layer. */
void rig_forward(layer_rig *r, const float *x, float *y, const int32_t *labels, float *loss,
                 int *correct);
/* dy is ignored by the loss layer, whose dx comes from its forward. */
void rig_backward(layer_rig *r, const float *dy, float *dx, float *dw, float *db);

#endif
