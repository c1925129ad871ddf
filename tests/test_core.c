/* Tests that need no OpenCL device: version, statuses, error messages, the
 * worker-thread error path, the kernel cache file format, and the layer
 * kinds' option tables. */
#include "env.h"
#include "error.h"
#include "harness.h"
#include "kcache.h"
#include "collective.h"
#include "layer.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(version_matches_the_macros) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", CLNET_VERSION_MAJOR, CLNET_VERSION_MINOR,
             CLNET_VERSION_PATCH);
    ck_assert_str_eq(clnet_version(), want);
    ck_assert_str_eq(clnet_version(), "0.3.0");
}
END_TEST

/* The names from when SGD was the only optimizer still work, for one version. */
START_TEST(deprecated_optimizer_names_do_what_the_new_ones_do) {
    clnet_optimizer_config now, old;
    memset(&now, 0xab, sizeof now);
    memset(&old, 0xcd, sizeof old);
    clnet_optimizer_defaults(&now);
    clnet_sgd_defaults(&old);
    ck_assert_mem_eq(&now, &old, sizeof now);
    ck_assert_float_eq(now.lr, 0.1f);
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    now.lr = 0.25f;
    ck_assert_int_eq(clnet_net_set_sgd(net, &now), CLNET_OK);
    ck_assert_float_eq(clnet_net_learning_rate(net), 0.25f);
    now.lr = -1;
    ck_assert_int_ne(clnet_net_set_sgd(net, &now), CLNET_OK);
    ck_assert_float_eq(clnet_net_learning_rate(net), 0.25f);
    ck_assert_int_eq(clnet_net_set_sgd(NULL, &now), CLNET_ERR_INVALID_ARGUMENT);
    clnet_net_free(net);
}
END_TEST

START_TEST(the_public_clock_never_goes_back_and_advances) {
    double t0 = clnet_seconds(), last = t0;
    for (int i = 0; i < 100000; i++) {
        double t = clnet_seconds();
        ck_assert(t >= last);
        last = t;
    }
    struct timespec nap = {0, 2000000}; /* 2 ms */
    nanosleep(&nap, NULL);
    ck_assert_msg(clnet_seconds() - t0 >= 0.002, "the clock did not advance over a 2 ms sleep");
}
END_TEST

START_TEST(every_status_has_its_own_string) {
    const clnet_status all[] = {
#define ITEM(name, value, text) name,
        CLNET_STATUS_LIST(ITEM)
#undef ITEM
    };
    size_t n = sizeof all / sizeof all[0];
    ck_assert_str_eq(clnet_status_string(CLNET_OK), "success");
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq((int)all[i], (int)i);
        ck_assert(strlen(clnet_status_string(all[i])) > 0);
        for (size_t j = 0; j < i; j++)
            ck_assert_str_ne(clnet_status_string(all[i]), clnet_status_string(all[j]));
    }
    ck_assert_str_eq(clnet_status_string((clnet_status)999), "unknown status");
}
END_TEST

