/* A strict recursive-descent JSON reader (RFC 8259, integers only). */
#include "alloc.h"
#include "json.h"
#include "text.h"
#include "error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *s;
    size_t n, i;
    const char *what;
    int max_depth;
} parser;

static clnet_status bad(const parser *p, size_t at, const char *reason) {
    return clnet_fail(CLNET_ERR_FORMAT, "%s: bad JSON at byte %zu: %s", p->what, at, reason);
}

static clnet_status no_memory(const parser *p) {
    return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory reading the JSON header",
                      p->what);
}

static void skip_space(parser *p) {
    while (p->i < p->n &&
           (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

/* ---- strings ---------------------------------------------------------------- */

/* Appends code point cp as UTF-8. */
static void put_utf8(clnet_text *g, uint32_t cp) {
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp, n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6)), n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12)), n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18)), n = 4;
    }
    for (size_t k = 1; k < n; k++)
        b[k] = (unsigned char)(0x80 | ((cp >> (6 * (n - 1 - k))) & 0x3F));
    clnet_text_add(g, (const char *)b, n);
}

/* Length of the well-formed UTF-8 sequence at s[0..n), 0 if it is not one (overlong forms,
 * surrogates and code points past U+10FFFF are not). */
static size_t utf8_length(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len > n) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

