/* make_volumes: a synthetic 3-D classification data set for
 * examples/models/volumes3d.cfg, written as NumPy .npy files.
 *
 *   build/make_volumes [--seed S] [--train N] [--test N] [--size D] [--masks] DIR
 *
 * Each sample is a D x D x D volume (32 by default) holding one solid shape,
 * voxels 1 inside and 0 outside, plus Gaussian noise of standard deviation
 * 0.3. The classes, labels 0 to 3 in this order:
 *   0 sphere    radius 5-12
 *   1 cube      half-side 5-12, randomly rotated
 *   2 torus     major radius 6-10, minor (tube) radius 2.5-4.5 and at most the
 *               major less 2 (a hole at least 4 voxels across), randomly rotated
 *   3 cylinder  half-length 5-12, radius 3-8, randomly rotated
 * (sizes in voxels at D = 32, scaled by D / 32). A voxel is inside when its
 * centre is. Rotations are uniform over all 3-D rotations (a random unit
 * quaternion, Shoemake's method). The centre is uniform over the positions
 * that keep the shape's bounding sphere inside the volume; where that sphere
 * is wider than the volume (large rotated cubes and cylinders) the centre is
 * the volume's and the corners are cut off.
 *
 * The values v are stored as uint8, a quarter of float32's size (8,000
 * volumes of 32^3 are 256 MiB instead of 1 GiB): byte = round((v + 1.5) / 4 *
 * 255), clamped to 0..255, which keeps [-1.5, 2.5] (5 standard deviations of
 * noise either side of 0 and 1) in steps of 0.016. clnet reads a byte b as
 * b / 255, so `--mean 0.375 --std 0.25` gives v back: (b/255 - 0.375) / 0.25 =
 * v, up to the rounding.
 *
 * Files in DIR: x_train.npy (N, 1, D, D, D) uint8, y_train.npy (N,) int64,
 * x_test.npy, y_test.npy; with --masks also m_train.npy and m_test.npy, the
 * volumes before the noise (uint8, 1 inside, 0 outside). Every block of four
 * samples holds the four classes in a random order, so the classes are
 * balanced, and every sample depends only on the seed, its split and its
 * index: --train 800 writes the first 800 samples of the default set. The
 * same seed gives the same bytes. Plain C11 and libm; no clnet. */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { SPHERE, CUBE, TORUS, CYLINDER, CLASSES };
static const char *const class_names[CLASSES] = {"sphere", "cube", "torus", "cylinder"};

#define NOISE_STD 0.3
#define CODE_LOW  -1.5 /* the value stored as byte 0 */
#define CODE_SPAN 4.0  /* ... and CODE_LOW + CODE_SPAN as byte 255 */
#define PI        3.14159265358979323846

/* ---- random numbers: xoshiro256**, seeded through splitmix64 ---- */

