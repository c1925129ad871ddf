/* clnet_net_tune: measuring every candidate of every tunable operation a
 * net runs, and storing the winners in the tuning database (tune.h). */
#include "alloc.h"
#include "clock.h"
#include "env.h"
#include "error.h"
#include "gemm.h"
#include "layers/conv.h"
#include "memory.h"
#include "net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CANDIDATES 64
#define TIME_TARGET    0.05 /* seconds of repeated calls per timing */
#define TIMINGS        3    /* timings per candidate; the fastest counts */
/* Operands larger than this ($CLNET_TUNE_COLD_MB MiB) are never in the
 * caches when a training step multiplies them (the layers between wrote
 * other data): such products are timed one call at a time, each after
 * EVICT_BYTES of other data were written, so memory-bound candidates are not
 * flattered by warm caches. On the Xeon VM, timed warm, the first
 * convolution's weight gradient chose a tiled point that took 7 ms in a step
 * where the split-k kernel takes 4: LeNet trained 6% slower. */
#define COLD_MIB    4
#define EVICT_BYTES (64u << 20)
#define COLD_CALLS  5

static uint64_t next_random(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static float *random_floats(size_t n, uint64_t seed) {
    float *v = clnet_malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++) v[i] = (float)next_random(&seed) / 2147483648.0f * 2 - 1;
    return v;
}

/* The operands of one shape on one device, with random contents. */
typedef struct {
    cl_mem a, b, c;
    clnet_gemm_scratch work; /* enough for every candidate */
    cl_mem evict;            /* EVICT_BYTES written between cold timings (NULL: warm timings) */
    size_t lda, ldb, ldc, csize;
    float *ref, *got;
} operands;

static void operands_free(operands *o) {
    if (o->a) clReleaseMemObject(o->a);
    if (o->b) clReleaseMemObject(o->b);
    if (o->c) clReleaseMemObject(o->c);
    if (o->work.mem) clReleaseMemObject(o->work.mem);
    if (o->evict) clReleaseMemObject(o->evict);
    free(o->ref);
    free(o->got);
    memset(o, 0, sizeof *o);
}

/* Operands over cold_mib MiB in all get the eviction buffer (timed cold). */
static clnet_status operands_make(clnet_device *d, const clnet_gemm_shape *s, double cold_mib,
                                  operands *o) {
    clnet_status status = CLNET_OK;
    size_t asize = s->M * s->K, bsize = s->K * s->N;
    float *ha = random_floats(asize, 1), *hb = random_floats(bsize, 2);
    memset(o, 0, sizeof *o);
    o->lda = s->ta ? s->M : s->K;
    o->ldb = s->tb ? s->K : s->N;
    o->ldc = s->N;
    o->csize = s->M * s->N;
    o->ref = clnet_malloc(o->csize * sizeof(float));
    o->got = clnet_malloc(o->csize * sizeof(float));
    if (!ha || !hb || !o->ref || !o->got)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a %zu x %zu x %zu product", s->M, s->N,
             s->K);
    TRY(clnet_buffer_create(d, asize * sizeof(float), &o->a));
    TRY(clnet_buffer_create(d, bsize * sizeof(float), &o->b));
    TRY(clnet_buffer_create(d, o->csize * sizeof(float), &o->c));
    o->work.floats = clnet_gemm_work_floats(s);
    TRY(clnet_buffer_create(d, o->work.floats * sizeof(float), &o->work.mem));
    TRY(clnet_buffer_write(d, o->a, 0, asize, ha));
    TRY(clnet_buffer_write(d, o->b, 0, bsize, hb));
    if ((double)((asize + bsize + o->csize) * sizeof(float)) > cold_mib * (1 << 20) &&
        d->info.max_alloc_bytes >= EVICT_BYTES)
        TRY(clnet_buffer_create(d, EVICT_BYTES, &o->evict));
cleanup:
    free(ha);
    free(hb);
    return status;
}

static clnet_status run_once(clnet_device *d, const char *id, const clnet_gemm_shape *s,
                             operands *o) {
    return clnet_gemm_with(
        d, id, s, &o->work,
        &(clnet_gemm_args){1.0f, {o->a, 0, o->lda}, {o->b, 0, o->ldb}, 0.0f, {o->c, 0, o->ldc}});
}

