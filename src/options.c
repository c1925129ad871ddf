/* Parsing option values for the layer files: whole numbers, sizes per axis,
 * numbers, and the initialisation keys shared by layers with weights. */
#include "error.h"
#include "layer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int parse_int(const char *s, int *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < -1000000000L || v > 1000000000L) return 0;
    *out = (int)v;
    return 1;
}

clnet_status clnet_option_int(const char *key, const char *value, int min, int *out) {
    if (!parse_int(value, out) || *out < min)
        return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected a whole number >= %d", key, value,
                          min);
    return CLNET_OK;
}

clnet_status clnet_option_float(const char *key, const char *value, float min, float *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end || !isfinite(v) || v < min)
        return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected a number >= %g", key, value,
                          (double)min);
    *out = (float)v;
    return CLNET_OK;
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

clnet_status clnet_option_dims(const char *key, const char *value, int axes, int min, int *out) {
    static const char *const forms[] = {"", "N", "N or HxW", "N or DxHxW"};
    int got = 0;
    if (!parse_dims(value, axes, min, out, &got) || (got != 1 && got != axes))
        return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected %s, each >= %d", key, value,
                          forms[axes], min);
    for (int i = got; i < axes; i++) out[i] = out[0];
    return CLNET_OK;
}

clnet_status clnet_option_list(const char *key, const char *value, int min, int *out, int *count) {
    if (!parse_dims(value, CLNET_MAX_SPATIAL, min, out, count))
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s=%s: expected N, or one value per spatial axis (LxK, DxHxW), each "
                          ">= %d",
                          key, value, min);
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

static clnet_status init_kind(const char *key, const char *value, clnet_init_kind *out) {
    static const struct {
        const char *name;
        clnet_init_kind kind;
    } names[] = {{"normal", CLNET_INIT_NORMAL},
                 {"xavier", CLNET_INIT_XAVIER},
                 {"kaiming", CLNET_INIT_KAIMING},
                 {"zeros", CLNET_INIT_ZEROS},
                 {"uniform_fan_in", CLNET_INIT_UNIFORM_FAN_IN}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(value, names[i].name) == 0) return *out = names[i].kind, CLNET_OK;
    return clnet_fail(CLNET_ERR_FORMAT,
                      "%s=%s: expected normal, xavier, kaiming, zeros or uniform_fan_in", key,
                      value);
}

clnet_status clnet_param_init_option(clnet_param_init *p, const char *key, const char *value,
                                     int *known) {
    *known = 1;
    if (strcmp(key, "init") == 0) return init_kind(key, value, &p->weight.kind);
    if (strcmp(key, "bias_init") == 0) {
        p->bias_init_given = 1;
        return init_kind(key, value, &p->bias.kind);
    }
    if (strcmp(key, "bias") == 0) {
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected on or off", key, value);
        p->no_bias = strcmp(value, "off") == 0;
        return CLNET_OK;
    }
    if (strcmp(key, "std") == 0) {
        p->std_given = 1;
        return clnet_option_float(key, value, 0, &p->weight.std);
    }
    if (strcmp(key, "bias_std") == 0) {
        p->bias_std_given = 1;
        return clnet_option_float(key, value, 0, &p->bias.std);
    }
    *known = 0;
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
