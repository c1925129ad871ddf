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

clnet_status clnet_fill(clnet_device *d, cl_mem x, size_t xoff, size_t n, float value) {
    clnet_status s = check_range("fill", xoff, n);
    if (s != CLNET_OK) return s;
    return clnet_run(d, KERNEL(FAMILY, "", "fill"), 1, (size_t[]){n}, (size_t[]){WORK_GROUP},
                     ARGS(MEM(x), U32(xoff), U32(n), F32(value)));
}

clnet_status clnet_scale(clnet_device *d, cl_mem x, size_t xoff, size_t n, float alpha) {
    clnet_status s = check_range("scale", xoff, n);
    if (s != CLNET_OK) return s;
    return clnet_run(d, KERNEL(FAMILY, "", "scale"), 1, (size_t[]){n}, (size_t[]){WORK_GROUP},
                     ARGS(MEM(x), U32(xoff), U32(n), F32(alpha)));
}

clnet_status clnet_axpy(clnet_device *d, size_t n, float alpha, cl_mem x, size_t xoff, cl_mem y,
                        size_t yoff) {
    clnet_status s = check_range("axpy", xoff, n);
    if (s == CLNET_OK) s = check_range("axpy", yoff, n);
    if (s != CLNET_OK) return s;
    return clnet_run(d, KERNEL(FAMILY, "", "axpy"), 1, (size_t[]){n}, (size_t[]){WORK_GROUP},
                     ARGS(U32(n), F32(alpha), MEM(x), U32(xoff), MEM(y), U32(yoff)));
}

/* The largest power of two that the kernel and SUM_LOCAL_MAX allow. */
static clnet_status reduction_local_size(clnet_device *d, cl_kernel k, size_t *out) {
    clnet_status status = CLNET_OK;
    size_t limit = 0;
    CL_CHECK(
        clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof limit, &limit, NULL),
        "clGetKernelWorkGroupInfo");
    size_t local = 1;
    while (local * 2 <= limit && local * 2 <= SUM_LOCAL_MAX) local *= 2;
    *out = local;
cleanup:
    return status;
}

clnet_status clnet_reduction_local(clnet_device *d, cl_kernel *kept, const char *family,
                                   const char *options, const char *name, size_t *out) {
    cl_kernel k = NULL;
    if (!kept) kept = &k;
    clnet_status s = *kept ? CLNET_OK : clnet_kernel_get(d, family, options, name, kept);
    return s == CLNET_OK ? reduction_local_size(d, *kept, out) : s;
}

/* One reduction pass: `groups` work-groups of `local` over x[xoff, xoff+n),
 * partial sums to scratch[outoff + group]. */
static clnet_status sum_pass(clnet_device *d, cl_mem x, size_t xoff, size_t n, size_t outoff,
                             size_t groups, size_t local) {
    return clnet_run(d, KERNEL(FAMILY, "", "sum_partial"), 1, (size_t[]){groups * local},
                     (size_t[]){local},
                     ARGS(MEM(x), U32(xoff), U32(n), MEM(d->scratch), U32(outoff),
                          LOCAL(local * sizeof(float))));
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
    TRY(sum_pass(d, x, xoff, n, 0, groups, local));
    TRY(sum_pass(d, d->scratch, 0, groups, SUM_GROUPS, 1, local));
    TRY(clnet_buffer_read(d, d->scratch, SUM_GROUPS, 1, out));
cleanup:
    return status;
}

#define ROW_CHUNK 4096 /* floats one work-item of row_sums_partial adds */

static size_t row_chunks(size_t N) {
    return N ? (N + ROW_CHUNK - 1) / ROW_CHUNK : 1;
}

/* Devices other than CPUs add a chunk of a row with a work-group of
 * ROW_LANES work-items (row_sums_partial_lanes): on an H100 a work-item
 * per chunk made the bias gradients a third of a resnet18_w16 step. */
#define ROW_LANES 128 /* as in cl/elementwise.cl */
static int lanes(const clnet_device *d) {
    return d->info.type != CLNET_DEVICE_CPU && d->info.max_work_group_size >= ROW_LANES;
}

