// Implicit-GEMM convolution (src/layers/conv_implicit.c): the
// GEMM reads its B operand straight from the input instead of from a column
// matrix, with the register micro-kernel of the tiled GEMM (this file
// includes cl/gemm_tiled.cl: src/sources.c composes it; built with a tiled
// GEMM's -D options).
//
// The input is first copied into a zero-padded grid, channel-major:
//   xp[(c * n + b) * P + (z * GH + y) * GW + x],  P = GD * GH * GW
// where every window of the output lies inside the grid. Output position
// (od, oy, ox) is grid position q = (od * GH + oy) * GW + ox, and its tap
// (kd, ky, kx) reads grid position q + kd * isd + ky * ish + kx * isw (the
// tap strides: dilation times the grid's plane, row and 1). So along q the
// taps of consecutive outputs are consecutive: B(k, q), k = c * IK + tap, is
// a shifted view of channel c's grid, loaded as whole vectors. The GEMM
// computes every grid position, those past the output's rows and columns
// too (what the padding costs: (GW - OW) / GW of a row), and a last kernel
// moves the valid ones out. A slack of zeros after the grid keeps the last
// tile's loads inside the buffer.
//
// At stride s the padded input is split into s phases along each axis, one
// grid each, one after another for every channel: along an axis, padded
// position u is phase u % s's position u / s. Output o's tap reaching u = o
// * s + k * d past the window's start then lies in phase k * d % s at o + k
// * d / s: along q the taps are again consecutive, each in its own phase's
// grid. Only the phases some tap reads are kept: 0 .. kept - 1 along each
// axis (a 1x1 layer at stride 2 keeps one of four). The input gradient runs
// one product per phase of its result with taps (the taps whose k * d % s is
// that phase), reading the output gradient's grid backwards: input position
// o * s + phase gets the output gradient at o - k * d / s from each of them.
//
// Compile-time parameters: the tiled GEMM's (MR, NV, VW, KC), and the taps
// IKD, IKH, IKW; WR, the rows of a weight-gradient work-item. The tap
// strides and every size are arguments, so layers with the same kernel size
// share one program.

#include "gemm_tiled.cl"
#include "conv_taps.cl"

#ifndef WR
#define WR 1
#endif
#ifndef WT
#define WT IK
#endif

// Tap t's (kd, ky, kx), as the x, y, z of a vector.
inline int4 tap_of(uint t) {
    return (int4)((int)(t / (IKW * IKH)), (int)(t / IKW % IKH), (int)(t % IKW), 0);
}

// Tap t = (kd, ky, kx) reaches u = k * dil past its window's start along
// each axis (x, y, z of the vectors: depth, height, width): phase u % stride
// of the grid, u / stride steps of `step` on. Its offset in a channel's
// grids is the sum of those steps plus its phase's index among the kept ones
// times step.w (the grids of one channel follow each other).


inline int tap_offset(uint t, int4 dil, int4 stride, int4 kept, int4 step) {
    const int4 u = tap_of(t) * dil;
    const int4 reach = u / stride, phase = u % stride;
    return reach.x * step.x + reach.y * step.y + reach.z * step.z +
           ((phase.x * kept.y + phase.y) * kept.z + phase.z) * step.w;
}

// Whether tap t reads phase `want` (want.w = 0: every tap does).
inline int tap_in(uint t, int4 dil, int4 stride, int4 want) {
        const int4 phase = tap_of(t) * dil % stride;
    return want.w == 0 || (phase.x == want.x && phase.y == want.y && phase.z == want.z);
}

#if LOCAL == 0

