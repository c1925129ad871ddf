/* The PyTorch golden fixtures in tests/fixtures/ (written by make_fixtures.py): every file
 * loads, says which layer it is, and holds exactly the tensors that layer needs, with
 * shapes consistent with each other and with the configuration in its metadata. The
 * torch.* tests (test_layers_torch.c) compare the kernels against the values; the
 * softmax_xent_positions files are also compared here with the plain-C reference. */
#include "harness.h"
#include "ref/layers_ref.h"
#include "safetensors.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CLNET_FIXTURES_DIR
#error "CMake defines CLNET_FIXTURES_DIR, the folder holding the fixtures"
#endif

static const char *const LAYERS[] = {"conv1d",
                                     "conv2d",
                                     "conv3d",
                                     "conv_transpose1d",
                                     "conv_transpose2d",
                                     "conv_transpose3d",
                                     "maxpool",
                                     "avgpool",
                                     "global_avgpool",
                                     "global_maxpool",
                                     "batchnorm",
                                     "linear",
                                     "relu",
                                     "sigmoid",
                                     "tanh",
                                     "leaky_relu",
                                     "elu",
                                     "gelu",
                                     "silu",
                                     "hardswish",
                                     "dropout",
                                     "softmax_xent",
                                     "softmax_xent_positions",
                                     "mse",
                                     "l1",
                                     "bce_with_logits",
                                     "upsample"};
#define NLAYERS (int)(sizeof LAYERS / sizeof LAYERS[0])

/* A tensor's shape, up to (N, C, D, H, W). */
#define MAX_DIMS 5
typedef struct {
    int ndim;
    int64_t d[MAX_DIMS];
} dims;

/* A metadata value holding count non-negative integers joined with "x" ("3x2x1"; one: "3"). */
static void parse_values(const char *file, const char *key, const char *v, int count,
                         int64_t *out) {
    const char *p = v;
    for (int i = 0; i < count; i++) {
        char *end = NULL;
        errno = 0;
        long long n = isdigit((unsigned char)*p) ? strtoll(p, &end, 10) : -1;
        ck_assert_msg(n >= 0 && errno == 0 && *end == (i + 1 < count ? 'x' : '\0'),
                      "%s: metadata %s='%s' is not %d number(s) joined with x", file, key, v,
                      count);
        out[i] = n;
        p = end + 1;
    }
}

/* count values of key (parse_values), or def for each where the key is absent and def >= 0. */
static void meta_values(const clnet_st_file *f, const char *file, const char *key, int count,
                        int64_t def, int64_t *out) {
    const char *v = clnet_st_meta_get(f, key);
    ck_assert_msg(v != NULL || def >= 0, "%s: no metadata '%s'", file, key);
    if (v)
        parse_values(file, key, v, count, out);
    else
        for (int i = 0; i < count; i++) out[i] = def;
}

/* A non-negative integer from the metadata. */
static int64_t meta_int(const clnet_st_file *f, const char *file, const char *key) {
    int64_t n;
    meta_values(f, file, key, 1, -1, &n);
    return n;
}

/* A window option, one value per spatial axis: the window-op files join them with "x" under
 * key, the first 2-D files (old) have key_h and key_w. def as for meta_values. */
static void meta_axes(const clnet_st_file *f, const char *file, int old, const char *key, int rank,
                      int64_t def, int64_t *out) {
    if (!old) {
        meta_values(f, file, key, rank, def, out);
        return;
    }
    for (int a = 0; a < rank; a++) {
        char name[32];
        snprintf(name, sizeof name, "%s_%c", key, "hw"[a]);
        meta_values(f, file, name, 1, def, &out[a]);
    }
}

/* 1 when the metadata has key, which must then say value (bias=False, ceil=True, ...). */
static int meta_flag(const clnet_st_file *f, const char *file, const char *key, const char *value) {
    const char *v = clnet_st_meta_get(f, key);
    ck_assert_msg(v == NULL || strcmp(v, value) == 0, "%s: metadata %s='%s', expected '%s'", file,
                  key, v, value);
    return v != NULL;
}

