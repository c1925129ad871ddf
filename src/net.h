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

#endif
