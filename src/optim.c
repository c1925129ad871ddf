/* SGD with momentum, Nesterov and weight decay (torch.optim.SGD, dampening
 * 0), Adam and AdamW (torch.optim.Adam / AdamW as PyTorch 1.13 computes
 * them, amsgrad off), the learning-rate schedules (with a warm-up as
 * SequentialLR([LinearLR, S]) and one-cycle as OneCycleLR, momentum cycled)
 * and clipping by the gradient's global norm (clip_grad_norm_). */
#include "optim.h"
#include "alloc.h"
#include "error.h"

#include <float.h>
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
    cfg->warmup_start_factor = 1.0f / 3.0f; /* LinearLR's */
    cfg->pct_start = 0.3f;                  /* OneCycleLR's */
    cfg->div_factor = 25.0f;
    cfg->final_div_factor = 1e4f;
    cfg->cycle_momentum = 1;
    cfg->base_momentum = 0.85f;
    cfg->max_momentum = 0.95f;
}

void clnet_sgd_defaults(clnet_optimizer_config *cfg) {
    clnet_optimizer_defaults(cfg);
}

void clnet_optim_init(clnet_optim *o) {
    memset(o, 0, sizeof *o);
    clnet_optimizer_defaults(&o->config);
    o->lr_scale = 1.0;
}

void clnet_optim_release(clnet_optim *o) {
    for (int i = 0; i < CLNET_OPTIM_SLOTS; i++) {
        free(o->slot[i]);
        free(o->next[i]);
        o->slot[i] = o->next[i] = NULL;
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

/* One-cycle with cycle_momentum: the momentum (beta1) comes from the schedule. */
static int cycles_momentum(const clnet_optimizer_config *c) {
    return c->schedule == CLNET_SCHEDULE_ONECYCLE && c->cycle_momentum;
}

/* SGD keeps a velocity: a momentum given, or cycled (between two momenta > 0:
 * never 0, where PyTorch's SGD would leave its buffer as it is for a step). */
static int sgd_velocity(const clnet_optimizer_config *c) {
    return c->optimizer == CLNET_OPTIMIZER_SGD && (cycles_momentum(c) || c->momentum > 0);
}

static clnet_status check_onecycle(const clnet_optimizer_config *cfg) {
    if (cfg->total_steps < 1)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "the one-cycle schedule needs total_steps >= 1");
    if (cfg->warmup_steps > 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "the one-cycle schedule warms up itself (its first pct_start of the "
                          "steps): warmup_steps must be 0");
    if (!(cfg->pct_start >= 0 && cfg->pct_start <= 1))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "one-cycle: pct_start %g must be in [0, 1]",
                          cfg->pct_start);
    if (!(cfg->div_factor > 0 && isfinite(cfg->div_factor)) ||
        !(cfg->final_div_factor > 0 && isfinite(cfg->final_div_factor)))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "one-cycle: div_factor %g and final_div_factor %g must be > 0",
                          cfg->div_factor, cfg->final_div_factor);
    /* not 0: at a step of momentum 0 PyTorch's SGD keeps its buffer aside, unchanged */
    if (cfg->cycle_momentum && !(cfg->base_momentum > 0 && cfg->base_momentum < 1 &&
                                 cfg->max_momentum > 0 && cfg->max_momentum < 1))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "one-cycle: base_momentum %g and max_momentum %g must be in (0, 1) "
                          "(cycle_momentum 0 keeps momentum or beta1 as given)",
                          cfg->base_momentum, cfg->max_momentum);
    return CLNET_OK;
}

