/* Training curves as an SVG picture, with no dependency beyond libc and libm:
 *
 *   double epoch[3] = {1, 2, 3}, train[3] = {0.9, 0.5, 0.4}, test[3] = {0.7, 0.8, 0.85};
 *   clnet_plot_series loss[] = {{"train", epoch, train, 3}};
 *   clnet_plot_series acc[] = {{"test", epoch, test, 3}};
 *   TRY(clnet_plot_svg("curves.svg", "LeNet on Fashion-MNIST", "epoch", loss, 1, acc, 1));
 *
 * The picture is 1000x450 with two panels side by side, "loss" on the left and "accuracy" on
 * the right. Each panel has its own axes, chosen to hold all of its finite points, with ticks
 * at 1, 2 or 5 x 10^k (whole numbers on the x axis when every x is a whole number); the
 * accuracy axis spans at least 0..1. A series keeps its colour in both panels when its label
 * is the same. Points are joined in the order given and marked with dots (only the isolated
 * ones when a series has more than 200 points, so long per-step curves stay lines); a point
 * whose x or y is NaN or infinite is skipped and breaks the line there. */
#ifndef CLNET_PLOT_H
#define CLNET_PLOT_H

#include "clnet.h"
#include "text.h"

/* One curve: n points (x[i], y[i]). label may be NULL ("series <k>"). */
typedef struct {
    const char *label;
    const double *x;
    const double *y;
    int n;
} clnet_plot_series;

/* Writes the picture atomically: a temporary file next to path, then a rename, so a reader
 * sees the old picture or the new one, and a failure leaves no temporary file behind. title
 * and x_label may be NULL (left out); text is UTF-8 and is escaped for XML. A NULL path, a
 * negative count, a NULL array with a positive count, or a series with n < 0 or NULL x/y
 * while n > 0 gives CLNET_ERR_INVALID_ARGUMENT; a file that cannot be written CLNET_ERR_IO. */
clnet_status clnet_plot_svg(const char *path, const char *title, const char *x_label,
                            const clnet_plot_series *loss, int nloss, const clnet_plot_series *acc,
                            int nacc);

/* ---- what the SVG writers share (plot.c, samples.c) ------------------------------------- */

/* Tableau 10: colour-blind friendly and distinct, as "#rrggbb". */
#define CLNET_PLOT_COLOURS 10
extern const char *const clnet_plot_palette[CLNET_PLOT_COLOURS];

/* Text content or an attribute value into t: the five XML specials escaped, control characters
 * (which XML 1.0 forbids) dropped, bytes from 0x80 up passed on as UTF-8. */
void clnet_svg_escaped(clnet_text *t, const char *s);

/* v with `decimals` decimals (0..9), or as m.mmme+-X when too large for that; NaN and
 * infinities as 0. Integer arithmetic: an application's LC_NUMERIC cannot change it. */
typedef struct {
    char s[48];
} clnet_svg_number;
clnet_svg_number clnet_svg_fixed(double v, int decimals);

/* Writes t to path atomically (a temporary file next to it, then a rename);
 * CLNET_ERR_OUT_OF_MEMORY when t failed, CLNET_ERR_IO naming the file. */
clnet_status clnet_svg_write(const char *path, const clnet_text *t);

#endif
