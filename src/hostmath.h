/* Float arithmetic on the host for the reduction: built with -O3 so the
 * compiler vectorises it (see CMakeLists.txt). */
#ifndef CLNET_HOSTMATH_H
#define CLNET_HOSTMATH_H

#include <stddef.h>

/* dst[i] += src[i] for i < n. */
void clnet_add_floats(float *restrict dst, const float *restrict src, size_t n);
/* The index of the first of x's n floats that is NaN or infinite, or n
 * when all are finite. */
size_t clnet_first_nonfinite(const float *x, size_t n);

#endif
