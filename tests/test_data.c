/* The data module, no OpenCL device needed: IDX files written here (gzip and
 * raw) and CIFAR-10 and CIFAR-100 binary folders read back exactly, every kind
 * of bad file is caught and named, and the
 * loader covers each sample once per epoch, shuffles as a pure function of
 * (seed, epoch), seeks exactly, normalises, and prefetches deterministically.
 * The real Fashion-MNIST is loaded and timed in a case of its own, which is
 * skipped where the data set is not installed. */
#include "data.h"
#include "error.h"
#include "harness.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ---- writing IDX files -------------------------------------------------------- */

#define HEIGHT 4
#define WIDTH  5 /* not square, so a swapped height and width would show */
#define PIXELS (HEIGHT * WIDTH)
#define COUNT  103

/* Byte j of sample i: the first two spell i, so a batch says which samples it
 * holds; the rest are a pattern that catches a wrong gather. */
static uint8_t sample_byte(int i, int j) {
    if (j == 0) return (uint8_t)(i & 255);
    if (j == 1) return (uint8_t)(i >> 8);
    return (uint8_t)((i * 31 + j * 7 + 3) & 255);
}

static int32_t sample_label(int i) {
    return (i * 7) % 10;
}

/* An IDX file in memory: big-endian magic and dimensions, then the payload. */
static uint8_t *idx_bytes(uint32_t magic, int ndims, const uint32_t *dims, const uint8_t *payload,
                          size_t payload_n, size_t *n) {
    *n = 4 + 4 * (size_t)ndims + payload_n;
    uint8_t *b = malloc(*n);
    ck_assert_ptr_nonnull(b);
    uint32_t words[4] = {magic, dims[0], ndims > 1 ? dims[1] : 0, ndims > 2 ? dims[2] : 0};
    for (int w = 0; w <= ndims; w++)
        for (int k = 0; k < 4; k++) b[4 * w + k] = (uint8_t)(words[w] >> (24 - 8 * k));
    if (payload_n) memcpy(b + 4 + 4 * ndims, payload, payload_n);
    return b;
}

static void write_file(const char *path, int gz, const uint8_t *bytes, size_t n) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        if (n) ck_assert_int_eq(gzwrite(f, bytes, (unsigned)n), (int)n);
        ck_assert_int_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        if (n) ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
        ck_assert_int_eq(fclose(f), 0);
    }
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Image and label files of `count` samples, as their bytes. */
static uint8_t *image_file_bytes(int count, size_t *n) {
    uint8_t *pixels = malloc((size_t)count * PIXELS);
    ck_assert_ptr_nonnull(pixels);
    for (int i = 0; i < count; i++)
        for (int j = 0; j < PIXELS; j++) pixels[(size_t)i * PIXELS + j] = sample_byte(i, j);
    uint32_t dims[3] = {(uint32_t)count, HEIGHT, WIDTH};
    uint8_t *b = idx_bytes(0x803, 3, dims, pixels, (size_t)count * PIXELS, n);
    free(pixels);
    return b;
}

static uint8_t *label_file_bytes(int count, size_t *n) {
    uint8_t *labels = malloc((size_t)count);
    ck_assert_ptr_nonnull(labels);
    for (int i = 0; i < count; i++) labels[i] = (uint8_t)sample_label(i);
    uint32_t dims[1] = {(uint32_t)count};
    uint8_t *b = idx_bytes(0x801, 1, dims, labels, (size_t)count, n);
    free(labels);
    return b;
}

static void write_images(const char *path, int gz, int count) {
    size_t n;
    uint8_t *b = image_file_bytes(count, &n);
    write_file(path, gz, b, n);
    free(b);
}

static void write_labels(const char *path, int gz, int count) {
    size_t n;
    uint8_t *b = label_file_bytes(count, &n);
    write_file(path, gz, b, n);
    free(b);
}

static void pause_us(long us) {
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

/* ---- temporary folders -------------------------------------------------------- */

static char dir[64];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/clnet-test-data-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* A path in the test's folder (one of a few rotating buffers). */
static const char *in_dir(const char *name) {
    static char paths[8][384];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

static void remove_dir(void) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) remove(in_dir(e->d_name));
    closedir(d);
    rmdir(dir);
}

/* The synthetic set of COUNT samples, images gzip-compressed or raw. */
static clnet_dataset *synthetic_set(int gz) {
    make_dir();
    write_images(in_dir("images"), gz, COUNT);
    write_labels(in_dir("labels"), gz, COUNT);
    clnet_dataset *ds = NULL;
    clnet_status s = clnet_dataset_load_idx(&ds, in_dir("images"), in_dir("labels"));
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    remove_dir();
    return ds;
}

/* ---- batches ------------------------------------------------------------------ */

/* A batch copied out of the loader's buffer. */
typedef struct {
    int epoch;
    int64_t position;
    int n;
    float *images;   /* (n, 1, HEIGHT, WIDTH) */
    int32_t *labels; /* (n) */
} saved_batch;

static saved_batch *take(clnet_loader *l, int batches) {
    saved_batch *out = calloc((size_t)batches, sizeof *out);
    ck_assert_ptr_nonnull(out);
    for (int k = 0; k < batches; k++) {
        clnet_batch b;
        clnet_status s = clnet_loader_next(l, &b);
        ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
        out[k] = (saved_batch){.epoch = b.epoch, .position = b.position, .n = b.n};
        out[k].images = malloc((size_t)b.n * PIXELS * sizeof(float));
        out[k].labels = malloc((size_t)b.n * sizeof(int32_t));
        memcpy(out[k].images, b.images, (size_t)b.n * PIXELS * sizeof(float));
        memcpy(out[k].labels, b.labels, (size_t)b.n * sizeof(int32_t));
    }
    return out;
}

static void free_batches(saved_batch *b, int batches) {
    for (int k = 0; k < batches; k++) {
        free(b[k].images);
        free(b[k].labels);
    }
    free(b);
}

/* Bitwise equal, metadata included. */
static void assert_same_batch(const saved_batch *a, const saved_batch *b, const char *what, int k) {
    ck_assert_msg(a->epoch == b->epoch && a->position == b->position && a->n == b->n,
                  "%s, batch %d: (epoch %d, position %lld, n %d) vs (%d, %lld, %d)", what, k,
                  a->epoch, (long long)a->position, a->n, b->epoch, (long long)b->position, b->n);
    ck_assert_msg(memcmp(a->images, b->images, (size_t)a->n * PIXELS * sizeof(float)) == 0,
                  "%s, batch %d: images differ", what, k);
    ck_assert_msg(memcmp(a->labels, b->labels, (size_t)a->n * sizeof(int32_t)) == 0,
                  "%s, batch %d: labels differ", what, k);
}

/* Which sample image i of a batch is, checking every pixel and the label
 * against that sample (for a loader with mean 0 and std 1). */
static int sample_of(const float *images, const int32_t *labels, int i) {
    const float *img = images + (size_t)i * PIXELS;
    int id = (int)(img[0] * 255.0f + 0.5f) | (int)(img[1] * 255.0f + 0.5f) << 8;
    ck_assert_int_lt(id, COUNT);
    for (int j = 0; j < PIXELS; j++)
        ck_assert_msg(img[j] == (float)sample_byte(id, j) / 255.0f,
                      "sample %d pixel %d: %.9g, want %.9g", id, j, (double)img[j],
                      (double)((float)sample_byte(id, j) / 255.0f));
    ck_assert_int_eq(labels[i], sample_label(id));
    return id;
}

static clnet_loader *make_loader(const clnet_dataset *ds, int batch, uint64_t seed, int shuffle,
                                 int drop_last) {
    clnet_loader_config cfg = {.batch = batch,
                               .seed = seed,
                               .shuffle = shuffle,
                               .drop_last = drop_last,
                               .mean = 0.0f,
                               .std = 1.0f};
    clnet_loader *l = NULL;
    clnet_status s = clnet_loader_create(&l, ds, &cfg);
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    return l;
}

/* The sample order of the next `epochs` epochs, checking the batches' epoch,
 * position and size on the way. order[e * count + p]. */
static int *epoch_orders(clnet_loader *l, int count, int batch, int drop_last, int first_epoch,
                         int epochs) {
    int per_epoch = drop_last ? count / batch : (count + batch - 1) / batch;
    int used = drop_last ? per_epoch * batch : count;
    ck_assert_int_eq(clnet_loader_batches_per_epoch(l), per_epoch);
    int *order = malloc((size_t)epochs * (size_t)count * sizeof(int));
    ck_assert_ptr_nonnull(order);
    for (int i = 0; i < epochs * count; i++) order[i] = -1;
    for (int e = 0; e < epochs; e++) {
        for (int k = 0; k < per_epoch; k++) {
            clnet_batch b;
            ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
            ck_assert_int_eq(b.epoch, first_epoch + e);
            ck_assert_int_eq(b.position, (int64_t)k * batch);
            ck_assert_int_eq(b.n, used - k * batch < batch ? used - k * batch : batch);
            for (int i = 0; i < b.n; i++)
                order[e * count + k * batch + i] = sample_of(b.images, b.labels, i);
        }
    }
    return order;
}

/* One batch of the whole data set in file order holds sample i at i, for
 * the count samples there must be: every byte and label. */
static void expect_file_order(const clnet_dataset *ds, int count) {
    clnet_loader *l = make_loader(ds, count, 0, 0, 0);
    clnet_batch b;
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    ck_assert_int_eq(b.n, count);
    for (int i = 0; i < count; i++) ck_assert_int_eq(sample_of(b.images, b.labels, i), i);
    clnet_loader_free(l);
}

/* ---- reading IDX files ------------------------------------------------------- */

START_TEST(idx_gz_and_raw_read_back_exactly) {
    for (int variant = 0; variant < 4; variant++) {
        int images_gz = variant & 1, labels_gz = variant >> 1;
        make_dir();
        write_images(in_dir("images"), images_gz, COUNT);
        write_labels(in_dir("labels"), labels_gz, COUNT);
        clnet_dataset *ds = NULL;
        clnet_status s = clnet_dataset_load_idx(&ds, in_dir("images"), in_dir("labels"));
        ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
        ck_assert_int_eq(clnet_dataset_count(ds), COUNT);
        int c, h, w;
        clnet_dataset_shape(ds, &c, &h, &w);
        ck_assert_int_eq(c, 1);
        ck_assert_int_eq(h, HEIGHT);
        ck_assert_int_eq(w, WIDTH);
        ck_assert_int_eq(clnet_dataset_classes(ds), 10);
        expect_file_order(ds, COUNT);
        clnet_dataset_free(ds);
        remove_dir();
    }
}
END_TEST

/* Loads and expects failure with status want and a message holding the path
 * and the words. */
/* load(&ds, a, b) fails with want, leaves ds NULL, and its message names path
 * and says words. */
static void expect_pair_failure(clnet_status (*load)(clnet_dataset **, const char *, const char *),
                                const char *a, const char *b, clnet_status want, const char *path,
                                const char *words) {
    clnet_dataset *ds = (clnet_dataset *)&ds; /* must become NULL */
    clnet_status s = load(&ds, a, b);
    const char *m = clnet_last_error();
    ck_assert_msg(s == want, "%s: status %d (%s), want %d", words, s, m, want);
    ck_assert_ptr_null(ds);
    ck_assert_msg(strstr(m, path), "the message does not name %s: %s", path, m);
    ck_assert_msg(strstr(m, words), "the message does not say '%s': %s", words, m);
}

static void expect_failure(const char *images, const char *labels, clnet_status want,
                           const char *path, const char *words) {
    expect_pair_failure(clnet_dataset_load_idx, images, labels, want, path, words);
}

START_TEST(idx_missing_or_unreadable_files_are_io_errors_naming_them) {
    make_dir();
    write_images(in_dir("images"), 1, COUNT);
    write_labels(in_dir("labels"), 1, COUNT);
    expect_failure(in_dir("nothing"), in_dir("labels"), CLNET_ERR_IO, in_dir("nothing"),
                   "No such file");
    expect_failure(in_dir("images"), in_dir("no-labels"), CLNET_ERR_IO, in_dir("no-labels"),
                   "No such file");
    ck_assert_int_eq(mkdir(in_dir("a-folder"), 0700), 0);
    expect_failure(in_dir("a-folder"), in_dir("labels"), CLNET_ERR_IO, in_dir("a-folder"),
                   "read error");
    remove_dir();
}
END_TEST

