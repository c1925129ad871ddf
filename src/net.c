/* The public API of nets (clnet.h): building, initialising, binding,
 * training, evaluating, saving. Each function checks its arguments and
 * calls down into the model, the optimizer, the checkpoint code and the
 * step driver; none of those calls back here. */
#include "net.h"
#include "alloc.h"
#include "async.h"
#include "broadcast.h"
#include "calibrate.h"
#include "checkpoint.h"
#include "choices.h"
#include "data.h"
#include "dist.h"
#include "error.h"
#include "fileio.h"
#include "step.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building ------------------------------------------------------------------ */

clnet_status clnet_net_create(clnet_net **out) {
    if (!out) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_create: out is NULL");
    *out = clnet_calloc(1, sizeof **out);
    if (!*out) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory creating a net");
    clnet_optim_init(&(*out)->optim);
    return CLNET_OK;
}

static void unbind(clnet_net *net) {
    clnet_async_free(net->trainer);
    clnet_trainer_free(net->trainer);
    net->trainer = NULL;
}

void clnet_net_free(clnet_net *net) {
    if (!net) return;
    unbind(net);
    clnet_model_release(&net->model);
    clnet_optim_release(&net->optim);
    free(net->gemm_choices);
    free(net->position_classes);
    free(net);
}

clnet_status clnet_net_add(clnet_net *net, const char *line) {
    if (!net || !line)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_add: NULL argument");
    if (net->trainer)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "layers cannot be added to a bound net");
    return clnet_model_add(&net->model, line, 0);
}

/* The model must be complete before anything uses its shapes. */
static clnet_status finish(clnet_net *net) {
    int line = 0;
    clnet_status s = clnet_model_finish(&net->model, &line);
    if (s != CLNET_OK && net->model.source[0])
        clnet_error_context(s, line ? "%s:%d" : "%s", net->model.source, line);
    return s;
}

clnet_status clnet_net_load(clnet_net **out, const char *path) {
    clnet_status status = CLNET_OK;
    clnet_net *net = NULL;
    FILE *f = NULL;
    char line[1024];
    int lineno = 0;
    if (!out || !path)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_load: NULL argument");
    *out = NULL;
    f = fopen(path, "r");
    if (!f) FAIL(CLNET_ERR_IO, "cannot open model file %s: %s", path, strerror(errno));
    TRY(clnet_net_create(&net));
    snprintf(net->model.source, sizeof net->model.source, "%s", path);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f))
            FAIL(CLNET_ERR_FORMAT, "%s:%d: line longer than %zu characters", path, lineno,
                 sizeof line - 2);
        status = clnet_model_add(&net->model, line, lineno);
        if (status != CLNET_OK) {
            clnet_error_context(status, "%s:%d", path, lineno);
            goto cleanup;
        }
    }
    if (ferror(f)) FAIL(CLNET_ERR_IO, "error reading %s", path);
    TRY(finish(net));
    *out = net;
    net = NULL;
cleanup:
    if (f) fclose(f);
    clnet_net_free(net);
    return status;
}

/* ---- queries ------------------------------------------------------------------- */

int clnet_net_layer_count(const clnet_net *net) {
    return net && net->model.resolved ? net->model.count : 0;
}

static void dims(clnet_shape s, int *rank, int shape[4]) {
    *rank = 1 + s.ndim;
    shape[0] = s.c;
    for (int i = 0; i < 3; i++) shape[1 + i] = i < s.ndim ? s.dim[i] : 1;
}

