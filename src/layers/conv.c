/* Convolution in 1, 2 and 3 dimensions, and transposed convolution, with
 * PyTorch's semantics:
 *   convNd           x (n, C, in...) -> y (n, F, out...), weight (F, C/groups, k...)
 *   conv_transposeNd x (n, C, in...) -> y (n, F, out...), weight (C, F/groups, k...),
 *                    out = (in - 1)*stride - 2*pad + dilation*(k - 1) + output_pad + 1
 * and a bias (F) unless bias=off.
 *
 * A transposed convolution is a convolution's input gradient run forward, so
 * both kinds share everything: the options, shapes and windows here, the
 * algorithms (conv_*.c, one file each: conv.h) and their choice
 * (conv_choice.c). Each pass runs in chunks of samples (below), each chunk
 * with the algorithm chosen for the pass. */
#include "conv.h"
#include "elementwise.h"
#include "error.h"
#include "layer.h"
#include "program.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static void defaults(conv_config *c, int rank, int transpose) {
    c->rank = rank;
    c->transpose = transpose;
}

#define DEFAULTS(name, rank, transpose)                                                            \
    static void name(void *config) {                                                               \
        defaults(config, rank, transpose);                                                         \
    }
DEFAULTS(defaults1, 1, 0)
DEFAULTS(defaults2, 2, 0)
DEFAULTS(defaults3, 3, 0)
DEFAULTS(defaults_t1, 1, 1)
DEFAULTS(defaults_t2, 2, 1)
DEFAULTS(defaults_t3, 3, 1)

/* pad=N (or one per axis), pad=same or pad=causal (check() refuses those
 * where they do not apply, naming why) */
static clnet_status parse_pad(const clnet_option *o, void *config, const char *value) {
    conv_config *c = config;
    c->pad_mode = strcmp(value, "same") == 0     ? CONV_PAD_SAME
                  : strcmp(value, "causal") == 0 ? CONV_PAD_CAUSAL
                                                 : CONV_PAD_GIVEN;
    return c->pad_mode != CONV_PAD_GIVEN ? CLNET_OK
                                         : clnet_option_dims(o->name, value, o->axes, 0, c->p);
}

/* what parse_pad read: "same", "causal", or the padding of each axis */
static void get_pad(const clnet_option *o, const void *config, clnet_option_value *out) {
    const conv_config *c = config;
    static const char *const words[] = {[CONV_PAD_SAME] = "same", [CONV_PAD_CAUSAL] = "causal"};
    out->word = words[c->pad_mode];
    out->count = c->pad_mode == CONV_PAD_GIVEN ? o->axes : 0;
    memcpy(out->ints, c->p, sizeof c->p);
}

/* Tables of rows built by macros, laid out by hand (clang-format folds them badly). */
// clang-format off
#define DIMS(key, field, rank, least, value_, without_, what)                                      \
    {.name = key, .type = CLNET_OPT_DIMS, .at = offsetof(conv_config, field), .axes = rank,        \
     .min = least, .value = value_, .without = without_, .help = what}

/* The options of a rank's convolution (transposed or not): pad= takes what
 * `pad_expects` says, means `pad_help`. */
#define CONV_OPTIONS(rank, pad_expects, pad_help)                                                  \
    {.name = "filters", .type = CLNET_OPT_INT, .at = offsetof(conv_config, filters), .min = 1,     \
     .without = "required", .help = "the output channels"},                                        \
    DIMS("size", k, rank, 1, NULL, "required", "the kernel"),                                      \
    DIMS("stride", s, rank, 1, "1", NULL, "the step between windows"),                             \
    {.name = "pad", .type = CLNET_OPT_CUSTOM, .axes = rank, .parse = parse_pad,                    \
     .get = get_pad, .expects = pad_expects, .value = "0", .help = pad_help},                      \
    DIMS("dilation", d, rank, 1, "1", NULL, "the kernel's taps this far apart"),                   \
    {.name = "groups", .type = CLNET_OPT_INT, .at = offsetof(conv_config, groups), .min = 1,       \
     .value = "1", .help = "channels and filters in this many independent groups (dividing both)"},\
    CLNET_PARAM_INIT_OPTIONS(conv_config, init)

#define TRANSPOSE_OPTIONS(rank, forms)                                                             \
    CONV_OPTIONS(rank, forms ", each >= 0", "trimmed from each side of the output"),               \
    DIMS("output_pad", out_pad, rank, 0, "0", NULL,                                                \
         "added to the output's far side (PyTorch's output_padding)")
