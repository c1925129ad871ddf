/* Asynchronous (parameter-server) training, bounded staleness.
 *
 * Every device, on its own thread, repeatedly pulls the current parameters,
 * computes the gradient of its own batch, and pushes it; the host applies
 * each push at once (SGD, dividing by that batch), so fast devices never wait
 * for slow ones. The price: a push may have been computed on parameters that
 * are a few updates old, so the result is no longer what one device would
 * compute.
 *
 * The bound: a gradient is never applied more than K updates after the
 * parameters it was computed on were pulled. A device may start (pull) only
 * if, for every other device still computing, the updates already applied
 * since that device pulled plus the pushes that may land before it (one per
 * device computing, this one included) stay within K. With K = 0 devices take
 * turns. */
#include "coordinator.h"
#include "error.h"
#include "memory.h"
#include "net.h"
#include "optim.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    clnet_net *net;
    clnet_loader *loader;
    int staleness;
    int remaining; /* batches still to take (each taken batch is pushed) */
    int failed;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int busy[64];
    int64_t pulled[64]; /* the step each busy device pulled at */
    double loss;
    int correct, samples;
    int64_t worst_staleness;
} async_ctx;

typedef struct {
    async_ctx *a;
    int i;
    float *images, *params, *grads;
    int32_t *labels;
    clnet_error_slot error;
    pthread_t thread;
    int started;
} async_worker;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* May device i pull now without breaking anyone's staleness bound? */
static int may_pull(const async_ctx *a, int i) {
    int computing = 1; /* i itself, once it starts */
    for (int j = 0; j < a->net->nreplicas; j++)
        computing += j != i && a->busy[j];
    for (int j = 0; j < a->net->nreplicas; j++)
        if (j != i && a->busy[j] && (a->net->step - a->pulled[j]) + (computing - 1) > a->staleness)
            return 0;
    return 1;
}

/* Computes replica w->i's gradient sum of n samples into w->grads. */
static clnet_status compute(async_worker *w, int n, double *loss, int *correct) {
    clnet_status status = CLNET_OK;
    clnet_net *net = w->a->net;
    clnet_replica *r = net->replicas[w->i];
    size_t in = clnet_shape_size(net->input);
    r->on_bucket = NULL;
    TRY(clnet_replica_write_params(r, w->params, net->nparams));
    *loss = 0;
    *correct = 0;
    for (int done = 0; done < n; done += r->max_batch) {
        int m = n - done < r->max_batch ? n - done : r->max_batch;
        double l = 0;
        int c = 0;
        clnet_run_mode mode = {1, done > 0, done + m >= n};
        TRY(clnet_replica_run(r, net, w->images + (size_t)done * in, w->labels + done, m, mode, &l,
                              &c, NULL));
        *loss += l;
        *correct += c;
    }
    memset(w->grads, 0, net->nparams * sizeof(float));
    TRY(clnet_replica_add_grads(r, w->grads));
cleanup:
    return status;
}

static void *async_main(void *arg) {
    async_worker *w = arg;
    async_ctx *a = w->a;
    clnet_net *net = a->net;
    clnet_status status = CLNET_OK;
    size_t in = clnet_shape_size(net->input);
    for (;;) {
        clnet_batch batch;
        pthread_mutex_lock(&a->lock);
        while (a->remaining > 0 && !a->failed && !may_pull(a, w->i))
            pthread_cond_wait(&a->changed, &a->lock);
        if (a->remaining <= 0 || a->failed) {
            pthread_mutex_unlock(&a->lock);
            break;
        }
        status = clnet_loader_next(a->loader, &batch); /* one loader, taken in turns */
        if (status == CLNET_OK) {
            a->remaining--;
            memcpy(w->images, batch.images, (size_t)batch.n * in * sizeof(float));
            memcpy(w->labels, batch.labels, (size_t)batch.n * sizeof(int32_t));
            memcpy(w->params, net->params, net->nparams * sizeof(float));
            a->busy[w->i] = 1;
            a->pulled[w->i] = net->step;
        }
        pthread_mutex_unlock(&a->lock);
        if (status != CLNET_OK) break;

        double t0 = now(), loss = 0;
        int correct = 0;
        status = compute(w, batch.n, &loss, &correct);
        double seconds = now() - t0;
        if (status == CLNET_OK && net->balance.throttle[w->i] > 1) { /* CLNET_THROTTLE */
            double extra = (net->balance.throttle[w->i] - 1) * seconds;
            struct timespec t = {(time_t)extra, (long)((extra - (double)(time_t)extra) * 1e9)};
            while (nanosleep(&t, &t) != 0) {
            }
            seconds = now() - t0;
        }

        pthread_mutex_lock(&a->lock);
        a->busy[w->i] = 0;
        if (status == CLNET_OK) {
            int64_t stale = net->step - a->pulled[w->i];
            if (stale > a->worst_staleness) a->worst_staleness = stale;
            float lr = clnet_sgd_lr(&net->sgd, net->step);
            clnet_sgd_apply(&net->sgd, lr, net->params, w->grads, net->momentum, net->nparams,
                            batch.n, !net->velocity_ready);
            net->velocity_ready = net->sgd.momentum > 0;
            net->step++;
            a->loss += loss;
            a->correct += correct;
            a->samples += batch.n;
            int shares[64] = {0};
            double secs[64] = {0};
            shares[w->i] = batch.n;
            secs[w->i] = seconds;
            clnet_balance_update(&net->balance, shares, secs);
        }
        if (status != CLNET_OK) a->failed = 1;
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->lock);
        if (status != CLNET_OK) break;
    }
    if (status != CLNET_OK) {
        clnet_replica *r = net->replicas[w->i];
        clnet_error_context(status, "device %d (%s)", r->d->info.index, r->d->info.name);
        pthread_mutex_lock(&a->lock);
        a->failed = 1;
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->lock);
    }
    clnet_error_save(&w->error, status);
    return NULL;
}

