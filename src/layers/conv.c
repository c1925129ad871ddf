/* Convolution in 1, 2 and 3 dimensions, and transposed convolution, with
 * one of three algorithms a layer (below): im2col + GEMM (cl/conv.cl, then
 * the GEMM candidate the device chose: see gemm.h), direct, or implicit
 * GEMM; with PyTorch's semantics:
 *   convNd           x (n, C, in...) -> y (n, F, out...), weight (F, C/groups, k...)
 *   conv_transposeNd x (n, C, in...) -> y (n, F, out...), weight (C, F/groups, k...),
 *                    out = (in - 1)*stride - 2*pad + dilation*(k - 1) + output_pad + 1
 * and a bias (F) unless bias=off.
 *
 * A transposed convolution is a convolution's input gradient run forward, so
 * both kinds share everything below. Each has a big side, the tensor the
 * windows read (the convolution's x, the transposed convolution's y), and a
 * small side with one value per window and channel (the convolution's y, the
 * transposed convolution's x). The weight is, as a matrix, W (Cs, Cb/G * K):
 * one row per channel of the small side, K the taps of a window. Then
 *   down: col = im2col(big), Sp = W . col             (conv forward, transpose dx)
 *   up:   dcol = W^T . Sp, big = col2im(dcol)         (conv dx, transpose forward)
 *   dW += Sp . col^T, col = im2col(big)               (both weight gradients)
 * with Sp the small side in GEMM layout (Cs, n * Ps). */
#include "elementwise.h"
#include "error.h"
#include "gemm.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { PAD_GIVEN, PAD_SAME, PAD_CAUSAL };

typedef struct {
    int rank;      /* spatial axes: 1, 2 or 3 (the kind's) */
    int transpose; /* conv_transposeNd */
    int filters;
    int relu;                               /* 1: the relu after it runs in its kernels */
    int k[3], s[3], p[3], d[3], out_pad[3]; /* as given, one per spatial axis */
    int pad_mode;                           /* pad=N, pad=same or pad=causal */
    int groups; /* channels and filters in this many independent groups */
    clnet_param_init init;
    clnet_window win; /* set by setup: the big side's windows, on three axes */
} conv_config;

static void defaults(conv_config *c, int rank, int transpose) {
    c->rank = rank;
    c->transpose = transpose;
}

#define DEFAULTS(name, rank, transpose)                                                            \
    static void name(void *config) {                                                               \
        defaults(config, rank, transpose);                                                         \
    }
DEFAULTS(defaults1, 1, 0)
DEFAULTS(defaults2, 2, 0)
DEFAULTS(defaults3, 3, 0)
DEFAULTS(defaults_t1, 1, 1)
DEFAULTS(defaults_t2, 2, 1)
DEFAULTS(defaults_t3, 3, 1)

/* pad=N (or one per axis), pad=same or pad=causal (check() refuses those
 * where they do not apply, naming why) */
static clnet_status parse_pad(const clnet_option *o, void *config, const char *value) {
    conv_config *c = config;
    c->pad_mode = strcmp(value, "same") == 0     ? PAD_SAME
                  : strcmp(value, "causal") == 0 ? PAD_CAUSAL
                                                 : PAD_GIVEN;
    return c->pad_mode != PAD_GIVEN ? CLNET_OK
                                    : clnet_option_dims(o->name, value, o->axes, 0, c->p);
}

/* Tables of rows built by macros, laid out by hand (clang-format folds them badly). */
// clang-format off
#define DIMS(key, field, rank, least, value_, without_, what)                                      \
    {.name = key, .type = CLNET_OPT_DIMS, .at = offsetof(conv_config, field), .axes = rank,        \
     .min = least, .value = value_, .without = without_, .help = what}

/* The options of a rank's convolution (transposed or not): pad= takes what
 * `pad_expects` says, means `pad_help`. */
#define CONV_OPTIONS(rank, pad_expects, pad_help)                                                  \
    {.name = "filters", .type = CLNET_OPT_INT, .at = offsetof(conv_config, filters), .min = 1,     \
     .without = "required", .help = "the output channels"},                                        \
    DIMS("size", k, rank, 1, NULL, "required", "the kernel"),                                      \
    DIMS("stride", s, rank, 1, "1", NULL, "the step between windows"),                             \
    {.name = "pad", .type = CLNET_OPT_CUSTOM, .axes = rank, .parse = parse_pad,                    \
     .expects = pad_expects, .value = "0", .help = pad_help},                                      \
    DIMS("dilation", d, rank, 1, "1", NULL, "the kernel's taps this far apart"),                   \
    {.name = "groups", .type = CLNET_OPT_INT, .at = offsetof(conv_config, groups), .min = 1,       \
     .value = "1", .help = "channels and filters in this many independent groups (dividing both)"},\
    CLNET_PARAM_INIT_OPTIONS(conv_config, init)

#define TRANSPOSE_OPTIONS(rank, forms)                                                             \
    CONV_OPTIONS(rank, forms ", each >= 0", "trimmed from each side of the output"),               \
    DIMS("output_pad", out_pad, rank, 0, "0", NULL,                                                \
         "added to the output's far side (PyTorch's output_padding)")
// clang-format on

#define SAME_HELP "; same: the input's size at stride 1 (PyTorch's padding='same')"
static const clnet_option conv1_options[] = {
    CONV_OPTIONS(1, "N, each >= 0, same or causal",
                 "zeros before and after the signal" SAME_HELP "; causal: all before"),
    {0},
};
static const clnet_option conv2_options[] = {
    CONV_OPTIONS(2, "N or HxW, each >= 0, or same", "zeros around each axis" SAME_HELP),
    {0},
};
static const clnet_option conv3_options[] = {
    CONV_OPTIONS(3, "N or DxHxW, each >= 0, or same", "zeros around each axis" SAME_HELP),
    {0},
};

static const clnet_option transpose1_options[] = {TRANSPOSE_OPTIONS(1, "N"), {0}};
static const clnet_option transpose2_options[] = {TRANSPOSE_OPTIONS(2, "N or HxW"), {0}};
static const clnet_option transpose3_options[] = {TRANSPOSE_OPTIONS(3, "N or DxHxW"), {0}};

static clnet_status check(const void *config) {
    const conv_config *c = config;
    const char *kind = c->transpose ? "conv_transpose" : "conv";
    if (c->filters < 1)
        return clnet_fail(CLNET_ERR_FORMAT, "%s%dd needs filters=N with N >= 1", kind, c->rank);
    if (c->k[0] < 1)
        return clnet_fail(CLNET_ERR_FORMAT, "%s%dd needs size=K (or one per axis) >= 1", kind,
                          c->rank);
    if (c->pad_mode != PAD_GIVEN && c->transpose)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "pad=%s: conv_transpose%dd takes pad=N only (as in "
                          "PyTorch)",
                          c->pad_mode == PAD_SAME ? "same" : "causal", c->rank);
    if (c->pad_mode == PAD_CAUSAL && c->rank != 1)
        return clnet_fail(CLNET_ERR_FORMAT, "pad=causal is for conv1d, not conv%dd", c->rank);
    return clnet_param_init_check(&c->init);
}

/* "3x3" of a per-axis option, for messages */
static const char *text(const conv_config *c, const int *v, char *out) {
    clnet_dims_text(v, c->rank, out, 48);
    return out;
}

/* The output's size along each given axis (-1 with a message on failure),
 * and the padding pad=same and pad=causal choose. */
static clnet_status output_size(clnet_node *node, int *p, int *out) {
    conv_config *c = CLNET_CONFIG(node, conv_config);
    char t1[48], t2[48], t3[48], t4[48];
    int span[3], extra[3] = {0}; /* a dilated kernel spans d*(k-1)+1; padding after beyond p */
    int fits = 1, out_pad_ok = 1;
    memcpy(p, c->p, sizeof c->p);
    for (int a = 0; a < c->rank; a++) {
        span[a] = c->d[a] * (c->k[a] - 1) + 1;
        if (c->pad_mode ==
            PAD_SAME) { /* PyTorch's padding='same': span - 1 zeros, the odd one after */
            if (c->s[a] != 1)
                return clnet_node_fail(node, "pad=same needs stride 1, not %s (as in PyTorch)",
                                       text(c, c->s, t1));
            p[a] = (span[a] - 1) / 2;
            extra[a] = (span[a] - 1) - 2 * p[a];
        } else if (c->pad_mode == PAD_CAUSAL) { /* span - 1 zeros before, none after */
            p[a] = span[a] - 1;
            extra[a] = -p[a];
        }
        int in = node->in[0].dim[a], room = in + 2 * p[a] + extra[a] - span[a];
        if (c->transpose)
            out[a] = (in - 1) * c->s[a] - 2 * p[a] + span[a] + c->out_pad[a];
        else
            out[a] = room < 0 ? 0 : room / c->s[a] + 1;
        fits &= out[a] >= 1;
        out_pad_ok &= c->out_pad[a] < c->s[a] || c->out_pad[a] < c->d[a];
    }
    if (!out_pad_ok)
        return clnet_node_fail(node,
                               "output_pad=%s must be smaller than the stride %s or the dilation "
                               "%s on each axis",
                               text(c, c->out_pad, t1), text(c, c->s, t2), text(c, c->d, t3));
    if (!fits && c->transpose)
        return clnet_node_fail(node, "the output would be %s: padding %s is too large",
                               text(c, out, t1), text(c, c->p, t2));
    if (!fits)
        return clnet_node_fail(node,
                               "a %s kernel (dilation %s: it spans %s) with padding %s does not "
                               "fit the input",
                               text(c, c->k, t1), text(c, c->d, t2), text(c, span, t3),
                               text(c, p, t4));
    return CLNET_OK;
}

static clnet_status setup(clnet_node *node) {
    conv_config *c = CLNET_CONFIG(node, conv_config);
    clnet_shape in = node->in[0];
    static const char *const forms[] = {"", "(C, L)", "(C, H, W)", "(C, D, H, W)"};
    if (in.ndim != c->rank) return clnet_node_fail(node, "takes %s inputs", forms[c->rank]);
    int C = in.c, F = c->filters, G = c->groups;
    if (C % G || F % G)
        return clnet_node_fail(
            node, "groups=%d must divide the %d input channels and the %d filters", G, C, F);
    int p[3], out[3];
    clnet_status status = output_size(node, p, out);
    if (status != CLNET_OK) return status;
    node->out = in;
    node->out.c = F;
    memcpy(node->out.dim, out, sizeof out);

    /* the windows run over the big side: the input of a convolution, the output of a transpose */
    clnet_window *w = &c->win;
    w->c = c->transpose ? F : C;
    clnet_axes(c->rank, c->transpose ? out : in.dim, 1, w->in);
    clnet_axes(c->rank, c->transpose ? in.dim : out, 1, w->out);
    clnet_axes(c->rank, c->k, 1, w->k);
    clnet_axes(c->rank, c->s, 1, w->s);
    clnet_axes(c->rank, p, 0, w->p);
    clnet_axes(c->rank, c->d, 1, w->d);

    /* PyTorch's weight layout and fans: (out, in/G, k...) or, transposed, (in, out/G, k...) */
    int64_t shape[CLNET_MAX_DIMS] = {c->transpose ? C : F, (c->transpose ? F : C) / G};
    int K = 1;
    for (int a = 0; a < c->rank; a++) K *= c->k[a], shape[2 + a] = c->k[a];
    int fan_in = (int)shape[1] * K, fan_out = (int)shape[0] * K;
    clnet_node_param(node, "weight", 2 + c->rank, shape, c->init.weight, fan_in, fan_out);
    if (!c->init.no_bias)
        clnet_node_param(node, "bias", 1, (int64_t[]){F}, c->init.bias, fan_in, fan_out);
    return CLNET_OK;
}

/* The GEMMs' view of a node: channels and positions of the small and big
 * sides, taps per window, groups. */
typedef struct {
    size_t Cs, Ps, Cb, Pb, K, G;
} sides;

static sides sides_of(const clnet_node *node) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    int transpose = CLNET_CONFIG(node, conv_config)->transpose;
    sides v = {.Cb = (size_t)w->c, .G = (size_t)CLNET_CONFIG(node, conv_config)->groups};
    v.Cs = (size_t)(transpose ? node->in[0].c : node->out.c);
    v.Ps = (size_t)w->out[0] * w->out[1] * w->out[2];
    v.Pb = (size_t)w->in[0] * w->in[1] * w->in[2];
    v.K = (size_t)w->k[0] * w->k[1] * w->k[2];
    return v;
}

/* The algorithms (device.h's CLNET_CONV_*; $CLNET_CONV forces one):
 *   im2col  the column matrix and the device's GEMMs, group by group: any shape;
 *   direct  cl/conv_direct.cl, each pass one launch over the whole layer whose
 *           work-items loop over a group's channels: for groups of few
 *           channels (depthwise), where im2col runs a thin GEMM per group;
 *   implicit cl/conv_implicit.cl, the tiled GEMM's micro-kernel reading a
 *           zero-padded grid of the big side instead of a column matrix,
 *           every group in one launch: any shape (below);
 *   lanes   cl/conv_lanes.cl, the same micro-kernel with the samples along
 *           its vectors: a product per position over the taps that reach
 *           the input (none spent on padding), any shape.
 * The rule looks at the layer's shape alone, never at the samples of a
 * pass, so every split of a batch runs the same algorithm. */
#define DIRECT_MAX_GROUP 8 /* channels per group, on either side */

