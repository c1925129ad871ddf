// Batch normalization over x (n, C, S): channel c's n*S values are
// x[(b*C + c)*S + s]. The statistics kernels run one work-group per channel
// (local size a power of two). With one device, bn_finish turns the
// statistics into what normalizes; with several, the host merges what the
// devices computed (src/layers/batchnorm.c) and sends that back.
//
// What normalizes, norm (3C): the mean as a pair of floats, hi (C) and lo
// (C), so that a mean far from zero against the spread loses nothing when x
// - mean is taken; then 1/std (C). x - mean is (x - hi) - lo.
//
// With a relu taken in (the relu after the batch norm: relu = 1), y is
// max(y, 0), and backward passes dy only where y > 0, finding y again from
// x with the same operations in the same order. Where an add alone reads
// the batch norm (src/layers/add.c), in training the add makes y as it sums
// (bn_add_forward), and backward reads the add's dy, masked by the add's
// output when the add took in a relu.
//
// The statistics are sums carried as unevaluated pairs hi + lo of floats
// (compensated: each addition's rounding error is kept in lo), so they are
// nearly exact whatever the order of the additions, and so whatever the
// split of a batch across devices: N devices then normalize with the same
// floats as one device, and no activation moves by a rounding. Statistics
// merged from a convolution's records (bn_merge) keep that across blocks,
// but each block's own sums are plain floats over the samples of its
// device's share: there N devices may normalize a rounding apart.

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
// consecutive positions, n * R in all. Spread over the L work-items of the
// work-group (GPUs: `blocks` 0), work-item i takes slots i, i + L, i + 2L,
// ..., so that neighbouring work-items read neighbouring slots at once; in
// blocks (CPUs, which run a work-group's items one after another), work-item
// i takes the i-th run of ceil(n * R / L) consecutive slots, so that it reads
// along its rows and each cache line once (spread, every line was read by
// two work-items a channel's walk apart: 2-3x the time). Each lane of a slot
// adds to its own pair; the lanes' pairs are added in lane order at the end.
// A short last slot is filled with a value that adds exactly zero.
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
    uint db, dr; // a step as samples and slots
    uint left;   // the slots still to take
} bn_walk;

inline bn_walk bn_walk_start(uint n, uint R, uint blocks) {
    const uint i = get_local_id(0), L = get_local_size(0), total = n * R;
    if (blocks) {
        const uint per = (total + L - 1) / L, first = min(i * per, total);
        return (bn_walk){first / R, first % R, 0, 1, min(per, total - first)};
    }
    return (bn_walk){i / R, i % R, L / R, L % R, i < total ? (total - i + L - 1) / L : 0};
}

