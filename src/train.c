/* The public training API: binding a net to devices, steps, prediction. */
#include "coordinator.h"
#include "error.h"
#include "net.h"
#include "optim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clnet_net_unbind(clnet_net *net) {
    for (int i = 0; i < net->nreplicas; i++)
        clnet_replica_free(net->replicas[i]);
    free(net->replicas);
    net->replicas = NULL;
    net->nreplicas = 0;
    clnet_balance_free(&net->balance);
}

/* The largest micro-batch up to max_batch whose replica fits the device.
 * CLNET_MICRO_BATCH=N caps it (to exercise micro-batches on big devices). */
static clnet_status fit_replica(clnet_net *net, clnet_device *d, int max_batch,
                                clnet_replica **out) {
    clnet_status s = CLNET_ERR_DEVICE_MEMORY;
    const char *cap = getenv("CLNET_MICRO_BATCH");
    if (cap && atoi(cap) >= 1 && atoi(cap) < max_batch) max_batch = atoi(cap);
    for (int m = max_batch; m >= 1; m /= 2) {
        s = clnet_replica_create(out, net, d, m);
        if (s != CLNET_ERR_DEVICE_MEMORY) return s;
        if (m == 1) break;
    }
    return s; /* the message of the 1-sample attempt says what is needed */
}

clnet_status clnet_net_bind(clnet_net *net, clnet_runtime *rt, int max_batch) {
    clnet_status status = CLNET_OK;
    int *index = NULL;
    if (!net || !rt) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_bind: NULL argument");
    if (max_batch < 1) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "max_batch %d < 1", max_batch);
    if (!net->initialised)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "initialise the net (clnet_net_init) or load weights before binding");
    int n = clnet_runtime_device_count(rt);
    if (n < 1 || n > 64)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%d devices: clnet trains on 1 to 64", n);
    clnet_net_unbind(net);
    net->replicas = calloc((size_t)n, sizeof *net->replicas);
    index = calloc((size_t)n, sizeof *index);
    if (!net->replicas || !index) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory binding the net");
    net->nreplicas = n;
    net->max_batch = max_batch;
    for (int i = 0; i < n; i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        index[i] = d->info.index;
        TRY(fit_replica(net, d, max_batch, &net->replicas[i]));
    }
    TRY(clnet_balance_init(&net->balance, index, n));
    TRY(clnet_coordinator_broadcast(net));
    TRY(clnet_coordinator_calibrate(net));
cleanup:
    if (status != CLNET_OK) clnet_net_unbind(net);
    free(index);
    return status;
}

int clnet_net_device_count(const clnet_net *net) {
    return net ? net->nreplicas : 0;
}

clnet_status clnet_net_device_share(const clnet_net *net, int i, clnet_device_share *out) {
    if (!net || !out || i < 0 || i >= net->nreplicas)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "no bound device %d", i);
    const clnet_replica *r = net->replicas[i];
    memset(out, 0, sizeof *out);
    out->device = r->d->info.index;
    snprintf(out->name, sizeof out->name, "%s", r->d->info.name);
    out->share = net->balance.share[i];
    out->micro_batch = r->max_batch;
    out->images_per_s = net->balance.rate[i];
    out->samples = net->balance.samples[i];
    return CLNET_OK;
}

clnet_status clnet_net_set_split(clnet_net *net, const double *weights, int count) {
    if (!net || !net->replicas)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_set_split: bind the net first");
    if (!weights) {
        free(net->balance.weight);
        net->balance.weight = NULL;
        net->deterministic = 0;
        return CLNET_OK;
    }
    if (count != net->nreplicas)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "a split of %d weights for %d devices", count,
                          net->nreplicas);
    double sum = 0;
    for (int i = 0; i < count; i++) {
        if (!(weights[i] >= 0))
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "split weight %g must be >= 0",
                              weights[i]);
        sum += weights[i];
    }
    if (!(sum > 0)) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "the split weights are all 0");
    double *w = malloc((size_t)count * sizeof *w);
    if (!w) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(w, weights, (size_t)count * sizeof *w);
    free(net->balance.weight);
    net->balance.weight = w;
    net->deterministic = 1;
    return CLNET_OK;
}

static clnet_status need_bound(const clnet_net *net, const void *data, const char *what) {
    if (!net || !data) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (!net->replicas)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: bind the net to a runtime first", what);
    return CLNET_OK;
}

static clnet_status check_labels(const clnet_net *net, const int32_t *labels, int n) {
    int classes = clnet_net_classes(net);
    for (int b = 0; b < n; b++)
        if (labels[b] < 0 || labels[b] >= classes)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                              "label %d of sample %d is outside [0, %d)", (int)labels[b], b,
                              classes);
    return CLNET_OK;
}

