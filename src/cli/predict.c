/* `clnet predict`: a trained net's outputs for a set of inputs, in their
 * order, written as a NumPy .npy file (and optionally a picture). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PICTURED      16 /* samples drawn by --picture */
#define TEXT_OF(n)    #n
#define NUMBER(n)     TEXT_OF(n) /* a macro's value as a string literal */
#define PICTURED_TEXT NUMBER(PICTURED)
#define PICTURE_HELP                                                                               \
    "draw the first " PICTURED_TEXT " samples: a classifier's images,\n"                           \
    "volumes (central slices) or signals with the predicted\n"                                     \
    "(and true) class, or its class maps; input | output\n"                                        \
    "(| target) for a model whose output is shaped as its\n"                                       \
    "input (an autoencoder)"

typedef struct {
    const char *model, *weights, *output, *input, *data, *devices, *picture;
    const char *resize, *center_crop;
    cli_npy npy; /* --data-npy */
    int train;   /* --set: 0 test, 1 train */
    long count, batch, top;
    cli_floats mean, std;
    int mean_given, std_given, resize_given, center_crop_given, probabilities, skip_bad;
    double noise;    /* --noise */
    int noise_given; /* --noise, even 0: a loss of the data's targets gets the clean samples */
} options;

#define AT(field) CLI_AT(options, field)

static const cli_opt predict_opts[] = {
    {.name = "--weights",
     .arg = "FILE",
     .type = CLI_TEXT,
     .at = AT(weights),
     .required = 1,
     .help = "the checkpoint (or PyTorch-named safetensors) to run"},
    {.name = "--output",
     .arg = "OUT.npy|OUT.csv",
     .type = CLI_TEXT,
     .at = AT(output),
     .help = "where the outputs go: .npy, float32 (N, *the shape of the\n"
             "layer the loss reads), the logits of a classifier, in input\n"
             "order; .csv (a classifier's): a row a sample, its file (or\n"
             "index) and its --top classes, names and probabilities.\n"
             "Needed unless --input names images"},
    {.name = "--input",
     .arg = "X.npy|IMAGE|DIR",
     .type = CLI_TEXT,
     .at = AT(input),
     .help = "the samples (no labels): X.npy (N, C, spatial...) or (N,\n"
             "spatial...), uint8 (divided by 255) or float32; or a PNG or\n"
             "JPEG file, or a folder of them (its .png, .jpg, .jpeg files):\n"
             "each printed with its predicted class names"},
    {.name = "--data",
     .arg = "DIR",
     .type = CLI_TEXT,
     .at = AT(data),
     .help = "or an IDX or CIFAR binary data set folder (default $CLNET_DATA_DIR or\n"
             "the Fashion-MNIST package's) ..."},
    {.name = "--data-npy",
     .arg = "X,Y[,TX,TY]",
     .type = CLI_CUSTOM,
     .at = AT(npy),
     .parse = cli_npy_files,
     .help = "... or .npy samples and labels (a pair, or two)"},
    {.name = "--set",
     .arg = "S",
     .type = CLI_CHOICE,
     .at = AT(train),
     .choices = (const char *const[]){"test", "train", NULL},
     .help = "test (default) or train: which pair of --data/--data-npy"},
    {.name = "--count",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(count),
     .min = 1,
     .max = 2147483647L,
     .help = "only the first N samples"},
    {.name = "--mean",
     .arg = "X[,X...]",
     .type = CLI_CUSTOM,
     .at = AT(mean),
     .given = AT(mean_given),
     .parse = cli_mean_values,
     .help = "normalise as (x - X) / Y, Y from --std, one value or one a\n"
             "channel (default: what the checkpoint recorded from\n"
             "training, else 0 and 1)"},
    {.name = "--std",
     .arg = "Y[,Y...]",
     .type = CLI_CUSTOM,
     .at = AT(std),
     .given = AT(std_given),
     .parse = cli_std_values,
     .help = "the Y of --mean"},
    {.name = "--resize",
     .arg = "N|HxW",
     .type = CLI_TEXT,
     .at = AT(resize),
     .given = AT(resize_given),
     .help = "resize the inputs (default: as the checkpoint's run did)"},
    {.name = "--center-crop",
     .arg = "N|HxW",
     .type = CLI_TEXT,
     .at = AT(center_crop),
     .given = AT(center_crop_given),
     .help = "crop their middle (default: as the checkpoint's run did)"},
    {.name = "--top",
     .arg = "K",
     .type = CLI_INT,
     .at = AT(top),
     .min = 1,
     .max = 1000,
     .def = "1",
     .help = "the K likeliest classes of each image printed (and in .csv)"},
    {.name = "--skip-bad-images",
     .type = CLI_FLAG,
     .at = AT(skip_bad),
     .help = "leave out (with a line each) the images that do not decode"},
    CLI_NOISE(options, "add Gaussian noise of this standard deviation to the\n"
                       "inputs (to the pixels in [0, 1], before --mean/--std),\n"
                       "drawn as clnet eval draws the test set's; the targets\n"
                       "stay clean (a loss without target= gets the samples)"),
    {.name = "--probabilities",
     .type = CLI_FLAG,
     .at = AT(probabilities),
     .help = "softmax of the logits instead"},
    {.name = "--picture",
     .arg = "FILE.svg",
     .type = CLI_TEXT,
     .at = AT(picture),
     .help = PICTURE_HELP},
    CLI_DEVICES(options, "which devices (see clnet devices); batches are split across\n"
                         "them as in evaluation"),
    CLI_BATCH(options, "samples per pass"),
    {0},
};

