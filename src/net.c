/* Building a net from model-file lines, shapes, parameter layout, init. */
#include "net.h"
#include "coordinator.h"
#include "error.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clnet_status clnet_net_create(clnet_net **out) {
    if (!out) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory creating a net");
    clnet_sgd_defaults(&(*out)->sgd);
    return CLNET_OK;
}

void clnet_net_free(clnet_net *net) {
    if (!net) return;
    clnet_net_unbind(net);
    free(net->layers);
    free(net->params);
    free(net->momentum);
    free(net->grads);
    free(net);
}

/* ---- parsing one line ------------------------------------------------------ */

typedef struct {
    char key[32];
    char value[96];
} option;

/* Splits "kind k=v k=v" (comment stripped) into the kind and options. */
static clnet_status tokenize(const char *line, char *kind, size_t kind_cap, option *opts,
                             int *nopts, int max_opts) {
    *nopts = 0;
    kind[0] = '\0';
    const char *p = line;
    while (*p && *p != '#') {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p || *p == '#') break;
        const char *start = p;
        while (*p && !isspace((unsigned char)*p) && *p != '#')
            p++;
        size_t len = (size_t)(p - start);
        if (!kind[0]) {
            if (len >= kind_cap)
                return clnet_fail(CLNET_ERR_FORMAT, "layer kind '%.*s' is too long", (int)len,
                                  start);
            memcpy(kind, start, len);
            kind[len] = '\0';
            continue;
        }
        const char *eq = memchr(start, '=', len);
        if (!eq || eq == start || eq == start + len - 1)
            return clnet_fail(CLNET_ERR_FORMAT, "expected key=value, found '%.*s'", (int)len,
                              start);
        if (*nopts >= max_opts) return clnet_fail(CLNET_ERR_FORMAT, "too many options");
        option *o = &opts[(*nopts)++];
        size_t klen = (size_t)(eq - start), vlen = len - klen - 1;
        if (klen >= sizeof o->key || vlen >= sizeof o->value)
            return clnet_fail(CLNET_ERR_FORMAT, "option '%.*s' is too long", (int)len, start);
        memcpy(o->key, start, klen);
        o->key[klen] = '\0';
        memcpy(o->value, eq + 1, vlen);
        o->value[vlen] = '\0';
    }
    return CLNET_OK;
}

static int parse_int(const char *s, int *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < -1000000000L || v > 1000000000L) return 0;
    *out = (int)v;
    return 1;
}

/* "3" or "3x5" (height x width) */
static int parse_pair(const char *s, int *h, int *w) {
    const char *x = strchr(s, 'x');
    if (!x) {
        if (!parse_int(s, h)) return 0;
        *w = *h;
        return 1;
    }
    char a[48];
    size_t len = (size_t)(x - s);
    if (len == 0 || len >= sizeof a) return 0;
    memcpy(a, s, len);
    a[len] = '\0';
    return parse_int(a, h) && parse_int(x + 1, w);
}

static int parse_float(const char *s, float *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return 0;
    *out = (float)v;
    return 1;
}

static int parse_init(const char *s, clnet_init_kind *out) {
    static const struct {
        const char *name;
        clnet_init_kind kind;
    } names[] = {{"normal", CLNET_INIT_NORMAL},
                 {"xavier", CLNET_INIT_XAVIER},
                 {"kaiming", CLNET_INIT_KAIMING},
                 {"zeros", CLNET_INIT_ZEROS}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) return *out = names[i].kind, 1;
    return 0;
}

static int key_allowed(const clnet_layer_ops *ops, const char *key) {
    if (strcmp(key, "name") == 0 || strcmp(key, "input") == 0) return 1;
    size_t n = strlen(key);
    for (const char *k = ops->keys; *k;) {
        while (*k == ' ')
            k++;
        const char *end = k;
        while (*end && *end != ' ')
            end++;
        if ((size_t)(end - k) == n && strncmp(k, key, n) == 0) return 1;
        k = end;
    }
    return 0;
}

static clnet_status parse_input_line(clnet_net *net, const option *opts, int nopts) {
    int c = 0, h = 0, w = 0;
    if (net->has_input) return clnet_fail(CLNET_ERR_FORMAT, "the input is already declared");
    if (net->nlayers) return clnet_fail(CLNET_ERR_FORMAT, "'input' must come before any layer");
    for (int i = 0; i < nopts; i++) {
        int *dst = strcmp(opts[i].key, "channels") == 0 ? &c
                   : strcmp(opts[i].key, "height") == 0 ? &h
                   : strcmp(opts[i].key, "width") == 0  ? &w
                                                        : NULL;
        if (!dst)
            return clnet_fail(CLNET_ERR_FORMAT,
                              "unknown option '%s' for input (expected channels, height, width)",
                              opts[i].key);
        if (!parse_int(opts[i].value, dst) || *dst < 1 || *dst > 65535)
            return clnet_fail(CLNET_ERR_FORMAT, "input %s=%s: expected a whole number 1..65535",
                              opts[i].key, opts[i].value);
    }
    if (!c || !h || !w)
        return clnet_fail(CLNET_ERR_FORMAT, "input needs channels=, height= and width=, e.g. "
                                            "'input channels=1 height=28 width=28'");
    net->input = (clnet_shape){c, h, w};
    net->has_input = 1;
    return CLNET_OK;
}

