/* Tests of the plain-C layer references (tests/ref/layers_ref.c) themselves,
 * needing no OpenCL device: every backward pass against central finite
 * differences on awkward shapes, and every forward pass against small cases
 * worked out by hand, so that the references are trustworthy judges of the
 * OpenCL kernels. The N-d references are also checked against the 2-D ones
 * at rank 2, and the transposed conv as the adjoint of the conv. Prints the
 * largest relative finite-difference error per layer. */
#include "harness.h"
#include "ref/layers_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------------------- */

/* Largest relative error allowed between a gradient and its finite difference;
 * the error is taken against at least FD_FLOOR, so that gradients near zero
 * (a pixel that wins no max-pool window) are compared absolutely. */
#define FD_TOL   1e-2
#define FD_FLOOR 1e-3

/* Elements past the end of every array, which must survive every call. */
#define GUARD       16
#define GUARD_VALUE 12345.0f
/* What output arrays hold before a call: a backward pass that accumulated
 * into its outputs instead of overwriting them would carry it along. */
#define GARBAGE 777.0f

static float *alloc_floats(size_t n) {
    float *p = malloc((n + GUARD) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) p[i] = GARBAGE;
    for (size_t i = n; i < n + GUARD; i++) p[i] = GUARD_VALUE;
    return p;
}

static void check_guard(const float *p, size_t n, const char *what) {
    for (size_t i = n; i < n + GUARD; i++)
        ck_assert_msg(p[i] == GUARD_VALUE, "%s: written past its end, at element %zu", what, i);
}

static float *random_floats(size_t n, uint64_t seed, float scale) {
    float *p = alloc_floats(n);
    test_random_floats(p, n, seed);
    for (size_t i = 0; i < n; i++) p[i] *= scale;
    return p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rng_next(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* sum_i y[i] * r[i] in double: the scalar loss whose gradient dL/dy is r. */
static double dot(const float *y, const float *r, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)y[i] * r[i];
    return s;
}

static double rel_error(double analytic, double numeric) {
    double scale = fmax(fmax(fabs(analytic), fabs(numeric)), FD_FLOOR);
    return fabs(analytic - numeric) / scale;
}

/* The largest relative error seen per layer, printed at the end. */
enum {
    CONV,
    MAXPOOL,
    AVGPOOL,
    GLOBAL_AVGPOOL,
    RELU,
    SIGMOID,
    TANH,
    LINEAR,
    SOFTMAX_XENT,
    BATCHNORM,
    GLOBAL_MAXPOOL,
    CONVND,
    CONV_TRANSPOSE,
    MAXPOOLND,
    AVGPOOLND,
    ACT_OF_X,
    REGRESSION,
    UPSAMPLE,
    SOFTMAX_XENT_POSITIONS,
    LAYER_COUNT
};
static const char *const layer_names[LAYER_COUNT] = {"conv2d",
                                                     "maxpool",
                                                     "avgpool",
                                                     "global_avgpool",
                                                     "relu",
                                                     "sigmoid",
                                                     "tanh",
                                                     "linear",
                                                     "softmax_xent",
                                                     "batchnorm",
                                                     "global_maxpool",
                                                     "convnd",
                                                     "conv_transpose",
                                                     "maxpoolnd",
                                                     "avgpoolnd",
                                                     "activation of x",
                                                     "regression loss",
                                                     "upsample",
                                                     "softmax_xent_positions"};
static double worst[LAYER_COUNT];

/* The finite-difference step per layer. The forward passes are float, so a
 * difference carries the rounding of the outputs it moves (about 1e-7 of |y|)
 * divided by the step: the step should be as large as the layer allows.
 *  - conv (N-d and transposed too), the average pools and linear are affine in
 *    every single input and weight, so central differences are exact for any
 *    step: take a large one (upsampling too: a fixed linear map);
 *  - relu and maxpool are piecewise linear, exact as long as the step crosses
 *    no kink: the tests keep inputs 0.1 from relu's kink and max-pool inputs
 *    0.05 apart, so 1e-2 crosses none;
 *  - sigmoid, tanh, softmax and batch norm are smooth: the error of a central
 *    difference is ~step^2 times the third derivative, small at 1e-2. Batch
 *    norm is affine in its weight and bias, so those steps are exact. */
static const float layer_eps[LAYER_COUNT] = {[CONV] = 0.25f,
                                             [AVGPOOL] = 0.25f,
                                             [GLOBAL_AVGPOOL] = 0.25f,
                                             [LINEAR] = 0.25f,
                                             [RELU] = 1e-2f,
                                             [MAXPOOL] = 1e-2f,
                                             [SIGMOID] = 1e-2f,
                                             [TANH] = 1e-2f,
                                             [SOFTMAX_XENT] = 1e-2f,
                                             [BATCHNORM] = 1e-2f,
                                             [GLOBAL_MAXPOOL] = 1e-2f,
                                             [CONVND] = 0.25f,
                                             [CONV_TRANSPOSE] = 0.25f,
                                             [AVGPOOLND] = 0.25f,
                                             [MAXPOOLND] = 1e-2f,
                                             [ACT_OF_X] = 1e-2f,
                                             [REGRESSION] = 1e-2f,
                                             [UPSAMPLE] = 0.25f,
                                             [SOFTMAX_XENT_POSITIONS] = 1e-2f};

typedef double (*loss_fn)(void *ctx);

/* Checks grad (n), the analytic dL/dp, against central differences of loss in
 * every element of p (n); returns the largest relative error. The step is the
 * one float rounding really made, not the nominal one. */
static double fd_check(int layer, const char *what, loss_fn loss, void *ctx, float *p,
                       const float *grad, size_t n) {
    double largest = 0;
    for (size_t i = 0; i < n; i++) {
        float saved = p[i];
        p[i] = saved + layer_eps[layer];
        float up = p[i];
        double loss_up = loss(ctx);
        p[i] = saved - layer_eps[layer];
        float down = p[i];
        double loss_down = loss(ctx);
        p[i] = saved;
        double numeric = (loss_up - loss_down) / ((double)up - down);
        double err = rel_error(grad[i], numeric);
        ck_assert_msg(err < FD_TOL,
                      "%s %s[%zu]: analytic %.7g, finite difference %.7g (relative error %.3g)",
                      layer_names[layer], what, i, grad[i], numeric, err);
        if (err > largest) largest = err;
    }
    if (largest > worst[layer]) worst[layer] = largest;
    return largest;
}

static void expect_floats(const float *got, const float *want, size_t n, double tol,
                          const char *what) {
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
                      "%s[%zu]: got %.9g, want %.9g", what, i, got[i], want[i]);
}

/* ---- conv2d: finite differences ---------------------------------------------------- */

typedef struct {
    int N, C, H, W, F, KH, KW, sh, sw, ph, pw, bias;
    int dh, dw, G; /* dilation and groups (PyTorch's Conv2d) */
} conv_shape;

typedef struct {
    conv_shape s;
    float *x, *w, *b, *y, *r; // (N,C,H,W) (F,C,KH,KW) (F) (N,F,OH,OW) (N,F,OH,OW)
} conv_case;

static double conv_loss(void *ctx) {
    conv_case *c = ctx;
    conv_shape s = c->s;
    ref_conv2d_full_forward(c->y, c->x, c->w, c->b, s.N, s.C, s.H, s.W, s.F, s.KH, s.KW, s.sh, s.sw,
                            s.ph, s.pw, s.dh, s.dw, s.G);
    size_t ny = (size_t)s.N * s.F * ref_out_size(s.H, s.dh * (s.KH - 1) + 1, s.sh, s.ph) *
                ref_out_size(s.W, s.dw * (s.KW - 1) + 1, s.sw, s.pw);
    return dot(c->y, c->r, ny);
}

static void conv_fd(conv_shape s, uint64_t seed) {
    if (!s.dh) s.dh = s.dw = s.G = 1; /* the plain cases leave them out */
    size_t OH = ref_out_size(s.H, s.dh * (s.KH - 1) + 1, s.sh, s.ph);
    size_t OW = ref_out_size(s.W, s.dw * (s.KW - 1) + 1, s.sw, s.pw);
    size_t nx = (size_t)s.N * s.C * s.H * s.W, nw = (size_t)s.F * (s.C / s.G) * s.KH * s.KW;
    size_t ny = (size_t)s.N * s.F * OH * OW;
    conv_case c = {.s = s,
                   .x = random_floats(nx, seed, 1.0f),
                   .w = random_floats(nw, seed + 1, 1.0f),
                   .b = s.bias ? random_floats((size_t)s.F, seed + 2, 1.0f) : NULL,
                   .y = alloc_floats(ny),
                   .r = random_floats(ny, seed + 3, 1.0f)};
    float *dx = alloc_floats(nx), *dw = alloc_floats(nw), *db = alloc_floats((size_t)s.F);
    conv_loss(&c);
    check_guard(c.y, ny, "conv y");
    // L = sum(y * r), so dL/dy = r.
    ref_conv2d_full_backward(dx, dw, s.bias ? db : NULL, c.r, c.x, c.w, s.N, s.C, s.H, s.W, s.F,
                             s.KH, s.KW, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, s.G);
    check_guard(dx, nx, "conv dx");
    check_guard(dw, nw, "conv dw");
    check_guard(db, (size_t)s.F, "conv db");
    if (!s.bias)
        for (int f = 0; f < s.F; f++)
            ck_assert_msg(db[f] == GARBAGE, "db was NULL, yet something was written");

    double ex = fd_check(CONV, "dx", conv_loss, &c, c.x, dx, nx);
    double ew = fd_check(CONV, "dw", conv_loss, &c, c.w, dw, nw);
    double eb = s.bias ? fd_check(CONV, "db", conv_loss, &c, c.b, db, (size_t)s.F) : 0;
    printf("conv2d  N%d C%d %2dx%-2d F%d k%dx%d s%dx%d p%dx%d d%dx%d g%d%s -> %zux%zu: "
           "dx %.1e dw %.1e db %.1e\n",
           s.N, s.C, s.H, s.W, s.F, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, s.G,
           s.bias ? " bias" : "", OH, OW, ex, ew, eb);
    free(c.x), free(c.w), free(c.b), free(c.y), free(c.r), free(dx), free(dw), free(db);
}

START_TEST(conv2d_backward_matches_finite_differences) {
    // N  C  H   W  F KH KW sh sw ph pw bias
    const conv_shape shapes[] = {
        {2, 2, 5, 4, 3, 3, 3, 1, 1, 1, 1, 1, 0, 0, 0},   // small, every element
        {1, 3, 7, 9, 2, 3, 3, 1, 1, 0, 0, 1, 0, 0, 0},   // batch 1, 7x9
        {2, 3, 13, 11, 4, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0}, // 13x11, 1x1 kernel
        {1, 2, 7, 9, 2, 2, 2, 3, 3, 0, 0, 1, 0, 0,
         0}, // stride larger than the kernel: pixels unused
        {2, 2, 7, 9, 2, 3, 3, 1, 1, 2, 2, 1, 0, 0, 0},   // pad larger than half the kernel
        {1, 2, 7, 9, 3, 3, 3, 2, 2, 2, 2, 1, 0, 0, 0},   // ... and strided
        {2, 2, 13, 11, 2, 3, 2, 2, 1, 1, 0, 1, 0, 0, 0}, // non-square kernel, stride and pad
        {1, 1, 7, 9, 2, 2, 3, 3, 2, 1, 2, 1, 0, 0, 0},   // 2x3 kernel, pw = KW - 1, stride > kernel
        {2, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},   // no bias, db NULL
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0},   // one pixel
        {1, 2, 2, 3, 2, 3, 3, 1, 1, 1, 1, 1, 0, 0, 0},   // image smaller than the kernel
        // N  C  H   W  F KH KW sh sw ph pw bias dh dw G
        {2, 2, 11, 9, 3, 3, 2, 1, 1, 2, 1, 1, 3, 2, 1}, // dilation 3x2
        {2, 4, 7, 6, 6, 3, 3, 1, 2, 1, 1, 1, 1, 1, 2},  // 2 groups, strided
        {1, 3, 7, 9, 3, 3, 3, 2, 1, 2, 1, 0, 2, 1, 3},  // depthwise, dilated, no bias
        {2, 4, 9, 9, 8, 2, 2, 3, 3, 0, 0, 1, 3, 3, 4},  // 4 groups, dilation = stride
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) conv_fd(shapes[i], 100 + 10 * i);
}
END_TEST

/* ---- pools: finite differences ------------------------------------------------------ */

typedef struct {
    int N, C, H, W, KH, KW, sh, sw, ph, pw;
} pool_shape;

typedef struct {
    pool_shape s;
    int max; // 1 max pool, 0 average pool
    float *x, *y, *r;
} pool_case;

static size_t pool_out_count(pool_shape s) {
    return (size_t)s.N * s.C * ref_out_size(s.H, s.KH, s.sh, s.ph) *
           ref_out_size(s.W, s.KW, s.sw, s.pw);
}

static double pool_loss(void *ctx) {
    pool_case *c = ctx;
    pool_shape s = c->s;
    if (c->max)
        ref_maxpool_forward(c->y, c->x, s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw);
    else
        ref_avgpool_forward(c->y, c->x, s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw);
    return dot(c->y, c->r, pool_out_count(s));
}

/* n distinct values 0.05 apart, shuffled: no window holds a tie, and a step
 * below 0.025 cannot change which pixel wins, so max pooling is
 * differentiable at every point the test visits. */
static void distinct_values(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = 0.05f * ((float)i - (float)n / 2);
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_next() % i;
        float t = x[i - 1];
        x[i - 1] = x[j];
        x[j] = t;
    }
}

static void pool_fd(pool_shape s, int max, uint64_t seed) {
    size_t nx = (size_t)s.N * s.C * s.H * s.W, ny = pool_out_count(s);
    pool_case c = {.s = s,
                   .max = max,
                   .x = random_floats(nx, seed, 1.0f),
                   .y = alloc_floats(ny),
                   .r = random_floats(ny, seed + 1, 1.0f)};
    if (max) distinct_values(c.x, nx);
    float *dx = alloc_floats(nx);
    pool_loss(&c);
    check_guard(c.y, ny, max ? "maxpool y" : "avgpool y");
    if (max)
        ref_maxpool_backward(dx, c.r, c.x, s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw);
    else
        ref_avgpool_backward(dx, c.r, s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw);
    check_guard(dx, nx, max ? "maxpool dx" : "avgpool dx");
    double ex = fd_check(max ? MAXPOOL : AVGPOOL, "dx", pool_loss, &c, c.x, dx, nx);
    printf("%s N%d C%d %2dx%-2d k%dx%d s%dx%d p%dx%d -> %dx%d: dx %.1e\n",
           max ? "maxpool" : "avgpool", s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw,
           ref_out_size(s.H, s.KH, s.sh, s.ph), ref_out_size(s.W, s.KW, s.sw, s.pw), ex);
    free(c.x), free(c.y), free(c.r), free(dx);
}

