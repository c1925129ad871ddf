/* Throughput estimates and the proportional split. */
#include "alloc.h"
#include "balance.h"
#include "clock.h"
#include "error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Weight of the newest measurement in the smoothed rate. */
#define SMOOTHING 0.3
/* A new split must be predicted this much faster than the last one to
 * replace it: measurements are noisy, and chasing noise moves samples back
 * and forth between equal devices for nothing. */
#define HYSTERESIS 0.03
/* Measured splits come in multiples of this many samples (when the batch
 * has that many per device), the remainder of the batch going to the
 * fastest device. Why: a share's size sets the width of its GEMMs (the
 * convolution's N is share x positions), and widths that are not multiples
 * of the vector width load misaligned rows. On the 2-core Xeon VM two equal
 * PoCL devices trained LeNet 8% slower at 129:127 than at 128:128 (the
 * second convolution's products 20% slower), so the balancer, misled by
 * a few percent of calibration noise, lost to a plain equal split. The
 * samples left over go to the device that finishes soonest with them. */
#define SHARE_QUANTUM 16
/* A measured split that moved is on trial: the rates predict a share's time
 * as if it grew in proportion to its samples, and it does not always (on
 * the 2-core EPYC VM's PoCL devices LeNet's 112 samples took what 128 did,
 * while 144 took a third longer, so a move from 128:128 to 112:144 made
 * every step slower, and the rates it then measured kept it there). The
 * steps after a move's first (which may pay one-time costs) are timed, the
 * split kept meanwhile (unless the rates predict one HOLD_BREAK faster); if after TRIAL_STEPS of
 * them they are not faster than the replaced split's (both smoothed by SPAN_SMOOTHING, which
 * forgets a start's slow steps sooner than the rates do), that split comes back and is kept for
 * HOLD_FIRST steps, twice as long after each move that did not pay (up to HOLD_MOST), unless the
 * rates predict a split at least HOLD_BREAK faster than it (a device that really slowed down must
 * not wait for the hold). */
#define TRIAL_STEPS    3
#define SPAN_SMOOTHING 0.5
#define HOLD_FIRST     16
#define HOLD_MOST      256
#define HOLD_BREAK     0.2