/* 1 when path ends in `ending` (any case). */
static int ends_in(const char *path, const char *ending) {
    size_t n = path ? strlen(path) : 0, e = strlen(ending);
    return n >= e && strcasecmp(path + n - e, ending) == 0;
}

/* --input names images (a file or a folder of them), not a .npy file. */
static int names_images(const char *input) {
    return input && !ends_in(input, ".npy");
}

/* The options every prediction needs, and one source of inputs at most. */
static int check(void *v) {
    const options *o = v;
    const char *missing = !o->model     ? "a model file (e.g. examples/models/lenet.cfg)"
                          : !o->weights ? "--weights FILE"
                          : !o->output && !names_images(o->input) ? "--output OUT.npy"
                                                                  : NULL;
    if (missing) {
        fprintf(stderr, "clnet predict: needs %s (clnet predict --help)\n", missing);
        return 2;
    }
    if (!!o->input + !!o->data + !!o->npy.count > 1) {
        fprintf(stderr, "clnet predict: give one of --input, --data and --data-npy\n");
        return 2;
    }
    if (o->output && !ends_in(o->output, ".npy") && !ends_in(o->output, ".csv")) {
        fprintf(stderr,
                "clnet predict: --output %s: name it .npy (the outputs) or .csv (the "
                "classes)\n",
                o->output);
        return 2;
    }
    return 0;
}

const cli_command cli_predict_cmd = {
    .name = "predict",
    .size = sizeof(options),
    .check = check,
    CLI_MODEL(options),
    .opts = predict_opts,
    .footer = "stdout ends with\n"
              "  predicted: count=<n> shape=<shape> output=<file> accuracy=<a or ->\n",
};

static int fail(const char *what) {
    fprintf(stderr, "clnet: %s: %s\n", what, clnet_last_error());
    return 1;
}

/* The data set the options name: --input (.npy or images), a pair of --data-npy, or a split
 * of a data set folder. */
static int load_inputs(const options *o, clnet_dataset **ds) {
    const cli_npy *npy = &o->npy;
    int k = npy->count == 4 && !o->train ? 2 : 0; /* the test pair comes second */
    clnet_dataset_options opt = {.limit = o->count, .skip_bad_images = o->skip_bad};
    clnet_status s = names_images(o->input) ? clnet_dataset_load_images(ds, o->input, &opt)
                     : o->input             ? clnet_dataset_load_npy(ds, o->input, NULL)
                     : npy->count
                         ? clnet_dataset_load_npy(ds, npy->paths[k], npy->paths[k + 1])
                         : clnet_dataset_load_with(ds, o->data, o->train ? "train" : "test", &opt);
    if (s != CLNET_OK) return fail(o->input ? "input" : "data");
    cli_report_skipped(*ds);
    return 0;
}

