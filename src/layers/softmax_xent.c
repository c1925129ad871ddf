/* Softmax with cross-entropy, fused (cl/loss.cl): logits (n, K) and labels
 * (n) -> per-sample loss and correctness, class probabilities as the output,
 * and, when training, the gradient of the summed loss, softmax - onehot,
 * written during the forward pass: backward has nothing left to do. */
#include "error.h"
#include "layer.h"
#include "program.h"

static clnet_status setup(clnet_layer *l) {
    if (clnet_shape_size(l->in) < 2)
        return clnet_layer_fail(l, "needs at least 2 classes in its input");
    l->out = (clnet_shape){(int)clnet_shape_size(l->in), 1, 1};
    return CLNET_OK;
}

static clnet_status forward(const clnet_layer *l, const clnet_pass *p) {
    size_t K = clnet_shape_size(l->in);
    return clnet_run(p->d, "loss", "", "softmax_xent", 1, (size_t[]){(size_t)p->n}, NULL,
                     ARGS(U32(p->n), U32(K), MEM(p->act), U32(p->x), MEM(p->labels), MEM(p->loss),
                          MEM(p->correct), MEM(p->act), U32(p->y), MEM(p->dact), U32(p->dx),
                          U32(p->want_grad)));
}

static clnet_status backward(const clnet_layer *l, const clnet_pass *p) {
    (void)l;
    (void)p;
    return CLNET_OK; /* done in forward */
}

const clnet_layer_ops clnet_softmax_xent_ops = {
    .kind = "softmax_cross_entropy",
    .keys = "",
    .is_loss = 1,
    .setup = setup,
    .keep_floats = clnet_layer_none,
    .work_floats = clnet_layer_none,
    .forward = forward,
    .backward = backward,
};