// clang-format on

#define SAME_HELP "; same: the input's size at stride 1 (PyTorch's padding='same')"
static const clnet_option conv1_options[] = {
    CONV_OPTIONS(1, "N, each >= 0, same or causal",
                 "zeros before and after the signal" SAME_HELP "; causal: all before"),
    {0},
};
static const clnet_option conv2_options[] = {
    CONV_OPTIONS(2, "N or HxW, each >= 0, or same", "zeros around each axis" SAME_HELP),
    {0},
};
static const clnet_option conv3_options[] = {
    CONV_OPTIONS(3, "N or DxHxW, each >= 0, or same", "zeros around each axis" SAME_HELP),
    {0},
};

static const clnet_option transpose1_options[] = {TRANSPOSE_OPTIONS(1, "N"), {0}};
static const clnet_option transpose2_options[] = {TRANSPOSE_OPTIONS(2, "N or HxW"), {0}};
static const clnet_option transpose3_options[] = {TRANSPOSE_OPTIONS(3, "N or DxHxW"), {0}};

static clnet_status check(const void *config) {
    const conv_config *c = config;
    const char *kind = c->transpose ? "conv_transpose" : "conv";
    if (c->filters < 1)
        return clnet_fail(CLNET_ERR_FORMAT, "%s%dd needs filters=N with N >= 1", kind, c->rank);
    if (c->k[0] < 1)
        return clnet_fail(CLNET_ERR_FORMAT, "%s%dd needs size=K (or one per axis) >= 1", kind,
                          c->rank);
    if (c->pad_mode != CONV_PAD_GIVEN && c->transpose)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "pad=%s: conv_transpose%dd takes pad=N only (as in "
                          "PyTorch)",
                          c->pad_mode == CONV_PAD_SAME ? "same" : "causal", c->rank);
    if (c->pad_mode == CONV_PAD_CAUSAL && c->rank != 1)
        return clnet_fail(CLNET_ERR_FORMAT, "pad=causal is for conv1d, not conv%dd", c->rank);
    return clnet_param_init_check(&c->init);
}

/* "3x3" of a per-axis option, for messages */
static const char *text(const conv_config *c, const int *v, char *out) {
    clnet_dims_text(v, c->rank, out, 48);
    return out;
}

/* The output's size along each given axis (-1 with a message on failure),
 * and the padding pad=same and pad=causal choose. */
static clnet_status output_size(clnet_node *node, int *p, int *out) {
    conv_config *c = CLNET_CONFIG(node, conv_config);
    char t1[48], t2[48], t3[48], t4[48];
    int span[3], extra[3] = {0}; /* a dilated kernel spans d*(k-1)+1; padding after beyond p */
    int fits = 1, out_pad_ok = 1;
    memcpy(p, c->p, sizeof c->p);
    for (int a = 0; a < c->rank; a++) {
        span[a] = c->d[a] * (c->k[a] - 1) + 1;
        if (c->pad_mode ==
            CONV_PAD_SAME) { /* PyTorch's padding='same': span - 1 zeros, the odd one after */
            if (c->s[a] != 1)
                return clnet_node_fail(node, "pad=same needs stride 1, not %s (as in PyTorch)",
                                       text(c, c->s, t1));
            p[a] = (span[a] - 1) / 2;
            extra[a] = (span[a] - 1) - 2 * p[a];
        } else if (c->pad_mode == CONV_PAD_CAUSAL) { /* span - 1 zeros before, none after */
            p[a] = span[a] - 1;
            extra[a] = -p[a];
        }
        int in = node->in[0].dim[a], room = in + 2 * p[a] + extra[a] - span[a];
        if (c->transpose)
            out[a] = (in - 1) * c->s[a] - 2 * p[a] + span[a] + c->out_pad[a];
        else
            out[a] = room < 0 ? 0 : room / c->s[a] + 1;
        fits &= out[a] >= 1;
        out_pad_ok &= c->out_pad[a] < c->s[a] || c->out_pad[a] < c->d[a];
    }
    if (!out_pad_ok)
        return clnet_node_fail(node,
                               "output_pad=%s must be smaller than the stride %s or the dilation "
                               "%s on each axis",
                               text(c, c->out_pad, t1), text(c, c->s, t2), text(c, c->d, t3));
    if (!fits && c->transpose)
        return clnet_node_fail(node, "the output would be %s: padding %s is too large",
                               text(c, out, t1), text(c, c->p, t2));
    if (!fits)
        return clnet_node_fail(node,
                               "a %s kernel (dilation %s: it spans %s) with padding %s does not "
                               "fit the input",
                               text(c, c->k, t1), text(c, c->d, t2), text(c, span, t3),
                               text(c, p, t4));
    return CLNET_OK;
}

