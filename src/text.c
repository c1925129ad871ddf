/* Growing text (text.h). */
#include "text.h"
#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for `more` bytes and a NUL after them. */
static int reserve(clnet_text *t, size_t more) {
    if (t->failed) return 0;
    if (t->len + more + 1 <= t->cap) return 1;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + more + 1) cap *= 2;
    char *b = clnet_realloc(t->buf, cap);
    if (!b) {
        t->failed = 1;
        return 0;
    }
    t->buf = b;
    t->cap = cap;
    return 1;
}

void clnet_text_add(clnet_text *t, const char *s, size_t n) {
    if (!reserve(t, n)) return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

void clnet_text_str(clnet_text *t, const char *s) {
    clnet_text_add(t, s, strlen(s));
}

void clnet_text_printf(clnet_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = 1;
        return;
    }
    if (!reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void clnet_text_free(clnet_text *t) {
    free(t->buf);
    *t = (clnet_text){0};
}
