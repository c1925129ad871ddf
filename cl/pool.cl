// Max and average pooling on three spatial axes (cl/common.cl's window
// geometry; a signal or an image leads with axes of size 1): x (n, C, D, H, W)
// -> y (n, C, OD, OH, OW), OH = (H + 2*ph - KH) / sh + 1, rounded up in ceil
// mode (the host computes it: a last window must start inside the input or its
// left padding). Windows may overlap (stride < kernel).
// Padding: for max, padded places never win (the host requires ph < KH so every
// window holds a real value); for average, see avgpool_divisor.

// Work-items run over (ox, oy, (b*C + c)*OD + od) for forward and
// (ix, iy, (b*C + c)*D + iz) for backward.

// y = max over the window; arg = the index ((iz*H + iy)*W + ix) of the first
// maximum in row-major window order (strictly greater wins, as PyTorch does).
// With -DPOOL_DILATED=1 (max pooling's dilation) the window's taps are WIN_dd,
// WIN_dh, WIN_dw apart.
#ifndef POOL_DILATED
#define POOL_DILATED 0
#endif
__kernel void maxpool_forward(clnet_win win, uint n, __global const float *x, uint xoff,
                              __global float *y, uint yoff, __global int *arg, uint argoff) {
    const uint ox = get_global_id(0), oy = get_global_id(1), z = get_global_id(2);
    if (ox >= WIN_OW || oy >= WIN_OH || z >= n * WIN_C * WIN_OD) return;
    const uint od = z % WIN_OD, bc = z / WIN_OD;
    __global const float *volume = x + xoff + bc * WIN_IN;
    float best = -INFINITY;
    int where = -1;
#if !POOL_DILATED
    int lo[3], hi[3];
    clnet_window_spans(win, od, oy, ox, lo, hi);
    where = (lo[0] * (int)WIN_H + lo[1]) * (int)WIN_W + lo[2];
    best = volume[where];
    for (int iz = lo[0]; iz < hi[0]; iz++)
        for (int iy = lo[1]; iy < hi[1]; iy++)
            for (int ix = lo[2]; ix < hi[2]; ix++) {
                const int at = (iz * (int)WIN_H + iy) * (int)WIN_W + ix;
                const float v = volume[at];
                if (v > best) {
                    best = v;
                    where = at;
                }
            }
#else
    const int z0 = (int)(od * WIN_sd) - (int)WIN_pd, y0 = (int)(oy * WIN_sh) - (int)WIN_ph,
              x0 = (int)(ox * WIN_sw) - (int)WIN_pw;
    for (uint kd = 0; kd < WIN_KD; kd++) {
        const int iz = z0 + (int)(kd * WIN_dd);
        if (iz < 0 || iz >= (int)WIN_D) continue;
        for (uint ky = 0; ky < WIN_KH; ky++) {
            const int iy = y0 + (int)(ky * WIN_dh);
            if (iy < 0 || iy >= (int)WIN_H) continue;
            for (uint kx = 0; kx < WIN_KW; kx++) {
                const int ix = x0 + (int)(kx * WIN_dw);
                if (ix < 0 || ix >= (int)WIN_W) continue;
                const int at = (iz * (int)WIN_H + iy) * (int)WIN_W + ix;
                const float v = volume[at];
                if (where < 0 || v > best) {
                    best = v;
                    where = at;
                }
            }
        }
    }
#endif
    const uint o = (z * WIN_OH + oy) * WIN_OW + ox;
    y[yoff + o] = best;
    arg[argoff + o] = where;
}

// Forward was y = x[arg], so backward gives each input the sum of dy over the
// windows whose maximum it was. Gather form: one work-item per input element.
__kernel void maxpool_backward(clnet_win win, uint n, __global const float *dy, uint dyoff,
                               __global const int *arg, uint argoff, __global float *dx,
                               uint dxoff, uint add) {
    const uint ix = get_global_id(0), iy = get_global_id(1), z = get_global_id(2);
    if (ix >= WIN_W || iy >= WIN_H || z >= n * WIN_C * WIN_D) return;
    const uint iz = z % WIN_D, bc = z / WIN_D;
    const int me = (int)((iz * WIN_H + iy) * WIN_W + ix);
    __global const float *g = dy + dyoff + bc * WIN_OUT;
    __global const int *a = arg + argoff + bc * WIN_OUT;
    float s = 0.0f;
#if !POOL_DILATED
    int lo[3], hi[3];
    clnet_windows_holding_all(win, iz, iy, ix, lo, hi);
    for (int oz = lo[0]; oz <= hi[0]; oz++)
        for (int oy = lo[1]; oy <= hi[1]; oy++)
            for (int ox = lo[2]; ox <= hi[2]; ox++) {
                const int o = (oz * (int)WIN_OH + oy) * (int)WIN_OW + ox;
                if (a[o] == me) s += g[o];
            }
#else // the windows that hold (iz, iy, ix) at one of their taps
    CLNET_FOR_DILATED_TAPS(iz, iy, ix) {
        const int o = (oz * (int)WIN_OH + oy) * (int)WIN_OW + ox;
        if (a[o] == me) s += g[o];
    }
#endif
    clnet_store_dx(dx + dxoff + (bc * WIN_D + iz) * WIN_H * WIN_W + iy * WIN_W + ix, s, add);
}

