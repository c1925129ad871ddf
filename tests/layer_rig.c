#include "layer_rig.h"
#include "elementwise.h"
#include "memory.h"
#include "net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cl_mem buffer(clnet_device *d, size_t floats) {
    cl_mem m = NULL;
    ck_assert_msg(clnet_buffer_create(d, (floats ? floats : 1) * sizeof(float), &m) == CLNET_OK,
                  "%s", clnet_last_error());
    return m;
}

void rig_input_line(clnet_shape s, char *out, size_t cap) {
    if (s.ndim == 0) s = clnet_shape_image(s.c, 1, 1);
    static const char *const forms[] = {"", "length=%d", "height=%d width=%d",
                                        "depth=%d height=%d width=%d"};
    char spatial[96];
    snprintf(spatial, sizeof spatial, forms[s.ndim], s.dim[0], s.dim[1], s.dim[2]);
    snprintf(out, cap, "input channels=%d %s", s.c, spatial);
}

void rig_create(layer_rig *r, clnet_device *d, rig_shape in, const char *line, int n) {
    char input[128];
    rig_input_line(clnet_shape_image(in.c, in.h, in.w), input, sizeof input);
    rig_create_input(r, d, input, line, n);
}

void rig_create_input(layer_rig *r, clnet_device *d, const char *input, const char *line, int n) {
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(clnet_net_create(&r->net), CLNET_OK);
    ck_assert_msg(clnet_net_add(r->net, input) == CLNET_OK, "'%s': %s", input, clnet_last_error());
    ck_assert_msg(clnet_net_add(r->net, line) == CLNET_OK, "'%s': %s", line, clnet_last_error());
    ck_assert(r->net->model.resolved && r->net->model.count == 1);
    const clnet_node *l = r->l = &r->net->model.nodes[0];
    r->d = d;
    r->n = n;
    r->nin = l->ninputs;
    for (int k = 0; k < l->ninputs; k++) {
        r->x_off[k] = r->in_count;
        r->in_count += (size_t)n * clnet_shape_size(l->in[k]);
    }
    r->out_count = (size_t)n * clnet_shape_size(l->out);
    if (l->nparams) {
        r->nw = l->params[0].count;
        r->nb = l->params[1].count;
        r->weight_ndim = l->params[0].ndim;
        r->weight_shape = l->params[0].shape;
    }
    size_t np = l->param_count;
    r->params = buffer(d, np);
    r->grads = buffer(d, np);
    r->nbuffers = r->net->model.nbuffers;
    r->buffers = buffer(d, r->nbuffers);
    float *start = calloc(r->nbuffers + 1, sizeof(float));
    ck_assert(start != NULL);
    for (int t = 0; t < l->nbuffers; t++)
        if (l->buffers[t].dtype == CLNET_DTYPE_F32 &&
            l->buffers[t].init.kind == CLNET_INIT_CONSTANT)
            for (size_t i = 0; i < l->buffers[t].count; i++)
                start[l->buffers[t].offset + i] = l->buffers[t].init.value;
    if (r->nbuffers) rig_set_buffers(r, start);
    free(start);
    r->act = buffer(d, r->in_count + r->out_count);
    r->dact = buffer(d, r->in_count + r->out_count);
    r->keep = buffer(d, l->kind->keep_floats ? l->kind->keep_floats(l, d, n) : 0);
    r->work = buffer(d, l->kind->work_floats ? l->kind->work_floats(l, d, n) : 0);
    r->host = malloc(l->kind->host_bytes ? l->kind->host_bytes(l, 1) : 1);
    ck_assert(r->host != NULL);
    r->labels = buffer(d, (size_t)n);
    r->target_size = l->kind->data_targets ? l->kind->data_targets(l) : 0;
    r->targets = buffer(d, (size_t)n * r->target_size);
    r->loss = buffer(d, (size_t)n);
    r->correct = buffer(d, (size_t)n);
}

void rig_free(layer_rig *r) {
    cl_mem all[] = {r->params, r->grads,  r->buffers, r->act,     r->dact,   r->keep,
                    r->work,   r->labels, r->loss,    r->correct, r->targets};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) clReleaseMemObject(all[i]);
    clnet_net_free(r->net);
    free(r->host);
    memset(r, 0, sizeof *r);
}

void rig_set_params(layer_rig *r, const float *w, const float *b) {
    if (w) ck_assert_int_eq(clnet_buffer_write(r->d, r->params, 0, r->nw, w), CLNET_OK);
    if (b) ck_assert_int_eq(clnet_buffer_write(r->d, r->params, r->nw, r->nb, b), CLNET_OK);
}

void rig_set_buffers(layer_rig *r, const float *v) {
    ck_assert_int_eq(clnet_buffer_write(r->d, r->buffers, 0, r->nbuffers, v), CLNET_OK);
}

void rig_get_buffers(layer_rig *r, float *v) {
    ck_assert_int_eq(clnet_buffer_read(r->d, r->buffers, 0, r->nbuffers, v), CLNET_OK);
}

