/* Device tests, run on every device of the CTest configuration: discovery and
 * selection, elementwise kernels against tests/ref, host staging, the kernel
 * binary cache on a real driver, and build errors. */
#include "elementwise.h"
#include "guard.h"
#include "harness.h"
#include "memory.h"
#include "worker.h"
#include "program.h"
#include "random.h"
#include "sources.h"
#include "ref/elementwise_ref.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- discovery and selection ---------------------------------------------- */

START_TEST(devices_report_sane_facts) {
    clnet_runtime *rt = test_runtime();
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device_info info;
        ck_assert_int_eq(clnet_runtime_device_info(rt, i, &info), CLNET_OK);
        ck_assert(strlen(info.name) > 0);
        ck_assert(strlen(info.platform_name) > 0);
        ck_assert(info.compute_units > 0);
        ck_assert(info.global_mem_bytes > 0);
        ck_assert(info.max_alloc_bytes > 0 && info.max_alloc_bytes <= info.global_mem_bytes);
        ck_assert(info.max_work_group_size > 0);
        ck_assert_msg(strstr(info.opencl_c_version, "OpenCL C"), "%s", info.opencl_c_version);
        ck_assert_int_ge(info.index, i);
        if (i > 0) { /* numbered in order, platforms sorted by name */
            clnet_device_info prev;
            clnet_runtime_device_info(rt, i - 1, &prev);
            ck_assert_int_gt(info.index, prev.index);
            ck_assert(strcmp(prev.platform_name, info.platform_name) <= 0);
        }
        printf("device %d: %s on %s\n", info.index, info.name, info.platform_name);
    }
    clnet_device_info info;
    ck_assert_int_eq(clnet_runtime_device_info(rt, -1, &info), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_runtime_device_info(rt, clnet_runtime_device_count(rt), &info),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_runtime_device_count(NULL), 0);
    clnet_runtime_free(NULL);
}
END_TEST

/* Expects `spec` to select `want` devices, or to fail with `fail`. */
static void expect_spec(const char *spec, int want, clnet_status fail, const char *message) {
    clnet_runtime *rt = NULL;
    clnet_status s = clnet_runtime_create(&rt, spec);
    if (fail != CLNET_OK) {
        ck_assert_msg(s == fail, "spec '%s' gave %s, expected %s", spec, clnet_status_string(s),
                      clnet_status_string(fail));
        ck_assert_ptr_null(rt);
        ck_assert_msg(strstr(clnet_last_error(), message), "spec '%s': message '%s' lacks '%s'",
                      spec, clnet_last_error(), message);
        return;
    }
    ck_assert_msg(s == CLNET_OK, "spec '%s': %s", spec, clnet_last_error());
    ck_assert_int_eq(clnet_runtime_device_count(rt), want);
    clnet_runtime_free(rt);
}

START_TEST(device_spec_selects_and_rejects) {
    clnet_runtime *rt = test_runtime();
    int n = clnet_runtime_device_count(rt), cpus = 0, gpus = 0, pocl = 0;
    for (int i = 0; i < n; i++) {
        clnet_device_info info;
        clnet_runtime_device_info(rt, i, &info);
        cpus += info.type == CLNET_DEVICE_CPU;
        gpus += info.type == CLNET_DEVICE_GPU;
        pocl += strstr(info.platform_name, "Portable Computing Language") != NULL;
    }
    expect_spec("all", n, CLNET_OK, "");
    expect_spec(" ALL ", n, CLNET_OK, "");
    expect_spec("0", 1, CLNET_OK, "");
    if (cpus) expect_spec("cpu", cpus, CLNET_OK, "");
    if (gpus)
        expect_spec("gpu", gpus, CLNET_OK, "");
    else
        expect_spec("gpu", 0, CLNET_ERR_NO_DEVICE, "matches no device");
    if (pocl) expect_spec("platform=portable", pocl, CLNET_OK, "");
    expect_spec("platform=no-such-vendor", 0, CLNET_ERR_NO_DEVICE, "matches no device");
    expect_spec("platform=", 0, CLNET_ERR_BAD_DEVICE_SPEC, "needs a name");
    expect_spec("99", 0, CLNET_ERR_NO_DEVICE, "there is no device 99");
    expect_spec("banana", 0, CLNET_ERR_BAD_DEVICE_SPEC, "unknown device selection 'banana'");
    expect_spec("0,0", 0, CLNET_ERR_BAD_DEVICE_SPEC, "twice");
    expect_spec("0,", 0, CLNET_ERR_BAD_DEVICE_SPEC, "comma list");
    expect_spec("0;1", 0, CLNET_ERR_BAD_DEVICE_SPEC, "comma list");
    if (n >= 2) {
        expect_spec("0,1", 2, CLNET_OK, "");
        clnet_runtime *one = NULL;
        ck_assert_int_eq(clnet_runtime_create(&one, "1"), CLNET_OK);
        clnet_device_info info;
        clnet_runtime_device_info(one, 0, &info);
        ck_assert_int_eq(info.index, 1);
        clnet_runtime_free(one);
    }
    /* $CLNET_DEVICES applies when no spec is given, and a spec wins over it. */
    setenv("CLNET_DEVICES", "0", 1);
    expect_spec(NULL, 1, CLNET_OK, "");
    expect_spec("all", n, CLNET_OK, "");
    setenv("CLNET_DEVICES", "nonsense", 1);
    expect_spec(NULL, 0, CLNET_ERR_BAD_DEVICE_SPEC, "nonsense");
    unsetenv("CLNET_DEVICES");
    ck_assert_int_eq(clnet_runtime_create(NULL, "all"), CLNET_ERR_INVALID_ARGUMENT);
}
END_TEST

