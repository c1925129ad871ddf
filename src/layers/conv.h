/* What the convolution kinds (conv.c) and their algorithms (conv_*.c, one
 * file each) share: the layer's configuration, its two sides, a chunk of a
 * pass's samples, the algorithm object and its registry, the kernel slots.
 *
 * An algorithm is a conv_algo: the rules that pick it, its scratch for a
 * chunk of samples, and a chunk function for each pass of either kind.
 * conv.c runs every pass as a loop over chunks (conv_each_chunk) calling
 * the chosen algorithm's function; conv_choice.c chooses. Adding one: a file
 * defining its conv_algo, a line in conv_algos (conv_choice.c) and its
 * kernel slots below (docs/internals.md). */
#ifndef CLNET_CONV_H
#define CLNET_CONV_H

#include "layer.h"

#include <stddef.h>
#include <stdint.h>

enum { CONV_PAD_GIVEN, CONV_PAD_SAME, CONV_PAD_CAUSAL };

typedef struct {
    int rank;      /* spatial axes: 1, 2 or 3 (the kind's) */
    int transpose; /* conv_transposeNd */
    int filters;
    int relu;  /* 1: the relu after it runs in its kernels (fuse_relu, set by fusion.c) */
    int stats; /* 1: writes its output's statistics for the batch norm after it (stats_out) */
    int k[3], s[3], p[3], d[3], out_pad[3]; /* as given, one per spatial axis */
    int pad_mode;                           /* pad=N, pad=same or pad=causal */
    int groups; /* channels and filters in this many independent groups */
    clnet_param_init init;
    clnet_window win; /* set by setup: the big side's windows, on three axes */
} conv_config;

#define CONV_WINDOW(node) (&CLNET_CONFIG(node, conv_config)->win)

/* A convolution has a big side, the tensor the windows read (the
 * convolution's x, the transposed convolution's y), and a small side with
 * one value per window and channel (the convolution's y, the transposed
 * convolution's x): their channels and positions, the taps of a window, the
 * groups. */
typedef struct {
    size_t Cs, Ps, Cb, Pb, K, G;
} conv_sides;

conv_sides conv_sides_of(const clnet_node *node);

/* The kernel slots of a convolution node (clnet_pass_kept), one name each:
 * an algorithm's kernels never share a slot with another's, as every pass
 * of a node may run a different algorithm (and guarded runs check that a
 * slot's kernel is the one asked for: program.c). */
enum {
    CONV_K_IM2COL,
    CONV_K_OUTPUT,      /* conv_output: Sp to the small side */
    CONV_K_GRAD_LAYOUT, /* conv_grad_output: the small side to Sp */
    CONV_K_COL2IM,
    CONV_K_ROW_SUMS, /* and the next two: clnet_row_sums' kernels */
    CONV_K_ROW_SUMS_2,
    CONV_K_ROW_SUMS_3,
    CONV_K_BIG_LAYOUT, /* a transposed convolution's dy in GEMM layout */
    CONV_K_DIRECT_DOWN,
    CONV_K_DIRECT_UP,
    CONV_K_DIRECT_WEIGHT,
    CONV_K_DIRECT_SUMS,
    CONV_K_IMPLICIT_PAD,
    CONV_K_IMPLICIT_GEMM,    /* the down product's */
    CONV_K_IMPLICIT_GEMM_UP, /* the up product's (its tile may differ: another program) */
    CONV_K_IMPLICIT_OUTPUT,
    CONV_K_IMPLICIT_WGRAD,
    CONV_K_IMPLICIT_SUMS,
    CONV_K_IMPLICIT_FLIP,
    CONV_K_IMPLICIT_TO_GRID,
    CONV_K_LANES_IN,
    CONV_K_LANES_GEMM,
    CONV_K_LANES_OUT,
    CONV_K_LANES_WGRAD,
    CONV_K_LANES_IN_LAST,
    CONV_K_LANES_WGEMM,
    CONV_K_LANES_FLIP,
    CONV_K_WINO_FILTER,
    CONV_K_WINO_INPUT,
    CONV_K_WINO_GEMM,    /* the forward's products */
    CONV_K_WINO_GEMM_UP, /* the input gradient's (another tile: another program) */
    CONV_K_WINO_OUTPUT,
    CONV_KERNELS
};
_Static_assert(CONV_KERNELS <= CLNET_NODE_KERNELS, "more convolution kernel slots than a node has");

/* The GEMM call sites of a node (clnet_pass_gemm). */
enum { CONV_GEMM_DOWN, CONV_GEMM_UP, CONV_GEMM_WEIGHT };

/* What a backward chunk makes: the parameters' gradients, x's, or both. */
enum { CONV_MAKES_DW = 1, CONV_MAKES_DX = 2 };

