/* The im2col algorithm: the column matrix of a chunk (cl/conv.cl) and the
 * device's GEMMs over it, group by group (gemm.h's candidates); runs every
 * convolution. The weight is, as a matrix, W (Cs, Cb/G * K): one row per
 * channel of the small side, K the taps of a window. Then
 *   down: col = im2col(big), Sp = W . col             (conv forward, transpose dx)
 *   up:   dcol = W^T . Sp, big = col2im(dcol)         (conv dx, transpose forward)
 *   dW += Sp . col^T, col = im2col(big)               (both weight gradients)
 * with Sp the small side in GEMM layout (Cs, n * Ps), at the start of a
 * chunk's work, and the column region after it. */
#include "conv.h"
#include "elementwise.h"
#include "error.h"
#include "gemm.h"
#include "layer.h"
#include "program.h"

/* col (Cb*K, s*Ps) = im2col of the chunk's big-side tensor in `big` */
static clnet_status im2col(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                           cl_mem big, size_t off) {
    const clnet_window *w = CONV_WINDOW(node);
    char opt[600];
    clnet_window_options(w, "", opt, sizeof opt);
    size_t range[3] = {((size_t)w->out[2] + 7) / 8, (size_t)w->out[1], /* slots of 8 windows */
                       (size_t)ch->s * w->c * w->out[0]},
           shape[3];
    return clnet_pass_run(
        p, CONV_K_IM2COL, KERNEL("conv", opt, "im2col"), 3, range,
        clnet_window_local(w, p, range, shape),
        ARGS(WIN(w), U32(ch->s), MEM(big), U32(off + ch->big), MEM(p->work), U32(ch->col)));
}

/* The chunk's big-side tensor = col2im of the column region,
 * plus the bias (with_bias), or added to what is there (add: an input
 * gradient that another reader wrote first). */
static clnet_status col2im(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                           uint32_t with_bias, uint32_t add, cl_mem big, size_t off) {
    const clnet_window *w = CONV_WINDOW(node);
    char opt[600];
    clnet_window_options(w, "", opt, sizeof opt);
    size_t range[3] = {(size_t)w->in[2], (size_t)w->in[1], (size_t)ch->s * w->c * w->in[0]},
           shape[3];
    return clnet_pass_run(p, CONV_K_COL2IM, KERNEL("conv", opt, "col2im"), 3, range,
                          clnet_window_local(w, p, range, shape),
                          ARGS(WIN(w), U32(ch->s), MEM(p->work), U32(ch->col), MEM(big),
                               U32(off + ch->big), MEM(p->params), U32(ch->bo), U32(with_bias),
                               U32(add)));
}

/* The GEMMs of a chunk of s samples, group by group (below). */
static clnet_gemm_shape shape_down(const clnet_node *node, int s) {
    conv_sides v = conv_sides_of(node);
    size_t Fg = v.Cs / v.G, CKg = v.Cb / v.G * v.K;
    return (clnet_gemm_shape){0, 0, Fg, (size_t)s * v.Ps, CKg, 'N', s};
}

static clnet_gemm_shape shape_up(const clnet_node *node, int s) {
    conv_sides v = conv_sides_of(node);
    size_t Fg = v.Cs / v.G, CKg = v.Cb / v.G * v.K;
    return (clnet_gemm_shape){1, 0, CKg, (size_t)s * v.Ps, Fg, 'N', s};
}

static clnet_gemm_shape shape_weight(const clnet_node *node, int s) {
    conv_sides v = conv_sides_of(node);
    size_t Fg = v.Cs / v.G, CKg = v.Cb / v.G * v.K;
    return (clnet_gemm_shape){0, 1, Fg, CKg, (size_t)s * v.Ps, 'K', s};
}

/* A GEMM operand of group 0 (`off`, leading dimension `ld`); group g's
 * lies g * step further. */
typedef struct {
    cl_mem mem;
    size_t off, step, ld;
} operand;

static clnet_matrix of_group(operand o, size_t g) {
    return (clnet_matrix){o.mem, o.off + g * o.step, o.ld};
}

/* C = A . B (abc: the three; beta: what happens to C) at GEMM call site
 * `site`, group by group. */
