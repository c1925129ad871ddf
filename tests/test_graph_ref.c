/* Tests of the double-precision graph reference (tests/ref/graph_ref.c)
 * itself, needing no OpenCL device:
 *  - its gradients against fourth-order central differences of its loss, for
 *    every parameter and every input element of branching graphs (one tensor
 *    feeding three nodes, residual blocks, concats of three and four inputs,
 *    batch norm in a residual block and on vectors);
 *  - single-op graphs against the float layer references of layers_ref.c, an
 *    independent implementation that must agree to float precision;
 *  - add, concat and batch norm forward and backward worked out by hand;
 *  - the shapes it accepts and the ones it reports impossible.
 * Prints the largest finite-difference error per graph and the largest
 * difference from layers_ref per op. */
#include "harness.h"
#include "ref/graph_ref.h"
#include "ref/layers_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------ */

/* Largest relative error allowed between a gradient and its finite
 * difference, taken against at least FD_FLOOR so that gradients near zero are
 * compared absolutely (to FD_TOL * FD_FLOOR = 1e-10). */
#define FD_TOL   1e-6
#define FD_FLOOR 1e-4
/* The finite-difference step: a power of two, so that p +- h and p +- 2h are
 * exact for the parameters used here (floats in [-1,1), 24 bits). */
#define FD_STEP (1.0 / 4096)

/* Largest difference allowed between the double graph and the float layer
 * references, relative to max(1, |float value|): a few float roundings. */
#define FLOAT_TOL 1e-6

/* What gradient outputs hold before a call: one that accumulated instead of
 * overwriting would carry it along. */
#define GARBAGE 777.0

static ref_node conv_rect(int in, int filters, int kh, int kw, int sh, int sw, int ph, int pw,
                          int bias) {
    return (ref_node){.op = REF_CONV2D,
                      .in = {in},
                      .nin = 1,
                      .filters = filters,
                      .kh = kh,
                      .kw = kw,
                      .sh = sh,
                      .sw = sw,
                      .ph = ph,
                      .pw = pw,
                      .bias = bias};
}

static ref_node conv(int in, int filters, int k, int stride, int pad, int bias) {
    return conv_rect(in, filters, k, k, stride, stride, pad, pad, bias);
}

static ref_node pool_rect(ref_op op, int in, int kh, int kw, int sh, int sw, int ph, int pw) {
    return (ref_node){
        .op = op, .in = {in}, .nin = 1, .kh = kh, .kw = kw, .sh = sh, .sw = sw, .ph = ph, .pw = pw};
}

static ref_node pool(ref_op op, int in, int k, int stride, int pad) {
    return pool_rect(op, in, k, k, stride, stride, pad, pad);
}

static ref_node unary(ref_op op, int in) {
    return (ref_node){.op = op, .in = {in}, .nin = 1};
}

static ref_node linear(int in, int units, int bias) {
    return (ref_node){.op = REF_LINEAR, .in = {in}, .nin = 1, .units = units, .bias = bias};
}

/* add or concat of nin inputs a, b, c, d (the unused ones ignored) */
static ref_node join(ref_op op, int nin, int a, int b, int c, int d) {
    return (ref_node){.op = op, .in = {a, b, c, d}, .nin = nin};
}

static size_t numel(ref_shape s) {
    return (size_t)s.c * s.h * s.w;
}

static double *alloc_doubles(size_t n) {
    double *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) p[i] = GARBAGE;
    return p;
}

/* n pseudo-random floats in [-scale, scale), as doubles (exactly). */
static double *random_doubles(size_t n, uint64_t seed, double scale) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    ck_assert_ptr_nonnull(f);
    test_random_floats(f, n, seed);
    double *p = alloc_doubles(n);
    for (size_t i = 0; i < n; i++) p[i] = scale * f[i];
    free(f);
    return p;
}

/* labels (N) in [0,K), a different class for neighbouring samples */
static int32_t *make_labels(int N, int K, uint64_t seed) {
    int32_t *labels = malloc((size_t)N * sizeof *labels);
    ck_assert_ptr_nonnull(labels);
    for (int n = 0; n < N; n++) labels[n] = (int32_t)((seed + 3 * (uint64_t)n) % (uint64_t)K);
    return labels;
}

static void expect_doubles(const double *got, const double *want, size_t n, double tol,
                           const char *what) {
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
                      "%s[%zu]: got %.17g, want %.17g", what, i, got[i], want[i]);
}

/* ---- finite differences --------------------------------------------------------------- */

/* The discrete choices a forward pass made: whether each relu input is
 * positive and which pixel wins each max-pool window (the first strict
 * maximum, padding skipped). Central differences only mean something while
 * none of them changes. Writes them into choice unless it is NULL; returns how
 * many there are. */
static size_t choices(const ref_graph_pass *p, int *choice) {
    size_t k = 0;
    for (int i = 0; i < p->g->count; i++) {
        const ref_node *nd = &p->g->nodes[i];
        int in = nd->in[0];
        const double *x = in == REF_INPUT ? p->x : p->y[in];
        ref_shape s = in == REF_INPUT ? p->g->input : p->shape[in], o = p->shape[i];
        if (nd->op == REF_RELU)
            for (size_t j = 0; j < (size_t)p->N * numel(s); j++, k++)
                if (choice) choice[k] = x[j] > 0;
        if (nd->op != REF_MAXPOOL) continue;
        for (int n = 0; n < p->N; n++)
            for (int c = 0; c < s.c; c++)
                for (int oh = 0; oh < o.h; oh++)
                    for (int ow = 0; ow < o.w; ow++, k++) {
                        const double *plane = x + ((size_t)n * s.c + c) * s.h * s.w;
                        int best = -1;
                        for (int kh = 0; kh < nd->kh; kh++)
                            for (int kw = 0; kw < nd->kw; kw++) {
                                int ih = oh * nd->sh - nd->ph + kh, iw = ow * nd->sw - nd->pw + kw;
                                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                                if (best < 0 || plane[ih * s.w + iw] > plane[best])
                                    best = ih * s.w + iw;
                            }
                        if (choice) choice[k] = best;
                    }
    }
    return k;
}

typedef struct {
    const ref_graph *g;
    double *params, *x; // (param_count), (N, C, H, W): perturbed in place
    const int32_t *labels;
    int N;
    const int *choice; // (nchoices): those of the unperturbed pass
    int *scratch;      // (nchoices)
    size_t nchoices;
} fd_case;

/* dL/dv by the fourth-order central difference
 *   (8 (L(v+h) - L(v-h)) - (L(v+2h) - L(v-2h))) / 12h,
 * whose error is O(h^4) on a smooth loss, so that rounding (about 1e-16 |L| / h)
 * is all that is left. Checks that no step changes a relu sign or a max-pool
 * winner, which would put a kink between the points. */