/* "conv" for conv2d, "fc" for linear, ... and the number to give the next. */
static void default_name(const clnet_net *net, const clnet_layer_ops *ops, char *out, size_t cap) {
    const char *stem = ops == &clnet_conv2d_ops                                 ? "conv"
                       : ops == &clnet_linear_ops                               ? "fc"
                       : ops == &clnet_maxpool_ops || ops == &clnet_avgpool_ops ? "pool"
                       : ops->is_loss                                           ? "loss"
                                                                                : ops->kind;
    int count = 1;
    for (int i = 0; i < net->nlayers; i++) {
        const clnet_layer_ops *o = net->layers[i].ops;
        int same = o == ops || (strcmp(stem, "pool") == 0 &&
                                (o == &clnet_maxpool_ops || o == &clnet_avgpool_ops));
        count += same;
    }
    if (ops->is_loss)
        snprintf(out, cap, "loss");
    else
        snprintf(out, cap, "%s%d", stem, count);
}

static clnet_status apply_option(clnet_layer *l, const option *o) {
    const char *k = o->key, *v = o->value;
    int ok = 1;
    if (strcmp(k, "name") == 0) {
        ok = strlen(v) < sizeof l->name;
        for (const char *c = v; ok && *c; c++)
            ok = isalnum((unsigned char)*c) || *c == '_' || *c == '-';
        if (!ok)
            return clnet_fail(CLNET_ERR_FORMAT,
                              "name=%s: names are letters, digits, '_' and '-' (63 at most)", v);
        snprintf(l->name, sizeof l->name, "%s", v);
    } else if (strcmp(k, "filters") == 0) {
        ok = parse_int(v, &l->filters) && l->filters >= 1;
    } else if (strcmp(k, "units") == 0) {
        ok = parse_int(v, &l->units) && l->units >= 1;
    } else if (strcmp(k, "size") == 0) {
        ok = parse_pair(v, &l->kh, &l->kw) && l->kh >= 1 && l->kw >= 1;
    } else if (strcmp(k, "stride") == 0) {
        ok = parse_pair(v, &l->sh, &l->sw) && l->sh >= 1 && l->sw >= 1;
    } else if (strcmp(k, "pad") == 0) {
        ok = parse_pair(v, &l->ph, &l->pw) && l->ph >= 0 && l->pw >= 0;
    } else if (strcmp(k, "init") == 0) {
        ok = parse_init(v, &l->weight_init.kind);
    } else if (strcmp(k, "bias_init") == 0) {
        ok = parse_init(v, &l->bias_init.kind);
    } else if (strcmp(k, "std") == 0) {
        ok = parse_float(v, &l->weight_init.std) && l->weight_init.std >= 0;
    } else if (strcmp(k, "bias_std") == 0) {
        ok = parse_float(v, &l->bias_init.std) && l->bias_init.std >= 0;
    }
    if (!ok) {
        const char *want = strcmp(k, "init") == 0 || strcmp(k, "bias_init") == 0
                               ? "normal, xavier, kaiming or zeros"
                           : strcmp(k, "std") == 0 || strcmp(k, "bias_std") == 0 ? "a number >= 0"
                           : strcmp(k, "pad") == 0 ? "N or HxW, each >= 0"
                                                   : "N or HxW, each >= 1";
        return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: expected %s", k, v, want);
    }
    return CLNET_OK;
}

