/* Reshape: (n, ...) -> (n, C, spatial...) with the same values in the same
 * order (PyTorch's view), e.g. a volume's channels and depth read as the
 * channels of an image, or an image's rows laid end to end as a signal. Like
 * flatten, the output is the input itself: no kernel runs.
 *   reshape channels=C length=L | height=H width=W | depth=D height=H width=W */
#include "error.h"
#include "layer.h"

#include <stddef.h>

typedef struct {
    int v[5]; /* channels, depth, height, width, length (0: not given) */
} reshape_config;

/* in clnet_shape_keys' order */
#define SIZE(k, key, what)                                                                         \
    {                                                                                              \
        .name = key, .type = CLNET_OPT_INT, .at = offsetof(reshape_config, v) + (k) * sizeof(int), \
        .min = 1, .help = what                                                                     \
    }
static const clnet_option options[] = {
    SIZE(0, "channels", "the output's channels"),
    SIZE(1, "depth", "a volume's depth (with height= and width=)"),
    SIZE(2, "height", "an image's or a volume's height"),
    SIZE(3, "width", "an image's or a volume's width"),
    SIZE(4, "length", "a signal's length"),
    {0},
};

static clnet_status check(const void *config) {
    if (!clnet_shape_from_sizes(((const reshape_config *)config)->v).c)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "reshape needs channels= and length=, height= width=, or depth= "
                          "height= width=");
    return CLNET_OK;
}

static clnet_status setup(clnet_node *node) {
    clnet_shape out = clnet_shape_from_sizes(CLNET_CONFIG(node, reshape_config)->v);
    if (clnet_shape_size(out) != clnet_shape_size(node->in[0])) {
        char shape[64];
        clnet_shape_format(out, shape, sizeof shape);
        return clnet_node_fail(node, "%s holds %zu values, the input %zu", shape,
                               clnet_shape_size(out), clnet_shape_size(node->in[0]));
    }
    node->out = out;
    return CLNET_OK;
}

const clnet_kind clnet_reshape_kind = {
    .name = "reshape",
    .about =
        "The same values in the same order with another shape (PyTorch's view), e.g. a volume's "
        "channels and depth read as an image's channels; no kernel runs.",
    .options = options,
    .min_inputs = 1,
    .max_inputs = 1,
    .is_view = 1,
    .config_size = sizeof(reshape_config),
    .check = check,
    .setup = setup,
    .forward = clnet_no_kernels,
};
