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

    // Rows past M read row M-1 (valid memory) and are never stored. Every
    // loop over the tile has a fixed count and is unrolled, so that the
    // accumulators stay in registers (an array indexed in a loop the compiler
    // keeps lives in memory: a GPU's stack).
    uint arow[GEMM_TM];
#pragma unroll
    for (uint r = 0; r < GEMM_TM; r++) arow[r] = aoff + min(m0 + r, M - 1) * sam;

    float8 acc[GEMM_TM];
#pragma unroll
    for (uint r = 0; r < GEMM_TM; r++) acc[r] = (float8)(0.0f);

    __global const float *b = B + boff + n0;
    for (uint k = k_begin; k < k_end; k++) {
        float8 bk;
        if (ncols == 8) {
            bk = vload8(0, b + k * ldb);
        } else { // the last, partial column block
            __global const float *row = b + k * ldb;
#define COLUMN(c) ((c) < ncols ? row[c] : 0.0f)
            bk = (float8)(COLUMN(0), COLUMN(1), COLUMN(2), COLUMN(3), COLUMN(4), COLUMN(5),
                          COLUMN(6), COLUMN(7));
#undef COLUMN
        }
        const uint ak = k * sak;
#pragma unroll
        for (uint r = 0; r < GEMM_TM; r++) acc[r] = mad((float8)(A[arow[r] + ak]), bk, acc[r]);
    }

    __global float *c = C + coff + z * cstride + n0;
    const uint rows = min((uint)GEMM_TM, M - m0);
#pragma unroll
    for (uint r = 0; r < GEMM_TM; r++) {
        __global float *cr = c + (m0 + r) * ldc;
        float8 v = alpha * acc[r];
        if (r < rows && ncols == 8) {
            if (beta != 0.0f) v = mad((float8)(beta), vload8(0, cr), v);
            vstore8(v, 0, cr);
        } else if (r < rows) { // beta == 0 must not read C (it may hold NaN garbage)
            const float t[8] = {v.s0, v.s1, v.s2, v.s3, v.s4, v.s5, v.s6, v.s7};
#pragma unroll
            for (uint i = 0; i < 8; i++)
                if (i < ncols) cr[i] = beta != 0.0f ? mad(beta, cr[i], t[i]) : t[i];
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
#define NT_N 2
// row[k .. k + 7], those from `end` on as zero
inline float8 nt_tail(__global const float *row, uint k, uint end) {
#define LANE(i) (k + (i) < end ? row[k + (i)] : 0.0f)
    return (float8)(LANE(0), LANE(1), LANE(2), LANE(3), LANE(4), LANE(5), LANE(6), LANE(7));
#undef LANE
}
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
    // (every loop over the tile unrolled, as gemm_nn's)
    __global const float *a[NT_M], *b[NT_N];
#pragma unroll
    for (uint r = 0; r < NT_M; r++) a[r] = A + aoff + min(m0 + r, M - 1) * lda;
#pragma unroll
    for (uint c = 0; c < NT_N; c++) b[c] = B + boff + min(n0 + c, N - 1) * ldb;
    float8 acc[NT_M][NT_N];
#pragma unroll
    for (uint r = 0; r < NT_M; r++)
#pragma unroll
        for (uint c = 0; c < NT_N; c++) acc[r][c] = (float8)(0.0f);
    // one step of 8 along k: one column's vector at a time (fewer registers)
#define NT_STEP(LOAD)                                                                              \
    {                                                                                              \
        float8 av[NT_M];                                                                           \
        _Pragma("unroll") for (uint r = 0; r < NT_M; r++) av[r] = LOAD(a[r]);                      \
        _Pragma("unroll") for (uint c = 0; c < NT_N; c++) {                                        \
            const float8 bv = LOAD(b[c]);                                                          \
            _Pragma("unroll") for (uint r = 0; r < NT_M; r++) acc[r][c] = mad(av[r], bv, acc[r][c]); \
        }                                                                                          \
    }
#define NT_WHOLE(row) vload8(0, (row) + k)
#define NT_TAIL(row)  nt_tail(row, k, k_end)
    uint k = k_begin;
#pragma unroll 1 // unrolled, AMD's compiler runs out of registers
    for (; k + 8 <= k_end; k += 8) NT_STEP(NT_WHOLE)
    if (k < k_end) NT_STEP(NT_TAIL) // the tail: its lanes past k_end read as zero
#undef NT_STEP
#undef NT_WHOLE
#undef NT_TAIL
    __global float *out = C + coff + z * cstride;
#pragma unroll
    for (uint r = 0; r < NT_M; r++)
#pragma unroll
        for (uint c = 0; c < NT_N; c++) {
            const float8 v = acc[r][c];
            const float s = ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7));
            if (m0 + r < M && n0 + c < N) {
                __global float *o = out + (m0 + r) * ldc + n0 + c;
                const float v = alpha * s;
                *o = beta != 0.0f ? mad(beta, *o, v) : v;
            }
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