clnet_status clnet_net_layer_info(const clnet_net *net, int i, clnet_layer_info *out) {
    if (!net || !out || i < 0 || i >= clnet_net_layer_count(net))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "no layer %d", i);
    const clnet_node *node = &net->model.nodes[i];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", node->name);
    snprintf(out->kind, sizeof out->kind, "%s", node->kind->name);
    clnet_shape s = node->out;
    dims(s, &out->out_rank, out->out_shape);
    out->out_c = s.c;
    out->out_h = s.ndim >= 2 ? s.dim[s.ndim - 2] : 1;
    out->out_w = s.ndim >= 1 ? s.dim[s.ndim - 1] : 1;
    out->params = node->param_count;
    for (int t = 0; t < node->nbuffers; t++)
        if (node->buffers[t].dtype == CLNET_DTYPE_F32) out->buffers += node->buffers[t].count;
    out->inputs = node->ninputs;
    out->is_view = node->kind->is_view;
    const char *kind = node->kind->name;
    if (node->nparams > 0 && strncmp(kind, "conv_transpose", 14) == 0)
        out->macs = node->params[0].count * clnet_shape_spatial(node->in[0]);
    else if (node->nparams > 0 && strncmp(kind, "conv", 4) == 0)
        out->macs = node->params[0].count * clnet_shape_spatial(node->out);
    else if (node->nparams > 0 && strcmp(kind, "linear") == 0)
        out->macs = node->params[0].count;
    for (int k = 0; k < node->ninputs; k++)
        snprintf(out->input_names[k], sizeof out->input_names[k], "%s", node->input_names[k]);
    return CLNET_OK;
}

void clnet_net_input_shape(const clnet_net *net, int *channels, int *height, int *width) {
    clnet_shape in = net && net->model.has_input ? net->model.input : (clnet_shape){0};
    if (channels) *channels = in.c;
    if (height) *height = in.ndim >= 2 ? in.dim[in.ndim - 2] : (in.c ? 1 : 0);
    if (width) *width = in.ndim >= 1 ? in.dim[in.ndim - 1] : (in.c ? 1 : 0);
}

int clnet_net_input_rank(const clnet_net *net, int shape[4]) {
    int rank = 0, tmp[4];
    if (!net || !net->model.has_input) return 0;
    dims(net->model.input, &rank, shape ? shape : tmp);
    return rank;
}

size_t clnet_net_param_count(const clnet_net *net) {
    return net && net->model.resolved ? net->model.nparams : 0;
}

size_t clnet_net_buffer_count(const clnet_net *net) {
    return net && net->model.resolved ? net->model.nbuffers : 0;
}

int clnet_net_classes(const clnet_net *net) {
    return net ? clnet_model_classes(&net->model) : 0;
}

int clnet_net_is_classifier(const clnet_net *net) {
    return net ? clnet_model_is_classifier(&net->model) : 0;
}

int clnet_net_positions(const clnet_net *net) {
    return net ? clnet_model_positions(&net->model) : 0;
}

size_t clnet_net_outputs(const clnet_net *net) {
    return net ? clnet_model_outputs(&net->model) : 0;
}

int64_t clnet_net_step(const clnet_net *net) {
    return net ? net->optim.step : 0;
}

float clnet_net_learning_rate(const clnet_net *net) {
    return net ? clnet_optim_rate(&net->optim) : 0.0f;
}

const float *clnet_net_params(const clnet_net *net) {
    return net ? net->model.params : NULL;
}

const float *clnet_net_buffers(clnet_net *net) {
    if (!net || !net->model.params) return NULL;
    if (net->trainer && clnet_broadcast_gather(net->trainer, &net->model) != CLNET_OK) return NULL;
    return net->model.buffers;
}

int64_t clnet_net_worst_staleness(const clnet_net *net) {
    return net ? clnet_async_worst_staleness(net->trainer) : 0;
}

/* ---- initialising, optimizer ------------------------------------------------------- */

clnet_status clnet_net_init(clnet_net *net, uint64_t seed) {
    if (!net) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_init: net is NULL");
    clnet_status s = finish(net);
    if (s == CLNET_OK) s = clnet_model_init(&net->model, seed);
    if (s != CLNET_OK) return s;
    for (int k = 0; k < CLNET_OPTIM_SLOTS; k++) /* a fresh start for the optimizer too */
        if (net->optim.slot[k]) memset(net->optim.slot[k], 0, net->model.nparams * sizeof(float));
    net->optim.ready = 0;
    net->optim.step = 0;
    net->optim.lr_scale = 1.0;
    return net->trainer ? clnet_broadcast(net->trainer, &net->model, 1) : CLNET_OK;
}

