/* The safetensors format's dtypes and its reader: a file's bytes checked field by field
 * (safetensors.h says what is checked) and decoded to host order. What the writer
 * (safetensors_write.c) shares with it is here too: the dtypes' names and sizes, a shape's
 * bytes, the search for a name given twice. */
#include "alloc.h"
#include "safetensors.h"
#include "bytes.h"
#include "error.h"
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

_Static_assert(sizeof(float) == 4, "clnet needs 32-bit IEEE floats");

/* Deep enough that a misplaced array still reaches the checks that name the tensor. */
#define MAX_JSON_DEPTH 8

/* Each dtype's name in the format and its element size, indexed by clnet_st_dtype. */
static const struct {
    const char *name;
    int size;
} DTYPES[] = {[CLNET_ST_F32] = {"F32", 4}, [CLNET_ST_I64] = {"I64", 8}};
#define NDTYPES (int)(sizeof DTYPES / sizeof DTYPES[0])

static int dtype_valid(clnet_st_dtype dtype) {
    return (int)dtype >= 0 && (int)dtype < NDTYPES;
}

const char *clnet_st_dtype_name(clnet_st_dtype dtype) {
    return dtype_valid(dtype) ? DTYPES[dtype].name : "?";
}

int clnet_st_dtype_size(clnet_st_dtype dtype) {
    return dtype_valid(dtype) ? DTYPES[dtype].size : 0;
}

/* "[20,1,3,3]" */
static const char *shape_text(char *buf, size_t n, const int64_t *shape, int ndim) {
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%" PRId64, d ? "," : "", shape[d]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

int64_t clnet_st_shape_bytes(const int64_t *shape, int ndim, int size) {
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0) return 0;
    int64_t bytes = size;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || bytes > INT64_MAX / shape[d]) return -1;
        bytes *= shape[d];
    }
    return bytes;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}
clnet_status clnet_st_find_duplicate(char *const *names, int n, const char **dup) {
    *dup = NULL;
    if (n < 2) return CLNET_OK;
    char **sorted = clnet_malloc((size_t)n * sizeof *sorted);
    if (!sorted) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory checking names");
    memcpy(sorted, names, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_names);
    for (int i = 1; i < n && !*dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) *dup = sorted[i];
    free(sorted);
    return CLNET_OK;
}

/* ==== reading ================================================================== */

typedef struct {
    char *name;
    int ndim;
    int64_t shape[CLNET_ST_MAX_DIMS];
    clnet_st_dtype dtype;
    uint64_t begin, end; /* data_offsets, relative to the data area */
    int order;           /* position in the header, to break ties between empty tensors */
    const void *data;    /* decoded to host order: a float or int64_t array */
} entry;

struct clnet_st_file {
    char *path;
    unsigned char *data; /* the whole data area; F32 tensors are decoded in place */
    int64_t *ints;       /* the I64 tensors, decoded to host int64_t, one after another */
    int count;
    entry *tensors; /* in file order */
    int nmeta;
    char **keys, **values;
    int header_only; /* read by clnet_st_load_header: no data to give */
};

/* e's shape from its header field. */
static clnet_status read_shape(const char *path, const clnet_json *shape, entry *e) {
    clnet_status status = CLNET_OK;
    if (shape->kind != CLNET_JSON_ARRAY)
        FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has a shape that is %s, not an array", path,
             e->name, clnet_json_kind_name(shape->kind));
    if (shape->count > CLNET_ST_MAX_DIMS)
        FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has %d dimensions; clnet reads at most %d", path,
             e->name, shape->count, CLNET_ST_MAX_DIMS);
    e->ndim = shape->count;
    for (int d = 0; d < shape->count; d++) {
        const clnet_json *s = &shape->items[d];
        if (s->kind != CLNET_JSON_INT)
            FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has a shape entry that is %s, not an integer",
                 path, e->name, clnet_json_kind_name(s->kind));
        if (s->integer < 0)
            FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has a negative shape entry %" PRId64, path,
                 e->name, s->integer);
        e->shape[d] = s->integer;
    }
cleanup:
    return status;
}

