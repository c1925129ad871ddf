/* Every layer kind's forward and backward on every device, against the plain-C
 * references in tests/ref/ and against finite differences of the device's own
 * forward pass, on awkward shapes: batch 1, sizes that are multiples of
 * nothing, 1x1 kernels, stride larger than the kernel, padding larger than
 * half the kernel, overlapping windows. One table (TABLE) drives both checks,
 * one row per built-in kind of the registry, and a test fails when a kind has
 * none. Batch norm also: its running statistics after training passes,
 * evaluation with them, and the refusal of a training batch with one value per
 * channel. */
#include "layer_rig.h"
#include "conv_made_up.h"
#include "elementwise.h"
#include "net.h"
#include "random.h"
#include "ref/layers_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One case: a layer as a model-file line, on n samples of shape `in`. */
typedef struct {
    const char *line;
    int n;
    clnet_shape in;
    int big; /* too much work for a slow simulator */
} layer_case;
#define CASE_MOST_N 80 /* samples a case may have */

#define VECTOR(c)                                                                                  \
    {                                                                                              \
        c, 0, {                                                                                    \
            0                                                                                      \
        }                                                                                          \
    }
#define SIGNAL(c, l)                                                                               \
    {                                                                                              \
        c, 1, {                                                                                    \
            l                                                                                      \
        }                                                                                          \
    }
#define IMAGE(c, h, w)                                                                             \
    {                                                                                              \
        c, 2, {                                                                                    \
            h, w                                                                                   \
        }                                                                                          \
    }
#define VOLUME(c, d, h, w)                                                                         \
    {                                                                                              \
        c, 3, {                                                                                    \
            d, h, w                                                                                \
        }                                                                                          \
    }

/* A case's layer as the references see it: the node the library built from
 * the case's line, whose options they read by name through its kind's own
 * table (clnet_option_get: what the line gave, else the kind's default, which
 * library_defaults_are_pytorchs holds to PyTorch's), and the case's batch and
 * input shape. What an option means is the references' (window_of below);
 * nothing here parses a line. */
typedef struct {
    const clnet_node *node;
    int n, nin; /* batch; inputs, each a copy of the model's input */
    clnet_shape in;
} layer_geom;

/* The arrays of one reference call: forward writes y (and loss), backward dx,
 * dw and db. x and dx hold every input back to back, as the rig lays them. */
typedef struct {
    float *y, *dx, *dw, *db;
    const float *x, *w, *b, *dy, *yr; /* yr: the reference's forward output */
    const int32_t *labels;
    double loss;
} ref_args;

typedef void (*ref_fn)(const layer_geom *g, ref_args *a);

/* How a row's inputs keep finite differences honest. */
typedef enum {
    PLAIN,
    DISTINCT, /* maxima: values 0.05 apart, no ties, no winner changes within a step */
    OFF_KINK, /* relu: at least 0.1 from 0 */
    WIDE,     /* the activations of x: spread over [-4, 4), at least 0.1 from 0, -3 and 3 */
    APART,    /* l1: prediction and target (the two halves) at least 0.1 apart everywhere */
    TARGETS,  /* bce: logits over [-4, 4), targets (the second half) in [0, 1] */
    LOGITS,   /* the loss: logits spread over [-3, 3) */
    CHANNELS, /* batch norm: each channel a mean and a spread of its own */
} input_kind;

typedef struct {
    const char *kind; /* the registry's name */
    ref_fn forward, backward;
    input_kind input;
    /* affine in every input and parameter: a central difference is exact for
     * any step, so the step is large and beats float rounding */
    int affine;
    const layer_case *cases;
    size_t ncases;
} layer_row;

#define CASES(...)                                                                                 \
    (const layer_case[]){__VA_ARGS__},                                                             \
        sizeof((const layer_case[]){__VA_ARGS__}) / sizeof(layer_case)

/* ---- a case's options, read through its kind's table -------------------------------- */

static const char *geom_kind(const layer_geom *g) {
    return g->node->kind->name;
}

/* Whether the case's kind takes option `key`. */
static int geom_has(const layer_geom *g, const char *key) {
    return clnet_option_find(g->node->kind->options, key) != NULL;
}

/* Option `key` of the case's layer (the test fails where its kind has none). */
static clnet_option_value geom_value(const layer_geom *g, const char *key) {
    clnet_option_value v;
    ck_assert_msg(clnet_option_get(g->node, key, &v) == CLNET_OK, "%s", clnet_last_error());
    return v;
}

static int geom_int(const layer_geom *g, const char *key) {
    return geom_value(g, key).ints[0];
}

static float geom_float(const layer_geom *g, const char *key) {
    return geom_value(g, key).number;
}

/* Whether option `key` reads as `word` (a choice's name: "on", "tanh";
 * pad=same); 0 where the kind has no such option. */
static int geom_is(const layer_geom *g, const char *key, const char *word) {
    const char *w = geom_has(g, key) ? geom_value(g, key).word : NULL;
    return w && !strcmp(w, word);
}

/* A value per spatial axis into v, one given meaning every axis; returns how
 * many the layer holds: 0 where it holds none (a pool without stride=, pad=same)
 * or its kind has no such option, v then left as it was. */
static int geom_axes(const layer_geom *g, const char *key, int *v) {
    clnet_option_value o = {.count = 0};
    if (geom_has(g, key)) o = geom_value(g, key);
    for (int a = 0; a < g->in.ndim && o.count; a++) v[a] = o.ints[o.count == 1 ? 0 : a];
    return o.count;
}

/* A window op's geometry (convolutions and pools), with PyTorch's meaning of
 * its options: a pool's stride defaults to its window; pad=same pads d*(k-1)
 * in all, the odd zero after, pad=causal all of it before. Options a kind has
 * not keep PyTorch's defaults: stride 1, padding 0, dilation 1, one group,
 * count_include_pad on, ceil_mode off. */
static ref_window window_of(const layer_geom *g) {
    ref_window w = {.rank = g->in.ndim, .N = g->n, .C = g->in.c, .groups = 1, .count_pad = 1};
    for (int a = 0; a < w.rank; a++) w.in[a] = g->in.dim[a], w.s[a] = w.d[a] = 1;
    geom_axes(g, "size", w.k);
    if (!geom_axes(g, "stride", w.s)) memcpy(w.s, w.k, sizeof w.s);
    geom_axes(g, "pad", w.p);
    geom_axes(g, "dilation", w.d);
    geom_axes(g, "output_pad", w.out_pad);
    if (geom_has(g, "filters")) w.F = geom_int(g, "filters");
    if (geom_has(g, "groups")) w.groups = geom_int(g, "groups");
    if (geom_has(g, "count_pad")) w.count_pad = geom_is(g, "count_pad", "on");
    w.ceil = geom_is(g, "ceil", "on");
    for (int a = 0; a < w.rank; a++) {
        int span = w.d[a] * (w.k[a] - 1);
        if (geom_is(g, "pad", "same")) w.p[a] = span / 2, w.extra[a] = span % 2;
        if (geom_is(g, "pad", "causal")) w.p[a] = span, w.extra[a] = -span;
    }
    return w;
}

/* A bias where the kind has one and bias=off is not given. */
static int geom_bias(const layer_geom *g) {
    return !geom_has(g, "bias") || geom_is(g, "bias", "on");
}

/* softmax_cross_entropy per=position: a class per position */
static int geom_positions(const layer_geom *g) {
    return geom_is(g, "per", "position");
}

/* ---- the references, as the table calls them ------------------------------------------ */

static size_t sample_size(const layer_geom *g) {
    return clnet_shape_size(g->in);
}

static int spatial(const layer_geom *g) {
    return (int)clnet_shape_spatial(g->in);
}

/* The 2-D references take no asymmetric padding (pad=same with an even kernel). */
static int plain_2d(const ref_window *w) {
    return w->rank == 2 && !w->extra[0] && !w->extra[1];
}

static void conv_forward(const layer_geom *g, ref_args *a) {
    ref_window win = window_of(g), *w = &win;
    if (plain_2d(w))
        ref_conv2d_full_forward(a->y, a->x, a->w, a->b, w->N, w->C, w->in[0], w->in[1], w->F,
                                w->k[0], w->k[1], w->s[0], w->s[1], w->p[0], w->p[1], w->d[0],
                                w->d[1], w->groups);
    else
        ref_convnd_forward(a->y, a->x, a->w, a->b, w);
}

static void conv_backward(const layer_geom *g, ref_args *a) {
    ref_window win = window_of(g), *w = &win;
    if (plain_2d(w))
        ref_conv2d_full_backward(a->dx, a->dw, a->db, a->dy, a->x, a->w, w->N, w->C, w->in[0],
                                 w->in[1], w->F, w->k[0], w->k[1], w->s[0], w->s[1], w->p[0],
                                 w->p[1], w->d[0], w->d[1], w->groups);
    else
        ref_convnd_backward(a->dx, a->dw, a->db, a->dy, a->x, a->w, w);
}

static void conv_transpose_forward(const layer_geom *g, ref_args *a) {
    ref_window w = window_of(g);
    ref_conv_transpose_forward(a->y, a->x, a->w, a->b, &w);
}

