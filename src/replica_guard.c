/* A replica's pass run under the memory guards (CLNET_GUARD, guard.h): the
 * regions a pass must leave alone, filled before it and checked after, with
 * every buffer's own guard. replica.h declares clnet_replica_guarded. */
#include "replica.h"
#include "error.h"
#include "guard.h"

#include <stdio.h>

/* Adds the region of a tensor of `size` floats per sample at `at` in mem
 * that a pass over n samples must leave alone: past its n samples to the
 * end of its guard. */
static void tensor_tail(const clnet_replica *r, clnet_guard_region *g, int *count, cl_mem mem,
                        size_t at, size_t size, int n, const char *what) {
    size_t end = at + clnet_plan_span(&r->plan, size) * (size_t)r->max_batch;
    g[(*count)++] = (clnet_guard_region){mem, at, at + size * (size_t)n, end, what};
}

static const char *const input_names[CLNET_MAX_INPUTS] = {
    "input 0's gradient", "input 1's gradient", "input 2's gradient", "input 3's gradient",
    "input 4's gradient", "input 5's gradient", "input 6's gradient", "input 7's gradient"};

/* The regions pass p of node i writes, past what it may use of them:
 * its output (forward), its inputs' gradients (backward, and the loss's
 * forward), its kept memory, the scratch, the loss's per-sample results. */
static int pass_tails(const clnet_replica *r, const clnet_node *node, const clnet_pass *p,
                      int finishing, clnet_guard_region *g) {
    int count = 0;
    size_t n = (size_t)p->n;
    if (!p->backward && !node->kind->is_view)
        tensor_tail(r, g, &count, r->act, p->y, clnet_shape_size(node->out), p->n, "its output");
    /* a backward pass that may leave its exchange on its way writes the
     * input gradients when it finishes, and its guards are filled then: a
     * start runs earlier than the plan's order, when that memory may still
     * be another pass's; the weight gradient part writes none either */
    int dx = !p->backward || (!p->later && p->part != CLNET_PART_DW) || finishing;
    for (int k = 0; k < node->ninputs && dx; k++)
        if (p->need_dx[k] && (p->backward || (node->kind->is_loss && p->want_grad)))
            tensor_tail(r, g, &count, r->dact, p->dx[k], clnet_shape_size(node->in[k]), p->n,
                        input_names[k]);
    if (p->keep && !p->backward) {
        size_t keep = node->kind->keep_floats ? node->kind->keep_floats(node, r->d, p->n) : 0;
        g[count++] = (clnet_guard_region){p->keep, 0, keep, p->keep_cap, "its kept memory"};
    }
    size_t work = node->kind->work_floats ? node->kind->work_floats(node, r->d, p->n) : 0;
    g[count++] = (clnet_guard_region){r->work, 0, work, p->work_cap, "the scratch"};
    if (node->kind->is_loss && !p->backward) {
        size_t B = (size_t)r->max_batch;
        g[count++] = (clnet_guard_region){r->loss, 0, n, B, "the per-sample losses"};
        g[count++] = (clnet_guard_region){r->correct, 0, n, B, "the per-sample answers"};
    }
    return count;
}

/* Every buffer's own guard: the replica's and the device's scratch, after
 * the *count regions of g there are. */
static clnet_status buffer_tails(const clnet_replica *r, clnet_guard_region *g, int *count) {
    clnet_status status = CLNET_OK;
    const struct {
        cl_mem mem;
        const char *what;
    } own[] = {{r->params, "the parameters"},
               {r->grads, "the gradients"},
               {r->buffers, "the buffers"},
               {r->act, "the activation arena"},
               {r->dact, "the gradient arena"},
               {r->work, "the scratch"},
               {r->labels, "the labels"},
               {r->targets, "the targets"},
               {r->loss, "the per-sample losses"},
               {r->correct, "the per-sample answers"},
               {r->d->scratch, "the device's reduction scratch"},
               {r->folded, "the folded parameters"}};
    for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
        if (own[k].mem) TRY(clnet_guard_tail(own[k].mem, own[k].what, &g[(*count)++]));
    for (int i = 0; i < r->model->count; i++)
        if (r->keeps[i])
            TRY(clnet_guard_tail(r->keeps[i], "a layer's kept memory", &g[(*count)++]));
cleanup:
    return status;
}

clnet_status clnet_replica_guarded(clnet_replica *r,
                                   clnet_status (*fn)(const clnet_node *, const clnet_pass *),
                                   const clnet_node *node, const clnet_pass *p) {
    clnet_status status = CLNET_OK;
    size_t work = node->kind->work_floats ? node->kind->work_floats(node, r->d, p->n) : 0;
    size_t keep = node->kind->keep_floats ? node->kind->keep_floats(node, r->d, p->n) : 0;
    TRY(clnet_pass_uses(node, p, work, keep));
    if (p->ctx->train && !p->backward) r->state++; /* batch norm moves its running statistics */
    if (!r->guards) return fn(node, p);
    int count = pass_tails(r, node, p, fn == node->kind->finish, r->guards);
    TRY(clnet_guard_fill(r->d, r->guards, count));
    TRY(fn(node, p));
    TRY(buffer_tails(r, r->guards, &count));
    char where[CLNET_NAME_CAP + 96];
    snprintf(where, sizeof where, "the %s pass of layer '%s' (%s) over %d samples",
             p->backward ? "backward" : "forward", node->name, node->kind->name, p->n);
    TRY(clnet_guard_check(r->d, r->guards, count, where));
cleanup:
    return status;
}