static clnet_status check_schedule(const clnet_optimizer_config *cfg) {
    if (cfg->schedule != CLNET_SCHEDULE_CONSTANT && cfg->schedule != CLNET_SCHEDULE_STEP &&
        cfg->schedule != CLNET_SCHEDULE_COSINE && cfg->schedule != CLNET_SCHEDULE_ONECYCLE)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "unknown schedule %d", (int)cfg->schedule);
    if (cfg->warmup_steps < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "warmup_steps %lld must be >= 0",
                          (long long)cfg->warmup_steps);
    if (cfg->warmup_steps > 0 && !(cfg->warmup_start_factor > 0 && cfg->warmup_start_factor <= 1))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "warmup_start_factor %g must be in (0, 1] (the warm-up starts at that "
                          "share of the learning rate)",
                          cfg->warmup_start_factor);
    if (cfg->schedule == CLNET_SCHEDULE_COSINE && cfg->total_steps < 1)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "the cosine schedule needs total_steps >= 1");
    if (cfg->schedule == CLNET_SCHEDULE_COSINE && cfg->total_steps <= cfg->warmup_steps)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "the cosine schedule anneals over the steps after the warm-up: "
                          "total_steps %lld must be more than warmup_steps %lld",
                          (long long)cfg->total_steps, (long long)cfg->warmup_steps);
    if (cfg->schedule == CLNET_SCHEDULE_STEP && (cfg->step_size < 1 || !(cfg->gamma > 0)))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "the step schedule needs step_size >= 1 and gamma > 0");
    if (cfg->schedule == CLNET_SCHEDULE_ONECYCLE) return check_onecycle(cfg);
    return CLNET_OK;
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
    if (cfg->nesterov && !sgd_velocity(cfg))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "Nesterov needs a momentum > 0");
    if (!(cfg->weight_decay >= 0))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "weight decay %g must be >= 0",
                          cfg->weight_decay);
    if (!(cfg->clip_grad_norm >= 0))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clip_grad_norm %g must be >= 0 (0: no clipping)", cfg->clip_grad_norm);
    return check_schedule(cfg);
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
                    ? sgd_velocity(&o->config)
                    : clnet_optim_slot_count(o->config.optimizer);
    o->kind = o->config.optimizer;
    for (int i = 0; i < slots; i++) {
        if (!o->slot[i]) {
            o->slot[i] = clnet_calloc(n ? n : 1, sizeof(float));
            o->ready = 0;
        }
        if (!o->next[i]) o->next[i] = clnet_malloc((n ? n : 1) * sizeof(float));
        if (!o->slot[i] || !o->next[i])
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for the optimizer's state");
    }
    return CLNET_OK;
}

/* b + (a - b) * (1 + cos(pi * p)) / 2: OneCycleLR's _annealing_cos(a, b, p). */
static double cos_anneal(double a, double b, double p) {
    return b + (a - b) / 2.0 * (cos(3.141592653589793 * p) + 1);
}

/* One-cycle's learning rate (or, with momentum, its momentum) for step t, as
 * OneCycleLR.get_lr computes it in double: phase 1 up to step P = pct_start *
 * total_steps - 1 (a float, as PyTorch's end_step), phase 2 to total_steps - 1. */
static double onecycle(const clnet_optimizer_config *c, int64_t t, int momentum) {
    const double total = (double)c->total_steps, p_end = (double)c->pct_start * total - 1.0;
    double step = (double)(t < c->total_steps ? t : c->total_steps - 1), pct;
    double max_lr = c->lr, initial = max_lr / c->div_factor, min_lr = initial / c->final_div_factor;
    if (step <= p_end) { /* start_step 0 */
        pct = p_end > 0 ? step / p_end : 1.0;
        return momentum ? cos_anneal(c->max_momentum, c->base_momentum, pct)
                        : cos_anneal(initial, max_lr, pct);
    }
    double len = total - 1.0 - p_end;
    pct = len > 0 ? (step - p_end) / len : 1.0;
    return momentum ? cos_anneal(c->base_momentum, c->max_momentum, pct)
                    : cos_anneal(max_lr, min_lr, pct);
}

float clnet_optim_lr(const clnet_optimizer_config *c, int64_t t) {
    if (c->schedule == CLNET_SCHEDULE_ONECYCLE) return (float)onecycle(c, t, 0);
    const int64_t w = c->warmup_steps > 0 ? c->warmup_steps : 0;
    if (t < w) { /* LinearLR's closed form: lr * (s + (1 - s) * t / W) */
        double s = c->warmup_start_factor;
        return (float)((double)c->lr * (s + (1.0 - s) * (double)t / (double)w));
    }
    const int64_t u = t - w; /* the schedule's own clock, as SequentialLR restarts it */
    switch (c->schedule) {
    case CLNET_SCHEDULE_STEP:
        return c->lr * powf(c->gamma, (float)(u / c->step_size));
    case CLNET_SCHEDULE_COSINE: {
        const int64_t span = c->total_steps - w;
        double f = u >= span ? 1.0 : (double)u / (double)span;
        return (float)(c->lr * 0.5 * (1.0 + cos(3.141592653589793 * f)));
    }
    default:
        return c->lr;
    }
}

