/* What a GEMM is asked to do, and where its scratch lies: the types that
 * the GEMM's candidates (gemm.c, gemm_tiled.c) and its callers share. */
#ifndef CLNET_GEMM_SHAPE_H
#define CLNET_GEMM_SHAPE_H

#include "cl.h"

#include <stddef.h>

/* A GEMM's shape. */
typedef struct {
    int ta, tb; /* 1: op(A) = A^T, op(B) = B^T */
    size_t M, N, K;
    char batch; /* 'M', 'N' or 'K': that dimension is n times a per-sample size; 0: none */
    int n;      /* the samples, when batch is set */
} clnet_gemm_shape;

/* A matrix operand: its first element at `off` floats into `mem`, its rows
 * `ld` floats apart. */
typedef struct {
    cl_mem mem;
    size_t off, ld;
} clnet_matrix;

/* What a GEMM computes with: C = alpha op(A) op(B) + beta C (beta 0: C is
 * only written, whatever it held). */
typedef struct {
    float alpha;
    clnet_matrix a, b;
    float beta;
    clnet_matrix c;
} clnet_gemm_args;

/* Where a GEMM's scratch lies: `floats` floats of `mem` from `off`. */
typedef struct {
    cl_mem mem;
    size_t off, floats;
} clnet_gemm_scratch;

#endif
