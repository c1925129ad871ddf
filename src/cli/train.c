/* `clnet train` and `clnet eval`: the training loop a user runs, written on
 * the public API alone: its steps, progress, logs, reports and saves. What the
 * two commands share (the MPI job, the session of net, data and devices, the
 * test set's evaluation, --split) is in train_session.c. */
#include "eval_classes.h"
#include "train_monitor.h"
#include "train_session.h"
#include "train_settings.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) {
    stop_signal = sig;
}

/* Under MPI a signal stops every rank at once, without a new save (the
 * ranks would reach it at different steps): this rank dies by it, and
 * mpirun ends the others. The last --save-every checkpoint stands. */
static void on_signal_mpi(int sig) {
    static const char text[] = "clnet: stopped by a signal: every rank stops, and the last "
                               "checkpoint stands (no new save under mpirun)\n";
    ssize_t ignored = write(2, text, sizeof text - 1);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct {
    double *train_loss, *train_acc, *test_acc, *seconds, *ips, *epoch;
    int n, cap;
} history;

static void history_add(history *h, double epoch, double tl, double ta, double te, double secs,
                        double ips) {
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 16;
        double **cols[] = {&h->train_loss, &h->train_acc, &h->test_acc,
                           &h->seconds,    &h->ips,       &h->epoch};
        for (int i = 0; i < 6; i++) *cols[i] = realloc(*cols[i], (size_t)h->cap * sizeof(double));
    }
    h->epoch[h->n] = epoch;
    h->train_loss[h->n] = tl;
    h->train_acc[h->n] = ta;
    h->test_acc[h->n] = te;
    h->seconds[h->n] = secs;
    h->ips[h->n] = ips;
    h->n++;
}

static void history_free(history *h) {
    free(h->train_loss), free(h->train_acc), free(h->test_acc);
    free(h->seconds), free(h->ips), free(h->epoch);
}

/* An accuracy with `digits` decimals, or `none` when it is NaN: the test set was not
 * evaluated, and no number stands in for one. */
static const char *accuracy_text(char *out, size_t cap, double acc, int digits, const char *none) {
    if (isnan(acc))
        snprintf(out, cap, "%s", none);
    else
        snprintf(out, cap, "%.*f", digits, acc);
    return out;
}

static void progress_bar(int epoch, long epochs, int done, int total, double ips, double loss,
                         double eta) {
    char bar[31];
    int fill = total ? 30 * done / total : 0;
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\repoch %d/%ld [%s] %3d%%  %6.0f img/s  loss %.4f  ETA %4.0fs ", epoch, epochs,
            bar, total ? 100 * done / total : 0, ips, loss, eta);
    fflush(stderr);
}

/* --step-log: one CSV line every `every` optimizer steps with the figures of the
 * steps since the previous line. Steps may arrive one at a time or in chunks
 * (async); a line is written at the end of a chunk whose steps crossed a
 * multiple of `every`. */
typedef struct {
    FILE *f;
    long every;
    double loss, samples, seconds; /* since the last line: loss summed per sample */
    int grad_norm;   /* the file has the grad_norm column (not one a resume appends to without) */
    int norms;       /* the gradient's norm is measured (--clip-grad-norm) */
    double norm_sum; /* since the last line: the steps' norms, and how many */
    int norm_steps;
} step_log;

#define STEP_LOG_HEADER "step,epoch,loss,lr,images_per_s,grad_norm"

/* Appends to an existing file when resuming, so one run's lines continue the
 * interrupted run's; the header goes only into an empty file, and lines have
 * the columns of the header the file has (one written before grad_norm, none). */
static int step_log_open(step_log *l, const char *path, long every, int resume, int norms) {
    memset(l, 0, sizeof *l);
    l->every = every;
    l->norms = norms;
    l->grad_norm = 1;
    l->f = fopen(path, resume ? "a+" : "w");
    if (!l->f) {
        fprintf(stderr, "clnet: cannot write %s\n", path);
        return 1;
    }
    char first[128] = "";
    rewind(l->f);
    if (resume && fgets(first, sizeof first, l->f) && *first)
        l->grad_norm = strncmp(first, STEP_LOG_HEADER, strlen(STEP_LOG_HEADER)) == 0;
    fseek(l->f, 0, SEEK_END);
    if (ftell(l->f) == 0) fprintf(l->f, STEP_LOG_HEADER "\n");
    fflush(l->f);
    return 0;
}

/* Counts the steps from step `before` to `after` (1 or a chunk), which took
 * `seconds` and began at learning rate `lr`, in epoch `epoch` (1-based). A
 * line's grad_norm is the mean of its steps' norms before clipping (empty
 * where none was measured: no --clip-grad-norm, or --sync async). */