/* The fastest of COLD_CALLS calls, each after other data filled the caches. */
static clnet_status time_cold(clnet_device *d, const char *id, const clnet_gemm_shape *s,
                              operands *o, double *us) {
    clnet_status status = CLNET_OK;
    const cl_float zero = 0;
    *us = -1;
    for (int t = 0; t < COLD_CALLS; t++) {
        CL_CHECK(clEnqueueFillBuffer(d->queue, o->evict, &zero, sizeof zero, 0, EVICT_BYTES, 0,
                                     NULL, NULL),
                 "clEnqueueFillBuffer");
        CL_CHECK(clnet_finish(d), "clFinish");
        double began = clnet_now();
        TRY(run_once(d, id, s, o));
        CL_CHECK(clnet_finish(d), "clFinish");
        double took = (clnet_now() - began) * 1e6;
        if (*us < 0 || took < *us) *us = took;
    }
cleanup:
    return status;
}

/* The fastest of TIMINGS timings of repeated calls, in microseconds per call. */
static clnet_status time_candidate(clnet_device *d, const char *id, const clnet_gemm_shape *s,
                                   operands *o, double *us) {
    clnet_status status = CLNET_OK;
    if (o->evict) return time_cold(d, id, s, o, us);
    double t0 = clnet_now();
    TRY(run_once(d, id, s, o));
    CL_CHECK(clnet_finish(d), "clFinish");
    double one = clnet_now() - t0;
    int reps = one > 0 ? (int)(TIME_TARGET / one) : 100;
    if (reps < 1) reps = 1;
    if (reps > 100) reps = 100;
    *us = -1;
    for (int t = 0; t < TIMINGS; t++) {
        double began = clnet_now();
        for (int r = 0; r < reps; r++) TRY(run_once(d, id, s, o));
        CL_CHECK(clnet_finish(d), "clFinish");
        double per = (clnet_now() - began) / reps * 1e6;
        if (*us < 0 || per < *us) *us = per;
    }
cleanup:
    return status;
}

/* The largest difference from the reference, relative to the reference's
 * largest magnitude. */
static double difference(const float *ref, const float *got, size_t n) {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)ref[i]), e = fabs((double)got[i] - (double)ref[i]);
        if (r > scale) scale = r;
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    return scale > 0 ? worst / scale : worst;
}

typedef struct {
    clnet_tune_fn report;
    void *user;
} reporter;

static void say(const reporter *rep, const clnet_device *d, const char *site, const char *key,
                int bucket, const char *id, double us, const char *verdict) {
    if (!rep->report) return;
    clnet_tune_report r = {d->info.index, site, key, bucket, id, us, verdict};
    rep->report(&r, rep->user);
}

/* Measures every candidate on one shape (cold over cold_mib MiB); *winner
 * gets the fastest correct one (its id empty when none ran). */
static clnet_status tune_shape(clnet_device *d, const clnet_gemm_pick *pick, double cold_mib,
                               const reporter *rep, clnet_tune_entry *winner) {
    const clnet_gemm_shape *s = &pick->shape;
    clnet_status status = CLNET_OK;
    operands o;
    char ids[MAX_CANDIDATES][CLNET_GEMM_ID_CAP];
    double us[MAX_CANDIDATES];
    char verdict[MAX_CANDIDATES][160];
    int n = clnet_gemm_candidates(d, ids, MAX_CANDIDATES), have_ref = 0, best = -1;
    memset(winner, 0, sizeof *winner);
    clnet_gemm_key(s, winner->key, sizeof winner->key, &winner->bucket);
    TRY(operands_make(d, s, cold_mib, &o));
    /* K terms of size ~1 each: rounding differs by about sqrt(K) ulps */
    double tolerance = 1e-5 * sqrt((double)s->K) + 1e-6;
    for (int c = 0; c < n; c++) {
        verdict[c][0] = '\0';
        us[c] = -1;
        if (run_once(d, ids[c], s, &o) != CLNET_OK ||
            clnet_buffer_read(d, o.c, 0, o.csize, have_ref ? o.got : o.ref) != CLNET_OK) {
            snprintf(verdict[c], sizeof verdict[c], "failed: %.140s", clnet_last_error());
            continue;
        }
        if (have_ref) {
            double diff = difference(o.ref, o.got, o.csize);
            if (!(diff <= tolerance)) {
                snprintf(verdict[c], sizeof verdict[c],
                         "wrong result (differs from %s by %.2g of the largest value)", ids[0],
                         diff);
                continue;
            }
        }
        have_ref = 1;
        if (time_candidate(d, ids[c], s, &o, &us[c]) != CLNET_OK) {
            snprintf(verdict[c], sizeof verdict[c], "failed: %.140s", clnet_last_error());
            us[c] = -1;
            continue;
        }
        if (best < 0 || us[c] < us[best]) best = c;
    }
    for (int c = 0; c < n; c++)
        say(rep, d, pick->site, winner->key, winner->bucket, ids[c], us[c],
            c == best ? "chosen" : verdict[c]);
    if (best >= 0) {
        snprintf(winner->choice, sizeof winner->choice, "%s", ids[best]);
        winner->us = us[best];
    }
cleanup:
    operands_free(&o);
    return status;
}

