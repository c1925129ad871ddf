/* Building a model from model-file lines: parsing, names, the graph's order,
 * shapes, the parameter layout, initialisation. */
#include "model.h"
#include "alloc.h"
#include "error.h"
#include "random.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clnet_model_release(clnet_model *m) {
    clnet_fusion_free(m->fusion);
    free(m->nodes);
    free(m->params);
    free(m->buffers);
    free(m->counters);
    memset(m, 0, sizeof *m);
}

/* ---- one line: "kind key=value ..." ------------------------------------------ */

#define MAX_OPTIONS 24

typedef struct {
    char key[32];
    char value[160];
} option;

/* Splits "kind k=v k=v" (comment stripped) into the kind and options. */
static clnet_status tokenize(const char *text, char *kind, size_t kind_cap, option *opts,
                             int *nopts) {
    *nopts = 0;
    kind[0] = '\0';
    const char *p = text;
    while (*p && *p != '#') {
        while (isspace((unsigned char)*p)) p++; /* every blank the token loop stops at */
        if (!*p || *p == '#') break;
        const char *start = p;
        while (*p && !isspace((unsigned char)*p) && *p != '#') p++;
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
        if (*nopts >= MAX_OPTIONS) return clnet_fail(CLNET_ERR_FORMAT, "too many options");
        option *o = &opts[(*nopts)++];
        size_t klen = (size_t)(eq - start), vlen = len - klen - 1;
        if (klen >= sizeof o->key || vlen >= sizeof o->value)
            return clnet_fail(CLNET_ERR_FORMAT, "option '%.*s' is too long", (int)len, start);
        memcpy(o->key, start, klen);
        o->key[klen] = '\0';
        memcpy(o->value, eq + 1, vlen);
        o->value[vlen] = '\0';
        for (int i = 0; i < *nopts - 1; i++)
            if (strcmp(opts[i].key, o->key) == 0)
                return clnet_fail(CLNET_ERR_FORMAT, "option '%s' is given twice", o->key);
    }
    return CLNET_OK;
}

/* "input channels=C" and one of "length=L", "height=H width=W",
 * "depth=D height=H width=W". */
static clnet_status parse_input_line(clnet_model *m, const option *opts, int nopts) {
    int v[5] = {0};
    if (m->has_input) return clnet_fail(CLNET_ERR_FORMAT, "the input is already declared");
    if (m->count) return clnet_fail(CLNET_ERR_FORMAT, "'input' must come before any layer");
    for (int i = 0; i < nopts; i++) {
        int k = 0;
        while (k < 5 && strcmp(opts[i].key, clnet_shape_keys[k]) != 0) k++;
        if (k == 5)
            return clnet_fail(CLNET_ERR_FORMAT,
                              "unknown option '%s' for input (expected channels, and length, "
                              "height and width, or depth, height and width)",
                              opts[i].key);
        char *end = NULL;
        errno = 0;
        long x = strtol(opts[i].value, &end, 10);
        if (errno || end == opts[i].value || *end || x < 1 || x > 65535)
            return clnet_fail(CLNET_ERR_FORMAT, "input %s=%s: expected a whole number 1..65535",
                              opts[i].key, opts[i].value);
        v[k] = (int)x;
    }
    clnet_shape s = clnet_shape_from_sizes(v);
    if (!s.c)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "input needs channels= and height= width= (or length=, or depth= "
                          "height= width=), e.g. 'input channels=1 height=28 width=28'");
    m->input = s;
    m->has_input = 1;
    return CLNET_OK;
}

static int find_node(const clnet_model *m, const char *name) {
    for (int i = 0; i < m->count; i++)
        if (strcmp(m->nodes[i].name, name) == 0) return i;
    return -1;
}

static clnet_status check_name(const char *name) {
    int ok = strlen(name) < CLNET_NAME_CAP && strcmp(name, "input") != 0 && *name != '.';
    for (const char *c = name; ok && *c; c++)
        ok = isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-';
    if (!ok)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "name=%s: names are letters, digits, '_', '.' and '-' (%d at most), "
                          "and 'input' is the model's input",
                          name, CLNET_NAME_CAP - 1);
    return CLNET_OK;
}

