/* Checkpoints: parameters, buffers, optimizer state and progress as
 * safetensors. */
#include "checkpoint.h"
#include "alloc.h"
#include "error.h"
#include "safetensors.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT       "clnet-checkpoint-2"
#define FORMAT_0_1   "clnet-checkpoint-1"  /* clnet 0.1: still read */
#define VELOCITY_0_1 "optimizer.momentum." /* clnet 0.1's SGD velocity */
#define NAME_CAP     (CLNET_NAME_CAP + 64)

/* What an entry is: where its data lives. */
enum { PARAM, BUFFER, COUNTER, SLOT }; /* SLOT + s: optimizer state slot s */

/* Every tensor a checkpoint of m holds, once: where it lives on the host. */
typedef struct {
    char name[NAME_CAP];
    const clnet_tensor *t;
    int kind;
} entry;

/* Fills e (room for all) and returns the count: parameters, buffers, and
 * `slots` state slots of optimizer k ("optimizer.<k>.<slot>.<tensor>"). */
static int entries(const clnet_model *m, clnet_optimizer k, int slots, entry *e) {
    int count = 0;
    for (int pass = 0; pass <= slots; pass++) {
        for (int i = 0; i < m->count; i++) {
            const clnet_node *node = &m->nodes[i];
            for (int t = 0; t < node->nparams; t++) {
                entry *x = &e[count++];
                *x = (entry){.t = &node->params[t], .kind = pass ? SLOT + pass - 1 : PARAM};
                if (pass)
                    snprintf(x->name, NAME_CAP, "optimizer.%s.%s.%s.%s", clnet_optim_name(k),
                             clnet_optim_slot_name(k, pass - 1), node->name, x->t->suffix);
                else
                    snprintf(x->name, NAME_CAP, "%s.%s", node->name, x->t->suffix);
            }
            for (int t = 0; t < node->nbuffers && !pass; t++) {
                const clnet_tensor *b = &node->buffers[t];
                e[count] = (entry){.t = b, .kind = b->dtype == CLNET_DTYPE_I64 ? COUNTER : BUFFER};
                snprintf(e[count].name, NAME_CAP, "%s.%s", node->name, b->suffix);
                count++;
            }
        }
    }
    return count;
}

static int max_entries(const clnet_model *m) {
    return (1 + CLNET_OPTIM_SLOTS) * m->count * (2 * CLNET_MAX_TENSORS) + 1;
}

/* The state slots a checkpoint of o holds: those of its optimizer, once a
 * step has filled them (SGD's only with momentum). */
static int saved_slots(const clnet_optim *o) {
    int n = 0;
    while (o->ready && n < clnet_optim_slot_count(o->kind) && o->slot[n]) n++;
    return n;
}

/* One field of the monitor's or the plateau's record ("key=value" pairs): its key, its
 * place in the struct, an int or a double. */
