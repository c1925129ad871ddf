/* `clnet train`'s watch on one figure of its epochs: which one (--monitor, checked
 * against what the run computes), reduce-on-plateau (--plateau, clnet_plateau), early
 * stopping (--early-stop, clnet_monitor) and the best so far (--save-best). The state
 * lives in the library's structs, which every checkpoint's progress carries. */
#include "train_monitor.h"
#include "train_session.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const METRICS[METRIC_COUNT] = {
    [METRIC_VAL_LOSS] = "val_loss",     [METRIC_VAL_ACCURACY] = "val_accuracy",
    [METRIC_TEST_LOSS] = "test_loss",   [METRIC_TEST_ACCURACY] = "test_accuracy",
    [METRIC_TRAIN_LOSS] = "train_loss", [METRIC_TRAIN_ACCURACY] = "train_accuracy",
};

static int metric_of(const char *name) {
    for (int i = 0; name && i < METRIC_COUNT; i++)
        if (strcmp(name, METRICS[i]) == 0) return i;
    return -1;
}

static int maximizes(int metric) {
    return metric == METRIC_VAL_ACCURACY || metric == METRIC_TEST_ACCURACY ||
           metric == METRIC_TRAIN_ACCURACY;
}

/* The options that only mean something with another: given without it, refused. */
static int needs(const train_options *o, const char *const *names, int on, const char *what) {
    for (int i = 0; names[i]; i++)
        if (!on && cli_given(o->argc, o->argv, names[i])) {
            fprintf(stderr, "clnet: %s needs %s\n", names[i], what);
            return 0;
        }
    return 1;
}

int train_monitor_choose(train_options *o, int classifier, int has_val) {
    static const char *const PLATEAU[] = {"--plateau-factor", "--plateau-threshold",
                                          "--plateau-cooldown", "--min-lr", NULL};
    static const char *const EARLY[] = {"--min-delta", NULL};
    if (!needs(o, PLATEAU, o->plateau >= 0, "--plateau PATIENCE") ||
        !needs(o, EARLY, o->early_stop > 0, "--early-stop PATIENCE"))
        return 2;
    if (o->plateau < 0 && !o->early_stop && !o->save_best) {
        if (cli_given(o->argc, o->argv, "--monitor")) {
            fprintf(stderr, "clnet: --monitor names the figure that --plateau, --early-stop and "
                            "--save-best watch: give one of them\n");
            return 2;
        }
        o->monitor = NULL; /* nothing watches: none recorded */
        return 0;
    }
    if (!o->monitor) o->monitor = has_val ? METRICS[METRIC_VAL_LOSS] : METRICS[METRIC_TEST_LOSS];
    int m = metric_of(o->monitor);
    const char *why = NULL;
    if (m < 0)
        why = "is none of val_loss, val_accuracy, test_loss, test_accuracy, train_loss, "
              "train_accuracy";
    else if (!has_val && (m == METRIC_VAL_LOSS || m == METRIC_VAL_ACCURACY))
        why = "needs --val-split F (no validation set is held out)";
    else if (o->no_eval && (m == METRIC_TEST_LOSS || m == METRIC_TEST_ACCURACY))
        why = "is not computed under --no-eval (watch train_loss, or a val_ figure with "
              "--val-split)";
    else if (!classifier && maximizes(m))
        why = "is not computed: the model has no classes (watch a loss)";
    if (why) {
        fprintf(stderr, "clnet: --monitor %s%s %s\n", o->monitor,
                cli_given(o->argc, o->argv, "--monitor") ? "" : " (the default)", why);
        return 2;
    }
    o->monitor = METRICS[m]; /* the table's text: it outlives the resumed settings' */
    return 0;
}

/* The figure a checkpoint's run watched: its recorded "monitor=" line (train_settings.c),
 * when there is one and it names one. */
static int recorded_monitor(const char *run, char *out, size_t cap) {
    const char *start = strncmp(run, "monitor=", 8) == 0 ? run + 8 : NULL;
    if (!start && (start = strstr(run, "\nmonitor=")) != NULL) start += 9;
    if (!start) return 0;
    size_t n = strcspn(start, "\n");
    if (n == 0 || n >= cap) return 0;
    memcpy(out, start, n), out[n] = '\0';
    return 1;
}

