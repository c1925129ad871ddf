/* The register-tiled GEMM's launcher and search space (cl/gemm_tiled.cl). */
#include "gemm_tiled.h"
#include "error.h"
#include "memory.h"
#include "program.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define FAMILY "gemm_tiled"
/* The largest register tile any point may have (clnet_gemm_tiled_check):
 * packing rounds rows of A up to MR and columns of B up to NR. */
#define MR_MOST 16
#define NR_MOST 64

static int fits_u32(size_t v) {
    return v <= UINT_MAX;
}

static int is_pow2_upto(int v, int max) {
    return v >= 1 && v <= max && (v & (v - 1)) == 0;
}

/* The register tile and the blocking within their ranges (gemm_tiled.h). */
static int tile_in_range(const clnet_gemm_tiled_params *p) {
    int nv = p->vw > 0 ? p->nr / p->vw : 0;
    return p->mr >= 1 && p->mr <= 16 && is_pow2_upto(p->vw, 16) && nv >= 1 && nv <= 4 &&
           nv * p->vw == p->nr && p->kc >= 0 && p->kc <= 65536 && p->mc >= 0 &&
           p->mc % p->mr == 0 && (p->pack_a & ~1) == 0 && (p->pack_b & ~1) == 0;
}

/* The local-memory tiles, the work-group and the unroll within theirs. */
static int group_in_range(const clnet_gemm_tiled_params *p) {
    return p->kl >= 0 && p->kl <= 64 && p->wgm >= 1 && p->wgm <= 32 && p->wgn >= 1 &&
           p->wgn <= 32 && p->wgm * p->wgn <= 1024 && p->ku >= 1 && p->ku <= 8 &&
           (p->kl == 0 || (p->kc == 0 && p->mc == 0));
}

clnet_status clnet_gemm_tiled_check(const clnet_device *d, const clnet_gemm_tiled_params *p) {
    char id[96];
    clnet_gemm_tiled_name(p, id, sizeof id);
    if (!tile_in_range(p) || !group_in_range(p))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "gemm_tiled: %s is out of range", id);
    if (d) {
        size_t local_bytes = (size_t)p->kl * ((size_t)p->wgm * p->mr + (size_t)p->wgn * p->nr) * 4;
        if ((size_t)(p->wgm * p->wgn) > d->info.max_work_group_size ||
            local_bytes > d->info.local_mem_bytes)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                              "gemm_tiled: %s needs a work-group of %d or %zu bytes of local "
                              "memory; device %d allows %zu and %llu",
                              id, p->wgm * p->wgn, local_bytes, d->info.index,
                              d->info.max_work_group_size,
                              (unsigned long long)d->info.local_mem_bytes);
    }
    return CLNET_OK;
}

void clnet_gemm_tiled_name(const clnet_gemm_tiled_params *p, char *out, size_t cap) {
    snprintf(out, cap, "tiled-m%dn%dv%dk%dc%da%db%dl%dw%dx%du%d", p->mr, p->nr, p->vw, p->kc, p->mc,
             p->pack_a, p->pack_b, p->kl, p->wgm, p->wgn, p->ku);
}

clnet_status clnet_gemm_tiled_parse(const char *id, clnet_gemm_tiled_params *out) {
    clnet_gemm_tiled_params p;
    int end = 0;
    if (sscanf(id, "tiled-m%dn%dv%dk%dc%da%db%dl%dw%dx%du%d%n", &p.mr, &p.nr, &p.vw, &p.kc, &p.mc,
               &p.pack_a, &p.pack_b, &p.kl, &p.wgm, &p.wgn, &p.ku, &end) != 11 ||
        id[end] != '\0')
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "gemm_tiled: '%s' is not an id like tiled m8n32v16k0c0a0b0l0w1x1u1", id);
    char back[96];
    clnet_gemm_tiled_name(&p, back, sizeof back);
    if (strcmp(back, id) != 0) /* leading zeros, signs: not what name writes */
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "gemm_tiled: '%s' is not canonical", id);
    clnet_status s = clnet_gemm_tiled_check(NULL, &p);
    if (s == CLNET_OK) *out = p;
    return s;
}

/* The -D options of p's program; pack_b is the one actually used (a B that is
 * not contiguous along n forces it), fixed at build time only with local
 * tiles (LOCAL == 1): otherwise the kernel takes it as an argument, and both
 * layouts share one program. Macros a variant does not read are left out, so
 * equal programs share one cache entry. */
