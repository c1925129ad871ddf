/* The SVG writers (no OpenCL device needed). Training curves: the picture is well-formed, holds
 * the title, labels, legend and one path per series, picks 1-2-5 ticks, copes with a single
 * point and with NaN values, escapes text, and a failed write leaves no temporary file. Pictures
 * of samples: well-formed, with an image (or a path) per tile and a caption per sample, whose
 * embedded PNGs decode (zlib) to the values given on the scale documented, and bad arguments
 * are refused. */
#include "harness.h"
#include "plot.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- helpers ------------------------------------------------------------------ */

/* Every test works in its own folder under one temporary folder that main removes. */
static int entries_in(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    return b;
}

static int count(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* A small XML checker, enough for what the writer emits: starts with <svg and ends with
 * </svg>, every tag is closed in order or self-closed, attribute values are quoted, and every
 * '&' starts one of the five predefined entities. Returns NULL or what is wrong. */
static const char *xml_problem(const char *s) {
    static char why[200];
    char stack[64][32];
    int depth = 0, roots = 0;
    if (strncmp(s, "<svg", 4) != 0) return "does not start with <svg";
    size_t len = strlen(s);
    while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' ')) len--;
    if (len < 6 || strncmp(s + len - 6, "</svg>", 6) != 0) return "does not end with </svg>";
    for (const char *p = s; *p;) {
        if (*p == '&') {
            static const char *const ok[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            int good = 0;
            for (int i = 0; i < 5; i++) good |= strncmp(p, ok[i], strlen(ok[i])) == 0;
            if (!good) return "a bare &";
            p++;
            continue;
        }
        if (*p == '>') return "a bare > outside a tag";
        if (*p != '<') {
            if (depth == 0 && *p != '\n' && *p != ' ') return "text outside the root";
            p++;
            continue;
        }
        int closing = p[1] == '/';
        const char *name = p + 1 + closing;
        size_t n = strcspn(name, " \t\n/>");
        if (n == 0 || n >= sizeof stack[0]) return "a bad tag name";
        const char *q = name + n;
        char quote = 0;
        while (*q && (quote || *q != '>')) {
            if (quote && *q == '<') return "< inside an attribute value";
            if (*q == '"' || *q == '\'') quote = quote == *q ? 0 : quote ? quote : *q;
            q++;
        }
        if (!*q) return "an unterminated tag";
        int self_closing = q[-1] == '/';
        if (closing) {
            if (depth == 0 || strlen(stack[depth - 1]) != n ||
                strncmp(stack[depth - 1], name, n) != 0) {
                snprintf(why, sizeof why, "</%.*s> does not close the open tag", (int)n, name);
                return why;
            }
            depth--;
        } else if (!self_closing) {
            if (depth == 0 && roots++) return "more than one root";
            if (depth == 64) return "too deep";
            memcpy(stack[depth], name, n);
            stack[depth++][n] = '\0';
        }
        p = q + 1;
    }
    return depth == 0 ? NULL : "a tag is left open";
}

/* Every attribute value that starts like a number (coordinates, path data) holds only digits,
 * signs, points, spaces and path commands: no "nan" or "inf" slipped into the picture. */
static const char *bad_number(const char *s) {
    static char value[64];
    for (const char *p = strstr(s, "=\""); p; p = strstr(p + 1, "=\"")) {
        const char *v = p + 2;
        size_t n = strcspn(v, "\"");
        int numeric = (*v >= '0' && *v <= '9') || *v == '-' || *v == 'M';
        if (numeric && strspn(v, "0123456789.- ML") < n) {
            snprintf(value, sizeof value, "%.*s", (int)(n < 60 ? n : 60), v);
            return value;
        }
    }
    return NULL;
}

#define ASSERT_NUMBERS_FINITE(text)                                                                \
    do {                                                                                           \
        const char *bad_ = bad_number(text);                                                       \
        ck_assert_msg(bad_ == NULL, "not a number: \"%s\"", bad_);                                 \
    } while (0)

#define ASSERT_WELL_FORMED(text)                                                                   \
    do {                                                                                           \
        const char *problem_ = xml_problem(text);                                                  \
        ck_assert_msg(problem_ == NULL, "not well-formed: %s", problem_);                          \
    } while (0)

