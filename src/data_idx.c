/* Data sets in the IDX layout (MNIST, Fashion-MNIST), read through zlib so
 * that gzip and raw files both work. Images stay bytes in memory and become
 * floats one batch at a time (loader.c). */
#include "alloc.h"
#include "data.h"
#include "error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IDX_IMAGES_MAGIC 0x00000803u /* unsigned bytes, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u /* unsigned bytes, 1 dimension */
#define IDX_MAX_SIDE     65535u
#define IDX_MAX_BYTES    (1ull << 31)
#define READ_CHUNK       (1u << 30) /* gzread takes an unsigned length */
#define FIRST_CAPACITY   (16u << 20)

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

clnet_status clnet_dataset_load_idx_first(clnet_dataset **out, const char *images_path,
                                          const char *labels_path, int limit) {
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
    return clnet_dataset_load_idx_first(out, images_path, labels_path, 0);
}
