/*
 * clnet — a portable OpenCL deep learning engine.
 *
 * One header, opaque handles, every public name starts with clnet_.
 * Every fallible call returns a clnet_status (CLNET_OK is 0) and, on failure,
 * records a message for the calling thread that clnet_last_error() returns.
 * The library never calls exit() or abort().
 *
 * A worked example: list the devices clnet would use and check each one.
 *
 *     #include <clnet.h>
 *     #include <stdio.h>
 *
 *     int main(void) {
 *         clnet_runtime *rt = NULL;
 *         if (clnet_runtime_create(&rt, NULL) != CLNET_OK) {    // NULL: $CLNET_DEVICES or "all"
 *             fprintf(stderr, "clnet: %s\n", clnet_last_error());
 *             return 1;
 *         }
 *         for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
 *             clnet_device_info info;
 *             clnet_runtime_device_info(rt, i, &info);
 *             clnet_status s = clnet_runtime_device_check(rt, i);
 *             printf("%d %s: %s\n", info.index, info.name,
 *                    s == CLNET_OK ? "ok" : clnet_last_error());
 *         }
 *         clnet_runtime_free(rt);
 *         return 0;
 *     }
 *
 * Threads: clnet_version, clnet_status_string and clnet_last_error may be
 * called from any thread at any time; the error message is per thread.
 * clnet_runtime_create/free must not race with other calls on the same
 * runtime. The query functions (device_count, device_info) may be called from
 * several threads at once. Work on one device (device_check, and later the
 * training calls) may run on different threads for different devices at the
 * same time; one device is driven by one thread at a time.
 */
#ifndef CLNET_H
#define CLNET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLNET_VERSION_MAJOR 0
#define CLNET_VERSION_MINOR 1
#define CLNET_VERSION_PATCH 0

/* The library's version as "MAJOR.MINOR.PATCH", e.g. "0.1.0". */
const char *clnet_version(void);

/* Status codes: one list makes both the enum and clnet_status_string(). */
#define CLNET_STATUS_LIST(X)                                                                       \
    X(CLNET_OK, 0, "success")                                                                      \
    X(CLNET_ERR_INVALID_ARGUMENT, 1, "invalid argument (a NULL pointer, a bad size or index)")     \
    X(CLNET_ERR_OUT_OF_MEMORY, 2, "out of host memory")                                            \
    X(CLNET_ERR_NO_PLATFORM, 3, "no OpenCL platform found (no driver installed or registered)")    \
    X(CLNET_ERR_NO_DEVICE, 4, "no OpenCL device matches the device selection")                     \
    X(CLNET_ERR_BAD_DEVICE_SPEC, 5, "the device selection string cannot be understood")            \
    X(CLNET_ERR_OPENCL, 6, "an OpenCL call failed (the message names the call and its code)")      \
    X(CLNET_ERR_BUILD, 7, "a kernel failed to compile (the message carries the build log)")        \
    X(CLNET_ERR_DEVICE_MEMORY, 8, "the device has not enough memory for the request")              \
    X(CLNET_ERR_IO, 9, "a file could not be read or written")                                      \
    X(CLNET_ERR_FORMAT, 10, "a file or input is malformed, truncated or corrupt")                  \
    X(CLNET_ERR_WRONG_RESULT, 11, "a device computed a wrong result")                              \
    X(CLNET_ERR_THREAD, 12, "a host thread could not be started")                                  \
    X(CLNET_ERR_INTERNAL, 13, "internal error (a bug in clnet: please report it)")

typedef enum {
#define CLNET_STATUS_ENUM(name, value, text) name = value,
    CLNET_STATUS_LIST(CLNET_STATUS_ENUM)
#undef CLNET_STATUS_ENUM
} clnet_status;

/* A short constant description of a status ("success", ...); never NULL. */
const char *clnet_status_string(clnet_status s);

/* The message of the calling thread's last failure: what failed, the OpenCL
 * call and its code by name, file:line, and the build log for kernel builds.
 * "" when this thread has seen no failure. Valid until this thread's next call
 * into clnet. */
const char *clnet_last_error(void);

