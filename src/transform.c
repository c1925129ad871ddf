/* The loader's image transforms (transform.h): what they draw for a sample, and how they move
 * its pixels. */
#include "transform.h"
#include "error.h"
#include "random.h"

#include <math.h>
#include <string.h>

#define AUGMENT_DOMAIN 0x6175676D656Eull /* "augmen": apart from the shuffles and the noise */
#define MAX_PAD        1024

int clnet_transforms_none(const clnet_transforms *t) {
    return !t->resize_height && !t->resize_width && !t->crop_height && !t->crop_width &&
           t->resized_crop_min == 0.0f && !t->pad && !t->flip;
}

/* The size of the image before the center crop: the resize's, or the image's own. */
static void resized_size(const clnet_transforms *t, int height, int width, int *h, int *w) {
    *h = t->resize_height ? t->resize_height : height;
    *w = t->resize_width ? t->resize_width : width;
}

void clnet_transforms_out_size(const clnet_transforms *t, int height, int width, int *out_height,
                               int *out_width) {
    resized_size(t, height, width, out_height, out_width);
    if (t->crop_height) *out_height = t->crop_height;
    if (t->crop_width) *out_width = t->crop_width;
}

clnet_status clnet_transforms_check(const clnet_transforms *t, int height, int width,
                                    const char *what) {
    if (t->resize_height < 0 || t->resize_width < 0 || t->crop_height < 0 || t->crop_width < 0 ||
        (!t->resize_height != !t->resize_width) || (!t->crop_height != !t->crop_width))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s: transforms: resize %dx%d, center crop %dx%d: each size is both "
                          "sides above 0, or 0x0 for none",
                          what, t->resize_height, t->resize_width, t->crop_height, t->crop_width);
    int h, w;
    resized_size(t, height, width, &h, &w);
    if (t->crop_height > h || t->crop_width > w)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s: transforms: a center crop of %dx%d from images of %dx%d%s", what,
                          t->crop_height, t->crop_width, h, w,
                          t->resize_height ? " (after the resize)" : "");
    if (t->pad < 0 || t->pad > MAX_PAD)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: transforms: pad %d: want 0 to %d pixels",
                          what, t->pad, MAX_PAD);
    if (!(t->resized_crop_min >= 0.0f && t->resized_crop_min <= 1.0f))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s: transforms: resized_crop_min %g: want a share of the area in (0, "
                          "1], or 0 for none",
                          what, (double)t->resized_crop_min);
    if (t->flip != 0 && t->flip != 1)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: transforms: flip %d: want 0 or 1", what,
                          t->flip);
    return CLNET_OK;
}

/* ---- the draws ------------------------------------------------------------------------ */

static double uniform(clnet_xoshiro *r, double lo, double hi) {
    return lo + (hi - lo) * (double)(clnet_xoshiro_next(r) >> 11) * 0x1p-53;
}

/* torchvision's RandomResizedCrop.get_params with ratio (3/4, 4/3): ten tries at a window of
 * a random share of the area and a log-uniform ratio that fits, else the central window of
 * the image's ratio brought into the range. */
static void resized_crop_window(clnet_xoshiro *r, float min_scale, int height, int width,
                                clnet_transform_draw *d) {
    const double lo = log(3.0 / 4.0), hi = log(4.0 / 3.0), area = (double)height * width;
    for (int attempt = 0; attempt < 10; attempt++) {
        double target = area * uniform(r, min_scale, 1.0), ratio = exp(uniform(r, lo, hi));
        int w = (int)lround(sqrt(target * ratio)), h = (int)lround(sqrt(target / ratio));
        if (w > 0 && w <= width && h > 0 && h <= height) {
            d->top = (int)clnet_uniform_below(r, (uint32_t)(height - h + 1));
            d->left = (int)clnet_uniform_below(r, (uint32_t)(width - w + 1));
            d->height = h;
            d->width = w;
            return;
        }
    }
    double in_ratio = (double)width / height;
    int w = width, h = height;
    if (in_ratio < 3.0 / 4.0)
        h = (int)lround(w / (3.0 / 4.0));
    else if (in_ratio > 4.0 / 3.0)
        w = (int)lround(h * (4.0 / 3.0));
    d->top = (height - h) / 2;
    d->left = (width - w) / 2;
    d->height = h;
    d->width = w;
}

clnet_transform_draw clnet_transforms_draw(const clnet_transforms *t, int epoch, int32_t sample,
                                           int height, int width) {
    clnet_transform_draw d = {.height = height, .width = width};
    if (t->resized_crop_min == 0.0f && !t->pad && !t->flip) return d;
    uint64_t which = (uint64_t)(uint32_t)epoch << 32 | (uint32_t)sample;
    clnet_xoshiro r = clnet_xoshiro_from(
        clnet_mix64(clnet_mix64(t->seed ^ AUGMENT_DOMAIN) + CLNET_GOLDEN * which));
    if (t->resized_crop_min > 0.0f) resized_crop_window(&r, t->resized_crop_min, height, width, &d);
    if (t->pad) {
        d.pad_top = (int)clnet_uniform_below(&r, (uint32_t)(2 * t->pad + 1));
        d.pad_left = (int)clnet_uniform_below(&r, (uint32_t)(2 * t->pad + 1));
    }
    if (t->flip) d.flip = (int)(clnet_xoshiro_next(&r) >> 63);
    return d;
}

