/* N devices train exactly like one: a generative test.
 *
 * Each case derives from (suite seed, case index) alone. It draws a small
 * random graph over the whole layer catalogue (model-file lines for
 * clnet_net_add), a batch, and a split of it over the configuration's devices
 * (fixed weights with one-sample and empty shares, weights that change from
 * step to step, micro-batches), then trains the graph from the same
 * initialisation on one device and on all of them: two SGD steps with
 * momentum (the second over m <= n samples of a net bound for n), an
 * evaluation and a prediction of batches with a remainder. It compares:
 *   updates  the parameters after minus before, per tensor t, with B the
 *            one-device update and A the N-device one:
 *              ||A_t - B_t|| / max(||B_t||, rms(B) * sqrt(size_t)) <= 1e-4,
 *            relative per tensor, except that a tensor which moved less than
 *            the net's typical parameter (rms(B), over all of them) is
 *            measured against that: a gradient that is zero (the bias of a
 *            convolution before batch norm) moves by rounding alone, the
 *            rounding of batch norm's mean added up coherently over every
 *            sample and position (1e-6 of rms(B) at a few thousand);
 *   buffers  batch norm's running statistics, the same per tensor with an
 *            absolute floor of BUFFER_FLOOR per element;
 *   logits   max |A - B| / max |B| <= 1e-4 over the prediction, and the
 *            evaluation's loss within 1e-4 relative;
 *   shares   each N-device step's shares add up to its batch.
 * One thing the bounds cannot absorb: a relu after a synchronized batch norm
 * (directly or through a convolution) sees values a rounding apart on N
 * devices (the statistics are summed in another order), and a value that
 * sits within that rounding of 0 takes the other side of the kink. One such
 * flip moves the gradient of the batch norm's scale, a sum of N·L terms that
 * mostly cancel, by about 1/sqrt(N·L) of itself. Seed 3030, case 14 on three
 * devices (bn, conv, relu over 266 samples of 520 positions) differs by
 * 1.1e-4 in l2.weight; the same graph with tanh for that relu, 2.4e-6. The
 * fixed seeds have no such case; a seed that draws one fails on that tensor.
 * Nor can they measure a weight whose gradient is zero by symmetry, rounding
 * alone: a convolution whose every output is one input times one weight (a
 * channel a group, one tap) followed by batch norm, which is invariant to
 * that weight's scale (seed 196048882, case 10 on two devices: 1.6e-4), so
 * the generator draws no batch norm after one (graph.scale_only).
 * Batch norm with sync=off normalizes each share alone, so its cases run the
 * same split twice and compare bitwise instead ("bitwise" on their line).
 * Dropout's mask is a hash of the sample's index in the global batch
 * (src/layers/dropout.c), so dropout cases are compared with one device.
 * Graphs the plain-C double reference runs (tests/ref/graph_ref.h: conv2d
 * without dilation or groups, pools without ceil mode, ...) also check the
 * one-device run itself: the first step's loss, and its gradient sums per
 * tensor as the updates above, within 1e-4. For those graphs the reference
 * also measures, before each step, how near the step comes to a kink (a
 * max-pool window's runner-up within rounding of its winner, a relu input
 * within rounding of 0: ref_graph_kink_margin), and a case that comes nearer
 * than KINK_MARGIN of that input's rms redraws its data (up to KINK_TRIES
 * draws, each printed): a float engine may take the other side there and
 * route one element's gradient elsewhere. Seed 68804777, case 46 on two
 * devices: a window's winner led by 1.4e-7 at 2.29, and l1.weight's gradient
 * differed by 3.7e-3 from the reference and 3.4e-3 between the runs.
 * Graphs the reference cannot run have no such guard.
 *
 * Every case prints one line: seed, case, graph, batches, split, actual
 * shares, worst differences. A failure prints the command that replays that
 * case alone and the model's lines. Environment:
 *   CLNET_SPLIT_SEED=S    suite seed (default: the test case's fixed seeds, or
 *                         CLNET_TEST_SEED's: CI's extended step draws one)
 *   CLNET_SPLIT_CASES=N   N cases of one seed, and no named case
 *   CLNET_SPLIT_CASE=I    only case I
 *   CLNET_SPLIT_ONLY=NAME only the named case NAME
 *   CLNET_SPLIT_TEST      the CTest name, for the replay command
 * Kernels with windows are built per geometry and input shape, so the
 * geometries come from a fixed pool (WINDOWS), the inputs from a fixed table,
 * and a graph's windows see few shapes (the phases of block_a, block_b,
 * block_c): after a few hundred cases, new cases build almost nothing.
 *
 * Test cases (CK_RUN_CASE): "two" (two fast devices: named regressions and
 * the generated cases), "three" (three fast devices) and "simulator" (PoCL
 * and Oclgrind, whose larger share its bounds checks see). */
#include "clock.h"
#include "harness.h"
#include "net.h"
#include "ref/graph_ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOLERANCE    1e-4
#define KINK_MARGIN  2e-6 /* nearer a kink than this (of its input's rms): data redrawn */
#define KINK_TRIES   3
#define BUFFER_FLOOR 1e-3
#define MAX_DEV      4
#define MAX_STEPS    4
#define MAX_ROWS     3
#define MAX_LINES    40
#define LINE_CAP     200

/* ---- random numbers ---------------------------------------------------------------------- */

typedef struct {
    uint64_t s;
} rng;

/* splitmix64 */
static uint64_t next(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int pick(rng *r, int lo, int hi) { /* lo..hi inclusive */
    return lo + (int)(next(r) % (uint64_t)(hi - lo + 1));
}

static int chance(rng *r, double p) {
    return (double)(next(r) >> 11) / 9007199254740992.0 < p;
}

/* ---- shapes and the pool of window geometries --------------------------------------------- */

typedef struct {
    int c, rank, d[3]; /* one sample: channels, then `rank` spatial sizes */
} shape;

static int shape_size(shape s) {
    int n = s.c;
    for (int a = 0; a < s.rank; a++) n *= s.d[a];
    return n;
}

static int same_spatial(shape a, shape b) {
    if (a.rank != b.rank) return 0;
    for (int i = 0; i < a.rank; i++)
        if (a.d[i] != b.d[i]) return 0;
    return 1;
}

enum { WIN_CONV = 1, WIN_TCONV = 2, WIN_POOL = 4, WIN_MAXPOOL = 8 };

typedef struct {
    int use;  /* WIN_*: the layers it serves (WIN_POOL: max and average) */
    int rank; /* 0: one value for every axis; else that rank only, per axis */
    int k[3], s[3], p[3], d[3], op[3];
    int ceil;
    int again; /* 1: may follow another window that changes the size */
} window;

#define UNIFORM(use, k, s, p, d, op, ceil)                                                         \
    { use, 0, {k, k, k}, {s, s, s}, {p, p, p}, {d, d, d}, {op, op, op}, ceil, 0 }

/* Every convolution, transposed convolution and pooling takes its window
 * from here. Kernels are compiled per geometry and input shape, so the
 * generator also bounds the shapes a window sees (generate). */
static const window WINDOWS[] = {
    UNIFORM(WIN_CONV, 1, 1, 0, 1, 0, 0), /* pointwise */
    UNIFORM(WIN_CONV, 3, 1, 1, 1, 0, 0), /* same size */
    UNIFORM(WIN_CONV, 3, 1, 0, 1, 0, 0),
    UNIFORM(WIN_CONV, 3, 2, 1, 1, 0, 0),
    UNIFORM(WIN_CONV, 2, 2, 0, 1, 0, 0),
    UNIFORM(WIN_CONV, 3, 1, 2, 2, 0, 0), /* dilated, same size */
    UNIFORM(WIN_CONV, 3, 2, 1, 2, 0, 0),
    UNIFORM(WIN_CONV, 5, 1, 2, 1, 0, 0), /* same size */
    {WIN_CONV, 2, {1, 3}, {1, 2}, {0, 1}, {1, 1}, {0, 0}, 0, 0},
    UNIFORM(WIN_TCONV, 2, 2, 0, 1, 0, 0),
    UNIFORM(WIN_TCONV, 3, 2, 1, 1, 1, 0), /* output_pad 1 */
    UNIFORM(WIN_TCONV, 3, 1, 1, 1, 0, 0),
    UNIFORM(WIN_TCONV, 3, 2, 2, 2, 1, 0), /* dilated, output_pad 1 */
    {WIN_POOL, 0, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 0, 1},
    {WIN_POOL, 0, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, 1},
    UNIFORM(WIN_POOL, 3, 2, 0, 1, 0, 1), /* ceil mode */
    UNIFORM(WIN_POOL, 2, 1, 0, 1, 0, 0),
    UNIFORM(WIN_POOL, 3, 3, 1, 1, 0, 1),
    UNIFORM(WIN_POOL, 2, 2, 1, 1, 0, 1),
    UNIFORM(WIN_POOL, 3, 1, 1, 1, 0, 0), /* same size */
    UNIFORM(WIN_MAXPOOL, 2, 1, 0, 2, 0, 0),
    UNIFORM(WIN_MAXPOOL, 3, 2, 1, 2, 0, 1),
};
#define NWINDOWS (int)(sizeof WINDOWS / sizeof *WINDOWS)

/* The outputs along one axis, PyTorch's rules (0: does not fit). */
static int conv_out(int in, int k, int s, int p, int d) {
    int room = in + 2 * p - (d * (k - 1) + 1);
    return room < 0 ? 0 : room / s + 1;
}

static int tconv_out(int in, int k, int s, int p, int d, int op) {
    int out = (in - 1) * s - 2 * p + d * (k - 1) + op + 1;
    return out < 0 ? 0 : out;
}

static int pool_out(int in, int k, int s, int p, int d, int ceil) {
    int span = in + 2 * p - (d * (k - 1) + 1);
    if (span < 0 || p >= k) return 0;
    int out = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (out - 1) * s >= in + p) out--; /* a last window must start inside */
    return out;
}

