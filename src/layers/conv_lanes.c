/* The lanes algorithm (cl/conv_lanes.cl): the tiled GEMM's micro-kernel
 * with the samples along its vectors, a product per position over the taps
 * that reach the input (none spent on padding); runs every convolution, and
 * the rules pick it on CPUs for the shapes below. */
#include "conv.h"
#include "elementwise.h"
#include "error.h"
#include "layer.h"
#include "program.h"

/* The lanes algorithm's chunks hold up to LANES_CHUNK_FLOATS of its
 * regions, a multiple of the device's lane unit where more than one fits
 * (the vectors then run full), as equal as the chunks can be. The unit: the
 * CPU tile's 64 columns; 16 elsewhere (tiles of 4 columns), where a
 * simulator computes every lane, empty or not. */
#define LANES_UNIT         64
#define LANES_UNIT_OTHERS  16
#define LANES_CHUNK_FLOATS (16u << 20) /* 64 MiB */

/* Channels a group on the big side below which the lanes' weight gradient
 * runs as dot products instead of a GEMM (below). */
#define LANES_WGEMM_MIN 32

/* The lanes' unit on d (without a device, the larger). */
static size_t lanes_unit(const clnet_device *d) {
    return d && !d->vector_cpu ? LANES_UNIT_OTHERS : LANES_UNIT;
}

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
    conv_sides v = conv_sides_of(node);
    size_t Cg = v.Cb / v.G, unit = lanes_unit(d);
    lanes_layout l = {.wgemm = Cg >= LANES_WGEMM_MIN,
                      .ldn = ((size_t)s + unit - 1) / unit * unit,
                      .Cgp = (Cg + unit - 1) / unit * unit};
    size_t big = v.Cb * v.Pb * l.ldn, small = v.Cs * v.Ps * l.ldn;
    l.big = conv_round16(l.wt + v.Cs * Cg * v.K);
    l.small = conv_round16(l.big + big);
    l.out = conv_round16(l.small + small);
    l.last = conv_round16(l.out + conv_most(big, small));
    l.end = conv_round16(l.last + (l.wgemm ? v.G * l.Cgp * v.Pb * l.ldn : 0));
    return l;
}

static size_t lanes_floats(const clnet_node *node, const clnet_device *d, int s) {
    return lanes_layout_of(node, d, s).end;
}

static size_t lanes_per_sample(const clnet_node *node, const clnet_device *d) {
    conv_sides v = conv_sides_of(node);
    lanes_layout l = lanes_layout_of(node, d, 1);
    return v.Cb * v.Pb + v.Cs * v.Ps + conv_most(v.Cb * v.Pb, v.Cs * v.Ps) +
           (l.wgemm ? v.G * l.Cgp * v.Pb : 0);
}

static size_t lanes_sums_floats(const clnet_node *node, const clnet_device *d, int s) {
    conv_sides v = conv_sides_of(node);
    size_t ldn = lanes_layout_of(node, d, s).ldn;
    return conv_most(clnet_row_sums_floats(v.Cs, v.Ps * ldn),
                     clnet_row_sums_floats(v.Cb, v.Pb * ldn));
}

/* What the lanes kernels of one chunk share. */
typedef struct {
    const clnet_pass *p;
    const conv_chunk *ch;
    const clnet_window *w;
    conv_sides v;
    lanes_layout l;
    conv_tile t;
    char opt[160];
} lanes_run;

static lanes_run lanes_begin(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch) {
    lanes_run r = {.p = p,
                   .ch = ch,
                   .w = CONV_WINDOW(node),
                   .v = conv_sides_of(node),
                   .l = lanes_layout_of(node, p->d, ch->s),
                   .t = conv_tile_of(node, p->d, 1)};
    conv_tile_options(node, &r.t, r.opt, sizeof r.opt);
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
    return clnet_pass_run(p, CONV_K_LANES_IN, KERNEL("conv_lanes", r->opt, "lanes_in"), 3,
                          (size_t[]){move_blocks(P), move_blocks(r->l.ldn), C}, NULL,
                          ARGS(U32(r->ch->s), U32(C), U32(P), U32(r->l.ldn), MEM(t), U32(off),
                               MEM(p->act), U32(p->y + r->ch->small), U32(relu), MEM(p->work),
                               U32(to)));
}

/* The chunk's (s, C, P) tensor at (t, off) = work + from (C, P, ldn), with `f` */
static clnet_status lanes_out(const lanes_run *r, size_t C, size_t P, size_t from, cl_mem t,
                              size_t off, conv_output_flags f) {
    const clnet_pass *p = r->p;
    return clnet_pass_run(p, CONV_K_LANES_OUT, KERNEL("conv_lanes", r->opt, "lanes_out"), 3,
                          (size_t[]){move_blocks(P), move_blocks((size_t)r->ch->s), C}, NULL,
                          ARGS(U32(r->ch->s), U32(C), U32(P), U32(r->l.ldn), MEM(p->work),
                               U32(from), MEM(p->params), U32(r->ch->bo), MEM(t), U32(off),
                               U32(f.bias), U32(f.relu), U32(f.add), CONV_STATS_ARGS(p, r->ch, f)));
}

