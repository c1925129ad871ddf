/* The PNG and JPEG decoder (src/image.c; no OpenCL device needed): every fixture of
 * tests/fixtures/images/ decoded pixel for pixel as PIL decodes it (the .npy beside it, made by
 * make_image_fixtures.py), from a file and from memory, with the probe agreeing; several
 * threads decoding at once; and every kind of damage refused with the right status, a message
 * that names the file and what is wrong, and nothing left in `out`. */
#include "data.h"
#include "harness.h"
#include "image.h"
#include "transform.h"
#include "npy.h"
#include "random.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- helpers ------------------------------------------------------------------------- */

static const char *fixture(const char *name) {
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/images/%s", CLNET_FIXTURES_DIR, name);
    return p;
}

static void expect_empty(const clnet_image *img, const char *what) {
    ck_assert_msg(img->pixels == NULL && img->width == 0 && img->height == 0 && img->channels == 0,
                  "%s: out holds something after a failure", what);
}

/* Decoding the bytes must fail with `status`, a message naming `name` and holding `expect`,
 * and leave out empty. */
static void expect_refused(const char *name, const void *bytes, size_t n, clnet_status status,
                           const char *expect) {
    clnet_image img = {.width = 7, .pixels = (uint8_t *)&img}; /* must be reset */
    clnet_status s = clnet_image_decode_bytes(name, bytes, n, &img);
    const char *m = clnet_last_error();
    ck_assert_msg(s == status, "%s (%zu bytes): status %d, not %d (%s)", name, n, s, status, m);
    ck_assert_msg(strstr(m, name), "%s: the message does not name it: %s", name, m);
    ck_assert_msg(strstr(m, expect), "%s (%zu bytes): the message lacks '%s': %s", name, n, expect,
                  m);
    expect_empty(&img, name);
}

/* The same through a file (decode and probe), written in dir. */
static void expect_file_refused(const char *dir, const char *file, const void *bytes, size_t n,
                                const char *expect) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    test_write_file(path, bytes, n);
    clnet_image img = {.height = 3};
    ck_assert_int_eq(clnet_image_decode_file(path, &img), CLNET_ERR_FORMAT);
    const char *m = clnet_last_error();
    ck_assert_msg(strstr(m, path) && strstr(m, expect), "%s: %s", expect, m);
    expect_empty(&img, path);
    int w = -1, h = -1, c = -1;
    ck_assert_int_eq(clnet_image_probe_file(path, &w, &h, &c), CLNET_ERR_FORMAT);
    m = clnet_last_error();
    ck_assert_msg(strstr(m, path) && strstr(m, expect), "probe, %s: %s", expect, m);
    ck_assert_msg(w == 0 && h == 0 && c == 0, "probe: %d %d %d after a failure", w, h, c);
}

static void put_be32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (24 - 8 * i));
}

/* Appends a PNG chunk (length, type, data, CRC) at b + *at. */
static void put_chunk(unsigned char *b, size_t *at, const char *type, const void *data,
                      uint32_t n) {
    put_be32(b + *at, n);
    memcpy(b + *at + 4, type, 4);
    if (n) memcpy(b + *at + 8, data, n);
    put_be32(b + *at + 8 + n, (uint32_t)crc32(0, b + *at + 4, 4 + n));
    *at += 12 + n;
}

/* A whole PNG of w x h 8-bit pixels of colour type `type` (0 gray, 2 RGB), every byte `value`,
 * every row filter 0, deflated by zlib; *n its length (free it). */
static unsigned char *make_png(uint32_t w, uint32_t h, int type, int value, size_t *n) {
    size_t row = 1 + (size_t)w * (type == 2 ? 3 : 1), raw_n = row * h;
    unsigned char *raw = malloc(raw_n);
    memset(raw, value, raw_n);
    for (size_t y = 0; y < h; y++) raw[y * row] = 0;
    uLongf z_n = compressBound((uLong)raw_n);
    unsigned char *z = malloc(z_n);
    ck_assert_int_eq(compress(z, &z_n, raw, (uLong)raw_n), Z_OK);
    unsigned char *b = malloc(8 + 25 + 12 + z_n + 12);
    memcpy(b, "\x89PNG\r\n\x1a\n", 8);
    unsigned char ihdr[13] = {0, 0, 0, 0, 0, 0, 0, 0, 8, (unsigned char)type, 0, 0, 0};
    put_be32(ihdr, w);
    put_be32(ihdr + 4, h);
    size_t at = 8;
    put_chunk(b, &at, "IHDR", ihdr, 13);
    put_chunk(b, &at, "IDAT", z, (uint32_t)z_n);
    put_chunk(b, &at, "IEND", NULL, 0);
    free(raw);
    free(z);
    *n = at;
    return b;
}

/* The offset of a JPEG's frame header (SOF0 or SOF2: FF C0 / FF C2), the marker's FF. */
static size_t jpeg_frame(const unsigned char *b, size_t n) {
    for (size_t i = 2; i + 9 < n;) {
        ck_assert_uint_eq(b[i], 0xff);
        if (b[i + 1] == 0xc0 || b[i + 1] == 0xc2) return i;
        i += 2 + ((size_t)b[i + 2] << 8 | b[i + 3]);
    }
    ck_abort_msg("no frame header");
    return 0;
}

/* ---- every fixture as PIL decodes it ----------------------------------------------------- */

typedef struct {
    const char *file;
    int width, height, channels;
} fixture_case;

