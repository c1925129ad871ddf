/* A double-precision interpreter of a DAG of CNN layers; see graph_ref.h for
 * the conventions.
 *
 * One forward and one backward function per op, all plain loops over NCHW.
 * Every backward ADDS into its input gradients (dx += ...), never assigns: a
 * tensor read by several nodes must receive the sum of what they send back,
 * and the interpreter zeroes each gradient once before the backward sweep. */
#include "graph_ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------------- */

/* Misuse of the reference ends the test with a message, NDEBUG or not. */
static void require(int ok, const char *format, ...) {
    if (ok) return;
    va_list args;
    va_start(args, format);
    fprintf(stderr, "graph_ref: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    abort();
}

/* n zeroed doubles; running out of memory ends the test. */
static double *zeroed(size_t n) {
    double *p = calloc(n ? n : 1, sizeof *p);
    require(p != NULL, "out of memory for %zu doubles", n);
    return p;
}

static size_t numel(ref_shape s) {
    return (size_t)s.c * s.h * s.w;
}

/* The index of element (n,c,h,w) of a tensor (N,C,H,W). */
static size_t at(int n, int c, int h, int w, int C, int H, int W) {
    return (((size_t)n * C + c) * H + h) * W + w;
}

/* (in + 2*pad - k) / stride + 1, floored: the output size of conv and pools. */
static int out_size(int in, int k, int stride, int pad) {
    return (in + 2 * pad - k) / stride + 1;
}

/* ---- shapes and parameters ---------------------------------------------------------------- */

/* 1 when the kernel, stride and padding of nd fit an input of shape in. */
static int window_fits(const ref_node *nd, ref_shape in) {
    return nd->kh >= 1 && nd->kw >= 1 && nd->sh >= 1 && nd->sw >= 1 && nd->ph >= 0 && nd->pw >= 0 &&
           in.h + 2 * nd->ph >= nd->kh && in.w + 2 * nd->pw >= nd->kw;
}

/* The output shape of node i of g, whose earlier nodes have shapes (i);
 * returns 0 when node i is impossible. */
static int node_shape(const ref_graph *g, const ref_shape *shapes, int i, ref_shape *out) {
    const ref_node *nd = &g->nodes[i];
    int joins = nd->op == REF_ADD || nd->op == REF_CONCAT;
    int pairs = nd->op == REF_MSE || nd->op == REF_L1 || nd->op == REF_BCE; /* and the target */
    if (joins ? nd->nin < 2 || nd->nin > REF_MAX_INPUTS : nd->nin != 1 + pairs) return 0;
    ref_shape in[REF_MAX_INPUTS];
    for (int j = 0; j < nd->nin; j++) {
        if (nd->in[j] < REF_INPUT || nd->in[j] >= i) return 0; // not an earlier node
        in[j] = nd->in[j] == REF_INPUT ? g->input : shapes[nd->in[j]];
    }
    switch (nd->op) {
    case REF_CONV2D:
        if (nd->filters < 1 || !window_fits(nd, in[0]) || (nd->bias != 0 && nd->bias != 1))
            return 0;
        *out = (ref_shape){nd->filters, out_size(in[0].h, nd->kh, nd->sh, nd->ph),
                           out_size(in[0].w, nd->kw, nd->sw, nd->pw)};
        return 1;
    case REF_MAXPOOL:
    case REF_AVGPOOL:
        if (!window_fits(nd, in[0])) return 0;
        // A max-pool window of padding alone would have no winner.
        if (nd->op == REF_MAXPOOL && (nd->ph >= nd->kh || nd->pw >= nd->kw)) return 0;
        *out = (ref_shape){in[0].c, out_size(in[0].h, nd->kh, nd->sh, nd->ph),
                           out_size(in[0].w, nd->kw, nd->sw, nd->pw)};
        return 1;
    case REF_GLOBAL_AVGPOOL:
        *out = (ref_shape){in[0].c, 1, 1};
        return 1;
    case REF_RELU:
    case REF_SIGMOID:
    case REF_TANH:
    case REF_LEAKY_RELU:
    case REF_ELU:
    case REF_GELU:
    case REF_SILU:
    case REF_HARDSWISH:
        *out = in[0];
        return 1;
    case REF_LINEAR:
        if (nd->units < 1 || (nd->bias != 0 && nd->bias != 1)) return 0;
        *out = (ref_shape){nd->units, 1, 1};
        return 1;
    case REF_FLATTEN:
        *out = (ref_shape){(int)numel(in[0]), 1, 1};
        return 1;
    case REF_ADD:
        for (int j = 1; j < nd->nin; j++)
            if (in[j].c != in[0].c || in[j].h != in[0].h || in[j].w != in[0].w) return 0;
        *out = in[0];
        return 1;
    case REF_CONCAT:
        *out = in[0];
        for (int j = 1; j < nd->nin; j++) {
            if (in[j].h != in[0].h || in[j].w != in[0].w) return 0;
            out->c += in[j].c;
        }
        return 1;
    case REF_BATCHNORM:
        *out = in[0];
        return 1;
    case REF_UPSAMPLE:
        if (nd->kh < 1 || nd->kw < 1) return 0;
        *out = (ref_shape){in[0].c, in[0].h * nd->kh, in[0].w * nd->kw};
        return 1;
    case REF_SOFTMAX_XENT:
        if (i != g->count - 1 || in[0].h != 1 || in[0].w != 1) return 0;
        *out = in[0];
        return 1;
    case REF_XENT_POSITIONS:
        if (i != g->count - 1 || in[0].c < 2) return 0;
        *out = in[0];
        return 1;
    case REF_RESHAPE:
        *out = (ref_shape){nd->units, nd->kh, nd->kw};
        return numel(*out) == numel(in[0]);
    case REF_MSE:
    case REF_L1:
    case REF_BCE:
        if (i != g->count - 1 || nd->nin != 2 || numel(in[0]) != numel(in[1])) return 0;
        *out = in[0];
        return 1;
    }
    return 0; // an op this interpreter does not know
}

int ref_graph_shapes(const ref_graph *g, ref_shape *shapes) {
    if (!g || !g->nodes || g->count < 1 || g->input.c < 1 || g->input.h < 1 || g->input.w < 1)
        return 0;
    ref_shape *own = malloc((size_t)g->count * sizeof *own);
    require(own != NULL, "out of memory for %d shapes", g->count);
    int ok = 1;
    for (int i = 0; i < g->count && ok; i++) ok = node_shape(g, own, i, &own[i]);
    if (ok && shapes) memcpy(shapes, own, (size_t)g->count * sizeof *own);
    free(own);
    return ok;
}

/* The shapes (count) of a graph that must be possible; the caller frees them. */
static ref_shape *checked_shapes(const ref_graph *g) {
    require(g && g->count >= 1, "an empty graph");
    ref_shape *shapes = malloc((size_t)g->count * sizeof *shapes);
    require(shapes != NULL, "out of memory for %d shapes", g->count);
    require(ref_graph_shapes(g, shapes), "the graph is impossible (see ref_graph_shapes)");
    return shapes;
}

/* The shape of what input index `in` names: an earlier node or the graph's input. */
static ref_shape shape_of(const ref_graph *g, const ref_shape *shapes, int in) {
    return in == REF_INPUT ? g->input : shapes[in];
}

/* The weight and bias sizes of node i, whose input has shape in. */
static void param_sizes(const ref_node *nd, ref_shape in, size_t *weight, size_t *bias) {
    *weight = *bias = 0;
    if (nd->op == REF_CONV2D) {
        *weight = (size_t)nd->filters * in.c * nd->kh * nd->kw; // (F,C,KH,KW)
        *bias = nd->bias ? (size_t)nd->filters : 0;             // (F)
    } else if (nd->op == REF_LINEAR) {
        *weight = (size_t)nd->units * numel(in);  // (O,I)
        *bias = nd->bias ? (size_t)nd->units : 0; // (O)
    } else if (nd->op == REF_BATCHNORM) {
        *weight = *bias = (size_t)in.c; // (C), (C)
    }
}

/* Where node's parameters start, with their sizes; shapes (count) are g's. */
static size_t param_layout(const ref_graph *g, const ref_shape *shapes, int node, size_t *weight,
                           size_t *bias) {
    size_t offset = 0;
    for (int i = 0; i < node; i++) {
        size_t w, b;
        param_sizes(&g->nodes[i], shape_of(g, shapes, g->nodes[i].in[0]), &w, &b);
        offset += w + b;
    }
    param_sizes(&g->nodes[node], shape_of(g, shapes, g->nodes[node].in[0]), weight, bias);
    return offset;
}

size_t ref_graph_param_offset(const ref_graph *g, int node, size_t *weight_count,
                              size_t *bias_count) {
    ref_shape *shapes = checked_shapes(g);
    require(node >= 0 && node < g->count, "node %d of a graph of %d", node, g->count);
    size_t w, b, offset = param_layout(g, shapes, node, &w, &b);
    free(shapes);
    if (weight_count) *weight_count = w;
    if (bias_count) *bias_count = b;
    return offset;
}

size_t ref_graph_param_count(const ref_graph *g) {
    size_t w, b, offset = ref_graph_param_offset(g, g->count - 1, &w, &b);
    return offset + w + b;
}

/* ---- conv2d ------------------------------------------------------------------------------- */

static void conv2d_forward(double *y, const double *x, const double *w, const double *b,
                           const ref_node *nd, int N, ref_shape in, ref_shape out) {
    // y is (N,F,OH,OW), x is (N,C,H,W), w is (F,C,KH,KW), b is (F) or NULL
    int C = in.c, H = in.h, W = in.w, F = out.c, OH = out.h, OW = out.w, KH = nd->kh, KW = nd->kw;
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double sum = b ? b[f] : 0.0;
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int ih = oh * nd->sh - nd->ph + kh, iw = ow * nd->sw - nd->pw + kw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue; // a zero
                                sum +=
                                    w[at(f, c, kh, kw, C, KH, KW)] * x[at(n, c, ih, iw, C, H, W)];
                            }
                    y[at(n, f, oh, ow, F, OH, OW)] = sum;
                }
}