/* The output dims of window w over `in` (0 when it does not fit). */
static int window_out(const window *w, int use, shape in, int out[3]) {
    if (w->rank && w->rank != in.rank) return 0;
    out[0] = out[1] = out[2] = 0;
    for (int a = 0; a < in.rank; a++) {
        out[a] = use == WIN_CONV ? conv_out(in.d[a], w->k[a], w->s[a], w->p[a], w->d[a])
                 : use == WIN_TCONV
                     ? tconv_out(in.d[a], w->k[a], w->s[a], w->p[a], w->d[a], w->op[a])
                     : pool_out(in.d[a], w->k[a], w->s[a], w->p[a], w->d[a], w->ceil);
        if (out[a] < 1 || (out[a] > 24 && out[a] > in.d[a])) return 0; /* grows past 24 */
    }
    return 1;
}

/* "3" or "1x3" */
static const char *dims(const window *w, const int *v, int rank, char *out) {
    if (!w->rank) {
        sprintf(out, "%d", v[0]);
        return out;
    }
    out[0] = '\0';
    for (int a = 0; a < rank; a++) sprintf(out + strlen(out), a ? "x%d" : "%d", v[a]);
    return out;
}

/* ---- graphs ------------------------------------------------------------------------------ */

typedef struct {
    char line[MAX_LINES][LINE_CAP]; /* line 0: the input; line i names its layer "l<i>" */
    shape out[MAX_LINES];
    ref_node ref[MAX_LINES]; /* line i is the reference's node i - 1 */
    int count;
    int ref_only; /* draw only what the reference runs */
    int ref_ok;   /* every layer is one the reference runs */
    int unsynced; /* a batch norm with sync=off: the result depends on the split */
    int two;      /* batches of 2 or more samples (see batchnorm and head) */
    int has_bn;   /* a batch norm: shares are never micro-batched */
    /* Outputs of a convolution whose every value is one input times one
     * weight (a channel a group, one tap): batch norm is invariant to that
     * weight's scale, so after one its gradient is zero, and its update
     * rounding alone, which no relative bound measures: none is drawn. */
    char scale_only[MAX_LINES];
    int reshaped;  /* one reshape at most */
    int max_size;  /* the largest tensor (floats per sample) a layer may make */
    int outputs;   /* the model's outputs per sample: the classes, or the input's size */
    int positions; /* a class at each of so many positions (per=position); 0: one a sample */
    char summary[1024];
} graph;

static void say(graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(graph *g, const char *fmt, ...) {
    size_t used = strlen(g->summary);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->summary + used, sizeof g->summary - used, fmt, ap);
    va_end(ap);
}

static void input_name(int i, char *out) {
    if (i == 0)
        strcpy(out, "input");
    else
        sprintf(out, "l%d", i);
}

/* Adds "kind name=l<count> input=... options" with output `out`; ref NULL:
 * a layer the reference does not run. Returns the new line's index. */
static int add(graph *g, const char *kind, const int *in, int nin, shape out, const ref_node *ref,
               const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int add(graph *g, const char *kind, const int *in, int nin, shape out, const ref_node *ref,
               const char *fmt, ...) {
    int i = g->count++;
    ck_assert_int_lt(g->count, MAX_LINES);
    char *l = g->line[i], name[16];
    sprintf(l, "%s name=l%d input=", kind, i);
    for (int k = 0; k < nin; k++) {
        input_name(in[k], name);
        sprintf(l + strlen(l), "%s%s", k ? "," : "", name);
    }
    char options[LINE_CAP] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(options, sizeof options, fmt, ap);
        va_end(ap);
    }
    if (*options) snprintf(l + strlen(l), LINE_CAP - strlen(l), " %s", options);
    g->out[i] = out;
    if (ref) {
        g->ref[i] = *ref;
        g->ref[i].nin = nin;
        for (int k = 0; k < nin; k++) g->ref[i].in[k] = in[k] - 1; /* line 0 is REF_INPUT */
    } else {
        g->ref_ok = 0;
    }
    return i;
}

static const char *conv_kind(int rank, int transpose) {
    static const char *const kinds[2][4] = {
        {"", "conv1d", "conv2d", "conv3d"},
        {"", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}};
    return kinds[transpose][rank];
}

/* Whether w serves `use` over in: any that fits (same 0), one that keeps the
 * size (1), one that keeps it with several taps (2), or one that may follow
 * another window (3); out is its output's size. */
static int window_fits(const graph *g, const window *w, shape in, int use, int same, int out[3]) {
    int serves =
        use == WIN_CONV || use == WIN_TCONV ? w->use == use : (w->use & (WIN_POOL | use)) != 0;
    if (!serves || !window_out(w, use == WIN_MAXPOOL ? WIN_POOL : use, in, out)) return 0;
    if ((same == 1 || same == 2) &&
        !same_spatial(in, (shape){in.c, in.rank, {out[0], out[1], out[2]}}))
        return 0;
    if (same == 2 && w->k[0] == 1) return 0;
    if (same == 3 && !w->again) return 0;
    return !(g->ref_only && (w->d[0] != 1 || w->ceil));
}

/* A window of the pool that fits (window_fits) over x, drawn; when 40 draws
 * miss, the first in the pool that fits (so a caller that needs one, as the
 * chunky cases' first convolution, gets it whenever the pool has one), or NULL. */
static const window *choose_window(graph *g, rng *r, int x, int use, int same, int out[3]) {
    shape in = g->out[x];
    if (in.rank == 0) return NULL;
    for (int attempt = 0; attempt < 40; attempt++) {
        const window *w = &WINDOWS[pick(r, 0, NWINDOWS - 1)];
        if (window_fits(g, w, in, use, same, out)) return w;
    }
    for (int i = 0; i < NWINDOWS; i++)
        if (window_fits(g, &WINDOWS[i], in, use, same, out)) return &WINDOWS[i];
    return NULL;
}

static ref_node ref_window(ref_op op, const window *w, int rank) {
    ref_node n = {.op = op};
    if (rank == 2)
        n.kh = w->k[0], n.kw = w->k[1], n.sh = w->s[0], n.sw = w->s[1], n.ph = w->p[0],
        n.pw = w->p[1];
    return n;
}

/* which: 0 relu, 1 sigmoid, 2 tanh, -1 any activation, those with a
 * parameter drawing one (a slope or alpha of 0.01 to 0.5, gelu's form) */
static int activation(graph *g, rng *r, int x, int which) {
    static const char *const kinds[] = {"relu", "sigmoid", "tanh", "leaky_relu",
                                        "elu",  "gelu",    "silu", "hardswish"};
    static const ref_op ops[] = {REF_RELU, REF_SIGMOID, REF_TANH, REF_LEAKY_RELU,
                                 REF_ELU,  REF_GELU,    REF_SILU, REF_HARDSWISH};
    if (which < 0) which = pick(r, 0, 7);
    ref_node ref = {.op = ops[which], .a = 0.01 * pick(r, 1, 50), .approx = chance(r, 0.5)};
    char options[48] = "";
    if (ref.op == REF_LEAKY_RELU) snprintf(options, sizeof options, "slope=%g", ref.a);
    if (ref.op == REF_ELU) snprintf(options, sizeof options, "alpha=%g", ref.a);
    if (ref.op == REF_GELU && ref.approx) snprintf(options, sizeof options, "approximate=tanh");
    say(g, "%s ", kinds[which]);
    return add(g, kinds[which], &x, 1, g->out[x], &ref, "%s", options);
}

static int batchnorm(graph *g, rng *r, int x) {
    if (g->scale_only[x]) return -1;
    shape s = g->out[x];
    int spatial = shape_size(s) / s.c;
    if (spatial < 2) {
        if (g->unsynced) return -1; /* one value per share would normalize to 0 */
        g->two = 1;                 /* one value per channel has no variance */
    }
    int off = spatial >= 2 && chance(r, 0.25);
    g->unsynced |= off;
    g->has_bn = 1;
    say(g, "bn%s ", off ? "(sync=off)" : "");
    return add(g, "batchnorm", &x, 1, s, &(ref_node){.op = REF_BATCHNORM}, "%s",
               off ? "sync=off" : "");
}

/* A convolution (or a transposed one) of x, then sometimes a relu (fused
 * into a convolution's kernels) or batch norm. */
static int conv_layer(graph *g, rng *r, int x, int transpose, int same, int filters, int follow) {
    int out[3];
    shape in = g->out[x];
    const window *w = choose_window(g, r, x, transpose ? WIN_TCONV : WIN_CONV, same, out);
    if (!w) return -1;
    int groups = 1, given = filters;
    if (!filters) filters = chance(r, 0.5) ? 2 : 4; /* channels stay 2 or 4 */
    if (!g->ref_only && in.c > 1) { /* depthwise, or two groups (a given count stays) */
        int roll = pick(r, 0, 9);
        if (roll < 2 && (!given || given % in.c == 0)) {
            groups = in.c;
            filters = given ? given : in.c == 2 && chance(r, 0.5) ? 4 : in.c;
        } else if (roll < 3 && in.c % 2 == 0 && filters % 2 == 0) {
            groups = 2;
        }
    }
    shape o = {filters, in.rank, {out[0], out[1], out[2]}};
    if (shape_size(o) > g->max_size) return -1;
    int bn = follow && chance(r, 0.25), relu = follow && !bn && chance(r, 0.6);
    int bias = bn ? chance(r, 0.3) : chance(r, 0.9);
    char k[48], s[48], p[48], d[48], op[48], extra[160] = "";
    if (w->d[0] != 1) sprintf(extra + strlen(extra), " dilation=%s", dims(w, w->d, in.rank, d));
    if (groups != 1) sprintf(extra + strlen(extra), " groups=%d", groups);
    if (transpose && w->op[0])
        sprintf(extra + strlen(extra), " output_pad=%s", dims(w, w->op, in.rank, op));
    if (!bias) strcat(extra, " bias=off");
    ref_node rn = ref_window(REF_CONV2D, w, in.rank);
    rn.filters = filters;
    rn.bias = bias;
    say(g, "%s(k%s s%s p%s%s f%d%s%s%s) ", transpose ? "tconv" : "conv", dims(w, w->k, in.rank, k),
        dims(w, w->s, in.rank, s), dims(w, w->p, in.rank, p), w->d[0] != 1 ? " d2" : "", filters,
        groups == 1      ? ""
        : groups == in.c ? " dw"
                         : " g2",
        transpose && w->op[0] ? " op1" : "", bias ? "" : " nobias");
    int y = add(g, conv_kind(in.rank, transpose), &x, 1, o,
                transpose || w->d[0] != 1 || groups != 1 || in.rank != 2 ? NULL : &rn,
                "filters=%d size=%s stride=%s pad=%s%s", filters, k, s, p, extra);
    int taps = w->k[0] * (in.rank > 1 ? w->k[1] : 1) * (in.rank > 2 ? w->k[2] : 1);
    g->scale_only[y] = in.c / groups == 1 && taps == 1;
    if (relu) y = activation(g, r, y, 0);
    int n = bn ? batchnorm(g, r, y) : -1;
    if (n >= 0) {
        y = n;
        if (chance(r, 0.6)) y = activation(g, r, y, 0);
    }
    return y;
}

