/* Max and average pooling (cl/pool.cl) over the input's 1, 2 or 3 spatial
 * axes: x (n, C, spatial...) -> y (n, C, pooled...).
 * Both kinds share their options and shape rules, so they share this file. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    /* as given: 1 value (every axis) or one per spatial axis; n*: how many (0: not given) */
    int k[3], s[3], p[3], d[3];
    int nk, ns, np, nd;
    int ceil;         /* PyTorch's ceil_mode: the output size rounded up */
    int no_count_pad; /* avgpool count_pad=off: divide by the input's cells only */
    clnet_window win; /* set by setup; stride defaults to the window, dilation to 1 */
} pool_config;

/* A per-axis option: one value for every axis, or one per axis (setup lays
 * them out for the input); none given leaves its count 0. Laid out by hand:
 * clang-format folds macros of initialisers badly. */
// clang-format off
#define LIST(key, v, n, least, value_, without_, what)                                             \
    {.name = key, .type = CLNET_OPT_LIST, .at = offsetof(pool_config, v),                          \
     .count_at = offsetof(pool_config, n), .min = least, .value = value_, .without = without_,     \
     .help = what}
#define POOL_OPTIONS                                                                               \
    LIST("size", k, nk, 1, NULL, "required", "the window"),                                        \
    LIST("stride", s, ns, 1, NULL, "the size", "the step between windows"),                        \
    LIST("pad", p, np, 0, "0", NULL, "zeros before and after each axis (smaller than the window)"),\
    {.name = "ceil", .type = CLNET_OPT_CHOICE, .at = offsetof(pool_config, ceil),                  \
     .choices = clnet_on_off, .value = "off",                                                      \
     .help = "round the output size up (PyTorch's ceil_mode)"}
// clang-format on

static const clnet_option max_options[] = {
    POOL_OPTIONS,
    LIST("dilation", d, nd, 1, "1", NULL, "the window's taps this far apart"),
    {0},
};
/* stored as its opposite, no_count_pad, so that maxpool's zeros count them */
static const clnet_option avg_options[] = {
    POOL_OPTIONS,
    {.name = "count_pad",
     .type = CLNET_OPT_CHOICE,
     .at = offsetof(pool_config, no_count_pad),
     .choices = clnet_off_on,
     .value = "on",
     .help = "divide by the padded window (off: by the input's cells only; PyTorch's "
             "count_include_pad)"},
    {0},
};

/* Windows along an axis: floor or, in ceil mode, ceil of (in + 2p - k) / s, plus
 * one; in ceil mode a last window that would start past the input and its left
 * padding is dropped (PyTorch's rule). */
static int pooled_size(int in, int k, int s, int p, int ceil) {
    int span = in + 2 * p - k;
    if (span < 0) return 0;
    int out = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (out - 1) * s >= in + p) out--;
    return out;
}

static clnet_status check(const void *config) {
    const pool_config *c = config;
    if (!c->nk)
        return clnet_fail(CLNET_ERR_FORMAT, "pooling needs size=K (or one per axis: KHxKW)");
    return CLNET_OK;
}

static clnet_status setup(clnet_node *node) {
    clnet_status status = CLNET_OK;
    pool_config *c = CLNET_CONFIG(node, pool_config);
    clnet_shape in = node->in[0];
    clnet_window *w = &c->win;
    if (in.ndim < 1) return clnet_node_fail(node, "takes inputs with 1 to 3 spatial axes");
    TRY(clnet_node_dims(node, "size", c->k, c->nk, 1, w->k));
    TRY(clnet_node_dims(node, "pad", c->p, c->np, 0, w->p));
    TRY(clnet_node_dims(node, "dilation", c->d, c->nd, 1, w->d));
    if (c->ns) /* the stride defaults to the window */
        TRY(clnet_node_dims(node, "stride", c->s, c->ns, 1, w->s));
    else
        memcpy(w->s, w->k, sizeof w->s);
    w->c = in.c;
    clnet_axes(in.ndim, in.dim, 1, w->in);
    int lead = 3 - in.ndim, spans[3];
    for (int a = 0; a < 3; a++) spans[a] = w->d[a] * (w->k[a] - 1) + 1; /* a dilated window's */
    char k[48], pad[48], span[48];
    clnet_dims_text(w->k + lead, in.ndim, k, sizeof k);
    clnet_dims_text(w->p + lead, in.ndim, pad, sizeof pad);
    clnet_dims_text(spans + lead, in.ndim, span, sizeof span);
    for (int a = 0; a < 3; a++)
        if (w->p[a] >= w->k[a])
            return clnet_node_fail(node, "padding %s must be smaller than the window %s", pad, k);
    node->out = in;
    for (int a = 0; a < 3; a++) {
        w->out[a] = pooled_size(w->in[a], spans[a], w->s[a], w->p[a], c->ceil);
        if (w->out[a] < 1)
            return clnet_node_fail(node,
                                   "a %s window (spanning %s) with padding %s does not fit "
                                   "the input",
                                   k, span, pad);
    }
    for (int i = 0; i < in.ndim; i++) node->out.dim[i] = w->out[lead + i];
cleanup:
    return status;
}