static void options(const clnet_gemm_tiled_params *p, int pack_b, char *out, size_t cap) {
    int n = snprintf(out, cap, "-DMR=%d -DNV=%d -DVW=%d -DPACK_A=%d -DKU=%d", p->mr, p->nr / p->vw,
                     p->vw, p->pack_a, p->ku);
    if (p->kl)
        snprintf(out + n, cap - (size_t)n, " -DPACK_B=%d -DLOCAL=1 -DKL=%d -DWGM=%d -DWGN=%d",
                 pack_b, p->kl, p->wgm, p->wgn);
    else
        snprintf(out + n, cap - (size_t)n, " -DKC=%d", p->kc);
}

static size_t aligned(size_t floats) {
    return (floats + 15) / 16 * 16;
}

size_t clnet_gemm_tiled_work_floats(size_t M, size_t N, size_t K) {
    /* packed A, aligned, then packed B: M + N rows of k rounded up to tiles,
     * whichever way round the product runs (C or C^T) */
    return (M + N + MR_MOST - 1 + NR_MOST - 1) * K + 16;
}

/* The kernel wants B contiguous along n. When it is not, C^T = op(B)^T
 * op(A)^T may be: with op(A) = A^T it is free (B's new role is A, read
 * through strides, and A's rows are contiguous), otherwise packing the
 * smaller of the two costs least. C^T is then stored with strides. */
static int runs_as_ct(int ta, int tb, size_t M, size_t N) {
    return tb && (ta || M < N);
}

size_t clnet_gemm_tiled_scratch(const clnet_gemm_tiled_params *p, int ta, int tb, size_t M,
                                size_t N, size_t K) {
    int ct = runs_as_ct(ta, tb, M, N);
    size_t rows = ct ? N : M, cols = ct ? M : N, mr = (size_t)p->mr, nr = (size_t)p->nr;
    /* B's stride along n is then a leading dimension (1 only when k is) */
    int pack_b = p->pack_b || (tb && !ta);
    size_t a = p->pack_a ? aligned((rows + mr - 1) / mr * mr * K) : 0;
    return a + (pack_b ? (cols + nr - 1) / nr * nr * K : 0);
}

/* An operand as the kernels read it: X(x, k) = mem[off + x * sx + k * sk]. */
typedef struct {
    cl_mem mem;
    size_t off, sx, sk;
} strided;

/* Packs X (x < rows, k < K) into blocks of P along x (zero-padded) at the
 * start of `to`: the layout PACK_A and packed_b read. */
static clnet_status pack(clnet_device *d, cl_kernel *kept, const char *opts, strided x, size_t rows,
                         size_t K, size_t P, clnet_gemm_scratch to) {
    size_t blocks = (rows + P - 1) / P;
    if (!fits_u32(to.off + blocks * P * K))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "gemm_tiled: packed operand beyond 2^32");
    if (blocks * P * K > to.floats)
        return clnet_fail(CLNET_ERR_GUARD, "gemm_tiled: %zu floats of scratch are too few",
                          to.floats);
    /* a fixed work-group shape: PoCL compiles a kernel again for every new
     * local size, and one chosen by the driver would follow the shape */
    return clnet_run_kept(d, kept, KERNEL(FAMILY, opts, "pack"), 2, (size_t[]){blocks, K},
                          (size_t[]){1, 32},
                          ARGS(U32(rows), U32(K), U32(P), MEM(x.mem), U32(x.off), U32(x.sx),
                               U32(x.sk), MEM(to.mem), U32(to.off)));
}

/* The scratch from `at` floats on. */
static clnet_gemm_scratch scratch_from(const clnet_gemm_scratch *work, size_t at) {
    return (clnet_gemm_scratch){work->mem, work->off + at,
                                work->floats > at ? work->floats - at : 0};
}

