/* A synchronous training step, top to bottom. Called by the public API
 * (net.c), which gives it the batch and the mode as arguments; calls down
 * into the split (split.c, over the balancer), the workers, each replica's
 * share (share.c), the other ranks (ranks.c), the optimizer and the
 * broadcast of the new parameters (broadcast.c); nothing calls back up.
 *
 *   1. split the global batch into shares (split.c): contiguous ranges of
 *      sample indices, in proportion to each device's measured speed;
 *   2. every replica runs forward and backward on its share at once, on its
 *      own worker thread, in micro-batches when its share exceeds what fits
 *      its memory, producing the SUM of its samples' gradients;
 *   3. gradients come to the host bucket by bucket (one bucket per node
 *      with parameters, last node first): on every kind of device each
 *      bucket is read into a mapped pinned staging buffer as soon as its
 *      backward pass has been enqueued, so transfers and the host's adding
 *      overlap the backward pass of the nodes below. A device that shares
 *      memory with the host reads too, rather than mapping its gradient
 *      buffer in place: a buffer mapped for reading must not be written by
 *      a kernel until it is unmapped, and the nodes below still write it;
 *   4. this thread adds the replicas' buckets in a fixed device order while
 *      they arrive, and (in one process) updates each bucket's parameters
 *      as soon as it is summed, dividing by the global batch: the new
 *      parameters go to every replica's second parameter buffer, queued
 *      behind its backward pass (in order: no kernel of the step reads that
 *      buffer), while the backward pass of the nodes below still runs. The
 *      optimizer's new state goes to a copy of its own. Only once the whole
 *      step is known to be applied (every number finite, every device
 *      done) are they made current, by swapping buffers: until then the
 *      step can be withdrawn or done again on fewer devices. In an MPI job
 *      the sum over the ranks comes at the end, and the update runs then;
 *      so it does with clip_grad_norm, whose factor is the norm of the
 *      whole gradient (summed over devices and ranks, so every rank
 *      computes the same norm from the same sum).
 * A step on N devices therefore equals a step on one device, up to float
 * rounding, whatever the split. Replicas exchange data during a pass only
 * through the collective in their execution context (collective.h). */
#include "step.h"
#include "broadcast.h"
#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "hostmath.h"
#include "memory.h"
#include "share.h"
#include "split.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* One call of run_all: the batch and the mode as the caller gave them, and
 * what the step makes of them. The caller builds it; the workers get it as
 * their job's argument, the reducer as its parameter. */
typedef struct {
    clnet_trainer *t;
    int64_t step; /* the optimizer step whose split this is */
    const clnet_batch *batch;
    int train;
    float *probs; /* (n, outputs), or NULL */
    int logits;   /* probs gets the loss layer's input instead of its output */
    /* The update by bucket (update_node), or optim NULL: the update runs
     * after the step. It reads params (the host's copy) and divides by the
     * global batch, batch->n. */
    clnet_optim *optim;
    const float *params;
    const clnet_step_feed *feed; /* training: where the next batch comes from, or NULL */
    clnet_step_sums sums;        /* the batch's, once run_all succeeded */
} step_call;

/* ---- the replicas' side (on their worker threads) --------------------------------- */

static void post(clnet_trainer *t, int i, int node, cl_event ev, const float *data) {
    size_t k = (size_t)i * t->model->count + node;
    pthread_mutex_lock(&t->step.lock);
    t->step.events[k] = ev;
    t->step.data[k] = data;
    t->step.posted[k] = 1;
    pthread_cond_broadcast(&t->step.changed);
    pthread_mutex_unlock(&t->step.lock);
}

/* Starts reading a node's gradients to the host. */
typedef struct {
    const step_call *c;
    int i;         /* the replica */
    int sent;      /* buckets on their way */
    int next_node; /* the node whose new parameters the replica takes next (send_updates) */
} bucket_sender;

/* The new parameters the reducer made so far (update_node), node by node in
 * its order from b->next_node down, to replica b->i's next parameters; with
 * wait, each in turn as it comes, until the reducer makes no more. The
 * replica's own worker sends them: one thread drives a device at a time
 * (PoCL's basic device runs commands on the thread that submits them). */
