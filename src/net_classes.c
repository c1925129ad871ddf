/* What a classifier's runs ask of its classes beyond the loss and the accuracy:
 * top-k accuracy and the confusion matrix over a data set
 * (clnet_net_evaluate_classes, from the logits the devices give back), and
 * label smoothing set on the loss for a run (clnet_net_set_label_smoothing). */
#include "net.h"
#include "alloc.h"
#include "data.h"
#include "error.h"
#include "step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The rank of class t among the K logits z (stride apart): how many come
 * before it in descending order, ties in class order (torch.sort stable); K
 * for a NaN, which no k counts. */
static int rank_of(const float *z, size_t stride, int K, int t) {
    float zt = z[(size_t)t * stride];
    if (isnan(zt)) return K;
    int before = 0;
    for (int j = 0; j < K; j++) {
        float zj = z[(size_t)j * stride];
        before += zj > zt || (zj == zt && j < t);
    }
    return before;
}

/* The first largest of the K logits z (stride apart), as the loss kernel's
 * accuracy and torch.argmax take it. */
static int first_max(const float *z, size_t stride, int K) {
    int best = 0;
    for (int j = 1; j < K; j++)
        if (z[(size_t)j * stride] > z[(size_t)best * stride]) best = j;
    return best;
}

/* Adds the n samples of a batch to out and confusion: logits (n, K, P), the
 * class of each answer in labels (n) when P is 1, else in targets (n, P). */
static void count_batch(const float *logits, const int32_t *labels, const float *targets, int n,
                        int K, int P, clnet_class_counts *out, int64_t *confusion) {
    for (int b = 0; b < n; b++)
        for (int p = 0; p < P; p++) {
            const float *z = logits + (size_t)b * K * P + p; // (K) with stride P
            int t = targets ? (int)targets[(size_t)b * P + p] : labels[b];
            int r = rank_of(z, (size_t)P, K, t);
            out->top_k += r < out->k;
            out->top_1 += r == 0;
            out->answers++;
            if (confusion) confusion[(size_t)t * K + first_max(z, (size_t)P, K)]++;
        }
}

clnet_status clnet_net_evaluate_classes(clnet_net *net, const clnet_dataset *ds,
                                        const clnet_loader_config *cfg, int k,
                                        clnet_class_counts *out, int64_t *confusion) {
    static const char what[] = "clnet_net_evaluate_classes";
    clnet_status status = CLNET_OK;
    clnet_loader *loader = NULL;
    float *logits = NULL;
    if (!out) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s: out is NULL", what);
    TRY(clnet_net_need_bound(net, ds, what));
    if (!clnet_model_is_classifier(&net->model))
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "%s: the model's loss has no classes (a regression's or a reconstruction's)", what);
    int K = clnet_model_classes(&net->model), P = clnet_model_positions(&net->model);
    if (k < 1 || k > K)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s: k=%d: expected 1 to %d (the model's classes)", what,
             k, K);
    *out = (clnet_class_counts){.k = k, .classes = K};
    if (confusion)
        for (size_t i = 0; i < (size_t)K * K; i++) confusion[i] = 0;
    TRY(clnet_net_eval_loader(net, ds, cfg, what, &loader));
    logits = clnet_malloc((size_t)net->trainer->max_batch * K * P * sizeof *logits);
    if (!logits) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory for the logits", what);
    int per_position = clnet_net_per_position(net);
    for (int b = 0; b < clnet_loader_batches_per_epoch(loader); b++) {
        clnet_batch batch;
        TRY(clnet_loader_next(loader, &batch));
        TRY(clnet_net_check_labels(net, batch.labels, batch.n));
        if (per_position && !batch.targets)
            FAIL(CLNET_ERR_INVALID_ARGUMENT,
                 "%s: the loss is per position, and the data set has no class maps", what);
        if (per_position) TRY(clnet_net_check_position_classes(net, batch.targets, batch.n));
        /* every rank gets every device's logits (the step gathers them) */
        TRY(clnet_step_logits(net->trainer, net->optim.step, batch.images, batch.n, logits));
        count_batch(logits, batch.labels, per_position ? batch.targets : NULL, batch.n, K, P, out,
                    confusion);
    }
    out->top_k_accuracy = out->answers ? (double)out->top_k / (double)out->answers : 0;
cleanup:
    free(logits);
    clnet_loader_free(loader);
    return status;
}

clnet_status clnet_net_set_label_smoothing(clnet_net *net, float eps) {
    static const char what[] = "clnet_net_set_label_smoothing";
    if (!net) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: net is NULL", what);
    if (!(eps >= 0 && eps <= 1))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: %g: expected 0 to 1", what, (double)eps);
    char text[32];
    snprintf(text, sizeof text, "%.9g", (double)eps); /* reads back to the same float */
    int set = 0;
    for (int i = 0; i < net->model.count; i++) {
        clnet_node *node = &net->model.nodes[i];
        const clnet_option *o = clnet_option_find(node->kind->options, "label_smoothing");
        if (!o) continue;
        clnet_status s = clnet_option_set(o, node->config.bytes, text);
        if (s != CLNET_OK) return clnet_error_context(s, "%s: layer '%s'", what, node->name);
        set++;
    }
    if (!set)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s: the model has no layer that takes label_smoothing (its loss is "
                          "no softmax_cross_entropy)",
                          what);
    return CLNET_OK;
}
