/* Every layer on every device against the PyTorch golden fixtures in tests/fixtures/: a
 * second reference, independent of the plain-C one in tests/ref/. Each fixture file says
 * in its metadata which layer it holds and how it is configured; the test builds that
 * layer from a model-file line, uploads the fixture's parameters, runs forward and
 * backward with the fixture's x and dy, and compares y, dx, dweight and dbias (for the
 * loss: the summed loss, the count of correct samples and dx; for batch norm also the
 * running statistics after the training pass, from the fixture's starting ones, and an
 * evaluation pass with them). Conv2d and linear fixtures made with bias=False run the
 * layer with bias=off, which must have no bias tensor. Dropout's mask cannot be
 * reproduced, so its fixtures are checked for what PyTorch's dropout does instead (see
 * run_dropout).
 *
 * The fixtures were computed in float64 and rounded once, so the difference is the
 * device's own float32 rounding. On a slow simulator the large cases are skipped (and
 * said so); every fixture still runs on every other device, which the test asserts, so
 * it cannot pass by skipping.
 *
 * Case "init" (CTest torch_init, no device) checks init=uniform_fan_in and
 * bias_init=uniform_fan_in against the bounds of PyTorch's default initialisation. */
#include "layer_rig.h"
#include "net.h"
#include "safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CLNET_FIXTURES_DIR
#error "CMake defines CLNET_FIXTURES_DIR, the folder holding the fixtures"
#endif

/* Largest |device - torch| allowed, relative to max(1, max |torch|) of the tensor. */
#define TOLERANCE 1e-5
/* On a slow device, cases whose x, y or weight holds more elements are skipped. */
#define SLOW_MAX_ELEMENTS 20000

#define MAX_FIXTURES 256

typedef enum {
    CONV,
    CONV_TRANSPOSE,
    MAXPOOL,
    AVGPOOL,
    RELU,
    SIGMOID,
    TANH,
    ACT_OF_X, /* leaky_relu, elu, gelu, silu, hardswish */
    LINEAR,
    LOSS,
    BATCHNORM,
    GLOBAL_AVGPOOL,
    DROPOUT,
    GLOBAL_MAXPOOL,
    REGRESSION, /* mse, l1, bce_with_logits: a loss against a target of x's shape */
    UPSAMPLE,
    POSITIONS, /* softmax_cross_entropy per=position: a class at each position */
    NKINDS
} kind;
static const char *const KIND_META[NKINDS] = {"conv2d",
                                              "conv_transpose2d",
                                              "maxpool",
                                              "avgpool",
                                              "relu",
                                              "sigmoid",
                                              "tanh",
                                              "gelu",
                                              "linear",
                                              "softmax_xent",
                                              "batchnorm",
                                              "global_avgpool",
                                              "dropout",
                                              "global_maxpool",
                                              "mse",
                                              "upsample",
                                              "softmax_xent_positions"};
/* The kind of a fixture's "layer": its KIND_META name, or another rank's convolution. */
static kind kind_of(const char *layer) {
    if (!strcmp(layer, "conv1d") || !strcmp(layer, "conv3d")) return CONV;
    if (!strncmp(layer, "conv_transpose", 14) && strlen(layer) == 16) return CONV_TRANSPOSE;
    if (!strcmp(layer, "l1") || !strcmp(layer, "bce_with_logits")) return REGRESSION;
    const char *of_x[] = {"leaky_relu", "elu", "silu", "hardswish"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(layer, of_x[k])) return ACT_OF_X;
    for (int k = 0; k < NKINDS; k++)
        if (strcmp(layer, KIND_META[k]) == 0) return (kind)k;
    return NKINDS;
}

/* One fixture: its file, its layer as a model-file line, and its tensors. */
typedef struct {
    char file[256];
    clnet_st_file *st;
    kind k;
    char input[128]; /* the model's input line, from x's shape */
    char line[160];
    int n;             /* batch */
    int ndim;          /* x's dimensions: 2 (N, F), 3 (N, C, L), 4 (N, C, H, W) or 5 */
    int64_t xshape[5]; /* x's shape */
    rig_shape in;      /* one sample's input, (C, H, W) of 2-D fixtures */
    size_t nx, ny;     /* elements of x and y (y: 0 for the loss) */
    int64_t yshape[5]; /* y's expected shape, ndim as x's */
    int bias;          /* conv, linear: 0 when PyTorch's layer had bias=False */
} fixture;

/* A non-negative integer from the metadata. */
static int meta_int(const fixture *fx, const char *key) {
    const char *v = clnet_st_meta_get(fx->st, key);
    ck_assert_msg(v != NULL, "%s: no metadata '%s'", fx->file, key);
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    ck_assert_msg(errno == 0 && *v && *end == '\0' && n >= 0 && n < 1000000, "%s: metadata %s='%s'",
                  fx->file, key, v);
    return (int)n;
}

/* The tensor `name`, which must have `ndim` dimensions `shape` (any shape when ndim < 0). */
static const float *tensor(const fixture *fx, const char *name, int ndim, const int64_t *shape) {
    const float *data = NULL;
    clnet_status s = clnet_st_get(fx->st, name, ndim < 0 ? 0 : ndim, shape, &data, NULL, NULL);
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    return data;
}

/* The metadata string `key`, which must be there. */
static const char *meta(const fixture *fx, const char *key) {
    const char *v = clnet_st_meta_get(fx->st, key);
    ck_assert_msg(v != NULL, "%s: no metadata '%s'", fx->file, key);
    return v;
}

/* y's shape as the file has it, which the test checks the layer's against. */
static void y_of_file(fixture *fx) {
    int ndim = 0;
    const int64_t *ys = NULL;
    ck_assert_msg(clnet_st_get(fx->st, "y", 0, NULL, NULL, &ndim, &ys) == CLNET_OK, "%s: %s",
                  fx->file, clnet_last_error());
    ck_assert_msg(ndim == fx->ndim && ys[0] == fx->n, "%s: y has %d dimensions", fx->file, ndim);
    memcpy(fx->yshape, ys, (size_t)ndim * sizeof *ys);
    fx->ny = 1;
    for (int i = 0; i < ndim; i++) fx->ny *= (size_t)ys[i];
}