/* Checks the tensor's shape and that all its values are finite; returns its data. */
static const float *expect(const clnet_st_file *f, const char *file, const char *name, dims want) {
    const float *data = NULL;
    int got_ndim = 0;
    const int64_t *shape = NULL;
    clnet_status s = clnet_st_get(f, name, want.ndim, want.d, &data, &got_ndim, &shape);
    ck_assert_msg(s == CLNET_OK, "%s: %s", file, clnet_last_error());
    int64_t n = 1;
    for (int d = 0; d < got_ndim; d++) n *= shape[d];
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(isfinite(data[i]), "%s: %s[%lld] is not finite", file, name, (long long)i);
    return data;
}

/* x and dx of x's shape, y and dy of y's. */
static void expect_io(const clnet_st_file *f, const char *file, dims x, dims y) {
    expect(f, file, "x", x);
    expect(f, file, "dx", x);
    expect(f, file, "y", y);
    expect(f, file, "dy", y);
}

/* weight and dweight of the given shape and, unless the metadata says bias=False (PyTorch's
 * bias=False), bias and dbias (out); returns how many tensors that is. */
static int expect_parameters(const clnet_st_file *f, const char *file, dims weight, int64_t out) {
    expect(f, file, "weight", weight);
    expect(f, file, "dweight", weight);
    if (meta_flag(f, file, "bias", "False")) return 2;
    expect(f, file, "bias", (dims){1, {out}});
    expect(f, file, "dbias", (dims){1, {out}});
    return 4;
}

/* How many windows of span cells, stride apart, fit in size cells with before and after
 * zeros around them (PyTorch's output size): rounded down, or in ceil mode up, less a last
 * window that would start in the zeros after the input. */
static int64_t window_count(const char *file, int64_t size, int64_t before, int64_t after,
                            int64_t span, int64_t stride, int ceil) {
    int64_t room = size + before + after - span; /* how far the first window can move */
    ck_assert_msg(room >= 0, "%s: a window of %lld cells does not fit in %lld + %lld + %lld", file,
                  (long long)span, (long long)before, (long long)size, (long long)after);
    if (!ceil) return room / stride + 1;
    int64_t n = (room + stride - 1) / stride + 1;
    return (n - 1) * stride >= size + before ? n - 1 : n;
}

/* conv1d/2d/3d, conv_transpose1d/2d/3d, maxpool and avgpool on x (N, C, spatial...) with 1 to
 * 3 spatial axes: y's shape and the weight's follow from the metadata by PyTorch's formulas
 * (README.md). Returns how many tensors the file must hold. */