typedef struct {
    const char *key;
    size_t at;
    int is_int;
} record_field;
#define MONITOR_FIELD(name, is_int)                                                                \
    { #name, offsetof(clnet_monitor, name), is_int }
#define PLATEAU_FIELD(name, is_int)                                                                \
    { #name, offsetof(clnet_plateau, name), is_int }
static const record_field MONITOR_FIELDS[] = {
    MONITOR_FIELD(maximize, 1),   MONITOR_FIELD(min_delta, 0),
    MONITOR_FIELD(patience, 1),   MONITOR_FIELD(epochs, 1),
    MONITOR_FIELD(last, 0),       MONITOR_FIELD(best, 0),
    MONITOR_FIELD(best_epoch, 1), MONITOR_FIELD(stop_best, 0),
    MONITOR_FIELD(wait, 1),       {NULL, 0, 0},
};
static const record_field PLATEAU_FIELDS[] = {
    PLATEAU_FIELD(maximize, 1),  PLATEAU_FIELD(factor, 0),        PLATEAU_FIELD(patience, 1),
    PLATEAU_FIELD(threshold, 0), PLATEAU_FIELD(threshold_abs, 1), PLATEAU_FIELD(cooldown, 1),
    PLATEAU_FIELD(min_lr, 0),    PLATEAU_FIELD(eps, 0),           PLATEAU_FIELD(epochs, 1),
    PLATEAU_FIELD(best, 0),      PLATEAU_FIELD(bad_epochs, 1),    PLATEAU_FIELD(cooldown_left, 1),
    PLATEAU_FIELD(scale, 0),     PLATEAU_FIELD(reductions, 1),    {NULL, 0, 0},
};

/* The struct at `base` as "key=value" pairs, doubles in 17 digits (they read back exactly). */
static void record_text(const record_field *fields, const void *base, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (const record_field *x = fields; x->key && used < cap; x++) {
        const char *at = (const char *)base + x->at;
        if (x->is_int)
            used += (size_t)snprintf(out + used, cap - used, "%s%s=%d", used ? " " : "", x->key,
                                     *(const int *)at);
        else
            used += (size_t)snprintf(out + used, cap - used, "%s%s=%.17g", used ? " " : "", x->key,
                                     *(const double *)at);
    }
}

/* record_text's pairs back into the struct at `base`: every field must be there. */
static clnet_status record_from(const record_field *fields, const char *text, void *base,
                                const char *path, const char *what) {
    for (const record_field *x = fields; x->key; x++) {
        size_t n = strlen(x->key);
        const char *p = text, *value = NULL;
        for (; p && *p; p = strchr(p, ' '), p = p ? p + 1 : NULL)
            if (strncmp(p, x->key, n) == 0 && p[n] == '=') {
                value = p + n + 1;
                break;
            }
        char *end = NULL;
        char *at = (char *)base + x->at;
        if (value && x->is_int) {
            errno = 0;
            long v = strtol(value, &end, 10);
            if (errno || v < -2147483647L || v > 2147483647L) end = NULL;
            if (end) *(int *)at = (int)v;
        } else if (value) {
            *(double *)at = strtod(value, &end);
        }
        if (!value || end == value || !end || (*end && *end != ' '))
            return clnet_fail(CLNET_ERR_FORMAT, "%s: metadata %s='%s': %s %s", path, what, text,
                              value ? "no number for" : "no", x->key);
    }
    return CLNET_OK;
}

clnet_status clnet_checkpoint_save(const clnet_model *m, const clnet_optim *o, const char *path,
                                   const clnet_progress *progress, const char *gemm_choices) {
    clnet_status status = CLNET_OK;
    int slots = saved_slots(o);
    entry *e = clnet_calloc((size_t)max_entries(m), sizeof *e);
    clnet_st_tensor *tensors = clnet_calloc((size_t)max_entries(m), sizeof *tensors);
    size_t model_cap = 200 * (size_t)m->count + 1;
    char *model = clnet_calloc(model_cap, 1);
    if (!e || !tensors || !model) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory saving %s", path);
    int count = entries(m, o->kind, slots, e);
    for (int i = 0; i < count; i++) {
        const clnet_tensor *t = e[i].t;
        const void *base[] = {m->params, m->buffers, m->counters, o->slot[0], o->slot[1]};
        tensors[i] = (clnet_st_tensor){.name = e[i].name,
                                       .ndim = t->ndim,
                                       .dtype = e[i].kind == COUNTER ? CLNET_ST_I64 : CLNET_ST_F32};
        tensors[i].data = e[i].kind == COUNTER
                              ? (const void *)(m->counters + t->offset)
                              : (const void *)((const float *)base[e[i].kind] + t->offset);
        for (int d = 0; d < t->ndim; d++) tensors[i].shape[d] = t->shape[d];
    }
    /* one line per node: name, kind, output shape, inputs */
    for (int i = 0; i < m->count; i++) {
        const clnet_node *node = &m->nodes[i];
        char shape[64];
        size_t used = strlen(model);
        clnet_shape_format(node->out, shape, sizeof shape);
        used += (size_t)snprintf(model + used, model_cap - used, "%s%s %s %s <-", i ? "\n" : "",
                                 node->name, node->kind->name, shape);
        for (int k = 0; k < node->ninputs && used < model_cap; k++)
            used += (size_t)snprintf(model + used, model_cap - used, "%s%s", k ? "," : " ",
                                     node->input_names[k]);
    }
    clnet_progress p = progress ? *progress : (clnet_progress){0};
    char step[32], epoch[32], position[32], data_seed[32], init_seed[32];
    snprintf(step, sizeof step, "%" PRId64, o->step);
    snprintf(epoch, sizeof epoch, "%d", p.epoch);
    snprintf(position, sizeof position, "%" PRId64, p.position);
    snprintf(data_seed, sizeof data_seed, "%" PRIu64, p.data_seed);
    snprintf(init_seed, sizeof init_seed, "%" PRIu64, p.init_seed);
    char mean[32], std[32], noise[32], noise_seed[32];
    snprintf(mean, sizeof mean, "%.9g", (double)p.mean);
    snprintf(std, sizeof std, "%.9g", (double)p.std);
    snprintf(noise, sizeof noise, "%.9g", (double)p.noise);
    snprintf(noise_seed, sizeof noise_seed, "%" PRIu64, p.noise_seed);
    char lr_scale[32], monitor[512], plateau[512];
    snprintf(lr_scale, sizeof lr_scale, "%.17g", o->lr_scale);
    record_text(MONITOR_FIELDS, &p.monitor, monitor, sizeof monitor);
    record_text(PLATEAU_FIELDS, &p.plateau, plateau, sizeof plateau);
    clnet_st_meta meta[20] = {
        {"format", FORMAT},
        {"clnet_version", clnet_version()},
        {"optimizer", clnet_optim_name(o->kind)},
        {"model", model},
        {"step", step},
        {"epoch", epoch},
        {"position", position},
        {"data_seed", data_seed},
        {"init_seed", init_seed},
    };
    int nmeta = 9;
    if (gemm_choices && *gemm_choices)
        meta[nmeta++] = (clnet_st_meta){"gemm_choices", gemm_choices};
    if (p.std != 0.0f) {
        meta[nmeta++] = (clnet_st_meta){"mean", mean};
        meta[nmeta++] = (clnet_st_meta){"std", std};
    }
    if (p.noise != 0.0f) {
        meta[nmeta++] = (clnet_st_meta){"noise", noise};
        meta[nmeta++] = (clnet_st_meta){"noise_seed", noise_seed};
    }
    if (o->lr_scale != 1.0) meta[nmeta++] = (clnet_st_meta){"lr_scale", lr_scale};
    if (p.monitor.epochs > 0) meta[nmeta++] = (clnet_st_meta){"monitor", monitor};
    if (p.plateau.epochs > 0) meta[nmeta++] = (clnet_st_meta){"plateau", plateau};
    p.run[sizeof p.run - 1] = '\0';
    if (p.run[0]) meta[nmeta++] = (clnet_st_meta){"run", p.run};
    p.class_names[sizeof p.class_names - 1] = '\0';
    if (p.class_names[0]) meta[nmeta++] = (clnet_st_meta){"class_names", p.class_names};
    TRY(clnet_st_save(path, tensors, count, meta, nmeta));
cleanup:
    free(e);
    free(tensors);
    free(model);
    return status;
}

static int parse_i64(const char *s, int64_t *out) {
    if (!s || !*s) return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0) return 0;
    *out = v;
    return 1;
}

static int parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-') return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

/* The file's name for entry e: SGD's velocity may carry clnet 0.1's name. */
static const char *file_name(const clnet_st_file *f, const entry *e, char *old, size_t cap) {
    const char *sgd = "optimizer.sgd.momentum.";
    if (e->kind != SLOT || strncmp(e->name, sgd, strlen(sgd)) != 0 ||
        clnet_st_info(f, e->name, NULL, NULL, NULL) == CLNET_OK)
        return e->name;
    snprintf(old, cap, "%s%s", VELOCITY_0_1, e->name + strlen(sgd));
    return old;
}

/* Which optimizer's state the file holds, and how many slots (0: none). */
static int file_state(const clnet_st_file *f, clnet_optimizer *k) {
    for (int i = 0; i < clnet_st_count(f); i++) {
        const char *name = clnet_st_name(f, i);
        if (strncmp(name, VELOCITY_0_1, strlen(VELOCITY_0_1)) == 0) {
            *k = CLNET_OPTIMIZER_SGD;
            return 1;
        }
        for (int o = CLNET_OPTIMIZER_SGD; o <= CLNET_OPTIMIZER_ADAMW; o++) {
            char prefix[32];
            snprintf(prefix, sizeof prefix, "optimizer.%s.", clnet_optim_name((clnet_optimizer)o));
            if (strncmp(name, prefix, strlen(prefix)) == 0) {
                *k = (clnet_optimizer)o;
                return clnet_optim_slot_count(*k);
            }
        }
    }
    return 0;
}

/* "noise" and "noise_seed", written together when the noise is not 0. */
static clnet_status noise_from(const clnet_st_file *f, const char *path, clnet_progress *p) {
    const char *noise = clnet_st_meta_get(f, "noise"), *seed = clnet_st_meta_get(f, "noise_seed");
    if (!noise && !seed) return CLNET_OK; /* trained without noise, or before clnet knew it */
    char *end = NULL;
    double d = noise ? strtod(noise, &end) : NAN;
    if (!noise || !seed || *end || !isfinite(d) || d < 0 || !parse_u64(seed, &p->noise_seed))
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: metadata noise='%s' noise_seed='%s' is no noise (a standard "
                          "deviation of 0 or more and a seed)",
                          path, noise ? noise : "(none)", seed ? seed : "(none)");
    p->noise = (float)d;
    return CLNET_OK;
}

static clnet_status progress_from(const clnet_st_file *f, const char *path, clnet_progress *p) {
    const char *keys[] = {"step", "epoch", "position", "data_seed", "init_seed"};
    memset(p, 0, sizeof *p);
    for (int k = 0; k < 5; k++) {
        const char *v = clnet_st_meta_get(f, keys[k]);
        if (!v) continue; /* a plain weights file (from Python, say) */
        int64_t i64 = 0;
        uint64_t u64 = 0;
        int ok = k < 3 ? parse_i64(v, &i64) : parse_u64(v, &u64);
        if (!ok || (k == 1 && i64 > 1000000000))
            return clnet_fail(CLNET_ERR_FORMAT, "%s: metadata %s='%s' is not a valid number", path,
                              keys[k], v);
        if (k == 0) p->step = i64;
        if (k == 1) p->epoch = (int)i64;
        if (k == 2) p->position = i64;
        if (k == 3) p->data_seed = u64;
        if (k == 4) p->init_seed = u64;
    }
    const char *mean = clnet_st_meta_get(f, "mean"), *std = clnet_st_meta_get(f, "std");
    if (mean && std) {
        char *end1 = NULL, *end2 = NULL;
        double m = strtod(mean, &end1), d = strtod(std, &end2);
        if (*end1 || *end2 || !isfinite(m) || !isfinite(d) || d <= 0)
            return clnet_fail(CLNET_ERR_FORMAT,
                              "%s: metadata mean='%s' std='%s' is no normalisation", path, mean,
                              std);
        p->mean = (float)m;
        p->std = (float)d;
    }
    const char *run = clnet_st_meta_get(f, "run");
    if (run && strlen(run) >= sizeof p->run)
        return clnet_fail(CLNET_ERR_FORMAT, "%s: metadata run is %zu bytes (at most %zu)", path,
                          strlen(run), sizeof p->run - 1);
    if (run) strcpy(p->run, run);
    const char *names = clnet_st_meta_get(f, "class_names");
    if (names && strlen(names) >= sizeof p->class_names)
        return clnet_fail(CLNET_ERR_FORMAT, "%s: metadata class_names is %zu bytes (at most %zu)",
                          path, strlen(names), sizeof p->class_names - 1);
    if (names) strcpy(p->class_names, names);
    const char *monitor = clnet_st_meta_get(f, "monitor"),
               *plateau = clnet_st_meta_get(f, "plateau");
    clnet_status s = CLNET_OK;
    if (monitor) s = record_from(MONITOR_FIELDS, monitor, &p->monitor, path, "monitor");
    if (s == CLNET_OK && plateau)
        s = record_from(PLATEAU_FIELDS, plateau, &p->plateau, path, "plateau");
    return s == CLNET_OK ? noise_from(f, path, p) : s;
}

/* "lr_scale", written when not 1 (clnet_net_set_lr_scale). */
static clnet_status lr_scale_from(const clnet_st_file *f, const char *path, double *scale) {
    const char *v = clnet_st_meta_get(f, "lr_scale");
    char *end = NULL;
    *scale = v ? strtod(v, &end) : 1.0;
    if (v && (end == v || *end || !(*scale > 0) || !isfinite(*scale)))
        return clnet_fail(CLNET_ERR_FORMAT, "%s: metadata lr_scale='%s' is no factor > 0", path, v);
    return CLNET_OK;
}

clnet_status clnet_checkpoint_progress(const char *path, clnet_progress *progress) {
    if (!path || !progress) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "a NULL argument");
    clnet_st_file *f = NULL;
    clnet_status status = clnet_st_load_header(path, &f);
    if (status != CLNET_OK) return status;
    const char *format = clnet_st_meta_get(f, "format");
    if (!format || (strcmp(format, FORMAT) != 0 && strcmp(format, FORMAT_0_1) != 0))
        status = clnet_fail(CLNET_ERR_FORMAT, "%s: not a clnet checkpoint (format '%s')", path,
                            format ? format : "(none)");
    else
        status = progress_from(f, path, progress);
    clnet_st_free(f);
    return status;
}

