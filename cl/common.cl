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

// Window geometry. Convolution and pooling kernels work on three spatial axes
// (depth, height, width); a signal or an image leads with axes of size 1. Each
// such kernel takes the geometry as its first argument, a clnet_win, and reads
// it through the WIN_ names below. A layer with much window work builds a
// program that fixes them all instead (clnet_window_options defines each as a
// constant; src/layers.c says when): loops over a window then have known trip
// counts, divisions by strides and sizes become multiplications, and the axes
// of size 1 cost nothing. Small layers share one program that reads the
// argument.
//   WIN_C                    channels of the side the windows read
//   WIN_D, WIN_H, WIN_W      that side's size
//   WIN_KD, WIN_KH, WIN_KW   the kernel (window)
//   WIN_sd, WIN_sh, WIN_sw   stride
//   WIN_pd, WIN_ph, WIN_pw   padding before the input
//   WIN_dd, WIN_dh, WIN_dw   dilation: taps that far apart
//   WIN_OD, WIN_OH, WIN_OW   the windows along each axis (the output's size)
// The fields' order is the host's (clnet_win_arg in src/layer.h).
typedef struct {
    uint c, d, h, w, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow;
} clnet_win;
#ifndef WIN_C
#define WIN_C win.c
#endif
#ifndef WIN_D
#define WIN_D win.d
#endif
#ifndef WIN_H
#define WIN_H win.h
#endif
#ifndef WIN_W
#define WIN_W win.w
#endif
#ifndef WIN_KD
#define WIN_KD win.kd
#endif
#ifndef WIN_KH
#define WIN_KH win.kh
#endif
#ifndef WIN_KW
#define WIN_KW win.kw
#endif
#ifndef WIN_sd
#define WIN_sd win.sd
#endif
#ifndef WIN_sh
#define WIN_sh win.sh
#endif
#ifndef WIN_sw
#define WIN_sw win.sw
#endif
#ifndef WIN_pd
#define WIN_pd win.pd
#endif
#ifndef WIN_ph
#define WIN_ph win.ph
#endif
#ifndef WIN_pw
#define WIN_pw win.pw
#endif
#ifndef WIN_dd
#define WIN_dd win.dd
#endif
#ifndef WIN_dh
#define WIN_dh win.dh
#endif
#ifndef WIN_dw
#define WIN_dw win.dw
#endif
#ifndef WIN_OD
#define WIN_OD win.od
#endif
#ifndef WIN_OH
#define WIN_OH win.oh
#endif
#ifndef WIN_OW
#define WIN_OW win.ow
#endif
#define WIN_K   (WIN_KD * WIN_KH * WIN_KW)
#define WIN_IN  (WIN_D * WIN_H * WIN_W)
#define WIN_OUT (WIN_OD * WIN_OH * WIN_OW)

// Window ops (convolution, pooling) with kernel k, stride s, padding p: the
// outputs o whose window (o*s - p .. o*s - p + k - 1) holds input index i, as
// the range [*lo, *hi] (empty when lo > hi). Backward passes gather over it
// instead of testing every tap with a modulo.
inline void clnet_windows_holding(int i, int k, int s, int p, int out, int *lo, int *hi) {
    const int t = i + p - (k - 1); // oy*s >= t
    *lo = t <= 0 ? 0 : (t + s - 1) / s;
    *hi = min(out - 1, (i + p) / s);
}

// With dilation d (taps d apart): the window along one axis whose tap k reads
// input i (o*s - p + k*d = i), or -1 when no window does. Backward passes of
// dilated windows try each tap in turn with it.
inline int clnet_window_at(int i, uint k, uint s, uint p, uint d, uint out) {
    const int t = i + (int)p - (int)(k * d); // = o * s
    if (t < 0 || t % (int)s != 0 || t / (int)s >= (int)out) return -1;
    return t / (int)s;
}

// The inputs [*lo, *hi) that output o's window (o*s - p .. o*s - p + k - 1)
// covers, clipped to an input of `size`: the window without its padding.
inline void clnet_window_span(uint o, uint s, uint p, uint k, uint size, int *lo, int *hi) {
    const int start = (int)(o * s) - (int)p;
    *lo = max(start, 0);
    *hi = min(start + (int)k, (int)size);
}

// The inputs [lo[a], hi[a]) that window (od, oy, ox) covers along each axis
// (clnet_window_span): the window without its padding.
inline void clnet_window_spans(clnet_win win, uint od, uint oy, uint ox, int lo[3], int hi[3]) {
    clnet_window_span(od, WIN_sd, WIN_pd, WIN_KD, WIN_D, &lo[0], &hi[0]);
    clnet_window_span(oy, WIN_sh, WIN_ph, WIN_KH, WIN_H, &lo[1], &hi[1]);
    clnet_window_span(ox, WIN_sw, WIN_pw, WIN_KW, WIN_W, &lo[2], &hi[2]);
}

// The undilated windows that hold input (iz, iy, ix), [lo[a], hi[a]] along
// each axis (clnet_windows_holding).
inline void clnet_windows_holding_all(clnet_win win, uint iz, uint iy, uint ix, int lo[3], int hi[3]) {
    clnet_windows_holding((int)iz, (int)WIN_KD, (int)WIN_sd, (int)WIN_pd, (int)WIN_OD, &lo[0], &hi[0]);
    clnet_windows_holding((int)iy, (int)WIN_KH, (int)WIN_sh, (int)WIN_ph, (int)WIN_OH, &lo[1], &hi[1]);
    clnet_windows_holding((int)ix, (int)WIN_KW, (int)WIN_sw, (int)WIN_pw, (int)WIN_OW, &lo[2], &hi[2]);
}

// The gather loop of a dilated window op's backward pass: runs the statement
// that follows for every tap (kd, ky, kx) that reads input (iz, iy, ix), in
// tap order, with (oz, oy, ox) the window it belongs to (clnet_window_at).
// Each `for` over a window runs once, or not at all where no window's tap
// reads the input along that axis.
#define CLNET_FOR_DILATED_TAPS(iz, iy, ix)                                                          \
    for (uint kd = 0; kd < WIN_KD; kd++)                                                           \
        for (int oz = clnet_window_at((int)(iz), kd, WIN_sd, WIN_pd, WIN_dd, WIN_OD); oz >= 0;     \
             oz = -1)                                                                              \
            for (uint ky = 0; ky < WIN_KH; ky++)                                                   \
                for (int oy = clnet_window_at((int)(iy), ky, WIN_sh, WIN_ph, WIN_dh, WIN_OH);      \
                     oy >= 0; oy = -1)                                                             \
                    for (uint kx = 0; kx < WIN_KW; kx++)                                           \
                        for (int ox = clnet_window_at((int)(ix), kx, WIN_sw, WIN_pw, WIN_dw,       \
                                                      WIN_OW);                                     \
                             ox >= 0; ox = -1)

// An input gradient written by a backward pass: overwritten (add == 0), or
// added to (add == 1) when another reader of the same tensor wrote it first.
// `add` is a kernel argument, the same for every work-item, so that both uses
// share one program (a build option made each use a program of its own). The
// old value is loaded only when adding: overwriting never reads what is there,
// which may be garbage.
inline void clnet_store_dx(__global float *dst, float v, uint add) {
    if (add) v += *dst;
    *dst = v;
}
