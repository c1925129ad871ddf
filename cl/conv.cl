// 2-D convolution as im2col + GEMM (the GEMM is in gemm.cl).
//
// Shapes for a batch of n samples, P = OH * OW output positions each:
//   x    (n, C, H, W)          the input
//   col  (C*KH*KW, n*P)        col[(c,ky,kx), (b,oy,ox)] = x[b, c, oy*sh-ph+ky, ox*sw-pw+kx],
//                              zero where that falls in the padding
//   Yp   (F, n*P)              = W (F, C*KH*KW) . col, then permuted to y (n, F, OH, OW)
// Every work-item writes one element: no atomics, the same result every run.

// One work-item per output position (ox, oy) of one (b, c) plane: it writes
// that position's KH*KW entries of col. Dimension 0 runs along ox, so
// neighbouring work-items write neighbouring columns. Taps are dh and dw apart
// (dilation): col[(c,ky,kx), (b,oy,ox)] = x[b, c, oy*sh-ph+ky*dh, ox*sw-pw+kx*dw].
__kernel void im2col(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw, uint ph,
                     uint pw, uint OH, uint OW, uint dh, uint dw, __global const float *x,
                     uint xoff, __global float *col, uint coloff) {
    const uint ox = get_global_id(0), oy = get_global_id(1), bc = get_global_id(2);
    if (ox >= WIN(OW) || oy >= WIN(OH) || bc >= n * WIN(C)) return;
    const uint b = bc / WIN(C), c = bc % WIN(C), P = WIN(OH) * WIN(OW), NP = n * P;
    __global const float *plane = x + xoff + bc * WIN(H) * WIN(W);
    __global float *out = col + coloff + c * WIN(KH) * WIN(KW) * NP + b * P + oy * WIN(OW) + ox;
    const int y0 = (int)(oy * WIN(sh)) - (int)WIN(ph), x0 = (int)(ox * WIN(sw)) - (int)WIN(pw);
    for (uint ky = 0; ky < WIN(KH); ky++) {
        const int iy = y0 + (int)(ky * WIN(dh));
        const bool row_in = iy >= 0 && iy < (int)WIN(H);
        for (uint kx = 0; kx < WIN(KW); kx++) {
            const int ix = x0 + (int)(kx * WIN(dw));
            out[(ky * WIN(KW) + kx) * NP] = row_in && ix >= 0 && ix < (int)WIN(W) ? plane[iy * (int)WIN(W) + ix] : 0.0f;
        }
    }
}

