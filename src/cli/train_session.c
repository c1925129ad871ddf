/* What `clnet train` and `clnet eval` (train.c) share: the MPI job, the session they
 * open (net, data, devices), the test set's evaluation and --split. */
#include "train_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This process's rank in an MPI job; only rank 0 prints and writes files. */
static int rank;
int train_is_root(void) {
    return rank == 0;
}

void train_session_free(train_session *s) {
    clnet_net_free(s->net);
    clnet_dataset_free(s->train);
    clnet_dataset_free(s->test);
    clnet_dataset_free(s->val);
    clnet_runtime_free(s->rt);
}

/* A failure on one rank of an MPI job stops them all at once: the others
 * would otherwise wait for this one until --mpi-timeout. */
int train_fail(const char *what) {
    if (clnet_mpi_size() > 1) {
        fprintf(stderr, "clnet: rank %d: %s: %s\n", rank, what, clnet_last_error());
        fflush(stderr);
        clnet_mpi_abort(1);
    }
    fprintf(stderr, "clnet: %s: %s\n", what, clnet_last_error());
    return 1;
}

/* Loads the data sets: training (need_train) and test (unless --no-eval);
 * clnet eval evaluates the test pair of --data-npy, or its only pair. */
static int load_data(const train_options *o, train_session *s, int need_train) {
    if (!o->npy.count) {
        /* only as far into the files as --train-limit and --test-limit go */
        clnet_dataset_options train = {.limit = o->train_limit, .skip_bad_images = o->skip_bad};
        clnet_dataset_options test = {.limit = o->test_limit, .skip_bad_images = o->skip_bad};
        if (need_train && clnet_dataset_load_with(&s->train, o->data, "train", &train) != CLNET_OK)
            return train_fail("training data");
        if (!o->no_eval && clnet_dataset_load_with(&s->test, o->data, "test", &test) != CLNET_OK)
            return train_fail("test data");
        if (train_is_root()) cli_report_skipped(s->train), cli_report_skipped(s->test);
        return 0;
    }
    if (o->data) {
        fprintf(stderr, "clnet: --data and --data-npy name two data sets: give one\n");
        return 2;
    }
    const char(*paths)[CLI_PATH_CAP] = o->npy.paths;
    int count = o->npy.count;
    if (need_train && clnet_dataset_load_npy(&s->train, paths[0], paths[1]) != CLNET_OK)
        return train_fail("training data");
    if (o->no_eval) return 0;
    if (need_train && count == 2) {
        fprintf(stderr, "clnet: --data-npy gives no test set (TEST_X.npy,TEST_Y.npy after the "
                        "training pair): add it, or --no-eval\n");
        return 2;
    }
    int t = count == 4 ? 2 : 0;
    if (clnet_dataset_load_npy(&s->test, paths[t], paths[t + 1]) != CLNET_OK)
        return train_fail("test data");
    return 0;
}

/* Loads the model and the data, checks they fit each other, opens devices. */
int train_session_open(const train_options *o, train_session *s, int need_train) {
    memset(s, 0, sizeof *s);
    s->noise = (float)o->noise;
    int rc = cli_transforms(o->resize, o->center_crop, o->augment, &s->transforms);
    if (rc) return rc;
    if (clnet_net_load(&s->net, o->model) != CLNET_OK) return train_fail("model");
    if (o->label_smoothing >= 0 && /* --label-smoothing, or a resumed run's */
        clnet_net_set_label_smoothing(s->net, (float)o->label_smoothing) != CLNET_OK) {
        fprintf(stderr, "clnet: --label-smoothing %g%s: %s\n", o->label_smoothing,
                cli_given(o->argc, o->argv, "--label-smoothing") ? "" : " (the checkpoint's run's)",
                clnet_last_error());
        return 2;
    }
    rc = load_data(o, s, need_train);
    if (rc) return rc;
    if (s->train && o->train_limit && o->train_limit < clnet_dataset_count(s->train))
        clnet_dataset_truncate(s->train, (int)o->train_limit);
    if (s->test && o->test_limit && o->test_limit < clnet_dataset_count(s->test))
        clnet_dataset_truncate(s->test, (int)o->test_limit);
    if (s->train && o->val_split > 0) {
        clnet_dataset *rest = NULL;
        if (clnet_dataset_split(s->train, o->val_split, CLI_VAL_SPLIT_SEED, &rest, &s->val) !=
            CLNET_OK)
            return train_fail("--val-split");
        clnet_dataset_free(s->train);
        s->train = rest;
    }
    if (o->noise_given &&
        ((s->train && (rc = cli_noise_targets(s->net, s->train, o->model)) != 0) ||
         (s->test && (rc = cli_noise_targets(s->net, s->test, o->model)) != 0)))
        return rc;
    if ((s->train && !cli_data_fits(s->net, s->train, &s->transforms, o->model)) ||
        (s->test && !cli_data_fits(s->net, s->test, &s->transforms, o->model)))
        return 1;
    int channels = 0;
    clnet_dataset_shape(s->train ? s->train : s->test, &channels, NULL, NULL);
    if ((rc = cli_normalisation(&o->mean, &o->std, channels, &s->norm)) != 0) return rc;
    clnet_status st = clnet_runtime_create(&s->rt, o->devices);
    if (st != CLNET_OK) {
        train_fail("devices");
        return cli_exit_code(st);
    }
    return 0;
}

