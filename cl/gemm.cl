// Matrix multiply for the layers: C = alpha * A B + beta * C, float32.
//
// A(m, k) sits at A[aoff + m * sam + k * sak]: any strides, so a transposed
// A costs nothing. B(k, n) sits at B[boff + k * ldb + n]: rows contiguous, so
// each work-item loads 8 consecutive columns as one float8. C(m, n) sits at
// C[coff + m * ldc + n].
//
// Each work-item computes a GEMM_TM x 8 tile of C, keeping GEMM_TM float8
// accumulators in registers: per step of k it loads one float8 of B and
// GEMM_TM scalars of A. Dimension 0 runs over column blocks of 8, dimension 1
// over row blocks of GEMM_TM. On CPUs the host makes a work-group span all
// row blocks of one column block, so the strip of B it reads stays in cache.
//
// Split-K: dimension 2 runs over chunks of k of `kchunk`; chunk z writes its
// partial product to C + z * cstride (with beta applied by the reduction
// afterwards, not here, when there is more than one chunk).

#ifndef GEMM_TM
#define GEMM_TM 8
#endif

__kernel void gemm_nn(uint M, uint N, uint K, uint kchunk, float alpha,
                      __global const float *A, uint aoff, uint sam, uint sak,
                      __global const float *B, uint boff, uint ldb, float beta,
                      __global float *C, uint coff, uint ldc, uint cstride) {
    const uint n0 = get_global_id(0) * 8;
    const uint m0 = get_global_id(1) * GEMM_TM;
    const uint z = get_global_id(2);
    if (n0 >= N || m0 >= M) return;
    const uint k_begin = z * kchunk;
    const uint k_end = min(K, k_begin + kchunk);
    const uint ncols = min(8u, N - n0);

    // Rows past M read row M-1 (valid memory) and are never stored.
    uint arow[GEMM_TM];
    for (uint r = 0; r < GEMM_TM; r++) arow[r] = aoff + min(m0 + r, M - 1) * sam;

    float8 acc[GEMM_TM];
    for (uint r = 0; r < GEMM_TM; r++) acc[r] = (float8)(0.0f);

    __global const float *b = B + boff + n0;
    if (ncols == 8) {
        for (uint k = k_begin; k < k_end; k++) {
            const float8 bk = vload8(0, b + k * ldb);
            const uint ak = k * sak;
            for (uint r = 0; r < GEMM_TM; r++) acc[r] = mad((float8)(A[arow[r] + ak]), bk, acc[r]);
        }
    } else { // the last, partial column block
        for (uint k = k_begin; k < k_end; k++) {
            float t[8];
            for (uint c = 0; c < 8; c++) t[c] = c < ncols ? b[k * ldb + c] : 0.0f;
            const float8 bk = vload8(0, t);
            const uint ak = k * sak;
            for (uint r = 0; r < GEMM_TM; r++) acc[r] = mad((float8)(A[arow[r] + ak]), bk, acc[r]);
        }
    }

    __global float *c = C + coff + z * cstride + n0;
    const uint rows = min((uint)GEMM_TM, M - m0);
    for (uint r = 0; r < rows; r++) {
        __global float *cr = c + (m0 + r) * ldc;
        float8 v = alpha * acc[r];
        if (beta != 0.0f) { // beta == 0 must not read C (it may hold NaN garbage)
            float t[8];
            for (uint i = 0; i < ncols; i++) t[i] = cr[i];
            for (uint i = ncols; i < 8; i++) t[i] = 0.0f;
            v = mad((float8)(beta), vload8(0, t), v);
        }
        if (ncols == 8) {
            vstore8(v, 0, cr);
        } else {
            float t[8];
            vstore8(v, 0, t);
            for (uint i = 0; i < ncols; i++) cr[i] = t[i];
        }
    }
}

