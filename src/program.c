/* Program building and the per-device program/kernel tables. */
#include "alloc.h"
#include "program.h"
#include "kernel_log.h"
#include "clock.h"
#include "error.h"
#include "guard.h"
#include "kcache.h"
#include "memory.h"
#include "sources.h"
#include "startup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STD_OPTION "-cl-std=CL1.2"

static char *build_log(clnet_device *d, cl_program p) {
    size_t n = 0;
    if (clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS)
        return NULL;
    char *log = clnet_malloc(n + 1);
    if (!log) return NULL;
    if (clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS) n = 0;
    log[n] = '\0';
    return log;
}

/* Tries a cached binary; returns NULL (after a warning) if the driver will
 * not take it, so the caller builds from source. */
static cl_program program_from_binary(clnet_device *d, const unsigned char *bin, size_t len,
                                      const char *options, const char *label) {
    cl_int err = CL_SUCCESS, bin_status = CL_SUCCESS;
    cl_program p = clCreateProgramWithBinary(d->context, 1, &d->id, &len, &bin, &bin_status, &err);
    if (err == CL_SUCCESS && bin_status == CL_SUCCESS)
        err = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
    if (err == CL_SUCCESS && bin_status == CL_SUCCESS) return p;
    clnet_warn("device %d (%s) rejected the cached binary of '%s' (%s); rebuilding from source",
               d->info.index, d->info.name, label,
               clnet_cl_error_name(err != CL_SUCCESS ? err : bin_status));
    if (p) clReleaseProgram(p);
    return NULL;
}

/* Whether a program built from source is read back into clnet's disk cache.
 * Not with CLNET_CACHE=off, and not on PoCL unless CLNET_CACHE=all: reading
 * a binary back is slow there (PoCL compiles every kernel of the program at
 * a work-group size no launch uses: half of LeNet's cold start on a 2-core
 * CPU), and PoCL's own cache already serves the next run. Elsewhere it is
 * cheap (NVIDIA H200: about 1 ms a program, where building one takes
 * 120-220 ms) and clnet's cache loads a little faster than the driver's
 * (resnet18_w16's 24 programs: 7-10 ms against 45 ms). What is stored is
 * always loaded. */
int clnet_program_stores(const clnet_device *d) {
    if (!d->cache || !d->cache->enabled) return 0;
    return d->cache->store_all || !strstr(d->info.platform_name, "Portable Computing Language");
}

static void store_binary(clnet_device *d, cl_program p, const char *key) {
    size_t len = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS ||
        len == 0)
        return; /* drivers without binaries simply rebuild each run */
    unsigned char *bin = clnet_malloc(len);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS &&
        clnet_kcache_store(d->cache, key, bin, len))
        d->cache_stores++;
    free(bin);
}

/* Appends where the program's lines come from, for drivers whose logs count
 * lines in the whole text and ignore #line (NVIDIA's, Oclgrind): "lines
 * 1-95 shared.cl, 97-812 elementwise.cl", each file's first line first. */
static void append_line_map(const char *source) {
    static const char mark[] = "#line 1 \"";
    int line = 1, files = 0, from = 0;
    char name[64] = "";
    for (const char *c = source;; c++) {
        int end = *c == '\0';
        if (c == source || c[-1] == '\n' || end) {
            int marked = !end && strncmp(c, mark, sizeof mark - 1) == 0;
            const char *q = marked ? strchr(c + sizeof mark - 1, '"') : NULL;
            if (end || q) {
                if (name[0]) {
                    char range[128];
                    snprintf(range, sizeof range, "%s%d-%d %s",
                             files++ ? ", " : "\n(lines of the program: ", from, line - 1, name);
                    clnet_error_append(range);
                }
                if (end) break;
                snprintf(name, sizeof name, "%.*s", (int)(q - c - (sizeof mark - 1)),
                         c + sizeof mark - 1);
                from = line + 1;
            }
        }
        if (*c == '\n') line++;
    }
    if (files) clnet_error_append(")");
}

