/* The one reader of the environment (env.h). */
#include "env.h"
#include "alloc.h"
#include "error.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The variables kept as text, and the field each goes to. */
static const struct {
    const char *name;
    size_t field;
} texts[] = {
    {"CLNET_DEVICES", offsetof(clnet_env, devices)},
    {"CLNET_DATA_DIR", offsetof(clnet_env, data_dir)},
    {"CLNET_CACHE", offsetof(clnet_env, cache)},
    {"CLNET_CACHE_DIR", offsetof(clnet_env, cache_dir)},
    {"XDG_CACHE_HOME", offsetof(clnet_env, xdg_cache_home)},
    {"HOME", offsetof(clnet_env, home)},
    {"CLNET_KERNEL_DIR", offsetof(clnet_env, kernel_dir)},
    {"CLNET_GEMM", offsetof(clnet_env, gemm)},
    {"CLNET_CONV", offsetof(clnet_env, conv)},
    {"CLNET_CONV_TILE", offsetof(clnet_env, conv_tile)},
    {"CLNET_TUNE_COLD_MB", offsetof(clnet_env, tune_cold_mb)},
    {"CLNET_THROTTLE", offsetof(clnet_env, throttle)},
    {"CLNET_FAULT", offsetof(clnet_env, fault)},
    {"CLNET_SAVE_PAUSE", offsetof(clnet_env, save_pause)},
    {"CLNET_POSE", offsetof(clnet_env, pose)},
    {"CLNET_KERNEL_LOG", offsetof(clnet_env, kernel_log)},
};
enum { TEXTS = sizeof texts / sizeof *texts };

/* A launcher's variables: the size, then the rank. */
typedef const char *const launcher_vars[2];

/* The first pair whose size is set and 1 or more (and, with need_rank,
 * whose rank is set too) gives *size and *rank (0 when its rank is unset);
 * 0 of 1 when none does. */
static void launcher(launcher_vars *vars, int count, int need_rank, int *rank, int *size) {
    for (int i = 0; i < count; i++) {
        const char *n = getenv(vars[i][0]), *r = getenv(vars[i][1]);
        if (n && atoi(n) >= 1 && (r || !need_rank)) {
            *size = atoi(n);
            *rank = r ? atoi(r) : 0;
            return;
        }
    }
    *size = 1;
    *rank = 0;
}

/* Open MPI's and a PMI launcher's: the job; then the ranks on this machine. */
static launcher_vars job_vars[] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
                                   {"PMI_SIZE", "PMI_RANK"}};
static launcher_vars local_vars[] = {{"OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
                                     {"MPI_LOCALNRANKS", "MPI_LOCALRANKID"}};

/* The flags, as the table in clnet.h words them. */
static void read_flags(clnet_env *e) {
    const char *v = getenv("CLNET_GUARD");
    e->guard = v && strcmp(v, "1") == 0;
    v = getenv("CLNET_PROFILE");
    e->profile = v && *v && strcmp(v, "0") != 0;
    v = getenv("CLNET_STARTUP");
    e->startup = v && *v && strcmp(v, "0") != 0;
    v = getenv("CLNET_MICRO_BATCH");
    e->micro_batch = v ? atoi(v) : 0;
    v = getenv("CLNET_OVERLAP");
    e->overlap = !(v && strcmp(v, "off") == 0);
    v = getenv("CLNET_MPI_OVERLAP");
    e->mpi_overlap = !v || atoi(v) != 0;
    v = getenv("CLNET_FUSE");
    e->fuse = !(v && strcmp(v, "off") == 0);
    v = getenv("CLNET_TUNE");
    e->tune = !(v && (strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0));
    launcher(job_vars, (int)(sizeof job_vars / sizeof *job_vars), 0, &e->job_rank, &e->job_size);
    launcher(local_vars, (int)(sizeof local_vars / sizeof *local_vars), 1, &e->local_rank,
             &e->local_size);
}

clnet_status clnet_env_read(clnet_env *e) {
    const char *value[TEXTS];
    size_t bytes = 0;
    memset(e, 0, sizeof *e);
    /* each variable read once: the copies are sized by what was read */
    for (int i = 0; i < TEXTS; i++) {
        value[i] = getenv(texts[i].name);
        if (value[i]) bytes += strlen(value[i]) + 1;
    }
    if (bytes && !(e->copies = clnet_malloc(bytes)))
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory reading the environment");
    char *at = e->copies;
    for (int i = 0; i < TEXTS; i++) {
        if (!value[i]) continue;
        size_t n = strlen(value[i]) + 1;
        memcpy(at, value[i], n);
        *(const char **)((char *)e + texts[i].field) = at;
        at += n;
    }
    read_flags(e);
    return CLNET_OK;
}

void clnet_env_free(clnet_env *e) {
    free(e->copies);
    memset(e, 0, sizeof *e);
}
