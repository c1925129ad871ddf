/* Training curves as SVG 1.1: the picture is built in memory, then written to a temporary file
 * next to the target and renamed into place. Numbers are formatted with integer arithmetic, so
 * an application's LC_NUMERIC (a decimal comma) cannot break the file. */
#include "alloc.h"
#include "plot.h"
#include "text.h"
#include "fileio.h"
#include "error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- layout (pixels) ------------------------------------------------------------------- */
enum {
    WIDTH = 1000,
    HEIGHT = 450,
    PANEL_WIDTH = WIDTH / 2,
    PLOT_LEFT = 78,   /* from the panel's left edge: room for the y numbers and label */
    PLOT_RIGHT = 472, /* from the panel's left edge */
    PLOT_TOP = 72,
    PLOT_BOTTOM = 382,
    TARGET_TICKS = 5,     /* about this many intervals per axis */
    MARK_ALL_UP_TO = 200, /* longer series mark only their isolated points */
    LEGEND_LINE = 18,     /* height of one legend entry */
    LEGEND_CHAR = 7,      /* estimated width of one character at 12px */
    LEGEND_SWATCH = 34,   /* swatch and gap before the text */
    LEGEND_INSET = 10,    /* from the plot area's corner */
};
#define FONT "DejaVu Sans, Helvetica, Arial, sans-serif"
/* Colour-blind friendly and distinct (Tableau 10); after ten the colours repeat dashed. */
const char *const clnet_plot_palette[CLNET_PLOT_COLOURS] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define PALETTE  clnet_plot_palette
#define NCOLOURS CLNET_PLOT_COLOURS
/* Data beyond this magnitude is clamped, so that ranges and pixel positions stay finite. */
#define BIG 1e100

/* ---- escaped text (into a clnet_text) ----------------------------------------------- */
/* Text content or attribute value: the five XML specials escaped, control characters (which
 * XML 1.0 forbids) dropped. Bytes from 0x80 up pass through: the text is taken to be UTF-8. */
void clnet_svg_escaped(clnet_text *t, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&':
            clnet_text_printf(t, "&amp;");
            break;
        case '<':
            clnet_text_printf(t, "&lt;");
            break;
        case '>':
            clnet_text_printf(t, "&gt;");
            break;
        case '"':
            clnet_text_printf(t, "&quot;");
            break;
        case '\'':
            clnet_text_printf(t, "&apos;");
            break;
        default:
            if (c >= 0x20 && c != 0x7f) clnet_text_printf(t, "%c", c);
        }
    }
}

/* ---- numbers --------------------------------------------------------------------------- */
typedef clnet_svg_number num;

/* v with a fixed number of decimals (0..9), or as m.mmme±X when it is too large for that. */
num clnet_svg_fixed(double v, int decimals) {
    static const double p10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    num r;
    if (!isfinite(v)) v = 0;
    if (decimals < 0) decimals = 0;
    if (decimals > 9) decimals = 9;
    double scaled = v * p10[decimals];
    if (fabs(scaled) >= 9e15) {
        int e = (int)floor(log10(fabs(v)));
        double m = v / pow(10, e);
        if (fabs(m) >= 9.9995) {
            m /= 10;
            e++;
        }
        num mm = clnet_svg_fixed(m, 3);
        snprintf(r.s, sizeof r.s, "%.24se%d", mm.s, e);
        return r;
    }
    long long q = llround(scaled);
    unsigned long long a = q < 0 ? 0ull - (unsigned long long)q : (unsigned long long)q;
    unsigned long long unit = (unsigned long long)p10[decimals];
    const char *sign = q < 0 ? "-" : "";
    if (decimals == 0)
        snprintf(r.s, sizeof r.s, "%s%llu", sign, a);
    else
        snprintf(r.s, sizeof r.s, "%s%llu.%0*llu", sign, a / unit, decimals, a % unit);
    return r;
}

/* A pixel position. */
static num px(double v) {
    return clnet_svg_fixed(v, 1);
}