static double fd_derivative(const fd_case *c, double *v, const char *what, size_t index) {
    const double steps[4] = {2 * FD_STEP, FD_STEP, -FD_STEP, -2 * FD_STEP};
    double saved = *v, L[4];
    for (int k = 0; k < 4; k++) {
        *v = saved + steps[k];
        L[k] = ref_graph_loss(c->g, c->params, c->x, c->labels, c->N, NULL);
        if (c->nchoices) {
            ref_graph_pass *p = ref_graph_forward(c->g, c->params, c->x, c->labels, c->N);
            choices(p, c->scratch);
            ref_graph_pass_free(p);
            ck_assert_msg(!memcmp(c->scratch, c->choice, c->nchoices * sizeof *c->choice),
                          "moving %s[%zu] by %g crosses a relu or max-pool kink: choose data "
                          "further from the kinks",
                          what, index, steps[k]);
        }
    }
    *v = saved;
    return (8 * (L[1] - L[2]) - (L[0] - L[3])) / (12 * FD_STEP);
}

/* Checks grad (n), the analytic gradient for v (n), element by element;
 * returns the largest relative error. */
static double fd_check(const fd_case *c, const char *graph, const char *what, double *v,
                       const double *grad, size_t n) {
    double largest = 0;
    for (size_t i = 0; i < n; i++) {
        double numeric = fd_derivative(c, &v[i], what, i);
        double err = fabs(grad[i] - numeric) / fmax(fmax(fabs(grad[i]), fabs(numeric)), FD_FLOOR);
        ck_assert_msg(err < FD_TOL,
                      "%s %s[%zu]: analytic %.12g, finite difference %.12g (relative error %.3g)",
                      graph, what, i, grad[i], numeric, err);
        if (err > largest) largest = err;
    }
    return largest;
}

/* The largest finite-difference error per graph, printed at the end. */
enum { FD_GRAPHS = 8 };
static struct {
    const char *name;
    double worst;
} fd_report[FD_GRAPHS];
static int fd_reported;

/* Every parameter and input gradient of the graph (nodes (count) over input),
 * batch N, against finite differences of ref_graph_loss. */
static void graph_fd(const char *name, const ref_node *nodes, int count, ref_shape input, int N,
                     uint64_t seed) {
    ref_graph g = {nodes, count, input};
    ref_shape *shapes = malloc((size_t)count * sizeof *shapes);
    ck_assert_ptr_nonnull(shapes);
    ck_assert_msg(ref_graph_shapes(&g, shapes), "%s: impossible", name);
    int K = shapes[count - 1].c;
    size_t np = ref_graph_param_count(&g), nx = (size_t)N * numel(input);
    double *params = random_doubles(np, seed, 0.5), *x = random_doubles(nx, seed + 1, 1.0);
    double *dparams = alloc_doubles(np), *dx = alloc_doubles(nx);
    int32_t *labels = make_labels(N, K, seed);

    double loss = ref_graph_gradients(&g, params, x, labels, N, dparams, dx);
    int correct = -1;
    ck_assert(isfinite(loss) && loss > 0);
    ck_assert_double_eq(loss, ref_graph_loss(&g, params, x, labels, N, &correct));
    ck_assert(correct >= 0 && correct <= N);

    ref_graph_pass *p = ref_graph_forward(&g, params, x, labels, N);
    size_t nchoices = choices(p, NULL);
    int *choice = malloc((nchoices + 1) * sizeof *choice);
    int *scratch = malloc((nchoices + 1) * sizeof *scratch);
    ck_assert(choice && scratch);
    choices(p, choice);
    ref_graph_pass_free(p);

    fd_case c = {&g, params, x, labels, N, choice, scratch, nchoices};
    double ep = fd_check(&c, name, "dparams", params, dparams, np);
    double ex = fd_check(&c, name, "dx", x, dx, nx);
    printf("graph %-9s N%d %2d nodes, %4zu params, %3zu inputs, loss %.4f: dparams %.1e dx %.1e\n",
           name, N, count, np, nx, loss, ep, ex);
    ck_assert_int_lt(fd_reported, FD_GRAPHS);
    fd_report[fd_reported].name = name;
    fd_report[fd_reported++].worst = fmax(ep, ex);
    free(shapes), free(params), free(x), free(dparams), free(dx), free(labels), free(choice),
        free(scratch);
}

START_TEST(branches_joined_by_add_and_concat_match_finite_differences) {
    // One tensor "a" feeds three branches; two of them are added, and the sum
    // is concatenated with the third.
    const ref_node nodes[] = {
        conv(REF_INPUT, 4, 3, 1, 1, 1),  // 0: (4,5,7)
        unary(REF_RELU, 0),              // 1: a
        conv(1, 4, 3, 1, 1, 1),          // 2: b1 = conv3x3(a), (4,5,7)
        conv(1, 3, 1, 1, 0, 1),          // 3: b2 = conv1x1(a), (3,5,7)
        unary(REF_TANH, 1),              // 4: b3 = tanh(a), (4,5,7)
        join(REF_ADD, 2, 2, 4, 0, 0),    // 5: b1 + b3, (4,5,7)
        join(REF_CONCAT, 2, 5, 3, 0, 0), // 6: (7,5,7)
        pool(REF_AVGPOOL, 6, 3, 2, 1),   // 7: (7,3,4)
        unary(REF_FLATTEN, 7),           // 8: (84,1,1)
        linear(8, 5, 1),                 // 9: (5,1,1)
        unary(REF_SOFTMAX_XENT, 9),      // 10
    };
    graph_fd("branches", nodes, 11, (ref_shape){3, 5, 7}, 2, 1000);
}
END_TEST

START_TEST(residual_blocks_match_finite_differences) {
    // Two blocks x + conv(x): the graph's input and node 2 are each read twice.
    const ref_node nodes[] = {
        conv(REF_INPUT, 2, 3, 1, 1, 1),       // 0: conv(x), (2,5,3)
        join(REF_ADD, 2, REF_INPUT, 0, 0, 0), // 1: x + conv(x)
        unary(REF_TANH, 1),                   // 2
        conv(2, 2, 3, 1, 1, 0),               // 3: no bias
        join(REF_ADD, 2, 2, 3, 0, 0),         // 4: the second block
        unary(REF_RELU, 4),                   // 5
        pool(REF_MAXPOOL, 5, 3, 2, 1),        // 6: overlapping and padded, (2,3,2)
        linear(6, 4, 1),                      // 7: reads (2,3,2) flat
        unary(REF_SOFTMAX_XENT, 7),           // 8
    };
    graph_fd("residual", nodes, 9, (ref_shape){2, 5, 3}, 3, 2000);
}
END_TEST

START_TEST(concat_of_three_inputs_matches_finite_differences) {
    // The graph's input is one of the three, and also feeds the other two.
    const ref_node nodes[] = {
        conv(REF_INPUT, 3, 1, 1, 0, 0),          // 0: (3,3,5)
        unary(REF_SIGMOID, REF_INPUT),           // 1: (2,3,5)
        join(REF_CONCAT, 3, 0, REF_INPUT, 1, 0), // 2: (7,3,5)
        conv_rect(2, 3, 2, 3, 2, 1, 1, 0, 1),    // 3: (3,2,3)
        linear(3, 3, 0),                         // 4: no bias
        unary(REF_SOFTMAX_XENT, 4),              // 5
    };
    graph_fd("concat3", nodes, 6, (ref_shape){2, 3, 5}, 2, 3000);
}
END_TEST

