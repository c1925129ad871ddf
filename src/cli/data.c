/* Whether a data set fits a net, checked the same way by every command that loads one. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

int cli_data_fits(const clnet_net *net, const clnet_dataset *ds, const char *model) {
    char why[256];
    if (!clnet_net_accepts(net, ds, why, sizeof why)) {
        fprintf(stderr, "clnet: %s %s\n", model, why);
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

int cli_random_batch(const clnet_net *net, long n, float **x, int32_t **y) {
    int ch = 0, h = 0, w = 0;
    clnet_net_input_shape(net, &ch, &h, &w);
    size_t count = (size_t)n * ch * h * w;
    *x = malloc(count * sizeof **x);
    *y = malloc((size_t)n * sizeof **y);
    if (!*x || !*y) return 0;
    for (size_t i = 0; i < count; i++) (*x)[i] = (float)((i * 2654435761u) % 256) / 255.0f;
    for (long i = 0; i < n; i++) (*y)[i] = (int32_t)(i % clnet_net_classes(net));
    return 1;
}
