/* Layer kinds and the nodes of a model. One file per kind in src/layers/:
 * it parses its own options into its own configuration, infers its output
 * shape and declares its parameters and buffers (setup), and runs its
 * forward and backward passes. CLNET_BUILTIN_KINDS (below) lists the
 * built-in kinds; layer.c holds the registry.
 *
 * A node sees one sample's shapes; passes run over n samples at a time,
 * batch first (NCHW for images), float32. Memory (per replica): all
 * parameters live in one buffer, all their gradients in another with the
 * same layout, all buffers (running statistics) in a third; activations and
 * their gradients live in two arenas planned by liveness (plan.c); every
 * tensor is a buffer plus an offset in floats. Backward passes produce the
 * SUM over the samples of per-sample gradients: only the optimizer divides
 * by the batch. */
#ifndef CLNET_LAYER_H
#define CLNET_LAYER_H

#include "collective.h"
#include "device.h"
#include "gemm.h"
#include "program.h"
#include "shape.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#define CLNET_MAX_INPUTS   8  /* inputs of one node (add, concat) */
#define CLNET_MAX_TENSORS  4  /* parameter or buffer tensors of one node */
#define CLNET_MAX_DIMS     5  /* of a parameter tensor (conv3d weight) */
#define CLNET_NAME_CAP     64 /* node names, with the terminating NUL */
#define CLNET_CONFIG_CAP   256
#define CLNET_MODEL_INPUT  (-1) /* a node input that is the model's input */
#define CLNET_NODE_KERNELS 32   /* kernels one node runs, forward and backward */
#define CLNET_NODE_GEMMS   4    /* GEMM call sites of one node, forward and backward */

typedef enum {
    CLNET_INIT_DEFAULT = 0, /* the kind's own default */
    CLNET_INIT_NORMAL,      /* N(0, std^2) */
    CLNET_INIT_XAVIER,      /* U(-a, a), a = sqrt(6 / (fan_in + fan_out)) */
    CLNET_INIT_KAIMING,     /* N(0, 2 / fan_in) */
    CLNET_INIT_ZEROS,
    CLNET_INIT_CONSTANT, /* every element = value (buffers) */
    /* U(-a, a), a = 1 / sqrt(fan_in): PyTorch's default for conv and linear
     * biases, and for their weights (kaiming_uniform_ with a = sqrt(5)) */
    CLNET_INIT_UNIFORM_FAN_IN,
} clnet_init_kind;

typedef struct {
    clnet_init_kind kind;
    float std;   /* CLNET_INIT_NORMAL */
    float value; /* CLNET_INIT_CONSTANT */
} clnet_init;

typedef enum { CLNET_DTYPE_F32 = 0, CLNET_DTYPE_I64 = 1 } clnet_dtype;

/* A parameter or buffer tensor of a node, saved as "<node>.<suffix>". */
typedef struct {
    char suffix[24];
    int ndim; /* PyTorch's layout (0: a scalar) */
    int64_t shape[CLNET_MAX_DIMS];
    size_t count;
    size_t offset;     /* in the model's parameters, float buffers or counters */
    clnet_dtype dtype; /* buffers: F32 (on devices) or I64 (a host counter) */
    clnet_init init;
    int fan_in, fan_out; /* parameters: for initialisation */
} clnet_tensor;

typedef struct clnet_kind clnet_kind;

/* ---- options: one table per kind, declared in its file ---- */

typedef enum {
    CLNET_OPT_INT,    /* int: a whole number >= min */
    CLNET_OPT_FLOAT,  /* float: a number >= min; with `range`, also <= max (> min with above_min) */
    CLNET_OPT_DIMS,   /* int[axes]: N (every axis) or one value per axis, each >= min */
    CLNET_OPT_LIST,   /* int[3]: 1 to 3 values each >= min, how many at count_at (int) */
    CLNET_OPT_CHOICE, /* int: the value of one of `choices` */
    CLNET_OPT_CUSTOM, /* parse() reads it */
} clnet_option_type;

typedef struct {
    const char *name; /* NULL ends a list */
    int value;
} clnet_choice;

/* on=1 off=0; on=0 off=1 (an option stored as its opposite: bias=off sets
 * no_bias); the initialisation rules of init= and bias_init=. */