clnet_status clnet_gemm_tiled(clnet_device *d, cl_kernel kept[3], const clnet_gemm_tiled_params *p,
                              const clnet_gemm_scratch *work, const clnet_gemm_shape *s,
                              const clnet_gemm_args *g) {
    clnet_status status = CLNET_OK;
    int ta = s->ta, tb = s->tb;
    size_t M = s->M, N = s->N, K = s->K;
    TRY(clnet_gemm_tiled_check(d, p));
    if (M == 0 || N == 0) return CLNET_OK;
    if (K == 0) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "gemm_tiled with K = 0");
    size_t a_end = g->a.off + (ta ? K : M) * g->a.ld, b_end = g->b.off + (tb ? N : K) * g->b.ld,
           c_end = g->c.off + M * g->c.ld;
    if (!fits_u32(a_end) || !fits_u32(b_end) || !fits_u32(c_end))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "gemm_tiled %zu x %zu x %zu: matrices beyond 2^32 elements", M, N, K);

    /* op(A)(m, k), op(B)(n, k) as strided operands; C(m, n) = c[m * csm + n * csn]. */
    strided a = {g->a.mem, g->a.off, ta ? 1 : g->a.ld, ta ? g->a.ld : 1};
    strided b = {g->b.mem, g->b.off, tb ? g->b.ld : 1, tb ? 1 : g->b.ld};
    size_t csm = g->c.ld, csn = 1;
    if (runs_as_ct(ta, tb, M, N)) { /* C^T = op(B)^T op(A)^T, stored with strides */
        strided t = a;
        a = b, b = t;
        size_t m = M;
        M = N, N = m;
        csm = 1, csn = g->c.ld;
    }
    int pack_b = p->pack_b || b.sx != 1;
    char opts[160];
    options(p, pack_b, opts, sizeof opts);
    size_t mr = (size_t)p->mr, nr = (size_t)p->nr;
    size_t b_at = 0; /* packed B's place in the scratch, after packed A */
    if (p->pack_a) {
        TRY(pack(d, &kept[0], opts, a, M, K, mr, scratch_from(work, 0)));
        a = (strided){work->mem, work->off, 0, 0};
        b_at = aligned((M + mr - 1) / mr * mr * K);
    }
    if (pack_b) {
        TRY(pack(d, &kept[1], opts, b, N, K, nr, scratch_from(work, b_at)));
        b = (strided){work->mem, work->off + b_at, b.sx, 0};
    }

    size_t mblocks = (M + mr - 1) / mr, panels = (N + nr - 1) / nr;
    size_t mb = 1, global[2], local[2] = {(size_t)p->wgn, (size_t)p->wgm};
    if (p->kl) {
        global[0] = (panels + local[0] - 1) / local[0] * local[0];
        global[1] = (mblocks + local[1] - 1) / local[1] * local[1];
    } else {
        mb = p->mc ? (size_t)p->mc / mr : mblocks;
        if (mb > mblocks) mb = mblocks;
        global[0] = panels;
        global[1] = (mblocks + mb - 1) / mb;
    }
    TRY(clnet_run_kept(d, &kept[2], KERNEL(FAMILY, opts, "gemm_tiled"), 2, global, local,
                       ARGS(U32(M), U32(N), U32(K), U32(mb), F32(g->alpha), MEM(a.mem), U32(a.off),
                            U32(a.sx), U32(a.sk), MEM(b.mem), U32(b.off), U32(b.sk), U32(pack_b),
                            F32(g->beta), MEM(g->c.mem), U32(g->c.off), U32(csm), U32(csn))));
cleanup:
    return status;
}

/* The declared spaces, as ids (one line each, easy to read and extend).
 *
 * CPUs (PoCL): one work-item per work-group; register tiles of float16s
 * sized for AVX-512's 32 zmm registers (MR x NV accumulators + NV vectors of
 * B <= 31): 6 x 4, 5 x 4, 7 x 4, 8 x 3, 8 x 2, 10 x 2, 12 x 2. Mostly
 * k-blocked by 256 (a 256 x NR slice of B is 32-64 KiB, about L1; 128 for
 * short products), A packed or read in place (packing is cheap: A is the
 * small operand of the convolution shapes), both packed once (worth it when
 * both are reused), all rows or 64-96 rows per work-item (more work-items,
 * C written in bands), the k loop unrolled by 2 once. On a 2-core AVX-512
 * VM, 6 x 4 k256 led the large shapes, 8 x 2 the linear layers, 10 x 2 the
 * convolution's weight gradient (a 50-column C^T). */
static const char *const SPACE_CPU[] = {
    "tiled-m6n64v16k256c0a0b0l0w1x1u1",  "tiled-m6n64v16k256c0a0b0l0w1x1u2",
    "tiled-m6n64v16k256c0a1b0l0w1x1u1",  "tiled-m6n64v16k256c96a0b0l0w1x1u1",
    "tiled-m6n64v16k128c0a0b0l0w1x1u1",  "tiled-m5n64v16k256c0a0b0l0w1x1u1",
    "tiled-m7n64v16k256c0a0b0l0w1x1u1",  "tiled-m8n48v16k256c0a0b0l0w1x1u1",
    "tiled-m8n48v16k256c0a1b0l0w1x1u1",  "tiled-m8n32v16k0c0a0b0l0w1x1u1",
    "tiled-m8n32v16k256c0a0b0l0w1x1u1",  "tiled-m8n32v16k256c64a0b0l0w1x1u1",
    "tiled-m10n32v16k0c0a0b0l0w1x1u1",   "tiled-m10n32v16k256c0a0b0l0w1x1u1",
    "tiled-m12n32v16k256c0a1b1l0w1x1u2",
};

