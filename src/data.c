/* Data sets in the IDX layout (MNIST, Fashion-MNIST), read through zlib so
 * that gzip and raw files both work, and a loader that shuffles, normalises
 * and batches them on a prefetch thread. Images stay bytes in memory and
 * become floats one batch at a time. */
#include "alloc.h"
#include "npy.h"
#include "data.h"
#include "error.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_IMAGES_MAGIC 0x00000803u /* unsigned bytes, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u /* unsigned bytes, 1 dimension */
#define IDX_MAX_SIDE     65535u
#define IDX_MAX_BYTES    (1ull << 31)
#define READ_CHUNK       (1u << 30) /* gzread takes an unsigned length */
#define FIRST_CAPACITY   (16u << 20)

struct clnet_dataset {
    int count;                   /* samples */
    int channels, height, width; /* clnet_dataset_shape's view of a sample */
    int rank, dims[4];           /* a sample's shape as the file has it */
    int from_idx;                /* IDX images: they feed any input of as many values */
    int unlabelled;              /* .npy samples without labels (all 0) */
    int classes;                 /* 1 + the largest label of the files as loaded */
    uint8_t *images;             /* (count, sample) bytes, or NULL with floats */
    float *floats;               /* (count, sample) float32 (.npy), or NULL */
    int32_t *labels;             /* (count) */
    /* Float targets, .npy float32 y (count, targets), in place of labels
     * (which are then all 0); NULL and 0 otherwise. With target_classes,
     * an integer y of a class per position (count, spatial...), held as
     * floats. */
    float *targets;
    int target_size, target_rank, target_dims[4];
    int target_classes;
    /* clnet_dataset_targets_from_samples: each sample is its own target,
     * read from images or floats (targets stays NULL) */
    int samples_as_targets;
};

/* Float targets y for the samples x: one per sample, of 1 to 4 dimensions. */
static clnet_status check_targets(const clnet_npy *y, const char *y_path, const clnet_npy *x,
                                  const char *x_path) {
    char shape[160];
    clnet_npy_shape_text(y, shape, sizeof shape);
    if (y->rank < 2 || y->rank > 5 || y->shape[0] != x->shape[0] || !y->count ||
        y->count / (size_t)y->shape[0] > INT32_MAX)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s has shape %s: %s want (%lld, ...), a tensor of 1 to 4 "
                          "dimensions for each of the samples of %s",
                          y_path, shape, y->kind == 'f' ? "float targets" : "classes per position",
                          (long long)x->shape[0], x_path);
    return CLNET_OK;
}

/* An integer y of a class per position, (count, spatial...), into the data
 * set's targets as floats (exact up to 2^24). */
static clnet_status class_maps(clnet_dataset *ds, const clnet_npy *y, const char *y_path) {
    ds->targets = clnet_malloc(y->count * sizeof *ds->targets);
    if (!ds->targets) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %s", y_path);
    size_t per = y->count / (size_t)y->shape[0];
    for (size_t i = 0; i < y->count; i++) {
        int64_t v = clnet_npy_int(y, i);
        if (v < 0 || v >= (1 << 24))
            return clnet_fail(CLNET_ERR_FORMAT,
                              "%s: sample %zu, position %zu: the class is %lld: classes are 0, 1, "
                              "2, ... (below 2^24)",
                              y_path, i / per, i % per, (long long)v);
        ds->targets[i] = (float)v;
        if (v + 1 > ds->classes) ds->classes = (int)v + 1;
    }
    ds->target_classes = 1;
    return CLNET_OK;
}

/* ---- reading IDX files ------------------------------------------------------ */

/* A failed gzread: the file system's error, or a corrupt gzip stream. */
static clnet_status stream_error(gzFile f, const char *path) {
    int errnum = Z_OK;
    const char *text = gzerror(f, &errnum);
    size_t n = strlen(path); /* zlib's text starts "path: " */
    if (strncmp(text, path, n) == 0 && text[n] == ':') text += n + (text[n + 1] == ' ' ? 2 : 1);
    if (errnum == Z_ERRNO)
        return clnet_fail(CLNET_ERR_IO, "%s: read error: %s", path, strerror(errno));
    if (errnum == Z_MEM_ERROR)
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory in zlib", path);
    if (errnum == Z_BUF_ERROR)
        return clnet_fail(CLNET_ERR_FORMAT, "%s: truncated: the gzip stream is cut short (%s)",
                          path, text);
    return clnet_fail(CLNET_ERR_FORMAT, "%s: corrupt gzip stream (%s)", path, text);
}

/* Reads n bytes into *dst (a buffer of *cap bytes), growing it as they come
 * so that a lying header in a small file never makes a huge allocation.
 * `start` is where the bytes begin in the (uncompressed) file and `what`
 * says what they are, for the message when the file ends early. */
