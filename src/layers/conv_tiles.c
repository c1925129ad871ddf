/* The register tiles of the implicit and lanes algorithms (conv.h's
 * conv_tile): the CPUs' (conv_tile_of), and the local-memory tiles the
 * implicit algorithm's products take on other devices, chosen by the one
 * policy (choose.h): $CLNET_CONV_TILE, a checkpoint's or the tuning
 * database's "<key> tile" entry, else the rule by the product's rows. */
#include "conv.h"
#include "error.h"
#include "layer.h"

#include <stdio.h>
#include <string.h>

/* The weight gradient's work-items (conv_implicit.c's implicit_wgrad on CPUs). */
#define WGRAD_TAPS 3  /* the most taps of a work-item */
#define WGRAD_ACCS 24 /* and of its accumulators */

/* The rows a tile of mr rows computes for products of m1 and m2 rows. */
static size_t rows_on(size_t mr, size_t m1, size_t m2) {
    return (m1 + mr - 1) / mr * mr + (m2 + mr - 1) / mr * mr;
}

/* Register tiles: the CPU rule's for the GEMM (6 x 64 of float16s, k in
 * blocks of 256; 6 x 16 of float8s on 8-wide CPUs), or for the implicit algorithm 8 x 48 where the
 * rows of the layer's two products (its filters and its channels a group) waste less on it (32 and
 * 16 of them: 36 and 18 rows on 6; 10% faster on conv3d 16 -> 32, 10% slower on 64 -> 64; not for
 * lanes, whose lane unit of 64 samples the tile's columns must divide); smaller ones elsewhere (a
 * first version for GPUs, untuned). The weight gradient's work-items hold 8 rows x 3 taps (15%
 * faster than 2 x 9 on conv3d and ResNet's 64 -> 64, level elsewhere). */
conv_tile conv_tile_of(const clnet_node *node, const clnet_device *d, int lanes) {
    int cpu = !d || d->vector_cpu;
    conv_sides v = conv_sides_of(node);
    size_t Fg = v.Cs / v.G, Cg = v.Cb / v.G;
    int wide = cpu && (!d || d->vector_cpu == 16); /* AVX-512's 32 zmm, else 16 ymm */
    conv_tile t = wide  ? (conv_tile){.mr = 6, .nv = 4, .vw = 16, .kc = 256}
                  : cpu ? (conv_tile){.mr = 6, .nv = 2, .vw = 8, .kc = 256}
                        : (conv_tile){.mr = 4, .nv = 1, .vw = 4};
    if (wide && !lanes && rows_on(8, Fg, Cg) * 100 < rows_on(6, Fg, Cg) * 92) t.mr = 8, t.nv = 3;
    int taps = (int)v.K, groups = (taps + WGRAD_TAPS - 1) / WGRAD_TAPS;
    t.wt = (taps + groups - 1) / groups;                  /* the taps in groups of equal size */
    t.wr = WGRAD_ACCS / t.wt > 8 ? 8 : WGRAD_ACCS / t.wt; /* WR x WT accumulators */
    return t;
}

/* The build options of tile t for windows of k taps along each axis (a
 * local-memory tile's without what its kernels do not read: KC, WR, WT). */
void conv_tile_options_taps(const conv_tile *t, const int *k, char *opt, size_t cap) {
    if (t->kl)
        snprintf(opt, cap,
                 "-DMR=%d -DNV=%d -DVW=%d -DIKD=%d -DIKH=%d -DIKW=%d -DLOCAL=1 -DKL=%d "
                 "-DWGM=%d -DWGN=%d",
                 t->mr, t->nv, t->vw, k[0], k[1], k[2], t->kl, t->wgm, t->wgn);
    else
        snprintf(opt, cap,
                 "-DMR=%d -DNV=%d -DVW=%d -DKC=%d -DIKD=%d -DIKH=%d -DIKW=%d -DWR=%d -DWT=%d",
                 t->mr, t->nv, t->vw, t->kc, k[0], k[1], k[2], t->wr, t->wt);
}

void conv_tile_options(const clnet_node *node, const conv_tile *t, char *opt, size_t cap) {
    conv_tile_options_taps(t, CONV_WINDOW(node)->k, opt, cap);
}

/* ---- local-memory tiles, for GPUs ----
 *
 * On devices other than CPUs every product runs with a tile staged in local
 * memory by the work-group (cl/conv_implicit.cl's LOCAL == 1 kernels): ids
 * "m8n8v4l16w16x16", MR rows by NR columns a work-item as vectors of VW, KL
 * steps of k a tile, WGM x WGN work-items, so a work-group's tile is WGM * MR
 * rows by WGN * NR columns (here 128 x 128). The space, small to large: */