typedef struct {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* One independent stream per (seed, stream, index): samples do not depend on
 * how many others are drawn. */
static void rng_seed(rng *r, uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t x = seed;
    x = splitmix64(&x) ^ (stream + 1) * 0xD1B54A32D192ED03u;
    x = splitmix64(&x) ^ (index + 1) * 0xAEF17502108EF2D9u;
    for (int k = 0; k < 4; k++) r->s[k] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1), 53 bits. */
static double rng_uniform(rng *r) {
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

static double rng_range(rng *r, double lo, double hi) {
    return lo + (hi - lo) * rng_uniform(r);
}

/* Two independent N(0, 1) draws (Box-Muller). */
static void rng_gauss2(rng *r, double *a, double *b) {
    double u = 1.0 - rng_uniform(r); /* (0, 1]: log(u) is finite */
    double m = sqrt(-2.0 * log(u)), t = 2.0 * PI * rng_uniform(r);
    *a = m * cos(t);
    *b = m * sin(t);
}

/* ---- shapes ---- */

typedef struct {
    int kind;
    double center[3]; /* voxel coordinates (x, y, z) */
    double rot[3][3]; /* the shape's own coordinates are rot * (p - center) */
    double a, b;      /* sphere: radius a; cube: half-side a; torus: major radius a,
                         minor b; cylinder: radius a, half-length b (along its z) */
} shape;

/* A rotation drawn uniformly (Shoemake 1992: a uniform unit quaternion). */
static void random_rotation(rng *r, double m[3][3]) {
    double u1 = rng_uniform(r), u2 = 2 * PI * rng_uniform(r), u3 = 2 * PI * rng_uniform(r);
    double x = sqrt(1 - u1) * sin(u2), y = sqrt(1 - u1) * cos(u2);
    double z = sqrt(u1) * sin(u3), w = sqrt(u1) * cos(u3);
    double rows[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
                         {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
                         {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}};
    memcpy(m, rows, sizeof rows);
}

/* Draws a shape of the given kind for a volume of `size` voxels a side. */
static void draw_shape(rng *r, int kind, int size, shape *s) {
    double k = size / 32.0, bound = 0; /* the radius of the bounding sphere */
    s->kind = kind;
    switch (kind) {
    case SPHERE:
        s->a = k * rng_range(r, 5, 12), s->b = 0, bound = s->a;
        break;
    case CUBE:
        s->a = k * rng_range(r, 5, 12), s->b = 0, bound = s->a * sqrt(3.0);
        break;
    case TORUS:
        s->a = k * rng_range(r, 6, 10);
        s->b = k * rng_range(r, 2.5, fmin(4.5, s->a / k - 2)), bound = s->a + s->b;
        break;
    default: /* CYLINDER */
        s->a = k * rng_range(r, 3, 8), s->b = k * rng_range(r, 5, 12);
        bound = sqrt(s->a * s->a + s->b * s->b);
    }
    double identity[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    if (kind == SPHERE)
        memcpy(s->rot, identity, sizeof identity);
    else
        random_rotation(r, s->rot);
    double margin = fmin(bound, (size - 1) / 2.0);
    for (int i = 0; i < 3; i++) s->center[i] = rng_range(r, margin, size - 1 - margin);
}

static int inside(const shape *s, const double q[3]) {
    double radial2 = q[0] * q[0] + q[1] * q[1];
    switch (s->kind) {
    case SPHERE:
        return radial2 + q[2] * q[2] <= s->a * s->a;
    case CUBE:
        return fabs(q[0]) <= s->a && fabs(q[1]) <= s->a && fabs(q[2]) <= s->a;
    case TORUS: {
        double ring = sqrt(radial2) - s->a; /* distance from the tube's centre circle */
        return ring * ring + q[2] * q[2] <= s->b * s->b;
    }
    default:
        return radial2 <= s->a * s->a && fabs(q[2]) <= s->b;
    }
}

static uint8_t encode(double v) {
    double b = nearbyint((v - CODE_LOW) / CODE_SPAN * 255.0);
    return (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
}

/* Fills mask (D, H, W) with the shape, 1 inside and 0 outside, and x with the
 * noisy values, encoded. */
static void render(rng *r, const shape *s, int size, uint8_t *mask, uint8_t *x) {
    size_t at = 0;
    for (int z = 0; z < size; z++)
        for (int y = 0; y < size; y++)
            for (int w = 0; w < size; w++, at++) {
                double d[3] = {w - s->center[0], y - s->center[1], z - s->center[2]}, q[3];
                for (int i = 0; i < 3; i++)
                    q[i] = s->rot[i][0] * d[0] + s->rot[i][1] * d[1] + s->rot[i][2] * d[2];
                mask[at] = (uint8_t)inside(s, q);
            }
    size_t n = at;
    for (size_t i = 0; i < n; i += 2) {
        double g[2];
        rng_gauss2(r, &g[0], &g[1]);
        x[i] = encode(mask[i] + NOISE_STD * g[0]);
        if (i + 1 < n) x[i + 1] = encode(mask[i + 1] + NOISE_STD * g[1]);
    }
}

/* The label of sample i of a split: blocks of four hold each class once. */
static int label_of(uint64_t seed, int split, int64_t i) {
    rng r;
    int order[CLASSES] = {0, 1, 2, 3};
    rng_seed(&r, seed, 2 * (uint64_t)split, (uint64_t)(i / CLASSES));
    for (int j = CLASSES - 1; j > 0; j--) { /* Fisher-Yates */
        int k = (int)(rng_next(&r) % (uint64_t)(j + 1)), t = order[j];
        order[j] = order[k], order[k] = t;
    }
    return order[i % CLASSES];
}

/* ---- .npy files ---- */

typedef struct {
    char path[4096], temp[4100];
    FILE *f;
} npy_file;

/* Opens DIR/NAME.tmp and writes a .npy (version 1.0) header for C-order data
 * of type descr and the given shape. 0 on success, else -1 with a message. */
static int npy_open(npy_file *o, const char *dir, const char *name, const char *descr, int rank,
                    const int64_t *shape) {
    char dict[256];
    int n =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)shape[i],
                      i + 1 < rank ? " " : "");
    if (rank > 1) n--; /* (N,) for one dimension, (N, C, D) for more */
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    int total = (10 + n + 1 + 63) / 64 * 64; /* magic, version, length, dict, '\n' */
    while (10 + n + 1 < total) dict[n++] = ' ';
    dict[n++] = '\n';
    snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
    snprintf(o->temp, sizeof o->temp, "%s.tmp", o->path);
    o->f = fopen(o->temp, "wb");
    if (!o->f) {
        fprintf(stderr, "make_volumes: cannot create %s: %s\n", o->temp, strerror(errno));
        return -1;
    }
    unsigned char head[10] = {
        0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xFF), (unsigned char)(n >> 8)};
    fwrite(head, 1, sizeof head, o->f);
    fwrite(dict, 1, (size_t)n, o->f);
    return 0;
}

/* Closes the file and renames it into place, so an interrupted run never
 * leaves a whole-looking file. 0 on success, else -1 with a message. */
static int npy_close(npy_file *o) {
    int bad = ferror(o->f);
    if (fclose(o->f) != 0) bad = 1;
    o->f = NULL;
    if (bad || rename(o->temp, o->path) != 0) {
        fprintf(stderr, "make_volumes: cannot write %s: %s\n", o->path, strerror(errno));
        remove(o->temp);
        return -1;
    }
    return 0;
}

/* ---- the program ---- */

typedef struct {
    uint64_t seed;
    int64_t count[2]; /* train, test */
    int size, masks;
    const char *dir;
} options;

typedef struct {
    int64_t per_class[CLASSES];
    double sum, sum2; /* of the stored values decoded, b / 255 */
} split_stats;

/* Writes the noisy volume and, when masks is not NULL, the clean one. */
static int write_sample(npy_file *x, npy_file *m, const uint8_t *xv, const uint8_t *mv, size_t n) {
    if (fwrite(xv, 1, n, x->f) != n) return -1;
    if (m && fwrite(mv, 1, n, m->f) != n) return -1;
    return 0;
}

static void add_stats(split_stats *st, const uint8_t *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double u = x[i] / 255.0;
        st->sum += u, st->sum2 += u * u;
    }
}

/* Writes the samples of one split (0 train, 1 test) and their labels. */
static int write_split(const options *o, int split, split_stats *st) {
    const char *names[2] = {"train", "test"};
    int64_t n = o->count[split], d = o->size;
    int64_t xshape[5] = {n, 1, d, d, d};
    size_t voxels = (size_t)(d * d * d);
    char name[64];
    npy_file x, m, y;
    uint8_t *xv = malloc(voxels), *mv = malloc(voxels);
    int64_t *labels = malloc((size_t)(n ? n : 1) * sizeof *labels);
    int rc = -1, with_m = 0, with_y = 0, written = 1;
    if (!xv || !mv || !labels) {
        fprintf(stderr, "make_volumes: out of memory\n");
        goto done;
    }
    snprintf(name, sizeof name, "x_%s.npy", names[split]);
    if (npy_open(&x, o->dir, name, "|u1", 5, xshape) != 0) goto done;
    snprintf(name, sizeof name, "m_%s.npy", names[split]);
    if (o->masks && npy_open(&m, o->dir, name, "|u1", 5, xshape) != 0) goto close_x;
    with_m = o->masks;
    for (int64_t i = 0; i < n; i++) {
        rng r;
        shape s;
        labels[i] = label_of(o->seed, split, i);
        rng_seed(&r, o->seed, 2 * (uint64_t)split + 1, (uint64_t)i);
        draw_shape(&r, (int)labels[i], o->size, &s);
        render(&r, &s, o->size, mv, xv);
        if (write_sample(&x, with_m ? &m : NULL, xv, mv, voxels) != 0) {
            written = 0; /* npy_close says why */
            break;
        }
        st->per_class[labels[i]]++;
        add_stats(st, xv, voxels);
        if ((i + 1) % (n / 10 > 0 ? n / 10 : 1) == 0 || i + 1 == n)
            fprintf(stderr, "make_volumes: %s %lld/%lld volumes\n", names[split],
                    (long long)(i + 1), (long long)n);
    }
    snprintf(name, sizeof name, "y_%s.npy", names[split]);
    with_y = written && npy_open(&y, o->dir, name, "<i8", 1, &n) == 0;
    for (int64_t i = 0; with_y && i < n; i++) {
        unsigned char le[8];
        for (int b = 0; b < 8; b++) le[b] = (unsigned char)((uint64_t)labels[i] >> (8 * b));
        fwrite(le, 1, sizeof le, y.f);
    }
    rc = with_y && npy_close(&y) == 0 ? 0 : -1;
    if (with_m && npy_close(&m) != 0) rc = -1;
close_x:
    if (npy_close(&x) != 0) rc = -1;
done:
    free(xv), free(mv), free(labels);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f, "usage: make_volumes [--seed S] [--train N] [--test N] [--size D] [--masks] DIR\n"
               "  writes DIR/x_train.npy (N, 1, D, D, D) uint8, y_train.npy (N,) int64,\n"
               "  x_test.npy and y_test.npy: spheres, cubes, tori and cylinders (labels 0-3)\n"
               "  with noise; defaults: seed 1, 8000 training and 2000 test volumes of 32^3.\n"
               "  Train clnet with --mean 0.375 --std 0.25 to read the values back.\n"
               "  --masks also writes m_train.npy and m_test.npy, the volumes without noise.\n");
}

