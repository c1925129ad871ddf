/* The loader's image transforms (no OpenCL device needed): the bilinear resize against
 * PyTorch's (tests/fixtures/transforms/, make_transform_fixtures.py), the crops, padding and
 * flips against a reference that pads and slices as torchvision does, the draws keyed by
 * (seed, epoch, sample) whatever the batch, per-channel normalisation, and the checks. */
#include "harness.h"
#include "npy.h"
#include "random.h"
#include "transform.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CLNET_FIXTURES_DIR
#error "CLNET_FIXTURES_DIR must name tests/fixtures"
#endif

static char dir[64];

/* The test's own folder under the one main removes (made inside a test: it asserts). */
static const char *folder(void) {
    if (!dir[0]) test_make_dir(dir, sizeof dir);
    return dir;
}

/* A uint8 .npy file of shape (rank dims), written by hand: NumPy's version 1.0 layout. */
static void write_u8_npy(const char *path, const uint8_t *data, int rank, const int *shape) {
    char dict[128], header[128];
    size_t count = 1, used = 0;
    used += (size_t)snprintf(dict, sizeof dict,
                             "{'descr': '|u1', 'fortran_order': False, "
                             "'shape': (");
    for (int i = 0; i < rank; i++) {
        used += (size_t)snprintf(dict + used, sizeof dict - used, "%d,%s", shape[i],
                                 i + 1 < rank ? " " : "");
        count *= (size_t)shape[i];
    }
    snprintf(dict + used, sizeof dict - used, "), }");
    size_t len = strlen(dict), total = 10 + len + 1, padded = (total + 63) / 64 * 64;
    memset(header, ' ', sizeof header);
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = (char)((padded - 10) & 0xff);
    header[9] = (char)((padded - 10) >> 8);
    memcpy(header + 10, dict, len);
    header[padded - 1] = '\n';
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(header, 1, padded, f), padded);
    ck_assert_uint_eq(fwrite(data, 1, count, f), count);
    ck_assert_int_eq(fclose(f), 0);
}

/* n samples of (c, h, w) bytes: sample i's value j from a formula, as a data set. */
static clnet_dataset *byte_images(int n, int c, int h, int w, const uint8_t *each) {
    char path[128];
    snprintf(path, sizeof path, "%s/x.npy", folder());
    size_t size = (size_t)c * h * w;
    uint8_t *data = malloc((size_t)n * size);
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < size; j++)
            data[(size_t)i * size + j] = each ? each[j] : (uint8_t)((i * 37 + j * 11) % 256);
    int shape[4] = {n, c, h, w};
    write_u8_npy(path, data, 4, shape);
    free(data);
    clnet_dataset *ds = NULL;
    ck_assert_msg(clnet_dataset_load_npy(&ds, path, NULL) == CLNET_OK, "%s", clnet_last_error());
    return ds;
}

static clnet_npy read_fixture(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/transforms/%s", CLNET_FIXTURES_DIR, name);
    clnet_npy a;
    ck_assert_msg(clnet_npy_read(path, &a) == CLNET_OK, "%s", clnet_last_error());
    return a;
}

static float *unit_floats(const clnet_npy *image) {
    float *x = malloc(image->count * sizeof *x);
    for (size_t j = 0; j < image->count; j++) x[j] = (float)((uint8_t *)image->data)[j] / 255.0f;
    return x;
}

static const struct {
    int t, l, h, w, oh, ow;
} CASES[] = {{0, 0, 13, 17, 26, 34}, {0, 0, 13, 17, 7, 5},   {0, 0, 13, 17, 13, 17},
             {0, 0, 13, 17, 20, 9},  {0, 0, 13, 17, 32, 32}, {2, 3, 9, 11, 8, 8},
             {5, 1, 4, 15, 10, 6},   {12, 16, 1, 1, 3, 4}};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])

static double max_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t j = 0; j < n; j++) m = fmax(m, fabs((double)a[j] - (double)b[j]));
    return m;
}

