/* The loader: shuffles, normalises and batches a data set on a prefetch
 * thread, with noise where asked; every epoch's order and noise depend only
 * on (seed, epoch), so any batch can be made again. */
#include "alloc.h"
#include "data.h"
#include "fault.h"
#include "error.h"
#include "image.h"
#include "random.h"
#include "transform.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the order of an epoch ------------------------------------------------- */

/* The generator of one epoch: its state depends on (seed, epoch) only, so any
 * epoch's order can be made without making the ones before it. */
static clnet_xoshiro epoch_generator(uint64_t seed, int epoch) {
    uint64_t key = seed;
    return clnet_xoshiro_from(clnet_splitmix64(&key) ^ (uint64_t)(uint32_t)epoch);
}

/* order (n) = the sample order of the epoch: file order, or a Fisher-Yates
 * shuffle of it. */
static void make_order(int32_t *order, int n, int shuffle, uint64_t seed, int epoch) {
    for (int i = 0; i < n; i++) order[i] = i;
    if (!shuffle) return;
    clnet_xoshiro r = epoch_generator(seed, epoch);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)clnet_uniform_below(&r, (uint32_t)i + 1);
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* ---- noise ------------------------------------------------------------------- */

#define NOISE_DOMAIN 0x6E6F697365ull /* "noise": apart from the shuffles of one seed */

/* The key of one sample's noise in one epoch: distinct (epoch, sample) give
 * distinct keys for a seed (mix64 is a bijection). */
static uint64_t noise_key(uint64_t seed, int epoch, int32_t sample) {
    uint64_t which = (uint64_t)(uint32_t)epoch << 32 | (uint32_t)sample;
    return clnet_mix64(clnet_mix64(seed ^ NOISE_DOMAIN) + CLNET_GOLDEN * which);
}

/* z (n) ~ N(0, 1), value j of the sample whose key is `key`, times `scale`,
 * added to dst: a counter-based stream (splitmix64 at position j / 2 after
 * the key), each 64-bit word two uniforms, Box-Muller making them two
 * normals, the cosine's for the even value, the sine's for the odd one. */
static void add_noise(float *dst, size_t n, uint64_t key, float scale) {
    const double two_pi = 6.283185307179586;
    for (size_t pair = 0; 2 * pair < n; pair++) {
        uint64_t bits = clnet_mix64(key + CLNET_GOLDEN * (pair + 1));
        double u1 = ((double)(bits >> 32) + 1.0) * 0x1p-32; /* (0, 1] */
        double u2 = (double)(bits & 0xffffffffu) * 0x1p-32; /* [0, 1) */
        double r = sqrt(-2.0 * log(u1));
        dst[2 * pair] += scale * (float)(r * cos(two_pi * u2));
        if (2 * pair + 1 < n) dst[2 * pair + 1] += scale * (float)(r * sin(two_pi * u2));
    }
}

/* ---- the loader --------------------------------------------------------------- */

typedef struct {
    int epoch;
    int64_t position;
} cursor;

typedef struct {
    float *images;   /* (batch, C, H, W) */
    int32_t *labels; /* (batch) */
    float *targets;  /* (batch, targets), or NULL: a data set without float targets */
} batch_buffer;

/* What one thread preparing a batch's samples holds of its own. */
typedef struct {
    float *unit, *scratch; /* a sample in [0, 1]; the resize's and the noise's scratch */
    clnet_error_slot error;
    int error_at; /* the sample (in the batch) whose failure error holds; -1: none */
} loader_worker;

#define LOADER_THREADS_MAX 64

/* The serials of the batches every loader prepares, one count for the process. */
static atomic_uint_least64_t serials;

struct clnet_loader {
    const clnet_dataset *ds;
    clnet_loader_config cfg;
    int count;                 /* samples, as when the loader was made */
    size_t sample_bytes;       /* the values of a data set's sample (C * H * W) */
    int transformed;           /* cfg.transforms change the samples */
    int out_height, out_width; /* a sample's image after the transforms */
    size_t out_values;         /* the values of a batch's sample (C * out_height * out_width) */
    int batches_per_epoch;
    int channels;           /* the samples' channels, each normalised with its own table */
    float *mean, *std;      /* (channels): cfg's channel_mean, or mean for every channel */
    float *normalised;      /* (channels, 256): byte -> (byte / 255 - mean) / std */
    int threads;            /* threads preparing a batch: the prefetch thread and threads - 1 */
    loader_worker *workers; /* (threads) */
    batch_buffer buffers[2];

