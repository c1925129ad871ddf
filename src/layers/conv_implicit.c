/* The implicit-GEMM algorithm (cl/conv_implicit.cl): the tiled GEMM's
 * micro-kernel reading a zero-padded grid of the big side instead of a
 * column matrix, every group in one launch; runs every convolution. The
 * rules pick it on CPUs for the shapes below. */
#include "conv.h"
#include "elementwise.h"
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stdio.h>
#include <string.h>

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
    const clnet_window *w = CONV_WINDOW(node);
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

#define NR_MOST 64   /* the widest tile: the grids' slack holds one past the end */
#define WGRAD_Q 4096 /* grid positions per part of the weight gradient */

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
    conv_sides v = conv_sides_of(node);
    implicit_layout l = {.f = forward_grid(node), .b = backward_grid(node)};
    l.same = same_grids(&l.f, &l.b);
    l.ld = conv_round16((size_t)s * l.f.P + (l.same ? l.f.back : 0));
    l.ldb = l.f.strided ? l.ld : conv_round16((size_t)s * l.b.P);
    l.chunks = (l.ld + WGRAD_Q - 1) / WGRAD_Q;
    l.xcs = l.f.phases * (size_t)s * l.f.P;
    l.wf = 0;
    l.yp = conv_round16(l.wf + v.Cb * (v.Cs / v.G) * v.K + l.f.back);
    l.xp = conv_round16(l.yp + v.Cs * l.ld + slack(&l.f) + l.f.lead);
    l.x0 = (size_t)((long)l.xp + l.f.base);
    l.parts = conv_round16(l.xp + v.Cb * l.xcs + slack(&l.f));
    l.dyp = conv_round16(l.parts + l.chunks * v.Cs * (v.Cb / v.G) * v.K + l.b.lead);
    l.dxp = l.same ? l.dyp : conv_round16(l.dyp + v.Cs * (size_t)s * l.b.P + slack(&l.b));
    l.end =
        conv_round16(l.dxp + l.f.phases * v.Cb * l.ldb); /* a strided layer: a product a phase */
    return l;
}

static size_t implicit_floats(const clnet_node *node, int s) {
    return layout_of(node, s).end;
}

static size_t implicit_sums_floats(const clnet_node *node, int s) {
    implicit_layout l = layout_of(node, s);
    conv_sides v = conv_sides_of(node);
    return conv_most(clnet_row_sums_floats(v.Cs, l.ld), clnet_row_sums_floats(v.Cb, l.xcs));
}

/* The share of the implicit algorithm's grid positions that are outputs
 * (the rest is padding it computes and drops): ResNet-18's 3x3 layers on
 * 28x28 0.87, 14x14 0.87, 7x7 0.77, 4x4 0.64. */
static double implicit_useful(const clnet_node *node) {
    return (double)conv_sides_of(node).Ps / (double)forward_grid(node).P;
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

/* The products of a chunk: the small side from the big one's windows, the
 * big side from the small one's (a convolution's dx, a transposed one's y),
 * the weight gradient. */
enum { PRODUCT_DOWN, PRODUCT_UP, PRODUCT_WEIGHT, PRODUCTS };

/* What the implicit kernels of one chunk share: each product's tile and
 * program options (the other kernels take the down product's). */
typedef struct {
    const clnet_pass *p;
    const conv_chunk *ch;
    const clnet_window *w;
    implicit_layout l;
    conv_tile t[PRODUCTS];
    char opt[PRODUCTS][160];
} implicit_run;

static clnet_status implicit_begin(const clnet_node *node, const clnet_pass *p,
                                   const conv_chunk *ch, implicit_run *r) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    *r = (implicit_run){.p = p, .ch = ch, .w = CONV_WINDOW(node), .l = layout_of(node, ch->s)};
    size_t rows[PRODUCTS] = {v.Cs / v.G, v.Cb / v.G, v.Cs / v.G};
    for (int i = 0; i < PRODUCTS; i++) {
        TRY(conv_product_tile(node, p->d, rows[i], &r->t[i]));
        conv_tile_options(node, &r->t[i], r->opt[i], sizeof r->opt[i]);
    }
    if (v.Cb / v.G * v.K >= (1u << 24))
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "conv_implicit: %zu channels x %zu taps a group is over 2^24", v.Cb / v.G, v.K);
cleanup:
    return status;
}

