/* `clnet bench`: training throughput of each device alone and of all of
 * them together, balanced and equally split, on random data (which costs
 * what real data costs). The last line is
 *   aggregate: images_per_s=<n> efficiency=<e> equal_split_efficiency=<e>
 * where efficiency is the throughput of all devices together over the sum of
 * each device's throughput alone. Before it, the line
 *   ceiling: ratio=<c> min=<a> max=<b> rounds=<k> share_efficiency=<s>
 *            efficiency_over_ceiling=<e> over_min=<a> over_max=<b>
 * says what the machine allows. Each device runs alone with its share of
 * the batch (as the balanced split gives it); share_efficiency is the
 * throughput of all devices together over the sum of those. The ratio is
 * those single-device runs all at once (one thread each, as separate
 * processes would run them) over the sum of each alone in the same round:
 * devices that share cores, caches or memory bandwidth slow each other down
 * whoever drives them. Every round measures all three side by side, and its
 * efficiency over the ceiling is its share_efficiency over its ratio: what
 * clnet's own coordination keeps. The line gives the medians over the
 * rounds, and the spread of the last figure.
 *
 * Shared machines drift, so the configurations are measured side by side:
 * all are set up first, then timed in turn for `--rounds` rounds, and each
 * figure is the median of its rounds. A configuration that would take more
 * than BUDGET seconds a round (a simulator alone, or an equal split that hands
 * a simulator half the batch) is estimated instead, from a short timed run or
 * from the measured rates, and the output says so. */
#include "cli.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUDGET         30.0
#define MAX_CONFIGS    (CLNET_MAX_DEVICES + 2) /* each device alone, balanced, equal */
#define CEILING_ROUNDS 5                       /* at least, whatever --rounds says */
#define MAX_ROUNDS     15

typedef struct {
    char what[160];
    clnet_runtime *rt; /* owned when the configuration has its own */
    clnet_net *net;
    double estimate;        /* > 0: not timed, this is the estimated images/s */
    int estimated_from;     /* samples a step of the estimate's timing */
    double ips[MAX_ROUNDS]; /* one per round */
    /* a device alone, for the ceiling: its share of the balanced split */
    int share;
    double by_share[MAX_ROUNDS]; /* images/s alone, steps of its share */
    double once[MAX_ROUNDS];     /* images/s, steps of its share, with all at once */
} config;

typedef struct {
    long batch, steps, rounds;
    cli_batch b;
} bench_data;

static int fail(const char *what) {
    fprintf(stderr, "clnet bench: %s: %s\n", what, clnet_last_error());
    return 1;
}

/* Seconds of one training step of n samples, the last of `times`. */
static double time_steps(config *c, const bench_data *d, int n, int times) {
    double t = 0;
    for (int s = 0; s < times; s++) {
        double t0 = clnet_seconds();
        if (cli_random_step(c->net, &d->b, n) != CLNET_OK) return -1;
        t = clnet_seconds() - t0;
    }
    return t;
}

/* Loads, binds and warms up a configuration; a single device too slow to
 * time whole batches gets an estimate from a few samples, or from a whole
 * batch where a step is fast but for costs that do not grow with the
 * samples (a large model's update on a GPU). */
static int set_up(config *c, const char *model, const bench_data *d, const double *split,
                  int alone) {
    if (clnet_net_load(&c->net, model) != CLNET_OK || clnet_net_init(c->net, 1) != CLNET_OK ||
        clnet_net_bind(c->net, c->rt, (int)d->batch) != CLNET_OK)
        return fail(c->what);
    if (split && clnet_net_set_split(c->net, split, clnet_net_device_count(c->net)) != CLNET_OK)
        return fail(c->what);
    if (alone) { /* a short run first: is timing whole batches affordable? */
        int few = d->batch < 4 ? (int)d->batch : 4;
        double t = time_steps(c, d, few, 2); /* the first builds kernels */
        if (t < 0) return fail(c->what);
        double step = t * (double)d->batch / few; /* overestimated by the fixed costs */
        c->estimated_from = few;
        if ((3 + d->steps) * step > BUDGET && step < BUDGET / 8) {
            if ((step = time_steps(c, d, (int)d->batch, 2)) < 0) return fail(c->what);
            c->estimated_from = (int)d->batch;
        }
        if ((3 + d->steps) * step > BUDGET) {
            c->estimate = d->batch / step;
            return 0;
        }
    }
    for (int s = 0; s < 3; s++) /* warm-up; lets the balancer settle */
        if (cli_random_step(c->net, &d->b, (int)d->batch) != CLNET_OK) return fail(c->what);
    return 0;
}