/* Warnings (a skipped platform, a discarded cache entry) go to this handler.
 * The default writes "clnet: warning: ..." to stderr; NULL restores it. The
 * handler may be called from any of the library's threads. */
typedef void (*clnet_log_fn)(const char *message, void *user);
void clnet_set_log_handler(clnet_log_fn fn, void *user);

/* ---- Devices ------------------------------------------------------------- */

typedef struct clnet_runtime clnet_runtime;

/* A device that claims several kinds (the Oclgrind simulator) is OTHER. */
typedef enum {
    CLNET_DEVICE_CPU = 1,
    CLNET_DEVICE_GPU = 2,
    CLNET_DEVICE_ACCELERATOR = 3,
    CLNET_DEVICE_OTHER = 4,
} clnet_device_type;

/* Facts about one selected device. Strings are NUL-terminated (truncated if
 * the driver's answer is longer). */
typedef struct {
    int index; /* the stable number `clnet devices` shows (over all devices) */
    char platform_name[128];
    char platform_vendor[128];
    char platform_version[128];
    char name[128];
    char vendor[128];
    clnet_device_type type;
    unsigned compute_units;
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes; /* largest single buffer */
    uint64_t local_mem_bytes;
    size_t max_work_group_size;
    int host_unified_memory; /* 1: the device shares memory with the host */
    int fp16;                /* 1: cl_khr_fp16 */
    int fp64;                /* 1: double precision */
    char opencl_c_version[64];
    char driver_version[64];
    char device_version[64];
} clnet_device_info;

/* Discovers every OpenCL device of every platform and opens the selected ones
 * (one context and one in-order queue each). Platforms are sorted by name and
 * keep their own device order, so numbering is stable from run to run.
 *
 * device_spec: NULL means $CLNET_DEVICES, or "all" when that is unset.
 *   "all"                every device
 *   "gpu" / "cpu"        devices of that type (not simulators that claim all)
 *   "0,2"                devices by the numbers `clnet devices` shows
 *   "platform=SUBSTR"    devices of platforms whose name contains SUBSTR
 *                        (case-insensitive)
 * A spec that is not understood gives CLNET_ERR_BAD_DEVICE_SPEC, one that
 * matches nothing CLNET_ERR_NO_DEVICE, no platform at all CLNET_ERR_NO_PLATFORM.
 * A platform that fails to enumerate is skipped with a warning. */
clnet_status clnet_runtime_create(clnet_runtime **out, const char *device_spec);

/* Number of selected devices; 0 for NULL. */
int clnet_runtime_device_count(const clnet_runtime *rt);

/* Facts about selected device i (0 <= i < device_count). */
clnet_status clnet_runtime_device_info(const clnet_runtime *rt, int i, clnet_device_info *out);

/* Builds the elementwise kernels on selected device i and runs a small
 * computation whose result is checked on the host. CLNET_OK means the device
 * compiles and runs clnet's kernels correctly. */
clnet_status clnet_runtime_device_check(clnet_runtime *rt, int i);

/* Releases every OpenCL object of the runtime. NULL is harmless. */
void clnet_runtime_free(clnet_runtime *rt);

/* ---- Networks ------------------------------------------------------------
 *
 * A net is a graph of layers over NCHW float32 tensors, built from model-file
 * lines (clnet_net_add) or a whole model file (clnet_net_load). One layer per
 * line, `#` starts a comment, options are key=value:
 *
 *     input channels=1 height=28 width=28        # first line: one sample's shape
 *     conv2d filters=20 size=3 init=normal std=0.01
 *     relu
 *     avgpool size=2 stride=2
 *     flatten
 *     linear units=10 init=xavier name=out
 *     softmax_cross_entropy                      # last line: the loss
 *
 * Kinds and their options (sizes are N or HxW; stride defaults to 1 for
 * conv2d and to the window size for pools; pad to 0):
 *   conv2d filters= size= stride= pad=    maxpool|avgpool size= stride= pad=
 *   linear units=                         relu, sigmoid, tanh, flatten
 *   softmax_cross_entropy (fused, numerically stable; counts correct answers)
 * Every layer may have name= (default: conv1, conv2, pool1, fc1, relu1, ...)
 * and input= (the layer it reads; only the previous layer for now, the place
 * where skip connections will go). Layers with parameters take init= normal
 * (with std=), xavier, kaiming or zeros for the weight, and bias_init= (with
 * bias_std=) for the bias; the defaults are kaiming and zeros. */