clnet_status clnet_program_build(clnet_device *d, const char *label, const char *source,
                                 const char *options, cl_program *out) {
    clnet_status status = CLNET_OK;
    cl_int err = CL_SUCCESS;
    cl_program p = NULL;
    char *all_options = NULL, *key = NULL, *log = NULL;
    unsigned char *bin = NULL;
    size_t bin_len = 0;
    *out = NULL;

    /* PoCL 3 shares compiled work-group functions between devices running the
     * same program, and its reference counts break when two devices run one
     * concurrently (an assertion in pocl_release_dlhandle_cache aborts the
     * process). A define naming the device makes each device's program its
     * own. Re-checked without it (PoCL 3.1, two `basic` devices, 2026-11-26):
     * convolutions' backward passes wrote past their buffers (CLNET_GUARD in
     * multi.pocl2 and resnet_multi.pocl2), so devices of one driver do not
     * share programs. The number is the device's among PoCL's own, so that
     * PoCL's device keeps its programs (and PoCL's cache its binaries) beside
     * another platform's devices, whose order moves it. */
    char device_option[64] = "";
    if (strstr(d->info.platform_name, "Portable Computing Language"))
        snprintf(device_option, sizeof device_option, " -DCLNET_DEVICE_INDEX=%d",
                 d->platform_index);
    size_t n = strlen(STD_OPTION) + strlen(device_option) + strlen(options ? options : "") + 2;
    all_options = clnet_malloc(n);
    if (!all_options) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory building '%s'", label);
    snprintf(all_options, n, "%s%s %s", STD_OPTION, device_option, options ? options : "");
    key = clnet_kcache_key(d, source, all_options);
    if (!key) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory building '%s'", label);

    double began = clnet_now(), readback = 0;
    int from_cache = 0;
    if (clnet_kcache_load(d->cache, key, &bin, &bin_len)) {
        p = program_from_binary(d, bin, bin_len, all_options, label);
        if (p) d->cache_hits++, from_cache = 1;
    }
    if (!p) {
        p = clCreateProgramWithSource(d->context, 1, &source, NULL, &err);
        CL_CHECK(err, "clCreateProgramWithSource");
        err = clBuildProgram(p, 1, &d->id, all_options, NULL, NULL);
        if (err != CL_SUCCESS) {
            log = build_log(d, p);
            status = clnet_fail(CLNET_ERR_BUILD,
                                "building kernels '%s' with options '%s' failed: "
                                "clBuildProgram returned %s (%d); the build log follows",
                                label, all_options, clnet_cl_error_name(err), err);
            clnet_error_append("\n");
            clnet_error_append(log && *log ? log : "(the driver gave no build log)");
            append_line_map(source);
            goto cleanup;
        }
        if (clnet_program_stores(d)) {
            double built = clnet_now();
            store_binary(d, p, key);
            readback = clnet_now() - built;
        }
    }
    clnet_startup_program(d, label, options, from_cache, clnet_now() - began - readback, readback);
    *out = p;
    p = NULL;
cleanup:
    if (p) clReleaseProgram(p);
    free(all_options);
    free(key);
    free(log);
    free(bin);
    if (status != CLNET_OK)
        clnet_error_context(status, "device %d (%s)", d->info.index, d->info.name);
    return status;
}

static clnet_program *find_program(clnet_device *d, const char *family, const char *options) {
    for (clnet_program *p = d->programs; p; p = p->next)
        if (strcmp(p->family, family) == 0 && strcmp(p->options, options) == 0) return p;
    return NULL;
}

static clnet_status add_program(clnet_device *d, const char *family, const char *options,
                                clnet_program **out) {
    clnet_status status = CLNET_OK;
    char *source = NULL;
    clnet_program *entry = clnet_calloc(1, sizeof *entry);
    if (!entry) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    entry->family = strdup(family);
    entry->options = strdup(options);
    if (!entry->family || !entry->options) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    TRY(clnet_kernel_source(family, d->env->kernel_dir, &source));
    clnet_count_build();
    TRY(clnet_program_build(d, family, source, options, &entry->program));
    entry->next = d->programs;
    d->programs = entry;
    *out = entry;
    entry = NULL;
cleanup:
    if (entry) {
        free(entry->family);
        free(entry->options);
        free(entry);
    }
    free(source);
    return status;
}

