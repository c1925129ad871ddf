/* NumPy's .npy files (format versions 1, 2 and 3), read whole: the header's
 * dictionary gives the element type ('descr'), the order ('fortran_order')
 * and the shape; the data follows it. Only C order is taken (a Fortran-order
 * array would need a transpose and is refused). Elements come back in the
 * machine's byte order. */
#ifndef CLNET_NPY_H
#define CLNET_NPY_H

#include "clnet.h"

#include <stddef.h>
#include <stdint.h>

#define CLNET_NPY_MAX_RANK 8

typedef struct {
    char kind; /* 'u' unsigned, 'i' signed integer, 'f' float, 'b' bool */
    int size;  /* bytes per element: 1, 2, 4 or 8 */
    int rank;
    int64_t shape[CLNET_NPY_MAX_RANK];
    size_t count; /* elements: the product of the shape */
    void *data;   /* count * size bytes */
} clnet_npy;

/* Reads path into *out. CLNET_ERR_IO: the file cannot be opened or read.
 * CLNET_ERR_FORMAT, naming the file and what is wrong: a bad magic string or
 * version, a header that is not the dictionary NumPy writes, an element type
 * other than bool, (u)int8/16/32/64 and float32/64, Fortran order, a shape of
 * more than CLNET_NPY_MAX_RANK dimensions, fewer data bytes than the shape
 * needs (truncated). */
clnet_status clnet_npy_read(const char *path, clnet_npy *out);
void clnet_npy_free(clnet_npy *a);

/* Writes float32 data of the given shape to path as a version 1.0 .npy file
 * (little-endian '<f4', C order), atomically. */
clnet_status clnet_npy_write_f32(const char *path, const float *data, int rank,
                                 const int64_t *shape);

/* The "(2, 3)" text of a shape, for messages. */
void clnet_npy_shape_text(const clnet_npy *a, char *out, size_t cap);

/* Element i as a signed 64-bit integer (integer and bool kinds). */
int64_t clnet_npy_int(const clnet_npy *a, size_t i);

#endif