/* The share of the implicit algorithm's grid positions that are outputs
 * (the rest is padding it computes and drops): ResNet-18's 3x3 layers on
 * 28x28 0.87, 14x14 0.87, 7x7 0.77, 4x4 0.64. */
static double implicit_useful(const clnet_node *node);
/* Below this, im2col: on the EPYC VM the implicit algorithm ran ResNet-18's
 * 4x4 layer at 0.84x im2col's speed, its 7x7 layer at 1.04x. */
#define IMPLICIT_MIN_USEFUL 0.7
/* and the GEMM's k (a group's input channels x taps) at least this, or the
 * small side's channels at least IMPLICIT_MIN_FILTERS: below both, its
 * program (0.8 s to build cold on PoCL, 0.9 s more at first launches) costs
 * a short run more than it saves. LeNet's first convolution (k = 9, 20
 * filters) trained as fast on either, so it stays on im2col and LeNet
 * builds no implicit program; ResNet-18's stem (k = 9, 64 filters) trained
 * 1.5x faster on implicit on the EPYC VM. */
#define IMPLICIT_MIN_K       32
#define IMPLICIT_MIN_FILTERS 32

/* Strided convolutions below this k: implicit. The EPYC VM ran a conv3d
 * 3->16 at stride 1x2x2 (k = 81) 3x faster than im2col, ResNet-18's
 * strided 3x3 layers (k = 576 and more) at 0.6-0.7x its speed: there the
 * weight gradient runs at half the rate of the unstrided one (each kept
 * phase is a stream of its own: twice the cache lines a multiply-add), and
 * im2col's GEMMs win. A strided 1x1 layer stays on im2col too: its column
 * matrix is a subsampled copy of x, no larger (ResNet-18's 64->128
 * shortcut: implicit 0.9x im2col). */
#define IMPLICIT_MAX_K_STRIDED 128

static int strided(const clnet_node *node) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    return w->s[0] > 1 || w->s[1] > 1 || w->s[2] > 1;
}

/* Whether the rules run the node with the implicit algorithm on a CPU (it
 * can run every convolution), given IMPLICIT_MIN_K or _MIN_FILTERS: at
 * stride 1 with enough of its grid useful, strided with a short k, and every
 * transposed convolution (the EPYC VM ran both of bench_conv's 1.1-1.9x
 * faster than im2col). */
static int implicit_rule(const clnet_node *node) {
    sides v = sides_of(node);
    size_t k = v.Cb / v.G * v.K;
    if (k < IMPLICIT_MIN_K && v.Cs < IMPLICIT_MIN_FILTERS) return 0;
    if (CLNET_CONFIG(node, conv_config)->transpose) return 1;
    if (strided(node)) return v.K > 1 && k < IMPLICIT_MAX_K_STRIDED;
    return implicit_useful(node) >= IMPLICIT_MIN_USEFUL;
}

/* The lanes algorithm on CPUs: a convolution (not transposed) with more
 * than one tap, groups of at least LANES_MIN_CHANNELS channels on both sides
 * and at most LANES_MOST_POSITIONS output positions a channel. On the EPYC
 * VM (2026-11-27, batch 128) it ran ResNet-18's 3x3 layers from 14x14 down,
 * the strided ones included, 1.05-1.85x faster than the algorithm before
 * it (its 4x4 layer 1.85x: a third of that layer's taps read padding); at
 * 28x28 as fast as implicit, and its 1x1 layers at 0.6-0.75x of im2col's
 * speed. On a CPU its lanes are 64 samples wide: a chunk of fewer leaves the rest
 * empty (at 32 samples a device, half). */
#define LANES_MOST_POSITIONS 256
/* Channels a group on the big side below which the lanes' weight gradient
 * runs as dot products instead of a GEMM (below). */
#define LANES_WGEMM_MIN 32

/* Channels a group on either side below which the rules leave a layer to
 * im2col or implicit. LeNet's conv2 (20 -> 50 on 13x13, 81 positions) trains
 * LeNet about 1.35x faster on lanes (its weight gradient as dot products)
 * than on im2col (EPYC VM, 2026-11-28); resnet18_w16's 16 -> 32 layer at
 * stride 2 runs level or faster. */
#define LANES_MIN_CHANNELS 16

static int lanes_rule(const clnet_node *node) {
    sides v = sides_of(node);
    return !CLNET_CONFIG(node, conv_config)->transpose && v.K > 1 &&
           v.Cb / v.G >= LANES_MIN_CHANNELS && v.Cs / v.G >= LANES_MIN_CHANNELS &&
           v.Ps <= LANES_MOST_POSITIONS;
}

/* The node's key in the tuning database: its kind, its shape in and out,
 * and its window ("conv2d 64x28x28>64x28x28 k3x3 s1x1 p1x1 d1x1 g1"); no
 * sample count: one choice serves every share of a batch. */
static void tune_key(const clnet_node *node, char *key, size_t cap) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    const clnet_window *w = &c->win;
    char in[48], out[48], k[48], st[48], pd[48], dl[48];
    clnet_shape_format(node->in[0], in, sizeof in);
    clnet_shape_format(node->out, out, sizeof out);
    clnet_dims_text(w->k + 3 - c->rank, c->rank, k, sizeof k);
    clnet_dims_text(w->s + 3 - c->rank, c->rank, st, sizeof st);
    clnet_dims_text(w->p + 3 - c->rank, c->rank, pd, sizeof pd);
    clnet_dims_text(w->d + 3 - c->rank, c->rank, dl, sizeof dl);
    snprintf(key, cap, "%s %s>%s k%s s%s p%s d%s g%d", node->kind->name, in, out, k, st, pd, dl,
             c->groups);
}

/* The plan an entry of d's tables names for the node (pinned by a checkpoint
 * first, then the tuning database); CLNET_CONV_AUTO for every pass without. */
static clnet_conv_plan plan_entry(const clnet_node *node, const clnet_device *d) {
    clnet_conv_plan plan = clnet_conv_plan_all(CLNET_CONV_AUTO);
    if (!d->pinned.count && !d->tuned.count) return plan;
    char key[CLNET_TUNE_KEY_CAP];
    tune_key(node, key, sizeof key);
    const clnet_tune_entry *e = clnet_tune_table_find(&d->pinned, key, 0);
    if (!e) e = clnet_tune_table_find(&d->tuned, key, 0);
    if (e) clnet_conv_plan_parse(e->choice, &plan);
    return plan;
}

/* The rules' algorithm, the same for every pass: on the EPYC VM no mix beat
 * the better of im2col and implicit on ResNet-18's layers by more than the
 * noise. */
static int rule_of(const clnet_node *node, const clnet_device *d) {
    sides v = sides_of(node);
    if (v.G > 1 && v.Cb / v.G <= DIRECT_MAX_GROUP && v.Cs / v.G <= DIRECT_MAX_GROUP)
        return CLNET_CONV_DIRECT;
    if (d && d->vector_cpu && lanes_rule(node)) return CLNET_CONV_LANES;
    if (d && d->vector_cpu && implicit_rule(node)) return CLNET_CONV_IMPLICIT;
    return CLNET_CONV_IM2COL;
}

/* The algorithm of each pass (CLNET_PASS_*): $CLNET_CONV's, else the
 * checkpoint's or the database's, else the rules'. */
static clnet_conv_plan plan_of(const clnet_node *node, const clnet_device *d) {
    clnet_conv_plan plan = d ? d->conv_force : clnet_conv_plan_all(CLNET_CONV_AUTO);
    clnet_conv_plan entry = d ? plan_entry(node, d) : plan;
    int rule = CLNET_CONV_AUTO;
    for (int pass = 0; pass < CLNET_CONV_PASSES; pass++) {
        if (plan.pass[pass] == CLNET_CONV_AUTO) plan.pass[pass] = entry.pass[pass];
        if (plan.pass[pass] != CLNET_CONV_AUTO) continue;
        if (rule == CLNET_CONV_AUTO) rule = rule_of(node, d);
        plan.pass[pass] = rule;
    }
    return plan;
}

/* The implicit algorithm's scratch for a chunk of s samples (floats), and
 * the length of its rows on the forward grid. */
static size_t implicit_floats(const clnet_node *node, int s);
static size_t implicit_sums_floats(const clnet_node *node, int s);
/* The lanes algorithm's, and a sample's share of it. */
static size_t lanes_floats(const clnet_node *node, const clnet_device *d, int s);
static size_t lanes_sums_floats(const clnet_node *node, const clnet_device *d, int s);
static size_t lanes_per_sample(const clnet_node *node, const clnet_device *d);

/* The batch runs through im2col and the GEMMs in chunks of samples whose
 * column matrix holds at most CHUNK_FLOATS floats (at least one sample a
 * chunk): it stays in the CPU's caches between im2col and the GEMM that reads
 * it, instead of going out to memory and back (41 MB for LeNet's second
 * convolution at batch 256). Backward makes each chunk's columns again rather
 * than keeping them from forward: the same traffic saved, and no memory held
 * from forward to backward. The chunks depend only on n, so the order of the
 * additions does too. */
#define CHUNK_FLOATS (3u << 20) /* 12 MiB: best of 1, 2, 3, 4, 6 and 8 Mi floats here */
/* GPUs have no such cache to keep it in, and each chunk is a dozen launches
 * of small products: on an H100, d2l's ResNet-18 ran its 64-channel layers in
 * 22 chunks of 6 samples at batch 128. At most a sixteenth of the device's
 * largest buffer (a small GPU's), never below the CPUs' chunk. Without a
 * device, the larger. */
#define GPU_CHUNK_FLOATS (32u << 20) /* 128 MiB */

static size_t chunk_limit(const clnet_device *d) {
    if (d && d->info.type != CLNET_DEVICE_GPU) return CHUNK_FLOATS;
    uint64_t most = d ? d->info.max_alloc_bytes / 16 / sizeof(float) : GPU_CHUNK_FLOATS;
    return most > GPU_CHUNK_FLOATS ? GPU_CHUNK_FLOATS
           : most < CHUNK_FLOATS   ? CHUNK_FLOATS
                                   : (size_t)most;
}

/* A sample's share of the column region: its columns (im2col) or its
 * parts of the weight gradient (direct) or, for a transposed convolution's
 * bias gradient, its output gradient in GEMM layout. */
static size_t col_per_sample(const clnet_node *node, int algo) {
    sides v = sides_of(node);
    size_t col = algo == CLNET_CONV_DIRECT ? v.Cs * (v.Cb / v.G) * v.K : v.Cb * v.K * v.Ps;
    size_t big = CLNET_CONFIG(node, conv_config)->transpose ? v.Cb * v.Pb : 0;
    return big > col ? big : col;
}

/* The lanes algorithm's chunks hold up to LANES_CHUNK_FLOATS of its
 * regions, a multiple of the device's lane unit where more than one fits
 * (the vectors then run full), as equal as the chunks can be. The unit: the
 * CPU tile's 64 columns; 16 elsewhere (tiles of 4 columns), where a
 * simulator computes every lane, empty or not. */
#define LANES_UNIT         64
#define LANES_UNIT_OTHERS  16
#define LANES_CHUNK_FLOATS (16u << 20) /* 64 MiB */

/* The lanes' unit on d (without a device, the larger). */
static size_t lanes_unit(const clnet_device *d) {
    return d && !d->vector_cpu ? LANES_UNIT_OTHERS : LANES_UNIT;
}

static int lanes_chunk_samples(const clnet_node *node, const clnet_device *d, int n) {
    size_t most = LANES_CHUNK_FLOATS / lanes_per_sample(node, d), unit = lanes_unit(d);
    most = most >= unit ? most / unit * unit : most < 1 ? 1 : most;
    size_t chunks = ((size_t)n + most - 1) / most;
    if (chunks < 1) chunks = 1;
    return (int)(((size_t)n + chunks - 1) / chunks);
}

/* Samples per chunk for a pass over n: as equal as the chunks can be. Not
 * monotonic in n (64 samples run as two chunks of 32, 51 as one of 51): the
 * plan takes the largest scratch over every n a pass can run (plan.c). The
 * direct algorithm counts its small side in GEMM layout too: it has no
 * column matrix to keep in cache, only memory to bound. */
static int chunk_samples(const clnet_node *node, const clnet_device *d, int algo, int n) {
    if (algo == CLNET_CONV_LANES) return lanes_chunk_samples(node, d, n);
    size_t per = col_per_sample(node, algo);
    if (algo == CLNET_CONV_DIRECT) per += sides_of(node).Cs * sides_of(node).Ps;
    if (algo == CLNET_CONV_IMPLICIT) /* what a sample adds: the weight's copies are per chunk */
        per = implicit_floats(node, 2) - implicit_floats(node, 1);
    size_t most = per ? chunk_limit(d) / per : (size_t)n;
    if (most < 1) most = 1;
    size_t chunks = ((size_t)n + most - 1) / most;
    if (chunks < 1) chunks = 1;
    return (int)(((size_t)n + chunks - 1) / chunks);
}

/* A chunk of s samples' scratch: its small side in GEMM layout (Cs, s*Ps),
 * then its column region. */
static size_t chunk_floats(const clnet_node *node, const clnet_device *d, int algo, int s) {
    sides v = sides_of(node);
    if (algo == CLNET_CONV_IMPLICIT) return implicit_floats(node, s);
    if (algo == CLNET_CONV_LANES) return lanes_floats(node, d, s);
    return v.Cs * (size_t)s * v.Ps + (size_t)s * col_per_sample(node, algo);
}