/* What a chunk of samples b0 .. b0+s-1 works on. */
typedef struct {
    int makes; /* backward: CONV_MAKES_* */
    int first; /* the pass's first chunk */
    int s;
    size_t NP;         /* s * Ps: the columns of its matrices */
    size_t small, big; /* its samples' offsets in small- and big-side tensors */
    size_t col;        /* its column region in work, after Sp */
    size_t gemm;       /* its GEMMs' and row sums' scratch in work (after its regions) */
    size_t wo, bo;     /* the weight and the bias in the parameters */
    size_t rec;        /* its first statistics record of a channel (conv_algo.records) */
    size_t records;    /* and the pass's, all chunks' */
} conv_chunk;

/* One chunk's share of a pass; beta is what its parameter gradients do
 * (the pass's beta for the first chunk; later chunks add to the first's). */
typedef clnet_status (*conv_chunk_fn)(const clnet_node *node, const clnet_pass *p,
                                      const conv_chunk *ch, float beta);

/* A convolution algorithm. Sizes are in floats of the pass's work buffer;
 * a chunk's regions start at 0 and its GEMMs' and row sums' scratch follows
 * them (rounded to 16). */
typedef struct {
    /* Its name in plans, checkpoints and $CLNET_CONV (a built-in's is in
     * choose.c's list, which numbers it: CLNET_CONV_*) */
    const char *name;
    /* The rules pick it for node on d (d NULL: no device yet), asked in
     * conv_algos' order; the last one's always does. */
    int (*rule)(const clnet_node *node, const clnet_device *d);
    /* The tuner times it on node on d (NULL: on every convolution). */
    int (*tried)(const clnet_node *node, const clnet_device *d);
    /* A sample's floats, that chunks of at most conv_chunk_limit divide by
     * (conv_chunk_samples); or its own chunking (NULL: that). */
    size_t (*per_sample)(const clnet_node *node, const clnet_device *d);
    int (*chunk_samples)(const clnet_node *node, const clnet_device *d, int n);
    size_t (*regions)(const clnet_node *node, const clnet_device *d, int s);
    size_t (*scratch)(const clnet_node *node, const clnet_device *d, int s);
    /* The statistics records (clnet_pass.stats) a chunk of s samples writes
     * per channel as it stores its output (NULL: it writes none). */
    size_t (*records)(const clnet_node *node, int s);
    /* The passes: a convolution's, a transposed convolution's (NULL: it
     * cannot run that kind). */
    conv_chunk_fn forward, backward, transpose_forward, transpose_backward;
} conv_algo;

extern const conv_algo conv_im2col, conv_direct, conv_implicit, conv_lanes, conv_winograd;

/* The algorithm numbered `algo` (CLNET_CONV_*), or NULL. */
const conv_algo *conv_algo_of(int algo);

/* Adds an algorithm beside the built-in ones, numbered after them: chosen
 * when forced (clnet_runtime_set_conv, $CLNET_CONV), pinned or tuned, never
 * by the rules. Register before any runtime opens. */
clnet_status conv_algo_register(const conv_algo *a);

/* The node's key in the tuning database and in checkpoints ("conv2d
 * 64x28x28>64x28x28 k3x3 s1x1 p1x1 d1x1 g1"): its algorithms' entry; the
 * implicit algorithm's local-memory tile is the entry of the key and
 * CONV_TILE_KEY after it. */
void conv_tune_key(const clnet_node *node, char *key, size_t cap);
#define CONV_TILE_KEY " tile"

/* The algorithm of each pass on d (conv_choice.c): $CLNET_CONV's, else the
 * checkpoint's or the tuning database's, else the rules'. */
clnet_conv_plan conv_plan_of(const clnet_node *node, const clnet_device *d);
int conv_algorithms(const clnet_node *node, const clnet_device *d, char *key, size_t cap,
                    int *algos, clnet_conv_plan *chosen);

/* ---- what several algorithms use (conv.c) ---- */

/* The most floats of a chunk (conv.c says why) on d, and the samples a chunk
 * of a pass over n holds when each takes `per` floats: as equal as the
 * chunks can be, at least one. */
size_t conv_chunk_limit(const clnet_device *d);
int conv_even_chunks(int n, size_t most);

/* Of a chunk of s samples: the row sums' scratch over either side in GEMM
 * layout; a transposed convolution's sample's dy in GEMM layout (its bias
 * gradient's region), else 0. */
size_t conv_sums_floats(const clnet_node *node, int s);
size_t conv_big_per_sample(const clnet_node *node);

static inline size_t conv_most(size_t a, size_t b) {
    return a > b ? a : b;
}