static clnet_status read_bytes(gzFile f, const char *path, const char *what, size_t start,
                               uint8_t **dst, size_t *cap, size_t n) {
    clnet_status status = CLNET_OK;
    size_t got = 0;
    while (got < n) {
        if (got == *cap) {
            size_t grown = *cap * 2 < n ? *cap * 2 : n;
            uint8_t *p = clnet_realloc(*dst, grown);
            if (!p) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", path, grown);
            *dst = p;
            *cap = grown;
        }
        size_t want = *cap - got < READ_CHUNK ? *cap - got : READ_CHUNK;
        int r = gzread(f, *dst + got, (unsigned)want);
        if (r < 0) {
            status = stream_error(f, path);
            goto cleanup;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got < n) {
        int errnum = Z_OK;
        gzerror(f, &errnum);
        if (errnum != Z_OK) {
            status = stream_error(f, path);
            goto cleanup;
        }
        FAIL(CLNET_ERR_FORMAT, "%s: truncated: the data ends after %zu bytes, %s need %zu", path,
             start + got, what, start + n);
    }
cleanup:
    return status;
}

static uint32_t big_endian32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads the rest of a gzip stream, so that zlib checks its CRC and length
 * (bytes past the data are ignored, but a damaged stream is not). Raw files
 * have nothing to check. */
static clnet_status check_stream_end(gzFile f, const char *path) {
    if (gzdirect(f)) return CLNET_OK;
    uint8_t sink[4096];
    int r;
    while ((r = gzread(f, sink, sizeof sink)) > 0) {
    }
    int errnum = Z_OK;
    gzerror(f, &errnum);
    if (r < 0 || errnum != Z_OK) return stream_error(f, path);
    return CLNET_OK;
}

/* Reads one IDX file of unsigned bytes with `ndims` dimensions (3: images, 1:
 * labels) into *data, and its dimensions into dims: the first `limit`
 * samples where the file holds more (limit 0: all), the rest neither read
 * nor checked. */
static clnet_status read_idx(const char *path, uint32_t magic, int ndims, uint32_t *dims,
                             uint8_t **data, uint32_t limit) {
    clnet_status status = CLNET_OK;
    const char *what = ndims == 3 ? "images" : "labels";
    uint8_t *bytes = NULL;
    size_t cap = 0;
    *data = NULL;
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f)
        FAIL(errno ? CLNET_ERR_IO : CLNET_ERR_OUT_OF_MEMORY, "%s: cannot open the IDX %s file: %s",
             path, what, errno ? strerror(errno) : "out of memory");
    gzbuffer(f, 1u << 17);

    uint8_t magic_bytes[4], dim_bytes[12];
    uint8_t *p = magic_bytes;
    size_t p_cap = sizeof magic_bytes;
    TRY(read_bytes(f, path, "the IDX header's 4 magic bytes", 0, &p, &p_cap, 4));
    uint32_t found = big_endian32(magic_bytes);
    if (found != magic) {
        const char *other = found == IDX_IMAGES_MAGIC   ? " (that is an IDX image file)"
                            : found == IDX_LABELS_MAGIC ? " (that is an IDX label file)"
                                                        : "";
        FAIL(CLNET_ERR_FORMAT, "%s: bad magic 0x%08x, want 0x%08x for IDX %s%s", path,
             (unsigned)found, (unsigned)magic, what, other);
    }
    p = dim_bytes;
    p_cap = 4 * (size_t)ndims;
    TRY(read_bytes(f, path, "the IDX header's dimensions", 4, &p, &p_cap, 4 * (size_t)ndims));
    static const char *names[3] = {"count", "height", "width"};
    uint64_t total = 1;
    for (int i = 0; i < ndims; i++) {
        dims[i] = big_endian32(dim_bytes + 4 * i);
        total *= dims[i];
        /* The count is bounded by the total below, not by IDX_MAX_SIDE:
         * larger sets than MNIST's 60000 exist. */
        uint32_t most = i > 0 ? IDX_MAX_SIDE : (uint32_t)INT_MAX;
        if (dims[i] == 0 || dims[i] > most)
            FAIL(CLNET_ERR_FORMAT, "%s: absurd dimension: the %s is %u (want 1 to %u)", path,
                 names[i], (unsigned)dims[i], (unsigned)most);
    }
    if (total > IDX_MAX_BYTES)
        FAIL(CLNET_ERR_FORMAT, "%s: absurd dimensions: %llu bytes of %s (at most %llu)", path,
             (unsigned long long)total, what, (unsigned long long)IDX_MAX_BYTES);

    int partial = limit && limit < dims[0];
    if (partial) total = total / dims[0] * limit;
    char promised[96];
    if (partial)
        snprintf(promised, sizeof promised, "the first %u of the %u %s", (unsigned)limit,
                 (unsigned)dims[0], what);
    else if (ndims == 3)
        snprintf(promised, sizeof promised, "the %u x %u x %u images the header promises",
                 (unsigned)dims[0], (unsigned)dims[1], (unsigned)dims[2]);
    else
        snprintf(promised, sizeof promised, "the %u labels the header promises", (unsigned)dims[0]);
    cap = total < FIRST_CAPACITY ? (size_t)total : FIRST_CAPACITY;
    bytes = clnet_malloc(cap);
    if (!bytes) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", path, cap);
    TRY(read_bytes(f, path, promised, 4 + 4 * (size_t)ndims, &bytes, &cap, (size_t)total));
    if (!partial) TRY(check_stream_end(f, path));
    *data = bytes;
    bytes = NULL;
cleanup:
    if (f) gzclose(f);
    free(bytes);
    return status;
}

