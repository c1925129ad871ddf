/* GEMM: the candidates (clnet's own kernel with its parameters, CLBlast)
 * and the choice between them (see gemm.h). */
#include "gemm.h"
#include "gemm_tiled.h"
#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "memory.h"
#include "program.h"
#include "sources.h"

#include <clblast_c.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FAMILY "gemm"
#define NT_M   2 /* gemm_nt tile: NT_M x NT_N, as in cl/gemm.cl */
#define NT_N   2
/* Split-K: a product this long and this narrow is cut into chunks of k,
 * computed side by side and added in a fixed order. */
#define SPLIT_K_MIN         4096
#define SPLIT_K_CHUNK       2048
#define SPLIT_K_MAX_CHUNKS  16
#define SPLIT_K_MAX_OUTPUTS 65536
#define SPLIT_K_SMALL_C     4096 /* the CPU rule's "small C" (fixed_rule) */
/* On GPUs a product is cut finer, into enough work-items to fill the device
 * (LeNet's first weight gradient, 20 x 9 from k = 173,056, into 256 chunks
 * of 676), at most GPU_SPLIT_K_PARTIALS floats of partial products. */
#define GPU_SPLIT_K_CHUNK    256
#define GPU_SPLIT_K_CHUNKS   256
#define GPU_SPLIT_K_PARTIALS (1u << 22)
/* The GPU rule's "small C": on an H100 the split kernel ran the weight
 * gradients of 32 x 144 (k = 12,544) and 64 x 288 (k = 6,272) 3.2x and 1.5x
 * faster than CLBlast, which won at 64 x 576 (k = 3,136) */
#define GPU_SPLIT_K_SMALL_C 20000

static int fits_u32(size_t v) {
    return v <= UINT_MAX;
}

/* to (cols, rows) = from (rows, cols)^T */
static clnet_status transpose_kept(clnet_device *d, cl_kernel *kept, size_t rows, size_t cols,
                                   clnet_matrix from, clnet_matrix to) {
    if (rows == 0 || cols == 0) return CLNET_OK;
    return clnet_run_kept(d, kept, KERNEL(FAMILY, "", "transpose"), 2, (size_t[]){cols, rows},
                          (size_t[]){16, 16},
                          ARGS(U32(rows), U32(cols), MEM(from.mem), U32(from.off), U32(from.ld),
                               MEM(to.mem), U32(to.off), U32(to.ld)));
}

static clnet_status gemm_clblast(clnet_device *d, const clnet_gemm_shape *s,
                                 const clnet_gemm_args *g) {
    CLBlastStatusCode st =
        CLBlastSgemm(CLBlastLayoutRowMajor, s->ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                     s->tb ? CLBlastTransposeYes : CLBlastTransposeNo, s->M, s->N, s->K, g->alpha,
                     g->a.mem, g->a.off, g->a.ld, g->b.mem, g->b.off, g->b.ld, g->beta, g->c.mem,
                     g->c.off, g->c.ld, &d->queue, NULL);
    if (st != CLBlastSuccess)
        return clnet_fail(CLNET_ERR_OPENCL, "CLBlastSgemm(%zu x %zu x %zu) failed with status %d",
                          s->M, s->N, s->K, (int)st);
    return CLNET_OK;
}

/* The work-group shape with wg=1: one work-group covers every row block of a
 * column block, so the B strip it reads stays in cache (good on CPUs); with
 * wg=0 the driver chooses. */
static void local_size(clnet_device *d, cl_kernel k, size_t mblocks, size_t local[3]) {
    size_t limit = d->info.max_work_group_size;
    size_t kernel_limit = 0;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_limit,
                                 &kernel_limit, NULL) == CL_SUCCESS &&
        kernel_limit < limit)
        limit = kernel_limit;
    /* a power of two up to 16 row blocks: the size must not follow M when M
     * is the batch (see clnet_run), and few sizes means few compilations */
    size_t rows = 1;
    while (rows * 2 <= mblocks && rows * 2 <= 16 && rows * 2 <= limit) rows *= 2;
    local[0] = 1;
    local[1] = rows;
    local[2] = 1;
}

/* Candidate ids: "clblast"; "own-tm<T>-wg<0|1>" for cl/gemm.cl with
 * GEMM_TM = T rows per work-item and the work-group layout above; and
 * "tiled-..." for the points of cl/gemm_tiled.cl's space (gemm_tiled.h). */