/* The GEMMs of a chunk of s samples, group by group (see below). */
static clnet_gemm_shape shape_down(const clnet_node *node, int s);
static clnet_gemm_shape shape_up(const clnet_node *node, int s);
static clnet_gemm_shape shape_weight(const clnet_node *node, int s);

static size_t most(size_t a, size_t b) {
    return a > b ? a : b;
}

/* Where a chunk's GEMMs and row sums take their scratch: after its regions. */
static size_t gemm_at(const clnet_node *node, const clnet_device *d, int algo, int s) {
    return (chunk_floats(node, d, algo, s) + 15) / 16 * 16;
}

/* The scratch of a chunk's GEMMs (im2col) and of the bias gradient's row
 * sums (they run one after another, so they share it). */
static size_t gemm_floats(const clnet_node *node, const clnet_device *d, int algo, int s) {
    sides v = sides_of(node);
    size_t sums = most(clnet_row_sums_floats(v.Cs, (size_t)s * v.Ps),
                       clnet_row_sums_floats(v.Cb, (size_t)s * v.Pb));
    if (algo == CLNET_CONV_IMPLICIT) /* over the grids' rows */
        return most(sums, implicit_sums_floats(node, s));
    if (algo == CLNET_CONV_DIRECT) return sums;
    if (algo == CLNET_CONV_LANES) return lanes_sums_floats(node, d, s); /* over whole lanes */
    clnet_gemm_shape down = shape_down(node, s), up = shape_up(node, s),
                     weight = shape_weight(node, s);
    return most(
        most(clnet_gemm_chosen_work_floats(d, &down), clnet_gemm_chosen_work_floats(d, &up)),
        most(clnet_gemm_chosen_work_floats(d, &weight), sums));
}

static size_t algo_work_floats(const clnet_node *node, const clnet_device *d, int algo, int n) {
    int s = chunk_samples(node, d, algo, n);
    return gemm_at(node, d, algo, s) + gemm_floats(node, d, algo, s);
}

/* Without a device (a plan made before one is chosen), the most that any
 * algorithm takes. */
static size_t work_floats(const clnet_node *node, const clnet_device *d, int n) {
    clnet_conv_plan plan = plan_of(node, d);
    size_t floats = 0;
    for (int a = CLNET_CONV_AUTO + 1; a < CLNET_CONV_ALGOS; a++) {
        int used = !d;
        for (int pass = 0; pass < CLNET_CONV_PASSES; pass++) used |= plan.pass[pass] == a;
        if (used) floats = most(floats, algo_work_floats(node, d, a, n));
    }
    return floats;
}

/* The statistics records (clnet_pass.stats) a chunk of s samples writes
 * per channel as algorithm algo stores its output: the implicit
 * algorithm's one an output row of a sample (implicit_output), the lanes
 * algorithm's one a block of 8 positions x 8 samples (lanes_out); none for
 * the others. A chunk's records follow the chunks before it. */
static size_t records_in(const clnet_node *node, int algo, int s) {
    const int *out = CLNET_CONFIG(node, conv_config)->win.out;
    if (algo == CLNET_CONV_IMPLICIT) return (size_t)s * (size_t)out[0] * (size_t)out[1];
    if (algo == CLNET_CONV_LANES) return ((size_t)s + 7) / 8 * ((sides_of(node).Ps + 7) / 8);
    return 0;
}

/* Every chunk's records, for a pass over n samples. */
static size_t pass_records(const clnet_node *node, const clnet_device *d, int algo, int n) {
    size_t records = 0;
    int most = chunk_samples(node, d, algo, n);
    for (int b0 = 0; b0 < n; b0 += most)
        records += records_in(node, algo, n - b0 < most ? n - b0 : most);
    return records;
}

/* Kept from a training forward to the batch norm after it: the statistics
 * records of every channel (4 floats each), as many as the algorithm that
 * writes the most would (the choice may change with tuning). */
static size_t keep_floats(const clnet_node *node, const clnet_device *d, int n) {
    if (!node->stats_bn) return 0;
    size_t records = most(pass_records(node, d, CLNET_CONV_IMPLICIT, n),
                          pass_records(node, d, CLNET_CONV_LANES, n));
    return 4 * (size_t)sides_of(node).Cs * records;
}

/* Without a bias, the kernels that would add it run with their has_bias
 * argument 0 and never read one. */
static int has_bias(const clnet_node *node) {
    return node->nparams > 1;
}

static int fuse_relu(clnet_node *node) {
    conv_config *c = CLNET_CONFIG(node, conv_config);
    if (c->transpose) return 0;
    c->relu = 1;
    return 1;
}

/* Multiplies each weight by s[its output channel] (clnet_kind.fold_scale).
 * A transposed convolution's weight is (Cin, Cout / groups, window): its
 * kernels take no relu. */
static int fold_scale(const clnet_node *node, double *w, const double *s, int relu) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    if (c->transpose && relu) return 0;
    if (!w) return 1;
    size_t count = node->params[0].count, K = 1;
    for (int a = 0; a < 3; a++) K *= (size_t)c->win.k[a];
    size_t per = count / (c->transpose ? (size_t)node->in[0].c : (size_t)c->filters);
    size_t outs = (size_t)c->filters / (size_t)c->groups; /* transposed: per group */
    size_t ins = (size_t)node->in[0].c / (size_t)c->groups;
    for (size_t e = 0; e < count; e++) {
        size_t o = e / per; /* the first axis */
        if (c->transpose) o = (o / ins) * outs + (e / K) % outs;
        w[e] *= s[o];
    }
    return 1;
}

/* What a backward chunk makes: the parameters' gradients, x's, or both. */
enum { MAKES_DW = 1, MAKES_DX = 2 };

/* What a chunk of samples b0 .. b0+s-1 works on. */
typedef struct {
    int algo;  /* CLNET_CONV_IM2COL, _DIRECT, _IMPLICIT or _LANES */
    int makes; /* backward: MAKES_* */
    int first; /* the pass's first chunk */
    int s;
    size_t NP;         /* s * Ps: the columns of its matrices */
    size_t small, big; /* its samples' offsets in small- and big-side tensors */
    size_t col;        /* its column region in work, after Sp */
    size_t gemm;       /* its GEMMs' and row sums' scratch in work (gemm_at) */
    size_t wo, bo;     /* the weight and the bias in the parameters */
    size_t rec;        /* its first statistics record of a channel (records_in) */
    size_t records;    /* and the pass's, all chunks' */
} chunk;

static chunk chunk_at(const clnet_node *node, const clnet_device *d, int algo, int makes, int b0,
                      int s) {
    sides v = sides_of(node);
    chunk ch = {.algo = algo,
                .makes = makes,
                .first = b0 == 0,
                .s = s,
                .NP = (size_t)s * v.Ps,
                .gemm = gemm_at(node, d, algo, s)};
    ch.small = v.Cs * v.Ps * (size_t)b0;
    ch.big = v.Cb * v.Pb * (size_t)b0;
    ch.col = v.Cs * ch.NP;
    ch.wo = node->params[0].offset;
    ch.bo = has_bias(node) ? node->params[1].offset : 0;
    return ch;
}

/* col (Cb*K, s*Ps) = im2col of the chunk's big-side tensor in `big` */
static clnet_status im2col(const clnet_node *node, const clnet_pass *p, const chunk *ch, cl_mem big,
                           size_t off) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    char opt[600];
    clnet_window_options(w, "", opt, sizeof opt);
    size_t range[3] = {((size_t)w->out[2] + 7) / 8, (size_t)w->out[1], /* slots of 8 windows */
                       (size_t)ch->s * w->c * w->out[0]},
           shape[3];
    return clnet_pass_run(
        p, 0, "conv", opt, "im2col", 3, range, clnet_window_local(w, p, range, shape),
        ARGS(WIN(w), U32(ch->s), MEM(big), U32(off + ch->big), MEM(p->work), U32(ch->col)));
}

/* The chunk's big-side tensor (slot `slot`) = col2im of the column region,
 * plus the bias (with_bias), or added to what is there (add: an input
 * gradient that another reader wrote first). */
static clnet_status col2im(const clnet_node *node, const clnet_pass *p, int slot, const chunk *ch,
                           uint32_t with_bias, uint32_t add, cl_mem big, size_t off) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    char opt[600];
    clnet_window_options(w, "", opt, sizeof opt);
    size_t range[3] = {(size_t)w->in[2], (size_t)w->in[1], (size_t)ch->s * w->c * w->in[0]},
           shape[3];
    return clnet_pass_run(
        p, slot, "conv", opt, "col2im", 3, range, clnet_window_local(w, p, range, shape),
        ARGS(WIN(w), U32(ch->s), MEM(p->work), U32(ch->col), MEM(big), U32(off + ch->big),
             MEM(p->params), U32(ch->bo), U32(with_bias), U32(add)));
}

/* The GEMM call sites of a node (clnet_pass_gemm). */
enum { GEMM_DOWN, GEMM_UP, GEMM_WEIGHT };

static clnet_gemm_shape shape_down(const clnet_node *node, int s) {
    sides v = sides_of(node);
    size_t Fg = v.Cs / v.G, CKg = v.Cb / v.G * v.K;
    return (clnet_gemm_shape){0, 0, Fg, (size_t)s * v.Ps, CKg, 'N', s};
}

static clnet_gemm_shape shape_up(const clnet_node *node, int s) {
    sides v = sides_of(node);
    size_t Fg = v.Cs / v.G, CKg = v.Cb / v.G * v.K;
    return (clnet_gemm_shape){1, 0, CKg, (size_t)s * v.Ps, Fg, 'N', s};
}

static clnet_gemm_shape shape_weight(const clnet_node *node, int s) {
    sides v = sides_of(node);
    size_t Fg = v.Cs / v.G, CKg = v.Cb / v.G * v.K;
    return (clnet_gemm_shape){0, 1, Fg, CKg, (size_t)s * v.Ps, 'K', s};
}

/* A GEMM operand of group 0 (`off`, leading dimension `ld`); group g's
 * lies g * step further. */
typedef struct {
    cl_mem mem;
    size_t off, step, ld;
} operand;

/* C = A . B (beta: what happens to C) at GEMM call site `site`, group by group. */
static clnet_status per_group(const clnet_node *node, const clnet_pass *p, const chunk *ch,
                              int site, const clnet_gemm_shape *s, operand a, operand b, float beta,
                              operand c) {
    for (size_t g = 0; g < sides_of(node).G; g++) {
        clnet_status st =
            clnet_pass_gemm(p, site, ch->gemm, s, 1.0f, a.mem, a.off + g * a.step, a.ld, b.mem,
                            b.off + g * b.step, b.ld, beta, c.mem, c.off + g * c.step, c.ld);
        if (st != CLNET_OK) return st;
    }
    return CLNET_OK;
}

/* The chunk's operands: W (its group's rows, Fg x CKg), Sp (Fg rows of a
 * group) and the column region (CKg rows of a group). */
static operand weight_of(const clnet_node *node, const chunk *ch, cl_mem mem) {
    sides v = sides_of(node);
    size_t Fg = v.Cs / v.G, CKg = v.Cb / v.G * v.K;
    return (operand){mem, ch->wo, Fg * CKg, CKg};
}

static operand small_of(const clnet_node *node, const clnet_pass *p, const chunk *ch) {
    sides v = sides_of(node);
    return (operand){p->work, 0, v.Cs / v.G * ch->NP, ch->NP};
}

static operand col_of(const clnet_node *node, const clnet_pass *p, const chunk *ch) {
    sides v = sides_of(node);
    return (operand){p->work, ch->col, v.Cb / v.G * v.K * ch->NP, ch->NP};
}

/* Sp (Cs, s*Ps) = W . col, group by group: group g's rows of W read the
 * rows of col of its channels. */
static clnet_status gemm_down(const clnet_node *node, const clnet_pass *p, const chunk *ch) {
    clnet_gemm_shape s = shape_down(node, ch->s);
    return per_group(node, p, ch, GEMM_DOWN, &s, weight_of(node, ch, p->params),
                     col_of(node, p, ch), 0.0f, small_of(node, p, ch));
}

/* dcol (Cb*K, s*Ps) = W^T . Sp, group by group, over the column region */
static clnet_status gemm_up(const clnet_node *node, const clnet_pass *p, const chunk *ch) {
    clnet_gemm_shape s = shape_up(node, ch->s);
    return per_group(node, p, ch, GEMM_UP, &s, weight_of(node, ch, p->params),
                     small_of(node, p, ch), 0.0f, col_of(node, p, ch));
}

/* dW (+)= Sp . col^T, group by group (beta 0 overwrites, 1 adds) */
static clnet_status gemm_weight(const clnet_node *node, const clnet_pass *p, const chunk *ch,
                                float beta) {
    clnet_gemm_shape s = shape_weight(node, ch->s);
    return per_group(node, p, ch, GEMM_WEIGHT, &s, small_of(node, p, ch), col_of(node, p, ch), beta,
                     weight_of(node, ch, p->grads));
}

/* (C, s*P) in work at `to` = the chunk's (s, C, P) tensor at (t, off); with
 * the relu taken in (relu), only where y > 0. */
static clnet_status to_gemm_layout(const clnet_pass *p, int slot, int relu, size_t C, size_t P,
                                   int s, cl_mem t, size_t off, size_t y, size_t to) {
    return clnet_pass_run(
        p, slot, "conv", "", relu ? "conv_grad_output_relu" : "conv_grad_output", 3,
        (size_t[]){P, C, (size_t)s}, NULL,
        ARGS(U32(s), U32(C), U32(P), MEM(t), U32(off), MEM(p->act), U32(y), MEM(p->work), U32(to)));
}