clnet_status clnet_balance_init(clnet_balance *b, int n) {
    memset(b, 0, sizeof *b);
    b->n = n;
    b->rate = clnet_calloc((size_t)n, sizeof *b->rate);
    b->lost = clnet_calloc((size_t)n, sizeof *b->lost);
    b->share = clnet_calloc((size_t)n, sizeof *b->share);
    b->seconds = clnet_calloc((size_t)n, sizeof *b->seconds);
    b->samples = clnet_calloc((size_t)n, sizeof *b->samples);
    b->before = clnet_calloc((size_t)n, sizeof *b->before);
    b->next_hold = HOLD_FIRST;
    if (!b->rate || !b->lost || !b->share || !b->seconds || !b->samples || !b->before) {
        clnet_balance_free(b);
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return CLNET_OK;
}

void clnet_balance_free(clnet_balance *b) {
    free(b->rate);
    free(b->weight);
    free(b->lost);
    free(b->share);
    free(b->seconds);
    free(b->samples);
    free(b->before);
    memset(b, 0, sizeof *b);
}

/* The predicted time of a split at the measured rates (0 when unknown). */
static double predicted(const clnet_balance *b, const int *shares) {
    double worst = 0;
    for (int i = 0; i < b->n; i++) {
        if (shares[i] == 0) continue;
        if (b->rate[i] <= 0) return 0;
        double t = shares[i] / b->rate[i];
        if (t > worst) worst = t;
    }
    return worst;
}

static void proportional_split(const clnet_balance *b, const double *row, int total, int *shares);
static double weight_of(const clnet_balance *b, const double *row, int i);

/* The fixed weights of step `step`, or NULL (measured rates). */
static const double *row_of(const clnet_balance *b, int64_t step) {
    return b->weight ? b->weight + (size_t)(step % b->rows) * (size_t)b->n : NULL;
}

void clnet_balance_split(const clnet_balance *b, int total, int64_t step, int *shares) {
    const double *row = row_of(b, step);
    proportional_split(b, row, total, shares);
    if (b->weight) return; /* fixed: nothing to smooth */
    int last_total = 0, before_total = 0, last_sharing = 0;
    for (int i = 0; i < b->n; i++) {
        last_total += b->share[i];
        before_total += b->before[i];
        last_sharing += b->share[i] > 0;
    }
    if (b->hold > 0 && before_total == total &&
        predicted(b, shares) > (1 - HOLD_BREAK) * predicted(b, b->before)) {
        memcpy(shares, b->before, (size_t)b->n * sizeof *shares); /* a move did not pay: judge */
        return;
    }
    if (last_total != total) return;
    double fresh = predicted(b, shares), last = predicted(b, b->share);
    int large = fresh > 0 && last > 0 && fresh < (1 - HOLD_BREAK) * last; /* never waits */
    if (last_sharing > 1 && !large && (b->trial > 0 || b->span <= 0)) { /* on trial, or not timed */
        memcpy(shares, b->share, (size_t)b->n * sizeof *shares);
        return;
    }
    if (fresh > 0 && last > 0 && fresh > (1 - HYSTERESIS) * last)
        for (int i = 0; i < b->n; i++) shares[i] = b->share[i];
}

static void split_units(const clnet_balance *b, const double *row, int total, int *shares);

/* row: the fixed weights of this step, or NULL (measured rates) */
static void proportional_split(const clnet_balance *b, const double *row, int total, int *shares) {
    split_units(b, row, total, shares);
    if (b->weight) return; /* fixed proportions are kept exactly */
    int active = 0;
    for (int i = 0; i < b->n; i++) {
        if (shares[i] > 0 && shares[i] < SHARE_QUANTUM) return; /* too few for quanta */
        active += shares[i] > 0;
    }
    if (active < 2) return;
    /* in quanta, then the rest to the device that finishes soonest with it */
    split_units(b, row, total / SHARE_QUANTUM, shares);
    int rest = total % SHARE_QUANTUM, best = -1;
    for (int i = 0; i < b->n; i++) {
        shares[i] *= SHARE_QUANTUM;
        double w = weight_of(b, row, i);
        if (shares[i] > 0 &&
            (best < 0 || (shares[i] + rest) / w < (shares[best] + rest) / weight_of(b, row, best)))
            best = i;
    }
    shares[best] += rest;
}

/* Splits `total` units by the weights (largest remainder). */
/* Drops replicas whose exact share of total is under one sample, slowest
 * first, until every remaining one earns at least one. */
static void drop_below_one(const double *w, int *active, int n, int total) {
    for (;;) {
        double sum = 0;
        int slowest = -1, count = 0;
        for (int i = 0; i < n; i++)
            if (active[i]) {
                sum += w[i];
                count++;
                if (slowest < 0 || w[i] < w[slowest]) slowest = i;
            }
        if (count <= 1 || total * w[slowest] / sum >= 1.0) break;
        active[slowest] = 0;
    }
}

/* Largest remainder over the active replicas (weights summing to sum):
 * floors, then one more to the largest fractions. */
static void largest_remainder(const double *w, const int *active, int n, int total, double sum,
                              int *shares) {
    double frac[CLNET_MAX_DEVICES];
    int given = 0;
    for (int i = 0; i < n; i++) {
        double exact = active[i] ? total * w[i] / sum : 0;
        shares[i] = (int)exact;
        frac[i] = active[i] ? exact - shares[i] : -1;
        given += shares[i];
    }
    while (given < total) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (active[i] && (best < 0 || frac[i] > frac[best])) best = i;
        shares[best]++;
        frac[best] = -1;
        given++;
        if (given < total) { /* more than n left over cannot happen, but be safe */
            int any = 0;
            for (int i = 0; i < n; i++) any |= active[i] && frac[i] >= 0;
            if (!any)
                for (int i = 0; i < n; i++)
                    if (active[i]) frac[i] = 0;
        }
    }
}

static void split_units(const clnet_balance *b, const double *row, int total, int *shares) {
    int n = b->n;
    double w[CLNET_MAX_DEVICES];
    int active[CLNET_MAX_DEVICES];
    for (int i = 0; i < n && i < CLNET_MAX_DEVICES; i++) {
        w[i] = weight_of(b, row, i);
        active[i] = w[i] > 0;
        shares[i] = 0;
    }
    drop_below_one(w, active, n, total);
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (active[i]) sum += w[i];
    if (sum <= 0) { /* nothing usable (fixed weights of 0): the first one left takes it all */
        int first = 0;
        while (first < n - 1 && b->lost[first]) first++;
        shares[first] = total;
        return;
    }
    largest_remainder(w, active, n, total, sum, shares);
}