/* clnet_dataset_load_idx, the first `limit` images (0: all) with every label
 * (the classes are those of the whole file). */
static clnet_status load_idx(clnet_dataset **out, const char *images_path, const char *labels_path,
                             int limit) {
    clnet_status status = CLNET_OK;
    clnet_dataset *ds = NULL;
    uint8_t *bytes = NULL;
    if (out) *out = NULL;
    if (!out || !images_path || !labels_path)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_dataset_load_idx: out, images_path and labels_path must not be NULL");
    ds = clnet_calloc(1, sizeof *ds);
    if (!ds) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a data set");
    uint32_t image_dims[3] = {0}, label_dims[1] = {0};
    TRY(read_idx(images_path, IDX_IMAGES_MAGIC, 3, image_dims, &ds->images, (uint32_t)limit));
    TRY(read_idx(labels_path, IDX_LABELS_MAGIC, 1, label_dims, &bytes, 0));
    if (image_dims[0] != label_dims[0])
        FAIL(CLNET_ERR_FORMAT, "%s has %u images but %s has %u labels: they must agree",
             images_path, (unsigned)image_dims[0], labels_path, (unsigned)label_dims[0]);
    int all = (int)image_dims[0];
    ds->count = limit && limit < all ? limit : all;
    ds->channels = 1;
    ds->height = (int)image_dims[1];
    ds->width = (int)image_dims[2];
    ds->rank = 3;
    ds->dims[0] = 1, ds->dims[1] = ds->height, ds->dims[2] = ds->width;
    ds->from_idx = 1;
    ds->labels = clnet_malloc(((size_t)all + 1) * sizeof *ds->labels);
    if (!ds->labels) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %d labels", all);
    for (int i = 0; i < all; i++) {
        ds->labels[i] = bytes[i];
        if (ds->labels[i] + 1 > ds->classes) ds->classes = ds->labels[i] + 1;
    }
    *out = ds;
    ds = NULL;
cleanup:
    free(bytes);
    clnet_dataset_free(ds);
    return status;
}

clnet_status clnet_dataset_load_idx(clnet_dataset **out, const char *images_path,
                                    const char *labels_path) {
    return load_idx(out, images_path, labels_path, 0);
}

/* ---- reading .npy files ----------------------------------------------------- */

/* What y gives the data set (y NULL: nothing, all labelled 0): labels (N,),
 * float targets, or class maps; float targets are taken from y. */
static clnet_status take_y(clnet_dataset *ds, clnet_npy *y, const char *y_path) {
    int floats = y && y->kind == 'f', maps = y && !floats && y->rank >= 2;
    ds->labels = clnet_calloc((size_t)ds->count, sizeof *ds->labels);
    if (!ds->labels)
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %d labels", ds->count);
    ds->unlabelled = !y || floats || maps;
    if (floats) ds->targets = y->data, y->data = NULL;
    if (maps) {
        clnet_status s = class_maps(ds, y, y_path);
        if (s != CLNET_OK) return s;
    }
    if (floats || maps) {
        ds->target_size = (int)(y->count / (size_t)y->shape[0]);
        ds->target_rank = y->rank - 1;
        for (int i = 0; i < ds->target_rank; i++) ds->target_dims[i] = (int)y->shape[i + 1];
    }
    for (int i = 0; y && !floats && !maps && i < ds->count; i++) {
        int64_t v = clnet_npy_int(y, (size_t)i);
        if (v < 0 || v >= INT32_MAX)
            return clnet_fail(CLNET_ERR_FORMAT,
                              "%s: label %d is %lld: labels are classes 0, 1, 2, ...", y_path, i,
                              (long long)v);
        ds->labels[i] = (int32_t)v;
        if (ds->labels[i] + 1 > ds->classes) ds->classes = ds->labels[i] + 1;
    }
    return CLNET_OK;
}

