/* 2-D convolution: im2col + GEMM (cl/conv.cl, cl/gemm.cl).
 * x (n, C, H, W), weight (F, C, KH, KW), bias (F) unless bias=off,
 * y (n, F, OH, OW). */
#include "elementwise.h"
#include "error.h"
#include "gemm.h"
#include "layer.h"
#include "program.h"

#include <string.h>

typedef struct {
    int filters;
    int relu;             /* 1: the relu after it runs in its kernels (clnet_model_fuse) */
    int k[2], s[2], p[2]; /* kernel, stride, padding: (h, w) */
    clnet_param_init init;
} conv_config;

static void defaults(void *config) {
    conv_config *c = config;
    c->s[0] = c->s[1] = 1;
}

static clnet_status option(void *config, const char *key, const char *value, int *known) {
    conv_config *c = config;
    *known = 1;
    if (strcmp(key, "filters") == 0) return clnet_option_int(key, value, 1, &c->filters);
    if (strcmp(key, "size") == 0) return clnet_option_dims(key, value, 2, 1, c->k);
    if (strcmp(key, "stride") == 0) return clnet_option_dims(key, value, 2, 1, c->s);
    if (strcmp(key, "pad") == 0) return clnet_option_dims(key, value, 2, 0, c->p);
    return clnet_param_init_option(&c->init, key, value, known);
}

static clnet_status check(const void *config) {
    const conv_config *c = config;
    if (c->filters < 1) return clnet_fail(CLNET_ERR_FORMAT, "conv2d needs filters=N with N >= 1");
    if (c->k[0] < 1) return clnet_fail(CLNET_ERR_FORMAT, "conv2d needs size=K (or KHxKW) >= 1");
    return clnet_param_init_check(&c->init);
}

static clnet_status setup(clnet_node *node) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    clnet_shape in = node->in[0];
    if (in.ndim != 2) return clnet_node_fail(node, "takes (C, H, W) inputs");
    int oh = clnet_window_out(in.dim[0], c->k[0], c->s[0], c->p[0]);
    int ow = clnet_window_out(in.dim[1], c->k[1], c->s[1], c->p[1]);
    if (oh < 1 || ow < 1)
        return clnet_node_fail(node, "a %dx%d kernel with padding %dx%d does not fit the input",
                               c->k[0], c->k[1], c->p[0], c->p[1]);
    node->out = clnet_shape_image(c->filters, oh, ow);
    int ckk = in.c * c->k[0] * c->k[1];
    clnet_init w = c->init.weight, b = c->init.bias;
    if (w.kind == CLNET_INIT_DEFAULT) w.kind = CLNET_INIT_KAIMING;
    if (b.kind == CLNET_INIT_DEFAULT) b.kind = CLNET_INIT_ZEROS;
    int fan_out = c->filters * c->k[0] * c->k[1];
    clnet_node_param(node, "weight", 4, (int64_t[]){c->filters, in.c, c->k[0], c->k[1]}, w, ckk,
                     fan_out);
    if (!c->init.no_bias)
        clnet_node_param(node, "bias", 1, (int64_t[]){c->filters}, b, ckk, fan_out);
    return CLNET_OK;
}

static size_t col_floats(const clnet_node *node, int n) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    return (size_t)node->in[0].c * c->k[0] * c->k[1] * (size_t)n * clnet_shape_spatial(node->out);
}

/* im2col's columns, kept for the weight gradient */
static size_t keep_floats(const clnet_node *node, int n) {
    return col_floats(node, n);
}

/* the output in GEMM layout (F, n*P), then the column gradient */
static size_t work_floats(const clnet_node *node, int n) {
    return (size_t)node->out.c * n * clnet_shape_spatial(node->out) + col_floats(node, n);
}

#define WINDOW(node, c, n)                                                                         \
    U32(n), U32((node)->in[0].c), U32((node)->in[0].dim[0]), U32((node)->in[0].dim[1]),            \
        U32((c)->k[0]), U32((c)->k[1]), U32((c)->s[0]), U32((c)->s[1]), U32((c)->p[0]),            \
        U32((c)->p[1]), U32((node)->out.dim[0]), U32((node)->out.dim[1])

/* Without a bias, conv_output is built with -DCONV_BIAS=0 and never reads
 * one (a runtime flag would let the compiler load it anyway). */
static int has_bias(const clnet_node *node) {
    return node->nparams > 1;
}

/* The options of conv_output and conv_grad_output: bias, relu. */
static const char *output_options(const clnet_node *node) {
    static const char *const table[2][2] = {{"-DCONV_BIAS=0", "-DCONV_BIAS=0 -DCONV_RELU=1"},
                                            {"", "-DCONV_RELU=1"}};
    return table[has_bias(node)][CLNET_CONFIG(node, conv_config)->relu];
}

