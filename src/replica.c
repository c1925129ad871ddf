/* Replica planning, allocation and the forward/backward passes. */
#include "replica.h"
#include "error.h"
#include "net.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs one layer's pass, timing it when the replica is profiled. */
static clnet_status timed(clnet_replica *r, int slot,
                          clnet_status (*fn)(const clnet_layer *, const clnet_pass *),
                          const clnet_layer *l, const clnet_pass *p) {
    if (!r->profile) return fn(l, p);
    clFinish(r->d->queue);
    double t0 = seconds();
    clnet_status s = fn(l, p);
    clFinish(r->d->queue);
    r->profile[slot] += seconds() - t0;
    return s;
}

void clnet_replica_free(clnet_replica *r) {
    if (!r) return;
    cl_mem *mems[] = {&r->params, &r->grads,  &r->act,  &r->dact,   &r->keep,
                      &r->work,   &r->labels, &r->loss, &r->correct};
    if (r->staging.mem) clnet_staging_free(r->d, &r->staging);
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (*mems[i]) clReleaseMemObject(*mems[i]);
    free(r->out_off);
    free(r->keep_off);
    free(r->loss_host);
    free(r->correct_host);
    free(r);
}

static double mib(size_t floats) {
    return (double)floats * 4.0 / (1024.0 * 1024.0);
}

clnet_status clnet_replica_create(clnet_replica **out, const clnet_net *net, clnet_device *d,
                                  int max_batch) {
    clnet_status status = CLNET_OK;
    clnet_replica *r = calloc(1, sizeof *r);
    *out = NULL;
    if (!r) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    r->d = d;
    r->max_batch = max_batch;
    r->nparams = net->nparams;
    r->out_off = calloc((size_t)net->nlayers, sizeof *r->out_off);
    r->keep_off = calloc((size_t)net->nlayers, sizeof *r->keep_off);
    r->loss_host = calloc((size_t)max_batch, sizeof *r->loss_host);
    r->correct_host = calloc((size_t)max_batch, sizeof *r->correct_host);
    if (!r->out_off || !r->keep_off || !r->loss_host || !r->correct_host)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");

    /* Plan: the input first, then each layer's output (a view shares its
     * input's place); kept memory layer after layer; one shared scratch. */
    size_t B = (size_t)max_batch, act = B * clnet_shape_size(net->input), prev = 0;
    size_t keep = 0, work = 0, gemm_scratch = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const clnet_layer *l = &net->layers[i];
        if (l->ops->is_view) {
            r->out_off[i] = prev;
        } else {
            r->out_off[i] = act;
            act += B * clnet_shape_size(l->out);
        }
        prev = r->out_off[i];
        r->keep_off[i] = keep;
        keep += l->ops->keep_floats(l, max_batch);
        size_t w = l->ops->work_floats(l, max_batch);
        if (w > work) work = w;
        /* the GEMM's own scratch: a transposed operand of this size */
        size_t t = l->ops->keep_floats(l, max_batch) + l->nweight;
        if (t > gemm_scratch) gemm_scratch = t;
    }
    size_t total = 2 * net->nparams + 2 * act + keep + work + gemm_scratch + 3 * B;
    size_t largest = act > keep ? act : keep;
    if (work > largest) largest = work;
    uint64_t have = d->info.global_mem_bytes, max_buf = d->info.max_alloc_bytes;
    if ((uint64_t)total * 4 > have || (uint64_t)largest * 4 > max_buf)
        FAIL(CLNET_ERR_DEVICE_MEMORY,
             "the net needs %.1f MiB (largest buffer %.1f MiB) at batch %d on device %d (%s), "
             "which has %.1f MiB (largest buffer %.1f MiB): use a smaller batch",
             mib(total), mib(largest), max_batch, d->info.index, d->info.name,
             (double)have / 1048576.0, (double)max_buf / 1048576.0);
    if (act > UINT32_MAX || keep > UINT32_MAX || work > UINT32_MAX)
        FAIL(CLNET_ERR_DEVICE_MEMORY, "batch %d needs buffers beyond 2^32 floats", max_batch);

    TRY(clnet_buffer_create(d, net->nparams * sizeof(float), &r->params));
    TRY(clnet_buffer_create(d, net->nparams * sizeof(float), &r->grads));
    TRY(clnet_buffer_create(d, act * sizeof(float), &r->act));
    TRY(clnet_buffer_create(d, act * sizeof(float), &r->dact));
    TRY(clnet_buffer_create(d, keep * sizeof(float), &r->keep));
    TRY(clnet_buffer_create(d, work * sizeof(float), &r->work));
    TRY(clnet_buffer_create(d, B * sizeof(int32_t), &r->labels));
    TRY(clnet_buffer_create(d, B * sizeof(float), &r->loss));
    TRY(clnet_buffer_create(d, B * sizeof(int32_t), &r->correct));
    if (!d->zero_copy) TRY(clnet_staging_create(d, net->nparams * sizeof(float), &r->staging));
    *out = r;
    r = NULL;
cleanup:
    clnet_replica_free(r);
    return status;
}

