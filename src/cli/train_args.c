/* The option table of `clnet train` and `clnet eval`, and the rules between options
 * that no single row states. */
#include "train_args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AT(field) CLI_AT(train_options, field)
/* --data-npy, one row for each command (`only`): the two read the pairs differently. */
#define DATA_NPY(only_in, pairs)                                                                   \
    {                                                                                              \
        .name = "--data-npy", .arg = "X,Y[,TX,TY]", .type = CLI_CUSTOM, .at = AT(npy),             \
        .parse = cli_npy_files, .only = only_in,                                                   \
        .help = ".npy samples and labels (or float32 targets) instead of\n"                        \
                "--data: " pairs                                                                   \
    }

/* Train's options; eval reads those not marked `.only = "train"`. */
static const cli_opt train_opts[] = {
    {.name = "--data",
     .arg = "DIR",
     .type = CLI_TEXT,
     .at = AT(data),
     .help =
         "IDX or CIFAR binary data set folder (default $CLNET_DATA_DIR or " CLNET_DEFAULT_DATA_DIR
         ")"},
    DATA_NPY("train", "the training pair, then the test pair (needed unless\n"
                      "--no-eval)"),
    DATA_NPY("eval", "the test pair of X,Y,TX,TY, or the only pair"),
    {.name = "--epochs",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(epochs),
     .min = 1,
     .max = 1000000,
     .def = "10",
     .only = "train",
     .help = "epochs to train"},
    {.name = "--steps",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(steps),
     .given = AT(steps_given),
     .min = 0,
     .max = 1L << 40,
     .only = "train",
     .help = "stop once the net has taken N optimizer steps"},
    CLI_BATCH(train_options, "samples per step"),
    {.name = "--lr",
     .arg = "X",
     .type = CLI_FLOAT,
     .at = AT(lr),
     .given = AT(lr_given),
     .min = 1e-12,
     .max = 1e6,
     .only = "train",
     .help = "learning rate (default 0.1 with sgd; 1e-3 with adam and\n"
             "adamw, as PyTorch)"},
    {.name = "--optimizer",
     .arg = "NAME",
     .type = CLI_CHOICE,
     .at = AT(optimizer),
     .choices = (const char *const[]){"sgd", "adam", "adamw", NULL}, /* clnet_optimizer's order */
     .only = "train",
     .help = "sgd (default), adam or adamw (as torch.optim)"},
    {.name = "--beta1",
     .arg = "B",
     .type = CLI_FLOAT,
     .at = AT(beta1),
     .min = 0,
     .max = 0.999999,
     .def = "0.9",
     .only = "train",
     .help = "Adam/AdamW: decay of the gradients' average"},
    {.name = "--beta2",
     .arg = "B",
     .type = CLI_FLOAT,
     .at = AT(beta2),
     .min = 0,
     .max = 0.999999999,
     .def = "0.999",
     .only = "train",
     .help = "Adam/AdamW: decay of the squares' average"},
    {.name = "--eps",
     .arg = "E",
     .type = CLI_FLOAT,
     .at = AT(eps),
     .min = 1e-30,
     .max = 1,
     .def = "1e-8",
     .only = "train",
     .help = "Adam and AdamW: added to the denominator"},
    {.name = "--momentum",
     .arg = "M",
     .type = CLI_FLOAT,
     .at = AT(momentum),
     .min = 0,
     .max = 0.999999,
     .def = "0",
     .only = "train",
     .help = "SGD momentum"},
    {.name = "--nesterov",
     .type = CLI_FLAG,
     .at = AT(nesterov),
     .only = "train",
     .help = "Nesterov momentum"},
    {.name = "--wd",
     .arg = "W",
     .type = CLI_FLOAT,
     .at = AT(wd),
     .given = AT(wd_given),
     .min = 0,
     .max = 1e3,
     .only = "train",
     .help = "weight decay (default 0; 0.01 with adamw, as PyTorch)"},
    {.name = "--schedule",
     .arg = "S",
     .type = CLI_CHOICE,
     .at = AT(schedule),
     .choices = (const char *const[]){"constant", "step", "cosine", "onecycle",
                                      NULL}, /* clnet_schedule's */
     .only = "train",
     .help = "constant (default), step, cosine (to 0 at the run's end)\n"
             "or onecycle (PyTorch's OneCycleLR, max_lr --lr, over the\n"
             "run's steps)"},
    {.name = "--step-size",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(step_size),
     .min = 1,
     .max = 1L << 40,
     .only = "train",
     .help = "step schedule: steps between decays (default a third of\n"
             "the run after --warmup)"},
    {.name = "--gamma",
     .arg = "G",
     .type = CLI_FLOAT,
     .at = AT(gamma),
     .min = 1e-9,
     .max = 1,
     .def = "0.1",
     .only = "train",
     .help = "step schedule: decay factor"},
    {.name = "--warmup",
     .arg = "N|Xe",
     .type = CLI_TEXT,
     .at = AT(warmup),
     .only = "train",
     .help = "linear warm-up over N steps, or X epochs (2e, 0.5e), in\n"
             "front of constant, step or cosine, which then start\n"
             "(PyTorch's SequentialLR of LinearLR and the schedule)"},
    {.name = "--warmup-factor",
     .arg = "S",
     .type = CLI_FLOAT,
     .at = AT(warmup_factor),
     .min = 1e-9,
     .max = 1,
     .only = "train",
     .help = "--warmup starts at S x --lr (default 1/3, LinearLR's)"},
    {.name = "--pct-start",
     .arg = "P",
     .type = CLI_FLOAT,
     .at = AT(pct_start),
     .min = 0,
     .max = 1,
     .def = "0.3",
     .only = "train",
     .help = "onecycle: the share of the steps that rise to --lr"},
    {.name = "--div-factor",
     .arg = "D",
     .type = CLI_FLOAT,
     .at = AT(div_factor),
     .min = 1e-9,
     .max = 1e12,
     .def = "25",
     .only = "train",
     .help = "onecycle: it starts at --lr / D"},
    {.name = "--final-div-factor",
     .arg = "F",
     .type = CLI_FLOAT,
     .at = AT(final_div_factor),
     .min = 1e-9,
     .max = 1e12,
     .def = "1e4",
     .only = "train",
     .help = "onecycle: it ends at --lr / D / F"},
    {.name = "--no-cycle-momentum",
     .type = CLI_FLAG,
     .at = AT(no_cycle_momentum),
     .only = "train",
     .help = "onecycle: keep --momentum (--beta1) as given; without it\n"
             "SGD's momentum (Adam's beta1) cycles as PyTorch's does"},
    {.name = "--base-momentum",
     .arg = "M",
     .type = CLI_FLOAT,
     .at = AT(base_momentum),
     .min = 1e-9,
     .max = 0.999999,
     .def = "0.85",
     .only = "train",
     .help = "onecycle: the momentum at the peak of the learning rate"},
    {.name = "--max-momentum",
     .arg = "M",
     .type = CLI_FLOAT,
     .at = AT(max_momentum),
     .min = 1e-9,
     .max = 0.999999,
     .def = "0.95",
     .only = "train",
     .help = "onecycle: the momentum at its start and end"},
    {.name = "--clip-grad-norm",
     .arg = "MAX",
     .type = CLI_FLOAT,
     .at = AT(clip_grad_norm),
     .min = 0,
     .max = INFINITY,
     .only = "train",
     .help = "scale the gradient down to an L2 norm of MAX over the\n"
             "whole model when it is larger (clip_grad_norm_; 0: off;\n"
             "inf: never, the norm in --step-log all the same)"},
    {.name = "--monitor",
     .arg = "METRIC",
     .type = CLI_TEXT,
     .at = AT(monitor),
     .only = "train",
     .help = "the epoch line's figure that --plateau, --early-stop and\n"
             "--save-best watch: val_loss, val_accuracy, test_loss,\n"
             "test_accuracy, train_loss or train_accuracy (a loss is\n"
             "better lower, an accuracy higher; default val_loss with\n"
             "--val-split, else test_loss)"},
    {.name = "--plateau",
     .arg = "PATIENCE",
     .type = CLI_INT,
     .at = AT(plateau),
     .given = AT(plateau_given),
     .min = 0,
     .max = 1000000,
     .only = "train",
     .help = "reduce the learning rate when --monitor has not improved\n"
             "for more than PATIENCE epochs (ReduceLROnPlateau; on top\n"
             "of --schedule, once an epoch)"},
    {.name = "--plateau-factor",
     .arg = "F",
     .type = CLI_FLOAT,
     .at = AT(plateau_factor),
     .min = 1e-9,
     .max = 0.999999,
     .def = "0.1",
     .only = "train",
     .help = "--plateau: the learning rate's factor at each reduction"},
    {.name = "--plateau-threshold",
     .arg = "T",
     .type = CLI_FLOAT,
     .at = AT(plateau_threshold),
     .min = 0,
     .max = 1,
     .def = "1e-4",
     .only = "train",
     .help = "--plateau: better means better than the best by this share"},
    {.name = "--plateau-cooldown",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(plateau_cooldown),
     .min = 0,
     .max = 1000000,
     .def = "0",
     .only = "train",
     .help = "--plateau: epochs after a reduction that count as good"},
    {.name = "--min-lr",
     .arg = "X",
     .type = CLI_FLOAT,
     .at = AT(min_lr),
     .min = 0,
     .max = 1e6,
     .def = "0",
     .only = "train",
     .help = "--plateau: the learning rate's floor"},
    {.name = "--seed",
     .arg = "S",
     .type = CLI_INT,
     .at = AT(seed),
     .given = AT(seed_given),
     .min = 0,
     .max = 0x7fffffffL,
     .def = "1",
     .only = "train",
     .help = "seed for initialisation and shuffling"},
    {.name = "--mean",
     .arg = "X[,X...]",
     .type = CLI_CUSTOM,
     .at = AT(mean),
     .parse = cli_mean_values,
     .def = "0",
     .help = "normalise images as (pixel/255 - X) / Y, Y from --std;\n"
             "one value, or one a channel (0.4914,0.4822,0.4465)"},
    {.name = "--std",
     .arg = "Y[,Y...]",
     .type = CLI_CUSTOM,
     .at = AT(std),
     .parse = cli_std_values,
     .def = "1",
     .help = "the Y of --mean, one or one a channel"},
    {.name = "--resize",
     .arg = "N|HxW",
     .type = CLI_TEXT,
     .at = AT(resize),
     .help = "resize the images (bilinear, as PyTorch's interpolate\n"
             "with align_corners=False, no antialias) to N x N or H x W"},
    {.name = "--center-crop",
     .arg = "N|HxW",
     .type = CLI_TEXT,
     .at = AT(center_crop),
     .help = "then keep the middle N x N or H x W of each image"},
    {.name = "--augment",
     .arg = "LIST",
     .type = CLI_TEXT,
     .at = AT(augment),
     .only = "train",
     .help = "random transforms of the training images, keyed by\n"
             "(seed, epoch, sample): flip (left-right, half the time),\n"
             "crop=PAD (pad PAD pixels, crop back at random),\n"
             "resized-crop[=MIN] (a random window of MIN (0.08) to all\n"
             "of the area, resized to --resize's size)"},
    {.name = "--val-split",
     .arg = "F",
     .type = CLI_FLOAT,
     .at = AT(val_split),
     .min = 0,
     .max = 0.9,
     .only = "train",
     .help = "hold out this share of the training set (a fixed random\n"
             "subset: the same in every run of the same data) and report\n"
             "its loss and accuracy each epoch (val_loss=, val_accuracy=)"},
    {.name = "--skip-bad-images",
     .type = CLI_FLAG,
     .at = AT(skip_bad),
     .help = "image folders: decode every image before starting and leave\n"
             "out, with a line each, those that fail (else the first bad\n"
             "header stops the load, and damage past it the batch)"},
    {.name = "--loader-threads",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(loader_threads),
     .min = 0,
     .max = 64,
     .help = "threads preparing each batch (0: one a core for image\n"
             "folders, which decode as they go; 1 for data in memory)"},
    CLI_NOISE(train_options, "add Gaussian noise of this standard deviation to the\n"
                             "inputs (to the pixels in [0, 1], before --mean/--std);\n"
                             "the targets stay clean: a loss without target= gets\n"
                             "the clean samples (a denoising autoencoder)"),
    CLI_DEVICES(train_options, "which devices (see clnet devices); a step splits its batch\n"
                               "across all of them by measured speed; under mpirun, each\n"
                               "rank's own, and local-rank gives ranks that share a\n"
                               "machine a device each"),
    {.name = "--mpi-timeout",
     .arg = "S",
     .type = CLI_FLOAT,
     .at = AT(mpi_timeout),
     .min = 1,
     .max = 1e6,
     .help = "under mpirun: fail when the other ranks do not answer\n"
             "within S seconds (default 300)"},
    {.name = "--deterministic",
     .type = CLI_FLAG,
     .at = AT(deterministic),
     .help = "a fixed, equal split: two runs give identical parameters"},
    {.name = "--split",
     .arg = "W0,W1,...",
     .type = CLI_TEXT,
     .at = AT(split),
     .help = "a fixed split in these proportions (one per device);\n"
             "W0,W1/V0,V1/...: several, one a step in turn"},
    {.name = "--sync",
     .arg = "MODE",
     .type = CLI_CHOICE,
     .at = AT(async),
     .choices = (const char *const[]){"sync", "async", NULL},
     .only = "train",
     .help = "sync (default): every step uses every device; async:\n"
             "parameter server, devices push gradients as they finish"},
    {.name = "--staleness",
     .arg = "K",
     .type = CLI_INT,
     .at = AT(staleness),
     .min = 0,
     .max = 1000000,
     .def = "1",
     .only = "train",
     .help = "async: a push is at most K updates old"},
    {.name = "--save",
     .arg = "FILE",
     .type = CLI_TEXT,
     .at = AT(save),
     .only = "train",
     .help = "write a checkpoint at the end (and on Ctrl-C)"},
    {.name = "--save-every",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(save_every),
     .min = 1,
     .max = 1L << 40,
     .only = "train",
     .help = "also every N steps (needs --save)"},
    {.name = "--keep-last",
     .arg = "K",
     .type = CLI_INT,
     .at = AT(keep_last),
     .min = 1,
     .max = 1000000,
     .only = "train",
     .help = "--save-every also writes FILE-stepS.EXT (S the step),\n"
             "keeping the last K of them"},
    {.name = "--save-best",
     .arg = "FILE",
     .type = CLI_TEXT,
     .at = AT(save_best),
     .only = "train",
     .help = "write a checkpoint at the end of each epoch whose\n"
             "--monitor is the best so far"},
    {.name = "--early-stop",
     .arg = "PATIENCE",
     .type = CLI_INT,
     .at = AT(early_stop),
     .min = 1,
     .max = 1000000,
     .only = "train",
     .help = "end the run when --monitor has not improved by more than\n"
             "--min-delta for PATIENCE epochs (Lightning's EarlyStopping)"},
    {.name = "--min-delta",
     .arg = "D",
     .type = CLI_FLOAT,
     .at = AT(min_delta),
     .given = AT(min_delta_given),
     .min = 0,
     .max = 1e9,
     .def = "0",
     .only = "train",
     .help = "--early-stop: the least change that counts as improving"},
    {.name = "--resume",
     .arg = "FILE",
     .type = CLI_TEXT,
     .at = AT(resume),
     .only = "train",
     .help = "continue from a checkpoint (same command otherwise)"},
    {.name = "--skip-nonfinite",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(skip_nonfinite),
     .min = 0,
     .max = 1L << 40,
     .def = "0",
     .only = "train",
     .help = "skip up to N steps whose loss, gradient or update is\n"
             "NaN or infinite (nothing of them applied); the next one\n"
             "stops the run (0: the first one stops it)"},
    {.name = "--on-device-failure",
     .arg = "POLICY",
     .type = CLI_CHOICE,
     .at = AT(stop_on_failure),
     .choices = (const char *const[]){"continue", "stop", NULL},
     .only = "train",
     .help = "continue (default): a device that fails is dropped and\n"
             "its work done again by the others; stop: the run stops\n"
             "(as it always does under mpirun)"},
    {.name = "--check-replicas",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(check_replicas),
     .min = 0,
     .max = 1L << 40,
     .def = "0",
     .only = "train",
     .help = "every N steps, read every device's parameters and\n"
             "buffers back and stop if one differs (0: never)"},
    {.name = "--log",
     .arg = "FILE.csv",
     .type = CLI_TEXT,
     .at = AT(log),
     .only = "train",
     .help = "per-epoch figures as CSV"},
    {.name = "--step-log",
     .arg = "FILE.csv",
     .type = CLI_TEXT,
     .at = AT(step_log),
     .only = "train",
     .help = "step,epoch,loss,lr,images_per_s,grad_norm every\n"
             "--log-every steps (grad_norm with --clip-grad-norm)"},
    {.name = "--log-every",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(log_every),
     .given = AT(log_every_given),
     .min = 1,
     .max = 1L << 40,
     .def = "1",
     .only = "train",
     .help = "steps between lines of --step-log, which it needs"},
    {.name = "--plot",
     .arg = "FILE.svg",
     .type = CLI_TEXT,
     .at = AT(plot),
     .only = "train",
     .help = "per-epoch loss and accuracy curves as SVG"},
    {.name = "--no-eval",
     .type = CLI_FLAG,
     .at = AT(no_eval),
     .only = "train",
     .help = "do not evaluate the test set (test_accuracy=- in the lines)"},
    {.name = "--train-limit",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(train_limit),
     .min = 1,
     .max = 1L << 30,
     .only = "train",
     .help = "use only the first N training images (quick runs)"},
    {.name = "--test-limit",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(test_limit),
     .min = 1,
     .max = 1L << 30,
     .help = "use only the first N test images"},
    {.name = "--override",
     .arg = "KEYS",
     .type = CLI_TEXT,
     .at = AT(override),
     .only = "train",
     .help = "with --resume: the settings (lr,batch,...: the options'\n"
             "names) that may differ from the checkpoint's run"},
    {.name = "--label-smoothing",
     .arg = "EPS",
     .type = CLI_FLOAT,
     .at = AT(label_smoothing),
     .min = 0,
     .max = 1,
     .only = "train",
     .help = "label smoothing of the softmax_cross_entropy loss, 0 to 1\n"
             "(as PyTorch's; default: the model file's label_smoothing)"},
    {.name = "--top-k",
     .arg = "K",
     .type = CLI_INT,
     .at = AT(top_k),
     .min = 1,
     .max = 1L << 30,
     .only = "eval",
     .help = "also test_topK_accuracy: the label among the K largest\n"
             "logits (ties in class order)"},
    {.name = "--confusion",
     .arg = "FILE.csv",
     .type = CLI_TEXT,
     .at = AT(confusion),
     .only = "eval",
     .help = "the confusion matrix as CSV (rows the true class,\n"
             "columns the predicted one); on stderr too, up to 20 classes"},
    {.name = "--weights",
     .arg = "FILE",
     .type = CLI_TEXT,
     .at = AT(weights),
     .only = "eval",
     .required = 1,
     .help = "the checkpoint to evaluate"},
    {0},
};

