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

#endif