/* The inputs from 0, back to back, and the output after them (a view's output
 * is its input). The scratch is filled with NaN first: a pass that reads
 * scratch it did not write (a training step leaves other layers' data
 * there) shows in its results. */
static clnet_pass pass(layer_rig *r, const clnet_ctx *ctx) {
    size_t out = r->l->kind->is_view ? 0 : r->in_count;
    const clnet_kind *k = r->l->kind;
    size_t keep = k->keep_floats ? k->keep_floats(r->l, r->d, r->n) : 0,
           work = k->work_floats ? k->work_floats(r->l, r->d, r->n) : 0;
    if (work) ck_assert_int_eq(clnet_fill(r->d, r->work, 0, work, NAN), CLNET_OK);
    clnet_pass p = {.ctx = ctx,
                    .d = r->d,
                    .n = r->n,
                    .params = r->params,
                    .grads = r->grads,
                    .buffers = r->buffers,
                    .act = r->act,
                    .y = out,
                    .dact = r->dact,
                    .dy = out,
                    .keep = r->keep,
                    .work = r->work,
                    .keep_cap = keep,
                    .work_cap = work,
                    .host = r->host,
                    .beta = 0.0f,
                    .labels = r->labels,
                    .loss = r->loss,
                    .correct = r->correct,
                    .targets = r->targets,
                    .want_grad = 1};
    for (int k = 0; k < r->nin; k++) {
        p.x[k] = p.dx[k] = r->x_off[k];
        p.need_dx[k] = 1;
        p.dx_beta[k] = r->dx_beta;
    }
    return p;
}

clnet_status rig_try_forward(layer_rig *r, const float *x, float *y) {
    clnet_ctx ctx = {.train = !r->eval, .d = r->d};
    ck_assert_int_eq(clnet_buffer_write(r->d, r->act, 0, r->in_count, x), CLNET_OK);
    clnet_pass p = pass(r, &ctx);
    clnet_status s = r->l->kind->forward(r->l, &p);
    if (s == CLNET_OK && y)
        ck_assert_int_eq(clnet_buffer_read(r->d, r->act, p.y, r->out_count, y), CLNET_OK);
    return s;
}

void rig_forward(layer_rig *r, const float *x, float *y, const int32_t *labels, float *loss,
                 int *correct) {
    clnet_ctx ctx = {.train = !r->eval, .d = r->d};
    ck_assert_int_eq(clnet_buffer_write(r->d, r->act, 0, r->in_count, x), CLNET_OK);
    if (labels && r->target_size) {
        size_t count = (size_t)r->n * r->target_size;
        float *t = malloc(count * sizeof *t);
        ck_assert(t != NULL);
        for (size_t i = 0; i < count; i++) t[i] = (float)labels[i];
        ck_assert_int_eq(clnet_buffer_write(r->d, r->targets, 0, count, t), CLNET_OK);
        free(t);
    } else if (labels)
        ck_assert_int_eq(clEnqueueWriteBuffer(r->d->queue, r->labels, CL_TRUE, 0,
                                              (size_t)r->n * sizeof(int32_t), labels, 0, NULL,
                                              NULL),
                         CL_SUCCESS);
    clnet_pass p = pass(r, &ctx);
    ck_assert_msg(r->l->kind->forward(r->l, &p) == CLNET_OK, "forward: %s", clnet_last_error());
    if (y) ck_assert_int_eq(clnet_buffer_read(r->d, r->act, p.y, r->out_count, y), CLNET_OK);
    if (loss) ck_assert_int_eq(clnet_buffer_read(r->d, r->loss, 0, (size_t)r->n, loss), CLNET_OK);
    if (correct)
        ck_assert_int_eq(clEnqueueReadBuffer(r->d->queue, r->correct, CL_TRUE, 0,
                                             (size_t)r->n * sizeof(int32_t), correct, 0, NULL,
                                             NULL),
                         CL_SUCCESS);
}

void rig_backward(layer_rig *r, const float *dy, float *dx, float *dw, float *db) {
    clnet_ctx ctx = {.train = 1, .d = r->d};
    clnet_pass p = pass(r, &ctx);
    if (!r->l->kind->is_loss)
        ck_assert_int_eq(clnet_buffer_write(r->d, r->dact, p.dy, r->out_count, dy), CLNET_OK);
    if (r->dx_beta != 0 && dx)
        ck_assert_int_eq(clnet_buffer_write(r->d, r->dact, 0, r->in_count, dx), CLNET_OK);
    if (r->l->kind->backward)
        ck_assert_msg(r->l->kind->backward(r->l, &p) == CLNET_OK, "backward: %s",
                      clnet_last_error());
    if (dx) ck_assert_int_eq(clnet_buffer_read(r->d, r->dact, 0, r->in_count, dx), CLNET_OK);
    if (dw) ck_assert_int_eq(clnet_buffer_read(r->d, r->grads, 0, r->nw, dw), CLNET_OK);
    if (db) ck_assert_int_eq(clnet_buffer_read(r->d, r->grads, r->nw, r->nb, db), CLNET_OK);
}
