/* 2-D convolution: im2col + GEMM (cl/conv.cl, cl/gemm.cl).
 * x (n, C, H, W), weight (F, C, KH, KW), bias (F) unless bias=off,
 * y (n, F, OH, OW). */
#include "elementwise.h"
#include "error.h"
#include "gemm.h"
#include "layer.h"
#include "program.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int filters;
    int relu;             /* 1: the relu after it runs in its kernels (clnet_model_fuse) */
    int k[2], s[2], p[2]; /* kernel, stride, padding: (h, w) */
    int d[2];             /* dilation: taps d apart */
    int same;             /* pad=same: p (left, top) and extra (right, bottom) set by setup */
    int extra[2];         /* padding after the input beyond p: pad=same with an even span */
    int groups;           /* channels and filters in this many independent groups */
    clnet_param_init init;
} conv_config;

static void defaults(void *config) {
    conv_config *c = config;
    c->s[0] = c->s[1] = 1;
    c->d[0] = c->d[1] = 1;
    c->groups = 1;
}

static clnet_status option(void *config, const char *key, const char *value, int *known) {
    conv_config *c = config;
    *known = 1;
    if (strcmp(key, "filters") == 0) return clnet_option_int(key, value, 1, &c->filters);
    if (strcmp(key, "size") == 0) return clnet_option_dims(key, value, 2, 1, c->k);
    if (strcmp(key, "stride") == 0) return clnet_option_dims(key, value, 2, 1, c->s);
    if (strcmp(key, "pad") == 0) {
        c->same = strcmp(value, "same") == 0;
        return c->same ? CLNET_OK : clnet_option_dims(key, value, 2, 0, c->p);
    }
    if (strcmp(key, "dilation") == 0) return clnet_option_dims(key, value, 2, 1, c->d);
    if (strcmp(key, "groups") == 0) return clnet_option_int(key, value, 1, &c->groups);
    return clnet_param_init_option(&c->init, key, value, known);
}

static clnet_status check(const void *config) {
    const conv_config *c = config;
    if (c->filters < 1) return clnet_fail(CLNET_ERR_FORMAT, "conv2d needs filters=N with N >= 1");
    if (c->k[0] < 1) return clnet_fail(CLNET_ERR_FORMAT, "conv2d needs size=K (or KHxKW) >= 1");
    return clnet_param_init_check(&c->init);
}

static clnet_status setup(clnet_node *node) {
    conv_config *c = CLNET_CONFIG(node, conv_config);
    clnet_shape in = node->in[0];
    if (in.ndim != 2) return clnet_node_fail(node, "takes (C, H, W) inputs");
    if (in.c % c->groups || c->filters % c->groups)
        return clnet_node_fail(node,
                               "groups=%d must divide the %d input channels and the %d filters",
                               c->groups, in.c, c->filters);
    /* a dilated kernel spans d*(k-1)+1 inputs */
    int span[2] = {c->d[0] * (c->k[0] - 1) + 1, c->d[1] * (c->k[1] - 1) + 1};
    if (c->same) { /* PyTorch's padding='same': span - 1 zeros, the odd one after */
        if (c->s[0] != 1 || c->s[1] != 1)
            return clnet_node_fail(node, "pad=same needs stride 1, not %dx%d (as in PyTorch)",
                                   c->s[0], c->s[1]);
        for (int i = 0; i < 2; i++) {
            c->p[i] = (span[i] - 1) / 2;
            c->extra[i] = (span[i] - 1) - 2 * c->p[i];
        }
    }
    int oh = clnet_window_out(in.dim[0] + c->extra[0], span[0], c->s[0], c->p[0]);
    int ow = clnet_window_out(in.dim[1] + c->extra[1], span[1], c->s[1], c->p[1]);
    if (oh < 1 || ow < 1)
        return clnet_node_fail(node,
                               "a %dx%d kernel (dilation %dx%d: it spans %dx%d) with padding %dx%d "
                               "does not fit the input",
                               c->k[0], c->k[1], c->d[0], c->d[1], span[0], span[1], c->p[0],
                               c->p[1]);
    node->out = clnet_shape_image(c->filters, oh, ow);
    int ckk = in.c / c->groups * c->k[0] * c->k[1]; /* a filter's inputs: its group's */
    clnet_init w = c->init.weight, b = c->init.bias;
    if (w.kind == CLNET_INIT_DEFAULT) w.kind = CLNET_INIT_KAIMING;
    if (b.kind == CLNET_INIT_DEFAULT) b.kind = CLNET_INIT_ZEROS;
    int fan_out = c->filters * c->k[0] * c->k[1];
    clnet_node_param(node, "weight", 4, (int64_t[]){c->filters, in.c / c->groups, c->k[0], c->k[1]},
                     w, ckk, fan_out);
    if (!c->init.no_bias)
        clnet_node_param(node, "bias", 1, (int64_t[]){c->filters}, b, ckk, fan_out);
    return CLNET_OK;
}