static inline size_t conv_round16(size_t v) {
    return (v + 15) / 16 * 16;
}

/* Whether the node has a bias (without one, kernels that would add it run
 * with their has_bias argument 0 and never read one), and took in the relu
 * after it (conv_config's relu). */
int conv_has_bias(const clnet_node *node);
uint32_t conv_took_relu(const clnet_node *node);

/* What an algorithm does besides storing its output: add the bias, apply
 * the relu, add to what is there; and where it can (lanes, implicit), write
 * the statistics records of what it stores (clnet_pass.stats). */
typedef struct {
    uint32_t bias, relu, add, stats;
} conv_output_flags;

/* The output's flags in a forward pass: the layer's own, or a folded batch
 * norm's (p->fold). */
conv_output_flags conv_forward_flags(const clnet_node *node, const clnet_pass *p);

/* The statistics arguments of a kernel that writes them: where the records
 * go (the link's memory, or any buffer when none are written), the records
 * of a channel, the chunk's first, and whether to write them. */
#define CONV_STATS_ARGS(p, ch, f)                                                                  \
    MEM((f).stats ? (p)->stats->mem : (p)->work), U32((f).stats ? (p)->stats->off : 0),            \
        U32((ch)->records), U32((ch)->rec), U32((f).stats)

/* A chunk's (s, C, P) tensor at `off` in `mem`. */
typedef struct {
    cl_mem mem;
    size_t off, C, P;
} conv_tensor;

/* (C, s*P) in work at `to` = the chunk's tensor t of s samples; with the
 * relu taken in (relu), only where y (at `y` in the activations) > 0. */
clnet_status conv_to_gemm_layout(const clnet_pass *p, int slot, conv_tensor t, int s, int relu,
                                 size_t y, size_t to);

/* The bias gradient (+)= the row sums of a (C, len) matrix at `at` in work. */
clnet_status conv_bias_sums(const clnet_pass *p, const conv_chunk *ch, size_t C, size_t len,
                            size_t at, float beta);

/* A convolution's backward through Sp: dy in GEMM layout (Cs, s*Ps) at the
 * start of work (only where y > 0 with the relu taken in), and with a bias
 * its row sums. A transposed convolution's bias gradient: dy in GEMM layout
 * (Cb, s*Pb) over the column region, and its row sums. */
clnet_status conv_output_grad(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                              float beta);
clnet_status conv_transpose_bias_grad(const clnet_node *node, const clnet_pass *p,
                                      const conv_chunk *ch, float beta);

/* The register tile of the tiled GEMM's micro-kernel that the implicit and
 * lanes algorithms run (conv_tiles.c), and its program's build options. */
typedef struct {
    int mr, nv, vw, kc, wr, wt;
    int kl, wgm, wgn; /* local-memory tiles (GPUs): cl/gemm_tiled.cl's KL, WGM, WGN; kl 0: none */
} conv_tile;

conv_tile conv_tile_of(const clnet_node *node, const clnet_device *d, int lanes);
void conv_tile_options(const clnet_node *node, const conv_tile *t, char *opt, size_t cap);
/* The same for windows of k[3] taps along each axis (conv_implicit_products: one). */
void conv_tile_options_taps(const conv_tile *t, const int *k, char *opt, size_t cap);

/* The tile of an implicit product of M rows (a group's filters, or its
 * channels) on d (conv_tiles.c): on a CPU, or where no local tile fits, the
 * layer's (conv_tile_of); else $CLNET_CONV_TILE's (an error where d cannot
 * run it), a checkpoint's or the database's, or the rule's. The same for
 * every share of a batch. */
clnet_status conv_product_tile(const clnet_node *node, const clnet_device *d, size_t M,
                               conv_tile *t);

/* Plain products through the implicit algorithm's implicit_gemm, built for
 * one tap (Winograd's sixteen, group by group): for i < count, C_i (M x N)
 * = A_i (M x K) . B_i (K x N), each row-major without gaps, A_i at a + i M K,
 * B_i at b + i K N and C_i at c + i M N floats of the pass's work, on the
 * tile the implicit algorithm's rules give M rows. Without local memory
 * (CPUs) the last B's rows are read up to 80 floats past its end. */
typedef struct {
    size_t count, M, K, N, a, b, c;
} conv_products;
clnet_status conv_implicit_products(const clnet_node *node, const clnet_pass *p, int slot,
                                    const conv_products *q);

/* The implicit algorithm's local-memory tiles, for devices other than CPUs
 * (ids as clnet_conv_tile_parse reads them, small to large): how many, and
 * the i-th (NULL past the last). */
int conv_gpu_tile_count(void);
const char *conv_gpu_tile(int i);

#endif