static int pool_layer(graph *g, rng *r, int x, int same) {
    int out[3], max = chance(r, 0.5);
    shape in = g->out[x];
    const window *w = choose_window(g, r, x, max ? WIN_MAXPOOL : WIN_POOL, same, out);
    if (!w) return -1;
    max |= w->use == WIN_MAXPOOL;
    int nocount = !max && (w->p[0] || w->ceil) && !g->ref_only && chance(r, 0.5);
    char k[48], s[48], p[48], d[48], extra[100] = "";
    if (w->p[0]) sprintf(extra + strlen(extra), " pad=%s", dims(w, w->p, in.rank, p));
    if (w->ceil) strcat(extra, " ceil=on");
    if (w->d[0] != 1) sprintf(extra + strlen(extra), " dilation=%s", dims(w, w->d, in.rank, d));
    if (nocount) strcat(extra, " count_pad=off");
    ref_node rn = ref_window(max ? REF_MAXPOOL : REF_AVGPOOL, w, in.rank);
    say(g, "%s(k%s s%s%s%s%s%s) ", max ? "maxpool" : "avgpool", dims(w, w->k, in.rank, k),
        dims(w, w->s, in.rank, s), w->p[0] ? " p1" : "", w->ceil ? " ceil" : "",
        w->d[0] != 1 ? " d2" : "", nocount ? " nocount" : "");
    return add(g, max ? "maxpool" : "avgpool", &x, 1,
               (shape){in.c, in.rank, {out[0], out[1], out[2]}},
               w->d[0] != 1 || w->ceil || nocount || in.rank != 2 ? NULL : &rn,
               "size=%s stride=%s%s", k, s, extra);
}

/* x upsampled by 2 or 3 on every axis, or on the last alone, nearest or
 * linear. The reference runs it on signals (c, 1, L) and images. */
static int upsample_layer(graph *g, rng *r, int x) {
    shape in = g->out[x], o = in;
    if (in.rank == 0) return -1;
    int factor = chance(r, 0.7) ? 2 : 3, last_only = in.rank > 1 && chance(r, 0.3);
    int linear = chance(r, 0.5), s[3] = {1, 1, 1};
    char scale[48] = "";
    for (int a = 0; a < in.rank; a++) {
        s[a] = last_only && a + 1 < in.rank ? 1 : factor;
        o.d[a] = in.d[a] * s[a];
        sprintf(scale + strlen(scale), a ? "x%d" : "%d", s[a]);
    }
    if (shape_size(o) > g->max_size) return -1;
    ref_node rn = {.op = REF_UPSAMPLE,
                   .kh = in.rank == 2 ? s[0] : 1,
                   .kw = s[in.rank - 1],
                   .bilinear = linear};
    say(g, "up(%s %s) ", scale, linear ? "linear" : "nearest");
    return add(g, "upsample", &x, 1, o, in.rank == 3 ? NULL : &rn, "scale=%s mode=%s", scale,
               linear ? "linear" : "nearest");
}

/* x + f(x) (+ tanh(x) or sigmoid(x)): x read by two or three layers; f a
 * convolution that keeps the size (with windows; then sometimes a batch
 * norm, which the add normalizes, or a relu) or an activation. */
static int residual(graph *g, rng *r, int x, int windows) {
    if (windows && g->out[x].rank == 0) return -1;
    size_t said = strlen(g->summary);
    say(g, "[res ");
    int b = windows ? conv_layer(g, r, x, 0, 1, g->out[x].c, 0) : activation(g, r, x, -1);
    if (b < 0) { /* nothing was added */
        g->summary[said] = '\0';
        return -1;
    }
    int normed = 0; /* a batch norm only the add reads: the add normalizes it */
    if (windows && chance(r, 0.3)) {
        int n = batchnorm(g, r, b);
        if (n >= 0) b = n, normed = 1;
    }
    if (windows && !normed && chance(r, 0.5)) b = activation(g, r, b, 0); /* fused */
    int in[3] = {x, b, 0}, nin = 2;
    if (normed && chance(r, 0.5)) in[0] = b, in[1] = x; /* the batch norm first */
    if (chance(r, 0.4)) in[nin++] = activation(g, r, x, pick(r, 1, 2));
    say(g, "add%d] ", nin);
    return add(g, "add", in, nin, g->out[x], &(ref_node){.op = REF_ADD}, NULL);
}

/* x's branches joined along channels. With windows: 4 channels, a
 * convolution of x that keeps the size (2 channels) and x, a pool of x that
 * keeps the size, or a second convolution; without: x and an activation. */
static int fan_concat(graph *g, rng *r, int x, int windows) {
    shape s = g->out[x];
    if (shape_size(s) * 2 > g->max_size) return -1;
    if (windows && (s.rank == 0 || (s.c != 2 && s.c != 4))) return -1;
    size_t said = strlen(g->summary);
    say(g, "[cat ");
    int in[2] = {x, -1};
    if (!windows) {
        in[1] = activation(g, r, x, -1);
    } else {
        in[0] = conv_layer(g, r, x, 0, 1, 2, 0);
        if (in[0] < 0) { /* nothing was added */
            g->summary[said] = '\0';
            return -1;
        }
        if (chance(r, 0.5)) in[0] = activation(g, r, in[0], 0);
        in[1] = s.c == 4         ? conv_layer(g, r, x, 0, 1, 2, 0)
                : chance(r, 0.5) ? pool_layer(g, r, x, 1)
                                 : x;
        if (in[1] < 0) in[1] = s.c == 4 ? in[0] : x; /* concat(a, a): one tensor read twice */
    }
    shape o = g->out[in[0]];
    o.c += g->out[in[1]].c;
    say(g, "concat] ");
    return add(g, "concat", in, 2, o, &(ref_node){.op = REF_CONCAT}, NULL);
}

static int dropout(graph *g, rng *r, int x) {
    int p = chance(r, 0.5) ? 50 : 25;
    say(g, "dropout%d ", p);
    return add(g, "dropout", &x, 1, g->out[x], NULL, "p=0.%d seed=%d", p, pick(r, 0, 9));
}

/* The same values with another rank: a volume's depth into channels, an
 * image's rows laid end to end, a signal folded into an image. */
static int reshape(graph *g, rng *r, int x) {
    shape s = g->out[x], o = s;
    if (g->reshaped || s.rank == 0) return -1;
    if (s.rank == 3) {
        o = (shape){s.c * s.d[0], 2, {s.d[1], s.d[2]}};
    } else if (s.rank == 2) {
        o = chance(r, 0.5) ? (shape){s.c, 1, {s.d[0] * s.d[1]}}
                           : (shape){s.c * s.d[0], 1, {s.d[1]}};
    } else {
        int a = s.d[0] % 3 == 0 ? 3 : s.d[0] % 2 == 0 ? 2 : 0;
        if (!a || s.d[0] / a < 2) return -1;
        o = (shape){s.c, 2, {a, s.d[0] / a}};
    }
    g->reshaped = 1;
    char text[80];
    if (o.rank == 1)
        sprintf(text, "channels=%d length=%d", o.c, o.d[0]);
    else
        sprintf(text, "channels=%d height=%d width=%d", o.c, o.d[0], o.d[1]);
    say(g, "reshape(%s) ", text);
    return add(g, "reshape", &x, 1, o, NULL, "%s", text);
}

/* The main path in three phases, so that windows see few shapes (their
 * kernels are built per shape): A keeps the input's size (windows that keep
 * it, channels 2 or 4), B changes it (any window), C runs no window. Each
 * returns -1 when the drawn block does not fit. */
static int block_a(graph *g, rng *r, int x) {
    int y;
    switch (pick(r, 0, 7)) {
    case 0:
    case 1:
        return conv_layer(g, r, x, 0, 1, 0, 1);
    case 2:
        y = pool_layer(g, r, x, 1);
        return y >= 0 && chance(r, 0.3) ? activation(g, r, y, 0) : y; /* a relu not fused */
    case 3:
        return residual(g, r, x, 1);
    case 4:
        return fan_concat(g, r, x, 1);
    case 5:
        return activation(g, r, x, -1);
    case 6:
        return batchnorm(g, r, x);
    default:
        return g->ref_only ? -1 : dropout(g, r, x);
    }
}

static int block_b(graph *g, rng *r, int x) {
    int y;
    switch (pick(r, 0, 4)) {
    case 0:
    case 1:
        return conv_layer(g, r, x, 0, 0, 0, 1);
    case 2:
        return g->ref_only ? -1 : conv_layer(g, r, x, 1, 0, 0, 1);
    default:
        y = pool_layer(g, r, x, 0);
        return y >= 0 && chance(r, 0.3) ? activation(g, r, y, 0) : y;
    }
}

static int block_c(graph *g, rng *r, int x) {
    switch (pick(r, 0, 5)) {
    case 0:
        return activation(g, r, x, -1);
    case 1:
        return batchnorm(g, r, x);
    case 2:
        return g->ref_only ? -1 : dropout(g, r, x);
    case 3:
        return g->ref_only ? -1 : reshape(g, r, x);
    case 4:
        return residual(g, r, x, 0);
    default:
        return fan_concat(g, r, x, 0);
    }
}

/* Up to `most` blocks of a phase (a few tries each). */
static int blocks(graph *g, rng *r, int x, int most, int (*block)(graph *, rng *, int)) {
    for (int b = 0, count = pick(r, 0, most); b < count; b++) {
        int y = -1;
        for (int attempt = 0; attempt < 10 && y < 0; attempt++) y = block(g, r, x);
        if (y >= 0) x = y;
    }
    return x;
}