START_TEST(resnet_tail_matches_finite_differences) {
    // ResNet-18's pattern in small: a basic block of two convolutions without
    // bias around a skip, a strided projection, then global average pooling
    // feeding the classifier directly (its (C,1,1) output read flat).
    const ref_node nodes[] = {
        conv(REF_INPUT, 3, 3, 1, 1, 0),       // 0: (3,7,9), no bias
        unary(REF_RELU, 0),                   // 1
        conv(1, 2, 3, 1, 1, 0),               // 2: (2,7,9)
        join(REF_ADD, 2, REF_INPUT, 2, 0, 0), // 3: x + block(x)
        unary(REF_RELU, 3),                   // 4
        conv(4, 4, 1, 2, 0, 0),               // 5: a 1x1 stride-2 projection, (4,4,5)
        unary(REF_GLOBAL_AVGPOOL, 5),         // 6: (4,1,1)
        linear(6, 3, 1),                      // 7
        unary(REF_SOFTMAX_XENT, 7),           // 8
    };
    graph_fd("resnet", nodes, 9, (ref_shape){2, 7, 9}, 2, 5000);
}
END_TEST

START_TEST(every_op_in_one_graph_matches_finite_differences) {
    // An add of four inputs that names one tensor twice, and a concat of four
    // that names another twice: both get their gradient twice.
    const ref_node nodes[] = {
        conv(REF_INPUT, 2, 3, 1, 1, 1),       // 0: (2,5,7)
        unary(REF_SIGMOID, 0),                // 1
        unary(REF_TANH, REF_INPUT),           // 2
        join(REF_ADD, 4, 1, 2, 1, REF_INPUT), // 3: (2,5,7)
        pool(REF_MAXPOOL, 3, 2, 1, 0),        // 4: (2,4,6)
        pool(REF_AVGPOOL, 3, 2, 1, 0),        // 5: (2,4,6)
        unary(REF_RELU, 5),                   // 6
        join(REF_CONCAT, 4, 4, 5, 6, 4),      // 7: (8,4,6)
        conv(7, 2, 2, 2, 0, 0),               // 8: (2,2,3)
        unary(REF_FLATTEN, 8),                // 9: (12,1,1)
        linear(9, 3, 1),                      // 10
        unary(REF_SOFTMAX_XENT, 10),          // 11
    };
    graph_fd("every_op", nodes, 12, (ref_shape){2, 5, 7}, 2, 4000);
}
END_TEST

START_TEST(upsampling_matches_finite_differences) {
    // Bilinear by 2x3, then nearest by 1x2 of a pool of it: both modes, both axes.
    const ref_node nodes[] = {
        {.op = REF_UPSAMPLE, .in = {REF_INPUT}, .nin = 1, .kh = 2, .kw = 3, .bilinear = 1}, // 0
        unary(REF_TANH, 0),                                          // 1: (2,6,12)
        pool(REF_AVGPOOL, 1, 2, 2, 0),                               // 2: (2,3,6)
        {.op = REF_UPSAMPLE, .in = {2}, .nin = 1, .kh = 1, .kw = 2}, // 3: (2,3,12)
        unary(REF_FLATTEN, 3),                                       // 4: (72,1,1)
        linear(4, 3, 1),                                             // 5
        unary(REF_SOFTMAX_XENT, 5),                                  // 6
    };
    graph_fd("upsample", nodes, 7, (ref_shape){2, 3, 4}, 2, 4100);
}
END_TEST

START_TEST(batchnorm_blocks_match_finite_differences) {
    // ResNet's basic block with batch norm after each convolution (no conv bias), the
    // skip joining after the second; every batch norm couples the samples of the batch.
    const ref_node block[] = {
        conv(REF_INPUT, 3, 3, 1, 1, 0),       // 0: (3,5,6)
        unary(REF_BATCHNORM, 0),              // 1
        unary(REF_RELU, 1),                   // 2
        conv(2, 3, 3, 1, 1, 0),               // 3
        unary(REF_BATCHNORM, 3),              // 4
        join(REF_ADD, 2, REF_INPUT, 4, 0, 0), // 5: x + block(x)
        unary(REF_RELU, 5),                   // 6
        unary(REF_GLOBAL_AVGPOOL, 6),         // 7: (3,1,1)
        linear(7, 4, 1),                      // 8
        unary(REF_SOFTMAX_XENT, 8),           // 9
    };
    graph_fd("bn_block", block, 10, (ref_shape){3, 5, 6}, 3, 6001);
    // Batch norm on the graph's own input, and on vectors (C,1,1) after a linear layer:
    // one value per sample and channel, statistics over the batch alone.
    const ref_node vectors[] = {
        unary(REF_BATCHNORM, REF_INPUT), // 0: (2,3,2)
        linear(0, 5, 0),                 // 1: (5,1,1)
        unary(REF_BATCHNORM, 1),         // 2
        unary(REF_SIGMOID, 2),           // 3
        linear(3, 3, 1),                 // 4
        unary(REF_SOFTMAX_XENT, 4),      // 5
    };
    graph_fd("bn_vector", vectors, 6, (ref_shape){2, 3, 2}, 4, 7000);
}
END_TEST

/* ---- single ops against the float references -------------------------------------------- */

enum { OPS = REF_SOFTMAX_XENT + 1 };
static const char *const op_names[OPS] = {[REF_CONV2D] = "conv2d",
                                          [REF_RELU] = "relu",
                                          [REF_SIGMOID] = "sigmoid",
                                          [REF_TANH] = "tanh",
                                          [REF_LEAKY_RELU] = "leaky_relu",
                                          [REF_ELU] = "elu",
                                          [REF_GELU] = "gelu",
                                          [REF_SILU] = "silu",
                                          [REF_HARDSWISH] = "hardswish",
                                          [REF_MAXPOOL] = "maxpool",
                                          [REF_AVGPOOL] = "avgpool",
                                          [REF_GLOBAL_AVGPOOL] = "global_avgpool",
                                          [REF_LINEAR] = "linear",
                                          [REF_FLATTEN] = "flatten",
                                          [REF_ADD] = "add",
                                          [REF_CONCAT] = "concat",
                                          [REF_BATCHNORM] = "batchnorm",
                                          [REF_UPSAMPLE] = "upsample",
                                          [REF_SOFTMAX_XENT] = "softmax_xent"};
static double float_worst[OPS]; // the largest difference per op, printed at the end
static int float_checked[OPS];

/* Relative difference of the double got (n) from the float want (n), checked
 * against FLOAT_TOL; returns the largest. */
static double compare_float(ref_op op, const char *what, const double *got, const float *want,
                            size_t n) {
    double largest = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]) / fmax(1.0, fabs((double)want[i]));
        ck_assert_msg(d <= FLOAT_TOL, "%s %s[%zu]: graph %.9g, layers_ref %.9g", op_names[op], what,
                      i, got[i], want[i]);
        if (d > largest) largest = d;
    }
    return largest;
}

/* layers_ref's name for an activation of x */
static ref_act act_of(ref_node node) {
    switch (node.op) {
    case REF_LEAKY_RELU:
        return REF_ACT_LEAKY_RELU;
    case REF_ELU:
        return REF_ACT_ELU;
    case REF_GELU:
        return node.approx ? REF_ACT_GELU_TANH : REF_ACT_GELU;
    case REF_SILU:
        return REF_ACT_SILU;
    default:
        return REF_ACT_HARDSWISH;
    }
}

