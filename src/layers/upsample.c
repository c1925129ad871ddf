/* Upsampling by whole factors (cl/upsample.cl), PyTorch's nn.Upsample with an
 * integer scale_factor, over the input's 1, 2 or 3 spatial axes:
 * x (n, C, spatial...) -> y (n, C, spatial * scale...). No parameters. */
#include "elementwise.h"
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>

enum { UPSAMPLE_NEAREST = 0, UPSAMPLE_LINEAR = 1 };

typedef struct {
    int scale[3], nscale; /* as given: 1 value (every axis) or one per axis */
    int mode;             /* UPSAMPLE_* */
    int s[3];             /* set by setup: the factor on each of (depth, height, width) */
} upsample_config;

static const clnet_choice modes[] = {
    {"nearest", UPSAMPLE_NEAREST},
    {"linear", UPSAMPLE_LINEAR},
    {NULL, 0},
};

static const clnet_option options[] = {
    {.name = "scale",
     .type = CLNET_OPT_LIST,
     .at = offsetof(upsample_config, scale),
     .count_at = offsetof(upsample_config, nscale),
     .min = 1,
     .value = "2",
     .help = "the factor each spatial axis grows by"},
    {.name = "mode",
     .type = CLNET_OPT_CHOICE,
     .at = offsetof(upsample_config, mode),
     .choices = modes,
     .value = "nearest",
     .help = "nearest: copies of each cell; linear: (bi/tri)linear, align_corners=False"},
    {0},
};

static clnet_status setup(clnet_node *node) {
    clnet_status status = CLNET_OK;
    upsample_config *c = CLNET_CONFIG(node, upsample_config);
    clnet_shape in = node->in[0];
    if (in.ndim < 1) return clnet_node_fail(node, "takes inputs with 1 to 3 spatial axes");
    TRY(clnet_node_dims(node, "scale", c->scale, c->nscale, 1, c->s));
    node->out = in;
    for (int i = 0; i < in.ndim; i++) {
        /* kernels index with 32 bits: keep every output well inside them */
        long long size = (long long)in.dim[i] * c->s[3 - in.ndim + i];
        if (size > (1 << 24))
            return clnet_node_fail(node, "scale=%d makes an axis of %lld cells",
                                   c->s[3 - in.ndim + i], size);
        node->out.dim[i] = (int)size;
    }
cleanup:
    return status;
}

/* Runs kernel `name` (slot `slot`) over (width, height, plane * depth) of
 * the output (forward) or of the input (backward). Every upsample kernel
 * takes the planes, the input's (D, H, W), the factors and the mode first. */
static clnet_status run(const clnet_node *node, const clnet_pass *p, int slot, const char *name,
                        int backward, clnet_place a, clnet_place b, int add) {
    const upsample_config *c = CLNET_CONFIG(node, upsample_config);
    clnet_shape in = node->in[0];
    int dhw[3];
    clnet_axes(in.ndim, in.dim, 1, dhw);
    size_t planes = (size_t)p->n * (size_t)in.c, range[3];
    for (int a = 0; a < 3; a++) range[2 - a] = (size_t)dhw[a] * (backward ? 1 : (size_t)c->s[a]);
    range[2] *= planes;
    clnet_arg head[] = {U32(planes),  U32(dhw[0]),  U32(dhw[1]),  U32(dhw[2]), U32(c->s[0]),
                        U32(c->s[1]), U32(c->s[2]), U32(c->mode), MEM(a.mem),  U32(a.off),
                        MEM(b.mem),   U32(b.off),   U32(add)};
    return clnet_pass_run(p, slot, KERNEL("upsample", "", name), 3, range, NULL, head,
                          backward ? 13 : 12);
}

static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    return run(node, p, 0, "upsample_forward", 0, (clnet_place){p->act, p->x[0]},
               (clnet_place){p->act, p->y}, 0);
}

/* reads neither x nor y: the weights depend on positions alone */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    if (!p->need_dx[0]) return CLNET_OK;
    return run(node, p, 1, "upsample_backward", 1, (clnet_place){p->dact, p->dy},
               (clnet_place){p->dact, p->dx[0]}, clnet_dx_add(p, 0));
}

const clnet_kind clnet_upsample_kind = {
    .name = "upsample",
    .stem = "up",
    .about = "Each spatial axis grown by a whole factor, per channel, over the input's 1, 2 or 3 "
             "spatial axes (PyTorch's nn.Upsample with an integer scale_factor): "
             "(C, H, W) -> (C, H*sh, W*sw). mode=nearest copies each cell; mode=linear "
             "interpolates (linear, bilinear, trilinear) with align_corners=False. No "
             "parameters; backward gathers each input's gradient in a fixed order, so it "
             "is the same on every run.",
    .options = options,
    .min_inputs = 1,
    .max_inputs = 1,
    .config_size = sizeof(upsample_config),
    .setup = setup,
    .forward = forward,
    .backward = backward,
};