START_TEST(bilinear_resize_matches_pytorch) {
    clnet_npy image = read_fixture("image.npy");
    float *x = unit_floats(&image);
    for (int k = 0; k < NCASES; k++) {
        char name[96];
        snprintf(name, sizeof name, "resize_%d_%d_%d_%d_to_%dx%d.npy", CASES[k].t, CASES[k].l,
                 CASES[k].h, CASES[k].w, CASES[k].oh, CASES[k].ow);
        clnet_npy want = read_fixture(name);
        size_t plane = (size_t)CASES[k].oh * CASES[k].ow;
        float *got = malloc(3 * plane * sizeof *got);
        for (int c = 0; c < 3; c++)
            clnet_resize_bilinear(x + (size_t)c * 13 * 17, 17, CASES[k].t, CASES[k].l, CASES[k].h,
                                  CASES[k].w, got + c * plane, CASES[k].oh, CASES[k].ow);
        double d = max_diff(got, want.data, 3 * plane);
        printf("resize %s: largest difference from PyTorch %.3g\n", name, d);
        ck_assert_msg(d <= 1e-5, "%s: %g from PyTorch's", name, d);
        free(got);
        clnet_npy_free(&want);
    }
    free(x);
    clnet_npy_free(&image);
}
END_TEST

/* The loader resizes as PyTorch does, then normalises each channel with its own mean and std. */
START_TEST(loader_resizes_and_normalises_per_channel_as_pytorch) {
    clnet_npy image = read_fixture("image.npy");
    clnet_npy want = read_fixture("resize_0_0_13_17_to_26x34.npy");
    clnet_dataset *ds = byte_images(3, 3, 13, 17, image.data);
    const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, std[3] = {0.247f, 0.243f, 0.261f};
    clnet_loader_config cfg = {.batch = 2, .mean = 0, .std = 1, .norm_channels = 3};
    memcpy(cfg.channel_mean, mean, sizeof mean);
    memcpy(cfg.channel_std, std, sizeof std);
    cfg.transforms = (clnet_transforms){.resize_height = 26, .resize_width = 34};
    clnet_loader *l = NULL;
    ck_assert_msg(clnet_loader_create(&l, ds, &cfg) == CLNET_OK, "%s", clnet_last_error());
    int c, h, w;
    clnet_loader_shape(l, &c, &h, &w);
    ck_assert(c == 3 && h == 26 && w == 34);
    clnet_batch b;
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    size_t plane = 26 * 34;
    double worst = 0;
    for (int i = 0; i < b.n; i++)
        for (size_t j = 0; j < 3 * plane; j++) {
            float expect = (((float *)want.data)[j] - mean[j / plane]) / std[j / plane];
            worst = fmax(worst, fabs((double)b.images[i * 3 * plane + j] - expect));
        }
    printf("loader resize and normalise: largest difference from PyTorch %.3g\n", worst);
    ck_assert_msg(worst <= 1e-5 / 0.243, "%g", worst);
    clnet_loader_free(l);

    /* Without transforms, per channel: exactly (byte / 255 - mean) / std. */
    cfg.transforms = (clnet_transforms){0};
    ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    const uint8_t *bytes = image.data;
    for (size_t j = 0; j < 3 * 13 * 17; j++) {
        int ch = (int)(j / (13 * 17));
        float expect = ((float)bytes[j] / 255.0f - mean[ch]) / std[ch];
        ck_assert_msg(b.images[j] == expect, "value %zu: %g, want %g", j, b.images[j], expect);
    }
    clnet_loader_free(l);

    /* With noise, each channel's z is scaled by its own std: (x + noise z - m_c) / s_c, the
     * noisy values of a loader without normalisation normalised afterwards. */
    clnet_loader_config plain = {.batch = 1, .mean = 0, .std = 1, .noise = 0.1f, .noise_seed = 4};
    clnet_loader *p = NULL;
    cfg.noise = 0.1f, cfg.noise_seed = 4, cfg.batch = 1;
    ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
    ck_assert_int_eq(clnet_loader_create(&p, ds, &plain), CLNET_OK);
    clnet_batch pb;
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    ck_assert_int_eq(clnet_loader_next(p, &pb), CLNET_OK);
    worst = 0;
    for (size_t j = 0; j < 3 * 13 * 17; j++) {
        int ch = (int)(j / (13 * 17));
        worst = fmax(worst, fabs(b.images[j] - (pb.images[j] - mean[ch]) / std[ch]));
    }
    printf("per-channel noise: largest difference from the plain loader's, normalised %.3g\n",
           worst);
    ck_assert_msg(worst <= 1e-5, "%g", worst);
    clnet_loader_free(l);
    clnet_loader_free(p);
    clnet_dataset_free(ds);
    clnet_npy_free(&want);
    clnet_npy_free(&image);
}
END_TEST

