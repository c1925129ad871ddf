// Register-tiled matrix multiply with a declared search space (src/gemm_tiled.c):
// C = alpha * A B + beta * C, float32, for any M, N, K >= 1.
//
// Each work-item computes tiles of MR rows x NR = NV * VW columns of C
// (LOCAL == 0: a column panel of NR, and mb row blocks of MR down it),
// holding MR x NV accumulators of type floatVW in registers: per step of k it
// loads NV vectors of B's row k and broadcasts MR scalars of A's column k
// (an outer product). The vector runs along C's rows, so B must be
// contiguous along n: transposes are handled by the host (packing, or
// computing C^T = B^T A^T, see src/gemm_tiled.c).
//
// Operands, as the kernel sees them:
//   A(m, k): PACK_A == 0: A[aoff + m * sam + k * sak], any strides (op(A)
//            for free). PACK_A == 1: packed by `pack` into row blocks of MR:
//            A[aoff + (m / MR) * K * MR + k * MR + m % MR], rows past M zero.
//   B(k, n): packed_b == 0: B[boff + k * ldb + n]. packed_b == 1: packed
//            into column panels of NR: B[boff + (n / NR) * K * NR + k * NR +
//            n % NR], columns past N zero (so no edge case in the inner loop).
//            packed_b is an argument, so that both layouts share one program
//            (measured: no slower than a build-time constant); LOCAL == 1
//            fixes it at build time instead (-DPACK_B, see there).
//   C(m, n): C[coff + m * csm + n * csn]; csn == 1 stores whole vectors, any
//            other value (a transposed C) stores scalars.
//
// Compile-time parameters (-D), with their allowed values:
//   MR      rows per tile: 1..16. On CPUs MR * NV accumulators plus NV
//           vectors of B should fit the register file (AVX-512: 32 zmm).
//   NV      vectors per tile row: 1..4.
//   VW      vector width in floats: 1, 2, 4, 8 or 16 (16 = one zmm).
//   KC      k-blocking, LOCAL == 0 only: 0 computes each tile over all of K
//           in one go; KC > 0 walks k in blocks of KC and, per block, every
//           row block of the work-item's rows, so the KC x NR slice of B stays
//           in L1 while A streams from L2 (GotoBLAS's loop order). C holds
//           the partial sums between blocks.
//   PACK_A  0 or 1: the layout of A above.
//   PACK_B  0 or 1: the layout of B above, LOCAL == 1 only.
//   LOCAL   0 or 1: 1 stages tiles of A (WGM*MR x KL) and B (KL x WGN*NR) in
//           local memory, loaded by the whole work-group (for GPUs). Needs the
//           work-group shape (WGN, WGM, 1) given at launch; the runtime row
//           block count must then be 1.
//   WGM,WGN the work-group shape for LOCAL == 1: 1..32 each, WGM*WGN <= 1024.
//   KL      k step of the local tiles (LOCAL == 1): 1..64.
//   KU      unroll factor of the k loop: 1..8 (copies made by the preprocessor
//           when LOCAL == 0, a pragma when LOCAL == 1).
//   FMA     1 (default): fma(), fused where the hardware has it; 0: mad().
//
// Runtime arguments: work-item (x, y) computes column panel x (columns
// x*NR ..) and row blocks y*mb .. y*mb + mb - 1 (rows of MR), mb >= 1.

#ifndef MR
#define MR 8
#endif
#ifndef NV
#define NV 2
#endif
#ifndef VW
#define VW 16
#endif
#ifndef KC
#define KC 0
#endif
#ifndef PACK_A
#define PACK_A 0
#endif
#ifndef PACK_B
#define PACK_B 0
#endif
#ifndef LOCAL
#define LOCAL 0
#endif
#ifndef WGM
#define WGM 8
#endif
#ifndef WGN
#define WGN 8
#endif
#ifndef KL
#define KL 16
#endif
#ifndef KU
#define KU 1
#endif

#define NR (NV * VW)
#define CAT_(a, b) a##b
#define CAT(a, b)  CAT_(a, b)
#if VW == 1
#define floatV     float
#define VLOAD(p)   (*(p))
#define VSTORE(v, p) (*(p) = (v))
#else
#define floatV       CAT(float, VW)
#define VLOAD(p)     CAT(vload, VW)(0, (p))
#define VSTORE(v, p) CAT(vstore, VW)((v), 0, (p))
#endif
#define STR_(x)    #x
#define STR(x)     STR_(x)
#define UNROLL(n)  _Pragma(STR(unroll n))

