/* `clnet train`'s watch on one figure of its epochs (train_monitor.c): --monitor,
 * --plateau, --early-stop and --save-best's best so far. */
#ifndef CLNET_CLI_TRAIN_MONITOR_H
#define CLNET_CLI_TRAIN_MONITOR_H

#include "train_args.h"

/* The figures of an epoch's line that --monitor may name, in this order. */
enum {
    METRIC_VAL_LOSS,
    METRIC_VAL_ACCURACY,
    METRIC_TEST_LOSS,
    METRIC_TEST_ACCURACY,
    METRIC_TRAIN_LOSS,
    METRIC_TRAIN_ACCURACY,
    METRIC_COUNT
};

typedef struct {
    int metric; /* a METRIC_; -1: nothing watches */
    clnet_monitor monitor;
    clnet_plateau plateau;
} train_watch;

/* After --resume has filled in the settings: o->monitor set to the figure the run watches
 * (its default when none is given; NULL when no option needs one), and the options that
 * watch checked against what the run computes (`classifier`: accuracies; `has_val`:
 * --val-split's; the test set's unless --no-eval). 0, or 2 after a message. */
int train_monitor_choose(train_options *o, int classifier, int has_val);

/* w set up from the options, continuing the state of `resumed` (NULL: a fresh run). */
void train_watch_start(train_watch *w, const train_options *o, const clnet_progress *resumed);

/* 1 when the resumed run had already stopped early, after epoch `epoch` (said on stderr). */
int train_watch_stopped(const train_watch *w, const train_options *o, int epoch);

/* What an epoch's figure did. */
typedef struct {
    int improved; /* the best so far: --save-best writes */
    int stop;     /* --early-stop ends the run */
} train_watch_verdict;

/* Epoch `epoch` (1-based) ended with `figures` (METRIC_COUNT, in the enum's order; NaN where
 * not evaluated): the monitor and the plateau observe it, a reduction goes to the net's
 * learning rate, and stderr says what changed. 0, or 1 after a message. */
int train_watch_epoch(train_watch *w, const train_options *o, clnet_net *net, int epoch,
                      const double *figures, train_watch_verdict *out);

/* The checkpoint of step `step` that --keep-last writes beside FILE: FILE-stepS.EXT
 * (the step before FILE's last '.', else at its end). */
void train_step_path(const char *file, int64_t step, char *out, size_t cap);

#endif
