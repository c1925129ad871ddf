/* Flatten: (n, C, H, W) -> (n, C*H*W, 1, 1) in C, H, W order. NCHW memory is
 * already in that order, so the output is the input itself: the planner gives
 * both the same place and no kernel runs. */
#include "layer.h"

static clnet_status setup(clnet_layer *l) {
    l->out = (clnet_shape){(int)clnet_shape_size(l->in), 1, 1};
    return CLNET_OK;
}

static clnet_status nothing(const clnet_layer *l, const clnet_pass *p) {
    (void)l;
    (void)p;
    return CLNET_OK;
}

const clnet_layer_ops clnet_flatten_ops = {
    .kind = "flatten",
    .keys = "",
    .is_view = 1,
    .setup = setup,
    .keep_floats = clnet_layer_none,
    .work_floats = clnet_layer_none,
    .forward = nothing,
    .backward = nothing,
};
