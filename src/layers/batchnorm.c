/* Batch normalization, PyTorch's BatchNorm1d/2d/3d (cl/batchnorm.cl):
 * y = (x - mean) / sqrt(var + eps) * weight + bias per channel, over
 * x (n, C, spatial...). In training, mean and the biased var are the
 * batch's; the running mean and the running (unbiased) variance move by
 * `momentum` towards the batch's once per step; num_batches_tracked counts
 * the steps. In evaluation the running statistics normalize.
 *
 * Each replica computes per channel its count, mean and centred sum of
 * squares M2 (two passes over its share, with compensated sums:
 * cl/batchnorm.cl), or, after a convolution that wrote the statistics of
 * each block of its output as it stored it (clnet_pass.stats), merges
 * those. Alone in its step (one device, no MPI, or outside a
 * step), a kernel makes them what normalizes, and the host never waits.
 * Across devices (the collective in the pass's context), the replicas'
 * triples are merged on the host in double with Chan's formula, in rank
 * order, so that every replica holds the same merged statistics, and the
 * floats that normalize are those of one device. With sync=on (the
 * default) they normalize: a step on N devices is a step on one device,
 * whatever the split. With sync=off each replica normalizes with its own
 * share's statistics; the running statistics still come from the merged
 * ones. Backward sums dy and dy * xhat per channel across the replicas the
 * same way (sync=on).
 *
 * Across devices a pass given clnet_pass.later stops once what it sends is
 * on its way to the host, and finish does the rest, so that the device runs
 * other layers' work meanwhile (replica.c); a backward pass with nothing
 * to send (sync=off) leaves all of itself to finish, since it was started
 * ahead of its place.
 *
 * Outside a step (calibration) there is no collective: a replica uses its
 * own statistics. A step's share is never split into micro-batches
 * (batch_stats), so each replica normalizes its whole share at once.
 *
 * A relu that alone reads the batch norm runs in its kernels (fuse_relu):
 * forward writes max(y, 0), and backward finds y again from x to pass dy
 * where y > 0, so nothing more is kept. */
#include "elementwise.h"
#include "error.h"
#include "layer.h"
#include "memory.h"
#include "program.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    float eps;
    float momentum;
    int sync; /* 1: statistics over every device's share */
    /* set by fusion (fusion.c) through the kind's hooks, no option: */
    int relu;   /* the relu after it runs in its kernels (fuse_relu) */
    int by_add; /* the add after it normalizes it in training (leave_norm) */
} bn_config;

static const clnet_option options[] = {
    {.name = "eps",
     .type = CLNET_OPT_FLOAT,
     .at = offsetof(bn_config, eps),
     .max = INFINITY,
     .above_min = 1,
     .range = "a number > 0",
     .value = "1e-5",
     .help = "added to the variance before its square root"},
    {.name = "momentum",
     .type = CLNET_OPT_FLOAT,
     .at = offsetof(bn_config, momentum),
     .max = 1,
     .range = "0 to 1",
     .value = "0.1",
     .help = "how far the running statistics move towards a step's, once per step"},
    {.name = "sync",
     .type = CLNET_OPT_CHOICE,
     .at = offsetof(bn_config, sync),
     .choices = clnet_on_off,
     .value = "on",
     .help = "normalize with the statistics of every device's share (off: each its own)"},
    {0},
};

static clnet_status setup(clnet_node *node) {
    clnet_shape in = node->in[0];
    int64_t C = in.c;
    node->out = in;
    clnet_node_param(node, "weight", 1, &C, (clnet_init){.kind = CLNET_INIT_CONSTANT, .value = 1},
                     (int)C, (int)C);
    clnet_node_param(node, "bias", 1, &C, (clnet_init){.kind = CLNET_INIT_ZEROS}, (int)C, (int)C);
    clnet_node_buffer(node, "running_mean", CLNET_DTYPE_F32, 1, &C,
                      (clnet_init){.kind = CLNET_INIT_ZEROS});
    clnet_node_buffer(node, "running_var", CLNET_DTYPE_F32, 1, &C,
                      (clnet_init){.kind = CLNET_INIT_CONSTANT, .value = 1});
    clnet_node_buffer(node, "num_batches_tracked", CLNET_DTYPE_I64, 0, NULL, (clnet_init){0});
    return CLNET_OK;
}

