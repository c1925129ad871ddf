/* The optimizers against PyTorch, from the golden files in tests/fixtures/optim/
 * (made by make_optim_fixtures.py with torch.optim): 5 steps of Adam and AdamW;
 * the learning rate and momentum of every step of warm-ups (SequentialLR of
 * LinearLR and a schedule) and one-cycle (OneCycleLR) with generated settings;
 * 20 steps under one-cycle and warm-up, each clipped by clip_grad_norm_ (no
 * device); a net's training step clipped as clip_grad_norm_ clips it
 * (clip_fixture.c); the configurations' checks; and that a net saved
 * and loaded mid-run continues bit for bit (its optimizer state and step count
 * are in the checkpoint), under Adam, a warm-up and one-cycle, clipped, with a
 * learning-rate scale (what --plateau sets) that comes back with it;
 * clnet_plateau against torch.optim.lr_scheduler.ReduceLROnPlateau and
 * clnet_monitor against Lightning's EarlyStopping on generated cases
 * (tests/epoch_metrics_ref.py, run live with /usr/bin/python3's torch; skipped
 * without it). */
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
        if (s == 2) {
            float before = clnet_net_learning_rate(nets[0]);
            for (int j = 0; j < 2; j++)
                ck_assert_int_eq(clnet_net_set_lr_scale(nets[j], 0.25), CLNET_OK);
            ck_assert(clnet_net_learning_rate(nets[0]) == (float)(before * 0.25));
            ck_assert_int_eq(clnet_net_set_lr_scale(nets[0], 0), CLNET_ERR_INVALID_ARGUMENT);
            ck_assert_int_eq(clnet_net_set_lr_scale(nets[0], NAN), CLNET_ERR_INVALID_ARGUMENT);
            ck_assert(clnet_net_lr_scale(nets[0]) == 0.25);
        }
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
    ck_assert(clnet_net_lr_scale(nets[2]) == 0.25);
    ck_assert_mem_eq(clnet_net_params(nets[0]), clnet_net_params(nets[2]),
                     clnet_net_param_count(nets[0]) * sizeof(float));
    clnet_st_file *f = NULL;
    ck_assert_int_eq(clnet_st_load(path, &f), CLNET_OK);
    char name[128];
    snprintf(name, sizeof name, "optimizer.%s.%s.c.weight", clnet_optim_name(c->optimizer), slot);
    ck_assert_msg(clnet_st_info(f, name, NULL, NULL, NULL) == CLNET_OK, "no %s", name);
    ck_assert_str_eq(clnet_st_meta_get(f, "optimizer"), clnet_optim_name(c->optimizer));
    ck_assert_str_eq(clnet_st_meta_get(f, "lr_scale"), "0.25");
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

/* ---- epoch metrics: reduce-on-plateau and early stopping -------------------------- */

#define CASES      60
#define MAX_EPOCHS 80

static uint64_t mix(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *state) { /* in [0, 1) */
    return (double)(mix(state) >> 11) / 9007199254740992.0;
}

/* One generated case: the settings of both, and a random walk of epoch figures with flat
 * stretches, steps near the threshold, and now and then a NaN. */
typedef struct {
    clnet_plateau p;
    clnet_monitor m;
    double lr0;
    int n;
    double v[MAX_EPOCHS];
} metric_case;

static void make_case(metric_case *c, uint64_t seed) {
    uint64_t r = seed;
    int maximize = uniform(&r) < 0.5;
    clnet_plateau_defaults(&c->p, maximize);
    clnet_monitor_defaults(&c->m, maximize);
    double u = uniform(&r);
    c->p.factor = u < 0.3 ? 0.1 : u < 0.5 ? 0.5 : 0.05 + 0.9 * uniform(&r);
    c->p.patience = (int)(uniform(&r) * 6);
    u = uniform(&r);
    c->p.threshold = u < 0.2 ? 0 : u < 0.5 ? 1e-4 : u < 0.7 ? 1e-2 : 0.05 * uniform(&r);
    c->p.threshold_abs = uniform(&r) < 0.35;
    c->p.cooldown = uniform(&r) < 0.4 ? 0 : (int)(uniform(&r) * 4);
    c->lr0 = 1e-3 + uniform(&r);
    c->p.min_lr = uniform(&r) < 0.5 ? 0 : c->lr0 * (0.001 + 0.3 * uniform(&r));
    c->p.eps = uniform(&r) < 0.6 ? 1e-8 : c->lr0 * (1e-3 + 0.3 * uniform(&r));
    c->m.min_delta = uniform(&r) < 0.4 ? 0 : 0.05 * uniform(&r);
    c->m.patience = 1 + (int)(uniform(&r) * 5);
    c->n = 20 + (int)(uniform(&r) * (MAX_EPOCHS - 20));
    double v = 0.5 + 2 * uniform(&r), drift = (uniform(&r) - 0.5) * 0.1;
    for (int t = 0; t < c->n; t++) {
        u = uniform(&r);
        if (u < 0.25) /* flat */
            ;
        else if (u < 0.5) /* about the threshold: better or not by a hair */
            v *= 1 + (uniform(&r) - 0.5) * 4 * (c->p.threshold > 0 ? c->p.threshold : 1e-4);
        else
            v += drift + (uniform(&r) - 0.5) * 0.2;
        c->v[t] = uniform(&r) < 0.02 ? NAN : v;
    }
}

