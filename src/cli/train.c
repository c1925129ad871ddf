/* `clnet train` and `clnet eval`: the training loop a user runs, written on
 * the public API alone. */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *model, *data, *data_npy, *devices, *save, *resume, *log, *plot, *weights, *step_log;
    long epochs, steps, batch, save_every, train_limit, test_limit, step_size, log_every;
    uint64_t seed;
    double lr, momentum, wd, gamma, mean, std, beta1, beta2, eps;
    int nesterov, no_eval, seed_given, deterministic, async, wd_given;
    clnet_optimizer optimizer;
    long staleness;
    double mpi_timeout;
    const char *split;
    clnet_schedule schedule;
} options;

static void train_usage(FILE *out) {
    fprintf(out,
            "usage: clnet train MODEL [options]\n"
            "  --data DIR          IDX data set folder (default $CLNET_DATA_DIR or "
            "%s)\n"
            "  --data-npy X,Y[,TX,TY]  .npy samples and labels instead of --data: the training\n"
            "                      pair, then the test pair (needed unless --no-eval); clnet\n"
            "                      eval takes the test pair, or the only pair\n"
            "  --epochs N          epochs to train (default 10)\n"
            "  --steps N           stop once the net has taken N optimizer steps\n"
            "  --batch B           samples per step (default 256)\n"
            "  --lr X              learning rate (default 0.1)\n"
            "  --optimizer NAME    sgd (default), adam or adamw (as torch.optim)\n"
            "  --beta1 B --beta2 B Adam and AdamW: moment decay rates (default 0.9, 0.999)\n"
            "  --eps E             Adam and AdamW: added to the denominator (default 1e-8)\n"
            "  --momentum M        SGD momentum (default 0)\n"
            "  --nesterov          Nesterov momentum\n"
            "  --wd W              weight decay (default 0; 0.01 with adamw, as PyTorch)\n"
            "  --schedule S        constant (default), step or cosine (over all epochs)\n"
            "  --step-size N       step schedule: steps between decays (default a third of "
            "the run)\n"
            "  --gamma G           step schedule: decay factor (default 0.1)\n"
            "  --seed S            seed for initialisation and shuffling (default 1)\n"
            "  --mean X --std Y    normalise images as (pixel/255 - X) / Y (default 0, 1)\n"
            "  --devices SPEC      which devices (see clnet devices); a step splits its batch\n"
            "                      across all of them by measured speed; under mpirun, each\n"
            "                      rank's own, and local-rank gives ranks that share a\n"
            "                      machine a device each\n"
            "  --mpi-timeout S     under mpirun: fail when the other ranks do not answer\n"
            "                      within S seconds (default 300)\n"
            "  --deterministic     a fixed, equal split: two runs give identical parameters\n"
            "  --split W0,W1,...   a fixed split in these proportions (one per device);\n"
            "                      W0,W1/V0,V1/...: several, one a step in turn\n"
            "  --sync MODE         sync (default): every step uses every device; async:\n"
            "                      parameter server, devices push gradients as they finish\n"
            "  --staleness K       async: a push is at most K updates old (default 1)\n"
            "  --save FILE         write a checkpoint at the end (and on Ctrl-C)\n"
            "  --save-every N      also every N steps (needs --save)\n"
            "  --resume FILE       continue from a checkpoint (same command otherwise)\n"
            "  --log FILE.csv      per-epoch figures as CSV\n"
            "  --step-log FILE.csv step,epoch,loss,lr,images_per_s every --log-every steps\n"
            "  --log-every N       steps between --step-log lines (default 1; needs "
            "--step-log)\n"
            "  --plot FILE.svg     per-epoch loss and accuracy curves as SVG\n"
            "  --no-eval           do not evaluate the test set (test_accuracy=- in the lines)\n"
            "  --train-limit N     use only the first N training images (quick runs)\n"
            "  --test-limit N      use only the first N test images\n"
            "Progress goes to stderr; the last line on stdout is\n"
            "  final: test_accuracy=<a> train_loss=<l> images_per_s=<n>\n",
            CLNET_DEFAULT_DATA_DIR);
}

