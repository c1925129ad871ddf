// Elementwise kernels on float vectors. Every vector is a base buffer plus an
// offset in elements, since a replica keeps all parameters in one buffer.
// x, y are (n) each.

// x = value
__kernel void fill(__global float *x, uint xoff, uint n, float value) {
    const uint i = get_global_id(0);
    if (i < n) x[xoff + i] = value;
}

// x = alpha * x
__kernel void scale(__global float *x, uint xoff, uint n, float alpha) {
    const uint i = get_global_id(0);
    if (i < n) x[xoff + i] *= alpha;
}

// y = alpha * x + y
__kernel void axpy(uint n, float alpha, __global const float *x, uint xoff, __global float *y,
                   uint yoff) {
    const uint i = get_global_id(0);
    if (i < n) y[yoff + i] += alpha * x[xoff + i];
}

// out[outoff + g] = sum of this work-group's share of x, for work-group g.
// Each work-item first adds a strided slice of x, then the group adds those.
// Run once with many groups, then once with one group over the partial sums.
__kernel void sum_partial(__global const float *x, uint xoff, uint n, __global float *out,
                          uint outoff, __local float *tmp) {
    float acc = 0.0f;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) acc += x[xoff + i];
    const float total = clnet_group_sum(tmp, acc);
    if (get_local_id(0) == 0) out[outoff + get_group_id(0)] = total;
}

// out[m] = sum over n of X[m, n] (+ beta * out[m]); X is (M, N) row-major.
// Each row in chunks of `chunk` floats, each chunk's sum made alone, then
// the chunks' sums added in order: an order that depends only on M and N.
// Two launches (row_sums_partial or _lanes, then row_sums_finish) or one
// (row_sums_whole or _lanes), the same floats either way.

// The sum of row[begin .. end): sixteen running sums, then added pairwise.
// The sixteen as two float8s: no float16, which an AVX2 CPU holds in two
// registers anyway and whose builtins clang warns of there.
inline float chunk_sum(__global const float *row, uint begin, uint end) {
    float8 lo = (float8)(0.0f), hi = (float8)(0.0f);
    uint j = begin;
    for (; j + 16 <= end; j += 16) {
        lo += vload8(0, row + j);
        hi += vload8(1, row + j);
    }
    float8 h8 = lo + hi;
    float4 h4 = h8.lo + h8.hi;
    float2 h2 = h4.lo + h4.hi;
    float s = h2.x + h2.y;
    for (; j < end; j++) s += row[j];
    return s;
}

inline void row_sum_out(__global float *out, uint at, float s, float beta) {
    out[at] = beta != 0.0f ? mad(beta, out[at], s) : s;
}

// row_sums_partial: work-item (c, m) adds chunk c of row m into part[poff +
// m * chunks + c]. The range may be rounded up past chunks and M (a
// work-group size that does not divide them): those work-items do nothing.
__kernel void row_sums_partial(uint M, uint N, uint chunk, uint chunks, __global const float *X,
                               uint xoff, __global float *part, uint poff) {
    const uint c = get_global_id(0), m = get_global_id(1);
    if (m >= M || c >= chunks) return;
    part[poff + m * chunks + c] = chunk_sum(X + xoff + m * N, c * chunk, min(N, c * chunk + chunk));
}

// row_sums_whole: work-item m adds row m's chunks itself, in one launch.
__kernel void row_sums_whole(uint M, uint N, uint chunk, uint chunks, __global const float *X,
                             uint xoff, __global float *out, uint ooff, float beta) {
    const uint m = get_global_id(0);
    if (m >= M) return;
    float s = 0.0f;
    for (uint c = 0; c < chunks; c++)
        s += chunk_sum(X + xoff + m * N, c * chunk, min(N, c * chunk + chunk));
    row_sum_out(out, ooff + m, s, beta);
}

