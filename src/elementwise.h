/* Elementwise vector operations on a device: x[off .. off+n) of a buffer. */
#ifndef CLNET_ELEMENTWISE_H
#define CLNET_ELEMENTWISE_H

#include "device.h"
#include "gemm_shape.h"

clnet_status clnet_fill(clnet_device *d, cl_mem x, size_t xoff, size_t n, float value);
clnet_status clnet_scale(clnet_device *d, cl_mem x, size_t xoff, size_t n, float alpha);
/* y += alpha * x */
clnet_status clnet_axpy(clnet_device *d, size_t n, float alpha, cl_mem x, size_t xoff, cl_mem y,
                        size_t yoff);
/* kept (may be NULL) below: the caller's handle of the kernel (see
 * clnet_run_kept in program.h). */
/* The local size for a reduction kernel of one work-group per row using
 * clnet_group_sum (cl/common.cl): a power of two, at most 256. */
clnet_status clnet_reduction_local(clnet_device *d, cl_kernel *kept, const char *family,
                                   const char *options, const char *name, size_t *out);
/* *out = sum of x[xoff .. xoff+n), added in a fixed order (blocking). */
clnet_status clnet_sum(clnet_device *d, cl_mem x, size_t xoff, size_t n, float *out);

/* A place in a buffer: `off` floats into `mem`. */
typedef struct {
    cl_mem mem;
    size_t off;
} clnet_place;

/* out[m] = sum over n of X (M, N)[m, n] (+ beta * out): an order fixed by
 * M and N. One launch where a row's sum is short or the rows fill the
 * device, else two, the chunks' partial sums in part between them
 * (clnet_row_sums_floats(M, N) floats of the caller's scratch): the same
 * floats either way. kept (may be NULL) has CLNET_ROW_SUMS_KERNELS slots. */
enum { CLNET_ROW_SUMS_KERNELS = 3 };
clnet_status clnet_row_sums(clnet_device *d, cl_kernel *kept, size_t M, size_t N, clnet_place x,
                            clnet_place out, float beta, clnet_place part);
size_t clnet_row_sums_floats(size_t M, size_t N);
/* out[j] = sum over m of X (M, N)[m, j] (+ beta * out). */
clnet_status clnet_col_sums(clnet_device *d, cl_kernel *kept, size_t M, size_t N, clnet_place x,
                            clnet_place out, float beta);

/* Row b < n of src (len floats at src.off + b * src.ld) to dst at
 * dst.off + b * dst.ld, overwriting (beta 0) or added with dst scaled by beta. */
clnet_status clnet_copy_rows(clnet_device *d, cl_kernel *kept, size_t n, size_t len,
                             clnet_matrix src, clnet_matrix dst, float beta);

#endif
