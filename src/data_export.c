/* A data set written out as an image folder (root/CLASS/INDEX.png): its samples through a
 * loader (so any data set clnet reads, with any evaluation transforms), rounded back to
 * bytes and encoded by libpng or libjpeg (image_write.c). */
#include "alloc.h"
#include "data.h"
#include "error.h"
#include "image.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXPORT_BATCH 256

static clnet_status make_dir(const char *path) {
    if (mkdir(path, 0777) == 0 || errno == EEXIST) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return CLNET_OK;
        return clnet_fail(CLNET_ERR_IO, "%s: exists and is not a folder", path);
    }
    return clnet_fail(CLNET_ERR_IO, "%s: cannot make the folder: %s", path, strerror(errno));
}

/* 1 when every class has a name fit for a folder and the names sort in label order (then the
 * folders are read back with the same labels); else the folders are named by number. */
static int names_as_folders(const clnet_dataset *ds) {
    for (int k = 0; k < ds->classes; k++) {
        const char *name = clnet_dataset_class_name(ds, k);
        if (!name || !*name || name[0] == '.' || strchr(name, '/')) return 0;
        if (k > 0 && strcmp(clnet_dataset_class_name(ds, k - 1), name) >= 0) return 0;
    }
    return ds->classes > 0;
}

static int digits(long n) {
    int d = 1;
    for (; n >= 10; n /= 10) d++;
    return d;
}

/* n (>= 0) in `width` decimal digits, zero-padded, into text (room for 24). */
static void padded(char *text, long n, int width) {
    char tmp[24];
    int len = 0;
    do tmp[len++] = (char)('0' + n % 10), n /= 10;
    while (n && len < 20);
    int zeros = width - len > 0 ? width - len : 0;
    if (zeros + len > 23) zeros = 23 - len;
    memset(text, '0', (size_t)zeros);
    for (int i = 0; i < len; i++) text[zeros + i] = tmp[len - 1 - i];
    text[zeros + len] = '\0';
}

/* The class folders root/NAME, or root/00, root/01 ... (numbers padded to sort in order). */
static clnet_status class_folders(const clnet_dataset *ds, const char *root, char ***out) {
    clnet_status status = CLNET_OK;
    int named = names_as_folders(ds), classes = ds->classes > 0 ? ds->classes : 1;
    char **dirs = clnet_calloc((size_t)classes, sizeof *dirs);
    if (!dirs) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %d folder names", classes);
    for (int k = 0; k < classes; k++) {
        size_t n = strlen(root) + (named ? strlen(clnet_dataset_class_name(ds, k)) : 16) + 2;
        dirs[k] = clnet_malloc(n);
        if (!dirs[k]) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a folder name");
        if (named)
            snprintf(dirs[k], n, "%s/%s", root, clnet_dataset_class_name(ds, k));
        else {
            char number[24];
            padded(number, k, digits(classes - 1));
            snprintf(dirs[k], n, "%s/%s", root, number);
        }
        TRY(make_dir(dirs[k]));
    }
cleanup:
    *out = dirs;
    return status;
}

/* CLNET_ERR_INVALID_ARGUMENT unless ds holds labelled images of 1 or 3 channels and format is
 * one clnet writes. */
static clnet_status check_exportable(const clnet_dataset *ds, const char *root,
                                     const char *format) {
    if (!ds || !root || !format)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_export: ds, root and format must be given");
    if (strcmp(format, "png") != 0 && strcmp(format, "jpg") != 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_export: format '%s', want png or jpg", format);
    if (ds->target_size || ds->unlabelled)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_export: an image folder holds labelled images; this "
                          "data set has %s",
                          ds->unlabelled ? "no labels" : "float targets");
    if (ds->rank != 2 && ds->rank != 3 && !ds->from_idx)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_export: samples of %d dimensions are no images", ds->rank);
    if (ds->channels != 1 && ds->channels != 3)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_export: %d channels: PNG and JPEG hold 1 (gray) or 3 "
                          "(RGB)",
                          ds->channels);
    return CLNET_OK;
}

/* img (H, W, C) bytes = x (C, H, W) floats in [0, 1], rounded and clamped. */
static void to_bytes(const float *x, clnet_image *img) {
    size_t plane = (size_t)img->width * (size_t)img->height, c = (size_t)img->channels;
    for (size_t ch = 0; ch < c; ch++)
        for (size_t j = 0; j < plane; j++) {
            float v = x[ch * plane + j] * 255.0f;
            v = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
            img->pixels[j * c + ch] = (uint8_t)lrintf(v);
        }
}

/* Where sample `sample` of class folder dir goes: dir/NUMBER.format, NUMBER `width` digits. */
static clnet_status sample_path(char *path, size_t cap, const char *dir, int sample, int width,
                                const char *format) {
    char number[24];
    padded(number, sample, width);
    if (snprintf(path, cap, "%s/%s.%s", dir, number, format) >= (int)cap)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: a path over %zu bytes", dir, cap);
    return CLNET_OK;
}

clnet_status clnet_dataset_export(const clnet_dataset *ds, const char *root, const char *format,
                                  int quality, const clnet_transforms *transforms) {
    clnet_status status = CLNET_OK;
    clnet_loader *l = NULL;
    char **dirs = NULL;
    clnet_image img = {0};
    TRY(check_exportable(ds, root, format));
    clnet_loader_config cfg = {.batch = EXPORT_BATCH, .mean = 0, .std = 1};
    if (transforms) cfg.transforms = *transforms;
    TRY(clnet_loader_create(&l, ds, &cfg));
    int c = 0, h = 0, w = 0;
    clnet_loader_shape(l, &c, &h, &w);
    TRY(make_dir(root));
    TRY(class_folders(ds, root, &dirs));
    img = (clnet_image){.width = w, .height = h, .channels = c};
    img.pixels = clnet_malloc((size_t)w * (size_t)h * (size_t)c);
    if (!img.pixels) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a %dx%d image", w, h);
    int width = digits(ds->count > 0 ? ds->count - 1 : 0);
    for (int done = 0; done < ds->count;) {
        clnet_batch b;
        TRY(clnet_loader_next(l, &b));
        for (int s = 0; s < b.n; s++) {
            char path[4096];
            to_bytes(b.images + (size_t)s * w * h * c, &img);
            TRY(sample_path(path, sizeof path, dirs[b.labels[s]], done + s, width, format));
            TRY(clnet_image_write_file(path, &img, quality));
        }
        done += b.n;
    }
cleanup:
    for (int k = 0; dirs && k < (ds && ds->classes > 0 ? ds->classes : 1); k++) free(dirs[k]);
    free(dirs);
    clnet_image_free(&img);
    clnet_loader_free(l);
    return status;
}
