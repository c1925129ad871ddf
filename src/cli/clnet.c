/* The clnet command-line program: main dispatches to the commands (cmd_devices here,
 * the others in their own files). It uses only the public API (clnet.h). */
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
            "  train MODEL [options]      train a model on an IDX data set (clnet train --help)\n"
            "  eval MODEL --weights FILE  test accuracy of a checkpoint (clnet eval --help)\n"
            "  predict MODEL --weights FILE --output OUT.npy\n"
            "                             a checkpoint's outputs for a set of inputs, as .npy\n"
            "                             (clnet predict --help)\n"
            "  bench MODEL [--devices SPEC] [--batch B] [--steps N]\n"
            "                             training speed of each device alone and together\n"
            "  tune MODEL [--batch B] [--devices SPEC]\n"
            "                             measure each kernel candidate, store the fastest\n"
            "  warm MODEL [--batch B] [--devices SPEC]\n"
            "                             build and cache every kernel MODEL uses: the next run\n"
            "                             starts warm\n"
            "  layers [KIND]              the layer kinds of model files and their options\n"
            "  version                    print the version, and whether MPI is built in\n"
            "  help                       print this text\n"
            "\n"
            "SPEC selects devices: all (default), gpu, cpu, a comma list of device numbers\n"
            "(0,2), or platform=NAME. --devices wins over $CLNET_DEVICES.\n");
}

static void format_bytes(uint64_t bytes, char *out, size_t cap) {
    if (bytes >= (1ull << 30))
        snprintf(out, cap, "%.1f GiB", (double)bytes / (1ull << 30));
    else
        snprintf(out, cap, "%.0f MiB", (double)bytes / (1ull << 20));
}

typedef struct {
    const char *devices;
} devices_options;

static const cli_opt devices_opts[] = {
    CLI_DEVICES(devices_options, "all (default), gpu, cpu, a comma list of device numbers\n"
                                 "(0,2), or platform=NAME; wins over $CLNET_DEVICES"),
    {0},
};

static const cli_command devices_cmd = {
    .name = "devices",
    .opts = devices_opts,
    .footer = "Lists the devices SPEC selects and checks that each runs clnet's kernels.\n",
};

int cmd_devices(int argc, char **argv) {
    devices_options o = {0};
    int rc = 0;
    if (!cli_parse(&devices_cmd, argc, argv, &o, &rc)) return rc;
    clnet_runtime *rt = NULL;
    if (clnet_runtime_create(&rt, o.devices) != CLNET_OK) {
        fprintf(stderr, "clnet: %s\n", clnet_last_error());
        return 1;
    }
    int failures = 0;
    char platform_seen[128] = "";
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device_info d;
        clnet_runtime_device_info(rt, i, &d);
        if (strcmp(platform_seen, d.platform_name) != 0 || i == 0) {
            snprintf(platform_seen, sizeof platform_seen, "%s", d.platform_name);
            printf("%splatform: %s (%s; %s)\n", i ? "\n" : "", d.platform_name, d.platform_vendor,
                   d.platform_version);
            printf("  %-3s %-5s %-36s %4s %9s %9s %6s %-7s %-4s %-4s %-13s %-10s %s\n", "#", "type",
                   "device", "CUs", "memory", "max buf", "max wg", "unified", "fp16", "fp64",
                   "OpenCL C", "driver", "check");
        }
        char mem[32], maxbuf[32];
        format_bytes(d.global_mem_bytes, mem, sizeof mem);
        format_bytes(d.max_alloc_bytes, maxbuf, sizeof maxbuf);
        printf("  %-3d %-5.5s %-36.36s %4u %9s %9s %6zu %-7s %-4s %-4s %-13.13s %-10.10s ", d.index,
               clnet_device_type_name(d.type), d.name, d.compute_units, mem, maxbuf,
               d.max_work_group_size, d.host_unified_memory ? "yes" : "no", d.fp16 ? "yes" : "no",
               d.fp64 ? "yes" : "no", d.opencl_c_version, d.driver_version);
        fflush(stdout);
        if (clnet_runtime_device_check(rt, i) == CLNET_OK) {
            printf("ok\n");
        } else {
            printf("failed: %s\n", clnet_last_error());
            failures++;
        }
    }
    int count = clnet_runtime_device_count(rt);
    printf("\n%d device%s selected, %d failed the check\n", count, count == 1 ? "" : "s", failures);
    clnet_runtime_free(rt);
    return failures ? 1 : 0;
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
    if (strcmp(cmd, "layers") == 0) return cmd_layers(argc - 2, argv + 2);
    if (strcmp(cmd, "warm") == 0) return alone(cmd) ? cmd_warm(argc - 2, argv + 2) : 2;
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
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