/* $CLNET_CONV: one algorithm for every pass of a convolution, or three,
 * one a pass; anything else stops the runtime with the variable named. */
START_TEST(conv_algorithms_by_pass_from_the_environment) {
    static const struct {
        const char *text, *printed; /* printed NULL: refused */
        int pass[CLNET_CONV_PASSES];
    } cases[] = {
        {"implicit", "implicit", {CLNET_CONV_IMPLICIT, CLNET_CONV_IMPLICIT, CLNET_CONV_IMPLICIT}},
        {"IM2COL/implicit/direct",
         "im2col/implicit/direct",
         {CLNET_CONV_IM2COL, CLNET_CONV_IMPLICIT, CLNET_CONV_DIRECT}},
        {"auto/auto/im2col",
         "auto/auto/im2col",
         {CLNET_CONV_AUTO, CLNET_CONV_AUTO, CLNET_CONV_IM2COL}},
        {"direct/direct/direct",
         "direct",
         {CLNET_CONV_DIRECT, CLNET_CONV_DIRECT, CLNET_CONV_DIRECT}},
        {"implicit/im2col", NULL, {0}},
        {"implicit/im2col/direct/direct", NULL, {0}},
        {"implicit//im2col", NULL, {0}},
        {"fft", NULL, {0}},
        {"implicit/", NULL, {0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        clnet_conv_plan plan = clnet_conv_plan_all(-1);
        int ok = clnet_conv_plan_parse(cases[k].text, &plan);
        ck_assert_msg(ok == (cases[k].printed != NULL), "'%s'", cases[k].text);
        setenv("CLNET_CONV", cases[k].text, 1);
        clnet_runtime *rt = NULL;
        clnet_status s = clnet_runtime_create(&rt, "0");
        unsetenv("CLNET_CONV");
        if (!ok) {
            ck_assert_int_eq(plan.pass[0], -1); /* left as it was */
            ck_assert_int_eq(s, CLNET_ERR_INVALID_ARGUMENT);
            ck_assert_ptr_nonnull(strstr(clnet_last_error(), cases[k].text));
            continue;
        }
        char text[CLNET_CONV_PLAN_CAP];
        clnet_conv_plan_text(&plan, text, sizeof text);
        ck_assert_str_eq(text, cases[k].printed);
        ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
        const clnet_device *d = clnet_runtime_device(rt, 0);
        for (int pass = 0; pass < CLNET_CONV_PASSES; pass++) {
            ck_assert_int_eq(plan.pass[pass], cases[k].pass[pass]);
            ck_assert_int_eq(d->choice.conv_force.pass[pass], cases[k].pass[pass]);
        }
        clnet_runtime_free(rt);
    }
}
END_TEST

/* clnet_runtime_set_conv forces a plan as $CLNET_CONV does, on every
 * device; an unknown name changes nothing. A new algorithm's name must be
 * new and plain. */
START_TEST(conv_algorithms_forced_through_the_runtime) {
    clnet_runtime *rt = NULL;
    ck_assert_int_eq(clnet_runtime_create(&rt, "all"), CLNET_OK);
    const clnet_conv_plan want = {{CLNET_CONV_IM2COL, CLNET_CONV_LANES, CLNET_CONV_DIRECT}};
    ck_assert_int_eq(clnet_runtime_set_conv(rt, "im2col/LANES/direct"), CLNET_OK);
    ck_assert_int_eq(clnet_runtime_set_conv(rt, "im2col/fft/direct"), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(clnet_last_error(), "fft"));
    for (int i = 0; i < clnet_runtime_device_count(rt); i++)
        for (int pass = 0; pass < CLNET_CONV_PASSES; pass++)
            ck_assert_int_eq(clnet_runtime_device(rt, i)->choice.conv_force.pass[pass],
                             want.pass[pass]);
    ck_assert_int_eq(clnet_runtime_set_conv(rt, NULL), CLNET_OK);
    ck_assert(!clnet_conv_plan_named(&clnet_runtime_device(rt, 0)->choice.conv_force));
    ck_assert_int_eq(clnet_runtime_set_conv(NULL, "im2col"), CLNET_ERR_INVALID_ARGUMENT);
    clnet_runtime_free(rt);
    int a = -1, count = clnet_conv_algo_count();
    ck_assert_int_eq(clnet_conv_algo_add("Im2col", &a), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_conv_algo_add("two words", &a), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_conv_algo_add("", &a), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_conv_algo_add("a_name_far_too_long", &a), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(a, -1);
    ck_assert_int_eq(clnet_conv_algo_count(), count);
    ck_assert_str_eq(clnet_conv_algo_name(count), "?");
}
END_TEST

/* ---- elementwise kernels against tests/ref --------------------------------- */

static const size_t SIZES[] = {1, 3, 63, 64, 65, 1000, 4099, 100003};
#define NSIZES   (sizeof SIZES / sizeof SIZES[0])
#define SLOW_MAX 5000 /* largest size for a simulator */

static float max_abs_diff(const float *a, const float *b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(a[i] - b[i]));
    return m;
}

START_TEST(elementwise_kernels_match_reference_on_every_device) {
    clnet_runtime *rt = test_runtime();
    const size_t off = 5; /* data sits after an offset, as layer params do */
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        float worst = 0;
        for (size_t si = 0; si < NSIZES; si++) {
            size_t n = SIZES[si];
            if (test_device_is_slow(d) && n > SLOW_MAX) continue;
            size_t total = n + 2 * off;
            float *x = malloc(total * sizeof *x), *y = malloc(total * sizeof *y);
            float *want = malloc(total * sizeof *want), *got = malloc(total * sizeof *got);
            test_random_floats(x, total, 1 + n);
            test_random_floats(y, total, 2 + n);
            cl_mem bx = NULL, by = NULL;
            ck_assert_int_eq(clnet_buffer_create(d, total * sizeof(float), &bx), CLNET_OK);
            ck_assert_int_eq(clnet_buffer_create(d, total * sizeof(float), &by), CLNET_OK);
            ck_assert_int_eq(clnet_buffer_write(d, bx, 0, total, x), CLNET_OK);
            ck_assert_int_eq(clnet_buffer_write(d, by, 0, total, y), CLNET_OK);

            /* axpy, then scale, then fill on x; the guard elements stay. */
            ck_assert_msg(clnet_axpy(d, n, -1.75f, bx, off, by, off) == CLNET_OK, "%s",
                          clnet_last_error());
            memcpy(want, y, total * sizeof *want);
            ref_axpy(n, -1.75f, x + off, want + off);
            ck_assert_int_eq(clnet_buffer_read(d, by, 0, total, got), CLNET_OK);
            float diff = max_abs_diff(got, want, total);
            ck_assert_msg(diff <= 1e-6f, "axpy n=%zu on %s: max diff %g", n, d->info.name, diff);
            worst = fmaxf(worst, diff);

            ck_assert_int_eq(clnet_scale(d, by, off, n, 0.3f), CLNET_OK);
            ref_scale(want + off, n, 0.3f);
            ck_assert_int_eq(clnet_buffer_read(d, by, 0, total, got), CLNET_OK);
            diff = max_abs_diff(got, want, total);
            ck_assert_msg(diff <= 1e-6f, "scale n=%zu on %s: max diff %g", n, d->info.name, diff);
            worst = fmaxf(worst, diff);

            /* sum of y's slice, against a double-precision sum */
            float sum = 0;
            ck_assert_int_eq(clnet_sum(d, by, off, n, &sum), CLNET_OK);
            double ref = ref_sum(want + off, n);
            ck_assert_msg(fabs(sum - ref) <= 1e-5 * (double)n + 1e-6,
                          "sum n=%zu on %s: %.9g vs %.9g", n, d->info.name, sum, ref);
            float sum_again = 0;
            ck_assert_int_eq(clnet_sum(d, by, off, n, &sum_again), CLNET_OK);
            ck_assert_msg(sum == sum_again, "sum is not deterministic");

            ck_assert_int_eq(clnet_fill(d, bx, off, n, 2.5f), CLNET_OK);
            memcpy(want, x, total * sizeof *want);
            ref_fill(want + off, n, 2.5f);
            ck_assert_int_eq(clnet_buffer_read(d, bx, 0, total, got), CLNET_OK);
            ck_assert_msg(memcmp(got, want, total * sizeof *got) == 0, "fill n=%zu", n);

            clReleaseMemObject(bx);
            clReleaseMemObject(by);
            free(x), free(y), free(want), free(got);
        }
        printf("elementwise on device %d (%s): max abs diff %g\n", d->info.index, d->info.name,
               worst);
    }
}
END_TEST

/* Row sums (clnet_row_sums, a convolution's bias gradient) on generated
 * shapes, in one launch and in two: the device's compute units, which the
 * rule weighs against the rows, are set to make it take each way in turn
 * (the launches counted), and both give the same floats. With `exact` the
 * values are small integers, whose sums a float holds exactly in any order:
 * the result is the reference's to the bit; otherwise it is within rounding
 * of a sum in double. The seed is printed (CLNET_ROW_SUMS_SEED replays it). */
static unsigned long long row_sums_case(clnet_device *d, size_t M, size_t N, float beta, int exact,
                                        uint64_t seed) {
    const size_t off = 3, chunks = clnet_row_sums_floats(1, N);
    float *x = malloc((off + M * N) * sizeof *x), *out0 = malloc(M * sizeof *out0);
    float *got[2] = {malloc(M * sizeof(float)), malloc(M * sizeof(float))};
    test_random_floats(x, off + M * N, seed);
    test_random_floats(out0, M, seed + 1);
    for (size_t i = 0; exact && i < off + M * N; i++) x[i] = floorf(8 * x[i]);
    for (size_t m = 0; exact && m < M; m++) out0[m] = floorf(8 * out0[m]);
    cl_mem bx = NULL, bout = NULL, bpart = NULL;
    ck_assert_int_eq(clnet_buffer_create(d, (off + M * N) * sizeof(float), &bx), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_create(d, (off + M) * sizeof(float), &bout), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_create(d, (off + M * chunks) * sizeof(float), &bpart), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_write(d, bx, 0, off + M * N, x), CLNET_OK);
    unsigned units = d->info.compute_units;
    unsigned long long launches = 0;
    for (int way = 0; way < 2; way++) { /* one launch (rows fill the device), then two */
        d->info.compute_units = way == 0 ? 0 : (unsigned)M + 1;
        ck_assert_int_eq(clnet_buffer_write(d, bout, off, M, out0), CLNET_OK);
        clnet_counters before, after;
        clnet_debug_counters(&before);
        ck_assert_msg(clnet_row_sums(d, NULL, M, N, (clnet_place){bx, off},
                                     (clnet_place){bout, off}, beta,
                                     (clnet_place){bpart, off}) == CLNET_OK,
                      "%s", clnet_last_error());
        clnet_debug_counters(&after);
        ck_assert_int_eq(clnet_buffer_read(d, bout, off, M, got[way]), CLNET_OK);
        /* two launches unless a row is short enough for one anyway */
        launches = after.launches - before.launches;
        ck_assert_msg(launches == 1 || (way == 1 && launches == 2),
                      "row sums %zu x %zu took %llu launches", M, N, launches);
    }
    d->info.compute_units = units;
    for (size_t m = 0; m < M; m++) {
        double want = beta * (double)out0[m], bound = fabs(want);
        for (size_t j = 0; j < N; j++) {
            want += x[off + m * N + j];
            bound += fabs(x[off + m * N + j]);
        }
        ck_assert_msg(exact ? got[0][m] == want : fabs(got[0][m] - want) <= 2e-5 * bound,
                      "row sums %zu x %zu beta %g on %s: row %zu %.9g, want %.9g", M, N, beta,
                      d->info.name, m, got[0][m], want);
    }
    ck_assert_msg(memcmp(got[0], got[1], M * sizeof(float)) == 0,
                  "row sums %zu x %zu: one launch and two differ", M, N);
    clReleaseMemObject(bx);
    clReleaseMemObject(bout);
    clReleaseMemObject(bpart);
    free(x), free(out0), free(got[0]), free(got[1]);
    return launches; /* the second way's */
}

START_TEST(row_sums_in_one_launch_or_two_match_the_reference) {
    clnet_runtime *rt = test_runtime();
    uint64_t seed = test_seed_from_env("CLNET_ROW_SUMS_SEED", 59);
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        int slow = test_device_is_slow(d), cases = slow ? 3 : 10;
        clnet_xoshiro r = clnet_xoshiro_from(seed + (uint64_t)dev);
        printf("row sums: %d generated shapes on %s, seed %llu (CLNET_ROW_SUMS_SEED=%llu replays "
               "them)\n",
               cases, d->info.name, (unsigned long long)seed, (unsigned long long)seed);
        for (int k = 0; k <= cases; k++) {
            /* rows of up to 12 chunks of 4,096 floats, a chunk's end anywhere;
             * the last case's rows as long as that, which take two launches */
            size_t M = 1 + clnet_uniform_below(&r, slow ? 4 : 40);
            size_t N = 1 + clnet_uniform_below(&r, slow ? 9000 : 12 * 4096);
            float beta = clnet_uniform_below(&r, 2) ? 0.5f : 0.0f;
            if (k == cases) N = 12 * 4096 + 1;
            unsigned long long two = row_sums_case(d, M, N, beta, k % 2, seed * 100 + (uint64_t)k);
            if (k == cases) ck_assert_int_eq(two, 2);
        }
    }
}
END_TEST

