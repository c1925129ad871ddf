// Max and average pooling, NCHW: x (n, C, H, W) -> y (n, C, OH, OW),
// OH = (H + 2*ph - KH) / sh + 1. Windows may overlap (stride < kernel).
// Padding: for max, padded places never win (the host requires ph < KH so every
// window holds a real pixel); for average, they count as zeros and the divisor
// is always KH*KW (PyTorch's count_include_pad=True).

// y = max over the window; arg = the index (iy*W + ix) of the first maximum in
// row-major window order (strictly greater wins, as PyTorch does).
__kernel void maxpool_forward(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw,
                              uint ph, uint pw, uint OH, uint OW, __global const float *x,
                              uint xoff, __global float *y, uint yoff, __global int *arg,
                              uint argoff) {
    const uint i = get_global_id(0);
    if (i >= n * C * OH * OW) return;
    const uint ox = i % OW, oy = (i / OW) % OH, bc = i / (OW * OH);
    __global const float *plane = x + xoff + bc * H * W;
    float best = -INFINITY;
    int where = -1;
    for (uint ky = 0; ky < KH; ky++) {
        const int iy = (int)(oy * sh + ky) - (int)ph;
        if (iy < 0 || iy >= (int)H) continue;
        for (uint kx = 0; kx < KW; kx++) {
            const int ix = (int)(ox * sw + kx) - (int)pw;
            if (ix < 0 || ix >= (int)W) continue;
            const float v = plane[iy * (int)W + ix];
            if (v > best || where < 0) {
                best = v;
                where = iy * (int)W + ix;
            }
        }
    }
    y[yoff + i] = best;
    arg[argoff + i] = where;
}

// Forward was y = x[arg], so backward gives each input the sum of dy over the
// windows whose maximum it was. Gather form: one work-item per input element.
__kernel void maxpool_backward(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw,
                               uint ph, uint pw, uint OH, uint OW, __global const float *dy,
                               uint dyoff, __global const int *arg, uint argoff,
                               __global float *dx, uint dxoff) {
    const uint i = get_global_id(0);
    if (i >= n * C * H * W) return;
    const uint ix = i % W, iy = (i / W) % H, bc = i / (W * H);
    const int me = (int)(iy * W + ix);
    float s = 0.0f;
    for (uint ky = 0; ky < KH; ky++) {
        const int ty = (int)(iy + ph) - (int)ky;
        if (ty < 0 || ty % (int)sh != 0 || (uint)ty / sh >= OH) continue;
        const uint oy = (uint)ty / sh;
        for (uint kx = 0; kx < KW; kx++) {
            const int tx = (int)(ix + pw) - (int)kx;
            if (tx < 0 || tx % (int)sw != 0 || (uint)tx / sw >= OW) continue;
            const uint o = (bc * OH + oy) * OW + (uint)tx / sw;
            if (arg[argoff + o] == me) s += dy[dyoff + o];
        }
    }
    dx[dxoff + i] = s;
}

__kernel void avgpool_forward(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw,
                              uint ph, uint pw, uint OH, uint OW, __global const float *x,
                              uint xoff, __global float *y, uint yoff) {
    const uint i = get_global_id(0);
    if (i >= n * C * OH * OW) return;
    const uint ox = i % OW, oy = (i / OW) % OH, bc = i / (OW * OH);
    __global const float *plane = x + xoff + bc * H * W;
    float s = 0.0f;
    for (uint ky = 0; ky < KH; ky++) {
        const int iy = (int)(oy * sh + ky) - (int)ph;
        if (iy < 0 || iy >= (int)H) continue;
        for (uint kx = 0; kx < KW; kx++) {
            const int ix = (int)(ox * sw + kx) - (int)pw;
            if (ix >= 0 && ix < (int)W) s += plane[iy * (int)W + ix];
        }
    }
    y[yoff + i] = s / (float)(KH * KW);
}

// Forward was y = sum(window) / (KH*KW), so each input gets dy / (KH*KW) from
// every window that holds it.
__kernel void avgpool_backward(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw,
                               uint ph, uint pw, uint OH, uint OW, __global const float *dy,
                               uint dyoff, __global float *dx, uint dxoff) {
    const uint i = get_global_id(0);
    if (i >= n * C * H * W) return;
    const uint ix = i % W, iy = (i / W) % H, bc = i / (W * H);
    float s = 0.0f;
    for (uint ky = 0; ky < KH; ky++) {
        const int ty = (int)(iy + ph) - (int)ky;
        if (ty < 0 || ty % (int)sh != 0 || (uint)ty / sh >= OH) continue;
        const uint oy = (uint)ty / sh;
        for (uint kx = 0; kx < KW; kx++) {
            const int tx = (int)(ix + pw) - (int)kx;
            if (tx < 0 || tx % (int)sw != 0 || (uint)tx / sw >= OW) continue;
            s += dy[dyoff + (bc * OH + oy) * OW + (uint)tx / sw];
        }
    }
    dx[dxoff + i] = s / (float)(KH * KW);
}