extern const clnet_choice clnet_on_off[], clnet_off_on[], clnet_init_choices[];

/* An option's value in a node's configuration, read back through its
 * kind's table (clnet_option_get): what the line gave, else the table's
 * default. */
typedef struct {
    /* INT, CHOICE: ints[0]; DIMS: one per axis; LIST: as given (one value
     * meaning every axis); CUSTOM: what the kind's get() gives */
    int ints[CLNET_MAX_SPATIAL];
    /* the values in ints: 1 (INT, CHOICE), the axes (DIMS), how many the
     * line gave (LIST: 0 when none, and the row's `without` says what the
     * kind does then) */
    int count;
    float number; /* FLOAT */
    /* CHOICE: the name of its value; CUSTOM: a word the kind reads it as
     * (pad=same), or NULL when it holds numbers */
    const char *word;
} clnet_option_value;

typedef struct clnet_option clnet_option;
/* One option of a kind: where its value goes in the kind's configuration,
 * what it takes, its default, and a line of help (`clnet layers` prints
 * them; the model-file parser reads the table). */
struct clnet_option {
    const char *name; /* the key; NULL ends the table */
    clnet_option_type type;
    size_t at; /* offsetof its value in the configuration */
    /* The default, read as if every line gave it before its own options (so
     * what `clnet layers` prints is what a node starts with); NULL: none,
     * and `without` says what happens then ("required", "the size"). */
    const char *value;
    const char *without;
    const char *help;
    double min;                  /* INT, FLOAT, DIMS, LIST: the least value */
    double max;                  /* FLOAT with range: the most */
    int above_min;               /* FLOAT with range: min itself is refused too */
    const char *range;           /* FLOAT: the words for what it takes, when max applies */
    int axes;                    /* DIMS: 1, 2 or 3 */
    size_t count_at;             /* LIST: offsetof the count of values given (int) */
    const clnet_choice *choices; /* CHOICE */
    size_t given_at;             /* CLNET_GIVEN: an int set to 1 when a line gives it (0: none) */
    /* CUSTOM: parses value into config; `expects` says what it takes. */
    clnet_status (*parse)(const clnet_option *o, void *config, const char *value);
    const char *expects;
    /* CUSTOM: what parse() read, back out of config (NULL: not readable by
     * clnet_option_get). */
    void (*get)(const clnet_option *o, const void *config, clnet_option_value *out);
};
#define CLNET_GIVEN(type, field) (1 + offsetof(type, field))

typedef struct clnet_node {
    const clnet_kind *kind;
    char name[CLNET_NAME_CAP];
    int line; /* model-file line (0: added from C), for messages */
    int ninputs;
    char input_names[CLNET_MAX_INPUTS][CLNET_NAME_CAP];
    int inputs[CLNET_MAX_INPUTS]; /* producing nodes, or CLNET_MODEL_INPUT */
    clnet_shape in[CLNET_MAX_INPUTS], out;
    /* set by the kind's setup (offsets by the model) */
    int nparams, nbuffers;
    clnet_tensor params[CLNET_MAX_TENSORS];
    clnet_tensor buffers[CLNET_MAX_TENSORS];
    size_t param_off, param_count; /* the node's span of the parameter array */
    /* the kind's own configuration: CLNET_CONFIG(node, type) */
    union {
        max_align_t align;
        unsigned char bytes[CLNET_CONFIG_CAP];
    } config;
} clnet_node;

#define CLNET_CONFIG(node, type) ((type *)(void *)(node)->config.bytes)

/* What a pass runs in: the same for every node of one pass. */
typedef struct {
    int train;              /* 1: a training pass; 0: evaluation or prediction */
    clnet_device *d;        /* the replica's device */
    clnet_collective *coll; /* across the replicas of this step; NULL outside one */
    int64_t step;           /* the optimizer step this pass belongs to */
    int64_t first_sample;   /* global index (in the step's batch) of sample 0 here */
    int probe;              /* 1: a calibration probe (timed, so its sizes vary from run to run) */
} clnet_ctx;

/* A folded batch norm, as its convolution's evaluation pass sees it: the
 * convolution adds the bias at `bias` in the folded copy of the parameters
 * (where it has none of its own too), then the relu if `relu`. */
typedef struct {
    size_t bias;
    uint32_t relu;
} clnet_fold;

