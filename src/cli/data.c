/* Whether a data set fits a net, checked the same way by every command that loads one. */
#include "cli.h"

#include <stdio.h>

int cli_data_fits(const clnet_net *net, const clnet_dataset *ds, const char *model) {
    char why[256];
    if (!clnet_net_accepts(net, ds, why, sizeof why)) {
        fprintf(stderr, "clnet: %s %s\n", model, why);
        return 0;
    }
    int classes = clnet_dataset_classes(ds);
    if (clnet_dataset_labelled(ds) && classes > clnet_net_classes(net)) {
        fprintf(stderr, "clnet: the data has %d classes but %s predicts %d\n", classes, model,
                clnet_net_classes(net));
        return 0;
    }
    return 1;
}