static const fixture_case FIXTURES[] = {
    {"png_gray_33x17.png", 33, 17, 1},
    {"png_gray_alpha_12x10.png", 12, 10, 1},
    {"png_rgb_7x5.png", 7, 5, 3},
    {"png_rgba_11x9.png", 11, 9, 3},
    {"png_palette_13x6.png", 13, 6, 3},
    {"png_gray1_10x3.png", 10, 3, 1},
    {"png_gray16_9x7.png", 9, 7, 1},
    {"png_rgb16_6x5.png", 6, 5, 3},
    {"png_interlaced_rgb_19x13.png", 19, 13, 3},
    {"jpg_gray_16x12.jpg", 16, 12, 1},
    {"jpg_gray_progressive_17x13.jpg", 17, 13, 1},
    {"jpg_rgb420_33x17.jpg", 33, 17, 3},
    {"jpg_rgb444_16x8.jpg", 16, 8, 3},
    {"jpg_rgb422_13x11.jpg", 13, 11, 3},
    {"jpg_rgb420_progressive_21x15.jpg", 21, 15, 3},
    {"jpg_rgb444_progressive_12x9.jpg", 12, 9, 3},
};
#define FIXTURE_COUNT (int)(sizeof FIXTURES / sizeof FIXTURES[0])