/* grid g (at work + to, lead zeros before) = the view of C channels, zeros
 * around, phase by phase, then its slack */
static clnet_status pad(const implicit_run *r, size_t C, view src, const grid *g, size_t to) {
    size_t rows = C * g->phases * (size_t)r->ch->s * g->d[0];
    cl_uint4 st = {{(cl_uint)g->stride[0], (cl_uint)g->stride[1], (cl_uint)g->stride[2], 0}},
             kept = {{(cl_uint)g->kept[0], (cl_uint)g->kept[1], (cl_uint)g->kept[2], 0}};
    return clnet_pass_run(
        r->p, CONV_K_IMPLICIT_PAD, KERNEL("conv_implicit", r->opt[PRODUCT_DOWN], "implicit_pad"), 2,
        (size_t[]){g->d[1], rows + 1}, NULL,
        ARGS(U32(r->ch->s), U32(C), U32(src.size[0]), U32(src.size[1]), U32(src.size[2]),
             U32(g->shift[0]), U32(g->shift[1]), U32(g->shift[2]), VEC4(st), VEC4(kept),
             U32(g->d[0]), U32(g->d[1]), U32(g->d[2]), MEM(src.mem), U32(src.off), U32(src.sb),
             U32(src.sc), U32(src.sz), U32(src.sy), MEM(r->p->work), U32(to), U32(g->lead),
             U32(slack(g))));
}

/* A product of implicit_product: for each of G groups, c (M x the grid's
 * positions) = a (M x CH * K) . the windows of CH channels of a grid at x
 * (its ld the channel stride), the groups' operands one after another (a's
 * M rows, x's CH channels, c's M rows). x and c lie in the pass's work. */
typedef struct {
    int which; /* PRODUCT_DOWN or PRODUCT_UP: its tile */
    size_t G, M, CH;
    clnet_matrix a;
    size_t x, xcs, c, ldc;
} product;

/* The kernel slot of a product's implicit_gemm: its own, as the two may be
 * built with different tiles. */
static int product_slot(int which) {
    return which == PRODUCT_UP ? CONV_K_IMPLICIT_GEMM_UP : CONV_K_IMPLICIT_GEMM;
}

/* How one launch of implicit_gemm runs: its kernel (slot, tile and options)
 * and, with a tile without local memory, the runs of `run` columns of which
 * its first `tiles` tiles are computed, `runs` of them. */
typedef struct {
    int slot;
    const conv_tile *tile;
    const char *opt;
    size_t run, tiles, runs;
} launch;

/* m as G products of N columns over taps t, in one launch l. */
static clnet_status run_product(const clnet_pass *p, const launch *l, const product *m, size_t N,
                                taps t) {
    const conv_tile *tile = l->tile;
    size_t M = m->M, CH = m->CH, lda = m->a.ld, xcs = m->xcs, ldc = m->ldc;
    size_t global[3], local[3] = {(size_t)tile->wgn, (size_t)tile->wgm, 1}, mb = 1;
    size_t run = l->run, tiles = l->tiles;
    if (tile->kl) { /* local tiles: the work-group's, over all of N */
        size_t tm = (size_t)(tile->mr * tile->wgm), tn = (size_t)(tile->nv * tile->vw * tile->wgn);
        global[0] = (N + tn - 1) / tn * local[0];
        global[1] = (M + tm - 1) / tm * local[1];
        run = N, tiles = 1;
    } else {
        size_t mblocks = (M + (size_t)tile->mr - 1) / (size_t)tile->mr;
        mb = p->d->vector_cpu ? mblocks : 1; /* CPUs: a work-item runs down all of C's rows */
        global[0] = l->runs * tiles;
        global[1] = (mblocks + mb - 1) / mb;
        local[0] = local[1] = local[2] = 1;
    }
    global[2] = m->G;
    return clnet_pass_run(p, l->slot, KERNEL("conv_implicit", l->opt, "implicit_gemm"), 3, global,
                          tile->kl || p->d->vector_cpu ? local : NULL,
                          ARGS(U32(M), U32(N), U32(run), U32(tiles), U32(CH), U32(mb),
                               MEM(m->a.mem), U32(m->a.off), U32(lda), U32(M * lda), MEM(p->work),
                               U32(m->x), U32(xcs), U32(CH * xcs), VEC4(t.dil), VEC4(t.stride),
                               VEC4(t.kept), VEC4(t.step), VEC4(t.want), F32(0.0f), MEM(p->work),
                               U32(m->c), U32(ldc), U32(M * ldc)));
}

