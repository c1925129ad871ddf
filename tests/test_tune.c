/* Tuning: every GEMM candidate against the plain-C reference on every device
 * at awkward shapes (each candidate forced in turn); the tuning database's
 * file (round trip, nearest bucket, damaged, truncated and stale entries,
 * two processes writing at once); clnet_net_tune end to end (it stores what
 * it measured, a new runtime uses it, CLNET_TUNE=off refuses); and a
 * checkpoint's recorded choices pinned again on resume.
 *
 * Cases: candidates (every configuration), database (no device; forks, so
 * it runs in a process that has done no OpenCL work), net (one device). */
#include "choices.h"
#include "gemm.h"
#include "harness.h"
#include "memory.h"
#include "net.h"
#include "ref/elementwise_ref.h"
#include "tune.h"
#include "layers/conv.h"
#include "replica.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- every candidate against the reference ---- */

typedef struct {
    size_t M, N, K;
    int slow_ok; /* small enough for the simulator */
} gemm_case;

static const gemm_case SHAPES[] = {
    {1, 1, 1, 1},      {7, 13, 5, 1},    {1, 17, 3, 0}, {17, 31, 129, 0},
    {33, 65, 257, 0},  {9, 11, 4101, 0}, /* long k: split-K, and gemm_nt for B^T */
    {131, 257, 19, 0}, /* several work-groups' tiles of the GPU points (128 x 128), each edge
                          partial */
};

/* One product with offsets, padded leading dimensions, and (beta == 0) a C
 * full of NaN that must never be read. */
static void check_one(clnet_device *d, const char *id, const gemm_case *g, int ta, int tb,
                      float beta) {
    const size_t aoff = 3, boff = 5, coff = 7, pad = 2;
    size_t M = g->M, N = g->N, K = g->K;
    size_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    size_t asize = aoff + (ta ? K : M) * lda, bsize = boff + (tb ? N : K) * ldb,
           csize = coff + M * ldc;
    float *a = malloc(asize * sizeof *a), *b = malloc(bsize * sizeof *b);
    float *c = malloc(csize * sizeof *c), *want = malloc(csize * sizeof *want);
    double *bound = malloc(M * N * sizeof *bound);
    ck_assert(a && b && c && want && bound);
    test_random_floats(a, asize, 11 + M);
    test_random_floats(b, bsize, 13 + N);
    test_random_floats(c, csize, 17 + K);
    if (beta == 0)
        for (size_t m = 0; m < M; m++)
            for (size_t n = 0; n < N; n++) c[coff + m * ldc + n] = NAN;
    memcpy(want, c, csize * sizeof *c);
    ref_gemm(ta, tb, M, N, K, 1.5, a + aoff, lda, b + boff, ldb, beta, want + coff, ldc, bound);

    cl_mem da = NULL, db = NULL, dc = NULL;
    ck_assert_int_eq(clnet_buffer_create(d, asize * 4, &da), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_create(d, bsize * 4, &db), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_create(d, csize * 4, &dc), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_write(d, da, 0, asize, a), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_write(d, db, 0, bsize, b), CLNET_OK);
    ck_assert_int_eq(clnet_buffer_write(d, dc, 0, csize, c), CLNET_OK);
    clnet_gemm_shape s = {ta, tb, M, N, K, 0, 0};
    clnet_status st = clnet_gemm_with(
        d, id, &s, NULL,
        &(clnet_gemm_args){1.5f, {da, aoff, lda}, {db, boff, ldb}, beta, {dc, coff, ldc}});
    ck_assert_msg(st == CLNET_OK, "%s: %s", id, clnet_last_error());
    ck_assert_int_eq(clnet_buffer_read(d, dc, 0, csize, c), CLNET_OK);
    for (size_t i = 0; i < csize; i++) {
        size_t r = i >= coff ? (i - coff) / ldc : 0, col = i >= coff ? (i - coff) % ldc : 0;
        int inside = i >= coff && r < M && col < N;
        if (!inside) { /* outside C: untouched */
            ck_assert_msg(memcmp(&c[i], &want[i], sizeof c[i]) == 0,
                          "%s %zux%zux%zu %c%c: element %zu outside C was written", id, M, N, K,
                          ta ? 'T' : 'N', tb ? 'T' : 'N', i);
            continue;
        }
        /* float rounding of K products and their sum: a few ulps per term */
        double tol = 1e-6 * (double)(K + 4) * bound[r * N + col] + 1e-30;
        ck_assert_msg(fabs((double)c[i] - (double)want[i]) <= tol,
                      "%s on %s: %zux%zux%zu %c%c beta %g: C[%zu][%zu] = %.9g, reference %.9g", id,
                      d->info.name, M, N, K, ta ? 'T' : 'N', tb ? 'T' : 'N', (double)beta, r, col,
                      (double)c[i], (double)want[i]);
    }
    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseMemObject(dc);
    free(a), free(b), free(c), free(want), free(bound);
}