/* 8-wide CPUs (AVX2): the same ideas for 16 ymm registers (MR x NV
 * accumulators + NV vectors of B <= 15): 6 x 2, 4 x 3, 5 x 2, 3 x 4, 10 x 1,
 * 12 x 1, 7 x 1. */
static const char *const SPACE_CPU8[] = {
    "tiled-m6n16v8k256c0a0b0l0w1x1u1",  "tiled-m6n16v8k256c0a0b0l0w1x1u2",
    "tiled-m6n16v8k256c0a1b0l0w1x1u1",  "tiled-m6n16v8k128c0a0b0l0w1x1u1",
    "tiled-m6n16v8k256c96a0b0l0w1x1u1", "tiled-m4n24v8k256c0a0b0l0w1x1u1",
    "tiled-m5n16v8k256c0a0b0l0w1x1u1",  "tiled-m3n32v8k256c0a0b0l0w1x1u1",
    "tiled-m10n8v8k0c0a0b0l0w1x1u1",    "tiled-m10n8v8k256c0a0b0l0w1x1u1",
    "tiled-m12n8v8k256c0a1b1l0w1x1u2",  "tiled-m7n8v8k0c0a0b0l0w1x1u1",
};

/* GPUs: work-groups of 64-256 work-items, tiles of A and B staged in local
 * memory (KL = 8 or 16 steps of k), register tiles of 2-8 rows x 4-8
 * columns as float4s, float2s or scalars, A packed or read in place; and two
 * points without local memory (each work-item reads global memory through
 * the caches), for drivers where local memory does not pay. The 8 x 8 tiles
 * take k in steps of 8: with 16, their staged elements and 64 accumulators
 * spill on RDNA3 (gfx1100: 128 VGPRs; scripts/gpu_offline.py). */
static const char *const SPACE_GPU[] = {
    "tiled-m4n4v4k0c0a0b0l16w16x16u1", "tiled-m4n4v4k0c0a1b0l16w16x16u1",
    "tiled-m8n4v4k0c0a1b0l16w16x16u1", "tiled-m4n8v4k0c0a1b0l16w16x16u1",
    "tiled-m8n8v4k0c0a0b0l8w16x16u1",  "tiled-m8n8v4k0c0a1b0l8w16x16u1",
    "tiled-m8n8v4k0c0a1b1l8w16x16u1",  "tiled-m4n8v4k0c0a1b0l16w8x16u1",
    "tiled-m4n4v1k0c0a1b0l16w16x16u1", "tiled-m8n8v2k0c0a1b0l8w16x16u1",
    "tiled-m2n4v4k0c0a1b0l16w16x16u1", "tiled-m4n8v4k0c0a1b0l8w8x8u1",
    "tiled-m4n4v4k0c0a0b0l0w16x16u1",  "tiled-m8n8v4k0c0a1b1l0w16x16u1",
};

/* The ids of d's space (those too big for d among them); returns how many. */
static int space_ids(const clnet_device *d, const char *const **ids) {
    int cpu = d->info.type == CLNET_DEVICE_CPU;
    if (cpu && !d->vector_cpu) return 0; /* neither layout suits it (device.h) */
    if (cpu && d->vector_cpu == 8) {
        *ids = SPACE_CPU8;
        return (int)(sizeof SPACE_CPU8 / sizeof *SPACE_CPU8);
    }
    *ids = cpu ? SPACE_CPU : SPACE_GPU;
    return cpu ? (int)(sizeof SPACE_CPU / sizeof *SPACE_CPU)
               : (int)(sizeof SPACE_GPU / sizeof *SPACE_GPU);
}

int clnet_gemm_tiled_known(const clnet_device *d, const char *id, clnet_gemm_tiled_params *out) {
    const char *const *ids = NULL;
    int n = space_ids(d, &ids);
    for (int i = 0; i < n; i++) /* ids are canonical: one spelling per point */
        if (strcmp(ids[i], id) == 0)
            return clnet_gemm_tiled_parse(id, out) == CLNET_OK &&
                   clnet_gemm_tiled_check(d, out) == CLNET_OK;
    return 0;
}

int clnet_gemm_tiled_space(const clnet_device *d, clnet_gemm_tiled_params *out, int cap) {
    const char *const *ids = NULL;
    int n = space_ids(d, &ids), count = 0;
    for (int i = 0; i < n; i++) {
        clnet_gemm_tiled_params p;
        if (clnet_gemm_tiled_parse(ids[i], &p) != CLNET_OK) continue; /* a typo above */
        if (clnet_gemm_tiled_check(d, &p) != CLNET_OK) continue;      /* too big here */
        if (count < cap) out[count] = p;
        count++;
    }
    return count;
}
