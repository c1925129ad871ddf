/* The optimizers against PyTorch (no device): 5 steps of Adam and AdamW from
 * the golden files in tests/fixtures/optim/ (made by make_optim_fixtures.py
 * with torch.optim), SGD's checks, and that a net saved and loaded mid-run
 * under Adam continues bit for bit (its moment estimates and step count are
 * in the checkpoint). */
#include "harness.h"
#include "optim.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N     40
#define STEPS 5
#define BATCH 4

static double meta(const clnet_st_file *f, const char *key) {
    const char *v = clnet_st_meta_get(f, key);
    ck_assert_msg(v != NULL, "no metadata %s", key);
    return atof(v);
}

static void against_pytorch(const char *name, clnet_optimizer kind) {
    char path[512];
    snprintf(path, sizeof path, "%s/optim/%s.safetensors", CLNET_FIXTURES_DIR, name);
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    const float *w0 = NULL, *g = NULL, *want = NULL;
    ck_assert_int_eq(clnet_st_get(f, "w0", 1, (int64_t[]){N}, &w0, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_st_get(f, "g", 2, (int64_t[]){STEPS, N}, &g, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_st_get(f, "w", 2, (int64_t[]){STEPS, N}, &want, NULL, NULL), CLNET_OK);
    clnet_optim o;
    clnet_optim_init(&o);
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.optimizer = kind;
    c.lr = (float)meta(f, "lr");
    c.beta1 = (float)meta(f, "beta1");
    c.beta2 = (float)meta(f, "beta2");
    c.eps = (float)meta(f, "eps");
    c.weight_decay = (float)meta(f, "weight_decay");
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_OK);
    clnet_optim_configure(&o, &c);
    ck_assert_int_eq(clnet_optim_prepare(&o, N), CLNET_OK);
    float w[N], sum[N];
    memcpy(w, w0, sizeof w);
    double worst = 0;
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < N; i++)
            sum[i] = BATCH * g[s * N + i]; /* the sum over a batch of 4: exact */
        clnet_optim_apply(&o, w, sum, N, BATCH);
        double scale = 0;
        for (int i = 0; i < N; i++)
            scale = fmax(scale, fabs(want[s * N + i] - (s ? want[(s - 1) * N + i] : w0[i])));
        for (int i = 0; i < N; i++) {
            /* against the update PyTorch made, which is what the optimizer decides */
            double d = fabs((double)w[i] - want[s * N + i]) / scale;
            worst = fmax(worst, d);
        }
    }
    printf("%-8s 5 steps against torch.optim (%s): largest difference %.2e of the largest "
           "update\n",
           name, clnet_st_meta_get(f, "torch"), worst);
    ck_assert_msg(worst < 1e-4, "%s: differs from PyTorch by %g", name, worst);
    ck_assert_int_eq(o.step, STEPS);
    clnet_optim_release(&o);
    clnet_st_free(f);
}

START_TEST(adam_and_adamw_match_pytorch) {
    against_pytorch("adam", CLNET_OPTIMIZER_ADAM);
    against_pytorch("adam_wd", CLNET_OPTIMIZER_ADAM);
    against_pytorch("adamw", CLNET_OPTIMIZER_ADAMW);
}
END_TEST

START_TEST(configurations_are_checked) {
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.optimizer = CLNET_OPTIMIZER_ADAM;
    c.momentum = 0.9f;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "beta1"), "%s", clnet_last_error());
    c.momentum = 0;
    c.beta2 = 1.0f;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT);
    c.beta2 = 0.999f;
    c.eps = 0;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT);
    c.eps = 1e-8f;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_OK);
    c.optimizer = (clnet_optimizer)7;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT);
}
END_TEST

/* A net under Adam: 8 steps straight equal 4 steps, a checkpoint, a fresh
 * net loading it, and 4 more steps, bit for bit; the file names PyTorch's
 * state ("optimizer.adam.exp_avg.<tensor>"). */
