/* Replica memory and the forward and backward passes. */
#include "replica.h"
#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "guard.h"
#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void drop_later(clnet_replica *r);

void clnet_replica_free(clnet_replica *r) {
    if (!r) return;
    cl_mem *mems[] = {&r->params,  &r->params_next, &r->grads,  &r->buffers, &r->buffers_before,
                      &r->act,     &r->dact,        &r->work,   &r->labels,  &r->loss,
                      &r->correct, &r->folded,      &r->targets};
    for (int i = 0; r->keeps && i < r->model->count; i++)
        if (r->keeps[i]) clReleaseMemObject(r->keeps[i]);
    free(r->keeps);
    clnet_links_free(&r->links);
    free(r->starts);
    drop_later(r);
    free(r->kernels); /* the handles belong to the device */
    free(r->gemms);
    clnet_gemm_record_free(&r->gemm_record);
    if (r->staging.mem && clnet_staging_free(r->d, &r->staging) != CLNET_OK)
        clnet_warn("freeing a replica: %s", clnet_last_error());
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (*mems[i]) clReleaseMemObject(*mems[i]);
    clnet_plan_release(&r->plan);
    free(r->loss_host);
    free(r->correct_host);
    free(r->host);
    free(r->guards);
    free(r);
}

static double mib(size_t floats) {
    return (double)floats * 4.0 / (1024.0 * 1024.0);
}

/* The host scratch the nodes share: the most one needs (kind->host_bytes). */
static size_t host_bytes(const clnet_model *m, int ranks) {
    size_t most = 1;
    for (int i = 0; i < m->count; i++) {
        const clnet_node *node = &m->nodes[i];
        size_t b = node->kind->host_bytes ? node->kind->host_bytes(node, ranks) : 0;
        if (b > most) most = b;
    }
    return most;
}

/* The first node to read node b's output, through views (-1: none). */
static int first_reader(const clnet_model *m, int b) {
    int first = -1;
    for (int j = b + 1; j < m->count; j++)
        for (int k = 0; k < m->nodes[j].ninputs; k++) {
            if (m->nodes[j].inputs[k] != b) continue;
            int at = m->nodes[j].kind->is_view ? first_reader(m, j) : j;
            if (at >= 0 && (first < 0 || at < first)) first = at;
        }
    return first;
}

/* What the loss reads and writes per sample: labels, float targets (for a
 * model that takes them), losses and answers, for B samples. */
static clnet_status make_loss_buffers(clnet_replica *r, size_t B) {
    clnet_status status = CLNET_OK;
    clnet_device *d = r->d;
    TRY(clnet_buffer_create(d, B * sizeof(int32_t), &r->labels));
    r->target_size = clnet_model_target_size(r->model);
    if (r->target_size)
        TRY(clnet_buffer_create(d, B * r->target_size * sizeof(float), &r->targets));
    TRY(clnet_buffer_create(d, B * sizeof(float), &r->loss));
    TRY(clnet_buffer_create(d, B * sizeof(int32_t), &r->correct));
cleanup:
    return status;
}

/* r->starts: for each node that leaves exchanges for later (kind->finish),
 * where its backward can start (the replica's exchanges on their way). */
static clnet_status make_starts(clnet_replica *r) {
    const clnet_model *m = r->model;
    r->overlap = 1; /* the trainer's CLNET_OVERLAP says otherwise */
    r->starts = clnet_calloc((size_t)m->count, sizeof *r->starts);
    if (!r->starts) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; b < m->count; b++) {
        int at = m->nodes[b].kind->finish ? first_reader(m, b) : -1;
        if (at >= 0 && !r->starts[at]) r->starts[at] = b + 1;
    }
    return CLNET_OK;
}

/* Whether the replica's memory (*total floats, with `folds` batch norms
 * folded in) fits the device, and its largest buffer the largest it allows. */