typedef struct {
    int clblast, tiled;
    int tm, wg;
    int gpu; /* own kernels: split k the GPUs' way (every device but CPUs: the
              * simulator too, so that the tests run it without a GPU) */
    clnet_gemm_tiled_params tp;
} choice;

static const int TM_SPACE[] = {4, 8, 16};
#define MAX_TILED 64

/* 1 when id names a candidate of device d, described in *c. */
static int parse_id(const clnet_device *d, const char *id, choice *c) {
    memset(c, 0, sizeof *c);
    c->gpu = d && d->info.type != CLNET_DEVICE_CPU;
    if (strcmp(id, "clblast") == 0) {
        c->clblast = 1;
        return 1;
    }
    if (strncmp(id, "tiled-", 6) == 0) return c->tiled = clnet_gemm_tiled_known(d, id, &c->tp);
    char tail = 0;
    if (sscanf(id, "own-tm%d-wg%d%c", &c->tm, &c->wg, &tail) != 2 || (c->wg != 0 && c->wg != 1))
        return 0;
    for (size_t i = 0; i < sizeof TM_SPACE / sizeof TM_SPACE[0]; i++)
        if (TM_SPACE[i] == c->tm) return 1;
    return 0;
}

int clnet_gemm_candidates(const clnet_device *d, char ids[][CLNET_GEMM_ID_CAP], int cap) {
    int n = 0;
    clnet_gemm_tiled_params space[MAX_TILED];
    int tiled = clnet_gemm_tiled_space(d, space, MAX_TILED);
    for (int i = 0; i < tiled && i < MAX_TILED && n < cap; i++)
        clnet_gemm_tiled_name(&space[i], ids[n++], CLNET_GEMM_ID_CAP);
    /* 16 rows of float8 accumulators (128 registers) spill on GPUs (RDNA3's 128
     * VGPRs; scripts/gpu_offline.py): not theirs */
    int gpu = d && d->info.type != CLNET_DEVICE_CPU;
    for (size_t i = 0; i < sizeof TM_SPACE / sizeof TM_SPACE[0]; i++)
        for (int wg = 1; wg >= 0; wg--)
            if (n < cap && !(gpu && TM_SPACE[i] > 8))
                snprintf(ids[n++], CLNET_GEMM_ID_CAP, "own-tm%d-wg%d", TM_SPACE[i], wg);
    if (n < cap) snprintf(ids[n++], CLNET_GEMM_ID_CAP, "clblast");
    return n;
}

/* A B^T with a long k (a convolution's weight gradient): dot products
 * along both rows beat transposing the large B; for short k (a linear
 * layer's forward) transposing the small B and gemm_nn win. */
static int own_nt(int ta, int tb, size_t K) {
    return tb && !ta && K >= SPLIT_K_MIN;
}

/* The chunks of k split-K cuts a product into (1: not split). */
static size_t own_chunks(int gpu, size_t M, size_t N, size_t K) {
    size_t chunks = 1;
    if (K >= SPLIT_K_MIN && M * N <= SPLIT_K_MAX_OUTPUTS) {
        size_t most = gpu ? GPU_SPLIT_K_CHUNKS : SPLIT_K_MAX_CHUNKS;
        if (gpu && GPU_SPLIT_K_PARTIALS / (M * N) < most) most = GPU_SPLIT_K_PARTIALS / (M * N);
        chunks = K / (gpu ? GPU_SPLIT_K_CHUNK : SPLIT_K_CHUNK);
        if (chunks > most) chunks = most;
        if (chunks < 1) chunks = 1;
    }
    return chunks;
}

/* Scratch regions start on 64 bytes, as the arenas' tensors do. */
static size_t aligned(size_t floats) {
    return (floats + 15) / 16 * 16;
}

/* The own kernels' scratch: B^T (made by transposing), then the partial
 * products of split-K. */
static size_t own_floats(int gpu, int ta, int tb, size_t M, size_t N, size_t K,
                         size_t *partials_at) {
    size_t bt = tb && !own_nt(ta, tb, K) ? aligned(K * N) : 0, chunks = own_chunks(gpu, M, N, K);
    *partials_at = bt;
    return bt + (chunks > 1 ? chunks * M * N : 0);
}

