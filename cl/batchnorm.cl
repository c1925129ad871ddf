// Batch normalization over x (n, C, S): channel c's n*S values are
// x[(b*C + c)*S + s]. The statistics kernels run one work-group per channel
// (local size a power of two). The host merges what the devices computed
// (src/layers/batchnorm.c) and sends back what the other kernels read.
//
// The statistics are sums carried as unevaluated pairs hi + lo of floats
// (compensated: each addition's rounding error is kept in lo), so they are
// nearly exact whatever the order of the additions, and so whatever the
// split of a batch across devices: N devices then normalize with the same
// floats as one device, and no activation moves by a rounding.

// The compensation below must not be undone by fused multiply-adds; the
// running statistics must give the same floats on every device.
#pragma OPENCL FP_CONTRACT OFF

// a + b = s + e exactly (Knuth's two-sum), as (s, e).
inline float2 bn_two_sum(float a, float b) {
    const float s = a + b, bb = s - a;
    return (float2)(s, (a - (s - bb)) + (b - bb));
}

// The pairs a plus b.
inline float2 bn_add2(float2 a, float2 b) {
    const float2 t = bn_two_sum(a.x, b.x);
    return (float2)(t.x, (a.y + b.y) + t.y);
}

// The statistics kernels read their channel's values BN_V at a time: sample
// b's row of S values, at (b * C + c) * S, as R = ceil(S / BN_V) slots of
// consecutive positions. Work-item i takes slots i, i + L, i + 2L, ... of
// the n * R (L: the local size), each lane of a slot adding to its own
// pair; the lanes' pairs are added in lane order at the end. A short last
// slot is filled with a value that adds exactly zero.
#define BN_V 8

typedef struct {
    float8 hi, lo;
} bn_pair8;

// The pairs acc plus the lanes of v.
inline bn_pair8 bn_add8(bn_pair8 acc, float8 v) {
    const float8 s = acc.hi + v, bb = s - acc.hi;
    return (bn_pair8){s, acc.lo + ((acc.hi - (s - bb)) + (v - bb))};
}

// acc plus p's lanes, in lane order.
inline float2 bn_lanes(float2 acc, bn_pair8 p) {
    float hi[BN_V], lo[BN_V];
    vstore8(p.hi, 0, hi);
    vstore8(p.lo, 0, lo);
    for (uint k = 0; k < BN_V; k++) acc = bn_add2(acc, (float2)(hi[k], lo[k]));
    return acc;
}

// A work-item's walk over its slots, as sample b and slot r: no division a slot.
typedef struct {
    uint b, r;   // where the walk is
    uint db, dr; // a step: the local size as samples and slots
} bn_walk;

inline bn_walk bn_walk_start(uint R) {
    const uint i = get_local_id(0), step = get_local_size(0);
    return (bn_walk){i / R, i % R, step / R, step % R};
}

inline void bn_walk_next(bn_walk *w, uint R) {
    w->r += w->dr;
    w->b += w->db;
    if (w->r >= R) {
        w->r -= R;
        w->b++;
    }
}

// The slot's BN_V values of row from position s on, `fill` past S.
inline float8 bn_load(__global const float *row, uint s, uint S, float fill) {
    if (s + BN_V <= S) return vload8(0, row + s);
    float v[BN_V];
    for (uint k = 0; k < BN_V; k++) v[k] = s + k < S ? row[s + k] : fill;
    return vload8(0, v);
}