// C = alpha * A B^T (+ beta * C) with A (M, K) and B (N, K) both row-major:
// A(m, k) = A[aoff + m * lda + k], B^T(k, n) = B[boff + n * ldb + k]. Both
// operands run along k, so each work-item computes a GEMM_NT_M x GEMM_NT_N
// tile as dot products, loading float8s of A's and B's rows, and adds the
// eight lanes at the end. Dimension 0 runs over column blocks, 1 over row
// blocks, 2 over chunks of k (split-K, as gemm_nn). This is the weight
// gradient of a convolution, dW = dY col^T, without transposing col.
#define NT_M 2
#define NT_N 4
__kernel void gemm_nt(uint M, uint N, uint K, uint kchunk, float alpha,
                      __global const float *A, uint aoff, uint lda,
                      __global const float *B, uint boff, uint ldb, float beta,
                      __global float *C, uint coff, uint ldc, uint cstride) {
    const uint n0 = get_global_id(0) * NT_N;
    const uint m0 = get_global_id(1) * NT_M;
    const uint z = get_global_id(2);
    if (n0 >= N || m0 >= M) return;
    const uint k_begin = z * kchunk;
    const uint k_end = min(K, k_begin + kchunk);
    // rows past the matrix read the last row (valid memory), never stored
    __global const float *a[NT_M], *b[NT_N];
    for (uint r = 0; r < NT_M; r++) a[r] = A + aoff + min(m0 + r, M - 1) * lda;
    for (uint c = 0; c < NT_N; c++) b[c] = B + boff + min(n0 + c, N - 1) * ldb;
    float8 acc[NT_M][NT_N];
    for (uint r = 0; r < NT_M; r++)
        for (uint c = 0; c < NT_N; c++) acc[r][c] = (float8)(0.0f);
    uint k = k_begin;
    for (; k + 8 <= k_end; k += 8) {
        float8 av[NT_M], bv[NT_N];
        for (uint r = 0; r < NT_M; r++) av[r] = vload8(0, a[r] + k);
        for (uint c = 0; c < NT_N; c++) bv[c] = vload8(0, b[c] + k);
        for (uint r = 0; r < NT_M; r++)
            for (uint c = 0; c < NT_N; c++) acc[r][c] = mad(av[r], bv[c], acc[r][c]);
    }
    float sum[NT_M][NT_N];
    for (uint r = 0; r < NT_M; r++)
        for (uint c = 0; c < NT_N; c++) {
            const float8 v = acc[r][c];
            float s = ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7));
            for (uint kk = k; kk < k_end; kk++) s = mad(a[r][kk], b[c][kk], s); // the tail
            sum[r][c] = s;
        }
    __global float *out = C + coff + z * cstride;
    for (uint r = 0; r < NT_M && m0 + r < M; r++)
        for (uint c = 0; c < NT_N && n0 + c < N; c++) {
            __global float *o = out + (m0 + r) * ldc + n0 + c;
            const float v = alpha * sum[r][c];
            *o = beta != 0.0f ? mad(beta, *o, v) : v;
        }
}

// C(m, n) = sum over chunks z of P[poff + z * pstride + m * N + n], plus beta * C.
// The partial products of split-K, added in chunk order (deterministic).
__kernel void gemm_reduce(uint M, uint N, uint chunks, __global const float *P, uint poff,
                          uint pstride, float beta, __global float *C, uint coff, uint ldc) {
    const uint n = get_global_id(0), m = get_global_id(1);
    if (n >= N || m >= M) return;
    float s = 0.0f;
    for (uint z = 0; z < chunks; z++) s += P[poff + z * pstride + m * N + n];
    __global float *c = C + coff + m * ldc + n;
    *c = beta != 0.0f ? mad(beta, *c, s) : s;
}

// B (cols x rows) = transpose of A (rows x cols); both row-major, with offsets.
// Tiled through local memory so both reads and writes are contiguous.
#define TRANSPOSE_TILE 16
__kernel void transpose(uint rows, uint cols, __global const float *A, uint aoff, uint lda,
                        __global float *B, uint boff, uint ldb) {
    __local float tile[TRANSPOSE_TILE][TRANSPOSE_TILE + 1];
    const uint c = get_group_id(0) * TRANSPOSE_TILE + get_local_id(0);
    const uint r = get_group_id(1) * TRANSPOSE_TILE + get_local_id(1);
    if (r < rows && c < cols) tile[get_local_id(1)][get_local_id(0)] = A[aoff + r * lda + c];
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint tc = get_group_id(1) * TRANSPOSE_TILE + get_local_id(0); // column of B = row of A
    const uint tr = get_group_id(0) * TRANSPOSE_TILE + get_local_id(1); // row of B = column of A
    if (tr < cols && tc < rows) B[boff + tr * ldb + tc] = tile[get_local_id(0)][get_local_id(1)];
}
