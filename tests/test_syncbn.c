/* Batch norm across devices. With sync=on (the default) the statistics of
 * a step cover the whole batch, so a step on two devices equals a step on
 * one, for any split: every parameter update and every running statistic.
 * With sync=off each device normalizes its own share: the result depends
 * on the split, and the net still learns. A share never runs as
 * micro-batches: shares are capped at what a device holds, and a batch that
 * fits nowhere is refused. The case "two" runs on the two-device
 * configurations (PoCL twice, PoCL + Oclgrind), "multi" on two PoCL
 * devices, "any" on one. ResNet-18 on two devices: tests/test_resnet.c. */
#include "error.h"
#include "harness.h"
#include "net.h"
#include "trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A small residual net with batch norm after a convolution and after a
 * linear layer (a vector input: BatchNorm1d). */
static const char *SMALL[] = {
    "input channels=2 height=6 width=6",
    "conv2d name=c1 filters=4 size=3 pad=1 init=xavier",
    "batchnorm name=bn1",
    "relu name=r1",
    "conv2d name=c2 filters=4 size=3 pad=1 init=xavier",
    "batchnorm name=bn2 momentum=0.3",
    "add name=skip input=r1,bn2",
    "relu",
    "global_avgpool",
    "linear name=fc1 units=6 init=xavier",
    "batchnorm name=bn3",
    "relu",
    "linear name=fc2 units=3 init=xavier",
    "softmax_cross_entropy",
};
#define SMALL_LINES (int)(sizeof SMALL / sizeof *SMALL)

static clnet_net *make_net(const char *const *lines, int count, const char *path) {
    clnet_net *net = NULL;
    if (path) {
        ck_assert_msg(clnet_net_load(&net, path) == CLNET_OK, "%s", clnet_last_error());
    } else {
        ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
        for (int i = 0; i < count; i++)
            ck_assert_msg(clnet_net_add(net, lines[i]) == CLNET_OK, "'%s': %s", lines[i],
                          clnet_last_error());
    }
    ck_assert_msg(clnet_net_init(net, 11) == CLNET_OK, "%s", clnet_last_error());
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = 0.05f;
    c.momentum = 0.9f;
    c.weight_decay = 5e-4f;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_OK);
    return net;
}

static size_t sample_size(const clnet_net *net) {
    int shape[4], rank = clnet_net_input_rank(net, shape);
    size_t size = 1;
    for (int i = 0; i < rank; i++) size *= (size_t)shape[i];
    return size;
}

static void batch_data(const clnet_net *net, int n, uint64_t seed, float *x, int32_t *y) {
    test_random_floats(x, (size_t)n * sample_size(net), seed);
    for (int i = 0; i < n; i++) y[i] = (int32_t)((i * 7 + (int)seed) % clnet_net_classes(net));
}

/* What `steps` steps did: every parameter's update and the float buffers
 * (running statistics) after them, and how many samples each device took. */
typedef struct {
    float *delta, *buffers;
    int64_t samples[2];
} run_result;

static run_result run(clnet_runtime *rt, const double *split, const char *const *lines, int count,
                      const char *path, int batch, int steps) {
    clnet_net *net = make_net(lines, count, path);
    size_t np = clnet_net_param_count(net), nb = clnet_net_buffer_count(net);
    size_t in = sample_size(net);
    run_result r = {malloc(np * sizeof(float)), malloc(nb * sizeof(float)), {0, 0}};
    float *x = malloc((size_t)batch * in * sizeof(float));
    int32_t *y = malloc((size_t)batch * sizeof(int32_t));
    memcpy(r.delta, clnet_net_params(net), np * sizeof(float));
    ck_assert_msg(clnet_net_bind(net, rt, batch) == CLNET_OK, "%s", clnet_last_error());
    if (split) ck_assert_int_eq(clnet_net_set_split(net, split, 2), CLNET_OK);
    for (int s = 0; s < steps; s++) {
        batch_data(net, batch, 40 + (uint64_t)s, x, y);
        ck_assert_msg(clnet_net_train_step(net, x, y, batch, NULL) == CLNET_OK, "%s",
                      clnet_last_error());
    }
    for (size_t i = 0; i < np; i++) r.delta[i] = clnet_net_params(net)[i] - r.delta[i];
    const float *buffers = clnet_net_buffers(net);
    ck_assert_ptr_nonnull(buffers);
    memcpy(r.buffers, buffers, nb * sizeof(float));
    for (int i = 0; i < net->trainer->count && i < 2; i++)
        r.samples[i] = net->trainer->split.balance.samples[i];
    free(x), free(y);
    clnet_net_free(net);
    return r;
}

