/* Every layer's forward and backward on every device, against the plain-C
 * references in tests/ref/ and against finite differences of the device's own
 * forward pass, on awkward shapes: batch 1, sizes that are multiples of
 * nothing, 1x1 kernels, stride larger than the kernel, padding larger than
 * half the kernel, overlapping windows. Batch norm also: its running
 * statistics after training passes, evaluation with them, and the refusal of
 * a training batch with one value per channel. */
#include "layer_rig.h"
#include "net.h"
#include "ref/layers_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    CONV,
    MAXPOOL,
    AVGPOOL,
    GLOBAL_AVGPOOL,
    GLOBAL_MAXPOOL,
    RELU,
    SIGMOID,
    TANH,
    LINEAR,
    BATCHNORM,
    LOSS,
    /* windows of any rank, described by `win` */
    CONV_ND,
    CONV_TRANSPOSE,
    MAXPOOL_ND,
    AVGPOOL_ND,
} kind;

typedef struct {
    kind k;
    int n, c, h, w;      /* input (n, c, h, w) */
    int f, kh, kw, s, p; /* conv filters / linear units, window, stride, pad */
    int slow_ok;         /* small enough for a simulator */
    int no_bias;         /* conv2d and linear: bias=off */
    int dil, groups;     /* conv2d: dilation= and groups= (0: the default, 1) */
    /* the N-d kinds: the geometry (its N is n), and pad=same or pad=causal
     * (pad_word; win's p and extra then say what that pads) */
    const ref_window *win;
    const char *pad_word;
} layer_case;

/* Geometry of the N-d cases: rank, N (unused: the case's n), C, F, in, k, s, p, d, extra,
 * groups, out_pad, ceil, count_pad. */
#define WIN(...) (&(const ref_window){__VA_ARGS__})

