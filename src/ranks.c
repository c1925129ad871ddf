/* The step across the ranks of an MPI job (see ranks.h). The step's thread
 * calls these on lane CONTROL in the same order on every rank; the outer
 * collectives run on lane BATCH, on the one device thread per rank that
 * combines its replicas' part. */
#include "ranks.h"
#include "error.h"

#include <string.h>

clnet_status clnet_ranks_share(const clnet_ranks *r, void *items, size_t size) {
    int ranks = clnet_mpi_size(), bytes[CLNET_MAX_DEVICES];
    if (!r->dist) return CLNET_OK;
    for (int k = 0; k < ranks; k++) bytes[k] = (int)((size_t)r->rank_count[k] * size);
    unsigned char *mine = (unsigned char *)items + (size_t)r->first * size;
    return clnet_dist_allgatherv(r->dist, CLNET_LANE_CONTROL, mine, bytes, items,
                                 "sharing device facts between ranks");
}

/* The collectives of a pass (batch norm) across ranks: after the devices
 * of this process have combined theirs. */
static clnet_status outer_sum(void *arg, double *values, size_t n) {
    clnet_ranks *r = arg;
    return clnet_dist_sum(r->dist, CLNET_LANE_BATCH, values, n,
                          "summing batch statistics across ranks");
}

static clnet_status outer_gather(void *arg, const void *mine, size_t bytes, void *all) {
    clnet_ranks *r = arg;
    int counts[CLNET_MAX_DEVICES];
    (void)mine; /* already in place in all */
    for (int k = 0; k < clnet_mpi_size(); k++) counts[k] = (int)((size_t)r->rank_active[k] * bytes);
    return clnet_dist_allgatherv(r->dist, CLNET_LANE_BATCH, NULL, counts, all,
                                 "gathering batch statistics across ranks");
}

void clnet_ranks_outer(clnet_ranks *r, const int *shares, clnet_outer_group *outer) {
    *outer = (clnet_outer_group){outer_sum, outer_gather, r, 0, 0};
    memset(r->rank_active, 0, (size_t)clnet_mpi_size() * sizeof *r->rank_active);
    for (int i = 0; i < r->total; i++) r->rank_active[r->peers[i].rank] += shares[i] > 0;
    for (int k = 0; k < clnet_mpi_size(); k++) {
        if (k < clnet_mpi_rank()) outer->base += r->rank_active[k];
        outer->total += r->rank_active[k];
    }
}

clnet_status clnet_ranks_every_rank_a_sample(const clnet_ranks *r, int n, int *shares,
                                             const clnet_node *batch_stats) {
    int ranks = clnet_mpi_size(), total[CLNET_MAX_DEVICES] = {0};
    if (n < ranks)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "a training batch of %d samples on %d ranks: layer '%s' (%s) normalizes "
                          "across every rank, and each needs a sample at least; use a batch of "
                          "at least %d",
                          n, ranks, batch_stats->name, batch_stats->kind->name, ranks);
    for (int i = 0; i < r->total; i++) total[r->peers[i].rank] += shares[i];
    for (int k = 0, at = 0; k < ranks; at += r->rank_count[k], k++) {
        if (total[k]) continue;
        int donor = -1;
        for (int i = 0; i < r->total; i++)
            if (total[r->peers[i].rank] >= 2 && (donor < 0 || shares[i] > shares[donor])) donor = i;
        shares[donor]--, total[r->peers[donor].rank]--;
        shares[at]++, total[k]++;
    }
    return CLNET_OK;
}

clnet_status clnet_ranks_exchange_figures(clnet_ranks *r, const int *shares, double *loss,
                                          int *correct, double *seconds, float *probs,
                                          int outputs) {
    clnet_status status = CLNET_OK;
    int ranks = clnet_mpi_size(), me = clnet_mpi_rank(), bytes[CLNET_MAX_DEVICES];
    double *mine = r->record + (2 * (size_t)me + (size_t)r->first);
    mine[0] = *loss;
    mine[1] = *correct;
    memcpy(mine + 2, seconds + r->first, (size_t)r->rank_count[me] * sizeof(double));
    for (int k = 0; k < ranks; k++) bytes[k] = (2 + r->rank_count[k]) * (int)sizeof(double);
    TRY(clnet_dist_allgatherv(r->dist, CLNET_LANE_CONTROL, NULL, bytes, r->record,
                              "gathering the step's figures"));
    *loss = 0;
    *correct = 0;
    for (int k = 0, at = 0, dev = 0; k < ranks; k++) { /* in rank order */
        *loss += r->record[at];
        *correct += (int)r->record[at + 1];
        memcpy(seconds + dev, r->record + at + 2, (size_t)r->rank_count[k] * sizeof(double));
        at += 2 + r->rank_count[k];
        dev += r->rank_count[k];
    }
    if (probs) {
        for (int k = 0, dev = 0; k < ranks; k++) {
            int rows = 0;
            for (int j = 0; j < r->rank_count[k]; j++) rows += shares[dev++];
            bytes[k] = rows * outputs * (int)sizeof(float);
        }
        TRY(clnet_dist_allgatherv(r->dist, CLNET_LANE_CONTROL, NULL, bytes, probs,
                                  "gathering the outputs"));
    }
cleanup:
    return status;
}