// C(m, q) = sum over k of A(m, k) B(k, q) (+ beta * C; C holds the partial
// sums between k blocks), A(m, k) = A[aoff + m * sam + k], B as above for
// channels 0 .. CH-1 of X from xoff, channel stride xcs, over the taps that
// read phase `want` (tap_in), each at its tap_offset; with want.w = 2 the
// taps run backwards along A (tap t is A's column IK - 1 - t: the input
// gradient's product over the reversed weight). Work-item (x, y, g): columns
// x * NR .., row blocks y * mb .. y * mb + mb - 1 (of MR rows), as
// gemm_tiled, of group g, whose A, X and C start gsa, gsx and gsc further
// on; k is blocked by whole channels (KC / IK of them). The columns come in
// runs of P (a sample's grid) of which x's tiles cover the first `tiles`
// (those with a position of the result: a sample's trailing positions past
// its last output are skipped, 6% of a small volume's), each tile storing
// only inside its run; P = N is one run.
__kernel void implicit_gemm(uint M, uint N, uint P, uint tiles, uint CH, uint mb,
                            __global const float *A, uint aoff,
                            uint sam, uint gsa, __global const float *X, uint xoff, uint xcs,
                                                        uint gsx, int4 dil, int4 stride, int4 kept, int4 step, int4 want,
                            float beta, __global float *C, uint coff, uint csm, uint gsc) {
    const uint run = get_global_id(0) / tiles, end = min(N, run * P + P);
    const uint n0 = run * P + get_global_id(0) % tiles * NR, ib0 = get_global_id(1) * mb,
               g = get_global_id(2);
    aoff += g * gsa;
    xoff += g * gsx;
    coff += g * gsc;
    const uint nblocks = (M + MR - 1) / MR;
    if (n0 >= end || ib0 >= nblocks) return;
    const uint ib1 = min(nblocks, ib0 + mb);
    const uint cc = KC == 0 ? CH : max(1u, (uint)KC / IK);
    int every_at[IK]; // each tap's offset in a channel's grids
#pragma unroll
    for (uint t = 0; t < IK; t++) every_at[t] = tap_offset(t, dil, stride, kept, step);
    int tap_at[IK];  // those of the taps that read phase `want`
    uint tap_k[IK]; // and their columns of A
    uint taps = 0;
    for (uint t = 0; t < IK && want.w != 0; t++)
        if (tap_in(t, dil, stride, want)) {
            tap_at[taps] = every_at[t];
            tap_k[taps++] = want.w == 2 ? IK - 1 - t : t;
        }
#define A_AT(r, i) ak[(i) + arow##r]
#define TAP_LOOP(count, at, column)                                                                \
    for (uint j = 0; j < count; j++) {                                                             \
        __global const float *bk = xc + at[j];                                                     \
        const uint t = column;                                                                     \
        FOR_V(LOAD_B, bk)                                                                          \
        FOR_R(FMA_ROW, t)                                                                          \
    }
    for (uint c0 = 0; c0 < CH; c0 += cc) {
        const uint c1 = min(CH, c0 + cc);
        for (uint ib = ib0; ib < ib1; ib++) {
            const uint m0 = ib * MR;
            FOR_R(DECL_AROW, _)
            __global const float *ak = A + aoff + c0 * IK;
            __global const float *xc = X + xoff + c0 * xcs + n0;
            FOR_R(DECL_ACCS, _)
            for (uint c = c0; c < c1; c++, xc += xcs, ak += IK) {
                if (want.w == 0) // every tap, A's columns in order: a fixed count, no look-up
                    TAP_LOOP(IK, every_at, j)
                else
                    TAP_LOOP(taps, tap_at, tap_k[j])
            }
#define ROW(r) (m0 + (r))
#define COL(v) (n0 + (v) * VW)
            STORE_TILE(C, coff, csm, 1, M, end, 1.0f, c0 == 0 ? beta : 1.0f)
#undef ROW
#undef COL
        }
    }
#undef A_AT
#undef TAP_LOOP
}

#else // LOCAL == 1: the work-group's tiles in local memory (cl/gemm_tiled.cl's LOCAL_PRODUCT)

// The taps of phase `want` (tap_in; every tap with want.w == 0), in order:
// their offsets in a channel's grids (at) and their columns of A (col), as
// implicit_gemm's LOCAL == 0 version takes them, written to local memory for
// the work-group (a private array indexed at run time would live in off-chip
// memory). Returns how many; every work-item counts them.
inline uint local_taps(__local int *at, __local uint *col, int4 dil, int4 stride, int4 kept,
                       int4 step, int4 want, uint lid) {
    uint n = 0;
    for (uint t = 0; t < IK; t++)
        if (want.w == 0 || tap_in(t, dil, stride, want)) {
            if (lid == 0) {
                at[n] = tap_offset(t, dil, stride, kept, step);
                col[n] = want.w == 2 ? IK - 1 - t : t;
            }
            n++;
        }
    barrier(CLK_LOCAL_MEM_FENCE);
    return n;
}

