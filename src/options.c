/* The layer kinds' option tables: reading a model line's key=value into a
 * node's configuration, the defaults, the words that describe each option
 * (its error messages and `clnet layers` use the same), and a node's value
 * read back by key (the tests' references). */
#include "error.h"
#include "layer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* CLNET_OPT_CHOICE writes an int into init= and bias_init='s enum. */
_Static_assert(sizeof(clnet_init_kind) == sizeof(int), "clnet_init_kind is not an int");

const clnet_choice clnet_on_off[] = {{"on", 1}, {"off", 0}, {NULL, 0}};
const clnet_choice clnet_off_on[] = {{"on", 0}, {"off", 1}, {NULL, 0}};
const clnet_choice clnet_init_choices[] = {{"normal", CLNET_INIT_NORMAL},
                                           {"xavier", CLNET_INIT_XAVIER},
                                           {"kaiming", CLNET_INIT_KAIMING},
                                           {"zeros", CLNET_INIT_ZEROS},
                                           {"uniform_fan_in", CLNET_INIT_UNIFORM_FAN_IN},
                                           {NULL, 0}};

static int parse_int(const char *s, int *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < -1000000000L || v > 1000000000L) return 0;
    *out = (int)v;
    return 1;
}

/* Up to `most` values "AxBxC", each >= min; how many in *got. 0 on bad input. */
static int parse_dims(const char *value, int most, int min, int *out, int *got) {
    *got = 0;
    const char *p = value;
    while (*got < most) {
        char part[24];
        const char *x = strchr(p, 'x');
        size_t len = x ? (size_t)(x - p) : strlen(p);
        if (len == 0 || len >= sizeof part) return 0;
        memcpy(part, p, len);
        part[len] = '\0';
        if (!parse_int(part, &out[*got]) || out[*got] < min) return 0;
        (*got)++;
        if (!x) return 1;
        p = x + 1;
    }
    return 0; /* more values than `most` */
}

/* What a value per axis looks like, by the number of axes. */
static const char *const dims_forms[] = {"", "N", "N or HxW", "N or DxHxW"};

clnet_status clnet_option_dims(const char *key, const char *value, int axes, int min, int *out) {
    int got = 0;
    if (!parse_dims(value, axes, min, out, &got) || (got != 1 && got != axes))
        return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected %s, each >= %d", key, value,
                          dims_forms[axes], min);
    for (int i = got; i < axes; i++) out[i] = out[0];
    return CLNET_OK;
}

clnet_status clnet_node_dims(const clnet_node *node, const char *key, const int *v, int count,
                             int fill, int out[3]) {
    int rank = node->in[0].ndim;
    if (count > 1 && count != rank) {
        char text[48];
        clnet_dims_text(v, count, text, sizeof text);
        return clnet_node_fail(node, "%s=%s gives %d values, the input has %d spatial axes", key,
                               text, count, rank);
    }
    int given[3];
    for (int i = 0; i < rank; i++) given[i] = count == 0 ? fill : v[count == 1 ? 0 : i];
    clnet_axes(rank, given, fill, out);
    return CLNET_OK;
}

clnet_status clnet_param_init_check(const clnet_param_init *p) {
    if (p->weight.kind == CLNET_INIT_NORMAL && !p->std_given)
        return clnet_fail(CLNET_ERR_FORMAT, "init=normal needs std=, e.g. 'init=normal std=0.01'");
    if (p->bias.kind == CLNET_INIT_NORMAL && !p->bias_std_given)
        return clnet_fail(
            CLNET_ERR_FORMAT,
            "bias_init=normal needs bias_std=, e.g. 'bias_init=normal bias_std=0.01'");
    if (p->std_given && p->weight.kind != CLNET_INIT_NORMAL)
        return clnet_fail(CLNET_ERR_FORMAT, "std= applies to init=normal only");
    if (p->no_bias && (p->bias_init_given || p->bias_std_given))
        return clnet_fail(CLNET_ERR_FORMAT, "bias=off has no bias to initialise: drop bias_init=");
    if (p->bias_std_given && p->bias.kind != CLNET_INIT_NORMAL)
        return clnet_fail(CLNET_ERR_FORMAT, "bias_std= applies to bias_init=normal only");
    return CLNET_OK;
}

const clnet_option *clnet_option_find(const clnet_option *table, const char *key) {
    for (const clnet_option *o = table; o && o->name; o++)
        if (strcmp(o->name, key) == 0) return o;
    return NULL;
}

void clnet_option_names(const clnet_option *table, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (const clnet_option *o = table; o && o->name && used < cap; o++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", o == table ? "" : " ", o->name);
}

/* "a, b or c" */
static void choice_text(const clnet_choice *c, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; c[i].name && used < cap; i++) {
        const char *sep = i == 0 ? "" : c[i + 1].name ? ", " : " or ";
        used += (size_t)snprintf(out + used, cap - used, "%s%s", sep, c[i].name);
    }
}