float clnet_optim_momentum(const clnet_optimizer_config *c, int64_t t) {
    if (cycles_momentum(c)) return (float)onecycle(c, t, 1);
    return c->optimizer == CLNET_OPTIMIZER_SGD ? c->momentum : c->beta1;
}

/* sqrt(sum of g[i]^2) in double, in a fixed order (eight running sums, then
 * added in order): the same on every run and every rank. */
static double sum_of_squares(const float *g, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += (double)g[i + k] * g[i + k];
    for (int k = 0; i < n; i++, k++) acc[k] += (double)g[i] * g[i];
    double s = 0;
    for (int k = 0; k < 8; k++) s += acc[k];
    return s;
}

double clnet_optim_grad_norm(const float *grad_sum, size_t n, int batch) {
    return sqrt(sum_of_squares(grad_sum, n)) / (double)batch;
}

float clnet_optim_rate(const clnet_optim *o) {
    /* in double, then rounded once: a scale of 1 leaves the schedule's rate as it is */
    return (float)((double)clnet_optim_lr(&o->config, o->step) * o->lr_scale);
}

/* The constants of one update. */
typedef struct {
    float lr, inv, wd, mu, b1, b2, step_size, bc2_sqrt, eps;
    int nesterov, first_step, decoupled;
} update_args;

/* clip: the factor of the gradient (1: unclipped). */
static update_args make_args(const clnet_optim *o, int batch, double clip) {
    const clnet_optimizer_config *c = &o->config;
    const double t = (double)(o->step + 1);
    const float momentum = clnet_optim_momentum(c, o->step); /* beta1 for Adam and AdamW */
    update_args a = {.lr = clnet_optim_rate(o),
                     .inv = clip < 1 ? (float)(clip / (double)batch) : 1.0f / (float)batch,
                     .wd = c->weight_decay,
                     .mu = c->optimizer == CLNET_OPTIMIZER_SGD ? momentum : 0,
                     .b1 = c->optimizer == CLNET_OPTIMIZER_SGD ? c->beta1 : momentum,
                     .b2 = c->beta2,
                     .eps = c->eps,
                     .nesterov = c->nesterov,
                     .first_step = !o->ready,
                     .decoupled = c->optimizer == CLNET_OPTIMIZER_ADAMW};
    a.step_size = (float)(a.lr / (1.0 - pow(a.b1, t)));
    a.bc2_sqrt = (float)sqrt(1.0 - pow(a.b2, t));
    return a;
}

static inline int finite(float x) {
    return x >= -FLT_MAX && x <= FLT_MAX;
}

/* Where an update reads (w and the state slots s0, s1) and writes them:
 * the same arrays for an update in place, others for one out of place. */
typedef struct {
    const float *w, *s0, *s1;
    float *w_out, *s0_out, *s1_out;
} update_mem;

/* Each optimizer's update of parameters [i, end), written once and run two
 * ways: write 0 only checks that the new parameters and state would all be
 * finite (1) or not (0), write 1 applies it. Inlined with a constant
 * `write`, each way is a loop of its own without branches, which the
 * compiler vectorises. */
static inline int sgd_range(const update_args *a, const update_mem *u, const float *grad_sum,
                            size_t i, size_t end, const int write) {
    int ok = 1;
    const float *w = u->w, *v = u->s0;
    for (; i < end; i++) {
        float g = grad_sum[i] * a->inv + a->wd * w[i];
        float nv = a->first_step ? g : a->mu * v[i] + g;
        float nw = w[i] - a->lr * (a->nesterov ? g + a->mu * nv : nv);
        if (write)
            u->s0_out[i] = nv, u->w_out[i] = nw;
        else
            ok &= finite(nv) & finite(nw);
    }
    return ok;
}

/* SGD without momentum: no velocity. */
static inline int plain_sgd_range(const update_args *a, const update_mem *u, const float *grad_sum,
                                  size_t i, size_t end, const int write) {
    int ok = 1;
    const float *w = u->w;
    for (; i < end; i++) {
        float nw = w[i] - a->lr * (grad_sum[i] * a->inv + a->wd * w[i]);
        if (write)
            u->w_out[i] = nw;
        else
            ok &= finite(nw);
    }
    return ok;
}

/* Adam's update with t = o->step + 1; AdamW decays the weights first
 * instead of adding the decay to the gradient. */