static int parse(int argc, char **argv, options *o, int eval) {
    memset(o, 0, sizeof *o);
    o->epochs = 10;
    o->steps = -1;
    o->batch = 256;
    o->lr = 0.1;
    o->gamma = 0.1;
    o->seed = 1;
    o->std = 1;
    o->schedule = CLNET_SCHEDULE_CONSTANT;
    o->staleness = 1;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        long n = 0;
#define VALUE(name) (cli_option(argc, argv, &i, name, &v) && (v || (exit_code = 2, 0)))
        int exit_code = 0;
        if (argv[i][0] != '-') {
            if (o->model) {
                fprintf(stderr, "clnet: one model file only ('%s' and '%s')\n", o->model, argv[i]);
                return 2;
            }
            o->model = argv[i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            train_usage(stdout);
            return -1;
        } else if (VALUE("--data")) {
            o->data = v;
        } else if (VALUE("--data-npy")) {
            o->data_npy = v;
        } else if (VALUE("--devices")) {
            o->devices = v;
        } else if (strcmp(argv[i], "--deterministic") == 0) {
            o->deterministic = 1;
        } else if (VALUE("--mpi-timeout")) {
            if (!cli_float("--mpi-timeout", v, 1, 1e6, &o->mpi_timeout)) return 2;
        } else if (VALUE("--split")) {
            o->split = v;
        } else if (!eval && VALUE("--sync")) {
            if (strcmp(v, "sync") != 0 && strcmp(v, "async") != 0) {
                fprintf(stderr, "clnet: --sync: expected sync or async, got '%s'\n", v);
                return 2;
            }
            o->async = strcmp(v, "async") == 0;
        } else if (!eval && VALUE("--staleness")) {
            if (!cli_int("--staleness", v, 0, 1000000, &o->staleness)) return 2;
        } else if (VALUE("--batch")) {
            if (!cli_int("--batch", v, 1, 1 << 20, &o->batch)) return 2;
        } else if (VALUE("--test-limit")) {
            if (!cli_int("--test-limit", v, 1, 1L << 30, &o->test_limit)) return 2;
        } else if (VALUE("--mean")) {
            if (!cli_float("--mean", v, -1e3, 1e3, &o->mean)) return 2;
        } else if (VALUE("--std")) {
            if (!cli_float("--std", v, 1e-6, 1e3, &o->std)) return 2;
        } else if (eval && VALUE("--weights")) {
            o->weights = v;
        } else if (!eval && VALUE("--epochs")) {
            if (!cli_int("--epochs", v, 1, 1000000, &o->epochs)) return 2;
        } else if (!eval && VALUE("--steps")) {
            if (!cli_int("--steps", v, 0, 1L << 40, &o->steps)) return 2;
        } else if (!eval && VALUE("--lr")) {
            if (!cli_float("--lr", v, 1e-12, 1e6, &o->lr)) return 2;
        } else if (!eval && VALUE("--momentum")) {
            if (!cli_float("--momentum", v, 0, 0.999999, &o->momentum)) return 2;
        } else if (!eval && strcmp(argv[i], "--nesterov") == 0) {
            o->nesterov = 1;
        } else if (!eval && VALUE("--wd")) {
            if (!cli_float("--wd", v, 0, 1e3, &o->wd)) return 2;
            o->wd_given = 1;
        } else if (!eval && VALUE("--optimizer")) {
            if (strcmp(v, "sgd") == 0)
                o->optimizer = CLNET_OPTIMIZER_SGD;
            else if (strcmp(v, "adam") == 0)
                o->optimizer = CLNET_OPTIMIZER_ADAM;
            else if (strcmp(v, "adamw") == 0)
                o->optimizer = CLNET_OPTIMIZER_ADAMW;
            else {
                fprintf(stderr, "clnet: --optimizer: expected sgd, adam or adamw, got '%s'\n", v);
                return 2;
            }
        } else if (!eval && VALUE("--beta1")) {
            if (!cli_float("--beta1", v, 0, 0.999999, &o->beta1)) return 2;
        } else if (!eval && VALUE("--beta2")) {
            if (!cli_float("--beta2", v, 0, 0.999999999, &o->beta2)) return 2;
        } else if (!eval && VALUE("--eps")) {
            if (!cli_float("--eps", v, 1e-30, 1, &o->eps)) return 2;
        } else if (!eval && VALUE("--schedule")) {
            if (strcmp(v, "constant") == 0)
                o->schedule = CLNET_SCHEDULE_CONSTANT;
            else if (strcmp(v, "step") == 0)
                o->schedule = CLNET_SCHEDULE_STEP;
            else if (strcmp(v, "cosine") == 0)
                o->schedule = CLNET_SCHEDULE_COSINE;
            else {
                fprintf(stderr, "clnet: --schedule: expected constant, step or cosine, got '%s'\n",
                        v);
                return 2;
            }
        } else if (!eval && VALUE("--step-size")) {
            if (!cli_int("--step-size", v, 1, 1L << 40, &o->step_size)) return 2;
        } else if (!eval && VALUE("--gamma")) {
            if (!cli_float("--gamma", v, 1e-9, 1, &o->gamma)) return 2;
        } else if (!eval && VALUE("--seed")) {
            if (!cli_int("--seed", v, 0, 0x7fffffffL, &n)) return 2;
            o->seed = (uint64_t)n;
            o->seed_given = 1;
        } else if (!eval && VALUE("--save")) {
            o->save = v;
        } else if (!eval && VALUE("--save-every")) {
            if (!cli_int("--save-every", v, 1, 1L << 40, &o->save_every)) return 2;
        } else if (!eval && VALUE("--resume")) {
            o->resume = v;
        } else if (!eval && VALUE("--log")) {
            o->log = v;
        } else if (!eval && VALUE("--step-log")) {
            o->step_log = v;
        } else if (!eval && VALUE("--log-every")) {
            if (!cli_int("--log-every", v, 1, 1L << 40, &o->log_every)) return 2;
        } else if (!eval && VALUE("--plot")) {
            o->plot = v;
        } else if (!eval && strcmp(argv[i], "--no-eval") == 0) {
            o->no_eval = 1;
        } else if (!eval && VALUE("--train-limit")) {
            if (!cli_int("--train-limit", v, 1, 1L << 30, &o->train_limit)) return 2;
        } else {
            if (exit_code) return exit_code;
            fprintf(stderr, "clnet %s: unknown option '%s' (clnet %s --help)\n",
                    eval ? "eval" : "train", argv[i], eval ? "eval" : "train");
            return 2;
        }
        if (exit_code) return exit_code;
#undef VALUE
    }
    if (!o->model) {
        fprintf(stderr, "clnet: which model? e.g. clnet %s examples/models/lenet.cfg\n",
                eval ? "eval" : "train");
        return 2;
    }
    if (eval && !o->weights) {
        fprintf(stderr, "clnet eval: --weights FILE is required\n");
        return 2;
    }
    if (o->save_every && !o->save) {
        fprintf(stderr, "clnet: --save-every needs --save FILE\n");
        return 2;
    }
    if (o->log_every && !o->step_log) {
        fprintf(stderr, "clnet: --log-every needs --step-log FILE.csv\n");
        return 2;
    }
    if (o->step_log && !o->log_every) o->log_every = 1;
    if (o->optimizer != CLNET_OPTIMIZER_SGD && (o->momentum > 0 || o->nesterov)) {
        fprintf(stderr,
                "clnet: --momentum and --nesterov are SGD's; %s uses --beta1 (default 0.9)\n",
                o->optimizer == CLNET_OPTIMIZER_ADAM ? "adam" : "adamw");
        return 2;
    }
    if (o->optimizer == CLNET_OPTIMIZER_ADAMW && !o->wd_given) o->wd = 0.01; /* PyTorch's */
    if (o->nesterov && o->momentum == 0) {
        fprintf(stderr, "clnet: --nesterov needs --momentum > 0\n");
        return 2;
    }
    return 0;
}

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