/* Cases leave their trailing fields out: zeros, the defaults. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const layer_case CASES[] = {
    /* conv2d */
    {CONV, 1, 1, 5, 5, 2, 3, 3, 1, 1, 1, 0, 0, 0},
    {CONV, 2, 3, 7, 9, 4, 3, 2, 1, 0, 1, 0, 0, 0},   /* non-square kernel, odd sizes */
    {CONV, 1, 2, 13, 11, 3, 1, 1, 1, 0, 1, 0, 0, 0}, /* 1x1 kernel */
    {CONV, 2, 2, 9, 9, 3, 2, 2, 3, 0, 1, 0, 0, 0},   /* stride larger than the kernel */
    {CONV, 1, 2, 6, 7, 2, 3, 3, 1, 2, 1, 0, 0, 0},   /* padding larger than half the kernel */
    {CONV, 3, 5, 13, 11, 7, 5, 5, 2, 2, 0, 0, 0, 0},
    {CONV, 2, 1, 28, 28, 20, 3, 3, 1, 0, 0, 0, 0, 0}, /* LeNet's first layer */
    {CONV, 2, 3, 7, 9, 4, 3, 2, 1, 0, 1, 1, 0, 0},    /* bias=off */
    {CONV, 1, 4, 13, 11, 8, 1, 1, 2, 0, 1, 1, 0, 0}, /* bias=off, ResNet's strided 1x1 projection */
    /* 1.2 Mi column floats a sample: chunks of 2, 2, 2 and 1 samples (conv2d.c) */
    {CONV, 7, 64, 46, 46, 4, 3, 3, 1, 1, 0, 0, 0, 0},
    /* dilation and groups (PyTorch's Conv2d) */
    {CONV, 2, 2, 11, 9, 3, 3, 3, 1, 1, 1, 0, 3, 1},   /* dilation 3 */
    {CONV, 2, 4, 7, 6, 6, 3, 3, 2, 1, 1, 0, 1, 2},    /* 2 groups, strided */
    {CONV, 3, 3, 9, 7, 3, 3, 3, 1, 2, 1, 1, 2, 3},    /* depthwise, dilated, no bias */
    {CONV, 1, 8, 12, 12, 16, 3, 3, 2, 1, 1, 0, 2, 4}, /* 4 groups, dilation 2, stride 2 */
    /* pools */
    {MAXPOOL, 2, 3, 7, 9, 0, 2, 2, 2, 0, 1, 0, 0, 0},
    {MAXPOOL, 1, 2, 13, 11, 0, 3, 3, 2, 1, 1, 0, 0, 0}, /* overlapping windows, padding */
    {MAXPOOL, 2, 1, 9, 9, 0, 2, 2, 3, 0, 1, 0, 0, 0},   /* stride larger than the window */
    {MAXPOOL, 1, 1, 7, 7, 0, 3, 3, 1, 2, 1, 0, 0, 0},   /* padding = window - 1 */
    {AVGPOOL, 2, 3, 7, 9, 0, 2, 2, 2, 0, 1, 0, 0, 0},
    {AVGPOOL, 1, 2, 13, 11, 0, 3, 3, 2, 1, 1, 0, 0, 0},
    {AVGPOOL, 2, 1, 9, 9, 0, 2, 2, 3, 0, 1, 0, 0, 0},
    {AVGPOOL, 1, 1, 7, 7, 0, 3, 3, 1, 2, 1, 0, 0, 0},
    {GLOBAL_AVGPOOL, 2, 3, 7, 9, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    {GLOBAL_AVGPOOL, 3, 4, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0}, /* a 1x1 plane: the identity */
    {GLOBAL_AVGPOOL, 1, 2, 13, 11, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    {GLOBAL_AVGPOOL, 4, 64, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0}, /* ResNet-18's, in small batch */
    /* activations */
    {RELU, 2, 3, 7, 9, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    {SIGMOID, 1, 1, 13, 11, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    {TANH, 3, 2, 5, 7, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    /* linear (f = units) */
    {LINEAR, 1, 37, 1, 1, 10, 0, 0, 0, 0, 1, 0, 0, 0},
    {LINEAR, 5, 3, 2, 2, 7, 0, 0, 0, 0, 1, 0, 0, 0},  /* reads a (3, 2, 2) input flat */
    {LINEAR, 3, 11, 1, 1, 6, 0, 0, 0, 0, 1, 1, 0, 0}, /* bias=off */
    {LINEAR, 3, 800, 1, 1, 128, 0, 0, 0, 0, 0, 0, 0, 0},
    /* batch norm in training, statistics of the rig's own batch (no collective) */
    {BATCHNORM, 2, 3, 7, 9, 0, 0, 0, 0, 0, 1, 0, 0, 0},    /* images, odd sizes */
    {BATCHNORM, 4, 5, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0},    /* vectors (C,1,1), as after linear */
    {BATCHNORM, 2, 4, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0},    /* two values per channel, the least */
    {BATCHNORM, 1, 3, 6, 5, 0, 0, 0, 0, 0, 1, 0, 0, 0},    /* batch 1: statistics over the image */
    {BATCHNORM, 3, 2, 13, 11, 0, 0, 0, 0, 0, 1, 0, 0, 0},  /* 429 values per channel */
    {BATCHNORM, 8, 16, 14, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0}, /* 1568: many per work-item */
    /* softmax + cross-entropy (c = classes) */
    {LOSS, 1, 10, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    {LOSS, 7, 10, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    {LOSS, 4, 37, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    /* conv1d and conv3d */
    {CONV_ND, 3, .slow_ok = 1, .win = WIN(1, 0, 4, 6, {17}, {3}, {1}, {1}, {1})},
    {CONV_ND, 2, .slow_ok = 1, .win = WIN(1, 0, 3, 4, {19}, {2}, {3}, {0}, {1})}, /* s > k */
    {CONV_ND, 5, .slow_ok = 1, .no_bias = 1, /* dilation 3, 2 groups */
     .win = WIN(1, 0, 4, 6, {15}, {3}, {1}, {2}, {3}, .groups = 2)},
    {CONV_ND, 2, .slow_ok = 1, .pad_word = "causal", /* d(k-1) = 4 zeros before, none after */
     .win = WIN(1, 0, 3, 4, {12}, {3}, {1}, {4}, {2}, {-4})},
    {CONV_ND, 3, .slow_ok = 1, .pad_word = "same", /* an even kernel: the odd zero after */
     .win = WIN(1, 0, 2, 3, {9}, {4}, {1}, {1}, {1}, {1})},
    {CONV_ND, 2, .slow_ok = 1, .win = WIN(1, 0, 5, 5, {13}, {3}, {1}, {1}, {1}, .groups = 5)},
    {CONV_ND, 2, .slow_ok = 1,
     .win = WIN(3, 0, 2, 3, {5, 6, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1})},
    {CONV_ND, 2, .slow_ok = 1, /* asymmetric kernel, stride, padding and dilation */
     .win = WIN(3, 0, 3, 4, {6, 9, 5}, {2, 3, 1}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1})},
    {CONV_ND, 1, .slow_ok = 1, .no_bias = 1,
     .win = WIN(3, 0, 4, 6, {5, 6, 7}, {3, 3, 2}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, .groups = 2)},
    /* transposed convolutions */
    {CONV_TRANSPOSE, 2, .slow_ok = 1, /* output_pad 1 */
     .win = WIN(1, 0, 4, 3, {9}, {3}, {2}, {1}, {1}, .out_pad = {1})},
    {CONV_TRANSPOSE, 3, .slow_ok = 1, /* output_pad 1 < dilation 2, stride 1 */
     .win = WIN(1, 0, 3, 4, {10}, {3}, {1}, {1}, {2}, .out_pad = {1})},
    {CONV_TRANSPOSE, 2, .slow_ok = 1,
     .win = WIN(2, 0, 3, 4, {5, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, .out_pad = {1, 1})},
    {CONV_TRANSPOSE, 5, .slow_ok = 1, /* asymmetric, dilated, 2 groups */
     .win =
         WIN(2, 0, 4, 6, {5, 6}, {3, 2}, {2, 1}, {1, 0}, {1, 2}, .groups = 2, .out_pad = {1, 0})},
    {CONV_TRANSPOSE, 1, .slow_ok = 1, .no_bias = 1, /* stride larger than the kernel */
     .win = WIN(2, 0, 2, 3, {4, 5}, {2, 2}, {3, 3}, {0, 0}, {1, 1})},
    {CONV_TRANSPOSE, 2, .slow_ok = 1, /* depthwise-like: groups = input channels */
     .win = WIN(2, 0, 3, 6, {5, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, .groups = 3)},
    /* 576 Ki column floats a sample: chunks of 4 and 3 samples (conv.c) */
    {CONV_TRANSPOSE, 7,
     .win = WIN(2, 0, 16, 64, {32, 32}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, .out_pad = {1, 1})},
    {CONV_TRANSPOSE, 2, .slow_ok = 1,
     .win = WIN(3, 0, 2, 3, {3, 4, 3}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1},
                .out_pad = {1, 1, 1})},
    /* pools over 1 and 3 axes */
    {MAXPOOL_ND, 2, .slow_ok = 1, .win = WIN(1, 0, 3, 0, {12}, {3}, {2}, {1}, {1}, .ceil = 1)},
    {MAXPOOL_ND, 5, .slow_ok = 1, .win = WIN(1, 0, 3, 0, {15}, {3}, {2}, {1}, {2})},
    {MAXPOOL_ND, 2, .slow_ok = 1,
     .win = WIN(3, 0, 3, 0, {5, 7, 5}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1})},
    {MAXPOOL_ND, 1, .slow_ok = 1,
     .win = WIN(3, 0, 2, 0, {6, 5, 8}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, .ceil = 1)},
    {MAXPOOL_ND, 2, .slow_ok = 1,
     .win = WIN(3, 0, 2, 0, {7, 5, 6}, {3, 2, 2}, {2, 1, 1}, {1, 0, 1}, {2, 1, 1})},
    {AVGPOOL_ND, 2, .slow_ok = 1,
     .win = WIN(1, 0, 3, 0, {12}, {3}, {2}, {1}, {1}, .ceil = 1, .count_pad = 1)},
    {AVGPOOL_ND, 5, .slow_ok = 1, .win = WIN(1, 0, 3, 0, {11}, {3}, {2}, {1}, {1})},
    {AVGPOOL_ND, 2, .slow_ok = 1,
     .win = WIN(3, 0, 2, 0, {6, 5, 8}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, .ceil = 1)},
    {AVGPOOL_ND, 1, .slow_ok = 1,
     .win = WIN(3, 0, 2, 0, {5, 6, 4}, {3, 2, 1}, {1, 2, 1}, {1, 1, 0}, {1, 1, 1}, .count_pad = 1)},
};
#pragma GCC diagnostic pop

/* conv2d's dilation and groups (0 in a case: 1, the default) */
static int dil_of(const layer_case *t) {
    return t->dil ? t->dil : 1;
}
static int groups_of(const layer_case *t) {
    return t->groups ? t->groups : 1;
}

/* "3x2" of an N-d case's per-axis values */
static const char *dims(const ref_window *g, const int *v, char *out) {
    int used = 0;
    for (int a = 0; a < g->rank; a++) used += sprintf(out + used, a ? "x%d" : "%d", v[a]);
    return out;
}

/* The N-d cases' model-file lines, and their inputs. */
static void window_line(const layer_case *t, char *out, size_t cap) {
    const ref_window *g = t->win;
    char k[24], s[24], p[24], d[24], op[24];
    dims(g, g->k, k), dims(g, g->s, s), dims(g, g->p, p), dims(g, g->d, d);
    const char *pad = t->pad_word ? t->pad_word : p;
    if (t->k == CONV_ND || t->k == CONV_TRANSPOSE)
        snprintf(out, cap, "%s%dd filters=%d size=%s stride=%s pad=%s dilation=%s groups=%d%s%s%s",
                 t->k == CONV_ND ? "conv" : "conv_transpose", g->rank, g->F, k, s, pad, d,
                 g->groups ? g->groups : 1, t->no_bias ? " bias=off" : "",
                 t->k == CONV_TRANSPOSE ? " output_pad=" : "",
                 t->k == CONV_TRANSPOSE ? dims(g, g->out_pad, op) : "");
    else if (t->k == MAXPOOL_ND)
        snprintf(out, cap, "maxpool size=%s stride=%s pad=%s dilation=%s ceil=%s", k, s, pad, d,
                 g->ceil ? "on" : "off");
    else /* the case's count_pad = 1 means PyTorch's count_include_pad=False */
        snprintf(out, cap, "avgpool size=%s stride=%s pad=%s ceil=%s count_pad=%s", k, s, pad,
                 g->ceil ? "on" : "off", g->count_pad ? "off" : "on");
}

static void input_for(const layer_case *t, char *out, size_t cap) {
    const ref_window *g = t->win;
    clnet_shape in = clnet_shape_image(t->c, t->h, t->w);
    if (g) {
        in = (clnet_shape){.c = g->C, .ndim = g->rank};
        memcpy(in.dim, g->in, sizeof in.dim);
    }
    rig_input_line(in, out, cap);
}

/* An N-d case's geometry for the references: its batch, PyTorch's count_include_pad. */
static ref_window geometry(const layer_case *t) {
    ref_window g = *t->win;
    g.N = t->n;
    g.count_pad = !t->win->count_pad;
    if (!g.groups) g.groups = 1;
    return g;
}

static void line_for(const layer_case *t, char *out, size_t cap) {
    const char *bias = t->no_bias ? " bias=off" : "";
    switch (t->k) {
    case CONV:
        snprintf(out, cap, "conv2d filters=%d size=%dx%d stride=%d pad=%d dilation=%d groups=%d%s",
                 t->f, t->kh, t->kw, t->s, t->p, dil_of(t), groups_of(t), bias);
        break;
    case MAXPOOL:
    case AVGPOOL:
        snprintf(out, cap, "%s size=%dx%d stride=%d pad=%d",
                 t->k == MAXPOOL ? "maxpool" : "avgpool", t->kh, t->kw, t->s, t->p);
        break;
    case GLOBAL_AVGPOOL:
        snprintf(out, cap, "global_avgpool");
        break;
    case GLOBAL_MAXPOOL:
        snprintf(out, cap, "global_maxpool");
        break;
    case RELU:
        snprintf(out, cap, "relu");
        break;
    case SIGMOID:
        snprintf(out, cap, "sigmoid");
        break;
    case TANH:
        snprintf(out, cap, "tanh");
        break;
    case LINEAR:
        snprintf(out, cap, "linear units=%d%s", t->f, bias);
        break;
    case BATCHNORM:
        snprintf(out, cap, "batchnorm");
        break;
    case LOSS:
        snprintf(out, cap, "softmax_cross_entropy");
        break;
    case CONV_ND:
    case CONV_TRANSPOSE:
    case MAXPOOL_ND:
    case AVGPOOL_ND:
        window_line(t, out, cap);
        break;
    }
}

/* The reference forward for the case (without a bias, b is ignored). */
static void ref_forward(const layer_case *t, float *y, const float *x, const float *w,
                        const float *b, const int32_t *labels, double *loss) {
    size_t count = (size_t)t->n * t->c * t->h * t->w;
    ref_window g = t->win ? geometry(t) : (ref_window){0};
    if (t->no_bias) b = NULL;
    switch (t->k) {
    case CONV:
        ref_conv2d_full_forward(y, x, w, b, t->n, t->c, t->h, t->w, t->f, t->kh, t->kw, t->s, t->s,
                                t->p, t->p, dil_of(t), dil_of(t), groups_of(t));
        break;
    case MAXPOOL:
        ref_maxpool_forward(y, x, t->n, t->c, t->h, t->w, t->kh, t->kw, t->s, t->s, t->p, t->p);
        break;
    case AVGPOOL:
        ref_avgpool_forward(y, x, t->n, t->c, t->h, t->w, t->kh, t->kw, t->s, t->s, t->p, t->p);
        break;
    case GLOBAL_AVGPOOL:
        ref_global_avgpool_forward(y, x, t->n, t->c, t->h * t->w);
        break;
    case GLOBAL_MAXPOOL:
        ref_global_maxpool_forward(y, x, t->n, t->c, t->h * t->w);
        break;
    case RELU:
        ref_relu_forward(y, x, count);
        break;
    case SIGMOID:
        ref_sigmoid_forward(y, x, count);
        break;
    case TANH:
        ref_tanh_forward(y, x, count);
        break;
    case LINEAR:
        ref_linear_forward(y, x, w, b, t->n, t->c * t->h * t->w, t->f);
        break;
    case BATCHNORM: /* the defaults, eps=1e-5 momentum=0.1 */
        ref_batchnorm_forward_train(y, NULL, NULL, NULL, NULL, x, w, b, t->n, t->c, t->h * t->w,
                                    1e-5f, 0.1f);
        break;
    case LOSS:
        *loss = ref_softmax_xent_forward(y, NULL, x, labels, t->n, t->c);
        break;
    case CONV_ND:
        ref_convnd_forward(y, x, w, b, &g);
        break;
    case CONV_TRANSPOSE:
        ref_conv_transpose_forward(y, x, w, b, &g);
        break;
    case MAXPOOL_ND:
        ref_maxpoolnd_forward(y, x, &g);
        break;
    case AVGPOOL_ND:
        ref_avgpoolnd_forward(y, x, &g);
        break;
    }
}

static void ref_backward(const layer_case *t, float *dx, float *dw, float *db, const float *dy,
                         const float *x, const float *y, const float *w, const int32_t *labels) {
    size_t count = (size_t)t->n * t->c * t->h * t->w;
    ref_window g = t->win ? geometry(t) : (ref_window){0};
    if (t->no_bias) db = NULL;
    switch (t->k) {
    case CONV:
        ref_conv2d_full_backward(dx, dw, db, dy, x, w, t->n, t->c, t->h, t->w, t->f, t->kh, t->kw,
                                 t->s, t->s, t->p, t->p, dil_of(t), dil_of(t), groups_of(t));
        break;
    case MAXPOOL:
        ref_maxpool_backward(dx, dy, x, t->n, t->c, t->h, t->w, t->kh, t->kw, t->s, t->s, t->p,
                             t->p);
        break;
    case AVGPOOL:
        ref_avgpool_backward(dx, dy, t->n, t->c, t->h, t->w, t->kh, t->kw, t->s, t->s, t->p, t->p);
        break;
    case GLOBAL_AVGPOOL:
        ref_global_avgpool_backward(dx, dy, t->n, t->c, t->h * t->w);
        break;
    case GLOBAL_MAXPOOL:
        ref_global_maxpool_backward(dx, dy, x, t->n, t->c, t->h * t->w);
        break;
    case RELU:
        ref_relu_backward(dx, dy, y, count);
        break;
    case SIGMOID:
        ref_sigmoid_backward(dx, dy, y, count);
        break;
    case TANH:
        ref_tanh_backward(dx, dy, y, count);
        break;
    case LINEAR:
        ref_linear_backward(dx, dw, db, dy, x, w, t->n, t->c * t->h * t->w, t->f);
        break;
    case BATCHNORM:
        ref_batchnorm_backward(dx, dw, db, dy, x, w, t->n, t->c, t->h * t->w, 1e-5f);
        break;
    case LOSS:
        ref_softmax_xent_backward(dx, x, labels, t->n, t->c);
        break;
    case CONV_ND:
        ref_convnd_backward(dx, dw, db, dy, x, w, &g);
        break;
    case CONV_TRANSPOSE:
        ref_conv_transpose_backward(dx, dw, db, dy, x, w, &g);
        break;
    case MAXPOOL_ND:
        ref_maxpoolnd_backward(dx, dy, x, &g);
        break;
    case AVGPOOL_ND:
        ref_avgpoolnd_backward(dx, dy, &g);
        break;
    }
}

/* Largest |a - b| relative to the largest |b| (at least 1). */
static double rel_diff(const float *a, const float *b, size_t n) {
    double m = 0, scale = 1;
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return m / scale;
}

/* Channel c of a batch-norm input: a mean and a spread of its own, so that
 * each channel's statistics differ (x = u * scale + shift, u in [-1, 1)). */
static void channel_spread(float *x, int n, int c, int s) {
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++)
            for (int i = 0; i < s; i++) {
                float *v = &x[((size_t)b * c + ch) * s + i];
                *v = *v * (0.5f + 0.25f * (float)(ch % 4)) + 0.5f * (float)(ch % 5) - 1.0f;
            }
}

/* Inputs that keep finite differences honest: max pooling gets distinct
 * values 0.05 apart (no ties, no winner changes), relu stays away from 0. */
static void make_input(const layer_case *t, float *x, size_t count, uint64_t seed) {
    test_random_floats(x, count, seed);
    if (t->k == MAXPOOL || t->k == GLOBAL_MAXPOOL || t->k == MAXPOOL_ND) {
        for (size_t i = 0; i < count; i++) x[i] = 0.05f * (float)((i * 7919) % count) - 1.0f;
    } else if (t->k == RELU) {
        for (size_t i = 0; i < count; i++) x[i] += x[i] >= 0 ? 0.1f : -0.1f;
    } else if (t->k == LOSS) {
        for (size_t i = 0; i < count; i++) x[i] *= 3.0f;
    } else if (t->k == BATCHNORM) {
        channel_spread(x, t->n, t->c, t->h * t->w);
        /* Two values a, b per channel have xhat = +-1 up to eps, and a gradient that
         * grows as eps / |a - b|^3 where they meet: kept 0.5 apart, the finite
         * difference's step of 1e-2 stays small beside their distance. */
        int S = t->h * t->w;
        if (t->n * S == 2)
            for (int c = 0; c < t->c; c++) {
                /* the channel's first and last value: (0, c, 0) and (n-1, c, S-1) */
                float *a = &x[(size_t)c * S], *b = &x[((size_t)(t->n - 1) * t->c + c) * S + S - 1];
                if (fabsf(*a - *b) < 0.5f) *b = *a + (*b >= *a ? 0.5f : -0.5f);
            }
    }
}

/* The scalar the finite differences differentiate: sum(y * r), or the summed loss. */
static double objective(layer_rig *r, const layer_case *t, const float *x, const float *rr,
                        const int32_t *labels, float *y) {
    double s = 0;
    if (t->k == LOSS) {
        float loss[16];
        rig_forward(r, x, NULL, labels, loss, NULL);
        for (int b = 0; b < t->n; b++) s += loss[b];
        return s;
    }
    rig_forward(r, x, y, NULL, NULL, NULL);
    for (size_t i = 0; i < r->out_count; i++) s += (double)y[i] * rr[i];
    return s;
}

/* Checks `count` sampled entries of grad against central differences of the
 * objective in the entries of `v` (the input, or a parameter array that
 * `set` uploads). */
static double finite_differences(layer_rig *r, const layer_case *t, float *x, const float *rr,
                                 const int32_t *labels, float *y, float *v, size_t len,
                                 const float *grad, float *w, float *b, const char *what) {
    /* exactly linear in every entry: a large step is exact and beats rounding */
    double eps = (t->k == CONV || t->k == LINEAR || t->k == AVGPOOL || t->k == GLOBAL_AVGPOOL ||
                  t->k == CONV_ND || t->k == CONV_TRANSPOSE || t->k == AVGPOOL_ND)
                     ? 0.25
                     : 1e-2;
    double worst = 0;
    size_t samples = len < 12 ? len : 12;
    for (size_t s = 0; s < samples; s++) {
        size_t i = (s * 7919 + 13) % len;
        float keep = v[i];
        double f[2];
        for (int side = 0; side < 2; side++) {
            v[i] = keep + (float)(side ? -eps : eps);
            if (v != x) rig_set_params(r, w, b);
            f[side] = objective(r, t, x, rr, labels, y);
        }
        v[i] = keep;
        if (v != x) rig_set_params(r, w, b);
        double fd = (f[0] - f[1]) / (2 * eps);
        double err = fabs(fd - grad[i]) / fmax(fabs(fd), 1e-2);
        worst = fmax(worst, err);
        ck_assert_msg(err < 2e-2, "%s[%zu]: finite difference %.6g, backward %.6g", what, i, fd,
                      grad[i]);
    }
    return worst;
}

START_TEST(layers_match_reference_and_finite_differences_on_every_device) {
    clnet_runtime *rt = test_runtime();
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
            const layer_case *t = &CASES[ci];
            if (test_device_is_slow(d) && !t->slow_ok) continue;
            char line[256], input[96];
            line_for(t, line, sizeof line);
            input_for(t, input, sizeof input);
            layer_rig r;
            rig_create_input(&r, d, input, line, t->n);
            size_t nx = r.in_count, ny = r.out_count, nw = r.nw, nb = r.nb;
            ck_assert_msg(!t->no_bias || nb == 0, "%s: a bias of %zu", line, nb);
            float *x = malloc(nx * 4), *y = malloc(ny * 4), *yr = malloc(ny * 4);
            float *dy = malloc(ny * 4), *dx = malloc(nx * 4), *dxr = malloc(nx * 4);
            float *w = malloc((nw + 1) * 4), *b = malloc((nb + 1) * 4);
            float *dw = malloc((nw + 1) * 4), *dwr = malloc((nw + 1) * 4);
            float *db = malloc((nb + 1) * 4), *dbr = malloc((nb + 1) * 4);
            int32_t labels[16] = {0};
            make_input(t, x, nx, 100 + ci);
            test_random_floats(w, nw, 200 + ci);
            test_random_floats(b, nb, 300 + ci);
            test_random_floats(dy, ny, 400 + ci);
            for (int i = 0; i < t->n && t->k == LOSS; i++)
                labels[i] = (int32_t)((i * 3 + 1) % t->c);
            rig_set_params(&r, nw ? w : NULL, nb ? b : NULL);

            double loss_ref = 0;
            float loss[16];
            ref_forward(t, yr, x, w, b, labels, &loss_ref);
            rig_forward(&r, x, y, t->k == LOSS ? labels : NULL, loss, NULL);
            double fwd = rel_diff(y, yr, ny);
            ck_assert_msg(fwd < 1e-5, "%s on %s: forward differs by %g", line, d->info.name, fwd);
            if (t->k == LOSS) {
                double sum = 0;
                for (int i = 0; i < t->n; i++) sum += loss[i];
                ck_assert_msg(fabs(sum - loss_ref) < 1e-5 * fmax(1, fabs(loss_ref)),
                              "%s: loss %.8g vs %.8g", line, sum, loss_ref);
            }

            ref_backward(t, dxr, dwr, dbr, dy, x, yr, w, labels);
            rig_backward(&r, dy, dx, nw ? dw : NULL, nb ? db : NULL);
            double bwd = rel_diff(dx, dxr, nx);
            if (nw) bwd = fmax(bwd, fmax(rel_diff(dw, dwr, nw), rel_diff(db, dbr, nb)));
            ck_assert_msg(bwd < 1e-5, "%s on %s: backward differs by %g", line, d->info.name, bwd);

            /* A tensor read by several layers gets the sum of their gradients: with
             * dx_beta 1 the layer adds its dx to what is there. (The loss writes its dx
             * in forward and is its input's only reader: it always overwrites.) */
            if (t->k != LOSS) {
                float *acc = malloc(nx * 4);
                test_random_floats(acc, nx, 500 + ci);
                r.dx_beta = 1.0f;
                rig_backward(&r, dy, acc, NULL, NULL);
                r.dx_beta = 0.0f;
                float *start = malloc(nx * 4), *want = malloc(nx * 4);
                test_random_floats(start, nx, 500 + ci);
                for (size_t i = 0; i < nx; i++) want[i] = start[i] + dxr[i];
                double add = rel_diff(acc, want, nx);
                ck_assert_msg(add < 1e-5, "%s on %s: dx added differs by %g", line, d->info.name,
                              add);
                free(acc), free(start), free(want);
            }

            double fd = finite_differences(&r, t, x, dy, labels, y, x, nx, dx, w, b, "dx");
            if (nw) {
                fd = fmax(fd, finite_differences(&r, t, x, dy, labels, y, w, nw, dw, w, b, "dw"));
                fd = fmax(fd, finite_differences(&r, t, x, dy, labels, y, b, nb, db, w, b, "db"));
            }
            printf("%-45s n=%d %s on %-24.24s forward %.1e backward %.1e fd %.1e\n", line, t->n,
                   input + 6, d->info.name, fwd, bwd, fd);
            rig_free(&r);
            free(x), free(y), free(yr), free(dy), free(dx), free(dxr);
            free(w), free(b), free(dw), free(dwr), free(db), free(dbr);
        }
    }
}
END_TEST

/* ---- batch norm: running statistics, evaluation, a batch too small ---------------- */

/* Where the running statistics lie in the rig's buffers. */
static void running_offsets(const layer_rig *r, size_t *mean, size_t *var) {
    ck_assert_int_eq(r->l->nbuffers, 3);
    ck_assert_str_eq(r->l->buffers[0].suffix, "running_mean");
    ck_assert_str_eq(r->l->buffers[1].suffix, "running_var");
    ck_assert_str_eq(r->l->buffers[2].suffix, "num_batches_tracked");
    *mean = r->l->buffers[0].offset;
    *var = r->l->buffers[1].offset;
}

/* A training forward moves the running mean and the running variance by momentum towards
 * the batch's mean and UNBIASED variance, and a second one moves them again from there;
 * an evaluation forward normalizes with them and leaves them alone. eps= and momentum=
 * reach the kernels. Against the reference, on every device, with running statistics
 * that start away from (0, 1). */
START_TEST(batchnorm_running_statistics_and_evaluation_on_every_device) {
    const struct {
        int n, c, h, w;
        const char *options;
        float eps, momentum;
    } cases[] = {
        {2, 3, 7, 9, "", 1e-5f, 0.1f},
        {4, 5, 1, 1, "", 1e-5f, 0.1f}, /* vectors */
        {1, 3, 6, 5, " eps=1e-3 momentum=0.25", 1e-3f, 0.25f},
        {2, 4, 1, 1, " momentum=1", 1e-5f, 1.0f},        /* running = the last batch's */
        {3, 2, 5, 3, " momentum=0 eps=0.5", 0.5f, 0.0f}, /* running statistics stay */
    };
    clnet_runtime *rt = test_runtime();
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            int N = cases[ci].n, C = cases[ci].c, S = cases[ci].h * cases[ci].w;
            float eps = cases[ci].eps, momentum = cases[ci].momentum;
            char line[96];
            snprintf(line, sizeof line, "batchnorm%s", cases[ci].options);
            layer_rig r;
            rig_create(&r, d, (rig_shape){C, cases[ci].h, cases[ci].w}, line, N);
            size_t nx = r.in_count, moff, voff;
            running_offsets(&r, &moff, &voff);
            float *x = malloc(nx * 4), *y = malloc(nx * 4), *yr = malloc(nx * 4);
            float *buf = malloc((r.nbuffers + 1) * 4), *after = malloc((r.nbuffers + 1) * 4);
            float w[16], b[16], rm[16], rv[16], mean[16], var[16];
            ck_assert(x && y && yr && buf && after && C <= 16);
            /* A fresh layer starts at running mean 0 and running variance 1. */
            rig_get_buffers(&r, buf);
            for (int c = 0; c < C; c++)
                ck_assert_msg(buf[moff + c] == 0 && buf[voff + c] == 1, "%s: starts at %g, %g",
                              line, buf[moff + c], buf[voff + c]);
            test_random_floats(w, (size_t)C, 10 + ci);
            test_random_floats(b, (size_t)C, 20 + ci);
            test_random_floats(rm, (size_t)C, 30 + ci);
            test_random_floats(rv, (size_t)C, 40 + ci);
            for (int c = 0; c < C; c++) rv[c] = 1.0f + 0.5f * rv[c]; /* in [0.5, 1.5) */
            for (int c = 0; c < C; c++) buf[moff + c] = rm[c], buf[voff + c] = rv[c];
            rig_set_params(&r, w, b);
            rig_set_buffers(&r, buf);

            double worst = 0;
            for (int step = 0; step < 2; step++) {
                test_random_floats(x, nx, 50 + 10 * ci + (uint64_t)step);
                channel_spread(x, N, C, S);
                ref_batchnorm_forward_train(yr, mean, var, rm, rv, x, w, b, N, C, S, eps, momentum);
                rig_forward(&r, x, y, NULL, NULL, NULL);
                double fwd = rel_diff(y, yr, nx);
                ck_assert_msg(fwd < 1e-5, "%s on %s, step %d: y differs by %g", line, d->info.name,
                              step, fwd);
                rig_get_buffers(&r, buf);
                double run =
                    fmax(rel_diff(buf + moff, rm, (size_t)C), rel_diff(buf + voff, rv, (size_t)C));
                ck_assert_msg(run < 1e-6,
                              "%s on %s, step %d: running statistics differ by %g (channel 0: "
                              "mean %.8g want %.8g, var %.8g want %.8g; batch var %.8g)",
                              line, d->info.name, step, run, buf[moff], rm[0], buf[voff], rv[0],
                              var[0]);
                worst = fmax(worst, fmax(fwd, run));
            }

            /* Evaluation: the running statistics normalize, and stay as they are. */
            test_random_floats(x, nx, 90 + ci);
            channel_spread(x, N, C, S);
            ref_batchnorm_forward_eval(yr, x, w, b, buf + moff, buf + voff, N, C, S, eps);
            r.eval = 1;
            rig_forward(&r, x, y, NULL, NULL, NULL);
            r.eval = 0;
            double ev = rel_diff(y, yr, nx);
            ck_assert_msg(ev < 1e-5, "%s on %s: evaluation differs by %g", line, d->info.name, ev);
            rig_get_buffers(&r, after);
            ck_assert_msg(memcmp(buf, after, r.nbuffers * 4) == 0,
                          "%s on %s: evaluation moved the running statistics", line, d->info.name);
            printf("%-40s n=%d in %dx%dx%d on %-24.24s training %.1e evaluation %.1e\n", line, N, C,
                   cases[ci].h, cases[ci].w, d->info.name, worst, ev);
            rig_free(&r);
            free(x), free(y), free(yr), free(buf), free(after);
        }
    }
}
END_TEST

/* One value per channel (batch 1 of vectors) has no variance to normalize by: a training
 * pass refuses it with a message, leaving the running statistics as they were (no NaN
 * moved into them), while evaluation of that sample works. */
START_TEST(batchnorm_refuses_one_value_per_channel_in_training) {
    clnet_runtime *rt = test_runtime();
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        layer_rig r;
        rig_create(&r, d, (rig_shape){3, 1, 1}, "batchnorm", 1);
        size_t moff, voff;
        running_offsets(&r, &moff, &voff);
        const float x[3] = {0.5f, -2, 7}, w[3] = {1, 2, -1}, b[3] = {0, 0.5f, 1};
        float buf[16], after[16], y[3] = {0, 0, 0}, yr[3];
        ck_assert(r.nbuffers <= 16);
        rig_get_buffers(&r, buf);
        for (int c = 0; c < 3; c++) buf[moff + c] = 0.25f * (float)c, buf[voff + c] = 2.0f;
        rig_set_buffers(&r, buf);
        rig_set_params(&r, w, b);
        clnet_status s = rig_try_forward(&r, x, y);
        ck_assert_msg(s == CLNET_ERR_INVALID_ARGUMENT, "on %s: status %d (%s)", d->info.name, s,
                      clnet_last_error());
        char message[512];
        snprintf(message, sizeof message, "%s", clnet_last_error());
        ck_assert_msg(strstr(message, "more than one value per channel"), "%s", message);
        rig_get_buffers(&r, after);
        ck_assert_msg(memcmp(buf, after, r.nbuffers * 4) == 0,
                      "on %s: the refused pass changed the running statistics", d->info.name);
        r.eval = 1;
        rig_forward(&r, x, y, NULL, NULL, NULL);
        ref_batchnorm_forward_eval(yr, x, w, b, buf + moff, buf + voff, 1, 3, 1, 1e-5f);
        for (int c = 0; c < 3; c++) ck_assert(isfinite(y[c]));
        ck_assert_msg(rel_diff(y, yr, 3) < 1e-6, "on %s: evaluation of one sample differs",
                      d->info.name);
        printf("batchnorm n=1 in 3x1x1 on %-24.24s training refused: %s\n", d->info.name, message);
        rig_free(&r);
    }
}
END_TEST