/* What a plan for shape s reserves for the own kernels: enough for s and
 * for every smaller k too (a pass over fewer samples than planned runs a
 * weight gradient with a shorter k). The one size that shrinks as k grows:
 * from SPLIT_K_MIN on, A B^T needs no B^T (own_nt), so a k just below it
 * needs more than s. */
static size_t own_plan_floats(int gpu, const clnet_gemm_shape *s) {
    size_t at = 0, floats = own_floats(gpu, s->ta, s->tb, s->M, s->N, s->K, &at);
    if (own_nt(s->ta, s->tb, s->K)) {
        size_t below = own_floats(gpu, s->ta, s->tb, s->M, s->N, SPLIT_K_MIN - 1, &at);
        if (below > floats) floats = below;
    }
    return floats;
}

size_t clnet_gemm_work_floats(const clnet_gemm_shape *s) {
    size_t own = own_plan_floats(0, s), gpu = own_plan_floats(1, s);
    size_t tiled = clnet_gemm_tiled_work_floats(s->M, s->N, s->K);
    if (gpu > own) own = gpu;
    return own > tiled ? own : tiled;
}

/* kept: [0] the product's kernel, [1] gemm_reduce, [2] transpose. */
static clnet_status gemm_own(clnet_device *d, const choice *ch, cl_kernel *kept,
                             const clnet_gemm_scratch *work, const clnet_gemm_shape *s,
                             const clnet_gemm_args *g) {
    clnet_status status = CLNET_OK;
    int ta = s->ta, tb = s->tb;
    size_t M = s->M, N = s->N, K = s->K;
    float alpha = g->alpha, beta = g->beta;
    cl_mem A = g->a.mem, B = g->b.mem, C = g->c.mem;
    size_t aoff = g->a.off, lda = g->a.ld, boff = g->b.off, ldb = g->b.ld, coff = g->c.off,
           ldc = g->c.ld;
    size_t partials = 0;
    if (own_floats(ch->gpu, ta, tb, M, N, K, &partials) > work->floats)
        FAIL(CLNET_ERR_GUARD, "gemm %zu x %zu x %zu: %zu floats of scratch are too few", M, N, K,
             work->floats);
    int nt = own_nt(ta, tb, K);
    if (tb && !nt) { /* A^T B^T: make B^T into scratch and use gemm_nn */
        TRY(transpose_kept(d, &kept[2], N, K, g->b, (clnet_matrix){work->mem, work->off, N}));
        B = work->mem;
        boff = work->off;
        ldb = N;
    }
    size_t chunks = own_chunks(ch->gpu, M, N, K);
    size_t kchunk = (K + chunks - 1) / chunks;
    cl_mem out = C;
    size_t out_off = coff, out_ld = ldc, out_stride = 0;
    float out_beta = beta;
    if (chunks > 1) {
        out = work->mem;
        out_off = work->off + partials;
        out_ld = N;
        out_stride = M * N;
        out_beta = 0.0f;
    }

    /* gemm_nt: NT_M x NT_N tiles; gemm_nn: TM x 8. Work-items run over
     * (column blocks, row blocks, chunks of k). */
    const char *name = nt ? "gemm_nt" : "gemm_nn";
    size_t tm = (size_t)ch->tm;
    size_t rows = nt ? (M + NT_M - 1) / NT_M : (M + tm - 1) / tm;
    size_t cols = nt ? (N + NT_N - 1) / NT_N : (N + 7) / 8;
    size_t local[3], global[3] = {cols, rows, chunks};
    int use_local = ch->wg;
    /* only gemm_nn reads GEMM_TM, and its default (8) needs no option: the
     * others, and gemm_nn at 8, run from the program without options, which
     * other small families share (sources.c) */
    char options[32] = "";
    if (!nt && ch->tm != 8) snprintf(options, sizeof options, "-DGEMM_TM=%d", ch->tm);
    if (!kept[0]) TRY(clnet_kernel_get(d, FAMILY, options, name, &kept[0]));
    local_size(d, kept[0], rows, local);
    if (nt)
        TRY(clnet_run_kept(d, &kept[0], KERNEL(FAMILY, options, name), 3, global,
                           use_local ? local : NULL,
                           ARGS(U32(M), U32(N), U32(K), U32(kchunk), F32(alpha), MEM(A), U32(aoff),
                                U32(lda), MEM(B), U32(boff), U32(ldb), F32(out_beta), MEM(out),
                                U32(out_off), U32(out_ld), U32(out_stride))));
    else
        TRY(clnet_run_kept(
            d, &kept[0], KERNEL(FAMILY, options, name), 3, global, use_local ? local : NULL,
            ARGS(U32(M), U32(N), U32(K), U32(kchunk), F32(alpha), MEM(A), U32(aoff),
                 U32(ta ? 1 : lda), U32(ta ? lda : 1), MEM(B), U32(boff), U32(ldb), F32(out_beta),
                 MEM(out), U32(out_off), U32(out_ld), U32(out_stride))));
    if (chunks > 1) /* add the chunks' partial products into C, in order */
        TRY(clnet_run_kept(d, &kept[1], KERNEL(FAMILY, options, "gemm_reduce"), 2, (size_t[]){N, M},
                           NULL,
                           ARGS(U32(M), U32(N), U32(chunks), MEM(out), U32(out_off), U32(M * N),
                                F32(beta), MEM(C), U32(coff), U32(ldc))));
cleanup:
    return status;
}