// The taps' table (local_taps) after the tiles, in LOCAL_TILES's one array:
// IK offsets, then IK columns of A.
#define TAP_VECS ((2 * IK + VW - 1) / VW)
#define LOCAL_TAPS                                                                                 \
    __local int *const tap_at = (__local int *)(bl_tiles + 2 * KL * BLD);                          \
    __local uint *const tap_col = (__local uint *)(tap_at + IK);

// k / d exactly for k < 2^24 and 1 <= d <= 2^8 (magic = ceil(2^32 / d), 0
// for d == 1): a multiply instead of a division for every staged element.
inline uint div_by(uint k, uint d, uint magic) {
    return d == 1 ? k : mul_hi(k, magic);
}
inline uint magic_of(uint d) {
    return d == 1 ? 0u : (uint)((0x100000000ul + d - 1) / d);
}

// implicit_gemm's A(m, k) = A[m * sam + c * IK + col[j]] and B(k, n) =
// X[c * xcs + n + at[j]] of channel c's tap j, k = c * taps + j.
inline float a_at(__global const float *a, uint sam, __local const uint *col, uint k, uint m,
                  uint taps, uint magic) {
    const uint c = div_by(k, taps, magic);
    return a[m * sam + c * IK + col[k - c * taps]];
}
inline float b_at(__global const float *x, uint xcs, __local const int *at, uint k, uint n,
                  uint taps, uint magic) {
    const uint c = div_by(k, taps, magic);
    return x[(int)(c * xcs + n) + at[k - c * taps]];
}
// and B(k, n .. n + VW - 1), one vector load (n + VW <= N)
inline floatV bv_at(__global const float *x, uint xcs, __local const int *at, uint k, uint n,
                    uint taps, uint magic) {
    const uint c = div_by(k, taps, magic);
    return VLOAD(x + (int)(c * xcs + n) + at[k - c * taps]);
}

// The LOCAL == 0 kernel's product (same arguments; the runs of P are not
// skipped, so run and tiles are unused, and beta is 0: no k blocks), by the
// work-group: the TM x TN tile of C at (get_group_id(1) * TM, get_group_id(0)
// * TN) of group get_group_id(2), over k = c * taps + j (channel c's tap j),
// the order of the LOCAL == 0 kernel: every tile gives the same floats.
__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1))) void
implicit_gemm(uint M, uint N, uint P, uint tiles, uint CH, uint mb, __global const float *A,
              uint aoff, uint sam, uint gsa, __global const float *X, uint xoff, uint xcs,
              uint gsx, int4 dil, int4 stride, int4 kept, int4 step, int4 want, float beta,
              __global float *C, uint coff, uint csm, uint gsc) {
    LOCAL_TILES(TAP_VECS)
    LOCAL_TAPS
    LOCAL_IDS
    const uint g = get_group_id(2), m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN;
    const uint taps = local_taps(tap_at, tap_col, dil, stride, kept, step, want, lid);
    const uint K = CH * taps, magic = magic_of(taps);
    __global const float *a = A + aoff + g * gsa, *x = X + xoff + g * gsx;
    (void)P, (void)tiles, (void)mb;
#define VALUE_A(k, m) ((k) < K && (m) < M ? a_at(a, sam, tap_col, k, m, taps, magic) : 0.0f)
#define VALUE_B(k, n) ((k) < K && (n) < N ? b_at(x, xcs, tap_at, k, n, taps, magic) : 0.0f)
#define VALUE_BV(k, n)                                                                             \
    ((k) < K && (n) + VW <= N ? bv_at(x, xcs, tap_at, k, n, taps, magic) : LANES(VALUE_B, k, n))
    FOR_R(DECL_ACCS, _)
    LOCAL_PRODUCT(K, m0, n0, 1, 0)
#define ROW(r) (m0 + (r) * WGM + ly)
#define COL(v) (n0 + ((v) * WGN + lx) * VW)
    STORE_TILE(C, coff + g * gsc, csm, 1, M, N, 1.0f, beta)
#undef ROW
#undef COL
#undef VALUE_A
#undef VALUE_B
#undef VALUE_BV
}