/* Images/s of --steps steps of n samples into *ips. */
static int time_images(config *c, const bench_data *d, int n, double *ips) {
    double t0 = clnet_seconds();
    for (long s = 0; s < d->steps; s++)
        if (cli_random_step(c->net, &d->b, n) != CLNET_OK) return fail(c->what);
    *ips = (double)d->steps * n / (clnet_seconds() - t0);
    return 0;
}

static int time_round(config *c, const bench_data *d, int round) {
    return time_images(c, d, (int)d->batch, &c->ips[round]);
}

/* ---- the ceiling: every device alone, all at once --------------------------------- */

typedef struct {
    config *c;
    const bench_data *d;
    int round, ok;
    atomic_int *running; /* devices still in their timed steps */
} at_once_job;

/* One device's timed steps while the others run theirs; then more steps,
 * untimed, until every device is done, so that no device's timed steps
 * ever run alone. */
static void *at_once_thread(void *arg) {
    at_once_job *j = arg;
    const bench_data *d = j->d;
    int n = j->c->share;
    double t0 = clnet_seconds();
    for (long s = 0; s < d->steps && j->ok; s++)
        j->ok = cli_random_step(j->c->net, &d->b, n) == CLNET_OK;
    j->c->once[j->round] = (double)d->steps * n / (clnet_seconds() - t0);
    atomic_fetch_sub(j->running, 1);
    while (j->ok && atomic_load(j->running) > 0)
        j->ok = cli_random_step(j->c->net, &d->b, n) == CLNET_OK;
    return NULL;
}

/* A device alone with its share, in round `round` of the ceiling. */
static int time_by_share(config *c, const bench_data *d, int round) {
    return time_images(c, d, c->share, &c->by_share[round]);
}

/* Round `round` of the ceiling: the n device alone configurations at once. */
static int time_at_once(config *alone, int n, const bench_data *d, int round) {
    at_once_job jobs[CLNET_MAX_DEVICES];
    pthread_t threads[CLNET_MAX_DEVICES];
    atomic_int running = n;
    int started = 0, rc = 0;
    for (; started < n; started++) {
        jobs[started] = (at_once_job){&alone[started], d, round, 1, &running};
        if (pthread_create(&threads[started], NULL, at_once_thread, &jobs[started])) break;
    }
    atomic_fetch_sub(&running, n - started); /* threads that never started run nothing */
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        if (!jobs[i].ok && !rc) rc = fail(alone[i].what);
    }
    if (started < n && !rc) {
        fprintf(stderr, "clnet bench: a thread for the devices at once could not start\n");
        rc = 1;
    }
    return rc;
}

