/* Planning a replica's memory by liveness (see plan.h). */
#include "plan.h"
#include "alloc.h"
#include "error.h"
#include "fusion.h"
#include "guard.h"

#include <stdlib.h>
#include <string.h>

/* Per-sample offsets are aligned to this many floats (64 bytes). */
#define ALIGN 16

void clnet_plan_release(clnet_plan *p) {
    free(p->y), free(p->dy), free(p->backward), free(p->keep);
    free(p->need_dx), free(p->dx_beta);
    memset(p, 0, sizeof *p);
}

/* A tensor to place: its size per sample and its life [first, last]. */
typedef struct {
    size_t size, offset;
    int first, last;
} span;

static void widen(span *s, int t) {
    if (t < s->first) s->first = t;
    if (t > s->last) s->last = t;
}

/* First fit: each tensor (in order of birth) takes the lowest offset where
 * it overlaps no placed tensor that is alive at the same time. Returns the
 * arena size per sample. */
static size_t place(span *s, int count) {
    size_t total = 0;
    int *order = clnet_malloc((size_t)(count + 1) * sizeof *order);
    if (!order) return (size_t)-1;
    for (int i = 0; i < count; i++) order[i] = i;
    for (int i = 1; i < count; i++) /* by birth; insertion sort keeps it stable */
        for (int j = i; j > 0 && s[order[j - 1]].first > s[order[j]].first; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int a = 0; a < count; a++) {
        span *me = &s[order[a]];
        if (me->size == 0) continue;
        size_t at = 0;
        for (int moved = 1; moved;) { /* bump past every overlapping, live tensor */
            moved = 0;
            for (int b = 0; b < a; b++) {
                const span *o = &s[order[b]];
                if (o->size == 0 || o->last < me->first || o->first > me->last) continue;
                if (at < o->offset + o->size && o->offset < at + me->size) {
                    at = o->offset + o->size;
                    moved = 1;
                }
            }
        }
        me->offset = at;
        if (at + me->size > total) total = at + me->size;
    }
    free(order);
    return total;
}

