#include "layer_rig.h"
#include "memory.h"
#include "net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cl_mem buffer(clnet_device *d, size_t floats) {
    cl_mem m = NULL;
    ck_assert_msg(clnet_buffer_create(d, (floats ? floats : 1) * sizeof(float), &m) == CLNET_OK,
                  "%s", clnet_last_error());
    return m;
}

void rig_create(layer_rig *r, clnet_device *d, clnet_shape in, const char *line, int n) {
    memset(r, 0, sizeof *r);
    char input[128];
    snprintf(input, sizeof input, "input channels=%d height=%d width=%d", in.c, in.h, in.w);
    ck_assert_int_eq(clnet_net_create(&r->net), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(r->net, input), CLNET_OK);
    ck_assert_msg(clnet_net_add(r->net, line) == CLNET_OK, "'%s': %s", line, clnet_last_error());
    r->l = &r->net->layers[0];
    r->d = d;
    r->n = n;
    r->in_count = (size_t)n * clnet_shape_size(r->l->in);
    r->out_count = (size_t)n * clnet_shape_size(r->l->out);
    size_t np = r->l->nweight + r->l->nbias;
    r->params = buffer(d, np);
    r->grads = buffer(d, np);
    r->act = buffer(d, r->in_count + r->out_count);
    r->dact = buffer(d, r->in_count + r->out_count);
    r->keep = buffer(d, r->l->ops->keep_floats(r->l, n));
    r->work = buffer(d, r->l->ops->work_floats(r->l, n));
    r->labels = buffer(d, (size_t)n);
    r->loss = buffer(d, (size_t)n);
    r->correct = buffer(d, (size_t)n);
}

void rig_free(layer_rig *r) {
    cl_mem all[] = {r->params, r->grads,  r->act,  r->dact,   r->keep,
                    r->work,   r->labels, r->loss, r->correct};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) clReleaseMemObject(all[i]);
    clnet_net_free(r->net);
    memset(r, 0, sizeof *r);
}

void rig_set_params(layer_rig *r, const float *w, const float *b) {
    if (w) ck_assert_int_eq(clnet_buffer_write(r->d, r->params, 0, r->l->nweight, w), CLNET_OK);
    if (b)
        ck_assert_int_eq(clnet_buffer_write(r->d, r->params, r->l->nweight, r->l->nbias, b),
                         CLNET_OK);
}

static clnet_pass pass(layer_rig *r, int want_grad) {
    return (clnet_pass){.d = r->d,
                        .n = r->n,
                        .params = r->params,
                        .grads = r->grads,
                        .act = r->act,
                        .x = 0,
                        .y = r->l->ops->is_view ? 0 : r->in_count,
                        .dact = r->dact,
                        .dx = 0,
                        .dy = r->l->ops->is_view ? 0 : r->in_count,
                        .need_dx = 1,
                        .keep = r->keep,
                        .keep_off = 0,
                        .work = r->work,
                        .beta = 0.0f,
                        .labels = r->labels,
                        .loss = r->loss,
                        .correct = r->correct,
                        .want_grad = want_grad};
}

void rig_forward(layer_rig *r, const float *x, float *y, const int32_t *labels, float *loss,
                 int *correct) {
    ck_assert_int_eq(clnet_buffer_write(r->d, r->act, 0, r->in_count, x), CLNET_OK);
    if (labels)
        ck_assert_int_eq(clEnqueueWriteBuffer(r->d->queue, r->labels, CL_TRUE, 0,
                                              (size_t)r->n * sizeof(int32_t), labels, 0, NULL,
                                              NULL),
                         CL_SUCCESS);
    clnet_pass p = pass(r, 1);
    ck_assert_msg(r->l->ops->forward(r->l, &p) == CLNET_OK, "forward: %s", clnet_last_error());
    if (y) ck_assert_int_eq(clnet_buffer_read(r->d, r->act, p.y, r->out_count, y), CLNET_OK);
    if (loss) ck_assert_int_eq(clnet_buffer_read(r->d, r->loss, 0, (size_t)r->n, loss), CLNET_OK);
    if (correct)
        ck_assert_int_eq(clEnqueueReadBuffer(r->d->queue, r->correct, CL_TRUE, 0,
                                             (size_t)r->n * sizeof(int32_t), correct, 0, NULL,
                                             NULL),
                         CL_SUCCESS);
}

void rig_backward(layer_rig *r, const float *dy, float *dx, float *dw, float *db) {
    clnet_pass p = pass(r, 1);
    if (!r->l->ops->is_loss)
        ck_assert_int_eq(clnet_buffer_write(r->d, r->dact, p.dy, r->out_count, dy), CLNET_OK);
    ck_assert_msg(r->l->ops->backward(r->l, &p) == CLNET_OK, "backward: %s", clnet_last_error());
    if (dx) ck_assert_int_eq(clnet_buffer_read(r->d, r->dact, 0, r->in_count, dx), CLNET_OK);
    if (dw) ck_assert_int_eq(clnet_buffer_read(r->d, r->grads, 0, r->l->nweight, dw), CLNET_OK);
    if (db)
        ck_assert_int_eq(clnet_buffer_read(r->d, r->grads, r->l->nweight, r->l->nbias, db),
                         CLNET_OK);
}
