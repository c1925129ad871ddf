/* The private side of a device: its OpenCL objects and its built programs. */
#ifndef CLNET_DEVICE_H
#define CLNET_DEVICE_H

#include "clnet.h"
#include "cl.h"
#include "tune.h"

#include <pthread.h>

/* Where built kernel binaries are kept on disk. */
typedef struct {
    int enabled;
    /* CLNET_CACHE=all: store every driver's binaries, PoCL's too (clnet
     * warm; see clnet_program_stores) */
    int store_all;
    char dir[4096];
} clnet_cache_config;

typedef struct clnet_kernel_entry {
    struct clnet_kernel_entry *next;
    char *name;
    cl_kernel kernel;
} clnet_kernel_entry;

/* One program: a kernel family built with one set of options. */
typedef struct clnet_program {
    struct clnet_program *next;
    char *family;
    char *options;
    cl_program program;
    clnet_kernel_entry *kernels;
} clnet_program;

/* The convolution algorithms (src/layers/conv.c), by name in $CLNET_CONV:
 * auto (the rules), im2col, direct, implicit. */
enum {
    CLNET_CONV_AUTO,
    CLNET_CONV_IM2COL,
    CLNET_CONV_DIRECT,
    CLNET_CONV_IMPLICIT,
    CLNET_CONV_ALGOS
};
extern const char *const clnet_conv_algo_names[CLNET_CONV_ALGOS];

typedef struct clnet_device {
    clnet_device_info info;
    cl_platform_id platform;
    cl_device_id id;
    cl_context context;
    cl_command_queue queue; /* in order */
    /* 1: host reads of device buffers map them in place (the device shares
     * host memory); 0: they are read into a mapped staging buffer. */
    int zero_copy;
    const clnet_cache_config *cache;
    pthread_mutex_t lock; /* guards programs */
    clnet_program *programs;
    /* small buffer for clnet_sum, made on first use: the device's own, as
     * its reductions run outside any replica's passes (runtime checks, tests) */
    cl_mem scratch;
    /* GEMM (gemm.c): what the device knows about choosing candidates */
    char gemm_force[16];     /* $CLNET_GEMM ("own", "clblast") or "" */
    int conv_force;          /* $CLNET_CONV: a CLNET_CONV_* algorithm, or CLNET_CONV_AUTO */
    char tune_device[400];   /* this device in the tuning database */
    char tune_space[20];     /* the fingerprint of its GEMM candidates */
    clnet_tune_table tuned;  /* the database's entries for this device */
    clnet_tune_table pinned; /* a resumed checkpoint's choices */
    unsigned gemm_version;   /* bumped when they change: choices are made again */
    /* The (kernel, work-group size) pairs launched so far, an open-addressing
     * table (clnet_run_kept): a new pair is a first launch, which a CPU
     * driver compiles for. Grows only when a new pair comes. */
    struct clnet_launched *launched;
    size_t launched_cap, launched_count;
    unsigned cache_hits;   /* programs loaded from the binary cache */
    unsigned cache_stores; /* programs built from source and stored */
} clnet_device;

struct clnet_runtime {
    int count;
    clnet_device *devices;
    clnet_cache_config cache;
};

/* Selected device i, or NULL (with a message) when i is out of range. */
clnet_device *clnet_runtime_device(clnet_runtime *rt, int i);

#endif
