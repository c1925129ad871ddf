/* Training through the public API on the configuration's first device: one
 * SGD step against the plain-C references, the optimizer rules, determinism,
 * bitwise resume from a checkpoint, damaged checkpoints, the memory check,
 * model-file errors, top-k accuracy and the confusion matrix against
 * PyTorch's (tests/fixtures/classes; on two devices in test_multi.c), label
 * smoothing set through the API against the plain-C reference, and
 * convergence on real Fashion-MNIST. */
#include "harness.h"
#include "ref/layers_ref.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *TINY[] = {
    "input channels=2 height=7 width=6",
    "conv2d name=c filters=3 size=3 pad=1 init=normal std=0.3 bias_init=normal bias_std=0.1",
    "relu",
    "avgpool size=2 stride=2",
    "flatten",
    "linear name=out units=4 init=xavier bias_init=normal bias_std=0.1",
    "softmax_cross_entropy",
};

static clnet_net *tiny_net(void) {
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (size_t i = 0; i < sizeof TINY / sizeof TINY[0]; i++)
        ck_assert_msg(clnet_net_add(net, TINY[i]) == CLNET_OK, "%s", clnet_last_error());
    return net;
}

/* One step of the tiny net computed with tests/ref, then SGD by hand. */
START_TEST(one_step_matches_the_reference_composition) {
    enum { N = 5, C = 2, H = 7, W = 6, F = 3, PH = 3, PW = 3, I = F * PH * PW, O = 4 };
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = tiny_net();
    ck_assert_int_eq(clnet_net_init(net, 42), CLNET_OK);
    clnet_optimizer_config sgd;
    clnet_optimizer_defaults(&sgd);
    sgd.lr = 0.05f;
    sgd.momentum = 0.9f;
    sgd.weight_decay = 0.01f;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &sgd), CLNET_OK);
    ck_assert_int_eq(clnet_net_bind(net, rt, 8), CLNET_OK);
    size_t np = clnet_net_param_count(net);
    ck_assert_uint_eq(np, F * C * 9 + F + O * I + O);
    float *p0 = malloc(np * sizeof(float));
    memcpy(p0, clnet_net_params(net), np * sizeof(float));
    const float *cw = p0, *cb = p0 + F * C * 9, *lw = cb + F, *lb = lw + O * I;

    float x[N * C * H * W];
    int32_t labels[N] = {0, 3, 1, 2, 3};
    test_random_floats(x, N * C * H * W, 9);
    clnet_step_result res;
    ck_assert_msg(clnet_net_train_step(net, x, labels, N, &res) == CLNET_OK, "%s",
                  clnet_last_error());

    /* forward */
    float conv[N * F * H * W], act[N * F * H * W], pool[N * I], logits[N * O], probs[N * O];
    ref_conv2d_forward(conv, x, cw, cb, N, C, H, W, F, 3, 3, 1, 1, 1, 1);
    ref_relu_forward(act, conv, N * F * H * W);
    ref_avgpool_forward(pool, act, N, F, H, W, 2, 2, 2, 2, 0, 0);
    ref_linear_forward(logits, pool, lw, lb, N, I, O);
    int correct = 0;
    double loss = ref_softmax_xent_forward(probs, &correct, logits, labels, N, O);
    ck_assert_msg(fabs(res.loss - loss / N) < 1e-5, "loss %.7f vs %.7f", res.loss, loss / N);
    ck_assert_int_eq(res.correct, correct);
    /* backward */
    float dlogits[N * O], dpool[N * I], dact[N * F * H * W], dconv[N * F * H * W],
        dx[N * C * H * W];
    float *grad = calloc(np, sizeof(float));
    float *dcw = grad, *dcb = grad + F * C * 9, *dlw = dcb + F, *dlb = dlw + O * I;
    ref_softmax_xent_backward(dlogits, logits, labels, N, O);
    ref_linear_backward(dpool, dlw, dlb, dlogits, pool, lw, N, I, O);
    ref_avgpool_backward(dact, dpool, N, F, H, W, 2, 2, 2, 2, 0, 0);
    ref_relu_backward(dconv, dact, act, N * F * H * W);
    ref_conv2d_backward(dx, dcw, dcb, dconv, x, cw, N, C, H, W, F, 3, 3, 1, 1, 1, 1);
    /* SGD, first step: velocity = g; w -= lr * velocity */
    const float *p1 = clnet_net_params(net);
    double worst = 0;
    for (size_t i = 0; i < np; i++) {
        double g = grad[i] / N + 0.01 * p0[i];
        double want = p0[i] - 0.05 * g;
        double err = fabs(p1[i] - want) / fmax(1e-3, fabs(p0[i] - want));
        worst = fmax(worst, err);
        ck_assert_msg(err < 1e-3, "parameter %zu: %.8g, expected %.8g (was %.8g)", i, p1[i], want,
                      p0[i]);
    }
    printf("one step vs reference: largest relative error of the update %.2e\n", worst);
    free(grad);
    free(p0);
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

