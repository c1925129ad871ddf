/* clnet devices: the devices a SPEC selects, each checked by running clnet's
 * kernels on it. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

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

const cli_command cli_devices_cmd = {
    .name = "devices",
    .size = sizeof(devices_options),
    .opts = devices_opts,
    .footer = "Lists the devices SPEC selects and checks that each runs clnet's kernels.\n",
};

int cmd_devices(int argc, char **argv) {
    devices_options o = {0};
    int rc = 0;
    if (!cli_parse(&cli_devices_cmd, argc, argv, &o, &rc)) return rc;
    clnet_runtime *rt = NULL;
    clnet_status st = clnet_runtime_create(&rt, o.devices);
    if (st != CLNET_OK) {
        fprintf(stderr, "clnet: %s\n", clnet_last_error());
        return cli_exit_code(st);
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