clnet_status clnet_dataset_load_npy(clnet_dataset **out, const char *x_path, const char *y_path) {
    clnet_status status = CLNET_OK;
    clnet_dataset *ds = NULL;
    clnet_npy x = {0}, y = {0};
    char shape[160];
    if (out) *out = NULL;
    if (!out || !x_path)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_dataset_load_npy: out and x_path must not be NULL");
    TRY(clnet_npy_read(x_path, &x));
    if (y_path) TRY(clnet_npy_read(y_path, &y));
    clnet_npy_shape_text(&x, shape, sizeof shape);
    if (!((x.kind == 'u' && x.size == 1) || (x.kind == 'f' && x.size == 4)))
        FAIL(CLNET_ERR_FORMAT,
             "%s: samples must be uint8 (divided by 255, as IDX images are) or float32 (used as "
             "they are), not %s%d",
             x_path,
             x.kind == 'f'   ? "float"
             : x.kind == 'b' ? "bool"
                             : "int",
             x.size * 8);
    if (x.rank < 2 || x.rank > 5)
        FAIL(CLNET_ERR_FORMAT,
             "%s: shape %s: want (N, C, spatial...) or (N, spatial...) with 1 to 3 spatial "
             "dimensions",
             x_path, shape);
    int floats = y_path && y.kind == 'f', maps = y_path && !floats && y.rank >= 2;
    if (y_path && y.kind != 'i' && y.kind != 'u' && !(floats && y.size == 4))
        FAIL(CLNET_ERR_FORMAT, "%s: labels must be integers, or targets float32, not %s%d", y_path,
             y.kind == 'f' ? "float" : "bool", y.size * 8);
    if (floats || maps) TRY(check_targets(&y, y_path, &x, x_path));
    if (y_path && !floats && !maps && (y.rank != 1 || y.shape[0] != x.shape[0])) {
        char yshape[160];
        clnet_npy_shape_text(&y, yshape, sizeof yshape);
        FAIL(CLNET_ERR_FORMAT,
             "%s has shape %s: want (%lld,), a label for each of the samples of %s", y_path, yshape,
             (long long)x.shape[0], x_path);
    }
    size_t sample = x.shape[0] ? x.count / (size_t)x.shape[0] : 0;
    if (x.shape[0] < 1 || x.shape[0] > INT32_MAX || sample < 1 || sample > INT32_MAX)
        FAIL(CLNET_ERR_FORMAT, "%s: shape %s: want 1 to 2^31 - 1 samples of 1 to 2^31 - 1 values",
             x_path, shape);
    ds = clnet_calloc(1, sizeof *ds);
    if (!ds) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a data set");
    ds->count = (int)x.shape[0];
    ds->rank = x.rank - 1;
    for (int i = 0; i < ds->rank; i++) ds->dims[i] = (int)x.shape[i + 1];
    /* (C, H, W) for clnet_dataset_shape: the last two dimensions, the rest in C */
    ds->width = ds->dims[ds->rank - 1];
    ds->height = ds->rank >= 2 ? ds->dims[ds->rank - 2] : 1;
    ds->channels = (int)(sample / ((size_t)ds->width * (size_t)ds->height));
    TRY(take_y(ds, y_path ? &y : NULL, y_path));
    if (x.kind == 'u')
        ds->images = x.data;
    else
        ds->floats = x.data;
    x.data = NULL;
    *out = ds;
    ds = NULL;
cleanup:
    clnet_npy_free(&x);
    clnet_npy_free(&y);
    clnet_dataset_free(ds);
    return status;
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* dir/name.gz if it exists, else dir/name if it exists; a heap string. */
static clnet_status find_data_file(const char *dir, const char *name, const char *hint,
                                   char **out) {
    clnet_status status = CLNET_OK;
    size_t n = strlen(dir) + strlen(name) + 8;
    char *path = clnet_malloc(n);
    if (!path) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a path");
    snprintf(path, n, "%s/%s.gz", dir, name);
    if (file_exists(path)) goto cleanup;
    snprintf(path, n, "%s/%s", dir, name);
    if (file_exists(path)) goto cleanup;
    FAIL(CLNET_ERR_IO, "data file %s/%s.gz not found (nor %s without .gz)%s", dir, name, name,
         hint);
cleanup:
    if (status != CLNET_OK) {
        free(path);
        path = NULL;
    }
    *out = path;
    return status;
}

clnet_status clnet_dataset_load(clnet_dataset **out, const char *dir, const char *split) {
    return clnet_dataset_load_first(out, dir, split, 0);
}

clnet_status clnet_dataset_load_first(clnet_dataset **out, const char *dir, const char *split,
                                      long limit) {
    clnet_status status = CLNET_OK;
    char *images = NULL, *labels = NULL;
    if (out) *out = NULL;
    if (!out || !split)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_dataset_load: out and split must not be NULL");
    if (limit < 0)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_dataset_load_first: limit %ld: want 0 (all) or more", limit);
    const char *prefix;
    if (strcmp(split, "train") == 0)
        prefix = "train";
    else if (strcmp(split, "test") == 0)
        prefix = "t10k";
    else
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "unknown data set split '%s' (want \"train\" or \"test\")",
             split);
    if (!dir) {
        const char *env = getenv("CLNET_DATA_DIR");
        dir = env && *env ? env : CLNET_DEFAULT_DATA_DIR;
    }
    const char *hint = strcmp(dir, CLNET_DEFAULT_DATA_DIR) == 0
                           ? ": install the data set with `apt-get install dataset-fashion-mnist`"
                             ", or set CLNET_DATA_DIR to a folder that holds it"
                           : "";
    struct stat st;
    if (stat(dir, &st) != 0) FAIL(CLNET_ERR_IO, "data folder %s: %s%s", dir, strerror(errno), hint);
    if (!S_ISDIR(st.st_mode)) FAIL(CLNET_ERR_IO, "data folder %s is not a folder%s", dir, hint);
    char name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    TRY(find_data_file(dir, name, hint, &images));
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    TRY(find_data_file(dir, name, hint, &labels));
    TRY(load_idx(out, images, labels, limit < INT_MAX ? (int)limit : 0));
cleanup:
    free(images);
    free(labels);
    return status;
}