static const char *const GPU_TILES[] = {
    "m2n4v4l16w8x16",  /* 16 x 64 */
    "m2n8v4l16w16x16", /* 32 x 128 */
    "m4n4v4l16w16x16", /* 64 x 64 */
    "m4n8v4l16w16x16", /* 64 x 128 */
    "m8n4v4l16w16x16", /* 128 x 64 */
    "m8n8v4l8w16x16",  /* 128 x 128, k in steps of 8: with 16, RDNA3's 128 VGPRs spill */
};
enum { GPU_TILE_COUNT = sizeof GPU_TILES / sizeof *GPU_TILES };

int conv_gpu_tile_count(void) {
    return GPU_TILE_COUNT;
}

const char *conv_gpu_tile(int i) {
    return i >= 0 && i < GPU_TILE_COUNT ? GPU_TILES[i] : NULL;
}

/* Tile `id` (clnet_conv_tile_parse's form) as a conv_tile, in *t: 0 where it
 * is not one, or needs a larger work-group or more local memory than d has. */
static int gpu_tile(const char *id, const clnet_device *d, conv_tile *t) {
    int v[6];
    if (!clnet_conv_tile_parse(id, v)) return 0;
    *t = (conv_tile){
        .mr = v[0], .nv = v[1] / v[2], .vw = v[2], .kl = v[3], .wgm = v[4], .wgn = v[5]};
    size_t tm = (size_t)v[0] * v[4], tn = (size_t)v[1] * v[5];
    /* two tiles of each operand, padded (cl/gemm_tiled.cl's ALD, BLD), and the taps' table */
    size_t bytes = 2 * (size_t)v[3] * ((tm + 1) + (tn + (size_t)v[2])) * 4 + 2 * 4 * 343;
    return !d || ((size_t)(v[4] * v[5]) <= d->info.max_work_group_size &&
                  bytes <= d->info.local_mem_bytes);
}

/* The rule's tile for a product of M rows (the filters of a group, or its
 * input channels), the same for every share: the work-group's rows about
 * the product's (the columns, positions, are many), the largest that fits d. */
static int gpu_rule_tile(size_t M, const clnet_device *d, conv_tile *t) {
    const char *want = M >= 96   ? "m8n8v4l8w16x16"
                       : M >= 48 ? "m4n8v4l16w16x16"
                       : M >= 24 ? "m2n8v4l16w16x16"
                                 : "m2n4v4l16w8x16";
    int at = 0;
    while (strcmp(GPU_TILES[at], want) != 0) at++;
    for (; at >= 0; at--)
        if (gpu_tile(GPU_TILES[at], d, t)) return 1;
    return 0;
}

/* The tile a checkpoint or the tuning database names for the node on d
 * (`clnet tune` times the space for the layer, every product on one tile),
 * in *t: 0 where neither names one that d can run. */
static int tuned_tile(const clnet_node *node, const clnet_device *d, conv_tile *t) {
    if (!clnet_chooser_has_entries(&d->choice)) return 0;
    char key[CLNET_TUNE_KEY_CAP];
    conv_tune_key(node, key, sizeof key - strlen(CONV_TILE_KEY));
    strcat(key, CONV_TILE_KEY);
    for (clnet_choice_from from = CLNET_FROM_CHECKPOINT; from < CLNET_FROM_RULE; from++) {
        const char *text = clnet_chooser_named(&d->choice, from, NULL, key, 0);
        if (text && gpu_tile(text, d, t)) return 1;
    }
    return 0;
}

/* The tile of a product of M rows on d, as the policy (choose.h) decides:
 * $CLNET_CONV_TILE's where it is set (an error where d cannot run it), else
 * a checkpoint's or the database's, else the rule's; on CPUs, and where no
 * local tile fits, the layer's (conv_tile_of). */
clnet_status conv_product_tile(const clnet_node *node, const clnet_device *d, size_t M,
                               conv_tile *t) {
    *t = conv_tile_of(node, d, 0);
    if (!d || d->info.type == CLNET_DEVICE_CPU) return CLNET_OK;
    const char *forced = d->choice.conv_tile_force;
    conv_tile local;
    if (!*forced && tuned_tile(node, d, &local)) {
        *t = local;
        return CLNET_OK;
    }
    if (*forced && !gpu_tile(forced, d, &local))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "CLNET_CONV_TILE=%s: device %d (%s) allows work-groups of %zu and %llu "
                          "bytes of local memory, too few for it",
                          forced, d->info.index, d->info.name, d->info.max_work_group_size,
                          (unsigned long long)d->info.local_mem_bytes);
    if (*forced || gpu_rule_tile(M, d, &local)) *t = local;
    return CLNET_OK;
}
