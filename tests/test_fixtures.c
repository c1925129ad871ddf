/* The PyTorch golden fixtures in tests/fixtures/ (written by make_fixtures.py): every file
 * loads, says which layer it is, and holds exactly the tensors that layer needs, with
 * shapes consistent with each other and with the configuration in its metadata. The
 * torch.* tests (test_layers_torch.c) compare the kernels against the values. */
#include "harness.h"
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

static const char *const LAYERS[] = {"conv2d",    "maxpool", "avgpool",        "relu",
                                     "sigmoid",   "tanh",    "linear",         "softmax_xent",
                                     "batchnorm", "dropout", "global_avgpool", "global_maxpool"};
#define NLAYERS (int)(sizeof LAYERS / sizeof LAYERS[0])

/* A positive integer from the metadata. */
static int64_t meta_int(const clnet_st_file *f, const char *file, const char *key) {
    const char *v = clnet_st_meta_get(f, key);
    ck_assert_msg(v != NULL, "%s: no metadata '%s'", file, key);
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    ck_assert_msg(errno == 0 && *v && *end == '\0' && n >= 0, "%s: metadata %s='%s'", file, key, v);
    return (int64_t)n;
}

/* Checks the tensor's shape and that all its values are finite; returns its data. */
static const float *expect(const clnet_st_file *f, const char *file, const char *name, int ndim,
                           int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    const int64_t want[4] = {d0, d1, d2, d3};
    const float *data = NULL;
    int got_ndim = 0;
    const int64_t *shape = NULL;
    clnet_status s = clnet_st_get(f, name, ndim, want, &data, &got_ndim, &shape);
    ck_assert_msg(s == CLNET_OK, "%s: %s", file, clnet_last_error());
    int64_t n = 1;
    for (int d = 0; d < got_ndim; d++) n *= shape[d];
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(isfinite(data[i]), "%s: %s[%lld] is not finite", file, name, (long long)i);
    return data;
}

static int64_t pooled(int64_t size, int64_t kernel, int64_t stride, int64_t pad) {
    return (size + 2 * pad - kernel) / stride + 1;
}

/* A metadata number that may be absent (then def). */
static int64_t meta_int_or(const clnet_st_file *f, const char *key, int64_t def) {
    const char *v = clnet_st_meta_get(f, key);
    return v ? strtoll(v, NULL, 10) : def;
}