static clnet_status send_updates(bucket_sender *b, int wait) {
    clnet_trainer *t = b->c->t;
    for (; b->next_node >= 0; b->next_node--) {
        const clnet_node *nd = &t->model->nodes[b->next_node];
        if (!nd->param_count) continue;
        pthread_mutex_lock(&t->step.lock);
        while (wait && !t->step.updated[b->next_node] && !t->step.updates_over)
            pthread_cond_wait(&t->step.changed, &t->step.lock);
        int ready = t->step.updated[b->next_node];
        pthread_mutex_unlock(&t->step.lock);
        if (!ready) return CLNET_OK; /* not yet, or not in this step */
        clnet_status s = clnet_replica_write_next(t->replicas[b->i], t->step.next, nd->param_off,
                                                  nd->param_off + nd->param_count);
        if (s != CLNET_OK) return s;
    }
    return CLNET_OK;
}

/* CLNET_FAULT's transfer point: replica i fails once one bucket is on its way. */
static clnet_status transfer_fault(clnet_trainer *t, int i, int sent) {
    const clnet_ctx *ctx = &t->step.ctx[i];
    if (sent == 1 &&
        clnet_fault(&t->split.faults, t->ranks.first + i, ctx->step, CLNET_FAULT_TRANSFER))
        return clnet_fail(CLNET_ERR_OPENCL,
                          "injected fault (CLNET_FAULT) while its gradients went to the host in "
                          "step %lld",
                          (long long)ctx->step);
    return CLNET_OK;
}

static clnet_status send_bucket(void *arg, int node) {
    clnet_status status = CLNET_OK;
    bucket_sender *b = arg;
    clnet_trainer *t = b->c->t;
    clnet_replica *rep = t->replicas[b->i];
    const clnet_node *nd = &t->model->nodes[node];
    cl_event ev = NULL;
    CL_CHECK(clEnqueueReadBuffer(rep->d->queue, rep->grads, CL_FALSE, nd->param_off * sizeof(float),
                                 nd->param_count * sizeof(float), rep->staging.data + nd->param_off,
                                 0, NULL, &ev),
             "clEnqueueReadBuffer(gradient bucket)");
    CL_CHECK(clFlush(rep->d->queue), "clFlush");
    post(t, b->i, node, ev, rep->staging.data + nd->param_off);
    TRY(transfer_fault(t, b->i, ++b->sent));
    if (b->c->optim) TRY(send_updates(b, 0));
cleanup:
    return status;
}

static void stage_ahead(const step_call *c, int i); /* the next batch: below */

/* Replica i's share: micro-batches, then the gradient hand-over; and with
 * the update by bucket, the new parameters as they come (also for a replica
 * without a share). */