static int check_window_op(const clnet_st_file *f, const char *file, const char *layer, dims x) {
    int conv = strncmp(layer, "conv", 4) == 0;
    int transpose = strncmp(layer, "conv_transpose", 14) == 0;
    int old = clnet_st_meta_get(f, "kernel") == NULL; /* the first 2-D files: kernel_h, ... */
    int rank = x.ndim - 2;
    if (conv) /* conv1d ... conv_transpose3d: the name says how many spatial axes */
        ck_assert_msg(rank == layer[strlen(layer) - 2] - '0', "%s: x of %d dimensions for %s", file,
                      x.ndim, layer);
    ck_assert_msg(rank >= 1 && rank <= 3 && (!old || rank == 2), "%s: x of %d dimensions for %s%s",
                  file, x.ndim, layer, old ? " in the 2-D format (kernel_h, ...)" : "");

    int64_t kernel[3], stride[3], dilation[3], pad[3] = {0}, output_pad[3];
    meta_axes(f, file, old, "kernel", rank, -1, kernel);
    meta_axes(f, file, old, "stride", rank, -1, stride);
    meta_axes(f, file, old, "dilation", rank, 1, dilation);
    meta_axes(f, file, old, "output_pad", rank, 0, output_pad);
    /* pad: numbers, or PyTorch's padding='same' (old files: pad_same=True), or causal */
    const char *pad_word = old ? NULL : clnet_st_meta_get(f, "pad");
    int same = old ? meta_flag(f, file, "pad_same", "True") : pad_word && !strcmp(pad_word, "same");
    int causal = pad_word && !strcmp(pad_word, "causal");
    if (!same && !causal) meta_axes(f, file, old, "pad", rank, -1, pad);
    int ceil = meta_flag(f, file, "ceil", "True");
    int count_pad_off = meta_flag(f, file, "count_pad", "False");
    ck_assert_msg(!same || (conv && !transpose), "%s: padding 'same' for %s", file, layer);
    ck_assert_msg(!causal || !strcmp(layer, "conv1d"), "%s: causal padding for %s", file, layer);
    ck_assert_msg(!ceil || !conv, "%s: ceil mode for %s", file, layer);
    ck_assert_msg(!count_pad_off || !strcmp(layer, "avgpool"), "%s: count_pad for %s", file, layer);
    ck_assert_msg(transpose || !clnet_st_meta_get(f, "output_pad"), "%s: output_pad for %s", file,
                  layer);

    dims y = x; /* (N, C or out_channels, spatial...) */
    for (int a = 0; a < rank; a++) {
        int64_t k = kernel[a], s = stride[a], d = dilation[a], op = output_pad[a];
        ck_assert_msg(k > 0 && s > 0 && d > 0, "%s: kernel, stride and dilation must be positive",
                      file);
        int64_t span = d * (k - 1) + 1; /* the cells a window covers */
        int64_t before, after;          /* the zeros around the input */
        if (same) { /* stride 1, span - 1 zeros in all, the odd one after: y is x's size */
            ck_assert_msg(s == 1, "%s: padding 'same' with stride %lld", file, (long long)s);
            before = (span - 1) / 2, after = span - 1 - before;
        } else if (causal) { /* all span - 1 zeros before: y[t] reads no input after t */
            before = span - 1, after = 0;
        } else {
            before = after = pad[a];
        }
        if (!conv) /* PyTorch's pools allow pad <= kernel / 2; average pooling has no dilation */
            ck_assert_msg(2 * before <= k && (d == 1 || !strcmp(layer, "maxpool")),
                          "%s: pad %lld, kernel %lld, dilation %lld", file, (long long)before,
                          (long long)k, (long long)d);
        if (transpose) { /* the adjoint of the convolution from y back to x */
            ck_assert_msg(op < s || op < d, "%s: output_pad %lld with stride %lld, dilation %lld",
                          file, (long long)op, (long long)s, (long long)d);
            y.d[2 + a] = (x.d[2 + a] - 1) * s - 2 * before + span + op;
            ck_assert_msg(y.d[2 + a] > 0, "%s: y has no cells along axis %d", file, a);
        } else {
            y.d[2 + a] = window_count(file, x.d[2 + a], before, after, span, s, ceil);
        }
    }

    int64_t c = x.d[1];
    ck_assert_int_eq(meta_int(f, file, "in_channels"), c);
    int tensors = 4; /* x, y, dy, dx */
    if (conv) {
        int64_t co = meta_int(f, file, "out_channels"), groups = 1;
        meta_values(f, file, "groups", 1, 1, &groups);
        ck_assert_msg(groups > 0 && c % groups == 0 && co % groups == 0,
                      "%s: %lld groups of %lld -> %lld channels", file, (long long)groups,
                      (long long)c, (long long)co);
        /* weight (out, in / groups, kernel...); transposed (in, out / groups, kernel...) */
        dims w = {x.ndim, {transpose ? c : co, (transpose ? co : c) / groups}};
        for (int a = 0; a < rank; a++) w.d[2 + a] = kernel[a];
        tensors += expect_parameters(f, file, w, co);
        y.d[1] = co;
    }
    expect_io(f, file, x, y);
    return tensors;
}

/* An activation's options in the metadata: leaky_relu's slope and elu's alpha
 * (numbers, optional), gelu's approximate (none or tanh, optional), no other. */
static void activation_options(const clnet_st_file *f, const char *file, const char *layer) {
    const char *slope = clnet_st_meta_get(f, "slope"), *alpha = clnet_st_meta_get(f, "alpha");
    const char *approx = clnet_st_meta_get(f, "approximate");
    ck_assert_msg(!slope || !strcmp(layer, "leaky_relu"), "%s: slope for %s", file, layer);
    ck_assert_msg(!alpha || !strcmp(layer, "elu"), "%s: alpha for %s", file, layer);
    ck_assert_msg(
        !approx || (!strcmp(layer, "gelu") && (!strcmp(approx, "none") || !strcmp(approx, "tanh"))),
        "%s: approximate='%s' for %s", file, approx, layer);
    for (const char *v = slope ? slope : alpha; v; v = NULL) {
        char *end;
        strtod(v, &end);
        ck_assert_msg(*v && !*end, "%s: metadata '%s' is not a number", file, v);
    }
}