/* The reference's view of a shape: (c, h, w), a signal (c, 1, L), a volume (c, D*H, W). */
static ref_shape ref_view(shape s) {
    return s.rank == 1   ? (ref_shape){s.c, 1, s.d[0]}
           : s.rank == 2 ? (ref_shape){s.c, s.d[0], s.d[1]}
                         : (ref_shape){s.c, s.d[0] * s.d[1], s.d[2]};
}

/* A reconstruction of the model's input instead of classes: a linear layer of
 * the input's size, reshaped to its shape, then mse, l1 or bce_with_logits
 * against the input itself (its second input). -1 where the input is large. */
static int regression_head(graph *g, rng *r, int x) {
    shape in = g->out[0];
    int size = shape_size(in);
    if (size > 300) return -1;
    static const char *const kinds[] = {"mse", "l1", "bce_with_logits"};
    static const ref_op ops[] = {REF_MSE, REF_L1, REF_BCE};
    int k = pick(r, 0, 2);
    say(g, "fc%d ", size);
    x = add(g, "linear", &x, 1, (shape){size, 0, {0}},
            &(ref_node){.op = REF_LINEAR, .units = size, .bias = 1}, "units=%d", size);
    char text[96];
    int n = sprintf(text, "channels=%d", in.c);
    if (in.rank == 1) sprintf(text + n, " length=%d", in.d[0]);
    if (in.rank == 2) sprintf(text + n, " height=%d width=%d", in.d[0], in.d[1]);
    if (in.rank == 3) sprintf(text + n, " depth=%d height=%d width=%d", in.d[0], in.d[1], in.d[2]);
    ref_shape v = ref_view(in);
    x = add(g, "reshape", &x, 1, in,
            &(ref_node){.op = REF_RESHAPE, .units = v.c, .kh = v.h, .kw = v.w}, "%s", text);
    say(g, "%s(input)", kinds[k]);
    g->outputs = size;
    return add(g, kinds[k], (int[]){x, 0}, 2, in, &(ref_node){.op = ops[k]}, NULL);
}

/* A class at each position instead of one a sample: a 1x1 convolution to
 * the classes, then cross-entropy per position (the reference runs it on
 * any rank: a 1x1 window sees no axis). -1 where x has no positions or many. */
static int position_head(graph *g, rng *r, int x, int classes) {
    shape s = g->out[x], o = {classes, s.rank, {s.d[0], s.d[1], s.d[2]}};
    if (s.rank == 0 || shape_size(o) > 1200) return -1;
    int bias = chance(r, 0.8);
    say(g, "conv1x1(f%d%s) xent(per position)", classes, bias ? "" : " nobias");
    ref_node rn = {
        .op = REF_CONV2D, .filters = classes, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .bias = bias};
    x = add(g, conv_kind(s.rank, 0), &x, 1, o, &rn, "filters=%d size=1%s", classes,
            bias ? "" : " bias=off");
    g->outputs = shape_size(o);
    g->positions = shape_size(s) / s.c;
    return add(g, "softmax_cross_entropy", &x, 1, o, &(ref_node){.op = REF_XENT_POSITIONS},
               "per=position");
}

/* global pooling or flatten, maybe a hidden layer, the classes, the loss;
 * or sometimes a reconstruction of the input (regression_head), or a class
 * at each position (position_head) */
static void head(graph *g, rng *r, int x, int classes) {
    g->outputs = classes;
    if (chance(r, 0.15) && regression_head(g, r, x) > 0) return;
    if (chance(r, 0.15) && position_head(g, r, x, classes) > 0) return;
    shape s = g->out[x];
    if (s.rank > 0 && (shape_size(s) > 600 || chance(r, 0.4))) {
        int max = !g->ref_only && chance(r, 0.4);
        /* the mean of one sample's normalized plane is exactly batch norm's
         * bias: a relu after a linear of it sits on its kink */
        if (!max && strncmp(g->line[x], "batchnorm", 9) == 0) g->two = 1;
        say(g, "%s ", max ? "gmaxpool" : "gavgpool");
        x = add(g, max ? "global_maxpool" : "global_avgpool", &x, 1,
                (shape){s.c, s.rank, {1, 1, 1}}, max ? NULL : &(ref_node){.op = REF_GLOBAL_AVGPOOL},
                NULL);
        /* batch norm of planes' means: those of large planes are so close that
         * dividing by their spread makes rounding a 1e-4 difference */
        if (chance(r, 0.15) && !g->unsynced && shape_size(s) / s.c <= 100) x = batchnorm(g, r, x);
    }
    if (chance(r, 0.4)) {
        say(g, "flatten ");
        x = add(g, "flatten", &x, 1, (shape){shape_size(g->out[x]), 0, {0}},
                &(ref_node){.op = REF_FLATTEN}, NULL);
    }
    if (chance(r, 0.35)) {
        int units = pick(r, 4, 8);
        say(g, "fc%d ", units);
        x = add(g, "linear", &x, 1, (shape){units, 0, {0}},
                &(ref_node){.op = REF_LINEAR, .units = units, .bias = 1}, "units=%d", units);
        x = activation(g, r, x, -1);
        if (!g->ref_only && chance(r, 0.3)) x = dropout(g, r, x);
    }
    say(g, "fc%d", classes);
    x = add(g, "linear", &x, 1, (shape){classes, 0, {0}},
            &(ref_node){.op = REF_LINEAR, .units = classes, .bias = 1}, "units=%d", classes);
    add(g, "softmax_cross_entropy", &x, 1, (shape){classes, 0, {0}},
        &(ref_node){.op = REF_SOFTMAX_XENT}, NULL);
}

enum { PLAIN, REFERENCE, CHUNKY };

/* The inputs: small ones of 2 channels (the reference's cases take the
 * image), and larger ones whose convolutions run their batch in chunks (more
 * than 3 Mi floats of columns: conv.c's CHUNK_FLOATS) at the chunky cases'
 * batches. By rank: a signal, an image, a volume. */
static const shape INPUTS[2][4] = {
    {{0}, {2, 1, {17}}, {2, 2, {9, 9}}, {2, 3, {4, 6, 6}}},
    {{0}, {8, 1, {520}}, {4, 2, {24, 24}}, {2, 3, {6, 12, 12}}},
};

static void generate(graph *g, rng *r, int flavor, int classes) {
    memset(g, 0, sizeof *g);
    g->ref_only = flavor == REFERENCE;
    g->ref_ok = 1;
    g->max_size = flavor == CHUNKY ? 100000 : 1200;
    int rank = flavor == REFERENCE ? 2 : pick(r, 0, 3);
    rank = rank == 0 ? 1 : rank; /* 1: a quarter, 2: half, 3: a quarter */
    shape in = INPUTS[flavor == CHUNKY][rank];
    char *l = g->line[0];
    if (rank == 1) sprintf(l, "input channels=%d length=%d", in.c, in.d[0]);
    if (rank == 2) sprintf(l, "input channels=%d height=%d width=%d", in.c, in.d[0], in.d[1]);
    if (rank == 3)
        sprintf(l, "input channels=%d depth=%d height=%d width=%d", in.c, in.d[0], in.d[1],
                in.d[2]);
    g->out[0] = in;
    g->count = 1;
    say(g, "%dD ", rank);
    for (int a = 0; a < rank + 1; a++) say(g, a ? "x%d" : "%d", a ? in.d[a - 1] : in.c);
    say(g, ": ");
    int x = 0, y;
    if (flavor == CHUNKY) { /* one or two convolutions that keep the size, in chunks; a pool */
        x = conv_layer(g, r, x, 0, 2, rank == 1 ? 16 : rank == 2 ? 8 : 4, 1);
        ck_assert_int_gt(x, 0); /* WINDOWS keeps the size in several ways */
        if (chance(r, 0.5) && (y = conv_layer(g, r, x, 0, 2, 4, 1)) > 0) x = y;
        g->max_size = 1200;
        if ((y = pool_layer(g, r, x, 0)) > 0) x = y;
    } else {
        x = blocks(g, r, x, 3, block_a);
        if (chance(r, 0.85) && (y = block_b(g, r, x)) > 0) x = y;
        if (chance(r, 0.2) && (y = upsample_layer(g, r, x)) > 0) x = y;
        if (chance(r, 0.15) && (y = pool_layer(g, r, x, 3)) > 0) x = y;
    }
    x = blocks(g, r, x, 2, block_c);
    head(g, r, x, classes);
}

/* The reference's graph over g (valid while g is). Its tensors are (c, h,
 * w): a signal (c, L) is (c, 1, L) and a volume (c, D, H, W) is (c, D*H, W),
 * the same values in the same order for every layer it runs on them (only
 * images reach its windows). */
static ref_graph ref_graph_of(const graph *g) {
    return (ref_graph){g->ref + 1, g->count - 1, ref_view(g->out[0])};
}

/* ---- runs -------------------------------------------------------------------------------- */

typedef struct {
    const char *const *lines;
    int nlines;
    uint64_t init_seed, data_seed;
    int classes;
    int positions; /* labels per sample: 0 or 1, or the positions of a loss per position */
    int outputs;   /* the loss's outputs per sample (0: classes) */
    int steps, batch[MAX_STEPS]; /* batch[0]: the bound maximum */
    int eval_n, logits_n;
    float lr, momentum;
    int nrows; /* 0: the measured split; 1: fixed; more: changing from step to step */
    double rows[MAX_ROWS][MAX_DEV];
    int micro;            /* CLNET_MICRO_BATCH for the N-device run (0: none) */
    int batch_norm;       /* 1: a share that exceeds the micro-batch is refused, not split */
    clnet_conv_plan conv; /* the convolutions' algorithms on every device (CLNET_CONV_*) */
} recipe;

typedef struct {
    char name[80];
    size_t off, count;
} tensor_span;

typedef struct {
    int ok;
    char error[2048];
    size_t np, nb;
    float *delta, *buffers, *logits;
    clnet_step_result eval, trained[MAX_STEPS];
    int devices, shares[MAX_STEPS][MAX_DEV];
    int nparams, nbuffers; /* tensors */
    tensor_span params[64], bufs[64];
    double ref_loss, ref_grad; /* -1: not checked */
    char ref_at[80];           /* the tensor of ref_grad */
    double kink;               /* the nearest a training step came to a kink (reference runs) */
    char kink_at[80];          /* where: node and step */
} outcome;

static void outcome_free(outcome *o) {
    free(o->delta), free(o->buffers), free(o->logits);
    memset(o, 0, sizeof *o);
}