/* Made-up curves of a 10-epoch training run. */
static const double EPOCHS[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const double TRAIN_LOSS[10] = {2.21, 0.95, 0.62, 0.51, 0.45, 0.41, 0.38, 0.36, 0.34, 0.32};
static const double TEST_LOSS[10] = {1.40, 0.80, 0.60, 0.54, 0.49, 0.46, 0.44, 0.43, 0.42, 0.42};
static const double TRAIN_ACC[10] = {0.19, 0.63, 0.76, 0.81, 0.83, 0.85, 0.86, 0.87, 0.875, 0.88};
static const double TEST_ACC[10] = {0.45, 0.70, 0.77, 0.80, 0.82, 0.83, 0.84, 0.845, 0.85, 0.853};

/* ---- tests -------------------------------------------------------------------- */

START_TEST(ten_epochs_give_a_complete_picture) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/curves.svg", dir);
    clnet_plot_series loss[] = {{"train loss", EPOCHS, TRAIN_LOSS, 10},
                                {"test loss", EPOCHS, TEST_LOSS, 10}};
    clnet_plot_series acc[] = {{"train accuracy", EPOCHS, TRAIN_ACC, 10},
                               {"test accuracy", EPOCHS, TEST_ACC, 10}};
    ck_assert_int_eq(clnet_plot_svg(path, "LeNet on Fashion-MNIST", "epoch", loss, 2, acc, 2),
                     CLNET_OK);
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ASSERT_NUMBERS_FINITE(svg);
    ck_assert(strstr(svg, "xmlns=\"http://www.w3.org/2000/svg\""));
    const char *texts[] = {">LeNet on Fashion-MNIST<",
                           ">epoch<",
                           ">loss<",
                           ">accuracy<",
                           ">train loss<",
                           ">test loss<",
                           ">train accuracy<",
                           ">test accuracy<"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        ck_assert_msg(strstr(svg, texts[i]), "no %s in the picture", texts[i]);
    ck_assert_int_eq(count(svg, "<path"), 4);
    ck_assert_int_eq(count(svg, "class=\"legend\""), 2);
    /* Every point is marked: 40 in the plots and 4 in the legends. */
    ck_assert_int_eq(count(svg, "<circle"), 44);
    /* Ticks: epochs 0..10 by 2, loss 0..2.5 by 0.5, accuracy 0..1 by 0.2. */
    const char *ticks[] = {">0<",   ">2<",   ">4<",   ">10<",  ">0.0<",
                           ">0.5<", ">2.5<", ">0.2<", ">0.8<", ">1.0<"};
    for (size_t i = 0; i < sizeof ticks / sizeof ticks[0]; i++)
        ck_assert_msg(strstr(svg, ticks[i]), "no tick %s", ticks[i]);
    ck_assert_ptr_null(strstr(svg, ">3<"));
    ck_assert_ptr_null(strstr(svg, ">3.0<"));
    /* Four distinct colours: each label is its own series. */
    const char *colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"};
    for (int i = 0; i < 4; i++) ck_assert_msg(strstr(svg, colours[i]), "no %s", colours[i]);
    ck_assert_int_eq(entries_in(dir), 1); /* no temporary file left */
    free(svg);
}
END_TEST

/* A model without classes: the train and test loss in one panel, half as
 * wide, and nothing about accuracy. */
START_TEST(loss_curves_alone_fill_one_panel) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/loss.svg", dir);
    ck_assert_int_eq(
        clnet_write_loss_curves_svg(path, "autoencoder", EPOCHS, TRAIN_LOSS, TEST_LOSS, 10),
        CLNET_OK);
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ASSERT_NUMBERS_FINITE(svg);
    ck_assert(strstr(svg, ">loss<") && strstr(svg, ">train<") && strstr(svg, ">test<"));
    ck_assert_int_eq(count(svg, "accuracy"), 0);
    ck_assert_int_eq(count(svg, "<path"), 2);
    ck_assert_int_eq(count(svg, "<circle"), 22); /* 20 points, 2 in the legend */
    ck_assert(strstr(svg, "width=\"500\""));
    ck_assert_int_eq(clnet_write_loss_curves_svg(path, NULL, EPOCHS, NULL, NULL, 10),
                     CLNET_ERR_INVALID_ARGUMENT);
    free(svg);
}
END_TEST

START_TEST(the_same_label_keeps_its_colour_in_both_panels) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/c.svg", dir);
    clnet_plot_series loss[] = {{"train", EPOCHS, TRAIN_LOSS, 10}};
    clnet_plot_series acc[] = {{"train", EPOCHS, TRAIN_ACC, 10}, {"test", EPOCHS, TEST_ACC, 10}};
    ck_assert_int_eq(clnet_plot_svg(path, "t", "epoch", loss, 1, acc, 2), CLNET_OK);
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ck_assert_int_eq(count(svg, "stroke=\"#1f77b4\""), 4); /* two paths, two legend lines */
    ck_assert_int_eq(count(svg, "stroke=\"#ff7f0e\""), 2);
    ck_assert_ptr_null(strstr(svg, "#2ca02c"));
    free(svg);
}
END_TEST

START_TEST(a_single_point_is_drawn_as_a_marker) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/one.svg", dir);
    double x = 1, l = 0.7, a = 0.6;
    clnet_plot_series loss[] = {{"train", &x, &l, 1}};
    clnet_plot_series acc[] = {{"test", &x, &a, 1}};
    ck_assert_int_eq(clnet_plot_svg(path, "one epoch", "epoch", loss, 1, acc, 1), CLNET_OK);
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ck_assert_int_eq(count(svg, "<path"), 2);
    ck_assert_int_eq(count(svg, "<circle"), 4); /* a marker and a legend dot per series */
    ASSERT_NUMBERS_FINITE(svg);
    ck_assert(strstr(svg, ">0<") && strstr(svg, ">1<") && strstr(svg, ">2<")); /* epochs */
    free(svg);
}
END_TEST

