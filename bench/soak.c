/* A soak run of training that keeps going (issue 27):
 *
 *   build/bench/soak [STEPS] [FAIL_STEP]     (defaults 3000 and 2000)
 *
 * LeNet on Fashion-MNIST (batch 128, SGD lr 0.05, Nesterov momentum 0.9, weight
 * decay 5e-4, images normalised by 0.286 and 0.353: docs/training.md's recipe) on every device of
 * the selection (two PoCL devices: POCL_DEVICES="basic basic"), twice: once
 * plainly, once with the second device failing at FAIL_STEP
 * (CLNET_FAULT=I:FAIL_STEP, dropped: CLNET_ON_FAILURE_CONTINUE). In both the
 * split changes every 500 steps (1:1, 1:3, 3:1, 2:1, 1:2, 1:1 in turn) and
 * every 100 steps the replicas are compared (clnet_net_check_replicas).
 * Prints the resident memory after step 100 and at the end of each run,
 * the largest growth, and both runs' test accuracy. Figures only: it
 * asserts nothing. (On PoCL, device buffers are host memory that the
 * kernels touch page by page: a device whose share first exceeds its
 * largest so far touches more of the arenas allocated at bind, and the
 * resident size grows by that much, once.) */
#include "clnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what) {
    fprintf(stderr, "soak: %s: %s\n", what, clnet_last_error());
    return 1;
}

/* Resident memory in MiB, from /proc/self/statm. */
static double rss_mib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

typedef struct {
    double accuracy, rss_100, rss_end, rss_most, seconds;
    int checks, dropped;
    long long dropped_step;
} soak_result;

static int run(clnet_runtime *rt, const clnet_dataset *train, const clnet_dataset *test, int steps,
               int faulty, soak_result *out) {
    static const double rows[][2] = {{1, 1}, {1, 3}, {3, 1}, {2, 1}, {1, 2}, {1, 1}};
    clnet_net *net = NULL;
    clnet_loader *loader = NULL;
    int rc = 1, devices = clnet_runtime_device_count(rt);
    memset(out, 0, sizeof *out);
    if (clnet_net_load(&net, "examples/models/lenet.cfg") != CLNET_OK) return fail("model");
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = 0.05f;
    c.momentum = 0.9f;
    c.nesterov = 1;
    c.weight_decay = 5e-4f;
    if (clnet_net_init(net, 1) != CLNET_OK || clnet_net_set_optimizer(net, &c) != CLNET_OK ||
        clnet_net_bind(net, rt, 128) != CLNET_OK ||
        clnet_net_set_on_device_failure(net, CLNET_ON_FAILURE_CONTINUE) != CLNET_OK) {
        rc = fail("binding");
        goto done;
    }
    clnet_loader_config lc = {.batch = 128, .seed = 1, .shuffle = 1, .mean = 0.286f, .std = 0.353f};
    if (clnet_loader_create(&loader, train, &lc) != CLNET_OK) {
        rc = fail("loader");
        goto done;
    }
    double t0 = clnet_seconds();
    for (int s = 0; s < steps; s++) {
        if (s % 500 == 0 && devices == 2 &&
            clnet_net_set_split(net, rows[(s / 500) % 6], 2) != CLNET_OK) {
            rc = fail("split");
            goto done;
        }
        clnet_batch batch;
        clnet_step_result r;
        if (clnet_net_train_loader_step(net, loader, &batch, &r) != CLNET_OK) {
            rc = fail("training step");
            goto done;
        }
        if ((s + 1) % 100 == 0) {
            if (clnet_net_check_replicas(net) != CLNET_OK) {
                rc = fail("replicas");
                goto done;
            }
            out->checks++;
        }
        double rss = rss_mib();
        if (s + 1 == 100) out->rss_100 = rss;
        if (rss > out->rss_most) out->rss_most = rss;
        if ((s + 1) % 500 == 0 || s + 1 == 100)
            fprintf(stderr, "%s: step %d, loss %.4f, %.1f MiB resident\n",
                    faulty ? "with a failure" : "plain", s + 1, r.loss, rss);
    }
    out->seconds = clnet_seconds() - t0;
    out->rss_end = rss_mib();
    clnet_step_result e;
    if (clnet_net_evaluate(net, test, 0.286f, 0.353f, &e) != CLNET_OK) {
        rc = fail("evaluation");
        goto done;
    }
    out->accuracy = (double)e.correct / e.n;
    for (int i = 0; i < devices; i++) {
        clnet_device_share d;
        if (clnet_net_device_share(net, i, &d) == CLNET_OK && d.dropped)
            out->dropped++, out->dropped_step = (long long)d.dropped_step;
    }
    rc = 0;
done:
    clnet_loader_free(loader);
    clnet_net_free(net);
    return rc;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 3000, at = argc > 2 ? atoi(argv[2]) : 2000;
    clnet_dataset *train = NULL, *test = NULL;
    clnet_runtime *rt = NULL;
    soak_result plain, faulty;
    if (clnet_dataset_load(&train, NULL, "train") != CLNET_OK ||
        clnet_dataset_load(&test, NULL, "test") != CLNET_OK)
        return fail("Fashion-MNIST");
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) return fail("devices");
    if (clnet_runtime_device_count(rt) != 2) {
        fprintf(stderr, "soak: wants two devices (POCL_DEVICES=\"basic basic\")\n");
        return 1;
    }
    clnet_device_info info;
    clnet_runtime_device_info(rt, 1, &info);
    if (run(rt, train, test, steps, 0, &plain)) return 1;
    char fault[32];
    snprintf(fault, sizeof fault, "%d:%d", info.index, at);
    setenv("CLNET_FAULT", fault, 1); /* read when the net is bound */
    if (run(rt, train, test, steps, 1, &faulty)) return 1;
    const soak_result *r[2] = {&plain, &faulty};
    for (int k = 0; k < 2; k++) {
        char dropped[64] = "no device dropped";
        if (r[k]->dropped)
            snprintf(dropped, sizeof dropped, "%d dropped (in step %lld)", r[k]->dropped,
                     r[k]->dropped_step);
        printf("%s: %d steps in %.0f s, %d replica checks passed, %s, test accuracy %.4f; "
               "resident memory %.1f MiB after step 100, %.1f MiB at the end, %.1f MiB at most "
               "(growth %+.2f%%)\n",
               k ? "device 1 failing" : "plain", steps, r[k]->seconds, r[k]->checks, dropped,
               r[k]->accuracy, r[k]->rss_100, r[k]->rss_end, r[k]->rss_most,
               100 * (r[k]->rss_most - r[k]->rss_100) / r[k]->rss_100);
    }
    printf("accuracy difference %.4f\n", faulty.accuracy - plain.accuracy);
    clnet_runtime_free(rt);
    clnet_dataset_free(train);
    clnet_dataset_free(test);
    return 0;
}