/* e's data_offsets, which must match its shape and dtype. */
static clnet_status read_offsets(const char *path, const clnet_json *offsets, entry *e) {
    clnet_status status = CLNET_OK;
    char buf[256];
    if (offsets->kind != CLNET_JSON_ARRAY || offsets->count != 2 ||
        offsets->items[0].kind != CLNET_JSON_INT || offsets->items[1].kind != CLNET_JSON_INT)
        FAIL(CLNET_ERR_FORMAT,
             "%s: tensor '%s' must have data_offsets [begin, end] of two "
             "integers",
             path, e->name);
    int64_t begin = offsets->items[0].integer, end = offsets->items[1].integer;
    if (begin < 0 || end < begin)
        FAIL(CLNET_ERR_FORMAT,
             "%s: tensor '%s' has data_offsets [%" PRId64 ", %" PRId64 "]: they must satisfy "
             "0 <= begin <= end",
             path, e->name, begin, end);
    int64_t need = clnet_st_shape_bytes(e->shape, e->ndim, DTYPES[e->dtype].size);
    if (need < 0)
        FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has shape %s, too large to address", path, e->name,
             shape_text(buf, sizeof buf, e->shape, e->ndim));
    if (end - begin != need)
        FAIL(CLNET_ERR_FORMAT,
             "%s: tensor '%s' has data_offsets [%" PRId64 ", %" PRId64 "] but shape %s of %s "
             "needs %" PRId64 " bytes",
             path, e->name, begin, end, shape_text(buf, sizeof buf, e->shape, e->ndim),
             DTYPES[e->dtype].name, need);
    e->begin = (uint64_t)begin;
    e->end = (uint64_t)end;
cleanup:
    return status;
}

/* Fills e from one header member (its name already in e->name). */
static clnet_status read_entry(const char *path, const clnet_json *v, entry *e) {
    clnet_status status = CLNET_OK;
    const clnet_json *dtype = NULL, *shape = NULL, *offsets = NULL;
    if (v->kind != CLNET_JSON_OBJECT)
        FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' must be a JSON object, not %s", path, e->name,
             clnet_json_kind_name(v->kind));
    for (int k = 0; k < v->count; k++) {
        const clnet_json **slot = NULL;
        if (strcmp(v->keys[k], "dtype") == 0)
            slot = &dtype;
        else if (strcmp(v->keys[k], "shape") == 0)
            slot = &shape;
        else if (strcmp(v->keys[k], "data_offsets") == 0)
            slot = &offsets;
        else
            FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has an unknown field '%s'", path, e->name,
                 v->keys[k]);
        if (*slot)
            FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has the field '%s' twice", path, e->name,
                 v->keys[k]);
        *slot = &v->items[k];
    }
    if (!dtype || !shape || !offsets)
        FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has no '%s'", path, e->name,
             !dtype   ? "dtype"
             : !shape ? "shape"
                      : "data_offsets");

    if (dtype->kind != CLNET_JSON_STRING)
        FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has a dtype that is %s, not a string", path,
             e->name, clnet_json_kind_name(dtype->kind));
    e->dtype = (clnet_st_dtype)NDTYPES;
    for (int t = 0; t < NDTYPES; t++)
        if (strcmp(dtype->string, DTYPES[t].name) == 0) e->dtype = (clnet_st_dtype)t;
    if (!dtype_valid(e->dtype))
        FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has dtype %s; clnet reads only F32 and I64", path,
             e->name, dtype->string);

    TRY(read_shape(path, shape, e));
    TRY(read_offsets(path, offsets, e));
cleanup:
    return status;
}

