/* MPI_Allreduce between the ranks of a job, the way clnet's data-parallel
 * training sums gradients (float, MPI_SUM, in place):
 *
 *   mpirun -np N build/bench/bench_mpi_allreduce [REPS] [BYTES ...]
 *
 * For 4 KB .. 64 MB (powers of 4) and any BYTES given (e.g. a model's
 * gradient size), two ways: a blocking MPI_Allreduce, and MPI_Iallreduce
 * completed by an MPI_Test loop, as clnet's buckets are. Each size gets two
 * untimed calls, then REPS timed ones (default 20); a call's time is the
 * slowest rank's, and rank 0 prints the median with the algorithm bandwidth
 * (bytes / time) and the bus bandwidth (2(N-1)/N x bytes / time: what each
 * link of a ring carries, comparable across N). It ends with the latency
 * per ring step (alpha), the bus bandwidth at the largest size, and the
 * host's bandwidth for adding one float array into another, which is how
 * clnet sums the gradients of the devices of one process. */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES  32
#define HOST_BYTES (64u << 20)

typedef enum { BLOCKING, NONBLOCKING } mode;

static const char *MODE_NAME[] = {"allreduce", "iallreduce+test"};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One all-reduce of n floats in place. The non-blocking one spins on
 * MPI_Test: Open MPI 4.1 moves a collective only inside MPI calls, and
 * clnet tests its buckets the same way while its devices compute. */
static void reduce(float *data, int n, mode m) {
    if (m == BLOCKING) {
        MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        return;
    }
    MPI_Request request;
    int done = 0;
    MPI_Iallreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
    while (!done) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
}

/* Median seconds of one all-reduce of `bytes`, each call timed as its
 * slowest rank saw it (the barrier lines the ranks up before each call). */
static double time_reduce(float *data, size_t bytes, mode m, int reps, double *times) {
    int n = (int)(bytes / sizeof(float));
    for (int w = 0; w < 2; w++) reduce(data, n, m); /* warm-up: connections, buffers */
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        reduce(data, n, m);
        times[r] = MPI_Wtime() - t0;
    }
    MPI_Allreduce(MPI_IN_PLACE, times, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return median(times, reps);
}

/* The sizes: powers of 4 from 4 KB to 64 MB, then the ones asked for. */
static int pick_sizes(size_t *sizes, int argc, char **argv) {
    int count = 0;
    for (size_t b = 4096; b <= (64u << 20); b *= 4) sizes[count++] = b;
    for (int i = 2; i < argc && count < MAX_SIZES; i++) {
        size_t b = (size_t)strtoull(argv[i], NULL, 10) / sizeof(float) * sizeof(float);
        if (b > 0) sizes[count++] = b;
    }
    return count;
}

static void print_row(mode m, size_t bytes, double t, int ranks) {
    double bus = 2.0 * (ranks - 1) / ranks;
    printf("%-16s %12zu %10.3f %12.3f %12.3f\n", MODE_NAME[m], bytes, 1e3 * t, bytes / t * 1e-9,
           bus * bytes / t * 1e-9);
}

/* Seconds of the fastest of reps passes of dst += src over n floats:
 * single-threaded, as clnet's step thread adds (src/hostmath.c). The
 * fastest, since a pass can only be slowed down by the neighbours. */
static double time_host_add(float *restrict dst, const float *restrict src, size_t n, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        for (size_t i = 0; i < n; i++) dst[i] += src[i];
        double t = MPI_Wtime() - t0;
        if (t < best) best = t;
    }
    return best;
}

/* Host add bandwidth in bytes/s of memory traffic: each float added reads
 * two and writes one (12 bytes). Rank 0 alone, the other ranks wait. */
static double host_add_bandwidth(int reps) {
    size_t n = HOST_BYTES / sizeof(float);
    float *dst = malloc(HOST_BYTES), *src = malloc(HOST_BYTES);
    if (!dst || !src) {
        free(dst);
        free(src);
        return 0;
    }
    /* Touch every page first: the first pass would time page faults. */
    for (size_t i = 0; i < n; i++) dst[i] = 1.0f, src[i] = 0.5f;
    double t = time_host_add(dst, src, n, reps);
    volatile float sink = dst[n / 2]; /* keep the adds from being dropped */
    (void)sink;
    free(dst);
    free(src);
    return 3.0 * (double)HOST_BYTES / t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    if (reps < 1) reps = 20;
    size_t sizes[MAX_SIZES], largest = 0;
    int count = pick_sizes(sizes, argc, argv);
    for (int i = 0; i < count; i++)
        if (sizes[i] > largest) largest = sizes[i];
    /* Zeros: the sums stay zero however often they are taken, so no value
     * overflows or turns denormal and slows the adds down. */
    float *data = calloc(largest / sizeof(float), sizeof(float));
    double *times = malloc((size_t)reps * sizeof *times);
    if (!data || !times) {
        fprintf(stderr, "bench_mpi_allreduce: out of memory for %zu bytes\n", largest);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        printf("mpi_allreduce: %d ranks, float MPI_SUM in place, median of %d calls "
               "(each the slowest rank's time)\n",
               ranks, reps);
        printf("%-16s %12s %10s %12s %12s\n", "op", "bytes", "ms", "algbw GB/s", "busbw GB/s");
    }
    double smallest = 0, at_largest[2] = {0, 0};
    for (mode m = BLOCKING; m <= NONBLOCKING; m++)
        for (int i = 0; i < count; i++) {
            double t = time_reduce(data, sizes[i], m, reps, times);
            if (rank == 0) print_row(m, sizes[i], t, ranks);
            if (m == BLOCKING && i == 0) smallest = t;
            if (sizes[i] == largest) at_largest[m] = t;
        }
    double host = rank == 0 ? host_add_bandwidth(reps < 5 ? 5 : reps) : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        /* A ring all-reduce takes 2(N-1) steps; at 4 KB they are nearly all latency. */
        int steps = ranks > 1 ? 2 * (ranks - 1) : 1;
        printf("alpha: %.1f us per ring step (%zu bytes in %.3f ms over %d steps)\n",
               1e6 * smallest / steps, sizes[0], 1e3 * smallest, steps);
        for (mode m = BLOCKING; m <= NONBLOCKING; m++) {
            double bus = 2.0 * (ranks - 1) / ranks * (double)largest / at_largest[m];
            printf("bus bandwidth of %s at %zu bytes: %.3f GB/s = %.2f Gbit/s\n", MODE_NAME[m],
                   largest, bus * 1e-9, 8 * bus * 1e-9);
        }
        printf("host add bandwidth: %.2f GB/s (dst += src over %u MB floats, one thread, "
               "12 bytes of traffic per float: %.2f GB/s of gradient added)\n",
               host * 1e-9, HOST_BYTES >> 20, host / 3 * 1e-9);
    }
    free(data);
    free(times);
    MPI_Finalize();
    return 0;
}