/* An activation with its parameter a (leaky_relu's slope, elu's alpha) or
 * gelu's tanh form (approx). */
static ref_node act(ref_op op, double a, int approx) {
    ref_node n = unary(op, 0);
    n.a = a, n.approx = approx;
    return n;
}

/* The op of node (reading the graph's input, of shape in) followed by the
 * loss, through graph_ref in double and through layers_ref in float, from the
 * same float data: outputs, loss, correct count and every gradient must agree.
 * quantize rounds the inputs to multiples of 1/4, to make max-pool ties and
 * relu zeros common; quantize = 2 to whole numbers from -4 to 4 (hardswish's
 * kinks at -3 and 3). */
static void single_op(ref_node node, ref_shape in, int N, int quantize, uint64_t seed) {
    ref_op op = node.op;
    // node, then flatten unless its output is (K,1,1) already, then the loss;
    // the loss alone when it is the op under test.
    ref_node nodes[3] = {node};
    nodes[0].in[0] = REF_INPUT;
    ref_graph g = {nodes, 1, in};
    ref_shape shapes[3];
    if (op != REF_SOFTMAX_XENT) {
        ck_assert(ref_graph_shapes(&g, shapes));
        if (shapes[0].h != 1 || shapes[0].w != 1) nodes[g.count++] = unary(REF_FLATTEN, 0);
        nodes[g.count] = unary(REF_SOFTMAX_XENT, g.count - 1);
        g.count++;
    }
    ck_assert(ref_graph_shapes(&g, shapes));
    ref_shape out = shapes[0];
    int K = (int)numel(out);
    size_t nx = (size_t)N * numel(in), ny = (size_t)N * K, nw, nb;
    ref_graph_param_offset(&g, 0, &nw, &nb);

    // The same numbers in float and in double.
    float *xf = malloc(nx * sizeof *xf), *wf = malloc((nw + nb + 1) * sizeof *wf);
    ck_assert(xf && wf);
    test_random_floats(xf, nx, seed);
    test_random_floats(wf, nw + nb, seed + 1);
    for (size_t i = 0; i < nx; i++)
        xf[i] = quantize == 2 ? roundf(4 * xf[i]) : quantize ? roundf(4 * xf[i]) / 4 : 2 * xf[i];
    double *x = alloc_doubles(nx), *params = alloc_doubles(nw + nb);
    for (size_t i = 0; i < nx; i++) x[i] = xf[i];
    for (size_t i = 0; i < nw + nb; i++) params[i] = wf[i];
    int32_t *labels = make_labels(N, K, seed);

    // The double graph.
    double *dparams = alloc_doubles(nw + nb), *dx = alloc_doubles(nx);
    ref_graph_pass *p = ref_graph_forward(&g, params, x, labels, N);
    ref_graph_backward(p, NULL, dparams, dx);

    // The float layers: forward, the loss on the output read flat, backward.
    float *yf = malloc(ny * sizeof *yf), *dyf = malloc(ny * sizeof *dyf);
    float *dxf = malloc(nx * sizeof *dxf), *dwf = malloc((nw + nb + 1) * sizeof *dwf);
    ck_assert(yf && dyf && dxf && dwf);
    const float *b = nb ? wf + nw : NULL;
    float *db = nb ? dwf + nw : NULL;
    int F = out.c, H = in.h, W = in.w, C = in.c;
    const ref_upsample up = {2, N, C, {H, W}, {node.kh, node.kw}, node.bilinear};
    switch (op) {
    case REF_CONV2D:
        ref_conv2d_forward(yf, xf, wf, b, N, C, H, W, F, node.kh, node.kw, node.sh, node.sw,
                           node.ph, node.pw);
        break;
    case REF_MAXPOOL:
        ref_maxpool_forward(yf, xf, N, C, H, W, node.kh, node.kw, node.sh, node.sw, node.ph,
                            node.pw);
        break;
    case REF_AVGPOOL:
        ref_avgpool_forward(yf, xf, N, C, H, W, node.kh, node.kw, node.sh, node.sw, node.ph,
                            node.pw);
        break;
    case REF_GLOBAL_AVGPOOL:
        ref_global_avgpool_forward(yf, xf, N, C, H * W);
        break;
    case REF_RELU:
        ref_relu_forward(yf, xf, nx);
        break;
    case REF_SIGMOID:
        ref_sigmoid_forward(yf, xf, nx);
        break;
    case REF_TANH:
        ref_tanh_forward(yf, xf, nx);
        break;
    case REF_LEAKY_RELU:
    case REF_ELU:
    case REF_GELU:
    case REF_SILU:
    case REF_HARDSWISH:
        ref_act_forward(act_of(node), node.a, yf, xf, nx);
        break;
    case REF_LINEAR:
        ref_linear_forward(yf, xf, wf, b, N, (int)numel(in), F);
        break;
    case REF_BATCHNORM:
        ref_batchnorm_forward_train(yf, NULL, NULL, NULL, NULL, xf, wf, b, N, C, H * W, 1e-5f,
                                    0.1f);
        break;
    case REF_UPSAMPLE:
        ref_upsample_forward(yf, xf, &up);
        break;
    case REF_SOFTMAX_XENT:
        memcpy(yf, xf, nx * sizeof *xf);
        break; // the logits themselves
    default:
        ck_abort_msg("layers_ref has no %s", op_names[op]);
    }
    int correct_f = -1;
    float *probs = malloc(ny * sizeof *probs);
    ck_assert_ptr_nonnull(probs);
    double loss_f = ref_softmax_xent_forward(probs, &correct_f, yf, labels, N, K);
    ref_softmax_xent_backward(dyf, yf, labels, N, K);
    switch (op) {
    case REF_CONV2D:
        ref_conv2d_backward(dxf, dwf, db, dyf, xf, wf, N, C, H, W, F, node.kh, node.kw, node.sh,
                            node.sw, node.ph, node.pw);
        break;
    case REF_MAXPOOL:
        ref_maxpool_backward(dxf, dyf, xf, N, C, H, W, node.kh, node.kw, node.sh, node.sw, node.ph,
                             node.pw);
        break;
    case REF_AVGPOOL:
        ref_avgpool_backward(dxf, dyf, N, C, H, W, node.kh, node.kw, node.sh, node.sw, node.ph,
                             node.pw);
        break;
    case REF_GLOBAL_AVGPOOL:
        ref_global_avgpool_backward(dxf, dyf, N, C, H * W);
        break;
    case REF_RELU:
        ref_relu_backward(dxf, dyf, yf, nx);
        break;
    case REF_SIGMOID:
        ref_sigmoid_backward(dxf, dyf, yf, nx);
        break;
    case REF_TANH:
        ref_tanh_backward(dxf, dyf, yf, nx);
        break;
    case REF_LEAKY_RELU:
    case REF_ELU:
    case REF_GELU:
    case REF_SILU:
    case REF_HARDSWISH:
        ref_act_backward(act_of(node), node.a, dxf, dyf, xf, nx);
        break;
    case REF_LINEAR:
        ref_linear_backward(dxf, dwf, db, dyf, xf, wf, N, (int)numel(in), F);
        break;
    case REF_BATCHNORM:
        ref_batchnorm_backward(dxf, dwf, db, dyf, xf, wf, N, C, H * W, 1e-5f);
        break;
    case REF_UPSAMPLE:
        ref_upsample_backward(dxf, dyf, &up);
        break;
    default:
        memcpy(dxf, dyf, nx * sizeof *dyf);
        break; // softmax: dx is dlogits
    }

    // The loss node's output is its probabilities; the op's is node 0's.
    double worst = compare_float(op, "y", p->y[0], op == REF_SOFTMAX_XENT ? probs : yf, ny);
    worst = fmax(worst, compare_float(op, "probs", p->y[g.count - 1], probs, ny));
    ck_assert_msg(fabs(p->loss - loss_f) <= FLOAT_TOL * fmax(1, fabs(loss_f)),
                  "%s loss: graph %.9g, layers_ref %.9g", op_names[op], p->loss, loss_f);
    ck_assert_int_eq(p->correct, correct_f);
    worst = fmax(worst, compare_float(op, "dx", dx, dxf, nx));
    worst = fmax(worst, compare_float(op, "dparams", dparams, dwf, nw + nb));
    printf("%-12s N%d (%d,%d,%d) -> (%d,%d,%d), %zu params: largest difference %.1e\n",
           op_names[op], N, in.c, in.h, in.w, out.c, out.h, out.w, nw + nb, worst);
    if (worst > float_worst[op]) float_worst[op] = worst;
    float_checked[op] = 1;
    ref_graph_pass_free(p);
    free(xf), free(wf), free(x), free(params), free(labels), free(dparams), free(dx), free(yf),
        free(dyf), free(dxf), free(dwf), free(probs);
}