static void conv_transpose_backward(const layer_geom *g, ref_args *a) {
    ref_window w = window_of(g);
    ref_conv_transpose_backward(a->dx, a->dw, a->db, a->dy, a->x, a->w, &w);
}

/* The 2-D pool references have no dilation and no ceil mode, and count padded zeros. */
static int pool_2d(const ref_window *w) {
    return w->rank == 2 && w->d[0] == 1 && w->d[1] == 1 && !w->ceil && w->count_pad;
}

static void maxpool_forward(const layer_geom *g, ref_args *a) {
    ref_window win = window_of(g), *w = &win;
    if (pool_2d(w))
        ref_maxpool_forward(a->y, a->x, w->N, w->C, w->in[0], w->in[1], w->k[0], w->k[1], w->s[0],
                            w->s[1], w->p[0], w->p[1]);
    else
        ref_maxpoolnd_forward(a->y, a->x, w);
}

static void maxpool_backward(const layer_geom *g, ref_args *a) {
    ref_window win = window_of(g), *w = &win;
    if (pool_2d(w))
        ref_maxpool_backward(a->dx, a->dy, a->x, w->N, w->C, w->in[0], w->in[1], w->k[0], w->k[1],
                             w->s[0], w->s[1], w->p[0], w->p[1]);
    else
        ref_maxpoolnd_backward(a->dx, a->dy, a->x, w);
}

static void avgpool_forward(const layer_geom *g, ref_args *a) {
    ref_window win = window_of(g), *w = &win;
    if (pool_2d(w))
        ref_avgpool_forward(a->y, a->x, w->N, w->C, w->in[0], w->in[1], w->k[0], w->k[1], w->s[0],
                            w->s[1], w->p[0], w->p[1]);
    else
        ref_avgpoolnd_forward(a->y, a->x, w);
}

static void avgpool_backward(const layer_geom *g, ref_args *a) {
    ref_window win = window_of(g), *w = &win;
    if (pool_2d(w))
        ref_avgpool_backward(a->dx, a->dy, w->N, w->C, w->in[0], w->in[1], w->k[0], w->k[1],
                             w->s[0], w->s[1], w->p[0], w->p[1]);
    else
        ref_avgpoolnd_backward(a->dx, a->dy, w);
}

static void global_avgpool_forward(const layer_geom *g, ref_args *a) {
    ref_global_avgpool_forward(a->y, a->x, g->n, g->in.c, spatial(g));
}

static void global_avgpool_backward(const layer_geom *g, ref_args *a) {
    ref_global_avgpool_backward(a->dx, a->dy, g->n, g->in.c, spatial(g));
}

static void global_maxpool_forward(const layer_geom *g, ref_args *a) {
    ref_global_maxpool_forward(a->y, a->x, g->n, g->in.c, spatial(g));
}

static void global_maxpool_backward(const layer_geom *g, ref_args *a) {
    ref_global_maxpool_backward(a->dx, a->dy, a->x, g->n, g->in.c, spatial(g));
}

/* relu, sigmoid and tanh: their backward reads the forward's output */
#define ACTIVATION(name)                                                                           \
    static void name##_forward(const layer_geom *g, ref_args *a) {                                 \
        ref_##name##_forward(a->y, a->x, g->n *sample_size(g));                                    \
    }                                                                                              \
    static void name##_backward(const layer_geom *g, ref_args *a) {                                \
        ref_##name##_backward(a->dx, a->dy, a->yr, g->n *sample_size(g));                          \
    }
ACTIVATION(relu)
ACTIVATION(sigmoid)
ACTIVATION(tanh)

/* the others: their backward reads the forward's input; *a is the option
 * that is their parameter (leaky_relu's slope, elu's alpha), else 1 */
static ref_act act_of(const layer_geom *g, float *a) {
    static const struct {
        const char *kind, *a;
        ref_act act;
    } acts[] = {{"leaky_relu", "slope", REF_ACT_LEAKY_RELU},
                {"elu", "alpha", REF_ACT_ELU},
                {"gelu", NULL, REF_ACT_GELU},
                {"silu", NULL, REF_ACT_SILU},
                {"hardswish", NULL, REF_ACT_HARDSWISH}};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (!strcmp(geom_kind(g), acts[i].kind)) {
            *a = acts[i].a ? geom_float(g, acts[i].a) : 1.0f;
            return acts[i].act == REF_ACT_GELU && geom_is(g, "approximate", "tanh")
                       ? REF_ACT_GELU_TANH
                       : acts[i].act;
        }
    ck_abort_msg("no reference for %s", geom_kind(g));
    return REF_ACT_SILU;
}

static void act_x_forward(const layer_geom *g, ref_args *a) {
    float param;
    ref_act act = act_of(g, &param);
    ref_act_forward(act, param, a->y, a->x, g->n * sample_size(g));
}

static void act_x_backward(const layer_geom *g, ref_args *a) {
    float param;
    ref_act act = act_of(g, &param);
    ref_act_backward(act, param, a->dx, a->dy, a->x, g->n * sample_size(g));
}

static void linear_forward(const layer_geom *g, ref_args *a) {
    ref_linear_forward(a->y, a->x, a->w, a->b, g->n, (int)sample_size(g), geom_int(g, "units"));
}

static void linear_backward(const layer_geom *g, ref_args *a) {
    ref_linear_backward(a->dx, a->dw, a->db, a->dy, a->x, a->w, g->n, (int)sample_size(g),
                        geom_int(g, "units"));
}

/* training statistics of the rig's own batch (momentum moves only the running
 * statistics, which the batch-norm tests below check) */
static void batchnorm_forward(const layer_geom *g, ref_args *a) {
    ref_batchnorm_forward_train(a->y, NULL, NULL, NULL, NULL, a->x, a->w, a->b, g->n, g->in.c,
                                spatial(g), geom_float(g, "eps"), 0.1f);
}

static void batchnorm_backward(const layer_geom *g, ref_args *a) {
    ref_batchnorm_backward(a->dx, a->dw, a->db, a->dy, a->x, a->w, g->n, g->in.c, spatial(g),
                           geom_float(g, "eps"));
}

/* per sample: every value a class; per=position: the channels, at each position;
 * with label_smoothing the smoothed target's reference (per sample: one position) */
static void softmax_xent_forward(const layer_geom *g, ref_args *a) {
    double eps = geom_float(g, "label_smoothing");
    int P = geom_positions(g) ? spatial(g) : 1, K = (int)sample_size(g) / P;
    if (eps != 0)
        a->loss = ref_softmax_xent_smoothed_forward(a->y, NULL, a->x, a->labels, g->n, K, P, eps);
    else
        a->loss = geom_positions(g)
                      ? ref_softmax_xent_positions_forward(a->y, NULL, a->x, a->labels, g->n, K, P)
                      : ref_softmax_xent_forward(a->y, NULL, a->x, a->labels, g->n, K);
}

static void softmax_xent_backward(const layer_geom *g, ref_args *a) {
    double eps = geom_float(g, "label_smoothing");
    int P = geom_positions(g) ? spatial(g) : 1, K = (int)sample_size(g) / P;
    if (eps != 0)
        ref_softmax_xent_smoothed_backward(a->dx, a->x, a->labels, g->n, K, P, eps);
    else if (geom_positions(g))
        ref_softmax_xent_positions_backward(a->dx, a->x, a->labels, g->n, K, P);
    else
        ref_softmax_xent_backward(a->dx, a->x, a->labels, g->n, K);
}

/* mse, l1, bce_with_logits: x holds the prediction, then the target (a copy
 * of the model's input each, with data of its own) */
static ref_loss loss_of(const layer_geom *g) {
    return !strcmp(geom_kind(g), "mse")  ? REF_LOSS_MSE
           : !strcmp(geom_kind(g), "l1") ? REF_LOSS_L1
                                         : REF_LOSS_BCE;
}

static void regression_forward(const layer_geom *g, ref_args *a) {
    size_t E = sample_size(g);
    a->loss = ref_regression_forward(loss_of(g), a->y, a->x, a->x + g->n * E, g->n, (int)E);
}

static void regression_backward(const layer_geom *g, ref_args *a) {
    size_t E = sample_size(g);
    ref_regression_backward(loss_of(g), a->dx, a->dx + g->n * E, a->x, a->x + g->n * E, g->n,
                            (int)E);
}

/* the rig trains at step 0, its sample 0 the batch's first; the mask's key
 * mixes the layer's name with its seed */
static uint32_t dropout_key(const layer_geom *g) {
    return ref_dropout_key(g->node->name, (uint32_t)geom_int(g, "seed"));
}

static void dropout_forward(const layer_geom *g, ref_args *a) {
    ref_dropout_forward(a->y, a->x, g->n, (int)sample_size(g), geom_float(g, "p"), dropout_key(g),
                        0, 0);
}

static void dropout_backward(const layer_geom *g, ref_args *a) {
    ref_dropout_backward(a->dx, a->dy, g->n, (int)sample_size(g), geom_float(g, "p"),
                         dropout_key(g), 0, 0);
}

/* flatten and reshape: PyTorch's view, the same values in the same order */
static void view_forward(const layer_geom *g, ref_args *a) {
    memcpy(a->y, a->x, g->n * sample_size(g) * sizeof *a->y);
}

