/* Forward + backward throughput of single convolution layers (conv1d,
 * conv3d, conv_transpose2d, depthwise conv2d, ResNet-18's 3x3 layers) on
 * every selected device, each with the algorithm the device chooses for it
 * (CLNET_CONV forces one):
 *
 *   build/bench/bench_conv [REPS] [SHAPE-FILTER]
 *
 * (a shape runs where its name contains SHAPE-FILTER; a trailing '$' anchors
 * it to the name's end)
 *
 * Each shape is one layer run directly (its kind's forward, then its
 * backward: weight, bias and input gradients), as a training step runs it
 * but with nothing around it: no loss, no optimizer. Two untimed passes
 * (kernel builds, GEMM choices), then REPS timed passes (default 10), whose
 * forward and backward each end with clFinish. Prints per shape
 *
 *   clnet: <shape> | <samples/s> samples/s | <GFLOP/s> GFLOP/s | <ms> ms (forward
 *   <ms>, backward <ms>) | ...
 *
 * from the median pass (and the median forward and backward), counting
 * 2*MACs forward and 4*MACs backward (input and weight gradients), then the
 * shapes, the algorithm, and checksums of one pass on fixed inputs, which
 * bench/conv_torch.py prints for the same computation. Keep SHAPES in step
 * with conv_torch.py. */
#include "clock.h"
#include "device.h"
#include "error.h"
#include "memory.h"
#include "net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;  /* what the filter matches */
    int batch;         /* samples per pass */
    const char *input; /* the model-file input line */
    const char *layer; /* the layer's model-file line */
} shape;

static const shape SHAPES[] = {
    {"conv1d_64x1024_k3", 32, "input channels=64 length=1024", "conv1d filters=64 size=3 pad=1"},
    {"conv1d_64x1024_k3_d4", 32, "input channels=64 length=1024",
     "conv1d filters=64 size=3 dilation=4 pad=same"},
    {"conv3d_16x16x32x32_k3", 4, "input channels=16 depth=16 height=32 width=32",
     "conv3d filters=32 size=3 pad=1"},
    {"conv3d_3x8x64x64_k3_s122", 32, "input channels=3 depth=8 height=64 width=64",
     "conv3d filters=16 size=3 stride=1x2x2 pad=1"},
    {"deconv2d_64x16x16_k4_s2", 32, "input channels=64 height=16 width=16",
     "conv_transpose2d filters=32 size=4 stride=2 pad=1"},
    {"deconv2d_32x32x32_k4_s2", 32, "input channels=32 height=32 width=32",
     "conv_transpose2d filters=3 size=4 stride=2 pad=1"},
    {"dwconv2d_64x56x56_k3", 32, "input channels=64 height=56 width=56",
     "conv2d filters=64 size=3 pad=1 groups=64"},
    {"dwconv2d_128x28x28_k3_s2", 32, "input channels=128 height=28 width=28",
     "conv2d filters=128 size=3 stride=2 pad=1 groups=128"},
    /* ResNet-18's 3x3 convolutions (d2l's, on 28x28 Fashion-MNIST) at batch 128 */
    {"resnet_stem_1x28x28", 128, "input channels=1 height=28 width=28",
     "conv2d filters=64 size=3 pad=1"},
    {"resnet_64x28x28", 128, "input channels=64 height=28 width=28",
     "conv2d filters=64 size=3 pad=1"},
    {"resnet_64x28x28_s2", 128, "input channels=64 height=28 width=28",
     "conv2d filters=128 size=3 stride=2 pad=1"},
    {"resnet_128x14x14", 128, "input channels=128 height=14 width=14",
     "conv2d filters=128 size=3 pad=1"},
    {"resnet_128x14x14_s2", 128, "input channels=128 height=14 width=14",
     "conv2d filters=256 size=3 stride=2 pad=1"},
    {"resnet_256x7x7", 128, "input channels=256 height=7 width=7",
     "conv2d filters=256 size=3 pad=1"},
    {"resnet_256x7x7_s2", 128, "input channels=256 height=7 width=7",
     "conv2d filters=512 size=3 stride=2 pad=1"},
    {"resnet_512x4x4", 128, "input channels=512 height=4 width=4",
     "conv2d filters=512 size=3 pad=1"},
    /* and its 1x1 stride-2 shortcuts */
    {"resnet_1x1_64x28x28_s2", 128, "input channels=64 height=28 width=28",
     "conv2d filters=128 size=1 stride=2"},
    {"resnet_1x1_128x14x14_s2", 128, "input channels=128 height=14 width=14",
     "conv2d filters=256 size=1 stride=2"},
    /* LeNet's (examples/models/lenet.cfg) at batch 256 */
    {"lenet_conv1_1x28x28", 256, "input channels=1 height=28 width=28", "conv2d filters=20 size=3"},
    {"lenet_conv2_20x13x13", 256, "input channels=20 height=13 width=13",
     "conv2d filters=50 size=5"},
};