static clnet_status read_metadata(const char *path, const clnet_json *v, clnet_st_file *f) {
    clnet_status status = CLNET_OK;
    const char *dup;
    if (v->kind != CLNET_JSON_OBJECT)
        FAIL(CLNET_ERR_FORMAT, "%s: %s must be a JSON object, not %s", path, CLNET_ST_METADATA_KEY,
             clnet_json_kind_name(v->kind));
    for (int k = 0; k < v->count; k++)
        if (v->items[k].kind != CLNET_JSON_STRING)
            FAIL(CLNET_ERR_FORMAT, "%s: metadata value of '%s' is %s; it must be a string", path,
                 v->keys[k], clnet_json_kind_name(v->items[k].kind));
    TRY(clnet_st_find_duplicate(v->keys, v->count, &dup));
    if (dup) FAIL(CLNET_ERR_FORMAT, "%s: metadata key '%s' occurs twice", path, dup);
    if (v->count > 0) {
        f->keys = clnet_calloc((size_t)v->count, sizeof *f->keys);
        f->values = clnet_calloc((size_t)v->count, sizeof *f->values);
        if (!f->keys || !f->values) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    for (int k = 0; k < v->count; k++) {
        f->keys[k] = strdup(v->keys[k]);
        f->values[k] = strdup(v->items[k].string);
        f->nmeta = k + 1;
        if (!f->keys[k] || !f->values[k]) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
cleanup:
    return status;
}

static int compare_entries(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->order - y->order;
}

/* Checks the header and fills f's tensors (sorted into file order) and metadata. */
static clnet_status read_header(const char *path, const clnet_json *root, uint64_t data_size,
                                clnet_st_file *f) {
    clnet_status status = CLNET_OK;
    const char *dup;
    if (root->kind != CLNET_JSON_OBJECT)
        FAIL(CLNET_ERR_FORMAT, "%s: the header must be a JSON object, not %s", path,
             clnet_json_kind_name(root->kind));
    TRY(clnet_st_find_duplicate(root->keys, root->count, &dup));
    if (dup && strcmp(dup, CLNET_ST_METADATA_KEY) == 0)
        FAIL(CLNET_ERR_FORMAT, "%s: the header has " CLNET_ST_METADATA_KEY " twice", path);
    if (dup)
        FAIL(CLNET_ERR_FORMAT, "%s: the header names '%s' twice (duplicate tensor name)", path,
             dup);
    if (root->count > 0) {
        f->tensors = clnet_calloc((size_t)root->count, sizeof *f->tensors);
        if (!f->tensors) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    for (int k = 0; k < root->count; k++) {
        if (strcmp(root->keys[k], CLNET_ST_METADATA_KEY) == 0) {
            TRY(read_metadata(path, &root->items[k], f));
            continue;
        }
        entry *e = &f->tensors[f->count];
        e->name = strdup(root->keys[k]);
        if (!e->name) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        e->order = f->count++;
        TRY(read_entry(path, &root->items[k], e));
    }

    /* The tensors must tile [0, data_size) exactly. */
    if (f->count > 0) qsort(f->tensors, (size_t)f->count, sizeof *f->tensors, compare_entries);
    uint64_t at = 0;
    for (int i = 0; i < f->count; i++) {
        const entry *e = &f->tensors[i];
        if (e->begin > at)
            FAIL(CLNET_ERR_FORMAT,
                 "%s: a gap in the data: bytes [%" PRIu64 ", %" PRIu64 ") belong to no tensor "
                 "(tensor '%s' begins at %" PRIu64 ")",
                 path, at, e->begin, e->name, e->begin);
        if (e->begin < at)
            FAIL(CLNET_ERR_FORMAT,
                 "%s: tensor '%s' (data_offsets [%" PRIu64 ", %" PRIu64 "]) overlaps tensor "
                 "'%s' (data_offsets [%" PRIu64 ", %" PRIu64 "])",
                 path, e->name, e->begin, e->end, f->tensors[i - 1].name, f->tensors[i - 1].begin,
                 f->tensors[i - 1].end);
        at = e->end;
    }
    if (at > data_size)
        FAIL(CLNET_ERR_FORMAT,
             "%s: truncated: the tensors need %" PRIu64 " bytes of data but the file has %" PRIu64
             " after the header",
             path, at, data_size);
    if (at < data_size)
        FAIL(CLNET_ERR_FORMAT,
             "%s: %" PRIu64 " trailing bytes after the data of the last tensor (the tensors "
             "need %" PRIu64 " bytes, the file has %" PRIu64 " after the header)",
             path, data_size - at, at, data_size);
cleanup:
    return status;
}

static clnet_status read_exactly(FILE *fp, const char *path, void *buf, size_t n) {
    if (n > 0 && fread(buf, 1, n, fp) != n)
        return clnet_fail(CLNET_ERR_IO, "%s: read failed: %s", path,
                          ferror(fp) ? strerror(errno) : "the file shrank while being read");
    return CLNET_OK;
}

/* Reads the data area that follows the header into f and decodes it to host order. */
static clnet_status load_data(FILE *fp, const char *path, uint64_t data_size, clnet_st_file *f) {
    clnet_status status = CLNET_OK;
    /* Every tensor's size is a multiple of 4 and they tile the data area, so each begins on
     * a multiple of 4: in a malloc'ed area the F32 ones are aligned where they lie. An I64
     * tensor may begin at 4 mod 8 (safetensors does not align), so those are decoded into
     * an area of their own. */
    if (data_size > SIZE_MAX) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: too large for memory", path);
    f->data = clnet_malloc(data_size > 0 ? (size_t)data_size : 1);
    uint64_t nints = 0;
    for (int i = 0; i < f->count; i++)
        if (f->tensors[i].dtype == CLNET_ST_I64)
            nints += (f->tensors[i].end - f->tensors[i].begin) / 8;
    f->ints = clnet_malloc(nints > 0 ? (size_t)nints * 8 : 1);
    if (!f->data || !f->ints)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory for %" PRIu64 " bytes of data", path,
             data_size);
    TRY(read_exactly(fp, path, f->data, (size_t)data_size));
    int64_t *next_int = f->ints;
    for (int i = 0; i < f->count; i++) {
        entry *e = &f->tensors[i];
        unsigned char *bytes = f->data + e->begin;
        size_t n = (size_t)(e->end - e->begin) / (size_t)DTYPES[e->dtype].size;
        if (e->dtype == CLNET_ST_F32) {
            for (size_t k = 0; k < n; k++) {
                uint32_t u = clnet_get_le32(bytes + 4 * k);
                memcpy(bytes + 4 * k, &u, 4);
            }
            e->data = bytes;
        } else {
            for (size_t k = 0; k < n; k++) next_int[k] = (int64_t)clnet_get_le64(bytes + 8 * k);
            e->data = next_int;
            next_int += n;
        }
    }
cleanup:
    return status;
}

/* Reads a file of `size` bytes from fp (a file, or memory) named path: the header, and the
 * data unless header_only. */
static clnet_status load_stream(FILE *fp, const char *path, uint64_t size, int header_only,
                                clnet_st_file **out) {
    clnet_status status = CLNET_OK;
    char *header = NULL, *what = NULL;
    clnet_json *root = NULL;
    clnet_st_file *f = NULL;
    unsigned char len8[8];
    if (size < 8)
        FAIL(CLNET_ERR_FORMAT,
             "%s: truncated: the file has %" PRIu64 " bytes, fewer than the 8 of the header "
             "length",
             path, size);
    TRY(read_exactly(fp, path, len8, 8));
    uint64_t n = clnet_get_le64(len8);
    if (n < 2)
        FAIL(CLNET_ERR_FORMAT, "%s: header length %" PRIu64 " is too small (at least 2: \"{}\")",
             path, n);
    if (n > CLNET_ST_MAX_HEADER)
        FAIL(CLNET_ERR_FORMAT, "%s: header length %" PRIu64 " is over the limit of %u bytes", path,
             n, CLNET_ST_MAX_HEADER);
    if (n > size - 8)
        FAIL(CLNET_ERR_FORMAT,
             "%s: truncated or corrupt: header length %" PRIu64 " is larger than the %" PRIu64
             " bytes that follow it",
             path, n, size - 8);

    header = clnet_malloc((size_t)n);
    f = clnet_calloc(1, sizeof *f);
    if (!header || !f) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    f->path = strdup(path);
    if (!f->path) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    TRY(read_exactly(fp, path, header, (size_t)n));
    what = clnet_malloc(strlen(path) + sizeof ": header");
    if (!what) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    sprintf(what, "%s: header", path);
    TRY(clnet_json_parse(header, (size_t)n, what, MAX_JSON_DEPTH, &root));
    uint64_t data_size = size - 8 - n;
    TRY(read_header(path, root, data_size, f));
    f->header_only = header_only;
    if (!header_only) TRY(load_data(fp, path, data_size, f));
    *out = f;
    f = NULL;
cleanup:
    free(header);
    free(what);
    clnet_json_free(root);
    clnet_st_free(f);
    return status;
}

static clnet_status load_file(const char *path, int header_only, clnet_st_file **out) {
    clnet_status status = CLNET_OK;
    FILE *fp = NULL;
    struct stat st;
    if (!out) FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_load: out is NULL");
    *out = NULL;
    if (!path) FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_load: path is NULL");
    fp = fopen(path, "rb");
    if (!fp) FAIL(CLNET_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(fp), &st) != 0)
        FAIL(CLNET_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) FAIL(CLNET_ERR_IO, "%s: not a regular file", path);
    status = load_stream(fp, path, (uint64_t)st.st_size, header_only, out);
cleanup:
    if (fp) fclose(fp);
    return status;
}

clnet_status clnet_st_load(const char *path, clnet_st_file **out) {
    return load_file(path, 0, out);
}

clnet_status clnet_st_load_header(const char *path, clnet_st_file **out) {
    return load_file(path, 1, out);
}

clnet_status clnet_st_load_bytes(const char *name, const void *bytes, size_t size,
                                 clnet_st_file **out) {
    clnet_status status = CLNET_OK;
    FILE *fp = NULL;
    if (!out || !name || (!bytes && size))
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_st_load_bytes: NULL argument");
    *out = NULL;
    if (size < 8) return load_stream(NULL, name, size, 0, out); /* says it is truncated */
    fp = fmemopen((void *)bytes, size, "rb");
    if (!fp) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: fmemopen: %s", name, strerror(errno));
    status = load_stream(fp, name, size, 0, out);
cleanup:
    if (fp) fclose(fp);
    return status;
}

int clnet_st_count(const clnet_st_file *f) {
    return f ? f->count : 0;
}

const char *clnet_st_name(const clnet_st_file *f, int i) {
    return f && i >= 0 && i < f->count ? f->tensors[i].name : NULL;
}

/* The tensor called name; CLNET_ERR_FORMAT when there is none. */
static clnet_status find(const clnet_st_file *f, const char *name, const char *fn,
                         const entry **out) {
    *out = NULL;
    if (!f || !name) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: NULL file or name", fn);
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0) {
            *out = &f->tensors[i];
            return CLNET_OK;
        }
    return clnet_fail(CLNET_ERR_FORMAT, "%s: has no tensor named '%s'", f->path, name);
}

