/* The replica's side of fusion (links.h). */
#include "links.h"
#include "alloc.h"
#include "error.h"

#include <stdlib.h>

void clnet_links_free(clnet_links *l) {
    free(l->folds);
    free(l->norms);
    free(l->stats);
    l->folds = NULL, l->norms = NULL, l->stats = NULL;
}

/* What each folding convolution adds after its product: the batch norm's
 * bias slot and relu. */
static clnet_status make_folds(clnet_links *l, const clnet_model *m) {
    if (!clnet_fusion_folds(m->fusion)) return CLNET_OK;
    l->folds = clnet_calloc((size_t)m->count, sizeof *l->folds);
    if (!l->folds) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < m->count; i++) {
        int bn = clnet_fusion_fold(m->fusion, i);
        if (bn >= 0)
            l->folds[i] = (clnet_fold){m->nodes[bn].params[1].offset,
                                       (uint32_t)clnet_fusion_relu(m->fusion, bn)};
    }
    return CLNET_OK;
}

/* Each add that normalizes a batch norm's output and that batch norm: where
 * the add reads the batch norm's input and statistics, where the batch norm
 * reads the add's output gradient (and output, for its relu). One link for
 * both, at the batch norm's index. */
static clnet_status make_norm_links(clnet_links *l, const clnet_model *m, const clnet_plan *p,
                                    cl_mem *keeps) {
    int links = 0;
    for (int i = 0; i < m->count; i++) links += clnet_fusion_normalizes(m->fusion, i) >= 0;
    if (!links) return CLNET_OK;
    l->norms = clnet_calloc((size_t)m->count, sizeof *l->norms);
    if (!l->norms) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < m->count; i++) {
        int k = clnet_fusion_normalizes(m->fusion, i);
        if (k < 0) continue;
        int bn = m->nodes[i].inputs[k], from = m->nodes[bn].inputs[0];
        l->norms[bn] = (clnet_norm_link){.input = k,
                                         .x = from == CLNET_MODEL_INPUT ? p->input : p->y[from],
                                         .norm = keeps[bn],
                                         .weight = m->nodes[bn].params[0].offset,
                                         .dy = p->dy[i],
                                         .y = p->y[i],
                                         .relu = (uint32_t)clnet_fusion_relu(m->fusion, i)};
    }
    return CLNET_OK;
}

/* Each convolution that makes the statistics of the batch norm after it:
 * where it writes them, at the start of its kept memory. */
static clnet_status make_stats_links(clnet_links *l, const clnet_model *m, cl_mem *keeps) {
    int links = 0;
    for (int i = 0; i < m->count; i++)
        links += clnet_fusion_stats_to(m->fusion, i) >= 0 && keeps[i];
    if (!links) return CLNET_OK;
    l->stats = clnet_calloc((size_t)m->count, sizeof *l->stats);
    if (!l->stats) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < m->count; i++)
        if (clnet_fusion_stats_to(m->fusion, i) >= 0)
            l->stats[i] = (clnet_stats_link){.mem = keeps[i]};
    return CLNET_OK;
}

clnet_status clnet_links_make(clnet_links *l, const clnet_model *m, const clnet_plan *p,
                              cl_mem *keeps) {
    clnet_status s = make_folds(l, m);
    if (s == CLNET_OK) s = make_norm_links(l, m, p, keeps);
    if (s == CLNET_OK) s = make_stats_links(l, m, keeps);
    return s;
}

void clnet_links_pass(const clnet_links *l, const clnet_model *m, const clnet_plan *p, int i,
                      cl_mem folded, clnet_pass *pass) {
    const clnet_fusion *f = m->fusion;
    int train = pass->ctx->train, k = clnet_fusion_normalizes(f, i), bn = clnet_fusion_fold(f, i);
    if (train && l->norms && (k >= 0 || clnet_fusion_normalizer(f, i) >= 0)) /* the batch norm's */
        pass->norm = &l->norms[k >= 0 ? m->nodes[i].inputs[k] : i];
    /* the link's, at the convolution */
    int conv = clnet_fusion_stats_to(f, i) >= 0 ? i : clnet_fusion_stats_of(f, i);
    if (train && !pass->backward && l->stats && conv >= 0 && l->stats[conv].mem)
        pass->stats = &l->stats[conv];
    if (!train && bn >= 0 && folded) {
        pass->params = folded;
        pass->y = p->y[bn];
        pass->fold = &l->folds[i];
    }
}