/* A 0-d tensor (or one of a single value) name; returns its value. */
static float expect_scalar(const clnet_st_file *f, const char *file, const char *name) {
    const float *v = NULL;
    int ndim = -1;
    const int64_t *shape;
    ck_assert_msg(clnet_st_get(f, name, 0, NULL, &v, &ndim, &shape) == CLNET_OK, "%s: %s", file,
                  clnet_last_error());
    ck_assert_msg(ndim == 0 || (ndim == 1 && shape[0] == 1), "%s: %s must hold one value", file,
                  name);
    return v[0];
}

/* got (n) against the fixture's want (n), within tol of max(1, |want|) */
static void expect_close(const char *file, const char *what, const float *got, const float *want,
                         int64_t n, double tol) {
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
                      "%s: %s[%lld] is %.9g, the reference says %.9g", file, what, (long long)i,
                      got[i], want[i]);
}

/* The fixture's label_smoothing (metadata), 0 where it has none; in (0, 1]. */
static double label_smoothing(const clnet_st_file *f, const char *file) {
    const char *v = clnet_st_meta_get(f, "label_smoothing");
    if (!v) return 0;
    char *end = NULL;
    double eps = strtod(v, &end);
    ck_assert_msg(end != v && *end == '\0' && eps > 0 && eps <= 1,
                  "%s: metadata label_smoothing='%s'", file, v);
    return eps;
}

/* softmax_xent_positions: x = logits (N, K, spatial...), labels (N, spatial...) = class
 * indices as floats, y (x's shape) the softmax over K, loss and correct (0-d), dx (x's
 * shape); each compared with ref_softmax_xent_positions_forward/backward. Returns the
 * number of tensors, 6. */
static int check_xent_positions(const clnet_st_file *f, const char *file, dims x) {
    ck_assert_msg(x.ndim >= 3, "%s: x must be logits (N, K, spatial...)", file);
    int64_t n = x.d[0], k = x.d[1], positions = 1;
    ck_assert_int_eq(meta_int(f, file, "classes"), k);
    dims at = {x.ndim - 1, {n}}; /* labels (N, spatial...) */
    for (int i = 2; i < x.ndim; i++) at.d[i - 1] = x.d[i], positions *= x.d[i];
    const float *logits = expect(f, file, "x", x), *y = expect(f, file, "y", x);
    const float *dx = expect(f, file, "dx", x);
    const float *label_values = expect(f, file, "labels", at);
    float loss = expect_scalar(f, file, "loss"), correct = expect_scalar(f, file, "correct");
    size_t count = (size_t)(n * k * positions);
    int32_t *labels = malloc((size_t)(n * positions) * sizeof *labels);
    float *probs = malloc(count * sizeof *probs), *dlogits = malloc(count * sizeof *dlogits);
    ck_assert(labels && probs && dlogits);
    for (int64_t i = 0; i < n * positions; i++) {
        float v = label_values[i];
        ck_assert_msg(v == floorf(v) && v >= 0 && v < k, "%s: label %lld is %g", file, (long long)i,
                      v);
        labels[i] = (int32_t)v;
    }
    int hits = -1;
    double eps = label_smoothing(f, file);
    double want = eps ? ref_softmax_xent_smoothed_forward(probs, &hits, logits, labels, (int)n,
                                                          (int)k, (int)positions, eps)
                      : ref_softmax_xent_positions_forward(probs, &hits, logits, labels, (int)n,
                                                           (int)k, (int)positions);
    if (eps)
        ref_softmax_xent_smoothed_backward(dlogits, logits, labels, (int)n, (int)k, (int)positions,
                                           eps);
    else
        ref_softmax_xent_positions_backward(dlogits, logits, labels, (int)n, (int)k,
                                            (int)positions);
    ck_assert_msg(fabs(loss - want) <= 1e-6 * fmax(1.0, fabs(want)),
                  "%s: loss is %.9g, the reference says %.9g", file, loss, want);
    ck_assert_msg(correct == (float)hits, "%s: correct is %g, the reference says %d", file, correct,
                  hits);
    expect_close(file, "y", y, probs, (int64_t)count, 1e-6);
    expect_close(file, "dx", dx, dlogits, (int64_t)count, 1e-6);
    free(labels), free(probs), free(dlogits);
    return 6; /* x, labels, y, loss, correct, dx */
}