static clnet_status setup(clnet_node *node) {
    conv_config *c = CLNET_CONFIG(node, conv_config);
    clnet_shape in = node->in[0];
    static const char *const forms[] = {"", "(C, L)", "(C, H, W)", "(C, D, H, W)"};
    if (in.ndim != c->rank) return clnet_node_fail(node, "takes %s inputs", forms[c->rank]);
    int C = in.c, F = c->filters, G = c->groups;
    if (C % G || F % G)
        return clnet_node_fail(
            node, "groups=%d must divide the %d input channels and the %d filters", G, C, F);
    int p[3], out[3];
    clnet_status status = output_size(node, p, out);
    if (status != CLNET_OK) return status;
    node->out = in;
    node->out.c = F;
    memcpy(node->out.dim, out, sizeof out);

    /* the windows run over the big side: the input of a convolution, the output of a transpose */
    clnet_window *w = &c->win;
    w->c = c->transpose ? F : C;
    clnet_axes(c->rank, c->transpose ? out : in.dim, 1, w->in);
    clnet_axes(c->rank, c->transpose ? in.dim : out, 1, w->out);
    clnet_axes(c->rank, c->k, 1, w->k);
    clnet_axes(c->rank, c->s, 1, w->s);
    clnet_axes(c->rank, p, 0, w->p);
    clnet_axes(c->rank, c->d, 1, w->d);

    /* PyTorch's weight layout and fans: (out, in/G, k...) or, transposed, (in, out/G, k...) */
    int64_t shape[CLNET_MAX_DIMS] = {c->transpose ? C : F, (c->transpose ? F : C) / G};
    int K = 1;
    for (int a = 0; a < c->rank; a++) K *= c->k[a], shape[2 + a] = c->k[a];
    int fan_in = (int)shape[1] * K, fan_out = (int)shape[0] * K;
    clnet_node_param(node, "weight", 2 + c->rank, shape, c->init.weight, fan_in, fan_out);
    if (!c->init.no_bias)
        clnet_node_param(node, "bias", 1, (int64_t[]){F}, c->init.bias, fan_in, fan_out);
    return CLNET_OK;
}

conv_sides conv_sides_of(const clnet_node *node) {
    const clnet_window *w = CONV_WINDOW(node);
    int transpose = CLNET_CONFIG(node, conv_config)->transpose;
    conv_sides v = {.Cb = (size_t)w->c, .G = (size_t)CLNET_CONFIG(node, conv_config)->groups};
    v.Cs = (size_t)(transpose ? node->in[0].c : node->out.c);
    v.Ps = (size_t)w->out[0] * w->out[1] * w->out[2];
    v.Pb = (size_t)w->in[0] * w->in[1] * w->in[2];
    v.K = (size_t)w->k[0] * w->k[1] * w->k[2];
    return v;
}

/* A pass runs in chunks of samples (each_chunk): im2col's, for one, whose
 * column matrix holds at most CHUNK_FLOATS floats (at least one sample a
 * chunk): it stays in the CPU's caches between im2col and the GEMM that reads
 * it, instead of going out to memory and back (41 MB for LeNet's second
 * convolution at batch 256). Backward makes each chunk's columns again rather
 * than keeping them from forward: the same traffic saved, and no memory held
 * from forward to backward. The chunks depend only on n, so the order of the
 * additions does too. */
#define CHUNK_FLOATS (3u << 20) /* 12 MiB: best of 1, 2, 3, 4, 6 and 8 Mi floats here */
/* GPUs have no such cache to keep it in, and each chunk is a dozen launches
 * of small products: on an H100, d2l's ResNet-18 ran its 64-channel layers in
 * 22 chunks of 6 samples at batch 128. At most a sixteenth of the device's
 * largest buffer (a small GPU's), never below the CPUs' chunk. Without a
 * device, the larger. */
#define GPU_CHUNK_FLOATS (32u << 20) /* 128 MiB */