static void conv2d_backward(double *dx, double *dw, double *db, const double *dy, const double *x,
                            const double *w, const ref_node *nd, int N, ref_shape in,
                            ref_shape out) {
    // dx is (N,C,H,W), dw is (F,C,KH,KW), db is (F) or NULL: all added into
    // dy is (N,F,OH,OW), x is (N,C,H,W), w is (F,C,KH,KW)
    // forward was y[n,f,oh,ow] = b[f] + sum_{c,kh,kw} w[f,c,kh,kw] * x[n,c,ih,iw]
    //   with ih = oh*sh - ph + kh, iw = ow*sw - pw + kw (padded terms absent),
    // so backward is, for every term of that sum and every sample,
    //   dx[n,c,ih,iw] += w[f,c,kh,kw] * dy[n,f,oh,ow]
    //   dw[f,c,kh,kw] += x[n,c,ih,iw] * dy[n,f,oh,ow]
    // and db[f] += dy[n,f,oh,ow] once per output.
    int C = in.c, H = in.h, W = in.w, F = out.c, OH = out.h, OW = out.w, KH = nd->kh, KW = nd->kw;
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double d = dy[at(n, f, oh, ow, F, OH, OW)];
                    if (db) db[f] += d;
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int ih = oh * nd->sh - nd->ph + kh, iw = ow * nd->sw - nd->pw + kw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                dx[at(n, c, ih, iw, C, H, W)] += w[at(f, c, kh, kw, C, KH, KW)] * d;
                                dw[at(f, c, kh, kw, C, KH, KW)] += x[at(n, c, ih, iw, C, H, W)] * d;
                            }
                }
}

/* ---- pools ------------------------------------------------------------------------------- */

/* The winner of max-pool window (oh,ow) over one plane (H,W): the index
 * ih*W + iw of its first strictly greatest real pixel in row-major window
 * order. Padded positions are skipped, so they never win; ph < kh and pw < kw
 * (checked with the shapes) leave a real pixel in every window. */
