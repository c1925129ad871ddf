/* The MPI level: joining the job mpirun started, and the few collectives
 * the coordinator needs across ranks.
 *
 * Every wait is a loop of MPI_Test under one lock (MPI_THREAD_SERIALIZED:
 * the step's thread and a device thread may both call MPI), with a
 * deadline: a rank that stopped answering turns into a message, not a
 * hang. Open MPI 4.1 moves a non-blocking collective only inside MPI
 * calls, so the step calls clnet_dist_progress while its devices still run
 * the backward pass: that is what overlaps the buckets' reduction with it. */
#include "dist.h"
#include "alloc.h"
#include "clock.h"
#include "error.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

/* The job, as clnet_mpi_init found it. */
static struct {
    int rank, size;
    int started; /* clnet called MPI_Init (and so calls MPI_Finalize) */
    clnet_dist *world;
} job = {0, 1, 0, NULL};

clnet_dist *clnet_dist_world(void) {
    return job.world;
}

int clnet_mpi_rank(void) {
    return job.rank;
}

int clnet_mpi_size(void) {
    return job.size;
}

/* A gradient bucket in flight. */
typedef struct {
    MPI_Request request;
    float *data;     /* (n) this rank's sum, then everyone's */
    float *gathered; /* deterministic: (size, n) every rank's sum */
    size_t n;
    const char *name;
    int done;
} bucket;

struct clnet_dist {
    MPI_Comm comm[CLNET_LANES];
    int rank, size;
    double *tmp[CLNET_LANES]; /* clnet_dist_sum's room per lane, grown on first use */
    size_t tmp_cap[CLNET_LANES];
    /* the buckets of the step in flight */
    int deterministic;
    bucket *buckets;
    int nbuckets, cap;
    float *scratch; /* deterministic: (size, floats) */
    size_t scratch_used, scratch_cap;
    double first_start;
    clnet_dist_stats stats;
    /* Where every rank has got to, so that a timeout names the ranks that
     * did not arrive: each rank tells the others (lane ARRIVALS) the last
     * training step it began and how many waits of the step's thread
     * (lanes CONTROL and BUCKETS, the same calls in the same order on every
     * rank) it has entered. */
    int64_t step, entered;
    int64_t (*heard)[2];      /* (size) each rank's last (step, entered) heard of */
    int64_t (*inbox)[2];      /* (size) */
    int64_t (*outbox)[2];     /* (size) */
    MPI_Request *recv, *send; /* (size) */
};

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *LANE_NAMES[CLNET_LANES] = {"control", "buckets", "batch statistics",
                                              "parameter server", "arrivals"};

static clnet_status mpi_fail(int err, const char *call, const char *what) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(err, text, &len);
    return clnet_fail(CLNET_ERR_MPI, "rank %d of %d: %s: %s failed: %s", job.rank, job.size, what,
                      call, text);
}