/* ---- choosing ---- */

clnet_status clnet_gemm_open(clnet_device *d) {
    clnet_status status = CLNET_OK;
    char *source = NULL;
    const char *env = d->env->gemm;
    d->choice.gemm_force[0] = '\0';
    if (env && *env && strcasecmp(env, "auto") != 0) {
        if (strcasecmp(env, "own") != 0 && strcasecmp(env, "clblast") != 0)
            FAIL(CLNET_ERR_INVALID_ARGUMENT, "CLNET_GEMM='%s': expected auto, own or clblast", env);
        snprintf(d->choice.gemm_force, sizeof d->choice.gemm_force, "%s", env);
        for (char *c = d->choice.gemm_force; *c; c++) *c = (char)(*c | 0x20);
    }
    /* The fingerprint: the kernels' source, the candidates, the CLBlast
     * version: an entry measured over anything else is stale. */
    uint64_t h = CLNET_FNV_BASIS;
    /* the convolutions' algorithms are entries of the database too */
    static const char *const families[] = {FAMILY,        "gemm_tiled",    "conv",
                                           "conv_direct", "conv_implicit", "conv_lanes"};
    for (int f = 0; f < (int)(sizeof families / sizeof *families); f++) {
        if (clnet_kernel_source(families[f], d->env->kernel_dir, &source) == CLNET_OK) {
            h = clnet_fnv1a(source, strlen(source), h);
        } else { /* $CLNET_KERNEL_DIR lacks it: building will say so; fingerprint ours */
            for (const clnet_embedded_source *e = clnet_embedded_sources; e->family; e++)
                if (strcmp(e->family, families[f]) == 0) h = clnet_fnv1a(e->text, e->length, h);
        }
        free(source);
        source = NULL;
    }
    char ids[64][CLNET_GEMM_ID_CAP];
    int n = clnet_gemm_candidates(d, ids, 64);
    for (int i = 0; i < n; i++) h = clnet_fnv1a(ids[i], strlen(ids[i]) + 1, h);
    char clblast[32];
    snprintf(clblast, sizeof clblast, "clblast %d.%d", CLBLAST_VERSION_MAJOR,
             CLBLAST_VERSION_MINOR);
    h = clnet_fnv1a(clblast, strlen(clblast), h);
    snprintf(d->choice.tune_space, sizeof d->choice.tune_space, "%016llx", (unsigned long long)h);
    snprintf(d->choice.tune_device, sizeof d->choice.tune_device, "%s | %s | %s", d->info.name,
             d->info.driver_version, d->info.platform_name);
    if (d->cache && d->cache->enabled) {
        char path[4200];
        clnet_tune_db_path(d->cache->dir, path, sizeof path);
        TRY(clnet_tune_db_read(path, d->choice.tune_device, d->choice.tune_space, &d->choice.tuned,
                               NULL));
    }
cleanup:
    free(source);
    return status;
}

void clnet_gemm_record_free(clnet_gemm_record *r) {
    free(r->picks);
    *r = (clnet_gemm_record){0};
}

int clnet_gemm_record_count(const clnet_gemm_record *r, const clnet_device *d) {
    return r->version == d->choice.gemm_version ? r->count : 0;
}