static clnet_status check_fits(const clnet_model *m, const clnet_device *d, const clnet_plan *p,
                               int max_batch, int folds, size_t *total) {
    size_t largest_keep = 0;
    for (int i = 0; i < m->count; i++)
        if (p->keep[i] > largest_keep) largest_keep = p->keep[i];
    size_t B = (size_t)max_batch;
    *total = (folds ? 4 : 3) * m->nparams + 2 * m->nbuffers + p->act + p->dact + p->keep_total +
             p->work + 3 * B;
    /* each node's kept memory is a buffer of its own: together they may
     * exceed the largest buffer a device allows */
    size_t largest = p->act > largest_keep ? p->act : largest_keep;
    if (p->dact > largest) largest = p->dact;
    if (p->work > largest) largest = p->work;
    uint64_t have = d->info.global_mem_bytes, max_buf = d->info.max_alloc_bytes;
    if ((uint64_t)*total * 4 > have || (uint64_t)largest * 4 > max_buf)
        return clnet_fail(CLNET_ERR_DEVICE_MEMORY,
                          "the net needs %.1f MiB (largest buffer %.1f MiB) at batch %d on device "
                          "%d (%s), which has %.1f MiB (largest buffer %.1f MiB): use a smaller "
                          "batch",
                          mib(*total), mib(largest), max_batch, d->info.index, d->info.name,
                          (double)have / 1048576.0, (double)max_buf / 1048576.0);
    if (p->act > UINT32_MAX || p->dact > UINT32_MAX || largest_keep > UINT32_MAX ||
        p->work > UINT32_MAX)
        return clnet_fail(CLNET_ERR_DEVICE_MEMORY, "batch %d needs buffers beyond 2^32 floats",
                          max_batch);
    return CLNET_OK;
}

clnet_status clnet_replica_create(clnet_replica **out, const clnet_model *m, clnet_device *d,
                                  int max_batch, int ranks) {
    clnet_status status = CLNET_OK;
    clnet_replica *r = clnet_calloc(1, sizeof *r);
    *out = NULL;
    if (!r) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    r->d = d;
    r->model = m;
    r->max_batch = max_batch;
    r->loss_host = clnet_calloc((size_t)max_batch, sizeof *r->loss_host);
    r->correct_host = clnet_calloc((size_t)max_batch, sizeof *r->correct_host);
    r->host = clnet_malloc(host_bytes(m, ranks));
    if (!r->loss_host || !r->correct_host || !r->host)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    r->work_version = d->choice.gemm_version;
    TRY(clnet_plan_make(&r->plan, m, d, max_batch));
    const clnet_plan *p = &r->plan;

    int folds = clnet_fusion_folds(m->fusion);
    size_t total = 0;
    TRY(check_fits(m, d, p, max_batch, folds, &total));
    r->bytes = total * sizeof(float);
    TRY(clnet_buffer_create(d, m->nparams * sizeof(float), &r->params));
    TRY(clnet_buffer_create(d, m->nparams * sizeof(float), &r->params_next));
    TRY(clnet_buffer_create(d, m->nparams * sizeof(float), &r->grads));
    TRY(clnet_buffer_create(d, m->nbuffers * sizeof(float), &r->buffers));
    TRY(clnet_buffer_create(d, m->nbuffers * sizeof(float), &r->buffers_before));
    r->state = 1;
    if (folds) TRY(clnet_buffer_create(d, m->nparams * sizeof(float), &r->folded));
    TRY(clnet_buffer_create(d, p->act * sizeof(float), &r->act));
    TRY(clnet_buffer_create(d, p->dact * sizeof(float), &r->dact));
    r->keeps = clnet_calloc((size_t)m->count + 1, sizeof *r->keeps);
    r->kernels = clnet_calloc((size_t)m->count * CLNET_NODE_KERNELS + 1, sizeof *r->kernels);
    r->gemms = clnet_calloc((size_t)m->count * CLNET_NODE_GEMMS + 1, sizeof *r->gemms);
    if (!r->keeps || !r->kernels || !r->gemms) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < m->count * CLNET_NODE_GEMMS; i++)
        r->gemms[i] = (clnet_gemm_site){.record = &r->gemm_record,
                                        .layer = m->nodes[i / CLNET_NODE_GEMMS].name};
    for (int i = 0; i < m->count; i++)
        if (p->keep[i]) TRY(clnet_buffer_create(d, p->keep[i] * sizeof(float), &r->keeps[i]));
    TRY(clnet_links_make(&r->links, m, p, r->keeps));
    TRY(make_starts(r));
    TRY(clnet_buffer_create(d, p->work * sizeof(float), &r->work));
    TRY(make_loss_buffers(r, (size_t)max_batch));
    TRY(clnet_staging_create(d, m->nparams * sizeof(float), &r->staging)); /* step.c */
    if (clnet_guard_on(d)) { /* a pass's tails, then every buffer's */
        r->guards = clnet_calloc((size_t)m->count + 32 + CLNET_MAX_INPUTS, sizeof *r->guards);
        if (!r->guards) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *out = r;
    r = NULL;
cleanup:
    clnet_replica_free(r);
    return status;
}