static clnet_status run_share(const step_call *c, int i) {
    clnet_status status = CLNET_OK;
    clnet_trainer *t = c->t;
    const clnet_batch *b = c->batch;
    clnet_replica *r = t->replicas[i];
    const clnet_model *m = t->model;
    clnet_ctx *ctx = &t->step.ctx[i];
    int me = t->ranks.first + i; /* this replica among the devices of every rank */
    int train = c->train, off = t->step.offsets[me];
    bucket_sender sender = {c, i, 0, m->count - 1};
    clnet_share share = {
        .images = b->images + (size_t)off * clnet_shape_size(m->input),
        .labels = b->labels ? b->labels + off : NULL,
        .targets = b->targets ? b->targets + (size_t)off * r->target_size : NULL,
        .probs = c->probs ? c->probs + (size_t)off * clnet_model_outputs(m) : NULL,
        .logits = c->logits,
        .n = t->step.shares[me],
        .first = off,
        .node_done = train ? send_bucket : NULL,
        .arg = &sender,
        .fault_after_forward =
            train && clnet_fault(&t->split.faults, me, ctx->step, CLNET_FAULT_KERNELS),
    };
    double t0 = clnet_now(), busy = -1; /* loss[i] and correct[i] start at 0 (run_all) */
    if (share.n > 0) {
        if (train) TRY(clnet_replica_keep_buffers(r)); /* first: a failed step puts them back */
        if (train && clnet_fault(&t->split.faults, me, ctx->step, CLNET_FAULT_START))
            FAIL(CLNET_ERR_OPENCL, "injected fault (CLNET_FAULT) in step %lld",
                 (long long)ctx->step);
        TRY(clnet_share_run(r, ctx, &share, &t->step.loss[i], &t->step.correct[i]));
        CL_CHECK(clnet_finish(r->d), "clFinish");
        clnet_throttle_wait(&t->split.faults, me, clnet_now() - t0);
        busy = clnet_now() - t0; /* what the balancer learns: not the wait for updates */
    }
    if (train && c->optim) {
        stage_ahead(c, i);
        TRY(send_updates(&sender, 1));
        CL_CHECK(clnet_finish(r->d), "clFinish"); /* the next step writes `next` again */
    }
cleanup:
    if (share.n > 0) t->step.seconds[me] = busy >= 0 ? busy : clnet_now() - t0;
    pthread_mutex_lock(&t->step.lock);
    if (status != CLNET_OK) {
        clnet_error_context(status, "device %d (%s)", r->d->info.index, r->d->info.name);
        if (t->step.first_failed < 0) t->step.first_failed = i; /* before the others fail for it */
        clnet_local_group_abort(t->step.group); /* the others must not wait for this one */
    }
    t->step.finished[i] = 1;
    pthread_cond_broadcast(&t->step.changed);
    pthread_mutex_unlock(&t->step.lock);
    return status;
}

static clnet_status share_job(int i, void *arg) {
    return run_share(arg, i);
}

/* ---- this thread's side ----------------------------------------------------------- */

/* Waits until replica i posted its bucket for `node` or finished; while
 * buckets are on their way between ranks, lets MPI move them meanwhile. */
static int wait_posted(clnet_trainer *t, int i, size_t k) {
    pthread_mutex_lock(&t->step.lock);
    while (!t->step.posted[k] && !t->step.finished[i]) {
        if (!clnet_dist_progress(t->ranks.dist)) {
            pthread_cond_wait(&t->step.changed, &t->step.lock);
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000; /* 0.2 ms between MPI's turns */
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&t->step.changed, &t->step.lock, &until);
    }
    int ready = t->step.posted[k];
    pthread_mutex_unlock(&t->step.lock);
    return ready;
}

/* Adds replica i's bucket for `node` into the summed gradient (the first
 * replica in order copies). Waits for it; returns 0 when the replica
 * finished without posting it (it failed). */
static int reduce_bucket(clnet_trainer *t, int i, int node, int first, clnet_status *status) {
    const clnet_node *nd = &t->model->nodes[node];
    size_t k = (size_t)i * t->model->count + node;
    if (!wait_posted(t, i, k)) return 0;
    if (t->step.events[k]) {
        cl_int err = clWaitForEvents(1, &t->step.events[k]);
        clReleaseEvent(t->step.events[k]);
        t->step.events[k] = NULL;
        if (err != CL_SUCCESS) {
            *status = clnet_fail_cl_at(err, "clWaitForEvents(gradient bucket)", __FILE__, __LINE__);
            return 0;
        }
    }
    if (!t->step.reduced && clnet_fault(&t->split.faults, t->ranks.first + i, t->step.ctx[i].step,
                                        CLNET_FAULT_REDUCE)) {
        const clnet_device *d = t->replicas[i]->d;
        pthread_mutex_lock(&t->step.lock);
        if (t->step.first_failed < 0) t->step.first_failed = i;
        pthread_mutex_unlock(&t->step.lock);
        *status = clnet_fail(CLNET_ERR_OPENCL,
                             "device %d (%s): injected fault (CLNET_FAULT) while the host added "
                             "its gradients in step %lld",
                             d->info.index, d->info.name, (long long)t->step.ctx[i].step);
        return 0;
    }
    float *dst = t->step.grad_sum + nd->param_off;
    if (first)
        memcpy(dst, t->step.data[k], nd->param_count * sizeof(float));
    else
        clnet_add_floats(dst, t->step.data[k], nd->param_count);
    return 1;
}