/* PIL's pixels of a fixture: its .npy, (h, w) or (h, w, 3) uint8 (free with clnet_npy_free). */
static void pil_pixels(const fixture_case *f, clnet_npy *a) {
    char npy[128];
    snprintf(npy, sizeof npy, "%.*s.npy", (int)(strrchr(f->file, '.') - f->file), f->file);
    ck_assert_msg(clnet_npy_read(fixture(npy), a) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_msg(a->kind == 'u' && a->size == 1, "%s: not uint8", npy);
    ck_assert_int_eq(a->rank, f->channels == 1 ? 2 : 3);
    ck_assert_int_eq(a->shape[0], f->height);
    ck_assert_int_eq(a->shape[1], f->width);
    if (f->channels == 3) ck_assert_int_eq(a->shape[2], 3);
}

START_TEST(every_fixture_decodes_as_pil_does) {
    for (int i = 0; i < FIXTURE_COUNT; i++) {
        const fixture_case *f = &FIXTURES[i];
        const char *path = fixture(f->file);
        clnet_npy ref = {0};
        pil_pixels(f, &ref);
        size_t n = 0;
        unsigned char *bytes = test_read_file(path, &n);
        for (int from_memory = 0; from_memory < 2; from_memory++) {
            clnet_image img = {0};
            clnet_status s = from_memory ? clnet_image_decode_bytes(f->file, bytes, n, &img)
                                         : clnet_image_decode_file(path, &img);
            ck_assert_msg(s == CLNET_OK, "%s: %s", f->file, clnet_last_error());
            ck_assert_int_eq(img.width, f->width);
            ck_assert_int_eq(img.height, f->height);
            ck_assert_int_eq(img.channels, f->channels);
            size_t count = ref.count, differ = 0;
            int largest = 0;
            const uint8_t *want = ref.data;
            for (size_t k = 0; k < count; k++) {
                int d = abs((int)img.pixels[k] - (int)want[k]);
                differ += d != 0;
                largest = d > largest ? d : largest;
            }
            if (!from_memory)
                printf("%-34s %2d x %2d x %d: %zu of %zu values differ from PIL's, largest by %d\n",
                       f->file, f->width, f->height, f->channels, differ, count, largest);
            /* PNG is lossless; JPEG is decoded by the same libjpeg-turbo (2.1.5) that PIL
             * links, with the same settings: both exact */
            ck_assert_msg(differ == 0, "%s: %zu values differ from PIL's (largest by %d)", f->file,
                          differ, largest);
            clnet_image_free(&img);
            expect_empty(&img, "clnet_image_free");
        }
        int w = 0, h = 0, c = 0;
        ck_assert_msg(clnet_image_probe_file(path, &w, &h, &c) == CLNET_OK, "%s: %s", f->file,
                      clnet_last_error());
        ck_assert_msg(w == f->width && h == f->height && c == f->channels,
                      "%s: the probe says %d x %d x %d", f->file, w, h, c);
        free(bytes);
        clnet_npy_free(&ref);
    }
}
END_TEST

/* Four threads decode every fixture again and again at once: no state is shared. */
static void *decode_all(void *arg) {
    long *bad = arg;
    for (int round = 0; round < 8; round++)
        for (int i = 0; i < FIXTURE_COUNT; i++) {
            char path[512]; /* fixture()'s rotating paths are for one thread */
            snprintf(path, sizeof path, "%s/images/%s", CLNET_FIXTURES_DIR, FIXTURES[i].file);
            clnet_image img = {0};
            if (clnet_image_decode_file(path, &img) != CLNET_OK || img.width != FIXTURES[i].width)
                (*bad)++;
            clnet_image_free(&img);
            /* and a failure in the middle of it all */
            if (clnet_image_decode_bytes("x", "\x89PNG\r\n\x1a\nrubbish", 15, &img) == CLNET_OK)
                (*bad)++;
        }
    return NULL;
}

START_TEST(threads_decode_at_once) {
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    long bad[THREADS] = {0};
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, decode_all, &bad[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(bad[i] == 0, "thread %d: %ld decodes went wrong", i, bad[i]);
    }
}
END_TEST

/* ---- what is refused ---------------------------------------------------------------------- */

START_TEST(cmyk_jpeg_is_refused) {
    char dir[64];
    test_make_dir(dir, sizeof dir);
    size_t n = 0;
    unsigned char *b = test_read_file(fixture("jpg_cmyk_8x8.jpg"), &n);
    expect_refused("cmyk.jpg", b, n, CLNET_ERR_FORMAT, "a JPEG in CMYK");
    expect_file_refused(dir, "cmyk.jpg", b, n, "a JPEG in CMYK");
    free(b);
}
END_TEST

/* Every cut of a file, from 1 byte to all but the last, is refused as truncated. */
static void every_cut_is_truncated(const char *file, const char *dir) {
    size_t n = 0;
    unsigned char *b = test_read_file(fixture(file), &n);
    for (size_t cut = 1; cut < n; cut++)
        expect_refused(file, b, cut, CLNET_ERR_FORMAT, "truncated");
    /* through a file too, at a few cuts: in the signature, the header, the data, the end */
    size_t cuts[] = {2, 20, n / 2, n - 1};
    for (int i = 0; i < 4; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/cut_%zu_%s", dir, cuts[i], file);
        test_write_file(path, b, cuts[i]);
        clnet_image img = {0};
        ck_assert_int_eq(clnet_image_decode_file(path, &img), CLNET_ERR_FORMAT);
        ck_assert_msg(strstr(clnet_last_error(), "truncated"), "%s", clnet_last_error());
        expect_empty(&img, path);
    }
    free(b);
}

START_TEST(truncated_pngs_are_refused_at_every_cut) {
    char dir[64];
    test_make_dir(dir, sizeof dir);
    every_cut_is_truncated("png_rgba_11x9.png", dir);
    every_cut_is_truncated("png_interlaced_rgb_19x13.png", dir);
    every_cut_is_truncated("png_palette_13x6.png", dir);
}
END_TEST

START_TEST(truncated_jpegs_are_refused_at_every_cut) {
    char dir[64];
    test_make_dir(dir, sizeof dir);
    every_cut_is_truncated("jpg_rgb420_33x17.jpg", dir);
    every_cut_is_truncated("jpg_rgb420_progressive_21x15.jpg", dir);
    every_cut_is_truncated("jpg_gray_16x12.jpg", dir);
}
END_TEST

/* A header claiming 65535 x 65535 (12 GiB of RGB) is refused at once: no allocation by clnet,
 * libpng not even called; the largest side allowed decodes, one more is refused. */
START_TEST(huge_png_headers_are_refused_before_allocating) {
    size_t n = 0;
    unsigned char *b = make_png(4, 4, 2, 9, &n);
    put_be32(b + 16, 65535);
    put_be32(b + 20, 65535);
    put_be32(b + 29, (uint32_t)crc32(0, b + 12, 17)); /* a valid IHDR */
    clnet_counters before, after;
    clnet_debug_counters(&before);
    double t0 = clnet_seconds();
    expect_refused("huge.png", b, n, CLNET_ERR_FORMAT,
                   "a PNG of 65535 x 65535 pixels: a side over 16384");
    double took = clnet_seconds() - t0;
    clnet_debug_counters(&after);
    ck_assert_msg(after.host_allocs == before.host_allocs, "%llu allocations",
                  (unsigned long long)(after.host_allocs - before.host_allocs));
    ck_assert_msg(took < 0.1, "refusing took %.3f s", took);
    put_be32(b + 16, 0xffffffffu); /* more than PNG's 2^31 - 1 */
    expect_refused("huge.png", b, n, CLNET_ERR_FORMAT, "4294967295 x 65535 pixels");
    free(b);

    b = make_png(CLNET_IMAGE_MAX_SIDE, 1, 0, 77, &n);
    clnet_image img = {0};
    ck_assert_msg(clnet_image_decode_bytes("wide.png", b, n, &img) == CLNET_OK, "%s",
                  clnet_last_error());
    ck_assert_int_eq(img.width, CLNET_IMAGE_MAX_SIDE);
    ck_assert_int_eq(img.pixels[CLNET_IMAGE_MAX_SIDE - 1], 77);
    clnet_image_free(&img);
    free(b);
    b = make_png(CLNET_IMAGE_MAX_SIDE + 1, 1, 0, 77, &n);
    expect_refused("wider.png", b, n, CLNET_ERR_FORMAT, "a side over 16384");
    free(b);
}
END_TEST

START_TEST(huge_jpeg_headers_are_refused_before_allocating) {
    size_t n = 0;
    unsigned char *b = test_read_file(fixture("jpg_rgb420_progressive_21x15.jpg"), &n);
    size_t sof = jpeg_frame(b, n); /* FF C2, length (2), precision, height (2), width (2) */
    b[sof + 5] = b[sof + 7] = 0xfd;
    b[sof + 6] = b[sof + 8] = 0xe8; /* 65000 x 65000 */
    clnet_counters before, after;
    clnet_debug_counters(&before);
    expect_refused("huge.jpg", b, n, CLNET_ERR_FORMAT,
                   "a JPEG of 65000 x 65000 pixels: a side over 16384");
    clnet_debug_counters(&after);
    ck_assert_uint_eq(after.host_allocs, before.host_allocs);
    b[sof + 5] = b[sof + 6] = 0; /* height 0: a DNL marker would give it; libjpeg refuses */
    expect_refused("zero.jpg", b, n, CLNET_ERR_FORMAT, "libjpeg says");
    free(b);
}
END_TEST

START_TEST(zero_sides_and_empty_files_are_refused) {
    char dir[64];
    test_make_dir(dir, sizeof dir);
    size_t n = 0;
    unsigned char *b = make_png(3, 2, 0, 1, &n);
    put_be32(b + 16, 0);
    put_be32(b + 20, 0);
    put_be32(b + 29, (uint32_t)crc32(0, b + 12, 17));
    expect_refused("zero.png", b, n, CLNET_ERR_FORMAT, "a PNG of 0 x 0 pixels: a side of 0");
    expect_file_refused(dir, "zero.png", b, n, "a side of 0");
    free(b);
    expect_refused("empty.png", "", 0, CLNET_ERR_FORMAT, "an empty file (0 bytes)");
    expect_refused("null.png", NULL, 0, CLNET_ERR_FORMAT, "an empty file");
    expect_file_refused(dir, "empty.png", "", 0, "an empty file (0 bytes)");
    expect_refused("short.png", "\x89PN", 3, CLNET_ERR_FORMAT, "truncated PNG: 3 bytes");
    expect_refused("short.jpg", "\xff\xd8", 2, CLNET_ERR_FORMAT, "truncated JPEG: 2 bytes");
}
END_TEST

START_TEST(other_files_are_refused_by_their_first_bytes) {
    char dir[64];
    test_make_dir(dir, sizeof dir);
    const char *html = "<html><body>not a picture</body></html>\n";
    expect_refused("page.png", html, strlen(html), CLNET_ERR_FORMAT,
                   "not a PNG or JPEG file: it begins with 3c 68 74 6d 6c 3e 3c 62 (\"<html><b\")");
    expect_file_refused(dir, "page.png", html, strlen(html), "not a PNG or JPEG");
    /* a PNG named .jpg and a JPEG named .png decode all the same */
    size_t n = 0;
    unsigned char *b = test_read_file(fixture("png_rgb_7x5.png"), &n);
    char path[256];
    snprintf(path, sizeof path, "%s/really_a_png.jpg", dir);
    test_write_file(path, b, n);
    clnet_image img = {0};
    ck_assert_msg(clnet_image_decode_file(path, &img) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(img.width, 7);
    clnet_image_free(&img);
    free(b);
    expect_refused("bin.png", "\x00\x01\xfe", 3, CLNET_ERR_FORMAT, "00 01 fe (\"...\")");
}
END_TEST

START_TEST(folders_and_missing_files_are_io_errors) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    clnet_image img = {.width = 1};
    int w = 1, h = 1, c = 1;
    ck_assert_int_eq(clnet_image_decode_file(dir, &img), CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), "not a regular file"), "%s", clnet_last_error());
    expect_empty(&img, dir);
    ck_assert_int_eq(clnet_image_probe_file(dir, &w, &h, &c), CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), "not a regular file"), "%s", clnet_last_error());
    snprintf(path, sizeof path, "%s/absent.png", dir);
    ck_assert_int_eq(clnet_image_decode_file(path, &img), CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), path), "%s", clnet_last_error());
    expect_empty(&img, path);
    ck_assert_int_eq(clnet_image_probe_file(path, &w, &h, &c), CLNET_ERR_IO);
    ck_assert_int_eq(clnet_image_decode_file(NULL, &img), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_image_decode_file(path, NULL), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_image_decode_bytes("x", NULL, 4, &img), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_image_probe_file(path, NULL, &h, &c), CLNET_ERR_INVALID_ARGUMENT);
    clnet_image_free(NULL);
}
END_TEST

