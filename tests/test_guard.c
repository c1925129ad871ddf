/* Memory guards and the scratch contract (guard.h, layer.h), with layer
 * kinds of the test's own that break them on purpose:
 *  - test_overrun writes one float past its output, which the plan puts in
 *    the middle of the activation arena: the guards (CLNET_GUARD=1, set by
 *    CTest for this test) fail the step naming the layer, the pass, the region
 *    and the device;
 *  - test_scratch_overrun writes one float past the scratch it declared;
 *  - test_short_scratch declares less scratch than it states it uses: the
 *    scratch check fails the pass before it runs, with both sizes;
 *  - plans hold for every pass of 1 to the planned batch: a kind whose scratch
 *    shrinks as n grows (as a convolution's chunks do) is planned for its
 *    largest;
 *  - GEMM scratch is planned for the candidates chosen: pinning greedier ones
 *    grows it between steps, and a pass that would need more than planned
 *    fails before it runs.
 * Runs on the configuration's first device. */
#include "error.h"
#include "harness.h"
#include "guard.h"
#include "layer.h"
#include "net.h"
#include "plan.h"
#include "replica.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the broken kinds ------------------------------------------------------------------ */

static clnet_status same_shape(clnet_node *node) {
    node->out = node->in[0];
    return CLNET_OK;
}

/* Copies count floats on the device (no kernel: the queue's own copy). */
static clnet_status copy(const clnet_pass *p, cl_mem from, size_t from_off, cl_mem to,
                         size_t to_off, size_t count) {
    clnet_status status = CLNET_OK;
    CL_CHECK(clEnqueueCopyBuffer(p->d->queue, from, to, from_off * sizeof(float),
                                 to_off * sizeof(float), count * sizeof(float), 0, NULL, NULL),
             "clEnqueueCopyBuffer");
cleanup:
    return status;
}

/* Sets count floats to 1 on the device. */
static clnet_status ones(const clnet_pass *p, cl_mem to, size_t to_off, size_t count) {
    clnet_status status = CLNET_OK;
    const float one = 1.0f;
    CL_CHECK(clEnqueueFillBuffer(p->d->queue, to, &one, sizeof one, to_off * sizeof(float),
                                 count * sizeof(float), 0, NULL, NULL),
             "clEnqueueFillBuffer");
cleanup:
    return status;
}

static size_t floats(const clnet_node *node, const clnet_pass *p) {
    return (size_t)p->n * clnet_shape_size(node->out);
}

static clnet_status identity_forward(const clnet_node *node, const clnet_pass *p);

/* y = x, and a 1 in the float after */
static clnet_status overrun_forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = identity_forward(node, p);
    return status == CLNET_OK ? ones(p, p->act, p->y + floats(node, p), 1) : status;
}

static clnet_status identity_backward(const clnet_node *node, const clnet_pass *p) {
    return p->need_dx[0] ? copy(p, p->dact, p->dy, p->dact, p->dx[0], floats(node, p)) : CLNET_OK;
}

static clnet_status identity_forward(const clnet_node *node, const clnet_pass *p) {
    return copy(p, p->act, p->x[0], p->act, p->y, floats(node, p));
}

/* scratch: one float per value of the pass */
static size_t scratch_floats(const clnet_node *node, const clnet_device *d, int n) {
    (void)d;
    return (size_t)n * clnet_shape_size(node->out);
}

/* y = x, and ones in the scratch: one float more than declared */
static clnet_status scratch_overrun_forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = ones(p, p->work, 0, floats(node, p) + 1);
    return status == CLNET_OK ? identity_forward(node, p) : status;
}

/* Scratch the short and shrinking kinds state, above the linear layer's
 * (its GEMMs' scratch), so that theirs sizes the plan. */
#define BIG 100

/* declares one float less than it states it uses */
static size_t short_floats(const clnet_node *node, const clnet_device *d, int n) {
    return BIG * scratch_floats(node, d, n) - 1;
}

