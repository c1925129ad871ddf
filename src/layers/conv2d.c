/* 2-D convolution: im2col + GEMM (cl/conv.cl, cl/gemm.cl).
 * x (n, C, H, W), weight (F, C, KH, KW), bias (F), y (n, F, OH, OW). */
#include "elementwise.h"
#include "error.h"
#include "gemm.h"
#include "layer.h"
#include "program.h"

static clnet_status setup(clnet_layer *l) {
    if (l->filters < 1) return clnet_layer_fail(l, "needs filters=N with N >= 1");
    if (l->kh < 1 || l->kw < 1) return clnet_layer_fail(l, "needs size=K (or KHxKW) >= 1");
    if (l->sh < 1 || l->sw < 1) return clnet_layer_fail(l, "stride must be >= 1");
    if (l->ph < 0 || l->pw < 0) return clnet_layer_fail(l, "padding must be >= 0");
    int oh = clnet_window_out(l->in.h, l->kh, l->sh, l->ph);
    int ow = clnet_window_out(l->in.w, l->kw, l->sw, l->pw);
    if (oh < 1 || ow < 1)
        return clnet_layer_fail(l, "a %dx%d kernel with padding %dx%d does not fit the input",
                                l->kh, l->kw, l->ph, l->pw);
    l->out = (clnet_shape){l->filters, oh, ow};
    int ckk = l->in.c * l->kh * l->kw;
    l->nweight = (size_t)l->filters * (size_t)ckk;
    l->nbias = (size_t)l->filters;
    l->weight_ndim = 4;
    l->weight_shape[0] = l->filters;
    l->weight_shape[1] = l->in.c;
    l->weight_shape[2] = l->kh;
    l->weight_shape[3] = l->kw;
    l->fan_in = ckk;
    l->fan_out = l->filters * l->kh * l->kw;
    return CLNET_OK;
}

static size_t col_floats(const clnet_layer *l, int n) {
    return (size_t)l->in.c * l->kh * l->kw * (size_t)n * l->out.h * l->out.w;
}

/* im2col's columns, kept for the weight gradient */
static size_t keep_floats(const clnet_layer *l, int n) {
    return col_floats(l, n);
}

/* the output in GEMM layout (F, n*P), then the column gradient */
static size_t work_floats(const clnet_layer *l, int n) {
    return (size_t)l->filters * n * l->out.h * l->out.w + col_floats(l, n);
}

#define WINDOW(l, n)                                                                               \
    U32(n), U32((l)->in.c), U32((l)->in.h), U32((l)->in.w), U32((l)->kh), U32((l)->kw),            \
        U32((l)->sh), U32((l)->sw), U32((l)->ph), U32((l)->pw), U32((l)->out.h), U32((l)->out.w)

static clnet_status forward(const clnet_layer *l, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t F = (size_t)l->filters, P = (size_t)l->out.h * l->out.w, NP = (size_t)p->n * P;
    size_t CKK = (size_t)l->in.c * l->kh * l->kw;
    /* col (CKK, n*P) = im2col(x) */
    size_t planes = (size_t)p->n * l->in.c;
    TRY(clnet_run(p->d, "conv", "", "im2col", 3,
                  (size_t[]){(size_t)l->out.w, (size_t)l->out.h, planes}, NULL,
                  ARGS(WINDOW(l, p->n), MEM(p->act), U32(p->x), MEM(p->keep), U32(p->keep_off))));
    /* Yp (F, n*P) = W (F, CKK) . col */
    TRY(clnet_gemm(p->d, 0, 0, F, NP, CKK, 1.0f, p->params, l->weight_off, CKK, p->keep,
                   p->keep_off, NP, 0.0f, p->work, 0, NP));
    /* y (n, F, P) = Yp permuted + bias */
    TRY(clnet_run(p->d, "conv", "", "conv_output", 3, (size_t[]){P, F, (size_t)p->n}, NULL,
                  ARGS(U32(p->n), U32(F), U32(P), MEM(p->work), U32(0), MEM(p->params),
                       U32(l->bias_off), MEM(p->act), U32(p->y))));
cleanup:
    return status;
}

/* Forward was Yp = W . col (+ bias), col = im2col(x); so backward is
 * dW = dYp . col^T, dbias = row sums of dYp, dcol = W^T . dYp, dx = col2im(dcol). */
static clnet_status backward(const clnet_layer *l, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t F = (size_t)l->filters, P = (size_t)l->out.h * l->out.w, NP = (size_t)p->n * P;
    size_t CKK = (size_t)l->in.c * l->kh * l->kw;
    size_t dcol = F * NP; /* offset of dcol in work, after dYp */
    TRY(clnet_run(p->d, "conv", "", "conv_grad_output", 3, (size_t[]){P, F, (size_t)p->n}, NULL,
                  ARGS(U32(p->n), U32(F), U32(P), MEM(p->dact), U32(p->dy), MEM(p->work), U32(0))));
    TRY(clnet_row_sums(p->d, F, NP, p->work, 0, p->grads, l->bias_off, p->beta));
    TRY(clnet_gemm(p->d, 0, 1, F, CKK, NP, 1.0f, p->work, 0, NP, p->keep, p->keep_off, NP, p->beta,
                   p->grads, l->weight_off, CKK));
    if (p->need_dx) {
        TRY(clnet_gemm(p->d, 1, 0, CKK, NP, F, 1.0f, p->params, l->weight_off, CKK, p->work, 0, NP,
                       0.0f, p->work, dcol, NP));
        TRY(clnet_run(
            p->d, "conv", "", "col2im", 3,
            (size_t[]){(size_t)l->in.w, (size_t)l->in.h, (size_t)p->n * l->in.c}, NULL,
            ARGS(WINDOW(l, p->n), MEM(p->work), U32(dcol), MEM(p->dact), U32(p->dx), F32(0.0f))));
    }
cleanup:
    return status;
}

const clnet_layer_ops clnet_conv2d_ops = {
    .kind = "conv2d",
    .keys = "filters size stride pad init std bias_init bias_std",
    .setup = setup,
    .keep_floats = keep_floats,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
};