/* A whole number in [lo, hi] from text; -1 (with a message) if it is not. */
static long long parse_count(const char *option, const char *text, long long lo, long long hi) {
    char *end = NULL;
    errno = 0;
    long long v = text ? strtoll(text, &end, 10) : 0;
    if (!text || errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "make_volumes: %s: expected a whole number from %lld to %lld, got '%s'\n",
                option, lo, hi, text ? text : "");
        return -1;
    }
    return v;
}

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.seed = 1, .count = {8000, 2000}, .size = 32};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 1;
        if (!strcmp(a, "--masks")) {
            o->masks = 1;
            continue;
        }
        if (!strcmp(a, "--seed"))
            o->seed = (uint64_t)(n = parse_count(a, v, 0, INT64_MAX));
        else if (!strcmp(a, "--train"))
            o->count[0] = n = parse_count(a, v, 0, 1000000000);
        else if (!strcmp(a, "--test"))
            o->count[1] = n = parse_count(a, v, 0, 1000000000);
        else if (!strcmp(a, "--size"))
            o->size = (int)(n = parse_count(a, v, 8, 256));
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "make_volumes: unknown option '%s'\n", a);
            return usage(stderr), -1;
        } else if (!o->dir) {
            o->dir = a;
            continue;
        } else {
            fprintf(stderr, "make_volumes: one output folder, not '%s' too\n", a);
            return -1;
        }
        if (n < 0) return -1;
        i++;
    }
    if (!o->dir) {
        fprintf(stderr, "make_volumes: name the output folder\n");
        return usage(stderr), -1;
    }
    return 0;
}