/* m over grid g with taps t, in one launch. With `valid` (the result's size
 * along each axis), a sample's positions past its last valid one are
 * skipped where that saves tiles (tiles without local memory). */
static clnet_status implicit_product(const implicit_run *r, const product *m, const grid *g, taps t,
                                     const int *valid) {
    const conv_tile *tile = &r->t[m->which];
    size_t N = (size_t)r->ch->s * g->P, nr = (size_t)(tile->nv * tile->vw);
    launch l = {product_slot(m->which), tile, r->opt[m->which], N, (N + nr - 1) / nr, 1};
    if (valid && !tile->kl) {
        size_t last =
            (((size_t)valid[0] - 1) * g->d[1] + (size_t)valid[1] - 1) * g->d[2] + (size_t)valid[2];
        size_t per = (last + nr - 1) / nr;
        if (per * (size_t)r->ch->s < l.tiles)
            l.run = g->P, l.tiles = per, l.runs = (size_t)r->ch->s;
    }
    return run_product(r->p, &l, m, N, t);
}

clnet_status conv_implicit_products(const clnet_node *node, const clnet_pass *p, int slot,
                                    const conv_products *q) {
    clnet_status status = CLNET_OK;
    conv_tile tile;
    char opt[160];
    TRY(conv_product_tile(node, p->d, q->M, &tile));
    conv_tile_options_taps(&tile, (const int[]){1, 1, 1}, opt, sizeof opt);
    size_t nr = (size_t)(tile.nv * tile.vw);
    launch l = {slot, &tile, opt, q->N, (q->N + nr - 1) / nr, 1};
    product m = {PRODUCT_DOWN, q->count, q->M, q->K, {p->work, q->a, q->K}, q->b, q->N, q->c, q->N};
    grid one = {.d = {1, 1, 1},
                .P = 1,
                .stride = {1, 1, 1},
                .dil = {1, 1, 1},
                .kept = {1, 1, 1},
                .phases = 1};
    TRY(run_product(p, &l, &m, q->N, forward_taps(&one, 0)));
cleanup:
    return status;
}

/* The tensor `to` (n, F, out...), F its channels, = the valid positions of
 * grid g's result (F rows of ld at work + from), with the flags' bias, relu
 * and add. With `phased` (a strided layer's input gradient): out's position
 * o + pad of each axis from phase (o + pad) % stride's result (those one
 * after another, F rows of ld each). */
static clnet_status from_grid(const implicit_run *r, const grid *g, int phased, size_t from,
                              size_t ld, conv_tensor to, const int *out, conv_output_flags f) {
    const clnet_pass *p = r->p;
    size_t F = to.C;
    const clnet_window *w = r->w;
    cl_uint4 st = {{1, 1, 1, 0}}, kept = {{1, 1, 1, 0}}, lo = {{0, 0, 0, 0}};
    for (int a = 0; a < 3 && phased; a++) {
        st.s[a] = (cl_uint)g->stride[a];
        kept.s[a] = (cl_uint)g->kept[a];
        lo.s[a] = (cl_uint)w->p[a];
    }
    return clnet_pass_run(
        p, CONV_K_IMPLICIT_OUTPUT, KERNEL("conv_implicit", r->opt[PRODUCT_DOWN], "implicit_output"),
        2, (size_t[]){(size_t)out[1], (size_t)r->ch->s * F * out[0]}, NULL,
        ARGS(U32(r->ch->s), U32(F), U32(out[0]), U32(out[1]), U32(out[2]), U32(g->d[0]),
             U32(g->d[1]), U32(g->d[2]), U32(g->P), U32(ld), VEC4(st), VEC4(kept), VEC4(lo),
             U32(F * ld), MEM(p->work), U32(from), MEM(p->params), U32(r->ch->bo), MEM(to.mem),
             U32(to.off), U32(f.bias), U32(f.relu), U32(f.add), CONV_STATS_ARGS(p, r->ch, f)));
}