static void run_free(run_result *r) {
    free(r->delta), free(r->buffers);
}

/* max |a - b| over one tensor of n values at off; *scale = max |b|. */
static double tensor_diff(const float *a, const float *b, size_t off, size_t n, double *scale) {
    double worst = 0, big = 0;
    for (size_t k = off; k < off + n; k++) {
        worst = fmax(worst, fabs((double)a[k] - b[k]));
        big = fmax(big, fabs((double)b[k]));
    }
    *scale = big;
    return worst;
}

/* The largest relative difference over every parameter update and every
 * float buffer. The bias of a convolution that feeds a batch norm has a
 * gradient of exactly zero in exact arithmetic (the norm subtracts the
 * channel's mean), so both runs hold only rounding noise there and weight
 * decay: it is measured against its layer's weight update instead. */
static double worst_diff(const run_result *a, const run_result *b, const char *const *lines,
                         int count, const char *path, char *where, size_t cap) {
    clnet_net *net = make_net(lines, count, path);
    const clnet_model *m = &net->model;
    double worst = 0;
    for (int i = 0; i < m->count; i++) {
        const clnet_node *node = &m->nodes[i];
        int feeds_norm = 0;
        for (int j = 0; j < m->count; j++)
            feeds_norm |= m->nodes[j].inputs[0] == i && m->nodes[j].kind->batch_stats;
        double weight_scale = 0;
        for (int t = 0; t < node->nparams; t++) {
            const clnet_tensor *ten = &node->params[t];
            double scale = 0, d = tensor_diff(a->delta, b->delta, ten->offset, ten->count, &scale);
            if (t == 0) weight_scale = scale;
            if (t == 1 && feeds_norm && !node->kind->batch_stats) scale = weight_scale;
            ck_assert_msg(scale > 0, "%s.%s did not move", node->name, ten->suffix);
            d /= scale;
            if (d > worst) {
                worst = d;
                snprintf(where, cap, "%s.%s", node->name, ten->suffix);
            }
        }
        for (int t = 0; t < node->nbuffers; t++) {
            const clnet_tensor *ten = &node->buffers[t];
            if (ten->dtype != CLNET_DTYPE_F32) continue;
            double scale = 0;
            double d = tensor_diff(a->buffers, b->buffers, ten->offset, ten->count, &scale) / scale;
            if (d > worst) {
                worst = d;
                snprintf(where, cap, "%s.%s", node->name, ten->suffix);
            }
        }
    }
    clnet_net_free(net);
    return worst;
}

/* Two devices against one: balanced, forced 3:1 and 1:1; with a simulator
 * (Oclgrind, slow) only 1:1, on the smallest batch. */
