/* A model: a graph of nodes (layers) with named inputs, kept in topological
 * order, with its shapes, its parameters and its buffers. It knows nothing
 * of devices or training: replicas (replica.c) run it, the trainer
 * (trainer.c, step.c) trains it.
 *
 * Nodes name their inputs (input=A,B; default: the line before), in any
 * order of lines; the model resolves the names, refuses cycles, sorts the
 * nodes (keeping the order of the lines where it can) and infers every
 * shape. Parameters (weights, biases), float buffers (running statistics)
 * and int64 counters each live in one host array, node after node in
 * topological order; the parameter array is the master copy that training
 * updates. */
#ifndef CLNET_MODEL_H
#define CLNET_MODEL_H

#include "fusion.h"
#include "layer.h"

typedef struct {
    int has_input;
    clnet_shape input; /* one sample */
    clnet_node *nodes; /* topological order once resolved */
    int count, cap;
    int resolved; /* every name known, sorted, shapes and layout set */
    size_t nparams, nbuffers, ncounters;
    float *params;             /* NULL until initialised or loaded */
    float *buffers;            /* (nbuffers) */
    int64_t *counters;         /* (ncounters) */
    char source[256];          /* the model file, for messages ("" when built from C) */
    char last[CLNET_NAME_CAP]; /* the node of the last line added: the default input */
    clnet_fusion *fusion;      /* what runs inside what (fusion.h): NULL until finished */
} clnet_model;

void clnet_model_release(clnet_model *m);

/* For messages: the tensor that holds element i of the parameter array (or,
 * with buffers, of the float buffers), as "'conv1.weight' (element 12,
 * lenet.cfg:3)". */
void clnet_model_describe(const clnet_model *m, int buffers, size_t i, char *out, size_t cap);

/* Adds one model-file line (a comment or blank line adds nothing); `line`
 * is its line number for messages (0 from C). Names that are not known yet
 * may be defined by later lines. On failure the model is left as it was. */
clnet_status clnet_model_add(clnet_model *m, const char *text, int line);

/* Resolves the model completely: every input known, no cycle, one loss
 * node last that nothing reads, every other node read by some node. On
 * failure *bad_line is the line of the node at fault (0 when none). */
clnet_status clnet_model_finish(clnet_model *m, int *bad_line);

/* The loss node (the last), or NULL while the model has none. */
const clnet_node *clnet_model_loss(const clnet_model *m);
/* The classes of a classifier: its loss's input size, or its channels for
 * a loss per position; a loss without classes: its input's size. */
int clnet_model_classes(const clnet_model *m);
/* The answers a classifier gives for each sample: 1, or its positions for
 * a loss per position; 0 without classes. */
int clnet_model_positions(const clnet_model *m);
/* The values of the loss's output for each sample (probabilities, or the
 * prediction of a regression). */
size_t clnet_model_outputs(const clnet_model *m);
/* The values of one sample's target from the data, carried as floats
 * (clnet_kind.data_targets): a regression's target when no target= names
 * one, the classes of the positions of a loss per position; else 0. */
size_t clnet_model_target_size(const clnet_model *m);
/* 1 when the loss is over classes (clnet_kind.classifier). */
int clnet_model_is_classifier(const clnet_model *m);

/* The shape of node i's input k: a node's output, or the model's input. */
clnet_shape clnet_model_source_shape(const clnet_model *m, int producer);

/* Allocates the host arrays (if not yet) and fills them from each tensor's
 * init rule with a seeded generator: the same seed gives the same values on
 * every machine. */
clnet_status clnet_model_init(clnet_model *m, uint64_t seed);
/* One training step taken: every int64 counter buffer (batch norm's
 * num_batches_tracked) counts it. */
void clnet_model_count_step(clnet_model *m);
/* Evaluation's parameters, out (nparams floats): m's, with every batch norm
 * that folds into its convolution (m->fusion) folded in from m's parameters
 * and running statistics (clnet_fusion_fold_params). Fails only when out of
 * host memory. */
clnet_status clnet_model_fold(const clnet_model *m, float *out);
/* Allocates zeroed host arrays if there are none yet (before loading). */
clnet_status clnet_model_alloc(clnet_model *m);

#endif
