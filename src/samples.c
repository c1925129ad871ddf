/* Pictures of samples and of what a model made of them (clnet predict --picture), as SVG 1.1:
 * every image an embedded PNG at its own resolution (drawn pixelated), every signal a path.
 * A picture is a grid: each sample a group of tiles side by side (its input, its output, ...)
 * with a caption under it, and the tiles' titles over the first row. */
#include "alloc.h"
#include "error.h"
#include "plot.h"
#include "png.h"
#include "text.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- layout (pixels) ------------------------------------------------------------------- */
enum {
    BOX = 80,          /* an image tile fits in BOX x BOX, its aspect kept */
    SIGNAL_W = 200,    /* a signal's box */
    SIGNAL_H = 80,     /* ... */
    SIGNAL_PAD = 4,    /* inside a signal's box */
    TILE_GAP = 6,      /* between the tiles of one sample */
    GROUP_GAP = 16,    /* between samples */
    MARGIN = 8,        /* around the grid */
    TITLE_ROOM = 22,   /* over the first row, for the tiles' titles */
    CAPTION_ROOM = 30, /* under each sample */
    ROW_TILES = 8,     /* about this many tiles a row */
    LEGEND_ROOM = 26,  /* under the grid, for a class map's colours */
    MAX_SIDE = 65535,  /* the longest side of an image or volume drawn */
};
#define FONT "DejaVu Sans, Helvetica, Arial, sans-serif"

/* ---- the grid -------------------------------------------------------------------------- */
typedef struct {
    int n, tiles;      /* samples, tiles a sample */
    int box_w, box_h;  /* a tile's box */
    int per_row;       /* samples a row */
    int header;        /* room over the first row */
    int width, height; /* the picture's */
} grid;

static grid grid_make(int n, int tiles, int box_w, int box_h, int per_row, int titled) {
    grid g = {.n = n, .tiles = tiles, .box_w = box_w, .box_h = box_h, .per_row = per_row};
    if (g.per_row > n) g.per_row = n;
    g.header = titled ? TITLE_ROOM : 0;
    int group = tiles * box_w + (tiles - 1) * TILE_GAP, rows = (n + g.per_row - 1) / g.per_row;
    g.width = 2 * MARGIN + g.per_row * group + (g.per_row - 1) * GROUP_GAP;
    g.height = 2 * MARGIN + g.header + rows * (box_h + CAPTION_ROOM);
    return g;
}

static int group_width(const grid *g) {
    return g->tiles * g->box_w + (g->tiles - 1) * TILE_GAP;
}

/* The top left corner of sample i's tile k. */
static void tile_at(const grid *g, int i, int k, int *x, int *y) {
    *x = MARGIN + (i % g->per_row) * (group_width(g) + GROUP_GAP) + k * (g->box_w + TILE_GAP);
    *y = MARGIN + g->header + (i / g->per_row) * (g->box_h + CAPTION_ROOM);
}

/* The picture's start; footer: room under the grid (g->height down). */
static void grid_open(clnet_text *t, const grid *g, int footer) {
    int w = g->width, h = g->height + footer;
    clnet_text_printf(
        t,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
        "version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"" FONT
        "\">\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
        w, h, w, h, w, h);
}

/* The tiles' titles (NULL entries left out) over each sample of the first row. */
static void put_titles(clnet_text *t, const grid *g, const char *const *titles) {
    for (int i = 0; i < g->per_row; i++)
        for (int k = 0; k < g->tiles; k++) {
            if (!titles[k]) continue;
            int x, y;
            tile_at(g, i, k, &x, &y);
            clnet_text_printf(t,
                              "<text class=\"title\" x=\"%d\" y=\"%d\" font-size=\"12\" "
                              "fill=\"#333333\" text-anchor=\"middle\">",
                              x + g->box_w / 2, y - 7);
            clnet_svg_escaped(t, titles[k]);
            clnet_text_printf(t, "</text>\n");
        }
}

/* Sample i's caption (escaped), centred under its tiles. */
static void put_caption(clnet_text *t, const grid *g, int i, const char *text, const char *fill) {
    int x, y;
    tile_at(g, i, 0, &x, &y);
    clnet_text_printf(t,
                      "<text class=\"caption\" x=\"%d\" y=\"%d\" font-size=\"13\" "
                      "text-anchor=\"middle\" fill=\"%s\">",
                      x + group_width(g) / 2, y + g->box_h + 18, fill);
    clnet_svg_escaped(t, text);
    clnet_text_printf(t, "</text>\n");
}

