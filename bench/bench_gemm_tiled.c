/* The tiled GEMM (cl/gemm_tiled.cl) over its declared search space, beside
 * clnet's own kernel (cl/gemm.cl), on every selected device:
 *
 *   build/bench/bench_gemm_tiled [reps] [id ...]        GFLOP/s per shape and point
 *   build/bench/bench_gemm_tiled check [id ...]         correctness of every point
 *
 * ids ("tiled m8n32v16k0c0a0b0l0w1x1u1") replace the device's declared space;
 * BENCH_SPACE=gpu (or cpu) takes that space whatever the device is (a GPU
 * space checked on PoCL's CPU device, say).
 * The timing mode prints the median of `reps` calls after one untimed call
 * (which builds the kernel; its time is printed as the build time, cold only
 * with empty CLNET_CACHE_DIR and POCL_CACHE_DIR). BENCH_SHAPES=a,b picks
 * shapes by number. The check mode compares every point with a plain-C
 * double-precision product at awkward shapes, all four transposes, offsets,
 * padded leading dimensions, beta 0 (C full of NaN) and 0.5; it exits 1 on
 * any failure. openblas_sgemm.py times OpenBLAS on the same shapes. */
#include "device.h"
#include "gemm.h"
#include "gemm_tiled.h"
#include "memory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    const char *what;
    int ta, tb;
    size_t M, N, K;
} shape;

/* keep in step with SHAPES in openblas_sgemm.py */
static const shape SHAPES[] = {
    {"conv1 forward  W.col", 0, 0, 20, 173056, 9},
    {"conv2 forward  W.col", 0, 0, 50, 20736, 500},
    {"conv2 dcol     Wt.dY", 1, 0, 500, 20736, 50},
    {"conv2 dW       dY.colt", 0, 1, 50, 500, 20736},
    {"fc1 forward    X.Wt", 0, 1, 256, 128, 800},
    {"fc1 dX         dY.W", 0, 0, 256, 800, 128},
    {"fc1 dW         dYt.X", 1, 0, 128, 800, 256},
    {"square 1024", 0, 0, 1024, 1024, 1024},
    {"resnet18 l2 W.col", 0, 0, 128, 25088, 576},
    {"resnet18 l3 W.col", 0, 0, 256, 6272, 1152},
    {"resnet18 l4 W.col", 0, 0, 512, 1568, 2304},
};
#define NSHAPES (sizeof SHAPES / sizeof SHAPES[0])