START_TEST(nan_points_are_skipped_and_break_the_line) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/nan.svg", dir);
    double loss_y[10];
    memcpy(loss_y, TRAIN_LOSS, sizeof loss_y);
    loss_y[4] = NAN;
    loss_y[7] = INFINITY;
    double all_nan[3] = {NAN, NAN, NAN};
    clnet_plot_series loss[] = {{"train", EPOCHS, loss_y, 10}, {"diverged", EPOCHS, all_nan, 3}};
    clnet_plot_series acc[] = {{"test", EPOCHS, all_nan, 3}};
    ck_assert_int_eq(clnet_plot_svg(path, "with NaN", "epoch", loss, 2, acc, 1), CLNET_OK);
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ASSERT_NUMBERS_FINITE(svg);
    /* One path: the series with no finite point has none, but is in the legend. */
    ck_assert_int_eq(count(svg, "<path"), 1);
    ck_assert(strstr(svg, ">diverged<"));
    /* Points 0-3, 5-6 and 8-9: three pieces, 8 markers, 3 legend dots. */
    const char *d = strstr(svg, " d=\"");
    ck_assert_ptr_nonnull(d);
    int pieces = 0;
    for (const char *p = d + 4; *p != '"'; p++) pieces += *p == 'M';
    ck_assert_int_eq(pieces, 3);
    ck_assert_int_eq(count(svg, "<circle"), 8 + 3);
    ck_assert(strstr(svg, ">no data<")); /* the accuracy panel */
    free(svg);
}
END_TEST

START_TEST(text_is_escaped_and_missing_labels_are_named) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/esc.svg", dir);
    clnet_plot_series loss[] = {{"a<b & \"c\"", EPOCHS, TRAIN_LOSS, 3},
                                {NULL, EPOCHS, TEST_LOSS, 3}};
    ck_assert_int_eq(clnet_plot_svg(path, "x < y & z", "ep\x01och", loss, 2, NULL, 0), CLNET_OK);
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ck_assert(strstr(svg, ">a&lt;b &amp; &quot;c&quot;<"));
    ck_assert(strstr(svg, ">x &lt; y &amp; z<"));
    ck_assert(strstr(svg, ">epoch<"));
    ck_assert(strstr(svg, ">series 2<"));
    ck_assert_int_eq(count(svg, "class=\"legend\""), 1); /* no legend for an empty panel */
    free(svg);
}
END_TEST

START_TEST(a_bad_path_is_an_io_error_and_leaves_no_temporary_file) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    clnet_plot_series loss[] = {{"train", EPOCHS, TRAIN_LOSS, 10}};
    /* A missing folder: the temporary file cannot even be made. */
    snprintf(path, sizeof path, "%s/missing/curves.svg", dir);
    ck_assert_int_eq(clnet_plot_svg(path, "t", "epoch", loss, 1, NULL, 0), CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), path), "%s", clnet_last_error());
    ck_assert_int_eq(entries_in(dir), 0);
    /* A folder in the way: the temporary file is written, the rename fails, and the temporary
     * file is removed again. */
    snprintf(path, sizeof path, "%s/in_the_way", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_int_eq(clnet_plot_svg(path, "t", "epoch", loss, 1, NULL, 0), CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), "renaming"), "%s", clnet_last_error());
    ck_assert_int_eq(entries_in(dir), 1);
    ck_assert_int_eq(entries_in(path), 0);
}
END_TEST

START_TEST(an_existing_picture_is_replaced) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/curves.svg", dir);
    clnet_plot_series loss[] = {{"first", EPOCHS, TRAIN_LOSS, 10}};
    ck_assert_int_eq(clnet_plot_svg(path, "t", "epoch", loss, 1, NULL, 0), CLNET_OK);
    loss[0].label = "second";
    ck_assert_int_eq(clnet_plot_svg(path, "t", "epoch", loss, 1, NULL, 0), CLNET_OK);
    char *svg = read_text(path);
    ck_assert(strstr(svg, ">second<") && !strstr(svg, ">first<"));
    ck_assert_int_eq(entries_in(dir), 1);
    free(svg);
}
END_TEST