/* The fixed inputs both programs use: element i of a tensor is
 * ((i * 2654435761 mod 2^32) >> 16 mod 1024) / 1024 - 0.5, times scale. */
static void fill(float *v, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)(i * 2654435761u);
        v[i] = scale * ((float)((h >> 16) & 1023) / 1024.0f - 0.5f);
    }
}

static double abs_sum(const float *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += fabs((double)v[i]);
    return s;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v. */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One layer on one device, with buffers of its own: the input at 0 of the
 * activation arena and the output after it, their gradients likewise. */
typedef struct {
    clnet_net *net;
    const clnet_node *l;
    clnet_device *d;
    int n;
    size_t in_count, out_count, nw, nb; /* n * per-sample sizes; weight and bias counts */
    cl_mem params, grads, act, dact, work;
    cl_kernel kernels[CLNET_NODE_KERNELS]; /* kept by the passes; the device owns them */
    clnet_gemm_site gemms[CLNET_NODE_GEMMS];
    clnet_gemm_record record; /* the GEMM choices the sites made */
} rig;

static void rig_free(rig *r) {
    cl_mem all[] = {r->params, r->grads, r->act, r->dact, r->work};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) clReleaseMemObject(all[i]);
    clnet_gemm_record_free(&r->record);
    clnet_net_free(r->net);
}

static clnet_status rig_create(rig *r, clnet_device *d, const shape *s) {
    memset(r, 0, sizeof *r);
    clnet_status st;
    if ((st = clnet_net_create(&r->net)) != CLNET_OK ||
        (st = clnet_net_add(r->net, s->input)) != CLNET_OK ||
        (st = clnet_net_add(r->net, s->layer)) != CLNET_OK)
        return st;
    const clnet_node *l = r->l = &r->net->model.nodes[0];
    r->d = d;
    r->n = s->batch;
    r->in_count = (size_t)r->n * clnet_shape_size(l->in[0]);
    r->out_count = (size_t)r->n * clnet_shape_size(l->out);
    r->nw = l->params[0].count;
    r->nb = l->nparams > 1 ? l->params[1].count : 0;
    size_t work = l->kind->work_floats ? l->kind->work_floats(l, d, r->n) : 0;
    size_t io = r->in_count + r->out_count;
    if ((st = clnet_buffer_create(d, l->param_count * sizeof(float), &r->params)) != CLNET_OK ||
        (st = clnet_buffer_create(d, l->param_count * sizeof(float), &r->grads)) != CLNET_OK ||
        (st = clnet_buffer_create(d, io * sizeof(float), &r->act)) != CLNET_OK ||
        (st = clnet_buffer_create(d, io * sizeof(float), &r->dact)) != CLNET_OK ||
        (st = clnet_buffer_create(d, (work ? work : 1) * sizeof(float), &r->work)) != CLNET_OK)
        return st;
    /* fixed inputs: x, dy, the weight (scaled by 1/sqrt(fan-in)) and the bias */
    size_t most = io > l->param_count ? io : l->param_count;
    float *host = malloc(most * sizeof(float));
    if (!host) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    fill(host, r->in_count, 1.0f);
    st = clnet_buffer_write(d, r->act, 0, r->in_count, host);
    fill(host, r->out_count, 1.0f);
    if (st == CLNET_OK) st = clnet_buffer_write(d, r->dact, r->in_count, r->out_count, host);
    fill(host, r->nw, 1.0f / sqrtf((float)l->params[0].fan_in));
    fill(host + r->nw, r->nb, 1.0f);
    if (st == CLNET_OK) st = clnet_buffer_write(d, r->params, 0, r->nw + r->nb, host);
    free(host);
    return st;
}