// FOR_R(X, a) expands to X(0, a) X(1, a) .. X(MR-1, a); FOR_V and FOR_K
// likewise up to NV and KU. Three families, so that they can nest.
#define R1(X, a)  X(0, a)
#define R2(X, a)  R1(X, a) X(1, a)
#define R3(X, a)  R2(X, a) X(2, a)
#define R4(X, a)  R3(X, a) X(3, a)
#define R5(X, a)  R4(X, a) X(4, a)
#define R6(X, a)  R5(X, a) X(5, a)
#define R7(X, a)  R6(X, a) X(6, a)
#define R8(X, a)  R7(X, a) X(7, a)
#define R9(X, a)  R8(X, a) X(8, a)
#define R10(X, a) R9(X, a) X(9, a)
#define R11(X, a) R10(X, a) X(10, a)
#define R12(X, a) R11(X, a) X(11, a)
#define R13(X, a) R12(X, a) X(12, a)
#define R14(X, a) R13(X, a) X(13, a)
#define R15(X, a) R14(X, a) X(14, a)
#define R16(X, a) R15(X, a) X(15, a)
#define V1(X, a)  X(0, a)
#define V2(X, a)  V1(X, a) X(1, a)
#define V3(X, a)  V2(X, a) X(2, a)
#define V4(X, a)  V3(X, a) X(3, a)
#define K1(X, a)  X(0, a)
#define K2(X, a)  K1(X, a) X(1, a)
#define K3(X, a)  K2(X, a) X(2, a)
#define K4(X, a)  K3(X, a) X(3, a)
#define K5(X, a)  K4(X, a) X(4, a)
#define K6(X, a)  K5(X, a) X(5, a)
#define K7(X, a)  K6(X, a) X(6, a)
#define K8(X, a)  K7(X, a) X(7, a)
#define FOR_R(X, a) CAT(R, MR)(X, a)
#define FOR_V(X, a) CAT(V, NV)(X, a)
#define FOR_K(X, a) CAT(K, KU)(X, a)

// fma() where the hardware fuses (PoCL turns mad() into a multiply and an
// add); FMA=0 forces mad() for devices that would emulate fma().
#ifndef FMA
#define FMA 1
#endif
#if FMA
#define MADD(a, b, c) fma((a), (b), (c))
#else
#define MADD(a, b, c) mad((a), (b), (c))
#endif

// Loads NR floats of B(k, n0 ..) into b[] when some columns lie past N
// (PACK_B == 0, the last panel only): those read as zero.
inline void load_b_edge(floatV b[NV], __global const float *row, uint ncols) {
    float t[NR];
    for (uint c = 0; c < NR; c++) t[c] = c < ncols ? row[c] : 0.0f;
    for (uint v = 0; v < NV; v++) b[v] = VLOAD(t + v * VW);
}

// Writes the MR x NR tile acc at (m0, n0) of C: first == 1 gives
// alpha * acc + beta * C (C not read when beta == 0: it may hold NaN),
// first == 0 adds alpha * acc to the partial sums C already holds.
inline void store_tile(floatV acc[MR][NV], __global float *C, uint coff, uint csm, uint csn,
                       uint M, uint N, uint m0, uint n0, float alpha, float beta, int first) {
    const uint rows = min((uint)MR, M - m0), ncols = min((uint)NR, N - n0);
    const float b = first ? beta : 1.0f;
    for (uint r = 0; r < MR; r++) {
        if (r >= rows) break;
        __global float *c = C + coff + (m0 + r) * csm + n0 * csn;
        if (csn == 1 && ncols == NR) {
            for (uint v = 0; v < NV; v++) {
                floatV x = alpha * acc[r][v];
                if (b != 0.0f) x = mad((floatV)(b), VLOAD(c + v * VW), x);
                VSTORE(x, c + v * VW);
            }
        } else {
            float t[NR];
            for (uint v = 0; v < NV; v++) VSTORE(alpha * acc[r][v], t + v * VW);
            for (uint i = 0; i < ncols; i++) {
                const float x = t[i];
                c[i * csn] = b != 0.0f ? mad(b, c[i * csn], x) : x;
            }
        }
    }
}