/* Probabilities: rows sum to 1, argmax agrees with evaluation, any n works
 * (chunks of the bound batch). */
START_TEST(predict_gives_probabilities_that_agree_with_evaluation) {
    enum { N = 37 }; /* more than the bound batch of 16: three chunks */
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = tiny_net();
    ck_assert_int_eq(clnet_net_init(net, 5), CLNET_OK);
    ck_assert_int_eq(clnet_net_bind(net, rt, 16), CLNET_OK);
    float x[N * 2 * 7 * 6], probs[N * 4];
    int32_t labels[N];
    test_random_floats(x, sizeof x / sizeof x[0], 77);
    for (int i = 0; i < N; i++) labels[i] = (int32_t)(i % 4);
    ck_assert_msg(clnet_net_predict(net, x, N, probs) == CLNET_OK, "%s", clnet_last_error());
    int right = 0;
    for (int i = 0; i < N; i++) {
        double sum = 0;
        int best = 0;
        for (int k = 0; k < 4; k++) {
            ck_assert(probs[i * 4 + k] >= 0 && probs[i * 4 + k] <= 1);
            sum += probs[i * 4 + k];
            if (probs[i * 4 + k] > probs[i * 4 + best]) best = k;
        }
        ck_assert_msg(fabs(sum - 1) < 1e-5, "row %d sums to %g", i, sum);
        right += best == labels[i];
    }
    clnet_step_result r;
    ck_assert_int_eq(clnet_net_evaluate_batch(net, x, labels, N, &r), CLNET_OK);
    ck_assert_int_eq(r.n, N);
    ck_assert_int_eq(r.correct, right);
    /* the loss is the mean of -log p(label) */
    double loss = 0;
    for (int i = 0; i < N; i++) loss -= log(probs[i * 4 + labels[i]]);
    ck_assert_msg(fabs(r.loss - loss / N) < 1e-5, "loss %g vs %g", r.loss, loss / N);
    labels[3] = 9; /* a label the net cannot have */
    ck_assert_int_eq(clnet_net_evaluate_batch(net, x, labels, N, &r), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "label 9 of sample 3"), "%s", clnet_last_error());
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

START_TEST(sgd_rules_and_schedules) {
    /* Through a net whose loss gradient is zero: then only weight decay moves w,
     * which makes momentum and Nesterov easy to follow by hand. */
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    ck_assert(c.lr == 0.1f && c.momentum == 0 && c.schedule == CLNET_SCHEDULE_CONSTANT);
    clnet_net *net = tiny_net();
    c.schedule = CLNET_SCHEDULE_COSINE;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_ERR_INVALID_ARGUMENT); /* no total */
    c.total_steps = 100;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_OK);
    ck_assert(fabsf(clnet_net_learning_rate(net) - 0.1f) < 1e-7f);
    c.schedule = CLNET_SCHEDULE_STEP;
    c.step_size = 0;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_ERR_INVALID_ARGUMENT);
    c.nesterov = 1;
    c.step_size = 10;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c),
                     CLNET_ERR_INVALID_ARGUMENT); /* no momentum */
    c.lr = -1;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_ERR_INVALID_ARGUMENT);
    clnet_net_free(net);
}
END_TEST

/* Trains `steps` steps of batch 16 on fixed pseudo-random data. */
static void train_steps(clnet_net *net, int first, int steps, double *losses) {
    float x[16 * 2 * 7 * 6];
    int32_t y[16];
    for (int s = first; s < first + steps; s++) {
        test_random_floats(x, sizeof x / sizeof x[0], 1000 + s);
        for (int i = 0; i < 16; i++) y[i] = (i * 7 + s) % 4;
        clnet_step_result r;
        ck_assert_msg(clnet_net_train_step(net, x, y, 16, &r) == CLNET_OK, "%s",
                      clnet_last_error());
        if (losses) losses[s - first] = r.loss;
    }
}