START_TEST(bad_arguments_are_refused) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/x.svg", dir);
    clnet_plot_series ok[] = {{"a", EPOCHS, TRAIN_LOSS, 10}};
    clnet_plot_series no_y[] = {{"a", EPOCHS, NULL, 10}};
    clnet_plot_series negative[] = {{"a", EPOCHS, TRAIN_LOSS, -1}};
    ck_assert_int_eq(clnet_plot_svg(NULL, "t", "e", ok, 1, ok, 1), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_plot_svg(path, "t", "e", NULL, 1, ok, 1), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_plot_svg(path, "t", "e", ok, -1, ok, 1), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_plot_svg(path, "t", "e", ok, 1, no_y, 1), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_plot_svg(path, "t", "e", negative, 1, ok, 1),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(entries_in(dir), 0);
    /* Nothing at all is still a picture: an empty loss panel (no accuracy
     * series leaves the accuracy panel out) or two empty panels. */
    ck_assert_int_eq(clnet_plot_svg(path, NULL, NULL, NULL, 0, NULL, 0), CLNET_OK);
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ck_assert_int_eq(count(svg, ">no data<"), 1);
    ck_assert_int_eq(count(svg, "accuracy"), 0);
    free(svg);
    clnet_plot_series empty[] = {{"a", EPOCHS, TRAIN_LOSS, 0}};
    ck_assert_int_eq(clnet_plot_svg(path, NULL, NULL, NULL, 0, empty, 1), CLNET_OK);
    svg = read_text(path);
    ck_assert_int_eq(count(svg, ">no data<"), 2);
    free(svg);
}
END_TEST

START_TEST(long_and_odd_ranges_get_readable_ticks) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/steps.svg", dir);
    /* 2000 steps of a loss that starts huge: 1-2-5 ticks, no marker on every point. */
    enum { N = 2000 };
    static double x[N], y[N], a[N];
    for (int i = 0; i < N; i++) {
        x[i] = i + 1;
        y[i] = 3e9 / (1.0 + i);
        a[i] = 0.5 + 0.2 * i / N;
    }
    clnet_plot_series loss[] = {{"loss", x, y, N}};
    clnet_plot_series acc[] = {{"acc", x, a, N}};
    ck_assert_int_eq(clnet_plot_svg(path, "steps", "step", loss, 1, acc, 1), CLNET_OK);
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ck_assert(strstr(svg, ">500<") && strstr(svg, ">2000<"));
    ck_assert(strstr(svg, ">1e9<") && strstr(svg, ">3e9<"));
    ck_assert_int_eq(count(svg, "<circle"), 0); /* not even in the legend */
    ck_assert(strstr(svg, "stroke-width=\"1.2\""));
    free(svg);
}
END_TEST

/* ---- pictures of samples ----------------------------------------------------------- */

/* The PNG of the k-th <image> (0-based) of svg, decoded: its width, height, colours (1 grey, 3
 * RGB) and pixels (h, w, colours; free them). Fails the test on anything that is not an 8-bit,
 * non-interlaced grey or RGB PNG with filter type 0 on every row, as the writer makes them. */
typedef struct {
    int w, h, colours;
    unsigned char *pixels;
} png_image;

