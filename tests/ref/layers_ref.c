/* Plain-C references for every CNN layer; see layers_ref.h for the conventions.
 *
 * Each backward pass is written as the transpose of its forward loop nest:
 * the same loops, with every "y += a * b" turned into "da += dy * b". Sums go
 * into double scratch arrays and are rounded to float once at the end, so the
 * reference is more accurate than any kernel it judges. */
#include "layers_ref.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Zeroed doubles for a backward pass to accumulate into. The references are
 * test code: running out of memory here ends the test. */
static double *zeroed(size_t n) {
    double *p = calloc(n ? n : 1, sizeof *p);
    if (!p) {
        fprintf(stderr, "layers_ref: out of memory for %zu doubles\n", n);
        abort();
    }
    return p;
}

/* dst (n) = src (n), rounded to float; then src is freed. */
static void store(float *dst, double *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = (float)src[i];
    free(src);
}

int ref_out_size(int in, int k, int stride, int pad) {
    return (in + 2 * pad - k) / stride + 1;
}

/* ---- conv2d ----------------------------------------------------------------- */

void ref_conv2d_forward(float *y, const float *x, const float *w, const float *b, int N, int C,
                        int H, int W, int F, int KH, int KW, int sh, int sw, int ph, int pw) {
    ref_conv2d_full_forward(y, x, w, b, N, C, H, W, F, KH, KW, sh, sw, ph, pw, 1, 1, 1);
}

void ref_conv2d_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, int N, int C, int H, int W, int F, int KH, int KW, int sh,
                         int sw, int ph, int pw) {
    ref_conv2d_full_backward(dx, dw, db, dy, x, w, N, C, H, W, F, KH, KW, sh, sw, ph, pw, 1, 1, 1);
}

void ref_conv2d_full_forward(float *y, const float *x, const float *w, const float *b, int N, int C,
                             int H, int W, int F, int KH, int KW, int sh, int sw, int ph, int pw,
                             int dh, int dw, int G) {
    // y is (N,F,OH,OW), x is (N,C,H,W), w is (F,C/G,KH,KW), b is (F) or NULL;
    // filter f reads the C/G channels of its group f / (F/G), taps dh and dw apart
    int OH = ref_out_size(H, dh * (KH - 1) + 1, sh, ph);
    int OW = ref_out_size(W, dw * (KW - 1) + 1, sw, pw);
    int Cg = C / G, Fg = F / G;
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double acc = b ? b[f] : 0.0;
                    for (int cg = 0; cg < Cg; cg++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int c = f / Fg * Cg + cg;
                                int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue; // zero pad
                                acc += (double)w[(((size_t)f * Cg + cg) * KH + kh) * KW + kw] *
                                       x[(((size_t)n * C + c) * H + ih) * W + iw];
                            }
                    y[(((size_t)n * F + f) * OH + oh) * OW + ow] = (float)acc;
                }
}

void ref_conv2d_full_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                              const float *w, int N, int C, int H, int W, int F, int KH, int KW,
                              int sh, int sw, int ph, int pw, int dh, int dwid, int G) {
    // dx is (N,C,H,W), dw is (F,C/G,KH,KW), db is (F) or NULL
    // dy is (N,F,OH,OW), x is (N,C,H,W), w is (F,C/G,KH,KW)
    // forward was y[n,f,oh,ow] = b[f] + sum_{cg,kh,kw} w[f,cg,kh,kw] * x[n,c,ih,iw]
    //   with c = group(f) * C/G + cg, ih = oh*sh - ph + kh*dh, iw = ow*sw - pw + kw*dw
    //   (padded terms absent), so backward is, for every term of that sum,
    //   dx[n,c,ih,iw] += w[f,cg,kh,kw] * dy[n,f,oh,ow]
    //   dw[f,cg,kh,kw] += x[n,c,ih,iw] * dy[n,f,oh,ow]
    // and db[f] += dy[n,f,oh,ow] once per output; summed over the batch too.
    int OH = ref_out_size(H, dh * (KH - 1) + 1, sh, ph);
    int OW = ref_out_size(W, dwid * (KW - 1) + 1, sw, pw);
    int Cg = C / G, Fg = F / G;
    size_t nx = (size_t)N * C * H * W, nw = (size_t)F * Cg * KH * KW;
    double *gx = zeroed(nx), *gw = zeroed(nw), *gb = zeroed((size_t)F);
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double d = dy[(((size_t)n * F + f) * OH + oh) * OW + ow];
                    gb[f] += d;
                    for (int cg = 0; cg < Cg; cg++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int c = f / Fg * Cg + cg;
                                int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dwid;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                size_t xi = (((size_t)n * C + c) * H + ih) * W + iw;
                                size_t wi = (((size_t)f * Cg + cg) * KH + kh) * KW + kw;
                                gx[xi] += w[wi] * d;
                                gw[wi] += x[xi] * d;
                            }
                }
    store(dx, gx, nx);
    store(dw, gw, nw);
    if (db)
        store(db, gb, (size_t)F);
    else
        free(gb);
}

/* ---- pools -------------------------------------------------------------------- */

/* The index into x (N,C,H,W) of the winner of one max-pool window over plane
 * (n,c): the first strictly greatest real pixel in row-major window order.
 * Padded positions are skipped, so they never win. */
static size_t maxpool_winner(const float *x, int n, int c, int C, int H, int W, int oh, int ow,
                             int KH, int KW, int sh, int sw, int ph, int pw) {
    size_t best_i = (size_t)-1;
    float best = 0;
    for (int kh = 0; kh < KH; kh++)
        for (int kw = 0; kw < KW; kw++) {
            int ih = oh * sh - ph + kh, iw = ow * sw - pw + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            size_t i = (((size_t)n * C + c) * H + ih) * W + iw;
            if (best_i == (size_t)-1 || x[i] > best) {
                best_i = i;
                best = x[i];
            }
        }
    assert(best_i != (size_t)-1 && "ph < KH and pw < KW put a real pixel in every window");
    return best_i;
}

void ref_maxpool_forward(float *y, const float *x, int N, int C, int H, int W, int KH, int KW,
                         int sh, int sw, int ph, int pw) {
    // y is (N,C,OH,OW), x is (N,C,H,W)
    assert(ph < KH && pw < KW);
    int OH = ref_out_size(H, KH, sh, ph), OW = ref_out_size(W, KW, sw, pw);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++)
                    y[(((size_t)n * C + c) * OH + oh) * OW + ow] =
                        x[maxpool_winner(x, n, c, C, H, W, oh, ow, KH, KW, sh, sw, ph, pw)];
}

