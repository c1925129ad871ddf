/* The optimizers against PyTorch, from the golden files in tests/fixtures/optim/
 * (made by make_optim_fixtures.py with torch.optim): 5 steps of Adam and AdamW;
 * the learning rate and momentum of every step of warm-ups (SequentialLR of
 * LinearLR and a schedule) and one-cycle (OneCycleLR) with generated settings;
 * 20 steps under one-cycle and warm-up, each clipped by clip_grad_norm_ (no
 * device); a net's training step clipped as clip_grad_norm_ clips it
 * (clip_fixture.c); the configurations' checks; and that a net saved
 * and loaded mid-run continues bit for bit (its optimizer state and step count
 * are in the checkpoint), under Adam, a warm-up and one-cycle, clipped. */
#include "clip_fixture.h"
#include "harness.h"
#include "optim.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N     40
#define STEPS 5
#define BATCH 4

static double meta(const clnet_st_file *f, const char *key) {
    const char *v = clnet_st_meta_get(f, key);
    ck_assert_msg(v != NULL, "no metadata %s", key);
    return atof(v);
}

static void against_pytorch(const char *name, clnet_optimizer kind) {
    char path[512];
    snprintf(path, sizeof path, "%s/optim/%s.safetensors", CLNET_FIXTURES_DIR, name);
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    const float *w0 = NULL, *g = NULL, *want = NULL;
    ck_assert_int_eq(clnet_st_get(f, "w0", 1, (int64_t[]){N}, &w0, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_st_get(f, "g", 2, (int64_t[]){STEPS, N}, &g, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_st_get(f, "w", 2, (int64_t[]){STEPS, N}, &want, NULL, NULL), CLNET_OK);
    clnet_optim o;
    clnet_optim_init(&o);
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.optimizer = kind;
    c.lr = (float)meta(f, "lr");
    c.beta1 = (float)meta(f, "beta1");
    c.beta2 = (float)meta(f, "beta2");
    c.eps = (float)meta(f, "eps");
    c.weight_decay = (float)meta(f, "weight_decay");
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_OK);
    clnet_optim_configure(&o, &c);
    ck_assert_int_eq(clnet_optim_prepare(&o, N), CLNET_OK);
    float w[N], sum[N];
    memcpy(w, w0, sizeof w);
    double worst = 0;
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < N; i++)
            sum[i] = BATCH * g[s * N + i]; /* the sum over a batch of 4: exact */
        clnet_optim_apply(&o, w, sum, N, BATCH);
        double scale = 0;
        for (int i = 0; i < N; i++)
            scale = fmax(scale, fabs(want[s * N + i] - (s ? want[(s - 1) * N + i] : w0[i])));
        for (int i = 0; i < N; i++) {
            /* against the update PyTorch made, which is what the optimizer decides */
            double d = fabs((double)w[i] - want[s * N + i]) / scale;
            worst = fmax(worst, d);
        }
    }
    printf("%-8s 5 steps against torch.optim (%s): largest difference %.2e of the largest "
           "update\n",
           name, clnet_st_meta_get(f, "torch"), worst);
    ck_assert_msg(worst < 1e-4, "%s: differs from PyTorch by %g", name, worst);
    ck_assert_int_eq(o.step, STEPS);
    clnet_optim_release(&o);
    clnet_st_free(f);
}

START_TEST(adam_and_adamw_match_pytorch) {
    against_pytorch("adam", CLNET_OPTIMIZER_ADAM);
    against_pytorch("adam_wd", CLNET_OPTIMIZER_ADAM);
    against_pytorch("adamw", CLNET_OPTIMIZER_ADAMW);
}
END_TEST

/* The next word of a space-separated list, as a number. */
static double word(char **p) {
    char *end = NULL;
    double v = strtod(*p, &end);
    ck_assert_msg(end != *p, "a number expected at '%s'", *p);
    *p = end;
    return v;
}

static clnet_schedule schedule_named(const char *kind) {
    if (strcmp(kind, "step") == 0) return CLNET_SCHEDULE_STEP;
    if (strcmp(kind, "cosine") == 0) return CLNET_SCHEDULE_COSINE;
    if (strcmp(kind, "onecycle") == 0) return CLNET_SCHEDULE_ONECYCLE;
    ck_assert_str_eq(kind, "constant");
    return CLNET_SCHEDULE_CONSTANT;
}