clnet_status clnet_net_set_optimizer(clnet_net *net, const clnet_optimizer_config *cfg) {
    if (!net || !cfg)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_set_optimizer: NULL argument");
    clnet_status s = clnet_optim_check(cfg);
    if (s == CLNET_OK) clnet_optim_configure(&net->optim, cfg);
    return s;
}

clnet_status clnet_net_set_sgd(clnet_net *net, const clnet_optimizer_config *cfg) {
    return clnet_net_set_optimizer(net, cfg);
}

clnet_status clnet_net_set_lr_scale(clnet_net *net, double scale) {
    if (!net) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_set_lr_scale: net is NULL");
    if (!(scale > 0) || !isfinite(scale))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_net_set_lr_scale: scale %g must be finite and > 0", scale);
    net->optim.lr_scale = scale;
    return CLNET_OK;
}

double clnet_net_lr_scale(const clnet_net *net) {
    return net ? net->optim.lr_scale : 0.0;
}

/* ---- devices ------------------------------------------------------------------------ */

/* Pins a loaded checkpoint's GEMM choices on the bound devices (choices.h),
 * and fits the replicas' scratch to them now rather than in a step. */
static clnet_status pin_choices(clnet_net *net) {
    if (!net->trainer || !net->gemm_choices) return CLNET_OK;
    clnet_choices_pin(net->trainer, net->gemm_choices);
    return clnet_trainer_fit_work(net->trainer);
}

clnet_status clnet_net_bind(clnet_net *net, clnet_runtime *rt, int max_batch) {
    clnet_status status = CLNET_OK;
    if (!net || !rt) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_bind: NULL argument");
    if (max_batch < 1) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "max_batch %d < 1", max_batch);
    if (!net->model.params)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "initialise the net (clnet_net_init) or load weights before binding");
    int n = clnet_runtime_device_count(rt);
    if (n < 1 || n > CLNET_MAX_DEVICES)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%d devices: clnet trains on 1 to %d", n,
                          CLNET_MAX_DEVICES);
    unbind(net);
    TRY(clnet_trainer_create(&net->trainer, &net->model, rt, max_batch));
    TRY(pin_choices(net));
    TRY(clnet_broadcast(net->trainer, &net->model, 1));
    TRY(clnet_calibrate(net->trainer));
    /* calibration trains on probes: undo what they did to the buffers */
    if (net->model.nbuffers) TRY(clnet_broadcast(net->trainer, &net->model, 1));
cleanup:
    if (status != CLNET_OK) unbind(net);
    return status;
}

clnet_status clnet_net_mpi_stats(const clnet_net *net, clnet_mpi_stats *out) {
    if (!net || !out) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_mpi_stats: NULL");
    clnet_dist_stats d;
    clnet_dist_get_stats(net->trainer ? net->trainer->ranks.dist : NULL, &d);
    double steps = d.steps ? (double)d.steps : 1;
    *out = (clnet_mpi_stats){.steps = (int64_t)d.steps,
                             .bytes_per_step = (double)d.bytes / steps,
                             .exposed_seconds = d.seconds_exposed / steps,
                             .inflight_seconds = d.seconds_inflight / steps};
    return CLNET_OK;
}

int clnet_net_device_count(const clnet_net *net) {
    return net && net->trainer ? net->trainer->ranks.total : 0;
}

clnet_status clnet_net_device_share(const clnet_net *net, int i, clnet_device_share *out) {
    if (!net || !out || i < 0 || i >= clnet_net_device_count(net))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "no bound device %d", i);
    const clnet_trainer *t = net->trainer;
    const clnet_peer_device *p = &t->ranks.peers[i];
    memset(out, 0, sizeof *out);
    out->device = p->index;
    out->rank = p->rank;
    snprintf(out->name, sizeof out->name, "%s", p->name);
    out->share = t->split.balance.share[i];
    out->micro_batch = t->split.caps[i];
    out->images_per_s = t->split.balance.rate[i];
    out->samples = t->split.balance.samples[i];
    int local = i - t->ranks.first; /* only this process's devices are ever dropped */
    if (local >= 0 && local < t->count && !t->alive[local]) {
        out->dropped = 1;
        out->dropped_step = t->dropped_step[local];
        snprintf(out->dropped_why, sizeof out->dropped_why, "%s", t->dropped_why[local]);
    }
    return CLNET_OK;
}

