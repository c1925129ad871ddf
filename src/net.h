/* The public net: a model, its optimizer, and while bound its trainer. */
#ifndef CLNET_NET_H
#define CLNET_NET_H

#include "model.h"
#include "optim.h"
#include "trainer.h"

struct clnet_net {
    clnet_model model;
    clnet_optim optim;
    clnet_trainer *trainer; /* NULL when not bound */
    /* The GEMM choices a loaded checkpoint recorded ("gemm_choices"), pinned
     * on the devices while bound; NULL when none. */
    char *gemm_choices;
    /* Labels given to a loss per position, as the floats it reads: room for
     * a batch's, grown as needed (NULL until then). */
    float *position_classes;
    size_t position_cap;
};

/* The checks of what the public calls are given, in net_check.c (net.c
 * calls them before a step; clnet_net_accepts is there too). Each names the
 * public call `what` in its message. */

/* net and data not NULL, and the net bound. */
/* CLNET_ERR_INVALID_ARGUMENT, naming what, when l's samples are not the net's input size. */
clnet_status clnet_net_check_loader(const clnet_net *net, const clnet_loader *l, const char *what);
clnet_status clnet_net_need_bound(const clnet_net *net, const void *data, const char *what);
/* A classifier per position: it reads the class of each position from the
 * data's targets, as floats (clnet_model_target_size). */
int clnet_net_per_position(const clnet_net *net);
/* Every label (n) one of the classifier's classes (a net that reads no
 * labels takes any). */
clnet_status clnet_net_check_labels(const clnet_net *net, const int32_t *labels, int n);
/* The class of each position t (n, positions) as the floats a loss per
 * position reads: each a whole number in [0, classes). */
clnet_status clnet_net_check_position_classes(const clnet_net *net, const float *t, int n);
/* The classes of a loss per position, where the caller gave them as labels
 * (n, positions): checked, and into *targets as the floats it reads (the
 * net's position_classes). */
clnet_status clnet_net_labels_as_targets(clnet_net *net, const int32_t *labels, int n,
                                         const float **targets);
/* What the loss compares with, where the caller gives float targets or not:
 * a loss that takes the data's targets refuses a call without them, and the
 * others refuse targets. */
clnet_status clnet_net_check_truth(const clnet_net *net, int with_targets, const char *what);

/* A loader for evaluating ds on the bound net (net.c): epoch 0 in file order, in batches
 * of the bound size, images prepared as `with` says less its random transforms; the
 * folded parameters sent to the devices. For clnet_net_evaluate_with and
 * clnet_net_evaluate_classes (net_classes.c), named `what` in messages. */
clnet_status clnet_net_eval_loader(clnet_net *net, const clnet_dataset *ds,
                                   const clnet_loader_config *with, const char *what,
                                   clnet_loader **out);

#endif