START_TEST(every_candidate_against_the_reference) {
    clnet_runtime *rt = test_runtime();
    int checked = 0;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        int slow = test_device_is_slow(d), drawn = 0, undrawn = 0; /* CLNET_TEST_SLOW_EVERY */
        char ids[64][CLNET_GEMM_ID_CAP];
        int n = clnet_gemm_candidates(d, ids, 64);
        ck_assert_int_ge(n, 2);
        for (int c = 0; c < n; c++) {
            /* CLBlast compiles for minutes under the simulator's checks */
            if (slow && strcmp(ids[c], "clblast") == 0) continue;
            for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {
                if (slow && !SHAPES[k].slow_ok) continue;
                for (int t = 0; t < 4; t++)
                    for (int beta = 0; beta < 2; beta++) {
                        if (slow && beta) continue;
                        if (slow && !test_slow_case(drawn++)) {
                            undrawn++;
                            continue;
                        }
                        check_one(d, ids[c], &SHAPES[k], t & 1, t >> 1, beta ? 0.5f : 0.0f);
                        checked++;
                    }
            }
        }
        if (undrawn)
            printf("%s: %d of %d cases not drawn (CLNET_TEST_SLOW_EVERY; the plain build runs "
                   "them all)\n",
                   d->info.name, undrawn, drawn);
        /* an id that is no candidate is refused, not run */
        ck_assert_int_ne(
            clnet_gemm_with(d, "own-tm7-wg1", &(clnet_gemm_shape){0, 0, 1, 1, 1, 0, 0}, NULL,
                            &(clnet_gemm_args){1, {NULL, 0, 1}, {NULL, 0, 1}, 0, {NULL, 0, 1}}),
            CLNET_OK);
    }
    ck_assert_int_gt(checked, 0);
}
END_TEST

/* ---- the database file ---- */

static const char *DEV = "Some Device | driver 1.0 | Platform";

static clnet_tune_entry entry(const char *key, int bucket, const char *choice, double us) {
    clnet_tune_entry e = {.bucket = bucket, .us = us};
    snprintf(e.key, sizeof e.key, "%s", key);
    snprintf(e.choice, sizeof e.choice, "%s", choice);
    return e;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void spit(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, n, f), n);
    fclose(f);
}