/* pixels (h, w, colours) as sample i's tile k: as large as its box allows, its aspect kept. */
static void put_image(clnet_text *t, const grid *g, int i, int k, const unsigned char *pixels,
                      int w, int h, int colours) {
    int x, y;
    tile_at(g, i, k, &x, &y);
    double scale = fmin((double)g->box_w / w, (double)g->box_h / h);
    int dw = (int)lround(w * scale), dh = (int)lround(h * scale);
    if (dw < 1) dw = 1;
    if (dh < 1) dh = 1;
    clnet_text_printf(t,
                      "<image x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                      "preserveAspectRatio=\"none\" image-rendering=\"optimizeSpeed\" "
                      "style=\"image-rendering:pixelated\" xlink:href=\"data:image/png;base64,",
                      x + (g->box_w - dw) / 2, y + (g->box_h - dh) / 2, dw, dh);
    clnet_png_base64(t, pixels, w, h, colours);
    clnet_text_printf(t, "\"/>\n");
}

static clnet_status grid_close(clnet_text *t, const char *path) {
    clnet_text_printf(t, "</svg>\n");
    return clnet_svg_write(path, t);
}

/* ---- pixels ---------------------------------------------------------------------------- */

/* A 2-D slice of a (C, ...) tensor: pixel (r, c) of channel ch is
 * at[ch * channel + r * row + c * col]; colours 1 (the first channel, grey) or 3 (RGB). */
typedef struct {
    const float *at;
    size_t channel, row, col;
    int rows, cols, colours;
} view;

/* An image (C, H, W) as a view: three channels in colour, else the first in grey. */
static view image_view(const float *x, int channels, int height, int width) {
    return (view){.at = x,
                  .channel = (size_t)height * width,
                  .row = (size_t)width,
                  .col = 1,
                  .rows = height,
                  .cols = width,
                  .colours = channels == 3 ? 3 : 1};
}

static float view_at(const view *v, int ch, int r, int c) {
    return v->at[ch * v->channel + (size_t)r * v->row + (size_t)c * v->col];
}

/* Widens [*lo, *hi] to hold v's finite values. */
static void widen(const view *v, float *lo, float *hi) {
    for (int ch = 0; ch < v->colours; ch++)
        for (int r = 0; r < v->rows; r++)
            for (int c = 0; c < v->cols; c++) {
                float x = view_at(v, ch, r, c);
                if (isfinite(x)) *lo = fminf(*lo, x), *hi = fmaxf(*hi, x);
            }
}

/* v as bytes (rows, cols, colours): lo black (0), hi white (255), clamped between; NaN and
 * infinities black. lo == hi draws everything black. */
static void view_pixels(const view *v, float lo, float hi, unsigned char *out) {
    double scale = hi > lo ? 255.0 / ((double)hi - lo) : 0.0; /* in double: no overflow */
    for (int r = 0; r < v->rows; r++)
        for (int c = 0; c < v->cols; c++)
            for (int ch = 0; ch < v->colours; ch++) {
                float x = view_at(v, ch, r, c);
                double q = isfinite(x) ? ((double)x - lo) * scale : 0.0;
                q = q < 0 ? 0 : q > 255 ? 255 : q;
                out[((size_t)r * v->cols + c) * v->colours + ch] = (unsigned char)lrint(q);
            }
}

/* Views drawn with one grey scale as sample i's tiles 0, 1, ...: their own range, or [0, 1]
 * when unit is set and every finite value lies in it. pixels has room for the largest. */
static void put_views(clnet_text *t, const grid *g, int i, const view *v, int nv, int unit,
                      unsigned char *pixels) {
    float lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < nv; k++) widen(&v[k], &lo, &hi);
    if (!(lo <= hi)) lo = 0, hi = 1; /* nothing finite */
    if (unit && lo >= 0 && hi <= 1) lo = 0, hi = 1;
    for (int k = 0; k < nv; k++) {
        view_pixels(&v[k], lo, hi, pixels);
        put_image(t, g, i, k, pixels, v[k].cols, v[k].rows, v[k].colours);
    }
}

/* ---- arguments ------------------------------------------------------------------------- */

