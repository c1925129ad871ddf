// Max and average pooling, NCHW: x (n, C, H, W) -> y (n, C, OH, OW),
// OH = (H + 2*ph - KH) / sh + 1, rounded up in ceil mode (the host computes it:
// a last window must start inside the input or its left padding). Windows may
// overlap (stride < kernel).
// Padding: for max, padded places never win (the host requires ph < KH so every
// window holds a real pixel); for average, they count as zeros and the divisor
// is always KH*KW (PyTorch's count_include_pad=True).

// Work-items run over (ox, oy, b*C + c) for forward and (ix, iy, b*C + c) for
// backward: three dimensions, so no index is decoded by division.

// y = max over the window; arg = the index (iy*W + ix) of the first maximum in
// row-major window order (strictly greater wins, as PyTorch does). With
// -DPOOL_DH/-DPOOL_DW (max pooling's dilation) the window's taps are that far
// apart and the window spans d*(k-1)+1.
#ifndef POOL_DH
#define POOL_DH 1
#define POOL_DW 1
#endif
__kernel void maxpool_forward(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw,
                              uint ph, uint pw, uint OH, uint OW, __global const float *x,
                              uint xoff, __global float *y, uint yoff, __global int *arg,
                              uint argoff) {
    const uint ox = get_global_id(0), oy = get_global_id(1), bc = get_global_id(2);
    if (ox >= WIN(OW) || oy >= WIN(OH) || bc >= n * WIN(C)) return;
    __global const float *plane = x + xoff + bc * WIN(H) * WIN(W);
    float best = -INFINITY;
    int where = -1;
#if POOL_DH == 1 && POOL_DW == 1
    int ylo, yhi, xlo, xhi;
    clnet_window_span(oy, WIN(sh), WIN(ph), WIN(KH), WIN(H), &ylo, &yhi);
    clnet_window_span(ox, WIN(sw), WIN(pw), WIN(KW), WIN(W), &xlo, &xhi);
    best = plane[ylo * (int)WIN(W) + xlo];
    where = ylo * (int)WIN(W) + xlo;
    for (int iy = ylo; iy < yhi; iy++)
        for (int ix = xlo; ix < xhi; ix++) {
            const float v = plane[iy * (int)WIN(W) + ix];
            if (v > best) {
                best = v;
                where = iy * (int)WIN(W) + ix;
            }
        }
#else
    const int y0 = (int)(oy * WIN(sh)) - (int)WIN(ph), x0 = (int)(ox * WIN(sw)) - (int)WIN(pw);
    for (uint ky = 0; ky < WIN(KH); ky++) {
        const int iy = y0 + (int)(ky * POOL_DH);
        if (iy < 0 || iy >= (int)WIN(H)) continue;
        for (uint kx = 0; kx < WIN(KW); kx++) {
            const int ix = x0 + (int)(kx * POOL_DW);
            if (ix < 0 || ix >= (int)WIN(W)) continue;
            const float v = plane[iy * (int)WIN(W) + ix];
            if (where < 0 || v > best) {
                best = v;
                where = iy * (int)WIN(W) + ix;
            }
        }
    }
#endif
    const uint o = (bc * WIN(OH) + oy) * WIN(OW) + ox;
    y[yoff + o] = best;
    arg[argoff + o] = where;
}

// Forward was y = x[arg], so backward gives each input the sum of dy over the
// windows whose maximum it was. Gather form: one work-item per input element.
__kernel void maxpool_backward(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw,
                               uint ph, uint pw, uint OH, uint OW, __global const float *dy,
                               uint dyoff, __global const int *arg, uint argoff, __global float *dx,
                               uint dxoff) {
    const uint ix = get_global_id(0), iy = get_global_id(1), bc = get_global_id(2);
    if (ix >= WIN(W) || iy >= WIN(H) || bc >= n * WIN(C)) return;
    const int me = (int)(iy * WIN(W) + ix);
    float s = 0.0f;
#if POOL_DH == 1 && POOL_DW == 1
    int oy_lo, oy_hi, ox_lo, ox_hi;
    clnet_windows_holding((int)iy, (int)WIN(KH), (int)WIN(sh), (int)WIN(ph), (int)WIN(OH), &oy_lo, &oy_hi);
    clnet_windows_holding((int)ix, (int)WIN(KW), (int)WIN(sw), (int)WIN(pw), (int)WIN(OW), &ox_lo, &ox_hi);
    for (int oy = oy_lo; oy <= oy_hi; oy++)
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            const uint o = (bc * WIN(OH) + (uint)oy) * WIN(OW) + (uint)ox;
            if (arg[argoff + o] == me) s += dy[dyoff + o];
        }
