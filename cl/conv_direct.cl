// Direct convolution: each pass of a grouped convolution with few channels
// per group (depthwise: one) as one launch over the whole layer, without a
// column matrix or a GEMM per group (src/layers/conv_direct.c).
// For convolutions and transposed convolutions alike, in conv.c's terms:
//   the big side    the tensor the windows read, (n, WIN_C, D, H, W), NCDHW
//   the small side  one value per window and channel, (n, cs, OD, OH, OW)
//   the weight      W[fs, cbl, tap]: small channel fs, big channel cbl of
//                   fs's group, tap = (kd * KH + ky) * KW + kx
// with small channel fs in group fs / FG, which reads big channels
// g * CBG .. g * CBG + CBG - 1. The small side is read and written through
// strides, S[off + b * sb + fs * sf + p] with p = (od * OH + oy) * OW + ox:
// NCDHW (sb = cs * P, sf = P) or the GEMM layout (sb = P, sf = n * P).
//   down: small = W . windows(big)         (conv forward, transpose dx)
//   up:   big = the sum over the windows that read it  (conv dx, transpose forward)
//   weight: dW[fs, cbl, tap] = sum over samples and windows of small * big,
//           one part per sample (summed in sample order by elementwise.cl's
//           col_sums)
// Every work-item writes its own elements: no atomics, the same result every run.
//
// CONV_CBG and CONV_FG (channels per group on the big and small sides) are
// build options where the layer's geometry is fixed (clnet_window_options),
// else the cbg and fg arguments.

// DIRECT_GPU=1 (the host gives it on devices other than CPUs): the loops that
// fill a private array unrolled, so that the array stays in registers, and
// the weight gradient's row loop kept rolled (unrolled, AMD's compiler ran out
// of registers: scripts/gpu_offline.py). On PoCL both cost: the unrolled
// helpers slowed a depthwise layer at stride 2 by about a third.
#ifndef DIRECT_GPU
#define DIRECT_GPU 0
#endif
#if DIRECT_GPU
#define DIRECT_GPU_UNROLL _Pragma("unroll")
#define DIRECT_GPU_ROLLED _Pragma("unroll 1")
#else
#define DIRECT_GPU_UNROLL
#define DIRECT_GPU_ROLLED
#endif

#ifndef CONV_CBG
#define CONV_CBG cbg
#endif
#ifndef CONV_FG
#define CONV_FG fg
#endif

// Along a row, the windows ox whose tap reads input ox * s - t inside
// [0, size): [*lo, *hi] (empty when lo > hi), t = pad - tap * dilation.
inline void direct_row_range(int t, uint s, uint size, uint out, int *lo, int *hi) {
    *lo = t <= 0 ? 0 : (t + (int)s - 1) / (int)s;
    *hi = (int)size - 1 + t < 0 ? -1 : min((int)out - 1, ((int)size - 1 + t) / (int)s);
}

// y[i * sy - ty] += a * x[i * sx - tx] for i in [lo, hi]; eight at a time
// where both strides are 1. The rows kernels below accumulate in place
// rather than in registers: a row of any width, and loops the compiler need
// not vectorize by itself.
inline void direct_axpy(__global float *y, uint sy, int ty, float a, __global const float *x,
                        uint sx, int tx, int lo, int hi) {
    int i = lo;
    if (sy == 1 && sx == 1)
        for (; i + 8 <= hi + 1; i += 8)
            vstore8(vload8(0, y + i - ty) + a * vload8(0, x + i - tx), 0, y + i - ty);
    // stride 2: the even lanes of 16 (short of the last i, so as not to read past the row)
    if (sy == 1 && sx == 2)
        for (; i + 8 <= hi; i += 8)
            vstore8(vload8(0, y + i - ty) + a * vload16(0, x + 2 * i - tx).even, 0, y + i - ty);
    if (sy == 2 && sx == 1)
        for (; i + 8 <= hi; i += 8) {
            float16 v = vload16(0, y + 2 * i - ty);
            v.even += a * vload8(0, x + i - tx);
            vstore16(v, 0, y + 2 * i - ty);
        }
    for (; i <= hi; i++) y[i * (int)sy - ty] += a * x[i * (int)sx - tx];
}

// The start of a row kernel's output row: bias (has_bias) plus, with add,
// what is there (clnet_store_dx's add), for each of its `count` elements.
inline void direct_row_start(__global float *row, uint count, float bias, uint add) {
    for (uint i = 0; i < count; i++) row[i] = add ? row[i] + bias : bias;
}

