// The lanes convolution (src/layers/conv_lanes.c): the samples
// of a chunk lie along the vectors, so every position of a layer is a GEMM
// over its own taps. This file includes cl/gemm_tiled.cl (src/sources.c
// composes it), built with a tiled GEMM's -D options (MR, NV, VW, KC) and the
// taps IKD, IKH, IKW.
//
// Layout: a side of C channels at P positions is held as
//   T[(c * P + pos) * ldn + b],  ldn: the chunk's samples rounded up to NR,
// zero past the samples. Output position o's tap (kd, kh, kw) reads the
// input at o * stride - pad + k * dilation along each axis: a row of ldn
// samples, contiguous, loaded as whole vectors, whatever the stride,
// dilation or padding. A tap that falls in the padding is left out of that
// position's sum: no multiply-add is spent on a zero (on a 4x4 image, a
// third of a 3x3 layer's), and no position is computed that is not an
// output. The input gradient (and a transposed convolution's forward) is
// the same product gathered the other way: input position q takes, from
// each tap whose q + pad - k * dilation is a multiple of the stride, the
// output gradient at that quotient.
//
// Geometry: the window (clnet_win, cl/common.cl) of the convolution: the big
// side (the windows read it: a convolution's x, a transposed one's y) and the
// small side (the windows: a convolution's y, a transposed one's x).

#include "gemm_tiled.cl"
#include "conv_taps.cl"

// Along one axis, where tap k of position o reads: down (small from big):
// the big side's o * s - p + k * d; up (big from small): the small side's
// (o + p - k * d) / s where that divides. -1 where the tap reads nothing.
inline int lanes_reach(int up, int o, int k, int s, int p, int d, int size) {
    if (!up) {
        const int u = o * s - p + k * d;
        return u >= 0 && u < size ? u : -1;
    }
    const int v = o + p - k * d;
    return v >= 0 && v % s == 0 && v / s < size ? v / s : -1;
}

// The taps of position `pos` of the side a product writes (down: the small
// side, up: the big side) that read something: their offsets in a channel
// of the side it reads (rows of ldn) and their columns of A. Returns the count.
inline uint lanes_taps(clnet_win win, int up, uint pos, uint ldn, int at[IK], uint col[IK]) {
    const int OD = up ? WIN_D : WIN_OD, OH = up ? WIN_H : WIN_OH, OW = up ? WIN_W : WIN_OW;
    const int SD = up ? WIN_OD : WIN_D, SH = up ? WIN_OH : WIN_H, SW = up ? WIN_OW : WIN_W;
    const int od = (int)pos / (OH * OW), oh = (int)pos / OW % OH, ow = (int)pos % OW;
    (void)OD;
    uint taps = 0;
    for (int kd = 0; kd < IKD; kd++) {
        const int ud = lanes_reach(up, od, kd, WIN_sd, WIN_pd, WIN_dd, SD);
        for (int kh = 0; kh < IKH; kh++) {
            const int uh = lanes_reach(up, oh, kh, WIN_sh, WIN_ph, WIN_dh, SH);
            for (int kw = 0; kw < IKW; kw++) {
                const int uw = lanes_reach(up, ow, kw, WIN_sw, WIN_pw, WIN_dw, SW);
                if (ud < 0 || uh < 0 || uw < 0) continue;
                at[taps] = ((ud * SH + uh) * SW + uw) * (int)ldn;
                col[taps++] = (uint)((kd * IKH + kh) * IKW + kw);
            }
        }
    }
    return taps;
}

