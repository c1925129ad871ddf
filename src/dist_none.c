/* The MPI level in a build without MPI: the job is one rank, a bound net
 * gets no group (clnet_dist_create gives NULL), so nothing below the
 * first few calls is ever reached; each says so if it is. CMake compiles
 * this file or dist.c, never both. */
#include "dist.h"
#include "error.h"

#include <string.h>

int clnet_mpi_rank(void) {
    return 0;
}

int clnet_mpi_size(void) {
    return 1;
}

clnet_dist *clnet_dist_world(void) {
    return NULL;
}

clnet_status clnet_mpi_init(int *rank, int *size) {
    int r = 0, n = 1;
    clnet_status s = clnet_job_launched(&n, &r);
    if (rank) *rank = 0;
    if (size) *size = 1;
    if (s != CLNET_OK) return s;
    if (n > 1)
        return clnet_fail(CLNET_ERR_MPI,
                          "this clnet was built without MPI (CLNET_MPI=OFF, or CMake found no "
                          "MPI), but mpirun started it as rank %d of %d: rebuild it with Open MPI "
                          "installed (scripts/deps.sh installs libopenmpi-dev), or run one "
                          "process",
                          r, n);
    return CLNET_OK;
}

void clnet_mpi_finalize(void) {}
void clnet_mpi_abort(int code) {
    (void)code;
}
int clnet_mpi_available(void) {
    return 0;
}

clnet_status clnet_dist_create(clnet_dist **out) {
    *out = NULL;
    return CLNET_OK;
}
void clnet_dist_free(clnet_dist *d) {
    (void)d;
}

#define NO_MPI clnet_fail(CLNET_ERR_INTERNAL, "an MPI call in a build without MPI")
clnet_status clnet_dist_bcast(clnet_dist *d, clnet_lane lane, void *buf, size_t bytes, int root,
                              const char *what) {
    (void)d, (void)lane, (void)buf, (void)bytes, (void)root, (void)what;
    return NO_MPI;
}
clnet_status clnet_dist_allgather(clnet_dist *d, clnet_lane lane, const void *mine, size_t bytes,
                                  void *all, const char *what) {
    (void)d, (void)lane, (void)mine, (void)bytes, (void)all, (void)what;
    return NO_MPI;
}
clnet_status clnet_dist_allgatherv(clnet_dist *d, clnet_lane lane, const void *mine,
                                   const int *bytes, void *all, const char *what) {
    (void)d, (void)lane, (void)mine, (void)bytes, (void)all, (void)what;
    return NO_MPI;
}
clnet_status clnet_dist_sum(clnet_dist *d, clnet_lane lane, double *values, size_t n,
                            const char *what) {
    (void)d, (void)lane, (void)values, (void)n, (void)what;
    return NO_MPI;
}
clnet_status clnet_dist_begin_step(clnet_dist *d, int64_t step) {
    (void)d, (void)step;
    return NO_MPI;
}
clnet_status clnet_dist_send(clnet_dist *d, int to, int tag, const void *buf, size_t bytes,
                             const char *what) {
    (void)d, (void)to, (void)tag, (void)buf, (void)bytes, (void)what;
    return NO_MPI;
}
clnet_status clnet_dist_recv(clnet_dist *d, int from, int tag, void *buf, size_t bytes, size_t *got,
                             const char *what) {
    (void)d, (void)from, (void)tag, (void)buf, (void)bytes, (void)got, (void)what;
    return NO_MPI;
}
clnet_status clnet_dist_poll(clnet_dist *d, int tag, void *buf, size_t bytes, int *from,
                             size_t *got, const char *what) {
    (void)d, (void)tag, (void)buf, (void)bytes, (void)got, (void)what;
    *from = -1;
    return NO_MPI;
}
clnet_status clnet_dist_buckets_prepare(clnet_dist *d, size_t floats, int buckets,
                                        int deterministic) {
    (void)d, (void)floats, (void)buckets, (void)deterministic;
    return NO_MPI;
}
clnet_status clnet_dist_bucket_start(clnet_dist *d, float *data, size_t n, const char *name) {
    (void)d, (void)data, (void)n, (void)name;
    return NO_MPI;
}
int clnet_dist_progress(clnet_dist *d) {
    (void)d;
    return 0;
}
clnet_status clnet_dist_buckets_finish(clnet_dist *d, int64_t step) {
    (void)d, (void)step;
    return NO_MPI;
}
void clnet_dist_get_stats(const clnet_dist *d, clnet_dist_stats *out) {
    (void)d;
    memset(out, 0, sizeof *out);
}
