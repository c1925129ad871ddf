/* Asynchronous (parameter-server) training, bounded staleness.
 *
 * Every device, on its worker thread, repeatedly pulls the current
 * parameters, computes the gradient of its own batch, and pushes it; this
 * process applies each push at once (the optimizer, dividing by that
 * batch), so fast devices never wait for slow ones. The price: a push may
 * have been computed on parameters that are a few updates old, so the
 * result is no longer what one device would compute.
 *
 * The bound: a gradient is never applied more than K updates after the
 * parameters it was computed on were pulled. A device may start (pull) only
 * if, for every other device still computing, the updates already applied
 * since that device pulled plus the pushes that may land before it (one per
 * device computing, this one included) stay within K. With K = 0 devices
 * take turns. */
#include "async.h"
#include "alloc.h"
#include "clock.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    float *images, *params, *grads;
    int32_t *labels;
    int busy;
    int64_t pulled; /* the step it pulled at */
} async_device;

struct clnet_async {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    async_device *dev; /* one per replica */
    /* the run in progress */
    clnet_model *model;
    clnet_optim *optim;
    clnet_loader *loader;
    int staleness, remaining, failed;
    double loss;
    int correct, samples;
};

void clnet_async_free(clnet_trainer *t) {
    struct clnet_async *a = t ? t->async : NULL;
    if (!a) return;
    for (int i = 0; i < t->count; i++) {
        async_device *d = &a->dev[i];
        free(d->images), free(d->params), free(d->grads), free(d->labels);
    }
    free(a->dev);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->changed);
    free(a);
    t->async = NULL;
}

