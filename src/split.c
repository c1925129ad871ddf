/* How a step splits its batch into shares (step 1 of step.c): the
 * balancer's split (balance.c), capped where a training share must run in
 * one pass, and in an MPI job agreed by every rank. */
#include "split.h"
#include "error.h"

#include <stdio.h>

/* With batch statistics a training share runs in one pass: caps the
 * shares at what each device holds, or refuses a batch that fits nowhere. */
static clnet_status cap_shares(clnet_trainer *t, int n, int64_t step, int *shares) {
    int room = 0;
    for (int i = 0; i < t->ranks.total; i++) room += t->split.caps[i];
    if (room >= n) {
        clnet_balance_cap(&t->split.balance, step, t->split.caps, shares);
        return CLNET_OK;
    }
    char list[1024];
    size_t used = 0;
    double per_sample = 0;
    for (int i = 0; i < t->count; i++) {
        const clnet_replica *r = t->replicas[i];
        const clnet_plan *p = &r->plan;
        double mib = (double)(p->act + p->dact + p->keep_total + p->work) * 4 / 1048576.0;
        if (mib / r->max_batch > per_sample) per_sample = mib / r->max_batch;
    }
    for (int i = 0; i < t->ranks.total && used < sizeof list; i++) {
        const clnet_peer_device *p = &t->ranks.peers[i];
        char where[32] = "";
        if (t->ranks.dist) snprintf(where, sizeof where, "rank %d ", p->rank);
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%sdevice %d (%s) %d",
                                 i ? ", " : "", where, p->index, p->name, t->split.caps[i]);
    }
    return clnet_fail(CLNET_ERR_DEVICE_MEMORY,
                      "a training batch of %d samples does not fit: layer '%s' (%s) normalizes "
                      "each device's share in one pass, never in micro-batches, and the devices "
                      "hold %s: %d samples in all, about %.2f MiB of activations each; use a "
                      "batch of at most %d, or devices with more memory",
                      n, t->split.batch_stats->name, t->split.batch_stats->kind->name, list, room,
                      per_sample, room);
}

clnet_status clnet_split_batch(clnet_trainer *t, int n, int64_t step, int train, int agree,
                               int *shares, int *offsets) {
    clnet_status status = CLNET_OK;
    clnet_balance_split(&t->split.balance, n, step, shares);
    if (train && t->split.batch_stats) TRY(cap_shares(t, n, step, shares));
    if (train && t->split.batch_stats && t->ranks.dist)
        TRY(clnet_ranks_every_rank_a_sample(&t->ranks, n, shares, t->split.batch_stats));
    if (t->ranks.dist && agree)
        TRY(clnet_dist_bcast(t->ranks.dist, CLNET_LANE_CONTROL, shares,
                             (size_t)t->ranks.total * sizeof(int), 0,
                             "sending the split from rank 0"));
    for (int i = 0, off = 0; i < t->ranks.total; i++) {
        offsets[i] = off;
        off += shares[i];
    }
cleanup:
    return status;
}
