/* The loader alone: how many images a second it decodes, transforms and normalises from a data
 * set folder (an image folder, CIFAR, IDX), with no device in the way:
 *
 *   build/bench/bench_loader DIR [--resize N] [--pad P] [--flip] [--threads T] [--batch B]
 *                            [--batches N]
 *
 * It reads DIR's training split (clnet_dataset_load_with), makes a shuffling loader with
 * those transforms and normalisation to [0, 1], takes one batch to warm up, then times
 * N more (default 40) and prints
 *   loader: images_per_s=<n> threads=<t> batch=<b> images=<n taken> (<C>x<H>x<W>)
 * bench/loader_vs_torch.sh sets it beside torchvision's DataLoader and clnet's training. */
#include "clnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "bench_loader: %s: %s\n", what, clnet_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: bench_loader DIR [--resize N] [--pad P] [--flip] [--threads T] "
                        "[--batch B] [--batches N]\n");
        return 2;
    }
    clnet_loader_config cfg = {.batch = 128, .seed = 1, .shuffle = 1, .std = 1};
    int batches = 40;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (strcmp(a, "--flip") == 0) {
            cfg.transforms.flip = 1;
            continue;
        }
        int n = atoi(v);
        if (strcmp(a, "--resize") == 0)
            cfg.transforms.resize_height = cfg.transforms.resize_width = n;
        else if (strcmp(a, "--pad") == 0)
            cfg.transforms.pad = n;
        else if (strcmp(a, "--threads") == 0)
            cfg.threads = n;
        else if (strcmp(a, "--batch") == 0)
            cfg.batch = n;
        else if (strcmp(a, "--batches") == 0)
            batches = n;
        else {
            fprintf(stderr, "bench_loader: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    clnet_dataset *ds = NULL;
    clnet_loader *l = NULL;
    if (clnet_dataset_load_with(&ds, argv[1], "train", NULL) != CLNET_OK) return fail("data");
    if (clnet_loader_create(&l, ds, &cfg) != CLNET_OK) return fail("loader");
    clnet_batch b;
    if (clnet_loader_next(l, &b) != CLNET_OK) return fail("first batch");
    long images = 0;
    double t0 = clnet_seconds();
    for (int k = 0; k < batches; k++) {
        if (clnet_loader_next(l, &b) != CLNET_OK) return fail("batch");
        images += b.n;
    }
    double secs = clnet_seconds() - t0;
    int c = 0, h = 0, w = 0;
    clnet_loader_shape(l, &c, &h, &w);
    printf("loader: images_per_s=%.0f threads=%d batch=%d images=%ld (%dx%dx%d)\n",
           secs > 0 ? images / secs : 0, cfg.threads, cfg.batch, images, c, h, w);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
    return 0;
}
