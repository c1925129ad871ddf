/* The environment the library reads, in one place: every variable of the
 * table that closes include/clnet.h (and the launchers' and the cache
 * folder's), read by clnet_env_read into one snapshot. Nothing else in src/
 * calls getenv (src/cli/, a client of clnet.h, reads its own), but error.c
 * for CLNET_DEBUG: a failure has no object whose snapshot it could read, and
 * this module reports its own failures through error.c.
 *
 * Each object takes its snapshot when it starts, and keeps to it: a runtime
 * at clnet_runtime_create (rt->env, which its devices point at: device
 * choice, the kernel cache, kernel sources, CLNET_GEMM, CLNET_CONV, guards,
 * the profile and the start-up report), a trainer at binding (micro-batch
 * cap, overlaps, the test hooks), and the public calls that start on their
 * own (clnet_net_tune, clnet_dataset_load, clnet_mpi_init, a save's pause).
 * Not one copy for the whole process: the tests change the environment
 * between cases and make a new object for each.
 *
 * Flags are parsed here, as the table in clnet.h describes them; values that
 * are paths, or that their reader checks and quotes in its errors, are kept
 * as text (NULL when unset), copied, so a later setenv cannot touch them. */
#ifndef CLNET_ENV_H
#define CLNET_ENV_H

#include "clnet.h"

typedef struct {
    /* text, parsed where it is used */
    const char *devices;        /* CLNET_DEVICES: the spec when a program gives none */
    const char *data_dir;       /* CLNET_DATA_DIR */
    const char *cache;          /* CLNET_CACHE: off, 0, all */
    const char *cache_dir;      /* CLNET_CACHE_DIR */
    const char *xdg_cache_home; /* XDG_CACHE_HOME: the cache's parent, CLNET_CACHE_DIR unset */
    const char *home;           /* HOME: else ~/.cache/clnet */
    const char *kernel_dir;     /* CLNET_KERNEL_DIR: .cl files instead of the embedded ones */
    const char *gemm;           /* CLNET_GEMM: auto, own, clblast */
    const char *conv;           /* CLNET_CONV: an algorithm, or one a pass */
    const char *conv_tile;      /* CLNET_CONV_TILE: the implicit algorithm's GPU tile */
    const char *tune_cold_mb;   /* CLNET_TUNE_COLD_MB */
    const char *throttle;       /* CLNET_THROTTLE (fault.c parses the test hooks) */
    const char *fault;          /* CLNET_FAULT */
    const char *save_pause;     /* CLNET_SAVE_PAUSE */
    const char *pose;           /* CLNET_POSE: gpu (runtime.c) */
    const char *kernel_log;     /* CLNET_KERNEL_LOG: a folder (kernel_log.c) */
    /* flags and numbers */
    int guard;       /* CLNET_GUARD=1 */
    int profile;     /* CLNET_PROFILE set, not empty and not 0 */
    int startup;     /* CLNET_STARTUP set, not empty and not 0 */
    int micro_batch; /* CLNET_MICRO_BATCH as a number; 0 when unset */
    int overlap;     /* 0 with CLNET_OVERLAP=off */
    int mpi_overlap; /* 0 with CLNET_MPI_OVERLAP a number that is 0 */
    int fuse;        /* 0 with CLNET_FUSE=off */
    int tune;        /* 0 with CLNET_TUNE=off (any case) or 0: nothing may be timed */
    /* Where a launcher (mpirun, or a PMI one) put this process: its rank
     * and the job's size, and its rank among the ranks on this machine and
     * their number; 0 of 1 when none did. */
    int job_rank, job_size;
    int local_rank, local_size;
    char *copies; /* owns the text above */
} clnet_env;

/* Reads the environment into *e (fails only out of memory, *e then empty);
 * clnet_env_free frees it, and a zeroed clnet_env too. */
clnet_status clnet_env_read(clnet_env *e);
void clnet_env_free(clnet_env *e);

#endif