static void report(const options *o, int split, const split_stats *st) {
    const char *names[2] = {"train", "test"};
    int64_t n = o->count[split], d = o->size;
    double values = (double)n * (double)(d * d * d), mean = values ? st->sum / values : 0;
    double sd = values ? sqrt(fmax(0, st->sum2 / values - mean * mean)) : 0;
    printf("%s/x_%s.npy (%lld, 1, %lld, %lld, %lld) uint8, %s/y_%s.npy (%lld,) int64:", o->dir,
           names[split], (long long)n, (long long)d, (long long)d, (long long)d, o->dir,
           names[split], (long long)n);
    for (int c = 0; c < CLASSES; c++)
        printf(" %lld %s%s", (long long)st->per_class[c], class_names[c],
               c + 1 < CLASSES ? "," : "");
    printf("; bytes/255 have mean %.4f, std %.4f\n", mean, sd);
}

int main(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0) return rc > 0 ? 0 : 2;
    if (mkdir(o.dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "make_volumes: cannot create %s: %s\n", o.dir, strerror(errno));
        return 1;
    }
    for (int split = 0; split < 2; split++) {
        split_stats st = {{0}, 0, 0};
        if (write_split(&o, split, &st) != 0) return 1;
        report(&o, split, &st);
    }
    printf("seed %llu; values v = (bytes/255 - 0.375) / 0.25: clnet train --mean 0.375 --std "
           "0.25\n",
           (unsigned long long)o.seed);
    return 0;
}