/* Every step's learning rate (and one-cycle's momentum) of each generated case of
 * schedules.safetensors against PyTorch's schedulers: within 1e-6 of the rate, 1e-6 of
 * the momentum (both as float32). */
START_TEST(schedules_match_pytorch) {
    char path[512];
    snprintf(path, sizeof path, "%s/optim/schedules.safetensors", CLNET_FIXTURES_DIR);
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    char cases[2048];
    snprintf(cases, sizeof cases, "%s", clnet_st_meta_get(f, "cases"));
    int count = 0;
    double worst_lr = 0, worst_mom = 0;
    for (char *save = NULL, *name = strtok_r(cases, ",", &save); name;
         name = strtok_r(NULL, ",", &save), count++) {
        char settings[512], kind[32] = "", optimizer[16] = "";
        const char *m = clnet_st_meta_get(f, name);
        ck_assert_msg(m != NULL, "no settings for %s", name);
        snprintf(settings, sizeof settings, "%s", m);
        ck_assert_int_eq(sscanf(settings, "%31s", kind), 1);
        char *p = settings + strlen(kind);
        clnet_optimizer_config c;
        clnet_optimizer_defaults(&c);
        c.schedule = schedule_named(kind);
        c.total_steps = (int64_t)word(&p);
        c.warmup_steps = (int64_t)word(&p);
        c.warmup_start_factor = (float)word(&p);
        c.step_size = (int64_t)word(&p);
        c.gamma = (float)word(&p);
        c.pct_start = (float)word(&p);
        c.div_factor = (float)word(&p);
        c.final_div_factor = (float)word(&p);
        c.cycle_momentum = (int)word(&p);
        c.base_momentum = (float)word(&p);
        c.max_momentum = (float)word(&p);
        ck_assert_int_eq(sscanf(p, "%15s", optimizer), 1);
        p = strstr(p, optimizer) + strlen(optimizer);
        c.lr = (float)word(&p);
        c.optimizer = strcmp(optimizer, "adam") == 0 ? CLNET_OPTIMIZER_ADAM : CLNET_OPTIMIZER_SGD;
        if (c.schedule != CLNET_SCHEDULE_ONECYCLE && c.optimizer == CLNET_OPTIMIZER_SGD)
            c.momentum = 0.9f; /* as the script's SGD */
        ck_assert_msg(clnet_optim_check(&c) == CLNET_OK, "%s: %s", name, clnet_last_error());
        char key[96];
        const float *lr = NULL, *mom = NULL;
        snprintf(key, sizeof key, "%s.lr", name);
        ck_assert_int_eq(clnet_st_get(f, key, 1, (int64_t[]){c.total_steps}, &lr, NULL, NULL),
                         CLNET_OK);
        snprintf(key, sizeof key, "%s.momentum", name);
        if (c.schedule == CLNET_SCHEDULE_ONECYCLE)
            ck_assert_int_eq(clnet_st_get(f, key, 1, (int64_t[]){c.total_steps}, &mom, NULL, NULL),
                             CLNET_OK);
        for (int64_t t = 0; t < c.total_steps; t++) {
            double got = clnet_optim_lr(&c, t), d = fabs(got - lr[t]) / fabs(lr[t]);
            ck_assert_msg(d <= 1e-6, "%s step %lld: lr %.9g, PyTorch's %.9g", name, (long long)t,
                          got, lr[t]);
            worst_lr = fmax(worst_lr, d);
            if (!mom) continue;
            double mo = clnet_optim_momentum(&c, t), dm = fabs(mo - mom[t]);
            ck_assert_msg(dm <= 1e-6, "%s step %lld: momentum %.9g, PyTorch's %.9g", name,
                          (long long)t, mo, mom[t]);
            worst_mom = fmax(worst_mom, dm);
        }
        /* past the end: the last step's values (PyTorch's OneCycleLR raises there) */
        if (c.schedule == CLNET_SCHEDULE_ONECYCLE)
            ck_assert_float_eq(clnet_optim_lr(&c, c.total_steps + 5),
                               clnet_optim_lr(&c, c.total_steps - 1));
    }
    printf("%d schedules (warm-ups, one-cycle) against torch.optim.lr_scheduler (%s): largest lr "
           "difference %.2e relative, momentum %.2e\n",
           count, clnet_st_meta_get(f, "torch"), worst_lr, worst_mom);
    ck_assert_int_ge(count, 19);
    clnet_st_free(f);
}
END_TEST

