// Upsampling by whole factors (PyTorch's nn.Upsample with an integer
// scale_factor) over three spatial axes (depth, height, width): a signal
// (C, L) is (C, 1, 1, L), an image (C, H, W) is (C, 1, H, W), and an axis
// that is not scaled has factor 1, where either mode is the identity.
//
// Along one axis of `in` cells and factor s, output cell o reads
//   nearest: cell o / s (PyTorch's mode='nearest', floor(o * in / out));
//   linear:  cells i0 and i1 = min(i0 + 1, in - 1) with weights 1 - l and l,
//            where src = (o + 0.5) / s - 0.5 clamped below at 0, i0 = floor(src)
//            and l = src - i0 (align_corners=False).
// src is worked out in integers, 2 s src = 2 o + 1 - s, so every device finds
// the same cells and weights.

// The cells and weights output cell o reads along an axis: w1 = 0 (and
// i1 = i0) in nearest mode.
typedef struct {
    uint i0, i1;
    float w0, w1;
} upsample_taps;

inline upsample_taps upsample_axis(uint o, uint in, uint s, uint linear) {
    upsample_taps t;
    if (!linear) {
        t.i0 = t.i1 = o / s;
        t.w0 = 1.0f;
        t.w1 = 0.0f;
        return t;
    }
    const int twice = 2 * (int)o + 1 - (int)s; // 2 s src, before the clamp at 0
    const uint num = twice > 0 ? (uint)twice : 0u, den = 2 * s;
    t.i0 = num / den;
    t.i1 = min(t.i0 + 1, in - 1);
    t.w1 = (float)(num - t.i0 * den) / (float)den;
    t.w0 = 1.0f - t.w1;
    return t;
}

// y (planes, D*sd, H*sh, W*sw) from x (planes, D, H, W): work-items over
// (ow, oh, plane * OD + od). Each output sums its 1, 2, 4 or 8 taps.
__kernel void upsample_forward(uint planes, uint D, uint H, uint W, uint sd, uint sh, uint sw,
                               uint linear, __global const float *x, uint xoff, __global float *y,
                               uint yoff) {
    const uint OD = D * sd, OH = H * sh, OW = W * sw;
    const uint ow = get_global_id(0), oh = get_global_id(1), pd = get_global_id(2);
    if (ow >= OW || oh >= OH || pd >= planes * OD) return;
    const uint plane = pd / OD, od = pd % OD;
    const upsample_taps td = upsample_axis(od, D, sd, linear);
    const upsample_taps th = upsample_axis(oh, H, sh, linear);
    const upsample_taps tw = upsample_axis(ow, W, sw, linear);
    __global const float *p = x + xoff + (size_t)plane * D * H * W;
    const uint di[2] = {td.i0, td.i1}, hi[2] = {th.i0, th.i1}, wi[2] = {tw.i0, tw.i1};
    const float dw[2] = {td.w0, td.w1}, hw[2] = {th.w0, th.w1}, ww[2] = {tw.w0, tw.w1};
    float sum = 0.0f;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++) {
                const float w = dw[a] * hw[b] * ww[c];
                if (w != 0.0f) sum += w * p[((size_t)di[a] * H + hi[b]) * W + wi[c]];
            }
    y[yoff + ((size_t)pd * OH + oh) * OW + ow] = sum;
}

// The output cells [*lo, *hi) along an axis that may read input cell i: in
// nearest mode the s cells i s .. i s + s - 1; in linear mode those whose i0
// is i - 1 or i, which lie within (i - 1) s .. (i + 2) s - 1 (src is o / s
// shifted by less than 1/2).
inline void upsample_reach(uint i, uint in, uint s, uint linear, uint *lo, uint *hi) {
    if (!linear) {
        *lo = i * s;
        *hi = *lo + s;
        return;
    }
    *lo = i > 0 ? (i - 1) * s : 0;
    *hi = min((i + 2) * s, in * s);
}

// What output cell o's taps give input cell i along an axis.
inline float upsample_weight(uint o, uint i, uint in, uint s, uint linear) {
    const upsample_taps t = upsample_axis(o, in, s, linear);
    return (t.i0 == i ? t.w0 : 0.0f) + (t.i1 == i ? t.w1 : 0.0f);
}

// Forward was y[o] = sum of w(o, i) x[i] over o's taps, so backward is
// dx[i] = sum of w(o, i) dy[o] over the outputs o that read i. Each work-item
// gathers one dx cell over the outputs in reach along each axis, in a fixed
// order: no atomics, and the same sum on every run. Work-items over
// (w, h, plane * D + d); dx is overwritten, or added to with add = 1.
__kernel void upsample_backward(uint planes, uint D, uint H, uint W, uint sd, uint sh, uint sw,
                                uint linear, __global const float *dy, uint dyoff,
                                __global float *dx, uint dxoff, uint add) {
    const uint OD = D * sd, OH = H * sh, OW = W * sw;
    const uint w = get_global_id(0), h = get_global_id(1), pd = get_global_id(2);
    if (w >= W || h >= H || pd >= planes * D) return;
    const uint plane = pd / D, d = pd % D;
    uint d0, d1, h0, h1, w0, w1;
    upsample_reach(d, D, sd, linear, &d0, &d1);
    upsample_reach(h, H, sh, linear, &h0, &h1);
    upsample_reach(w, W, sw, linear, &w0, &w1);
    __global const float *g = dy + dyoff + (size_t)plane * OD * OH * OW;
    float sum = 0.0f;
    for (uint od = d0; od < d1; od++) {
        const float a = upsample_weight(od, d, D, sd, linear);
        if (a == 0.0f) continue;
        for (uint oh = h0; oh < h1; oh++) {
            const float b = a * upsample_weight(oh, h, H, sh, linear);
            if (b == 0.0f) continue;
            for (uint ow = w0; ow < w1; ow++) {
                const float c = b * upsample_weight(ow, w, W, sw, linear);
                if (c != 0.0f) sum += c * g[((size_t)od * OH + oh) * OW + ow];
            }
        }
    }
    clnet_store_dx(dx + dxoff + ((size_t)pd * H + h) * W + w, sum, add);
}