static void step_log_add(step_log *l, const clnet_step_result *r, double seconds, int64_t before,
                         int64_t after, int epoch, double lr, int one_step) {
    if (!l->f) return;
    l->loss += (double)r->loss * r->n;
    l->samples += r->n;
    l->seconds += seconds;
    if (l->norms && one_step) l->norm_sum += r->grad_norm, l->norm_steps++;
    if (after / l->every == before / l->every || l->samples <= 0) return;
    /* flushed line by line: a run killed halfway leaves a readable file */
    fprintf(l->f, "%" PRId64 ",%d,%.6f,%.7g,%.1f", after, epoch, l->loss / l->samples, lr,
            l->samples / (l->seconds > 0 ? l->seconds : 1));
    if (l->grad_norm && l->norm_steps)
        fprintf(l->f, ",%.7g\n", l->norm_sum / l->norm_steps);
    else
        fprintf(l->f, l->grad_norm ? ",\n" : "\n");
    fflush(l->f);
    l->loss = 0, l->samples = 0, l->seconds = 0, l->norm_sum = 0, l->norm_steps = 0;
}

/* One line per device with its share of the epoch and its speed (under
 * mpirun, every device of every rank, each named with its rank). */
static void report_devices(train_session *s, const int64_t *before) {
    int n = clnet_net_device_count(s->net);
    if (n < 2) return;
    for (int i = 0; i < n; i++) {
        clnet_device_share d;
        clnet_net_device_share(s->net, i, &d);
        char who[32] = "";
        if (clnet_mpi_size() > 1) snprintf(who, sizeof who, "rank %d ", d.rank);
        int64_t done = d.samples - before[i];
        if (d.dropped)
            fprintf(stderr,
                    "  %sdevice %d (%s): dropped, having failed in step %lld (%lld samples this "
                    "epoch)\n",
                    who, d.device, d.name, (long long)d.dropped_step, (long long)done);
        else if (done > 0)
            fprintf(stderr, "  %sdevice %d (%s): %lld samples, %.0f images/s\n", who, d.device,
                    d.name, (long long)done, d.images_per_s);
        else
            fprintf(stderr, "  %sdevice %d (%s): no share (%.1f images/s: too slow to help)\n", who,
                    d.device, d.name, d.images_per_s);
    }
}

/* Each device's samples so far, to count an epoch's share from. */
static void count_shares(const clnet_net *net, int64_t *samples) {
    int n = clnet_net_device_count(net);
    for (int i = 0; i < n && i < CLNET_MAX_DEVICES; i++) {
        clnet_device_share d;
        clnet_net_device_share(net, i, &d);
        samples[i] = d.samples;
    }
}

/* A training run: what cmd_train sets up, then where the loop stands. */
typedef struct {
    train_options o;
    train_session s;
    clnet_loader *loader;
    history h;
    FILE *csv; /* --log */
    step_log slog;
    clnet_progress resumed;       /* with --resume: where the checkpoint stopped */
    char settings[CLNET_RUN_CAP]; /* what its checkpoints record (train_settings.c) */
    uint64_t init_seed, data_seed;
    int per_epoch, count, tty;
    int64_t max_steps;
    int64_t before[CLNET_MAX_DEVICES]; /* each device's samples when the epoch began */
    double train_seconds, run_samples, last_loss, last_bar;
    double test_loss, val_loss, val_acc; /* the epoch's evaluations; NaN: not evaluated */
    int epoch, epoch_batches;
    int64_t skipped, epoch_skipped; /* steps not applied: a NaN or infinity (--skip-nonfinite) */
    int64_t next_position; /* where the next batch starts, for checkpoints: (epoch, position) */
    double epoch_loss, epoch_start, epoch_train_seconds;
    long epoch_correct, epoch_seen, epoch_answers; /* answers: samples, or their positions */
    train_watch watch; /* --monitor's figure: the best so far, --plateau, --early-stop */
    int stopped_early; /* --early-stop ended the run */
} run;

/* A checkpoint of the run where it stands: its progress says the next batch
 * starts at sample r->next_position of epoch r->epoch's order, and carries the
 * watch on --monitor. */
static int save(const run *r, const char *path) {
    const train_session *s = &r->s;
    clnet_progress *p = calloc(1, sizeof *p);
    if (!p) {
        fprintf(stderr, "clnet: saving %s: out of memory\n", path);
        return 1;
    }
    *p = (clnet_progress){.epoch = r->epoch,
                          .position = r->next_position,
                          .data_seed = r->data_seed,
                          .init_seed = r->init_seed,
                          .mean = s->norm.mean, /* its first channel's, when one a channel */
                          .std = s->norm.std,
                          .noise = s->noise,
                          .noise_seed = s->noise_seed,
                          .monitor = r->watch.monitor,
                          .plateau = r->watch.plateau};
    if (p->position >= clnet_dataset_count(s->train)) p->epoch++, p->position = 0;
    snprintf(p->run, sizeof p->run, "%s", r->settings);
    cli_class_names(s->train, p->class_names, sizeof p->class_names);
    clnet_status st = clnet_net_save(s->net, path, p);
    free(p);
    return st != CLNET_OK ? train_fail("saving a checkpoint") : 0;
}

/* Every file the run writes can be written, before any work: 2 if not. */
static int check_outputs(const train_options *o) {
    int ok = cli_writable("--save", o->save) && cli_writable("--log", o->log) &&
             cli_writable("--plot", o->plot) && cli_writable("--step-log", o->step_log) &&
             cli_writable("--save-best", o->save_best);
    return ok ? 0 : 2;
}