clnet_status clnet_kernel_get(clnet_device *d, const char *family, const char *options,
                              const char *name, cl_kernel *out) {
    clnet_status status = CLNET_OK;
    cl_int err = CL_SUCCESS;
    clnet_kernel_entry *k = NULL;
    if (!options) options = "";
    clnet_count_lookup();
    pthread_mutex_lock(&d->lock);
    const char *program = clnet_program_of(family, options);
    clnet_program *p = find_program(d, program, options);
    if (!p) TRY(add_program(d, program, options, &p));
    for (k = p->kernels; k; k = k->next)
        if (strcmp(k->name, name) == 0) break;
    if (!k) {
        k = clnet_calloc(1, sizeof *k);
        if (!k || !(k->name = strdup(name))) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
        k->kernel = clCreateKernel(p->program, name, &err);
        if (err != CL_SUCCESS) {
            status = clnet_fail_cl_at(err, "clCreateKernel", __FILE__, __LINE__);
            clnet_error_context(status, "kernel '%s' of '%s.cl' on device %d (%s)", name, family,
                                d->info.index, d->info.name);
            goto cleanup;
        }
        k->next = p->kernels;
        p->kernels = k;
    }
    *out = k->kernel;
    k = NULL;
cleanup:
    if (k) { /* only a kernel that failed to be made is still held here */
        free(k->name);
        free(k);
    }
    pthread_mutex_unlock(&d->lock);
    return status;
}

clnet_status clnet_launch_1d(clnet_device *d, cl_kernel k, size_t n, size_t local) {
    clnet_status status = CLNET_OK;
    if (n == 0) return CLNET_OK;
    size_t global = local ? (n + local - 1) / local * local : n;
    CL_CHECK(
        clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, local ? &local : NULL, 0, NULL, NULL),
        "clEnqueueNDRangeKernel");
cleanup:
    return status;
}

/* ---- CLNET_PROFILE=1: time every kernel (waiting for each), print at exit ---- */

typedef struct {
    char name[96];
    double seconds;
    long calls;
} profile_entry;
static profile_entry profile[64];
static int profile_count;
static pthread_once_t profile_once = PTHREAD_ONCE_INIT;          /* the table is printed at exit */
static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the table */

static void profile_print(void) {
    double total = 0;
    for (int i = 0; i < profile_count; i++) total += profile[i].seconds;
    clnet_counters c;
    clnet_debug_counters(&c);
    fprintf(stderr,
            "clnet kernel profile (CLNET_PROFILE=1): the host waited for a device %llu times "
            "(blocking transfers, maps and finishes, the profile's own left out); %llu batch norm "
            "exchanges ran other layers' work meanwhile\n",
            (unsigned long long)c.waits, (unsigned long long)c.overlaps);
    for (int i = 0; i < profile_count; i++)
        fprintf(stderr, "  %-20s %8ld calls %10.3f s %5.1f%%\n", profile[i].name, profile[i].calls,
                profile[i].seconds, 100 * profile[i].seconds / (total > 0 ? total : 1));
}

static void profile_at_exit(void) {
    atexit(profile_print);
}

clnet_status clnet_profile_begin(clnet_device *d, double *began) {
    clnet_status status = CLNET_OK;
    *began = 0;
    if (!d->env->profile) return CLNET_OK; /* CLNET_PROFILE, read with the runtime */
    pthread_once(&profile_once, profile_at_exit);
    CL_CHECK(clFinish(d->queue), "clFinish"); /* the profile's own: not counted */
    *began = clnet_now();
cleanup:
    return status;
}

