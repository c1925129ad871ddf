/* Activations (cl/activation.cl): y = f(x) elementwise, any shape. The kinds
 * differ only in their kernels and one parameter, so they share this file.
 * relu, sigmoid and tanh differentiate from their output y; the others from
 * their input x, which their backward reads instead. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>
#include <stdio.h>

typedef struct {
    float a;  /* leaky_relu's negative slope, elu's alpha; 0 for the others */
    int tanh; /* gelu: approximate=tanh */
} activation_config;

static clnet_status setup(clnet_node *node) {
    node->out = node->in[0];
    return CLNET_OK;
}

/* kernel "<stem>_forward" / "<stem>_backward" */
static const char *stem(const clnet_node *node) {
    return CLNET_CONFIG(node, activation_config)->tanh ? "gelu_tanh" : node->kind->name;
}

/* Backward reads the forward's output y (relu, sigmoid, tanh) or its input x
 * (the others, whose kernels also take the parameter a as their last
 * argument: the relu, sigmoid and tanh kernels get every argument but it). */
static clnet_status run(const clnet_node *node, const clnet_pass *p, int backward) {
    char name[64];
    snprintf(name, sizeof name, "%s_%s", stem(node), backward ? "backward" : "forward");
    size_t c = (size_t)p->n * clnet_shape_size(node->in[0]);
    int of_x = node->kind->backward_reads == CLNET_READS_X;
    clnet_arg a = F32(CLNET_CONFIG(node, activation_config)->a);
    if (!backward) {
        clnet_arg args[] = {U32(c), MEM(p->act), U32(p->x[0]), MEM(p->act), U32(p->y), a};
        return clnet_pass_run(p, 0, KERNEL("activation", "", name), 1, (size_t[]){c}, NULL, args,
                              5 + of_x);
    }
    if (!p->need_dx[0]) return CLNET_OK;
    clnet_arg args[] = {U32(c),
                        MEM(p->dact),
                        U32(p->dy),
                        MEM(p->act),
                        U32(of_x ? p->x[0] : p->y),
                        MEM(p->dact),
                        U32(p->dx[0]),
                        U32(clnet_dx_add(p, 0)),
                        a};
    return clnet_pass_run(p, 1, KERNEL("activation", "", name), 1, (size_t[]){c}, NULL, args,
                          8 + of_x);
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    return run(node, p, 0);
}
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    return run(node, p, 1);
}

/* fused_: the view it becomes when the layer before takes it in (relu alone) */
#define ACTIVATION_FUSING(id, reads, options_, about_, fused_)                                     \
    const clnet_kind clnet_##id##_kind = {                                                         \
        .name = #id,                                                                               \
        .about = about_,                                                                           \
        .options = options_,                                                                       \
        .config_size = sizeof(activation_config),                                                  \
        .min_inputs = 1,                                                                           \
        .max_inputs = 1,                                                                           \
        .backward_reads = CLNET_READS_##reads,                                                     \
        .setup = setup,                                                                            \
        .forward = forward,                                                                        \
        .backward = backward,                                                                      \
        .fused_form = fused_,                                                                      \
    };
#define ACTIVATION(id, reads, options_, about_) ACTIVATION_FUSING(id, reads, options_, about_, NULL)

ACTIVATION_FUSING(relu, Y, NULL,
                  "max(0, x) element by element, any shape. A relu whose input no other layer "
                  "reads runs inside the convolution, batch norm, add or linear layer (with a "
                  "bias) before it (CLNET_FUSE=off keeps it apart; the results are the same).",
                  &clnet_relu_fused_kind)
ACTIVATION(sigmoid, Y, NULL, "1 / (1 + exp(-x)) element by element, any shape.")
ACTIVATION(tanh, Y, NULL, "tanh(x) element by element, any shape.")

static const clnet_option leaky_relu_options[] = {
    {.name = "slope",
     .type = CLNET_OPT_FLOAT,
     .at = offsetof(activation_config, a),
     .min = -1000,
     .max = 1000,
     .range = "a number from -1000 to 1000",
     .value = "0.01",
     .help = "the slope for x <= 0 (PyTorch's negative_slope)"},
    {0},
};
static const clnet_option elu_options[] = {
    {.name = "alpha",
     .type = CLNET_OPT_FLOAT,
     .at = offsetof(activation_config, a),
     .value = "1",
     .help = "alpha in alpha (exp(x) - 1) for x <= 0"},
    {0},
};
static const clnet_choice gelu_forms[] = {{"none", 0}, {"tanh", 1}, {NULL, 0}};
static const clnet_option gelu_options[] = {
    {.name = "approximate",
     .type = CLNET_OPT_CHOICE,
     .at = offsetof(activation_config, tanh),
     .choices = gelu_forms,
     .value = "none",
     .help = "none: x Phi(x) with erf; tanh: PyTorch's tanh approximation"},
    {0},
};

ACTIVATION(leaky_relu, X, leaky_relu_options,
           "x for x > 0, slope * x otherwise, element by element, any shape (PyTorch's "
           "nn.LeakyReLU).")
ACTIVATION(elu, X, elu_options,
           "x for x > 0, alpha (exp(x) - 1) otherwise, element by element, any shape (PyTorch's "
           "nn.ELU).")
ACTIVATION(gelu, X, gelu_options,
           "x Phi(x), Phi the standard normal distribution function, element by element, any "
           "shape (PyTorch's nn.GELU, approximate= as there).")
ACTIVATION(silu, X, NULL,
           "x / (1 + exp(-x)) element by element, any shape (PyTorch's nn.SiLU, also called "
           "swish).")
ACTIVATION(hardswish, X, NULL,
           "x min(max(x + 3, 0), 6) / 6 element by element, any shape (PyTorch's nn.Hardswish).")

/* A relu that the layer before it runs (clnet_kind.fuse_relu): its output is
 * that layer's, and no kernel of its own runs. Its fused form is itself, so
 * that fusion decided again (a line added after a finish) keeps it. */
const clnet_kind clnet_relu_fused_kind = {
    .name = "relu",
    .min_inputs = 1,
    .max_inputs = 1,
    .is_view = 1,
    .setup = setup,
    .forward = clnet_no_kernels,
    .fused_form = &clnet_relu_fused_kind,
};