/* keep: what normalized, the mean as a pair and 1/std (backward reads
 * them); left to an add (by_add), then the sums its backward computes
 * (4C, as the sums kernel writes them to work: see sums_at) */
#define KEPT_SUMS(C) (3 * (C))
static size_t keep_floats(const clnet_node *node, const clnet_device *d, int n) {
    (void)d, (void)n;
    return (CLNET_CONFIG(node, bn_config)->by_add ? 7 : 3) * (size_t)node->in[0].c;
}

/* work: [0, 5C) what the statistics kernels write (backward: every device's
 * sums, as the host sends them back), [5C, 7C) the merged mean and variance
 * for the running statistics */
#define SENT(C) (5 * (C))
static size_t work_floats(const clnet_node *node, const clnet_device *d, int n) {
    (void)d, (void)n;
    return 7 * (size_t)node->in[0].c;
}

/* The kernels' relu argument: 1 with the relu after it taken in. */
static uint32_t relu_of(const clnet_node *node) {
    return CLNET_CONFIG(node, bn_config)->relu != 0;
}

/* Whether this pass's replica is alone in its step: then nothing is merged
 * and the host need not see the statistics. */
static int alone(const clnet_ctx *ctx) {
    return !ctx->coll || ctx->coll->size == 1;
}

/* floats (5C, rounded up to an even count so that the doubles after them
 * are aligned), this replica's doubles (1 + 2C), every replica's
 * (ranks * (1 + 2C)) */
#define HOST_FLOATS(C) ((5 * (C) + 1) / 2 * 2)
static size_t host_bytes(const clnet_node *node, int ranks) {
    size_t C = (size_t)node->in[0].c, triple = 1 + 2 * C;
    return HOST_FLOATS(C) * sizeof(float) + (1 + (size_t)ranks) * triple * sizeof(double);
}

typedef struct {
    size_t C, S, n;
    float *f;                 /* (5C): what the kernels wrote, what goes back */
    double *mine, *all;       /* (1 + 2C), (ranks * (1 + 2C)) */
    size_t weight, mean, var; /* offsets: weight (bias after it), running statistics */
} bn_view;

/* The elementwise kernels' work-items along a row: one a slot of 8
 * positions (cl/batchnorm.cl's BN_V). */
static size_t slots(const bn_view *v) {
    return (v->S + 7) / 8;
}

static clnet_status view(const clnet_node *node, const clnet_pass *p, bn_view *v) {
    if (!p->host || node->params[1].offset != node->params[0].offset + (size_t)node->in[0].c)
        return clnet_fail(CLNET_ERR_INTERNAL,
                          "layer '%s': no host scratch, or weight and bias apart", node->name);
    v->C = (size_t)node->in[0].c;
    v->S = clnet_shape_spatial(node->in[0]);
    v->n = (size_t)p->n;
    v->f = p->host;
    v->mine = (double *)(void *)((char *)p->host + HOST_FLOATS(v->C) * sizeof(float));
    v->all = v->mine + 1 + 2 * v->C;
    v->weight = node->params[0].offset;
    v->mean = node->buffers[0].offset;
    v->var = node->buffers[1].offset;
    return CLNET_OK;
}

/* Value k of the 2C that the kernels write as pairs of floats (bn_store_pairs
 * in cl/batchnorm.cl: value k < C has its hi at f[k] and its lo at f[C + k],
 * value C + k at f[2C + k] and f[3C + k]), and the same back. */
