#include "harness.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static clnet_runtime *runtime;

clnet_runtime *test_runtime(void) {
    if (runtime) return runtime;
    const char *exact = getenv("CLNET_TEST_EXPECT_DEVICES");
    const char *min = getenv("CLNET_TEST_MIN_DEVICES");
    ck_assert_msg(exact || min, "the test configuration must set CLNET_TEST_EXPECT_DEVICES or "
                                "CLNET_TEST_MIN_DEVICES");
    clnet_status s = clnet_runtime_create(&runtime, NULL);
    ck_assert_msg(s == CLNET_OK, "clnet_runtime_create: %s", clnet_last_error());
    int n = clnet_runtime_device_count(runtime);
    if (exact) ck_assert_int_eq(n, atoi(exact));
    if (min) ck_assert_int_ge(n, atoi(min));
    ck_assert_int_gt(n, 0);
    return runtime;
}

clnet_runtime *test_one_device(int which) {
    clnet_device_info info;
    clnet_runtime *one = NULL;
    ck_assert_int_eq(clnet_runtime_device_info(test_runtime(), which, &info), CLNET_OK);
    char spec[16];
    snprintf(spec, sizeof spec, "%d", info.index);
    ck_assert_int_eq(clnet_runtime_create(&one, spec), CLNET_OK);
    return one;
}

void test_runtime_release(void) {
    clnet_runtime_free(runtime);
    runtime = NULL;
}

int test_device_is_slow(const clnet_device *d) {
    return strstr(d->info.platform_name, "Oclgrind") != NULL ||
           strstr(d->info.name, "llvmpipe") != NULL; /* Rusticl's CPU device */
}

int test_has_slow_device(clnet_runtime *rt) {
    for (int i = 0; i < clnet_runtime_device_count(rt); i++)
        if (test_device_is_slow(clnet_runtime_device(rt, i))) return 1;
    return 0;
}

static int fast_device(clnet_runtime *rt) {
    for (int i = 0; i < clnet_runtime_device_count(rt); i++)
        if (!test_device_is_slow(clnet_runtime_device(rt, i))) return i;
    return 0;
}

clnet_runtime *test_fast_one_device(void) {
    return test_one_device(fast_device(test_runtime()));
}

const double *test_light_split(clnet_runtime *rt, const double split[2], double out[2]) {
    int swap = clnet_runtime_device_count(rt) == 2 &&
               test_device_is_slow(clnet_runtime_device(rt, 0)) &&
               !test_device_is_slow(clnet_runtime_device(rt, 1)) && split[0] > split[1];
    out[0] = split[swap], out[1] = split[!swap];
    return out;
}

/* 1 when seed is a multiple of $var's N (or N is unset or at most 1). */
static int every_nth(const char *var, uint64_t seed) {
    const char *every = getenv(var);
    long n = every ? strtol(every, NULL, 10) : 1;
    return n <= 1 || seed % (uint64_t)n == 0;
}

int test_slow_case(uint64_t seed) {
    return every_nth("CLNET_TEST_SLOW_EVERY", seed);
}

int test_every_case(uint64_t seed) {
    return every_nth("CLNET_TEST_EVERY", seed);
}

int test_slow_draw(clnet_runtime *rt, uint64_t c, const char *what) {
    if (!test_has_slow_device(rt) || test_slow_case(c)) return 1;
    printf("%s: left out beside a slow device (CLNET_TEST_SLOW_EVERY=%s draws every N-th case "
           "there; CI's extended step runs them all)\n",
           what, getenv("CLNET_TEST_SLOW_EVERY"));
    return 0;
}

int test_part(const char *which) {
    const char *env = getenv("CLNET_TEST_PARTS");
    const char *parts = env && *env ? env : "suite";
    size_t n = strlen(which);
    for (const char *p = parts; (p = strstr(p, which)) != NULL; p += n)
        if ((p == parts || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ')) return 1;
    return 0;
}

double test_budget_seconds(void) {
    const char *env = getenv("CLNET_TEST_BUDGET");
    double s = env && *env ? strtod(env, NULL) : 0;
    return s > 0 ? s : 0;
}

const char *test_seed_env(const char *var) {
    const char *env = getenv(var);
    if (!env || !*env) env = getenv("CLNET_TEST_SEED");
    return env && *env ? env : NULL;
}

uint64_t test_seed_from_env(const char *var, uint64_t fallback) {
    const char *env = test_seed_env(var);
    if (!env) return fallback;
    if (strcmp(env, "random") != 0) return strtoull(env, NULL, 10);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed =
        ((uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 20) %
        1000000000u;
    printf("%s=random: seed %llu (replay with %s=%llu)\n", var, (unsigned long long)seed, var,
           (unsigned long long)seed);
    return seed;
}

void test_random_floats(float *x, size_t n, uint64_t seed) {
    uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
    }
}

static char warnings[65536];
static void capture(const char *message, void *user) {
    (void)user;
    size_t used = strlen(warnings);
    snprintf(warnings + used, sizeof warnings - used, "%s\n", message);
}

void test_capture_warnings(int on) {
    if (on) warnings[0] = '\0'; /* off keeps them for the test to read */
    clnet_set_log_handler(on ? capture : NULL, NULL);
}

const char *test_warnings(void) {
    return warnings;
}

static char run_dir[64];

void test_make_dir(char *out, size_t cap) {
    static int made;
    if (!run_dir[0]) {
        snprintf(run_dir, sizeof run_dir, "/tmp/clnet-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(run_dir));
    }
    snprintf(out, cap, "%s/%d", run_dir, ++made);
    ck_assert_int_eq(mkdir(out, 0755), 0);
}

void test_remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        test_remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

static int skipped;

void test_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("skipped: ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    skipped++;
}

int test_skip_without_fashion_mnist(void) {
    const char *env = getenv("CLNET_DATA_DIR");
    const char *dir = env && *env ? env : CLNET_DEFAULT_DATA_DIR;
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    if (stat(path, &st) == 0) return 0;
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    if (stat(path, &st) == 0) return 0;
    test_skip("Fashion-MNIST is not installed in %s (apt-get install dataset-fashion-mnist)", dir);
    return 1;
}

int test_run_suite(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int ran = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    test_runtime_release();
    if (run_dir[0]) test_remove_tree(run_dir);
    if (ran == 0) {
        const char *only = getenv("CK_RUN_CASE");
        printf("no test ran (CK_RUN_CASE=%s)\n", only ? only : "");
        return 1;
    }
    if (failed) return 1;
    if (skipped) {
        printf("%d of %d tests skipped\n", skipped, ran);
        return 77;
    }
    return 0;
}

unsigned char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

void test_write_file(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}
