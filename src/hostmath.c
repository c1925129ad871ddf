/* Host-side float arithmetic, vectorised by the compiler (-O3) and threaded
 * for large arrays. */
#include "hostmath.h"
#include "parallel.h"

/* Below this, one thread adds faster than threads start. */
#define THREADED_FROM (1u << 20)
#define PIECES 4

static void add(float *restrict dst, const float *restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

typedef struct {
    float *dst;
    const float *src;
    size_t n;
} add_job;

static clnet_status add_piece(int piece, void *arg) {
    const add_job *j = arg;
    size_t begin = j->n * (size_t)piece / PIECES, end = j->n * (size_t)(piece + 1) / PIECES;
    add(j->dst + begin, j->src + begin, end - begin);
    return CLNET_OK;
}

void clnet_add_floats(float *restrict dst, const float *restrict src, size_t n) {
    if (n < THREADED_FROM) {
        add(dst, src, n);
        return;
    }
    add_job j = {dst, src, n};
    clnet_parallel_for(PIECES, add_piece, &j); /* runs pieces itself if threads fail */
}