static double pair_get(const float *f, size_t C, size_t k) {
    size_t hi = k < C ? k : C + k;
    return (double)f[hi] + f[hi + C];
}
static void pair_set(float *f, size_t C, size_t k, double value) {
    size_t hi = k < C ? k : C + k;
    f[hi] = (float)value;
    f[hi + C] = (float)(value - f[hi]);
}

/* Merges rank r's (count, mean[C], M2[C]) into acc, Chan's formula. */
static void chan_merge(double *acc, const double *r, size_t C) {
    double na = acc[0], nb = r[0], n = na + nb;
    if (nb == 0) return;
    for (size_t c = 0; c < C; c++) {
        double delta = r[1 + c] - acc[1 + c];
        acc[1 + c] += delta * nb / n;
        acc[1 + C + c] += r[1 + C + c] + delta * delta * na * nb / n;
    }
    acc[0] = n;
}

/* A statistics kernel, one work-group per channel; its last two arguments
 * are whether its work-items walk the channel in blocks (CPUs: see
 * cl/batchnorm.cl) and the work-group's __local scratch (a pair of floats
 * per work-item). */
static clnet_status run_stats(const clnet_pass *p, int slot, const bn_view *v, const char *name,
                              clnet_arg *args, int nargs) {
    size_t local = 1;
    clnet_status s =
        clnet_reduction_local(p->d, clnet_pass_kept(p, slot), "batchnorm", "", name, &local);
    if (s != CLNET_OK) return s;
    args[nargs - 2] = U32(p->d->info.type == CLNET_DEVICE_CPU);
    args[nargs - 1] = LOCAL(local * 2 * sizeof(float));
    return clnet_pass_run(p, slot, KERNEL("batchnorm", "", name), 1, (size_t[]){v->C * local},
                          (size_t[]){local}, args, nargs);
}

/* What a bn_backward_sums pass reads and writes besides the pass's own
 * buffers: x (at x in act) as norm normalizes it (at noff; relu: the batch
 * norm's own relu, taken in), dy (at dy in dact) masked where the value at
 * mask in act is not positive (masked), the sums to sums at soff, and with
 * pass (1: set, 2: add) the masked dy on to out in dact. */
typedef struct {
    size_t x, dy, mask, out, noff, soff;
    cl_mem norm, sums;
    uint32_t relu, masked, pass;
} bn_sums_job;

/* This share's sums of g and g * xhat (also the weight and bias gradients,
 * to grads at weight). */
static clnet_status backward_sums(const clnet_pass *p, int slot, const bn_view *v, size_t weight,
                                  const bn_sums_job *j) {
    clnet_arg args[] = {U32(v->n),    U32(v->C),    U32(v->S),     MEM(p->act),  U32(j->x),
                        MEM(p->dact), U32(j->dy),   MEM(j->norm),  U32(j->noff), MEM(p->params),
                        U32(weight),  U32(j->relu), MEM(p->act),   U32(j->mask), U32(j->masked),
                        MEM(j->sums), U32(j->soff), MEM(p->grads), U32(weight),  U32(p->beta != 0),
                        MEM(p->dact), U32(j->out),  U32(j->pass),  U32(0),       LOCAL(0)};
    return run_stats(p, slot, v, "bn_backward_sums", args, (int)(sizeof args / sizeof args[0]));
}

/* This share's statistics to work (bn_stats's D, Q and m): merged from the
 * records the convolution before wrote as it made x (p->stats), or from x. */
static clnet_status statistics(const clnet_pass *p, const bn_view *v) {
    const clnet_stats_link *st = p->stats;
    if (st && st->records) {
        clnet_arg args[] = {U32(v->C),    U32(st->records), F32((float)(v->n * v->S)),
                            MEM(st->mem), U32(st->off),     MEM(p->work),
                            U32(0),       U32(0),           LOCAL(0)};
        return run_stats(p, 12, v, "bn_merge", args, (int)(sizeof args / sizeof args[0]));
    }
    clnet_arg args[] = {U32(v->n),    U32(v->C), U32(v->S), MEM(p->act), U32(p->x[0]),
                        MEM(p->work), U32(0),    U32(0),    LOCAL(0)};
    return run_stats(p, 10, v, "bn_stats", args, (int)(sizeof args / sizeof args[0]));
}

