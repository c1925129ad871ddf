/* PNG pictures embedded in SVG: 8-bit grey or RGB pixels, deflated with zlib, written as base64
 * (what follows "data:image/png;base64," in an <image>'s href). */
#ifndef CLNET_PNG_H
#define CLNET_PNG_H

#include "text.h"

/* pixels: (h, w, colours) bytes, row by row; colours 1 (grey) or 3 (RGB). Appends the base64 of a
 * whole PNG file (signature, IHDR, one IDAT, IEND) to t; out of memory marks t failed. */
void clnet_png_base64(clnet_text *t, const unsigned char *pixels, int w, int h, int colours);

#endif