void ref_maxpool_backward(float *dx, const float *dy, const float *x, int N, int C, int H, int W,
                          int KH, int KW, int sh, int sw, int ph, int pw) {
    // dx is (N,C,H,W), dy is (N,C,OH,OW), x is (N,C,H,W)
    // forward was y[n,c,oh,ow] = x[winner of the window],
    // so backward is dx[winner] += dy[n,c,oh,ow]; overlapping windows that
    // share a winner add up, and pixels that win nowhere get zero.
    assert(ph < KH && pw < KW);
    int OH = ref_out_size(H, KH, sh, ph), OW = ref_out_size(W, KW, sw, pw);
    size_t nx = (size_t)N * C * H * W;
    double *gx = zeroed(nx);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++)
                    gx[maxpool_winner(x, n, c, C, H, W, oh, ow, KH, KW, sh, sw, ph, pw)] +=
                        dy[(((size_t)n * C + c) * OH + oh) * OW + ow];
    store(dx, gx, nx);
}

void ref_avgpool_forward(float *y, const float *x, int N, int C, int H, int W, int KH, int KW,
                         int sh, int sw, int ph, int pw) {
    // y is (N,C,OH,OW), x is (N,C,H,W)
    int OH = ref_out_size(H, KH, sh, ph), OW = ref_out_size(W, KW, sw, pw);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double acc = 0;
                    for (int kh = 0; kh < KH; kh++)
                        for (int kw = 0; kw < KW; kw++) {
                            int ih = oh * sh - ph + kh, iw = ow * sw - pw + kw;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue; // adds a zero
                            acc += x[(((size_t)n * C + c) * H + ih) * W + iw];
                        }
                    y[(((size_t)n * C + c) * OH + oh) * OW + ow] = (float)(acc / (KH * KW));
                }
}

void ref_avgpool_backward(float *dx, const float *dy, int N, int C, int H, int W, int KH, int KW,
                          int sh, int sw, int ph, int pw) {
    // dx is (N,C,H,W), dy is (N,C,OH,OW)
    // forward was y[n,c,oh,ow] = sum_{real pixels of the window} x / (KH*KW),
    // so backward is dx[pixel] += dy[n,c,oh,ow] / (KH*KW) for every real pixel
    // of every window holding it.
    int OH = ref_out_size(H, KH, sh, ph), OW = ref_out_size(W, KW, sw, pw);
    size_t nx = (size_t)N * C * H * W;
    double *gx = zeroed(nx);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double d = dy[(((size_t)n * C + c) * OH + oh) * OW + ow] / (KH * KW);
                    for (int kh = 0; kh < KH; kh++)
                        for (int kw = 0; kw < KW; kw++) {
                            int ih = oh * sh - ph + kh, iw = ow * sw - pw + kw;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            gx[(((size_t)n * C + c) * H + ih) * W + iw] += d;
                        }
                }
    store(dx, gx, nx);
}

void ref_global_avgpool_forward(float *y, const float *x, int N, int C, int S) {
    // y is (N,C), x is (N,C,S)
    for (size_t plane = 0; plane < (size_t)N * C; plane++) {
        double acc = 0;
        for (int i = 0; i < S; i++) acc += x[plane * S + i];
        y[plane] = (float)(acc / S);
    }
}

void ref_global_avgpool_backward(float *dx, const float *dy, int N, int C, int S) {
    // dx is (N,C,S), dy is (N,C)
    // forward was y[n,c] = sum_i x[n,c,i] / S, so backward is dx[n,c,i] = dy[n,c] / S
    // at every position i of the plane.
    for (size_t plane = 0; plane < (size_t)N * C; plane++)
        for (int i = 0; i < S; i++) dx[plane * S + i] = (float)((double)dy[plane] / S);
}

/* The place of a plane's largest value as PyTorch's AdaptiveMaxPool finds it:
 * the first largest, or the last NaN. */
static int plane_argmax(const float *x, int S) {
    int best = 0;
    for (int i = 1; i < S; i++)
        if (x[i] > x[best] || isnan(x[i])) best = i;
    return best;
}

void ref_global_maxpool_forward(float *y, const float *x, int N, int C, int S) {
    for (size_t plane = 0; plane < (size_t)N * C; plane++)
        y[plane] = x[plane * S + (size_t)plane_argmax(x + plane * S, S)];
}

void ref_global_maxpool_backward(float *dx, const float *dy, const float *x, int N, int C, int S) {
    // forward took one element of each plane, so its gradient goes there alone
    for (size_t plane = 0; plane < (size_t)N * C; plane++) {
        int best = plane_argmax(x + plane * S, S);
        for (int i = 0; i < S; i++) dx[plane * S + i] = i == best ? dy[plane] : 0.0f;
    }
}

/* ---- N-d conv, transposed conv and pools ------------------------------------------- */

/* Every N-d reference walks flat row-major positions: an output (or input) place of
 * the plane and a tap of the kernel, each unravelled into per-axis coordinates. A tap
 * kk of the window at position o lands at o*s - p + kk*d on every axis: conv and the
 * pools read x there for output o; the transpose writes y there from input o. */

