/* Asynchronous (parameter-server) training, bounded staleness.
 *
 * Every device, on its worker thread, repeatedly pulls the current
 * parameters, computes the gradient of its own batch, and pushes it; the
 * server applies each push at once (the optimizer, dividing by that
 * batch), so fast devices never wait for slow ones. The price: a push may
 * have been computed on parameters that are a few updates old, so the
 * result is no longer what one device would compute.
 *
 * The bound: a gradient is never applied more than K updates after the
 * parameters it was computed on were pulled. A device may start (pull) only
 * if, for every other device still computing, the updates already applied
 * since that device pulled plus the pushes that may land before it (one per
 * device computing, this one included) stay within K. With K = 0 devices
 * take turns.
 *
 * Across MPI ranks rank 0 is the server: it holds the master copy, the
 * optimizer and the loader, and its calling thread answers the other
 * ranks' devices (a pull: a batch and the parameters; a push: a gradient)
 * while its own devices run as in one process. The bound covers every
 * device of every rank. At the end of each call every rank takes rank 0's
 * parameters, buffers and optimizer state, so the ranks leave identical. */
#include "async.h"
#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "hostmath.h"
#include "share.h"
#include "broadcast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages between a device of another rank and the server (rank 0): a
 * request (a pull, or a push followed by its gradient) and the answer to
 * a pull (go, then the parameters, the images and the labels). Each is
 * one message, its header first. */
enum { PULL = 1, PUSH = 2 };
typedef struct {
    int32_t kind, device, n, correct; /* device: its number among every rank's */
    double loss, seconds;
} request_header;
typedef struct {
    int32_t go, n; /* go 0: no more updates in this call */
    int64_t pulled;
} reply_header;
#define TAG_REQUEST 1
#define TAG_REPLY   2 /* + the device's number */

typedef struct {
    float *images, *params, *grads;
    int32_t *labels;
    int busy;
    int64_t pulled; /* the step it pulled at */
    int waiting;    /* server: its pull waits for an answer */
    double since;   /* server: when it pulled */
    char *in, *out; /* this process's devices: the answer and the request (MPI) */
} async_device;

struct clnet_async {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    async_device *dev; /* one per device of every rank; buffers for this rank's */
    char *in, *out;    /* the server's request and answer */
    size_t in_bytes, out_bytes;
    /* the run in progress */
    clnet_model *model;
    clnet_optim *optim;
    clnet_loader *loader;
    int staleness, remaining, failed;
    /* The batch of a device dropped after failing (clnet_trainer_drop): the
     * next device to pull takes it before the loader's next one, so no
     * update is lost. */
    float *redo_images;
    int32_t *redo_labels;
    int redo_n;
    double loss;
    int correct, samples;
    int64_t worst_staleness; /* the oldest parameters a push was computed on, over every call */
    /* (total) one push as the balancer sees it: that device's alone */
    int *shares;
    double *seconds;
};

int64_t clnet_async_worst_staleness(const clnet_trainer *t) {
    return t && t->async ? t->async->worst_staleness : 0;
}

void clnet_async_free(clnet_trainer *t) {
    struct clnet_async *a = t ? t->async : NULL;
    if (!a) return;
    for (int i = 0; a->dev && i < t->ranks.total; i++) free(a->dev[i].in), free(a->dev[i].out);
    free(a->dev);
    free(a->shares), free(a->seconds);
    free(a->redo_images), free(a->redo_labels);
    free(a->in);
    free(a->out);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->changed);
    free(a);
    t->async = NULL;
}

/* Points d's arrays into a request (out) and an answer (in) laid out as
 * the messages are, so a device of another rank sends and receives them
 * without copies. */
static void lay_out(const clnet_trainer *t, async_device *d) {
    size_t np = t->model->nparams + 1, in = clnet_shape_size(t->model->input);
    d->grads = (float *)(d->out + sizeof(request_header));
    d->params = (float *)(d->in + sizeof(reply_header));
    d->images = d->params + np;
    d->labels = (int32_t *)(d->images + (size_t)t->max_batch * in);
}