START_TEST(database_round_trip_and_nearest_bucket) {
    char dir[512], path[600];
    test_make_dir(dir, sizeof dir);
    clnet_tune_db_path(dir, path, sizeof path);
    clnet_tune_entry e[] = {entry("gemm NN M=20 N=676n K=9", 128, "own-tm8-wg1", 10.5),
                            entry("gemm NN M=20 N=676n K=9", 512, "clblast", 30),
                            entry("gemm NT M=50 N=500 K=81n", 256, "own-tm16-wg0", 7)};
    ck_assert_int_eq(clnet_tune_db_write(path, DEV, "space1", e, 3), CLNET_OK);
    /* another device's entries live beside ours and survive our writes */
    clnet_tune_entry other = entry("gemm NN M=20 N=676n K=9", 128, "clblast", 1);
    ck_assert_int_eq(clnet_tune_db_write(path, "Other | 2 | P", "space9", &other, 1), CLNET_OK);
    clnet_tune_entry again = entry("gemm NT M=50 N=500 K=81n", 256, "own-tm4-wg0", 6);
    ck_assert_int_eq(clnet_tune_db_write(path, DEV, "space1", &again, 1), CLNET_OK);

    clnet_tune_table t = {0};
    int discarded = -1;
    ck_assert_int_eq(clnet_tune_db_read(path, DEV, "space1", &t, &discarded), CLNET_OK);
    ck_assert_int_eq(discarded, 0);
    ck_assert_int_eq(t.count, 3);
    const clnet_tune_entry *f = clnet_tune_table_find(&t, "gemm NT M=50 N=500 K=81n", 256);
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->choice, "own-tm4-wg0"); /* replaced, not duplicated */
    /* nearest bucket by factors of two; the larger on a tie */
    ck_assert_str_eq(clnet_tune_table_find(&t, "gemm NN M=20 N=676n K=9", 64)->choice,
                     "own-tm8-wg1");
    ck_assert_str_eq(clnet_tune_table_find(&t, "gemm NN M=20 N=676n K=9", 1024)->choice, "clblast");
    ck_assert_str_eq(clnet_tune_table_find(&t, "gemm NN M=20 N=676n K=9", 256)->choice, "clblast");
    ck_assert_ptr_null(clnet_tune_table_find(&t, "gemm NN M=21 N=676n K=9", 128));
    clnet_tune_table_free(&t);
    ck_assert_int_eq(clnet_tune_db_read(path, "Other | 2 | P", "space9", &t, NULL), CLNET_OK);
    ck_assert_int_eq(t.count, 1);
    clnet_tune_table_free(&t);
    /* no file: no entries, no error */
    ck_assert_int_eq(clnet_tune_db_read("/nonexistent/tune.db", DEV, "s", &t, NULL), CLNET_OK);
    ck_assert_int_eq(t.count, 0);
}
END_TEST