clnet_status clnet_net_set_on_device_failure(clnet_net *net, clnet_on_failure policy) {
    if (!net || !net->trainer)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_net_set_on_device_failure: bind the net first");
    if (policy != CLNET_ON_FAILURE_STOP && policy != CLNET_ON_FAILURE_CONTINUE)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "unknown device failure policy %d",
                          (int)policy);
    net->trainer->on_failure = policy;
    return CLNET_OK;
}

clnet_status clnet_net_set_split(clnet_net *net, const double *weights, int count) {
    return clnet_net_set_splits(net, weights, count, 1);
}

clnet_status clnet_net_set_splits(clnet_net *net, const double *weights, int count, int nsplits) {
    if (!net || !net->trainer)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_set_splits: bind the net first");
    clnet_trainer *t = net->trainer;
    if (!weights) {
        free(t->split.balance.weight);
        t->split.balance.weight = NULL;
        t->split.balance.rows = 0;
        t->split.deterministic = 0;
        return CLNET_OK;
    }
    if (count != t->ranks.total)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "a split of %d weights for %d devices", count,
                          t->ranks.total);
    if (nsplits < 1)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%d splits: expected at least 1", nsplits);
    for (int r = 0; r < nsplits; r++) {
        double sum = 0;
        for (int i = 0; i < count; i++) {
            double w = weights[(size_t)r * (size_t)count + (size_t)i];
            if (!(w >= 0) || !isfinite(w))
                return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                                  "split %d: weight %g must be a finite number >= 0", r + 1, w);
            sum += w;
        }
        if (!(sum > 0))
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "split %d: the weights are all 0", r + 1);
    }
    size_t total = (size_t)nsplits * (size_t)count;
    double *w = clnet_malloc(total * sizeof *w);
    if (!w) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(w, weights, total * sizeof *w);
    free(t->split.balance.weight);
    t->split.balance.weight = w;
    t->split.balance.rows = nsplits;
    t->split.deterministic = 1;
    return CLNET_OK;
}

/* ---- training and evaluation --------------------------------------------------------- */

/* What a step reports: the answers of a classifier are its samples, or its
 * positions for a loss per position. */
static clnet_step_result result(const clnet_net *net, double loss_sum, int correct, int n) {
    return (clnet_step_result){.loss = n ? loss_sum / n : 0,
                               .correct = correct,
                               .n = n,
                               .answers = n * clnet_net_positions(net),
                               .grad_norm = 0};
}

/* A training step on batch b with labels or float targets (the other NULL,
 * or the zeros an unlabelled data set gives, which a loss of targets does
 * not read); feed (may be NULL): where the next step's batch comes from. */
static clnet_status train_step(clnet_net *net, const clnet_batch *b, const clnet_step_feed *feed,
                               clnet_step_result *out, const char *what) {
    clnet_status status = CLNET_OK;
    const int32_t *labels = b->labels;
    const float *targets = b->targets;
    int n = b->n;
    TRY(clnet_net_need_bound(net, b->images, what));
    if (!labels && !targets) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s: labels are NULL", what);
    if (n < 1 || n > net->trainer->max_batch)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "batch of %d samples: the net is bound for 1..%d", n,
             net->trainer->max_batch);
    if (clnet_net_per_position(net) && !targets)
        TRY(clnet_net_labels_as_targets(net, labels, n, &targets));
    TRY(clnet_net_check_truth(net, targets != NULL, what));
    if (labels) TRY(clnet_net_check_labels(net, labels, n));
    if (clnet_net_per_position(net)) TRY(clnet_net_check_position_classes(net, targets, n));
    TRY(clnet_optim_prepare(&net->optim, net->model.nparams));
    clnet_batch checked = {.images = b->images, .labels = labels, .targets = targets, .n = n};
    clnet_step_sums sums = {0};
    status = clnet_step_train(net->trainer, &net->model, &net->optim, &checked, feed, &sums);
    if (status == CLNET_ERR_NONFINITE && out) *out = result(net, sums.loss, sums.correct, n);
    if (status != CLNET_OK) {
        clnet_error_context(status, "training step %lld", (long long)net->optim.step);
        goto cleanup;
    }
    if (out) {
        *out = result(net, sums.loss, sums.correct, n);
        out->grad_norm = net->optim.grad_norm; /* with clip_grad_norm: before clipping */
    }