clnet_status clnet_st_info(const clnet_st_file *f, const char *name, clnet_st_dtype *dtype,
                           int *ndim, const int64_t **shape) {
    const entry *e;
    clnet_status s = find(f, name, "clnet_st_info", &e);
    if (s != CLNET_OK) return s;
    if (dtype) *dtype = e->dtype;
    if (ndim) *ndim = e->ndim;
    if (shape) *shape = e->shape;
    return CLNET_OK;
}

/* clnet_st_get and clnet_st_get_i64: the tensor, which must be of dtype
 * `type` (and of want_shape where want_ndim > 0); *ndim and *shape its own. */
static clnet_status get_typed(const clnet_st_file *f, const char *name, clnet_st_dtype type,
                              const char *fn, int want_ndim, const int64_t *want_shape,
                              const entry **out) {
    clnet_status status = CLNET_OK;
    char have[256], want[256];
    const entry *e = NULL;
    if (want_ndim > 0 && !want_shape)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s: want_ndim %d but want_shape is NULL", fn, want_ndim);
    TRY(find(f, name, fn, &e));
    if (f->header_only)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s: tensor '%s': only the header was read", f->path,
             name);
    if (e->dtype != type)
        FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has dtype %s but %s was expected", f->path, name,
             DTYPES[e->dtype].name, DTYPES[type].name);
    if (want_ndim > 0) {
        int same = e->ndim == want_ndim;
        for (int d = 0; same && d < want_ndim; d++) same = e->shape[d] == want_shape[d];
        if (!same)
            FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' has shape %s but %s was expected", f->path,
                 name, shape_text(have, sizeof have, e->shape, e->ndim),
                 shape_text(want, sizeof want, want_shape, want_ndim));
    }
    *out = e;