#if LOCAL == 0

// The tile's loops are unrolled by the preprocessor: PoCL's CPU compiler does
// not unroll them, and an accumulator array that is indexed in a loop lives
// on the stack instead of in registers. acc<r>_<v> is the accumulator of row
// r, vector v; b<v> holds B(k, n0 + v*VW ..); a<r> broadcasts A(m0 + r, k).
#define DECL_ACC(v, r) floatV acc##r##_##v = (floatV)(0.0f);
#define DECL_ACCS(r, _) FOR_V(DECL_ACC, r)
#define LOAD_B(v, row)  const floatV b##v = VLOAD((row) + (v) * VW);
#define FMA_ONE(v, r)   acc##r##_##v = MADD(a##r, b##v, acc##r##_##v);
#define FMA_ROW(r, i)                                                                             \
    {                                                                                              \
        const floatV a##r = (floatV)(A_AT(r, i));                                                  \
        FOR_V(FMA_ONE, r)                                                                          \
    }
// step i of an unrolled group: k = k + i, from the pointers ak and bk at k
#define STEP_AT(i, _)                                                                              \
    {                                                                                              \
        FOR_V(LOAD_B, bk + (i) * BSTEP)                                                            \
        FOR_R(FMA_ROW, i)                                                                          \
    }
#define STEP_EDGE(_)                                                                               \
    {                                                                                              \
        floatV bt[NV];                                                                             \
        load_b_edge(bt, bk, ncols);                                                                \
        FOR_V(LOAD_B_EDGE, _)                                                                      \
        FOR_R(FMA_ROW, 0)                                                                          \
    }
#define LOAD_B_EDGE(v, _) const floatV b##v = bt[v];
#define SAVE_ACC(v, r)    acc[r][v] = acc##r##_##v;
#define SAVE_ACCS(r, _)   FOR_V(SAVE_ACC, r)
#define DECL_AROW(r, _)   const uint arow##r = min(m0 + (r), M - 1) * sam;

__kernel void gemm_tiled(uint M, uint N, uint K, uint mb, float alpha, __global const float *A,
                         uint aoff, uint sam, uint sak, __global const float *B, uint boff,
                         uint ldb, uint packed_b, float beta, __global float *C, uint coff,
                         uint csm, uint csn) {
    const uint n0 = get_global_id(0) * NR;
    const uint ib0 = get_global_id(1) * mb;
    const uint nblocks = (M + MR - 1) / MR;
    if (n0 >= N || ib0 >= nblocks) return;
    const uint ib1 = min(nblocks, ib0 + mb);
    const uint ncols = min((uint)NR, N - n0);
    __global const float *bp = B + boff + (packed_b ? get_global_id(0) * K * NR : n0);
    const uint bstep = packed_b ? NR : ldb;
#define BSTEP bstep
#if PACK_A
#define ASTEP MR
#else
#define ASTEP sak
#endif
    // Pointers to A(m0, k) and B(k, n0) walk along k, so the inner loop's
    // loads are base + constant (or hoisted) offsets, without index arithmetic.
    const uint kc = KC > 0 ? KC : K;
    for (uint k0 = 0; k0 < K; k0 += kc) {
        const uint k1 = min(K, k0 + kc);
        for (uint ib = ib0; ib < ib1; ib++) {
            const uint m0 = ib * MR;
#if PACK_A
            __global const float *ak = A + aoff + ib * K * MR + k0 * MR;
#define A_AT(r, i) ak[(i) * MR + (r)]
#else
            // rows past M read row M-1 (valid memory) and are never stored
            FOR_R(DECL_AROW, _)
            __global const float *ak = A + aoff + k0 * sak;
#define A_AT(r, i) ak[(i) * sak + arow##r]
#endif
            __global const float *bk = bp + k0 * BSTEP;
            FOR_R(DECL_ACCS, _)
            uint k = k0;
            if (packed_b || ncols == NR) {
                for (; k + KU <= k1; k += KU) {
                    FOR_K(STEP_AT, _)
                    ak += KU * ASTEP;
                    bk += KU * BSTEP;
                }
                for (; k < k1; k++) {
                    STEP_AT(0, _)
                    ak += ASTEP;
                    bk += BSTEP;
                }
            } else { // the last, partial column panel of an unpacked B
                for (; k < k1; k++) {
                    STEP_EDGE(_)
                    ak += ASTEP;
                    bk += BSTEP;
                }
            }
            floatV acc[MR][NV];
            FOR_R(SAVE_ACCS, _)
            store_tile(acc, C, coff, csm, csn, M, N, m0, n0, alpha, beta, k0 == 0);
#undef A_AT
        }
    }
#undef BSTEP
#undef ASTEP
}