void clnet_option_expects(const clnet_option *o, char *out, size_t cap) {
    int min = (int)o->min;
    switch (o->type) {
    case CLNET_OPT_INT:
        snprintf(out, cap, "a whole number >= %d", min);
        break;
    case CLNET_OPT_FLOAT:
        if (o->range)
            snprintf(out, cap, "%s", o->range);
        else
            snprintf(out, cap, "a number >= %g", o->min);
        break;
    case CLNET_OPT_DIMS:
        snprintf(out, cap, "%s, each >= %d", dims_forms[o->axes], min);
        break;
    case CLNET_OPT_LIST:
        snprintf(out, cap, "N, or one value per spatial axis (LxK, DxHxW), each >= %d", min);
        break;
    case CLNET_OPT_CHOICE:
        choice_text(o->choices, out, cap);
        break;
    case CLNET_OPT_CUSTOM:
        snprintf(out, cap, "%s", o->expects);
        break;
    }
}

static clnet_status expected(const clnet_option *o, const char *value) {
    char text[160];
    clnet_option_expects(o, text, sizeof text);
    return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected %s", o->name, value, text);
}

/* A number >= min, then, with a range, within it (each with its own words). */
static clnet_status set_float(const clnet_option *o, const char *value, float *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end || !isfinite(v) || v < o->min)
        return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected a number >= %g", o->name, value,
                          o->min);
    if (o->range && (v > o->max || (o->above_min && !(v > o->min)))) return expected(o, value);
    *out = (float)v;
    return CLNET_OK;
}

/* The int at byte offset `at` of a configuration. */
static int *int_at(void *config, size_t at) {
    return (int *)(void *)((char *)config + at);
}

static clnet_status set_value(const clnet_option *o, void *config, const char *value) {
    int *ints = int_at(config, o->at);
    switch (o->type) {
    case CLNET_OPT_INT:
        return parse_int(value, ints) && *ints >= o->min ? CLNET_OK : expected(o, value);
    case CLNET_OPT_FLOAT:
        return set_float(o, value, (float *)(void *)ints);
    case CLNET_OPT_DIMS:
        return clnet_option_dims(o->name, value, o->axes, (int)o->min, ints);
    case CLNET_OPT_LIST:
        return parse_dims(value, CLNET_MAX_SPATIAL, (int)o->min, ints, int_at(config, o->count_at))
                   ? CLNET_OK
                   : expected(o, value);
    case CLNET_OPT_CHOICE:
        for (const clnet_choice *c = o->choices; c->name; c++)
            if (strcmp(value, c->name) == 0) return *ints = c->value, CLNET_OK;
        return expected(o, value);
    case CLNET_OPT_CUSTOM:
        return o->parse(o, config, value);
    }
    return expected(o, value);
}

clnet_status clnet_option_set(const clnet_option *o, void *config, const char *value) {
    clnet_status s = set_value(o, config, value);
    if (s == CLNET_OK && o->given_at) *int_at(config, o->given_at - 1) = 1;
    return s;
}

clnet_status clnet_option_defaults(const clnet_option *table, void *config) {
    for (const clnet_option *o = table; o && o->name; o++) {
        if (!o->value) continue;
        clnet_status s = set_value(o, config, o->value);
        if (s != CLNET_OK) return s;
    }
    return CLNET_OK;
}

/* The int at byte offset `at` of a configuration, read only. */
static const int *int_in(const void *config, size_t at) {
    return (const int *)(const void *)((const char *)config + at);
}

/* The name of a choice's value (the first, where two names share it). */
static const char *choice_name(const clnet_choice *c, int value) {
    for (; c->name; c++)
        if (c->value == value) return c->name;
    return NULL;
}

clnet_status clnet_option_get(const clnet_node *node, const char *key, clnet_option_value *out) {
    const clnet_option *o = clnet_option_find(node->kind->options, key);
    const void *config = node->config.bytes;
    *out = (clnet_option_value){.count = 1};
    if (!o || (o->type == CLNET_OPT_CUSTOM && !o->get))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "layer kind '%s' has no %soption '%s'",
                          node->kind->name, o ? "readable " : "", key);
    const int *ints = int_in(config, o->at);
    switch (o->type) {
    case CLNET_OPT_INT:
        out->ints[0] = *ints;
        break;
    case CLNET_OPT_FLOAT:
        out->number = *(const float *)(const void *)ints;
        break;
    case CLNET_OPT_DIMS:
    case CLNET_OPT_LIST:
        out->count = o->type == CLNET_OPT_DIMS ? o->axes : *int_in(config, o->count_at);
        memcpy(out->ints, ints, (size_t)out->count * sizeof *ints);
        break;
    case CLNET_OPT_CHOICE:
        out->ints[0] = *ints;
        out->word = choice_name(o->choices, *ints);
        break;
    case CLNET_OPT_CUSTOM:
        o->get(o, config, out);
        break;
    }
    return CLNET_OK;
}