// The big-side position that tap (kd, kh, kw) of small-side position o
// reads (the down product's reach along each axis), or -1 where it reads
// padding: the weight gradients' walk over o.
inline int lanes_read(clnet_win win, uint o, int kd, int kh, int kw) {
    const int ud = lanes_reach(0, (int)(o / (WIN_OH * WIN_OW)), kd, WIN_sd, WIN_pd, WIN_dd, WIN_D),
              uh = lanes_reach(0, (int)(o / WIN_OW % WIN_OH), kh, WIN_sh, WIN_ph, WIN_dh, WIN_H),
              uw = lanes_reach(0, (int)(o % WIN_OW), kw, WIN_sw, WIN_pw, WIN_dw, WIN_W);
    return ud < 0 || uh < 0 || uw < 0 ? -1 : (ud * WIN_H + uh) * WIN_W + uw;
}

#if LOCAL == 0

// For each group g and position pos of the side it writes (work-item z =
// g * P + pos, P that side's positions): C(m, pos, :) = sum over the CH
// channels c of the side it reads and over pos's taps t of A(m, c, t) *
// X(c, tap t's position, :), A(m, c, t) = A[aoff + m * sam + c * ach + t].
// down: M = a group's filters, A = W (sam = Cg * IK, ach = IK); up: M = a
// group's big-side channels, A = W read across (sam = IK, ach = Cg * IK).
// X, C in the lanes layout (channel strides xcs, csm), group strides gsa,
// gsx, gsc. Work-item (x, y, z): the samples x * NR .., row blocks y * mb ..
// of MR; k is blocked by whole channels (KC / IK of them), C holding the
// partial sums between blocks.
__kernel void lanes_gemm(clnet_win win, uint up, uint M, uint CH, uint mb, uint ldn,
                         __global const float *A, uint aoff, uint sam, uint ach, uint gsa,
                         __global const float *X, uint xoff, uint xcs, uint gsx, __global float *C,
                         uint coff, uint csm, uint gsc) {
    const uint P = csm / ldn, z = get_global_id(2), g = z / P, pos = z % P;
    const uint n0 = get_global_id(0) * NR, ib0 = get_global_id(1) * mb;
    const uint nblocks = (M + MR - 1) / MR;
    if (n0 >= ldn || ib0 >= nblocks) return;
    const uint ib1 = min(nblocks, ib0 + mb);
    aoff += g * gsa;
    xoff += g * gsx + n0;
    coff += g * gsc + pos * ldn;
    int tap_at[IK];
    uint tap_col[IK];
    const uint taps = lanes_taps(win, (int)up, pos, ldn, tap_at, tap_col);
    const uint cc = KC == 0 ? CH : max(1u, (uint)KC / IK);
#define A_AT(r, i) ak[(i) + arow##r]
    for (uint c0 = 0; c0 < CH; c0 += cc) {
        const uint c1 = min(CH, c0 + cc);
        for (uint ib = ib0; ib < ib1; ib++) {
            const uint m0 = ib * MR;
            FOR_R(DECL_AROW, _)
            __global const float *ak = A + aoff + c0 * ach;
            __global const float *xc = X + xoff + c0 * xcs;
            FOR_R(DECL_ACCS, _)
            for (uint c = c0; c < c1; c++, xc += xcs, ak += ach)
                for (uint j = 0; j < taps; j++) {
                    __global const float *bk = xc + tap_at[j];
                    const uint t = tap_col[j];
                    FOR_V(LOAD_B, bk)
                    FOR_R(FMA_ROW, t)
                }
#define ROW(r) (m0 + (r))
#define COL(v) (n0 + (v) * VW)
            STORE_TILE(C, coff, csm, 1, M, ldn, 1.0f, c0 == 0 ? 0.0f : 1.0f)
#undef ROW
#undef COL
        }
    }
#undef A_AT
}

