/* GEMM: clnet's own kernel (cl/gemm.cl) or CLBlast. */
#include "gemm.h"
#include "error.h"
#include "memory.h"
#include "program.h"

#include <clblast_c.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FAMILY "gemm"
#define TM     8 /* rows per work-item: GEMM_TM in cl/gemm.cl */
#define NT_M   2 /* gemm_nt tile: NT_M x NT_N, as in cl/gemm.cl */
#define NT_N   4
/* Split-K: a product this long and this narrow is cut into chunks of k,
 * computed side by side and added in a fixed order. */
#define SPLIT_K_MIN         4096
#define SPLIT_K_CHUNK       2048
#define SPLIT_K_MAX_CHUNKS  16
#define SPLIT_K_MAX_OUTPUTS 65536

#define OPTIONS "-DGEMM_TM=8"

clnet_status clnet_gemm_choose(clnet_device *d) {
    const char *env = getenv("CLNET_GEMM");
    d->gemm = d->info.type == CLNET_DEVICE_GPU ? CLNET_GEMM_CLBLAST : CLNET_GEMM_OWN;
    if (!env || !*env || strcasecmp(env, "auto") == 0) return CLNET_OK;
    if (strcasecmp(env, "own") == 0) {
        d->gemm = CLNET_GEMM_OWN;
    } else if (strcasecmp(env, "clblast") == 0) {
        d->gemm = CLNET_GEMM_CLBLAST;
    } else {
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "CLNET_GEMM='%s': expected auto, own or clblast", env);
    }
    return CLNET_OK;
}

clnet_status clnet_device_work(clnet_device *d, int slot, size_t bytes, cl_mem *out) {
    clnet_status status = CLNET_OK;
    if (d->work_bytes[slot] < bytes) {
        if (d->work[slot]) clReleaseMemObject(d->work[slot]);
        d->work[slot] = NULL;
        d->work_bytes[slot] = 0;
        TRY(clnet_buffer_create(d, bytes, &d->work[slot]));
        d->work_bytes[slot] = bytes;
    }
    *out = d->work[slot];
cleanup:
    return status;
}

static int fits_u32(size_t v) {
    return v <= UINT_MAX;
}

clnet_status clnet_transpose(clnet_device *d, size_t rows, size_t cols, cl_mem A, size_t aoff,
                             size_t lda, cl_mem B, size_t boff, size_t ldb) {
    if (rows == 0 || cols == 0) return CLNET_OK;
    return clnet_run(
        d, FAMILY, "", "transpose", 2, (size_t[]){cols, rows}, (size_t[]){16, 16},
        ARGS(U32(rows), U32(cols), MEM(A), U32(aoff), U32(lda), MEM(B), U32(boff), U32(ldb)));
}

static clnet_status gemm_clblast(clnet_device *d, int ta, int tb, size_t M, size_t N, size_t K,
                                 float alpha, cl_mem A, size_t aoff, size_t lda, cl_mem B,
                                 size_t boff, size_t ldb, float beta, cl_mem C, size_t coff,
                                 size_t ldc) {
    CLBlastStatusCode s =
        CLBlastSgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                     tb ? CLBlastTransposeYes : CLBlastTransposeNo, M, N, K, alpha, A, aoff, lda, B,
                     boff, ldb, beta, C, coff, ldc, &d->queue, NULL);
    if (s != CLBlastSuccess)
        return clnet_fail(CLNET_ERR_OPENCL, "CLBlastSgemm(%zu x %zu x %zu) failed with status %d",
                          M, N, K, (int)s);
    return CLNET_OK;
}

/* The work-group shape: on CPUs one work-group covers every row block of a
 * column block, so the B strip it reads stays in cache; GPUs choose. */
static void local_size(clnet_device *d, cl_kernel k, size_t mblocks, size_t local[3],
                       int *use_local) {
    size_t limit = d->info.max_work_group_size;
    size_t kernel_limit = 0;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_limit,
                                 &kernel_limit, NULL) == CL_SUCCESS &&
        kernel_limit < limit)
        limit = kernel_limit;
    /* a power of two up to 16 row blocks: the size must not follow M when M
     * is the batch (see clnet_run), and few sizes means few compilations */
    size_t rows = 1;
    while (rows * 2 <= mblocks && rows * 2 <= 16 && rows * 2 <= limit) rows *= 2;
    local[0] = 1;
    local[1] = rows;
    local[2] = 1;
    *use_local = d->info.type == CLNET_DEVICE_CPU;
}

