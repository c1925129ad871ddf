/* Shared pieces of the clnet program's commands. */
#ifndef CLNET_CLI_H
#define CLNET_CLI_H

#include "clnet.h"

/* ---- args.c: reading the command line (the commands call these) ---- */

/* "--name VALUE" or "--name=VALUE" at argv[*i]: 1 and *value set (NULL when
 * the value is missing, after a message) when argv[*i] is that option. */
int cli_option(int argc, char **argv, int *i, const char *name, const char **value);

/* Parsers that print "clnet: --name: ..." and return 0 on bad input. */
int cli_int(const char *name, const char *text, long min, long max, long *out);
int cli_float(const char *name, const char *text, double min, double max, double *out);

/* --data-npy X,Y[,TX,TY]: the paths into paths[0..*count); 0 after a
 * message unless there are 2 or 4. */
#define CLI_PATH_CAP 1024
int cli_npy_files(const char *list, char paths[4][CLI_PATH_CAP], int *count);

/* ---- the commands (main in clnet.c calls these) ---- */

int cmd_devices(int argc, char **argv); /* clnet.c */
int cmd_train(int argc, char **argv);   /* train.c */
int cmd_eval(int argc, char **argv);    /* train.c */
int cmd_predict(int argc, char **argv); /* predict.c */
int cmd_bench(int argc, char **argv);   /* bench.c */
int cmd_tune(int argc, char **argv);    /* tune.c */
int cmd_layers(int argc, char **argv);  /* layers.c */

#endif