/* MPI: node's bucket on its way to its sum over the ranks. */
static clnet_status start_bucket(clnet_trainer *t, int node) {
    const clnet_node *nd = &t->model->nodes[node];
    return clnet_dist_bucket_start(t->ranks.dist, t->step.grad_sum + nd->param_off, nd->param_count,
                                   nd->name);
}

/* This process's sum of node's bucket, then (MPI) its sum over the ranks
 * starts on its way. A process whose devices have no share adds nothing. */
static clnet_status reduce_node(clnet_trainer *t, int node) {
    clnet_status status = CLNET_OK;
    const clnet_node *nd = &t->model->nodes[node];
    int first = 1;
    for (int i = 0; i < t->count; i++) {
        if (!t->step.active[i]) continue;
        if (!reduce_bucket(t, i, node, first, &status))
            return status != CLNET_OK ? status : CLNET_ERR_INTERNAL; /* it failed */
        first = 0;
    }
    if (first) memset(t->step.grad_sum + nd->param_off, 0, nd->param_count * sizeof(float));
    t->step.reduced++;
    /* checked while in cache; across ranks only the sum over them counts */
    if (!t->ranks.dist &&
        clnet_first_nonfinite(t->step.grad_sum + nd->param_off, nd->param_count) < nd->param_count)
        t->step.bad_node = node; /* the lowest, as they come last first */
    return t->ranks.dist && t->ranks.overlap ? start_bucket(t, node) : CLNET_OK;
}

/* As soon as node's bucket is summed: its update into t->step.next, for
 * the replicas' workers to send on (send_updates). Nothing once the step
 * cannot be applied (a gradient or an update that is not finite). */
static void update_node(const step_call *c, int node) {
    clnet_trainer *t = c->t;
    const clnet_node *nd = &t->model->nodes[node];
    size_t from = nd->param_off, end = from + nd->param_count;
    if (t->step.bad_node >= 0 || t->step.bad_update < t->model->nparams) return;
    size_t bad = clnet_optim_apply_next(c->optim, c->params, t->step.next, t->step.grad_sum, from,
                                        end, c->batch->n);
    pthread_mutex_lock(&t->step.lock);
    if (bad < end)
        t->step.bad_update = bad;
    else
        t->step.updated[node] = 1;
    pthread_cond_broadcast(&t->step.changed);
    pthread_mutex_unlock(&t->step.lock);
}

/* The reducer makes no more updates in this step: the workers stop waiting. */
static void updates_over(clnet_trainer *t) {
    pthread_mutex_lock(&t->step.lock);
    t->step.updates_over = 1;
    pthread_cond_broadcast(&t->step.changed);
    pthread_mutex_unlock(&t->step.lock);
}

/* Gives back what the hand-over holds, whatever became of the step: the
 * buckets' events. */
static clnet_status release_handover(clnet_trainer *t, clnet_status status) {
    for (size_t k = 0; k < (size_t)t->count * t->model->count; k++)
        if (t->step.events[k]) {
            clReleaseEvent(t->step.events[k]);
            t->step.events[k] = NULL;
        }
    return status;
}

/* Nothing posted, reduced, updated or failed yet in this step. */
static void forget_handover(clnet_trainer *t) {
    const clnet_model *m = t->model;
    memset(t->step.posted, 0, (size_t)t->count * m->count * sizeof *t->step.posted);
    memset(t->step.updated, 0, (size_t)m->count * sizeof *t->step.updated);
    t->step.bad_node = -1;
    t->step.bad_update = m->nparams;
    t->step.updates_over = 0;
    t->step.started = 0;
    t->step.first_failed = -1;
    t->step.reduced = 0;
    t->feed.ahead = -1;
}

/* Splits the batch, readies the hand-over and every replica's execution
 * context, and starts every replica with a share on its worker (with the
 * update by bucket, every live one: those without a share take the new
 * parameters too). */