START_TEST(idx_bad_magic_is_a_format_error_naming_the_file) {
    make_dir();
    write_images(in_dir("images"), 0, COUNT);
    write_labels(in_dir("labels"), 1, COUNT);
    /* The two files swapped. */
    expect_failure(in_dir("labels"), in_dir("images"), CLNET_ERR_FORMAT, in_dir("labels"),
                   "bad magic 0x00000801, want 0x00000803 for IDX images (that is an IDX label");
    write_images(in_dir("images2"), 1, COUNT);
    expect_failure(in_dir("images"), in_dir("images2"), CLNET_ERR_FORMAT, in_dir("images2"),
                   "that is an IDX image file");
    /* Another element type (0x0d: float) and a file that is not IDX at all. */
    uint32_t dims[3] = {COUNT, HEIGHT, WIDTH};
    size_t n;
    uint8_t *b = idx_bytes(0x00000d03, 3, dims, NULL, 0, &n);
    write_file(in_dir("floats"), 1, b, n);
    free(b);
    expect_failure(in_dir("floats"), in_dir("labels"), CLNET_ERR_FORMAT, in_dir("floats"),
                   "bad magic 0x00000d03");
    write_file(in_dir("text"), 0, (const uint8_t *)"hello, world\n", 13);
    expect_failure(in_dir("text"), in_dir("labels"), CLNET_ERR_FORMAT, in_dir("text"), "bad magic");
    remove_dir();
}
END_TEST

START_TEST(idx_truncated_files_are_format_errors_naming_the_file) {
    make_dir();
    write_labels(in_dir("labels"), 0, COUNT);
    size_t n, ln;
    uint8_t *b = image_file_bytes(COUNT, &n);
    uint8_t *lb = label_file_bytes(COUNT, &ln);
    /* Cut in the magic, in the dimensions, in the payload, one byte short;
     * raw and gzip-compressed (whole streams of too little data). */
    size_t cuts[] = {0, 2, 10, 16 + 5 * PIXELS + 3, n - 1};
    for (int gz = 0; gz < 2; gz++) {
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            write_file(in_dir("images"), gz, b, cuts[c]);
            expect_failure(in_dir("images"), in_dir("labels"), CLNET_ERR_FORMAT, in_dir("images"),
                           "truncated");
        }
    }
    write_file(in_dir("images"), 1, b, n);
    write_file(in_dir("short-labels"), 1, lb, ln - 1);
    expect_failure(in_dir("images"), in_dir("short-labels"), CLNET_ERR_FORMAT,
                   in_dir("short-labels"), "the 103 labels the header promises need 111");
    free(b);
    free(lb);
    remove_dir();
}
END_TEST

/* Flips one byte of a file. */
static void flip_byte(const char *path, long at) {
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

START_TEST(idx_corrupt_or_cut_gzip_streams_are_format_errors) {
    make_dir();
    write_labels(in_dir("labels"), 1, COUNT);
    const char *images = in_dir("images");
    write_images(images, 1, COUNT);
    long size = file_size(images);
    /* The compressed data, and the CRC and length of the trailer (only
     * reading the stream to its end finds those). */
    long flips[] = {size / 2, size / 3, size - 6, size - 2};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        write_images(images, 1, COUNT);
        flip_byte(images, flips[i]);
        expect_failure(images, in_dir("labels"), CLNET_ERR_FORMAT, images, "gzip stream");
    }
    /* A compressed file cut short, in the data and in the trailer. */
    long cuts[] = {size / 2, size - 3};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_images(images, 1, COUNT);
        ck_assert_int_eq(truncate(images, cuts[i]), 0);
        expect_failure(images, in_dir("labels"), CLNET_ERR_FORMAT, images, "truncated");
    }
    remove_dir();
}
END_TEST

START_TEST(idx_images_and_labels_that_disagree_in_count_name_both_files) {
    make_dir();
    write_images(in_dir("images"), 1, COUNT);
    write_labels(in_dir("labels"), 1, COUNT - 1);
    expect_failure(in_dir("images"), in_dir("labels"), CLNET_ERR_FORMAT, in_dir("images"),
                   "has 103 images but");
    expect_failure(in_dir("images"), in_dir("labels"), CLNET_ERR_FORMAT, in_dir("labels"),
                   "has 102 labels");
    remove_dir();
}
END_TEST

