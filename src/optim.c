/* SGD with momentum, Nesterov and weight decay (torch.optim.SGD, dampening
 * 0), Adam and AdamW (torch.optim.Adam / AdamW as PyTorch 1.13 computes
 * them, amsgrad off), and the learning-rate schedules. */
#include "optim.h"
#include "alloc.h"
#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void clnet_optimizer_defaults(clnet_optimizer_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->lr = 0.1f;
    cfg->schedule = CLNET_SCHEDULE_CONSTANT;
    cfg->gamma = 0.1f;
    cfg->optimizer = CLNET_OPTIMIZER_SGD;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
}

void clnet_sgd_defaults(clnet_optimizer_config *cfg) {
    clnet_optimizer_defaults(cfg);
}

void clnet_optim_init(clnet_optim *o) {
    memset(o, 0, sizeof *o);
    clnet_optimizer_defaults(&o->config);
}

void clnet_optim_release(clnet_optim *o) {
    for (int i = 0; i < CLNET_OPTIM_SLOTS; i++) {
        free(o->slot[i]);
        o->slot[i] = NULL;
    }
    o->ready = 0;
}

static const struct {
    const char *name;
    int slots;
    const char *slot[CLNET_OPTIM_SLOTS];
} optimizers[] = {
    [CLNET_OPTIMIZER_SGD] = {"sgd", 1, {"momentum"}},
    [CLNET_OPTIMIZER_ADAM] = {"adam", 2, {"exp_avg", "exp_avg_sq"}},
    [CLNET_OPTIMIZER_ADAMW] = {"adamw", 2, {"exp_avg", "exp_avg_sq"}},
};

const char *clnet_optim_name(clnet_optimizer k) {
    return optimizers[k].name;
}
int clnet_optim_slot_count(clnet_optimizer k) {
    return optimizers[k].slots;
}
const char *clnet_optim_slot_name(clnet_optimizer k, int slot) {
    return optimizers[k].slot[slot];
}

clnet_status clnet_optim_check(const clnet_optimizer_config *cfg) {
    int adam = cfg->optimizer == CLNET_OPTIMIZER_ADAM || cfg->optimizer == CLNET_OPTIMIZER_ADAMW;
    if (cfg->optimizer != CLNET_OPTIMIZER_SGD && !adam)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "unknown optimizer %d", (int)cfg->optimizer);
    if (!(cfg->lr > 0) || !isfinite(cfg->lr))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "learning rate %g must be > 0", cfg->lr);
    if (!(cfg->momentum >= 0 && cfg->momentum < 1))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "momentum %g must be in [0, 1)",
                          cfg->momentum);
    if (adam && (cfg->momentum != 0 || cfg->nesterov))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "momentum and Nesterov are SGD's: %s uses beta1 (%g) instead",
                          clnet_optim_name(cfg->optimizer), cfg->beta1);
    if (adam && !(cfg->beta1 >= 0 && cfg->beta1 < 1 && cfg->beta2 >= 0 && cfg->beta2 < 1))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "beta1 %g and beta2 %g must be in [0, 1)",
                          cfg->beta1, cfg->beta2);
    if (adam && !(cfg->eps > 0))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "eps %g must be > 0", cfg->eps);
    if (cfg->nesterov && cfg->momentum == 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "Nesterov needs a momentum > 0");
    if (!(cfg->weight_decay >= 0))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "weight decay %g must be >= 0",
                          cfg->weight_decay);
    if (cfg->schedule == CLNET_SCHEDULE_COSINE && cfg->total_steps < 1)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "the cosine schedule needs total_steps >= 1");
    if (cfg->schedule == CLNET_SCHEDULE_STEP && (cfg->step_size < 1 || !(cfg->gamma > 0)))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "the step schedule needs step_size >= 1 and gamma > 0");
    if (cfg->schedule != CLNET_SCHEDULE_CONSTANT && cfg->schedule != CLNET_SCHEDULE_STEP &&
        cfg->schedule != CLNET_SCHEDULE_COSINE)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "unknown schedule %d", (int)cfg->schedule);
    return CLNET_OK;
}