int clnet_dataset_count(const clnet_dataset *ds) {
    return ds ? ds->count : 0;
}

void clnet_dataset_shape(const clnet_dataset *ds, int *channels, int *height, int *width) {
    if (channels) *channels = ds ? ds->channels : 0;
    if (height) *height = ds ? ds->height : 0;
    if (width) *width = ds ? ds->width : 0;
}

int clnet_dataset_classes(const clnet_dataset *ds) {
    return ds ? ds->classes : 0;
}

clnet_status clnet_dataset_truncate(clnet_dataset *ds, int n) {
    if (!ds) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_dataset_truncate: ds is NULL");
    if (n < 1 || n > ds->count)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_truncate: n is %d, want 1 to the %d samples there are", n,
                          ds->count);
    /* The bytes beyond n stay allocated: shrinking would save little and
     * could move the memory. */
    ds->count = n;
    return CLNET_OK;
}

int clnet_dataset_dims(const clnet_dataset *ds, int dims[4]) {
    for (int i = 0; i < 4; i++) dims[i] = ds && i < ds->rank ? ds->dims[i] : 0;
    return ds ? ds->rank : 0;
}

int clnet_dataset_labelled(const clnet_dataset *ds) {
    return ds && !ds->unlabelled;
}

int clnet_dataset_targets(const clnet_dataset *ds, int dims[4]) {
    for (int i = 0; dims && i < 4; i++)
        dims[i] = ds && i < ds->target_rank ? ds->target_dims[i] : 0;
    return ds ? ds->target_size : 0;
}

int clnet_dataset_target_classes(const clnet_dataset *ds) {
    return ds ? ds->target_classes : 0;
}

clnet_status clnet_dataset_targets_from_samples(clnet_dataset *ds) {
    if (!ds)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_targets_from_samples: ds is NULL");
    if (ds->samples_as_targets) return CLNET_OK;
    if (ds->target_size)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_targets_from_samples: the data set has %s of its own "
                          "(%d values a sample)",
                          ds->target_classes ? "classes per position" : "float targets",
                          ds->target_size);
    ds->samples_as_targets = 1;
    ds->target_size = ds->channels * ds->height * ds->width;
    ds->target_rank = ds->rank;
    for (int i = 0; i < 4; i++) ds->target_dims[i] = i < ds->rank ? ds->dims[i] : 0;
    return CLNET_OK;
}

int clnet_dataset_from_idx(const clnet_dataset *ds) {
    return ds ? ds->from_idx : 0;
}

void clnet_dataset_free(clnet_dataset *ds) {
    if (!ds) return;
    free(ds->images);
    free(ds->floats);
    free(ds->labels);
    free(ds->targets);
    free(ds);
}

/* ---- the order of an epoch ------------------------------------------------- */

#define GOLDEN 0x9E3779B97F4A7C15ull /* 2^64 / the golden ratio: splitmix64's step */