/* A calibration probe is timed and thrown away: a device probed alone with
 * one sample may hold one value per channel, which a step never normalizes
 * with (the step's batch covers every device). */
static clnet_status enough(const clnet_ctx *ctx, double count) {
    if (count >= 2 || ctx->probe) return CLNET_OK;
    return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                      "batch norm in training needs more than one value per channel (a batch of "
                      "%.0f)",
                      count);
}

/* What goes to the other devices, the first `floats` of work, to the host
 * at v->f: a read the pass waits for, or with p->later one on its way while
 * the device runs other work (replica.c), which exchanged() waits for. The
 * merged values go back from v->f by writes the host does not wait for
 * either: the host changes v->f again only after a later read of the same
 * queue (the next batch norm's send) has completed, so after them. */
static clnet_status send(const clnet_pass *p, const bn_view *v, cl_mem mem, size_t off,
                         size_t floats) {
    if (!p->later) return clnet_buffer_read(p->d, mem, off, floats, v->f);
    p->later->pending = 1;
    return clnet_buffer_read_start(p->d, mem, off, floats, v->f, &p->later->event);
}
static clnet_status exchanged(const clnet_pass *p) {
    return p->later ? clnet_event_wait(p->d, &p->later->event) : CLNET_OK;
}

/* This share's statistics (on the host: send), merged with every
 * replica's there: what normalizes to keep, the step's mean and unbiased
 * variance to work at SENT(C). */
static clnet_status merge_stats(const clnet_node *node, const clnet_pass *p, const bn_view *v) {
    clnet_status status = CLNET_OK;
    const bn_config *cfg = CLNET_CONFIG(node, bn_config);
    const clnet_ctx *ctx = p->ctx;
    size_t C = v->C;
    TRY(exchanged(p));
    double *mine = v->mine, *merged = v->all, count = (double)(v->n * v->S);
    mine[0] = count;
    for (size_t c = 0; c < C; c++) { /* mean m + D / count, M2 = Q - D^2 / count */
        double d = pair_get(v->f, C, c), q = pair_get(v->f, C, C + c);
        double m2 = q - d * d / count;
        mine[1 + c] = v->f[4 * C + c] + d / count;
        mine[1 + C + c] = m2 > 0 ? m2 : 0;
    }
    size_t triple = 1 + 2 * C; /* every replica's, merged in rank order */
    TRY(ctx->coll->gather(ctx->coll, mine, triple * sizeof(double), v->all));
    for (int r = 1; r < ctx->coll->size; r++) chan_merge(merged, v->all + r * triple, C);
    TRY(enough(ctx, merged[0]));
    const double *norm = cfg->sync ? merged : mine;
    for (size_t c = 0; c < C; c++) {
        float hi = (float)norm[1 + c];
        v->f[c] = hi;
        v->f[C + c] = (float)(norm[1 + c] - hi);
        v->f[2 * C + c] = (float)(1.0 / sqrt(norm[1 + C + c] / norm[0] + cfg->eps));
        v->f[3 * C + c] = (float)merged[1 + c];
        v->f[4 * C + c] = (float)(merged[1 + C + c] / (merged[0] > 1 ? merged[0] - 1 : 1));
    }
    TRY(clnet_buffer_write_queued(p->d, p->keep, p->keep_off, 3 * C, v->f)); /* see exchanged */
    TRY(clnet_buffer_write_queued(p->d, p->work, SENT(C), 2 * C, v->f + 3 * C));
    TRY(clnet_pass_run(p, 3, KERNEL("batchnorm", "", "bn_running"), 1, (size_t[]){C}, NULL,
                       ARGS(U32(C), MEM(p->buffers), U32(v->mean), U32(v->var), MEM(p->work),
                            U32(SENT(C)), F32(cfg->momentum))));
cleanup:
    return status;
}