static void view_backward(const layer_geom *g, ref_args *a) {
    memcpy(a->dx, a->dy, g->n * sample_size(g) * sizeof *a->dx);
}

/* add and concat read nin copies of the input, back to back in x and dx: input
 * k's part of x (or dx), and its channels */
static void split_inputs(const layer_geom *g, float *all, float **parts, int *channels) {
    for (int k = 0; k < g->nin; k++) {
        parts[k] = all + (size_t)k * g->n * sample_size(g);
        channels[k] = g->in.c;
    }
}

static void add_forward(const layer_geom *g, ref_args *a) {
    float *xs[CLNET_MAX_INPUTS];
    int channels[CLNET_MAX_INPUTS];
    split_inputs(g, (float *)a->x, xs, channels);
    ref_add_forward(a->y, (const float *const *)xs, g->nin, g->n * sample_size(g));
}

static void add_backward(const layer_geom *g, ref_args *a) {
    float *dxs[CLNET_MAX_INPUTS];
    int channels[CLNET_MAX_INPUTS];
    split_inputs(g, a->dx, dxs, channels);
    ref_add_backward(dxs, a->dy, g->nin, g->n * sample_size(g));
}

static void concat_forward(const layer_geom *g, ref_args *a) {
    float *xs[CLNET_MAX_INPUTS];
    int channels[CLNET_MAX_INPUTS];
    split_inputs(g, (float *)a->x, xs, channels);
    ref_concat_forward(a->y, (const float *const *)xs, channels, g->nin, g->n, spatial(g));
}

static void concat_backward(const layer_geom *g, ref_args *a) {
    float *dxs[CLNET_MAX_INPUTS];
    int channels[CLNET_MAX_INPUTS];
    split_inputs(g, a->dx, dxs, channels);
    ref_concat_backward(dxs, a->dy, channels, g->nin, g->n, spatial(g));
}

/* upsample: the case's factors and mode on the input's spatial axes */
static ref_upsample upsample_of(const layer_geom *g) {
    ref_upsample u = {.rank = g->in.ndim, .N = g->n, .C = g->in.c};
    u.linear = geom_is(g, "mode", "linear");
    for (int a = 0; a < u.rank; a++) u.in[a] = g->in.dim[a];
    geom_axes(g, "scale", u.scale);
    return u;
}

static void upsample_forward(const layer_geom *g, ref_args *a) {
    ref_upsample u = upsample_of(g);
    ref_upsample_forward(a->y, a->x, &u);
}

static void upsample_backward(const layer_geom *g, ref_args *a) {
    ref_upsample u = upsample_of(g);
    ref_upsample_backward(a->dx, a->dy, &u);
}

/* ---- the table ------------------------------------------------------------------------- */

