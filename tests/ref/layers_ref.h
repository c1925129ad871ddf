/* Plain-C references for every CNN layer: the independent answers the OpenCL
 * kernels are tested against. Straightforward loops, sums in double.
 *
 * Conventions shared by every function here:
 *  - layout NCHW, float32, row-major; shapes are written beside each argument;
 *  - outputs come first, gradients are prefixed d;
 *  - backward passes produce the SUM over the batch of the per-sample
 *    gradients (nothing is divided by the batch size) and OVERWRITE their
 *    outputs: dx, dw, db are never accumulated into (where a tensor feeds
 *    several layers, the graph adds the pieces: graph_ref.c here, and in the
 *    engine a layer's backward adds to dx when its plan says so);
 *  - the 2-D conv and pools have OH = (H + 2*ph - KH) / sh + 1 (floor), likewise
 *    OW, which is what ref_out_size computes; the N-d ones take a ref_window and
 *    their sizes from ref_conv_out, ref_conv_transpose_out and ref_pool_out. */
#ifndef CLNET_REF_LAYERS_H
#define CLNET_REF_LAYERS_H

#include <stddef.h>
#include <stdint.h>

/* (in + 2*pad - k) / stride + 1, floored: the output size of conv and pools. */
int ref_out_size(int in, int k, int stride, int pad);

/* conv2d: x (N,C,H,W), w (F,C,KH,KW), b (F) or NULL, y (N,F,OH,OW); zero padding; any stride. */
void ref_conv2d_forward(float *y, const float *x, const float *w, const float *b, int N, int C,
                        int H, int W, int F, int KH, int KW, int sh, int sw, int ph, int pw);
/* dy (N,F,OH,OW) -> dx (N,C,H,W), dw (F,C,KH,KW), db (F) (db may be NULL) */
void ref_conv2d_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, int N, int C, int H, int W, int F, int KH, int KW, int sh,
                         int sw, int ph, int pw);
/* The same with dilation (taps dh, dw apart: a kernel spans d*(k-1)+1) and G groups (filter f
 * reads channels group(f)*C/G .. +C/G; w is (F,C/G,KH,KW)), PyTorch's Conv2d */
void ref_conv2d_full_forward(float *y, const float *x, const float *w, const float *b, int N, int C,
                             int H, int W, int F, int KH, int KW, int sh, int sw, int ph, int pw,
                             int dh, int dw, int G);
void ref_conv2d_full_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                              const float *w, int N, int C, int H, int W, int F, int KH, int KW,
                              int sh, int sw, int ph, int pw, int dh, int dwid, int G);

/* max pooling: padded positions never win (treated as -infinity); requires ph < KH, pw < KW so
 * every window holds a real pixel. Ties: the first maximum in row-major window order wins
 * (strictly-greater comparison), as PyTorch does. */
/* x (N,C,H,W) -> y (N,C,OH,OW) */
void ref_maxpool_forward(float *y, const float *x, int N, int C, int H, int W, int KH, int KW,
                         int sh, int sw, int ph, int pw);
/* dy (N,C,OH,OW), x (N,C,H,W) -> dx (N,C,H,W); each dy goes to its window's winner */
void ref_maxpool_backward(float *dx, const float *dy, const float *x, int N, int C, int H, int W,
                          int KH, int KW, int sh, int sw, int ph, int pw);

/* average pooling, padded zeros counted (divisor KH*KW, PyTorch's count_include_pad=True) */
/* x (N,C,H,W) -> y (N,C,OH,OW) */
void ref_avgpool_forward(float *y, const float *x, int N, int C, int H, int W, int KH, int KW,
                         int sh, int sw, int ph, int pw);
/* dy (N,C,OH,OW) -> dx (N,C,H,W) */
void ref_avgpool_backward(float *dx, const float *dy, int N, int C, int H, int W, int KH, int KW,
                          int sh, int sw, int ph, int pw);

/* global average pooling (PyTorch's AdaptiveAvgPool2d(1)): the mean of each plane of S spatial
 * positions (S = H*W for images, any number of spatial dimensions flattened) */
/* x (N,C,S) -> y (N,C) */
void ref_global_avgpool_forward(float *y, const float *x, int N, int C, int S);
/* dy (N,C) -> dx (N,C,S) */
void ref_global_avgpool_backward(float *dx, const float *dy, int N, int C, int S);
/* global max pooling (PyTorch's AdaptiveMaxPool2d(1)): the largest value of each plane, the
 * first one where several are equal, the last NaN where there are NaNs */