static size_t labels_per_sample(const recipe *rc) {
    return rc->positions > 1 ? (size_t)rc->positions : 1;
}

static size_t outputs_per_sample(const recipe *rc) {
    return rc->outputs ? (size_t)rc->outputs : (size_t)rc->classes;
}

/* The data of a pass: inputs in [-1, 1) and labels, both from (seed, which). */
static void pass_data(const recipe *rc, size_t in_size, int n, int which, float *x, int32_t *y) {
    test_random_floats(x, (size_t)n * in_size, rc->data_seed * 100 + (uint64_t)which);
    rng r = {rc->data_seed * 7919 + (uint64_t)which};
    for (size_t i = 0; i < (size_t)n * labels_per_sample(rc); i++)
        y[i] = (int32_t)pick(&r, 0, rc->classes - 1);
}

/* The recipe's rows of weights: training step s uses row s % nrows, and
 * forward-only calls the row of the next step. */
static clnet_status set_rows(clnet_net *net, const recipe *rc) {
    int D = clnet_net_device_count(net);
    double flat[MAX_ROWS * MAX_DEV];
    if (rc->nrows == 0) return CLNET_OK;
    for (int k = 0; k < rc->nrows; k++) memcpy(flat + k * D, rc->rows[k], (size_t)D * sizeof *flat);
    return clnet_net_set_splits(net, flat, D, rc->nrows);
}

/* ||a - b|| / max(||b||, floor * sqrt(count)) for each tensor; the largest. */
static double worst_tensor(const tensor_span *t, int nt, const float *a, const float *b,
                           double floor, char *which) {
    double worst = 0;
    for (int i = 0; i < nt; i++) {
        double num = 0, den = 0;
        for (size_t k = t[i].off; k < t[i].off + t[i].count; k++) {
            num += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
            den += (double)b[k] * b[k];
        }
        double e = sqrt(num) / fmax(sqrt(den), fmax(floor * sqrt((double)t[i].count), 1e-30));
        if (e > worst || isnan(e)) {
            worst = isnan(e) ? INFINITY : e;
            if (which) snprintf(which, 80, "%s", t[i].name);
        }
    }
    return worst;
}

static double rms(const float *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)v[i] * v[i];
    return n ? sqrt(s / n) : 0;
}

/* The one-device run's first step against the double reference: loss and
 * gradient sums. */
static void check_reference(clnet_net *net, const graph *g, const float *x, const int32_t *y, int n,
                            const double *p0, const clnet_step_result *r, outcome *o) {
    ref_graph rg = ref_graph_of(g);
    size_t np = clnet_net_param_count(net), in = (size_t)shape_size(g->out[0]);
    if (!ref_graph_shapes(&rg, NULL) || ref_graph_param_count(&rg) != np) { /* a test bug */
        snprintf(o->ref_at, sizeof o->ref_at, "(the reference refuses the graph)");
        o->ref_loss = o->ref_grad = INFINITY;
        return;
    }
    double *xd = malloc((size_t)n * in * sizeof *xd), *dp = malloc(np * sizeof *dp);
    for (size_t i = 0; i < (size_t)n * in; i++) xd[i] = x[i];
    double loss = ref_graph_gradients(&rg, p0, xd, y, n, dp, NULL);
    o->ref_loss = fabs(r->loss * n - loss) / fmax(fabs(loss), 1e-30);
    float *dpf = malloc(np * sizeof *dpf);
    for (size_t i = 0; i < np; i++) dpf[i] = (float)dp[i];
    o->ref_grad = worst_tensor(o->params, o->nparams, net->trainer->step.grad_sum, dpf,
                               rms(dpf, np), o->ref_at);
    free(xd), free(dp), free(dpf);
}

/* How near training step s (n samples of x, y) comes to a kink, with the
 * net's parameters before the step: the reference's margin, kept in o when
 * it is the smallest so far. */
static void scan_kinks(const clnet_net *net, const graph *g, const float *x, const int32_t *y,
                       int n, int s, outcome *o) {
    ref_graph rg = ref_graph_of(g);
    size_t np = clnet_net_param_count(net), in = (size_t)shape_size(g->out[0]);
    double *xd = malloc((size_t)n * in * sizeof *xd), *pd = malloc(np * sizeof *pd);
    for (size_t i = 0; i < (size_t)n * in; i++) xd[i] = x[i];
    for (size_t i = 0; i < np; i++) pd[i] = clnet_net_params(net)[i];
    ref_graph_pass *pass = ref_graph_forward(&rg, pd, xd, y, n);
    int node;
    double margin = ref_graph_kink_margin(pass, &node);
    if (margin < o->kink) {
        o->kink = margin;
        snprintf(o->kink_at, sizeof o->kink_at, "l%d, step %d", node + 1, s); /* g's names */
    }
    ref_graph_pass_free(pass);
    free(xd), free(pd);
}

