/* The training-curve SVG writer (no OpenCL device needed): the picture is well-formed, holds the
 * title, labels, legend and one path per series, picks 1-2-5 ticks, copes with a single point
 * and with NaN values, escapes text, and a failed write leaves no temporary file. */
#include "harness.h"
#include "plot.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