/* The shape of one sample's output: that of the layer the loss reads. */
static int output_shape(const clnet_net *net, int64_t *shape) {
    int layers = clnet_net_layer_count(net);
    clnet_layer_info loss, info;
    clnet_net_layer_info(net, layers - 1, &loss);
    for (int i = 0; i < layers - 1; i++) {
        clnet_net_layer_info(net, i, &info);
        if (strcmp(info.name, loss.input_names[0]) != 0) continue;
        for (int d = 0; d < info.out_rank; d++) shape[d] = info.out_shape[d];
        return info.out_rank;
    }
    int dims[4], rank = clnet_net_input_rank(net, dims); /* the loss reads the input itself */
    for (int d = 0; d < rank; d++) shape[d] = dims[d];
    return rank;
}

/* A prediction: the net, its inputs, and the outputs as they come. */
typedef struct {
    options o;
    clnet_net *net;
    clnet_dataset *ds;
    clnet_runtime *rt;
    clnet_loader *loader;
    float *out;      /* (n, outputs) */
    float *pictured; /* (drawn, *sample's shape): the inputs --picture draws */
    /* (drawn, targets): the data's targets of the samples drawn (float targets or class maps), or
     * NULL without */
    float *pictured_targets;
    size_t targets;  /* the values of one sample's target; 0: none */
    int *predicted;  /* (n) */
    int32_t *labels; /* (n) */
    int n, classes, labelled, drawn;
    long correct;   /* answers whose winner is the label */
    int classifier; /* 0: a model without classes (no winners, no accuracy) */
    int positions;  /* a classifier's answers a sample: 1, or its positions (per=position) */
    size_t outputs; /* the values of one sample's output */
    size_t sample;  /* the values of one sample */
    clnet_transforms transforms; /* --resize, --center-crop (or the checkpoint run's) */
    char resize[32], center_crop[32];
    char names_text[CLNET_CLASS_NAMES_CAP]; /* the checkpoint's class names, split in place */
    const char **names;                     /* (classes) a name a class, or NULL */
} prediction;

static void prediction_free(prediction *p) {
    free(p->names);
    free(p->out);
    free(p->predicted);
    free(p->labels);
    free(p->pictured);
    free(p->pictured_targets);
    clnet_loader_free(p->loader);
    clnet_net_free(p->net);
    clnet_runtime_free(p->rt);
    clnet_dataset_free(p->ds);
}

/* What the options leave out, from the checkpoint: the normalisation and the evaluation
 * transforms of the run that trained it (its recorded settings), and its class names. */
static int from_checkpoint(prediction *p, const clnet_progress *progress) {
    options *o = &p->o;
    char value[CLNET_RUN_CAP];
    if (!o->mean_given) {
        o->mean = (cli_floats){1, {progress->std != 0 ? progress->mean : 0}};
        if (cli_run_value(progress->run, "mean", value, sizeof value) && *value &&
            !cli_mean_values("the checkpoint's mean", value, &o->mean))
            return 1;
    }
    if (!o->std_given) {
        o->std = (cli_floats){1, {progress->std != 0 ? progress->std : 1}};
        if (cli_run_value(progress->run, "std", value, sizeof value) && *value &&
            !cli_std_values("the checkpoint's std", value, &o->std))
            return 1;
    }
    if (!o->resize_given && cli_run_value(progress->run, "resize", p->resize, sizeof p->resize))
        o->resize = *p->resize ? p->resize : NULL;
    if (!o->center_crop_given &&
        cli_run_value(progress->run, "center-crop", p->center_crop, sizeof p->center_crop))
        o->center_crop = *p->center_crop ? p->center_crop : NULL;
    snprintf(p->names_text, sizeof p->names_text, "%s", progress->class_names);
    return cli_transforms(o->resize, o->center_crop, NULL, &p->transforms);
}

/* The names of the classes: the checkpoint's, else the data's; none when neither has them
 * (or the checkpoint's are not one a class). */
static int class_names(prediction *p) {
    if (!p->classifier || p->classes < 1) return 0;
    p->names = calloc((size_t)p->classes, sizeof *p->names);
    if (!p->names) return 1;
    int found = 0;
    for (char *line = p->names_text; *line && found < p->classes; found++) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        p->names[found] = line;
        line = end ? end + 1 : line + strlen(line);
    }
    if (found == p->classes) return 0;
    if (found)
        fprintf(stderr,
                "clnet: note: the checkpoint names %d classes, the model has %d: classes "
                "shown by number\n",
                found, p->classes);
    for (int k = 0; k < p->classes; k++) p->names[k] = clnet_dataset_class_name(p->ds, k);
    return 0;
}