/* Fails on a tensor of the file that is none of the model's `count` entries. */
static clnet_status nothing_foreign(const clnet_st_file *f, const char *path, const entry *e,
                                    int count) {
    for (int i = 0; i < clnet_st_count(f); i++) {
        const char *name = clnet_st_name(f, i);
        int known = 0;
        for (int j = 0; j < count && !known; j++) {
            char old[NAME_CAP + 16];
            known = strcmp(name, file_name(f, &e[j], old, sizeof old)) == 0;
        }
        if (!known)
            return clnet_fail(CLNET_ERR_FORMAT, "%s: tensor '%s' is not part of this model", path,
                              name);
    }
    return CLNET_OK;
}

/* Copies entry e's tensor from the file into dst[e->kind] (floats) or counters. */
static clnet_status read_tensor(const clnet_st_file *f, const char *path, const entry *e,
                                float *const *dst, int64_t *counters) {
    const clnet_tensor *t = e->t;
    char old[NAME_CAP + 16];
    const char *name = file_name(f, e, old, sizeof old);
    const float *floats = NULL;
    const int64_t *ints = NULL;
    int ndim = 0;
    clnet_status s = e->kind == COUNTER
                         ? clnet_st_get_i64(f, name, t->ndim, t->shape, &ints, &ndim, NULL)
                         : clnet_st_get(f, name, t->ndim, t->shape, &floats, &ndim, NULL);
    if (s != CLNET_OK) return s;
    if (ndim != t->ndim)
        return clnet_fail(CLNET_ERR_FORMAT, "%s: tensor '%s' has %d dimensions, expected %d", path,
                          name, ndim, t->ndim);
    if (e->kind == COUNTER)
        memcpy(counters + t->offset, ints, t->count * sizeof(int64_t));
    else
        memcpy(dst[e->kind] + t->offset, floats, t->count * sizeof(float));
    return CLNET_OK;
}

