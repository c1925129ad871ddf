/* clnet eval's --top-k and --confusion (eval_classes.c). */
#ifndef CLNET_CLI_EVAL_CLASSES_H
#define CLNET_CLI_EVAL_CLASSES_H

#include "train_session.h"

/* Before any work: --top-k and --confusion fit the model (a classifier, K at most its
 * classes) and the file can be written; 0, or 2 after a message. */
int eval_classes_check(const train_options *o, const clnet_net *net);

/* The test set's top-K accuracy (a line test_topK_accuracy=... on stdout) and confusion
 * matrix (--confusion's CSV; on stderr too for a few classes), on rank 0; 0, or the exit
 * code. Nothing when neither was asked. */
int eval_classes(const train_options *o, train_session *s);

#endif
