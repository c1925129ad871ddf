/* What `clnet train` and `clnet eval` (train.c) share, in train_session.c: the MPI job
 * (joining, leaving, which rank speaks, failing on every rank at once), the session they
 * open (net, data, devices), the test set's evaluation and --split. */
#ifndef CLNET_CLI_TRAIN_SESSION_H
#define CLNET_CLI_TRAIN_SESSION_H

#include "train_args.h"

#include <stdint.h>

/* The pieces a command sets up: devices, net, data. */
typedef struct {
    clnet_runtime *rt;
    clnet_net *net;
    clnet_dataset *train, *test;
    clnet_dataset *val;          /* --val-split's held-out part of the training set, or NULL */
    clnet_loader_config norm;    /* the images' normalisation (--mean, --std): its mean, std,
                                    norm_channels and channel_mean, channel_std */
    float noise;                 /* --noise, for checkpoints */
    uint64_t noise_seed;         /* the training noise's seed */
    clnet_transforms transforms; /* --resize, --center-crop, --augment (seed: the loader's) */
} train_session;

/* Joins the MPI job mpirun started, if any (a plain run starts nothing): 0, or 1 after a
 * message. */
int train_join_job(const train_options *o);

/* A failure on one rank ends the job (the other ranks would wait); every rank leaves MPI.
 * Returns rc. */
int train_leave_job(int rc);

/* 1 on this process's rank 0 of an MPI job, and in a plain run: only it prints and writes
 * files. */
int train_is_root(void);

/* "clnet: WHAT: the last error" on stderr; returns 1. Under MPI it stops every rank at
 * once: the others would otherwise wait for this one until --mpi-timeout. */
int train_fail(const char *what);

/* Loads the model and the data (the training set when need_train, the test set unless
 * --no-eval), checks they fit each other, opens the devices: 0, or the exit code. */
int train_session_open(const train_options *o, train_session *s, int need_train);
void train_session_free(train_session *s);

/* The test set, with --noise its own noise (the same in every run) against clean targets:
 * the accuracy at *acc, the loss at *loss (may be NULL). */
/* cfg's normalisation (mean, std, per channel) set to the session's. */
void train_normalise(const train_session *s, clnet_loader_config *cfg);

/* How the evaluations prepare a data set: --noise's own test noise, the normalisation,
 * the transforms (clnet_net_evaluate_with leaves the random ones out), --loader-threads. */
void train_eval_config(const train_options *o, const train_session *s, clnet_loader_config *cfg);

/* train_evaluate on another data set (--val-split's). */
int train_evaluate_on(const train_options *o, train_session *s, const clnet_dataset *ds,
                      double *acc, double *loss);

int train_evaluate(const train_options *o, train_session *s, double *acc, double *loss);

/* What a run reports of the test set: the accuracy of a classifier, the loss
 * of a model without classes (clnet_net_is_classifier). */
int train_test_score(const train_options *o, train_session *s, double *score);

/* Applies --split or --deterministic to the bound net: 0, or the exit code. */
int train_apply_split(const train_options *o, train_session *s);

#endif