size_t conv_chunk_limit(const clnet_device *d) {
    if (d && d->info.type != CLNET_DEVICE_GPU) return CHUNK_FLOATS;
    uint64_t most = d ? d->info.max_alloc_bytes / 16 / sizeof(float) : GPU_CHUNK_FLOATS;
    return most > GPU_CHUNK_FLOATS ? GPU_CHUNK_FLOATS
           : most < CHUNK_FLOATS   ? CHUNK_FLOATS
                                   : (size_t)most;
}

int conv_even_chunks(int n, size_t most) {
    if (most < 1) most = 1;
    size_t chunks = ((size_t)n + most - 1) / most;
    if (chunks < 1) chunks = 1;
    return (int)(((size_t)n + chunks - 1) / chunks);
}

size_t conv_big_per_sample(const clnet_node *node) {
    conv_sides v = conv_sides_of(node);
    return CLNET_CONFIG(node, conv_config)->transpose ? v.Cb * v.Pb : 0;
}

size_t conv_sums_floats(const clnet_node *node, int s) {
    conv_sides v = conv_sides_of(node);
    return conv_most(clnet_row_sums_floats(v.Cs, (size_t)s * v.Ps),
                     clnet_row_sums_floats(v.Cb, (size_t)s * v.Pb));
}

/* Samples per chunk for a pass over n: as equal as the chunks can be. Not
 * monotonic in n (64 samples run as two chunks of 32, 51 as one of 51): the
 * plan takes the largest scratch over every n a pass can run (plan.c). */
static int chunk_samples(const clnet_node *node, const clnet_device *d, const conv_algo *a, int n) {
    if (a->chunk_samples) return a->chunk_samples(node, d, n);
    size_t per = a->per_sample(node, d);
    return conv_even_chunks(n, per ? conv_chunk_limit(d) / per : (size_t)n);
}

/* Where a chunk's GEMMs and row sums take their scratch: after its regions. */
static size_t gemm_at(const clnet_node *node, const clnet_device *d, const conv_algo *a, int s) {
    return conv_round16(a->regions(node, d, s));
}

static size_t algo_work_floats(const clnet_node *node, const clnet_device *d, const conv_algo *a,
                               int n) {
    int s = chunk_samples(node, d, a, n);
    return gemm_at(node, d, a, s) + a->scratch(node, d, s);
}

/* The most that any algorithm the plan runs takes; without a device (a plan
 * made before one is chosen), that any algorithm takes. */
static size_t work_floats(const clnet_node *node, const clnet_device *d, int n) {
    clnet_conv_plan plan = conv_plan_of(node, d);
    size_t floats = 0;
    for (int a = CLNET_CONV_AUTO + 1; a < clnet_conv_algo_count(); a++) {
        int used = !d;
        for (int pass = 0; pass < CLNET_CONV_PASSES; pass++) used |= plan.pass[pass] == a;
        if (used) floats = conv_most(floats, algo_work_floats(node, d, conv_algo_of(a), n));
    }
    return floats;
}

/* The statistics records of a chunk of s samples a channel (conv_algo.records):
 * a chunk's records follow the chunks before it. */
static size_t records_in(const clnet_node *node, const conv_algo *a, int s) {
    return a->records ? a->records(node, s) : 0;
}

/* Every chunk's records, for a pass over n samples. */
static size_t pass_records(const clnet_node *node, const clnet_device *d, const conv_algo *a,
                           int n) {
    size_t records = 0;
    int most = chunk_samples(node, d, a, n);
    for (int b0 = 0; b0 < n; b0 += most)
        records += records_in(node, a, n - b0 < most ? n - b0 : most);
    return records;
}

/* Kept from a training forward to the batch norm after it: the statistics
 * records of every channel (4 floats each), as many as the algorithm that
 * writes the most would (the choice may change with tuning). */
static size_t keep_floats(const clnet_node *node, const clnet_device *d, int n) {
    if (!CLNET_CONFIG(node, conv_config)->stats) return 0;
    size_t records = 0;
    for (int a = CLNET_CONV_AUTO + 1; a < clnet_conv_algo_count(); a++)
        if (conv_algo_of(a)->records) /* the others write none */
            records = conv_most(records, pass_records(node, d, conv_algo_of(a), n));
    return 4 * (size_t)conv_sides_of(node).Cs * records;
}

int conv_has_bias(const clnet_node *node) {
    return node->nparams > 1;
}