/* "conv3" for the third node whose kind has the stem "conv"; "loss" for a loss. */
static void default_name(const clnet_model *m, const clnet_kind *kind, char *out, size_t cap) {
    const char *stem = kind->stem ? kind->stem : kind->name;
    if (kind->is_loss) {
        snprintf(out, cap, "%s", stem);
        return;
    }
    int count = 1;
    for (int i = 0; i < m->count; i++) {
        const clnet_kind *k = m->nodes[i].kind;
        count += strcmp(k->stem ? k->stem : k->name, stem) == 0;
    }
    snprintf(out, cap, "%s%d", stem, count);
}

/* "a,b,c" into the node's input names. */
static clnet_status parse_inputs(clnet_node *node, const char *value) {
    node->ninputs = 0;
    for (const char *p = value;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= CLNET_NAME_CAP || node->ninputs == CLNET_MAX_INPUTS)
            return clnet_fail(CLNET_ERR_FORMAT,
                              "input=%s: expected up to %d layer names separated by commas", value,
                              CLNET_MAX_INPUTS);
        memcpy(node->input_names[node->ninputs], p, len);
        node->input_names[node->ninputs++][len] = '\0';
        if (!comma) break;
        p = comma + 1;
    }
    return CLNET_OK;
}

/* name= and input=, which every layer takes: parse_node reads them into the
 * node itself (check_name, parse_inputs), so these rows only describe them. */
static const clnet_option node_options[] = {
    {.name = "name",
     .type = CLNET_OPT_CUSTOM,
     .expects = "letters, digits, '_', '.' and '-'",
     .help = "the layer's name, which input= and checkpoints use"},
    {.name = "input",
     .type = CLNET_OPT_CUSTOM,
     .expects = "layer names, comma separated",
     .without = "the line before",
     .help = "the layers it reads ('input': the model's input)"},
    {0},
};
#define NODE_OPTIONS ((int)(sizeof node_options / sizeof node_options[0]) - 1)

/* "unknown option 'x' for conv2d (it takes: name input filters ...)" */
static clnet_status unknown_option(const clnet_kind *kind, const char *key) {
    char common[32], own[512];
    clnet_option_names(node_options, common, sizeof common);
    clnet_option_names(kind->options, own, sizeof own);
    return clnet_fail(CLNET_ERR_FORMAT, "unknown option '%s' for %s (it takes: %s%s%s)", key,
                      kind->name, common, *own ? " " : "", own);
}

/* The node of one line, its options read through its kind's table. */
static clnet_status parse_node(clnet_model *m, const clnet_kind *kind, const option *opts,
                               int nopts, clnet_node *node) {
    clnet_status status = CLNET_OK;
    memset(node, 0, sizeof *node);
    node->kind = kind;
    if (kind->defaults) kind->defaults(node->config.bytes);
    TRY(clnet_option_defaults(kind->options, node->config.bytes));
    for (int i = 0; i < nopts; i++) {
        const char *k = opts[i].key, *v = opts[i].value;
        const clnet_option *o = clnet_option_find(kind->options, k);
        if (strcmp(k, "name") == 0) {
            TRY(check_name(v));
            snprintf(node->name, sizeof node->name, "%s", v);
        } else if (strcmp(k, "input") == 0) {
            TRY(parse_inputs(node, v));
        } else if (!o) {
            status = unknown_option(kind, k);
            goto cleanup;
        } else {
            TRY(clnet_option_set(o, node->config.bytes, v));
        }
    }
    if (kind->check) TRY(kind->check(node->config.bytes));
    if (!node->ninputs) { /* the line before */
        int before = m->last[0] ? find_node(m, m->last) : -1;
        if (before >= 0 && m->nodes[before].kind->is_loss)
            FAIL(CLNET_ERR_FORMAT, "no layer may follow the loss layer '%s'", m->last);
        node->ninputs = 1;
        snprintf(node->input_names[0], CLNET_NAME_CAP, "%s", before >= 0 ? m->last : "input");
    }
    const char *target = kind->target ? kind->target(node->config.bytes) : NULL;
    if (target && *target) { /* the last input */
        if (node->ninputs == CLNET_MAX_INPUTS)
            FAIL(CLNET_ERR_FORMAT, "target=%s: %s reads %d inputs already", target, kind->name,
                 node->ninputs);
        snprintf(node->input_names[node->ninputs++], CLNET_NAME_CAP, "%s", target);
    }
    if (node->ninputs < kind->min_inputs || node->ninputs > kind->max_inputs)
        FAIL(CLNET_ERR_FORMAT, "%s takes %d%s input%s, not %d", kind->name, kind->min_inputs,
             kind->max_inputs > kind->min_inputs ? " or more" : "", kind->max_inputs > 1 ? "s" : "",
             node->ninputs);
    if (!node->name[0]) default_name(m, kind, node->name, sizeof node->name);
    if (find_node(m, node->name) >= 0)
        FAIL(CLNET_ERR_FORMAT, "a layer named '%s' already exists", node->name);
cleanup:
    return status;
}

