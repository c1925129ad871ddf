/* The clipped step of clip_fixture.h. */
#include "clip_fixture.h"
#include "harness.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The model of the fixture: input 3x4x4, conv2d c, relu, linear fc, 3 classes. */
static const char *MODEL[] = {"input channels=3 height=4 width=4",
                              "conv2d name=c filters=2 size=3",
                              "relu",
                              "flatten",
                              "linear name=fc units=3",
                              "softmax_cross_entropy"};

static void fixture_path(char *path, size_t cap, const char *file) {
    snprintf(path, cap, "%s/optim/%s", CLNET_FIXTURES_DIR, file);
}

static double meta(const clnet_st_file *f, const char *key) {
    const char *v = clnet_st_meta_get(f, key);
    ck_assert_msg(v != NULL, "no metadata %s", key);
    return atof(v);
}

/* The model with the weights of `file` (a state dict as a checkpoint names it). */
static clnet_net *net_from(const char *file) {
    char path[512];
    fixture_path(path, sizeof path, file);
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (size_t i = 0; i < sizeof MODEL / sizeof *MODEL; i++)
        ck_assert_int_eq(clnet_net_add(net, MODEL[i]), CLNET_OK);
    ck_assert_msg(clnet_net_load_weights(net, path, NULL) == CLNET_OK, "%s", clnet_last_error());
    return net;
}

/* The step from clip_w0, clipped at max_norm, on rt split as `split` (NULL: measured):
 * the parameters after (malloc'ed), and the norm the step reported. */
static float *clipped_step(clnet_runtime *rt, const double *split, double max_norm, double *norm) {
    char path[512];
    fixture_path(path, sizeof path, "clip_data.safetensors");
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    const float *x = NULL, *yf = NULL;
    ck_assert_int_eq(clnet_st_get(f, "x", 4, (int64_t[]){8, 3, 4, 4}, &x, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_st_get(f, "y", 1, (int64_t[]){8}, &yf, NULL, NULL), CLNET_OK);
    int32_t y[8];
    for (int i = 0; i < 8; i++) y[i] = (int32_t)yf[i];
    clnet_net *net = net_from("clip_w0.safetensors");
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = (float)meta(f, "lr");
    c.momentum = (float)meta(f, "momentum");
    c.weight_decay = (float)meta(f, "weight_decay");
    c.clip_grad_norm = (float)max_norm;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_OK);
    ck_assert_msg(clnet_net_bind(net, rt, 8) == CLNET_OK, "%s", clnet_last_error());
    if (split)
        ck_assert_int_eq(clnet_net_set_split(net, split, clnet_net_device_count(net)), CLNET_OK);
    clnet_step_result r;
    ck_assert_msg(clnet_net_train_step(net, x, y, 8, &r) == CLNET_OK, "%s", clnet_last_error());
    *norm = r.grad_norm;
    size_t np = clnet_net_param_count(net);
    float *after = malloc(np * sizeof(float));
    memcpy(after, clnet_net_params(net), np * sizeof(float));
    clnet_net_free(net);
    clnet_st_free(f);
    return after;
}

/* The largest difference of two updates from w0, over the largest of want's. */
static double update_difference(const float *got, const float *want, const float *w0, size_t n) {
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i] - w0[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    return worst / scale;
}

void test_clipped_step_matches_pytorch(clnet_runtime *one, clnet_runtime *two) {
    char path[512];
    fixture_path(path, sizeof path, "clip_data.safetensors");
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    const double want_norm = meta(f, "norm");
    const double limits[2] = {meta(f, "below"), meta(f, "above")};
    clnet_st_free(f);
    const char *files[2] = {"clip_below.safetensors", "clip_above.safetensors"};
    clnet_net *start = net_from("clip_w0.safetensors");
    size_t np = clnet_net_param_count(start);
    static const double equal[2] = {1, 1}, unequal[2] = {3, 1};
    if (two) ck_assert_int_eq(clnet_runtime_device_count(two), 2);
    for (int k = 0; k < 2; k++) {
        clnet_net *want = net_from(files[k]);
        double norm = 0;
        float *got = clipped_step(one, NULL, limits[k], &norm);
        double d = update_difference(got, clnet_net_params(want), clnet_net_params(start), np);
        printf("clipped at %.4g (%s the norm %.6g): one device %.2e of the largest update of "
               "PyTorch's step, norm %.6g\n",
               limits[k], k ? "over" : "under", want_norm, d, norm);
        ck_assert_msg(d <= 1e-5, "max_norm %g: the step differs from PyTorch's by %g", limits[k],
                      d);
        ck_assert_msg(fabs(norm - want_norm) <= 1e-5 * want_norm, "norm %.9g, PyTorch's %.9g", norm,
                      want_norm);
        for (int s = 0; two && s < 2; s++) {
            double norm2 = 0, split[2];
            float *both = clipped_step(two, test_light_split(two, s ? unequal : equal, split),
                                       limits[k], &norm2);
            double d2 =
                       update_difference(both, clnet_net_params(want), clnet_net_params(start), np),
                   d12 = update_difference(both, got, clnet_net_params(start), np);
            printf("  two devices (%s split): %.2e of PyTorch's largest update, %.2e of one "
                   "device's; norm %.6g\n",
                   s ? "3:1" : "equal", d2, d12, norm2);
            ck_assert_msg(d2 <= 1e-5 && d12 <= 1e-5, "two devices: %g from PyTorch, %g from one",
                          d2, d12);
            ck_assert_msg(fabs(norm2 - norm) <= 1e-6 * norm, "norm %.9g on two, %.9g on one", norm2,
                          norm);
            free(both);
        }
        free(got);
        clnet_net_free(want);
    }
    clnet_net_free(start);
}
