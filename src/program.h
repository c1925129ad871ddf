/* Building kernel programs per device, lazily, through the binary cache. */
#ifndef CLNET_PROGRAM_H
#define CLNET_PROGRAM_H

#include "device.h"

/* Builds `source` for device d with `options` (-D defines; -cl-std=CL1.2 is
 * added), loading the binary from the disk cache when a sound entry exists,
 * else from source, then storing it when clnet_program_stores(d). `label`
 * names the source in messages. A compile error gives CLNET_ERR_BUILD with
 * the full build log. */
clnet_status clnet_program_build(clnet_device *d, const char *label, const char *source,
                                 const char *options, cl_program *out);

/* 1 when programs built from source for d go into clnet's disk cache: not
 * with CLNET_CACHE=off, nor on drivers that keep a cache of their own
 * (PoCL, NVIDIA) unless CLNET_CACHE=all. */
int clnet_program_stores(const clnet_device *d);

/* The kernel `name` of kernel family `family` (cl/<family>.cl) built with
 * `options`. Programs and kernels are made on first use and kept by the
 * device; the caller does not release the kernel. One thread at a time may
 * use a device's kernels (clSetKernelArg is not thread-safe per kernel). */
clnet_status clnet_kernel_get(clnet_device *d, const char *family, const char *options,
                              const char *name, cl_kernel *out);

/* Runs a 1-D kernel over n items in work-groups of `local` (0: the driver
 * chooses); the global size is n rounded up, so kernels check their index. */
clnet_status clnet_launch_1d(clnet_device *d, cl_kernel k, size_t n, size_t local);

/* A kernel argument: its size and where its value is (NULL: __local memory
 * of that size). Build them with the macros, which take plain values:
 *   clnet_run(d, KERNEL("pool", "", "avgpool_forward"), 1, (size_t[]){count}, NULL,
 *             ARGS(U32(n), MEM(x), F32(0.5f), LOCAL(256 * sizeof(float))));  */
typedef struct {
    size_t size;
    const void *value;
} clnet_arg;
#define U32(v)       ((clnet_arg){sizeof(cl_uint), &(cl_uint){(cl_uint)(v)}})
#define I32(v)       ((clnet_arg){sizeof(cl_int), &(cl_int){(cl_int)(v)}})
#define F32(v)       ((clnet_arg){sizeof(cl_float), &(cl_float){(cl_float)(v)}})
#define MEM(v)       ((clnet_arg){sizeof(cl_mem), &(cl_mem){(v)}})
#define VEC4(v)      ((clnet_arg){sizeof(v), &(v)}) /* a cl_int4 or cl_uint4 lvalue */
#define LOCAL(bytes) ((clnet_arg){(bytes), NULL})
#define ARGS(...)                                                                                  \
    (clnet_arg[]){__VA_ARGS__}, (int)(sizeof((clnet_arg[]){__VA_ARGS__}) / sizeof(clnet_arg))

/* A kernel: its name, in the program of kernel file `family` (cl/<family>.cl)
 * built with `options`. KERNEL("pool", "", "avgpool_forward") makes one in
 * place. */
typedef struct {
    const char *family, *options, *name;
} clnet_kernel_ref;
#define KERNEL(family, options, name) ((clnet_kernel_ref){(family), (options), (name)})

/* Sets the arguments of kernel `kr` and enqueues it over `global` (dims
 * 1..3), rounded up to `local` when that is given (NULL: the driver
 * chooses). Kernels check their own bounds. */
clnet_status clnet_run(clnet_device *d, clnet_kernel_ref kr, int dims, const size_t *global,
                       const size_t *local, const clnet_arg *args, int nargs);

/* Work-group sizes of whole rows (dimension 0 whole up to 256 work-items,
 * then rows up to about 256 in all) for a CPU device and a range of 2 or 3
 * dimensions, in shape; NULL (the default sizes) otherwise. For kernels
 * built for one layer's sizes (a window op's fixed geometry), where the
 * compiler then knows that no work-item of a row falls outside the range:
 * one fixed 16x4 size for every kernel, these included, made LeNet's step
 * about 12% slower (PoCL 3.1, EPYC VM, batch 256). Other kernels keep the
 * default size, which the driver compiles once for every layer. */
const size_t *clnet_rows_local(const clnet_device *d, int dims, const size_t *global,
                               size_t shape[3]);

/* clnet_run with the kernel kept by the caller: when *kept is NULL the
 * kernel is looked up (built on first use) and stored there; afterwards
 * *kept is used as it is, with no look-up by name. A kept kernel belongs to
 * the device (never release it), and to one family, options and name: the
 * caller keeps one handle per kernel it runs (clnet_pass.kernels for
 * layers), and one thread at a time uses it. Steady-state steps run every
 * kernel this way. */
clnet_status clnet_run_kept(clnet_device *d, cl_kernel *kept, clnet_kernel_ref kr, int dims,
                            const size_t *global, const size_t *local, const clnet_arg *args,
                            int nargs);

/* With CLNET_PROFILE=1 in the environment, kernels are timed one by one
 * (waiting for each) and a table goes to stderr at exit. The environment is
 * read once, so with profiling off a launch takes no lock. begin sets
 * *began to 0 when profiling is off; end then does nothing. */
clnet_status clnet_profile_begin(clnet_device *d, double *began);
clnet_status clnet_profile_end(clnet_device *d, const char *name, double began);

#endif