/* The per-device buffers, made once. */
static clnet_status make_state(clnet_trainer *t) {
    if (t->async) return CLNET_OK;
    struct clnet_async *a = clnet_calloc(1, sizeof *a);
    if (!a) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    a->dev = clnet_calloc((size_t)t->count, sizeof *a->dev);
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->changed, NULL);
    t->async = a;
    if (!a->dev) {
        clnet_async_free(t);
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t in = clnet_shape_size(t->model->input), np = t->model->nparams + 1;
    for (int i = 0; i < t->count; i++) {
        async_device *d = &a->dev[i];
        d->images = clnet_malloc((size_t)t->max_batch * in * sizeof(float));
        d->labels = clnet_malloc((size_t)t->max_batch * sizeof(int32_t));
        d->params = clnet_malloc(np * sizeof(float));
        d->grads = clnet_malloc(np * sizeof(float));
        if (!d->images || !d->labels || !d->params || !d->grads) {
            clnet_async_free(t);
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    return CLNET_OK;
}

/* May device i pull now without breaking anyone's staleness bound? */
static int may_pull(const clnet_trainer *t, int i) {
    const struct clnet_async *a = t->async;
    int computing = 1; /* i itself, once it starts */
    for (int j = 0; j < t->count; j++) computing += j != i && a->dev[j].busy;
    for (int j = 0; j < t->count; j++)
        if (j != i && a->dev[j].busy &&
            (a->optim->step - a->dev[j].pulled) + (computing - 1) > a->staleness)
            return 0;
    return 1;
}

/* Replica i's gradient sum of n samples into its grads, from its pulled
 * parameters (in micro-batches when n does not fit). */
static clnet_status compute(clnet_trainer *t, int i, int n, double *loss, int *correct) {
    clnet_status status = CLNET_OK;
    async_device *d = &t->async->dev[i];
    clnet_replica *r = t->replicas[i];
    size_t in = clnet_shape_size(t->model->input);
    clnet_ctx ctx = {.train = 1, .d = r->d, .step = d->pulled};
    if (t->batch_stats && n > r->max_batch)
        FAIL(CLNET_ERR_DEVICE_MEMORY,
             "a batch of %d samples does not fit device %d (%s), which holds %d, and layer '%s' "
             "(%s) normalizes a batch in one pass: use a batch of at most %d",
             n, r->d->info.index, r->d->info.name, r->max_batch, t->batch_stats->name,
             t->batch_stats->kind->name, r->max_batch);
    TRY(clnet_replica_write_state(r, d->params, NULL));
    *loss = 0;
    *correct = 0;
    for (int done = 0; done < n; done += r->max_batch) {
        int m = n - done < r->max_batch ? n - done : r->max_batch;
        double l = 0;
        int c = 0;
        TRY(clnet_replica_load(r, d->images + (size_t)done * in, d->labels + done, m));
        TRY(clnet_replica_forward(r, &ctx, m));
        TRY(clnet_replica_backward(r, &ctx, m, done > 0));
        TRY(clnet_replica_results(r, m, 1, &l, &c, NULL, 0));
        *loss += l;
        *correct += c;
    }
    memset(d->grads, 0, t->model->nparams * sizeof(float));
    TRY(clnet_replica_add_grads(r, d->grads));
cleanup:
    return status;
}

/* Device i's loop: pull, compute, push, until the updates are taken. */
static clnet_status device_loop(int i, void *arg) {
    clnet_trainer *t = arg;
    struct clnet_async *a = t->async;
    async_device *d = &a->dev[i];
    clnet_status status = CLNET_OK;
    size_t in = clnet_shape_size(t->model->input);
    for (;;) {
        clnet_batch batch;
        pthread_mutex_lock(&a->lock);
        while (a->remaining > 0 && !a->failed && !may_pull(t, i))
            pthread_cond_wait(&a->changed, &a->lock);
        if (a->remaining <= 0 || a->failed) {
            pthread_mutex_unlock(&a->lock);
            break;
        }
        status = clnet_loader_next(a->loader, &batch); /* one loader, taken in turns */
        if (status == CLNET_OK) {
            a->remaining--;
            memcpy(d->images, batch.images, (size_t)batch.n * in * sizeof(float));
            memcpy(d->labels, batch.labels, (size_t)batch.n * sizeof(int32_t));
            memcpy(d->params, a->model->params, t->model->nparams * sizeof(float));
            d->busy = 1;
            d->pulled = a->optim->step;
        }
        pthread_mutex_unlock(&a->lock);
        if (status != CLNET_OK) break;

        double t0 = clnet_now(), loss = 0;
        int correct = 0;
        status = compute(t, i, batch.n, &loss, &correct);
        double seconds = clnet_now() - t0;
        if (status == CLNET_OK) {
            clnet_balance_throttle(&t->balance, i, seconds);
            seconds = clnet_now() - t0;
        }

        pthread_mutex_lock(&a->lock);
        d->busy = 0;
        if (status == CLNET_OK) {
            int64_t stale = a->optim->step - d->pulled;
            if (stale > t->worst_staleness) t->worst_staleness = stale;
            clnet_optim_apply(a->optim, a->model->params, d->grads, t->model->nparams, batch.n);
            clnet_model_count_step(a->model);
            a->loss += loss;
            a->correct += correct;
            a->samples += batch.n;
            t->step.shares[i] = batch.n; /* the balancer sees this device alone */
            t->step.seconds[i] = seconds;
            for (int j = 0; j < t->count; j++)
                if (j != i) t->step.shares[j] = 0, t->step.seconds[j] = 0;
            clnet_balance_update(&t->balance, t->step.shares, t->step.seconds);
        } else {
            a->failed = 1;
        }
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->lock);
        if (status != CLNET_OK) break;
    }
    if (status != CLNET_OK) {
        clnet_replica *r = t->replicas[i];
        clnet_error_context(status, "device %d (%s)", r->d->info.index, r->d->info.name);
        pthread_mutex_lock(&a->lock);
        a->failed = 1;
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->lock);
    }
    return status;
}

clnet_status clnet_async_train(clnet_trainer *t, clnet_model *m, clnet_optim *o,
                               clnet_loader *loader, int updates, int staleness, double *loss,
                               int *correct, int *samples) {
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
    for (int i = 0; i < t->count; i++) a->dev[i].busy = 0;
    status = clnet_workers_run(t->workers, device_loop, t, NULL);
    *loss = a->loss;
    *correct = a->correct;
    *samples = a->samples;
    return status;
}