    /* The caller's side (only clnet_loader_* calls touch these). */
    int held;             /* the buffer of the caller's current batch; -1 for none */
    uint64_t held_serial; /* its serial (clnet_loader_serial) */
    cursor next;          /* where the caller's next batch starts */

    /* The prefetch thread's own: the order of order_epoch. */
    int32_t *order;  /* (count) */
    int order_epoch; /* -1: none made yet */

    /* Shared, under lock. The caller requests one batch at a time into the
     * buffer it does not hold; the thread prepares it and posts the result. */
    pthread_t thread;
    int thread_started;
    int sync_ready; /* the lock and conditions exist */
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* caller -> thread: a request, or stop */
    pthread_cond_t finished; /* thread -> caller: a result */
    int stop;
    int requested; /* a request waits for the thread */
    int busy;      /* the thread is preparing a batch */
    int done;      /* a result waits for the caller */
    cursor job;    /* the requested batch */
    int job_buffer;
    clnet_batch result;
    uint64_t result_serial;
    int result_buffer;
    clnet_error_slot result_error;
    clnet_loader_fault fault; /* the tests' hook (fault.h) */
};

/* Where the batch at c really starts: an epoch's end (or, with drop_last, a
 * tail shorter than a batch) means the start of the next epoch. */
static cursor settle(const clnet_loader *l, cursor c) {
    int64_t left = l->count - c.position;
    if (left <= 0 || (l->cfg.drop_last && left < l->cfg.batch)) {
        c.epoch = c.epoch == INT_MAX ? 0 : c.epoch + 1; /* after 2^31 epochs: no overflow */
        c.position = 0;
    }
    return c;
}

/* dst (sample_bytes) = sample `sample`, normalised: (x - mean) / std, channel by channel. */
static void normalise_sample(const clnet_loader *l, int32_t sample, float *dst) {
    size_t from = (size_t)sample * l->sample_bytes, plane = l->sample_bytes / (size_t)l->channels;
    for (int c = 0; c < l->channels; c++) {
        float *out = dst + (size_t)c * plane;
        size_t at = from + (size_t)c * plane;
        if (l->ds->images) { /* bytes: through the table */
            const uint8_t *images = l->ds->images + at;
            const float *table = l->normalised + 256 * c;
            for (size_t j = 0; j < plane; j++) out[j] = table[images[j]];
        } else { /* float32 from .npy: as they are, then the mean and std */
            const float *floats = l->ds->floats + at, mean = l->mean[c], std = l->std[c];
            for (size_t j = 0; j < plane; j++) out[j] = (floats[j] - mean) / std;
        }
    }
}

/* w->unit (C, *h, *w) = sample `sample`'s pixels in [0, 1] (or its floats): from memory, or
 * decoded from its file (an image folder's), a gray image's value in every channel of a
 * colour data set. */
static clnet_status load_unit(const clnet_loader *l, loader_worker *w, int32_t sample, int *h,
                              int *wd) {
    const clnet_dataset *ds = l->ds;
    *h = ds->height, *wd = ds->width;
    if (!ds->files) {
        size_t from = (size_t)sample * l->sample_bytes;
        if (ds->images)
            for (size_t j = 0; j < l->sample_bytes; j++)
                w->unit[j] = (float)ds->images[from + j] / 255.0f;
        else
            memcpy(w->unit, ds->floats + from, l->sample_bytes * sizeof(float));
        return CLNET_OK;
    }
    clnet_image img = {0};
    const char *path = ds->files[sample];
    clnet_status s = clnet_image_decode_file(path, &img);
    if (s != CLNET_OK) return s;
    size_t pixels = (size_t)img.height * (size_t)img.width;
    if (pixels > ds->largest_image || img.channels > ds->channels ||
        (!ds->mixed_sizes && (img.height != ds->height || img.width != ds->width))) {
        s = clnet_fail(CLNET_ERR_FORMAT,
                       "%s: now %dx%d (HxW) with %d channel%s: not what it was when the folder "
                       "was listed (the file changed; load the data set again)",
                       path, img.height, img.width, img.channels, img.channels == 1 ? "" : "s");
        clnet_image_free(&img);
        return s;
    }
    *h = img.height, *wd = img.width;
    for (int c = 0; c < ds->channels; c++) { /* (H, W, C) bytes -> (C, H, W) floats */
        const uint8_t *from = img.pixels + (img.channels == 1 ? 0 : c);
        float *plane = w->unit + (size_t)c * pixels;
        for (size_t j = 0; j < pixels; j++)
            plane[j] = (float)from[j * (size_t)img.channels] / 255.0f;
    }
    clnet_image_free(&img);
    return CLNET_OK;
}