START_TEST(single_ops_agree_with_the_float_references) {
    //        in   F  KH KW sh sw ph pw bias
    single_op(conv_rect(0, 4, 3, 3, 1, 1, 1, 1, 1), (ref_shape){3, 7, 5}, 2, 0, 10);
    single_op(conv_rect(0, 3, 2, 3, 2, 1, 1, 0, 0), (ref_shape){2, 9, 7}, 3, 0, 20);
    single_op(conv_rect(0, 2, 3, 3, 2, 2, 2, 2, 1), (ref_shape){1, 5, 5}, 2, 0, 30);
    single_op(conv_rect(0, 3, 1, 1, 1, 1, 0, 0, 1), (ref_shape){4, 3, 5}, 2, 1, 40);
    single_op(pool(REF_MAXPOOL, 0, 3, 2, 1), (ref_shape){3, 7, 9}, 2, 1, 50); // ties likely
    single_op(pool_rect(REF_MAXPOOL, 0, 2, 3, 2, 2, 1, 2), (ref_shape){2, 5, 7}, 2, 1, 60);
    single_op(pool(REF_MAXPOOL, 0, 2, 1, 0), (ref_shape){2, 5, 3}, 3, 0, 70);
    single_op(pool(REF_AVGPOOL, 0, 3, 2, 1), (ref_shape){3, 7, 9}, 2, 0, 80);
    single_op(pool_rect(REF_AVGPOOL, 0, 2, 3, 1, 2, 1, 1), (ref_shape){2, 5, 7}, 2, 0, 90);
    single_op(unary(REF_GLOBAL_AVGPOOL, 0), (ref_shape){3, 7, 9}, 2, 0, 92);
    single_op(unary(REF_GLOBAL_AVGPOOL, 0), (ref_shape){4, 1, 1}, 3, 0, 94); // the identity
    single_op(unary(REF_GLOBAL_AVGPOOL, 0), (ref_shape){2, 13, 11}, 2, 0, 96);
    single_op(unary(REF_RELU, 0), (ref_shape){3, 5, 3}, 2, 1, 100); // exact zeros
    single_op(unary(REF_SIGMOID, 0), (ref_shape){3, 5, 3}, 2, 0, 110);
    single_op(unary(REF_TANH, 0), (ref_shape){3, 5, 3}, 2, 0, 120);
    single_op(act(REF_LEAKY_RELU, 0.01, 0), (ref_shape){3, 5, 3}, 2, 1, 121); // exact zeros
    single_op(act(REF_LEAKY_RELU, -0.3, 0), (ref_shape){2, 4, 3}, 3, 0, 122);
    single_op(act(REF_ELU, 1, 0), (ref_shape){3, 5, 3}, 2, 1, 123);
    single_op(act(REF_ELU, 0.4, 0), (ref_shape){3, 5, 3}, 1, 0, 124);
    single_op(act(REF_GELU, 0, 0), (ref_shape){3, 5, 3}, 2, 0, 125);
    single_op(act(REF_GELU, 0, 1), (ref_shape){3, 5, 3}, 2, 0, 126);
    single_op(act(REF_SILU, 0, 0), (ref_shape){3, 5, 3}, 2, 0, 127);
    single_op(act(REF_HARDSWISH, 0, 0), (ref_shape){3, 5, 3}, 2, 2, 128); // -3, 0 and 3
    single_op(linear(0, 7, 1), (ref_shape){3, 5, 3}, 2, 0, 130);          // reads (C,H,W) flat
    single_op(linear(0, 5, 0), (ref_shape){11, 1, 1}, 3, 0, 140);
    single_op(unary(REF_BATCHNORM, 0), (ref_shape){3, 4, 5}, 2, 0, 170);
    single_op(unary(REF_BATCHNORM, 0), (ref_shape){5, 1, 1}, 4, 0, 180); // a vector
    single_op(unary(REF_BATCHNORM, 0), (ref_shape){2, 3, 3}, 1, 0, 190); // batch 1
    single_op(unary(REF_BATCHNORM, 0), (ref_shape){4, 1, 1}, 2, 0, 200); // 2 values per channel
    single_op((ref_node){.op = REF_UPSAMPLE, .nin = 1, .kh = 2, .kw = 2}, (ref_shape){2, 3, 5}, 2,
              0, 210);
    single_op((ref_node){.op = REF_UPSAMPLE, .nin = 1, .kh = 2, .kw = 3, .bilinear = 1},
              (ref_shape){2, 3, 4}, 2, 0, 220);
    single_op((ref_node){.op = REF_UPSAMPLE, .nin = 1, .kh = 3, .kw = 1, .bilinear = 1},
              (ref_shape){1, 4, 3}, 3, 0, 230);
    single_op(unary(REF_SOFTMAX_XENT, 0), (ref_shape){7, 1, 1}, 3, 0, 150);
    single_op(unary(REF_SOFTMAX_XENT, 0), (ref_shape){4, 1, 1}, 5, 1, 160); // tied logits
}
END_TEST

/* ---- add and concat by hand ------------------------------------------------------------- */