static int fuse_relu(clnet_node *node) {
    conv_config *c = CLNET_CONFIG(node, conv_config);
    if (c->transpose) return 0;
    c->relu = 1;
    return 1;
}

/* Writes the statistics records of its output for the batch norm after it
 * (clnet_kind.stats_out): keep_floats keeps room for them. */
static int stats_out(clnet_node *node) {
    CLNET_CONFIG(node, conv_config)->stats = 1;
    return 1;
}

/* Multiplies each weight by s[its output channel] (clnet_kind.fold_scale).
 * A transposed convolution's weight is (Cin, Cout / groups, window): its
 * kernels take no relu. */
static int fold_scale(const clnet_node *node, double *w, const double *s, int relu) {
    const conv_config *c = CLNET_CONFIG(node, conv_config);
    if (c->transpose && relu) return 0;
    if (!w) return 1;
    size_t count = node->params[0].count, K = 1;
    for (int a = 0; a < 3; a++) K *= (size_t)c->win.k[a];
    size_t per = count / (c->transpose ? (size_t)node->in[0].c : (size_t)c->filters);
    size_t outs = (size_t)c->filters / (size_t)c->groups; /* transposed: per group */
    size_t ins = (size_t)node->in[0].c / (size_t)c->groups;
    for (size_t e = 0; e < count; e++) {
        size_t o = e / per; /* the first axis */
        if (c->transpose) o = (o / ins) * outs + (e / K) % outs;
        w[e] *= s[o];
    }
    return 1;
}

static conv_chunk chunk_at(const clnet_node *node, const clnet_device *d, const conv_algo *a,
                           int makes, int b0, int s) {
    conv_sides v = conv_sides_of(node);
    conv_chunk ch = {.makes = makes,
                     .first = b0 == 0,
                     .s = s,
                     .NP = (size_t)s * v.Ps,
                     .gemm = gemm_at(node, d, a, s)};
    ch.small = v.Cs * v.Ps * (size_t)b0;
    ch.big = v.Cb * v.Pb * (size_t)b0;
    ch.col = v.Cs * ch.NP;
    ch.wo = node->params[0].offset;
    ch.bo = conv_has_bias(node) ? node->params[1].offset : 0;
    return ch;
}

clnet_status conv_to_gemm_layout(const clnet_pass *p, int slot, conv_tensor t, int s, int relu,
                                 size_t y, size_t to) {
    return clnet_pass_run(p, slot,
                          KERNEL("conv", "", relu ? "conv_grad_output_relu" : "conv_grad_output"),
                          3, (size_t[]){t.P, t.C, (size_t)s}, NULL,
                          ARGS(U32(s), U32(t.C), U32(t.P), MEM(t.mem), U32(t.off), MEM(p->act),
                               U32(y), MEM(p->work), U32(to)));
}

uint32_t conv_took_relu(const clnet_node *node) {
    return CLNET_CONFIG(node, conv_config)->relu != 0;
}

conv_output_flags conv_forward_flags(const clnet_node *node, const clnet_pass *p) {
    if (p->fold) return (conv_output_flags){.bias = 1, .relu = p->fold->relu};
    return (conv_output_flags){
        .bias = conv_has_bias(node), .relu = conv_took_relu(node), .stats = !!p->stats};
}

_Static_assert(CONV_K_ROW_SUMS_3 - CONV_K_ROW_SUMS + 1 == CLNET_ROW_SUMS_KERNELS,
               "a slot for each of clnet_row_sums' kernels");

clnet_status conv_bias_sums(const clnet_pass *p, const conv_chunk *ch, size_t C, size_t len,
                            size_t at, float beta) {
    return clnet_row_sums(p->d, clnet_pass_kept(p, CONV_K_ROW_SUMS) /* and the next two */, C, len,
                          (clnet_place){p->work, at}, (clnet_place){p->grads, ch->bo}, beta,
                          (clnet_place){p->work, ch->gemm});
}

clnet_status conv_output_grad(const clnet_node *node, const clnet_pass *p, const conv_chunk *ch,
                              float beta) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    TRY(conv_to_gemm_layout(p, CONV_K_GRAD_LAYOUT,
                            (conv_tensor){p->dact, p->dy + ch->small, v.Cs, v.Ps}, ch->s,
                            (int)conv_took_relu(node), p->y + ch->small, 0));
    if (conv_has_bias(node) && (ch->makes & CONV_MAKES_DW))
        TRY(conv_bias_sums(p, ch, v.Cs, ch->NP, 0, beta));
