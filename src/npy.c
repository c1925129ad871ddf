/* Reading .npy files (see npy.h). The format: the magic "\x93NUMPY", a
 * version (major 1: a 2-byte header length; 2 and 3: 4 bytes, little-endian),
 * then the header, a Python dictionary literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }
 * padded with spaces and a newline, then the elements in C order. */
#include "npy.h"
#include "alloc.h"
#include "error.h"
#include "fileio.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HEADER_MAX (1u << 20) /* NumPy's own headers are a few hundred bytes */

static const char MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* The value text after 'key': in the header, or NULL. */
static const char *value_of(const char *header, const char *key) {
    char quoted[2][32];
    snprintf(quoted[0], sizeof quoted[0], "'%s'", key);
    snprintf(quoted[1], sizeof quoted[1], "\"%s\"", key);
    for (int q = 0; q < 2; q++) {
        const char *at = strstr(header, quoted[q]);
        if (!at) continue;
        at += strlen(quoted[q]);
        while (isspace((unsigned char)*at)) at++;
        if (*at != ':') return NULL;
        at++;
        while (isspace((unsigned char)*at)) at++;
        return at;
    }
    return NULL;
}

/* 'descr': '<f4' -> kind, size, byte order. */
static clnet_status parse_descr(const char *path, const char *v, clnet_npy *a, int *big) {
    char quote = *v;
    if (quote != '\'' && quote != '"')
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: the header's 'descr' is not a simple type string (a structured "
                          "array?): clnet reads arrays of one numeric type",
                          path);
    const char *s = v + 1, *end = strchr(s, quote);
    if (!end || end - s > 8) return clnet_fail(CLNET_ERR_FORMAT, "%s: a malformed 'descr'", path);
    char text[16];
    snprintf(text, sizeof text, "%.*s", (int)(end - s), s);
    const char *t = text;
    *big = 0;
    if (*t == '<' || *t == '|' || *t == '=') {
        t++;
    } else if (*t == '>') {
        *big = 1;
        t++;
    }
    char kind = *t++;
    char *rest = NULL;
    long size = strtol(t, &rest, 10);
    int known =
        (kind == 'f' && (size == 4 || size == 8)) ||
        ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
        (kind == 'b' && size == 1);
    if (!known || rest == t || *rest)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: element type '%s' is not supported (bool, int8/16/32/64, "
                          "uint8/16/32/64, float32 or float64)",
                          path, text);
    a->kind = kind;
    a->size = (int)size;
    return CLNET_OK;
}

/* 'shape': (2, 3) -> rank, shape, count. */
static clnet_status parse_shape(const char *path, const char *v, clnet_npy *a) {
    if (*v != '(')
        return clnet_fail(CLNET_ERR_FORMAT, "%s: the header's 'shape' is no tuple", path);
    v++;
    a->rank = 0;
    a->count = 1;
    for (;;) {
        while (isspace((unsigned char)*v)) v++;
        if (*v == ')') break;
        if (a->rank == CLNET_NPY_MAX_RANK)
            return clnet_fail(CLNET_ERR_FORMAT, "%s: more than %d dimensions", path,
                              CLNET_NPY_MAX_RANK);
        char *end = NULL;
        errno = 0;
        long long d = strtoll(v, &end, 10);
        if (end == v || d < 0 || errno)
            return clnet_fail(CLNET_ERR_FORMAT, "%s: a malformed 'shape' in the header", path);
        if (d > 0 && a->count > SIZE_MAX / 16 / (size_t)d)
            return clnet_fail(CLNET_ERR_FORMAT, "%s: a shape too large to hold", path);
        a->shape[a->rank++] = d;
        a->count *= (size_t)d;
        v = end;
        while (isspace((unsigned char)*v)) v++;
        if (*v == ',')
            v++;
        else if (*v != ')')
            return clnet_fail(CLNET_ERR_FORMAT, "%s: a malformed 'shape' in the header", path);
    }
    return CLNET_OK;
}

static void swap_bytes(unsigned char *p, size_t count, int size) {
    for (size_t i = 0; i < count; i++, p += size)
        for (int k = 0; k < size / 2; k++) {
            unsigned char t = p[k];
            p[k] = p[size - 1 - k];
            p[size - 1 - k] = t;
        }
}