START_TEST(elementwise_rejects_ranges_beyond_32_bits) {
    clnet_runtime *rt = test_runtime();
    clnet_device *d = clnet_runtime_device(rt, 0);
    ck_assert_int_eq(clnet_fill(d, NULL, 0, (size_t)1 << 33, 0.0f), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "beyond 2^32"), "%s", clnet_last_error());
}
END_TEST

/* A node's kernel slots (clnet_pass_kept) each hold one kernel: a guarded run
 * (every device test runs with CLNET_GUARD=1) refuses a slot asked for a
 * second kernel, which would otherwise run the first one's code with the
 * second one's arguments. */
START_TEST(a_kernel_slot_holds_one_kernel) {
    clnet_runtime *rt = test_runtime();
    ck_assert_msg(clnet_guard_on(clnet_runtime_device(rt, 0)),
                  "the device tests run with CLNET_GUARD=1");
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        cl_mem x = NULL;
        cl_kernel slot = NULL;
        ck_assert_int_eq(clnet_buffer_create(d, 64 * sizeof(float), &x), CLNET_OK);
        ck_assert_int_eq(clnet_run_kept(d, &slot, KERNEL("elementwise", "", "fill"), 1,
                                        (size_t[]){64}, NULL,
                                        ARGS(MEM(x), U32(0), U32(64), F32(1.0f))),
                         CLNET_OK);
        ck_assert_int_eq(clnet_run_kept(d, &slot, KERNEL("elementwise", "", "fill"), 1,
                                        (size_t[]){64}, NULL,
                                        ARGS(MEM(x), U32(0), U32(64), F32(2.0f))),
                         CLNET_OK);
        clnet_status s =
            clnet_run_kept(d, &slot, KERNEL("elementwise", "", "scale"), 1, (size_t[]){64}, NULL,
                           ARGS(MEM(x), U32(0), U32(64), F32(2.0f)));
        ck_assert_int_eq(s, CLNET_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(clnet_last_error(), "holds 'fill', asked for 'scale'"), "%s",
                      clnet_last_error());
        clReleaseMemObject(x);
    }
}
END_TEST