void clnet_gemm_key(const clnet_gemm_shape *s, char *key, size_t cap, int *bucket) {
    size_t dims[3] = {s->M, s->N, s->K};
    const char *names = "MNK";
    char text[3][32];
    for (int i = 0; i < 3; i++) {
        if (s->batch == names[i] && s->n > 0)
            snprintf(text[i], sizeof text[i], "%zun", dims[i] / (size_t)s->n);
        else
            snprintf(text[i], sizeof text[i], "%zu", dims[i]);
    }
    snprintf(key, cap, "gemm %c%c M=%s N=%s K=%s", s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', text[0],
             text[1], text[2]);
    *bucket = s->batch ? clnet_tune_bucket(s->n) : 0;
}

/* The fixed rule (no database entry): CLBlast on GPUs but for a long k into
 * a small C (split, own-tm8-wg1); on CPUs the tiled
 * point that reached at least 56% of OpenBLAS on every shape measured (the
 * 6 x 64 register tile, k blocked by 256, unrolled twice), a 10 x 32 tile for
 * NT products (CPU_RULE_NT); the simple kernel
 * with the driver's layout elsewhere (simulators, and CPUs without vector
 * types: on llvmpipe it beat CLBlast by 1.4x and the CPU layout by 3.7x). */
#define CPU_RULE "tiled-m6n64v16k256c0a0b0l0w1x1u2"
/* NT products (weight gradients from a column matrix, a linear layer's
 * forward) on CPUs: a narrower tile, twice the work-items of a small C, and k
 * unblocked. On the EPYC VM (2026-11-28, bench_gemm) it ran LeNet's second
 * weight gradient (50 x 500 x 20736) at 157 GFLOP/s against CPU_RULE's 75,
 * ResNet's 1x1 ones (128 x 64 x 25088, 256 x 128 x 6272) at 137 and 178
 * against 67 and 177, its 3x3 one through im2col (128 x 1152 x 25088) at 207
 * against 155, LeNet's fc1 forward (256 x 128 x 800) at 122 against 101. */
#define CPU_RULE_NT "tiled-m10n32v16k0c0a0b0l0w1x1u1"
/* The same two on 8-wide CPUs (AVX2: 16 ymm registers), tiles of 6 x 2 and
 * 10 x 1 vectors of 8: 12 and 10 accumulators, 14 and 12 registers with B's
 * vectors. A tile sized for AVX-512's 32 zmm spills there (each float16 two
 * ymm), and clang warns of every float16 its builtins pass. */
#define CPU8_RULE    "tiled-m6n16v8k256c0a0b0l0w1x1u2"
#define CPU8_RULE_NT "tiled-m10n8v8k0c0a0b0l0w1x1u1"
static const char *fixed_rule(const clnet_device *d, const clnet_gemm_shape *s) {
    if (d->info.type == CLNET_DEVICE_GPU)
        return s->K >= SPLIT_K_MIN && s->M * s->N <= GPU_SPLIT_K_SMALL_C ? "own-tm8-wg1"
                                                                         : "clblast";
    if (!d->vector_cpu) return "own-tm8-wg0";
    /* a long k into a small C (a first convolution's weight gradient, 20 x 9
     * from k = 173,056): the tiled kernel has one work-item per tile of C,
     * so next to nothing runs in parallel; the simple kernel splits k */
    if (s->K >= SPLIT_K_MIN && s->M * s->N <= SPLIT_K_SMALL_C) return "own-tm16-wg0";
    if (d->vector_cpu == 8) return !s->ta && s->tb ? CPU8_RULE_NT : CPU8_RULE;
    return !s->ta && s->tb ? CPU_RULE_NT : CPU_RULE;
}

static int same_shape(const clnet_gemm_shape *a, const clnet_gemm_shape *b) {
    return a->ta == b->ta && a->tb == b->tb && a->M == b->M && a->N == b->N && a->K == b->K &&
           a->batch == b->batch && a->n == b->n;
}

/* The candidate $CLNET_GEMM forces on d, or NULL. */
static const char *forced_id(const clnet_device *d) {
    if (!d->choice.gemm_force[0]) return NULL;
    if (strcmp(d->choice.gemm_force, "clblast") == 0) return "clblast";
    return d->vector_cpu ? "own-tm8-wg1" : "own-tm8-wg0";
}

/* The candidate for a shape on d (its id, parsed into *c), as the policy
 * (choose.h) decides, and where the choice came from (its letter); with
 * warn, says so when a database entry names none. */