void train_watch_start(train_watch *w, const train_options *o, const clnet_progress *resumed) {
    memset(w, 0, sizeof *w);
    w->metric = metric_of(o->monitor);
    int max = w->metric >= 0 && maximizes(w->metric);
    clnet_monitor_defaults(&w->monitor, max);
    w->monitor.patience = (int)o->early_stop;
    w->monitor.min_delta = o->min_delta;
    clnet_plateau_defaults(&w->plateau, max);
    w->plateau.patience = o->plateau >= 0 ? (int)o->plateau : 0;
    w->plateau.factor = o->plateau_factor;
    w->plateau.threshold = o->plateau_threshold;
    w->plateau.cooldown = (int)o->plateau_cooldown;
    w->plateau.min_lr = o->min_lr;
    if (!resumed) return;
    char had[32];
    if (recorded_monitor(resumed->run, had, sizeof had) && o->monitor &&
        strcmp(had, o->monitor) != 0) { /* --override monitor: another figure */
        if (train_is_root())
            fprintf(stderr,
                    "clnet: note: the run watched %s: the best %s and the patience "
                    "start afresh\n",
                    had, o->monitor);
        return;
    }
    /* the state goes on; the settings are this command's (which --resume checked) */
    const clnet_monitor *m = &resumed->monitor;
    if (m->epochs > 0 && m->maximize == w->monitor.maximize) {
        w->monitor.epochs = m->epochs, w->monitor.last = m->last, w->monitor.best = m->best;
        w->monitor.best_epoch = m->best_epoch, w->monitor.stop_best = m->stop_best;
        w->monitor.wait = m->wait;
    }
    const clnet_plateau *p = &resumed->plateau;
    if (p->epochs > 0 && p->maximize == w->plateau.maximize) {
        w->plateau.epochs = p->epochs, w->plateau.best = p->best;
        w->plateau.bad_epochs = p->bad_epochs, w->plateau.cooldown_left = p->cooldown_left;
        w->plateau.scale = p->scale, w->plateau.reductions = p->reductions;
    }
}

int train_watch_stopped(const train_watch *w, const train_options *o, int epoch) {
    const clnet_monitor *m = &w->monitor;
    if (w->metric < 0 || !o->early_stop || m->epochs == 0 ||
        (m->wait < o->early_stop && isfinite(m->last)))
        return 0;
    if (train_is_root())
        fprintf(stderr,
                "clnet: --resume %s: the run stopped early after %d epochs (--early-stop %ld): "
                "nothing to train (--early-stop N --override early-stop trains on)\n",
                o->resume, epoch, o->early_stop);
    return 1;
}

int train_watch_epoch(train_watch *w, const train_options *o, clnet_net *net, int epoch,
                      const double *figures, train_watch_verdict *out) {
    memset(out, 0, sizeof *out);
    if (w->metric < 0) return 0;
    const char *name = METRICS[w->metric];
    double value = figures[w->metric];
    if (o->plateau >= 0) {
        double lr = clnet_net_learning_rate(net);
        int reduced = 0;
        if (clnet_plateau_observe(&w->plateau, value, lr, &reduced) != CLNET_OK ||
            (reduced && clnet_net_set_lr_scale(net, w->plateau.scale) != CLNET_OK))
            return train_fail("--plateau");
        if (reduced && train_is_root())
            fprintf(stderr,
                    "clnet: epoch %d: %s has not improved on %.6g for %ld epoch%s: learning "
                    "rate %.6g -> %.6g (--plateau %ld)\n",
                    epoch, name, w->plateau.best, o->plateau + 1, o->plateau ? "s" : "", lr,
                    (double)clnet_net_learning_rate(net), o->plateau);
    }
    double best = w->monitor.stop_best;
    if (clnet_monitor_observe(&w->monitor, value, &out->improved, &out->stop) != CLNET_OK)
        return train_fail("--monitor");
    if (out->stop && train_is_root()) {
        if (!isfinite(value))
            fprintf(stderr, "clnet: early stop after epoch %d: %s is %g (--early-stop)\n", epoch,
                    name, value);
        else
            fprintf(stderr,
                    "clnet: early stop after epoch %d: %s has not improved on %.6g by more than "
                    "%g for %d epochs (--early-stop %ld; the best, %.6g, at epoch %d)\n",
                    epoch, name, best, o->min_delta, w->monitor.wait, o->early_stop,
                    w->monitor.best, w->monitor.best_epoch + epoch - w->monitor.epochs);
    }
    return 0;
}

void train_step_path(const char *file, int64_t step, char *out, size_t cap) {
    const char *slash = strrchr(file, '/'), *dot = strrchr(file, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : file)) dot = NULL;
    int stem = dot ? (int)(dot - file) : (int)strlen(file);
    snprintf(out, cap, "%.*s-step%" PRId64 "%s", stem, file, step, dot ? dot : "");
}