/* ---- host access: mapped in place, or read into a mapped staging buffer ---- */

START_TEST(host_views_see_device_data_both_ways) {
    clnet_runtime *rt = test_runtime();
    enum { N = 3000, OFF = 17 };
    float data[N];
    test_random_floats(data, N, 7);
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        int native = d->zero_copy;
        for (int zero_copy = 0; zero_copy <= 1; zero_copy++) {
            d->zero_copy = zero_copy; /* buffers made now follow this mode */
            cl_mem buf = NULL;
            clnet_staging staging;
            ck_assert_int_eq(clnet_buffer_create(d, N * sizeof(float), &buf), CLNET_OK);
            ck_assert_int_eq(clnet_staging_create(d, N * sizeof(float), &staging), CLNET_OK);
            ck_assert_int_eq(clnet_buffer_write(d, buf, 0, N, data), CLNET_OK);
            clnet_host_view view;
            ck_assert_msg(clnet_host_view_begin(d, buf, OFF, N - OFF, &staging, &view) == CLNET_OK,
                          "%s", clnet_last_error());
            ck_assert_mem_eq(view.data, data + OFF, (N - OFF) * sizeof(float));
            ck_assert(zero_copy ? view.mapped != NULL : view.data == staging.data);
            ck_assert_int_eq(clnet_host_view_end(d, &view), CLNET_OK);
            /* the device can keep working on the buffer after the view */
            ck_assert_int_eq(clnet_scale(d, buf, 0, N, 2.0f), CLNET_OK);
            float back[N];
            ck_assert_int_eq(clnet_buffer_read(d, buf, 0, N, back), CLNET_OK);
            for (int i = 0; i < N; i++) ck_assert(back[i] == 2.0f * data[i]);
            /* a staging buffer too small for the request is refused */
            if (!zero_copy) {
                ck_assert_int_eq(clnet_host_view_begin(d, buf, 0, N + 1, &staging, &view),
                                 CLNET_ERR_INVALID_ARGUMENT);
            }
            clnet_staging_free(d, &staging);
            clReleaseMemObject(buf);
        }
        d->zero_copy = native;
    }
}
END_TEST