clnet_status clnet_net_train_step(clnet_net *net, const float *images, const int32_t *labels, int n,
                                  clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    TRY(need_bound(net, images, "clnet_net_train_step"));
    if (!labels) FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_train_step: labels are NULL");
    if (n < 1 || n > net->max_batch)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "batch of %d samples: the net is bound for 1..%d", n,
             net->max_batch);
    TRY(check_labels(net, labels, n));
    if (net->sgd.momentum > 0 && !net->momentum) {
        net->momentum = calloc(net->nparams ? net->nparams : 1, sizeof(float));
        if (!net->momentum) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for momentum");
        net->velocity_ready = 0;
    }
    double loss = 0;
    int correct = 0;
    status = clnet_coordinator_step(net, images, labels, n, &loss, &correct);
    if (status != CLNET_OK) {
        clnet_error_context(status, "training step %lld", (long long)net->step);
        goto cleanup;
    }
    float lr = clnet_sgd_lr(&net->sgd, net->step);
    clnet_sgd_apply(&net->sgd, lr, net->params, net->grads, net->momentum, net->nparams, n,
                    !net->velocity_ready);
    net->velocity_ready = net->sgd.momentum > 0;
    net->step++;
    TRY(clnet_coordinator_broadcast(net));
    if (out) *out = (clnet_step_result){.loss = loss / n, .correct = correct, .n = n};
cleanup:
    return status;
}

/* Forward over any number of samples, in global batches split across devices. */
static clnet_status forward_all(clnet_net *net, const float *images, const int32_t *labels, int n,
                                float *probs, clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    size_t in_size = clnet_shape_size(net->input);
    int classes = clnet_net_classes(net);
    double loss = 0;
    int correct = 0;
    if (labels) TRY(check_labels(net, labels, n));
    for (int first = 0; first < n; first += net->max_batch) {
        int m = n - first < net->max_batch ? n - first : net->max_batch;
        double l = 0;
        int c = 0;
        TRY(clnet_coordinator_forward(net, images + (size_t)first * in_size,
                                      labels ? labels + first : NULL, m,
                                      probs ? probs + (size_t)first * classes : NULL, &l, &c));
        loss += l;
        correct += c;
    }
    if (out) *out = (clnet_step_result){.loss = n ? loss / n : 0, .correct = correct, .n = n};
cleanup:
    return status;
}

clnet_status clnet_net_predict(clnet_net *net, const float *images, int n, float *probs) {
    clnet_status s = need_bound(net, images, "clnet_net_predict");
    if (s != CLNET_OK) return s;
    if (!probs || n < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_predict: bad output");
    return forward_all(net, images, NULL, n, probs, NULL);
}

clnet_status clnet_net_evaluate_batch(clnet_net *net, const float *images, const int32_t *labels,
                                      int n, clnet_step_result *out) {
    clnet_status s = need_bound(net, images, "clnet_net_evaluate_batch");
    if (s != CLNET_OK) return s;
    if (!labels || n < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_evaluate_batch: bad labels");
    return forward_all(net, images, labels, n, NULL, out);
}

clnet_status clnet_net_evaluate(clnet_net *net, const clnet_dataset *ds, float mean, float std,
                                clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    clnet_loader *loader = NULL;
    TRY(need_bound(net, ds, "clnet_net_evaluate"));
    clnet_loader_config cfg = {
        .batch = net->max_batch, .seed = 0, .shuffle = 0, .drop_last = 0, .mean = mean, .std = std};
    TRY(clnet_loader_create(&loader, ds, &cfg));
    double loss = 0;
    int correct = 0, seen = 0;
    for (int b = 0; b < clnet_loader_batches_per_epoch(loader); b++) {
        clnet_batch batch;
        double l = 0;
        int c = 0;
        TRY(clnet_loader_next(loader, &batch));
        TRY(check_labels(net, batch.labels, batch.n));
        TRY(clnet_coordinator_forward(net, batch.images, batch.labels, batch.n, NULL, &l, &c));
        loss += l;
        correct += c;
        seen += batch.n;
    }
    if (out)
        *out = (clnet_step_result){.loss = seen ? loss / seen : 0, .correct = correct, .n = seen};
cleanup:
    clnet_loader_free(loader);
    return status;
}

int64_t clnet_net_step(const clnet_net *net) {
    return net ? net->step : 0;
}

float clnet_net_learning_rate(const clnet_net *net) {
    return net ? clnet_sgd_lr(&net->sgd, net->step) : 0.0f;
}

const float *clnet_net_params(const clnet_net *net) {
    return net ? net->params : NULL;
}

int64_t clnet_net_worst_staleness(const clnet_net *net) {
    return net ? net->worst_staleness : 0;
}
