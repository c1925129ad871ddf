/* Softmax with cross-entropy, fused (cl/loss.cl): per sample (the default),
 * logits (n, K) and labels (n); per position (per=position), logits
 * (n, K, spatial...) whose channels are the classes and the class of each
 * position from the data's targets (n, spatial...), PyTorch's
 * nn.CrossEntropyLoss on such a tensor. Each sample's loss (the mean over
 * its positions) and correct answers, class probabilities as the output,
 * and, when training, the gradient of the summed loss, (softmax - onehot)
 * over the positions, written during the forward pass: backward has nothing
 * left to do. label_smoothing=EPS trains against (1 - EPS) onehot + EPS / K
 * rather than the onehot, as PyTorch's cross_entropy(..., label_smoothing=EPS):
 * loss (1 - EPS) (-log p_label) + EPS (-(1/K) sum_j log p_j), gradient
 * softmax - (1 - EPS) onehot - EPS / K (the accuracy still counts the
 * label alone). The logits are read only by this node (it is the model's one
 * sink), so the gradient is always written, never added. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>
#include <stdint.h>

enum { PER_SAMPLE = 0, PER_POSITION = 1 };

typedef struct {
    int per;               /* PER_* */
    float label_smoothing; /* EPS, 0 to 1 */
} xent_config;

static const clnet_choice pers[] = {
    {"sample", PER_SAMPLE},
    {"position", PER_POSITION},
    {NULL, 0},
};

static const clnet_option options[] = {
    {.name = "per",
     .type = CLNET_OPT_CHOICE,
     .at = offsetof(xent_config, per),
     .choices = pers,
     .value = "sample",
     .help = "sample: one class per sample, every input value a class; position: the input's "
             "channels are the classes, one class per position from the data"},
    {.name = "label_smoothing",
     .type = CLNET_OPT_FLOAT,
     .at = offsetof(xent_config, label_smoothing),
     .max = 1,
     .range = "0 to 1",
     .value = "0",
     .help = "EPS: the target is 1 - EPS on the label plus EPS / K on every class (PyTorch's "
             "label_smoothing); the accuracy counts the label"},
    {0},
};

static int per_position(const clnet_node *node) {
    return CLNET_CONFIG(node, xent_config)->per == PER_POSITION;
}

static clnet_status setup(clnet_node *node) {
    clnet_shape in = node->in[0];
    size_t size = clnet_shape_size(in);
    if (size > INT32_MAX) return clnet_node_fail(node, "an input of %zu values is too large", size);
    if (!per_position(node)) {
        if (size < 2) return clnet_node_fail(node, "needs at least 2 classes in its input");
        node->out = clnet_shape_vector((int)size);
        return CLNET_OK;
    }
    char text[64];
    clnet_shape_format(in, text, sizeof text);
    if (in.ndim < 1)
        return clnet_node_fail(node,
                               "per=position: its input, %s, has no positions (it takes "
                               "channels, the classes, then 1 to 3 spatial axes)",
                               text);
    if (in.c < 2)
        return clnet_node_fail(node,
                               "per=position: its input, %s, needs at least 2 channels "
                               "(the classes)",
                               text);
    node->out = in;
    return CLNET_OK;
}

static size_t data_targets(const clnet_node *node) {
    return per_position(node) ? clnet_shape_spatial(node->in[0]) : 0;
}

static int position_classes(const clnet_node *node) {
    return per_position(node) ? node->in[0].c : 0;
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    size_t K = clnet_shape_size(node->in[0]);
    float eps = CLNET_CONFIG(node, xent_config)->label_smoothing;
    if (!per_position(node))
        return clnet_pass_run(p, 0, KERNEL("loss", "", "softmax_xent"), 1, (size_t[]){(size_t)p->n},
                              NULL,
                              ARGS(U32(p->n), U32(K), MEM(p->act), U32(p->x[0]), MEM(p->labels),
                                   MEM(p->loss), MEM(p->correct), MEM(p->act), U32(p->y),
                                   MEM(p->dact), U32(p->dx[0]), U32(p->want_grad), F32(eps)));
    if (!p->targets) return clnet_node_fail(node, "no room for the classes of the positions");
    return clnet_pass_run(
        p, 0, KERNEL("loss", "", "softmax_xent_positions"), 1, (size_t[]){(size_t)p->n}, NULL,
        ARGS(U32(p->n), U32(node->in[0].c), U32(clnet_shape_spatial(node->in[0])), MEM(p->act),
             U32(p->x[0]), MEM(p->targets), MEM(p->loss), MEM(p->correct), MEM(p->act), U32(p->y),
             MEM(p->dact), U32(p->dx[0]), U32(p->want_grad), F32(eps)));
}

const clnet_kind clnet_softmax_xent_kind = {
    .name = "softmax_cross_entropy",
    .about = "The loss: softmax and cross-entropy, fused and numerically stable (log-sum-exp); "
             "it counts the correct answers. Per sample: over all the values of its input, "
             "against one label per sample. per=position: over the channels at each position of "
             "(C, spatial...), against the data's class for each position, each sample's loss "
             "the mean over its positions (PyTorch's nn.CrossEntropyLoss on N x C x ...). "
             "label_smoothing=EPS: PyTorch's label smoothing. The model's last layer, the one no "
             "layer reads.",
    .stem = "loss",
    .options = options,
    .config_size = sizeof(xent_config),
    .min_inputs = 1,
    .max_inputs = 1,
    .is_loss = 1,
    .classifier = 1,
    .data_targets = data_targets,
    .position_classes = position_classes,
    .setup = setup,
    .forward = forward,
};
