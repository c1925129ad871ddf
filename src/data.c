/* Data sets: what every reader fills (data.h), where Fashion-MNIST's or
 * CIFAR's files are found, and what a data set says of itself. The readers:
 * IDX (data_idx.c), .npy (data_npy.c), CIFAR's binary batches (data_cifar.c);
 * the loader that batches them: loader.c. */
#include "alloc.h"
#include "data.h"
#include "env.h"
#include "error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    int cifar = clnet_cifar_version(dir);
    if (cifar) {
        TRY(clnet_dataset_load_cifar(out, dir, cifar, train, limit_int));
        goto cleanup;
    }
    char name[64], images_hint[512];
    /* A folder without the images holds no layout of ours: name them all. */
    snprintf(images_hint, sizeof images_hint,
             "; nor CIFAR-10's binary files (data_batch_1.bin ... data_batch_5.bin, "
             "test_batch.bin) nor CIFAR-100's (train.bin, test.bin)%s",
             hint);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    TRY(find_data_file(dir, name, images_hint, &images));
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    TRY(find_data_file(dir, name, hint, &labels));
    TRY(clnet_dataset_load_idx_first(out, images, labels, limit_int));
cleanup:
    free(images);
    free(labels);
    clnet_env_free(&env);
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

void clnet_dataset_free(clnet_dataset *ds) {
    if (!ds) return;
    free(ds->images);
    free(ds->floats);
    free(ds->labels);
    free(ds->targets);
    for (int k = 0; ds->class_names && k < ds->classes; k++) free(ds->class_names[k]);
    free(ds->class_names);
    free(ds);
}