static size_t maxpool_winner(const double *plane, int H, int W, int oh, int ow,
                             const ref_node *nd) {
    size_t best = (size_t)-1;
    for (int kh = 0; kh < nd->kh; kh++)
        for (int kw = 0; kw < nd->kw; kw++) {
            int ih = oh * nd->sh - nd->ph + kh, iw = ow * nd->sw - nd->pw + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            size_t i = (size_t)ih * W + iw;
            if (best == (size_t)-1 || plane[i] > plane[best]) best = i;
        }
    return best;
}

static void maxpool_forward(double *y, const double *x, const ref_node *nd, int N, ref_shape in,
                            ref_shape out) {
    // y is (N,C,OH,OW), x is (N,C,H,W)
    int C = in.c, H = in.h, W = in.w, OH = out.h, OW = out.w;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            const double *plane = x + at(n, c, 0, 0, C, H, W);
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++)
                    y[at(n, c, oh, ow, C, OH, OW)] = plane[maxpool_winner(plane, H, W, oh, ow, nd)];
        }
}

static void maxpool_backward(double *dx, const double *dy, const double *x, const ref_node *nd,
                             int N, ref_shape in, ref_shape out) {
    // dx is (N,C,H,W), added into; dy is (N,C,OH,OW), x is (N,C,H,W)
    // forward was y[n,c,oh,ow] = x[n,c, winner of the window],
    // so backward is dx[n,c, winner] += dy[n,c,oh,ow]; a pixel winning several
    // overlapping windows collects them all, one winning none gets nothing.
    int C = in.c, H = in.h, W = in.w, OH = out.h, OW = out.w;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t plane = at(n, c, 0, 0, C, H, W);
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++)
                    dx[plane + maxpool_winner(x + plane, H, W, oh, ow, nd)] +=
                        dy[at(n, c, oh, ow, C, OH, OW)];
        }
}

static void avgpool_forward(double *y, const double *x, const ref_node *nd, int N, ref_shape in,
                            ref_shape out) {
    // y is (N,C,OH,OW), x is (N,C,H,W); padded zeros count towards the kh*kw divisor
    int C = in.c, H = in.h, W = in.w, OH = out.h, OW = out.w;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double sum = 0;
                    for (int kh = 0; kh < nd->kh; kh++)
                        for (int kw = 0; kw < nd->kw; kw++) {
                            int ih = oh * nd->sh - nd->ph + kh, iw = ow * nd->sw - nd->pw + kw;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue; // adds a zero
                            sum += x[at(n, c, ih, iw, C, H, W)];
                        }
                    y[at(n, c, oh, ow, C, OH, OW)] = sum / (nd->kh * nd->kw);
                }
}

static void avgpool_backward(double *dx, const double *dy, const ref_node *nd, int N, ref_shape in,
                             ref_shape out) {
    // dx is (N,C,H,W), added into; dy is (N,C,OH,OW)
    // forward was y[n,c,oh,ow] = (sum of the window's real pixels) / (kh*kw),
    // so backward is dx[pixel] += dy[n,c,oh,ow] / (kh*kw) for every real pixel
    // of every window that holds it.
    int C = in.c, H = in.h, W = in.w, OH = out.h, OW = out.w;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double d = dy[at(n, c, oh, ow, C, OH, OW)] / (nd->kh * nd->kw);
                    for (int kh = 0; kh < nd->kh; kh++)
                        for (int kw = 0; kw < nd->kw; kw++) {
                            int ih = oh * nd->sh - nd->ph + kh, iw = ow * nd->sw - nd->pw + kw;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            dx[at(n, c, ih, iw, C, H, W)] += d;
                        }
                }
}

static void global_avgpool_forward(double *y, const double *x, int N, ref_shape in) {
    // y is (N,C,1,1), x is (N,C,H,W)
    int C = in.c, H = in.h, W = in.w;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double sum = 0;
            for (int h = 0; h < H; h++)
                for (int w = 0; w < W; w++) sum += x[at(n, c, h, w, C, H, W)];
            y[at(n, c, 0, 0, C, 1, 1)] = sum / (H * W);
        }
}

static void global_avgpool_backward(double *dx, const double *dy, int N, ref_shape in) {
    // dx is (N,C,H,W), added into; dy is (N,C,1,1)
    // forward was y[n,c] = (sum of plane (n,c)) / (H*W), so backward is
    // dx[n,c,h,w] += dy[n,c] / (H*W) for every pixel of the plane.
    int C = in.c, H = in.h, W = in.w;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double d = dy[at(n, c, 0, 0, C, 1, 1)] / (H * W);
            for (int h = 0; h < H; h++)
                for (int w = 0; w < W; w++) dx[at(n, c, h, w, C, H, W)] += d;
        }
}

/* ---- upsample ---------------------------------------------------------------------------- */

/* The two input rows (or columns) output o reads along an axis of `in` cells grown by s,
 * and their weights: nearest reads o / s alone; bilinear (align_corners=False) reads
 * floor(src) and the next (the last at most) with src = (o + 0.5) / s - 0.5, at least 0. */
static void upsample_axis(int o, int in, int s, int bilinear, int at[2], double wt[2]) {
    if (!bilinear) {
        at[0] = at[1] = o / s;
        wt[0] = 1, wt[1] = 0;
        return;
    }
    double src = fmax((o + 0.5) / s - 0.5, 0.0);
    at[0] = (int)src;
    at[1] = at[0] + 1 < in ? at[0] + 1 : in - 1;
    wt[1] = src - at[0];
    wt[0] = 1 - wt[1];
}

