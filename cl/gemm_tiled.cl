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
    UNROLL(NR)
    for (uint c = 0; c < NR; c++) t[c] = c < ncols ? row[c] : 0.0f;
    UNROLL(NV)
    for (uint v = 0; v < NV; v++) b[v] = VLOAD(t + v * VW);
}

// Writes the vector x of accumulators at columns n .. n + VW - 1 of a row of
// C (row[n * csn] is column n): alpha * x + beta * C, C not read when beta
// == 0 (it may hold NaN). Columns past N are left alone.
inline void store_vec(floatV x, __global float *row, uint n, uint N, uint csn, float alpha,
                      float beta) {
    x = alpha * x;
    if (csn == 1 && n + VW <= N) {
        if (beta != 0.0f) x = mad((floatV)(beta), VLOAD(row + n), x);
        VSTORE(x, row + n);
        return;
    }
    float t[VW];
    VSTORE(x, t);
    UNROLL(VW)
    for (uint i = 0; i < VW; i++)
        if (n + i < N) {
            __global float *c = row + (n + i) * csn;
            *c = beta != 0.0f ? mad(beta, *c, t[i]) : t[i];
        }
}

// Writes the accumulators acc<r>_<v> (as the micro-kernels below name
// them) of rows ROW(r) and columns COL(v) .. + VW - 1 of C(m, n) =
// C[coff + m * csm + n * csn], those of rows below M and columns below N:
// alpha * acc + beta * C. Macros, so that no array of accumulators is ever
// indexed (one that is lives in memory, on the stack of a GPU too).
#define STORE_VEC(v, r) store_vec(acc##r##_##v, crow, COL(v), st_N, st_csn, st_alpha, st_beta);
#define STORE_ROW(r, _)                                                                            \
    if (ROW(r) < st_M) {                                                                           \
        __global float *crow = st_C + ROW(r) * st_csm;                                             \
        FOR_V(STORE_VEC, r)                                                                        \
    }
#define STORE_TILE(C_, coff_, csm_, csn_, M_, N_, alpha_, beta_)                                   \
    {                                                                                              \
        __global float *st_C = (C_) + (coff_);                                                     \
        const uint st_csm = (csm_), st_csn = (csn_), st_M = (M_), st_N = (N_);                     \
        const float st_alpha = (alpha_), st_beta = (beta_);                                        \
        FOR_R(STORE_ROW, _)                                                                        \
    }

// The register micro-kernel's names: acc<r>_<v> is the accumulator of row r,
// vector v; b<v> a vector of B's row; a<r> a broadcast scalar of A's column.
#define DECL_ACC(v, r) floatV acc##r##_##v = (floatV)(0.0f);
#define DECL_ACCS(r, _) FOR_V(DECL_ACC, r)
#define LOAD_B(v, row)  const floatV b##v = VLOAD((row) + (v) * VW);
#define FMA_ONE(v, r)   acc##r##_##v = MADD(a##r, b##v, acc##r##_##v);

#if LOCAL == 0

// The tile's loops are unrolled by the preprocessor: PoCL's CPU compiler does
// not unroll them, and an accumulator array that is indexed in a loop lives
// on the stack instead of in registers. acc<r>_<v> is the accumulator of row
// r, vector v; b<v> holds B(k, n0 + v*VW ..); a<r> broadcasts A(m0 + r, k).
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
#define ROW(r) (m0 + (r))
#define COL(v) (n0 + (v) * VW)
            STORE_TILE(C, coff, csm, csn, M, N, alpha, k0 == 0 ? beta : 1.0f)
#undef ROW
#undef COL
#undef A_AT
        }
    }
#undef BSTEP
#undef ASTEP
}

#else // LOCAL == 1: tiles of A and B staged in local memory by the work-group