/* splitmix64's output function: a bijection of 64-bit words that mixes well. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *state) {
    return mix64(*state += GOLDEN);
}

typedef struct {
    uint64_t s[4];
} xoshiro256;

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna). */
static uint64_t xoshiro_next(xoshiro256 *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* The generator of one epoch: its state depends on (seed, epoch) only, so any
 * epoch's order can be made without making the ones before it. */
static xoshiro256 epoch_generator(uint64_t seed, int epoch) {
    uint64_t key = seed;
    key = splitmix64(&key) ^ (uint64_t)(uint32_t)epoch;
    xoshiro256 r;
    for (int i = 0; i < 4; i++) r.s[i] = splitmix64(&key);
    return r;
}

/* Uniform in [0, bound), bound >= 1, without modulo bias: draws below
 * 2^64 mod bound are thrown away. */
static uint32_t uniform_below(xoshiro256 *r, uint32_t bound) {
    uint64_t reject_below = (0 - (uint64_t)bound) % bound;
    for (;;) {
        uint64_t x = xoshiro_next(r);
        if (x >= reject_below) return (uint32_t)(x % bound);
    }
}

/* order (n) = the sample order of the epoch: file order, or a Fisher-Yates
 * shuffle of it. */
static void make_order(int32_t *order, int n, int shuffle, uint64_t seed, int epoch) {
    for (int i = 0; i < n; i++) order[i] = i;
    if (!shuffle) return;
    xoshiro256 r = epoch_generator(seed, epoch);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)uniform_below(&r, (uint32_t)i + 1);
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* ---- noise ------------------------------------------------------------------- */

#define NOISE_DOMAIN 0x6E6F697365ull /* "noise": apart from the shuffles of one seed */

/* The key of one sample's noise in one epoch: distinct (epoch, sample) give
 * distinct keys for a seed (mix64 is a bijection). */
static uint64_t noise_key(uint64_t seed, int epoch, int32_t sample) {
    uint64_t which = (uint64_t)(uint32_t)epoch << 32 | (uint32_t)sample;
    return mix64(mix64(seed ^ NOISE_DOMAIN) + GOLDEN * which);
}

/* z (n) ~ N(0, 1), value j of the sample whose key is `key`, times `scale`,
 * added to dst: a counter-based stream (splitmix64 at position j / 2 after
 * the key), each 64-bit word two uniforms, Box-Muller making them two
 * normals, the cosine's for the even value, the sine's for the odd one. */
static void add_noise(float *dst, size_t n, uint64_t key, float scale) {
    const double two_pi = 6.283185307179586;
    for (size_t pair = 0; 2 * pair < n; pair++) {
        uint64_t bits = mix64(key + GOLDEN * (pair + 1));
        double u1 = ((double)(bits >> 32) + 1.0) * 0x1p-32; /* (0, 1] */
        double u2 = (double)(bits & 0xffffffffu) * 0x1p-32; /* [0, 1) */
        double r = sqrt(-2.0 * log(u1));
        dst[2 * pair] += scale * (float)(r * cos(two_pi * u2));
        if (2 * pair + 1 < n) dst[2 * pair + 1] += scale * (float)(r * sin(two_pi * u2));
    }
}

/* ---- the loader --------------------------------------------------------------- */

typedef struct {
    int epoch;
    int64_t position;
} cursor;

typedef struct {
    float *images;   /* (batch, C, H, W) */
    int32_t *labels; /* (batch) */
    float *targets;  /* (batch, targets), or NULL: a data set without float targets */
} batch_buffer;

/* The serials of the batches every loader prepares, one count for the process. */
static atomic_uint_least64_t serials;

struct clnet_loader {
    const clnet_dataset *ds;
    clnet_loader_config cfg;
    int count;           /* samples, as when the loader was made */
    size_t sample_bytes; /* the values of a sample (C * H * W) */
    int batches_per_epoch;
    float normalised[256]; /* byte -> (byte / 255 - mean) / std */
    batch_buffer buffers[2];

    /* The caller's side (only clnet_loader_* calls touch these). */
    int held;             /* the buffer of the caller's current batch; -1 for none */
    uint64_t held_serial; /* its serial (clnet_loader_serial) */
    cursor next;          /* where the caller's next batch starts */

    /* The prefetch thread's own: the order of order_epoch. */
    int32_t *order;  /* (count) */
    int order_epoch; /* -1: none made yet */

    /* Shared, under lock. The caller requests one batch at a time into the
     * buffer it does not hold; the thread prepares it and posts the result. */
    pthread_t thread;
    int thread_started;
    int sync_ready; /* the lock and conditions exist */
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* caller -> thread: a request, or stop */
    pthread_cond_t finished; /* thread -> caller: a result */
    int stop;
    int requested; /* a request waits for the thread */
    int busy;      /* the thread is preparing a batch */
    int done;      /* a result waits for the caller */
    cursor job;    /* the requested batch */
    int job_buffer;
    clnet_batch result;
    uint64_t result_serial;
    int result_buffer;
    clnet_error_slot result_error;
    int fail_armed; /* the test hook */
    cursor fail_at;
};

/* Where the batch at c really starts: an epoch's end (or, with drop_last, a
 * tail shorter than a batch) means the start of the next epoch. */
static cursor settle(const clnet_loader *l, cursor c) {
    int64_t left = l->count - c.position;
    if (left <= 0 || (l->cfg.drop_last && left < l->cfg.batch)) {
        c.epoch = c.epoch == INT_MAX ? 0 : c.epoch + 1; /* after 2^31 epochs: no overflow */
        c.position = 0;
    }
    return c;
}

/* dst (sample_bytes) = sample `sample`, normalised: (x - mean) / std. */
static void normalise_sample(const clnet_loader *l, int32_t sample, float *dst) {
    size_t from = (size_t)sample * l->sample_bytes;
    const float *floats = l->ds->floats, mean = l->cfg.mean, std = l->cfg.std;
    if (l->ds->images) { /* bytes: through the table */
        const uint8_t *images = l->ds->images + from;
        for (size_t j = 0; j < l->sample_bytes; j++) dst[j] = l->normalised[images[j]];
    } else { /* float32 from .npy: as they are, then the mean and std */
        for (size_t j = 0; j < l->sample_bytes; j++) dst[j] = (floats[from + j] - mean) / std;
    }
}

/* Gathers the samples at positions [at, at + n) of the epoch's order and
 * converts their bytes to floats, adding the noise to the inputs; the
 * targets are the data set's, or the clean samples. Runs on the prefetch
 * thread. */
static clnet_status prepare_batch(clnet_loader *l, cursor at, int buffer, int fail,
                                  clnet_batch *out) {
    if (fail)
        return clnet_fail(CLNET_ERR_INTERNAL, "injected failure preparing epoch %d position %lld",
                          at.epoch, (long long)at.position);
    if (l->order_epoch != at.epoch) {
        make_order(l->order, l->count, l->cfg.shuffle, l->cfg.seed, at.epoch);
        l->order_epoch = at.epoch;
    }
    int64_t left = l->count - at.position;
    int n = left < l->cfg.batch ? (int)left : l->cfg.batch;
    batch_buffer *b = &l->buffers[buffer];
    size_t T = (size_t)l->ds->target_size;
    /* noise x + noise * z is (x - mean) / std + (noise / std) * z after normalisation */
    float scale = l->cfg.noise / l->cfg.std;
    for (int i = 0; i < n; i++) {
        int32_t sample = l->order[at.position + i];
        float *dst = b->images + (size_t)i * l->sample_bytes; /* (C, H, W) */
        normalise_sample(l, sample, dst);
        if (l->ds->samples_as_targets) /* the clean sample, before its noise */
            memcpy(b->targets + (size_t)i * T, dst, T * sizeof(float));
        else if (T)
            memcpy(b->targets + (size_t)i * T, l->ds->targets + (size_t)sample * T, T * 4);
        if (l->cfg.noise > 0)
            add_noise(dst, l->sample_bytes, noise_key(l->cfg.noise_seed, at.epoch, sample), scale);
        b->labels[i] = l->ds->labels[sample];
    }
    *out = (clnet_batch){.images = b->images,
                         .labels = b->labels,
                         .targets = b->targets,
                         .n = n,
                         .epoch = at.epoch,
                         .position = at.position};
    return CLNET_OK;
}

static void *prefetch_thread(void *arg) {
    clnet_loader *l = arg;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (!l->stop && !l->requested) pthread_cond_wait(&l->wake, &l->lock);
        if (l->stop) break;
        cursor at = l->job;
        int buffer = l->job_buffer;
        int fail =
            l->fail_armed && l->fail_at.epoch == at.epoch && l->fail_at.position == at.position;
        if (fail) l->fail_armed = 0;
        l->requested = 0;
        l->busy = 1;
        pthread_mutex_unlock(&l->lock);

        clnet_batch result = {0};
        clnet_error_slot error;
        clnet_error_save(&error, prepare_batch(l, at, buffer, fail, &result));

        pthread_mutex_lock(&l->lock);
        l->busy = 0;
        l->done = 1;
        l->result = result;
        l->result_serial = atomic_fetch_add(&serials, 1) + 1;
        l->result_buffer = buffer;
        l->result_error = error;
        pthread_cond_broadcast(&l->finished);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* Asks the thread for the batch at c, into the buffer the caller does not
 * hold. Called with the lock held. */
static void request(clnet_loader *l, cursor c) {
    l->job = c;
    l->job_buffer = l->held == 0 ? 1 : 0;
    l->requested = 1;
    pthread_cond_signal(&l->wake);
}

/* Forgets a posted result that the caller will not take. Lock held. */
static void discard_result(clnet_loader *l) {
    if (!l->done) return;
    l->done = 0;
    free(l->result_error.message);
    l->result_error = (clnet_error_slot){0};
}

clnet_status clnet_loader_create(clnet_loader **out, const clnet_dataset *ds,
                                 const clnet_loader_config *cfg) {
    clnet_status status = CLNET_OK;
    clnet_loader *l = NULL;
    if (out) *out = NULL;
    if (!out || !ds || !cfg)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_loader_create: out, ds and cfg must not be NULL");
    if (cfg->batch < 1)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_loader_create: batch is %d, want at least 1",
             cfg->batch);
    if (!isfinite(cfg->mean) || !isfinite(cfg->std) || cfg->std == 0.0f)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_loader_create: mean %g and std %g must be finite and std not 0",
             (double)cfg->mean, (double)cfg->std);
    if (!(cfg->noise >= 0.0f) || !isfinite(cfg->noise))
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_loader_create: noise %g must be finite and 0 or more (a standard deviation)",
             (double)cfg->noise);
    if (cfg->drop_last && cfg->batch > ds->count)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_loader_create: with drop_last, batch %d larger than the %d samples leaves no "
             "batch in an epoch",
             cfg->batch, ds->count);

    l = clnet_calloc(1, sizeof *l);
    if (!l) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a loader");
    l->ds = ds;
    l->cfg = *cfg;
    l->cfg.shuffle = cfg->shuffle != 0;
    l->cfg.drop_last = cfg->drop_last != 0;
    l->count = ds->count;
    l->sample_bytes = (size_t)ds->channels * (size_t)ds->height * (size_t)ds->width;
    int64_t per_epoch = l->cfg.drop_last ? (int64_t)l->count / l->cfg.batch
                                         : ((int64_t)l->count + l->cfg.batch - 1) / l->cfg.batch;
    l->batches_per_epoch = (int)per_epoch;
    for (int b = 0; b < 256; b++) l->normalised[b] = ((float)b / 255.0f - cfg->mean) / cfg->std;
    l->held = -1;
    l->order_epoch = -1;

    size_t samples = (size_t)(cfg->batch < l->count ? cfg->batch : l->count);
    for (int i = 0; i < 2; i++) {
        l->buffers[i].images = clnet_malloc(samples * l->sample_bytes * sizeof(float));
        l->buffers[i].labels = clnet_malloc(samples * sizeof(int32_t));
        size_t T = (size_t)ds->target_size;
        if (T) l->buffers[i].targets = clnet_malloc(samples * T * sizeof(float));
        if (!l->buffers[i].images || !l->buffers[i].labels || (T && !l->buffers[i].targets))
            FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for two batches of %zu samples", samples);
    }
    l->order = clnet_malloc((size_t)l->count * sizeof *l->order);
    if (!l->order)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for the order of %d samples", l->count);

    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    pthread_cond_init(&l->finished, NULL);
    l->sync_ready = 1;
    clnet_count_thread();
    int err = pthread_create(&l->thread, NULL, prefetch_thread, l);
    if (err) FAIL(CLNET_ERR_THREAD, "cannot start the loader's prefetch thread: %s", strerror(err));
    l->thread_started = 1;

    pthread_mutex_lock(&l->lock);
    request(l, l->next);
    pthread_mutex_unlock(&l->lock);
    *out = l;
    l = NULL;