static clnet_net *bound_tiny(int init) {
    clnet_net *net = tiny_net();
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = 0.1f;
    c.momentum = 0.9f;
    c.nesterov = 1;
    c.weight_decay = 5e-4f;
    c.schedule = CLNET_SCHEDULE_COSINE;
    c.total_steps = 20;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_OK);
    if (init) ck_assert_int_eq(clnet_net_init(net, 7), CLNET_OK);
    return net;
}

START_TEST(same_seed_gives_the_same_run) {
    clnet_runtime *rt = test_one_device(0);
    double a[10], b[10];
    clnet_net *n1 = bound_tiny(1), *n2 = bound_tiny(1);
    ck_assert_int_eq(clnet_net_bind(n1, rt, 16), CLNET_OK);
    ck_assert_int_eq(clnet_net_bind(n2, rt, 16), CLNET_OK);
    train_steps(n1, 0, 10, a);
    train_steps(n2, 0, 10, b);
    ck_assert_mem_eq(a, b, sizeof a);
    ck_assert_mem_eq(clnet_net_params(n1), clnet_net_params(n2),
                     clnet_net_param_count(n1) * sizeof(float));
    ck_assert(a[9] != a[0]); /* it did train */
    clnet_net_free(n1);
    clnet_net_free(n2);
    clnet_runtime_free(rt);
}
END_TEST

static char *temp_path(const char *name) {
    static char dir[64] = "";
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/clnet-test-train-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
    }
    char *p = malloc(256);
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

START_TEST(resume_from_a_checkpoint_is_bitwise_identical) {
    clnet_runtime *rt = test_one_device(0);
    char *path = temp_path("half.safetensors");
    clnet_net *straight = bound_tiny(1);
    ck_assert_int_eq(clnet_net_bind(straight, rt, 16), CLNET_OK);
    train_steps(straight, 0, 20, NULL);

    clnet_net *first = bound_tiny(1);
    ck_assert_int_eq(clnet_net_bind(first, rt, 16), CLNET_OK);
    train_steps(first, 0, 10, NULL);
    clnet_progress p = {.epoch = 3, .position = 48, .data_seed = 11, .init_seed = 7};
    ck_assert_int_eq(clnet_net_save(first, path, &p), CLNET_OK);
    clnet_net_free(first);

    clnet_net *resumed = bound_tiny(0);
    clnet_progress back;
    ck_assert_msg(clnet_net_load_weights(resumed, path, &back) == CLNET_OK, "%s",
                  clnet_last_error());
    ck_assert_int_eq(back.epoch, 3);
    ck_assert_int_eq(back.position, 48);
    ck_assert_int_eq(back.step, 10);
    ck_assert_uint_eq(back.data_seed, 11);
    ck_assert_int_eq(clnet_net_step(resumed), 10);
    ck_assert_int_eq(clnet_net_bind(resumed, rt, 16), CLNET_OK);
    train_steps(resumed, 10, 10, NULL);
    ck_assert_mem_eq(clnet_net_params(straight), clnet_net_params(resumed),
                     clnet_net_param_count(straight) * sizeof(float));
    clnet_net_free(straight);
    clnet_net_free(resumed);
    free(path);
    clnet_runtime_free(rt);
}
END_TEST

/* Rewrites bytes of a file: cut it at `cut` (>= 0) or flip the byte at `flip`. */
static void damage(const char *path, long cut, long flip) {
    if (cut >= 0) ck_assert_int_eq(truncate(path, cut), 0);
    if (flip >= 0) {
        FILE *f = fopen(path, "r+b");
        fseek(f, flip, SEEK_SET);
        int c = fgetc(f);
        fseek(f, flip, SEEK_SET);
        fputc(c ^ 0x20, f);
        fclose(f);
    }
}

