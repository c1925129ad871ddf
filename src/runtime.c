/* Device discovery, the device selection spec, and one context + queue per
 * selected device. */
#include "alloc.h"
#include "clock.h"
#include "device.h"
#include "elementwise.h"
#include "env.h"
#include "error.h"
#include "gemm.h"
#include "memory.h"
#include "startup.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A device as discovery found it, before it is opened. */
typedef struct {
    cl_platform_id platform;
    cl_device_id id;
    char platform_name[128];
    clnet_device_type type;
    int selected;
} candidate;

typedef struct {
    cl_platform_id id;
    char name[128];
    char vendor[128];
    char version[128];
    int order; /* the loader's order, to break ties */
} platform_entry;

static void platform_string(cl_platform_id p, cl_platform_info what, char *out, size_t cap) {
    out[0] = '\0';
    if (clGetPlatformInfo(p, what, cap, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
}

static void device_string(cl_device_id d, cl_device_info what, char *out, size_t cap) {
    out[0] = '\0';
    if (clGetDeviceInfo(d, what, cap, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
    /* Some drivers pad names with spaces. */
    size_t n = strlen(out);
    while (n > 0 && isspace((unsigned char)out[n - 1])) out[--n] = '\0';
}

static int compare_platforms(const void *a, const void *b) {
    const platform_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (!c) c = strcmp(x->vendor, y->vendor);
    if (!c) c = strcmp(x->version, y->version);
    if (!c) c = x->order - y->order;
    return c;
}

/* A device's one kind. A device that claims several (the Oclgrind simulator
 * says it is a CPU, a GPU and an accelerator) is "other", so that `gpu` and
 * `cpu` select only real devices of that kind. */
static clnet_device_type classify(cl_device_type t) {
    const cl_device_type kinds =
        CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR;
    switch (t & kinds) {
    case CL_DEVICE_TYPE_CPU:
        return CLNET_DEVICE_CPU;
    case CL_DEVICE_TYPE_GPU:
        return CLNET_DEVICE_GPU;
    case CL_DEVICE_TYPE_ACCELERATOR:
        return CLNET_DEVICE_ACCELERATOR;
    default:
        return CLNET_DEVICE_OTHER;
    }
}

/* Lists every device of every platform, platforms sorted by name. */
static clnet_status discover(candidate **out, int *out_count) {
    clnet_status status = CLNET_OK;
    cl_uint nplat = 0;
    cl_platform_id *ids = NULL;
    platform_entry *plats = NULL;
    candidate *cands = NULL;
    cl_device_id *devs = NULL;
    int count = 0;

    cl_int err = clGetPlatformIDs(0, NULL, &nplat);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && nplat == 0))
        FAIL(CLNET_ERR_NO_PLATFORM,
             "no OpenCL platform found: the ICD loader lists no driver (clGetPlatformIDs "
             "returned %s). Install one (for the CPU: apt-get install pocl-opencl-icd) or check "
             "OCL_ICD_VENDORS",
             clnet_cl_error_name(err == CL_SUCCESS ? CL_PLATFORM_NOT_FOUND_KHR : err));
    CL_CHECK(err, "clGetPlatformIDs");
    ids = clnet_calloc(nplat, sizeof *ids);
    plats = clnet_calloc(nplat, sizeof *plats);
    if (!ids || !plats) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory listing platforms");
    CL_CHECK(clGetPlatformIDs(nplat, ids, NULL), "clGetPlatformIDs");
    for (cl_uint p = 0; p < nplat; p++) {
        plats[p].id = ids[p];
        plats[p].order = (int)p;
        platform_string(ids[p], CL_PLATFORM_NAME, plats[p].name, sizeof plats[p].name);
        platform_string(ids[p], CL_PLATFORM_VENDOR, plats[p].vendor, sizeof plats[p].vendor);
        platform_string(ids[p], CL_PLATFORM_VERSION, plats[p].version, sizeof plats[p].version);
    }
    qsort(plats, nplat, sizeof *plats, compare_platforms);

    for (cl_uint p = 0; p < nplat; p++) {
        cl_uint ndev = 0;
        err = clGetDeviceIDs(plats[p].id, CL_DEVICE_TYPE_ALL, 0, NULL, &ndev);
        if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && ndev == 0)) continue;
        if (err != CL_SUCCESS) {
            clnet_warn("skipping OpenCL platform '%s': clGetDeviceIDs failed: %s (%d)",
                       plats[p].name, clnet_cl_error_name(err), err);
            continue;
        }
        free(devs);
        devs = clnet_calloc(ndev, sizeof *devs);
        candidate *grown = clnet_realloc(cands, (size_t)(count + (int)ndev) * sizeof *cands);
        if (!devs || !grown) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory listing devices");
        cands = grown;
        err = clGetDeviceIDs(plats[p].id, CL_DEVICE_TYPE_ALL, ndev, devs, NULL);
        if (err != CL_SUCCESS) {
            clnet_warn("skipping OpenCL platform '%s': clGetDeviceIDs failed: %s (%d)",
                       plats[p].name, clnet_cl_error_name(err), err);
            continue;
        }
        for (cl_uint d = 0; d < ndev; d++) {
            candidate *c = &cands[count++];
            memset(c, 0, sizeof *c);
            c->platform = plats[p].id;
            c->id = devs[d];
            snprintf(c->platform_name, sizeof c->platform_name, "%s", plats[p].name);
            cl_device_type type = 0;
            if (clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL)) type = 0;
            c->type = classify(type);
        }
    }
    if (count == 0)
        FAIL(CLNET_ERR_NO_DEVICE, "no OpenCL device found: %u platform(s), none with a device",
             nplat);
    *out = cands;
    *out_count = count;
    cands = NULL;
