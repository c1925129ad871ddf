// 2-D convolution as im2col + GEMM (the GEMM is in gemm.cl).
//
// Shapes for a batch of n samples, P = OH * OW output positions each:
//   x    (n, C, H, W)          the input
//   col  (C*KH*KW, n*P)        col[(c,ky,kx), (b,oy,ox)] = x[b, c, oy*sh-ph+ky, ox*sw-pw+kx],
//                              zero where that falls in the padding
//   Yp   (F, n*P)              = W (F, C*KH*KW) . col, then permuted to y (n, F, OH, OW)
// Every work-item writes one element: no atomics, the same result every run.

__kernel void im2col(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw, uint ph,
                     uint pw, uint OH, uint OW, __global const float *x, uint xoff,
                     __global float *col, uint coloff) {
    const uint j = get_global_id(0);   // column: (b, oy, ox)
    const uint row = get_global_id(1); // row: (c, ky, kx)
    const uint P = OH * OW;
    if (j >= n * P || row >= C * KH * KW) return;
    const uint b = j / P, p = j % P, oy = p / OW, ox = p % OW;
    const uint c = row / (KH * KW), kk = row % (KH * KW), ky = kk / KW, kx = kk % KW;
    const int iy = (int)(oy * sh + ky) - (int)ph;
    const int ix = (int)(ox * sw + kx) - (int)pw;
    float v = 0.0f;
    if (iy >= 0 && iy < (int)H && ix >= 0 && ix < (int)W)
        v = x[xoff + ((b * C + c) * H + (uint)iy) * W + (uint)ix];
    col[coloff + row * (n * P) + j] = v;
}

// dx[b, c, iy, ix] = sum of dcol over every (ky, kx, oy, ox) that read x[b, c, iy, ix]
// in im2col: the gather form of col2im, one work-item per input element.
// Forward was col[(c,ky,kx),(b,oy,ox)] = x[b,c,oy*sh-ph+ky,ox*sw-pw+kx], so backward adds
// dcol at those places back into dx.
__kernel void col2im(uint n, uint C, uint H, uint W, uint KH, uint KW, uint sh, uint sw, uint ph,
                     uint pw, uint OH, uint OW, __global const float *dcol, uint dcoloff,
                     __global float *dx, uint dxoff, float beta) {
    const uint i = get_global_id(0);
    if (i >= n * C * H * W) return;
    const uint ix = i % W, iy = (i / W) % H, c = (i / (W * H)) % C, b = i / (W * H * C);
    const uint P = OH * OW, NP = n * P;
    float s = 0.0f;
    for (uint ky = 0; ky < KH; ky++) {
        const int ty = (int)(iy + ph) - (int)ky; // = oy * sh
        if (ty < 0 || ty % (int)sh != 0) continue;
        const uint oy = (uint)ty / sh;
        if (oy >= OH) continue;
        for (uint kx = 0; kx < KW; kx++) {
            const int tx = (int)(ix + pw) - (int)kx;
            if (tx < 0 || tx % (int)sw != 0) continue;
            const uint ox = (uint)tx / sw;
            if (ox >= OW) continue;
            s += dcol[dcoloff + ((c * KH + ky) * KW + kx) * NP + b * P + oy * OW + ox];
        }
    }
    __global float *d = dx + dxoff + i;
    *d = beta != 0.0f ? mad(beta, *d, s) : s;
}

// y[b, f, p] = Yp[f, b*P + p] + bias[f]: from the GEMM's layout to NCHW.
__kernel void conv_output(uint n, uint F, uint P, __global const float *Yp, uint ypoff,
                          __global const float *bias, uint boff, __global float *y, uint yoff) {
    const uint i = get_global_id(0); // index into y
    if (i >= n * F * P) return;
    const uint p = i % P, f = (i / P) % F, b = i / (P * F);
    y[yoff + i] = Yp[ypoff + f * (n * P) + b * P + p] + bias[boff + f];
}

// dYp[f, b*P + p] = dy[b, f, p]: the output gradient in the GEMM's layout.
__kernel void conv_grad_output(uint n, uint F, uint P, __global const float *dy, uint dyoff,
                               __global float *dYp, uint dypoff) {
    const uint j = get_global_id(0); // index into dYp
    if (j >= n * F * P) return;
    const uint NP = n * P;
    const uint f = j / NP, bp = j % NP, b = bp / P, p = bp % P;
    dYp[dypoff + j] = dy[dyoff + (b * F + f) * P + p];
}