static int b64_value(char c) {
    const char *B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *at = c ? strchr(B64, c) : NULL;
    return at ? (int)(at - B64) : -1;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static png_image decode_png(const char *svg, int k) {
    const char *at = svg;
    for (int i = 0; i <= k; i++) {
        at = strstr(at, "data:image/png;base64,");
        ck_assert_msg(at != NULL, "no image %d", k);
        at += strlen("data:image/png;base64,");
    }
    size_t len = strcspn(at, "\""), n = 0;
    unsigned char *png = malloc(len);
    for (size_t i = 0; i + 4 <= len; i += 4) {
        int v[4];
        for (int j = 0; j < 4; j++) v[j] = at[i + j] == '=' ? 0 : b64_value(at[i + j]);
        ck_assert_msg(v[0] >= 0 && v[1] >= 0 && v[2] >= 0 && v[3] >= 0, "bad base64");
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | v[3];
        png[n++] = (unsigned char)(w >> 16);
        if (at[i + 2] != '=') png[n++] = (unsigned char)(w >> 8);
        if (at[i + 3] != '=') png[n++] = (unsigned char)w;
    }
    ck_assert_int_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
    png_image im = {0};
    unsigned char *idat = malloc(n);
    size_t idat_len = 0;
    for (size_t p = 8; p + 12 <= n;) { /* chunks, each CRC checked */
        uint32_t clen = be32(png + p);
        ck_assert_uint_eq(crc32(0, png + p + 4, clen + 4), be32(png + p + 8 + clen));
        if (memcmp(png + p + 4, "IHDR", 4) == 0) {
            im.w = (int)be32(png + p + 8), im.h = (int)be32(png + p + 12);
            ck_assert_int_eq(png[p + 16], 8); /* bits */
            ck_assert(png[p + 17] == 0 || png[p + 17] == 2);
            im.colours = png[p + 17] == 2 ? 3 : 1;
            ck_assert_int_eq(png[p + 20], 0); /* not interlaced */
        } else if (memcmp(png + p + 4, "IDAT", 4) == 0) {
            memcpy(idat + idat_len, png + p + 8, clen);
            idat_len += clen;
        }
        p += 12 + clen;
    }
    ck_assert(im.w > 0 && im.h > 0);
    size_t row = 1 + (size_t)im.w * im.colours;
    uLongf raw_len = (uLongf)(row * im.h);
    unsigned char *raw = malloc(raw_len);
    ck_assert_int_eq(uncompress(raw, &raw_len, idat, (uLong)idat_len), Z_OK);
    ck_assert_uint_eq(raw_len, row * im.h);
    im.pixels = malloc(row * im.h);
    for (int y = 0; y < im.h; y++) {
        ck_assert_int_eq(raw[y * row], 0); /* filter type 0 */
        memcpy(im.pixels + (size_t)y * (row - 1), raw + y * row + 1, row - 1);
    }
    free(raw);
    free(idat);
    free(png);
    return im;
}

/* The grey the writer gives v on the scale lo (black) to hi (white). */
static int grey(double v, double lo, double hi) {
    double q = (v - lo) * 255.0 / (hi - lo);
    return (int)lrint(q < 0 ? 0 : q > 255 ? 255 : q);
}

/* Image k of svg is the grey picture of h x w values v (row by row) on the scale lo to hi. */
static void assert_grey_image(const char *svg, int k, const float *v, int h, int w, double lo,
                              double hi) {
    png_image im = decode_png(svg, k);
    ck_assert_int_eq(im.w, w);
    ck_assert_int_eq(im.h, h);
    ck_assert_int_eq(im.colours, 1);
    for (int i = 0; i < h * w; i++)
        ck_assert_msg(im.pixels[i] == grey(v[i], lo, hi), "image %d pixel %d: %d, want %d", k, i,
                      im.pixels[i], grey(v[i], lo, hi));
    free(im.pixels);
}

/* A picture's file, checked well-formed and free of NaN numbers. */
static char *read_svg(const char *path) {
    char *svg = read_text(path);
    ASSERT_WELL_FORMED(svg);
    ASSERT_NUMBERS_FINITE(svg);
    return svg;
}

START_TEST(image_columns_share_one_scale_per_sample) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/recon.svg", dir);
    /* 5 samples of 2x3 images (one channel): inputs, outputs, targets. Samples 0 and 2..4 lie
     * in [0, 1] (drawn on [0, 1]); sample 1's input spans -1..3, its output 0..1. */
    enum { N = 5, PIX = 6 };
    float in[N * PIX], out[N * PIX], target[N * PIX];
    for (int i = 0; i < N * PIX; i++) {
        in[i] = (float)(i % PIX) / 10.0f + 0.05f * (float)(i / PIX);
        out[i] = 0.9f - in[i] / 2;
        target[i] = 0.5f;
    }
    in[PIX + 0] = -1, in[PIX + 5] = 3;
    const float *columns[3] = {in, out, target};
    const char *titles[3] = {"noisy <input>", "output", NULL};
    ck_assert_int_eq(clnet_write_image_columns_svg(path, columns, titles, 3, 1, 2, 3, N), CLNET_OK);
    char *svg = read_svg(path);
    ck_assert_int_eq(count(svg, "<image "), 3 * N);
    /* three samples a row: the two titles over each of the first row's samples */
    ck_assert_int_eq(count(svg, ">noisy &lt;input&gt;<"), 3);
    ck_assert_int_eq(count(svg, ">output<"), 3);
    ck_assert_int_eq(count(svg, "class=\"title\""), 6);
    ck_assert_int_eq(count(svg, "class=\"caption\""), N);
    ck_assert(strstr(svg, ">sample 4<"));
    for (int i = 0; i < N; i++) {
        double lo = i == 1 ? -1 : 0, hi = i == 1 ? 3 : 1;
        for (int k = 0; k < 3; k++)
            assert_grey_image(svg, 3 * i + k, columns[k] + i * PIX, 2, 3, lo, hi);
    }
    free(svg);
    /* one column, no titles; three channels are drawn in colour */
    float rgb[3 * PIX];
    for (int i = 0; i < 3 * PIX; i++) rgb[i] = (float)i / (3 * PIX - 1);
    const float *one[1] = {rgb};
    ck_assert_int_eq(clnet_write_image_columns_svg(path, one, NULL, 1, 3, 2, 3, 1), CLNET_OK);
    svg = read_svg(path);
    ck_assert_int_eq(count(svg, "<image "), 1);
    ck_assert_int_eq(count(svg, "class=\"title\""), 0);
    png_image im = decode_png(svg, 0);
    ck_assert_int_eq(im.colours, 3);
    for (int p = 0; p < PIX; p++)
        for (int c = 0; c < 3; c++)
            ck_assert_int_eq(im.pixels[p * 3 + c], grey(rgb[c * PIX + p], 0, 1));
    free(im.pixels);
    free(svg);
}
END_TEST