cleanup:
    clnet_loader_free(l);
    return status;
}

clnet_status clnet_loader_next(clnet_loader *l, clnet_batch *out) {
    if (!l || !out)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_loader_next: l and out must not be NULL");
    pthread_mutex_lock(&l->lock);
    /* After a failure nothing is on its way: ask again. */
    if (!l->done && !l->requested && !l->busy) request(l, l->next);
    while (!l->done) pthread_cond_wait(&l->finished, &l->lock);
    l->done = 0;
    clnet_batch result = l->result;
    clnet_error_slot error = l->result_error;
    l->result_error = (clnet_error_slot){0};
    if (error.status == CLNET_OK) {
        l->held = l->result_buffer;
        l->held_serial = l->result_serial;
        l->next = settle(l, (cursor){result.epoch, result.position + result.n});
        request(l, l->next);
    }
    pthread_mutex_unlock(&l->lock);
    if (error.status != CLNET_OK) return clnet_error_restore(&error);
    *out = result;
    return CLNET_OK;
}

int clnet_loader_peek(clnet_loader *l, clnet_batch *out, uint64_t *serial) {
    pthread_mutex_lock(&l->lock);
    while (!l->done && (l->requested || l->busy)) pthread_cond_wait(&l->finished, &l->lock);
    int ready = l->done && l->result_error.status == CLNET_OK;
    if (ready) {
        *out = l->result;
        *serial = l->result_serial;
    }
    pthread_mutex_unlock(&l->lock);
    return ready;
}

