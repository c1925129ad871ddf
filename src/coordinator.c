/* The coordinator: one replica per device, each driven by its own host
 * thread, the batch split by measured speed, gradients reduced on the host.
 *
 * A training step:
 *   1. split the global batch into shares (balance.c);
 *   2. every replica runs forward and backward on its share concurrently, in
 *      micro-batches when its share exceeds what fits its memory, producing
 *      the SUM of its samples' gradients;
 *   3. gradients come to the host bucket by bucket (one bucket per parameter
 *      layer, last layer first): on a discrete device each bucket is read
 *      into a mapped pinned staging buffer as soon as its backward pass has
 *      been enqueued, so transfers and the host's adding overlap the backward
 *      pass of the layers below; a device that shares memory with the host is
 *      mapped in place once its backward pass is done;
 *   4. the host adds the replicas' buckets in a fixed device order into the
 *      net's gradient (the caller then applies the optimizer once, dividing by
 *      the global batch, and broadcasts the new parameters).
 * A step on N devices therefore equals a step on one device, up to float
 * rounding, whatever the split.
 *
 * Batch norm (not yet a layer) keeps per-device statistics by default; a
 * synchronized mode would exchange them where every replica has finished its
 * forward pass and none has started backward: in run_share, between the two
 * halves of clnet_replica_run, behind a barrier across the replica threads. */
#include "coordinator.h"
#include "error.h"
#include "hostmath.h"
#include "memory.h"
#include "net.h"
#include "parallel.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_seconds(double s) {
    if (s <= 0) return;
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* ---- one step ------------------------------------------------------------ */

typedef struct {
    clnet_net *net;
    const float *images;
    const int32_t *labels;
    int train;
    float *probs; /* forward only: (n, classes) out, or NULL */
    int shares[64], offsets[64];
    double loss[64], seconds[64];
    int correct[64];
    clnet_error_slot errors[64];
    /* bucket hand-over from replica threads to the reducer */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int *posted;        /* [replica * nlayers + layer]: bucket ready */
    cl_event *events;   /* its transfer, or NULL when mapped in place */
    const float **data; /* where the host reads it */
    int finished[64];   /* the replica's thread is done (ok or not) */
    void *mapped[64];   /* zero-copy replicas: the whole gradient buffer */
} step_ctx;

static int replica_index(const step_ctx *c, const clnet_replica *r) {
    for (int i = 0; i < c->net->nreplicas; i++)
        if (c->net->replicas[i] == r) return i;
    return -1;
}

static void post(step_ctx *c, int i, int layer, cl_event ev, const float *data) {
    size_t k = (size_t)i * c->net->nlayers + layer;
    pthread_mutex_lock(&c->lock);
    c->events[k] = ev;
    c->data[k] = data;
    c->posted[k] = 1;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
}

/* on_bucket for discrete devices: start reading this layer's gradients. */
static clnet_status send_bucket(clnet_replica *r, int layer, void *ctx) {
    clnet_status status = CLNET_OK;
    step_ctx *c = ctx;
    const clnet_layer *l = &c->net->layers[layer];
    size_t off = l->weight_off, len = l->nweight + l->nbias;
    cl_event ev = NULL;
    CL_CHECK(clEnqueueReadBuffer(r->d->queue, r->grads, CL_FALSE, off * sizeof(float),
                                 len * sizeof(float), r->staging.data + off, 0, NULL, &ev),
             "clEnqueueReadBuffer(gradient bucket)");
    CL_CHECK(clFlush(r->d->queue), "clFlush");
    post(c, replica_index(c, r), layer, ev, r->staging.data + off);
cleanup:
    return status;
}

/* Runs replica i's share: micro-batches, then the gradient hand-over. */
static clnet_status run_share(int i, void *arg) {
    clnet_status status = CLNET_OK;
    step_ctx *c = arg;
    clnet_net *net = c->net;
    clnet_replica *r = net->replicas[i];
    size_t in = clnet_shape_size(net->input);
    int classes = clnet_net_classes(net), share = c->shares[i];
    double t0 = now();
    c->loss[i] = 0;
    c->correct[i] = 0;
    if (c->train && net->balance.fault_step[i] == net->step)
        FAIL(CLNET_ERR_OPENCL, "injected fault (CLNET_FAULT) in step %lld", (long long)net->step);
    r->on_bucket = c->train && !r->d->zero_copy ? send_bucket : NULL;
    r->bucket_ctx = c;
    for (int done = 0; done < share; done += r->max_batch) {
        int m = share - done < r->max_batch ? share - done : r->max_batch;
        size_t first = (size_t)c->offsets[i] + done;
        double l = 0;
        int k = 0;
        clnet_run_mode mode = {c->train, done > 0, done + m >= share};
        TRY(clnet_replica_run(r, net, c->images + first * in, c->labels ? c->labels + first : NULL,
                              m, mode, &l, &k, c->probs ? c->probs + first * classes : NULL));
        c->loss[i] += l;
        c->correct[i] += k;
    }
    CL_CHECK(clFinish(r->d->queue), "clFinish");
    if (c->train && r->d->zero_copy) { /* map the whole gradient buffer in place */
        cl_int err = CL_SUCCESS;
        void *p = clEnqueueMapBuffer(r->d->queue, r->grads, CL_TRUE, CL_MAP_READ, 0,
                                     net->nparams * sizeof(float), 0, NULL, NULL, &err);
        CL_CHECK(err, "clEnqueueMapBuffer(gradients)");
        c->mapped[i] = p;
        for (int layer = net->nlayers - 1; layer >= 0; layer--)
            if (net->layers[layer].nweight)
                post(c, i, layer, NULL, (const float *)p + net->layers[layer].weight_off);
    }
    /* CLNET_THROTTLE: behave FACTOR times slower */
    sleep_seconds((net->balance.throttle[i] - 1) * (now() - t0));
cleanup:
    c->seconds[i] = now() - t0;
    if (status != CLNET_OK)
        clnet_error_context(status, "device %d (%s)", r->d->info.index, r->d->info.name);
    return status;
}