cleanup:
    return status;
}

static void tell_shape(const entry *e, int *ndim, const int64_t **shape) {
    if (ndim) *ndim = e->ndim;
    if (shape) *shape = e->shape;
}

clnet_status clnet_st_get(const clnet_st_file *f, const char *name, int want_ndim,
                          const int64_t *want_shape, const float **data, int *ndim,
                          const int64_t **shape) {
    const entry *e = NULL;
    clnet_status s = get_typed(f, name, CLNET_ST_F32, "clnet_st_get", want_ndim, want_shape, &e);
    if (s != CLNET_OK) return s;
    if (data) *data = e->data;
    tell_shape(e, ndim, shape);
    return CLNET_OK;
}

clnet_status clnet_st_get_i64(const clnet_st_file *f, const char *name, int want_ndim,
                              const int64_t *want_shape, const int64_t **data, int *ndim,
                              const int64_t **shape) {
    const entry *e = NULL;
    clnet_status s =
        get_typed(f, name, CLNET_ST_I64, "clnet_st_get_i64", want_ndim, want_shape, &e);
    if (s != CLNET_OK) return s;
    if (data) *data = e->data;
    tell_shape(e, ndim, shape);
    return CLNET_OK;
}

const char *clnet_st_meta_get(const clnet_st_file *f, const char *key) {
    if (!f || !key) return NULL;
    for (int k = 0; k < f->nmeta; k++)
        if (strcmp(f->keys[k], key) == 0) return f->values[k];
    return NULL;
}

void clnet_st_free(clnet_st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->count; i++) free(f->tensors[i].name);
    for (int k = 0; k < f->nmeta; k++) {
        free(f->keys[k]);
        free(f->values[k]);
    }
    free(f->tensors);
    free(f->keys);
    free(f->values);
    free(f->data);
    free(f->ints);
    free(f->path);
    free(f);
}