void clnet_optim_configure(clnet_optim *o, const clnet_optimizer_config *cfg) {
    if (o->slot[0] && o->kind != cfg->optimizer) {
        clnet_warn("the %s state (from a checkpoint) does not apply to %s: %s starts afresh",
                   clnet_optim_name(o->kind), clnet_optim_name(cfg->optimizer),
                   clnet_optim_name(cfg->optimizer));
        clnet_optim_release(o);
    }
    o->config = *cfg;
    o->kind = cfg->optimizer;
}

clnet_status clnet_optim_prepare(clnet_optim *o, size_t n) {
    int slots = o->config.optimizer == CLNET_OPTIMIZER_SGD
                    ? o->config.momentum > 0
                    : clnet_optim_slot_count(o->config.optimizer);
    o->kind = o->config.optimizer;
    for (int i = 0; i < slots; i++) {
        if (o->slot[i]) continue;
        o->slot[i] = clnet_calloc(n ? n : 1, sizeof(float));
        if (!o->slot[i])
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for the optimizer's state");
        o->ready = 0;
    }
    return CLNET_OK;
}

float clnet_optim_lr(const clnet_optimizer_config *c, int64_t t) {
    switch (c->schedule) {
    case CLNET_SCHEDULE_STEP:
        return c->lr * powf(c->gamma, (float)(t / c->step_size));
    case CLNET_SCHEDULE_COSINE: {
        double f = t >= c->total_steps ? 1.0 : (double)t / (double)c->total_steps;
        return (float)(c->lr * 0.5 * (1.0 + cos(3.141592653589793 * f)));
    }
    default:
        return c->lr;
    }
}

static void sgd(clnet_optim *o, float lr, float *w, const float *grad_sum, size_t n, int batch) {
    const clnet_optimizer_config *c = &o->config;
    const float inv = 1.0f / (float)batch, mu = c->momentum, wd = c->weight_decay;
    const int first_step = !o->ready;
    float *velocity = o->slot[0];
    for (size_t i = 0; i < n; i++) {
        float g = grad_sum[i] * inv + wd * w[i];
        if (mu > 0) {
            float v = first_step ? g : mu * velocity[i] + g;
            velocity[i] = v;
            g = c->nesterov ? g + mu * v : v;
        }
        w[i] -= lr * g;
    }
    o->ready = mu > 0;
}

/* Adam's update with t = o->step + 1; AdamW decays the weights first
 * instead of adding the decay to the gradient. */
static void adam(clnet_optim *o, float lr, float *w, const float *grad_sum, size_t n, int batch) {
    const clnet_optimizer_config *c = &o->config;
    const int decoupled = c->optimizer == CLNET_OPTIMIZER_ADAMW;
    const float inv = 1.0f / (float)batch, wd = c->weight_decay, b1 = c->beta1, b2 = c->beta2;
    const double t = (double)(o->step + 1);
    const float step_size = (float)(lr / (1.0 - pow(b1, t)));
    const float bc2_sqrt = (float)sqrt(1.0 - pow(b2, t));
    float *m = o->slot[0], *v = o->slot[1];
    for (size_t i = 0; i < n; i++) {
        float g = grad_sum[i] * inv;
        if (decoupled)
            w[i] *= 1.0f - lr * wd;
        else
            g += wd * w[i];
        m[i] = m[i] * b1 + (1.0f - b1) * g;
        v[i] = v[i] * b2 + (1.0f - b2) * g * g;
        w[i] -= step_size * (m[i] / (sqrtf(v[i]) / bc2_sqrt + c->eps));
    }
    o->ready = 1;
}

void clnet_optim_apply(clnet_optim *o, float *w, const float *grad_sum, size_t n, int batch) {
    const float lr = clnet_optim_lr(&o->config, o->step);
    if (o->config.optimizer == CLNET_OPTIMIZER_SGD)
        sgd(o, lr, w, grad_sum, n, batch);
    else
        adam(o, lr, w, grad_sum, n, batch);
    o->step++;
}