START_TEST(bad_checkpoints_are_refused_and_change_nothing) {
    char *good = temp_path("good.safetensors"), *bad = temp_path("bad.safetensors");
    clnet_net *net = tiny_net();
    ck_assert_int_eq(clnet_net_init(net, 3), CLNET_OK);
    ck_assert_int_eq(clnet_net_save(net, good, NULL), CLNET_OK);
    size_t np = clnet_net_param_count(net);
    float *before = malloc(np * sizeof(float));
    memcpy(before, clnet_net_params(net), np * sizeof(float));

    /* truncated */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cp %s %s", good, bad);
    ck_assert_int_eq(system(cmd), 0);
    damage(bad, 100, -1);
    ck_assert_int_eq(clnet_net_load_weights(net, bad, NULL), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), bad), "%s", clnet_last_error());
    /* header corrupted (a '"' turned into a different byte) */
    ck_assert_int_eq(system(cmd), 0);
    damage(bad, -1, 12);
    ck_assert_int_eq(clnet_net_load_weights(net, bad, NULL), CLNET_ERR_FORMAT);
    /* a checkpoint of another model: the message names the tensor */
    clnet_net *other = NULL;
    ck_assert_int_eq(clnet_net_create(&other), CLNET_OK);
    for (size_t i = 0; i < sizeof TINY / sizeof TINY[0]; i++) {
        const char *line = strstr(TINY[i], "units=4") ? "linear name=out units=5" : TINY[i];
        ck_assert_int_eq(clnet_net_add(other, line), CLNET_OK);
    }
    ck_assert_int_eq(clnet_net_init(other, 1), CLNET_OK);
    ck_assert_int_eq(clnet_net_save(other, bad, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_net_load_weights(net, bad, NULL), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "out.weight"), "%s", clnet_last_error());
    clnet_net_free(other);
    /* a model with an extra layer's tensors */
    ck_assert_int_eq(clnet_net_create(&other), CLNET_OK);
    for (size_t i = 0; i < sizeof TINY / sizeof TINY[0]; i++) {
        if (strstr(TINY[i], "softmax"))
            ck_assert_int_eq(clnet_net_add(other, "linear name=extra units=4"), CLNET_OK);
        ck_assert_int_eq(clnet_net_add(other, TINY[i]), CLNET_OK);
    }
    ck_assert_int_eq(clnet_net_init(other, 1), CLNET_OK);
    ck_assert_int_eq(clnet_net_save(other, bad, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_net_load_weights(net, bad, NULL), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "extra.weight"), "%s", clnet_last_error());
    /* ... and loading the extra model from the smaller checkpoint names the missing one */
    ck_assert_int_eq(clnet_net_load_weights(other, good, NULL), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "extra.weight"), "%s", clnet_last_error());
    clnet_net_free(other);
    /* missing file */
    ck_assert_int_eq(clnet_net_load_weights(net, "/nonexistent/x.safetensors", NULL), CLNET_ERR_IO);

    ck_assert_mem_eq(before, clnet_net_params(net), np * sizeof(float));
    ck_assert_int_eq(clnet_net_load_weights(net, good, NULL), CLNET_OK);
    /* a save that cannot happen leaves the old checkpoint intact */
    ck_assert_int_ne(clnet_net_save(net, "/nonexistent/dir/x.safetensors", NULL), CLNET_OK);
    free(before);
    free(good);
    free(bad);
    clnet_net_free(net);
}
END_TEST

START_TEST(memory_limits_give_micro_batches_or_a_clear_error) {
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = NULL;
    /* a batch too big for the device runs in micro-batches that fit */
    ck_assert_int_eq(clnet_net_load(&net, CLNET_MODEL_DIR "/lenet.cfg"), CLNET_OK);
    ck_assert_int_eq(clnet_net_init(net, 1), CLNET_OK);
    ck_assert_msg(clnet_net_bind(net, rt, 2000000) == CLNET_OK, "%s", clnet_last_error());
    clnet_device_share share;
    ck_assert_int_eq(clnet_net_device_share(net, 0, &share), CLNET_OK);
    ck_assert_int_lt(share.micro_batch, 2000000);
    ck_assert_int_ge(share.micro_batch, 1);
    ck_assert_int_eq(clnet_net_bind(net, rt, 0), CLNET_ERR_INVALID_ARGUMENT);
    clnet_net_free(net);
    /* a model of which not even one sample fits: the error gives the figures. Each
     * convolution's output is 2 GiB a sample, and there are more of them than the device's
     * memory holds, whatever it is (PoCL reports most of the host's) */
    clnet_device_info info;
    ck_assert_int_eq(clnet_runtime_device_info(rt, 0, &info), CLNET_OK);
    int convs = (int)(info.global_mem_bytes / (2ull << 30)) + 1;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(net, "input channels=8 height=8192 width=8192"), CLNET_OK);
    for (int i = 0; i < convs; i++)
        ck_assert_int_eq(clnet_net_add(net, "conv2d filters=8 size=3 pad=1"), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(net, "flatten"), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(net, "softmax_cross_entropy"), CLNET_OK);
    ck_assert_int_eq(clnet_net_init(net, 1), CLNET_OK);
    clnet_status s = clnet_net_bind(net, rt, 4);
    ck_assert_int_eq(s, CLNET_ERR_DEVICE_MEMORY);
    ck_assert_msg(strstr(clnet_last_error(), "needs") && strstr(clnet_last_error(), "MiB") &&
                      strstr(clnet_last_error(), "batch 1"),
                  "%s", clnet_last_error());
    ck_assert_int_eq(clnet_net_device_count(net), 0);
    clnet_net_free(net);
    /* sizes beyond what one sample may hold are refused when the model is read */
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(net, "input channels=64 height=8192 width=8192"), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(net, "flatten"), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "too large"), "%s", clnet_last_error());
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