START_TEST(idx_absurd_dimensions_are_format_errors) {
    make_dir();
    write_labels(in_dir("labels"), 0, COUNT);
    uint8_t payload[64] = {0};
    struct {
        uint32_t dims[3];
        const char *words;
    } cases[] = {
        {{0, HEIGHT, WIDTH}, "the count is 0"},
        {{COUNT, 0, WIDTH}, "the height is 0"},
        {{COUNT, HEIGHT, 70000}, "the width is 70000 (want 1 to 65535)"},
        {{COUNT, 65536, 1}, "the height is 65536"},
        {{0x80000000u, 1, 1}, "the count is 2147483648"},
        /* 3.6e9 bytes promised by a tiny file: rejected before any allocation. */
        {{40000, 300, 300}, "absurd dimensions: 3600000000 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        uint8_t *b = idx_bytes(0x803, 3, cases[i].dims, payload, sizeof payload, &n);
        write_file(in_dir("images"), (int)(i & 1), b, n);
        free(b);
        expect_failure(in_dir("images"), in_dir("labels"), CLNET_ERR_FORMAT, in_dir("images"),
                       cases[i].words);
    }
    write_images(in_dir("images"), 0, COUNT);
    uint32_t none[1] = {0};
    size_t n;
    uint8_t *b = idx_bytes(0x801, 1, none, NULL, 0, &n);
    write_file(in_dir("no-labels"), 0, b, n);
    free(b);
    expect_failure(in_dir("images"), in_dir("no-labels"), CLNET_ERR_FORMAT, in_dir("no-labels"),
                   "the count is 0");
    remove_dir();
}
END_TEST

START_TEST(idx_trailing_bytes_are_ignored) {
    make_dir();
    size_t n;
    uint8_t *b = image_file_bytes(COUNT, &n);
    uint8_t *more = malloc(n + 7);
    memcpy(more, b, n);
    memcpy(more + n, "garbage", 7);
    write_labels(in_dir("labels"), 0, COUNT);
    /* Raw, and inside a gzip stream. */
    for (int gz = 0; gz < 2; gz++) {
        write_file(in_dir("images"), gz, more, n + 7);
        clnet_dataset *ds = NULL;
        clnet_status s = clnet_dataset_load_idx(&ds, in_dir("images"), in_dir("labels"));
        ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
        ck_assert_int_eq(clnet_dataset_count(ds), COUNT);
        clnet_dataset_free(ds);
    }
    /* After a gzip stream (zlib ignores what is not another stream). */
    write_file(in_dir("images"), 1, b, n);
    FILE *f = fopen(in_dir("images"), "ab");
    fwrite("garbage", 1, 7, f);
    fclose(f);
    clnet_dataset *ds = NULL;
    clnet_status s = clnet_dataset_load_idx(&ds, in_dir("images"), in_dir("labels"));
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    clnet_dataset_free(ds);
    free(b);
    free(more);
    remove_dir();
}
END_TEST

/* ---- loading a folder --------------------------------------------------------- */

/* clnet_dataset_load(out, NULL, "test") with $CLNET_DATA_DIR naming dir, then put back. */
static clnet_status load_through_the_environment(clnet_dataset **out) {
    const char *old = getenv("CLNET_DATA_DIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("CLNET_DATA_DIR", dir, 1);
    clnet_status s = clnet_dataset_load(out, NULL, "test");
    if (saved)
        setenv("CLNET_DATA_DIR", saved, 1);
    else
        unsetenv("CLNET_DATA_DIR");
    free(saved);
    return s;
}

START_TEST(dataset_load_reads_both_splits_gz_or_raw_from_a_folder_or_the_environment) {
    make_dir();
    /* train: gzip beside a raw file of another size (the .gz wins); test: raw. */
    write_images(in_dir("train-images-idx3-ubyte.gz"), 1, COUNT);
    write_labels(in_dir("train-labels-idx1-ubyte.gz"), 1, COUNT);
    write_images(in_dir("train-images-idx3-ubyte"), 0, 5);
    write_images(in_dir("t10k-images-idx3-ubyte"), 0, 31);
    write_labels(in_dir("t10k-labels-idx1-ubyte"), 0, 31);
    clnet_dataset *train = NULL, *test = NULL;
    ck_assert_msg(clnet_dataset_load(&train, dir, "train") == CLNET_OK, "%s", clnet_last_error());
    ck_assert_msg(clnet_dataset_load(&test, dir, "test") == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_dataset_count(train), COUNT);
    ck_assert_int_eq(clnet_dataset_count(test), 31);
    clnet_dataset_free(train);
    clnet_dataset_free(test);

    /* NULL: $CLNET_DATA_DIR. */
    test = NULL;
    clnet_status s = load_through_the_environment(&test);
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_dataset_count(test), 31);
    clnet_dataset_free(test);
    remove_dir();
}
END_TEST

/* clnet_dataset_load_first: the first images in file order, every label's
 * classes; a file cut past them still loads, one cut before them does not. */
START_TEST(dataset_load_first_reads_only_the_first_images) {
    make_dir();
    write_labels(in_dir("train-labels-idx1-ubyte"), 0, COUNT);
    const long limits[] = {1, 7, COUNT - 1, COUNT, COUNT + 5, 0};
    for (int gz = 0; gz < 2; gz++) {
        remove(in_dir("train-images-idx3-ubyte.gz"));
        write_images(in_dir(gz ? "train-images-idx3-ubyte.gz" : "train-images-idx3-ubyte"), gz,
                     COUNT);
        for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
            clnet_dataset *ds = NULL;
            clnet_status s = clnet_dataset_load_first(&ds, dir, "train", limits[k]);
            ck_assert_msg(s == CLNET_OK, "limit %ld: %s", limits[k], clnet_last_error());
            int want = limits[k] && limits[k] < COUNT ? (int)limits[k] : COUNT;
            ck_assert_int_eq(clnet_dataset_count(ds), want);
            ck_assert_int_eq(clnet_dataset_classes(ds), 10); /* the whole label file's */
            expect_file_order(ds, want);
            clnet_dataset_free(ds);
        }
    }
    /* gzip cut 3 bytes into image 10: 10 images load, 11 or all are truncated */
    size_t n;
    uint8_t *bytes = image_file_bytes(COUNT, &n);
    write_file(in_dir("train-images-idx3-ubyte.gz"), 1, bytes, 16 + 10 * PIXELS + 3);
    free(bytes);
    clnet_dataset *ds = NULL;
    ck_assert_msg(clnet_dataset_load_first(&ds, dir, "train", 10) == CLNET_OK, "%s",
                  clnet_last_error());
    ck_assert_int_eq(clnet_dataset_count(ds), 10);
    clnet_dataset_free(ds);
    const long cut[] = {11, 0};
    for (int k = 0; k < 2; k++) {
        ds = NULL;
        ck_assert_int_eq(clnet_dataset_load_first(&ds, dir, "train", cut[k]), CLNET_ERR_FORMAT);
        ck_assert_ptr_null(ds);
        ck_assert_msg(strstr(clnet_last_error(), "truncated") &&
                          (cut[k] == 0 || strstr(clnet_last_error(), "the first 11 of the")),
                      "%s", clnet_last_error());
    }
    ck_assert_int_eq(clnet_dataset_load_first(&ds, dir, "train", -1), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(ds);
    remove_dir();
}
END_TEST

static void expect_load_failure(const char *folder, const char *split, clnet_status want,
                                const char *words) {
    clnet_dataset *ds = NULL;
    clnet_status s = clnet_dataset_load(&ds, folder, split);
    const char *m = clnet_last_error();
    ck_assert_msg(s == want, "status %d (%s), want %d", s, m, want);
    ck_assert_ptr_null(ds);
    ck_assert_msg(strstr(m, words), "the message does not say '%s': %s", words, m);
}

START_TEST(dataset_load_names_a_missing_folder_or_file) {
    make_dir();
    char missing[128];
    snprintf(missing, sizeof missing, "%s/not-here", dir);
    expect_load_failure(missing, "train", CLNET_ERR_IO, missing);
    write_labels(in_dir("a-file"), 0, 3);
    expect_load_failure(in_dir("a-file"), "train", CLNET_ERR_IO, "is not a folder");
    write_images(in_dir("train-images-idx3-ubyte"), 0, COUNT);
    expect_load_failure(dir, "train", CLNET_ERR_IO, "train-labels-idx1-ubyte.gz not found");
    expect_load_failure(dir, "test", CLNET_ERR_IO, "t10k-images-idx3-ubyte.gz not found");
    /* Not the default folder: no apt-get hint. */
    clnet_dataset *ds = NULL;
    clnet_dataset_load(&ds, dir, "test");
    ck_assert_ptr_null(strstr(clnet_last_error(), "apt-get"));
    /* A bad file in the folder is named by its full path. */
    write_file(in_dir("train-labels-idx1-ubyte.gz"), 1, (const uint8_t *)"xy", 2);
    expect_load_failure(dir, "train", CLNET_ERR_FORMAT, in_dir("train-labels-idx1-ubyte.gz"));
    remove_dir();

    struct stat st;
    if (stat(CLNET_DEFAULT_DATA_DIR, &st) == 0) {
        printf("note: %s exists, so its missing-folder hint is not checked\n",
               CLNET_DEFAULT_DATA_DIR);
    } else {
        expect_load_failure(CLNET_DEFAULT_DATA_DIR, "train", CLNET_ERR_IO,
                            "apt-get install dataset-fashion-mnist");
    }
}
END_TEST

/* ---- CIFAR-10 and CIFAR-100 binary folders --------------------------------------- */

/* The layout, as https://www.cs.toronto.edu/~kriz/cifar.html states it for
 * the binary versions: a file is records with no header; a record is the
 * label byte (CIFAR-10: 0 to 9) or the coarse then the fine label byte
 * (CIFAR-100: 0 to 19, 0 to 99), then 3072 pixel bytes: the 1024 red ones,
 * the 1024 green, the 1024 blue, each 32 rows of 32 from the top left. The
 * bytes below are built from that text alone, byte by byte, and each pixel
 * is a value of (seed, sample, c, h, w) that differs between planes, rows and
 * columns, so a swapped plane or a transposed image shows. */
#define CIFAR_SIDE  32
#define CIFAR_PLANE (CIFAR_SIDE * CIFAR_SIDE)

static uint8_t cifar_pixel(uint32_t seed, int sample, int c, int h, int w) {
    uint32_t x = seed * 2654435761u ^ (uint32_t)sample * 40503u ^ (uint32_t)c * 97u ^
                 (uint32_t)h * 131u ^ (uint32_t)w * 7u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    return (uint8_t)(x ^ x >> 15);
}

/* Sample i's fine label, and its coarse one (never equal to the fine, so a
 * reader that kept the coarse label would be seen). */
static int cifar_label(int version, int i) {
    return version == 10 ? (i * 7 + 3) % 10 : (i * 37 + 11) % 100;
}

static int cifar_coarse(int i) {
    return (cifar_label(100, i) + 1) % 20;
}

/* n records of the samples first, first + 1, ... into dir/name. */
static void write_cifar_file(const char *name, int version, uint32_t seed, int first, int n) {
    size_t labels = version == 10 ? 1 : 2, record = labels + 3 * CIFAR_PLANE;
    uint8_t *b = malloc((size_t)n * record + 1);
    ck_assert_ptr_nonnull(b);
    for (int r = 0; r < n; r++) {
        uint8_t *rec = b + (size_t)r * record;
        int i = first + r;
        if (version == 100) rec[0] = (uint8_t)cifar_coarse(i);
        rec[labels - 1] = (uint8_t)cifar_label(version, i);
        for (int c = 0; c < 3; c++)
            for (int h = 0; h < CIFAR_SIDE; h++)
                for (int w = 0; w < CIFAR_SIDE; w++)
                    rec[labels + (size_t)c * CIFAR_PLANE + (size_t)h * CIFAR_SIDE + w] =
                        cifar_pixel(seed, i, c, h, w);
    }
    write_file(in_dir(name), 0, b, (size_t)n * record);
    free(b);
}

static const char *const cifar10_names[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                              "dog",      "frog",       "horse", "ship", "truck"};
static const int cifar10_batch[5] = {3, 2, 4, 1, 3}; /* records of data_batch_1 ... 5 */
#define CIFAR10_TRAIN  13
#define CIFAR10_TEST   5
#define CIFAR100_TRAIN 17
#define CIFAR100_TEST  6
#define TRAIN_SEED     11u
#define TEST_SEED      23u

static void write_text(const char *name, const char *text) {
    write_file(in_dir(name), 0, (const uint8_t *)text, strlen(text));
}

/* CIFAR-10's folder: the train samples 0..12 across the five batches, the
 * test samples 0..4 of another seed, the names as the official file has them
 * (one a line, then an empty line). */
static void write_cifar10_folder(void) {
    make_dir();
    int first = 0;
    for (int k = 0; k < 5; k++) {
        char name[32];
        snprintf(name, sizeof name, "data_batch_%d.bin", k + 1);
        write_cifar_file(name, 10, TRAIN_SEED, first, cifar10_batch[k]);
        first += cifar10_batch[k];
    }
    write_cifar_file("test_batch.bin", 10, TEST_SEED, 0, CIFAR10_TEST);
    char text[256] = "";
    for (int k = 0; k < 10; k++) strcat(strcat(text, cifar10_names[k]), "\n");
    write_text("batches.meta.txt", strcat(text, "\n"));
}

static void cifar100_name(int k, char *out, size_t cap) {
    snprintf(out, cap, "fine_%02d", k);
}

/* CIFAR-100's folder; its names with Windows line ends, coarse names beside. */
static void write_cifar100_folder(void) {
    make_dir();
    write_cifar_file("train.bin", 100, TRAIN_SEED, 0, CIFAR100_TRAIN);
    write_cifar_file("test.bin", 100, TEST_SEED, 0, CIFAR100_TEST);
    char text[2048] = "", name[32];
    for (int k = 0; k < 100; k++) {
        cifar100_name(k, name, sizeof name);
        strcat(strcat(text, name), "\r\n");
    }
    write_text("fine_label_names.txt", text);
    write_text("coarse_label_names.txt", "only\ntwenty\nare\nhere\n");
}

/* ds holds the samples first .. first + count - 1 of seed, in order: its
 * shape, every pixel byte at its (c, h, w), every fine label; and the same
 * through a loader (file order, mean 0, std 1: each byte / 255). */
static void expect_cifar(const clnet_dataset *ds, int version, uint32_t seed, int count) {
    ck_assert_int_eq(clnet_dataset_count(ds), count);
    int c, h, w, dims[4];
    clnet_dataset_shape(ds, &c, &h, &w);
    ck_assert_int_eq(c, 3);
    ck_assert_int_eq(h, CIFAR_SIDE);
    ck_assert_int_eq(w, CIFAR_SIDE);
    ck_assert_int_eq(clnet_dataset_dims(ds, dims), 3);
    ck_assert_int_eq(dims[0], 3);
    ck_assert_int_eq(dims[1], CIFAR_SIDE);
    ck_assert_int_eq(dims[2], CIFAR_SIDE);
    ck_assert_int_eq(dims[3], 0);
    ck_assert_int_eq(clnet_dataset_classes(ds), version);
    ck_assert_int_eq(clnet_dataset_labelled(ds), 1);
    ck_assert_int_eq(clnet_dataset_from_idx(ds), 0);
    size_t bad = 0;
    for (int i = 0; i < count; i++) {
        ck_assert_int_eq(ds->labels[i], cifar_label(version, i));
        for (int k = 0; k < 3 * CIFAR_PLANE; k++) {
            int ch = k / CIFAR_PLANE, y = k % CIFAR_PLANE / CIFAR_SIDE, x = k % CIFAR_SIDE;
            if (ds->images[(size_t)i * 3 * CIFAR_PLANE + k] != cifar_pixel(seed, i, ch, y, x))
                bad++;
        }
    }
    ck_assert_msg(bad == 0, "%zu of the %d x 3072 pixel bytes differ", bad, count);
    clnet_loader *l = make_loader(ds, count, 0, 0, 0);
    clnet_batch b;
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    ck_assert_int_eq(b.n, count);
    for (int i = 0; i < count; i++) {
        ck_assert_int_eq(b.labels[i], cifar_label(version, i));
        for (int k = 0; k < 3 * CIFAR_PLANE; k++) {
            int ch = k / CIFAR_PLANE, y = k % CIFAR_PLANE / CIFAR_SIDE, x = k % CIFAR_SIDE;
            if (b.images[(size_t)i * 3 * CIFAR_PLANE + k] !=
                (float)cifar_pixel(seed, i, ch, y, x) / 255.0f)
                bad++;
        }
    }
    ck_assert_msg(bad == 0, "the loader: %zu of the %d x 3072 values differ", bad, count);
    clnet_loader_free(l);
}

static clnet_dataset *load_ok(const char *split, long limit) {
    clnet_dataset *ds = NULL;
    clnet_status s = clnet_dataset_load_first(&ds, dir, split, limit);
    ck_assert_msg(s == CLNET_OK, "%s, limit %ld: %s", split, limit, clnet_last_error());
    return ds;
}

START_TEST(cifar10_folder_reads_back_every_pixel_label_and_name) {
    write_cifar10_folder();
    clnet_dataset *train = load_ok("train", 0), *test = NULL;
    expect_cifar(train, 10, TRAIN_SEED, CIFAR10_TRAIN);
    for (int k = 0; k < 10; k++)
        ck_assert_str_eq(clnet_dataset_class_name(train, k), cifar10_names[k]);
    ck_assert_ptr_null(clnet_dataset_class_name(train, 10));
    ck_assert_ptr_null(clnet_dataset_class_name(train, -1));
    ck_assert_ptr_null(clnet_dataset_class_name(NULL, 0));
    /* clnet_dataset_load, and the test split: its own file and seed */
    ck_assert_msg(clnet_dataset_load(&test, dir, "test") == CLNET_OK, "%s", clnet_last_error());
    expect_cifar(test, 10, TEST_SEED, CIFAR10_TEST);
    ck_assert_str_eq(clnet_dataset_class_name(test, 9), "truck");
    clnet_dataset_free(test);
    /* truncating keeps the classes and their names */
    ck_assert_int_eq(clnet_dataset_truncate(train, 2), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_classes(train), 10);
    ck_assert_str_eq(clnet_dataset_class_name(train, 9), "truck");
    clnet_dataset_free(train);
    /* $CLNET_DATA_DIR finds it as it finds Fashion-MNIST */
    test = NULL;
    clnet_status s = load_through_the_environment(&test);
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_dataset_count(test), CIFAR10_TEST);
    clnet_dataset_free(test);
    remove_dir();
    /* IDX files have no names (synthetic_set makes a folder of its own) */
    clnet_dataset *idx = synthetic_set(0);
    ck_assert_ptr_null(clnet_dataset_class_name(idx, 0));
    clnet_dataset_free(idx);
}
END_TEST

START_TEST(cifar100_folder_reads_the_fine_labels_and_their_names) {
    write_cifar100_folder();
    clnet_dataset *train = load_ok("train", 0), *test = load_ok("test", 0);
    expect_cifar(train, 100, TRAIN_SEED, CIFAR100_TRAIN);
    expect_cifar(test, 100, TEST_SEED, CIFAR100_TEST);
    char name[32];
    for (int k = 0; k < 100; k++) {
        cifar100_name(k, name, sizeof name);
        ck_assert_str_eq(clnet_dataset_class_name(train, k), name); /* no "\r" left */
    }
    ck_assert_ptr_null(clnet_dataset_class_name(train, 100));
    clnet_dataset_free(train);
    clnet_dataset_free(test);
    remove_dir();
}
END_TEST

/* The first `limit` records of the split's files in order, across batch
 * files; records past the limit are not read (a bad label there loads). */