#else // the windows that hold (iy, ix) at one of their taps
    for (uint ky = 0; ky < WIN(KH); ky++) {
        const int ty = (int)(iy + WIN(ph)) - (int)(ky * POOL_DH); // = oy * sh
        if (ty < 0 || ty % (int)WIN(sh) != 0 || ty / (int)WIN(sh) >= (int)WIN(OH)) continue;
        for (uint kx = 0; kx < WIN(KW); kx++) {
            const int tx = (int)(ix + WIN(pw)) - (int)(kx * POOL_DW);
            if (tx < 0 || tx % (int)WIN(sw) != 0 || tx / (int)WIN(sw) >= (int)WIN(OW)) continue;
            const uint o = (bc * WIN(OH) + (uint)(ty / (int)WIN(sh))) * WIN(OW) + (uint)(tx / (int)WIN(sw));
            if (arg[argoff + o] == me) s += dy[dyoff + o];
        }
    }
#endif
    clnet_store_dx(dx + dxoff + (bc * WIN(H) + iy) * WIN(W) + ix, s);
}

// Average pooling's divisor. PyTorch's rules: with count_pad (-DPOOL_COUNT_PAD=1,
// its count_include_pad, the default) the window's cells up to the padded edge,
// which is KH*KW unless ceil mode lets the last window overhang that edge;
// without, the input's own cells in the window.
#ifndef POOL_COUNT_PAD
#define POOL_COUNT_PAD 1
#endif
#ifndef POOL_CEIL
#define POOL_CEIL 0
#endif
inline float avgpool_divisor(uint oy, uint ox, uint sh, uint sw, uint ph, uint pw, uint KH, uint KW,
                             uint H, uint W) {
    const int ys = (int)(oy * sh) - (int)ph, xs = (int)(ox * sw) - (int)pw;
#if POOL_COUNT_PAD
    return (float)((min(ys + (int)KH, (int)(H + ph)) - ys) * (min(xs + (int)KW, (int)(W + pw)) - xs));
#else
    return (float)((min(ys + (int)KH, (int)H) - max(ys, 0)) * (min(xs + (int)KW, (int)W) - max(xs, 0)));
#endif
}

__kernel void avgpool_forward(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw,
                              uint ph, uint pw, uint OH, uint OW, __global const float *x,
                              uint xoff, __global float *y, uint yoff) {
    const uint ox = get_global_id(0), oy = get_global_id(1), bc = get_global_id(2);
    if (ox >= WIN(OW) || oy >= WIN(OH) || bc >= n * WIN(C)) return;
    __global const float *plane = x + xoff + bc * WIN(H) * WIN(W);
    int ylo, yhi, xlo, xhi;
    clnet_window_span(oy, WIN(sh), WIN(ph), WIN(KH), WIN(H), &ylo, &yhi);
    clnet_window_span(ox, WIN(sw), WIN(pw), WIN(KW), WIN(W), &xlo, &xhi);
    float s = 0.0f;
    for (int iy = ylo; iy < yhi; iy++)
        for (int ix = xlo; ix < xhi; ix++) s += plane[iy * (int)WIN(W) + ix];
#if POOL_COUNT_PAD && !POOL_CEIL
    const float divisor = (float)(WIN(KH) * WIN(KW));
#else
    const float divisor = avgpool_divisor(oy, ox, WIN(sh), WIN(sw), WIN(ph), WIN(pw), WIN(KH), WIN(KW), WIN(H), WIN(W));
#endif
    y[yoff + (bc * WIN(OH) + oy) * WIN(OW) + ox] = s / divisor;
}