/* The batch runs through im2col and the GEMMs in chunks of samples whose
 * column matrix holds at most CHUNK_FLOATS floats (at least one sample a
 * chunk): it stays in the CPU's caches between im2col and the GEMM that reads
 * it, instead of going out to memory and back (41 MB for LeNet's second
 * convolution at batch 256). Backward makes each chunk's columns again rather
 * than keeping them from forward: the same traffic saved, and no memory held
 * from forward to backward. The chunks depend only on n, so the order of the
 * additions does too. */
#define CHUNK_FLOATS (3u << 20) /* 12 MiB: best of 1, 2, 3, 4, 6 and 8 Mi floats here */

static size_t col_per_sample(const clnet_node *node) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    return (size_t)node->in[0].c * c->k[0] * c->k[1] * clnet_shape_spatial(node->out);
}

/* Samples per chunk for a pass over n: as equal as the chunks can be. */
static int chunk_samples(const clnet_node *node, int n) {
    size_t per = col_per_sample(node), most = per ? CHUNK_FLOATS / per : (size_t)n;
    if (most < 1) most = 1;
    size_t chunks = ((size_t)n + most - 1) / most;
    if (chunks < 1) chunks = 1;
    return (int)(((size_t)n + chunks - 1) / chunks);
}

/* A chunk's output in GEMM layout (F, s*P), then its columns (forward) or
 * their gradient (backward), CKK x s*P. */
static size_t work_floats(const clnet_node *node, int n) {
    size_t s = (size_t)chunk_samples(node, n);
    return (size_t)node->out.c * s * clnet_shape_spatial(node->out) + s * col_per_sample(node);
}

#define WINDOW(node, c, n)                                                                         \
    U32(n), U32((node)->in[0].c), U32((node)->in[0].dim[0]), U32((node)->in[0].dim[1]),            \
        U32((c)->k[0]), U32((c)->k[1]), U32((c)->s[0]), U32((c)->s[1]), U32((c)->p[0]),            \
        U32((c)->p[1]), U32((node)->out.dim[0]), U32((node)->out.dim[1]), U32((c)->d[0]),          \
        U32((c)->d[1])

/* The build options of im2col and col2im: the window and the dilation. */
static void window_options(const clnet_node *node, char *out, size_t cap) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    char dilation[48];
    snprintf(dilation, sizeof dilation, "-DWIN_dh=%du -DWIN_dw=%du", c->d[0], c->d[1]);
    clnet_window_options(node, c->k, c->s, c->p, dilation, out, cap);
}

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

/* What a chunk of samples b0 .. b0+s-1 works on. */
typedef struct {
    int s;
    size_t NP;   /* s * P: the columns of its matrices */
    size_t x, y; /* its input and output (and their gradients) in the arenas */
    size_t col;  /* its column matrix in work, after Yp */
} chunk;

static chunk chunk_at(const clnet_node *node, int b0, int s) {
    chunk ch = {.s = s, .NP = (size_t)s * clnet_shape_spatial(node->out)};
    ch.x = clnet_shape_size(node->in[0]) * (size_t)b0;
    ch.y = clnet_shape_size(node->out) * (size_t)b0;
    ch.col = (size_t)node->out.c * ch.NP;
    return ch;
}

/* col (CKK, s*P) = im2col of the chunk's x */
static clnet_status im2col(const clnet_node *node, const clnet_pass *p, const chunk *ch) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    char opt[360];
    window_options(node, opt, sizeof opt);
    return clnet_pass_run(p, 0, "conv", opt, "im2col", 3,
                          (size_t[]){(size_t)node->out.dim[1], (size_t)node->out.dim[0],
                                     (size_t)ch->s * node->in[0].c},
                          NULL,
                          ARGS(WINDOW(node, c, ch->s), MEM(p->act), U32(p->x[0] + ch->x),
                               MEM(p->work), U32(ch->col)));
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    size_t F = (size_t)c->filters, P = clnet_shape_spatial(node->out);
    size_t CKK = (size_t)node->in[0].c * c->k[0] * c->k[1];
    size_t G = (size_t)c->groups, Fg = F / G, CKKg = CKK / G;
    size_t wo = node->params[0].offset, bo = has_bias(node) ? node->params[1].offset : 0;
    int most = chunk_samples(node, p->n);
    for (int b0 = 0; b0 < p->n; b0 += most) {
        chunk ch = chunk_at(node, b0, p->n - b0 < most ? p->n - b0 : most);
        TRY(im2col(node, p, &ch));
        /* Yp (F, s*P) = W (F, CKK/G) . col, group by group: group g's filters
         * read the rows of col of its channels */
        for (size_t g = 0; g < G; g++)
            TRY(clnet_gemm(p->d, &(clnet_gemm_shape){0, 0, Fg, ch.NP, CKKg, 'N', ch.s}, 1.0f,
                           p->params, wo + g * Fg * CKKg, CKKg, p->work, ch.col + g * CKKg * ch.NP,
                           ch.NP, 0.0f, p->work, g * Fg * ch.NP, ch.NP));
        /* y (s, F, P) = Yp permuted + bias (then the relu, if taken in) */
        TRY(clnet_pass_run(p, 1, "conv", output_options(node), "conv_output", 3,
                           (size_t[]){P, F, (size_t)ch.s}, NULL,
                           ARGS(U32(ch.s), U32(F), U32(P), MEM(p->work), U32(0), MEM(p->params),
                                U32(bo), MEM(p->act), U32(p->y + ch.y))));
    }
