/* `clnet predict`: a trained net's outputs for a set of inputs, in their
 * order, written as a NumPy .npy file (and optionally a picture). */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    cli_npy npy; /* --data-npy */
    int train;   /* --set: 0 test, 1 train */
    long count, batch;
    double mean, std;
    int mean_given, std_given, probabilities;
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
     .arg = "OUT.npy",
     .type = CLI_TEXT,
     .at = AT(output),
     .required = 1,
     .help = "where the outputs go: float32 (N, *the shape of the layer\n"
             "the loss reads), the logits of a classifier, in input order"},
    {.name = "--input",
     .arg = "X.npy",
     .type = CLI_TEXT,
     .at = AT(input),
     .help = "the samples (no labels): (N, C, spatial...) or (N, spatial...),\n"
             "uint8 (divided by 255) or float32"},
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
     .arg = "X",
     .type = CLI_FLOAT,
     .at = AT(mean),
     .given = AT(mean_given),
     .min = -1e3,
     .max = 1e3,
     .help = "normalise as (x - X) / Y, Y from --std (default: what the\n"
             "checkpoint recorded from training, else 0 and 1)"},
    {.name = "--std",
     .arg = "Y",
     .type = CLI_FLOAT,
     .at = AT(std),
     .given = AT(std_given),
     .min = 1e-6,
     .max = 1e3,
     .help = "the Y of --mean"},
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

/* The options every prediction needs, and one source of inputs at most. */
static int check(void *v) {
    const options *o = v;
    const char *missing = !o->model     ? "a model file (e.g. examples/models/lenet.cfg)"
                          : !o->weights ? "--weights FILE"
                          : !o->output  ? "--output OUT.npy"
                                        : NULL;
    if (missing) {
        fprintf(stderr, "clnet predict: needs %s (clnet predict --help)\n", missing);
        return 2;
    }
    if (!!o->input + !!o->data + !!o->npy.count > 1) {
        fprintf(stderr, "clnet predict: give one of --input, --data and --data-npy\n");
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

/* The data set the options name: --input, a pair of --data-npy, or an IDX split. */
static int load_inputs(const options *o, clnet_dataset **ds) {
    const cli_npy *npy = &o->npy;
    int k = npy->count == 4 && !o->train ? 2 : 0; /* the test pair comes second */
    clnet_status s =
        o->input     ? clnet_dataset_load_npy(ds, o->input, NULL)
        : npy->count ? clnet_dataset_load_npy(ds, npy->paths[k], npy->paths[k + 1])
                     : clnet_dataset_load_first(ds, o->data, o->train ? "train" : "test", o->count);
    return s != CLNET_OK ? fail(o->input ? "input" : "data") : 0;
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
} prediction;

static void prediction_free(prediction *p) {
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

/* The net with its weights, the normalisation they were trained with unless --mean and
 * --std say otherwise, and the inputs, checked against the net. */
static int load(prediction *p) {
    options *o = &p->o;
    clnet_progress progress;
    if (clnet_net_load(&p->net, o->model) != CLNET_OK) return fail("model");
    if (clnet_net_load_weights(p->net, o->weights, &progress) != CLNET_OK) return fail("weights");
    if (!o->mean_given) o->mean = progress.std != 0 ? progress.mean : 0;
    if (!o->std_given) o->std = progress.std != 0 ? progress.std : 1;
    int rc = load_inputs(o, &p->ds);
    if (rc) return rc;
    if (o->noise_given && (rc = cli_noise_targets(p->net, p->ds, o->model)) != 0) return rc;
    if (!cli_data_fits(p->net, p->ds, NULL, o->model)) return 1;
    if (o->count && o->count < clnet_dataset_count(p->ds))
        clnet_dataset_truncate(p->ds, (int)o->count);
    p->n = clnet_dataset_count(p->ds);
    p->classes = clnet_net_classes(p->net);
    p->outputs = clnet_net_outputs(p->net);
    p->positions = clnet_net_positions(p->net);
    p->labelled = clnet_dataset_labelled(p->ds) || clnet_dataset_target_classes(p->ds);
    p->classifier = clnet_net_is_classifier(p->net);
    return 0;
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
                               .mean = (float)o->mean,
                               .std = (float)o->std,
                               .noise = (float)o->noise,
                               .noise_seed = CLI_TEST_NOISE_SEED};
    if (clnet_loader_create(&p->loader, p->ds, &cfg) != CLNET_OK) return fail("data");
    int dims[4], rank = clnet_dataset_dims(p->ds, dims);
    p->drawn = p->n < PICTURED ? p->n : PICTURED;
    p->sample = 1;
    for (int d = 0; d < rank; d++) p->sample *= (size_t)dims[d];
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

/* The drawn inputs as the data gave them: the loader's normalisation undone. */
static float *data_units(const prediction *p, const float *x) {
    size_t count = (size_t)p->drawn * p->sample;
    float *y = malloc(count * sizeof *y);
    for (size_t k = 0; y && k < count; k++) y[k] = x[k] * (float)p->o.std + (float)p->o.mean;
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
        y[k] = of_input ? v * (float)p->o.std + (float)p->o.mean : v;
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

/* The .npy file, the picture, and the line on stdout. */
static int write_outputs(const prediction *p) {
    const options *o = &p->o;
    int64_t shape[8] = {p->n};
    int out_rank = 1 + output_shape(p->net, shape + 1), rc;
    if (clnet_write_npy(o->output, p->out, out_rank, shape) != CLNET_OK) return fail("output");
    if (o->picture && (rc = draw(p)) != 0) return rc;
    char text[160];
    size_t used = (size_t)snprintf(text, sizeof text, "(");
    for (int d = 0; d < out_rank && used < sizeof text; d++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld", d ? "," : "",
                                 (long long)shape[d]);
    if (used < sizeof text) snprintf(text + used, sizeof text - used, ")");
    if (p->labelled && p->classifier)
        printf("predicted: count=%d shape=%s output=%s accuracy=%.4f\n", p->n, text, o->output,
               (double)p->correct / ((double)p->n * p->positions));
    else
        printf("predicted: count=%d shape=%s output=%s accuracy=-\n", p->n, text, o->output);
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