START_TEST(predictions_draw_each_image_on_its_own_range) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/p.svg", dir);
    enum { N = 3, PIX = 4 };
    float x[N * PIX];
    for (int i = 0; i < N * PIX; i++) x[i] = (float)((i * 7) % 5) * (float)(1 + i / PIX) - 2;
    x[5] = NAN; /* drawn black, and left out of the range */
    int predicted[N] = {1, 2, 3};
    int32_t labels[N] = {1, 0, 3};
    ck_assert_int_eq(clnet_write_predictions_svg(path, x, 1, 2, 2, N, predicted, labels), CLNET_OK);
    char *svg = read_svg(path);
    ck_assert_int_eq(count(svg, "<image "), N);
    ck_assert(strstr(svg, ">1 (true 1)<") && strstr(svg, ">3 (true 3)<"));
    ck_assert_int_eq(count(svg, "fill=\"#d62728\">2 (true 0)<"), 1); /* wrong: red */
    for (int i = 0; i < N; i++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int p = 0; p < PIX; p++)
            if (isfinite(x[i * PIX + p]))
                lo = fminf(lo, x[i * PIX + p]), hi = fmaxf(hi, x[i * PIX + p]);
        float v[PIX];
        for (int p = 0; p < PIX; p++) v[p] = isfinite(x[i * PIX + p]) ? x[i * PIX + p] : lo;
        assert_grey_image(svg, i, v, 2, 2, lo, hi);
    }
    free(svg);
}
END_TEST

START_TEST(volumes_draw_their_three_central_slices) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/v.svg", dir);
    enum { N = 3, D = 4, H = 3, W = 2, SIZE = D * H * W };
    float x[N * SIZE];
    for (int i = 0; i < N; i++)
        for (int d = 0; d < D; d++)
            for (int h = 0; h < H; h++)
                for (int w = 0; w < W; w++)
                    x[((i * D + d) * H + h) * W + w] = (float)(100 * d + 10 * h + w + i);
    int predicted[N] = {0, 1, 1};
    int32_t labels[N] = {0, 1, 0};
    ck_assert_int_eq(clnet_write_volume_predictions_svg(
                         path, &(clnet_volume_predictions){x, 1, D, H, W, N, predicted, labels}),
                     CLNET_OK);
    char *svg = read_svg(path);
    ck_assert_int_eq(count(svg, "<image "), 3 * N);
    ck_assert(strstr(svg, ">axial d=2<") && strstr(svg, ">coronal h=1<") &&
              strstr(svg, ">sagittal w=1<"));
    ck_assert_int_eq(count(svg, "class=\"caption\""), N);
    ck_assert_int_eq(count(svg, "fill=\"#d62728\">1 (true 0)<"), 1);
    for (int i = 0; i < N; i++) {
        float axial[H * W], coronal[D * W], sagittal[D * H];
        const float *v = x + i * SIZE;
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++) axial[h * W + w] = v[(2 * H + h) * W + w];
        for (int d = 0; d < D; d++)
            for (int w = 0; w < W; w++) coronal[d * W + w] = v[(d * H + 1) * W + w];
        for (int d = 0; d < D; d++)
            for (int h = 0; h < H; h++) sagittal[d * H + h] = v[(d * H + h) * W + 1];
        /* one scale for the three: from the smallest value drawn (the sagittal slice's d 0,
         * h 0, w 1) to the largest (its d 3, h 2, w 1) */
        double lo = 1 + i, hi = 321 + i;
        assert_grey_image(svg, 3 * i, axial, H, W, lo, hi);
        assert_grey_image(svg, 3 * i + 1, coronal, D, W, lo, hi);
        assert_grey_image(svg, 3 * i + 2, sagittal, D, H, lo, hi);
    }
    free(svg);
}
END_TEST

/* The d attribute of the k-th signal path (0-based), copied. */
static char *path_data(const char *svg, int k) {
    const char *at = svg;
    for (int i = 0; i <= k; i++) {
        at = strstr(at, "class=\"signal\"");
        ck_assert_msg(at != NULL, "no signal path %d", k);
        at++;
    }
    at = strstr(at, " d=\"") + 4;
    size_t n = strcspn(at, "\"");
    char *d = malloc(n + 1);
    memcpy(d, at, n);
    d[n] = '\0';
    return d;
}