static size_t aligned(size_t n) {
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

size_t clnet_plan_span(const clnet_plan *p, size_t size) {
    return aligned(size) + p->guard;
}

size_t clnet_plan_largest(clnet_size_fn size, const clnet_node *node, const clnet_device *d,
                          int batch) {
    size_t most = 0;
    for (int n = 1; size && n <= batch; n++) {
        size_t v = size(node, d, n);
        if (v > most) most = v;
    }
    return most;
}

size_t clnet_plan_work(const clnet_model *m, const clnet_device *d, int batch) {
    size_t most = 0;
    for (int i = 0; i < m->count; i++) {
        size_t work = clnet_plan_largest(m->nodes[i].kind->work_floats, &m->nodes[i], d, batch);
        if (work > most) most = work;
    }
    return most;
}

#define TENSOR(from) ((from) == CLNET_MODEL_INPUT ? N : (from))

/* Scratch for planning: per tensor (N nodes, then the model's input). */
typedef struct {
    int *root;        /* the tensor owning its memory (a view's is its input's) */
    int *grad;        /* 1: it needs a gradient */
    int *written;     /* 1: its gradient has a writer so far */
    span *act, *dact; /* lives and places in the two arenas */
} planning;

/* Which tensors need gradients: those with a parameter at or above them;
 * and which nodes run a backward pass. */
static void mark_gradients(clnet_plan *p, const clnet_model *m, planning *w) {
    const int N = m->count;
    w->root[N] = N; /* before the nodes: a view may read the model's input */
    for (int i = 0; i < N; i++) {
        const clnet_node *node = &m->nodes[i];
        w->root[i] = node->kind->is_view ? w->root[TENSOR(node->inputs[0])] : i;
        int any = node->param_count > 0;
        for (int k = 0; k < node->ninputs; k++) {
            int need = node->inputs[k] != CLNET_MODEL_INPUT && w->grad[node->inputs[k]];
            p->need_dx[i * CLNET_MAX_INPUTS + k] = need;
            any |= need;
        }
        w->grad[i] = any;
        p->backward[i] = any && node->kind->backward != NULL; /* not views, not the loss */
    }
}

/* Activations live from the forward that writes them to the last pass that
 * reads them; the loss's output (the probabilities) to the end. A batch
 * norm folded into a convolution (clnet_fusion_fold) has its output written by
 * the convolution in evaluation. */
static void activation_lives(const clnet_plan *p, const clnet_model *m, planning *w) {
    const int N = m->count;
    span *act = w->act;
    for (int t = 0; t <= N; t++) act[t].first = act[t].last = -1;
    act[N] = (span){clnet_shape_size(m->input), 0, -1, -1};
    for (int i = 0; i < N; i++) {
        const clnet_node *node = &m->nodes[i];
        int r = w->root[i], back = 2 * N - 1 - i;
        if (r == i) act[i] = (span){clnet_shape_size(node->out), 0, i, i};
        widen(&act[r], i);
        if (node->kind->is_loss) widen(&act[r], 2 * N);
        int reads = node->kind->backward_reads;
        if (reads & CLNET_READS_Y_RELU && clnet_fusion_relu(m->fusion, i)) reads |= CLNET_READS_Y;
        if (p->backward[i] && (reads & CLNET_READS_Y)) widen(&act[r], back);
        for (int k = 0; k < node->ninputs; k++) {
            int in = w->root[TENSOR(node->inputs[k])];
            widen(&act[in], i);
            if (p->backward[i] && (node->kind->backward_reads & CLNET_READS_X))
                widen(&act[in], back);
        }
    }
    for (int i = 0; i < N; i++) { /* a folded batch norm's output is written by its convolution */
        int bn = clnet_fusion_fold(m->fusion, i), add = clnet_fusion_normalizer(m->fusion, i);
        if (bn >= 0) widen(&act[w->root[bn]], i);
        if (add >= 0 && p->backward[i]) /* its backward reads the add's output */
            widen(&act[w->root[add]], 2 * N - 1 - i);
    }
}

/* Gradients live from the first pass that writes one (the loss writes its
 * input's during the forward pass; others in backward order) to the
 * producer's backward pass, which reads it. Writers in pass order decide who
 * overwrites and who adds. */
static void gradient_lives(clnet_plan *p, const clnet_model *m, planning *w) {
    const int N = m->count;
    span *dact = w->dact;
    for (int t = 0; t <= N; t++) dact[t].first = dact[t].last = -1;
    for (int i = N - 1; i >= 0; i--) {
        const clnet_node *node = &m->nodes[i];
        int back = node->kind->is_loss ? i : 2 * N - 1 - i;
        if (node->kind->is_view) continue; /* its readers write its input's gradient */
        for (int k = 0; k < node->ninputs; k++) {
            if (!p->need_dx[i * CLNET_MAX_INPUTS + k]) continue;
            int in = w->root[TENSOR(node->inputs[k])];
            p->dx_beta[i * CLNET_MAX_INPUTS + k] = w->written[in] ? 1.0f : 0.0f;
            w->written[in] = 1;
            if (dact[in].first < 0) dact[in] = (span){w->act[in].size, 0, back, back};
            widen(&dact[in], back);
        }
        if (p->backward[i]) widen(&dact[w->root[i]], 2 * N - 1 - i);
    }
    for (int i = 0; i < N; i++) { /* a batch norm left to its add reads the add's gradient */
        int add = clnet_fusion_normalizer(m->fusion, i);
        if (add >= 0 && p->backward[i] && dact[w->root[add]].first >= 0)
            widen(&dact[w->root[add]], 2 * N - 1 - i);
    }
}

/* Places both arenas and gives each node its offsets, kept memory and the
 * scratch they share. */
static clnet_status place_all(clnet_plan *p, const clnet_model *m, const clnet_device *d,
                              planning *w) {
    const int N = m->count, T = N + 1;
    const size_t B = (size_t)p->batch;
    for (int t = 0; t < T; t++) {
        w->act[t].size = clnet_plan_span(p, w->act[t].size);
        w->dact[t].size = w->dact[t].first < 0 ? 0 : clnet_plan_span(p, w->dact[t].size);
        if (w->root[t] != t) w->act[t].size = w->dact[t].size = 0; /* a view: with its root */
    }
    p->act = place(w->act, T);
    p->dact = place(w->dact, T);
    if (p->act == (size_t)-1 || p->dact == (size_t)-1)
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory planning the model");
    p->act *= B;
    p->dact *= B;
    p->input = w->act[N].offset * B;
    for (int i = 0; i < N; i++) {
        p->y[i] = w->act[w->root[i]].offset * B;
        p->dy[i] = w->dact[w->root[i]].offset * B;
    }
    /* Kept memory and scratch take a pass over every batch size up to this
     * one (seconds at a batch of millions): not for a batch whose arenas
     * alone exceed the device, which clnet_replica_create refuses anyway
     * (at batch 1 they are sized, for the message that says what is needed). */
    if (d && p->batch > 1 &&
        (uint64_t)(p->act + p->dact) * sizeof(float) > d->info.global_mem_bytes)
        return CLNET_OK;
    for (int i = 0; i < N; i++) {
        const clnet_node *node = &m->nodes[i];
        p->keep[i] = clnet_plan_largest(node->kind->keep_floats, node, d, p->batch);
        p->keep_total += aligned(p->keep[i]);
    }
    p->work = clnet_plan_work(m, d, p->batch);
    return CLNET_OK;
}
#undef TENSOR

clnet_status clnet_plan_make(clnet_plan *p, const clnet_model *m, const clnet_device *d,
                             int batch) {
    clnet_status status = CLNET_OK;
    const int N = m->count, T = N + 1; /* tensor N is the model's input */
    memset(p, 0, sizeof *p);
    p->nodes = N;
    p->batch = batch;
    p->guard = clnet_guard_on(d) ? ALIGN : 0;
    p->y = clnet_calloc((size_t)N + 1, sizeof *p->y);
    p->keep = clnet_calloc((size_t)N + 1, sizeof *p->keep);
    p->dy = clnet_calloc((size_t)N + 1, sizeof *p->dy);
    p->backward = clnet_calloc((size_t)N + 1, sizeof *p->backward);
    p->need_dx = clnet_calloc((size_t)N * CLNET_MAX_INPUTS + 1, sizeof *p->need_dx);
    p->dx_beta = clnet_calloc((size_t)N * CLNET_MAX_INPUTS + 1, sizeof *p->dx_beta);
    planning w = {
        .root = clnet_calloc((size_t)T, sizeof *w.root),
        .grad = clnet_calloc((size_t)T, sizeof *w.grad),
        .written = clnet_calloc((size_t)T, sizeof *w.written),
        .act = clnet_calloc((size_t)T, sizeof *w.act),
        .dact = clnet_calloc((size_t)T, sizeof *w.dact),
    };
    if (!p->y || !p->dy || !p->keep || !p->backward || !p->need_dx || !p->dx_beta || !w.root ||
        !w.grad || !w.written || !w.act || !w.dact)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory planning the model");
    mark_gradients(p, m, &w);
    activation_lives(p, m, &w);
    gradient_lives(p, m, &w);
    TRY(place_all(p, m, d, &w));
cleanup:
    free(w.root), free(w.grad), free(w.written), free(w.act), free(w.dact);
    if (status != CLNET_OK) clnet_plan_release(p);
    return status;
}
