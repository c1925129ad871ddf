/* Composing a kernel family's source text. */
#include "alloc.h"
#include "sources.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const clnet_embedded_source *find_embedded(const char *family) {
    for (const clnet_embedded_source *s = clnet_embedded_sources; s->family; s++)
        if (strcmp(s->family, family) == 0) return s;
    return NULL;
}

/* Reads dir/family.cl into a new string. */
static clnet_status read_override(const char *dir, const char *family, char **out, size_t *len) {
    clnet_status status = CLNET_OK;
    char path[4096];
    FILE *f = NULL;
    char *text = NULL;
    snprintf(path, sizeof path, "%s/%s.cl", dir, family);
    f = fopen(path, "rb");
    if (!f) FAIL(CLNET_ERR_IO, "cannot open kernel source %s (CLNET_KERNEL_DIR is set)", path);
    if (fseek(f, 0, SEEK_END) != 0) FAIL(CLNET_ERR_IO, "cannot read %s", path);
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) FAIL(CLNET_ERR_IO, "cannot read %s", path);
    text = clnet_malloc((size_t)n + 1);
    if (!text) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
    if (fread(text, 1, (size_t)n, f) != (size_t)n) FAIL(CLNET_ERR_IO, "cannot read %s", path);
    text[n] = '\0';
    *out = text;
    *len = (size_t)n;
    text = NULL;
cleanup:
    if (f) fclose(f);
    free(text);
    return status;
}

static clnet_status family_text(const char *family, const char *dir, char **owned,
                                const char **text, size_t *len) {
    *owned = NULL;
    if (dir && *dir) {
        clnet_status s = read_override(dir, family, owned, len);
        *text = *owned;
        return s;
    }
    const clnet_embedded_source *e = find_embedded(family);
    if (!e) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "no kernel family '%s'", family);
    *text = e->text;
    *len = e->length;
    return CLNET_OK;
}

/* The families built together as one program, CLNET_SHARED_PROGRAM, when a
 * kernel of theirs takes no build options (conv: the generic window kernels
 * and the layout moves; gemm: all but gemm_nn at other than 8 rows): on PoCL
 * a program costs about 0.1 s to build whatever its size (2-core EPYC VM,
 * PoCL 3.1: eight of these apart 0.72-1.08 s, together 0.21-0.33 s), and
 * most models use most of them. Each family's kernel and helper names are
 * its own. */
static const char *const shared_families[] = {"activation",  "batchnorm",   "conv",
                                              "dropout",     "elementwise", "gemm",
                                              "global_pool", "loss",        "upsample"};
enum { SHARED_FAMILIES = sizeof shared_families / sizeof *shared_families };

const char *clnet_program_of(const char *family, const char *options) {
    if (*options) return family;
    for (int i = 0; i < SHARED_FAMILIES; i++)
        if (strcmp(shared_families[i], family) == 0) return CLNET_SHARED_PROGRAM;
    return family;
}

/* A program's text as it is composed. */
typedef struct {
    char *s;
    size_t len, cap;
} source_text;

/* Appends s (n characters) to t, growing it. */
static clnet_status append_text(const char *s, size_t n, source_text *t) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *grown = clnet_realloc(t->s, cap);
        if (!grown)
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory composing kernel source");
        t->s = grown, t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
    return CLNET_OK;
}

#define INCLUDE       "#include \""
#define INCLUDE_DEPTH 4

/* Appends the family's text (from dir, when not NULL or empty) to *text,
 * each line `#include "<other>.cl"` (at a line's start) replaced by the other
 * family's text, that file's line numbers kept for the compiler's messages. */
static clnet_status append_family(const char *family, const char *dir, source_text *t, int depth) {
    clnet_status status = CLNET_OK;
    char *owned = NULL, mark[160];
    const char *body = NULL;
    size_t body_len = 0;
    TRY(family_text(family, dir, &owned, &body, &body_len));
    int n = snprintf(mark, sizeof mark, "#line 1 \"%s.cl\"\n", family);
    TRY(append_text(mark, (size_t)n, t));
    const char *at = body, *end = body + body_len;
    for (int line = 1; at < end; line++) {
        const char *eol = memchr(at, '\n', (size_t)(end - at));
        size_t span = eol ? (size_t)(eol - at) + 1 : (size_t)(end - at);
        size_t skip = strlen(INCLUDE);
        const char *close = span > skip && strncmp(at, INCLUDE, skip) == 0
                                ? memchr(at + skip, '"', span - skip)
                                : NULL;
        if (close && close - (at + skip) > 3 && strncmp(close - 3, ".cl", 3) == 0) {
            char other[64];
            int name = (int)(close - 3 - (at + skip));
            if (depth >= INCLUDE_DEPTH || name >= (int)sizeof other)
                FAIL(CLNET_ERR_INVALID_ARGUMENT, "%s.cl:%d: an #include too deep or too long",
                     family, line);
            snprintf(other, sizeof other, "%.*s", name, at + skip);
            TRY(append_family(other, dir, t, depth + 1));
            n = snprintf(mark, sizeof mark, "\n#line %d \"%s.cl\"\n", line + 1, family);
            TRY(append_text(mark, (size_t)n, t));
        } else {
            TRY(append_text(at, span, t));
        }
        at += span;
    }
    TRY(append_text("\n", 1, t));
cleanup:
    free(owned);
    return status;
}

clnet_status clnet_kernel_source(const char *family, const char *kernel_dir, char **out) {
    clnet_status status = CLNET_OK;
    source_text t = {0};
    *out = NULL;
    TRY(append_family("common", kernel_dir, &t, 0));
    if (strcmp(family, CLNET_SHARED_PROGRAM) == 0)
        for (int i = 0; i < SHARED_FAMILIES; i++)
            TRY(append_family(shared_families[i], kernel_dir, &t, 0));
    else
        TRY(append_family(family, kernel_dir, &t, 0));
    *out = t.s;
    t.s = NULL;
cleanup:
    free(t.s);
    return status;
}
