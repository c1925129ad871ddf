// Convolution as im2col + GEMM (the GEMM is in gemm.cl), on three spatial axes
// (cl/common.cl's window geometry: a signal or an image leads with axes of size
// 1, which the compiler folds away).
//
// Shapes for a chunk of n samples, P = OD * OH * OW windows each, K = KD * KH * KW taps:
//   x    (n, C, D, H, W)     the side the windows read
//   col  (C*K, n*P)          col[(c,kd,ky,kx), (b,od,oy,ox)] = x[b, c, od*sd-pd+kd*dd,
//                            oy*sh-ph+ky*dh, ox*sw-pw+kx*dw], zero where that falls
//                            in the padding
// A convolution multiplies col by its weight; its input gradient, and a
// transposed convolution's output, go the other way (col2im).
// Each element is written by one work-item: no atomics, the same result every run.

// One work-item per slot of 8 windows along a row (ox from 8 * slot, oy,
// (b*C + c)*OD + od): each tap's 8 entries of col, read at the stride's
// spacing, stored as one vector (a short last slot value by value). A
// work-item per window instead took 1.3 to 2 times as long (resnet18_w16 and
// LeNet training, PoCL 3.1 on the EPYC VM, 2026-11-26).
__kernel void im2col(clnet_win win, uint n, __global const float *x, uint xoff,
                     __global float *col, uint coloff) {
    const uint ox0 = get_global_id(0) * 8, oy = get_global_id(1), z = get_global_id(2);
    if (ox0 >= WIN_OW || oy >= WIN_OH || z >= n * WIN_C * WIN_OD) return;
    const uint od = z % WIN_OD, bc = z / WIN_OD, b = bc / WIN_C, c = bc % WIN_C, NP = n * WIN_OUT;
    const uint count = min(8u, WIN_OW - ox0);
    __global const float *volume = x + xoff + bc * WIN_IN;
    __global float *out = col + coloff + c * WIN_K * NP + b * WIN_OUT + (od * WIN_OH + oy) * WIN_OW + ox0;
    const int z0 = (int)(od * WIN_sd) - (int)WIN_pd, y0 = (int)(oy * WIN_sh) - (int)WIN_ph,
              x0 = (int)(ox0 * WIN_sw) - (int)WIN_pw;
    for (uint kd = 0; kd < WIN_KD; kd++) {
        const int iz = z0 + (int)(kd * WIN_dd);
        const bool plane_in = iz >= 0 && iz < (int)WIN_D;
        for (uint ky = 0; ky < WIN_KH; ky++) {
            const int iy = y0 + (int)(ky * WIN_dh);
            const bool row_in = plane_in && iy >= 0 && iy < (int)WIN_H;
            __global const float *row = volume + (iz * (int)WIN_H + iy) * (int)WIN_W;
            for (uint kx = 0; kx < WIN_KW; kx++) {
                __global float *o = out + ((kd * WIN_KH + ky) * WIN_KW + kx) * NP;
                float v[8];
                for (uint j = 0; j < 8; j++) {
                    const int ix = x0 + (int)(kx * WIN_dw + j * WIN_sw);
                    v[j] = row_in && j < count && ix >= 0 && ix < (int)WIN_W ? row[ix] : 0.0f;
                }
                if (count == 8) {
                    vstore8(vload8(0, v), 0, o);
                } else {
                    for (uint j = 0; j < count; j++) o[j] = v[j];
                }
            }
        }
    }
}

