/* Which algorithm runs each pass of a convolution: $CLNET_CONV's, else a
 * checkpoint's or the tuning database's, else the rules'. The algorithms
 * (conv.h's conv_algo, one file each):
 *   im2col   conv_im2col.c: the column matrix and the device's GEMMs;
 *   direct   conv_direct.c: one launch a pass, for groups of few channels;
 *   implicit conv_implicit.c: the tiled GEMM's micro-kernel over a padded grid;
 *   lanes    conv_lanes.c: the same micro-kernel with the samples along its
 *            vectors;
 *   winograd conv_winograd.c: F(2x2, 3x3) for 3x3 windows at stride 1
 *            (forward, input gradient; implicit for the rest).
 * Every one runs every convolution. The rules look at the layer's shape and
 * the device alone, never at the samples of a pass, so every split of a
 * batch runs the same algorithm. */
#include "conv.h"
#include "layer.h"
#include "tune.h"

#include <stdio.h>
#include <string.h>

/* The registry, in the order the rules ask (conv_algo.rule): the first
 * whose rule picks the node runs it; the last picks every node. Their
 * names are choose.c's, numbered there (CLNET_CONV_*). */
static const conv_algo *const conv_algos[] = {&conv_direct, &conv_lanes, &conv_winograd,
                                              &conv_implicit, &conv_im2col};
enum { CONV_ALGOS = sizeof conv_algos / sizeof *conv_algos };
_Static_assert(CONV_ALGOS == CLNET_CONV_BUILT_IN - 1, "an algorithm without a registry line");

/* Those registered at run time (conv_algo_register), by number: no rule
 * picks them; forcing, a checkpoint or the tuning database does. */
static const conv_algo *registered[CLNET_CONV_MOST];

const conv_algo *conv_algo_of(int algo) {
    if (algo >= CLNET_CONV_BUILT_IN && algo < CLNET_CONV_MOST) return registered[algo];
    const char *name = clnet_conv_algo_name(algo);
    for (int i = 0; i < CONV_ALGOS; i++)
        if (strcmp(conv_algos[i]->name, name) == 0) return conv_algos[i];
    return NULL;
}

clnet_status conv_algo_register(const conv_algo *a) {
    int id = CLNET_CONV_AUTO;
    clnet_status status = clnet_conv_algo_add(a->name, &id);
    if (status == CLNET_OK) registered[id] = a;
    return status;
}

/* The node's key in the tuning database: its kind, its shape in and out,
 * and its window ("conv2d 64x28x28>64x28x28 k3x3 s1x1 p1x1 d1x1 g1"); no
 * sample count: one choice serves every share of a batch. */
void conv_tune_key(const clnet_node *node, char *key, size_t cap) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    const clnet_window *w = &c->win;
    char in[48], out[48], k[48], st[48], pd[48], dl[48];
    clnet_shape_format(node->in[0], in, sizeof in);
    clnet_shape_format(node->out, out, sizeof out);
    clnet_dims_text(w->k + 3 - c->rank, c->rank, k, sizeof k);
    clnet_dims_text(w->s + 3 - c->rank, c->rank, st, sizeof st);
    clnet_dims_text(w->p + 3 - c->rank, c->rank, pd, sizeof pd);
    clnet_dims_text(w->d + 3 - c->rank, c->rank, dl, sizeof dl);
    snprintf(key, cap, "%s %s>%s k%s s%s p%s d%s g%d", node->kind->name, in, out, k, st, pd, dl,
             c->groups);
}

/* The rules' algorithm, the same for every pass: on the EPYC VM no mix beat
 * the better of im2col and implicit on ResNet-18's layers by more than the
 * noise. */
static int rule_of(const clnet_node *node, const clnet_device *d) {
    for (int i = 0; i < CONV_ALGOS; i++)
        if (conv_algos[i]->rule(node, d)) return clnet_conv_algo_id(conv_algos[i]->name);
    return CLNET_CONV_IM2COL;
}

/* The algorithm of each pass (CLNET_PASS_*), as the policy (choose.h)
 * decides pass by pass: $CLNET_CONV's, else the checkpoint's, else the
 * database's, else the rules'. */
clnet_conv_plan conv_plan_of(const clnet_node *node, const clnet_device *d) {
    clnet_conv_plan plan = clnet_conv_plan_all(CLNET_CONV_AUTO);
    char key[CLNET_TUNE_KEY_CAP] = "", forced[CLNET_CONV_PLAN_CAP] = "";
    if (d && clnet_chooser_has_entries(&d->choice)) conv_tune_key(node, key, sizeof key);
    if (d && clnet_conv_plan_named(&d->choice.conv_force))
        clnet_conv_plan_text(&d->choice.conv_force, forced, sizeof forced);
    for (clnet_choice_from from = CLNET_FROM_ENV; d && from < CLNET_FROM_RULE; from++) {
        const char *text = clnet_chooser_named(&d->choice, from, forced, key, 0);
        clnet_conv_plan named;
        if (!text || !clnet_conv_plan_parse(text, &named)) continue;
        for (int pass = 0; pass < CLNET_CONV_PASSES; pass++)
            if (plan.pass[pass] == CLNET_CONV_AUTO) plan.pass[pass] = named.pass[pass];
    }
    int rule = CLNET_CONV_AUTO;
    for (int pass = 0; pass < CLNET_CONV_PASSES; pass++) {
        if (plan.pass[pass] != CLNET_CONV_AUTO) continue;
        if (rule == CLNET_CONV_AUTO) rule = rule_of(node, d);
        plan.pass[pass] = rule;
    }
    return plan;
}

/* The node's tuning key, the algorithms a tuner times on it (in id order)
 * and the ones d runs now (clnet_kind.algorithms). */
int conv_algorithms(const clnet_node *node, const clnet_device *d, char *key, size_t cap,
                    int *algos, clnet_conv_plan *chosen) {
    int n = 0;
    conv_tune_key(node, key, cap);
    for (int a = CLNET_CONV_AUTO + 1; a < clnet_conv_algo_count(); a++) {
        const conv_algo *algo = conv_algo_of(a);
        if (algo && (!algo->tried || algo->tried(node, d))) algos[n++] = a;
    }
    *chosen = conv_plan_of(node, d);
    return n;
}
