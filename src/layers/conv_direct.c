/* The direct algorithm (cl/conv_direct.cl): each pass one launch over the
 * whole layer whose work-items loop over a group's channels; runs every
 * convolution, and the rules pick it for groups of few channels
 * (depthwise), where im2col would run a thin GEMM per group. */
#include "conv.h"
#include "elementwise.h"
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stdio.h>

/* The rules' bound: channels per group, on either side. */
#define DIRECT_MAX_GROUP 8

/* The tuner leaves out the direct algorithm where a group has more channels
 * than this on the big side: its work-items loop over them one by one, and
 * on the EPYC VM it ran ResNet-18's 64- to 512-channel layers 10 to 26
 * times slower than the others, which took half of `clnet tune`'s time. */
#define DIRECT_TUNE_MAX_GROUP 32

/* The small side as the direct kernels read it: the chunk's sample 0 at
 * `off`, then strides per sample (sb) and per channel (sf). */
typedef struct {
    cl_mem mem;
    size_t off, sb, sf;
} small_view;

/* (n, Cs, P) at (mem, off) */
static small_view small_nchw(const clnet_node *node, cl_mem mem, size_t off) {
    conv_sides v = conv_sides_of(node);
    return (small_view){mem, off, v.Cs * v.Ps, v.Ps};
}

/* Sp, the GEMM layout (Cs, s * P), at the start of work */
static small_view small_gemm(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch) {
    return (small_view){p->work, 0, conv_sides_of(node).Ps, ch->NP};
}

/* What launching a direct kernel takes: the window, the sides and the
 * program's options (the window's, and where they fix the geometry, the
 * channels per group as well). */
typedef struct {
    const clnet_window *w;
    conv_sides v;
    char opt[700];
} direct_launch;

static void launch_of(const clnet_node *node, const clnet_device *d, direct_launch *l) {
    l->w = CONV_WINDOW(node);
    l->v = conv_sides_of(node);
    char extra[96] = "";
    int n = 0;
    if (clnet_window_fixed(l->w))
        n = snprintf(extra, sizeof extra, "-DCONV_CBG=%zuu -DCONV_FG=%zuu", l->v.Cb / l->v.G,
                     l->v.Cs / l->v.G);
    /* GPUs: the kernels' unrolling for registers (cl/conv_direct.cl, DIRECT_GPU) */
    if (d->info.type != CLNET_DEVICE_CPU)
        snprintf(extra + n, sizeof extra - (size_t)n, "%s-DDIRECT_GPU=1", n ? " " : "");
    clnet_window_options(l->w, extra, l->opt, sizeof l->opt);
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
static size_t view_size(const conv_chunk *ch, conv_sides v, small_view s) {
    return ((size_t)ch->s - 1) * s.sb + (v.Cs - 1) * s.sf + v.Ps;
}

/* The floats of the chunk's big side (NCDHW) */
static size_t big_size(const conv_chunk *ch, conv_sides v, const clnet_window *w) {
    return (size_t)ch->s * v.Cb * w->in[0] * w->in[1] * w->in[2];
}

/* small (+)= W . windows(big), with the flags' bias, relu and add */
static clnet_status direct_down(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                                small_view s, cl_mem big, size_t big_off, conv_output_flags f) {
    direct_launch l;
    launch_of(node, p->d, &l);
    const clnet_window *w = l.w;
    conv_sides v = l.v;
    size_t range[2] = {(size_t)w->out[1], (size_t)ch->s * v.Cs * w->out[0]};
    const char *kernel = direct_pairs(w) ? "direct_down_pairs" : "direct_down";
    return clnet_pass_run(
        p, CONV_K_DIRECT_DOWN, KERNEL("conv_direct", l.opt, kernel), 2, range, NULL,
        ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(big), U32(big_off), U32(big_size(ch, v, w)),
             MEM(p->params), U32(ch->wo), MEM(s.mem), U32(s.off), U32(s.sb), U32(s.sf),
             MEM(p->params), U32(ch->bo), U32(f.bias), U32(f.relu), U32(f.add)));
}

/* big (+)= the windows' sums of W^T . small, with the flags' bias and add */
static clnet_status direct_up(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                              small_view s, cl_mem big, size_t big_off, conv_output_flags f) {
    direct_launch l;
    launch_of(node, p->d, &l);
    const clnet_window *w = l.w;
    conv_sides v = l.v;
    size_t range[2] = {(size_t)w->in[1], (size_t)ch->s * v.Cb * w->in[0]};
    const char *kernel = direct_pairs(w) ? "direct_up_pairs" : "direct_up";
    return clnet_pass_run(p, CONV_K_DIRECT_UP, KERNEL("conv_direct", l.opt, kernel), 2, range, NULL,
                          ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(s.mem), U32(s.off), U32(s.sb),
                               U32(s.sf), U32(view_size(ch, v, s)), MEM(p->params), U32(ch->wo),
                               MEM(big), U32(big_off), MEM(p->params), U32(ch->bo), U32(f.bias),
                               U32(f.add)));
}

/* dW (+)= small . windows(big)^T: one part per sample in the column region,
 * then their sum in sample order (clnet_col_sums; beta: 0 overwrites dW, 1
 * adds) */