// The weight gradient: dW(g * Fg + f, c, t) = beta * dW + the sum over the
// small side's positions o whose tap t reads the big side, and over the
// samples, of S(g * Fg + f, o, b) * B(g * Cg + c, tap t's position, b). S
// and B in the lanes layout (the small side at soff, the big side at boff);
// dW (Fs, Cg, IK) at woff. Work-item (x, y, z): big channels x * NV ..,
// filters y * MR .., z = g * IK + t; its MR x NV sums are vectors along the
// samples, added across at the end.
#define WG_DECL(v, r) floatV acc##r##_##v = (floatV)(0.0f);
#define WG_DECLS(r, _) FOR_V(WG_DECL, r)
#define WG_LOAD_B(v, _) const floatV b##v = VLOAD(brow##v + i);
#define WG_FMA(v, r)    acc##r##_##v = MADD(s##r, b##v, acc##r##_##v);
#define WG_ROW(r, _)                                                                               \
    {                                                                                              \
        const floatV s##r = VLOAD(srow##r + i);                                                    \
        FOR_V(WG_FMA, r)                                                                           \
    }
#define WG_SROW(r, _)                                                                              \
    __global const float *srow##r = S + soff + (min(f0 + (r), Fg - 1) + g * Fg) * sP + o * ldn;
#define WG_BROW(v, _)                                                                              \
    __global const float *brow##v = B + boff + (min(c0 + (v), Cg - 1) + g * Cg) * bP + u;
#define WG_SUM(v, r) t[r][v] = acc##r##_##v;
#define WG_SUMS(r, _) FOR_V(WG_SUM, r)

__kernel void lanes_wgrad(clnet_win win, uint Fg, uint Cg, uint ldn, __global const float *S,
                          uint soff, __global const float *B, uint boff, float beta,
                          __global float *dW, uint woff) {
    const uint c0 = get_global_id(0) * NV, f0 = get_global_id(1) * MR;
    const uint g = get_global_id(2) / IK, tap = get_global_id(2) % IK;
    if (c0 >= Cg || f0 >= Fg) return;
    const uint sP = WIN_OD * WIN_OH * WIN_OW * ldn, bP = WIN_D * WIN_H * WIN_W * ldn;
    const int kd = (int)(tap / (IKH * IKW)), kh = (int)(tap / IKW % IKH), kw = (int)(tap % IKW);
    FOR_R(WG_DECLS, _)
    for (uint o = 0; o < WIN_OD * WIN_OH * WIN_OW; o++) {
        const int at = lanes_read(win, o, kd, kh, kw);
        if (at < 0) continue;
        const uint u = (uint)at * ldn;
        FOR_R(WG_SROW, _)
        FOR_V(WG_BROW, _)
        for (uint i = 0; i < ldn; i += VW) {
            FOR_V(WG_LOAD_B, _)
            FOR_R(WG_ROW, _)
        }
    }
    floatV t[MR][NV];
    FOR_R(WG_SUMS, _)
    for (uint r = 0; r < MR && f0 + r < Fg; r++)
        for (uint v = 0; v < NV && c0 + v < Cg; v++) {
            float sum = 0.0f;
            for (uint l = 0; l < VW; l++) sum += ((float *)&t[r][v])[l];
            __global float *w = dW + woff + ((g * Fg + f0 + r) * Cg + c0 + v) * IK + tap;
            *w = beta != 0.0f ? mad(beta, *w, sum) : sum;
        }
}

