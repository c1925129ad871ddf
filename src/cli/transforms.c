/* --resize, --center-crop and --augment: the loader's image transforms from the command line. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_size(const char *option, const char *text, int *h, int *w) {
    char *end = NULL;
    long a = strtol(text, &end, 10), b = a;
    if (end != text && *end == 'x') {
        const char *second = end + 1;
        b = strtol(second, &end, 10);
        if (end == second) b = 0;
    }
    if (end == text || *end || a < 1 || b < 1 || a > 16384 || b > 16384) {
        fprintf(stderr, "clnet: %s %s: want a size N or HxW, each side 1 to 16384\n", option, text);
        return 2;
    }
    *h = (int)a, *w = (int)b;
    return 0;
}

/* One item of --augment: flip, crop=PAD, resized-crop or resized-crop=MIN. */
static int read_augment(const char *item, clnet_transforms *t) {
    const char *value = strchr(item, '=');
    size_t key = value ? (size_t)(value - item) : strlen(item);
    double d = 0;
    if (key == 4 && strncmp(item, "flip", 4) == 0 && !value) {
        t->flip = 1;
        return 0;
    }
    if (key == 4 && strncmp(item, "crop", 4) == 0 && value) {
        long pad = 0;
        if (!cli_int("--augment crop", value + 1, 0, 1024, &pad)) return 2;
        t->pad = (int)pad;
        return 0;
    }
    if (key == 12 && strncmp(item, "resized-crop", 12) == 0) {
        if (value && !cli_float("--augment resized-crop", value + 1, 1e-6, 1, &d)) return 2;
        t->resized_crop_min = value ? (float)d : 0.08f; /* torchvision's default scale */
        return 0;
    }
    fprintf(stderr,
            "clnet: --augment: '%s' is none of flip, crop=PAD (a random crop after padding "
            "PAD pixels), resized-crop[=MIN] (a random window of MIN to all of the area)\n",
            item);
    return 2;
}

int cli_transforms(const char *resize, const char *center_crop, const char *augment,
                   clnet_transforms *t) {
    *t = (clnet_transforms){0};
    int rc = 0;
    if (resize) rc = cli_size("--resize", resize, &t->resize_height, &t->resize_width);
    if (!rc && center_crop)
        rc = cli_size("--center-crop", center_crop, &t->crop_height, &t->crop_width);
    if (rc || !augment || !*augment) return rc;
    char *items = strdup(augment), *save = NULL;
    if (!items) return 1;
    for (char *item = strtok_r(items, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save))
        rc = read_augment(item, t);
    free(items);
    if (!rc && t->resized_crop_min > 0 && !resize && !center_crop) {
        fprintf(stderr, "clnet: --augment resized-crop needs the size it resizes to: --resize N "
                        "(or --center-crop N)\n");
        rc = 2;
    }
    return rc;
}