clnet_status clnet_net_add(clnet_net *net, const char *line) {
    clnet_status status = CLNET_OK;
    char kind[32];
    option opts[16];
    int nopts = 0;
    if (!net || !line)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_add: NULL argument");
    TRY(tokenize(line, kind, sizeof kind, opts, &nopts, 16));
    if (!kind[0]) return CLNET_OK; /* blank or comment */
    if (strcmp(kind, "input") == 0) return parse_input_line(net, opts, nopts);

    const clnet_layer_ops *ops = clnet_layer_find(kind);
    if (!ops) {
        char known[512] = "";
        for (int i = 0; clnet_layer_kinds[i]; i++) {
            strcat(known, i ? ", " : "");
            strcat(known, clnet_layer_kinds[i]->kind);
        }
        FAIL(CLNET_ERR_FORMAT, "unknown layer kind '%s' (known: input, %s)", kind, known);
    }
    if (!net->has_input)
        FAIL(CLNET_ERR_FORMAT,
             "the first line must declare the input, e.g. 'input channels=1 height=28 width=28'");
    if (net->nlayers && net->layers[net->nlayers - 1].ops->is_loss)
        FAIL(CLNET_ERR_FORMAT, "no layer may follow the loss layer '%s'",
             net->layers[net->nlayers - 1].name);
    if (net->initialised || net->replicas)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "layers cannot be added after the net is initialised");

    clnet_layer l;
    memset(&l, 0, sizeof l);
    l.ops = ops;
    l.sh = l.sw = 0; /* 0: not given */
    for (int i = 0; i < nopts; i++) {
        if (!key_allowed(ops, opts[i].key))
            FAIL(CLNET_ERR_FORMAT, "unknown option '%s' for %s (it takes: name input%s%s)",
                 opts[i].key, kind, *ops->keys ? " " : "", ops->keys);
        TRY(apply_option(&l, &opts[i]));
    }
    for (int i = 0; i < nopts; i++) {
        if (strcmp(opts[i].key, "input") != 0) continue;
        const char *prev = net->nlayers ? net->layers[net->nlayers - 1].name : "input";
        if (strcmp(opts[i].value, prev) != 0)
            FAIL(CLNET_ERR_FORMAT,
                 "input=%s: a layer can only read the layer before it ('%s') for now",
                 opts[i].value, prev);
    }
    if (l.sh == 0) { /* stride default: 1 for conv2d, the window for pools */
        int pool = ops == &clnet_maxpool_ops || ops == &clnet_avgpool_ops;
        l.sh = pool ? l.kh : 1;
        l.sw = pool ? l.kw : 1;
    }
    if (!l.name[0]) default_name(net, ops, l.name, sizeof l.name);
    for (int i = 0; i < net->nlayers; i++)
        if (strcmp(net->layers[i].name, l.name) == 0)
            FAIL(CLNET_ERR_FORMAT, "a layer named '%s' already exists", l.name);
    if (l.weight_init.kind == CLNET_INIT_NORMAL && l.weight_init.std == 0 && !strstr(line, "std="))
        FAIL(CLNET_ERR_FORMAT, "init=normal needs std=, e.g. 'init=normal std=0.01'");

    l.in = net->nlayers ? net->layers[net->nlayers - 1].out : net->input;
    if (ops == &clnet_flatten_ops || ops == &clnet_linear_ops || ops->is_loss) {
        /* these read the input as one vector: its length must fit an int */
        if (clnet_shape_size(l.in) > (size_t)INT32_MAX)
            FAIL(CLNET_ERR_FORMAT, "%s: an input of %zu values per sample is too large", kind,
                 clnet_shape_size(l.in));
    }
    TRY(ops->setup(&l));
    if (clnet_shape_size(l.out) > (size_t)INT32_MAX || (uint64_t)l.nweight > UINT32_MAX)
        FAIL(CLNET_ERR_FORMAT, "%s: %zu outputs per sample and %zu weights are too many", kind,
             clnet_shape_size(l.out), l.nweight);
    l.weight_off = net->nparams;
    l.bias_off = net->nparams + l.nweight;
    if (net->nlayers == net->cap) {
        int cap = net->cap ? net->cap * 2 : 16;
        clnet_layer *grown = realloc(net->layers, (size_t)cap * sizeof *grown);
        if (!grown) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory adding a layer");
        net->layers = grown;
        net->cap = cap;
    }
    net->layers[net->nlayers++] = l;
    net->nparams += l.nweight + l.nbias;
cleanup:
    return status;
}

clnet_status clnet_net_load(clnet_net **out, const char *path) {
    clnet_status status = CLNET_OK;
    clnet_net *net = NULL;
    FILE *f = NULL;
    char line[1024];
    int lineno = 0;
    if (!out || !path)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_load: NULL argument");
    *out = NULL;
    f = fopen(path, "r");
    if (!f) FAIL(CLNET_ERR_IO, "cannot open model file %s: %s", path, strerror(errno));
    TRY(clnet_net_create(&net));
    snprintf(net->source, sizeof net->source, "%s", path);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f))
            FAIL(CLNET_ERR_FORMAT, "%s:%d: line longer than %zu characters", path, lineno,
                 sizeof line - 2);
        status = clnet_net_add(net, line);
        if (status != CLNET_OK) {
            clnet_error_context(status, "%s:%d", path, lineno);
            goto cleanup;
        }
        if (net->nlayers) net->layers[net->nlayers - 1].line = lineno;
    }
    if (ferror(f)) FAIL(CLNET_ERR_IO, "error reading %s", path);
    status = clnet_net_check_complete(net);
    if (status != CLNET_OK) {
        clnet_error_context(status, "%s", path);
        goto cleanup;
    }
    *out = net;
    net = NULL;