// Forward was y = sum(window) / (KH*KW), so each input gets dy / (KH*KW) from
// every window that holds it.
__kernel void avgpool_backward(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw,
                               uint ph, uint pw, uint OH, uint OW, __global const float *dy,
                               uint dyoff, __global float *dx, uint dxoff) {
    const uint ix = get_global_id(0), iy = get_global_id(1), bc = get_global_id(2);
    if (ix >= WIN(W) || iy >= WIN(H) || bc >= n * WIN(C)) return;
    int oy_lo, oy_hi, ox_lo, ox_hi;
    clnet_windows_holding((int)iy, (int)WIN(KH), (int)WIN(sh), (int)WIN(ph), (int)WIN(OH), &oy_lo, &oy_hi);
    clnet_windows_holding((int)ix, (int)WIN(KW), (int)WIN(sw), (int)WIN(pw), (int)WIN(OW), &ox_lo, &ox_hi);
    float s = 0.0f;
#if POOL_COUNT_PAD && !POOL_CEIL
    for (int oy = oy_lo; oy <= oy_hi; oy++)
        for (int ox = ox_lo; ox <= ox_hi; ox++)
            s += dy[dyoff + (bc * WIN(OH) + (uint)oy) * WIN(OW) + (uint)ox];
    clnet_store_dx(dx + dxoff + (bc * WIN(H) + iy) * WIN(W) + ix, s / (float)(WIN(KH) * WIN(KW)));
#else // each window has a divisor of its own
    for (int oy = oy_lo; oy <= oy_hi; oy++)
        for (int ox = ox_lo; ox <= ox_hi; ox++)
            s += dy[dyoff + (bc * WIN(OH) + (uint)oy) * WIN(OW) + (uint)ox] /
                 avgpool_divisor((uint)oy, (uint)ox, WIN(sh), WIN(sw), WIN(ph), WIN(pw), WIN(KH), WIN(KW), WIN(H), WIN(W));
    clnet_store_dx(dx + dxoff + (bc * WIN(H) + iy) * WIN(W) + ix, s);
#endif
}

// Global average pooling (PyTorch's AdaptiveAvgPool2d(1)): x (n, C, S) ->
// y (n, C), S the spatial positions of one plane (H*W for an image, any number
// of spatial dimensions). One work-item per plane: the planes it meets are
// small (7x7 at the end of ResNet-18) and many (n*C).
__kernel void global_avgpool_forward(uint planes, uint S, __global const float *x, uint xoff,
                                     __global float *y, uint yoff) {
    const uint bc = get_global_id(0);
    if (bc >= planes) return;
    __global const float *plane = x + xoff + bc * S;
    float s = 0.0f;
    for (uint i = 0; i < S; i++) s += plane[i];
    y[yoff + bc] = s / (float)S;
}

// y = the largest value of each plane (global_maxpool): one work-item per plane.
// As PyTorch's AdaptiveMaxPool picks it: the first largest value, or the last
// NaN (a NaN always wins).
inline uint global_argmax(__global const float *plane, uint S) {
    uint best = 0;
    float m = plane[0];
    for (uint i = 1; i < S; i++)
        if (plane[i] > m || isnan(plane[i])) {
            m = plane[i];
            best = i;
        }
    return best;
}

__kernel void global_maxpool_forward(uint planes, uint S, __global const float *x, uint xoff,
                                     __global float *y, uint yoff) {
    const uint bc = get_global_id(0);
    if (bc >= planes) return;
    __global const float *plane = x + xoff + bc * S;
    y[yoff + bc] = plane[global_argmax(plane, S)];
}

// Forward took one value of each plane, so dx is dy there and 0 elsewhere; the
// place is found again from x. One work-item per plane.
__kernel void global_maxpool_backward(uint planes, uint S, __global const float *x, uint xoff,
                                      __global const float *dy, uint dyoff, __global float *dx,
                                      uint dxoff) {
    const uint bc = get_global_id(0);
    if (bc >= planes) return;
    const uint best = global_argmax(x + xoff + bc * S, S);
    const float g = dy[dyoff + bc];
    for (uint i = 0; i < S; i++) clnet_store_dx(dx + dxoff + bc * S + i, i == best ? g : 0.0f);
}

// Forward was y = sum(plane) / S, so backward is dx = dy / S at every position
// of the plane. Work-items run over (position, b*C + c).
__kernel void global_avgpool_backward(uint planes, uint S, __global const float *dy, uint dyoff,
                                      __global float *dx, uint dxoff) {
    const uint i = get_global_id(0), bc = get_global_id(1);
    if (i >= S || bc >= planes) return;
    clnet_store_dx(dx + dxoff + bc * S + i, dy[dyoff + bc] / (float)S);
}