/* ---- all devices at once, each from its own thread ------------------------- */

static clnet_status check_device(int i, void *ctx) {
    return clnet_runtime_device_check(ctx, i);
}

START_TEST(devices_run_concurrently_from_their_own_threads) {
    clnet_runtime *rt = test_runtime();
    clnet_workers *w = NULL;
    ck_assert_int_eq(clnet_workers_create(&w, clnet_runtime_device_count(rt)), CLNET_OK);
    clnet_status s = clnet_workers_run(w, check_device, rt, NULL);
    clnet_workers_free(w);
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
}
END_TEST

/* ---- the kernel binary cache on the real driver ---------------------------- */

static const char *TEST_SOURCE =
    "__kernel void add_one(__global float *x) { x[get_global_id(0)] += 1.0f; }\n";

static char cache_dir[256];

/* Points the cache at a fresh folder; runtimes made afterwards use it. */
static void fresh_cache_dir(void) {
    snprintf(cache_dir, sizeof cache_dir, "/tmp/clnet-test-cache-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(cache_dir));
    setenv("CLNET_CACHE_DIR", cache_dir, 1);
    unsetenv("CLNET_CACHE");
}

/* How many cache files the folder holds; the last one's path in path. */
static int cache_files(char *path, size_t cap) {
    DIR *dir = opendir(cache_dir);
    ck_assert_ptr_nonnull(dir);
    int found = 0;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (strstr(e->d_name, ".clbin")) {
            snprintf(path, cap, "%s/%s", cache_dir, e->d_name);
            found++;
        }
    closedir(dir);
    return found;
}

/* The single cache file in the folder (fails unless exactly one). */
static void only_cache_file(char *path, size_t cap) {
    ck_assert_int_eq(cache_files(path, cap), 1);
}

/* Builds TEST_SOURCE on device dev of a new runtime, runs it, and returns
 * whether the binary came from the cache. */
static int build_and_run(int dev) {
    clnet_runtime *rt = NULL;
    ck_assert_int_eq(clnet_runtime_create(&rt, NULL), CLNET_OK);
    clnet_device *d = clnet_runtime_device(rt, dev);
    cl_program p = NULL;
    ck_assert_msg(clnet_program_build(d, "test", TEST_SOURCE, "-DUNUSED=1", &p) == CLNET_OK, "%s",
                  clnet_last_error());
    cl_int err = 0;
    cl_kernel k = clCreateKernel(p, "add_one", &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_mem buf = NULL;
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8];
    ck_assert_int_eq(clnet_buffer_create(d, sizeof v, &buf), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_write(d, buf, 0, 8, v), CLNET_OK);
    ck_assert_int_eq(clSetKernelArg(k, 0, sizeof buf, &buf), CL_SUCCESS);
    ck_assert_int_eq(clnet_launch_1d(d, k, 8, 0), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_read(d, buf, 0, 8, back), CLNET_OK);
    for (int i = 0; i < 8; i++) ck_assert(back[i] == v[i] + 1.0f);
    int hit = d->cache_hits == 1;
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clnet_runtime_free(rt);
    return hit;
}

static void damage(const char *path, int how) {
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    if (how == 0) { /* truncated: half the file */
        ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
        return;
    }
    FILE *f = fopen(path, "r+b"); /* one byte flipped in the binary */
    long at = st.st_size - st.st_size / 3;
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x01, f);
    fclose(f);
}