/* The small side at (t, off) = W . the windows of the big side's grid (at
 * xp, made by pad), every group in one launch, with the flags' bias, relu
 * and add: a convolution's y, a transposed convolution's dx. */
static clnet_status implicit_down(const clnet_node *node, const implicit_run *r, cl_mem t,
                                  size_t off, conv_output_flags o) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    const grid *f = &r->l.f;
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G;
    product m = {PRODUCT_DOWN, v.G,      Fg,      Cg,     {r->p->params, r->ch->wo, Cg * v.K},
                 r->l.x0,      r->l.xcs, r->l.yp, r->l.ld};
    TRY(implicit_product(r, &m, f, forward_taps(f, r->ch->s), r->w->out));
    TRY(from_grid(r, f, 0, r->l.yp, r->l.ld, (conv_tensor){t, off, v.Cs, 0}, r->w->out, o));
cleanup:
    return status;
}

/* y = W . the windows of x's grid + bias (then the relu) */
static clnet_status implicit_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                           const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    implicit_run r;
    TRY(implicit_begin(node, p, ch, &r));
    (void)beta;
    TRY(pad(&r, v.Cb, nchw_view(p->act, p->x[0] + ch->big, v.Cb, r.w->in), &r.l.f, r.l.xp));
    conv_output_flags o = conv_forward_flags(node, p);
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
    conv_sides v = conv_sides_of(node);
    const conv_tile *tile = &r->t[PRODUCT_WEIGHT];
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G, global[3];
    size_t local[3] = {(size_t)tile->wgn, (size_t)tile->wgm, 1};
    if (tile->kl) { /* the work-group's tiles of Fg rows by Cg * K columns, group by group */
        size_t tm = (size_t)(tile->mr * tile->wgm), tn = (size_t)(tile->nv * tile->vw * tile->wgn);
        global[0] = (Cg * v.K + tn - 1) / tn * local[0];
        global[1] = (Fg + tm - 1) / tm * local[1];
        global[2] = r->l.chunks * v.G;
    } else { /* a register block of wr rows by wt taps a work-item (no wt in a local tile) */
        size_t wr = (size_t)tile->wr, wt = (size_t)tile->wt;
        global[0] = v.Cb * ((v.K + wt - 1) / wt);
        global[1] = (Fg + wr - 1) / wr;
        global[2] = r->l.chunks;
    }
    taps t = forward_taps(f, r->ch->s);
    TRY(clnet_pass_run(
        p, CONV_K_IMPLICIT_WGRAD, KERNEL("conv_implicit", r->opt[PRODUCT_WEIGHT], "implicit_wgrad"),
        3, global, tile->kl ? local : NULL,
        ARGS(U32(Fg), U32(Cg), U32(v.G), U32(r->l.ld), U32(WGRAD_Q), MEM(p->work), U32(r->l.yp),
             U32(r->l.ld), MEM(p->work), U32(r->l.x0), U32(r->l.xcs), VEC4(t.dil), VEC4(t.stride),
             VEC4(t.kept), VEC4(t.step), MEM(p->work), U32(r->l.parts))));
    TRY(clnet_col_sums(p->d, clnet_pass_kept(p, CONV_K_IMPLICIT_SUMS), r->l.chunks, v.Cs * Cg * v.K,
                       (clnet_place){p->work, r->l.parts}, (clnet_place){p->grads, r->ch->wo},
                       beta));
cleanup:
    return status;
}

/* A strided layer's input gradient: one product a kept phase of dx over
 * dYp, read backwards (the others no tap reaches: zeros). */
static clnet_status phase_products(const clnet_node *node, const implicit_run *r) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    const grid *f = &r->l.f;
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G, ld = r->l.ld, at = r->l.dxp;
    int ph[3];
    for (ph[0] = 0; ph[0] < f->kept[0]; ph[0]++)
        for (ph[1] = 0; ph[1] < f->kept[1]; ph[1]++)
            for (ph[2] = 0; ph[2] < f->kept[2]; ph[2]++, at += v.Cb * ld)
                TRY(implicit_product(r,
                                     &(product){PRODUCT_UP,
                                                v.G,
                                                Cg,
                                                Fg,
                                                {r->p->work, r->l.wf, Fg * v.K},
                                                r->l.yp,
                                                ld,
                                                at,
                                                ld},
                                     f, phase_taps(f, ph), NULL));