/* One product: a point of the tiled space, or (p == NULL) clnet_gemm. */
static int gemm(clnet_device *d, const clnet_gemm_tiled_params *p, const shape *s, float alpha,
                cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff, size_t ldb, float beta,
                cl_mem c, size_t coff, size_t ldc) {
    clnet_status st = p ? clnet_gemm_tiled(d, p, s->ta, s->tb, s->M, s->N, s->K, alpha, a, aoff,
                                           lda, b, boff, ldb, beta, c, coff, ldc)
                        : clnet_gemm(d, s->ta, s->tb, s->M, s->N, s->K, alpha, a, aoff, lda, b,
                                     boff, ldb, beta, c, coff, ldc);
    return st == CLNET_OK;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* GFLOP/s (median of reps) of one point on one shape; *build gets the first,
 * untimed call's seconds. 0 on failure. */
static double time_point(clnet_device *d, const clnet_gemm_tiled_params *p, const shape *s,
                         int reps, double *build) {
    size_t asz = s->M * s->K, bsz = s->K * s->N, csz = s->M * s->N;
    size_t most = asz > bsz ? (asz > csz ? asz : csz) : (bsz > csz ? bsz : csz);
    cl_mem a = NULL, b = NULL, c = NULL;
    float *host = malloc(most * sizeof(float));
    double *t = malloc((size_t)reps * sizeof(double)), gflops = 0;
    for (size_t i = 0; host && i < most; i++) host[i] = (float)(i % 13) * 0.01f;
    int ok = host && t && clnet_buffer_create(d, asz * 4, &a) == CLNET_OK &&
             clnet_buffer_create(d, bsz * 4, &b) == CLNET_OK &&
             clnet_buffer_create(d, csz * 4, &c) == CLNET_OK &&
             clnet_buffer_write(d, a, 0, asz, host) == CLNET_OK &&
             clnet_buffer_write(d, b, 0, bsz, host) == CLNET_OK &&
             clnet_buffer_write(d, c, 0, csz, host) == CLNET_OK;
    size_t lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    for (int r = -1; ok && r < reps; r++) {
        clFinish(d->queue);
        double t0 = now();
        ok = gemm(d, p, s, 1.0f, a, 0, lda, b, 0, ldb, 0.0f, c, 0, s->N) &&
             clFinish(d->queue) == CL_SUCCESS;
        if (r < 0)
            *build = now() - t0;
        else
            t[r] = now() - t0;
    }
    if (ok) {
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        gflops = 2.0 * (double)s->M * (double)s->N * (double)s->K / t[reps / 2] * 1e-9;
    } else {
        fprintf(stderr, "bench_gemm_tiled: %s\n", clnet_last_error());
    }
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    if (c) clReleaseMemObject(c);
    free(host);
    free(t);
    return gflops;
}

/* Checks p on one case against a double-precision product; 1 when it holds. */
static int check_case(clnet_device *d, const clnet_gemm_tiled_params *p, int ta, int tb, size_t M,
                      size_t N, size_t K, float beta, unsigned seed) {
    size_t aoff = 3, boff = 5, coff = 7;
    size_t lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 1, ldc = N + 3;
    size_t asz = aoff + (ta ? K : M) * lda, bsz = boff + (tb ? N : K) * ldb, csz = coff + M * ldc;
    float *ha = malloc(asz * 4), *hb = malloc(bsz * 4), *hc = malloc(csz * 4),
          *out = malloc(csz * 4);
    cl_mem a = NULL, b = NULL, c = NULL;
    int ok = ha && hb && hc && out;
    for (size_t i = 0; ok && i < asz; i++) ha[i] = (float)((seed + i * 7919) % 2001) / 1000.f - 1;
    for (size_t i = 0; ok && i < bsz; i++) hb[i] = (float)((seed + i * 104729) % 1999) / 999.f - 1;
    for (size_t i = 0; ok && i < csz; i++)
        hc[i] = beta == 0.0f ? NAN : (float)((seed + i * 31) % 101) / 50.f - 1;
    ok = ok && clnet_buffer_create(d, asz * 4, &a) == CLNET_OK &&
         clnet_buffer_create(d, bsz * 4, &b) == CLNET_OK &&
         clnet_buffer_create(d, csz * 4, &c) == CLNET_OK &&
         clnet_buffer_write(d, a, 0, asz, ha) == CLNET_OK &&
         clnet_buffer_write(d, b, 0, bsz, hb) == CLNET_OK &&
         clnet_buffer_write(d, c, 0, csz, hc) == CLNET_OK;
    const float alpha = 0.75f;
    shape s = {"check", ta, tb, M, N, K};
    ok = ok && gemm(d, p, &s, alpha, a, aoff, lda, b, boff, ldb, beta, c, coff, ldc) &&
         clnet_buffer_read(d, c, 0, csz, out) == CLNET_OK;
    if (!ok) fprintf(stderr, "  error: %s\n", clnet_last_error());
    double worst = 0;
    size_t bad_at = 0;
    for (size_t i = 0; ok && i < csz; i++) {
        size_t m = i >= coff ? (i - coff) / ldc : 0, n = i >= coff ? (i - coff) % ldc : 0;
        if (i < coff || n >= N) { /* outside C: must be untouched */
            if (!(out[i] == hc[i] || (isnan(out[i]) && isnan(hc[i])))) worst = INFINITY, bad_at = i;
            continue;
        }
        double sum = 0, mag = 0;
        for (size_t k = 0; k < K; k++) {
            double x = ha[aoff + (ta ? k * lda + m : m * lda + k)];
            double y = hb[boff + (tb ? n * ldb + k : k * ldb + n)];
            sum += x * y;
            mag += fabs(x * y);
        }
        double want = alpha * sum + (beta != 0.0f ? beta * (double)hc[i] : 0.0);
        double scale = fabs(alpha) * mag + (beta != 0.0f ? fabs(beta * (double)hc[i]) : 0) + 1e-30;
        double err = fabs((double)out[i] - want) / scale;
        if (!(err <= worst)) worst = err, bad_at = i; /* NaN counts as worst */
    }
    double bound = 1e-4 * sqrt((double)K) + 1e-6;
    if (ok && !(worst <= bound)) {
        fprintf(stderr, "  %c%c %zux%zux%zu beta %.1f: relative error %.3g > %.3g at %zu\n",
                ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, beta, worst, bound, bad_at);
        ok = 0;
    }
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    if (c) clReleaseMemObject(c);
    free(ha);
    free(hb);
    free(hc);
    free(out);
    return ok;
}

/* The last case spans several k blocks (KC 256) and row groups (mc 64, 96). */
static int check_point(clnet_device *d, const clnet_gemm_tiled_params *p) {
    static const size_t CASES[][3] = {{1, 1, 1},    {7, 13, 5},     {17, 31, 129},  {33, 65, 257},
                                      {2, 300, 3},  {61, 1, 17},    {1, 97, 64},    {40, 48, 300},
                                      {131, 7, 11}, {19, 67, 1000}, {200, 150, 700}};
    int ok = 1;
    unsigned seed = 1;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        for (int t = 0; t < 4; t++)
            for (int bz = 0; bz < 2; bz++)
                ok &= check_case(d, p, t & 1, t >> 1, CASES[i][0], CASES[i][1], CASES[i][2],
                                 bz ? 0.5f : 0.0f, seed++);
    return ok;
}

int main(int argc, char **argv) {
    int check = argc > 1 && strcmp(argv[1], "check") == 0;
    int reps = !check && argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1) reps = 1;
    int first_id = argc > 1 ? 2 : 1;
    clnet_runtime *rt = NULL;
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) {
        fprintf(stderr, "bench_gemm_tiled: %s\n", clnet_last_error());
        return 1;
    }
    const char *pick = getenv("BENCH_SHAPES");
    int failed = 0;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        clnet_gemm_tiled_params space[64];
        int n = 0;
        for (int a = first_id; a < argc && n < 64; a++)
            if (clnet_gemm_tiled_parse(argv[a], &space[n]) == CLNET_OK)
                n++;
            else
                fprintf(stderr, "bench_gemm_tiled: %s\n", clnet_last_error());
        if (first_id >= argc) { /* the declared space, BENCH_SPACE=cpu|gpu to pick one */
            clnet_device as = *d;
            const char *kind = getenv("BENCH_SPACE");
            if (kind && strcmp(kind, "gpu") == 0) as.info.type = CLNET_DEVICE_GPU;
            if (kind && strcmp(kind, "cpu") == 0) as.info.type = CLNET_DEVICE_CPU;
            n = clnet_gemm_tiled_space(&as, space, 64);
        }
        if (n > 64) n = 64;
        printf("device %d (%s): %d points\n", d->info.index, d->info.name, n);
        char id[96];
        if (check) {
            for (int p = 0; p < n; p++) {
                clnet_gemm_tiled_name(&space[p], id, sizeof id);
                int ok = check_point(d, &space[p]);
                printf("  %-36s %s\n", id, ok ? "ok" : "FAILED");
                fflush(stdout);
                failed |= !ok;
            }
            continue;
        }
        double *builds = calloc((size_t)n, sizeof(double));
        for (size_t s = 0; s < NSHAPES; s++) {
            char num[8];
            snprintf(num, sizeof num, "%zu", s);
            if (pick) { /* BENCH_SHAPES=0,3,7 */
                const char *q = pick;
                int hit = 0;
                while (*q) {
                    hit |= (size_t)strtoul(q, NULL, 10) == s;
                    q = strchr(q, ',');
                    if (!q) break;
                    q++;
                }
                if (!hit) continue;
            }
            const shape *sh = &SHAPES[s];
            printf("%s (%zu x %zu x %zu, %c%c), GFLOP/s:\n", sh->what, sh->M, sh->N, sh->K,
                   sh->ta ? 'T' : 'N', sh->tb ? 'T' : 'N');
            double best = 0, b = 0;
            int at = -1;
            for (int p = 0; p < n; p++) {
                double g = time_point(d, &space[p], sh, reps, &b);
                if (builds[p] == 0) builds[p] = b;
                clnet_gemm_tiled_name(&space[p], id, sizeof id);
                printf("  %-36s %8.1f\n", id, g);
                fflush(stdout);
                if (g > best) best = g, at = p;
            }
            d->gemm = CLNET_GEMM_OWN;
            double own = time_point(d, NULL, sh, reps, &b);
            clnet_gemm_choose(d);
            if (at >= 0) clnet_gemm_tiled_name(&space[at], id, sizeof id);
            printf("  best %-31s %8.1f   own (gemm.cl) %8.1f\n", at >= 0 ? id : "-", best, own);
            fflush(stdout);
        }
        printf("first call per point (build and first run), s:\n");
        for (int p = 0; p < n; p++) {
            clnet_gemm_tiled_name(&space[p], id, sizeof id);
            printf("  %-36s %8.3f\n", id, builds[p]);
        }
        free(builds);
    }
    clnet_runtime_free(rt);
    return failed;
}