/* Waits until the device has run everything queued. */
static clnet_status finish(clnet_device *d) {
    clnet_status status = CLNET_OK;
    CL_CHECK(clFinish(d->queue), "clFinish");
cleanup:
    return status;
}

/* One forward and one backward pass, as a training step runs them. With
 * `times`, each pass is waited for (clFinish) and its seconds are stored in
 * times[0] (forward) and times[1] (backward). */
static clnet_status rig_pass(rig *r, double *times) {
    clnet_ctx ctx = {.train = 1, .d = r->d};
    clnet_pass p = {.ctx = &ctx,
                    .d = r->d,
                    .n = r->n,
                    .params = r->params,
                    .grads = r->grads,
                    .act = r->act,
                    .y = r->in_count,
                    .dact = r->dact,
                    .dy = r->in_count,
                    .work = r->work,
                    .work_cap =
                        r->l->kind->work_floats ? r->l->kind->work_floats(r->l, r->d, r->n) : 0,
                    .kernels = r->kernels,
                    .gemms = r->gemms,
                    .beta = 0.0f,
                    .want_grad = 1};
    p.need_dx[0] = 1;
    for (int i = 0; i < CLNET_NODE_GEMMS; i++) {
        r->gemms[i].record = &r->record;
        r->gemms[i].layer = r->l->name;
    }
    double t0 = clnet_now();
    clnet_status s = r->l->kind->forward(r->l, &p);
    if (s == CLNET_OK && times) s = finish(r->d);
    double t1 = clnet_now();
    p.backward = 1;
    if (s == CLNET_OK) s = r->l->kind->backward(r->l, &p);
    if (s == CLNET_OK && times) s = finish(r->d);
    if (times) times[0] = t1 - t0, times[1] = clnet_now() - t1;
    return s;
}

/* "32x64x1024": n, then one sample's shape */
static void dims(int n, clnet_shape s, char *out, size_t cap) {
    char one[64];
    clnet_shape_format(s, one, sizeof one);
    snprintf(out, cap, "%dx%s", n, one);
}

static void weight_dims(const clnet_tensor *t, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < t->ndim && used < cap; i++)
        used +=
            (size_t)snprintf(out + used, cap - used, i ? "x%lld" : "%lld", (long long)t->shape[i]);
}

/* The checksums of one pass: sums of |y|, |dx|, |dW|, |db|. */
static clnet_status checksums(rig *r, double sums[4]) {
    size_t most = r->in_count > r->out_count ? r->in_count : r->out_count;
    float *host = malloc((most > r->nw ? most : r->nw) * sizeof(float));
    if (!host) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    clnet_status s = rig_pass(r, NULL);
    if (s == CLNET_OK) s = clnet_buffer_read(r->d, r->act, r->in_count, r->out_count, host);
    sums[0] = abs_sum(host, r->out_count);
    if (s == CLNET_OK) s = clnet_buffer_read(r->d, r->dact, 0, r->in_count, host);
    sums[1] = abs_sum(host, r->in_count);
    if (s == CLNET_OK) s = clnet_buffer_read(r->d, r->grads, 0, r->nw, host);
    sums[2] = abs_sum(host, r->nw);
    if (s == CLNET_OK && r->nb) s = clnet_buffer_read(r->d, r->grads, r->nw, r->nb, host);
    sums[3] = r->nb ? abs_sum(host, r->nb) : 0;
    free(host);
    return s;
}