/* The per-device buffers, made once. */
static clnet_status make_state(clnet_trainer *t) {
    if (t->async) return CLNET_OK;
    struct clnet_async *a = clnet_calloc(1, sizeof *a);
    if (!a) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    a->dev = clnet_calloc((size_t)t->ranks.total, sizeof *a->dev);
    a->shares = clnet_calloc((size_t)t->ranks.total, sizeof *a->shares);
    a->seconds = clnet_calloc((size_t)t->ranks.total, sizeof *a->seconds);
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->changed, NULL);
    t->async = a;
    if (!a->dev || !a->shares || !a->seconds) {
        clnet_async_free(t);
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t np = t->model->nparams + 1, in = clnet_shape_size(t->model->input);
    a->in_bytes = sizeof(request_header) + np * sizeof(float);
    a->out_bytes = sizeof(reply_header) + (np + (size_t)t->max_batch * in) * sizeof(float) +
                   (size_t)t->max_batch * sizeof(int32_t);
    int server = t->ranks.dist && clnet_mpi_rank() == 0;
    for (int i = 0; i < t->count; i++) {
        async_device *d = &a->dev[t->ranks.first + i];
        d->in = clnet_malloc(a->out_bytes);
        d->out = clnet_malloc(a->in_bytes);
        if (!d->in || !d->out) break;
        lay_out(t, d);
    }
    if (server) a->in = clnet_malloc(a->in_bytes), a->out = clnet_malloc(a->out_bytes);
    a->redo_images = clnet_malloc((size_t)t->max_batch * in * sizeof(float));
    a->redo_labels = clnet_malloc((size_t)t->max_batch * sizeof(int32_t));
    for (int i = 0; i < t->count; i++)
        if (!a->dev[t->ranks.first + i].in || !a->dev[t->ranks.first + i].out ||
            (server && (!a->in || !a->out)) || !a->redo_images || !a->redo_labels) {
            clnet_async_free(t);
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for the buffers of "
                                                       "asynchronous training");
        }
    return CLNET_OK;
}

/* May device g (of every rank's) pull now without breaking anyone's
 * staleness bound? */
static int may_pull(const clnet_trainer *t, int g) {
    const struct clnet_async *a = t->async;
    int computing = 1; /* g itself, once it starts */
    for (int j = 0; j < t->ranks.total; j++) computing += j != g && a->dev[j].busy;
    for (int j = 0; j < t->ranks.total; j++)
        if (j != g && a->dev[j].busy &&
            (a->optim->step - a->dev[j].pulled) + (computing - 1) > a->staleness)
            return 0;
    return 1;
}

/* Gives device g the next batch and the current parameters (into its
 * answer `reply`, laid out as a message), under the lock. 0: no batches
 * left; -1 with *status on a failure. */
static int take_batch(clnet_trainer *t, int g, char *reply, clnet_status *status) {
    struct clnet_async *a = t->async;
    size_t np = t->model->nparams + 1, in = clnet_shape_size(t->model->input);
    reply_header *h = (reply_header *)reply;
    float *params = (float *)(reply + sizeof *h), *images = params + np;
    int32_t *labels = (int32_t *)(images + (size_t)t->max_batch * in);
    clnet_batch batch;
    *h = (reply_header){0};
    if (a->failed || (a->remaining <= 0 && !a->redo_n)) return 0;
    if (a->redo_n) { /* a dropped device's batch first */
        batch = (clnet_batch){.images = a->redo_images, .labels = a->redo_labels, .n = a->redo_n};
        a->redo_n = 0;
    } else {
        *status = clnet_loader_next(a->loader, &batch); /* one loader, taken in turns */
        if (*status != CLNET_OK) return -1;
        a->remaining--;
    }
    memcpy(images, batch.images, (size_t)batch.n * in * sizeof(float));
    memcpy(labels, batch.labels, (size_t)batch.n * sizeof(int32_t));
    memcpy(params, a->model->params, t->model->nparams * sizeof(float));
    a->dev[g].busy = 1;
    a->dev[g].pulled = a->optim->step;
    a->dev[g].since = clnet_now();
    *h = (reply_header){.go = 1, .n = batch.n, .pulled = a->optim->step};
    return 1;
}