typedef struct {
    step_ctx *c;
    int i;
    pthread_t thread;
    int started;
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    step_ctx *c = w->c;
    clnet_error_save(&c->errors[w->i], run_share(w->i, c));
    pthread_mutex_lock(&c->lock);
    c->finished[w->i] = 1;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Adds replica i's bucket for `layer` into the net's gradient, in place
 * (the first replica in order copies). Waits for it to be posted; returns 0
 * if the replica finished without posting it (it failed). */
static int reduce_bucket(step_ctx *c, int i, int layer, int first, clnet_status *status) {
    clnet_net *net = c->net;
    size_t k = (size_t)i * net->nlayers + layer;
    pthread_mutex_lock(&c->lock);
    while (!c->posted[k] && !c->finished[i])
        pthread_cond_wait(&c->changed, &c->lock);
    int ready = c->posted[k];
    pthread_mutex_unlock(&c->lock);
    if (!ready) return 0;
    if (c->events[k]) {
        cl_int err = clWaitForEvents(1, &c->events[k]);
        clReleaseEvent(c->events[k]);
        c->events[k] = NULL;
        if (err != CL_SUCCESS) {
            *status = clnet_fail_cl_at(err, "clWaitForEvents(gradient bucket)", __FILE__, __LINE__);
            return 0;
        }
    }
    const clnet_layer *l = &net->layers[layer];
    size_t len = l->nweight + l->nbias;
    float *dst = net->grads + l->weight_off;
    const float *src = c->data[k];
    if (first)
        memcpy(dst, src, len * sizeof(float));
    else
        for (size_t j = 0; j < len; j++)
            dst[j] += src[j];
    return 1;
}

/* Runs every replica's share concurrently; with train, reduces gradients
 * into net->grads while they arrive. */
static clnet_status run_all(clnet_net *net, const float *images, const int32_t *labels, int n,
                            int train, float *probs, double *loss, int *correct) {
    clnet_status status = CLNET_OK;
    int R = net->nreplicas, L = net->nlayers;
    step_ctx *c = calloc(1, sizeof *c);
    worker *w = calloc((size_t)R, sizeof *w);
    if (!c || !w) {
        free(c), free(w);
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    c->net = net;
    c->images = images;
    c->labels = labels;
    c->train = train;
    c->probs = probs;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->changed, NULL);
    c->posted = calloc((size_t)R * L, sizeof *c->posted);
    c->events = calloc((size_t)R * L, sizeof *c->events);
    c->data = calloc((size_t)R * L, sizeof *c->data);
    if (!c->posted || !c->events || !c->data) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    clnet_balance_split(&net->balance, n, c->shares);
    for (int i = 0, off = 0; i < R; i++) {
        c->offsets[i] = off;
        off += c->shares[i];
    }

    for (int i = 0; i < R; i++) {
        w[i] = (worker){.c = c, .i = i};
        if (c->shares[i] == 0) {
            c->finished[i] = 1;
            continue;
        }
        w[i].started = pthread_create(&w[i].thread, NULL, worker_main, &w[i]) == 0;
        if (!w[i].started) worker_main(&w[i]); /* no thread: run it here, slower */
    }

    /* The reducer: buckets last layer first, replicas in device order. */
    clnet_status reduce_status = CLNET_OK;
    if (train) {
        for (int layer = L - 1; layer >= 0 && reduce_status == CLNET_OK; layer--) {
            if (!net->layers[layer].nweight) continue;
            int first = 1;
            for (int i = 0; i < R; i++) {
                if (c->shares[i] == 0) continue;
                if (!reduce_bucket(c, i, layer, first, &reduce_status)) {
                    if (reduce_status == CLNET_OK) reduce_status = CLNET_ERR_INTERNAL; /* failed */
                    break;
                }
                first = 0;
            }
        }
    }
    for (int i = 0; i < R; i++)
        if (w[i].started) pthread_join(w[i].thread, NULL);
    /* the first failure in device order explains the step */
    for (int i = 0; i < R; i++) {
        if (status == CLNET_OK && c->errors[i].status != CLNET_OK)
            status = clnet_error_restore(&c->errors[i]);
        else
            free(c->errors[i].message);
        if (c->mapped[i])
            clEnqueueUnmapMemObject(net->replicas[i]->d->queue, net->replicas[i]->grads,
                                    c->mapped[i], 0, NULL, NULL);
    }
    for (size_t k = 0; k < (size_t)R * L; k++)
        if (c->events[k]) clReleaseEvent(c->events[k]);
    if (status == CLNET_OK && reduce_status != CLNET_OK) status = reduce_status;
    if (status != CLNET_OK) goto cleanup;

    double total_loss = 0;
    int total_correct = 0;
    for (int i = 0; i < R; i++) { /* fixed order */
        total_loss += c->loss[i];
        total_correct += c->correct[i];
    }
    if (loss) *loss = total_loss;
    if (correct) *correct = total_correct;
    if (train) clnet_balance_update(&net->balance, c->shares, c->seconds);
cleanup:
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->changed);
    free(c->posted);
    free(c->events);
    free(c->data);
    free(c);
    free(w);
    return status;
}