/* ---- the model-file reference: what each kind takes ------------------------------ */

/* The kind named `name`, or CLNET_ERR_INVALID_ARGUMENT naming the known ones. */
static clnet_status find_kind(const char *name, const clnet_kind **out) {
    *out = name ? clnet_kind_find(name) : NULL;
    if (*out) return CLNET_OK;
    char known[512];
    clnet_kind_list(known, sizeof known);
    return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "unknown layer kind '%s' (known: %s)",
                      name ? name : "(null)", known);
}

clnet_status clnet_layer_kind_options(const char *kind_name, int *count) {
    const clnet_kind *kind = NULL;
    clnet_status s = find_kind(kind_name, &kind);
    if (s != CLNET_OK) return s;
    if (!count) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_layer_kind_options: no count");
    *count = NODE_OPTIONS;
    for (const clnet_option *o = kind->options; o && o->name; o++) (*count)++;
    return CLNET_OK;
}

clnet_status clnet_layer_kind_option(const char *kind_name, int i, clnet_layer_option_info *out) {
    const clnet_kind *kind = NULL;
    int count = 0;
    clnet_status s = clnet_layer_kind_options(kind_name, &count);
    if (s != CLNET_OK) return s;
    if (!out || i < 0 || i >= count)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s has no option %d (it has %d)", kind_name,
                          i, count);
    find_kind(kind_name, &kind);
    const clnet_option *o = i < NODE_OPTIONS ? &node_options[i] : &kind->options[i - NODE_OPTIONS];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", o->name);
    clnet_option_expects(o, out->type, sizeof out->type);
    const char *stem = kind->stem ? kind->stem : kind->name, *fallback = o->without;
    if (o->value) fallback = o->value;
    if (o == &node_options[0] && kind->is_loss) /* default_name's rule */
        snprintf(out->default_text, sizeof out->default_text, "%s", stem);
    else if (o == &node_options[0])
        snprintf(out->default_text, sizeof out->default_text, "%s1, %s2, ...", stem, stem);
    else
        snprintf(out->default_text, sizeof out->default_text, "%s", fallback ? fallback : "");
    snprintf(out->help, sizeof out->help, "%s", o->help ? o->help : "");
    return CLNET_OK;
}

clnet_status clnet_layer_kind_about(const char *kind_name, const char **about) {
    const clnet_kind *kind = NULL;
    clnet_status s = find_kind(kind_name, &kind);
    if (s != CLNET_OK) return s;
    if (!about) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_layer_kind_about: no about");
    *about = kind->about ? kind->about : "";
    return CLNET_OK;
}

/* ---- resolving: names, order, shapes, layout -------------------------------------- */

clnet_shape clnet_model_source_shape(const clnet_model *m, int producer) {
    return producer == CLNET_MODEL_INPUT ? m->input : m->nodes[producer].out;
}

