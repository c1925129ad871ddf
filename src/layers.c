/* The layer registry and helpers shared by the layer files. */
#include "error.h"
#include "layer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Adding a layer kind: its file in src/layers/, its kernels in cl/, and one
 * line here. */
const clnet_layer_ops *const clnet_layer_kinds[] = {
    &clnet_conv2d_ops,       &clnet_maxpool_ops,
    &clnet_avgpool_ops,      &clnet_relu_ops,
    &clnet_sigmoid_ops,      &clnet_tanh_ops,
    &clnet_linear_ops,       &clnet_flatten_ops,
    &clnet_softmax_xent_ops, NULL,
};

const clnet_layer_ops *clnet_layer_find(const char *kind) {
    for (int i = 0; clnet_layer_kinds[i]; i++)
        if (strcmp(clnet_layer_kinds[i]->kind, kind) == 0) return clnet_layer_kinds[i];
    return NULL;
}

size_t clnet_layer_none(const clnet_layer *l, int n) {
    (void)l;
    (void)n;
    return 0;
}

int clnet_window_out(int in, int kernel, int stride, int pad) {
    int span = in + 2 * pad - kernel;
    return span < 0 ? 0 : span / stride + 1;
}

clnet_status clnet_layer_fail(const clnet_layer *l, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "layer '%s' (%s, input %dx%dx%d): %s", l->name,
                      l->ops->kind, l->in.c, l->in.h, l->in.w, text);
}
