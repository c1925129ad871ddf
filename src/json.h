/* A small strict JSON reader for file headers: objects (members kept in text order), arrays,
 * strings (UTF-8 checked, every escape including \uXXXX surrogate pairs decoded), integers
 * and the literals true, false and null. Fractions and exponents are refused: no clnet
 * header needs them. Duplicate keys are kept; the caller decides what they mean. */
#ifndef CLNET_JSON_H
#define CLNET_JSON_H

#include "clnet.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
    CLNET_JSON_OBJECT,
    CLNET_JSON_ARRAY,
    CLNET_JSON_STRING,
    CLNET_JSON_INT,
    CLNET_JSON_TRUE,
    CLNET_JSON_FALSE,
    CLNET_JSON_NULL,
} clnet_json_kind;

typedef struct clnet_json clnet_json;
struct clnet_json {
    clnet_json_kind kind;
    size_t at;         /* byte offset of the value in the text, for messages */
    char *string;      /* STRING: decoded, NUL-terminated UTF-8 (never holds a NUL) */
    int64_t integer;   /* INT */
    int count;         /* OBJECT: members, ARRAY: items */
    char **keys;       /* OBJECT: the decoded keys */
    clnet_json *items; /* OBJECT: the values, ARRAY: the items */
};

/* Parses text[0..n): exactly one value with only whitespace around it, nested at most
 * max_depth arrays and objects deep. On failure: CLNET_ERR_FORMAT, message
 * "<what>: bad JSON at byte K: <reason>" (or CLNET_ERR_OUT_OF_MEMORY). */
clnet_status clnet_json_parse(const char *text, size_t n, const char *what, int max_depth,
                              clnet_json **out);

/* NULL is harmless. */
void clnet_json_free(clnet_json *v);

/* 1 when the NUL-terminated s is well-formed UTF-8 (no overlong forms, no surrogates). */
int clnet_json_utf8_valid(const char *s);

/* "object", "array", "string", "integer", "true", "false", "null". */
const char *clnet_json_kind_name(clnet_json_kind k);

#endif
