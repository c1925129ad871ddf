/* Image folders in torchvision's ImageFolder layout: ROOT/CLASS/IMAGE, the classes numbered
 * in the sorted order of their folders' names, the images of a class in the sorted order of
 * theirs. Only the list is read here (each image's header, for its size and channels); the
 * loader decodes the pixels as it needs them (loader.c), so a folder larger than memory
 * trains. With skip_bad, every image is decoded once here, and those that fail are left out
 * and listed, so that none can fail later. */
#include "alloc.h"
#include "data.h"
#include "error.h"
#include "image.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK_THREADS_MAX 16 /* threads decoding the images of skip_bad's check */

/* A growing list of heap strings. */
typedef struct {
    char **items;
    int count, cap;
} names;

static int names_add(names *n, char *s) {
    if (!s) return 0;
    if (n->count == n->cap) {
        int cap = n->cap ? 2 * n->cap : 64;
        char **items = cap > n->cap ? clnet_realloc(n->items, (size_t)cap * sizeof *items) : NULL;
        if (!items) {
            free(s);
            return 0;
        }
        n->items = items, n->cap = cap;
    }
    n->items[n->count++] = s;
    return 1;
}

static void names_free(names *n) {
    for (int i = 0; i < n->count; i++) free(n->items[i]);
    free(n->items);
    *n = (names){0};
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1: a name clnet decodes (.png, .jpg, .jpeg, any case); 2: an image of a format it does not
 * (torchvision's other extensions: a file that would be lost without a word); 0: not an image. */
static int image_kind(const char *name) {
    static const char *const decoded[] = {".png", ".jpg", ".jpeg"};
    static const char *const other[] = {".bmp", ".gif", ".pgm", ".ppm", ".tif", ".tiff", ".webp"};
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (size_t i = 0; i < sizeof decoded / sizeof *decoded; i++)
        if (strcasecmp(dot, decoded[i]) == 0) return 1;
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        if (strcasecmp(dot, other[i]) == 0) return 2;
    return 0;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int clnet_is_image_folder(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char *path = clnet_path_join(dir, e->d_name);
        found = path && is_dir(path);
        free(path);
    }
    closedir(d);
    return found;
}

/* The entries of dir, sorted, hidden ones (a leading '.') left out: folders when want_dirs,
 * else files. */
static clnet_status list_dir(const char *dir, int want_dirs, names *out) {
    clnet_status status = CLNET_OK;
    DIR *d = opendir(dir);
    if (!d) FAIL(CLNET_ERR_IO, "image folder %s: %s", dir, strerror(errno));
    errno = 0;
    for (struct dirent *e; (e = readdir(d)); errno = 0) {
        if (e->d_name[0] == '.') continue;
        char *path = clnet_path_join(dir, e->d_name);
        if (!path) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory listing %s", dir);
        int dir_entry = is_dir(path);
        free(path);
        if (dir_entry == want_dirs && !names_add(out, clnet_copy_text(e->d_name)))
            FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory listing %s", dir);
    }
    if (errno) FAIL(CLNET_ERR_IO, "image folder %s: cannot list it: %s", dir, strerror(errno));
    if (out->count > 1) qsort(out->items, (size_t)out->count, sizeof *out->items, by_name);
cleanup:
    if (d) closedir(d);
    return status;
}

/* What the listing found: every image's path and label, and the problems skip_bad set aside. */
typedef struct {
    names files, skipped;
    int32_t *labels;
    int labels_cap;
} listing;

static clnet_status add_file(listing *l, char *path, int label) {
    if (l->files.count == l->labels_cap) {
        int cap = l->labels_cap ? 2 * l->labels_cap : 256;
        int32_t *labels = clnet_realloc(l->labels, (size_t)cap * sizeof *labels);
        if (!labels) {
            free(path);
            return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for an image list");
        }
        l->labels = labels, l->labels_cap = cap;
    }
    l->labels[l->files.count] = label;
    if (!names_add(&l->files, path))
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for an image list");
    return CLNET_OK;
}

/* Records "what" as skipped (skip_bad), or fails with it. */
static clnet_status bad_file(listing *l, int skip_bad, const char *what) {
    if (!skip_bad) return clnet_fail(CLNET_ERR_FORMAT, "%s", what);
    if (!names_add(&l->skipped, clnet_copy_text(what)))
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for the skipped images");
    return CLNET_OK;
}

/* The images of the folder dir, in sorted order, labelled `label`, into l: its .png, .jpg and
 * .jpeg files; other files passed by (as torchvision does), images of other formats refused
 * (or skipped). The count found in *found. */
static clnet_status list_images(listing *l, const char *dir, int label, int skip_bad, int *found) {
    clnet_status status = CLNET_OK;
    names entries = {0};
    int before = l->files.count;
    TRY(list_dir(dir, 0, &entries));
    for (int i = 0; i < entries.count; i++) {
        int kind = image_kind(entries.items[i]);
        if (kind == 0) continue; /* not an image: torchvision passes it by too */
        char *path = clnet_path_join(dir, entries.items[i]);
        if (!path) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a path");
        if (kind == 2) {
            char what[PATH_MAX + 128];
            snprintf(what, sizeof what,
                     "%s: not a format clnet decodes (PNG and JPEG: convert it, or "
                     "--skip-bad-images leaves it out)",
                     path);
            free(path);
            TRY(bad_file(l, skip_bad, what));
            continue;
        }
        TRY(add_file(l, path, label));
    }
cleanup:
    *found = l->files.count - before;
    names_free(&entries);
    return status;
}

/* The images of one class folder: one at least. */
static clnet_status list_class(listing *l, const char *root, const char *class_name, int label,
                               int skip_bad) {
    clnet_status status = CLNET_OK;
    int found = 0;
    char *dir = clnet_path_join(root, class_name);
    if (!dir) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a path");
    TRY(list_images(l, dir, label, skip_bad, &found));
    if (found == 0)
        FAIL(CLNET_ERR_FORMAT,
             "image folder %s: class '%s' holds no .png, .jpg or .jpeg file (every class folder "
             "needs one at least)",
             root, class_name);
cleanup:
    free(dir);
    return status;
}

/* The check of skip_bad: every image decoded, on several threads; bad[i] 1 for a file that
 * fails, its message in why[i]. */
typedef struct {
    char **files;
    int count;
    atomic_int next;
    char **why;
} check_job;

static void *check_thread(void *arg) {
    check_job *job = arg;
    for (int i; (i = atomic_fetch_add(&job->next, 1)) < job->count;) {
        clnet_image img = {0};
        if (clnet_image_decode_file(job->files[i], &img) != CLNET_OK)
            job->why[i] = clnet_copy_text(clnet_last_error());
        clnet_image_free(&img);
    }
    return NULL;
}

static clnet_status decode_all(listing *l, int threads) {
    clnet_status status = CLNET_OK;
    check_job job = {.files = l->files.items, .count = l->files.count};
    job.why = clnet_calloc((size_t)(l->files.count ? l->files.count : 1), sizeof *job.why);
    pthread_t ids[CHECK_THREADS_MAX];
    int started = 0;
    if (!job.why) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory checking %d images", job.count);
    if (threads < 1) threads = 1;
    if (threads > CHECK_THREADS_MAX) threads = CHECK_THREADS_MAX;
    for (; started < threads - 1; started++) {
        clnet_count_thread();
        if (pthread_create(&ids[started], NULL, check_thread, &job) != 0) break;
    }
    check_thread(&job); /* this thread too (alone when none started) */
    for (int t = 0; t < started; t++) pthread_join(ids[t], NULL);
    /* Keep the good ones, in order; list the others. */
    int kept = 0;
    for (int i = 0; i < l->files.count; i++) {
        if (!job.why[i]) {
            l->files.items[kept] = l->files.items[i];
            l->labels[kept++] = l->labels[i];
            continue;
        }
        free(l->files.items[i]);
        if (!names_add(&l->skipped, job.why[i]))
            FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for the skipped images");
        job.why[i] = NULL;
    }
    l->files.count = kept;
cleanup:
    for (int i = 0; job.why && i < job.count; i++) free(job.why[i]);
    free(job.why);
    return status;
}

/* Each image's header: the sizes and the channels of the data set (3 when any image has
 * colour). Without skip_bad a bad header fails; with it the file was decoded already. */
static clnet_status probe_all(clnet_dataset *ds, const listing *l) {
    size_t largest = 0;
    int channels = 1;
    for (int i = 0; i < l->files.count; i++) {
        int w = 0, h = 0, c = 0;
        clnet_status s = clnet_image_probe_file(l->files.items[i], &w, &h, &c);
        if (s != CLNET_OK) return s;
        if (i == 0) ds->height = h, ds->width = w;
        if ((h != ds->height || w != ds->width) && !ds->mixed_sizes) ds->mixed_sizes = i;
        if ((size_t)h * (size_t)w > largest) largest = (size_t)h * (size_t)w;
        if (c == 3) channels = 3;
    }
    ds->channels = channels;
    ds->largest_image = largest;
    return CLNET_OK;
}

/* The data set of the listing l (its files, labels and skipped lines move into it): with
 * skip_bad every image decoded first and those that fail left out, the first `limit` kept,
 * each header read. `what` names the source in messages. */
static clnet_status to_dataset(listing *l, const clnet_dataset_options *opt, const char *what,
                               clnet_dataset **out) {
    clnet_status status = CLNET_OK;
    clnet_dataset *ds = NULL;
    if (opt->skip_bad_images) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        TRY(decode_all(l, opt->threads > 0 ? opt->threads : (int)(cores > 0 ? cores : 1)));
        if (l->files.count == 0)
            FAIL(CLNET_ERR_FORMAT, "%s: none of its images decodes (the first: %s)", what,
                 l->skipped.items[0]);
    }
    int count = opt->limit > 0 && opt->limit < l->files.count ? (int)opt->limit : l->files.count;
    for (int i = count; i < l->files.count; i++) free(l->files.items[i]);
    l->files.count = count;
    ds = clnet_calloc(1, sizeof *ds);
    if (!ds) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a data set");
    ds->count = ds->file_count = count;
    TRY(probe_all(ds, l));
    ds->rank = 3;
    ds->dims[0] = ds->channels, ds->dims[1] = ds->height, ds->dims[2] = ds->width;
    ds->files = l->files.items;
    ds->labels = l->labels;
    ds->skipped = l->skipped.items;
    ds->skipped_count = l->skipped.count;
    l->files = (names){0}, l->skipped = (names){0}, l->labels = NULL;
    *out = ds;
    ds = NULL;
cleanup:
    clnet_dataset_free(ds);
    return status;
}

static void listing_free(listing *l) {
    names_free(&l->files);
    names_free(&l->skipped);
    free(l->labels);
    *l = (listing){0};
}

clnet_status clnet_dataset_load_images(clnet_dataset **out, const char *path,
                                       const clnet_dataset_options *options) {
    clnet_status status = CLNET_OK;
    clnet_dataset_options none = {0};
    const clnet_dataset_options *opt = options ? options : &none;
    listing l = {0};
    int found = 0;
    if (out) *out = NULL;
    if (!out || !path)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "clnet_dataset_load_images: out and path must be given");
    struct stat st;
    if (stat(path, &st) != 0) FAIL(CLNET_ERR_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        TRY(list_images(&l, path, 0, opt->skip_bad_images, &found));
        if (found == 0) FAIL(CLNET_ERR_FORMAT, "%s holds no .png, .jpg or .jpeg file", path);
    } else {
        char *copy = clnet_copy_text(path);
        if (!copy) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory for a path");
        TRY(add_file(&l, copy, 0));
    }
    clnet_dataset_options all = *opt;
    all.limit = 0;
    TRY(to_dataset(&l, &all, path, out));
    (*out)->unlabelled = 1;
cleanup:
    listing_free(&l);
    return status;
}

clnet_status clnet_dataset_load_folder(clnet_dataset **out, const char *root,
                                       const clnet_dataset_options *opt) {
    clnet_status status = CLNET_OK;
    names classes = {0};
    listing l = {0};
    char what[PATH_MAX + 32];
    *out = NULL;
    TRY(list_dir(root, 1, &classes));
    if (classes.count == 0)
        FAIL(CLNET_ERR_FORMAT,
             "image folder %s holds no class folders (want %s/CLASS/IMAGE.png, one folder a "
             "class)",
             root, root);
    for (int k = 0; k < classes.count; k++)
        TRY(list_class(&l, root, classes.items[k], k, opt->skip_bad_images));
    snprintf(what, sizeof what, "image folder %s", root);
    TRY(to_dataset(&l, opt, what, out));
    (*out)->classes = classes.count;
    (*out)->class_names = classes.items;
    classes = (names){0};
cleanup:
    names_free(&classes);
    listing_free(&l);
    return status;
}