void ref_global_maxpool_forward(float *y, const float *x, int N, int C, int S);
/* dy (N,C) -> dx (N,C,S): dy at each plane's largest value, 0 elsewhere */
void ref_global_maxpool_backward(float *dx, const float *dy, const float *x, int N, int C, int S);

/* ---- N-d convolution, transposed convolution and pooling (PyTorch's Conv1d/2d/3d,
 * ConvTranspose1d/2d/3d, MaxPool1d/2d/3d, AvgPool1d/2d/3d) ---- */

/* N-d window geometry for the references: `rank` spatial axes (1..3); every array is
 * indexed by axis, first `rank` entries used, the rest ignored. Tensors are batch first,
 * then channels, then the spatial axes row-major: (N, C, in[0], ..., in[rank-1]). */
typedef struct {
    int rank;
    int N, C, F;                /* batch, input channels, output channels (pools: F unused) */
    int in[3];                  /* input spatial sizes */
    int k[3], s[3], p[3], d[3]; /* kernel, stride, padding, dilation (>= 1) per axis */
    int extra[3];               /* conv only: the right (after) padding is p + extra, the left p;
                                   extra may be negative down to -p (pad=causal: p = d*(k-1),
                                   extra = -p) or positive (pad=same's odd zero) */
    int groups;                 /* conv and transpose, >= 1 (0 is read as 1) */
    int out_pad[3];             /* transpose only: PyTorch's output_padding */
    int ceil;                   /* pools: PyTorch's ceil_mode */
    int count_pad;              /* avgpool: PyTorch's count_include_pad */
} ref_window;

/* conv: (in + 2p + extra - d*(k-1) - 1) / s + 1, floored (<= 0 when it never fits) */
int ref_conv_out(const ref_window *g, int axis);
/* conv_transpose: (in - 1)*s - 2p + d*(k-1) + out_pad + 1 */
int ref_conv_transpose_out(const ref_window *g, int axis);
/* pools: floor((in + 2p - d*(k-1) - 1) / s) + 1, or ceil of that division in ceil mode,
 * where a last window that would start at or past in + p is dropped (PyTorch's rule) */
int ref_pool_out(const ref_window *g, int axis);

/* conv: x (N, C, in...), w (F, C/groups, k...), b (F) or NULL, y (N, F, out...).
 * Filter f reads the channels of its group f / (F/groups). Padded inputs are zeros. */
void ref_convnd_forward(float *y, const float *x, const float *w, const float *b,
                        const ref_window *g);
/* overwrites dx (N,C,in...), dw (F,C/groups,k...) and db (F) (db may be NULL) */
void ref_convnd_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, const ref_window *g);
/* PyTorch's ConvTransposeNd: x (N, C, in...), w (C, F/groups, k...), b (F) or NULL,
 * y (N, F, out...) with out = ref_conv_transpose_out; output_padding adds zeros-free
 * positions at the end that only the taps reaching them feed (and bias). */
void ref_conv_transpose_forward(float *y, const float *x, const float *w, const float *b,
                                const ref_window *g);
void ref_conv_transpose_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                                 const float *w, const ref_window *g);
/* max pooling with dilation, padding and ceil mode: padded places never win; the first
 * maximum in row-major window order wins (strictly greater replaces), as PyTorch;
 * requires p < k on every axis, and (with dilation, whose taps may step over a small
 * input) an input cell in every window: PyTorch gives -inf there. y (N, C, out...) */
void ref_maxpoolnd_forward(float *y, const float *x, const ref_window *g);
/* backward: each input gets the sum of dy over the windows whose (first) maximum it is */
void ref_maxpoolnd_backward(float *dx, const float *dy, const float *x, const ref_window *g);
/* average pooling (no dilation): the sum of the window's input cells divided by, with
 * count_pad, the window's cells up to the padded edge (in + p on the right; in ceil mode
 * a last window may overhang it and its overhang is not counted), without count_pad the
 * window's input cells only. */
void ref_avgpoolnd_forward(float *y, const float *x, const ref_window *g);
void ref_avgpoolnd_backward(float *dx, const float *dy, const ref_window *g);

/* batch normalization (PyTorch's BatchNorm1d/2d/3d) over x (N,C,S), S the spatial positions
 * flattened (1 for a vector (N,C)): channel c's M = N*S values are x[(n*C + c)*S + s]. With
 * xhat = (x - mean[c]) / sqrt(var[c] + eps), y = xhat * weight[c] + bias[c].
 * Training: mean and the BIASED var (sum of squares / M) are the batch's; M must be >= 2. */
