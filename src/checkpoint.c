/* Checkpoints: the net's parameters, SGD velocity and progress as safetensors. */
#include "coordinator.h"
#include "error.h"
#include "net.h"
#include "safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT          "clnet-checkpoint-1"
#define MOMENTUM_PREFIX "optimizer.momentum."

/* The name of a parameter tensor: "<layer>.weight" or "<layer>.bias". */
static void tensor_name(char *out, size_t cap, const char *prefix, const clnet_layer *l, int bias) {
    snprintf(out, cap, "%s%s.%s", prefix, l->name, bias ? "bias" : "weight");
}

static clnet_st_tensor describe(const clnet_layer *l, int bias, const float *base,
                                const char *name) {
    clnet_st_tensor t = {.name = name};
    if (bias) {
        t.ndim = 1;
        t.shape[0] = (int64_t)l->nbias;
        t.data = base + l->bias_off;
    } else {
        t.ndim = l->weight_ndim;
        memcpy(t.shape, l->weight_shape, sizeof l->weight_shape);
        t.data = base + l->weight_off;
    }
    return t;
}

clnet_status clnet_net_save(const clnet_net *net, const char *path,
                            const clnet_progress *progress) {
    clnet_status status = CLNET_OK;
    clnet_st_tensor *tensors = NULL;
    char(*names)[96] = NULL;
    char *model = NULL;
    if (!net || !path)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_save: NULL argument");
    if (!net->initialised)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_net_save: the net has no parameters yet");
    int with_velocity = net->momentum && net->velocity_ready;
    int max = 4 * net->nlayers + 1, count = 0;
    tensors = calloc((size_t)max, sizeof *tensors);
    names = calloc((size_t)max, sizeof *names);
    size_t model_cap = 96 * (size_t)net->nlayers + 1;
    model = calloc(model_cap, 1);
    if (!tensors || !names || !model)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory saving %s", path);
    for (int pass = 0; pass < 1 + with_velocity; pass++) {
        for (int i = 0; i < net->nlayers; i++) {
            const clnet_layer *l = &net->layers[i];
            if (!l->nweight) continue;
            for (int bias = 0; bias < 2; bias++) {
                tensor_name(names[count], sizeof names[count], pass ? MOMENTUM_PREFIX : "", l,
                            bias);
                tensors[count] =
                    describe(l, bias, pass ? net->momentum : net->params, names[count]);
                count++;
            }
        }
    }
    for (int i = 0; i < net->nlayers; i++) {
        const clnet_layer *l = &net->layers[i];
        size_t used = strlen(model);
        snprintf(model + used, model_cap - used, "%s%s %s %dx%dx%d", i ? "\n" : "", l->name,
                 l->ops->kind, l->out.c, l->out.h, l->out.w);
    }
    clnet_progress p = progress ? *progress : (clnet_progress){0};
    p.step = net->step;
    char step[32], epoch[32], position[32], data_seed[32], init_seed[32];
    snprintf(step, sizeof step, "%" PRId64, p.step);
    snprintf(epoch, sizeof epoch, "%d", p.epoch);
    snprintf(position, sizeof position, "%" PRId64, p.position);
    snprintf(data_seed, sizeof data_seed, "%" PRIu64, p.data_seed);
    snprintf(init_seed, sizeof init_seed, "%" PRIu64, p.init_seed);
    clnet_st_meta meta[] = {
        {"format", FORMAT},       {"clnet_version", clnet_version()},
        {"model", model},         {"step", step},
        {"epoch", epoch},         {"position", position},
        {"data_seed", data_seed}, {"init_seed", init_seed},
    };
    TRY(clnet_st_save(path, tensors, count, meta, (int)(sizeof meta / sizeof meta[0])));
cleanup:
    free(tensors);
    free(names);
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

/* Copies the tensors named with prefix into dst (a params-shaped array). */
static clnet_status read_tensors(const clnet_net *net, const clnet_st_file *f, const char *prefix,
                                 float *dst) {
    for (int i = 0; i < net->nlayers; i++) {
        const clnet_layer *l = &net->layers[i];
        if (!l->nweight) continue;
        for (int bias = 0; bias < 2; bias++) {
            char name[96];
            tensor_name(name, sizeof name, prefix, l, bias);
            clnet_st_tensor want = describe(l, bias, dst, name);
            const float *data = NULL;
            clnet_status s = clnet_st_get(f, name, want.ndim, want.shape, &data, NULL, NULL);
            if (s != CLNET_OK) return s;
            memcpy((float *)want.data, data, (bias ? l->nbias : l->nweight) * sizeof(float));
        }
    }
    return CLNET_OK;
}

/* Is `name` one of the net's parameter tensors (with the prefix)? */
static int known_tensor(const clnet_net *net, const char *name, const char *prefix) {
    for (int i = 0; i < net->nlayers; i++) {
        if (!net->layers[i].nweight) continue;
        for (int bias = 0; bias < 2; bias++) {
            char want[96];
            tensor_name(want, sizeof want, prefix, &net->layers[i], bias);
            if (strcmp(want, name) == 0) return 1;
        }
    }
    return 0;
}

clnet_status clnet_net_load_weights(clnet_net *net, const char *path, clnet_progress *progress) {
    clnet_status status = CLNET_OK;
    clnet_st_file *f = NULL;
    float *params = NULL, *velocity = NULL;
    if (!net || !path)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_load_weights: NULL argument");
    TRY(clnet_net_check_complete(net));
    TRY(clnet_st_load(path, &f));
    const char *format = clnet_st_meta_get(f, "format");
    if (format && strcmp(format, FORMAT) != 0)
        FAIL(CLNET_ERR_FORMAT, "%s: checkpoint format '%s' is not %s", path, format, FORMAT);
    int has_velocity = 0;
    for (int i = 0; i < clnet_st_count(f); i++) {
        const char *name = clnet_st_name(f, i);
        int is_velocity = strncmp(name, MOMENTUM_PREFIX, strlen(MOMENTUM_PREFIX)) == 0;
        has_velocity |= is_velocity;
        if (!known_tensor(net, is_velocity ? name + strlen(MOMENTUM_PREFIX) : name, ""))
            FAIL(CLNET_ERR_FORMAT, "%s: tensor '%s' is not part of this model", path, name);
    }
    params = malloc((net->nparams ? net->nparams : 1) * sizeof(float));
    if (!params) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
    TRY(read_tensors(net, f, "", params));
    if (has_velocity) {
        velocity = malloc((net->nparams ? net->nparams : 1) * sizeof(float));
        if (!velocity) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
        TRY(read_tensors(net, f, MOMENTUM_PREFIX, velocity));
    }
    clnet_progress p = {0};
    const char *keys[] = {"step", "epoch", "position", "data_seed", "init_seed"};
    for (int k = 0; k < 5; k++) {
        const char *v = clnet_st_meta_get(f, keys[k]);
        if (!v) continue; /* a plain weights file (from Python, say) */
        int64_t i64 = 0;
        uint64_t u64 = 0;
        int ok = k < 3 ? parse_i64(v, &i64) : parse_u64(v, &u64);
        if (!ok || (k == 1 && i64 > 1000000000))
            FAIL(CLNET_ERR_FORMAT, "%s: metadata %s='%s' is not a valid number", path, keys[k], v);
        if (k == 0) p.step = i64;
        if (k == 1) p.epoch = (int)i64;
        if (k == 2) p.position = i64;
        if (k == 3) p.data_seed = u64;
        if (k == 4) p.init_seed = u64;
    }

    /* Everything checked: now change the net. */
    if (!net->params) {
        net->grads = calloc(net->nparams ? net->nparams : 1, sizeof(float));
        if (!net->grads) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
    }
    free(net->params);
    net->params = params;
    params = NULL;
    free(net->momentum);
    net->momentum = velocity;
    velocity = NULL;
    net->velocity_ready = net->momentum != NULL;
    net->step = p.step;
    net->initialised = 1;
    if (progress) *progress = p;
    if (net->replicas) TRY(clnet_coordinator_broadcast(net));
cleanup:
    clnet_st_free(f);
    free(params);
    free(velocity);
    return status;
}
