/* Device buffers, mapped host staging buffers, and reading device data on the
 * host the cheapest way the device allows. Sizes and offsets of the float
 * helpers are in elements, since layers keep offsets into one buffer. */
#ifndef CLNET_MEMORY_H
#define CLNET_MEMORY_H

#include "device.h"

/* A device buffer of `bytes`. On devices that share host memory it is made
 * with CL_MEM_ALLOC_HOST_PTR so that it can be mapped in place. */
clnet_status clnet_buffer_create(clnet_device *d, size_t bytes, cl_mem *out);

/* clFinish on d's queue, counted (clnet_counters.waits): every wait of the
 * host for a device goes through here or through the blocking calls below. */
cl_int clnet_finish(clnet_device *d);

/* Blocking copies of n floats between host memory and buffer[offset..]. */
clnet_status clnet_buffer_write(clnet_device *d, cl_mem buf, size_t offset, size_t n,
                                const float *src);
clnet_status clnet_buffer_read(clnet_device *d, cl_mem buf, size_t offset, size_t n, float *dst);

/* A write of n floats that the host does not wait for: the queue copies src
 * when it runs it, so src must stay unchanged until the host has waited for
 * a later command of the same queue (a blocking read, clnet_event_wait on a
 * later read, a finish). */
clnet_status clnet_buffer_write_queued(clnet_device *d, cl_mem buf, size_t offset, size_t n,
                                       const float *src);

/* A read of n floats that the host does not wait for: *done completes when
 * dst holds them (NULL when n is 0); dst must stay untouched until then.
 * clnet_event_wait waits for it (counted as a wait) and releases it; on a
 * NULL *done it does nothing. */
clnet_status clnet_buffer_read_start(clnet_device *d, cl_mem buf, size_t offset, size_t n,
                                     float *dst, cl_event *done);
clnet_status clnet_event_wait(clnet_device *d, cl_event *done);

/* Host memory the driver allocates (CL_MEM_ALLOC_HOST_PTR: pinned on discrete
 * GPUs), mapped for the whole life of the object so `data` is always usable
 * on the host and as the host side of transfers. */
typedef struct {
    cl_mem mem;
    float *data;
    size_t bytes;
} clnet_staging;

clnet_status clnet_staging_create(clnet_device *d, size_t bytes, clnet_staging *out);
/* Unmaps and releases s (released even when unmapping fails). */
clnet_status clnet_staging_free(clnet_device *d, clnet_staging *s);

/* Host access to n floats of a device buffer. Where the device shares memory
 * with the host (d->zero_copy), the buffer is mapped in place and nothing is
 * copied; otherwise the floats are read into `staging`, which must hold them.
 * End every view with clnet_host_view_end before the device uses buf again. */
typedef struct {
    const float *data;
    cl_mem mapped; /* the buffer mapped in place, or NULL */
    void *mapped_ptr;
} clnet_host_view;

clnet_status clnet_host_view_begin(clnet_device *d, cl_mem buf, size_t offset, size_t n,
                                   clnet_staging *staging, clnet_host_view *view);
clnet_status clnet_host_view_end(clnet_device *d, clnet_host_view *view);

#endif