#define MPI_CALL(call, what)                                                                       \
    do {                                                                                           \
        pthread_mutex_lock(&mpi_lock);                                                             \
        int mpi_err_ = (call);                                                                     \
        pthread_mutex_unlock(&mpi_lock);                                                           \
        if (mpi_err_ != MPI_SUCCESS) return mpi_fail(mpi_err_, #call, what);                       \
    } while (0)

/* ---- arrivals: who is where ---------------------------------------------------------- */

/* Takes what the other ranks told, and sends this rank's place to any rank
 * that has not had it yet (one message in flight per rank). Under mpi_lock. */
static void listen_locked(clnet_dist *d) {
    if (!d || !d->recv) return;
    for (int r = 0; r < d->size; r++) {
        if (r == d->rank) continue;
        int done = 0;
        MPI_Comm c = d->comm[CLNET_LANE_ARRIVALS];
        while (MPI_Test(&d->recv[r], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
            memcpy(d->heard[r], d->inbox[r], sizeof d->heard[r]);
            if (MPI_Irecv(d->inbox[r], 2, MPI_INT64_T, r, 0, c, &d->recv[r]) != MPI_SUCCESS) {
                d->recv[r] = MPI_REQUEST_NULL;
                break;
            }
        }
        done = d->send[r] == MPI_REQUEST_NULL;
        if (!done) MPI_Test(&d->send[r], &done, MPI_STATUS_IGNORE);
        if (done && (d->outbox[r][0] != d->step || d->outbox[r][1] != d->entered)) {
            d->outbox[r][0] = d->step;
            d->outbox[r][1] = d->entered;
            if (MPI_Isend(d->outbox[r], 2, MPI_INT64_T, r, 0, c, &d->send[r]) != MPI_SUCCESS)
                d->send[r] = MPI_REQUEST_NULL;
        }
    }
}

static void listen(clnet_dist *d) {
    pthread_mutex_lock(&mpi_lock);
    listen_locked(d);
    pthread_mutex_unlock(&mpi_lock);
}

/* The step's thread enters a wait on `lane`: one more, told to the others. */
static void enter(clnet_dist *d, clnet_lane lane) {
    if (!d || !d->recv || (lane != CLNET_LANE_CONTROL && lane != CLNET_LANE_BUCKETS)) return;
    pthread_mutex_lock(&mpi_lock);
    d->entered++;
    listen_locked(d);
    pthread_mutex_unlock(&mpi_lock);
}

clnet_status clnet_dist_begin_step(clnet_dist *d, int64_t step) {
    if (!d->recv) { /* the first step: the mailboxes */
        d->heard = clnet_calloc((size_t)d->size, sizeof *d->heard);
        d->inbox = clnet_calloc((size_t)d->size, sizeof *d->inbox);
        d->outbox = clnet_calloc((size_t)d->size, sizeof *d->outbox);
        MPI_Request *recv = clnet_calloc((size_t)d->size, sizeof *recv);
        d->send = clnet_calloc((size_t)d->size, sizeof *d->send);
        if (!d->heard || !d->inbox || !d->outbox || !recv || !d->send) {
            free(recv);
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
        }
        for (int r = 0; r < d->size; r++) {
            recv[r] = d->send[r] = MPI_REQUEST_NULL;
            d->heard[r][0] = d->heard[r][1] = -1;
            d->outbox[r][0] = d->outbox[r][1] = -1;
        }
        d->recv = recv; /* clnet_dist_free cancels what was posted */
        for (int r = 0; r < d->size; r++)
            if (r != d->rank)
                MPI_CALL(MPI_Irecv(d->inbox[r], 2, MPI_INT64_T, r, 0, d->comm[CLNET_LANE_ARRIVALS],
                                   &recv[r]),
                         "listening for the other ranks' progress");
    }
    pthread_mutex_lock(&mpi_lock);
    d->step = step;
    listen_locked(d);
    pthread_mutex_unlock(&mpi_lock);
    return CLNET_OK;
}

/* The ranks that have not reached this rank's place, into text ("" when
 * every rank has, or nothing is known). */
static void name_late(clnet_dist *d, char *text, size_t size) {
    size_t used = 0;
    text[0] = 0;
    if (!d || !d->recv) return;
    listen(d);
    for (int r = 0; r < d->size && used + 1 < size; r++) {
        const int64_t *h = d->heard[r];
        if (r == d->rank || h[1] >= d->entered) continue;
        char where[96];
        if (h[1] < 0)
            snprintf(where, sizeof where, "not heard from since the net was bound");
        else if (h[0] < d->step)
            snprintf(where, sizeof where, "last heard from in step %lld", (long long)h[0]);
        else
            snprintf(where, sizeof where, "in step %lld, %lld exchange%s behind", (long long)h[0],
                     (long long)(d->entered - h[1]), d->entered - h[1] > 1 ? "s" : "");
        int n = snprintf(text + used, size - used, "%srank %d (%s)", used ? ", " : "", r, where);
        if (n < 0) break;
        used += (size_t)n;
    }
}

static clnet_status timed_out(clnet_dist *d, clnet_lane lane, const char *what, double waited) {
    char late[512] = "";
    if (lane == CLNET_LANE_CONTROL || lane == CLNET_LANE_BUCKETS) name_late(d, late, sizeof late);
    if (late[0])
        return clnet_fail(
            CLNET_ERR_MPI,
            "rank %d of %d: %s: these ranks did not arrive within %.0f s (--mpi-timeout): %s",
            job.rank, job.size, what, waited, late);
    return clnet_fail(CLNET_ERR_MPI,
                      "rank %d of %d: %s: the other ranks did not arrive within %.0f s "
                      "(--mpi-timeout): one stopped or hangs (Open MPI names a rank that died)",
                      job.rank, job.size, what, waited);
}

/* Tests *request until it completes or the deadline passes; spins a
 * little first (short collectives finish in microseconds), then naps. */
static clnet_status wait_request(clnet_dist *d, clnet_lane lane, MPI_Request *request,
                                 MPI_Status *st, const char *what) {
    double start = clnet_now();
    enter(d, lane);
    for (int spins = 0;; spins++) {
        int done = 0;
        MPI_CALL(MPI_Test(request, &done, st), what);
        if (done) return CLNET_OK;
        double waited = clnet_now() - start;
        if (waited > clnet_dist_timeout()) return timed_out(d, lane, what, waited);
        if (spins > 200) {
            if (spins % 64 == 0) listen(d);
            clnet_sleep(50e-6);
        }
    }
}

int clnet_mpi_available(void) {
    return 1;
}

static clnet_status dist_make(clnet_dist **out, MPI_Comm parent);

clnet_status clnet_mpi_init(int *rank, int *size) {
    clnet_status status = CLNET_OK;
    int r = 0, n = 1, initialized = 0, provided = 0;
    clnet_status launched = clnet_job_launched(&n, &r);
    if (rank) *rank = job.rank;
    if (size) *size = job.size;
    if (job.world) return CLNET_OK;                      /* joined already */
    if (launched != CLNET_OK || n <= 1) return launched; /* unreadable, or a plain run */
    MPI_Initialized(&initialized);
    if (!initialized) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            return clnet_fail(CLNET_ERR_MPI, "MPI_Init_thread failed (rank %d of %d)", r, n);
        job.started = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_SERIALIZED)
        FAIL(CLNET_ERR_MPI,
             "the MPI library gives thread level %d, and clnet needs MPI_THREAD_SERIALIZED: "
             "the step's thread and a device thread may both call MPI",
             provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &job.size);
    TRY(dist_make(&job.world, MPI_COMM_WORLD));
    if (rank) *rank = job.rank;
    if (size) *size = job.size;
cleanup:
    if (status != CLNET_OK) clnet_mpi_finalize();
    return status;
}

void clnet_mpi_finalize(void) {
    int finalized = 0;
    clnet_dist_free(job.world);
    job.world = NULL;
    if (job.started && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
    job.started = 0;
    job.rank = 0;
    job.size = 1;
}

void clnet_mpi_abort(int code) {
    if (job.size > 1) MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
}

static clnet_status dist_make(clnet_dist **out, MPI_Comm parent) {
    clnet_status status = CLNET_OK;
    clnet_dist *d = clnet_calloc(1, sizeof *d);
    *out = NULL;
    if (!d) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < CLNET_LANES; k++) d->comm[k] = MPI_COMM_NULL;
    for (int k = 0; k < CLNET_LANES; k++) {
        /* MPI_Comm_dup is collective: every rank makes its lanes in this order */
        MPI_Comm c = MPI_COMM_NULL;
        pthread_mutex_lock(&mpi_lock);
        int err = MPI_Comm_dup(parent, &c);
        if (err == MPI_SUCCESS) err = MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        pthread_mutex_unlock(&mpi_lock);
        if (err != MPI_SUCCESS) {
            status = mpi_fail(err, "MPI_Comm_dup", LANE_NAMES[k]);
            goto cleanup;
        }
        d->comm[k] = c;
    }
    MPI_Comm_rank(d->comm[0], &d->rank);
    MPI_Comm_size(d->comm[0], &d->size);
    *out = d;
    d = NULL;
cleanup:
    clnet_dist_free(d);
    return status;
}

clnet_status clnet_dist_create(clnet_dist **out) {
    *out = NULL;
    if (!job.world) return CLNET_OK;
    return dist_make(out, job.world->comm[CLNET_LANE_CONTROL]);
}

void clnet_dist_free(clnet_dist *d) {
    if (!d) return;
    for (int r = 0; d->recv && r < d->size; r++) {
        pthread_mutex_lock(&mpi_lock);
        if (d->recv[r] != MPI_REQUEST_NULL) {
            MPI_Cancel(&d->recv[r]);
            MPI_Wait(&d->recv[r], MPI_STATUS_IGNORE);
        }
        if (d->send[r] != MPI_REQUEST_NULL) MPI_Request_free(&d->send[r]);
        pthread_mutex_unlock(&mpi_lock);
    }
    free(d->heard), free(d->inbox), free(d->outbox), free(d->recv), free(d->send);
    for (int k = 0; k < CLNET_LANES; k++) {
        if (d->comm[k] != MPI_COMM_NULL) {
            pthread_mutex_lock(&mpi_lock);
            MPI_Comm_free(&d->comm[k]);
            pthread_mutex_unlock(&mpi_lock);
        }
        free(d->tmp[k]);
    }
    free(d->buckets);
    free(d->scratch);
    free(d);
}

/* MPI counts are ints: large transfers go in pieces of this many bytes. */
#define PIECE ((size_t)1 << 30)

clnet_status clnet_dist_bcast(clnet_dist *d, clnet_lane lane, void *buf, size_t bytes, int root,
                              const char *what) {
    for (size_t done = 0; done < bytes || done == 0; done += PIECE) {
        size_t n = bytes - done < PIECE ? bytes - done : PIECE;
        MPI_Request request;
        MPI_CALL(MPI_Ibcast((char *)buf + done, (int)n, MPI_BYTE, root, d->comm[lane], &request),
                 what);
        clnet_status s = wait_request(d, lane, &request, MPI_STATUS_IGNORE, what);
        if (s != CLNET_OK || bytes == 0) return s;
    }
    return CLNET_OK;
}

clnet_status clnet_dist_allgather(clnet_dist *d, clnet_lane lane, const void *mine, size_t bytes,
                                  void *all, const char *what) {
    if (bytes > INT_MAX) return clnet_fail(CLNET_ERR_INTERNAL, "%s: %zu bytes", what, bytes);
    MPI_Request request;
    MPI_CALL(MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, d->comm[lane],
                            &request),
             what);
    return wait_request(d, lane, &request, MPI_STATUS_IGNORE, what);
}

