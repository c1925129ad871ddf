/* The options of `clnet train` and `clnet eval` (train.c), read by train_args.c. */
#ifndef CLNET_CLI_TRAIN_ARGS_H
#define CLNET_CLI_TRAIN_ARGS_H

#include "cli.h"

typedef struct {
    const char *model, *data, *devices, *save, *resume, *log, *plot, *weights, *step_log, *split;
    cli_npy npy; /* --data-npy */
    long epochs, steps, batch, save_every, train_limit, test_limit, step_size, log_every, seed;
    long staleness, skip_nonfinite, check_replicas;
    double lr, momentum, wd, gamma, beta1, beta2, eps, mpi_timeout;
    cli_floats mean, std; /* --mean, --std: one value, or one a channel */
    double noise;         /* --noise */
    int noise_given;      /* --noise, even 0: a loss of the data's targets gets the clean samples */
    int nesterov, no_eval, deterministic, async;
    int stop_on_failure;     /* --on-device-failure: 0 continue, 1 stop */
    int optimizer, schedule; /* a clnet_optimizer, a clnet_schedule */
    int steps_given, seed_given, wd_given, log_every_given, lr_given;
    const char *override;                       /* --override KEYS: settings a resume may change */
    const char *resize, *center_crop, *augment; /* the images' transforms (transforms.c) */
    int skip_bad;                               /* --skip-bad-images */
    double val_split;     /* --val-split: the share of the training set held out; 0: none */
    const char *warmup;   /* --warmup N (steps) or Xe (epochs); NULL: none */
    double warmup_factor; /* --warmup-factor; 0: LinearLR's 1/3 */
    double pct_start, div_factor, final_div_factor; /* --schedule onecycle */
    double base_momentum, max_momentum;             /* its momentum's cycle */
    int no_cycle_momentum;                          /* --no-cycle-momentum */
    double clip_grad_norm;                          /* --clip-grad-norm; 0: none */
    long loader_threads;    /* --loader-threads; 0: the loader's own choice */
    double label_smoothing; /* --label-smoothing; -1: the model file's */
    long top_k;             /* eval --top-k; 0: not asked */
    const char *confusion;  /* eval --confusion FILE.csv */
    /* the epoch figure watched (train_monitor.c): --monitor, NULL until a feature needs it */
    const char *monitor, *save_best;   /* --save-best FILE */
    long plateau;                      /* --plateau PATIENCE; -1: off */
    long plateau_cooldown, early_stop; /* --early-stop PATIENCE; 0: off */
    long keep_last;                    /* --keep-last K; 0: keep none */
    double plateau_factor, plateau_threshold, min_lr, min_delta;
    int plateau_given, min_delta_given;
    int argc; /* the command's words, for which options were given */
    char **argv;
    char run[CLNET_RUN_CAP]; /* a resumed checkpoint's settings (train_settings.c) */
} train_options;

/* The options of `clnet train` (eval 0) or `clnet eval` (1), checked against each
 * other: 1 to go on, else 0 with the exit code at *rc (0 after --help). */
int train_parse(int argc, char **argv, train_options *o, int eval, int *rc);

/* --warmup's text as optimizer steps, with per_epoch steps an epoch: "N" is N steps,
 * "Xe" X epochs (X a decimal, rounded to the nearest step). 1, or 0 after a
 * message when it does not read (a step count of 0 from Xe with X > 0 is refused). */
int train_warmup_steps(const char *text, long per_epoch, long *steps);

#endif
