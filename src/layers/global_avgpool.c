/* Global pooling (cl/pool.cl), x (n, C, spatial...) -> y (n, C, 1, ...):
 *   global_avgpool, PyTorch's AdaptiveAvgPool1d/2d/3d(1): the mean of each plane;
 *   global_maxpool, PyTorch's AdaptiveMaxPool1d/2d/3d(1): its largest value.
 * The output keeps the input's spatial dimensions, each of size 1 (an image of
 * 1x1), so that linear and flatten read it as PyTorch does. No options. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stdio.h>

static clnet_status setup(clnet_node *node) {
    clnet_shape in = node->in[0];
    if (in.ndim < 1) return clnet_node_fail(node, "takes inputs with spatial dimensions");
    node->out = in;
    for (int i = 0; i < in.ndim; i++) node->out.dim[i] = 1;
    return CLNET_OK;
}

/* kernel "<kind>_forward", one work-item per plane */
static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    size_t planes = (size_t)p->n * node->in[0].c, S = clnet_shape_spatial(node->in[0]);
    char name[48];
    snprintf(name, sizeof name, "%s_forward", node->kind->name);
    return clnet_pass_run(
        p, 0, KERNEL("global_pool", "", name), 1, (size_t[]){planes}, NULL,
        ARGS(U32(planes), U32(S), MEM(p->act), U32(p->x[0]), MEM(p->act), U32(p->y)));
}

/* reads neither x nor y: dx = dy / S */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    size_t planes = (size_t)p->n * node->in[0].c, S = clnet_shape_spatial(node->in[0]);
    if (!p->need_dx[0]) return CLNET_OK;
    return clnet_pass_run(p, 1, KERNEL("global_pool", "", "global_avgpool_backward"), 2,
                          (size_t[]){S, planes}, NULL,
                          ARGS(U32(planes), U32(S), MEM(p->dact), U32(p->dy), MEM(p->dact),
                               U32(p->dx[0]), U32(clnet_dx_add(p, 0))));
}

const clnet_kind clnet_global_avgpool_kind = {
    .name = "global_avgpool",
    .about =
        "The mean of each channel over all its spatial positions (PyTorch's "
        "AdaptiveAvgPool1d/2d/3d(1)): (C, H, W) -> (C, 1, 1), which linear and flatten read as C "
        "values.",
    .stem = "pool",
    .min_inputs = 1,
    .max_inputs = 1,
    .setup = setup,
    .forward = forward,
    .backward = backward,
};

/* reads x to find each plane's largest value again */
static clnet_status max_backward(const clnet_node *node, const clnet_pass *p) {
    size_t planes = (size_t)p->n * node->in[0].c, S = clnet_shape_spatial(node->in[0]);
    if (!p->need_dx[0]) return CLNET_OK;
    return clnet_pass_run(p, 1, KERNEL("global_pool", "", "global_maxpool_backward"), 1,
                          (size_t[]){planes}, NULL,
                          ARGS(U32(planes), U32(S), MEM(p->act), U32(p->x[0]), MEM(p->dact),
                               U32(p->dy), MEM(p->dact), U32(p->dx[0]), U32(clnet_dx_add(p, 0))));
}

const clnet_kind clnet_global_maxpool_kind = {
    .name = "global_maxpool",
    .about = "The largest value of each channel over all its spatial positions (PyTorch's "
             "AdaptiveMaxPool1d/2d/3d(1)), shaped as global_avgpool's output; the gradient goes to "
             "that value, the first where several are equal (a NaN wins), as PyTorch does.",
    .stem = "pool",
    .min_inputs = 1,
    .max_inputs = 1,
    .backward_reads = CLNET_READS_X,
    .setup = setup,
    .forward = forward,
    .backward = max_backward,
};