/* torchvision's own transforms (make_transform_fixtures.py's TV_CASES, by
 * torchvision.transforms.functional): the resize within 1e-5, the crops, pads and flips after
 * it exact; the per-channel normalisation (F.normalize) through the loader within 1e-6. */
static const struct {
    int rh, rw, ch, cw, pad, pt, pl, flip;
} TV_CASES[] = {{0, 0, 8, 8, 0, 0, 0, 0}, {0, 0, 7, 10, 0, 0, 0, 1},   {0, 0, 12, 16, 0, 0, 0, 0},
                {0, 0, 0, 0, 2, 0, 4, 0}, {0, 0, 0, 0, 3, 5, 1, 1},    {20, 24, 16, 16, 4, 8, 0, 1},
                {9, 9, 0, 0, 1, 2, 2, 0}, {30, 20, 25, 15, 2, 1, 3, 1}};

START_TEST(transforms_match_torchvision) {
    clnet_npy image = read_fixture("image.npy");
    float *x = unit_floats(&image);
    for (int k = 0; k < (int)(sizeof TV_CASES / sizeof *TV_CASES); k++) {
        char name[32];
        snprintf(name, sizeof name, "tv_%d.npy", k);
        clnet_npy want = read_fixture(name);
        clnet_transforms t = {.resize_height = TV_CASES[k].rh,
                              .resize_width = TV_CASES[k].rw,
                              .crop_height = TV_CASES[k].ch,
                              .crop_width = TV_CASES[k].cw,
                              .pad = TV_CASES[k].pad,
                              .flip = TV_CASES[k].flip};
        clnet_transform_draw d = {.top = 0,
                                  .left = 0,
                                  .height = 13,
                                  .width = 17,
                                  .pad_top = TV_CASES[k].pt,
                                  .pad_left = TV_CASES[k].pl,
                                  .flip = TV_CASES[k].flip};
        int oh, ow;
        ck_assert_int_eq(clnet_transforms_check(&t, 13, 17, "test"), CLNET_OK);
        clnet_transforms_out_size(&t, 13, 17, &oh, &ow);
        size_t n = 3 * (size_t)oh * ow;
        ck_assert_msg(want.count == n, "%s: %zu values, clnet gives %zu", name, want.count, n);
        float *got = malloc(n * sizeof *got);
        float *scratch = malloc((clnet_transforms_scratch(&t, 3, 13, 17) + 1) * sizeof *scratch);
        clnet_transforms_apply(&t, &d, x, 3, 13, 17, scratch, got);
        double diff = max_diff(got, want.data, n);
        printf("torchvision %s (resize %dx%d, crop %dx%d, pad %d at %d,%d, flip %d): largest "
               "difference %.3g\n",
               name, t.resize_height, t.resize_width, t.crop_height, t.crop_width, t.pad, d.pad_top,
               d.pad_left, d.flip, diff);
        if (t.resize_height)
            ck_assert_msg(diff <= 1e-5, "%s: %g from torchvision's", name, diff);
        else
            ck_assert_msg(diff == 0, "%s: %g from torchvision's (want exact)", name, diff);
        free(got), free(scratch);
        clnet_npy_free(&want);
    }
    /* Normalize, per channel, through a loader of the picture */
    clnet_dataset *ds = byte_images(1, 3, 13, 17, image.data);
    clnet_loader_config cfg = {.batch = 1,
                               .std = 1,
                               .norm_channels = 3,
                               .channel_mean = {0.4914f, 0.4822f, 0.4465f},
                               .channel_std = {0.2470f, 0.2435f, 0.2616f}};
    clnet_loader *l = NULL;
    clnet_batch b;
    ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    clnet_npy want = read_fixture("tv_normalize.npy");
    double diff = max_diff(b.images, want.data, want.count);
    printf("torchvision Normalize: largest difference %.3g\n", diff);
    ck_assert_msg(diff <= 1e-5, "Normalize: %g from torchvision's", diff);
    clnet_npy_free(&want);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
    free(x);
    clnet_npy_free(&image);
}
END_TEST

/* What torchvision does, written the long way: resize skipped, center crop, a padded copy,
 * a window of it at the draw's corner, then the mirror. */
