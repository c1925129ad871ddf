/* Matrix multiply on a device, row-major, BLAS conventions:
 * C = alpha * op(A) op(B) + beta * C, op(X) = X or X^T; M x N result, K inner.
 * A, B, C are buffers with offsets and leading dimensions in elements.
 *
 * Two backends, chosen per device (d->gemm): CLBlast, or clnet's own kernel
 * (cl/gemm.cl). Untuned CLBlast reaches only a few GFLOP/s on PoCL, so CPUs
 * and simulators use ours and GPUs use CLBlast; CLNET_GEMM=own|clblast
 * overrides for every device (bench/bench_gemm compares the two). */
#ifndef CLNET_GEMM_H
#define CLNET_GEMM_H

#include "device.h"

/* Sets d->gemm from the device kind and $CLNET_GEMM. */
clnet_status clnet_gemm_choose(clnet_device *d);

clnet_status clnet_gemm(clnet_device *d, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                        float alpha, cl_mem A, size_t aoff, size_t lda, cl_mem B, size_t boff,
                        size_t ldb, float beta, cl_mem C, size_t coff, size_t ldc);

/* B (cols x rows) = A^T for A (rows x cols), with offsets and leading dims. */
clnet_status clnet_transpose(clnet_device *d, size_t rows, size_t cols, cl_mem A, size_t aoff,
                             size_t lda, cl_mem B, size_t boff, size_t ldb);

/* A device scratch buffer of at least `bytes` (slot 0 or 1), grown on demand
 * and kept: after the first training step no more allocation happens. */
clnet_status clnet_device_work(clnet_device *d, int slot, size_t bytes, cl_mem *out);

#endif