/* Finds a cycle among the unsorted nodes (placed[i] == 0), all of which
 * wait on one another, and describes it: "a -> b -> a". */
static clnet_status cycle_error(const clnet_model *m, const int *placed, int *bad) {
    int start = 0;
    while (placed[start]) start++;
    /* every unplaced node has an unplaced input: walk until a node repeats */
    int *seen = clnet_calloc((size_t)m->count, sizeof *seen), at = start, steps = 1;
    if (!seen) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    while (!seen[at]) {
        seen[at] = steps++;
        const clnet_node *n = &m->nodes[at];
        for (int k = 0; k < n->ninputs; k++)
            if (n->inputs[k] != CLNET_MODEL_INPUT && !placed[n->inputs[k]]) {
                at = n->inputs[k];
                break;
            }
    }
    char path[512] = "";
    size_t used = 0;
    int first = at;
    do { /* follow the cycle from `first`, written in data-flow order */
        used += (size_t)snprintf(path + used, sizeof path - used, "%s <- ", m->nodes[at].name);
        const clnet_node *n = &m->nodes[at];
        for (int k = 0; k < n->ninputs; k++)
            if (n->inputs[k] != CLNET_MODEL_INPUT && !placed[n->inputs[k]] && seen[n->inputs[k]]) {
                at = n->inputs[k];
                break;
            }
    } while (at != first && used < sizeof path);
    snprintf(path + (used < sizeof path ? used : sizeof path - 1),
             sizeof path - (used < sizeof path ? used : sizeof path - 1), "%s",
             m->nodes[first].name);
    free(seen);
    *bad = m->nodes[first].line;
    return clnet_fail(CLNET_ERR_FORMAT, "layers read each other in a cycle: %s", path);
}

/* Reorders the nodes so every node comes after its inputs, keeping the
 * order of the lines where it can (Kahn's algorithm, lowest line first). */
static clnet_status sort(clnet_model *m, int *bad) {
    clnet_status status = CLNET_OK;
    int n = m->count, *placed = clnet_calloc((size_t)n + 1, sizeof *placed);
    int *order = clnet_calloc((size_t)n + 1, sizeof *order), *where = NULL;
    clnet_node *sorted = clnet_calloc((size_t)n + 1, sizeof *sorted);
    where = clnet_calloc((size_t)n + 1, sizeof *where);
    if (!placed || !order || !sorted || !where) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    for (int done = 0; done < n; done++) {
        int next = -1;
        for (int i = 0; i < n && next < 0; i++) {
            if (placed[i]) continue;
            int ready = 1;
            for (int k = 0; k < m->nodes[i].ninputs && ready; k++)
                ready = m->nodes[i].inputs[k] == CLNET_MODEL_INPUT || placed[m->nodes[i].inputs[k]];
            if (ready) next = i;
        }
        if (next < 0) {
            status = cycle_error(m, placed, bad);
            goto cleanup;
        }
        placed[next] = 1;
        order[done] = next;
        where[next] = done;
    }
    for (int i = 0; i < n; i++) {
        sorted[i] = m->nodes[order[i]];
        for (int k = 0; k < sorted[i].ninputs; k++)
            if (sorted[i].inputs[k] != CLNET_MODEL_INPUT)
                sorted[i].inputs[k] = where[sorted[i].inputs[k]];
    }
    if (n) memcpy(m->nodes, sorted, (size_t)n * sizeof *sorted); /* a net of no layers: NULL */
cleanup:
    free(placed), free(order), free(sorted), free(where);
    return status;
}