// The weight gradient as a GEMM, for groups of many channels: dW(g * Fg +
// f, c, t) = beta * dW + the sum over the small side's positions o whose
// tap t reads the big side at u, and over the n samples, of S(g * Fg + f, o,
// b) * L(g, u, b, c): A(f, (o, b)) = S, lanes layout at soff, and B((o, b),
// c) = L, the big side with its channels last, (G, Pb, ldn, Cgp) at loff
// (Cgp: a group's channels rounded up to NR, zeros past Cg). k is blocked
// by whole positions (ob of them), dW holding the partial sums.
// tg = 0: work-item (x, y, z) takes channels x * NR .., row blocks y * mb
// .., z = g * IK + t. tg > 0 (CPUs): work-item (0, y, g * tg + j) takes row
// blocks y * mb .. for every channel and the j-th of tg groups of taps, so
// that its rows of S, read once from memory, serve those taps and every
// channel from the cache, block by block.
__kernel void lanes_wgemm(clnet_win win, uint M, uint Cg, uint Cgp, uint n, uint ldn, uint mb,
                          uint tg, uint ob, __global const float *S, uint soff,
                          __global const float *L, uint loff, float beta, __global float *dW,
                          uint woff) {
    const uint ib0 = get_global_id(1) * mb, nblocks = (M + MR - 1) / MR, z = get_global_id(2);
    const uint per = tg ? (IK + tg - 1) / tg : 1; /* taps a work-item */
    const uint g = tg ? z / tg : z / IK, t0 = tg ? z % tg * per : z % IK;
    const uint t1 = min((uint)IK, t0 + per);
    const uint c0 = tg ? 0 : get_global_id(0) * NR, c1 = tg ? Cg : min(Cg, c0 + NR);
    if (c0 >= Cg || ib0 >= nblocks || t0 >= t1) return;
    const uint ib1 = min(nblocks, ib0 + mb);
    const uint P = WIN_OD * WIN_OH * WIN_OW, sam = P * ldn;
    __global const float *sg = S + soff + g * M * sam;
    __global const float *lg = L + loff + g * WIN_D * WIN_H * WIN_W * ldn * Cgp;
#define A_AT(r, i) ak[(i) + arow##r]
    for (uint o0 = 0; o0 < P; o0 += ob) {
        const uint o1 = min(P, o0 + ob);
        for (uint tap = t0; tap < t1; tap++) {
            const int kd = (int)(tap / (IKH * IKW)), kh = (int)(tap / IKW % IKH),
                      kw = (int)(tap % IKW);
            const uint coff = woff + g * M * Cg * IK + tap;
            for (uint n0 = c0; n0 < c1; n0 += NR)
                for (uint ib = ib0; ib < ib1; ib++) {
                    const uint m0 = ib * MR;
                    FOR_R(DECL_AROW, _)
                    FOR_R(DECL_ACCS, _)
                    for (uint o = o0; o < o1; o++) {
                        const int at = lanes_read(win, o, kd, kh, kw);
                        if (at < 0) continue;
                        __global const float *ak = sg + o * ldn;
                        __global const float *bk = lg + (uint)at * ldn * Cgp + n0;
                        for (uint b = 0; b < n; b++, ak++, bk += Cgp) {
                            FOR_V(LOAD_B, bk)
                            FOR_R(FMA_ROW, 0)
                        }
                    }
#define ROW(r) (m0 + (r))
#define COL(v) (n0 + (v) * VW)
                    STORE_TILE(dW, coff, Cg * IK, IK, M, Cg, 1.0f, o0 == 0 ? beta : 1.0f)
#undef ROW
#undef COL
                }
        }
    }
#undef A_AT
}

#endif

// The layout moves turn blocks of 8 x 8 in registers: a work-item reads eight
// rows of eight floats as vectors and writes them as eight columns, so both
// sides of a move run along whole vectors (one element a work-item was a
// gather, a float a sample apart: 0.5-0.6x the time on a 2-core EPYC). The
// work-items' first axis runs along the (n, C, P) side's rows: that order
// measured fastest on CPUs, where the lanes algorithm is the default.