static clnet_status direct_weight(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                                  small_view s, cl_mem big, size_t big_off, float beta) {
    clnet_status status = CLNET_OK;
    direct_launch l;
    launch_of(node, p->d, &l);
    const clnet_window *w = l.w;
    conv_sides v = l.v;
    size_t per = v.Cs * (v.Cb / v.G);
    size_t range[3] = {v.K, per, (size_t)ch->s};
    const char *kernel = direct_pairs(w) ? "direct_weight_pairs" : "direct_weight_partial";
    TRY(clnet_pass_run(p, CONV_K_DIRECT_WEIGHT, KERNEL("conv_direct", l.opt, kernel), 3, range,
                       NULL,
                       ARGS(WIN(w), DIRECT_SIZES(ch, v), MEM(s.mem), U32(s.off), U32(s.sb),
                            U32(s.sf), U32(view_size(ch, v, s)), MEM(big), U32(big_off),
                            U32(big_size(ch, v, w)), MEM(p->work), U32(ch->col))));
    TRY(clnet_col_sums(p->d, clnet_pass_kept(p, CONV_K_DIRECT_SUMS), (size_t)ch->s, per * v.K,
                       (clnet_place){p->work, ch->col}, (clnet_place){p->grads, ch->wo}, beta));
cleanup:
    return status;
}

/* y = W . windows(x) + bias (then the relu, if taken in), in place */
static clnet_status conv_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                       const conv_chunk *ch, float beta) {
    (void)beta;
    conv_output_flags f = conv_forward_flags(node, p);
    return direct_down(node, p, ch, small_nchw(node, p->act, p->y + ch->small), p->act,
                       p->x[0] + ch->big, f);
}

/* dSp = dy in GEMM layout (only where y > 0 with the relu taken in), its row
 * sums for the bias, then dW and dx straight from it and x. */
static clnet_status conv_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                        const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    TRY(conv_output_grad(node, p, ch, beta));
    small_view dsp = small_gemm(node, p, ch);
    if (ch->makes & CONV_MAKES_DW)
        TRY(direct_weight(node, p, ch, dsp, p->act, p->x[0] + ch->big, beta));
    if (!(ch->makes & CONV_MAKES_DX)) return CLNET_OK;
    conv_output_flags f = {.add = clnet_dx_add(p, 0)};
    TRY(direct_up(node, p, ch, dsp, p->dact, p->dx[0] + ch->big, f));
cleanup:
    return status;
}

/* y = the windows' sums of W^T . x, + bias */
static clnet_status transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                            const conv_chunk *ch, float beta) {
    (void)beta;
    conv_output_flags f = conv_forward_flags(node, p);
    return direct_up(node, p, ch, small_nchw(node, p->act, p->x[0] + ch->small), p->act,
                     p->y + ch->big, f);
}

/* dbias as im2col's path has it, then dW and dx straight from x and dy. */
static clnet_status transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                             const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    TRY(conv_transpose_bias_grad(node, p, ch, beta));
    small_view x = small_nchw(node, p->act, p->x[0] + ch->small);
    if (ch->makes & CONV_MAKES_DW)
        TRY(direct_weight(node, p, ch, x, p->dact, p->dy + ch->big, beta));
    if (!(ch->makes & CONV_MAKES_DX)) return CLNET_OK;
    conv_output_flags f = {.add = clnet_dx_add(p, 0)};
    TRY(direct_down(node, p, ch, small_nchw(node, p->dact, p->dx[0] + ch->small), p->dact,
                    p->dy + ch->big, f));
cleanup:
    return status;
}

/* A chunk's column region a sample: its parts of the weight gradient, or for
 * a transposed convolution's bias gradient its output gradient in GEMM
 * layout. */
static size_t col_per_sample(const clnet_node *node) {
    conv_sides v = conv_sides_of(node);
    return conv_most(v.Cs * (v.Cb / v.G) * v.K, conv_big_per_sample(node));
}

/* Chunks bound its small side in GEMM layout too: it has no column matrix
 * to keep in cache, only memory to bound. */
static size_t per_sample(const clnet_node *node, const clnet_device *d) {
    conv_sides v = conv_sides_of(node);
    (void)d;
    return col_per_sample(node) + v.Cs * v.Ps;
}

/* Sp (Cs, s*Ps), then the column region */
static size_t regions(const clnet_node *node, const clnet_device *d, int s) {
    conv_sides v = conv_sides_of(node);
    (void)d;
    return v.Cs * (size_t)s * v.Ps + (size_t)s * col_per_sample(node);
}

/* the bias gradient's row sums */
static size_t scratch(const clnet_node *node, const clnet_device *d, int s) {
    (void)d;
    return conv_sums_floats(node, s);
}

static int rule(const clnet_node *node, const clnet_device *d) {
    conv_sides v = conv_sides_of(node);
    (void)d;
    return v.G > 1 && v.Cb / v.G <= DIRECT_MAX_GROUP && v.Cs / v.G <= DIRECT_MAX_GROUP;
}

static int tried(const clnet_node *node, const clnet_device *d) {
    conv_sides v = conv_sides_of(node);
    (void)d;
    return v.Cb / v.G <= DIRECT_TUNE_MAX_GROUP;
}

const conv_algo conv_direct = {
    .name = "direct",
    .rule = rule,
    .tried = tried,
    .per_sample = per_sample,
    .regions = regions,
    .scratch = scratch,
    .forward = conv_forward_chunk,
    .backward = conv_backward_chunk,
    .transpose_forward = transpose_forward_chunk,
    .transpose_backward = transpose_backward_chunk,
};