/* Adding a layer kind takes, in the tests: one row here (its name, its reference
 * functions above, which wrap its plain-C reference in tests/ref/ and read the
 * options it needs by name through the kind's own table, and its cases as
 * model-file lines), and its reference's own checks in test_ref.c. The test
 * fails, naming the kind, while a built-in kind has no row. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const layer_row TABLE[] = {
    {"conv1d", conv_forward, conv_backward, PLAIN, 1,
     CASES({"conv1d filters=6 size=3 pad=1", 3, SIGNAL(4, 17)},
           {"conv1d filters=4 size=2 stride=3", 2, SIGNAL(3, 19)}, /* s > k */
           {"conv1d filters=6 size=3 pad=2 dilation=3 groups=2 bias=off", 5, SIGNAL(4, 15)},
           /* d(k-1) = 4 zeros before, none after */
           {"conv1d filters=4 size=3 pad=causal dilation=2", 2, SIGNAL(3, 12)},
           /* an even kernel: the odd zero after */
           {"conv1d filters=3 size=4 pad=same", 3, SIGNAL(2, 9)},
           {"conv1d filters=5 size=3 pad=1 groups=5", 2, SIGNAL(5, 13)},
           /* taps in phases 0 and 2 of 4: the implicit grid keeps phases 0-2 */
           {"conv1d filters=3 size=3 stride=4 dilation=2 pad=1", 2, SIGNAL(2, 23)})},
    {"conv2d", conv_forward, conv_backward, PLAIN, 1,
     CASES({"conv2d filters=2 size=3 pad=1", 1, IMAGE(1, 5, 5)},
           {"conv2d filters=4 size=3x2", 2, IMAGE(3, 7, 9)}, /* non-square kernel, odd sizes */
           {"conv2d filters=3 size=1", 1, IMAGE(2, 13, 11)}, /* 1x1 kernel */
           {"conv2d filters=3 size=2 stride=3", 2, IMAGE(2, 9, 9)}, /* stride > kernel */
           {"conv2d filters=2 size=3 pad=2", 1, IMAGE(2, 6, 7)},    /* padding > half the kernel */
           {"conv2d filters=7 size=5 stride=2 pad=2", 3, IMAGE(5, 13, 11), 1},
           {"conv2d filters=20 size=3", 2, IMAGE(1, 28, 28), 1}, /* LeNet's first layer */
           {"conv2d filters=4 size=3x2 bias=off", 2, IMAGE(3, 7, 9)},
           /* ResNet's strided 1x1 projection */
           {"conv2d filters=8 size=1 stride=2 bias=off", 1, IMAGE(4, 13, 11)},
           /* 1.2 Mi column floats a sample: chunks of 2, 2, 2 and 1 samples (conv2d.c) */
           {"conv2d filters=4 size=3 pad=1", 7, IMAGE(64, 46, 46), 1},
           /* ResNet's 7x7 stage with a small share (its grid has a lead and a shared gap) */
           {"conv2d filters=8 size=3 pad=1", 6, IMAGE(8, 7, 7)},
           /* the lanes algorithm: 40 channels a group (its weight gradient as a GEMM over
              channels padded to 64), and more samples than one tile's 64 */
           {"conv2d filters=12 size=3 stride=2 pad=1 groups=2", 3, IMAGE(80, 9, 9), 1},
           {"conv2d filters=5 size=3 pad=1", 70, IMAGE(3, 6, 5), 1},
           /* 16 filters over 8 channels: the implicit algorithm's 8 x 48 tiles, and lanes
              (always 64-column tiles) on 60 samples, more than 48 */
           {"conv2d filters=16 size=3 pad=1", 60, IMAGE(8, 5, 5), 1},
           /* dilation and groups (PyTorch's Conv2d) */
           {"conv2d filters=3 size=3 pad=1 dilation=3", 2, IMAGE(2, 11, 9)},
           {"conv2d filters=6 size=3 stride=2 pad=1 groups=2", 2, IMAGE(4, 7, 6)},
           /* depthwise, dilated, no bias */
           {"conv2d filters=3 size=3 pad=2 dilation=2 groups=3 bias=off", 3, IMAGE(3, 9, 7)},
           {"conv2d filters=16 size=3 stride=2 pad=1 dilation=2 groups=4", 1, IMAGE(8, 12, 12)},
           /* depthwise at stride 2 on rows of 32 and 33: direct's pairs kernels at their
              limit (a row a vector of 16 a phase), and just past it */
           {"conv2d filters=6 size=3 stride=2 pad=1 groups=6", 2, IMAGE(6, 3, 32)},
           {"conv2d filters=4 size=4 stride=2 pad=2 groups=4", 2, IMAGE(4, 3, 33)})},
    {"conv3d", conv_forward, conv_backward, PLAIN, 1,
     CASES(
         {"conv3d filters=3 size=3 pad=1", 2, VOLUME(2, 5, 6, 7)},
         /* asymmetric kernel, stride, padding and dilation */
         {"conv3d filters=4 size=2x3x1 stride=2x1x2 pad=1x0x1 dilation=1x2x1", 2,
          VOLUME(3, 6, 9, 5)},
         {"conv3d filters=6 size=3x3x2 stride=2 pad=1 groups=2 bias=off", 1, VOLUME(4, 5, 6, 7)})},
    {"conv_transpose1d", conv_transpose_forward, conv_transpose_backward, PLAIN, 1,
     CASES(
         {"conv_transpose1d filters=3 size=3 stride=2 pad=1 output_pad=1", 2, SIGNAL(4, 9)},
         /* output_pad 1 < dilation 2, stride 1 */
         {"conv_transpose1d filters=4 size=3 pad=1 dilation=2 output_pad=1", 3, SIGNAL(3, 10)},
         /* its output's phases 1 and 3 of 4 no tap reaches */
         {"conv_transpose1d filters=2 size=3 stride=4 dilation=2 output_pad=1", 2, SIGNAL(3, 6)})},
    {"conv_transpose2d", conv_transpose_forward, conv_transpose_backward, PLAIN, 1,
     CASES({"conv_transpose2d filters=4 size=3 stride=2 pad=1 output_pad=1", 2, IMAGE(3, 5, 6)},
           /* asymmetric, dilated, 2 groups */
           {"conv_transpose2d filters=6 size=3x2 stride=2x1 pad=1x0 dilation=1x2 groups=2 "
            "output_pad=1x0",
            5, IMAGE(4, 5, 6)},
           /* stride larger than the kernel */
           {"conv_transpose2d filters=3 size=2 stride=3 bias=off", 1, IMAGE(2, 4, 5)},
           /* 36 output channels: the lanes algorithm's weight gradient as a GEMM */
           {"conv_transpose2d filters=36 size=3 stride=2 pad=1", 2, IMAGE(5, 4, 5), 1},
           /* depthwise-like: groups = input channels */
           {"conv_transpose2d filters=6 size=3 stride=2 pad=1 groups=3", 2, IMAGE(3, 5, 4)},
           /* 576 Ki column floats a sample: chunks of 4 and 3 samples (conv.c) */
           {"conv_transpose2d filters=64 size=3 stride=2 pad=1 output_pad=1", 7, IMAGE(16, 32, 32),
            1})},
    {"conv_transpose3d", conv_transpose_forward, conv_transpose_backward, PLAIN, 1,
     CASES(
         {"conv_transpose3d filters=3 size=3 stride=2 pad=1 output_pad=1", 2, VOLUME(2, 3, 4, 3)})},
    {"maxpool", maxpool_forward, maxpool_backward, DISTINCT, 0,
     CASES({"maxpool size=2 stride=2", 2, IMAGE(3, 7, 9)},
           {"maxpool size=3 stride=2 pad=1", 1, IMAGE(2, 13, 11)}, /* overlapping, padded */
           {"maxpool size=2 stride=3", 2, IMAGE(1, 9, 9)},       /* stride larger than the window */
           {"maxpool size=3 stride=1 pad=2", 1, IMAGE(1, 7, 7)}, /* padding = window - 1 */
           /* over 1 and 3 axes */
           {"maxpool size=3 stride=2 pad=1 ceil=on", 2, SIGNAL(3, 12)},
           {"maxpool size=3 stride=2 pad=1 dilation=2", 5, SIGNAL(3, 15)},
           {"maxpool size=2 stride=2", 2, VOLUME(3, 5, 7, 5)},
           {"maxpool size=3 stride=2 pad=1 ceil=on", 1, VOLUME(2, 6, 5, 8)},
           {"maxpool size=3x2x2 stride=2x1x1 pad=1x0x1 dilation=2x1x1", 2, VOLUME(2, 7, 5, 6)})},
    {"avgpool", avgpool_forward, avgpool_backward, PLAIN, 1,
     CASES({"avgpool size=2 stride=2", 2, IMAGE(3, 7, 9)},
           {"avgpool size=3 stride=2 pad=1", 1, IMAGE(2, 13, 11)},
           {"avgpool size=2 stride=3", 2, IMAGE(1, 9, 9)},
           {"avgpool size=2 stride=2 ceil=on count_pad=off", 2, IMAGE(2, 7, 9)},
           {"avgpool size=2 stride=2", 1, VOLUME(2, 5, 6, 4)},
           {"avgpool size=3 stride=1 pad=2", 1, IMAGE(1, 7, 7)},
           /* over 1 and 3 axes */
           {"avgpool size=3 stride=2 pad=1 ceil=on count_pad=off", 2, SIGNAL(3, 12)},
           {"avgpool size=3 stride=2 pad=1", 5, SIGNAL(3, 11)},
           {"avgpool size=3 stride=2 pad=1 ceil=on", 2, VOLUME(2, 6, 5, 8)},
           {"avgpool size=3x2x1 stride=1x2x1 pad=1x1x0 count_pad=off", 1, VOLUME(2, 5, 6, 4)})},
    {"global_avgpool", global_avgpool_forward, global_avgpool_backward, PLAIN, 1,
     CASES({"global_avgpool", 2, IMAGE(3, 7, 9)},
           {"global_avgpool", 3, IMAGE(4, 1, 1)}, /* a 1x1 plane: the identity */
           {"global_avgpool", 1, IMAGE(2, 13, 11)},
           {"global_avgpool", 4, IMAGE(64, 7, 7), 1}, /* ResNet-18's, in small batch */
           {"global_avgpool", 2, SIGNAL(3, 9)}, {"global_avgpool", 1, VOLUME(4, 3, 5, 2)})},
    {"global_maxpool", global_maxpool_forward, global_maxpool_backward, DISTINCT, 0,
     CASES({"global_maxpool", 2, IMAGE(3, 7, 9)},
           {"global_maxpool", 3, IMAGE(4, 1, 1)}, /* a 1x1 plane: the identity */
           {"global_maxpool", 1, IMAGE(2, 13, 11)}, {"global_maxpool", 4, IMAGE(64, 7, 7), 1},
           {"global_maxpool", 2, SIGNAL(3, 9)}, {"global_maxpool", 1, VOLUME(4, 3, 5, 2)})},
    /* training, statistics of the rig's own batch (no collective) */
    {"batchnorm", batchnorm_forward, batchnorm_backward, CHANNELS, 0,
     CASES({"batchnorm", 2, IMAGE(3, 7, 9)},       /* images, odd sizes */
           {"batchnorm", 4, VECTOR(5)},            /* vectors, as after linear */
           {"batchnorm", 2, VECTOR(4)},            /* two values per channel, the least */
           {"batchnorm", 1, IMAGE(3, 6, 5)},       /* batch 1: statistics over the image */
           {"batchnorm", 3, IMAGE(2, 13, 11)},     /* 429 values per channel */
           {"batchnorm", 8, IMAGE(16, 14, 14), 1}, /* 1568: many per work-item */
           {"batchnorm eps=1e-3", 2, SIGNAL(3, 6)}, {"batchnorm", 2, VOLUME(2, 3, 4, 2)})},
    {"dropout", dropout_forward, dropout_backward, PLAIN, 1,
     CASES({"dropout name=drop p=0.3 seed=5", 3, IMAGE(5, 7, 9)},
           {"dropout p=0.5", 2, VECTOR(37)}, /* the default name, dropout1 */
           {"dropout name=d p=0", 1, SIGNAL(2, 9)})},
    {"relu", relu_forward, relu_backward, OFF_KINK, 0, CASES({"relu", 2, IMAGE(3, 7, 9)})},
    {"sigmoid", sigmoid_forward, sigmoid_backward, PLAIN, 0,
     CASES({"sigmoid", 1, IMAGE(1, 13, 11)})},
    {"tanh", tanh_forward, tanh_backward, PLAIN, 0, CASES({"tanh", 3, IMAGE(2, 5, 7)})},
    {"leaky_relu", act_x_forward, act_x_backward, WIDE, 0,
     CASES({"leaky_relu", 2, IMAGE(3, 7, 9)}, {"leaky_relu slope=0.2", 1, VECTOR(37)},
           {"leaky_relu slope=-0.5", 3, SIGNAL(2, 11)})},
    {"elu", act_x_forward, act_x_backward, WIDE, 0,
     CASES({"elu", 1, IMAGE(3, 7, 9)}, {"elu alpha=0.3", 2, VOLUME(2, 3, 4, 5)})},
    {"gelu", act_x_forward, act_x_backward, WIDE, 0,
     CASES({"gelu", 2, IMAGE(3, 7, 9)}, {"gelu approximate=tanh", 1, VECTOR(101)})},
    {"silu", act_x_forward, act_x_backward, WIDE, 0, CASES({"silu", 3, IMAGE(2, 5, 7)})},
    {"hardswish", act_x_forward, act_x_backward, WIDE, 0,
     CASES({"hardswish", 2, IMAGE(3, 7, 9)}, {"hardswish", 1, SIGNAL(5, 13)})},
    {"linear", linear_forward, linear_backward, PLAIN, 1,
     CASES({"linear units=10", 1, VECTOR(37)},
           {"linear units=7", 5, IMAGE(3, 2, 2)}, /* reads a (3, 2, 2) input flat */
           {"linear units=6 bias=off", 3, VECTOR(11)}, {"linear units=128", 3, VECTOR(800), 1})},
    {"flatten", view_forward, view_backward, PLAIN, 1,
     CASES({"flatten", 2, IMAGE(3, 4, 5)}, {"flatten", 1, VOLUME(2, 3, 2, 4)})},
    {"add", add_forward, add_backward, PLAIN, 1,
     CASES({"add input=input,input", 2, IMAGE(3, 5, 4)},
           {"add input=input,input,input", 3, SIGNAL(2, 7)})},
    {"concat", concat_forward, concat_backward, PLAIN, 1,
     CASES({"concat input=input,input", 2, IMAGE(3, 5, 4)},
           {"concat input=input,input,input", 3, SIGNAL(2, 7)})},
    /* softmax + cross-entropy: per sample (every value a class), and per=position
     * (the channels are the classes, a label for each position: 1 to 3 axes) */
    {"softmax_cross_entropy", softmax_xent_forward, softmax_xent_backward, LOGITS, 0,
     CASES({"softmax_cross_entropy", 1, VECTOR(10)}, {"softmax_cross_entropy", 7, VECTOR(10)},
           {"softmax_cross_entropy", 4, VECTOR(37)}, {"softmax_cross_entropy", 2, IMAGE(3, 2, 2)},
           {"softmax_cross_entropy per=position", 1, SIGNAL(4, 7)},
           {"softmax_cross_entropy per=position", 3, IMAGE(5, 3, 5)},
           {"softmax_cross_entropy per=position", 2, VOLUME(2, 2, 3, 3)},
           {"softmax_cross_entropy per=position", 1, IMAGE(3, 1, 1)},
           /* label smoothing: PyTorch's, per sample and per position, up to eps 1 */
           {"softmax_cross_entropy label_smoothing=0.1", 5, VECTOR(10)},
           {"softmax_cross_entropy label_smoothing=1", 2, VECTOR(7)},
           {"softmax_cross_entropy per=position label_smoothing=0.25", 2, IMAGE(4, 3, 2)},
           {"softmax_cross_entropy per=position label_smoothing=0.6", 1, SIGNAL(3, 5)})},
    /* the target is the model's input: a second input, with data of its own here */
    {"mse", regression_forward, regression_backward, PLAIN, 0,
     CASES({"mse target=input", 1, VECTOR(10)}, {"mse target=input", 3, IMAGE(2, 5, 7)},
           {"mse target=input", 2, VOLUME(2, 3, 2, 5)})},
    {"l1", regression_forward, regression_backward, APART, 0,
     CASES({"l1 target=input", 2, IMAGE(3, 7, 9)}, {"l1 target=input", 1, SIGNAL(2, 11)})},
    {"bce_with_logits", regression_forward, regression_backward, TARGETS, 0,
     CASES({"bce_with_logits target=input", 4, VECTOR(1)},
           {"bce_with_logits target=input", 3, VECTOR(6)},
           {"bce_with_logits target=input", 2, IMAGE(1, 5, 7)})},
    {"reshape", view_forward, view_backward, PLAIN, 1,
     CASES({"reshape channels=6 length=10", 2, IMAGE(3, 4, 5)},
           {"reshape channels=4 height=3 width=2", 1, VOLUME(2, 2, 3, 2)})},
    /* nearest and linear over 1, 2 and 3 axes: odd sizes, batch 1, factor 3, one
     * factor per axis, a single cell, the default (scale 2, nearest) */
    {"upsample", upsample_forward, upsample_backward, PLAIN, 1,
     CASES({"upsample", 2, IMAGE(3, 5, 7)}, {"upsample scale=3 mode=linear", 1, SIGNAL(2, 9)},
           {"upsample scale=3 mode=nearest", 3, SIGNAL(2, 5)},
           {"upsample scale=2 mode=linear", 2, IMAGE(3, 7, 5)},
           {"upsample scale=2x3 mode=linear", 1, IMAGE(2, 4, 5)},
           {"upsample scale=3x1 mode=nearest", 2, IMAGE(1, 3, 6)},
           {"upsample scale=4 mode=linear", 2, IMAGE(2, 1, 1)},
           {"upsample scale=2 mode=linear", 1, VOLUME(2, 3, 4, 5)},
           {"upsample scale=1x2x3 mode=nearest", 2, VOLUME(2, 2, 3, 3)},
           {"upsample scale=2x3x2 mode=linear", 2, VOLUME(1, 3, 2, 3)})},
};
#pragma GCC diagnostic pop
#define ROWS (sizeof TABLE / sizeof TABLE[0])