#else // LOCAL == 1: tiles of A and B staged in local memory by the work-group

#define TM (WGM * MR)
#define TN (WGN * NR)

// The work-group's cooperative load of a KL x T tile, k-major, of X(x, k)
// for x from x0 and k from k0 into local memory, out-of-range elements as
// zero. X is packed into blocks of P along x (see pack) or read through
// strides sx and sk; `packed` is a build-time constant (PACK_A, PACK_B), so
// the other branch compiles away: the kernel ignores its packed_b argument.
inline void stage_tile(__local float *t, uint T, uint x0, uint X, uint k0, uint K,
                       __global const float *src, uint sx, uint sk, uint P, int packed, uint lid) {
    for (uint i = lid; i < KL * T; i += WGM * WGN) {
        const uint k = k0 + i / T, x = x0 + i % T;
        float v = 0.0f;
        if (k < K && x < X)
            v = packed ? src[(x / P) * K * P + k * P + x % P] : src[x * sx + k * sk];
        t[i] = v;
    }
}
__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1))) void
gemm_tiled(uint M, uint N, uint K, uint mb, float alpha, __global const float *A, uint aoff,
           uint sam, uint sak, __global const float *B, uint boff, uint ldb, uint packed_b,
           float beta, __global float *C, uint coff, uint csm, uint csn) {
    __local float al[KL][TM]; // A(m, k) of the tile, k-major so a column is contiguous
    __local float bl[KL][TN];
    const uint lx = get_local_id(0), ly = get_local_id(1);
    const uint lid = ly * WGN + lx;
    const uint tm0 = get_group_id(1) * TM, tn0 = get_group_id(0) * TN;
    const uint m0 = tm0 + ly * MR, n0 = tn0 + lx * NR;
    floatV acc[MR][NV];
    for (uint r = 0; r < MR; r++)
        for (uint v = 0; v < NV; v++) acc[r][v] = (floatV)(0.0f);
    for (uint k0 = 0; k0 < K; k0 += KL) {
        stage_tile(&al[0][0], TM, tm0, M, k0, K, A + aoff, sam, sak, MR, PACK_A, lid);
        stage_tile(&bl[0][0], TN, tn0, N, k0, K, B + boff, 1, ldb, NR, PACK_B, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
        UNROLL(KU)
        for (uint k = 0; k < KL; k++) {
            floatV b[NV];
            for (uint v = 0; v < NV; v++) b[v] = VLOAD(&bl[k][lx * NR + v * VW]);
            for (uint r = 0; r < MR; r++) {
                const floatV a = (floatV)(al[k][ly * MR + r]);
                for (uint v = 0; v < NV; v++) acc[r][v] = MADD(a, b[v], acc[r][v]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (m0 < M && n0 < N) store_tile(acc, C, coff, csm, csn, M, N, m0, n0, alpha, beta, 1);
}

#endif

// Packs X(x, k) = X[off + x * sx + k * sk] (x < X) into blocks of P along x:
// out[ooff + (x / P) * K * P + k * P + x % P], x past X as zero. Work-item
// (b, k) writes the P floats of block b at k. Gives PACK_A's A (X = M,
// P = MR) and PACK_B's B (X = N, P = NR), from either orientation.
__kernel void pack(uint X, uint K, uint P, __global const float *src, uint off, uint sx, uint sk,
                   __global float *out, uint ooff) {
    const uint b = get_global_id(0), k = get_global_id(1);
    if (b * P >= X || k >= K) return;
    __global const float *s = src + off + k * sk;
    __global float *o = out + ooff + b * K * P + k * P;
    const uint x0 = b * P, n = min(P, X - x0);
    for (uint i = 0; i < n; i++) o[i] = s[(x0 + i) * sx];
    for (uint i = n; i < P; i++) o[i] = 0.0f;
}