/* y from x with what normalizes (kept), unless the add after it does it
 * (p->norm). */
static clnet_status normalize(const clnet_node *node, const clnet_pass *p, const bn_view *v) {
    if (p->norm) return CLNET_OK;
    return clnet_pass_run(
        p, 2, KERNEL("batchnorm", "", "bn_forward"), 2, (size_t[]){slots(v), v->n * v->C}, NULL,
        ARGS(U32(v->n), U32(v->C), U32(v->S), MEM(p->act), U32(p->x[0]), MEM(p->act), U32(p->y),
             MEM(p->keep), U32(p->keep_off), MEM(p->params), U32(v->weight), U32(relu_of(node))));
}

/* A training forward across devices once the statistics are sent: merged
 * with the other devices', then y. */
static clnet_status forward_rest(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    bn_view v;
    TRY(view(node, p, &v));
    TRY(merge_stats(node, p, &v));
    TRY(normalize(node, p, &v));
cleanup:
    return status;
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    const bn_config *cfg = CLNET_CONFIG(node, bn_config);
    const clnet_ctx *ctx = p->ctx;
    bn_view v;
    TRY(view(node, p, &v));
    size_t C = v.C, grid[2] = {slots(&v), v.n * C};
    if (!ctx->train)
        return clnet_pass_run(p, 1, KERNEL("batchnorm", "", "bn_forward_eval"), 2, grid, NULL,
                              ARGS(U32(v.n), U32(C), U32(v.S), MEM(p->act), U32(p->x[0]),
                                   MEM(p->act), U32(p->y), MEM(p->buffers), U32(v.mean), U32(v.var),
                                   MEM(p->params), U32(v.weight), F32(cfg->eps),
                                   U32(relu_of(node))));

    TRY(statistics(p, &v));
    if (alone(ctx)) {
        TRY(enough(ctx, (double)(v.n * v.S)));
        TRY(clnet_pass_run(p, 5, KERNEL("batchnorm", "", "bn_finish"), 1, (size_t[]){C}, NULL,
                           ARGS(U32(C), F32((float)(v.n * v.S)), MEM(p->work), U32(0), MEM(p->keep),
                                U32(p->keep_off), F32(cfg->eps), MEM(p->buffers), U32(v.mean),
                                U32(v.var), F32(cfg->momentum))));
        return normalize(node, p, &v);
    }
    TRY(send(p, &v, p->work, 0, 5 * C));
    if (!p->later) TRY(forward_rest(node, p)); /* else finish: forward_rest */
cleanup:
    return status;
}

/* The output gradient: its own, or the add's after it (p->norm), passed
 * where the add's y (at mask) is > 0 when the add took in the relu (masked). */
typedef struct {
    size_t dy, mask;
    uint32_t masked;
} bn_grad_in;

static bn_grad_in grad_in(const clnet_pass *p) {
    return p->norm ? (bn_grad_in){p->norm->dy, p->norm->y, p->norm->relu}
                   : (bn_grad_in){p->dy, 0, 0};
}

/* Where this share's sums of g and g * xhat are, as pairs (4C): in work,
 * or in keep where the add that normalizes the batch norm computed them
 * (p->norm->sums). */
typedef struct {
    cl_mem mem;
    size_t off;
} bn_sums_at;

static bn_sums_at sums_at(const clnet_pass *p, size_t C) {
    if (p->norm && p->norm->sums) return (bn_sums_at){p->keep, p->keep_off + KEPT_SUMS(C)};
    return (bn_sums_at){p->work, 0};
}

/* The end of a backward pass: the add's sums are used. */
static clnet_status backward_done(const clnet_pass *p) {
    if (p->norm) p->norm->sums = 0;
    return CLNET_OK;
}