/* The net with its weights, the normalisation and transforms they were trained with unless
 * the options say otherwise, and the inputs, checked against the net. */
static int load(prediction *p) {
    options *o = &p->o;
    clnet_progress progress;
    if (clnet_net_load(&p->net, o->model) != CLNET_OK) return fail("model");
    if (clnet_net_load_weights(p->net, o->weights, &progress) != CLNET_OK) return fail("weights");
    int rc = from_checkpoint(p, &progress);
    if (rc) return rc;
    rc = load_inputs(o, &p->ds);
    if (rc) return rc;
    if (o->noise_given && (rc = cli_noise_targets(p->net, p->ds, o->model)) != 0) return rc;
    if (!cli_data_fits(p->net, p->ds, &p->transforms, o->model)) return 1;
    if (o->count && o->count < clnet_dataset_count(p->ds))
        clnet_dataset_truncate(p->ds, (int)o->count);
    p->n = clnet_dataset_count(p->ds);
    p->classes = clnet_net_classes(p->net);
    p->outputs = clnet_net_outputs(p->net);
    p->positions = clnet_net_positions(p->net);
    p->labelled = clnet_dataset_labelled(p->ds) || clnet_dataset_target_classes(p->ds);
    p->classifier = clnet_net_is_classifier(p->net);
    return class_names(p);
}

/* Devices, the loader in input order, and room for every output. */
static int prepare(prediction *p) {
    const options *o = &p->o;
    int batch = o->batch < p->n ? (int)o->batch : p->n;
    clnet_status st = clnet_runtime_create(&p->rt, o->devices);
    if (st != CLNET_OK) {
        fail("devices");
        return cli_exit_code(st);
    }
    if (clnet_net_bind(p->net, p->rt, batch) != CLNET_OK) return fail("devices");
    clnet_loader_config cfg = {.batch = batch,
                               .seed = 0,
                               .shuffle = 0,
                               .noise = (float)o->noise,
                               .noise_seed = CLI_TEST_NOISE_SEED,
                               .transforms = p->transforms};
    int channels = 0, rc = 0;
    clnet_dataset_shape(p->ds, &channels, NULL, NULL);
    if ((rc = cli_normalisation(&o->mean, &o->std, channels, &cfg)) != 0) return rc;
    if (clnet_loader_create(&p->loader, p->ds, &cfg) != CLNET_OK) return fail("data");
    p->drawn = p->n < PICTURED ? p->n : PICTURED;
    int dims[4], rank = clnet_dataset_dims(p->ds, dims), h = 0, w = 0;
    p->sample = 1;
    for (int d = 0; d < rank; d++) p->sample *= (size_t)dims[d];
    clnet_loader_shape(p->loader, &channels, &h, &w);
    if (rank == 3) p->sample = (size_t)channels * h * w; /* images: after the transforms */
    p->out = malloc((size_t)p->n * p->outputs * sizeof *p->out);
    p->predicted = malloc((size_t)p->n * sizeof *p->predicted);
    p->labels = malloc((size_t)p->n * sizeof *p->labels);
    p->pictured = malloc((size_t)p->drawn * p->sample * sizeof *p->pictured);
    p->targets = (size_t)clnet_dataset_targets(p->ds, NULL);
    if (p->targets)
        p->pictured_targets = malloc((size_t)p->drawn * p->targets * sizeof *p->pictured_targets);
    if (!p->out || !p->predicted || !p->labels || !p->pictured ||
        (p->targets && !p->pictured_targets)) {
        fprintf(stderr, "clnet: out of memory for %d outputs\n", p->n);
        return 1;
    }
    return 0;
}

/* The winners of a loss per position, sample i of batch b (its outputs
 * (classes, positions) at `row`), counted against the data's classes. */
static void keep_positions(prediction *p, const clnet_batch *b, int i, const float *row) {
    size_t P = (size_t)p->positions;
    for (size_t at = 0; at < P; at++) {
        int best = 0;
        for (int c = 1; c < p->classes; c++)
            if (row[c * P + at] > row[(size_t)best * P + at]) best = c;
        if (b->targets) p->correct += best == (int)b->targets[(size_t)i * P + at];
    }
}

