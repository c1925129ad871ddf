/* The memory plan of a model on a replica: where every activation and every
 * activation gradient lives, which input gradients are computed, and which
 * of them are overwritten or added to.
 *
 * Time runs through the forward pass (node i at time i) and back through
 * the backward pass (node i at time 2N-1-i). A tensor is live from the
 * pass that writes it to the last pass that reads it; tensors whose lives
 * do not overlap share memory (first fit, by offset). A view (flatten)
 * shares its input's memory, so the two are one tensor for planning. */
#ifndef CLNET_PLAN_H
#define CLNET_PLAN_H

#include "model.h"

typedef struct {
    int nodes;
    /* per node, in floats for `batch` samples */
    size_t *y;         /* its output in the activation arena */
    size_t *dy;        /* its output's gradient in the gradient arena */
    int *backward;     /* 1: its backward pass runs (parameters, or inputs that need a gradient) */
    size_t input;      /* the model's input in the activation arena */
    int *need_dx;      /* [node * CLNET_MAX_INPUTS + k]: input k's gradient is wanted */
    float *dx_beta;    /* [node * CLNET_MAX_INPUTS + k]: 0 overwrite, 1 add */
    size_t act, dact;  /* arena sizes, floats */
    size_t *keep;      /* per node: floats it keeps from forward to backward (its own buffer) */
    size_t keep_total; /* of all nodes */
    size_t work;       /* the largest scratch of a node */
    /* CLNET_GUARD: floats per sample of guard after every tensor of the
     * arenas (0 when off); a tensor of node i spans y[i] .. y[i] + (its size
     * rounded up + guard) * batch, the guard included. */
    size_t guard;
    int batch;
} clnet_plan;

/* Sizes hold for every pass of 1 to `batch` samples on device d: a kind's
 * keep and scratch are the largest its keep_floats and work_floats give for
 * any of them (the contract in layer.h), the scratch for d's GEMM choices as
 * they stand. */
clnet_status clnet_plan_make(clnet_plan *p, const clnet_model *m, const clnet_device *d, int batch);
/* Floats a tensor of `size` floats per sample is planned for per sample
 * (rounded up, plus the guard). */
size_t clnet_plan_span(const clnet_plan *p, size_t size);
/* A kind's size function: keep_floats, work_floats (layer.h). */
typedef size_t (*clnet_size_fn)(const clnet_node *node, const clnet_device *d, int n);
/* The most one gives for a pass of 1 to batch samples on d (0 without one). */
size_t clnet_plan_largest(clnet_size_fn size, const clnet_node *node, const clnet_device *d,
                          int batch);
/* The largest scratch of any node of m (the plan's `work`) for d's GEMM
 * choices as they stand. */
size_t clnet_plan_work(const clnet_model *m, const clnet_device *d, int batch);
void clnet_plan_release(clnet_plan *p);

#endif
