/* Private parts of the data sets and the loader: a data set's fields (data.c,
 * data_idx.c, data_npy.c, data_cifar.c fill them; loader.c reads them), and a hook that
 * lets the tests make the loader's prefetch thread fail, to check that its
 * failure reaches the caller (nothing on that thread can fail on its own: its
 * memory is allocated up front). */
#ifndef CLNET_DATA_H
#define CLNET_DATA_H

#include "clnet.h"

#include <stddef.h>
#include <stdint.h>

struct clnet_dataset {
    int count;                   /* samples */
    int channels, height, width; /* clnet_dataset_shape's view of a sample */
    int rank, dims[4];           /* a sample's shape as the file has it */
    int from_idx;                /* IDX images: they feed any input of as many values */
    int unlabelled;              /* .npy samples without labels (all 0) */
    int classes;                 /* 1 + the largest label of the files as loaded (CIFAR: 10, 100) */
    char **class_names;          /* (classes) names, or NULL: the data has none */
    uint8_t *images;             /* (count, sample) bytes, or NULL with floats */
    float *floats;               /* (count, sample) float32 (.npy), or NULL */
    int32_t *labels;             /* (count) */
    /* Float targets, .npy float32 y (count, targets), in place of labels
     * (which are then all 0); NULL and 0 otherwise. With target_classes,
     * an integer y of a class per position (count, spatial...), held as
     * floats. */
    float *targets;
    int target_size, target_rank, target_dims[4];
    int target_classes;
    /* clnet_dataset_targets_from_samples: each sample is its own target,
     * read from images or floats (targets stays NULL) */
    int samples_as_targets;
    /* Image folders (data_folder.c): each sample's file, decoded by the loader as it needs
     * it (images and floats stay NULL); NULL otherwise. height and width are the first
     * image's; mixed_sizes not 0 says the others are not all that size (a loader must then
     * resize them). */
    char **files;
    int file_count;       /* files' entries (count may shrink below it: truncate) */
    int mixed_sizes;      /* the first image of another size, or -1: one of them (a split's) */
    size_t largest_image; /* the largest image's height * width */
    char **skipped;       /* (skipped_count) "FILE: what is wrong" of skip_bad_images */
    int skipped_count;
};

/* Heap copies (clnet_malloc; NULL when out of memory): s, and dir/name. */
char *clnet_copy_text(const char *s);
char *clnet_path_join(const char *dir, const char *name);

/* 1 when dir holds a folder (a class folder of an image folder), 0 otherwise. */
int clnet_is_image_folder(const char *dir);

/* The image folder root (root/CLASS/IMAGE), as clnet_dataset_load_with describes. */
clnet_status clnet_dataset_load_folder(clnet_dataset **out, const char *root,
                                       const clnet_dataset_options *opt);

/* clnet_dataset_load_idx, the first `limit` images (0: all) with every label
 * (the classes are those of the whole file). */
clnet_status clnet_dataset_load_idx_first(clnet_dataset **out, const char *images_path,
                                          const char *labels_path, int limit);

/* 10 when dir holds CIFAR-10's binary files (data_batch_1.bin or
 * test_batch.bin), else 100 when it holds CIFAR-100's (train.bin or
 * test.bin), else 0 (data_cifar.c). */
int clnet_cifar_version(const char *dir);

/* The split (train 1: CIFAR-10's data_batch_1..5.bin, CIFAR-100's train.bin;
 * 0: test_batch.bin, test.bin) of the CIFAR `version` (10 or 100) in dir, the
 * first `limit` records (0: all), with the class names when the names file
 * is there (batches.meta.txt, fine_label_names.txt). */
clnet_status clnet_dataset_load_cifar(clnet_dataset **out, const char *dir, int version, int train,
                                      int limit);

/* Makes the prefetch thread fail with CLNET_ERR_INTERNAL, once, when it
 * prepares the batch that starts at (epoch, position). Set it before that
 * batch is requested: a batch already prepared ahead is not prepared again. */
void clnet_loader_inject_failure(clnet_loader *l, int epoch, int64_t position);

/* The batch the next clnet_loader_next will return, once the prefetch thread
 * has it ready (this waits for it): 1, *out and its serial, its memory
 * valid until the call after that next. 0 when there is none (a failure
 * waits for next to report it). The caller's current batch stays valid. */
int clnet_loader_peek(clnet_loader *l, clnet_batch *out, uint64_t *serial);

/* The serial of the batch the last clnet_loader_next returned (0: none).
 * Every batch a loader prepares gets a serial no other batch of the process
 * has had: two batches with one serial hold the same samples. */
uint64_t clnet_loader_serial(const clnet_loader *l);

/* The floats of one sample of the loader's batches (after its transforms). */
size_t clnet_loader_sample_values(const clnet_loader *l);

/* 1 for images read from IDX files: they feed any model input that has as
 * many values (Fashion-MNIST read as channels=1 length=784). */
int clnet_dataset_from_idx(const clnet_dataset *ds);

#endif
