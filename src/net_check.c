/* What the public API checks of what a net is given (net.c calls these
 * before a step): bound or not, labels, the classes of a loss per
 * position, float targets or not; and whether a data set fits a net
 * (clnet_net_accepts). Nothing here runs on a device. */
#include "net.h"
#include "data.h"
#include "error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

clnet_status clnet_net_check_loader(const clnet_net *net, const clnet_loader *l, const char *what) {
    size_t want = clnet_shape_size(net->model.input), have = clnet_loader_sample_values(l);
    if (want == have) return CLNET_OK;
    int c, h, w;
    clnet_loader_shape(l, &c, &h, &w);
    return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                      "%s: the net takes inputs of %zu values, the loader's samples are %dx%dx%d "
                      "(%zu)",
                      what, want, c, h, w, have);
}

clnet_status clnet_net_need_bound(const clnet_net *net, const void *data, const char *what) {
    if (!net || !data) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (!net->trainer)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: bind the net to a runtime first", what);
    return CLNET_OK;
}

int clnet_net_per_position(const clnet_net *net) {
    return clnet_model_is_classifier(&net->model) && clnet_model_target_size(&net->model);
}

clnet_status clnet_net_check_labels(const clnet_net *net, const int32_t *labels, int n) {
    int classes = clnet_net_classes(net);
    if (!clnet_net_is_classifier(net) || clnet_net_per_position(net))
        return CLNET_OK; /* not read */
    for (int b = 0; b < n; b++)
        if (labels[b] < 0 || labels[b] >= classes)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                              "label %d of sample %d is outside [0, %d)", (int)labels[b], b,
                              classes);
    return CLNET_OK;
}

clnet_status clnet_net_check_position_classes(const clnet_net *net, const float *t, int n) {
    int classes = clnet_net_classes(net);
    size_t P = (size_t)clnet_net_positions(net);
    for (size_t i = 0; i < (size_t)n * P; i++)
        if (!(t[i] >= 0 && t[i] < (float)classes) || t[i] != floorf(t[i]))
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                              "the class of sample %zu at position %zu is %g: the loss per "
                              "position takes classes 0 to %d",
                              i / P, i % P, t[i], classes - 1);
    return CLNET_OK;
}

clnet_status clnet_net_labels_as_targets(clnet_net *net, const int32_t *labels, int n,
                                         const float **targets) {
    size_t count = (size_t)n * (size_t)clnet_net_positions(net);
    if (count > net->position_cap) {
        float *grown = realloc(net->position_classes, count * sizeof *grown);
        if (!grown)
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %zu labels", count);
        net->position_classes = grown, net->position_cap = count;
    }
    for (size_t i = 0; i < count; i++) net->position_classes[i] = (float)labels[i];
    *targets = net->position_classes;
    return clnet_net_check_position_classes(net, net->position_classes, n);
}

clnet_status clnet_net_check_truth(const clnet_net *net, int with_targets, const char *what) {
    const clnet_node *loss = clnet_model_loss(&net->model);
    size_t T = clnet_model_target_size(&net->model);
    if (T && !with_targets)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s: the loss '%s' (%s) compares the output with float targets from the "
                          "data (%zu values a sample), not labels: give targets, or target= in "
                          "the model",
                          what, loss->name, loss->kind->name, T);
    if (!T && with_targets)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s: the loss '%s' (%s) takes %s, not float targets from the data", what,
                          loss ? loss->name : "?", loss ? loss->kind->name : "?",
                          clnet_model_is_classifier(&net->model)
                              ? "labels (one class per sample)"
                              : "its target from the layer target= names");
    return CLNET_OK;
}

/* Targets of the size the loss takes are of its kind: the classes of the
 * positions (integers, within the model's classes) for a loss per position,
 * floats for a regression. */
static int kinds_fit(const clnet_net *net, const clnet_dataset *ds, char *why, size_t cap) {
    int maps = clnet_dataset_target_classes(ds), classes = clnet_net_classes(net);
    const clnet_node *loss = clnet_model_loss(&net->model);
    if (maps && !clnet_net_per_position(net)) {
        if (why && cap)
            snprintf(why, cap,
                     "compares its output with float targets (its loss '%s', %s), but the data "
                     "set's targets are classes (integers: they fit softmax_cross_entropy "
                     "per=position)",
                     loss->name, loss->kind->name);
        return 0;
    }
    if (!maps && clnet_net_per_position(net)) {
        if (why && cap)
            snprintf(why, cap,
                     "takes the class of each position (its loss '%s' has per=position), as "
                     "integers, but the data set's targets are float32",
                     loss->name);
        return 0;
    }
    if (maps && clnet_dataset_classes(ds) > classes) {
        if (why && cap)
            snprintf(why, cap, "predicts %d classes at each position but the data has %d", classes,
                     clnet_dataset_classes(ds));
        return 0;
    }
    return 1;
}

