/* Plain-C references for cl/elementwise.cl. */
#ifndef CLNET_REF_ELEMENTWISE_H
#define CLNET_REF_ELEMENTWISE_H

#include <stddef.h>

void ref_fill(float *x, size_t n, float value);
void ref_scale(float *x, size_t n, float alpha);
void ref_axpy(size_t n, float alpha, const float *x, float *y); /* y += alpha x */
double ref_sum(const float *x, size_t n);                       /* in double */

#endif