clnet_status clnet_dist_allgatherv(clnet_dist *d, clnet_lane lane, const void *mine,
                                   const int *bytes, void *all, const char *what) {
    int displs[CLNET_MAX_DEVICES];
    long long off = 0;
    if (d->size > CLNET_MAX_DEVICES) /* a bound net refuses more ranks than this */
        return clnet_fail(CLNET_ERR_INTERNAL, "%s: %d ranks", what, d->size);
    for (int r = 0; r < d->size; r++) {
        displs[r] = (int)off;
        off += bytes[r];
    }
    if (off > INT_MAX) return clnet_fail(CLNET_ERR_INTERNAL, "%s: %lld bytes in all", what, off);
    MPI_Request request;
    MPI_CALL(MPI_Iallgatherv(mine ? mine : MPI_IN_PLACE, bytes[d->rank], MPI_BYTE, all, bytes,
                             displs, MPI_BYTE, d->comm[lane], &request),
             what);
    return wait_request(d, lane, &request, MPI_STATUS_IGNORE, what);
}

clnet_status clnet_dist_sum(clnet_dist *d, clnet_lane lane, double *values, size_t n,
                            const char *what) {
    size_t need = (size_t)d->size * n;
    if (need > d->tmp_cap[lane]) {
        double *p = clnet_realloc(d->tmp[lane], need * sizeof(double));
        if (!p) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
        d->tmp[lane] = p;
        d->tmp_cap[lane] = need;
    }
    double *all = d->tmp[lane];
    clnet_status s = clnet_dist_allgather(d, lane, values, n * sizeof(double), all, what);
    if (s != CLNET_OK) return s;
    memcpy(values, all, n * sizeof(double));
    for (int r = 1; r < d->size; r++)
        for (size_t i = 0; i < n; i++) values[i] += all[(size_t)r * n + i];
    return CLNET_OK;
}

