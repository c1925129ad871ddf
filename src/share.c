/* A replica's share of a batch, in micro-batches when it exceeds what
 * the replica holds: the one loop under the synchronous step (step.c) and
 * the parameter server's devices (async.c). Every micro-batch after the
 * first adds its gradients into the first's, so the replica ends with the
 * sum over the whole share, as one pass would give it. */
#include "share.h"
#include "error.h"

clnet_status clnet_share_run(clnet_replica *r, clnet_ctx *ctx, const clnet_share *s, double *loss,
                             int *correct) {
    clnet_status status = CLNET_OK;
    const clnet_model *m = r->model;
    size_t in = clnet_shape_size(m->input), outputs = clnet_model_outputs(m);
    for (int done = 0; done < s->n; done += r->max_batch) {
        int n = s->n - done < r->max_batch ? s->n - done : r->max_batch;
        int last = done + n >= s->n;
        const int32_t *labels = s->labels ? s->labels + done : NULL;
        const float *targets = s->targets ? s->targets + (size_t)done * r->target_size : NULL;
        double l = 0;
        int c = 0;
        ctx->first_sample = s->first + done;
        TRY(clnet_replica_load(r, s->images + (size_t)done * in, labels, targets, n));
        TRY(clnet_replica_forward(r, ctx, n));
        if (s->fault_after_forward) {
            CL_CHECK(clnet_finish(r->d), "clFinish");
            FAIL(CLNET_ERR_OPENCL,
                 "injected fault (CLNET_FAULT) after the forward pass of step %lld",
                 (long long)ctx->step);
        }
        for (int node = ctx->train ? m->count - 1 : -1; node >= 0; node--) {
            TRY(clnet_replica_backward_node(r, ctx, n, node, done > 0));
            if (last && s->node_done && m->nodes[node].param_count) TRY(s->node_done(s->arg, node));
        }
        TRY(clnet_replica_results(r, n, labels || targets, &l, &c,
                                  s->probs ? s->probs + (size_t)done * outputs : NULL, s->logits));
        *loss += l;
        *correct += c;
    }
cleanup:
    return status;
}