/* dst (out_values) = sample `sample` of epoch `epoch` transformed, then normalised. */
static clnet_status transform_sample(const clnet_loader *l, loader_worker *w, int epoch,
                                     int32_t sample, float *dst) {
    int h, wd;
    clnet_status s = load_unit(l, w, sample, &h, &wd);
    if (s != CLNET_OK) return s;
    clnet_transform_draw d = clnet_transforms_draw(&l->cfg.transforms, epoch, sample, h, wd);
    clnet_transforms_apply(&l->cfg.transforms, &d, w->unit, l->channels, h, wd, w->scratch, dst);
    size_t plane = l->out_values / (size_t)l->channels;
    for (int c = 0; c < l->channels; c++) {
        float *out = dst + (size_t)c * plane, mean = l->mean[c], std = l->std[c];
        for (size_t j = 0; j < plane; j++) out[j] = (out[j] - mean) / std;
    }
    return CLNET_OK;
}

/* Adds the noise of sample `sample` to dst: noise * z in [0, 1] terms, (noise / std) * z
 * after channel c's normalisation. */
static void noise_sample(const clnet_loader *l, loader_worker *w, int epoch, int32_t sample,
                         float *dst) {
    uint64_t key = noise_key(l->cfg.noise_seed, epoch, sample);
    if (l->channels == 1 || l->cfg.norm_channels == 0) {
        add_noise(dst, l->out_values, key, l->cfg.noise / l->std[0]);
        return;
    }
    size_t plane = l->out_values / (size_t)l->channels;
    memset(w->scratch, 0, l->out_values * sizeof *w->scratch); /* z, whole, then by channel */
    add_noise(w->scratch, l->out_values, key, 1.0f);
    for (int c = 0; c < l->channels; c++) {
        float scale = l->cfg.noise / l->std[c], *out = dst + (size_t)c * plane;
        const float *z = w->scratch + (size_t)c * plane;
        for (size_t j = 0; j < plane; j++) out[j] += scale * z[j];
    }
}

/* Sample i of the batch at `at` into buffer b: its input transformed and normalised, its
 * target (the data set's, or the clean sample), its noise, its label. */
static clnet_status prepare_sample(const clnet_loader *l, loader_worker *w, cursor at,
                                   batch_buffer *b, int i) {
    int32_t sample = l->order[at.position + i];
    float *dst = b->images + (size_t)i * l->out_values; /* (C, H, W) */
    size_t T = (size_t)l->ds->target_size;
    if (l->transformed) {
        clnet_status s = transform_sample(l, w, at.epoch, sample, dst);
        if (s != CLNET_OK) return s;
    } else {
        normalise_sample(l, sample, dst);
    }
    if (l->ds->samples_as_targets) /* the clean sample, before its noise */
        memcpy(b->targets + (size_t)i * T, dst, T * sizeof(float));
    else if (T)
        memcpy(b->targets + (size_t)i * T, l->ds->targets + (size_t)sample * T, T * 4);
    /* noise: x + noise * z is (x - mean) / std + (noise / std) * z after normalisation */
    if (l->cfg.noise > 0) noise_sample(l, w, at.epoch, sample, dst);
    b->labels[i] = l->ds->labels[sample];
    return CLNET_OK;
}

/* The samples of one batch, shared out among the loader's threads one at a time. */
typedef struct {
    const clnet_loader *l;
    loader_worker *w;
    cursor at;
    batch_buffer *b;
    int n;
    atomic_int *next;
    atomic_int *failed;
} batch_share;

static void *prepare_share(void *arg) {
    batch_share *job = arg;
    job->w->error_at = -1;
    for (int i; !atomic_load(job->failed) && (i = atomic_fetch_add(job->next, 1)) < job->n;) {
        clnet_status s = prepare_sample(job->l, job->w, job->at, job->b, i);
        if (s != CLNET_OK) {
            clnet_error_save(&job->w->error, s);
            job->w->error_at = i;
            atomic_store(job->failed, 1);
        }
    }
    return NULL;
}