/* What conv_output does besides moving Sp: add the bias, apply the relu, add
 * to what is there; and where the algorithm can (lanes_out,
 * implicit_output), write the statistics records of what it stores
 * (clnet_pass.stats). */
typedef struct {
    uint32_t bias, relu, add, stats;
} output_flags;

/* The chunk's (s, C, P) tensor at (t, off) = Sp, with `f`. */
static clnet_status from_gemm_layout(const clnet_pass *p, int slot, output_flags f, const chunk *ch,
                                     size_t C, size_t P, cl_mem t, size_t off) {
    return clnet_pass_run(
        p, slot, "conv", "", "conv_output", 3, (size_t[]){P, C, (size_t)ch->s}, NULL,
        ARGS(U32(ch->s), U32(C), U32(P), MEM(p->work), U32(0), MEM(p->params), U32(ch->bo), MEM(t),
             U32(off), U32(f.bias), U32(f.relu), U32(f.add)));
}

/* Whether a convolution took in the relu after it (conv_config's relu). */
static uint32_t took_relu(const clnet_node *node) {
    return CLNET_CONFIG(node, conv_config)->relu != 0;
}

/* The output's bias and relu in a forward pass: the layer's own, or a
 * folded batch norm's (p->fold). */
static output_flags forward_flags(const clnet_node *node, const clnet_pass *p) {
    if (p->fold) return (output_flags){.bias = 1, .relu = p->fold->relu};
    return (output_flags){.bias = has_bias(node), .relu = took_relu(node), .stats = !!p->stats};
}

/* The statistics arguments of implicit_output and lanes_out: where the
 * records go (the link's memory, or any buffer when none are written), the
 * records of a channel, the chunk's first, and whether to write them. */
#define STATS_ARGS(p, ch, f)                                                                       \
    MEM((f).stats ? (p)->stats->mem : (p)->work), U32((f).stats ? (p)->stats->off : 0),            \
        U32((ch)->records), U32((ch)->rec), U32((f).stats)

/* One chunk's share of a pass; beta is what its parameter gradients do
 * (the pass's beta for the first chunk; later chunks add to the first's). */
typedef clnet_status (*chunk_fn)(const clnet_node *node, const clnet_pass *p, const chunk *ch,
                                 float beta);

/* A pass's chunk function for each algorithm, by CLNET_CONV_* (NULL for
 * one that never runs the pass: implicit, a transposed convolution's). */
typedef struct {
    chunk_fn fn[CLNET_CONV_ALGOS];
} chunk_fns;

/* Runs algorithm algo's chunk function over the pass's samples, chunk by
 * chunk (chunk_samples), each chunk making what `makes` says. */
static clnet_status each_chunk(const clnet_node *node, const clnet_pass *p, const chunk_fns *fns,
                               int algo, int makes) {
    int most = chunk_samples(node, p->d, algo, p->n);
    chunk_fn fn = fns->fn[algo];
    if (!fn)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "conv.c: no %s pass for '%s'",
                          clnet_conv_algo_names[algo], node->name);
    /* a training forward's records, counted by forward_with */
    size_t rec = 0, records = p->stats && !makes ? p->stats->records : 0;
    for (int b0 = 0; b0 < p->n; b0 += most) {
        chunk ch = chunk_at(node, p->d, algo, makes, b0, p->n - b0 < most ? p->n - b0 : most);
        if (p->fold) ch.bo = p->fold->bias; /* a folded batch norm's, in the folded copy */
        ch.rec = rec;
        ch.records = records;
        rec += records_in(node, algo, ch.s);
        clnet_status s = fn(node, p, &ch, b0 == 0 ? p->beta : 1.0f);
        if (s != CLNET_OK) return s;
    }
    return CLNET_OK;
}

/* y = W . im2col(x) + bias (then the relu, if taken in) */
static clnet_status conv_forward_chunk(const clnet_node *node, const clnet_pass *p, const chunk *ch,
                                       float beta) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    (void)beta;
    TRY(im2col(node, p, ch, p->act, p->x[0]));
    TRY(gemm_down(node, p, ch));
    TRY(from_gemm_layout(p, 1, forward_flags(node, p), ch, v.Cs, v.Ps, p->act, p->y + ch->small));
cleanup:
    return status;
}

/* The bias gradient (+)= the row sums of a (C, len) matrix at `at` in work
 * (dy in some layout, zero off the outputs) */
static clnet_status bias_sums(const clnet_pass *p, const chunk *ch, size_t C, size_t len, size_t at,
                              float beta) {
    return clnet_row_sums(p->d, clnet_pass_kept(p, 4) /* and 5 */, C, len, p->work, at, p->grads,
                          ch->bo, beta, p->work, ch->gemm);
}

/* A convolution's backward begins with dSp, dy in GEMM layout (Cs, s*Ps)
 * at the start of work (only where y > 0 with the relu taken in), and with
 * a bias its row sums, the bias gradient. */
static clnet_status output_grad(const clnet_node *node, const clnet_pass *p, const chunk *ch,
                                float beta) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    TRY(to_gemm_layout(p, 2, took_relu(node), v.Cs, v.Ps, ch->s, p->dact, p->dy + ch->small,
                       p->y + ch->small, 0));
    if (has_bias(node) && (ch->makes & MAKES_DW)) TRY(bias_sums(p, ch, v.Cs, ch->NP, 0, beta));
cleanup:
    return status;
}

/* A transposed convolution's bias gradient: the sums of dy over samples and
 * positions, through dy in GEMM layout (Cb, s*Pb) over the column region. */
static clnet_status transpose_bias_grad(const clnet_node *node, const clnet_pass *p,
                                        const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    if (!has_bias(node) || !(ch->makes & MAKES_DW)) return CLNET_OK;
    TRY(to_gemm_layout(p, 6, 0, v.Cb, v.Pb, ch->s, p->dact, p->dy + ch->big, 0, ch->col));
    TRY(bias_sums(p, ch, v.Cb, (size_t)ch->s * v.Pb, ch->col, beta));
cleanup:
    return status;
}

/* Forward was Sp = W . col (+ bias), col = im2col(x); so backward is, chunk
 * by chunk (and group by group), dW += dSp . col^T, dbias += row sums of dSp
 * (with a bias), dcol = W^T . dSp, dx = col2im(dcol). */
static clnet_status conv_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                        const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    TRY(output_grad(node, p, ch, beta));
    if (ch->makes & MAKES_DW) {
        TRY(im2col(node, p, ch, p->act, p->x[0]));
        TRY(gemm_weight(node, p, ch, beta));
    }
    if (!(ch->makes & MAKES_DX)) return CLNET_OK;
    TRY(gemm_up(node, p, ch)); /* over the columns, which the weight gradient has read */
    TRY(col2im(node, p, 3, ch, 0, clnet_dx_add(p, 0), p->dact, p->dx[0]));
cleanup:
    return status;
}

/* The transposed convolution's forward is the convolution's input gradient:
 * y = col2im(W^T . x) + bias. */
static clnet_status transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                            const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    (void)beta;
    TRY(to_gemm_layout(p, 2, 0, v.Cs, v.Ps, ch->s, p->act, p->x[0] + ch->small, 0, 0));
    TRY(gemm_up(node, p, ch));
    TRY(col2im(node, p, 3, ch, forward_flags(node, p).bias, 0, p->act, p->y));
cleanup:
    return status;
}

/* Forward was dcol = W^T . Xp, y = col2im(dcol) + bias, Xp = x in GEMM
 * layout; so backward is, chunk by chunk, dbias += the sums of dy over
 * samples and positions, col = im2col(dy), dW += Xp . col^T, dXp = W . col. */
static clnet_status transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                             const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    TRY(transpose_bias_grad(node, p, ch, beta));
    TRY(im2col(node, p, ch, p->dact, p->dy));
    if (ch->makes & MAKES_DW) {
        TRY(to_gemm_layout(p, 2, 0, v.Cs, v.Ps, ch->s, p->act, p->x[0] + ch->small, 0, 0));
        TRY(gemm_weight(node, p, ch, beta));
    }
    if (!(ch->makes & MAKES_DX)) return CLNET_OK;
    TRY(gemm_down(node, p, ch)); /* over Xp, which the weight gradient has read */
    output_flags f = {.add = clnet_dx_add(p, 0)};
    TRY(from_gemm_layout(p, 1, f, ch, v.Cs, v.Ps, p->dact, p->dx[0] + ch->small));
cleanup:
    return status;
}

/* ---- the direct algorithm (cl/conv_direct.cl) ---- */

/* The small side as the direct kernels read it: the chunk's sample 0 at
 * `off`, then strides per sample (sb) and per channel (sf). */
typedef struct {
    cl_mem mem;
    size_t off, sb, sf;
} small_view;

/* (n, Cs, P) at (mem, off) */
static small_view small_nchw(const clnet_node *node, cl_mem mem, size_t off) {
    sides v = sides_of(node);
    return (small_view){mem, off, v.Cs * v.Ps, v.Ps};
}

/* Sp, the GEMM layout (Cs, s * P), at the start of work */
static small_view small_gemm(const clnet_node *node, const clnet_pass *p, const chunk *ch) {
    return (small_view){p->work, 0, sides_of(node).Ps, ch->NP};
}

/* The program's options: the window's, and where they fix the geometry, the
 * channels per group as well. */
static void direct_options(const clnet_node *node, char *opt, size_t cap) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    sides v = sides_of(node);
    char extra[64] = "";
    if (clnet_window_fixed(w))
        snprintf(extra, sizeof extra, "-DCONV_CBG=%zuu -DCONV_FG=%zuu", v.Cb / v.G, v.Cs / v.G);
    clnet_window_options(w, extra, opt, cap);
}

/* The kernels' arguments after the window: samples, small channels, channels per group */
#define DIRECT_SIZES(ch, v) U32((ch)->s), U32((v).Cs), U32((v).Cb / (v).G), U32((v).Cs / (v).G)

/* Rows at a stride of 2 whose big side holds at most this many take the
 * pairs kernels (direct_down_pairs, direct_up_pairs, direct_weight_pairs): a
 * row is one vector of 16 accumulators a phase. */
#define DIRECT_PAIRS_MOST_W 32

static int direct_pairs(const clnet_window *w) {
    return w->s[2] == 2 && w->in[2] <= DIRECT_PAIRS_MOST_W && w->out[2] <= DIRECT_PAIRS_MOST_W / 2;
}

/* The floats a small view spans: to its last sample's last channel's end */
static size_t view_size(const chunk *ch, sides v, small_view s) {
    return ((size_t)ch->s - 1) * s.sb + (v.Cs - 1) * s.sf + v.Ps;
}

/* The floats of the chunk's big side (NCDHW) */
static size_t big_size(const chunk *ch, sides v, const clnet_window *w) {
    return (size_t)ch->s * v.Cb * w->in[0] * w->in[1] * w->in[2];
}

/* small (+)= W . windows(big), with the flags' bias, relu and add */
static clnet_status direct_down(const clnet_node *node, const clnet_pass *p, const chunk *ch,
                                small_view s, cl_mem big, size_t big_off, output_flags f) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    sides v = sides_of(node);
    char opt[700];
    direct_options(node, opt, sizeof opt);
    size_t range[2] = {(size_t)w->out[1], (size_t)ch->s * v.Cs * w->out[0]};
    if (direct_pairs(w))
        return clnet_pass_run(p, 7, "conv_direct", opt, "direct_down_pairs", 2, range, NULL,
                              ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(big), U32(big_off),
                                   U32(big_size(ch, v, w)), MEM(p->params), U32(ch->wo), MEM(s.mem),
                                   U32(s.off), U32(s.sb), U32(s.sf), MEM(p->params), U32(ch->bo),
                                   U32(f.bias), U32(f.relu), U32(f.add)));
    return clnet_pass_run(p, 7, "conv_direct", opt, "direct_down", 2, range, NULL,
                          ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(big), U32(big_off), MEM(p->params),
                               U32(ch->wo), MEM(s.mem), U32(s.off), U32(s.sb), U32(s.sf),
                               MEM(p->params), U32(ch->bo), U32(f.bias), U32(f.relu), U32(f.add)));
}

/* big (+)= the windows' sums of W^T . small, with the flags' bias and add */
static clnet_status direct_up(const clnet_node *node, const clnet_pass *p, const chunk *ch,
                              small_view s, cl_mem big, size_t big_off, output_flags f) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    sides v = sides_of(node);
    char opt[700];
    direct_options(node, opt, sizeof opt);
    size_t range[2] = {(size_t)w->in[1], (size_t)ch->s * v.Cb * w->in[0]};
    if (direct_pairs(w))
        return clnet_pass_run(p, 8, "conv_direct", opt, "direct_up_pairs", 2, range, NULL,
                              ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(s.mem), U32(s.off), U32(s.sb),
                                   U32(s.sf), U32(view_size(ch, v, s)), MEM(p->params), U32(ch->wo),
                                   MEM(big), U32(big_off), MEM(p->params), U32(ch->bo), U32(f.bias),
                                   U32(f.add)));
    return clnet_pass_run(p, 8, "conv_direct", opt, "direct_up", 2, range, NULL,
                          ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(s.mem), U32(s.off), U32(s.sb),
                               U32(s.sf), MEM(p->params), U32(ch->wo), MEM(big), U32(big_off),
                               MEM(p->params), U32(ch->bo), U32(f.bias), U32(f.add)));
}