/* A row's sum in one launch (a work-item or work-group a row adding its
 * chunks in turn): where the rows alone fill the device's compute units
 * twice, or a row is short enough that a launch more costs more than the
 * chunks' parallelism gains (on GPUs, up to WHOLE_CHUNKS chunks: LeNet's
 * bias gradients at GPU batch sizes). */
#define WHOLE_CHUNKS 8
static int whole_rows(const clnet_device *d, size_t M, size_t chunks) {
    return chunks <= (lanes(d) ? WHOLE_CHUNKS : 1) || M >= 2 * (size_t)d->info.compute_units;
}

size_t clnet_row_sums_floats(size_t M, size_t N) {
    return M * row_chunks(N);
}

clnet_status clnet_row_sums(clnet_device *d, cl_kernel *kept, size_t M, size_t N, clnet_place x,
                            clnet_place out, float beta, clnet_place part) {
    clnet_status status = CLNET_OK;
    cl_kernel k[CLNET_ROW_SUMS_KERNELS] = {NULL};
    if (!kept) kept = k;
    size_t chunks = row_chunks(N), wide = lanes(d) ? ROW_LANES : 1;
    if (whole_rows(d, M, chunks)) /* one launch: a work-group a row */
        return clnet_run_kept(
            d, &kept[2], KERNEL(FAMILY, "", wide > 1 ? "row_sums_whole_lanes" : "row_sums_whole"),
            1, (size_t[]){M * wide}, (size_t[]){wide},
            ARGS(U32(M), U32(N), U32(ROW_CHUNK), U32(chunks), MEM(x.mem), U32(x.off), MEM(out.mem),
                 U32(out.off), F32(beta)));
    TRY(check_range("row_sums", part.off, M * chunks));
    TRY(clnet_run_kept(d, &kept[0],
                       KERNEL(FAMILY, "", wide > 1 ? "row_sums_partial_lanes" : "row_sums_partial"),
                       2, (size_t[]){chunks * wide, M}, wide > 1 ? (size_t[]){wide, 1} : NULL,
                       ARGS(U32(M), U32(N), U32(ROW_CHUNK), U32(chunks), MEM(x.mem), U32(x.off),
                            MEM(part.mem), U32(part.off))));
    TRY(clnet_run_kept(d, &kept[1], KERNEL(FAMILY, "", "row_sums_finish"), 1, (size_t[]){M}, NULL,
                       ARGS(U32(M), U32(chunks), MEM(part.mem), U32(part.off), MEM(out.mem),
                            U32(out.off), F32(beta))));
cleanup:
    return status;
}

clnet_status clnet_col_sums(clnet_device *d, cl_kernel *kept, size_t M, size_t N, clnet_place x,
                            clnet_place out, float beta) {
    cl_kernel k = NULL;
    return clnet_run_kept(
        d, kept ? kept : &k, KERNEL(FAMILY, "", "col_sums"), 1, (size_t[]){N}, NULL,
        ARGS(U32(M), U32(N), MEM(x.mem), U32(x.off), MEM(out.mem), U32(out.off), F32(beta)));
}

clnet_status clnet_copy_rows(clnet_device *d, cl_kernel *kept, size_t n, size_t len,
                             clnet_matrix src, clnet_matrix dst, float beta) {
    cl_kernel k = NULL;
    if (n == 0 || len == 0) return CLNET_OK;
    clnet_status s = check_range("copy_rows", src.off, (n - 1) * src.ld + len);
    if (s == CLNET_OK) s = check_range("copy_rows", dst.off, (n - 1) * dst.ld + len);
    if (s != CLNET_OK) return s;
    return clnet_run_kept(d, kept ? kept : &k, KERNEL(FAMILY, "", "copy_rows"), 2,
                          (size_t[]){len, n}, NULL,
                          ARGS(U32(n), U32(len), MEM(src.mem), U32(src.off), U32(src.ld),
                               MEM(dst.mem), U32(dst.off), U32(dst.ld), F32(beta)));
}
