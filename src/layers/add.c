/* Element-wise sum of two or more inputs of the same shape (a residual
 * connection): y = x0 + x1 + ... (cl/elementwise.cl's copy_rows). */
#include "elementwise.h"
#include "error.h"
#include "layer.h"

static clnet_status setup(clnet_node *node) {
    char a[64], b[64];
    for (int k = 1; k < node->ninputs; k++) {
        if (clnet_shape_equal(node->in[k], node->in[0])) continue;
        clnet_shape_format(node->in[0], a, sizeof a);
        clnet_shape_format(node->in[k], b, sizeof b);
        return clnet_node_fail(node, "inputs of different shapes: '%s' is %s, '%s' is %s",
                               node->input_names[0], a, node->input_names[k], b);
    }
    node->out = node->in[0];
    return CLNET_OK;
}

/* y (n, size) = x0 + x1 + ... */
static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t len = (size_t)p->n * clnet_shape_size(node->out);
    for (int k = 0; k < node->ninputs; k++)
        TRY(clnet_copy_rows(p->d, clnet_pass_kept(p, 0), 1, len, p->act, p->x[k], 0, p->act, p->y,
                            0, k ? 1.0f : 0.0f));
cleanup:
    return status;
}

/* Forward was y = sum of x_k, so backward is dx_k = dy for every k. */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t len = (size_t)p->n * clnet_shape_size(node->out);
    for (int k = 0; k < node->ninputs; k++)
        if (p->need_dx[k])
            TRY(clnet_copy_rows(p->d, clnet_pass_kept(p, 1), 1, len, p->dact, p->dy, 0, p->dact,
                                p->dx[k], 0, p->dx_beta[k]));
cleanup:
    return status;
}

const clnet_kind clnet_add_kind =
    CLNET_JOIN_KIND("add",
                    "Two or more inputs of the same shape, summed element by element: a residual "
                    "connection (add input=relu1,res).",
                    setup, forward, backward);