// Average pooling's divisor along one axis, for the window starting at t = o*s - p.
// PyTorch's rules: with count_pad (-DPOOL_COUNT_PAD=1, its count_include_pad,
// the default) the window's cells up to the padded edge, which is K unless
// ceil mode lets the last window overhang that edge; without, the input's own
// cells in the window. The divisor is the product over the axes.
#ifndef POOL_COUNT_PAD
#define POOL_COUNT_PAD 1
#endif
#ifndef POOL_CEIL
#define POOL_CEIL 0
#endif
inline int avgpool_cells(uint o, uint s, uint p, uint k, uint size) {
    const int t = (int)(o * s) - (int)p;
#if POOL_COUNT_PAD
    return min(t + (int)k, (int)(size + p)) - t;
#else
    return min(t + (int)k, (int)size) - max(t, 0);
#endif
}

inline float avgpool_divisor(clnet_win win, uint od, uint oy, uint ox) {
#if POOL_COUNT_PAD && !POOL_CEIL
    return (float)WIN_K;
#else
    return (float)(avgpool_cells(od, WIN_sd, WIN_pd, WIN_KD, WIN_D) *
                   avgpool_cells(oy, WIN_sh, WIN_ph, WIN_KH, WIN_H) *
                   avgpool_cells(ox, WIN_sw, WIN_pw, WIN_KW, WIN_W));
#endif
}

__kernel void avgpool_forward(clnet_win win, uint n, __global const float *x, uint xoff,
                              __global float *y, uint yoff) {
    const uint ox = get_global_id(0), oy = get_global_id(1), z = get_global_id(2);
    if (ox >= WIN_OW || oy >= WIN_OH || z >= n * WIN_C * WIN_OD) return;
    const uint od = z % WIN_OD, bc = z / WIN_OD;
    __global const float *volume = x + xoff + bc * WIN_IN;
    int lo[3], hi[3];
    clnet_window_spans(win, od, oy, ox, lo, hi);
    float s = 0.0f;
    for (int iz = lo[0]; iz < hi[0]; iz++)
        for (int iy = lo[1]; iy < hi[1]; iy++)
            for (int ix = lo[2]; ix < hi[2]; ix++) s += volume[(iz * (int)WIN_H + iy) * (int)WIN_W + ix];
    y[yoff + (z * WIN_OH + oy) * WIN_OW + ox] = s / avgpool_divisor(win, od, oy, ox);
}

// Forward was y = sum(window) / divisor, so each input gets dy / divisor from
// every window that holds it.
__kernel void avgpool_backward(clnet_win win, uint n, __global const float *dy, uint dyoff,
                               __global float *dx, uint dxoff, uint add) {
    const uint ix = get_global_id(0), iy = get_global_id(1), z = get_global_id(2);
    if (ix >= WIN_W || iy >= WIN_H || z >= n * WIN_C * WIN_D) return;
    const uint iz = z % WIN_D, bc = z / WIN_D;
    __global const float *g = dy + dyoff + bc * WIN_OUT;
    __global float *to = dx + dxoff + (bc * WIN_D + iz) * WIN_H * WIN_W + iy * WIN_W + ix;
    // (bitwise: where the window is fixed at build time, every test is a
    // constant, and the compiler warns about constants under &&)
    if ((WIN_sd == WIN_KD) & (WIN_sh == WIN_KH) & (WIN_sw == WIN_KW) & (WIN_pd == 0) &
        (WIN_ph == 0) & (WIN_pw == 0)) {
        // Windows side by side, no padding (LeNet's 2x2 at stride 2): the
        // input lies in one window, or in none past the last (floor mode).
        const uint oz = iz / WIN_KD, oy = iy / WIN_KH, ox = ix / WIN_KW;
        const int held = oz < WIN_OD && oy < WIN_OH && ox < WIN_OW;
        clnet_store_dx(to,
                       held ? g[(oz * WIN_OH + oy) * WIN_OW + ox] / avgpool_divisor(win, oz, oy, ox)
                            : 0.0f,
                       add);
        return;
    }
    int lo[3], hi[3];
    clnet_windows_holding_all(win, iz, iy, ix, lo, hi);
    float s = 0.0f;
#if POOL_COUNT_PAD && !POOL_CEIL // one divisor for every window
    for (int oz = lo[0]; oz <= hi[0]; oz++)
        for (int oy = lo[1]; oy <= hi[1]; oy++)
            for (int ox = lo[2]; ox <= hi[2]; ox++) s += g[(oz * (int)WIN_OH + oy) * (int)WIN_OW + ox];
    s /= (float)WIN_K;
#else
    for (int oz = lo[0]; oz <= hi[0]; oz++)
        for (int oy = lo[1]; oy <= hi[1]; oy++)
            for (int ox = lo[2]; ox <= hi[2]; ox++)
                s += g[(oz * (int)WIN_OH + oy) * (int)WIN_OW + ox] / avgpool_divisor(win, (uint)oz, (uint)oy, (uint)ox);
#endif
    clnet_store_dx(to, s, add);
}