/* 20 steps under one-cycle or a warm-up, each gradient clipped by clip_grad_norm_
 * (steps_*.safetensors): the parameters after each step against PyTorch's, within 1e-5
 * of the largest update so far. */
static void steps_against_pytorch(const char *name) {
    enum { S = 20 };
    char path[512];
    snprintf(path, sizeof path, "%s/optim/steps_%s.safetensors", CLNET_FIXTURES_DIR, name);
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    const float *w0 = NULL, *g = NULL, *want = NULL;
    ck_assert_int_eq(clnet_st_get(f, "w0", 1, (int64_t[]){N}, &w0, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_st_get(f, "g", 2, (int64_t[]){S, N}, &g, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(clnet_st_get(f, "w", 2, (int64_t[]){S, N}, &want, NULL, NULL), CLNET_OK);
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    const char *kind = clnet_st_meta_get(f, "optimizer"), *v;
    c.optimizer = strcmp(kind, "adamw") == 0 ? CLNET_OPTIMIZER_ADAMW : CLNET_OPTIMIZER_SGD;
    c.lr = (float)meta(f, "lr");
    c.total_steps = (int64_t)meta(f, "total_steps");
    c.clip_grad_norm = (float)meta(f, "clip");
    if ((v = clnet_st_meta_get(f, "momentum"))) c.momentum = (float)atof(v);
    if ((v = clnet_st_meta_get(f, "nesterov"))) c.nesterov = strcmp(v, "True") == 0;
    if ((v = clnet_st_meta_get(f, "weight_decay"))) c.weight_decay = (float)atof(v);
    c.schedule = schedule_named(clnet_st_meta_get(f, "schedule"));
    if (c.schedule == CLNET_SCHEDULE_ONECYCLE) {
        c.momentum = 0; /* one-cycle overwrites the optimizer's */
        c.pct_start = (float)meta(f, "pct");
        c.div_factor = (float)meta(f, "div");
        c.final_div_factor = (float)meta(f, "final");
        c.base_momentum = (float)meta(f, "base");
        c.max_momentum = (float)meta(f, "max");
    } else {
        c.warmup_steps = (int64_t)meta(f, "warmup");
        c.warmup_start_factor = (float)meta(f, "start");
    }
    ck_assert_msg(clnet_optim_check(&c) == CLNET_OK, "%s: %s", name, clnet_last_error());
    clnet_optim o;
    clnet_optim_init(&o);
    clnet_optim_configure(&o, &c);
    ck_assert_int_eq(clnet_optim_prepare(&o, N), CLNET_OK);
    float w[N], sum[N];
    memcpy(w, w0, sizeof w);
    double worst = 0, scale = 0;
    int clipped = 0;
    for (int s = 0; s < S; s++) {
        double norm = 0;
        for (int i = 0; i < N; i++) {
            sum[i] = BATCH * g[s * N + i]; /* exact */
            norm += (double)g[s * N + i] * g[s * N + i];
        }
        ck_assert_uint_eq(clnet_optim_apply(&o, w, sum, N, BATCH), N);
        if (c.clip_grad_norm > 0) {
            ck_assert_msg(fabs(o.grad_norm - sqrt(norm)) <= 1e-12 * sqrt(norm),
                          "%s step %d: norm %.9g, want %.9g", name, s, o.grad_norm, sqrt(norm));
            clipped += o.grad_norm > c.clip_grad_norm;
        } else {
            ck_assert(o.grad_norm == 0);
        }
        /* the largest update so far: one-cycle ends at lr / 25e4, where the step's own
         * update is smaller than the float rounding of the parameters it moves */
        for (int i = 0; i < N; i++)
            scale = fmax(scale, fabs(want[s * N + i] - (s ? want[(s - 1) * N + i] : w0[i])));
        for (int i = 0; i < N; i++)
            worst = fmax(worst, fabs((double)w[i] - want[s * N + i]) / scale);
    }
    printf("%-18s 20 steps against torch.optim and its scheduler (%d clipped): largest "
           "difference %.2e of the largest update\n",
           name, clipped, worst);
    ck_assert_msg(worst < 1e-5, "%s: differs from PyTorch by %g", name, worst);
    ck_assert(c.clip_grad_norm == 0 || (clipped > 0 && clipped < S));
    clnet_optim_release(&o);
    clnet_st_free(f);
}

START_TEST(scheduled_and_clipped_steps_match_pytorch) {
    steps_against_pytorch("onecycle_sgd");
    steps_against_pytorch("onecycle_nesterov");
    steps_against_pytorch("onecycle_adamw");
    steps_against_pytorch("warmup_cosine_sgd");
}
END_TEST

START_TEST(configurations_are_checked) {
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.optimizer = CLNET_OPTIMIZER_ADAM;
    c.momentum = 0.9f;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "beta1"), "%s", clnet_last_error());
    c.momentum = 0;
    c.beta2 = 1.0f;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT);
    c.beta2 = 0.999f;
    c.eps = 0;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT);
    c.eps = 1e-8f;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_OK);
    c.optimizer = (clnet_optimizer)7;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT);
    /* warm-up, one-cycle, clipping: each bad field named */
    static const struct {
        const char *field, *words;
    } bad[] = {
        {"warmup_steps", "warmup_steps -1"},
        {"warmup_start_factor", "warmup_start_factor 0"},
        {"cosine_after_warmup", "more than warmup_steps"},
        {"onecycle_warmup", "warms up itself"},
        {"onecycle_total", "one-cycle schedule needs total_steps"},
        {"pct_start", "pct_start 1.5"},
        {"div_factor", "div_factor 0"},
        {"base_momentum", "base_momentum 0"},
        {"clip_grad_norm", "clip_grad_norm -1"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        clnet_optimizer_defaults(&c);
        const char *w = bad[k].field;
        if (strcmp(w, "warmup_steps") == 0) c.warmup_steps = -1;
        if (strcmp(w, "warmup_start_factor") == 0) c.warmup_steps = 3, c.warmup_start_factor = 0;
        if (strcmp(w, "cosine_after_warmup") == 0)
            c.schedule = CLNET_SCHEDULE_COSINE, c.total_steps = 5, c.warmup_steps = 5;
        if (strcmp(w, "onecycle_warmup") == 0)
            c.schedule = CLNET_SCHEDULE_ONECYCLE, c.total_steps = 50, c.warmup_steps = 5;
        if (strcmp(w, "onecycle_total") == 0) c.schedule = CLNET_SCHEDULE_ONECYCLE;
        if (strcmp(w, "pct_start") == 0)
            c.schedule = CLNET_SCHEDULE_ONECYCLE, c.total_steps = 50, c.pct_start = 1.5f;
        if (strcmp(w, "div_factor") == 0)
            c.schedule = CLNET_SCHEDULE_ONECYCLE, c.total_steps = 50, c.div_factor = 0;
        if (strcmp(w, "base_momentum") == 0)
            c.schedule = CLNET_SCHEDULE_ONECYCLE, c.total_steps = 50, c.base_momentum = 0;
        if (strcmp(w, "clip_grad_norm") == 0) c.clip_grad_norm = -1;
        ck_assert_msg(clnet_optim_check(&c) == CLNET_ERR_INVALID_ARGUMENT, "%s accepted", w);
        ck_assert_msg(strstr(clnet_last_error(), bad[k].words), "%s: %s", w, clnet_last_error());
    }
    /* what goes: a warm-up before each schedule, one-cycle's momentum cycled with Nesterov
     * (SGD's momentum 0), or kept (cycle_momentum 0); clipping that only measures */
    for (int sched = CLNET_SCHEDULE_CONSTANT; sched <= CLNET_SCHEDULE_COSINE; sched++) {
        clnet_optimizer_defaults(&c);
        c.schedule = (clnet_schedule)sched, c.total_steps = 10, c.step_size = 2;
        c.warmup_steps = 9, c.warmup_start_factor = 1;
        ck_assert_msg(clnet_optim_check(&c) == CLNET_OK, "%s", clnet_last_error());
    }
    clnet_optimizer_defaults(&c);
    c.schedule = CLNET_SCHEDULE_ONECYCLE, c.total_steps = 1, c.nesterov = 1;
    c.clip_grad_norm = INFINITY;
    ck_assert_msg(clnet_optim_check(&c) == CLNET_OK, "%s", clnet_last_error());
    c.cycle_momentum = 0;
    ck_assert_int_eq(clnet_optim_check(&c), CLNET_ERR_INVALID_ARGUMENT); /* Nesterov, momentum 0 */
    c.momentum = 0.9f;
    ck_assert_msg(clnet_optim_check(&c) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_float_eq(clnet_optim_momentum(&c, 0), 0.9f);
    /* the defaults are PyTorch's */
    clnet_optimizer_defaults(&c);
    ck_assert_float_eq(c.warmup_start_factor, 1.0f / 3);
    ck_assert(c.pct_start == 0.3f && c.div_factor == 25 && c.final_div_factor == 1e4f);
    ck_assert(c.cycle_momentum == 1 && c.base_momentum == 0.85f && c.max_momentum == 0.95f);
    ck_assert(c.clip_grad_norm == 0 && c.warmup_steps == 0);
}
END_TEST

/* A net of the resume tests' model: input 3x4x4, conv2d c, relu, linear fc, 3 classes. */
static const char *SMALL[] = {"input channels=3 height=4 width=4",
                              "conv2d name=c filters=2 size=3",
                              "relu",
                              "flatten",
                              "linear name=fc units=3",
                              "softmax_cross_entropy"};

static clnet_net *small_net(void) {
    clnet_net *net = NULL;
    ck_assert_int_eq(clnet_net_create(&net), CLNET_OK);
    for (int i = 0; i < 6; i++) ck_assert_int_eq(clnet_net_add(net, SMALL[i]), CLNET_OK);
    return net;
}

/* A training step clipped as torch.nn.utils.clip_grad_norm_ clips it, against PyTorch's
 * (clip_fixture.c), on the configuration's first device; test_multi.c checks it split
 * over two. */
START_TEST(a_clipped_step_matches_pytorch) {
    clnet_runtime *one = test_one_device(0);
    test_clipped_step_matches_pytorch(one, NULL);
    clnet_runtime_free(one);
}
END_TEST

/* A net under configuration c: 8 steps straight equal 4 steps, a checkpoint, a fresh net
 * loading it, and 4 more steps, bit for bit; the file names PyTorch's state
 * ("optimizer.<name>.<slot>.<tensor>", slot and tensor given). Returns the steps whose
 * gradient was clipped. */
static int resume_is_bitwise(const clnet_optimizer_config *c, const char *slot) {
    clnet_net *nets[3] = {NULL};
    clnet_runtime *rt = test_runtime();
    for (int k = 0; k < 3; k++) {
        nets[k] = small_net();
        ck_assert_msg(clnet_net_set_optimizer(nets[k], c) == CLNET_OK, "%s", clnet_last_error());
        if (k < 2) ck_assert_int_eq(clnet_net_init(nets[k], 3), CLNET_OK);
    }
    float x[8 * 48];
    int32_t y[8];
    char dir[256], path[300];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/resume.safetensors", dir);
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(clnet_net_bind(nets[k], rt, 8) == CLNET_OK, "%s", clnet_last_error());
        ck_assert_int_eq(
            clnet_net_set_split(nets[k], (double[]){1, 1, 1, 1}, clnet_net_device_count(nets[k])),
            CLNET_OK);
    }
    int clipped = 0;
    for (int s = 0; s < 8; s++) {
        test_random_floats(x, sizeof x / sizeof *x, 90 + s);
        for (int i = 0; i < 8; i++) y[i] = (i + s) % 3;
        int k = s < 4 ? 1 : 2;
        if (s == 4) { /* save the half-way net, load it into a fresh one */
            ck_assert_int_eq(clnet_net_save(nets[1], path, NULL), CLNET_OK);
            ck_assert_msg(clnet_net_load_weights(nets[2], path, NULL) == CLNET_OK, "%s",
                          clnet_last_error());
            ck_assert_int_eq(clnet_net_bind(nets[2], rt, 8), CLNET_OK);
            ck_assert_int_eq(clnet_net_set_split(nets[2], (double[]){1, 1, 1, 1},
                                                 clnet_net_device_count(nets[2])),
                             CLNET_OK);
        }
        clnet_step_result r0, r;
        ck_assert(clnet_net_learning_rate(nets[0]) == clnet_net_learning_rate(nets[k]));
        ck_assert_int_eq(clnet_net_train_step(nets[0], x, y, 8, &r0), CLNET_OK);
        ck_assert_int_eq(clnet_net_train_step(nets[k], x, y, 8, &r), CLNET_OK);
        ck_assert(memcmp(&r0.grad_norm, &r.grad_norm, sizeof r.grad_norm) == 0);
        ck_assert(c->clip_grad_norm > 0 ? r.grad_norm > 0 : r.grad_norm == 0);
        clipped += r.grad_norm > c->clip_grad_norm;
    }
    ck_assert_int_eq(clnet_net_step(nets[2]), 8);
    ck_assert_mem_eq(clnet_net_params(nets[0]), clnet_net_params(nets[2]),
                     clnet_net_param_count(nets[0]) * sizeof(float));
    clnet_st_file *f = NULL;
    ck_assert_int_eq(clnet_st_load(path, &f), CLNET_OK);
    char name[128];
    snprintf(name, sizeof name, "optimizer.%s.%s.c.weight", clnet_optim_name(c->optimizer), slot);
    ck_assert_msg(clnet_st_info(f, name, NULL, NULL, NULL) == CLNET_OK, "no %s", name);
    ck_assert_str_eq(clnet_st_meta_get(f, "optimizer"), clnet_optim_name(c->optimizer));
    clnet_st_free(f);
    for (int k = 0; k < 3; k++) clnet_net_free(nets[k]);
    return clipped;
}

