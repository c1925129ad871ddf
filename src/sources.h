/* Kernel sources: every cl/<family>.cl embedded at build time (CMake writes the table). */
#ifndef CLNET_SOURCES_H
#define CLNET_SOURCES_H

#include "clnet.h"

typedef struct {
    const char *family; /* file name without .cl */
    const char *text;
    size_t length;
} clnet_embedded_source;

/* Every cl/<family>.cl file, ended by an entry whose family is NULL. */
extern const clnet_embedded_source clnet_embedded_sources[];

/* The program that holds a kernel of `family` built with `options`: the
 * family's own, or, for a few small families without options, the one
 * program they share (sources.c says which, and what it saves). */
#define CLNET_SHARED_PROGRAM "shared"
const char *clnet_program_of(const char *family, const char *options);

/* The text a program is built from: common.cl, then <family>.cl (for
 * CLNET_SHARED_PROGRAM, each family it holds), each introduced by a #line
 * so build logs name the right file. Reads the files from kernel_dir
 * instead when it is neither NULL nor empty ($CLNET_KERNEL_DIR, as the
 * device's runtime read it: for kernel development). The caller frees *out. */
clnet_status clnet_kernel_source(const char *family, const char *kernel_dir, char **out);

#endif
