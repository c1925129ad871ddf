/* Writing tensors in the safetensors format: the arguments checked, the JSON header made
 * (padded to 8 bytes), the data written little endian, all through one atomic file
 * (fileio.c). The reader and the dtypes are in safetensors.c. */
#include "alloc.h"
#include "safetensors.h"
#include "fault.h"
#include "env.h"
#include "bytes.h"
#include "text.h"
#include "fileio.h"
#include "error.h"
#include "json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s as a JSON string: quotes, backslashes and control characters escaped, other UTF-8 as
 * it is (as serde_json and the reference implementation write it). */
static void add_quoted(clnet_text *t, const char *s) {
    clnet_text_add(t, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"':
            clnet_text_add(t, "\\\"", 2);
            break;
        case '\\':
            clnet_text_add(t, "\\\\", 2);
            break;
        case '\n':
            clnet_text_add(t, "\\n", 2);
            break;
        case '\r':
            clnet_text_add(t, "\\r", 2);
            break;
        case '\t':
            clnet_text_add(t, "\\t", 2);
            break;
        case '\b':
            clnet_text_add(t, "\\b", 2);
            break;
        case '\f':
            clnet_text_add(t, "\\f", 2);
            break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                clnet_text_add(t, esc, 6);
            } else {
                clnet_text_add(t, (const char *)p, 1);
            }
        }
    }
    clnet_text_add(t, "\"", 1);
}

/* Tensor i of a save: named (not the metadata's key), of 0 to
 * CLNET_ST_MAX_DIMS dimensions, a known dtype, a shape that fits, data. */
static clnet_status check_tensor(const char *path, const clnet_st_tensor *t, int i) {
    if (!t->name)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_save %s: tensor %d has no name",
                          path, i);
    if (!clnet_json_utf8_valid(t->name))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_st_save %s: tensor %d's name is not UTF-8", path, i);
    if (strcmp(t->name, CLNET_ST_METADATA_KEY) == 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_st_save %s: a tensor cannot be named " CLNET_ST_METADATA_KEY,
                          path);
    if (t->ndim < 0 || t->ndim > CLNET_ST_MAX_DIMS)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_st_save %s: tensor '%s' has %d dimensions (0 to %d allowed)", path,
                          t->name, t->ndim, CLNET_ST_MAX_DIMS);
    if (clnet_st_dtype_size(t->dtype) == 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_st_save %s: tensor '%s' has dtype %d, which is neither "
                          "CLNET_ST_F32 nor CLNET_ST_I64",
                          path, t->name, (int)t->dtype);
    int64_t bytes = clnet_st_shape_bytes(t->shape, t->ndim, clnet_st_dtype_size(t->dtype));
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0) bytes = -1;
    if (bytes < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_st_save %s: tensor '%s' has a negative or too large shape", path,
                          t->name);
    if (bytes > 0 && !t->data)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_save %s: tensor '%s' has NULL data",
                          path, t->name);
    return CLNET_OK;
}

/* No two tensors of one name, no metadata key given twice. */
static clnet_status check_unique(const char *path, const clnet_st_tensor *tensors, int count,
                                 const clnet_st_meta *meta, int nmeta) {
    clnet_status status = CLNET_OK;
    char **names = NULL;
    const char *dup;
    int most = count > nmeta ? count : nmeta;
    if (most > 0) {
        names = clnet_malloc((size_t)most * sizeof *names);
        if (!names) FAIL(CLNET_ERR_OUT_OF_MEMORY, "clnet_st_save %s: out of memory", path);
    }
    for (int i = 0; i < count; i++) names[i] = (char *)tensors[i].name;
    TRY(clnet_st_find_duplicate(names, count, &dup));
    if (dup)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_save %s: two tensors are named '%s'", path, dup);
    for (int k = 0; k < nmeta; k++) names[k] = (char *)meta[k].key;
    TRY(clnet_st_find_duplicate(names, nmeta, &dup));
    if (dup)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_save %s: metadata key '%s' is given twice", path,
             dup);
cleanup:
    free(names);
    return status;
}

static clnet_status check_save_args(const char *path, const clnet_st_tensor *tensors, int count,
                                    const clnet_st_meta *meta, int nmeta) {
    clnet_status status = CLNET_OK;
    if (!path || count < 0 || nmeta < 0 || (count > 0 && !tensors) || (nmeta > 0 && !meta))
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_save: NULL path, tensors or metadata, or a "
                                         "negative count");
    for (int i = 0; i < count; i++) TRY(check_tensor(path, &tensors[i], i));
    for (int k = 0; k < nmeta; k++) {
        if (!meta[k].key || !meta[k].value)
            FAIL(CLNET_ERR_INVALID_ARGUMENT,
                 "clnet_st_save %s: metadata %d has a NULL key or "
                 "value",
                 path, k);
        if (!clnet_json_utf8_valid(meta[k].key) || !clnet_json_utf8_valid(meta[k].value))
            FAIL(CLNET_ERR_INVALID_ARGUMENT,
                 "clnet_st_save %s: metadata '%s' is not UTF-8 in its key or value", path,
                 meta[k].key);
    }
    TRY(check_unique(path, tensors, count, meta, nmeta));
