/* Host-side float arithmetic, vectorised by the compiler (-O3). */
#include "hostmath.h"

#include <float.h>

void clnet_add_floats(float *restrict dst, const float *restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

/* Blocks without an early exit, so that each vectorises; the block that
 * holds one is searched again element by element. */
size_t clnet_first_nonfinite(const float *x, size_t n) {
    enum { BLOCK = 1024 };
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t end = n - b < BLOCK ? n : b + BLOCK;
        int bad = 0;
        for (size_t i = b; i < end; i++) bad |= !(x[i] >= -FLT_MAX && x[i] <= FLT_MAX);
        if (!bad) continue;
        for (size_t i = b; i < end; i++)
            if (!(x[i] >= -FLT_MAX && x[i] <= FLT_MAX)) return i;
    }
    return n;
}