/* With --resume, the settings of the checkpoint's run where the command line
 * gives none, and a refusal (2) where it gives others (train_settings.c). */
static int resume_settings(run *r) {
    if (!r->o.resume) return 0;
    clnet_progress *p = calloc(1, sizeof *p);
    if (!p) return 1;
    int rc = clnet_checkpoint_progress(r->o.resume, p) != CLNET_OK
                 ? train_fail("resume")
                 : train_settings_resume(&r->o, p->run);
    free(p);
    return rc;
}

/* The figure --plateau, --early-stop and --save-best watch, checked against what
 * the run computes (train_monitor.c); then what its checkpoints will record. */
static int choose_monitor(run *r) {
    int rc = train_monitor_choose(&r->o, clnet_net_is_classifier(r->s.net), r->s.val != NULL);
    if (rc) return rc;
    train_settings_write(&r->o, r->settings, sizeof r->settings);
    return 0;
}

/* A batch larger than the training set: each step takes the whole set. */
static int fit_batch(run *r) {
    int n = clnet_dataset_count(r->s.train);
    if (r->o.batch > n && n > 0) {
        if (train_is_root())
            fprintf(stderr,
                    "clnet: note: --batch %ld is more than the %d training samples: each step "
                    "takes all %d (one step an epoch)\n",
                    r->o.batch, n, n);
        r->o.batch = n;
    }
    return 0;
}

/* A resumed run with nothing left to train (its epochs, or --steps, done):
 * says so. */
static int finished(const run *r) {
    const train_options *o = &r->o;
    if (!o->resume) return 0;
    if (train_watch_stopped(&r->watch, o, r->epoch)) return 1;
    int64_t step = clnet_net_step(r->s.net);
    int done = o->steps_given ? step >= o->steps : r->epoch >= o->epochs;
    if (done && train_is_root()) {
        if (o->steps_given)
            fprintf(stderr,
                    "clnet: --resume %s: the run has taken %" PRId64
                    " steps (--steps %ld): nothing to train\n",
                    o->resume, step, o->steps);
        else
            fprintf(stderr,
                    "clnet: --resume %s: the run has trained its %ld epochs: nothing to train "
                    "(--epochs N --override epochs trains on)\n",
                    o->resume, o->epochs);
    }
    return done;
}

/* The parameters: the checkpoint's with --resume, else fresh ones from the seed. */
static int init_weights(run *r) {
    const train_options *o = &r->o;
    r->init_seed = r->data_seed = r->s.noise_seed = (uint64_t)o->seed;
    if (!o->resume)
        return clnet_net_init(r->s.net, r->init_seed) != CLNET_OK ? train_fail("initialisation")
                                                                  : 0;
    if (clnet_net_load_weights(r->s.net, o->resume, &r->resumed) != CLNET_OK)
        return train_fail("resume");
    r->data_seed = r->resumed.data_seed;
    r->init_seed = r->resumed.init_seed;
    if (r->resumed.noise != r->s.noise) { /* another task than the checkpoint's */
        char had[48] = "without --noise";
        if (r->resumed.noise > 0)
            snprintf(had, sizeof had, "with --noise %g", (double)r->resumed.noise);
        fprintf(stderr, "clnet: --resume %s: the run was trained %s: resume it %s\n", o->resume,
                had, had);
        return 2;
    }
    r->s.noise_seed = r->resumed.noise_seed;
    if (o->seed_given && (uint64_t)o->seed != r->data_seed)
        fprintf(stderr, "clnet: note: resuming with the checkpoint's seed %" PRIu64 "\n",
                r->data_seed);
    return 0;
}

/* The run's warm-up in steps (--warmup, its epochs at this run's steps an epoch), refused
 * (2) with a one-cycle schedule or where it leaves no step of the run to the schedule. */
static int warmup_steps(const run *r, int64_t total, int64_t *steps) {
    const train_options *o = &r->o;
    long w = 0;
    *steps = 0;
    if (!o->warmup) return 0;
    if (!train_warmup_steps(o->warmup, r->per_epoch, &w)) return 2;
    if (w > 0 && o->schedule == CLNET_SCHEDULE_ONECYCLE) {
        fprintf(stderr, "clnet: --warmup: --schedule onecycle warms up itself (the first "
                        "--pct-start of its steps, from --lr / --div-factor)\n");
        return 2;
    }
    if (w >= total) {
        fprintf(stderr,
                "clnet: --warmup %s is %ld steps, and the run has %" PRId64
                " (%ld epochs of %d): the warm-up must end before the run does\n",
                o->warmup, w, total, o->epochs, r->per_epoch);
        return 2;
    }
    *steps = w;
    return 0;
}

