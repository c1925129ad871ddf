/* Checkpoints written by clnet 0.1 keep loading. tests/fixtures/compat/lenet_clnet_0.1.safetensors
 * was written by clnet 0.1.0 (see tests/fixtures/README.md for how): LeNet after 100 steps of
 * SGD with momentum, so it holds parameters, velocity and progress. Read back today it must give
 * the same progress and evaluate to the same figures as 0.1 did, and its velocity must drive the
 * next step.
 *
 * Only the public API (clnet.h) is used, so this test compiles unchanged however the inside of
 * the library is rewritten. Needs Fashion-MNIST; without it the test says so and exits 77
 * (skipped). */
#include "clnet.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(CLNET_FIXTURES_DIR) || !defined(CLNET_MODEL_DIR)
#error "CMake defines CLNET_FIXTURES_DIR and CLNET_MODEL_DIR"
#endif

#define MODEL   CLNET_MODEL_DIR "/lenet.cfg"
#define FIXTURE CLNET_FIXTURES_DIR "/compat/lenet_clnet_0.1.safetensors"

/* What clnet 0.1.0 recorded (tests/fixtures/README.md): the first 2000 test images evaluated in
 * batches of 256, images scaled to [0, 1] (`clnet eval ... --test-limit 2000`). */
enum { TEST_IMAGES = 2000, EVAL_BATCH = 256, CORRECT_0_1 = 467 };
static const double LOSS_0_1 = 2.299327097;

static clnet_dataset *test_set; /* the first TEST_IMAGES test images, loaded by main */

static clnet_net *load_fixture(clnet_runtime **rt, clnet_progress *p) {
    clnet_net *net = NULL;
    ck_assert_msg(clnet_net_load(&net, MODEL) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_msg(clnet_net_load_weights(net, FIXTURE, p) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_msg(clnet_runtime_create(rt, NULL) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_msg(clnet_net_bind(net, *rt, EVAL_BATCH) == CLNET_OK, "%s", clnet_last_error());
    return net;
}

START_TEST(progress_and_evaluation_are_those_of_clnet_0_1) {
    clnet_runtime *rt = NULL;
    clnet_progress p;
    memset(&p, 0xff, sizeof p); /* every field must be written */
    clnet_net *net = load_fixture(&rt, &p);
    /* 12800 images in batches of 128: 100 steps, one whole epoch, seed 3 for both seeds */
    ck_assert_int_eq(p.step, 100);
    ck_assert_int_eq(p.epoch, 1);
    ck_assert_int_eq(p.position, 0);
    ck_assert_uint_eq(p.data_seed, 3);
    ck_assert_uint_eq(p.init_seed, 3);
    ck_assert_int_eq(clnet_net_step(net), 100);

    clnet_step_result r;
    ck_assert_msg(clnet_net_evaluate(net, test_set, 0.0f, 1.0f, &r) == CLNET_OK, "%s",
                  clnet_last_error());
    double rel = fabs(r.loss - LOSS_0_1) / LOSS_0_1;
    printf("clnet 0.1 checkpoint: %d of %d correct (0.1: %d), loss %.9f (0.1: %.9f, relative "
           "difference %.1e)\n",
           r.correct, r.n, CORRECT_0_1, r.loss, LOSS_0_1, rel);
    ck_assert_int_eq(r.n, TEST_IMAGES);
    ck_assert_int_eq(r.correct, CORRECT_0_1);
    ck_assert_msg(rel <= 1e-5, "loss %.9f, clnet 0.1 gave %.9f", r.loss, LOSS_0_1);
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

/* One step on the first 128 test images from the fixture with the given momentum; returns a
 * copy of the parameters after it. */
static float *step_from_fixture(float momentum, size_t *count) {
    clnet_runtime *rt = NULL;
    clnet_net *net = load_fixture(&rt, NULL);
    clnet_optimizer_config sgd;
    clnet_optimizer_defaults(&sgd);
    sgd.lr = 0.1f;
    sgd.momentum = momentum;
    ck_assert_msg(clnet_net_set_optimizer(net, &sgd) == CLNET_OK, "%s", clnet_last_error());
    clnet_loader *loader = NULL;
    clnet_loader_config lc = {.batch = 128, .seed = 0, .shuffle = 0, .mean = 0, .std = 1};
    ck_assert_msg(clnet_loader_create(&loader, test_set, &lc) == CLNET_OK, "%s",
                  clnet_last_error());
    clnet_batch b;
    ck_assert_msg(clnet_loader_next(loader, &b) == CLNET_OK, "%s", clnet_last_error());
    clnet_step_result r;
    ck_assert_msg(clnet_net_train_step(net, b.images, b.labels, b.n, &r) == CLNET_OK, "%s",
                  clnet_last_error());
    ck_assert_int_eq(r.n, 128);
    ck_assert_msg(isfinite(r.loss), "loss %g", r.loss);
    ck_assert_int_eq(clnet_net_step(net), 101);
    *count = clnet_net_param_count(net);
    float *params = malloc(*count * sizeof *params);
    ck_assert_ptr_nonnull(params);
    memcpy(params, clnet_net_params(net), *count * sizeof *params);
    clnet_loader_free(loader);
    clnet_net_free(net);
    clnet_runtime_free(rt);
    return params;
}

/* PyTorch's SGD makes a fresh velocity equal to the gradient, so a momentum step that ignored
 * the loaded velocity would equal a plain step bit for bit; with it, the two differ by
 * lr * momentum * velocity. */
START_TEST(the_loaded_velocity_drives_the_next_step) {
    size_t n = 0, n_plain = 0;
    float *with = step_from_fixture(0.9f, &n);
    float *plain = step_from_fixture(0.0f, &n_plain);
    ck_assert_uint_eq(n, n_plain);
    double largest = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(isfinite(with[i]), "parameter %zu is %g", i, with[i]);
        largest = fmax(largest, fabs((double)with[i] - plain[i]));
    }
    printf("momentum step vs plain step: largest difference %.3e\n", largest);
    ck_assert_msg(largest > 1e-6, "the velocity made no difference (%.3e)", largest);
    free(with);
    free(plain);
}
END_TEST

int main(void) {
    clnet_status s = clnet_dataset_load(&test_set, NULL, "test");
    if (s == CLNET_ERR_IO) { /* not installed: apt-get install dataset-fashion-mnist */
        printf("skipped: %s\n", clnet_last_error());
        return 77;
    }
    if (s != CLNET_OK || clnet_dataset_truncate(test_set, TEST_IMAGES) != CLNET_OK) {
        printf("%s\n", clnet_last_error());
        return 1;
    }
    Suite *suite = suite_create("compat");
    TCase *t = tcase_create("compat");
    tcase_add_test(t, progress_and_evaluation_are_those_of_clnet_0_1);
    tcase_add_test(t, the_loaded_velocity_drives_the_next_step);
    suite_add_tcase(suite, t);
    SRunner *sr = srunner_create(suite);
    srunner_set_fork_status(sr, CK_NOFORK); /* PoCL's threads do not survive fork */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    clnet_dataset_free(test_set);
    return failed ? 1 : 0;
}
