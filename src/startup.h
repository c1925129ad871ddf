/* CLNET_STARTUP=1: what a cold start pays, event by event (each program's
 * build and binary read-back, each kernel's first launch at a work-group
 * size), printed to stderr at exit. Off, each call costs one test of a flag
 * the runtime read when it was made (env.h). */
#ifndef CLNET_STARTUP_H
#define CLNET_STARTUP_H

#include "device.h"

/* Whether the report is on for d (CLNET_STARTUP set and not "0" when its
 * runtime was made). */
int clnet_startup_on(const clnet_device *d);

/* Opening the devices of a runtime that read env: `seconds` for `count`
 * of them. */
void clnet_startup_devices(const clnet_env *env, int count, double seconds);

/* A program of `family` with `options` on d: built from source or loaded
 * from clnet's cache (from_cache), then read back for the cache (readback
 * seconds, 0 when it was not). */
void clnet_startup_program(const clnet_device *d, const char *family, const char *options,
                           int from_cache, double build, double readback);

/* Kernel `name` of `family` first launched on d at work-group size local
 * (dims values; NULL: the driver's choice), waited for: `seconds` from
 * enqueueing it on an idle queue to its end. */
void clnet_startup_launch(const clnet_device *d, const char *family, const char *name, int dims,
                          const size_t *local, double seconds);

#endif