/* Keeps batch b's winners and labels, and the inputs and targets --picture draws. `first` is
 * the index of b's first sample; `rows` are b's outputs (b.n, outputs). */
static void keep(prediction *p, const clnet_batch *b, int first, const float *rows) {
    int per_position = clnet_dataset_target_classes(p->ds); /* the data fits the net */
    for (int i = 0; i < b->n; i++) {
        const float *row = rows + (size_t)i * p->outputs;
        int best = 0;
        for (int c = 1; c < p->classes; c++)
            if (row[c] > row[best]) best = c;
        p->predicted[first + i] = best;
        p->labels[first + i] = b->labels[i];
        if (per_position)
            keep_positions(p, b, i, row);
        else
            p->correct += best == b->labels[i];
        if (first + i >= p->drawn) continue;
        memcpy(p->pictured + (size_t)(first + i) * p->sample, b->images + (size_t)i * p->sample,
               p->sample * sizeof *p->pictured);
    }
}

/* The data's targets of the samples --picture draws, from batch b (its first sample `first`). */
static void keep_drawn_targets(prediction *p, const clnet_batch *b, int first) {
    for (int i = 0; b->targets && i < b->n && first + i < p->drawn; i++)
        memcpy(p->pictured_targets + (size_t)(first + i) * p->targets,
               b->targets + (size_t)i * p->targets, p->targets * sizeof *p->pictured_targets);
}

static int predict_all(prediction *p) {
    for (int done = 0; done < p->n;) {
        clnet_batch b;
        if (clnet_loader_next(p->loader, &b) != CLNET_OK) return fail("data");
        float *dst = p->out + (size_t)done * p->outputs;
        clnet_status s = p->o.probabilities ? clnet_net_predict(p->net, b.images, b.n, dst)
                                            : clnet_net_logits(p->net, b.images, b.n, dst);
        if (s != CLNET_OK) return fail("prediction");
        keep(p, &b, done, dst);
        keep_drawn_targets(p, &b, done);
        done += b.n;
    }
    return 0;
}

/* ---- --picture: what the model made of the first samples -------------------------------- */

static int nothing_drawn(const prediction *p, const char *why) {
    fprintf(stderr, "clnet: --picture: %s %s; nothing drawn\n", p->o.model, why);
    return 0;
}

static int drew(const prediction *p, clnet_status s, const char *what) {
    if (s != CLNET_OK) return fail("picture");
    fprintf(stderr, "clnet: --picture: drew %d %s to %s\n", p->drawn, what, p->o.picture);
    return 0;
}

/* The normalisation of value k of the drawn samples: its channel's with one a channel. */
static int channel_of(const prediction *p, size_t k) {
    int channels = p->o.mean.count > p->o.std.count ? p->o.mean.count : p->o.std.count;
    return channels > 1 ? (int)(k % p->sample / (p->sample / (size_t)channels)) : 0;
}
static float mean_of(const prediction *p, size_t k) {
    return (float)p->o.mean.v[p->o.mean.count > 1 ? channel_of(p, k) : 0];
}
static float std_of(const prediction *p, size_t k) {
    return (float)p->o.std.v[p->o.std.count > 1 ? channel_of(p, k) : 0];
}

/* The drawn inputs as the data gave them: the loader's normalisation undone. */
static float *data_units(const prediction *p, const float *x) {
    size_t count = (size_t)p->drawn * p->sample;
    float *y = malloc(count * sizeof *y);
    for (size_t k = 0; y && k < count; k++) y[k] = x[k] * std_of(p, k) + mean_of(p, k);
    return y;
}

/* The loss layer's output for the drawn samples, in the data's units: what --probabilities
 * writes (the sigmoid of bce_with_logits' logits), with the normalisation undone where the
 * target is the input itself (target=input: the output is compared with the normalised input). */
static float *drawn_outputs(const prediction *p) {
    int last = clnet_net_layer_count(p->net) - 1;
    clnet_layer_info loss;
    clnet_net_layer_info(p->net, last, &loss);
    int sigmoid = !p->o.probabilities && strcmp(loss.kind, "bce_with_logits") == 0;
    int of_input = loss.inputs == 2 && strcmp(loss.input_names[1], "input") == 0;
    size_t count = (size_t)p->drawn * p->outputs;
    float *y = malloc(count * sizeof *y);
    for (size_t k = 0; y && k < count; k++) {
        float v = sigmoid ? 1.0f / (1.0f + expf(-p->out[k])) : p->out[k];
        y[k] = of_input ? v * std_of(p, k) + mean_of(p, k) : v;
    }
    return y;
}