static int fail(const char *what) {
    fprintf(stderr, "bench_conv: %s: %s\n", what, clnet_last_error());
    return 1;
}

/* Warm-up, REPS timed passes, and the shape's line. */
static int bench(clnet_device *d, const shape *s, int reps) {
    rig r;
    if (rig_create(&r, d, s) != CLNET_OK) {
        rig_free(&r);
        return fail(s->name);
    }
    /* t: whole passes, then forwards, then backwards */
    double *t = malloc(3 * (size_t)reps * sizeof(double)), sums[4] = {0}, fb[2];
    int ok = t != NULL;
    for (int w = 0; ok && w < 2; w++) /* kernel builds, GEMM choices, first touches */
        ok = rig_pass(&r, fb) == CLNET_OK;
    for (int i = 0; ok && i < reps; i++) {
        ok = rig_pass(&r, fb) == CLNET_OK;
        t[i] = fb[0] + fb[1];
        t[reps + i] = fb[0];
        t[2 * reps + i] = fb[1];
    }
    ok = ok && checksums(&r, sums) == CLNET_OK;
    if (!ok) {
        free(t);
        rig_free(&r);
        return fail(s->name);
    }
    double med = median(t, reps), fwd = median(t + reps, reps), bwd = median(t + 2 * reps, reps);
    /* MACs of the forward: every weight meets every position of the side
     * with one value per window (the output of a convolution, the input of
     * a transposed one) */
    int transpose = strncmp(r.l->kind->name, "conv_transpose", 14) == 0;
    double macs = (double)r.nw * (double)s->batch *
                  (double)clnet_shape_spatial(transpose ? r.l->in[0] : r.l->out);
    char x[96], y[96], w[64], key[CLNET_TUNE_KEY_CAP], algo[CLNET_CONV_PLAN_CAP];
    dims(s->batch, r.l->in[0], x, sizeof x);
    dims(s->batch, r.l->out, y, sizeof y);
    weight_dims(&r.l->params[0], w, sizeof w);
    clnet_conv_plan plan;
    clnet_node_plan(r.l, d, key, sizeof key, &plan);
    clnet_conv_plan_text(&plan, algo, sizeof algo);
    printf("clnet: %-26s | %9.1f samples/s | %7.2f GFLOP/s | %8.2f ms (forward %.2f, backward "
           "%.2f) | batch %d | x %s -> y %s | w %s | algo %s | GFLOP %.3f | check y=%.6g "
           "dx=%.6g dw=%.6g db=%.6g\n",
           s->name, s->batch / med, 6 * macs / med * 1e-9, 1e3 * med, 1e3 * fwd, 1e3 * bwd,
           s->batch, x, y, w, algo, 6 * macs * 1e-9, sums[0], sums[1], sums[2], sums[3]);
    fflush(stdout);
    free(t);
    rig_free(&r);
    return 0;
}

/* Whether a shape's name contains `filter`; a filter ending in '$' must
 * end the name ("resnet_128x14x14$" leaves out "resnet_128x14x14_s2"). */
static int name_matches(const char *name, const char *filter) {
    size_t n = strlen(filter), len = strlen(name);
    if (n == 0 || filter[n - 1] != '$') return strstr(name, filter) != NULL;
    return len >= n - 1 && strncmp(name + len - (n - 1), filter, n - 1) == 0;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    const char *filter = argc > 2 ? argv[2] : "";
    if (reps < 1) reps = 1;
    clnet_runtime *rt = NULL;
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) return fail("runtime");
    int status = 0;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        printf("device %d: %s (%s %s), %u compute units, %d reps\n", d->info.index, d->info.name,
               d->info.platform_name, d->info.platform_version, d->info.compute_units, reps);
        for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++)
            if (name_matches(SHAPES[k].name, filter)) status |= bench(d, &SHAPES[k], reps);
    }
    clnet_runtime_free(rt);
    return status;
}
