/* Training that keeps going: a step whose loss, gradient or update is NaN
 * or infinite applies nothing. Generated cases (seed printed, replay with
 * CLNET_FAULTS_SEED): a net that meets a bad batch among good ones ends
 * bitwise where a net that met only the good ones ends (parameters,
 * optimizer state, batch norms' running statistics), on every device of the
 * configuration and with the bad sample in any device's share. */
#include "clock.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A linear classifier on 2 values: its weight gradient is (p - onehot) x,
 * so pixels of 3e38 give an infinite summed gradient or loss, and pixels of
 * 10 times a learning rate of 3e38 an infinite weight. */
static const char *LINEAR[] = {
    "input channels=1 height=1 width=2",
    "flatten",
    "linear name=out units=2 init=zeros",
    "softmax_cross_entropy",
};

/* The same with a batch norm between, whose running statistics a bad batch
 * must not move. */
static const char *NORMED[] = {
    "input channels=1 height=1 width=2",
    "conv2d name=c filters=3 size=1 init=normal std=0.5 bias_init=normal bias_std=0.1",
    "batchnorm name=bn",
    "relu",
    "flatten",
    "linear name=out units=2 init=xavier",
    "softmax_cross_entropy",
};

enum { BATCH = 6, SAMPLE = 2 };

static clnet_net *make_net(const char *const *lines, size_t count, clnet_runtime *rt, int adam,
                           uint64_t seed) {
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (size_t i = 0; i < count; i++)
        ck_assert_msg(clnet_net_add(net, lines[i]) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_net_init(net, seed), CLNET_OK);
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = 0.1f;
    if (adam)
        c.optimizer = CLNET_OPTIMIZER_ADAM;
    else
        c.momentum = 0.9f, c.weight_decay = 0.01f;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_OK);
    ck_assert_msg(clnet_net_bind(net, rt, BATCH) == CLNET_OK, "%s", clnet_last_error());
    double equal[CLNET_MAX_DEVICES]; /* a fixed split, the same in both nets: bitwise runs */
    for (int i = 0; i < CLNET_MAX_DEVICES; i++) equal[i] = 1;
    ck_assert_int_eq(clnet_net_set_split(net, equal, clnet_net_device_count(net)), CLNET_OK);
    return net;
}

static void set_lr(clnet_net *net, int adam, float lr) {
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = lr;
    if (adam)
        c.optimizer = CLNET_OPTIMIZER_ADAM;
    else
        c.momentum = 0.9f, c.weight_decay = 0.01f;
    ck_assert_int_eq(clnet_net_set_optimizer(net, &c), CLNET_OK);
}

static void good_batch(float *x, int32_t *labels, uint64_t seed) {
    test_random_floats(x, BATCH * SAMPLE, seed);
    for (int i = 0; i < BATCH; i++) labels[i] = (int32_t)((seed + (uint64_t)i) % 2);
}

/* What makes a batch bad. */
typedef enum { BAD_NAN_PIXEL, BAD_INF_PIXEL, BAD_HUGE_PIXELS, BAD_HUGE_LR, BAD_KINDS } bad_kind;
static const char *bad_name[] = {"a NaN pixel", "an infinite pixel", "huge pixels",
                                 "a huge learning rate"};

/* The bad batch: its sample `at` (or all of them) made bad. */
static void bad_batch(float *x, int32_t *labels, bad_kind kind, int at, uint64_t seed) {
    good_batch(x, labels, seed);
    if (kind == BAD_NAN_PIXEL) x[at * SAMPLE] = NAN;
    if (kind == BAD_INF_PIXEL) x[at * SAMPLE + 1] = INFINITY;
    /* every sample the same, labels taking turns: the logits are far apart
     * (softmax 0 or 1: the summed gradient overflows) or infinite (the loss
     * is NaN) */
    if (kind == BAD_HUGE_PIXELS)
        for (int i = 0; i < BATCH; i++)
            x[i * SAMPLE] = 3e38f, x[i * SAMPLE + 1] = 0, labels[i] = i % 2;
    if (kind == BAD_HUGE_LR)
        for (int i = 0; i < BATCH; i++) x[i * SAMPLE] = 10.0f, labels[i] = 0;
}

