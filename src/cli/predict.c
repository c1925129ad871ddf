/* `clnet predict`: a trained net's outputs for a set of inputs, in their
 * order, written as a NumPy .npy file (and optionally a picture). */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PICTURED 16 /* samples drawn by --picture */

typedef struct {
    const char *model, *weights, *output, *input, *data, *data_npy, *split, *devices, *picture;
    long count, batch;
    double mean, std;
    int mean_given, std_given, probabilities;
} options;

static void usage(FILE *out) {
    fprintf(
        out,
        "usage: clnet predict MODEL --weights FILE --output OUT.npy [options]\n"
        "  --weights FILE      the checkpoint (or PyTorch-named safetensors) to run\n"
        "  --output OUT.npy    where the outputs go: float32 (N, *the shape of the layer\n"
        "                      the loss reads), the logits of a classifier, in input order\n"
        "  --input X.npy       the samples (no labels): (N, C, spatial...) or (N, spatial...),\n"
        "                      uint8 (divided by 255) or float32\n"
        "  --data DIR          or an IDX data set folder (default $CLNET_DATA_DIR or\n"
        "                      the Fashion-MNIST package's) ...\n"
        "  --data-npy X,Y[,TX,TY]  ... or .npy samples and labels (a pair, or two)\n"
        "  --split S           test (default) or train: which pair of --data/--data-npy\n"
        "  --count N           only the first N samples\n"
        "  --mean X --std Y    normalise as (x - X) / Y (default: what the checkpoint\n"
        "                      recorded from training, else 0 and 1)\n"
        "  --probabilities     softmax of the logits instead\n"
        "  --picture FILE.svg  draw the first %d samples with their predicted (and true)\n"
        "                      class\n"
        "  --devices SPEC      which devices (see clnet devices); batches are split across\n"
        "                      them as in evaluation\n"
        "  --batch B           samples per pass (default 256)\n"
        "stdout ends with\n"
        "  predicted: count=<n> shape=<shape> output=<file> accuracy=<a or ->\n",
        PICTURED);
}

static int parse(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->batch = 256;
    o->split = "test";
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
#define VALUE(name) (cli_option(argc, argv, &i, name, &v) && (v || (bad = 1)))
        int bad = 0;
        if (argv[i][0] != '-') {
            if (o->model) {
                fprintf(stderr, "clnet: one model file only ('%s' and '%s')\n", o->model, argv[i]);
                return 2;
            }
            o->model = argv[i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return -1;
        } else if (VALUE("--weights")) {
            o->weights = v;
        } else if (VALUE("--output")) {
            o->output = v;
        } else if (VALUE("--input")) {
            o->input = v;
        } else if (VALUE("--data")) {
            o->data = v;
        } else if (VALUE("--data-npy")) {
            o->data_npy = v;
        } else if (VALUE("--split")) {
            if (strcmp(v, "test") != 0 && strcmp(v, "train") != 0) {
                fprintf(stderr, "clnet: --split: expected test or train, got '%s'\n", v);
                return 2;
            }
            o->split = v;
        } else if (VALUE("--devices")) {
            o->devices = v;
        } else if (VALUE("--picture")) {
            o->picture = v;
        } else if (VALUE("--count")) {
            if (!cli_int("--count", v, 1, 2147483647L, &o->count)) return 2;
        } else if (VALUE("--batch")) {
            if (!cli_int("--batch", v, 1, 1 << 20, &o->batch)) return 2;
        } else if (VALUE("--mean")) {
            if (!cli_float("--mean", v, -1e3, 1e3, &o->mean)) return 2;
            o->mean_given = 1;
        } else if (VALUE("--std")) {
            if (!cli_float("--std", v, 1e-6, 1e3, &o->std)) return 2;
            o->std_given = 1;
        } else if (strcmp(argv[i], "--probabilities") == 0) {
            o->probabilities = 1;
        } else if (!bad) {
            fprintf(stderr, "clnet predict: unknown option '%s' (clnet predict --help)\n", argv[i]);
            return 2;
        }
        if (bad) return 2;
#undef VALUE
    }
    const char *missing = !o->model     ? "a model file (e.g. examples/models/lenet.cfg)"
                          : !o->weights ? "--weights FILE"
                          : !o->output  ? "--output OUT.npy"
                                        : NULL;
    if (missing) {
        fprintf(stderr, "clnet predict: needs %s (clnet predict --help)\n", missing);
        return 2;
    }
    if (!!o->input + !!o->data + !!o->data_npy > 1) {
        fprintf(stderr, "clnet predict: give one of --input, --data and --data-npy\n");
        return 2;
    }
    return 0;
}

static int fail(const char *what) {
    fprintf(stderr, "clnet: %s: %s\n", what, clnet_last_error());
    return 1;
}

/* The data set the options name: --input, a pair of --data-npy, or an IDX split. */
static int load_inputs(const options *o, clnet_dataset **ds) {
    if (o->input) return clnet_dataset_load_npy(ds, o->input, NULL) != CLNET_OK ? fail("input") : 0;
    if (!o->data_npy)
        return clnet_dataset_load(ds, o->data, o->split) != CLNET_OK ? fail("data") : 0;
    cli_npy npy;
    if (!cli_npy_files("--data-npy", o->data_npy, &npy)) return 2;
    int k = npy.count == 4 && strcmp(o->split, "test") == 0 ? 2 : 0;
    return clnet_dataset_load_npy(ds, npy.paths[k], npy.paths[k + 1]) != CLNET_OK ? fail("data")
                                                                                  : 0;
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
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
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
