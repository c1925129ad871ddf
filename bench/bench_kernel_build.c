/* Times building every kernel family on every selected device, to compare a
 * cold start (empty clnet and driver caches) with a warm one:
 *
 *   d=$(mktemp -d); CLNET_CACHE_DIR=$d/clnet POCL_CACHE_DIR=$d/pocl build/bench/bench_kernel_build
 *   CLNET_CACHE_DIR=$d/clnet POCL_CACHE_DIR=$d/pocl build/bench/bench_kernel_build   # warm
 */
#include "device.h"
#include "program.h"
#include "sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    double t0 = clnet_seconds();
    clnet_runtime *rt = NULL;
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) {
        fprintf(stderr, "bench_kernel_build: %s\n", clnet_last_error());
        return 1;
    }
    printf("runtime start: %.3f s\n", clnet_seconds() - t0);
    double total = 0;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device *d = clnet_runtime_device(rt, i);
        double td = clnet_seconds();
        for (const clnet_embedded_source *s = clnet_embedded_sources; s->family; s++) {
            if (strcmp(s->family, "common") == 0) continue;
            double tf = clnet_seconds();
            char *source = NULL;
            cl_program p = NULL;
            if (clnet_kernel_source(s->family, d->env->kernel_dir, &source) != CLNET_OK ||
                clnet_program_build(d, s->family, source, "", &p) != CLNET_OK) {
                fprintf(stderr, "bench_kernel_build: %s\n", clnet_last_error());
                return 1;
            }
            clReleaseProgram(p);
            free(source);
            printf("device %d (%s): %-12s %.3f s\n", d->info.index, d->info.name, s->family,
                   clnet_seconds() - tf);
        }
        total += clnet_seconds() - td;
    }
    printf("kernel build, all devices: %.3f s\n", total);
    clnet_runtime_free(rt);
    return 0;
}