#define RUN_CHECK(call, what)                                                                      \
    do {                                                                                           \
        if ((call) != CLNET_OK) {                                                                  \
            snprintf(o->error, sizeof o->error, "%s: %s", what, clnet_last_error());               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* Builds the recipe's net, trains it on rt and records what it did. With
 * ref (a graph the reference runs), checks the first step against it. */
static void run(clnet_runtime *rt, const recipe *rc, const graph *ref, int split, outcome *o) {
    memset(o, 0, sizeof *o);
    o->ref_loss = o->ref_grad = -1;
    o->kink = INFINITY;
    clnet_net *net = NULL;
    float *before = NULL, *x = NULL;
    int32_t *y = NULL;
    double *p0 = NULL;
    char what[64];
    RUN_CHECK(clnet_net_create(&net), "clnet_net_create");
    for (int i = 0; i < rc->nlines; i++) {
        snprintf(what, sizeof what, "model line %d", i + 1);
        RUN_CHECK(clnet_net_add(net, rc->lines[i]), what);
    }
    RUN_CHECK(clnet_net_init(net, rc->init_seed), "clnet_net_init");
    clnet_optimizer_config c;
    clnet_optimizer_defaults(&c);
    c.lr = rc->lr;
    c.momentum = rc->momentum;
    RUN_CHECK(clnet_net_set_optimizer(net, &c), "clnet_net_set_optimizer");
    o->np = clnet_net_param_count(net);
    o->nb = clnet_net_buffer_count(net);
    for (int i = 0; i < net->model.count; i++) {
        const clnet_node *node = &net->model.nodes[i];
        for (int t = 0; t < node->nparams && o->nparams < 64; t++) {
            tensor_span *s = &o->params[o->nparams++];
            snprintf(s->name, sizeof s->name, "%s.%s", node->name, node->params[t].suffix);
            s->off = node->params[t].offset, s->count = node->params[t].count;
        }
        for (int t = 0; t < node->nbuffers && o->nbuffers < 64; t++) {
            if (node->buffers[t].dtype != CLNET_DTYPE_F32) continue;
            tensor_span *s = &o->bufs[o->nbuffers++];
            snprintf(s->name, sizeof s->name, "%s.%s", node->name, node->buffers[t].suffix);
            s->off = node->buffers[t].offset, s->count = node->buffers[t].count;
        }
    }
    int most = rc->batch[0];
    for (int s = 1; s < rc->steps; s++) most = rc->batch[s] > most ? rc->batch[s] : most;
    most = rc->eval_n > most ? rc->eval_n : most;
    most = rc->logits_n > most ? rc->logits_n : most;
    size_t in = 1;
    int shp[4];
    for (int i = 0, rank = clnet_net_input_rank(net, shp); i < rank; i++) in *= (size_t)shp[i];
    before = malloc(o->np * sizeof *before);
    x = malloc((size_t)most * in * sizeof *x);
    y = malloc((size_t)most * labels_per_sample(rc) * sizeof *y);
    memcpy(before, clnet_net_params(net), o->np * sizeof *before);
    if (ref) {
        p0 = malloc(o->np * sizeof *p0);
        for (size_t i = 0; i < o->np; i++) p0[i] = before[i];
    }
    if (split && rc->micro) {
        char text[16];
        snprintf(text, sizeof text, "%d", rc->micro);
        setenv("CLNET_MICRO_BATCH", text, 1);
    }
    clnet_status bound = clnet_net_bind(net, rt, rc->batch[0]);
    unsetenv("CLNET_MICRO_BATCH");
    RUN_CHECK(bound, "clnet_net_bind");
    o->devices = clnet_net_device_count(net);
    if (split) RUN_CHECK(set_rows(net, rc), "clnet_net_set_splits");
    for (int s = 0; s < rc->steps; s++) {
        clnet_step_result *r = &o->trained[s];
        pass_data(rc, in, rc->batch[s], s, x, y);
        snprintf(what, sizeof what, "training step %d (%d samples)", s, rc->batch[s]);
        if (ref) scan_kinks(net, ref, x, y, rc->batch[s], s, o);
        RUN_CHECK(clnet_net_train_step(net, x, y, rc->batch[s], r), what);
        if (ref && s == 0) check_reference(net, ref, x, y, rc->batch[0], p0, r, o);
        for (int i = 0; i < o->devices && i < MAX_DEV; i++) {
            clnet_device_share d;
            RUN_CHECK(clnet_net_device_share(net, i, &d), "clnet_net_device_share");
            o->shares[s][i] = d.share;
        }
    }
    pass_data(rc, in, rc->eval_n, 10, x, y);
    snprintf(what, sizeof what, "clnet_net_evaluate_batch (%d samples)", rc->eval_n);
    RUN_CHECK(clnet_net_evaluate_batch(net, x, y, rc->eval_n, &o->eval), what);
    pass_data(rc, in, rc->logits_n, 11, x, y);
    o->logits = malloc((size_t)rc->logits_n * outputs_per_sample(rc) * sizeof *o->logits);
    snprintf(what, sizeof what, "clnet_net_logits (%d samples)", rc->logits_n);
    RUN_CHECK(clnet_net_logits(net, x, rc->logits_n, o->logits), what);
    o->delta = malloc(o->np * sizeof *o->delta);
    for (size_t i = 0; i < o->np; i++) o->delta[i] = clnet_net_params(net)[i] - before[i];
    if (o->nb) {
        o->buffers = malloc(o->nb * sizeof *o->buffers);
        memcpy(o->buffers, clnet_net_buffers(net), o->nb * sizeof *o->buffers);
    }
    o->ok = 1;
done:
    clnet_net_free(net);
    free(before), free(x), free(y), free(p0);
}

/* ---- comparing ------------------------------------------------------------------------------ */

typedef struct {
    double update, buffer, logit, loss;
    char update_at[80], buffer_at[80];
} differences;

static void compare(const outcome *a, const outcome *b, int steps, int logits_n, int classes,
                    differences *d) {
    memset(d, 0, sizeof *d);
    d->update =
        worst_tensor(b->params, b->nparams, a->delta, b->delta, rms(b->delta, b->np), d->update_at);
    d->buffer =
        worst_tensor(b->bufs, b->nbuffers, a->buffers, b->buffers, BUFFER_FLOOR, d->buffer_at);
    double worst = 0, scale = 1e-30;
    for (int i = 0; i < logits_n * classes; i++) {
        worst = fmax(worst, fabs((double)a->logits[i] - b->logits[i]));
        scale = fmax(scale, fabs(b->logits[i]));
        if (isnan(a->logits[i]) != isnan(b->logits[i])) worst = INFINITY;
    }
    d->logit = worst / scale;
    d->loss = fabs(a->eval.loss - b->eval.loss) / fmax(fabs(b->eval.loss), 1e-30);
    for (int s = 0; s < steps; s++)
        d->loss = fmax(d->loss, fabs(a->trained[s].loss - b->trained[s].loss) /
                                    fmax(fabs(b->trained[s].loss), 1e-30));
    if (isnan(d->loss)) d->loss = INFINITY;
}

static int bitwise_same(const outcome *a, const outcome *b, int logits_n, int classes) {
    return memcmp(a->delta, b->delta, a->np * sizeof(float)) == 0 &&
           (!a->nb || memcmp(a->buffers, b->buffers, a->nb * sizeof(float)) == 0) &&
           memcmp(a->logits, b->logits, (size_t)logits_n * classes * sizeof(float)) == 0;
}

/* ---- cases ---------------------------------------------------------------------------------- */

typedef struct {
    graph g;
    const char *lines[MAX_LINES];
    recipe rc;
} gen_case;

static const char *test_name(void) {
    const char *t = getenv("CLNET_SPLIT_TEST");
    return t && *t ? t : "splits.pocl2";
}

/* A batch of the flavor: mostly small, some large. */
static int draw_batch(rng *r, int flavor, int rank) {
    if (flavor == CHUNKY)
        return rank == 3 ? pick(r, 40, 160) : rank == 2 ? pick(r, 80, 300) : pick(r, 160, 300);
    int roll = pick(r, 0, 99);
    return roll < 55 ? pick(r, 1, 12) : roll < 80 ? pick(r, 13, 64) : pick(r, 65, 300);
}

/* q * n + a remainder */
static int with_remainder(rng *r, int n) {
    int q = n <= 64 ? pick(r, 0, 2) : 0;
    return n == 1 ? q + 1 : q * n + pick(r, 1, n - 1);
}

/* Weights for D devices: equal, drawn, a one-sample share, an empty share,
 * a device too slow to earn a sample, or a single device at work. */
static void draw_row(rng *r, int D, int n, double *w) {
    int kind = pick(r, 0, 6), j = pick(r, 0, D - 1);
    for (int i = 0; i < D; i++) w[i] = 1;
    switch (kind) {
    case 0:
        break;
    case 1:
    case 2:
        for (int i = 0; i < D; i++) w[i] = pick(r, 1, 8);
        break;
    case 3: /* device j takes exactly one sample of n */
        for (int i = 0; i < D; i++) w[i] = i == j ? 1 : n > 1 ? (double)(n - 1) / (D - 1) : 0;
        if (n == 1) w[j] = 1;
        break;
    case 4: /* an empty share */
        for (int i = 0; i < D; i++) w[i] = i == j ? 0 : pick(r, 1, 4);
        break;
    case 5: /* too slow to earn a sample at most batches */
        w[j] = 0.001;
        break;
    default: /* one device does everything */
        for (int i = 0; i < D; i++) w[i] = i == j;
    }
}

/* The convolution algorithms of case `index` (CLNET_CONV_*): auto or each
 * one in turn, and in a quarter of the cases with one the other passes
 * drawn too; drawn apart from the rest of the case so that adding them kept
 * every older case as it was. Auto where $CLNET_CONV is set. */
static clnet_conv_plan conv_algorithms(uint64_t seed, int index) {
    clnet_conv_plan plan = clnet_conv_plan_all(CLNET_CONV_AUTO);
    if (getenv("CLNET_CONV") && *getenv("CLNET_CONV")) return plan;
    rng r = {seed * 0x2545f4914f6cdd1dull + (uint64_t)index * 0x9e3779b97f4a7c15ull + 1};
    plan = clnet_conv_plan_all((int)(next(&r) % CLNET_CONV_BUILT_IN));
    if (plan.pass[0] == CLNET_CONV_AUTO || next(&r) % 4) return plan;
    for (int pass = 1; pass < CLNET_CONV_PASSES; pass++)
        plan.pass[pass] = CLNET_CONV_AUTO + 1 + (int)(next(&r) % (CLNET_CONV_BUILT_IN - 1));
    return plan;
}

/* Runs rt's devices with the plan's algorithms (all auto: as $CLNET_CONV
 * says, which the devices read when they opened). */
static void force_conv(clnet_runtime *rt, clnet_conv_plan plan) {
    const char *env = getenv("CLNET_CONV");
    if (!clnet_conv_plan_named(&plan) && env && *env) return;
    char text[CLNET_CONV_PLAN_CAP];
    clnet_conv_plan_text(&plan, text, sizeof text);
    ck_assert_msg(clnet_runtime_set_conv(rt, text) == CLNET_OK, "%s", clnet_last_error());
}

/* sim >= 0: device `sim` is a simulator: it takes the larger share of a
 * few samples, and the other device at least one sample of every pass. */
static void draw_case(gen_case *c, uint64_t seed, int index, int D, int sim) {
    memset(c, 0, sizeof *c);
    rng r = {seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)index + 1) * 0xd1b54a32d192ed03ull};
    int roll = pick(&r, 0, 99), flavor = roll < 20              ? REFERENCE
                                         : roll < 32 && sim < 0 ? CHUNKY
                                                                : PLAIN;
    int classes = pick(&r, 2, 5);
    generate(&c->g, &r, flavor, classes);
    for (int i = 0; i < c->g.count; i++) c->lines[i] = c->g.line[i];
    recipe *rc = &c->rc;
    rc->lines = c->lines;
    rc->nlines = c->g.count;
    /* labels are drawn below classes, and read only for classes */
    rc->classes = c->g.positions ? classes : c->g.outputs;
    rc->positions = c->g.positions;
    rc->outputs = c->g.outputs;
    rc->init_seed = next(&r) % 1000;
    rc->data_seed = next(&r) % 100000;
    rc->conv = conv_algorithms(seed, index);
    rc->steps = 2;
    int n = draw_batch(&r, flavor, c->g.out[0].rank);
    if (c->g.two && n < 2) n = 2;
    rc->batch[0] = n;
    rc->batch[1] = n > 1 && chance(&r, 0.6) ? pick(&r, c->g.two ? 2 : 1, n - 1) : n;
    rc->eval_n = with_remainder(&r, n);
    rc->logits_n = with_remainder(&r, n);
    rc->lr = chance(&r, 0.5) ? 0.05f : 0.01f;
    rc->momentum = 0.9f;
    rc->nrows = chance(&r, 0.3) ? pick(&r, 2, 3) : 1;
    for (int k = 0; k < rc->nrows; k++) draw_row(&r, D, n, rc->rows[k]);
    rc->batch_norm = c->g.has_bn;
    if (sim >= 0) { /* weights w:1, batches of w + 1 or more, remainders too */
        int w = pick(&r, 2, 3);
        for (int k = 0; k < rc->nrows; k++)
            for (int i = 0; i < D; i++) rc->rows[k][i] = i == sim ? w : 1;
        rc->batch[0] = n = pick(&r, w + 2, 7);
        rc->batch[1] = pick(&r, w + 1, n);
        rc->eval_n = n + pick(&r, w + 1, n - 1);
        rc->logits_n = pick(&r, w + 1, n - 1);
        return;
    }
    if (chance(&r, 0.2)) {
        rc->micro = (int[]){1, 2, 3, 5, 7}[pick(&r, 0, 4)];
        /* batch norm caps shares at the micro-batch: mostly room for the batch */
        if (rc->batch_norm && chance(&r, 0.7)) rc->micro = (n + D - 1) / D + pick(&r, 0, 2);
    }
}

/* The configuration's runtime of one device (the first fast one), kept for
 * a test's cases so that its programs stay built. */
static clnet_runtime *one_device;

static clnet_runtime *one(void) {
    if (!one_device) {
        clnet_runtime *rt = test_runtime();
        int one_index = 0;
        for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
            clnet_device_info info;
            clnet_runtime_device_info(rt, i, &info);
            if (!strstr(info.platform_name, "Oclgrind")) {
                one_index = i;
                break;
            }
        }
        one_device = test_one_device(one_index);
    }
    return one_device;
}

static void release_one(void) {
    clnet_runtime_free(one_device);
    one_device = NULL;
}

/* Whether every training step's batch fits the devices allowed samples
 * (weight > 0) when batch norm caps each share at the micro-batch. */
static int fits(const recipe *rc, int D) {
    if (!rc->batch_norm || !rc->micro) return 1;
    for (int s = 0; s < rc->steps; s++) {
        int taking = D;
        if (rc->nrows) {
            taking = 0;
            for (int i = 0; i < D; i++) taking += rc->rows[s % rc->nrows][i] > 0;
        }
        if (rc->micro * taking < rc->batch[s]) return 0;
    }
    return 1;
}

/* What failed in a case, one clause after another. */
typedef struct {
    char text[4096];
    int failed;
} verdict;