/* ---- convolution algorithms -------------------------------------------------------------- */

/* Node i's passes on replica r over n samples with the device's current
 * choices: a first run that builds and launches its kernels, then the
 * fastest of TIMINGS runs of about TIME_TARGET seconds each. */
static clnet_status time_node(clnet_replica *r, int i, int n, double *us) {
    clnet_status status = CLNET_OK;
    clnet_ctx ctx = {.train = 1, .d = r->d};
    double once = 0, best = -1;
    TRY(clnet_replica_time_node(r, &ctx, i, n, 1, &once));
    int reps = once > 0 && once < TIME_TARGET ? (int)(TIME_TARGET / once) + 1 : 1;
    for (int k = 0; k < TIMINGS; k++) {
        double t = 0;
        TRY(clnet_replica_time_node(r, &ctx, i, n, reps, &t));
        if (best < 0 || t < best) best = t;
    }
    *us = best * 1e6;
cleanup:
    return status;
}

/* Plans a node tries: each algorithm on every pass, then the best with one
 * pass on the runner-up's algorithm, pass by pass. */
#define PLANS (CLNET_CONV_MOST - 1 + CLNET_CONV_PASSES)
/* A mix of two algorithms wins only where it is this much faster than the
 * best so far: otherwise the passes share one algorithm's layouts. */
#define MIX_GAIN 0.97

typedef struct {
    clnet_conv_plan plan;
    double us; /* < 0: it failed */
    char verdict[160];
} tried;

/* Times node i on replica r with t's plan, as if $CLNET_CONV named it (the
 * device's scratch fitted to it). */
static void time_plan(clnet_replica *r, int i, int n, tried *t) {
    r->d->choice.conv_force = t->plan;
    clnet_gemm_forget(r->d); /* plans the scratch again for these algorithms */
    t->verdict[0] = '\0';
    if (time_node(r, i, n, &t->us) != CLNET_OK) {
        snprintf(t->verdict, sizeof t->verdict, "failed: %.140s", clnet_last_error());
        t->us = -1;
    }
}

/* Whether a plan runs a pass with the implicit algorithm's products (its
 * own, or Winograd's). */
static int runs_products(const clnet_conv_plan *plan) {
    for (int pass = 0; pass < CLNET_CONV_PASSES; pass++)
        if (plan->pass[pass] == CLNET_CONV_IMPLICIT || plan->pass[pass] == CLNET_CONV_WINOGRAD)
            return 1;
    return 0;
}

/* The key of the tile entry for a convolution's key (room for CLNET_TUNE_KEY_CAP). */
static void tile_key(const char *key, char *out) {
    snprintf(out, CLNET_TUNE_KEY_CAP, "%.*s%s", (int)(CLNET_TUNE_KEY_CAP - sizeof CONV_TILE_KEY),
             key, CONV_TILE_KEY);
}

/* On a device other than a CPU, where the plan chosen for node i runs the
 * implicit algorithm's products: times that plan on each local-memory tile
 * (conv_gpu_tile), every product of the layer on one, and makes *tile the
 * fastest ("<key> tile"); its choice is empty elsewhere. */