static clnet_status start_shares(step_call *c) {
    clnet_status status = CLNET_OK;
    clnet_trainer *t = c->t;
    const clnet_model *m = t->model;
    int taking = 0, buckets = 0;
    TRY(clnet_split_batch(t, c->batch->n, c->step, c->train, 1, t->step.shares, t->step.offsets));
    for (int i = 0; i < t->count; i++) {
        t->step.active[i] = t->step.shares[t->ranks.first + i] > 0;
        t->step.finished[i] = !t->step.active[i];
        t->step.loss[i] = 0; /* every replica's, so that an idle one adds nothing */
        t->step.correct[i] = 0;
        taking += t->step.active[i];
    }
    for (int node = 0; node < m->count; node++) buckets += m->nodes[node].param_count > 0;
    if (c->train && t->ranks.dist)
        TRY(clnet_dist_buckets_prepare(t->ranks.dist, m->nparams, buckets, t->split.deterministic));
    forget_handover(t);
    clnet_outer_group outer;
    if (t->ranks.dist) clnet_ranks_outer(&t->ranks, t->step.shares, &outer);
    clnet_local_group_reset(t->step.group, taking, t->step.coll, t->ranks.dist ? &outer : NULL);
    for (int i = 0, rank = 0; i < t->count; i++) {
        clnet_collective *coll = t->step.active[i] ? &t->step.coll[rank++] : NULL;
        t->step.ctx[i] =
            (clnet_ctx){.train = c->train, .d = t->replicas[i]->d, .coll = coll, .step = c->step};
    }
    t->step.started = c->train;
    clnet_workers_start(t->workers, share_job, c, c->train && c->optim ? t->alive : t->step.active);
cleanup:
    return status;
}

/* The reducer, on this thread while the workers run: buckets last node
 * first, replicas in device order; by bucket, each summed bucket's update
 * at once. */
static clnet_status reduce_all(const step_call *c) {
    clnet_status status = CLNET_OK;
    const clnet_model *m = c->t->model;
    for (int node = m->count - 1; c->train && node >= 0 && status == CLNET_OK; node--) {
        if (!m->nodes[node].param_count) continue;
        status = reduce_node(c->t, node);
        if (status == CLNET_OK && c->optim) update_node(c, node);
    }
    if (c->train && c->optim) updates_over(c->t);
    return status;
}

/* Waits for the workers: their failure first (the one that made the others
 * fail, an abandoned collective, is preferred), then the reducer's,
 * `reduced`. In an MPI job the gradient's sum over the ranks then, checked. */
static clnet_status finish_gradients(const step_call *c, clnet_status reduced) {
    clnet_trainer *t = c->t;
    const clnet_model *m = t->model;
    clnet_status status = clnet_workers_wait_prefer(t->workers, t->step.first_failed);
    if (status == CLNET_OK) status = reduced;
    status = release_handover(t, status);
    if (!c->train || !t->ranks.dist) return status;
    for (int node = m->count - 1; status == CLNET_OK && !t->ranks.overlap && node >= 0;
         node--) /* CLNET_MPI_OVERLAP=0: only now */
        if (m->nodes[node].param_count) status = start_bucket(t, node);
    if (status == CLNET_OK) status = clnet_dist_buckets_finish(t->ranks.dist, c->step);
    for (int node = 0; status == CLNET_OK && t->step.bad_node < 0 && node < m->count; node++) {
        const clnet_node *nd = &m->nodes[node];
        if (clnet_first_nonfinite(t->step.grad_sum + nd->param_off, nd->param_count) <
            nd->param_count)
            t->step.bad_node = node;
    }
    return status;
}

/* The replicas' losses and correct answers added in device order into
 * c->sums (across ranks summed, every device's seconds and the outputs
 * shared); with train the balancer learns the shares' times. */
static clnet_status add_figures(step_call *c) {
    clnet_status status = CLNET_OK;
    clnet_trainer *t = c->t;
    double loss = 0;
    int correct = 0;
    for (int i = 0; i < t->count; i++) { /* fixed order */
        loss += t->step.loss[i];
        correct += t->step.correct[i];
    }
    if (t->ranks.dist)
        TRY(clnet_ranks_exchange_figures(&t->ranks, t->step.shares, &loss, &correct,
                                         t->step.seconds, c->probs,
                                         (int)clnet_model_outputs(t->model)));
    c->sums = (clnet_step_sums){.loss = loss, .correct = correct};
    if (c->train) clnet_balance_update(&t->split.balance, t->step.shares, t->step.seconds);
cleanup:
    return status;
}