static void upsample_forward(double *y, const double *x, const ref_node *nd, int N, ref_shape in,
                             ref_shape out) {
    // y is (N,C,H*kh,W*kw), x is (N,C,H,W): y[oh,ow] = sum over a, b of
    // wh[a] ww[b] x[h[a], w[b]]
    for (int n = 0; n < N; n++)
        for (int c = 0; c < in.c; c++)
            for (int oh = 0; oh < out.h; oh++)
                for (int ow = 0; ow < out.w; ow++) {
                    int h[2], w[2];
                    double wh[2], ww[2], sum = 0;
                    upsample_axis(oh, in.h, nd->kh, nd->bilinear, h, wh);
                    upsample_axis(ow, in.w, nd->kw, nd->bilinear, w, ww);
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++)
                            sum += wh[a] * ww[b] * x[at(n, c, h[a], w[b], in.c, in.h, in.w)];
                    y[at(n, c, oh, ow, in.c, out.h, out.w)] = sum;
                }
}

static void upsample_backward(double *dx, const double *dy, const ref_node *nd, int N, ref_shape in,
                              ref_shape out) {
    // dx is (N,C,H,W), added into; dy is (N,C,H*kh,W*kw)
    // forward was y[oh,ow] = sum of wh[a] ww[b] x[h[a], w[b]], so backward is
    // dx[h[a], w[b]] += wh[a] ww[b] dy[oh,ow] for every output and tap.
    for (int n = 0; n < N; n++)
        for (int c = 0; c < in.c; c++)
            for (int oh = 0; oh < out.h; oh++)
                for (int ow = 0; ow < out.w; ow++) {
                    int h[2], w[2];
                    double wh[2], ww[2], d = dy[at(n, c, oh, ow, in.c, out.h, out.w)];
                    upsample_axis(oh, in.h, nd->kh, nd->bilinear, h, wh);
                    upsample_axis(ow, in.w, nd->kw, nd->bilinear, w, ww);
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++)
                            dx[at(n, c, h[a], w[b], in.c, in.h, in.w)] += wh[a] * ww[b] * d;
                }
}

/* ---- activations -------------------------------------------------------------------------- */

static void activation_forward(ref_op op, double *y, const double *x, size_t n) {
    // y, x are (n)
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (op == REF_RELU) y[i] = v > 0 ? v : 0.0;
        // exp of a non-positive argument only, so neither branch overflows
        if (op == REF_SIGMOID) y[i] = v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
        if (op == REF_TANH) y[i] = tanh(v);
    }
}

static void activation_backward(ref_op op, double *dx, const double *dy, const double *x,
                                const double *y, size_t n) {
    // dx (n) added into; dy, x, y are (n)
    // relu:    forward was y = max(x, 0),     so backward is dx += dy where x > 0
    // sigmoid: forward was y = 1 / (1+e^-x),  so backward is dx += dy * y * (1 - y)
    // tanh:    forward was y = tanh(x),       so backward is dx += dy * (1 - y^2)
    for (size_t i = 0; i < n; i++) {
        if (op == REF_RELU) dx[i] += x[i] > 0 ? dy[i] : 0.0;
        if (op == REF_SIGMOID) dx[i] += dy[i] * y[i] * (1.0 - y[i]);
        if (op == REF_TANH) dx[i] += dy[i] * (1.0 - y[i] * y[i]);
    }
}

/* The activations differentiated from x: f(x), and f'(x) into *slope unless
 * it is NULL. Written as the pieces each function is made of. */
static double of_x(const ref_node *nd, double x, double *slope) {
    const double pi = 3.14159265358979323846;
    double d = 1, y = x;
    if (nd->op == REF_LEAKY_RELU && x <= 0) y = nd->a * x, d = nd->a;
    if (nd->op == REF_ELU && x <= 0) y = nd->a * (exp(x) - 1), d = nd->a * exp(x);
    if (nd->op == REF_GELU && !nd->approx) {
        double phi = 0.5 * erfc(-x / sqrt(2.0)); // the normal distribution function
        y = x * phi, d = phi + x * exp(-0.5 * x * x) / sqrt(2 * pi);
    }
    if (nd->op == REF_GELU && nd->approx) {
        double u = sqrt(2 / pi) * (x + 0.044715 * x * x * x);
        double du = sqrt(2 / pi) * (1 + 3 * 0.044715 * x * x), t = tanh(u);
        y = 0.5 * x * (1 + t), d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du;
    }
    if (nd->op == REF_SILU) {
        double s = 1 / (1 + exp(-x));
        y = x * s, d = s + x * s * (1 - s);
    }
    if (nd->op == REF_HARDSWISH) {
        if (x < -3) y = 0, d = 0;
        if (x >= -3 && x < 3) y = x * (x + 3) / 6, d = (2 * x + 3) / 6;
    }
    if (slope) *slope = d;
    return y;
}

/* ---- linear ---------------------------------------------------------------------------------- */

static void linear_forward(double *y, const double *x, const double *w, const double *b, int N,
                           int I, int O) {
    // y is (N,O), x is (N,I) (a (C,H,W) sample read flat), w is (O,I), b is (O) or NULL
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) {
            double sum = b ? b[o] : 0.0;
            for (int i = 0; i < I; i++) sum += w[(size_t)o * I + i] * x[(size_t)n * I + i];
            y[(size_t)n * O + o] = sum;
        }
}

static void linear_backward(double *dx, double *dw, double *db, const double *dy, const double *x,
                            const double *w, int N, int I, int O) {
    // dx is (N,I), dw is (O,I), db is (O) or NULL: all added into
    // dy is (N,O), x is (N,I), w is (O,I)
    // forward was y[n,o] = b[o] + sum_i w[o,i] * x[n,i], so backward is, per term,
    //   dx[n,i] += w[o,i] * dy[n,o],  dw[o,i] += x[n,i] * dy[n,o],  db[o] += dy[n,o]
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) {
            double d = dy[(size_t)n * O + o];
            if (db) db[o] += d;
            for (int i = 0; i < I; i++) {
                dx[(size_t)n * I + i] += w[(size_t)o * I + i] * d;
                dw[(size_t)o * I + i] += x[(size_t)n * I + i] * d;
            }
        }
}

/* ---- flatten, add, concat ------------------------------------------------------------------- */

/* dst (n) += src (n): the backward of flatten (whose forward is a copy), and
 * of add for each of its inputs. */
