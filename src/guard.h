/* Buffer guards, a debug mode (CLNET_GUARD=1 in the environment): device
 * code that writes past its memory is caught after the pass that did it.
 *
 * With guards on, every device buffer clnet_buffer_create makes has
 * CLNET_GUARD_FLOATS more floats at its end, holding a known pattern, and the
 * memory plan puts a guard after every tensor of the activation arenas
 * (plan.h). Before each pass of a node the replica fills with the pattern
 * what the pass must not write of the regions it writes (its output, its
 * inputs' gradients, its kept memory, the scratch, past the n samples of the
 * pass up to the end of the region's guard); after the pass it reads them
 * back, and the tails of every buffer of the replica and of the device's
 * scratch, and fails the pass naming the node, the pass, the region and the
 * device when one changed. On a CPU device that memory is host heap, where a
 * sanitizer sees nothing: that is what guards are for.
 *
 * The cost: a fill and a read of those regions and a wait for the queue after
 * every pass (several times slower steps), and 16 floats per sample more per
 * tensor. Off, nothing is filled, read or waited for. */
#ifndef CLNET_GUARD_H
#define CLNET_GUARD_H

#include "device.h"

#define CLNET_GUARD_FLOATS 64

/* 1 when CLNET_GUARD=1 (as d's runtime read it, when it was made). */
int clnet_guard_on(const clnet_device *d);

/* Floats [from, to) of mem that must hold the pattern after a pass: the
 * region begins at base, and the pass may use [base, from). */
typedef struct {
    cl_mem mem;
    size_t base, from, to;
    const char *what; /* "its output", "the activation arena", ... */
} clnet_guard_region;

/* Fills each region with the pattern (queued, not waited for). */
clnet_status clnet_guard_fill(clnet_device *d, const clnet_guard_region *r, int count);

/* The last CLNET_GUARD_FLOATS floats of a buffer made by
 * clnet_buffer_create: its own guard, in *out. */
clnet_status clnet_guard_tail(cl_mem mem, const char *what, clnet_guard_region *out);

/* Waits for the queue and reads every region back; when any no longer holds
 * the pattern, fails with CLNET_ERR_GUARD naming each such region, where it
 * changed and `where` (the pass; the caller names the device). */
clnet_status clnet_guard_check(clnet_device *d, const clnet_guard_region *r, int count,
                               const char *where);

#endif