/* A batch norm left to the add that alone reads it (clnet_fusion_normalizes), as
 * a training pass sees it. Forward, on the add: its input `input` is the
 * batch norm's input at x in the activations, normalized with what the
 * batch norm kept (norm) and its weight and bias (at weight in the
 * parameters). Backward, on the batch norm: its output gradient is the add's,
 * at dy in the gradients, passed where the add's output at y is > 0 when
 * the add took in the relu after it (relu). The add's backward computes the
 * batch norm's sums as it passes its output gradient on, into the batch
 * norm's kept memory (clnet_batchnorm_add_backward), and sets `sums`; the
 * batch norm's backward uses them and clears it. The add's passes and the
 * batch norm's share one link. */
typedef struct {
    int input;
    size_t x;
    cl_mem norm;
    size_t weight;
    size_t dy, y;
    uint32_t relu;
    int sums;
} clnet_norm_link;

/* The statistics of a convolution's output, as the convolution wrote them
 * for the batch norm that alone reads it (clnet_fusion_stats_to), in the
 * convolution's kept memory `mem` from `off`: per channel, `records` records
 * of 4 floats (cl/batchnorm.cl's bn_merge), or none (0) where the pass's
 * algorithm does not write them. Training forward passes of both share one:
 * the convolution sets records, the batch norm reads them. */
typedef struct {
    cl_mem mem;
    size_t off;
    uint32_t records;
} clnet_stats_link;

/* An exchange with the other devices that a pass left on its way
 * (clnet_pass.later): what it sends is being read to the host (event), and
 * the device runs other nodes' work queued behind the read until the
 * runner calls the node's kind's finish (replica.c). */
typedef struct {
    int pending;    /* the pass left work for its kind's finish */
    cl_event event; /* the read of what it sends (NULL: none) */
} clnet_later;

/* Which gradients a backward pass makes (clnet_pass.part): all, or for a
 * kind with splits_backward the inputs' alone or the parameters' alone. */
enum { CLNET_PART_ALL = 0, CLNET_PART_DX = 1, CLNET_PART_DW = 2 };

/* What one pass of one node over n samples works on. Offsets are in floats. */
typedef struct {
    const clnet_ctx *ctx;
    clnet_device *d; /* ctx->d */
    int n;
    cl_mem params, grads; /* parameters and their gradients (same layout) */
    cl_mem buffers;       /* float buffers (running statistics) */
    cl_mem act;           /* activations arena */
    size_t x[CLNET_MAX_INPUTS], y;
    cl_mem dact; /* activation gradients arena */
    size_t dx[CLNET_MAX_INPUTS], dy;
    int need_dx[CLNET_MAX_INPUTS]; /* 0: no gradient wanted for input k */
    /* 0: overwrite dx[k]; 1: add to it (another reader of the same tensor
     * wrote it first). Inputs are written in order k = 0, 1, ... */
    float dx_beta[CLNET_MAX_INPUTS];
    float beta;  /* parameter gradients: 0 overwrite, 1 add (later micro-batches) */
    cl_mem keep; /* memory a node keeps from forward to backward */
    size_t keep_off;
    cl_mem work;               /* scratch shared by all nodes */
    size_t keep_cap, work_cap; /* floats planned for keep (after keep_off) and work */
    int backward;              /* 0: a forward pass, 1: a backward pass (for messages) */
    /* The node's kept kernels, CLNET_NODE_KERNELS slots (NULL until first
     * used; the pointer may be NULL: then kernels are looked up each time). */
    cl_kernel *kernels;
    /* The node's GEMM call sites, CLNET_NODE_GEMMS slots, kept by the
     * replica like its kernels (NULL: each call chooses afresh). */
    clnet_gemm_site *gemms;
    void *host; /* host scratch shared by all nodes (kind->host_bytes) */
    /* loss nodes only */
    cl_mem labels;  /* (n) int32 */
    cl_mem targets; /* (n, clnet_model_target_size) float: the data's targets, or NULL */
    cl_mem loss;    /* (n) float: per-sample loss */
    cl_mem correct; /* (n) int32: 1 where the prediction is right */
    int want_grad;  /* also write the gradient of the loss (dx[0]) */
    /* An evaluation pass of a convolution with the batch norm after it
     * folded in (clnet_fusion_fold), else NULL: params is then the replica's
     * folded copy, and y the batch norm's output. */
    const clnet_fold *fold;
    /* A training pass of an add with a batch norm left to it (forward), or
     * of that batch norm (backward), else NULL. */
    clnet_norm_link *norm;
    /* A training forward pass of a convolution that makes the statistics of
     * the batch norm after it, or of that batch norm, else NULL. */
    clnet_stats_link *stats;
    /* Set where the runner can queue other nodes' work while this pass
     * exchanges with the other devices (replica.c): the pass may then stop
     * once the read of what it sends is queued (later->event), setting
     * later->pending, and its kind's finish does the rest. A backward pass
     * given one may run early, before passes that the plan puts ahead of
     * it: it must always leave the rest to finish (set later->pending),
     * its input gradients at least. NULL: the pass does everything now. */
    clnet_later *later;
    int part; /* backward: CLNET_PART_* */
} clnet_pass;

