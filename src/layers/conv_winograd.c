/* Winograd's F(2x2, 3x3) algorithm (cl/conv_winograd.cl, which says how):
 * a convolution's forward product and input gradient for 3x3 windows at
 * stride 1 without dilation, each as transforms of the filters and of the
 * input's 4x4 patches, sixteen products over the channels (the implicit
 * algorithm's kernel, conv_implicit_products) and the output's transform.
 * The weight gradient, and every convolution it does not fit, run as the
 * implicit algorithm's (its chunk functions, on the same chunks): so it runs
 * every convolution. The rules pick it on GPUs for the layers it fits with
 * enough channels. */
#include "conv.h"
#include "error.h"
#include "layer.h"
#include "program.h"

/* Whether the transforms fit the node: 3x3 windows (1 along depth, taken
 * plane by plane) at stride 1 without dilation, padding 0 to 2 (the input
 * gradient pads by 2 - p), not transposed. */
static int fits(const clnet_node *node) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    const clnet_window *w = &c->win;
    int ok = !c->transpose && w->k[0] == 1 && w->k[1] == 3 && w->k[2] == 3 && w->p[0] == 0;
    for (int a = 0; a < 3; a++) ok &= w->s[a] == 1 && w->d[a] == 1 && w->p[a] <= 2;
    return ok;
}

/* One direction's transform: from a side of C channels on a (D, H, W) grid
 * to one of F channels on (D, OH, OW), padding (ph, pw), in tiles of 2x2
 * outputs: TH x TW a plane, T in all for s samples. */
typedef struct {
    size_t C, F, H, W, OH, OW, ph, pw, TH, TW, T;
} direction;

/* The forward's (x to y) or, with dx, the input gradient's (dy to dx). */
static direction direction_of(const clnet_node *node, int s, int dx) {
    const clnet_window *w = CONV_WINDOW(node);
    conv_sides v = conv_sides_of(node);
    direction r = {.C = dx ? v.Cs : v.Cb, .F = dx ? v.Cb : v.Cs};
    const int *from = dx ? w->out : w->in, *to = dx ? w->in : w->out;
    r.H = (size_t)from[1], r.W = (size_t)from[2], r.OH = (size_t)to[1], r.OW = (size_t)to[2];
    r.ph = (size_t)(dx ? 2 - w->p[1] : w->p[1]), r.pw = (size_t)(dx ? 2 - w->p[2] : w->p[2]);
    r.TH = (r.OH + 1) / 2, r.TW = (r.OW + 1) / 2;
    r.T = (size_t)s * (size_t)w->out[0] * r.TH * r.TW;
    return r;
}

/* A chunk's regions (floats of work): the transformed filters U at 0, the
 * transformed tiles V, then their products M, for whichever direction takes
 * more; V has a slack after it (conv_implicit_products' CPU tiles). */
typedef struct {
    size_t u, v, m, end;
} regions_t;

#define SLACK 96

static regions_t layout(const clnet_node *node, int s) {
    conv_sides v = conv_sides_of(node);
    regions_t r = {0};
    size_t vmost = 0, mmost = 0;
    for (int dx = 0; dx < 2; dx++) {
        direction d = direction_of(node, s, dx);
        vmost = conv_most(vmost, 16 * d.C * d.T);
        mmost = conv_most(mmost, 16 * d.F * d.T);
    }
    r.v = conv_round16(16 * (v.Cs / v.G) * v.Cb);
    r.m = conv_round16(r.v + vmost + SLACK);
    r.end = conv_round16(r.m + mmost);
    return r;
}

/* y (forward) or dx (input gradient) = the transforms' convolution of the
 * chunk's x or dy, with the flags' bias, relu and add (dy through the relu
 * taken in, for dx). */
static clnet_status transformed(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                                int dx, conv_output_flags o) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    direction d = direction_of(node, ch->s, dx);
    regions_t r = layout(node, ch->s);
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G, FO = dx ? Cg : Fg, CI = dx ? Fg : Cg;
    size_t D = (size_t)CONV_WINDOW(node)->out[0], rows = (size_t)ch->s * D * d.TH;
    cl_mem src = dx ? p->dact : p->act, dst = dx ? p->dact : p->act;
    size_t soff = dx ? p->dy + ch->small : p->x[0] + ch->big;
    size_t doff = dx ? p->dx[0] + ch->big : p->y + ch->small;
    uint32_t relu_in = dx ? conv_took_relu(node) : 0;
    TRY(clnet_pass_run(p, CONV_K_WINO_FILTER, KERNEL("conv_winograd", "", "wino_filter"), 1,
                       (size_t[]){v.G * FO * CI}, NULL,
                       ARGS(U32(v.G), U32(Fg), U32(Cg), U32(dx), MEM(p->params), U32(ch->wo),
                            MEM(p->work), U32(r.u))));
    TRY(clnet_pass_run(p, CONV_K_WINO_INPUT, KERNEL("conv_winograd", "", "wino_input"), 3,
                       (size_t[]){d.TW, rows, d.C}, NULL,
                       ARGS(U32(ch->s), U32(d.C), U32(D), U32(d.H), U32(d.W), U32(d.ph), U32(d.pw),
                            U32(d.TH), U32(d.TW), MEM(src), U32(soff), MEM(p->act),
                            U32(p->y + ch->small), U32(relu_in), MEM(p->work), U32(r.v))));
    TRY(conv_implicit_products(node, p, dx ? CONV_K_WINO_GEMM_UP : CONV_K_WINO_GEMM,
                               &(conv_products){16 * v.G, FO, CI, d.T, r.u, r.v, r.m}));
    TRY(clnet_pass_run(p, CONV_K_WINO_OUTPUT, KERNEL("conv_winograd", "", "wino_output"), 3,
                       (size_t[]){d.TW, rows, d.F}, NULL,
                       ARGS(U32(ch->s), U32(d.F), U32(D), U32(d.OH), U32(d.OW), U32(d.TH),
                            U32(d.TW), MEM(p->work), U32(r.m), MEM(p->params), U32(ch->bo),
                            U32(o.bias), U32(o.relu), U32(o.add), MEM(dst), U32(doff))));
