/* Matrix multiply on a device, row-major, BLAS conventions:
 * C = alpha * op(A) op(B) + beta * C, op(X) = X or X^T; M x N result, K inner.
 * A, B, C are buffers with offsets and leading dimensions in elements.
 *
 * Several implementations (candidates) compute it: clnet's own kernels
 * (cl/gemm.cl) with the parameters of a declared search space, and CLBlast.
 * Which one runs for a shape on a device comes, in this order, from:
 *   1. $CLNET_GEMM=own|clblast (a backend forced for every shape),
 *   2. choices pinned by a resumed checkpoint (clnet_gemm_pin),
 *   3. the tuning database (tune.h; written by `clnet tune`),
 *   4. the fixed rule: CLBlast on GPUs; on CPUs the tiled point
 *      "tiled-m6n64v16k256c0a0b0l0w1x1u2", or "own-tm16-wg0" for a long k
 *      into a small C (gemm.c, fixed_rule); "own-tm8-wg0" elsewhere
 *      (untuned CLBlast reaches a few GFLOP/s on PoCL).
 * Nothing is timed while training: only clnet_net_tune measures.
 *
 * A GEMM call names its call site (clnet_gemm_site): a layer's product,
 * owned by the replica next to the layer's kept kernels. The site carries
 * the scratch its candidates may use (a region of the replica's planned
 * scratch, clnet_gemm_chosen_work_floats) and finds its choice in the replica's
 * record of choices (clnet_gemm_record): made on a shape's first call, kept
 * with its kernels, and what a checkpoint records. */
#ifndef CLNET_GEMM_H
#define CLNET_GEMM_H

#include "device.h"
#include "gemm_shape.h"

#define CLNET_GEMM_ID_CAP CLNET_TUNE_CHOICE_CAP
#define CLNET_GEMM_KEPT   4 /* kernels one GEMM candidate runs */

/* The candidate a shape runs with, chosen on its first call. */
typedef struct {
    clnet_gemm_shape shape;
    char id[CLNET_GEMM_ID_CAP];
    char source;   /* 'e' $CLNET_GEMM, 'p' pinned, 'd' database, 'f' fixed rule */
    char site[80]; /* the first layer that ran it: "conv2 backward" */
    /* gemm.c's own: the candidate, parsed, and its kernels once looked up */
    _Alignas(8) unsigned char choice[96];
    cl_kernel kept[CLNET_GEMM_KEPT];
    int train; /* 1: run by a training pass (not only by probes or evaluation) */
} clnet_gemm_pick;

/* The choices one replica's passes made, a shape each. They are made again
 * (the record empties) when the device's knowledge changed since
 * (clnet_device.gemm_version: pins, the database). */
typedef struct {
    clnet_gemm_pick *picks;
    int count, cap;
    unsigned version; /* the device's gemm_version they were made under */
} clnet_gemm_record;

void clnet_gemm_record_free(clnet_gemm_record *r);
/* How many of r's picks stand on device d (0 after clnet_gemm_forget). */
int clnet_gemm_record_count(const clnet_gemm_record *r, const clnet_device *d);

/* The most scratch (floats) any candidate takes for shape s: a transposed
 * operand and split-K's partial products (cl/gemm.cl), or packed operands
 * (cl/gemm_tiled.cl). Whatever the device chooses fits in it. */
size_t clnet_gemm_work_floats(const clnet_gemm_shape *s);
/* The scratch (floats) of the candidate device d chooses for shape s now
 * (the rules above; nothing runs): what a call of it takes while d's choices
 * stand (d->gemm_version). d NULL: clnet_gemm_work_floats. */
size_t clnet_gemm_chosen_work_floats(const clnet_device *d, const clnet_gemm_shape *s);

/* One GEMM call site of a layer. `record` and `layer` are fixed when the
 * replica is made; the caller sets the rest before each call (clnet_pass_gemm). */
typedef struct {
    clnet_gemm_record *record; /* where its choices are kept (NULL: chosen every call) */
    const char *layer;         /* the node's name, for the record and the tuner */
    int backward;              /* called by a backward pass */
    int train;                 /* by a training pass: what checkpoints record */
    clnet_gemm_scratch scratch;
    /* gemm.c's own: the record's pick of the last call, so that a call with
     * the same shape finds it without searching */
    int pick;
    unsigned version;
} clnet_gemm_site;

/* Opens the device's GEMM side: the candidates' fingerprint, the database's
 * entries for this device, the $CLNET_GEMM override. */
clnet_status clnet_gemm_open(clnet_device *d);

/* C = alpha op(A) op(B) + beta C (gemm_shape.h's clnet_gemm_args), with the
 * candidate the site's record keeps for the shape. */
clnet_status clnet_gemm(clnet_device *d, clnet_gemm_site *site, const clnet_gemm_shape *s,
                        const clnet_gemm_args *g);

/* Every candidate of the device's search space as ids ("clblast",
 * "own-tm8-wg1", ...), fixed order; returns how many (at most cap). */
int clnet_gemm_candidates(const clnet_device *d, char ids[][CLNET_GEMM_ID_CAP], int cap);

/* Runs one candidate, named by id, whatever the rules would pick, with its
 * scratch in `scratch` (NULL: a buffer made for this call). */
clnet_status clnet_gemm_with(clnet_device *d, const char *id, const clnet_gemm_shape *s,
                             const clnet_gemm_scratch *scratch, const clnet_gemm_args *g);

/* The database key of a shape ("gemm NT M=50 N=500 K=676n") and its bucket. */
void clnet_gemm_key(const clnet_gemm_shape *s, char *key, size_t cap, int *bucket);

/* Pins a choice for a key on this device, above the database (a resumed
 * checkpoint's record). An id that is not a candidate is refused. */
clnet_status clnet_gemm_pin(clnet_device *d, const char *key, int bucket, const char *id);

/* Forgets the choices made so far on this device (after the database or
 * pins changed): every record made on it starts again. */
void clnet_gemm_forget(clnet_device *d);

#endif
