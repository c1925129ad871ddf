/* A register-tiled GEMM (cl/gemm_tiled.cl) with a declared search space, for
 * a tuner to pick per device:
 *
 *   clnet_gemm_tiled_params space[64];
 *   int n = clnet_gemm_tiled_space(d, space, 64);
 *   for (int i = 0; i < n; i++) time clnet_gemm_tiled(d, &space[i], ...);
 *   clnet_gemm_tiled_name(&best, id, sizeof id);    // "tiled-m8n32v16k0..."
 *   clnet_gemm_tiled_parse(id, &best);               // and back
 *
 * Same conventions as clnet_gemm: row-major, C = alpha op(A) op(B) + beta C
 * (beta == 0 never reads C), M x N result, K inner, offsets and leading
 * dimensions in elements. */
#ifndef CLNET_GEMM_TILED_H
#define CLNET_GEMM_TILED_H

#include "device.h"
#include "gemm_shape.h"

/* One point of the search space; the allowed values are documented with the
 * -D macros at the top of cl/gemm_tiled.cl. */
typedef struct {
    int mr;     /* MR: rows per register tile, 1..16 */
    int nr;     /* NR = NV * VW: columns per register tile, VW..4 VW */
    int vw;     /* VW: vector width, 1, 2, 4, 8 or 16 */
    int kc;     /* KC: k block (0: all of K at once); kl == 0 only */
    int mc;     /* rows of C per work-item, a multiple of mr (0: all of M);
                   a runtime value, no rebuild; kl == 0 only */
    int pack_a; /* PACK_A: pack A into row blocks first (0 or 1) */
    int pack_b; /* pack B into column panels first (0 or 1): the kernel's
                   packed_b argument, PACK_B with kl > 0; a B that is not
                   contiguous along n is packed whatever this says */
    int kl;     /* KL: k step of local-memory tiles, 1..64 (0: LOCAL == 0) */
    int wgm;    /* work-group shape: WGM rows x WGN columns of tiles */
    int wgn;
    int ku; /* KU: unroll of the k loop, 1..8 */
} clnet_gemm_tiled_params;

/* C = alpha * op(A) op(B) + beta * C with the kernel built from p (cached per
 * option string). Packed operands go to `work` (packed A, then packed B),
 * which holds clnet_gemm_tiled_work_floats(M, N, K) floats.
 * kept: the caller's handles of the kernels it runs (see clnet_run_kept):
 * NULLs at first, the same array for the same p and transposes after. */
clnet_status clnet_gemm_tiled(clnet_device *d, cl_kernel kept[3], const clnet_gemm_tiled_params *p,
                              const clnet_gemm_scratch *work, const clnet_gemm_shape *s,
                              const clnet_gemm_args *g);

/* The most scratch any point takes for an M x N x K product (floats). */
size_t clnet_gemm_tiled_work_floats(size_t M, size_t N, size_t K);
/* The scratch point p takes for it, with these transposes (floats): its
 * packed operands, whatever the leading dimensions. */
size_t clnet_gemm_tiled_scratch(const clnet_gemm_tiled_params *p, int ta, int tb, size_t M,
                                size_t N, size_t K);

/* The declared search space for device d: writes up to cap points to out and
 * returns how many there are (call with cap 0 to count). CPUs get few points
 * (each build costs about a second on PoCL), GPUs more. */
int clnet_gemm_tiled_space(const clnet_device *d, clnet_gemm_tiled_params *out, int cap);

/* 1 when id is a point of d's space, described in *out (a quick check: no
 * other point is parsed). */
int clnet_gemm_tiled_known(const clnet_device *d, const char *id, clnet_gemm_tiled_params *out);

/* A stable short id for p, "tiled-m8n32v16k0c0a0b0l0w1x1u1": m MR, n NR,
 * v VW, k KC, c mc, a PACK_A, b PACK_B, l KL, w WGM x WGN, u KU. */
void clnet_gemm_tiled_name(const clnet_gemm_tiled_params *p, char *out, size_t cap);

/* Parses an id made by clnet_gemm_tiled_name; CLNET_ERR_INVALID_ARGUMENT
 * when it is malformed or names values outside the allowed ranges. */
clnet_status clnet_gemm_tiled_parse(const char *id, clnet_gemm_tiled_params *out);

/* CLNET_OK when p lies in the allowed ranges (for device d, whose
 * work-group and local memory limits apply; d may be NULL). */
clnet_status clnet_gemm_tiled_check(const clnet_device *d, const clnet_gemm_tiled_params *p);

#endif
