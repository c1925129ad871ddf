/* The layer registry and helpers shared by the layer files. */
#include "error.h"
#include "layer.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The registry: every kind of CLNET_BUILTIN_KINDS (layer.h), in its order. */
#define CLNET_KIND_ENTRY(id) &clnet_##id##_kind,
static const clnet_kind *const builtin[] = {CLNET_BUILTIN_KINDS(CLNET_KIND_ENTRY)};
#define BUILTIN (sizeof builtin / sizeof builtin[0])

/* Kinds added at run time. */
#define EXTRA_CAP 16
static const clnet_kind *extra[EXTRA_CAP];
static int extra_count;
static pthread_mutex_t extra_lock = PTHREAD_MUTEX_INITIALIZER;

const clnet_kind *clnet_kind_find(const char *name) {
    for (size_t i = 0; i < BUILTIN; i++)
        if (strcmp(builtin[i]->name, name) == 0) return builtin[i];
    const clnet_kind *found = NULL;
    pthread_mutex_lock(&extra_lock);
    for (int i = 0; i < extra_count && !found; i++)
        if (strcmp(extra[i]->name, name) == 0) found = extra[i];
    pthread_mutex_unlock(&extra_lock);
    return found;
}

const clnet_kind *clnet_kind_builtin(int i) {
    return i >= 0 && (size_t)i < BUILTIN ? builtin[i] : NULL;
}

int clnet_layer_kind_count(void) {
    pthread_mutex_lock(&extra_lock);
    int count = (int)BUILTIN + extra_count;
    pthread_mutex_unlock(&extra_lock);
    return count;
}

const char *clnet_layer_kind_name(int i) {
    if (i < 0) return NULL;
    if ((size_t)i < BUILTIN) return builtin[i]->name;
    const char *name = NULL;
    pthread_mutex_lock(&extra_lock);
    if (i - (int)BUILTIN < extra_count) name = extra[i - BUILTIN]->name;
    pthread_mutex_unlock(&extra_lock);
    return name;
}

void clnet_kind_list(char *out, size_t cap) {
    size_t used = 0;
    const char *name;
    out[0] = '\0';
    for (int i = 0; (name = clnet_layer_kind_name(i)) && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? ", " : "", name);
}

clnet_status clnet_kind_register(const clnet_kind *kind) {
    if (!kind || !kind->name || !kind->setup || !kind->forward ||
        kind->config_size > CLNET_CONFIG_CAP || kind->min_inputs < 1 ||
        kind->max_inputs > CLNET_MAX_INPUTS || kind->min_inputs > kind->max_inputs)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_kind_register: an incomplete kind");
    if (clnet_kind_find(kind->name))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "a layer kind '%s' exists already",
                          kind->name);
    clnet_status status = CLNET_OK;
    pthread_mutex_lock(&extra_lock);
    if (extra_count == EXTRA_CAP)
        status = clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "too many layer kinds registered");
    else
        extra[extra_count++] = kind;
    pthread_mutex_unlock(&extra_lock);
    return status;
}

clnet_status clnet_no_kernels(const clnet_node *node, const clnet_pass *p) {
    (void)node;
    (void)p;
    return CLNET_OK;
}

cl_kernel *clnet_pass_kept(const clnet_pass *p, int slot) {
    return p->kernels && slot >= 0 && slot < CLNET_NODE_KERNELS ? &p->kernels[slot] : NULL;
}

clnet_status clnet_pass_run(const clnet_pass *p, int slot, clnet_kernel_ref kr, int dims,
                            const size_t *global, const size_t *local, const clnet_arg *args,
                            int nargs) {
    cl_kernel k = NULL, *kept = clnet_pass_kept(p, slot);
    return clnet_run_kept(p->d, kept ? kept : &k, kr, dims, global, local, args, nargs);
}

clnet_status clnet_pass_gemm(const clnet_pass *p, int slot, size_t work_off,
                             const clnet_gemm_shape *s, const clnet_gemm_args *g) {
    clnet_gemm_site once = {0};
    clnet_gemm_site *site =
        p->gemms && slot >= 0 && slot < CLNET_NODE_GEMMS ? &p->gemms[slot] : &once;
    site->backward = p->backward;
    site->train = p->ctx->train && !p->ctx->probe; /* what checkpoints record */
    site->scratch = (clnet_gemm_scratch){p->work, work_off,
                                         p->work_cap > work_off ? p->work_cap - work_off : 0};
    return clnet_gemm(p->d, site, s, g);
}

const char *const clnet_shape_keys[5] = {"channels", "depth", "height", "width", "length"};

clnet_shape clnet_shape_from_sizes(const int v[5]) {
    if (v[0] && v[4] && !v[1] && !v[2] && !v[3]) return (clnet_shape){v[0], 1, {v[4]}};
    if (v[0] && v[2] && v[3] && !v[4])
        return v[1] ? (clnet_shape){v[0], 3, {v[1], v[2], v[3]}}
                    : clnet_shape_image(v[0], v[2], v[3]);
    return (clnet_shape){0};
}

void clnet_axes(int rank, const int *v, int fill, int out[3]) {
    for (int a = 0; a < 3; a++) out[a] = a < 3 - rank ? fill : v[a - (3 - rank)];
}

