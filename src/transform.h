/* The loader's image transforms, one sample at a time, named after torchvision's: resize
 * (bilinear), random resized crop, center crop, random crop with padding, horizontal flip. The
 * random ones draw from a key made of (seed, epoch, the sample's index in the data set), so a
 * sample is transformed alike at any batch size, thread count, split across devices or after a
 * resume. Normalisation and noise stay the loader's (loader.c). */
#ifndef CLNET_TRANSFORM_H
#define CLNET_TRANSFORM_H

#include "clnet.h"

#include <stddef.h>
#include <stdint.h>

/* What the random transforms drew for one sample. */
typedef struct {
    int top, left, height, width; /* the source window that is resized (the whole image
                                     unless a random resized crop chose a part) */
    int pad_top, pad_left;        /* the random crop's corner in the padded image, 0 to 2 pad */
    int flip;                     /* 1: mirrored left to right */
} clnet_transform_draw;

/* The size transforms t give a (height, width) image: the center crop's if set, else the
 * resize's, else the image's own. */
void clnet_transforms_out_size(const clnet_transforms *t, int height, int width, int *out_height,
                               int *out_width);

/* CLNET_ERR_INVALID_ARGUMENT, naming the field, for transforms that cannot apply to
 * (height, width) images: a negative size, one side of a size given without the other, a
 * center crop larger than the image it crops, a pad over 1024, a resized-crop scale outside
 * (0, 1]. `what` names the caller. */
clnet_status clnet_transforms_check(const clnet_transforms *t, int height, int width,
                                    const char *what);

/* 1 when t changes nothing (every field 0). */
int clnet_transforms_none(const clnet_transforms *t);

/* The draws of sample `sample` in epoch `epoch` for a (height, width) image: every draw 0 and
 * the whole image for transforms without random ones. */
clnet_transform_draw clnet_transforms_draw(const clnet_transforms *t, int epoch, int32_t sample,
                                           int height, int width);

/* dst (C, out_h, out_w) = the transformed image of src (C, height, width), values as they
 * are (the loader passes pixels in [0, 1]), padding 0, with the draws d; scratch holds
 * C * resize_h * resize_w floats (clnet_transforms_scratch). */
void clnet_transforms_apply(const clnet_transforms *t, const clnet_transform_draw *d,
                            const float *src, int channels, int height, int width, float *scratch,
                            float *dst);

/* The floats clnet_transforms_apply's scratch needs for (channels, height, width) images. */
size_t clnet_transforms_scratch(const clnet_transforms *t, int channels, int height, int width);

/* dst (out_h, out_w) = the window (top, left, h, w) of src (height rows of `stride` floats)
 * resized as torch.nn.functional.interpolate(mode="bilinear", align_corners=False,
 * antialias=False) resizes that crop of the image. */
void clnet_resize_bilinear(const float *src, int stride, int top, int left, int h, int w,
                           float *dst, int out_h, int out_w);

#endif
