/* Fully connected: x (n, I) -> y (n, O) = x W^T + b, with W (O, I) as PyTorch
 * lays it out. Any input shape is read as (n, C*H*W) in C, H, W order. */
#include "elementwise.h"
#include "error.h"
#include "gemm.h"
#include "layer.h"
#include "program.h"

static clnet_status setup(clnet_layer *l) {
    if (l->units < 1) return clnet_layer_fail(l, "needs units=N with N >= 1");
    size_t in = clnet_shape_size(l->in);
    l->out = (clnet_shape){l->units, 1, 1};
    l->nweight = (size_t)l->units * in;
    l->nbias = (size_t)l->units;
    l->weight_ndim = 2;
    l->weight_shape[0] = l->units;
    l->weight_shape[1] = (int64_t)in;
    l->fan_in = (int)in;
    l->fan_out = l->units;
    return CLNET_OK;
}

static clnet_status forward(const clnet_layer *l, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t I = clnet_shape_size(l->in), O = (size_t)l->units, n = (size_t)p->n;
    TRY(clnet_gemm(p->d, 0, 1, n, O, I, 1.0f, p->act, p->x, I, p->params, l->weight_off, I, 0.0f,
                   p->act, p->y, O));
    TRY(clnet_run(p->d, "elementwise", "", "add_bias_cols", 1, (size_t[]){n * O}, NULL,
                  ARGS(U32(n), U32(O), MEM(p->act), U32(p->y), MEM(p->params), U32(l->bias_off))));
cleanup:
    return status;
}

/* Forward was y = x W^T + b, so backward is
 * dW = dy^T x (O, I), db = column sums of dy, dx = dy W (n, I). */
static clnet_status backward(const clnet_layer *l, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t I = clnet_shape_size(l->in), O = (size_t)l->units, n = (size_t)p->n;
    TRY(clnet_col_sums(p->d, n, O, p->dact, p->dy, p->grads, l->bias_off, p->beta));
    TRY(clnet_gemm(p->d, 1, 0, O, I, n, 1.0f, p->dact, p->dy, O, p->act, p->x, I, p->beta, p->grads,
                   l->weight_off, I));
    if (p->need_dx)
        TRY(clnet_gemm(p->d, 0, 0, n, I, O, 1.0f, p->dact, p->dy, O, p->params, l->weight_off, I,
                       0.0f, p->dact, p->dx, I));
cleanup:
    return status;
}

const clnet_layer_ops clnet_linear_ops = {
    .kind = "linear",
    .keys = "units init std bias_init bias_std",
    .setup = setup,
    .keep_floats = clnet_layer_none,
    .work_floats = clnet_layer_none,
    .forward = forward,
    .backward = backward,
};