/* Shapes node by node, then the offsets of every tensor. */
static clnet_status shapes_and_layout(clnet_model *m, int *bad) {
    clnet_status status = CLNET_OK;
    size_t params = 0, buffers = 0, counters = 0;
    for (int i = 0; i < m->count; i++) {
        clnet_node *node = &m->nodes[i];
        *bad = node->line;
        for (int k = 0; k < node->ninputs; k++) {
            int from = node->inputs[k];
            node->in[k] = clnet_model_source_shape(m, from);
            if (from != CLNET_MODEL_INPUT && m->nodes[from].kind->is_loss)
                FAIL(CLNET_ERR_FORMAT, "no layer may read the loss layer '%s'",
                     m->nodes[from].name);
        }
        node->nparams = node->nbuffers = 0;
        TRY(node->kind->setup(node));
        size_t out = clnet_shape_size(node->out);
        if (out > INT32_MAX) {
            status = clnet_node_fail(node, "%zu outputs per sample are too many", out);
            goto cleanup;
        }
        node->param_off = params;
        for (int t = 0; t < node->nparams; t++) {
            if (node->params[t].count > UINT32_MAX) {
                status = clnet_node_fail(node, "%zu weights are too many", node->params[t].count);
                goto cleanup;
            }
            node->params[t].offset = params;
            params += node->params[t].count;
        }
        node->param_count = params - node->param_off;
        for (int t = 0; t < node->nbuffers; t++) {
            clnet_tensor *b = &node->buffers[t];
            size_t *next = b->dtype == CLNET_DTYPE_I64 ? &counters : &buffers;
            b->offset = *next;
            *next += b->count;
        }
    }
    *bad = 0;
    m->nparams = params;
    m->nbuffers = buffers;
    m->ncounters = counters;
cleanup:
    return status;
}

/* Resolves the names; with strict 0, an unknown name leaves the model
 * unresolved without an error (a later line may define it). */
static clnet_status resolve(clnet_model *m, int strict, int *bad) {
    *bad = 0;
    m->resolved = 0;
    for (int i = 0; i < m->count; i++) {
        clnet_node *node = &m->nodes[i];
        for (int k = 0; k < node->ninputs; k++) {
            const char *want = node->input_names[k];
            int from = strcmp(want, "input") == 0 ? CLNET_MODEL_INPUT : find_node(m, want);
            if (from == i) {
                *bad = node->line;
                return clnet_fail(CLNET_ERR_FORMAT, "layer '%s' reads itself (input=%s)",
                                  node->name, want);
            }
            if (from == -1 && strcmp(want, "input") != 0) {
                if (!strict) return CLNET_OK;
                *bad = node->line;
                int target = node->kind->target && k == node->ninputs - 1 && k > 0;
                return clnet_fail(CLNET_ERR_FORMAT, "%s=%s: there is no layer named '%s'",
                                  target ? "target" : "input", want, want);
            }
            node->inputs[k] = from;
        }
    }
    clnet_status s = sort(m, bad);
    if (s == CLNET_OK) s = shapes_and_layout(m, bad);
    if (s == CLNET_OK) m->resolved = 1;
    return s;
}

clnet_status clnet_model_add(clnet_model *m, const char *text, int line) {
    clnet_status status = CLNET_OK;
    char kind_name[32];
    option opts[MAX_OPTIONS];
    int nopts = 0, bad = 0;
    TRY(tokenize(text, kind_name, sizeof kind_name, opts, &nopts));
    if (!kind_name[0]) return CLNET_OK; /* blank or comment */
    if (strcmp(kind_name, "input") == 0) return parse_input_line(m, opts, nopts);
    const clnet_kind *kind = clnet_kind_find(kind_name);
    if (!kind) {
        char known[512];
        clnet_kind_list(known, sizeof known);
        FAIL(CLNET_ERR_FORMAT, "unknown layer kind '%s' (known: input, %s)", kind_name, known);
    }
    if (!m->has_input)
        FAIL(CLNET_ERR_FORMAT,
             "the first line must declare the input, e.g. 'input channels=1 height=28 width=28'");
    if (m->params)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "layers cannot be added after the net is initialised");
    if (m->count == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        clnet_node *grown = clnet_realloc(m->nodes, (size_t)cap * sizeof *grown);
        if (!grown) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory adding a layer");
        m->nodes = grown;
        m->cap = cap;
    }
    clnet_node *node = &m->nodes[m->count];
    TRY(parse_node(m, kind, opts, nopts, node));
    node->line = line;
    char name[CLNET_NAME_CAP]; /* sorting may move the node */
    snprintf(name, sizeof name, "%s", node->name);
    m->count++;
    status = resolve(m, 0, &bad);
    if (status != CLNET_OK) { /* leave the model as it was */
        int at = find_node(m, name), ignored;
        memmove(&m->nodes[at], &m->nodes[at + 1], (size_t)(m->count - at - 1) * sizeof *node);
        m->count--;
        (void)resolve(m, 0, &ignored); /* it resolved (or waited on a name) before this line */
        goto cleanup;
    }
    snprintf(m->last, sizeof m->last, "%s", name);
    clnet_fusion_free(m->fusion); /* the graph changed: the next finish decides again */
    m->fusion = NULL;
