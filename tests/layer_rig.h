/* A single layer on a device, with buffers of its own, for layer tests:
 * set parameters, run forward and backward, read everything back. */
#ifndef CLNET_TEST_LAYER_RIG_H
#define CLNET_TEST_LAYER_RIG_H

#include "harness.h"
#include "layer.h"

/* One sample's shape (C, H, W); vectors are (C, 1, 1). */
typedef struct {
    int c, h, w;
} rig_shape;

static inline size_t rig_shape_size(rig_shape s) {
    return (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

typedef struct {
    clnet_net *net; /* holds the one layer (and its input shape) */
    const clnet_node *l;
    clnet_device *d;
    int n;
    /* n * per-sample sizes; in_count covers every input of the layer, laid
     * back to back from x_off[0] = 0 (a layer that reads the model's input
     * more than once, "add input=input,input", gets a copy of it per read) */
    size_t in_count, out_count;
    int nin;
    size_t x_off[CLNET_MAX_INPUTS];
    size_t nw, nb;   /* weight and bias counts (0 when the layer has none) */
    int weight_ndim; /* the weight's shape, as PyTorch lays it out */
    const int64_t *weight_shape;
    /* 0: backward overwrites dx; 1: it adds to what dx holds (another reader
     * of the tensor wrote it first): rig_backward then starts from the
     * caller's dx. */
    float dx_beta;
    /* 1: rig_forward runs an evaluation pass (batch norm normalizes with its
     * running statistics); 0 (the default): a training pass. */
    int eval;
    size_t nbuffers; /* floats of the layer's buffers (running statistics) */
    cl_mem params, grads, buffers, act, dact, keep, work, labels, loss, correct;
    cl_mem targets; /* the data's targets a loss reads (clnet_kind.data_targets), as floats */
    size_t target_size;
    void *host; /* the layer's host scratch */
} layer_rig;

/* Makes the layer from a model-file line on input (n, in); fails the test on error. */
void rig_create(layer_rig *r, clnet_device *d, rig_shape in, const char *line, int n);
/* The model's input line for one sample of shape s: "input channels=2 length=17",
 * "... height=H width=W" or "... depth=D height=H width=W" (a vector: (C, 1, 1)). */
void rig_input_line(clnet_shape s, char *out, size_t cap);
/* The same from the model's input line ("input channels=2 length=17", any rank). */
void rig_create_input(layer_rig *r, clnet_device *d, const char *input, const char *line, int n);
void rig_free(layer_rig *r);
void rig_set_params(layer_rig *r, const float *w, const float *b); /* either may be NULL */
/* The layer's float buffers (nbuffers floats, each tensor at its node->buffers[]
 * offset); rig_create starts them as the layer's initialisation says (running_mean
 * 0, running_var 1). */
void rig_set_buffers(layer_rig *r, const float *v);
void rig_get_buffers(layer_rig *r, float *v);
/* x holds every input back to back (in_count floats); y may be NULL;
 * labels/loss/correct only for the loss layer: labels (n), or a loss per
 * position's (n, positions), given to it as the floats it reads. */
void rig_forward(layer_rig *r, const float *x, float *y, const int32_t *labels, float *loss,
                 int *correct);
/* A forward pass (not for the loss layer) that returns the layer's status
 * instead of failing the test: for layers that must refuse an input. */
clnet_status rig_try_forward(layer_rig *r, const float *x, float *y);
/* dy is ignored by the loss layer, whose dx comes from its forward. dx holds
 * every input's gradient, laid out as x. With dx_beta 1, dx holds on entry
 * what the device's dx starts from. */
void rig_backward(layer_rig *r, const float *dy, float *dx, float *dw, float *db);

#endif
