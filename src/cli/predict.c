/* `clnet predict`: a trained net's outputs for a set of inputs, in their
 * order, written as a NumPy .npy file (and optionally a picture). */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PICTURED   16 /* samples drawn by --picture */
#define TEXT_OF(n) #n
#define NUMBER(n)  TEXT_OF(n) /* a macro's value as a string literal */

typedef struct {
    const char *model, *weights, *output, *input, *data, *devices, *picture;
    cli_npy npy; /* --data-npy */
    int train;   /* --split: 0 test, 1 train */
    long count, batch;
    double mean, std;
    int mean_given, std_given, probabilities;
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
     .help = "or an IDX data set folder (default $CLNET_DATA_DIR or\n"
             "the Fashion-MNIST package's) ..."},
    {.name = "--data-npy",
     .arg = "X,Y[,TX,TY]",
     .type = CLI_CUSTOM,
     .at = AT(npy),
     .parse = cli_npy_files,
     .help = "... or .npy samples and labels (a pair, or two)"},
    {.name = "--split",
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
    {.name = "--probabilities",
     .type = CLI_FLAG,
     .at = AT(probabilities),
     .help = "softmax of the logits instead"},
    {.name = "--picture",
     .arg = "FILE.svg",
     .type = CLI_TEXT,
     .at = AT(picture),
     .help = "draw the first " NUMBER(PICTURED) " samples with their predicted (and true)\n"
                                                "class"},
    {.name = "--devices",
     .arg = "SPEC",
     .type = CLI_TEXT,
     .at = AT(devices),
     .help = "which devices (see clnet devices); batches are split across\n"
             "them as in evaluation"},
    {.name = "--batch",
     .arg = "B",
     .type = CLI_INT,
     .at = AT(batch),
     .min = 1,
     .max = 1 << 20,
     .def = "256",
     .help = "samples per pass"},
    {0},
};

static const cli_command predict_cmd = {
    .name = "predict",
    .positional = "MODEL",
    .positional_what = "model file",
    .positional_at = AT(model),
    .opts = predict_opts,
    .footer = "stdout ends with\n"
              "  predicted: count=<n> shape=<shape> output=<file> accuracy=<a or ->\n",
};

/* 1 to go on, else 0 with the exit code at *rc (0 after --help). */
static int parse(int argc, char **argv, options *o, int *rc) {
    memset(o, 0, sizeof *o);
    if (!cli_parse(&predict_cmd, argc, argv, o, rc)) return 0;
    *rc = 2;
    const char *missing = !o->model     ? "a model file (e.g. examples/models/lenet.cfg)"
                          : !o->weights ? "--weights FILE"
                          : !o->output  ? "--output OUT.npy"
                                        : NULL;
    if (missing) {
        fprintf(stderr, "clnet predict: needs %s (clnet predict --help)\n", missing);
        return 0;
    }
    if (!!o->input + !!o->data + !!o->npy.count > 1) {
        fprintf(stderr, "clnet predict: give one of --input, --data and --data-npy\n");
        return 0;
    }
    *rc = 0;
    return 1;
}

static int fail(const char *what) {
    fprintf(stderr, "clnet: %s: %s\n", what, clnet_last_error());
    return 1;
}