static clnet_status short_forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = clnet_pass_uses(node, p, BIG * floats(node, p), 0);
    return status == CLNET_OK ? identity_forward(node, p) : status;
}

/* scratch that shrinks as n grows: 100 BIG - n floats */
static size_t shrinking_floats(const clnet_node *node, const clnet_device *d, int n) {
    (void)node, (void)d;
    return (size_t)(100 * BIG - n);
}

#define TEST_KIND(kind_name, work, fwd)                                                            \
    {                                                                                              \
        .name = kind_name, .min_inputs = 1, .max_inputs = 1, .setup = same_shape,                  \
        .work_floats = work, .forward = fwd, .backward = identity_backward,                        \
    }

static const clnet_kind OVERRUN = TEST_KIND("test_overrun", NULL, overrun_forward);
static const clnet_kind SCRATCH_OVERRUN =
    TEST_KIND("test_scratch_overrun", scratch_floats, scratch_overrun_forward);
static const clnet_kind SHORT = TEST_KIND("test_short_scratch", short_floats, short_forward);
static const clnet_kind SHRINKING = TEST_KIND("test_shrinking", shrinking_floats, identity_forward);

static void register_kinds(void) {
    const clnet_kind *kinds[] = {&OVERRUN, &SCRATCH_OVERRUN, &SHORT, &SHRINKING};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!clnet_kind_find(kinds[i]->name))
            ck_assert_int_eq(clnet_kind_register(kinds[i]), CLNET_OK);
}

/* ---- a net with the broken layer between two convolutions ------------------------------ */

#define BATCH 8

/* The broken layer `kind` named "bad" between two convolutions, so that
 * tensors lie on both sides of its output in the arena; with alone, only
 * it and a linear layer (whose GEMMs' scratch is below BIG's). */
static clnet_net *net_with(const char *kind, clnet_runtime *rt, int alone) {
    char line[64];
    snprintf(line, sizeof line, "%s name=bad", kind);
    const char *lines[] = {"input channels=1 height=6 width=6",
                           "conv2d name=c1 filters=2 size=3 pad=1",
                           line,
                           "conv2d name=c2 filters=2 size=3 pad=1",
                           "flatten",
                           "linear name=fc units=3",
                           "softmax_cross_entropy"};
    clnet_net *net = NULL;
    register_kinds();
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        if (!alone || (i != 1 && i != 3))
            ck_assert_msg(clnet_net_add(net, lines[i]) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_net_init(net, 3), CLNET_OK);
    ck_assert_msg(clnet_net_bind(net, rt, BATCH) == CLNET_OK, "%s", clnet_last_error());
    return net;
}

/* One training step of n samples: its status, with the message in why. */
static clnet_status step(clnet_net *net, int n, char *why, size_t cap) {
    float x[BATCH * 36];
    int32_t y[BATCH];
    test_random_floats(x, sizeof x / sizeof *x, 9);
    for (int i = 0; i < BATCH; i++) y[i] = i % 3;
    clnet_status s = clnet_net_train_step(net, x, y, n, NULL);
    snprintf(why, cap, "%s", s == CLNET_OK ? "" : clnet_last_error());
    printf("  step of %d: %s\n", n, s == CLNET_OK ? "ok" : why);
    return s;
}

static void expect_words(const char *text, const char *const *words, int count) {
    for (int i = 0; i < count; i++)
        ck_assert_msg(strstr(text, words[i]), "'%s' is not in the message: %s", words[i], text);
}

START_TEST(guards_are_on_here) {
    ck_assert_msg(clnet_guard_on(clnet_runtime_device(test_runtime(), 0)),
                  "this test needs CLNET_GUARD=1 in its environment");
}
END_TEST