static int check_train(void *o);
static int check_eval(void *o);

const cli_command cli_train_cmd = {
    .name = "train",
    .size = sizeof(train_options),
    .check = check_train,
    CLI_MODEL(train_options),
    .opts = train_opts,
    .footer = "Progress goes to stderr; the last line on stdout is\n"
              "  final: test_accuracy=<a> train_loss=<l> images_per_s=<n>\n"
              "(test_loss=<l> in place of test_accuracy for a model without classes).\n",
};

const cli_command cli_eval_cmd = {
    .name = "eval",
    .size = sizeof(train_options),
    .check = check_eval,
    CLI_MODEL(train_options),
    .opts = train_opts,
    .footer = "The last lines on stdout are\n"
              "  test_loss=<l>\n"
              "  test_accuracy=<a>   (not for a model without classes)\n"
              "  test_topK_accuracy=<a>   (with --top-k K)\n"
              "and stderr says how fast: eval: N images in S s, images_per_s=<n>\n",
};

/* The rules between options, which no row of the table states alone. */
static int check(train_options *o, int eval) {
    if (!o->model) return cli_which_model(eval ? "eval" : "train");
    if (eval && !o->weights) {
        fprintf(stderr, "clnet eval: --weights FILE is required\n");
        return 2;
    }
    if (o->check_replicas && o->async) {
        fprintf(stderr, "clnet: --check-replicas compares replicas that synchronous training "
                        "keeps identical; under --sync async they differ by design\n");
        return 2;
    }
    if (o->save_every && !o->save) {
        fprintf(stderr, "clnet: --save-every needs --save FILE\n");
        return 2;
    }
    if (o->keep_last && !o->save_every) {
        fprintf(stderr, "clnet: --keep-last needs --save-every N\n");
        return 2;
    }
    if (o->save_best && o->save && strcmp(o->save_best, o->save) == 0) {
        fprintf(stderr, "clnet: --save-best and --save name the same file %s: give two\n", o->save);
        return 2;
    }
    if (!o->plateau_given) o->plateau = -1; /* off (0 is a patience) */
    if (o->log_every_given && !o->step_log) {
        fprintf(stderr, "clnet: --log-every needs --step-log FILE.csv\n");
        return 2;
    }
    if (o->optimizer != CLNET_OPTIMIZER_SGD && (o->momentum > 0 || o->nesterov)) {
        fprintf(stderr,
                "clnet: --momentum and --nesterov are SGD's; %s uses --beta1 (default 0.9)\n",
                o->optimizer == CLNET_OPTIMIZER_ADAM ? "adam" : "adamw");
        return 2;
    }
    if (o->optimizer == CLNET_OPTIMIZER_ADAMW && !o->wd_given) o->wd = 0.01;    /* PyTorch's */
    if (!o->lr_given) o->lr = o->optimizer == CLNET_OPTIMIZER_SGD ? 0.1 : 1e-3; /* PyTorch's */
    if (o->nesterov && o->momentum == 0) {
        fprintf(stderr, "clnet: --nesterov needs --momentum > 0\n");
        return 2;
    }
    long steps;
    if (o->warmup && !train_warmup_steps(o->warmup, 1 << 20, &steps)) return 2;
    if (!eval && o->warmup && o->schedule == CLNET_SCHEDULE_ONECYCLE) {
        fprintf(stderr, "clnet: --warmup: --schedule onecycle warms up itself (the first "
                        "--pct-start of its steps, from --lr / --div-factor)\n");
        return 2;
    }
    if (!eval && o->schedule == CLNET_SCHEDULE_ONECYCLE && !o->no_cycle_momentum &&
        (cli_given(o->argc, o->argv, "--momentum") || cli_given(o->argc, o->argv, "--beta1"))) {
        fprintf(stderr,
                "clnet: --schedule onecycle cycles the momentum (%s) between "
                "--max-momentum and --base-momentum, as PyTorch's OneCycleLR: give "
                "those, or --no-cycle-momentum to keep %s\n",
                o->optimizer == CLNET_OPTIMIZER_SGD ? "SGD's" : "beta1",
                cli_given(o->argc, o->argv, "--momentum") ? "--momentum" : "--beta1");
        return 2;
    }
    clnet_transforms t; /* read again once --resume has filled in what was left out */
    return cli_transforms(o->resize, o->center_crop, o->augment, &t);
}

