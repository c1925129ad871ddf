/* Checkpoints: a model's parameters and buffers, the optimizer's state and
 * the progress of a run, as safetensors (see clnet.h for the names). */
#ifndef CLNET_CHECKPOINT_H
#define CLNET_CHECKPOINT_H

#include "model.h"
#include "optim.h"

/* gemm_choices (may be NULL): the metadata "gemm_choices" (net.c). */
clnet_status clnet_checkpoint_save(const clnet_model *m, const clnet_optim *o, const char *path,
                                   const clnet_progress *progress, const char *gemm_choices);
/* Reads everything and checks it against the model before changing m and o;
 * on failure both are left as they were. bytes (size of them): the file's
 * contents, already read (from rank 0 of an MPI job), or NULL to read path.
 * *gemm_choices (when not NULL) gets a malloc'd copy of the metadata
 * "gemm_choices", or NULL. */
clnet_status clnet_checkpoint_load(clnet_model *m, clnet_optim *o, const char *path,
                                   const void *bytes, size_t size, clnet_progress *progress,
                                   char **gemm_choices);

#endif