static clnet_status gemm_own(clnet_device *d, int ta, int tb, size_t M, size_t N, size_t K,
                             float alpha, cl_mem A, size_t aoff, size_t lda, cl_mem B, size_t boff,
                             size_t ldb, float beta, cl_mem C, size_t coff, size_t ldc) {
    clnet_status status = CLNET_OK;
    cl_kernel k = NULL;
    /* A B^T with a long k (a convolution's weight gradient): dot products
     * along both rows beat transposing the large B; for short k (a linear
     * layer's forward) transposing the small B and gemm_nn win. */
    int nt = tb && !ta && K >= SPLIT_K_MIN;
    if (tb && !nt) { /* A^T B^T: make B^T into scratch and use gemm_nn */
        cl_mem bt = NULL;
        TRY(clnet_device_work(d, 0, K * N * sizeof(float), &bt));
        TRY(clnet_transpose(d, N, K, B, boff, ldb, bt, 0, N));
        B = bt;
        boff = 0;
        ldb = N;
    }
    size_t chunks = 1;
    if (K >= SPLIT_K_MIN && M * N <= SPLIT_K_MAX_OUTPUTS) {
        chunks = K / SPLIT_K_CHUNK;
        if (chunks > SPLIT_K_MAX_CHUNKS) chunks = SPLIT_K_MAX_CHUNKS;
    }
    size_t kchunk = (K + chunks - 1) / chunks;
    cl_mem out = C;
    size_t out_off = coff, out_ld = ldc, out_stride = 0;
    float out_beta = beta;
    if (chunks > 1) {
        TRY(clnet_device_work(d, 1, chunks * M * N * sizeof(float), &out));
        out_off = 0;
        out_ld = N;
        out_stride = M * N;
        out_beta = 0.0f;
    }

    /* gemm_nt: NT_M x NT_N tiles; gemm_nn: TM x 8. Work-items run over
     * (column blocks, row blocks, chunks of k). */
    const char *name = nt ? "gemm_nt" : "gemm_nn";
    size_t rows = nt ? (M + NT_M - 1) / NT_M : (M + TM - 1) / TM;
    size_t cols = nt ? (N + NT_N - 1) / NT_N : (N + 7) / 8;
    size_t local[3], global[3] = {cols, rows, chunks};
    int use_local = 0;
    TRY(clnet_kernel_get(d, FAMILY, OPTIONS, name, &k));
    local_size(d, k, rows, local, &use_local);
    if (nt)
        TRY(clnet_run(d, FAMILY, OPTIONS, name, 3, global, use_local ? local : NULL,
                      ARGS(U32(M), U32(N), U32(K), U32(kchunk), F32(alpha), MEM(A), U32(aoff),
                           U32(lda), MEM(B), U32(boff), U32(ldb), F32(out_beta), MEM(out),
                           U32(out_off), U32(out_ld), U32(out_stride))));
    else
        TRY(clnet_run(d, FAMILY, OPTIONS, name, 3, global, use_local ? local : NULL,
                      ARGS(U32(M), U32(N), U32(K), U32(kchunk), F32(alpha), MEM(A), U32(aoff),
                           U32(ta ? 1 : lda), U32(ta ? lda : 1), MEM(B), U32(boff), U32(ldb),
                           F32(out_beta), MEM(out), U32(out_off), U32(out_ld), U32(out_stride))));
    if (chunks > 1) /* add the chunks' partial products into C, in order */
        TRY(clnet_run(d, FAMILY, OPTIONS, "gemm_reduce", 2, (size_t[]){N, M}, NULL,
                      ARGS(U32(M), U32(N), U32(chunks), MEM(out), U32(M * N), F32(beta), MEM(C),
                           U32(coff), U32(ldc))));
cleanup:
    return status;
}

clnet_status clnet_gemm(clnet_device *d, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                        float alpha, cl_mem A, size_t aoff, size_t lda, cl_mem B, size_t boff,
                        size_t ldb, float beta, cl_mem C, size_t coff, size_t ldc) {
    if (M == 0 || N == 0) return CLNET_OK;
    /* Every index the kernels compute must fit in 32 bits. */
    size_t a_end = aoff + (trans_a ? K * lda : M * lda),
           b_end = boff + (trans_b ? N * ldb : K * ldb), c_end = coff + M * ldc;
    if (!fits_u32(a_end) || !fits_u32(b_end) || !fits_u32(c_end) || !fits_u32(K * N) ||
        !fits_u32(16 * M * N))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "gemm %zu x %zu x %zu: matrices beyond 2^32 elements", M, N, K);
    if (K == 0) { /* C = beta C */
        /* Rare (empty inner dimension); not worth a kernel of its own. */
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "gemm with K = 0");
    }
    double began = clnet_profile_begin(d);
    clnet_status s = d->gemm == CLNET_GEMM_CLBLAST
                         ? gemm_clblast(d, trans_a, trans_b, M, N, K, alpha, A, aoff, lda, B, boff,
                                        ldb, beta, C, coff, ldc)
                         : gemm_own(d, trans_a, trans_b, M, N, K, alpha, A, aoff, lda, B, boff, ldb,
                                    beta, C, coff, ldc);
    char name[96];
    snprintf(name, sizeof name, "gemm %c%c %zux%zux%zu", trans_a ? 'T' : 'N', trans_b ? 'T' : 'N',
             M, N, K);
    clnet_profile_end(d, name, began);
    return s;
}