START_TEST(cifar_load_first_reads_the_first_records_across_batch_files) {
    write_cifar10_folder();
    const long limits[] = {1, 3, 4, 12, CIFAR10_TRAIN, CIFAR10_TRAIN + 5};
    for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
        clnet_dataset *ds = load_ok("train", limits[k]);
        int want = limits[k] < CIFAR10_TRAIN ? (int)limits[k] : CIFAR10_TRAIN;
        expect_cifar(ds, 10, TRAIN_SEED, want);
        ck_assert_int_eq(clnet_dataset_classes(ds), 10); /* the data set's, not the labels' */
        clnet_dataset_free(ds);
    }
    /* a label of 10 in the first record of data_batch_5 (sample 10) */
    write_cifar_file("data_batch_5.bin", 10, TRAIN_SEED, 10, 3);
    FILE *f = fopen(in_dir("data_batch_5.bin"), "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputc(10, f), 10);
    ck_assert_int_eq(fclose(f), 0);
    clnet_dataset *ds = load_ok("train", 10);
    expect_cifar(ds, 10, TRAIN_SEED, 10);
    clnet_dataset_free(ds);
    ds = NULL;
    ck_assert_int_eq(clnet_dataset_load_first(&ds, dir, "train", 11), CLNET_ERR_FORMAT);
    ck_assert_ptr_null(ds);
    remove_dir();
}
END_TEST

/* clnet_dataset_load(dir, split) fails with want, and its message names the
 * file (in the test's folder) and says the words. */
static void expect_cifar_failure(const char *split, clnet_status want, const char *file,
                                 const char *words) {
    expect_pair_failure(clnet_dataset_load, dir, split, want, in_dir(file), words);
}

/* Cuts dir/name to its first n bytes. */
static void cut_file(const char *name, long n) {
    ck_assert_int_eq(truncate(in_dir(name), n), 0);
}