static void train_ok(clnet_net *net, const float *x, const int32_t *labels) {
    clnet_step_result r;
    ck_assert_msg(clnet_net_train_step(net, x, labels, BATCH, &r) == CLNET_OK, "%s",
                  clnet_last_error());
}

static void assert_same_floats(const float *a, const float *b, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof(float)) == 0, "%s %zu: %.9g vs %.9g", what, i,
                      a[i], b[i]);
}

/* Two nets hold the same parameters and buffers, bit for bit (b's buffers
 * are copied first: a net's buffers are read back into one place). */
static void assert_same_nets(clnet_net *a, clnet_net *b) {
    size_t np = clnet_net_param_count(a), nb = clnet_net_buffer_count(a);
    assert_same_floats(clnet_net_params(a), clnet_net_params(b), np, "parameter");
    if (!nb) return;
    float *buffers = malloc(nb * sizeof(float));
    memcpy(buffers, clnet_net_buffers(b), nb * sizeof(float));
    assert_same_floats(clnet_net_buffers(a), buffers, nb, "buffer");
    free(buffers);
}

/* One generated case: 2 good steps, the bad one (refused), 2 good steps,
 * against the same net given only the good steps. */
static void one_case(clnet_runtime *rt, uint64_t seed) {
    srand((unsigned)seed);
    int normed = rand() % 2, adam = rand() % 2, at = rand() % BATCH;
    bad_kind kind = (bad_kind)(rand() % BAD_KINDS);
    if (kind == BAD_HUGE_PIXELS || kind == BAD_HUGE_LR) normed = 0; /* their sums need LINEAR */
    if (kind == BAD_HUGE_LR) adam = 0; /* Adam's steps are bounded by lr: not overflowed by 10 */
    const char *const *lines = normed ? NORMED : LINEAR;
    size_t count = normed ? sizeof NORMED / sizeof *NORMED : sizeof LINEAR / sizeof *LINEAR;
    printf("case %llu: %s, %s, %s in sample %d\n", (unsigned long long)seed,
           normed ? "batch norm" : "linear", adam ? "adam" : "sgd momentum", bad_name[kind], at);
    clnet_net *met = make_net(lines, count, rt, adam, seed),
              *clean = make_net(lines, count, rt, adam, seed);
    size_t np = clnet_net_param_count(met), nb = clnet_net_buffer_count(met);
    float x[BATCH * SAMPLE];
    int32_t labels[BATCH];
    for (int s = 0; s < 2; s++) {
        good_batch(x, labels, seed * 10 + (uint64_t)s);
        train_ok(met, x, labels);
        train_ok(clean, x, labels);
    }
    float *params = malloc(np * sizeof(float)), *buffers = malloc((nb + 1) * sizeof(float));
    memcpy(params, clnet_net_params(met), np * sizeof(float));
    if (nb) memcpy(buffers, clnet_net_buffers(met), nb * sizeof(float));
    int64_t step = clnet_net_step(met);

    bad_batch(x, labels, kind, at, seed * 10 + 7);
    if (kind == BAD_HUGE_LR) set_lr(met, adam, 3e38f);
    clnet_step_result r = {0};
    clnet_status s = clnet_net_train_step(met, x, labels, BATCH, &r);
    ck_assert_msg(s == CLNET_ERR_NONFINITE, "status %d (%s)", s,
                  s ? clnet_last_error() : "applied");
    printf("  refused: %s\n", clnet_last_error());
    /* a bad pixel may give a NaN loss, or (through a relu, which makes NaN 0) a
     * finite loss and NaN gradients: either names what it found */
    const char *e = clnet_last_error();
    if (kind == BAD_HUGE_LR)
        ck_assert_msg(strstr(e, "the update would make 'out.weight'"), "%s", e);
    else
        ck_assert_msg(strstr(e, "the loss is") || strstr(e, "the gradient of '"), "%s", e);
    ck_assert_int_eq(r.n, BATCH);
    ck_assert_int_eq(clnet_net_step(met), step);
    assert_same_floats(clnet_net_params(met), params, np, "parameter");
    if (nb) assert_same_floats(clnet_net_buffers(met), buffers, nb, "buffer");
    if (kind == BAD_HUGE_LR) set_lr(met, adam, 0.1f);

    for (int s2 = 2; s2 < 4; s2++) {
        good_batch(x, labels, seed * 10 + (uint64_t)s2);
        train_ok(met, x, labels);
        train_ok(clean, x, labels);
    }
    assert_same_nets(met, clean);
    free(params);
    free(buffers);
    clnet_net_free(met);
    clnet_net_free(clean);
}

