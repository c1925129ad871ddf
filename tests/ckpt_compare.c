/* Compares two checkpoints tensor by tensor, for the tests that check that
 * one run equals another (several ranks against one process):
 *
 *   ckpt_compare START A B TOLERANCE [bias-by-weight]
 *
 * For every float tensor t (parameters, buffers, optimizer state) it takes
 * the change each run made from START, dA = A - START and dB = B - START,
 * and its relative difference |dA - dB| / |dB| (Euclidean norms; a tensor
 * neither run changed counts as 0; a tensor START lacks, such as optimizer
 * state, starts from 0). With START "-" it compares A with B themselves. Every tensor of A must be
 * in B with the same shape, and the other way round; int64 tensors (counters) must be equal. Prints
 * the worst tensor and exits 0 when it is within TOLERANCE, else 1 (2: unreadable).
 *
 * bias-by-weight: a tensor "X.bias" is measured against the change of
 * "X.weight" when that is larger. For models with batch norm: the bias of
 * a convolution that feeds a norm has a gradient of exactly zero in exact
 * arithmetic (the norm subtracts the channel's mean), so both runs hold
 * only rounding noise there, and noise against noise is no measure. */
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clnet_st_file *load(const char *path) {
    clnet_st_file *f = NULL;
    if (clnet_st_load(path, &f) != CLNET_OK) {
        fprintf(stderr, "ckpt_compare: %s\n", clnet_last_error());
        exit(2);
    }
    return f;
}

static size_t elements(int ndim, const int64_t *shape) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    return n;
}

/* |dA - dB| and |dB| over one tensor, in double. */
static void norms(const float *start, const float *a, const float *b, size_t n, double *diff,
                  double *ref) {
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double s = start ? start[i] : 0, da = a[i] - s, db = b[i] - s;
        d += (da - db) * (da - db);
        r += db * db;
    }
    *diff = sqrt(d);
    *ref = sqrt(r);
}

/* The norm of B's change of the tensor called name, or 0 when there is none. */
static double change(clnet_st_file *s, clnet_st_file *b, const char *name) {
    const float *y = NULL, *z = NULL;
    int ndim = 0;
    const int64_t *shape = NULL;
    if (clnet_st_info(b, name, NULL, &ndim, &shape) != CLNET_OK ||
        clnet_st_get(b, name, ndim, shape, &y, NULL, NULL) != CLNET_OK)
        return 0;
    if (s && clnet_st_info(s, name, NULL, NULL, NULL) == CLNET_OK)
        clnet_st_get(s, name, ndim, shape, &z, NULL, NULL);
    double diff = 0, ref = 0;
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    norms(z, y, y, n, &diff, &ref);
    return ref;
}

int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 6 && strcmp(argv[5], "bias-by-weight") == 0)) {
        fprintf(stderr, "usage: ckpt_compare START|- A B TOLERANCE [bias-by-weight]\n");
        return 2;
    }
    int bias_by_weight = argc == 6;
    clnet_st_file *s = strcmp(argv[1], "-") ? load(argv[1]) : NULL, *a = load(argv[2]),
                  *b = load(argv[3]);
    double tolerance = atof(argv[4]), worst = 0;
    const char *worst_name = "(none)";
    int bad = 0, tensors = 0;
    if (clnet_st_count(a) != clnet_st_count(b)) {
        printf("FAIL: %s has %d tensors, %s has %d\n", argv[2], clnet_st_count(a), argv[3],
               clnet_st_count(b));
        return 1;
    }
    for (int i = 0; i < clnet_st_count(a); i++) {
        const char *name = clnet_st_name(a, i);
        clnet_st_dtype type;
        int ndim = 0;
        const int64_t *shape = NULL;
        clnet_st_info(a, name, &type, &ndim, &shape);
        size_t n = elements(ndim, shape);
        if (type == CLNET_ST_I64) {
            const int64_t *x = NULL, *y = NULL;
            if (clnet_st_get_i64(b, name, ndim, shape, &y, NULL, NULL) != CLNET_OK ||
                clnet_st_get_i64(a, name, ndim, shape, &x, NULL, NULL) != CLNET_OK ||
                memcmp(x, y, n * sizeof *x) != 0) {
                printf("FAIL: %s differs or is missing\n", name);
                bad = 1;
            }
            continue;
        }
        const float *x = NULL, *y = NULL, *z = NULL;
        if (s && clnet_st_info(s, name, NULL, NULL, NULL) == CLNET_OK &&
            clnet_st_get(s, name, ndim, shape, &z, NULL, NULL) != CLNET_OK) {
            printf("FAIL: %s: %s\n", name, clnet_last_error());
            bad = 1;
            continue;
        }
        if (clnet_st_get(b, name, ndim, shape, &y, NULL, NULL) != CLNET_OK ||
            clnet_st_get(a, name, ndim, shape, &x, NULL, NULL) != CLNET_OK) {
            printf("FAIL: %s: %s\n", name, clnet_last_error());
            bad = 1;
            continue;
        }
        double diff = 0, ref = 0;
        norms(z, x, y, n, &diff, &ref);
        size_t len = strlen(name);
        if (bias_by_weight && len > 5 && strcmp(name + len - 5, ".bias") == 0) {
            char weight[512];
            snprintf(weight, sizeof weight, "%.*s.weight", (int)(len - 5), name);
            double w = change(s, b, weight);
            if (w > ref) ref = w;
        }
        double r = diff == 0 ? 0 : ref > 0 ? diff / ref : INFINITY;
        tensors++;
        if (!(r <= worst)) worst = r, worst_name = name;
    }
    printf("%d float tensors; the largest relative difference%s: %.3g (%s), tolerance %g\n",
           tensors, s ? " of the updates" : "", worst, worst_name, tolerance);
    clnet_st_free(s), clnet_st_free(a), clnet_st_free(b);
    return bad || !(worst <= tolerance) ? 1 : 0;
}
