/* GEMM throughput on the shapes LeNet training uses (batch 256), for clnet's
 * own kernel and for CLBlast, on every selected device:
 *
 *   build/bench/bench_gemm [reps]
 *
 * Prints GFLOP/s per shape and backend, side by side. The first call of each
 * shape (kernel build, CLBlast's own compilation) is not timed. */
#include "device.h"
#include "gemm.h"
#include "memory.h"

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

static const shape SHAPES[] = {
    {"conv1 forward  W.col", 0, 0, 20, 173056, 9},
    {"conv2 forward  W.col", 0, 0, 50, 20736, 500},
    {"conv2 dcol     Wt.dY", 1, 0, 500, 20736, 50},
    {"conv2 dW       dY.colt", 0, 1, 50, 500, 20736},
    {"fc1 forward    X.Wt", 0, 1, 256, 128, 800},
    {"fc1 dX         dY.W", 0, 0, 256, 800, 128},
    {"fc1 dW         dYt.X", 1, 0, 128, 800, 256},
};

static int run(clnet_device *d, const shape *s, int reps, double *gflops) {
    size_t asz = s->M * s->K, bsz = s->K * s->N, csz = s->M * s->N;
    cl_mem a = NULL, b = NULL, c = NULL;
    float *host = calloc(asz > bsz ? asz : bsz, sizeof(float));
    for (size_t i = 0; i < (asz > bsz ? asz : bsz); i++) host[i] = (float)(i % 13) * 0.01f;
    int ok = clnet_buffer_create(d, asz * 4, &a) == CLNET_OK &&
             clnet_buffer_create(d, bsz * 4, &b) == CLNET_OK &&
             clnet_buffer_create(d, csz * 4, &c) == CLNET_OK &&
             clnet_buffer_write(d, a, 0, asz, host) == CLNET_OK &&
             clnet_buffer_write(d, b, 0, bsz, host) == CLNET_OK;
    size_t lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    for (int r = -1; ok && r < reps; r++) {
        if (r == 0) {
            clFinish(d->queue);
            *gflops = now();
        }
        ok = clnet_gemm(d, s->ta, s->tb, s->M, s->N, s->K, 1.0f, a, 0, lda, b, 0, ldb, 0.0f, c, 0,
                        s->N) == CLNET_OK;
    }
    if (ok) {
        clFinish(d->queue);
        double t = (now() - *gflops) / reps;
        *gflops = 2.0 * (double)s->M * (double)s->N * (double)s->K / t * 1e-9;
    }
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    if (c) clReleaseMemObject(c);
    free(host);
    return ok;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    clnet_runtime *rt = NULL;
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) {
        fprintf(stderr, "bench_gemm: %s\n", clnet_last_error());
        return 1;
    }
    int skip_clblast = getenv("BENCH_SKIP_CLBLAST") != NULL;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        printf("device %d (%s), GFLOP/s:\n  %-24s %10s %10s\n", d->info.index, d->info.name,
               "shape (M x N x K)", "clnet", "CLBlast");
        for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
            double own = 0, blast = 0;
            d->gemm = CLNET_GEMM_OWN;
            if (!run(d, &SHAPES[s], reps, &own)) {
                fprintf(stderr, "bench_gemm: %s\n", clnet_last_error());
                return 1;
            }
            d->gemm = CLNET_GEMM_CLBLAST;
            if (!skip_clblast && !run(d, &SHAPES[s], reps, &blast)) {
                fprintf(stderr, "bench_gemm (CLBlast): %s\n", clnet_last_error());
                blast = 0;
            }
            printf("  %-24s %10.1f %10.1f   (%zu x %zu x %zu)\n", SHAPES[s].what, own, blast,
                   SHAPES[s].M, SHAPES[s].N, SHAPES[s].K);
            fflush(stdout);
        }
        clnet_gemm_choose(d);
    }
    clnet_runtime_free(rt);
    return 0;
}