clnet_status clnet_replica_write_params(clnet_replica *r, const float *params, size_t n) {
    return clnet_buffer_write(r->d, r->params, 0, n, params);
}

/* The pass of layer i over n samples. */
static clnet_pass make_pass(clnet_replica *r, const clnet_net *net, int i, int n, int train,
                            int accumulate) {
    const clnet_layer *l = &net->layers[i];
    size_t in = i ? r->out_off[i - 1] : 0;
    int need_dx = 0; /* only when some earlier layer has parameters */
    for (int j = 0; j < i; j++) need_dx |= net->layers[j].nweight > 0;
    return (clnet_pass){
        .d = r->d,
        .n = n,
        .params = r->params,
        .grads = r->grads,
        .act = r->act,
        .x = in,
        .y = r->out_off[i],
        .dact = r->dact,
        .dx = in,
        .dy = r->out_off[i],
        .need_dx = need_dx,
        .keep = r->keep,
        .keep_off = r->keep_off[i],
        .work = r->work,
        .beta = accumulate ? 1.0f : 0.0f,
        .labels = r->labels,
        .loss = r->loss,
        .correct = r->correct,
        .want_grad = train && (need_dx || l->nweight),
    };
}

clnet_status clnet_replica_run(clnet_replica *r, const clnet_net *net, const float *images,
                               const int32_t *labels, int n, clnet_run_mode mode, double *loss_sum,
                               int *correct, float *probs) {
    const int train = mode.train;
    clnet_status status = CLNET_OK;
    clnet_device *d = r->d;
    size_t in_size = clnet_shape_size(net->input);
    int classes = clnet_net_classes(net);
    if (n < 1 || n > r->max_batch)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "batch of %d samples: the net is bound for 1..%d", n,
             r->max_batch);
    TRY(clnet_buffer_write(d, r->act, 0, (size_t)n * in_size, images));
    if (labels) {
        CL_CHECK(clEnqueueWriteBuffer(d->queue, r->labels, CL_TRUE, 0, (size_t)n * sizeof(int32_t),
                                      labels, 0, NULL, NULL),
                 "clEnqueueWriteBuffer(labels)");
    } else { /* the loss kernel still reads labels: make them valid */
        memset(r->correct_host, 0, (size_t)n * sizeof(int32_t));
        CL_CHECK(clEnqueueWriteBuffer(d->queue, r->labels, CL_TRUE, 0, (size_t)n * sizeof(int32_t),
                                      r->correct_host, 0, NULL, NULL),
                 "clEnqueueWriteBuffer(labels)");
    }
    for (int i = 0; i < net->nlayers; i++) {
        clnet_pass p = make_pass(r, net, i, n, train, 0);
        status = timed(r, 2 * i, net->layers[i].ops->forward, &net->layers[i], &p);
        if (status != CLNET_OK) {
            clnet_error_context(status, "forward of layer '%s'", net->layers[i].name);
            goto cleanup;
        }
    }
    if (train) {
        for (int i = net->nlayers - 1; i >= 0; i--) {
            const clnet_layer *l = &net->layers[i];
            clnet_pass p = make_pass(r, net, i, n, train, mode.accumulate);
            if (!p.need_dx && !l->nweight) break; /* nothing below needs gradients */
            status = timed(r, 2 * i + 1, l->ops->backward, l, &p);
            if (status != CLNET_OK) {
                clnet_error_context(status, "backward of layer '%s'", l->name);
                goto cleanup;
            }
            if (mode.last && l->nweight && r->on_bucket) TRY(r->on_bucket(r, i, r->bucket_ctx));
        }
    }
    if (labels) {
        CL_CHECK(clEnqueueReadBuffer(d->queue, r->loss, CL_TRUE, 0, (size_t)n * sizeof(float),
                                     r->loss_host, 0, NULL, NULL),
                 "clEnqueueReadBuffer(loss)");
        CL_CHECK(clEnqueueReadBuffer(d->queue, r->correct, CL_TRUE, 0, (size_t)n * sizeof(int32_t),
                                     r->correct_host, 0, NULL, NULL),
                 "clEnqueueReadBuffer(correct)");
        double sum = 0;
        int right = 0;
        for (int b = 0; b < n; b++) {
            sum += r->loss_host[b];
            right += r->correct_host[b] == 1;
        }
        if (loss_sum) *loss_sum = sum;
        if (correct) *correct = right;
    }
    if (probs)
        TRY(clnet_buffer_read(d, r->act, r->out_off[net->nlayers - 1], (size_t)n * classes, probs));
cleanup:
    if (status != CLNET_OK)
        clnet_error_context(status, "device %d (%s)", d->info.index, d->info.name);
    return status;
}

clnet_status clnet_replica_add_grads(clnet_replica *r, float *host) {
    clnet_status status = CLNET_OK;
    clnet_host_view view;
    TRY(clnet_host_view_begin(r->d, r->grads, 0, r->nparams, &r->staging, &view));
    for (size_t i = 0; i < r->nparams; i++) host[i] += view.data[i];
    TRY(clnet_host_view_end(r->d, &view));
cleanup:
    return status;
}
