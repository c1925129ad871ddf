/* A replica's side of fusion (fusion.h): what the passes of two layers
 * that run one inside the other share on the device, made once when the
 * replica is planned, and given to each pass that needs it (clnet_pass's
 * fold, norm and stats). */
#ifndef CLNET_LINKS_H
#define CLNET_LINKS_H

#include "model.h"
#include "plan.h"

typedef struct {
    /* (model count) each folding convolution's bias slot and relu, or NULL:
     * no batch norm folds */
    clnet_fold *folds;
    /* (model count) at each batch norm that an add normalizes, the link of
     * both, or NULL: none */
    clnet_norm_link *norms;
    /* (model count) at each convolution that makes the statistics of the
     * batch norm after it, their link, or NULL: none */
    clnet_stats_link *stats;
} clnet_links;

/* The links of model m as planned by p, with each node's kept memory
 * (keeps: the norm and stats links live there). */
clnet_status clnet_links_make(clnet_links *l, const clnet_model *m, const clnet_plan *p,
                              cl_mem *keeps);
void clnet_links_free(clnet_links *l);

/* Gives node i's pass (its ctx, backward and y set) the links it runs with:
 * in training, an add's or batch norm's norm link and, forward, a
 * convolution's or batch norm's stats link; in evaluation, with `folded`
 * (the folded parameters, NULL while they are stale), a convolution its
 * folded batch norm: the folded parameters, and that batch norm's output. */
void clnet_links_pass(const clnet_links *l, const clnet_model *m, const clnet_plan *p, int i,
                      cl_mem folded, clnet_pass *pass);

#endif