/* floor(a / b) for b > 0, negative a too (C's division truncates toward zero). */
static int floor_div(int a, int b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

int ref_conv_out(const ref_window *g, int axis) {
    int a = axis;
    return floor_div(g->in[a] + 2 * g->p[a] + g->extra[a] - g->d[a] * (g->k[a] - 1) - 1, g->s[a]) +
           1;
}

int ref_conv_transpose_out(const ref_window *g, int axis) {
    int a = axis;
    return (g->in[a] - 1) * g->s[a] - 2 * g->p[a] + g->d[a] * (g->k[a] - 1) + g->out_pad[a] + 1;
}

int ref_pool_out(const ref_window *g, int axis) {
    int a = axis, span = g->in[a] + 2 * g->p[a] - g->d[a] * (g->k[a] - 1) - 1;
    if (!g->ceil) return floor_div(span, g->s[a]) + 1;
    int out = floor_div(span + g->s[a] - 1, g->s[a]) + 1;
    // a last window starting in the right padding or past it would see no input: dropped
    if ((out - 1) * g->s[a] >= g->in[a] + g->p[a]) out--;
    return out;
}

/* The spatial extents of one N-d call: the input x's, the output y's and the kernel's,
 * with their volumes (n_out is 0 when an output size is <= 0: nothing fits). */
typedef struct {
    int rank, in[3], out[3], k[3];
    size_t n_in, n_out, n_k;
} nd_extent;

static size_t volume(const int *size, int rank) {
    size_t v = 1;
    for (int a = 0; a < rank; a++) v *= size[a] > 0 ? (size_t)size[a] : 0;
    return v;
}

/* Checks what every N-d reference needs of g, and takes its extents with the output
 * sizes that out_size (ref_conv_out, ref_conv_transpose_out or ref_pool_out) gives. */
static nd_extent nd_extents(const ref_window *g, int (*out_size)(const ref_window *, int)) {
    assert(g->rank >= 1 && g->rank <= 3 && g->N >= 1 && g->C >= 1);
    nd_extent e = {.rank = g->rank};
    for (int a = 0; a < g->rank; a++) {
        assert(g->in[a] >= 1 && g->k[a] >= 1 && g->s[a] >= 1 && g->d[a] >= 1 && g->p[a] >= 0);
        e.in[a] = g->in[a];
        e.out[a] = out_size(g, a);
        e.k[a] = g->k[a];
    }
    e.n_in = volume(e.in, e.rank);
    e.n_out = volume(e.out, e.rank);
    e.n_k = volume(e.k, e.rank);
    return e;
}

/* The groups of a conv or transpose (0 read as 1), checked to divide both channel counts. */
static int nd_groups(const ref_window *g) {
    int G = g->groups ? g->groups : 1;
    assert(G >= 1 && g->F >= 1 && g->C % G == 0 && g->F % G == 0);
    return G;
}

/* pos (rank) = the row-major coordinates of flat position i in a block of the given size. */
static void unravel(int *pos, size_t i, const int *size, int rank) {
    for (int a = rank - 1; a >= 0; a--) {
        pos[a] = (int)(i % (size_t)size[a]);
        i /= (size_t)size[a];
    }
}

/* *place = the flat index, in a plane of the given size, where tap kk of the window at
 * o lands (o*s - p + kk*d per axis); 0 when that is off the plane, in padding. */
static int tap_place(size_t *place, const ref_window *g, const int *o, const int *kk,
                     const int *size) {
    size_t flat = 0;
    for (int a = 0; a < g->rank; a++) {
        int i = o[a] * g->s[a] - g->p[a] + kk[a] * g->d[a];
        if (i < 0 || i >= size[a]) return 0;
        flat = flat * (size_t)size[a] + (size_t)i;
    }
    *place = flat;
    return 1;
}

void ref_convnd_forward(float *y, const float *x, const float *w, const float *b,
                        const ref_window *g) {
    // y is (N,F,out...), x is (N,C,in...), w is (F,C/G,k...), b is (F) or NULL;
    // filter f reads the C/G channels of its group f / (F/G); the right padding
    // p + extra only changes how many outputs there are
    nd_extent e = nd_extents(g, ref_conv_out);
    int G = nd_groups(g), C = g->C, F = g->F, Cg = C / G, Fg = F / G;
    for (int a = 0; a < g->rank; a++) assert(g->extra[a] >= -g->p[a]);
    int o[3], kk[3];
    for (int n = 0; n < g->N; n++)
        for (int f = 0; f < F; f++)
            for (size_t oi = 0; oi < e.n_out; oi++) {
                unravel(o, oi, e.out, e.rank);
                double acc = b ? b[f] : 0.0;
                for (int cg = 0; cg < Cg; cg++)
                    for (size_t t = 0; t < e.n_k; t++) {
                        int c = f / Fg * Cg + cg;
                        size_t i;
                        unravel(kk, t, e.k, e.rank);
                        if (!tap_place(&i, g, o, kk, e.in)) continue; // zero padding
                        acc += (double)w[((size_t)f * Cg + cg) * e.n_k + t] *
                               x[((size_t)n * C + c) * e.n_in + i];
                    }
                y[((size_t)n * F + f) * e.n_out + oi] = (float)acc;
            }
}

void ref_convnd_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, const ref_window *g) {
    // dx is (N,C,in...), dw is (F,C/G,k...), db is (F) or NULL
    // dy is (N,F,out...), x is (N,C,in...), w is (F,C/G,k...)
    // forward was y[n,f,o] = b[f] + sum_{cg,kk} w[f,cg,kk] * x[n,c,o*s - p + kk*d]
    //   with c = group(f) * C/G + cg (padded terms absent), so backward is, for every
    //   term of that sum,
    //   dx[n,c,o*s - p + kk*d] += w[f,cg,kk] * dy[n,f,o]
    //   dw[f,cg,kk] += x[n,c,o*s - p + kk*d] * dy[n,f,o]
    // and db[f] += dy[n,f,o] once per output; summed over the batch too. (The loops
    // are ref_conv2d_full_backward's, in its order, so rank 2 gives its very bits.)
    nd_extent e = nd_extents(g, ref_conv_out);
    int G = nd_groups(g), C = g->C, F = g->F, Cg = C / G, Fg = F / G;
    for (int a = 0; a < g->rank; a++) assert(g->extra[a] >= -g->p[a]);
    size_t nx = (size_t)g->N * C * e.n_in, nw = (size_t)F * Cg * e.n_k;
    double *gx = zeroed(nx), *gw = zeroed(nw), *gb = zeroed((size_t)F);
    int o[3], kk[3];
    for (int n = 0; n < g->N; n++)
        for (int f = 0; f < F; f++)
            for (size_t oi = 0; oi < e.n_out; oi++) {
                unravel(o, oi, e.out, e.rank);
                double d = dy[((size_t)n * F + f) * e.n_out + oi];
                gb[f] += d;
                for (int cg = 0; cg < Cg; cg++)
                    for (size_t t = 0; t < e.n_k; t++) {
                        int c = f / Fg * Cg + cg;
                        size_t i;
                        unravel(kk, t, e.k, e.rank);
                        if (!tap_place(&i, g, o, kk, e.in)) continue;
                        size_t xi = ((size_t)n * C + c) * e.n_in + i;
                        size_t wi = ((size_t)f * Cg + cg) * e.n_k + t;
                        gx[xi] += w[wi] * d;
                        gw[wi] += x[xi] * d;
                    }
            }
    store(dx, gx, nx);
    store(dw, gw, nw);
    if (db)
        store(db, gb, (size_t)F);
    else
        free(gb);
}

void ref_conv_transpose_forward(float *y, const float *x, const float *w, const float *b,
                                const ref_window *g) {
    // y is (N,F,out...), x is (N,C,in...), w is (C,F/G,k...), b is (F) or NULL;
    // input channel c feeds the F/G outputs of its group c / (C/G): every input place j
    // spreads x * w over the output places j*s - p + kk*d that exist (the adjoint of
    // conv's gather). The output_padding places at the end get only the taps reaching them.
    nd_extent e = nd_extents(g, ref_conv_transpose_out);
    int G = nd_groups(g), C = g->C, F = g->F, Cg = C / G, Fg = F / G;
    for (int a = 0; a < g->rank; a++) assert(g->out_pad[a] >= 0 && e.out[a] >= 1);
    size_t ny = (size_t)g->N * F * e.n_out;
    double *gy = zeroed(ny);
    int j[3], kk[3];
    for (int n = 0; n < g->N; n++)
        for (int f = 0; f < F; f++)
            for (size_t i = 0; i < e.n_out; i++)
                gy[((size_t)n * F + f) * e.n_out + i] = b ? b[f] : 0;
    for (int n = 0; n < g->N; n++)
        for (int c = 0; c < C; c++)
            for (size_t ji = 0; ji < e.n_in; ji++) {
                unravel(j, ji, e.in, e.rank);
                double v = x[((size_t)n * C + c) * e.n_in + ji];
                for (int fg = 0; fg < Fg; fg++)
                    for (size_t t = 0; t < e.n_k; t++) {
                        int f = c / Cg * Fg + fg;
                        size_t i;
                        unravel(kk, t, e.k, e.rank);
                        if (!tap_place(&i, g, j, kk, e.out)) continue; // cropped by p
                        gy[((size_t)n * F + f) * e.n_out + i] +=
                            v * w[((size_t)c * Fg + fg) * e.n_k + t];
                    }
            }
    store(y, gy, ny);
}

