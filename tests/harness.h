/* Shared test helpers. Device tests run on every device of the configuration
 * that CTest sets up, and each configuration states how many devices it
 * expects (CLNET_TEST_EXPECT_DEVICES=N exactly, or CLNET_TEST_MIN_DEVICES=N),
 * so a loop over zero devices can never pass. */
#ifndef CLNET_TEST_HARNESS_H
#define CLNET_TEST_HARNESS_H

#include <check.h>
#include <stdint.h>

#include "clnet.h"
#include "device.h"

/* The configuration's runtime, made on first use and checked for its count. */
clnet_runtime *test_runtime(void);
void test_runtime_release(void);

/* A runtime of the configuration's device `which` alone (free it). */
clnet_runtime *test_one_device(int which);

/* 1 when the device is slow (the Oclgrind simulator, Rusticl on llvmpipe): keep its
 * work tiny. */
int test_device_is_slow(const clnet_device *d);

/* 1 when any device of rt is slow (test_device_is_slow). */
int test_has_slow_device(clnet_runtime *rt);

/* A split of two devices for rt, in out: split, or split reversed when rt's
 * device 0 is slow, device 1 is not and split would give device 0 the larger
 * share (what the tests check does not depend on which device takes which). */
const double *test_light_split(clnet_runtime *rt, const double split[2], double out[2]);

/* A runtime of the configuration's first device that is not slow (else device 0)
 * alone, the one-device reference beside a simulator (free it). */
clnet_runtime *test_fast_one_device(void);

/* 1 when case `seed` of a table runs on slow devices: every case, or with
 * CLNET_TEST_SLOW_EVERY=N every N-th (the simulator's and Rusticl's longest
 * tests in the suite, every fourth sanitized; their twins in CI's extended
 * step run every case, and the host code runs every case on PoCL's devices). */
int test_slow_case(uint64_t seed);

/* 1 when case `seed` of a table runs at all: every case, or with
 * CLNET_TEST_EVERY=N every N-th on every device (the suite's layers.gpu, where
 * each case compiles GPU variants; its twin in CI's extended step runs all). */
int test_every_case(uint64_t seed);

/* 1 when case c of a test's loop runs on rt: always without a slow device,
 * else test_slow_case(c); says what it leaves out (`what`). */
int test_slow_draw(clnet_runtime *rt, uint64_t c, const char *what);

/* 1 when this run includes the parts of `which` ("suite" or "extended"): the
 * names in $CLNET_TEST_PARTS (default "suite"), as tests/parts.sh's `part` for
 * the shell tests. A test's longer parts run in its twin in CI's extended step. */
int test_part(const char *which);

/* The time budget of a generated test, in seconds ($CLNET_TEST_BUDGET; 0 when unset):
 * after the cases it must run, it draws more until the budget is spent (CI's extended
 * step, scripts/test.sh --extended). */
double test_budget_seconds(void);

/* The seed that $VAR names, else that $CLNET_TEST_SEED names (CI's extended step sets it to
 * "random": the variable a replay sets is never one CTest sets), else `fallback`; "random"
 * draws one from the clock and prints it, so that a failure can be replayed with
 * VAR=<that seed>. test_seed_env is the text that decides (NULL: neither is set). */
uint64_t test_seed_from_env(const char *var, uint64_t fallback);
const char *test_seed_env(const char *var);

/* Deterministic pseudo-random floats in [-1, 1). */
void test_random_floats(float *x, size_t n, uint64_t seed);

/* Warnings captured from the library while capture is on (turning it on
 * clears them; turning it off keeps them to read). */
void test_capture_warnings(int on);
const char *test_warnings(void);

/* A fresh empty folder for a test (out gets its path), inside one folder
 * per run that test_run_suite removes when the suite is done. */
void test_make_dir(char *out, size_t cap);
/* A whole file read into malloc'ed memory (*len its bytes), or written; they assert. */
unsigned char *test_read_file(const char *path, size_t *len);
void test_write_file(const char *path, const void *bytes, size_t n);
/* Removes a file or a folder with everything in it. */
void test_remove_tree(const char *path);

/* Marks the running test skipped, printing "skipped: " and why; the test
 * returns right after. A test that cannot run here is never counted as passed. */
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Skips the running test and returns 1 when Fashion-MNIST is not where clnet
 * looks for it ($CLNET_DATA_DIR, else CLNET_DEFAULT_DATA_DIR):
 *     if (test_skip_without_fashion_mnist()) return; */
int test_skip_without_fashion_mnist(void);

/* Runs a suite without forking (PoCL's threads do not survive fork), only
 * the test case $CK_RUN_CASE when set, and returns the program's exit status:
 * 1 if a test failed or none ran (a misspelt case must not pass), else 77 if
 * a test skipped (CTest's SKIP_RETURN_CODE), else 0. */
int test_run_suite(Suite *s);

#endif