static void add_into(double *dst, const double *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

static void add_forward(double *y, const double *const *xs, int nin, size_t n) {
    // y is (n), xs[j] are (n)
    memset(y, 0, n * sizeof *y);
    for (int j = 0; j < nin; j++) add_into(y, xs[j], n);
}

static void concat_forward(double *y, const double *const *xs, const ref_shape *in, int nin, int N,
                           ref_shape out) {
    // y is (N, sum_j C_j, H, W), xs[j] is (N, C_j, H, W): sample n of y holds
    // sample n of every input in turn, so input j starts at channel sum_{k<j} C_k.
    size_t plane = (size_t)out.h * out.w;
    for (int n = 0; n < N; n++) {
        int channel = 0;
        for (int j = 0; j < nin; j++) {
            size_t block = (size_t)in[j].c * plane;
            memcpy(y + at(n, channel, 0, 0, out.c, out.h, out.w), xs[j] + n * block,
                   block * sizeof *y);
            channel += in[j].c;
        }
    }
}

static void concat_backward(double *const *dxs, const double *dy, const ref_shape *in, int nin,
                            int N, ref_shape out) {
    // dxs[j] is (N, C_j, H, W), added into; dy is (N, sum_j C_j, H, W)
    // forward was a copy of each input into its channels of y,
    // so backward is dxs[j] += those channels of dy.
    size_t plane = (size_t)out.h * out.w;
    for (int n = 0; n < N; n++) {
        int channel = 0;
        for (int j = 0; j < nin; j++) {
            size_t block = (size_t)in[j].c * plane;
            add_into(dxs[j] + n * block, dy + at(n, channel, 0, 0, out.c, out.h, out.w), block);
            channel += in[j].c;
        }
    }
}

/* ---- batch normalization ------------------------------------------------------------------ */

#define BATCHNORM_EPS 1e-5 /* PyTorch's default, and clnet's */

/* Channel c's batch statistics over x (N,C,H,W): the mean and the biased
 * variance, sum (x - mean)^2 / (N*H*W). */
static void channel_stats(const double *x, int N, ref_shape in, int c, double *mean, double *var) {
    double count = (double)N * in.h * in.w, sum = 0, squares = 0;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < in.h; h++)
            for (int w = 0; w < in.w; w++) sum += x[at(n, c, h, w, in.c, in.h, in.w)];
    *mean = sum / count;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < in.h; h++)
            for (int w = 0; w < in.w; w++) {
                double d = x[at(n, c, h, w, in.c, in.h, in.w)] - *mean;
                squares += d * d;
            }
    *var = squares / count;
}

static void batchnorm_forward(double *y, const double *x, const double *gamma, const double *beta,
                              int N, ref_shape in) {
    // y, x are (N,C,H,W); gamma, beta are (C)
    // y = (x - mean_c) / sqrt(var_c + eps) * gamma_c + beta_c, statistics of the batch
    require((long)N * in.h * in.w >= 2, "batch norm over %d value(s) per channel", N * in.h * in.w);
    for (int c = 0; c < in.c; c++) {
        double mean, var;
        channel_stats(x, N, in, c, &mean, &var);
        double scale = gamma[c] / sqrt(var + BATCHNORM_EPS);
        for (int n = 0; n < N; n++)
            for (int h = 0; h < in.h; h++)
                for (int w = 0; w < in.w; w++) {
                    size_t i = at(n, c, h, w, in.c, in.h, in.w);
                    y[i] = (x[i] - mean) * scale + beta[c];
                }
    }
}

static void batchnorm_backward(double *dx, double *dgamma, double *dbeta, const double *dy,
                               const double *x, const double *gamma, int N, ref_shape in) {
    // dx (N,C,H,W), dgamma, dbeta (C): all added into; dy, x are (N,C,H,W), gamma (C)
    // forward was, per channel over its m = N*H*W values,
    //   mean = sum x / m,  var = sum (x - mean)^2 / m,  s = (var + eps)^(-1/2),
    //   xhat = (x - mean) s,  y = gamma xhat + beta,
    // so backward goes through the chain one step at a time:
    //   dxhat_i = dy_i gamma,
    //   dvar    = sum_i dxhat_i (x_i - mean) * (-1/2) (var + eps)^(-3/2),
    //   dmean   = -s sum_i dxhat_i + dvar * (-2/m) sum_i (x_i - mean),
    //   dx_i   += dxhat_i s + dvar * 2 (x_i - mean) / m + dmean / m,
    // and dgamma += sum_i dy_i xhat_i, dbeta += sum_i dy_i.
    double m = (double)N * in.h * in.w;
    for (int c = 0; c < in.c; c++) {
        double mean, var;
        channel_stats(x, N, in, c, &mean, &var);
        double s = 1.0 / sqrt(var + BATCHNORM_EPS);
        double dvar = 0, dmean = 0, centred = 0;
        for (int n = 0; n < N; n++)
            for (int h = 0; h < in.h; h++)
                for (int w = 0; w < in.w; w++) {
                    size_t i = at(n, c, h, w, in.c, in.h, in.w);
                    double dxhat = dy[i] * gamma[c];
                    dvar += dxhat * (x[i] - mean) * -0.5 * s * s * s;
                    dmean -= dxhat * s;
                    centred += x[i] - mean;
                    dgamma[c] += dy[i] * (x[i] - mean) * s;
                    dbeta[c] += dy[i];
                }
        dmean += dvar * -2.0 * centred / m;
        for (int n = 0; n < N; n++)
            for (int h = 0; h < in.h; h++)
                for (int w = 0; w < in.w; w++) {
                    size_t i = at(n, c, h, w, in.c, in.h, in.w);
                    dx[i] += dy[i] * gamma[c] * s + dvar * 2.0 * (x[i] - mean) / m + dmean / m;
                }
    }
}

/* ---- softmax + cross-entropy ------------------------------------------------------------- */

static int is_loss(ref_op op) {
    return op == REF_SOFTMAX_XENT || op == REF_XENT_POSITIONS || op == REF_MSE || op == REF_L1 ||
           op == REF_BCE;
}

