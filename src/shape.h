/* One sample's shape: channels, then 0 to 3 spatial dimensions (a vector,
 * (C); a signal, (C, L); an image, (C, H, W); a volume, (C, D, H, W)).
 * Tensors are laid out batch first, then channels, then the spatial
 * dimensions, row-major (NCHW for images). */
#ifndef CLNET_SHAPE_H
#define CLNET_SHAPE_H

#include <stddef.h>

#define CLNET_MAX_SPATIAL 3

typedef struct {
    int c;
    int ndim; /* spatial dimensions, 0..CLNET_MAX_SPATIAL */
    int dim[CLNET_MAX_SPATIAL];
} clnet_shape;

static inline clnet_shape clnet_shape_vector(int c) {
    return (clnet_shape){.c = c, .ndim = 0};
}

static inline clnet_shape clnet_shape_image(int c, int h, int w) {
    return (clnet_shape){.c = c, .ndim = 2, .dim = {h, w}};
}

/* Elements of one spatial plane (1 for a vector). */
static inline size_t clnet_shape_spatial(clnet_shape s) {
    size_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= (size_t)s.dim[i];
    return n;
}

/* Elements of one sample. */
static inline size_t clnet_shape_size(clnet_shape s) {
    return (size_t)s.c * clnet_shape_spatial(s);
}

static inline int clnet_shape_equal(clnet_shape a, clnet_shape b) {
    if (a.c != b.c || a.ndim != b.ndim) return 0;
    for (int i = 0; i < a.ndim; i++)
        if (a.dim[i] != b.dim[i]) return 0;
    return 1;
}

/* "20x26x26" (channels first); out holds at least 64 characters. */
void clnet_shape_format(clnet_shape s, char *out, size_t cap);

#endif