cleanup:
    return status;
}

/* The big side at (t, off) = the reversed, transposed W . the windows of the
 * small side's grid (Yp, made by small_grid), every group in one launch, with
 * the flags' bias and add: a convolution's dx, a transposed convolution's y.
 * Yp itself where the grids are alike, else Yp moved to the up grid; or a
 * product a phase (strided layers). */
static clnet_status implicit_up(const clnet_node *node, const implicit_run *r, cl_mem t, size_t off,
                                conv_output_flags o) {
    clnet_status status = CLNET_OK;
    const clnet_pass *p = r->p;
    conv_sides v = conv_sides_of(node);
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G;
    const grid *f = &r->l.f, *b = f->strided ? f : &r->l.b;
    size_t dy = r->l.yp, ycs = r->l.ld;
    if (!r->l.same) {
        view from = {p->work, r->l.yp, f->P, r->l.ld, f->d[1] * f->d[2], f->d[2], r->w->out};
        TRY(pad(r, v.Cs, from, b, r->l.dyp));
        dy = r->l.dyp, ycs = (size_t)r->ch->s * b->P;
    }
    if (r->ch->first)
        TRY(clnet_pass_run(p, CONV_K_IMPLICIT_FLIP,
                           KERNEL("conv_implicit", r->opt[PRODUCT_DOWN], "implicit_flip"), 1,
                           (size_t[]){v.Cb * Fg * v.K}, NULL,
                           ARGS(U32(v.G), U32(Fg), U32(Cg), U32(v.K), MEM(p->params),
                                U32(r->ch->wo), MEM(p->work), U32(r->l.wf))));
    if (f->strided)
        TRY(phase_products(node, r));
    else
        TRY(implicit_product(r,
                             &(product){PRODUCT_UP,
                                        v.G,
                                        Cg,
                                        Fg,
                                        {p->work, r->l.wf, Fg * v.K},
                                        (size_t)((long)dy + b->base),
                                        ycs,
                                        r->l.dxp,
                                        r->l.ldb},
                             b, forward_taps(b, r->ch->s), r->w->in));
    TRY(from_grid(r, b, f->strided, r->l.dxp, r->l.ldb, (conv_tensor){t, off, v.Cb, 0}, r->w->in,
                  o));
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
    return clnet_pass_run(p, CONV_K_IMPLICIT_TO_GRID,
                          KERNEL("conv_implicit", r->opt[PRODUCT_DOWN],
                                 relu ? "implicit_to_grid_relu" : "implicit_to_grid"),
                          2, (size_t[]){f->d[1], Cs * (size_t)r->ch->s * f->d[0] + Cs}, NULL,
                          ARGS(U32(r->ch->s), U32(Cs), U32(out[0]), U32(out[1]), U32(out[2]),
                               U32(f->d[0]), U32(f->d[1]), U32(f->d[2]), U32(r->l.ld), MEM(t),
                               U32(off), MEM(p->act), U32(p->y + r->ch->small), MEM(p->work),
                               U32(r->l.yp), U32(r->l.same ? f->back : 0), U32(slack(f))));
}

/* dYp = dy on the forward grid, its row sums for the bias, x's grid again,
 * then dW and dx. */
static clnet_status implicit_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                            const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    implicit_run r;
    TRY(implicit_begin(node, p, ch, &r));
    TRY(small_grid(&r, v.Cs, p->dact, p->dy + ch->small, (int)conv_took_relu(node)));
    if (ch->makes & CONV_MAKES_DW) {
        if (conv_has_bias(node)) TRY(conv_bias_sums(p, ch, v.Cs, r.l.ld, r.l.yp, beta));
        TRY(pad(&r, v.Cb, nchw_view(p->act, p->x[0] + ch->big, v.Cb, r.w->in), &r.l.f, r.l.xp));
        TRY(implicit_weight(node, &r, beta));
    }
    if (ch->makes & CONV_MAKES_DX)
        TRY(implicit_up(node, &r, p->dact, p->dx[0] + ch->big,
                        (conv_output_flags){.add = clnet_dx_add(p, 0)}));
