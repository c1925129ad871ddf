/* A plain-C, double-precision interpreter of a DAG of CNN layers: the
 * independent answer the graph engine is tested against. Written from scratch
 * with straightforward loops (it shares no code with layers_ref.c, so the two
 * check each other).
 *
 * A worked example, the residual block y = x + conv(x) followed by a loss:
 *
 *     const ref_node nodes[] = {
 *         {.op = REF_CONV2D, .in = {REF_INPUT}, .nin = 1, .filters = 2,
 *          .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .bias = 1},  // 0: (2,5,5)
 *         {.op = REF_ADD, .in = {REF_INPUT, 0}, .nin = 2},                    // 1: (2,5,5)
 *         {.op = REF_LINEAR, .in = {1}, .nin = 1, .units = 3, .bias = 1},    // 2: (3,1,1)
 *         {.op = REF_SOFTMAX_XENT, .in = {2}, .nin = 1},                      // 3: the loss
 *     };
 *     const ref_graph g = {nodes, 4, {2, 5, 5}};
 *     double *params = ...;  // ref_graph_param_count(&g) values
 *     double loss = ref_graph_gradients(&g, params, x, labels, N, dparams, dx);
 *
 * Conventions:
 *  - layout NCHW, double, row-major; a node's output is (N, c, h, w) with its
 *    per-sample shape given by ref_graph_shapes;
 *  - nodes are in topological order: a node reads only earlier nodes or the
 *    graph's input (REF_INPUT); a tensor may be read by any number of nodes,
 *    and the gradient it receives is the sum of what each reader sends back;
 *  - the parameters of the whole graph lie in one array, node by node in node
 *    order, each node's weight then its bias, in PyTorch's layouts: conv2d
 *    weight (F,C,KH,KW) then bias (F); linear weight (O,I) then bias (O);
 *    batchnorm weight (C) then bias (C), always both (its .bias is ignored);
 *  - losses, gradients and the correct count are SUMS over the batch (nothing
 *    is divided by N), and every gradient output is OVERWRITTEN;
 *  - conv and pools have OH = (H + 2*ph - KH) / sh + 1 (floored), likewise OW.
 * Misuse (an impossible graph, a label out of range) prints a message and
 * aborts: this is test code, and it checks even where NDEBUG is defined. */
#ifndef CLNET_REF_GRAPH_H
#define CLNET_REF_GRAPH_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    REF_CONV2D,         /* filters, kh kw, sh sw, ph pw (zero padding), bias */
    REF_RELU,           /* y = max(x, 0) */
    REF_SIGMOID,        /* y = 1 / (1 + e^-x) */
    REF_TANH,           /* y = tanh(x) */
    REF_LEAKY_RELU,     /* y = x > 0 ? x : a x (a: the slope); at 0 the slope is a */
    REF_ELU,            /* y = x > 0 ? x : a (e^x - 1); at 0 the slope is a */
    REF_GELU,           /* y = x Phi(x), or with approx the tanh form of PyTorch's GELU */
    REF_SILU,           /* y = x / (1 + e^-x) */
    REF_HARDSWISH,      /* y = x clamp(x + 3, 0, 6) / 6; slopes -1/2 at -3, 1 at 3 */
    REF_MAXPOOL,        /* kh kw, sh sw, ph pw < kh kw: padding never wins; ties go to the first
                           maximum in row-major window order */
    REF_AVGPOOL,        /* kh kw, sh sw, ph pw: padded zeros counted, divisor kh*kw */
    REF_GLOBAL_AVGPOOL, /* (C,H,W) -> (C,1,1), the mean of each channel's plane */
    REF_LINEAR,         /* units, bias; reads its input flat in (C,H,W) order */
    REF_FLATTEN,        /* (C,H,W) -> (C*H*W,1,1), the same numbers */
    REF_ADD,            /* 2-4 inputs of one shape, summed element by element */
    REF_CONCAT,         /* 2-4 inputs of one spatial size, joined along channels in order */
    REF_BATCHNORM,      /* training mode: each channel normalized by its batch mean and biased
                           variance over N*h*w (>= 2) values, eps 1e-5, then * weight + bias */
    REF_UPSAMPLE,       /* (C,H,W) -> (C,H*kh,W*kw): whole factors kh, kw >= 1; nearest, or with
                           .bilinear PyTorch's bilinear with align_corners=False */
    REF_RESHAPE,        /* the same values as (units, kh, kw) */
    REF_MSE,            /* the losses of a prediction and a target (2 inputs of one shape), last */
    REF_L1,             /* node only: each sample's loss the mean over its elements of */
    REF_BCE,            /* (z - t)^2, |z - t| or BCE(sigmoid(z), t); output z (bce: sigmoid(z)) */
    REF_SOFTMAX_XENT,   /* the loss, last node only: input (K,1,1), softmax then cross-entropy */
    REF_XENT_POSITIONS, /* the loss, last node only: input (K,h,w), softmax over K and cross-
                           entropy at each of the h*w positions against labels (N, h*w), each
                           sample's loss the mean over its positions; correct counts positions */
} ref_op;

enum {
    REF_INPUT = -1,     /* what an input index names for the graph's own input */
    REF_MAX_INPUTS = 4, /* the most inputs a node reads (add, concat) */
};