/* dx, from this share's sums of g and g * xhat (sums_at) or, with sync=on
 * across devices, the whole batch's (this share's sent: send). */
static clnet_status backward_rest(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    const bn_config *cfg = CLNET_CONFIG(node, bn_config);
    bn_view v;
    TRY(view(node, p, &v));
    size_t C = v.C;
    bn_grad_in g = grad_in(p);
    bn_sums_at at = sums_at(p, C);
    double *sums = v.mine;
    sums[0] = (double)(v.n * v.S);
    if (cfg->sync && !alone(p->ctx)) {
        TRY(exchanged(p));
        for (size_t k = 0; k < 2 * C; k++) sums[1 + k] = pair_get(v.f, C, k);
        TRY(p->ctx->coll->sum(p->ctx->coll, sums, 1 + 2 * C));
        for (size_t k = 0; k < 2 * C; k++) pair_set(v.f, C, k, sums[1 + k]);
        TRY(clnet_buffer_write_queued(p->d, at.mem, at.off, 4 * C, v.f)); /* see exchanged */
    }
    TRY(clnet_pass_run(
        p, 4, KERNEL("batchnorm", "", "bn_backward_dx"), 2, (size_t[]){slots(&v), v.n * C}, NULL,
        ARGS(U32(v.n), U32(C), U32(v.S), MEM(p->act), U32(p->x[0]), MEM(p->dact), U32(g.dy),
             MEM(p->dact), U32(p->dx[0]), MEM(p->keep), U32(p->keep_off), MEM(at.mem), U32(at.off),
             F32((float)sums[0]), MEM(p->params), U32(v.weight), U32(relu_of(node)), MEM(p->act),
             U32(g.mask), U32(g.masked), U32(clnet_dx_add(p, 0)))));
    TRY(backward_done(p));
cleanup:
    return status;
}

static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    const bn_config *cfg = CLNET_CONFIG(node, bn_config);
    int exchanges = cfg->sync && !alone(p->ctx) && p->need_dx[0];
    if (p->later && !exchanges) { /* nothing to send: all of it where it stands */
        p->later->pending = 1;
        return CLNET_OK;
    }
    bn_view v;
    TRY(view(node, p, &v));
    size_t C = v.C;
    bn_grad_in g = grad_in(p);
    bn_sums_job sums = {.x = p->x[0],
                        .dy = g.dy,
                        .mask = g.mask,
                        .noff = p->keep_off,
                        .norm = p->keep,
                        .sums = p->work,
                        .relu = relu_of(node),
                        .masked = g.masked};
    if (!(p->norm && p->norm->sums)) /* else the add's backward made them */
        TRY(backward_sums(p, 11, &v, v.weight, &sums));
    if (!p->need_dx[0]) return backward_done(p);
    if (exchanges) {
        bn_sums_at at = sums_at(p, C);
        TRY(send(p, &v, at.mem, at.off, 4 * C));
        if (p->later) return CLNET_OK; /* finish: backward_rest */
    }
    TRY(backward_rest(node, p));
cleanup:
    return status;
}

/* What forward or backward left for later (clnet_pass.later): the rest
 * once the exchange is on its way, or a whole backward pass that had
 * nothing to send. */
static clnet_status finish(const clnet_node *node, const clnet_pass *p) {
    if (!p->backward) return forward_rest(node, p);
    if (p->later->event) return backward_rest(node, p);
    clnet_pass now = *p;
    now.later = NULL;
    return backward(node, &now);
}

clnet_status clnet_batchnorm_add(const clnet_pass *p, clnet_shape shape, size_t a, int relu) {
    const clnet_norm_link *link = p->norm;
    bn_view v = {.C = (size_t)shape.c, .S = clnet_shape_spatial(shape), .n = (size_t)p->n};
    return clnet_pass_run(p, 4, KERNEL("batchnorm", "", "bn_add_forward"), 2,
                          (size_t[]){slots(&v), v.n * v.C}, NULL,
                          ARGS(U32(v.n), U32(v.C), U32(v.S), MEM(p->act), U32(link->x), MEM(p->act),
                               U32(a), MEM(p->act), U32(p->y), MEM(link->norm), U32(0),
                               MEM(p->params), U32(link->weight), U32(relu != 0)));
}

