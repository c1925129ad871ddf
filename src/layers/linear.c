/* Fully connected: x (n, I) -> y (n, O) = x W^T + b, with W (O, I) as PyTorch
 * lays it out, and b (O) unless bias=off. Any input shape is read as (n, I) in
 * C, H, W order. With a bias, a relu that alone reads it runs in its kernels
 * (fuse_relu): the bias's pass applies it, and backward masks dy as it sums
 * the bias's gradient, into the scratch the GEMMs then read. */
#include "elementwise.h"
#include "error.h"
#include "gemm.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int units;
    clnet_param_init init;
    int relu; /* the relu after it runs in its kernels (fuse_relu, set by fusion.c) */
} linear_config;

static const clnet_option options[] = {
    {.name = "units",
     .type = CLNET_OPT_INT,
     .at = offsetof(linear_config, units),
     .min = 1,
     .without = "required",
     .help = "the outputs (PyTorch's out_features)"},
    CLNET_PARAM_INIT_OPTIONS(linear_config, init),
    {0},
};

static clnet_status check(const void *config) {
    const linear_config *c = config;
    if (c->units < 1) return clnet_fail(CLNET_ERR_FORMAT, "linear needs units=N with N >= 1");
    return clnet_param_init_check(&c->init);
}

static clnet_status setup(clnet_node *node) {
    const linear_config *c = CLNET_CONFIG(node, linear_config);
    size_t in = clnet_shape_size(node->in[0]);
    if (in > INT32_MAX) return clnet_node_fail(node, "an input of %zu values is too large", in);
    node->out = clnet_shape_vector(c->units);
    clnet_node_param(node, "weight", 2, (int64_t[]){c->units, (int64_t)in}, c->init.weight, (int)in,
                     c->units);
    if (!c->init.no_bias)
        clnet_node_param(node, "bias", 1, (int64_t[]){c->units}, c->init.bias, (int)in, c->units);
    return CLNET_OK;
}

/* The GEMM call sites (clnet_pass_gemm) and their shapes for n samples. */
enum { GEMM_FORWARD, GEMM_WEIGHT, GEMM_DX };

static clnet_gemm_shape gemm_shape(const clnet_node *node, int site, int n) {
    size_t I = clnet_shape_size(node->in[0]), O = (size_t)node->out.c, N = (size_t)n;
    switch (site) {
    case GEMM_FORWARD:
        return (clnet_gemm_shape){0, 1, N, O, I, 'M', n};
    case GEMM_WEIGHT:
        return (clnet_gemm_shape){1, 0, O, I, N, 'K', n};
    default:
        return (clnet_gemm_shape){0, 0, N, I, O, 'M', n};
    }
}

/* Where in the scratch the GEMMs' own starts: after dz (n, O), the masked
 * dy, with the relu taken in. */
static size_t gemm_work_at(const clnet_node *node, int n) {
    return CLNET_CONFIG(node, linear_config)->relu ? (size_t)n * (size_t)node->out.c : 0;
}

/* The scratch: dz, then the GEMMs' (one at a time). */
static size_t work_floats(const clnet_node *node, const clnet_device *d, int n) {
    size_t most = 0;
    for (int site = GEMM_FORWARD; site <= GEMM_DX; site++) {
        clnet_gemm_shape s = gemm_shape(node, site, n);
        size_t w = clnet_gemm_chosen_work_floats(d, &s);
        if (w > most) most = w;
    }
    return gemm_work_at(node, n) + most;
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t I = clnet_shape_size(node->in[0]), O = (size_t)node->out.c, n = (size_t)p->n;
    size_t wo = node->params[0].offset;
    clnet_gemm_shape s = gemm_shape(node, GEMM_FORWARD, p->n);
    TRY(clnet_pass_gemm(
        p, GEMM_FORWARD, 0, &s,
        &(clnet_gemm_args){
            1.0f, {p->act, p->x[0], I}, {p->params, wo, I}, 0.0f, {p->act, p->y, O}}));
    if (node->nparams > 1) /* the bias, and the relu taken in */
        TRY(clnet_pass_run(
            p, 0, KERNEL("elementwise", "", "add_bias_cols"), 1, (size_t[]){n * O}, NULL,
            ARGS(U32(n), U32(O), MEM(p->act), U32(p->y), MEM(p->params),
                 U32(node->params[1].offset), U32(CLNET_CONFIG(node, linear_config)->relu))));
cleanup:
    return status;
}

/* Forward was y = x W^T + b, so backward is
 * dW = dy^T x (O, I), db = column sums of dy (with a bias), dx = dy W (n, I);
 * with the relu taken in, of dz = dy where y > 0 (in the scratch) instead. */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t I = clnet_shape_size(node->in[0]), O = (size_t)node->out.c, n = (size_t)p->n;
    size_t wo = node->params[0].offset, at = gemm_work_at(node, p->n);
    clnet_gemm_shape weight = gemm_shape(node, GEMM_WEIGHT, p->n),
                     dx = gemm_shape(node, GEMM_DX, p->n);
    clnet_matrix dz = {p->dact, p->dy, O};
    if (CLNET_CONFIG(node, linear_config)->relu) {
        dz = (clnet_matrix){p->work, 0, O};
        TRY(clnet_pass_run(p, 2, KERNEL("elementwise", "", "relu_col_sums"), 1, (size_t[]){O}, NULL,
                           ARGS(U32(n), U32(O), MEM(p->dact), U32(p->dy), MEM(p->act), U32(p->y),
                                MEM(p->work), U32(0), MEM(p->grads), U32(node->params[1].offset),
                                F32(p->beta))));
    } else if (node->nparams > 1) {
        TRY(clnet_col_sums(p->d, clnet_pass_kept(p, 1), n, O, (clnet_place){p->dact, p->dy},
                           (clnet_place){p->grads, node->params[1].offset}, p->beta));
    }
    TRY(clnet_pass_gemm(
        p, GEMM_WEIGHT, at, &weight,
        &(clnet_gemm_args){1.0f, dz, {p->act, p->x[0], I}, p->beta, {p->grads, wo, I}}));
    if (p->need_dx[0])
        TRY(clnet_pass_gemm(
            p, GEMM_DX, at, &dx,
            &(clnet_gemm_args){
                1.0f, dz, {p->params, wo, I}, p->dx_beta[0], {p->dact, p->dx[0], I}}));
cleanup:
    return status;
}

/* Takes in the relu after it where there is a bias for its pass to apply
 * it in (without one, the relu's own pass is as many). */
static int fuse_relu(clnet_node *node) {
    linear_config *c = CLNET_CONFIG(node, linear_config);
    if (c->init.no_bias) return 0;
    c->relu = 1;
    return 1;
}

const clnet_kind clnet_linear_kind = {
    .name = "linear",
    .about =
        "A fully connected layer: reads any input as one vector in channel, depth, height, width "
        "order and gives units values; weight (units, inputs), bias (units), as PyTorch's Linear. "
        "With a bias, a relu whose input no other layer reads runs inside it (CLNET_FUSE=off "
        "keeps it apart).",
    .stem = "fc",
    .options = options,
    .min_inputs = 1,
    .max_inputs = 1,
    .backward_reads = CLNET_READS_X | CLNET_READS_Y_RELU,
    .config_size = sizeof(linear_config),
    .check = check,
    .setup = setup,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .fuse_relu = fuse_relu,
};