void ref_conv_transpose_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                                 const float *w, const ref_window *g) {
    // dx is (N,C,in...), dw is (C,F/G,k...), db is (F) or NULL
    // dy is (N,F,out...), x is (N,C,in...), w is (C,F/G,k...)
    // forward was y[n,f,j*s - p + kk*d] += x[n,c,j] * w[c,fg,kk] for every input place j,
    //   tap kk and f = group(c) * F/G + fg whose place exists, plus b[f] everywhere, so
    //   backward is, for every such term,
    //   dx[n,c,j] += w[c,fg,kk] * dy[n,f,j*s - p + kk*d]
    //   dw[c,fg,kk] += x[n,c,j] * dy[n,f,j*s - p + kk*d]
    // and db[f] = the sum of dy[n,f,...] over the batch and every output place.
    nd_extent e = nd_extents(g, ref_conv_transpose_out);
    int G = nd_groups(g), C = g->C, F = g->F, Cg = C / G, Fg = F / G;
    for (int a = 0; a < g->rank; a++) assert(g->out_pad[a] >= 0 && e.out[a] >= 1);
    size_t nx = (size_t)g->N * C * e.n_in, nw = (size_t)C * Fg * e.n_k;
    double *gx = zeroed(nx), *gw = zeroed(nw), *gb = zeroed((size_t)F);
    int j[3], kk[3];
    for (int n = 0; n < g->N; n++)
        for (int c = 0; c < C; c++)
            for (size_t ji = 0; ji < e.n_in; ji++) {
                unravel(j, ji, e.in, e.rank);
                size_t xi = ((size_t)n * C + c) * e.n_in + ji;
                for (int fg = 0; fg < Fg; fg++)
                    for (size_t t = 0; t < e.n_k; t++) {
                        int f = c / Cg * Fg + fg;
                        size_t i;
                        unravel(kk, t, e.k, e.rank);
                        if (!tap_place(&i, g, j, kk, e.out)) continue;
                        double d = dy[((size_t)n * F + f) * e.n_out + i];
                        size_t wi = ((size_t)c * Fg + fg) * e.n_k + t;
                        gx[xi] += w[wi] * d;
                        gw[wi] += x[xi] * d;
                    }
            }
    for (int n = 0; n < g->N; n++)
        for (int f = 0; f < F; f++)
            for (size_t i = 0; i < e.n_out; i++) gb[f] += dy[((size_t)n * F + f) * e.n_out + i];
    store(dx, gx, nx);
    store(dw, gw, nw);
    if (db)
        store(db, gb, (size_t)F);
    else
        free(gb);
}

/* The flat index, within one plane (in...) of x, of the winner of the max-pool window
 * at o: the first strictly greatest real cell in row-major window order. Padded
 * places, and in ceil mode the overhang past the right padding, are skipped. */
static size_t maxpoolnd_winner(const float *plane, const ref_window *g, const nd_extent *e,
                               const int *o) {
    size_t best_i = (size_t)-1;
    float best = 0;
    int kk[3];
    for (size_t t = 0; t < e->n_k; t++) {
        size_t i;
        unravel(kk, t, e->k, e->rank);
        if (!tap_place(&i, g, o, kk, e->in)) continue;
        if (best_i == (size_t)-1 || plane[i] > best) {
            best_i = i;
            best = plane[i];
        }
    }
    assert(best_i != (size_t)-1 && "every max-pool window must hold an input cell");
    return best_i;
}

/* Checks what max pooling needs: p < k on every axis, so that no window is all padding. */
static nd_extent maxpoolnd_extents(const ref_window *g) {
    nd_extent e = nd_extents(g, ref_pool_out);
    for (int a = 0; a < g->rank; a++) assert(g->p[a] < g->k[a]);
    return e;
}

void ref_maxpoolnd_forward(float *y, const float *x, const ref_window *g) {
    // y is (N,C,out...), x is (N,C,in...)
    nd_extent e = maxpoolnd_extents(g);
    int o[3];
    for (size_t plane = 0; plane < (size_t)g->N * g->C; plane++)
        for (size_t oi = 0; oi < e.n_out; oi++) {
            unravel(o, oi, e.out, e.rank);
            const float *xp = x + plane * e.n_in;
            y[plane * e.n_out + oi] = xp[maxpoolnd_winner(xp, g, &e, o)];
        }
}

void ref_maxpoolnd_backward(float *dx, const float *dy, const float *x, const ref_window *g) {
    // dx is (N,C,in...), dy is (N,C,out...), x is (N,C,in...)
    // forward was y[n,c,o] = x[n,c,winner of window o], so backward is
    // dx[winner] += dy[n,c,o]; windows sharing a winner add up, and cells that win
    // nowhere get zero.
    nd_extent e = maxpoolnd_extents(g);
    size_t nx = (size_t)g->N * g->C * e.n_in;
    double *gx = zeroed(nx);
    int o[3];
    for (size_t plane = 0; plane < (size_t)g->N * g->C; plane++)
        for (size_t oi = 0; oi < e.n_out; oi++) {
            unravel(o, oi, e.out, e.rank);
            size_t win = maxpoolnd_winner(x + plane * e.n_in, g, &e, o);
            gx[plane * e.n_in + win] += dy[plane * e.n_out + oi];
        }
    store(dx, gx, nx);
}

/* Checks what average pooling needs: no dilation (ref_pool_out reads d, so it must be 1). */
static nd_extent avgpoolnd_extents(const ref_window *g) {
    nd_extent e = nd_extents(g, ref_pool_out);
    for (int a = 0; a < g->rank; a++) assert(g->d[a] == 1 && "average pooling has no dilation");
    return e;
}

/* What the average-pool window at o divides by: with count_pad the cells from its start
 * (padding included) up to the padded edge in + p, so a ceil-mode overhang past that edge
 * is not counted; without, only its cells inside the input. */
static double avgpoolnd_divisor(const ref_window *g, const int *o) {
    double cells = 1;
    for (int a = 0; a < g->rank; a++) {
        int start = o[a] * g->s[a] - g->p[a], end = start + g->k[a];
        if (g->count_pad) {
            if (end > g->in[a] + g->p[a]) end = g->in[a] + g->p[a];
        } else {
            if (start < 0) start = 0;
            if (end > g->in[a]) end = g->in[a];
        }
        cells *= end - start;
    }
    assert(cells > 0 && "every average-pool window must hold an input cell");
    return cells;
}