/* The case's layer as the library builds it from its line (no device). */
static clnet_net *case_net(const layer_case *t) {
    char input[96];
    rig_input_line(t->in, input, sizeof input);
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    ck_assert_msg(clnet_net_add(net, input) == CLNET_OK, "'%s': %s", input, clnet_last_error());
    ck_assert_msg(clnet_net_add(net, t->line) == CLNET_OK, "'%s': %s", t->line, clnet_last_error());
    return net;
}

/* A kind with algorithms to choose between for its passes (the convolutions),
 * as the registry's kind says. */
static int has_algorithms(const char *kind) {
    const clnet_kind *k = clnet_kind_find(kind);
    return k && k->algorithms;
}

/* The row of a kind, or NULL. */
static const layer_row *row_of(const char *kind) {
    for (size_t i = 0; i < ROWS; i++)
        if (strcmp(TABLE[i].kind, kind) == 0) return &TABLE[i];
    return NULL;
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

static void make_input(const layer_row *row, const layer_geom *g, float *x, size_t count,
                       uint64_t seed) {
    test_random_floats(x, count, seed);
    if (row->input == DISTINCT) {
        for (size_t i = 0; i < count; i++) x[i] = 0.05f * (float)((i * 7919) % count) - 1.0f;
    } else if (row->input == OFF_KINK) {
        for (size_t i = 0; i < count; i++) x[i] += x[i] >= 0 ? 0.1f : -0.1f;
    } else if (row->input == WIDE) {
        for (size_t i = 0; i < count; i++) {
            x[i] *= 4.0f;
            for (float kink = -3; kink <= 3; kink += 3)
                if (fabsf(x[i] - kink) < 0.1f) x[i] = kink + (x[i] >= kink ? 0.1f : -0.1f);
        }
    } else if (row->input == APART) {
        for (size_t i = 0; i < count / 2; i++) {
            float *z = &x[i], t = x[count / 2 + i];
            if (fabsf(*z - t) < 0.1f) *z = t + (*z >= t ? 0.1f : -0.1f);
        }
    } else if (row->input == TARGETS) {
        for (size_t i = 0; i < count / 2; i++) x[i] *= 4.0f;
        for (size_t i = count / 2; i < count; i++) x[i] = 0.5f + 0.5f * x[i];
    } else if (row->input == LOGITS) {
        for (size_t i = 0; i < count; i++) x[i] *= 3.0f;
    } else if (row->input == CHANNELS) {
        int C = g->in.c, S = spatial(g);
        channel_spread(x, g->n, C, S);
        /* Two values a, b per channel have xhat = +-1 up to eps, and a gradient that
         * grows as eps / |a - b|^3 where they meet: kept 0.5 apart, the finite
         * difference's step of 1e-2 stays small beside their distance. */
        if (g->n * S == 2)
            for (int c = 0; c < C; c++) {
                /* the channel's first and last value: (0, c, 0) and (n-1, c, S-1) */
                float *a = &x[(size_t)c * S], *b = &x[((size_t)(g->n - 1) * C + c) * S + S - 1];
                if (fabsf(*a - *b) < 0.5f) *b = *a + (*b >= *a ? 0.5f : -0.5f);
            }
    }
}

/* The scalar the finite differences differentiate: sum(y * r), or the summed loss. */
static double objective(layer_rig *r, const float *x, const float *rr, const int32_t *labels,
                        float *y) {
    double s = 0;
    if (r->l->kind->is_loss) {
        float loss[CASE_MOST_N];
        rig_forward(r, x, NULL, labels, loss, NULL);
        for (int b = 0; b < r->n; b++) s += loss[b];
        return s;
    }
    rig_forward(r, x, y, NULL, NULL, NULL);
    for (size_t i = 0; i < r->out_count; i++) s += (double)y[i] * rr[i];
    return s;
}

/* Checks `count` sampled entries of grad against central differences of the
 * objective in the entries of `v` (the input, or a parameter array that
 * `set` uploads). */
static double finite_differences(layer_rig *r, const layer_row *row, float *x, const float *rr,
                                 const int32_t *labels, float *y, float *v, size_t len,
                                 const float *grad, float *w, float *b, const char *what) {
    double eps = row->affine ? 0.25 : 1e-2, worst = 0;
    size_t samples = len < 12 ? len : 12;
    for (size_t s = 0; s < samples; s++) {
        size_t i = (s * 7919 + 13) % len;
        float keep = v[i];
        double f[2];
        for (int side = 0; side < 2; side++) {
            v[i] = keep + (float)(side ? -eps : eps);
            if (v != x) rig_set_params(r, w, b);
            f[side] = objective(r, x, rr, labels, y);
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

/* Every built-in kind of the registry has its row, and every row its cases,
 * each a line of the row's kind whose every option reads back through the
 * kind's table (clnet_option_get, as the references read them): a new kind
 * cannot be left out. (Kinds that tests register for themselves are not
 * built in.) */
START_TEST(every_builtin_kind_has_a_row) {
    int kinds = 0;
    for (const clnet_kind *k; (k = clnet_kind_builtin(kinds)); kinds++)
        ck_assert_msg(row_of(k->name),
                      "layer kind '%s' has no row in test_layers.c's TABLE (the comment above it "
                      "says what a row takes)",
                      k->name);
    ck_assert_int_eq(kinds, (int)ROWS); /* no row twice, none for a kind that is gone */
    for (size_t i = 0; i < ROWS; i++) {
        ck_assert_msg(clnet_kind_find(TABLE[i].kind), "row '%s': no such kind", TABLE[i].kind);
        ck_assert_msg(TABLE[i].ncases > 0, "row '%s' has no cases", TABLE[i].kind);
        for (size_t c = 0; c < TABLE[i].ncases; c++) {
            clnet_net *net = case_net(&TABLE[i].cases[c]);
            const clnet_node *node = &net->model.nodes[0];
            ck_assert_msg(!strcmp(node->kind->name, TABLE[i].kind), "'%s' in the row of %s",
                          TABLE[i].cases[c].line, TABLE[i].kind);
            clnet_option_value v;
            for (const clnet_option *o = node->kind->options; o && o->name; o++)
                ck_assert_msg(clnet_option_get(node, o->name, &v) == CLNET_OK, "%s: %s",
                              TABLE[i].cases[c].line, clnet_last_error());
            clnet_net_free(net);
        }
    }
    printf("%d built-in kinds, each with its row\n", kinds);
}
END_TEST

/* Option `key` of a layer made from `line` on a 2x6x6 input. */
static clnet_option_value option_of(const char *line, const char *key) {
    layer_case t = {line, 1, IMAGE(2, 6, 6), 0};
    clnet_net *net = case_net(&t);
    clnet_option_value v;
    ck_assert_msg(clnet_option_get(&net->model.nodes[0], key, &v) == CLNET_OK, "%s",
                  clnet_last_error());
    clnet_net_free(net);
    return v;
}

/* The references take every option a case leaves out as the kind's default
 * (its table): each default they read must be PyTorch's documented one, here
 * written as the value PyTorch names, so that a wrong default fails this test.
 * (A pool's stride, which defaults to its window, is the references' own:
 * window_of.) */
START_TEST(library_defaults_are_pytorchs) {
    static const char *const cases[][3] = {
        /* a layer, one of its options, and PyTorch's default as the model file writes it */
        {"conv2d filters=2 size=3", "stride", "1"},
        {"conv2d filters=2 size=3", "pad", "0"},
        {"conv2d filters=2 size=3", "dilation", "1"},
        {"conv2d filters=2 size=3", "groups", "1"},
        {"conv2d filters=2 size=3", "bias", "on"},
        {"conv_transpose2d filters=2 size=3", "output_pad", "0"},
        {"maxpool size=2", "pad", "0"},
        {"maxpool size=2", "dilation", "1"},
        {"maxpool size=2", "ceil", "off"},          /* ceil_mode=False */
        {"avgpool size=2", "count_pad", "on"},      /* count_include_pad=True */
        {"batchnorm", "eps", "1e-5"},               /* BatchNorm2d */
        {"batchnorm", "momentum", "0.1"},           /* BatchNorm2d */
        {"dropout", "p", "0.5"},                    /* Dropout */
        {"leaky_relu", "slope", "0.01"},            /* LeakyReLU's negative_slope */
        {"elu", "alpha", "1"},                      /* ELU */
        {"gelu", "approximate", "none"},            /* GELU */
        {"upsample", "scale", "2"},                 /* (nn.Upsample has none: clnet's) */
        {"upsample", "mode", "nearest"},            /* Upsample */
        {"linear units=3", "bias", "on"},           /* Linear */
        {"softmax_cross_entropy", "per", "sample"}, /* CrossEntropyLoss on (N, C) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char given[128];
        snprintf(given, sizeof given, "%s %s=%s", cases[i][0], cases[i][1], cases[i][2]);
        clnet_option_value dflt = option_of(cases[i][0], cases[i][1]),
                           want = option_of(given, cases[i][1]);
        int same =
            dflt.count == want.count && dflt.number == want.number &&
            !memcmp(dflt.ints, want.ints, sizeof dflt.ints) &&
            (dflt.word == want.word || (dflt.word && want.word && !strcmp(dflt.word, want.word)));
        ck_assert_msg(same, "%s: %s's default is not %s", cases[i][0], cases[i][1], cases[i][2]);
    }
    printf("%zu defaults the references read, each PyTorch's\n", sizeof cases / sizeof cases[0]);
}
END_TEST

/* Fills v (n, and GUARD past it) with a value no reference writes, so that a
 * reference that writes too little or too much is caught. */
#define GUARD 16
#define UNSET 1e30f
static float *unset_floats(size_t n) {
    float *v = malloc((n + GUARD) * sizeof *v);
    ck_assert(v != NULL);
    for (size_t i = 0; i < n + GUARD; i++) v[i] = UNSET;
    return v;
}

static void check_guard(const float *v, size_t n, const char *line, const char *what) {
    for (size_t i = n; i < n + GUARD; i++)
        ck_assert_msg(v[i] == UNSET, "%s: the reference wrote %s past its %zu values", line, what,
                      n);
}

/* One case on one device: forward and backward against the reference, backward
 * adding into dx, and finite differences of the device's forward. */
/* A loss's outputs, as prediction reads them, whatever its labels or
 * targets hold (no labels are given then): here labels of -1 and targets of
 * NaN, which are no class. */
static void predict_without_labels(layer_rig *r, const float *x, float *y, const float *yr,
                                   const char *line) {
    int32_t *none = malloc((size_t)r->n * sizeof *none);
    for (int i = 0; i < r->n; i++) none[i] = -1;
    ck_assert_int_eq(clEnqueueWriteBuffer(r->d->queue, r->labels, CL_TRUE, 0,
                                          (size_t)r->n * sizeof *none, none, 0, NULL, NULL),
                     CL_SUCCESS);
    if (r->target_size)
        ck_assert_int_eq(clnet_fill(r->d, r->targets, 0, (size_t)r->n * r->target_size, NAN),
                         CLNET_OK);
    rig_forward(r, x, y, NULL, NULL, NULL);
    double d = rel_diff(y, yr, r->out_count);
    ck_assert_msg(d < 1e-5, "%s: outputs without labels differ by %g", line, d);
    free(none);
}

static void run_case(clnet_device *d, const layer_row *row, const layer_case *t, uint64_t seed) {
    char input[96];
    rig_input_line(t->in, input, sizeof input);
    layer_rig r;
    rig_create_input(&r, d, input, t->line, t->n);
    layer_geom g = {.node = r.l, .n = t->n, .nin = r.nin, .in = t->in};
    int bias = geom_bias(&g), positions = geom_positions(&g);
    size_t nx = r.in_count, ny = r.out_count, nw = r.nw, nb = r.nb;
    ck_assert_msg(bias || nb == 0, "%s: a bias of %zu", t->line, nb);
    float *x = malloc(nx * 4), *y = malloc(ny * 4), *yr = unset_floats(ny);
    float *dy = malloc(ny * 4), *dx = malloc(nx * 4), *dxr = unset_floats(nx);
    float *w = malloc((nw + 1) * 4), *b = malloc((nb + 1) * 4);
    float *dw = malloc((nw + 1) * 4), *dwr = unset_floats(nw);
    float *db = malloc((nb + 1) * 4), *dbr = unset_floats(nb);
    int loss_kind = r.l->kind->is_loss, classes = positions ? g.in.c : (int)sample_size(&g);
    size_t nlabels = (size_t)t->n * (positions ? (size_t)spatial(&g) : 1);
    int32_t *labels = calloc(nlabels, sizeof *labels);
    ck_assert(t->n <= CASE_MOST_N && labels);
    make_input(row, &g, x, nx, 100 + seed);
    test_random_floats(w, nw, 200 + seed);
    test_random_floats(b, nb, 300 + seed);
    test_random_floats(dy, ny, 400 + seed);
    for (size_t i = 0; i < nlabels && loss_kind; i++) labels[i] = (int32_t)((i * 3 + 1) % classes);
    rig_set_params(&r, nw ? w : NULL, nb ? b : NULL);

    ref_args a = {.y = yr, .x = x, .w = w, .b = bias ? b : NULL, .labels = labels};
    row->forward(&g, &a);
    check_guard(yr, ny, t->line, "y");
    float loss[CASE_MOST_N];
    rig_forward(&r, x, y, loss_kind ? labels : NULL, loss, NULL);
    double fwd = rel_diff(y, yr, ny);
    ck_assert_msg(fwd < 1e-5, "%s on %s: forward differs by %g", t->line, d->info.name, fwd);
    if (loss_kind) {
        double sum = 0;
        for (int i = 0; i < t->n; i++) sum += loss[i];
        ck_assert_msg(fabs(sum - a.loss) < 1e-5 * fmax(1, fabs(a.loss)), "%s: loss %.8g vs %.8g",
                      t->line, sum, a.loss);
    }

    a = (ref_args){.dx = dxr,
                   .dw = dwr,
                   .db = bias ? dbr : NULL,
                   .x = x,
                   .w = w,
                   .dy = dy,
                   .yr = yr,
                   .labels = labels};
    row->backward(&g, &a);
    check_guard(dxr, nx, t->line, "dx");
    check_guard(dwr, nw, t->line, "dw");
    check_guard(dbr, nb, t->line, "db");
    rig_backward(&r, dy, dx, nw ? dw : NULL, nb ? db : NULL);
    double bwd = rel_diff(dx, dxr, nx);
    if (nw) bwd = fmax(bwd, fmax(rel_diff(dw, dwr, nw), rel_diff(db, dbr, nb)));
    ck_assert_msg(bwd < 1e-5, "%s on %s: backward differs by %g", t->line, d->info.name, bwd);

    /* A tensor read by several layers gets the sum of their gradients: with
     * dx_beta 1 the layer adds its dx to what is there. (The loss writes its dx
     * in forward and is its input's only reader: it always overwrites. A view's
     * dx is its dy, the same memory: the graph never asks it to add.) */
    if (!loss_kind && !r.l->kind->is_view) {
        float *acc = malloc(nx * 4), *want = malloc(nx * 4);
        test_random_floats(acc, nx, 500 + seed);
        for (size_t i = 0; i < nx; i++) want[i] = acc[i] + dxr[i];
        r.dx_beta = 1.0f;
        rig_backward(&r, dy, acc, NULL, NULL);
        r.dx_beta = 0.0f;
        double add = rel_diff(acc, want, nx);
        ck_assert_msg(add < 1e-5, "%s on %s: dx added differs by %g", t->line, d->info.name, add);
        free(acc), free(want);
    }

    /* Finite differences check the backward's math against the forward's, which the
     * reference already pins down on every device: a simulator, whose part is to watch the
     * kernels' memory and races (24 to 72 more forward passes a case), leaves them to the
     * fast devices. */
    double fd = -1;
    if (!test_device_is_slow(d)) {
        fd = finite_differences(&r, row, x, dy, labels, y, x, nx, dx, w, b, "dx");
        if (nw) {
            fd = fmax(fd, finite_differences(&r, row, x, dy, labels, y, w, nw, dw, w, b, "dw"));
            fd = fmax(fd, finite_differences(&r, row, x, dy, labels, y, b, nb, db, w, b, "db"));
        }
    }
    if (loss_kind) predict_without_labels(&r, x, y, yr, t->line); /* last: it leaves dx wrong */
    char fd_text[16] = "-";
    if (fd >= 0) snprintf(fd_text, sizeof fd_text, "%.1e", fd);
    printf("%-45s n=%d %s on %-24.24s forward %.1e backward %.1e fd %s\n", t->line, t->n, input + 6,
           d->info.name, fwd, bwd, fd_text);
    rig_free(&r);
    free(x), free(y), free(yr), free(dy), free(dx), free(dxr);
    free(w), free(b), free(dw), free(dwr), free(db), free(dbr), free(labels);
}

/* How many of a convolution case's plans run (below): all of them, one on a
 * slow device, or $CLNET_TEST_CONV_PLANS (the suite's layers.pocl: most of a
 * cold run of the table is PoCL compiling the four algorithms' kernels for
 * every geometry; CI's extended step runs them all, layers_more.pocl). */
static int plans_drawn(clnet_device *d, int all) {
    const char *env = getenv("CLNET_TEST_CONV_PLANS");
    int n = env && *env ? atoi(env) : all;
    if (test_device_is_slow(d)) n = 1;
    return n < 1 ? 1 : n > all ? all : n;
}

/* Whether $CLNET_CONV forces the convolutions' algorithms. */
static int conv_forced(void) {
    const char *env = getenv("CLNET_CONV");
    return env && *env && strcasecmp(env, "auto") != 0;
}

/* Forces rt's convolutions onto the plan (clnet_runtime_set_conv). */
static void force_plan(clnet_runtime *rt, const clnet_conv_plan *plan) {
    char text[CLNET_CONV_PLAN_CAP];
    clnet_conv_plan_text(plan, text, sizeof text);
    ck_assert_msg(clnet_runtime_set_conv(rt, text) == CLNET_OK, "%s", clnet_last_error());
    printf("[%s] ", text);
}

/* Where the implicit algorithm (or Winograd's, whose products it runs) runs
 * a pass on a device that is not a CPU,
 * its products take the local-memory tiles (conv_gpu_tile) in turn from
 * case to case (turn: the cases run so far), forced whatever the layer's
 * rows, so that every tile meets small, odd products (unforced, the rule
 * gives them the smallest). */
static void force_tile(clnet_device *d, const clnet_conv_plan *plan, uint64_t turn) {
    int implicit = 0;
    for (int pass = 0; pass < CLNET_CONV_PASSES; pass++)
        implicit |= plan->pass[pass] == CLNET_CONV_IMPLICIT ||
                    plan->pass[pass] == CLNET_CONV_WINOGRAD; /* its products are implicit's */
    const char *tile = NULL;
    if (implicit && d->info.type != CLNET_DEVICE_CPU)
        tile = conv_gpu_tile((int)(turn % (uint64_t)conv_gpu_tile_count()));
    ck_assert_int_eq(clnet_chooser_force_tile(&d->choice, tile, "test"), CLNET_OK);
    if (tile) printf("[%s] ", tile);
}

/* A case of a kind with algorithms (the convolutions) runs once per built-in
 * algorithm (choose.h's CLNET_CONV_*) on every pass, and once with a different
 * algorithm on each pass (one of the three rotations of the algorithms, from
 * case to case),
 * unless $CLNET_CONV forces them: each against the reference. Where fewer
 * plans run (a slow simulator: one; plans_drawn), the cases take them in
 * turn, so that they cover every one (Oclgrind took 183 s for them all):
 * turn counts the cases run before on the device, so that cases left out
 * (every N-th drawn) leave no plan out. seed gives the case its inputs. */
static void run_algorithms(clnet_runtime *rt, clnet_device *d, const layer_row *row,
                           const layer_case *t, uint64_t seed, uint64_t turn) {
    enum { ALGOS = CLNET_CONV_BUILT_IN - 1 };
    clnet_conv_plan plans[ALGOS + 1];
    if (!has_algorithms(row->kind) || conv_forced()) {
        run_case(d, row, t, seed);
        return;
    }
    for (int a = 0; a < ALGOS; a++) {
        plans[a] = clnet_conv_plan_all(CLNET_CONV_AUTO + 1 + a);
        for (int pass = 0; pass < CLNET_CONV_PASSES; pass++)
            plans[ALGOS].pass[pass] = CLNET_CONV_AUTO + 1 + (int)((turn + pass) % ALGOS);
    }
    int drawn = plans_drawn(d, ALGOS + 1);
    for (int k = 0; k <= ALGOS; k++) {
        /* plans turn, turn + 1, ... (mod ALGOS + 1): the next case starts one further on */
        if ((k - (int)(turn % (ALGOS + 1)) + ALGOS + 1) % (ALGOS + 1) >= drawn) continue;
        force_plan(rt, &plans[k]);
        force_tile(d, &plans[k], turn + (uint64_t)k);
        run_case(d, row, t, seed);
    }
    ck_assert_int_eq(clnet_runtime_set_conv(rt, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_chooser_force_tile(&d->choice, NULL, "test"), CLNET_OK);
}

START_TEST(layers_match_reference_and_finite_differences_on_every_device) {
    clnet_runtime *rt = test_runtime();
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        uint64_t seed = 0, turn = 0; /* each case its own inputs, whichever device */
        int skipped = 0, undrawn = 0;
        if (!test_device_is_slow(d) && plans_drawn(d, CLNET_CONV_BUILT_IN) < CLNET_CONV_BUILT_IN)
            printf("%s: each convolution case runs %d of its %d algorithm plans, the next case "
                   "starting one further on (CLNET_TEST_CONV_PLANS; CI's extended step runs "
                   "them all)\n",
                   d->info.name, plans_drawn(d, CLNET_CONV_BUILT_IN), CLNET_CONV_BUILT_IN);
        for (size_t i = 0; i < ROWS; i++)
            for (size_t c = 0; c < TABLE[i].ncases; c++, seed++) {
                if (test_device_is_slow(d) && (TABLE[i].cases[c].big || !test_slow_case(seed))) {
                    skipped++;
                    continue;
                }
                if (!test_every_case(seed)) {
                    undrawn++;
                    continue;
                }
                run_algorithms(rt, d, &TABLE[i], &TABLE[i].cases[c], seed, turn++);
            }
        if (undrawn)
            printf("%d cases not drawn (CLNET_TEST_EVERY=%s runs every N-th; CI's extended step "
                   "runs them all) on %s\n",
                   undrawn, getenv("CLNET_TEST_EVERY"), d->info.name);
        if (skipped)
            printf("%d large or not drawn cases (CLNET_TEST_SLOW_EVERY) left out on %s, a slow "
                   "device (they run on the others)\n",
                   skipped, d->info.name);
    }
}
END_TEST

/* The made-up algorithm (conv_made_up.c, registered in main) runs when
 * forced by its name, and matches the reference: on every device, the first
 * cases of every row whose kind has algorithms (the convolutions), each pass
 * in chunks of one sample. */
START_TEST(a_registered_conv_algorithm_runs_when_forced_and_matches_the_reference) {
    clnet_runtime *rt = test_runtime();
    if (conv_forced()) {
        printf("skipped: $CLNET_CONV forces the algorithms\n");
        return;
    }
    for (int a = CLNET_CONV_AUTO + 1; a < CLNET_CONV_BUILT_IN; a++) /* names and objects agree */
        ck_assert_str_eq(conv_algo_of(a)->name, clnet_conv_algo_name(a));
    ck_assert_int_eq(clnet_conv_algo_id(conv_made_up.name), CLNET_CONV_BUILT_IN);
    ck_assert_ptr_eq(conv_algo_of(CLNET_CONV_BUILT_IN), &conv_made_up);
    ck_assert_int_eq(clnet_runtime_set_conv(rt, conv_made_up.name), CLNET_OK);
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        uint64_t seed = 0;
        for (size_t i = 0; i < ROWS; i++)
            for (size_t c = 0; c < TABLE[i].ncases; c++, seed++) {
                const layer_case *t = &TABLE[i].cases[c];
                if (!has_algorithms(TABLE[i].kind) || c >= 2 || t->big) continue;
                if (test_device_is_slow(d) && !test_slow_case(seed)) continue;
                int before = conv_made_up_chunks;
                printf("[%s] ", conv_made_up.name);
                run_case(d, &TABLE[i], t, seed);
                /* a forward and a backward pass, a chunk a sample each */
                ck_assert_int_ge(conv_made_up_chunks - before, 2 * t->n);
            }
    }
    ck_assert_int_eq(clnet_runtime_set_conv(rt, NULL), CLNET_OK);
}
END_TEST

/* Winograd's F(2x2, 3x3) on generated 3x3 layers at stride 1 (the ones it
 * takes; its other passes and layers are the implicit algorithm's, which the
 * table covers): channels and filters 1 to 40 in groups that divide both,
 * sides of 1 to 17 on either axis, padding 0 to 2 on each, odd batches and
 * partial tiles, with and without a bias, against the reference and by
 * finite differences (run_case), on every device; the seed is printed
 * (CLNET_WINOGRAD_SEED, or CLNET_TEST_SEED, replays it). On a device other
 * than a CPU each case takes the next tile (force_tile). */
START_TEST(winograd_matches_the_reference_on_generated_3x3_layers) {
    clnet_runtime *rt = test_runtime();
    uint64_t seed = test_seed_from_env("CLNET_WINOGRAD_SEED", 58);
    const layer_row *row = NULL;
    for (size_t i = 0; i < ROWS; i++)
        if (strcmp(TABLE[i].kind, "conv2d") == 0) row = &TABLE[i];
    ck_assert_ptr_nonnull(row);
    ck_assert_int_eq(clnet_runtime_set_conv(rt, "winograd"), CLNET_OK);
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        int slow = test_device_is_slow(d), cases = slow ? 3 : 12, turn = 0;
        clnet_xoshiro r = clnet_xoshiro_from(seed + (uint64_t)dev);
        int runs = 0;
        for (int k = 0; k < cases; k++) runs += test_every_case((uint64_t)k);
        printf("winograd: %d of %d generated cases on %s, seed %llu (CLNET_WINOGRAD_SEED=%llu "
               "replays them; CLNET_TEST_EVERY draws every N-th)\n",
               runs, cases, d->info.name, (unsigned long long)seed, (unsigned long long)seed);
        for (int k = 0; k < cases; k++) {
            int most = slow ? 8 : 40, side = slow ? 7 : 17, drawn = test_every_case((uint64_t)k);
            int C = 1 + (int)clnet_uniform_below(&r, (uint32_t)most);
            int F = 1 + (int)clnet_uniform_below(&r, (uint32_t)most), G = 1;
            for (int g = 2; g <= 4; g++)
                if (C % g == 0 && F % g == 0 && clnet_uniform_below(&r, 2)) G = g;
            int ph = (int)clnet_uniform_below(&r, 3), pw = (int)clnet_uniform_below(&r, 3);
            int H = 3 - 2 * ph + (int)clnet_uniform_below(&r, (uint32_t)side);
            int W = 3 - 2 * pw + (int)clnet_uniform_below(&r, (uint32_t)side);
            if (H < 1) H = 1;
            if (W < 1) W = 1;
            int n = 1 + (int)clnet_uniform_below(&r, slow ? 2 : 5);
            char line[160];
            snprintf(line, sizeof line, "conv2d filters=%d size=3 pad=%dx%d groups=%d%s", F, ph, pw,
                     G, clnet_uniform_below(&r, 2) ? " bias=off" : "");
            if (!drawn) continue; /* drawn after the draws above: the same cases either way */
            layer_case t = {line, n, {.ndim = 2, .c = C, .dim = {H, W}}, 0};
            clnet_conv_plan plan = clnet_conv_plan_all(CLNET_CONV_WINOGRAD);
            printf("[winograd] ");
            force_tile(d, &plan, seed + (uint64_t)turn++);
            run_case(d, row, &t, seed + (uint64_t)k);
        }
        ck_assert_int_eq(clnet_chooser_force_tile(&d->choice, NULL, "test"), CLNET_OK);
    }
    ck_assert_int_eq(clnet_runtime_set_conv(rt, NULL), CLNET_OK);
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

/* Channels whose mean lies 10^3 to 10^5 of their spread away from zero (a
 * convolution's bias that the batch norm cancels can put them there): the
 * statistics, the output, the gradients and the running statistics keep
 * their accuracy against the double reference, on every device. A mean
 * rounded to a float (what normalized before the mean became a pair) is off
 * by up to half its last place: 2e-3 of the spread at 3e4, so y would be
 * off by about 1e-3. */
START_TEST(batchnorm_keeps_its_accuracy_far_from_zero) {
    enum { N = 6, C = 4, H = 7, W = 5, S = H * W };
    const float mean[C] = {1e3f, -3e4f, 2.5e3f, 1e4f}, spread[C] = {1.0f, 3.0f, 0.02f, 0.5f};
    const float eps = 1e-5f, momentum = 0.1f;
    clnet_runtime *rt = test_runtime();
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        layer_rig r;
        rig_create(&r, d, (rig_shape){C, H, W}, "batchnorm", N);
        size_t nx = r.in_count, moff, voff;
        running_offsets(&r, &moff, &voff);
        float *x = malloc(nx * 4), *y = malloc(nx * 4), *yr = malloc(nx * 4), *dy = malloc(nx * 4);
        float *dx = malloc(nx * 4), *dxr = malloc(nx * 4), *buf = malloc((r.nbuffers + 1) * 4);
        float w[C], b[C], dw[C], db[C], dwr[C], dbr[C], rm[C] = {0}, rv[C] = {1, 1, 1, 1};
        ck_assert(x && y && yr && dy && dx && dxr && buf);
        test_random_floats(x, nx, 61);
        test_random_floats(dy, nx, 62);
        test_random_floats(w, C, 63);
        test_random_floats(b, C, 64);
        for (int i = 0; i < N * C * S; i++) {
            int c = (i / S) % C;
            x[i] = mean[c] + spread[c] * x[i];
        }
        rig_set_params(&r, w, b);
        ref_batchnorm_forward_train(yr, NULL, NULL, rm, rv, x, w, b, N, C, S, eps, momentum);
        ref_batchnorm_backward(dxr, dwr, dbr, dy, x, w, N, C, S, eps);
        rig_forward(&r, x, y, NULL, NULL, NULL);
        rig_backward(&r, dy, dx, dw, db);
        rig_get_buffers(&r, buf);
        double fwd = rel_diff(y, yr, nx), bwd = rel_diff(dx, dxr, nx);
        double par = fmax(rel_diff(dw, dwr, C), rel_diff(db, dbr, C));
        double run = fmax(rel_diff(buf + moff, rm, C), rel_diff(buf + voff, rv, C));
        printf("batchnorm, means 1e3 to 1e5 spreads away, on %-24.24s y %.1e dx %.1e dw,db %.1e "
               "running %.1e\n",
               d->info.name, fwd, bwd, par, run);
        ck_assert_msg(fwd < 1e-5 && bwd < 1e-4 && par < 1e-4 && run < 1e-6,
                      "on %s: y %g, dx %g, dw and db %g, running statistics %g", d->info.name, fwd,
                      bwd, par, run);
        rig_free(&r);
        free(x), free(y), free(yr), free(dy), free(dx), free(dxr), free(buf);
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
        {"upsample scale=0", "scale=0: expected"},
        {"upsample scale=2x0", "expected"},
        {"upsample mode=cubic", "mode=cubic: expected nearest or linear"},
        {"upsample scale=2x2x2", "scale=2x2x2 gives 3 values, the input has 2 spatial axes"},
        {"upsample size=2", "unknown option 'size'"},
        {"softmax_cross_entropy label_smoothing=1.5", "label_smoothing=1.5: expected 0 to 1"},
        {"softmax_cross_entropy label_smoothing=-0.1",
         "label_smoothing=-0.1: expected a number >= 0"},
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
    if (conv_algo_register(&conv_made_up) != CLNET_OK) {
        fprintf(stderr, "%s\n", clnet_last_error());
        return 1;
    }
    Suite *s = suite_create("layers");
    TCase *t = tcase_create("layers");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, every_builtin_kind_has_a_row);
    tcase_add_test(t, library_defaults_are_pytorchs);
    tcase_add_test(t, layers_match_reference_and_finite_differences_on_every_device);
    tcase_add_test(t, a_registered_conv_algorithm_runs_when_forced_and_matches_the_reference);
    tcase_add_test(t, winograd_matches_the_reference_on_generated_3x3_layers);
    tcase_add_test(t, batchnorm_running_statistics_and_evaluation_on_every_device);
    tcase_add_test(t, batchnorm_refuses_one_value_per_channel_in_training);
    tcase_add_test(t, batchnorm_keeps_its_accuracy_far_from_zero);
    tcase_add_test(t, softmax_xent_is_stable_for_huge_logits);
    tcase_add_test(t, layer_shapes_are_checked);
    tcase_add_test(t, global_pools_keep_the_spatial_rank);
    tcase_add_test(t, bias_off_drops_the_bias_parameter);
    tcase_add_test(t, uniform_fan_in_init_follows_pytorch);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