// dx[b, c, iy, ix] = sum of dcol over every (ky, kx, oy, ox) that read x[b, c, iy, ix]
// in im2col: the gather form of col2im, one work-item per input element.
// Forward was col[(c,ky,kx),(b,oy,ox)] = x[b,c,oy*sh-ph+ky*dh,ox*sw-pw+kx*dw], so backward
// adds dcol at those places back into dx. Without dilation the outputs whose
// window holds (iy, ix) form a range; with it, each tap is tried in turn.
__kernel void col2im(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw, uint ph,
                     uint pw, uint OH, uint OW, uint dh, uint dw, __global const float *dcol,
                     uint dcoloff, __global float *dx, uint dxoff, float beta) {
    const uint ix = get_global_id(0), iy = get_global_id(1), bc = get_global_id(2);
    if (ix >= WIN(W) || iy >= WIN(H) || bc >= n * WIN(C)) return;
    const uint b = bc / WIN(C), c = bc % WIN(C), P = WIN(OH) * WIN(OW), NP = n * P;
    __global const float *base = dcol + dcoloff + c * WIN(KH) * WIN(KW) * NP + b * P;
    float s = 0.0f;
    if (WIN(dh) == 1 && WIN(dw) == 1) {
        int oy_lo, oy_hi, ox_lo, ox_hi;
        clnet_windows_holding((int)iy, (int)WIN(KH), (int)WIN(sh), (int)WIN(ph), (int)WIN(OH), &oy_lo, &oy_hi);
        clnet_windows_holding((int)ix, (int)WIN(KW), (int)WIN(sw), (int)WIN(pw), (int)WIN(OW), &ox_lo, &ox_hi);
        for (int oy = oy_lo; oy <= oy_hi; oy++) {
            const uint ky = iy + WIN(ph) - (uint)oy * WIN(sh);
            for (int ox = ox_lo; ox <= ox_hi; ox++) {
                const uint kx = ix + WIN(pw) - (uint)ox * WIN(sw);
                s += base[(ky * WIN(KW) + kx) * NP + (uint)oy * WIN(OW) + (uint)ox];
            }
        }
    } else {
        for (uint ky = 0; ky < WIN(KH); ky++) {
            const int ty = (int)(iy + WIN(ph)) - (int)(ky * WIN(dh)); // = oy * sh
            if (ty < 0 || ty % (int)WIN(sh) != 0 || ty / (int)WIN(sh) >= (int)WIN(OH)) continue;
            const uint oy = (uint)ty / WIN(sh);
            for (uint kx = 0; kx < WIN(KW); kx++) {
                const int tx = (int)(ix + WIN(pw)) - (int)(kx * WIN(dw));
                if (tx < 0 || tx % (int)WIN(sw) != 0 || tx / (int)WIN(sw) >= (int)WIN(OW)) continue;
                s += base[(ky * WIN(KW) + kx) * NP + oy * WIN(OW) + (uint)tx / WIN(sw)];
            }
        }
    }
    __global float *d = dx + dxoff + (bc * WIN(H) + iy) * WIN(W) + ix;
    *d = beta != 0.0f ? mad(beta, *d, s) : s;
}

// y[b, f, p] = Yp[f, b*P + p] + bias[f]: from the GEMM's layout to NCHW.
// A convolution without a bias (bias=off) builds this with -DCONV_BIAS=0 and
// never reads `bias`. One that took in the relu after it (the relu reads
// nothing else of it) builds both kernels with -DCONV_RELU=1: y = max(., 0),
// and the output gradient passes only where y > 0, exactly as the relu's own
// kernels would have done.
#ifndef CONV_BIAS
#define CONV_BIAS 1
#endif
#ifndef CONV_RELU
#define CONV_RELU 0
#endif
__kernel void conv_output(uint n, uint F, uint P, __global const float *Yp, uint ypoff,
                          __global const float *bias, uint boff, __global float *y, uint yoff) {
    const uint p = get_global_id(0), f = get_global_id(1), b = get_global_id(2);
    if (p >= P || f >= F || b >= n) return;
#if CONV_BIAS
    const float v = Yp[ypoff + f * (n * P) + b * P + p] + bias[boff + f];
#else
    const float v = Yp[ypoff + f * (n * P) + b * P + p];
#endif
#if CONV_RELU
    y[yoff + (b * F + f) * P + p] = fmax(v, 0.0f);
#else
    y[yoff + (b * F + f) * P + p] = v;
#endif
}

// dYp[f, b*P + p] = dy[b, f, p]: the output gradient in the GEMM's layout
// (where y > 0 only, with the relu taken in; y is read only then).
__kernel void conv_grad_output(uint n, uint F, uint P, __global const float *dy, uint dyoff,
                               __global const float *y, uint yoff, __global float *dYp,
                               uint dypoff) {
    const uint p = get_global_id(0), f = get_global_id(1), b = get_global_id(2);
    if (p >= P || f >= F || b >= n) return;
    const uint at = (b * F + f) * P + p;
#if CONV_RELU
    dYp[dypoff + f * (n * P) + b * P + p] = y[yoff + at] > 0.0f ? dy[dyoff + at] : 0.0f;
#else
    dYp[dypoff + f * (n * P) + b * P + p] = dy[dyoff + at];
#endif
}