/* ---- moving the pixels ------------------------------------------------------------------ */

/* PyTorch's source coordinate of output index i for a scale of in / out (align_corners False):
 * the index below, the one above (the same at the last) and the weight of the one above. */
static void source_index(int i, float scale, int in, int *lo, int *hi, float *frac) {
    float x = scale * ((float)i + 0.5f) - 0.5f;
    if (x < 0) x = 0;
    *lo = (int)x;
    if (*lo > in - 1) *lo = in - 1;
    *hi = *lo + (*lo < in - 1);
    *frac = x - (float)*lo;
}

void clnet_resize_bilinear(const float *src, int stride, int top, int left, int h, int w,
                           float *dst, int out_h, int out_w) {
    const float sy = (float)h / (float)out_h, sx = (float)w / (float)out_w;
    for (int y = 0; y < out_h; y++) {
        int y0, y1;
        float fy;
        source_index(y, sy, h, &y0, &y1, &fy);
        const float *r0 = src + (size_t)(top + y0) * stride + left;
        const float *r1 = src + (size_t)(top + y1) * stride + left;
        for (int x = 0; x < out_w; x++) {
            int x0, x1;
            float fx;
            source_index(x, sx, w, &x0, &x1, &fx);
            dst[(size_t)y * out_w + x] = (1.0f - fy) * ((1.0f - fx) * r0[x0] + fx * r0[x1]) +
                                         fy * ((1.0f - fx) * r1[x0] + fx * r1[x1]);
        }
    }
}

size_t clnet_transforms_scratch(const clnet_transforms *t, int channels, int height, int width) {
    int h, w;
    resized_size(t, height, width, &h, &w);
    if (t->resized_crop_min > 0.0f) clnet_transforms_out_size(t, height, width, &h, &w);
    return (size_t)channels * (size_t)h * (size_t)w;
}

/* The image before the crops: src itself, or resized into scratch. Its size in *h, *w. */
static const float *resize_stage(const clnet_transforms *t, const clnet_transform_draw *d,
                                 const float *src, int channels, int height, int width,
                                 float *scratch, int *h, int *w) {
    if (t->resized_crop_min > 0.0f)
        clnet_transforms_out_size(t, height, width, h, w);
    else
        resized_size(t, height, width, h, w);
    int whole = d->top == 0 && d->left == 0 && d->height == height && d->width == width;
    if (whole && *h == height && *w == width) return src;
    for (int c = 0; c < channels; c++)
        clnet_resize_bilinear(src + (size_t)c * height * width, width, d->top, d->left, d->height,
                              d->width, scratch + (size_t)c * *h * *w, *h, *w);
    return scratch;
}

void clnet_transforms_apply(const clnet_transforms *t, const clnet_transform_draw *d,
                            const float *src, int channels, int height, int width, float *scratch,
                            float *dst) {
    int h, w, oh, ow;
    const float *img = resize_stage(t, d, src, channels, height, width, scratch, &h, &w);
    clnet_transforms_out_size(t, height, width, &oh, &ow);
    /* torchvision's center_crop: top int(round((h - oh) / 2)), Python rounding half to even */
    int top = t->resized_crop_min > 0.0f ? 0 : (int)nearbyint((h - oh) / 2.0);
    int left = t->resized_crop_min > 0.0f ? 0 : (int)nearbyint((w - ow) / 2.0);
    /* the random crop: output (y, x) is the padded crop's (y + pad_top, x + pad_left), the
     * crop's own (y + pad_top - pad, ...), zero outside it; the flip mirrors x first */
    int dy = d->pad_top - t->pad, dx = d->pad_left - t->pad;
    for (int c = 0; c < channels; c++) {
        const float *plane = img + (size_t)c * h * w;
        float *out = dst + (size_t)c * oh * ow;
        for (int y = 0; y < oh; y++) {
            int cy = y + dy;
            float *row = out + (size_t)y * ow;
            if (cy < 0 || cy >= oh) {
                memset(row, 0, (size_t)ow * sizeof *row);
                continue;
            }
            const float *from = plane + (size_t)(top + cy) * w + left;
            for (int x = 0; x < ow; x++) {
                int cx = (d->flip ? ow - 1 - x : x) + dx;
                row[x] = cx >= 0 && cx < ow ? from[cx] : 0.0f;
            }
        }
    }
}