/* The program's options: the window fixed at compile time, ceil mode,
 * count_pad and dilation. */
static void pool_options(const clnet_node *node, char *out, size_t cap) {
    const pool_config *c = CLNET_CONFIG(node, pool_config);
    const int *d = c->win.d;
    char more[120];
    snprintf(more, sizeof more, "-DPOOL_CEIL=%d -DPOOL_COUNT_PAD=%d -DPOOL_DILATED=%d", c->ceil,
             !c->no_count_pad, d[0] * d[1] * d[2] != 1);
    clnet_window_options(&c->win, more, out, cap);
}

/* Runs kernel `name` (slot `slot`) over (x, y, plane * depth) of the output
 * (forward) or of the input (backward: writing or adding dx as the graph
 * says). Every pool kernel takes the window's geometry first: WIN(win_of(node)). */
static const clnet_window *win_of(const clnet_node *node) {
    return &CLNET_CONFIG(node, pool_config)->win;
}

static clnet_status run(const clnet_node *node, const clnet_pass *p, int slot, const char *name,
                        int backward, const clnet_arg *args, int nargs) {
    const pool_config *c = CLNET_CONFIG(node, pool_config);
    const int *v = backward ? c->win.in : c->win.out;
    size_t range[3] = {(size_t)v[2], (size_t)v[1], (size_t)p->n * (size_t)c->win.c * (size_t)v[0]};
    char opt[600];
    pool_options(node, opt, sizeof opt);
    size_t shape[3];
    return clnet_pass_run(p, slot, KERNEL("pool", opt, name), 3, range,
                          clnet_window_local(&c->win, p, range, shape), args, nargs);
}

/* max pooling keeps the index of each window's maximum (int32) */
static size_t max_keep(const clnet_node *node, const clnet_device *d, int n) {
    (void)d;
    return (size_t)n * clnet_shape_size(node->out);
}

static clnet_status max_forward(const clnet_node *node, const clnet_pass *p) {
    return run(node, p, 0, "maxpool_forward", 0,
               ARGS(WIN(win_of(node)), U32(p->n), MEM(p->act), U32(p->x[0]), MEM(p->act), U32(p->y),
                    MEM(p->keep), U32(p->keep_off)));
}

static clnet_status max_backward(const clnet_node *node, const clnet_pass *p) {
    if (!p->need_dx[0]) return CLNET_OK;
    return run(node, p, 1, "maxpool_backward", 1,
               ARGS(WIN(win_of(node)), U32(p->n), MEM(p->dact), U32(p->dy), MEM(p->keep),
                    U32(p->keep_off), MEM(p->dact), U32(p->dx[0]), U32(clnet_dx_add(p, 0))));
}

static clnet_status avg_forward(const clnet_node *node, const clnet_pass *p) {
    return run(
        node, p, 2, "avgpool_forward", 0,
        ARGS(WIN(win_of(node)), U32(p->n), MEM(p->act), U32(p->x[0]), MEM(p->act), U32(p->y)));
}

static clnet_status avg_backward(const clnet_node *node, const clnet_pass *p) {
    if (!p->need_dx[0]) return CLNET_OK;
    return run(node, p, 3, "avgpool_backward", 1,
               ARGS(WIN(win_of(node)), U32(p->n), MEM(p->dact), U32(p->dy), MEM(p->dact),
                    U32(p->dx[0]), U32(clnet_dx_add(p, 0))));
}

#define POOL_KIND(kind_name, about_, options_, keep, fwd, bwd)                                     \
    {                                                                                              \
        .name = kind_name, .about = about_, .stem = "pool", .options = options_, .min_inputs = 1,  \
        .max_inputs = 1, .config_size = sizeof(pool_config), .check = check, .setup = setup,       \
        .keep_floats = keep, .forward = fwd, .backward = bwd,                                      \
    }

const clnet_kind clnet_maxpool_kind =
    POOL_KIND("maxpool",
              "The largest value of each window, per channel, over the input's 1, 2 or 3 "
              "spatial axes (PyTorch's MaxPool1d/2d/3d); the gradient goes to that value, the "
              "first where several are equal. ceil=on rounds the output size up, keeping a "
              "last window that starts inside the input or its left padding (ceil_mode).",
              max_options, max_keep, max_forward, max_backward);
const clnet_kind clnet_avgpool_kind =
    POOL_KIND("avgpool",
              "The mean of each window, per channel, over the input's 1, 2 or 3 spatial axes "
              "(PyTorch's AvgPool1d/2d/3d). Padded zeros count (count_pad=on, PyTorch's "
              "default): a window divides by its cells up to the padded edge; count_pad=off "
              "divides by the input's own cells (count_include_pad=False).",
              avg_options, NULL, avg_forward, avg_backward);