START_TEST(a_layer_writing_past_its_output_in_the_middle_of_the_arena_fails_the_step) {
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = net_with("test_overrun", rt, 0);
    /* where the plan put it: tensors before and after its output */
    const clnet_replica *r = net->trainer->replicas[0];
    const clnet_plan *p = &r->plan;
    int bad = 1; /* c1, bad, c2, ... */
    size_t end = p->y[bad] + clnet_plan_span(p, 72) * BATCH;
    printf("  its output at %zu..%zu of an arena of %zu floats\n", p->y[bad], end, p->act);
    ck_assert_uint_gt(p->y[bad], 0);
    ck_assert_uint_lt(end, p->act);
    char why[1024];
    for (int n = BATCH; n >= BATCH - 3; n -= 3) { /* a full pass and a partial one */
        ck_assert_int_eq(step(net, n, why, sizeof why), CLNET_ERR_GUARD);
        const char *words[] = {"layer 'bad'", "test_overrun", "forward pass",
                               "its output",  "device",       "CLNET_GUARD"};
        expect_words(why, words, 6);
        char expect[64];
        snprintf(expect, sizeof expect, "over %d samples", n);
        ck_assert_msg(strstr(why, expect), "%s", why);
        snprintf(expect, sizeof expect, "floats %d to %d changed", n * 72, n * 72);
        ck_assert_msg(strstr(why, expect), "%s", why);
    }
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

START_TEST(a_layer_writing_past_its_scratch_fails_the_step) {
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = net_with("test_scratch_overrun", rt, 0);
    char why[1024];
    for (int n = BATCH; n >= 1; n -= 7) {
        ck_assert_int_eq(step(net, n, why, sizeof why), CLNET_ERR_GUARD);
        const char *words[] = {"layer 'bad'", "forward pass", "the scratch"};
        expect_words(why, words, 3);
    }
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

START_TEST(a_short_scratch_is_caught_before_the_pass) {
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = net_with("test_short_scratch", rt, 1);
    char why[1024];
    /* planned for BIG * BATCH * 36 - 1 floats: a pass over fewer samples fits */
    ck_assert_int_eq(step(net, BATCH - 1, why, sizeof why), CLNET_OK);
    ck_assert_int_eq(step(net, BATCH, why, sizeof why), CLNET_ERR_GUARD);
    char expect[160];
    snprintf(expect, sizeof expect,
             "layer 'bad' (test_short_scratch): its forward pass over %d samples needs %d floats "
             "of scratch, and %d were planned",
             BATCH, BIG * BATCH * 36, BIG * BATCH * 36 - 1);
    ck_assert_msg(strstr(why, expect), "%s", why);
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

START_TEST(the_plan_holds_the_largest_scratch_of_any_pass) {
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = net_with("test_shrinking", rt, 1);
    const clnet_plan *p = &net->trainer->replicas[0]->plan;
    printf("  scratch planned: %zu floats (the kind's at the batch: %zu)\n", p->work,
           shrinking_floats(NULL, NULL, BATCH));
    ck_assert_uint_eq(p->work, 100 * BIG - 1); /* a pass over 1 sample */
    char why[1024];
    for (int n = 1; n <= BATCH; n++) ck_assert_int_eq(step(net, n, why, sizeof why), CLNET_OK);
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

/* ---- GEMM choices that change after planning --------------------------------------------- */

/* A net whose scratch is its GEMMs', stepped once so that its replica's
 * record holds their shapes. */
static clnet_net *gemm_net(clnet_runtime *rt) {
    const char *lines[] = {"input channels=1 height=6 width=6", "conv2d name=c1 filters=2 size=3",
                           "flatten", "linear name=fc units=3", "softmax_cross_entropy"};
    clnet_net *net = NULL;
    char why[1024];
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        ck_assert_msg(clnet_net_add(net, lines[i]) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_net_init(net, 3), CLNET_OK);
    ck_assert_msg(clnet_net_bind(net, rt, BATCH) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(step(net, BATCH, why, sizeof why), CLNET_OK);
    return net;
}

/* Pins, for every shape the replica ran, the candidate that takes the most
 * scratch (as a checkpoint or a tuning run may). */
static void pin_greediest(clnet_replica *r) {
    clnet_device *d = r->d;
    int count = clnet_gemm_record_count(&r->gemm_record, d);
    clnet_gemm_shape *shapes = calloc((size_t)count + 1, sizeof *shapes);
    ck_assert_ptr_nonnull(shapes);
    for (int i = 0; i < count; i++) shapes[i] = r->gemm_record.picks[i].shape;
    char ids[64][CLNET_GEMM_ID_CAP];
    int n = clnet_gemm_candidates(d, ids, 64);
    for (int i = 0; i < count; i++) {
        char key[CLNET_TUNE_KEY_CAP];
        int bucket = 0, best = 0;
        size_t most = 0;
        clnet_gemm_key(&shapes[i], key, sizeof key, &bucket);
        for (int c = 0; c < n; c++) {
            ck_assert_int_eq(clnet_gemm_pin(d, key, bucket, ids[c]), CLNET_OK);
            size_t w = clnet_gemm_chosen_work_floats(d, &shapes[i]);
            if (w > most) most = w, best = c;
        }
        ck_assert_int_eq(clnet_gemm_pin(d, key, bucket, ids[best]), CLNET_OK);
    }
    free(shapes);
}

START_TEST(scratch_is_planned_for_the_gemms_chosen_and_grows_when_choices_change) {
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = gemm_net(rt);
    clnet_replica *r = net->trainer->replicas[0];
    size_t planned = r->plan.work, bytes = r->bytes;
    ck_assert_uint_eq(planned, clnet_plan_work(r->model, r->d, BATCH));
    pin_greediest(r);
    ck_assert_int_eq(clnet_trainer_fit_work(net->trainer), CLNET_OK); /* as after a load */
    printf("  scratch: %zu floats planned, %zu for the greediest candidates\n", planned,
           r->plan.work);
    ck_assert_uint_gt(r->plan.work, planned);
    ck_assert_uint_eq(r->plan.work, clnet_plan_work(r->model, r->d, BATCH));
    ck_assert_uint_eq(r->bytes - bytes, (r->plan.work - planned) * sizeof(float));
    clnet_counters before, after;
    clnet_debug_counters(&before);
    char why[1024];
    for (int n = BATCH; n >= 1; n -= 3) ck_assert_int_eq(step(net, n, why, sizeof why), CLNET_OK);
    clnet_debug_counters(&after);
    ck_assert_uint_eq(after.device_allocs, before.device_allocs);
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

START_TEST(a_pass_whose_gemms_need_more_scratch_than_planned_fails_before_it_runs) {
    clnet_runtime *rt = test_one_device(0);
    clnet_net *net = gemm_net(rt);
    clnet_replica *r = net->trainer->replicas[0];
    pin_greediest(r);
    r->work_version = r->d->choice.gemm_version; /* as if the scratch had been fitted */
    char why[1024];
    ck_assert_int_eq(step(net, BATCH, why, sizeof why), CLNET_ERR_GUARD);
    const char *words[] = {"floats of scratch", "were planned"};
    expect_words(why, words, 2);
    clnet_net_free(net);
    clnet_runtime_free(rt);
}
END_TEST

int main(void) {
    Suite *s = suite_create("guard");
    TCase *c = tcase_create("guard");
    tcase_set_timeout(c, 300);
    tcase_add_test(c, guards_are_on_here);
    tcase_add_test(c, a_layer_writing_past_its_output_in_the_middle_of_the_arena_fails_the_step);
    tcase_add_test(c, a_layer_writing_past_its_scratch_fails_the_step);
    tcase_add_test(c, a_short_scratch_is_caught_before_the_pass);
    tcase_add_test(c, the_plan_holds_the_largest_scratch_of_any_pass);
    tcase_add_test(c, scratch_is_planned_for_the_gemms_chosen_and_grows_when_choices_change);
    tcase_add_test(c, a_pass_whose_gemms_need_more_scratch_than_planned_fails_before_it_runs);
    suite_add_tcase(s, c);
    return test_run_suite(s);
}
