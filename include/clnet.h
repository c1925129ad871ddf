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
 * The header by object, each section opened by what it is for:
 *   Devices            the OpenCL devices of every platform, and MPI ranks
 *   Models and graphs  a net built from model-file lines, its layers, its state
 *   Data               data sets, loaders, .npy files and pictures
 *   Training           the optimizer, binding to devices, steps, splits, async
 *   Checkpoints        saving and loading (safetensors, PyTorch's names)
 *   Tuning             choosing among the implementations of an operation
 *   Errors and diagnostics  messages, warnings, counters, the clock, and the
 *                      environment variables clnet reads (one table)
 *
 * Threads: clnet_version, clnet_status_string and clnet_last_error may be
 * called from any thread at any time; the error message is per thread.
 * clnet_runtime_create/free must not race with other calls on the same
 * runtime. The query functions (device_count, device_info) may be called from
 * several threads at once. Work on one device (device_check, and later the
 * training calls) may run on different threads for different devices at the
 * same time; one device is driven by one thread at a time. A net, and the
 * calls that train or evaluate it, belong to one thread at a time (it runs
 * threads of its own inside, one per device); different nets on different
 * runtimes may be used from different threads. Data sets may be shared by
 * threads for reading; a loader belongs to one thread.
 */
#ifndef CLNET_H
#define CLNET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLNET_VERSION_MAJOR 0
#define CLNET_VERSION_MINOR 3
#define CLNET_VERSION_PATCH 0

/* The most devices one training job uses, over all its ranks (and so the
 * most ranks). */
#define CLNET_MAX_DEVICES 64

/* The library's version as "MAJOR.MINOR.PATCH", e.g. "0.3.0". */
const char *clnet_version(void);

/* Status codes: one list makes both the enum and clnet_status_string()
 * (messages and the other error functions: "Errors and diagnostics"). */
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
    X(CLNET_ERR_INTERNAL, 13, "internal error (a bug in clnet: please report it)")                 \
    X(CLNET_ERR_MPI, 14,                                                                           \
      "MPI failed, timed out, or is missing from this build (the message says)")                   \
    X(CLNET_ERR_GUARD, 15, "a pass used memory past what was planned for it (a bug in a layer)")   \
    X(CLNET_ERR_NONFINITE, 16,                                                                     \
      "a training step's loss, gradient or update was NaN or infinite: nothing of it was applied")

typedef enum {
#define CLNET_STATUS_ENUM(name, value, text) name = value,
    CLNET_STATUS_LIST(CLNET_STATUS_ENUM)
#undef CLNET_STATUS_ENUM
} clnet_status;

/* The objects, opaque handles each made by a create (or load) function and
 * released by its free, where NULL is harmless. */
typedef struct clnet_runtime clnet_runtime;       /* the selected devices */
typedef struct clnet_net clnet_net;               /* a model, its state, its replicas */
typedef struct clnet_dataset clnet_dataset;       /* samples and labels in memory */
typedef struct clnet_loader clnet_loader;         /* batches of a data set */
typedef struct clnet_transforms clnet_transforms; /* a loader's image transforms */

/* ==== Devices =================================================================== */

/* A runtime is the set of OpenCL devices a program selected, over every
 * platform (vendor) installed; everything else runs on the devices of one.
 * An MPI job adds processes, each with its own runtime (below). */

/* A device that claims several kinds (the Oclgrind simulator) is OTHER. */
typedef enum {
    CLNET_DEVICE_CPU = 1,
    CLNET_DEVICE_GPU = 2,
    CLNET_DEVICE_ACCELERATOR = 3,
    CLNET_DEVICE_OTHER = 4,
} clnet_device_type;

/* "cpu", "gpu", "accelerator" or "other". */
const char *clnet_device_type_name(clnet_device_type t);

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
 *   "local-rank"         in an MPI job, rank l of the L ranks on this machine
 *                        takes devices l, l + L, l + 2L, ... (so ranks that
 *                        share a machine share no device); all outside one
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

/* Forces the convolution algorithms on every device of the runtime, as
 * $CLNET_CONV does when the runtime is created: one name for every pass
 * ("im2col", "direct", "implicit", "lanes"), or three, for the forward,
 * input-gradient and weight-gradient passes ("implicit/implicit/im2col");
 * NULL or "auto" gives the choice back to the checkpoint, the tuning database
 * and the rules. A name that is not known gives CLNET_ERR_INVALID_ARGUMENT
 * and changes nothing. Nets bound to the runtime fit their scratch to the
 * new algorithms at their next step; call it between steps, not during one. */
clnet_status clnet_runtime_set_conv(clnet_runtime *rt, const char *plan);

/* Releases every OpenCL object of the runtime. NULL is harmless. */
void clnet_runtime_free(clnet_runtime *rt);

/* ---- Several processes (MPI) ---------------------------------------------
 *
 * One net can train across processes on several machines: start the program
 * with Open MPI's mpirun, call clnet_mpi_init before binding, and every
 * rank drives its own devices while the ranks train one model in lockstep:
 *
 *     int rank = 0, size = 1;
 *     if (clnet_mpi_init(&rank, &size) != CLNET_OK) { ... clnet_last_error() ... }
 *     ... build, bind, train exactly as in one process; rank 0 alone saves ...
 *     clnet_mpi_finalize();
 *
 * While a job has more than one rank, these calls are collective (every
 * rank makes them, in the same order, with the same arguments): binding,
 * clnet_net_set_split, training and evaluation steps, clnet_net_evaluate,
 * clnet_net_predict, clnet_net_logits, clnet_net_load_weights and
 * clnet_net_train_async. clnet_net_tune is for one process (clnet tune
 * refuses under mpirun with several ranks). Each global batch is split
 * across every device of every rank (each device takes a fixed range of the
 * batch's samples, so every rank must be given the same batch), the
 * gradients are summed on each rank's host and then across ranks, and every
 * rank applies the same update. clnet_net_device_count and
 * clnet_net_device_share then count the devices of all ranks. clnet_net_save
 * writes on rank 0 only (the other
 * ranks return CLNET_OK at once); clnet_net_load_weights reads the file on
 * rank 0 only and sends it to the others, so only rank 0 needs it.
 *
 * A rank that fails returns its error like any call; the program should
 * then call clnet_mpi_abort, since the other ranks would otherwise wait for
 * it until the timeout. */

/* Joins the MPI job that started this process (mpirun sets variables that
 * say so: OMPI_COMM_WORLD_SIZE, or PMI_SIZE) and gives this process's rank
 * and the job's size; outside mpirun, or with one rank, it starts nothing
 * and gives 0 and 1. Initialises MPI (MPI_THREAD_SERIALIZED) unless the
 * program already did. CLNET_ERR_MPI when this build has no MPI and the job
 * has more than one rank, or MPI fails to start. */
clnet_status clnet_mpi_init(int *rank, int *size);
/* Leaves the job (MPI_Finalize when clnet_mpi_init started MPI). */
void clnet_mpi_finalize(void);
/* Stops every rank of the job at once (MPI_Abort with code); returns only
 * when there is no job of several ranks. */
void clnet_mpi_abort(int code);
/* This process's rank and the job's size (0 and 1 without a job). */
int clnet_mpi_rank(void);
int clnet_mpi_size(void);
/* 1 when this build has MPI (CMake's CLNET_MPI), else 0. */
int clnet_mpi_available(void);
/* The longest a rank waits for the others in any exchange before it fails
 * with CLNET_ERR_MPI (default 300 seconds). */
void clnet_mpi_set_timeout(double seconds);

/* ==== Models and graphs ========================================================= */

/*
 * A net is a graph of layers (nodes) over float32 tensors laid out batch
 * first, then channels, then 0 to 3 spatial dimensions (NCHW for images).
 * It is built from model-file lines (clnet_net_add) or a whole model file
 * (clnet_net_load). One layer per line, `#` starts a comment, options are
 * key=value:
 *
 *     input channels=1 height=28 width=28        # first line: one sample's shape
 *     conv2d name=stem filters=8 size=3 pad=1
 *     relu name=a
 *     conv2d name=b filters=8 size=3 pad=1       # reads a (the line before)
 *     add name=res input=a,b                     # a residual connection: a + b
 *     avgpool size=2 stride=2
 *     flatten
 *     linear units=10 init=xavier name=out
 *     softmax_cross_entropy                      # the loss: the one layer nobody reads
 *
 * Every layer may have name= (letters, digits, '_', '.', '-'; default conv1,
 * conv2, pool1, fc1, relu1, add1, ... counted per kind) and input= (the
 * layers it reads, comma separated; default: the line before; `input` is the
 * model's input). Lines may come in any order: a name may be defined by a
 * later line, and the net is sorted so that every layer comes after its
 * inputs. A cycle, an unknown name, a layer whose output nobody reads or
 * shapes that do not fit are errors naming the file and the line. The input
 * line takes channels= and height= width= (or length=, or depth= height=
 * width=).
 *
 * The kinds of layers and their options (names, types, defaults, one line
 * of help each): `clnet layers` prints them all, `clnet layers KIND` one.
 * Layers with parameters take init= normal (with std=), xavier, kaiming,
 * zeros or uniform_fan_in (PyTorch's default) for the weight, and
 * bias_init= (bias_std= with normal) for the bias; the defaults are kaiming
 * and zeros. When a tensor is read by several layers, its gradient is the
 * sum of what each sends back. */

clnet_status clnet_net_create(clnet_net **out);
/* Adds one model-file line (a comment or blank line adds nothing). An
 * error leaves the net as it was. */
clnet_status clnet_net_add(clnet_net *net, const char *line);
/* Reads a model file; errors name the file, the line and what was expected. */
clnet_status clnet_net_load(clnet_net **out, const char *path);
void clnet_net_free(clnet_net *net); /* NULL is harmless */

/* Checks that the net is complete (every input known, one loss), then sets
 * every parameter from its layer's init rule with a seeded generator (the
 * same seed gives the same parameters on every machine) and every buffer to
 * its starting value. */
clnet_status clnet_net_init(clnet_net *net, uint64_t seed);

typedef struct {
    char name[64];
    char kind[32];
    int out_c, out_h, out_w; /* one sample's output; h and w are the last two spatial
                                dimensions, 1 where there are fewer */
    int out_rank;            /* 1 + spatial dimensions */
    int out_shape[4];        /* channels, then the spatial dimensions (1 past the rank) */
    size_t params;           /* weights + biases */
    size_t buffers;          /* floats of state that is not trained (running statistics) */
    int inputs;              /* the layers it reads */
    char input_names[8][64]; /* their names ("input": the model's input) */
    /* Multiply-adds of one sample's forward pass in its weights: a convolution's weight
     * count times its output positions (a transposed one's: its input positions), a linear
     * layer's weight count; 0 for every other kind (as torchinfo counts them) */
    size_t macs;
    int is_view; /* its output is its input's memory (flatten, reshape, a fused relu) */
} clnet_layer_info;

/* Layers in the order they run (every layer after its inputs). */
int clnet_net_layer_count(const clnet_net *net);
clnet_status clnet_net_layer_info(const clnet_net *net, int i, clnet_layer_info *out);
size_t clnet_net_param_count(const clnet_net *net);
/* Floats of buffers (state that is saved and sent to devices, not trained). */
size_t clnet_net_buffer_count(const clnet_net *net);
/* The classes a classifier predicts: its loss layer's input size, or its
 * channels for softmax_cross_entropy per=position; the loss layer's input
 * size for a loss without classes. */
int clnet_net_classes(const clnet_net *net);
/* 1 when the loss is over classes (softmax_cross_entropy: labels index its
 * input, and it counts correct answers); 0 for a regression or reconstruction
 * loss (mse, l1, bce_with_logits), whose runs report the loss alone and whose
 * labels are not read, or for NULL. */
int clnet_net_is_classifier(const clnet_net *net);
/* The labels a classifier takes for each sample: 1, or the positions of its
 * input (its spatial size) for softmax_cross_entropy per=position; 0 for a
 * loss without classes, or NULL. */
int clnet_net_positions(const clnet_net *net);
/* The values of the loss layer's output for each sample: what
 * clnet_net_predict writes (probabilities, or a regression's prediction);
 * 0 for NULL. */
size_t clnet_net_outputs(const clnet_net *net);

/* One sample's shape as the model's input line declares it (0s if none);
 * height and width are the last two spatial dimensions (1 where absent). */
void clnet_net_input_shape(const clnet_net *net, int *channels, int *height, int *width);
/* The same as a rank (1 + spatial dimensions; 0 if none) and shape[4]. */
int clnet_net_input_rank(const clnet_net *net, int shape[4]);

/* ---- Layer kinds: the model-file reference (`clnet layers` prints it) ---- */

/* One option a layer kind takes on a model-file line. */
typedef struct {
    char name[32];         /* the key: "filters" */
    char type[96];         /* what it takes: "a whole number >= 1", "on or off" */
    char default_text[64]; /* without it: "1", "on", "required", "the size" ("": nothing) */
    char help[160];        /* one line */
} clnet_layer_option_info;

/* The kinds a model file may name: the built-in ones (then any the
 * library's tests register internally); clnet_layer_kind_name gives NULL
 * past the last. */
int clnet_layer_kind_count(void);
const char *clnet_layer_kind_name(int i);
/* How many options a kind takes, name= and input= (which every kind takes)
 * among them; CLNET_ERR_INVALID_ARGUMENT, naming the kinds, for a kind that
 * does not exist. */
clnet_status clnet_layer_kind_options(const char *kind, int *count);
/* Option i (0 to count - 1) of a kind: name= and input= first, then the
 * kind's own in the order it lists them. */
clnet_status clnet_layer_kind_option(const char *kind, int i, clnet_layer_option_info *out);
/* What a kind computes, in a paragraph (the shapes it takes and makes, its
 * tensors, PyTorch's counterpart), in *about: static text, "" for a kind
 * added at run time without one. */
clnet_status clnet_layer_kind_about(const char *kind, const char **about);

/* A net's state: the optimizer steps it has taken, and the host's copy of
 * its parameters and buffers (what a checkpoint saves). */
int64_t clnet_net_step(const clnet_net *net);        /* optimizer steps taken */
float clnet_net_learning_rate(const clnet_net *net); /* for the next step */
/* The host copy of all parameters, in layer order (weight then bias); its
 * address may change with each training step. */
const float *clnet_net_params(const clnet_net *net);
/* The host copy of all float buffers, in layer order, brought up to date
 * from the first device when bound; NULL before initialisation. */
const float *clnet_net_buffers(clnet_net *net);

/* 1 when the samples of ds fit the net's input: the same shape, or the same
 * without the channel dimension of a one-channel input ((N, 28, 28) for
 * channels=1 height=28 width=28); IDX images fit any input of as many values
 * (Fashion-MNIST as channels=1 length=784); and its labels or targets are
 * what the loss takes (one label a sample, float targets of the loss's input
 * size, or the class of each position for a loss per position; samples
 * without any, for prediction, fit every loss). Else 0, and a sentence in why
 * ("takes 1x28x28 inputs (784 values) but the data set's samples are 3x32x32
 * (3072)") when why is not NULL. */
int clnet_net_accepts(const clnet_net *net, const clnet_dataset *ds, char *why, size_t cap);
/* clnet_net_accepts for the samples as transforms t leave them (NULL: none); transforms that
 * cannot apply to ds's samples are refused with their reason. */
int clnet_net_accepts_with(const clnet_net *net, const clnet_dataset *ds, const clnet_transforms *t,
                           char *why, size_t cap);

/* ==== Data ====================================================================== */

/* A labelled image data set held in memory as the bytes of its files
 * (Fashion-MNIST: 60000 x 784 bytes), and a loader that shuffles, normalises
 * and batches it on a prefetch thread:
 *
 *     clnet_dataset *ds = NULL;
 *     clnet_loader *ld = NULL;
 *     clnet_loader_config cfg = {.batch = 64, .seed = 1, .shuffle = 1, .mean = 0, .std = 1};
 *     if (clnet_dataset_load(&ds, NULL, "train") != CLNET_OK ||
 *         clnet_loader_create(&ld, ds, &cfg) != CLNET_OK) { ... clnet_last_error() ... }
 *     for (int step = 0; step < 1000; step++) {
 *         clnet_batch b;
 *         if (clnet_loader_next(ld, &b) != CLNET_OK) break;
 *         // b.images is (b.n, 1, 28, 28), b.labels is (b.n), from epoch b.epoch
 *     }
 *     clnet_loader_free(ld);
 *     clnet_dataset_free(ds);
 *
 * Threads: a data set may be read by any number of loaders and threads at
 * once; it must outlive them and must not be truncated while they exist. One
 * loader is driven by one thread at a time (its prefetch thread is its own). */

#define CLNET_DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"

/* Reads an IDX image file (magic 0x00000803: unsigned bytes, N x H x W) and an
 * IDX label file (magic 0x00000801: N unsigned bytes), each gzip-compressed or
 * raw (zlib's gzopen/gzread reads both). Images become 1 channel; the classes
 * are 1 + the largest label.
 *
 * Errors name the file and say what is wrong. CLNET_ERR_IO: a file that is
 * missing, unreadable or a folder. CLNET_ERR_FORMAT: a bad magic number; a
 * file truncated (fewer bytes than its header promises, or a gzip stream cut
 * short); a corrupt gzip stream (bad data or checksum); images and labels that
 * disagree in count; absurd dimensions (any of them 0, H or W over 65535, more
 * than 2^31 bytes of images in total, or more samples than an int holds). Bytes after the data the
 * header promises are ignored (zlib also ignores non-gzip bytes after a gzip stream); a gzip stream
 * is still read to its end so that its checksum is verified. */
clnet_status clnet_dataset_load_idx(clnet_dataset **out, const char *images_path,
                                    const char *labels_path);

/* Loads a data set from two NumPy .npy files (format 1, 2 or 3, C order;
 * y_path NULL: samples without labels, for prediction, all labelled 0):
 * x_path holds the samples, shape (N, C, spatial...) or (N, spatial...) with
 * 1 to 3 spatial dimensions, in uint8 (divided by 255, as IDX images are) or
 * float32 (used as they are); the loader then applies its mean and std.
 * y_path holds the labels, shape (N,), of any integer type, each 0 or more;
 * or float32 targets, shape (N, ...) with 1 to 4 dimensions after N, for a
 * model whose loss compares its output with a target of that shape (mse, l1,
 * bce_with_logits without target=); or integers of shape (N, spatial...), the
 * class of each position, for softmax_cross_entropy per=position (held as
 * floats: clnet_dataset_target_classes). With targets the data set is
 * unlabelled (clnet_dataset_labelled 0) and clnet_dataset_targets gives their
 * size.
 * Errors name the file and say what is wrong: CLNET_ERR_IO for a file that
 * cannot be read; CLNET_ERR_FORMAT for a bad magic string, Fortran order, an
 * element type or rank not taken here, a count of labels that differs from
 * the samples', a negative label, a class of a class map below 0 or from
 * 2^24 (naming the sample and the position), or a file shorter than its
 * header says. */
clnet_status clnet_dataset_load_npy(clnet_dataset **out, const char *x_path, const char *y_path);

/* Loads the data set in the folder dir (NULL: $CLNET_DATA_DIR, else
 * CLNET_DEFAULT_DATA_DIR), whichever of three layouts it holds; dir is the
 * folder that holds the files (cifar-10-batches-bin, cifar-100-binary as the
 * official tarballs extract), not its parent.
 * - CIFAR-10's binary version, when dir holds data_batch_1.bin or
 *   test_batch.bin: split "train" reads data_batch_1.bin to data_batch_5.bin
 *   in that order, "test" test_batch.bin; records of 3073 bytes, a label
 *   (0 to 9) then 3 x 32 x 32 pixels (red, green, blue planes, rows in
 *   order). Samples are 3 x 32 x 32 bytes (dims 3, 32, 32), 10 classes.
 * - CIFAR-100's binary version, else, when dir holds train.bin or test.bin:
 *   "train" reads train.bin, "test" test.bin; records of 3074 bytes, a
 *   coarse label (0 to 19, checked, not kept), the fine label (0 to 99: the
 *   label) and the pixels as CIFAR-10's; 100 classes.
 * - Otherwise the MNIST layout: split "train" reads train-images-idx3-ubyte
 *   and train-labels-idx1-ubyte, split "test" reads t10k-images-idx3-ubyte
 *   and t10k-labels-idx1-ubyte, each with ".gz" appended if that file
 *   exists, else without.
 * - An image folder, before the others, when dir/train (split "train") or
 *   dir/test, else dir/val (split "test"), holds folders: torchvision's
 *   ImageFolder layout, read as clnet_dataset_load_with describes.
 * CIFAR's class names come from batches.meta.txt (CIFAR-10) or
 * fine_label_names.txt (CIFAR-100; coarse_label_names.txt is not read), one a
 * line, trailing empty lines ignored (clnet_dataset_class_name); without that
 * file the data set has no names. A missing folder or file is CLNET_ERR_IO
 * with a message that names it (a folder of none of the layouts: the files of
 * all three) and, for the default folder, says `apt-get install
 * dataset-fashion-mnist`. CLNET_ERR_FORMAT, naming the file: a CIFAR file
 * that is empty or not a whole number of records (saying how many whole
 * records and the bytes left over), a label out of range (naming the record,
 * counted from 0 in its file, and the label), a names file with another
 * count of names than the classes or an empty line among them. Another split
 * is CLNET_ERR_INVALID_ARGUMENT. */
clnet_status clnet_dataset_load(clnet_dataset **out, const char *dir, const char *split);

/* clnet_dataset_load reading only the first `limit` images of the split
 * (0, or as many as it holds or more: all of them), for quick runs on a
 * subset: a gzip file is decompressed only that far, so its images past
 * them are neither read nor checked (clnet_dataset_load reads a file to
 * its end and verifies its checksum). The labels are read whole: the
 * classes are those of the whole file, as after clnet_dataset_truncate.
 * CIFAR: the first `limit` records of the split's files in order; every
 * file must still be there and of whole records (their sizes are checked),
 * but the records past the limit are not read, nor their labels checked.
 * CLNET_ERR_INVALID_ARGUMENT for a negative limit. */
clnet_status clnet_dataset_load_first(clnet_dataset **out, const char *dir, const char *split,
                                      long limit);

/* How clnet_dataset_load_with reads a data set (all 0: as clnet_dataset_load). */
typedef struct {
    long limit; /* the first `limit` samples (clnet_dataset_load_first), 0: all */
    /* Image folders: decode every image once while loading and leave out, listed
     * (clnet_dataset_skipped), those that fail and files of formats not decoded; 0: only
     * the headers are read, and the first bad one fails the load (a file damaged after its
     * header fails the batch that decodes it, naming it) */
    int skip_bad_images;
    int threads; /* threads decoding skip_bad_images' check; 0: one a core */
} clnet_dataset_options;

/* clnet_dataset_load with options (NULL: none). Image folders (torchvision's ImageFolder):
 * ROOT/CLASS/IMAGE for ROOT dir/train, or dir/test else dir/val; the classes are the
 * folders, numbered in the sorted (byte) order of their names, as torchvision numbers
 * them, and their names are the class names; the samples are each class's .png, .jpg and
 * .jpeg files (any case) in sorted order, class after class; files of other names are
 * passed by (as torchvision does), hidden ones and nested folders too (torchvision reads
 * nested folders), but a .bmp, .gif, .pgm, .ppm, .tif, .tiff or .webp image fails the
 * load (or is skipped) rather than be lost without a word. Decoding: clnet_image's rules
 * (libpng and libjpeg-turbo, exact against PIL). Only each image's header is read here:
 * the loader decodes the pixels as it needs them, on its threads (clnet_loader_config.
 * threads). Channels: 1 when every image is gray (gray PNG or JPEG, gray + alpha), else 3,
 * a gray image's value then in every channel (torchvision's default loader converts all
 * to RGB, so it always gives 3). Sizes: the first image's; images of other sizes need a
 * loader that resizes them (clnet_transforms' resize). Errors: CLNET_ERR_FORMAT naming
 * the file for an image whose header is bad (not PNG or JPEG, a side of 0 or over 16384,
 * truncated before its size), a class folder with no image, a root with no class
 * folder; CLNET_ERR_IO for a folder that cannot be listed. With a limit, the first
 * images in that order: the first classes alone. */
clnet_status clnet_dataset_load_with(clnet_dataset **out, const char *dir, const char *split,
                                     const clnet_dataset_options *options);

/* Images without labels, for prediction: the one file `path` (PNG or JPEG), or every .png,
 * .jpg and .jpeg file in the folder `path` (not in its folders), in sorted order; channels
 * and sizes by clnet_dataset_load_with's rules for image folders, options as there (limit
 * not read). CLNET_ERR_FORMAT for a bad header or a folder without images, naming it;
 * CLNET_ERR_IO for a path that cannot be read. */
clnet_status clnet_dataset_load_images(clnet_dataset **out, const char *path,
                                       const clnet_dataset_options *options);

/* The images skip_bad_images left out, and "FILE: what is wrong" of the k-th (NULL past
 * them). */
int clnet_dataset_skipped(const clnet_dataset *ds);
const char *clnet_dataset_skipped_reason(const clnet_dataset *ds, int k);

/* Writes the data set as an image folder that clnet_dataset_load_with (and torchvision's
 * ImageFolder) reads back with the same labels: root/CLASS/INDEX.png (format "png",
 * lossless) or .jpg ("jpg", libjpeg's `quality`, 1 to 100), INDEX the sample's position in
 * the data set, zero-padded; CLASS the class names when every class has one that sorts in
 * label order, else the class numbers, zero-padded (00, 01, ...). The samples pass through
 * a loader with `transforms` (NULL: none; the random ones are drawn as in epoch 0) and are
 * rounded to bytes. CLNET_ERR_INVALID_ARGUMENT for samples that are no images of 1 or 3
 * channels, or without labels; CLNET_ERR_IO naming the file or folder. Files there of the
 * same names are replaced. */
clnet_status clnet_dataset_export(const clnet_dataset *ds, const char *root, const char *format,
                                  int quality, const clnet_transforms *transforms);

/* Sample k's image file (image folders), else NULL. */
const char *clnet_dataset_file(const clnet_dataset *ds, int k);

/* Samples; 0 for NULL. */
int clnet_dataset_count(const clnet_dataset *ds);

/* Each sample's shape (1, H, W for IDX files; 3, 32, 32 for CIFAR); any
 * pointer may be NULL; all 0 for a NULL data set. */
void clnet_dataset_shape(const clnet_dataset *ds, int *channels, int *height, int *width);

/* 1 unless the data set was loaded without labels; 0 for NULL. */
int clnet_dataset_labelled(const clnet_dataset *ds);

/* The values of one sample's float target (0: the data set has none, or
 * NULL), and their shape in dims[0..rank) unless dims is NULL (the rest 0). */
int clnet_dataset_targets(const clnet_dataset *ds, int dims[4]);

/* 1 when the targets are the class of each position (an integer y of
 * shape (N, spatial...), for softmax_cross_entropy per=position), held as
 * floats; 0 for float targets, none, or NULL. */
int clnet_dataset_target_classes(const clnet_dataset *ds);

/* Writes float32 data of the given shape (rank 0 to 8) as a NumPy .npy file
 * (version 1.0, little-endian, C order), atomically. */
clnet_status clnet_write_npy(const char *path, const float *data, int rank, const int64_t *shape);

/* A sample's shape as the files give it, in dims[0..rank) (IDX: 1, H, W;
 * CIFAR: 3, 32, 32; .npy: the dimensions after N); returns the rank, 0 for
 * NULL. */
int clnet_dataset_dims(const clnet_dataset *ds, int dims[4]);

/* 1 + the largest label of the files as loaded (truncating does not change
 * it, so a model for a subset fits the whole set); CIFAR-10 and CIFAR-100:
 * 10 and 100, whatever the records loaded hold; 0 for NULL. */
int clnet_dataset_classes(const clnet_dataset *ds);

/* The name of class k (CIFAR's names files: "airplane" for CIFAR-10's 0),
 * owned by the data set; NULL when there are no names or k is out of range. */
const char *clnet_dataset_class_name(const clnet_dataset *ds, int k);

/* Makes each sample its own float target, for a denoising autoencoder (a loss
 * of the data's targets, mse without target=, trained on inputs with noise:
 * clnet_loader_config.noise): a loader's batch.targets then holds each
 * sample's clean values, normalised as the loader normalises its images,
 * (x - mean) / std, before any noise, so they equal the images of a loader
 * without noise. Nothing is copied: the loader reads the samples twice.
 * clnet_dataset_targets then gives a sample's size and shape (its labels, if
 * any, stay). CLNET_ERR_INVALID_ARGUMENT for NULL or a data set that has
 * targets of its own (float targets or class maps from .npy). Not while a
 * loader uses the data set. */
clnet_status clnet_dataset_targets_from_samples(clnet_dataset *ds);

/* Keeps only the first n samples (1 <= n <= count): for quick runs and tests on
 * a subset. Not while a loader uses the data set. */
clnet_status clnet_dataset_truncate(clnet_dataset *ds, int n);

/* Splits ds into two new data sets (ds is left as it is): *held, round(fraction * count)
 * samples drawn at random by `seed` alone (the same split for the same seed and count),
 * and *rest, the others, each part in ds's order; every field is copied (class names,
 * an image folder's files). For a validation split (clnet train --val-split).
 * CLNET_ERR_INVALID_ARGUMENT unless 0 < fraction < 1 leaves a sample on each side. */
clnet_status clnet_dataset_split(const clnet_dataset *ds, double fraction, uint64_t seed,
                                 clnet_dataset **rest, clnet_dataset **held);

/* Frees the data set. NULL is harmless. */
void clnet_dataset_free(clnet_dataset *ds);

/* Image transforms the loader applies to each sample of a data set of images ((C, H, W) or
 * (H, W) samples), in this order, named after torchvision's (every field 0: none):
 *   resize          bilinear to resize_height x resize_width, as
 *                   torch.nn.functional.interpolate(x / 255, mode="bilinear",
 *                   align_corners=False, antialias=False): on the pixels in [0, 1], never
 *                   rounded back to bytes (torchvision's Resize on a uint8 tensor rounds; PIL's
 *                   antialiased resize averages every pixel under a shrunk one, so it differs
 *                   where the image shrinks)
 *   random resized crop  with resized_crop_min > 0 (RandomResizedCrop(size, scale=(min, 1),
 *                   ratio=(3/4, 4/3))): a random window of the image (its area that share of
 *                   the image's, drawn in 10 tries as torchvision draws it, else the central
 *                   window of the nearest allowed ratio) resized straight to the output size,
 *                   in place of the resize and the center crop
 *   center crop     crop_height x crop_width from the middle (top (H - h) / 2 rounded as
 *                   torchvision rounds it)
 *   random crop     pad zeros on every side, then a random window of the size before the pad
 *                   (RandomCrop(size, padding=pad))
 *   flip            mirrored left to right with probability 1/2 (RandomHorizontalFlip)
 * The output's size: the center crop's if given, else the resize's, else the image's. The random
 * draws of a sample are a pure function of (seed, epoch, the sample's index in the data set):
 * the same at any batch size, order, thread count, split and after a seek. Evaluation
 * (clnet_net_evaluate_with) leaves the random ones out: the resize and center crop alone. */
struct clnet_transforms {
    int resize_height, resize_width;
    int crop_height, crop_width;
    float resized_crop_min; /* the window's smallest share of the image's area, (0, 1]; 0: none */
    int pad;                /* 0 to 1024 */
    int flip;               /* 0 or 1 */
    uint64_t seed;
};

#define CLNET_MAX_NORM_CHANNELS 16 /* per-channel normalisation: at most so many channels */

typedef struct {
    int batch;       /* samples per batch, >= 1 */
    uint64_t seed;   /* shuffling seed */
    int shuffle;     /* 1: a new permutation every epoch; 0: file order */
    int drop_last;   /* 1: an epoch ends before a last partial batch */
    float mean, std; /* image = (byte / 255 - mean) / std; 0 and 1 give [0, 1] */
    /* Gaussian noise of standard deviation `noise` (0: none) added to every
     * input value x in [0, 1] (byte / 255, or the .npy float) before the
     * normalisation: image = (x + noise * z - mean) / std, z ~ N(0, 1). Each z
     * is a pure function of (noise_seed, epoch, the sample's index in the data
     * set, the value's index in the sample): the same whatever the batch
     * size, order, seek or split across devices. Targets are never noisy. */
    float noise;
    uint64_t noise_seed;
    /* Per-channel normalisation (transforms.Normalize): with norm_channels > 0 (the data's
     * channel count, at most CLNET_MAX_NORM_CHANNELS) channel c becomes (x - channel_mean[c]) /
     * channel_std[c] and mean and std are not read; 0: mean and std for every channel. */
    int norm_channels;
    float channel_mean[CLNET_MAX_NORM_CHANNELS], channel_std[CLNET_MAX_NORM_CHANNELS];
    clnet_transforms transforms; /* image transforms before the normalisation; all 0: none */
    /* Threads preparing each batch (decoding an image folder's files, transforming), the
     * prefetch thread one of them, 1 to 64; 0: one a core (at most 16) for an image
     * folder, 1 for samples held in memory. A batch is the same at any count. */
    int threads;
} clnet_loader_config;

typedef struct {
    const float *images;   /* (n, C, H, W), valid until the next clnet_loader_next/seek/free */
    const int32_t *labels; /* (n) */
    int n;                 /* samples in this batch (the last batch of an epoch may be short) */
    int epoch;             /* 0-based epoch this batch belongs to */
    int64_t position;      /* index within the epoch's order of the batch's first sample */
    /* (n, clnet_dataset_targets) float targets, or NULL: a data set without */
    const float *targets;
} clnet_batch;

/* A loader over ds (which must outlive it) that starts at epoch 0, position 0
 * and at once starts preparing the first batch on its prefetch thread.
 * Epoch e's order is a pure function of (seed, e): a Fisher-Yates shuffle
 * driven by xoshiro256** seeded from both, or file order without shuffle. So
 * runs with the same data set and configuration give bitwise the same
 * batches. CLNET_ERR_INVALID_ARGUMENT for a NULL pointer, batch < 1, a std of
 * 0 or a mean or std that is not finite (per channel too, and norm_channels other than 0 or
 * the data's channels), a noise below 0 or not finite, transforms that cannot apply (on samples
 * that are not images, a crop larger than its image, ...), or drop_last with a batch larger
 * than the data set (an epoch would have no batch); CLNET_ERR_THREAD when the thread cannot
 * start. */
clnet_status clnet_loader_create(clnet_loader **out, const clnet_dataset *ds,
                                 const clnet_loader_config *cfg);

/* The next batch. Epochs roll over by themselves (batch.epoch says which);
 * never fails at an epoch's end. While the caller works on this batch, the
 * prefetch thread prepares the next one in a second buffer. A failure on that
 * thread is returned here with its message; the loader stays where it was,
 * so the next call tries the same batch again. */
clnet_status clnet_loader_next(clnet_loader *l, clnet_batch *out);

/* Makes the next batch start at sample `position` (0 <= position < count) of
 * epoch `epoch`'s order (epoch >= 0): this is how training resumes exactly
 * where a checkpoint stopped. With drop_last, a position inside the dropped
 * tail of an epoch means the start of the next epoch. Any batch prepared
 * ahead is discarded. */
clnet_status clnet_loader_seek(clnet_loader *l, int epoch, int64_t position);

/* The shape of the samples the loader gives, (channels, height, width) after its transforms
 * (the data set's own without them); any pointer may be NULL; all 0 for NULL. */
void clnet_loader_shape(const clnet_loader *l, int *channels, int *height, int *width);

/* The shape a data set's samples have after transforms t (NULL: none): what a model's input
 * must be to train on them. CLNET_ERR_INVALID_ARGUMENT for transforms that cannot apply to
 * its samples (clnet_loader_create's checks). */
clnet_status clnet_dataset_transformed_shape(const clnet_dataset *ds, const clnet_transforms *t,
                                             int *channels, int *height, int *width);

/* Batches in one epoch: ceil(count / batch), or floor with drop_last; 0 for NULL. */
int clnet_loader_batches_per_epoch(const clnet_loader *l);

/* Stops the prefetch thread and frees the loader (not the data set). NULL is
 * harmless. */
void clnet_loader_free(clnet_loader *l);

/* ---- Pictures -------------------------------------------------------------- */

/* Writes an SVG picture of training curves: loss (left) and accuracy (right,
 * train and test; NaN test values are left out) against epoch, n points. */
clnet_status clnet_write_curves_svg(const char *path, const char *title, const double *epoch,
                                    const double *train_loss, const double *train_accuracy,
                                    const double *test_accuracy, int n);
/* The same for a model without classes: one picture, the train and test loss
 * against epoch (NaN test values are left out). */
clnet_status clnet_write_loss_curves_svg(const char *path, const char *title, const double *epoch,
                                         const double *train_loss, const double *test_loss, int n);

/* The pictures of samples below (clnet predict --picture draws them) are SVG
 * files, written atomically, with each image an embedded PNG at its own
 * resolution, drawn pixelated and as large as an 80x80 box allows, its aspect
 * kept. An image is the first channel in grey, or three channels in colour;
 * NaN and infinities are drawn black. They return CLNET_ERR_INVALID_ARGUMENT,
 * naming what is wrong, for a NULL path or array, n < 1, or a size below 1
 * (or, for images and volumes, above 65535); CLNET_ERR_IO for a file that
 * cannot be written. */

/* The first n images (n, C, H, W), each scaled to its own range (its smallest
 * value black, its largest white), with the predicted class under each, and
 * the true one when labels is not NULL (red where they differ). */
clnet_status clnet_write_predictions_svg(const char *path, const float *images, int channels,
                                         int height, int width, int n, const int *predicted,
                                         const int32_t *labels);
/* Columns of images, a sample a row group: columns[k] holds n images (n, C, H,
 * W), e.g. the inputs, a model's reconstructions and the clean targets;
 * titles (NULL, or ncolumns entries, each may be NULL) head the columns.
 * A sample's images share one grey scale, so that equal values look equal
 * and a reconstruction compares with its input pixel for pixel: [0, 1] (0
 * black, 1 white) when all of the sample's finite values lie in [0, 1], so a
 * faint image stays faint; else their smallest value black and their largest
 * white, so that nothing is clipped (an output that overshoots lowers the
 * contrast of its whole row rather than hide the overshoot). */
clnet_status clnet_write_image_columns_svg(const char *path, const float *const *columns,
                                           const char *const *titles, int ncolumns, int channels,
                                           int height, int width, int n);
/* The arguments of clnet_write_volume_predictions_svg. */
typedef struct {
    const float *volumes;               /* (n, C, D, H, W) */
    int channels, depth, height, width; /* C, D, H, W */
    int n;                              /* the volumes drawn, the first n */
    const int *predicted;               /* (n) the predicted classes */
    const int32_t *labels;              /* (n) the true classes, or NULL */
} clnet_volume_predictions;
/* The first n volumes (n, C, D, H, W), each as its three central slices side
 * by side: axial (depth D/2, H x W), coronal (height H/2, D x W) and sagittal
 * (width W/2, D x H), depth downwards; the three on one scale, the range of
 * their values. The classes under each as clnet_write_predictions_svg puts
 * them. A NULL args is CLNET_ERR_INVALID_ARGUMENT. */
clnet_status clnet_write_volume_predictions_svg(const char *path,
                                                const clnet_volume_predictions *args);
/* The first n signals (n, C, L), each in a 200x80 box: channel k (the first
 * ten) as a line in colour k, all on the range of the sample's values, a grey
 * line at zero when it is in range; a signal longer than twice the box's width
 * keeps each pixel column's smallest and largest value, so no peak is lost.
 * NaN and infinities break the line. The classes under each as
 * clnet_write_predictions_svg puts them. */
clnet_status clnet_write_signal_predictions_svg(const char *path, const float *signals,
                                                int channels, int length, int n,
                                                const int *predicted, const int32_t *labels);
/* The arguments of clnet_write_class_maps_svg. */
typedef struct {
    const float *images;         /* (n, C, H, W) */
    int channels, height, width; /* C, H, W */
    int n;                       /* the images drawn, the first n */
    const int *predicted;        /* (n, H, W) the predicted class of each position */
    const int *truth;            /* (n, H, W) the true classes, or NULL */
    int classes;                 /* every class lies in [0, classes) */
} clnet_class_maps;
/* A classifier of each position (softmax_cross_entropy per=position) on n
 * images (n, C, H, W): each image (its own range), its predicted class map
 * (n, H, W) and, when truth is not NULL, the true one (n, H, W), each class
 * in its own colour (ten colours, then they repeat; a legend under the
 * picture), with "right of all" under each sample. A class outside [0,
 * classes) is CLNET_ERR_INVALID_ARGUMENT, naming the sample and position, as
 * is a NULL args. */
clnet_status clnet_write_class_maps_svg(const char *path, const clnet_class_maps *args);

/* ==== Training ================================================================== */

/*
 * Parameters live on the host (the master copy); each device holds a replica.
 * A training step runs forward and backward on the device, brings the summed
 * gradients to the host, and applies the optimizer there, once, with
 * g = sum_of_gradients / n (summed over every device and MPI rank). With
 * clip_grad_norm > 0 that g is clipped first, as torch.nn.utils.
 * clip_grad_norm_(parameters, clip_grad_norm) clips .grad before
 * optimizer.step():
 *   norm = sqrt(sum of g^2 over every parameter of the model)
 *   g = g * min(1, clip_grad_norm / (norm + 1e-6))
 * Then SGD (PyTorch's SGD, with its weight decay, momentum and Nesterov):
 *   g = g + weight_decay * w
 *   v = momentum * v + g;  step = nesterov ? g + momentum * v : v
 *   w = w - lr(t) * step
 * Adam (torch.optim.Adam; weight decay as L2, added to g) and AdamW
 * (torch.optim.AdamW; decoupled: w = w * (1 - lr(t) * weight_decay) first):
 *   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
 *   w = w - lr(t) / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * with t the 1-based step.
 *
 * The learning rate lr(t), t the 0-based step, as PyTorch's schedulers step
 * once after every optimizer step. A linear warm-up of W = warmup_steps steps
 * goes in front of constant, step and cosine, as
 *   SequentialLR(opt, [LinearLR(opt, start_factor=s, total_iters=W), S],
 *                milestones=[W])
 * does (s = warmup_start_factor, 1/3 by default as LinearLR's): for t < W,
 *   lr(t) = lr * (s + (1 - s) * t / W)
 * and from t = W on, the schedule S with its own clock u = t - W starting at 0.
 * W = 0 is no warm-up: u = t. One-cycle refuses a warm-up: its first phase
 * is one. */

typedef enum {
    CLNET_SCHEDULE_CONSTANT = 0, /* lr (S: none, or ConstantLR(factor=1)) */
    /* lr * gamma^(floor(u / step_size)) (S: StepLR(opt, step_size, gamma)) */
    CLNET_SCHEDULE_STEP = 1,
    /* lr * (1 + cos(pi * u / (total_steps - W))) / 2, 0 from u = total_steps - W on
     * (S: CosineAnnealingLR(opt, T_max=total_steps - W)): total_steps is the run's, warm-up
     * included */
    CLNET_SCHEDULE_COSINE = 2,
    /* torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps, pct_start,
     * anneal_strategy='cos', cycle_momentum, base_momentum, max_momentum, div_factor,
     * final_div_factor, three_phase=False): with P = pct_start * total_steps - 1,
     *   t <= P: cos_anneal(lr / div_factor, lr, t / P)
     *   t > P:  cos_anneal(lr, lr / div_factor / final_div_factor,
     *                      (t - P) / (total_steps - 1 - P))
     * where cos_anneal(a, b, p) = b + (a - b) * (1 + cos(pi * p)) / 2. With
     * cycle_momentum, SGD's momentum (or Adam's and AdamW's beta1) for step t is
     * cos_anneal(max_momentum, base_momentum, t / P) in the first phase and
     * cos_anneal(base_momentum, max_momentum, ...) in the second, in place of
     * momentum (beta1): as PyTorch overwrites the optimizer's, SGD then has momentum
     * even with momentum 0. Where PyTorch divides by zero (a first phase of no
     * length, P = 0) that phase's value is its end value (p = 1); past step
     * total_steps - 1 (where PyTorch raises) the last step's values stay. */
    CLNET_SCHEDULE_ONECYCLE = 3,
} clnet_schedule;

typedef enum {
    CLNET_OPTIMIZER_SGD = 0,
    CLNET_OPTIMIZER_ADAM = 1,
    CLNET_OPTIMIZER_ADAMW = 2,
} clnet_optimizer;

/* The optimizer, its schedule and the gradient's clipping. */
typedef struct {
    float lr;           /* 0.1 (one-cycle: its max_lr) */
    float momentum;     /* SGD: 0 (with Adam or AdamW it must stay 0) */
    int nesterov;       /* SGD: 0 */
    float weight_decay; /* 0, for every optimizer (PyTorch's AdamW uses 0.01: set it) */
    clnet_schedule schedule;
    int64_t total_steps;       /* cosine and one-cycle: the run's steps (warm-up included) */
    int64_t step_size;         /* step: steps between decays */
    float gamma;               /* step: factor, 0.1 */
    clnet_optimizer optimizer; /* SGD */
    float beta1, beta2, eps;   /* Adam, AdamW: 0.9, 0.999, 1e-8 */
    /* linear warm-up in front of constant, step or cosine (above): its steps (0: none)
     * and the factor of lr it starts at, in (0, 1] (1/3, LinearLR's default) */
    int64_t warmup_steps;
    float warmup_start_factor;
    /* one-cycle: 0.3, 25, 1e4; cycle_momentum 1 (PyTorch's True) between base_momentum
     * 0.85 and max_momentum 0.95, each in (0, 1) */
    float pct_start, div_factor, final_div_factor;
    int cycle_momentum;
    float base_momentum, max_momentum;
    /* the largest L2 norm of the whole gradient (0: no clipping; INFINITY: never
     * clips, but clnet_step_result.grad_norm reports the norm) */
    float clip_grad_norm;
} clnet_optimizer_config;

/* The defaults above: SGD at lr 0.1, constant. */
void clnet_optimizer_defaults(clnet_optimizer_config *cfg);
/* Sets the net's optimizer and schedule. */
clnet_status clnet_net_set_optimizer(clnet_net *net, const clnet_optimizer_config *cfg);

/* A factor on the learning rate the schedule gives (1 when the net is made or
 * initialised): every later step uses lr(t) * scale, rounded once to float.
 * What reduce-on-plateau (clnet_plateau below) changes; checkpoints record it
 * ("lr_scale" in the metadata, when not 1) and loading one restores it. A scale
 * that is not finite and > 0 is CLNET_ERR_INVALID_ARGUMENT. */
clnet_status clnet_net_set_lr_scale(clnet_net *net, double scale);
double clnet_net_lr_scale(const clnet_net *net); /* 0 for a NULL net */

/* Deprecated names from when SGD was the only optimizer (removed in 0.4). */
typedef clnet_optimizer_config clnet_sgd_config;
void clnet_sgd_defaults(clnet_optimizer_config *cfg);
clnet_status clnet_net_set_sgd(clnet_net *net, const clnet_optimizer_config *cfg);

/* Places a replica on every device of the runtime for global batches of up to
 * max_batch samples. Each device gets the largest micro-batch (up to
 * max_batch) whose parameters, gradients and activations fit its memory; when
 * not even one sample fits, the error says how much is needed and how much
 * there is. Then measures each device's speed (see below). The net must have
 * been initialised or loaded; rt must outlive the binding. Bind again to
 * change the batch or the devices. */
clnet_status clnet_net_bind(clnet_net *net, clnet_runtime *rt, int max_batch);

/* Several devices. clnet_net_bind places a replica on every device of the
 * runtime. Each step splits the batch into shares in proportion to each
 * device's measured speed (a smoothed estimate, re-balanced as it changes;
 * bind measures it first on small probes bounded in time), runs them
 * concurrently, adds the replicas' gradient sums on the host in a fixed device
 * order and applies the optimizer once: a step on N devices equals a step
 * on one, up to float rounding. A device too slow to earn one sample gets no share. A device
 * whose share does not fit its memory runs it in micro-batches. */
typedef struct {
    int device; /* the number `clnet devices` shows (on its rank's machine) */
    int rank;   /* the MPI rank that drives it (0 without a job of several ranks) */
    char name[128];
    int share;           /* samples in the last training step */
    int micro_batch;     /* the most samples it runs at once */
    double images_per_s; /* smoothed measured speed (0: not measured yet) */
    int64_t samples;     /* training samples it has processed */
    /* dropped after failing (clnet_net_set_on_device_failure): the step it
     * failed in and why; dropped 0: it trains */
    int dropped;
    int64_t dropped_step;
    char dropped_why[256];
} clnet_device_share;

/* Replicas, of every rank of an MPI job; 0 when not bound. */
int clnet_net_device_count(const clnet_net *net);
clnet_status clnet_net_device_share(const clnet_net *net, int i, clnet_device_share *out);
/* Fixes the split to these proportions, one per bound device (0: no share);
 * NULL returns to measured balancing. With a fixed split a run repeats bit for
 * bit (the reduction order is fixed: in an MPI job the ranks' sums are then
 * added in rank order too, at the cost of each rank receiving every rank's
 * gradient). Under MPI the weights are for every device of every rank, in
 * rank order, and rank 0's weights are the ones used. */
/* What a training step does when a device fails in it (an OpenCL error, a
 * lost device, a guard check). CLNET_ON_FAILURE_STOP, the library's
 * default: the step fails naming the device, nothing of it applied.
 * CLNET_ON_FAILURE_CONTINUE: the device is dropped (its queue never waited
 * on again) and the step is done again on the devices left, with the same
 * batch, so no update is lost or applied twice; clnet_net_device_share says
 * which device was dropped, when and why, and a warning says so at once.
 * The step still fails when no device is left, or when the batch does not
 * fit the devices left (batch norm takes a training share in one pass),
 * and in an MPI job, where a failure stops every rank. Asynchronous
 * training (clnet_net_train_async) alike: the batch of a device dropped
 * goes to the next device that pulls, so every update is applied. */
typedef enum { CLNET_ON_FAILURE_STOP = 0, CLNET_ON_FAILURE_CONTINUE = 1 } clnet_on_failure;
clnet_status clnet_net_set_on_device_failure(clnet_net *net, clnet_on_failure policy);

clnet_status clnet_net_set_split(clnet_net *net, const double *weights, int count);
/* Splits that change from step to step and replay exactly: nsplits rows of
 * `count` weights (rows one after the other), each as in clnet_net_set_split;
 * training step s (clnet_net_step) uses row s % nsplits, and evaluation and
 * prediction use the row of the next training step. A split of one row is
 * clnet_net_set_split. */
clnet_status clnet_net_set_splits(clnet_net *net, const double *weights, int count, int nsplits);

/* What a bound net's training steps cost in communication across ranks
 * (all zeros in one process). The gradient of each layer goes into an
 * all-reduce as soon as the rank has its devices' sum of it, while the
 * devices still compute the layers below; CLNET_MPI_OVERLAP=0 in the
 * environment starts them all only after the backward pass instead (to
 * measure what the overlap hides). */
typedef struct {
    int64_t steps;           /* training steps reduced across ranks */
    double bytes_per_step;   /* gradient bytes each rank hands to MPI per step */
    double exposed_seconds;  /* per step: waiting for the reductions after the devices finished */
    double inflight_seconds; /* per step: from the first bucket's start to the last one's end */
} clnet_mpi_stats;
clnet_status clnet_net_mpi_stats(const clnet_net *net, clnet_mpi_stats *out);

typedef struct {
    double loss; /* the mean over the batch of each sample's loss */
    /* the answers whose most probable class is the label: samples, or
     * positions for a loss per position */
    int correct;
    int n;       /* samples */
    int answers; /* what correct counts among: n, or n x positions; 0 without classes */
    /* a training step with clip_grad_norm > 0: the L2 norm of the whole gradient g (over
     * every parameter, devices and ranks, divided by the batch) before clipping; 0
     * otherwise (not computed: it costs a pass over the gradient), and after
     * asynchronous training */
    double grad_norm;
} clnet_step_result;

/* One SGD step on a batch in host memory: images (n, C, H, W), labels (n),
 * or (n, clnet_net_positions) for softmax_cross_entropy per=position.
 * A step whose loss or summed gradient is NaN or infinite, or whose update
 * would make a parameter or the optimizer's state so, is not applied:
 * CLNET_ERR_NONFINITE, naming the step and the first tensor concerned, with
 * the net as it was before the step (parameters, optimizer state and step
 * count, batch norms' running statistics) and *out filled in (its loss may
 * be NaN). The caller may go on with the next batch (the step is skipped:
 * clnet train --skip-nonfinite) or stop. */
clnet_status clnet_net_train_step(clnet_net *net, const float *images, const int32_t *labels, int n,
                                  clnet_step_result *out);
/* The same for a model whose loss compares its output with float targets
 * from the data (mse, l1 or bce_with_logits without target=): targets (n,
 * the loss's input size per sample); or softmax_cross_entropy per=position,
 * whose targets (n, positions) hold the classes as floats, as a data set of
 * class maps gives them. clnet_net_train_step refuses a regression's model,
 * and this call a model of labels. */
clnet_status clnet_net_train_step_targets(clnet_net *net, const float *images, const float *targets,
                                          int n, clnet_step_result *out);
/* The loss layer's outputs (n, clnet_net_outputs) for images (n, C, H, W),
 * any n: class probabilities (per position: over the channels at each), or
 * a regression's prediction. */
clnet_status clnet_net_predict(clnet_net *net, const float *images, int n, float *probs);
/* The logits (n, clnet_net_outputs): what the loss layer reads, before its
 * softmax. */
clnet_status clnet_net_logits(clnet_net *net, const float *images, int n, float *logits);
/* Loss and accuracy over a batch without training (any n), labels as
 * clnet_net_train_step takes them. */
clnet_status clnet_net_evaluate_batch(clnet_net *net, const float *images, const int32_t *labels,
                                      int n, clnet_step_result *out);

/* One training step on the loader's next batch (returned in *batch, for the
 * caller's bookkeeping): clnet_loader_next, then clnet_net_train_step, with
 * one thing more. Once the devices have finished this step's work, the
 * loader's following batch (prepared meanwhile on its prefetch thread) starts
 * its copies to the devices, split as the next step will split it, while the
 * host adds the gradients, updates the parameters and sends them back; the
 * next step then finds its input in place. The results are bitwise those of
 * clnet_loader_next + clnet_net_train_step. When it returns, successful or
 * not, no copy reads the loader's memory any more. */
clnet_status clnet_net_train_loader_step(clnet_net *net, clnet_loader *loader, clnet_batch *batch,
                                         clnet_step_result *out);

/* Asynchronous (parameter-server) training on every bound device: each
 * device repeatedly pulls the current parameters, computes the gradient of its
 * own batch from the loader (batches of the loader's size, taken in turns)
 * and pushes it; the host applies every push at once, so no device waits for
 * the slowest. A push is never applied more than `staleness` updates after the
 * parameters it used were pulled (a device that would break that waits).
 * Returns after `updates` pushes; *out sums their batches. The trade-off: no
 * waiting, but the result is no longer what one device computes, and not the
 * same from run to run. In an MPI job every rank calls it: rank 0 is the
 * server (its loader supplies every batch, and the bound covers every device
 * of every rank), and every rank returns with rank 0's parameters, buffers,
 * optimizer state and *out. */
clnet_status clnet_net_train_async(clnet_net *net, clnet_loader *loader, int updates, int staleness,
                                   clnet_step_result *out);
/* The largest staleness any applied push has had so far (async training). */
int64_t clnet_net_worst_staleness(const clnet_net *net);

/* Checks that every device holds the same model (clnet train
 * --check-replicas): each device's parameters, read back, bit for bit
 * against the host's copy, and its buffers (running statistics) against
 * the first device's; in an MPI job every rank calls it, and each rank's
 * state is compared with rank 0's by checksum. CLNET_ERR_WRONG_RESULT names
 * the device (or rank) and the first tensor that differs. Synchronous
 * training keeps the replicas identical; asynchronous training does not
 * (by design), so a check after it reports a difference. */
clnet_status clnet_net_check_replicas(clnet_net *net);

/* Loss and accuracy of a bound net over a whole data set, in file order, in
 * batches of the bound size; images are scaled as a loader with this mean and
 * std scales them (0 and 1: [0, 1]). */
clnet_status clnet_net_evaluate(clnet_net *net, const clnet_dataset *ds, float mean, float std,
                                clnet_step_result *out);
/* The same with the images prepared as a loader of configuration cfg
 * prepares epoch 0 (its mean, std, noise and noise_seed; its batch, seed,
 * shuffle and drop_last are not used): a denoiser's test loss is its error
 * on noisy inputs against clean targets (clnet_dataset_targets_from_samples). */
clnet_status clnet_net_evaluate_with(clnet_net *net, const clnet_dataset *ds,
                                     const clnet_loader_config *cfg, clnet_step_result *out);

/* Top-k accuracy and the confusion matrix of a classifier over a data set
 * (clnet_net_evaluate_classes). An answer is a sample, or for
 * softmax_cross_entropy per=position one position of a sample. */
typedef struct {
    int k;           /* the k asked for */
    int classes;     /* clnet_net_classes: the confusion matrix is classes x classes */
    int64_t answers; /* answers counted: samples, or samples x positions */
    /* answers whose label is among the k largest logits. The logits in
     * descending order, equal ones in the order of their classes (torch.sort(...,
     * descending=True, stable=True)), their first k: so top-1 counts what the
     * accuracy counts (the first largest logit). torch.topk picks among equal
     * logits in an order of its own, which is the same wherever there are no ties. */
    int64_t top_k;
    int64_t top_1;         /* answers whose first largest logit is the label */
    double top_k_accuracy; /* top_k / answers (0 when no answers) */
} clnet_class_counts;

/* Top-k accuracy and the confusion matrix of a bound classifier over ds,
 * whose images are prepared as clnet_net_evaluate_with prepares them (cfg);
 * the logits are those clnet_net_logits gives, split across the bound
 * devices (and under MPI the ranks) as any evaluation is, every rank getting
 * the same counts. confusion, when not NULL, gets classes x classes counts,
 * row the true class, column the predicted one (the first largest logit, as
 * torch.argmax): confusion[true * classes + predicted]; its entries sum to
 * answers. CLNET_ERR_INVALID_ARGUMENT for NULL net, ds, cfg or out, an unbound
 * net, a model without classes (a regression's loss), or k outside
 * [1, classes]; a label that is not a class as clnet_net_evaluate_with. */
clnet_status clnet_net_evaluate_classes(clnet_net *net, const clnet_dataset *ds,
                                        const clnet_loader_config *cfg, int k,
                                        clnet_class_counts *out, int64_t *confusion);

/* Label smoothing EPS (0 to 1) on every layer of the net that takes it (the
 * softmax_cross_entropy loss, its model-file option label_smoothing=EPS):
 * its target becomes (1 - EPS) onehot + EPS / classes, as PyTorch's
 * cross_entropy(..., label_smoothing=EPS). What clnet train --label-smoothing
 * sets; it holds from the next step or evaluation on. CLNET_ERR_INVALID_ARGUMENT
 * for NULL, EPS outside [0, 1] (or NaN), or a model with no such layer. */
clnet_status clnet_net_set_label_smoothing(clnet_net *net, float eps);
/* ---- Epoch metrics: the best value, early stopping, reduce-on-plateau --------------- */

/*
 * A loop that evaluates each epoch can watch one of its figures (a validation
 * loss, say). clnet_monitor keeps the best value so far and says when the run
 * no longer improves (PyTorch Lightning's EarlyStopping); clnet_plateau lowers
 * the learning rate when the figure stalls (torch.optim.lr_scheduler.
 * ReduceLROnPlateau), its factor applied with clnet_net_set_lr_scale. Both are
 * plain structs, settings then state: set them up with their _defaults
 * function, change the settings, then observe one value an epoch. A
 * checkpoint's progress carries both (clnet_progress.monitor and .plateau), so
 * a resumed run continues them where they stood.
 */
typedef struct {
    /* settings */
    int maximize;     /* 1: higher is better (an accuracy); 0: lower (a loss) */
    double min_delta; /* early stopping: an improvement is a change of more than this (0) */
    int patience;     /* early stopping: stop after this many epochs without one; 0: never */
    /* state */
    int epochs;       /* values observed */
    double last;      /* the last one */
    double best;      /* the best, strictly better than every one before it (NaN: none yet) */
    int best_epoch;   /* its epoch, counting observed values from 1 (0: none yet) */
    double stop_best; /* early stopping's best: moves only by more than min_delta
                         (Lightning's best_score; +-inf before the first) */
    int wait;         /* values since stop_best last moved (Lightning's wait_count) */
} clnet_monitor;

/* Settings for `maximize` (min_delta 0, no early stop) and a fresh state. */
void clnet_monitor_defaults(clnet_monitor *m, int maximize);
/* Observes one epoch's value: *improved (may be NULL) is 1 when it is a new
 * best; *stop (may be NULL) is 1 when early stopping ends the run here, as
 * Lightning's EarlyStopping (check_finite on) decides: the value is not
 * finite, or `patience` values in a row have not beaten stop_best by more
 * than min_delta (value < stop_best - min_delta to minimise, value > stop_best
 * + min_delta to maximise). A negative or non-finite min_delta or a negative
 * patience is CLNET_ERR_INVALID_ARGUMENT, the state left as it was. */
clnet_status clnet_monitor_observe(clnet_monitor *m, double value, int *improved, int *stop);

typedef struct {
    /* settings: ReduceLROnPlateau's, with its defaults */
    int maximize;      /* mode: 1 'max', 0 'min' */
    double factor;     /* 0.1: the learning rate's factor at each reduction, in (0, 1) */
    int patience;      /* 10: bad epochs borne before a reduction */
    double threshold;  /* 1e-4: how much better counts as better */
    int threshold_abs; /* 0: threshold_mode 'rel' (best * (1 -+ threshold)); 1: 'abs' */
    int cooldown;      /* 0: epochs after a reduction in which bad epochs are not counted */
    double min_lr;     /* 0: the learning rate's floor */
    double eps;        /* 1e-8: a reduction smaller than this is not made */
    /* state */
    int epochs;        /* values observed (last_epoch) */
    double best;       /* +-inf before the first (mode_worse) */
    int bad_epochs;    /* num_bad_epochs */
    int cooldown_left; /* cooldown_counter */
    double scale;      /* the product of the reductions made: 1, then factor, ... */
    int reductions;    /* how many were made */
} clnet_plateau;

/* ReduceLROnPlateau's settings for `maximize` and a fresh state (scale 1). */
void clnet_plateau_defaults(clnet_plateau *p, int maximize);
/* One scheduler.step(metric): `lr` is the learning rate in use now (what
 * PyTorch's param_group['lr'] holds: the schedule's times p->scale). A
 * reduction sets lr to max(lr * factor, min_lr) when that lowers it by more
 * than eps, and p->scale with it; *reduced (may be NULL) says whether one was
 * made. Settings out of range (factor not in (0, 1), a negative patience,
 * threshold, cooldown, min_lr or eps) or an lr that is not finite and > 0 are
 * CLNET_ERR_INVALID_ARGUMENT, the state left as it was. */
clnet_status clnet_plateau_observe(clnet_plateau *p, double metric, double lr, int *reduced);

/* ==== Checkpoints =============================================================== */

/*
 * Checkpoints are safetensors files (little endian), so Python reads them.
 * Parameters are named "<layer name>.weight" and "<layer name>.bias", laid
 * out as PyTorch lays them out: conv2d weight (out, in, kh, kw), linear
 * weight (out, in), with flatten in C, H, W order, so they load into the
 * equivalent PyTorch model. Buffers are "<layer name>.<buffer>": float32, or
 * int64 with shape () for counters, as PyTorch stores them. Optimizer state
 * is "optimizer.<optimizer>.<slot>.<tensor name>" (SGD's velocity:
 * "optimizer.sgd.momentum.conv1.weight"). __metadata__ holds the progress
 * below as decimal strings ("step", "epoch", "position", "data_seed",
 * "init_seed", "mean" and "std" when recorded, "noise" and "noise_seed" when
 * the noise is not 0), "format" ("clnet-checkpoint-2"),
 * "clnet_version" and "model" (one line per layer: name, kind, output shape, inputs). Checkpoints
 * of clnet 0.1 ("clnet-checkpoint-1", velocity as "optimizer.momentum.<tensor name>") still load.
 * Saving is atomic: a temporary file, then a rename, so an interrupted save never damages the last
 * checkpoint. */

#define CLNET_RUN_CAP         2048  /* clnet_progress.run's bytes, its ending '\\0' included */
#define CLNET_CLASS_NAMES_CAP 16384 /* clnet_progress.class_names' bytes, '\\0' included */

typedef struct {
    int64_t step;       /* optimizer steps taken */
    int epoch;          /* the epoch of the next batch (0-based) */
    int64_t position;   /* the next batch's first sample in that epoch's order */
    uint64_t data_seed; /* the loader's shuffling seed */
    uint64_t init_seed; /* the seed the parameters were initialised with */
    /* the images' normalisation in training, (x - mean) / std ("mean" and
     * "std" in the metadata); std 0: not recorded */
    float mean, std;
    /* the training inputs' noise (clnet_loader_config.noise and noise_seed;
     * "noise" and "noise_seed" in the metadata); 0: none, or not recorded */
    float noise;
    uint64_t noise_seed;
    /* the settings of the run that wrote it, as its program chose to record
     * them ("run" in the metadata; clnet train: one "key=value" a line, its
     * optimizer, schedule, batch, epochs, normalisation and data); "": none */
    char run[CLNET_RUN_CAP];
    /* the names of the classes the model was trained on, one a line in label order
     * ("class_names" in the metadata; clnet train records its data's, from CIFAR's names
     * files or an image folder's folders); "": none */
    char class_names[CLNET_CLASS_NAMES_CAP];
    /* the loop's watch on its epochs' figure ("monitor" and "plateau" in the metadata, each
     * "key=value" pairs of every field, when epochs > 0); epochs 0: none, or not recorded */
    clnet_monitor monitor;
    clnet_plateau plateau;
} clnet_progress;

/* Writes parameters, buffers, optimizer state and progress (may be NULL: zeros). */
clnet_status clnet_net_save(const clnet_net *net, const char *path, const clnet_progress *progress);
/* Reads a checkpoint into the net (and its bound replicas). Every parameter
 * and buffer tensor must be there with the model's shape, and nothing else may be: a
 * missing, extra or misshapen tensor is CLNET_ERR_FORMAT naming it, and the
 * net is left as it was. progress may be NULL. */
clnet_status clnet_net_load_weights(clnet_net *net, const char *path, clnet_progress *progress);
/* Reads a checkpoint's progress alone (as clnet_net_load_weights gives it),
 * with no net: what a program resuming a run reads before it builds one. A
 * file that is no checkpoint, or whose progress is malformed, is
 * CLNET_ERR_FORMAT (CLNET_ERR_IO when it cannot be read). */
clnet_status clnet_checkpoint_progress(const char *path, clnet_progress *progress);

/* ==== Tuning ==================================================================== */

/*
 * Operations with several implementations (today GEMM: clnet's own kernel
 * over a search space of tile sizes and work-group layouts, and CLBlast) run
 * the candidate the tuning database names for the device, driver, operation,
 * per-sample shape and batch bucket (power of two), or a fixed rule when it
 * names none. The database is tune.db in the kernel cache's folder
 * ($CLNET_CACHE_DIR, else $XDG_CACHE_HOME/clnet or ~/.cache/clnet; see the
 * Environment table); deleting it is safe.
 * Training never times anything itself: the choices of a run come from the
 * database or the rules, and a checkpoint records them ("gemm_choices" in
 * its metadata) for a resume to use again. */

/* One candidate measured on one shape, as clnet_net_tune reports it. */
typedef struct {
    int device;          /* the device's number (`clnet devices`) */
    const char *layer;   /* the first layer that runs it: "conv2 backward" */
    const char *key;     /* the operation and per-sample shape: "gemm NT M=50 N=500 K=676n" */
    int bucket;          /* the samples, rounded up to a power of two (0: none) */
    const char *id;      /* the candidate */
    double us;           /* its time, microseconds (< 0: it failed or computed wrongly) */
    const char *verdict; /* "chosen", "", "wrong result (...)", "failed: ..." */
} clnet_tune_report;

typedef void (*clnet_tune_fn)(const clnet_tune_report *r, void *user);

/* Measures every candidate of every tunable operation the bound net runs,
 * at a step of `batch` samples split over its devices as training splits it:
 * trains two steps on random data first, one that settles the split and
 * one that records the shapes (the parameters change: tune a net made for
 * it), then times each candidate on each shape, checks the
 * candidates' results against each other, stores each shape's fastest
 * correct candidate in the database and uses it from then on. `report`
 * (may be NULL) hears of every measurement. With CLNET_TUNE=off in the
 * environment it refuses (CLNET_ERR_INVALID_ARGUMENT) and times nothing. */
clnet_status clnet_net_tune(clnet_net *net, int batch, clnet_tune_fn report, void *user);

/* ==== Errors and diagnostics ==================================================== */

/* Every fallible call returns a clnet_status and leaves a message for the
 * calling thread; warnings go to a handler; counters let tests prove what a
 * step does not do; the environment variables below change behaviour
 * without a rebuild. */

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

/* Debug counters over the whole process, for tests: a steady-state
 * training step starts no thread, allocates no host or device memory,
 * builds no program and looks no kernel up by name (each node keeps the
 * kernels its first pass found, each GEMM shape those of its candidate). */
typedef struct {
    uint64_t threads;       /* threads started */
    uint64_t host_allocs;   /* host allocations (malloc, calloc, realloc) by clnet */
    uint64_t device_allocs; /* device buffers created */
    uint64_t builds;        /* kernel programs built (from source or a cached binary) */
    uint64_t lookups;       /* kernels looked up by name in a device's tables */
    /* launches of a kernel at a work-group size its device had not run it
     * at before: CPU drivers (PoCL) compile a work-group function for each */
    uint64_t first_launches;
    /* kernels enqueued, every launch counted */
    uint64_t launches;
    /* times the host waited for a device's queue to drain (a finish, a
     * blocking read, write or map): each stops that device's pipeline
     * (CLNET_GUARD=1's own checks are not counted) */
    uint64_t waits;
    /* batch norm exchanges with the other devices during which the device
     * ran other layers' work instead of waiting (CLNET_OVERLAP) */
    uint64_t overlaps;
} clnet_counters;
void clnet_debug_counters(clnet_counters *out);

/* Monotonic seconds since an arbitrary start: the library's one clock, for
 * timing (differences of two calls), never for dates. */
double clnet_seconds(void);

/* ---- Environment ------------------------------------------------------------
 *
 * Every variable clnet reads (the test env_vars, scripts/check_env.py, checks
 * this table against the sources and docs/environment.md):
 *
 *   CLNET_DEVICES=SPEC       the devices when a program passes none
 *                            (clnet_runtime_create; --devices wins)
 *   CLNET_DATA_DIR=DIR       the folder clnet_dataset_load reads when given
 *                            none (default CLNET_DEFAULT_DATA_DIR)
 *   CLNET_CACHE=off|all      off: keeps no built kernels on disk (0 too);
 *                            all: stores PoCL's too, which by default are
 *                            left to PoCL's own cache (clnet warm)
 *   CLNET_CACHE_DIR=DIR      the folder of built kernels and the tuning
 *                            database (default $XDG_CACHE_HOME/clnet, else
 *                            ~/.cache/clnet)
 *   CLNET_KERNEL_DIR=DIR     reads the kernels' .cl files from DIR instead of
 *                            the copies built into the library (kernel work)
 *   CLNET_GEMM=own|clblast   runs every GEMM with that implementation (auto,
 *                            the default: the tuning database or the rules)
 *   CLNET_CONV=ALGO          runs every convolution with one algorithm:
 *                            im2col, direct, implicit, lanes or winograd
 *                            (each runs any convolution), or each pass with its own
 *                            (implicit/implicit/im2col: forward, input
 *                            gradient, weight gradient); auto, the default:
 *                            the checkpoint, the tuning database or the rules
 *   CLNET_CONV_TILE=ID       on GPUs, the implicit algorithm's products (and
 *                            Winograd's) with that local-memory tile
 *                            (m8n8v4l8w16x16: 8 x 8 outputs a work-item as
 *                            float4s, k in steps of 8, 16 x 16 work-items);
 *                            default: the rules
 *   CLNET_TUNE=off           clnet_net_tune refuses and times nothing (0 too)
 *   CLNET_TUNE_COLD_MB=N     tuning times operands over N MiB with cold
 *                            caches (default 4)
 *   CLNET_DEBUG=1            every error message ends in the source file and
 *                            line that failed ([runtime.c:270]), for bug
 *                            reports (0 or unset: the message alone)
 *   CLNET_MICRO_BATCH=N      caps every replica's micro-batch at N samples
 *                            (to exercise micro-batches on big devices)
 *   CLNET_MPI_OVERLAP=0      starts the all-reduces only after the backward
 *                            pass (see clnet_mpi_stats)
 *   CLNET_FUSE=off           runs a relu as its own layer, never inside its
 *                            producer's kernels; never folds a batch norm
 *                            into its convolution for evaluation, nor
 *                            normalizes it in the add that reads it
 *   CLNET_OVERLAP=off        a batch norm's exchange with the other devices
 *                            runs where the layer stands, with nothing
 *                            queued behind it on the device; and a step's
 *                            update runs after its backward pass, not
 *                            layer by layer during it (the same floats)
 *   CLNET_GUARD=1            memory guards: every pass's buffers are padded,
 *                            and a pass that writes past what was planned
 *                            for it fails with CLNET_ERR_GUARD (2-3x slower)
 *   CLNET_PROFILE=1          prints each kernel's calls and time at exit
 *   CLNET_STARTUP=1          prints at exit each program built and each
 *                            kernel's first launch, timed (clnet bench
 *                            MODEL --startup)
 *   CLNET_THROTTLE=I:F[,..]  tests: device I runs F times slower
 *   CLNET_FAULT=I:S[:P]      tests: device I fails once in optimizer step S
 *                            (0-based) at point P: start, kernels, transfer,
 *                            reduce; drift changes its first parameter
 *   CLNET_SAVE_PAUSE=MS      tests: every checkpoint save sleeps MS
 *                            milliseconds half-way through its file
 *   CLNET_POSE=gpu           tests: every device is taken for a discrete
 *                            GPU by the rules and the kernels (no host
 *                            memory shared, no CPU register tiles, at most
 *                            48 KiB of local memory and work-groups of
 *                            1024), so PoCL runs what a GPU would
 *   CLNET_KERNEL_LOG=DIR     appends each kernel's first launch at a
 *                            work-group size (its program, build options,
 *                            name and size) to DIR/kernels.tsv, and each
 *                            program's source to DIR/<program>.cl: the
 *                            offline GPU check's list (scripts/gpu_offline.py) */

#ifdef __cplusplus
}
#endif

#endif /* CLNET_H */
