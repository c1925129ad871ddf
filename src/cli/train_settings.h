/* A run's settings in its checkpoints, and --resume taking them back (train_settings.c). */
#ifndef CLNET_CLI_TRAIN_SETTINGS_H
#define CLNET_CLI_TRAIN_SETTINGS_H

#include "train_args.h"

/* o's settings as "key=value" lines into out (cap bytes; "" when they would not fit). */
void train_settings_write(const train_options *o, char *out, size_t cap);

/* With --resume, `run` the checkpoint's recorded settings: each setting the
 * command line leaves out takes the checkpoint's value; one it gives must
 * equal it, unless --override names it. 0 to go on; 2 after a message that
 * names the old and new values (or an --override key that is no setting). */
int train_settings_resume(train_options *o, const char *run);

/* clnet eval: the normalisation and evaluation transforms (--mean, --std, --resize,
 * --center-crop) the command line leaves out, and the loss's --label-smoothing (so that
 * test_loss is the training's), from the checkpoint's run. 0, or 2 after a message. */
int train_settings_evaluate(train_options *o, const char *run);

#endif