/* Applies device g's push (its gradient of n samples), under the lock; a
 * push whose loss, gradient or update is not finite is refused and stops
 * the run (CLNET_ERR_NONFINITE), nothing of it applied. */
static clnet_status apply_push(clnet_trainer *t, int g, const float *grads,
                               const request_header *r) {
    struct clnet_async *a = t->async;
    int64_t stale = a->optim->step - a->dev[g].pulled;
    size_t np = t->model->nparams;
    a->dev[g].busy = 0;
    if (!isfinite(r->loss) || clnet_first_nonfinite(grads, np) < np ||
        clnet_optim_apply(a->optim, a->model->params, grads, np, r->n) < np)
        return clnet_fail(CLNET_ERR_NONFINITE,
                          "asynchronous update %lld: the push of %d samples has a loss of %g and "
                          "a gradient or update that is NaN or infinite: not applied",
                          (long long)a->optim->step, r->n, r->loss);
    if (stale > a->worst_staleness) a->worst_staleness = stale;
    clnet_model_count_step(a->model);
    a->loss += r->loss;
    a->correct += r->correct;
    a->samples += r->n;
    for (int j = 0; j < t->ranks.total; j++) /* the balancer sees this device alone */
        a->shares[j] = j == g ? r->n : 0, a->seconds[j] = j == g ? r->seconds : 0;
    clnet_balance_update(&t->split.balance, a->shares, a->seconds);
    pthread_cond_broadcast(&a->changed);
    return CLNET_OK;
}

/* Replica i's gradient sum of n samples into d->grads, from d->params (in
 * micro-batches when n does not fit); the request header gets the figures. */
static clnet_status compute(clnet_trainer *t, int i, async_device *d, int n, request_header *out) {
    clnet_status status = CLNET_OK;
    clnet_replica *r = t->replicas[i];
    clnet_ctx ctx = {.train = 1, .d = r->d, .step = d->pulled};
    /* CLNET_FAULT counts the update a device pulled at as its step */
    clnet_share share = {.images = d->images,
                         .labels = d->labels,
                         .n = n,
                         .fault_after_forward = clnet_fault(&t->split.faults, t->ranks.first + i,
                                                            d->pulled, CLNET_FAULT_KERNELS)};
    double t0 = clnet_now(), loss = 0;
    int correct = 0;
    *out = (request_header){.kind = PUSH, .device = t->ranks.first + i, .n = n};
    if (t->split.batch_stats && n > r->max_batch)
        FAIL(CLNET_ERR_DEVICE_MEMORY,
             "a batch of %d samples does not fit device %d (%s), which holds %d, and layer '%s' "
             "(%s) normalizes a batch in one pass: use a batch of at most %d",
             n, r->d->info.index, r->d->info.name, r->max_batch, t->split.batch_stats->name,
             t->split.batch_stats->kind->name, r->max_batch);
    if (clnet_fault(&t->split.faults, t->ranks.first + i, d->pulled, CLNET_FAULT_START))
        FAIL(CLNET_ERR_OPENCL, "injected fault (CLNET_FAULT) in update %lld", (long long)d->pulled);
    TRY(clnet_replica_write_state(r, d->params, NULL));
    TRY(clnet_share_run(r, &ctx, &share, &loss, &correct));
    out->loss = loss;
    out->correct = correct;
    memset(d->grads, 0, t->model->nparams * sizeof(float));
    TRY(clnet_replica_add_grads(r, d->grads));
    clnet_throttle_wait(&t->split.faults, t->ranks.first + i, clnet_now() - t0);
    out->seconds = clnet_now() - t0;
cleanup:
    return status;
}

/* Marks the run failed, so every device stops. */
static void stop_all(struct clnet_async *a) {
    pthread_mutex_lock(&a->lock);
    a->failed = 1;
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
}