static int set_optimizer(run *r) {
    const train_options *o = &r->o;
    clnet_optimizer_config sgd;
    clnet_optimizer_defaults(&sgd);
    sgd.lr = (float)o->lr;
    sgd.momentum = (float)o->momentum;
    sgd.nesterov = o->nesterov;
    sgd.weight_decay = (float)o->wd;
    sgd.schedule = (clnet_schedule)o->schedule;
    sgd.total_steps = (int64_t)o->epochs * r->per_epoch;
    int rc = warmup_steps(r, sgd.total_steps, &sgd.warmup_steps);
    if (rc) return rc;
    if (o->warmup_factor > 0) sgd.warmup_start_factor = (float)o->warmup_factor;
    /* a third of the run after the warm-up */
    sgd.step_size = o->step_size ? o->step_size : (sgd.total_steps - sgd.warmup_steps + 2) / 3;
    sgd.gamma = (float)o->gamma;
    sgd.optimizer = (clnet_optimizer)o->optimizer;
    sgd.beta1 = (float)o->beta1;
    sgd.beta2 = (float)o->beta2;
    sgd.eps = (float)o->eps;
    sgd.pct_start = (float)o->pct_start;
    sgd.div_factor = (float)o->div_factor;
    sgd.final_div_factor = (float)o->final_div_factor;
    sgd.cycle_momentum = !o->no_cycle_momentum;
    sgd.base_momentum = (float)o->base_momentum;
    sgd.max_momentum = (float)o->max_momentum;
    sgd.clip_grad_norm = (float)o->clip_grad_norm;
    return clnet_net_set_optimizer(r->s.net, &sgd) != CLNET_OK ? train_fail("optimizer") : 0;
}

/* Weights, devices, the loader and the optimizer, at the checkpoint's place with --resume. */
static int start(run *r) {
    const train_options *o = &r->o;
    int rc = init_weights(r);
    if (rc) return rc;
    if (clnet_net_bind(r->s.net, r->s.rt, (int)o->batch) != CLNET_OK) return train_fail("devices");
    clnet_net_set_on_device_failure(r->s.net, o->stop_on_failure ? CLNET_ON_FAILURE_STOP
                                                                 : CLNET_ON_FAILURE_CONTINUE);
    if ((rc = train_apply_split(o, &r->s)) != 0) return rc;
    clnet_loader_config lc = {.batch = (int)o->batch,
                              .seed = r->data_seed,
                              .shuffle = 1,
                              .drop_last = 0,
                              .noise = r->s.noise,
                              .noise_seed = r->s.noise_seed,
                              .transforms = r->s.transforms};
    lc.transforms.seed = r->data_seed;
    train_normalise(&r->s, &lc);
    lc.threads = (int)o->loader_threads;
    if (clnet_loader_create(&r->loader, r->s.train, &lc) != CLNET_OK)
        return train_fail("training data");
    r->per_epoch = clnet_loader_batches_per_epoch(r->loader);
    r->count = clnet_dataset_count(r->s.train);
    if ((rc = set_optimizer(r)) != 0) return rc;
    if (o->resume &&
        clnet_loader_seek(r->loader, r->resumed.epoch, r->resumed.position) != CLNET_OK)
        return train_fail("resume");
    /* the net's learning-rate scale came with the checkpoint's optimizer state */
    train_watch_start(&r->watch, o, o->resume ? &r->resumed : NULL);
    return 0;
}

/* --log and --step-log, written by rank 0 alone. */
static int open_logs(run *r) {
    const train_options *o = &r->o;
    if (!train_is_root()) return 0;
    if (o->log) {
        r->csv = fopen(o->log, "w");
        if (!r->csv) {
            fprintf(stderr, "clnet: cannot write %s\n", o->log);
            return 1;
        }
        fprintf(r->csv, clnet_net_is_classifier(r->s.net)
                            ? "epoch,train_loss,train_accuracy,test_accuracy,seconds,images_per_s,"
                              "test_loss,val_loss,val_accuracy\n"
                            : "epoch,train_loss,test_loss,seconds,images_per_s,val_loss\n");
        fflush(r->csv);
    }
    return o->step_log ? step_log_open(&r->slog, o->step_log, o->log_every, o->resume != NULL,
                                       o->clip_grad_norm > 0)
                       : 0;
}

static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = clnet_mpi_size() > 1 ? on_signal_mpi : on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* A step that was not applied (a NaN or infinity in it): skipped while
 * --skip-nonfinite allows, with a line that says so; else the run stops.
 * 0: skipped. Every rank sees the same step fail (the loss and gradient
 * are sums over the ranks), so every rank decides alike. */
static int skip_or_stop(run *r) {
    if (r->skipped >= r->o.skip_nonfinite) {
        int rc = train_fail("training step");
        if (r->o.skip_nonfinite)
            fprintf(stderr,
                    "clnet: stopped: %" PRId64 " steps skipped already (--skip-nonfinite "
                    "%ld); the last checkpoint saved stands\n",
                    r->skipped, r->o.skip_nonfinite);
        else
            fprintf(stderr, "clnet: stopped; the last checkpoint saved stands (--skip-nonfinite N "
                            "skips up to N such steps; a lower --lr often avoids them)\n");
        return rc;
    }
    r->skipped++, r->epoch_skipped++;
    if (train_is_root())
        fprintf(stderr, "clnet: skipped (%" PRId64 " of --skip-nonfinite %ld): %s\n", r->skipped,
                r->o.skip_nonfinite, clnet_last_error());
    return 0;
}