cleanup:
    free(ids);
    free(plats);
    free(devs);
    free(cands);
    return status;
}

const char *clnet_device_type_name(clnet_device_type t) {
    switch (t) {
    case CLNET_DEVICE_CPU:
        return "cpu";
    case CLNET_DEVICE_GPU:
        return "gpu";
    case CLNET_DEVICE_ACCELERATOR:
        return "accelerator";
    default:
        return "other";
    }
}

/* Lists what there is, for error messages: "0 cpu (Portable ...), 1 ...". */
static void describe_candidates(const candidate *c, int n, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used + 1 < cap; i++) {
        int w = snprintf(out + used, cap - used, "%s%d: %s on '%s'", i ? ", " : "", i,
                         clnet_device_type_name(c[i].type), c[i].platform_name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

static int contains_ignoring_case(const char *haystack, const char *needle) {
    size_t n = strlen(needle);
    for (const char *h = haystack; *h; h++)
        if (strncasecmp(h, needle, n) == 0) return 1;
    return n == 0;
}

/* "local-rank": the ranks that share this machine take its devices in
 * turn (rank l of L gets devices l, l + L, ...), so no two drive one. The
 * place of this process among them is its launcher's (env.h: Open MPI's or
 * a PMI launcher's variables), 0 of 1 outside a job. */
static clnet_status select_local_rank(candidate *c, int n, const char *known,
                                      const clnet_env *env) {
    int size = env->local_size, rank = env->local_rank;
    if (rank < 0 || rank >= size || size > n)
        return clnet_fail(CLNET_ERR_NO_DEVICE,
                          "device selection 'local-rank': this is rank %d of %d on this machine, "
                          "and it has %d devices (%s): run at most %d ranks per machine",
                          rank, size, n, known, n);
    for (int i = rank; i < n; i += size) c[i].selected = 1;
    return CLNET_OK;
}

/* Marks the candidates the spec selects. */
/* A comma list of device numbers ("0,2"): each selected once; *matched counts them. */
static clnet_status select_numbers(candidate *c, int n, char *text, const char *known,
                                   int *matched) {
    clnet_status status = CLNET_OK;
    char *p = text;
    for (;;) {
        char *end = NULL;
        long k = strtol(p, &end, 10);
        if (end == p || !isdigit((unsigned char)*p))
            FAIL(CLNET_ERR_BAD_DEVICE_SPEC,
                 "device selection '%s': expected a comma list of device numbers such as 0,2",
                 text);
        while (isspace((unsigned char)*end)) end++;
        if (k < 0 || k >= n)
            FAIL(CLNET_ERR_NO_DEVICE,
                 "device selection '%s': there is no device %ld (devices are %s)", text, k, known);
        if (c[k].selected)
            FAIL(CLNET_ERR_BAD_DEVICE_SPEC, "device selection '%s' names device %ld twice", text,
                 k);
        c[k].selected = 1;
        (*matched)++;
        if (*end == '\0') break;
        if (*end != ',')
            FAIL(CLNET_ERR_BAD_DEVICE_SPEC,
                 "device selection '%s': expected a comma list of device numbers such as 0,2",
                 text);
        p = end + 1;
        while (isspace((unsigned char)*p)) p++;
    }
cleanup:
    return status;
}

static clnet_status select_devices(candidate *c, int n, const char *spec, const clnet_env *env) {
    clnet_status status = CLNET_OK;
    char known[2048];
    describe_candidates(c, n, known, sizeof known);
    while (isspace((unsigned char)*spec)) spec++;
    size_t len = strlen(spec);
    while (len > 0 && isspace((unsigned char)spec[len - 1])) len--;
    char text[512];
    if (len >= sizeof text) FAIL(CLNET_ERR_BAD_DEVICE_SPEC, "device selection is too long");
    memcpy(text, spec, len);
    text[len] = '\0';

    int matched = 0;
    if (len == 0 || strcasecmp(text, "all") == 0) {
        for (int i = 0; i < n; i++) c[i].selected = 1;
        matched = n;
    } else if (strcasecmp(text, "local-rank") == 0) {
        TRY(select_local_rank(c, n, known, env));
        matched = 1;
    } else if (strcasecmp(text, "gpu") == 0 || strcasecmp(text, "cpu") == 0) {
        clnet_device_type want = strcasecmp(text, "gpu") == 0 ? CLNET_DEVICE_GPU : CLNET_DEVICE_CPU;
        for (int i = 0; i < n; i++)
            if (c[i].type == want) c[i].selected = 1, matched++;
    } else if (strncasecmp(text, "platform=", 9) == 0) {
        const char *want = text + 9;
        if (!*want)
            FAIL(CLNET_ERR_BAD_DEVICE_SPEC,
                 "device selection 'platform=' needs a name, e.g. platform=pocl");
        for (int i = 0; i < n; i++)
            if (contains_ignoring_case(c[i].platform_name, want)) c[i].selected = 1, matched++;
    } else if (isdigit((unsigned char)text[0])) {
        TRY(select_numbers(c, n, text, known, &matched));
    } else {
        FAIL(CLNET_ERR_BAD_DEVICE_SPEC,
             "unknown device selection '%s': expected all, gpu, cpu, a comma list of device "
             "numbers (e.g. 0,2), platform=NAME or local-rank",
             text);
    }
    if (matched == 0)
        FAIL(CLNET_ERR_NO_DEVICE, "device selection '%s' matches no device (devices are %s)", text,
             known);
cleanup:
    return status;
}

static void query_info(const candidate *c, int index, clnet_device_info *info) {
    memset(info, 0, sizeof *info);
    info->index = index;
    platform_string(c->platform, CL_PLATFORM_NAME, info->platform_name, sizeof info->platform_name);
    platform_string(c->platform, CL_PLATFORM_VENDOR, info->platform_vendor,
                    sizeof info->platform_vendor);
    platform_string(c->platform, CL_PLATFORM_VERSION, info->platform_version,
                    sizeof info->platform_version);
    device_string(c->id, CL_DEVICE_NAME, info->name, sizeof info->name);
    device_string(c->id, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    device_string(c->id, CL_DEVICE_OPENCL_C_VERSION, info->opencl_c_version,
                  sizeof info->opencl_c_version);
    device_string(c->id, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
    device_string(c->id, CL_DEVICE_VERSION, info->device_version, sizeof info->device_version);
    info->type = c->type;
    cl_uint u = 0;
    cl_ulong ul = 0;
    cl_bool b = CL_FALSE;
    size_t z = 0;
    if (!clGetDeviceInfo(c->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL))
        info->compute_units = u;
    if (!clGetDeviceInfo(c->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL))
        info->global_mem_bytes = ul;
    if (!clGetDeviceInfo(c->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ul, &ul, NULL))
        info->max_alloc_bytes = ul;
    if (!clGetDeviceInfo(c->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL))
        info->local_mem_bytes = ul;
    if (!clGetDeviceInfo(c->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof z, &z, NULL))
        info->max_work_group_size = z;
    if (!clGetDeviceInfo(c->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof b, &b, NULL))
        info->host_unified_memory = b == CL_TRUE;
    cl_device_fp_config fp = 0;
    if (!clGetDeviceInfo(c->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL))
        info->fp64 = fp != 0;
    char ext[8192];
    device_string(c->id, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    info->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    if (strstr(ext, "cl_khr_fp64")) info->fp64 = 1;
}

/* $CLNET_CONV: the convolution algorithms forced on every layer, or auto. */
static clnet_status read_conv_force(clnet_device *d) {
    clnet_status status = clnet_chooser_force_conv(&d->choice, d->env->conv, "CLNET_CONV");
    if (status == CLNET_OK)
        status = clnet_chooser_force_tile(&d->choice, d->env->conv_tile, "CLNET_CONV_TILE");
    return status;
}

clnet_status clnet_runtime_set_conv(clnet_runtime *rt, const char *plan) {
    clnet_chooser check = {0};
    if (!rt) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_runtime_set_conv: no runtime");
    clnet_status status = clnet_chooser_force_conv(&check, plan, "clnet_runtime_set_conv");
    for (int i = 0; status == CLNET_OK && i < rt->count; i++) {
        rt->devices[i].choice.conv_force = check.conv_force;
        clnet_gemm_forget(&rt->devices[i]); /* the replicas fit their scratch again */
    }
    return status;
}

/* $CLNET_POSE=gpu (a test hook): d's facts as a discrete GPU's, so that the
 * rules, tiles and work-groups are a GPU's and PoCL runs them. Its name
 * says so: its tuning and cache entries are not the real device's. */
#define POSE_LOCAL_BYTES 49152 /* NVIDIA's static local memory, the least of the GPUs */
#define POSE_GROUP_MOST  1024
static clnet_status pose(clnet_device *d) {
    if (strcasecmp(d->env->pose, "gpu") != 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "CLNET_POSE='%s': expected gpu",
                          d->env->pose);
    clnet_device_info *info = &d->info;
    info->type = CLNET_DEVICE_GPU;
    d->vector_cpu = 0;
    d->zero_copy = info->host_unified_memory = 0;
    if (info->local_mem_bytes > POSE_LOCAL_BYTES) info->local_mem_bytes = POSE_LOCAL_BYTES;
    if (info->max_work_group_size > POSE_GROUP_MOST) info->max_work_group_size = POSE_GROUP_MOST;
    size_t len = strlen(info->name);
    snprintf(info->name + len, sizeof info->name - len, " (posing as a GPU)");
    return CLNET_OK;
}

static clnet_status open_device(clnet_device *d, const candidate *c, int index,
                                const clnet_cache_config *cache) {
    clnet_status status = CLNET_OK;
    cl_int err = CL_SUCCESS;
    query_info(c, index, &d->info);
    d->platform = c->platform;
    d->id = c->id;
    d->zero_copy = d->info.host_unified_memory;
    d->cpu_driver = d->info.type == CLNET_DEVICE_CPU;
    cl_uint width = 0;
    if (d->info.type == CLNET_DEVICE_CPU &&
        clGetDeviceInfo(c->id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof width, &width,
                        NULL) == CL_SUCCESS &&
        width >= 4)
        d->vector_cpu = width >= 16 ? 16 : 8;
    if (d->env->pose && *d->env->pose) TRY(pose(d));
    d->cache = cache;
    TRY(clnet_gemm_open(d));
    TRY(read_conv_force(d));
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)c->platform, 0};
    d->context = clCreateContext(props, 1, &c->id, NULL, NULL, &err);
    CL_CHECK(err, "clCreateContext");
    d->queue = clCreateCommandQueue(d->context, c->id, 0, &err);
    CL_CHECK(err, "clCreateCommandQueue");
cleanup:
    if (status != CLNET_OK)
        clnet_error_context(status, "opening device %d (%s on '%s')", index, d->info.name,
                            d->info.platform_name);
    return status;
}

static void close_device(clnet_device *d) {
    for (clnet_program *p = d->programs; p;) {
        clnet_program *next = p->next;
        for (clnet_kernel_entry *k = p->kernels; k;) {
            clnet_kernel_entry *kn = k->next;
            clReleaseKernel(k->kernel);
            free(k->name);
            free(k);
            k = kn;
        }
        if (p->program) clReleaseProgram(p->program);
        free(p->family);
        free(p->options);
        free(p);
        p = next;
    }
    clnet_chooser_free(&d->choice);
    free(d->launched);
    if (d->scratch) clReleaseMemObject(d->scratch);
    if (d->queue) clReleaseCommandQueue(d->queue);
    if (d->context) clReleaseContext(d->context);
    pthread_mutex_destroy(&d->lock);
}

static void cache_config_from_env(clnet_cache_config *cfg, const clnet_env *env) {
    const char *off = env->cache;
    const char *dir = env->cache_dir;
    const char *xdg = env->xdg_cache_home;
    const char *home = env->home;
    cfg->enabled = 1;
    cfg->store_all = off && strcasecmp(off, "all") == 0;
    if (off && (strcasecmp(off, "off") == 0 || strcmp(off, "0") == 0)) cfg->enabled = 0;
    if (dir && *dir)
        snprintf(cfg->dir, sizeof cfg->dir, "%s", dir);
    else if (xdg && *xdg)
        snprintf(cfg->dir, sizeof cfg->dir, "%s/clnet", xdg);
    else if (home && *home)
        snprintf(cfg->dir, sizeof cfg->dir, "%s/.cache/clnet", home);
    else
        cfg->enabled = 0;
}

clnet_status clnet_runtime_create(clnet_runtime **out, const char *device_spec) {
    clnet_status status = CLNET_OK;
    candidate *cands = NULL;
    int ncand = 0;
    clnet_runtime *rt = NULL;
    clnet_env env = {0};
    if (!out) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_runtime_create: out is NULL");
    *out = NULL;
    TRY(clnet_env_read(&env));
    if (!device_spec) device_spec = env.devices;
    if (!device_spec || !*device_spec) device_spec = "all";

    double began = clnet_now();
    TRY(discover(&cands, &ncand));
    if (env.pose && strcasecmp(env.pose, "gpu") == 0) /* `gpu` selects them (open_device: pose) */
        for (int i = 0; i < ncand; i++) cands[i].type = CLNET_DEVICE_GPU;
    TRY(select_devices(cands, ncand, device_spec, &env));
    rt = clnet_calloc(1, sizeof *rt);
    if (!rt) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory creating the runtime");
    rt->env = env; /* the runtime owns the snapshot now (device_spec may point into it) */
    memset(&env, 0, sizeof env);
    cache_config_from_env(&rt->cache, &rt->env);
    for (int i = 0; i < ncand; i++) rt->count += cands[i].selected;
    rt->devices = clnet_calloc((size_t)rt->count, sizeof *rt->devices);
    if (!rt->devices) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory creating the runtime");
    int opened = 0;
    for (int i = 0; i < ncand; i++) {
        if (!cands[i].selected) continue;
        clnet_device *d = &rt->devices[opened++];
        pthread_mutex_init(&d->lock, NULL);
        for (int j = 0; j < i; j++) d->platform_index += cands[j].platform == cands[i].platform;
        d->env = &rt->env;
        TRY(open_device(d, &cands[i], i, &rt->cache));
    }
    clnet_startup_devices(&rt->env, rt->count, clnet_now() - began);
    *out = rt;
    rt = NULL;
cleanup:
    clnet_runtime_free(rt);
    clnet_env_free(&env);
    free(cands);
    return status;
}

int clnet_runtime_device_count(const clnet_runtime *rt) {
    return rt ? rt->count : 0;
}

clnet_device *clnet_runtime_device(clnet_runtime *rt, int i) {
    if (!rt) {
        clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "runtime is NULL");
        return NULL;
    }
    if (i < 0 || i >= rt->count) {
        clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "device %d is not selected (%d device%s selected)",
                   i, rt->count, rt->count == 1 ? "" : "s");
        return NULL;
    }
    return &rt->devices[i];
}

clnet_status clnet_runtime_device_info(const clnet_runtime *rt, int i, clnet_device_info *out) {
    if (!out)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_runtime_device_info: out is NULL");
    clnet_device *d = clnet_runtime_device((clnet_runtime *)rt, i);
    if (!d) return CLNET_ERR_INVALID_ARGUMENT;
    *out = d->info;
    return CLNET_OK;
}

/* Uploads a pattern, runs fill, axpy, scale and sum on it, and compares the
 * result with the same arithmetic done on the host. */
clnet_status clnet_runtime_device_check(clnet_runtime *rt, int i) {
    clnet_status status = CLNET_OK;
    enum { N = 1000 };
    float host[N], back[N];
    cl_mem x = NULL, y = NULL;
    clnet_device *d = clnet_runtime_device(rt, i);
    if (!d) return CLNET_ERR_INVALID_ARGUMENT;

    for (int k = 0; k < N; k++) host[k] = (float)(k % 7) - 3.0f;
    TRY(clnet_buffer_create(d, N * sizeof(float), &x));
    TRY(clnet_buffer_create(d, N * sizeof(float), &y));
    TRY(clnet_buffer_write(d, x, 0, N, host));
    TRY(clnet_fill(d, y, 0, N, 0.5f));
    TRY(clnet_axpy(d, N, 2.0f, x, 0, y, 0)); /* y = 0.5 + 2x */
    TRY(clnet_scale(d, y, 0, N, 0.25f));     /* y = 0.125 + 0.5x */
    TRY(clnet_buffer_read(d, y, 0, N, back));
    double want_sum = 0;
    for (int k = 0; k < N; k++) {
        float want = 0.125f + 0.5f * host[k];
        if (fabsf(back[k] - want) > 1e-6f)
            FAIL(CLNET_ERR_WRONG_RESULT, "element %d is %g, expected %g", k, back[k], want);
        want_sum += want;
    }
    float sum = 0;
    TRY(clnet_sum(d, y, 0, N, &sum));
    if (fabs(sum - want_sum) > 1e-3)
        FAIL(CLNET_ERR_WRONG_RESULT, "sum is %g, expected %g", sum, want_sum);
cleanup:
    if (x) clReleaseMemObject(x);
    if (y) clReleaseMemObject(y);
    if (status != CLNET_OK)
        clnet_error_context(status, "device %d (%s) check", d->info.index, d->info.name);
    return status;
}

void clnet_runtime_free(clnet_runtime *rt) {
    if (!rt) return;
    for (int i = 0; i < rt->count; i++)
        if (rt->devices[i].context || rt->devices[i].queue) close_device(&rt->devices[i]);
    free(rt->devices);
    clnet_env_free(&rt->env);
    free(rt);
}