typedef struct {
    ref_op op;
    int in[REF_MAX_INPUTS];     /* indices of earlier nodes, or REF_INPUT */
    int nin;                    /* how many of in[] are used: 1, or 2-4 for add and concat */
    int filters;                /* conv2d: output channels F */
    int units;                  /* linear: outputs O */
    int kh, kw, sh, sw, ph, pw; /* conv2d and pools: kernel, stride, padding */
    int bias;                   /* conv2d and linear: 1 with a bias, 0 without */
    double a;                   /* leaky_relu's slope, elu's alpha */
    int approx;                 /* gelu: 1 for the tanh form */
    int bilinear;               /* upsample: 1 bilinear, 0 nearest */
} ref_node;

typedef struct {
    int c, h, w;
} ref_shape; /* the shape of one sample; a tensor of N samples is (N, c, h, w) */

typedef struct {
    const ref_node *nodes; /* (count) in topological order */
    int count;
    ref_shape input; /* the per-sample shape of the graph's input */
} ref_graph;

/* Checks the graph and writes every node's output shape into shapes (count)
 * unless it is NULL. Returns 1, or 0 when the graph is impossible: an input
 * that is not an earlier node, a wrong nin, add inputs of different shapes,
 * concat inputs of different spatial sizes, a kernel larger than its padded
 * image, a max pool with ph >= kh or pw >= kw, a loss that is not the last node
 * or whose input is not (K,1,1). The loss node's shape is that of its
 * probabilities, (K,1,1). */
int ref_graph_shapes(const ref_graph *g, ref_shape *shapes);

/* How many parameters the whole graph has. */
size_t ref_graph_param_count(const ref_graph *g);

/* Where node's parameters lie in the graph's array: its weight starts at the
 * returned offset and holds *weight_count values, then its bias holds
 * *bias_count (0 without one). Nodes without parameters report 0 and 0, and
 * the offset where the next node's parameters would begin. Either count may be
 * NULL. */
size_t ref_graph_param_offset(const ref_graph *g, int node, size_t *weight_count,
                              size_t *bias_count);

/* Every node's output of one forward pass, and after ref_graph_backward every
 * node's output gradient. The pass borrows g, params, x and labels: they must
 * stay alive and unchanged until it is freed. */
typedef struct {
    const ref_graph *g;
    const double *params; /* (param_count) */
    const double *x;      /* (N, input.c, input.h, input.w) */
    /* (N) in [0,K) for a graph ending in its loss ((N, h*w) for REF_XENT_POSITIONS), else NULL */
    const int32_t *labels;
    int N;
    ref_shape *shape; /* (count): node i's output is (N, shape[i].c, shape[i].h, shape[i].w) */
    double **y;       /* (count): node outputs; the loss node's holds its probabilities */
    double **dy;      /* (count): dL/dy of each node output once backward ran, else NULL; the
                         loss node's stays zero (the scalar loss is seeded with 1) */
    double loss;      /* the loss summed over the batch; 0 without a loss node */
    int correct;      /* samples whose first maximal logit is their label */
} ref_graph_pass;

/* A forward pass over x (N, input.c, input.h, input.w); labels (N) is needed
 * when the last node is the loss, and may be NULL otherwise. Free with
 * ref_graph_pass_free. */
ref_graph_pass *ref_graph_forward(const ref_graph *g, const double *params, const double *x,
                                  const int32_t *labels, int N);

/* The backward pass of p: the gradients of the scalar L, where L is the summed
 * loss when the graph ends in its loss (dout must then be NULL), and otherwise
 * L = sum(y_last * dout) for dout shaped like the last node's output, so that
 * dL/dy_last = dout. Fills p->dy and overwrites dparams (param_count) and dx
 * (N, input.c, input.h, input.w); either may be NULL. */
void ref_graph_backward(ref_graph_pass *p, const double *dout, double *dparams, double *dx);

/* free(NULL) is harmless, and so is this. */
void ref_graph_pass_free(ref_graph_pass *p);

/* How near p's forward pass came to a point where the gradient jumps: the
 * smallest distance of a relu, leaky_relu or elu input from 0, of a hardswish
 * input from -3 or 3, of an L1 prediction from its target, and of a max-pool
 * window's winner above its runner-up, each divided by the root mean square
 * of that node's input. A float engine that lands on the other side of such
 * a point routes one element's gradient differently, so gradients compared
 * there may differ by far more than rounding. Exact hits (a 0 from a relu
 * upstream, windows of equal zeros, an upsample's copies of one value) count
 * as no distance at all, and so do those under 1e-12 of the rms, which the
 * reference's own rounding moved off the point: no data draws them away. *node (unless NULL) is the
 * node of the smallest; INFINITY and -1 without any such point. */
double ref_graph_kink_margin(const ref_graph_pass *p, int *node);

/* For a graph ending in its loss: the SUM over the batch of the per-sample
 * losses; *correct (unless NULL) counts the samples whose argmax (first
 * maximum) is their label. x (N, input.c, input.h, input.w), labels (N). */
double ref_graph_loss(const ref_graph *g, const double *params, const double *x,
                      const int32_t *labels, int N, int *correct);

/* The same loss, returned, with its gradients: dparams (param_count) and dx
 * (N, input.c, input.h, input.w), both overwritten; either may be NULL. */
double ref_graph_gradients(const ref_graph *g, const double *params, const double *x,
                           const int32_t *labels, int N, double *dparams, double *dx);

#endif