START_TEST(nonfinite_steps_apply_nothing) {
    clnet_runtime *rt = test_runtime();
    uint64_t first = test_seed_from_env("CLNET_FAULTS_SEED", 2711);
    int cases = getenv("CLNET_FAULTS_CASES") ? atoi(getenv("CLNET_FAULTS_CASES")) : 12;
    double budget = test_budget_seconds(), t0 = clnet_now();
    printf("seeds from %llu, %d of them%s (replay one: CLNET_FAULTS_SEED=S CLNET_FAULTS_CASES=1)\n",
           (unsigned long long)first, cases, budget > 0 ? ", then more within the budget" : "");
    int c = 0;
    for (; c < cases || clnet_now() - t0 < budget; c++) one_case(rt, first + (uint64_t)c);
    printf("%d cases, seeds %llu..%llu\n", c, (unsigned long long)first,
           (unsigned long long)first + (uint64_t)c - 1);
}
END_TEST

/* Which of CLNET_FAULT's four points a test tries: every one, or with a
 * simulator (Oclgrind) among the devices, transfer and reduce: the points
 * are the host's logic, and of those only the transfer differs by device
 * (Oclgrind's gradients are read into staging, PoCL's mapped in place),
 * while the simulator is slow. */
static int first_point(clnet_runtime *rt) {
    return test_has_slow_device(rt) ? 2 : 0;
}

/* CLNET_FAULT at each point of a step, on each device of two: the step
 * fails naming that device (not a device that only failed for it: batch
 * norm's exchange is abandoned), applies nothing, and the next step goes on
 * as if the failed one had never been tried. */
START_TEST(a_device_fault_anywhere_in_a_step_names_it_and_applies_nothing) {
    static const char *points[] = {"start", "kernels", "transfer", "reduce"};
    clnet_runtime *rt = test_runtime();
    int devices = clnet_runtime_device_count(rt);
    size_t count = sizeof NORMED / sizeof *NORMED;
    for (int p = first_point(rt); p < 4; p++) {
        if (!test_slow_draw(rt, p - first_point(rt), points[p])) continue; /* transfer: drawn */
        for (int dev = 0; dev < devices; dev++) {
            clnet_device_info info;
            clnet_runtime_device_info(rt, dev, &info);
            char fault[64], name[64];
            snprintf(fault, sizeof fault, "%d:2:%s", info.index, points[p]);
            setenv("CLNET_FAULT", fault, 1);
            clnet_net *met = make_net(NORMED, count, rt, 0, 5);
            unsetenv("CLNET_FAULT");
            clnet_net *clean = make_net(NORMED, count, rt, 0, 5);
            size_t np = clnet_net_param_count(met);
            float x[BATCH * SAMPLE], *before = malloc(np * sizeof(float));
            int32_t labels[BATCH];
            for (int s = 0; s < 2; s++) {
                good_batch(x, labels, 40 + (uint64_t)s);
                train_ok(met, x, labels);
                train_ok(clean, x, labels);
            }
            memcpy(before, clnet_net_params(met), np * sizeof(float));
            good_batch(x, labels, 42);
            clnet_status st = clnet_net_train_step(met, x, labels, BATCH, NULL);
            const char *e = clnet_last_error();
            printf("CLNET_FAULT=%s: %s\n", fault, st ? e : "no failure");
            snprintf(name, sizeof name, "device %d (", info.index);
            ck_assert_msg(st != CLNET_OK && strstr(e, name) && strstr(e, "injected fault"), "%s",
                          st ? e : "no failure");
            ck_assert_int_eq(clnet_net_step(met), 2);
            assert_same_floats(clnet_net_params(met), before, np, "parameter");
            for (int s = 2; s < 4; s++) {
                good_batch(x, labels, 40 + (uint64_t)s);
                train_ok(met, x, labels);
                train_ok(clean, x, labels);
            }
            assert_same_nets(met, clean);
            free(before);
            clnet_net_free(met);
            clnet_net_free(clean);
        }
    }
}
END_TEST

