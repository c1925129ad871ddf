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
    char dir[4096];
} clnet_cache_config;

/* A GEMM's shape (see gemm.h). */
typedef struct {
    int ta, tb; /* 1: op(A) = A^T, op(B) = B^T */
    size_t M, N, K;
    char batch; /* 'M', 'N' or 'K': that dimension is n times a per-sample size; 0: none */
    int n;      /* the samples, when batch is set */
} clnet_gemm_shape;

#define CLNET_GEMM_ID_CAP CLNET_TUNE_CHOICE_CAP
#define CLNET_GEMM_KEPT   4 /* kernels one GEMM candidate runs */
#define CLNET_WORK_REDUCE 4 /* the reductions' slot of clnet_device.work */

/* The candidate a shape runs with, chosen on its first call. */
typedef struct {
    clnet_gemm_shape shape;
    char id[CLNET_GEMM_ID_CAP];
    char source;   /* 'e' $CLNET_GEMM, 'p' pinned, 'd' database, 'f' fixed rule */
    char site[80]; /* the first layer that ran it: "conv2 backward" */
    /* gemm.c's own: the candidate, parsed, and its kernels once looked up */
    _Alignas(8) unsigned char choice[96];
    cl_kernel kept[CLNET_GEMM_KEPT];
    int train; /* 1: run by a training pass (not only by probes or evaluation) */
} clnet_gemm_pick;

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
    cl_mem scratch; /* small buffer for reductions, made on first use */
    /* GEMM (gemm.c): which candidate runs each shape */
    char gemm_force[16];     /* $CLNET_GEMM ("own", "clblast") or "" */
    char tune_device[400];   /* this device in the tuning database */
    char tune_space[20];     /* the fingerprint of its GEMM candidates */
    clnet_tune_table tuned;  /* the database's entries for this device */
    clnet_tune_table pinned; /* a resumed checkpoint's choices */
    clnet_gemm_pick *gemm_picks;
    int gemm_npicks, gemm_cap;
    const char *site_node; /* the layer running now (replica.c), or NULL */
    int site_backward, site_train;
    /* scratch buffers (clnet_device_work): 0, 1 gemm.c (transposed B,
     * split-K partials); 2, 3 gemm_tiled.c (packed A, packed B);
     * CLNET_WORK_REDUCE elementwise.c (row sums' partial sums) */
    cl_mem work[5];
    size_t work_bytes[5];
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