/* The path, the data and n; then each named size from 1 to its limit. */
static clnet_status check_args(const char *fn, const char *path, const void *data, int n,
                               const char *const *names, const int *sizes, int nsizes, int limit) {
    if (!path) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: NULL path", fn);
    if (!data) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s %s: NULL samples", fn, path);
    if (n < 1)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s %s: n = %d: nothing to draw", fn, path,
                          n);
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] < 1 || sizes[k] > limit)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s %s: %s = %d, not 1 to %d", fn, path,
                              names[k], sizes[k], limit);
    return CLNET_OK;
}

/* "3" or "3 (true 5)"; returns 1 where the label differs. */
static int class_caption(char *text, size_t size, const int *predicted, const int32_t *labels,
                         int i) {
    if (!labels) {
        snprintf(text, size, "%d", predicted[i]);
        return 0;
    }
    snprintf(text, size, "%d (true %d)", predicted[i], (int)labels[i]);
    return labels[i] != predicted[i];
}

static void put_class_caption(clnet_text *t, const grid *g, int i, const int *predicted,
                              const int32_t *labels) {
    char text[64];
    int wrong = class_caption(text, sizeof text, predicted, labels, i);
    put_caption(t, g, i, text, wrong ? "#d62728" : "#000000");
}

/* ---- images with their predicted class --------------------------------------------------- */

clnet_status clnet_write_predictions_svg(const char *path, const float *images, int channels,
                                         int height, int width, int n, const int *predicted,
                                         const int32_t *labels) {
    static const char *const FN = "clnet_write_predictions_svg";
    clnet_status status = CLNET_OK;
    clnet_text t = {0};
    unsigned char *pixels = NULL;
    TRY(check_args(FN, path, images, n, (const char *const[]){"channels", "height", "width"},
                   (int[]){channels, height, width}, 3, MAX_SIDE));
    if (!predicted) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s %s: NULL predicted", FN, path);
    grid g = grid_make(n, 1, BOX, BOX, ROW_TILES, 0);
    size_t sample = (size_t)channels * height * width;
    pixels = clnet_malloc((size_t)height * width * 3);
    if (!pixels) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    grid_open(&t, &g, 0);
    for (int i = 0; i < n; i++) {
        view v = image_view(images + i * sample, channels, height, width);
        put_views(&t, &g, i, &v, 1, 0, pixels);
        put_class_caption(&t, &g, i, predicted, labels);
    }
    TRY(grid_close(&t, path));
cleanup:
    free(pixels);
    clnet_text_free(&t);
    return status;
}

/* ---- columns of images: input | output | target ------------------------------------------ */

clnet_status clnet_write_image_columns_svg(const char *path, const float *const *columns,
                                           const char *const *titles, int ncolumns, int channels,
                                           int height, int width, int n) {
    static const char *const FN = "clnet_write_image_columns_svg";
    clnet_status status = CLNET_OK;
    clnet_text t = {0};
    unsigned char *pixels = NULL;
    view *v = NULL;
    TRY(check_args(FN, path, columns, n,
                   (const char *const[]){"ncolumns", "channels", "height", "width"},
                   (int[]){ncolumns, channels, height, width}, 4, MAX_SIDE));
    for (int k = 0; k < ncolumns; k++)
        if (!columns[k]) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s %s: column %d is NULL", FN, path, k);
    grid g = grid_make(n, ncolumns, BOX, BOX, (ROW_TILES + ncolumns - 1) / ncolumns, !!titles);
    size_t sample = (size_t)channels * height * width;
    pixels = clnet_malloc((size_t)height * width * 3);
    v = clnet_malloc(sizeof *v * (size_t)ncolumns);
    if (!pixels || !v) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    grid_open(&t, &g, 0);
    if (titles) put_titles(&t, &g, titles);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < ncolumns; k++)
            v[k] = image_view(columns[k] + i * sample, channels, height, width);
        put_views(&t, &g, i, v, ncolumns, 1, pixels);
        char text[32];
        snprintf(text, sizeof text, "sample %d", i);
        put_caption(&t, &g, i, text, "#666666");
    }
    TRY(grid_close(&t, path));
cleanup:
    free(v);
    free(pixels);
    clnet_text_free(&t);
    return status;
}

/* ---- volumes: three central slices ------------------------------------------------------- */

/* The central axial (depth D/2: H x W), coronal (height H/2: D x W) and sagittal (width W/2:
 * D x H) slices of volume x (C, D, H, W). */