// The work-group, WGN x WGM work-items, computes a TM x TN tile of C over
// tiles of KL steps of k staged in local memory, two of each: while one is
// multiplied, the next comes from global memory into registers, and goes to
// local memory after it (one barrier a tile). Work-item (lx, ly) holds MR x
// NV accumulators: rows ROW(r) = m0 + r * WGM + ly, vectors of VW columns
// from COL(v) = n0 + (v * WGN + lx) * VW (m0, n0: the work-group's tile), so
// neighbouring work-items read neighbouring vectors of the B tile (no bank
// conflict), the same scalars of the A tile (a broadcast), and store
// neighbouring vectors of C. The A tile holds floats, the B tile vectors of
// VW columns, each written and read as what it is (a tile written as floats
// and read as vectors let Oclgrind's compiler move the reads across the
// barrier: the two types may not alias, it assumed). The kernels that use it
// (this one, the implicit convolution's) say how their operands are read:
// VALUE_A(k, m), a float, and VALUE_BV(k, n), the vector of B(k, n .. n + VW
// - 1), each zero outside its matrix.
#define TM  (WGM * MR)
#define TN  (WGN * NR)
#define TNV (WGN * NV) /* the B tile's columns in vectors */
#define WG  (WGM * WGN)
#define SA  ((KL * TM + WG - 1) / WG) /* the A tile's floats a work-item stages */
#define SB  ((KL * TNV + WG - 1) / WG) /* and the B tile's vectors */
#define ALD (TM + 1)   /* the A tile's rows in floats, padded: no bank conflict staged along k */
#define BLD (TNV + 1)  /* the B tile's rows in vectors, padded likewise */
#if VW != 1 && VW != 2 && VW != 4
#error "local tiles take vectors of 1, 2 or 4 floats"
#endif

// The vector of VALUE(k, n + l) for each lane l: a B operand read float by
// float (along k, or at a matrix's edge).
#if VW == 1
#define LANES(VALUE, k, n) VALUE(k, n)
#elif VW == 2
#define LANES(VALUE, k, n) (floatV)(VALUE(k, n), VALUE(k, (n) + 1))
#else
#define LANES(VALUE, k, n)                                                                        \
    (floatV)(VALUE(k, n), VALUE(k, (n) + 1), VALUE(k, (n) + 2), VALUE(k, (n) + 3))
#endif

// Element e of work-item lid's share of a KL x T tile is the tile's i = lid
// + e * WG, at (kk, x) = (i % KL, i / KL) with kfast (neighbouring work-items
// read along k: an operand contiguous along k), else (i / T, i % T).
#define STAGE_I(e)           (lid + (e) * WG)
#define STAGE_K(i, T, kfast) ((kfast) ? (i) % KL : (i) / (T))
#define STAGE_X(i, T, kfast) ((kfast) ? (i) / KL : (i) % (T))
#define STAGE_IN(i, T)       ((KL * (T)) % WG == 0 || (i) < KL * (T))
// The share of the tile at k0, element x0 (A: rows; B: vectors) into r[S] ...
#define STAGE_LOAD(r, S, T, kfast, k0, x0, VALUE, ZERO)                                           \
    UNROLL(S)                                                                                      \
    for (uint e = 0; e < S; e++) {                                                                 \
        const uint i = STAGE_I(e);                                                                 \
        r[e] = STAGE_IN(i, T) ? VALUE((k0) + STAGE_K(i, T, kfast), (x0) + STAGE_X(i, T, kfast))  \
                              : (ZERO);                                                            \
    }
// ... and from them into the local tile t (rows of ld elements, k-major).
// No unroll pragma here: Oclgrind 21.10 (LLVM 14) ran the unrolled stores at
// wrong addresses (past the tile); the compilers unroll it all the same.
#define STAGE_STORE(t, ld, r, S, T, kfast)                                                        \
                                                                                                   \
    for (uint e = 0; e < S; e++) {                                                                 \
        const uint i = STAGE_I(e);                                                                 \
        if (STAGE_IN(i, T)) (t)[STAGE_K(i, T, kfast) * (ld) + STAGE_X(i, T, kfast)] = r[e];       \
    }
// B's vector xv of the tile's columns: B(k, xv * VW ..)
#define VALUE_BVEC(k, xv) VALUE_BV(k, (xv) * VW)
// One step kk of a tile: NV vectors of B's row, MR scalars of A's column.
#define LLOAD_B(v, kk)  const floatV b##v = blt[(kk) * BLD + (v) * WGN + lx];
#define LFMA_ROW(r, kk)                                                                           \
    {                                                                                              \
        const floatV a##r = (floatV)(alt[(kk) * ALD + (r) * WGM + ly]);                            \
        FOR_V(FMA_ONE, r)                                                                          \
    }
