/* The step across the ranks of an MPI job, beyond the calls dist.c
 * carries: where every device of every rank stands, the outer level of the
 * replicas' collectives, the step's figures shared so that every rank sees
 * the same totals, and a sample for every rank when batch statistics need
 * one. In one process dist is NULL and nothing here but the type is used. */
#ifndef CLNET_RANKS_H
#define CLNET_RANKS_H

#include "collective.h"
#include "dist.h"
#include "layer.h"

/* A device of any rank, as every rank knows it. */
typedef struct {
    int rank, index; /* its MPI rank, and its number in `clnet devices` there */
    char name[128];
} clnet_peer_device;

/* Every device of every rank of an MPI job, in rank order, then device
 * order: this process's replica i is device first + i of total. In one
 * process dist is NULL, first is 0 and total is the replicas' count.
 * Arrays indexed by device elsewhere (the balancer, caps, the step's
 * shares, offsets and seconds) cover all of them, and every rank holds the
 * same values. */
typedef struct {
    clnet_dist *dist;
    int first, total;
    clnet_peer_device *peers; /* (total) */
    int *rank_count;          /* (ranks) devices of each rank */
    int *rank_active;         /* (ranks) devices of each rank with a share in the step */
    double *record;           /* (2 ranks + total) the step's figures of every rank */
    int overlap; /* gradients go across ranks while the backward pass runs (CLNET_MPI_OVERLAP) */
} clnet_ranks;

/* items holds one item of `size` bytes per device of every rank: each
 * rank's own (at r->first) go to every other rank. Nothing in one process. */
clnet_status clnet_ranks_share(const clnet_ranks *r, void *items, size_t size);

/* The outer level of a step's collectives (batch statistics across ranks),
 * for the split `shares` (total): which ranks take part, and where this
 * one's replicas stand among all that do. */
void clnet_ranks_outer(clnet_ranks *r, const int *shares, clnet_outer_group *outer);

/* Batch statistics across ranks: every rank takes part in the layer's
 * (batch_stats's) collectives, so every rank gets a sample at least of the
 * n in shares (total), from the largest share of a rank that has two or more. */
clnet_status clnet_ranks_every_rank_a_sample(const clnet_ranks *r, int n, int *shares,
                                             const clnet_node *batch_stats);

/* The step's figures of every rank: loss and correct become the sums over
 * the ranks, seconds (total) every device's, so every rank balances alike;
 * with probs (rows of `outputs` floats, this rank's at its devices'
 * offsets), every rank's rows of it. */
clnet_status clnet_ranks_exchange_figures(clnet_ranks *r, const int *shares, double *loss,
                                          int *correct, double *seconds, float *probs, int outputs);

#endif