cleanup:
    return status;
}

const clnet_node *clnet_model_loss(const clnet_model *m) {
    if (!m->resolved || !m->count || !m->nodes[m->count - 1].kind->is_loss) return NULL;
    return &m->nodes[m->count - 1];
}

int clnet_model_classes(const clnet_model *m) {
    const clnet_node *loss = clnet_model_loss(m);
    if (!loss) return 0;
    if (loss->kind->position_classes) {
        int classes = loss->kind->position_classes(loss);
        if (classes) return classes;
    }
    return (int)clnet_shape_size(loss->in[0]);
}

int clnet_model_positions(const clnet_model *m) {
    if (!clnet_model_is_classifier(m)) return 0;
    const clnet_node *loss = clnet_model_loss(m);
    return (int)(clnet_shape_size(loss->in[0]) / (size_t)clnet_model_classes(m));
}

size_t clnet_model_outputs(const clnet_model *m) {
    const clnet_node *loss = clnet_model_loss(m);
    return loss ? clnet_shape_size(loss->out) : 0;
}

size_t clnet_model_target_size(const clnet_model *m) {
    const clnet_node *loss = clnet_model_loss(m);
    return loss && loss->kind->data_targets ? loss->kind->data_targets(loss) : 0;
}

int clnet_model_is_classifier(const clnet_model *m) {
    const clnet_node *loss = clnet_model_loss(m);
    return loss && loss->kind->classifier;
}

clnet_status clnet_model_fold(const clnet_model *m, float *out) {
    memcpy(out, m->params, m->nparams * sizeof(float));
    return clnet_fusion_fold_params(m->fusion, m->nodes, m->params, m->buffers, out);
}

clnet_status clnet_model_finish(clnet_model *m, int *bad_line) {
    int bad = 0;
    *bad_line = 0;
    if (!m->has_input) return clnet_fail(CLNET_ERR_FORMAT, "the net declares no input");
    clnet_status s = resolve(m, 1, &bad);
    if (s != CLNET_OK) {
        *bad_line = bad;
        return s;
    }
    int losses = 0;
    for (int i = 0; i < m->count; i++) losses += m->nodes[i].kind->is_loss;
    if (!m->count || !m->nodes[m->count - 1].kind->is_loss || losses != 1)
        return clnet_fail(CLNET_ERR_FORMAT,
                          losses > 1 ? "the net must have one loss layer, not %d"
                                     : "the net must end with a loss layer "
                                       "(softmax_cross_entropy, mse, l1 or "
                                       "bce_with_logits)%.0d",
                          losses);
    for (int i = 0; i < m->count - 1; i++) { /* every node but the loss feeds someone */
        int read = 0;
        for (int j = i + 1; j < m->count && !read; j++)
            for (int k = 0; k < m->nodes[j].ninputs; k++) read |= m->nodes[j].inputs[k] == i;
        if (!read) {
            *bad_line = m->nodes[i].line;
            return clnet_fail(CLNET_ERR_FORMAT,
                              "layer '%s' is read by no layer: its output would be lost",
                              m->nodes[i].name);
        }
    }
    /* once: a finish again finds it decided, unless a line was added since */
    return m->fusion ? CLNET_OK : clnet_fusion_decide(&m->fusion, m->nodes, m->count);
}

/* ---- initialisation ------------------------------------------------------------ */