clnet_status clnet_replica_fit_work(clnet_replica *r) {
    clnet_status status = CLNET_OK;
    clnet_device *d = r->d;
    cl_mem more = NULL;
    if (r->work_version == d->choice.gemm_version) return CLNET_OK;
    /* what the device chooses changed: a node's kernel slot may now want
     * another program (a tile built with other options), so every node looks
     * its kernels up again (the handles belong to the device) */
    memset(r->kernels, 0, (size_t)r->model->count * CLNET_NODE_KERNELS * sizeof *r->kernels);
    size_t work = clnet_plan_work(r->model, d, r->max_batch);
    if (work > r->plan.work) {
        size_t bytes = r->bytes + (work - r->plan.work) * sizeof(float);
        if ((uint64_t)bytes > d->info.global_mem_bytes ||
            (uint64_t)work * sizeof(float) > d->info.max_alloc_bytes || work > UINT32_MAX)
            FAIL(CLNET_ERR_DEVICE_MEMORY,
                 "the GEMMs chosen now on device %d (%s) need %.1f MiB of scratch at batch %d "
                 "(the net %.1f MiB), more than the device allows: use a smaller batch",
                 d->info.index, d->info.name, mib(work), r->max_batch, (double)bytes / 1048576.0);
        TRY(clnet_buffer_create(d, work * sizeof(float), &more));
        /* the queue may still use the old one: OpenCL frees it once done */
        CL_CHECK(clReleaseMemObject(r->work), "clReleaseMemObject(scratch)");
        r->work = more;
        more = NULL;
        r->bytes = bytes;
        r->plan.work = work;
    }
    r->work_version = d->choice.gemm_version;
cleanup:
    if (more) clReleaseMemObject(more);
    return status;
}

clnet_status clnet_replica_write_state(clnet_replica *r, const float *params,
                                       const float *buffers) {
    r->state++;
    clnet_status s = clnet_buffer_write(r->d, r->params, 0, r->model->nparams, params);
    if (s == CLNET_OK && buffers)
        s = clnet_buffer_write(r->d, r->buffers, 0, r->model->nbuffers, buffers);
    return s;
}

clnet_status clnet_replica_write_next(clnet_replica *r, const float *host, size_t from,
                                      size_t end) {
    clnet_status status = CLNET_OK;
    CL_CHECK(clEnqueueWriteBuffer(r->d->queue, r->params_next, CL_FALSE, from * sizeof(float),
                                  (end - from) * sizeof(float), host + from, 0, NULL, NULL),
             "clEnqueueWriteBuffer(next parameters)");
cleanup:
    return status;
}

void clnet_replica_take_next(clnet_replica *r) {
    cl_mem p = r->params;
    r->params = r->params_next;
    r->params_next = p;
    r->state++;
}

clnet_status clnet_replica_write_buffers(clnet_replica *r, const float *buffers) {
    r->state++;
    return clnet_buffer_write(r->d, r->buffers, 0, r->model->nbuffers, buffers);
}

/* A copy between the buffers on the device, queued. */
static clnet_status copy_buffers(clnet_replica *r, cl_mem from, cl_mem to) {
    clnet_status status = CLNET_OK;
    if (!r->model->nbuffers) return CLNET_OK;
    CL_CHECK(clEnqueueCopyBuffer(r->d->queue, from, to, 0, 0, r->model->nbuffers * sizeof(float), 0,
                                 NULL, NULL),
             "clEnqueueCopyBuffer(buffers)");
cleanup:
    return status;
}