/* 50 files of `size` bytes that begin with `magic` and go on with random bytes, each refused
 * as a format error whose message holds `expect`. */
static void refuse_garbage_after(const char *magic, size_t magic_len, size_t size, uint64_t seed,
                                 const char *name, const char *expect) {
    unsigned char b[512];
    ck_assert_uint_le(size, sizeof b);
    memcpy(b, magic, magic_len);
    clnet_xoshiro r = clnet_xoshiro_from(seed);
    for (int k = 0; k < 50; k++) {
        for (size_t i = magic_len; i < size; i++)
            b[i] = (unsigned char)(clnet_xoshiro_next(&r) >> 56);
        expect_refused(name, b, size, CLNET_ERR_FORMAT, expect);
    }
}

/* A PNG signature followed by garbage, a valid header followed by garbage, a damaged data chunk:
 * each a libpng error, passed on with libpng's words. */
START_TEST(pngs_that_go_bad_after_their_signature_are_refused) {
    refuse_garbage_after("\x89PNG\r\n\x1a\n", 8, 200, 0x9e3779b97f4a7c15ull, "garbage.png", "PNG");
    size_t n = 0;
    unsigned char *p = make_png(5, 4, 2, 200, &n);
    memset(p + 33, 0xa5, n - 33); /* after IHDR */
    expect_refused("rest.png", p, n, CLNET_ERR_FORMAT, "a damaged PNG: libpng says:");
    free(p);
    p = make_png(5, 4, 2, 200, &n);
    size_t idat = (size_t)p[33] << 24 | (size_t)p[34] << 16 | (size_t)p[35] << 8 | p[36];
    p[33 + 8 + idat] ^= 0x10; /* IDAT's CRC (a byte of its data: zlib would fail first) */
    expect_refused("crc.png", p, n, CLNET_ERR_FORMAT, "CRC error");
    free(p);
}
END_TEST