/* A convolution, transposed convolution or pooling of any rank: the metadata's
 * per-axis strings ("3x2x1") go into the line as they are; y's shape is
 * PyTorch's (the test checks the layer's against it). */
static void window_fixture(fixture *fx, const char *layer) {
    ck_assert_msg(fx->k == CONV || fx->k == CONV_TRANSPOSE || fx->k == MAXPOOL || fx->k == AVGPOOL,
                  "%s: metadata 'kernel' for %s", fx->file, layer);
    ck_assert_int_eq(meta_int(fx, "in_channels"), (int)fx->xshape[1]);
    int used = snprintf(fx->line, sizeof fx->line, "%s size=%s stride=%s pad=%s", layer,
                        meta(fx, "kernel"), meta(fx, "stride"), meta(fx, "pad"));
    const char *dilation = clnet_st_meta_get(fx->st, "dilation");
    if (dilation && fx->k != AVGPOOL)
        used += snprintf(fx->line + used, sizeof fx->line - (size_t)used, " dilation=%s", dilation);
    const char *bias = clnet_st_meta_get(fx->st, "bias");
    fx->bias = bias == NULL;
    if (fx->k == CONV || fx->k == CONV_TRANSPOSE) {
        ck_assert_msg(bias == NULL || strcmp(bias, "False") == 0, "%s: bias='%s'", fx->file, bias);
        used += snprintf(fx->line + used, sizeof fx->line - (size_t)used, " filters=%d groups=%d%s",
                         meta_int(fx, "out_channels"), meta_int(fx, "groups"),
                         fx->bias ? "" : " bias=off");
        const char *out_pad = clnet_st_meta_get(fx->st, "output_pad");
        if (fx->k == CONV_TRANSPOSE)
            used += snprintf(fx->line + used, sizeof fx->line - (size_t)used, " output_pad=%s",
                             meta(fx, "output_pad"));
        else
            ck_assert_msg(out_pad == NULL, "%s: output_pad for a convolution", fx->file);
    } else {
        ck_assert_msg(bias == NULL, "%s: bias='%s' for pooling", fx->file, bias);
        if (clnet_st_meta_get(fx->st, "ceil"))
            used += snprintf(fx->line + used, sizeof fx->line - (size_t)used, " ceil=on");
        if (clnet_st_meta_get(fx->st, "count_pad"))
            used += snprintf(fx->line + used, sizeof fx->line - (size_t)used, " count_pad=off");
    }
    ck_assert_msg((size_t)used < sizeof fx->line, "%s: line too long", fx->file);
    y_of_file(fx);
}

/* nn.Upsample: the metadata's scale ("2x3") and mode go into the line as they are. */
static void upsample_fixture(fixture *fx) {
    ck_assert_int_eq(meta_int(fx, "in_channels"), (int)fx->xshape[1]);
    int used = snprintf(fx->line, sizeof fx->line, "upsample scale=%s mode=%s", meta(fx, "scale"),
                        meta(fx, "mode"));
    ck_assert_msg((size_t)used < sizeof fx->line, "%s: line too long", fx->file);
    y_of_file(fx);
}

