/* CIFAR-10 and CIFAR-100 in their binary versions (cifar-10-binary.tar.gz,
 * cifar-100-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html):
 * files of fixed-size records, a label byte (CIFAR-100: a coarse then a fine
 * one) then 3 x 32 x 32 pixel bytes, the red plane, the green, the blue, each
 * row-major: already (C, H, W), so a record's pixels are copied as they are.
 * The files have no header, so the checks are the size (whole records) and
 * each label's range. */
#include "alloc.h"
#include "data.h"
#include "error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CIFAR_SIDE      32
#define CIFAR_PIXELS    (3 * CIFAR_SIDE * CIFAR_SIDE) /* (3, 32, 32) bytes a record */
#define CIFAR10_BATCHES 5                             /* data_batch_1.bin ... data_batch_5.bin */
#define READ_RECORDS    1024                          /* records read at once */
#define NAMES_MAX       (1 << 20)                     /* bytes of a names file, at most */

/* What tells one version from the other. */
typedef struct {
    int classes;
    int label_bytes;    /* 1 (the label) or 2 (coarse, fine: the fine one is kept) */
    int coarse_classes; /* CIFAR-100: 20 coarse labels, checked, not kept; CIFAR-10: 0 */
    const char *train[CIFAR10_BATCHES];
    int train_files;
    const char *test;
    const char *names; /* one class name a line */
} cifar_version;

static const cifar_version cifar10 = {
    .classes = 10,
    .label_bytes = 1,
    .train = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
              "data_batch_5.bin"},
    .train_files = CIFAR10_BATCHES,
    .test = "test_batch.bin",
    .names = "batches.meta.txt",
};

static const cifar_version cifar100 = {
    .classes = 100,
    .label_bytes = 2,
    .coarse_classes = 20,
    .train = {"train.bin"},
    .train_files = 1,
    .test = "test.bin",
    .names = "fine_label_names.txt",
};

static int holds(const char *dir, const char *name) {
    char *path = clnet_path_join(dir, name);
    struct stat st;
    int yes = path && stat(path, &st) == 0;
    free(path);
    return yes;
}

int clnet_cifar_version(const char *dir) {
    if (holds(dir, cifar10.train[0]) || holds(dir, cifar10.test)) return 10;
    if (holds(dir, cifar100.train[0]) || holds(dir, cifar100.test)) return 100;
    return 0;
}

/* The records of one file, from its size: CLNET_ERR_IO when it is missing,
 * CLNET_ERR_FORMAT when it is empty or not a whole number of records. */
static clnet_status count_records(const char *path, size_t record, long *records) {
    struct stat st;
    if (stat(path, &st) != 0)
        return clnet_fail(CLNET_ERR_IO, "%s: cannot read the CIFAR batch file: %s", path,
                          strerror(errno));
    if (!S_ISREG(st.st_mode))
        return clnet_fail(CLNET_ERR_IO, "%s: the CIFAR batch file is not a file", path);
    size_t size = (size_t)st.st_size;
    if (size == 0)
        return clnet_fail(CLNET_ERR_FORMAT, "%s: empty file: want records of %zu bytes", path,
                          record);
    if (size % record)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: truncated: %zu bytes are %zu whole records of %zu bytes and %zu "
                          "bytes left over",
                          path, size, size / record, record, size % record);
    if (size / record > INT_MAX)
        return clnet_fail(CLNET_ERR_FORMAT, "%s: %zu records: more than an int holds", path,
                          size / record);
    *records = (long)(size / record);
    return CLNET_OK;
}

/* Reads the first n records of path into the data set from sample `first`:
 * pixels (n, 3, 32, 32) into images, the (fine) label into labels, each
 * label checked. `buf` holds READ_RECORDS records. */
static clnet_status read_records(clnet_dataset *ds, const cifar_version *v, const char *path,
                                 int first, long n, uint8_t *buf) {
    clnet_status status = CLNET_OK;
    size_t record = (size_t)v->label_bytes + CIFAR_PIXELS;
    FILE *f = fopen(path, "rb");
    if (!f) FAIL(CLNET_ERR_IO, "%s: cannot open the CIFAR batch file: %s", path, strerror(errno));
    for (long done = 0; done < n;) {
        long want = n - done < READ_RECORDS ? n - done : READ_RECORDS;
        size_t got = fread(buf, record, (size_t)want, f);
        if (got < (size_t)want) {
            if (ferror(f)) FAIL(CLNET_ERR_IO, "%s: read error: %s", path, strerror(errno));
            FAIL(CLNET_ERR_FORMAT, "%s: truncated: the file ended after %ld records, want %ld",
                 path, done + (long)got, n);
        }
        for (long r = 0; r < want; r++) {
            const uint8_t *rec = buf + (size_t)r * record;
            long index = done + r; /* the record's index in its file */
            if (v->coarse_classes && rec[0] >= v->coarse_classes)
                FAIL(CLNET_ERR_FORMAT, "%s: record %ld: coarse label %d, want 0 to %d", path, index,
                     rec[0], v->coarse_classes - 1);
            int label = rec[v->label_bytes - 1];
            if (label >= v->classes)
                FAIL(CLNET_ERR_FORMAT, "%s: record %ld: %slabel %d, want 0 to %d", path, index,
                     v->coarse_classes ? "fine " : "", label, v->classes - 1);
            size_t sample = (size_t)first + (size_t)index;
            ds->labels[sample] = label;
            memcpy(ds->images + sample * CIFAR_PIXELS, rec + v->label_bytes, CIFAR_PIXELS);
        }
        done += want;
    }
cleanup:
    if (f) fclose(f);
    return status;
}