uint64_t clnet_loader_serial(const clnet_loader *l) {
    return l ? l->held_serial : 0;
}

clnet_status clnet_loader_seek(clnet_loader *l, int epoch, int64_t position) {
    if (!l) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_loader_seek: l is NULL");
    if (epoch < 0 || position < 0 || position >= l->count)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_loader_seek: epoch %d position %lld is out of range (want epoch "
                          ">= 0 and 0 <= position < %d)",
                          epoch, (long long)position, l->count);
    pthread_mutex_lock(&l->lock);
    l->requested = 0;
    while (l->busy) pthread_cond_wait(&l->finished, &l->lock);
    discard_result(l);
    l->next = settle(l, (cursor){epoch, position});
    request(l, l->next);
    pthread_mutex_unlock(&l->lock);
    return CLNET_OK;
}

int clnet_loader_batches_per_epoch(const clnet_loader *l) {
    return l ? l->batches_per_epoch : 0;
}

void clnet_loader_inject_failure(clnet_loader *l, int epoch, int64_t position) {
    pthread_mutex_lock(&l->lock);
    l->fail_armed = 1;
    l->fail_at = (cursor){epoch, position};
    pthread_mutex_unlock(&l->lock);
}

void clnet_loader_free(clnet_loader *l) {
    if (!l) return;
    if (l->thread_started) {
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_cond_signal(&l->wake);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->thread, NULL);
        discard_result(l);
    }
    if (l->sync_ready) {
        pthread_mutex_destroy(&l->lock);
        pthread_cond_destroy(&l->wake);
        pthread_cond_destroy(&l->finished);
    }
    for (int i = 0; i < 2; i++) {
        free(l->buffers[i].images);
        free(l->buffers[i].labels);
        free(l->buffers[i].targets);
    }
    free(l->order);
    free(l);
}