clnet_status clnet_replica_keep_buffers(clnet_replica *r) {
    return copy_buffers(r, r->buffers, r->buffers_before);
}

clnet_status clnet_replica_restore_buffers(clnet_replica *r) {
    r->state++;
    return copy_buffers(r, r->buffers_before, r->buffers);
}

int clnet_replica_folds(const clnet_replica *r) {
    return r->folded != NULL;
}

int clnet_replica_folded_now(const clnet_replica *r) {
    return r->folded && r->folded_state == r->state;
}

clnet_status clnet_replica_write_folded(clnet_replica *r, const float *params) {
    clnet_status s = clnet_buffer_write(r->d, r->folded, 0, r->model->nparams, params);
    if (s == CLNET_OK) r->folded_state = r->state;
    return s;
}

clnet_status clnet_replica_read_buffers(clnet_replica *r, float *buffers) {
    return clnet_buffer_read(r->d, r->buffers, 0, r->model->nbuffers, buffers);
}

/* The copies of a batch into the input, the labels and the targets, not waiting. */
static clnet_status upload(clnet_replica *r, const float *images, const int32_t *labels,
                           const float *targets, int n) {
    clnet_status status = CLNET_OK;
    clnet_device *d = r->d;
    size_t bytes = (size_t)n * clnet_shape_size(r->model->input) * sizeof(float);
    CL_CHECK(clEnqueueWriteBuffer(d->queue, r->act, CL_FALSE, r->plan.input * sizeof(float), bytes,
                                  images, 0, NULL, NULL),
             "clEnqueueWriteBuffer(input)");
    CL_CHECK(clEnqueueWriteBuffer(d->queue, r->labels, CL_FALSE, 0, (size_t)n * sizeof(int32_t),
                                  labels, 0, NULL, NULL),
             "clEnqueueWriteBuffer(labels)");
    if (targets && r->targets)
        CL_CHECK(clEnqueueWriteBuffer(d->queue, r->targets, CL_FALSE, 0,
                                      (size_t)n * r->target_size * sizeof(float), targets, 0, NULL,
                                      NULL),
                 "clEnqueueWriteBuffer(targets)");
cleanup:
    return status;
}

static clnet_status check_batch(const clnet_replica *r, int n) {
    if (n < 1 || n > r->max_batch)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "batch of %d samples: the net is bound for 1..%d", n, r->max_batch);
    return CLNET_OK;
}

clnet_status clnet_replica_load(clnet_replica *r, const float *images, const int32_t *labels,
                                const float *targets, int n) {
    clnet_status status = check_batch(r, n);
    if (status != CLNET_OK) return status;
    int ahead = r->staged.images == images && r->staged.labels == labels &&
                r->staged.targets == targets && r->staged.n == n;
    clnet_replica_unstage(r);
    if (ahead && labels) {
        r->staged_loads++;
        return CLNET_OK;
    }
    if (!labels) { /* the loss kernel still reads labels: make them valid */
        memset(r->correct_host, 0, (size_t)n * sizeof(int32_t));
        labels = r->correct_host;
    }
    return upload(r, images, labels, targets, n);
}

clnet_status clnet_replica_stage(clnet_replica *r, const float *images, const int32_t *labels,
                                 const float *targets, int n) {
    clnet_status status = check_batch(r, n);
    clnet_replica_unstage(r);
    if (status == CLNET_OK && labels) status = upload(r, images, labels, targets, n);
    if (status == CLNET_OK && labels) {
        r->staged.images = images;
        r->staged.labels = labels;
        r->staged.targets = targets;
        r->staged.n = n;
        CL_CHECK(clFlush(r->d->queue), "clFlush"); /* start now */
    }
cleanup:
    return status;
}

void clnet_replica_unstage(clnet_replica *r) {
    r->staged.images = NULL;
    r->staged.labels = NULL;
    r->staged.targets = NULL;
}