void ref_avgpoolnd_forward(float *y, const float *x, const ref_window *g) {
    // y is (N,C,out...), x is (N,C,in...)
    nd_extent e = avgpoolnd_extents(g);
    int o[3], kk[3];
    for (size_t plane = 0; plane < (size_t)g->N * g->C; plane++)
        for (size_t oi = 0; oi < e.n_out; oi++) {
            unravel(o, oi, e.out, e.rank);
            double acc = 0;
            for (size_t t = 0; t < e.n_k; t++) {
                size_t i;
                unravel(kk, t, e.k, e.rank);
                if (!tap_place(&i, g, o, kk, e.in)) continue; // padding adds a zero
                acc += x[plane * e.n_in + i];
            }
            y[plane * e.n_out + oi] = (float)(acc / avgpoolnd_divisor(g, o));
        }
}

void ref_avgpoolnd_backward(float *dx, const float *dy, const ref_window *g) {
    // dx is (N,C,in...), dy is (N,C,out...)
    // forward was y[n,c,o] = sum_{input cells of window o} x / divisor(o), so backward
    // is dx[cell] += dy[n,c,o] / divisor(o) for every input cell of every window
    // holding it.
    nd_extent e = avgpoolnd_extents(g);
    size_t nx = (size_t)g->N * g->C * e.n_in;
    double *gx = zeroed(nx);
    int o[3], kk[3];
    for (size_t plane = 0; plane < (size_t)g->N * g->C; plane++)
        for (size_t oi = 0; oi < e.n_out; oi++) {
            unravel(o, oi, e.out, e.rank);
            double d = dy[plane * e.n_out + oi] / avgpoolnd_divisor(g, o);
            for (size_t t = 0; t < e.n_k; t++) {
                size_t i;
                unravel(kk, t, e.k, e.rank);
                if (!tap_place(&i, g, o, kk, e.in)) continue;
                gx[plane * e.n_in + i] += d;
            }
        }
    store(dx, gx, nx);
}

/* ---- batch normalization ------------------------------------------------------------ */

/* Channel c's batch mean and biased variance over x (N,C,S), in double, two passes. */
static void batchnorm_stats(const float *x, int N, int C, int S, int c, double *mean, double *var) {
    double M = (double)N * S, sum = 0, sq = 0;
    for (int n = 0; n < N; n++)
        for (int s = 0; s < S; s++) sum += x[((size_t)n * C + c) * S + s];
    *mean = sum / M;
    for (int n = 0; n < N; n++)
        for (int s = 0; s < S; s++) {
            double d = x[((size_t)n * C + c) * S + s] - *mean;
            sq += d * d;
        }
    *var = sq / M;
}

void ref_batchnorm_forward_train(float *y, float *mean, float *var, float *running_mean,
                                 float *running_var, const float *x, const float *weight,
                                 const float *bias, int N, int C, int S, float eps,
                                 float momentum) {
    // y, x are (N,C,S); mean, var, running_mean, running_var, weight, bias are (C)
    double M = (double)N * S;
    assert(M >= 2 && "batch norm in training needs two values per channel");
    for (int c = 0; c < C; c++) {
        double mu, v;
        batchnorm_stats(x, N, C, S, c, &mu, &v);
        double invstd = 1.0 / sqrt(v + (double)eps);
        for (int n = 0; n < N; n++)
            for (int s = 0; s < S; s++) {
                size_t i = ((size_t)n * C + c) * S + s;
                y[i] = (float)((x[i] - mu) * invstd * weight[c] + bias[c]);
            }
        if (mean) mean[c] = (float)mu;
        if (var) var[c] = (float)v;
        if (running_mean)
            running_mean[c] = (float)((1.0 - momentum) * running_mean[c] + (double)momentum * mu);
        if (running_var)
            running_var[c] =
                (float)((1.0 - momentum) * running_var[c] + (double)momentum * v * M / (M - 1));
    }
}

void ref_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                            const float *x, const float *weight, int N, int C, int S, float eps) {
    // dx, dy, x are (N,C,S); dweight, dbias, weight are (C)
    // forward was y = xhat * w + b with xhat = (x - mean) * invstd, where mean and
    // invstd = 1/sqrt(var + eps) are functions of every x of the channel:
    //   d mean / d x_j = 1/M,  d invstd / d x_j = -invstd^3 (x_j - mean) / M,
    // so d xhat_i / d x_j = invstd (delta_ij - 1/M - xhat_i xhat_j / M), and backward is
    //   dx_j = w invstd (dy_j - sum_i dy_i / M - xhat_j sum_i dy_i xhat_i / M),
    //   dweight = sum_i dy_i xhat_i,  dbias = sum_i dy_i.
    double M = (double)N * S;
    assert(M >= 2 && "batch norm in training needs two values per channel");
    for (int c = 0; c < C; c++) {
        double mu, v, sum_dy = 0, sum_dy_xhat = 0;
        batchnorm_stats(x, N, C, S, c, &mu, &v);
        double invstd = 1.0 / sqrt(v + (double)eps);
        for (int n = 0; n < N; n++)
            for (int s = 0; s < S; s++) {
                size_t i = ((size_t)n * C + c) * S + s;
                sum_dy += dy[i];
                sum_dy_xhat += dy[i] * (x[i] - mu) * invstd;
            }
        if (dweight) dweight[c] = (float)sum_dy_xhat;
        if (dbias) dbias[c] = (float)sum_dy;
        if (!dx) continue;
        for (int n = 0; n < N; n++)
            for (int s = 0; s < S; s++) {
                size_t i = ((size_t)n * C + c) * S + s;
                double xhat = (x[i] - mu) * invstd;
                dx[i] = (float)(weight[c] * invstd * (dy[i] - sum_dy / M - xhat * sum_dy_xhat / M));
            }
    }
}

void ref_batchnorm_forward_eval(float *y, const float *x, const float *weight, const float *bias,
                                const float *running_mean, const float *running_var, int N, int C,
                                int S, float eps) {
    // y, x are (N,C,S); weight, bias, running_mean, running_var are (C)
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double invstd = 1.0 / sqrt((double)running_var[c] + eps);
            for (int s = 0; s < S; s++) {
                size_t i = ((size_t)n * C + c) * S + s;
                y[i] = (float)((x[i] - (double)running_mean[c]) * invstd * weight[c] + bias[c]);
            }
        }
}

/* ---- activations ---------------------------------------------------------------- */

void ref_relu_forward(float *y, const float *x, size_t n) {
    // y, x are (n)
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0.0f;
}

void ref_relu_backward(float *dx, const float *dy, const float *y, size_t n) {
    // dx, dy, y are (n)
    // forward was y = max(x, 0), so backward is dx = dy where y > 0, else 0.
    for (size_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? dy[i] : 0.0f;
}

void ref_sigmoid_forward(float *y, const float *x, size_t n) {
    // y, x are (n)
    // exp of a negative argument only, so neither branch overflows.
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v)));
    }
}