/* Sets byte `at` of dir/name. */
static void set_byte(const char *name, long at, int value) {
    FILE *f = fopen(in_dir(name), "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, at, SEEK_SET), 0);
    ck_assert_int_eq(fputc(value, f), value);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(cifar_damaged_files_are_errors_naming_the_file) {
    /* CIFAR-10: a batch cut 100 bytes into its second record */
    write_cifar10_folder();
    cut_file("data_batch_3.bin", 3073 + 100);
    expect_cifar_failure("train", CLNET_ERR_FORMAT, "data_batch_3.bin",
                         "truncated: 3173 bytes are 1 whole records of 3073 bytes and 100 bytes "
                         "left over");
    /* an empty batch */
    cut_file("data_batch_3.bin", 0);
    expect_cifar_failure("train", CLNET_ERR_FORMAT, "data_batch_3.bin", "empty file");
    /* a missing batch (the others are there) */
    remove(in_dir("data_batch_3.bin"));
    expect_cifar_failure("train", CLNET_ERR_IO, "data_batch_3.bin", "No such file");
    /* a test file alone is CIFAR-10 still: its train split is missing data_batch_1 */
    for (int k = 1; k <= 5; k++) {
        char name[32];
        snprintf(name, sizeof name, "data_batch_%d.bin", k);
        remove(in_dir(name));
    }
    expect_cifar_failure("train", CLNET_ERR_IO, "data_batch_1.bin", "No such file");
    /* a label of 10 in record 3 of test_batch (the byte before its pixels) */
    set_byte("test_batch.bin", 3 * 3073, 10);
    expect_cifar_failure("test", CLNET_ERR_FORMAT, "test_batch.bin",
                         "record 3: label 10, want 0 to 9");
    write_cifar_file("test_batch.bin", 10, TEST_SEED, 0, CIFAR10_TEST);
    /* names files of 9 and 11 names, or an empty line among them */
    write_text("batches.meta.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\n\n");
    expect_cifar_failure("test", CLNET_ERR_FORMAT, "batches.meta.txt", "9 class names, want 10");
    write_text("batches.meta.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n");
    expect_cifar_failure("test", CLNET_ERR_FORMAT, "batches.meta.txt", "11 class names, want 10");
    write_text("batches.meta.txt", "a\nb\n\nc\nd\ne\nf\ng\nh\ni\nj\n");
    expect_cifar_failure("test", CLNET_ERR_FORMAT, "batches.meta.txt", "line 3 is empty");
    /* without a names file: the data loads, without names */
    remove(in_dir("batches.meta.txt"));
    clnet_dataset *ds = load_ok("test", 0);
    expect_cifar(ds, 10, TEST_SEED, CIFAR10_TEST);
    ck_assert_ptr_null(clnet_dataset_class_name(ds, 0));
    clnet_dataset_free(ds);
    remove_dir();

    /* CIFAR-100: records of 3074 bytes; the fine label, then the coarse, out of range */
    write_cifar100_folder();
    cut_file("train.bin", 5 * 3074 + 3073);
    expect_cifar_failure("train", CLNET_ERR_FORMAT, "train.bin",
                         "5 whole records of 3074 bytes and 3073 bytes left over");
    cut_file("train.bin", 0);
    expect_cifar_failure("train", CLNET_ERR_FORMAT, "train.bin", "empty file");
    remove(in_dir("train.bin"));
    expect_cifar_failure("train", CLNET_ERR_IO, "train.bin", "No such file");
    set_byte("test.bin", 4 * 3074 + 1, 100);
    expect_cifar_failure("test", CLNET_ERR_FORMAT, "test.bin",
                         "record 4: fine label 100, want 0 to 99");
    write_cifar_file("test.bin", 100, TEST_SEED, 0, CIFAR100_TEST);
    set_byte("test.bin", 2 * 3074, 20);
    expect_cifar_failure("test", CLNET_ERR_FORMAT, "test.bin",
                         "record 2: coarse label 20, want 0 to 19");
    write_cifar_file("test.bin", 100, TEST_SEED, 0, CIFAR100_TEST);
    write_text("fine_label_names.txt", "apple\naquarium_fish\n");
    expect_cifar_failure("test", CLNET_ERR_FORMAT, "fine_label_names.txt",
                         "2 class names, want 100");
    remove_dir();
}
END_TEST

/* A folder of no layout: the message names the files of each. */
START_TEST(dataset_load_names_every_layout_in_a_folder_of_none) {
    make_dir();
    write_text("data_batch_1.txt", "not a batch\n");
    const char *words[] = {"train-images-idx3-ubyte.gz not found", "data_batch_1.bin",
                           "test_batch.bin", "CIFAR-100's (train.bin, test.bin)"};
    for (size_t k = 0; k < sizeof words / sizeof *words; k++)
        expect_load_failure(dir, "train", CLNET_ERR_IO, words[k]);
    remove_dir();
}
END_TEST

/* ---- invalid arguments ---------------------------------------------------------- */

START_TEST(invalid_arguments_are_rejected_with_a_message) {
    clnet_dataset *ds = synthetic_set(1);
    clnet_dataset *none = NULL;
    clnet_loader *l = NULL;
    clnet_loader_config cfg = {.batch = 8, .seed = 1, .shuffle = 1, .mean = 0, .std = 1};
    clnet_batch b;
#define INVALID(call, words)                                                                       \
    do {                                                                                           \
        clnet_fail(CLNET_OK, "stale");                                                             \
        ck_assert_int_eq((call), CLNET_ERR_INVALID_ARGUMENT);                                      \
        ck_assert_msg(strstr(clnet_last_error(), (words)), "%s: %s", #call, clnet_last_error());   \
    } while (0)
    INVALID(clnet_dataset_load_idx(NULL, "a", "b"), "must not be NULL");
    INVALID(clnet_dataset_load_idx(&none, NULL, "b"), "must not be NULL");
    INVALID(clnet_dataset_load_idx(&none, "a", NULL), "must not be NULL");
    INVALID(clnet_dataset_load(NULL, NULL, "train"), "must not be NULL");
    INVALID(clnet_dataset_load(&none, NULL, NULL), "must not be NULL");
    INVALID(clnet_dataset_load(&none, "/tmp", "validation"), "unknown data set split 'validation'");
    ck_assert_ptr_null(none);

    INVALID(clnet_dataset_truncate(NULL, 1), "ds is NULL");
    INVALID(clnet_dataset_truncate(ds, COUNT + 1), "n is 104, want 1 to the 103 samples");
    INVALID(clnet_dataset_truncate(ds, 0), "n is 0");
    INVALID(clnet_dataset_truncate(ds, -5), "n is -5");

    INVALID(clnet_loader_create(NULL, ds, &cfg), "must not be NULL");
    INVALID(clnet_loader_create(&l, NULL, &cfg), "must not be NULL");
    INVALID(clnet_loader_create(&l, ds, NULL), "must not be NULL");
    cfg.batch = 0;
    INVALID(clnet_loader_create(&l, ds, &cfg), "batch is 0, want at least 1");
    cfg.batch = -3;
    INVALID(clnet_loader_create(&l, ds, &cfg), "batch is -3");
    cfg.batch = 8;
    cfg.std = 0;
    INVALID(clnet_loader_create(&l, ds, &cfg), "std not 0");
    cfg.std = NAN;
    INVALID(clnet_loader_create(&l, ds, &cfg), "must be finite");
    cfg.std = 1;
    cfg.mean = INFINITY;
    INVALID(clnet_loader_create(&l, ds, &cfg), "must be finite");
    cfg.mean = 0;
    cfg.batch = COUNT + 1;
    cfg.drop_last = 1;
    INVALID(clnet_loader_create(&l, ds, &cfg), "leaves no batch");
    ck_assert_ptr_null(l);
    cfg.drop_last = 0;
    ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK); /* one short batch an epoch */

    INVALID(clnet_loader_next(NULL, &b), "must not be NULL");
    INVALID(clnet_loader_next(l, NULL), "must not be NULL");
    INVALID(clnet_loader_seek(NULL, 0, 0), "l is NULL");
    INVALID(clnet_loader_seek(l, -1, 0), "epoch -1 position 0 is out of range");
    INVALID(clnet_loader_seek(l, 0, -1), "out of range");
    INVALID(clnet_loader_seek(l, 0, COUNT), "want epoch >= 0 and 0 <= position < 103");
#undef INVALID
    /* The loader still works after the rejected calls. */
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    ck_assert_int_eq(b.n, COUNT);

    /* The NULL-tolerant queries. */
    ck_assert_int_eq(clnet_dataset_count(NULL), 0);
    ck_assert_int_eq(clnet_dataset_classes(NULL), 0);
    int c = 9, h = 9, w = 9;
    clnet_dataset_shape(NULL, &c, &h, &w);
    ck_assert(c == 0 && h == 0 && w == 0);
    clnet_dataset_shape(ds, NULL, NULL, NULL);
    ck_assert_int_eq(clnet_loader_batches_per_epoch(NULL), 0);
    clnet_loader_free(NULL);
    clnet_dataset_free(NULL);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
}
END_TEST

START_TEST(truncate_keeps_the_first_samples_and_the_classes) {
    clnet_dataset *ds = synthetic_set(0);
    ck_assert_int_eq(clnet_dataset_truncate(ds, 17), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_count(ds), 17);
    ck_assert_int_eq(clnet_dataset_classes(ds), 10);
    ck_assert_int_eq(clnet_dataset_truncate(ds, 18), CLNET_ERR_INVALID_ARGUMENT);
    clnet_loader *l = make_loader(ds, 5, 3, 1, 0);
    int *order = epoch_orders(l, 17, 5, 0, 0, 2);
    int seen[17] = {0};
    for (int i = 0; i < 17; i++) seen[order[i]]++;
    for (int i = 0; i < 17; i++) ck_assert_int_eq(seen[i], 1);
    free(order);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
}
END_TEST

START_TEST(split_holds_out_a_seeded_subset_in_order) {
    clnet_dataset *ds = synthetic_set(0);
    uint64_t seed = test_seed_from_env("CLNET_TEST_SPLIT_SEED", 21);
    printf("split seed %llu (CLNET_TEST_SPLIT_SEED replays it)\n", (unsigned long long)seed);
    double fractions[] = {0.01, 0.1, 0.37, 0.5, 0.9};
    for (int f = 0; f < 5; f++) {
        clnet_dataset *rest = NULL, *held = NULL, *rest2 = NULL, *held2 = NULL;
        ck_assert_msg(clnet_dataset_split(ds, fractions[f], seed + (uint64_t)f, &rest, &held) ==
                          CLNET_OK,
                      "%s", clnet_last_error());
        int h = clnet_dataset_count(held), r = clnet_dataset_count(rest);
        ck_assert_int_eq(h, (int)llround(fractions[f] * COUNT));
        ck_assert_int_eq(h + r, COUNT);
        ck_assert_int_eq(clnet_dataset_classes(held), clnet_dataset_classes(ds));
        /* every sample once, each part in the data set's order, its bytes and label with it */
        int seen[COUNT] = {0};
        const clnet_dataset *parts[2] = {rest, held};
        for (int p = 0; p < 2; p++) {
            int last = -1;
            for (int i = 0; i < clnet_dataset_count(parts[p]); i++) {
                const uint8_t *x = parts[p]->images + (size_t)i * PIXELS;
                int sample = x[0] | x[1] << 8;
                ck_assert_msg(sample > last, "part %d not in order at %d", p, i);
                last = sample;
                seen[sample]++;
                for (int j = 0; j < PIXELS; j++) ck_assert_int_eq(x[j], sample_byte(sample, j));
                ck_assert_int_eq(parts[p]->labels[i], sample_label(sample));
            }
        }
        for (int i = 0; i < COUNT; i++) ck_assert_int_eq(seen[i], 1);
        /* the same seed, the same split; another seed, another */
        ck_assert_int_eq(clnet_dataset_split(ds, fractions[f], seed + (uint64_t)f, &rest2, &held2),
                         CLNET_OK);
        ck_assert_int_eq(memcmp(held->images, held2->images, (size_t)h * PIXELS), 0);
        clnet_dataset_free(rest2), clnet_dataset_free(held2);
        if (h > 3 && h < COUNT - 3) {
            ck_assert_int_eq(clnet_dataset_split(ds, fractions[f], ~seed, &rest2, &held2),
                             CLNET_OK);
            ck_assert_msg(memcmp(held->images, held2->images, (size_t)h * PIXELS) != 0,
                          "two seeds held out the same %d samples", h);
            clnet_dataset_free(rest2), clnet_dataset_free(held2);
        }
        clnet_dataset_free(rest), clnet_dataset_free(held);
    }
    clnet_dataset *a = NULL, *b = NULL;
    double bad[] = {0, 1, -0.5, 0.001, 0.999, NAN};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(clnet_dataset_split(ds, bad[i], 1, &a, &b), CLNET_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(a);
        ck_assert_ptr_null(b);
    }
    clnet_dataset_free(ds);
}
END_TEST

/* ---- the loader ---------------------------------------------------------------- */

START_TEST(loader_covers_every_sample_once_per_epoch) {
    clnet_dataset *ds = synthetic_set(1);
    /* 103 samples: no batch size divides it; then 100, which 4, 10 and 25 divide. */
    int counts[] = {COUNT, 100};
    int batches[][6] = {{1, 7, 10, 64, 103, 150}, {4, 10, 25, 100, 3, 99}};
    for (int ci = 0; ci < 2; ci++) {
        if (counts[ci] != COUNT) ck_assert_int_eq(clnet_dataset_truncate(ds, counts[ci]), CLNET_OK);
        int count = counts[ci];
        for (int bi = 0; bi < 6; bi++) {
            for (int variant = 0; variant < 4; variant++) {
                int batch = batches[ci][bi], shuffle = variant & 1, drop_last = variant >> 1;
                if (drop_last && batch > count) continue; /* rejected: see invalid arguments */
                clnet_loader *l = make_loader(ds, batch, 42, shuffle, drop_last);
                int epochs = 3;
                int *order = epoch_orders(l, count, batch, drop_last, 0, epochs);
                int used = drop_last ? count / batch * batch : count;
                for (int e = 0; e < epochs; e++) {
                    int seen[COUNT] = {0};
                    for (int p = 0; p < used; p++) {
                        int id = order[e * count + p];
                        ck_assert_msg(id >= 0 && id < count, "batch %d: sample %d", batch, id);
                        seen[id]++;
                        if (!shuffle) ck_assert_int_eq(id, p);
                    }
                    for (int i = 0; i < count && !drop_last; i++)
                        ck_assert_msg(seen[i] == 1, "count %d batch %d epoch %d: sample %d seen %d",
                                      count, batch, e, i, seen[i]);
                    for (int i = 0; i < count; i++) ck_assert_int_le(seen[i], 1);
                }
                free(order);
                clnet_loader_free(l);
            }
        }
    }
    clnet_dataset_free(ds);
}
END_TEST

static int same_order(const int *a, const int *b, int n) {
    return memcmp(a, b, (size_t)n * sizeof(int)) == 0;
}

START_TEST(shuffle_is_a_pure_function_of_seed_and_epoch) {
    clnet_dataset *ds = synthetic_set(1);
    clnet_loader *a = make_loader(ds, 10, 7, 1, 0);
    clnet_loader *b = make_loader(ds, 10, 7, 1, 0);
    clnet_loader *c = make_loader(ds, 10, 8, 1, 0);
    clnet_loader *d = make_loader(ds, 32, 7, 1, 0); /* another batch size, the same orders */
    int *oa = epoch_orders(a, COUNT, 10, 0, 0, 3);
    int *ob = epoch_orders(b, COUNT, 10, 0, 0, 3);
    int *oc = epoch_orders(c, COUNT, 10, 0, 0, 3);
    int *od = epoch_orders(d, COUNT, 32, 0, 0, 3);
    ck_assert(same_order(oa, ob, 3 * COUNT));
    ck_assert(same_order(oa, od, 3 * COUNT));
    for (int e = 0; e < 3; e++) {
        ck_assert_msg(!same_order(oa + e * COUNT, oc + e * COUNT, COUNT), "seeds 7 and 8, epoch %d",
                      e);
        for (int f = 0; f < e; f++)
            ck_assert_msg(!same_order(oa + e * COUNT, oa + f * COUNT, COUNT), "epochs %d and %d", e,
                          f);
        /* Shuffled for real: far from file order. */
        int in_place = 0;
        for (int p = 0; p < COUNT; p++) in_place += oa[e * COUNT + p] == p;
        ck_assert_int_lt(in_place, 10);
    }
    /* Epoch 2's order made directly, without epochs 0 and 1. */
    clnet_loader *e = make_loader(ds, 10, 7, 1, 0);
    ck_assert_int_eq(clnet_loader_seek(e, 2, 0), CLNET_OK);
    int *oe = epoch_orders(e, COUNT, 10, 0, 2, 1);
    ck_assert(same_order(oa + 2 * COUNT, oe, COUNT));
    free(oa), free(ob), free(oc), free(od), free(oe);
    clnet_loader_free(a), clnet_loader_free(b), clnet_loader_free(c), clnet_loader_free(d);
    clnet_loader_free(e);
    clnet_dataset_free(ds);
}
END_TEST

/* Fisher-Yates with an unbiased generator makes all 3! orders of 3 samples
 * equally likely (a classic off-by-one, Sattolo's cycles, never makes some). */
START_TEST(shuffle_draws_every_permutation_equally_often) {
    clnet_dataset *ds = synthetic_set(0);
    ck_assert_int_eq(clnet_dataset_truncate(ds, 3), CLNET_OK);
    clnet_loader *l = make_loader(ds, 3, 11, 1, 0);
    const int epochs = 6000;
    int times[27] = {0};
    for (int e = 0; e < epochs; e++) {
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
        ck_assert_int_eq(b.epoch, e);
        int code = 0;
        for (int i = 0; i < 3; i++) code = code * 3 + sample_of(b.images, b.labels, i);
        times[code]++;
    }
    int orders = 0;
    for (int code = 0; code < 27; code++) {
        if (!times[code]) continue;
        orders++;
        /* 1000 expected, standard deviation about 29. */
        ck_assert_msg(abs(times[code] - epochs / 6) < 150, "order %d drawn %d times of %d", code,
                      times[code], epochs);
    }
    ck_assert_int_eq(orders, 6);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
}
END_TEST

START_TEST(seek_reproduces_the_batches_of_a_run_from_the_start) {
    clnet_dataset *ds = synthetic_set(1);
    for (int drop_last = 0; drop_last < 2; drop_last++) {
        const int batch = 10, epochs = 4;
        int per_epoch = drop_last ? COUNT / batch : (COUNT + batch - 1) / batch;
        int total = epochs * per_epoch;
        clnet_loader *ref = make_loader(ds, batch, 99, 1, drop_last);
        saved_batch *run = take(ref, total);
        clnet_loader_free(ref);

        /* Seek to each batch's start, on a fresh loader and on one that has
         * run (and prefetched) ahead, and compare everything after it. */
        clnet_loader *l = make_loader(ds, batch, 99, 1, drop_last);
        for (int k = 0; k < total; k += 3) {
            free_batches(take(l, 2), 2);
            ck_assert_int_eq(clnet_loader_seek(l, run[k].epoch, run[k].position), CLNET_OK);
            int rest = total - k < 8 ? total - k : 8;
            saved_batch *again = take(l, rest);
            for (int i = 0; i < rest; i++)
                assert_same_batch(&run[k + i], &again[i], "after seek", k + i);
            free_batches(again, rest);
        }
        /* Mid-batch positions: the batch holds the epoch's order from there. */
        int *order = malloc((size_t)epochs * COUNT * sizeof(int));
        for (int k = 0; k < total; k++)
            for (int i = 0; i < run[k].n; i++)
                order[run[k].epoch * COUNT + run[k].position + i] =
                    sample_of(run[k].images, run[k].labels, i);
        int64_t positions[] = {1, 5, 37, 89};
        for (int e = 0; e < epochs - 1; e++) {
            for (int pi = 0; pi < 4; pi++) {
                ck_assert_int_eq(clnet_loader_seek(l, e, positions[pi]), CLNET_OK);
                clnet_batch b;
                ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
                ck_assert_int_eq(b.epoch, e);
                ck_assert_int_eq(b.position, positions[pi]);
                int want_n = COUNT - positions[pi] < batch ? COUNT - (int)positions[pi] : batch;
                ck_assert_int_eq(b.n, want_n);
                for (int i = 0; i < b.n; i++)
                    ck_assert_int_eq(sample_of(b.images, b.labels, i),
                                     order[e * COUNT + positions[pi] + i]);
                /* The next batch continues right after it. */
                ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
                int64_t after = positions[pi] + want_n;
                int wraps = after >= COUNT || (drop_last && COUNT - after < batch);
                ck_assert_int_eq(b.epoch, wraps ? e + 1 : e);
                ck_assert_int_eq(b.position, wraps ? 0 : after);
            }
            /* The last partial batch: kept, or with drop_last the next epoch. */
            ck_assert_int_eq(clnet_loader_seek(l, e, COUNT - 1), CLNET_OK);
            clnet_batch b;
            ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
            ck_assert_int_eq(b.epoch, drop_last ? e + 1 : e);
            ck_assert_int_eq(b.position, drop_last ? 0 : COUNT - 1);
            ck_assert_int_eq(b.n, drop_last ? batch : 1);
        }
        free(order);
        clnet_loader_free(l);
        free_batches(run, total);
    }
    clnet_dataset_free(ds);
}
END_TEST

START_TEST(normalisation_applies_mean_and_std) {
    clnet_dataset *ds = synthetic_set(0);
    float means[] = {0.0f, 0.2860f, 0.5f, -1.0f};
    float stds[] = {1.0f, 0.3530f, 0.25f, -2.0f};
    for (int i = 0; i < 4; i++) {
        clnet_loader_config cfg = {.batch = COUNT, .mean = means[i], .std = stds[i]};
        clnet_loader *l = NULL;
        ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
        double worst = 0;
        for (int s = 0; s < COUNT; s++) {
            for (int j = 0; j < PIXELS; j++) {
                double want = ((double)sample_byte(s, j) / 255.0 - means[i]) / stds[i];
                double diff = fabs((double)b.images[s * PIXELS + j] - want);
                if (diff > worst) worst = diff;
            }
        }
        ck_assert_msg(worst < 1e-5, "mean %g std %g: largest difference %g", (double)means[i],
                      (double)stds[i], worst);
        if (i == 0) { /* mean 0 and std 1: [0, 1], exact at both ends */
            for (int k = 0; k < COUNT * PIXELS; k++) {
                uint8_t byte = sample_byte(k / PIXELS, k % PIXELS);
                if (byte == 0) ck_assert(b.images[k] == 0.0f);
                if (byte == 255) ck_assert(b.images[k] == 1.0f);
            }
        }
        clnet_loader_free(l);
    }
    clnet_dataset_free(ds);
}
END_TEST

START_TEST(prefetch_gives_the_same_batches_as_a_second_loader_over_many_epochs) {
    clnet_dataset *ds = synthetic_set(1);
    const int batch = 8, epochs = 60;
    clnet_loader *a = make_loader(ds, batch, 2024, 1, 0);
    clnet_loader *b = make_loader(ds, batch, 2024, 1, 0);
    int total = epochs * clnet_loader_batches_per_epoch(a);
    /* a is drained at once; b with pauses, so its thread is ahead, behind or
     * racing the caller at different times. */
    saved_batch *ra = take(a, total);
    saved_batch *rb = calloc((size_t)total, sizeof *rb);
    for (int k = 0; k < total; k++) {
        if (k % 97 == 0) pause_us(200);
        saved_batch *one = take(b, 1);
        rb[k] = *one;
        free(one);
    }
    for (int k = 0; k < total; k++) assert_same_batch(&ra[k], &rb[k], "second loader", k);
    ck_assert_int_eq(ra[total - 1].epoch, epochs - 1);
    free_batches(ra, total);
    free_batches(rb, total);
    clnet_loader_free(a);
    clnet_loader_free(b);
    clnet_dataset_free(ds);
}
END_TEST

START_TEST(a_prefetch_failure_reaches_the_caller_with_its_message) {
    clnet_dataset *ds = synthetic_set(1);
    clnet_loader *l = make_loader(ds, 10, 5, 1, 0);
    clnet_loader *ref = make_loader(ds, 10, 5, 1, 0);
    saved_batch *want = take(ref, 5);
    /* Batch 2 is requested only once batch 1 is handed out. */
    clnet_loader_inject_failure(l, 0, 20);
    saved_batch *got = take(l, 2);
    clnet_fail(CLNET_ERR_IO, "an older message on the caller's thread");
    clnet_batch b;
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_ERR_INTERNAL);
    ck_assert_msg(strstr(clnet_last_error(), "injected failure preparing epoch 0 position 20"),
                  "%s", clnet_last_error());
    /* The loader stayed where it was: the same batch comes next. */
    saved_batch *rest = take(l, 3);
    for (int k = 0; k < 2; k++) assert_same_batch(&want[k], &got[k], "before the failure", k);
    for (int k = 0; k < 3; k++)
        assert_same_batch(&want[2 + k], &rest[k], "after the failure", 2 + k);
    /* A failure dropped by a seek is never reported. */
    clnet_loader_inject_failure(l, 1, 0);
    ck_assert_int_eq(clnet_loader_seek(l, 1, 0), CLNET_OK);
    pause_us(2000);
    ck_assert_int_eq(clnet_loader_seek(l, 0, 0), CLNET_OK);
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    ck_assert_int_eq(b.position, 0);
    free_batches(want, 5);
    free_batches(got, 2);
    free_batches(rest, 3);
    clnet_loader_free(l);
    clnet_loader_free(ref);
    clnet_dataset_free(ds);
}
END_TEST

START_TEST(seek_and_free_while_prefetching_are_clean) {
    clnet_dataset *ds = synthetic_set(1);
    uint64_t s = 12345;
    for (int round = 0; round < 300; round++) {
        clnet_loader *l = make_loader(ds, 1 + round % 17, (uint64_t)round, round & 1, 0);
        int steps = round % 5;
        for (int k = 0; k < steps; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            clnet_batch b;
            if (s >> 63) {
                ck_assert_int_eq(
                    clnet_loader_seek(l, (int)(s >> 40) % 4, (int64_t)(s >> 20) % COUNT), CLNET_OK);
            } else {
                ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
            }
        }
        clnet_loader_free(l); /* often while the thread is preparing a batch */
    }
    clnet_dataset_free(ds);
}
END_TEST

/* ---- the real data set --------------------------------------------------------- */

START_TEST(real_fashion_mnist_loads) {
    if (test_skip_without_fashion_mnist()) return;
    clnet_dataset *train = NULL, *test = NULL;
    double t0 = clnet_seconds();
    clnet_status s = clnet_dataset_load(&train, NULL, "train");
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    double t1 = clnet_seconds();
    s = clnet_dataset_load(&test, NULL, "test");
    ck_assert_msg(s == CLNET_OK, "%s", clnet_last_error());
    double t2 = clnet_seconds();
    ck_assert_int_eq(clnet_dataset_count(train), 60000);
    ck_assert_int_eq(clnet_dataset_count(test), 10000);
    int c, h, w;
    clnet_dataset_shape(train, &c, &h, &w);
    ck_assert(c == 1 && h == 28 && w == 28);
    clnet_dataset_shape(test, &c, &h, &w);
    ck_assert(c == 1 && h == 28 && w == 28);
    ck_assert_int_eq(clnet_dataset_classes(train), 10);
    ck_assert_int_eq(clnet_dataset_classes(test), 10);

    /* One shuffled epoch through the loader: every label in range, each class
     * 6000 times (Fashion-MNIST is balanced). */
    clnet_loader_config cfg = {
        .batch = 256, .seed = 1, .shuffle = 1, .mean = 0.2860f, .std = 0.3530f};
    clnet_loader *l = NULL;
    ck_assert_int_eq(clnet_loader_create(&l, train, &cfg), CLNET_OK);
    int per_class[10] = {0};
    double t3 = clnet_seconds();
    for (int k = 0; k < clnet_loader_batches_per_epoch(l); k++) {
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
        ck_assert_int_eq(b.epoch, 0);
        for (int i = 0; i < b.n; i++) {
            ck_assert(b.labels[i] >= 0 && b.labels[i] < 10);
            per_class[b.labels[i]]++;
        }
    }
    double t4 = clnet_seconds();
    for (int k = 0; k < 10; k++) ck_assert_int_eq(per_class[k], 6000);
    printf("Fashion-MNIST: train (60000) loaded in %.3f s, test (10000) in %.3f s; "
           "one epoch of batches of 256 in %.3f s\n",
           t1 - t0, t2 - t1, t4 - t3);
    clnet_loader_free(l);
    clnet_dataset_free(train);
    clnet_dataset_free(test);
}
END_TEST

/* ---- .npy files (written by NumPy: tests/fixtures/make_npy_fixtures.py) ---------- */

static const char *npy(const char *name) {
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/npy/%s", CLNET_FIXTURES_DIR, name);
    return p;
}

/* Every sample's values through a loader with the given mean and std, in file order. */
static float *loaded(const clnet_dataset *ds, float mean, float std, int32_t *labels) {
    int dims[4], rank = clnet_dataset_dims(ds, dims), n = clnet_dataset_count(ds);
    size_t sample = 1;
    for (int i = 0; i < rank; i++) sample *= (size_t)dims[i];
    clnet_loader *l = NULL;
    clnet_loader_config cfg = {.batch = n, .seed = 1, .shuffle = 0, .mean = mean, .std = std};
    ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
    clnet_batch b;
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    ck_assert_int_eq(b.n, n);
    float *out = malloc((size_t)n * sample * sizeof(float));
    memcpy(out, b.images, (size_t)n * sample * sizeof(float));
    memcpy(labels, b.labels, (size_t)n * sizeof(int32_t));
    clnet_loader_free(l);
    return out;
}

START_TEST(npy_files_of_each_type_and_rank_read_back_exactly) {
    struct {
        const char *x, *y;
        int rank, dims[4], classes;
        int32_t labels[4];
    } cases[] = {
        {"x_u8_nchw.npy", "y_i64.npy", 3, {1, 2, 3}, 4, {3, 0, 2, 1}},
        {"x_f32_ncl.npy", "y_u8.npy", 2, {2, 5}, 2, {1, 1, 0}},
        {"x_f32_ncdhw.npy", "y_i16_big.npy", 4, {1, 2, 2, 3}, 10, {4, 9}},
        {"x_u8_nhw_v2.npy", "y_i32_v2.npy", 2, {3, 4}, 6, {0, 5}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clnet_dataset *ds = NULL;
        ck_assert_msg(clnet_dataset_load_npy(&ds, npy(cases[c].x), npy(cases[c].y)) == CLNET_OK,
                      "%s", clnet_last_error());
        int dims[4], rank = clnet_dataset_dims(ds, dims), n = clnet_dataset_count(ds);
        ck_assert_int_eq(rank, cases[c].rank);
        size_t sample = 1;
        for (int i = 0; i < rank; i++) {
            ck_assert_int_eq(dims[i], cases[c].dims[i]);
            sample *= (size_t)dims[i];
        }
        ck_assert_int_eq(clnet_dataset_classes(ds), cases[c].classes);
        int32_t labels[4];
        float *x = loaded(ds, 0.25f, 2.0f, labels);
        for (int i = 0; i < n; i++) ck_assert_int_eq(labels[i], cases[c].labels[i]);
        /* the generator's values: uint8 k*7 % 256 (v2: k) divided by 255; float32 k/8 - 1
         * (NCL) or k/2 (NCDHW); then (v - 0.25) / 2 */
        for (size_t k = 0; k < (size_t)n * sample; k++) {
            double v = c == 0   ? (double)(k * 7 % 256) / 255
                       : c == 1 ? (double)k / 8 - 1
                       : c == 2 ? (double)k * 0.5
                                : (double)k / 255;
            ck_assert_msg(fabs(x[k] - (v - 0.25) / 2) < 1e-6, "%s[%zu]: %g, want %g", cases[c].x, k,
                          x[k], (v - 0.25) / 2);
        }
        free(x);
        clnet_dataset_free(ds);
    }
}
END_TEST

/* Float targets: the data set is unlabelled, says their shape, and every
 * batch of a shuffling loader holds each sample's own target (the fixture's
 * is 0.5 x + 0.25, element by element), over two epochs with a partial batch. */
START_TEST(npy_float_targets_follow_their_samples_through_the_loader) {
    clnet_dataset *ds = NULL;
    char x[512];
    snprintf(x, sizeof x, "%s", npy("x_f32_regress.npy"));
    ck_assert_msg(clnet_dataset_load_npy(&ds, x, npy("y_f32_regress.npy")) == CLNET_OK, "%s",
                  clnet_last_error());
    int dims[4];
    ck_assert_int_eq(clnet_dataset_targets(ds, dims), 64);
    ck_assert(dims[0] == 1 && dims[1] == 8 && dims[2] == 8 && dims[3] == 0);
    ck_assert_int_eq(clnet_dataset_labelled(ds), 0);
    ck_assert_int_eq(clnet_dataset_targets(NULL, NULL), 0);
    clnet_loader *l = make_loader(ds, 24, 7, 1, 0);
    int seen = 0;
    for (int b = 0; b < 6; b++) { /* 24, 24, 16 in each epoch */
        clnet_batch batch;
        ck_assert_int_eq(clnet_loader_next(l, &batch), CLNET_OK);
        ck_assert_ptr_nonnull(batch.targets);
        for (int i = 0; i < batch.n * 64; i++)
            ck_assert_msg(batch.targets[i] == 0.5f * batch.images[i] + 0.25f,
                          "batch %d value %d: target %g for x %g", b, i, batch.targets[i],
                          batch.images[i]);
        seen += batch.n;
    }
    ck_assert_int_eq(seen, 128);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
    /* labels give none */
    ck_assert_int_eq(clnet_dataset_load_npy(&ds, x, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_targets(ds, dims), 0);
    l = make_loader(ds, 8, 0, 0, 0);
    clnet_batch batch;
    ck_assert_int_eq(clnet_loader_next(l, &batch), CLNET_OK);
    ck_assert_ptr_null(batch.targets);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
}
END_TEST

/* The class that y_maps_u8.npy gives a value of x_f32_regress.npy. */
static float class_of(float x) {
    return (float)((x > -0.25f) + (x > 0.25f));
}

/* Every target of a data set's samples, in file order (a loader without shuffling). */
static float *all_targets(const clnet_dataset *ds) {
    int n = clnet_dataset_count(ds);
    size_t per = (size_t)clnet_dataset_targets(ds, NULL);
    clnet_loader *l = make_loader(ds, n, 0, 0, 0);
    clnet_batch b;
    ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
    ck_assert_int_eq(b.n, n);
    ck_assert_ptr_nonnull(b.targets);
    float *out = malloc((size_t)n * per * sizeof(float));
    memcpy(out, b.targets, (size_t)n * per * sizeof(float));
    clnet_loader_free(l);
    return out;
}

/* Class maps, an integer y of shape (N, spatial...) for softmax_cross_entropy
 * per=position: held as targets (one a position, their spatial shape), the
 * data set unlabelled with 1 + the largest class as its classes, and every
 * batch of a shuffling loader holds each sample's own classes (y_maps_u8's are
 * 0, 1 or 2 by where x lies), over two epochs with a partial batch. uint8 and
 * int32 alike, the largest class (2^24 - 1) exact; (N, 1) is a map of one
 * position. */
START_TEST(npy_class_maps_follow_their_samples_through_the_loader) {
    clnet_dataset *ds = NULL;
    char x[512];
    snprintf(x, sizeof x, "%s", npy("x_f32_regress.npy"));
    ck_assert_msg(clnet_dataset_load_npy(&ds, x, npy("y_maps_u8.npy")) == CLNET_OK, "%s",
                  clnet_last_error());
    int dims[4];
    ck_assert_int_eq(clnet_dataset_targets(ds, dims), 64);
    ck_assert(dims[0] == 8 && dims[1] == 8 && dims[2] == 0 && dims[3] == 0);
    ck_assert_int_eq(clnet_dataset_target_classes(ds), 1);
    ck_assert_int_eq(clnet_dataset_classes(ds), 3);
    ck_assert_int_eq(clnet_dataset_labelled(ds), 0);
    clnet_loader *l = make_loader(ds, 24, 7, 1, 0);
    int seen = 0, of_class[3] = {0};
    for (int b = 0; b < 6; b++) { /* 24, 24, 16 in each epoch */
        clnet_batch batch;
        ck_assert_int_eq(clnet_loader_next(l, &batch), CLNET_OK);
        ck_assert_ptr_nonnull(batch.targets);
        for (int i = 0; i < batch.n * 64; i++) { /* one channel: value i is position i's */
            ck_assert_msg(batch.targets[i] == class_of(batch.images[i]),
                          "batch %d position %d: class %g for x %g", b, i, batch.targets[i],
                          batch.images[i]);
            of_class[(int)batch.targets[i]]++;
        }
        seen += batch.n;
    }
    ck_assert_int_eq(seen, 128);
    ck_assert(of_class[0] > 0 && of_class[1] > 0 && of_class[2] > 0);
    clnet_loader_free(l);
    clnet_dataset_free(ds);
    /* int32, (3, 5) for samples (3, 2, 5): 10 i + p at sample i, position p, and 2^24 - 1 */
    ck_assert_msg(clnet_dataset_load_npy(&ds, npy("x_f32_ncl.npy"), npy("y_maps_i32.npy")) ==
                      CLNET_OK,
                  "%s", clnet_last_error());
    ck_assert_int_eq(clnet_dataset_targets(ds, dims), 5);
    ck_assert(dims[0] == 5 && dims[1] == 0);
    ck_assert_int_eq(clnet_dataset_target_classes(ds), 1);
    ck_assert_int_eq(clnet_dataset_classes(ds), 1 << 24);
    ck_assert_int_eq(clnet_dataset_labelled(ds), 0);
    float *t = all_targets(ds);
    for (int i = 0; i < 3; i++)
        for (int p = 0; p < 5; p++) {
            float want = i == 2 && p == 4 ? (float)((1 << 24) - 1) : (float)(10 * i + p);
            ck_assert_msg(t[i * 5 + p] == want, "sample %d position %d: %.9g, want %.9g", i, p,
                          t[i * 5 + p], want);
        }
    free(t);
    clnet_dataset_free(ds);
    /* int64 (4, 1): a class map of one position, all 0 */
    ck_assert_msg(clnet_dataset_load_npy(&ds, npy("x_u8_nchw.npy"), npy("y_2d.npy")) == CLNET_OK,
                  "%s", clnet_last_error());
    ck_assert_int_eq(clnet_dataset_targets(ds, dims), 1);
    ck_assert(dims[0] == 1 && dims[1] == 0);
    ck_assert_int_eq(clnet_dataset_target_classes(ds), 1);
    ck_assert_int_eq(clnet_dataset_classes(ds), 1);
    clnet_dataset_free(ds);
    /* float targets and labels are not class maps */
    ck_assert_int_eq(clnet_dataset_load_npy(&ds, x, npy("y_f32_regress.npy")), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_target_classes(ds), 0);
    clnet_dataset_free(ds);
    ck_assert_int_eq(clnet_dataset_load_npy(&ds, npy("x_u8_nchw.npy"), npy("y_i64.npy")), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_target_classes(ds), 0);
    ck_assert_int_eq(clnet_dataset_targets(ds, NULL), 0);
    clnet_dataset_free(ds);
    ck_assert_int_eq(clnet_dataset_target_classes(NULL), 0);
}
END_TEST

static void expect_npy_failure(const char *x, const char *y, clnet_status want, const char *path,
                               const char *words) {
    expect_pair_failure(clnet_dataset_load_npy, x, y, want, path, words);
}

/* Class maps with a class below 0, or of 2^24 and more (floats hold them
 * exactly below that), are refused naming the sample and the position; maps
 * for another count of samples name it. */
START_TEST(npy_class_maps_out_of_range_are_errors_naming_sample_and_position) {
    char x[512];
    snprintf(x, sizeof x, "%s", npy("x_u8_nchw.npy"));
    expect_npy_failure(x, npy("y_maps_negative.npy"), CLNET_ERR_FORMAT, "y_maps_negative.npy",
                       "sample 2, position 4: the class is -1:");
    expect_npy_failure(x, npy("y_maps_too_big.npy"), CLNET_ERR_FORMAT, "y_maps_too_big.npy",
                       "sample 1, position 5: the class is 16777216:");
    expect_npy_failure(npy("x_f32_ncl.npy"), npy("y_maps_negative.npy"), CLNET_ERR_FORMAT,
                       "y_maps_negative.npy", "classes per position want (3, ...)");
}
END_TEST

/* A copy of a fixture, cut to `keep` bytes or with byte `flip` changed (-1: none). */
static const char *altered(const char *fixture, const char *name, long keep, long flip) {
    FILE *f = fopen(npy(fixture), "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char bytes[4096];
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    if (keep >= 0 && (size_t)keep < n) n = (size_t)keep;
    if (flip >= 0) bytes[flip] ^= 0x5a;
    const char *path = in_dir(name);
    write_file(path, 0, bytes, n);
    return path;
}

START_TEST(npy_bad_files_are_errors_naming_the_file_and_the_fault) {
    char x[512], y[512]; /* npy() reuses its buffers */
    snprintf(x, sizeof x, "%s", npy("x_u8_nchw.npy"));
    snprintf(y, sizeof y, "%s", npy("y_i64.npy"));
    make_dir();
    expect_npy_failure(in_dir("missing.npy"), y, CLNET_ERR_IO, "missing.npy", "cannot open");
    expect_npy_failure(altered("x_u8_nchw.npy", "magic.npy", -1, 1), y, CLNET_ERR_FORMAT,
                       "magic.npy", "not a .npy file");
    expect_npy_failure(altered("x_u8_nchw.npy", "cut.npy", 150, -1), y, CLNET_ERR_FORMAT, "cut.npy",
                       "truncated");
    expect_npy_failure(altered("x_u8_nchw.npy", "cuthead.npy", 40, -1), y, CLNET_ERR_FORMAT,
                       "cuthead.npy", "truncated header");
    expect_npy_failure(altered("x_u8_nchw.npy", "version.npy", -1, 6), y, CLNET_ERR_FORMAT,
                       "version.npy", "version");
    expect_npy_failure(npy("x_fortran.npy"), y, CLNET_ERR_FORMAT, "x_fortran.npy", "Fortran order");
    expect_npy_failure(npy("x_f16.npy"), y, CLNET_ERR_FORMAT, "x_f16.npy",
                       "'<f2' is not supported");
    expect_npy_failure(npy("x_rank1.npy"), y, CLNET_ERR_FORMAT, "x_rank1.npy", "shape (4,)");
    expect_npy_failure(x, npy("y_f32.npy"), CLNET_ERR_FORMAT, "y_f32.npy",
                       "float targets want (4, ...)");
    expect_npy_failure(x, npy("y_f32_small.npy"), CLNET_ERR_FORMAT, "y_f32_small.npy",
                       "float targets want (4, ...)");
    expect_npy_failure(x, npy("y_negative.npy"), CLNET_ERR_FORMAT, "y_negative.npy",
                       "label 1 is -1");
    expect_npy_failure(x, npy("y_u8.npy"), CLNET_ERR_FORMAT, "y_u8.npy", "shape (3,): want (4,)");
    expect_npy_failure(npy("y_i64.npy"), y, CLNET_ERR_FORMAT, "y_i64.npy", "must be uint8");
    remove_dir();
}
END_TEST

/* ---- noise on the inputs, the clean samples as targets ------------------------- */

#define NOISE_EPOCHS 2

static clnet_loader *noisy_loader(const clnet_dataset *ds, int batch, uint64_t seed, int shuffle,
                                  float noise, uint64_t noise_seed) {
    clnet_loader_config cfg = {.batch = batch,
                               .seed = seed,
                               .shuffle = shuffle,
                               .mean = 0.0f,
                               .std = 1.0f,
                               .noise = noise,
                               .noise_seed = noise_seed};
    clnet_loader *l = NULL;
    ck_assert_msg(clnet_loader_create(&l, ds, &cfg) == CLNET_OK, "%s", clnet_last_error());
    return l;
}

/* The noisy images of epochs 0 to NOISE_EPOCHS - 1 by (epoch, sample), NaN where the
 * loader gave none: from (epoch, position) on, through a loader of this batch,
 * shuffling (with shuffle_seed) or not. Each batch's targets must be its samples,
 * clean (sample_of checks every value), which says which sample an image is. */
static float *noisy_epochs(const clnet_dataset *ds, int batch, int shuffle, uint64_t shuffle_seed,
                           uint64_t noise_seed, int epoch, int64_t position) {
    size_t per_epoch = (size_t)COUNT * PIXELS;
    float *out = malloc(NOISE_EPOCHS * per_epoch * sizeof(float));
    ck_assert_ptr_nonnull(out);
    for (size_t k = 0; k < NOISE_EPOCHS * per_epoch; k++) out[k] = NAN;
    clnet_loader *l = noisy_loader(ds, batch, shuffle_seed, shuffle, 0.3f, noise_seed);
    if (epoch || position) ck_assert_int_eq(clnet_loader_seek(l, epoch, position), CLNET_OK);
    for (;;) {
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
        if (b.epoch >= NOISE_EPOCHS) break;
        ck_assert_ptr_nonnull(b.targets);
        for (int i = 0; i < b.n; i++) {
            int id = sample_of(b.targets, b.labels, i);
            memcpy(out + b.epoch * per_epoch + (size_t)id * PIXELS, b.images + (size_t)i * PIXELS,
                   PIXELS * sizeof(float));
        }
    }
    clnet_loader_free(l);
    return out;
}

/* How many of the samples' values were seen in both and are bitwise equal, in
 * *equal, and seen in both, in *both. */
static void compare_noise(const float *a, const float *b, size_t n, size_t *equal, size_t *both) {
    *equal = 0, *both = 0;
    for (size_t k = 0; k < n; k++) {
        if (isnan(a[k]) || isnan(b[k])) continue;
        (*both)++;
        *equal += memcmp(&a[k], &b[k], sizeof(float)) == 0;
    }
}

/* The noise of a value is a function of (noise seed, epoch, sample, value)
 * alone: the same at batch sizes 1, 7, 10 and 103, in file order or
 * shuffled by any seed, and after a seek into the second epoch; another
 * epoch or another noise seed changes every value. The targets are the clean
 * samples throughout (noisy_epochs). */
START_TEST(noise_is_a_function_of_seed_epoch_sample_and_value) {
    clnet_dataset *ds = synthetic_set(0);
    ck_assert_int_eq(clnet_dataset_targets_from_samples(ds), CLNET_OK);
    size_t per_epoch = (size_t)COUNT * PIXELS, all = NOISE_EPOCHS * per_epoch, equal, both;
    float *ref = noisy_epochs(ds, 10, 1, 4, 9, 0, 0);
    struct {
        int batch, shuffle;
        uint64_t shuffle_seed;
        int epoch, position;
        const char *what;
    } same[] = {{1, 0, 0, 0, 0, "batch 1, file order"},
                {7, 1, 77, 0, 0, "batch 7, another shuffle"},
                {COUNT, 1, 4, 0, 0, "one batch an epoch"},
                {8, 1, 4, 1, 50, "after a seek to epoch 1 position 50"}};
    for (size_t c = 0; c < sizeof same / sizeof *same; c++) {
        float *x = noisy_epochs(ds, same[c].batch, same[c].shuffle, same[c].shuffle_seed, 9,
                                same[c].epoch, same[c].position);
        compare_noise(ref, x, all, &equal, &both);
        size_t want = same[c].epoch ? (size_t)(COUNT - same[c].position) * PIXELS : all;
        ck_assert_msg(both == want && equal == both, "%s: %zu of %zu values equal (want %zu)",
                      same[c].what, equal, both, want);
        free(x);
    }
    float *other = noisy_epochs(ds, 10, 1, 4, 10, 0, 0);
    compare_noise(ref, other, all, &equal, &both);
    ck_assert_msg(both == all && equal == 0, "another noise seed: %zu of %zu values equal", equal,
                  both);
    compare_noise(ref, ref + per_epoch, per_epoch, &equal, &both);
    ck_assert_msg(both == per_epoch && equal == 0, "epochs 0 and 1: %zu of %zu values equal", equal,
                  both);
    free(other);
    free(ref);
    clnet_dataset_free(ds);
}
END_TEST

/* z = (image - target) * std / noise over 40 epochs (82,400 values), for
 * noise 0.25 with mean 0.3 and std 2, is N(0, 1): its mean, standard
 * deviation, the share within 1 and 2 of 0, and the correlation of the two
 * values a Box-Muller pair makes and of neighbours of two pairs, each within
 * five of its standard errors (noise in the normalised units would give a
 * standard deviation of 2). */
START_TEST(noise_has_the_standard_deviation_asked_in_pixel_units) {
    clnet_dataset *ds = synthetic_set(0);
    ck_assert_int_eq(clnet_dataset_targets_from_samples(ds), CLNET_OK);
    const float noise = 0.25f, mean = 0.3f, std = 2.0f;
    clnet_loader_config cfg = {
        .batch = COUNT, .seed = 3, .shuffle = 1, .mean = mean, .std = std, .noise = noise};
    clnet_loader *l = NULL;
    ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
    double sum = 0, squares = 0, within1 = 0, within2 = 0, pair = 0, neighbours = 0, n = 0;
    for (int e = 0; e < 40; e++) {
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
        for (int i = 0; i < b.n; i++) {
            double z[PIXELS];
            for (int j = 0; j < PIXELS; j++) {
                size_t k = (size_t)i * PIXELS + j;
                z[j] = ((double)b.images[k] - b.targets[k]) * std / noise;
                sum += z[j], squares += z[j] * z[j], n++;
                within1 += fabs(z[j]) < 1, within2 += fabs(z[j]) < 2;
            }
            for (int j = 0; j + 1 < PIXELS; j++) {
                if (j % 2 == 0) pair += z[j] * z[j + 1];
                if (j % 2 == 1) neighbours += z[j] * z[j + 1];
            }
        }
    }
    double m = sum / n, s = sqrt(squares / n - m * m), pairs = n / 2, se = 1 / sqrt(n);
    printf("noise: %.0f values, mean %.4f, std %.4f, |z|<1 %.4f, |z|<2 %.4f, pair correlation "
           "%.4f, neighbours %.4f\n",
           n, m, s, within1 / n, within2 / n, pair / pairs, neighbours / (pairs - n / PIXELS));
    ck_assert_msg(fabs(m) < 5 * se, "mean %g", m);
    ck_assert_msg(fabs(s - 1) < 5 * se / sqrt(2), "standard deviation %g, want 1", s);
    ck_assert_msg(fabs(within1 / n - 0.682689) < 5 * sqrt(0.682689 * 0.317311 / n),
                  "share within 1: %g, want 0.6827", within1 / n);
    ck_assert_msg(fabs(within2 / n - 0.954500) < 5 * sqrt(0.9545 * 0.0455 / n),
                  "share within 2: %g, want 0.9545", within2 / n);
    ck_assert_msg(fabs(pair / pairs) < 5 / sqrt(pairs), "pair correlation %g", pair / pairs);
    ck_assert_msg(fabs(neighbours / (pairs - n / PIXELS)) < 5 / sqrt(pairs - n / PIXELS),
                  "neighbour correlation %g", neighbours / (pairs - n / PIXELS));
    clnet_loader_free(l);
    clnet_dataset_free(ds);
}
END_TEST

/* clnet_dataset_targets_from_samples: a sample's shape as the targets' (an IDX
 * set keeps its labels), each batch's targets its samples normalised as the
 * images are and bitwise those of a loader without noise, for bytes and for
 * float32 samples; noise 0 adds nothing. A data set with targets of its own,
 * NULL, and a noise below 0 or not a number are refused. */
START_TEST(samples_as_targets_are_the_clean_normalised_samples) {
    clnet_dataset *ds = synthetic_set(0);
    ck_assert_int_eq(clnet_dataset_targets(ds, NULL), 0);
    ck_assert_int_eq(clnet_dataset_targets_from_samples(ds), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_targets_from_samples(ds), CLNET_OK); /* twice is once */
    int dims[4];
    ck_assert_int_eq(clnet_dataset_targets(ds, dims), PIXELS);
    ck_assert(dims[0] == 1 && dims[1] == HEIGHT && dims[2] == WIDTH && dims[3] == 0);
    ck_assert_int_eq(clnet_dataset_labelled(ds), 1);
    ck_assert_int_eq(clnet_dataset_target_classes(ds), 0);
    for (int c = 0; c < 3; c++) {
        float noise = c == 0 ? 0.0f : 0.5f;
        clnet_loader_config cfg = {.batch = 16,
                                   .seed = 2,
                                   .shuffle = 1,
                                   .mean = 0.286f,
                                   .std = 0.353f,
                                   .noise = noise,
                                   .noise_seed = 5};
        clnet_loader_config clean = cfg;
        clean.noise = 0;
        clnet_loader *l = NULL, *plain = NULL;
        ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
        ck_assert_int_eq(clnet_loader_create(&plain, ds, &clean), CLNET_OK);
        for (int k = 0; k < 9; k++) { /* over an epoch's end */
            clnet_batch b, p;
            ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_OK);
            ck_assert_int_eq(clnet_loader_next(plain, &p), CLNET_OK);
            size_t values = (size_t)b.n * PIXELS;
            ck_assert_mem_eq(b.targets, p.images, values * sizeof(float));
            ck_assert_mem_eq(p.targets, p.images, values * sizeof(float));
            if (noise == 0) ck_assert_mem_eq(b.images, p.images, values * sizeof(float));
            for (size_t v = 0; noise > 0 && v < values; v++)
                ck_assert_msg(b.images[v] != b.targets[v], "value %zu has no noise", v);
        }
        clnet_loader_free(l);
        clnet_loader_free(plain);
        if (c < 2) continue;
        /* float32 samples (64, 1, 8, 8) without labels: (x - mean) / std */
        clnet_dataset_free(ds);
        ck_assert_int_eq(clnet_dataset_load_npy(&ds, npy("x_f32_regress.npy"), NULL), CLNET_OK);
        ck_assert_int_eq(clnet_dataset_targets_from_samples(ds), CLNET_OK);
        ck_assert_int_eq(clnet_dataset_targets(ds, dims), 64);
        ck_assert(dims[0] == 1 && dims[1] == 8 && dims[2] == 8 && dims[3] == 0);
        int32_t labels[64];
        float *x = loaded(ds, 0.0f, 1.0f, labels);
        clnet_loader *f = noisy_loader(ds, 64, 0, 0, 0.1f, 3);
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_next(f, &b), CLNET_OK);
        ck_assert_int_eq(b.n, 64);
        ck_assert_mem_eq(b.targets, x, 64 * 64 * sizeof(float));
        clnet_loader_free(f);
        free(x);
    }
    clnet_dataset_free(ds);
    ck_assert_int_eq(clnet_dataset_targets_from_samples(NULL), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(
        clnet_dataset_load_npy(&ds, npy("x_f32_regress.npy"), npy("y_f32_regress.npy")), CLNET_OK);
    ck_assert_int_eq(clnet_dataset_targets_from_samples(ds), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "float targets of its own"), "%s", clnet_last_error());
    float bad[] = {-0.1f, NAN, INFINITY};
    for (int i = 0; i < 3; i++) {
        clnet_loader_config cfg = {.batch = 4, .std = 1, .noise = bad[i]};
        clnet_loader *l = NULL;
        ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(l);
        ck_assert_msg(strstr(clnet_last_error(), "noise"), "%s", clnet_last_error());
    }
    clnet_dataset_free(ds);
}
END_TEST

int main(void) {
    Suite *s = suite_create("data");
    TCase *t = tcase_create("data");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, idx_gz_and_raw_read_back_exactly);
    tcase_add_test(t, npy_float_targets_follow_their_samples_through_the_loader);
    tcase_add_test(t, npy_class_maps_follow_their_samples_through_the_loader);
    tcase_add_test(t, npy_class_maps_out_of_range_are_errors_naming_sample_and_position);
    tcase_add_test(t, idx_missing_or_unreadable_files_are_io_errors_naming_them);
    tcase_add_test(t, idx_bad_magic_is_a_format_error_naming_the_file);
    tcase_add_test(t, idx_truncated_files_are_format_errors_naming_the_file);
    tcase_add_test(t, idx_corrupt_or_cut_gzip_streams_are_format_errors);
    tcase_add_test(t, idx_images_and_labels_that_disagree_in_count_name_both_files);
    tcase_add_test(t, idx_absurd_dimensions_are_format_errors);
    tcase_add_test(t, idx_trailing_bytes_are_ignored);
    tcase_add_test(t, dataset_load_reads_both_splits_gz_or_raw_from_a_folder_or_the_environment);
    tcase_add_test(t, dataset_load_first_reads_only_the_first_images);
    tcase_add_test(t, dataset_load_names_a_missing_folder_or_file);
    tcase_add_test(t, dataset_load_names_every_layout_in_a_folder_of_none);
    tcase_add_test(t, cifar10_folder_reads_back_every_pixel_label_and_name);
    tcase_add_test(t, cifar100_folder_reads_the_fine_labels_and_their_names);
    tcase_add_test(t, cifar_load_first_reads_the_first_records_across_batch_files);
    tcase_add_test(t, cifar_damaged_files_are_errors_naming_the_file);
    tcase_add_test(t, invalid_arguments_are_rejected_with_a_message);
    tcase_add_test(t, truncate_keeps_the_first_samples_and_the_classes);
    tcase_add_test(t, split_holds_out_a_seeded_subset_in_order);
    tcase_add_test(t, loader_covers_every_sample_once_per_epoch);
    tcase_add_test(t, shuffle_is_a_pure_function_of_seed_and_epoch);
    tcase_add_test(t, shuffle_draws_every_permutation_equally_often);
    tcase_add_test(t, seek_reproduces_the_batches_of_a_run_from_the_start);
    tcase_add_test(t, normalisation_applies_mean_and_std);
    tcase_add_test(t, prefetch_gives_the_same_batches_as_a_second_loader_over_many_epochs);
    tcase_add_test(t, a_prefetch_failure_reaches_the_caller_with_its_message);
    tcase_add_test(t, seek_and_free_while_prefetching_are_clean);
    tcase_add_test(t, npy_files_of_each_type_and_rank_read_back_exactly);
    tcase_add_test(t, npy_bad_files_are_errors_naming_the_file_and_the_fault);
    tcase_add_test(t, noise_is_a_function_of_seed_epoch_sample_and_value);
    tcase_add_test(t, noise_has_the_standard_deviation_asked_in_pixel_units);
    tcase_add_test(t, samples_as_targets_are_the_clean_normalised_samples);
    suite_add_tcase(s, t);
    /* Its own case (and CTest entry), so that a missing data set shows as a skip. */
    TCase *real = tcase_create("fashion_mnist");
    tcase_set_timeout(real, 60);
    tcase_add_test(real, real_fashion_mnist_loads);
    suite_add_tcase(s, real);
    return test_run_suite(s);
}