START_TEST(opencl_failures_name_the_call_code_and_place) {
    /* the place only under CLNET_DEBUG (for bug reports), never in a user's message */
    unsetenv("CLNET_DEBUG");
    clnet_fail_cl_at(CL_INVALID_WORK_GROUP_SIZE, "clEnqueueNDRangeKernel", "src/some_file.c", 42);
    ck_assert_str_eq(clnet_last_error(),
                     "clEnqueueNDRangeKernel failed: CL_INVALID_WORK_GROUP_SIZE (-54)");
    setenv("CLNET_DEBUG", "1", 1);
    clnet_status s = clnet_fail_cl_at(CL_INVALID_WORK_GROUP_SIZE, "clEnqueueNDRangeKernel",
                                      "src/some_file.c", 42);
    unsetenv("CLNET_DEBUG");
    ck_assert_int_eq(s, CLNET_ERR_OPENCL);
    const char *m = clnet_last_error();
    ck_assert_msg(strstr(m, "clEnqueueNDRangeKernel failed: CL_INVALID_WORK_GROUP_SIZE (-54)"),
                  "%s", m);
    ck_assert_msg(strstr(m, " [some_file.c:42]"), "%s", m);
    ck_assert_int_eq(clnet_fail_cl_at(CL_MEM_OBJECT_ALLOCATION_FAILURE, "x", "f.c", 1),
                     CLNET_ERR_DEVICE_MEMORY);
    ck_assert_str_eq(clnet_cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
    ck_assert_str_eq(clnet_cl_error_name(12345), "CL_UNKNOWN_ERROR");
}
END_TEST

START_TEST(error_context_and_long_messages) {
    clnet_fail(CLNET_ERR_IO, "cannot open %s", "model.cfg");
    clnet_error_context(CLNET_ERR_IO, "loading net");
    ck_assert_msg(strncmp(clnet_last_error(), "loading net: cannot open model.cfg", 34) == 0, "%s",
                  clnet_last_error());
    /* A huge build log keeps its head and its tail. */
    size_t n = 200000;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    memcpy(big, "HEAD", 4);
    memcpy(big + n - 4, "TAIL", 4);
    big[n] = '\0';
    clnet_fail(CLNET_ERR_BUILD, "build failed:");
    clnet_error_append(big);
    free(big);
    const char *m = clnet_last_error();
    ck_assert(strncmp(m, "build failed:", 13) == 0);
    ck_assert(strstr(m, "[... cut ...]"));
    ck_assert(strcmp(m + strlen(m) - 4, "TAIL") == 0);
}
END_TEST

/* Fails on odd indices, with a message naming the index. */
static clnet_status fail_odd(int i, void *ctx) {
    int *ran = ctx;
    ran[i] = 1;
    if (i % 2) return clnet_fail(CLNET_ERR_WRONG_RESULT, "task %d failed on purpose", i);
    return CLNET_OK;
}

START_TEST(worker_thread_failures_reach_the_caller) {
    int ran[4] = {0};
    clnet_workers *w = NULL;
    ck_assert_int_eq(clnet_workers_create(&w, 4), CLNET_OK);
    clnet_fail(CLNET_ERR_IO, "an older message");
    clnet_status s = clnet_workers_run(w, fail_odd, ran, NULL);
    ck_assert_int_eq(s, CLNET_ERR_WRONG_RESULT);
    ck_assert_msg(strstr(clnet_last_error(), "task 1 failed on purpose"), "%s", clnet_last_error());
    for (int i = 0; i < 4; i++) ck_assert_int_eq(ran[i], 1);
    /* only the chosen workers run; the same threads serve job after job */
    clnet_counters before, after;
    clnet_debug_counters(&before);
    for (int round = 0; round < 50; round++) {
        int some[4] = {0}, active[4] = {1, 0, 1, 0};
        ck_assert_int_eq(clnet_workers_run(w, fail_odd, some, active), CLNET_OK);
        ck_assert(some[0] && !some[1] && some[2] && !some[3]);
    }
    clnet_debug_counters(&after);
    ck_assert_uint_eq(after.threads, before.threads);
    ck_assert_uint_eq(after.host_allocs, before.host_allocs);
    clnet_workers_free(w);
}
END_TEST

/* ---- collectives across workers ---------------------------------------------- */

#define RANKS 3
typedef struct {
    clnet_collective handles[RANKS];
    double sums[RANKS][4];
    int gathered[RANKS][RANKS];
    int fail_rank; /* this rank fails before its call, aborting the group; -1: none */
    clnet_local_group *group;
} coll_case;

static clnet_status coll_job(int i, void *arg) {
    coll_case *c = arg;
    clnet_collective *me = &c->handles[i];
    if (i == c->fail_rank) {
        struct timespec pause = {0, 20 * 1000 * 1000}; /* let the others start waiting */
        nanosleep(&pause, NULL);
        clnet_local_group_abort(c->group);
        return clnet_fail(CLNET_ERR_WRONG_RESULT, "rank %d gives up", i);
    }
    for (int round = 0; round < 20; round++) { /* many rounds: no result read too early */
        /* values whose float sum depends on the order: 1e16 + r - 1e16 */
        double v[4] = {i == 0 ? 1e16 : i == 1 ? 1.0 : -1e16, (double)i, round, 0.5};
        clnet_status s = me->sum(me, v, 4);
        if (s != CLNET_OK) return s;
        memcpy(c->sums[i], v, sizeof v);
        int mine = 10 * i + round, all[RANKS];
        s = me->gather(me, &mine, sizeof mine, all);
        if (s != CLNET_OK) return s;
        for (int r = 0; r < RANKS; r++)
            if (all[r] != 10 * r + round) return clnet_fail(CLNET_ERR_WRONG_RESULT, "gather");
        memcpy(c->gathered[i], all, sizeof all);
    }
    return CLNET_OK;
}

START_TEST(collectives_combine_in_rank_order_and_abort_cleanly) {
    clnet_workers *w = NULL;
    clnet_local_group *g = NULL;
    static coll_case c;
    ck_assert_int_eq(clnet_workers_create(&w, RANKS), CLNET_OK);
    ck_assert_int_eq(clnet_local_group_create(&g, RANKS, 256), CLNET_OK);
    c.group = g;
    clnet_local_group_reset(g, RANKS, c.handles, NULL);
    c.fail_rank = -1;
    ck_assert_msg(clnet_workers_run(w, coll_job, &c, NULL) == CLNET_OK, "%s", clnet_last_error());
    for (int r = 0; r < RANKS; r++) {
        /* rank order: (1e16 + 1) - 1e16 = 0 in double (1e16 + 1 rounds to 1e16) */
        ck_assert_double_eq(c.sums[r][0], (1e16 + 1.0) + -1e16);
        ck_assert_double_eq(c.sums[r][1], 0 + 1 + 2);
        ck_assert_double_eq(c.sums[r][2], 3 * 19);
        ck_assert_double_eq(c.sums[r][3], 1.5);
    }
    /* a rank that fails wakes the others with an error instead of a hang:
     * the job of a failing replica aborts the group (step.c does this) */
    clnet_local_group_reset(g, RANKS, c.handles, NULL);
    c.fail_rank = 1;
    clnet_status s = clnet_workers_run(w, coll_job, &c, NULL);
    ck_assert_int_ne(s, CLNET_OK);
    /* the lowest failing index explains it: rank 0, woken by the abort */
    ck_assert_msg(strstr(clnet_last_error(), "abandoned"), "%s", clnet_last_error());
    /* room is checked */
    clnet_local_group_reset(g, 1, c.handles, NULL);
    double big[64] = {0};
    ck_assert_int_eq(c.handles[0].sum(&c.handles[0], big, 64), CLNET_ERR_INVALID_ARGUMENT);
    clnet_local_group_free(g);
    clnet_workers_free(w);
}
END_TEST

/* ---- the environment, read in one place (env.h) ---------------------------- */

/* A snapshot parses the flags as clnet.h's table words them, takes the
 * launcher's first complete pair, and keeps its own copies: what the
 * environment says later does not change it. */
START_TEST(the_environment_is_read_into_a_snapshot_that_keeps_its_copies) {
    static const char *const vars[] = {"CLNET_CONV",
                                       "CLNET_OVERLAP",
                                       "CLNET_TUNE",
                                       "CLNET_MICRO_BATCH",
                                       "CLNET_PROFILE",
                                       "CLNET_MPI_OVERLAP",
                                       "CLNET_DATA_DIR",
                                       "OMPI_COMM_WORLD_SIZE",
                                       "OMPI_COMM_WORLD_RANK",
                                       "PMI_SIZE",
                                       "PMI_RANK",
                                       "OMPI_COMM_WORLD_LOCAL_SIZE",
                                       "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "MPI_LOCALNRANKS",
                                       "MPI_LOCALRANKID",
                                       "CLNET_FUSE"};
    enum { N = sizeof vars / sizeof *vars };
    char *saved[N];
    for (int i = 0; i < N; i++) {
        const char *v = getenv(vars[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(vars[i]);
    }
    clnet_env e;
    setenv("CLNET_CONV", "implicit/im2col", 1);
    setenv("CLNET_OVERLAP", "off", 1);
    setenv("CLNET_TUNE", "OFF", 1);
    setenv("CLNET_MICRO_BATCH", "5", 1);
    setenv("CLNET_PROFILE", "0", 1);
    setenv("CLNET_MPI_OVERLAP", "0", 1);
    setenv("CLNET_DATA_DIR", "", 1);
    setenv("CLNET_FUSE", "off", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "0", 1);       /* not a job: the next pair's */
    setenv("PMI_SIZE", "4", 1);                   /* no PMI_RANK: rank 0 */
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1); /* no rank: not this pair */
    setenv("MPI_LOCALNRANKS", "2", 1);
    setenv("MPI_LOCALRANKID", "1", 1);
    ck_assert_int_eq(clnet_env_read(&e), CLNET_OK);
    setenv("CLNET_CONV", "direct", 1);
    unsetenv("CLNET_OVERLAP");
    ck_assert_str_eq(e.conv, "implicit/im2col");
    ck_assert_str_eq(e.data_dir, "");
    ck_assert_int_eq(e.overlap, 0);
    ck_assert_int_eq(e.tune, 0);
    ck_assert_int_eq(e.micro_batch, 5);
    ck_assert_int_eq(e.profile, 0);
    ck_assert_int_eq(e.mpi_overlap, 0);
    ck_assert_int_eq(e.fuse, 0);
    ck_assert_int_eq(e.job_size, 4);
    ck_assert_int_eq(e.job_rank, 0);
    ck_assert_int_eq(e.local_size, 2);
    ck_assert_int_eq(e.local_rank, 1);
    clnet_env_free(&e);
    ck_assert_ptr_null(e.conv); /* freed and emptied */
    for (int i = 0; i < N; i++) unsetenv(vars[i]);
    ck_assert_int_eq(clnet_env_read(&e), CLNET_OK);
    ck_assert_ptr_null(e.conv);
    ck_assert(e.overlap && e.tune && e.mpi_overlap && e.fuse);
    ck_assert_int_eq(e.micro_batch, 0);
    ck_assert(e.job_size == 1 && e.job_rank == 0 && e.local_size == 1 && e.local_rank == 0);
    clnet_env_free(&e);
    for (int i = 0; i < N; i++) {
        if (saved[i]) setenv(vars[i], saved[i], 1);
        free(saved[i]);
    }
}
END_TEST

/* ---- kernel cache file format (no driver involved) ------------------------ */

static clnet_device fake_device(void) {
    clnet_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.info.name, sizeof d.info.name, "Fake Device");
    snprintf(d.info.driver_version, sizeof d.info.driver_version, "1.0");
    snprintf(d.info.platform_name, sizeof d.info.platform_name, "Fake Platform");
    return d;
}

static void make_cache_dir(clnet_cache_config *cfg) {
    char tmpl[] = "/tmp/clnet-test-kcache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    cfg->enabled = 1;
    snprintf(cfg->dir, sizeof cfg->dir, "%s/nested/dir", tmpl);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

START_TEST(cache_key_changes_with_source_options_and_device) {
    clnet_device d = fake_device(), e = fake_device();
    snprintf(e.info.driver_version, sizeof e.info.driver_version, "1.1");
    char *k1 = clnet_kcache_key(&d, "kernel void a(){}", "-DX=1");
    char *k2 = clnet_kcache_key(&d, "kernel void a(){} ", "-DX=1");
    char *k3 = clnet_kcache_key(&d, "kernel void a(){}", "-DX=2");
    char *k4 = clnet_kcache_key(&e, "kernel void a(){}", "-DX=1");
    char *k5 = clnet_kcache_key(&d, "kernel void a(){}", "-DX=1");
    ck_assert_str_ne(k1, k2);
    ck_assert_str_ne(k1, k3);
    ck_assert_str_ne(k1, k4);
    ck_assert_str_eq(k1, k5);
    free(k1), free(k2), free(k3), free(k4), free(k5);
}
END_TEST

START_TEST(cache_round_trip_and_every_damage_is_caught) {
    clnet_cache_config cfg;
    make_cache_dir(&cfg);
    clnet_device d = fake_device();
    char *key = clnet_kcache_key(&d, "source", "-cl-std=CL1.2");
    unsigned char payload[1000];
    for (int i = 0; i < 1000; i++) payload[i] = (unsigned char)(i * 7);
    unsigned char *bin = NULL;
    size_t len = 0;

    ck_assert_int_eq(clnet_kcache_load(&cfg, key, &bin, &len), 0); /* empty: a miss */
    ck_assert_int_eq(clnet_kcache_store(&cfg, key, payload, sizeof payload), 1);
    ck_assert_int_eq(clnet_kcache_load(&cfg, key, &bin, &len), 1);
    ck_assert_uint_eq(len, sizeof payload);
    ck_assert_mem_eq(bin, payload, len);
    free(bin);

    char path[4200];
    clnet_kcache_path(&cfg, key, path, sizeof path);
    long size = file_size(path);
    /* Damage: cut at several points, then flip a byte in each region
     * (magic, lengths, checksums, key, payload). Each must be a miss that
     * deletes the file and warns. */
    long cuts[] = {0, 7, 31, 40, size - 1};
    long flips[] = {0, 9, 13, 17, 25, 29, 40, size / 2, size - 1};
    for (int round = 0; round < 14; round++) {
        ck_assert_int_eq(clnet_kcache_store(&cfg, key, payload, sizeof payload), 1);
        if (round < 5) {
            ck_assert_int_eq(truncate(path, cuts[round]), 0);
        } else {
            FILE *f = fopen(path, "r+b");
            long at = flips[round - 5];
            fseek(f, at, SEEK_SET);
            int c = fgetc(f);
            fseek(f, at, SEEK_SET);
            fputc(c ^ 0x10, f);
            fclose(f);
        }
        test_capture_warnings(1);
        bin = NULL;
        ck_assert_msg(clnet_kcache_load(&cfg, key, &bin, &len) == 0, "round %d accepted", round);
        ck_assert_msg(strstr(test_warnings(), "discarding kernel cache entry"), "round %d: '%s'",
                      round, test_warnings());
        test_capture_warnings(0);
        ck_assert_msg(file_size(path) == -1, "round %d: damaged file kept", round);
    }
    /* A sound file of another key (a hash collision) is a quiet miss. */
    char *other = clnet_kcache_key(&d, "other source", "-cl-std=CL1.2");
    ck_assert_int_eq(clnet_kcache_store(&cfg, other, payload, 10), 1);
    char other_path[4200];
    clnet_kcache_path(&cfg, other, other_path, sizeof other_path);
    ck_assert_int_eq(rename(other_path, path), 0);
    test_capture_warnings(1);
    ck_assert_int_eq(clnet_kcache_load(&cfg, key, &bin, &len), 0);
    ck_assert_str_eq(test_warnings(), "");
    test_capture_warnings(0);
    free(other);
    free(key);
}
END_TEST

START_TEST(cache_disabled_neither_reads_nor_writes) {
    clnet_cache_config cfg;
    make_cache_dir(&cfg);
    cfg.enabled = 0;
    clnet_device d = fake_device();
    char *key = clnet_kcache_key(&d, "s", "");
    unsigned char b[4] = {1, 2, 3, 4};
    ck_assert_int_eq(clnet_kcache_store(&cfg, key, b, 4), 0);
    char path[4200];
    clnet_kcache_path(&cfg, key, path, sizeof path);
    ck_assert_int_eq(file_size(path), -1);
    free(key);
}
END_TEST

/* Every kind's table is complete (help, what each option takes, a default
 * that reads), names no option twice, and the public reference lists every
 * built-in kind with name= and input= first. */
START_TEST(layer_kinds_declare_their_options) {
    int builtin = 0;
    while (clnet_kind_builtin(builtin)) builtin++;
    ck_assert_int_eq(clnet_layer_kind_count(), builtin);
    ck_assert_ptr_null(clnet_layer_kind_name(builtin));
    for (int k = 0; k < builtin; k++) {
        const clnet_kind *kind = clnet_kind_builtin(k);
        ck_assert_str_eq(clnet_layer_kind_name(k), kind->name);
        unsigned char config[CLNET_CONFIG_CAP] = {0};
        if (kind->defaults) kind->defaults(config);
        ck_assert_msg(clnet_option_defaults(kind->options, config) == CLNET_OK, "%s: %s",
                      kind->name, clnet_last_error());
        for (const clnet_option *o = kind->options; o && o->name; o++) {
            ck_assert_msg(o->help && *o->help, "%s %s: no help", kind->name, o->name);
            ck_assert_msg(o->type != CLNET_OPT_CUSTOM || (o->parse && o->expects), "%s %s",
                          kind->name, o->name);
            ck_assert_msg(o->type != CLNET_OPT_DIMS || (o->axes >= 1 && o->axes <= 3), "%s %s",
                          kind->name, o->name);
            ck_assert_msg(clnet_option_find(kind->options, o->name) == o, "%s: %s twice",
                          kind->name, o->name);
            ck_assert(strcmp(o->name, "name") != 0 && strcmp(o->name, "input") != 0);
        }
        const char *about = NULL;
        ck_assert_int_eq(clnet_layer_kind_about(kind->name, &about), CLNET_OK);
        ck_assert_msg(about == kind->about && strlen(about) > 20, "%s: no about", kind->name);
        int count = 0;
        clnet_layer_option_info info;
        ck_assert_int_eq(clnet_layer_kind_options(kind->name, &count), CLNET_OK);
        ck_assert_int_ge(count, 2);
        for (int i = 0; i < count; i++) {
            ck_assert_int_eq(clnet_layer_kind_option(kind->name, i, &info), CLNET_OK);
            ck_assert(*info.name && *info.type && *info.help);
            if (i < 2) ck_assert_str_eq(info.name, i == 0 ? "name" : "input");
        }
        ck_assert_int_eq(clnet_layer_kind_option(kind->name, count, &info),
                         CLNET_ERR_INVALID_ARGUMENT);
    }
    int count = 0;
    ck_assert_int_eq(clnet_layer_kind_options("lstm", &count), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(clnet_last_error(), "unknown layer kind 'lstm' (known: conv1d"));
    const char *about = NULL;
    ck_assert_int_eq(clnet_layer_kind_about("lstm", &about), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_layer_kind_about("relu", NULL), CLNET_ERR_INVALID_ARGUMENT);
    clnet_layer_option_info info;
    ck_assert_int_eq(clnet_layer_kind_option("conv2d", 4, &info), CLNET_OK);
    ck_assert_str_eq(info.name, "stride");
    ck_assert_str_eq(info.default_text, "1");
    ck_assert_str_eq(info.type, "N or HxW, each >= 1");
}
END_TEST

int main(void) {
    Suite *s = suite_create("core");
    TCase *t = tcase_create("core");
    tcase_add_test(t, version_matches_the_macros);
    tcase_add_test(t, the_public_clock_never_goes_back_and_advances);
    tcase_add_test(t, every_status_has_its_own_string);
    tcase_add_test(t, deprecated_optimizer_names_do_what_the_new_ones_do);
    tcase_add_test(t, opencl_failures_name_the_call_code_and_place);
    tcase_add_test(t, error_context_and_long_messages);
    tcase_add_test(t, worker_thread_failures_reach_the_caller);
    tcase_add_test(t, collectives_combine_in_rank_order_and_abort_cleanly);
    tcase_add_test(t, the_environment_is_read_into_a_snapshot_that_keeps_its_copies);
    tcase_add_test(t, cache_key_changes_with_source_options_and_device);
    tcase_add_test(t, cache_round_trip_and_every_damage_is_caught);
    tcase_add_test(t, cache_disabled_neither_reads_nor_writes);
    tcase_add_test(t, layer_kinds_declare_their_options);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
