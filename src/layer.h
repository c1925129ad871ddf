/* Layers: one file per kind in src/layers/, each filling a clnet_layer_ops
 * table, registered in layers.c. A layer sees one sample's shapes; passes run
 * over n samples at a time, NCHW float32.
 *
 * Memory (per replica): all parameters live in one buffer and all their
 * gradients in another, with the same layout; a layer holds offsets into
 * them. Activations and their gradients live in two arenas, also addressed by
 * offsets, planned once per batch size. Backward passes write the SUM over
 * the samples of per-sample gradients: only the optimizer divides by the
 * batch. */
#ifndef CLNET_LAYER_H
#define CLNET_LAYER_H

#include "device.h"

#include <stdint.h>

/* One sample's shape. */
typedef struct {
    int c, h, w;
} clnet_shape;

static inline size_t clnet_shape_size(clnet_shape s) {
    return (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

typedef enum {
    CLNET_INIT_DEFAULT = 0, /* the kind's own default */
    CLNET_INIT_NORMAL,      /* N(0, std^2) */
    CLNET_INIT_XAVIER,      /* U(-a, a), a = sqrt(6 / (fan_in + fan_out)) */
    CLNET_INIT_KAIMING,     /* N(0, 2 / fan_in) */
    CLNET_INIT_ZEROS,
} clnet_init_kind;

typedef struct {
    clnet_init_kind kind;
    float std; /* for CLNET_INIT_NORMAL */
} clnet_init;

typedef struct clnet_layer_ops clnet_layer_ops;

typedef struct clnet_layer {
    const clnet_layer_ops *ops;
    char name[64];
    int line; /* model-file line (0: added from C), for messages */
    /* configuration: what applies to the kind */
    int filters;                /* conv2d: output channels */
    int units;                  /* linear: outputs */
    int kh, kw, sh, sw, ph, pw; /* kernel, stride, padding */
    clnet_init weight_init, bias_init;
    /* set by setup() from the input shape */
    clnet_shape in, out;
    size_t nweight, nbias; /* parameter counts (0 if none) */
    int weight_ndim;       /* weight shape as PyTorch lays it out */
    int64_t weight_shape[4];
    int fan_in, fan_out;         /* for initialisation */
    size_t weight_off, bias_off; /* offsets into the parameter buffer */
} clnet_layer;

/* What one pass of one layer over n samples works on. Offsets are in floats. */
typedef struct {
    clnet_device *d;
    int n;
    cl_mem params, grads; /* parameters and their gradients (same layout) */
    cl_mem act;           /* activations arena */
    size_t x, y;          /* input (n, in) and output (n, out) in act */
    cl_mem dact;          /* activation gradients arena */
    size_t dx, dy;        /* gradients of input and output in dact */
    int need_dx;          /* 0 for the first layer: no input gradient needed */
    cl_mem keep;          /* memory a layer keeps from forward to backward */
    size_t keep_off;
    cl_mem work; /* scratch shared by all layers */
    float beta;  /* 0: overwrite parameter gradients, 1: add to them */
    /* loss layers only */
    cl_mem labels;  /* (n) int32 */
    cl_mem loss;    /* (n) float: per-sample loss */
    cl_mem correct; /* (n) int32: 1 where the prediction is right */
    int want_grad;  /* training: also write the gradient of the loss */
} clnet_pass;

struct clnet_layer_ops {
    const char *kind; /* the model-file keyword */
    const char *keys; /* the options it takes, space separated, for the parser */
    int is_loss;      /* the last layer: softmax_cross_entropy */
    int is_view;      /* output is the input, reshaped (flatten): no kernels */
    /* Checks the options against l->in; sets out, parameter counts and shapes. */
    clnet_status (*setup)(clnet_layer *l);
    /* Floats kept from forward to backward, and scratch, for n samples. */
    size_t (*keep_floats)(const clnet_layer *l, int n);
    size_t (*work_floats)(const clnet_layer *l, int n);
    clnet_status (*forward)(const clnet_layer *l, const clnet_pass *p);
    clnet_status (*backward)(const clnet_layer *l, const clnet_pass *p);
};

/* The registry: every layer kind, NULL-terminated (src/layers.c). */
extern const clnet_layer_ops *const clnet_layer_kinds[];
const clnet_layer_ops *clnet_layer_find(const char *kind);

/* Layer kinds, one per file in src/layers/. */
extern const clnet_layer_ops clnet_conv2d_ops, clnet_maxpool_ops, clnet_avgpool_ops, clnet_relu_ops,
    clnet_sigmoid_ops, clnet_tanh_ops, clnet_linear_ops, clnet_flatten_ops, clnet_softmax_xent_ops;

/* Shared helpers for layer files. */
size_t clnet_layer_none(const clnet_layer *l, int n); /* no keep / work memory */
/* Output size of a window op along one axis; <= 0 when the window never fits. */
int clnet_window_out(int in, int kernel, int stride, int pad);
/* A message for a layer that cannot take its input ("conv1: ..."). */
clnet_status clnet_layer_fail(const clnet_layer *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