static void blame(verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void blame(verdict *v, const char *fmt, ...) {
    size_t used = strlen(v->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->text + used, sizeof v->text - used, fmt, ap);
    va_end(ap);
    v->failed = 1;
}

static void print_recipe(const char *label, const graph *g, const recipe *rc, int D) {
    printf("%s: %s | n %d", label, g ? g->summary : rc->lines[0], rc->batch[0]);
    for (int s = 1; s < rc->steps; s++) printf(",%d", rc->batch[s]);
    printf(" eval %d logits %d | split ", rc->eval_n, rc->logits_n);
    for (int k = 0; k < rc->nrows; k++) {
        if (k) printf(" / ");
        for (int i = 0; i < D; i++) printf(i ? ":%g" : "%g", rc->rows[k][i]);
    }
    if (rc->nrows > 1) printf(" (changing)");
    if (rc->micro) printf(" micro %d", rc->micro);
    if (clnet_conv_plan_named(&rc->conv)) {
        char text[CLNET_CONV_PLAN_CAP];
        clnet_conv_plan_text(&rc->conv, text, sizeof text);
        printf(" | conv %s", text);
    }
    printf(" | ");
}

/* Each step's shares, which must add up to its batch. */
static void judge_shares(const recipe *rc, const outcome *multi, verdict *v) {
    printf("shares");
    for (int s = 0; s < rc->steps; s++) {
        int sum = 0;
        for (int i = 0; i < multi->devices && i < MAX_DEV; i++) {
            printf(i ? ":%d" : " %d", multi->shares[s][i]);
            sum += multi->shares[s][i];
        }
        if (sum != rc->batch[s])
            blame(v, "step %d's shares add up to %d, not %d; ", s, sum, rc->batch[s]);
    }
    printf(" | ");
}

/* N devices against one, within TOLERANCE. */
static void judge_equal(const recipe *rc, const outcome *multi, const outcome *base, verdict *v) {
    differences d;
    compare(multi, base, rc->steps, rc->logits_n, (int)outputs_per_sample(rc), &d);
    printf("upd %.1e buf %.1e logits %.1e loss %.1e", d.update, d.buffer, d.logit, d.loss);
    if (!(d.update <= TOLERANCE)) blame(v, "update of %s differs by %.3g; ", d.update_at, d.update);
    if (!(d.buffer <= TOLERANCE)) blame(v, "buffer %s differs by %.3g; ", d.buffer_at, d.buffer);
    if (!(d.logit <= TOLERANCE)) blame(v, "logits differ by %.3g; ", d.logit);
    if (!(d.loss <= TOLERANCE)) {
        blame(v, "a loss differs by %.3g: training", d.loss);
        for (int s = 0; s < rc->steps; s++)
            blame(v, " %.7g (one device %.7g)", multi->trained[s].loss, base->trained[s].loss);
        blame(v, ", evaluation %.7g (one device %.7g); ", multi->eval.loss, base->eval.loss);
    }
}

/* Runs one case (a recipe over graph g, NULL for a named case): prints its
 * line and returns 1 when it passed. label names it; replay is the command
 * that runs it alone. */
static int check_case(const char *label, const char *replay, const graph *g, const recipe *rc) {
    clnet_runtime *all = test_runtime();
    int D = clnet_runtime_device_count(all), unsynced = g && g->unsynced;
    const graph *ref = g && g->ref_ok ? g : NULL;
    double t0 = clnet_now();
    print_recipe(label, g, rc, D);
    fflush(stdout); /* a crash shows which case it was */

    outcome base = {.ok = 1}, multi, again = {0};
    verdict v = {"", 0};
    force_conv(one(), rc->conv);
    force_conv(all, rc->conv);
    recipe drawn = *rc; /* its data redrawn while the reference run comes near a kink */
    for (int t = 0; !unsynced || ref; t++) {
        run(one(), &drawn, ref, 0, &base);
        if (!base.ok || !(base.kink < KINK_MARGIN) || t + 1 == KINK_TRIES) break;
        printf("near a kink (%s: %.1e of its input's rms), data redrawn; ", base.kink_at,
               base.kink);
        outcome_free(&base);
        drawn.data_seed += 7919;
    }
    rc = &drawn;
    run(all, rc, NULL, 1, &multi);
    if (unsynced && multi.ok) run(all, rc, NULL, 1, &again);
    if (!base.ok) {
        blame(&v, "one device: %s", base.error);
    } else if (!multi.ok && strstr(multi.error, "fit") && !fits(rc, D)) {
        printf("refused, as it may be: batch norm never splits a share, and the devices that may "
               "take samples hold %d each",
               rc->micro);
    } else if (!multi.ok || (unsynced && !again.ok)) {
        blame(&v, "%d devices%s: %s", D, multi.ok ? ", again" : "",
              multi.ok ? again.error : multi.error);
    } else {
        judge_shares(rc, &multi, &v);
        if (unsynced) { /* the split decides: the same split twice, bit for bit */
            int same = bitwise_same(&multi, &again, rc->logits_n, (int)outputs_per_sample(rc));
            printf("bitwise %s", same ? "same" : "DIFFERENT");
            if (!same) blame(&v, "batch norm sync=off: the same split twice differs; ");
        } else {
            judge_equal(rc, &multi, &base, &v);
        }
    }
    if (ref && base.ok) {
        printf(" ref %.1e/%.1e", base.ref_loss, base.ref_grad);
        if (!(base.ref_loss <= TOLERANCE && base.ref_grad <= TOLERANCE))
            blame(&v, "one device against the reference: loss %.3g, gradients %.3g (%s); ",
                  base.ref_loss, base.ref_grad, base.ref_at);
    }
    printf(" | %.0f ms%s\n", (clnet_now() - t0) * 1000, v.failed ? " | FAILED" : "");
    if (v.failed) {
        printf("  FAILED: %s\n  replay: %s\n  model:\n", v.text, replay);
        for (int i = 0; i < rc->nlines; i++) printf("    %s\n", rc->lines[i]);
    }
    fflush(stdout);
    outcome_free(&base), outcome_free(&multi), outcome_free(&again);
    return !v.failed;
}

static int env_set(const char *var) {
    return getenv(var) && *getenv(var);
}

/* Replaying one case runs nothing else: CLNET_SPLIT_CASE=I only generated
 * case I, CLNET_SPLIT_ONLY=NAME only that named case (name NULL: the
 * generated cases), and CLNET_SPLIT_CASES=N only generated cases. */
static int replaying_another(const char *name) {
    if (!name) return env_set("CLNET_SPLIT_ONLY");
    return env_set("CLNET_SPLIT_CASE") || env_set("CLNET_SPLIT_CASES") ||
           (env_set("CLNET_SPLIT_ONLY") && strcmp(getenv("CLNET_SPLIT_ONLY"), name) != 0);
}

/* The generated cases: the test case's seeds and count, or the environment's
 * (CLNET_SPLIT_SEED=random, or CLNET_TEST_SEED=random, draws a seed). With a budget
 * (CLNET_TEST_BUDGET) the last seed goes on past the count until the budget is spent. */
static void generated_cases(const uint64_t *seeds, int nseeds, int count, int sim) {
    if (replaying_another(NULL)) return;
    const char *env_seed = test_seed_env("CLNET_SPLIT_SEED"),
               *env_cases = getenv("CLNET_SPLIT_CASES");
    const char *env_case = getenv("CLNET_SPLIT_CASE");
    uint64_t chosen[8];
    memcpy(chosen, seeds, (size_t)nseeds * sizeof *seeds);
    if (env_seed) chosen[0] = test_seed_from_env("CLNET_SPLIT_SEED", 0), nseeds = 1;
    if (env_cases && *env_cases) count = atoi(env_cases), nseeds = 1;
    int only = env_case && *env_case ? atoi(env_case) : -1;
    if (only >= 0) count = only + 1; /* that case, whatever the count */
    double budget = only >= 0 ? 0 : test_budget_seconds();
    int D = clnet_runtime_device_count(test_runtime()), ran = 0, failed = 0;
    char failures[2048] = "";
    double t0 = clnet_now();
    printf("%d devices; replay one case with: CLNET_SPLIT_SEED=<seed> CLNET_SPLIT_CASE=<case> "
           "ctest --test-dir %s -R '^%s$' --output-on-failure\n",
           D, CLNET_BINARY_DIR, test_name());
    if (budget > 0)
        printf("at least %d cases, then more until %.0f s have passed (CLNET_TEST_BUDGET)\n", count,
               budget);
    gen_case *c = malloc(sizeof *c);
    for (int s = 0; s < nseeds; s++)
        for (int i = 0; i < count || (s == nseeds - 1 && clnet_now() - t0 < budget); i++) {
            if (only >= 0 && i != only) continue;
            draw_case(c, chosen[s], i, D, sim);
            char label[64], replay[512];
            snprintf(label, sizeof label, "seed %llu case %d", (unsigned long long)chosen[s], i);
            snprintf(replay, sizeof replay,
                     "CLNET_SPLIT_SEED=%llu CLNET_SPLIT_CASE=%d ctest --test-dir %s -R '^%s$' "
                     "--output-on-failure",
                     (unsigned long long)chosen[s], i, CLNET_BINARY_DIR, test_name());
            ran++;
            if (!check_case(label, replay, &c->g, &c->rc)) {
                failed++;
                size_t used = strlen(failures);
                snprintf(failures + used, sizeof failures - used, "%s%s", used ? ", " : "", label);
            }
        }
    free(c);
    printf("%d generated cases on %d devices (seed%s", ran, D, nseeds > 1 ? "s" : "");
    for (int s = 0; s < nseeds; s++) printf(" %llu", (unsigned long long)chosen[s]);
    printf("), %d failed, %.1f s\n", failed, clnet_now() - t0);
    release_one();
    ck_assert_msg(ran > 0, "no case ran (CLNET_SPLIT_CASE=%d of %d)", only, count);
    ck_assert_msg(failed == 0, "%d of %d cases failed: %s", failed, ran, failures);
}

/* ---- configurations --------------------------------------------------------------------- */

static int slow_devices(void) {
    clnet_runtime *rt = test_runtime();
    int slow = 0;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device_info info;
        clnet_runtime_device_info(rt, i, &info);
        slow += strstr(info.platform_name, "Oclgrind") != NULL;
    }
    return slow;
}

static void need_two_fast_devices(void) {
    ck_assert_int_eq(clnet_runtime_device_count(test_runtime()), 2);
    ck_assert_msg(!slow_devices(), "this case needs two fast devices (configuration pocl2)");
}