cleanup:
    return status;
}

/* The JSON header, padded with spaces to a multiple of 8 bytes. */
static clnet_status make_header(const char *path, const clnet_st_tensor *tensors, int count,
                                const clnet_st_meta *meta, int nmeta, clnet_text *t) {
    uint64_t at = 0;
    clnet_text_str(t, "{");
    if (nmeta > 0) {
        clnet_text_str(t, "\"" CLNET_ST_METADATA_KEY "\":{");
        for (int k = 0; k < nmeta; k++) {
            if (k) clnet_text_str(t, ",");
            add_quoted(t, meta[k].key);
            clnet_text_str(t, ":");
            add_quoted(t, meta[k].value);
        }
        clnet_text_str(t, "}");
    }
    for (int i = 0; i < count; i++) {
        const clnet_st_tensor *x = &tensors[i];
        uint64_t bytes =
            (uint64_t)clnet_st_shape_bytes(x->shape, x->ndim, clnet_st_dtype_size(x->dtype));
        if (bytes > (uint64_t)INT64_MAX - at)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_save %s: too much data", path);
        if (i || nmeta > 0) clnet_text_str(t, ",");
        add_quoted(t, x->name);
        clnet_text_str(t, ":{\"dtype\":\"");
        clnet_text_str(t, clnet_st_dtype_name(x->dtype));
        clnet_text_str(t, "\",\"shape\":[");
        for (int d = 0; d < x->ndim; d++)
            clnet_text_printf(t, "%s%" PRId64, d ? "," : "", x->shape[d]);
        clnet_text_printf(t, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", at, at + bytes);
        at += bytes;
    }
    clnet_text_str(t, "}");
    while (!t->failed && t->len % 8 != 0) clnet_text_str(t, " ");
    if (t->failed)
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "clnet_st_save %s: out of memory", path);
    if (t->len > CLNET_ST_MAX_HEADER)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_st_save %s: the header would be %zu bytes, over the %u that "
                          "readers accept",
                          path, t->len, CLNET_ST_MAX_HEADER);
    return CLNET_OK;
}

/* Writes n elements of `size` bytes (4: float, 8: int64_t) as little-endian bytes through a
 * small buffer. */
static clnet_status write_elements(clnet_atomic_file *f, const void *x, size_t n, int size) {
    unsigned char buf[1 << 14];
    const unsigned char *src = x;
    size_t per = sizeof buf / (size_t)size;
    for (size_t i = 0; i < n; i += per) {
        size_t m = n - i < per ? n - i : per;
        for (size_t j = 0; j < m; j++) {
            if (size == 4) {
                uint32_t u;
                memcpy(&u, src + 4 * (i + j), 4);
                clnet_put_le32(buf + 4 * j, u);
            } else {
                uint64_t u;
                memcpy(&u, src + 8 * (i + j), 8);
                clnet_put_le64(buf + 8 * j, u);
            }
        }
        clnet_status s = clnet_atomic_write(f, buf, (size_t)size * m);
        if (s != CLNET_OK) return s;
    }
    return CLNET_OK;
}

clnet_status clnet_st_save(const char *path, const clnet_st_tensor *tensors, int count,
                           const clnet_st_meta *meta, int nmeta) {
    clnet_status status = CLNET_OK;
    clnet_text header = {0};
    clnet_atomic_file f = {.fd = -1};
    clnet_env env = {0}; /* for the tests' pause (fault.h) */
    unsigned char len8[8];
    TRY(check_save_args(path, tensors, count, meta, nmeta));
    TRY(make_header(path, tensors, count, meta, nmeta, &header));
    TRY(clnet_env_read(&env));
    clnet_atomic_clean_stale(path);
    TRY(clnet_atomic_open(&f, path));
    clnet_put_le64(len8, (uint64_t)header.len);
    TRY(clnet_atomic_write(&f, len8, 8));
    TRY(clnet_atomic_write(&f, header.buf, header.len));
    for (int i = 0; i < count; i++) {
        if (i == count / 2) clnet_save_pause(&env);
        int size = clnet_st_dtype_size(tensors[i].dtype);
        size_t n =
            (size_t)clnet_st_shape_bytes(tensors[i].shape, tensors[i].ndim, size) / (size_t)size;
        TRY(write_elements(&f, tensors[i].data, n, size));
    }
    TRY(clnet_atomic_commit(&f));
cleanup:
    clnet_atomic_abort(&f);
    clnet_text_free(&header);
    clnet_env_free(&env);
    return status;
}