static double median(double *v, int n) {
    for (int i = 1; i < n; i++) /* insertion sort: a handful of rounds */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_shares(const config *c, double ips) {
    printf("%s: images_per_s=%.0f (", c->what, ips);
    for (int i = 0; i < clnet_net_device_count(c->net); i++) {
        clnet_device_share d;
        clnet_net_device_share(c->net, i, &d);
        printf("%sdevice %d: %d samples a step", i ? ", " : "", d.device, d.share);
    }
    printf(")\n");
}

typedef struct {
    const char *model, *devices;
    long batch, steps, rounds;
    int startup;
} bench_options;

static const cli_opt bench_opts[] = {
    CLI_DEVICES(bench_options, "which devices (see clnet devices): each alone, then all"),
    CLI_BATCH(bench_options, "samples per step"),
    {.name = "--steps",
     .arg = "N",
     .type = CLI_INT,
     .at = CLI_AT(bench_options, steps),
     .min = 1,
     .max = 1000000,
     .def = "10",
     .help = "timed steps a round"},
    {.name = "--rounds",
     .arg = "R",
     .type = CLI_INT,
     .at = CLI_AT(bench_options, rounds),
     .min = 1,
     .max = MAX_ROUNDS,
     .def = "3",
     .help = "rounds; each figure is the median of its rounds"},
    {.name = "--startup",
     .type = CLI_FLAG,
     .at = CLI_AT(bench_options, startup),
     .help = "instead: what a first step costs, program by program (CLNET_STARTUP=1)"},
    {0},
};

const cli_command cli_bench_cmd = {
    .name = "bench",
    .size = sizeof(bench_options),
    CLI_MODEL(bench_options),
    .opts = bench_opts,
    .footer = "Training speed on random data of each device alone and of all together; the\n"
              "last lines are\n"
              "  ceiling: ratio=<c> min=<a> max=<b> rounds=<k> share_efficiency=<s>\n"
              "           efficiency_over_ceiling=<e> over_min=<a> over_max=<b>\n"
              "  aggregate: images_per_s=<n> efficiency=<e> equal_split_efficiency=<e>\n"
              "efficiency: all devices together over the sum of each alone at the whole batch;\n"
              "share_efficiency: the same against each alone with its share of the balanced\n"
              "split; ratio: those single-device runs all at once (one thread each, as\n"
              "separate processes) over each alone: what the machine allows.\n"
              "efficiency_over_ceiling: share_efficiency over ratio, each round's measured\n"
              "side by side. Medians of at least 5 rounds, with the spread of the ratio and\n"
              "of efficiency_over_ceiling (over_min, over_max).\n"
              "With --startup, one training step and one evaluation on all the devices\n"
              "instead, then a report on stderr of each program built (family, options,\n"
              "seconds), each binary read back for clnet's cache, and each kernel's first\n"
              "launch at a work-group size (waited for); run it with empty caches to see a\n"
              "cold start.\n",
};

/* A benchmark: its configurations, set up side by side. */
typedef struct {
    bench_options o;
    bench_data d;
    clnet_runtime *all; /* every selected device, shared by the configurations of all */
    config c[MAX_CONFIGS];
    int n, nc;                    /* devices; configurations set up */
    int balanced, equal;          /* the indices of the two configurations of all devices */
    double slowest;               /* an equal split's seconds a step, from the balanced rates */
    double ceiling[MAX_ROUNDS];   /* per round: all alone at once over each alone */
    double share_eff[MAX_ROUNDS]; /* per round: balanced over the sum of each alone by share */
    double over[MAX_ROUNDS];      /* per round: share_eff over ceiling */
    int ceiling_rounds;           /* 0: not measured */
} bench;

static void bench_free(bench *b) {
    for (int k = 0; k < MAX_CONFIGS; k++) {
        clnet_net_free(b->c[k].net);
        if (b->c[k].rt != b->all) clnet_runtime_free(b->c[k].rt);
    }
    cli_batch_free(&b->d.b);
    clnet_runtime_free(b->all);
}

/* A batch of random samples of the model's input shape, labels over its classes. */
static int make_data(bench_data *d, const char *model) {
    clnet_net *probe = NULL;
    if (clnet_net_load(&probe, model) != CLNET_OK) return fail(model);
    int ok = cli_random_batch(probe, d->batch, &d->b);
    clnet_net_free(probe);
    return ok ? 0 : 1;
}

static int set_up_alone(bench *b) {
    for (int i = 0; i < b->n; i++, b->nc++) {
        config *c = &b->c[b->nc];
        clnet_device_info info;
        clnet_runtime_device_info(b->all, i, &info);
        char one[16];
        snprintf(one, sizeof one, "%d", info.index);
        snprintf(c->what, sizeof c->what, "device %d (%s) alone", info.index, info.name);
        clnet_status st = clnet_runtime_create(&c->rt, one);
        if (st != CLNET_OK) {
            fail("devices");
            return cli_exit_code(st);
        }
        if (set_up(c, b->o.model, &b->d, NULL, 1)) return 1;
    }
    return 0;
}

/* All devices, balanced and equally split. An equal split waits for the slowest
 * device's share: it is estimated from the balanced rates when timing it would
 * take too long. */
static int set_up_together(bench *b) {
    config *balanced = &b->c[b->balanced = b->nc++], *equal = &b->c[b->equal = b->nc++];
    snprintf(balanced->what, sizeof balanced->what, "all devices, balanced split");
    snprintf(equal->what, sizeof equal->what, "all devices, equal split");
    balanced->rt = equal->rt = b->all;
    if (set_up(balanced, b->o.model, &b->d, NULL, 0)) return 1;
    for (int i = 0; i < clnet_net_device_count(balanced->net); i++) {
        clnet_device_share s;
        clnet_net_device_share(balanced->net, i, &s);
        double t = (double)b->d.batch / b->n / (s.images_per_s > 0 ? s.images_per_s : 1e-9);
        if (t > b->slowest) b->slowest = t;
    }
    if ((3 + b->d.steps) * b->slowest > BUDGET) {
        equal->estimate = b->d.batch / b->slowest;
        return 0;
    }
    double w[CLNET_MAX_DEVICES];
    for (int i = 0; i < b->n; i++) w[i] = 1;
    return set_up(equal, b->o.model, &b->d, w, 0);
}

/* Each configuration's line, then the aggregate line. */
static void report(bench *b) {
    double ips[MAX_CONFIGS], sum = 0;
    for (int k = 0; k < b->nc; k++) {
        config *c = &b->c[k];
        ips[k] = c->estimate > 0 ? c->estimate : median(c->ips, (int)b->d.rounds);
        if (k < b->n) {
            sum += ips[k];
            printf("%s: images_per_s=%.*f", c->what, ips[k] < 10 ? 2 : 0, ips[k]);
            if (c->estimate > 0)
                printf(" (estimated from a step of %d samples: too slow to time %ld batches)",
                       c->estimated_from, b->d.steps + 3);
            printf("\n");
        } else if (c->estimate > 0) {
            printf("%s: images_per_s=%.1f (estimated from the measured rates: %.0f s a step)\n",
                   c->what, ips[k], b->slowest);
        } else {
            print_shares(c, ips[k]);
        }
    }
    if (b->ceiling_rounds) {
        int k = b->ceiling_rounds;
        double c = median(b->ceiling, k), e = median(b->share_eff, k), o = median(b->over, k);
        printf("ceiling: ratio=%.3f min=%.3f max=%.3f rounds=%d share_efficiency=%.3f "
               "efficiency_over_ceiling=%.3f over_min=%.3f over_max=%.3f\n",
               c, b->ceiling[0], b->ceiling[k - 1], k, e, o, b->over[0],
               b->over[k - 1]); /* sorted by median */
    } else if (b->n > 1) {
        printf("ceiling: not measured (a device alone is estimated, or has no share)\n");
    }
    printf("aggregate: images_per_s=%.0f efficiency=%.3f equal_split_efficiency=%.3f\n",
           ips[b->balanced], ips[b->balanced] / sum, ips[b->equal] / sum);
}

/* Round r: the configurations in turn (in the first --rounds rounds; the
 * balanced and the equal split in turns first, since whichever comes right
 * after the devices alone ran slower on a VM that reclaims idle memory),
 * then for the ceiling each device alone with its share and all of them at
 * once, beside the balanced split (timed again where the round has not). */
static int time_round_all(bench *b, int r) {
    const bench_data *d = &b->d;
    for (int j = 0; j < b->nc && r < d->rounds; j++) {
        int k = j < b->n || r % 2 == 0 ? j : b->n + b->nc - 1 - j;
        if (b->c[k].estimate == 0 && time_round(&b->c[k], d, r)) return 1;
    }
    if (r >= b->ceiling_rounds) return 0;
    if (r >= d->rounds && time_round(&b->c[b->balanced], d, r)) return 1;
    for (int i = 0; i < b->n; i++)
        if (time_by_share(&b->c[i], d, r)) return 1;
    if (time_at_once(b->c, b->n, d, r)) return 1;
    double once = 0, alone = 0;
    for (int i = 0; i < b->n; i++) {
        once += b->c[i].once[r];
        alone += b->c[i].by_share[r];
    }
    b->ceiling[r] = once / alone;
    b->share_eff[r] = b->c[b->balanced].ips[r] / alone;
    b->over[r] = b->share_eff[r] / b->ceiling[r];
    return 0;
}

static int run_bench(bench *b) {
    bench_data *d = &b->d;
    clnet_status st = clnet_runtime_create(&b->all, b->o.devices);
    if (st != CLNET_OK) {
        fprintf(stderr, "clnet: devices: %s\n", clnet_last_error());
        return cli_exit_code(st);
    }
    b->n = clnet_runtime_device_count(b->all);
    if (b->n > CLNET_MAX_DEVICES) b->n = CLNET_MAX_DEVICES;
    if (make_data(d, b->o.model)) return 1;
    printf("model %s, batch %ld, %ld timed steps, median of %ld rounds\n", b->o.model, d->batch,
           d->steps, d->rounds);
    if (set_up_alone(b) || set_up_together(b)) return 1;
    int timed = b->n > 1;
    for (int i = 0; i < b->n; i++) {
        clnet_device_share share;
        clnet_net_device_share(b->c[b->balanced].net, i, &share);
        b->c[i].share = share.share;
        timed &= b->c[i].estimate == 0 && share.share > 0;
    }
    b->ceiling_rounds = !timed ? 0 : d->rounds > CEILING_ROUNDS ? (int)d->rounds : CEILING_ROUNDS;
    int rounds = b->ceiling_rounds > d->rounds ? b->ceiling_rounds : (int)d->rounds;
    for (int r = 0; r < rounds; r++)
        if (time_round_all(b, r)) return 1;
    report(b);
    return 0;
}

int cmd_bench(int argc, char **argv) {
    bench *b = calloc(1, sizeof *b);
    int rc = 1;
    if (!b) return 1;
    if (cli_parse(&cli_bench_cmd, argc, argv, &b->o, &rc)) {
        b->d = (bench_data){.batch = b->o.batch, .steps = b->o.steps, .rounds = b->o.rounds};
        if (!b->o.model) {
            rc = cli_which_model("bench");
        } else if (b->o.startup) {
            setenv("CLNET_STARTUP", "1", 1); /* the library prints its report at exit */
            rc = cli_first_step("bench", "first step and evaluation of", b->o.model, b->o.batch,
                                b->o.devices);
        } else {
            rc = run_bench(b);
        }
    }
    bench_free(b);
    free(b);
    return rc;
}