static void write_case(FILE *f, const metric_case *c) {
    fprintf(f, "%d %.17g %d %.17g %d %d %.17g %.17g %.17g %.17g %d %d", c->p.maximize, c->p.factor,
            c->p.patience, c->p.threshold, c->p.threshold_abs, c->p.cooldown, c->p.min_lr, c->p.eps,
            c->lr0, c->m.min_delta, c->m.patience, c->n);
    for (int t = 0; t < c->n; t++) fprintf(f, " %.17g", c->v[t]);
    fprintf(f, "\n");
}

/* Both as NaN, or equal (the same comparisons in the same order give the same doubles). */
static int same(double a, double b) {
    return (isnan(a) && isnan(b)) || a == b;
}

/* Case c through clnet_plateau and clnet_monitor against PyTorch's line: 0, or 1 after
 * saying where they part. */
static int check_case(metric_case *c, uint64_t seed, char *line, double *worst) {
    for (int t = 0; t < c->n; t++) {
        double lr, best, es_best;
        int bad, cool, stop, wait, better, used = 0;
        int got = sscanf(line, "%lf %lf %d %d %d %lf %d %d%n", &lr, &best, &bad, &cool, &stop,
                         &es_best, &wait, &better, &used);
        ck_assert_msg(got == 8, "case %llu: PyTorch's line ends at epoch %d",
                      (unsigned long long)seed, t + 1);
        line += used + (line[used] == ';');
        int reduced = 0, improved = 0, halt = 0;
        double now = c->lr0 * c->p.scale; /* what PyTorch's param_group['lr'] holds */
        ck_assert_int_eq(clnet_plateau_observe(&c->p, c->v[t], now, &reduced), CLNET_OK);
        ck_assert_int_eq(clnet_monitor_observe(&c->m, c->v[t], &improved, &halt), CLNET_OK);
        double mine = c->lr0 * c->p.scale, d = fabs(mine - lr) / lr;
        *worst = fmax(*worst, d);
        if (d > 1e-12 || !same(c->p.best, best) || c->p.bad_epochs != bad ||
            c->p.cooldown_left != cool || halt != stop || !same(c->m.stop_best, es_best) ||
            c->m.wait != wait || improved != better) {
            printf("case %llu, epoch %d, value %.17g: clnet lr %.17g best %.17g bad %d cooldown "
                   "%d stop %d best %.17g wait %d improved %d; PyTorch %.17g %.17g %d %d, "
                   "Lightning %d %.17g %d, best so far %d\n",
                   (unsigned long long)seed, t + 1, c->v[t], mine, c->p.best, c->p.bad_epochs,
                   c->p.cooldown_left, halt, c->m.stop_best, c->m.wait, improved, lr, best, bad,
                   cool, stop, es_best, wait, better);
            return 1;
        }
        (void)reduced;
    }
    return 0;
}

