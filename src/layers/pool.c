/* Max and average pooling (cl/pool.cl): x (n, C, H, W) -> y (n, C, OH, OW).
 * Both kinds share their options and shape rules, so they share this file. */
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int k[2], s[2], p[2]; /* window, stride (0: the window), padding: (h, w) */
    int ceil;             /* PyTorch's ceil_mode: the output size rounded up */
    int d[2];             /* maxpool dilation= (0: 1): taps d apart */
    int no_count_pad;     /* avgpool count_pad=off: divide by the input's cells only */
} pool_config;

static clnet_status on_off(const char *key, const char *value, int *out) {
    if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
        return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected on or off", key, value);
    *out = strcmp(value, "on") == 0;
    return CLNET_OK;
}

static clnet_status option(void *config, const char *key, const char *value, int *known) {
    pool_config *c = config;
    *known = 1;
    if (strcmp(key, "size") == 0) return clnet_option_dims(key, value, 2, 1, c->k);
    if (strcmp(key, "stride") == 0) return clnet_option_dims(key, value, 2, 1, c->s);
    if (strcmp(key, "pad") == 0) return clnet_option_dims(key, value, 2, 0, c->p);
    if (strcmp(key, "ceil") == 0) return on_off(key, value, &c->ceil);
    *known = 0;
    return CLNET_OK;
}

static clnet_status max_option(void *config, const char *key, const char *value, int *known) {
    pool_config *c = config;
    if (strcmp(key, "dilation") != 0) return option(config, key, value, known);
    *known = 1;
    return clnet_option_dims(key, value, 2, 1, c->d);
}

static clnet_status avg_option(void *config, const char *key, const char *value, int *known) {
    pool_config *c = config;
    if (strcmp(key, "count_pad") != 0) return option(config, key, value, known);
    *known = 1;
    int on = 1;
    clnet_status s = on_off(key, value, &on);
    c->no_count_pad = !on;
    return s;
}

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
    if (c->k[0] < 1) return clnet_fail(CLNET_ERR_FORMAT, "pooling needs size=K (or KHxKW) >= 1");
    return CLNET_OK;
}

static clnet_status setup(clnet_node *node) {
    pool_config *c = CLNET_CONFIG(node, pool_config);
    clnet_shape in = node->in[0];
    if (c->s[0] == 0) c->s[0] = c->k[0], c->s[1] = c->k[1]; /* stride defaults to the window */
    if (c->d[0] == 0) c->d[0] = c->d[1] = 1;
    if (in.ndim != 2) return clnet_node_fail(node, "takes (C, H, W) inputs");
    if (c->p[0] >= c->k[0] || c->p[1] >= c->k[1])
        return clnet_node_fail(node, "padding must be >= 0 and smaller than the kernel (%dx%d)",
                               c->k[0], c->k[1]);
    /* a dilated window spans d*(k-1)+1 */
    int span[2] = {c->d[0] * (c->k[0] - 1) + 1, c->d[1] * (c->k[1] - 1) + 1};
    int oh = pooled_size(in.dim[0], span[0], c->s[0], c->p[0], c->ceil);
    int ow = pooled_size(in.dim[1], span[1], c->s[1], c->p[1], c->ceil);
    if (oh < 1 || ow < 1)
        return clnet_node_fail(node, "a %dx%d window (spanning %dx%d) does not fit the input",
                               c->k[0], c->k[1], span[0], span[1]);
    node->out = clnet_shape_image(in.c, oh, ow);
    return CLNET_OK;
}

#define WINDOW(node, c, n)                                                                         \
    U32(n), U32((node)->in[0].c), U32((node)->in[0].dim[0]), U32((node)->in[0].dim[1]),            \
        U32((c)->k[0]), U32((c)->k[1]), U32((c)->s[0]), U32((c)->s[1]), U32((c)->p[0]),            \
        U32((c)->p[1]), U32((node)->out.dim[0]), U32((node)->out.dim[1])

/* The program's options: the window fixed at compile time, ceil mode,
 * count_pad and dilation, and `extra` ("" or an input gradient's options). */