START_TEST(database_damage_truncation_and_staleness) {
    char dir[512], path[600];
    test_make_dir(dir, sizeof dir);
    clnet_tune_db_path(dir, path, sizeof path);
    clnet_tune_entry e[] = {entry("gemm NN M=1 N=2 K=3", 0, "own-tm8-wg1", 1),
                            entry("gemm NN M=4 N=5 K=6", 0, "own-tm4-wg1", 2),
                            entry("gemm NN M=7 N=8 K=9", 0, "clblast", 3)};
    ck_assert_int_eq(clnet_tune_db_write(path, DEV, "space1", e, 3), CLNET_OK);
    char text[1 << 16];
    snprintf(text, sizeof text, "%s", slurp(path));
    size_t len = strlen(text);

    /* one changed character in line 2: that line goes, with a warning */
    char *second = strchr(text, '\n') + 1;
    char *digit = strstr(second, "M=4");
    digit[2] = '5';
    spit(path, text, len);
    clnet_tune_table t = {0};
    int discarded = 0;
    test_capture_warnings(1);
    ck_assert_int_eq(clnet_tune_db_read(path, DEV, "space1", &t, &discarded), CLNET_OK);
    test_capture_warnings(0);
    ck_assert_int_eq(discarded, 1);
    ck_assert_int_eq(t.count, 2);
    ck_assert_ptr_null(clnet_tune_table_find(&t, "gemm NN M=5 N=5 K=6", 0));
    ck_assert_ptr_nonnull(strstr(test_warnings(), "line 2: damaged"));
    clnet_tune_table_free(&t);

    /* cut in the middle of the last line: that line goes */
    digit[2] = '4';
    spit(path, text, len - 9);
    test_capture_warnings(1);
    ck_assert_int_eq(clnet_tune_db_read(path, DEV, "space1", &t, &discarded), CLNET_OK);
    test_capture_warnings(0);
    ck_assert_int_eq(discarded, 1);
    ck_assert_int_eq(t.count, 2);
    ck_assert_ptr_null(clnet_tune_table_find(&t, "gemm NN M=7 N=8 K=9", 0));
    ck_assert_ptr_nonnull(strstr(test_warnings(), "line 3: damaged or truncated"));
    clnet_tune_table_free(&t);

    /* new writes re-measure: the damaged line is dropped, the file is whole again */
    clnet_tune_entry fresh = entry("gemm NN M=7 N=8 K=9", 0, "own-tm16-wg1", 4);
    test_capture_warnings(1);
    ck_assert_int_eq(clnet_tune_db_write(path, DEV, "space1", &fresh, 1), CLNET_OK);
    test_capture_warnings(0);
    ck_assert_int_eq(clnet_tune_db_read(path, DEV, "space1", &t, &discarded), CLNET_OK);
    ck_assert_int_eq(discarded, 0);
    ck_assert_int_eq(t.count, 3);
    ck_assert_str_eq(clnet_tune_table_find(&t, "gemm NN M=7 N=8 K=9", 0)->choice, "own-tm16-wg1");
    clnet_tune_table_free(&t);

    /* other candidates now (the kernels changed): every entry is stale */
    test_capture_warnings(1);
    ck_assert_int_eq(clnet_tune_db_read(path, DEV, "space2", &t, &discarded), CLNET_OK);
    test_capture_warnings(0);
    ck_assert_int_eq(discarded, 3);
    ck_assert_int_eq(t.count, 0);
    char want[160];
    snprintf(want, sizeof want, "3 entries on %s were measured with other kernels (stale)", DEV);
    const char *stale = strstr(test_warnings(), want);
    ck_assert_msg(stale && !strstr(stale + strlen(want), "(stale)"),
                  "one warning for the 3 stale lines: %s", test_warnings());
    clnet_tune_entry remeasured = entry("gemm NN M=1 N=2 K=3", 0, "clblast", 5);
    test_capture_warnings(1);
    ck_assert_int_eq(clnet_tune_db_write(path, DEV, "space2", &remeasured, 1), CLNET_OK);
    test_capture_warnings(0);
    ck_assert_int_eq(clnet_tune_db_read(path, DEV, "space2", &t, &discarded), CLNET_OK);
    ck_assert_int_eq(discarded, 0); /* the stale lines are gone from the file */
    ck_assert_int_eq(t.count, 1);
    clnet_tune_table_free(&t);

    /* not text at all */
    spit(path, "\x01\x02garbage\n\xff", 11);
    test_capture_warnings(1);
    ck_assert_int_eq(clnet_tune_db_read(path, DEV, "space2", &t, &discarded), CLNET_OK);
    test_capture_warnings(0);
    ck_assert_int_eq(discarded, 2);
    ck_assert_int_eq(t.count, 0);
}
END_TEST

/* Two processes write 40 entries each, one write at a time, all at once:
 * the file ends valid with all 80 (each write merges under the lock). */
START_TEST(database_two_writers_at_once) {
    char dir[512], path[600];
    test_make_dir(dir, sizeof dir);
    clnet_tune_db_path(dir, path, sizeof path);
    pid_t pids[2];
    for (int w = 0; w < 2; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            int bad = 0;
            for (int i = 0; i < 40; i++) {
                char key[64];
                snprintf(key, sizeof key, "gemm NN M=%d N=%d K=1", w, i);
                clnet_tune_entry e = entry(key, 0, "own-tm8-wg1", i);
                bad |= clnet_tune_db_write(path, DEV, "space1", &e, 1) != CLNET_OK;
            }
            _exit(bad);
        }
    }
    for (int w = 0; w < 2; w++) {
        int st = 0;
        ck_assert_int_eq(waitpid(pids[w], &st, 0), pids[w]);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    clnet_tune_table t = {0};
    int discarded = -1;
    ck_assert_int_eq(clnet_tune_db_read(path, DEV, "space1", &t, &discarded), CLNET_OK);
    ck_assert_int_eq(discarded, 0);
    ck_assert_int_eq(t.count, 80);
    clnet_tune_table_free(&t);
}
END_TEST

/* ---- clnet_net_tune and the checkpoint's record ---- */