/* Loads a fixture and derives its layer's model-file line and shapes from the metadata. */
static void fixture_load(fixture *fx, const char *file) {
    memset(fx, 0, sizeof *fx);
    snprintf(fx->file, sizeof fx->file, "%s", file);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", CLNET_FIXTURES_DIR, file);
    ck_assert_msg(clnet_st_load(path, &fx->st) == CLNET_OK, "%s", clnet_last_error());
    const char *layer = clnet_st_meta_get(fx->st, "layer");
    ck_assert_msg(layer != NULL, "%s: no metadata 'layer'", file);
    fx->k = kind_of(layer);
    ck_assert_msg(fx->k != NKINDS, "%s: unknown layer '%s'", file, layer);

    /* x is (N, C, spatial...) with 1 to 3 spatial axes, or (N, F) read as (N, F, 1, 1) */
    const int64_t *xs = NULL;
    ck_assert_msg(clnet_st_get(fx->st, "x", 0, NULL, NULL, &fx->ndim, &xs) == CLNET_OK, "%s",
                  clnet_last_error());
    ck_assert_msg(fx->ndim >= 2 && fx->ndim <= 5, "%s: x has %d dimensions", file, fx->ndim);
    memcpy(fx->xshape, xs, (size_t)fx->ndim * sizeof *xs);
    fx->n = (int)xs[0];
    fx->nx = 1;
    for (int i = 0; i < fx->ndim; i++) fx->nx *= (size_t)xs[i];
    clnet_shape in = {.c = (int)xs[1], .ndim = fx->ndim - 2};
    for (int i = 0; i < in.ndim; i++) in.dim[i] = (int)xs[2 + i];
    rig_input_line(in, fx->input, sizeof fx->input);
    fx->in =
        (rig_shape){(int)xs[1], fx->ndim == 4 ? (int)xs[2] : 1, fx->ndim == 4 ? (int)xs[3] : 1};
    if (clnet_st_meta_get(fx->st, "kernel")) { /* a window op in the format of every rank */
        window_fixture(fx, layer);
        return;
    }
    if (fx->k == UPSAMPLE) {
        upsample_fixture(fx);
        return;
    }

    int c = fx->in.c, h = fx->in.h, w = fx->in.w;
    rig_shape out = fx->in;
    /* bias=False in PyTorch is bias=off in clnet: the layer has no bias tensor */
    const char *bias = clnet_st_meta_get(fx->st, "bias");
    ck_assert_msg(bias == NULL ||
                      (strcmp(bias, "False") == 0 && (fx->k == CONV || fx->k == LINEAR)),
                  "%s: metadata bias='%s'", file, bias);
    fx->bias = bias == NULL;
    const char *bias_off = fx->bias ? "" : " bias=off";
    switch (fx->k) {
    case CONV:
    case MAXPOOL:
    case AVGPOOL: {
        int kh = meta_int(fx, "kernel_h"), kw = meta_int(fx, "kernel_w");
        int sh = meta_int(fx, "stride_h"), sw = meta_int(fx, "stride_w");
        int ph = meta_int(fx, "pad_h"), pw = meta_int(fx, "pad_w");
        ck_assert_int_eq(meta_int(fx, "in_channels"), c);
        /* conv2d's dilation and groups, maxpool's dilation, when the file has them */
        int dh = 1, dw = 1, groups = 1;
        if (clnet_st_meta_get(fx->st, "dilation_h")) {
            dh = meta_int(fx, "dilation_h");
            dw = meta_int(fx, "dilation_w");
        }
        if (clnet_st_meta_get(fx->st, "groups")) groups = meta_int(fx, "groups");
        char dilated[40] = "";
        if (fx->k == MAXPOOL && (dh != 1 || dw != 1))
            snprintf(dilated, sizeof dilated, " dilation=%dx%d", dh, dw);
        char conv[80] = "";
        if (fx->k == CONV) {
            out.c = meta_int(fx, "out_channels");
            snprintf(conv, sizeof conv, " filters=%d dilation=%dx%d groups=%d", out.c, dh, dw,
                     groups);
        }
        char pad[32];
        int same = clnet_st_meta_get(fx->st, "pad_same") != NULL; /* PyTorch's padding='same' */
        snprintf(pad, sizeof pad, same ? "same" : "%dx%d", ph, pw);
        /* pools: PyTorch's ceil_mode and count_include_pad=False */
        int ceil = clnet_st_meta_get(fx->st, "ceil") != NULL;
        const char *count_pad = clnet_st_meta_get(fx->st, "count_pad") ? " count_pad=off" : "";
        snprintf(fx->line, sizeof fx->line, "%s%s size=%dx%d stride=%dx%d pad=%s%s%s%s%s",
                 fx->k == CONV ? "conv2d" : layer, conv, kh, kw, sh, sw, pad, bias_off,
                 ceil ? " ceil=on" : "", count_pad, dilated);
        out.h = same ? h : (h + 2 * ph - (dh * (kh - 1) + 1) + (ceil ? sh - 1 : 0)) / sh + 1;
        out.w = same ? w : (w + 2 * pw - (dw * (kw - 1) + 1) + (ceil ? sw - 1 : 0)) / sw + 1;
        if (ceil && (out.h - 1) * sh >= h + ph) out.h--; /* a last window starting past */
        if (ceil && (out.w - 1) * sw >= w + pw) out.w--; /* the input and its padding */
        break;
    }
    case RELU:
    case SIGMOID:
    case TANH:
        snprintf(fx->line, sizeof fx->line, "%s", layer);
        break;
    case ACT_OF_X: { /* with its options, where the file gives them */
        int used = snprintf(fx->line, sizeof fx->line, "%s", layer);
        const char *keys[] = {"slope", "alpha", "approximate"};
        for (int k = 0; k < 3; k++) {
            const char *v = clnet_st_meta_get(fx->st, keys[k]);
            if (v)
                used +=
                    snprintf(fx->line + used, sizeof fx->line - (size_t)used, " %s=%s", keys[k], v);
        }
        break;
    }
    case LINEAR:
        ck_assert_int_eq(meta_int(fx, "in_features"), (int)rig_shape_size(fx->in));
        out = (rig_shape){meta_int(fx, "out_features"), 1, 1};
        snprintf(fx->line, sizeof fx->line, "linear units=%d%s", out.c, bias_off);
        break;
    case GLOBAL_AVGPOOL:
    case GLOBAL_MAXPOOL:
        ck_assert_int_eq(meta_int(fx, "in_channels"), c);
        out.h = out.w = 1;
        snprintf(fx->line, sizeof fx->line, "%s", KIND_META[fx->k]);
        break;
    case DROPOUT: {
        const char *p = clnet_st_meta_get(fx->st, "p");
        ck_assert_msg(p != NULL, "%s: no metadata p", file);
        snprintf(fx->line, sizeof fx->line, "dropout p=%s", p);
        break;
    }
    case REGRESSION: /* its target, the second input, is the model's input in the rig */
        snprintf(fx->line, sizeof fx->line, "%s target=input", layer);
        break;
    case LOSS: /* with label_smoothing=EPS where the fixture has one */
    case POSITIONS: {
        const char *eps = clnet_st_meta_get(fx->st, "label_smoothing");
        ck_assert_int_eq(meta_int(fx, "classes"), fx->k == LOSS ? (int)rig_shape_size(fx->in) : c);
        snprintf(fx->line, sizeof fx->line, "softmax_cross_entropy%s%s%s",
                 fx->k == POSITIONS ? " per=position" : "", eps ? " label_smoothing=" : "",
                 eps ? eps : "");
        break;
    }
    case BATCHNORM: {
        ck_assert_int_eq(meta_int(fx, "channels"), c);
        const char *eps = clnet_st_meta_get(fx->st, "eps");
        const char *momentum = clnet_st_meta_get(fx->st, "momentum");
        ck_assert_msg(eps && momentum, "%s: no metadata eps or momentum", file);
        snprintf(fx->line, sizeof fx->line, "batchnorm eps=%s momentum=%s", eps, momentum);
        break;
    }
    case CONV_TRANSPOSE:
    case UPSAMPLE:
    case NKINDS:
        ck_abort_msg("%s: %s fixtures are read apart", file, layer);
    }
    if (fx->ndim == 3 || fx->ndim == 5) { /* batch norm, activations, global pooling */
        memcpy(fx->yshape, fx->xshape, sizeof fx->yshape);
        int same =
            fx->k == BATCHNORM || fx->k == ACT_OF_X || fx->k == REGRESSION || fx->k == POSITIONS;
        for (int i = 2; i < fx->ndim && !same; i++) fx->yshape[i] = 1;
        fx->ny = 1;
        for (int i = 0; i < fx->ndim; i++) fx->ny *= (size_t)fx->yshape[i];
        return;
    }
    int64_t ys[4] = {fx->n, out.c, out.h, out.w};
    memcpy(fx->yshape, ys, sizeof ys);
    fx->ny = fx->k == LOSS ? 0 : (size_t)fx->n * rig_shape_size(out);
}