inline void bn_walk_next(bn_walk *w, uint R) {
    w->left--;
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
// the shift m = S1 / count rounded to a float, D = sum (x - m) and Q = sum (x
// - m)^2, with every subtraction and square exact (two-sum and fma; D, a sum
// of terms about the spread that mostly cancel, needs no pair). The mean is
// m + D / count, the centred sum of squares M2 = Q - D^2 / count: nothing
// cancels, however far the mean lies from zero. stats: D hi, D lo, Q hi, Q
// lo, m, each (C).
__kernel void bn_stats(uint n, uint C, uint S, __global const float *x, uint xoff,
                       __global float *stats, uint soff, uint blocks, __local float2 *tmp) {
    const uint c = get_group_id(0), count = n * S, R = (S + BN_V - 1) / BN_V;
    __global const float *xc = x + xoff + c * S; /* sample b's row at xc + b * C * S */
    const bn_pair8 zero = {(float8)(0.0f), (float8)(0.0f)};
    bn_pair8 acc = zero;
    for (bn_walk w = bn_walk_start(n, R, blocks); w.left; bn_walk_next(&w, R))
        acc = bn_add8(acc, bn_load(xc + w.b * C * S, w.r * BN_V, S, 0.0f));
    const float2 s1 = bn_group_sum(tmp, bn_lanes((float2)(0.0f, 0.0f), acc));
    const float m = (s1.x + s1.y) / (float)count;
    float8 d = 0.0f; /* small: about count times m's rounding, plus cancelling terms */
    acc = zero;
    for (bn_walk w = bn_walk_start(n, R, blocks); w.left; bn_walk_next(&w, R)) {
        /* x - m exactly as dh + dl (two-sum; m past S: zero) */
        const float8 v = bn_load(xc + w.b * C * S, w.r * BN_V, S, m), dh = v - m, bb = dh - v;
        const float8 dl = (v - (dh - bb)) + (-m - bb);
        const float8 p = dh * dh, p_err = fma(dh, dh, -p); /* dh^2 = p + p_err */
        d += dh + dl;
        acc = bn_add8(acc, p);
        acc.lo += p_err + 2.0f * dh * dl; /* (dh + dl)^2 to first order in dl */
    }
    const float2 sd = bn_group_sum(tmp, bn_lanes((float2)(0.0f, 0.0f), (bn_pair8){d, 0.0f}));
    const float2 q = bn_group_sum(tmp, bn_lanes((float2)(0.0f, 0.0f), acc));
    if (get_local_id(0) == 0) {
        bn_store_pairs(stats + soff, C, c, sd, q);
        stats[soff + 4 * C + c] = m;
    }
}

// bn_stats's D, Q and m from the records that the convolution before the
// batch norm wrote as it stored x (cl/conv_lanes.cl's lanes_out,
// cl/conv_implicit.cl's implicit_output; src/layers/conv.c): channel c's R
// records at rec + roff + 4 * (c * R + r), each a block's count k, its mean
// m_b and its sums d_b = sum (x - m_b) and q_b = sum (x - m_b)^2, count
// values in all. As in bn_stats, the first pass takes the shift m = sum x /
// count rounded to a float (a block adds k m_b + d_b); about it, with delta
// = m_b - m, a block adds k delta + d_b to D and q_b + delta (2 d_b + k
// delta) to Q (Chan's formula), all as pairs: delta is exact (two-sum) and
// the products keep their rounding (fma). A block's own sums are about its
// own mean, so nothing cancels however far that lies from zero. Walked like
// bn_stats's slots (blocks: see bn_walk_start), in a fixed order.
__kernel void bn_merge(uint C, uint R, float count, __global const float *rec, uint roff,
                       __global float *stats, uint soff, uint blocks, __local float2 *tmp) {
    const uint c = get_group_id(0);
    __global const float *rc = rec + roff + 4 * c * R;
    float2 s1 = (float2)(0.0f, 0.0f);
    for (bn_walk w = bn_walk_start(1, R, blocks); w.left; bn_walk_next(&w, R)) {
        const float4 r = vload4(w.r, rc); /* k, m_b, d_b, q_b */
        const float km = r.x * r.y;
        s1 = bn_add2(s1, bn_two_sum(km, r.z));
        s1.y += fma(r.x, r.y, -km);
    }
    s1 = bn_group_sum(tmp, s1);
    const float m = (s1.x + s1.y) / count;
    float2 d = (float2)(0.0f, 0.0f), q = (float2)(0.0f, 0.0f);
    for (bn_walk w = bn_walk_start(1, R, blocks); w.left; bn_walk_next(&w, R)) {
        const float4 r = vload4(w.r, rc);
        const float2 delta = bn_two_sum(r.y, -m);
        const float kd = r.x * delta.x;
        d = bn_add2(d, bn_two_sum(kd, r.z));
        d.y += fma(r.x, delta.x, -kd) + r.x * delta.y;
        q = bn_add2(q, bn_two_sum(r.w, delta.x * (2.0f * r.z + kd)));
    }
    const float2 sd = bn_group_sum(tmp, d), sq = bn_group_sum(tmp, q);
    if (get_local_id(0) == 0) {
        bn_store_pairs(stats + soff, C, c, sd, sq);
        stats[soff + 4 * C + c] = m;
    }
}

// One device's statistics (bn_stats's, over count values a channel) made
// into norm (at noff), and the running mean and variance moved by momentum
// towards the batch's mean and unbiased variance. One work-item a channel.
__kernel void bn_finish(uint C, float count, __global const float *stats, uint soff,
                        __global float *norm, uint noff, float eps, __global float *buffers,
                        uint moff, uint voff, float momentum) {
    const uint c = get_global_id(0);
    if (c >= C) return;
    __global const float *st = stats + soff;
    const float m = st[4 * C + c], d = st[c] + st[C + c], q = st[2 * C + c] + st[3 * C + c];
    const float lo = d / count, m2 = fmax(q - d * lo, 0.0f);
    norm[noff + c] = m;
    norm[noff + C + c] = lo;
    norm[noff + 2 * C + c] = 1.0f / sqrt(m2 / count + eps);
    const float keep = 1.0f - momentum;
    buffers[moff + c] = keep * buffers[moff + c] + momentum * (m + lo);
    buffers[voff + c] = keep * buffers[voff + c] + momentum * (m2 / fmax(count - 1.0f, 1.0f));
}

// The elementwise kernels below run one work-item per slot (row bc = b * C
// + c of x, its slot r of BN_V positions from r * BN_V): a full slot as one
// vector, a short last one value by value. Each takes its channel's affine
// map v -> v * scale + shift (to y) or its terms.

// A channel's map from x to y: y = ((x - hi) - lo) * invstd * gamma + beta,
// then the relu if taken in. Every kernel that needs y again computes it
// with these two functions, so that it is the same float.
typedef struct {
    float hi, lo, invstd, gamma, beta;
    uint relu;
} bn_map;

inline float8 bn_xhat8(bn_map f, float8 x) {
    return ((x - f.hi) - f.lo) * f.invstd;
}
inline float bn_xhat(bn_map f, float x) {
    return ((x - f.hi) - f.lo) * f.invstd;
}
inline float8 bn_y8(bn_map f, float8 x) {
    const float8 y = bn_xhat8(f, x) * f.gamma + f.beta;
    return f.relu ? fmax(y, 0.0f) : y;
}
inline float bn_y(bn_map f, float x) {
    const float y = bn_xhat(f, x) * f.gamma + f.beta;
    return f.relu ? fmax(y, 0.0f) : y;
}

// Channel c's map in training: norm (3C) at noff, gamma and beta at
// params[poff + c], params[poff + C + c].
inline bn_map bn_train_map(uint C, uint c, __global const float *norm, uint noff,
                           __global const float *params, uint poff, uint relu) {
    return (bn_map){norm[noff + c],   norm[noff + C + c],     norm[noff + 2 * C + c],
                    params[poff + c], params[poff + C + c], relu};
}

// y = f(x) over the slot at i (count values: BN_V in a full slot).
inline void bn_normalize(__global const float *x, __global float *y, uint count, bn_map f) {
    if (count == BN_V) {
        vstore8(bn_y8(f, vload8(0, x)), 0, y);
        return;
    }
    for (uint k = 0; k < count; k++) y[k] = bn_y(f, x[k]);
}

// The (row, slot) work-item's slot: 0 past the rows' n * C or S's slots;
// else its channel, where it starts in x and how many values it holds.
inline int bn_slot(uint n, uint C, uint S, uint *c, uint *i, uint *count) {
    const uint s = get_global_id(0) * BN_V, row = get_global_id(1);
    if (s >= S || row >= n * C) return 0;
    *c = row % C;
    *i = row * S + s;
    *count = min((uint)BN_V, S - s);
    return 1;
}

// y = f(x) with the batch's statistics: norm (3C) at noff.
__kernel void bn_forward(uint n, uint C, uint S, __global const float *x, uint xoff,
                         __global float *y, uint yoff, __global const float *norm, uint noff,
                         __global const float *params, uint poff, uint relu) {
    uint c, i, count;
    if (!bn_slot(n, C, S, &c, &i, &count)) return;
    bn_normalize(x + xoff + i, y + yoff + i, count,
                 bn_train_map(C, c, norm, noff, params, poff, relu));
}

// The add that alone reads a batch norm, in training: y = f(x) + other, then
// max(., 0) with relu, f the batch norm's map of its input x (src/layers/add.c).
__kernel void bn_add_forward(uint n, uint C, uint S, __global const float *x, uint xoff,
                             __global const float *other, uint ooff, __global float *y, uint yoff,
                             __global const float *norm, uint noff, __global const float *params,
                             uint poff, uint relu) {
    uint c, i, count;
    if (!bn_slot(n, C, S, &c, &i, &count)) return;
    const bn_map f = bn_train_map(C, c, norm, noff, params, poff, 0);
    __global const float *xs = x + xoff + i, *os = other + ooff + i;
    __global float *out = y + yoff + i;
    if (count == BN_V) {
        const float8 v = bn_y8(f, vload8(0, xs)) + vload8(0, os);
        vstore8(relu ? fmax(v, 0.0f) : v, 0, out);
        return;
    }
    for (uint k = 0; k < count; k++) {
        const float v = bn_y(f, xs[k]) + os[k];
        out[k] = relu ? fmax(v, 0.0f) : v;
    }
}

// Evaluation: the running mean and variance, at buffers[moff], buffers[voff].
__kernel void bn_forward_eval(uint n, uint C, uint S, __global const float *x, uint xoff,
                              __global float *y, uint yoff, __global const float *buffers,
                              uint moff, uint voff, __global const float *params, uint poff,
                              float eps, uint relu) {
    uint c, i, count;
    if (!bn_slot(n, C, S, &c, &i, &count)) return;
    const bn_map f = {buffers[moff + c],   0.0f, 1.0f / sqrt(buffers[voff + c] + eps),
                      params[poff + c], params[poff + C + c], relu};
    bn_normalize(x + xoff + i, y + yoff + i, count, f);
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

// dy where the relu taken in passed it (y > 0), else 0; dy itself without one.
inline float8 bn_pass8(bn_map f, float8 x, float8 dy) {
    return f.relu ? select((float8)(0.0f), dy, bn_y8(f, x) > 0.0f) : dy;
}
inline float bn_pass(bn_map f, float x, float dy) {
    return f.relu && !(bn_y(f, x) > 0.0f) ? 0.0f : dy;
}

// The gradient of the normalized y: dy past the relu taken in, or with
// `masked` (the add after it took in a relu and made y: src/layers/add.c) dy
// where that add's output, mask, is > 0.
inline float8 bn_grad8(bn_map f, float8 x, float8 dy, float8 mask, uint masked) {
    return masked ? select((float8)(0.0f), dy, mask > 0.0f) : bn_pass8(f, x, dy);
}
inline float bn_grad(bn_map f, float x, float dy, float mask, uint masked) {
    return masked ? (mask > 0.0f ? dy : 0.0f) : bn_pass(f, x, dy);
}

// The slot's values of v at row + s on (those before S), added to what is
// there with add.
inline void bn_store(__global float *row, uint s, uint S, float8 v, uint add) {
    if (s + BN_V <= S) {
        vstore8(add ? v + vload8(0, row + s) : v, 0, row + s);
        return;
    }
    float t[BN_V];
    vstore8(v, 0, t);
    for (uint k = 0; s + k < S; k++) clnet_store_dx(row + s + k, t[k], add);
}

// Per channel over the share, as pairs: sum g (sums: hi at c, lo at C + c)
// and sum g * xhat (hi at 2C + c, lo at 3C + c), with g the gradient of the
// normalized y (bn_grad8: dy past the relu taken in, or the add's dy where
// its output, mask, is > 0). They are also this share's gradients of beta
// and gamma (added to what the gradient buffer holds when accumulate is set).
// With pass (the add that normalizes the batch norm, in its backward:
// src/layers/add.c), g is also written to dxo at dxoff, as that add's
// gradient of another input (pass 2: added to what is there).
__kernel void bn_backward_sums(uint n, uint C, uint S, __global const float *x, uint xoff,
                               __global const float *dy, uint dyoff, __global const float *norm,
                               uint noff, __global const float *params, uint poff, uint relu,
                               __global const float *mask, uint moff, uint masked,
                               __global float *sums, uint soff, __global float *grads, uint goff,
                               uint accumulate, __global float *dxo, uint dxoff, uint pass,
                               uint blocks, __local float2 *tmp) {
    const uint c = get_group_id(0), R = (S + BN_V - 1) / BN_V;
    const bn_map f = bn_train_map(C, c, norm, noff, params, poff, relu);
    const bn_pair8 zero = {(float8)(0.0f), (float8)(0.0f)};
    bn_pair8 a = zero, b = zero;
    for (bn_walk w = bn_walk_start(n, R, blocks); w.left; bn_walk_next(&w, R)) {
        const uint row = (w.b * C + c) * S, s = w.r * BN_V; /* past S: dy 0 adds nothing */
        const float8 v = bn_load(x + xoff + row, s, S, f.hi);
        const float8 m8 = masked ? bn_load(mask + moff + row, s, S, 0.0f) : 0.0f;
        const float8 g = bn_grad8(f, v, bn_load(dy + dyoff + row, s, S, 0.0f), m8, masked);
        if (pass) bn_store(dxo + dxoff + row, s, S, g, pass == 2);
        const float8 xhat = bn_xhat8(f, v);
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

// dx = gamma * invstd * (g - mean(g) - xhat * mean(g * xhat)), g as in
// bn_backward_sums, with the means over the normalized batch: the sums
// (bn_backward_sums's pairs, or every device's, at soff) over total values
// a channel.
__kernel void bn_backward_dx(uint n, uint C, uint S, __global const float *x, uint xoff,
                             __global const float *dy, uint dyoff, __global float *dx, uint dxoff,
                             __global const float *norm, uint noff, __global const float *sums,
                             uint soff, float total, __global const float *params, uint poff,
                             uint relu, __global const float *mask, uint moff, uint masked,
                             uint add) {
    uint c, i, count;
    if (!bn_slot(n, C, S, &c, &i, &count)) return;
    const bn_map f = bn_train_map(C, c, norm, noff, params, poff, relu);
    __global const float *st = sums + soff;
    const float mdy = (st[c] + st[C + c]) / total, mdyx = (st[2 * C + c] + st[3 * C + c]) / total;
    const float scale = f.gamma * f.invstd;
    __global const float *xs = x + xoff + i, *g = dy + dyoff + i, *ms = mask + moff + i;
    __global float *out = dx + dxoff + i;
    if (count == BN_V) {
        const float8 v8 = vload8(0, xs), m8 = masked ? vload8(0, ms) : 0.0f;
        float8 v = scale * (bn_grad8(f, v8, vload8(0, g), m8, masked) - mdy - bn_xhat8(f, v8) * mdyx);
        if (add) v += vload8(0, out);
        vstore8(v, 0, out);
        return;
    }
    for (uint k = 0; k < count; k++) {
        const float gk = bn_grad(f, xs[k], g[k], masked ? ms[k] : 0.0f, masked);
        clnet_store_dx(out + k, scale * (gk - mdy - bn_xhat(f, xs[k]) * mdyx), add);
    }
}