cleanup:
    return status;
}

/* Forward was Yp = W . col (+ bias), col = im2col(x); so backward is, chunk
 * by chunk (and group by group), dW += dYp . col^T, dbias += row sums of dYp
 * (with a bias), dcol = W^T . dYp, dx = col2im(dcol). */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    size_t F = (size_t)c->filters, P = clnet_shape_spatial(node->out);
    size_t CKK = (size_t)node->in[0].c * c->k[0] * c->k[1];
    size_t G = (size_t)c->groups, Fg = F / G, CKKg = CKK / G;
    size_t wo = node->params[0].offset, bo = has_bias(node) ? node->params[1].offset : 0;
    int most = chunk_samples(node, p->n);
    char opt[360];
    window_options(node, opt, sizeof opt);
    for (int b0 = 0; b0 < p->n; b0 += most) {
        chunk ch = chunk_at(node, b0, p->n - b0 < most ? p->n - b0 : most);
        float beta = b0 == 0 ? p->beta : 1.0f; /* later chunks add to the first's */
        TRY(clnet_pass_run(p, 2, "conv", output_options(node), "conv_grad_output", 3,
                           (size_t[]){P, F, (size_t)ch.s}, NULL,
                           ARGS(U32(ch.s), U32(F), U32(P), MEM(p->dact), U32(p->dy + ch.y),
                                MEM(p->act), U32(p->y + ch.y), MEM(p->work), U32(0))));
        if (has_bias(node))
            TRY(clnet_row_sums(p->d, clnet_pass_kept(p, 4) /* and 5 */, F, ch.NP, p->work, 0,
                               p->grads, bo, beta));
        TRY(im2col(node, p, &ch));
        for (size_t g = 0; g < G; g++)
            TRY(clnet_gemm(p->d, &(clnet_gemm_shape){0, 1, Fg, CKKg, ch.NP, 'K', ch.s}, 1.0f,
                           p->work, g * Fg * ch.NP, ch.NP, p->work, ch.col + g * CKKg * ch.NP,
                           ch.NP, beta, p->grads, wo + g * Fg * CKKg, CKKg));
        if (!p->need_dx[0]) continue;
        /* dcol over the columns, which the weight gradient has read */
        for (size_t g = 0; g < G; g++)
            TRY(clnet_gemm(p->d, &(clnet_gemm_shape){1, 0, CKKg, ch.NP, Fg, 'N', ch.s}, 1.0f,
                           p->params, wo + g * Fg * CKKg, CKKg, p->work, g * Fg * ch.NP, ch.NP,
                           0.0f, p->work, ch.col + g * CKKg * ch.NP, ch.NP));
        TRY(clnet_pass_run(p, 3, "conv", opt, "col2im", 3,
                           (size_t[]){(size_t)node->in[0].dim[1], (size_t)node->in[0].dim[0],
                                      (size_t)ch.s * node->in[0].c},
                           NULL,
                           ARGS(WINDOW(node, c, ch.s), MEM(p->work), U32(ch.col), MEM(p->dact),
                                U32(p->dx[0] + ch.x), F32(p->dx_beta[0]))));
    }
cleanup:
    return status;
}

const clnet_kind clnet_conv2d_kind = {
    .name = "conv2d",
    .stem = "conv",
    .keys = "filters size stride pad dilation groups bias init std bias_init bias_std",
    .min_inputs = 1,
    .max_inputs = 1,
    /* x: each chunk's columns are made again; y: with a relu taken in */
    .backward_reads = CLNET_READS_X | CLNET_READS_Y,
    .config_size = sizeof(conv_config),
    .defaults = defaults,
    .option = option,
    .check = check,
    .setup = setup,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .fuse_relu = fuse_relu,
};