static const char *torch_python(void) {
    const char *p = getenv("CLNET_TORCH_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

/* Generated cases (CLNET_PLATEAU_SEED replays them; the seed is printed) through
 * clnet_plateau against torch.optim.lr_scheduler.ReduceLROnPlateau, the learning rate, best,
 * bad epochs and cooldown after every epoch; and clnet_monitor against Lightning's
 * EarlyStopping (transcribed in tests/epoch_metrics_ref.py) and the best so far. */
START_TEST(plateau_and_early_stop_match_pytorch) {
    char cmd[1024], dir[256], path[300];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", torch_python());
    if (system(cmd) != 0) {
        test_skip("%s cannot import torch (apt-get install python3-torch)", torch_python());
        return;
    }
    uint64_t seed = test_seed_from_env("CLNET_PLATEAU_SEED", 20261204);
    static metric_case cases[CASES];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < CASES; i++)
        make_case(&cases[i], seed + (uint64_t)i), write_case(f, &cases[i]);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s/../epoch_metrics_ref.py %s", torch_python(),
             CLNET_FIXTURES_DIR, path);
    FILE *ref = popen(cmd, "r");
    ck_assert_ptr_nonnull(ref);
    static char line[MAX_EPOCHS * 200];
    int failed = 0, reductions = 0, cooled = 0, stops = 0, nans = 0;
    double worst = 0;
    for (int i = 0; i < CASES; i++) {
        ck_assert_msg(fgets(line, sizeof line, ref) != NULL, "%s: no line for case %d", cmd, i);
        failed += check_case(&cases[i], seed + (uint64_t)i, line, &worst);
        reductions += cases[i].p.reductions;
        cooled += cases[i].p.cooldown > 0 && cases[i].p.reductions > 0;
        stops += cases[i].m.wait >= cases[i].m.patience;
        for (int t = 0; t < cases[i].n; t++) nans += isnan(cases[i].v[t]);
    }
    ck_assert_int_eq(pclose(ref), 0);
    printf("%d cases from seed %llu (CLNET_PLATEAU_SEED replays): %d reductions, %d cases "
           "reduced with a cooldown, %d ending in an early stop, %d NaN epochs; the learning "
           "rate within %.1e of PyTorch's\n",
           CASES, (unsigned long long)seed, reductions, cooled, stops, nans, worst);
    ck_assert_msg(!failed, "%d cases differ from PyTorch (seed %llu)", failed,
                  (unsigned long long)seed);
    ck_assert_msg(reductions > CASES && cooled > 0 && stops > 0 && nans > 0,
                  "the cases do not exercise reductions, cooldowns, stops and NaNs");
}
END_TEST

/* Bad settings are refused with a message, the state left alone; edge cases as PyTorch. */
START_TEST(plateau_and_monitor_check_their_settings) {
    clnet_plateau p;
    clnet_plateau_defaults(&p, 0);
    ck_assert(p.factor == 0.1 && p.patience == 10 && p.threshold == 1e-4 && p.eps == 1e-8);
    ck_assert(p.scale == 1.0 && isinf(p.best) && p.best > 0);
    p.factor = 1.0;
    ck_assert_int_eq(clnet_plateau_observe(&p, 1.0, 0.1, NULL), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "factor 1"), "%s", clnet_last_error());
    ck_assert_int_eq(p.epochs, 0);
    p.factor = 0.5;
    ck_assert_int_eq(clnet_plateau_observe(&p, 1.0, 0.0, NULL), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_plateau_observe(NULL, 1.0, 0.1, NULL), CLNET_ERR_INVALID_ARGUMENT);
    /* patience 0: every epoch that is no better reduces; min_lr stops it */
    p.patience = 0, p.min_lr = 0.03;
    int reduced = 0;
    ck_assert_int_eq(clnet_plateau_observe(&p, 1.0, 0.1, &reduced), CLNET_OK);
    ck_assert_int_eq(reduced, 0);
    ck_assert_int_eq(clnet_plateau_observe(&p, 1.0, 0.1, &reduced), CLNET_OK);
    ck_assert(reduced && p.scale == 0.5);
    ck_assert_int_eq(clnet_plateau_observe(&p, 1.0, 0.05, &reduced), CLNET_OK);
    ck_assert(reduced && fabs(p.scale * 0.1 - 0.03) < 1e-15); /* max(0.025, min_lr) */
    ck_assert_int_eq(clnet_plateau_observe(&p, 1.0, 0.03, &reduced), CLNET_OK);
    ck_assert(!reduced && p.reductions == 2);
    clnet_monitor m;
    clnet_monitor_defaults(&m, 1);
    ck_assert(isnan(m.best) && m.best_epoch == 0 && isinf(m.stop_best) && m.stop_best < 0);
    m.min_delta = -1;
    ck_assert_int_eq(clnet_monitor_observe(&m, 0.5, NULL, NULL), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "min_delta"), "%s", clnet_last_error());
    ck_assert_int_eq(m.epochs, 0);
    m.min_delta = 0;
    int improved = 0, stop = 1;
    ck_assert_int_eq(clnet_monitor_observe(&m, 0.5, &improved, &stop), CLNET_OK);
    ck_assert(improved && !stop && m.best == 0.5 && m.best_epoch == 1);
    ck_assert_int_eq(clnet_monitor_observe(&m, NAN, &improved, &stop), CLNET_OK);
    ck_assert(!improved && !stop); /* patience 0: never stops */
    ck_assert_int_eq(clnet_monitor_observe(NULL, 0.5, NULL, NULL), CLNET_ERR_INVALID_ARGUMENT);
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
    tcase_add_test(t, plateau_and_early_stop_match_pytorch);
    tcase_add_test(t, plateau_and_monitor_check_their_settings);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