/* The weight of replica i in a split (row: the step's fixed weights, or NULL). */
static double weight_of(const clnet_balance *b, const double *row, int i) {
    if (b->lost[i]) return 0;
    return row ? row[i] : b->rate[i] > 0 ? b->rate[i] : 1.0;
}

void clnet_balance_lose(clnet_balance *b, int i) {
    b->lost[i] = 1;
    b->share[i] = 0; /* the last split no longer stands, nor any on trial */
    b->trial = b->hold = 0;
    b->span = 0;
}

void clnet_balance_cap(const clnet_balance *b, int64_t step, const int *cap, int *shares) {
    const double *row = row_of(b, step);
    int excess = 0;
    for (int i = 0; i < b->n; i++)
        if (shares[i] > cap[i]) {
            excess += shares[i] - cap[i];
            shares[i] = cap[i];
        }
    /* one sample at a time to the replica with room that is least loaded
     * for its weight: the proportional split among those with room; when
     * only replicas of weight 0 have room, the one with the fewest samples
     * (a sample must never be dropped: the caller checked the total room) */
    while (excess > 0) {
        int best = -1;
        double best_load = 0;
        for (int pass = 0; pass < 2 && best < 0; pass++)
            for (int i = 0; i < b->n; i++) {
                double w = pass == 0 ? weight_of(b, row, i) : 1.0;
                if (shares[i] >= cap[i] || w <= 0) continue;
                double load = (shares[i] + 1) / w;
                if (best < 0 || load < best_load) best = i, best_load = load;
            }
        if (best < 0) return; /* no room anywhere: the caller checked the total */
        shares[best]++;
        excess--;
    }
}

/* A split on trial (TRIAL_STEPS above), from one step's shares and
 * seconds, before they become the last step's: a step whose split is not
 * the last one's starts a trial when the rates moved it (not when it came
 * back after a trial, nor when the batch changed); the steps after it are
 * timed (the slowest share, smoothed) and compared with the replaced
 * split's time. Only steps that split the batch between devices count (an
 * asynchronous push is one device's). */
static void judge(clnet_balance *b, const int *shares, const double *seconds) {
    int sharing = 0, same = 1, total = 0, last_total = 0;
    double span = 0;
    for (int i = 0; i < b->n; i++) {
        sharing += shares[i] > 0;
        if (shares[i] > 0 && seconds[i] > span) span = seconds[i];
        same &= shares[i] == b->share[i];
        total += shares[i];
        last_total += b->share[i];
    }
    if (b->hold > 0) b->hold--;
    if (sharing < 2 || b->weight || span <= 0) {
        b->trial = 0;
        b->span = 0;
        return;
    }
    if (!same) { /* this step's time may hold one-time costs: not counted */
        b->trial = total == last_total && b->span > 0 && b->hold == 0;
        if (b->trial) {
            memcpy(b->before, b->share, (size_t)b->n * sizeof *b->before);
            b->before_span = b->span;
        }
        b->span = 0;
        return;
    }
    b->span = b->span > 0 ? (1 - SPAN_SMOOTHING) * b->span + SPAN_SMOOTHING * span : span;
    if (!b->trial || ++b->trial <= TRIAL_STEPS) return;
    b->trial = 0;
    if (b->span < b->before_span) { /* it paid */
        b->next_hold = HOLD_FIRST;
        return;
    }
    b->hold = b->next_hold;
    b->next_hold = 2 * b->next_hold < HOLD_MOST ? 2 * b->next_hold : HOLD_MOST;
}

void clnet_balance_update(clnet_balance *b, const int *shares, const double *seconds) {
    judge(b, shares, seconds);
    for (int i = 0; i < b->n; i++) {
        b->share[i] = shares[i];
        b->seconds[i] = seconds[i];
        b->samples[i] += shares[i];
        if (shares[i] <= 0 || seconds[i] <= 0) continue;
        double r = shares[i] / seconds[i];
        b->rate[i] = b->rate[i] > 0 ? (1 - SMOOTHING) * b->rate[i] + SMOOTHING * r : r;
    }
}
