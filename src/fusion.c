/* Fusion (fusion.h): one pass over the graph decides what runs inside what,
 * and this record of it answers everyone else. */
#include "fusion.h"
#include "env.h"
#include "alloc.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

/* What was decided for one node; -1: none. */
typedef struct {
    int relu;       /* 1: the relu after it runs in its kernels */
    int fold;       /* convolution: the batch norm folded into it */
    int fold_into;  /* batch norm: the convolution it folds into */
    int normalizes; /* add: its input made from a batch norm's input */
    int normalizer; /* batch norm: the add that normalizes it */
    int stats_to;   /* convolution: the batch norm it writes statistics for */
    int stats_of;   /* batch norm: the convolution it takes them from */
} fusion_record;

struct clnet_fusion {
    int count;
    fusion_record *at; /* (count) */
};

void clnet_fusion_free(clnet_fusion *f) {
    if (!f) return;
    free(f->at);
    free(f);
}

/* The node whose output node i (of one input) alone reads, or -1: it reads
 * the model's input, or shares its input with others. */
static int sole_input(const clnet_node *nodes, const int *readers, int i) {
    int from = nodes[i].inputs[0];
    return from != CLNET_MODEL_INPUT && readers[from] == 1 ? from : -1;
}

/* A relu that alone reads a layer able to take it in (clnet_kind.fuse_relu)
 * runs in that layer's kernels and becomes a view of its output: one pass
 * over the memory fewer each way. A relu taken in already (a model finished
 * again after a line was added) is its fused form, which names itself. */
static void take_relus(fusion_record *at, clnet_node *nodes, int count, const int *readers) {
    for (int i = 0; i < count; i++) {
        clnet_node *relu = &nodes[i];
        const clnet_kind *view = relu->kind->fused_form;
        int from = relu->inputs[0];
        if (!view || from == CLNET_MODEL_INPUT) continue;
        clnet_node *producer = &nodes[from];
        if (!producer->kind->fuse_relu) continue;
        if (readers[from] == 1 && producer->kind->fuse_relu(producer)) {
            relu->kind = view;
            at[from].relu = 1;
        }
    }
}

/* A batch norm that alone reads a convolution (clnet_kind.fold_scale) folds
 * into it for evaluation: the convolution's evaluation pass runs with scaled
 * weights and a bias of the batch norm's (clnet_fusion_fold_params) and
 * writes the batch norm's output, and the batch norm runs nothing. With the
 * relu after the batch norm taken in, the convolution applies it. */
static void fold(fusion_record *at, const clnet_node *nodes, int count, const int *readers) {
    for (int i = 0; i < count; i++) {
        int c = nodes[i].kind->eval_affine ? sole_input(nodes, readers, i) : -1;
        const clnet_node *conv = c >= 0 ? &nodes[c] : NULL;
        if (!conv || !conv->kind->fold_scale || at[c].relu || at[c].fold >= 0 ||
            !conv->kind->fold_scale(conv, NULL, NULL, at[i].relu))
            continue;
        at[c].fold = i;
        at[i].fold_into = c;
    }
}

/* A batch norm whose one reader is an add (without the relu after it taken
 * in) leaves its normalization to the add in training: the add makes that
 * input from the batch norm's input and statistics as it sums (one pass
 * over the tensor, and no batch norm output written and read back), and the
 * batch norm's backward reads the add's output gradient. At most one per add. */
static void link_norms(fusion_record *at, clnet_node *nodes, int count, const int *readers) {
    for (int i = 0; i < count; i++) {
        const clnet_node *add = &nodes[i];
        for (int k = 0; add->kind->takes_norm && k < add->ninputs && at[i].normalizes < 0; k++) {
            int from = add->inputs[k];
            if (from == CLNET_MODEL_INPUT) continue;
            clnet_node *bn = &nodes[from];
            if (!bn->kind->leave_norm || at[from].relu || readers[from] != 1 ||
                !bn->kind->leave_norm(bn))
                continue;
            at[i].normalizes = k;
            at[from].normalizer = i;
        }
    }
}

/* A batch norm that alone reads a convolution able to make its statistics
 * (clnet_kind.stats_out) takes them from the convolution in training: the
 * convolution writes each block's count, mean and centred sums as it stores
 * its output (cl/conv_lanes.cl, cl/conv_implicit.cl) and the batch norm
 * merges those instead of reading its input again. */