START_TEST(signals_draw_a_line_a_channel) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/s.svg", dir);
    enum { N = 3, C = 2, L = 5 };
    float x[N * C * L];
    for (int i = 0; i < N * C * L; i++) x[i] = (float)(i % L); /* 0 1 2 3 4 in each channel */
    for (int j = 0; j < L; j++) x[L + j] = (float)(4 - j);     /* sample 0, channel 1: falling */
    x[2 * C * L + 2] = NAN;                                    /* sample 2 channel 0 breaks */
    int predicted[N] = {1, 0, 1};
    ck_assert_int_eq(clnet_write_signal_predictions_svg(path, x, C, L, N, predicted, NULL),
                     CLNET_OK);
    char *svg = read_svg(path);
    ck_assert_int_eq(count(svg, "class=\"signal\""), N * C);
    ck_assert_int_eq(count(svg, "class=\"caption\""), N);
    ck_assert_int_eq(count(svg, "(true"), 0);
    /* the first box's plot area: x 12..204, y 12..84 for the values 0..4 */
    char *d = path_data(svg, 0);
    ck_assert_str_eq(d, "M12.0 84.0 L60.0 66.0 L108.0 48.0 L156.0 30.0 L204.0 12.0");
    free(d);
    d = path_data(svg, 1);
    ck_assert_str_eq(d, "M12.0 12.0 L60.0 30.0 L108.0 48.0 L156.0 66.0 L204.0 84.0");
    free(d);
    d = path_data(svg, 4); /* NaN at 2: two pieces */
    int pieces = 0;
    for (const char *p = d; *p; p++) pieces += *p == 'M';
    ck_assert_int_eq(pieces, 2);
    free(d);
    free(svg);
    /* a long signal keeps each pixel column's extremes: a lone spike survives */
    enum { LONG = 100000 };
    float *s = calloc(LONG, sizeof *s);
    s[50001] = 10;
    s[70000] = -2;
    int one = 3;
    int32_t label = 3;
    ck_assert_int_eq(clnet_write_signal_predictions_svg(path, s, 1, LONG, 1, &one, &label),
                     CLNET_OK);
    svg = read_svg(path);
    ck_assert(strstr(svg, ">3 (true 3)<"));
    d = path_data(svg, 0);
    int points = 0;
    for (const char *p = d; *p; p++) points += *p == 'M' || *p == 'L';
    ck_assert_int_le(points, 2 * 192);
    ck_assert(strstr(d, " 12.0 L")); /* the spike: the top of the area */
    ck_assert(strstr(d, " 84.0"));   /* the dip: its bottom */
    free(d);
    free(svg);
    free(s);
}
END_TEST

START_TEST(class_maps_colour_each_class) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.svg", dir);
    enum { N = 2, H = 2, W = 3, P = H * W };
    float x[N * P];
    for (int i = 0; i < N * P; i++) x[i] = (float)i;
    int predicted[N * P] = {0, 1, 2, 2, 1, 0, 1, 1, 1, 1, 1, 1};
    int truth[N * P] = {0, 1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1};
    ck_assert_int_eq(
        clnet_write_class_maps_svg(path, &(clnet_class_maps){x, 1, H, W, N, predicted, truth, 3}),
        CLNET_OK);
    char *svg = read_svg(path);
    ck_assert_int_eq(count(svg, "<image "), 3 * N);
    ck_assert(strstr(svg, ">input<") && strstr(svg, ">predicted<") && strstr(svg, ">true<"));
    ck_assert(strstr(svg, ">5 of 6 right<") && strstr(svg, ">6 of 6 right<"));
    ck_assert_int_eq(count(svg, "class=\"legend\""), 3);
    static const unsigned char RGB[3][3] = {
        {0x1f, 0x77, 0xb4}, {0xff, 0x7f, 0x0e}, {0x2c, 0xa0, 0x2c}};
    for (int i = 0; i < N; i++)
        for (int m = 0; m < 2; m++) {
            png_image im = decode_png(svg, 3 * i + 1 + m);
            ck_assert(im.w == W && im.h == H && im.colours == 3);
            const int *map = (m ? truth : predicted) + i * P;
            for (int p = 0; p < P; p++)
                ck_assert_int_eq(memcmp(im.pixels + 3 * p, RGB[map[p]], 3), 0);
            free(im.pixels);
        }
    assert_grey_image(svg, 0, x, H, W, 0, 5);
    free(svg);
    /* without the truth: two columns, no count */
    ck_assert_int_eq(
        clnet_write_class_maps_svg(path, &(clnet_class_maps){x, 1, H, W, N, predicted, NULL, 3}),
        CLNET_OK);
    svg = read_svg(path);
    ck_assert_int_eq(count(svg, "<image "), 2 * N);
    ck_assert_int_eq(count(svg, "right<"), 0);
    free(svg);
    /* a class out of range names the sample and the position */
    truth[P + 4] = 3;
    ck_assert_int_eq(
        clnet_write_class_maps_svg(path, &(clnet_class_maps){x, 1, H, W, N, predicted, truth, 3}),
        CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(
        strstr(clnet_last_error(), "true class 3 of sample 1 at position 4 is not 0 to 2"), "%s",
        clnet_last_error());
}
END_TEST

