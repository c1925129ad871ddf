/* Whether a data set fits a net, checked the same way by every command that loads one. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when the net compares its output with the data's float targets, one for
 * each value of a sample, and ds has none: its samples could be its targets. */
static int could_denoise(const clnet_net *net, const clnet_dataset *ds) {
    int c = 0, h = 0, w = 0;
    clnet_layer_info loss;
    clnet_dataset_shape(ds, &c, &h, &w);
    return !clnet_net_is_classifier(net) && !clnet_dataset_targets(ds, NULL) &&
           clnet_net_layer_info(net, clnet_net_layer_count(net) - 1, &loss) == CLNET_OK &&
           loss.inputs == 1 && clnet_net_outputs(net) == (size_t)c * h * w;
}

int cli_data_fits(const clnet_net *net, const clnet_dataset *ds, const clnet_transforms *t,
                  const char *model) {
    char why[512];
    if (!clnet_net_accepts_with(net, ds, t, why, sizeof why)) {
        int want[4], rank = clnet_net_input_rank(net, want), dims[4];
        char hint[64] = "";
        if (rank >= 2 && clnet_dataset_dims(ds, dims) >= 2 && (!t || !t->resize_height))
            snprintf(hint, sizeof hint, " (--resize %dx%d resizes them)", want[rank - 2],
                     want[rank - 1]);
        fprintf(stderr, "clnet: %s %s%s%s\n", model, why, hint,
                could_denoise(net, ds) ? "; or, for a denoising autoencoder, --noise STD makes "
                                         "the clean samples the targets"
                                       : "");
        return 0;
    }
    int classes = clnet_dataset_classes(ds);
    if (clnet_net_is_classifier(net) && clnet_dataset_labelled(ds) &&
        classes > clnet_net_classes(net)) {
        fprintf(stderr, "clnet: the data has %d classes but %s predicts %d\n", classes, model,
                clnet_net_classes(net));
        return 0;
    }
    return 1;
}

int cli_run_value(const char *run, const char *key, char *out, size_t cap) {
    size_t n = strlen(key);
    for (const char *line = run; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > n && strncmp(line, key, n) == 0 && line[n] == '=') {
            snprintf(out, cap, "%.*s", (int)(len - n - 1), line + n + 1);
            return 1;
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

void cli_report_skipped(const clnet_dataset *ds) {
    int n = clnet_dataset_skipped(ds);
    for (int k = 0; k < n; k++)
        fprintf(stderr, "clnet: skipped %s\n", clnet_dataset_skipped_reason(ds, k));
    if (n)
        fprintf(stderr, "clnet: skipped %d image%s that do not decode (--skip-bad-images)\n", n,
                n == 1 ? "" : "s");
}

void cli_class_names(const clnet_dataset *ds, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; ds && k < clnet_dataset_classes(ds); k++) {
        const char *name = clnet_dataset_class_name(ds, k);
        if (!name || strchr(name, '\n') || used + strlen(name) + 2 > cap) {
            out[0] = '\0';
            return;
        }
        used += (size_t)snprintf(out + used, cap - used, "%s\n", name);
    }
}

int cli_random_batch(const clnet_net *net, long n, cli_batch *b) {
    int shape[4], rank = clnet_net_input_rank(net, shape), positions = clnet_net_positions(net);
    size_t count = (size_t)n, labels = (size_t)n * (positions > 1 ? positions : 1);
    for (int i = 0; i < rank; i++) count *= (size_t)shape[i]; /* volumes have a depth too */
    size_t targets = clnet_net_is_classifier(net) ? 0 : (size_t)n * clnet_net_outputs(net);
    *b = (cli_batch){malloc(count * sizeof *b->x), NULL, malloc(labels * sizeof *b->y)};
    if (targets) b->t = malloc(targets * sizeof *b->t);
    if (!b->x || !b->y || (targets && !b->t)) return 0;
    for (size_t i = 0; i < count; i++) b->x[i] = (float)((i * 2654435761u) % 256) / 255.0f;
    for (size_t i = 0; i < labels; i++) b->y[i] = (int32_t)(i % (size_t)clnet_net_classes(net));
    for (size_t i = 0; i < targets; i++) b->t[i] = (float)((i * 40503u) % 256) / 255.0f;
    return 1;
}

void cli_batch_free(cli_batch *b) {
    free(b->x), free(b->t), free(b->y);
    *b = (cli_batch){0};
}

/* A loss without classes and without target= (its one input the prediction)
 * reads float targets from the data; one with target= takes labels, unread. */
clnet_status cli_random_step(clnet_net *net, const cli_batch *b, int n) {
    clnet_layer_info loss;
    int data_targets =
        !clnet_net_is_classifier(net) &&
        clnet_net_layer_info(net, clnet_net_layer_count(net) - 1, &loss) == CLNET_OK &&
        loss.inputs == 1;
    return data_targets ? clnet_net_train_step_targets(net, b->x, b->t, n, NULL)
                        : clnet_net_train_step(net, b->x, b->y, n, NULL);
}

int cli_noise_targets(const clnet_net *net, clnet_dataset *ds, const char *model) {
    clnet_layer_info loss;
    if (clnet_net_layer_info(net, clnet_net_layer_count(net) - 1, &loss) != CLNET_OK) return 1;
    if (clnet_net_is_classifier(net)) return 0; /* labels: noise alone, as augmentation */
    if (loss.inputs > 1) {
        fprintf(stderr,
                "clnet: --noise: the loss '%s' of %s compares its output with target=%s, which "
                "would be the noisy input: drop target= (the clean samples become the data's "
                "targets)\n",
                loss.name, model, loss.input_names[1]);
        return 2;
    }
    if (clnet_dataset_targets(ds, NULL)) return 0; /* the data's own targets */
    if (clnet_dataset_targets_from_samples(ds) != CLNET_OK) {
        fprintf(stderr, "clnet: --noise: %s\n", clnet_last_error());
        return 1;
    }
    return 0;
}