cleanup:
    return status;
}

clnet_status conv_transpose_bias_grad(const clnet_node *node, const clnet_pass *p,
                                      const conv_chunk *ch, float beta) {
    clnet_status status = CLNET_OK;
    conv_sides v = conv_sides_of(node);
    if (!conv_has_bias(node) || !(ch->makes & CONV_MAKES_DW)) return CLNET_OK;
    TRY(conv_to_gemm_layout(p, CONV_K_BIG_LAYOUT,
                            (conv_tensor){p->dact, p->dy + ch->big, v.Cb, v.Pb}, ch->s, 0, 0,
                            ch->col));
    TRY(conv_bias_sums(p, ch, v.Cb, (size_t)ch->s * v.Pb, ch->col, beta));
cleanup:
    return status;
}

/* The passes of each kind, by the algorithm's chunk functions. */
enum { CONV_FORWARD, CONV_BACKWARD };

static conv_chunk_fn pass_fn(const clnet_node *node, const conv_algo *a, int pass) {
    if (CLNET_CONFIG(node, conv_config)->transpose)
        return pass == CONV_FORWARD ? a->transpose_forward : a->transpose_backward;
    return pass == CONV_FORWARD ? a->forward : a->backward;
}

/* Runs algorithm algo's chunk function for the pass over the pass's
 * samples, chunk by chunk (chunk_samples), each chunk making what `makes`
 * says. */
static clnet_status each_chunk(const clnet_node *node, const clnet_pass *p, int algo, int pass,
                               int makes) {
    const conv_algo *a = conv_algo_of(algo);
    conv_chunk_fn fn = a ? pass_fn(node, a, pass) : NULL;
    if (!fn)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "conv.c: no %s %s pass for '%s'",
                          clnet_conv_algo_name(algo), pass == CONV_FORWARD ? "forward" : "backward",
                          node->name);
    int most = chunk_samples(node, p->d, a, p->n);
    /* a training forward's records, counted by forward */
    size_t rec = 0, records = p->stats && !makes ? p->stats->records : 0;
    for (int b0 = 0; b0 < p->n; b0 += most) {
        conv_chunk ch = chunk_at(node, p->d, a, makes, b0, p->n - b0 < most ? p->n - b0 : most);
        if (p->fold) ch.bo = p->fold->bias; /* a folded batch norm's, in the folded copy */
        ch.rec = rec;
        ch.records = records;
        rec += records_in(node, a, ch.s);
        clnet_status s = fn(node, p, &ch, b0 == 0 ? p->beta : 1.0f);
        if (s != CLNET_OK) return s;
    }
    return CLNET_OK;
}

/* The forward pass with its algorithm. */
static clnet_status forward(const clnet_node *node, const clnet_pass *p) {
    int algo = conv_plan_of(node, p->d).pass[CLNET_PASS_FORWARD];
    const conv_algo *a = conv_algo_of(algo);
    if (p->stats && a) p->stats->records = (uint32_t)pass_records(node, p->d, a, p->n);
    return each_chunk(node, p, algo, CONV_FORWARD, 0);
}

/* Backward: both gradients chunk by chunk where one algorithm makes them
 * (sharing dy's layout and x's columns or grid), else the weight gradient's
 * algorithm over every chunk, then the input gradient's. Asked for one part
 * (clnet_pass.part), the same chunks make that part alone: the same floats. */
static clnet_status backward(const clnet_node *node, const clnet_pass *p) {
    clnet_conv_plan plan = conv_plan_of(node, p->d);
    int dw = plan.pass[CLNET_PASS_DW], dx = plan.pass[CLNET_PASS_DX];
    if (p->part == CLNET_PART_DX)
        return p->need_dx[0] ? each_chunk(node, p, dx, CONV_BACKWARD, CONV_MAKES_DX) : CLNET_OK;
    if (!p->need_dx[0] || p->part == CLNET_PART_DW)
        return each_chunk(node, p, dw, CONV_BACKWARD, CONV_MAKES_DW);
    if (dw == dx) return each_chunk(node, p, dw, CONV_BACKWARD, CONV_MAKES_DW | CONV_MAKES_DX);
    clnet_status status = each_chunk(node, p, dw, CONV_BACKWARD, CONV_MAKES_DW);
    return status == CLNET_OK ? each_chunk(node, p, dx, CONV_BACKWARD, CONV_MAKES_DX) : status;
}