clnet_status clnet_batchnorm_add_backward(const clnet_pass *p, clnet_shape shape, int k, int relu) {
    clnet_norm_link *link = p->norm;
    bn_view v = {.C = (size_t)shape.c, .S = clnet_shape_spatial(shape), .n = (size_t)p->n};
    bn_sums_job sums = {.x = link->x,
                        .dy = p->dy,
                        .mask = p->y,
                        .out = k < 0 ? 0 : p->dx[k],
                        .soff = KEPT_SUMS(v.C),
                        .norm = link->norm,
                        .sums = link->norm,
                        .masked = relu != 0,
                        .pass = k < 0 ? 0 : 1 + clnet_dx_add(p, k)};
    clnet_status s = backward_sums(p, 5, &v, link->weight, &sums);
    if (s == CLNET_OK) link->sums = 1;
    return s;
}

/* Evaluation as y = x * s + t per channel (clnet_kind.eval_affine). */
static void eval_affine(const clnet_node *bn, const float *params, const float *buffers, double *s,
                        double *t) {
    const bn_config *cfg = CLNET_CONFIG(bn, bn_config);
    const float *gamma = params + bn->params[0].offset, *beta = params + bn->params[1].offset;
    const float *mean = buffers + bn->buffers[0].offset, *var = buffers + bn->buffers[1].offset;
    for (int64_t c = 0; c < bn->in[0].c; c++) {
        s[c] = gamma[c] / sqrt((double)var[c] + cfg->eps);
        t[c] = beta[c] - mean[c] * s[c];
    }
}

/* Takes in the relu after it (fusion.c): see relu_of. */
static int fuse_relu(clnet_node *node) {
    CLNET_CONFIG(node, bn_config)->relu = 1;
    return 1;
}

/* Leaves its training normalization to the add after it (fusion.c): its
 * kept memory then also holds the sums that add's backward computes. */
static int leave_norm(clnet_node *node) {
    CLNET_CONFIG(node, bn_config)->by_add = 1;
    return 1;
}

const clnet_kind clnet_batchnorm_kind = {
    .name = "batchnorm",
    .about =
        "Normalizes each channel with the batch's mean and biased variance in training, with the "
        "running statistics in evaluation, then scales and shifts it: PyTorch's BatchNorm1d/2d/3d"
        " for any input (C), (C, L), (C, H, W) or (C, D, H, W). Parameters weight (1) and bias "
        "(0), buffers running_mean, running_var and num_batches_tracked, per channel. The running"
        " statistics move by momentum towards the batch mean and the unbiased variance, once per "
        "step. Training needs more than one value per channel. sync=on: the statistics cover the "
        "whole batch across devices and MPI ranks, so a step on N devices is a step on one; "
        "sync=off: each device normalizes with its own share (as nn.DataParallel). In evaluation "
        "a batch norm that alone reads a convolution folds into the convolution's weights and "
        "bias (CLNET_FUSE=off keeps it apart).",
    .stem = "bn",
    .options = options,
    .min_inputs = 1,
    .max_inputs = 1,
    .backward_reads = CLNET_READS_X,
    .batch_stats = 1,
    .config_size = sizeof(bn_config),
    .setup = setup,
    .keep_floats = keep_floats,
    .work_floats = work_floats,
    .host_bytes = host_bytes,
    .forward = forward,
    .backward = backward,
    .finish = finish,
    .fuse_relu = fuse_relu,
    .eval_affine = eval_affine,
    .stats_in = 1,
    .leave_norm = leave_norm,
};
