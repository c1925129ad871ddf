/* Shared pieces of the clnet program's commands. */
#ifndef CLNET_CLI_H
#define CLNET_CLI_H

#include "clnet.h"

#include <stddef.h>
#include <stdio.h>

/* ---- args.c: reading the command line (the commands call these) ---- */

/* One row of a command's option table: both its parsing and its line in
 * `clnet COMMAND --help` come from here. */
typedef enum {
    CLI_FLAG,   /* no value: sets an int to 1 */
    CLI_TEXT,   /* const char *, as typed */
    CLI_INT,    /* long, within [min, max] */
    CLI_FLOAT,  /* double, within [min, max] */
    CLI_CHOICE, /* int: the index of the value among `choices` */
    CLI_CUSTOM, /* whatever `parse` makes of the value */
} cli_type;

/* A custom option's reader: 1 after storing what `text` means at `dest`, 0
 * after a message "clnet: NAME: ...". */
typedef int cli_parser(const char *name, const char *text, void *dest);

/* Where a value goes: a field of the command's options struct. 0 means none,
 * so the offset is kept one higher. */
#define CLI_AT(type, field) (offsetof(type, field) + 1)

typedef struct {
    const char *name;           /* "--batch"; NULL ends a table */
    const char *arg;            /* the value's name in the help ("B"); NULL for a flag */
    cli_type type;              /* how the value is read */
    size_t at;                  /* CLI_AT: where the value goes */
    size_t given;               /* CLI_AT of an int set to 1 when the option appears; 0: none */
    double min, max;            /* CLI_INT, CLI_FLOAT: the values accepted */
    const char *const *choices; /* CLI_CHOICE: the names, NULL-terminated */
    cli_parser *parse;          /* CLI_CUSTOM */
    const char *def;            /* the default as typed, read like a value and shown in
                                   the help; NULL: zero (the help says any other) */
    const char *only;           /* a command's name: the option is that command's alone */
    int required;               /* shown as required in the usage line (the command checks) */
    const char *help;           /* lines separated by '\n' */
} cli_opt;

typedef struct {
    const char *name;            /* "train" */
    const char *positional;      /* the argument without a dash in the usage line
                                    ("MODEL", "[KIND]"); NULL: none taken */
    const char *positional_what; /* what it is, for "one model file only" */
    size_t positional_at;        /* CLI_AT of its const char * */
    const cli_opt *opts;         /* ended by a row whose name is NULL; NULL: no options */
    const char *footer;          /* printed after the options by --help */
    size_t size;                 /* sizeof the options struct */
    /* Once every word is read: 0 when the options go together, else the
     * exit status after a message. NULL: any set goes. */
    int (*check)(void *options);
} cli_command;

/* The MODEL argument of every command but devices, read into the field `model` of
 * `record`, the command's options struct. */
#define CLI_MODEL(record)                                                                          \
    .positional = "MODEL", .positional_what = "model file", .positional_at = CLI_AT(record, model)

/* Rows several commands share, into the fields `batch` (long) and `devices`. */
#define CLI_BATCH(record, text)                                                                    \
    {                                                                                              \
        .name = "--batch", .arg = "B", .type = CLI_INT, .at = CLI_AT(record, batch), .min = 1,     \
        .max = 1 << 20, .def = "256", .help = text                                                 \
    }
/* --noise STD, into the fields `noise` (double) and `noise_given` (int). */
#define CLI_NOISE(record, text)                                                                    \
    {                                                                                              \
        .name = "--noise", .arg = "STD", .type = CLI_FLOAT, .at = CLI_AT(record, noise),           \
        .given = CLI_AT(record, noise_given), .min = 0, .max = 1e3, .help = text                   \
    }
#define CLI_DEVICES(record, text)                                                                  \
    {                                                                                              \
        .name = "--devices", .arg = "SPEC", .type = CLI_TEXT, .at = CLI_AT(record, devices),       \
        .help = text                                                                               \
    }