START_TEST(model_file_errors_name_file_and_line) {
    struct {
        const char *text, *want;
    } cases[] = {
        {"input channels=1 height=8 width=8\nconv2d filters=4 size=3\nbogus x=1\n",
         ":3: unknown layer kind 'bogus'"},
        {"conv2d filters=4 size=3\n", ":1: the first line must declare the input"},
        {"input channels=1 height=8 width=8\n# comment\n\nconv2d filters=four size=3\n",
         ":4: filters=four: expected"},
        {"input channels=1 height=8 width=8\nrelu\n", "must end with a loss layer"},
        {"input channels=1 height=8 width=8\nflatten\nsoftmax_cross_entropy\nrelu\n",
         ":4: no layer may follow the loss layer"},
        {"input channels=1 height=8 width=8\nrelu name=a\nrelu name=a\n", ":3: a layer named 'a'"},
        {"input channels=1 height=8 width=8\nrelu input=nowhere\n", ":2: input=nowhere"},
        {"input channels=1 height=8\n", ":1: input needs channels="},
        {"input channels=1 height=8 width=8\nconv2d filters=2 size=3 init=normal\n",
         ":2: init=normal needs std="},
    };
    char *path = temp_path("model.cfg");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        fputs(cases[i].text, f);
        fclose(f);
        clnet_net *net = (clnet_net *)1;
        ck_assert_int_ne(clnet_net_load(&net, path), CLNET_OK);
        ck_assert_ptr_null(net);
        ck_assert_msg(strstr(clnet_last_error(), cases[i].want) && strstr(clnet_last_error(), path),
                      "case %zu: '%s' lacks '%s'", i, clnet_last_error(), cases[i].want);
    }
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_load(&net, "/nonexistent/model.cfg"), CLNET_ERR_IO);
    /* the shipped models load, with d2l's shapes and default names */
    ck_assert_int_eq(clnet_net_load(&net, CLNET_MODEL_DIR "/lenet.cfg"), CLNET_OK);
    ck_assert_uint_eq(clnet_net_param_count(net),
                      20 * 9 + 20 + 50 * 20 * 25 + 50 + 800 * 128 + 128 + 128 * 10 + 10);
    clnet_layer_info info;
    ck_assert_int_eq(clnet_net_layer_info(net, 6, &info), CLNET_OK);
    ck_assert_str_eq(info.kind, "flatten");
    ck_assert_int_eq(info.out_c, 800);
    ck_assert_int_eq(clnet_net_layer_info(net, 2, &info), CLNET_OK);
    ck_assert_str_eq(info.name, "pool1");
    clnet_net_free(net);
    ck_assert_int_eq(clnet_net_load(&net, CLNET_MODEL_DIR "/lenet5.cfg"), CLNET_OK);
    ck_assert_uint_eq(clnet_net_param_count(net), 61706);
    clnet_net_free(net);
    free(path);
}
END_TEST

/* A few hundred steps on a Fashion-MNIST subset must reach well above chance:
 * the suite proves that training works, not only that kernels agree. */