// N  C  H   W  KH KW sh sw ph pw
static const pool_shape pool_shapes[] = {
    {2, 2, 4, 4, 2, 2, 2, 2, 0, 0},   // small, the classic 2x2/2
    {1, 2, 7, 9, 3, 3, 2, 2, 0, 0},   // batch 1, overlapping windows, 7x9
    {2, 1, 13, 11, 3, 3, 2, 2, 1, 1}, // overlapping and padded, 13x11
    {1, 2, 7, 9, 2, 2, 3, 3, 0, 0},   // stride larger than the kernel: pixels unused
    {2, 1, 7, 9, 3, 3, 1, 1, 2, 2},   // pad = kernel - 1, stride 1: corner windows see one pixel
    {1, 2, 7, 9, 2, 2, 2, 2, 1, 1},   // pad = kernel - 1, strided
    {1, 1, 13, 11, 3, 2, 2, 1, 2, 1}, // non-square kernel, pad = kernel - 1 both ways
    {2, 3, 5, 4, 1, 1, 1, 1, 0, 0},   // 1x1 kernel: identity
    {1, 1, 2, 3, 3, 3, 1, 1, 1, 1},   // image barely bigger than padding
};

START_TEST(maxpool_backward_matches_finite_differences) {
    for (size_t i = 0; i < sizeof pool_shapes / sizeof pool_shapes[0]; i++)
        pool_fd(pool_shapes[i], 1, 200 + 10 * i);
}
END_TEST

START_TEST(avgpool_backward_matches_finite_differences) {
    for (size_t i = 0; i < sizeof pool_shapes / sizeof pool_shapes[0]; i++)
        pool_fd(pool_shapes[i], 0, 300 + 10 * i);
}
END_TEST

/* ---- global pooling (average, max): finite differences ---------------------------------- */

typedef struct {
    int layer; /* GLOBAL_AVGPOOL or GLOBAL_MAXPOOL */
    int N, C, S;
    float *x, *y, *r; // (N,C,S) (N,C) (N,C)
} global_pool_case;

static double global_pool_loss(void *ctx) {
    global_pool_case *c = ctx;
    if (c->layer == GLOBAL_MAXPOOL)
        ref_global_maxpool_forward(c->y, c->x, c->N, c->C, c->S);
    else
        ref_global_avgpool_forward(c->y, c->x, c->N, c->C, c->S);
    return dot(c->y, c->r, (size_t)c->N * c->C);
}

/* Each shape N C H W: odd sizes, a 1x1 plane (the identity), a plane of 143. Max pooling gets
 * distinct inputs 0.05 apart, so that no step changes a plane's winner. */
static void global_pool_fd(int layer, uint64_t seed) {
    const int shapes[][4] = {{2, 3, 7, 9}, {3, 2, 1, 1}, {1, 2, 13, 11}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int N = shapes[k][0], C = shapes[k][1], S = shapes[k][2] * shapes[k][3];
        size_t nx = (size_t)N * C * S, ny = (size_t)N * C;
        global_pool_case c = {.layer = layer,
                              .N = N,
                              .C = C,
                              .S = S,
                              .x = random_floats(nx, seed + k, 1.0f),
                              .y = alloc_floats(ny),
                              .r = random_floats(ny, seed + 10 + k, 1.0f)};
        if (layer == GLOBAL_MAXPOOL)
            for (size_t i = 0; i < nx; i++) c.x[i] = 0.05f * (float)((i * 7919) % nx) - 1.0f;
        float *dx = alloc_floats(nx);
        global_pool_loss(&c);
        check_guard(c.y, ny, "global pool y");
        if (layer == GLOBAL_MAXPOOL)
            ref_global_maxpool_backward(dx, c.r, c.x, N, C, S);
        else
            ref_global_avgpool_backward(dx, c.r, N, C, S);
        check_guard(dx, nx, "global pool dx");
        double ex = fd_check(layer, "dx", global_pool_loss, &c, c.x, dx, nx);
        printf("%s N%d C%d %2dx%-2d: dx %.1e\n", layer_names[layer], N, C, shapes[k][2],
               shapes[k][3], ex);
        free(c.x), free(c.y), free(c.r), free(dx);
    }
}

START_TEST(global_avgpool_backward_matches_finite_differences) {
    global_pool_fd(GLOBAL_AVGPOOL, 350);
}
END_TEST

START_TEST(global_maxpool_backward_matches_finite_differences_and_picks_the_first_tie) {
    global_pool_fd(GLOBAL_MAXPOOL, 360);
    /* ties go to the first, a NaN wins (the last one), as in PyTorch */
    const float x[2][5] = {{1, 3, 2, 3, 0}, {1, NAN, 5, NAN, 2}};
    const float dy[2] = {10, 20};
    float y[2], dx[2][5];
    ref_global_maxpool_forward(y, &x[0][0], 1, 2, 5);
    ref_global_maxpool_backward(&dx[0][0], dy, &x[0][0], 1, 2, 5);
    ck_assert(y[0] == 3 && isnan(y[1]));
    ck_assert(dx[0][1] == 10 && dx[0][3] == 0 && dx[1][3] == 20 && dx[1][1] == 0);
}
END_TEST

/* ---- activations: finite differences ----------------------------------------------- */

typedef struct {
    int layer;
    size_t n;
    float *x, *y, *r;
} act_case;

static void act_forward(int layer, float *y, const float *x, size_t n) {
    if (layer == RELU) ref_relu_forward(y, x, n);
    if (layer == SIGMOID) ref_sigmoid_forward(y, x, n);
    if (layer == TANH) ref_tanh_forward(y, x, n);
}

static void act_backward(int layer, float *dx, const float *dy, const float *y, size_t n) {
    if (layer == RELU) ref_relu_backward(dx, dy, y, n);
    if (layer == SIGMOID) ref_sigmoid_backward(dx, dy, y, n);
    if (layer == TANH) ref_tanh_backward(dx, dy, y, n);
}

static double act_loss(void *ctx) {
    act_case *c = ctx;
    act_forward(c->layer, c->y, c->x, c->n);
    return dot(c->y, c->r, c->n);
}

START_TEST(activations_backward_match_finite_differences) {
    const int layers[] = {RELU, SIGMOID, TANH};
    for (int l = 0; l < 3; l++) {
        size_t n = 37;
        act_case c = {.layer = layers[l],
                      .n = n,
                      .x = random_floats(n, 400 + l, 4.0f),
                      .y = alloc_floats(n),
                      .r = random_floats(n, 410 + l, 1.0f)};
        // relu has a kink at 0: keep every input well away from it.
        for (size_t i = 0; i < n; i++)
            if (fabsf(c.x[i]) < 0.1f) c.x[i] = c.x[i] < 0 ? c.x[i] - 0.1f : c.x[i] + 0.1f;
        float *dx = alloc_floats(n);
        act_loss(&c);
        act_backward(c.layer, dx, c.r, c.y, n);
        check_guard(c.y, n, "activation y");
        check_guard(dx, n, "activation dx");
        double ex = fd_check(c.layer, "dx", act_loss, &c, c.x, dx, n);
        printf("%-7s n%zu: dx %.1e\n", layer_names[c.layer], n, ex);
        free(c.x), free(c.y), free(c.r), free(dx);
    }
}
END_TEST

/* The activations of x: each with a parameter where it takes one (a slope of
 * 0.2 and an alpha of 1.5, so that neither is the default), inputs 0.1 or more
 * from every kink (0 and, for hardswish, -3 and 3), and some beyond +-3. */
typedef struct {
    ref_act f;
    double a;
    size_t n;
    float *x, *y, *r;
} act_x_case;

static double act_x_loss(void *ctx) {
    act_x_case *c = ctx;
    ref_act_forward(c->f, c->a, c->y, c->x, c->n);
    return dot(c->y, c->r, c->n);
}

static int near_kink(float v) {
    return fabsf(v) < 0.1f || fabsf(fabsf(v) - 3) < 0.1f;
}

START_TEST(activations_of_x_backward_match_finite_differences) {
    static const char *const names[] = {"leaky_relu", "elu",  "gelu",
                                        "gelu_tanh",  "silu", "hardswish"};
    static const double params[] = {0.2, 1.5, 0, 0, 0, 0};
    for (int f = REF_ACT_LEAKY_RELU; f <= REF_ACT_HARDSWISH; f++) {
        size_t n = 61;
        act_x_case c = {.f = (ref_act)f,
                        .a = params[f],
                        .n = n,
                        .x = random_floats(n, 420 + f, 5.0f),
                        .y = alloc_floats(n),
                        .r = random_floats(n, 430 + f, 1.0f)};
        for (size_t i = 0; i < n; i++)
            while (near_kink(c.x[i])) c.x[i] += 0.07f;
        float *dx = alloc_floats(n);
        act_x_loss(&c);
        ref_act_backward(c.f, c.a, dx, c.r, c.x, n);
        check_guard(c.y, n, "activation y");
        check_guard(dx, n, "activation dx");
        double ex = fd_check(ACT_OF_X, "dx", act_x_loss, &c, c.x, dx, n);
        printf("%-10s n%zu: dx %.1e\n", names[f], n, ex);
        free(c.x), free(c.y), free(c.r), free(dx);
    }
}
END_TEST

/* ---- regression losses: finite differences and by hand ------------------------------------ */

typedef struct {
    ref_loss f;
    int N, E;
    float *z, *t;
} regression_case;

static double regression_loss(void *ctx) {
    regression_case *c = ctx;
    return ref_regression_forward(c->f, NULL, c->z, c->t, c->N, c->E);
}

START_TEST(regression_losses_match_finite_differences_in_prediction_and_target) {
    static const char *const names[] = {"mse", "l1", "bce_with_logits"};
    for (int f = REF_LOSS_MSE; f <= REF_LOSS_BCE; f++) {
        regression_case c = {.f = (ref_loss)f, .N = 3, .E = 13};
        size_t n = (size_t)c.N * c.E;
        c.z = random_floats(n, 440 + f, 3.0f), c.t = random_floats(n, 450 + f, 1.0f);
        for (size_t i = 0; i < n; i++) { // l1's kink where z = t: 0.1 away at least
            if (f == REF_LOSS_L1 && fabsf(c.z[i] - c.t[i]) < 0.1f) c.z[i] = c.t[i] + 0.1f;
            if (f == REF_LOSS_BCE) c.t[i] = 0.5f + 0.5f * c.t[i];
        }
        float *dz = alloc_floats(n), *dt = alloc_floats(n);
        ref_regression_backward(c.f, dz, dt, c.z, c.t, c.N, c.E);
        check_guard(dz, n, "regression dz");
        check_guard(dt, n, "regression dt");
        double ez = fd_check(REGRESSION, "dz", regression_loss, &c, c.z, dz, n);
        double et = fd_check(REGRESSION, "dt", regression_loss, &c, c.t, dt, n);
        printf("%-16s N%d E%d: dz %.1e dt %.1e\n", names[f], c.N, c.E, ez, et);
        free(c.z), free(c.t), free(dz), free(dt);
    }
}
END_TEST

START_TEST(regression_losses_by_hand) {
    // one sample of two elements: z = (1, -2) against t = (0, 1)
    const float z[2] = {1, -2}, t[2] = {0, 1};
    float out[2], dz[2], dt[2];
    // mse: (1 + 9) / 2 = 5, gradients 2 (z - t) / 2 = (1, -3)
    ck_assert_double_eq_tol(ref_regression_forward(REF_LOSS_MSE, out, z, t, 1, 2), 5, 1e-12);
    expect_floats(out, z, 2, 0, "mse out");
    ref_regression_backward(REF_LOSS_MSE, dz, dt, z, t, 1, 2);
    expect_floats(dz, (const float[]){1, -3}, 2, 0, "mse dz");
    expect_floats(dt, (const float[]){-1, 3}, 2, 0, "mse dt");
    // l1: (1 + 3) / 2 = 2, gradients (1/2, -1/2); 0 where z = t
    ck_assert_double_eq_tol(ref_regression_forward(REF_LOSS_L1, out, z, t, 1, 2), 2, 1e-12);
    ref_regression_backward(REF_LOSS_L1, dz, dt, z, z, 1, 2);
    expect_floats(dz, (const float[]){0, 0}, 2, 0, "l1 dz at z = t");
    // bce at z = 0: log 2 whatever the target; z = ln 3 against 1: log(4/3), dz (3/4 - 1)
    const float zb[2] = {0, (float)log(3.0)}, tb[2] = {0.3f, 1};
    double want = (log(2.0) + log(4.0 / 3)) / 2;
    ck_assert_double_eq_tol(ref_regression_forward(REF_LOSS_BCE, out, zb, tb, 1, 2), want, 1e-7);
    expect_floats(out, (const float[]){0.5f, 0.75f}, 2, 1e-7, "bce out");
    ref_regression_backward(REF_LOSS_BCE, dz, dt, zb, tb, 1, 2);
    expect_floats(dz, (const float[]){0.1f, -0.125f}, 2, 1e-7, "bce dz");
}
END_TEST

/* ---- linear: finite differences ------------------------------------------------------ */

typedef struct {
    int N, I, O, bias;
    float *x, *w, *b, *y, *r; // (N,I) (O,I) (O) (N,O) (N,O)
} linear_case;

static double linear_loss(void *ctx) {
    linear_case *c = ctx;
    ref_linear_forward(c->y, c->x, c->w, c->b, c->N, c->I, c->O);
    return dot(c->y, c->r, (size_t)c->N * c->O);
}

