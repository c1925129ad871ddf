// Helpers shared by every kernel family; prepended to each family's source.
// OpenCL C 1.2, float32 only: no extension, no double precision.

// Sum of v over the work-group (local size must be a power of two), using
// tmp (one float per work-item). Every work-item gets the total. Adds in a
// fixed tree order, so the result is the same on every run.
inline float clnet_group_sum(__local float *tmp, float v) {
    const uint lid = get_local_id(0);
    const uint size = get_local_size(0);
    tmp[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = size / 2; stride > 0; stride /= 2) {
        if (lid < stride) tmp[lid] += tmp[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float total = tmp[0];
    barrier(CLK_LOCAL_MEM_FENCE); // tmp may be reused right after
    return total;
}

// Window ops (convolution, pooling) with kernel k, stride s, padding p: the
// outputs o whose window (o*s - p .. o*s - p + k - 1) holds input index i, as
// the range [*lo, *hi] (empty when lo > hi). Backward passes gather over it
// instead of testing every tap with a modulo.
inline void clnet_windows_holding(int i, int k, int s, int p, int out, int *lo, int *hi) {
    const int t = i + p - (k - 1); // oy*s >= t
    *lo = t <= 0 ? 0 : (t + s - 1) / s;
    *hi = min(out - 1, (i + p) / s);
}

// The inputs [*lo, *hi) that output o's window (o*s - p .. o*s - p + k - 1)
// covers, clipped to an input of `size`: the window without its padding.
inline void clnet_window_span(uint o, uint s, uint p, uint k, uint size, int *lo, int *hi) {
    const int start = (int)(o * s) - (int)p;
    *lo = max(start, 0);
    *hi = min(start + (int)k, (int)size);
}

// A gradient written by a backward pass: overwritten (beta 0, without reading
// what is there, which may be garbage) or added to (beta 1, when another
// reader of the same tensor wrote it first).
inline void clnet_store(__global float *dst, float v, float beta) {
    *dst = beta != 0.0f ? mad(beta, *dst, v) : v;
}
