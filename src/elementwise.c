/* Host side of cl/elementwise.cl. */
#include "elementwise.h"
#include "error.h"
#include "memory.h"
#include "program.h"

#include <limits.h>

#define FAMILY     "elementwise"
#define WORK_GROUP 64
/* Partial sums of the first reduction pass; the second pass adds them. */
#define SUM_GROUPS    64
#define SUM_LOCAL_MAX 256

static clnet_status check_range(const char *op, size_t off, size_t n) {
    if (off > UINT_MAX || n > UINT_MAX || off + n > UINT_MAX)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s: range [%zu, %zu) is beyond 2^32 elements", op, off, off + n);
    return CLNET_OK;
}

#define ARG(k, i, v) CL_CHECK(clSetKernelArg((k), (i), sizeof(v), &(v)), "clSetKernelArg")

clnet_status clnet_fill(clnet_device *d, cl_mem x, size_t xoff, size_t n, float value) {
    clnet_status status = CLNET_OK;
    cl_kernel k = NULL;
    cl_uint off = (cl_uint)xoff, count = (cl_uint)n;
    TRY(check_range("fill", xoff, n));
    TRY(clnet_kernel_get(d, FAMILY, "", "fill", &k));
    ARG(k, 0, x);
    ARG(k, 1, off);
    ARG(k, 2, count);
    ARG(k, 3, value);
    TRY(clnet_launch_1d(d, k, n, WORK_GROUP));
cleanup:
    return status;
}

clnet_status clnet_scale(clnet_device *d, cl_mem x, size_t xoff, size_t n, float alpha) {
    clnet_status status = CLNET_OK;
    cl_kernel k = NULL;
    cl_uint off = (cl_uint)xoff, count = (cl_uint)n;
    TRY(check_range("scale", xoff, n));
    TRY(clnet_kernel_get(d, FAMILY, "", "scale", &k));
    ARG(k, 0, x);
    ARG(k, 1, off);
    ARG(k, 2, count);
    ARG(k, 3, alpha);
    TRY(clnet_launch_1d(d, k, n, WORK_GROUP));
cleanup:
    return status;
}

clnet_status clnet_axpy(clnet_device *d, size_t n, float alpha, cl_mem x, size_t xoff, cl_mem y,
                        size_t yoff) {
    clnet_status status = CLNET_OK;
    cl_kernel k = NULL;
    cl_uint count = (cl_uint)n, xo = (cl_uint)xoff, yo = (cl_uint)yoff;
    TRY(check_range("axpy", xoff, n));
    TRY(check_range("axpy", yoff, n));
    TRY(clnet_kernel_get(d, FAMILY, "", "axpy", &k));
    ARG(k, 0, count);
    ARG(k, 1, alpha);
    ARG(k, 2, x);
    ARG(k, 3, xo);
    ARG(k, 4, y);
    ARG(k, 5, yo);
    TRY(clnet_launch_1d(d, k, n, WORK_GROUP));
cleanup:
    return status;
}

/* The largest power of two that the kernel and SUM_LOCAL_MAX allow. */
static clnet_status reduction_local_size(clnet_device *d, cl_kernel k, size_t *out) {
    clnet_status status = CLNET_OK;
    size_t limit = 0;
    CL_CHECK(
        clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof limit, &limit, NULL),
        "clGetKernelWorkGroupInfo");
    size_t local = 1;
    while (local * 2 <= limit && local * 2 <= SUM_LOCAL_MAX)
        local *= 2;
    *out = local;
cleanup:
    return status;
}

static clnet_status sum_pass(clnet_device *d, cl_kernel k, cl_mem x, cl_uint xoff, cl_uint n,
                             cl_uint outoff, size_t groups, size_t local) {
    clnet_status status = CLNET_OK;
    size_t global = groups * local;
    ARG(k, 0, x);
    ARG(k, 1, xoff);
    ARG(k, 2, n);
    ARG(k, 3, d->scratch);
    ARG(k, 4, outoff);
    CL_CHECK(clSetKernelArg(k, 5, local * sizeof(float), NULL), "clSetKernelArg");
    CL_CHECK(clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL),
             "clEnqueueNDRangeKernel");
cleanup:
    return status;
}

clnet_status clnet_sum(clnet_device *d, cl_mem x, size_t xoff, size_t n, float *out) {
    clnet_status status = CLNET_OK;
    cl_kernel k = NULL;
    size_t local = 1;
    TRY(check_range("sum", xoff, n));
    TRY(clnet_kernel_get(d, FAMILY, "", "sum_partial", &k));
    TRY(reduction_local_size(d, k, &local));
    if (!d->scratch) TRY(clnet_buffer_create(d, (SUM_GROUPS + 1) * sizeof(float), &d->scratch));
    size_t groups = (n + local - 1) / local;
    if (groups > SUM_GROUPS) groups = SUM_GROUPS;
    if (groups == 0) groups = 1;
    TRY(sum_pass(d, k, x, (cl_uint)xoff, (cl_uint)n, 0, groups, local));
    TRY(sum_pass(d, k, d->scratch, 0, (cl_uint)groups, SUM_GROUPS, 1, local));
    TRY(clnet_buffer_read(d, d->scratch, SUM_GROUPS, 1, out));
cleanup:
    return status;
}

clnet_status clnet_row_sums(clnet_device *d, size_t M, size_t N, cl_mem X, size_t xoff, cl_mem out,
                            size_t ooff, float beta) {
    clnet_status status = CLNET_OK;
    cl_kernel k = NULL;
    size_t local = 1;
    TRY(clnet_kernel_get(d, FAMILY, "", "row_sums", &k));
    TRY(reduction_local_size(d, k, &local));
    TRY(clnet_run(d, FAMILY, "", "row_sums", 1, (size_t[]){M * local}, (size_t[]){local},
                  ARGS(U32(M), U32(N), MEM(X), U32(xoff), MEM(out), U32(ooff), F32(beta),
                       LOCAL(local * sizeof(float)))));
cleanup:
    return status;
}

clnet_status clnet_col_sums(clnet_device *d, size_t M, size_t N, cl_mem X, size_t xoff, cl_mem out,
                            size_t ooff, float beta) {
    return clnet_run(d, FAMILY, "", "col_sums", 1, (size_t[]){N}, NULL,
                     ARGS(U32(M), U32(N), MEM(X), U32(xoff), MEM(out), U32(ooff), F32(beta)));
}