/* The data set the options name: --input, a pair of --data-npy, or an IDX split. */
static int load_inputs(const options *o, clnet_dataset **ds) {
    const cli_npy *npy = &o->npy;
    int k = npy->count == 4 && !o->train ? 2 : 0; /* the test pair comes second */
    clnet_status s = o->input     ? clnet_dataset_load_npy(ds, o->input, NULL)
                     : npy->count ? clnet_dataset_load_npy(ds, npy->paths[k], npy->paths[k + 1])
                                  : clnet_dataset_load(ds, o->data, o->train ? "train" : "test");
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

int cmd_predict(int argc, char **argv) {
    options o;
    int rc = 0;
    if (!parse(argc, argv, &o, &rc)) return rc;
    clnet_net *net = NULL;
    clnet_dataset *ds = NULL;
    clnet_runtime *rt = NULL;
    clnet_loader *loader = NULL;
    float *out = NULL, *pictured = NULL;
    int *predicted = NULL;
    int32_t *labels = NULL;
    clnet_progress progress;
    if (clnet_net_load(&net, o.model) != CLNET_OK) {
        rc = fail("model");
        goto done;
    }
    if (clnet_net_load_weights(net, o.weights, &progress) != CLNET_OK) {
        rc = fail("weights");
        goto done;
    }
    if (!o.mean_given) o.mean = progress.std != 0 ? progress.mean : 0;
    if (!o.std_given) o.std = progress.std != 0 ? progress.std : 1;
    if ((rc = load_inputs(&o, &ds)) != 0) goto done;
    char why[256];
    if (!clnet_net_accepts(net, ds, why, sizeof why)) {
        fprintf(stderr, "clnet: %s %s\n", o.model, why);
        rc = 1;
        goto done;
    }
    if (o.count && o.count < clnet_dataset_count(ds)) clnet_dataset_truncate(ds, (int)o.count);
    int n = clnet_dataset_count(ds), classes = clnet_net_classes(net);
    int labelled = clnet_dataset_labelled(ds);
    if (labelled && clnet_dataset_classes(ds) > classes) {
        fprintf(stderr, "clnet: the data has %d classes but %s predicts %d\n",
                clnet_dataset_classes(ds), o.model, classes);
        rc = 1;
        goto done;
    }
    if (clnet_runtime_create(&rt, o.devices) != CLNET_OK) {
        rc = fail("devices");
        goto done;
    }
    int batch = o.batch < n ? (int)o.batch : n;
    if (clnet_net_bind(net, rt, batch) != CLNET_OK) {
        rc = fail("devices");
        goto done;
    }
    clnet_loader_config cfg = {
        .batch = batch, .seed = 0, .shuffle = 0, .mean = (float)o.mean, .std = (float)o.std};
    if (clnet_loader_create(&loader, ds, &cfg) != CLNET_OK) {
        rc = fail("data");
        goto done;
    }
    int dims[4], rank = clnet_dataset_dims(ds, dims), drawn = n < PICTURED ? n : PICTURED;
    size_t sample = 1; /* the values of one sample */
    for (int d = 0; d < rank; d++) sample *= (size_t)dims[d];
    out = malloc((size_t)n * classes * sizeof *out);
    predicted = malloc((size_t)n * sizeof *predicted);
    labels = malloc((size_t)n * sizeof *labels);
    pictured = malloc((size_t)drawn * sample * sizeof *pictured);
    if (!out || !predicted || !labels || !pictured) {
        fprintf(stderr, "clnet: out of memory for %d outputs\n", n);
        rc = 1;
        goto done;
    }
    int correct = 0;
    for (int done = 0; done < n;) {
        clnet_batch b;
        if (clnet_loader_next(loader, &b) != CLNET_OK) {
            rc = fail("data");
            goto done;
        }
        float *dst = out + (size_t)done * classes;
        clnet_status s = o.probabilities ? clnet_net_predict(net, b.images, b.n, dst)
                                         : clnet_net_logits(net, b.images, b.n, dst);
        if (s != CLNET_OK) {
            rc = fail("prediction");
            goto done;
        }
        for (int i = 0; i < b.n; i++) {
            const float *row = dst + (size_t)i * classes;
            int best = 0;
            for (int c = 1; c < classes; c++)
                if (row[c] > row[best]) best = c;
            predicted[done + i] = best;
            labels[done + i] = b.labels[i];
            correct += best == b.labels[i];
            if (done + i < drawn)
                memcpy(pictured + (size_t)(done + i) * sample, b.images + (size_t)i * sample,
                       sample * sizeof *pictured);
        }
        done += b.n;
    }
    int64_t shape[8] = {n};
    int out_rank = 1 + output_shape(net, shape + 1);
    if (clnet_write_npy(o.output, out, out_rank, shape) != CLNET_OK) {
        rc = fail("output");
        goto done;
    }
    int image[4];
    if (o.picture && clnet_net_input_rank(net, image) != 3) {
        fprintf(stderr,
                "clnet: --picture: %s takes no images (channels, height, width); "
                "nothing drawn\n",
                o.model);
    } else if (o.picture &&
               clnet_write_predictions_svg(o.picture, pictured, image[0], image[1], image[2], drawn,
                                           predicted, labelled ? labels : NULL) != CLNET_OK) {
        rc = fail("picture");
        goto done;
    }
    char text[160];
    size_t used = (size_t)snprintf(text, sizeof text, "(");
    for (int d = 0; d < out_rank && used < sizeof text; d++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld", d ? "," : "",
                                 (long long)shape[d]);
    if (used < sizeof text) snprintf(text + used, sizeof text - used, ")");
    if (labelled)
        printf("predicted: count=%d shape=%s output=%s accuracy=%.4f\n", n, text, o.output,
               (double)correct / n);
    else
        printf("predicted: count=%d shape=%s output=%s accuracy=-\n", n, text, o.output);
done:
    free(out);
    free(predicted);
    free(labels);
    free(pictured);
    clnet_loader_free(loader);
    clnet_net_free(net);
    clnet_runtime_free(rt);
    clnet_dataset_free(ds);
    return rc;
}
