/* ReLU, sigmoid and tanh (cl/activation.cl): y = f(x) elementwise, any shape.
 * The three kinds differ only in their kernels, so they share this file. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stdio.h>

static clnet_status setup(clnet_node *node) {
    node->out = node->in[0];
    return CLNET_OK;
}

/* kernel "<kind>_forward" / "<kind>_backward" */
static clnet_status run(const clnet_node *node, const clnet_pass *p, int backward) {
    char name[64];
    snprintf(name, sizeof name, "%s_%s", node->kind->name, backward ? "backward" : "forward");
    size_t c = (size_t)p->n * clnet_shape_size(node->in[0]);
    if (!backward)
        return clnet_pass_run(p, 0, "activation", "", name, 1, (size_t[]){c}, NULL,
                              ARGS(U32(c), MEM(p->act), U32(p->x[0]), MEM(p->act), U32(p->y)));
    if (!p->need_dx[0]) return CLNET_OK;
    return clnet_pass_run(p, 1, "activation", "", name, 1, (size_t[]){c}, NULL,
                          ARGS(U32(c), MEM(p->dact), U32(p->dy), MEM(p->act), U32(p->y),
                               MEM(p->dact), U32(p->dx[0]), U32(clnet_dx_add(p, 0))));
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    return run(node, p, 0);
}
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    return run(node, p, 1);
}

/* backward reads the forward's output (each derivative needs only y) */
#define ACTIVATION(id, about_)                                                                     \
    const clnet_kind clnet_##id##_kind = {                                                         \
        .name = #id,                                                                               \
        .about = about_,                                                                           \
        .min_inputs = 1,                                                                           \
        .max_inputs = 1,                                                                           \
        .backward_reads = CLNET_READS_Y,                                                           \
        .setup = setup,                                                                            \
        .forward = forward,                                                                        \
        .backward = backward,                                                                      \
    };
ACTIVATION(relu, "max(0, x) element by element, any shape. A relu whose input no other layer "
                 "reads runs inside the convolution, batch norm or add before it (CLNET_FUSE=off "
                 "keeps it apart; the results are the same).")
ACTIVATION(sigmoid, "1 / (1 + exp(-x)) element by element, any shape.")
ACTIVATION(tanh, "tanh(x) element by element, any shape.")

/* A relu that the layer before it runs (clnet_kind.fuse_relu): its output is
 * that layer's, and no kernel of its own runs. */
const clnet_kind clnet_relu_fused_kind = CLNET_VIEW_KIND("relu", NULL, setup);
