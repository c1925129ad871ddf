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

static clnet_status family_text(const char *family, char **owned, const char **text, size_t *len) {
    const char *dir = getenv("CLNET_KERNEL_DIR");
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

/* Appends "#line 1 "<family>.cl"" and the family's text to *text (of *len
 * characters), growing it. */
static clnet_status append_family(const char *family, char **text, size_t *len) {
    clnet_status status = CLNET_OK;
    char *owned = NULL;
    const char *body = NULL;
    size_t body_len = 0;
    TRY(family_text(family, &owned, &body, &body_len));
    size_t cap = *len + body_len + strlen(family) + 32;
    char *grown = clnet_realloc(*text, cap);
    if (!grown) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory composing kernel source");
    *text = grown;
    *len += (size_t)snprintf(grown + *len, cap - *len, "#line 1 \"%s.cl\"\n%.*s\n", family,
                             (int)body_len, body);
cleanup:
    free(owned);
    return status;
}

clnet_status clnet_kernel_source(const char *family, char **out) {
    clnet_status status = CLNET_OK;
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    TRY(append_family("common", &text, &len));
    /* the implicit and lanes convolutions run the tiled GEMM's micro-kernel */
    if (strcmp(family, "conv_implicit") == 0 || strcmp(family, "conv_lanes") == 0)
        TRY(append_family("gemm_tiled", &text, &len));
    if (strcmp(family, CLNET_SHARED_PROGRAM) == 0)
        for (int i = 0; i < SHARED_FAMILIES; i++)
            TRY(append_family(shared_families[i], &text, &len));
    else
        TRY(append_family(family, &text, &len));
    *out = text;
    text = NULL;
cleanup:
    free(text);
    return status;
}