/* What a backward pass reads of the forward's tensors (memory planning). */
/* CLNET_READS_Y_RELU: y, only with the relu after it taken in (clnet_fusion_relu) */
enum { CLNET_READS_X = 1, CLNET_READS_Y = 2, CLNET_READS_Y_RELU = 4 };

struct clnet_kind {
    const char *name; /* the model-file keyword */
    const char *stem; /* default node names stem1, stem2, ... (NULL: name) */
    /* What the kind computes, for `clnet layers` and the model-file
     * reference: shapes taken and made, tensors, PyTorch's counterpart. */
    const char *about;
    /* The options it takes (name= and input= aside), one row each, ended
     * by a row whose name is NULL (NULL: none). */
    const clnet_option *options;
    int min_inputs, max_inputs;
    int is_loss; /* the model's last node */
    /* A loss whose target= names the layer its target comes from ('input':
     * the model's input): that name, from the configuration its options
     * filled (NULL or "": none given), which the parser makes the node's last
     * input (NULL: a kind without target=). */
    const char *(*target)(const void *config);
    /* A loss over classes: its input's values are the classes, the labels
     * index them, and it counts the correct answers (softmax cross-entropy). */
    int classifier;
    /* A loss that reads values of the data's for each sample, on the device
     * as floats (clnet_pass.targets): how many a sample has, 0 for none
     * (NULL: none). The float targets of a regression without target=, or
     * the class of each position of a classifier per position. */
    size_t (*data_targets)(const clnet_node *node);
    /* A classifier that predicts a class at each position: its input's
     * channels are the classes, and this gives their count; the data's
     * targets are the classes of the positions (NULL: one class per sample,
     * every value of the input being one). */
    int (*position_classes)(const clnet_node *node);
    int is_view;        /* the output is input 0 reshaped: same memory, no kernels */
    int backward_reads; /* CLNET_READS_X | CLNET_READS_Y | CLNET_READS_Y_RELU */
    /* Statistics over the batch (batch norm): a replica's share of a step
     * must run in one pass, never as micro-batches. */
    int batch_stats;
    size_t config_size; /* must fit CLNET_CONFIG_CAP */
    /* Fills what no option sets (NULL: zeros); the options' defaults follow. */
    void (*defaults)(void *config);
    /* After all options (NULL: nothing to check). */
    clnet_status (*check)(const void *config);
    /* From node->in[] and the configuration: out, params, buffers. */
    clnet_status (*setup)(clnet_node *node);
    /* Floats kept from forward to backward, and scratch, that a pass over n
     * samples on device d uses (NULL: 0). The contract: a pass over n samples
     * uses at most what these give for n, which the replica checks against
     * the plan before every pass (clnet_pass_uses). Memory is planned with
     * the largest they give for any n from 1 to the replica's batch (plan.c),
     * so they need not grow with n: shares are unequal, change from step to
     * step, and a last batch is partial, and a pass over fewer samples may
     * well use more (a convolution's chunks hold fewer samples when there
     * are more of them to share out evenly). A GEMM's scratch is what d's
     * choice for its shape takes (clnet_gemm_chosen_work_floats): when d's
     * choices change, the replica plans its scratch again before the next
     * pass (clnet_replica_fit_work). */
    size_t (*keep_floats)(const clnet_node *node, const clnet_device *d, int n);
    size_t (*work_floats)(const clnet_node *node, const clnet_device *d, int n);
    /* Host scratch for a pass on a step shared by up to `ranks` replicas (NULL: 0). */
    size_t (*host_bytes)(const clnet_node *node, int ranks);
    clnet_status (*forward)(const clnet_node *node, const clnet_pass *p);
    clnet_status (*backward)(const clnet_node *node, const clnet_pass *p); /* NULL: none */
    /* What a forward or backward pass left for later (clnet_pass.later),
     * with the same pass (NULL: a kind that never leaves anything). */
    clnet_status (*finish)(const clnet_node *node, const clnet_pass *p);
    /* Backward makes the inputs' and the parameters' gradients apart when
     * asked (clnet_pass.part), so that work can run between the two. */
    int splits_backward;
    /* Fusion's hooks (fusion.c decides, once per model). A kind told of a
     * fusion notes in its own configuration what its passes and sizes need.
     * Takes the relu that alone reads this node's output into its own
     * kernels (forward writes max(y, 0), backward passes the gradient where
     * that is > 0); returns 1 if it did (NULL: never). */
    int (*fuse_relu)(clnet_node *node);
    /* A relu: the kind its node becomes when the layer before takes it in
     * (fuse_relu), a view of that layer's output; that kind names itself
     * (NULL: any other kind). */
    const clnet_kind *fused_form;
    /* Folding a batch norm that alone reads this node, for evaluation
     * (NULL: never): multiplies every weight in w (the node's weight tensor,
     * in double) by s[its output channel]. Returns 0 where the node's
     * kernels cannot add a bias and apply a relu (`relu`) in evaluation. */
    int (*fold_scale)(const clnet_node *node, double *w, const double *s, int relu);
    /* A layer whose evaluation is y = x * s + t per channel (batch norm),
     * which may fold into the node it alone reads (fold_scale): s and t of
     * its C channels from the parameters and buffers arrays (NULL: none). */
    void (*eval_affine)(const clnet_node *node, const float *params, const float *buffers,
                        double *s, double *t);
    /* Makes its training forward write the per-channel statistics of its
     * output for the batch norm that alone reads it (clnet_pass.stats), so
     * that the batch norm need not read its input an extra time; returns 1
     * if it will (NULL: never). */
    int (*stats_out)(clnet_node *node);
    /* Its training forward may take its statistics from the node it alone
     * reads (clnet_pass.stats: stats_out's records) (batch norm). */
    int stats_in;
    /* Leaves its training normalization to the add that alone reads it
     * (takes_norm): its forward writes no output, its backward reads the
     * add's output gradient (clnet_pass.norm); returns 1 if it does (NULL:
     * never). */
    int (*leave_norm)(clnet_node *node);
    /* Its training forward may make an input from the input and statistics
     * of a batch norm left to it (leave_norm, clnet_pass.norm) (add). */
    int takes_norm;
    /* The algorithms a tuner chooses between for each pass (convolutions:
     * choose.h's CLNET_CONV_*; NULL: none): writes the node's key in the
     * tuning database to key, the algorithms worth timing on it to algos
     * (at most CLNET_CONV_MOST - 1; returns how many), and the ones device
     * d runs its passes with now to *chosen. */
    int (*algorithms)(const clnet_node *node, const clnet_device *d, char *key, size_t cap,
                      int *algos, clnet_conv_plan *chosen);
};