/* splitmix64 (random.h): small, fast, and the same everywhere */
static double uniform01(uint64_t *s) { /* (0, 1) */
    return ((double)(clnet_splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(uint64_t *s) { /* Box-Muller */
    double u = uniform01(s), v = uniform01(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static void fill(float *w, const clnet_tensor *t, uint64_t *rng) {
    for (size_t i = 0; i < t->count; i++) {
        switch (t->init.kind) {
        case CLNET_INIT_NORMAL:
            w[i] = (float)(t->init.std * normal(rng));
            break;
        case CLNET_INIT_KAIMING:
            w[i] = (float)(sqrt(2.0 / t->fan_in) * normal(rng));
            break;
        case CLNET_INIT_XAVIER: {
            double a = sqrt(6.0 / (t->fan_in + t->fan_out));
            w[i] = (float)(a * (2.0 * uniform01(rng) - 1.0));
            break;
        }
        case CLNET_INIT_UNIFORM_FAN_IN: {
            double a = 1.0 / sqrt((double)t->fan_in);
            w[i] = (float)(a * (2.0 * uniform01(rng) - 1.0));
            break;
        }
        case CLNET_INIT_CONSTANT:
            w[i] = t->init.value;
            break;
        default:
            w[i] = 0.0f;
            break;
        }
    }
}

void clnet_model_count_step(clnet_model *m) {
    for (int i = 0; i < m->count; i++)
        for (int b = 0; b < m->nodes[i].nbuffers; b++)
            if (m->nodes[i].buffers[b].dtype == CLNET_DTYPE_I64)
                m->counters[m->nodes[i].buffers[b].offset]++;
}

clnet_status clnet_model_alloc(clnet_model *m) {
    if (m->params) return CLNET_OK;
    m->params = clnet_calloc(m->nparams + 1, sizeof(float));
    m->buffers = clnet_calloc(m->nbuffers + 1, sizeof(float));
    m->counters = clnet_calloc(m->ncounters + 1, sizeof(int64_t));
    if (!m->params || !m->buffers || !m->counters) {
        free(m->params), free(m->buffers), free(m->counters);
        m->params = m->buffers = NULL;
        m->counters = NULL;
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %zu parameters", m->nparams);
    }
    return CLNET_OK;
}

clnet_status clnet_model_init(clnet_model *m, uint64_t seed) {
    clnet_status s = clnet_model_alloc(m);
    if (s != CLNET_OK) return s;
    uint64_t rng = seed ^ 0x636c6e6574ull; /* "clnet" */
    for (int i = 0; i < m->count; i++) {
        const clnet_node *node = &m->nodes[i];
        for (int t = 0; t < node->nparams; t++)
            fill(m->params + node->params[t].offset, &node->params[t], &rng);
        for (int t = 0; t < node->nbuffers; t++) {
            const clnet_tensor *b = &node->buffers[t];
            if (b->dtype == CLNET_DTYPE_I64)
                memset(m->counters + b->offset, 0, b->count * sizeof(int64_t));
            else
                fill(m->buffers + b->offset, b, &rng);
        }
    }
    return CLNET_OK;
}

void clnet_model_describe(const clnet_model *m, int buffers, size_t i, char *out, size_t cap) {
    for (int k = 0; k < m->count; k++) {
        const clnet_node *nd = &m->nodes[k];
        int count = buffers ? nd->nbuffers : nd->nparams;
        for (int j = 0; j < count; j++) {
            const clnet_tensor *t = buffers ? &nd->buffers[j] : &nd->params[j];
            if ((buffers && t->dtype != CLNET_DTYPE_F32) || i < t->offset ||
                i - t->offset >= t->count)
                continue;
            char where[300] = "";
            if (nd->line) snprintf(where, sizeof where, ", %s:%d", m->source, nd->line);
            snprintf(out, cap, "'%s.%s' (element %zu%s)", nd->name, t->suffix, i - t->offset,
                     where);
            return;
        }
    }
    snprintf(out, cap, "element %zu of the %s", i, buffers ? "buffers" : "parameters");
}