/* Elements of the largest of x, y and the weight: what a slow device pays for. */
static size_t fixture_size(const fixture *fx) {
    size_t big = fx->nx > fx->ny ? fx->nx : fx->ny;
    int ndim = 0;
    const int64_t *shape = NULL;
    if (clnet_st_get(fx->st, "weight", 0, NULL, NULL, &ndim, &shape) == CLNET_OK) {
        size_t nw = 1;
        for (int d = 0; d < ndim; d++) nw *= (size_t)shape[d];
        if (nw > big) big = nw;
    }
    return big;
}

/* Largest |a - ref| relative to max(1, max |ref|); *at is where it is. */
static double rel_diff(const float *a, const float *ref, size_t n, size_t *at) {
    double m = 0, scale = 1;
    *at = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - ref[i]);
        if (e > m) m = e, *at = i;
        scale = fmax(scale, fabs((double)ref[i]));
    }
    return m / scale;
}

/* Compares one result with the fixture's tensor; returns the relative difference. */
static double compare(const fixture *fx, const clnet_device *d, const char *name, const float *got,
                      const float *ref, size_t n) {
    size_t at;
    double diff = rel_diff(got, ref, n, &at);
    ck_assert_msg(diff <= TOLERANCE,
                  "%s (%s) on %s: %s differs from PyTorch by %.3g (max %.0e); worst at flat "
                  "index %zu: %.9g, PyTorch %.9g",
                  fx->file, fx->line, d->info.name, name, diff, TOLERANCE, at, got[at], ref[at]);
    return diff;
}

/* A regression loss: the rig's input holds x, then the target (its second
 * input); its output, the summed loss and both gradients against PyTorch's. */
static double run_regression(const fixture *fx, clnet_device *d, const char **worst) {
    layer_rig r;
    rig_create_input(&r, d, fx->input, fx->line, fx->n);
    size_t n = fx->nx;
    ck_assert_msg(r.in_count == 2 * n && r.out_count == n, "%s: %zu inputs, %zu outputs", fx->file,
                  r.in_count, r.out_count);
    float *x = malloc(2 * n * sizeof(float)), *dx = malloc(2 * n * sizeof(float));
    float *y = malloc(n * sizeof(float)), *loss = malloc((size_t)fx->n * sizeof(float));
    memcpy(x, tensor(fx, "x", fx->ndim, fx->xshape), n * sizeof(float));
    memcpy(x + n, tensor(fx, "target", fx->ndim, fx->xshape), n * sizeof(float));
    rig_forward(&r, x, y, NULL, loss, NULL);
    rig_backward(&r, NULL, dx, NULL, NULL);
    double sum = 0, best = 0, v;
    for (int i = 0; i < fx->n; i++) sum += loss[i];
    const float *loss_ref = tensor(fx, "loss", -1, NULL);
    double loss_diff = fabs(sum - loss_ref[0]) / fmax(1, fabs(loss_ref[0]));
    ck_assert_msg(loss_diff <= TOLERANCE, "%s on %s: loss %.9g, PyTorch %.9g", fx->file,
                  d->info.name, sum, loss_ref[0]);
    const char *names[] = {"y", "dx", "dtarget"};
    const float *got[] = {y, dx, dx + n};
    *worst = "loss", best = loss_diff;
    for (int k = 0; k < 3; k++)
        if ((v = compare(fx, d, names[k], got[k], tensor(fx, names[k], fx->ndim, fx->xshape), n)) >
            best)
            best = v, *worst = names[k];
    free(x), free(dx), free(y), free(loss);
    rig_free(&r);
    return best;
}

/* Cross-entropy at every position: the classes (labels, (N, spatial...),
 * stored as floats) go to the loss as the data's targets would; its
 * probabilities, summed loss, correct positions and dx against PyTorch's. */
static double run_positions(const fixture *fx, clnet_device *d, const char **worst) {
    layer_rig r;
    rig_create_input(&r, d, fx->input, fx->line, fx->n);
    size_t n = fx->nx, P = n / (size_t)fx->n / (size_t)fx->xshape[1];
    ck_assert_msg(r.in_count == n && r.out_count == n && r.target_size == P,
                  "%s: %zu inputs, %zu outputs, %zu targets", fx->file, r.in_count, r.out_count,
                  r.target_size);
    int64_t lshape[5] = {fx->n};
    for (int i = 2; i < fx->ndim; i++) lshape[i - 1] = fx->xshape[i];
    const float *lf = tensor(fx, "labels", fx->ndim - 1, lshape);
    int32_t *labels = malloc((size_t)fx->n * P * sizeof *labels);
    int *correct = malloc((size_t)fx->n * sizeof *correct);
    float *y = malloc(n * sizeof *y), *dx = malloc(n * sizeof *dx);
    float *loss = malloc((size_t)fx->n * sizeof *loss);
    for (size_t i = 0; i < (size_t)fx->n * P; i++) labels[i] = (int32_t)lf[i];
    rig_forward(&r, tensor(fx, "x", fx->ndim, fx->xshape), y, labels, loss, correct);
    rig_backward(&r, NULL, dx, NULL, NULL);
    double sum = 0;
    int hits = 0;
    for (int i = 0; i < fx->n; i++) sum += loss[i], hits += correct[i];
    const float *loss_ref = tensor(fx, "loss", -1, NULL),
                *hits_ref = tensor(fx, "correct", -1, NULL);
    double best = fabs(sum - loss_ref[0]) / fmax(1, fabs(loss_ref[0])), v;
    ck_assert_msg(best <= TOLERANCE, "%s on %s: loss %.9g, PyTorch %.9g", fx->file, d->info.name,
                  sum, loss_ref[0]);
    ck_assert_msg(hits == (int)hits_ref[0], "%s on %s: %d correct, PyTorch %g", fx->file,
                  d->info.name, hits, hits_ref[0]);
    *worst = "loss";
    if ((v = compare(fx, d, "y", y, tensor(fx, "y", fx->ndim, fx->xshape), n)) > best)
        best = v, *worst = "y";
    if ((v = compare(fx, d, "dx", dx, tensor(fx, "dx", fx->ndim, fx->xshape), n)) > best)
        best = v, *worst = "dx";
    free(labels), free(correct), free(y), free(dx), free(loss);
    rig_free(&r);
    return best;
}