static void expect_test_one_device(const char *what, const char *const *lines, int count,
                                   const char *path, int batch, int steps) {
    clnet_runtime *all = test_runtime(), *one = test_fast_one_device();
    ck_assert_int_eq(clnet_runtime_device_count(all), 2);
    int slow = test_has_slow_device(all);
    run_result ref = run(one, NULL, lines, count, path, batch, steps);
    const double equal[2] = {1, 1};
    double unequal[2];
    test_light_split(all, (double[]){3, 1}, unequal);
    const double *splits[] = {equal, unequal, NULL};
    const char *names[] = {"split 1:1", "split 3:1", "balanced"};
    for (int k = 0; k < (slow ? 1 : 3); k++) {
        run_result r = run(all, splits[k], lines, count, path, batch, steps);
        char where[160] = "";
        double d = worst_diff(&r, &ref, lines, count, path, where, sizeof where);
        printf("%s, %d steps of %d on 2 devices vs 1, %s (%lld + %lld samples): largest "
               "relative difference %.1e (%s)\n",
               what, steps, batch, names[k], (long long)r.samples[0], (long long)r.samples[1], d,
               where);
        ck_assert_msg(d <= 1e-4, "%s, %s: %s differs by %g", what, names[k], where, d);
        if (splits[k]) /* a forced split gives both devices samples */
            ck_assert_msg(r.samples[0] > 0 && r.samples[1] > 0, "%s: %lld + %lld samples", names[k],
                          (long long)r.samples[0], (long long)r.samples[1]);
        run_free(&r);
    }
    run_free(&ref);
    clnet_runtime_free(one);
}

START_TEST(synchronized_batch_norm_on_two_devices_takes_the_steps_of_one) {
    expect_test_one_device("small net with batch norm", SMALL, SMALL_LINES, NULL, 6, 3);
}
END_TEST

/* lines as src (count of them) with sync=off on each of its (at most 3)
 * batch norms, edited in edited. */
static void sync_off(const char *const *src, int count, const char **lines, char edited[3][128]) {
    for (int i = 0, k = 0; i < count; i++) {
        lines[i] = src[i];
        if (strncmp(src[i], "batchnorm", 9) == 0) {
            snprintf(edited[k], sizeof edited[k], "%s sync=off", src[i]);
            lines[i] = edited[k++];
        }
    }
}

START_TEST(unsynchronized_batch_norm_depends_on_the_split_and_learns) {
    const char *lines[SMALL_LINES];
    char edited[3][128];
    sync_off(SMALL, SMALL_LINES, lines, edited);
    clnet_runtime *all = test_runtime(), *one = test_fast_one_device();
    double unequal[2];
    test_light_split(all, (double[]){3, 1}, unequal);
    run_result a = run(one, NULL, lines, SMALL_LINES, NULL, 12, 3);
    run_result b = run(all, unequal, lines, SMALL_LINES, NULL, 12, 3);
    char where[160] = "";
    double d = worst_diff(&b, &a, lines, SMALL_LINES, NULL, where, sizeof where);
    printf("sync=off, split 3:1 vs 1 device: largest relative difference %.2g (%s)\n", d, where);
    ck_assert_msg(d > 1e-3, "sync=off gave the one-device result (%g): statistics were merged", d);
    run_free(&a), run_free(&b);

    /* it learns 24 fixed samples on two devices */
    clnet_net *net = make_net(lines, SMALL_LINES, NULL);
    enum { N = 24 };
    float x[N * 72];
    int32_t y[N];
    batch_data(net, N, 5, x, y);
    ck_assert_msg(clnet_net_bind(net, all, N) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_net_set_split(net, unequal, 2), CLNET_OK);
    clnet_step_result first, r;
    ck_assert_int_eq(clnet_net_train_step(net, x, y, N, &first), CLNET_OK);
    for (int s = 0; s < 60; s++) ck_assert_int_eq(clnet_net_train_step(net, x, y, N, &r), CLNET_OK);
    printf("sync=off, 60 steps on 24 fixed samples, split 3:1: loss %.3f -> %.3f\n", first.loss,
           r.loss);
    ck_assert_msg(r.loss < 0.6 * first.loss, "the loss fell only from %g to %g", first.loss,
                  r.loss);
    clnet_net_free(net);
    clnet_runtime_free(one);
}
END_TEST

/* A downsampling block: in forward the shortcut convolution runs while
 * bn3's statistics are exchanged; in backward the shortcut's pass runs
 * while bn3's sums are, c3's weight gradient while bn2's are, c2's while
 * bn1's are (src/replica.c: exchanges on their way). */