static char choose_id(const clnet_device *d, const clnet_gemm_shape *s, int warn,
                      char id[CLNET_GEMM_ID_CAP], choice *c) {
    char key[CLNET_TUNE_KEY_CAP];
    int bucket = 0;
    clnet_gemm_key(s, key, sizeof key, &bucket);
    clnet_choice_from from = CLNET_FROM_ENV;
    const char *named = NULL;
    for (; from < CLNET_FROM_RULE; from++)
        if ((named = clnet_chooser_named(&d->choice, from, forced_id(d), key, bucket))) break;
    snprintf(id, CLNET_GEMM_ID_CAP, "%s", named ? named : fixed_rule(d, s));
    if (!parse_id(d, id, c)) { /* a database entry of an older space slipped through */
        if (warn)
            clnet_warn("device %d (%s): GEMM candidate '%s' for '%s' is unknown; using the fixed "
                       "rule",
                       d->info.index, d->info.name, id, key);
        snprintf(id, CLNET_GEMM_ID_CAP, "%s", fixed_rule(d, s));
        from = CLNET_FROM_RULE;
        parse_id(d, id, c);
    }
    return clnet_choice_letters[from];
}

static void choose(const clnet_device *d, const clnet_gemm_shape *s, clnet_gemm_pick *p) {
    choice c;
    p->source = choose_id(d, s, 1, p->id, &c);
    _Static_assert(sizeof c <= sizeof p->choice, "clnet_gemm_pick.choice holds a choice");
    memcpy(p->choice, &c, sizeof c);
}

size_t clnet_gemm_chosen_work_floats(const clnet_device *d, const clnet_gemm_shape *s) {
    if (!d) return clnet_gemm_work_floats(s);
    if (s->M == 0 || s->N == 0) return 0; /* clnet_gemm runs nothing */
    char id[CLNET_GEMM_ID_CAP];
    choice c;
    choose_id(d, s, 0, id, &c);
    if (c.tiled) return clnet_gemm_tiled_scratch(&c.tp, s->ta, s->tb, s->M, s->N, s->K);
    return c.clblast ? 0 : own_plan_floats(c.gpu, s);
}

/* The record's pick for a shape: the site's of its last call when the shape
 * is the same, else found or made (a shape's first call) in the record. */
static clnet_status pick(clnet_device *d, clnet_gemm_site *site, const clnet_gemm_shape *s,
                         clnet_gemm_pick **out) {
    clnet_gemm_record *r = site->record;
    if (r->version != d->choice.gemm_version) { /* the device's knowledge changed: choose again */
        r->count = 0;
        r->version = d->choice.gemm_version;
    }
    int i = site->version == r->version && site->pick < r->count ? site->pick : -1;
    if (i < 0 || !same_shape(&r->picks[i].shape, s))
        for (i = 0; i < r->count && !same_shape(&r->picks[i].shape, s); i++) continue;
    if (i == r->count) {
        if (r->count == r->cap) {
            int cap = r->cap ? r->cap * 2 : 16;
            clnet_gemm_pick *n = clnet_realloc(r->picks, (size_t)cap * sizeof *n);
            if (!n) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for GEMM choices");
            r->picks = n;
            r->cap = cap;
        }
        clnet_gemm_pick *p = &r->picks[r->count++];
        *p = (clnet_gemm_pick){.shape = *s};
        snprintf(p->site, sizeof p->site, "%s %s", site->layer ? site->layer : "?",
                 site->backward ? "backward" : "forward");
        choose(d, s, p);
    }
    r->picks[i].train |= site->train;
    site->pick = i;
    site->version = r->version;
    *out = &r->picks[i];
    return CLNET_OK;
}

void clnet_gemm_forget(clnet_device *d) {
    d->choice.gemm_version++;
}

clnet_status clnet_gemm_pin(clnet_device *d, const char *key, int bucket, const char *id) {
    choice c;
    if (!parse_id(d, id, &c))
        return clnet_fail(CLNET_ERR_FORMAT,
                          "GEMM candidate '%s' (for '%s') is not one of device "
                          "%d (%s)",
                          id, key, d->info.index, d->info.name);
    clnet_tune_entry e = {.bucket = bucket};
    if (strlen(key) >= sizeof e.key)
        return clnet_fail(CLNET_ERR_FORMAT, "GEMM key '%s' is too long", key);
    strcpy(e.key, key);
    strcpy(e.choice, id);
    clnet_gemm_forget(d);
    return clnet_tune_table_set(&d->choice.pinned, &e);
}

