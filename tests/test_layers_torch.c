/* Every layer on every device against the PyTorch golden fixtures in tests/fixtures/: a
 * second reference, independent of the plain-C one in tests/ref/. Each fixture file says
 * in its metadata which layer it holds and how it is configured; the test builds that
 * layer from a model-file line, uploads the fixture's parameters, runs forward and
 * backward with the fixture's x and dy, and compares y, dx, dweight and dbias (for the
 * loss: the summed loss, the count of correct samples and dx; for batch norm also the
 * running statistics after the training pass, from the fixture's starting ones, and an
 * evaluation pass with them).
 *
 * The fixtures were computed in float64 and rounded once, so the difference is the
 * device's own float32 rounding. On a slow simulator the large cases are skipped (and
 * said so); every fixture still runs on every other device, which the test asserts, so
 * it cannot pass by skipping. */
#include "layer_rig.h"
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

typedef enum { CONV, MAXPOOL, AVGPOOL, RELU, SIGMOID, TANH, LINEAR, LOSS, BATCHNORM, NKINDS } kind;
static const char *const KIND_META[NKINDS] = {"conv2d", "maxpool",      "avgpool",
                                              "relu",   "sigmoid",      "tanh",
                                              "linear", "softmax_xent", "batchnorm"};

/* One fixture: its file, its layer as a model-file line, and its tensors. */
typedef struct {
    char file[256];
    clnet_st_file *st;
    kind k;
    char line[128];
    int n;             /* batch */
    rig_shape in;      /* one sample's input */
    size_t nx, ny;     /* elements of x and y (y: 0 for the loss) */
    int64_t yshape[4]; /* y's expected shape, ndim as x's */
    int ndim;
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

/* Loads a fixture and derives its layer's model-file line and shapes from the metadata. */
static void fixture_load(fixture *fx, const char *file) {
    memset(fx, 0, sizeof *fx);
    snprintf(fx->file, sizeof fx->file, "%s", file);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", CLNET_FIXTURES_DIR, file);
    ck_assert_msg(clnet_st_load(path, &fx->st) == CLNET_OK, "%s", clnet_last_error());
    const char *layer = clnet_st_meta_get(fx->st, "layer");
    ck_assert_msg(layer != NULL, "%s: no metadata 'layer'", file);
    fx->k = NKINDS;
    for (int k = 0; k < NKINDS; k++)
        if (strcmp(layer, KIND_META[k]) == 0) fx->k = (kind)k;
    ck_assert_msg(fx->k != NKINDS, "%s: unknown layer '%s'", file, layer);

    /* x is (N, C, H, W), or (N, F) read as (N, F, 1, 1) */
    const int64_t *xs = NULL;
    ck_assert_msg(clnet_st_get(fx->st, "x", 0, NULL, NULL, &fx->ndim, &xs) == CLNET_OK, "%s",
                  clnet_last_error());
    ck_assert_msg(fx->ndim == 4 || fx->ndim == 2, "%s: x has %d dimensions", file, fx->ndim);
    fx->n = (int)xs[0];
    fx->in =
        (rig_shape){(int)xs[1], fx->ndim == 4 ? (int)xs[2] : 1, fx->ndim == 4 ? (int)xs[3] : 1};
    fx->nx = (size_t)fx->n * rig_shape_size(fx->in);

    int c = fx->in.c, h = fx->in.h, w = fx->in.w;
    rig_shape out = fx->in;
    switch (fx->k) {
    case CONV:
    case MAXPOOL:
    case AVGPOOL: {
        int kh = meta_int(fx, "kernel_h"), kw = meta_int(fx, "kernel_w");
        int sh = meta_int(fx, "stride_h"), sw = meta_int(fx, "stride_w");
        int ph = meta_int(fx, "pad_h"), pw = meta_int(fx, "pad_w");
        ck_assert_int_eq(meta_int(fx, "in_channels"), c);
        char conv[32] = "";
        if (fx->k == CONV) {
            out.c = meta_int(fx, "out_channels");
            snprintf(conv, sizeof conv, " filters=%d", out.c);
        }
        snprintf(fx->line, sizeof fx->line, "%s%s size=%dx%d stride=%dx%d pad=%dx%d",
                 fx->k == CONV ? "conv2d" : layer, conv, kh, kw, sh, sw, ph, pw);
        out.h = (h + 2 * ph - kh) / sh + 1;
        out.w = (w + 2 * pw - kw) / sw + 1;
        break;
    }
    case RELU:
    case SIGMOID:
    case TANH:
        snprintf(fx->line, sizeof fx->line, "%s", layer);
        break;
    case LINEAR:
        ck_assert_int_eq(meta_int(fx, "in_features"), (int)rig_shape_size(fx->in));
        out = (rig_shape){meta_int(fx, "out_features"), 1, 1};
        snprintf(fx->line, sizeof fx->line, "linear units=%d", out.c);
        break;
    case LOSS:
        ck_assert_int_eq(meta_int(fx, "classes"), (int)rig_shape_size(fx->in));
        snprintf(fx->line, sizeof fx->line, "softmax_cross_entropy");
        break;
    case BATCHNORM: {
        ck_assert_int_eq(meta_int(fx, "channels"), c);
        const char *eps = clnet_st_meta_get(fx->st, "eps");
        const char *momentum = clnet_st_meta_get(fx->st, "momentum");
        ck_assert_msg(eps && momentum, "%s: no metadata eps or momentum", file);
        snprintf(fx->line, sizeof fx->line, "batchnorm eps=%s momentum=%s", eps, momentum);
        break;
    }
    case NKINDS:
        break;
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

/* Runs one fixture on one device; returns the largest relative difference and names its
 * tensor in `worst`. */
static double run_fixture(const fixture *fx, clnet_device *d, const char **worst) {
    layer_rig r;
    rig_create(&r, d, fx->in, fx->line, fx->n);
    ck_assert_msg(r.in_count == fx->nx, "%s: the layer takes %zu inputs, x holds %zu", fx->file,
                  r.in_count, fx->nx);
    float *dx = malloc(fx->nx * sizeof(float));
    const float *x = tensor(fx, "x", -1, NULL);
    const float *dx_ref = tensor(fx, "dx", fx->ndim == 4 ? 4 : 2,
                                 (const int64_t[]){fx->n, fx->in.c, fx->in.h, fx->in.w});
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
            b = tensor(fx, "bias", 1, (const int64_t[]){(int64_t)nb});
            db_ref = tensor(fx, "dbias", 1, (const int64_t[]){(int64_t)nb});
        }
        ck_assert_msg(r.out_count == fx->ny, "%s: the layer gives %zu outputs, expected %zu",
                      fx->file, r.out_count, fx->ny);
        int64_t ys2[2] = {fx->n, (int64_t)(fx->ny / (size_t)fx->n)};
        const int64_t *ys = fx->ndim == 4 ? fx->yshape : ys2;
        const float *y_ref = tensor(fx, "y", fx->ndim, ys);
        const float *dy = tensor(fx, "dy", fx->ndim, ys);
        float *y = malloc(fx->ny * sizeof(float));
        float *dw = malloc((nw + 1) * sizeof(float)), *db = malloc((nb + 1) * sizeof(float));
        /* batch norm: the running statistics the step starts from */
        float *buffers = malloc((r.nbuffers + 1) * sizeof(float));
        size_t moff = 0, voff = 0;
        const int64_t channels[1] = {fx->in.c};
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
        if (nw) {
            NOTE("dweight", compare(fx, d, "dweight", dw, dw_ref, nw));
            NOTE("dbias", compare(fx, d, "dbias", db, db_ref, nb));
        }
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
            if (slow && fixture_size(&fx[i]) > SLOW_MAX_ELEMENTS) {
                printf("%-38s on %-24.24s skipped: %zu elements is too large for a simulator\n",
                       fx[i].file, d->info.name, fixture_size(&fx[i]));
                skipped++;
                continue;
            }
            const char *worst = "";
            double diff = run_fixture(&fx[i], d, &worst);
            worst_kind[fx[i].k] = fmax(worst_kind[fx[i].k], diff);
            printf("%-38s on %-24.24s largest relative difference %.1e (%s)\n", fx[i].file,
                   d->info.name, diff, worst);
            ran_on[i]++;
            ran++;
        }
        printf("%s: %d of %d fixtures run, %d skipped; largest difference per kind:", d->info.name,
               ran, files, skipped);
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

int main(void) {
    Suite *s = suite_create("torch");
    TCase *t = tcase_create("torch");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, every_layer_matches_pytorch_on_every_device);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