START_TEST(resume_under_adam_is_bitwise) {
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.optimizer = CLNET_OPTIMIZER_ADAMW;
    c.lr = 0.01f;
    c.weight_decay = 0.01f;
    c.schedule = CLNET_SCHEDULE_COSINE;
    c.total_steps = 8;
    resume_is_bitwise(&c, "exp_avg_sq");
}
END_TEST

/* The same across a warm-up's end and through one-cycle, clipped (at 0.3, under the
 * gradients' norms): a warm-up of 6 steps before cosine under SGD with momentum,
 * one-cycle with SGD's momentum cycled, one-cycle with Adam's beta1 cycled. */
START_TEST(resume_under_warmup_onecycle_and_clipping_is_bitwise) {
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = 0.2f;
    c.momentum = 0.9f;
    c.weight_decay = 1e-3f;
    c.schedule = CLNET_SCHEDULE_COSINE;
    c.total_steps = 10;
    c.warmup_steps = 6;
    c.warmup_start_factor = 0.1f;
    c.clip_grad_norm = 0.3f;
    int clipped = resume_is_bitwise(&c, "momentum");
    c.schedule = CLNET_SCHEDULE_ONECYCLE;
    c.warmup_steps = 0;
    c.momentum = 0; /* cycled: SGD's velocity all the same */
    c.total_steps = 8;
    c.pct_start = 0.4f;
    clipped += resume_is_bitwise(&c, "momentum");
    c.optimizer = CLNET_OPTIMIZER_ADAM;
    c.lr = 0.01f;
    clipped += resume_is_bitwise(&c, "exp_avg");
    printf("resumed bitwise under a warm-up, one-cycle (SGD, Adam) and clipping: %d of 24 "
           "steps clipped\n",
           clipped);
    ck_assert_int_gt(clipped, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("optim");
    TCase *t = tcase_create("optim");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, adam_and_adamw_match_pytorch);
    tcase_add_test(t, schedules_match_pytorch);
    tcase_add_test(t, scheduled_and_clipped_steps_match_pytorch);
    tcase_add_test(t, configurations_are_checked);
    tcase_add_test(t, a_clipped_step_matches_pytorch);
    tcase_add_test(t, resume_under_adam_is_bitwise);
    tcase_add_test(t, resume_under_warmup_onecycle_and_clipping_is_bitwise);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