static const char *const LENET[] = {
    "input channels=1 height=28 width=28",
    "conv2d name=conv1 filters=6 size=5 pad=2",
    "sigmoid",
    "avgpool size=2 stride=2",
    "conv2d name=conv2 filters=16 size=5",
    "sigmoid",
    "avgpool size=2 stride=2",
    "flatten",
    "linear name=fc1 units=120",
    "sigmoid",
    "linear name=fc2 units=10",
    "softmax_cross_entropy",
};

static clnet_net *small_lenet(clnet_runtime *rt, int batch) {
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (size_t i = 0; i < sizeof LENET / sizeof LENET[0]; i++)
        ck_assert_msg(clnet_net_add(net, LENET[i]) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_net_init(net, 1), CLNET_OK);
    ck_assert_msg(clnet_net_bind(net, rt, batch) == CLNET_OK, "%s", clnet_last_error());
    return net;
}

typedef struct {
    int chosen, measured;
    char first_layer[80];
} heard;

static void listen(const clnet_tune_report *r, void *user) {
    heard *h = user;
    h->measured++;
    if (strcmp(r->verdict, "chosen") == 0) h->chosen++;
    ck_assert_msg(r->us >= 0, "%s on %s failed: %s", r->id, r->key, r->verdict);
    if (!h->first_layer[0]) snprintf(h->first_layer, sizeof h->first_layer, "%s", r->layer);
}

/* Each of the net's `count` convolutions runs the algorithm table t names for it. */
static void expect_algorithms(const clnet_net *net, const clnet_tune_table *t, int count) {
    const clnet_replica *r = net->trainer->replicas[0];
    int seen = 0;
    for (int i = 0; i < net->model.count; i++) {
        char key[CLNET_TUNE_KEY_CAP], text[CLNET_CONV_PLAN_CAP];
        clnet_conv_plan chosen;
        if (!clnet_node_plan(&net->model.nodes[i], r->d, key, sizeof key, &chosen)) continue;
        const clnet_tune_entry *e = clnet_tune_table_find(t, key, 0);
        ck_assert_msg(e != NULL, "no entry for %s", key);
        clnet_conv_plan_text(&chosen, text, sizeof text);
        ck_assert_str_eq(e->choice, text);
        seen++;
    }
    ck_assert_int_eq(seen, count);
}

/* How many of table t's convolution plans run the implicit algorithm's
 * products (its own, Winograd's) on a device other than a CPU: the layers
 * the tuner times tiles for. */
static int product_plans(const clnet_tune_table *t, const clnet_device *d) {
    int n = 0;
    for (int k = 0; k < t->count && d->info.type != CLNET_DEVICE_CPU; k++) {
        clnet_conv_plan plan;
        if (strncmp(t->entries[k].key, "gemm ", 5) == 0 ||
            !clnet_conv_plan_parse(t->entries[k].choice, &plan))
            continue;
        int runs = 0;
        for (int pass = 0; pass < CLNET_CONV_PASSES; pass++)
            runs |=
                plan.pass[pass] == CLNET_CONV_IMPLICIT || plan.pass[pass] == CLNET_CONV_WINOGRAD;
        n += runs;
    }
    return n;
}

/* Each convolution whose table names a tile runs its products on it: the
 * kernels the node keeps for them are of that tile's program. */
static void expect_tiles(const clnet_net *net, const clnet_tune_table *t) {
    const clnet_replica *r = net->trainer->replicas[0];
    for (int i = 0; i < net->model.count; i++) {
        char key[CLNET_TUNE_KEY_CAP];
        clnet_conv_plan chosen;
        if (!clnet_node_plan(&net->model.nodes[i], r->d, key, sizeof key, &chosen)) continue;
        strcat(key, CONV_TILE_KEY);
        const clnet_tune_entry *e = clnet_tune_table_find(t, key, 0);
        if (!e) continue;
        cl_kernel k = r->kernels[i * CLNET_NODE_KERNELS + CONV_K_IMPLICIT_GEMM];
        if (!k) k = r->kernels[i * CLNET_NODE_KERNELS + CONV_K_WINO_GEMM];
        ck_assert_msg(k != NULL, "%s: no implicit product ran", key);
        int v[6];
        ck_assert(clnet_conv_tile_parse(e->choice, v));
        cl_program built = NULL;
        ck_assert_int_eq(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof built, &built, NULL),
                         CL_SUCCESS);
        const char *options = NULL;
        for (const clnet_program *p = r->d->programs; p; p = p->next)
            if (p->program == built) options = p->options;
        char mr[48], local[64];
        snprintf(mr, sizeof mr, "-DMR=%d -DNV=%d -DVW=%d ", v[0], v[1] / v[2], v[2]);
        snprintf(local, sizeof local, "-DLOCAL=1 -DKL=%d -DWGM=%d -DWGN=%d", v[3], v[4], v[5]);
        ck_assert_msg(options && strstr(options, mr) && strstr(options, local),
                      "%s: %s, its product built with '%s'", key, e->choice,
                      options ? options : "?");
    }
}