clnet_status clnet_net_train_async(clnet_net *net, clnet_loader *loader, int updates, int staleness,
                                   clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    async_ctx a;
    async_worker *w = NULL;
    int R = net ? net->nreplicas : 0;
    if (!net || !loader || !net->replicas)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_train_async: bind the net first");
    if (updates < 0 || staleness < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "updates and staleness must be >= 0");
    memset(&a, 0, sizeof a);
    a.net = net;
    a.loader = loader;
    a.staleness = staleness;
    a.remaining = updates;
    pthread_mutex_init(&a.lock, NULL);
    pthread_cond_init(&a.changed, NULL);
    if (net->sgd.momentum > 0 && !net->momentum) {
        net->momentum = calloc(net->nparams ? net->nparams : 1, sizeof(float));
        if (!net->momentum) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for momentum");
        net->velocity_ready = 0;
    }
    w = calloc((size_t)R, sizeof *w);
    if (!w) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    size_t in = clnet_shape_size(net->input);
    for (int i = 0; i < R; i++) {
        w[i].a = &a;
        w[i].i = i;
        w[i].images = malloc((size_t)net->max_batch * in * sizeof(float));
        w[i].labels = malloc((size_t)net->max_batch * sizeof(int32_t));
        w[i].params = malloc(net->nparams * sizeof(float));
        w[i].grads = malloc(net->nparams * sizeof(float));
        if (!w[i].images || !w[i].labels || !w[i].params || !w[i].grads)
            FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < R; i++) {
        w[i].started = pthread_create(&w[i].thread, NULL, async_main, &w[i]) == 0;
        if (!w[i].started) FAIL(CLNET_ERR_THREAD, "cannot start a thread for device %d", i);
    }
cleanup:
    if (w) {
        if (status != CLNET_OK) { /* stop the threads that did start */
            pthread_mutex_lock(&a.lock);
            a.failed = 1;
            pthread_cond_broadcast(&a.changed);
            pthread_mutex_unlock(&a.lock);
        }
        for (int i = 0; i < R; i++)
            if (w[i].started) pthread_join(w[i].thread, NULL);
        for (int i = 0; i < R; i++) {
            if (status == CLNET_OK && w[i].error.status != CLNET_OK)
                status = clnet_error_restore(&w[i].error);
            else
                free(w[i].error.message);
            free(w[i].images), free(w[i].labels), free(w[i].params), free(w[i].grads);
        }
        free(w);
    }
    if (status == CLNET_OK) {
        clnet_status s = clnet_coordinator_broadcast(net); /* replicas hold old snapshots */
        if (s != CLNET_OK) status = s;
    }
    if (status == CLNET_OK && out)
        *out = (clnet_step_result){
            .loss = a.samples ? a.loss / a.samples : 0, .correct = a.correct, .n = a.samples};
    net->worst_staleness =
        a.worst_staleness > net->worst_staleness ? a.worst_staleness : net->worst_staleness;
    pthread_mutex_destroy(&a.lock);
    pthread_cond_destroy(&a.changed);
    return status;
}
