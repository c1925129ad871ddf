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
    if (r->us >= 0)
        printf("  %-28s %12.1f us  %s\n", r->id, r->us, r->verdict);
    else
        printf("  %-28s %12s     %s\n", r->id, "-", r->verdict);
    fflush(stdout);
}

int cmd_tune(int argc, char **argv) {
    const char *model = NULL, *spec = NULL;
    long batch = 256;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (argv[i][0] != '-' && !model) {
            model = argv[i];
        } else if (cli_option(argc, argv, &i, "--devices", &v)) {
            if (!v) return 2;
            spec = v;
        } else if (cli_option(argc, argv, &i, "--batch", &v)) {
            if (!v || !cli_int("--batch", v, 1, 1 << 20, &batch)) return 2;
        } else {
            fprintf(stderr, "usage: clnet tune MODEL [--batch B] [--devices SPEC]\n");
            return 2;
        }
    }
    if (!model) {
        fprintf(stderr, "clnet tune: which model? e.g. clnet tune examples/models/lenet.cfg\n");
        return 2;
    }
    clnet_runtime *rt = NULL;
    clnet_net *net = NULL;
    int rc = 1;
    printer p = {{0}, 0};
    if (clnet_runtime_create(&rt, spec) != CLNET_OK) {
        fprintf(stderr, "clnet tune: devices: %s\n", clnet_last_error());
        goto done;
    }
    if (clnet_net_load(&net, model) != CLNET_OK || clnet_net_init(net, 1) != CLNET_OK ||
        clnet_net_bind(net, rt, (int)batch) != CLNET_OK) {
        fprintf(stderr, "clnet tune: %s: %s\n", model, clnet_last_error());
        goto done;
    }
    printf("tuning %s at batch %ld on %d device%s (times per call; the first call of each, "
           "which builds it, is not timed)\n",
           model, batch, clnet_net_device_count(net), clnet_net_device_count(net) == 1 ? "" : "s");
    fflush(stdout);
    if (clnet_net_tune(net, (int)batch, print_report, &p) != CLNET_OK) {
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
