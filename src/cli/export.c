/* `clnet export OUT`: a data set written out as an image folder, OUT/train/CLASS/INDEX.png
 * and OUT/test/..., the layout `--data OUT` trains from (and torchvision's ImageFolder
 * reads): to look at a data set, to hand it to another tool, or to turn IDX, CIFAR or .npy
 * files into pictures. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *out, *data, *resize, *center_crop;
    cli_npy npy;
    int format, splits;
    long quality, count;
} export_options;

#define AT(field) CLI_AT(export_options, field)

static const cli_opt export_opts[] = {
    {.name = "--data",
     .arg = "DIR",
     .type = CLI_TEXT,
     .at = AT(data),
     .help = "the data set folder (IDX, CIFAR binary or an image folder;\n"
             "default $CLNET_DATA_DIR or " CLNET_DEFAULT_DATA_DIR ")"},
    {.name = "--data-npy",
     .arg = "X,Y[,TX,TY]",
     .type = CLI_CUSTOM,
     .at = AT(npy),
     .parse = cli_npy_files,
     .help = "or .npy images (uint8 or float32 in [0, 1]) and labels: the\n"
             "training pair, then the test pair"},
    {.name = "--format",
     .arg = "F",
     .type = CLI_CHOICE,
     .at = AT(format),
     .choices = (const char *const[]){"png", "jpg", NULL},
     .help = "png (default, lossless) or jpg"},
    {.name = "--quality",
     .arg = "Q",
     .type = CLI_INT,
     .at = AT(quality),
     .min = 1,
     .max = 100,
     .def = "90",
     .help = "JPEG quality, libjpeg's scale"},
    {.name = "--set",
     .arg = "S",
     .type = CLI_CHOICE,
     .at = AT(splits),
     .choices = (const char *const[]){"both", "train", "test", NULL},
     .help = "both (default), train or test"},
    {.name = "--count",
     .arg = "N",
     .type = CLI_INT,
     .at = AT(count),
     .min = 1,
     .max = 2147483647L,
     .help = "only the first N images of each set"},
    {.name = "--resize",
     .arg = "N|HxW",
     .type = CLI_TEXT,
     .at = AT(resize),
     .help = "resize the images (bilinear, as clnet train --resize)"},
    {.name = "--center-crop",
     .arg = "N|HxW",
     .type = CLI_TEXT,
     .at = AT(center_crop),
     .help = "then crop their middle"},
    {0},
};

static int check(void *v) {
    const export_options *o = v;
    if (!o->out) {
        fprintf(stderr, "clnet export: which folder? (clnet export OUT --data DIR)\n");
        return 2;
    }
    if (o->data && o->npy.count) {
        fprintf(stderr, "clnet export: --data and --data-npy name two data sets: give one\n");
        return 2;
    }
    return 0;
}

const cli_command cli_export_cmd = {
    .name = "export",
    .positional = "OUT",
    .positional_what = "output folder",
    .positional_at = AT(out),
    .size = sizeof(export_options),
    .check = check,
    .opts = export_opts,
    .footer = "Writes OUT/train/CLASS/INDEX.png and OUT/test/... (classes by name when\n"
              "the data has names, else by number), the layout clnet train --data OUT\n"
              "reads. stdout ends with\n"
              "  exported: train=<n> test=<n> folder=<OUT>\n",
};

/* One set (train 1, test 0) of the data into OUT/train or OUT/test: its image count, or -1
 * after a message. */
static long export_set(const export_options *o, const clnet_transforms *t, int train) {
    clnet_dataset *ds = NULL;
    const char *set = train ? "train" : "test";
    clnet_status st;
    if (o->npy.count) {
        int k = train ? 0 : 2;
        if (!train && o->npy.count < 4) return 0; /* one pair: the training set alone */
        st = clnet_dataset_load_npy(&ds, o->npy.paths[k], o->npy.paths[k + 1]);
    } else {
        st = clnet_dataset_load_first(&ds, o->data, set, o->count);
    }
    if (st == CLNET_OK && o->count && o->count < clnet_dataset_count(ds))
        st = clnet_dataset_truncate(ds, (int)o->count);
    char root[CLI_PATH_CAP + 16];
    snprintf(root, sizeof root, "%s/%s", o->out, set);
    if (st == CLNET_OK) {
        fprintf(stderr, "clnet: writing %d %s images to %s ...\n", clnet_dataset_count(ds), set,
                root);
        st = clnet_dataset_export(ds, root, o->format ? "jpg" : "png", (int)o->quality, t);
    }
    long n = st == CLNET_OK ? clnet_dataset_count(ds) : -1;
    if (st != CLNET_OK) fprintf(stderr, "clnet export: %s set: %s\n", set, clnet_last_error());
    clnet_dataset_free(ds);
    return n;
}

int cmd_export(int argc, char **argv) {
    export_options o = {0};
    int rc;
    if (!cli_parse(&cli_export_cmd, argc, argv, &o, &rc)) return rc;
    clnet_transforms t = {0};
    rc = cli_transforms(o.resize, o.center_crop, NULL, &t);
    if (rc) return rc;
    if (strlen(o.out) >= CLI_PATH_CAP) {
        fprintf(stderr, "clnet export: the folder's name is over %d bytes\n", CLI_PATH_CAP);
        return 2;
    }
    if (mkdir(o.out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "clnet export: %s: cannot make the folder: %s\n", o.out, strerror(errno));
        return 1;
    }
    long counts[2] = {0, 0}; /* test, train */
    for (int train = 1; train >= 0; train--) {
        if ((o.splits == 1 && !train) || (o.splits == 2 && train)) continue;
        counts[train] = export_set(&o, &t, train);
        if (counts[train] < 0) return 1;
    }
    printf("exported: train=%ld test=%ld folder=%s\n", counts[1], counts[0], o.out);
    return 0;
}