void ref_sigmoid_backward(float *dx, const float *dy, const float *y, size_t n) {
    // dx, dy, y are (n)
    // forward was y = 1 / (1 + e^-x), so backward is dx = dy * y * (1 - y).
    for (size_t i = 0; i < n; i++) dx[i] = (float)((double)dy[i] * y[i] * (1.0 - y[i]));
}

void ref_tanh_forward(float *y, const float *x, size_t n) {
    // y, x are (n)
    for (size_t i = 0; i < n; i++) y[i] = (float)tanh((double)x[i]);
}

void ref_tanh_backward(float *dx, const float *dy, const float *y, size_t n) {
    // dx, dy, y are (n)
    // forward was y = tanh(x), so backward is dx = dy * (1 - y^2).
    for (size_t i = 0; i < n; i++) dx[i] = (float)((double)dy[i] * (1.0 - (double)y[i] * y[i]));
}

/* f(x) and f'(x) in double, for ref_act_forward and ref_act_backward */
static double act_value(ref_act f, double a, double x, double *slope) {
    const double c = sqrt(2.0 / 3.14159265358979323846), k = 0.044715;
    switch (f) {
    case REF_ACT_LEAKY_RELU:
        *slope = x > 0 ? 1 : a;
        return x > 0 ? x : a * x;
    case REF_ACT_ELU:
        *slope = x > 0 ? 1 : a * exp(x);
        return x > 0 ? x : a * expm1(x);
    case REF_ACT_GELU: {
        double cdf = 0.5 * (1 + erf(x / sqrt(2.0)));
        *slope = cdf + x * exp(-x * x / 2) / sqrt(2 * 3.14159265358979323846);
        return x * cdf;
    }
    case REF_ACT_GELU_TANH: {
        double t = tanh(c * (x + k * x * x * x));
        *slope = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * k * x * x);
        return 0.5 * x * (1 + t);
    }
    case REF_ACT_SILU: {
        double s = 1 / (1 + exp(-x));
        *slope = s * (1 + x * (1 - s));
        return x * s;
    }
    case REF_ACT_HARDSWISH:
        *slope = x < -3 ? 0 : x < 3 ? x / 3 + 0.5 : 1;
        return x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6;
    }
    *slope = 0;
    return 0;
}

void ref_act_forward(ref_act f, double a, float *y, const float *x, size_t n) {
    double slope;
    for (size_t i = 0; i < n; i++) y[i] = (float)act_value(f, a, x[i], &slope);
}

void ref_act_backward(ref_act f, double a, float *dx, const float *dy, const float *x, size_t n) {
    // dx = dy f'(x): the chain rule, element by element
    double slope;
    for (size_t i = 0; i < n; i++) {
        act_value(f, a, x[i], &slope);
        dx[i] = (float)(dy[i] * slope);
    }
}

/* ---- regression losses ----------------------------------------------------------- */

double ref_regression_forward(ref_loss f, float *out, const float *z, const float *t, int N,
                              int E) {
    double total = 0;
    for (int n = 0; n < N; n++) {
        double sum = 0;
        for (int e = 0; e < E; e++) {
            size_t i = (size_t)n * E + e;
            double zi = z[i], ti = t[i], sig = 1 / (1 + exp(-zi));
            if (f == REF_LOSS_MSE) sum += (zi - ti) * (zi - ti);
            if (f == REF_LOSS_L1) sum += fabs(zi - ti);
            // -(t log s + (1 - t) log(1 - s)), s = sigmoid(z), with log s = -log(1 + e^-z)
            if (f == REF_LOSS_BCE) sum += ti * log1p(exp(-zi)) + (1 - ti) * log1p(exp(zi));
            if (out) out[i] = (float)(f == REF_LOSS_BCE ? sig : zi);
        }
        total += sum / E;
    }
    return total;
}

void ref_regression_backward(ref_loss f, float *dz, float *dt, const float *z, const float *t,
                             int N, int E) {
    // d/dz and d/dt of the mean over E: mse 2(z - t)/E and its negative; l1 sign(z - t)/E
    // (0 at z = t) and its negative; bce (sigmoid(z) - t)/E and -z/E.
    for (size_t i = 0; i < (size_t)N * E; i++) {
        double zi = z[i], ti = t[i], gz = 0, gt = 0;
        if (f == REF_LOSS_MSE) gz = 2 * (zi - ti), gt = -gz;
        if (f == REF_LOSS_L1) gz = zi > ti ? 1 : zi < ti ? -1 : 0, gt = -gz;
        if (f == REF_LOSS_BCE) gz = 1 / (1 + exp(-zi)) - ti, gt = -zi;
        dz[i] = (float)(gz / E);
        if (dt) dt[i] = (float)(gt / E);
    }
}

/* ---- linear ------------------------------------------------------------------------ */

void ref_linear_forward(float *y, const float *x, const float *w, const float *b, int N, int I,
                        int O) {
    // y is (N,O), x is (N,I), w is (O,I), b is (O) or NULL
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) {
            double acc = b ? b[o] : 0.0;
            for (int i = 0; i < I; i++) acc += (double)x[(size_t)n * I + i] * w[(size_t)o * I + i];
            y[(size_t)n * O + o] = (float)acc;
        }
}

void ref_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, int N, int I, int O) {
    // dx is (N,I), dw is (O,I), db is (O) or NULL
    // dy is (N,O), x is (N,I), w is (O,I)
    // forward was y[n,o] = b[o] + sum_i x[n,i] * w[o,i], so backward is
    //   dx[n,i] = sum_o dy[n,o] * w[o,i]
    //   dw[o,i] = sum_n dy[n,o] * x[n,i]
    //   db[o]   = sum_n dy[n,o]
    for (int n = 0; n < N; n++)
        for (int i = 0; i < I; i++) {
            double acc = 0;
            for (int o = 0; o < O; o++) acc += (double)dy[(size_t)n * O + o] * w[(size_t)o * I + i];
            dx[(size_t)n * I + i] = (float)acc;
        }
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) {
            double acc = 0;
            for (int n = 0; n < N; n++) acc += (double)dy[(size_t)n * O + o] * x[(size_t)n * I + i];
            dw[(size_t)o * I + i] = (float)acc;
        }
    if (db)
        for (int o = 0; o < O; o++) {
            double acc = 0;
            for (int n = 0; n < N; n++) acc += dy[(size_t)n * O + o];
            db[o] = (float)acc;
        }
}

/* ---- softmax + cross-entropy ------------------------------------------------------- */

/* Statistics of the K logits row[0], row[stride], ..., row[(K-1)*stride] (a row of (N,K) has
 * stride 1, a position of (N,K,P) stride P): the first maximum's index, the maximum and
 * log(sum_k exp(row[k] - max)). Subtracting the max keeps every exp <= 1. */
