/* Training throughput of a model on each selected device, alone:
 *
 *   build/bench/bench_lenet [MODEL] [--batch B] [--steps N]
 *
 * (MODEL defaults to examples/models/lenet.cfg.) Trains on random images,
 * which cost the same as real ones, and prints images/s and GFLOP/s per
 * device, then the time of each layer's forward and backward pass from a
 * second, profiled run (it waits after every layer, so its total is a little
 * higher). */
#include "net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Multiply-adds x2 of one training step per sample: forward, and backward's
 * two products (weights, inputs) for conv and linear layers. */
static double train_flops_per_sample(const clnet_net *net) {
    double f = 0;
    for (int i = 0; i < net->model.count; i++) {
        const clnet_node *l = &net->model.nodes[i];
        double positions = (double)clnet_shape_spatial(l->out);
        if (l->kind == &clnet_conv2d_kind || l->kind == &clnet_linear_kind)
            f += 3 * 2.0 * (double)l->params[0].count *
                 (l->kind == &clnet_conv2d_kind ? positions : 1);
    }
    return f;
}

static int fail(const char *what) {
    fprintf(stderr, "bench_lenet: %s: %s\n", what, clnet_last_error());
    return 1;
}

static double mib(size_t floats) {
    return (double)floats * sizeof(float) / 1048576.0;
}

/* The replica's device memory, and what the planner saves: the activation
 * and gradient arenas against one buffer per tensor. */
static void print_memory(const clnet_net *net, const char *model, const clnet_device_info *info,
                         int batch) {
    const clnet_replica *r = net->trainer->replicas[0];
    const clnet_model *m = &net->model;
    size_t every = clnet_shape_size(m->input) * (size_t)batch, grads = 0;
    for (int i = 0; i < m->count; i++) {
        if (m->nodes[i].kind->is_view) continue;
        size_t size = clnet_shape_size(m->nodes[i].out) * (size_t)batch;
        every += size;
        if (!m->nodes[i].kind->is_loss) grads += size;
    }
    printf("device %d (%s): %s at batch %d needs %.1f MiB of device memory: parameters, "
           "gradients and buffers %.1f MiB; activations %.1f MiB and their gradients %.1f MiB "
           "as planned, against %.1f MiB and %.1f MiB with a buffer per tensor (%.1fx less); "
           "kept for backward %.1f MiB, scratch %.1f MiB\n",
           info->index, info->name, model, batch, (double)r->bytes / 1048576.0,
           mib(2 * m->nparams + m->nbuffers), mib(r->plan.act), mib(r->plan.dact), mib(every),
           mib(grads), (double)(every + grads) / (double)(r->plan.act + r->plan.dact),
           mib(r->plan.keep_total), mib(r->plan.work));
}

int main(int argc, char **argv) {
    const char *model = "examples/models/lenet.cfg";
    int batch = 256, steps = 20, memory_only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--memory") == 0)
            memory_only = 1;
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else
            model = argv[i];
    }
    clnet_runtime *rt = NULL;
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) return fail("runtime");
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device_info info;
        clnet_runtime_device_info(rt, dev, &info);
        char spec[16];
        snprintf(spec, sizeof spec, "%d", info.index);
        clnet_runtime *one = NULL;
        clnet_net *net = NULL;
        if (clnet_runtime_create(&one, spec) != CLNET_OK) return fail("runtime");
        if (clnet_net_load(&net, model) != CLNET_OK) return fail(model);
        if (clnet_net_init(net, 1) != CLNET_OK || clnet_net_bind(net, one, batch) != CLNET_OK)
            return fail("bind");
        print_memory(net, model, &info, batch);
        if (memory_only) {
            clnet_net_free(net);
            clnet_runtime_free(one);
            continue;
        }
        size_t in = clnet_shape_size(net->model.input);
        float *x = malloc((size_t)batch * in * sizeof(float));
        int32_t *y = malloc((size_t)batch * sizeof(int32_t));
        for (size_t i = 0; i < (size_t)batch * in; i++)
            x[i] = (float)((i * 2654435761u) % 256) / 255;
        for (int i = 0; i < batch; i++) y[i] = i % clnet_net_classes(net);
        for (int w = 0; w < 2; w++) /* warm-up: kernel builds, first allocations */
            if (clnet_net_train_step(net, x, y, batch, NULL) != CLNET_OK) return fail("step");
        double t0 = clnet_seconds();
        for (int s = 0; s < steps; s++)
            if (clnet_net_train_step(net, x, y, batch, NULL) != CLNET_OK) return fail("step");
        double t = clnet_seconds() - t0, ips = (double)steps * batch / t;
        printf("device %d (%s): model %s, batch %d, %d steps: %.0f images/s, %.1f GFLOP/s\n",
               info.index, info.name, model, batch, steps, ips,
               ips * train_flops_per_sample(net) * 1e-9);

        double *prof = calloc(2 * (size_t)net->model.count, sizeof(double));
        net->trainer->replicas[0]->profile = prof;
        int psteps = steps < 5 ? steps : 5;
        for (int s = 0; s < psteps; s++)
            if (clnet_net_train_step(net, x, y, batch, NULL) != CLNET_OK) return fail("step");
        net->trainer->replicas[0]->profile = NULL;
        double total = 0;
        for (int i = 0; i < 2 * net->model.count; i++) total += prof[i];
        printf("  %-8s %-22s %12s %12s %7s\n", "layer", "kind", "forward ms", "backward ms",
               "share");
        for (int i = 0; i < net->model.count; i++)
            printf("  %-8s %-22s %12.2f %12.2f %6.1f%%\n", net->model.nodes[i].name,
                   net->model.nodes[i].kind->name, 1e3 * prof[2 * i] / psteps,
                   1e3 * prof[2 * i + 1] / psteps, 100 * (prof[2 * i] + prof[2 * i + 1]) / total);
        printf("  layers total %.2f ms per step of %d images\n", 1e3 * total / psteps, batch);
        free(prof);
        free(x);
        free(y);
        clnet_net_free(net);
        clnet_runtime_free(one);
    }
    clnet_runtime_free(rt);
    return 0;
}
