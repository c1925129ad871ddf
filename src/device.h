/* The private side of a device: its OpenCL objects and its built programs. */
#ifndef CLNET_DEVICE_H
#define CLNET_DEVICE_H

#include "clnet.h"
#include "cl.h"
#include "choose.h"
#include "env.h"

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
    /* 1 when the driver runs kernels on the host's CPU (PoCL), whatever
     * info.type says (CLNET_POSE=gpu makes it a GPU): kernels launched without
     * a work-group size get the CPU's fixed ones (clnet_run_kept), so that a
     * posing PoCL compiles no work-group function for every shape. */
    int cpu_driver;
    const clnet_cache_config *cache;
    /* The runtime's snapshot of the environment (env.h), taken when it was
     * made: kernel sources, guards, the profile and start-up report read it. */
    const clnet_env *env;
    pthread_mutex_t lock; /* guards programs */
    clnet_program *programs;
    /* small buffer for clnet_sum, made on first use: the device's own, as
     * its reductions run outside any replica's passes (runtime checks, tests) */
    cl_mem scratch;
    /* What it knows for choosing among candidates (choose.h): its forced
     * choices, its pinned and tuned tables */
    clnet_chooser choice;
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