static void reference(const float *src, int C, int H, int W, const clnet_transforms *t,
                      const clnet_transform_draw *d, float *dst) {
    int ch = t->crop_height ? t->crop_height : H, cw = t->crop_width ? t->crop_width : W;
    int top = (int)nearbyint((H - ch) / 2.0), left = (int)nearbyint((W - cw) / 2.0), p = t->pad;
    int ph = ch + 2 * p, pw = cw + 2 * p;
    float *padded = calloc((size_t)C * ph * pw, sizeof *padded);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < ch; y++)
            for (int x = 0; x < cw; x++)
                padded[((size_t)c * ph + y + p) * pw + x + p] =
                    src[((size_t)c * H + top + y) * W + left + x];
    for (int c = 0; c < C; c++)
        for (int y = 0; y < ch; y++)
            for (int x = 0; x < cw; x++) {
                float v = padded[((size_t)c * ph + y + d->pad_top) * pw + x + d->pad_left];
                dst[((size_t)c * ch + y) * cw + (d->flip ? cw - 1 - x : x)] = v;
            }
    free(padded);
}

START_TEST(crops_pads_and_flips_match_the_reference) {
    uint64_t seed = test_seed_from_env("CLNET_TRANSFORM_SEED", 20261203);
    printf("crops, pads and flips: seed %llu (CLNET_TRANSFORM_SEED replays)\n",
           (unsigned long long)seed);
    clnet_xoshiro r = clnet_xoshiro_from(seed);
    for (int k = 0; k < 300; k++) {
        int C = 1 + 2 * (int)clnet_uniform_below(&r, 2), H = 1 + (int)clnet_uniform_below(&r, 20);
        int W = 1 + (int)clnet_uniform_below(&r, 20);
        clnet_transforms t = {.pad = (int)clnet_uniform_below(&r, 5),
                              .flip = (int)clnet_uniform_below(&r, 2),
                              .seed = clnet_xoshiro_next(&r)};
        if (clnet_uniform_below(&r, 2)) {
            t.crop_height = 1 + (int)clnet_uniform_below(&r, (uint32_t)H);
            t.crop_width = 1 + (int)clnet_uniform_below(&r, (uint32_t)W);
        }
        ck_assert_int_eq(clnet_transforms_check(&t, H, W, "test"), CLNET_OK);
        int oh, ow;
        clnet_transforms_out_size(&t, H, W, &oh, &ow);
        size_t n = (size_t)C * H * W, out = (size_t)C * oh * ow;
        float *src = malloc(n * sizeof *src), *got = malloc(out * sizeof *got);
        float *want = malloc(out * sizeof *want);
        float *scratch = malloc((clnet_transforms_scratch(&t, C, H, W) + 1) * sizeof *scratch);
        test_random_floats(src, n, seed + (uint64_t)k);
        clnet_transform_draw d = clnet_transforms_draw(&t, k % 3, k, H, W);
        ck_assert(d.pad_top >= 0 && d.pad_top <= 2 * t.pad && d.pad_left >= 0 &&
                  d.pad_left <= 2 * t.pad && (d.flip == 0 || t.flip));
        clnet_transforms_apply(&t, &d, src, C, H, W, scratch, got);
        reference(src, C, H, W, &t, &d, want);
        ck_assert_msg(memcmp(got, want, out * sizeof *got) == 0,
                      "case %d (seed %llu): %dx%dx%d crop %dx%d pad %d draw (%d, %d, flip %d) "
                      "differs from the reference",
                      k, (unsigned long long)seed, C, H, W, t.crop_height, t.crop_width, t.pad,
                      d.pad_top, d.pad_left, d.flip);
        free(src), free(got), free(want), free(scratch);
    }
}
END_TEST

/* Every sample's draws depend on (seed, epoch, sample) alone: two loaders of different batch
 * sizes, one of them seeked, give each sample the same floats; flips are about half. */