/* dW (+)= small . windows(big)^T: one part per sample in the column region,
 * then their sum in sample order (clnet_col_sums; beta: 0 overwrites dW, 1
 * adds) */
static clnet_status direct_weight(const clnet_node *node, const clnet_pass *p, const chunk *ch,
                                  small_view s, cl_mem big, size_t big_off, float beta) {
    clnet_status status = CLNET_OK;
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    sides v = sides_of(node);
    size_t per = v.Cs * (v.Cb / v.G);
    char opt[700];
    direct_options(node, opt, sizeof opt);
    size_t range[3] = {v.K, per, (size_t)ch->s};
    if (direct_pairs(w))
        TRY(clnet_pass_run(p, 9, "conv_direct", opt, "direct_weight_pairs", 3, range, NULL,
                           ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(s.mem), U32(s.off), U32(s.sb),
                                U32(s.sf), U32(view_size(ch, v, s)), MEM(big), U32(big_off),
                                U32(big_size(ch, v, w)), MEM(p->work), U32(ch->col))));
    else
        TRY(clnet_pass_run(p, 9, "conv_direct", opt, "direct_weight_partial", 3, range, NULL,
                           ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(s.mem), U32(s.off), U32(s.sb),
                                U32(s.sf), MEM(big), U32(big_off), MEM(p->work), U32(ch->col))));
    TRY(clnet_col_sums(p->d, clnet_pass_kept(p, 10), (size_t)ch->s, per * v.K, p->work, ch->col,
                       p->grads, ch->wo, beta));
cleanup:
    return status;
}

/* y = W . windows(x) + bias (then the relu, if taken in), in place */
static clnet_status direct_conv_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                              const chunk *ch, float beta) {
    (void)beta;
    output_flags f = forward_flags(node, p);
    return direct_down(node, p, ch, small_nchw(node, p->act, p->y + ch->small), p->act,
                       p->x[0] + ch->big, f);
}

/* dSp = dy in GEMM layout (only where y > 0 with the relu taken in), its row
 * sums for the bias, then dW and dx straight from it and x. */
static clnet_status direct_conv_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                               const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    TRY(output_grad(node, p, ch, beta));
    small_view dsp = small_gemm(node, p, ch);
    if (ch->makes & MAKES_DW) TRY(direct_weight(node, p, ch, dsp, p->act, p->x[0] + ch->big, beta));
    if (!(ch->makes & MAKES_DX)) return CLNET_OK;
    output_flags f = {.add = clnet_dx_add(p, 0)};
    TRY(direct_up(node, p, ch, dsp, p->dact, p->dx[0] + ch->big, f));
cleanup:
    return status;
}

/* y = the windows' sums of W^T . x, + bias */
static clnet_status direct_transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                                   const chunk *ch, float beta) {
    (void)beta;
    output_flags f = forward_flags(node, p);
    return direct_up(node, p, ch, small_nchw(node, p->act, p->x[0] + ch->small), p->act,
                     p->y + ch->big, f);
}

/* dbias as im2col's path has it, then dW and dx straight from x and dy. */
static clnet_status direct_transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                                    const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    TRY(transpose_bias_grad(node, p, ch, beta));
    small_view x = small_nchw(node, p->act, p->x[0] + ch->small);
    if (ch->makes & MAKES_DW) TRY(direct_weight(node, p, ch, x, p->dact, p->dy + ch->big, beta));
    if (!(ch->makes & MAKES_DX)) return CLNET_OK;
    output_flags f = {.add = clnet_dx_add(p, 0)};
    TRY(direct_down(node, p, ch, small_nchw(node, p->dact, p->dx[0] + ch->small), p->dact,
                    p->dy + ch->big, f));
cleanup:
    return status;
}

/* ---- the implicit-GEMM algorithm (cl/conv_implicit.cl) ---- */

/* A grid of cl/conv_implicit.cl: a source tensor laid out so that the taps
 * of consecutive outputs are consecutive. Along each axis an output o reads
 * the source at o - pad + t * d for its taps t. Rows of the source sit one
 * after another with a gap of zeros between them as wide as the most a
 * window reaches past either end (PyTorch's 'same' 3x3: one column, where
 * padding each row on both sides would take two): size src + gap, the
 * source at 0, outputs at 0 .. out - 1. Where outputs outnumber that
 * (padding wider than the kernel), each row is padded on both sides
 * instead: size out + span, the source at pad.
 *
 * At stride s > 1 the padded source is split into s phases along the axis
 * (cl/conv_implicit.cl says how), each padded on both sides: size out +
 * span / s a phase, outputs at 0 .. out - 1 of every phase's grid. Only
 * phases 0 .. kept - 1 are kept, the last one a tap reads, unless
 * `every_phase`. */
typedef struct {
    size_t d[3], P;        /* a phase's sizes, P = d[0] * d[1] * d[2] */
    int shift[3];          /* where the source starts along each axis */
    int stride[3], dil[3]; /* the phases along each axis, and the dilation */
    int kept[3];           /* the phases kept along each axis */
    int strided;           /* some stride > 1 */
    size_t phases;         /* kept[0] * kept[1] * kept[2] */
    long base;             /* the offset of tap 0 of output 0 from the grid's start (<= 0 mostly) */
    size_t lead, most, back; /* zeros before the grid for base; the largest tap offset after it;
                              * zeros the input gradient needs before the output gradient
                              * on this grid, to read it backwards (strided) */
} grid;

static grid make_grid(const clnet_window *w, const int *src, const int *out, int backward,
                      int every_phase) {
    grid g = {.P = 1, .phases = 1};
    int pad[3];
    size_t step[3];
    for (int a = 0; a < 3; a++) {
        int span = w->d[a] * (w->k[a] - 1), s = backward ? 1 : w->s[a];
        pad[a] = backward ? span - w->p[a] : w->p[a]; /* the input gradient reverses the taps */
        int after = out[a] - 1 + span - pad[a] - (src[a] - 1),
            gap = pad[a] > after ? pad[a] : after;
        if (gap < 0) gap = 0;
        int shared = s == 1 && out[a] <= src[a] + gap;
        g.d[a] = (size_t)(shared ? src[a] + gap : out[a] + span / s);
        g.shift[a] = shared ? 0 : pad[a];
        g.stride[a] = s;
        g.dil[a] = w->d[a];
        g.kept[a] = every_phase ? s : 1;
        for (int k = 0; k < w->k[a]; k++)
            if (k * w->d[a] % s + 1 > g.kept[a]) g.kept[a] = k * w->d[a] % s + 1;
        g.phases *= (size_t)g.kept[a];
        g.strided |= s > 1;
        g.P *= g.d[a];
    }
    step[0] = g.d[1] * g.d[2], step[1] = g.d[2], step[2] = 1;
    for (int a = 0; a < 3; a++) {
        g.base += (long)(g.shift[a] - pad[a]) * (long)step[a];
        g.most += (size_t)(w->d[a] * (w->k[a] - 1) / g.stride[a]) * step[a];
    }
    g.lead = g.base < 0 ? (size_t)-g.base : 0;
    g.back = g.strided ? g.most : g.lead;
    return g;
}

/* The tap arguments of cl/conv_implicit.cl's kernels for a product over
 * grid g (of s samples a phase): every tap, forward from each output */
typedef struct {
    cl_int4 dil, stride, kept, step, want;
} taps;

static taps forward_taps(const grid *g, int s) {
    int phase = (int)((size_t)s * g->P);
    return (taps){{{g->dil[0], g->dil[1], g->dil[2], 0}},
                  {{g->stride[0], g->stride[1], g->stride[2], 1}},
                  {{g->kept[0], g->kept[1], g->kept[2], 1}},
                  {{(int)(g->d[1] * g->d[2]), (int)g->d[2], 1, phase}},
                  {{0, 0, 0, 0}}};
}

/* or the taps of phase (pz, py, px) of a strided layer's input gradient,
 * backwards from each position of the output gradient's grid g, over the
 * reversed weight */
static taps phase_taps(const grid *g, const int *phase) {
    taps t = forward_taps(g, 0);
    t.step = (cl_int4){{-t.step.s[0], -t.step.s[1], -1, 0}};
    t.want = (cl_int4){{phase[0], phase[1], phase[2], 2}};
    return t;
}

/* The forward's grid: the big side, every window inside (a transposed
 * convolution's keeps every phase: its bias gradient sums all of dy). */
static grid forward_grid(const clnet_node *node) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    return make_grid(&c->win, c->win.in, c->win.out, 0, c->transpose);
}

/* The input gradient's grid at stride 1: dy, read by dx's windows with the
 * taps reversed. */
static grid backward_grid(const clnet_node *node) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    return make_grid(w, w->out, w->in, 1, 0);
}

/* Whether the input gradient reads dy from the forward's grid of dy (the
 * weight gradient's dYp) as it is: strided layers (backwards, phase by
 * phase), or both grids alike (PyTorch's 'same'). */
static int same_grids(const grid *f, const grid *b) {
    if (f->strided) return 1;
    for (int a = 0; a < 3; a++)
        if (f->d[a] != b->d[a] || f->shift[a] != 0 || b->shift[a] != 0) return 0;
    return f->base == b->base;
}

/* Register tiles: the CPU rule's for the GEMM (6 x 64 of float16s, k in
 * blocks of 256; 6 x 16 of float8s on 8-wide CPUs), or for the implicit algorithm 8 x 48 where the
 * rows of the layer's two products (its filters and its channels a group) waste less on it (32 and
 * 16 of them: 36 and 18 rows on 6; 10% faster on conv3d 16 -> 32, 10% slower on 64 -> 64; not for
 * lanes, whose lane unit of 64 samples the tile's columns must divide); smaller ones elsewhere (a
 * first version for GPUs, untuned). The weight gradient's work-items hold 8 rows x 3 taps (15%
 * faster than 2 x 9 on conv3d and ResNet's 64 -> 64, level elsewhere). */
typedef struct {
    int mr, nv, vw, kc, wr, wt;
} implicit_tile;

#define NR_MOST    64   /* the widest tile: the grids' slack holds one past the end */
#define WGRAD_Q    4096 /* grid positions per part of the weight gradient */
#define WGRAD_TAPS 3    /* the most taps of a weight-gradient work-item */
#define WGRAD_ACCS 24   /* and of its accumulators */

/* The rows a tile of mr rows computes for products of m1 and m2 rows. */
static size_t rows_on(size_t mr, size_t m1, size_t m2) {
    return (m1 + mr - 1) / mr * mr + (m2 + mr - 1) / mr * mr;
}

static implicit_tile tile_of(const clnet_node *node, const clnet_device *d, int lanes) {
    int cpu = !d || d->vector_cpu;
    sides v = sides_of(node);
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G;
    int wide = cpu && (!d || d->vector_cpu == 16); /* AVX-512's 32 zmm, else 16 ymm */
    implicit_tile t = wide  ? (implicit_tile){6, 4, 16, 256, 0, 0}
                      : cpu ? (implicit_tile){6, 2, 8, 256, 0, 0}
                            : (implicit_tile){4, 1, 4, 0, 0, 0};
    if (wide && !lanes && rows_on(8, Fg, Cg) * 100 < rows_on(6, Fg, Cg) * 92) t.mr = 8, t.nv = 3;
    int taps = (int)v.K, groups = (taps + WGRAD_TAPS - 1) / WGRAD_TAPS;
    t.wt = (taps + groups - 1) / groups;                  /* the taps in groups of equal size */
    t.wr = WGRAD_ACCS / t.wt > 8 ? 8 : WGRAD_ACCS / t.wt; /* WR x WT accumulators */
    return t;
}

/* The program's build options for tile t. */
static void implicit_options(const clnet_node *node, const implicit_tile *t, char *opt,
                             size_t cap) {
    const clnet_window *w = &CLNET_CONFIG(node, conv_config)->win;
    snprintf(opt, cap, "-DMR=%d -DNV=%d -DVW=%d -DKC=%d -DIKD=%d -DIKH=%d -DIKW=%d -DWR=%d -DWT=%d",
             t->mr, t->nv, t->vw, t->kc, w->k[0], w->k[1], w->k[2], t->wr, t->wt);
}

static size_t round16(size_t v) {
    return (v + 15) / 16 * 16;
}

/* The zeros after a grid of `rows` floats a channel: one tile past the
 * last, and the taps' reach. */
static size_t slack(const grid *g) {
    return NR_MOST + 16 + g->most;
}

/* A chunk's regions (offsets in work, floats), in order: the reversed
 * weight of the input gradient (first, where every chunk finds it: the
 * pass's first chunk makes it), the small side on the forward grid (Yp,
 * dYp: Cs rows of ld, after the zeros the input gradient reads before it),
 * x on it (every phase; lead before, slack after), the weight gradient's
 * parts, then dy on the input gradient's grid (unless it reads dYp) and its
 * result (Cb rows of ldb; at a stride, such a product per phase of dx). */
typedef struct {
    grid f, b;
    int same; /* same_grids */
    size_t ld, ldb, chunks;
    size_t xcs, x0; /* x's grid: its channel stride (every phase), and where tap 0 of output 0 is */
    size_t wf, yp, xp, parts, dyp, dxp, end;
} implicit_layout;