#endif

// Zeros before (lead) and after (tail) a grid of `count` floats at xoff.
inline void zero_around(__global float *xp, uint xoff, uint count, uint lead, uint tail) {
    for (uint i = 0; i < lead; i++) xp[xoff - lead + i] = 0.0f;
    for (uint i = 0; i < tail; i++) xp[xoff + count + i] = 0.0f;
}

// The grids of a strided (n, C, SD, SH, SW) view, src[soff + b * sb + c *
// sc + z * szs + y * sys + x], shifted by (lz, ly, lx) (negative: cropped)
// and split into phases (st: the stride along depth, height, width; kept:
// the phases kept, kept.x * kept.y * kept.z of them), into the
// channel-major grids above (GD, GH, GW a phase) at xoff, zeros around:
// grid position (z, y, x) of phase (pz, py, px) holds the view at (z * st.x
// + pz - lz, ...). `lead` zeros before them and `tail` after. One work-item
// per grid row (y, ((c * phases + phase) * n + b) * GD + z); the row after
// the last writes lead and tail.
__kernel void implicit_pad(uint n, uint C, uint SD, uint SH, uint SW, int lz, int ly, int lx,
                           uint4 st, uint4 kept, uint GD, uint GH, uint GW,
                           __global const float *src,
                           uint soff, uint sb, uint sc, uint szs, uint sys, __global float *xp,
                           uint xoff, uint lead, uint tail) {
    const uint phases = kept.x * kept.y * kept.z;
    const uint y = get_global_id(0), z = get_global_id(1), rows = C * phases * n * GD;
    if (y >= GH || z > rows) return;
    if (z == rows) {
        if (y == 0) zero_around(xp, xoff, rows * GH * GW, lead, tail);
        return;
    }
    const uint b = z / GD % n, ph = z / GD / n % phases, c = z / GD / n / phases;
    const int px = (int)(ph % kept.z), py = (int)(ph / kept.z % kept.y),
              pz = (int)(ph / kept.z / kept.y);
    const int sz = (int)(z % GD * st.x) + pz - lz, sy = (int)(y * st.y) + py - ly;
    __global float *out = xp + xoff + (z * GH + y) * GW;
    if (sz < 0 || sz >= (int)SD || sy < 0 || sy >= (int)SH) {
        for (uint x = 0; x < GW; x++) out[x] = 0.0f;
        return;
    }
    __global const float *row = src + soff + b * sb + c * sc + (uint)sz * szs + (uint)sy * sys;
    if (st.z == 1) { // zeros, the row, zeros: loops without a test an element
        const uint x0 = (uint)clamp(lx, 0, (int)GW), x1 = (uint)clamp(lx + (int)SW, lx, (int)GW);
        for (uint x = 0; x < x0; x++) out[x] = 0.0f;
        for (uint x = x0; x < x1; x++) out[x] = row[(int)x - lx];
        for (uint x = max(x0, x1); x < GW; x++) out[x] = 0.0f;
        return;
    }
    for (uint x = 0; x < GW; x++) {
        const int sx = (int)(x * st.z) + px - lx;
        out[x] = sx >= 0 && sx < (int)SW ? row[sx] : 0.0f;
    }
}

// The statistics record of a row of len values (lanes_out's in
// cl/conv_lanes.cl): its count, its mean m, the sums of v - m and (v - m)^2.
inline void implicit_stats(__global const float *row, uint len, __global float *to) {
    float sum = 0.0f, d = 0.0f, q = 0.0f;
    for (uint x = 0; x < len; x++) sum += row[x];
    const float m = sum / (float)len;
    for (uint x = 0; x < len; x++) {
        const float e = row[x] - m;
        d += e;
        q += e * e;
    }
    vstore4((float4)((float)len, m, d, q), 0, to);
}