// x[b, c, iz, iy, ix] = the sum of col over every (tap, window) that im2col
// filled from x[b, c, iz, iy, ix]: the gather form of col2im, one work-item
// per element of x, (ix, iy, (b*C + c)*D + iz). Without dilation the windows
// that hold an input form a range along each axis; with it, each tap is tried
// in turn. With has_bias it adds bias[c] (a transposed convolution's output;
// bias is read only then); the store is clnet_store_dx's (add = 1 adds to
// what is there).
__kernel void col2im(clnet_win win, uint n, __global const float *col, uint coloff,
                     __global float *x, uint xoff, __global const float *bias, uint boff,
                     uint has_bias, uint add) {
    const uint ix = get_global_id(0), iy = get_global_id(1), z = get_global_id(2);
    if (ix >= WIN_W || iy >= WIN_H || z >= n * WIN_C * WIN_D) return;
    const uint iz = z % WIN_D, bc = z / WIN_D, b = bc / WIN_C, c = bc % WIN_C, NP = n * WIN_OUT;
    __global const float *base = col + coloff + c * WIN_K * NP + b * WIN_OUT;
    float s = 0.0f;
    if ((WIN_dd * WIN_dh * WIN_dw == 1) & (WIN_KD <= WIN_sd) & (WIN_KH <= WIN_sh) &
        (WIN_KW <= WIN_sw)) {
        // Windows apart (a 1x1 layer at a stride): at most one holds the
        // input, found by division, without loops (bitwise ands: the tests
        // are constants in a fixed geometry's program, where && warns).
        const uint uz = iz + WIN_pd, uy = iy + WIN_ph, ux = ix + WIN_pw;
        const uint oz = uz / WIN_sd, oy = uy / WIN_sh, ox = ux / WIN_sw;
        const uint kd = uz - oz * WIN_sd, ky = uy - oy * WIN_sh, kx = ux - ox * WIN_sw;
        if ((kd < WIN_KD) & (ky < WIN_KH) & (kx < WIN_KW) & (oz < WIN_OD) & (oy < WIN_OH) &
            (ox < WIN_OW))
            s = base[((kd * WIN_KH + ky) * WIN_KW + kx) * NP + (oz * WIN_OH + oy) * WIN_OW + ox];
    } else if (WIN_dd * WIN_dh * WIN_dw == 1) { // no dilation (each is at least 1)
        int lo[3], hi[3];
        clnet_windows_holding_all(win, iz, iy, ix, lo, hi);
        for (int oz = lo[0]; oz <= hi[0]; oz++) {
            const uint kd = iz + WIN_pd - (uint)oz * WIN_sd;
            for (int oy = lo[1]; oy <= hi[1]; oy++) {
                const uint ky = iy + WIN_ph - (uint)oy * WIN_sh;
                for (int ox = lo[2]; ox <= hi[2]; ox++) {
                    const uint kx = ix + WIN_pw - (uint)ox * WIN_sw;
                    s += base[((kd * WIN_KH + ky) * WIN_KW + kx) * NP +
                              ((uint)oz * WIN_OH + (uint)oy) * WIN_OW + (uint)ox];
                }
            }
        }
    } else {
        CLNET_FOR_DILATED_TAPS(iz, iy, ix)
            s += base[((kd * WIN_KH + ky) * WIN_KW + kx) * NP +
                      ((uint)oz * WIN_OH + (uint)oy) * WIN_OW + (uint)ox];
    }
    if (has_bias) s += bias[boff + c];
    clnet_store_dx(x + xoff + (bc * WIN_D + iz) * WIN_H * WIN_W + iy * WIN_W + ix, s, add);
}

// y[b, f, p] = Yp[f, b*P + p] (+ bias[f] with has_bias; bias is read only
// then): from the GEMM's layout to NCHW, a convolution's output or a
// transposed convolution's input gradient (which adds to dx with add = 1). A
// convolution that took in the relu after it (the relu reads nothing else of
// it) runs this with relu = 1, y = max(., 0), and conv_grad_output_relu
// below: the output gradient passes only where y > 0, exactly as the relu's
// own kernels would have done.
// The flags are arguments, the same for every work-item, so that every use
// shares one program.
__kernel void conv_output(uint n, uint F, uint P, __global const float *Yp, uint ypoff,
                          __global const float *bias, uint boff, __global float *y, uint yoff,
                          uint has_bias, uint relu, uint add) {
    const uint p = get_global_id(0), f = get_global_id(1), b = get_global_id(2);
    if (p >= P || f >= F || b >= n) return;
    float v = Yp[ypoff + f * (n * P) + b * P + p];
    if (has_bias) v += bias[boff + f];
    clnet_store_dx(y + yoff + (b * F + f) * P + p, relu ? fmax(v, 0.0f) : v, add);
}

// dYp[f, b*P + p] = dy[b, f, p]: the output gradient in the GEMM's layout;
// conv_grad_output_relu passes it where y > 0 only (y is read only there).
// Two kernels rather than a relu argument: PoCL takes twice as long to compile
// the work-group function of a load behind a run-time condition (0.24 s
// against 0.13 s).
inline void grad_to_gemm_layout(uint n, uint F, uint P, __global const float *dy, uint dyoff,
                                __global const float *y, uint yoff, __global float *dYp,
                                uint dypoff, const int relu) {
    const uint p = get_global_id(0), f = get_global_id(1), b = get_global_id(2);
    if (p >= P || f >= F || b >= n) return;
    const uint at = (b * F + f) * P + p;
    dYp[dypoff + f * (n * P) + b * P + p] = !relu || y[yoff + at] > 0.0f ? dy[dyoff + at] : 0.0f;
}

__kernel void conv_grad_output(uint n, uint F, uint P, __global const float *dy, uint dyoff,
                               __global const float *y, uint yoff, __global float *dYp,
                               uint dypoff) {
    grad_to_gemm_layout(n, F, P, dy, dyoff, y, yoff, dYp, dypoff, 0);
}

__kernel void conv_grad_output_relu(uint n, uint F, uint P, __global const float *dy, uint dyoff,
                                    __global const float *y, uint yoff, __global float *dYp,
                                    uint dypoff) {
    grad_to_gemm_layout(n, F, P, dy, dyoff, y, yoff, dYp, dypoff, 1);
}