static implicit_layout layout_of(const clnet_node *node, int s) {
    sides v = sides_of(node);
    implicit_layout l = {.f = forward_grid(node), .b = backward_grid(node)};
    l.same = same_grids(&l.f, &l.b);
    l.ld = round16((size_t)s * l.f.P + (l.same ? l.f.back : 0));
    l.ldb = l.f.strided ? l.ld : round16((size_t)s * l.b.P);
    l.chunks = (l.ld + WGRAD_Q - 1) / WGRAD_Q;
    l.xcs = l.f.phases * (size_t)s * l.f.P;
    l.wf = 0;
    l.yp = round16(l.wf + v.Cb * (v.Cs / v.G) * v.K + l.f.back);
    l.xp = round16(l.yp + v.Cs * l.ld + slack(&l.f) + l.f.lead);
    l.x0 = (size_t)((long)l.xp + l.f.base);
    l.parts = round16(l.xp + v.Cb * l.xcs + slack(&l.f));
    l.dyp = round16(l.parts + l.chunks * v.Cs * (v.Cb / v.G) * v.K + l.b.lead);
    l.dxp = l.same ? l.dyp : round16(l.dyp + v.Cs * (size_t)s * l.b.P + slack(&l.b));
    l.end = round16(l.dxp + l.f.phases * v.Cb * l.ldb); /* a strided layer: a product a phase */
    return l;
}

static size_t implicit_floats(const clnet_node *node, int s) {
    return layout_of(node, s).end;
}

static size_t implicit_sums_floats(const clnet_node *node, int s) {
    implicit_layout l = layout_of(node, s);
    sides v = sides_of(node);
    return most(clnet_row_sums_floats(v.Cs, l.ld), clnet_row_sums_floats(v.Cb, l.xcs));
}

static double implicit_useful(const clnet_node *node) {
    return (double)sides_of(node).Ps / (double)forward_grid(node).P;
}

/* A strided (n, C, D, H, W) view: src[off + b * sb + c * sc + z * sz + y * sy + x]. */
typedef struct {
    cl_mem mem;
    size_t off, sb, sc, sz, sy;
    const int *size; /* D, H, W */
} view;

static view nchw_view(cl_mem mem, size_t off, size_t C, const int *size) {
    size_t plane = (size_t)size[1] * size[2], volume = plane * size[0];
    return (view){mem, off, C * volume, volume, plane, (size_t)size[2], size};
}

/* What the implicit kernels of one chunk share: the program's options. */
typedef struct {
    const clnet_pass *p;
    const chunk *ch;
    const clnet_window *w;
    implicit_layout l;
    implicit_tile t;
    char opt[160];
} implicit_run;

static implicit_run implicit_begin(const clnet_node *node, const clnet_pass *p, const chunk *ch) {
    implicit_run r = {.p = p,
                      .ch = ch,
                      .w = &CLNET_CONFIG(node, conv_config)->win,
                      .l = layout_of(node, ch->s),
                      .t = tile_of(node, p->d, 0)};
    implicit_options(node, &r.t, r.opt, sizeof r.opt);
    return r;
}

/* grid g (at work + to, lead zeros before) = the view of C channels, zeros
 * around, phase by phase, then its slack */
static clnet_status pad(const implicit_run *r, size_t C, view src, const grid *g, size_t to) {
    size_t rows = C * g->phases * (size_t)r->ch->s * g->d[0];
    cl_uint4 st = {{(cl_uint)g->stride[0], (cl_uint)g->stride[1], (cl_uint)g->stride[2], 0}},
             kept = {{(cl_uint)g->kept[0], (cl_uint)g->kept[1], (cl_uint)g->kept[2], 0}};
    return clnet_pass_run(
        r->p, 11, "conv_implicit", r->opt, "implicit_pad", 2, (size_t[]){g->d[1], rows + 1}, NULL,
        ARGS(U32(r->ch->s), U32(C), U32(src.size[0]), U32(src.size[1]), U32(src.size[2]),
             U32(g->shift[0]), U32(g->shift[1]), U32(g->shift[2]), VEC4(st), VEC4(kept),
             U32(g->d[0]), U32(g->d[1]), U32(g->d[2]), MEM(src.mem), U32(src.off), U32(src.sb),
             U32(src.sc), U32(src.sz), U32(src.sy), MEM(r->p->work), U32(to), U32(g->lead),
             U32(slack(g))));
}

/* For each of G groups: C (M x the grid's positions, rows of ldc at work +
 * c) = A (M x CH * K, rows of lda, at a) . the windows of CH channels of grid
 * g (at work + x, channel stride xcs) over taps t, the groups' operands one
 * after another (A's M rows, x's CH channels, C's M rows), in one launch.
 * With `valid` (the result's size along each axis), a sample's positions
 * past its last valid one are skipped where that saves tiles. */
static clnet_status implicit_product(const implicit_run *r, size_t G, size_t M, size_t CH, cl_mem A,
                                     size_t a, size_t lda, const grid *g, taps t, size_t x,
                                     size_t xcs, size_t c, size_t ldc, const int *valid) {
    const clnet_pass *p = r->p;
    size_t N = (size_t)r->ch->s * g->P, nr = (size_t)(r->t.nv * r->t.vw);
    size_t run = N, tiles = (N + nr - 1) / nr, runs = 1;
    if (valid) {
        size_t last =
            (((size_t)valid[0] - 1) * g->d[1] + (size_t)valid[1] - 1) * g->d[2] + (size_t)valid[2];
        size_t per = (last + nr - 1) / nr;
        if (per * (size_t)r->ch->s < tiles) run = g->P, tiles = per, runs = (size_t)r->ch->s;
    }
    size_t mblocks = (M + (size_t)r->t.mr - 1) / (size_t)r->t.mr;
    int cpu = p->d->vector_cpu;
    size_t mb = cpu ? mblocks : 1; /* CPUs: a work-item runs down all of C's rows */
    return clnet_pass_run(
        p, 12, "conv_implicit", r->opt, "implicit_gemm", 3,
        (size_t[]){runs * tiles, (mblocks + mb - 1) / mb, G}, cpu ? (size_t[]){1, 1, 1} : NULL,
        ARGS(U32(M), U32(N), U32(run), U32(tiles), U32(CH), U32(mb), MEM(A), U32(a), U32(lda),
             U32(M * lda), MEM(p->work), U32(x), U32(xcs), U32(CH * xcs), VEC4(t.dil),
             VEC4(t.stride), VEC4(t.kept), VEC4(t.step), VEC4(t.want), F32(0.0f), MEM(p->work),
             U32(c), U32(ldc), U32(M * ldc)));
}

/* (n, F, out...) at (t, off) = the valid positions of grid g's result (F
 * rows of ld at work + from), with the flags' bias, relu and add. With
 * `phased` (a strided layer's input gradient): out's position o + pad of
 * each axis from phase (o + pad) % stride's result (those one after
 * another, F rows of ld each). */
static clnet_status from_grid(const implicit_run *r, size_t F, const int *out, const grid *g,
                              int phased, size_t ld, size_t from, cl_mem t, size_t off,
                              output_flags f) {
    const clnet_pass *p = r->p;
    const clnet_window *w = r->w;
    cl_uint4 st = {{1, 1, 1, 0}}, kept = {{1, 1, 1, 0}}, lo = {{0, 0, 0, 0}};
    for (int a = 0; a < 3 && phased; a++) {
        st.s[a] = (cl_uint)g->stride[a];
        kept.s[a] = (cl_uint)g->kept[a];
        lo.s[a] = (cl_uint)w->p[a];
    }
    return clnet_pass_run(p, 13, "conv_implicit", r->opt, "implicit_output", 2,
                          (size_t[]){(size_t)out[1], (size_t)r->ch->s * F * out[0]}, NULL,
                          ARGS(U32(r->ch->s), U32(F), U32(out[0]), U32(out[1]), U32(out[2]),
                               U32(g->d[0]), U32(g->d[1]), U32(g->d[2]), U32(g->P), U32(ld),
                               VEC4(st), VEC4(kept), VEC4(lo), U32(F * ld), MEM(p->work), U32(from),
                               MEM(p->params), U32(r->ch->bo), MEM(t), U32(off), U32(f.bias),
                               U32(f.relu), U32(f.add), STATS_ARGS(p, r->ch, f)));
}

/* The small side at (t, off) = W . the windows of the big side's grid (at
 * xp, made by pad), every group in one launch, with the flags' bias, relu
 * and add: a convolution's y, a transposed convolution's dx. */
static clnet_status implicit_down(const clnet_node *node, const implicit_run *r, cl_mem t,
                                  size_t off, output_flags o) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    const grid *f = &r->l.f;
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G;
    TRY(implicit_product(r, v.G, Fg, Cg, r->p->params, r->ch->wo, Cg * v.K, f,
                         forward_taps(f, r->ch->s), r->l.x0, r->l.xcs, r->l.yp, r->l.ld,
                         r->w->out));
    TRY(from_grid(r, v.Cs, r->w->out, f, 0, r->l.ld, r->l.yp, t, off, o));
cleanup:
    return status;
}

/* y = W . the windows of x's grid + bias (then the relu) */
static clnet_status implicit_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                           const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    implicit_run r = implicit_begin(node, p, ch);
    (void)beta;
    TRY(pad(&r, v.Cb, nchw_view(p->act, p->x[0] + ch->big, v.Cb, r.w->in), &r.l.f, r.l.xp));
    output_flags o = forward_flags(node, p);
    TRY(implicit_down(node, &r, p->act, p->y + ch->small, o));
cleanup:
    return status;
}

/* dW (+)= dYp . the windows of x's grid^T, every group in one launch: parts
 * of WGRAD_Q grid positions, then their sum in order (clnet_col_sums). */
static clnet_status implicit_weight(const clnet_node *node, const implicit_run *r, float beta) {
    clnet_status status = CLNET_OK;
    const clnet_pass *p = r->p;
    const grid *f = &r->l.f;
    sides v = sides_of(node);
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G, wr = (size_t)r->t.wr, wt = (size_t)r->t.wt;
    taps t = forward_taps(f, r->ch->s);
    TRY(clnet_pass_run(
        p, 14, "conv_implicit", r->opt, "implicit_wgrad", 3,
        (size_t[]){v.Cb * ((v.K + wt - 1) / wt), (Fg + wr - 1) / wr, r->l.chunks}, NULL,
        ARGS(U32(Fg), U32(Cg), U32(v.G), U32(r->l.ld), U32(WGRAD_Q), MEM(p->work), U32(r->l.yp),
             U32(r->l.ld), MEM(p->work), U32(r->l.x0), U32(r->l.xcs), VEC4(t.dil), VEC4(t.stride),
             VEC4(t.kept), VEC4(t.step), MEM(p->work), U32(r->l.parts))));
    TRY(clnet_col_sums(p->d, clnet_pass_kept(p, 15), r->l.chunks, v.Cs * Cg * v.K, p->work,
                       r->l.parts, p->grads, r->ch->wo, beta));
cleanup:
    return status;
}

/* A strided layer's input gradient: one product a kept phase of dx over
 * dYp, read backwards (the others no tap reaches: zeros). */
static clnet_status phase_products(const clnet_node *node, const implicit_run *r) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    const grid *f = &r->l.f;
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G, ld = r->l.ld, at = r->l.dxp;
    int ph[3];
    for (ph[0] = 0; ph[0] < f->kept[0]; ph[0]++)
        for (ph[1] = 0; ph[1] < f->kept[1]; ph[1]++)
            for (ph[2] = 0; ph[2] < f->kept[2]; ph[2]++, at += v.Cb * ld)
                TRY(implicit_product(r, v.G, Cg, Fg, r->p->work, r->l.wf, Fg * v.K, f,
                                     phase_taps(f, ph), r->l.yp, ld, at, ld, NULL));
cleanup:
    return status;
}

/* The big side at (t, off) = the reversed, transposed W . the windows of the
 * small side's grid (Yp, made by small_grid), every group in one launch, with
 * the flags' bias and add: a convolution's dx, a transposed convolution's y.
 * Yp itself where the grids are alike, else Yp moved to the up grid; or a
 * product a phase (strided layers). */
static clnet_status implicit_up(const clnet_node *node, const implicit_run *r, cl_mem t, size_t off,
                                output_flags o) {
    clnet_status status = CLNET_OK;
    const clnet_pass *p = r->p;
    sides v = sides_of(node);
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G;
    const grid *f = &r->l.f, *b = f->strided ? f : &r->l.b;
    size_t dy = r->l.yp, ycs = r->l.ld;
    if (!r->l.same) {
        view from = {p->work, r->l.yp, f->P, r->l.ld, f->d[1] * f->d[2], f->d[2], r->w->out};
        TRY(pad(r, v.Cs, from, b, r->l.dyp));
        dy = r->l.dyp, ycs = (size_t)r->ch->s * b->P;
    }
    if (r->ch->first)
        TRY(clnet_pass_run(p, 16, "conv_implicit", r->opt, "implicit_flip", 1,
                           (size_t[]){v.Cb * Fg * v.K}, NULL,
                           ARGS(U32(v.G), U32(Fg), U32(Cg), U32(v.K), MEM(p->params),
                                U32(r->ch->wo), MEM(p->work), U32(r->l.wf))));
    if (f->strided)
        TRY(phase_products(node, r));
    else
        TRY(implicit_product(r, v.G, Cg, Fg, p->work, r->l.wf, Fg * v.K, b,
                             forward_taps(b, r->ch->s), (size_t)((long)dy + b->base), ycs, r->l.dxp,
                             r->l.ldb, r->w->in));
    TRY(from_grid(r, v.Cb, r->w->in, b, f->strided, r->l.ldb, r->l.dxp, t, off, o));
cleanup:
    return status;
}