START_TEST(resume_under_adam_is_bitwise) {
    const char *lines[] = {"input channels=3 height=4 width=4",
                           "conv2d name=c filters=2 size=3",
                           "relu",
                           "flatten",
                           "linear name=fc units=3",
                           "softmax_cross_entropy"};
    clnet_net *nets[3] = {NULL};
    clnet_runtime *rt = test_runtime();
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(clnet_net_create(&nets[k]), CLNET_OK);
        for (int i = 0; i < 6; i++) ck_assert_int_eq(clnet_net_add(nets[k], lines[i]), CLNET_OK);
        clnet_optimizer_config c;
        clnet_optimizer_defaults(&c);
        c.optimizer = CLNET_OPTIMIZER_ADAMW;
        c.lr = 0.01f;
        c.weight_decay = 0.01f;
        c.schedule = CLNET_SCHEDULE_COSINE;
        c.total_steps = 8;
        ck_assert_int_eq(clnet_net_set_optimizer(nets[k], &c), CLNET_OK);
        if (k < 2) ck_assert_int_eq(clnet_net_init(nets[k], 3), CLNET_OK);
    }
    float x[8 * 48];
    int32_t y[8];
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/adam.safetensors", dir);
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(clnet_net_bind(nets[k], rt, 8) == CLNET_OK, "%s", clnet_last_error());
        ck_assert_int_eq(
            clnet_net_set_split(nets[k], (double[]){1, 1, 1, 1}, clnet_net_device_count(nets[k])),
            CLNET_OK);
    }
    for (int s = 0; s < 8; s++) {
        test_random_floats(x, sizeof x / sizeof *x, 90 + s);
        for (int i = 0; i < 8; i++) y[i] = (i + s) % 3;
        int k = s < 4 ? 1 : 2;
        if (s == 4) { /* save the half-way net, load it into a fresh one */
            ck_assert_int_eq(clnet_net_save(nets[1], path, NULL), CLNET_OK);
            ck_assert_msg(clnet_net_load_weights(nets[2], path, NULL) == CLNET_OK, "%s",
                          clnet_last_error());
            ck_assert_int_eq(clnet_net_bind(nets[2], rt, 8), CLNET_OK);
            ck_assert_int_eq(clnet_net_set_split(nets[2], (double[]){1, 1, 1, 1},
                                                 clnet_net_device_count(nets[2])),
                             CLNET_OK);
        }
        ck_assert_int_eq(clnet_net_train_step(nets[0], x, y, 8, NULL), CLNET_OK);
        ck_assert_int_eq(clnet_net_train_step(nets[k], x, y, 8, NULL), CLNET_OK);
    }
    ck_assert_int_eq(clnet_net_step(nets[2]), 8);
    ck_assert_mem_eq(clnet_net_params(nets[0]), clnet_net_params(nets[2]),
                     clnet_net_param_count(nets[0]) * sizeof(float));
    clnet_st_file *f = NULL;
    ck_assert_int_eq(clnet_st_load(path, &f), CLNET_OK);
    ck_assert_int_eq(clnet_st_info(f, "optimizer.adamw.exp_avg.c.weight", NULL, NULL, NULL),
                     CLNET_OK);
    ck_assert_int_eq(clnet_st_info(f, "optimizer.adamw.exp_avg_sq.fc.bias", NULL, NULL, NULL),
                     CLNET_OK);
    ck_assert_str_eq(clnet_st_meta_get(f, "optimizer"), "adamw");
    clnet_st_free(f);
    for (int k = 0; k < 3; k++) clnet_net_free(nets[k]);
}
END_TEST

int main(void) {
    Suite *s = suite_create("optim");
    TCase *t = tcase_create("optim");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, adam_and_adamw_match_pytorch);
    tcase_add_test(t, configurations_are_checked);
    tcase_add_test(t, resume_under_adam_is_bitwise);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