START_TEST(add_by_hand) {
    // y = x + conv1x1(x) + relu(x): the graph's input is read three times.
    // x (2,2,1,2); conv weight (2,2,1,1) = [1 2; 0 -1], so conv(x) = (x0 + 2 x1, -x1).
    const ref_node nodes[] = {conv(REF_INPUT, 2, 1, 1, 0, 0), unary(REF_RELU, REF_INPUT),
                              join(REF_ADD, 3, REF_INPUT, 0, 1, 0)};
    const ref_graph g = {nodes, 3, {2, 1, 2}};
    const double x[8] = {1, -2, 3, -4, -1, 2, 0.5, -3};
    const double w[4] = {1, 2, 0, -1};
    const double dout[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ck_assert_uint_eq(ref_graph_param_count(&g), 4);
    ref_graph_pass *p = ref_graph_forward(&g, w, x, NULL, 2);
    // sample 0: conv = ([7 -10], [-3 4]), relu = ([1 0], [3 0])
    // sample 1: conv = ([0 -4], [-0.5 3]), relu = ([0 2], [0.5 0])
    expect_doubles(p->y[0], (const double[]){7, -10, -3, 4, 0, -4, -0.5, 3}, 8, 0, "conv y");
    expect_doubles(p->y[2], (const double[]){9, -12, 3, 0, -1, 0, 0.5, 0}, 8, 0, "add y");
    double dx[8], dw[4];
    ref_graph_backward(p, dout, dw, dx);
    // Each reader of the add gets dout whole.
    for (int i = 0; i < 3; i++) expect_doubles(p->dy[i], dout, 8, 0, "dy of an add input");
    // dx = dout (identity) + conv^T dout (dx0 += d0, dx1 += 2 d0 - d1) + dout where x > 0.
    expect_doubles(dx, (const double[]){3, 4, 5, 4, 10, 18, 17, 12}, 8, 0, "dx");
    // dw[f,c] = sum over samples and pixels of dout[f] * x[c].
    expect_doubles(dw, (const double[]){4, -20.5, 4, -27.5}, 4, 0, "dw");
    ref_graph_pass_free(p);

    // add(x, x, x) = 3x, so dx = 3 dout.
    const ref_node thrice[] = {join(REF_ADD, 3, REF_INPUT, REF_INPUT, REF_INPUT, 0)};
    const ref_graph g3 = {thrice, 1, {1, 1, 3}};
    p = ref_graph_forward(&g3, NULL, (const double[]){1, -2, 0.25}, NULL, 1);
    expect_doubles(p->y[0], (const double[]){3, -6, 0.75}, 3, 0, "add(x,x,x) y");
    ref_graph_backward(p, (const double[]){1, 2, 3}, NULL, dx);
    expect_doubles(dx, (const double[]){3, 6, 9}, 3, 0, "add(x,x,x) dx");
    ref_graph_pass_free(p);
}
END_TEST

START_TEST(concat_by_hand) {
    // y = concat(relu(x), x, conv1x1(x)) along channels, x (2,1,1,2), conv
    // weight (2,1,1,1) = [2; -1]: channels relu(x), x, 2x, -x.
    const ref_node nodes[] = {unary(REF_RELU, REF_INPUT), conv(REF_INPUT, 2, 1, 1, 0, 0),
                              join(REF_CONCAT, 3, 0, REF_INPUT, 1, 0)};
    const ref_graph g = {nodes, 3, {1, 1, 2}};
    ref_shape shapes[3];
    ck_assert(ref_graph_shapes(&g, shapes));
    ck_assert_int_eq(shapes[2].c, 4);
    const double x[4] = {1, -2, -3, 5}, w[2] = {2, -1};
    ref_graph_pass *p = ref_graph_forward(&g, w, x, NULL, 2);
    expect_doubles(p->y[2], (const double[]){1, 0, 1, -2, 2, -4, -1, 2, 0, 5, -3, 5, -6, 10, 3, -5},
                   16, 0, "concat y");
    double dout[16], dx[4], dw[2];
    for (int i = 0; i < 16; i++) dout[i] = i + 1;
    ref_graph_backward(p, dout, dw, dx);
    // Each input gets its own channels of dout back: relu channel 0, x channel 1, conv 2 and 3.
    expect_doubles(p->dy[0], (const double[]){1, 2, 9, 10}, 4, 0, "dy of relu");
    expect_doubles(p->dy[1], (const double[]){5, 6, 7, 8, 13, 14, 15, 16}, 8, 0, "dy of conv");
    // dx = dout0 where x > 0, + dout1, + 2 dout2 - dout3.
    expect_doubles(dx, (const double[]){7, 8, 22, 34}, 4, 0, "dx");
    // dw[f] = sum over samples and pixels of dout[2+f] * x.
    expect_doubles(dw, (const double[]){24, 26}, 2, 0, "dw");
    ref_graph_pass_free(p);

    // concat(x, x) copies x twice; its gradient is the sum of both halves.
    const ref_node twice[] = {join(REF_CONCAT, 2, REF_INPUT, REF_INPUT, 0, 0)};
    const ref_graph g2 = {twice, 1, {1, 1, 3}};
    p = ref_graph_forward(&g2, NULL, (const double[]){1, 2, 3}, NULL, 1);
    expect_doubles(p->y[0], (const double[]){1, 2, 3, 1, 2, 3}, 6, 0, "concat(x,x) y");
    ref_graph_backward(p, (const double[]){1, 2, 3, 4, 5, 6}, NULL, dx);
    expect_doubles(dx, (const double[]){5, 7, 9}, 3, 0, "concat(x,x) dx");
    ref_graph_pass_free(p);
}
END_TEST

START_TEST(gradients_are_overwritten_and_backward_repeats) {
    const ref_node nodes[] = {conv(REF_INPUT, 2, 3, 1, 1, 1), join(REF_ADD, 2, REF_INPUT, 0, 0, 0),
                              unary(REF_FLATTEN, 1), unary(REF_SOFTMAX_XENT, 2)};
    const ref_graph g = {nodes, 4, {2, 1, 2}};
    const int N = 2;
    size_t np = ref_graph_param_count(&g), nx = (size_t)N * 4;
    double *params = random_doubles(np, 5, 1), *x = random_doubles(nx, 6, 1);
    double *dp1 = alloc_doubles(np), *dx1 = alloc_doubles(nx);
    double *dp2 = alloc_doubles(np), *dx2 = alloc_doubles(nx);
    int32_t *labels = make_labels(N, 4, 7);
    double loss = ref_graph_gradients(&g, params, x, labels, N, dp1, dx1);
    for (size_t i = 0; i < np; i++) dp2[i] = -1e30;
    ref_graph_pass *p = ref_graph_forward(&g, params, x, labels, N);
    ck_assert_double_eq(p->loss, loss);
    ref_graph_backward(p, NULL, dp2, dx2);
    ref_graph_backward(p, NULL, dp2, dx2); // twice: still the same, nothing doubled
    expect_doubles(dp2, dp1, np, 0, "dparams");
    expect_doubles(dx2, dx1, nx, 0, "dx");
    // The probabilities of each sample sum to 1, and the loss node's dy stays zero.
    for (int n = 0; n < N; n++) {
        double sum = 0;
        for (int k = 0; k < 4; k++) sum += p->y[3][n * 4 + k];
        ck_assert_double_eq_tol(sum, 1, 1e-15);
    }
    for (size_t i = 0; i < nx; i++) ck_assert(p->dy[3][i] == 0);
    ref_graph_pass_free(p);
    ref_graph_pass_free(NULL);
    free(params), free(x), free(dp1), free(dx1), free(dp2), free(dx2), free(labels);
}
END_TEST

/* ref_graph_kink_margin of one node over x (1, 1, 2, 2), and the node it names. */
static double margin_of(ref_node node, const double x[4], int *at) {
    const ref_node nodes[] = {unary(REF_FLATTEN, REF_INPUT), node};
    const ref_graph g = {nodes, 2, {1, 2, 2}};
    ref_graph_pass *p = ref_graph_forward(&g, NULL, x, NULL, 1);
    double margin = ref_graph_kink_margin(p, at);
    ref_graph_pass_free(p);
    return margin;
}

START_TEST(kink_margins_by_hand) {
    // Each divided by the rms of the node's input; exact hits count as none.
    int at;
    double relu = margin_of(unary(REF_RELU, 0), (const double[]){0.5, -0.01, 0, 2}, &at);
    ck_assert_double_eq_tol(relu, 0.01 / sqrt((0.25 + 1e-4 + 4) / 4), 1e-15);
    ck_assert_int_eq(at, 1);
    double hs = margin_of(unary(REF_HARDSWISH, 0), (const double[]){2.9, -3.2, 0, 1}, &at);
    ck_assert_double_eq_tol(hs, 0.1 / sqrt((8.41 + 10.24 + 1) / 4), 1e-14);
    // Max-pool over the four: the winner's lead over the runner-up, a tie none.
    const ref_node pooled[] = {pool(REF_MAXPOOL, REF_INPUT, 2, 2, 0)};
    const ref_graph g = {pooled, 1, {1, 2, 2}};
    ref_graph_pass *p = ref_graph_forward(&g, NULL, (const double[]){1, 0.5, 0.9, -3}, NULL, 1);
    ck_assert_double_eq_tol(ref_graph_kink_margin(p, &at), 0.1 / sqrt(11.06 / 4), 1e-15);
    ck_assert_int_eq(at, 0);
    ref_graph_pass_free(p);
    p = ref_graph_forward(&g, NULL, (const double[]){1, 1, 0, 0}, NULL, 1);
    ck_assert_double_eq_tol(ref_graph_kink_margin(p, NULL), 1 / sqrt(0.5), 1e-15);
    ref_graph_pass_free(p);
    // Nothing with a kink: no margin, no node.
    ck_assert(isinf(margin_of(unary(REF_TANH, 0), (const double[]){0, 1, 2, 3}, &at)));
    ck_assert_int_eq(at, -1);
}
END_TEST

START_TEST(batchnorm_by_hand) {
    // x (N=2, C=2, H=1, W=2): channel 0 holds 1, 3, 5, 7 (mean 4, variance 5), channel 1
    // holds 2, 2, -2, -2 (mean 0, variance 4); weight (2, -1), bias (0.5, 1).
    const ref_node nodes[] = {unary(REF_BATCHNORM, REF_INPUT)};
    const ref_graph g = {nodes, 1, {2, 1, 2}};
    size_t nw = 0, nb = 0;
    ck_assert_uint_eq(ref_graph_param_offset(&g, 0, &nw, &nb), 0);
    ck_assert_uint_eq(nw, 2);
    ck_assert_uint_eq(nb, 2);
    const double x[8] = {1, 3, 2, 2, 5, 7, -2, -2}, params[4] = {2, -1, 0.5, 1};
    ref_graph_pass *p = ref_graph_forward(&g, params, x, NULL, 2);
    double s0 = 1 / sqrt(5 + 1e-5), s1 = 1 / sqrt(4 + 1e-5);
    double want[8];
    for (int i = 0; i < 8; i++) {
        int c = (i / 2) % 2;
        want[i] = c == 0 ? (x[i] - 4) * s0 * 2 + 0.5 : x[i] * s1 * -1 + 1;
    }
    expect_doubles(p->y[0], want, 8, 1e-15, "batchnorm y");
    // A dout constant over each channel: the loss is M * bias plus weight times sum xhat,
    // which is 0 whatever x is, so dx = 0; dbias = sum dout, dweight = sum dout xhat = 0.
    double dx[8], dparams[4];
    ref_graph_backward(p, (const double[]){3, 3, -1, -1, 3, 3, -1, -1}, dparams, dx);
    expect_doubles(dx, (const double[]){0, 0, 0, 0, 0, 0, 0, 0}, 8, 1e-14, "batchnorm dx");
    expect_doubles(dparams, (const double[]){0, 0, 12, -4}, 4, 1e-14, "batchnorm dparams");
    // dout = (1, 0, ...) at x = 1 only: dbias (1, 0), dweight (xhat = -3 s0, 0), and dx
    // sums to zero over each channel.
    ref_graph_backward(p, (const double[]){1, 0, 0, 0, 0, 0, 0, 0}, dparams, dx);
    expect_doubles(dparams, (const double[]){-3 * s0, 0, 1, 0}, 4, 1e-15, "batchnorm dparams");
    ck_assert(fabs(dx[0] + dx[1] + dx[4] + dx[5]) < 1e-15);
    ck_assert(dx[2] == 0 && dx[3] == 0 && dx[6] == 0 && dx[7] == 0);
    ref_graph_pass_free(p);
}
END_TEST

/* ---- shapes ------------------------------------------------------------------------------ */

static int possible(const ref_node *nodes, int count, ref_shape input) {
    return ref_graph_shapes(&(ref_graph){nodes, count, input}, NULL);
}

START_TEST(shapes_and_parameter_layout) {
    const ref_node nodes[] = {conv(REF_INPUT, 4, 3, 1, 1, 1),
                              unary(REF_RELU, 0),
                              conv(1, 4, 3, 1, 1, 1),
                              conv(1, 3, 1, 1, 0, 1),
                              unary(REF_TANH, 1),
                              join(REF_ADD, 2, 2, 4, 0, 0),
                              join(REF_CONCAT, 2, 5, 3, 0, 0),
                              pool(REF_AVGPOOL, 6, 3, 2, 1),
                              unary(REF_FLATTEN, 7),
                              linear(8, 5, 1),
                              unary(REF_SOFTMAX_XENT, 9)};
    const ref_graph g = {nodes, 11, {3, 5, 7}};
    ref_shape s[11];
    ck_assert(ref_graph_shapes(&g, s));
    const ref_shape want[11] = {{4, 5, 7}, {4, 5, 7}, {4, 5, 7},  {3, 5, 7}, {4, 5, 7}, {4, 5, 7},
                                {7, 5, 7}, {7, 3, 4}, {84, 1, 1}, {5, 1, 1}, {5, 1, 1}};
    for (int i = 0; i < 11; i++)
        ck_assert_msg(s[i].c == want[i].c && s[i].h == want[i].h && s[i].w == want[i].w,
                      "node %d: (%d,%d,%d), want (%d,%d,%d)", i, s[i].c, s[i].h, s[i].w, want[i].c,
                      want[i].h, want[i].w);
    // conv 4*3*9 + 4, conv 4*4*9 + 4, conv 3*4 + 3, linear 5*84 + 5; node by node.
    ck_assert_uint_eq(ref_graph_param_count(&g), 112 + 148 + 15 + 425);
    const size_t offsets[11][3] = {{0, 108, 4}, {112, 0, 0},   {112, 144, 4}, {260, 12, 3},
                                   {275, 0, 0}, {275, 0, 0},   {275, 0, 0},   {275, 0, 0},
                                   {275, 0, 0}, {275, 420, 5}, {700, 0, 0}};
    for (int i = 0; i < 11; i++) {
        size_t nw = 99, nb = 99;
        ck_assert_uint_eq(ref_graph_param_offset(&g, i, &nw, &nb), offsets[i][0]);
        ck_assert_uint_eq(nw, offsets[i][1]);
        ck_assert_uint_eq(nb, offsets[i][2]);
    }
    ck_assert_uint_eq(ref_graph_param_offset(&g, 3, NULL, NULL), 260);
}
END_TEST

START_TEST(impossible_shapes_are_reported) {
    const ref_shape in = {3, 5, 7};
    // add: different channel counts, then different spatial sizes.
    const ref_node add_channels[] = {conv(REF_INPUT, 4, 3, 1, 1, 1),
                                     join(REF_ADD, 2, REF_INPUT, 0, 0, 0)};
    ck_assert(!possible(add_channels, 2, in));
    const ref_node add_spatial[] = {conv(REF_INPUT, 3, 3, 1, 0, 1),
                                    join(REF_ADD, 2, REF_INPUT, 0, 0, 0)};
    ck_assert(!possible(add_spatial, 2, in));
    const ref_node add_same[] = {conv(REF_INPUT, 3, 3, 1, 1, 1),
                                 join(REF_ADD, 2, REF_INPUT, 0, 0, 0)};
    ck_assert(possible(add_same, 2, in));
    // concat: a strided conv (3,3,4) beside the input (3,5,7); then one that differs in width only.
    const ref_node cat_spatial[] = {conv(REF_INPUT, 3, 3, 2, 1, 1),
                                    join(REF_CONCAT, 2, REF_INPUT, 0, 0, 0)};
    ck_assert(!possible(cat_spatial, 2, in));
    const ref_node cat_width[] = {conv_rect(REF_INPUT, 2, 1, 3, 1, 1, 0, 0, 1),
                                  join(REF_CONCAT, 3, REF_INPUT, REF_INPUT, 0, 0)};
    ck_assert(!possible(cat_width, 2, in));
    const ref_node cat_channels[] = {conv(REF_INPUT, 2, 3, 1, 1, 1),
                                     join(REF_CONCAT, 3, REF_INPUT, 0, REF_INPUT, 0)};
    ck_assert(possible(cat_channels, 2, in)); // channels may differ
    // Input counts: add and concat take 2-4, the others exactly 1.
    ck_assert(!possible((const ref_node[]){join(REF_ADD, 1, REF_INPUT, 0, 0, 0)}, 1, in));
    ck_assert(!possible((const ref_node[]){join(REF_CONCAT, 5, -1, -1, -1, -1)}, 1, in));
    ck_assert(possible((const ref_node[]){join(REF_CONCAT, 4, -1, -1, -1, -1)}, 1, in));
    ck_assert(!possible((const ref_node[]){join(REF_RELU, 2, -1, -1, 0, 0)}, 1, in));
    // Inputs must be earlier nodes (or the graph's input).
    ck_assert(!possible((const ref_node[]){unary(REF_RELU, 0)}, 1, in));
    ck_assert(!possible(
        (const ref_node[]){unary(REF_RELU, -1), unary(REF_RELU, 2), unary(REF_RELU, 0)}, 3, in));
    ck_assert(!possible((const ref_node[]){unary(REF_RELU, -2)}, 1, in));
    // Kernels larger than the padded image, strides of zero, max pools that could see only padding.
    ck_assert(!possible((const ref_node[]){conv(REF_INPUT, 2, 6, 1, 0, 1)}, 1, in));
    ck_assert(possible((const ref_node[]){conv(REF_INPUT, 2, 6, 1, 1, 1)}, 1, in));
    ck_assert(!possible((const ref_node[]){conv(REF_INPUT, 2, 3, 0, 1, 1)}, 1, in));
    ck_assert(!possible((const ref_node[]){conv(REF_INPUT, 0, 3, 1, 1, 1)}, 1, in));
    ck_assert(!possible((const ref_node[]){pool(REF_MAXPOOL, REF_INPUT, 2, 2, 2)}, 1, in));
    ck_assert(possible((const ref_node[]){pool(REF_AVGPOOL, REF_INPUT, 2, 2, 2)}, 1, in));
    ck_assert(!possible((const ref_node[]){linear(REF_INPUT, 0, 1)}, 1, in));
    // The loss: last node only, on (K,1,1).
    ck_assert(!possible((const ref_node[]){unary(REF_SOFTMAX_XENT, REF_INPUT)}, 1, in));
    ck_assert(possible(
        (const ref_node[]){unary(REF_FLATTEN, REF_INPUT), unary(REF_SOFTMAX_XENT, 0)}, 2, in));
    ck_assert(!possible((const ref_node[]){unary(REF_FLATTEN, REF_INPUT),
                                           unary(REF_SOFTMAX_XENT, 0), unary(REF_RELU, 0)},
                        3, in));
    // An empty graph, or an empty input.
    ck_assert(!ref_graph_shapes(&(ref_graph){NULL, 0, in}, NULL));
    ck_assert(!possible((const ref_node[]){unary(REF_RELU, -1)}, 1, (ref_shape){0, 5, 7}));
}
END_TEST

int main(void) {
    Suite *s = suite_create("graph_ref");
    TCase *t = tcase_create("graph_ref");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, shapes_and_parameter_layout);
    tcase_add_test(t, impossible_shapes_are_reported);
    tcase_add_test(t, add_by_hand);
    tcase_add_test(t, concat_by_hand);
    tcase_add_test(t, gradients_are_overwritten_and_backward_repeats);
    tcase_add_test(t, single_ops_agree_with_the_float_references);
    tcase_add_test(t, branches_joined_by_add_and_concat_match_finite_differences);
    tcase_add_test(t, residual_blocks_match_finite_differences);
    tcase_add_test(t, concat_of_three_inputs_matches_finite_differences);
    tcase_add_test(t, every_op_in_one_graph_matches_finite_differences);
    tcase_add_test(t, upsampling_matches_finite_differences);
    tcase_add_test(t, resnet_tail_matches_finite_differences);
    tcase_add_test(t, kink_margins_by_hand);
    tcase_add_test(t, batchnorm_by_hand);
    tcase_add_test(t, batchnorm_blocks_match_finite_differences);
    suite_add_tcase(s, t);
    int failed = test_run_suite(s);
    printf("largest relative finite-difference error per graph (tolerance %.0e):\n", FD_TOL);
    for (int i = 0; i < fd_reported; i++)
        printf("  %-10s %.2e\n", fd_report[i].name, fd_report[i].worst);
    printf("largest difference from layers_ref per op (tolerance %.0e):\n", FLOAT_TOL);
    for (int op = 0; op < OPS; op++)
        if (float_checked[op]) printf("  %-12s %.2e\n", op_names[op], float_worst[op]);
    return failed ? 1 : 0;
}
