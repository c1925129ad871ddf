/* Text that grows as it is written (files written in one piece: JSON
 * headers, SVG plots, the tuning database), in counted memory. A failed
 * allocation marks the text failed; later writes do nothing, and the writer
 * checks `failed` once at the end. */
#ifndef CLNET_TEXT_H
#define CLNET_TEXT_H

#include <stddef.h>

typedef struct {
    char *buf; /* NUL-terminated once anything is written; NULL before */
    size_t len, cap;
    int failed; /* 1: out of memory (or an encoding error) */
} clnet_text;

/* Appends n bytes of s. */
void clnet_text_add(clnet_text *t, const char *s, size_t n);
void clnet_text_str(clnet_text *t, const char *s);
void clnet_text_printf(clnet_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees the buffer and empties t. */
void clnet_text_free(clnet_text *t);

#endif
