/* The clnet command-line program: main dispatches to the commands, each in its
 * own file. It uses only the public API (clnet.h). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: clnet <command> [options]\n"
            "\n"
            "commands:\n"
            "  devices [--devices SPEC]   list OpenCL devices and check that each runs clnet's "
            "kernels\n"
            "  train MODEL [options]      train a model on IDX, CIFAR, image-folder or .npy data\n"
            "                             (clnet train --help)\n"
            "  eval MODEL --weights FILE  test accuracy of a checkpoint (clnet eval --help)\n"
            "  predict MODEL --weights FILE --output OUT.npy\n"
            "                             a checkpoint's outputs for a set of inputs, as .npy;\n"
            "                             with --input IMAGE|DIR, each image's classes\n"
            "                             (clnet predict --help)\n"
            "  bench MODEL [--devices SPEC] [--batch B] [--steps N]\n"
            "                             training speed of each device alone and together\n"
            "  tune MODEL [--batch B] [--devices SPEC]\n"
            "                             measure each kernel candidate, store the fastest\n"
            "  warm MODEL [--batch B] [--devices SPEC]\n"
            "                             build and cache every kernel MODEL uses: the next run\n"
            "                             starts warm\n"
            "  export OUT [--data DIR]    write a data set as an image folder (PNG or JPEG)\n"
            "  summary MODEL [--input HxW]\n"
            "                             every layer's output, parameters and multiply-adds\n"
            "  layers [KIND]              the layer kinds of model files and their options\n"
            "  version                    print the version, and whether MPI is built in\n"
            "  help                       print this text\n"
            "\n"
            "SPEC selects devices: all (default), gpu, cpu, a comma list of device numbers\n"
            "(0,2), or platform=NAME. --devices wins over $CLNET_DEVICES.\n");
}

/* Commands that work in one process refuse a job of several ranks, which
 * would run them once per rank, each alone, writing the same files. */
static int alone(const char *cmd) {
    const char *size = getenv("OMPI_COMM_WORLD_SIZE"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!size) size = getenv("PMI_SIZE"), rank = getenv("PMI_RANK");
    if (!size || atoi(size) <= 1) return 1;
    if (!rank || atoi(rank) == 0)
        fprintf(stderr,
                "clnet: %s runs in one process, but mpirun started %s of them: start it without "
                "mpirun (on each host where it is wanted); train and eval are the commands that "
                "run across ranks\n",
                cmd, size);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "devices") == 0) return cmd_devices(argc - 2, argv + 2);
    if (strcmp(cmd, "train") == 0) return cmd_train(argc - 2, argv + 2);
    if (strcmp(cmd, "eval") == 0) return cmd_eval(argc - 2, argv + 2);
    if (strcmp(cmd, "predict") == 0) return alone(cmd) ? cmd_predict(argc - 2, argv + 2) : 2;
    if (strcmp(cmd, "bench") == 0) return alone(cmd) ? cmd_bench(argc - 2, argv + 2) : 2;
    if (strcmp(cmd, "tune") == 0) return alone(cmd) ? cmd_tune(argc - 2, argv + 2) : 2;
    if (strcmp(cmd, "summary") == 0) return cmd_summary(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0) return alone(cmd) ? cmd_export(argc - 2, argv + 2) : 2;
    if (strcmp(cmd, "layers") == 0) return cmd_layers(argc - 2, argv + 2);
    if (strcmp(cmd, "warm") == 0) return alone(cmd) ? cmd_warm(argc - 2, argv + 2) : 2;
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            printf("usage: clnet version\nprints clnet's version, and whether MPI is built in\n");
            return 0;
        }
        if (argc > 2) {
            fprintf(stderr, "clnet version: takes no options or arguments ('%s')\n", argv[2]);
            return 2;
        }
        printf("clnet %s (MPI: %s)\n", clnet_version(),
               clnet_mpi_available() ? "yes, for mpirun jobs" : "no, built without it");
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "clnet: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