/* Every sample of the batch, on the loader's threads; a failure is that of the first
 * failing sample a thread met (its message names the file). */
static clnet_status prepare_samples(clnet_loader *l, cursor at, batch_buffer *b, int n) {
    atomic_int next = 0, failed = 0;
    batch_share jobs[LOADER_THREADS_MAX];
    pthread_t ids[LOADER_THREADS_MAX];
    int threads = l->threads < n ? l->threads : n, started = 0;
    for (int t = 0; t < threads; t++)
        jobs[t] = (batch_share){l, &l->workers[t], at, b, n, &next, &failed};
    for (int t = 1; t < threads; t++, started++) {
        clnet_count_thread();
        if (pthread_create(&ids[t], NULL, prepare_share, &jobs[t]) != 0) break;
    }
    prepare_share(&jobs[0]); /* on the prefetch thread too; alone when no other started */
    for (int t = 1; t <= started; t++) pthread_join(ids[t], NULL);
    int first = -1;
    for (int t = 0; t < threads; t++)
        if (l->workers[t].error_at >= 0 &&
            (first < 0 || l->workers[t].error_at < l->workers[first].error_at))
            first = t;
    for (int t = 0; t < threads; t++)
        if (t != first && l->workers[t].error_at >= 0) {
            free(l->workers[t].error.message);
            l->workers[t].error = (clnet_error_slot){0};
        }
    if (first < 0) return CLNET_OK;
    clnet_status s = clnet_error_restore(&l->workers[first].error);
    l->workers[first].error = (clnet_error_slot){0};
    return s;
}

/* Gathers the samples at positions [at, at + n) of the epoch's order and
 * converts their bytes to floats, adding the noise to the inputs; the
 * targets are the data set's, or the clean samples. Runs on the prefetch
 * thread. */
static clnet_status prepare_batch(clnet_loader *l, cursor at, int buffer, int fail,
                                  clnet_batch *out) {
    if (fail)
        return clnet_fail(CLNET_ERR_INTERNAL, "injected failure preparing epoch %d position %lld",
                          at.epoch, (long long)at.position);
    if (l->order_epoch != at.epoch) {
        make_order(l->order, l->count, l->cfg.shuffle, l->cfg.seed, at.epoch);
        l->order_epoch = at.epoch;
    }
    int64_t left = l->count - at.position;
    int n = left < l->cfg.batch ? (int)left : l->cfg.batch;
    batch_buffer *b = &l->buffers[buffer];
    clnet_status s = prepare_samples(l, at, b, n);
    if (s != CLNET_OK) return s;
    *out = (clnet_batch){.images = b->images,
                         .labels = b->labels,
                         .targets = b->targets,
                         .n = n,
                         .epoch = at.epoch,
                         .position = at.position};
    return CLNET_OK;
}

static void *prefetch_thread(void *arg) {
    clnet_loader *l = arg;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (!l->stop && !l->requested) pthread_cond_wait(&l->wake, &l->lock);
        if (l->stop) break;
        cursor at = l->job;
        int buffer = l->job_buffer;
        int fail = clnet_loader_fault_fires(&l->fault, at.epoch, at.position);
        l->requested = 0;
        l->busy = 1;
        pthread_mutex_unlock(&l->lock);

        clnet_batch result = {0};
        clnet_error_slot error;
        clnet_error_save(&error, prepare_batch(l, at, buffer, fail, &result));

        pthread_mutex_lock(&l->lock);
        l->busy = 0;
        l->done = 1;
        l->result = result;
        l->result_serial = atomic_fetch_add(&serials, 1) + 1;
        l->result_buffer = buffer;
        l->result_error = error;
        pthread_cond_broadcast(&l->finished);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* Asks the thread for the batch at c, into the buffer the caller does not
 * hold. Called with the lock held. */
static void request(clnet_loader *l, cursor c) {
    l->job = c;
    l->job_buffer = l->held == 0 ? 1 : 0;
    l->requested = 1;
    pthread_cond_signal(&l->wake);
}

/* Forgets a posted result that the caller will not take. Lock held. */
static void discard_result(clnet_loader *l) {
    if (!l->done) return;
    l->done = 0;
    free(l->result_error.message);
    l->result_error = (clnet_error_slot){0};
}

/* The per-channel normalisation of cfg, checked against ds. */
static clnet_status check_normalisation(const clnet_dataset *ds, const clnet_loader_config *cfg) {
    if (cfg->norm_channels == 0) return CLNET_OK;
    if (cfg->norm_channels != ds->channels || cfg->norm_channels > CLNET_MAX_NORM_CHANNELS)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_loader_create: a normalisation of %d channels for samples of %d "
                          "(at most %d channels a normalisation)",
                          cfg->norm_channels, ds->channels, CLNET_MAX_NORM_CHANNELS);
    for (int c = 0; c < cfg->norm_channels; c++)
        if (!isfinite(cfg->channel_mean[c]) || !isfinite(cfg->channel_std[c]) ||
            cfg->channel_std[c] == 0.0f)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                              "clnet_loader_create: channel %d's mean %g and std %g must be "
                              "finite and std not 0",
                              c, (double)cfg->channel_mean[c], (double)cfg->channel_std[c]);
    return CLNET_OK;
}