static void volume_views(const float *x, int channels, int D, int H, int W, view v[3]) {
    size_t plane = (size_t)H * W, channel = (size_t)D * plane;
    int colours = channels == 3 ? 3 : 1;
    v[0] = (view){x + (size_t)(D / 2) * plane, channel, (size_t)W, 1, H, W, colours};
    v[1] = (view){x + (size_t)(H / 2) * W, channel, plane, 1, D, W, colours};
    v[2] = (view){x + (size_t)(W / 2), channel, plane, (size_t)W, D, H, colours};
}

clnet_status clnet_write_volume_predictions_svg(const char *path,
                                                const clnet_volume_predictions *args) {
    static const char *const FN = "clnet_write_volume_predictions_svg";
    clnet_status status = CLNET_OK;
    clnet_text t = {0};
    unsigned char *pixels = NULL;
    if (!path) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s: NULL path", FN);
    if (!args) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s %s: NULL arguments", FN, path);
    const float *volumes = args->volumes;
    int channels = args->channels, depth = args->depth, height = args->height, width = args->width,
        n = args->n;
    const int *predicted = args->predicted;
    const int32_t *labels = args->labels;
    TRY(check_args(FN, path, volumes, n,
                   (const char *const[]){"channels", "depth", "height", "width"},
                   (int[]){channels, depth, height, width}, 4, MAX_SIDE));
    if (!predicted) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s %s: NULL predicted", FN, path);
    int side = depth > height ? depth : height, other = height > width ? height : width;
    pixels = clnet_malloc((size_t)side * other * 3); /* the largest slice */
    if (!pixels) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    char titles[3][48];
    snprintf(titles[0], sizeof titles[0], "axial d=%d", depth / 2);
    snprintf(titles[1], sizeof titles[1], "coronal h=%d", height / 2);
    snprintf(titles[2], sizeof titles[2], "sagittal w=%d", width / 2);
    grid g = grid_make(n, 3, BOX, BOX, (ROW_TILES + 2) / 3, 1);
    grid_open(&t, &g, 0);
    put_titles(&t, &g, (const char *const[]){titles[0], titles[1], titles[2]});
    size_t sample = (size_t)channels * depth * height * width;
    for (int i = 0; i < n; i++) {
        view v[3];
        volume_views(volumes + i * sample, channels, depth, height, width, v);
        put_views(&t, &g, i, v, 3, 0, pixels); /* one grey scale for the volume's slices */
        put_class_caption(&t, &g, i, predicted, labels);
    }
    TRY(grid_close(&t, path));
cleanup:
    free(pixels);
    clnet_text_free(&t);
    return status;
}

/* ---- signals: a polyline a channel ------------------------------------------------------- */

/* The vertical range of a signal's drawn channels (finite values); widened when flat. */
static void signal_range(const float *x, int channels, int length, float *lo, float *hi) {
    *lo = INFINITY, *hi = -INFINITY;
    for (size_t j = 0; j < (size_t)channels * length; j++)
        if (isfinite(x[j])) *lo = fminf(*lo, x[j]), *hi = fmaxf(*hi, x[j]);
    if (!(*lo <= *hi)) *lo = 0, *hi = 1;
    if (*lo == *hi) *lo -= 0.5f, *hi += 0.5f;
}

typedef struct {
    double left, top, w, h; /* the plot area */
    float lo, hi;           /* its vertical range */
} trace_area;

/* One point of a path: M after a break (or at the start), L after a point. */
static void put_point(clnet_text *t, const trace_area *a, double x, float v, int *pen_down) {
    double y = a->top + a->h - ((double)v - a->lo) / ((double)a->hi - a->lo) * a->h;
    clnet_text_printf(t, "%s%s %s", *pen_down ? " L" : "M", clnet_svg_fixed(x, 1).s,
                      clnet_svg_fixed(y, 1).s);
    *pen_down = 1;
}

/* The points of s[from, to): all of them, or (a long signal) the first of its smallest and
 * largest, then the other, so the path keeps every peak. Non-finite values break the path. */
static void put_bucket(clnet_text *t, const trace_area *a, const float *s, int from, int to,
                       int length, int all, int *pen_down) {
    int low = -1, high = -1;
    for (int j = from; j < to; j++) {
        double x = a->left + (length > 1 ? a->w * j / (length - 1) : a->w / 2);
        if (!isfinite(s[j])) {
            *pen_down = 0;
            continue;
        }
        if (all) put_point(t, a, x, s[j], pen_down);
        if (low < 0 || s[j] < s[low]) low = j;
        if (high < 0 || s[j] > s[high]) high = j;
    }
    if (all || low < 0) return;
    int first = low < high ? low : high, second = low < high ? high : low;
    put_point(t, a, a->left + a->w * first / (length - 1), s[first], pen_down);
    if (second != first)
        put_point(t, a, a->left + a->w * second / (length - 1), s[second], pen_down);
}

