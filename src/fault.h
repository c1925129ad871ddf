/* Test hooks: what the tests make happen inside a run, parsed from a
 * snapshot of the environment (env.h) taken once: when a trainer binds, and
 * at each save for its pause; asked through the functions below, the only
 * place in src/ that knows them:
 *   CLNET_THROTTLE=INDEX:FACTOR[,...]  device INDEX (as `clnet devices` numbers
 *       it) behaves FACTOR times slower: after each share it waits FACTOR-1
 *       times the time its share took.
 *   CLNET_FAULT=INDEX:STEP[:POINT][,...]  device INDEX fails in optimizer
 *       step STEP (0-based; or the first after it that it takes part in), at
 *       POINT: start (before its work, the default), kernels (after its
 *       forward pass ran), transfer (once its first gradient bucket is on its
 *       way to the host) or reduce (while the host adds its first bucket); or,
 *       with drift, does not fail but gets its first parameter changed after
 *       the step (--check-replicas finds it). Each fires once.
 *   CLNET_SAVE_PAUSE=MS  a save sleeps half-way through its file, so that a
 *       test can kill the process inside one (tests/kill_test.sh).
 * and the loader's failure, which a test arms through its loader
 * (clnet_loader_inject_failure, data.h): clnet_loader_fault below. */
#ifndef CLNET_FAULT_H
#define CLNET_FAULT_H

#include "clnet.h"
#include "env.h"

#include <stdint.h>

/* Where CLNET_FAULT makes a device fail within its step. */
typedef enum {
    CLNET_FAULT_START,    /* before any work */
    CLNET_FAULT_KERNELS,  /* after its forward pass ran */
    CLNET_FAULT_TRANSFER, /* once its first gradient bucket is on its way */
    CLNET_FAULT_REDUCE,   /* while the host adds its first bucket */
    CLNET_FAULT_DRIFT,    /* no failure: after the step its first parameter changes */
} clnet_fault_point;

/* The hooks of a trainer's replicas. */
typedef struct {
    int n;            /* replicas */
    double *throttle; /* per replica; 1 = none */
    int64_t *step;    /* per replica: the step its fault fires in; -1 = none */
    int *point;       /* per replica: where in the step (clnet_fault_point) */
} clnet_faults;

/* env's CLNET_THROTTLE and CLNET_FAULT for n replicas; device_index[i] is
 * replica i's number in `clnet devices`; a malformed variable is an error
 * naming it. */
clnet_status clnet_faults_init(clnet_faults *f, const clnet_env *env, const int *device_index,
                               int n);
void clnet_faults_free(clnet_faults *f);

/* Whether replica i is to fail in optimizer step `step` at `point`: the
 * first step at or after the one named (async mode: the update a device
 * pulled at, which need not be every one). A fault fires once (the step
 * tried again goes through). */
int clnet_fault(clnet_faults *f, int i, int64_t step, clnet_fault_point point);

/* Replica i's slowdown factor (1: none), and the wait after its work of
 * `seconds` that makes it: FACTOR - 1 times as long. */
double clnet_throttle_factor(const clnet_faults *f, int i);
void clnet_throttle_wait(const clnet_faults *f, int i, double seconds);

/* A loader's failure: armed (by clnet_loader_inject_failure), the batch at
 * (epoch, position) fails to prepare, once. Its loader's lock guards it. */
typedef struct {
    int armed, epoch;
    int64_t position;
} clnet_loader_fault;

void clnet_loader_fault_arm(clnet_loader_fault *f, int epoch, int64_t position);
/* Whether the batch at (epoch, position) is to fail; disarms it when so. */
int clnet_loader_fault_fires(clnet_loader_fault *f, int epoch, int64_t position);

/* env's CLNET_SAVE_PAUSE sleep, half-way through a save (none when unset). */
void clnet_save_pause(const clnet_env *env);

#endif
