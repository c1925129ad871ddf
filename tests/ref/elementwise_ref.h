/* Plain-C references for cl/elementwise.cl. */
#ifndef CLNET_REF_ELEMENTWISE_H
#define CLNET_REF_ELEMENTWISE_H

#include <stddef.h>

void ref_fill(float *x, size_t n, float value);
void ref_scale(float *x, size_t n, float alpha);
void ref_axpy(size_t n, float alpha, const float *x, float *y); /* y += alpha x */
double ref_sum(const float *x, size_t n);                       /* in double */

/* C = alpha op(A) op(B) + beta C in double, row-major with leading
 * dimensions (BLAS conventions; beta == 0 never reads C). bound (M x N, may
 * be NULL) gets each element's sum of |terms|, for error bounds. */
void ref_gemm(int ta, int tb, size_t M, size_t N, size_t K, double alpha, const float *A,
              size_t lda, const float *B, size_t ldb, double beta, float *C, size_t ldc,
              double *bound);

#endif