static void tune_tile(clnet_replica *r, int i, int n, const reporter *rep,
                      const clnet_tune_entry *plan, clnet_tune_entry *tile) {
    clnet_device *d = r->d;
    clnet_conv_plan chosen;
    clnet_tune_entry of = *plan; /* tile is the entry after it */
    memset(tile, 0, sizeof *tile);
    if (d->info.type == CLNET_DEVICE_CPU || !clnet_conv_plan_parse(of.choice, &chosen) ||
        !runs_products(&chosen) || d->choice.conv_tile_force[0])
        return;
    tile_key(of.key, tile->key);
    clnet_conv_plan forced = d->choice.conv_force;
    double best = -1;
    for (int k = 0; k < conv_gpu_tile_count(); k++) {
        tried t = {.plan = chosen};
        const char *id = conv_gpu_tile(k);
        snprintf(d->choice.conv_tile_force, sizeof d->choice.conv_tile_force, "%s", id);
        time_plan(r, i, n, &t);
        if (t.us >= 0 && (best < 0 || t.us < best)) {
            best = t.us;
            snprintf(tile->choice, sizeof tile->choice, "%s", id);
            tile->us = t.us;
        }
        say(rep, d, r->model->nodes[i].name, tile->key, 0, id, t.us, t.verdict);
    }
    d->choice.conv_tile_force[0] = '\0';
    d->choice.conv_force = forced;
    clnet_gemm_forget(d);
    if (best >= 0) say(rep, d, r->model->nodes[i].name, tile->key, 0, tile->choice, best, "chosen");
}

/* Chooses the algorithms of node i's passes (a convolution) on replica r,
 * timed over its share n of the last step: *winner gets the fastest plan
 * (its choice empty when none ran). */
static clnet_status tune_node(clnet_replica *r, int i, int n, const reporter *rep,
                              clnet_tune_entry *winner) {
    clnet_device *d = r->d;
    const clnet_node *node = &r->model->nodes[i];
    int algos[CLNET_CONV_MOST], count = 0, best = -1, second = -1;
    clnet_conv_plan now, forced = d->choice.conv_force;
    tried t[PLANS];
    memset(winner, 0, sizeof *winner);
    int algorithms = node->kind->algorithms(node, d, winner->key, sizeof winner->key, algos, &now);
    for (; count < algorithms; count++) {
        t[count].plan = clnet_conv_plan_all(algos[count]);
        time_plan(r, i, n, &t[count]);
        if (t[count].us < 0) continue;
        if (best < 0 || t[count].us < t[best].us) {
            second = best;
            best = count;
        } else if (second < 0 || t[count].us < t[second].us) {
            second = count;
        }
    }
    for (int pass = 0; second >= 0 && pass < CLNET_CONV_PASSES; pass++, count++) {
        t[count].plan = t[best].plan;
        t[count].plan.pass[pass] = t[second].plan.pass[pass];
        time_plan(r, i, n, &t[count]);
        if (t[count].us >= 0 && t[count].us < MIX_GAIN * t[best].us) best = count;
    }
    d->choice.conv_force = forced;
    clnet_gemm_forget(d);
    for (int k = 0; k < count; k++) {
        char text[CLNET_CONV_PLAN_CAP];
        clnet_conv_plan_text(&t[k].plan, text, sizeof text);
        say(rep, d, node->name, winner->key, 0, text, t[k].us, k == best ? "chosen" : t[k].verdict);
        if (k == best) {
            snprintf(winner->choice, sizeof winner->choice, "%s", text);
            winner->us = t[k].us;
        }
    }
    return CLNET_OK;
}

/* The entries of tuned that a device equal to replica i's measured (owner). */
static int measured_on_equal(const clnet_trainer *t, const clnet_tune_entry *found,
                             const int *owner, int nfound, int i, const char *key, int bucket) {
    for (int j = 0; j < nfound; j++)
        if (found[j].bucket == bucket && strcmp(found[j].key, key) == 0 &&
            strcmp(t->replicas[owner[j]]->d->choice.tune_device,
                   t->replicas[i]->d->choice.tune_device) == 0)
            return 1;
    return 0;
}

/* Chooses every convolution's algorithm on every device (a device equal to
 * one measured before takes its choices), appending the winners to found
 * and owner (room for one per node and replica) and setting them in the
 * devices' tables, so that the GEMMs tuned after are the chosen
 * algorithms'. Where $CLNET_CONV names the plan (overriding any choice),
 * only that plan's local-memory tiles are timed. */