// y[b, f, od, oy, ox] = Yp[f * ld + b * P + (od * GH + oy) * GW + ox]
// (+ bias[f] with has_bias), through max(., 0) with relu, stored by
// clnet_store_dx (add): the valid grid positions of the GEMM's result, in
// NCDHW. One work-item per output row (oy, (b * F + f) * OD + od).
//
// With strides st (> 1: the input gradient's products, one per phase of it
// below `kept` along each axis, pst floats apart): output position o + lo
// along an axis is phase (o + lo) % st's grid position (o + lo) / st, zero
// past the grid's GD, GH, GW and in the phases not kept (no tap reaches them).
//
// With stats, each row also writes the statistics record of what it stored
// (implicit_stats) at rec + roff + 4 * (f * R + rbase + (b * OD + od) * OH
// + oy): cl/batchnorm.cl's bn_merge reads them.
__kernel void implicit_output(uint n, uint F, uint OD, uint OH, uint OW, uint GD, uint GH, uint GW,
                              uint P, uint ld, uint4 st, uint4 kept, uint4 lo, uint pst,
                              __global const float *Yp, uint ypoff, __global const float *bias,
                              uint boff, __global float *y, uint yoff, uint has_bias, uint relu,
                              uint add, __global float *rec, uint roff, uint R, uint rbase,
                              uint stats) {
    const uint oy = get_global_id(0), z = get_global_id(1);
    if (oy >= OH || z >= n * F * OD) return;
    const uint od = z % OD, bf = z / OD, b = bf / F, f = bf % F;
    const uint uz = od + lo.x, uy = oy + lo.y, gz = uz / st.x, gy = uy / st.y;
    const uint pz = uz % st.x, py = uy % st.y, phzy = (pz * kept.y + py) * kept.z;
    __global const float *src = Yp + ypoff + f * ld + b * P + (gz * GH + gy) * GW;
    __global float *dst = y + yoff + (z * OH + oy) * OW;
    const float bv = has_bias ? bias[boff + f] : 0.0f;
    const int inside = gz < GD && gy < GH && pz < kept.x && py < kept.y;
    if (st.z == 1) { // no division a value, and no test an element but past the grid
        src += phzy * pst + lo.z;
        const uint end = inside ? min(OW, GW - min(GW, lo.z)) : 0;
        const float past = relu ? fmax(bv, 0.0f) : bv;
        if (!add && !relu)
            for (uint ox = 0; ox < end; ox++) dst[ox] = src[ox] + bv;
        else if (!add)
            for (uint ox = 0; ox < end; ox++) dst[ox] = fmax(src[ox] + bv, 0.0f);
        else
            for (uint ox = 0; ox < end; ox++)
                dst[ox] += relu ? fmax(src[ox] + bv, 0.0f) : src[ox] + bv;
        for (uint ox = end; ox < OW; ox++) clnet_store_dx(dst + ox, past, add);
    } else {
        for (uint ox = 0; ox < OW; ox++) {
            const uint ux = ox + lo.z, gx = ux / st.z, px = ux % st.z;
            const float v =
                inside && gx < GW && px < kept.z ? src[(phzy + px) * pst + gx] + bv : bv;
            clnet_store_dx(dst + ox, relu ? fmax(v, 0.0f) : v, add);
        }
    }
    if (stats) implicit_stats(dst, OW, rec + roff + 4 * (f * R + rbase + (b * OD + od) * OH + oy));
}