typedef struct clnet_net clnet_net;

clnet_status clnet_net_create(clnet_net **out);
/* Adds one model-file line (a comment or blank line adds nothing). */
clnet_status clnet_net_add(clnet_net *net, const char *line);
/* Reads a model file; errors name the file, the line and what was expected. */
clnet_status clnet_net_load(clnet_net **out, const char *path);
void clnet_net_free(clnet_net *net); /* NULL is harmless */

/* Sets every parameter from its layer's init rule with a seeded generator:
 * the same seed gives the same parameters on every machine. */
clnet_status clnet_net_init(clnet_net *net, uint64_t seed);

typedef struct {
    char name[64];
    char kind[32];
    int out_c, out_h, out_w; /* one sample's output */
    size_t params;           /* weights + biases */
} clnet_layer_info;

int clnet_net_layer_count(const clnet_net *net);
clnet_status clnet_net_layer_info(const clnet_net *net, int i, clnet_layer_info *out);
size_t clnet_net_param_count(const clnet_net *net);
int clnet_net_classes(const clnet_net *net); /* the loss layer's input size */

/* ---- Training -------------------------------------------------------------
 *
 * Parameters live on the host (the master copy); each device holds a replica.
 * A training step runs forward and backward on the device, brings the summed
 * gradients to the host, and applies SGD there, once:
 *   g = sum_of_gradients / n + weight_decay * w
 *   v = momentum * v + g;  step = nesterov ? g + momentum * v : v
 *   w = w - lr(t) * step
 * (PyTorch's SGD, with its weight decay, momentum and Nesterov.) */

typedef enum {
    CLNET_SCHEDULE_CONSTANT = 0,
    CLNET_SCHEDULE_STEP = 1,   /* lr * gamma^(floor(t / step_size)) */
    CLNET_SCHEDULE_COSINE = 2, /* lr * (1 + cos(pi * t / total_steps)) / 2 */
} clnet_schedule;

typedef struct {
    float lr;             /* 0.1 */
    float momentum;       /* 0 */
    int nesterov;         /* 0 */
    float weight_decay;   /* 0 */
    clnet_schedule schedule;
    int64_t total_steps;  /* cosine: steps to anneal over */
    int64_t step_size;    /* step: steps between decays */
    float gamma;          /* step: factor, 0.1 */
} clnet_sgd_config;

void clnet_sgd_defaults(clnet_sgd_config *cfg);
clnet_status clnet_net_set_sgd(clnet_net *net, const clnet_sgd_config *cfg);

/* Places a replica on the runtime's device(s) for batches of up to max_batch
 * samples, after checking that parameters, gradients and activations fit the
 * device's memory (the error says how much is needed and how much there is).
 * The net must have been initialised or loaded; rt must outlive the binding. */
clnet_status clnet_net_bind(clnet_net *net, clnet_runtime *rt, int max_batch);

typedef struct {
    double loss;  /* mean cross-entropy over the batch */
    int correct;  /* samples whose most probable class is the label */
    int n;        /* samples */
} clnet_step_result;

/* One SGD step on a batch in host memory: images (n, C, H, W), labels (n). */
clnet_status clnet_net_train_step(clnet_net *net, const float *images, const int32_t *labels,
                                  int n, clnet_step_result *out);
/* Class probabilities (n, classes) for images (n, C, H, W); any n. */
clnet_status clnet_net_predict(clnet_net *net, const float *images, int n, float *probs);
/* Loss and accuracy over a batch without training (any n). */
clnet_status clnet_net_evaluate_batch(clnet_net *net, const float *images, const int32_t *labels,
                                      int n, clnet_step_result *out);

int64_t clnet_net_step(const clnet_net *net);         /* optimizer steps taken */
float clnet_net_learning_rate(const clnet_net *net);  /* for the next step */
/* The host copy of all parameters, in layer order (weight then bias). */
const float *clnet_net_params(const clnet_net *net);

#ifdef __cplusplus
}
#endif

#endif /* CLNET_H */