/* clnet_net_check_replicas: identical replicas pass after every step (batch
 * norm synchronized or not: running statistics come from the merged ones
 * either way); a parameter changed on one device (CLNET_FAULT's drift) is
 * found, naming that device and the tensor. */
START_TEST(check_replicas_passes_in_step_and_finds_a_drift) {
    static const char *unsynced[sizeof NORMED / sizeof *NORMED];
    clnet_runtime *rt = test_runtime();
    size_t count = sizeof NORMED / sizeof *NORMED;
    memcpy(unsynced, NORMED, sizeof NORMED);
    unsynced[2] = "batchnorm name=bn sync=off";
    float x[BATCH * SAMPLE];
    int32_t labels[BATCH];
    for (int v = 0; v < 2; v++) {
        clnet_net *net = make_net(v ? unsynced : NORMED, count, rt, v, 8);
        for (int s = 0; s < 4; s++) {
            good_batch(x, labels, 60 + (uint64_t)s);
            train_ok(net, x, labels);
            ck_assert_msg(clnet_net_check_replicas(net) == CLNET_OK, "%s", clnet_last_error());
        }
        clnet_net_free(net);
    }
    int devices = clnet_runtime_device_count(rt);
    for (int dev = 0; dev < devices; dev++) {
        clnet_device_info info;
        clnet_runtime_device_info(rt, dev, &info);
        char fault[64], name[64];
        snprintf(fault, sizeof fault, "%d:1:drift", info.index);
        setenv("CLNET_FAULT", fault, 1);
        clnet_net *net = make_net(NORMED, count, rt, 0, 8);
        unsetenv("CLNET_FAULT");
        good_batch(x, labels, 70);
        train_ok(net, x, labels);
        ck_assert_int_eq(clnet_net_check_replicas(net), CLNET_OK);
        train_ok(net, x, labels); /* step 1: the drift comes after it */
        clnet_status s = clnet_net_check_replicas(net);
        const char *e = clnet_last_error();
        printf("CLNET_FAULT=%s: %s\n", fault, s ? e : "no difference found");
        snprintf(name, sizeof name, "device %d (", info.index);
        ck_assert_msg(s == CLNET_ERR_WRONG_RESULT && strstr(e, name) &&
                          strstr(e, "parameter 'c.weight' (element 0)"),
                      "%s", s ? e : "no difference found");
        clnet_net_free(net);
    }
}
END_TEST

/* One case of a_dropped_device_costs_nothing: device `dev` of two fails at
 * point `point` of step 2, the other at step 4. */
static void drop_case(clnet_runtime *rt, const char *point, int dev) {
    size_t count = sizeof NORMED / sizeof *NORMED;
    float x[BATCH * SAMPLE];
    int32_t labels[BATCH];
    clnet_device_info info, other;
    clnet_runtime_device_info(rt, dev, &info);
    clnet_runtime_device_info(rt, 1 - dev, &other);
    char fault[64];
    snprintf(fault, sizeof fault, "%d:2:%s,%d:4", info.index, point, other.index);
    setenv("CLNET_FAULT", fault, 1);
    clnet_net *met = make_net(NORMED, count, rt, 0, 9);
    unsetenv("CLNET_FAULT");
    ck_assert_int_eq(clnet_net_set_on_device_failure(met, CLNET_ON_FAILURE_CONTINUE), CLNET_OK);
    clnet_net *clean = make_net(NORMED, count, rt, 0, 9);
    for (int s = 0; s < 4; s++) {
        if (s == 2) { /* the clean net gives the device nothing from here on */
            double w[2] = {1, 1};
            w[dev] = 0;
            ck_assert_int_eq(clnet_net_set_split(clean, w, 2), CLNET_OK);
        }
        good_batch(x, labels, 80 + (uint64_t)s);
        train_ok(met, x, labels);
        train_ok(clean, x, labels);
    }
    clnet_device_share d;
    ck_assert_int_eq(clnet_net_device_share(met, dev, &d), CLNET_OK);
    printf("CLNET_FAULT=%s: dropped %d in step %lld: %s\n", fault, d.dropped,
           (long long)d.dropped_step, d.dropped_why);
    ck_assert(d.dropped && d.dropped_step == 2 && strstr(d.dropped_why, "injected fault"));
    ck_assert_int_eq(clnet_net_step(met), 4);
    assert_same_nets(met, clean);
    ck_assert_msg(clnet_net_check_replicas(met) == CLNET_OK, "%s", clnet_last_error());
    /* step 4: the other one fails too, and none is left */
    good_batch(x, labels, 84);
    clnet_status st = clnet_net_train_step(met, x, labels, BATCH, NULL);
    char name[64];
    snprintf(name, sizeof name, "device %d (", other.index);
    ck_assert_msg(st != CLNET_OK && strstr(clnet_last_error(), name), "%s",
                  st ? clnet_last_error() : "no failure");
    ck_assert_int_eq(clnet_net_step(met), 4);
    clnet_net_free(met);
    clnet_net_free(clean);
}

