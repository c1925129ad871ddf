/* Element-wise sum of two or more inputs of the same shape (a residual
 * connection): y = x0 + x1 + ... (cl/elementwise.cl's copy_rows). A relu that
 * alone reads it runs in its last pass (fuse_relu): y = max(... + x_last, 0)
 * (cl/activation.cl's add_relu_forward), and backward passes dy where y > 0
 * (relu_backward) to every input. In training, an input that is a batch
 * norm's output read by no other layer is made here from the batch norm's
 * input (p->norm), and that batch norm's backward reads
 * this layer's dy (and y, for the relu) itself; its sums are computed here,
 * in the pass that passes dy on to the other inputs. */
#include "elementwise.h"
#include "error.h"
#include "layer.h"

typedef struct {
    int relu; /* the relu after it runs in its last pass (fuse_relu, set by fusion.c) */
} add_config;

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

/* y (n, size) = x0 + x1 + ..., summed in input order, the relu (if taken
 * in) in the last pass; the first input joins the second's pass. In
 * training, input kb may be a batch norm's output left to this layer
 * (p->norm): made from the batch norm's input as it is added
 * (clnet_batchnorm_add), the same floats as the batch norm's own pass. */
static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t len = (size_t)p->n * clnet_shape_size(node->out), none = (size_t)-1, sum = none;
    int last = node->ninputs - 1, kb = p->norm ? p->norm->input : -1, pending = 0;
    for (int k = 0; k <= last; k++) {
        int relu = k == last && CLNET_CONFIG(node, add_config)->relu;
        if (k == kb && sum == none) { /* the first input: joins the second */
            pending = 1;
        } else if (k == kb || pending) { /* y = sum + the batch norm's, or x_k + it */
            TRY(clnet_batchnorm_add(p, node->out, k == kb ? sum : p->x[k], relu));
            sum = p->y, pending = 0;
        } else if (sum == none) { /* the first input: added by the next pass */
            sum = p->x[k];
        } else if (relu) { /* y = max(sum + x_last, 0) */
            TRY(clnet_pass_run(p, 2, KERNEL("activation", "", "add_relu_forward"), 1,
                               (size_t[]){len}, NULL,
                               ARGS(U32(len), MEM(p->act), U32(sum), MEM(p->act), U32(p->x[k]),
                                    MEM(p->act), U32(p->y))));
            sum = p->y;
        } else { /* y = sum, then y += x_k */
            if (sum != p->y)
                TRY(clnet_copy_rows(p->d, clnet_pass_kept(p, 0), 1, len,
                                    (clnet_matrix){p->act, sum, 0}, (clnet_matrix){p->act, p->y, 0},
                                    0.0f));
            TRY(clnet_copy_rows(p->d, clnet_pass_kept(p, 0), 1, len,
                                (clnet_matrix){p->act, p->x[k], 0}, (clnet_matrix){p->act, p->y, 0},
                                1.0f));
            sum = p->y;
        }
    }
cleanup:
    return status;
}

/* Forward was y = sum of x_k, so backward is dx_k = dy for every k (where y
 * > 0 with the relu taken in). With a batch norm left to it (p->norm), that
 * batch norm reads dy itself, and the pass that computes its sums writes
 * the first other input's dx_k as it goes. */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t len = (size_t)p->n * clnet_shape_size(node->out);
    int with_sums = -1, kb = p->norm ? p->norm->input : -1,
        relu = CLNET_CONFIG(node, add_config)->relu;
    for (int k = 0; p->norm && k < node->ninputs && with_sums < 0; k++)
        if (p->need_dx[k] && k != kb) with_sums = k;
    if (p->norm) TRY(clnet_batchnorm_add_backward(p, node->out, with_sums, relu));
    for (int k = 0; k < node->ninputs; k++) {
        if (!p->need_dx[k] || k == kb || k == with_sums) continue;
        if (relu)
            TRY(clnet_pass_run(p, 3, KERNEL("activation", "", "relu_backward"), 1, (size_t[]){len},
                               NULL,
                               ARGS(U32(len), MEM(p->dact), U32(p->dy), MEM(p->act), U32(p->y),
                                    MEM(p->dact), U32(p->dx[k]), U32(clnet_dx_add(p, k)))));
        else
            TRY(clnet_copy_rows(p->d, clnet_pass_kept(p, 1), 1, len,
                                (clnet_matrix){p->dact, p->dy, 0},
                                (clnet_matrix){p->dact, p->dx[k], 0}, p->dx_beta[k]));
    }
cleanup:
    return status;
}

/* Takes in the relu after it (fusion.c). */
static int fuse_relu(clnet_node *node) {
    CLNET_CONFIG(node, add_config)->relu = 1;
    return 1;
}

const clnet_kind clnet_add_kind = {
    .name = "add",
    .about = "Two or more inputs of the same shape, summed element by element: a residual "
             "connection (add input=relu1,res). A relu whose input no other layer reads runs "
             "inside it, and in training so does a batch norm whose output only it reads "
             "(CLNET_FUSE=off keeps them apart).",
    .min_inputs = 2,
    .max_inputs = CLNET_MAX_INPUTS,
    .backward_reads = CLNET_READS_Y_RELU,
    .config_size = sizeof(add_config),
    .setup = setup,
    .forward = forward,
    .backward = backward,
    .fuse_relu = fuse_relu,
    .takes_norm = 1,
};