// The lanes kernels, for GPUs: a work-group of ROW_LANES work-items adds a
// chunk, lane l every ROW_LANES-th float of it from its l-th (neighbouring
// lanes read neighbouring floats), then the lanes' sums are halved pairwise
// in local memory. row_sums_partial_lanes: work-group (c, m) adds chunk c of
// row m; row_sums_whole_lanes: work-group m adds row m's chunks in turn.
#define ROW_LANES 128
inline float chunk_sum_lanes(__global const float *row, uint begin, uint end, __local float *sums) {
    const uint l = get_local_id(0);
    float s = 0.0f;
    for (uint j = begin + l; j < end; j += ROW_LANES) s += row[j];
    sums[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = ROW_LANES / 2; h > 0; h /= 2) {
        if (l < h) sums[l] += sums[l + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    s = sums[0];
    barrier(CLK_LOCAL_MEM_FENCE); // every lane has read it before the next chunk's
    return s;
}

__kernel __attribute__((reqd_work_group_size(ROW_LANES, 1, 1)))
void row_sums_partial_lanes(uint M, uint N, uint chunk, uint chunks, __global const float *X,
                            uint xoff, __global float *part, uint poff) {
    __local float sums[ROW_LANES];
    const uint c = get_group_id(0), m = get_global_id(1);
    const int in = m < M && c < chunks; // the same for the whole work-group
    const uint begin = in ? c * chunk : 0, end = in ? min(N, begin + chunk) : 0;
    const float s = chunk_sum_lanes(X + xoff + (in ? m : 0) * N, begin, end, sums);
    if (get_local_id(0) == 0 && in) part[poff + m * chunks + c] = s;
}

__kernel __attribute__((reqd_work_group_size(ROW_LANES, 1, 1)))
void row_sums_whole_lanes(uint M, uint N, uint chunk, uint chunks, __global const float *X,
                          uint xoff, __global float *out, uint ooff, float beta) {
    __local float sums[ROW_LANES];
    const uint m = get_group_id(0);
    if (m >= M) return; // the whole work-group
    float s = 0.0f;
    for (uint c = 0; c < chunks; c++)
        s += chunk_sum_lanes(X + xoff + m * N, c * chunk, min(N, c * chunk + chunk), sums);
    if (get_local_id(0) == 0) row_sum_out(out, ooff + m, s, beta);
}

// row_sums_finish: one work-item per row adds its chunks' sums in order.
__kernel void row_sums_finish(uint M, uint chunks, __global const float *part, uint poff,
                              __global float *out, uint ooff, float beta) {
    const uint m = get_global_id(0);
    if (m >= M) return;
    float s = 0.0f;
    for (uint c = 0; c < chunks; c++) s += part[poff + m * chunks + c];
    row_sum_out(out, ooff + m, s, beta);
}

// out[j] = sum over m of X[m, j] (+ beta * out[j]): one work-item per column.
__kernel void col_sums(uint M, uint N, __global const float *X, uint xoff, __global float *out,
                       uint ooff, float beta) {
    const uint j = get_global_id(0);
    if (j >= N) return;
    float acc = 0.0f;
    for (uint m = 0; m < M; m++) acc += X[xoff + m * N + j];
    out[ooff + j] = beta != 0.0f ? mad(beta, out[ooff + j], acc) : acc;
}

// Y[m, j] += bias[j] for Y (M, N): a bias per column; with relu, then
// max(., 0) (a linear layer that took in the relu after it).
__kernel void add_bias_cols(uint M, uint N, __global float *Y, uint yoff,
                            __global const float *bias, uint boff, uint relu) {
    const uint i = get_global_id(0);
    if (i >= M * N) return;
    const float v = Y[yoff + i] + bias[boff + i % N];
    Y[yoff + i] = relu ? fmax(v, 0.0f) : v;
}

// The backward of a bias per column and the relu after it, in one pass:
// dZ[m, j] = dY[m, j] where Y[m, j] > 0, else 0 (relu_backward's), and
// out[j] = sum over m of dZ[m, j] (+ beta * out[j]) (col_sums' order). One
// work-item per column.
__kernel void relu_col_sums(uint M, uint N, __global const float *dY, uint dyoff,
                            __global const float *Y, uint yoff, __global float *dZ, uint dzoff,
                            __global float *out, uint ooff, float beta) {
    const uint j = get_global_id(0);
    if (j >= N) return;
    float acc = 0.0f;
    for (uint m = 0; m < M; m++) {
        const float v = Y[yoff + m * N + j] > 0.0f ? dY[dyoff + m * N + j] : 0.0f;
        dZ[dzoff + m * N + j] = v;
        acc += v;
    }
    out[ooff + j] = beta != 0.0f ? mad(beta, out[ooff + j], acc) : acc;
}

// Rows of a batch copied between two layouts: for every row b < n and j < len,
// dst[doff + b * dstride + j] = src[soff + b * sstride + j], or added to what
// dst holds when beta is not 0 (never reading dst otherwise: it may hold
// garbage). Runs over (j, b). Serves add and concat, forward and backward.
__kernel void copy_rows(uint n, uint len, __global const float *src, uint soff, uint sstride,
                        __global float *dst, uint doff, uint dstride, float beta) {
    const uint j = get_global_id(0), b = get_global_id(1);
    if (j >= len || b >= n) return;
    const float v = src[soff + b * sstride + j];
    __global float *d = dst + doff + b * dstride + j;
    *d = beta != 0.0f ? mad(beta, *d, v) : v;
}
