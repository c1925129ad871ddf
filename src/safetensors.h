/* Tensors in the safetensors format: 8-byte little-endian header length N, N bytes of
 * JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 * "__metadata__": {"key": "value", ...}}, then the raw little-endian data. Tensors tile the
 * data area in the order given, without gaps.
 *
 * The reader trusts nothing: the header length, the JSON (UTF-8, strings with every escape,
 * integers only), each tensor's fields, and that the tensors tile the data area exactly are
 * all checked, and every fault is CLNET_ERR_FORMAT with a message naming the file and, where
 * it applies, the tensor. Two dtypes are supported, F32 (float32, for parameters) and I64
 * (int64, for counters such as BatchNorm's num_batches_tracked, which PyTorch stores as a
 * shape-() I64): a file holding any other dtype is refused when it is loaded.
 *
 * safetensors.c holds the dtypes and the reader, safetensors_write.c the writer; the end of
 * this header is what the two share. */
#ifndef CLNET_SAFETENSORS_H
#define CLNET_SAFETENSORS_H

#include "clnet.h"

#include <stdint.h>

/* The most dimensions a tensor may have, reading or writing. */
#define CLNET_ST_MAX_DIMS 8
/* The largest JSON header the reader accepts, as the reference implementation. */
#define CLNET_ST_MAX_HEADER 100000000u

/* The element types. The zero value is F32, so a tensor that names no dtype is float32. */
typedef enum {
    CLNET_ST_F32 = 0, /* "F32": IEEE float32, 4 bytes little endian */
    CLNET_ST_I64 = 1, /* "I64": int64, 8 bytes little endian (two's complement) */
} clnet_st_dtype;

/* The name the format uses ("F32", "I64"); "?" for a value that is no dtype. */
const char *clnet_st_dtype_name(clnet_st_dtype dtype);

typedef struct {
    const char *name;
    const void *data; /* product(shape) elements of dtype (1 for a scalar): float for F32,
                         int64_t for I64; may be NULL when that is 0 */
    int ndim;         /* 0 (a scalar) to CLNET_ST_MAX_DIMS */
    int64_t shape[CLNET_ST_MAX_DIMS];
    clnet_st_dtype dtype; /* 0 (F32) where an initialiser leaves it out: designated ones
                             (.name = ...) may, without -Wmissing-field-initializers */
} clnet_st_tensor;

typedef struct {
    const char *key;
    const char *value;
} clnet_st_meta;

/* Writes atomically: a temporary file in the same folder, fsync, rename. On any failure the
 * file that was at `path` before is untouched. The JSON header is padded with spaces to a
 * multiple of 8 bytes (as the reference implementation does); "__metadata__" comes first
 * when nmeta > 0. Names, keys and values must be UTF-8 and are JSON-escaped; names must be
 * unique and not "__metadata__", keys unique. Bad arguments give CLNET_ERR_INVALID_ARGUMENT,
 * a file that cannot be written CLNET_ERR_IO. The new file gets mode 0666 less the umask. */
clnet_status clnet_st_save(const char *path, const clnet_st_tensor *tensors, int count,
                           const clnet_st_meta *meta, int nmeta);

typedef struct clnet_st_file clnet_st_file;

/* Reads and validates the whole file. CLNET_ERR_IO when it cannot be opened or read,
 * CLNET_ERR_FORMAT when anything in it is wrong. */
clnet_status clnet_st_load(const char *path, clnet_st_file **out);
/* The header alone (names, dtypes, shapes, metadata), checked as clnet_st_load checks it, the
 * offsets against the file's size; the tensors' data is not read, and clnet_st_get and
 * clnet_st_get_i64 on it fail with CLNET_ERR_INVALID_ARGUMENT. */
clnet_status clnet_st_load_header(const char *path, clnet_st_file **out);
/* The same from a file's bytes in memory; name stands for the file in messages. */
clnet_status clnet_st_load_bytes(const char *name, const void *bytes, size_t size,
                                 clnet_st_file **out);

/* Number of tensors; 0 for NULL. */
int clnet_st_count(const clnet_st_file *f);

/* Name of tensor i (0 <= i < count) in file order, the order of their data, which for files
 * clnet writes is also the header order; NULL when i is out of range. */
const char *clnet_st_name(const clnet_st_file *f, int i);

/* Finds a tensor of any dtype and tells its dtype and shape; CLNET_ERR_FORMAT with a message
 * naming the file and tensor when it is missing. Any of dtype, ndim and shape may be NULL. */
clnet_status clnet_st_info(const clnet_st_file *f, const char *name, clnet_st_dtype *dtype,
                           int *ndim, const int64_t **shape);

/* Finds an F32 tensor; CLNET_ERR_FORMAT with a message naming the file and tensor when it is
 * missing, of another dtype (the message names both), or (if want_ndim > 0) its shape
 * differs from want_shape[0..want_ndim). want_ndim 0 checks no shape, so a scalar's is
 * checked through *ndim. Any of data, ndim and shape may be NULL. The pointers stay valid
 * until clnet_st_free; the data is in host byte order and aligned for its type. */
clnet_status clnet_st_get(const clnet_st_file *f, const char *name, int want_ndim,
                          const int64_t *want_shape, const float **data, int *ndim,
                          const int64_t **shape);

/* The same for an I64 tensor. */
clnet_status clnet_st_get_i64(const clnet_st_file *f, const char *name, int want_ndim,
                              const int64_t *want_shape, const int64_t **data, int *ndim,
                              const int64_t **shape);

/* The metadata value of key; NULL if absent. */
const char *clnet_st_meta_get(const clnet_st_file *f, const char *key);

/* NULL is harmless. */
void clnet_st_free(clnet_st_file *f);

/* ---- shared by the reader (safetensors.c) and the writer (safetensors_write.c) ---- */

/* The header's member that holds the metadata, not a tensor. */
#define CLNET_ST_METADATA_KEY "__metadata__"

/* The bytes of one element (4 for F32, 8 for I64); 0 for a value that is no dtype. */
int clnet_st_dtype_size(clnet_st_dtype dtype);

/* size * product(shape) (size for a scalar), or -1 when that does not fit in 63 bits. */
int64_t clnet_st_shape_bytes(const int64_t *shape, int ndim, int size);

/* *dup: the name that occurs twice in names[0..n), or NULL. CLNET_ERR_OUT_OF_MEMORY when
 * there is no memory to sort them in. */
clnet_status clnet_st_find_duplicate(char *const *names, int n, const char **dup);

#endif