START_TEST(softmax_xent_is_stable_for_huge_logits) {
    clnet_runtime *rt = test_runtime();
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        layer_rig r;
        rig_create(&r, d, (rig_shape){4, 1, 1}, "softmax_cross_entropy", 2);
        float x[8] = {1000, 999, 998, -1000, 80, 90, 100, 95};
        int32_t labels[2] = {1, 2};
        float probs[8], loss[2], dx[8];
        int correct[2];
        rig_forward(&r, x, probs, labels, loss, correct);
        rig_backward(&r, NULL, dx, NULL, NULL);
        double want = ref_softmax_xent_forward(NULL, NULL, x, labels, 2, 4);
        ck_assert(isfinite(loss[0]) && isfinite(loss[1]));
        ck_assert_msg(fabs(loss[0] + loss[1] - want) < 1e-4, "%g + %g vs %g", loss[0], loss[1],
                      want);
        ck_assert_int_eq(correct[0], 0);
        ck_assert_int_eq(correct[1], 1);
        for (int i = 0; i < 8; i++) ck_assert(isfinite(dx[i]) && isfinite(probs[i]));
        rig_free(&r);
    }
}
END_TEST

START_TEST(layer_shapes_are_checked) {
    const char *bad[][2] = {
        {"conv2d filters=4 size=7", "does not fit"},
        {"conv2d size=3", "needs filters"},
        {"maxpool size=2 pad=2", "padding 2x2 must be smaller than the window 2x2"},
        {"avgpool size=9", "does not fit"},
        {"avgpool size=2 ceil=maybe", "ceil=maybe: expected on or off"},
        {"maxpool size=2 count_pad=off", "unknown option 'count_pad'"},
        {"avgpool size=2 dilation=2", "unknown option 'dilation'"},
        {"maxpool size=3 dilation=3", "a 3x3 window (spanning 7x7) with padding 0x0 does not fit"},
        {"maxpool size=2x2x2", "size=2x2x2 gives 3 values, the input has 2 spatial axes"},
        {"conv1d filters=2 size=3", "takes (C, L) inputs"},
        {"conv3d filters=2 size=3", "takes (C, D, H, W) inputs"},
        {"conv2d filters=2 size=3 pad=causal", "pad=causal is for conv1d, not conv2d"},
        {"conv2d filters=2 size=3x3x3", "size=3x3x3: expected N or HxW"},
        {"conv_transpose2d filters=2 size=3 pad=same", "takes pad=N only"},
        {"conv_transpose2d filters=2 size=3 stride=2 output_pad=2",
         "output_pad=2x2 must be smaller than the stride 2x2 or the dilation 1x1"},
        {"conv_transpose2d filters=2 size=3 output_pad=1",
         "output_pad=1x1 must be smaller than the stride 1x1 or the dilation 1x1"},
        {"conv_transpose2d filters=2 size=1 pad=3", "the output would be -1x-1: padding 3x3"},
        {"conv_transpose2d filters=2 size=3 groups=2",
         "groups=2 must divide the 1 input channels and the 2 filters"},
        {"conv2d filters=2 size=3 output_pad=1", "unknown option 'output_pad'"},
        {"linear", "needs units"},
        {"conv2d filters=2 size=3 bias=no", "bias=no: expected on or off"},
        {"linear units=3 bias_init=uniform", "expected normal, xavier, kaiming, zeros or"},
        {"linear units=3 bias=off bias_init=zeros", "bias=off has no bias"},
        {"global_avgpool size=2", "unknown option 'size'"},
        {"conv2d filters=2 size=0", "expected"},
        {"conv2d filters=2 size=3 stride=0", "expected"},
        {"conv2d filters=2 size=3 color=red", "unknown option 'color'"},
        {"conv2d filters=2 size=3 groups=2",
         "groups=2 must divide the 1 input channels and the 2 filters"},
        {"conv2d filters=2 size=3 dilation=3", "(dilation 3x3: it spans 7x7) with padding 0x0"},
        {"conv2d filters=2 size=3 dilation=0", "dilation=0: expected"},
        {"conv2d filters=2 size=3 groups=0", "groups=0: expected"},
        {"conv2d filters=2 size=3 pad=same stride=2", "pad=same needs stride 1, not 2x2"},
        {"lstm units=4", "unknown layer kind 'lstm'"},
        {"batchnorm eps=0", "eps=0: expected a number > 0"},
        {"batchnorm momentum=1.5", "momentum=1.5: expected 0 to 1"},
        {"batchnorm momentum=-0.1", "expected"},
        {"batchnorm sync=maybe", "sync=maybe: expected on or off"},
        {"batchnorm size=3", "unknown option 'size'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clnet_net *net = NULL;
        ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
        ck_assert_int_eq(clnet_net_add(net, "input channels=1 height=5 width=5"), CLNET_OK);
        clnet_status s = clnet_net_add(net, bad[i][0]);
        ck_assert_msg(s != CLNET_OK, "'%s' was accepted", bad[i][0]);
        ck_assert_msg(strstr(clnet_last_error(), bad[i][1]), "'%s': %s", bad[i][0],
                      clnet_last_error());
        clnet_net_free(net);
    }
}
END_TEST

/* bias=off (PyTorch's bias=False) declares no bias tensor: the parameter count
 * drops by the filters (units), and no "<name>.bias" is saved; bias=on is the
 * default. */
START_TEST(bias_off_drops_the_bias_parameter) {
    const struct {
        const char *on, *off;
        size_t bias;
    } cases[] = {
        {"conv2d name=c filters=16 size=3", "conv2d name=c filters=16 size=3 bias=off", 16},
        {"conv2d name=c filters=16 size=3 bias=on", "conv2d name=c filters=16 size=3 bias=off", 16},
        {"linear name=c units=10", "linear name=c units=10 bias=off", 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t count[2];
        for (int off = 0; off < 2; off++) {
            clnet_net *net = NULL;
            ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
            ck_assert_int_eq(clnet_net_add(net, "input channels=3 height=8 width=8"), CLNET_OK);
            const char *line = off ? cases[i].off : cases[i].on;
            ck_assert_msg(clnet_net_add(net, line) == CLNET_OK, "%s", clnet_last_error());
            count[off] = clnet_net_param_count(net);
            const clnet_node *node = &net->model.nodes[0];
            ck_assert_int_eq(node->nparams, off ? 1 : 2);
            ck_assert_str_eq(node->params[0].suffix, "weight");
            if (!off) ck_assert_str_eq(node->params[1].suffix, "bias");
            clnet_net_free(net);
        }
        ck_assert_msg(count[0] - count[1] == cases[i].bias, "%s: %zu parameters, bias=off %zu",
                      cases[i].on, count[0], count[1]);
    }
}
END_TEST

/* init=uniform_fan_in and bias_init=uniform_fan_in, PyTorch's defaults for
 * conv and linear: U(-a, a) with a = 1/sqrt(fan_in), fan_in = C*KH*KW for a
 * convolution and I for a linear layer. Every value lies within the bound,
 * and the spread is a uniform's: the sample standard deviation within 20% of
 * a/sqrt(3) (several standard errors for 128 values or more). */
START_TEST(uniform_fan_in_init_follows_pytorch) {
    static const char *const lines[] = {
        "input channels=3 height=8 width=8",
        "conv2d name=conv filters=128 size=3 init=uniform_fan_in bias_init=uniform_fan_in",
        "linear name=fc units=200 init=uniform_fan_in bias_init=uniform_fan_in",
        "softmax_cross_entropy",
    };
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(clnet_net_add(net, lines[i]) == CLNET_OK, "'%s': %s", lines[i],
                      clnet_last_error());
    ck_assert_msg(clnet_net_init(net, 7) == CLNET_OK, "%s", clnet_last_error());
    const float *params = clnet_net_params(net);
    const double fan_in[2] = {3 * 3 * 3, 128 * 6 * 6};
    for (int l = 0; l < 2; l++) {
        const clnet_node *node = &net->model.nodes[l];
        ck_assert_int_eq(node->nparams, 2);
        double a = 1.0 / sqrt(fan_in[l]);
        for (int k = 0; k < 2; k++) {
            const clnet_tensor *t = &node->params[k];
            const float *v = params + t->offset;
            double sum = 0, sq = 0, largest = 0;
            for (size_t i = 0; i < t->count; i++) {
                sum += v[i];
                largest = fmax(largest, fabs((double)v[i]));
            }
            double mean = sum / (double)t->count;
            for (size_t i = 0; i < t->count; i++) sq += (v[i] - mean) * (v[i] - mean);
            double sd = sqrt(sq / (double)(t->count - 1)), want = a / sqrt(3.0);
            printf("%s.%s: %zu values, bound %.4g, largest %.4g, sd %.4g (uniform: %.4g)\n",
                   node->name, t->suffix, t->count, a, largest, sd, want);
            ck_assert_msg(largest <= a, "%s.%s: %g outside +-%g", node->name, t->suffix, largest,
                          a);
            ck_assert_msg(fabs(sd - want) <= 0.2 * want, "%s.%s: sd %g, want %g", node->name,
                          t->suffix, sd, want);
        }
    }
    clnet_net_free(net);
}
END_TEST

/* Global average pooling keeps the input's spatial rank, every size 1 (PyTorch's
 * AdaptiveAvgPool1d/2d/3d(1)), and refuses a vector, which has no plane. */
START_TEST(global_pools_keep_the_spatial_rank) {
    const struct {
        const char *input;
        int rank, c;
    } cases[] = {
        {"input channels=3 length=9", 2, 3},
        {"input channels=2 height=7 width=9", 3, 2},
        {"input channels=4 depth=3 height=5 width=2", 4, 4},
    };
    const char *kinds[] = {"global_avgpool", "global_maxpool"};
    for (size_t i = 0; i < 2 * sizeof cases / sizeof cases[0]; i++) {
        const char *kind = kinds[i % 2];
        clnet_net *net = NULL;
        ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
        ck_assert_int_eq(clnet_net_add(net, cases[i / 2].input), CLNET_OK);
        ck_assert_msg(clnet_net_add(net, kind) == CLNET_OK, "%s", clnet_last_error());
        clnet_layer_info info;
        ck_assert_int_eq(clnet_net_layer_info(net, 0, &info), CLNET_OK);
        ck_assert_str_eq(info.kind, kind);
        ck_assert_int_eq(info.out_rank, cases[i / 2].rank);
        ck_assert_int_eq(info.out_shape[0], cases[i / 2].c);
        for (int d = 1; d < info.out_rank; d++) ck_assert_int_eq(info.out_shape[d], 1);
        ck_assert_int_eq((int)info.params, 0);
        clnet_net_free(net);
    }
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(net, "input channels=1 height=5 width=5"), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(net, "linear units=4"), CLNET_OK);
    ck_assert(clnet_net_add(net, "global_avgpool") != CLNET_OK);
    ck_assert_msg(strstr(clnet_last_error(), "spatial dimensions"), "%s", clnet_last_error());
    clnet_net_free(net);
}
END_TEST

int main(void) {
    Suite *s = suite_create("layers");
    TCase *t = tcase_create("layers");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, layers_match_reference_and_finite_differences_on_every_device);
    tcase_add_test(t, batchnorm_running_statistics_and_evaluation_on_every_device);
    tcase_add_test(t, batchnorm_refuses_one_value_per_channel_in_training);
    tcase_add_test(t, softmax_xent_is_stable_for_huge_logits);
    tcase_add_test(t, layer_shapes_are_checked);
    tcase_add_test(t, global_pools_keep_the_spatial_rank);
    tcase_add_test(t, bias_off_drops_the_bias_parameter);
    tcase_add_test(t, uniform_fan_in_init_follows_pytorch);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