/* Signal s (length) as a path in area a, in the given colour. */
static void put_trace(clnet_text *t, const trace_area *a, const float *s, int length,
                      const char *colour) {
    int columns = (int)a->w, all = length <= 2 * columns, pen_down = 0;
    clnet_text_printf(t,
                      "<path class=\"signal\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" "
                      "stroke-linejoin=\"round\" d=\"",
                      colour);
    if (length == 1 && isfinite(s[0])) { /* a point: a short level line */
        put_point(t, a, a->left + a->w / 2 - 2, s[0], &pen_down);
        put_point(t, a, a->left + a->w / 2 + 2, s[0], &pen_down);
    } else if (all) {
        put_bucket(t, a, s, 0, length, length, 1, &pen_down);
    } else {
        for (int c = 0; c < columns; c++)
            put_bucket(t, a, s, (int)((int64_t)c * length / columns),
                       (int)((int64_t)(c + 1) * length / columns), length, 0, &pen_down);
    }
    clnet_text_printf(t, "\"/>\n");
}

/* Sample i's box: a frame, the zero line when zero is in range, a path a channel. */
static void put_signal(clnet_text *t, const grid *g, int i, const float *x, int channels,
                       int length) {
    int bx, by;
    tile_at(g, i, 0, &bx, &by);
    clnet_text_printf(t,
                      "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
                      "stroke=\"#cccccc\"/>\n",
                      bx, by, g->box_w, g->box_h);
    trace_area a = {.left = bx + SIGNAL_PAD,
                    .top = by + SIGNAL_PAD,
                    .w = g->box_w - 2 * SIGNAL_PAD,
                    .h = g->box_h - 2 * SIGNAL_PAD};
    int drawn = channels < CLNET_PLOT_COLOURS ? channels : CLNET_PLOT_COLOURS;
    signal_range(x, drawn, length, &a.lo, &a.hi);
    if (a.lo < 0 && a.hi > 0) {
        double y = a.top + a.h * a.hi / ((double)a.hi - a.lo);
        clnet_text_printf(t, "<line x1=\"%d\" y1=\"%s\" x2=\"%d\" y2=\"%s\" stroke=\"#dddddd\"/>\n",
                          bx, clnet_svg_fixed(y, 1).s, bx + g->box_w, clnet_svg_fixed(y, 1).s);
    }
    for (int ch = 0; ch < drawn; ch++)
        put_trace(t, &a, x + (size_t)ch * length, length, clnet_plot_palette[ch]);
}

clnet_status clnet_write_signal_predictions_svg(const char *path, const float *signals,
                                                int channels, int length, int n,
                                                const int *predicted, const int32_t *labels) {
    static const char *const FN = "clnet_write_signal_predictions_svg";
    clnet_status status = CLNET_OK;
    clnet_text t = {0};
    TRY(check_args(FN, path, signals, n, (const char *const[]){"channels", "length"},
                   (int[]){channels, length}, 2, 1 << 30));
    if (!predicted) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s %s: NULL predicted", FN, path);
    grid g = grid_make(n, 1, SIGNAL_W, SIGNAL_H, 4, 0);
    grid_open(&t, &g, 0);
    for (int i = 0; i < n; i++) {
        put_signal(&t, &g, i, signals + (size_t)i * channels * length, channels, length);
        put_class_caption(&t, &g, i, predicted, labels);
    }
    TRY(grid_close(&t, path));
cleanup:
    clnet_text_free(&t);
    return status;
}

/* ---- class maps: input | predicted | true ------------------------------------------------ */

/* Class map m (H x W) as RGB pixels: class k in the palette's colour k, repeating after ten. */
static void map_pixels(const int *m, size_t positions, unsigned char *out) {
    unsigned char rgb[CLNET_PLOT_COLOURS][3];
    for (int k = 0; k < CLNET_PLOT_COLOURS; k++) {
        unsigned r = 0, g = 0, b = 0;
        sscanf(clnet_plot_palette[k] + 1, "%2x%2x%2x", &r, &g, &b);
        rgb[k][0] = (unsigned char)r, rgb[k][1] = (unsigned char)g, rgb[k][2] = (unsigned char)b;
    }
    for (size_t p = 0; p < positions; p++) memcpy(out + 3 * p, rgb[m[p] % CLNET_PLOT_COLOURS], 3);
}