// The pair sum over the work-group, in a fixed tree order; every work-item
// gets it. tmp holds one pair per work-item.
inline float2 bn_group_sum(__local float2 *tmp, float2 v) {
    const uint lid = get_local_id(0), size = get_local_size(0);
    tmp[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = size / 2; stride > 0; stride /= 2) {
        if (lid < stride) tmp[lid] = bn_add2(tmp[lid], tmp[lid + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float2 total = tmp[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

// Channel c's two pairs a and b, as the host reads them: a's hi at out[c], its
// lo at out[C + c], b's at out[2C + c] and out[3C + c].
inline void bn_store_pairs(__global float *out, uint C, uint c, float2 a, float2 b) {
    out[c] = a.x;
    out[C + c] = a.y;
    out[2 * C + c] = b.x;
    out[3 * C + c] = b.y;
}

// Per channel, in two passes over the share: the sum S1 = sum x, then, about
// the shift m = S1 / count rounded to a float, Q = sum (x - m)^2 with every
// subtraction and square exact (two-sum and fma). The host takes the mean
// S1 / count and the centred sum of squares M2 = Q - (S1 - count m)^2 / count
// in double. stats: S1 hi, S1 lo, Q hi, Q lo, m, each (C).
__kernel void bn_stats(uint n, uint C, uint S, __global const float *x, uint xoff,
                       __global float *stats, uint soff, __local float2 *tmp) {
    const uint c = get_group_id(0), count = n * S, R = (S + BN_V - 1) / BN_V;
    __global const float *xc = x + xoff + c * S; /* sample b's row at xc + b * C * S */
    const bn_pair8 zero = {(float8)(0.0f), (float8)(0.0f)};
    bn_pair8 acc = zero;
    for (bn_walk w = bn_walk_start(R); w.b < n; bn_walk_next(&w, R))
        acc = bn_add8(acc, bn_load(xc + w.b * C * S, w.r * BN_V, S, 0.0f));
    const float2 s1 = bn_group_sum(tmp, bn_lanes((float2)(0.0f, 0.0f), acc));
    const float m = (s1.x + s1.y) / (float)count;
    acc = zero;
    for (bn_walk w = bn_walk_start(R); w.b < n; bn_walk_next(&w, R)) {
        /* x - m exactly as dh + dl (two-sum; m past S: zero) */
        const float8 v = bn_load(xc + w.b * C * S, w.r * BN_V, S, m), dh = v - m, bb = dh - v;
        const float8 dl = (v - (dh - bb)) + (-m - bb);
        const float8 p = dh * dh, p_err = fma(dh, dh, -p); /* dh^2 = p + p_err */
        acc = bn_add8(acc, p);
        acc.lo += p_err + 2.0f * dh * dl; /* (dh + dl)^2 to first order in dl */
    }
    const float2 q = bn_group_sum(tmp, bn_lanes((float2)(0.0f, 0.0f), acc));
    if (get_local_id(0) == 0) {
        bn_store_pairs(stats + soff, C, c, s1, q);
        stats[soff + 4 * C + c] = m;
    }
}

// The elementwise kernels below run one work-item per slot (row bc = b * C
// + c of x, its slot r of BN_V positions from r * BN_V): a full slot as one
// vector, a short last one value by value. Each takes its channel's affine
// map v -> v * scale + shift (to y) or its terms.

// y = (x - mean) * invstd * gamma + beta over the slot at i (count values:
// BN_V in a full slot).
inline void bn_normalize(__global const float *x, __global float *y, uint count, float mean,
                         float invstd, float gamma, float beta) {
    if (count == BN_V) {
        vstore8((vload8(0, x) - mean) * invstd * gamma + beta, 0, y);
        return;
    }
    for (uint k = 0; k < count; k++) y[k] = (x[k] - mean) * invstd * gamma + beta;
}

// The slot of (row, slot) work-item: where it starts in x and how many values.
inline uint bn_slot(uint S, uint *count) {
    const uint s = get_global_id(0) * BN_V;
    *count = min((uint)BN_V, S - s);
    return get_global_id(1) * S + s;
}

// y = (x - mean) * invstd * gamma + beta, with norm = (mean (C), invstd (C)).
// gamma and beta lie at params[poff], params[poff + C].
__kernel void bn_forward(uint n, uint C, uint S, __global const float *x, uint xoff,
                         __global float *y, uint yoff, __global const float *norm, uint noff,
                         __global const float *params, uint poff) {
    if (get_global_id(0) * BN_V >= S || get_global_id(1) >= n * C) return;
    const uint c = get_global_id(1) % C;
    uint count;
    const uint i = bn_slot(S, &count);
    bn_normalize(x + xoff + i, y + yoff + i, count, norm[noff + c], norm[noff + C + c],
                 params[poff + c], params[poff + C + c]);
}

// Evaluation: the running mean and variance, at buffers[moff], buffers[voff].
__kernel void bn_forward_eval(uint n, uint C, uint S, __global const float *x, uint xoff,
                              __global float *y, uint yoff, __global const float *buffers,
                              uint moff, uint voff, __global const float *params, uint poff,
                              float eps) {
    if (get_global_id(0) * BN_V >= S || get_global_id(1) >= n * C) return;
    const uint c = get_global_id(1) % C;
    uint count;
    const uint i = bn_slot(S, &count);
    bn_normalize(x + xoff + i, y + yoff + i, count, buffers[moff + c],
                 1.0f / sqrt(buffers[voff + c] + eps), params[poff + c], params[poff + C + c]);
}

// running = (1 - momentum) * running + momentum * batch, for the mean (at
// buffers[moff]) and the variance (buffers[voff]): batch = (mean (C),
// unbiased variance (C)) of the whole step, as the host merged them.
__kernel void bn_running(uint C, __global float *buffers, uint moff, uint voff,
                         __global const float *batch, uint boff, float momentum) {
    const uint c = get_global_id(0);
    if (c >= C) return;
    const float keep = 1.0f - momentum;
    buffers[moff + c] = keep * buffers[moff + c] + momentum * batch[boff + c];
    buffers[voff + c] = keep * buffers[voff + c] + momentum * batch[boff + C + c];
}

// Per channel over the share, as pairs: sum dy (sums: hi at c, lo at C + c)
// and sum dy * xhat (hi at 2C + c, lo at 3C + c). They are also this share's
// gradients of beta and gamma (added to what the gradient buffer holds when
// accumulate is set).
__kernel void bn_backward_sums(uint n, uint C, uint S, __global const float *x, uint xoff,
                               __global const float *dy, uint dyoff, __global const float *norm,
                               uint noff, __global float *sums, uint soff, __global float *grads,
                               uint goff, uint accumulate, __local float2 *tmp) {
    const uint c = get_group_id(0), R = (S + BN_V - 1) / BN_V;
    const float mean = norm[noff + c], invstd = norm[noff + C + c];
    const bn_pair8 zero = {(float8)(0.0f), (float8)(0.0f)};
    bn_pair8 a = zero, b = zero;
    for (bn_walk w = bn_walk_start(R); w.b < n; bn_walk_next(&w, R)) {
        const uint row = (w.b * C + c) * S, s = w.r * BN_V; /* past S: dy 0 adds nothing */
        const float8 g = bn_load(dy + dyoff + row, s, S, 0.0f);
        const float8 xhat = (bn_load(x + xoff + row, s, S, mean) - mean) * invstd;
        const float8 p = g * xhat;
        a = bn_add8(a, g);
        b = bn_add8(b, p);
        b.lo += fma(g, xhat, -p); /* the product's rounding error */
    }
    const float2 sum_dy = bn_group_sum(tmp, bn_lanes((float2)(0.0f, 0.0f), a));
    const float2 sum_dy_xhat = bn_group_sum(tmp, bn_lanes((float2)(0.0f, 0.0f), b));
    if (get_local_id(0) == 0) {
        bn_store_pairs(sums + soff, C, c, sum_dy, sum_dy_xhat);
        const float gg = sum_dy_xhat.x + sum_dy_xhat.y, gb = sum_dy.x + sum_dy.y;
        grads[goff + c] = accumulate ? grads[goff + c] + gg : gg;
        grads[goff + C + c] = accumulate ? grads[goff + C + c] + gb : gb;
    }
}

// dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), with the
// means over the normalized batch: means = (mean dy (C), mean dy*xhat (C)).
__kernel void bn_backward_dx(uint n, uint C, uint S, __global const float *x, uint xoff,
                             __global const float *dy, uint dyoff, __global float *dx, uint dxoff,
                             __global const float *norm, uint noff, __global const float *means,
                             uint moff, __global const float *params, uint poff, uint add) {
    if (get_global_id(0) * BN_V >= S || get_global_id(1) >= n * C) return;
    const uint c = get_global_id(1) % C;
    uint count;
    const uint i = bn_slot(S, &count);
    const float mean = norm[noff + c], invstd = norm[noff + C + c];
    const float mdy = means[moff + c], mdyx = means[moff + C + c], scale = params[poff + c] * invstd;
    __global const float *xs = x + xoff + i, *g = dy + dyoff + i;
    __global float *out = dx + dxoff + i;
    if (count == BN_V) {
        const float8 xhat = (vload8(0, xs) - mean) * invstd;
        float8 v = scale * (vload8(0, g) - mdy - xhat * mdyx);
        if (add) v += vload8(0, out);
        vstore8(v, 0, out);
        return;
    }
    for (uint k = 0; k < count; k++) {
        const float xhat = (xs[k] - mean) * invstd;
        clnet_store_dx(out + k, scale * (g[k] - mdy - xhat * mdyx), add);
    }
}