static clnet_status per_group(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                              int site, const clnet_gemm_shape *s, const operand abc[3],
                              float beta) {
    for (size_t g = 0; g < conv_sides_of(node).G; g++) {
        clnet_gemm_args args = {1.0f, of_group(abc[0], g), of_group(abc[1], g), beta,
                                of_group(abc[2], g)};
        clnet_status st = clnet_pass_gemm(p, site, ch->gemm, s, &args);
        if (st != CLNET_OK) return st;
    }
    return CLNET_OK;
}

/* The chunk's operands: W (its group's rows, Fg x CKg), Sp (Fg rows of a
 * group) and the column region (CKg rows of a group). */
static operand weight_of(const clnet_node *node, const conv_chunk *ch, cl_mem mem) {
    conv_sides v = conv_sides_of(node);
    size_t Fg = v.Cs / v.G, CKg = v.Cb / v.G * v.K;
    return (operand){mem, ch->wo, Fg * CKg, CKg};
}

static operand small_of(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch) {
    conv_sides v = conv_sides_of(node);
    return (operand){p->work, 0, v.Cs / v.G * ch->NP, ch->NP};
}

static operand col_of(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch) {
    conv_sides v = conv_sides_of(node);
    return (operand){p->work, ch->col, v.Cb / v.G * v.K * ch->NP, ch->NP};
}

/* Sp (Cs, s*Ps) = W . col, group by group: group g's rows of W read the
 * rows of col of its channels. */
static clnet_status gemm_down(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch) {
    clnet_gemm_shape s = shape_down(node, ch->s);
    operand abc[3] = {weight_of(node, ch, p->params), col_of(node, p, ch), small_of(node, p, ch)};
    return per_group(node, p, ch, CONV_GEMM_DOWN, &s, abc, 0.0f);
}

/* dcol (Cb*K, s*Ps) = W^T . Sp, group by group, over the column region */
static clnet_status gemm_up(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch) {
    clnet_gemm_shape s = shape_up(node, ch->s);
    operand abc[3] = {weight_of(node, ch, p->params), small_of(node, p, ch), col_of(node, p, ch)};
    return per_group(node, p, ch, CONV_GEMM_UP, &s, abc, 0.0f);
}

/* dW (+)= Sp . col^T, group by group (beta 0 overwrites, 1 adds) */
static clnet_status gemm_weight(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                                float beta) {
    clnet_gemm_shape s = shape_weight(node, ch->s);
    operand abc[3] = {small_of(node, p, ch), col_of(node, p, ch), weight_of(node, ch, p->grads)};
    return per_group(node, p, ch, CONV_GEMM_WEIGHT, &s, abc, beta);
}

/* The chunk's (s, C, P) tensor at (t, off) = Sp, with `f`. */
static clnet_status from_gemm_layout(const clnet_pass *p, conv_output_flags f, const conv_chunk *ch,
                                     size_t C, size_t P, cl_mem t, size_t off) {
    return clnet_pass_run(p, CONV_K_OUTPUT, KERNEL("conv", "", "conv_output"), 3,
                          (size_t[]){P, C, (size_t)ch->s}, NULL,
                          ARGS(U32(ch->s), U32(C), U32(P), MEM(p->work), U32(0), MEM(p->params),
                               U32(ch->bo), MEM(t), U32(off), U32(f.bias), U32(f.relu),
                               U32(f.add)));
}

/* y = W . im2col(x) + bias (then the relu, if taken in) */
static clnet_status forward_chunk(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                                  float beta) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    (void)beta;
    TRY(im2col(node, p, ch, p->act, p->x[0]));
    TRY(gemm_down(node, p, ch));
    TRY(from_gemm_layout(p, conv_forward_flags(node, p), ch, v.Cs, v.Ps, p->act, p->y + ch->small));
cleanup:
    return status;
}

/* Forward was Sp = W . col (+ bias), col = im2col(x); so backward is, chunk
 * by chunk (and group by group), dW += dSp . col^T, dbias += row sums of dSp
 * (with a bias), dcol = W^T . dSp, dx = col2im(dcol). */
