/* Regression and reconstruction losses (cl/loss.cl's regression_loss): mse,
 * l1 and bce_with_logits of the prediction (input 0) against a target of its
 * shape. The target is the output of the layer target= names, 'input' for
 * the model's own input (an autoencoder); that name becomes the node's second
 * input, and a target that is a layer's output gets its gradient too, as a
 * PyTorch target that requires one would. Like softmax_cross_entropy, the
 * pass writes each sample's loss (the mean over its elements) and, when
 * training, the gradients during forward. These losses have no classes:
 * training and evaluation report the loss alone. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { MSE = 0, L1 = 1, BCE = 2 }; /* cl/loss.cl's LOSS_* */

typedef struct {
    char target[CLNET_NAME_CAP]; /* target=: a layer's name, or "input" */
} regression_config;

static clnet_status setup(clnet_node *node) {
    node->out = node->in[0];
    if (node->ninputs == 1) return CLNET_OK; /* the data's targets, of the input's shape */
    char a[64], b[64];
    clnet_shape_format(node->in[0], a, sizeof a);
    clnet_shape_format(node->in[1], b, sizeof b);
    if (!clnet_shape_equal(node->in[0], node->in[1]))
        return clnet_node_fail(node,
                               "the prediction ('%s', %s) and the target ('%s', %s) differ "
                               "in shape",
                               node->input_names[0], a, node->input_names[1], b);
    return CLNET_OK;
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    uint32_t kind = node->kind == &clnet_mse_kind ? MSE : node->kind == &clnet_l1_kind ? L1 : BCE;
    /* the target: input 1, or the data's (the replica holds room for them
     * whenever its model takes them) */
    int data = node->ninputs == 1;
    if (data && !p->targets) return clnet_node_fail(node, "no room for the data's targets");
    cl_mem t = data ? p->targets : p->act;
    uint32_t want_target = !data && p->want_grad && p->need_dx[1];
    size_t toff = data ? 0 : p->x[1], dtoff = data ? 0 : p->dx[1];
    return clnet_pass_run(
        p, 0, KERNEL("loss", "", "regression_loss"), 1, (size_t[]){(size_t)p->n}, NULL,
        ARGS(U32(p->n), U32(clnet_shape_size(node->in[0])), U32(kind), MEM(p->act), U32(p->x[0]),
             MEM(t), U32(toff), MEM(p->loss), MEM(p->correct), MEM(p->act), U32(p->y), MEM(p->dact),
             U32(p->dx[0]), U32(clnet_dx_add(p, 0)), MEM(p->dact), U32(dtoff),
             U32(!data && clnet_dx_add(p, 1)), U32(p->want_grad), U32(want_target)));
}

/* target=NAME: the model parser makes NAME the node's second input
 * (clnet_kind.target), and resolves it as it does input= names. */
static clnet_status parse_target(const clnet_option *o, void *config, const char *value) {
    regression_config *c = config;
    if (!*value || strlen(value) >= sizeof c->target || strchr(value, ','))
        return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected %s", o->name, value, o->expects);
    snprintf(c->target, sizeof c->target, "%s", value);
    return CLNET_OK;
}

/* what parse_target read: the name, or none (count 0) */
static void get_target(const clnet_option *o, const void *config, clnet_option_value *out) {
    (void)o;
    const char *name = ((const regression_config *)config)->target;
    out->word = *name ? name : NULL;
    out->count = *name ? 1 : 0;
}

static const char *target(const void *config) {
    return ((const regression_config *)config)->target;
}

/* Without target=, the data's: one for each value of the prediction. */
static size_t data_targets(const clnet_node *node) {
    return node->ninputs == 1 ? clnet_shape_size(node->in[0]) : 0;
}

static const clnet_option options[] = {
    {.name = "target",
     .type = CLNET_OPT_CUSTOM,
     .parse = parse_target,
     .get = get_target,
     .expects = "a layer name, or 'input'",
     .without = "the data's float targets",
     .help = "the layer whose output is the target ('input': the model's input)"},
    {0},
};

#define REGRESSION(id, about_)                                                                     \
    const clnet_kind clnet_##id##_kind = {                                                         \
        .name = #id,                                                                               \
        .about = about_,                                                                           \
        .stem = "loss",                                                                            \
        .options = options,                                                                        \
        .config_size = sizeof(regression_config),                                                  \
        .target = target,                                                                          \
        .data_targets = data_targets,                                                              \
        .min_inputs = 1,                                                                           \
        .max_inputs = 2,                                                                           \
        .is_loss = 1,                                                                              \
        .setup = setup,                                                                            \
        .forward = forward,                                                                        \
    };
REGRESSION(mse, "The loss: the mean over each sample's elements of (x - target)^2, PyTorch's "
                "nn.MSELoss (its mean over the batch is the reported loss). The model's last "
                "layer; its output is x.")
REGRESSION(l1, "The loss: the mean over each sample's elements of |x - target|, PyTorch's "
               "nn.L1Loss (the gradient at x = target is 0). The model's last layer; its output "
               "is x.")
REGRESSION(bce_with_logits,
           "The loss: binary cross-entropy of sigmoid(x) against a target in [0, 1], from the "
           "logits x without overflow, the mean over each sample's elements, PyTorch's "
           "nn.BCEWithLogitsLoss. The model's last layer; its output is sigmoid(x).")
