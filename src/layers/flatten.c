/* Flatten: (n, C, ...) -> (n, C*...) in C, H, W order. The memory is already
 * in that order, so the output is the input itself: the planner gives both
 * the same place and no kernel runs. */
#include "layer.h"

#include <stdint.h>

static clnet_status setup(clnet_node *node) {
    size_t size = clnet_shape_size(node->in[0]);
    if (size > INT32_MAX) return clnet_node_fail(node, "an input of %zu values is too large", size);
    node->out = clnet_shape_vector((int)size);
    return CLNET_OK;
}

const clnet_kind clnet_flatten_kind =
    CLNET_VIEW_KIND("flatten",
                    "The input as one vector of its values in channel, depth, height, width order "
                    "(PyTorch's nn.Flatten); no kernel runs.",
                    setup);
