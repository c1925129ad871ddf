/* Concatenation along channels of inputs with the same spatial size, in the
 * order listed: x_k (n, C_k, ...) -> y (n, C_0 + C_1 + ..., ...). */
#include "elementwise.h"
#include "error.h"
#include "layer.h"

#include <stdint.h>

static clnet_status setup(clnet_node *node) {
    char a[64], b[64];
    int64_t channels = 0;
    for (int k = 0; k < node->ninputs; k++) {
        clnet_shape s = node->in[k], first = node->in[0];
        s.c = first.c;
        if (!clnet_shape_equal(s, first)) {
            clnet_shape_format(node->in[0], a, sizeof a);
            clnet_shape_format(node->in[k], b, sizeof b);
            return clnet_node_fail(node,
                                   "inputs of different spatial sizes: '%s' is %s, '%s' is %s",
                                   node->input_names[0], a, node->input_names[k], b);
        }
        channels += node->in[k].c;
    }
    if (channels > INT32_MAX) return clnet_node_fail(node, "too many channels");
    node->out = node->in[0];
    node->out.c = (int)channels;
    return CLNET_OK;
}

/* Sample b of input k is one row of C_k * S floats; in y it starts at
 * channel c0 of sample b, rows C * S apart. */
static clnet_status move(const clnet_node *node, const clnet_pass *p, int backward) {
    clnet_status status = CLNET_OK;
    size_t S = clnet_shape_spatial(node->out), row = (size_t)node->out.c * S, c0 = 0;
    for (int k = 0; k < node->ninputs; k++) {
        size_t len = (size_t)node->in[k].c * S;
        if (!backward)
            TRY(clnet_copy_rows(p->d, clnet_pass_kept(p, 0), (size_t)p->n, len,
                                (clnet_matrix){p->act, p->x[k], len},
                                (clnet_matrix){p->act, p->y + c0 * S, row}, 0.0f));
        else if (p->need_dx[k])
            TRY(clnet_copy_rows(p->d, clnet_pass_kept(p, 1), (size_t)p->n, len,
                                (clnet_matrix){p->dact, p->dy + c0 * S, row},
                                (clnet_matrix){p->dact, p->dx[k], len}, p->dx_beta[k]));
        c0 += (size_t)node->in[k].c;
    }
cleanup:
    return status;
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    return move(node, p, 0);
}

/* Forward copied each input into its channels of y, so backward copies each
 * input's channels of dy back into its dx. */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    return move(node, p, 1);
}

const clnet_kind clnet_concat_kind =
    CLNET_JOIN_KIND("concat",
                    "Two or more inputs with the same spatial size, joined along channels in the "
                    "order input= lists them (torch.cat along dimension 1).",
                    setup, forward, backward);