clnet_status clnet_profile_end(clnet_device *d, const char *name, double began) {
    clnet_status status = CLNET_OK;
    if (began == 0) return CLNET_OK;
    CL_CHECK(clFinish(d->queue), "clFinish");
    double t = clnet_now() - began;
    pthread_mutex_lock(&profile_lock);
    int i = 0;
    while (i < profile_count && strcmp(profile[i].name, name) != 0) i++;
    if (i == profile_count && profile_count < 64)
        snprintf(profile[profile_count++].name, sizeof profile[0].name, "%s", name);
    if (i < profile_count) {
        profile[i].seconds += t;
        profile[i].calls++;
    }
    pthread_mutex_unlock(&profile_lock);
cleanup:
    return status;
}

/* ---- first launches: a kernel at a work-group size the device has not run it at ---- */

struct clnet_launched {
    cl_kernel kernel; /* NULL: a free slot */
    size_t local[3];  /* 0s: the driver's choice */
};

static size_t launched_slot(const struct clnet_launched *t, size_t cap, cl_kernel k,
                            const size_t *local) {
    uintptr_t h = (uintptr_t)k * 2654435761u ^ local[0] * 40503u ^ local[1] * 97u ^ local[2];
    size_t i = h & (cap - 1);
    while (t[i].kernel && !(t[i].kernel == k && memcmp(t[i].local, local, sizeof t[i].local) == 0))
        i = (i + 1) & (cap - 1);
    return i;
}

static void launch_key(int dims, const size_t *local, size_t key[3]) {
    key[0] = key[1] = key[2] = 0;
    for (int i = 0; local && i < dims; i++) key[i] = local[i];
}

/* Whether k has run on d at that work-group size. */
static int launched_before(const clnet_device *d, cl_kernel k, int dims, const size_t *local) {
    size_t key[3];
    launch_key(dims, local, key);
    return d->launched && d->launched[launched_slot(d->launched, d->launched_cap, k, key)].kernel;
}

/* Counts a launch that was not launched_before (clnet_count_first_launch). A
 * table that cannot grow only stops counting. */
static void note_launch(clnet_device *d, cl_kernel k, int dims, const size_t *local) {
    size_t key[3];
    launch_key(dims, local, key);
    if (2 * (d->launched_count + 1) > d->launched_cap) { /* grow to keep probes short */
        size_t cap = d->launched_cap ? 2 * d->launched_cap : 256;
        struct clnet_launched *t = clnet_calloc(cap, sizeof *t);
        if (!t) return;
        for (size_t i = 0; i < d->launched_cap; i++)
            if (d->launched[i].kernel)
                t[launched_slot(t, cap, d->launched[i].kernel, d->launched[i].local)] =
                    d->launched[i];
        free(d->launched);
        d->launched = t, d->launched_cap = cap;
    }
    size_t i = launched_slot(d->launched, d->launched_cap, k, key);
    d->launched[i].kernel = k;
    memcpy(d->launched[i].local, key, sizeof key);
    d->launched_count++;
    clnet_count_first_launch();
}

const size_t *clnet_rows_local(const clnet_device *d, int dims, const size_t *global,
                               size_t shape[3]) {
    if (d->info.type != CLNET_DEVICE_CPU || dims < 2) return NULL;
    shape[0] = global[0] <= 256 ? global[0] : 64;
    shape[1] = 256 / shape[0] < global[1] ? 256 / shape[0] : global[1];
    if (shape[1] < 1) shape[1] = 1;
    shape[2] = 1;
    return shape;
}

clnet_status clnet_run(clnet_device *d, clnet_kernel_ref kr, int dims, const size_t *global,
                       const size_t *local, const clnet_arg *args, int nargs) {
    cl_kernel k = NULL;
    return clnet_run_kept(d, &k, kr, dims, global, local, args, nargs);
}

/* Guarded runs (CLNET_GUARD=1) check that a kept kernel is the one asked
 * for, by name and program (its family built with its options): two kernels
 * given one slot of a node (clnet_pass_kept) would otherwise run the first
 * one's code with the second one's arguments, or its build options. */