cleanup:
    return status;
}

/* The trainer's look at the step after this one: the loader's next batch. */
static int loader_ahead(void *arg, clnet_batch *next, uint64_t *ticket) {
    return clnet_loader_peek(arg, next, ticket);
}

clnet_status clnet_net_train_loader_step(clnet_net *net, clnet_loader *loader, clnet_batch *batch,
                                         clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    TRY(clnet_net_need_bound(net, loader, "clnet_net_train_loader_step"));
    if (!batch) FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_train_loader_step: batch is NULL");
    TRY(clnet_net_check_loader(net, loader, "clnet_net_train_loader_step"));
    TRY(clnet_loader_next(loader, batch));
    clnet_step_feed feed = {
        .next = loader_ahead, .arg = loader, .current = clnet_loader_serial(loader)};
    status = train_step(net, batch, &feed, out, "clnet_net_train_loader_step");
cleanup:
    return status;
}

clnet_status clnet_net_train_async(clnet_net *net, clnet_loader *loader, int updates, int staleness,
                                   clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    TRY(clnet_net_need_bound(net, loader, "clnet_net_train_async"));
    TRY(clnet_net_check_loader(net, loader, "clnet_net_train_async"));
    if (updates < 0 || staleness < 0)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "updates and staleness must be >= 0");
    if (clnet_model_target_size(&net->model))
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "asynchronous training takes labels or target=, not float targets from the data "
             "(not built yet): train synchronously");
    TRY(clnet_optim_prepare(&net->optim, net->model.nparams));
    clnet_async_sums sums = {0};
    status = clnet_async_train(net->trainer, &net->model, &net->optim, loader, updates, staleness,
                               &sums);
    if (status == CLNET_OK && out) *out = result(net, sums.loss, sums.correct, sums.samples);
cleanup:
    return status;
}

clnet_status clnet_net_check_replicas(clnet_net *net) {
    clnet_status status = CLNET_OK;
    TRY(clnet_net_need_bound(net, net, "clnet_net_check_replicas"));
    status = clnet_broadcast_check(net->trainer, &net->model);
    if (status != CLNET_OK)
        clnet_error_context(status, "after step %lld", (long long)net->optim.step);
cleanup:
    return status;
}

clnet_status clnet_net_train_step(clnet_net *net, const float *images, const int32_t *labels, int n,
                                  clnet_step_result *out) {
    if (!labels && net && images)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_train_step: labels are NULL");
    clnet_batch b = {.images = images, .labels = labels, .n = n};
    return train_step(net, &b, NULL, out, "clnet_net_train_step");
}

clnet_status clnet_net_train_step_targets(clnet_net *net, const float *images, const float *targets,
                                          int n, clnet_step_result *out) {
    if (!targets && net && images)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_net_train_step_targets: targets are NULL");
    clnet_batch b = {.images = images, .targets = targets, .n = n};
    return train_step(net, &b, NULL, out, "clnet_net_train_step_targets");
}

/* Forward over any number of samples, in global batches split across devices. */
/* Forward passes over n samples, max_batch at a time: probs gets the loss
 * layer's output, or with logits its input. */
