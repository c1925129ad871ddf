/* The GEMM choices a checkpoint records (gemm.h), and each convolution's
 * algorithm (layer.h's algorithms): written from what the bound devices'
 * training passes chose, and pinned again on resume, so a resumed run
 * computes with the very candidates it trained with. The text is, for each
 * distinct device, a line "@<device>" (its name, driver and platform as the
 * tuning database names it), then one line "<key>\t<bucket>\t<candidate>"
 * per shape or convolution ("gemm ..." keys are GEMMs'), sorted. */
#ifndef CLNET_CHOICES_H
#define CLNET_CHOICES_H

#include "trainer.h"

/* The text for a checkpoint (*out NULL when t is NULL; the caller frees it). */
clnet_status clnet_choices_record(const clnet_trainer *t, char **out);

/* The choices to save: the recorded ones, and those of `loaded` (the
 * checkpoint the net resumed from, or NULL) that this run did not make
 * again (shapes its steps did not meet, devices it does not have), so
 * that a run that resumes and saves keeps what it was given. *out: the
 * caller frees it. */
clnet_status clnet_choices_merge(const char *recorded, const char *loaded, char **out);

/* Pins a checkpoint's choices on the bound devices they were made on (the
 * same name, driver and platform); others choose afresh. Choices a device
 * cannot take only warn. */
void clnet_choices_pin(clnet_trainer *t, const char *text);

#endif