clnet_status clnet_checkpoint_load(clnet_model *m, clnet_optim *o, const char *path,
                                   const void *bytes, size_t size, clnet_progress *progress,
                                   char **gemm_choices) {
    clnet_status status = CLNET_OK;
    clnet_st_file *f = NULL;
    entry *e = NULL;
    float *params = NULL, *buffers = NULL, *slot[CLNET_OPTIM_SLOTS] = {NULL};
    int64_t *counters = NULL;
    if (bytes)
        TRY(clnet_st_load_bytes(path, bytes, size, &f));
    else
        TRY(clnet_st_load(path, &f));
    const char *format = clnet_st_meta_get(f, "format");
    if (format && strcmp(format, FORMAT) != 0 && strcmp(format, FORMAT_0_1) != 0)
        FAIL(CLNET_ERR_FORMAT, "%s: checkpoint format '%s' is not %s", path, format, FORMAT);
    e = clnet_calloc((size_t)max_entries(m), sizeof *e);
    if (!e) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
    clnet_optimizer kind = o->kind;
    int slots = file_state(f, &kind);
    int count = entries(m, kind, slots, e);
    TRY(nothing_foreign(f, path, e, count));
    params = clnet_malloc((m->nparams + 1) * sizeof(float));
    buffers = clnet_malloc((m->nbuffers + 1) * sizeof(float));
    counters = clnet_malloc((m->ncounters + 1) * sizeof(int64_t));
    if (!params || !buffers || !counters)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
    for (int k = 0; k < slots; k++) {
        slot[k] = clnet_malloc((m->nparams + 1) * sizeof(float));
        if (!slot[k]) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
    }
    float *dst[] = {params, buffers, NULL, slot[0], slot[1]};
    for (int j = 0; j < count; j++) TRY(read_tensor(f, path, &e[j], dst, counters));
    clnet_progress p;
    TRY(progress_from(f, path, &p));
    double lr_scale = 1.0;
    TRY(lr_scale_from(f, path, &lr_scale));
    char *choices = NULL;
    const char *recorded = clnet_st_meta_get(f, "gemm_choices");
    if (gemm_choices && recorded) {
        choices = clnet_malloc(strlen(recorded) + 1);
        if (!choices) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
        strcpy(choices, recorded);
    }

    /* Everything checked: now change the model and the optimizer. */
    free(m->params), free(m->buffers), free(m->counters);
    m->params = params, m->buffers = buffers, m->counters = counters;
    params = buffers = NULL;
    counters = NULL;
    clnet_optim_release(o);
    for (int k = 0; k < slots; k++) {
        o->slot[k] = slot[k];
        slot[k] = NULL;
    }
    o->kind = kind;
    o->ready = slots > 0;
    o->step = p.step;
    o->lr_scale = lr_scale;
    if (progress) *progress = p;
    if (gemm_choices) *gemm_choices = choices;
cleanup:
    clnet_st_free(f);
    free(e), free(params), free(buffers), free(counters), free(slot[0]), free(slot[1]);
    return status;
}