START_TEST(sample_pictures_refuse_bad_arguments) {
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.svg", dir);
    float x[64] = {0};
    int predicted[4] = {0};
    const float *columns[2] = {x, NULL};
    const clnet_status BAD = CLNET_ERR_INVALID_ARGUMENT;
    ck_assert_int_eq(clnet_write_image_columns_svg(NULL, columns, NULL, 1, 1, 2, 2, 1), BAD);
    ck_assert_int_eq(clnet_write_image_columns_svg(path, NULL, NULL, 1, 1, 2, 2, 1), BAD);
    ck_assert_int_eq(clnet_write_image_columns_svg(path, columns, NULL, 0, 1, 2, 2, 1), BAD);
    ck_assert_int_eq(clnet_write_image_columns_svg(path, columns, NULL, 2, 1, 2, 2, 1), BAD);
    ck_assert_msg(strstr(clnet_last_error(), "column 1 is NULL"), "%s", clnet_last_error());
    ck_assert_int_eq(clnet_write_image_columns_svg(path, columns, NULL, 1, 1, 2, 2, 0), BAD);
    ck_assert_msg(strstr(clnet_last_error(), "n = 0: nothing to draw"), "%s", clnet_last_error());
    ck_assert_int_eq(clnet_write_image_columns_svg(path, columns, NULL, 1, 1, 70000, 2, 1), BAD);
    ck_assert_msg(strstr(clnet_last_error(), "height = 70000, not 1 to 65535"), "%s",
                  clnet_last_error());
    ck_assert_int_eq(clnet_write_predictions_svg(path, x, 0, 2, 2, 1, predicted, NULL), BAD);
    ck_assert_int_eq(clnet_write_predictions_svg(path, x, 1, 2, 2, 1, NULL, NULL), BAD);
    ck_assert_int_eq(clnet_write_volume_predictions_svg(
                         path, &(clnet_volume_predictions){x, 1, 0, 2, 2, 1, predicted, NULL}),
                     BAD);
    ck_assert_msg(strstr(clnet_last_error(), "clnet_write_volume_predictions_svg") &&
                      strstr(clnet_last_error(), "depth = 0"),
                  "%s", clnet_last_error());
    ck_assert_int_eq(clnet_write_volume_predictions_svg(
                         path, &(clnet_volume_predictions){NULL, 1, 2, 2, 2, 1, predicted, NULL}),
                     BAD);
    ck_assert_int_eq(clnet_write_signal_predictions_svg(path, x, 1, 0, 1, predicted, NULL), BAD);
    ck_assert_int_eq(clnet_write_signal_predictions_svg(path, x, 1, 8, -1, predicted, NULL), BAD);
    ck_assert_int_eq(clnet_write_signal_predictions_svg(path, x, 1, 8, 1, NULL, NULL), BAD);
    ck_assert_int_eq(
        clnet_write_class_maps_svg(path, &(clnet_class_maps){x, 1, 2, 2, 1, predicted, NULL, 0}),
        BAD);
    ck_assert_int_eq(
        clnet_write_class_maps_svg(path, &(clnet_class_maps){x, 1, 2, 2, 1, NULL, NULL, 2}), BAD);
    ck_assert_int_eq(clnet_write_volume_predictions_svg(path, NULL), BAD);
    ck_assert_msg(strstr(clnet_last_error(), "NULL arguments"), "%s", clnet_last_error());
    ck_assert_int_eq(clnet_write_class_maps_svg(path, NULL), BAD);
    ck_assert_int_eq(entries_in(dir), 0); /* nothing written */
    /* a folder that is not there: an I/O error naming the file, no temporary file */
    snprintf(path, sizeof path, "%s/missing/p.svg", dir);
    ck_assert_int_eq(clnet_write_signal_predictions_svg(path, x, 1, 8, 1, predicted, NULL),
                     CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), path), "%s", clnet_last_error());
    ck_assert_int_eq(entries_in(dir), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("plot");
    TCase *t = tcase_create("plot");
    tcase_add_test(t, ten_epochs_give_a_complete_picture);
    tcase_add_test(t, loss_curves_alone_fill_one_panel);
    tcase_add_test(t, the_same_label_keeps_its_colour_in_both_panels);
    tcase_add_test(t, a_single_point_is_drawn_as_a_marker);
    tcase_add_test(t, nan_points_are_skipped_and_break_the_line);
    tcase_add_test(t, text_is_escaped_and_missing_labels_are_named);
    tcase_add_test(t, a_bad_path_is_an_io_error_and_leaves_no_temporary_file);
    tcase_add_test(t, an_existing_picture_is_replaced);
    tcase_add_test(t, bad_arguments_are_refused);
    tcase_add_test(t, long_and_odd_ranges_get_readable_ticks);
    tcase_add_test(t, image_columns_share_one_scale_per_sample);
    tcase_add_test(t, predictions_draw_each_image_on_its_own_range);
    tcase_add_test(t, volumes_draw_their_three_central_slices);
    tcase_add_test(t, signals_draw_a_line_a_channel);
    tcase_add_test(t, class_maps_colour_each_class);
    tcase_add_test(t, sample_pictures_refuse_bad_arguments);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
