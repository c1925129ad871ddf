/* Dropout (cl/dropout.cl): in training, each element is zeroed with
 * probability p and the rest scaled by 1 / (1 - p); in evaluation it is the
 * identity. The mask is a hash of (seed, step, the sample's index in the
 * global batch, the element), so N devices draw exactly the mask one device
 * draws, whatever the split, and nothing is stored for backward. */
#include "elementwise.h"
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    float p;
    int seed; /* mixed with the layer's name, so layers draw apart */
    uint32_t key;
} dropout_config;

static const clnet_option options[] = {
    {.name = "p",
     .type = CLNET_OPT_FLOAT,
     .at = offsetof(dropout_config, p),
     .max = 1,
     .range = "a probability, 0 to 1",
     .value = "0.5",
     .help = "the probability that an element is zeroed in training"},
    {.name = "seed",
     .type = CLNET_OPT_INT,
     .at = offsetof(dropout_config, seed),
     .value = "0",
     .help = "mixed with the layer's name into the mask's hash"},
    {0},
};

static clnet_status setup(clnet_node *node) {
    dropout_config *c = CLNET_CONFIG(node, dropout_config);
    uint32_t h = 2166136261u; /* FNV-1a of the name, with the seed */
    for (const char *s = node->name; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    c->key = h ^ (uint32_t)c->seed;
    node->out = node->in[0];
    return CLNET_OK;
}

/* The mask applied to (n, size) at (t, in) into (t, out): forward's y, or,
 * the same map, backward's dx (overwritten, or added to with add = 1). */
static clnet_status apply(const clnet_node *node, const clnet_pass *p, int slot, uint32_t add,
                          cl_mem t, size_t in, size_t out) {
    const dropout_config *c = CLNET_CONFIG(node, dropout_config);
    size_t size = clnet_shape_size(node->out);
    return clnet_pass_run(
        p, slot, KERNEL("dropout", "", "dropout_apply"), 2, (size_t[]){size, (size_t)p->n}, NULL,
        ARGS(U32(p->n), U32(size), MEM(t), U32(in), MEM(t), U32(out), F32(c->p),
             F32(c->p < 1 ? 1.0f / (1.0f - c->p) : 0.0f), U32(c->key), U32((uint32_t)p->ctx->step),
             U32((uint32_t)p->ctx->first_sample), U32(add)));
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    size_t size = clnet_shape_size(node->out);
    if (!p->ctx->train) /* evaluation: the identity */
        return clnet_copy_rows(p->d, clnet_pass_kept(p, 2), 1, (size_t)p->n * size,
                               (clnet_matrix){p->act, p->x[0], 0}, (clnet_matrix){p->act, p->y, 0},
                               0.0f);
    return apply(node, p, 0, 0, p->act, p->x[0], p->y);
}

static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    if (!p->need_dx[0]) return CLNET_OK;
    return apply(node, p, 1, clnet_dx_add(p, 0), p->dact, p->dy, p->dx[0]);
}

const clnet_kind clnet_dropout_kind = {
    .name = "dropout",
    .about =
        "In training each element is zeroed with probability p and the rest scaled by 1/(1-p); in"
        " evaluation the identity. The mask is a hash of the seed, the layer's name, the step, "
        "the sample's index in the global batch and the element, so N devices draw the mask one "
        "device draws, whatever the split, and nothing is kept for backward.",
    .options = options,
    .min_inputs = 1,
    .max_inputs = 1,
    .config_size = sizeof(dropout_config),
    .setup = setup,
    .forward = forward,
    .backward = backward,
};