static void link_stats(fusion_record *at, clnet_node *nodes, int count, const int *readers) {
    for (int i = 0; i < count; i++) {
        int c = nodes[i].kind->stats_in ? sole_input(nodes, readers, i) : -1;
        clnet_node *conv = c >= 0 ? &nodes[c] : NULL;
        if (!conv || !conv->kind->stats_out || at[c].relu || !conv->kind->stats_out(conv)) continue;
        at[c].stats_to = i;
        at[i].stats_of = c;
    }
}

clnet_status clnet_fusion_decide(clnet_fusion **out, clnet_node *nodes, int count) {
    clnet_fusion *f = clnet_calloc(1, sizeof *f);
    int *readers = clnet_calloc((size_t)count + 1, sizeof *readers);
    *out = NULL;
    if (f) f->at = clnet_malloc(((size_t)count + 1) * sizeof *f->at);
    if (!f || !f->at || !readers) {
        clnet_fusion_free(f);
        free(readers);
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory deciding fusions");
    }
    f->count = count;
    for (int i = 0; i < count; i++) {
        f->at[i] = (fusion_record){0, -1, -1, -1, -1, -1, -1};
        for (int k = 0; k < nodes[i].ninputs; k++)
            if (nodes[i].inputs[k] != CLNET_MODEL_INPUT) readers[nodes[i].inputs[k]]++;
    }
    clnet_env env = {0};
    clnet_status status = clnet_env_read(&env);
    if (status == CLNET_OK && env.fuse) { /* CLNET_FUSE=off: every layer apart */
        take_relus(f->at, nodes, count, readers);
        fold(f->at, nodes, count, readers);
        link_norms(f->at, nodes, count, readers);
        link_stats(f->at, nodes, count, readers);
    }
    clnet_env_free(&env);
    free(readers);
    if (status != CLNET_OK) {
        clnet_fusion_free(f);
        return status;
    }
    *out = f;
    return CLNET_OK;
}

/* Node i's record, or NULL: nothing decided, or no such node. */
static const fusion_record *record(const clnet_fusion *f, int i) {
    return f && i >= 0 && i < f->count ? &f->at[i] : NULL;
}

int clnet_fusion_relu(const clnet_fusion *f, int i) {
    return record(f, i) ? record(f, i)->relu : 0;
}
int clnet_fusion_fold(const clnet_fusion *f, int i) {
    return record(f, i) ? record(f, i)->fold : -1;
}
int clnet_fusion_fold_into(const clnet_fusion *f, int i) {
    return record(f, i) ? record(f, i)->fold_into : -1;
}
int clnet_fusion_normalizes(const clnet_fusion *f, int i) {
    return record(f, i) ? record(f, i)->normalizes : -1;
}
int clnet_fusion_normalizer(const clnet_fusion *f, int i) {
    return record(f, i) ? record(f, i)->normalizer : -1;
}
int clnet_fusion_stats_to(const clnet_fusion *f, int i) {
    return record(f, i) ? record(f, i)->stats_to : -1;
}
int clnet_fusion_stats_of(const clnet_fusion *f, int i) {
    return record(f, i) ? record(f, i)->stats_of : -1;
}

int clnet_fusion_folds(const clnet_fusion *f) {
    int folds = 0;
    for (int i = 0; f && i < f->count; i++) folds += f->at[i].fold >= 0;
    return folds;
}

clnet_status clnet_fusion_fold_params(const clnet_fusion *f, const clnet_node *nodes,
                                      const float *params, const float *buffers, float *out) {
    for (int i = 0; f && i < f->count; i++) {
        if (f->at[i].fold < 0) continue;
        const clnet_node *conv = &nodes[i], *bn = &nodes[f->at[i].fold];
        size_t C = (size_t)bn->in[0].c, count = conv->params[0].count;
        double *w = clnet_malloc((count + 2 * C) * sizeof *w), *s = w + count, *t = s + C;
        if (!w) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory folding '%s'", bn->name);
        bn->kind->eval_affine(bn, params, buffers, s, t);
        for (size_t e = 0; e < count; e++) w[e] = params[conv->params[0].offset + e];
        conv->kind->fold_scale(conv, w, s, f->at[f->at[i].fold].relu);
        for (size_t e = 0; e < count; e++) out[conv->params[0].offset + e] = (float)w[e];
        for (size_t c = 0; c < C; c++) {
            double b = conv->nparams > 1 ? params[conv->params[1].offset + c] : 0;
            out[bn->params[1].offset + c] = (float)(b * s[c] + t[c]);
        }
        free(w);
    }
    return CLNET_OK;
}