START_TEST(kernel_cache_cold_warm_and_damaged_entries) {
    clnet_runtime *rt = test_runtime();
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        fresh_cache_dir();
        char path[512];
        if (!clnet_program_stores(clnet_runtime_device(rt, dev))) {
            /* a driver with a cache of its own (PoCL): clnet reads no binary
             * back and keeps none, warm or cold, unless CLNET_CACHE=all
             * (clnet warm), with which the rest runs */
            ck_assert_msg(!build_and_run(dev) && !build_and_run(dev), "a cache hit");
            ck_assert_int_eq(cache_files(path, sizeof path), 0);
            setenv("CLNET_CACHE", "all", 1);
        }
        ck_assert_msg(!build_and_run(dev), "cold build claims a cache hit");
        only_cache_file(path, sizeof path);
        struct stat st;
        ck_assert_msg(build_and_run(dev), "warm build did not use the cache");
        for (int how = 0; how < 2; how++) {
            damage(path, how);
            test_capture_warnings(1);
            ck_assert_msg(!build_and_run(dev), "damaged entry (%d) was used", how);
            ck_assert_msg(strstr(test_warnings(), "discarding kernel cache entry"), "%s",
                          test_warnings());
            test_capture_warnings(0);
            /* rebuilt and stored again (the size may differ: PoCL's binary
             * grows with the work-group variants it has compiled) */
            ck_assert_int_eq(stat(path, &st), 0);
            ck_assert_msg(build_and_run(dev), "the rebuilt entry is not used");
        }
        /* CLNET_CACHE=off: nothing read or written */
        setenv("CLNET_CACHE", "off", 1);
        ck_assert(!build_and_run(dev));
        unsetenv("CLNET_CACHE");
    }
    unsetenv("CLNET_CACHE_DIR");
}
END_TEST