/* A command reads its words in one call; one that takes an optional argument
 * and no options (clnet layers [KIND]) needs only
 *   typedef struct { const char *kind; } layers_options;
 *   const cli_command cli_layers_cmd = {.name = "layers", .positional = "[KIND]",
 *       .positional_what = "layer kind", .positional_at = CLI_AT(layers_options, kind),
 *       .size = sizeof(layers_options)};
 *   layers_options o = {0};
 *   int rc;
 *   if (!cli_parse(&cli_layers_cmd, argc, argv, &o, &rc)) return rc;
 * and --help then prints "usage: clnet layers [KIND]" and its footer. Each
 * table is also listed in cli_commands (commands.c). */

/* Reads argv[0..argc) (the words after the command's name) into `dest`, the
 * command's options struct, zeroed by the caller: the defaults first, then
 * the options given, then the command's check. 1 to go on; 0 to stop with
 * *exit_code 0 after --help, 2 after a message on a bad command line, or the
 * check's status. */
int cli_parse(const cli_command *c, int argc, char **argv, void *dest, int *exit_code);

/* The --help text: usage line, one entry per option, footer. */
void cli_help(const cli_command *c, FILE *out);

/* The exit code of a run that failed with s: 2 for a bad value (a device
 * selection that cannot be understood, from --devices or $CLNET_DEVICES, as
 * any option's), else 1 (docs/commands.md's table). */
int cli_exit_code(clnet_status s);

/* "clnet CMD: which model? ...": 2, the exit code, for a command without its MODEL. */
int cli_which_model(const char *command);

/* "--name VALUE" or "--name=VALUE" at argv[*i]: 1 and *value set (NULL when
 * the value is missing, after a message) when argv[*i] is that option. */
int cli_option(int argc, char **argv, int *i, const char *name, const char **value);

/* Stores `text` as option o's value in dest (the command's options struct),
 * as the command line would: 1, or 0 after a message. */
int cli_store(const cli_opt *o, const char *text, void *dest);

/* Whether the words argv[0 .. argc) give option `name` ("--lr" or "--lr=..."). */
int cli_given(int argc, char **argv, const char *name);

/* Whether a file can be written at path (option names it in the message):
 * its folder exists and takes new files, and path is no folder itself. 1,
 * else 0 after "clnet: OPTION PATH: ..." (a command refuses it, exit 2,
 * before any work, so that nothing computed is lost at the end). */
int cli_writable(const char *option, const char *path);

/* The first len bytes of text as one CSV field: as they are, or quoted with their quotes
 * doubled where they hold a comma, a quote or a line break. */
void cli_csv_field(FILE *f, const char *text, size_t len);

/* Parsers that print "clnet: --name: ..." and return 0 on bad input. */
int cli_int(const char *name, const char *text, long min, long max, long *out);
int cli_float(const char *name, const char *text, double min, double max, double *out);

/* --data-npy X,Y[,TX,TY]: a cli_parser whose dest is a cli_npy; it fails with
 * a message unless there are 2 or 4 paths. */
#define CLI_PATH_CAP 1024
typedef struct {
    char paths[4][CLI_PATH_CAP];
    int count; /* 0: not given */
} cli_npy;
cli_parser cli_npy_files;

/* --mean and --std: one value for every channel, or one a channel ("0.4914,0.4822,0.4465").
 * cli_mean_values takes each from -1000 to 1000, cli_std_values from 1e-6 to 1000. */
typedef struct {
    int count;
    double v[CLNET_MAX_NORM_CHANNELS];
} cli_floats;
cli_parser cli_mean_values, cli_std_values;

/* The values as text that reads back to the same doubles, comma-separated. */
void cli_floats_text(const cli_floats *f, char *out, size_t cap);

/* cfg's normalisation from --mean and --std for data of `channels` channels: one value each
 * for all, else one a channel (a single one applies to every channel). 0, or 2 after a
 * message when a list's length is not the channels'. */
int cli_normalisation(const cli_floats *mean, const cli_floats *std, int channels,
                      clnet_loader_config *cfg);

/* ---- data.c ---- */

/* The value recorded for `key` in a checkpoint's run settings ("key=value" lines) into out:
 * 1, or 0 when the run did not record it. */