/* Runs one fixture on one device; returns the largest relative difference and names its
 * tensor in `worst`. */
static double run_fixture(const fixture *fx, clnet_device *d, const char **worst) {
    layer_rig r;
    rig_create_input(&r, d, fx->input, fx->line, fx->n);
    ck_assert_msg(r.in_count == fx->nx, "%s: the layer takes %zu inputs, x holds %zu", fx->file,
                  r.in_count, fx->nx);
    /* the layer's output shape is PyTorch's */
    for (int i = 1; i < fx->ndim && fx->ndim > 2; i++) {
        int got = i == 1 ? r.l->out.c : r.l->out.dim[i - 2];
        ck_assert_msg(got == fx->yshape[i], "%s (%s): output dimension %d is %d, PyTorch's %lld",
                      fx->file, fx->line, i, got, (long long)fx->yshape[i]);
    }
    float *dx = malloc(fx->nx * sizeof(float));
    const float *x = tensor(fx, "x", -1, NULL);
    const float *dx_ref = tensor(fx, "dx", fx->ndim, fx->xshape);
    double best = -1;
#define NOTE(name, value)                                                                          \
    do {                                                                                           \
        double v_ = (value);                                                                       \
        if (v_ > best) best = v_, *worst = (name);                                                 \
    } while (0)

    if (fx->k == LOSS) {
        /* labels are class indices stored as floats */
        int32_t *labels = malloc((size_t)fx->n * sizeof(int32_t));
        float *loss = malloc((size_t)fx->n * sizeof(float));
        int *correct = malloc((size_t)fx->n * sizeof(int));
        const float *lf = tensor(fx, "labels", 1, (const int64_t[]){fx->n});
        for (int i = 0; i < fx->n; i++) labels[i] = (int32_t)lf[i];
        const float *loss_ref = tensor(fx, "loss", -1, NULL);
        const float *correct_ref = tensor(fx, "correct", -1, NULL);
        rig_forward(&r, x, NULL, labels, loss, correct);
        rig_backward(&r, NULL, dx, NULL, NULL);
        double sum = 0;
        int hits = 0;
        for (int i = 0; i < fx->n; i++) sum += loss[i], hits += correct[i];
        double loss_diff = fabs(sum - loss_ref[0]) / fmax(1, fabs(loss_ref[0]));
        ck_assert_msg(loss_diff <= TOLERANCE, "%s on %s: loss %.9g, PyTorch %.9g", fx->file,
                      d->info.name, sum, loss_ref[0]);
        ck_assert_msg(hits == (int)correct_ref[0], "%s on %s: %d correct, PyTorch %g", fx->file,
                      d->info.name, hits, correct_ref[0]);
        NOTE("loss", loss_diff);
        NOTE("dx", compare(fx, d, "dx", dx, dx_ref, fx->nx));
        free(labels), free(loss), free(correct);
    } else {
        size_t nw = r.nw, nb = r.nb;
        const float *w = NULL, *b = NULL, *dw_ref = NULL, *db_ref = NULL;
        if (nw) {
            /* the layer's weight shape is PyTorch's layout: the fixture must match it */
            w = tensor(fx, "weight", r.weight_ndim, r.weight_shape);
            dw_ref = tensor(fx, "dweight", r.weight_ndim, r.weight_shape);
            /* bias=off: no bias tensor at all, so nothing to upload or compare */
            ck_assert_msg(fx->bias ? r.l->nparams == 2 && nb > 0 : r.l->nparams == 1 && nb == 0,
                          "%s (%s): %d parameter tensors, bias of %zu", fx->file, fx->line,
                          r.l->nparams, nb);
            if (nb) {
                b = tensor(fx, "bias", 1, (const int64_t[]){(int64_t)nb});
                db_ref = tensor(fx, "dbias", 1, (const int64_t[]){(int64_t)nb});
            }
        }
        ck_assert_msg(r.out_count == fx->ny, "%s: the layer gives %zu outputs, expected %zu",
                      fx->file, r.out_count, fx->ny);
        int64_t ys2[2] = {fx->n, (int64_t)(fx->ny / (size_t)fx->n)};
        const int64_t *ys = fx->ndim == 2 ? ys2 : fx->yshape;
        const float *y_ref = tensor(fx, "y", fx->ndim, ys);
        const float *dy = tensor(fx, "dy", fx->ndim, ys);
        float *y = malloc(fx->ny * sizeof(float));
        float *dw = malloc((nw + 1) * sizeof(float)), *db = malloc((nb + 1) * sizeof(float));
        /* batch norm: the running statistics the step starts from */
        float *buffers = malloc((r.nbuffers + 1) * sizeof(float));
        size_t moff = 0, voff = 0;
        const int64_t channels[1] = {fx->xshape[1]};
        if (fx->k == BATCHNORM) {
            moff = r.l->buffers[0].offset, voff = r.l->buffers[1].offset;
            rig_get_buffers(&r, buffers);
            memcpy(buffers + moff, tensor(fx, "running_mean", 1, channels), nb * sizeof(float));
            memcpy(buffers + voff, tensor(fx, "running_var", 1, channels), nb * sizeof(float));
            rig_set_buffers(&r, buffers);
        }
        rig_set_params(&r, w, b);
        rig_forward(&r, x, y, NULL, NULL, NULL);
        rig_backward(&r, dy, dx, nw ? dw : NULL, nb ? db : NULL);
        NOTE("y", compare(fx, d, "y", y, y_ref, fx->ny));
        NOTE("dx", compare(fx, d, "dx", dx, dx_ref, fx->nx));
        if (nw) NOTE("dweight", compare(fx, d, "dweight", dw, dw_ref, nw));
        if (nb) NOTE("dbias", compare(fx, d, "dbias", db, db_ref, nb));
        if (fx->k == BATCHNORM) {
            /* the running statistics after the step, then evaluation with them */
            rig_get_buffers(&r, buffers);
            NOTE("running_mean_after", compare(fx, d, "running_mean_after", buffers + moff,
                                               tensor(fx, "running_mean_after", 1, channels), nb));
            NOTE("running_var_after", compare(fx, d, "running_var_after", buffers + voff,
                                              tensor(fx, "running_var_after", 1, channels), nb));
            r.eval = 1;
            rig_forward(&r, x, y, NULL, NULL, NULL);
            NOTE("y_eval", compare(fx, d, "y_eval", y, tensor(fx, "y_eval", fx->ndim, ys), fx->ny));
        }
        free(y), free(dw), free(db), free(buffers);
    }
#undef NOTE
    if (best == 0) *worst = "all exact";
    free(dx);
    rig_free(&r);
    return best;
}