// One work-item per row of the small side (oy, (b * cs + fs) * OD + od):
// bias[fs] (has_bias) plus the taps of its windows, then max(., 0) (relu);
// with add, added to what is there. `size` is direct_down_pairs' (this
// kernel needs no bound): the two take the same arguments.
__kernel void direct_down(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                          __global const float *big, uint bigoff, uint size, __global const float *w,
                          uint woff, __global float *small, uint soff, uint sb, uint sf,
                          __global const float *bias, uint boff, uint has_bias, uint relu,
                          uint add) {
    const uint oy = get_global_id(0), z = get_global_id(1);
    if (oy >= WIN_OH || z >= n * cs * WIN_OD) return;
    const uint od = z % WIN_OD, bf = z / WIN_OD, b = bf / cs, fs = bf % cs;
    __global float *row = small + soff + b * sb + fs * sf + (od * WIN_OH + oy) * WIN_OW;
    direct_row_start(row, WIN_OW, has_bias ? bias[boff + fs] : 0.0f, add);
    __global const float *wt = w + woff + fs * CONV_CBG * WIN_K;
    __global const float *volume = big + bigoff + (b * WIN_C + fs / CONV_FG * CONV_CBG) * WIN_IN;
    for (uint cbl = 0; cbl < CONV_CBG; cbl++, volume += WIN_IN)
        for (uint kd = 0; kd < WIN_KD; kd++) {
            const int iz = (int)(od * WIN_sd + kd * WIN_dd) - (int)WIN_pd;
            for (uint ky = 0; ky < WIN_KH; ky++) {
                const int iy = (int)(oy * WIN_sh + ky * WIN_dh) - (int)WIN_ph;
                const bool in = iz >= 0 && iz < (int)WIN_D && iy >= 0 && iy < (int)WIN_H;
                for (uint kx = 0; kx < WIN_KW; kx++, wt++) {
                    const int t = (int)WIN_pw - (int)(kx * WIN_dw);
                    int lo, hi;
                    direct_row_range(t, WIN_sw, WIN_W, WIN_OW, &lo, &hi);
                    if (in)
                        direct_axpy(row, 1, 0, *wt, volume + (iz * (int)WIN_H + iy) * (int)WIN_W,
                                    WIN_sw, t, lo, hi);
                }
            }
        }
    if (relu)
        for (uint i = 0; i < WIN_OW; i++) row[i] = fmax(row[i], 0.0f);
}

// One work-item per row of the big side (iy, (b * C + cb) * D + iz):
// bias[cb] (has_bias) plus W[fs, cbl, tap] * small[b, fs, window] over the
// small channels fs of cb's group and the (tap, window) pairs that read it;
// with add, added to what is there. `size`: as direct_down's.
__kernel void direct_up(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                        __global const float *small, uint soff, uint sb, uint sf, uint size,
                        __global const float *w, uint woff, __global float *big, uint bigoff,
                        __global const float *bias, uint boff, uint has_bias, uint add) {
    const uint iy = get_global_id(0), z = get_global_id(1);
    if (iy >= WIN_H || z >= n * WIN_C * WIN_D) return;
    const uint iz = z % WIN_D, bc = z / WIN_D, b = bc / WIN_C, cb = bc % WIN_C;
    const uint f0 = cb / CONV_CBG * CONV_FG, cbl = cb % CONV_CBG;
    __global float *row = big + bigoff + (bc * WIN_D + iz) * WIN_H * WIN_W + iy * WIN_W;
    direct_row_start(row, WIN_W, has_bias ? bias[boff + cb] : 0.0f, add);
    for (uint fl = 0; fl < CONV_FG; fl++) {
        __global const float *sp = small + soff + b * sb + (f0 + fl) * sf;
        __global const float *wt = w + woff + ((f0 + fl) * CONV_CBG + cbl) * WIN_K;
        for (uint kd = 0; kd < WIN_KD; kd++) {
            const int oz = clnet_window_at((int)iz, kd, WIN_sd, WIN_pd, WIN_dd, WIN_OD);
            for (uint ky = 0; ky < WIN_KH; ky++) {
                const int oy = clnet_window_at((int)iy, ky, WIN_sh, WIN_ph, WIN_dh, WIN_OH);
                if (oz < 0 || oy < 0) continue;
                for (uint kx = 0; kx < WIN_KW; kx++) {
                    const int t = (int)WIN_pw - (int)(kx * WIN_dw);
                    int lo, hi;
                    direct_row_range(t, WIN_sw, WIN_W, WIN_OW, &lo, &hi);
                    direct_axpy(row, WIN_sw, t, wt[(kd * WIN_KH + ky) * WIN_KW + kx],
                                sp + ((uint)oz * WIN_OH + (uint)oy) * WIN_OW, 1, 0, lo, hi);
                }
            }
        }
    }
}