/* ---- point to point ------------------------------------------------------------------- */

clnet_status clnet_dist_send(clnet_dist *d, int to, int tag, const void *buf, size_t bytes,
                             const char *what) {
    if (bytes > INT_MAX) return clnet_fail(CLNET_ERR_INTERNAL, "%s: %zu bytes", what, bytes);
    MPI_Request request;
    MPI_CALL(MPI_Isend(buf, (int)bytes, MPI_BYTE, to, tag, d->comm[CLNET_LANE_SERVER], &request),
             what);
    return wait_request(d, CLNET_LANE_SERVER, &request, MPI_STATUS_IGNORE, what);
}

clnet_status clnet_dist_recv(clnet_dist *d, int from, int tag, void *buf, size_t bytes, size_t *got,
                             const char *what) {
    if (bytes > INT_MAX) return clnet_fail(CLNET_ERR_INTERNAL, "%s: %zu bytes", what, bytes);
    MPI_Request request;
    MPI_Status st;
    MPI_CALL(MPI_Irecv(buf, (int)bytes, MPI_BYTE, from, tag, d->comm[CLNET_LANE_SERVER], &request),
             what);
    clnet_status s = wait_request(d, CLNET_LANE_SERVER, &request, &st, what);
    if (s != CLNET_OK || !got) return s;
    int count = 0;
    MPI_CALL(MPI_Get_count(&st, MPI_BYTE, &count), what);
    *got = (size_t)count;
    return CLNET_OK;
}