START_TEST(draws_are_keyed_by_seed_epoch_and_sample) {
    enum { N = 40 };
    clnet_dataset *ds = byte_images(N, 1, 6, 8, NULL);
    clnet_loader_config cfg = {.batch = 3, .seed = 5, .shuffle = 1, .mean = 0, .std = 1};
    cfg.transforms = (clnet_transforms){.pad = 2, .flip = 1, .seed = 99};
    clnet_loader *a = NULL, *b = NULL;
    ck_assert_int_eq(clnet_loader_create(&a, ds, &cfg), CLNET_OK);
    cfg.batch = 7;
    ck_assert_int_eq(clnet_loader_create(&b, ds, &cfg), CLNET_OK);
    ck_assert_int_eq(clnet_loader_seek(b, 1, 0), CLNET_OK);
    /* epoch 1 of loader a, sample by sample, against loader b's */
    float first[N][48], second[N][48];
    int32_t seen_a[N], seen_b[N];
    clnet_batch x;
    int at = 0;
    while (at < 2 * N) { /* a: epochs 0 and 1 */
        ck_assert_int_eq(clnet_loader_next(a, &x), CLNET_OK);
        for (int i = 0; i < x.n; i++, at++)
            if (x.epoch == 1) memcpy(first[at - N], x.images + i * 48, sizeof first[0]);
        if (x.epoch == 1)
            for (int i = 0; i < x.n; i++) seen_a[at - x.n + i - N] = x.labels[i];
    }
    for (at = 0; at < N;) {
        ck_assert_int_eq(clnet_loader_next(b, &x), CLNET_OK);
        ck_assert_int_eq(x.epoch, 1);
        for (int i = 0; i < x.n; i++, at++) {
            memcpy(second[at], x.images + i * 48, sizeof second[0]);
            seen_b[at] = x.labels[i];
        }
    }
    ck_assert_mem_eq(seen_a, seen_b, sizeof seen_a);
    ck_assert_mem_eq(first, second, sizeof first);
    clnet_loader_free(a);
    clnet_loader_free(b);

    int flips = 0, corners[5][5] = {{0}};
    for (int s = 0; s < 2000; s++) {
        clnet_transform_draw d = clnet_transforms_draw(&cfg.transforms, s % 7, s, 6, 8);
        clnet_transform_draw again = clnet_transforms_draw(&cfg.transforms, s % 7, s, 6, 8);
        ck_assert_mem_eq(&d, &again, sizeof d);
        flips += d.flip;
        corners[d.pad_top][d.pad_left]++;
    }
    printf("draws: %d flips of 2000; corners from %d to %d of 80 each\n", flips, corners[0][0],
           corners[4][4]);
    ck_assert_msg(flips > 900 && flips < 1100, "%d flips of 2000", flips);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) ck_assert_msg(corners[i][j] > 40, "corner (%d, %d)", i, j);
    cfg.transforms.seed = 100; /* another seed, other draws */
    int same = 0;
    for (int s = 0; s < 200; s++) {
        clnet_transforms other = cfg.transforms;
        other.seed = 99;
        clnet_transform_draw d1 = clnet_transforms_draw(&cfg.transforms, 0, s, 6, 8);
        clnet_transform_draw d2 = clnet_transforms_draw(&other, 0, s, 6, 8);
        same += memcmp(&d1, &d2, sizeof d1) == 0;
    }
    ck_assert_msg(same < 40, "%d of 200 draws alike under two seeds", same);
    clnet_dataset_free(ds);
}
END_TEST

/* Random resized crop: windows inside the image, of a share of its area in [min, 1] and a
 * ratio in [3/4, 4/3] up to rounding, resized to the output size as PyTorch resizes them. */
START_TEST(random_resized_crops_follow_torchvision) {
    clnet_transforms t = {
        .resize_height = 8, .resize_width = 8, .resized_crop_min = 0.2f, .seed = 7};
    int H = 13, W = 17, small = 0, large = 0;
    for (int s = 0; s < 3000; s++) {
        clnet_transform_draw d = clnet_transforms_draw(&t, 0, s, H, W);
        ck_assert(d.top >= 0 && d.left >= 0 && d.height >= 1 && d.width >= 1);
        ck_assert(d.top + d.height <= H && d.left + d.width <= W);
        double share = (double)d.height * d.width / (H * W), ratio = (double)d.width / d.height;
        /* rounding each side by half a pixel moves the share and the ratio */
        double slack_share = 0.5 * (d.height + d.width + 0.5) / (H * W);
        double slack_ratio = 0.5 / d.height + 0.5 * d.width / ((double)d.height * d.height);
        ck_assert_msg(share >= 0.2 - slack_share && share <= 1.0 + 1e-12, "share %g", share);
        ck_assert_msg(ratio >= 0.75 - slack_ratio - 1e-9 && ratio <= 4.0 / 3 + slack_ratio + 1e-9,
                      "ratio %g (%dx%d)", ratio, d.height, d.width);
        small += share < 0.4;
        large += share > 0.8;
    }
    printf("random resized crops: %d of 3000 under 0.4 of the area, %d over 0.8\n", small, large);
    ck_assert(small > 300 && large > 100);

    /* the loader's output is the drawn window resized (checked against PyTorch above) */
    clnet_npy image = read_fixture("image.npy");
    clnet_dataset *ds = byte_images(4, 3, 13, 17, image.data);
    clnet_loader_config cfg = {.batch = 4, .mean = 0, .std = 1, .transforms = t};
    clnet_loader *l = NULL;
    ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
    clnet_batch b;
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    float *x = unit_floats(&image), want[3 * 64];
    for (int i = 0; i < 4; i++) {
        clnet_transform_draw d = clnet_transforms_draw(&t, 0, i, H, W);
        for (int c = 0; c < 3; c++)
            clnet_resize_bilinear(x + c * H * W, W, d.top, d.left, d.height, d.width, want + c * 64,
                                  8, 8);
        ck_assert_mem_eq(b.images + i * 3 * 64, want, sizeof want);
    }
    free(x);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
    clnet_npy_free(&image);
}
END_TEST

