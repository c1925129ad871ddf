/* Host-side float arithmetic, vectorised by the compiler (-O3). */
#include "hostmath.h"

void clnet_add_floats(float *restrict dst, const float *restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}