/* ---- axes ------------------------------------------------------------------------------ */
typedef struct {
    double lo, hi, step; /* lo and hi are multiples of step */
    int decimals;        /* for the tick numbers */
    int scientific;      /* tick numbers as m.mmme±X */
} axis;

/* Covers [lo, hi] with about TARGET_TICKS intervals of 1, 2 or 5 x 10^k; whole steps only
 * when whole is set. lo > hi means no data (0..1); lo == hi is widened around the value. */
static axis nice_axis(double lo, double hi, int whole) {
    axis a;
    if (!(lo <= hi)) {
        lo = 0;
        hi = 1;
    } else if (lo == hi) {
        double pad = whole ? 1 : (lo != 0 ? fabs(lo) * 0.1 : 0.5);
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / TARGET_TICKS;
    double mag = pow(10, floor(log10(raw)));
    double r = raw / mag;
    a.step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
    if (whole && a.step < 1) a.step = 1;
    a.lo = floor(lo / a.step + 1e-9) * a.step;
    a.hi = ceil(hi / a.step - 1e-9) * a.step;
    if (!(a.hi > a.lo)) a.hi = a.lo + a.step;
    int exp10 = (int)floor(log10(a.step) + 1e-9);
    a.decimals = exp10 < 0 ? -exp10 : 0;
    double biggest = fmax(fabs(a.lo), fabs(a.hi));
    a.scientific = a.decimals > 6 || biggest >= 1e9;
    return a;
}

static num tick_text(const axis *a, double v) {
    if (fabs(v) < a->step * 1e-6) v = 0; /* no "-0.0" or "1e-17" from rounding */
    if (!a->scientific) return clnet_svg_fixed(v, a->decimals);
    num r;
    if (v == 0) {
        snprintf(r.s, sizeof r.s, "0");
        return r;
    }
    int e = (int)floor(log10(fabs(v)));
    double m = v / pow(10, e);
    if (fabs(m) >= 9.9995) {
        m /= 10;
        e++;
    }
    num mm = clnet_svg_fixed(m, 2);
    /* 1.50 -> 1.5, 2.00 -> 2 */
    char *end = mm.s + strlen(mm.s);
    while (end > mm.s && end[-1] == '0') *--end = '\0';
    if (end > mm.s && end[-1] == '.') *--end = '\0';
    snprintf(r.s, sizeof r.s, "%.24se%d", mm.s, e);
    return r;
}

/* ---- panels ---------------------------------------------------------------------------- */
typedef struct {
    const char *name; /* "loss" or "accuracy" */
    const clnet_plot_series *series;
    int count;
    const int *colour;               /* colour number of each series */
    double left, right, top, bottom; /* the plot area */
    axis ax, ay;
    int has_points;
} panel;

static double clamp_big(double v) {
    return v > BIG ? BIG : v < -BIG ? -BIG : v;
}

static int point_ok(const clnet_plot_series *s, int i) {
    return isfinite(s->x[i]) && isfinite(s->y[i]);
}

static double map_x(const panel *p, double x) {
    return p->left + (clamp_big(x) - p->ax.lo) / (p->ax.hi - p->ax.lo) * (p->right - p->left);
}

static double map_y(const panel *p, double y) {
    return p->bottom - (clamp_big(y) - p->ay.lo) / (p->ay.hi - p->ay.lo) * (p->bottom - p->top);
}

/* Axes that hold every finite point; accuracy spans at least 0..1. */
static void panel_axes(panel *p, int accuracy) {
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    int whole = 1;
    p->has_points = 0;
    for (int k = 0; k < p->count; k++) {
        const clnet_plot_series *s = &p->series[k];
        for (int i = 0; i < s->n; i++) {
            if (!point_ok(s, i)) continue;
            double x = clamp_big(s->x[i]), y = clamp_big(s->y[i]);
            p->has_points = 1;
            xlo = fmin(xlo, x);
            xhi = fmax(xhi, x);
            ylo = fmin(ylo, y);
            yhi = fmax(yhi, y);
            if (x != floor(x)) whole = 0;
        }
    }
    if (accuracy) {
        ylo = fmin(ylo, 0);
        yhi = fmax(yhi, 1);
    }
    p->ax = nice_axis(xlo, xhi, p->has_points && whole);
    p->ay = nice_axis(ylo, yhi, 0);
}

static int utf8_length(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

static void series_label(const clnet_plot_series *s, int k, char *buf, size_t cap) {
    if (s->label)
        snprintf(buf, cap, "%s", s->label);
    else
        snprintf(buf, cap, "series %d", k + 1);
}

static int inside(double x, double y, double x0, double y0, double x1, double y1) {
    return x >= x0 && x <= x1 && y >= y0 && y <= y1;
}

/* The legend goes in the corner of the plot area that hides the fewest points and line
 * pieces: top right first, then bottom right, top left, bottom left. */
static void legend_place(const panel *p, double w, double h, double *lx, double *ly) {
    const double cx[4] = {p->right - LEGEND_INSET - w, p->right - LEGEND_INSET - w,
                          p->left + LEGEND_INSET, p->left + LEGEND_INSET};
    const double cy[4] = {p->top + LEGEND_INSET, p->bottom - LEGEND_INSET - h,
                          p->top + LEGEND_INSET, p->bottom - LEGEND_INSET - h};
    long best_hits = -1;
    for (int c = 0; c < 4; c++) {
        long hits = 0;
        for (int k = 0; k < p->count; k++) {
            const clnet_plot_series *s = &p->series[k];
            for (int i = 0; i < s->n; i++) {
                if (!point_ok(s, i)) continue;
                double x = map_x(p, s->x[i]), y = map_y(p, s->y[i]);
                hits += 4 * inside(x, y, cx[c], cy[c], cx[c] + w, cy[c] + h);
                if (i + 1 < s->n && point_ok(s, i + 1)) {
                    double x2 = map_x(p, s->x[i + 1]), y2 = map_y(p, s->y[i + 1]);
                    for (int j = 1; j < 8; j++) {
                        double f = j / 8.0;
                        hits += inside(x + f * (x2 - x), y + f * (y2 - y), cx[c], cy[c], cx[c] + w,
                                       cy[c] + h);
                    }
                }
            }
        }
        if (best_hits < 0 || hits < best_hits) {
            best_hits = hits;
            *lx = cx[c];
            *ly = cy[c];
        }
    }
}

static const char *dash(int colour) {
    return (colour / NCOLOURS) % 2 ? " stroke-dasharray=\"7 4\"" : "";
}

/* Long per-step curves are noisy: a thinner line keeps them from turning into a band. */
static const char *line_width(const clnet_plot_series *s) {
    return s->n <= MARK_ALL_UP_TO ? "2" : "1.2";
}

static void put_marker(clnet_text *t, double x, double y) {
    clnet_text_printf(t, "<circle cx=\"%s\" cy=\"%s\" r=\"3.5\"/>", px(x).s, px(y).s);
}

static void put_series(clnet_text *t, const panel *p, int k) {
    const clnet_plot_series *s = &p->series[k];
    const char *colour = PALETTE[p->colour[k] % NCOLOURS];
    int any = 0;
    for (int i = 0; i < s->n && !any; i++) any = point_ok(s, i);
    if (!any) return;
    /* One path per series; a skipped point starts a new piece with M. */
    clnet_text_printf(
        t, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" stroke-linejoin=\"round\"%s d=\"",
        colour, line_width(s), dash(p->colour[k]));
    int in_piece = 0, first = 1;
    for (int i = 0; i < s->n; i++) {
        if (!point_ok(s, i)) {
            in_piece = 0;
            continue;
        }
        clnet_text_printf(t, "%s%s%s %s", first ? "" : " ", in_piece ? "L" : "M",
                          px(map_x(p, s->x[i])).s, px(map_y(p, s->y[i])).s);
        in_piece = 1;
        first = 0;
    }
    clnet_text_printf(t, "\"/>\n");
    clnet_text_printf(t, "<g fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"1\">", colour);
    for (int i = 0; i < s->n; i++) {
        if (!point_ok(s, i)) continue;
        int isolated = (i == 0 || !point_ok(s, i - 1)) && (i + 1 >= s->n || !point_ok(s, i + 1));
        if (s->n <= MARK_ALL_UP_TO || isolated) put_marker(t, map_x(p, s->x[i]), map_y(p, s->y[i]));
    }
    clnet_text_printf(t, "</g>\n");
}

static void put_legend(clnet_text *t, const panel *p) {
    char label[256];
    int chars = 0;
    for (int k = 0; k < p->count; k++) {
        series_label(&p->series[k], k, label, sizeof label);
        int n = utf8_length(label);
        if (n > chars) chars = n;
    }
    double w = LEGEND_SWATCH + chars * LEGEND_CHAR + 10, h = p->count * LEGEND_LINE + 8;
    double lx = 0, ly = 0;
    legend_place(p, w, h, &lx, &ly);
    clnet_text_printf(
        t,
        "<g class=\"legend\"><rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" rx=\"3\" "
        "fill=\"#ffffff\" fill-opacity=\"0.88\" stroke=\"#bbbbbb\"/>\n",
        px(lx).s, px(ly).s, px(w).s, px(h).s);
    for (int k = 0; k < p->count; k++) {
        const char *colour = PALETTE[p->colour[k] % NCOLOURS];
        double y = ly + 4 + LEGEND_LINE * (k + 0.5);
        clnet_text_printf(
            t,
            "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" stroke-width=\"%s\"%s/>",
            px(lx + 8).s, px(y).s, px(lx + 28).s, px(y).s, colour, line_width(&p->series[k]),
            dash(p->colour[k]));
        if (p->series[k].n <= MARK_ALL_UP_TO) /* drawn as its points are */
            clnet_text_printf(
                t, "<circle cx=\"%s\" cy=\"%s\" r=\"3.5\" fill=\"%s\" stroke=\"#ffffff\"/>",
                px(lx + 18).s, px(y).s, colour);
        series_label(&p->series[k], k, label, sizeof label);
        clnet_text_printf(t,
                          "<text x=\"%s\" y=\"%s\" font-size=\"12\" dominant-baseline=\"central\">",
                          px(lx + LEGEND_SWATCH).s, px(y).s);
        clnet_svg_escaped(t, label);
        clnet_text_printf(t, "</text>\n");
    }
    clnet_text_printf(t, "</g>\n");
}

/* The grid, then ticks and their numbers; returns the characters of the widest y number. */
static int put_grid(clnet_text *t, const panel *p) {
    int nx = (int)lround((p->ax.hi - p->ax.lo) / p->ax.step);
    int ny = (int)lround((p->ay.hi - p->ay.lo) / p->ay.step);
    clnet_text_printf(t, "<g stroke=\"#e6e6e6\" stroke-width=\"1\">");
    for (int i = 1; i < nx; i++) {
        double x = map_x(p, p->ax.lo + i * p->ax.step);
        clnet_text_printf(t, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", px(x).s,
                          px(p->top).s, px(x).s, px(p->bottom).s);
    }
    for (int i = 1; i < ny; i++) {
        double y = map_y(p, p->ay.lo + i * p->ay.step);
        clnet_text_printf(t, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", px(p->left).s,
                          px(y).s, px(p->right).s, px(y).s);
    }
    clnet_text_printf(t, "</g>\n");
    clnet_text_printf(t, "<g stroke=\"#444444\" stroke-width=\"1\">");
    for (int i = 0; i <= nx; i++) {
        double x = map_x(p, p->ax.lo + i * p->ax.step);
        clnet_text_printf(t, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", px(x).s,
                          px(p->bottom).s, px(x).s, px(p->bottom + 5).s);
    }
    for (int i = 0; i <= ny; i++) {
        double y = map_y(p, p->ay.lo + i * p->ay.step);
        clnet_text_printf(t, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", px(p->left - 5).s,
                          px(y).s, px(p->left).s, px(y).s);
    }
    clnet_text_printf(t, "</g>\n");
    clnet_text_printf(t, "<g font-size=\"12\" fill=\"#333333\" text-anchor=\"middle\">");
    for (int i = 0; i <= nx; i++) {
        double v = p->ax.lo + i * p->ax.step;
        clnet_text_printf(t, "<text x=\"%s\" y=\"%s\">%s</text>", px(map_x(p, v)).s,
                          px(p->bottom + 19).s, tick_text(&p->ax, v).s);
    }
    clnet_text_printf(t, "</g>\n<g font-size=\"12\" fill=\"#333333\" text-anchor=\"end\">");
    int widest = 0;
    for (int i = 0; i <= ny; i++) {
        double v = p->ay.lo + i * p->ay.step;
        int w = (int)strlen(tick_text(&p->ay, v).s);
        if (w > widest) widest = w;
        clnet_text_printf(t, "<text x=\"%s\" y=\"%s\" dominant-baseline=\"central\">%s</text>",
                          px(p->left - 8).s, px(map_y(p, v)).s, tick_text(&p->ay, v).s);
    }
    clnet_text_printf(t, "</g>\n");
    return widest;
}

static void put_panel(clnet_text *t, const panel *p, const char *x_label) {
    double mid_x = (p->left + p->right) / 2, mid_y = (p->top + p->bottom) / 2;
    clnet_text_printf(t, "<g class=\"panel\">\n");
    clnet_text_printf(t,
                      "<text x=\"%s\" y=\"%s\" font-size=\"14\" font-weight=\"bold\" "
                      "text-anchor=\"middle\">%s</text>\n",
                      px(mid_x).s, px(p->top - 12).s, p->name);

    int widest = put_grid(t, p); /* characters in the widest y number */

    /* Axis labels: x_label under the numbers, the panel's name turned along the y axis. */
    if (x_label) {
        clnet_text_printf(t, "<text x=\"%s\" y=\"%s\" font-size=\"13\" text-anchor=\"middle\">",
                          px(mid_x).s, px(p->bottom + 42).s);
        clnet_svg_escaped(t, x_label);
        clnet_text_printf(t, "</text>\n");
    }
    /* The y label just left of the widest number, but inside the panel. */
    double yl = fmax(p->left - 8 - widest * LEGEND_CHAR - 12, p->left - PLOT_LEFT + 12);
    clnet_text_printf(t,
                      "<text x=\"%s\" y=\"%s\" font-size=\"13\" text-anchor=\"middle\" "
                      "transform=\"rotate(-90 %s %s)\">%s</text>\n",
                      px(yl).s, px(mid_y).s, px(yl).s, px(mid_y).s, p->name);

    if (!p->has_points)
        clnet_text_printf(
            t,
            "<text x=\"%s\" y=\"%s\" font-size=\"13\" fill=\"#888888\" text-anchor=\"middle\">"
            "no data</text>\n",
            px(mid_x).s, px(mid_y).s);
    /* The frame before the series, so that points on its edge stay whole. */
    clnet_text_printf(
        t,
        "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"#444444\"/>\n",
        px(p->left).s, px(p->top).s, px(p->right - p->left).s, px(p->bottom - p->top).s);
    for (int k = 0; k < p->count; k++) put_series(t, p, k);
    if (p->count > 0) put_legend(t, p);
    clnet_text_printf(t, "</g>\n");
}

/* ---- arguments, colours, the file ------------------------------------------------------- */
static clnet_status check_series(const char *what, const clnet_plot_series *s, int count) {
    if (count < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_plot_svg: %s count %d < 0", what,
                          count);
    if (count > 0 && !s)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_plot_svg: %s is NULL with count %d",
                          what, count);
    for (int k = 0; k < count; k++) {
        if (s[k].n < 0)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_plot_svg: %s series %d has n = %d",
                              what, k, s[k].n);
        if (s[k].n > 0 && (!s[k].x || !s[k].y))
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                              "clnet_plot_svg: %s series %d has a NULL x or y", what, k);
    }
    return CLNET_OK;
}