/* The data's targets when they are images of the input's shape that differ from the inputs
 * drawn (a denoiser's clean images), else NULL: they make a third column. */
static const float *target_column(const prediction *p, const float *inputs) {
    if (!p->pictured_targets || p->targets != p->sample || clnet_dataset_target_classes(p->ds))
        return NULL;
    for (size_t k = 0; k < (size_t)p->drawn * p->sample; k++)
        if (fabsf(p->pictured_targets[k] - inputs[k]) > 1e-6f * (1 + fabsf(inputs[k])))
            return p->pictured_targets;
    return NULL;
}

/* The central axial slices (n, C, H, W) of volumes x (n, C, D, H, W), in place of x. */
static void axial_slices(float *x, int n, const int *in) {
    size_t plane = (size_t)in[2] * in[3];
    for (size_t s = 0; s < (size_t)n * in[0]; s++) /* s: a sample's channel */
        memmove(x + s * plane, x + (s * in[1] + in[1] / 2) * plane, plane * sizeof *x);
}

/* Columns (drawn, *the input's shape) of images, or of volumes (their central axial slices
 * are drawn: the columns are cut down to them in place), titled input, output, target. */
static int write_columns(const prediction *p, float *const *columns, int ncolumns, const int *in,
                         int rank) {
    static const char *const NAMES[3] = {"input", "output", "target"};
    char titles[3][32], what[80];
    for (int k = 0; k < ncolumns; k++) {
        snprintf(titles[k], sizeof titles[k], "%s", NAMES[k]);
        if (rank == 4) {
            snprintf(titles[k], sizeof titles[k], "%s d=%d", NAMES[k], in[1] / 2);
            axial_slices(columns[k], p->drawn, in);
        }
    }
    snprintf(what, sizeof what, "reconstructions (input | output%s)%s",
             ncolumns == 3 ? " | target" : "", rank == 4 ? " of central axial slices" : "");
    clnet_status s = clnet_write_image_columns_svg(
        p->o.picture, (const float *const[]){columns[0], columns[1], columns[2]},
        (const char *const[]){titles[0], titles[1], titles[2]}, ncolumns, in[0], in[rank - 2],
        in[rank - 1], p->drawn);
    return drew(p, s, what);
}

/* A model whose output has its input's shape (an autoencoder, a denoiser, a regression onto
 * images): input | output, and | target where the data's targets differ from the inputs. */
static int draw_reconstructions(const prediction *p, const int *in, int rank) {
    int64_t shape[8];
    int same = output_shape(p->net, shape) == rank;
    for (int d = 0; same && d < rank; d++) same = shape[d] == in[d];
    if (!same) return nothing_drawn(p, "gives outputs not shaped as its inputs");
    if (rank != 3 && rank != 4) return nothing_drawn(p, "reconstructs no images or volumes");
    size_t bytes = (size_t)p->drawn * p->sample * sizeof(float);
    float *columns[3] = {data_units(p, p->pictured), drawn_outputs(p), NULL};
    const float *target = columns[0] ? target_column(p, columns[0]) : NULL;
    if (target && (columns[2] = malloc(bytes)) != NULL) memcpy(columns[2], target, bytes);
    int rc = 1;
    if (columns[0] && columns[1] && (!target || columns[2]))
        rc = write_columns(p, columns, target ? 3 : 2, in, rank);
    else
        fprintf(stderr, "clnet: --picture: out of memory\n");
    for (int k = 0; k < 3; k++) free(columns[k]);
    return rc;
}

/* softmax_cross_entropy per=position on images: each image, its predicted class map (the
 * winner at each position of the outputs (classes, positions)) and the true one. */