/* Relative difference allowed between a dropout survivor and PyTorch's x / (1 - p). */
#define DROPOUT_TOLERANCE 1e-6

/* Dropout: PyTorch's mask cannot be reproduced, but what it does can. In a training pass
 * every element of y is exactly 0 or PyTorch's survivor value x / (1 - p) (y_kept), and dx
 * is exactly 0 where y was dropped and dy / (1 - p) (dx_kept) where it was kept, so
 * backward draws the forward's mask again. The dropped fraction is p within 4 standard
 * deviations, samples draw masks of their own, and an evaluation pass returns x bit for
 * bit. Returns the largest relative
 * difference of a survivor. */
static double run_dropout(const fixture *fx, clnet_device *d, const char **worst) {
    layer_rig r;
    rig_create_input(&r, d, fx->input, fx->line, fx->n);
    ck_assert_msg(r.in_count == fx->nx && r.out_count == fx->nx, "%s: %zu inputs, %zu outputs",
                  fx->file, r.in_count, r.out_count);
    const float *x = tensor(fx, "x", -1, NULL), *dy = tensor(fx, "dy", -1, NULL);
    const float *y_kept = tensor(fx, "y_kept", -1, NULL);
    const float *dx_kept = tensor(fx, "dx_kept", -1, NULL);
    double p = strtod(clnet_st_meta_get(fx->st, "p"), NULL);
    float *y = malloc(fx->nx * sizeof(float)), *dx = malloc(fx->nx * sizeof(float));
    ck_assert(y && dx);
    rig_forward(&r, x, y, NULL, NULL, NULL);
    rig_backward(&r, dy, dx, NULL, NULL);
    size_t dropped = 0;
    double best = 0;
    *worst = "all exact";
    for (size_t i = 0; i < fx->nx; i++) {
        /* ck_abort_msg: a passing ck_assert costs a write, too many per element */
        if (x[i] == 0) ck_abort_msg("%s: x[%zu] is 0", fx->file, i);
        if (y[i] == 0) { /* dropped: no gradient either */
            dropped++;
            if (dx[i] != 0)
                ck_abort_msg("%s (%s) on %s: element %zu dropped (y = 0, x = %.9g) but dx = %.9g",
                             fx->file, fx->line, d->info.name, i, x[i], dx[i]);
            continue;
        }
        double ey = fabs((double)y[i] - y_kept[i]) / fabs((double)y_kept[i]);
        double edx = fabs((double)dx[i] - dx_kept[i]) / fmax(fabs((double)dx_kept[i]), 1e-30);
        if (!(ey <= DROPOUT_TOLERANCE))
            ck_abort_msg("%s (%s) on %s: element %zu is neither 0 nor PyTorch's survivor: y = "
                         "%.9g, x / (1 - p) = %.9g",
                         fx->file, fx->line, d->info.name, i, y[i], y_kept[i]);
        if (!(edx <= DROPOUT_TOLERANCE))
            ck_abort_msg("%s (%s) on %s: element %zu kept (y = %.9g) but dx = %.9g, PyTorch's dy "
                         "/ (1 - p) = %.9g",
                         fx->file, fx->line, d->info.name, i, y[i], dx[i], dx_kept[i]);
        if (ey > best) best = ey, *worst = "y";
        if (edx > best) best = edx, *worst = "dx";
    }
    double fraction = (double)dropped / (double)fx->nx;
    double sd = sqrt(p * (1 - p) / (double)fx->nx);
    printf("%-38s on %-24.24s dropped %zu of %zu (%.4f; p %g, 4 sd %.4f)\n", fx->file, d->info.name,
           dropped, fx->nx, fraction, p, 4 * sd);
    ck_assert_msg(fabs(fraction - p) <= 4 * sd, "%s on %s: dropped %.4f of the elements, p = %g",
                  fx->file, d->info.name, fraction, p);
    /* Samples draw apart: the masks of samples 2k and 2k + 1 disagree on an element with
     * probability 2p(1 - p), as PyTorch's independent draws do (pairs apart, so
     * independent; a mask shared by the batch would never disagree). */
    size_t size = fx->nx / (size_t)fx->n, pairs = 0, differ = 0;
    for (int b = 0; b + 1 < fx->n; b += 2)
        for (size_t e = 0; e < size; e++, pairs++)
            differ += (y[b * size + e] == 0) != (y[(b + 1) * size + e] == 0);
    if (pairs) {
        double q = 2 * p * (1 - p), seen = (double)differ / (double)pairs;
        ck_assert_msg(fabs(seen - q) <= 4 * sqrt(q * (1 - q) / (double)pairs),
                      "%s on %s: paired samples' masks differ on %.4f of the elements, not %.4f",
                      fx->file, d->info.name, seen, q);
    }
    /* evaluation: the identity, bit for bit */
    r.eval = 1;
    rig_forward(&r, x, y, NULL, NULL, NULL);
    for (size_t i = 0; i < fx->nx; i++)
        if (memcmp(&y[i], &x[i], sizeof(float)) != 0)
            ck_abort_msg("%s on %s: evaluation changed element %zu: %.9g -> %.9g", fx->file,
                         d->info.name, i, x[i], y[i]);
    free(y), free(dx);
    rig_free(&r);
    return best;
}