clnet_status clnet_coordinator_step(clnet_net *net, const float *images, const int32_t *labels,
                                    int n, double *loss, int *correct) {
    return run_all(net, images, labels, n, 1, NULL, loss, correct);
}

clnet_status clnet_coordinator_forward(clnet_net *net, const float *images, const int32_t *labels,
                                       int n, float *probs, double *loss, int *correct) {
    return run_all(net, images, labels, n, 0, probs, loss, correct);
}

/* ---- parameters to every replica ---------------------------------------- */

static clnet_status write_params(int i, void *ctx) {
    clnet_net *net = ctx;
    return clnet_replica_write_params(net->replicas[i], net->params, net->nparams);
}

clnet_status clnet_coordinator_broadcast(clnet_net *net) {
    return clnet_parallel_for(net->nreplicas, write_params, net);
}

/* ---- calibration ---------------------------------------------------------- */

/* A probe may take this long before its rate is trusted, and calibration
 * stops growing probes after this much time per device. */
#define PROBE_SECONDS       0.2
#define CALIBRATION_SECONDS 2.0

typedef struct {
    clnet_net *net;
    float *images;
    int32_t *labels;
} probe_ctx;

/* Times replica i on probes of one size, after a warm-up run of that size
 * (the first run of a size builds kernels, and CPU drivers compile
 * work-group functions): m samples, with m chosen from a 1-sample run so
 * that a probe takes about PROBE_SECONDS, at most PROBE_MAX samples. */
#define PROBE_MAX 32
static clnet_status probe(int i, void *arg) {
    clnet_status status = CLNET_OK;
    probe_ctx *p = arg;
    clnet_net *net = p->net;
    clnet_replica *r = net->replicas[i];
    clnet_run_mode mode = {1, 0, 0};
    r->on_bucket = NULL;
    double t0 = now(), t1 = 0;
    for (int k = 0; k < 2; k++) { /* the first builds the kernels */
        t0 = now();
        TRY(clnet_replica_run(r, net, p->images, p->labels, 1, mode, NULL, NULL, NULL));
        CL_CHECK(clFinish(r->d->queue), "clFinish");
        t1 = now() - t0;
    }
    int m = t1 > 0 ? (int)(PROBE_SECONDS / t1) : PROBE_MAX;
    if (m > PROBE_MAX) m = PROBE_MAX;
    if (m > r->max_batch) m = r->max_batch;
    if (m < 1) m = 1;
    double spent = 0, rate = 1.0 / (t1 > 0 ? t1 : 1e-9);
    if (m > 1) { /* warm up this size, then time it until it has taken long enough */
        TRY(clnet_replica_run(r, net, p->images, p->labels, m, mode, NULL, NULL, NULL));
        CL_CHECK(clFinish(r->d->queue), "clFinish");
        int runs = 0;
        t0 = now();
        do {
            TRY(clnet_replica_run(r, net, p->images, p->labels, m, mode, NULL, NULL, NULL));
            CL_CHECK(clFinish(r->d->queue), "clFinish");
            runs++;
            spent = now() - t0;
        } while (spent < PROBE_SECONDS && spent < CALIBRATION_SECONDS);
        rate = runs * m / spent;
    }
    net->balance.rate[i] = rate / net->balance.throttle[i];
cleanup:
    if (status != CLNET_OK)
        clnet_error_context(status, "calibrating device %d (%s)", r->d->info.index,
                            r->d->info.name);
    return status;
}

clnet_status clnet_coordinator_calibrate(clnet_net *net) {
    clnet_status status = CLNET_OK;
    probe_ctx p = {.net = net};
    if (net->nreplicas < 2) return CLNET_OK; /* nothing to balance */
    size_t in = clnet_shape_size(net->input);
    int most = 0;
    for (int i = 0; i < net->nreplicas; i++)
        if (net->replicas[i]->max_batch > most) most = net->replicas[i]->max_batch;
    p.images = calloc((size_t)most * in, sizeof(float));
    p.labels = calloc((size_t)most, sizeof(int32_t));
    if (!p.images || !p.labels) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    TRY(clnet_parallel_for(net->nreplicas, probe, &p));
cleanup:
    free(p.images);
    free(p.labels);
    return status;
}