static clnet_status check_kept(clnet_device *d, cl_kernel k, clnet_kernel_ref kr) {
    clnet_status status = CLNET_OK;
    char kept[128] = "";
    cl_program program = NULL;
    const char *options = kr.options ? kr.options : "";
    CL_CHECK(clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof kept - 1, kept, NULL),
             "clGetKernelInfo");
    if (strcmp(kept, kr.name) != 0)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "kernel slot taken twice: it holds '%s', asked for '%s'",
             kept, kr.name);
    CL_CHECK(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof program, &program, NULL),
             "clGetKernelInfo");
    pthread_mutex_lock(&d->lock);
    const clnet_program *p = find_program(d, clnet_program_of(kr.family, options), options);
    int same = p && p->program == program;
    pthread_mutex_unlock(&d->lock);
    if (!same)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "kernel slot taken twice: its '%s' is of another program than '%s' built with '%s'",
             kr.name, kr.family, options);
cleanup:
    return status;
}

clnet_status clnet_run_kept(clnet_device *d, cl_kernel *kept, clnet_kernel_ref kr, int dims,
                            const size_t *global, const size_t *local, const clnet_arg *args,
                            int nargs) {
    clnet_status status = CLNET_OK;
    const char *family = kr.family, *name = kr.name;
    cl_kernel k = NULL;
    size_t rounded[3] = {1, 1, 1}, shape[3] = {1, 1, 1};
    if (!local && d->cpu_driver) {
        /* CPU drivers run a work-group as a loop and compile one for every
         * work-group size they meet (PoCL: about 0.1-0.4 s each time), so
         * each kernel gets one size whatever the layer and the batch: 64
         * for 1-D ranges, 32x4 for more (of 16x4, 32x4, 32x8 and 64x4, the
         * fastest for LeNet's convolution permutes on the EPYC VM, as fast
         * as whole rows). Left to themselves, drivers pick sizes that change
         * with the global size, and tiny groups for small multi-dimensional
         * ranges. */
        shape[0] = dims == 1 ? 64 : 32;
        shape[1] = dims == 1 ? 1 : 4;
        local = shape;
    }
    for (int i = 0; i < dims; i++) {
        if (global[i] == 0) return CLNET_OK; /* nothing to do */
        rounded[i] = local ? (global[i] + local[i] - 1) / local[i] * local[i] : global[i];
    }
    if (!*kept)
        TRY(clnet_kernel_get(d, family, kr.options, name, kept));
    else if (clnet_guard_on(d))
        TRY(check_kept(d, *kept, kr));
    k = *kept;
    for (int i = 0; i < nargs; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS) {
            status = clnet_fail_cl_at(err, "clSetKernelArg", __FILE__, __LINE__);
            clnet_error_context(status, "kernel '%s' argument %d", name, i);
            goto cleanup;
        }
    }
    int first = !launched_before(d, k, dims, local);
    double began = 0, first_began = 0;
    if (first && clnet_startup_on(d)) { /* timed alone: what the driver compiles for it */
        CL_CHECK(clnet_finish(d), "clFinish");
        first_began = clnet_now();
    }
    TRY(clnet_profile_begin(d, &began));
    cl_int err =
        clEnqueueNDRangeKernel(d->queue, k, (cl_uint)dims, NULL, rounded, local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        status = clnet_fail_cl_at(err, "clEnqueueNDRangeKernel", __FILE__, __LINE__);
        clnet_error_context(status, "kernel '%s' of '%s.cl' on device %d (%s)", name, family,
                            d->info.index, d->info.name);
        goto cleanup;
    }
    clnet_count_launch();
    if (first) {
        note_launch(d, k, dims, local);
        clnet_kernel_log(d, family, kr.options, name, dims, local);
    }
    if (first_began != 0) {
        CL_CHECK(clnet_finish(d), "clFinish");
        clnet_startup_launch(d, family, name, dims, local, clnet_now() - first_began);
    }
    TRY(clnet_profile_end(d, name, began));
cleanup:
    return status;
}