START_TEST(build_errors_carry_the_build_log) {
    clnet_runtime *rt = test_runtime();
    const char *bad = "__kernel void broken(__global float *x) {\n"
                      "    x[0] = undeclared_thing_42;\n"
                      "}\n";
    for (int dev = 0; dev < clnet_runtime_device_count(rt); dev++) {
        clnet_device *d = clnet_runtime_device(rt, dev);
        cl_program p = NULL;
        clnet_status s = clnet_program_build(d, "broken-test", bad, "", &p);
        ck_assert_int_eq(s, CLNET_ERR_BUILD);
        ck_assert_ptr_null(p);
        const char *m = clnet_last_error();
        ck_assert_msg(strstr(m, "building kernels 'broken-test'"), "%s", m);
        ck_assert_msg(strstr(m, "build log"), "%s", m);
        ck_assert_msg(strstr(m, "undeclared_thing_42"), "the log does not show the error: %s", m);
        ck_assert_msg(strstr(m, d->info.name), "the message does not name the device: %s", m);
    }
}
END_TEST

static void write_kernel_file(const char *dir, const char *family, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.cl", dir, family);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Whether a build error points at line 2 of file: "file:2" where the log
 * follows #line (PoCL), else line 2 of the file's range in the program's
 * line map that clnet appends (NVIDIA's and Oclgrind's logs count lines in
 * the whole text: "<kernel>:783:10"). */
static int names_line_2(const char *message, const char *file) {
    char want[96];
    snprintf(want, sizeof want, "%s:2", file);
    if (strstr(message, want)) return 1;
    snprintf(want, sizeof want, " %s", file);
    const char *at = strstr(message, "(lines of the program: ");
    const char *f = at ? strstr(at, want) : NULL;
    if (!f) return 0;
    while (f > at && f[-1] != ' ') f--; /* back to "<from>-<to>" */
    snprintf(want, sizeof want, ":%d:", atoi(f) + 1);
    return strstr(message, want) != NULL && strstr(message, want) < at;
}

/* CLNET_KERNEL_DIR replaces the embedded sources; a broken family there gives
 * a build error that names the file (through the #line the loader adds), and
 * a missing one an I/O error that names it. */
START_TEST(kernel_dir_override_and_its_errors) {
    char dir[] = "/tmp/clnet-test-kdir-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    write_kernel_file(dir, "elementwise",
                      "__kernel void fill(__global float *x) {\n  x[0] = oops;\n}\n");
    /* elementwise.cl shares a program with other families (sources.c):
     * first without them, then with the ones built in */
    setenv("CLNET_KERNEL_DIR", dir, 1);
    setenv("CLNET_CACHE", "off", 1);
    clnet_runtime *rt = NULL;
    ck_assert_int_eq(clnet_runtime_create(&rt, "0"), CLNET_OK);
    clnet_status s = clnet_runtime_device_check(rt, 0);
    clnet_runtime_free(rt);
    ck_assert_int_eq(s, CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), dir) && strstr(clnet_last_error(), ".cl"), "%s",
                  clnet_last_error());
    for (const clnet_embedded_source *e = clnet_embedded_sources; e->family; e++)
        if (strcmp(e->family, "elementwise") != 0) write_kernel_file(dir, e->family, e->text);
    ck_assert_int_eq(clnet_runtime_create(&rt, "0"), CLNET_OK);
    s = clnet_runtime_device_check(rt, 0);
    clnet_runtime_free(rt);
    unsetenv("CLNET_KERNEL_DIR");
    unsetenv("CLNET_CACHE");
    ck_assert_int_eq(s, CLNET_ERR_BUILD);
    ck_assert_msg(strstr(clnet_last_error(), "oops"), "%s", clnet_last_error());
    ck_assert_msg(names_line_2(clnet_last_error(), "elementwise.cl"), "%s", clnet_last_error());
    /* a missing folder is an I/O error that names the path */
    setenv("CLNET_KERNEL_DIR", "/nonexistent/kernels", 1);
    ck_assert_int_eq(clnet_runtime_create(&rt, "0"), CLNET_OK);
    s = clnet_runtime_device_check(rt, 0);
    clnet_runtime_free(rt);
    unsetenv("CLNET_KERNEL_DIR");
    ck_assert_int_eq(s, CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), "/nonexistent/kernels/common.cl"), "%s",
                  clnet_last_error());
}
END_TEST

int main(void) {
    Suite *s = suite_create("devices");
    TCase *t = tcase_create("devices");
    tcase_set_timeout(t, 0); /* CTest enforces the time limit */
    tcase_add_test(t, devices_report_sane_facts);
    tcase_add_test(t, device_spec_selects_and_rejects);
    tcase_add_test(t, conv_algorithms_by_pass_from_the_environment);
    tcase_add_test(t, conv_algorithms_forced_through_the_runtime);
    tcase_add_test(t, elementwise_kernels_match_reference_on_every_device);
    tcase_add_test(t, row_sums_in_one_launch_or_two_match_the_reference);
    tcase_add_test(t, elementwise_rejects_ranges_beyond_32_bits);
    tcase_add_test(t, a_kernel_slot_holds_one_kernel);
    tcase_add_test(t, host_views_see_device_data_both_ways);
    tcase_add_test(t, devices_run_concurrently_from_their_own_threads);
    tcase_add_test(t, kernel_cache_cold_warm_and_damaged_entries);
    tcase_add_test(t, build_errors_carry_the_build_log);
    tcase_add_test(t, kernel_dir_override_and_its_errors);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