static clnet_status tune_convolutions(clnet_trainer *t, const reporter *rep,
                                      clnet_tune_entry *found, int *owner, int *nfound) {
    clnet_status status = CLNET_OK;
    for (int i = 0; i < t->count; i++) {
        clnet_replica *r = t->replicas[i];
        int n = t->step.shares[t->ranks.first + i];
        int forced = clnet_conv_plan_named(&r->d->choice.conv_force);
        if (n < 1) continue;
        for (int k = 0; k < r->model->count; k++) {
            clnet_tune_entry of = {0};
            clnet_conv_plan plan;
            if (!clnet_node_plan(&r->model->nodes[k], r->d, of.key, sizeof of.key, &plan)) continue;
            if (forced) { /* only the tile of the plan $CLNET_CONV names */
                char tile[CLNET_TUNE_KEY_CAP];
                tile_key(of.key, tile);
                if (measured_on_equal(t, found, owner, *nfound, i, tile, 0)) continue;
                clnet_conv_plan_text(&r->d->choice.conv_force, of.choice, sizeof of.choice);
                tune_tile(r, k, n, rep, &of, &found[*nfound]);
            } else {
                if (measured_on_equal(t, found, owner, *nfound, i, of.key, 0)) continue;
                TRY(tune_node(r, k, n, rep, &found[*nfound]));
                if (!found[*nfound].choice[0]) continue;
                owner[(*nfound)++] = i;
                tune_tile(r, k, n, rep, &found[*nfound - 1], &found[*nfound]);
            }
            if (found[*nfound].choice[0]) owner[(*nfound)++] = i;
        }
    }
    for (int j = 0; j < *nfound; j++)
        for (int i = 0; i < t->count; i++)
            if (strcmp(t->replicas[owner[j]]->d->choice.tune_device,
                       t->replicas[i]->d->choice.tune_device) == 0)
                TRY(clnet_tune_table_set(&t->replicas[i]->d->choice.tuned, &found[j]));
    for (int i = 0; i < t->count; i++) clnet_gemm_forget(t->replicas[i]->d);
cleanup:
    return status;
}

/* Writes each device's measured entries (found[j], measured on replica
 * owner[j]) to the database in its kernel cache's folder. */
static clnet_status write_database(const clnet_trainer *t, const clnet_tune_entry *found,
                                   const int *owner, int nfound) {
    clnet_status status = CLNET_OK;
    clnet_tune_entry *mine = clnet_malloc(((size_t)nfound + 1) * sizeof *mine);
    if (!mine) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory tuning");
    for (int i = 0; i < t->count; i++) {
        const clnet_device *d = t->replicas[i]->d;
        int count = 0;
        for (int j = 0; j < nfound; j++)
            if (owner[j] == i) mine[count++] = found[j];
        if (count && d->cache && d->cache->enabled) {
            char path[4200];
            clnet_tune_db_path(d->cache->dir, path, sizeof path);
            TRY(clnet_tune_db_write(path, d->choice.tune_device, d->choice.tune_space, mine,
                                    count));
        } else if (count) {
            clnet_warn("the kernel cache is off (CLNET_CACHE=off): tuned choices serve this "
                       "process only");
        }
    }
cleanup:
    free(mine);
    return status;
}

/* What a step that shows which shapes run trains on: random images, and
 * labels (one a sample, or one a position) or a regression's float targets. */
typedef struct {
    float *x, *targets; /* targets: NULL unless the loss reads floats from the data */
    int32_t *y;
    int n;
} tune_batch;

static clnet_status random_batch(const clnet_net *net, int batch, tune_batch *b) {
    size_t per = clnet_shape_size(net->model.input), T = clnet_model_target_size(&net->model);
    int positions = clnet_model_positions(&net->model);
    size_t labels = (size_t)batch * (size_t)(positions > 1 ? positions : 1);
    int classes = clnet_model_classes(&net->model);
    uint64_t seed = 7;
    b->n = batch;
    b->x = random_floats(per * (size_t)batch, 3);
    b->y = clnet_malloc(labels * sizeof *b->y);
    if (T && !clnet_model_is_classifier(&net->model))
        b->targets = random_floats(T * (size_t)batch, 5);
    if (!b->x || !b->y || (T && !clnet_model_is_classifier(&net->model) && !b->targets))
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a batch");
    for (size_t i = 0; i < labels; i++) b->y[i] = (int32_t)(next_random(&seed) % (uint64_t)classes);
    return CLNET_OK;
}