/* Splits the batch, starts every replica with a share, and with train
 * reduces the gradients while they arrive; waits for all. */
static clnet_status run_all(step_call *c) {
    clnet_status status = start_shares(c);
    if (status == CLNET_OK) status = finish_gradients(c, reduce_all(c));
    return status == CLNET_OK ? add_figures(c) : status;
}

/* The next step's batch b split as that step will split it (as long as
 * this step's timings do not move the balancer): 1, or 0 where it cannot be
 * staged. No exchange between ranks here: a rank whose loader could not look
 * ahead does not come here, and the others must not wait for it. */
static int split_next(clnet_trainer *t, const clnet_batch *b, int64_t step, int *shares,
                      int *offsets) {
    return b->images && b->labels && b->n >= 1 && b->n <= t->max_batch &&
           clnet_split_batch(t, b->n, step, 1, 0, shares, offsets) == CLNET_OK;
}

/* Replica i's first micro-batch of b, split by shares and offsets, starts
 * on its way, unless it is already: 1 when this started it. Nothing here
 * fails a step: a device that could not take its share ahead copies it when
 * the step loads it. */
static int stage_share(clnet_trainer *t, int i, const clnet_batch *b, const int *shares,
                       const int *offsets) {
    clnet_replica *r = t->replicas[i];
    int share = shares[t->ranks.first + i], off = offsets[t->ranks.first + i];
    int first = share < r->max_batch ? share : r->max_batch;
    const float *images = b->images + (size_t)off * clnet_shape_size(t->model->input);
    const float *targets = b->targets ? b->targets + (size_t)off * r->target_size : NULL;
    if (share <= 0 || (r->staged.images == images && r->staged.labels == b->labels + off &&
                       r->staged.targets == targets && r->staged.n == first))
        return 0;
    return clnet_replica_stage(r, images, b->labels + off, targets, first) == CLNET_OK;
}

/* With the update by bucket, on replica i's worker once its share's kernels
 * are done: its share of the next batch starts on its way at once, queued
 * before the last of the new parameters, so that the next step's forward
 * pass finds its input there as soon as the step is committed. The first
 * replica to come asks the loader for the batch (prepared while this step
 * ran; a slow loader makes this worker wait, as the next step would) and
 * splits it, outside the step's lock; stage_next stages what this missed. */
static void stage_ahead(const step_call *c, int i) {
    clnet_trainer *t = c->t;
    const clnet_step_feed *feed = c->feed;
    if (!feed || !feed->next) return;
    pthread_mutex_lock(&t->step.lock);
    int first = t->feed.ahead < 0;
    if (first) t->feed.ahead = 2;
    while (!first && t->feed.ahead == 2) pthread_cond_wait(&t->step.changed, &t->step.lock);
    pthread_mutex_unlock(&t->step.lock);
    if (first) { /* the balancer moves only once the workers are done */
        int ahead = feed->next(feed->arg, &t->feed.batch, &t->feed.ticket) &&
                    split_next(t, &t->feed.batch, c->step + 1, t->feed.shares, t->feed.offsets);
        pthread_mutex_lock(&t->step.lock);
        t->feed.ahead = ahead;
        pthread_cond_broadcast(&t->step.changed);
        pthread_mutex_unlock(&t->step.lock);
    }
    if (t->feed.ahead == 1 && stage_share(t, i, &t->feed.batch, t->feed.shares, t->feed.offsets))
        t->replicas[i]->staged_ahead++;
}

/* The next step's batch, split as that step will split it: each device's
 * first micro-batch starts on its way while the devices finish this step's
 * update, where stage_ahead did not start it already (or split it
 * otherwise than this step's timings now do). */