static const char *SHORTCUT[] = {
    "input channels=2 height=6 width=6",
    "conv2d name=c1 filters=4 size=3 pad=1 init=xavier",
    "batchnorm name=bn1",
    "relu name=r1",
    "conv2d name=c2 filters=4 size=3 pad=1 stride=2 init=xavier",
    "batchnorm name=bn2",
    "relu",
    "conv2d name=c3 filters=4 size=3 pad=1 init=xavier",
    "batchnorm name=bn3 momentum=0.3",
    "conv2d name=short input=r1 filters=4 size=1 stride=2 init=xavier",
    "add input=bn3,short",
    "relu",
    "global_avgpool",
    "linear name=fc units=3 init=xavier",
    "softmax_cross_entropy",
};
#define SHORTCUT_LINES (int)(sizeof SHORTCUT / sizeof *SHORTCUT)

/* The steps the exchange tests take: 3, or 2 beside a simulator (momentum
 * takes part from the second step on), where a step takes seconds. */
static int exchange_steps(void) {
    return test_has_slow_device(test_runtime()) ? 2 : 3;
}

/* exchange_steps() steps on two devices (split 3:1) with the exchanges on
 * their way and with CLNET_OVERLAP=off: the same floats, and `per_step`
 * exchanges a step that ran work meanwhile, none with CLNET_OVERLAP=off. */
static void expect_same_floats_overlapped(const char *what, const char *const *lines,
                                          uint64_t per_step) {
    double unequal[2];
    test_light_split(test_runtime(), (double[]){3, 1}, unequal);
    const int steps = exchange_steps();
    const uint64_t expect = per_step * (uint64_t)steps;
    clnet_counters c0, c1, c2;
    clnet_debug_counters(&c0);
    run_result on = run(test_runtime(), unequal, lines, SHORTCUT_LINES, NULL, 8, steps);
    clnet_debug_counters(&c1);
    setenv("CLNET_OVERLAP", "off", 1);
    run_result off = run(test_runtime(), unequal, lines, SHORTCUT_LINES, NULL, 8, steps);
    unsetenv("CLNET_OVERLAP");
    clnet_debug_counters(&c2);
    uint64_t with = c1.overlaps - c0.overlaps, without = c2.overlaps - c1.overlaps;
    printf("%s: %llu exchanges ran work meanwhile (%llu with CLNET_OVERLAP=off)\n", what,
           (unsigned long long)with, (unsigned long long)without);
    ck_assert_msg(with == expect, "%s: %llu exchanges ran work meanwhile, not %llu", what,
                  (unsigned long long)with, (unsigned long long)expect);
    ck_assert_msg(without == 0, "%llu with CLNET_OVERLAP=off", (unsigned long long)without);
    clnet_net *net = make_net(lines, SHORTCUT_LINES, NULL);
    ck_assert_mem_eq(on.delta, off.delta, clnet_net_param_count(net) * sizeof(float));
    ck_assert_mem_eq(on.buffers, off.buffers, clnet_net_buffer_count(net) * sizeof(float));
    clnet_net_free(net);
    run_free(&on), run_free(&off);
}

/* The exchanges on their way reorder work that does not depend on them:
 * every float is what the exchanges in place give, with sync=on (and that
 * is one device's within 1e-4) and with sync=off (where backward exchanges
 * nothing and each batch norm's backward runs where it stands). */
START_TEST(exchanges_on_their_way_change_no_float) {
    ck_assert_int_eq(clnet_runtime_device_count(test_runtime()), 2);
    /* per device and step: bn3's forward, and bn1's, bn2's and bn3's backward */
    expect_same_floats_overlapped("sync=on", SHORTCUT, 4 * 2);
    if (test_slow_draw(test_runtime(), 1, "the downsampling block against one device"))
        expect_test_one_device("downsampling block", SHORTCUT, SHORTCUT_LINES, NULL, 8,
                               exchange_steps());
    const char *lines[SHORTCUT_LINES];
    char edited[3][128];
    sync_off(SHORTCUT, SHORTCUT_LINES, lines, edited);
    if (test_slow_draw(test_runtime(), 2, "sync=off"))
        expect_same_floats_overlapped("sync=off", lines, 1 * 2); /* bn3's forward */
}
END_TEST

