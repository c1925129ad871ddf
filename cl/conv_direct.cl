// Direct convolution: each pass of a grouped convolution with few channels
// per group (depthwise: one) as one launch over the whole layer, without a
// column matrix or a GEMM per group (src/layers/conv.c's "direct" algorithm).
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
// with add, added to what is there.
__kernel void direct_down(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                          __global const float *big, uint bigoff, __global const float *w,
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
// with add, added to what is there.
__kernel void direct_up(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                        __global const float *small, uint soff, uint sb, uint sf,
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

// One work-item per (tap, fs * CBG + cbl, sample b): sample b's part of
// dW[fs, cbl, tap], the sum over the windows whose tap reads the input, to
// part[poff + (b * cs * CBG + fs * CBG + cbl) * K + tap]. Along each row the
// windows whose tap lies inside the input are a range (direct_row_range), so
// the inner loop tests nothing; at strides 1 and 2 it runs eight lanes,
// summed in a fixed order at the end.
__kernel void direct_weight_partial(clnet_win win, uint n, uint cs, uint cbg, uint fg,
                                    __global const float *small, uint soff, uint sb, uint sf,
                                    __global const float *big, uint bigoff,
                                    __global float *part, uint poff) {
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
