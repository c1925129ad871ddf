/* ReLU, sigmoid and tanh (cl/activation.cl): y = f(x) elementwise, any shape.
 * The three kinds differ only in their kernels, so they share this file. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stdio.h>

static clnet_status setup(clnet_layer *l) {
    l->out = l->in;
    return CLNET_OK;
}

static size_t count(const clnet_layer *l, int n) {
    return (size_t)n * clnet_shape_size(l->in);
}

/* kernel "<kind>_forward" / "<kind>_backward" */
static clnet_status run(const clnet_layer *l, const clnet_pass *p, int backward) {
    char name[64];
    snprintf(name, sizeof name, "%s_%s", l->ops->kind, backward ? "backward" : "forward");
    size_t c = count(l, p->n);
    if (!backward)
        return clnet_run(p->d, "activation", "", name, 1, (size_t[]){c}, NULL,
                         ARGS(U32(c), MEM(p->act), U32(p->x), MEM(p->act), U32(p->y)));
    if (!p->need_dx) return CLNET_OK;
    return clnet_run(
        p->d, "activation", "", name, 1, (size_t[]){c}, NULL,
        ARGS(U32(c), MEM(p->dact), U32(p->dy), MEM(p->act), U32(p->y), MEM(p->dact), U32(p->dx)));
}

static clnet_status forward(const clnet_layer *l, const clnet_pass *p) {
    return run(l, p, 0);
}
static clnet_status backward(const clnet_layer *l, const clnet_pass *p) {
    return run(l, p, 1);
}

#define ACTIVATION(id)                                                                             \
    const clnet_layer_ops clnet_##id##_ops = {                                                     \
        .kind = #id,                                                                               \
        .keys = "",                                                                                \
        .setup = setup,                                                                            \
        .keep_floats = clnet_layer_none,                                                           \
        .work_floats = clnet_layer_none,                                                           \
        .forward = forward,                                                                        \
        .backward = backward,                                                                      \
    };
ACTIVATION(relu)
ACTIVATION(sigmoid)
ACTIVATION(tanh)
