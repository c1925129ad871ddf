/* CLNET_KERNEL_LOG=DIR: the kernels a run launches, for the offline GPU
 * check (scripts/gpu_offline.py compiles each program with its options for
 * NVIDIA and AMD and reads the launched kernels' registers and memory). */
#ifndef CLNET_KERNEL_LOG_H
#define CLNET_KERNEL_LOG_H

#include "device.h"

#include <stddef.h>

/* Kernel `name` of kernel file `family` built with `options` first launched
 * on d at work-group size local (dims values; NULL: the driver's choice):
 * appends "program, options, kernel, size" (tab
 * separated; the size "16x16x1" or "-") to DIR/kernels.tsv, and the first
 * time this process sees the program, its composed source to
 * DIR/<program>.cl. Does nothing without CLNET_KERNEL_LOG; a file that
 * cannot be written is said once on stderr (a test hook: a run never fails
 * for it). */
void clnet_kernel_log(const clnet_device *d, const char *family, const char *options,
                      const char *name, int dims, const size_t *local);

#endif