static int machine_is_big_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 0;
}

/* The bytes after f's position; SIZE_MAX when not known (not a plain file). */
static size_t bytes_left(FILE *f) {
    struct stat st;
    long at = ftell(f);
    if (at < 0 || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return SIZE_MAX;
    return st.st_size > at ? (size_t)(st.st_size - at) : 0;
}

static clnet_status truncated(const char *path, const clnet_npy *a, size_t bytes, size_t have) {
    char text[160];
    clnet_npy_shape_text(a, text, sizeof text);
    return clnet_fail(CLNET_ERR_FORMAT,
                      "%s: truncated: shape %s needs %zu bytes of data, the file has %zu", path,
                      text, bytes, have);
}

/* The header after the magic: its length from the version's preamble, then
 * its text in *header (a heap string). */
static clnet_status read_header(FILE *f, const char *path, char **header) {
    clnet_status status = CLNET_OK;
    unsigned char start[12];
    size_t got = fread(start, 1, 10, f);
    if (got < 10 || memcmp(start, MAGIC, sizeof MAGIC) != 0)
        FAIL(CLNET_ERR_FORMAT, "%s: not a .npy file (no \\x93NUMPY magic at its start)", path);
    int major = start[6];
    size_t length = 0;
    if (major == 1) {
        length = (size_t)start[8] | (size_t)start[9] << 8;
    } else if (major == 2 || major == 3) {
        if (fread(start + 10, 1, 2, f) != 2) FAIL(CLNET_ERR_FORMAT, "%s: truncated header", path);
        length = (size_t)start[8] | (size_t)start[9] << 8 | (size_t)start[10] << 16 |
                 (size_t)start[11] << 24;
    } else {
        FAIL(CLNET_ERR_FORMAT, "%s: .npy format version %d.%d is not supported (1, 2 or 3)", path,
             major, start[7]);
    }
    if (length == 0 || length > HEADER_MAX)
        FAIL(CLNET_ERR_FORMAT, "%s: a header of %zu bytes", path, length);
    *header = clnet_malloc(length + 1);
    if (!*header) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
    if (fread(*header, 1, length, f) != length)
        FAIL(CLNET_ERR_FORMAT, "%s: truncated header (%zu bytes promised)", path, length);
    (*header)[length] = '\0';
cleanup:
    return status;
}

/* out's dtype and shape from the header's 'descr', 'fortran_order' and
 * 'shape'; *big: its bytes are big-endian. */
static clnet_status parse_header(const char *path, const char *header, clnet_npy *out, int *big) {
    clnet_status status = CLNET_OK;
    const char *descr = value_of(header, "descr"), *order = value_of(header, "fortran_order");
    const char *shape = value_of(header, "shape");
    if (!descr || !order || !shape)
        FAIL(CLNET_ERR_FORMAT, "%s: the header lacks 'descr', 'fortran_order' or 'shape'", path);
    TRY(parse_descr(path, descr, out, big));
    if (strncmp(order, "True", 4) == 0)
        FAIL(CLNET_ERR_FORMAT,
             "%s: the array is in Fortran order; save it in C order "
             "(numpy.ascontiguousarray) and try again",
             path);
    if (strncmp(order, "False", 5) != 0)
        FAIL(CLNET_ERR_FORMAT, "%s: a malformed 'fortran_order' in the header", path);
    TRY(parse_shape(path, shape, out));
cleanup:
    return status;
}

clnet_status clnet_npy_read(const char *path, clnet_npy *out) {
    clnet_status status = CLNET_OK;
    FILE *f = NULL;
    char *header = NULL;
    memset(out, 0, sizeof *out);
    if (!path) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_npy_read: path is NULL");
    f = fopen(path, "rb");
    if (!f) FAIL(CLNET_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    TRY(read_header(f, path, &header));
    int big = 0;
    TRY(parse_header(path, header, out, &big));
    size_t bytes = out->count * (size_t)out->size, left = bytes_left(f);
    /* a short file is refused before its shape's bytes are allocated */
    if (left < bytes) TRY(truncated(path, out, bytes, left));
    out->data = clnet_malloc(bytes ? bytes : 1);
    if (!out->data) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %s (%zu bytes)", path, bytes);
    size_t got = fread(out->data, 1, bytes, f);
    if (got != bytes) {
        if (ferror(f)) FAIL(CLNET_ERR_IO, "%s: read error: %s", path, strerror(errno));
        TRY(truncated(path, out, bytes, got));
    }
    if (out->size > 1 && big != machine_is_big_endian())
        swap_bytes(out->data, out->count, out->size);
cleanup:
    if (f) fclose(f);
    free(header);
    if (status != CLNET_OK) clnet_npy_free(out);
    return status;
}

clnet_status clnet_npy_write_f32(const char *path, const float *data, int rank,
                                 const int64_t *shape) {
    clnet_status status = CLNET_OK;
    clnet_atomic_file f = {0};
    clnet_npy a = {.kind = 'f', .size = 4, .rank = rank, .count = 1};
    if (rank < 0 || rank > CLNET_NPY_MAX_RANK)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: %d dimensions", path, rank);
    for (int i = 0; i < rank; i++) {
        a.shape[i] = shape[i];
        a.count *= (size_t)shape[i];
    }
    char dims[200], header[320];
    clnet_npy_shape_text(&a, dims, sizeof dims);
    int n = snprintf(header + 10, sizeof header - 10,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", dims);
    size_t padded = (10 + (size_t)n + 1 + 63) / 64 * 64; /* NumPy aligns the data to 64 */
    memset(header + 10 + n, ' ', padded - 10 - (size_t)n);
    header[padded - 1] = '\n';
    memcpy(header, MAGIC, sizeof MAGIC);
    header[6] = 1; /* version 1.0, then the header's length, little-endian */
    header[7] = 0;
    header[8] = (char)((padded - 10) & 0xff);
    header[9] = (char)((padded - 10) >> 8);
    TRY(clnet_atomic_open(&f, path));
    TRY(clnet_atomic_write(&f, header, padded));
    if (machine_is_big_endian()) { /* '<f4' is little-endian on disk */
        for (size_t i = 0; i < a.count; i++) {
            unsigned char b[4];
            memcpy(b, &data[i], 4);
            swap_bytes(b, 1, 4);
            TRY(clnet_atomic_write(&f, b, 4));
        }
    } else {
        TRY(clnet_atomic_write(&f, data, a.count * sizeof(float)));
    }
    TRY(clnet_atomic_commit(&f));
cleanup:
    if (status != CLNET_OK) clnet_atomic_abort(&f);
    return status;
}

void clnet_npy_free(clnet_npy *a) {
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

void clnet_npy_shape_text(const clnet_npy *a, char *out, size_t cap) {
    size_t used = (size_t)snprintf(out, cap, "(");
    for (int i = 0; i < a->rank && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%lld", i ? ", " : "",
                                 (long long)a->shape[i]);
    if (used < cap) snprintf(out + used, cap - used, "%s)", a->rank == 1 ? "," : "");
}

int64_t clnet_npy_int(const clnet_npy *a, size_t i) {
    const unsigned char *p = (const unsigned char *)a->data + i * (size_t)a->size;
    switch (a->size) {
    case 1:
        return a->kind == 'i' ? (int64_t) * (const int8_t *)p : (int64_t)*p;
    case 2:
        return a->kind == 'i' ? (int64_t) * (const int16_t *)(const void *)p
                              : (int64_t) * (const uint16_t *)(const void *)p;
    case 4:
        return a->kind == 'i' ? (int64_t) * (const int32_t *)(const void *)p
                              : (int64_t) * (const uint32_t *)(const void *)p;
    default: { /* a uint64 beyond INT64_MAX comes back negative: refused as a label */
        int64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    }
}

clnet_status clnet_write_npy(const char *path, const float *data, int rank, const int64_t *shape) {
    if (!path || (!data && rank > 0) || (rank > 0 && !shape))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_write_npy: NULL argument");
    return clnet_npy_write_f32(path, data, rank, shape);
}