/* Every class of the maps in [0, classes); else which is not. */
static clnet_status check_maps(const char *path, const char *which, const int *m, int n,
                               size_t positions, int classes) {
    for (size_t p = 0; p < (size_t)n * positions; p++)
        if (m[p] < 0 || m[p] >= classes)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                              "clnet_write_class_maps_svg %s: %s class %d of sample %zu at "
                              "position %zu is not 0 to %d",
                              path, which, m[p], p / positions, p % positions, classes - 1);
    return CLNET_OK;
}

/* Under the grid: each class's colour (ten at most), and a word when colours repeat. */
static void put_class_legend(clnet_text *t, const grid *g, int classes) {
    int y = g->height, x = MARGIN;
    for (int k = 0; k < classes && k < CLNET_PLOT_COLOURS; k++, x += 44)
        clnet_text_printf(t,
                          "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                          "<text class=\"legend\" x=\"%d\" y=\"%d\" font-size=\"12\">%d</text>\n",
                          x, y, clnet_plot_palette[k], x + 16, y + 11, k);
    if (classes > CLNET_PLOT_COLOURS)
        clnet_text_printf(t,
                          "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#666666\">"
                          "(colours repeat every %d classes)</text>\n",
                          x, y + 11, CLNET_PLOT_COLOURS);
}

/* Sample i's tiles: the image in grey (or colour), then its maps; "right of all" under it. */
static void put_class_maps(clnet_text *t, const grid *g, int i, const view *image,
                           const int *predicted, const int *truth, unsigned char *pixels) {
    size_t positions = (size_t)image->rows * image->cols;
    put_views(t, g, i, image, 1, 0, pixels);
    map_pixels(predicted, positions, pixels);
    put_image(t, g, i, 1, pixels, image->cols, image->rows, 3);
    if (!truth) return;
    map_pixels(truth, positions, pixels);
    put_image(t, g, i, 2, pixels, image->cols, image->rows, 3);
    size_t right = 0;
    for (size_t p = 0; p < positions; p++) right += predicted[p] == truth[p];
    char text[64];
    snprintf(text, sizeof text, "%zu of %zu right", right, positions);
    put_caption(t, g, i, text, "#000000");
}

clnet_status clnet_write_class_maps_svg(const char *path, const clnet_class_maps *args) {
    static const char *const FN = "clnet_write_class_maps_svg";
    clnet_status status = CLNET_OK;
    clnet_text t = {0};
    unsigned char *pixels = NULL;
    if (!path) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s: NULL path", FN);
    if (!args) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s %s: NULL arguments", FN, path);
    const float *images = args->images;
    int channels = args->channels, height = args->height, width = args->width, n = args->n;
    const int *predicted = args->predicted, *truth = args->truth;
    int classes = args->classes;
    TRY(check_args(FN, path, images, n,
                   (const char *const[]){"channels", "height", "width", "classes"},
                   (int[]){channels, height, width, classes}, 4, MAX_SIDE));
    if (!predicted) FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s %s: NULL predicted", FN, path);
    size_t positions = (size_t)height * width, sample = (size_t)channels * positions;
    TRY(check_maps(path, "predicted", predicted, n, positions, classes));
    if (truth) TRY(check_maps(path, "true", truth, n, positions, classes));
    pixels = clnet_malloc(positions * 3);
    if (!pixels) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    int tiles = truth ? 3 : 2;
    grid g = grid_make(n, tiles, BOX, BOX, (ROW_TILES + tiles - 1) / tiles, 1);
    grid_open(&t, &g, LEGEND_ROOM);
    put_titles(&t, &g, (const char *const[]){"input", "predicted", "true"});
    for (int i = 0; i < n; i++) {
        view v = image_view(images + i * sample, channels, height, width);
        put_class_maps(&t, &g, i, &v, predicted + i * positions,
                       truth ? truth + i * positions : NULL, pixels);
    }
    put_class_legend(&t, &g, classes);
    TRY(grid_close(&t, path));
cleanup:
    free(pixels);
    clnet_text_free(&t);
    return status;
}