static void stage_next(clnet_trainer *t, const clnet_step_feed *feed, int64_t step) {
    clnet_batch b = {0};
    uint64_t ticket = 0;
    t->feed.staged = 0;
    if (!feed || !feed->next || !feed->next(feed->arg, &b, &ticket) ||
        !split_next(t, &b, step, t->step.shares, t->step.offsets))
        return;
    for (int i = 0; i < t->count; i++) {
        if (t->feed.ahead > 0 && t->feed.ticket != ticket) clnet_replica_unstage(t->replicas[i]);
        if (t->alive[i]) (void)stage_share(t, i, &b, t->step.shares, t->step.offsets);
    }
    t->feed.staged = ticket;
}

/* The copies stage_next started read the caller's memory, which may be freed
 * once the step returns: waits for them where nothing else did (the
 * parameter broadcast blocks behind them; the update by bucket does not). A
 * device whose wait fails forgets its copy and fails at its next command. */
static void wait_staged(clnet_trainer *t) {
    for (int i = 0; t->feed.staged && i < t->count; i++) {
        clnet_replica *r = t->replicas[i];
        if (t->alive[i] && r->staged.images && clnet_finish(r->d) != CLNET_OK)
            clnet_replica_unstage(r);
    }
}

/* A step over another batch than the one staged: what was staged is stale,
 * even where its addresses are the batch's (a loader reuses its buffers). */
static void check_staged(clnet_trainer *t, const clnet_step_feed *feed) {
    uint64_t current = feed ? feed->current : 0;
    if (current && current == t->feed.staged) return;
    for (int i = 0; i < t->count; i++) clnet_replica_unstage(t->replicas[i]);
    t->feed.staged = 0;
}

/* After a failed step s, waits for every device's queue: copies made ahead
 * (stage_next) read the caller's memory, which may be freed once the step
 * returns. A wait that fails too is not recorded: s's message is the one to
 * read. A step that ends normally waits in wait_staged. */
static clnet_status settle(clnet_trainer *t, clnet_status s) {
    for (int i = 0; i < t->count; i++)
        if (t->alive[i]) (void)clnet_finish(t->replicas[i]->d); /* never a dropped one's */
    return s;
}

/* CLNET_ERR_NONFINITE when the step's loss or summed gradient is not finite. */
static clnet_status check_finite(const clnet_trainer *t, const clnet_model *m, double loss) {
    char what[512];
    if (!isfinite(loss))
        return clnet_fail(CLNET_ERR_NONFINITE, "the loss is %g: nothing of this step was applied",
                          loss);
    if (t->step.bad_node < 0) return CLNET_OK;
    const clnet_node *nd = &m->nodes[t->step.bad_node];
    size_t i = clnet_first_nonfinite(t->step.grad_sum + nd->param_off, nd->param_count);
    clnet_model_describe(m, 0, nd->param_off + i, what, sizeof what);
    return clnet_fail(CLNET_ERR_NONFINITE,
                      "the gradient of %s is %g (summed over the batch): nothing of this step "
                      "was applied",
                      what, t->step.grad_sum[nd->param_off + i]);
}

/* A training step that failed or is not applied: the buffers its forward
 * passes moved go back (the parameters on the devices never changed). s's
 * message stays the one to read. */
static clnet_status undo_buffers(clnet_trainer *t, clnet_status s) {
    for (int i = 0; t->step.started && i < t->count; i++)
        if (t->step.active[i] && t->alive[i]) (void)clnet_replica_restore_buffers(t->replicas[i]);
    return s;
}

/* Forward and backward on every replica's share, gradients summed and
 * checked; a device that fails is dropped (clnet_trainer_drop) and the
 * step done again on the others, as often as devices fail. */
static clnet_status run_train(step_call *c, const clnet_model *m) {
    clnet_trainer *t = c->t;
    for (int redo = 0;; redo++) {
        clnet_status s = run_all(c);
        if (s == CLNET_OK) s = check_finite(t, m, c->sums.loss);
        if (s == CLNET_OK) return s;
        int dropped =
            clnet_trainer_drop(t, t->step.first_failed, c->step, s); /* first: never waited on */
        s = undo_buffers(t, s);
        if (!dropped) {
            if (redo) clnet_error_context(s, "on the devices left after a failure");
            return settle(t, s);
        }
        settle(t, s);
    }
}

