/* Elementwise vector operations on a device: x[off .. off+n) of a buffer. */
#ifndef CLNET_ELEMENTWISE_H
#define CLNET_ELEMENTWISE_H

#include "device.h"

clnet_status clnet_fill(clnet_device *d, cl_mem x, size_t xoff, size_t n, float value);
clnet_status clnet_scale(clnet_device *d, cl_mem x, size_t xoff, size_t n, float alpha);
/* y += alpha * x */
clnet_status clnet_axpy(clnet_device *d, size_t n, float alpha, cl_mem x, size_t xoff, cl_mem y,
                        size_t yoff);
/* *out = sum of x[xoff .. xoff+n), added in a fixed order (blocking). */
clnet_status clnet_sum(clnet_device *d, cl_mem x, size_t xoff, size_t n, float *out);

/* out[ooff + m] = sum over n of X (M, N)[m, n] (+ beta * out): fixed order. */
clnet_status clnet_row_sums(clnet_device *d, size_t M, size_t N, cl_mem X, size_t xoff, cl_mem out,
                            size_t ooff, float beta);
/* out[ooff + j] = sum over m of X (M, N)[m, j] (+ beta * out). */
clnet_status clnet_col_sums(clnet_device *d, size_t M, size_t N, cl_mem X, size_t xoff, cl_mem out,
                            size_t ooff, float beta);

#endif