static clnet_status tune_step(clnet_net *net, const tune_batch *b) {
    return b->targets ? clnet_net_train_step_targets(net, b->x, b->targets, b->n, NULL)
                      : clnet_net_train_step(net, b->x, b->y, b->n, NULL);
}

clnet_status clnet_net_tune(clnet_net *net, int batch, clnet_tune_fn report, void *user) {
    clnet_status status = CLNET_OK;
    tune_batch b = {0};
    clnet_gemm_pick *shapes = NULL;
    clnet_tune_entry *found = NULL; /* measured in this run */
    int *owner = NULL, nfound = 0;  /* the replica each was measured on */
    reporter rep = {report, user};
    clnet_env env;
    if (!net || !net->trainer)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_net_tune: the net is not bound");
    /* CLNET_TUNE and CLNET_TUNE_COLD_MB, read once for this run */
    if ((status = clnet_env_read(&env)) != CLNET_OK) return status;
    int enabled = env.tune;
    double cold_mib = env.tune_cold_mb && *env.tune_cold_mb ? atof(env.tune_cold_mb) : COLD_MIB;
    clnet_env_free(&env);
    if (!enabled)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_net_tune: CLNET_TUNE=off in the environment: nothing is timed");
    if (batch < 1 || batch > net->trainer->max_batch)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_net_tune: batch of %d samples: the net is bound for 1..%d", batch,
                          net->trainer->max_batch);
    clnet_trainer *t = net->trainer;
    TRY(random_batch(net, batch, &b));
    /* The first step settles the split (calibration runs probes of its own);
     * the second fills the arenas the convolutions are timed on; the third,
     * with their algorithms chosen, shows the GEMM shapes of a steady step. */
    TRY(tune_step(net, &b));
    TRY(tune_step(net, &b));
    /* two entries a convolution and device: its plan, and its tile on a GPU */
    found = clnet_malloc((2 * (size_t)t->count * (size_t)net->model.count + 1) * sizeof *found);
    owner = clnet_malloc((2 * (size_t)t->count * (size_t)net->model.count + 1) * sizeof *owner);
    if (!found || !owner) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory tuning");
    TRY(tune_convolutions(t, &rep, found, owner, &nfound));
    TRY(tune_step(net, &b));

    for (int i = 0; i < t->count; i++) {
        clnet_device *d = t->replicas[i]->d;
        const clnet_gemm_record *made = &t->replicas[i]->gemm_record;
        int count = clnet_gemm_record_count(made, d);
        free(shapes);
        shapes = clnet_malloc(((size_t)count + 1) * sizeof *shapes);
        clnet_tune_entry *more =
            clnet_realloc(found, ((size_t)(nfound + count) + 1) * sizeof *found);
        int *more_owner = clnet_realloc(owner, ((size_t)(nfound + count) + 1) * sizeof *owner);
        if (more) found = more;
        if (more_owner) owner = more_owner;
        if (!shapes || !more || !more_owner) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory tuning");
        if (count) memcpy(shapes, made->picks, (size_t)count * sizeof *shapes); /* none: NULL */
        for (int k = 0; k < count; k++) {
            char key[CLNET_TUNE_KEY_CAP];
            int bucket = 0;
            clnet_gemm_key(&shapes[k].shape, key, sizeof key, &bucket);
            /* measured already, on this device or an equal one before it */
            if (measured_on_equal(t, found, owner, nfound, i, key, bucket)) continue;
            TRY(tune_shape(d, &shapes[k], cold_mib, &rep, &found[nfound]));
            if (found[nfound].choice[0]) owner[nfound++] = i;
        }
    }
    TRY(write_database(t, found, owner, nfound));
    /* every device uses what was measured on it or on a device equal to it */
    for (int i = 0; i < t->count; i++) {
        clnet_device *d = t->replicas[i]->d;
        for (int j = 0; j < nfound; j++)
            if (strcmp(t->replicas[owner[j]]->d->choice.tune_device, d->choice.tune_device) == 0)
                TRY(clnet_tune_table_set(&d->choice.tuned, &found[j]));
    }
    for (int i = 0; i < t->count; i++) clnet_gemm_forget(t->replicas[i]->d);
    TRY(clnet_trainer_fit_work(t)); /* the scratch of what was chosen, before the next step */
cleanup:
    free(b.x);
    free(b.y);
    free(b.targets);
    free(shapes);
    free(found);
    free(owner);
    return status;
}
