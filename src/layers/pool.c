/* Max and average pooling (cl/pool.cl): x (n, C, H, W) -> y (n, C, OH, OW).
 * Both kinds share their shape rules, so they share this file. */
#include "error.h"
#include "layer.h"
#include "program.h"

static clnet_status setup(clnet_layer *l) {
    if (l->kh < 1 || l->kw < 1) return clnet_layer_fail(l, "needs size=K (or KHxKW) >= 1");
    if (l->sh < 1 || l->sw < 1) return clnet_layer_fail(l, "stride must be >= 1");
    if (l->ph < 0 || l->pw < 0 || l->ph >= l->kh || l->pw >= l->kw)
        return clnet_layer_fail(l, "padding must be >= 0 and smaller than the kernel (%dx%d)",
                                l->kh, l->kw);
    int oh = clnet_window_out(l->in.h, l->kh, l->sh, l->ph);
    int ow = clnet_window_out(l->in.w, l->kw, l->sw, l->pw);
    if (oh < 1 || ow < 1)
        return clnet_layer_fail(l, "a %dx%d window does not fit the input", l->kh, l->kw);
    l->out = (clnet_shape){l->in.c, oh, ow};
    return CLNET_OK;
}

#define WINDOW(l, n)                                                                               \
    U32(n), U32((l)->in.c), U32((l)->in.h), U32((l)->in.w), U32((l)->kh), U32((l)->kw),            \
        U32((l)->sh), U32((l)->sw), U32((l)->ph), U32((l)->pw), U32((l)->out.h), U32((l)->out.w)

static size_t out_count(const clnet_layer *l, int n) {
    return (size_t)n * clnet_shape_size(l->out);
}

/* kernels run over (x, y, plane) of the output (forward) or input (backward) */
#define OUT_RANGE(l, n)                                                                            \
    3, (size_t[]) {                                                                                \
        (size_t)(l)->out.w, (size_t)(l)->out.h, (size_t)(n) * (l)->in.c                            \
    }
#define IN_RANGE(l, n)                                                                             \
    3, (size_t[]) {                                                                                \
        (size_t)(l)->in.w, (size_t)(l)->in.h, (size_t)(n) * (l)->in.c                              \
    }

/* max pooling keeps the index of each window's maximum (int32) */
static size_t max_keep(const clnet_layer *l, int n) {
    return out_count(l, n);
}

static clnet_status max_forward(const clnet_layer *l, const clnet_pass *p) {
    return clnet_run(p->d, "pool", "", "maxpool_forward", OUT_RANGE(l, p->n), NULL,
                     ARGS(WINDOW(l, p->n), MEM(p->act), U32(p->x), MEM(p->act), U32(p->y),
                          MEM(p->keep), U32(p->keep_off)));
}

static clnet_status max_backward(const clnet_layer *l, const clnet_pass *p) {
    if (!p->need_dx) return CLNET_OK;
    return clnet_run(p->d, "pool", "", "maxpool_backward", IN_RANGE(l, p->n), NULL,
                     ARGS(WINDOW(l, p->n), MEM(p->dact), U32(p->dy), MEM(p->keep), U32(p->keep_off),
                          MEM(p->dact), U32(p->dx)));
}

static clnet_status avg_forward(const clnet_layer *l, const clnet_pass *p) {
    return clnet_run(p->d, "pool", "", "avgpool_forward", OUT_RANGE(l, p->n), NULL,
                     ARGS(WINDOW(l, p->n), MEM(p->act), U32(p->x), MEM(p->act), U32(p->y)));
}

static clnet_status avg_backward(const clnet_layer *l, const clnet_pass *p) {
    if (!p->need_dx) return CLNET_OK;
    return clnet_run(p->d, "pool", "", "avgpool_backward", IN_RANGE(l, p->n), NULL,
                     ARGS(WINDOW(l, p->n), MEM(p->dact), U32(p->dy), MEM(p->dact), U32(p->dx)));
}

const clnet_layer_ops clnet_maxpool_ops = {
    .kind = "maxpool",
    .keys = "size stride pad",
    .setup = setup,
    .keep_floats = max_keep,
    .work_floats = clnet_layer_none,
    .forward = max_forward,
    .backward = max_backward,
};

const clnet_layer_ops clnet_avgpool_ops = {
    .kind = "avgpool",
    .keys = "size stride pad",
    .setup = setup,
    .keep_floats = clnet_layer_none,
    .work_floats = clnet_layer_none,
    .forward = avg_forward,
    .backward = avg_backward,
};