static clnet_status forward_all(clnet_net *net, const float *images, const int32_t *labels, int n,
                                float *probs, int logits, clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    size_t in_size = clnet_shape_size(net->model.input), outputs = clnet_net_outputs(net);
    size_t T = clnet_model_target_size(&net->model);
    int batch = net->trainer->max_batch;
    double loss = 0;
    int correct = 0;
    const float *targets = NULL;
    if (labels) TRY(clnet_net_check_labels(net, labels, n));
    if (labels && clnet_net_per_position(net))
        TRY(clnet_net_labels_as_targets(net, labels, n, &targets));
    TRY(clnet_broadcast_folded(net->trainer, &net->model));
    for (int first = 0; first < n; first += batch) {
        int m = n - first < batch ? n - first : batch;
        const float *x = images + (size_t)first * in_size;
        float *p = probs ? probs + (size_t)first * outputs : NULL;
        clnet_batch b = {.images = x,
                         .labels = labels ? labels + first : NULL,
                         .targets = targets ? targets + (size_t)first * T : NULL,
                         .n = m};
        clnet_step_sums sums = {0};
        if (logits)
            TRY(clnet_step_logits(net->trainer, net->optim.step, x, m, p));
        else
            TRY(clnet_step_forward(net->trainer, net->optim.step, &b, p, &sums));
        loss += sums.loss;
        correct += sums.correct;
    }
    if (out) *out = result(net, loss, correct, n);
cleanup:
    return status;
}

/* The outputs of n samples (probabilities, or with logits the loss's input)
 * for the public call `what`. */
static clnet_status outputs(clnet_net *net, const float *images, int n, float *out, int logits,
                            const char *what) {
    clnet_status s = clnet_net_need_bound(net, images, what);
    if (s != CLNET_OK) return s;
    if (!out || n < 0) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: bad output", what);
    return forward_all(net, images, NULL, n, out, logits, NULL);
}

clnet_status clnet_net_predict(clnet_net *net, const float *images, int n, float *probs) {
    return outputs(net, images, n, probs, 0, "clnet_net_predict");
}

clnet_status clnet_net_logits(clnet_net *net, const float *images, int n, float *logits) {
    return outputs(net, images, n, logits, 1, "clnet_net_logits");
}