START_TEST(jpegs_that_go_bad_are_refused) {
    refuse_garbage_after("\xff\xd8\xff", 3, 300, 0x2545f4914f6cdd1dull, "garbage.jpg", "JPEG");
    /* a scan's data stopped short by the end marker: libjpeg would fill the rest with gray */
    size_t n = 0;
    unsigned char *j = test_read_file(fixture("jpg_rgb420_33x17.jpg"), &n);
    size_t sos = 0;
    for (size_t i = 2; i + 1 < n; i++)
        if (j[i] == 0xff && j[i + 1] == 0xda) sos = i;
    ck_assert_uint_gt(sos, 0);
    size_t start = sos + 2 + ((size_t)j[sos + 2] << 8 | j[sos + 3]);
    unsigned char *cut = malloc(start + 2);
    memcpy(cut, j, start);
    cut[start] = 0xff, cut[start + 1] = 0xd9;
    expect_refused("short_scan.jpg", cut, start + 2, CLNET_ERR_FORMAT, "truncated JPEG");
    free(cut);
    free(j);
}
END_TEST

/* Warnings are not printed: a JPEG with bytes before its end marker (libjpeg warns of
 * "extraneous bytes", PIL accepts it) decodes to the same pixels, and stderr stays empty. */
START_TEST(warnings_are_not_printed) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    size_t n = 0;
    unsigned char *b = test_read_file(fixture("jpg_rgb444_16x8.jpg"), &n);
    unsigned char *extra = malloc(n + 3);
    memcpy(extra, b, n - 2);
    memcpy(extra + n - 2, "\x00\x01\x02\xff\xd9", 5);
    /* and a PNG whose ancillary tEXt chunk has a wrong CRC (libpng warns and skips it) */
    size_t pn = 0;
    unsigned char *png = make_png(3, 3, 0, 50, &pn);
    unsigned char *text = malloc(pn + 32);
    memcpy(text, png, 33);
    size_t at = 33;
    put_chunk(text, &at, "tEXt", "Comment\0hello", 13);
    text[at - 1] ^= 1;
    memcpy(text + at, png + 33, pn - 33);
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *capture = fopen(path, "w");
    ck_assert_ptr_nonnull(capture);
    dup2(fileno(capture), 2);
    clnet_image a = {0}, want = {0}, p = {0};
    clnet_status sa = clnet_image_decode_bytes("extra.jpg", extra, n + 3, &a);
    clnet_status sw = clnet_image_decode_bytes("plain.jpg", b, n, &want);
    clnet_status sp = clnet_image_decode_bytes("text.png", text, at + pn - 33, &p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(capture);
    ck_assert_int_eq(sa, CLNET_OK);
    ck_assert_int_eq(sw, CLNET_OK);
    ck_assert_msg(sp == CLNET_OK, "%s", clnet_last_error());
    ck_assert_mem_eq(a.pixels, want.pixels, 16 * 8 * 3);
    ck_assert_int_eq(p.pixels[8], 50);
    size_t printed = 0;
    free(test_read_file(path, &printed));
    ck_assert_msg(printed == 0, "%zu bytes printed to stderr", printed);
    clnet_image_free(&a);
    clnet_image_free(&want);
    clnet_image_free(&p);
    free(b);
    free(extra);
    free(png);
    free(text);
}
END_TEST

/* ---- image folders (data_folder.c) and the loader's decoding threads ------------------- */

/* Pixel (y, x, c) of generated picture `k` of seed `seed`. */
static uint8_t picture_byte(uint64_t seed, int k, int y, int x, int c) {
    return (uint8_t)(clnet_mix64(seed ^ ((uint64_t)k << 40 | (uint64_t)y << 24 | (uint64_t)x << 8 |
                                         (uint64_t)c)) >>
                     56);
}

/* Writes picture k (h x w, channels) as path (PNG or JPEG by its name); returns its pixels. */
static clnet_image write_picture(const char *path, uint64_t seed, int k, int h, int w,
                                 int channels) {
    clnet_image img = {.width = w, .height = h, .channels = channels};
    img.pixels = malloc((size_t)w * h * channels);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < channels; c++)
                img.pixels[((size_t)y * w + x) * channels + c] = picture_byte(seed, k, y, x, c);
    ck_assert_msg(clnet_image_write_file(path, &img, 92) == CLNET_OK, "%s", clnet_last_error());
    return img;
}

static void make_sub(char *out, size_t cap, const char *a, const char *b) {
    snprintf(out, cap, "%s/%s", a, b);
    ck_assert_msg(mkdir(out, 0777) == 0, "mkdir %s", out);
}

/* The first batch (file order, no shuffle) of a loader over ds with `threads` and t. */
static float *first_batch(const clnet_dataset *ds, int batch, int threads,
                          const clnet_transforms *t, int32_t *labels) {
    clnet_loader_config cfg = {.batch = batch, .std = 1, .threads = threads, .seed = 3};
    if (t) cfg.transforms = *t;
    clnet_loader *l = NULL;
    ck_assert_msg(clnet_loader_create(&l, ds, &cfg) == CLNET_OK, "%s", clnet_last_error());
    clnet_batch b;
    ck_assert_msg(clnet_loader_next(l, &b) == CLNET_OK, "%s", clnet_last_error());
    size_t values = clnet_loader_sample_values(l) * (size_t)b.n;
    float *x = malloc(values * sizeof *x);
    memcpy(x, b.images, values * sizeof *x);
    if (labels) memcpy(labels, b.labels, (size_t)b.n * sizeof *labels);
    clnet_loader_free(l);
    return x;
}