static clnet_status backward_chunk(const clnet_node *node, const clnet_pass *p,
                                   const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    TRY(conv_output_grad(node, p, ch, beta));
    if (ch->makes & CONV_MAKES_DW) {
        TRY(im2col(node, p, ch, p->act, p->x[0]));
        TRY(gemm_weight(node, p, ch, beta));
    }
    if (!(ch->makes & CONV_MAKES_DX)) return CLNET_OK;
    TRY(gemm_up(node, p, ch)); /* over the columns, which the weight gradient has read */
    TRY(col2im(node, p, ch, 0, clnet_dx_add(p, 0), p->dact, p->dx[0]));
cleanup:
    return status;
}

/* Xp: a transposed convolution's x (its small side) in GEMM layout, at the
 * start of work. */
static clnet_status x_in_gemm_layout(const clnet_node *node, const clnet_pass *p,
                                     const conv_chunk *ch) {
    conv_sides v = conv_sides_of(node);
    return conv_to_gemm_layout(p, CONV_K_GRAD_LAYOUT,
                               (conv_tensor){p->act, p->x[0] + ch->small, v.Cs, v.Ps}, ch->s, 0, 0,
                               0);
}

/* The transposed convolution's forward is the convolution's input gradient:
 * y = col2im(W^T . x) + bias. */
static clnet_status transpose_forward_chunk(const clnet_node *node, const clnet_pass *p,
                                            const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    (void)beta;
    TRY(x_in_gemm_layout(node, p, ch));
    TRY(gemm_up(node, p, ch));
    TRY(col2im(node, p, ch, conv_forward_flags(node, p).bias, 0, p->act, p->y));
cleanup:
    return status;
}

/* Forward was dcol = W^T . Xp, y = col2im(dcol) + bias, Xp = x in GEMM
 * layout; so backward is, chunk by chunk, dbias += the sums of dy over
 * samples and positions, col = im2col(dy), dW += Xp . col^T, dXp = W . col. */
static clnet_status transpose_backward_chunk(const clnet_node *node, const clnet_pass *p,
                                             const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    TRY(conv_transpose_bias_grad(node, p, ch, beta));
    TRY(im2col(node, p, ch, p->dact, p->dy));
    if (ch->makes & CONV_MAKES_DW) {
        TRY(x_in_gemm_layout(node, p, ch));
        TRY(gemm_weight(node, p, ch, beta));
    }
    if (!(ch->makes & CONV_MAKES_DX)) return CLNET_OK;
    TRY(gemm_down(node, p, ch)); /* over Xp, which the weight gradient has read */
    conv_output_flags f = {.add = clnet_dx_add(p, 0)};
    TRY(from_gemm_layout(p, f, ch, v.Cs, v.Ps, p->dact, p->dx[0] + ch->small));
cleanup:
    return status;
}

/* A sample's share of the column region: its columns, or for a transposed
 * convolution's bias gradient its output gradient in GEMM layout. */
static size_t per_sample(const clnet_node *node, const clnet_device *d) {
    conv_sides v = conv_sides_of(node);
    (void)d;
    return conv_most(v.Cb * v.K * v.Ps, conv_big_per_sample(node));
}

/* Sp (Cs, s*Ps), then the column region */
static size_t regions(const clnet_node *node, const clnet_device *d, int s) {
    conv_sides v = conv_sides_of(node);
    return v.Cs * (size_t)s * v.Ps + (size_t)s * per_sample(node, d);
}

/* The chunk's GEMMs and the bias gradient's row sums run one after another,
 * so they share it. */
static size_t scratch(const clnet_node *node, const clnet_device *d, int s) {
    clnet_gemm_shape down = shape_down(node, s), up = shape_up(node, s),
                     weight = shape_weight(node, s);
    return conv_most(
        conv_most(clnet_gemm_chosen_work_floats(d, &down), clnet_gemm_chosen_work_floats(d, &up)),
        conv_most(clnet_gemm_chosen_work_floats(d, &weight), conv_sums_floats(node, s)));
}

/* Where no other rule applies. */
static int rule(const clnet_node *node, const clnet_device *d) {
    (void)node, (void)d;
    return 1;
}

const conv_algo conv_im2col = {
    .name = "im2col",
    .rule = rule,
    .per_sample = per_sample,
    .regions = regions,
    .scratch = scratch,
    .forward = forward_chunk,
    .backward = backward_chunk,
    .transpose_forward = transpose_forward_chunk,
    .transpose_backward = transpose_backward_chunk,
};