static void softmax_stats(const float *row, int K, size_t stride, int *argmax, double *max,
                          double *log_sum) {
    int a = 0;
    for (int k = 1; k < K; k++)
        if (row[k * stride] > row[a * stride]) a = k; // strictly greater: the first maximum wins
    double sum = 0;
    for (int k = 0; k < K; k++) sum += exp((double)row[k * stride] - row[a * stride]);
    *argmax = a;
    *max = row[a * stride];
    *log_sum = log(sum);
}

double ref_softmax_xent_forward(float *probs, int *correct, const float *logits,
                                const int32_t *labels, int N, int K) {
    // probs is (N,K) or NULL, logits is (N,K), labels is (N)
    // -log softmax(l)[t] = log sum_k e^{l_k} - l_t = (max + log_sum) - l_t
    double loss = 0;
    int hits = 0;
    for (int n = 0; n < N; n++) {
        const float *row = logits + (size_t)n * K;
        int argmax;
        double max, log_sum;
        softmax_stats(row, K, 1, &argmax, &max, &log_sum);
        assert(labels[n] >= 0 && labels[n] < K);
        loss += max + log_sum - row[labels[n]];
        hits += argmax == labels[n];
        if (probs)
            for (int k = 0; k < K; k++)
                probs[(size_t)n * K + k] = (float)exp((double)row[k] - max - log_sum);
    }
    if (correct) *correct = hits;
    return loss;
}

void ref_softmax_xent_backward(float *dlogits, const float *logits, const int32_t *labels, int N,
                               int K) {
    // dlogits is (N,K), logits is (N,K), labels is (N)
    // forward was L = sum_n (log sum_k e^{l[n,k]} - l[n,t_n]),
    // so backward is dL/dl[n,k] = softmax(l[n])[k] - (k == t_n).
    for (int n = 0; n < N; n++) {
        const float *row = logits + (size_t)n * K;
        int argmax;
        double max, log_sum;
        softmax_stats(row, K, 1, &argmax, &max, &log_sum);
        for (int k = 0; k < K; k++)
            dlogits[(size_t)n * K + k] =
                (float)(exp((double)row[k] - max - log_sum) - (k == labels[n] ? 1.0 : 0.0));
    }
}

double ref_softmax_xent_positions_forward(float *probs, int *correct, const float *logits,
                                          const int32_t *labels, int N, int K, int P) {
    // probs is (N,K,P) or NULL, logits is (N,K,P), labels is (N,P)
    // sample b's loss is (1/P) sum_p ((max + log_sum) - l[b,t,p]) over its K logits at p
    double loss = 0;
    int hits = 0;
    for (int b = 0; b < N; b++) {
        double sample = 0;
        for (int p = 0; p < P; p++) {
            const float *col = logits + (size_t)b * K * P + p; // (K) with stride P
            int32_t t = labels[(size_t)b * P + p];
            int argmax;
            double max, log_sum;
            softmax_stats(col, K, (size_t)P, &argmax, &max, &log_sum);
            assert(t >= 0 && t < K);
            sample += max + log_sum - col[(size_t)t * P];
            hits += argmax == t;
            if (probs)
                for (int k = 0; k < K; k++)
                    probs[((size_t)b * K + k) * P + p] =
                        (float)exp((double)col[(size_t)k * P] - max - log_sum);
        }
        loss += sample / P;
    }
    if (correct) *correct = hits;
    return loss;
}

void ref_softmax_xent_positions_backward(float *dlogits, const float *logits, const int32_t *labels,
                                         int N, int K, int P) {
    // dlogits is (N,K,P), logits is (N,K,P), labels is (N,P)
    // forward was L = sum_b (1/P) sum_p (log sum_k e^{l[b,k,p]} - l[b,t_bp,p]),
    // so backward is dL/dl[b,k,p] = (softmax(l[b,:,p])[k] - (k == t_bp)) / P.
    for (int b = 0; b < N; b++)
        for (int p = 0; p < P; p++) {
            const float *col = logits + (size_t)b * K * P + p; // (K) with stride P
            int32_t t = labels[(size_t)b * P + p];
            int argmax;
            double max, log_sum;
            softmax_stats(col, K, (size_t)P, &argmax, &max, &log_sum);
            for (int k = 0; k < K; k++) {
                double prob = exp((double)col[(size_t)k * P] - max - log_sum);
                dlogits[((size_t)b * K + k) * P + p] = (float)((prob - (k == t)) / P);
            }
        }
}

/* The smoothed target's q_k at class k of a position whose label is t. */
static double smoothed_target(int k, int32_t t, int K, double eps) {
    return (k == t ? 1.0 - eps : 0.0) + eps / K;
}

double ref_softmax_xent_smoothed_forward(float *probs, int *correct, const float *logits,
                                         const int32_t *labels, int N, int K, int P, double eps) {
    // probs is (N,K,P) or NULL, logits is (N,K,P), labels is (N,P)
    // a position's loss is -sum_k q_k log softmax(l)_k, log softmax(l)_k = l_k - (max + log_sum)
    double loss = 0;
    int hits = 0;
    for (int b = 0; b < N; b++) {
        double sample = 0;
        for (int p = 0; p < P; p++) {
            const float *col = logits + (size_t)b * K * P + p; // (K) with stride P
            int32_t t = labels[(size_t)b * P + p];
            int argmax;
            double max, log_sum;
            softmax_stats(col, K, (size_t)P, &argmax, &max, &log_sum);
            assert(t >= 0 && t < K);
            for (int k = 0; k < K; k++) {
                double log_p = (double)col[(size_t)k * P] - max - log_sum;
                sample -= smoothed_target(k, t, K, eps) * log_p;
                if (probs) probs[((size_t)b * K + k) * P + p] = (float)exp(log_p);
            }
            hits += argmax == t;
        }
        loss += sample / P;
    }
    if (correct) *correct = hits;
    return loss;
}

void ref_softmax_xent_smoothed_backward(float *dlogits, const float *logits, const int32_t *labels,
                                        int N, int K, int P, double eps) {
    // dlogits is (N,K,P), logits is (N,K,P), labels is (N,P)
    // forward was L = sum_b (1/P) sum_p -sum_k q_k (l[b,k,p] - log sum_j e^{l[b,j,p]}), and
    // sum_k q_k = 1, so backward is dL/dl[b,k,p] = (softmax(l[b,:,p])[k] - q_k) / P.
    for (int b = 0; b < N; b++)
        for (int p = 0; p < P; p++) {
            const float *col = logits + (size_t)b * K * P + p; // (K) with stride P
            int32_t t = labels[(size_t)b * P + p];
            int argmax;
            double max, log_sum;
            softmax_stats(col, K, (size_t)P, &argmax, &max, &log_sum);
            for (int k = 0; k < K; k++) {
                double prob = exp((double)col[(size_t)k * P] - max - log_sum);
                dlogits[((size_t)b * K + k) * P + p] =
                    (float)((prob - smoothed_target(k, t, K, eps)) / P);
            }
        }
}

/* ---- add, concat -------------------------------------------------------------------------- */