cleanup:
    if (f) fclose(f);
    clnet_net_free(net);
    return status;
}

const clnet_layer *clnet_net_loss(const clnet_net *net) {
    if (!net || !net->nlayers || !net->layers[net->nlayers - 1].ops->is_loss) return NULL;
    return &net->layers[net->nlayers - 1];
}

clnet_status clnet_net_check_complete(const clnet_net *net) {
    if (!net->has_input) return clnet_fail(CLNET_ERR_FORMAT, "the net declares no input");
    if (!clnet_net_loss(net))
        return clnet_fail(CLNET_ERR_FORMAT,
                          "the net must end with a loss layer (softmax_cross_entropy)");
    return CLNET_OK;
}

/* ---- queries ------------------------------------------------------------------ */

int clnet_net_layer_count(const clnet_net *net) {
    return net ? net->nlayers : 0;
}

clnet_status clnet_net_layer_info(const clnet_net *net, int i, clnet_layer_info *out) {
    if (!net || !out || i < 0 || i >= net->nlayers)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "no layer %d", i);
    const clnet_layer *l = &net->layers[i];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", l->name);
    snprintf(out->kind, sizeof out->kind, "%s", l->ops->kind);
    out->out_c = l->out.c;
    out->out_h = l->out.h;
    out->out_w = l->out.w;
    out->params = l->nweight + l->nbias;
    return CLNET_OK;
}

void clnet_net_input_shape(const clnet_net *net, int *channels, int *height, int *width) {
    clnet_shape in = net && net->has_input ? net->input : (clnet_shape){0, 0, 0};
    if (channels) *channels = in.c;
    if (height) *height = in.h;
    if (width) *width = in.w;
}

size_t clnet_net_param_count(const clnet_net *net) {
    return net ? net->nparams : 0;
}

int clnet_net_classes(const clnet_net *net) {
    const clnet_layer *loss = clnet_net_loss(net);
    return loss ? (int)clnet_shape_size(loss->in) : 0;
}

/* ---- initialisation --------------------------------------------------------- */

/* splitmix64: small, fast, and the same everywhere */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform01(uint64_t *s) { /* (0, 1) */
    return ((double)(next_u64(s) >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(uint64_t *s) { /* Box-Muller */
    double u = uniform01(s), v = uniform01(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static void fill(float *w, size_t n, clnet_init init, clnet_init_kind fallback, int fan_in,
                 int fan_out, uint64_t *rng) {
    clnet_init_kind kind = init.kind == CLNET_INIT_DEFAULT ? fallback : init.kind;
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case CLNET_INIT_NORMAL:
            w[i] = (float)(init.std * normal(rng));
            break;
        case CLNET_INIT_KAIMING:
            w[i] = (float)(sqrt(2.0 / fan_in) * normal(rng));
            break;
        case CLNET_INIT_XAVIER: {
            double a = sqrt(6.0 / (fan_in + fan_out));
            w[i] = (float)(a * (2.0 * uniform01(rng) - 1.0));
            break;
        }
        default:
            w[i] = 0.0f;
            break;
        }
    }
}

clnet_status clnet_net_init(clnet_net *net, uint64_t seed) {
    if (!net) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_init: net is NULL");
    clnet_status s = clnet_net_check_complete(net);
    if (s != CLNET_OK) return s;
    if (!net->params) {
        net->params = calloc(net->nparams ? net->nparams : 1, sizeof(float));
        net->grads = calloc(net->nparams ? net->nparams : 1, sizeof(float));
        if (!net->params || !net->grads)
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %zu parameters",
                              net->nparams);
    }
    uint64_t rng = seed ^ 0x636c6e6574ull; /* "clnet" */
    for (int i = 0; i < net->nlayers; i++) {
        const clnet_layer *l = &net->layers[i];
        fill(net->params + l->weight_off, l->nweight, l->weight_init, CLNET_INIT_KAIMING, l->fan_in,
             l->fan_out, &rng);
        fill(net->params + l->bias_off, l->nbias, l->bias_init, CLNET_INIT_ZEROS, l->fan_in,
             l->fan_out, &rng);
    }
    if (net->momentum) memset(net->momentum, 0, net->nparams * sizeof(float));
    net->step = 0;
    net->initialised = 1;
    if (net->replicas) return clnet_coordinator_broadcast(net);
    return CLNET_OK;
}