static clnet_status device_failed(clnet_trainer *t, int i, clnet_status status) {
    clnet_replica *r = t->replicas[i];
    if (t->ranks.dist)
        clnet_error_context(status, "rank %d device %d (%s)", clnet_mpi_rank(), r->d->info.index,
                            r->d->info.name);
    else
        clnet_error_context(status, "device %d (%s)", r->d->info.index, r->d->info.name);
    stop_all(t->async);
    return status;
}

/* Whether device g must wait: work is left but its pull would break the
 * bound; or none is left, but with CLNET_ON_FAILURE_CONTINUE another device
 * still computes, whose batch comes back if it fails. */
static int must_wait(const clnet_trainer *t, int g) {
    const struct clnet_async *a = t->async;
    if (a->failed) return 0;
    if (a->remaining > 0 || a->redo_n) return !may_pull(t, g);
    for (int i = 0; t->on_failure == CLNET_ON_FAILURE_CONTINUE && i < t->count; i++)
        if (t->ranks.first + i != g && t->alive[i] && a->dev[t->ranks.first + i].busy) return 1;
    return 0;
}

/* Device g failed computing its batch (in d->images): with
 * CLNET_ON_FAILURE_CONTINUE and another device left it is dropped and its
 * batch handed to the next device to pull; 0 when it was not. */
static int drop_device(clnet_trainer *t, int i, async_device *d, int n, clnet_status status) {
    struct clnet_async *a = t->async;
    pthread_mutex_lock(&a->lock);
    int dropped = !a->failed && clnet_trainer_drop(t, i, d->pulled, status);
    if (dropped) {
        memcpy(a->redo_images, d->images,
               (size_t)n * clnet_shape_size(t->model->input) * sizeof(float));
        memcpy(a->redo_labels, d->labels, (size_t)n * sizeof(int32_t));
        a->redo_n = n;
        d->busy = 0;
        pthread_cond_broadcast(&a->changed);
    }
    pthread_mutex_unlock(&a->lock);
    return dropped;
}

/* A device of the server's process: pull, compute, push, until the updates
 * are taken. */
static clnet_status device_loop(int i, void *arg) {
    clnet_trainer *t = arg;
    struct clnet_async *a = t->async;
    int g = t->ranks.first + i;
    async_device *d = &a->dev[g];
    clnet_status status = CLNET_OK;
    for (;;) {
        pthread_mutex_lock(&a->lock);
        while (must_wait(t, g)) pthread_cond_wait(&a->changed, &a->lock);
        int go = take_batch(t, g, d->in, &status);
        pthread_mutex_unlock(&a->lock);
        if (go <= 0) break;

        request_header *h = (request_header *)d->out;
        const reply_header *rh = (const reply_header *)d->in;
        status = compute(t, i, d, rh->n, h);
        if (status != CLNET_OK) {
            clnet_replica *r = t->replicas[i];
            clnet_error_context(status, "device %d (%s)", r->d->info.index, r->d->info.name);
            if (!t->ranks.dist && drop_device(t, i, d, rh->n, status))
                return CLNET_OK; /* the others go on, this batch with them */
            stop_all(a);
            return status;
        }
        pthread_mutex_lock(&a->lock);
        if (status == CLNET_OK) status = apply_push(t, g, d->grads, h);
        d->busy = 0;
        pthread_mutex_unlock(&a->lock);
        if (status != CLNET_OK) break;
    }
    return status == CLNET_OK ? status : device_failed(t, i, status);
}

/* A device of another rank: the same loop, through messages to rank 0. */
static clnet_status remote_loop(int i, void *arg) {
    clnet_trainer *t = arg;
    clnet_status status = CLNET_OK;
    int g = t->ranks.first + i;
    async_device *d = &t->async->dev[g];
    request_header *h = (request_header *)d->out;
    const reply_header *rh = (const reply_header *)d->in;
    size_t push_bytes = sizeof *h + t->model->nparams * sizeof(float);
    for (;;) {
        *h = (request_header){.kind = PULL, .device = g};
        TRY(clnet_dist_send(t->ranks.dist, 0, TAG_REQUEST, h, sizeof *h,
                            "asking the parameter server (rank 0) for parameters"));
        TRY(clnet_dist_recv(t->ranks.dist, 0, TAG_REPLY + g, d->in, t->async->out_bytes, NULL,
                            "waiting for parameters from the parameter server (rank 0)"));
        if (!rh->go) break;
        d->pulled = rh->pulled;
        TRY(compute(t, i, d, rh->n, h));
        TRY(clnet_dist_send(t->ranks.dist, 0, TAG_REQUEST, h, push_bytes,
                            "pushing a gradient to the parameter server (rank 0)"));
    }
cleanup:
    return status == CLNET_OK ? status : device_failed(t, i, status);
}

