/* Matrix multiply on a device, row-major, BLAS conventions:
 * C = alpha * op(A) op(B) + beta * C, op(X) = X or X^T; M x N result, K inner.
 * A, B, C are buffers with offsets and leading dimensions in elements.
 *
 * Several implementations (candidates) compute it: clnet's own kernels
 * (cl/gemm.cl) with the parameters of a declared search space, and CLBlast.
 * Which one runs for a shape on a device comes, in this order, from:
 *   1. $CLNET_GEMM=own|clblast (a backend forced for every shape),
 *   2. choices pinned by a resumed checkpoint (clnet_gemm_pin),
 *   3. the tuning database (tune.h; written by `clnet tune`),
 *   4. the fixed rule: CLBlast on GPUs, "own-tm8-wg1" on CPUs, "own-tm8-wg0"
 *      elsewhere (untuned CLBlast reaches a few GFLOP/s on PoCL).
 * Nothing is timed while training: only clnet_net_tune measures. Each shape's
 * choice is made once, on its first call, and remembered by the device
 * (d->gemm_picks), which is also what a checkpoint records. */
#ifndef CLNET_GEMM_H
#define CLNET_GEMM_H

#include "device.h"

/* Opens the device's GEMM side: the candidates' fingerprint, the database's
 * entries for this device, the $CLNET_GEMM override. */
clnet_status clnet_gemm_open(clnet_device *d);
void clnet_gemm_close(clnet_device *d);

clnet_status clnet_gemm(clnet_device *d, const clnet_gemm_shape *s, float alpha, cl_mem A,
                        size_t aoff, size_t lda, cl_mem B, size_t boff, size_t ldb, float beta,
                        cl_mem C, size_t coff, size_t ldc);

/* Every candidate of the device's search space as ids ("clblast",
 * "own-tm8-wg1", ...), fixed order; returns how many (at most cap). */
int clnet_gemm_candidates(const clnet_device *d, char ids[][CLNET_GEMM_ID_CAP], int cap);

/* Runs one candidate, named by id, whatever the rules would pick. */
clnet_status clnet_gemm_with(clnet_device *d, const char *id, const clnet_gemm_shape *s,
                             float alpha, cl_mem A, size_t aoff, size_t lda, cl_mem B, size_t boff,
                             size_t ldb, float beta, cl_mem C, size_t coff, size_t ldc);

/* The database key of a shape ("gemm NT M=50 N=500 K=676n") and its bucket. */
void clnet_gemm_key(const clnet_gemm_shape *s, char *key, size_t cap, int *bucket);

/* Pins a choice for a key on this device, above the database (a resumed
 * checkpoint's record). An id that is not a candidate is refused. */
clnet_status clnet_gemm_pin(clnet_device *d, const char *key, int bucket, const char *id);

/* Forgets the choices made so far (after the database or pins changed). */
void clnet_gemm_forget(clnet_device *d);

#endif