clnet_status clnet_dist_poll(clnet_dist *d, int tag, void *buf, size_t bytes, int *from,
                             size_t *got, const char *what) {
    MPI_Message message;
    MPI_Status st;
    int found = 0, count = 0, err;
    *from = -1;
    /* probe and take as one: another thread may not take it in between */
    pthread_mutex_lock(&mpi_lock);
    err = MPI_Improbe(MPI_ANY_SOURCE, tag, d->comm[CLNET_LANE_SERVER], &found, &message, &st);
    if (err == MPI_SUCCESS && found) err = MPI_Get_count(&st, MPI_BYTE, &count);
    if (err == MPI_SUCCESS && found && (size_t)count > bytes) {
        pthread_mutex_unlock(&mpi_lock);
        return clnet_fail(CLNET_ERR_MPI,
                          "rank %d of %d: %s: a message of %d bytes from rank %d, "
                          "expected at most %zu",
                          job.rank, job.size, what, count, st.MPI_SOURCE, bytes);
    }
    if (err == MPI_SUCCESS && found) err = MPI_Mrecv(buf, count, MPI_BYTE, &message, &st);
    pthread_mutex_unlock(&mpi_lock);
    if (err != MPI_SUCCESS) return mpi_fail(err, "MPI_Improbe/MPI_Mrecv", what);
    if (found) *from = st.MPI_SOURCE, *got = (size_t)count;
    return CLNET_OK;
}

/* ---- buckets -------------------------------------------------------------------------- */

clnet_status clnet_dist_buckets_prepare(clnet_dist *d, size_t floats, int buckets,
                                        int deterministic) {
    d->deterministic = deterministic;
    if (buckets > d->cap) {
        bucket *b = clnet_realloc(d->buckets, (size_t)buckets * sizeof *b);
        if (!b) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
        d->buckets = b;
        d->cap = buckets;
    }
    size_t need = deterministic ? (size_t)d->size * floats : 0;
    if (need > d->scratch_cap) {
        float *p = clnet_realloc(d->scratch, need * sizeof(float));
        if (!p)
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY,
                              "out of memory for %d ranks' copies of %zu gradients "
                              "(--deterministic sums them in rank order)",
                              d->size, floats);
        d->scratch = p;
        d->scratch_cap = need;
    }
    d->nbuckets = 0;
    d->scratch_used = 0;
    return CLNET_OK;
}