int cli_run_value(const char *run, const char *key, char *out, size_t cap);

/* A line on stderr for each image ds's load skipped (--skip-bad-images), and their count. */
void cli_report_skipped(const clnet_dataset *ds);

/* ds's class names, one a line, into out ("" when some class has none, or they would not
 * fit): what a checkpoint records. */
void cli_class_names(const clnet_dataset *ds, char *out, size_t cap);

/* 1 when ds's samples have the shape the net takes and its labels (if any) are within
 * the net's classes; else 0 after a message that names the model file. */
int cli_data_fits(const clnet_net *net, const clnet_dataset *ds, const clnet_transforms *t,
                  const char *model);

/* --resize N|HxW, --center-crop N|HxW and --augment flip,crop=PAD,resized-crop[=MIN] (each
 * NULL when not given) as transforms: 0, or 2 after a message on stderr (transforms.c). */
/* "N" or "HxW" (each side 1 to 16384) into *h, *w: 0, or 2 after a message naming option. */
int cli_size(const char *option, const char *text, int *h, int *w);

int cli_transforms(const char *resize, const char *center_crop, const char *augment,
                   clnet_transforms *t);

/* The seed of the noise on a test set (clnet eval, the test set of clnet train,
 * clnet predict): every run draws the same noisy test inputs. */
#define CLI_TEST_NOISE_SEED 0x7465737473657475ull
/* The seed of --val-split's subset: one for every run, so the same data gives the same split. */
#define CLI_VAL_SPLIT_SEED 0x76616c73706c6974ull

/* --noise on ds for net: 2 after a message when the net's loss takes its
 * target from target= (that target would be noisy); with a loss of the
 * data's float targets and a data set without any, the clean samples become
 * its targets (clnet_dataset_targets_from_samples); else 0. */
int cli_noise_targets(const clnet_net *net, clnet_dataset *ds, const char *model);

/* A made-up batch for timing and warming up: n samples of a net's input
 * shape (values in [0, 1]) and what its loss compares with: labels over its
 * classes (one a position for a loss per position), and for a loss of the
 * data's float targets those targets (t; else NULL). */
typedef struct {
    float *x, *t;
    int32_t *y;
} cli_batch;
/* Fills *b with n samples (cli_batch_free frees it); 0 when out of memory. */
int cli_random_batch(const clnet_net *net, long n, cli_batch *b);
void cli_batch_free(cli_batch *b);
/* A training step on the first n samples of b, with the labels or targets its loss takes. */
clnet_status cli_random_step(clnet_net *net, const cli_batch *b, int n);

/* ---- warm.c ---- */

/* A first training step and evaluation of `model` at `batch` on `devices`,
 * on made-up data, then "DONE MODEL at batch B on N devices in S s: P
 * programs built, L kernels first launched". 0 on success, else 1 after a
 * message "clnet COMMAND: ...". */
int cli_first_step(const char *command, const char *done, const char *model, long batch,
                   const char *devices);

/* ---- the commands (main in clnet.c calls these) ---- */

/* Every command's table, ended by NULL: what the command line's fuzz target
 * (tests/fuzz/fuzz_cli.c) feeds its words to. */
extern const cli_command *const cli_commands[];
extern const cli_command cli_devices_cmd, cli_train_cmd, cli_eval_cmd, cli_predict_cmd,
    cli_bench_cmd, cli_tune_cmd, cli_layers_cmd, cli_warm_cmd, cli_export_cmd, cli_summary_cmd;

int cmd_devices(int argc, char **argv); /* devices.c */
int cmd_train(int argc, char **argv);   /* train.c */
int cmd_eval(int argc, char **argv);    /* train.c */
int cmd_predict(int argc, char **argv); /* predict.c */
int cmd_bench(int argc, char **argv);   /* bench.c */
int cmd_tune(int argc, char **argv);    /* tune.c */
int cmd_layers(int argc, char **argv);  /* layers.c */
int cmd_warm(int argc, char **argv);    /* warm.c */
int cmd_export(int argc, char **argv);  /* export.c */
int cmd_summary(int argc, char **argv); /* summary.c */

#endif