/* Transforms apply to images, (H, W) or (C, H, W) samples, without targets of their own. */
static clnet_status check_transforms(const clnet_dataset *ds, const clnet_transforms *t) {
    if (clnet_transforms_none(t)) return CLNET_OK;
    if (ds->rank != 2 && ds->rank != 3)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_loader_create: image transforms take samples of (H, W) or (C, "
                          "H, W), not of %d dimensions",
                          ds->rank);
    if (ds->target_size)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_loader_create: image transforms with %s: the targets would not "
                          "move with the images (not built)",
                          ds->samples_as_targets ? "the samples as targets" : "targets");
    return clnet_transforms_check(t, ds->height, ds->width, "clnet_loader_create");
}

/* An image folder of several sizes needs a resize to give batches of one. */
static clnet_status check_sizes(const clnet_dataset *ds, const clnet_transforms *t) {
    if (!ds->mixed_sizes || t->resize_height > 0) return CLNET_OK;
    if (ds->mixed_sizes < 0) /* a split of such a folder */
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "the images are not all one size: resize them (clnet_transforms' "
                          "resize; --resize HxW)");
    return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                      "the images are not all one size (%s is %dx%d, %s is another): resize "
                      "them (clnet_transforms' resize; --resize HxW)",
                      ds->files[0], ds->height, ds->width, ds->files[ds->mixed_sizes]);
}

/* Each channel's mean, std and byte table, and the prefetch thread's scratch. */
static clnet_status make_tables(clnet_loader *l) {
    const clnet_loader_config *cfg = &l->cfg;
    const clnet_dataset *ds = l->ds;
    l->channels = ds->channels > 0 ? ds->channels : 1;
    l->mean = clnet_malloc((size_t)l->channels * sizeof *l->mean);
    l->std = clnet_malloc((size_t)l->channels * sizeof *l->std);
    l->normalised = clnet_malloc((size_t)l->channels * 256 * sizeof *l->normalised);
    if (!l->mean || !l->std || !l->normalised)
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a loader's tables");
    for (int c = 0; c < l->channels; c++) {
        l->mean[c] = cfg->norm_channels ? cfg->channel_mean[c] : cfg->mean;
        l->std[c] = cfg->norm_channels ? cfg->channel_std[c] : cfg->std;
        for (int b = 0; b < 256; b++)
            l->normalised[256 * c + b] = ((float)b / 255.0f - l->mean[c]) / l->std[c];
    }
    size_t scratch = clnet_transforms_scratch(&cfg->transforms, l->channels, ds->height, ds->width);
    if (scratch < l->out_values) scratch = l->out_values; /* the noise's z, per channel */
    size_t unit = ds->files ? (size_t)l->channels * ds->largest_image : l->sample_bytes;
    l->workers = clnet_calloc((size_t)l->threads, sizeof *l->workers);
    if (!l->workers) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a loader");
    for (int t = 0; t < l->threads; t++) {
        loader_worker *w = &l->workers[t];
        w->scratch = clnet_malloc(scratch * sizeof *w->scratch);
        w->unit = l->transformed ? clnet_malloc(unit * sizeof *w->unit) : NULL;
        if (!w->scratch || (l->transformed && !w->unit))
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a loader's scratch");
    }
    return CLNET_OK;
}

/* The threads that prepare a batch: cfg's, else one a core (up to 16) for an image folder's
 * decoding, one for samples in memory. */