// The inverse: dYp[f * ld + b * P + (od * GH + oy) * GW + ox] = dy[b, f, od,
// oy, ox] (only where y > 0 with relu), zero at every other grid position,
// from n * P to ld, `lead` floats before and `tail` after (the input
// gradient reads them as a grid). One work-item per grid row (gy, (f * n +
// b) * GD + gz); the F rows after the last zero the rest.
inline void to_grid(uint n, uint F, uint OD, uint OH, uint OW, uint GD, uint GH, uint GW, uint ld,
                    __global const float *dy, uint dyoff, __global const float *y, uint yoff,
                    __global float *dYp, uint dypoff, uint lead, uint tail, const int relu) {
    const uint gy = get_global_id(0), z = get_global_id(1), rows = F * n * GD, P = GD * GH * GW;
    if (gy >= GH || z >= rows + F) return;
    if (z >= rows) {
        if (gy != 0) return;
        for (uint i = n * P; i < ld; i++) dYp[dypoff + (z - rows) * ld + i] = 0.0f;
        if (z == rows) zero_around(dYp, dypoff, F * ld, lead, tail);
        return;
    }
    const uint gz = z % GD, fb = z / GD, b = fb % n, f = fb / n;
    __global float *out = dYp + dypoff + f * ld + b * P + (gz * GH + gy) * GW;
    if (gz >= OD || gy >= OH) {
        for (uint x = 0; x < GW; x++) out[x] = 0.0f;
        return;
    }
    const uint at = ((b * F + f) * OD + gz) * OH * OW + gy * OW, end = min(OW, GW);
    __global const float *drow = dy + dyoff + at, *yrow = y + yoff + at;
    if (relu)
        for (uint x = 0; x < end; x++) out[x] = yrow[x] > 0.0f ? drow[x] : 0.0f;
    else
        for (uint x = 0; x < end; x++) out[x] = drow[x];
    for (uint x = end; x < GW; x++) out[x] = 0.0f;
}

__kernel void implicit_to_grid(uint n, uint F, uint OD, uint OH, uint OW, uint GD, uint GH, uint GW,
                               uint ld, __global const float *dy, uint dyoff,
                               __global const float *y, uint yoff, __global float *dYp,
                               uint dypoff, uint lead, uint tail) {
    to_grid(n, F, OD, OH, OW, GD, GH, GW, ld, dy, dyoff, y, yoff, dYp, dypoff, lead, tail, 0);
}

__kernel void implicit_to_grid_relu(uint n, uint F, uint OD, uint OH, uint OW, uint GD, uint GH,
                                    uint GW, uint ld, __global const float *dy, uint dyoff,
                                    __global const float *y, uint yoff, __global float *dYp,
                                    uint dypoff, uint lead, uint tail) {
    to_grid(n, F, OD, OH, OW, GD, GH, GW, ld, dy, dyoff, y, yoff, dYp, dypoff, lead, tail, 1);
}

// The weight of the input gradient's convolution: each group's W (Fg, Cbg,
// K) transposed and its taps reversed, wf[(g * Cbg + c) * Fg * K + f * K + t]
// = w[((g * Fg + f) * Cbg + c) * K + K - 1 - t]. One work-item per element.
__kernel void implicit_flip(uint G, uint Fg, uint Cbg, uint K, __global const float *w, uint woff,
                            __global float *wf, uint wfoff) {
    const uint e = get_global_id(0);
    if (e >= G * Cbg * Fg * K) return;
    const uint t = e % K, f = e / K % Fg, c = e / (K * Fg) % Cbg, g = e / (K * Fg * Cbg);
    wf[wfoff + e] = w[woff + ((g * Fg + f) * Cbg + c) * K + K - 1 - t];
}