START_TEST(linear_backward_matches_finite_differences) {
    const int shapes[][4] = {{2, 3, 4, 1}, {1, 7, 5, 1}, {3, 13, 11, 1},
                             {4, 9, 1, 1}, {3, 1, 6, 1}, {2, 5, 3, 0}}; // N, I, O, bias
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int N = shapes[k][0], I = shapes[k][1], O = shapes[k][2], bias = shapes[k][3];
        size_t nx = (size_t)N * I, nw = (size_t)O * I, ny = (size_t)N * O;
        linear_case c = {.N = N,
                         .I = I,
                         .O = O,
                         .bias = bias,
                         .x = random_floats(nx, 500 + 10 * k, 1.0f),
                         .w = random_floats(nw, 501 + 10 * k, 1.0f),
                         .b = bias ? random_floats((size_t)O, 502 + 10 * k, 1.0f) : NULL,
                         .y = alloc_floats(ny),
                         .r = random_floats(ny, 503 + 10 * k, 1.0f)};
        float *dx = alloc_floats(nx), *dw = alloc_floats(nw), *db = alloc_floats((size_t)O);
        linear_loss(&c);
        ref_linear_backward(dx, dw, bias ? db : NULL, c.r, c.x, c.w, N, I, O);
        check_guard(c.y, ny, "linear y");
        check_guard(dx, nx, "linear dx");
        check_guard(dw, nw, "linear dw");
        check_guard(db, (size_t)O, "linear db");
        double ex = fd_check(LINEAR, "dx", linear_loss, &c, c.x, dx, nx);
        double ew = fd_check(LINEAR, "dw", linear_loss, &c, c.w, dw, nw);
        double eb = bias ? fd_check(LINEAR, "db", linear_loss, &c, c.b, db, (size_t)O) : 0;
        printf("linear  N%d I%d O%d%s: dx %.1e dw %.1e db %.1e\n", N, I, O, bias ? " bias" : "", ex,
               ew, eb);
        free(c.x), free(c.w), free(c.b), free(c.y), free(c.r), free(dx), free(dw), free(db);
    }
}
END_TEST

/* ---- softmax + cross-entropy: finite differences -------------------------------------- */

typedef struct {
    int N, K;
    float *logits; // (N,K)
    int32_t *labels;
} xent_case;

static double xent_loss(void *ctx) {
    xent_case *c = ctx;
    return ref_softmax_xent_forward(NULL, NULL, c->logits, c->labels, c->N, c->K);
}

START_TEST(softmax_xent_backward_matches_finite_differences) {
    const int shapes[][2] = {{4, 7}, {1, 10}, {3, 2}, {2, 1}, {5, 13}}; // N, K
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int N = shapes[k][0], K = shapes[k][1];
        size_t n = (size_t)N * K;
        xent_case c = {.N = N, .K = K, .logits = random_floats(n, 600 + k, 3.0f)};
        c.labels = malloc((size_t)N * sizeof *c.labels);
        for (int i = 0; i < N; i++) c.labels[i] = (int32_t)(rng_next() % (uint32_t)K);
        float *probs = alloc_floats(n), *dlogits = alloc_floats(n);
        int correct = -1;
        double loss = ref_softmax_xent_forward(probs, &correct, c.logits, c.labels, N, K);
        ref_softmax_xent_backward(dlogits, c.logits, c.labels, N, K);
        check_guard(probs, n, "softmax probs");
        check_guard(dlogits, n, "softmax dlogits");
        ck_assert(isfinite(loss) && loss >= 0);
        ck_assert(correct >= 0 && correct <= N);
        for (int i = 0; i < N; i++) {
            double sum = 0;
            for (int j = 0; j < K; j++) sum += probs[(size_t)i * K + j];
            ck_assert_msg(fabs(sum - 1) < 1e-6, "row %d of probs sums to %.9g", i, sum);
        }
        double e = fd_check(SOFTMAX_XENT, "dlogits", xent_loss, &c, c.logits, dlogits, n);
        printf("softmax_xent N%d K%d: dlogits %.1e\n", N, K, e);
        free(c.logits), free(c.labels), free(probs), free(dlogits);
    }
}
END_TEST

/* ---- cross-entropy at every position: finite differences ------------------------------- */

typedef struct {
    int N, K, P;
    float *logits;   // (N,K,P)
    int32_t *labels; // (N,P)
} xent_positions_case;

static double xent_positions_loss(void *ctx) {
    xent_positions_case *c = ctx;
    return ref_softmax_xent_positions_forward(NULL, NULL, c->logits, c->labels, c->N, c->K, c->P);
}

/* Each of the K probabilities at each of the N*P positions of probs (N,K,P) sum to 1. */
static void expect_positions_sum_to_one(const float *probs, int N, int K, int P) {
    for (int b = 0; b < N; b++)
        for (int p = 0; p < P; p++) {
            double sum = 0;
            for (int k = 0; k < K; k++) sum += probs[((size_t)b * K + k) * P + p];
            ck_assert_msg(fabs(sum - 1) < 1e-6, "sample %d position %d sums to %.9g", b, p, sum);
        }
}

START_TEST(softmax_xent_positions_backward_matches_finite_differences) {
    // N, K, P: one position (the plain case), two classes, odd sizes, one class (loss 0)
    const int shapes[][3] = {{2, 3, 5}, {3, 4, 1}, {1, 2, 7}, {3, 2, 1}, {2, 5, 9}, {1, 1, 3}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int N = shapes[k][0], K = shapes[k][1], P = shapes[k][2];
        size_t n = (size_t)N * K * P, positions = (size_t)N * P;
        uint64_t seed = 650 + k;
        xent_positions_case c = {.N = N, .K = K, .P = P, .logits = random_floats(n, seed, 3.0f)};
        c.labels = malloc(positions * sizeof *c.labels);
        for (size_t i = 0; i < positions; i++) c.labels[i] = (int32_t)(rng_next() % (uint32_t)K);
        float *probs = alloc_floats(n), *dlogits = alloc_floats(n);
        int correct = -1;
        double loss =
            ref_softmax_xent_positions_forward(probs, &correct, c.logits, c.labels, N, K, P);
        ref_softmax_xent_positions_backward(dlogits, c.logits, c.labels, N, K, P);
        check_guard(probs, n, "positions probs");
        check_guard(dlogits, n, "positions dlogits");
        ck_assert(isfinite(loss) && loss >= 0);
        ck_assert(correct >= 0 && (size_t)correct <= positions);
        expect_positions_sum_to_one(probs, N, K, P);
        double e = fd_check(SOFTMAX_XENT_POSITIONS, "dlogits", xent_positions_loss, &c, c.logits,
                            dlogits, n);
        printf("softmax_xent_positions N%d K%d P%d seed %llu: dlogits %.1e\n", N, K, P,
               (unsigned long long)seed, e);
        free(c.logits), free(c.labels), free(probs), free(dlogits);
    }
}
END_TEST

/* ---- label smoothing: finite differences --------------------------------------------- */

typedef struct {
    xent_positions_case c;
    double eps;
} xent_smoothed_case;

static double xent_smoothed_loss(void *ctx) {
    xent_smoothed_case *s = ctx;
    return ref_softmax_xent_smoothed_forward(NULL, NULL, s->c.logits, s->c.labels, s->c.N, s->c.K,
                                             s->c.P, s->eps);
}

/* The smoothed target's reference: its gradient against finite differences of its loss; at
 * eps 0 the plain loss and gradient; at eps 1 the loss is the mean of -log p over the classes
 * whatever the label. */
START_TEST(softmax_xent_smoothed_backward_matches_finite_differences) {
    // N, K, P, eps: per sample (P 1) and per position, the ends 0 and 1
    const struct {
        int N, K, P;
        double eps;
    } cases[] = {{4, 7, 1, 0.1}, {3, 10, 1, 1.0}, {2, 3, 5, 0.25}, {1, 2, 7, 0.6},
                 {2, 5, 9, 0.0}, {3, 4, 1, 0.0},  {2, 6, 3, 1.0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int N = cases[k].N, K = cases[k].K, P = cases[k].P;
        size_t n = (size_t)N * K * P, positions = (size_t)N * P;
        uint64_t seed = 700 + k;
        xent_smoothed_case s = {
            .c = {.N = N, .K = K, .P = P, .logits = random_floats(n, seed, 3.0f)},
            .eps = cases[k].eps};
        s.c.labels = malloc(positions * sizeof *s.c.labels);
        for (size_t i = 0; i < positions; i++) s.c.labels[i] = (int32_t)(rng_next() % (uint32_t)K);
        float *probs = alloc_floats(n), *dlogits = alloc_floats(n), *plain = alloc_floats(n);
        int correct = -1, plain_correct = -2;
        double loss = ref_softmax_xent_smoothed_forward(probs, &correct, s.c.logits, s.c.labels, N,
                                                        K, P, s.eps);
        ref_softmax_xent_smoothed_backward(dlogits, s.c.logits, s.c.labels, N, K, P, s.eps);
        check_guard(probs, n, "smoothed probs");
        check_guard(dlogits, n, "smoothed dlogits");
        expect_positions_sum_to_one(probs, N, K, P);
        double plain_loss = ref_softmax_xent_positions_forward(NULL, &plain_correct, s.c.logits,
                                                               s.c.labels, N, K, P);
        ck_assert_int_eq(correct, plain_correct); /* the accuracy counts the label alone */
        if (s.eps == 0) {
            ref_softmax_xent_positions_backward(plain, s.c.logits, s.c.labels, N, K, P);
            ck_assert_msg(fabs(loss - plain_loss) <= 1e-12 * fmax(1, plain_loss), "%.17g vs %.17g",
                          loss, plain_loss);
            for (size_t i = 0; i < n; i++) ck_assert_float_eq_tol(dlogits[i], plain[i], 1e-7);
        }
        if (s.eps == 1) { /* sum over samples of the mean over positions and classes of -log p */
            double want = 0;
            for (size_t i = 0; i < n; i++) want -= log((double)probs[i]);
            want /= (double)K * P;
            ck_assert_msg(fabs(loss - want) <= 1e-5 * fmax(1, want), "%.9g vs %.9g", loss, want);
        }
        double e = fd_check(SOFTMAX_XENT_POSITIONS, "dlogits", xent_smoothed_loss, &s, s.c.logits,
                            dlogits, n);
        printf("softmax_xent smoothed N%d K%d P%d eps %g seed %llu: dlogits %.1e\n", N, K, P, s.eps,
               (unsigned long long)seed, e);
        free(s.c.logits), free(s.c.labels), free(probs), free(dlogits), free(plain);
    }
}
END_TEST

/* ---- batch normalization: finite differences ------------------------------------------ */

typedef struct {
    int N, C, S;
    float eps;
    float *x, *w, *b, *y, *r; // (N,C,S) (C) (C) (N,C,S) (N,C,S)
} batchnorm_case;

static double batchnorm_loss(void *ctx) {
    batchnorm_case *c = ctx;
    ref_batchnorm_forward_train(c->y, NULL, NULL, NULL, NULL, c->x, c->w, c->b, c->N, c->C, c->S,
                                c->eps, 0.1f);
    return dot(c->y, c->r, (size_t)c->N * c->C * c->S);
}

START_TEST(batchnorm_backward_matches_finite_differences) {
    // N, C, S: a 7x5 image, a vector (S = 1), batch 1 with a 4x3 image, the least a
    // channel can hold (two values, where xhat is +-1 and dx nearly 0), one channel of 13
    const int shapes[][3] = {{2, 3, 35}, {4, 5, 1}, {1, 2, 12}, {2, 2, 1}, {3, 1, 13}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int N = shapes[k][0], C = shapes[k][1], S = shapes[k][2];
        size_t nx = (size_t)N * C * S;
        batchnorm_case c = {.N = N,
                            .C = C,
                            .S = S,
                            .eps = k == 2 ? 1e-3f : 1e-5f,
                            .x = random_floats(nx, 900 + 10 * k, 2.0f),
                            .w = random_floats((size_t)C, 901 + 10 * k, 1.0f),
                            .b = random_floats((size_t)C, 902 + 10 * k, 1.0f),
                            .y = alloc_floats(nx),
                            .r = random_floats(nx, 903 + 10 * k, 1.0f)};
        float *dx = alloc_floats(nx), *dw = alloc_floats((size_t)C), *db = alloc_floats((size_t)C);
        batchnorm_loss(&c);
        ref_batchnorm_backward(dx, dw, db, c.r, c.x, c.w, N, C, S, c.eps);
        check_guard(c.y, nx, "batchnorm y");
        check_guard(dx, nx, "batchnorm dx");
        check_guard(dw, (size_t)C, "batchnorm dweight");
        check_guard(db, (size_t)C, "batchnorm dbias");
        double ex = fd_check(BATCHNORM, "dx", batchnorm_loss, &c, c.x, dx, nx);
        double ew = fd_check(BATCHNORM, "dweight", batchnorm_loss, &c, c.w, dw, (size_t)C);
        double eb = fd_check(BATCHNORM, "dbias", batchnorm_loss, &c, c.b, db, (size_t)C);
        printf("batchnorm N%d C%d S%d: dx %.1e dweight %.1e dbias %.1e\n", N, C, S, ex, ew, eb);
        free(c.x), free(c.w), free(c.b), free(c.y), free(c.r), free(dx), free(dw), free(db);
    }
}
END_TEST

/* ---- forward passes worked out by hand ------------------------------------------------ */

static const float one_to_nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}; // (1,1,3,3)