// small[j + off] for j = 0 .. 15, zero where j + off falls outside [0,
// ow): one vector load where those 16 floats lie inside the buffer (`at` is
// row's offset in it, `size` its floats), else one float a lane.
inline float16 direct_lanes16(__global const float *row, int at, int size, int off, int ow) {
    const int16 j = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) + off;
    const int16 in = j >= 0 && j < ow;
    if (at + off >= 0 && at + off + 16 <= size)
        return select((float16)(0.0f), vload16(0, row + off), in);
    float v[16]; // unrolled on GPUs: an array indexed at run time lives in memory there
DIRECT_GPU_UNROLL
    for (int i = 0; i < 16; i++) v[i] = i + off >= 0 && i + off < ow ? row[i + off] : 0.0f;
    return vload16(0, v);
}

// row[2j - u] for j = 0 .. 15, zero where 2j - u falls outside [0, w): two
// vector loads where those 32 floats lie inside the buffer (`at` is row's
// offset in it, `size` its floats), else one float a lane.
inline float16 direct_evens16(__global const float *row, int at, int size, int u, int w) {
    const int16 i = (int16)(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) - u;
    const int16 in = i >= 0 && i < w;
    if (at - u >= 0 && at - u + 32 <= size) {
        const float16 a = vload16(0, row - u), b = vload16(1, row - u);
        return select((float16)(0.0f), (float16)(a.even, b.even), in);
    }
    float v[16];
DIRECT_GPU_UNROLL
    for (int j = 0; j < 16; j++) v[j] = 2 * j - u >= 0 && 2 * j - u < w ? row[2 * j - u] : 0.0f;
    return vload16(0, v);
}

// direct_down for small rows of at most 16 at a stride of 2 along them (a
// depthwise layer's forward at stride 2): the row is one vector of
// accumulators, and each tap's inputs two vector loads. `size`: the floats
// of the big side's buffer from bigoff.
__kernel void direct_down_pairs(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                                __global const float *big, uint bigoff, uint size,
                                __global const float *w, uint woff, __global float *small,
                                uint soff, uint sb, uint sf, __global const float *bias, uint boff,
                                uint has_bias, uint relu, uint add) {
    const uint oy = get_global_id(0), z = get_global_id(1);
    if (oy >= WIN_OH || z >= n * cs * WIN_OD) return;
    const uint od = z % WIN_OD, bf = z / WIN_OD, b = bf / cs, fs = bf % cs;
    __global const float *wt = w + woff + fs * CONV_CBG * WIN_K;
    uint vat = (b * WIN_C + fs / CONV_FG * CONV_CBG) * WIN_IN;
    float16 acc = (float16)(0.0f);
    for (uint cbl = 0; cbl < CONV_CBG; cbl++, vat += WIN_IN)
        for (uint kd = 0; kd < WIN_KD; kd++) {
            const int iz = (int)(od * WIN_sd + kd * WIN_dd) - (int)WIN_pd;
            for (uint ky = 0; ky < WIN_KH; ky++, wt += WIN_KW) {
                const int iy = (int)(oy * WIN_sh + ky * WIN_dh) - (int)WIN_ph;
                if (iz < 0 || iz >= (int)WIN_D || iy < 0 || iy >= (int)WIN_H) continue;
                const int at = (int)vat + (iz * (int)WIN_H + iy) * (int)WIN_W;
                for (uint kx = 0; kx < WIN_KW; kx++) {
                    const int u = (int)WIN_pw - (int)(kx * WIN_dw);
                    acc += wt[kx] * direct_evens16(big + bigoff + at, at, (int)size, u,
                                                   (int)WIN_W);
                }
            }
        }
    float row[16]; // indexed by constants alone once unrolled: registers on GPUs
    vstore16(acc, 0, row);
    __global float *out = small + soff + b * sb + fs * sf + (od * WIN_OH + oy) * WIN_OW;
    const float bv = has_bias ? bias[boff + fs] : 0.0f;
DIRECT_GPU_UNROLL
    for (uint i = 0; i < 16; i++)
        if (i < WIN_OW) {
            float v = row[i] + bv;
            if (add) v += out[i];
            out[i] = relu ? fmax(v, 0.0f) : v;
        }
}

