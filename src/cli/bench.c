/* `clnet bench`: training throughput of each device alone and of all of
 * them together, balanced and equally split, on random data (which costs
 * what real data costs). The last line is
 *   aggregate: images_per_s=<n> efficiency=<e> equal_split_efficiency=<e>
 * where efficiency is the throughput of all devices together over the sum of
 * each device's throughput alone. A measurement that would take more than
 * BUDGET seconds (a simulator, or an equal split that gives one half of the
 * batch) is estimated instead, from a short timed run or the measured rates,
 * and the output says so. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define BUDGET 60.0

typedef struct {
    const char *model;
    long batch, steps;
} bench_options;

/* Trains `steps` timed steps (after warm-up steps that also let the balancer
 * settle) and returns images/s, or a negative number on failure. */
static double measure(const bench_options *o, clnet_runtime *rt, const double *split,
                      clnet_net **keep, int *estimated) {
    clnet_net *net = NULL;
    double ips = -1;
    float *x = NULL;
    int32_t *y = NULL;
    if (clnet_net_load(&net, o->model) != CLNET_OK || clnet_net_init(net, 1) != CLNET_OK ||
        clnet_net_bind(net, rt, (int)o->batch) != CLNET_OK)
        goto done;
    if (split && clnet_net_set_split(net, split, clnet_net_device_count(net)) != CLNET_OK)
        goto done;
    int c, h, w;
    clnet_net_input_shape(net, &c, &h, &w);
    size_t n = (size_t)o->batch * c * h * w;
    x = malloc(n * sizeof *x);
    y = malloc((size_t)o->batch * sizeof *y);
    if (!x || !y) goto done;
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 256) / 255.0f;
    for (long i = 0; i < o->batch; i++) y[i] = (int32_t)(i % clnet_net_classes(net));
    if (estimated) { /* a short run first: is the full measurement affordable? */
        int few = o->batch < 4 ? (int)o->batch : 4;
        *estimated = 0;
        for (int s = 0; s < 2; s++) { /* the first builds kernels */
            double t0 = now();
            if (clnet_net_train_step(net, x, y, few, NULL) != CLNET_OK) goto done;
            ips = few / (now() - t0);
        }
        if ((3 + o->steps) * o->batch / ips > BUDGET) {
            *estimated = 1;
            goto done;
        }
        ips = -1;
    }
    for (int s = 0; s < 3; s++)
        if (clnet_net_train_step(net, x, y, (int)o->batch, NULL) != CLNET_OK) goto done;
    double t0 = now();
    for (long s = 0; s < o->steps; s++)
        if (clnet_net_train_step(net, x, y, (int)o->batch, NULL) != CLNET_OK) goto done;
    ips = (double)o->steps * o->batch / (now() - t0);
done:
    if (ips < 0) fprintf(stderr, "clnet bench: %s\n", clnet_last_error());
    free(x);
    free(y);
    if (keep && ips >= 0)
        *keep = net;
    else
        clnet_net_free(net);
    return ips;
}

static void print_shares(const char *what, clnet_net *net, double ips) {
    printf("%s: images_per_s=%.0f (", what, ips);
    for (int i = 0; i < clnet_net_device_count(net); i++) {
        clnet_device_share d;
        clnet_net_device_share(net, i, &d);
        printf("%sdevice %d: %d samples a step", i ? ", " : "", d.device, d.share);
    }
    printf(")\n");
}

int cmd_bench(int argc, char **argv) {
    bench_options o = {.model = NULL, .batch = 256, .steps = 10};
    const char *spec = NULL;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (argv[i][0] != '-' && !o.model) {
            o.model = argv[i];
        } else if (cli_option(argc, argv, &i, "--devices", &v)) {
            if (!v) return 2;
            spec = v;
        } else if (cli_option(argc, argv, &i, "--batch", &v)) {
            if (!v || !cli_int("--batch", v, 1, 1 << 20, &o.batch)) return 2;
        } else if (cli_option(argc, argv, &i, "--steps", &v)) {
            if (!v || !cli_int("--steps", v, 1, 1000000, &o.steps)) return 2;
        } else {
            fprintf(stderr, "usage: clnet bench MODEL [--devices SPEC] [--batch B] [--steps N]\n");
            return 2;
        }
    }
    if (!o.model) {
        fprintf(stderr, "clnet bench: which model? e.g. clnet bench examples/models/lenet.cfg\n");
        return 2;
    }
    clnet_runtime *all = NULL;
    if (clnet_runtime_create(&all, spec) != CLNET_OK) {
        fprintf(stderr, "clnet: devices: %s\n", clnet_last_error());
        return 1;
    }
    int n = clnet_runtime_device_count(all), rc = 1;
    double sum = 0;
    printf("model %s, batch %ld, %ld timed steps\n", o.model, o.batch, o.steps);
    for (int i = 0; i < n; i++) {
        clnet_device_info info;
        clnet_runtime_device_info(all, i, &info);
        char one[16];
        snprintf(one, sizeof one, "%d", info.index);
        clnet_runtime *rt = NULL;
        if (clnet_runtime_create(&rt, one) != CLNET_OK) {
            fprintf(stderr, "clnet: devices: %s\n", clnet_last_error());
            goto done;
        }
        int estimated = 0;
        double ips = measure(&o, rt, NULL, NULL, &estimated);
        clnet_runtime_free(rt);
        if (ips < 0) goto done;
        printf("device %d (%s) alone: images_per_s=%.*f%s\n", info.index, info.name,
               ips < 10 ? 2 : 0, ips,
               estimated ? " (estimated from 4 samples: too slow to time "
                           "whole batches)"
                         : "");
        fflush(stdout);
        sum += ips;
    }
    clnet_net *net = NULL;
    double balanced = measure(&o, all, NULL, &net, NULL);
    if (balanced < 0) goto done;
    print_shares("all devices, balanced split", net, balanced);
    /* an equal split waits for the slowest device's half: estimate it from
     * the measured rates when timing it would take too long */
    double slowest = 0;
    for (int i = 0; i < clnet_net_device_count(net); i++) {
        clnet_device_share d;
        clnet_net_device_share(net, i, &d);
        double t = (double)o.batch / n / (d.images_per_s > 0 ? d.images_per_s : 1e-9);
        if (t > slowest) slowest = t;
    }
    clnet_net_free(net);
    double equal = 0;
    if ((3 + o.steps) * slowest > BUDGET) {
        equal = o.batch / slowest;
        printf("all devices, equal split: images_per_s=%.1f (estimated from the measured rates: "
               "%.0f s a step)\n",
               equal, slowest);
    } else {
        double equal_w[64];
        for (int i = 0; i < n && i < 64; i++) equal_w[i] = 1;
        net = NULL;
        equal = measure(&o, all, equal_w, &net, NULL);
        if (equal < 0) goto done;
        print_shares("all devices, equal split", net, equal);
        clnet_net_free(net);
    }
    printf("aggregate: images_per_s=%.0f efficiency=%.3f equal_split_efficiency=%.3f\n", balanced,
           balanced / sum, equal / sum);
    rc = 0;
done:
    clnet_runtime_free(all);
    return rc;
}