static clnet_status check_shape(const clnet_gemm_shape *s, const clnet_gemm_args *g) {
    size_t M = s->M, N = s->N, K = s->K;
    /* Every index the kernels compute must fit in 32 bits. */
    size_t a_end = g->a.off + (s->ta ? K : M) * g->a.ld,
           b_end = g->b.off + (s->tb ? N : K) * g->b.ld, c_end = g->c.off + M * g->c.ld;
    if (!fits_u32(a_end) || !fits_u32(b_end) || !fits_u32(c_end) || !fits_u32(K * N) ||
        !fits_u32(16 * M * N))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "gemm %zu x %zu x %zu: matrices beyond 2^32 elements", M, N, K);
    if (K == 0) /* C = beta C: rare (an empty inner dimension), not worth a kernel */
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "gemm with K = 0");
    return CLNET_OK;
}

/* One candidate, with its kernels kept in kept[0..GEMM_KEPT) and its
 * scratch in `work`. */
static clnet_status run_choice(clnet_device *d, const choice *ch, cl_kernel *kept,
                               const clnet_gemm_scratch *work, const clnet_gemm_shape *s,
                               const clnet_gemm_args *g) {
    clnet_status status = check_shape(s, g);
    double began = 0;
    if (status == CLNET_OK) status = clnet_profile_begin(d, &began);
    if (status != CLNET_OK) return status;
    if (ch->tiled)
        status = clnet_gemm_tiled(d, kept, &ch->tp, work, s, g);
    else
        status = ch->clblast ? gemm_clblast(d, s, g) : gemm_own(d, ch, kept, work, s, g);
    if (began != 0 && status == CLNET_OK) {
        char name[96];
        snprintf(name, sizeof name, "gemm %c%c %zux%zux%zu", s->ta ? 'T' : 'N', s->tb ? 'T' : 'N',
                 s->M, s->N, s->K);
        status = clnet_profile_end(d, name, began);
    }
    return status;
}

clnet_status clnet_gemm_with(clnet_device *d, const char *id, const clnet_gemm_shape *s,
                             const clnet_gemm_scratch *scratch, const clnet_gemm_args *g) {
    clnet_status status = CLNET_OK;
    choice c;
    cl_kernel kept[CLNET_GEMM_KEPT] = {NULL};
    clnet_gemm_scratch own = {NULL, 0, 0};
    if (s->M == 0 || s->N == 0) return CLNET_OK;
    if (!parse_id(d, id, &c))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "'%s' is not a GEMM candidate of device %d (%s)", id, d->info.index,
                          d->info.name);
    if (!scratch) {
        own.floats = clnet_gemm_work_floats(s);
        TRY(clnet_buffer_create(d, own.floats * sizeof(float), &own.mem));
        scratch = &own;
    }
    TRY(run_choice(d, &c, kept, scratch, s, g));
cleanup:
    if (own.mem) { /* the queue may still read it: released once it is done */
        if (status == CLNET_OK) CL_CHECK(clnet_finish(d), "clFinish");
        clReleaseMemObject(own.mem);
    }
    return status;
}

/* The pick keeps the candidate, parsed, and its kernels: after a shape's
 * first call nothing is parsed or looked up by name. */
clnet_status clnet_gemm(clnet_device *d, clnet_gemm_site *site, const clnet_gemm_shape *s,
                        const clnet_gemm_args *g) {
    if (s->M == 0 || s->N == 0) return CLNET_OK;
    choice c;
    if (!site->record) { /* no record to keep it in: chosen for this call */
        clnet_gemm_pick once = {.shape = *s};
        cl_kernel kept[CLNET_GEMM_KEPT] = {NULL};
        choose(d, s, &once);
        memcpy(&c, once.choice, sizeof c);
        return run_choice(d, &c, kept, &site->scratch, s, g);
    }
    clnet_gemm_pick *p = NULL;
    clnet_status status = pick(d, site, s, &p);
    if (status != CLNET_OK) return status;
    memcpy(&c, p->choice, sizeof c);
    return run_choice(d, &c, p->kept, &site->scratch, s, g);
}