/* One optimizer step, or with --sync async a few updates at a time, so that progress
 * and Ctrl-C stay prompt. *skipped: the step was not applied. */
static int take_step(run *r, clnet_step_result *res, int *skipped) {
    *skipped = 0;
    if (!r->o.async) {
        clnet_batch batch;
        clnet_status s = clnet_net_train_loader_step(r->s.net, r->loader, &batch, res);
        if (s == CLNET_ERR_NONFINITE) {
            int rc = skip_or_stop(r);
            if (rc) return rc;
            *skipped = 1;
        } else if (s != CLNET_OK) {
            return train_fail("training step");
        }
        r->next_position = batch.position + batch.n;
        r->epoch_batches++;
        return 0;
    }
    int64_t left = r->per_epoch - r->next_position / r->o.batch;
    int64_t chunk = left < 8 ? left : 8;
    if (chunk > r->max_steps - clnet_net_step(r->s.net))
        chunk = r->max_steps - clnet_net_step(r->s.net);
    if (clnet_net_train_async(r->s.net, r->loader, (int)chunk, (int)r->o.staleness, res) !=
        CLNET_OK)
        return train_fail("asynchronous training");
    r->next_position += res->n;
    r->epoch_batches += (int)chunk;
    return 0;
}

static double epoch_images_per_s(const run *r) {
    return r->epoch_seen / (r->epoch_train_seconds > 0 ? r->epoch_train_seconds : 1);
}

static void show_progress(run *r, int epoch_done) {
    if (!r->tty || (clnet_seconds() - r->last_bar <= 0.1 && !epoch_done)) return;
    const train_options *o = &r->o;
    double ips = epoch_images_per_s(r);
    int done = (int)((r->next_position + o->batch - 1) / o->batch);
    double eta = (r->per_epoch - done) * o->batch / (ips > 0 ? ips : 1);
    progress_bar(r->epoch + 1, o->epochs, done, r->per_epoch, ips, r->epoch_loss / r->epoch_seen,
                 eta);
    r->last_bar = clnet_seconds();
}

/* The epoch's lines and plot of a model without classes: its losses alone. */
static void report_epoch_loss(run *r, int epoch_done, double test_loss, double secs, double ips,
                              const char *skip_text) {
    const train_options *o = &r->o;
    history *h = &r->h;
    char test_text[32];
    if (train_is_root()) {
        char val_text[48] = "";
        if (r->s.val)
            snprintf(val_text, sizeof val_text, " val_loss=%s",
                     accuracy_text(test_text, sizeof test_text, r->val_loss, 4, "-"));
        fprintf(
            stderr, "epoch %d%s: train_loss=%.4f%s test_loss=%s seconds=%.1f images_per_s=%.0f%s\n",
            r->epoch + 1, epoch_done ? "" : " (partial)", r->last_loss, val_text,
            accuracy_text(test_text, sizeof test_text, test_loss, 4, "-"), secs, ips, skip_text);
        report_devices(&r->s, r->before);
    }
    count_shares(r->s.net, r->before);
    history_add(h, r->epoch + (epoch_done ? 1.0 : (double)r->epoch_batches / r->per_epoch),
                r->last_loss, NAN, test_loss, secs, ips);
    if (r->csv) {
        char val[32];
        fprintf(r->csv, "%d,%.6f,%s,%.3f,%.1f,%s\n", r->epoch + 1, r->last_loss,
                accuracy_text(test_text, sizeof test_text, test_loss, 6, ""), secs, ips,
                accuracy_text(val, sizeof val, r->val_loss, 6, ""));
        fflush(r->csv);
    }
    if (o->plot && h->n > 0 && train_is_root() &&
        clnet_write_loss_curves_svg(o->plot, o->model, h->epoch, h->train_loss, h->test_acc,
                                    h->n) != CLNET_OK)
        fprintf(stderr, "clnet: warning: plot: %s\n", clnet_last_error());
}

/* The epoch's line on stderr (and each device's share), its CSV line and the
 * plot; test_acc is the test loss for a model without classes. */