/* The class names of path, one a line, into ds->class_names: nothing when
 * the file is missing; CLNET_ERR_FORMAT unless it holds exactly `classes`
 * names (trailing white space and empty lines at the end are not counted:
 * the official files end with one). */
static clnet_status read_names(clnet_dataset *ds, const char *path, int classes) {
    clnet_status status = CLNET_OK;
    char *text = NULL, **names = NULL;
    int found = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return CLNET_OK; /* no names: training does not need them */
        FAIL(CLNET_ERR_IO, "%s: cannot open the class names: %s", path, strerror(errno));
    }
    text = clnet_malloc(NAMES_MAX + 1);
    names = clnet_calloc((size_t)classes, sizeof *names);
    if (!text || !names) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %s", path);
    size_t n = fread(text, 1, NAMES_MAX + 1, f);
    if (ferror(f)) FAIL(CLNET_ERR_IO, "%s: read error: %s", path, strerror(errno));
    if (n > NAMES_MAX)
        FAIL(CLNET_ERR_FORMAT, "%s: more than %d bytes: not a file of class names", path,
             NAMES_MAX);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' ||
                 text[n - 1] == '\t'))
        n--;
    text[n] = '\0';
    for (char *line = text; n && line;) {
        char *end = strchr(line, '\n'), *next = end ? end + 1 : NULL;
        if (!end) end = line + strlen(line);
        while (end > line && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) end--;
        if (end == line)
            FAIL(CLNET_ERR_FORMAT, "%s: line %d is empty: want %d class names, one a line", path,
                 found + 1, classes);
        if (found < classes) {
            size_t len = (size_t)(end - line);
            names[found] = clnet_malloc(len + 1);
            if (!names[found]) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %s", path);
            memcpy(names[found], line, len);
            names[found][len] = '\0';
        }
        found++;
        line = next;
    }
    if (found != classes)
        FAIL(CLNET_ERR_FORMAT, "%s: %d class names, want %d (one a line)", path, found, classes);
    ds->class_names = names;
    names = NULL;
cleanup:
    if (f) fclose(f);
    free(text);
    for (int k = 0; names && k < classes; k++) free(names[k]);
    free(names);
    return status;
}

clnet_status clnet_dataset_load_cifar(clnet_dataset **out, const char *dir, int version, int train,
                                      int limit) {
    clnet_status status = CLNET_OK;
    clnet_dataset *ds = NULL;
    uint8_t *buf = NULL;
    char *paths[CIFAR10_BATCHES] = {0}, *names = NULL;
    long records[CIFAR10_BATCHES] = {0};
    *out = NULL;
    const cifar_version *v = version == 100 ? &cifar100 : &cifar10;
    int files = train ? v->train_files : 1;
    size_t record = (size_t)v->label_bytes + CIFAR_PIXELS;
    /* Every file is there and whole (a stat each) before any is read. */
    long total = 0;
    for (int i = 0; i < files; i++) {
        paths[i] = clnet_path_join(dir, train ? v->train[i] : v->test);
        if (!paths[i]) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a path");
        TRY(count_records(paths[i], record, &records[i]));
        total += records[i];
        if (total > INT_MAX / CIFAR_PIXELS)
            FAIL(CLNET_ERR_FORMAT, "%s: more than %d records in the split", paths[i],
                 INT_MAX / CIFAR_PIXELS);
    }
    int count = limit && limit < total ? limit : (int)total;
    ds = clnet_calloc(1, sizeof *ds);
    if (!ds) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a data set");
    ds->count = count;
    ds->channels = 3, ds->height = CIFAR_SIDE, ds->width = CIFAR_SIDE;
    ds->rank = 3; /* as .npy's (N, 3, 32, 32) gives it */
    ds->dims[0] = 3, ds->dims[1] = CIFAR_SIDE, ds->dims[2] = CIFAR_SIDE;
    ds->classes = v->classes; /* the data set's, whatever labels the records loaded hold */
    ds->images = clnet_malloc((size_t)count * CIFAR_PIXELS);
    ds->labels = clnet_malloc((size_t)count * sizeof *ds->labels);
    buf = clnet_malloc(READ_RECORDS * record);
    if (!ds->images || !ds->labels || !buf)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for %d CIFAR images", count);
    int first = 0;
    for (int i = 0; i < files && first < count; i++) {
        long n = count - first < records[i] ? count - first : records[i];
        TRY(read_records(ds, v, paths[i], first, n, buf));
        first += (int)n;
    }
    names = clnet_path_join(dir, v->names);
    if (!names) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a path");
    TRY(read_names(ds, names, v->classes));
    *out = ds;
    ds = NULL;
cleanup:
    for (int i = 0; i < CIFAR10_BATCHES; i++) free(paths[i]);
    free(names);
    free(buf);
    clnet_dataset_free(ds);
    return status;
}