/* Series with the same label get the same colour in both panels; others get the next one. */
static void assign_colours(const clnet_plot_series *loss, int nloss, const clnet_plot_series *acc,
                           int nacc, int *colour) {
    int next = 0;
    for (int g = 0; g < nloss + nacc; g++) {
        const char *label = g < nloss ? loss[g].label : acc[g - nloss].label;
        colour[g] = -1;
        for (int h = 0; h < g && label; h++) {
            const char *other = h < nloss ? loss[h].label : acc[h - nloss].label;
            if (other && strcmp(label, other) == 0) {
                colour[g] = colour[h];
                break;
            }
        }
        if (colour[g] < 0) colour[g] = next++;
    }
}

clnet_status clnet_svg_write(const char *path, const clnet_text *t) {
    if (t->failed) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    clnet_atomic_file f;
    clnet_status s = clnet_atomic_open(&f, path);
    if (s == CLNET_OK) s = clnet_atomic_write(&f, t->buf, t->len);
    if (s == CLNET_OK) s = clnet_atomic_commit(&f);
    clnet_atomic_abort(&f);
    return s;
}

clnet_status clnet_plot_svg(const char *path, const char *title, const char *x_label,
                            const clnet_plot_series *loss, int nloss, const clnet_plot_series *acc,
                            int nacc) {
    clnet_status status = CLNET_OK;
    clnet_text t = {0};
    int *colour = NULL;
    if (!path) FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_plot_svg: NULL path");
    TRY(check_series("loss", loss, nloss));
    TRY(check_series("accuracy", acc, nacc));
    colour = clnet_malloc(sizeof *colour * (size_t)(nloss + nacc + 1));
    if (!colour) FAIL(CLNET_ERR_OUT_OF_MEMORY, "clnet_plot_svg %s: out of memory", path);
    assign_colours(loss, nloss, acc, nacc, colour);

    panel panels[2] = {
        {.name = "loss", .series = loss, .count = nloss, .colour = colour},
        {.name = "accuracy", .series = acc, .count = nacc, .colour = colour + nloss},
    };
    /* without accuracy series (a model without classes), the loss panel alone */
    int npanels = nacc > 0 ? 2 : 1, width = npanels * PANEL_WIDTH;
    clnet_text_printf(
        &t,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
        "viewBox=\"0 0 %d %d\" font-family=\"" FONT "\">\n",
        width, HEIGHT, width, HEIGHT);
    clnet_text_printf(&t, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                      width, HEIGHT);
    if (title) {
        clnet_text_printf(&t, "<title>");
        clnet_svg_escaped(&t, title);
        clnet_text_printf(&t,
                          "</title>\n<text x=\"%d\" y=\"30\" font-size=\"18\" font-weight=\"bold\" "
                          "text-anchor=\"middle\">",
                          width / 2);
        clnet_svg_escaped(&t, title);
        clnet_text_printf(&t, "</text>\n");
    }
    for (int i = 0; i < npanels; i++) {
        panel *p = &panels[i];
        p->left = i * PANEL_WIDTH + PLOT_LEFT;
        p->right = i * PANEL_WIDTH + PLOT_RIGHT;
        p->top = PLOT_TOP;
        p->bottom = PLOT_BOTTOM;
        panel_axes(p, i == 1);
        put_panel(&t, p, x_label);
    }
    clnet_text_printf(&t, "</svg>\n");
    TRY(clnet_svg_write(path, &t));
cleanup:
    free(colour);
    clnet_text_free(&t);
    return status;
}