/* Joins the MPI job mpirun started, if any (a plain run starts nothing). */
int train_join_job(const train_options *o) {
    int size = 1;
    if (clnet_mpi_init(&rank, &size) != CLNET_OK) {
        fprintf(stderr, "clnet: %s\n", clnet_last_error());
        return 1;
    }
    if (o->mpi_timeout > 0) clnet_mpi_set_timeout(o->mpi_timeout);
    return 0;
}

/* A failure on one rank ends the job (the other ranks would wait); every rank leaves MPI. */
int train_leave_job(int rc) {
    if (rc && rc != 2) fflush(stderr), clnet_mpi_abort(rc);
    clnet_mpi_finalize();
    return rc;
}

void train_normalise(const train_session *s, clnet_loader_config *cfg) {
    cfg->mean = s->norm.mean;
    cfg->std = s->norm.std;
    cfg->norm_channels = s->norm.norm_channels;
    memcpy(cfg->channel_mean, s->norm.channel_mean, sizeof cfg->channel_mean);
    memcpy(cfg->channel_std, s->norm.channel_std, sizeof cfg->channel_std);
}

/* The test set, with --noise its own noise (the same in every run) against clean targets. */
int train_evaluate(const train_options *o, train_session *s, double *acc, double *loss) {
    return train_evaluate_on(o, s, s->test, acc, loss);
}

void train_eval_config(const train_options *o, const train_session *s, clnet_loader_config *cfg) {
    *cfg = (clnet_loader_config){.noise = (float)o->noise,
                                 .noise_seed = CLI_TEST_NOISE_SEED,
                                 .transforms = s->transforms}; /* the random ones left out */
    train_normalise(s, cfg);
    cfg->threads = (int)o->loader_threads;
}

int train_evaluate_on(const train_options *o, train_session *s, const clnet_dataset *ds,
                      double *acc, double *loss) {
    clnet_step_result r;
    clnet_loader_config cfg;
    train_eval_config(o, s, &cfg);
    if (clnet_net_evaluate_with(s->net, ds, &cfg, &r) != CLNET_OK) return train_fail("evaluation");
    *acc = r.answers ? (double)r.correct / r.answers : 0;
    if (loss) *loss = r.loss;
    return 0;
}

/* What a run reports of the test set: the accuracy of a classifier, the loss
 * of a model without classes (clnet_net_is_classifier). */
int train_test_score(const train_options *o, train_session *s, double *score) {
    double acc = 0, loss = 0;
    int rc = train_evaluate(o, s, &acc, &loss);
    if (rc == 0) *score = clnet_net_is_classifier(s->net) ? acc : loss;
    return rc;
}

/* Applies --split or --deterministic. --split takes rows of weights
 * separated by '/', one row a step in turn ("1,4/3,1": odd steps 1:4, even
 * steps 3:1, counting from 1). */
int train_apply_split(const train_options *o, train_session *s) {
    enum { MOST = 4096 };
    int n = clnet_net_device_count(s->net), rows = 1, k = 0;
    double w[MOST];
    if (o->split) {
        const char *p = o->split;
        for (;;) {
            char *end = NULL;
            if (k >= MOST) break;
            w[k] = strtod(p, &end);
            if (end == p || !(w[k] >= 0)) break;
            k++;
            p = end;
            if (*p == ',' && p[1])
                p++;
            else if (*p == '/' && p[1] && k == rows * n)
                p++, rows++;
            else
                break;
        }
        if (*p || k != rows * n) {
            fprintf(stderr,
                    "clnet: --split %s: expected %d weights >= 0 separated by commas (one per "
                    "device), or several such splits separated by '/' (used in turn)\n",
                    o->split, n);
            return 2;
        }
    } else if (o->deterministic) {
        for (int i = 0; i < n; i++) w[i] = 1;
    } else {
        return 0;
    }
    if (clnet_net_set_splits(s->net, w, n, rows) != CLNET_OK) return train_fail("--split");
    return 0;
}
