/* Softmax with cross-entropy, fused (cl/loss.cl): logits (n, K) and labels
 * (n) -> per-sample loss and correctness, class probabilities as the output,
 * and, when training, the gradient of the summed loss, softmax - onehot,
 * written during the forward pass: backward has nothing left to do. The
 * logits are read only by this node (it is the model's one sink), so the
 * gradient is always written, never added. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stdint.h>

static clnet_status setup(clnet_node *node) {
    size_t K = clnet_shape_size(node->in[0]);
    if (K < 2) return clnet_node_fail(node, "needs at least 2 classes in its input");
    if (K > INT32_MAX) return clnet_node_fail(node, "an input of %zu values is too large", K);
    node->out = clnet_shape_vector((int)K);
    return CLNET_OK;
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    size_t K = clnet_shape_size(node->in[0]);
    return clnet_pass_run(p, 0, "loss", "", "softmax_xent", 1, (size_t[]){(size_t)p->n}, NULL,
                          ARGS(U32(p->n), U32(K), MEM(p->act), U32(p->x[0]), MEM(p->labels),
                               MEM(p->loss), MEM(p->correct), MEM(p->act), U32(p->y), MEM(p->dact),
                               U32(p->dx[0]), U32(p->want_grad)));
}

const clnet_kind clnet_softmax_xent_kind = {
    .name = "softmax_cross_entropy",
    .about = "The loss: softmax and cross-entropy against the labels, fused and numerically stable "
             "(log-sum-exp), over the C values of its input; it counts the correct answers. The "
             "model's last layer, the one no layer reads.",
    .stem = "loss",
    .min_inputs = 1,
    .max_inputs = 1,
    .is_loss = 1,
    .classifier = 1,
    .setup = setup,
    .forward = forward,
};
