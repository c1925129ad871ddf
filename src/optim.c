/* SGD with momentum, Nesterov and weight decay, as PyTorch's torch.optim.SGD
 * (dampening 0), and the learning-rate schedules. */
#include "optim.h"
#include "alloc.h"
#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void clnet_sgd_defaults(clnet_sgd_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->lr = 0.1f;
    cfg->schedule = CLNET_SCHEDULE_CONSTANT;
    cfg->gamma = 0.1f;
}

void clnet_optim_init(clnet_optim *o) {
    memset(o, 0, sizeof *o);
    clnet_sgd_defaults(&o->sgd);
}

void clnet_optim_release(clnet_optim *o) {
    free(o->velocity);
    o->velocity = NULL;
    o->velocity_ready = 0;
}

clnet_status clnet_optim_check(const clnet_sgd_config *cfg) {
    if (!(cfg->lr > 0) || !isfinite(cfg->lr))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "learning rate %g must be > 0", cfg->lr);
    if (!(cfg->momentum >= 0 && cfg->momentum < 1))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "momentum %g must be in [0, 1)",
                          cfg->momentum);
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

clnet_status clnet_optim_prepare(clnet_optim *o, size_t n) {
    if (o->sgd.momentum > 0 && !o->velocity) {
        o->velocity = clnet_calloc(n ? n : 1, sizeof(float));
        if (!o->velocity) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for momentum");
        o->velocity_ready = 0;
    }
    return CLNET_OK;
}

float clnet_optim_lr(const clnet_sgd_config *c, int64_t t) {
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

void clnet_optim_apply(clnet_optim *o, float *w, const float *grad_sum, size_t n, int batch) {
    const clnet_sgd_config *c = &o->sgd;
    const float lr = clnet_optim_lr(c, o->step), inv = 1.0f / (float)batch, mu = c->momentum,
                wd = c->weight_decay;
    const int first_step = !o->velocity_ready;
    float *velocity = o->velocity;
    for (size_t i = 0; i < n; i++) {
        float g = grad_sum[i] * inv + wd * w[i];
        if (mu > 0) {
            float v = first_step ? g : mu * velocity[i] + g;
            velocity[i] = v;
            g = c->nesterov ? g + mu * v : v;
        }
        w[i] -= lr * g;
    }
    o->velocity_ready = mu > 0;
    o->step++;
}