/* This process's rank in an MPI job; only rank 0 prints and writes files. */
static int rank;
static int is_root(void) {
    return rank == 0;
}

/* The pieces a command sets up: devices, net, data. */
typedef struct {
    clnet_runtime *rt;
    clnet_net *net;
    clnet_dataset *train, *test;
    double mean, std; /* the images' normalisation (--mean, --std), for checkpoints */
} session;

static void session_free(session *s) {
    clnet_net_free(s->net);
    clnet_dataset_free(s->train);
    clnet_dataset_free(s->test);
    clnet_runtime_free(s->rt);
}

/* A failure on one rank of an MPI job stops them all at once: the others
 * would otherwise wait for this one until --mpi-timeout. */
static int fail(const char *what) {
    if (clnet_mpi_size() > 1) {
        fprintf(stderr, "clnet: rank %d: %s: %s\n", rank, what, clnet_last_error());
        fflush(stderr);
        clnet_mpi_abort(1);
    }
    fprintf(stderr, "clnet: %s: %s\n", what, clnet_last_error());
    return 1;
}

/* Loads the data sets: training (need_train) and test (unless --no-eval);
 * clnet eval evaluates the test pair of --data-npy, or its only pair. */
static int load_data(const options *o, session *s, int need_train) {
    if (!o->data_npy) {
        if (need_train && clnet_dataset_load(&s->train, o->data, "train") != CLNET_OK)
            return fail("training data");
        if (!o->no_eval && clnet_dataset_load(&s->test, o->data, "test") != CLNET_OK)
            return fail("test data");
        return 0;
    }
    if (o->data) {
        fprintf(stderr, "clnet: --data and --data-npy name two data sets: give one\n");
        return 2;
    }
    char paths[4][CLI_PATH_CAP];
    int count = 0;
    if (!cli_npy_files(o->data_npy, paths, &count)) return 2;
    if (need_train && clnet_dataset_load_npy(&s->train, paths[0], paths[1]) != CLNET_OK)
        return fail("training data");
    if (o->no_eval) return 0;
    if (need_train && count == 2) {
        fprintf(stderr, "clnet: --data-npy gives no test set (TEST_X.npy,TEST_Y.npy after the "
                        "training pair): add it, or --no-eval\n");
        return 2;
    }
    int t = count == 4 ? 2 : 0;
    if (clnet_dataset_load_npy(&s->test, paths[t], paths[t + 1]) != CLNET_OK)
        return fail("test data");
    return 0;
}