/* work + `to` = the down product (up = 0: the small side from the big side at
 * `from`, A = W) or the up product (up = 1: the big side from the small
 * side, A = W with its channel axes swapped, made here by the pass's first
 * chunk), every group and position in one launch */
static clnet_status lanes_product(const lanes_run *r, int up, size_t from, size_t to) {
    clnet_status status = CLNET_OK;
    const clnet_pass *p = r->p;
    const conv_sides *v = &r->v;
    size_t Fg = v->Cs / v->G, Cg = v->Cb / v->G, ldn = r->l.ldn;
    size_t M = up ? Cg : Fg, CH = up ? Fg : Cg, Pin = up ? v->Ps : v->Pb, Pout = up ? v->Pb : v->Ps;
    size_t nr = (size_t)(r->t.nv * r->t.vw), mblocks = (M + (size_t)r->t.mr - 1) / (size_t)r->t.mr;
    int cpu = p->d->vector_cpu;
    size_t mb = cpu ? mblocks : 1; /* CPUs: a work-item runs down all of C's rows */
    if (up && r->ch->first)
        TRY(clnet_pass_run(p, CONV_K_LANES_FLIP, KERNEL("conv_lanes", r->opt, "lanes_flip"), 2,
                           (size_t[]){v->Cb, Fg}, NULL,
                           ARGS(U32(v->G), U32(Fg), U32(Cg), U32(v->K), MEM(p->params),
                                U32(r->ch->wo), MEM(p->work), U32(r->l.wt))));
    TRY(clnet_pass_run(p, CONV_K_LANES_GEMM, KERNEL("conv_lanes", r->opt, "lanes_gemm"), 3,
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
    const conv_sides *v = &r->v;
    const lanes_layout *l = &r->l;
    size_t Fg = v->Cs / v->G, Cg = v->Cb / v->G, nv = (size_t)r->t.nv, mr = (size_t)r->t.mr;
    if (!l->wgemm) {
        if (!have_lanes) TRY(lanes_in(r, v->Cb, v->Pb, t, off, 0, l->big));
        return clnet_pass_run(p, CONV_K_LANES_WGRAD, KERNEL("conv_lanes", r->opt, "lanes_wgrad"), 3,
                              (size_t[]){(Cg + nv - 1) / nv, (Fg + mr - 1) / mr, v->G * v->K}, NULL,
                              ARGS(WIN(r->w), U32(Fg), U32(Cg), U32(l->ldn), MEM(p->work),
                                   U32(l->small), MEM(p->work), U32(l->big), F32(beta),
                                   MEM(p->grads), U32(r->ch->wo)));
    }
    TRY(clnet_pass_run(p, CONV_K_LANES_IN_LAST, KERNEL("conv_lanes", r->opt, "lanes_in_last"), 3,
                       (size_t[]){move_blocks(v->Pb), move_blocks(l->Cgp), (size_t)r->ch->s * v->G},
                       NULL,
                       ARGS(U32(r->ch->s), U32(v->G), U32(Cg), U32(l->Cgp), U32(v->Pb), U32(l->ldn),
                            MEM(t), U32(off), MEM(p->work), U32(l->last))));
    size_t nr = (size_t)(r->t.nv * r->t.vw), mblocks = (Fg + mr - 1) / mr;
    size_t mb = 1, tg = 0, ob = wgemm_positions(r);
    if (p->d->vector_cpu) wgemm_split(mblocks, v->K, p->d, &mb, &tg);
    TRY(clnet_pass_run(p, CONV_K_LANES_WGEMM, KERNEL("conv_lanes", r->opt, "lanes_wgemm"), 3,
                       tg ? (size_t[]){1, (mblocks + mb - 1) / mb, v->G * tg}
                          : (size_t[]){(Cg + nr - 1) / nr, mblocks, v->G * v->K},
                       tg ? (size_t[]){1, 1, 1} : NULL,
                       ARGS(WIN(r->w), U32(Fg), U32(Cg), U32(l->Cgp), U32(r->ch->s), U32(l->ldn),
                            U32(mb), U32(tg), U32(ob), MEM(p->work), U32(l->small), MEM(p->work),
                            U32(l->last), F32(beta), MEM(p->grads), U32(r->ch->wo))));
cleanup:
    return status;
}

/* A side of the chunk as the passes move it: C channels of P positions, at
 * `at` in a tensor of the side and in region `lanes` of work. */
typedef struct {
    size_t C, P, at, lanes;
} lanes_side;

static lanes_side side_of(const lanes_run *r, int big) {
    return big ? (lanes_side){r->v.Cb, r->v.Pb, r->ch->big, r->l.big}
               : (lanes_side){r->v.Cs, r->v.Ps, r->ch->small, r->l.small};
}

/* A forward pass: y = the down product of x's lanes (a convolution: x the
 * big side) or the up product (transposed: x the small side), + bias, then
 * the relu taken in. */
static clnet_status forward(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                            int transposed) {
    clnet_status status = CLNET_OK;
    lanes_run r = lanes_begin(node, p, ch);
    lanes_side x = side_of(&r, !transposed), y = side_of(&r, transposed);
    TRY(lanes_in(&r, x.C, x.P, p->act, p->x[0] + x.at, 0, x.lanes));
    TRY(lanes_product(&r, transposed, x.lanes, r.l.out));
    TRY(lanes_out(&r, y.C, y.P, r.l.out, p->act, p->y + y.at, conv_forward_flags(node, p)));
cleanup:
    return status;
}

/* A backward pass: dy's lanes (a convolution's only where y > 0 with the
 * relu taken in), their row sums for the bias, dW from them and the big
 * side (x, or a transposed convolution's dy, whose small side x gets its
 * lanes first), then dx = the other product of dy's lanes. */
static clnet_status backward(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                             float beta, int transposed) {
    clnet_status status = CLNET_OK;
    lanes_run r = lanes_begin(node, p, ch);
    lanes_side dy = side_of(&r, transposed), x = side_of(&r, !transposed);
    int relu = !transposed && conv_took_relu(node);
    TRY(lanes_in(&r, dy.C, dy.P, p->dact, p->dy + dy.at, relu, dy.lanes));
    if (ch->makes & CONV_MAKES_DW) {
        if (conv_has_bias(node)) TRY(conv_bias_sums(p, ch, dy.C, dy.P * r.l.ldn, dy.lanes, beta));
        if (transposed) {
            TRY(lanes_in(&r, x.C, x.P, p->act, p->x[0] + x.at, 0, x.lanes));
            TRY(lanes_weight(&r, p->dact, p->dy + ch->big, 1, beta));
        } else {
            TRY(lanes_weight(&r, p->act, p->x[0] + ch->big, 0, beta));
        }
    }
    if (ch->makes & CONV_MAKES_DX) {
        TRY(lanes_product(&r, !transposed, dy.lanes, r.l.out));
        TRY(lanes_out(&r, x.C, x.P, r.l.out, p->dact, p->dx[0] + x.at,
                      (conv_output_flags){.add = clnet_dx_add(p, 0)}));
    }
cleanup:
    return status;
}

static clnet_status forward_chunk(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                                  float beta) {
    (void)beta;
    return forward(node, p, ch, 0);
}

static clnet_status backward_chunk(const clnet_node *node, const clnet_pass *p,
                                   const conv_chunk *ch, float beta) {
    return backward(node, p, ch, beta, 0);
}

static clnet_status transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                            const conv_chunk *ch, float beta) {
    (void)beta;
    return forward(node, p, ch, 1);
}

static clnet_status transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                             const conv_chunk *ch, float beta) {
    return backward(node, p, ch, beta, 1);
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

/* Channels a group on either side below which the rules leave a layer to
 * im2col or implicit. LeNet's conv2 (20 -> 50 on 13x13, 81 positions) trains
 * LeNet about 1.35x faster on lanes (its weight gradient as dot products)
 * than on im2col (EPYC VM, 2026-11-28); resnet18_w16's 16 -> 32 layer at
 * stride 2 runs level or faster. */
#define LANES_MIN_CHANNELS 16

static int rule(const clnet_node *node, const clnet_device *d) {
    if (!d || !d->vector_cpu) return 0;
    conv_sides v = conv_sides_of(node);
    return !CLNET_CONFIG(node, conv_config)->transpose && v.K > 1 &&
           v.Cb / v.G >= LANES_MIN_CHANNELS && v.Cs / v.G >= LANES_MIN_CHANNELS &&
           v.Ps <= LANES_MOST_POSITIONS;
}

/* Timed by the tuner on CPUs alone: its vectors along the samples are made
 * for a CPU's SIMD units; elsewhere it stays what it is on every device, an
 * algorithm that runs every convolution when it is forced. */
static int tried(const clnet_node *node, const clnet_device *d) {
    (void)node;
    return !d || d->vector_cpu;
}

static int lanes_chunk_samples(const clnet_node *node, const clnet_device *d, int n) {
    size_t most = LANES_CHUNK_FLOATS / lanes_per_sample(node, d), unit = lanes_unit(d);
    return conv_even_chunks(n, most >= unit ? most / unit * unit : most);
}

static size_t regions(const clnet_node *node, const clnet_device *d, int s) {
    return lanes_floats(node, d, s);
}

/* the row sums, over whole lanes */
static size_t scratch(const clnet_node *node, const clnet_device *d, int s) {
    return lanes_sums_floats(node, d, s);
}

/* One record a block of 8 positions x 8 samples (lanes_out). */
static size_t records(const clnet_node *node, int s) {
    return ((size_t)s + 7) / 8 * ((conv_sides_of(node).Ps + 7) / 8);
}

const conv_algo conv_lanes = {
    .name = "lanes",
    .rule = rule,
    .tried = tried,
    .chunk_samples = lanes_chunk_samples,
    .regions = regions,
    .scratch = scratch,
    .records = records,
    .forward = forward_chunk,
    .backward = backward_chunk,
    .transpose_forward = transpose_forward_chunk,
    .transpose_backward = transpose_backward_chunk,
};