/* A regression loss of z against t, both (N, E): forward (y not NULL) writes
 * the output and returns the sum over samples of each one's mean; backward
 * adds the gradients of that sum into dz and dt. */
static double regression(ref_op op, double *y, double *dz, double *dt, const double *z,
                         const double *t, int N, size_t E) {
    double total = 0;
    for (size_t i = 0; i < (size_t)N * E; i++) {
        double d = z[i] - t[i], s = 1 / (1 + exp(-z[i])), loss = 0, gz = 0, gt = 0;
        if (op == REF_MSE) loss = d * d, gz = 2 * d, gt = -2 * d;
        if (op == REF_L1) loss = fabs(d), gz = d > 0 ? 1 : d < 0 ? -1 : 0, gt = -gz;
        // -t log s - (1 - t) log(1 - s), with log s = -log(1 + e^-z), log(1 - s) = -log(1 + e^z)
        if (op == REF_BCE)
            loss = t[i] * log1p(exp(-z[i])) + (1 - t[i]) * log1p(exp(z[i])), gz = s - t[i],
            gt = -z[i];
        total += loss / (double)E;
        if (y) y[i] = op == REF_BCE ? s : z[i];
        if (dz) dz[i] += gz / (double)E;
        if (dt) dt[i] += gt / (double)E;
    }
    return total;
}

static double softmax_xent_forward(double *probs, int *correct, const double *logits,
                                   const int32_t *labels, int N, int K) {
    // probs is (N,K), logits is (N,K), labels is (N) in [0,K)
    // -log softmax(l)[t] = log sum_k e^{l_k} - l_t, where the log-sum-exp is
    // max + log sum_k e^{l_k - max}: every exp is at most 1, so none overflows.
    double loss = 0;
    int hits = 0;
    for (int n = 0; n < N; n++) {
        const double *row = logits + (size_t)n * K;
        int t = labels[n], first_max = 0;
        require(t >= 0 && t < K, "label %d of sample %d is outside [0,%d)", t, n, K);
        for (int k = 1; k < K; k++)
            if (row[k] > row[first_max]) first_max = k; // strictly greater: ties keep the first
        double sum = 0;
        for (int k = 0; k < K; k++) sum += exp(row[k] - row[first_max]);
        double log_sum_exp = row[first_max] + log(sum);
        loss += log_sum_exp - row[t];
        hits += first_max == t;
        for (int k = 0; k < K; k++) probs[(size_t)n * K + k] = exp(row[k] - log_sum_exp);
    }
    *correct = hits;
    return loss;
}

static void softmax_xent_backward(double *dlogits, const double *probs, const int32_t *labels,
                                  int N, int K) {
    // dlogits is (N,K), added into; probs is (N,K), labels is (N)
    // forward was L = sum_n (log sum_k e^{l[n,k]} - l[n,t_n]),
    // so backward is dL/dl[n,k] = softmax(l[n])[k] - (k == t_n).
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            dlogits[(size_t)n * K + k] += probs[(size_t)n * K + k] - (k == labels[n] ? 1.0 : 0.0);
}

/* Cross-entropy at each of P positions of logits (N, K, P) against labels
 * (N, P): the softmax over K at every position into probs, the sum over
 * samples of each one's mean over its positions, the positions whose first
 * maximum is the label in *correct. */
static double xent_positions_forward(double *probs, int *correct, const double *logits,
                                     const int32_t *labels, int N, int K, int P) {
    double loss = 0;
    int hits = 0;
    for (int n = 0; n < N; n++)
        for (int p = 0; p < P; p++) {
            const double *z = logits + (size_t)n * K * P + p; /* class k at z[k * P] */
            int t = labels[(size_t)n * P + p], best = 0;
            require(t >= 0 && t < K, "class %d of sample %d at %d is outside [0,%d)", t, n, p, K);
            for (int k = 1; k < K; k++)
                if (z[k * P] > z[best * P]) best = k;
            double sum = 0;
            for (int k = 0; k < K; k++) sum += exp(z[k * P] - z[best * P]);
            double lse = z[best * P] + log(sum);
            loss += (lse - z[t * P]) / P;
            hits += best == t;
            for (int k = 0; k < K; k++)
                probs[(size_t)n * K * P + (size_t)k * P + p] = exp(z[k * P] - lse);
        }
    *correct = hits;
    return loss;
}

/* Adds (softmax - onehot) / P: the gradient of that sum. */
static void xent_positions_backward(double *dlogits, const double *probs, const int32_t *labels,
                                    int N, int K, int P) {
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < P; p++) {
                size_t i = (size_t)n * K * P + (size_t)k * P + p;
                dlogits[i] += (probs[i] - (k == labels[(size_t)n * P + p] ? 1.0 : 0.0)) / P;
            }
}

/* ---- the interpreter ----------------------------------------------------------------------- */

/* The tensor that input index `in` names: the graph's input or an earlier output. */
static const double *tensor_of(const ref_graph_pass *p, int in) {
    return in == REF_INPUT ? p->x : p->y[in];
}

/* A node's view of its parameters: weight and bias, NULL where it has none. */
static void node_params(const ref_graph_pass *p, const double *params, int node, const double **w,
                        const double **b) {
    size_t nw, nb, offset = param_layout(p->g, p->shape, node, &nw, &nb);
    *w = nw ? params + offset : NULL;
    *b = nb ? params + offset + nw : NULL;
}