/* The pass of node i over n samples (backward: its backward pass). */
static clnet_pass make_pass(const clnet_replica *r, const clnet_ctx *ctx, int i, int n,
                            int backward, int accumulate) {
    const clnet_node *node = &r->model->nodes[i];
    const clnet_plan *p = &r->plan;
    clnet_pass pass = {
        .ctx = ctx,
        .d = r->d,
        .n = n,
        .params = r->params,
        .grads = r->grads,
        .buffers = r->buffers,
        .act = r->act,
        .y = p->y[i],
        .dact = r->dact,
        .dy = p->dy[i],
        .keep = r->keeps[i],
        .keep_off = 0,
        .work = r->work,
        .keep_cap = p->keep[i],
        .work_cap = p->work,
        .backward = backward,
        .kernels = r->kernels + (size_t)i * CLNET_NODE_KERNELS,
        .gemms = r->gemms + (size_t)i * CLNET_NODE_GEMMS,
        .host = r->host,
        .beta = accumulate ? 1.0f : 0.0f,
        .labels = r->labels,
        .targets = r->targets,
        .loss = r->loss,
        .correct = r->correct,
    };
    for (int k = 0; k < node->ninputs; k++) {
        int from = node->inputs[k];
        pass.x[k] = from == CLNET_MODEL_INPUT ? p->input : p->y[from];
        pass.dx[k] = from == CLNET_MODEL_INPUT ? 0 : p->dy[from];
        pass.need_dx[k] = p->need_dx[i * CLNET_MAX_INPUTS + k];
        pass.dx_beta[k] = p->dx_beta[i * CLNET_MAX_INPUTS + k];
    }
    pass.want_grad = ctx->train && pass.need_dx[0];
    clnet_links_pass(&r->links, r->model, p, i, clnet_replica_folded_now(r) ? r->folded : NULL,
                     &pass);
    return pass;
}

/* ---- a pass run: guarded (replica_guard.c) and timed ------------------------------------ */

/* Runs one node's pass, timing it when the replica is profiled. */
static clnet_status timed(clnet_replica *r, int slot,
                          clnet_status (*fn)(const clnet_node *, const clnet_pass *),
                          const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    if (!r->profile) return clnet_replica_guarded(r, fn, node, p);
    CL_CHECK(clFinish(r->d->queue), "clFinish"); /* the profile's own: not counted */
    double t0 = clnet_now();
    TRY(clnet_replica_guarded(r, fn, node, p));
    CL_CHECK(clFinish(r->d->queue), "clFinish");
    r->profile[slot] += clnet_now() - t0;
cleanup:
    return status;
}

static clnet_status in_device(clnet_status s, const clnet_replica *r) {
    if (s != CLNET_OK) clnet_error_context(s, "device %d (%s)", r->d->info.index, r->d->info.name);
    return s;
}

/* ---- exchanges on their way (clnet_pass.later) -------------------------------------------
 *
 * A batch norm across devices stops its device twice a step: its statistics
 * (forward) and its sums (backward) go to the host and come back merged
 * with the other devices'. The runner lets work that does not depend on the
 * merge queue behind the read meanwhile, so the device keeps working while
 * the host waits for the others: in forward the nodes after the batch norm
 * up to the first that reads it (a downsampling block's shortcut
 * convolution); in backward, the batch norm starts as soon as its output
 * gradient is complete, that is right after the input gradient of its first
 * reader (a convolution then makes its weight gradient meanwhile), and the
 * nodes between them run before it finishes. Every kernel reads and writes
 * what it did in node order, so the floats are the same
 * (CLNET_OVERLAP=off: every exchange where the node stands). At most one
 * exchange is on its way at a time, and it finishes before any node that
 * reads it or exchanges itself. */

/* Whether node j can run while node b's exchange is on its way: it reads
 * nothing b makes and exchanges nothing itself (no host scratch). */
static int independent_of(const clnet_model *m, int b, int j) {
    const clnet_node *node = &m->nodes[j];
    if (node->kind->is_view || node->kind->is_loss || node->kind->host_bytes) return 0;
    for (int k = 0; k < node->ninputs; k++)
        if (node->inputs[k] == b) return 0;
    return 1;
}