static void pool_options(const clnet_node *node, const char *extra, char *out, size_t cap) {
    const pool_config *c = CLNET_CONFIG(node, pool_config);
    char more[120];
    snprintf(more, sizeof more, "-DPOOL_CEIL=%d -DPOOL_COUNT_PAD=%d -DPOOL_DH=%d -DPOOL_DW=%d%s%s",
             c->ceil, !c->no_count_pad, c->d[0], c->d[1], *extra ? " " : "", extra);
    clnet_window_options(node, c->k, c->s, c->p, more, out, cap);
}

/* kernels run over (x, y, plane) of the output (forward) or input (backward) */
static const size_t *range(clnet_shape s, int n, size_t out[3]) {
    out[0] = (size_t)s.dim[1];
    out[1] = (size_t)s.dim[0];
    out[2] = (size_t)n * s.c;
    return out;
}

/* max pooling keeps the index of each window's maximum (int32) */
static size_t max_keep(const clnet_node *node, int n) {
    return (size_t)n * clnet_shape_size(node->out);
}

static clnet_status max_forward(const clnet_node *node, const clnet_pass *p) {
    const pool_config *c = CLNET_CONFIG(node, pool_config);
    size_t r[3];
    char opt[400];
    pool_options(node, "", opt, sizeof opt);
    return clnet_pass_run(p, 0, "pool", opt, "maxpool_forward", 3, range(node->out, p->n, r), NULL,
                          ARGS(WINDOW(node, c, p->n), MEM(p->act), U32(p->x[0]), MEM(p->act),
                               U32(p->y), MEM(p->keep), U32(p->keep_off)));
}

static clnet_status max_backward(const clnet_node *node, const clnet_pass *p) {
    const pool_config *c = CLNET_CONFIG(node, pool_config);
    size_t r[3];
    if (!p->need_dx[0]) return CLNET_OK;
    char opt[400];
    pool_options(node, clnet_dx_options(p, 0), opt, sizeof opt);
    return clnet_pass_run(p, 1, "pool", opt, "maxpool_backward", 3, range(node->in[0], p->n, r),
                          NULL,
                          ARGS(WINDOW(node, c, p->n), MEM(p->dact), U32(p->dy), MEM(p->keep),
                               U32(p->keep_off), MEM(p->dact), U32(p->dx[0])));
}

static clnet_status avg_forward(const clnet_node *node, const clnet_pass *p) {
    const pool_config *c = CLNET_CONFIG(node, pool_config);
    size_t r[3];
    char opt[400];
    pool_options(node, "", opt, sizeof opt);
    return clnet_pass_run(
        p, 2, "pool", opt, "avgpool_forward", 3, range(node->out, p->n, r), NULL,
        ARGS(WINDOW(node, c, p->n), MEM(p->act), U32(p->x[0]), MEM(p->act), U32(p->y)));
}

static clnet_status avg_backward(const clnet_node *node, const clnet_pass *p) {
    const pool_config *c = CLNET_CONFIG(node, pool_config);
    size_t r[3];
    if (!p->need_dx[0]) return CLNET_OK;
    char opt[400];
    pool_options(node, clnet_dx_options(p, 0), opt, sizeof opt);
    return clnet_pass_run(
        p, 3, "pool", opt, "avgpool_backward", 3, range(node->in[0], p->n, r), NULL,
        ARGS(WINDOW(node, c, p->n), MEM(p->dact), U32(p->dy), MEM(p->dact), U32(p->dx[0])));
}

#define POOL_KIND(kind_name, keys_, option_, keep, fwd, bwd)                                       \
    {                                                                                              \
        .name = kind_name, .stem = "pool", .keys = keys_, .min_inputs = 1, .max_inputs = 1,        \
        .config_size = sizeof(pool_config), .option = option_, .check = check, .setup = setup,     \
        .keep_floats = keep, .forward = fwd, .backward = bwd,                                      \
    }

const clnet_kind clnet_maxpool_kind = POOL_KIND("maxpool", "size stride pad ceil dilation",
                                                max_option, max_keep, max_forward, max_backward);
const clnet_kind clnet_avgpool_kind = POOL_KIND("avgpool", "size stride pad ceil count_pad",
                                                avg_option, NULL, avg_forward, avg_backward);
