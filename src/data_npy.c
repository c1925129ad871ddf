/* Data sets from .npy files: samples of uint8 or float32, with labels,
 * float targets or a class per position (clnet_dataset_load_npy). */
#include "alloc.h"
#include "data.h"
#include "error.h"
#include "npy.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

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

/* Samples x: uint8 or float32, (N, C, spatial...) or (N, spatial...). */
static clnet_status check_samples(const clnet_npy *x, const char *x_path) {
    char shape[160];
    clnet_npy_shape_text(x, shape, sizeof shape);
    if (!((x->kind == 'u' && x->size == 1) || (x->kind == 'f' && x->size == 4)))
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: samples must be uint8 (divided by 255, as IDX images are) or "
                          "float32 (used as they are), not %s%d",
                          x_path,
                          x->kind == 'f'   ? "float"
                          : x->kind == 'b' ? "bool"
                                           : "int",
                          x->size * 8);
    if (x->rank < 2 || x->rank > 5)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: shape %s: want (N, C, spatial...) or (N, spatial...) with 1 to 3 "
                          "spatial dimensions",
                          x_path, shape);
    size_t sample = x->shape[0] ? x->count / (size_t)x->shape[0] : 0;
    if (x->shape[0] < 1 || x->shape[0] > INT32_MAX || sample < 1 || sample > INT32_MAX)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: shape %s: want 1 to 2^31 - 1 samples of 1 to 2^31 - 1 values",
                          x_path, shape);
    return CLNET_OK;
}

/* y for the samples x: labels (N,) of integers, float32 targets, or
 * integer class maps (N, spatial...). */
static clnet_status check_y(const clnet_npy *y, const char *y_path, const clnet_npy *x,
                            const char *x_path) {
    int floats = y->kind == 'f', maps = !floats && y->rank >= 2;
    if (y->kind != 'i' && y->kind != 'u' && !(floats && y->size == 4))
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: labels must be integers, or targets float32, not %s%d", y_path,
                          floats ? "float" : "bool", y->size * 8);
    if (floats || maps) return check_targets(y, y_path, x, x_path);
    if (y->rank != 1 || y->shape[0] != x->shape[0]) {
        char shape[160];
        clnet_npy_shape_text(y, shape, sizeof shape);
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s has shape %s: want (%lld,), a label for each of the samples of %s",
                          y_path, shape, (long long)x->shape[0], x_path);
    }
    return CLNET_OK;
}

clnet_status clnet_dataset_load_npy(clnet_dataset **out, const char *x_path, const char *y_path) {
    clnet_status status = CLNET_OK;
    clnet_dataset *ds = NULL;
    clnet_npy x = {0}, y = {0};
    if (out) *out = NULL;
    if (!out || !x_path)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_dataset_load_npy: out and x_path must not be NULL");
    TRY(clnet_npy_read(x_path, &x));
    if (y_path) TRY(clnet_npy_read(y_path, &y));
    TRY(check_samples(&x, x_path));
    if (y_path) TRY(check_y(&y, y_path, &x, x_path));
    ds = clnet_calloc(1, sizeof *ds);
    if (!ds) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a data set");
    ds->count = (int)x.shape[0];
    ds->rank = x.rank - 1;
    for (int i = 0; i < ds->rank; i++) ds->dims[i] = (int)x.shape[i + 1];
    /* (C, H, W) for clnet_dataset_shape: the last two dimensions, the rest in C */
    ds->width = ds->dims[ds->rank - 1];
    ds->height = ds->rank >= 2 ? ds->dims[ds->rank - 2] : 1;
    ds->channels = (int)(x.count / (size_t)x.shape[0] / ((size_t)ds->width * (size_t)ds->height));
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