/* The algorithms device d runs node's passes with now (kind->algorithms)
 * to *plan, its key in the tuning database to key; 0 for a node without a
 * choice. */
static inline int clnet_node_plan(const clnet_node *node, const clnet_device *d, char *key,
                                  size_t cap, clnet_conv_plan *plan) {
    int algos[CLNET_CONV_MOST];
    if (!node->kind->algorithms) return 0;
    node->kind->algorithms(node, d, key, cap, algos, plan);
    return 1;
}

/* The `add` argument of a backward kernel that writes input k's gradient
 * through clnet_store_dx (cl/common.cl): 0 overwrites, 1 adds to what another
 * reader of the input wrote first. */
static inline uint32_t clnet_dx_add(const clnet_pass *p, int k) {
    return p->dx_beta[k] != 0.0f;
}

/* A kernel of this pass's node, kept in slot `slot` of the node's kernels
 * (each call site of a layer file uses its own slot number, the same for
 * every pass): looked up on the first pass, used directly afterwards, so
 * steady-state steps look nothing up (clnet_run_kept). */
clnet_status clnet_pass_run(const clnet_pass *p, int slot, clnet_kernel_ref kr, int dims,
                            const size_t *global, const size_t *local, const clnet_arg *args,
                            int nargs);
/* The slot's handle for helpers that take one (NULL without kept kernels). */
cl_kernel *clnet_pass_kept(const clnet_pass *p, int slot);