/* Names the devices of other ranks the server waits for, into text. */
static void name_late(const clnet_trainer *t, char *text, size_t size) {
    size_t used = 0;
    text[0] = 0;
    for (int g = 0; g < t->ranks.total && used + 1 < size; g++) {
        const async_device *d = &t->async->dev[g];
        if (!d->busy || t->ranks.peers[g].rank == 0) continue;
        int n = snprintf(text + used, size - used, "%srank %d device %d (%s, pulled %.0f s ago)",
                         used ? ", " : "", t->ranks.peers[g].rank, t->ranks.peers[g].index,
                         t->ranks.peers[g].name, clnet_now() - d->since);
        if (n < 0) break;
        used += (size_t)n;
    }
}

/* A request from rank `from` (got bytes in a->in): a pull waits for its
 * answer, a push is applied. */
static clnet_status take_request(clnet_trainer *t, int from, size_t got) {
    struct clnet_async *a = t->async;
    const request_header *h = (const request_header *)a->in;
    size_t push_bytes = sizeof *h + t->model->nparams * sizeof(float);
    int g = h->device;
    if (got < sizeof *h || g < t->count || g >= t->ranks.total || t->ranks.peers[g].rank != from ||
        (h->kind == PULL && (a->dev[g].busy || a->dev[g].waiting)) ||
        (h->kind == PUSH && (!a->dev[g].busy || got != push_bytes || h->n <= 0)) ||
        (h->kind != PULL && h->kind != PUSH))
        return clnet_fail(CLNET_ERR_MPI,
                          "the parameter server (rank 0) got a message it did not expect from "
                          "rank %d (%zu bytes, kind %d, device %d)",
                          from, got, h->kind, g);
    if (h->kind == PULL) {
        a->dev[g].waiting = 1;
        return CLNET_OK;
    }
    pthread_mutex_lock(&a->lock);
    clnet_status status = apply_push(t, g, (const float *)(a->in + sizeof *h), h);
    pthread_mutex_unlock(&a->lock);
    return status;
}

/* Rank 0's calling thread, while its devices run: answers the other ranks'
 * devices until each has been told that the updates are taken. */
static clnet_status serve(clnet_trainer *t) {
    struct clnet_async *a = t->async;
    clnet_status status = CLNET_OK;
    int left = t->ranks.total - t->count; /* devices of other ranks not yet told to stop */
    double quiet = clnet_now();
    while (left > 0) {
        int moved = 0;
        for (int g = t->count; g < t->ranks.total; g++) {
            if (!a->dev[g].waiting) continue;
            pthread_mutex_lock(&a->lock);
            int go = may_pull(t, g) || a->remaining <= 0 || a->failed
                         ? take_batch(t, g, a->out, &status)
                         : 2;
            pthread_mutex_unlock(&a->lock);
            if (go < 0) goto cleanup;
            if (go == 2) continue;
            const reply_header *rh = (const reply_header *)a->out;
            size_t bytes =
                go ? a->out_bytes - (size_t)(t->max_batch - rh->n) * sizeof(int32_t) : sizeof *rh;
            a->dev[g].waiting = 0;
            left -= !go;
            moved = 1;
            TRY(clnet_dist_send(t->ranks.dist, t->ranks.peers[g].rank, TAG_REPLY + g, a->out, bytes,
                                "sending parameters to a device of another rank"));
        }
        int from = -1;
        size_t got = 0;
        TRY(clnet_dist_poll(t->ranks.dist, TAG_REQUEST, a->in, a->in_bytes, &from, &got,
                            "waiting for the other ranks' devices"));
        if (from >= 0) TRY(take_request(t, from, got));
        moved |= from >= 0;
        double now = clnet_now();
        if (moved) {
            quiet = now;
            continue;
        }
        char late[512];
        name_late(t, late, sizeof late);
        if (late[0] && now - quiet > clnet_dist_timeout())
            FAIL(CLNET_ERR_MPI,
                 "rank 0 (the parameter server) heard nothing for %.0f s (--mpi-timeout); "
                 "still computing: %s",
                 now - quiet, late);
        clnet_sleep(200e-6); /* as a step's wait for its devices polls MPI */
    }
cleanup:
    if (status != CLNET_OK) stop_all(a);
    return status;
}

