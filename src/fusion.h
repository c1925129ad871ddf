/* Fusion: what runs inside what. One pass over a resolved graph decides
 * every fusion and keeps the record of it, which the model owns
 * (clnet_model.fusion); the plan, the replicas and the model's folding ask
 * it through the functions below, by node index. The layer kinds take part
 * through their table's hooks (layer.h: fuse_relu, fused_form, fold_scale,
 * eval_affine, stats_out, stats_in, leave_norm, takes_norm), which also let
 * a kind note in its own configuration what its passes need to know.
 * CLNET_FUSE=off decides none: every layer runs apart. */
#ifndef CLNET_FUSION_H
#define CLNET_FUSION_H

#include "layer.h"

typedef struct clnet_fusion clnet_fusion;

/* Decides the fusions of `count` nodes (topological order, inputs resolved)
 * into a new record, *out:
 * - a relu that alone reads a layer able to take it in (fuse_relu) runs in
 *   that layer's kernels and becomes a view of its output (fused_form);
 * - a batch norm (eval_affine) that alone reads a convolution (fold_scale)
 *   folds into it for evaluation (clnet_fusion_fold_params);
 * - a batch norm (leave_norm) whose one reader is an add (takes_norm), and
 *   that took in no relu, leaves its training normalization to that add;
 * - a batch norm (stats_in) that alone reads a convolution able to make its
 *   statistics (stats_out), and that took in no relu, takes them from it.
 * The nodes change with it: a relu's kind, and what the hooks note in a
 * node's configuration. Fails only when out of host memory. */
clnet_status clnet_fusion_decide(clnet_fusion **out, clnet_node *nodes, int count);
void clnet_fusion_free(clnet_fusion *f); /* NULL: nothing */

/* Every query takes f NULL (nothing decided) and answers "none" then. */
/* Whether node i runs the relu after it in its own kernels. */
int clnet_fusion_relu(const clnet_fusion *f, int i);
/* On a convolution: the batch norm folded into it for evaluation, or -1. */
int clnet_fusion_fold(const clnet_fusion *f, int i);
/* On a batch norm: the convolution it folds into (it runs nothing in
 * evaluation), or -1. */
int clnet_fusion_fold_into(const clnet_fusion *f, int i);
/* How many batch norms fold into their convolutions. */
int clnet_fusion_folds(const clnet_fusion *f);
/* On an add: the input it makes from a batch norm's input and statistics in
 * training (that batch norm writes no output), or -1. */
int clnet_fusion_normalizes(const clnet_fusion *f, int i);
/* On a batch norm: the add that normalizes it in training (its backward
 * reads the add's output gradient), or -1. */
int clnet_fusion_normalizer(const clnet_fusion *f, int i);
/* On a convolution: the batch norm whose training statistics it writes as
 * it stores its output, or -1. */
int clnet_fusion_stats_to(const clnet_fusion *f, int i);
/* On a batch norm: the convolution whose statistics it takes, or -1. */
int clnet_fusion_stats_of(const clnet_fusion *f, int i);

/* Evaluation's parameters: out holds a copy of params; every convolution's
 * weights and the bias slot of the batch norm folded into it are written
 * over with the folded ones, from params and the running statistics in
 * buffers, in double: the weights scaled per output channel by s (the batch
 * norm's eval_affine, for batch norm: gamma / sqrt(running_var + eps)), the
 * bias (bias - running_mean) * s + beta. Fails only when out of host memory. */
clnet_status clnet_fusion_fold_params(const clnet_fusion *f, const clnet_node *nodes,
                                      const float *params, const float *buffers, float *out);

#endif
