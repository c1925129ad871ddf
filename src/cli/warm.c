/* `clnet warm MODEL`: fills the caches a cold start pays for, so that the
 * next process that trains MODEL at that batch starts in a fraction of a
 * second: it builds every program a training step and an evaluation of the
 * model build on the selected devices, launches each kernel once at the
 * work-group sizes training uses (a CPU driver compiles a work-group
 * function at a kernel's first launch, and PoCL keeps those in its own
 * cache), and stores the built binaries in clnet's cache even on drivers
 * with a cache of their own (CLNET_CACHE=all), where a plain run stores
 * none. The data are made up: the parameters it trains are thrown away. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    const char *model;
    long batch;
    const char *devices;
} warm_options;

static const cli_opt warm_opts[] = {
    CLI_BATCH(warm_options, "the batch to warm for"),
    CLI_DEVICES(warm_options, "which devices (see clnet devices): each is warmed"),
    {0},
};

const cli_command cli_warm_cmd = {
    .name = "warm",
    .size = sizeof(warm_options),
    CLI_MODEL(warm_options),
    .opts = warm_opts,
    .footer = "Builds and stores every kernel a training step and an evaluation of MODEL\n"
              "use at that batch on those devices, so that the next run starts warm.\n",
};

int cli_first_step(const char *command, const char *done, const char *model, long batch,
                   const char *devices) {
    clnet_runtime *rt = NULL;
    clnet_net *net = NULL;
    cli_batch b = {0};
    clnet_counters before, after;
    clnet_debug_counters(&before);
    double began = clnet_seconds();
    int rc = 1;
    clnet_status st = clnet_runtime_create(&rt, devices);
    if (st != CLNET_OK) {
        fprintf(stderr, "clnet %s: devices: %s\n", command, clnet_last_error());
        rc = cli_exit_code(st);
        goto done;
    }
    if (clnet_net_load(&net, model) != CLNET_OK || clnet_net_init(net, 1) != CLNET_OK ||
        clnet_net_bind(net, rt, (int)batch) != CLNET_OK) {
        fprintf(stderr, "clnet %s: %s: %s\n", command, model, clnet_last_error());
        goto done;
    }
    if (!cli_random_batch(net, batch, &b)) {
        fprintf(stderr, "clnet %s: out of memory for a batch of %ld\n", command, batch);
        goto done;
    }
    /* then the evaluation pass: the loss on labels, or a regression's outputs (into b.t) */
    if (cli_random_step(net, &b, (int)batch) != CLNET_OK ||
        (b.t ? clnet_net_predict(net, b.x, (int)batch, b.t)
             : clnet_net_evaluate_batch(net, b.x, b.y, (int)batch, NULL)) != CLNET_OK) {
        fprintf(stderr, "clnet %s: %s: %s\n", command, model, clnet_last_error());
        goto done;
    }
    clnet_debug_counters(&after);
    printf("%s %s at batch %ld on %d device%s in %.1f s: %llu programs built, %llu kernels "
           "first launched\n",
           done, model, batch, clnet_net_device_count(net),
           clnet_net_device_count(net) == 1 ? "" : "s", clnet_seconds() - began,
           (unsigned long long)(after.builds - before.builds),
           (unsigned long long)(after.first_launches - before.first_launches));
    rc = 0;
done:
    cli_batch_free(&b);
    clnet_net_free(net);
    clnet_runtime_free(rt);
    return rc;
}

int cmd_warm(int argc, char **argv) {
    warm_options o = {0};
    int rc = 0;
    if (!cli_parse(&cli_warm_cmd, argc, argv, &o, &rc)) return rc;
    if (!o.model) return cli_which_model("warm");
    const char *cache = getenv("CLNET_CACHE");
    if (!cache || !*cache) setenv("CLNET_CACHE", "all", 1); /* CLNET_CACHE=off stays off */
    return cli_first_step("warm", "warmed", o.model, o.batch, o.devices);
}