/* 1 unless the metadata says bias=False (PyTorch's Conv2d or Linear without a bias). */
static int has_bias(const clnet_st_file *f, const char *file) {
    const char *v = clnet_st_meta_get(f, "bias");
    ck_assert_msg(v == NULL || strcmp(v, "False") == 0, "%s: metadata bias='%s'", file, v);
    return v == NULL;
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
    ck_assert_msg(strncmp(file, layer, strlen(layer)) == 0, "%s: file name does not begin with %s",
                  file, layer);

    int expected_tensors = 4; /* x, y, dy, dx */
    int ndim = 0;
    const int64_t *xs = NULL;
    ck_assert_msg(clnet_st_get(f, "x", 0, NULL, NULL, &ndim, &xs) == CLNET_OK, "%s: %s", file,
                  clnet_last_error());

    if (!strcmp(layer, "conv2d") || !strcmp(layer, "maxpool") || !strcmp(layer, "avgpool")) {
        ck_assert_msg(ndim == 4, "%s: x must be (N, C, H, W)", file);
        int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
        int64_t kh = meta_int(f, file, "kernel_h"), kw = meta_int(f, file, "kernel_w");
        int64_t sh = meta_int(f, file, "stride_h"), sw = meta_int(f, file, "stride_w");
        int64_t ph = meta_int(f, file, "pad_h"), pw = meta_int(f, file, "pad_w");
        ck_assert_int_eq(meta_int(f, file, "in_channels"), c);
        ck_assert(kh > 0 && kw > 0 && sh > 0 && sw > 0);
        /* conv2d: dilation (a kernel spans d*(k-1)+1) and groups (weight (out, in/groups, ...)) */
        int64_t dh = meta_int_or(f, "dilation_h", 1), dw = meta_int_or(f, "dilation_w", 1);
        int64_t groups = meta_int_or(f, "groups", 1);
        ck_assert(dh > 0 && dw > 0 && groups > 0 && c % groups == 0);
        int64_t oh = pooled(h, dh * (kh - 1) + 1, sh, ph),
                ow = pooled(w, dw * (kw - 1) + 1, sw, pw);
        if (clnet_st_meta_get(f, "pad_same")) /* padding='same': the size kept, stride 1 */
            oh = h, ow = w;
        if (clnet_st_meta_get(f, "ceil")) { /* ceil_mode: rounded up, a last window kept */
            oh = (h + 2 * ph - (dh * (kh - 1) + 1) + sh - 1) / sh + 1; /* if it starts inside */
            ow = (w + 2 * pw - (dw * (kw - 1) + 1) + sw - 1) / sw + 1;
            if ((oh - 1) * sh >= h + ph) oh--;
            if ((ow - 1) * sw >= w + pw) ow--;
        }
        int64_t co = c;
        if (!strcmp(layer, "conv2d")) {
            co = meta_int(f, file, "out_channels");
            ck_assert(co % groups == 0);
            expect(f, file, "weight", 4, co, c / groups, kh, kw);
            expect(f, file, "dweight", 4, co, c / groups, kh, kw);
            expected_tensors += 2;
            if (has_bias(f, file)) {
                expect(f, file, "bias", 1, co, 0, 0, 0);
                expect(f, file, "dbias", 1, co, 0, 0, 0);
                expected_tensors += 2;
            }
        } else {
            /* PyTorch's pools allow pad <= kernel / 2 only. */
            ck_assert(2 * ph <= kh && 2 * pw <= kw);
        }
        expect(f, file, "x", 4, n, c, h, w);
        expect(f, file, "dx", 4, n, c, h, w);
        expect(f, file, "y", 4, n, co, oh, ow);
        expect(f, file, "dy", 4, n, co, oh, ow);
    } else if (!strcmp(layer, "linear")) {
        ck_assert_msg(ndim == 2, "%s: x must be (N, in_features)", file);
        int64_t n = xs[0], in = meta_int(f, file, "in_features");
        int64_t out = meta_int(f, file, "out_features");
        expect(f, file, "x", 2, n, in, 0, 0);
        expect(f, file, "dx", 2, n, in, 0, 0);
        expect(f, file, "y", 2, n, out, 0, 0);
        expect(f, file, "dy", 2, n, out, 0, 0);
        expect(f, file, "weight", 2, out, in, 0, 0);
        expect(f, file, "dweight", 2, out, in, 0, 0);
        expected_tensors += 2;
        if (has_bias(f, file)) {
            expect(f, file, "bias", 1, out, 0, 0, 0);
            expect(f, file, "dbias", 1, out, 0, 0, 0);
            expected_tensors += 2;
        }
    } else if (!strcmp(layer, "global_avgpool") || !strcmp(layer, "global_maxpool")) {
        /* AdaptiveAvgPool2d(1), AdaptiveMaxPool2d(1): (N, C, H, W) -> (N, C, 1, 1) */
        ck_assert_msg(ndim == 4, "%s: x must be (N, C, H, W)", file);
        int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
        ck_assert_int_eq(meta_int(f, file, "in_channels"), c);
        expect(f, file, "x", 4, n, c, h, w);
        expect(f, file, "dx", 4, n, c, h, w);
        expect(f, file, "y", 4, n, c, 1, 1);
        expect(f, file, "dy", 4, n, c, 1, 1);
    } else if (!strcmp(layer, "dropout")) {
        /* x, dy and what survivors become, y_kept = x / (1 - p) and dx_kept = dy / (1 - p),
         * all of x's shape; x holds no 0, which would hide whether it was dropped */
        ck_assert(ndim >= 1 && ndim <= 4);
        int64_t d[4] = {0, 0, 0, 0}, count = 1;
        for (int i = 0; i < ndim; i++) d[i] = xs[i], count *= xs[i];
        const char *pv = clnet_st_meta_get(f, "p");
        char *end = NULL;
        double p = pv ? strtod(pv, &end) : -1;
        ck_assert_msg(pv && *end == '\0' && p >= 0 && p < 1, "%s: metadata p", file);
        const float *x = expect(f, file, "x", ndim, d[0], d[1], d[2], d[3]);
        const float *dy = expect(f, file, "dy", ndim, d[0], d[1], d[2], d[3]);
        const float *y_kept = expect(f, file, "y_kept", ndim, d[0], d[1], d[2], d[3]);
        const float *dx_kept = expect(f, file, "dx_kept", ndim, d[0], d[1], d[2], d[3]);
        for (int64_t i = 0; i < count; i++) {
            if (x[i] == 0 || !(fabs(y_kept[i] - x[i] / (1 - p)) <= 1e-6 * fabs(y_kept[i]) &&
                               fabs(dx_kept[i] - dy[i] / (1 - p)) <= 1e-6 * fabs(dx_kept[i])))
                ck_abort_msg("%s: element %lld: x %g, dy %g, y_kept %g, dx_kept %g", file,
                             (long long)i, x[i], dy[i], y_kept[i], dx_kept[i]);
        }
    } else if (!strcmp(layer, "softmax_xent")) {
        ck_assert_msg(ndim == 2, "%s: x must be logits (N, K)", file);
        int64_t n = xs[0], k = xs[1];
        ck_assert_int_eq(meta_int(f, file, "classes"), k);
        const float *x = expect(f, file, "x", 2, n, k, 0, 0);
        expect(f, file, "dx", 2, n, k, 0, 0);
        const float *labels = expect(f, file, "labels", 1, n, 0, 0, 0);
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
                if (x[i * k + j] > x[i * k + best]) best = j;
            hits += best == (int64_t)labels[i];
        }
        ck_assert_msg(correct[0] == (float)hits, "%s: correct is %g, argmax finds %d", file,
                      correct[0], hits);
        expected_tensors = 5; /* x, labels, loss, correct, dx */
    } else if (!strcmp(layer, "batchnorm")) {
        /* x (N, C, spatial...): y, dy, dx and y_eval have its shape; the parameters, their
         * gradients and the running statistics before and after the step are (C) */
        ck_assert_msg(ndim >= 2 && ndim <= 4, "%s: x must be (N, C) or (N, C, H, W)", file);
        int64_t d[4] = {0, 0, 0, 0};
        for (int i = 0; i < ndim; i++) d[i] = xs[i];
        int64_t c = d[1], values = d[0];
        for (int i = 2; i < ndim; i++) values *= d[i];
        ck_assert_int_eq(meta_int(f, file, "channels"), c);
        ck_assert_msg(values >= 2, "%s: %lld value(s) per channel cannot train", file,
                      (long long)values);
        const char *eps = clnet_st_meta_get(f, "eps"), *momentum = clnet_st_meta_get(f, "momentum");
        ck_assert_msg(eps && strtod(eps, NULL) > 0, "%s: metadata eps", file);
        ck_assert_msg(momentum && strtod(momentum, NULL) >= 0 && strtod(momentum, NULL) <= 1,
                      "%s: metadata momentum", file);
        const char *full[] = {"x", "y", "dy", "dx", "y_eval"};
        for (int i = 0; i < 5; i++) expect(f, file, full[i], ndim, d[0], d[1], d[2], d[3]);
        const char *per_channel[] = {"weight",
                                     "bias",
                                     "dweight",
                                     "dbias",
                                     "running_mean",
                                     "running_var",
                                     "running_mean_after",
                                     "running_var_after"};
        for (int i = 0; i < 8; i++) {
            const float *v = expect(f, file, per_channel[i], 1, c, 0, 0, 0);
            if (strncmp(per_channel[i], "running_var", 11) == 0) /* variances: positive */
                for (int64_t j = 0; j < c; j++)
                    ck_assert_msg(v[j] > 0, "%s: %s[%lld] is %g", file, per_channel[i],
                                  (long long)j, v[j]);
        }
        expected_tensors = 13;
    } else { /* relu, sigmoid, tanh: y has x's shape, whatever it is */
        ck_assert(ndim >= 1 && ndim <= 4);
        int64_t d[4] = {0, 0, 0, 0};
        for (int i = 0; i < ndim; i++) d[i] = xs[i];
        const char *names[] = {"x", "y", "dy", "dx"};
        for (int i = 0; i < 4; i++) expect(f, file, names[i], ndim, d[0], d[1], d[2], d[3]);
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