// acc<r>_<v> = the sum over k < K of A(ROW(r), k) B(k, COL(v) ..), for the
// tile at (m0, n0): kfast_a, kfast_b say how each operand is staged. The
// kernel declares lx, ly, lid, and the accumulators (DECL_ACCS).
#define LOCAL_PRODUCT(K_, m0, n0, kfast_a, kfast_b)                                               \
    {                                                                                              \
        const uint tiles = ((K_) + KL - 1) / KL, v0 = (n0) / VW;                                   \
        float ra[SA];                                                                              \
        floatV rb[SB];                                                                             \
        STAGE_LOAD(ra, SA, TM, kfast_a, 0, m0, VALUE_A, 0.0f)                                      \
        STAGE_LOAD(rb, SB, TNV, kfast_b, 0, v0, VALUE_BVEC, (floatV)(0.0f))                        \
        STAGE_STORE(al_tiles, ALD, ra, SA, TM, kfast_a)                                            \
        STAGE_STORE(bl_tiles, BLD, rb, SB, TNV, kfast_b)                                           \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (uint t = 0; t < tiles; t++) {                                                         \
            const uint cur = t & 1, next = (t + 1) * KL;                                           \
            if (t + 1 < tiles) {                                                                   \
                STAGE_LOAD(ra, SA, TM, kfast_a, next, m0, VALUE_A, 0.0f)                           \
                STAGE_LOAD(rb, SB, TNV, kfast_b, next, v0, VALUE_BVEC, (floatV)(0.0f))             \
            }                                                                                      \
            __local const float *alt = al_tiles + cur * KL * ALD;                                  \
            __local const floatV *blt = bl_tiles + cur * KL * BLD;                                 \
            UNROLL(KU)                                                                             \
            for (uint kk = 0; kk < KL; kk++) {                                                     \
                FOR_V(LLOAD_B, kk)                                                                 \
                FOR_R(LFMA_ROW, kk)                                                                \
            }                                                                                      \
            if (t + 1 < tiles) {                                                                   \
                STAGE_STORE(al_tiles + (cur ^ 1) * KL * ALD, ALD, ra, SA, TM, kfast_a)             \
                STAGE_STORE(bl_tiles + (cur ^ 1) * KL * BLD, BLD, rb, SB, TNV, kfast_b)            \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
    }
// The two tiles of each operand, and `extra` vectors after them for the
// kernel's own use, in one array at the kernel's scope (as OpenCL wants),
// the A tiles as floats at its start.
#define AVEC (((2 * KL * ALD) + VW - 1) / VW) /* the A tiles, in vectors */
#define LOCAL_TILES(extra)                                                                         \
    __local floatV local_tiles[AVEC + 2 * KL * BLD + (extra)];                                     \
    __local float *const al_tiles = (__local float *)local_tiles;                                  \
    __local floatV *const bl_tiles = local_tiles + AVEC;
#define LOCAL_IDS                                                                                  \
    const uint lx = get_local_id(0), ly = get_local_id(1), lid = ly * WGN + lx;

// A(m, k) and B(k, n) as the host gives them (see the top of this file); the
// A tile is staged along k when A is contiguous along k and not packed.
__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1))) void
gemm_tiled(uint M, uint N, uint K, uint mb, float alpha, __global const float *A, uint aoff,
           uint sam, uint sak, __global const float *B, uint boff, uint ldb, uint packed_b,
           float beta, __global float *C, uint coff, uint csm, uint csn) {
    LOCAL_TILES(0)
    LOCAL_IDS
    const uint m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN;
    __global const float *a = A + aoff, *b = B + boff;
#if PACK_A
#define VALUE_A(k, m) ((k) < K && (m) < M ? a[(m) / MR * K * MR + (k) * MR + (m) % MR] : 0.0f)
#else
#define VALUE_A(k, m) ((k) < K && (m) < M ? a[(m) * sam + (k) * sak] : 0.0f)
#endif
#if PACK_B
#define B_AT(k, n) (b + (n) / NR * K * NR + (k) * NR + (n) % NR)
#else
#define B_AT(k, n) (b + (k) * ldb + (n))
#endif
#define VALUE_B(k, n)  ((k) < K && (n) < N ? *B_AT(k, n) : 0.0f)
#define VALUE_BV(k, n) ((k) < K && (n) + VW <= N ? VLOAD(B_AT(k, n)) : LANES(VALUE_B, k, n))
    FOR_R(DECL_ACCS, _)
    LOCAL_PRODUCT(K, m0, n0, !PACK_A && sak == 1, 0)
#define ROW(r) (m0 + (r) * WGM + ly)
#define COL(v) (n0 + ((v) * WGN + lx) * VW)
    STORE_TILE(C, coff, csm, csn, M, N, alpha, beta)
#undef ROW
#undef COL
#undef VALUE_A
#undef VALUE_B
#undef VALUE_BV
#undef B_AT
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