/* Checks one fixture; returns the index of its layer in LAYERS. */
static int check_fixture(const char *path, const char *file) {
    clnet_st_file *f = NULL;
    clnet_status s = clnet_st_load(path, &f);
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    const char *layer = clnet_st_meta_get(f, "layer");
    ck_assert_msg(layer != NULL, "%s: no metadata 'layer'", file);
    int kind = -1;
    for (int k = 0; k < NLAYERS; k++)
        if (strcmp(layer, LAYERS[k]) == 0) kind = k;
    ck_assert_msg(kind >= 0, "%s: unknown layer '%s'", file, layer);

    int ndim = 0;
    const int64_t *xs = NULL;
    ck_assert_msg(clnet_st_get(f, "x", 0, NULL, NULL, &ndim, &xs) == CLNET_OK, "%s: %s", file,
                  clnet_last_error());
    ck_assert_msg(ndim >= 1 && ndim <= MAX_DIMS, "%s: x has %d dimensions", file, ndim);
    dims x = {ndim, {0}};
    for (int i = 0; i < ndim; i++) x.d[i] = xs[i];

    /* The file name is the layer's, then "_" or, as PyTorch's MaxPool3d or BatchNorm1d (which
     * also takes (N, C)) say it, the spatial axes of x: "1d_", "2d_", "3d_". */
    char axes[16];
    snprintf(axes, sizeof axes, "%dd_", ndim > 3 ? ndim - 2 : 1);
    const char *rest = strncmp(file, layer, strlen(layer)) == 0 ? file + strlen(layer) : "";
    ck_assert_msg(rest[0] == '_' || strncmp(rest, axes, 3) == 0,
                  "%s: file name does not begin with %s_ or %s%s", file, layer, layer, axes);

    int expected_tensors = 4; /* x, y, dy, dx */
    if (!strncmp(layer, "conv", 4) || !strcmp(layer, "maxpool") || !strcmp(layer, "avgpool")) {
        expected_tensors = check_window_op(f, file, layer, x);
    } else if (!strcmp(layer, "linear")) {
        ck_assert_msg(ndim == 2, "%s: x must be (N, in_features)", file);
        int64_t n = x.d[0], in = meta_int(f, file, "in_features");
        int64_t out = meta_int(f, file, "out_features");
        expect_io(f, file, (dims){2, {n, in}}, (dims){2, {n, out}});
        expected_tensors += expect_parameters(f, file, (dims){2, {out, in}}, out);
    } else if (!strcmp(layer, "global_avgpool") || !strcmp(layer, "global_maxpool")) {
        /* AdaptiveAvgPool1d/2d/3d(1), AdaptiveMaxPool...(1): (N, C, spatial...) -> (N, C, 1...) */
        ck_assert_msg(ndim >= 3 && ndim <= 5,
                      "%s: x must be (N, C, L), (N, C, H, W) or (N, C, D, H, W)", file);
        ck_assert_int_eq(meta_int(f, file, "in_channels"), x.d[1]);
        dims y = x;
        for (int i = 2; i < ndim; i++) y.d[i] = 1;
        expect_io(f, file, x, y);
    } else if (!strcmp(layer, "upsample")) {
        /* nn.Upsample with a whole factor per axis: y (N, C, spatial * scale...) */
        ck_assert_msg(ndim >= 3 && ndim <= 5,
                      "%s: x must be (N, C, L), (N, C, H, W) or (N, C, D, H, W)", file);
        ck_assert_int_eq(meta_int(f, file, "in_channels"), x.d[1]);
        const char *mode = clnet_st_meta_get(f, "mode");
        ck_assert_msg(mode && (!strcmp(mode, "nearest") || !strcmp(mode, "linear")),
                      "%s: metadata mode='%s', expected nearest or linear", file, mode);
        int64_t scale[3];
        meta_values(f, file, "scale", ndim - 2, -1, scale);
        dims y = x;
        for (int i = 2; i < ndim; i++) {
            ck_assert_msg(scale[i - 2] >= 1, "%s: a scale of %lld", file, (long long)scale[i - 2]);
            y.d[i] *= scale[i - 2];
        }
        expect_io(f, file, x, y);
    } else if (!strcmp(layer, "dropout")) {
        /* x, dy and what survivors become, y_kept = x / (1 - p) and dx_kept = dy / (1 - p),
         * all of x's shape; x holds no 0, which would hide whether it was dropped */
        int64_t count = 1;
        for (int i = 0; i < ndim; i++) count *= x.d[i];
        const char *pv = clnet_st_meta_get(f, "p");
        char *end = NULL;
        double p = pv ? strtod(pv, &end) : -1;
        ck_assert_msg(pv && *end == '\0' && p >= 0 && p < 1, "%s: metadata p", file);
        const float *xv = expect(f, file, "x", x);
        const float *dy = expect(f, file, "dy", x);
        const float *y_kept = expect(f, file, "y_kept", x);
        const float *dx_kept = expect(f, file, "dx_kept", x);
        for (int64_t i = 0; i < count; i++) {
            if (xv[i] == 0 || !(fabs(y_kept[i] - xv[i] / (1 - p)) <= 1e-6 * fabs(y_kept[i]) &&
                                fabs(dx_kept[i] - dy[i] / (1 - p)) <= 1e-6 * fabs(dx_kept[i])))
                ck_abort_msg("%s: element %lld: x %g, dy %g, y_kept %g, dx_kept %g", file,
                             (long long)i, xv[i], dy[i], y_kept[i], dx_kept[i]);
        }
    } else if (!strcmp(layer, "mse") || !strcmp(layer, "l1") || !strcmp(layer, "bce_with_logits")) {
        /* x, its target, the output y and both gradients of x's shape; the loss a scalar, the
         * sum over samples of each one's mean, at least 0 */
        const char *full[] = {"x", "target", "y", "dx", "dtarget"};
        for (int i = 0; i < 5; i++) expect(f, file, full[i], x);
        const float *loss = expect(f, file, "loss", (dims){0, {0}});
        ck_assert_msg(loss[0] >= 0, "%s: loss %g", file, loss[0]);
        expected_tensors = 6;
    } else if (!strcmp(layer, "softmax_xent")) {
        ck_assert_msg(ndim == 2, "%s: x must be logits (N, K)", file);
        int64_t n = x.d[0], k = x.d[1];
        ck_assert_int_eq(meta_int(f, file, "classes"), k);
        const float *logits = expect(f, file, "x", x);
        expect(f, file, "dx", x);
        const float *labels = expect(f, file, "labels", (dims){1, {n}});
        const float *loss = NULL, *correct = NULL;
        int ln = -1, cn = -1;
        const int64_t *lshape, *cshape;
        ck_assert_int_eq(clnet_st_get(f, "loss", 0, NULL, &loss, &ln, &lshape), CLNET_OK);
        ck_assert_int_eq(clnet_st_get(f, "correct", 0, NULL, &correct, &cn, &cshape), CLNET_OK);
        ck_assert_msg((ln == 0 || (ln == 1 && lshape[0] == 1)) &&
                          (cn == 0 || (cn == 1 && cshape[0] == 1)),
                      "%s: loss and correct must hold one value each", file);
        ck_assert(isfinite(loss[0]) && loss[0] >= 0);
        /* Labels are class indices; correct counts the samples whose argmax is the label. */
        int hits = 0;
        for (int64_t i = 0; i < n; i++) {
            ck_assert_msg(labels[i] == floorf(labels[i]) && labels[i] >= 0 && labels[i] < k,
                          "%s: label %lld is %g", file, (long long)i, labels[i]);
            int64_t best = 0;
            for (int64_t j = 1; j < k; j++)
                if (logits[i * k + j] > logits[i * k + best]) best = j;
            hits += best == (int64_t)labels[i];
        }
        ck_assert_msg(correct[0] == (float)hits, "%s: correct is %g, argmax finds %d", file,
                      correct[0], hits);
        /* the loss and dx against the plain-C reference, smoothed where the fixture is */
        int32_t *ilabels = malloc((size_t)n * sizeof *ilabels);
        float *dlogits = malloc((size_t)(n * k) * sizeof *dlogits);
        ck_assert(ilabels && dlogits);
        for (int64_t i = 0; i < n; i++) ilabels[i] = (int32_t)labels[i];
        double eps = label_smoothing(f, file);
        double want =
            ref_softmax_xent_smoothed_forward(NULL, NULL, logits, ilabels, (int)n, (int)k, 1, eps);
        ref_softmax_xent_smoothed_backward(dlogits, logits, ilabels, (int)n, (int)k, 1, eps);
        ck_assert_msg(fabs(loss[0] - want) <= 1e-6 * fmax(1.0, fabs(want)),
                      "%s: loss is %.9g, the reference says %.9g", file, loss[0], want);
        expect_close(file, "dx", expect(f, file, "dx", x), dlogits, n * k, 1e-6);
        free(ilabels), free(dlogits);
        expected_tensors = 5; /* x, labels, loss, correct, dx */
    } else if (!strcmp(layer, "softmax_xent_positions")) {
        expected_tensors = check_xent_positions(f, file, x);
    } else if (!strcmp(layer, "batchnorm")) {
        /* x (N, C, spatial...): y, dy, dx and y_eval have its shape; the parameters, their
         * gradients and the running statistics before and after the step are (C) */
        ck_assert_msg(ndim >= 2 && ndim <= 5, "%s: x must be (N, C) or (N, C, spatial...)", file);
        int64_t c = x.d[1], values = x.d[0];
        for (int i = 2; i < ndim; i++) values *= x.d[i];
        ck_assert_int_eq(meta_int(f, file, "channels"), c);
        ck_assert_msg(values >= 2, "%s: %lld value(s) per channel cannot train", file,
                      (long long)values);
        const char *eps = clnet_st_meta_get(f, "eps"), *momentum = clnet_st_meta_get(f, "momentum");
        ck_assert_msg(eps && strtod(eps, NULL) > 0, "%s: metadata eps", file);
        ck_assert_msg(momentum && strtod(momentum, NULL) >= 0 && strtod(momentum, NULL) <= 1,
                      "%s: metadata momentum", file);
        const char *full[] = {"x", "y", "dy", "dx", "y_eval"};
        for (int i = 0; i < 5; i++) expect(f, file, full[i], x);
        const char *per_channel[] = {"weight",
                                     "bias",
                                     "dweight",
                                     "dbias",
                                     "running_mean",
                                     "running_var",
                                     "running_mean_after",
                                     "running_var_after"};
        for (int i = 0; i < 8; i++) {
            const float *v = expect(f, file, per_channel[i], (dims){1, {c}});
            if (strncmp(per_channel[i], "running_var", 11) == 0) /* variances: positive */
                for (int64_t j = 0; j < c; j++)
                    ck_assert_msg(v[j] > 0, "%s: %s[%lld] is %g", file, per_channel[i],
                                  (long long)j, v[j]);
        }
        expected_tensors = 13;
    } else { /* the activations: y has x's shape, whatever it is */
        expect_io(f, file, x, x);
        activation_options(f, file, layer);
    }
    ck_assert_msg(clnet_st_count(f) == expected_tensors, "%s: %d tensors, expected %d", file,
                  clnet_st_count(f), expected_tensors);
    clnet_st_free(f);
    return kind;
}

START_TEST(every_fixture_has_consistent_tensors) {
    DIR *d = opendir(CLNET_FIXTURES_DIR);
    ck_assert_msg(d != NULL, "cannot open %s", CLNET_FIXTURES_DIR);
    int per_layer[NLAYERS] = {0}, files = 0;
    struct dirent *e;
    const char *suffix = ".safetensors";
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= strlen(suffix) || strcmp(e->d_name + len - strlen(suffix), suffix) != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", CLNET_FIXTURES_DIR, e->d_name);
        per_layer[check_fixture(path, e->d_name)]++;
        files++;
    }
    closedir(d);
    printf("fixtures: %d files checked\n", files);
    for (int k = 0; k < NLAYERS; k++)
        ck_assert_msg(per_layer[k] > 0, "no fixture for %s", LAYERS[k]);
}
END_TEST

int main(void) {
    Suite *s = suite_create("fixtures");
    TCase *t = tcase_create("fixtures");
    tcase_add_test(t, every_fixture_has_consistent_tensors);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