#define CONV_KIND(kind_name, about_, defaults_, options_)                                          \
    {                                                                                              \
        .name = kind_name, .about = about_, .stem = "conv", .options = options_, .min_inputs = 1,  \
        .max_inputs = 1, /* x: each chunk's columns are made again; y: with a relu taken in */     \
            .backward_reads = CLNET_READS_X | CLNET_READS_Y_RELU,                                  \
        .config_size = sizeof(conv_config), .defaults = defaults_, .check = check, .setup = setup, \
        .work_floats = work_floats, .forward = forward, .backward = backward,                      \
        .splits_backward = 1, .fuse_relu = fuse_relu, .algorithms = conv_algorithms,               \
        .fold_scale = fold_scale, .keep_floats = keep_floats, .stats_out = stats_out,              \
    }

/* backward reads x (the weight gradient's Xp), never y */
#define TRANSPOSE_KIND(kind_name, about_, defaults_, options_)                                     \
    {                                                                                              \
        .name = kind_name, .about = about_, .stem = "deconv", .options = options_,                 \
        .min_inputs = 1, .max_inputs = 1, .backward_reads = CLNET_READS_X,                         \
        .config_size = sizeof(conv_config), .defaults = defaults_, .check = check, .setup = setup, \
        .work_floats = work_floats, .forward = forward, .backward = backward,                      \
        .splits_backward = 1, .algorithms = conv_algorithms, .fold_scale = fold_scale,             \
    }

/* What every convolution shares, after the shapes of its rank. */
#define CONV_ABOUT                                                                                 \
    " Options with one value per axis take one number for every axis or one per axis "             \
    "(3x5). groups=G splits channels and filters into G independent groups (G dividing "           \
    "both; G equal to the channels is depthwise); dilation=d spaces the taps d apart, so "         \
    "a kernel spans d(k-1)+1 inputs; pad=same keeps the size at stride 1 (PyTorch's "              \
    "padding='same', the odd zero after the input)."
#define TRANSPOSE_ABOUT                                                                            \
    " The gradient of a convolution run forward: each input spreads its window into an output "    \
    "of (in-1)*stride - 2*pad + dilation*(size-1) + output_pad + 1 per axis. Weight (channels, "   \
    "filters/groups, k...), bias (filters)."

const clnet_kind clnet_conv1d_kind =
    CONV_KIND("conv1d",
              "A convolution over signals: (C, L) in, (filters, L') out; weight (filters, "
              "C/groups, k), bias (filters), as PyTorch's Conv1d. pad=causal puts d(k-1) zeros "
              "before the signal and none after, so no output reads a later input." CONV_ABOUT,
              defaults1, conv1_options);
const clnet_kind clnet_conv2d_kind =
    CONV_KIND("conv2d",
              "A convolution over images: (C, H, W) in, (filters, H', W') out; weight (filters, "
              "C/groups, kh, kw), bias (filters), as PyTorch's Conv2d." CONV_ABOUT,
              defaults2, conv2_options);
const clnet_kind clnet_conv3d_kind =
    CONV_KIND("conv3d",
              "A convolution over volumes: (C, D, H, W) in, (filters, D', H', W') out; weight "
              "(filters, C/groups, kd, kh, kw), bias (filters), as PyTorch's Conv3d." CONV_ABOUT,
              defaults3, conv3_options);
const clnet_kind clnet_conv_transpose1d_kind =
    TRANSPOSE_KIND("conv_transpose1d",
                   "A transposed convolution over signals (C, L), as PyTorch's "
                   "ConvTranspose1d." TRANSPOSE_ABOUT,
                   defaults_t1, transpose1_options);
const clnet_kind clnet_conv_transpose2d_kind =
    TRANSPOSE_KIND("conv_transpose2d",
                   "A transposed convolution over images (C, H, W), as PyTorch's "
                   "ConvTranspose2d." TRANSPOSE_ABOUT,
                   defaults_t2, transpose2_options);
const clnet_kind clnet_conv_transpose3d_kind =
    TRANSPOSE_KIND("conv_transpose3d",
                   "A transposed convolution over volumes (C, D, H, W), as PyTorch's "
                   "ConvTranspose3d." TRANSPOSE_ABOUT,
                   defaults_t3, transpose3_options);