static int loader_threads(const clnet_dataset *ds, const clnet_loader_config *cfg) {
    if (cfg->threads > 0) return cfg->threads;
    if (!ds->files) return 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > 16 ? 16 : (int)cores;
}

clnet_status clnet_loader_create(clnet_loader **out, const clnet_dataset *ds,
                                 const clnet_loader_config *cfg) {
    clnet_status status = CLNET_OK;
    clnet_loader *l = NULL;
    if (out) *out = NULL;
    if (!out || !ds || !cfg)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_loader_create: out, ds and cfg must not be NULL");
    if (cfg->batch < 1)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_loader_create: batch is %d, want at least 1",
             cfg->batch);
    if (!isfinite(cfg->mean) || !isfinite(cfg->std) || cfg->std == 0.0f)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_loader_create: mean %g and std %g must be finite and std not 0",
             (double)cfg->mean, (double)cfg->std);
    if (!(cfg->noise >= 0.0f) || !isfinite(cfg->noise))
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_loader_create: noise %g must be finite and 0 or more (a standard deviation)",
             (double)cfg->noise);
    if (cfg->drop_last && cfg->batch > ds->count)
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "clnet_loader_create: with drop_last, batch %d larger than the %d samples leaves no "
             "batch in an epoch",
             cfg->batch, ds->count);

    TRY(check_normalisation(ds, cfg));
    TRY(check_transforms(ds, &cfg->transforms));
    TRY(check_sizes(ds, &cfg->transforms));
    if (cfg->threads < 0 || cfg->threads > LOADER_THREADS_MAX)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_loader_create: threads is %d, want 0 to %d",
             cfg->threads, LOADER_THREADS_MAX);

    l = clnet_calloc(1, sizeof *l);
    if (!l) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a loader");
    l->ds = ds;
    l->cfg = *cfg;
    l->cfg.shuffle = cfg->shuffle != 0;
    l->cfg.drop_last = cfg->drop_last != 0;
    l->count = ds->count;
    l->sample_bytes = (size_t)ds->channels * (size_t)ds->height * (size_t)ds->width;
    l->transformed = !clnet_transforms_none(&cfg->transforms) || ds->files;
    l->threads = loader_threads(ds, cfg);
    clnet_transforms_out_size(&cfg->transforms, ds->height, ds->width, &l->out_height,
                              &l->out_width);
    l->out_values = (size_t)ds->channels * (size_t)l->out_height * (size_t)l->out_width;
    int64_t per_epoch = l->cfg.drop_last ? (int64_t)l->count / l->cfg.batch
                                         : ((int64_t)l->count + l->cfg.batch - 1) / l->cfg.batch;
    l->batches_per_epoch = (int)per_epoch;
    TRY(make_tables(l));
    l->held = -1;
    l->order_epoch = -1;

    size_t samples = (size_t)(cfg->batch < l->count ? cfg->batch : l->count);
    for (int i = 0; i < 2; i++) {
        l->buffers[i].images = clnet_malloc(samples * l->out_values * sizeof(float));
        l->buffers[i].labels = clnet_malloc(samples * sizeof(int32_t));
        size_t T = (size_t)ds->target_size;
        if (T) l->buffers[i].targets = clnet_malloc(samples * T * sizeof(float));
        if (!l->buffers[i].images || !l->buffers[i].labels || (T && !l->buffers[i].targets))
            FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for two batches of %zu samples", samples);
    }
    l->order = clnet_malloc((size_t)l->count * sizeof *l->order);
    if (!l->order)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for the order of %d samples", l->count);

    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    pthread_cond_init(&l->finished, NULL);
    l->sync_ready = 1;
    clnet_count_thread();
    int err = pthread_create(&l->thread, NULL, prefetch_thread, l);
    if (err) FAIL(CLNET_ERR_THREAD, "cannot start the loader's prefetch thread: %s", strerror(err));
    l->thread_started = 1;

    pthread_mutex_lock(&l->lock);
    request(l, l->next);
    pthread_mutex_unlock(&l->lock);
    *out = l;
    l = NULL;
cleanup:
    clnet_loader_free(l);
    return status;
}