static int is_fixture(const struct dirent *e) {
    const char *suffix = ".safetensors";
    size_t len = strlen(e->d_name), slen = strlen(suffix);
    return len > slen && strcmp(e->d_name + len - slen, suffix) == 0;
}

START_TEST(every_layer_matches_pytorch_on_every_device) {
    struct dirent **names = NULL;
    int files = scandir(CLNET_FIXTURES_DIR, &names, is_fixture, alphasort);
    ck_assert_msg(files > 0, "no fixtures in %s", CLNET_FIXTURES_DIR);
    ck_assert_int_le(files, MAX_FIXTURES);
    static fixture fx[MAX_FIXTURES];
    int per_kind[NKINDS] = {0};
    for (int i = 0; i < files; i++) {
        fixture_load(&fx[i], names[i]->d_name);
        per_kind[fx[i].k]++;
        free(names[i]);
    }
    free(names);
    for (int k = 0; k < NKINDS; k++)
        ck_assert_msg(per_kind[k] > 0, "no fixture for %s", KIND_META[k]);

    clnet_runtime *rt = test_runtime();
    int devices = clnet_runtime_device_count(rt);
    int ran_on[MAX_FIXTURES] = {0};
    for (int dev = 0; dev < devices; dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        int slow = test_device_is_slow(d), ran = 0, skipped = 0;
        double worst_kind[NKINDS] = {0};
        for (int i = 0; i < files; i++) {
            if (slow && (fixture_size(&fx[i]) > SLOW_MAX_ELEMENTS || !test_slow_case(i))) {
                printf("%-38s on %-24.24s left to the fast devices: %zu elements%s\n", fx[i].file,
                       d->info.name, fixture_size(&fx[i]),
                       test_slow_case(i) ? "" : ", not drawn (CLNET_TEST_SLOW_EVERY)");
                skipped++;
                continue;
            }
            const char *worst = "";
            double diff = fx[i].k == DROPOUT      ? run_dropout(&fx[i], d, &worst)
                          : fx[i].k == REGRESSION ? run_regression(&fx[i], d, &worst)
                          : fx[i].k == POSITIONS  ? run_positions(&fx[i], d, &worst)
                                                  : run_fixture(&fx[i], d, &worst);
            worst_kind[fx[i].k] = fmax(worst_kind[fx[i].k], diff);
            printf("%-38s on %-24.24s largest relative difference %.1e (%s)\n", fx[i].file,
                   d->info.name, diff, worst);
            ran_on[i]++;
            ran++;
        }
        printf("%s: %d of %d fixtures run, %d left to the fast devices; largest difference per "
               "kind:",
               d->info.name, ran, files, skipped);
        for (int k = 0; k < NKINDS; k++) printf(" %s %.1e", KIND_META[k], worst_kind[k]);
        printf("\n");
        /* only a simulator may skip, so a fast device proves every fixture */
        if (!slow)
            ck_assert_msg(ran == files, "%s ran %d of %d fixtures", d->info.name, ran, files);
    }
    for (int i = 0; i < files; i++) {
        ck_assert_msg(ran_on[i] > 0, "%s ran on no device of this configuration", fx[i].file);
        clnet_st_free(fx[i].st);
    }
}
END_TEST

/* ---- init=uniform_fan_in and bias_init=uniform_fan_in against PyTorch's defaults ---- */

/* What the values of one tensor came to, each divided by its bound. */
typedef struct {
    double largest, sum, sum_sq;
    size_t count;
} init_stats;

static void init_stats_add(init_stats *st, const float *v, size_t n, double bound,
                           const char *what) {
    for (size_t i = 0; i < n; i++) {
        /* the bound is PyTorch's, rounded to float32: allow that rounding */
        if (!(fabs(v[i]) <= bound * (1 + 1e-6))) /* ck_assert per value would cost a write */
            ck_abort_msg("%s: value %zu is %.9g, bound %.9g", what, i, v[i], bound);
        double u = v[i] / bound;
        st->largest = fmax(st->largest, fabs(u));
        st->sum += u, st->sum_sq += u * u;
    }
    st->count += n;
}

/* U(-bound, bound) seen through `count` draws: the largest |value| within 1% of the bound
 * (a uniform draw falls short of it with probability 0.99^count, below 1e-17 for the 4000
 * or more every tensor gets), and the mean and the mean square of value / bound within 5
 * standard deviations of a uniform's 0 and 1/3. */
static void init_stats_check(const init_stats *st, const char *what) {
    double n = (double)st->count, mean = st->sum / n, mean_sq = st->sum_sq / n;
    double sd_mean = sqrt(1.0 / 3.0 / n), sd_sq = sqrt(4.0 / 45.0 / n);
    printf("%-30s %8zu values: largest |value| / bound %.5f, mean %+.4f, mean square %.4f\n", what,
           st->count, st->largest, mean, mean_sq);
    ck_assert_msg(st->count >= 4000, "%s: only %zu values", what, st->count);
    ck_assert_msg(st->largest >= 0.99, "%s: the largest |value| is %.4f of the bound", what,
                  st->largest);
    ck_assert_msg(fabs(mean) <= 5 * sd_mean, "%s: mean %.4f of the bound", what, mean);
    ck_assert_msg(fabs(mean_sq - 1.0 / 3.0) <= 5 * sd_sq,
                  "%s: mean square %.4f of the bound squared, a uniform's is 1/3", what, mean_sq);
}

/* tests/fixtures/init/uniform_fan_in.safetensors holds, for Conv2d and Linear modules,
 * PyTorch's weight shape and the bounds of its default initialisation (reset_parameters:
 * the weight and the bias uniform in +-1/sqrt(fan_in)). The same layers in clnet with
 * init=uniform_fan_in bias_init=uniform_fan_in, initialised with enough seeds that every
 * tensor gets 4000 values or more, must draw uniformly up to exactly those bounds. */