void ref_add_forward(float *y, const float *const *xs, int nin, size_t count) {
    for (size_t i = 0; i < count; i++) {
        double sum = 0;
        for (int k = 0; k < nin; k++) sum += xs[k][i];
        y[i] = (float)sum;
    }
}

void ref_add_backward(float *const *dxs, const float *dy, int nin, size_t count) {
    // forward was y = sum_k x_k, so backward is dx_k = dy for every k
    for (int k = 0; k < nin; k++) memcpy(dxs[k], dy, count * sizeof *dy);
}

/* Where sample n of input k starts in y (N, sum of channels, S): at channel
 * channels[0] + ... + channels[k-1] of the sample. */
static size_t concat_at(const int *channels, int nin, int k, int n, int S) {
    size_t total = 0, c0 = 0;
    for (int j = 0; j < nin; j++) {
        total += (size_t)channels[j];
        if (j < k) c0 += (size_t)channels[j];
    }
    return ((size_t)n * total + c0) * S;
}

void ref_concat_forward(float *y, const float *const *xs, const int *channels, int nin, int N,
                        int S) {
    for (int n = 0; n < N; n++)
        for (int k = 0; k < nin; k++) {
            size_t len = (size_t)channels[k] * S;
            memcpy(y + concat_at(channels, nin, k, n, S), xs[k] + n * len, len * sizeof *y);
        }
}

void ref_concat_backward(float *const *dxs, const float *dy, const int *channels, int nin, int N,
                         int S) {
    // forward copied each input into its channels of y, so backward copies them back
    for (int n = 0; n < N; n++)
        for (int k = 0; k < nin; k++) {
            size_t len = (size_t)channels[k] * S;
            memcpy(dxs[k] + n * len, dy + concat_at(channels, nin, k, n, S), len * sizeof *dy);
        }
}

/* ---- dropout ---------------------------------------------------------------------------- */

static uint32_t mix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

uint32_t ref_dropout_key(const char *name, uint32_t seed) {
    uint32_t h = 2166136261u;
    for (; *name; name++) h = (h ^ (uint8_t)*name) * 16777619u;
    return h ^ seed;
}

static int kept(uint32_t key, uint32_t step, uint32_t sample, uint32_t e, float p) {
    uint32_t h = mix32(mix32(mix32(mix32(key ^ 0x9e3779b9u) ^ step) ^ sample) ^ e);
    return (float)(h >> 8) * (1.0f / 16777216.0f) >= p;
}

void ref_dropout_forward(float *y, const float *x, int N, int size, float p, uint32_t key,
                         uint32_t step, uint32_t first) {
    float scale = p < 1 ? 1.0f / (1.0f - p) : 0.0f;
    for (int b = 0; b < N; b++)
        for (int e = 0; e < size; e++) {
            size_t i = (size_t)b * size + e;
            y[i] = kept(key, step, first + (uint32_t)b, (uint32_t)e, p) ? x[i] * scale : 0.0f;
        }
}

/* forward was y = x * keep * scale, so dx = dy * keep * scale */
void ref_dropout_backward(float *dx, const float *dy, int N, int size, float p, uint32_t key,
                          uint32_t step, uint32_t first) {
    ref_dropout_forward(dx, dy, N, size, p, key, step, first);
}

/* ---- upsample ---------------------------------------------------------------------- */

/* The inputs output o reads along one axis, at[0..1], and their weights, wt[0..1]. */
static void upsample_taps(const ref_upsample *u, int axis, int o, int at[2], double wt[2]) {
    int in = u->in[axis], s = u->scale[axis];
    if (!u->linear) {
        at[0] = at[1] = o / s;
        wt[0] = 1, wt[1] = 0;
        return;
    }
    double src = (o + 0.5) / s - 0.5;
    if (src < 0) src = 0;
    at[0] = (int)floor(src);
    at[1] = at[0] + 1 < in ? at[0] + 1 : in - 1;
    wt[1] = src - at[0];
    wt[0] = 1 - wt[1];
}

static size_t upsample_in_count(const ref_upsample *u) {
    size_t n = (size_t)u->N * u->C;
    for (int a = 0; a < u->rank; a++) n *= (size_t)u->in[a];
    return n;
}

/* Visits every (output, input, weight) that the forward pass sums: y[o] += w * x[i], with
 * o and i flat indices of y and x. */
typedef void (*upsample_visit)(size_t o, size_t i, double w, void *ctx);

static void upsample_walk(const ref_upsample *u, upsample_visit visit, void *ctx) {
    assert(u->rank >= 1 && u->rank <= 3);
    int out[3] = {1, 1, 1}, in[3] = {1, 1, 1};
    size_t n_out = 1, n_in = 1;
    for (int a = 0; a < u->rank; a++) {
        assert(u->in[a] >= 1 && u->scale[a] >= 1);
        in[a] = u->in[a], out[a] = u->in[a] * u->scale[a];
        n_in *= (size_t)in[a], n_out *= (size_t)out[a];
    }
    for (size_t plane = 0; plane < (size_t)u->N * u->C; plane++)
        for (size_t flat = 0; flat < n_out; flat++) {
            int o[3] = {0}, at[3][2];
            double wt[3][2];
            for (int a = u->rank - 1, rest = (int)flat; a >= 0; a--) {
                o[a] = rest % out[a];
                rest /= out[a];
                upsample_taps(u, a, o[a], at[a], wt[a]);
            }
            // every corner: one of the two taps on each axis
            for (int corner = 0; corner < 1 << u->rank; corner++) {
                size_t i = 0;
                double w = 1;
                for (int a = 0; a < u->rank; a++) {
                    int t = (corner >> a) & 1;
                    i = i * (size_t)in[a] + (size_t)at[a][t];
                    w *= wt[a][t];
                }
                visit(plane * n_out + flat, plane * n_in + i, w, ctx);
            }
        }
}

typedef struct {
    double *to;
    const float *from;
} upsample_sum;

static void upsample_gather(size_t o, size_t i, double w, void *ctx) {
    upsample_sum *s = ctx;
    s->to[o] += w * s->from[i];
}

static void upsample_scatter(size_t o, size_t i, double w, void *ctx) {
    upsample_sum *s = ctx;
    s->to[i] += w * s->from[o];
}

void ref_upsample_forward(float *y, const float *x, const ref_upsample *u) {
    size_t ny = upsample_in_count(u);
    for (int a = 0; a < u->rank; a++) ny *= (size_t)u->scale[a];
    upsample_sum s = {zeroed(ny), x};
    upsample_walk(u, upsample_gather, &s);
    store(y, s.to, ny);
}

void ref_upsample_backward(float *dx, const float *dy, const ref_upsample *u) {
    // forward was y[o] = sum of w x[i] over o's taps, so backward is dx[i] += w dy[o]
    size_t nx = upsample_in_count(u);
    upsample_sum s = {zeroed(nx), dy};
    upsample_walk(u, upsample_scatter, &s);
    store(dx, s.to, nx);
}