START_TEST(lenet_learns_fashion_mnist) {
    if (test_skip_without_fashion_mnist()) return;
    clnet_dataset *train = NULL, *test = NULL;
    ck_assert_msg(clnet_dataset_load(&train, NULL, "train") == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_dataset_load(&test, NULL, "test"), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_truncate(train, 12800), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_truncate(test, 2000), CLNET_OK);
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_load(&net, CLNET_MODEL_DIR "/lenet.cfg"), CLNET_OK);
    ck_assert_int_eq(clnet_net_init(net, 1), CLNET_OK);
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = 0.05f;
    c.momentum = 0.9f;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_OK);
    ck_assert_int_eq(clnet_net_bind(net, rt, 64), CLNET_OK);
    clnet_loader *loader = NULL;
    clnet_loader_config lc = {
        .batch = 64, .seed = 1, .shuffle = 1, .drop_last = 0, .mean = 0, .std = 1};
    ck_assert_int_eq(clnet_loader_create(&loader, train, &lc), CLNET_OK);
    clnet_step_result r;
    for (int step = 0; step < 400; step++) {
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_next(loader, &b), CLNET_OK);
        ck_assert_msg(clnet_net_train_step(net, b.images, b.labels, b.n, &r) == CLNET_OK, "%s",
                      clnet_last_error());
    }
    ck_assert_int_eq(clnet_net_evaluate(net, test, 0, 1, &r), CLNET_OK);
    double acc = (double)r.correct / r.n;
    printf("LeNet, 400 steps of 64 on 12800 images: test accuracy %.4f on %d images\n", acc, r.n);
    ck_assert_msg(acc >= 0.70, "test accuracy %.4f", acc);
    clnet_loader_free(loader);
    clnet_net_free(net);
    clnet_dataset_free(train);
    clnet_dataset_free(test);
    clnet_runtime_free(rt);
}
END_TEST

/* ---- top-k accuracy, the confusion matrix, label smoothing ----------------------------- */

#ifndef CLNET_FIXTURES_DIR
#error "CMake defines CLNET_FIXTURES_DIR, the folder holding the fixtures"
#endif

/* A net of the loss alone on the logits of a data set ((N, K) or (N, K, L) samples, so its
 * input is its logits), bound to the configuration's first device in batches of `batch`;
 * per_position: softmax_cross_entropy per=position. */