clnet_status clnet_loader_next(clnet_loader *l, clnet_batch *out) {
    if (!l || !out)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_loader_next: l and out must not be NULL");
    pthread_mutex_lock(&l->lock);
    /* After a failure nothing is on its way: ask again. */
    if (!l->done && !l->requested && !l->busy) request(l, l->next);
    while (!l->done) pthread_cond_wait(&l->finished, &l->lock);
    l->done = 0;
    clnet_batch result = l->result;
    clnet_error_slot error = l->result_error;
    l->result_error = (clnet_error_slot){0};
    if (error.status == CLNET_OK) {
        l->held = l->result_buffer;
        l->held_serial = l->result_serial;
        l->next = settle(l, (cursor){result.epoch, result.position + result.n});
        request(l, l->next);
    }
    pthread_mutex_unlock(&l->lock);
    if (error.status != CLNET_OK) return clnet_error_restore(&error);
    *out = result;
    return CLNET_OK;
}

int clnet_loader_peek(clnet_loader *l, clnet_batch *out, uint64_t *serial) {
    pthread_mutex_lock(&l->lock);
    while (!l->done && (l->requested || l->busy)) pthread_cond_wait(&l->finished, &l->lock);
    int ready = l->done && l->result_error.status == CLNET_OK;
    if (ready) {
        *out = l->result;
        *serial = l->result_serial;
    }
    pthread_mutex_unlock(&l->lock);
    return ready;
}

uint64_t clnet_loader_serial(const clnet_loader *l) {
    return l ? l->held_serial : 0;
}

clnet_status clnet_loader_seek(clnet_loader *l, int epoch, int64_t position) {
    if (!l) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_loader_seek: l is NULL");
    if (epoch < 0 || position < 0 || position >= l->count)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_loader_seek: epoch %d position %lld is out of range (want epoch "
                          ">= 0 and 0 <= position < %d)",
                          epoch, (long long)position, l->count);
    pthread_mutex_lock(&l->lock);
    l->requested = 0;
    while (l->busy) pthread_cond_wait(&l->finished, &l->lock);
    discard_result(l);
    l->next = settle(l, (cursor){epoch, position});
    request(l, l->next);
    pthread_mutex_unlock(&l->lock);
    return CLNET_OK;
}

int clnet_loader_batches_per_epoch(const clnet_loader *l) {
    return l ? l->batches_per_epoch : 0;
}

void clnet_loader_inject_failure(clnet_loader *l, int epoch, int64_t position) {
    pthread_mutex_lock(&l->lock);
    clnet_loader_fault_arm(&l->fault, epoch, position);
    pthread_mutex_unlock(&l->lock);
}

void clnet_loader_free(clnet_loader *l) {
    if (!l) return;
    if (l->thread_started) {
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_cond_signal(&l->wake);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->thread, NULL);
        discard_result(l);
    }
    if (l->sync_ready) {
        pthread_mutex_destroy(&l->lock);
        pthread_cond_destroy(&l->wake);
        pthread_cond_destroy(&l->finished);
    }
    for (int i = 0; i < 2; i++) {
        free(l->buffers[i].images);
        free(l->buffers[i].labels);
        free(l->buffers[i].targets);
    }
    free(l->order);
    free(l->mean);
    free(l->std);
    free(l->normalised);
    for (int t = 0; l->workers && t < l->threads; t++) {
        free(l->workers[t].unit);
        free(l->workers[t].scratch);
    }
    free(l->workers);
    free(l);
}

void clnet_loader_shape(const clnet_loader *l, int *channels, int *height, int *width) {
    if (channels) *channels = l ? l->ds->channels : 0;
    if (height) *height = l ? l->out_height : 0;
    if (width) *width = l ? l->out_width : 0;
}

size_t clnet_loader_sample_values(const clnet_loader *l) {
    return l ? l->out_values : 0;
}

clnet_status clnet_dataset_transformed_shape(const clnet_dataset *ds, const clnet_transforms *t,
                                             int *channels, int *height, int *width) {
    if (!ds)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_dataset_transformed_shape: ds is NULL");
    int c = ds->channels, h = ds->height, w = ds->width;
    if (t) {
        clnet_status s = check_transforms(ds, t);
        if (s == CLNET_OK) s = check_sizes(ds, t);
        if (s != CLNET_OK) return s;
        clnet_transforms_out_size(t, ds->height, ds->width, &h, &w);
    }
    if (channels) *channels = c;
    if (height) *height = h;
    if (width) *width = w;
    return CLNET_OK;
}