// Column j of the 8 x 8 block whose rows are r0..r7.
#define LANES_COL(j) \
    (float8)(r0.s##j, r1.s##j, r2.s##j, r3.s##j, r4.s##j, r5.s##j, r6.s##j, r7.s##j)

// Row i of a block: the 8 floats at row + first (fewer than 8 left: those,
// zero after them; a missing row (`keep` 0): zeros).
inline float8 lanes_row(__global const float *row, uint first, uint left, uint keep) {
    if (!keep) return (float8)(0.0f);
    if (left >= 8) return vload8(0, row + first);
    float t[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (uint j = 0; j < left; j++) t[j] = row[first + j];
    return vload8(0, t);
}

// Writes v's first `left` floats (all 8 where left >= 8) at to, added to
// what is there with add.
inline void lanes_put(__global float *to, float8 v, uint left, uint add) {
    if (left >= 8) {
        if (add) v += vload8(0, to);
        vstore8(v, 0, to);
        return;
    }
    float t[8];
    vstore8(v, 0, t);
    for (uint j = 0; j < left; j++) clnet_store_dx(to + j, t[j], add);
}

#define LANES_EACH(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

// dst (C, P, ldn) in the lanes layout at doff = the (n, C, P) tensor at src +
// soff (only where y > 0 with relu: the gradient of a relu taken in, y at the
// same offsets of `y`), zero past the n samples. One work-item per block of
// 8 positions x 8 samples of a channel, (pos / 8, b / 8, c).
__kernel void lanes_in(uint n, uint C, uint P, uint ldn, __global const float *src, uint soff,
                       __global const float *y, uint yoff, uint relu, __global float *dst,
                       uint doff) {
    const uint pos = get_global_id(0) * 8, b = get_global_id(1) * 8, c = get_global_id(2);
    if (b >= ldn || pos >= P) return;
    const uint left = P - pos, at = (b * C + c) * P, step = C * P;
#define LANES_IN_ROW(i)                                                                   \
    float8 r##i = lanes_row(src + soff + at + i * step, pos, left, b + i < n);            \
    if (relu)                                                                             \
        r##i = select((float8)(0.0f), r##i,                                               \
                      isgreater(lanes_row(y + yoff + at + i * step, pos, left, b + i < n), \
                                (float8)(0.0f)));
    LANES_EACH(LANES_IN_ROW)
#define LANES_IN_COL(j) \
    if (j < left) lanes_put(dst + doff + (c * P + pos + j) * ldn + b, LANES_COL(j), ldn - b, 0);
    LANES_EACH(LANES_IN_COL)
#undef LANES_IN_ROW
#undef LANES_IN_COL
}

// A value of a block's row r as lanes_out stores it: + shift, through
// max(., 0) with relu.
inline float8 lanes_value(float8 r, float shift, uint relu) {
    const float8 v = r + shift;
    return relu ? fmax(v, 0.0f) : v;
}

// The sum of v's lanes.
inline float lanes_sum(float8 v) {
    return dot(v.lo, (float4)(1.0f)) + dot(v.hi, (float4)(1.0f));
}

// The inverse: the (n, C, P) tensor at dst + doff = src (C, P, ldn) at soff,
// + bias[boff + c] with has_bias, through max(., 0) with relu, stored by
// clnet_store_dx (add). One work-item per block of 8 positions x 8 samples
// of a channel, (pos / 8, b / 8, c).
//
// With stats, each block also writes the statistics record of the values it
// stores (cl/batchnorm.cl's bn_merge reads them): its count, its mean m and
// the sums of v - m and (v - m)^2, at rec + roff + 4 * (c * R + rbase + the
// block's index (b / 8) * ceil(P / 8) + pos / 8).
__kernel void lanes_out(uint n, uint C, uint P, uint ldn, __global const float *src, uint soff,
                        __global const float *bias, uint boff, __global float *dst, uint doff,
                        uint has_bias, uint relu, uint add, __global float *rec, uint roff, uint R,
                        uint rbase, uint stats) {
    const uint pos = get_global_id(0) * 8, b = get_global_id(1) * 8, c = get_global_id(2);
    if (pos >= P || b >= n) return;
    const uint left = P - pos;
    const float shift = has_bias ? bias[boff + c] : 0.0f;
#define LANES_OUT_ROW(j) \
    const float8 r##j = lanes_row(src + soff + (c * P + pos + j) * ldn, b, ldn - b, j < left);
    LANES_EACH(LANES_OUT_ROW)
#define LANES_OUT_COL(i)                                                         \
    if (b + i < n) {                                                             \
        const float8 v = LANES_COL(i) + shift;                                   \
        lanes_put(dst + doff + ((b + i) * C + c) * P + pos, relu ? fmax(v, 0.0f) : v, left, \
                  add);                                                          \
    }
    LANES_EACH(LANES_OUT_COL)
    if (!stats) return;
    /* the block's rows are its positions, its lanes its samples */
    const uint rows = min(left, 8u), cols = min(n - b, 8u);
    const int8 in = (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)((int)cols);
    float8 sum = 0.0f, d = 0.0f, q = 0.0f;
#define LANES_OUT_SUM(j) \
    if (j < rows) sum += select((float8)(0.0f), lanes_value(r##j, shift, relu), in);
    LANES_EACH(LANES_OUT_SUM)
    const float count = (float)(rows * cols), m = lanes_sum(sum) / count;
#define LANES_OUT_DEV(j)                                                              \
    if (j < rows) {                                                                   \
        const float8 e = select((float8)(0.0f), lanes_value(r##j, shift, relu) - m, in); \
        d += e;                                                                       \
        q += e * e;                                                                   \
    }
    LANES_EACH(LANES_OUT_DEV)
    const uint at = c * R + rbase + b / 8 * ((P + 7) / 8) + pos / 8;
    vstore4((float4)(count, m, lanes_sum(d), lanes_sum(q)), 0, rec + roff + 4 * at);
#undef LANES_OUT_ROW
#undef LANES_OUT_COL
#undef LANES_OUT_SUM
#undef LANES_OUT_DEV
}

// dst (G, P, ldn, Cgp) at doff = the (n, G * Cg, P) tensor at src + soff with
// its channels last, a group's rounded up to Cgp with zeros (lanes_wgemm's
// L). One work-item per block of 8 positions x 8 channels of a sample's
// group, (pos / 8, cg / 8, b * G + g).
__kernel void lanes_in_last(uint n, uint G, uint Cg, uint Cgp, uint P, uint ldn,
                            __global const float *src, uint soff, __global float *dst, uint doff) {
    const uint pos = get_global_id(0) * 8, cg = get_global_id(1) * 8, b = get_global_id(2) / G,
               g = get_global_id(2) % G;
    if (cg >= Cgp || pos >= P || b >= n) return;
    const uint left = P - pos, at = (b * G * Cg + g * Cg + cg) * P;
#define LANES_LAST_ROW(i) const float8 r##i = lanes_row(src + soff + at + i * P, pos, left, cg + i < Cg);
    LANES_EACH(LANES_LAST_ROW)
#define LANES_LAST_COL(j)                                                                    \
    if (j < left)                                                                            \
        lanes_put(dst + doff + ((g * P + pos + j) * ldn + b) * Cgp + cg, LANES_COL(j), Cgp - cg, \
                  0);
    LANES_EACH(LANES_LAST_COL)
#undef LANES_LAST_ROW
#undef LANES_LAST_COL
}

// wt[toff + ((g * Cg + c) * Fg + f) * K + t] = w[woff + ((g * Fg + f) * Cg + c)
// * K + t]: the weight with its two channel axes swapped, so that the up
// product reads it as the down product reads w (a row a big-side channel).
// One work-item per (g * Cg + c, f): a window's K taps.
__kernel void lanes_flip(uint G, uint Fg, uint Cg, uint K, __global const float *w, uint woff,
                         __global float *wt, uint toff) {
    const uint gc = get_global_id(0), f = get_global_id(1);
    if (gc >= G * Cg || f >= Fg) return;
    const uint g = gc / Cg, c = gc % Cg;
    __global const float *from = w + woff + ((g * Fg + f) * Cg + c) * K;
    __global float *to = wt + toff + (gc * Fg + f) * K;
    for (uint t = 0; t < K; t++) to[t] = from[t];
}