/* LeNet tuned as a GPU times the GEMM's whole GPU space, cold (84 s of a cold
 * suite on a 2-core Xeon VM, 2026-12-03): the suite's tune.gpu leaves it to
 * tune_more.gpu in CI's extended step and checks the tiles alone (below). */
START_TEST(tune_stores_and_a_new_runtime_uses_it) {
    char dir[512], path[600];
    test_make_dir(dir, sizeof dir);
    setenv("CLNET_CACHE_DIR", dir, 1);
    clnet_tune_db_path(dir, path, sizeof path);
    clnet_runtime *one = test_one_device(0);
    clnet_device *d = clnet_runtime_device(one, 0);
    if (d->info.type != CLNET_DEVICE_CPU && !test_part("extended")) {
        printf("LeNet's tuning on %s left to CI's extended step (tune_more.gpu; "
               "CLNET_TEST_PARTS=extended runs it)\n",
               d->info.name);
        clnet_runtime_free(one);
        unsetenv("CLNET_CACHE_DIR");
        return;
    }
    clnet_net *net = small_lenet(one, 8);

    setenv("CLNET_TUNE", "off", 1);
    ck_assert_int_ne(clnet_net_tune(net, 8, NULL, NULL), CLNET_OK);
    ck_assert_ptr_nonnull(strstr(clnet_last_error(), "CLNET_TUNE=off"));
    ck_assert_int_ne(access(path, F_OK), 0); /* nothing measured, nothing written */
    unsetenv("CLNET_TUNE");

    heard h = {0};
    setenv("CLNET_TUNE_COLD_MB", "0.5", 1); /* large products are timed cold, the rest warm */
    ck_assert_msg(clnet_net_tune(net, 8, listen, &h) == CLNET_OK, "%s", clnet_last_error());
    unsetenv("CLNET_TUNE_COLD_MB");
    /* first each convolution's algorithm (conv1 first), then the GEMM
     * shapes of a step with those algorithms */
    ck_assert_ptr_nonnull(strstr(h.first_layer, "conv1"));
    clnet_tune_table t = {0};
    ck_assert_int_eq(
        clnet_tune_db_read(path, d->choice.tune_device, d->choice.tune_space, &t, NULL), CLNET_OK);
    ck_assert_int_eq(t.count, h.chosen);
    int convs = 0, tiles = 0;
    for (int k = 0; k < t.count; k++) {
        if (strncmp(t.entries[k].key, "gemm ", 5) == 0) continue;
        convs++;
        size_t len = strlen(t.entries[k].key), tail = strlen(CONV_TILE_KEY);
        if (len > tail && strcmp(t.entries[k].key + len - tail, CONV_TILE_KEY) == 0) {
            /* a GPU's: the local-memory tile of a layer whose plan runs implicit products */
            int v[6];
            ck_assert_msg(d->info.type != CLNET_DEVICE_CPU &&
                              clnet_conv_tile_parse(t.entries[k].choice, v),
                          "%s: %s", t.entries[k].key, t.entries[k].choice);
            tiles++;
            continue;
        }
        clnet_conv_plan plan; /* an algorithm for each pass */
        int ok = clnet_conv_plan_parse(t.entries[k].choice, &plan);
        for (int pass = 0; ok && pass < CLNET_CONV_PASSES; pass++)
            ok = plan.pass[pass] != CLNET_CONV_AUTO;
        ck_assert_msg(ok, "%s: %s", t.entries[k].key, t.entries[k].choice);
    }
    printf("tuned: %d convolutions' plans, %d tiles, %d GEMM shapes\n", convs - tiles, tiles,
           t.count - convs);
    ck_assert_int_eq(convs - tiles, 2);
    ck_assert_int_ge(h.measured, 2 * 2 + (t.count - convs) * 2);
    ck_assert_int_eq(tiles, product_plans(&t, d));
    /* the net uses the choices right away: every convolution runs the
     * database's algorithm, every GEMM shape of a step its candidate */
    float x[8 * 784];
    int32_t y[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    test_random_floats(x, 8 * 784, 5);
    ck_assert_int_eq(clnet_net_train_step(net, x, y, 8, NULL), CLNET_OK);
    expect_algorithms(net, &t, 2);
    expect_tiles(net, &t);
    const clnet_gemm_record *made = &net->trainer->replicas[0]->gemm_record;
    int gemms = clnet_gemm_record_count(made, d);
    ck_assert_int_eq(gemms, t.count - convs);
    for (int k = 0; k < made->count; k++) ck_assert_int_eq(made->picks[k].source, 'd');

    /* a checkpoint records them; a resume on another runtime pins them */
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s/a.safetensors", dir);
    ck_assert_int_eq(clnet_net_save(net, ckpt, NULL), CLNET_OK);
    clnet_net_free(net);
    clnet_runtime_free(one);

    remove(path); /* the database is gone: only the checkpoint knows */
    one = test_one_device(0);
    d = clnet_runtime_device(one, 0);
    ck_assert_int_eq(d->choice.tuned.count, 0);
    net = small_lenet(one, 8);
    ck_assert_int_eq(clnet_net_load_weights(net, ckpt, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_net_train_step(net, x, y, 8, NULL), CLNET_OK);
    ck_assert_int_eq(d->choice.pinned.count, t.count);
    expect_algorithms(net, &d->choice.pinned, 2);
    expect_tiles(net, &d->choice.pinned);
    made = &net->trainer->replicas[0]->gemm_record;
    ck_assert_int_eq(clnet_gemm_record_count(made, d), gemms);
    for (int k = 0; k < made->count; k++) ck_assert_int_eq(made->picks[k].source, 'p');
    /* a checkpoint naming an algorithm this clnet lacks: a warning, nothing pinned */
    char text[700];
    snprintf(text, sizeof text, "@%s\nconv2d 1x28x28>6x28x28 k5x5 s1x1 p2x2 d1x1 g1\t0\tfft\n",
             d->choice.tune_device);
    clnet_choices_pin(net->trainer, text);
    ck_assert_int_eq(d->choice.pinned.count, t.count);
    expect_algorithms(net, &d->choice.pinned, 2);
    /* nor one with two algorithms, or auto for a pass; three are pinned,
     * and the next step runs each pass with its own */
    static const char *const plans[] = {"implicit/im2col", "implicit/auto/im2col",
                                        "direct/implicit/im2col"};
    const char *conv1 = "conv2d 1x28x28>6x28x28 k5x5 s1x1 p2x2 d1x1 g1";
    const clnet_tune_entry *e = clnet_tune_table_find(&d->choice.pinned, conv1, 0);
    ck_assert_ptr_nonnull(e);
    char was[CLNET_TUNE_CHOICE_CAP];
    snprintf(was, sizeof was, "%s", e->choice);
    for (int k = 0; k < 3; k++) {
        snprintf(text, sizeof text, "@%s\n%s\t0\t%s\n", d->choice.tune_device, conv1, plans[k]);
        clnet_choices_pin(net->trainer, text);
        e = clnet_tune_table_find(&d->choice.pinned, conv1, 0);
        ck_assert_str_eq(e->choice, k < 2 ? was : plans[k]);
        expect_algorithms(net, &d->choice.pinned, 2);
    }
    ck_assert_int_eq(clnet_net_train_step(net, x, y, 8, NULL), CLNET_OK);
    clnet_net_free(net);
    clnet_runtime_free(one);
    clnet_tune_table_free(&t);
    unsetenv("CLNET_CACHE_DIR");
}
END_TEST

/* On a device other than a CPU, a layer whose plan runs the implicit
 * algorithm's products has its tile timed over the space and stored, and the
 * next step builds its products on it; on a CPU, which has no local-memory
 * tiles, nothing of the kind is timed. Which plan wins a timing is up to the
 * machine, so $CLNET_CONV names the plan here: the tuner then times only its
 * tiles (the plan's entry is not written), whatever the timings. No linear
 * layer: a GEMM shape would time the GEMM's whole space (50 s as a GPU, cold,
 * 2-core Xeon VM), which LeNet's tuning above covers. */
START_TEST(tune_times_tiles_on_gpus_alone) {
    char dir[512], path[600];
    test_make_dir(dir, sizeof dir);
    setenv("CLNET_CACHE_DIR", dir, 1);
    setenv("CLNET_CONV", "implicit", 1);
    clnet_tune_db_path(dir, path, sizeof path);
    clnet_runtime *one = test_one_device(0);
    clnet_device *d = clnet_runtime_device(one, 0);
    static const char *const lines[] = {"input channels=64 height=8 width=8",
                                        "conv2d name=c filters=64 size=3 pad=1", "global_avgpool",
                                        "flatten", "softmax_cross_entropy"};
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        ck_assert_int_eq(clnet_net_add(net, lines[i]), CLNET_OK);
    ck_assert_int_eq(clnet_net_init(net, 1), CLNET_OK);
    ck_assert_msg(clnet_net_bind(net, one, 4) == CLNET_OK, "%s", clnet_last_error());
    heard h = {0};
    ck_assert_msg(clnet_net_tune(net, 4, listen, &h) == CLNET_OK, "%s", clnet_last_error());
    clnet_tune_table t = {0};
    ck_assert_int_eq(
        clnet_tune_db_read(path, d->choice.tune_device, d->choice.tune_space, &t, NULL), CLNET_OK);
    int tiles = 0;
    for (int k = 0; k < t.count; k++) tiles += strstr(t.entries[k].key, CONV_TILE_KEY) != NULL;
    printf("tuning on %s (%s): %d entries, %d of them tiles\n", d->info.name,
           d->info.type == CLNET_DEVICE_CPU ? "a CPU" : "not a CPU", t.count, tiles);
    ck_assert_int_eq(product_plans(&t, d), 0);
    ck_assert_int_eq(tiles, d->info.type != CLNET_DEVICE_CPU);
    float x[4 * 64 * 64];
    int32_t y[4] = {0, 1, 2, 0};
    test_random_floats(x, 4 * 64 * 64, 9);
    ck_assert_int_eq(clnet_net_train_step(net, x, y, 4, NULL), CLNET_OK);
    expect_tiles(net, &t);
    clnet_net_free(net);
    clnet_runtime_free(one);
    clnet_tune_table_free(&t);
    unsetenv("CLNET_CONV");
    unsetenv("CLNET_CACHE_DIR");
}
END_TEST

int main(void) {
    Suite *s = suite_create("tune");
    TCase *c = tcase_create("candidates");
    tcase_set_timeout(c, 0);
    tcase_add_test(c, every_candidate_against_the_reference);
    suite_add_tcase(s, c);
    c = tcase_create("database");
    tcase_set_timeout(c, 0);
    tcase_add_test(c, database_round_trip_and_nearest_bucket);
    tcase_add_test(c, database_damage_truncation_and_staleness);
    tcase_add_test(c, database_two_writers_at_once);
    suite_add_tcase(s, c);
    c = tcase_create("net");
    tcase_set_timeout(c, 0);
    tcase_add_test(c, tune_stores_and_a_new_runtime_uses_it);
    tcase_add_test(c, tune_times_tiles_on_gpus_alone);
    suite_add_tcase(s, c);
    return test_run_suite(s);
}