/* CLNET_ON_FAILURE_CONTINUE: a device that fails at any point of step 2 is
 * dropped and the step done again on the other, with the whole batch; the
 * net then equals, bit for bit, a net whose split gave that device nothing
 * from step 2 on. A second failure leaves no device: the step fails naming
 * it. A batch that the one device left cannot hold (batch norm normalizes
 * a share in one pass) fails, saying so. */
START_TEST(a_dropped_device_costs_nothing) {
    static const char *points[] = {"start", "kernels", "transfer", "reduce"};
    clnet_runtime *rt = test_runtime();
    size_t count = sizeof NORMED / sizeof *NORMED;
    float x[BATCH * SAMPLE];
    int32_t labels[BATCH];
    if (clnet_runtime_device_count(rt) < 2) { /* one device: none would be left */
        setenv("CLNET_FAULT", "0:1", 1);
        clnet_net *net = make_net(NORMED, count, rt, 0, 9);
        unsetenv("CLNET_FAULT");
        clnet_net_set_on_device_failure(net, CLNET_ON_FAILURE_CONTINUE);
        good_batch(x, labels, 90);
        train_ok(net, x, labels);
        clnet_status st = clnet_net_train_step(net, x, labels, BATCH, NULL);
        ck_assert_msg(st != CLNET_OK && strstr(clnet_last_error(), "injected fault"), "%s",
                      st ? clnet_last_error() : "no failure");
        ck_assert_int_eq(clnet_net_step(net), 1);
        clnet_net_free(net);
        return;
    }
    for (int p = first_point(rt); p < 4; p++)
        if (test_slow_draw(rt, p - first_point(rt), points[p]))
            for (int dev = 0; dev < 2; dev++) drop_case(rt, points[p], dev);
    /* the batch does not fit the device left */
    clnet_device_info info;
    clnet_runtime_device_info(rt, 1, &info);
    char fault[64];
    snprintf(fault, sizeof fault, "%d:1", info.index);
    setenv("CLNET_FAULT", fault, 1);
    setenv("CLNET_MICRO_BATCH", "4", 1);
    clnet_net *net = make_net(NORMED, count, rt, 0, 9);
    unsetenv("CLNET_FAULT");
    unsetenv("CLNET_MICRO_BATCH");
    clnet_net_set_on_device_failure(net, CLNET_ON_FAILURE_CONTINUE);
    good_batch(x, labels, 90);
    train_ok(net, x, labels);
    clnet_status st = clnet_net_train_step(net, x, labels, BATCH, NULL);
    printf("a batch of %d, 4 a device: %s\n", BATCH, st ? clnet_last_error() : "no failure");
    ck_assert_msg(st == CLNET_ERR_DEVICE_MEMORY && strstr(clnet_last_error(), "does not fit") &&
                      strstr(clnet_last_error(), "after a failure"),
                  "%s", st ? clnet_last_error() : "no failure");
    clnet_net_free(net);
}
END_TEST

int main(void) {
    Suite *s = suite_create("faults");
    TCase *t = tcase_create("nonfinite");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, nonfinite_steps_apply_nothing);
    suite_add_tcase(s, t);
    TCase *f = tcase_create("device_faults");
    tcase_set_timeout(f, 600);
    tcase_add_test(f, a_device_fault_anywhere_in_a_step_names_it_and_applies_nothing);
    tcase_add_test(f, check_replicas_passes_in_step_and_finds_a_drift);
    tcase_add_test(f, a_dropped_device_costs_nothing);
    suite_add_tcase(s, f);
    int rc = test_run_suite(s);
    test_runtime_release();
    return rc;
}