/* Fixing a window op's geometry when its program is built (sizes, window,
 * stride, padding, dilation) makes its kernels much faster on CPUs: with it
 * the loops over a window have known trip counts and bounds, and rows of
 * known width fill work-groups exactly (clnet_window_local). PoCL 3.1 on the
 * 2-core EPYC VM, the seconds in im2col, col2im and pooling over a `clnet
 * bench --steps 10` run: LeNet at batch 256 0.77-1.04 fixed, 2.5-2.6 not;
 * resnet18_w16 at batch 64 4.1 fixed, 8.7-9.4 not. But each geometry costs
 * a program of its own: about 0.1 s to build, then 0.05-0.15 s per kernel
 * at its first launch, cold. So a geometry is fixed where the layer's window
 * work is large enough to repay that within a few hundred steps, measured by
 * the columns one sample fills (channels x taps x windows): every window op
 * of lenet.cfg (3,200 to 40,500) and of resnet18_w16.cfg (1,024 to 113,000);
 * the small layers of tests and toy models (most under 1,000) share one
 * program per family, their geometry passed as the kernel's clnet_win. */
#define WINDOW_FIXED_MIN 1000

int clnet_window_fixed(const clnet_window *w) {
    size_t work = (size_t)w->c;
    for (int a = 0; a < 3; a++) work *= (size_t)w->k[a] * (size_t)w->out[a];
    return work >= WINDOW_FIXED_MIN;
}

void clnet_window_options(const clnet_window *w, const char *extra, char *out, size_t cap) {
    int n = 0;
    if (clnet_window_fixed(w))
        n = snprintf(out, cap,
                     "-DWIN_C=%du -DWIN_D=%du -DWIN_H=%du -DWIN_W=%du -DWIN_KD=%du -DWIN_KH=%du "
                     "-DWIN_KW=%du -DWIN_sd=%du -DWIN_sh=%du -DWIN_sw=%du -DWIN_pd=%du "
                     "-DWIN_ph=%du -DWIN_pw=%du -DWIN_dd=%du -DWIN_dh=%du -DWIN_dw=%du "
                     "-DWIN_OD=%du -DWIN_OH=%du -DWIN_OW=%du",
                     w->c, w->in[0], w->in[1], w->in[2], w->k[0], w->k[1], w->k[2], w->s[0],
                     w->s[1], w->s[2], w->p[0], w->p[1], w->p[2], w->d[0], w->d[1], w->d[2],
                     w->out[0], w->out[1], w->out[2]);
    if (n < 0 || (size_t)n >= cap) n = 0; /* then the kernels read their clnet_win alone */
    snprintf(out + n, cap - (size_t)n, "%s%s", n && extra && *extra ? " " : "", extra ? extra : "");
}

clnet_win_arg clnet_window_arg(const clnet_window *w) {
    clnet_win_arg a = {{(cl_uint)w->c}};
    for (int i = 0; i < 3; i++) {
        a.v[1 + i] = (cl_uint)w->in[i];
        a.v[4 + i] = (cl_uint)w->k[i];
        a.v[7 + i] = (cl_uint)w->s[i];
        a.v[10 + i] = (cl_uint)w->p[i];
        a.v[13 + i] = (cl_uint)w->d[i];
        a.v[16 + i] = (cl_uint)w->out[i];
    }
    return a;
}

void clnet_dims_text(const int *v, int n, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, i ? "x%d" : "%d", v[i]);
}

clnet_status clnet_node_fail(const clnet_node *node, const char *fmt, ...) {
    char text[512], shape[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    clnet_shape_format(node->in[0], shape, sizeof shape);
    return clnet_fail(CLNET_ERR_FORMAT, "layer '%s' (%s, input %s): %s", node->name,
                      node->kind->name, shape, text);
}

static clnet_tensor *declare(clnet_tensor *t, const char *suffix, int ndim, const int64_t *shape,
                             clnet_init init) {
    memset(t, 0, sizeof *t);
    snprintf(t->suffix, sizeof t->suffix, "%s", suffix);
    t->ndim = ndim;
    t->count = 1;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->count *= (size_t)shape[i];
    }
    t->init = init;
    return t;
}

clnet_tensor *clnet_node_param(clnet_node *node, const char *suffix, int ndim, const int64_t *shape,
                               clnet_init init, int fan_in, int fan_out) {
    clnet_tensor *t = declare(&node->params[node->nparams++], suffix, ndim, shape, init);
    t->fan_in = fan_in;
    t->fan_out = fan_out;
    return t;
}

clnet_tensor *clnet_node_buffer(clnet_node *node, const char *suffix, clnet_dtype dtype, int ndim,
                                const int64_t *shape, clnet_init init) {
    clnet_tensor *t = declare(&node->buffers[node->nbuffers++], suffix, ndim, shape, init);
    t->dtype = dtype;
    return t;
}

void clnet_shape_format(clnet_shape s, char *out, size_t cap) {
    size_t used = (size_t)snprintf(out, cap, "%d", s.c);
    for (int i = 0; i < s.ndim && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "x%d", s.dim[i]);
}

clnet_status clnet_pass_uses(const clnet_node *node, const clnet_pass *p, size_t work,
                             size_t keep) {
    const char *pass = p->backward ? "backward" : "forward";
    if (work > p->work_cap)
        return clnet_fail(CLNET_ERR_GUARD,
                          "layer '%s' (%s): its %s pass over %d samples needs %zu floats of "
                          "scratch, and %zu were planned",
                          node->name, node->kind->name, pass, p->n, work, p->work_cap);
    if (keep > p->keep_cap)
        return clnet_fail(CLNET_ERR_GUARD,
                          "layer '%s' (%s): its %s pass over %d samples needs %zu floats of kept "
                          "memory, and %zu were planned",
                          node->name, node->kind->name, pass, p->n, keep, p->keep_cap);
    return CLNET_OK;
}