/* A GEMM of this pass's node at call site `slot` (each GEMM of a layer file
 * has its own, the same for every pass), with its scratch from `work_off`
 * in p->work: the layer's work_floats counts
 * clnet_gemm_chosen_work_floats(d, s) floats there. The site keeps its choice and kernels (gemm.h).
 */
clnet_status clnet_pass_gemm(const clnet_pass *p, int slot, size_t work_off,
                             const clnet_gemm_shape *s, const clnet_gemm_args *g);

/* States that the pass is about to use `work` floats of p->work and `keep`
 * floats of p->keep (from p->keep_off): CLNET_ERR_GUARD, naming the node, the
 * pass and both sizes, when either is more than was planned. */
clnet_status clnet_pass_uses(const clnet_node *node, const clnet_pass *p, size_t work, size_t keep);

/* A forward pass that runs no kernel (views: flatten, a fused relu). */
clnet_status clnet_no_kernels(const clnet_node *node, const clnet_pass *p);

/* The tables of two common sorts of kind (the fields not named are 0). A
 * view: its output is its one input, reshaped in place; no kernel runs. */
#define CLNET_VIEW_KIND(name_, about_, setup_)                                                     \
    {                                                                                              \
        .name = name_, .about = about_, .min_inputs = 1, .max_inputs = 1, .is_view = 1,            \
        .setup = setup_, .forward = clnet_no_kernels,                                              \
    }
/* Two or more inputs joined into one output (add, concat). */
#define CLNET_JOIN_KIND(name_, about_, setup_, forward_, backward_)                                \
    {                                                                                              \
        .name = name_, .about = about_, .min_inputs = 2, .max_inputs = CLNET_MAX_INPUTS,           \
        .setup = setup_, .forward = forward_, .backward = backward_,                               \
    }

/* The registry (layer.c). */
const clnet_kind *clnet_kind_find(const char *name);
/* Built-in kind i (registry order), or NULL past the last: kinds added
 * with clnet_kind_register are not among them. */
const clnet_kind *clnet_kind_builtin(int i);
/* "conv2d, maxpool, ...": every kind, built-in and registered */
void clnet_kind_list(char *out, size_t cap);
/* Adds a kind at run time (tests of the engine use kinds of their own). */
clnet_status clnet_kind_register(const clnet_kind *kind);

/* The built-in layer kinds, one per file in src/layers/, in the registry's
 * order (`clnet layers` lists them so): adding a kind is one line X(id) here,
 * for its table clnet_<id>_kind, which this declares and layer.c's registry
 * lists. */
// clang-format off
#define CLNET_BUILTIN_KINDS(X)                                                                     \
    X(conv1d)                                                                                      \
    X(conv2d)                                                                                      \
    X(conv3d)                                                                                      \
    X(conv_transpose1d)                                                                            \
    X(conv_transpose2d)                                                                            \
    X(conv_transpose3d)                                                                            \
    X(maxpool)                                                                                     \
    X(avgpool)                                                                                     \
    X(global_avgpool)                                                                              \
    X(batchnorm)                                                                                   \
    X(dropout)                                                                                     \
    X(relu)                                                                                        \
    X(sigmoid)                                                                                     \
    X(tanh)                                                                                        \
    X(leaky_relu)                                                                                  \
    X(elu)                                                                                         \
    X(gelu)                                                                                        \
    X(silu)                                                                                        \
    X(hardswish)                                                                                   \
    X(linear)                                                                                      \
    X(flatten)                                                                                     \
    X(add)                                                                                         \
    X(concat)                                                                                      \
    X(softmax_xent)                                                                                \
    X(mse)                                                                                         \
    X(l1)                                                                                          \
    X(bce_with_logits)                                                                             \
    X(global_maxpool)                                                                              \
    X(reshape)                                                                                     \
    X(upsample)