/* Whether class maps (dims, one class a position) have the spatial shape of
 * the loss's input `in` (classes, spatial...): as many positions in another
 * arrangement would pair each output with another position's class. */
static int same_spatial(clnet_shape in, const int dims[4]) {
    for (int i = 0; i < 4; i++)
        if (dims[i] != (i < in.ndim ? in.dim[i] : 0)) return 0;
    return 1;
}

/* Whether the data's float targets are what the loss compares with: there
 * are some exactly when it takes them, of its input's size (and, for a loss
 * per position, of its spatial shape). */
static int targets_fit(const clnet_net *net, const clnet_dataset *ds, char *why, size_t cap) {
    int dims[4];
    size_t want = clnet_model_target_size(&net->model);
    size_t have = (size_t)clnet_dataset_targets(ds, dims);
    const clnet_node *loss = clnet_model_loss(&net->model);
    if (want && want == have && !kinds_fit(net, ds, why, cap)) return 0;
    if (want == have && (!want || !clnet_net_per_position(net) || same_spatial(loss->in[0], dims)))
        return 1;
    if (!have && !clnet_dataset_labelled(ds)) return 1; /* nothing to fit */
    if (!why || !cap) return 0;
    if (!have && clnet_net_per_position(net))
        snprintf(why, cap,
                 "predicts a class at each of %zu positions (its loss '%s' has per=position), but "
                 "the data set has one label per sample or none (give the classes as integers of "
                 "shape (N, spatial...), --data-npy X,Y)",
                 want, loss->name);
    else if (!have)
        snprintf(why, cap,
                 "compares its output with float targets (%zu values a sample: its loss '%s' has "
                 "no target=), but the data set has labels or nothing (give float32 targets, "
                 "--data-npy X,Y)",
                 want, loss ? loss->name : "?");
    else if (!want)
        snprintf(why, cap, "takes %s, but the data set holds %s (%zu values a sample)",
                 clnet_model_is_classifier(&net->model) ? "labels" : "its target from target=",
                 clnet_dataset_target_classes(ds) ? "classes per position" : "float targets", have);
    else {
        char a[64], b[64];
        int rank = 0;
        while (rank < 4 && dims[rank]) rank++;
        clnet_shape_format(loss->in[0], a, sizeof a);
        clnet_dims_text(dims, rank, b, sizeof b);
        snprintf(why, cap,
                 "compares the output of its loss '%s' (line %d), %s (%zu %s a sample), with "
                 "the data's targets, %s (%zu values): they must have one %s",
                 loss->name, loss->line, a, want,
                 clnet_net_per_position(net) ? "positions" : "values", b, have,
                 clnet_net_per_position(net) ? "spatial shape" : "shape");
    }
    return 0;
}

int clnet_net_accepts(const clnet_net *net, const clnet_dataset *ds, char *why, size_t cap) {
    return clnet_net_accepts_with(net, ds, NULL, why, cap);
}

int clnet_net_accepts_with(const clnet_net *net, const clnet_dataset *ds, const clnet_transforms *t,
                           char *why, size_t cap) {
    int want[4], have[4];
    if (!net || !ds) {
        if (why && cap) snprintf(why, cap, "no net or no data set");
        return 0;
    }
    int wrank = clnet_net_input_rank(net, want), hrank = clnet_dataset_dims(ds, have);
    if (t && hrank >= 2) { /* the images' last two sides as the transforms leave them */
        if (clnet_dataset_transformed_shape(ds, t, NULL, &have[hrank - 2], &have[hrank - 1]) !=
            CLNET_OK) {
            if (why && cap) snprintf(why, cap, "%s", clnet_last_error());
            return 0;
        }
    }
    long wsize = 1, hsize = 1;
    for (int i = 0; i < wrank; i++) wsize *= want[i];
    for (int i = 0; i < hrank; i++) hsize *= have[i];
    int same = wrank == hrank, no_channel = want[0] == 1 && hrank == wrank - 1;
    for (int i = 0; i < hrank && (same || no_channel); i++) {
        if (same && have[i] != want[i]) same = 0;
        if (no_channel && have[i] != want[i + 1]) no_channel = 0;
    }
    if (same || no_channel || (clnet_dataset_from_idx(ds) && wsize == hsize))
        return targets_fit(net, ds, why, cap);
    char w[64], h[64];
    clnet_dims_text(want, wrank, w, sizeof w);
    clnet_dims_text(have, hrank, h, sizeof h);
    if (why && cap)
        snprintf(why, cap, "takes %s inputs (%ld values) but the data set's samples are %s (%ld)",
                 w, wsize, h, hsize);
    return 0;
}