static int draw_class_maps(const prediction *p, const int *in) {
    size_t P = (size_t)p->positions, count = (size_t)p->drawn * P;
    int *predicted = malloc(count * sizeof *predicted), *truth = NULL, rc = 1;
    float *images = data_units(p, p->pictured);
    int with_truth = p->pictured_targets && clnet_dataset_target_classes(p->ds);
    if (with_truth) truth = malloc(count * sizeof *truth);
    if (!predicted || !images || (with_truth && !truth)) {
        fprintf(stderr, "clnet: --picture: out of memory\n");
        goto done;
    }
    for (size_t k = 0; k < count; k++) {
        const float *row = p->out + (k / P) * p->outputs;
        int best = 0;
        for (int c = 1; c < p->classes; c++)
            if (row[c * P + k % P] > row[(size_t)best * P + k % P]) best = c;
        predicted[k] = best;
        if (truth) truth[k] = (int)p->pictured_targets[k];
    }
    clnet_class_maps maps = {.images = images,
                             .channels = in[0],
                             .height = in[1],
                             .width = in[2],
                             .n = p->drawn,
                             .predicted = predicted,
                             .truth = truth,
                             .classes = p->classes};
    rc = drew(p, clnet_write_class_maps_svg(p->o.picture, &maps),
              truth ? "class maps (input | predicted | true)" : "class maps (input | predicted)");
done:
    free(predicted);
    free(truth);
    free(images);
    return rc;
}

/* --picture: reconstructions for a model without classes whose output has its input's shape;
 * for a classifier, its images, volumes (central slices) or signals with their predicted (and
 * true) classes, or class maps for a classifier of each position of images. */
static int draw(const prediction *p) {
    int in[4], rank = clnet_net_input_rank(p->net, in);
    if (!p->classifier) return draw_reconstructions(p, in, rank);
    if (p->positions > 1)
        return rank == 3 ? draw_class_maps(p, in)
                         : nothing_drawn(p, "classifies the positions of no image");
    if (rank < 2) return nothing_drawn(p, "takes no images, volumes or signals");
    const int32_t *labels = p->labelled ? p->labels : NULL;
    float *x = data_units(p, p->pictured);
    if (!x) {
        fprintf(stderr, "clnet: --picture: out of memory\n");
        return 1;
    }
    clnet_status s;
    const char *what;
    if (rank == 2) {
        s = clnet_write_signal_predictions_svg(p->o.picture, x, in[0], in[1], p->drawn,
                                               p->predicted, labels);
        what = "signals";
    } else if (rank == 3) {
        s = clnet_write_predictions_svg(p->o.picture, x, in[0], in[1], in[2], p->drawn,
                                        p->predicted, labels);
        what = "images";
    } else {
        clnet_volume_predictions v = {.volumes = x,
                                      .channels = in[0],
                                      .depth = in[1],
                                      .height = in[2],
                                      .width = in[3],
                                      .n = p->drawn,
                                      .predicted = p->predicted,
                                      .labels = labels};
        s = clnet_write_volume_predictions_svg(p->o.picture, &v);
        what = "volumes (central slices)";
    }
    free(x);
    return drew(p, s, what);
}

/* ---- the classes of each sample: printed, and as .csv ------------------------------------ */

/* Sample i's k likeliest classes (k at most the classes) and their probabilities: the
 * softmax of its logits (or the probabilities --probabilities already wrote). */
static int top_classes(const prediction *p, int i, int *cls, double *prob) {
    const float *row = p->out + (size_t)i * p->outputs;
    int k = p->o.top < p->classes ? (int)p->o.top : p->classes;
    double top = row[0], sum = 0;
    for (int c = 1; c < p->classes; c++) top = row[c] > top ? row[c] : top;
    for (int c = 0; c < p->classes; c++) sum += p->o.probabilities ? row[c] : exp(row[c] - top);
    for (int r = 0; r < k; r++) { /* selection: k is small */
        int best = -1;
        for (int c = 0; c < p->classes; c++) {
            int taken = 0;
            for (int q = 0; q < r && !taken; q++) taken = cls[q] == c;
            if (!taken && (best < 0 || row[c] > row[best])) best = c;
        }
        cls[r] = best;
        prob[r] = (p->o.probabilities ? row[best] : exp(row[best] - top)) / sum;
    }
    return k;
}

static void class_text(const prediction *p, int c, char *out, size_t cap) {
    const char *name = p->names ? p->names[c] : NULL;
    if (name)
        snprintf(out, cap, "%s", name);
    else
        snprintf(out, cap, "class %d", c);
}

