/* Buffers and host staging. */
#include "memory.h"
#include "alloc.h"
#include "error.h"
#include "guard.h"

#include <string.h>

clnet_status clnet_buffer_create(clnet_device *d, size_t bytes, cl_mem *out) {
    clnet_status status = CLNET_OK;
    cl_int err = CL_SUCCESS;
    *out = NULL;
    if (bytes == 0) bytes = sizeof(float); /* OpenCL refuses empty buffers */
    if (d->info.max_alloc_bytes && bytes > d->info.max_alloc_bytes)
        FAIL(CLNET_ERR_DEVICE_MEMORY,
             "a buffer of %zu bytes exceeds device %d (%s)'s largest allocation, %llu bytes", bytes,
             d->info.index, d->info.name, (unsigned long long)d->info.max_alloc_bytes);
    cl_mem_flags flags = CL_MEM_READ_WRITE | (d->zero_copy ? CL_MEM_ALLOC_HOST_PTR : 0);
    int guard = clnet_guard_on(d); /* whole floats, then the guard (guard.h) */
    if (guard)
        bytes = (bytes + sizeof(float) - 1) / sizeof(float) * sizeof(float) +
                CLNET_GUARD_FLOATS * sizeof(float);
    clnet_count_device_alloc();
    *out = clCreateBuffer(d->context, flags, bytes, NULL, &err);
    CL_CHECK(err, "clCreateBuffer");
    if (guard) {
        clnet_guard_region tail;
        TRY(clnet_guard_tail(*out, "", &tail));
        TRY(clnet_guard_fill(d, &tail, 1));
    }
cleanup:
    return status;
}

cl_int clnet_finish(clnet_device *d) {
    clnet_count_wait();
    return clFinish(d->queue);
}

/* A copy of n floats between host memory and buf[offset..]: blocking
 * (counted as a wait), or left to the queue, with *done (when not NULL) its
 * event and the queue flushed so that it is on its way. */
static clnet_status copy(clnet_device *d, int write, int blocking, cl_mem buf, size_t offset,
                         size_t n, void *host, cl_event *done) {
    clnet_status status = CLNET_OK;
    size_t at = offset * sizeof(float), bytes = n * sizeof(float);
    cl_bool wait = blocking ? CL_TRUE : CL_FALSE;
    if (done) *done = NULL;
    if (n == 0) return CLNET_OK;
    if (blocking) clnet_count_wait();
    if (write)
        CL_CHECK(clEnqueueWriteBuffer(d->queue, buf, wait, at, bytes, host, 0, NULL, done),
                 "clEnqueueWriteBuffer");
    else
        CL_CHECK(clEnqueueReadBuffer(d->queue, buf, wait, at, bytes, host, 0, NULL, done),
                 "clEnqueueReadBuffer");
    if (done) CL_CHECK(clFlush(d->queue), "clFlush");
cleanup:
    return status;
}

clnet_status clnet_buffer_write(clnet_device *d, cl_mem buf, size_t offset, size_t n,
                                const float *src) {
    return copy(d, 1, 1, buf, offset, n, (void *)src, NULL); /* only read from */
}

clnet_status clnet_buffer_read(clnet_device *d, cl_mem buf, size_t offset, size_t n, float *dst) {
    return copy(d, 0, 1, buf, offset, n, dst, NULL);
}

clnet_status clnet_buffer_write_queued(clnet_device *d, cl_mem buf, size_t offset, size_t n,
                                       const float *src) {
    return copy(d, 1, 0, buf, offset, n, (void *)src, NULL); /* only read from */
}

clnet_status clnet_buffer_read_start(clnet_device *d, cl_mem buf, size_t offset, size_t n,
                                     float *dst, cl_event *done) {
    return copy(d, 0, 0, buf, offset, n, dst, done);
}

clnet_status clnet_event_wait(clnet_device *d, cl_event *done) {
    clnet_status status = CLNET_OK;
    if (!*done) return CLNET_OK;
    clnet_count_wait();
    CL_CHECK(clFlush(d->queue), "clFlush"); /* what was queued behind it runs meanwhile */
    CL_CHECK(clWaitForEvents(1, done), "clWaitForEvents");
cleanup:
    clReleaseEvent(*done);
    *done = NULL;
    return status;
}

clnet_status clnet_staging_create(clnet_device *d, size_t bytes, clnet_staging *out) {
    clnet_status status = CLNET_OK;
    cl_int err = CL_SUCCESS;
    memset(out, 0, sizeof *out);
    if (bytes == 0) bytes = sizeof(float);
    out->bytes = bytes;
    clnet_count_device_alloc();
    out->mem =
        clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
    CL_CHECK(err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
    out->data = clEnqueueMapBuffer(d->queue, out->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                   bytes, 0, NULL, NULL, &err);
    CL_CHECK(err, "clEnqueueMapBuffer");
cleanup:
    if (status != CLNET_OK) (void)clnet_staging_free(d, out); /* the first failure tells */
    return status;
}

clnet_status clnet_staging_free(clnet_device *d, clnet_staging *s) {
    clnet_status status = CLNET_OK;
    if (s->mem && s->data) {
        CL_CHECK(clEnqueueUnmapMemObject(d->queue, s->mem, s->data, 0, NULL, NULL),
                 "clEnqueueUnmapMemObject");
        CL_CHECK(clnet_finish(d), "clFinish");
    }
cleanup: /* released whatever happened: the buffer is not used again */
    if (s->mem) clReleaseMemObject(s->mem);
    memset(s, 0, sizeof *s);
    return status;
}

clnet_status clnet_host_view_begin(clnet_device *d, cl_mem buf, size_t offset, size_t n,
                                   clnet_staging *staging, clnet_host_view *view) {
    clnet_status status = CLNET_OK;
    cl_int err = CL_SUCCESS;
    memset(view, 0, sizeof *view);
    size_t bytes = n * sizeof(float);
    if (d->zero_copy) {
        clnet_count_wait();
        view->mapped_ptr =
            clEnqueueMapBuffer(d->queue, buf, CL_TRUE, CL_MAP_READ, offset * sizeof(float),
                               bytes ? bytes : 1, 0, NULL, NULL, &err);
        CL_CHECK(err, "clEnqueueMapBuffer");
        view->mapped = buf;
        view->data = view->mapped_ptr;
    } else {
        if (!staging || staging->bytes < bytes)
            FAIL(CLNET_ERR_INVALID_ARGUMENT, "staging buffer of %zu bytes cannot hold %zu bytes",
                 staging ? staging->bytes : 0, bytes);
        TRY(clnet_buffer_read(d, buf, offset, n, staging->data));
        view->data = staging->data;
    }
cleanup:
    return status;
}

clnet_status clnet_host_view_end(clnet_device *d, clnet_host_view *view) {
    clnet_status status = CLNET_OK;
    if (view->mapped) {
        CL_CHECK(clEnqueueUnmapMemObject(d->queue, view->mapped, view->mapped_ptr, 0, NULL, NULL),
                 "clEnqueueUnmapMemObject");
        CL_CHECK(clnet_finish(d), "clFinish");
    }
cleanup:
    memset(view, 0, sizeof *view);
    return status;
}