// direct_up for big rows of at most 32 at a stride of 2 along them (a
// depthwise layer's input gradient at stride 2): the row's even and odd
// positions are two vectors of 16 accumulators, and the small side's row
// each tap reads is one vector load; direct_up's rows of a few floats ran
// mostly their scalar tails. `size`: the floats of the small side's buffer
// from soff (no load strays past it).
__kernel void direct_up_pairs(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                              __global const float *small, uint soff, uint sb, uint sf, uint size,
                              __global const float *w, uint woff, __global float *big,
                              uint bigoff, __global const float *bias, uint boff, uint has_bias,
                              uint add) {
    const uint iy = get_global_id(0), z = get_global_id(1);
    if (iy >= WIN_H || z >= n * WIN_C * WIN_D) return;
    const uint iz = z % WIN_D, bc = z / WIN_D, b = bc / WIN_C, cb = bc % WIN_C;
    const uint f0 = cb / CONV_CBG * CONV_FG, cbl = cb % CONV_CBG;
    float16 even = (float16)(0.0f), odd = (float16)(0.0f);
    for (uint fl = 0; fl < CONV_FG; fl++) {
        const uint sat = b * sb + (f0 + fl) * sf;
        __global const float *wt = w + woff + ((f0 + fl) * CONV_CBG + cbl) * WIN_K;
        for (uint kd = 0; kd < WIN_KD; kd++) {
            const int oz = clnet_window_at((int)iz, kd, WIN_sd, WIN_pd, WIN_dd, WIN_OD);
            for (uint ky = 0; ky < WIN_KH; ky++) {
                const int oy = clnet_window_at((int)iy, ky, WIN_sh, WIN_ph, WIN_dh, WIN_OH);
                if (oz < 0 || oy < 0) continue;
                const uint at = sat + ((uint)oz * WIN_OH + (uint)oy) * WIN_OW;
                for (uint kx = 0; kx < WIN_KW; kx++) {
                    // position 2j + p takes the small row at (2j + p + u) / 2
                    // where that divides: the phase p of u's parity, j + off
                    const int u = (int)WIN_pw - (int)(kx * WIN_dw), odd_phase = u & 1;
                    const int off = (u + odd_phase) / 2;
                    const float16 v = direct_lanes16(small + soff + at, (int)at, (int)size, off,
                                                     (int)WIN_OW);
                    const float a = wt[(kd * WIN_KH + ky) * WIN_KW + kx];
                    if (odd_phase)
                        odd += a * v;
                    else
                        even += a * v;
                }
            }
        }
    }
    float row[32]; // as direct_down_pairs' row
    vstore16(shuffle2(even, odd, (uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)),
             0, row);
    vstore16(shuffle2(even, odd,
                      (uint16)(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)),
             1, row);
    __global float *out = big + bigoff + (bc * WIN_D + iz) * WIN_H * WIN_W + iy * WIN_W;
    const float bv = has_bias ? bias[boff + cb] : 0.0f;
DIRECT_GPU_UNROLL
    for (uint i = 0; i < 32; i++)
        if (i < WIN_W) clnet_store_dx(out + i, row[i] + bv, add);
}

