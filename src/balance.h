/* Splitting each batch across replicas in proportion to their measured
 * speed, so all finish a step together (the tests' slowdowns and faults:
 * fault.h). */
#ifndef CLNET_BALANCE_H
#define CLNET_BALANCE_H

#include "clnet.h"

#include <stdint.h>

typedef struct {
    int n;            /* replicas */
    double *rate;     /* smoothed samples per second; 0 until measured */
    double *weight;   /* fixed proportions (clnet_net_set_splits): rows x n, or NULL */
    int rows;         /* of weight: step s splits by row s % rows */
    int *lost;        /* per replica: dropped after a failure, never given a share */
    int *share;       /* samples of the last step */
    double *seconds;  /* seconds the last share took */
    int64_t *samples; /* samples processed in training so far */
    /* Moves on trial (balance.c's judge): the split a move replaced and its
     * step time; the current split's step time (smoothed; 0: not yet);
     * steps the move has run (0: none on trial); steps left to keep the
     * replaced split after a move that did not pay, and the next hold. */
    int *before;
    double before_span, span;
    int trial, hold, next_hold;
} clnet_balance;

/* A balance of n replicas, equal until measured. */
clnet_status clnet_balance_init(clnet_balance *b, int n);
void clnet_balance_free(clnet_balance *b);

/* Splits `total` samples of optimizer step `step`: by the fixed weights (their row for the step)
 * when set, else by measured rates (equal until measured), in multiples of 16 samples when every
 * device's share has that many (see SHARE_QUANTUM in balance.c). A replica whose exact share would
 * be under one sample gets none: it would only make the others wait. The shares add up to total and
 * depend only on the weights (no timing) when they are set. A measured split keeps the last step's
 * shares unless the new ones are predicted to be at least 3% faster (noise is not worth chasing),
 * and a move that did not make steps faster is undone and not tried again for a while (see
 * judge in balance.c). */
void clnet_balance_split(const clnet_balance *b, int total, int64_t step, int *shares);

/* Shares of step `step` above cap[i] give their excess to the replicas with room, in
 * proportion to the weights (to replicas of weight 0 when only those have
 * room); the caps must add up to at least the total. */
void clnet_balance_cap(const clnet_balance *b, int64_t step, const int *cap, int *shares);

/* Replica i failed and is dropped: no share from now on. */
void clnet_balance_lose(clnet_balance *b, int i);

/* Folds one step's timings into the smoothed rates, and into the judgement
 * of a split that moved. */
void clnet_balance_update(clnet_balance *b, const int *shares, const double *seconds);

#endif
