/* `clnet tune MODEL [--batch B] [--devices SPEC]`: measures every candidate
 * of every tunable operation the model runs at that batch on those devices,
 * prints each measurement per layer and device, and stores the winners in
 * the tuning database (see clnet_net_tune). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    char last[200]; /* the shape printed last, to print each once */
    int shapes;
} printer;

static void print_report(const clnet_tune_report *r, void *user) {
    printer *p = user;
    char head[200];
    snprintf(head, sizeof head, "%d|%s|%d", r->device, r->key, r->bucket);
    if (strcmp(head, p->last) != 0) {
        snprintf(p->last, sizeof p->last, "%s", head);
        p->shapes++;
        printf("device %d, %s: %s", r->device, r->layer[0] ? r->layer : "(no layer)", r->key);
        if (r->bucket) printf(", n~%d", r->bucket);
        printf("\n");
    }
    const char *gap = r->verdict[0] ? "  " : ""; /* no trailing blanks without a verdict */
    if (r->us >= 0)
        printf("  %-28s %12.1f us%s%s\n", r->id, r->us, gap, r->verdict);
    else
        printf("  %-28s %12s   %s%s\n", r->id, "-", gap, r->verdict);
    fflush(stdout);
}

typedef struct {
    const char *model, *devices;
    long batch;
} tune_options;

static const cli_opt tune_opts[] = {
    CLI_BATCH(tune_options, "the batch the kernels are tuned for"),
    CLI_DEVICES(tune_options, "which devices (see clnet devices): each is tuned"),
    {0},
};

const cli_command cli_tune_cmd = {
    .name = "tune",
    .size = sizeof(tune_options),
    CLI_MODEL(tune_options),
    .opts = tune_opts,
    .footer = "Measures every candidate of every tunable operation MODEL runs at that batch\n"
              "on those devices and stores the fastest in the tuning database.\n",
};

int cmd_tune(int argc, char **argv) {
    tune_options o = {0};
    int rc = 0;
    if (!cli_parse(&cli_tune_cmd, argc, argv, &o, &rc)) return rc;
    if (!o.model) return cli_which_model("tune");
    clnet_runtime *rt = NULL;
    clnet_net *net = NULL;
    rc = 1;
    printer p = {{0}, 0};
    clnet_status st = clnet_runtime_create(&rt, o.devices);
    if (st != CLNET_OK) {
        fprintf(stderr, "clnet tune: devices: %s\n", clnet_last_error());
        rc = cli_exit_code(st);
        goto done;
    }
    if (clnet_net_load(&net, o.model) != CLNET_OK || clnet_net_init(net, 1) != CLNET_OK ||
        clnet_net_bind(net, rt, (int)o.batch) != CLNET_OK) {
        fprintf(stderr, "clnet tune: %s: %s\n", o.model, clnet_last_error());
        goto done;
    }
    printf("tuning %s at batch %ld on %d device%s (times per call; the first call of each, "
           "which builds it, is not timed)\n",
           o.model, o.batch, clnet_net_device_count(net),
           clnet_net_device_count(net) == 1 ? "" : "s");
    fflush(stdout);
    if (clnet_net_tune(net, (int)o.batch, print_report, &p) != CLNET_OK) {
        fprintf(stderr, "clnet tune: %s\n", clnet_last_error());
        goto done;
    }
    printf("tuned %d shape%s; the choices are stored in the tuning database\n", p.shapes,
           p.shapes == 1 ? "" : "s");
    rc = 0;
done:
    clnet_net_free(net);
    clnet_runtime_free(rt);
    return rc;
}
