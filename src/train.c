/* The public training API: binding a net to devices, steps, prediction. */
#include "error.h"
#include "net.h"
#include "optim.h"

#include <stdlib.h>
#include <string.h>

clnet_status clnet_net_bind(clnet_net *net, clnet_runtime *rt, int max_batch) {
    clnet_status status = CLNET_OK;
    if (!net || !rt) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_bind: NULL argument");
    if (max_batch < 1) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "max_batch %d < 1", max_batch);
    if (!net->initialised)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "initialise the net (clnet_net_init) or load weights before binding");
    clnet_device *d = clnet_runtime_device(rt, 0);
    if (!d) return CLNET_ERR_INVALID_ARGUMENT;
    clnet_replica *r = NULL;
    TRY(clnet_replica_create(&r, net, d, max_batch));
    clnet_replica_free(net->replica);
    net->replica = r;
    net->max_batch = max_batch;
    TRY(clnet_replica_write_params(r, net->params, net->nparams));
cleanup:
    return status;
}

static clnet_status need_bound(const clnet_net *net, const void *data, const char *what) {
    if (!net || !data) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (!net->replica)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: bind the net to a runtime first", what);
    return CLNET_OK;
}

clnet_status clnet_net_train_step(clnet_net *net, const float *images, const int32_t *labels,
                                  int n, clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    TRY(need_bound(net, images, "clnet_net_train_step"));
    if (!labels) FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_train_step: labels are NULL");
    if (net->sgd.momentum > 0 && !net->momentum) {
        net->momentum = calloc(net->nparams ? net->nparams : 1, sizeof(float));
        if (!net->momentum) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for momentum");
        net->velocity_ready = 0;
    }
    double loss = 0;
    int correct = 0;
    TRY(clnet_replica_run(net->replica, net, images, labels, n, 1, &loss, &correct, NULL));
    memset(net->grads, 0, net->nparams * sizeof(float));
    TRY(clnet_replica_add_grads(net->replica, net->grads));
    float lr = clnet_sgd_lr(&net->sgd, net->step);
    clnet_sgd_apply(&net->sgd, lr, net->params, net->grads, net->momentum, net->nparams, n,
                    !net->velocity_ready);
    net->velocity_ready = net->sgd.momentum > 0;
    net->step++;
    TRY(clnet_replica_write_params(net->replica, net->params, net->nparams));
    if (out) *out = (clnet_step_result){.loss = loss / n, .correct = correct, .n = n};
cleanup:
    return status;
}

/* Runs forward over any number of samples in chunks of the bound batch. */
static clnet_status forward_all(clnet_net *net, const float *images, const int32_t *labels, int n,
                                float *probs, clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    size_t in_size = clnet_shape_size(net->input);
    int classes = clnet_net_classes(net);
    double loss = 0;
    int correct = 0;
    for (int first = 0; first < n; first += net->max_batch) {
        int m = n - first < net->max_batch ? n - first : net->max_batch;
        double l = 0;
        int c = 0;
        TRY(clnet_replica_run(net->replica, net, images + (size_t)first * in_size,
                              labels ? labels + first : NULL, m, 0, &l, &c,
                              probs ? probs + (size_t)first * classes : NULL));
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
    if (!probs || n < 0) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_predict: bad output");
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

int64_t clnet_net_step(const clnet_net *net) {
    return net ? net->step : 0;
}

float clnet_net_learning_rate(const clnet_net *net) {
    return net ? clnet_sgd_lr(&net->sgd, net->step) : 0.0f;
}

const float *clnet_net_params(const clnet_net *net) {
    return net ? net->params : NULL;
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
        TRY(clnet_replica_run(net->replica, net, batch.images, batch.labels, batch.n, 0, &l, &c,
                              NULL));
        loss += l;
        correct += c;
        seen += batch.n;
    }
    if (out) *out = (clnet_step_result){.loss = seen ? loss / seen : 0, .correct = correct, .n = seen};
cleanup:
    clnet_loader_free(loader);
    return status;
}