// The weight gradient's parts, G groups of M rows and CH channels:
// part[poff + (z * G * M + g * M + m) * CH * IK + c * IK + tap] = the sum
// over q in chunk z (q from z * chunk, fewer than L) of A[aoff + (g * M + m)
// * lda + q] * X[xoff + (g * CH + c) * xcs + q + tap's offset]: A the output
// gradient on the grid (zero off the outputs), X the input's grid. One
// work-item per (channel g * CH + c and WT taps from tg * WT, WR rows from y
// * WR, chunk z), holding WR x WT vector accumulators (a last group short of
// WT taps repeats the last tap and stores only its own); chunk and L are
// multiples of VW (the rows of A are padded with zeros to ld).
// elementwise.cl's col_sums adds the parts in chunk order.
#if LOCAL == 0
__kernel void implicit_wgrad(uint M, uint CH, uint G, uint L, uint chunk, __global const float *A,
                             uint aoff, uint lda, __global const float *X, uint xoff, uint xcs,
                             int4 dil, int4 stride, int4 kept, int4 step, __global float *part,
                             uint poff) {
    const uint groups = (IK + WT - 1) / WT;
    const uint gc = get_global_id(0) / groups, t0 = get_global_id(0) % groups * WT;
    const uint m0 = get_global_id(1) * WR, z = get_global_id(2);
    if (gc >= G * CH || m0 >= M || z * chunk >= L) return;
    const uint g = gc / CH, c = gc % CH;
    aoff += g * M * lda;
    poff += (z * G + g) * M * CH * IK;
    const uint q1 = min(L, z * chunk + chunk);
    floatV acc[WR][WT];
    int tap_at[WT];
    __global const float *arow[WR];
#pragma unroll
    for (uint r = 0; r < WR; r++) {
        arow[r] = A + aoff + min(m0 + r, M - 1) * lda;
#pragma unroll
        for (uint t = 0; t < WT; t++) acc[r][t] = (floatV)(0.0f);
    }
#pragma unroll
    for (uint t = 0; t < WT; t++)
        tap_at[t] = tap_offset(min(t0 + t, (uint)IK - 1), dil, stride, kept, step);
    __global const float *xc = X + xoff + gc * xcs;
    for (uint q = z * chunk; q < q1; q += VW) {
        floatV a[WR];
#pragma unroll
        for (uint r = 0; r < WR; r++) a[r] = VLOAD(arow[r] + q);
#pragma unroll
        for (uint t = 0; t < WT; t++) {
            const floatV x = VLOAD(xc + q + tap_at[t]);
#pragma unroll
            for (uint r = 0; r < WR; r++) acc[r][t] = MADD(a[r], x, acc[r][t]);
        }
    }
    for (uint r = 0; r < WR && m0 + r < M; r++)
        for (uint t = 0; t < WT && t0 + t < IK; t++) {
            float lanes[VW], s = 0.0f;
            VSTORE(acc[r][t], lanes);
            for (uint i = 0; i < VW; i++) s += lanes[i];
            part[poff + (m0 + r) * CH * IK + c * IK + t0 + t] = s;
        }
}

#else // LOCAL == 1

// The same parts as a product of the work-group's tiles: M rows by N = CH *
// IK columns (n = c * IK + tap) over k = q - z * chunk of chunk z: A(m, k) =
// the output gradient's row at q, B(k, n) = channel c's grid at q + the
// tap's offset. Both run along k. Work-group (x, y, z * G + g): the TM x TN
// tile at (y * TM, x * TN) of group g's part z.
__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1))) void
implicit_wgrad(uint M, uint CH, uint G, uint L, uint chunk, __global const float *A, uint aoff,
               uint lda, __global const float *X, uint xoff, uint xcs, int4 dil, int4 stride,
               int4 kept, int4 step, __global float *part, uint poff) {
    LOCAL_TILES(TAP_VECS)
    LOCAL_TAPS
    LOCAL_IDS
    const uint z = get_group_id(2) / G, g = get_group_id(2) % G;
    const uint m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN, N = CH * IK;
    local_taps(tap_at, tap_col, dil, stride, kept, step, (int4)(0), lid);
    const uint q0 = z * chunk, K = min(L, q0 + chunk) - q0;
    __global const float *a = A + aoff + g * M * lda + q0, *x = X + xoff + g * CH * xcs + q0;
#define VALUE_A(k, m) ((k) < K && (m) < M ? a[(m) * lda + (k)] : 0.0f)
#define VALUE_B(k, n) ((k) < K && (n) < N ? x[(int)((n) / IK * xcs + (k)) + tap_at[(n) % IK]] : 0.0f)
#define VALUE_BV(k, n) LANES(VALUE_B, k, n) /* along k: the lanes are columns far apart */
    FOR_R(DECL_ACCS, _)
    LOCAL_PRODUCT(K, m0, n0, 1, 1)
#define ROW(r) (m0 + (r) * WGM + ly)
#define COL(v) (n0 + ((v) * WGN + lx) * VW)
    STORE_TILE(part, poff + (z * G + g) * M * N, N, 1, M, N, 1.0f, 0.0f)
#undef ROW
#undef COL
#undef VALUE_A
#undef VALUE_B
#undef VALUE_BV
}

#endif