START_TEST(image_folders_read_back_in_torchvision_order) {
    uint64_t seed = test_seed_from_env("CLNET_TEST_FOLDER_SEED", 11);
    printf("image folder seed %llu (CLNET_TEST_FOLDER_SEED replays it)\n",
           (unsigned long long)seed);
    char root[64], split[128], cls[2][160], path[256];
    test_make_dir(root, sizeof root);
    make_sub(split, sizeof split, root, "train");
    /* made in the opposite order of their names: the names decide the classes */
    make_sub(cls[1], sizeof cls[1], split, "zebra");
    make_sub(cls[0], sizeof cls[0], split, "Ant"); /* 'A' sorts before 'z' in bytes */
    /* class Ant: b.png (RGB), a.PNG (gray: its value in every channel), c.jpg (RGB JPEG);
     * class zebra: 10.png, 9.png ("10" sorts first); and what is passed by */
    const char *files[5] = {"a.PNG", "b.png", "c.jpg", "10.png", "9.png"};
    int label[5] = {0, 0, 0, 1, 1}, gray[5] = {1, 0, 0, 0, 0};
    clnet_image want[5];
    for (int k = 4; k >= 0; k--) {
        snprintf(path, sizeof path, "%s/%s", cls[label[k]], files[k]);
        want[k] = write_picture(path, seed, k, 5, 7, gray[k] ? 1 : 3);
    }
    snprintf(path, sizeof path, "%s/notes.txt", cls[0]);
    test_write_file(path, "not an image", 12);
    snprintf(path, sizeof path, "%s/.hidden.png", cls[1]);
    test_write_file(path, "hidden", 6);
    clnet_dataset *ds = NULL;
    ck_assert_msg(clnet_dataset_load(&ds, root, "train") == CLNET_OK, "%s", clnet_last_error());
    int c = 0, h = 0, w = 0;
    clnet_dataset_shape(ds, &c, &h, &w);
    ck_assert_int_eq(clnet_dataset_count(ds), 5);
    ck_assert_msg(c == 3 && h == 5 && w == 7, "shape %d x %d x %d", c, h, w);
    ck_assert_int_eq(clnet_dataset_classes(ds), 2);
    ck_assert_str_eq(clnet_dataset_class_name(ds, 0), "Ant");
    ck_assert_str_eq(clnet_dataset_class_name(ds, 1), "zebra");
    for (int k = 0; k < 5; k++) {
        snprintf(path, sizeof path, "%s/%s", cls[label[k]], files[k]);
        ck_assert_str_eq(clnet_dataset_file(ds, k), path);
    }
    int32_t labels[5];
    for (int threads = 1; threads <= 3; threads++) {
        float *x = first_batch(ds, 5, threads, NULL, labels);
        for (int k = 0; k < 5; k++) {
            ck_assert_int_eq(labels[k], label[k]);
            clnet_image got = want[k];
            if (k == 2) { /* JPEG: lossy, so against the decoder's own pixels */
                snprintf(path, sizeof path, "%s/%s", cls[0], files[2]);
                ck_assert_int_eq(clnet_image_decode_file(path, &got), CLNET_OK);
            }
            for (int ch = 0; ch < 3; ch++)
                for (int j = 0; j < 35; j++) {
                    int from = got.channels == 1 ? 0 : ch;
                    float v = (float)got.pixels[j * got.channels + from] / 255.0f;
                    ck_assert_msg(x[((size_t)k * 3 + ch) * 35 + j] == v,
                                  "threads %d sample %d channel %d value %d: %g, want %g", threads,
                                  k, ch, j, (double)x[((size_t)k * 3 + ch) * 35 + j], (double)v);
                }
            if (k == 2) clnet_image_free(&got);
        }
        free(x);
    }
    /* exported and read back: the same samples, the class names kept as folders */
    char again[160];
    snprintf(again, sizeof again, "%s/again", root);
    ck_assert_msg(clnet_dataset_export(ds, again, "png", 0, NULL) == CLNET_OK, "%s",
                  clnet_last_error());
    snprintf(path, sizeof path, "%s/zebra/3.png", again);
    ck_assert_msg(access(path, R_OK) == 0, "%s is missing", path);
    clnet_dataset *back = NULL;
    ck_assert_msg(clnet_dataset_load_folder(&back, again, &(clnet_dataset_options){0}) == CLNET_OK,
                  "%s", clnet_last_error());
    float *x0 = first_batch(ds, 5, 1, NULL, NULL), *x1 = first_batch(back, 5, 2, NULL, labels);
    ck_assert_int_eq(memcmp(x0, x1, 5 * 3 * 35 * sizeof *x0), 0);
    for (int k = 0; k < 5; k++) ck_assert_int_eq(labels[k], label[k]);
    free(x0), free(x1);
    clnet_dataset_free(back);
    /* every image gray: one channel */
    char gray_root[160];
    snprintf(gray_root, sizeof gray_root, "%s/gray", root);
    mkdir(gray_root, 0777);
    make_sub(path, sizeof path, gray_root, "one");
    char file[300];
    snprintf(file, sizeof file, "%s/x.png", path);
    clnet_image g = write_picture(file, seed, 9, 4, 4, 1);
    ck_assert_int_eq(clnet_dataset_load_folder(&back, gray_root, &(clnet_dataset_options){0}),
                     CLNET_OK);
    clnet_dataset_shape(back, &c, &h, &w);
    ck_assert_msg(c == 1 && h == 4 && w == 4, "gray folder: %d x %d x %d", c, h, w);
    clnet_dataset_free(back);
    clnet_image_free(&g);
    for (int k = 0; k < 5; k++) clnet_image_free(&want[k]);
    clnet_dataset_free(ds);
}
END_TEST