ref_graph_pass *ref_graph_forward(const ref_graph *g, const double *params, const double *x,
                                  const int32_t *labels, int N) {
    require(N >= 1, "a batch of %d samples", N);
    ref_graph_pass *p = calloc(1, sizeof *p);
    require(p != NULL, "out of memory for a pass");
    *p = (ref_graph_pass){.g = g, .params = params, .x = x, .labels = labels, .N = N};
    p->shape = checked_shapes(g);
    p->y = calloc((size_t)g->count, sizeof *p->y);
    require(p->y != NULL, "out of memory for %d outputs", g->count);
    for (int i = 0; i < g->count; i++) {
        const ref_node *nd = &g->nodes[i];
        ref_shape in = shape_of(g, p->shape, nd->in[0]), out = p->shape[i];
        const double *x0 = tensor_of(p, nd->in[0]), *w, *b;
        node_params(p, params, i, &w, &b);
        double *y = p->y[i] = zeroed((size_t)N * numel(out));
        const double *xs[REF_MAX_INPUTS];
        ref_shape ins[REF_MAX_INPUTS];
        for (int j = 0; j < nd->nin; j++) {
            xs[j] = tensor_of(p, nd->in[j]);
            ins[j] = shape_of(g, p->shape, nd->in[j]);
        }
        switch (nd->op) {
        case REF_CONV2D:
            conv2d_forward(y, x0, w, b, nd, N, in, out);
            break;
        case REF_MAXPOOL:
            maxpool_forward(y, x0, nd, N, in, out);
            break;
        case REF_AVGPOOL:
            avgpool_forward(y, x0, nd, N, in, out);
            break;
        case REF_GLOBAL_AVGPOOL:
            global_avgpool_forward(y, x0, N, in);
            break;
        case REF_RELU:
        case REF_SIGMOID:
        case REF_TANH:
            activation_forward(nd->op, y, x0, (size_t)N * numel(in));
            break;
        case REF_LEAKY_RELU:
        case REF_ELU:
        case REF_GELU:
        case REF_SILU:
        case REF_HARDSWISH:
            for (size_t i = 0; i < (size_t)N * numel(in); i++) y[i] = of_x(nd, x0[i], NULL);
            break;
        case REF_LINEAR:
            linear_forward(y, x0, w, b, N, (int)numel(in), out.c);
            break;
        case REF_FLATTEN:
            memcpy(y, x0, (size_t)N * numel(in) * sizeof *y);
            break;
        case REF_ADD:
            add_forward(y, xs, nd->nin, (size_t)N * numel(out));
            break;
        case REF_CONCAT:
            concat_forward(y, xs, ins, nd->nin, N, out);
            break;
        case REF_BATCHNORM:
            batchnorm_forward(y, x0, w, b, N, in);
            break;
        case REF_UPSAMPLE:
            upsample_forward(y, x0, nd, N, in, out);
            break;
        case REF_SOFTMAX_XENT:
            require(labels != NULL, "a loss without labels");
            p->loss = softmax_xent_forward(y, &p->correct, x0, labels, N, in.c);
            break;
        case REF_XENT_POSITIONS:
            require(labels != NULL, "a loss without labels");
            p->loss = xent_positions_forward(y, &p->correct, x0, labels, N, in.c, in.h * in.w);
            break;
        case REF_RESHAPE:
            memcpy(y, x0, (size_t)N * numel(in) * sizeof *y);
            break;
        case REF_MSE:
        case REF_L1:
        case REF_BCE:
            p->loss = regression(nd->op, y, NULL, NULL, x0, tensor_of(p, nd->in[1]), N, numel(in));
            p->correct = 0;
            break;
        }
    }
    return p;
}

void ref_graph_backward(ref_graph_pass *p, const double *dout, double *dparams, double *dx) {
    const ref_graph *g = p->g;
    int N = p->N, last = g->count - 1;
    int ends_in_loss = is_loss(g->nodes[last].op);
    require(ends_in_loss ? dout == NULL : dout != NULL,
            ends_in_loss ? "dout given for a graph ending in its loss"
                         : "no dout for a graph without a loss");
    // Every gradient starts at zero, once, and each reader adds its share.
    size_t nparams = ref_graph_param_count(g), nx = (size_t)N * numel(g->input);
    double *dp = zeroed(nparams), *dinput = zeroed(nx);
    if (!p->dy) {
        p->dy = calloc((size_t)g->count, sizeof *p->dy);
        require(p->dy != NULL, "out of memory for %d gradients", g->count);
    }
    for (int i = 0; i < g->count; i++) {
        free(p->dy[i]);
        p->dy[i] = zeroed((size_t)N * numel(p->shape[i]));
    }
    if (!ends_in_loss) memcpy(p->dy[last], dout, (size_t)N * numel(p->shape[last]) * sizeof *dout);

    // Reverse topological order: by the time node i is reached, every node
    // reading it has already added its share into dy[i].
    for (int i = last; i >= 0; i--) {
        const ref_node *nd = &g->nodes[i];
        ref_shape in = shape_of(g, p->shape, nd->in[0]), out = p->shape[i];
        const double *x0 = tensor_of(p, nd->in[0]), *y = p->y[i], *dy = p->dy[i], *w, *b;
        node_params(p, p->params, i, &w, &b);
        // This node's parameter gradients, at the same offsets as its parameters.
        double *dw = w ? dp + (w - p->params) : NULL, *db = b ? dp + (b - p->params) : NULL;
        double *dxs[REF_MAX_INPUTS];
        ref_shape ins[REF_MAX_INPUTS];
        for (int j = 0; j < nd->nin; j++) {
            dxs[j] = nd->in[j] == REF_INPUT ? dinput : p->dy[nd->in[j]];
            ins[j] = shape_of(g, p->shape, nd->in[j]);
        }
        switch (nd->op) {
        case REF_CONV2D:
            conv2d_backward(dxs[0], dw, db, dy, x0, w, nd, N, in, out);
            break;
        case REF_MAXPOOL:
            maxpool_backward(dxs[0], dy, x0, nd, N, in, out);
            break;
        case REF_AVGPOOL:
            avgpool_backward(dxs[0], dy, nd, N, in, out);
            break;
        case REF_GLOBAL_AVGPOOL:
            global_avgpool_backward(dxs[0], dy, N, in);
            break;
        case REF_RELU:
        case REF_SIGMOID:
        case REF_TANH:
            activation_backward(nd->op, dxs[0], dy, x0, y, (size_t)N * numel(in));
            break;
        case REF_LEAKY_RELU:
        case REF_ELU:
        case REF_GELU:
        case REF_SILU:
        case REF_HARDSWISH:
            for (size_t i = 0; i < (size_t)N * numel(in); i++) {
                double slope;
                of_x(nd, x0[i], &slope);
                dxs[0][i] += dy[i] * slope;
            }
            break;
        case REF_LINEAR:
            linear_backward(dxs[0], dw, db, dy, x0, w, N, (int)numel(in), out.c);
            break;
        case REF_FLATTEN:
            add_into(dxs[0], dy, (size_t)N * numel(in));
            break;
        case REF_ADD:
            // forward was y = sum_j x_j, so backward is dx_j += dy for every j
            // (an input listed twice gets dy twice).
            for (int j = 0; j < nd->nin; j++) add_into(dxs[j], dy, (size_t)N * numel(out));
            break;
        case REF_CONCAT:
            concat_backward(dxs, dy, ins, nd->nin, N, out);
            break;
        case REF_BATCHNORM:
            batchnorm_backward(dxs[0], dw, db, dy, x0, w, N, in);
            break;
        case REF_UPSAMPLE:
            upsample_backward(dxs[0], dy, nd, N, in, out);
            break;
        case REF_SOFTMAX_XENT:
            softmax_xent_backward(dxs[0], y, p->labels, N, in.c);
            break;
        case REF_XENT_POSITIONS:
            xent_positions_backward(dxs[0], y, p->labels, N, in.c, in.h * in.w);
            break;
        case REF_RESHAPE:
            add_into(dxs[0], dy, (size_t)N * numel(in));
            break;
        case REF_MSE:
        case REF_L1:
        case REF_BCE:
            regression(nd->op, NULL, dxs[0], dxs[1], x0, tensor_of(p, nd->in[1]), N, numel(in));
            break;
        }
    }
    if (dparams) memcpy(dparams, dp, nparams * sizeof *dp);
    if (dx) memcpy(dx, dinput, nx * sizeof *dinput);
    free(dp);
    free(dinput);
}