// clang-format on
#define CLNET_KIND_DECLARE(id) extern const clnet_kind clnet_##id##_kind;
CLNET_BUILTIN_KINDS(CLNET_KIND_DECLARE)
/* An add's pass with a batch norm left to it (p->norm): y (shape) = the
 * activations at `a` + that batch norm's output, made from its input, then
 * max(., 0) with relu (cl/batchnorm.cl's bn_add_forward). */
clnet_status clnet_batchnorm_add(const clnet_pass *p, clnet_shape shape, size_t a, int relu);
/* An add's backward pass with a batch norm left to it (p->norm): that batch
 * norm's sums of g and g * xhat per channel, g the add's output gradient
 * (shape) where its output is > 0 with relu, into the batch norm's kept
 * memory, with its weight and bias gradients; and g as input k's gradient
 * (k < 0: none), as the add's own backward would write it. */
clnet_status clnet_batchnorm_add_backward(const clnet_pass *p, clnet_shape shape, int k, int relu);
/* A relu whose producer took it in (fuse_relu): named "relu", a view. */
extern const clnet_kind clnet_relu_fused_kind;

/* ---- helpers for layer files (layer.c, options.c) ---- */

/* A message for a node that cannot take its input ("layer 'conv1' (conv2d,
 * input 1x28x28): ..."). */