/* Yp = the small side at (t, off) on the forward grid, only where y > 0
 * with `relu` (the backward pass of a relu taken in); zeros elsewhere, and
 * before it for implicit_up's reach */
static clnet_status small_grid(const implicit_run *r, size_t Cs, cl_mem t, size_t off, int relu) {
    const clnet_pass *p = r->p;
    const grid *f = &r->l.f;
    const int *out = r->w->out;
    return clnet_pass_run(p, 17, "conv_implicit", r->opt,
                          relu ? "implicit_to_grid_relu" : "implicit_to_grid", 2,
                          (size_t[]){f->d[1], Cs * (size_t)r->ch->s * f->d[0] + Cs}, NULL,
                          ARGS(U32(r->ch->s), U32(Cs), U32(out[0]), U32(out[1]), U32(out[2]),
                               U32(f->d[0]), U32(f->d[1]), U32(f->d[2]), U32(r->l.ld), MEM(t),
                               U32(off), MEM(p->act), U32(p->y + r->ch->small), MEM(p->work),
                               U32(r->l.yp), U32(r->l.same ? f->back : 0), U32(slack(f))));
}

/* dYp = dy on the forward grid, its row sums for the bias, x's grid again,
 * then dW and dx. */
static clnet_status implicit_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                            const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    implicit_run r = implicit_begin(node, p, ch);
    TRY(small_grid(&r, v.Cs, p->dact, p->dy + ch->small, (int)took_relu(node)));
    if (ch->makes & MAKES_DW) {
        if (has_bias(node)) TRY(bias_sums(p, ch, v.Cs, r.l.ld, r.l.yp, beta));
        TRY(pad(&r, v.Cb, nchw_view(p->act, p->x[0] + ch->big, v.Cb, r.w->in), &r.l.f, r.l.xp));
        TRY(implicit_weight(node, &r, beta));
    }
    if (ch->makes & MAKES_DX)
        TRY(implicit_up(node, &r, p->dact, p->dx[0] + ch->big,
                        (output_flags){.add = clnet_dx_add(p, 0)}));
cleanup:
    return status;
}

/* A transposed convolution: y = the up product of x's grid + bias. */
static clnet_status implicit_transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                                     const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    implicit_run r = implicit_begin(node, p, ch);
    (void)beta;
    TRY(small_grid(&r, sides_of(node).Cs, p->act, p->x[0] + ch->small, 0));
    TRY(implicit_up(node, &r, p->act, p->y + ch->big, forward_flags(node, p)));
cleanup:
    return status;
}

/* and backward: dy's grid, its row sums for the bias, x's grid, dW, then dx
 * = the down product of dy's grid. */
static clnet_status implicit_transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                                      const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    sides v = sides_of(node);
    implicit_run r = implicit_begin(node, p, ch);
    TRY(pad(&r, v.Cb, nchw_view(p->dact, p->dy + ch->big, v.Cb, r.w->in), &r.l.f, r.l.xp));
    if (ch->makes & MAKES_DW) {
        if (has_bias(node)) TRY(bias_sums(p, ch, v.Cb, r.l.xcs, r.l.xp, beta));
        TRY(small_grid(&r, v.Cs, p->act, p->x[0] + ch->small, 0));
        TRY(implicit_weight(node, &r, beta));
    }
    if (ch->makes & MAKES_DX)
        TRY(implicit_down(node, &r, p->dact, p->dx[0] + ch->small,
                          (output_flags){.add = clnet_dx_add(p, 0)}));
cleanup:
    return status;
}

/* ---- the lanes algorithm (cl/conv_lanes.cl) ---- */

/* A chunk of s samples holds each side as (C, P, ldn), ldn = s rounded up to
 * the device's lane unit (a multiple of its tile's columns), in three
 * regions of work, after the weight with its channel axes swapped (the up
 * product's A, made by the pass's first chunk): the big side (x, or a transposed convolution's dy),
 * the small side (dy, or a transposed convolution's x) and a product's result (either side); then,
 * for a weight gradient as a GEMM (groups of at least LANES_WGEMM_MIN
 * channels on the big side), the big side with its channels last, a
 * group's rounded up to the unit (Cgp). Smaller groups take their weight
 * gradient as vector dot products along the samples (lanes_wgrad), which
 * reads the big side's lanes instead. */
typedef struct {
    int wgemm;
    size_t ldn, Cgp, wt, big, small, out, last, end;
} lanes_layout;

static lanes_layout lanes_layout_of(const clnet_node *node, const clnet_device *d, int s) {
    sides v = sides_of(node);
    size_t Cg = v.Cb / v.G, unit = lanes_unit(d);
    lanes_layout l = {.wgemm = Cg >= LANES_WGEMM_MIN,
                      .ldn = ((size_t)s + unit - 1) / unit * unit,
                      .Cgp = (Cg + unit - 1) / unit * unit};
    size_t big = v.Cb * v.Pb * l.ldn, small = v.Cs * v.Ps * l.ldn;
    l.big = round16(l.wt + v.Cs * Cg * v.K);
    l.small = round16(l.big + big);
    l.out = round16(l.small + small);
    l.last = round16(l.out + most(big, small));
    l.end = round16(l.last + (l.wgemm ? v.G * l.Cgp * v.Pb * l.ldn : 0));
    return l;
}

static size_t lanes_floats(const clnet_node *node, const clnet_device *d, int s) {
    return lanes_layout_of(node, d, s).end;
}

static size_t lanes_per_sample(const clnet_node *node, const clnet_device *d) {
    sides v = sides_of(node);
    lanes_layout l = lanes_layout_of(node, d, 1);
    return v.Cb * v.Pb + v.Cs * v.Ps + most(v.Cb * v.Pb, v.Cs * v.Ps) +
           (l.wgemm ? v.G * l.Cgp * v.Pb : 0);
}

static size_t lanes_sums_floats(const clnet_node *node, const clnet_device *d, int s) {
    sides v = sides_of(node);
    size_t ldn = lanes_layout_of(node, d, s).ldn;
    return most(clnet_row_sums_floats(v.Cs, v.Ps * ldn), clnet_row_sums_floats(v.Cb, v.Pb * ldn));
}

/* What the lanes kernels of one chunk share. */
typedef struct {
    const clnet_pass *p;
    const chunk *ch;
    const clnet_window *w;
    sides v;
    lanes_layout l;
    implicit_tile t;
    char opt[160];
} lanes_run;

static lanes_run lanes_begin(const clnet_node *node, const clnet_pass *p, const chunk *ch) {
    lanes_run r = {.p = p,
                   .ch = ch,
                   .w = &CLNET_CONFIG(node, conv_config)->win,
                   .v = sides_of(node),
                   .l = lanes_layout_of(node, p->d, ch->s),
                   .t = tile_of(node, p->d, 1)};
    implicit_options(node, &r.t, r.opt, sizeof r.opt);
    return r;
}

/* The work-items of a layout move along an axis of `size`: one a block of 8
 * (cl/conv_lanes.cl turns 8 x 8 blocks in registers) */
static size_t move_blocks(size_t size) {
    return (size + 7) / 8;
}

/* work + to (C, P, ldn) = the chunk's (s, C, P) tensor at (t, off), only
 * where y > 0 with relu */
static clnet_status lanes_in(const lanes_run *r, size_t C, size_t P, cl_mem t, size_t off, int relu,
                             size_t to) {
    const clnet_pass *p = r->p;
    return clnet_pass_run(p, 18, "conv_lanes", r->opt, "lanes_in", 3,
                          (size_t[]){move_blocks(P), move_blocks(r->l.ldn), C}, NULL,
                          ARGS(U32(r->ch->s), U32(C), U32(P), U32(r->l.ldn), MEM(t), U32(off),
                               MEM(p->act), U32(p->y + r->ch->small), U32(relu), MEM(p->work),
                               U32(to)));
}

/* The chunk's (s, C, P) tensor at (t, off) = work + from (C, P, ldn), with `f` */
static clnet_status lanes_out(const lanes_run *r, size_t C, size_t P, size_t from, cl_mem t,
                              size_t off, output_flags f) {
    const clnet_pass *p = r->p;
    return clnet_pass_run(p, 20, "conv_lanes", r->opt, "lanes_out", 3,
                          (size_t[]){move_blocks(P), move_blocks((size_t)r->ch->s), C}, NULL,
                          ARGS(U32(r->ch->s), U32(C), U32(P), U32(r->l.ldn), MEM(p->work),
                               U32(from), MEM(p->params), U32(r->ch->bo), MEM(t), U32(off),
                               U32(f.bias), U32(f.relu), U32(f.add), STATS_ARGS(p, r->ch, f)));
}

/* work + `to` = the down product (up = 0: the small side from the big side at
 * `from`, A = W) or the up product (up = 1: the big side from the small
 * side, A = W with its channel axes swapped, made here by the pass's first
 * chunk), every group and position in one launch */
static clnet_status lanes_product(const lanes_run *r, int up, size_t from, size_t to) {
    clnet_status status = CLNET_OK;
    const clnet_pass *p = r->p;
    const sides *v = &r->v;
    size_t Fg = v->Cs / v->G, Cg = v->Cb / v->G, ldn = r->l.ldn;
    size_t M = up ? Cg : Fg, CH = up ? Fg : Cg, Pin = up ? v->Ps : v->Pb, Pout = up ? v->Pb : v->Ps;
    size_t nr = (size_t)(r->t.nv * r->t.vw), mblocks = (M + (size_t)r->t.mr - 1) / (size_t)r->t.mr;
    int cpu = p->d->vector_cpu;
    size_t mb = cpu ? mblocks : 1; /* CPUs: a work-item runs down all of C's rows */
    if (up && r->ch->first)
        TRY(clnet_pass_run(p, 24, "conv_lanes", r->opt, "lanes_flip", 2, (size_t[]){v->Cb, Fg},
                           NULL,
                           ARGS(U32(v->G), U32(Fg), U32(Cg), U32(v->K), MEM(p->params),
                                U32(r->ch->wo), MEM(p->work), U32(r->l.wt))));
    TRY(clnet_pass_run(p, 19, "conv_lanes", r->opt, "lanes_gemm", 3,
                       (size_t[]){ldn / nr, (mblocks + mb - 1) / mb, v->G * Pout},
                       cpu ? (size_t[]){1, 1, 1} : NULL,
                       ARGS(WIN(r->w), U32(up), U32(M), U32(CH), U32(mb), U32(ldn),
                            MEM(up ? p->work : p->params), U32(up ? r->l.wt : r->ch->wo),
                            U32(CH * v->K), U32(v->K), U32(Fg * Cg * v->K), MEM(p->work), U32(from),
                            U32(Pin * ldn), U32(CH * Pin * ldn), MEM(p->work), U32(to),
                            U32(Pout * ldn), U32(M * Pout * ldn))));
cleanup:
    return status;
}

/* lanes_wgemm on a vector CPU: the row blocks of a work-item (*mb) and the
 * groups its taps are split into (*tg), for two work-items a compute unit
 * (a function of the layer's filters and taps and of the device only, never
 * of the share): row blocks first, taps where the rows are too few. */
static void wgemm_split(size_t mblocks, size_t taps, const clnet_device *d, size_t *mb,
                        size_t *tg) {
    size_t want = 2 * (size_t)(d->info.compute_units > 0 ? d->info.compute_units : 1);
    *mb = (mblocks + want - 1) / want;
    size_t rows = (mblocks + *mb - 1) / *mb;
    *tg = (want + rows - 1) / rows;
    if (*tg > taps) *tg = taps;
    size_t per = (taps + *tg - 1) / *tg; /* the kernel's taps a group */
    *tg = (taps + per - 1) / per;        /* none left empty */
}

/* lanes_wgemm's k-block: whole positions of the chunk's lanes, about 8 KC
 * rows (the tile's k-block, at L2's scale) */
static size_t wgemm_positions(const lanes_run *r) {
    if (r->t.kc <= 0) return r->v.Ps; /* k unblocked */
    size_t ob = 8 * (size_t)r->t.kc / r->l.ldn;
    return ob < 1 ? 1 : ob;
}

/* dW (beta: overwritten or added to) = the small side's lanes (at
 * l.small) against the windows of the big side, the chunk's (s, Cb, Pb)
 * tensor at (t, off): as a GEMM over its channels-last copy, or as dot
 * products over its lanes (at l.big; made here unless `have_lanes`) */