/* CLNET_MICRO_BATCH=4 makes each device hold at most 4 samples. */
START_TEST(a_batch_norm_share_is_never_split_into_micro_batches) {
    clnet_runtime *one = test_one_device(0);
    setenv("CLNET_MICRO_BATCH", "4", 1);
    clnet_net *net = make_net(SMALL, SMALL_LINES, NULL);
    float x[8 * 72];
    int32_t y[8];
    batch_data(net, 8, 3, x, y);
    ck_assert_msg(clnet_net_bind(net, one, 8) == CLNET_OK, "%s", clnet_last_error());
    size_t np = clnet_net_param_count(net);
    float *before = malloc(np * sizeof(float));
    memcpy(before, clnet_net_params(net), np * sizeof(float));
    ck_assert_int_eq(clnet_net_train_step(net, x, y, 8, NULL), CLNET_ERR_DEVICE_MEMORY);
    const char *e = clnet_last_error();
    printf("refused: %s\n", e);
    ck_assert_msg(strstr(e, "does not fit") && strstr(e, "'bn1'") && strstr(e, "at most 4") &&
                      strstr(e, "MiB"),
                  "%s", e);
    ck_assert_mem_eq(before, clnet_net_params(net), np * sizeof(float)); /* nothing moved */
    ck_assert_int_eq(clnet_net_step(net), 0);
    /* a batch that fits trains */
    ck_assert_msg(clnet_net_train_step(net, x, y, 4, NULL) == CLNET_OK, "%s", clnet_last_error());
    /* evaluation may still run in micro-batches */
    clnet_step_result r;
    ck_assert_msg(clnet_net_evaluate_batch(net, x, y, 8, &r) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(r.n, 8);
    unsetenv("CLNET_MICRO_BATCH");
    free(before);
    clnet_net_free(net);
    clnet_runtime_free(one);
}
END_TEST

/* Two devices holding 4 each take a batch of 8 as 4 + 4, whatever the
 * split asks, and still equal one device that holds all 8. */
START_TEST(shares_are_capped_at_what_each_device_holds) {
    clnet_runtime *one = test_one_device(0);
    run_result ref = run(one, NULL, SMALL, SMALL_LINES, NULL, 8, 2);
    setenv("CLNET_MICRO_BATCH", "4", 1);
    const double unequal[2] = {3, 1};
    run_result r = run(test_runtime(), unequal, SMALL, SMALL_LINES, NULL, 8, 2);
    unsetenv("CLNET_MICRO_BATCH");
    char where[160] = "";
    double d = worst_diff(&r, &ref, SMALL, SMALL_LINES, NULL, where, sizeof where);
    printf("capped at 4 per device, split 3:1 asked: %lld + %lld samples, difference %.1e\n",
           (long long)r.samples[0], (long long)r.samples[1], d);
    ck_assert_int_eq(r.samples[0], 8);
    ck_assert_int_eq(r.samples[1], 8);
    ck_assert_msg(d <= 1e-4, "%s differs by %g", where, d);
    run_free(&ref), run_free(&r);
    clnet_runtime_free(one);
}
END_TEST

int main(void) {
    Suite *s = suite_create("syncbn");
    TCase *any = tcase_create("any");
    tcase_set_timeout(any, 0);
    tcase_add_test(any, a_batch_norm_share_is_never_split_into_micro_batches);
    suite_add_tcase(s, any);
    TCase *both = tcase_create("two"); /* two devices, one of which may be a simulator */
    tcase_set_timeout(both, 0);
    tcase_add_test(both, synchronized_batch_norm_on_two_devices_takes_the_steps_of_one);
    tcase_add_test(both, exchanges_on_their_way_change_no_float);
    suite_add_tcase(s, both);
    TCase *multi = tcase_create("multi"); /* two real devices */
    tcase_set_timeout(multi, 0);
    tcase_add_test(multi, unsynchronized_batch_norm_depends_on_the_split_and_learns);
    tcase_add_test(multi, shares_are_capped_at_what_each_device_holds);
    suite_add_tcase(s, multi);
    return test_run_suite(s);
}