/* x (N,C,S), weight (C), bias (C) -> y (N,C,S); mean, var (C) get the batch's statistics
 * unless NULL; running_mean, running_var (C) are updated in place unless NULL, as
 * running = (1 - momentum) * running + momentum * batch with the UNBIASED variance
 * var * M / (M - 1) for running_var. */
void ref_batchnorm_forward_train(float *y, float *mean, float *var, float *running_mean,
                                 float *running_var, const float *x, const float *weight,
                                 const float *bias, int N, int C, int S, float eps, float momentum);
/* dy (N,C,S), x (N,C,S), weight (C) -> dx (N,C,S), dweight (C) = sum dy * xhat, dbias (C) =
 * sum dy: the gradients of sum(y * dy) through the TRAINING forward, whose statistics depend
 * on x (recomputed here from x). Any of dx, dweight, dbias may be NULL. */
void ref_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                            const float *x, const float *weight, int N, int C, int S, float eps);
/* Evaluation: x (N,C,S), weight, bias, running_mean, running_var (C) -> y (N,C,S), normalized
 * with the running statistics (which are not changed). */
void ref_batchnorm_forward_eval(float *y, const float *x, const float *weight, const float *bias,
                                const float *running_mean, const float *running_var, int N, int C,
                                int S, float eps);

/* activations over n elements; backward takes the forward OUTPUT y (relu: dx = dy where y > 0) */
/* all arrays (n) */
void ref_relu_forward(float *y, const float *x, size_t n);
void ref_relu_backward(float *dx, const float *dy, const float *y, size_t n);
void ref_sigmoid_forward(float *y, const float *x, size_t n);
void ref_sigmoid_backward(float *dx, const float *dy, const float *y, size_t n);
void ref_tanh_forward(float *y, const float *x, size_t n);
void ref_tanh_backward(float *dx, const float *dy, const float *y, size_t n);
/* Activations whose backward takes the forward's INPUT x, and one parameter a:
 * leaky_relu's negative slope, elu's alpha (the others ignore it). At a kink
 * the derivative is PyTorch's: the negative side's at 0 (leaky_relu, elu);
 * hardswish's, the middle piece's at -3 and the right piece's (1) at 3. */
typedef enum {
    REF_ACT_LEAKY_RELU, /* x > 0 ? x : a x */
    REF_ACT_ELU,        /* x > 0 ? x : a (e^x - 1) */
    REF_ACT_GELU,       /* x Phi(x), with erf */
    REF_ACT_GELU_TANH,  /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    REF_ACT_SILU,       /* x / (1 + e^-x) */
    REF_ACT_HARDSWISH,  /* x min(max(x + 3, 0), 6) / 6 */
} ref_act;
void ref_act_forward(ref_act f, double a, float *y, const float *x, size_t n);
void ref_act_backward(ref_act f, double a, float *dx, const float *dy, const float *x, size_t n);

/* Regression losses of z (N,E) against t (N,E): each sample's loss the mean
 * over its E elements of (z - t)^2 (mse), |z - t| (l1) or the binary
 * cross-entropy of sigmoid(z) against t (bce_with_logits). Forward writes
 * out (N,E): z, or sigmoid(z) for bce; returns the SUM over samples of their
 * losses. Backward writes the gradients of that sum: dz and dt (N,E), dt may
 * be NULL. */
typedef enum { REF_LOSS_MSE, REF_LOSS_L1, REF_LOSS_BCE } ref_loss;
double ref_regression_forward(ref_loss f, float *out, const float *z, const float *t, int N, int E);
void ref_regression_backward(ref_loss f, float *dz, float *dt, const float *z, const float *t,
                             int N, int E);

/* linear: x (N,I), w (O,I), b (O) or NULL, y (N,O) = x w^T + b */
void ref_linear_forward(float *y, const float *x, const float *w, const float *b, int N, int I,
                        int O);
/* dy (N,O) -> dx (N,I), dw (O,I), db (O) (db may be NULL) */
void ref_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, int N, int I, int O);

/* softmax + cross-entropy, fused: logits (N,K), labels (N) in [0,K). Returns the SUM over samples
 * of -log softmax(logits)[label], computed stably (log-sum-exp with the max subtracted); counts in
 * *correct the samples whose argmax (first maximum on ties) equals the label. probs (N,K) may be
 * NULL (and so may correct). */
double ref_softmax_xent_forward(float *probs, int *correct, const float *logits,
                                const int32_t *labels, int N, int K);