static void need_three_fast_devices(void) {
    ck_assert_int_eq(clnet_runtime_device_count(test_runtime()), 3);
    ck_assert_msg(!slow_devices(), "this case needs three fast devices (configuration pocl3)");
}

static void need_the_simulator(void) {
    ck_assert_int_eq(clnet_runtime_device_count(test_runtime()), 2);
    ck_assert_msg(slow_devices() == 1, "this case needs Oclgrind (configuration mixed)");
}

/* A named case: fixed lines, batches and split (nrows rows of D weights). */
static void named_case(const char *name, const char *const *lines, int nlines, recipe rc) {
    if (replaying_another(name)) return;
    char replay[512];
    snprintf(replay, sizeof replay,
             "CLNET_SPLIT_ONLY=%s ctest --test-dir %s -R '^%s$' --output-on-failure", name,
             CLNET_BINARY_DIR, test_name());
    rc.lines = lines;
    rc.nlines = nlines;
    int ok = check_case(name, replay, NULL, &rc);
    release_one();
    ck_assert_msg(ok, "%s failed: see above", name);
}

/* ---- named regressions ------------------------------------------------------------------ */

/* Passes over fewer samples than the net was bound for overran the scratch
 * of chunked convolutions: 'a' (8 x 9 taps x 784 positions of columns per
 * sample) planned two chunks of 32 for 64 samples, and the share of 51 ran
 * as one chunk of 51. Crashed before the fix. */
START_TEST(a_share_in_one_chunk_of_a_batch_planned_in_two) {
    static const char *const lines[] = {
        "input channels=1 height=28 width=28",
        "conv2d name=stem filters=8 size=3 pad=1",
        "relu name=r0",
        "conv2d name=a filters=8 size=3 pad=1",
        "flatten",
        "linear name=fc units=10",
        "softmax_cross_entropy",
    };
    recipe rc = {.init_seed = 5,
                 .data_seed = 5,
                 .classes = 10,
                 .steps = 3,
                 .batch = {64, 64, 64},
                 .eval_n = 64,
                 .logits_n = 64,
                 .lr = 0.05f,
                 .momentum = 0.9f,
                 .nrows = 1,
                 .rows = {{1, 4}}};
    named_case("chunked_conv_split_1_4", lines, 7, rc);
}
END_TEST

/* A device without a share in a pass added the loss and correct count of
 * its last pass to the pass's totals (run_all sums every replica's, and only
 * those that run reset theirs): 3:1 of 4 samples, then a step and an
 * evaluation of 1 sample, which device 1 (a quarter of a sample) sits out. */
START_TEST(a_device_without_a_share_adds_no_loss) {
    static const char *const lines[] = {
        "input channels=1 height=2 width=2",
        "flatten",
        "linear name=fc units=3",
        "softmax_cross_entropy",
    };
    recipe rc = {.init_seed = 1,
                 .data_seed = 2,
                 .classes = 3,
                 .steps = 2,
                 .batch = {4, 1},
                 .eval_n = 1,
                 .logits_n = 1,
                 .lr = 0.05f,
                 .momentum = 0.9f,
                 .nrows = 1,
                 .rows = {{3, 1}}};
    named_case("idle_device_stale_loss", lines, 4, rc);
}
END_TEST

/* Batch norm caps each share at the micro-batch and moves the excess to
 * devices with room, but only to those with a weight: with the split 0:1
 * and micro-batches of 4, device 1 took 4 of 8 samples and the other 4 were
 * dropped silently (the room counted device 0, which may take none). Either
 * a refusal or device 0 taking them is right. */
START_TEST(batch_norm_capped_shares_lose_no_sample) {
    static const char *const lines[] = {
        "input channels=2 height=2 width=2",
        "batchnorm name=bn",
        "flatten",
        "linear name=fc units=3",
        "softmax_cross_entropy",
    };
    recipe rc = {.init_seed = 1,
                 .data_seed = 3,
                 .classes = 3,
                 .steps = 2,
                 .batch = {8, 8},
                 .eval_n = 8,
                 .logits_n = 8,
                 .lr = 0.05f,
                 .momentum = 0.9f,
                 .nrows = 1,
                 .rows = {{0, 1}},
                 .micro = 4,
                 .batch_norm = 1};
    named_case("batchnorm_micro_zero_weight", lines, 5, rc);
}
END_TEST

/* Calibration probes each device alone, batch norm's models with two
 * samples, but micro-batches of 1 leave one: after global_avgpool that is one
 * value per channel, which batch norm refused, so binding failed although a
 * step (one sample on each device, two values per channel) is sound. Seed
 * 2211, case 254 found it. */
START_TEST(batch_norm_probe_of_one_value_per_channel) {
    static const char *const lines[] = {
        "input channels=2 height=3 width=3",
        "conv2d name=c filters=3 size=2",
        "global_avgpool",
        "batchnorm name=bn",
        "flatten",
        "linear name=fc units=3",
        "softmax_cross_entropy",
    };
    recipe rc = {.init_seed = 1,
                 .data_seed = 4,
                 .classes = 3,
                 .steps = 2,
                 .batch = {2, 2},
                 .eval_n = 2,
                 .logits_n = 2,
                 .lr = 0.05f,
                 .momentum = 0.9f,
                 .nrows = 1,
                 .rows = {{1, 1}},
                 .micro = 1,
                 .batch_norm = 1};
    named_case("batchnorm_probe_one_value", lines, 7, rc);
}
END_TEST

/* The suite's share (splits.pocl2): few enough cases to keep it inside ten minutes with empty
 * kernel caches (each new window geometry is a program of its own, built on each device); CI's
 * extended step (splits_more.*) draws a new seed each run and runs at least 80 cases on two
 * devices and 70 on three. */
START_TEST(generated_on_two_devices) {
    static const uint64_t seeds[] = {11};
    generated_cases(seeds, 1, 6, -1);
}
END_TEST

START_TEST(generated_on_three_devices) {
    static const uint64_t seeds[] = {21};
    generated_cases(seeds, 1, 4, -1);
}
END_TEST

/* ---- the simulator holds the larger share ------------------------------------------------- */

/* PoCL and Oclgrind: the simulator (it sorts first) takes the larger share,
 * so its bounds checks see the kernels at odd sizes, and tiny nets keep it
 * quick. */
static recipe simulator_recipe(int n, int m, int eval_n, int logits_n) {
    clnet_device_info info;
    clnet_runtime_device_info(test_runtime(), 0, &info);
    int sim_first = strstr(info.platform_name, "Oclgrind") != NULL;
    recipe rc = {.init_seed = 3,
                 .data_seed = 9,
                 .classes = 3,
                 .steps = 2,
                 .batch = {n, m},
                 .eval_n = eval_n,
                 .logits_n = logits_n,
                 .lr = 0.05f,
                 .momentum = 0.9f,
                 .nrows = 2};
    for (int k = 0; k < 2; k++) { /* 2:1, then 3:1 */
        rc.rows[k][sim_first ? 0 : 1] = 2 + k;
        rc.rows[k][sim_first ? 1 : 0] = 1;
    }
    return rc;
}

/* Both devices take part in every pass (each chunk of the evaluation too:
 * an idle device is a_device_without_a_share_adds_no_loss's business). */
START_TEST(the_simulator_runs_windows_at_odd_sizes) {
    static const char *const windows[] = {
        "input channels=2 height=6 width=5",
        "conv2d name=c filters=3 size=3 stride=2 pad=1",                                 /* 3x3x3 */
        "relu name=r",                                                                   /* fused */
        "maxpool name=p size=3 stride=2 pad=1 ceil=on",                                  /* 3x2x2 */
        "conv2d name=d input=input filters=2 size=3 stride=2 pad=2 dilation=2 groups=2", /* 2x3x3 */
        "avgpool name=q input=d size=2 stride=2 pad=1 ceil=on count_pad=off",            /* 2x2x2 */
        "concat name=cat input=p,q",
        "batchnorm name=bn",
        "flatten",
        "linear name=fc units=3",
        "softmax_cross_entropy",
    };
    named_case("simulator_windows", windows, 11, simulator_recipe(5, 4, 9, 4));
}
END_TEST

START_TEST(the_simulator_runs_signals_at_odd_sizes) {
    static const char *const ranks[] = {
        "input channels=2 length=9",
        "conv1d name=c filters=2 size=3 stride=2 pad=1",
        "conv_transpose1d name=t filters=2 size=3 stride=2 pad=1 output_pad=1",
        "relu name=r",
        "dropout name=drop p=0.5 seed=1",
        "global_maxpool name=g",
        "linear name=fc units=3",
        "softmax_cross_entropy",
    };
    named_case("simulator_signals", ranks, 8, simulator_recipe(4, 4, 7, 3));
}
END_TEST

START_TEST(generated_with_the_simulator) {
    clnet_device_info info;
    clnet_runtime_device_info(test_runtime(), 0, &info);
    static const uint64_t seeds[] = {31};
    generated_cases(seeds, 1, 4, strstr(info.platform_name, "Oclgrind") ? 0 : 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("splits");
    TCase *two = tcase_create("two");
    tcase_set_timeout(two, 0);
    tcase_add_checked_fixture(two, need_two_fast_devices, NULL);
    tcase_add_test(two, a_share_in_one_chunk_of_a_batch_planned_in_two);
    tcase_add_test(two, a_device_without_a_share_adds_no_loss);
    tcase_add_test(two, batch_norm_capped_shares_lose_no_sample);
    tcase_add_test(two, batch_norm_probe_of_one_value_per_channel);
    tcase_add_test(two, generated_on_two_devices);
    suite_add_tcase(s, two);
    TCase *three = tcase_create("three");
    tcase_set_timeout(three, 0);
    tcase_add_checked_fixture(three, need_three_fast_devices, NULL);
    tcase_add_test(three, generated_on_three_devices);
    suite_add_tcase(s, three);
    TCase *sim = tcase_create("simulator");
    tcase_set_timeout(sim, 0);
    tcase_add_checked_fixture(sim, need_the_simulator, NULL);
    tcase_add_test(sim, the_simulator_runs_windows_at_odd_sizes);
    tcase_add_test(sim, the_simulator_runs_signals_at_odd_sizes);
    tcase_add_test(sim, generated_with_the_simulator);
    suite_add_tcase(s, sim);
    return test_run_suite(s);
}