// One work-item per (tap, fs * CBG + cbl, sample b): sample b's part of
// dW[fs, cbl, tap], the sum over the windows whose tap reads the input, to
// part[poff + (b * cs * CBG + fs * CBG + cbl) * K + tap]. Along each row the
// windows whose tap lies inside the input are a range (direct_row_range), so
// the inner loop tests nothing; at strides 1 and 2 it runs eight lanes,
// summed in a fixed order at the end. ssize and bsize are
// direct_weight_pairs' bounds (this kernel needs none): the two take the
// same arguments.
__kernel void direct_weight_partial(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                                    __global const float *small, uint soff, uint sb, uint sf,
                                    uint ssize, __global const float *big, uint bigoff,
                                    uint bsize, __global float *part, uint poff) {
    const uint tap = get_global_id(0), e = get_global_id(1), b = get_global_id(2);
    if (tap >= WIN_K || e >= cs * CONV_CBG || b >= n) return;
    const uint fs = e / CONV_CBG, cb = fs / CONV_FG * CONV_CBG + e % CONV_CBG;
    const uint kx = tap % WIN_KW, ky = tap / WIN_KW % WIN_KH, kd = tap / (WIN_KW * WIN_KH);
    __global const float *sp = small + soff + b * sb + fs * sf;
    __global const float *volume = big + bigoff + (b * WIN_C + cb) * WIN_IN;
    const int t = (int)WIN_pw - (int)(kx * WIN_dw);
    int lo, hi;
    direct_row_range(t, WIN_sw, WIN_W, WIN_OW, &lo, &hi);
    float8 s8 = (float8)(0.0f);
    float s = 0.0f;
    for (uint od = 0; od < WIN_OD; od++) {
        const int iz = (int)(od * WIN_sd + kd * WIN_dd) - (int)WIN_pd;
        if (iz < 0 || iz >= (int)WIN_D) continue;
        for (uint oy = 0; oy < WIN_OH; oy++) {
            const int iy = (int)(oy * WIN_sh + ky * WIN_dh) - (int)WIN_ph;
            if (iy < 0 || iy >= (int)WIN_H) continue;
            __global const float *srow = sp + (od * WIN_OH + oy) * WIN_OW;
            __global const float *brow = volume + (iz * (int)WIN_H + iy) * (int)WIN_W;
            int ox = lo;
            if (WIN_sw == 1)
                for (; ox + 8 <= hi + 1; ox += 8)
                    s8 += vload8(0, srow + ox) * vload8(0, brow + ox - t);
            if (WIN_sw == 2) // the even lanes of 16, short of the last window (direct_axpy)
                for (; ox + 8 <= hi; ox += 8)
                    s8 += vload8(0, srow + ox) * vload16(0, brow + 2 * ox - t).even;
            for (; ox <= hi; ox++) s += srow[ox] * brow[ox * (int)WIN_sw - t];
        }
    }
    const float4 s4 = s8.lo + s8.hi;
    const float2 s2 = s4.lo + s4.hi;
    part[poff + (b * cs * CONV_CBG + e) * WIN_K + tap] = s + (s2.x + s2.y);
}

// direct_weight_partial for small rows of at most 16 at a stride of 2 along
// them: a row's windows are one vector product. `ssize` and `bsize`: the
// floats of the small and big sides' buffers from soff and bigoff.
__kernel void direct_weight_pairs(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                                  __global const float *small, uint soff, uint sb, uint sf,
                                  uint ssize, __global const float *big, uint bigoff, uint bsize,
                                  __global float *part, uint poff) {
    const uint tap = get_global_id(0), e = get_global_id(1), b = get_global_id(2);
    if (tap >= WIN_K || e >= cs * CONV_CBG || b >= n) return;
    const uint fs = e / CONV_CBG, cb = fs / CONV_FG * CONV_CBG + e % CONV_CBG;
    const uint kx = tap % WIN_KW, ky = tap / WIN_KW % WIN_KH, kd = tap / (WIN_KW * WIN_KH);
    const uint sat = b * sb + fs * sf, vat = (b * WIN_C + cb) * WIN_IN;
    const int u = (int)WIN_pw - (int)(kx * WIN_dw);
    float16 acc = (float16)(0.0f);
    for (uint od = 0; od < WIN_OD; od++) {
        const int iz = (int)(od * WIN_sd + kd * WIN_dd) - (int)WIN_pd;
        if (iz < 0 || iz >= (int)WIN_D) continue;
DIRECT_GPU_ROLLED
        for (uint oy = 0; oy < WIN_OH; oy++) {
            const int iy = (int)(oy * WIN_sh + ky * WIN_dh) - (int)WIN_ph;
            if (iy < 0 || iy >= (int)WIN_H) continue;
            const uint srow = sat + (od * WIN_OH + oy) * WIN_OW;
            const int brow = (int)vat + (iz * (int)WIN_H + iy) * (int)WIN_W;
            acc += direct_lanes16(small + soff + srow, (int)srow, (int)ssize, 0, (int)WIN_OW) *
                   direct_evens16(big + bigoff + brow, brow, (int)bsize, u, (int)WIN_W);
        }
    }
    const float8 s8 = acc.lo + acc.hi;
    const float4 s4 = s8.lo + s8.hi;
    const float2 s2 = s4.lo + s4.hi;
    part[poff + (b * cs * CONV_CBG + e) * WIN_K + tap] = s2.x + s2.y;
}