/* ---- kinks -------------------------------------------------------------------------------- */

static double rms_of(const double *x, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += x[i] * x[i];
    return sqrt(sum / (double)n);
}

/* The smaller of best and |d|, where |d| <= tie (an exact hit, or one that
 * the reference's rounding alone moved off it) counts as no distance. */
static double nearer(double best, double d, double tie) {
    d = fabs(d);
    return d > tie && d < best ? d : best;
}

/* The smallest lead of a max-pool window's winner over its runner-up. */
static double maxpool_margin(const double *x, const ref_node *nd, int N, ref_shape in,
                             ref_shape out, double tie) {
    double best = INFINITY;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < in.c; c++) {
            const double *plane = x + at(n, c, 0, 0, in.c, in.h, in.w);
            for (int oh = 0; oh < out.h; oh++)
                for (int ow = 0; ow < out.w; ow++) {
                    size_t win = maxpool_winner(plane, in.h, in.w, oh, ow, nd);
                    for (int kh = 0; kh < nd->kh; kh++)
                        for (int kw = 0; kw < nd->kw; kw++) {
                            int ih = oh * nd->sh - nd->ph + kh, iw = ow * nd->sw - nd->pw + kw;
                            if (ih < 0 || ih >= in.h || iw < 0 || iw >= in.w) continue;
                            size_t i = (size_t)ih * in.w + iw;
                            if (i != win) best = nearer(best, plane[win] - plane[i], tie);
                        }
                }
        }
    return best;
}

/* The smallest distance of x's n values from a kink at k (and at -k). */
static double point_margin(const double *x, size_t n, double k, double tie) {
    double best = INFINITY;
    for (size_t i = 0; i < n; i++) best = nearer(nearer(best, x[i] - k, tie), x[i] + k, tie);
    return best;
}

double ref_graph_kink_margin(const ref_graph_pass *p, int *node) {
    double best = INFINITY;
    if (node) *node = -1;
    for (int i = 0; i < p->g->count; i++) {
        const ref_node *nd = &p->g->nodes[i];
        ref_shape in = shape_of(p->g, p->shape, nd->in[0]);
        const double *x0 = tensor_of(p, nd->in[0]);
        size_t n = (size_t)p->N * numel(in);
        double d = INFINITY, scale = rms_of(x0, n), tie = 1e-12 * scale;
        if (nd->op == REF_MAXPOOL) d = maxpool_margin(x0, nd, p->N, in, p->shape[i], tie);
        if (nd->op == REF_RELU || nd->op == REF_LEAKY_RELU || (nd->op == REF_ELU && nd->a != 1))
            d = point_margin(x0, n, 0, tie);
        if (nd->op == REF_HARDSWISH) d = point_margin(x0, n, 3, tie);
        if (nd->op == REF_L1) {
            const double *t = tensor_of(p, nd->in[1]);
            for (size_t k = 0; k < n; k++) d = nearer(d, x0[k] - t[k], tie);
        }
        if (d < INFINITY && scale > 0 && d / scale < best) {
            best = d / scale;
            if (node) *node = i;
        }
    }
    return best;
}

void ref_graph_pass_free(ref_graph_pass *p) {
    if (!p) return;
    for (int i = 0; i < p->g->count; i++) {
        free(p->y[i]);
        if (p->dy) free(p->dy[i]);
    }
    free(p->y);
    free(p->dy);
    free(p->shape);
    free(p);
}

double ref_graph_loss(const ref_graph *g, const double *params, const double *x,
                      const int32_t *labels, int N, int *correct) {
    require(g && g->count >= 1 && is_loss(g->nodes[g->count - 1].op),
            "the graph does not end in its loss");
    ref_graph_pass *p = ref_graph_forward(g, params, x, labels, N);
    double loss = p->loss;
    if (correct) *correct = p->correct;
    ref_graph_pass_free(p);
    return loss;
}

double ref_graph_gradients(const ref_graph *g, const double *params, const double *x,
                           const int32_t *labels, int N, double *dparams, double *dx) {
    require(g && g->count >= 1 && is_loss(g->nodes[g->count - 1].op),
            "the graph does not end in its loss");
    ref_graph_pass *p = ref_graph_forward(g, params, x, labels, N);
    ref_graph_backward(p, NULL, dparams, dx);
    double loss = p->loss;
    ref_graph_pass_free(p);
    return loss;
}