static void report_epoch(run *r, int epoch_done, double test_acc) {
    const train_options *o = &r->o;
    history *h = &r->h;
    double secs = clnet_seconds() - r->epoch_start, ips = epoch_images_per_s(r);
    double train_acc = (double)r->epoch_correct / (r->epoch_answers ? r->epoch_answers : 1);
    char test_text[32], skip_text[48] = "";
    if (r->tty) fprintf(stderr, "\n");
    if (r->epoch_skipped)
        snprintf(skip_text, sizeof skip_text, " skipped=%" PRId64, r->epoch_skipped);
    if (!clnet_net_is_classifier(r->s.net)) {
        report_epoch_loss(r, epoch_done, test_acc, secs, ips, skip_text);
        return;
    }
    if (train_is_root()) {
        char val_text[96] = "", loss_text[32], a[32], b[32];
        if (r->s.val)
            snprintf(val_text, sizeof val_text, " val_loss=%s val_accuracy=%s",
                     accuracy_text(a, sizeof a, r->val_loss, 4, "-"),
                     accuracy_text(b, sizeof b, r->val_acc, 4, "-"));
        fprintf(stderr,
                "epoch %d%s: train_loss=%.4f train_accuracy=%.4f%s test_loss=%s test_accuracy=%s "
                "seconds=%.1f images_per_s=%.0f%s\n",
                r->epoch + 1, epoch_done ? "" : " (partial)", r->last_loss, train_acc, val_text,
                accuracy_text(loss_text, sizeof loss_text, r->test_loss, 4, "-"),
                accuracy_text(test_text, sizeof test_text, test_acc, 4, "-"), secs, ips, skip_text);
        report_devices(&r->s, r->before);
    }
    count_shares(r->s.net, r->before);
    history_add(h, r->epoch + (epoch_done ? 1.0 : (double)r->epoch_batches / r->per_epoch),
                r->last_loss, train_acc, test_acc, secs, ips);
    if (r->csv) { /* the column is empty when the test set was not evaluated */
        char loss[32], val_loss[32], val_acc[32]; /* empty where not evaluated */
        fprintf(r->csv, "%d,%.6f,%.6f,%s,%.3f,%.1f,%s,%s,%s\n", r->epoch + 1, r->last_loss,
                train_acc, accuracy_text(test_text, sizeof test_text, test_acc, 6, ""), secs, ips,
                accuracy_text(loss, sizeof loss, r->test_loss, 6, ""),
                accuracy_text(val_loss, sizeof val_loss, r->val_loss, 6, ""),
                accuracy_text(val_acc, sizeof val_acc, r->val_acc, 6, ""));
        fflush(r->csv);
    }
    if (o->plot && h->n > 0 && train_is_root() &&
        clnet_write_curves_svg(o->plot, o->model, h->epoch, h->train_loss, h->train_acc,
                               h->test_acc, h->n) != CLNET_OK)
        fprintf(stderr, "clnet: warning: plot: %s\n", clnet_last_error());
}

/* A whole epoch's figures go to the watch on --monitor: a reduction of the learning
 * rate, a --save-best checkpoint, an early stop. r->epoch is the next epoch's. */
static int watch_epoch(run *r, double test_acc, double train_acc) {
    double figures[METRIC_COUNT] = {
        [METRIC_VAL_LOSS] = r->val_loss,    [METRIC_VAL_ACCURACY] = r->val_acc,
        [METRIC_TEST_LOSS] = r->test_loss,  [METRIC_TEST_ACCURACY] = test_acc,
        [METRIC_TRAIN_LOSS] = r->last_loss, [METRIC_TRAIN_ACCURACY] = train_acc,
    };
    train_watch_verdict v;
    int rc = train_watch_epoch(&r->watch, &r->o, r->s.net, r->epoch, figures, &v);
    if (rc) return rc;
    if (v.improved && r->o.save_best) {
        if ((rc = save(r, r->o.save_best)) != 0) return rc;
        if (train_is_root())
            fprintf(stderr, "clnet: epoch %d: %s=%.6g, the best so far: saved %s\n", r->epoch,
                    r->o.monitor, r->watch.monitor.best, r->o.save_best);
    }
    r->stopped_early = v.stop;
    return 0;
}

/* An epoch ends, or the run stops partway through one: evaluate, report, start the next. */
static int end_epoch(run *r, int epoch_done) {
    double test_acc = NAN;
    int rc, classifier = clnet_net_is_classifier(r->s.net);
    r->test_loss = r->val_loss = r->val_acc = NAN;
    if (!r->o.no_eval && epoch_done &&
        (rc = train_evaluate(&r->o, &r->s, &test_acc, &r->test_loss)) != 0)
        return rc;
    if (!classifier) test_acc = r->test_loss; /* a model without classes reports its loss */
    if (r->s.val && epoch_done &&
        (rc = train_evaluate_on(&r->o, &r->s, r->s.val, &r->val_acc, &r->val_loss)) != 0)
        return rc;
    r->last_loss = r->epoch_loss / r->epoch_seen;
    double train_acc = (double)r->epoch_correct / (r->epoch_answers ? r->epoch_answers : 1);
    report_epoch(r, epoch_done, test_acc);
    if (epoch_done) r->epoch++, r->next_position = 0;
    if (epoch_done && (rc = watch_epoch(r, classifier ? test_acc : NAN, train_acc)) != 0) return rc;
    r->epoch_loss = 0, r->epoch_correct = 0, r->epoch_seen = 0, r->epoch_answers = 0,
    r->epoch_batches = 0;
    r->epoch_skipped = 0;
    r->epoch_train_seconds = 0;
    r->epoch_start = clnet_seconds();
    return 0;
}

/* --save-every's checkpoint: --save's file, and with --keep-last one of the step's
 * own, the one K saves back removed (the same file, whatever resumes between). */