cleanup:
    return status;
}

/* y = the transforms' convolution of x + bias (then the relu). It writes no
 * statistics for a batch norm after it (records: the batch norm takes its
 * own). */
static clnet_status forward_chunk(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                                  float beta) {
    if (!fits(node)) return conv_implicit.forward(node, p, ch, beta);
    conv_output_flags o = conv_forward_flags(node, p);
    o.stats = 0;
    return transformed(node, p, ch, 0, o);
}

/* dW as the implicit algorithm makes it, on this chunk; dx by the transforms. */
static clnet_status backward_chunk(const clnet_node *node, const clnet_pass *p,
                                   const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    if (!fits(node)) return conv_implicit.backward(node, p, ch, beta);
    if (ch->makes & CONV_MAKES_DW) {
        conv_chunk weight = *ch;
        weight.makes = CONV_MAKES_DW;
        TRY(conv_implicit.backward(node, p, &weight, beta));
    }
    if (ch->makes & CONV_MAKES_DX)
        TRY(transformed(node, p, ch, 1, (conv_output_flags){.add = clnet_dx_add(p, 0)}));
cleanup:
    return status;
}

/* 3x3 layers at stride 1 with at least this many channels a group on both
 * sides: the products over the channels are what the sixteen multiplications
 * save on (2.25 times fewer than the direct sum's), where the transforms'
 * memory passes cost the same whatever the channels. A first estimate, for
 * GPUs (ResNet-18's 3x3 layers at stride 1 from 64 channels on; its stem and
 * LeNet's layers stay on implicit), to be measured there (bench/gpu_check.sh;
 * `clnet tune` times both). */
#define WINOGRAD_MIN_CHANNELS 32

/* A transposed convolution: the implicit algorithm's passes. */
static clnet_status transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                            const conv_chunk *ch, float beta) {
    return conv_implicit.transpose_forward(node, p, ch, beta);
}

static clnet_status transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                             const conv_chunk *ch, float beta) {
    return conv_implicit.transpose_backward(node, p, ch, beta);
}

static int rule(const clnet_node *node, const clnet_device *d) {
    conv_sides v = conv_sides_of(node);
    return d && d->info.type == CLNET_DEVICE_GPU && fits(node) &&
           v.Cb / v.G >= WINOGRAD_MIN_CHANNELS && v.Cs / v.G >= WINOGRAD_MIN_CHANNELS;
}

/* Timed by the tuner where it fits (elsewhere it is the implicit algorithm). */
static int tried(const clnet_node *node, const clnet_device *d) {
    (void)d;
    return fits(node);
}

/* Its chunks are the implicit algorithm's, with room for both: the weight
 * gradient runs as that algorithm's on them. */
static size_t per_sample(const clnet_node *node, const clnet_device *d) {
    size_t own = fits(node) ? layout(node, 2).end - layout(node, 1).end : 0;
    return conv_most(own, conv_implicit.per_sample(node, d));
}

static size_t regions(const clnet_node *node, const clnet_device *d, int s) {
    size_t own = fits(node) ? layout(node, s).end : 0;
    return conv_most(own, conv_implicit.regions(node, d, s));
}

static size_t scratch(const clnet_node *node, const clnet_device *d, int s) {
    return conv_implicit.scratch(node, d, s);
}

static size_t records(const clnet_node *node, int s) {
    return fits(node) ? 0 : conv_implicit.records(node, s);
}

const conv_algo conv_winograd = {
    .name = "winograd",
    .rule = rule,
    .tried = tried,
    .per_sample = per_sample,
    .regions = regions,
    .scratch = scratch,
    .records = records,
    .forward = forward_chunk,
    .backward = backward_chunk,
    .transpose_forward = transpose_forward_chunk,
    .transpose_backward = transpose_backward_chunk,
};