static inline int adam_range(const update_args *a, const update_mem *u, const float *grad_sum,
                             size_t i, size_t end, const int write) {
    int ok = 1;
    const float *w = u->w, *m = u->s0, *v = u->s1;
    for (; i < end; i++) {
        float g = grad_sum[i] * a->inv, nw = w[i];
        if (a->decoupled)
            nw *= 1.0f - a->lr * a->wd;
        else
            g += a->wd * nw;
        float nm = m[i] * a->b1 + (1.0f - a->b1) * g;
        float nv = v[i] * a->b2 + (1.0f - a->b2) * g * g;
        nw -= a->step_size * (nm / (sqrtf(nv) / a->bc2_sqrt + a->eps));
        if (write)
            u->s0_out[i] = nm, u->s1_out[i] = nv, u->w_out[i] = nw;
        else
            ok &= finite(nm) & finite(nv) & finite(nw);
    }
    return ok;
}

/* The update of [i, end): checked (write 0: whether it stays finite) or applied. */
static int update_range(const clnet_optim *o, const update_args *a, const update_mem *u,
                        const float *grad_sum, size_t i, size_t end, int write) {
    if (o->config.optimizer != CLNET_OPTIMIZER_SGD)
        return write ? adam_range(a, u, grad_sum, i, end, 1)
                     : adam_range(a, u, grad_sum, i, end, 0);
    if (sgd_velocity(&o->config))
        return write ? sgd_range(a, u, grad_sum, i, end, 1) : sgd_range(a, u, grad_sum, i, end, 0);
    return write ? plain_sgd_range(a, u, grad_sum, i, end, 1)
                 : plain_sgd_range(a, u, grad_sum, i, end, 0);
}

/* The first parameter of [from, n) whose update would leave it or its state
 * NaN or infinite, or n: blocks without an early exit, the failing one again
 * one by one. */
static size_t check_update(const clnet_optim *o, const update_args *a, const update_mem *u,
                           const float *grad_sum, size_t from, size_t n) {
    enum { BLOCK = 4096 };
    for (size_t b = from; b < n; b += BLOCK) {
        size_t end = n - b < BLOCK ? n : b + BLOCK;
        if (update_range(o, a, u, grad_sum, b, end, 0)) continue;
        for (size_t i = b; i < end; i++)
            if (!update_range(o, a, u, grad_sum, i, i + 1, 0)) return i;
    }
    return n;
}

/* A step taken: the slots now hold state (SGD keeps none without momentum). */
static void count_step(clnet_optim *o) {
    o->ready = o->config.optimizer != CLNET_OPTIMIZER_SGD || sgd_velocity(&o->config);
    o->step++;
}

/* clip_grad_norm_'s factor for the gradient grad_sum / batch, min(1, max /
 * (norm + 1e-6)), its norm in o->grad_norm; 1 (and norm 0) without clipping. */
static double clip_factor(clnet_optim *o, const float *grad_sum, size_t n, int batch) {
    const double max = o->config.clip_grad_norm;
    o->grad_norm = 0;
    if (!(max > 0)) return 1;
    o->grad_norm = clnet_optim_grad_norm(grad_sum, n, batch);
    double f = max / (o->grad_norm + 1e-6);
    return f < 1 ? f : 1;
}

size_t clnet_optim_apply(clnet_optim *o, float *w, const float *grad_sum, size_t n, int batch) {
    const update_args a = make_args(o, batch, clip_factor(o, grad_sum, n, batch));
    const update_mem u = {w, o->slot[0], o->slot[1], w, o->slot[0], o->slot[1]};
    size_t bad = check_update(o, &a, &u, grad_sum, 0, n);
    if (bad < n) return bad;
    update_range(o, &a, &u, grad_sum, 0, n, 1);
    count_step(o);
    return n;
}

size_t clnet_optim_apply_next(clnet_optim *o, const float *w, float *w_next, const float *grad_sum,
                              size_t from, size_t end, int batch) {
    const update_args a = make_args(o, batch, 1); /* never with clipping: the caller's rule */
    const update_mem u = {w, o->slot[0], o->slot[1], w_next, o->next[0], o->next[1]};
    size_t bad = check_update(o, &a, &u, grad_sum, from, end);
    if (bad == end) update_range(o, &a, &u, grad_sum, from, end, 1);
    return bad;
}

void clnet_optim_commit_next(clnet_optim *o) {
    for (int k = 0; k < CLNET_OPTIM_SLOTS; k++) {
        float *s = o->slot[k];
        o->slot[k] = o->next[k];
        o->next[k] = s;
    }
    count_step(o);
}
