/* The PNG and JPEG decoder (src/image.c; no OpenCL device needed): every fixture of
 * tests/fixtures/images/ decoded pixel for pixel as PIL decodes it (the .npy beside it, made by
 * make_image_fixtures.py), from a file and from memory, with the probe agreeing; several
 * threads decoding at once; and every kind of damage refused with the right status, a message
 * that names the file and what is wrong, and nothing left in `out`. */
#include "harness.h"
#include "image.h"
#include "npy.h"
#include "random.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