static int overlapping(const clnet_replica *r, const clnet_ctx *ctx) {
    return r->overlap && ctx->train && ctx->coll && ctx->coll->size > 1;
}

/* Runs what node b's pass left on its way (clnet_pass.later). */
static clnet_status finish_later(clnet_replica *r, const clnet_ctx *ctx, int n, int backward,
                                 int accumulate) {
    int b = r->later_node - 1;
    const clnet_node *node = &r->model->nodes[b];
    int sent = r->later.event != NULL;
    r->later_node = r->later.pending = 0;
    clnet_pass p = make_pass(r, ctx, b, n, backward, accumulate);
    p.later = &r->later;
    clnet_status s = timed(r, 2 * b + backward, node->kind->finish, node, &p);
    if (s != CLNET_OK)
        return in_device(clnet_error_context(s, "%s of layer '%s'",
                                             backward ? "backward" : "forward", node->name),
                         r);
    if (r->later_ran && sent) clnet_count_overlap();
    r->later_ran = 0;
    return CLNET_OK;
}

/* Forgets what a failed pass left on its way: the read still lands first,
 * since the queue runs in order. */
static void drop_later(clnet_replica *r) {
    if (r->later.event) clReleaseEvent(r->later.event);
    r->later.event = NULL;
    r->later_node = r->later_ran = r->later.pending = 0;
}

clnet_status clnet_replica_forward(clnet_replica *r, const clnet_ctx *ctx, int n) {
    clnet_status fit = clnet_replica_fit_work(r); /* nothing to do unless d's choices changed */
    if (fit != CLNET_OK) return in_device(fit, r);
    int folding = !ctx->train && clnet_replica_folded_now(r), overlap = overlapping(r, ctx);
    drop_later(r);
    for (int i = 0; i < r->model->count; i++) {
        const clnet_node *node = &r->model->nodes[i];
        if (folding && clnet_fusion_fold_into(r->model->fusion, i) >= 0)
            continue; /* its convolution wrote its output */
        if (r->later_node && !independent_of(r->model, r->later_node - 1, i)) {
            clnet_status s = finish_later(r, ctx, n, 0, 0);
            if (s != CLNET_OK) return s;
        }
        clnet_pass p = make_pass(r, ctx, i, n, 0, 0);
        if (overlap && !r->later_node && node->kind->finish) p.later = &r->later;
        clnet_status s = timed(r, 2 * i, node->kind->forward, node, &p);
        if (s != CLNET_OK)
            return in_device(clnet_error_context(s, "forward of layer '%s'", node->name), r);
        if (r->later_node) r->later_ran = 1;
        if (r->later.pending && !r->later_node) r->later_node = i + 1;
    }
    return r->later_node ? finish_later(r, ctx, n, 0, 0) : CLNET_OK;
}

/* Part `part` of node i's backward pass (clnet_pass.part); with later, it
 * may leave its exchange on its way. */
static clnet_status backward_part(clnet_replica *r, const clnet_ctx *ctx, int n, int i,
                                  int accumulate, int part, clnet_later *later) {
    const clnet_node *node = &r->model->nodes[i];
    clnet_pass p = make_pass(r, ctx, i, n, 1, accumulate);
    p.part = part;
    p.later = later;
    clnet_status s = timed(r, 2 * i + 1, node->kind->backward, node, &p);
    if (s != CLNET_OK)
        return in_device(clnet_error_context(s, "backward of layer '%s'", node->name), r);
    return CLNET_OK;
}

/* Node i's backward, and the batch norm whose output gradient it completes
 * (r->starts[i]) started right after i's input gradient (an add that
 * normalizes it, clnet_fusion_normalizes, computes its sums in its backward). */
static clnet_status backward_starting(clnet_replica *r, const clnet_ctx *ctx, int n, int i,
                                      int accumulate, int b) {
    clnet_status status = CLNET_OK;
    int split = r->model->nodes[i].kind->splits_backward;
    TRY(backward_part(r, ctx, n, i, accumulate, split ? CLNET_PART_DX : CLNET_PART_ALL, NULL));
    TRY(backward_part(r, ctx, n, b, accumulate, CLNET_PART_ALL, &r->later));
    r->later_node = b + 1; /* a backward pass given later always leaves the rest to finish */
    if (split) TRY(backward_part(r, ctx, n, i, accumulate, CLNET_PART_DW, NULL));
    r->later_ran = split;
cleanup:
    return status;
}

