/* Data sets: what every reader fills (data.h), where Fashion-MNIST's or
 * CIFAR's files are found, and what a data set says of itself. The readers:
 * IDX (data_idx.c), .npy (data_npy.c), CIFAR's binary batches (data_cifar.c);
 * the loader that batches them: loader.c. */
#include "alloc.h"
#include "data.h"
#include "env.h"
#include "error.h"
#include "random.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *clnet_copy_text(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = clnet_malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

char *clnet_path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = clnet_malloc(n);
    if (path) snprintf(path, n, "%s/%s", dir, name);
    return path;
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
    clnet_dataset_options opt = {.limit = limit};
    return clnet_dataset_load_with(out, dir, split, &opt);
}

/* dir/split (train; test, else val), when it is an image folder: a heap string, else NULL. */
static char *image_folder_of(const char *dir, int train) {
    static const char *const roots[] = {"train", "test", "val"};
    for (int i = train ? 0 : 1; i < (train ? 1 : 3); i++) {
        char *root = clnet_path_join(dir, roots[i]);
        if (!root) return NULL;
        if (clnet_is_image_folder(root)) return root;
        free(root);
    }
    return NULL;
}

clnet_status clnet_dataset_load_with(clnet_dataset **out, const char *dir, const char *split,
                                     const clnet_dataset_options *options) {
    clnet_status status = CLNET_OK;
    clnet_dataset_options none = {0};
    const clnet_dataset_options *opt = options ? options : &none;
    long limit = opt->limit;
    char *folder = NULL;
    char *images = NULL, *labels = NULL;
    clnet_env env = {0}; /* CLNET_DATA_DIR, when no dir is given */
    if (out) *out = NULL;
    if (!out || !split)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_dataset_load: out and split must not be NULL");
    if (limit < 0)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_dataset_load_first: limit %ld: want 0 (all) or more", limit);
    int train = strcmp(split, "train") == 0;
    if (!train && strcmp(split, "test") != 0)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "unknown data set split '%s' (want \"train\" or \"test\")",
             split);
    const char *prefix = train ? "train" : "t10k";
    if (!dir) {
        TRY(clnet_env_read(&env));
        dir = env.data_dir && *env.data_dir ? env.data_dir : CLNET_DEFAULT_DATA_DIR;
    }
    const char *hint = strcmp(dir, CLNET_DEFAULT_DATA_DIR) == 0
                           ? ": install the data set with `apt-get install dataset-fashion-mnist`"
                             ", or set CLNET_DATA_DIR to a folder that holds it"
                           : "";
    struct stat st;
    if (stat(dir, &st) != 0) FAIL(CLNET_ERR_IO, "data folder %s: %s%s", dir, strerror(errno), hint);
    if (!S_ISDIR(st.st_mode)) FAIL(CLNET_ERR_IO, "data folder %s is not a folder%s", dir, hint);
    int limit_int = limit < INT_MAX ? (int)limit : 0;
    folder = image_folder_of(dir, train);
    if (folder) {
        TRY(clnet_dataset_load_folder(out, folder, opt));
        goto cleanup;
    }
    int cifar = clnet_cifar_version(dir);
    if (cifar) {
        TRY(clnet_dataset_load_cifar(out, dir, cifar, train, limit_int));
        goto cleanup;
    }
    char name[64], images_hint[512];
    /* A folder without the images holds no layout of ours: name them all. */
    snprintf(images_hint, sizeof images_hint,
             "; nor CIFAR-10's binary files (data_batch_1.bin ... data_batch_5.bin, "
             "test_batch.bin) nor CIFAR-100's (train.bin, test.bin) nor an image folder "
             "(%s/CLASS/IMAGE.png)%s",
             train ? "train" : "test", hint);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    TRY(find_data_file(dir, name, images_hint, &images));
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    TRY(find_data_file(dir, name, hint, &labels));
    TRY(clnet_dataset_load_idx_first(out, images, labels, limit_int));
cleanup:
    free(folder);
    free(images);
    free(labels);
    clnet_env_free(&env);
    return status;
}

int clnet_dataset_skipped(const clnet_dataset *ds) {
    return ds ? ds->skipped_count : 0;
}

const char *clnet_dataset_skipped_reason(const clnet_dataset *ds, int k) {
    return ds && k >= 0 && k < ds->skipped_count ? ds->skipped[k] : NULL;
}