START_TEST(image_folders_of_many_sizes_need_a_resize_and_match_at_any_thread_count) {
    uint64_t seed = test_seed_from_env("CLNET_TEST_FOLDER_SEED", 5);
    printf("image folder seed %llu (CLNET_TEST_FOLDER_SEED replays it)\n",
           (unsigned long long)seed);
    clnet_xoshiro r = clnet_xoshiro_from(seed);
    char root[64], cls[160], path[256];
    test_make_dir(root, sizeof root);
    int n = 13;
    clnet_image want[13];
    int classes = 3;
    for (int k = 0; k < classes; k++) {
        char name[8];
        snprintf(name, sizeof name, "c%d", k);
        make_sub(cls, sizeof cls, root, name);
    }
    for (int k = 0; k < n; k++) {
        int h = 3 + (int)clnet_uniform_below(&r, 20), w = 3 + (int)clnet_uniform_below(&r, 20);
        snprintf(path, sizeof path, "%s/c%d/%02d.png", root, k * classes / n, k);
        want[k] = write_picture(path, seed, k, h, w, 3);
    }
    clnet_dataset *ds = NULL;
    ck_assert_msg(clnet_dataset_load_folder(&ds, root, &(clnet_dataset_options){0}) == CLNET_OK,
                  "%s", clnet_last_error());
    clnet_loader_config cfg = {.batch = 4, .std = 1};
    clnet_loader *l = NULL;
    ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "not all one size") &&
                      strstr(clnet_last_error(), "--resize"),
                  "%s", clnet_last_error());
    clnet_transforms t = {.resize_height = 9, .resize_width = 8};
    float *x = first_batch(ds, n, 1, &t, NULL), ref[3 * 72], unit[3 * 23 * 23];
    for (int k = 0; k < n; k++) { /* each against the resize of its own pixels */
        int h = want[k].height, w = want[k].width;
        for (int c = 0; c < 3; c++) {
            for (int j = 0; j < h * w; j++) unit[j] = (float)want[k].pixels[j * 3 + c] / 255.0f;
            clnet_resize_bilinear(unit, w, 0, 0, h, w, ref + c * 72, 9, 8);
        }
        ck_assert_msg(memcmp(x + (size_t)k * 3 * 72, ref, sizeof ref) == 0,
                      "sample %d (%dx%d) differs from its resize", k, h, w);
    }
    free(x);
    /* the random transforms too: bitwise the same at 1, 2, 3 and 7 threads, epoch after epoch */
    clnet_transforms aug = {.resize_height = 12,
                            .resize_width = 10,
                            .crop_height = 8,
                            .crop_width = 8,
                            .pad = 2,
                            .flip = 1,
                            .seed = seed};
    float *one[3] = {0};
    int threads[] = {1, 2, 3, 7};
    for (int ti = 0; ti < 4; ti++) {
        clnet_loader_config c = {
            .batch = 5, .std = 1, .shuffle = 1, .seed = seed, .threads = threads[ti]};
        c.transforms = aug;
        ck_assert_int_eq(clnet_loader_create(&l, ds, &c), CLNET_OK);
        for (int b = 0; b < 3; b++) { /* batches of epoch 0 and the first of epoch 1 */
            clnet_batch batch;
            ck_assert_int_eq(clnet_loader_next(l, &batch), CLNET_OK);
            size_t bytes = (size_t)batch.n * 3 * 64 * sizeof(float);
            if (ti == 0) {
                one[b] = malloc(bytes);
                memcpy(one[b], batch.images, bytes);
            } else {
                ck_assert_msg(memcmp(one[b], batch.images, bytes) == 0,
                              "batch %d differs at %d threads", b, threads[ti]);
            }
        }
        clnet_loader_free(l);
    }
    for (int b = 0; b < 3; b++) free(one[b]);
    for (int k = 0; k < n; k++) clnet_image_free(&want[k]);
    clnet_dataset_free(ds);
}
END_TEST

/* A folder of root/a/ (good.png and `bad` holding `bytes`) and root/b/ok.png. */
static void bad_folder(char *root, size_t cap, const char *bad, const void *bytes, size_t n) {
    char dir[160], path[256];
    test_make_dir(root, cap);
    make_sub(dir, sizeof dir, root, "a");
    snprintf(path, sizeof path, "%s/good.png", dir);
    clnet_image img = write_picture(path, 1, 0, 6, 6, 3);
    clnet_image_free(&img);
    snprintf(path, sizeof path, "%s/%s", dir, bad);
    test_write_file(path, bytes, n);
    make_sub(dir, sizeof dir, root, "b");
    snprintf(path, sizeof path, "%s/ok.png", dir);
    img = write_picture(path, 1, 1, 6, 6, 3);
    clnet_image_free(&img);
}

/* The folder with the bad file: refused by the load (at_load) or by the batch that decodes
 * it, naming it and saying `why`; with skip_bad_images, left out with one line. */