static clnet_status lanes_weight(const lanes_run *r, cl_mem t, size_t off, int have_lanes,
                                 float beta) {
    clnet_status status = CLNET_OK;
    const clnet_pass *p = r->p;
    const sides *v = &r->v;
    const lanes_layout *l = &r->l;
    size_t Fg = v->Cs / v->G, Cg = v->Cb / v->G, nv = (size_t)r->t.nv, mr = (size_t)r->t.mr;
    if (!l->wgemm) {
        if (!have_lanes) TRY(lanes_in(r, v->Cb, v->Pb, t, off, 0, l->big));
        return clnet_pass_run(p, 21, "conv_lanes", r->opt, "lanes_wgrad", 3,
                              (size_t[]){(Cg + nv - 1) / nv, (Fg + mr - 1) / mr, v->G * v->K}, NULL,
                              ARGS(WIN(r->w), U32(Fg), U32(Cg), U32(l->ldn), MEM(p->work),
                                   U32(l->small), MEM(p->work), U32(l->big), F32(beta),
                                   MEM(p->grads), U32(r->ch->wo)));
    }
    TRY(clnet_pass_run(p, 22, "conv_lanes", r->opt, "lanes_in_last", 3,
                       (size_t[]){move_blocks(v->Pb), move_blocks(l->Cgp), (size_t)r->ch->s * v->G},
                       NULL,
                       ARGS(U32(r->ch->s), U32(v->G), U32(Cg), U32(l->Cgp), U32(v->Pb), U32(l->ldn),
                            MEM(t), U32(off), MEM(p->work), U32(l->last))));
    size_t nr = (size_t)(r->t.nv * r->t.vw), mblocks = (Fg + mr - 1) / mr;
    size_t mb = 1, tg = 0, ob = wgemm_positions(r);
    if (p->d->vector_cpu) wgemm_split(mblocks, v->K, p->d, &mb, &tg);
    TRY(clnet_pass_run(p, 23, "conv_lanes", r->opt, "lanes_wgemm", 3,
                       tg ? (size_t[]){1, (mblocks + mb - 1) / mb, v->G * tg}
                          : (size_t[]){(Cg + nr - 1) / nr, mblocks, v->G * v->K},
                       tg ? (size_t[]){1, 1, 1} : NULL,
                       ARGS(WIN(r->w), U32(Fg), U32(Cg), U32(l->Cgp), U32(r->ch->s), U32(l->ldn),
                            U32(mb), U32(tg), U32(ob), MEM(p->work), U32(l->small), MEM(p->work),
                            U32(l->last), F32(beta), MEM(p->grads), U32(r->ch->wo))));
cleanup:
    return status;
}

/* y = the down product of x's lanes + bias (then the relu) */
static clnet_status lanes_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                        const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    lanes_run r = lanes_begin(node, p, ch);
    (void)beta;
    TRY(lanes_in(&r, r.v.Cb, r.v.Pb, p->act, p->x[0] + ch->big, 0, r.l.big));
    TRY(lanes_product(&r, 0, r.l.big, r.l.out));
    TRY(lanes_out(&r, r.v.Cs, r.v.Ps, r.l.out, p->act, p->y + ch->small, forward_flags(node, p)));
cleanup:
    return status;
}

/* dy's lanes (only where y > 0 with the relu taken in), its row sums for the
 * bias, x's lanes and dW, then dx = the up product of dy's lanes */
static clnet_status lanes_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                         const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    lanes_run r = lanes_begin(node, p, ch);
    const sides *v = &r.v;
    TRY(lanes_in(&r, v->Cs, v->Ps, p->dact, p->dy + ch->small, (int)took_relu(node), r.l.small));
    if (ch->makes & MAKES_DW) {
        if (has_bias(node)) TRY(bias_sums(p, ch, v->Cs, v->Ps * r.l.ldn, r.l.small, beta));
        TRY(lanes_weight(&r, p->act, p->x[0] + ch->big, 0, beta));
    }
    if (ch->makes & MAKES_DX) {
        TRY(lanes_product(&r, 1, r.l.small, r.l.out));
        TRY(lanes_out(&r, v->Cb, v->Pb, r.l.out, p->dact, p->dx[0] + ch->big,
                      (output_flags){.add = clnet_dx_add(p, 0)}));
    }
cleanup:
    return status;
}

/* A transposed convolution: y = the up product of x's lanes + bias. */
static clnet_status lanes_transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                                  const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    lanes_run r = lanes_begin(node, p, ch);
    (void)beta;
    TRY(lanes_in(&r, r.v.Cs, r.v.Ps, p->act, p->x[0] + ch->small, 0, r.l.small));
    TRY(lanes_product(&r, 1, r.l.small, r.l.out));
    TRY(lanes_out(&r, r.v.Cb, r.v.Pb, r.l.out, p->act, p->y + ch->big, forward_flags(node, p)));
cleanup:
    return status;
}

/* and backward: dy's lanes, their row sums for the bias, x's lanes and dW,
 * then dx = the down product of dy's lanes. */
static clnet_status lanes_transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                                   const chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    lanes_run r = lanes_begin(node, p, ch);
    const sides *v = &r.v;
    TRY(lanes_in(&r, v->Cb, v->Pb, p->dact, p->dy + ch->big, 0, r.l.big));
    if (ch->makes & MAKES_DW) {
        if (has_bias(node)) TRY(bias_sums(p, ch, v->Cb, v->Pb * r.l.ldn, r.l.big, beta));
        TRY(lanes_in(&r, v->Cs, v->Ps, p->act, p->x[0] + ch->small, 0, r.l.small));
        TRY(lanes_weight(&r, p->dact, p->dy + ch->big, 1, beta));
    }
    if (ch->makes & MAKES_DX) {
        TRY(lanes_product(&r, 0, r.l.big, r.l.out));
        TRY(lanes_out(&r, v->Cs, v->Ps, r.l.out, p->dact, p->dx[0] + ch->small,
                      (output_flags){.add = clnet_dx_add(p, 0)}));
    }
cleanup:
    return status;
}

/* The forward pass with its algorithm. */
static clnet_status forward_with(const clnet_node *node, const clnet_pass *p,
                                 const chunk_fns *fns) {
    int algo = plan_of(node, p->d).pass[CLNET_PASS_FORWARD];
    if (p->stats) p->stats->records = (uint32_t)pass_records(node, p->d, algo, p->n);
    return each_chunk(node, p, fns, algo, 0);
}

/* Backward: both gradients chunk by chunk where one algorithm makes them
 * (sharing dy's layout and x's columns or grid), else the weight gradient's
 * algorithm over every chunk, then the input gradient's. Asked for one part
 * (clnet_pass.part), the same chunks make that part alone: the same floats. */
static clnet_status backward_with(const clnet_node *node, const clnet_pass *p,
                                  const chunk_fns *fns) {
    clnet_conv_plan plan = plan_of(node, p->d);
    int dw = plan.pass[CLNET_PASS_DW], dx = plan.pass[CLNET_PASS_DX];
    if (p->part == CLNET_PART_DX)
        return p->need_dx[0] ? each_chunk(node, p, fns, dx, MAKES_DX) : CLNET_OK;
    if (!p->need_dx[0] || p->part == CLNET_PART_DW) return each_chunk(node, p, fns, dw, MAKES_DW);
    if (dw == dx) return each_chunk(node, p, fns, dw, MAKES_DW | MAKES_DX);
    clnet_status status = each_chunk(node, p, fns, dw, MAKES_DW);
    return status == CLNET_OK ? each_chunk(node, p, fns, dx, MAKES_DX) : status;
}

static clnet_status conv_forward(const clnet_node *node, const clnet_pass *p) {
    static const chunk_fns fns = {{[CLNET_CONV_IM2COL] = conv_forward_chunk,
                                   [CLNET_CONV_DIRECT] = direct_conv_forward_chunk,
                                   [CLNET_CONV_IMPLICIT] = implicit_forward_chunk,
                                   [CLNET_CONV_LANES] = lanes_forward_chunk}};
    return forward_with(node, p, &fns);
}

static clnet_status conv_backward(const clnet_node *node, const clnet_pass *p) {
    static const chunk_fns fns = {{[CLNET_CONV_IM2COL] = conv_backward_chunk,
                                   [CLNET_CONV_DIRECT] = direct_conv_backward_chunk,
                                   [CLNET_CONV_IMPLICIT] = implicit_backward_chunk,
                                   [CLNET_CONV_LANES] = lanes_backward_chunk}};
    return backward_with(node, p, &fns);
}

static clnet_status transpose_forward(const clnet_node *node, const clnet_pass *p) {
    static const chunk_fns fns = {{[CLNET_CONV_IM2COL] = transpose_forward_chunk,
                                   [CLNET_CONV_DIRECT] = direct_transpose_forward_chunk,
                                   [CLNET_CONV_IMPLICIT] = implicit_transpose_forward_chunk,
                                   [CLNET_CONV_LANES] = lanes_transpose_forward_chunk}};
    return forward_with(node, p, &fns);
}

static clnet_status transpose_backward(const clnet_node *node, const clnet_pass *p) {
    static const chunk_fns fns = {{[CLNET_CONV_IM2COL] = transpose_backward_chunk,
                                   [CLNET_CONV_DIRECT] = direct_transpose_backward_chunk,
                                   [CLNET_CONV_IMPLICIT] = implicit_transpose_backward_chunk,
                                   [CLNET_CONV_LANES] = lanes_transpose_backward_chunk}};
    return backward_with(node, p, &fns);
}

/* The tuner leaves out the direct algorithm where a group has more channels
 * than this on the big side: its work-items loop over them one by one, and
 * on the EPYC VM it ran ResNet-18's 64- to 512-channel layers 10 to 26
 * times slower than the others, which took half of `clnet tune`'s time. */
#define DIRECT_TUNE_MAX_GROUP 32

static int algorithms(const clnet_node *node, const clnet_device *d, char *key, size_t cap,
                      int *algos, clnet_conv_plan *chosen) {
    sides v = sides_of(node);
    int n = 0;
    tune_key(node, key, cap);
    for (int a = CLNET_CONV_AUTO + 1; a < CLNET_CONV_ALGOS; a++)
        if (a != CLNET_CONV_DIRECT || v.Cb / v.G <= DIRECT_TUNE_MAX_GROUP) algos[n++] = a;
    *chosen = plan_of(node, d);
    return n;
}

#define CONV_KIND(kind_name, about_, defaults_, options_)                                          \
    {                                                                                              \
        .name = kind_name, .about = about_, .stem = "conv", .options = options_, .min_inputs = 1,  \
        .max_inputs = 1, /* x: each chunk's columns are made again; y: with a relu taken in */     \
            .backward_reads = CLNET_READS_X | CLNET_READS_Y_RELU,                                  \
        .config_size = sizeof(conv_config), .defaults = defaults_, .check = check, .setup = setup, \
        .work_floats = work_floats, .forward = conv_forward, .backward = conv_backward,            \
        .splits_backward = 1, .fuse_relu = fuse_relu, .algorithms = algorithms,                    \
        .fold_scale = fold_scale, .keep_floats = keep_floats, .stats_out = 1,                      \
    }

/* backward reads x (the weight gradient's Xp), never y */
#define TRANSPOSE_KIND(kind_name, about_, defaults_, options_)                                     \
    {                                                                                              \
        .name = kind_name, .about = about_, .stem = "deconv", .options = options_,                 \
        .min_inputs = 1, .max_inputs = 1, .backward_reads = CLNET_READS_X,                         \
        .config_size = sizeof(conv_config), .defaults = defaults_, .check = check, .setup = setup, \
        .work_floats = work_floats, .forward = transpose_forward, .backward = transpose_backward,  \
        .splits_backward = 1, .algorithms = algorithms, .fold_scale = fold_scale,                  \
    }

/* What every convolution shares, after the shapes of its rank. */
#define CONV_ABOUT                                                                                 \
    " Options with one value per axis take one number for every axis or one per axis "             \
    "(3x5). groups=G splits channels and filters into G independent groups (G dividing "           \
    "both; G equal to the channels is depthwise); dilation=d spaces the taps d apart, so "         \
    "a kernel spans d(k-1)+1 inputs; pad=same keeps the size at stride 1 (PyTorch's "              \
    "padding='same', the odd zero after the input)."
#define TRANSPOSE_ABOUT                                                                            \
    " The gradient of a convolution run forward: each input spreads its window into an output "    \
    "of (in-1)*stride - 2*pad + dilation*(size-1) + output_pad + 1 per axis. Weight (channels, "   \
    "filters/groups, k...), bias (filters)."

const clnet_kind clnet_conv1d_kind =
    CONV_KIND("conv1d",
              "A convolution over signals: (C, L) in, (filters, L') out; weight (filters, "
              "C/groups, k), bias (filters), as PyTorch's Conv1d. pad=causal puts d(k-1) zeros "
              "before the signal and none after, so no output reads a later input." CONV_ABOUT,
              defaults1, conv1_options);
const clnet_kind clnet_conv2d_kind =
    CONV_KIND("conv2d",
              "A convolution over images: (C, H, W) in, (filters, H', W') out; weight (filters, "
              "C/groups, kh, kw), bias (filters), as PyTorch's Conv2d." CONV_ABOUT,
              defaults2, conv2_options);
const clnet_kind clnet_conv3d_kind =
    CONV_KIND("conv3d",
              "A convolution over volumes: (C, D, H, W) in, (filters, D', H', W') out; weight "
              "(filters, C/groups, kd, kh, kw), bias (filters), as PyTorch's Conv3d." CONV_ABOUT,
              defaults3, conv3_options);
const clnet_kind clnet_conv_transpose1d_kind =
    TRANSPOSE_KIND("conv_transpose1d",
                   "A transposed convolution over signals (C, L), as PyTorch's "
                   "ConvTranspose1d." TRANSPOSE_ABOUT,
                   defaults_t1, transpose1_options);
const clnet_kind clnet_conv_transpose2d_kind =
    TRANSPOSE_KIND("conv_transpose2d",
                   "A transposed convolution over images (C, H, W), as PyTorch's "
                   "ConvTranspose2d." TRANSPOSE_ABOUT,
                   defaults_t2, transpose2_options);
const clnet_kind clnet_conv_transpose3d_kind =
    TRANSPOSE_KIND("conv_transpose3d",
                   "A transposed convolution over volumes (C, D, H, W), as PyTorch's "
                   "ConvTranspose3d." TRANSPOSE_ABOUT,
                   defaults_t3, transpose3_options);
