// Winograd's F(2x2, 3x3) convolution (src/layers/conv_winograd.c): 3x3
// windows at stride 1 without dilation. Each 4x4 patch d of the input (tile
// t, its top-left at output row 2 ty and column 2 tx, less the padding) gives
// the 2x2 outputs A^T [(G g G^T) . (B^T d B)] A of a 3x3 filter g (Lavin and
// Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), with
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1],
// 16 multiplications for 36. Summed over the input channels, each of the
// 16 elements xi of the transformed tiles is a matrix product, filters x
// channels by channels x tiles: cl/conv_implicit.cl's implicit_gemm runs the
// 16 (times the groups) in one launch, built for one tap.
//
// The layouts (G groups, FO filters and CI channels a group, T tiles):
//   U[((xi * G + g) * FO + o) * CI + i]   the transformed filters
//   V[((xi * G + g) * CI + i) * T + t]    the transformed input tiles
//   M[((xi * G + g) * FO + o) * T + t]    their products
// Tile t = ((b * D + z) * TH + ty) * TW + tx of sample b's plane z: a 3x3
// window over (D, H, W) tensors treats each depth plane as an image.
//
// The input gradient is the same convolution of the output gradient with
// each filter turned by 180 degrees and its channels and filters swapped
// (flip), at padding 2 - p.
//
// The filter transform's 1/2 is exact; the input and output transforms add
// and subtract, so a product differs from the direct sum by a few roundings
// of sums of up to 4 x 4 terms (stated, against the reference, in
// docs/performance.md).

// U of the filters w (G * Fg, Cg, 3, 3) at woff: forward (flip = 0) o a
// filter and i a channel (FO = Fg, CI = Cg); flipped, o a channel and i a
// filter (FO = Cg, CI = Fg), the taps reversed. One work-item per (g, o, i).
__kernel void wino_filter(uint G, uint Fg, uint Cg, uint flip, __global const float *w, uint woff,
                          __global float *U, uint uoff) {
    const uint FO = flip ? Cg : Fg, CI = flip ? Fg : Cg, e = get_global_id(0);
    if (e >= G * FO * CI) return;
    const uint i = e % CI, o = e / CI % FO, g = e / CI / FO;
    __global const float *k =
        w + woff + (flip ? (g * Fg + i) * Cg + o : (g * Fg + o) * Cg + i) * 9;
    float f[3][3], t[4][3];
#pragma unroll
    for (uint y = 0; y < 3; y++)
#pragma unroll
        for (uint x = 0; x < 3; x++) f[y][x] = flip ? k[(2 - y) * 3 + 2 - x] : k[y * 3 + x];
#pragma unroll
    for (uint x = 0; x < 3; x++) { // t = G f
        t[0][x] = f[0][x];
        t[1][x] = 0.5f * (f[0][x] + f[1][x] + f[2][x]);
        t[2][x] = 0.5f * (f[0][x] - f[1][x] + f[2][x]);
        t[3][x] = f[2][x];
    }
    const uint T = G * FO * CI; // U's stride between elements xi
    __global float *u = U + uoff + (g * FO + o) * CI + i;
#pragma unroll
    for (uint y = 0; y < 4; y++) { // u = t G^T
        u[(y * 4 + 0) * T] = t[y][0];
        u[(y * 4 + 1) * T] = 0.5f * (t[y][0] + t[y][1] + t[y][2]);
        u[(y * 4 + 2) * T] = 0.5f * (t[y][0] - t[y][1] + t[y][2]);
        u[(y * 4 + 3) * T] = t[y][2];
    }
}