clnet_status clnet_replica_backward_node(clnet_replica *r, const clnet_ctx *ctx, int n, int i,
                                         int accumulate) {
    if (r->later_node == i + 1) return finish_later(r, ctx, n, 1, accumulate);
    if (!r->plan.backward[i]) return CLNET_OK;
    if (r->later_node && !independent_of(r->model, r->later_node - 1, i)) {
        clnet_status s = finish_later(r, ctx, n, 1, accumulate);
        if (s != CLNET_OK) return s;
    }
    if (r->later_node) r->later_ran = 1;
    int b = r->starts ? r->starts[i] - 1 : -1;
    if (b >= 0 && !r->later_node && r->plan.backward[b] && overlapping(r, ctx))
        return backward_starting(r, ctx, n, i, accumulate, b);
    return backward_part(r, ctx, n, i, accumulate, CLNET_PART_ALL, NULL);
}

clnet_status clnet_replica_time_node(clnet_replica *r, const clnet_ctx *ctx, int i, int n, int reps,
                                     double *seconds) {
    clnet_status status = CLNET_OK;
    const clnet_node *node = &r->model->nodes[i];
    TRY(clnet_replica_fit_work(r));
    CL_CHECK(clnet_finish(r->d), "clFinish");
    double t0 = clnet_now();
    for (int k = 0; k < reps; k++) {
        clnet_pass p = make_pass(r, ctx, i, n, 0, 0);
        TRY(clnet_replica_guarded(r, node->kind->forward, node, &p));
        if (!r->plan.backward[i] || !node->kind->backward) continue;
        p = make_pass(r, ctx, i, n, 1, 0);
        TRY(clnet_replica_guarded(r, node->kind->backward, node, &p));
    }
    CL_CHECK(clnet_finish(r->d), "clFinish");
    *seconds = (clnet_now() - t0) / (reps > 0 ? reps : 1);
cleanup:
    return in_device(status, r);
}

clnet_status clnet_replica_backward(clnet_replica *r, const clnet_ctx *ctx, int n, int accumulate) {
    for (int i = r->model->count - 1; i >= 0; i--) {
        clnet_status s = clnet_replica_backward_node(r, ctx, n, i, accumulate);
        if (s != CLNET_OK) return s;
    }
    return CLNET_OK;
}

clnet_status clnet_replica_results(clnet_replica *r, int n, int with_labels, double *loss_sum,
                                   int *correct, float *probs, int logits) {
    clnet_status status = CLNET_OK;
    clnet_device *d = r->d;
    const clnet_model *m = r->model;
    if (with_labels) {
        clnet_count_wait(); /* the read of correct after it finds the queue drained */
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
            right += r->correct_host[b] > 0 ? r->correct_host[b] : 0; /* -1: not a class */
        }
        if (loss_sum) *loss_sum = sum;
        if (correct) *correct = right;
    }
    if (probs) {
        int from = m->nodes[m->count - 1].inputs[0]; /* the loss's input: the logits */
        size_t at = !logits                     ? r->plan.y[m->count - 1]
                    : from == CLNET_MODEL_INPUT ? r->plan.input
                                                : r->plan.y[from];
        TRY(clnet_buffer_read(d, r->act, at, (size_t)n * clnet_model_outputs(m), probs));
    }
cleanup:
    return in_device(status, r);
}

clnet_status clnet_replica_add_grads(clnet_replica *r, float *host) {
    clnet_status status = CLNET_OK;
    clnet_host_view view;
    TRY(clnet_host_view_begin(r->d, r->grads, 0, r->model->nparams, &r->staging, &view));
    for (size_t i = 0; i < r->model->nparams; i++) host[i] += view.data[i];
    TRY(clnet_host_view_end(r->d, &view));
cleanup:
    return status;
}