clnet_status clnet_net_evaluate_batch(clnet_net *net, const float *images, const int32_t *labels,
                                      int n, clnet_step_result *out) {
    clnet_status s = clnet_net_need_bound(net, images, "clnet_net_evaluate_batch");
    if (s != CLNET_OK) return s;
    if (!labels || n < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_evaluate_batch: bad labels");
    if (clnet_model_target_size(&net->model) && !clnet_net_per_position(net))
        return clnet_net_check_truth(net, 0, "clnet_net_evaluate_batch");
    return forward_all(net, images, labels, n, NULL, 0, out);
}

clnet_status clnet_net_evaluate(clnet_net *net, const clnet_dataset *ds, float mean, float std,
                                clnet_step_result *out) {
    clnet_loader_config cfg = {.mean = mean, .std = std};
    return clnet_net_evaluate_with(net, ds, &cfg, out);
}

clnet_status clnet_net_eval_loader(clnet_net *net, const clnet_dataset *ds,
                                   const clnet_loader_config *with, const char *what,
                                   clnet_loader **out) {
    clnet_status status = CLNET_OK;
    clnet_loader *loader = NULL;
    TRY(clnet_net_need_bound(net, ds, what));
    if (!with) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s: cfg is NULL", what);
    clnet_loader_config cfg = *with; /* epoch 0 in file order, in batches of the bound size */
    cfg.batch = net->trainer->max_batch;
    cfg.seed = 0;
    cfg.shuffle = 0;
    cfg.drop_last = 0;
    cfg.transforms.resized_crop_min = 0; /* evaluation: the resize and center crop alone */
    cfg.transforms.pad = 0;
    cfg.transforms.flip = 0;
    TRY(clnet_loader_create(&loader, ds, &cfg));
    TRY(clnet_net_check_loader(net, loader, what));
    TRY(clnet_broadcast_folded(net->trainer, &net->model));
    *out = loader;
    loader = NULL;
cleanup:
    clnet_loader_free(loader);
    return status;
}

clnet_status clnet_net_evaluate_with(clnet_net *net, const clnet_dataset *ds,
                                     const clnet_loader_config *with, clnet_step_result *out) {
    clnet_status status = CLNET_OK;
    clnet_loader *loader = NULL;
    TRY(clnet_net_eval_loader(net, ds, with, "clnet_net_evaluate", &loader));
    double loss = 0;
    int correct = 0, seen = 0;
    for (int b = 0; b < clnet_loader_batches_per_epoch(loader); b++) {
        clnet_batch batch;
        clnet_step_sums sums = {0};
        TRY(clnet_loader_next(loader, &batch));
        TRY(clnet_net_check_labels(net, batch.labels, batch.n));
        if (clnet_net_per_position(net) && batch.targets)
            TRY(clnet_net_check_position_classes(net, batch.targets, batch.n));
        TRY(clnet_step_forward(net->trainer, net->optim.step, &batch, NULL, &sums));
        loss += sums.loss;
        correct += sums.correct;
        seen += batch.n;
    }
    if (out) *out = result(net, loss, correct, seen);
cleanup:
    clnet_loader_free(loader);
    return status;
}

/* ---- checkpoints ----------------------------------------------------------------------- */

clnet_status clnet_net_save(const clnet_net *cnet, const char *path,
                            const clnet_progress *progress) {
    clnet_net *net = (clnet_net *)cnet; /* bound, its buffers are read back from a device */
    if (!net || !path)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_save: NULL argument");
    if (!net->model.params)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_net_save: the net has no parameters yet");
    if (clnet_mpi_rank() != 0) return CLNET_OK; /* every rank holds the same: rank 0 writes */
    if (net->trainer) {                         /* buffers live on the devices while bound */
        clnet_status s = clnet_broadcast_gather(net->trainer, &net->model);
        if (s != CLNET_OK) return s;
    }
    char *recorded = NULL, *choices = NULL;
    clnet_status s = clnet_choices_record(net->trainer, &recorded);
    if (s == CLNET_OK && recorded && net->gemm_choices)
        s = clnet_choices_merge(recorded, net->gemm_choices, &choices);
    if (s == CLNET_OK)
        s = clnet_checkpoint_save(&net->model, &net->optim, path, progress,
                                  choices    ? choices
                                  : recorded ? recorded
                                             : net->gemm_choices);
    free(recorded);
    free(choices);
    return s;
}

/* In an MPI job rank 0 reads the file and sends its bytes to every rank:
 * the others need no copy of it (no shared file system). */
static clnet_status read_on_rank_0(const char *path, unsigned char **bytes, size_t *size) {
    clnet_dist *world = clnet_dist_world();
    clnet_status s = CLNET_OK;
    int64_t n = 0; /* the size, or minus rank 0's status */
    if (clnet_mpi_rank() == 0) {
        s = clnet_read_file(path, bytes, size);
        n = s == CLNET_OK ? (int64_t)*size : -(int64_t)s;
    }
    clnet_status b = clnet_dist_bcast(world, CLNET_LANE_CONTROL, &n, sizeof n, 0,
                                      "sending the checkpoint's size from rank 0");
    if (b == CLNET_OK && n < 0)
        b = s != CLNET_OK ? s
                          : clnet_fail((clnet_status)-n,
                                       "rank 0 could not read %s (its message "
                                       "says why)",
                                       path);
    if (b == CLNET_OK && clnet_mpi_rank() != 0) {
        *size = (size_t)n;
        *bytes = clnet_malloc(n > 0 ? (size_t)n : 1);
        if (!*bytes) b = clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    if (b == CLNET_OK)
        b = clnet_dist_bcast(world, CLNET_LANE_CONTROL, *bytes, *size, 0,
                             "sending the checkpoint from rank 0");
    if (b != CLNET_OK) {
        free(*bytes);
        *bytes = NULL;
    }
    return b;
}

clnet_status clnet_net_load_weights(clnet_net *net, const char *path, clnet_progress *progress) {
    if (!net || !path)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_load_weights: NULL argument");
    clnet_status s = finish(net);
    char *choices = NULL;
    unsigned char *bytes = NULL;
    size_t size = 0;
    if (s == CLNET_OK && clnet_dist_world()) s = read_on_rank_0(path, &bytes, &size);
    if (s == CLNET_OK)
        s = clnet_checkpoint_load(&net->model, &net->optim, path, bytes, size, progress, &choices);
    free(bytes);
    if (s == CLNET_OK) {
        free(net->gemm_choices);
        net->gemm_choices = choices;
        s = pin_choices(net);
    }
    if (s == CLNET_OK && net->trainer) s = clnet_broadcast(net->trainer, &net->model, 1);
    return s;
}
