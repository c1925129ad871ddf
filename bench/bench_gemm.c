/* GEMM throughput of every candidate (gemm.h) on the shapes LeNet and
 * ResNet-18 training use, and 1024^3, on every selected device:
 *
 *   build/bench/bench_gemm [reps] [SHAPE-FILTER]
 *
 * Prints GFLOP/s per shape and candidate, then the best candidate per shape
 * as "best: <shape> <id> <GFLOP/s>". The first call of each (kernel build,
 * CLBlast's own compilation) is not timed. BENCH_SKIP_CLBLAST=1 leaves
 * CLBlast out (it takes minutes to compile on PoCL). */
#include "device.h"
#include "gemm.h"
#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *what;
    int ta, tb;
    size_t M, N, K;
} shape;

static const shape SHAPES[] = {
    {"square 1024", 0, 0, 1024, 1024, 1024},
    {"conv1 forward  W.col", 0, 0, 20, 173056, 9},
    {"conv1 dW       dY.colt", 0, 1, 20, 9, 173056},
    {"conv2 forward  W.col", 0, 0, 50, 20736, 500},
    {"conv2 dcol     Wt.dY", 1, 0, 500, 20736, 50},
    {"conv2 dW       dY.colt", 0, 1, 50, 500, 20736},
    {"fc1 forward    X.Wt", 0, 1, 256, 128, 800},
    {"fc1 dX         dY.W", 0, 0, 256, 800, 128},
    {"fc1 dW         dYt.X", 1, 0, 128, 800, 256},
    {"resnet conv3x3 128", 0, 0, 128, 25088, 1152},
    {"resnet dcol 128", 1, 0, 1152, 25088, 128},
    {"resnet dW 128", 0, 1, 128, 1152, 25088},
    {"resnet 1x1 dW 128x64", 0, 1, 128, 64, 25088},
    {"resnet 1x1 dW 256x128", 0, 1, 256, 128, 6272},
    {"resnet conv3x3 512", 0, 0, 512, 1568, 4608},
};

static int run(clnet_device *d, const char *id, const shape *s, int reps, double *gflops) {
    size_t asz = s->M * s->K, bsz = s->K * s->N, csz = s->M * s->N;
    cl_mem a = NULL, b = NULL, c = NULL;
    clnet_gemm_shape shape = {s->ta, s->tb, s->M, s->N, s->K, 0, 0};
    clnet_gemm_scratch work = {NULL, 0, clnet_gemm_work_floats(&shape)};
    float *host = calloc(asz > bsz ? asz : bsz, sizeof(float));
    for (size_t i = 0; i < (asz > bsz ? asz : bsz); i++) host[i] = (float)(i % 13) * 0.01f;
    int ok = clnet_buffer_create(d, asz * 4, &a) == CLNET_OK &&
             clnet_buffer_create(d, bsz * 4, &b) == CLNET_OK &&
             clnet_buffer_create(d, csz * 4, &c) == CLNET_OK &&
             clnet_buffer_create(d, work.floats * 4, &work.mem) == CLNET_OK &&
             clnet_buffer_write(d, a, 0, asz, host) == CLNET_OK &&
             clnet_buffer_write(d, b, 0, bsz, host) == CLNET_OK;
    size_t lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    for (int r = -1; ok && r < reps; r++) {
        if (r == 0) {
            clFinish(d->queue);
            *gflops = clnet_seconds();
        }
        ok = clnet_gemm_with(d, id, &shape, &work,
                             &(clnet_gemm_args){
                                 1.0f, {a, 0, lda}, {b, 0, ldb}, 0.0f, {c, 0, s->N}}) == CLNET_OK;
    }
    if (ok) {
        clFinish(d->queue);
        double t = (clnet_seconds() - *gflops) / reps;
        *gflops = 2.0 * (double)s->M * (double)s->N * (double)s->K / t * 1e-9;
    }
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    if (c) clReleaseMemObject(c);
    if (work.mem) clReleaseMemObject(work.mem);
    free(host);
    return ok;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    const char *filter = argc > 2 ? argv[2] : NULL;
    clnet_runtime *rt = NULL;
    if (reps < 1) reps = 1;
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) {
        fprintf(stderr, "bench_gemm: %s\n", clnet_last_error());
        return 1;
    }
    int skip_clblast = getenv("BENCH_SKIP_CLBLAST") != NULL;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        char ids[32][CLNET_GEMM_ID_CAP];
        int n = clnet_gemm_candidates(d, ids, 32);
        printf("device %d (%s), GFLOP/s:\n", d->info.index, d->info.name);
        for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
            const shape *sh = &SHAPES[s];
            if (filter && !strstr(sh->what, filter)) continue;
            printf("  %s (%zu x %zu x %zu, %c%c)\n", sh->what, sh->M, sh->N, sh->K,
                   sh->ta ? 'T' : 'N', sh->tb ? 'T' : 'N');
            double best = 0;
            int best_c = -1;
            for (int c = 0; c < n; c++) {
                double g = 0;
                if (skip_clblast && strcmp(ids[c], "clblast") == 0) continue;
                if (!run(d, ids[c], sh, reps, &g)) {
                    printf("    %-24s failed: %s\n", ids[c], clnet_last_error());
                    continue;
                }
                printf("    %-24s %8.1f\n", ids[c], g);
                fflush(stdout);
                if (g > best) best = g, best_c = c;
            }
            if (best_c >= 0) printf("best: %s | %s %.1f\n", sh->what, ids[best_c], best);
        }
    }
    clnet_runtime_free(rt);
    return 0;
}