/* dlogits (N,K) = softmax(logits) - onehot(label): the gradient of the summed loss */
void ref_softmax_xent_backward(float *dlogits, const float *logits, const int32_t *labels, int N,
                               int K);
/* Cross-entropy at every position (PyTorch's nn.CrossEntropyLoss on (N, K, spatial...)):
 * logits (N, K, P), labels (N, P) in [0, K). Returns the SUM over samples of each sample's
 * MEAN over its positions of -log softmax(logits[b, :, p])[label]; *correct (may be NULL)
 * gets the count of positions whose argmax over K (first maximum on ties) is the label;
 * probs (N, K, P), the softmax over K at each position, may be NULL. */
double ref_softmax_xent_positions_forward(float *probs, int *correct, const float *logits,
                                          const int32_t *labels, int N, int K, int P);
/* dlogits (N, K, P) = (softmax - onehot(label)) / P: the gradient of the returned sum */
void ref_softmax_xent_positions_backward(float *dlogits, const float *logits, const int32_t *labels,
                                         int N, int K, int P);

/* Cross-entropy against the smoothed target q = (1 - eps) onehot(label) + eps / K (PyTorch's
 * cross_entropy(..., label_smoothing=eps)) at each of P positions (P 1: per sample): logits
 * (N, K, P), labels (N, P) in [0, K). Returns the SUM over samples of each sample's MEAN over
 * its positions of -sum_j q_j log softmax(logits[b, :, p])_j; *correct (may be NULL) as
 * ref_softmax_xent_positions_forward's; probs (N, K, P) may be NULL. eps 0 is the plain loss. */
double ref_softmax_xent_smoothed_forward(float *probs, int *correct, const float *logits,
                                         const int32_t *labels, int N, int K, int P, double eps);
/* dlogits (N, K, P) = (softmax - q) / P: the gradient of the returned sum */
void ref_softmax_xent_smoothed_backward(float *dlogits, const float *logits, const int32_t *labels,
                                        int N, int K, int P, double eps);

/* add (a residual connection): nin inputs of one shape, y = x_0 + x_1 + ...; all (count) */
void ref_add_forward(float *y, const float *const *xs, int nin, size_t count);
/* dy (count) -> every dxs[k] (count) */
void ref_add_backward(float *const *dxs, const float *dy, int nin, size_t count);
/* concat along channels in the order listed: xs[k] (N, channels[k], S) -> y (N, sum of
 * channels, S) */
void ref_concat_forward(float *y, const float *const *xs, const int *channels, int nin, int N,
                        int S);
/* dy (N, sum of channels, S) -> dxs[k] (N, channels[k], S) */
void ref_concat_backward(float *const *dxs, const float *dy, const int *channels, int nin, int N,
                         int S);

/* dropout in training, the mask a hash of (key, step, global sample first + b, element e):
 * murmur3's 32-bit finaliser chained over seed ^ 0x9e3779b9, step, sample, element; the top
 * 24 bits as u in [0, 1); kept when u >= p, then scaled by 1 / (1 - p). key is FNV-1a of the
 * layer's name xor its seed= (ref_dropout_key). x, y, dy, dx (N, size) */
uint32_t ref_dropout_key(const char *name, uint32_t seed);
void ref_dropout_forward(float *y, const float *x, int N, int size, float p, uint32_t key,
                         uint32_t step, uint32_t first);
void ref_dropout_backward(float *dx, const float *dy, int N, int size, float p, uint32_t key,
                          uint32_t step, uint32_t first);

/* upsampling by whole factors (PyTorch's nn.Upsample with an integer scale_factor) over
 * `rank` (1..3) spatial axes: x (N, C, in...) -> y (N, C, in[a] * scale[a]...). Along an
 * axis output o reads, with linear = 0 (mode='nearest'), input o / scale; with linear = 1
 * (linear, bilinear, trilinear; align_corners=False) src = (o + 0.5) / scale - 0.5 clamped
 * below at 0, inputs i0 = floor(src) and i1 = min(i0 + 1, in - 1) with weights 1 - l and
 * l = src - i0; an output's weight on an input is the product over the axes. */
typedef struct {
    int rank, N, C;
    int in[3], scale[3]; /* first rank entries used */
    int linear;
} ref_upsample;
void ref_upsample_forward(float *y, const float *x, const ref_upsample *u);
/* dy (N, C, out...) -> dx (N, C, in...): every dy scattered into the inputs it read */
void ref_upsample_backward(float *dx, const float *dy, const ref_upsample *u);

#endif
