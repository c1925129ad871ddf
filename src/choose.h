/* The one choice policy of every operation with candidates (a matrix
 * product's kernels, a convolution's algorithms, whatever comes next).
 *
 * A choice comes from the first of these that names one, in this order:
 *   1. the environment ($CLNET_GEMM, $CLNET_CONV, or clnet_runtime_set_conv),
 *   2. the checkpoint the net resumed from (its choices, pinned on the device),
 *   3. the tuning database (tune.h: what `clnet tune` measured on this device),
 *   4. the operation's own rule (its shape and the device's facts).
 * clnet_chooser_named answers 1 to 3 for a key; the operation parses the text
 * and applies its rule where none names one. What a device knows for this
 * (its forced choices, its tables) is a clnet_chooser, one per device.
 *
 * The convolution algorithms are named here too (their objects live in
 * src/layers/conv_*.c, above the devices): a device parses $CLNET_CONV when
 * it opens, before any layer runs. */
#ifndef CLNET_CHOOSE_H
#define CLNET_CHOOSE_H

#include "tune.h"

#include <stddef.h>

/* Where a choice came from, in the order the policy asks. */
typedef enum {
    CLNET_FROM_ENV,
    CLNET_FROM_CHECKPOINT,
    CLNET_FROM_DATABASE,
    CLNET_FROM_RULE,
    CLNET_FROM_COUNT
} clnet_choice_from;

/* The letter each source is reported with (gemm.h's clnet_gemm_pick.source,
 * `clnet tune`'s tables): e, p, d, f (the fixed rule). */
extern const char clnet_choice_letters[CLNET_FROM_COUNT + 1];

/* ---- the convolution algorithms' names ---- */

/* The built-in algorithms (src/layers/conv_*.c), by their numbers in plans;
 * CLNET_CONV_AUTO is "the rules decide". Algorithms registered at run time
 * (conv_algo_register) take the numbers after CLNET_CONV_BUILT_IN, up to
 * CLNET_CONV_MOST - 1. */
enum {
    CLNET_CONV_AUTO,
    CLNET_CONV_IM2COL,
    CLNET_CONV_DIRECT,
    CLNET_CONV_IMPLICIT,
    CLNET_CONV_LANES,
    CLNET_CONV_WINOGRAD,
    CLNET_CONV_BUILT_IN,
    CLNET_CONV_MOST = 16
};

/* How many numbers are in use (auto, the built-in algorithms and the ones
 * registered so far): algorithms are 1 .. count - 1. */
int clnet_conv_algo_count(void);
/* Algorithm a's name ("implicit"), or "?" for a number not in use. */
const char *clnet_conv_algo_name(int a);
/* The algorithm called name (any case), or -1. */
int clnet_conv_algo_id(const char *name);
/* A new algorithm called `name` (1 to 15 letters, digits, '_' or '-'; unknown so
 * far): its number in *a. Register before any runtime opens. */
clnet_status clnet_conv_algo_add(const char *name, int *a);

/* A convolution's passes, each of which may run its own algorithm: the
 * forward product, the input gradient and the weight gradient (with the
 * bias's). A transposed convolution's are named for what they compute. */
enum { CLNET_PASS_FORWARD, CLNET_PASS_DX, CLNET_PASS_DW, CLNET_CONV_PASSES };

/* An algorithm for each pass (CLNET_CONV_AUTO: the rules decide it). As
 * text, one name where every pass runs the same ("implicit"), else the
 * three in pass order, '/' between ("implicit/implicit/im2col"). */
typedef struct {
    int pass[CLNET_CONV_PASSES];
} clnet_conv_plan;

#define CLNET_CONV_PLAN_CAP 48 /* three names of at most 15 letters, two '/', the end */

/* Every pass with algorithm a. */
static inline clnet_conv_plan clnet_conv_plan_all(int a) {
    return (clnet_conv_plan){{a, a, a}};
}
/* Whether the plan names an algorithm for any pass. */
static inline int clnet_conv_plan_named(const clnet_conv_plan *plan) {
    for (int pass = 0; pass < CLNET_CONV_PASSES; pass++)
        if (plan->pass[pass] != CLNET_CONV_AUTO) return 1;
    return 0;
}
/* The plan that text names into *plan; 0 (and *plan unchanged) where a name
 * is unknown or the count is neither one nor three. */
int clnet_conv_plan_parse(const char *text, clnet_conv_plan *plan);
/* The plan as text, in out (CLNET_CONV_PLAN_CAP bytes are enough). */
void clnet_conv_plan_text(const clnet_conv_plan *plan, char *out, size_t cap);

/* ---- what a device knows for choosing ---- */

typedef struct {
    char gemm_force[16];        /* $CLNET_GEMM ("own", "clblast") or "" */
    clnet_conv_plan conv_force; /* $CLNET_CONV: an algorithm a pass, or CLNET_CONV_AUTO */
    char conv_tile_force[24];   /* $CLNET_CONV_TILE: the implicit algorithm's tile, or "" */
    char tune_device[400];      /* this device in the tuning database */
    char tune_space[20];        /* the fingerprint of its GEMM candidates */
    clnet_tune_table tuned;     /* the database's entries for this device */
    clnet_tune_table pinned;    /* a resumed checkpoint's choices */
    unsigned gemm_version;      /* bumped when they change: choices are made again */
} clnet_chooser;

/* The text source `from` names for key (and bucket, tune.h) on a device
 * that knows k: forced (what the environment forces on this operation;
 * NULL or "": nothing) for CLNET_FROM_ENV, the pinned or the database's
 * entry; NULL where it names none, and always for CLNET_FROM_RULE. */
const char *clnet_chooser_named(const clnet_chooser *k, clnet_choice_from from, const char *forced,
                                const char *key, int bucket);

/* Whether either table holds anything: an operation may skip making its key
 * when neither does. */
int clnet_chooser_has_entries(const clnet_chooser *k);

/* $CLNET_CONV's text (NULL or "": every pass auto) as k's forced plan; an
 * error naming `what` (the variable, or the function) where it names an
 * unknown algorithm. */
clnet_status clnet_chooser_force_conv(clnet_chooser *k, const char *text, const char *what);

/* $CLNET_CONV_TILE's text (NULL or "": none) as k's forced tile of the
 * implicit algorithm's local-memory products (src/layers/conv_implicit.c:
 * "m8n8v4l16w16x16", MR rows by NR columns a work-item, vectors of VW, KL
 * steps of k a tile, WGM x WGN work-items); an error naming `what` where it
 * is not such an id. */
clnet_status clnet_chooser_force_tile(clnet_chooser *k, const char *text, const char *what);

/* Parses a tile id: its MR, NR, VW, KL, WGM and WGN into v[6]; 0 where it
 * is not one (the values in the ranges cl/gemm_tiled.cl allows). */
int clnet_conv_tile_parse(const char *id, int v[6]);

void clnet_chooser_free(clnet_chooser *k);

#endif