/* One line a sample on stdout ("FILE: NAME 0.9731, ..."), for images read from files. */
static void print_classes(const prediction *p) {
    int cls[1000];
    double prob[1000];
    for (int i = 0; i < p->n; i++) {
        int k = top_classes(p, i, cls, prob);
        printf("%s:", clnet_dataset_file(p->ds, i));
        for (int r = 0; r < k; r++) {
            char name[256];
            class_text(p, cls[r], name, sizeof name);
            printf("%s %s %.4f", r ? "," : "", name, prob[r]);
        }
        printf("\n");
    }
}

/* --output X.csv: file (or index), then class, name, probability for each of the --top. */
static int write_csv(const prediction *p, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "clnet: --output %s: %s\n", path, strerror(errno));
        return 1;
    }
    int cls[1000], k = p->o.top < p->classes ? (int)p->o.top : p->classes;
    double prob[1000];
    fprintf(f, "%s", clnet_dataset_file(p->ds, 0) ? "file" : "index");
    for (int r = 0; r < k; r++)
        if (r == 0)
            fprintf(f, ",class,name,probability");
        else
            fprintf(f, ",class_%d,name_%d,probability_%d", r + 1, r + 1, r + 1);
    fprintf(f, "\n");
    for (int i = 0; i < p->n; i++) {
        const char *file = clnet_dataset_file(p->ds, i);
        if (file)
            cli_csv_field(f, file, strlen(file));
        else
            fprintf(f, "%d", i);
        top_classes(p, i, cls, prob);
        for (int r = 0; r < k; r++) {
            const char *name = p->names ? p->names[cls[r]] : NULL;
            fprintf(f, ",%d,", cls[r]);
            cli_csv_field(f, name ? name : "", name ? strlen(name) : 0);
            fprintf(f, ",%.6f", prob[r]);
        }
        fprintf(f, "\n");
    }
    int failed = ferror(f);
    if (fclose(f) != 0) failed = 1;
    if (failed) {
        fprintf(stderr, "clnet: --output %s: cannot write it\n", path);
        return 1;
    }
    return 0;
}

/* The .npy or .csv file, the picture, the classes of image files, and the line on stdout. */
static int write_outputs(const prediction *p) {
    const options *o = &p->o;
    int64_t shape[8] = {p->n};
    int out_rank = 1 + output_shape(p->net, shape + 1), rc;
    int classes_of_files = p->classifier && p->positions == 1 && names_images(o->input);
    if (o->output && ends_in(o->output, ".csv") && (!p->classifier || p->positions > 1)) {
        fprintf(stderr, "clnet: --output %s: a .csv holds a classifier's classes; %s gives %s\n",
                o->output, o->model, p->classifier ? "a class a position" : "no classes");
        return 2;
    }
    if (o->output && ends_in(o->output, ".npy") &&
        clnet_write_npy(o->output, p->out, out_rank, shape) != CLNET_OK)
        return fail("output");
    if (o->output && ends_in(o->output, ".csv") && (rc = write_csv(p, o->output)) != 0) return rc;
    if (classes_of_files) print_classes(p);
    if (o->picture && (rc = draw(p)) != 0) return rc;
    char text[160];
    size_t used = (size_t)snprintf(text, sizeof text, "(");
    for (int d = 0; d < out_rank && used < sizeof text; d++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld", d ? "," : "",
                                 (long long)shape[d]);
    if (used < sizeof text) snprintf(text + used, sizeof text - used, ")");
    const char *output = o->output ? o->output : "-";
    if (p->labelled && p->classifier)
        printf("predicted: count=%d shape=%s output=%s accuracy=%.4f\n", p->n, text, output,
               (double)p->correct / ((double)p->n * p->positions));
    else
        printf("predicted: count=%d shape=%s output=%s accuracy=-\n", p->n, text, output);
    return 0;
}

int cmd_predict(int argc, char **argv) {
    prediction *p = calloc(1, sizeof *p);
    int rc = 1;
    if (!p) return 1;
    if (cli_parse(&cli_predict_cmd, argc, argv, &p->o, &rc) && (rc = load(p)) == 0 &&
        (rc = prepare(p)) == 0 && (rc = predict_all(p)) == 0)
        rc = write_outputs(p);
    prediction_free(p);
    free(p);
    return rc;
}