const char *clnet_dataset_file(const clnet_dataset *ds, int k) {
    return ds && ds->files && k >= 0 && k < ds->count ? ds->files[k] : NULL;
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

const char *clnet_dataset_class_name(const clnet_dataset *ds, int k) {
    return ds && ds->class_names && k >= 0 && k < ds->classes ? ds->class_names[k] : NULL;
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

/* A new data set of ds's samples rows[0..n), in that order: every field copied. */
static clnet_status take_rows(const clnet_dataset *ds, const int32_t *rows, int n,
                              clnet_dataset **out) {
    clnet_status status = CLNET_OK;
    clnet_dataset *d = clnet_calloc(1, sizeof *d);
    if (!d) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a data set");
    *d = *ds;
    d->count = n;
    d->images = NULL, d->floats = NULL, d->labels = NULL, d->targets = NULL, d->files = NULL;
    d->class_names = NULL, d->skipped = NULL, d->skipped_count = 0, d->file_count = 0;
    size_t sample = (size_t)ds->channels * ds->height * ds->width, T = (size_t)ds->target_size;
    size_t rows_n = n > 0 ? (size_t)n : 1;
    d->labels = clnet_malloc(rows_n * sizeof *d->labels);
    if (ds->images) d->images = clnet_malloc(rows_n * sample);
    if (ds->floats) d->floats = clnet_malloc(rows_n * sample * sizeof *d->floats);
    if (ds->targets) d->targets = clnet_malloc(rows_n * T * sizeof *d->targets);
    if (ds->files) d->files = clnet_calloc(rows_n, sizeof *d->files);
    if (ds->class_names) d->class_names = clnet_calloc((size_t)ds->classes, sizeof(char *));
    if (!d->labels || (ds->images && !d->images) || (ds->floats && !d->floats) ||
        (ds->targets && !d->targets) || (ds->files && !d->files) ||
        (ds->class_names && !d->class_names))
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a data set of %d samples", n);
    if (ds->files) d->file_count = n;
    for (int i = 0; i < n; i++) {
        size_t r = (size_t)rows[i];
        d->labels[i] = ds->labels[r];
        if (d->images) memcpy(d->images + i * sample, ds->images + r * sample, sample);
        if (d->floats)
            memcpy(d->floats + i * sample, ds->floats + r * sample, sample * sizeof *d->floats);
        if (d->targets) memcpy(d->targets + i * T, ds->targets + r * T, T * sizeof *d->targets);
        if (d->files && !(d->files[i] = clnet_copy_text(ds->files[r])))
            FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a path");
    }
    for (int k = 0; d->class_names && k < ds->classes; k++)
        if (!(d->class_names[k] = clnet_copy_text(ds->class_names[k])))
            FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a class name");
    /* a folder of many sizes may hold one size in a part: still taken as many (a resize is
     * asked for), with the whole folder's first size */
    if (ds->mixed_sizes) d->mixed_sizes = -1;
    *out = d;
    d = NULL;
cleanup:
    clnet_dataset_free(d);
    return status;
}

clnet_status clnet_dataset_split(const clnet_dataset *ds, double fraction, uint64_t seed,
                                 clnet_dataset **rest, clnet_dataset **held) {
    clnet_status status = CLNET_OK;
    int32_t *order = NULL, *rows = NULL;
    uint8_t *is_held = NULL;
    if (rest) *rest = NULL;
    if (held) *held = NULL;
    if (!ds || !rest || !held)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_dataset_split: ds, rest and held must be given");
    if (!(fraction > 0.0 && fraction < 1.0))
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_dataset_split: fraction %g, want 0 < f < 1",
             fraction);
    int n = ds->count, h = (int)llround(fraction * n);
    if (h < 1 || h >= n)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_dataset_split: %g of %d samples holds %d out, leaving %d: want at least one "
             "on each side",
             fraction, n, h, n - h);
    order = clnet_malloc((size_t)n * sizeof *order);
    rows = clnet_malloc((size_t)n * sizeof *rows);
    is_held = clnet_calloc((size_t)n, 1);
    if (!order || !rows || !is_held)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory splitting %d samples", n);
    for (int i = 0; i < n; i++) order[i] = i;
    clnet_xoshiro r = clnet_xoshiro_from(clnet_mix64(seed ^ 0x76616C6964ull)); /* "valid" */
    for (int i = 0; i < h; i++) { /* the first h of a Fisher-Yates shuffle */
        int j = i + (int)clnet_uniform_below(&r, (uint32_t)(n - i));
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < h; i++) is_held[order[i]] = 1;
    int a = 0, b = 0; /* each part in the data set's order */
    for (int i = 0; i < n; i++)
        if (is_held[i]) order[b++] = i;
    for (int i = 0; i < n; i++)
        if (!is_held[i]) rows[a++] = i;
    TRY(take_rows(ds, rows, a, rest));
    TRY(take_rows(ds, order, b, held));
cleanup:
    if (status != CLNET_OK && rest && *rest) clnet_dataset_free(*rest), *rest = NULL;
    free(order);
    free(rows);
    free(is_held);
    return status;
}

void clnet_dataset_free(clnet_dataset *ds) {
    if (!ds) return;
    free(ds->images);
    free(ds->floats);
    free(ds->labels);
    free(ds->targets);
    for (int i = 0; ds->files && i < ds->file_count; i++) free(ds->files[i]);
    free(ds->files);
    for (int i = 0; i < ds->skipped_count; i++) free(ds->skipped[i]);
    free(ds->skipped);
    for (int k = 0; ds->class_names && k < ds->classes; k++) free(ds->class_names[k]);
    free(ds->class_names);
    free(ds);
}