static int save_step(run *r) {
    const train_options *o = &r->o;
    int rc = save(r, o->save);
    if (rc || !o->keep_last) return rc;
    char path[CLI_PATH_CAP + 32];
    int64_t step = clnet_net_step(r->s.net), old = step - o->keep_last * o->save_every;
    train_step_path(o->save, step, path, sizeof path);
    if ((rc = save(r, path)) != 0) return rc;
    train_step_path(o->save, old, path, sizeof path);
    if (old > 0 && train_is_root() && remove(path) != 0 && errno != ENOENT)
        fprintf(stderr, "clnet: warning: --keep-last: cannot remove %s: %s\n", path,
                strerror(errno));
    return 0;
}

/* Steps until --epochs, --steps, --early-stop or a signal, an epoch's report at each
 * epoch's end. */
static int train_loop(run *r) {
    const train_options *o = &r->o;
    clnet_net *net = r->s.net;
    int rc = 0;
    while (r->epoch < o->epochs && clnet_net_step(net) < r->max_steps && !stop_signal &&
           !r->stopped_early) {
        int64_t step_before = clnet_net_step(net);
        double lr = clnet_net_learning_rate(net), t0 = clnet_seconds();
        clnet_step_result res;
        int skipped;
        if ((rc = take_step(r, &res, &skipped)) != 0) return rc;
        double dt = clnet_seconds() - t0;
        r->train_seconds += dt;
        r->epoch_train_seconds += dt;
        if (!skipped) {
            r->run_samples += res.n;
            r->epoch_loss += res.loss * res.n;
            r->epoch_correct += res.correct;
            r->epoch_seen += res.n;
            r->epoch_answers += res.answers;
            step_log_add(&r->slog, &res, dt, step_before, clnet_net_step(net), r->epoch + 1, lr,
                         !r->o.async);
        }
        int epoch_done = r->next_position >= r->count;
        if (o->check_replicas && !skipped && clnet_net_step(net) % o->check_replicas == 0 &&
            clnet_net_check_replicas(net) != CLNET_OK)
            return train_fail("--check-replicas");
        show_progress(r, epoch_done);
        int stopping = clnet_net_step(net) >= r->max_steps || stop_signal;
        /* the epoch's end first: its checkpoint holds what the epoch's figure changed */
        if ((epoch_done || stopping) && (rc = end_epoch(r, epoch_done)) != 0) return rc;
        if (o->save_every && !skipped && clnet_net_step(net) % o->save_every == 0 &&
            (rc = save_step(r)) != 0)
            return rc;
    }
    return 0;
}

/* A signal stopped the run: save where it stands (to --save, else a file of its own). */
static int save_stopped(run *r) {
    const char *path = r->o.save ? r->o.save : "clnet-interrupted.safetensors";
    if (save(r, path) != 0) return 1;
    fprintf(stderr,
            "clnet: stopped by %s after step %" PRId64 "; saved %s (continue with --resume "
            "%s)\n",
            stop_signal == SIGINT ? "SIGINT" : "SIGTERM", clnet_net_step(r->s.net), path, path);
    return 128 + stop_signal;
}

/* The last save. Where it fails (a full disk, or the folder gone since the
 * start, which checked it), the model goes to a file of its own in the
 * working folder rather than being lost, and the run still fails. */
static int save_final(run *r) {
    if (save(r, r->o.save) == 0) return 0;
    char fallback[64];
    snprintf(fallback, sizeof fallback, "clnet-unsaved-%ld.safetensors", (long)getpid());
    if (save(r, fallback) == 0)
        fprintf(stderr,
                "clnet: the model is saved to %s in the working folder instead (continue "
                "with --resume %s, or move it)\n",
                fallback, fallback);
    return 1;
}

/* After the last step: --async's staleness and the MPI traffic, on stderr. */
static void report_run(const run *r) {
    if (!train_is_root()) return;
    if (r->o.async)
        fprintf(stderr, "async: worst staleness %" PRId64 " (bound --staleness %ld)\n",
                clnet_net_worst_staleness(r->s.net), r->o.staleness);
    clnet_mpi_stats ms;
    if (clnet_mpi_size() > 1 && clnet_net_mpi_stats(r->s.net, &ms) == CLNET_OK && ms.steps > 0)
        fprintf(stderr,
                "mpi: %d ranks; per step each rank all-reduced %.0f KB of gradients, in flight "
                "%.2f ms from the first layer's start to the last one's end, of which %.2f ms "
                "waited for after the devices finished\n",
                clnet_mpi_size(), ms.bytes_per_step / 1e3, ms.inflight_seconds * 1e3,
                ms.exposed_seconds * 1e3);
}

/* The final save, the test accuracy (the last epoch's, else measured now) and the
 * final line. */