/* The update made bucket by bucket (update_node) becomes the current one:
 * on the host, in the optimizer and on every device. Every node's update is
 * in `next` (the workers waited for each), so the host's two copies swap
 * roles, as the devices' buffers do: nothing is copied. The master copy's
 * address moves with it (clnet_net_params is valid until the next step). */
static void commit(clnet_trainer *t, clnet_model *m, clnet_optim *o) {
    float *old = m->params;
    m->params = t->step.next;
    t->step.next = old;
    clnet_optim_commit_next(o);
    for (int i = 0; i < t->count; i++)
        if (t->alive[i]) clnet_replica_take_next(t->replicas[i]);
}

clnet_status clnet_step_train(clnet_trainer *t, clnet_model *m, clnet_optim *o,
                              const clnet_batch *b, const clnet_step_feed *feed,
                              clnet_step_sums *sums) {
    /* MPI: the sum over the ranks comes last; clipping needs the whole gradient's norm */
    int by_bucket = t->by_bucket && !(o->config.clip_grad_norm > 0);
    step_call c = {.t = t,
                   .step = o->step,
                   .batch = b,
                   .train = 1,
                   .optim = by_bucket ? o : NULL,
                   .params = m->params,
                   .feed = feed};
    clnet_status s = t->ranks.dist ? clnet_dist_begin_step(t->ranks.dist, o->step) : CLNET_OK;
    check_staged(t, feed);
    if (s == CLNET_OK) s = run_train(&c, m);
    *sums = c.sums;
    if (s != CLNET_OK) return s;
    stage_next(t, feed, o->step + 1);
    o->grad_norm = 0;
    size_t bad = by_bucket ? t->step.bad_update
                           : clnet_optim_apply(o, m->params, t->step.grad_sum, m->nparams, b->n);
    if (bad < m->nparams) {
        char what[512];
        clnet_model_describe(m, 0, bad, what, sizeof what);
        s = clnet_fail(CLNET_ERR_NONFINITE,
                       "the update would make %s or its optimizer state NaN or infinite (the "
                       "gradient is finite: the learning rate is too large for it); nothing of "
                       "this step was applied",
                       what);
        return settle(t, undo_buffers(t, s));
    }
    /* idle replicas' buffers follow only once the step is sure to be applied */
    if ((s = clnet_broadcast_to_idle(t, m, t->step.active)) != CLNET_OK)
        return settle(t, undo_buffers(t, s));
    if (by_bucket) {
        commit(t, m, o);
        wait_staged(t);
    }
    clnet_model_count_step(m);
    /* the step is applied: a device that fails to take the new parameters
     * is dropped, or fails the step (the host holds them: a resume has them) */
    while (!by_bucket && (s = clnet_broadcast(t, m, 0)) != CLNET_OK &&
           clnet_trainer_drop(t, clnet_workers_failed(t->workers), o->step - 1, s))
        ;
    for (int i = 0; s == CLNET_OK && i < t->count; i++) /* CLNET_FAULT=I:S:drift */
        if (t->alive[i] &&
            clnet_fault(&t->split.faults, t->ranks.first + i, o->step - 1, CLNET_FAULT_DRIFT)) {
            float changed = m->params[0] + 1.0f;
            s = clnet_buffer_write(t->replicas[i]->d, t->replicas[i]->params, 0, 1, &changed);
        }
    return s == CLNET_OK ? s : settle(t, s);
}

clnet_status clnet_step_forward(clnet_trainer *t, int64_t step, const clnet_batch *b, float *probs,
                                clnet_step_sums *sums) {
    step_call c = {.t = t, .step = step, .batch = b, .probs = probs};
    clnet_status s = run_all(&c);
    if (s == CLNET_OK && sums) *sums = c.sums;
    return s;
}

clnet_status clnet_step_logits(clnet_trainer *t, int64_t step, const float *images, int n,
                               float *logits) {
    clnet_batch b = {.images = images, .n = n};
    step_call c = {.t = t, .step = step, .batch = &b, .probs = logits, .logits = 1};
    return run_all(&c);
}