clnet_status clnet_dist_bucket_start(clnet_dist *d, float *data, size_t n, const char *name) {
    if (d->nbuckets == d->cap || n > INT_MAX ||
        (d->deterministic && d->scratch_used + (size_t)d->size * n > d->scratch_cap))
        return clnet_fail(CLNET_ERR_INTERNAL, "bucket '%s' has no room", name);
    bucket *b = &d->buckets[d->nbuckets];
    *b = (bucket){.data = data, .n = n, .name = name};
    if (d->nbuckets++ == 0) d->first_start = clnet_now();
    if (d->deterministic) {
        b->gathered = d->scratch + d->scratch_used;
        d->scratch_used += (size_t)d->size * n;
        MPI_CALL(MPI_Iallgather(data, (int)n, MPI_FLOAT, b->gathered, (int)n, MPI_FLOAT,
                                d->comm[CLNET_LANE_BUCKETS], &b->request),
                 name);
    } else {
        MPI_CALL(MPI_Iallreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM,
                                d->comm[CLNET_LANE_BUCKETS], &b->request),
                 name);
    }
    d->stats.bytes += n * sizeof(float);
    return CLNET_OK;
}

/* Tests every bucket in flight; a finished deterministic one is summed in
 * rank order. Returns the buckets still in flight, or -1 on a failure
 * (recorded). */
static int test_buckets(clnet_dist *d) {
    int left = 0;
    for (int k = 0; k < d->nbuckets; k++) {
        bucket *b = &d->buckets[k];
        if (b->done) continue;
        int done = 0;
        pthread_mutex_lock(&mpi_lock);
        int err = MPI_Test(&b->request, &done, MPI_STATUS_IGNORE);
        pthread_mutex_unlock(&mpi_lock);
        if (err != MPI_SUCCESS) {
            mpi_fail(err, "MPI_Test", b->name);
            return -1;
        }
        if (!done) {
            left++;
            continue;
        }
        b->done = 1;
        if (d->deterministic) {
            memcpy(b->data, b->gathered, b->n * sizeof(float));
            for (int r = 1; r < d->size; r++) {
                const float *v = b->gathered + (size_t)r * b->n;
                for (size_t i = 0; i < b->n; i++) b->data[i] += v[i];
            }
        }
    }
    return left;
}

int clnet_dist_progress(clnet_dist *d) {
    return d && d->nbuckets ? test_buckets(d) > 0 : 0;
}

clnet_status clnet_dist_buckets_finish(clnet_dist *d, int64_t step) {
    double start = clnet_now();
    enter(d, CLNET_LANE_BUCKETS);
    for (int spins = 0;; spins++) {
        int left = test_buckets(d);
        if (left < 0) return CLNET_ERR_MPI;
        if (left == 0) break;
        double waited = clnet_now() - start;
        if (waited > clnet_dist_timeout()) {
            const char *name = "?";
            for (int k = d->nbuckets - 1; k >= 0; k--)
                if (!d->buckets[k].done) name = d->buckets[k].name;
            char what[160];
            snprintf(what, sizeof what, "summing the gradient of layer '%s' in step %lld", name,
                     (long long)step);
            return timed_out(d, CLNET_LANE_BUCKETS, what, waited);
        }
        if (spins > 200) {
            if (spins % 64 == 0) listen(d);
            clnet_sleep(50e-6);
        }
    }
    double end = clnet_now();
    d->stats.steps++;
    d->stats.seconds_exposed += end - start;
    if (d->nbuckets) d->stats.seconds_inflight += end - d->first_start;
    d->nbuckets = 0;
    d->scratch_used = 0;
    return CLNET_OK;
}

void clnet_dist_get_stats(const clnet_dist *d, clnet_dist_stats *out) {
    memset(out, 0, sizeof *out);
    if (d) *out = d->stats;
}