/* Every rank takes rank 0's figures, parameters, buffers and optimizer
 * state (its devices hold old snapshots: they get the current ones). */
static clnet_status settle(clnet_trainer *t) {
    clnet_status status = CLNET_OK;
    struct clnet_async *a = t->async;
    clnet_model *m = a->model;
    clnet_optim *o = a->optim;
    TRY(clnet_broadcast_gather(t, m)); /* replica 0's: each moved its running statistics alone */
    if (t->ranks.dist) {
        double figures[6] = {a->loss,         a->correct, a->samples, (double)a->worst_staleness,
                             (double)o->step, o->ready};
        const char *what = "sharing the parameter server's state";
        TRY(clnet_dist_bcast(t->ranks.dist, CLNET_LANE_CONTROL, figures, sizeof figures, 0, what));
        a->loss = figures[0];
        a->correct = (int)figures[1];
        a->samples = (int)figures[2];
        a->worst_staleness = (int64_t)figures[3];
        o->step = (int64_t)figures[4];
        o->ready = (int)figures[5];
        TRY(clnet_dist_bcast(t->ranks.dist, CLNET_LANE_CONTROL, m->params,
                             m->nparams * sizeof(float), 0, what));
        TRY(clnet_dist_bcast(t->ranks.dist, CLNET_LANE_CONTROL, m->buffers,
                             m->nbuffers * sizeof(float), 0, what));
        TRY(clnet_dist_bcast(t->ranks.dist, CLNET_LANE_CONTROL, m->counters,
                             m->ncounters * sizeof(int64_t), 0, what));
        for (int k = 0; k < CLNET_OPTIM_SLOTS; k++)
            if (o->slot[k])
                TRY(clnet_dist_bcast(t->ranks.dist, CLNET_LANE_CONTROL, o->slot[k],
                                     m->nparams * sizeof(float), 0, what));
    }
    TRY(clnet_broadcast(t, m, m->nbuffers > 0));
cleanup:
    return status;
}

clnet_status clnet_async_train(clnet_trainer *t, clnet_model *m, clnet_optim *o,
                               clnet_loader *loader, int updates, int staleness,
                               clnet_async_sums *sums) {
    clnet_status status = make_state(t);
    if (status != CLNET_OK) return status;
    struct clnet_async *a = t->async;
    a->model = m;
    a->optim = o;
    a->loader = loader;
    a->staleness = staleness;
    a->remaining = updates;
    a->failed = 0;
    a->loss = 0;
    a->correct = a->samples = 0;
    for (int g = 0; g < t->ranks.total; g++) a->dev[g].busy = a->dev[g].waiting = 0;
    if (!t->ranks.dist) {
        status = clnet_workers_run(t->workers, device_loop, t, t->alive);
    } else if (clnet_mpi_rank() == 0) {
        clnet_workers_start(t->workers, device_loop, t, NULL);
        status = serve(t);
        clnet_status s = clnet_workers_wait(t->workers);
        if (status == CLNET_OK) status = s;
    } else {
        status = clnet_workers_run(t->workers, remote_loop, t, NULL);
    }
    /* after a failure the ranks are not in step: the caller stops them all */
    clnet_status s = status == CLNET_OK || !t->ranks.dist ? settle(t) : CLNET_OK;
    if (status == CLNET_OK) status = s;
    *sums = (clnet_async_sums){a->loss, a->correct, a->samples};
    return status;
}