clnet_status clnet_node_fail(const clnet_node *node, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A window op's geometry (convolution, pooling) on three spatial axes
 * (depth, height, width): a signal (C, L) is (C, 1, 1, L), an image (C, H, W)
 * is (C, 1, H, W). `in` is the side the windows read, `out` the windows along
 * each axis. */
typedef struct {
    int c;                      /* channels of the side the windows read */
    int in[3], out[3];          /* sizes */
    int k[3], s[3], p[3], d[3]; /* kernel, stride, padding before, dilation */
} clnet_window;
/* The keys that give a sample's shape (the model's input line, reshape):
 * channels=, depth=, height=, width=, length=. */
extern const char *const clnet_shape_keys[5];
/* The shape their values describe (in that order, 0: not given): a signal
 * (length alone), an image (height and width) or a volume (depth, height and
 * width); c = 0 when they describe none of these. */
clnet_shape clnet_shape_from_sizes(const int v[5]);

/* One option's `rank` values (v) laid out on three axes: on the last `rank`
 * of out, `fill` on the others (a signal's size=5 is 1x1x5). */
void clnet_axes(int rank, const int *v, int fill, int out[3]);
/* The build options of a window op's program: where clnet_window_fixed(w),
 * its whole geometry as the WIN_* constants of cl/common.cl (sizes, window,
 * stride, padding, dilation); else none, and the kernels read it from their
 * clnet_win argument, so small layers share one program. Then `extra` (may
 * be NULL or ""). */
void clnet_window_options(const clnet_window *w, const char *extra, char *out, size_t cap);
/* Whether clnet_window_options fixes w's geometry (layer.c says when). */
int clnet_window_fixed(const clnet_window *w);
/* The work-group size for a window op's kernel over `range` (3 dims):
 * whole rows where its geometry is fixed (clnet_rows_local), else NULL. */
static inline const size_t *clnet_window_local(const clnet_window *w, const clnet_pass *p,
                                               const size_t *range, size_t shape[3]) {
    return clnet_window_fixed(w) ? clnet_rows_local(p->d, 3, range, shape) : NULL;
}
/* A window op's geometry as its kernels' first argument (cl/common.cl's
 * clnet_win, field for field): WIN(w) in ARGS. */
typedef struct {
    cl_uint v[19]; /* c, in[3], k[3], s[3], p[3], d[3], out[3] */
} clnet_win_arg;
clnet_win_arg clnet_window_arg(const clnet_window *w);
#define WIN(w) ((clnet_arg){sizeof(clnet_win_arg), (clnet_win_arg[]){clnet_window_arg(w)}})
/* "3x3" from the first n values. */
void clnet_dims_text(const int *v, int n, char *out, size_t cap);
/* Declares parameter tensor `suffix` of node (count from the shape). */
clnet_tensor *clnet_node_param(clnet_node *node, const char *suffix, int ndim, const int64_t *shape,
                               clnet_init init, int fan_in, int fan_out);
/* Declares a buffer: F32 (sent to devices) or I64 (a host counter). */
clnet_tensor *clnet_node_buffer(clnet_node *node, const char *suffix, clnet_dtype dtype, int ndim,
                                const int64_t *shape, clnet_init init);

/* Option values. Each returns CLNET_ERR_FORMAT with "key=value: expected
 * ..." on bad input. */
/* "3" (every axis) or "3x5" (one value per axis: exactly `axes`); each >= min. */
clnet_status clnet_option_dims(const char *key, const char *value, int axes, int min, int *out);

/* Such a list (CLNET_OPT_LIST) laid out on three axes for the node's input
 * (clnet_axes): one value for every axis, or one per axis; none given (count
 * 0) is `fill`. Fails naming the node when the count does not match the
 * input's rank. */
clnet_status clnet_node_dims(const clnet_node *node, const char *key, const int *v, int count,
                             int fill, int out[3]);

/* ---- option tables (options.c) ---- */

/* The row of `table` (may be NULL) named `key`, or NULL. */
const clnet_option *clnet_option_find(const clnet_option *table, const char *key);
/* Reads a line's key=value into config (and marks it given). */
clnet_status clnet_option_set(const clnet_option *o, void *config, const char *value);
/* Reads every row's default value into config. */
clnet_status clnet_option_defaults(const clnet_option *table, void *config);
/* The value of node's option `key` as its kind's table reads it from the
 * node's configuration (what the line gave, or the default): for the tests'
 * references, which read every option through this and parse nothing.
 * CLNET_ERR_INVALID_ARGUMENT for a key the kind does not take, or a CUSTOM
 * option without get(). */
clnet_status clnet_option_get(const clnet_node *node, const char *key, clnet_option_value *out);
/* "filters size stride": the keys, space separated. */
void clnet_option_names(const clnet_option *table, char *out, size_t cap);
/* What the option takes: "a whole number >= 1", "on or off" (the words of
 * its error messages). */
void clnet_option_expects(const clnet_option *o, char *out, size_t cap);

/* The init= std= bias_init= bias_std= bias= options of layers with a weight
 * and a bias. */
typedef struct {
    clnet_init weight, bias;
    int std_given, bias_std_given, bias_init_given;
    int no_bias; /* bias=off: no bias tensor at all (PyTorch's bias=False) */
} clnet_param_init;
/* Their rows, for a configuration type `cfg` with a clnet_param_init `field`
 * (laid out by hand: clang-format folds a macro of initialisers badly). */
// clang-format off
#define CLNET_PARAM_INIT_OPTIONS(cfg, field)                                                       \
    {.name = "bias", .type = CLNET_OPT_CHOICE, .at = offsetof(cfg, field.no_bias),                 \
     .choices = clnet_off_on, .value = "on",                                                       \
     .help = "off: no bias tensor (PyTorch's bias=False)"},                                        \
    {.name = "init", .type = CLNET_OPT_CHOICE, .at = offsetof(cfg, field.weight.kind),             \
     .choices = clnet_init_choices, .value = "kaiming",                                            \
     .help = "the weight's initialisation (uniform_fan_in: PyTorch's default)"},                   \
    {.name = "std", .type = CLNET_OPT_FLOAT, .at = offsetof(cfg, field.weight.std),                \
     .given_at = CLNET_GIVEN(cfg, field.std_given),                                                \
     .help = "the weight's standard deviation, which init=normal needs"},                          \
    {.name = "bias_init", .type = CLNET_OPT_CHOICE, .at = offsetof(cfg, field.bias.kind),          \
     .choices = clnet_init_choices, .given_at = CLNET_GIVEN(cfg, field.bias_init_given),           \
     .value = "zeros", .help = "the bias's initialisation"},                                       \
    {.name = "bias_std", .type = CLNET_OPT_FLOAT, .at = offsetof(cfg, field.bias.std),             \
     .given_at = CLNET_GIVEN(cfg, field.bias_std_given),                                           \
     .help = "the bias's standard deviation, which bias_init=normal needs"}
// clang-format on
/* init=normal needs std=, bias_init=normal needs bias_std=; bias=off takes
 * neither bias_init= nor bias_std=. */
clnet_status clnet_param_init_check(const clnet_param_init *p);

#endif