static int check_train(void *o) {
    return check(o, 0);
}

static int check_eval(void *o) {
    return check(o, 1);
}

int train_parse(int argc, char **argv, train_options *o, int eval, int *rc) {
    memset(o, 0, sizeof *o);
    o->argc = argc, o->argv = argv;
    o->label_smoothing = -1; /* the model file's, unless given */
    return cli_parse(eval ? &cli_eval_cmd : &cli_train_cmd, argc, argv, o, rc);
}

int train_warmup_steps(const char *text, long per_epoch, long *steps) {
    char *end = NULL;
    size_t n = strlen(text);
    if (n > 1 && text[n - 1] == 'e') { /* epochs */
        double x = strtod(text, &end);
        if (end == text + n - 1 && x >= 0 && x <= 1e6) {
            *steps = (long)llround(x * (double)per_epoch);
            if (*steps > 0 || x == 0) return 1;
            fprintf(stderr, "clnet: --warmup %s: less than one step (%ld steps an epoch)\n", text,
                    per_epoch);
            return 0;
        }
    } else if (n > 0 && text[0] >= '0' && text[0] <= '9') {
        long v = strtol(text, &end, 10);
        if (*end == '\0' && v >= 0 && v <= (1L << 40)) {
            *steps = v;
            return 1;
        }
    }
    fprintf(stderr, "clnet: --warmup: expected N steps (100) or X epochs (2e, 0.5e), got '%s'\n",
            text);
    return 0;
}
