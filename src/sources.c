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

clnet_status clnet_kernel_source(const char *family, char **out) {
    clnet_status status = CLNET_OK;
    char *common_owned = NULL, *family_owned = NULL;
    const char *common = NULL, *body = NULL;
    size_t common_len = 0, body_len = 0;
    *out = NULL;
    TRY(family_text("common", &common_owned, &common, &common_len));
    TRY(family_text(family, &family_owned, &body, &body_len));
    size_t cap = common_len + body_len + 128;
    char *text = clnet_malloc(cap);
    if (!text) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory composing kernel source");
    snprintf(text, cap, "#line 1 \"common.cl\"\n%.*s\n#line 1 \"%s.cl\"\n%.*s\n", (int)common_len,
             common, family, (int)body_len, body);
    *out = text;
cleanup:
    free(common_owned);
    free(family_owned);
    return status;
}