START_TEST(uniform_fan_in_draws_within_pytorchs_bounds) {
    char path[4096];
    snprintf(path, sizeof path, "%s/init/uniform_fan_in.safetensors", CLNET_FIXTURES_DIR);
    clnet_st_file *st = NULL;
    ck_assert_msg(clnet_st_load(path, &st) == CLNET_OK, "%s", clnet_last_error());
    const char *list = clnet_st_meta_get(st, "modules");
    ck_assert_msg(list != NULL, "%s: no metadata 'modules'", path);
    char modules[1024];
    snprintf(modules, sizeof modules, "%s", list);
    int checked = 0;
    for (char *save = NULL, *m = strtok_r(modules, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        char key[128];
        const float *shape_f = NULL, *weight_bound = NULL, *bias_bound = NULL;
        int ndim = 0;
        const int64_t *dims = NULL;
        snprintf(key, sizeof key, "%s.weight_shape", m);
        ck_assert_msg(clnet_st_get(st, key, 0, NULL, &shape_f, &ndim, &dims) == CLNET_OK, "%s",
                      clnet_last_error());
        ck_assert_msg(ndim == 1 && (dims[0] == 4 || dims[0] == 2), "%s: %s", path, key);
        snprintf(key, sizeof key, "%s.weight_bound", m);
        ck_assert_int_eq(clnet_st_get(st, key, 0, NULL, &weight_bound, NULL, NULL), CLNET_OK);
        snprintf(key, sizeof key, "%s.bias_bound", m);
        ck_assert_int_eq(clnet_st_get(st, key, 0, NULL, &bias_bound, NULL, NULL), CLNET_OK);

        /* conv (F, C, KH, KW) on a C x KH x KW input; linear (O, I) on I values */
        int conv = dims[0] == 4;
        int64_t shape[4] = {0};
        int64_t fan_in = 1;
        for (int i = 0; i < dims[0]; i++) {
            shape[i] = (int64_t)shape_f[i];
            if (i) fan_in *= shape[i];
        }
        snprintf(key, sizeof key, "%s.fan_in", m);
        const char *fan_meta = clnet_st_meta_get(st, key);
        ck_assert_msg(fan_meta && strtoll(fan_meta, NULL, 10) == fan_in, "%s: %s", path, key);
        /* both bounds are 1 / sqrt(fan_in), which clnet's uniform_fan_in says it draws in */
        double bound = 1 / sqrt((double)fan_in);
        ck_assert_msg(fabs(*weight_bound - bound) <= 1e-6 * bound &&
                          fabs(*bias_bound - bound) <= 1e-6 * bound,
                      "%s: bounds %.9g and %.9g for fan_in %lld", m, *weight_bound, *bias_bound,
                      (long long)fan_in);

        char input[128], line[160];
        const char *init = "init=uniform_fan_in bias_init=uniform_fan_in";
        if (conv) {
            snprintf(input, sizeof input, "input channels=%lld height=%lld width=%lld",
                     (long long)shape[1], (long long)shape[2], (long long)shape[3]);
            snprintf(line, sizeof line, "conv2d filters=%lld size=%lldx%lld %s",
                     (long long)shape[0], (long long)shape[2], (long long)shape[3], init);
        } else {
            snprintf(input, sizeof input, "input channels=%lld height=1 width=1",
                     (long long)shape[1]);
            snprintf(line, sizeof line, "linear units=%lld %s", (long long)shape[0], init);
        }
        clnet_net *net = NULL;
        ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
        ck_assert_int_eq(clnet_net_add(net, input), CLNET_OK);
        ck_assert_msg(clnet_net_add(net, line) == CLNET_OK, "'%s': %s", line, clnet_last_error());
        ck_assert_int_eq(clnet_net_add(net, "softmax_cross_entropy"), CLNET_OK);
        ck_assert_msg(clnet_net_init(net, 1) == CLNET_OK, "%s", clnet_last_error());
        const clnet_node *l = &net->model.nodes[0];
        ck_assert_int_eq(l->nparams, 2);
        ck_assert_int_eq(l->params[0].ndim, (int)dims[0]);
        for (int i = 0; i < dims[0]; i++) ck_assert_int_eq(l->params[0].shape[i], shape[i]);
        size_t nw = l->params[0].count, nb = l->params[1].count;
        ck_assert_uint_eq(nb, (size_t)shape[0]);

        init_stats ws = {0}, bs = {0};
        char wname[160], bname[160];
        snprintf(wname, sizeof wname, "%s.weight", m);
        snprintf(bname, sizeof bname, "%s.bias", m);
        float first = 0;
        for (uint64_t seed = 1; bs.count < 4000; seed++) {
            ck_assert_int_eq(clnet_net_init(net, seed), CLNET_OK);
            const float *v = clnet_net_params(net);
            /* every seed draws anew */
            ck_assert_msg(seed == 1 || v[l->params[0].offset] != first, "%s: seed %llu", m,
                          (unsigned long long)seed);
            first = v[l->params[0].offset];
            init_stats_add(&ws, v + l->params[0].offset, nw, *weight_bound, wname);
            init_stats_add(&bs, v + l->params[1].offset, nb, *bias_bound, bname);
        }
        init_stats_check(&ws, wname);
        init_stats_check(&bs, bname);
        clnet_net_free(net);
        checked++;
    }
    ck_assert_msg(checked >= 4, "%s: %d modules", path, checked);
    clnet_st_free(st);
}
END_TEST

/* Case "torch" needs the configuration's devices; case "init" runs on the host alone. */
int main(void) {
    Suite *s = suite_create("torch");
    TCase *t = tcase_create("torch");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, every_layer_matches_pytorch_on_every_device);
    suite_add_tcase(s, t);
    TCase *init = tcase_create("init");
    tcase_add_test(init, uniform_fan_in_draws_within_pytorchs_bounds);
    suite_add_tcase(s, init);
    return test_run_suite(s);
}