/* Loads the model and the data, checks they fit each other, opens devices. */
static int open_session(const options *o, session *s, int need_train) {
    memset(s, 0, sizeof *s);
    s->mean = o->mean;
    s->std = o->std;
    if (clnet_net_load(&s->net, o->model) != CLNET_OK) return fail("model");
    int rc = load_data(o, s, need_train);
    if (rc) return rc;
    if (s->train && o->train_limit && o->train_limit < clnet_dataset_count(s->train))
        clnet_dataset_truncate(s->train, (int)o->train_limit);
    if (s->test && o->test_limit && o->test_limit < clnet_dataset_count(s->test))
        clnet_dataset_truncate(s->test, (int)o->test_limit);
    clnet_dataset *sets[2] = {s->train, s->test};
    for (int k = 0; k < 2; k++) {
        if (!sets[k]) continue;
        char why[256];
        if (!clnet_net_accepts(s->net, sets[k], why, sizeof why)) {
            fprintf(stderr, "clnet: %s %s\n", o->model, why);
            return 1;
        }
        int classes = clnet_dataset_classes(sets[k]);
        if (classes > clnet_net_classes(s->net)) {
            fprintf(stderr, "clnet: the data has %d classes but %s predicts %d\n", classes,
                    o->model, clnet_net_classes(s->net));
            return 1;
        }
    }
    if (clnet_runtime_create(&s->rt, o->devices) != CLNET_OK) return fail("devices");
    return 0;
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

static int evaluate(const options *o, session *s, double *acc, double *loss) {
    clnet_step_result r;
    if (clnet_net_evaluate(s->net, s->test, (float)o->mean, (float)o->std, &r) != CLNET_OK)
        return fail("evaluation");
    *acc = r.n ? (double)r.correct / r.n : 0;
    if (loss) *loss = r.loss;
    return 0;
}

/* A checkpoint whose progress says the next batch starts at sample
 * `position` of epoch `epoch`'s order. */
static int save(session *s, const char *path, int epoch, int64_t position, uint64_t data_seed,
                uint64_t init_seed) {
    clnet_progress p = {.epoch = epoch,
                        .position = position,
                        .data_seed = data_seed,
                        .init_seed = init_seed,
                        .mean = (float)s->mean,
                        .std = (float)s->std};
    if (position >= clnet_dataset_count(s->train)) p.epoch++, p.position = 0;
    if (clnet_net_save(s->net, path, &p) != CLNET_OK) return fail("saving a checkpoint");
    return 0;
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
} step_log;

/* Appends to an existing file when resuming, so one run's lines continue the
 * interrupted run's; the header goes only into an empty file. */
static int step_log_open(step_log *l, const char *path, long every, int resume) {
    memset(l, 0, sizeof *l);
    l->every = every;
    l->f = fopen(path, resume ? "a" : "w");
    if (!l->f) {
        fprintf(stderr, "clnet: cannot write %s\n", path);
        return 1;
    }
    fseek(l->f, 0, SEEK_END);
    if (ftell(l->f) == 0) fprintf(l->f, "step,epoch,loss,lr,images_per_s\n");
    fflush(l->f);
    return 0;
}

/* Counts the steps from step `before` to `after` (1 or a chunk), which took
 * `seconds` and began at learning rate `lr`, in epoch `epoch` (1-based). */
static void step_log_add(step_log *l, const clnet_step_result *r, double seconds, int64_t before,
                         int64_t after, int epoch, double lr) {
    if (!l->f) return;
    l->loss += (double)r->loss * r->n;
    l->samples += r->n;
    l->seconds += seconds;
    if (after / l->every == before / l->every || l->samples <= 0) return;
    /* flushed line by line: a run killed halfway leaves a readable file */
    fprintf(l->f, "%" PRId64 ",%d,%.6f,%.7g,%.1f\n", after, epoch, l->loss / l->samples, lr,
            l->samples / (l->seconds > 0 ? l->seconds : 1));
    fflush(l->f);
    l->loss = 0, l->samples = 0, l->seconds = 0;
}

/* Applies --split or --deterministic. --split takes rows of weights
 * separated by '/', one row a step in turn ("1,4/3,1": odd steps 1:4, even
 * steps 3:1, counting from 1). */
static int apply_split(const options *o, session *s) {
    enum { MOST = 4096 };
    int n = clnet_net_device_count(s->net), rows = 1, k = 0;
    double w[MOST];
    if (o->split) {
        const char *p = o->split;
        for (;;) {
            char *end = NULL;
            if (k >= MOST) break;
            w[k] = strtod(p, &end);
            if (end == p || !(w[k] >= 0)) break;
            k++;
            p = end;
            if (*p == ',' && p[1])
                p++;
            else if (*p == '/' && p[1] && k == rows * n)
                p++, rows++;
            else
                break;
        }
        if (*p || k != rows * n) {
            fprintf(stderr,
                    "clnet: --split %s: expected %d weights >= 0 separated by commas (one per "
                    "device), or several such splits separated by '/' (used in turn)\n",
                    o->split, n);
            return 2;
        }
    } else if (o->deterministic) {
        for (int i = 0; i < n; i++) w[i] = 1;
    } else {
        return 0;
    }
    if (clnet_net_set_splits(s->net, w, n, rows) != CLNET_OK) return fail("--split");
    return 0;
}

/* One line per device with its share of the epoch and its speed (under
 * mpirun, every device of every rank, each named with its rank). */
static void report_devices(session *s, const int64_t *before) {
    int n = clnet_net_device_count(s->net);
    if (n < 2) return;
    for (int i = 0; i < n; i++) {
        clnet_device_share d;
        clnet_net_device_share(s->net, i, &d);
        char who[32] = "";
        if (clnet_mpi_size() > 1) snprintf(who, sizeof who, "rank %d ", d.rank);
        int64_t done = d.samples - before[i];
        if (done > 0)
            fprintf(stderr, "  %sdevice %d (%s): %lld samples, %.0f images/s\n", who, d.device,
                    d.name, (long long)done, d.images_per_s);
        else
            fprintf(stderr, "  %sdevice %d (%s): no share (%.1f images/s: too slow to help)\n", who,
                    d.device, d.name, d.images_per_s);
    }
}

/* Joins the MPI job mpirun started, if any (a plain run starts nothing). */
static int join_job(const options *o) {
    int size = 1;
    if (clnet_mpi_init(&rank, &size) != CLNET_OK) {
        fprintf(stderr, "clnet: %s\n", clnet_last_error());
        return 1;
    }
    if (o->mpi_timeout > 0) clnet_mpi_set_timeout(o->mpi_timeout);
    return 0;
}

int cmd_train(int argc, char **argv) {
    options o;
    int rc = parse(argc, argv, &o, 0);
    if (rc) return rc < 0 ? 0 : rc;
    session s;
    history h = {0};
    clnet_loader *loader = NULL;
    FILE *csv = NULL;
    step_log slog = {0};
    memset(&s, 0, sizeof s);
    if ((rc = join_job(&o)) != 0 || (rc = open_session(&o, &s, 1)) != 0) goto done;

    uint64_t init_seed = o.seed, data_seed = o.seed;
    clnet_progress resumed = {0};
    if (o.resume) {
        if (clnet_net_load_weights(s.net, o.resume, &resumed) != CLNET_OK) {
            rc = fail("resume");
            goto done;
        }
        data_seed = resumed.data_seed;
        init_seed = resumed.init_seed;
        if (o.seed_given && o.seed != data_seed)
            fprintf(stderr, "clnet: note: resuming with the checkpoint's seed %" PRIu64 "\n",
                    data_seed);
    } else if (clnet_net_init(s.net, init_seed) != CLNET_OK) {
        rc = fail("initialisation");
        goto done;
    }
    if (clnet_net_bind(s.net, s.rt, (int)o.batch) != CLNET_OK) {
        rc = fail("devices");
        goto done;
    }
    if ((rc = apply_split(&o, &s)) != 0) goto done;
    clnet_loader_config lc = {.batch = (int)o.batch,
                              .seed = data_seed,
                              .shuffle = 1,
                              .drop_last = 0,
                              .mean = (float)o.mean,
                              .std = (float)o.std};
    if (clnet_loader_create(&loader, s.train, &lc) != CLNET_OK) {
        rc = fail("training data");
        goto done;
    }
    int per_epoch = clnet_loader_batches_per_epoch(loader), count = clnet_dataset_count(s.train);
    clnet_sgd_config sgd;
    clnet_sgd_defaults(&sgd);
    sgd.lr = (float)o.lr;
    sgd.momentum = (float)o.momentum;
    sgd.nesterov = o.nesterov;
    sgd.weight_decay = (float)o.wd;
    sgd.schedule = o.schedule;
    sgd.total_steps = (int64_t)o.epochs * per_epoch;
    sgd.step_size = o.step_size ? o.step_size : (sgd.total_steps + 2) / 3;
    sgd.gamma = (float)o.gamma;
    sgd.optimizer = o.optimizer;
    sgd.beta1 = (float)o.beta1;
    sgd.beta2 = (float)o.beta2;
    sgd.eps = (float)o.eps;
    if (clnet_net_set_sgd(s.net, &sgd) != CLNET_OK) {
        rc = fail("optimizer");
        goto done;
    }
    if (o.resume && clnet_loader_seek(loader, resumed.epoch, resumed.position) != CLNET_OK) {
        rc = fail("resume");
        goto done;
    }
    if (o.log && is_root()) {
        csv = fopen(o.log, "w");
        if (!csv) {
            fprintf(stderr, "clnet: cannot write %s\n", o.log);
            rc = 1;
            goto done;
        }
        fprintf(csv, "epoch,train_loss,train_accuracy,test_accuracy,seconds,images_per_s\n");
        fflush(csv);
    }
    if (o.step_log && is_root() &&
        (rc = step_log_open(&slog, o.step_log, o.log_every, o.resume != NULL)) != 0)
        goto done;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = clnet_mpi_size() > 1 ? on_signal_mpi : on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int tty = isatty(2) && is_root(), devices = clnet_net_device_count(s.net);
    int64_t max_steps = o.steps >= 0 ? o.steps : INT64_MAX, before[CLNET_MAX_DEVICES];
    for (int i = 0; i < devices && i < CLNET_MAX_DEVICES; i++) {
        clnet_device_share d;
        clnet_net_device_share(s.net, i, &d);
        before[i] = d.samples;
    }
    double train_seconds = 0, run_samples = 0, last_loss = NAN;
    double epoch_loss = 0, epoch_start = clnet_seconds(), epoch_train_seconds = 0;
    long epoch_correct = 0, epoch_seen = 0;
    int epoch = o.resume ? resumed.epoch : 0, epoch_batches = 0;
    /* where the next batch starts, for checkpoints: (epoch, position) */
    int64_t next_position = o.resume ? resumed.position : 0;
    double last_bar = 0;
    while (epoch < o.epochs && clnet_net_step(s.net) < max_steps && !stop_signal) {
        int64_t step_before = clnet_net_step(s.net);
        double lr = clnet_net_learning_rate(s.net), t0 = clnet_seconds();
        clnet_step_result r;
        if (o.async) { /* a few updates at a time, so progress and Ctrl-C stay prompt */
            int64_t left = per_epoch - next_position / o.batch;
            int64_t chunk = left < 8 ? left : 8;
            if (chunk > max_steps - step_before) chunk = max_steps - step_before;
            if (clnet_net_train_async(s.net, loader, (int)chunk, (int)o.staleness, &r) !=
                CLNET_OK) {
                rc = fail("asynchronous training");
                goto done;
            }
            next_position += r.n;
            epoch_batches += (int)chunk;
        } else {
            clnet_batch batch;
            if (clnet_net_train_loader_step(s.net, loader, &batch, &r) != CLNET_OK) {
                rc = fail("training step");
                goto done;
            }
            next_position = batch.position + batch.n;
            epoch_batches++;
        }
        double dt = clnet_seconds() - t0;
        train_seconds += dt;
        epoch_train_seconds += dt;
        run_samples += r.n;
        epoch_loss += r.loss * r.n;
        epoch_correct += r.correct;
        epoch_seen += r.n;
        step_log_add(&slog, &r, dt, step_before, clnet_net_step(s.net), epoch + 1, lr);
        int epoch_done = next_position >= count;
        if (o.save_every && clnet_net_step(s.net) % o.save_every == 0 &&
            (rc = save(&s, o.save, epoch, next_position, data_seed, init_seed)) != 0)
            goto done;
        double ips = epoch_seen / (epoch_train_seconds > 0 ? epoch_train_seconds : 1);
        if (tty && (clnet_seconds() - last_bar > 0.1 || epoch_done)) {
            int done_b = (int)((next_position + o.batch - 1) / o.batch);
            double eta = (per_epoch - done_b) * o.batch / (ips > 0 ? ips : 1);
            progress_bar(epoch + 1, o.epochs, done_b, per_epoch, ips, epoch_loss / epoch_seen, eta);
            last_bar = clnet_seconds();
        }
        int stopping = clnet_net_step(s.net) >= max_steps || stop_signal;
        if (epoch_done || stopping) {
            double test_acc = NAN;
            if (!o.no_eval && epoch_done && (rc = evaluate(&o, &s, &test_acc, NULL)) != 0)
                goto done;
            last_loss = epoch_loss / epoch_seen;
            double secs = clnet_seconds() - epoch_start,
                   train_acc = (double)epoch_correct / epoch_seen;
            char test_text[32];
            if (tty) fprintf(stderr, "\n");
            if (is_root()) {
                fprintf(stderr,
                        "epoch %d%s: train_loss=%.4f train_accuracy=%.4f test_accuracy=%s "
                        "seconds=%.1f images_per_s=%.0f\n",
                        epoch + 1, epoch_done ? "" : " (partial)", last_loss, train_acc,
                        accuracy_text(test_text, sizeof test_text, test_acc, 4, "-"), secs, ips);
                report_devices(&s, before);
            }
            for (int i = 0; i < devices && i < CLNET_MAX_DEVICES; i++) {
                clnet_device_share d;
                clnet_net_device_share(s.net, i, &d);
                before[i] = d.samples;
            }
            history_add(&h, epoch + (epoch_done ? 1.0 : (double)epoch_batches / per_epoch),
                        last_loss, train_acc, test_acc, secs, ips);
            if (csv) { /* the column is empty when the test set was not evaluated */
                fprintf(csv, "%d,%.6f,%.6f,%s,%.3f,%.1f\n", epoch + 1, last_loss, train_acc,
                        accuracy_text(test_text, sizeof test_text, test_acc, 6, ""), secs, ips);
                fflush(csv);
            }
            if (o.plot && h.n > 0 && is_root() &&
                clnet_write_curves_svg(o.plot, o.model, h.epoch, h.train_loss, h.train_acc,
                                       h.test_acc, h.n) != CLNET_OK)
                fprintf(stderr, "clnet: warning: plot: %s\n", clnet_last_error());
            if (epoch_done) epoch++, next_position = 0;
            epoch_loss = 0, epoch_correct = 0, epoch_seen = 0, epoch_batches = 0;
            epoch_train_seconds = 0;
            epoch_start = clnet_seconds();
        }
    }

    if (stop_signal) {
        const char *path = o.save ? o.save : "clnet-interrupted.safetensors";
        if (save(&s, path, epoch, next_position, data_seed, init_seed) != 0) {
            rc = 1;
            goto done;
        }
        fprintf(stderr,
                "clnet: stopped by %s after step %" PRId64 "; saved %s (continue with --resume "
                "%s)\n",
                stop_signal == SIGINT ? "SIGINT" : "SIGTERM", clnet_net_step(s.net), path, path);
        rc = 128 + stop_signal;
        goto done;
    }
    if (o.save && (rc = save(&s, o.save, epoch, next_position, data_seed, init_seed)) != 0)
        goto done;
    double test_acc = NAN;
    if (!o.no_eval) {
        if (h.n && !isnan(h.test_acc[h.n - 1]))
            test_acc = h.test_acc[h.n - 1];
        else if ((rc = evaluate(&o, &s, &test_acc, NULL)) != 0)
            goto done;
    }
    if (o.async && is_root())
        fprintf(stderr, "async: worst staleness %" PRId64 " (bound --staleness %ld)\n",
                clnet_net_worst_staleness(s.net), o.staleness);
    clnet_mpi_stats ms;
    if (clnet_mpi_size() > 1 && is_root() && clnet_net_mpi_stats(s.net, &ms) == CLNET_OK &&
        ms.steps > 0)
        fprintf(stderr,
                "mpi: %d ranks; per step each rank all-reduced %.0f KB of gradients, in flight "
                "%.2f ms from the first layer's start to the last one's end, of which %.2f ms "
                "waited for after the devices finished\n",
                clnet_mpi_size(), ms.bytes_per_step / 1e3, ms.inflight_seconds * 1e3,
                ms.exposed_seconds * 1e3);
    char test_text[32], loss_text[32]; /* no step taken (--steps 0): no loss */
    if (is_root())
        printf("final: test_accuracy=%s train_loss=%s images_per_s=%.0f\n",
               accuracy_text(test_text, sizeof test_text, test_acc, 4, "-"),
               accuracy_text(loss_text, sizeof loss_text, last_loss, 4, "-"),
               train_seconds > 0 ? run_samples / train_seconds : 0.0);
    fflush(stdout);
done:
    if (csv) fclose(csv);
    if (slog.f) fclose(slog.f);
    clnet_loader_free(loader);
    history_free(&h);
    session_free(&s);
    if (rc && rc != 2) fflush(stderr), clnet_mpi_abort(rc); /* the other ranks would wait */
    clnet_mpi_finalize();
    return rc;
}

int cmd_eval(int argc, char **argv) {
    options o;
    int rc = parse(argc, argv, &o, 1);
    if (rc) return rc < 0 ? 0 : rc;
    session s;
    double acc = 0, loss = 0;
    memset(&s, 0, sizeof s);
    if ((rc = join_job(&o)) != 0 || (rc = open_session(&o, &s, 0)) != 0) goto done;
    if (clnet_net_load_weights(s.net, o.weights, NULL) != CLNET_OK) {
        rc = fail("weights");
        goto done;
    }
    if (clnet_net_bind(s.net, s.rt, (int)o.batch) != CLNET_OK) {
        rc = fail("devices");
        goto done;
    }
    if ((rc = apply_split(&o, &s)) != 0) goto done;
    if ((rc = evaluate(&o, &s, &acc, &loss)) != 0) goto done;
    if (is_root()) printf("test_loss=%.4f\ntest_accuracy=%.4f\n", loss, acc);
done:
    session_free(&s);
    if (rc && rc != 2) fflush(stderr), clnet_mpi_abort(rc);
    clnet_mpi_finalize();
    return rc;
}
