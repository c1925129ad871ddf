/* The private side of a device: its OpenCL objects and its built programs. */
#ifndef CLNET_DEVICE_H
#define CLNET_DEVICE_H

#include "clnet.h"
#include "cl.h"
#include "env.h"
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
 * auto (the rules), im2col, direct, implicit, lanes. */
enum {
    CLNET_CONV_AUTO,
    CLNET_CONV_IM2COL,
    CLNET_CONV_DIRECT,
    CLNET_CONV_IMPLICIT,
    CLNET_CONV_LANES,
    CLNET_CONV_ALGOS
};
extern const char *const clnet_conv_algo_names[CLNET_CONV_ALGOS];

/* A convolution's passes, each of which may run its own algorithm: the
 * forward product, the input gradient and the weight gradient (with the
 * bias's). A transposed convolution's are named for what they compute. */
enum { CLNET_PASS_FORWARD, CLNET_PASS_DX, CLNET_PASS_DW, CLNET_CONV_PASSES };

/* An algorithm for each pass (CLNET_CONV_AUTO: the rules decide it). As
 * text, one name where every pass runs the same ("implicit"), else the
 * three in pass order, '/' between ("implicit/implicit/im2col"). */
typedef struct {
    int pass[CLNET_CONV_PASSES];
} clnet_conv_plan;

#define CLNET_CONV_PLAN_CAP 32 /* the longest text: three names and two '/' */

/* Every pass with algorithm a. */
static inline clnet_conv_plan clnet_conv_plan_all(int a) {
    return (clnet_conv_plan){{a, a, a}};
}
/* Whether the plan names an algorithm for any pass. */
static inline int clnet_conv_plan_named(const clnet_conv_plan *plan) {
    for (int pass = 0; pass < CLNET_CONV_PASSES; pass++)
        if (plan->pass[pass] != CLNET_CONV_AUTO) return 1;
    return 0;
}
/* The plan that text names into *plan; 0 (and *plan unchanged) where a name
 * is unknown or the count is neither one nor three. */
int clnet_conv_plan_parse(const char *text, clnet_conv_plan *plan);
/* The plan as text, in out (CLNET_CONV_PLAN_CAP bytes are enough). */
void clnet_conv_plan_text(const clnet_conv_plan *plan, char *out, size_t cap);

typedef struct clnet_device {
    clnet_device_info info;
    cl_platform_id platform;
    /* The device's number among the devices its platform lists (info.index counts every
     * platform's): what tells two devices of one driver apart in program.c. */
    int platform_index;
    cl_device_id id;
    cl_context context;
    cl_command_queue queue; /* in order */
    /* 1: host reads of device buffers map them in place (the device shares
     * host memory); 0: they are read into a mapped staging buffer. */
    int zero_copy;
    /* A CPU whose compiler maps OpenCL's vector types onto its SIMD units (a
     * preferred float vector width of 4 or more: PoCL), for which the CPU
     * kernels and rules are made: the float vector width of its register
     * tiles, 16 where the driver prefers 16 (AVX-512: one zmm), else 8 (AVX2:
     * one ymm; a float16 there is two registers, and a tile sized for 32 zmm
     * spills). 0 for every other device, CPUs that vectorise across
     * work-items instead included (llvmpipe under Rusticl: width 1; the CPU
     * register tiles took it over 10 minutes to compile). */
    int vector_cpu;
    const clnet_cache_config *cache;
    /* The runtime's snapshot of the environment (env.h), taken when it was
     * made: kernel sources, guards, the profile and start-up report read it. */
    const clnet_env *env;
    pthread_mutex_t lock; /* guards programs */
    clnet_program *programs;
    /* small buffer for clnet_sum, made on first use: the device's own, as
     * its reductions run outside any replica's passes (runtime checks, tests) */
    cl_mem scratch;
    /* GEMM (gemm.c): what the device knows about choosing candidates */
    char gemm_force[16];        /* $CLNET_GEMM ("own", "clblast") or "" */
    clnet_conv_plan conv_force; /* $CLNET_CONV: an algorithm a pass, or CLNET_CONV_AUTO */
    char tune_device[400];      /* this device in the tuning database */
    char tune_space[20];        /* the fingerprint of its GEMM candidates */
    clnet_tune_table tuned;     /* the database's entries for this device */
    clnet_tune_table pinned;    /* a resumed checkpoint's choices */
    unsigned gemm_version;      /* bumped when they change: choices are made again */
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
    clnet_env env; /* read once, at clnet_runtime_create */
};

/* Selected device i, or NULL (with a message) when i is out of range. */
clnet_device *clnet_runtime_device(clnet_runtime *rt, int i);

#endif