static void expect_refused(const clnet_dataset *ds, const clnet_loader_config *cfg,
                           const char *expect) {
    clnet_loader *l = (clnet_loader *)&l;
    clnet_status s = clnet_loader_create(&l, ds, cfg);
    ck_assert_msg(s == CLNET_ERR_INVALID_ARGUMENT, "'%s': status %d", expect, s);
    ck_assert_ptr_null(l);
    ck_assert_msg(strstr(clnet_last_error(), expect), "'%s' not in: %s", expect,
                  clnet_last_error());
}

START_TEST(transforms_that_cannot_apply_are_refused) {
    clnet_dataset *ds = byte_images(2, 3, 6, 8, NULL);
    clnet_loader_config ok = {.batch = 2, .mean = 0, .std = 1}, cfg = ok;
    cfg.transforms.crop_height = 7, cfg.transforms.crop_width = 2;
    expect_refused(ds, &cfg, "a center crop of 7x2 from images of 6x8");
    cfg.transforms.resize_height = 10, cfg.transforms.resize_width = 10;
    ck_assert(clnet_dataset_transformed_shape(ds, &cfg.transforms, NULL, NULL, NULL) == CLNET_OK);
    cfg = ok, cfg.transforms.resize_height = 10;
    expect_refused(ds, &cfg, "each size is both sides above 0");
    cfg = ok, cfg.transforms.pad = 2000;
    expect_refused(ds, &cfg, "pad 2000");
    cfg = ok, cfg.transforms.resized_crop_min = 1.5f;
    expect_refused(ds, &cfg, "resized_crop_min 1.5");
    cfg = ok, cfg.transforms.flip = 2;
    expect_refused(ds, &cfg, "flip 2");
    cfg = ok, cfg.norm_channels = 1;
    expect_refused(ds, &cfg, "a normalisation of 1 channels for samples of 3");
    cfg = ok, cfg.norm_channels = 3, cfg.channel_std[0] = cfg.channel_std[1] = 1;
    expect_refused(ds, &cfg, "channel 2's mean 0 and std 0");
    cfg = ok, cfg.transforms.flip = 1;
    ck_assert_int_eq(clnet_dataset_targets_from_samples(ds), CLNET_OK);
    expect_refused(ds, &cfg, "the targets would not move with the images");
    clnet_dataset_free(ds);

    /* volumes: (N, 1, 2, 3, 4) */
    char path[128];
    snprintf(path, sizeof path, "%s/v.npy", folder());
    uint8_t bytes[2 * 24] = {0};
    write_u8_npy(path, bytes, 5, (int[]){2, 1, 2, 3, 4});
    ck_assert_int_eq(clnet_dataset_load_npy(&ds, path, NULL), CLNET_OK);
    cfg = ok, cfg.transforms.flip = 1;
    expect_refused(ds, &cfg, "not of 4 dimensions");
    clnet_dataset_free(ds);
}
END_TEST

int main(void) {
    Suite *s = suite_create("transform");
    TCase *t = tcase_create("transform");
    tcase_add_test(t, bilinear_resize_matches_pytorch);
    tcase_add_test(t, loader_resizes_and_normalises_per_channel_as_pytorch);
    tcase_add_test(t, crops_pads_and_flips_match_the_reference);
    tcase_add_test(t, transforms_match_torchvision);
    tcase_add_test(t, draws_are_keyed_by_seed_epoch_and_sample);
    tcase_add_test(t, random_resized_crops_follow_torchvision);
    tcase_add_test(t, transforms_that_cannot_apply_are_refused);
    suite_add_tcase(s, t);
    int failed = test_run_suite(s);
    return failed ? 1 : 0;
}