static int finish(run *r) {
    const train_options *o = &r->o;
    const history *h = &r->h;
    int rc;
    if (stop_signal) return save_stopped(r);
    if (o->save && (rc = save_final(r)) != 0) return rc;
    double test_acc = NAN;
    if (!o->no_eval) {
        if (h->n && !isnan(h->test_acc[h->n - 1]))
            test_acc = h->test_acc[h->n - 1];
        else if ((rc = train_test_score(o, &r->s, &test_acc)) != 0)
            return rc;
    }
    report_run(r);
    char test_text[32], loss_text[64] = "-", skip_text[96] = "";
    if (r->run_samples > 0) /* else no step taken (--steps 0): no loss; a NaN prints as nan */
        snprintf(loss_text, sizeof loss_text, "%.4f", r->last_loss);
    if (r->skipped) snprintf(skip_text, sizeof skip_text, " skipped_steps=%" PRId64, r->skipped);
    int dropped = 0;
    for (int i = 0; i < clnet_net_device_count(r->s.net); i++) {
        clnet_device_share d;
        dropped += clnet_net_device_share(r->s.net, i, &d) == CLNET_OK && d.dropped;
    }
    if (dropped) /* after skipped_steps, if both */
        snprintf(skip_text + strlen(skip_text), sizeof skip_text - strlen(skip_text),
                 " dropped_devices=%d", dropped);
    if (train_is_root())
        printf("final: %s=%s train_loss=%s images_per_s=%.0f%s\n",
               clnet_net_is_classifier(r->s.net) ? "test_accuracy" : "test_loss",
               accuracy_text(test_text, sizeof test_text, test_acc, 4, "-"), loss_text,
               r->train_seconds > 0 ? r->run_samples / r->train_seconds : 0.0, skip_text);
    fflush(stdout);
    return 0;
}

int cmd_train(int argc, char **argv) {
    run *r = calloc(1, sizeof *r);
    int rc = 1;
    if (!r) return 1;
    if (!train_parse(argc, argv, &r->o, 0, &rc)) {
        free(r);
        return rc;
    }
    const train_options *o = &r->o;
    if ((rc = check_outputs(o)) != 0 || (rc = train_join_job(o)) != 0 ||
        (rc = resume_settings(r)) != 0 || (rc = train_session_open(o, &r->s, 1)) != 0 ||
        (rc = choose_monitor(r)) != 0 || (rc = fit_batch(r)) != 0 || (rc = start(r)) != 0 ||
        (rc = open_logs(r)) != 0)
        goto done;
    catch_signals();
    r->tty = isatty(2) && train_is_root();
    r->max_steps = o->steps_given ? o->steps : INT64_MAX;
    count_shares(r->s.net, r->before);
    r->last_loss = NAN;
    r->epoch_start = clnet_seconds();
    r->epoch = o->resume ? r->resumed.epoch : 0;
    r->next_position = o->resume ? r->resumed.position : 0;
    if (finished(r)) { /* the same checkpoint saved again, if asked */
        rc = o->save ? save_final(r) : 0;
        goto done;
    }
    if ((rc = train_loop(r)) == 0) rc = finish(r);
done:
    if (r->csv) fclose(r->csv);
    if (r->slog.f) fclose(r->slog.f);
    clnet_loader_free(r->loader);
    history_free(&r->h);
    train_session_free(&r->s);
    free(r);
    return train_leave_job(rc);
}

int cmd_eval(int argc, char **argv) {
    train_options o;
    int rc = 0;
    if (!train_parse(argc, argv, &o, 1, &rc)) return rc;
    train_session s;
    double acc = 0, loss = 0;
    memset(&s, 0, sizeof s);
    clnet_progress *recorded = calloc(1, sizeof *recorded);
    if (!recorded) return 1;
    /* what the run that trained it normalised and resized with (a file that is no checkpoint
     * fails when its weights are loaded below) */
    if (clnet_checkpoint_progress(o.weights, recorded) == CLNET_OK)
        rc = train_settings_evaluate(&o, recorded->run);
    free(recorded);
    if (rc || (rc = train_join_job(&o)) != 0 || (rc = train_session_open(&o, &s, 0)) != 0 ||
        (rc = eval_classes_check(&o, s.net)) != 0)
        goto done;
    if (clnet_net_load_weights(s.net, o.weights, NULL) != CLNET_OK) {
        rc = train_fail("weights");
        goto done;
    }
    if (clnet_net_bind(s.net, s.rt, (int)o.batch) != CLNET_OK) {
        rc = train_fail("devices");
        goto done;
    }
    if ((rc = train_apply_split(&o, &s)) != 0) goto done;
    double t0 = clnet_seconds();
    if ((rc = train_evaluate(&o, &s, &acc, &loss)) != 0) goto done;
    double secs = clnet_seconds() - t0;
    if (train_is_root()) { /* the speed on stderr: stdout's last line stays the accuracy */
        fprintf(stderr, "eval: %d images in %.2f s, images_per_s=%.0f\n",
                clnet_dataset_count(s.test), secs,
                secs > 0 ? (double)clnet_dataset_count(s.test) / secs : 0);
        printf("test_loss=%.4f\n", loss);
        if (clnet_net_is_classifier(s.net)) printf("test_accuracy=%.4f\n", acc);
    }
    rc = eval_classes(&o, &s); /* --top-k, --confusion */
done:
    train_session_free(&s);
    return train_leave_job(rc);
}