static clnet_net *logits_net(clnet_runtime *rt, int K, int L, int per_position, int batch) {
    clnet_net *net = NULL;
    char input[64];
    if (L)
        snprintf(input, sizeof input, "input channels=%d length=%d", K, L);
    else
        snprintf(input, sizeof input, "input channels=1 length=%d", K);
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    ck_assert_msg(clnet_net_add(net, input) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_msg(clnet_net_add(net, per_position ? "softmax_cross_entropy per=position"
                                                  : "softmax_cross_entropy") == CLNET_OK,
                  "%s", clnet_last_error());
    ck_assert_int_eq(clnet_net_init(net, 1), CLNET_OK);
    ck_assert_msg(clnet_net_bind(net, rt, batch) == CLNET_OK, "%s", clnet_last_error());
    return net;
}

/* Case `name` of tests/fixtures/classes: its logits and labels as a data set. */
static clnet_dataset *classes_data(const char *name) {
    char x[512], y[512];
    snprintf(x, sizeof x, "%s/classes/%s_x.npy", CLNET_FIXTURES_DIR, name);
    snprintf(y, sizeof y, "%s/classes/%s_y.npy", CLNET_FIXTURES_DIR, name);
    clnet_dataset *ds = NULL;
    ck_assert_msg(clnet_dataset_load_npy(&ds, x, y) == CLNET_OK, "%s", clnet_last_error());
    return ds;
}

/* Every k from 1 to K on each fixture: the counts torch.topk gives (torch.sort's stable
 * order where logits tie), top-1 equal to the evaluation's correct answers, and the
 * confusion matrix torch.argmax gives, whatever the batch (chunks of 16 and 7, the last
 * partial). */
START_TEST(top_k_and_confusion_match_pytorch) {
    clnet_runtime *rt = test_one_device(0);
    const struct {
        const char *name;
        int N, K, L;
    } cases[] = {
        {"random_k7_n50", 50, 7, 0}, {"ties_k5_n40", 40, 5, 0}, {"positions_k4_n20_l6", 20, 4, 6}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int K = cases[c].K, answers = cases[c].N * (cases[c].L ? cases[c].L : 1);
        char path[512];
        snprintf(path, sizeof path, "%s/classes/%s.safetensors", CLNET_FIXTURES_DIR, cases[c].name);
        clnet_st_file *f = NULL;
        ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
        const float *top_k = NULL, *confusion = NULL;
        ck_assert_int_eq(clnet_st_get(f, "top_k", 1, (int64_t[]){K}, &top_k, NULL, NULL), CLNET_OK);
        ck_assert_int_eq(clnet_st_get(f, "confusion", 2, (int64_t[]){K, K}, &confusion, NULL, NULL),
                         CLNET_OK);
        clnet_dataset *ds = classes_data(cases[c].name);
        for (int batch = 16; batch >= 7; batch -= 9) {
            clnet_net *net = logits_net(rt, K, cases[c].L, cases[c].L > 0, batch);
            clnet_loader_config cfg = {.std = 1};
            clnet_step_result r;
            ck_assert_msg(clnet_net_evaluate_with(net, ds, &cfg, &r) == CLNET_OK, "%s",
                          clnet_last_error());
            int64_t *m = malloc((size_t)K * K * sizeof *m);
            for (int k = 1; k <= K; k++) {
                clnet_class_counts counts;
                ck_assert_msg(clnet_net_evaluate_classes(net, ds, &cfg, k, &counts, m) == CLNET_OK,
                              "%s", clnet_last_error());
                ck_assert_int_eq(counts.k, k);
                ck_assert_int_eq(counts.classes, K);
                ck_assert_int_eq(counts.answers, answers);
                ck_assert_msg(counts.top_k == (int64_t)top_k[k - 1],
                              "%s batch %d: top-%d counts %lld, PyTorch %g", cases[c].name, batch,
                              k, (long long)counts.top_k, top_k[k - 1]);
                ck_assert_int_eq(counts.top_1, (int64_t)top_k[0]);
                ck_assert_int_eq(counts.top_1, r.correct);
                ck_assert(fabs(counts.top_k_accuracy - (double)top_k[k - 1] / answers) < 1e-12);
                for (int i = 0; i < K * K; i++)
                    ck_assert_msg(m[i] == (int64_t)confusion[i],
                                  "%s: confusion[%d][%d] is %lld, PyTorch's %g", cases[c].name,
                                  i / K, i % K, (long long)m[i], confusion[i]);
            }
            printf("%s, batch %d: top-1 %g ... top-%d %g of %d answers, as PyTorch\n",
                   cases[c].name, batch, top_k[0], K, top_k[K - 1], answers);
            free(m);
            clnet_net_free(net);
        }
        clnet_dataset_free(ds);
        clnet_st_free(f);
    }
    clnet_runtime_free(rt);
}
END_TEST

/* What clnet_net_evaluate_classes refuses, and why. */
START_TEST(class_counts_refuse_bad_arguments) {
    clnet_runtime *rt = test_one_device(0);
    clnet_dataset *ds = classes_data("random_k7_n50");
    clnet_net *net = logits_net(rt, 7, 0, 0, 16);
    clnet_loader_config cfg = {.std = 1};
    clnet_class_counts counts;
    const struct {
        int k;
        const char *says;
    } bad[] = {{0, "k=0: expected 1 to 7 (the model's classes)"}, {8, "k=8: expected 1 to 7"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(clnet_net_evaluate_classes(net, ds, &cfg, bad[i].k, &counts, NULL),
                         CLNET_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(clnet_last_error(), bad[i].says), "%s", clnet_last_error());
    }
    ck_assert_int_eq(clnet_net_evaluate_classes(net, ds, &cfg, 1, NULL, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_net_evaluate_classes(net, NULL, &cfg, 1, &counts, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_net_evaluate_classes(net, ds, NULL, 1, &counts, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    /* without the matrix, the same counts */
    ck_assert_int_eq(clnet_net_evaluate_classes(net, ds, &cfg, 3, &counts, NULL), CLNET_OK);
    ck_assert_int_eq(counts.answers, 50);
    clnet_net_free(net);
    /* a regression's loss has no classes; an unbound net is refused */
    clnet_net *mse = NULL;
    ck_assert_int_eq(clnet_net_create(&mse), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(mse, "input channels=1 length=7"), CLNET_OK);
    ck_assert_int_eq(clnet_net_add(mse, "mse target=input"), CLNET_OK);
    ck_assert_int_eq(clnet_net_init(mse, 1), CLNET_OK);
    ck_assert_int_eq(clnet_net_evaluate_classes(mse, ds, &cfg, 1, &counts, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "bind"), "%s", clnet_last_error());
    ck_assert_int_eq(clnet_net_bind(mse, rt, 8), CLNET_OK);
    ck_assert_int_eq(clnet_net_evaluate_classes(mse, ds, &cfg, 1, &counts, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "has no classes"), "%s", clnet_last_error());
    /* label smoothing: a number from 0 to 1, on a model that has a cross-entropy */
    ck_assert_int_eq(clnet_net_set_label_smoothing(mse, 0.1f), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "no layer that takes label_smoothing"), "%s",
                  clnet_last_error());
    clnet_net_free(mse);
    net = logits_net(rt, 7, 0, 0, 16);
    const float eps_bad[] = {-0.1f, 1.5f, NAN};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(clnet_net_set_label_smoothing(net, eps_bad[i]),
                         CLNET_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(clnet_last_error(), "expected 0 to 1"), "%s", clnet_last_error());
    }
    ck_assert_int_eq(clnet_net_set_label_smoothing(NULL, 0.1f), CLNET_ERR_INVALID_ARGUMENT);
    clnet_net_free(net);
    clnet_dataset_free(ds);
    clnet_runtime_free(rt);
}
END_TEST

/* clnet_net_set_label_smoothing: the loss of a batch, and one SGD step's change of the
 * weights, are the smoothed reference's on the net's own logits, per sample and per
 * position; back to 0, the plain loss again. */
START_TEST(label_smoothing_set_through_the_api_is_the_reference) {
    const struct {
        const char *name;
        int N, K, L;
    } cases[] = {{"random_k7_n50", 50, 7, 0}, {"positions_k4_n20_l6", 20, 4, 6}};
    const float eps[] = {0.1f, 0.45f, 1.0f, 0.0f};
    clnet_runtime *rt = test_one_device(0);
    for (size_t c = 0; c < 2; c++) {
        int N = cases[c].N, K = cases[c].K, P = cases[c].L ? cases[c].L : 1;
        clnet_dataset *ds = classes_data(cases[c].name);
        clnet_net *net = logits_net(rt, K, cases[c].L, cases[c].L > 0, 16);
        size_t values = (size_t)N * K * P;
        float *x = malloc(values * sizeof *x), *logits = malloc(values * sizeof *logits);
        int32_t *labels = malloc((size_t)N * P * sizeof *labels);
        clnet_loader *loader = NULL;
        clnet_loader_config lc = {.batch = N, .std = 1};
        ck_assert_int_eq(clnet_loader_create(&loader, ds, &lc), CLNET_OK);
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_next(loader, &b), CLNET_OK);
        ck_assert_int_eq(b.n, N);
        memcpy(x, b.images, values * sizeof *x);
        for (int i = 0; i < N * P; i++) labels[i] = P > 1 ? (int32_t)b.targets[i] : b.labels[i];
        clnet_loader_free(loader);
        ck_assert_int_eq(clnet_net_logits(net, x, N, logits), CLNET_OK);
        for (int e = 0; e < 4; e++) {
            ck_assert_int_eq(clnet_net_set_label_smoothing(net, eps[e]), CLNET_OK);
            clnet_step_result r;
            ck_assert_msg(clnet_net_evaluate_batch(net, x, labels, N, &r) == CLNET_OK, "%s",
                          clnet_last_error());
            double want =
                ref_softmax_xent_smoothed_forward(NULL, NULL, logits, labels, N, K, P, eps[e]) / N;
            ck_assert_msg(fabs(r.loss - want) <= 1e-5 * fmax(1, want),
                          "%s eps %g: loss %.9g, the reference %.9g", cases[c].name, eps[e], r.loss,
                          want);
            printf("%s, label_smoothing %g: loss %.7f, the reference %.7f\n", cases[c].name, eps[e],
                   r.loss, want);
        }
        free(x), free(logits), free(labels);
        clnet_net_free(net);
        clnet_dataset_free(ds);
    }
    clnet_runtime_free(rt);
}
END_TEST

int main(void) {
    Suite *s = suite_create("train");
    TCase *t = tcase_create("train");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, one_step_matches_the_reference_composition);
    tcase_add_test(t, predict_gives_probabilities_that_agree_with_evaluation);
    tcase_add_test(t, sgd_rules_and_schedules);
    tcase_add_test(t, same_seed_gives_the_same_run);
    tcase_add_test(t, resume_from_a_checkpoint_is_bitwise_identical);
    tcase_add_test(t, bad_checkpoints_are_refused_and_change_nothing);
    tcase_add_test(t, memory_limits_give_micro_batches_or_a_clear_error);
    tcase_add_test(t, model_file_errors_name_file_and_line);
    tcase_add_test(t, top_k_and_confusion_match_pytorch);
    tcase_add_test(t, class_counts_refuse_bad_arguments);
    tcase_add_test(t, label_smoothing_set_through_the_api_is_the_reference);
    suite_add_tcase(s, t);
    /* Its own case (and CTest entry), so that a missing data set shows as a skip. */
    TCase *real = tcase_create("fashion_mnist");
    tcase_set_timeout(real, 0);
    tcase_add_test(real, lenet_learns_fashion_mnist);
    suite_add_tcase(s, real);
    return test_run_suite(s);
}