// V of src (n, C, D, H, W) at soff, C = G * CI channels: tile t's patch at
// rows 2 ty - ph .., columns 2 tx - pw .. (zeros outside); with relu, only
// where mask (the same shape, at moff) is above 0 (the gradient through a
// relu taken in). One work-item per (tx, (b * D + z) * TH + ty, channel).
__kernel void wino_input(uint n, uint C, uint D, uint H, uint W, uint ph, uint pw, uint TH,
                         uint TW, __global const float *src, uint soff,
                         __global const float *mask, uint moff, uint relu, __global float *V,
                         uint voff) {
    const uint tx = get_global_id(0), row = get_global_id(1), c = get_global_id(2);
    if (tx >= TW || row >= n * D * TH || c >= C) return;
    const uint ty = row % TH, plane = row / TH, b = plane / D, z = plane % D;
    const uint T = n * D * TH * TW, at = ((b * C + c) * D + z) * H * W;
    const int y0 = (int)(2 * ty) - (int)ph, x0 = (int)(2 * tx) - (int)pw;
    float d[4][4];
#pragma unroll
    for (int y = 0; y < 4; y++)
#pragma unroll
        for (int x = 0; x < 4; x++) {
            const int iy = y0 + y, ix = x0 + x;
            const int in = iy >= 0 && iy < (int)H && ix >= 0 && ix < (int)W;
            const uint e = at + (uint)(in ? iy * (int)W + ix : 0);
            d[y][x] = in && (!relu || mask[moff + e] > 0.0f) ? src[soff + e] : 0.0f;
        }
    float t[4][4];
#pragma unroll
    for (uint x = 0; x < 4; x++) { // t = B^T d
        t[0][x] = d[0][x] - d[2][x];
        t[1][x] = d[1][x] + d[2][x];
        t[2][x] = d[2][x] - d[1][x];
        t[3][x] = d[1][x] - d[3][x];
    }
    __global float *v = V + voff + c * T + row * TW + tx;
    const uint xs = C * T; // V's stride between elements xi
#pragma unroll
    for (uint y = 0; y < 4; y++) { // t B
        v[(y * 4 + 0) * xs] = t[y][0] - t[y][2];
        v[(y * 4 + 1) * xs] = t[y][1] + t[y][2];
        v[(y * 4 + 2) * xs] = t[y][2] - t[y][1];
        v[(y * 4 + 3) * xs] = t[y][1] - t[y][3];
    }
}

// dst (n, C, D, OH, OW) at doff, C = G * FO channels, from the products M:
// tile t's 2x2 outputs A^T m A, + bias[boff + channel] (has_bias), through
// max(., 0) (relu), stored or added (add; clnet_store_dx), those inside the
// output. One work-item per (tx, (b * D + z) * TH + ty, channel).
__kernel void wino_output(uint n, uint C, uint D, uint OH, uint OW, uint TH, uint TW,
                          __global const float *M, uint moff, __global const float *bias,
                          uint boff, uint has_bias, uint relu, uint add, __global float *dst,
                          uint doff) {
    const uint tx = get_global_id(0), row = get_global_id(1), c = get_global_id(2);
    if (tx >= TW || row >= n * D * TH || c >= C) return;
    const uint ty = row % TH, plane = row / TH, b = plane / D, z = plane % D;
    const uint T = n * D * TH * TW, xs = C * T;
    __global const float *m = M + moff + c * T + row * TW + tx;
    float p[4][4], t[2][4];
#pragma unroll
    for (uint e = 0; e < 16; e++) p[e / 4][e % 4] = m[e * xs];
#pragma unroll
    for (uint x = 0; x < 4; x++) { // t = A^T p
        t[0][x] = p[0][x] + p[1][x] + p[2][x];
        t[1][x] = p[1][x] - p[2][x] - p[3][x];
    }
    const float bv = has_bias ? bias[boff + c] : 0.0f;
    __global float *out = dst + doff + ((b * C + c) * D + z) * OH * OW;
#pragma unroll
    for (uint y = 0; y < 2; y++) { // t A
        const uint oy = 2 * ty + y, ox = 2 * tx;
        if (oy >= OH) continue;
        float v0 = t[y][0] + t[y][1] + t[y][2] + bv, v1 = t[y][1] - t[y][2] - t[y][3] + bv;
        if (relu) v0 = fmax(v0, 0.0f), v1 = fmax(v1, 0.0f);
        clnet_store_dx(out + oy * OW + ox, v0, add);
        if (ox + 1 < OW) clnet_store_dx(out + oy * OW + ox + 1, v1, add);
    }
}