static void expect_bad_image(const char *bad, const void *bytes, size_t n, int at_load,
                             const char *why) {
    char root[64], path[256];
    bad_folder(root, sizeof root, bad, bytes, n);
    snprintf(path, sizeof path, "%s/a/%s", root, bad);
    clnet_dataset *ds = NULL;
    clnet_status s = clnet_dataset_load_folder(&ds, root, &(clnet_dataset_options){0});
    if (at_load) {
        ck_assert_msg(s == CLNET_ERR_FORMAT, "%s: loaded", bad);
    } else {
        ck_assert_msg(s == CLNET_OK, "%s: %s", bad, clnet_last_error());
        clnet_loader_config cfg = {.batch = 3, .std = 1, .threads = 2};
        clnet_loader *l = NULL;
        clnet_batch b;
        ck_assert_int_eq(clnet_loader_create(&l, ds, &cfg), CLNET_OK);
        ck_assert_int_eq(clnet_loader_next(l, &b), CLNET_ERR_FORMAT);
        clnet_loader_free(l);
        clnet_dataset_free(ds);
    }
    ck_assert_msg(strstr(clnet_last_error(), path) && strstr(clnet_last_error(), why),
                  "%s: want '%s' naming %s: %s", bad, why, path, clnet_last_error());
    clnet_dataset_options skip = {.skip_bad_images = 1, .threads = 3};
    ck_assert_msg(clnet_dataset_load_folder(&ds, root, &skip) == CLNET_OK, "%s: %s", bad,
                  clnet_last_error());
    ck_assert_int_eq(clnet_dataset_count(ds), 2);
    ck_assert_int_eq(clnet_dataset_skipped(ds), 1);
    const char *line = clnet_dataset_skipped_reason(ds, 0);
    ck_assert_msg(strstr(line, path) && strstr(line, why), "%s: skipped as %s", bad, line);
    ck_assert_ptr_null(clnet_dataset_skipped_reason(ds, 1));
    clnet_dataset_free(ds);
}

START_TEST(bad_images_in_a_folder_are_named_or_skipped) {
    size_t n = 0;
    unsigned char *png = make_png(6, 6, 2, 40, &n);
    expect_bad_image("cut.png", png, n - 20, 0, "truncated"); /* the header is whole */
    unsigned char *huge = malloc(n);
    memcpy(huge, png, n);
    put_be32(huge + 16, 65535);
    put_be32(huge + 20, 65535);
    put_be32(huge + 29, (uint32_t)crc32(0, huge + 12, 17));
    expect_bad_image("bomb.png", huge, n, 1, "a side over 16384");
    expect_bad_image("empty.png", "", 0, 1, "empty");
    expect_bad_image("text.png", "hello, this is text\n", 20, 1, "not a PNG or JPEG file");
    expect_bad_image("picture.bmp", "BM", 2, 1, "not a format clnet decodes");
    size_t jn = 0;
    char tmp[64], jpg_path[128];
    test_make_dir(tmp, sizeof tmp);
    snprintf(jpg_path, sizeof jpg_path, "%s/whole.jpg", tmp);
    clnet_image whole = write_picture(jpg_path, 2, 0, 6, 6, 3);
    clnet_image_free(&whole);
    unsigned char *jpg = test_read_file(jpg_path, &jn);
    expect_bad_image("cut.jpg", jpg, jn - 8, 0, "truncated"); /* in its scan */
    free(jpg), free(huge), free(png);
    /* a class folder without an image, a root without class folders */
    char root[64], dir[160];
    test_make_dir(root, sizeof root);
    clnet_dataset *ds = NULL;
    ck_assert_int_eq(clnet_dataset_load_folder(&ds, root, &(clnet_dataset_options){0}),
                     CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "no class folders"), "%s", clnet_last_error());
    make_sub(dir, sizeof dir, root, "lonely");
    ck_assert_int_eq(clnet_dataset_load_folder(&ds, root, &(clnet_dataset_options){0}),
                     CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "class 'lonely' holds no .png"), "%s",
                  clnet_last_error());
    ck_assert_ptr_null(ds);
}
END_TEST

int main(void) {
    Suite *s = suite_create("image");
    TCase *t = tcase_create("image");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, every_fixture_decodes_as_pil_does);
    tcase_add_test(t, threads_decode_at_once);
    tcase_add_test(t, cmyk_jpeg_is_refused);
    tcase_add_test(t, truncated_pngs_are_refused_at_every_cut);
    tcase_add_test(t, truncated_jpegs_are_refused_at_every_cut);
    tcase_add_test(t, huge_png_headers_are_refused_before_allocating);
    tcase_add_test(t, huge_jpeg_headers_are_refused_before_allocating);
    tcase_add_test(t, zero_sides_and_empty_files_are_refused);
    tcase_add_test(t, other_files_are_refused_by_their_first_bytes);
    tcase_add_test(t, folders_and_missing_files_are_io_errors);
    tcase_add_test(t, pngs_that_go_bad_after_their_signature_are_refused);
    tcase_add_test(t, jpegs_that_go_bad_are_refused);
    tcase_add_test(t, warnings_are_not_printed);
    tcase_add_test(t, image_folders_read_back_in_torchvision_order);
    tcase_add_test(t, image_folders_of_many_sizes_need_a_resize_and_match_at_any_thread_count);
    tcase_add_test(t, bad_images_in_a_folder_are_named_or_skipped);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