static int fuse_relu(clnet_node *node) {
    CLNET_CONFIG(node, conv_config)->relu = 1;
    return 1;
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    size_t F = (size_t)c->filters, P = clnet_shape_spatial(node->out), NP = (size_t)p->n * P;
    size_t CKK = (size_t)node->in[0].c * c->k[0] * c->k[1];
    size_t wo = node->params[0].offset, bo = has_bias(node) ? node->params[1].offset : 0;
    /* col (CKK, n*P) = im2col(x) */
    size_t planes = (size_t)p->n * node->in[0].c;
    char opt[320];
    clnet_window_options(node, c->k, c->s, c->p, NULL, opt, sizeof opt);
    TRY(clnet_pass_run(
        p, 0, "conv", opt, "im2col", 3,
        (size_t[]){(size_t)node->out.dim[1], (size_t)node->out.dim[0], planes}, NULL,
        ARGS(WINDOW(node, c, p->n), MEM(p->act), U32(p->x[0]), MEM(p->keep), U32(p->keep_off))));
    /* Yp (F, n*P) = W (F, CKK) . col */
    TRY(clnet_gemm(p->d, &(clnet_gemm_shape){0, 0, F, NP, CKK, 'N', p->n}, 1.0f, p->params, wo, CKK,
                   p->keep, p->keep_off, NP, 0.0f, p->work, 0, NP));
    /* y (n, F, P) = Yp permuted + bias */
    TRY(clnet_pass_run(p, 1, "conv", output_options(node), "conv_output", 3,
                       (size_t[]){P, F, (size_t)p->n}, NULL,
                       ARGS(U32(p->n), U32(F), U32(P), MEM(p->work), U32(0), MEM(p->params),
                            U32(bo), MEM(p->act), U32(p->y))));
cleanup:
    return status;
}

/* Forward was Yp = W . col (+ bias), col = im2col(x); so backward is
 * dW = dYp . col^T, dbias = row sums of dYp (with a bias), dcol = W^T . dYp,
 * dx = col2im(dcol). */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    size_t F = (size_t)c->filters, P = clnet_shape_spatial(node->out), NP = (size_t)p->n * P;
    size_t CKK = (size_t)node->in[0].c * c->k[0] * c->k[1];
    size_t wo = node->params[0].offset, bo = has_bias(node) ? node->params[1].offset : 0;
    size_t dcol = F * NP; /* offset of dcol in work, after dYp */
    TRY(clnet_pass_run(p, 2, "conv", output_options(node), "conv_grad_output", 3,
                       (size_t[]){P, F, (size_t)p->n}, NULL,
                       ARGS(U32(p->n), U32(F), U32(P), MEM(p->dact), U32(p->dy), MEM(p->act),
                            U32(p->y), MEM(p->work), U32(0))));
    if (has_bias(node))
        TRY(clnet_row_sums(p->d, clnet_pass_kept(p, 4) /* and 5 */, F, NP, p->work, 0, p->grads, bo,
                           p->beta));
    TRY(clnet_gemm(p->d, &(clnet_gemm_shape){0, 1, F, CKK, NP, 'K', p->n}, 1.0f, p->work, 0, NP,
                   p->keep, p->keep_off, NP, p->beta, p->grads, wo, CKK));
    if (p->need_dx[0]) {
        TRY(clnet_gemm(p->d, &(clnet_gemm_shape){1, 0, CKK, NP, F, 'N', p->n}, 1.0f, p->params, wo,
                       CKK, p->work, 0, NP, 0.0f, p->work, dcol, NP));
        char opt[320];
        clnet_window_options(node, c->k, c->s, c->p, NULL, opt, sizeof opt);
        TRY(clnet_pass_run(p, 3, "conv", opt, "col2im", 3,
                           (size_t[]){(size_t)node->in[0].dim[1], (size_t)node->in[0].dim[0],
                                      (size_t)p->n * node->in[0].c},
                           NULL,
                           ARGS(WINDOW(node, c, p->n), MEM(p->work), U32(dcol), MEM(p->dact),
                                U32(p->dx[0]), F32(p->dx_beta[0]))));
    }
cleanup:
    return status;
}

const clnet_kind clnet_conv2d_kind = {
    .name = "conv2d",
    .stem = "conv",
    .keys = "filters size stride pad bias init std bias_init bias_std",
    .min_inputs = 1,
    .max_inputs = 1,
    .backward_reads = CLNET_READS_Y, /* with a relu taken in */
    .config_size = sizeof(conv_config),
    .defaults = defaults,
    .option = option,
    .check = check,
    .setup = setup,
    .keep_floats = keep_floats,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .fuse_relu = fuse_relu,
};
