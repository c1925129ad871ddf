/* A made-up convolution algorithm, as a test adds one: this file and one
 * line (conv_algo_register(&conv_made_up), in test_layers.c's main). It runs
 * im2col's passes one sample a chunk, through its own chunking: the layer
 * test forces it by name and checks it against the reference, and counts its
 * chunks to know it ran. */
#include "conv_made_up.h"

int conv_made_up_chunks;

static int one_sample(const clnet_node *node, const clnet_device *d, int n) {
    (void)node, (void)d, (void)n;
    return 1;
}

static size_t regions(const clnet_node *node, const clnet_device *d, int s) {
    return conv_im2col.regions(node, d, s);
}

static size_t scratch(const clnet_node *node, const clnet_device *d, int s) {
    return conv_im2col.scratch(node, d, s);
}

/* Never picked by the rules (they ask the built-in algorithms alone). */
static int never(const clnet_node *node, const clnet_device *d) {
    (void)node, (void)d;
    return 0;
}

#define COUNTED(pass)                                                                              \
    static clnet_status pass(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,    \
                             float beta) {                                                         \
        conv_made_up_chunks++;                                                                     \
        return conv_im2col.pass(node, p, ch, beta);                                                \
    }
COUNTED(forward)
COUNTED(backward)
COUNTED(transpose_forward)
COUNTED(transpose_backward)

const conv_algo conv_made_up = {
    .name = "one-by-one",
    .rule = never,
    .chunk_samples = one_sample,
    .regions = regions,
    .scratch = scratch,
    .forward = forward,
    .backward = backward,
    .transpose_forward = transpose_forward,
    .transpose_backward = transpose_backward,
};