START_TEST(conv2d_forward_and_backward_by_hand) {
    float y[9], dx[9], dw[9], db[1];
    // The centre tap with pad 1 copies the image.
    const float centre[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
    ref_conv2d_forward(y, one_to_nine, centre, NULL, 1, 1, 3, 3, 1, 3, 3, 1, 1, 1, 1);
    expect_floats(y, one_to_nine, 9, 0, "identity conv y");
    // All ones, no pad: one output, the sum 45, plus the bias.
    const float ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, bias = 0.5f;
    ref_conv2d_forward(y, one_to_nine, ones, &bias, 1, 1, 3, 3, 1, 3, 3, 1, 1, 0, 0);
    ck_assert_float_eq(y[0], 45.5f);
    // A 2x2 kernel [1 2; 3 4], stride 1: y[0,0] = 1*1 + 2*2 + 3*4 + 4*5 = 37, ...
    const float k22[4] = {1, 2, 3, 4};
    ref_conv2d_forward(y, one_to_nine, k22, NULL, 1, 1, 3, 3, 1, 2, 2, 1, 1, 0, 0);
    expect_floats(y, (const float[]){37, 47, 67, 77}, 4, 0, "2x2 conv y");
    // Same with stride 2 and pad 1: windows centred on the corners.
    ref_conv2d_forward(y, one_to_nine, k22, NULL, 1, 1, 3, 3, 1, 2, 2, 2, 2, 1, 1);
    // y[0,0] = 4*x[0,0]; y[0,1] = 3*x[0,1] + 4*x[0,2]; y[1,0] = 2*x[1,0] + 4*x[2,0];
    // y[1,1] = 1*x[1,1] + 2*x[1,2] + 3*x[2,1] + 4*x[2,2]
    expect_floats(y, (const float[]){4, 3 * 2 + 4 * 3, 2 * 4 + 4 * 7, 5 + 2 * 6 + 3 * 8 + 4 * 9}, 4,
                  0, "strided padded conv y");
    // Backward of the stride-1 2x2 conv with dy all ones: dx counts the
    // windows over each pixel times the taps, dw sums the shifted windows.
    const float dy1[4] = {1, 1, 1, 1};
    ref_conv2d_backward(dx, dw, db, dy1, one_to_nine, k22, 1, 1, 3, 3, 1, 2, 2, 1, 1, 0, 0);
    expect_floats(dx, (const float[]){1, 3, 2, 4, 10, 6, 3, 7, 4}, 9, 0, "2x2 conv dx");
    expect_floats(dw, (const float[]){12, 16, 24, 28}, 4, 0, "2x2 conv dw");
    ck_assert_float_eq(db[0], 4);
    // Two channels in, two filters out, a 1x1 kernel: a per-pixel matrix product.
    const float x2[8] = {1, 2, 3, 4, 10, 20, 30, 40}; // (1,2,2,2)
    const float w2[4] = {1, 1, 2, -1};                // (2,2,1,1)
    const float b2[2] = {0, 100};
    ref_conv2d_forward(y, x2, w2, b2, 1, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0);
    expect_floats(y, (const float[]){11, 22, 33, 44, 92, 84, 76, 68}, 8, 0, "1x1 conv y");
}
END_TEST

START_TEST(pools_forward_and_backward_by_hand) {
    float y[9], dx[16];
    // 2x2/2 average and max over a 4x4 image 0..15.
    float x16[16];
    for (int i = 0; i < 16; i++) x16[i] = (float)i;
    ref_avgpool_forward(y, x16, 1, 1, 4, 4, 2, 2, 2, 2, 0, 0);
    expect_floats(y, (const float[]){2.5f, 4.5f, 10.5f, 12.5f}, 4, 0, "avgpool 2x2 y");
    ref_maxpool_forward(y, x16, 1, 1, 4, 4, 2, 2, 2, 2, 0, 0);
    expect_floats(y, (const float[]){5, 7, 13, 15}, 4, 0, "maxpool 2x2 y");
    ref_maxpool_backward(dx, (const float[]){1, 2, 3, 4}, x16, 1, 1, 4, 4, 2, 2, 2, 2, 0, 0);
    expect_floats(dx, (const float[]){0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}, 16, 0,
                  "maxpool 2x2 dx");
    ref_avgpool_backward(dx, (const float[]){4, 8, 12, 16}, 1, 1, 4, 4, 2, 2, 2, 2, 0, 0);
    expect_floats(dx, (const float[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 16, 0,
                  "avgpool 2x2 dx");
    // Average with padded zeros counted: 2x2 image [1 2; 3 4], 2x2 kernel,
    // stride 1, pad 1 -> 3x3, each window sum divided by 4.
    const float x4[4] = {1, 2, 3, 4};
    ref_avgpool_forward(y, x4, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1);
    expect_floats(y, (const float[]){0.25f, 0.75f, 0.5f, 1, 2.5f, 1.5f, 0.75f, 1.75f, 1}, 9, 0,
                  "padded avgpool y");
    // Each pixel sits in 4 windows: dx = 4 * dy / 4 for dy all ones.
    const float ones9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ref_avgpool_backward(dx, ones9, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1);
    expect_floats(dx, (const float[]){1, 1, 1, 1}, 4, 0, "padded avgpool dx");
    // Overlapping 3x3/2 max pool on 5x5 0..24: winners are bottom-right corners.
    float x25[25];
    for (int i = 0; i < 25; i++) x25[i] = (float)i;
    ref_maxpool_forward(y, x25, 1, 1, 5, 5, 3, 3, 2, 2, 0, 0);
    expect_floats(y, (const float[]){12, 14, 22, 24}, 4, 0, "overlapping maxpool y");
}
END_TEST

START_TEST(global_avgpool_by_hand) {
    // Two planes of 2x2, [1 2; 3 4] and [-1 5; 0 0]: means 2.5 and 1.
    const float x[8] = {1, 2, 3, 4, -1, 5, 0, 0};
    float y[2], dx[8];
    ref_global_avgpool_forward(y, x, 1, 2, 4);
    expect_floats(y, (const float[]){2.5f, 1}, 2, 0, "global_avgpool y");
    // Each position gets a quarter of its plane's dy.
    ref_global_avgpool_backward(dx, (const float[]){4, -8}, 1, 2, 4);
    expect_floats(dx, (const float[]){1, 1, 1, 1, -2, -2, -2, -2}, 8, 0, "global_avgpool dx");
    // A 1x1 plane: the identity both ways (batch 2, 3 channels).
    const float v[6] = {0.5f, -1, 3, 7, -2, 0.25f};
    float w[6];
    ref_global_avgpool_forward(w, v, 2, 3, 1);
    expect_floats(w, v, 6, 0, "1x1 global_avgpool y");
    ref_global_avgpool_backward(w, v, 2, 3, 1);
    expect_floats(w, v, 6, 0, "1x1 global_avgpool dx");
}
END_TEST

START_TEST(maxpool_padding_never_wins) {
    // Negative pixels with zero padding around them: a padded zero would win
    // if it counted. One pixel, 2x2 kernel, pad 1 -> 2x2 outputs that all see
    // only that pixel, so its gradient is the sum of all four.
    const float x = -5;
    float y[4], dx[1];
    ref_maxpool_forward(y, &x, 1, 1, 1, 1, 2, 2, 1, 1, 1, 1);
    expect_floats(y, (const float[]){-5, -5, -5, -5}, 4, 0, "maxpool y");
    ref_maxpool_backward(dx, (const float[]){1, 2, 3, 4}, &x, 1, 1, 1, 1, 2, 2, 1, 1, 1, 1);
    ck_assert_float_eq(dx[0], 10);
    // -infinity pixels still beat the padding.
    const float xi[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    float dxi[4];
    ref_maxpool_forward(y, xi, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1);
    for (int i = 0; i < 4; i++) ck_assert(isinf(y[i]) && y[i] < 0);
    ref_maxpool_backward(dxi, (const float[]){1, 2, 3, 4}, xi, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1);
    expect_floats(dxi, (const float[]){1, 2, 3, 4}, 4, 0, "maxpool dx over -inf");
}
END_TEST

START_TEST(maxpool_ties_go_to_the_first_maximum) {
    float y[4], dx[9];
    // All equal: the top-left pixel of the window wins.
    const float same[4] = {5, 5, 5, 5};
    ref_maxpool_backward(dx, (const float[]){1}, same, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0);
    expect_floats(dx, (const float[]){1, 0, 0, 0}, 4, 0, "all-equal dx");
    // [1 3; 3 2]: the 3 at (0,1) comes first in row-major order.
    const float tie[4] = {1, 3, 3, 2};
    ref_maxpool_forward(y, tie, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0);
    ck_assert_float_eq(y[0], 3);
    ref_maxpool_backward(dx, (const float[]){1}, tie, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0);
    expect_floats(dx, (const float[]){0, 1, 0, 0}, 4, 0, "tied dx");
    // Overlapping 2x2/1 windows over [7 7 7; 7 7 7; 7 7 7] every window's first pixel wins:
    // (0,0),(0,1),(1,0),(1,1).
    const float flat[9] = {7, 7, 7, 7, 7, 7, 7, 7, 7};
    ref_maxpool_backward(dx, (const float[]){1, 2, 3, 4}, flat, 1, 1, 3, 3, 2, 2, 1, 1, 0, 0);
    expect_floats(dx, (const float[]){1, 2, 0, 3, 4, 0, 0, 0, 0}, 9, 0, "flat overlapping dx");
    // A tie between windows: the centre 8 wins all four overlapping windows.
    const float peak[9] = {1, 2, 3, 4, 8, 5, 6, 7, 8};
    ref_maxpool_backward(dx, (const float[]){1, 2, 3, 4}, peak, 1, 1, 3, 3, 2, 2, 1, 1, 0, 0);
    expect_floats(dx, (const float[]){0, 0, 0, 0, 10, 0, 0, 0, 0}, 9, 0, "shared winner dx");
}
END_TEST

START_TEST(activations_by_hand) {
    const float x[6] = {-2, 0, 0.5f, 1e-30f, 1, 3};
    float y[6], dx[6];
    ref_relu_forward(y, x, 6);
    expect_floats(y, (const float[]){0, 0, 0.5f, x[3], x[4], 3}, 6, 0, "relu y");
    // relu(0) = 0, so its gradient is 0 there.
    ref_relu_backward(dx, (const float[]){1, 1, 1, 1, 1, 1}, y, 6);
    expect_floats(dx, (const float[]){0, 0, 1, 1, 1, 1}, 6, 0, "relu dx");

    // sigmoid(0) = 1/2, sigmoid(ln 3) = 3/4, sigmoid(-ln 3) = 1/4; huge inputs saturate.
    const float xs[5] = {0, (float)log(3.0), (float)-log(3.0), 100, -100};
    ref_sigmoid_forward(y, xs, 5);
    expect_floats(y, (const float[]){0.5f, 0.75f, 0.25f, 1, 0}, 5, 1e-6, "sigmoid y");
    ck_assert(y[4] >= 0 && isfinite(y[4]));
    ref_sigmoid_backward(dx, (const float[]){1, 1, 2, 1, 1}, y, 5);
    expect_floats(dx, (const float[]){0.25f, 0.1875f, 0.375f, 0, 0}, 5, 1e-6, "sigmoid dx");

    // tanh(ln 2) = (2 - 1/2) / (2 + 1/2) = 3/5; tanh' = 1 - y^2 = 16/25.
    const float xt[4] = {0, (float)log(2.0), (float)-log(2.0), 50};
    ref_tanh_forward(y, xt, 4);
    expect_floats(y, (const float[]){0, 0.6f, -0.6f, 1}, 4, 1e-6, "tanh y");
    ref_tanh_backward(dx, (const float[]){1, 1, 1, 1}, y, 4);
    expect_floats(dx, (const float[]){1, 0.64f, 0.64f, 0}, 4, 1e-6, "tanh dx");
}
END_TEST

START_TEST(activations_of_x_by_hand) {
    const float x[5] = {-4, -3, 0, (float)log(3.0), 3};
    const float ones[5] = {1, 1, 1, 1, 1};
    float y[5], dx[5];
    // leaky_relu with slope 0.25: the slope at 0 too, as PyTorch
    ref_act_forward(REF_ACT_LEAKY_RELU, 0.25, y, x, 5);
    expect_floats(y, (const float[]){-1, -0.75f, 0, x[3], 3}, 5, 1e-7, "leaky_relu y");
    ref_act_backward(REF_ACT_LEAKY_RELU, 0.25, dx, ones, x, 5);
    expect_floats(dx, (const float[]){0.25f, 0.25f, 0.25f, 1, 1}, 5, 0, "leaky_relu dx");
    // elu with alpha 2 at ln(1/3): 2 (1/3 - 1) = -4/3, slope 2/3
    const float xe[2] = {(float)-log(3.0), 0.5f};
    ref_act_forward(REF_ACT_ELU, 2, y, xe, 2);
    expect_floats(y, (const float[]){-4.0f / 3, 0.5f}, 2, 1e-6, "elu y");
    ref_act_backward(REF_ACT_ELU, 2, dx, ones, xe, 2);
    expect_floats(dx, (const float[]){2.0f / 3, 1}, 2, 1e-6, "elu dx");
    // gelu: 0 at 0 with slope 1/2; gelu(x) - gelu(-x) = x for every x
    const float xg[3] = {0, 1.3f, -1.3f};
    ref_act_forward(REF_ACT_GELU, 0, y, xg, 3);
    ck_assert(y[0] == 0 && fabs((double)y[1] - y[2] - 1.3) < 1e-6);
    ref_act_backward(REF_ACT_GELU, 0, dx, ones, xg, 3);
    ck_assert(dx[0] == 0.5f && fabs((double)dx[1] + dx[2] - 1) < 1e-6);
    // silu(ln 3) = ln 3 * 3/4, slope 3/4 (1 + ln 3 / 4)
    ref_act_forward(REF_ACT_SILU, 0, y, x + 3, 1);
    ref_act_backward(REF_ACT_SILU, 0, dx, ones, x + 3, 1);
    expect_floats(y, (const float[]){(float)(log(3.0) * 0.75)}, 1, 1e-6, "silu y");
    expect_floats(dx, (const float[]){(float)(0.75 * (1 + log(3.0) / 4))}, 1, 1e-6, "silu dx");
    // hardswish: 0 from -3 down, x from 3 up; slopes -1/2 at -3 (the middle piece) and 1 at 3
    ref_act_forward(REF_ACT_HARDSWISH, 0, y, x, 5);
    expect_floats(y, (const float[]){0, 0, 0, (float)(log(3.0) * (log(3.0) + 3) / 6), 3}, 5, 1e-6,
                  "hardswish y");
    ref_act_backward(REF_ACT_HARDSWISH, 0, dx, ones, x, 5);
    expect_floats(dx, (const float[]){0, -0.5f, 0.5f, (float)(log(3.0) / 3 + 0.5), 1}, 5, 1e-6,
                  "hardswish dx");
}
END_TEST

START_TEST(linear_by_hand) {
    const float x[4] = {1, 2, -1, 3};       // (2,2)
    const float w[6] = {1, 0, 0, 1, 1, 1};  // (3,2)
    const float b[3] = {0.5f, 0, -1};       // (3)
    const float dy[6] = {1, 0, 2, 0, 1, 1}; // (2,3)
    float y[6], dx[4], dw[6], db[3];
    ref_linear_forward(y, x, w, b, 2, 2, 3);
    expect_floats(y, (const float[]){1.5f, 2, 2, -0.5f, 3, 1}, 6, 0, "linear y");
    ref_linear_backward(dx, dw, db, dy, x, w, 2, 2, 3);
    // dx = dy w: [1*[1 0] + 2*[1 1], 1*[0 1] + 1*[1 1]]
    expect_floats(dx, (const float[]){3, 2, 1, 2}, 4, 0, "linear dx");
    // dw = dy^T x: row o = sum_n dy[n,o] x[n]
    expect_floats(dw, (const float[]){1, 2, -1, 3, 1, 7}, 6, 0, "linear dw");
    expect_floats(db, (const float[]){1, 1, 3}, 3, 0, "linear db");
}
END_TEST

START_TEST(batchnorm_by_hand) {
    // x (N=2, C=2, S=2): channel 0 holds -1, 1, -1, 1 and channel 1 holds 11, 13, 13, 11,
    // so both have variance 1; with eps = 3, invstd = 1/2 and xhat = +-1/2.
    const float x[8] = {-1, 1, 11, 13, -1, 1, 13, 11};
    const float w[2] = {2, -1}, b[2] = {1, 0.5f};
    float y[8], mean[2], var[2];
    float running_mean[2] = {2, 0}, running_var[2] = {3, 1};
    ref_batchnorm_forward_train(y, mean, var, running_mean, running_var, x, w, b, 2, 2, 2, 3.0f,
                                0.5f);
    expect_floats(y, (const float[]){0, 2, 1, 0, 0, 2, 0, 1}, 8, 1e-7, "batchnorm y");
    expect_floats(mean, (const float[]){0, 12}, 2, 0, "batchnorm mean");
    expect_floats(var, (const float[]){1, 1}, 2, 0, "batchnorm biased var");
    // Halfway to the batch's mean and UNBIASED variance 1 * 4/3.
    expect_floats(running_mean, (const float[]){1, 6}, 2, 1e-7, "batchnorm running_mean");
    expect_floats(running_var, (const float[]){1.5f + 2.0f / 3, 0.5f + 2.0f / 3}, 2, 1e-6,
                  "batchnorm running_var");

    // dbias = sum dy, dweight = sum dy * xhat; dx sums to zero over each channel
    // (shifting a channel's x changes no y).
    const float dy[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float dx[8], dw[2], db[2];
    ref_batchnorm_backward(dx, dw, db, dy, x, w, 2, 2, 2, 3.0f);
    expect_floats(db, (const float[]){14, 22}, 2, 0, "batchnorm dbias");
    // xhat: channel 0 -1/2, 1/2, -1/2, 1/2; channel 1 -1/2, 1/2, 1/2, -1/2
    expect_floats(dw, (const float[]){1, 0}, 2, 1e-7, "batchnorm dweight");
    for (int c = 0; c < 2; c++) {
        double sum = 0;
        for (int n = 0; n < 2; n++)
            for (int s = 0; s < 2; s++) sum += dx[(n * 2 + c) * 2 + s];
        ck_assert_msg(fabs(sum) < 1e-6, "channel %d: dx sums to %g", c, sum);
    }
    // dx = w invstd (dy - mean dy - xhat mean(dy xhat)): channel 0 has mean dy = 3.5 and
    // mean(dy xhat) = 1/4, so dx = 2 * 1/2 * (1 - 3.5 + 1/8) = -2.375, ...; channel 1 has
    // mean dy = 5.5 and mean(dy xhat) = 0, so dx = -1 * 1/2 * (dy - 5.5). (With eps = 3,
    // sum xhat^2 = M var / (var + eps) = 1, not M: dx is not orthogonal to xhat, as it
    // would be with eps = 0.)
    expect_floats(dx,
                  (const float[]){-2.375f, -1.625f, 1.25f, 0.75f, 1.625f, 2.375f, -0.75f, -1.25f},
                  8, 1e-6, "batchnorm dx");

    // Evaluation uses the running statistics: invstd 1/2 and 1/4 for variances 1 and 13.
    ref_batchnorm_forward_eval(y, x, w, b, (const float[]){1, 12}, (const float[]){1, 13}, 2, 2, 2,
                               3.0f);
    expect_floats(y, (const float[]){-1, 1, 0.75f, 0.25f, -1, 1, 0.25f, 0.75f}, 8, 1e-7,
                  "batchnorm eval y");
}
END_TEST

START_TEST(softmax_xent_by_hand) {
    // logits [0, ln 2, ln 3]: softmax = [1, 2, 3] / 6.
    const float l[3] = {0, (float)log(2.0), (float)log(3.0)};
    float probs[3], dl[3];
    int correct = -1;
    int32_t label = 2;
    double loss = ref_softmax_xent_forward(probs, &correct, l, &label, 1, 3);
    expect_floats(probs, (const float[]){1 / 6.0f, 2 / 6.0f, 3 / 6.0f}, 3, 1e-6, "probs");
    ck_assert_double_eq_tol(loss, log(2.0), 1e-6); // -log(1/2)
    ck_assert_int_eq(correct, 1);
    ref_softmax_xent_backward(dl, l, &label, 1, 3);
    expect_floats(dl, (const float[]){1 / 6.0f, 2 / 6.0f, -0.5f}, 3, 1e-6, "dlogits");
    label = 0;
    loss = ref_softmax_xent_forward(NULL, &correct, l, &label, 1, 3);
    ck_assert_double_eq_tol(loss, log(6.0), 1e-6);
    ck_assert_int_eq(correct, 0);

    // Two samples: the loss and the correct count are sums, not means.
    const float l2[6] = {0, (float)log(2.0), (float)log(3.0), 5, 5, 0};
    const int32_t labels2[2] = {2, 0};
    loss = ref_softmax_xent_forward(NULL, &correct, l2, labels2, 2, 3);
    double second = log(2 + exp(-5.0)); // -log(e^5 / (2 e^5 + 1))
    ck_assert_double_eq_tol(loss, log(2.0) + second, 1e-6);
    // The second row ties at 5: the first maximum (index 0) is the label.
    ck_assert_int_eq(correct, 2);
    const int32_t labels3[2] = {2, 1};
    ref_softmax_xent_forward(NULL, &correct, l2, labels3, 2, 3);
    ck_assert_int_eq(correct, 1); // index 1 ties index 0 but is not first
}
END_TEST

START_TEST(softmax_xent_stays_finite_for_huge_logits) {
    // Around 1000, e^logit overflows even a double: only the max-subtracted form survives.
    const float l[6] = {1000, 1000 + (float)log(2.0), 1000 + (float)log(3.0), 1000, -1000, 0};
    const int32_t labels[2] = {2, 1};
    float probs[6], dl[6];
    int correct;
    double loss = ref_softmax_xent_forward(probs, &correct, l, labels, 2, 3);
    ck_assert(isfinite(loss));
    // The float 1000 + ln 2 is off by up to 3e-5: tolerances to match.
    ck_assert_double_eq_tol(loss, log(2.0) + 2000, 1e-3);
    expect_floats(probs, (const float[]){1 / 6.0f, 2 / 6.0f, 3 / 6.0f, 1, 0, 0}, 6, 1e-4,
                  "huge probs");
    ck_assert_int_eq(correct, 1);
    ref_softmax_xent_backward(dl, l, labels, 2, 3);
    for (int i = 0; i < 6; i++) ck_assert(isfinite(dl[i]));
    expect_floats(dl, (const float[]){1 / 6.0f, 2 / 6.0f, -0.5f, 1, -1, 0}, 6, 1e-4, "huge dl");
    // -1000 everywhere: uniform, still finite.
    const float low[3] = {-1000, -1000, -1000};
    loss = ref_softmax_xent_forward(probs, NULL, low, labels, 1, 3);
    ck_assert_double_eq_tol(loss, log(3.0), 1e-6);
}
END_TEST

START_TEST(softmax_xent_positions_by_hand) {
    // One sample, K = 3, P = 2, laid out (K,P): position 0 holds [0, ln 2, ln 3] (softmax
    // [1, 2, 3] / 6), position 1 three equal logits (softmax 1/3 each).
    const float l2 = (float)log(2.0), l3 = (float)log(3.0);
    const float l[6] = {0, 5, l2, 5, l3, 5};
    const int32_t labels[2] = {2, 1};
    float probs[6], dl[6];
    int correct = -1;
    double loss = ref_softmax_xent_positions_forward(probs, &correct, l, labels, 1, 3, 2);
    expect_floats(probs,
                  (const float[]){1 / 6.0f, 1 / 3.0f, 2 / 6.0f, 1 / 3.0f, 3 / 6.0f, 1 / 3.0f}, 6,
                  1e-6, "positions probs");
    ck_assert_double_eq_tol(loss, (log(2.0) + log(3.0)) / 2, 1e-6); // the mean over positions
    // Position 0's argmax is its label; position 1 ties, and the first maximum (0) is not 1.
    ck_assert_int_eq(correct, 1);
    ref_softmax_xent_positions_backward(dl, l, labels, 1, 3, 2);
    // (softmax - onehot) / P
    expect_floats(dl,
                  (const float[]){1 / 12.0f, 1 / 6.0f, 1 / 6.0f, -1 / 3.0f, -1 / 4.0f, 1 / 6.0f}, 6,
                  1e-6, "positions dlogits");

    // Two samples: the means of the samples add up, and so do the correct counts.
    const float two[12] = {0, 5, l2, 5, l3, 5, 0, 5, l2, 5, l3, 5};
    const int32_t labels2[4] = {2, 1, 0, 0};
    loss = ref_softmax_xent_positions_forward(NULL, &correct, two, labels2, 2, 3, 2);
    ck_assert_double_eq_tol(loss, (log(2.0) + log(3.0)) / 2 + (log(6.0) + log(3.0)) / 2, 1e-6);
    ck_assert_int_eq(correct, 2);
}
END_TEST

START_TEST(softmax_xent_positions_at_one_position_is_softmax_xent) {
    // With P = 1 the mean over positions is the single position's loss, bit for bit.
    enum { N = 4, K = 7 };
    float *l = random_floats(N * K, 690, 3.0f);
    const int32_t labels[N] = {0, 6, 3, 3};
    float pa[N * K], pb[N * K], da[N * K], db[N * K];
    int ca = -1, cb = -2;
    double la = ref_softmax_xent_forward(pa, &ca, l, labels, N, K);
    double lb = ref_softmax_xent_positions_forward(pb, &cb, l, labels, N, K, 1);
    ck_assert_msg(la == lb, "loss %.17g, at every position %.17g", la, lb);
    ck_assert_int_eq(ca, cb);
    expect_floats(pb, pa, N * K, 0, "probs at P = 1");
    ref_softmax_xent_backward(da, l, labels, N, K);
    ref_softmax_xent_positions_backward(db, l, labels, N, K, 1);
    expect_floats(db, da, N * K, 0, "dlogits at P = 1");
    free(l);
}
END_TEST

/* ---- N-d conv, transposed conv and pools ---------------------------------------------- */

/* The product of the first rank entries of size: a spatial volume (0 when a size is
 * <= 0, a conv whose kernel never fits). */
static size_t nd_volume(const int *size, int rank) {
    size_t v = 1;
    for (int a = 0; a < rank; a++) v *= size[a] > 0 ? (size_t)size[a] : 0;
    return v;
}

static int nd_has_weights(int layer) {
    return layer == CONVND || layer == CONV_TRANSPOSE;
}

/* out (rank) = the output sizes of layer (CONVND, CONV_TRANSPOSE, MAXPOOLND or AVGPOOLND). */
static void nd_out_sizes(int *out, int layer, const ref_window *g) {
    for (int a = 0; a < g->rank; a++)
        out[a] = layer == CONVND           ? ref_conv_out(g, a)
                 : layer == CONV_TRANSPOSE ? ref_conv_transpose_out(g, a)
                                           : ref_pool_out(g, a);
}

static size_t nd_x_count(const ref_window *g) {
    return (size_t)g->N * g->C * nd_volume(g->in, g->rank);
}

static size_t nd_y_count(int layer, const ref_window *g) {
    int out[3];
    nd_out_sizes(out, layer, g);
    return (size_t)g->N * (nd_has_weights(layer) ? g->F : g->C) * nd_volume(out, g->rank);
}

/* conv's w is (F, C/G, k...), the transpose's (C, F/G, k...); pools have none. */
static size_t nd_w_count(int layer, const ref_window *g) {
    int G = g->groups ? g->groups : 1;
    size_t k = nd_volume(g->k, g->rank);
    if (layer == CONVND) return (size_t)g->F * (g->C / G) * k;
    if (layer == CONV_TRANSPOSE) return (size_t)g->C * (g->F / G) * k;
    return 0;
}

/* " name3x2x1": the first rank entries of v, for the printed case lines. */
static void print_axes(const char *name, const int *v, int rank) {
    printf(" %s", name);
    for (int a = 0; a < rank; a++) printf(a ? "x%d" : "%d", v[a]);
}

static void print_window(int layer, const ref_window *g) {
    printf("%-14s r%d N%d C%d", layer_names[layer], g->rank, g->N, g->C);
    if (nd_has_weights(layer)) printf(" F%d g%d", g->F, g->groups ? g->groups : 1);
    print_axes("in", g->in, g->rank);
    print_axes("k", g->k, g->rank);
    print_axes("s", g->s, g->rank);
    print_axes("p", g->p, g->rank);
    print_axes("d", g->d, g->rank);
    if (layer == CONVND) print_axes("extra", g->extra, g->rank);
    if (layer == CONV_TRANSPOSE) print_axes("out_pad", g->out_pad, g->rank);
    if (!nd_has_weights(layer)) printf("%s", g->ceil ? " ceil" : "");
    if (layer == AVGPOOLND) printf("%s", g->count_pad ? " count_pad" : "");
}

/* One N-d case: x (N,C,in...), w the layer's weights or NULL, b (F) or NULL,
 * y and r (N, F or C, out...). */
typedef struct {
    int layer;
    ref_window g;
    float *x, *w, *b, *y, *r;
} nd_case;

static double nd_loss(void *ctx) {
    nd_case *c = ctx;
    if (c->layer == CONVND) ref_convnd_forward(c->y, c->x, c->w, c->b, &c->g);
    if (c->layer == CONV_TRANSPOSE) ref_conv_transpose_forward(c->y, c->x, c->w, c->b, &c->g);
    if (c->layer == MAXPOOLND) ref_maxpoolnd_forward(c->y, c->x, &c->g);
    if (c->layer == AVGPOOLND) ref_avgpoolnd_forward(c->y, c->x, &c->g);
    return dot(c->y, c->r, nd_y_count(c->layer, &c->g));
}

typedef struct {
    ref_window g;
    int bias;
} nd_shape;

static void nd_fd(int layer, nd_shape shape, uint64_t seed) {
    ref_window g = shape.g;
    int bias = shape.bias, F = nd_has_weights(layer) ? g.F : 0;
    size_t nx = nd_x_count(&g), nw = nd_w_count(layer, &g), ny = nd_y_count(layer, &g);
    ck_assert_msg(ny > 0, "%s: a case without outputs checks nothing", layer_names[layer]);
    nd_case c = {.layer = layer,
                 .g = g,
                 .x = random_floats(nx, seed, 1.0f),
                 .w = nw ? random_floats(nw, seed + 1, 1.0f) : NULL,
                 .b = bias ? random_floats((size_t)F, seed + 2, 1.0f) : NULL,
                 .y = alloc_floats(ny),
                 .r = random_floats(ny, seed + 3, 1.0f)};
    if (layer == MAXPOOLND) distinct_values(c.x, nx);
    float *dx = alloc_floats(nx), *dw = alloc_floats(nw), *db = alloc_floats((size_t)F);
    nd_loss(&c);
    check_guard(c.y, ny, "y");
    // L = sum(y * r), so dL/dy = r.
    if (layer == CONVND) ref_convnd_backward(dx, dw, bias ? db : NULL, c.r, c.x, c.w, &g);
    if (layer == CONV_TRANSPOSE)
        ref_conv_transpose_backward(dx, dw, bias ? db : NULL, c.r, c.x, c.w, &g);
    if (layer == MAXPOOLND) ref_maxpoolnd_backward(dx, c.r, c.x, &g);
    if (layer == AVGPOOLND) ref_avgpoolnd_backward(dx, c.r, &g);
    check_guard(dx, nx, "dx");
    check_guard(dw, nw, "dw");
    check_guard(db, (size_t)F, "db");
    if (!bias)
        for (int f = 0; f < F; f++)
            ck_assert_msg(db[f] == GARBAGE, "db was NULL, yet something was written");

    double ex = fd_check(layer, "dx", nd_loss, &c, c.x, dx, nx);
    double ew = nw ? fd_check(layer, "dw", nd_loss, &c, c.w, dw, nw) : 0;
    double eb = bias ? fd_check(layer, "db", nd_loss, &c, c.b, db, (size_t)F) : 0;
    int out[3];
    nd_out_sizes(out, layer, &g);
    print_window(layer, &g);
    printf("%s ->", bias ? " bias" : "");
    print_axes("", out, g.rank);
    printf(": dx %.1e", ex);
    if (nd_has_weights(layer)) printf(" dw %.1e db %.1e", ew, eb);
    printf("\n");
    free(c.x), free(c.w), free(c.b), free(c.y), free(c.r), free(dx), free(dw), free(db);
}

/* The cases below are ref_window rows, positional: rank, N, C, F, in, k, s, p, d,
 * extra, groups (0 reads as 1), out_pad, ceil, count_pad; the fields left out are 0. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

START_TEST(convnd_backward_matches_finite_differences) {
    const nd_shape shapes[] = {
        // rank 1: causal (p = d*(k-1), extra = -p), batch 3
        {{1, 3, 2, 4, {9}, {3}, {1}, {2}, {1}, {-2}}, 1},
        // causal and dilated 3, no bias
        {{1, 1, 2, 2, {11}, {3}, {1}, {6}, {3}, {-6}}, 0},
        // pad=same with an even kernel: 3 zeros, 1 before and 2 after (extra = 1)
        {{1, 2, 2, 2, {8}, {4}, {1}, {1}, {1}, {1}}, 1},
        // stride larger than the kernel (inputs unused), 2 groups
        {{1, 2, 4, 6, {13}, {2}, {3}, {1}, {1}, {0}, 2}, 1},
        // depthwise (groups = C = F), dilated 2, strided
        {{1, 1, 3, 3, {10}, {3}, {2}, {2}, {2}, {0}, 3}, 1},
        // rank 2: kernel, stride, padding and dilation different per axis
        {{2, 2, 2, 3, {7, 6}, {3, 2}, {2, 1}, {1, 0}, {1, 2}}, 1},
        // 2 groups, dilation 3 on one axis and stride 3 > kernel 3 on the other, no bias
        {{2, 1, 4, 4, {9, 8}, {2, 3}, {1, 3}, {0, 2}, {3, 1}, {0}, 2}, 0},
        // depthwise, dilated 2, same padding with an odd zero on one axis, batch 3
        {{2, 3, 2, 2, {5, 6}, {3, 2}, {1, 1}, {2, 0}, {2, 1}, {0, 1}, 2}, 1},
        // rank 3: every axis different
        {{3, 2, 2, 2, {4, 5, 3}, {2, 3, 1}, {1, 2, 1}, {1, 1, 0}, {1, 1, 1}}, 1},
        // 2 groups, dilation 2, stride 3 > kernel 2, no bias
        {{3, 1, 2, 4, {5, 4, 6}, {2, 2, 2}, {1, 3, 3}, {0, 1, 1}, {2, 1, 1}, {0}, 2}, 0},
        // depthwise, causal on the last axis, dilated on the second
        {{3, 1, 2, 2, {3, 4, 4}, {3, 1, 2}, {2, 1, 1}, {1, 0, 1}, {1, 2, 1}, {0, 0, -1}, 2}, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        nd_fd(CONVND, shapes[i], 1000 + 10 * i);
}
END_TEST

START_TEST(conv_transpose_backward_matches_finite_differences) {
    const nd_shape shapes[] = {
        // rank 1: stride 2 with output_padding 1, batch 3
        {{1, 3, 2, 3, {5}, {3}, {2}, {1}, {1}, {0}, 0, {1}}, 1},
        // dilation 2 with output_padding 1, padding 2, no bias
        {{1, 1, 2, 2, {6}, {3}, {1}, {2}, {2}, {0}, 0, {1}}, 0},
        // stride 3 larger than the kernel (outputs no tap reaches), 2 groups
        {{1, 2, 4, 2, {4}, {2}, {3}, {0}, {1}, {0}, 2, {2}}, 1},
        // depthwise, padding 3 cropping most of the edges
        {{1, 1, 3, 3, {5}, {4}, {2}, {3}, {1}, {0}, 3}, 1},
        // rank 2: every axis different, output_padding on both
        {{2, 2, 2, 3, {3, 4}, {3, 2}, {2, 1}, {1, 0}, {1, 2}, {0}, 0, {1, 1}}, 1},
        // 2 groups, stride 3 > kernel 2, no bias
        {{2, 1, 4, 2, {4, 3}, {2, 3}, {3, 2}, {0, 1}, {1, 1}, {0}, 2, {0, 1}}, 0},
        // rank 3: every axis different
        {{3, 1, 2, 2, {3, 2, 3}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0}, {1, 2, 1}, {0}, 0, {1, 0, 1}}, 1},
        // depthwise, dilation 2 with output_padding 1, batch 3, no bias
        {{3, 3, 2, 2, {2, 3, 2}, {3, 2, 2}, {1, 2, 1}, {1, 0, 0}, {2, 1, 1}, {0}, 2, {1, 0, 0}}, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        nd_fd(CONV_TRANSPOSE, shapes[i], 1200 + 10 * i);
}
END_TEST

START_TEST(maxpoolnd_backward_matches_finite_differences) {
    const ref_window shapes[] = {
        // rank 1: ceil mode with padding (a last window overhangs), batch 3
        {1, 3, 2, 0, {11}, {3}, {2}, {1}, {1}, {0}, 0, {0}, 1},
        // dilation 2, ceil mode
        {1, 1, 2, 0, {13}, {3}, {2}, {1}, {2}, {0}, 0, {0}, 1},
        // stride larger than the kernel: inputs in no window
        {1, 2, 1, 0, {10}, {2}, {3}, {0}, {1}},
        // dilation 3, overlapping windows
        {1, 1, 1, 0, {12}, {3}, {1}, {1}, {3}},
        // rank 3: every axis different, ceil mode with padding
        {3, 2, 2, 0, {5, 4, 6}, {2, 3, 2}, {2, 1, 3}, {1, 1, 0}, {1, 1, 2}, {0}, 0, {0}, 1},
        // stride 3 > kernel on one axis, dilation 2 on another
        {3, 1, 1, 0, {4, 5, 3}, {3, 2, 2}, {3, 2, 1}, {1, 0, 1}, {2, 1, 1}},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        nd_fd(MAXPOOLND, (nd_shape){shapes[i], 0}, 1400 + 10 * i);
}
END_TEST

START_TEST(avgpoolnd_backward_matches_finite_differences) {
    const ref_window shapes[] = {
        // rank 1: ceil mode with padding, the overhang not counted, batch 3
        {1, 3, 2, 0, {11}, {3}, {2}, {1}, {1}, {0}, 0, {0}, 1, 1},
        // the same without count_pad: input cells only
        {1, 3, 2, 0, {11}, {3}, {2}, {1}, {1}, {0}, 0, {0}, 1},
        // stride larger than the kernel, ceil mode, count_pad off
        {1, 1, 2, 0, {10}, {2}, {3}, {1}, {1}, {0}, 0, {0}, 1},
        // overlapping windows, padding 2, zeros counted
        {1, 2, 1, 0, {9}, {4}, {1}, {2}, {1}, {0}, 0, {0}, 0, 1},
        // rank 3: every axis different, ceil mode with padding, zeros counted
        {3, 1, 2, 0, {5, 4, 6}, {2, 3, 2}, {2, 1, 3}, {1, 1, 0}, {1, 1, 1}, {0}, 0, {0}, 1, 1},
        // and with count_pad off, batch 2
        {3, 2, 1, 0, {4, 5, 3}, {3, 2, 2}, {2, 2, 1}, {1, 1, 1}, {1, 1, 1}, {0}, 0, {0}, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        nd_fd(AVGPOOLND, (nd_shape){shapes[i], 0}, 1600 + 10 * i);
}
END_TEST

/* conv_shape's geometry as a rank-2 ref_window. */
static ref_window window_of(conv_shape s) {
    return (ref_window){.rank = 2,
                        .N = s.N,
                        .C = s.C,
                        .F = s.F,
                        .in = {s.H, s.W},
                        .k = {s.KH, s.KW},
                        .s = {s.sh, s.sw},
                        .p = {s.ph, s.pw},
                        .d = {s.dh, s.dw},
                        .groups = s.G};
}

START_TEST(convnd_at_rank_2_equals_conv2d_full) {
    // N  C  H   W  F KH KW sh sw ph pw bias dh dw G
    const conv_shape shapes[] = {
        {2, 2, 11, 9, 3, 3, 2, 1, 1, 2, 1, 1, 3, 2, 1}, // dilation 3x2
        {2, 4, 7, 6, 6, 3, 3, 1, 2, 1, 1, 1, 1, 1, 2},  // 2 groups, strided
        {1, 3, 7, 9, 3, 3, 3, 2, 1, 2, 1, 0, 2, 1, 3},  // depthwise, dilated, no bias
        {1, 2, 7, 9, 2, 2, 2, 3, 3, 0, 0, 1, 1, 1, 1},  // stride larger than the kernel
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        conv_shape s = shapes[i];
        ref_window g = window_of(s);
        size_t nx = nd_x_count(&g), nw = nd_w_count(CONVND, &g), ny = nd_y_count(CONVND, &g);
        float *x = random_floats(nx, 1800 + i, 1), *w = random_floats(nw, 1810 + i, 1);
        float *b = s.bias ? random_floats((size_t)s.F, 1820 + i, 1) : NULL;
        float *dy = random_floats(ny, 1830 + i, 1);
        float *y[2], *dx[2], *dw[2], *db[2];
        for (int k = 0; k < 2; k++) {
            y[k] = alloc_floats(ny), dx[k] = alloc_floats(nx), dw[k] = alloc_floats(nw);
            db[k] = alloc_floats((size_t)s.F);
        }
        ref_conv2d_full_forward(y[0], x, w, b, s.N, s.C, s.H, s.W, s.F, s.KH, s.KW, s.sh, s.sw,
                                s.ph, s.pw, s.dh, s.dw, s.G);
        ref_conv2d_full_backward(dx[0], dw[0], s.bias ? db[0] : NULL, dy, x, w, s.N, s.C, s.H, s.W,
                                 s.F, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, s.G);
        ref_convnd_forward(y[1], x, w, b, &g);
        ref_convnd_backward(dx[1], dw[1], s.bias ? db[1] : NULL, dy, x, w, &g);
        // the same sums in the same order: equal to the bit
        expect_floats(y[1], y[0], ny, 0, "convnd y");
        expect_floats(dx[1], dx[0], nx, 0, "convnd dx");
        expect_floats(dw[1], dw[0], nw, 0, "convnd dw");
        expect_floats(db[1], db[0], (size_t)s.F, 0, "convnd db");
        for (int k = 0; k < 2; k++) free(y[k]), free(dx[k]), free(dw[k]), free(db[k]);
        free(x), free(w), free(b), free(dy);
    }
}
END_TEST

START_TEST(poolnd_at_rank_2_equal_the_2d_pools) {
    // Every 2-D pool shape: no dilation, no ceil mode, padded zeros counted (the 2-D
    // average pool's divisor is KH*KW).
    for (size_t i = 0; i < sizeof pool_shapes / sizeof pool_shapes[0]; i++) {
        pool_shape s = pool_shapes[i];
        ref_window g = {.rank = 2,
                        .N = s.N,
                        .C = s.C,
                        .in = {s.H, s.W},
                        .k = {s.KH, s.KW},
                        .s = {s.sh, s.sw},
                        .p = {s.ph, s.pw},
                        .d = {1, 1},
                        .count_pad = 1};
        size_t nx = nd_x_count(&g), ny = nd_y_count(MAXPOOLND, &g);
        ck_assert_uint_eq(ny, pool_out_count(s));
        float *x = random_floats(nx, 1900 + i, 1), *dy = random_floats(ny, 1910 + i, 1);
        // ties too: a coarse grid of values, so that the first maximum must win in both
        for (size_t j = 0; j < nx; j++) x[j] = roundf(x[j] * 2);
        float *y[2], *dx[2];
        for (int k = 0; k < 2; k++) y[k] = alloc_floats(ny), dx[k] = alloc_floats(nx);
        ref_maxpool_forward(y[0], x, s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw);
        ref_maxpoolnd_forward(y[1], x, &g);
        expect_floats(y[1], y[0], ny, 0, "maxpoolnd y");
        ref_maxpool_backward(dx[0], dy, x, s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw);
        ref_maxpoolnd_backward(dx[1], dy, x, &g);
        expect_floats(dx[1], dx[0], nx, 0, "maxpoolnd dx");
        ref_avgpool_forward(y[0], x, s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw);
        ref_avgpoolnd_forward(y[1], x, &g);
        expect_floats(y[1], y[0], ny, 0, "avgpoolnd y");
        ref_avgpool_backward(dx[0], dy, s.N, s.C, s.H, s.W, s.KH, s.KW, s.sh, s.sw, s.ph, s.pw);
        ref_avgpoolnd_backward(dx[1], dy, &g);
        // ref_avgpool_backward rounds dy / (KH*KW) to float before summing it, the N-d
        // one divides in double: equal to float rounding, not to the bit
        expect_floats(dx[1], dx[0], nx, 1e-6, "avgpoolnd dx");
        for (int k = 0; k < 2; k++) free(y[k]), free(dx[k]);
        free(x), free(dy);
    }
}
END_TEST

/* <convnd(x), r> = <x, conv_transpose(r)> without bias, for a transpose that mirrors the
 * conv: the same k, s, p, d, groups and weight tensor, channels swapped, its input the
 * conv's output and its output (output_padding making up the floor) the conv's input. */
static void check_adjoint(ref_window conv, uint64_t seed) {
    ref_window t = conv;
    t.C = conv.F, t.F = conv.C;
    for (int a = 0; a < conv.rank; a++) {
        t.in[a] = ref_conv_out(&conv, a);
        t.extra[a] = t.out_pad[a] = 0;
        t.out_pad[a] = conv.in[a] - ref_conv_transpose_out(&t, a);
        ck_assert_int_ge(t.out_pad[a], 0);
        ck_assert_int_eq(ref_conv_transpose_out(&t, a), conv.in[a]);
    }
    // conv's w (F, C/G, k...) is the transpose's (C_t, F_t/G, k...)
    ck_assert_uint_eq(nd_w_count(CONV_TRANSPOSE, &t), nd_w_count(CONVND, &conv));
    size_t nx = nd_x_count(&conv), nw = nd_w_count(CONVND, &conv), ny = nd_y_count(CONVND, &conv);
    ck_assert_uint_eq(nd_x_count(&t), ny);
    ck_assert_uint_eq(nd_y_count(CONV_TRANSPOSE, &t), nx);
    float *x = random_floats(nx, seed, 1), *w = random_floats(nw, seed + 1, 1);
    float *r = random_floats(ny, seed + 2, 1), *y = alloc_floats(ny), *tr = alloc_floats(nx);
    ref_convnd_forward(y, x, w, NULL, &conv);
    ref_conv_transpose_forward(tr, r, w, NULL, &t);
    check_guard(tr, nx, "conv_transpose y");
    double lhs = dot(y, r, ny), rhs = dot(x, tr, nx), scale = 0;
    // each side carries float roundings of about 1e-7 of its terms
    for (size_t i = 0; i < ny; i++) scale += fabs((double)y[i] * r[i]);
    for (size_t i = 0; i < nx; i++) scale += fabs((double)x[i] * tr[i]);
    ck_assert_msg(fabs(lhs - rhs) <= 1e-6 * scale, "<conv(x), r> = %.9g but <x, conv^T(r)> = %.9g",
                  lhs, rhs);
    print_window(CONVND, &conv);
    printf(": <conv(x), r> %.6f, <x, conv^T(r)> %.6f\n", lhs, rhs);
    free(x), free(w), free(r), free(y), free(tr);
}

START_TEST(conv_transpose_is_the_adjoint_of_convnd) {
    const ref_window convs[] = {
        // rank 1, strided and padded, 2 groups (the floor leaves one input unread)
        {1, 2, 4, 2, {12}, {3}, {2}, {1}, {2}, {0}, 2},
        // rank 1 causal: the conv's shorter right padding, the transpose's output_padding 2
        {1, 1, 2, 3, {7}, {3}, {1}, {2}, {1}, {-2}},
        // rank 2, every axis different, depthwise
        {2, 2, 3, 3, {8, 7}, {3, 2}, {2, 3}, {1, 0}, {1, 2}, {0}, 3},
        // rank 3, every axis different, 2 groups
        {3, 1, 2, 4, {5, 6, 4}, {2, 3, 2}, {2, 1, 3}, {1, 1, 0}, {1, 2, 1}, {0}, 2},
    };
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
        check_adjoint(convs[i], 2000 + 10 * i);
}
END_TEST
#pragma GCC diagnostic pop

START_TEST(nd_output_sizes_follow_pytorch) {
    ref_window g = {.rank = 1, .in = {4}, .k = {3}, .s = {1}, .p = {2}, .d = {1}, .extra = {-2}};
    ck_assert_int_eq(ref_conv_out(&g, 0), 4); // causal keeps the length: 4 + 4 - 2 - 2 - 1 + 1
    g = (ref_window){.rank = 1, .in = {8}, .k = {4}, .s = {1}, .p = {1}, .d = {1}, .extra = {1}};
    ck_assert_int_eq(ref_conv_out(&g, 0), 8); // same with an even kernel: 8 + 2 + 1 - 3 - 1 + 1
    g = (ref_window){.rank = 1, .in = {7}, .k = {2}, .s = {3}, .p = {0}, .d = {1}};
    ck_assert_int_eq(ref_conv_out(&g, 0), 2); // (7 - 1 - 1) / 3 + 1 = 5/3 + 1
    g = (ref_window){.rank = 1, .in = {3}, .k = {4}, .s = {2}, .p = {0}, .d = {1}};
    ck_assert_int_eq(ref_conv_out(&g, 0), 0); // floor(-1 / 2) + 1: the kernel never fits
    // the third axis of a rank-3 window: (5 + 2 - 2*2 - 1) / 1 + 1
    g = (ref_window){
        .rank = 3, .in = {1, 1, 5}, .k = {1, 1, 3}, .s = {1, 1, 1}, .p = {0, 0, 1}, .d = {1, 1, 2}};
    ck_assert_int_eq(ref_conv_out(&g, 2), 3);

    g = (ref_window){.rank = 1, .in = {3}, .k = {3}, .s = {2}, .p = {1}, .d = {1}, .out_pad = {1}};
    ck_assert_int_eq(ref_conv_transpose_out(&g, 0), 6); // 2*2 - 2 + 2 + 1 + 1
    g = (ref_window){.rank = 1, .in = {4}, .k = {3}, .s = {1}, .p = {2}, .d = {2}, .out_pad = {1}};
    ck_assert_int_eq(ref_conv_transpose_out(&g, 0), 5); // 3 - 4 + 4 + 1 + 1

    g = (ref_window){.rank = 1, .in = {6}, .k = {3}, .s = {2}, .p = {1}, .d = {1}};
    ck_assert_int_eq(ref_pool_out(&g, 0), 3); // floor(5 / 2) + 1
    g.ceil = 1;
    ck_assert_int_eq(ref_pool_out(&g, 0), 4); // ceil(5 / 2) + 1: the last window starts at 5 < 7
    g = (ref_window){.rank = 1, .in = {5}, .k = {2}, .s = {2}, .p = {1}, .d = {1}, .ceil = 1};
    // ceil(5 / 2) + 1 = 4, but the 4th window would start at 6 = in + p, all padding: 3
    ck_assert_int_eq(ref_pool_out(&g, 0), 3);
    g = (ref_window){.rank = 1, .in = {13}, .k = {3}, .s = {2}, .p = {1}, .d = {2}};
    ck_assert_int_eq(ref_pool_out(&g, 0), 6); // (13 + 2 - 4 - 1) / 2 + 1, floor or ceil
    g.ceil = 1;
    ck_assert_int_eq(ref_pool_out(&g, 0), 6);
}
END_TEST

START_TEST(conv_transpose_and_causal_conv_by_hand) {
    float y[7], dx[4], dw[3], db[1];
    // Transpose, stride 2, pad 1, output_padding 1, x [1 2 3], w [1 10 100], bias 0.5:
    // out = 2*2 - 2 + 2 + 1 + 1 = 6, and input j feeds output 2j - 1 + kk:
    //   j=0: (-1 cropped) y0 += 10, y1 += 100; j=1: y1 += 2, y2 += 20, y3 += 200;
    //   j=2: y3 += 3, y4 += 30, y5 += 300 (y5 is the output_padding place, fed by a tap).
    const float x3[3] = {1, 2, 3}, w3[3] = {1, 10, 100}, half = 0.5f;
    ref_window t = {.rank = 1,
                    .N = 1,
                    .C = 1,
                    .F = 1,
                    .in = {3},
                    .k = {3},
                    .s = {2},
                    .p = {1},
                    .d = {1},
                    .out_pad = {1}};
    ref_conv_transpose_forward(y, x3, w3, &half, &t);
    expect_floats(y, (const float[]){10.5f, 102.5f, 20.5f, 203.5f, 30.5f, 300.5f}, 6, 0,
                  "transpose y");
    // dy all ones: dx[j] sums the taps that land (110, 111, 111), dw[kk] the inputs whose
    // tap kk lands (kk=0: 2 + 3), db the 6 outputs.
    const float ones[6] = {1, 1, 1, 1, 1, 1};
    ref_conv_transpose_backward(dx, dw, db, ones, x3, w3, &t);
    expect_floats(dx, (const float[]){110, 111, 111}, 3, 0, "transpose dx");
    expect_floats(dw, (const float[]){5, 6, 6}, 3, 0, "transpose dw");
    ck_assert_float_eq(db[0], 6);
    // Kernel 2, no padding: y[2j + kk] = x[j] w[kk]; the output_padding place y6 gets
    // no tap, only the bias.
    t.k[0] = 2, t.p[0] = 0;
    ref_conv_transpose_forward(y, x3, w3, &half, &t);
    expect_floats(y, (const float[]){1.5f, 10.5f, 2.5f, 20.5f, 3.5f, 30.5f, 0.5f}, 7, 0,
                  "transpose k2 y");

    // Causal conv, k 3, p 2 on the left only: y[o] = sum_kk w[kk] x[o - 2 + kk] over
    // x [1 2 3 4]: y0 = 100*1, y1 = 10*1 + 100*2, y2 = 1 + 20 + 300, y3 = 2 + 30 + 400.
    const float x4[4] = {1, 2, 3, 4};
    ref_window c = {.rank = 1,
                    .N = 1,
                    .C = 1,
                    .F = 1,
                    .in = {4},
                    .k = {3},
                    .s = {1},
                    .p = {2},
                    .d = {1},
                    .extra = {-2}};
    ref_convnd_forward(y, x4, w3, NULL, &c);
    expect_floats(y, (const float[]){100, 210, 321, 432}, 4, 0, "causal y");
    // dy all ones: dx[i] sums w over the outputs reading i (x3 is read by y3's last tap
    // only); dw[kk] sums the x that tap kk reads (kk=0: x0 + x1).
    ref_convnd_backward(dx, dw, NULL, ones, x4, w3, &c);
    expect_floats(dx, (const float[]){111, 111, 110, 100}, 4, 0, "causal dx");
    expect_floats(dw, (const float[]){3, 6, 10}, 3, 0, "causal dw");
    // Dilated 2 (p = 4): y[o] = w0 x[o-4] + w1 x[o-2] + w2 x[o]:
    // y0 = 100, y1 = 200, y2 = 10*1 + 100*3, y3 = 10*2 + 100*4.
    c.d[0] = 2, c.p[0] = 4, c.extra[0] = -4;
    ref_convnd_forward(y, x4, w3, NULL, &c);
    expect_floats(y, (const float[]){100, 200, 310, 420}, 4, 0, "dilated causal y");
}
END_TEST

START_TEST(poolnd_ceil_mode_and_count_pad_by_hand) {
    // x [1 2 3 4 5 6], k 3, s 2, p 1, ceil mode: 4 windows starting at -1, 1, 3, 5;
    // the last covers 5, 6, 7, of which 6 is the right padding (in + p = 7) and 7
    // the overhang past it.
    const float x[6] = {1, 2, 3, 4, 5, 6};
    float y[4], dx[6];
    ref_window g = {.rank = 1,
                    .N = 1,
                    .C = 1,
                    .in = {6},
                    .k = {3},
                    .s = {2},
                    .p = {1},
                    .d = {1},
                    .ceil = 1,
                    .count_pad = 1};
    // count_pad: divisors 3, 3, 3 and 2 (the padding counted, the overhang not).
    ref_avgpoolnd_forward(y, x, &g);
    expect_floats(y, (const float[]){1, 3, 5, 3}, 4, 0, "avgpool count_pad y");
    // dy = divisors: each window hands 1 to each of its input cells.
    ref_avgpoolnd_backward(dx, (const float[]){3, 3, 3, 2}, &g);
    expect_floats(dx, (const float[]){1, 2, 1, 2, 1, 2}, 6, 0, "avgpool count_pad dx");
    // without count_pad: divisors 2, 3, 3, 1 (input cells only).
    g.count_pad = 0;
    ref_avgpoolnd_forward(y, x, &g);
    expect_floats(y, (const float[]){1.5f, 3, 5, 6}, 4, 0, "avgpool y");
    ref_avgpoolnd_backward(dx, (const float[]){2, 3, 3, 1}, &g);
    expect_floats(dx, (const float[]){1, 2, 1, 2, 1, 2}, 6, 0, "avgpool dx");
    // max: the padding never wins; 6 wins the last two windows.
    ref_maxpoolnd_forward(y, x, &g);
    expect_floats(y, (const float[]){2, 4, 6, 6}, 4, 0, "maxpool ceil y");
    ref_maxpoolnd_backward(dx, (const float[]){1, 2, 3, 4}, x, &g);
    expect_floats(dx, (const float[]){0, 1, 0, 2, 0, 7}, 6, 0, "maxpool ceil dx");
    // Dilation 3, k 2, s 2 over [5 1 4 2 3 0 9]: windows {0, 3} and {2, 5}; 9 is in none.
    const float xd[7] = {5, 1, 4, 2, 3, 0, 9};
    g = (ref_window){.rank = 1, .N = 1, .C = 1, .in = {7}, .k = {2}, .s = {2}, .p = {0}, .d = {3}};
    ref_maxpoolnd_forward(y, xd, &g);
    expect_floats(y, (const float[]){5, 4}, 2, 0, "dilated maxpool y");
}
END_TEST

/* ---- conventions: batch sums, overwriting ---------------------------------------------- */

START_TEST(batch_gradients_are_sums_of_per_sample_gradients) {
    // conv: N=3 at once equals three N=1 calls added up, for dw and db; dx is per sample.
    enum { N = 3, C = 2, H = 5, W = 6, F = 2, K = 3, nx = C * H * W, nw = F * C * K * K };
    const int OH = ref_out_size(H, K, 2, 1), OW = ref_out_size(W, K, 2, 1);
    const size_t ny = (size_t)F * OH * OW;
    float *x = random_floats(N * nx, 700, 1), *w = random_floats(nw, 701, 1);
    float *dy = random_floats(N * ny, 702, 1);
    float *dx = alloc_floats(N * nx), *dw = alloc_floats(nw), *db = alloc_floats(F);
    float *dx1 = alloc_floats(nx), *dw1 = alloc_floats(nw), *db1 = alloc_floats(F);
    double sum_w[nw], sum_b[F];
    memset(sum_w, 0, sizeof sum_w);
    memset(sum_b, 0, sizeof sum_b);
    ref_conv2d_backward(dx, dw, db, dy, x, w, N, C, H, W, F, K, K, 2, 2, 1, 1);
    for (int n = 0; n < N; n++) {
        ref_conv2d_backward(dx1, dw1, db1, dy + n * ny, x + n * nx, w, 1, C, H, W, F, K, K, 2, 2, 1,
                            1);
        expect_floats(dx + n * nx, dx1, nx, 1e-6, "conv dx of one sample");
        for (size_t i = 0; i < nw; i++) sum_w[i] += dw1[i];
        for (int f = 0; f < F; f++) sum_b[f] += db1[f];
    }
    for (size_t i = 0; i < nw; i++) ck_assert_double_eq_tol(dw[i], sum_w[i], 1e-5);
    for (int f = 0; f < F; f++) ck_assert_double_eq_tol(db[f], sum_b[f], 1e-5);
    free(x), free(w), free(dy), free(dx), free(dw), free(db), free(dx1), free(dw1), free(db1);
}
END_TEST

START_TEST(backward_passes_overwrite_their_outputs) {
    // The same call twice into the same outputs gives the same answer, and
    // the answer does not depend on what the outputs held before.
    enum { N = 2, C = 2, H = 5, W = 5, F = 3, K = 3 };
    const size_t nx = N * C * H * W, nw = F * C * K * K, ny = N * F * H * W;
    float *x = random_floats(nx, 800, 1), *w = random_floats(nw, 801, 1);
    float *dy = random_floats(ny, 802, 1), *y = alloc_floats(ny);
    float *a[3], *b[3];
    const size_t sizes[3] = {nx, nw, F};
    for (int i = 0; i < 3; i++) {
        a[i] = alloc_floats(sizes[i]);
        b[i] = alloc_floats(sizes[i]);
        for (size_t j = 0; j < sizes[i]; j++) b[i][j] = -1e30f;
    }
    ref_conv2d_backward(a[0], a[1], a[2], dy, x, w, N, C, H, W, F, K, K, 1, 1, 1, 1);
    ref_conv2d_backward(b[0], b[1], b[2], dy, x, w, N, C, H, W, F, K, K, 1, 1, 1, 1);
    ref_conv2d_backward(b[0], b[1], b[2], dy, x, w, N, C, H, W, F, K, K, 1, 1, 1, 1);
    for (int i = 0; i < 3; i++)
        expect_floats(b[i], a[i], sizes[i], 0, "conv gradient called twice");

    // Pools, linear, activations and softmax the same way, over dx alone.
    ref_maxpool_backward(a[0], dy, x, N, C, H, W, K, K, 2, 2, 0, 0);
    ref_maxpool_backward(b[0], dy, x, N, C, H, W, K, K, 2, 2, 0, 0);
    ref_maxpool_backward(b[0], dy, x, N, C, H, W, K, K, 2, 2, 0, 0);
    expect_floats(b[0], a[0], nx, 0, "maxpool dx called twice");
    ref_avgpool_backward(a[0], dy, N, C, H, W, K, K, 2, 2, 0, 0);
    ref_avgpool_backward(b[0], dy, N, C, H, W, K, K, 2, 2, 0, 0);
    ref_avgpool_backward(b[0], dy, N, C, H, W, K, K, 2, 2, 0, 0);
    expect_floats(b[0], a[0], nx, 0, "avgpool dx called twice");
    ref_global_avgpool_backward(a[0], dy, N, C, H * W);
    ref_global_avgpool_backward(b[0], dy, N, C, H * W);
    ref_global_avgpool_backward(b[0], dy, N, C, H * W);
    expect_floats(b[0], a[0], nx, 0, "global_avgpool dx called twice");
    ref_linear_backward(a[0], a[1], a[2], dy, x, w, N, 9, F);
    ref_linear_backward(b[0], b[1], b[2], dy, x, w, N, 9, F);
    ref_linear_backward(b[0], b[1], b[2], dy, x, w, N, 9, F);
    expect_floats(b[0], a[0], N * 9, 0, "linear dx called twice");
    expect_floats(b[1], a[1], F * 9, 0, "linear dw called twice");
    expect_floats(b[2], a[2], F, 0, "linear db called twice");
    ref_sigmoid_forward(y, x, nx);
    ref_sigmoid_backward(a[0], dy, y, nx);
    ref_sigmoid_backward(b[0], dy, y, nx);
    expect_floats(b[0], a[0], nx, 0, "sigmoid dx called twice");
    const int32_t labels[2] = {1, 4};
    ref_softmax_xent_backward(a[0], x, labels, 2, 5);
    ref_softmax_xent_backward(b[0], x, labels, 2, 5);
    ref_softmax_xent_backward(b[0], x, labels, 2, 5);
    expect_floats(b[0], a[0], 10, 0, "softmax dlogits called twice");
    for (int i = 0; i < 3; i++) free(a[i]), free(b[i]);
    free(x), free(w), free(dy), free(y);
}
END_TEST

/* ---- upsample ------------------------------------------------------------------------ */

typedef struct {
    ref_upsample u;
    float *x, *y, *r; // (N,C,in...) (N,C,out...) (N,C,out...)
    size_t ny;
} upsample_case;

static double upsample_loss(void *ctx) {
    upsample_case *c = ctx;
    ref_upsample_forward(c->y, c->x, &c->u);
    return dot(c->y, c->r, c->ny);
}

/* The cases are ref_upsample rows: rank, N, C, in, scale, linear. */
START_TEST(upsample_backward_matches_finite_differences) {
    const ref_upsample shapes[] = {
        {1, 2, 3, {5}, {2}, 0},             // nearest, batch 2
        {1, 2, 3, {5}, {3}, 1},             // linear, scale 3
        {1, 1, 2, {1}, {4}, 1},             // one cell: every output is it
        {1, 3, 1, {2}, {1}, 1},             // scale 1: the identity
        {2, 1, 2, {3, 4}, {2, 3}, 1},       // bilinear, anisotropic
        {2, 2, 1, {4, 3}, {3, 1}, 0},       // nearest, one axis unscaled
        {2, 1, 2, {5, 7}, {2, 2}, 1},       // odd sizes
        {3, 1, 2, {2, 3, 2}, {2, 1, 3}, 1}, // trilinear, every axis its own
        {3, 2, 1, {3, 2, 2}, {2, 2, 2}, 0}, // nearest volume
    };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        ref_upsample u = shapes[k];
        size_t nx = (size_t)u.N * u.C, ny = nx;
        for (int a = 0; a < u.rank; a++)
            nx *= (size_t)u.in[a], ny *= (size_t)(u.in[a] * u.scale[a]);
        upsample_case c = {.u = u,
                           .x = random_floats(nx, 1600 + 10 * k, 1.0f),
                           .y = alloc_floats(ny),
                           .r = random_floats(ny, 1601 + 10 * k, 1.0f),
                           .ny = ny};
        float *dx = alloc_floats(nx);
        upsample_loss(&c);
        check_guard(c.y, ny, "upsample y");
        // L = sum(y * r), so dL/dy = r.
        ref_upsample_backward(dx, c.r, &u);
        check_guard(dx, nx, "upsample dx");
        double ex = fd_check(UPSAMPLE, "dx", upsample_loss, &c, c.x, dx, nx);
        printf("upsample r%d N%d C%d", u.rank, u.N, u.C);
        print_axes("in", u.in, u.rank);
        print_axes("scale", u.scale, u.rank);
        printf(" %s: dx %.1e\n", u.linear ? "linear" : "nearest", ex);
        free(c.x), free(c.y), free(c.r), free(dx);
    }
}
END_TEST

START_TEST(upsample_by_hand) {
    float y[16], dx[4];
    // Linear, length 2, scale 2: src = (o + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25,
    // 0.75, 1.25 (i1 = min(2, 1) = 1), so y = [1, 0.75 + 0.75, 0.25 + 2.25, 3].
    const ref_upsample lin = {1, 1, 1, {2}, {2}, 1};
    ref_upsample_forward(y, (const float[]){1, 3}, &lin);
    expect_floats(y, (const float[]){1, 1.5f, 2.5f, 3}, 4, 0, "linear x2 y");
    // dx0 = 1 + 0.75 * 2 + 0.25 * 3, dx1 = 0.25 * 2 + 0.75 * 3 + 4: the sum of dy kept.
    ref_upsample_backward(dx, (const float[]){1, 2, 3, 4}, &lin);
    expect_floats(dx, (const float[]){3.25f, 6.75f}, 2, 0, "linear x2 dx");
    // Linear, scale 3: src = -1/3 (0), 0, 1/3, 2/3, 1, 4/3 over [0, 3].
    const ref_upsample lin3 = {1, 1, 1, {2}, {3}, 1};
    ref_upsample_forward(y, (const float[]){0, 3}, &lin3);
    expect_floats(y, (const float[]){0, 0, 1, 2, 3, 3}, 6, 1e-6, "linear x3 y");
    // Nearest, scale 3: three copies; each dx sums its three dy.
    const ref_upsample near3 = {1, 1, 1, {2}, {3}, 0};
    ref_upsample_forward(y, (const float[]){1, 3}, &near3);
    expect_floats(y, (const float[]){1, 1, 1, 3, 3, 3}, 6, 0, "nearest x3 y");
    ref_upsample_backward(dx, (const float[]){1, 2, 3, 4, 5, 6}, &near3);
    expect_floats(dx, (const float[]){6, 15}, 2, 0, "nearest x3 dx");
    // Bilinear [1 2; 3 4] by 2: rows and columns mix as above (PyTorch's known answer).
    const ref_upsample bi = {2, 1, 1, {2, 2}, {2, 2}, 1};
    ref_upsample_forward(y, (const float[]){1, 2, 3, 4}, &bi);
    expect_floats(y,
                  (const float[]){1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f,
                                  3.5f, 3, 3.25f, 3.75f, 4},
                  16, 0, "bilinear 2x2 y");
    // Nearest 1x2 by 2x1 (anisotropic): rows doubled, columns kept.
    const ref_upsample an = {2, 1, 1, {1, 2}, {2, 1}, 0};
    ref_upsample_forward(y, (const float[]){5, 7}, &an);
    expect_floats(y, (const float[]){5, 7, 5, 7}, 4, 0, "nearest 2x1 y");
}
END_TEST

START_TEST(output_sizes_floor) {
    ck_assert_int_eq(ref_out_size(7, 2, 3, 0), 2);  // (7-2)/3+1
    ck_assert_int_eq(ref_out_size(13, 3, 2, 1), 7); // (13+2-3)/2+1
    ck_assert_int_eq(ref_out_size(9, 3, 1, 2), 11); // pad larger than half the kernel
    ck_assert_int_eq(ref_out_size(4, 2, 2, 0), 2);
    ck_assert_int_eq(ref_out_size(1, 2, 1, 1), 2);
    ck_assert_int_eq(ref_out_size(8, 3, 2, 0), 3); // (8-3)/2+1 = 3.5 -> 3
}
END_TEST

int main(void) {
    Suite *s = suite_create("ref");
    TCase *t = tcase_create("ref");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, output_sizes_floor);
    tcase_add_test(t, conv2d_forward_and_backward_by_hand);
    tcase_add_test(t, pools_forward_and_backward_by_hand);
    tcase_add_test(t, global_avgpool_by_hand);
    tcase_add_test(t, maxpool_padding_never_wins);
    tcase_add_test(t, maxpool_ties_go_to_the_first_maximum);
    tcase_add_test(t, activations_by_hand);
    tcase_add_test(t, activations_of_x_by_hand);
    tcase_add_test(t, regression_losses_by_hand);
    tcase_add_test(t, linear_by_hand);
    tcase_add_test(t, softmax_xent_by_hand);
    tcase_add_test(t, softmax_xent_stays_finite_for_huge_logits);
    tcase_add_test(t, softmax_xent_positions_by_hand);
    tcase_add_test(t, softmax_xent_positions_at_one_position_is_softmax_xent);
    tcase_add_test(t, batch_gradients_are_sums_of_per_sample_gradients);
    tcase_add_test(t, backward_passes_overwrite_their_outputs);
    tcase_add_test(t, conv2d_backward_matches_finite_differences);
    tcase_add_test(t, maxpool_backward_matches_finite_differences);
    tcase_add_test(t, avgpool_backward_matches_finite_differences);
    tcase_add_test(t, global_avgpool_backward_matches_finite_differences);
    tcase_add_test(t, global_maxpool_backward_matches_finite_differences_and_picks_the_first_tie);
    tcase_add_test(t, activations_backward_match_finite_differences);
    tcase_add_test(t, activations_of_x_backward_match_finite_differences);
    tcase_add_test(t, regression_losses_match_finite_differences_in_prediction_and_target);
    tcase_add_test(t, linear_backward_matches_finite_differences);
    tcase_add_test(t, softmax_xent_backward_matches_finite_differences);
    tcase_add_test(t, softmax_xent_positions_backward_matches_finite_differences);
    tcase_add_test(t, softmax_xent_smoothed_backward_matches_finite_differences);
    tcase_add_test(t, batchnorm_by_hand);
    tcase_add_test(t, batchnorm_backward_matches_finite_differences);
    tcase_add_test(t, nd_output_sizes_follow_pytorch);
    tcase_add_test(t, conv_transpose_and_causal_conv_by_hand);
    tcase_add_test(t, poolnd_ceil_mode_and_count_pad_by_hand);
    tcase_add_test(t, convnd_at_rank_2_equals_conv2d_full);
    tcase_add_test(t, poolnd_at_rank_2_equal_the_2d_pools);
    tcase_add_test(t, conv_transpose_is_the_adjoint_of_convnd);
    tcase_add_test(t, convnd_backward_matches_finite_differences);
    tcase_add_test(t, conv_transpose_backward_matches_finite_differences);
    tcase_add_test(t, maxpoolnd_backward_matches_finite_differences);
    tcase_add_test(t, avgpoolnd_backward_matches_finite_differences);
    tcase_add_test(t, upsample_by_hand);
    tcase_add_test(t, upsample_backward_matches_finite_differences);
    suite_add_tcase(s, t);
    int status = test_run_suite(s);
    printf("largest relative finite-difference error per layer (tolerance %.0e):\n", FD_TOL);
    for (int l = 0; l < LAYER_COUNT; l++) printf("  %-12s %.2e\n", layer_names[l], worst[l]);
    return status;
}
