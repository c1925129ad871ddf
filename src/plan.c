/* Planning a replica's memory by liveness (see plan.h). */
#include "plan.h"
#include "alloc.h"
#include "error.h"
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

size_t clnet_plan_largest(size_t (*size)(const clnet_node *, int), const clnet_node *node,
                          int batch) {
    size_t most = 0;
    for (int n = 1; size && n <= batch; n++) {
        size_t v = size(node, n);
        if (v > most) most = v;
    }
    return most;
}

clnet_status clnet_plan_make(clnet_plan *p, const clnet_model *m, int batch) {
    clnet_status status = CLNET_OK;
    const int N = m->count, T = N + 1; /* tensor N is the model's input */
    const size_t B = (size_t)batch;
    memset(p, 0, sizeof *p);
    p->nodes = N;
    p->batch = batch;
    p->guard = clnet_guard_on() ? ALIGN : 0;
    p->y = clnet_calloc((size_t)N + 1, sizeof *p->y);
    p->keep = clnet_calloc((size_t)N + 1, sizeof *p->keep);
    p->dy = clnet_calloc((size_t)N + 1, sizeof *p->dy);
    p->backward = clnet_calloc((size_t)N + 1, sizeof *p->backward);
    p->need_dx = clnet_calloc((size_t)N * CLNET_MAX_INPUTS + 1, sizeof *p->need_dx);
    p->dx_beta = clnet_calloc((size_t)N * CLNET_MAX_INPUTS + 1, sizeof *p->dx_beta);
    int *root = clnet_calloc((size_t)T, sizeof *root); /* tensor -> the tensor owning its memory */
    int *grad = clnet_calloc((size_t)T, sizeof *grad); /* tensor needs a gradient */
    int *written = clnet_calloc((size_t)T, sizeof *written); /* its gradient has a writer so far */
    span *act = clnet_calloc((size_t)T, sizeof *act), *dact = clnet_calloc((size_t)T, sizeof *dact);
    if (!p->y || !p->dy || !p->keep || !p->backward || !p->need_dx || !p->dx_beta || !root ||
        !grad || !written || !act || !dact)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory planning the model");

#define TENSOR(from) ((from) == CLNET_MODEL_INPUT ? N : (from))
    /* Which tensors need gradients: those with a parameter at or above them. */
    root[N] = N; /* before the nodes: a view may read the model's input */
    for (int i = 0; i < N; i++) {
        const clnet_node *node = &m->nodes[i];
        root[i] = node->kind->is_view ? root[TENSOR(node->inputs[0])] : i;
        int any = node->param_count > 0;
        for (int k = 0; k < node->ninputs; k++) {
            int need = node->inputs[k] != CLNET_MODEL_INPUT && grad[node->inputs[k]];
            p->need_dx[i * CLNET_MAX_INPUTS + k] = need;
            any |= need;
        }
        grad[i] = any;
        p->backward[i] = any && node->kind->backward != NULL; /* not views, not the loss */
    }

    /* Lives. Activations: from the forward that writes them to the last
     * pass that reads them; the loss's output (the probabilities) to the end. */
    for (int t = 0; t < T; t++) act[t].first = act[t].last = dact[t].first = dact[t].last = -1;
    act[N] = (span){clnet_shape_size(m->input), 0, -1, -1};
    for (int i = 0; i < N; i++) {
        const clnet_node *node = &m->nodes[i];
        int r = root[i], back = 2 * N - 1 - i;
        if (r == i) act[i] = (span){clnet_shape_size(node->out), 0, i, i};
        widen(&act[r], i);
        if (node->kind->is_loss) widen(&act[r], 2 * N);
        if (p->backward[i] && (node->kind->backward_reads & CLNET_READS_Y)) widen(&act[r], back);
        for (int k = 0; k < node->ninputs; k++) {
            int in = root[TENSOR(node->inputs[k])];
            widen(&act[in], i);
            if (p->backward[i] && (node->kind->backward_reads & CLNET_READS_X))
                widen(&act[in], back);
        }
    }
    /* Gradients: from the first pass that writes one (the loss writes its
     * input's during the forward pass; others in backward order) to the
     * producer's backward pass, which reads it. Writers in pass order decide
     * who overwrites and who adds. */
    for (int i = N - 1; i >= 0; i--) {
        const clnet_node *node = &m->nodes[i];
        int back = node->kind->is_loss ? i : 2 * N - 1 - i;
        if (node->kind->is_view) continue; /* its readers write its input's gradient */
        for (int k = 0; k < node->ninputs; k++) {
            if (!p->need_dx[i * CLNET_MAX_INPUTS + k]) continue;
            int in = root[TENSOR(node->inputs[k])];
            p->dx_beta[i * CLNET_MAX_INPUTS + k] = written[in] ? 1.0f : 0.0f;
            written[in] = 1;
            if (dact[in].first < 0) dact[in] = (span){act[in].size, 0, back, back};
            widen(&dact[in], back);
        }
        if (p->backward[i]) widen(&dact[root[i]], 2 * N - 1 - i);
    }
    for (int t = 0; t < T; t++) {
        act[t].size = clnet_plan_span(p, act[t].size);
        dact[t].size = dact[t].first < 0 ? 0 : clnet_plan_span(p, dact[t].size);
        if (root[t] != t) act[t].size = dact[t].size = 0; /* a view: planned with its root */
    }
    p->act = place(act, T);
    p->dact = place(dact, T);
    if (p->act == (size_t)-1 || p->dact == (size_t)-1)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory planning the model");
    p->act *= B;
    p->dact *= B;
    p->input = act[N].offset * B;
    for (int i = 0; i < N; i++) {
        const clnet_node *node = &m->nodes[i];
        p->y[i] = act[root[i]].offset * B;
        p->dy[i] = dact[root[i]].offset * B;
        p->keep[i] = clnet_plan_largest(node->kind->keep_floats, node, batch);
        p->keep_total += aligned(p->keep[i]);
        size_t w = clnet_plan_largest(node->kind->work_floats, node, batch);
        if (w > p->work) p->work = w;
    }
#undef TENSOR
cleanup:
    free(root), free(grad), free(written), free(act), free(dact);
    if (status != CLNET_OK) clnet_plan_release(p);
    return status;
}