cleanup:
    return status;
}

/* A transposed convolution: y = the up product of x's grid + bias. */
static clnet_status implicit_transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                                     const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    implicit_run r;
    TRY(implicit_begin(node, p, ch, &r));
    (void)beta;
    TRY(small_grid(&r, conv_sides_of(node).Cs, p->act, p->x[0] + ch->small, 0));
    TRY(implicit_up(node, &r, p->act, p->y + ch->big, conv_forward_flags(node, p)));
cleanup:
    return status;
}

/* and backward: dy's grid, its row sums for the bias, x's grid, dW, then dx
 * = the down product of dy's grid. */
static clnet_status implicit_transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                                      const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    implicit_run r;
    TRY(implicit_begin(node, p, ch, &r));
    TRY(pad(&r, v.Cb, nchw_view(p->dact, p->dy + ch->big, v.Cb, r.w->in), &r.l.f, r.l.xp));
    if (ch->makes & CONV_MAKES_DW) {
        if (conv_has_bias(node)) TRY(conv_bias_sums(p, ch, v.Cb, r.l.xcs, r.l.xp, beta));
        TRY(small_grid(&r, v.Cs, p->act, p->x[0] + ch->small, 0));
        TRY(implicit_weight(node, &r, beta));
    }
    if (ch->makes & CONV_MAKES_DX)
        TRY(implicit_down(node, &r, p->dact, p->dx[0] + ch->small,
                          (conv_output_flags){.add = clnet_dx_add(p, 0)}));
cleanup:
    return status;
}

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
    const clnet_window *w = CONV_WINDOW(node);
    return w->s[0] > 1 || w->s[1] > 1 || w->s[2] > 1;
}

/* Whether the rules run the node with the implicit algorithm: on a GPU
 * every convolution the rules before it leave (the depthwise ones go to
 * direct): its local-memory tiles read the input where im2col writes and
 * reads a column matrix of it (42% of ResNet-18's kernel time on an H200
 * with im2col and CLBlast, docs/performance.md). On a CPU (it can run every
 * convolution), given IMPLICIT_MIN_K or _MIN_FILTERS: at stride 1 with
 * enough of its grid useful, strided with a short k, and every transposed
 * convolution (the EPYC VM ran both of bench_conv's 1.1-1.9x faster than
 * im2col). */
static int rule(const clnet_node *node, const clnet_device *d) {
    if (d && d->info.type == CLNET_DEVICE_GPU) return 1;
    if (!d || !d->vector_cpu) return 0;
    conv_sides v = conv_sides_of(node);
    size_t k = v.Cb / v.G * v.K;
    if (k < IMPLICIT_MIN_K && v.Cs < IMPLICIT_MIN_FILTERS) return 0;
    if (CLNET_CONFIG(node, conv_config)->transpose) return 1;
    if (strided(node)) return v.K > 1 && k < IMPLICIT_MAX_K_STRIDED;
    return implicit_useful(node) >= IMPLICIT_MIN_USEFUL;
}

/* What a sample adds to a chunk: the weight's copies are per chunk. */
static size_t per_sample(const clnet_node *node, const clnet_device *d) {
    (void)d;
    return implicit_floats(node, 2) - implicit_floats(node, 1);
}

static size_t regions(const clnet_node *node, const clnet_device *d, int s) {
    (void)d;
    return implicit_floats(node, s);
}

/* the row sums, over the grids' rows */
static size_t scratch(const clnet_node *node, const clnet_device *d, int s) {
    (void)d;
    return conv_most(conv_sums_floats(node, s), implicit_sums_floats(node, s));
}

/* One record an output row of a sample (implicit_output). */
static size_t records(const clnet_node *node, int s) {
    const int *out = CONV_WINDOW(node)->out;
    return (size_t)s * (size_t)out[0] * (size_t)out[1];
}

const conv_algo conv_implicit = {
    .name = "implicit",
    .rule = rule,
    .per_sample = per_sample,
    .regions = regions,
    .scratch = scratch,
    .records = records,
    .forward = implicit_forward_chunk,
    .backward = implicit_backward_chunk,
    .transpose_forward = implicit_transpose_forward_chunk,
    .transpose_backward = implicit_transpose_backward_chunk,
};