static int hex4(const parser *p, size_t at, uint32_t *out) {
    if (at + 4 > p->n) return -1;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; k++) {
        unsigned char c = p->s[at + k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* At a backslash inside a string (string opened at `start`): decodes the escape into g. */
static clnet_status parse_escape(parser *p, size_t start, clnet_text *g) {
    size_t esc = p->i;
    if (p->i + 1 >= p->n) return bad(p, start, "string not closed");
    unsigned char e = p->s[p->i + 1];
    p->i += 2;
    static const char escapes[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
    const char *simple = e ? strchr(escapes, e) : NULL;
    if (simple) {
        clnet_text_add(g, &decoded[simple - escapes], 1);
        return CLNET_OK;
    }
    if (e != 'u')
        return bad(p, esc,
                   "unknown escape (JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                   "\\uXXXX)");
    uint32_t cp;
    if (hex4(p, p->i, &cp) != 0) return bad(p, esc, "\\u must be followed by four hex digits");
    p->i += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return bad(p, esc, "\\u escape is a lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low;
        if (p->i + 2 > p->n || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u' ||
            hex4(p, p->i + 2, &low) != 0 || low < 0xDC00 || low > 0xDFFF)
            return bad(p, esc, "\\u escape is a high surrogate without its low surrogate");
        p->i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (cp == 0) return bad(p, esc, "\\u0000 (a NUL character) is not supported in strings");
    put_utf8(g, cp);
    return CLNET_OK;
}

/* At an opening quote; on success *out is the decoded string (the caller frees it). */
static clnet_status parse_string(parser *p, char **out) {
    clnet_status status = CLNET_OK;
    clnet_text g = {0};
    size_t start = p->i;
    p->i++;                    /* the quote */
    clnet_text_add(&g, "", 0); /* "" is a string too: a buffer from the start */
    for (;;) {
        if (p->i >= p->n) {
            status = bad(p, start, "string not closed");
            goto cleanup;
        }
        unsigned char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            break;
        }
        if (c < 0x20) {
            status = bad(p, p->i, "control character inside a string (it must be escaped)");
            goto cleanup;
        }
        if (c == '\\') {
            TRY(parse_escape(p, start, &g));
            continue;
        }
        size_t len = c < 0x80 ? 1 : utf8_length(p->s + p->i, p->n - p->i);
        if (len == 0) {
            status = bad(p, p->i, "invalid UTF-8 inside a string");
            goto cleanup;
        }
        clnet_text_add(&g, (const char *)p->s + p->i, len);
        p->i += len;
    }
    if (g.failed) {
        status = no_memory(p);
        goto cleanup;
    }
    *out = g.buf;
    g.buf = NULL;
cleanup:
    clnet_text_free(&g);
    return status;
}

/* ---- values ----------------------------------------------------------------- */

static clnet_status parse_value(parser *p, clnet_json *v, int depth);

/* Makes room for one more item (and key) of a container and zeroes it. */
static int grow(clnet_json *v, int *cap) {
    if (v->count == INT_MAX) return -1;
    if (v->count == *cap) {
        int ncap = *cap ? (*cap > INT_MAX / 2 ? INT_MAX : 2 * *cap) : 4;
        clnet_json *items = clnet_realloc(v->items, (size_t)ncap * sizeof *items);
        if (!items) return -1;
        v->items = items;
        if (v->kind == CLNET_JSON_OBJECT) {
            char **keys = clnet_realloc(v->keys, (size_t)ncap * sizeof *keys);
            if (!keys) return -1;
            v->keys = keys;
        }
        *cap = ncap;
    }
    memset(&v->items[v->count], 0, sizeof v->items[0]);
    if (v->kind == CLNET_JSON_OBJECT) v->keys[v->count] = NULL;
    v->count++;
    return 0;
}

/* At '[' or '{'. Items are counted as soon as they exist, so a failure part-way leaves a
 * tree that clnet_json_free releases. */
static clnet_status parse_container(parser *p, clnet_json *v, int depth) {
    clnet_status status = CLNET_OK;
    int object = p->s[p->i] == '{';
    char close = object ? '}' : ']';
    int cap = 0;
    v->kind = object ? CLNET_JSON_OBJECT : CLNET_JSON_ARRAY;
    if (depth >= p->max_depth) {
        char reason[96];
        snprintf(reason, sizeof reason, "nested deeper than %d arrays and objects", p->max_depth);
        return bad(p, p->i, reason);
    }
    p->i++;
    skip_space(p);
    if (p->i < p->n && p->s[p->i] == (unsigned char)close) {
        p->i++;
        return CLNET_OK;
    }
    for (;;) {
        if (grow(v, &cap) != 0) return no_memory(p);
        if (object) {
            skip_space(p);
            if (p->i >= p->n || p->s[p->i] != '"')
                return bad(p, p->i, "expected a string key (in double quotes)");
            TRY(parse_string(p, &v->keys[v->count - 1]));
            skip_space(p);
            if (p->i >= p->n || p->s[p->i] != ':')
                return bad(p, p->i, "expected ':' after the key");
            p->i++;
        }
        TRY(parse_value(p, &v->items[v->count - 1], depth + 1));
        skip_space(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            skip_space(p);
            if (p->i < p->n && p->s[p->i] == (unsigned char)close)
                return bad(p, p->i, "trailing comma");
            continue;
        }
        if (p->i < p->n && p->s[p->i] == (unsigned char)close) {
            p->i++;
            return CLNET_OK;
        }
        return bad(p, p->i, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
cleanup:
    return status;
}

static clnet_status parse_integer(parser *p, clnet_json *v) {
    size_t start = p->i;
    int negative = 0;
    if (p->s[p->i] == '-') negative = 1, p->i++;
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
        return bad(p, start, "expected a digit after '-'");
    if (p->s[p->i] == '0' && p->i + 1 < p->n && p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9')
        return bad(p, start, "numbers must not have leading zeros");
    uint64_t mag = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        unsigned d = (unsigned)(p->s[p->i] - '0');
        if (mag > (UINT64_MAX - d) / 10) return bad(p, start, "integer out of range");
        mag = mag * 10 + d;
        p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E'))
        return bad(p, start, "only integers are allowed (no fractions or exponents)");
    if (negative ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return bad(p, start, "integer out of range");
    v->kind = CLNET_JSON_INT;
    v->integer = negative ? (int64_t)(0 - mag) : (int64_t)mag;
    return CLNET_OK;
}

static int literal(parser *p, const char *word) {
    size_t len = strlen(word);
    if (p->n - p->i < len || memcmp(p->s + p->i, word, len) != 0) return 0;
    p->i += len;
    return 1;
}

static clnet_status parse_value(parser *p, clnet_json *v, int depth) {
    skip_space(p);
    v->at = p->i;
    if (p->i >= p->n) return bad(p, p->i, "unexpected end (a value is missing)");
    unsigned char c = p->s[p->i];
    if (c == '{' || c == '[') return parse_container(p, v, depth);
    if (c == '"') {
        v->kind = CLNET_JSON_STRING;
        return parse_string(p, &v->string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_integer(p, v);
    if (literal(p, "true"))
        v->kind = CLNET_JSON_TRUE;
    else if (literal(p, "false"))
        v->kind = CLNET_JSON_FALSE;
    else if (literal(p, "null"))
        v->kind = CLNET_JSON_NULL;
    else
        return bad(p, p->i, "expected a value (object, array, string, integer, true, false, null)");
    return CLNET_OK;
}

clnet_status clnet_json_parse(const char *text, size_t n, const char *what, int max_depth,
                              clnet_json **out) {
    clnet_status status = CLNET_OK;
    parser p = {(const unsigned char *)text, n, 0, what ? what : "JSON", max_depth};
    clnet_json *root = NULL;
    if (!text || !out) FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_json_parse: NULL argument");
    *out = NULL;
    root = clnet_calloc(1, sizeof *root);
    if (!root) FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory reading the JSON header", p.what);
    root->kind = CLNET_JSON_NULL;
    TRY(parse_value(&p, root, 0));
    skip_space(&p);
    if (p.i < p.n) {
        status = bad(&p, p.i, "unexpected text after the value");
        goto cleanup;
    }
    *out = root;
    root = NULL;
cleanup:
    clnet_json_free(root);
    return status;
}

int clnet_json_utf8_valid(const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t len = utf8_length(u + i, n - i);
        if (len == 0) return 0;
        i += len;
    }
    return 1;
}

static void free_inside(clnet_json *v) {
    for (int k = 0; k < v->count; k++) {
        free_inside(&v->items[k]);
        if (v->keys) free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

void clnet_json_free(clnet_json *v) {
    if (!v) return;
    free_inside(v);
    free(v);
}

const char *clnet_json_kind_name(clnet_json_kind k) {
    switch (k) {
    case CLNET_JSON_OBJECT:
        return "object";
    case CLNET_JSON_ARRAY:
        return "array";
    case CLNET_JSON_STRING:
        return "string";
    case CLNET_JSON_INT:
        return "integer";
    case CLNET_JSON_TRUE:
        return "true";
    case CLNET_JSON_FALSE:
        return "false";
    case CLNET_JSON_NULL:
        return "null";
    }
    return "unknown";
}
