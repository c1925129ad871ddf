/* A checkpoint's GEMM and convolution choices: recorded from the replicas,
 * pinned on resume (choices.h). */
#include "choices.h"
#include "alloc.h"
#include "error.h"
#include "gemm.h"
#include "layers/conv.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One recorded choice: "<key>\t<bucket>\t<candidate>\n". */
typedef char choice_line[CLNET_TUNE_KEY_CAP + CLNET_GEMM_ID_CAP + 16];

static int compare_lines(const void *a, const void *b) {
    return strcmp(a, b);
}

/* 1 when a replica before i runs on a device equal to replica i's. */
static int equal_before(const clnet_trainer *t, int i) {
    for (int j = 0; j < i; j++)
        if (strcmp(t->replicas[j]->d->choice.tune_device, t->replicas[i]->d->choice.tune_device) ==
            0)
            return 1;
    return 0;
}

/* The local-memory tile a table of d names for the convolution of key
 * (`clnet tune` on a GPU), or NULL: the rule's tile needs no record. */
static const char *tabled_tile(const clnet_device *d, const char *key, char *tile_key, size_t cap) {
    snprintf(tile_key, cap, "%.*s%s", (int)(cap - sizeof CONV_TILE_KEY), key, CONV_TILE_KEY);
    for (clnet_choice_from from = CLNET_FROM_CHECKPOINT; from < CLNET_FROM_RULE; from++) {
        const char *tile = clnet_chooser_named(&d->choice, from, NULL, tile_key, 0);
        if (tile) return tile;
    }
    return NULL;
}

/* The algorithms each convolution of replica r runs its passes with
 * (layer.h's algorithms): "<key>\t0\t<plan>" lines, and "<key> tile\t0\t<tile>"
 * where a table names its tile. Returns how many (at most two a node). */
static int record_algorithms(const clnet_replica *r, choice_line *lines) {
    int count = 0;
    for (int k = 0; k < r->model->count; k++) {
        char key[CLNET_TUNE_KEY_CAP], tile_key[CLNET_TUNE_KEY_CAP], text[CLNET_CONV_PLAN_CAP];
        clnet_conv_plan plan;
        if (!clnet_node_plan(&r->model->nodes[k], r->d, key, sizeof key, &plan)) continue;
        clnet_conv_plan_text(&plan, text, sizeof text);
        snprintf(lines[count++], sizeof *lines, "%s\t0\t%s\n", key, text);
        const char *tile = tabled_tile(r->d, key, tile_key, sizeof tile_key);
        if (tile) snprintf(lines[count++], sizeof *lines, "%s\t0\t%s\n", tile_key, tile);
    }
    return count;
}

/* A convolution's algorithms, pinned on d: a plan of choose.h's names
 * (auto for none of its passes). */
static clnet_status pin_algorithm(clnet_device *d, const char *key, const char *name) {
    clnet_tune_entry e = {.bucket = 0};
    clnet_conv_plan plan;
    size_t len = strlen(key), tail = strlen(CONV_TILE_KEY);
    int tile = len > tail && strcmp(key + len - tail, CONV_TILE_KEY) == 0, v[6];
    int known = tile ? clnet_conv_tile_parse(name, v) : clnet_conv_plan_parse(name, &plan);
    for (int pass = 0; known && !tile && pass < CLNET_CONV_PASSES; pass++)
        known = plan.pass[pass] != CLNET_CONV_AUTO;
    if (!known || strlen(key) >= sizeof e.key || strlen(name) >= sizeof e.choice)
        return clnet_fail(CLNET_ERR_FORMAT, "convolution algorithm '%s' (for '%s') is unknown",
                          name, key);
    strcpy(e.key, key);
    strcpy(e.choice, name);
    clnet_gemm_forget(d);
    return clnet_tune_table_set(&d->choice.pinned, &e);
}

/* Evaluation's shapes and calibration probes' are left out, and the order
 * shapes were first met in (which follows calibration's timings) does not
 * show, so the record depends only on the training done. */
clnet_status clnet_choices_record(const clnet_trainer *t, char **out) {
    clnet_status status = CLNET_OK;
    choice_line *lines = NULL;
    clnet_text text = {0};
    *out = NULL;
    if (!t) return CLNET_OK;
    clnet_text_add(&text, "", 0); /* no choices is "", not NULL */
    for (int i = 0; i < t->count; i++) {
        const clnet_device *d = t->replicas[i]->d;
        const clnet_gemm_record *made = &t->replicas[i]->gemm_record;
        int picks = clnet_gemm_record_count(made, d), count = 0;
        if (equal_before(t, i)) continue;
        free(lines);
        lines = clnet_malloc(((size_t)picks + 2 * (size_t)t->model->count + 1) * sizeof *lines);
        if (!lines) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory saving a checkpoint");
        count = record_algorithms(t->replicas[i], lines);
        for (int k = 0; k < picks; k++) {
            if (!made->picks[k].train) continue;
            char key[CLNET_TUNE_KEY_CAP];
            int bucket = 0;
            clnet_gemm_key(&made->picks[k].shape, key, sizeof key, &bucket);
            snprintf(lines[count++], sizeof *lines, "%s\t%d\t%s\n", key, bucket, made->picks[k].id);
        }
        qsort(lines, (size_t)count, sizeof *lines, compare_lines);
        clnet_text_printf(&text, "@%s\n", d->choice.tune_device);
        for (int k = 0; k < count; k++) clnet_text_str(&text, lines[k]);
    }
    if (text.failed) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory saving a checkpoint");
    *out = text.buf;
    text.buf = NULL;
cleanup:
    free(lines);
    clnet_text_free(&text);
    return status;
}

/* One line of a choices text, and the device section it is in. */
typedef struct {
    const char *device, *line; /* pointers into the texts, up to their '\n' */
    int device_len, line_len, from_loaded;
} choice_entry;

/* Appends text's lines to e (room for them all), skipping device lines. */
static int split_entries(const char *text, int from_loaded, choice_entry *e, int n) {
    const char *device = "";
    int device_len = 0;
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        int len = end ? (int)(end - p) : (int)strlen(p);
        if (p[0] == '@')
            device = p, device_len = len;
        else if (len > 0)
            e[n++] = (choice_entry){device, p, device_len, len, from_loaded};
        p = end ? end + 1 : NULL;
    }
    return n;
}

/* The length of a line's "<key>\t<bucket>" part. */
static int key_len(const choice_entry *e) {
    const char *tab = memchr(e->line, '\t', (size_t)e->line_len);
    const char *second =
        tab ? memchr(tab + 1, '\t', (size_t)(e->line + e->line_len - tab - 1)) : NULL;
    return second ? (int)(second - e->line) : e->line_len;
}

static int same_device(const choice_entry *a, const choice_entry *b) {
    return a->device_len == b->device_len && !memcmp(a->device, b->device, (size_t)a->device_len);
}

/* The order of compare_lines: the lines with their '\n'. */
static int compare_entries(const void *pa, const void *pb) {
    const choice_entry *a = pa, *b = pb;
    int n = a->line_len < b->line_len ? a->line_len : b->line_len;
    int c = memcmp(a->line, b->line, (size_t)n);
    if (c || a->line_len == b->line_len) return c;
    unsigned char ca = n < a->line_len ? (unsigned char)a->line[n] : '\n';
    unsigned char cb = n < b->line_len ? (unsigned char)b->line[n] : '\n';
    return (int)ca - (int)cb;
}

clnet_status clnet_choices_merge(const char *recorded, const char *loaded, char **out) {
    clnet_status status = CLNET_OK;
    clnet_text text = {0};
    int lines = 2;
    *out = NULL;
    for (const char *t = recorded; t && *t; t++) lines += *t == '\n';
    for (const char *t = loaded; t && *t; t++) lines += *t == '\n';
    choice_entry *e = clnet_malloc((size_t)lines * sizeof *e), *keep = NULL;
    keep = clnet_malloc((size_t)lines * sizeof *keep);
    if (!e || !keep) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory saving a checkpoint");
    int n = split_entries(loaded, 1, e, split_entries(recorded, 0, e, 0));
    clnet_text_add(&text, "", 0);
    for (int i = 0; i < n; i++) { /* each device section, in the order first met */
        int first = 1, kept = 0;
        for (int j = 0; j < i && first; j++) first = !same_device(&e[j], &e[i]);
        if (!first) continue;
        for (int j = i; j < n; j++) {
            if (!same_device(&e[j], &e[i])) continue;
            int again = 0; /* a loaded line whose shape the run chose again */
            for (int k = 0; e[j].from_loaded && k < kept && !again; k++)
                again = !keep[k].from_loaded && key_len(&keep[k]) == key_len(&e[j]) &&
                        !memcmp(keep[k].line, e[j].line, (size_t)key_len(&e[j]));
            if (!again) keep[kept++] = e[j];
        }
        qsort(keep, (size_t)kept, sizeof *keep, compare_entries);
        clnet_text_printf(&text, "%.*s\n", e[i].device_len, e[i].device);
        for (int k = 0; k < kept; k++)
            clnet_text_printf(&text, "%.*s\n", keep[k].line_len, keep[k].line);
    }
    if (text.failed) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory saving a checkpoint");
    *out = text.buf;
    text.buf = NULL;
cleanup:
    free(e);
    free(keep);
    clnet_text_free(&text);
    return status;
}

void clnet_choices_pin(clnet_trainer *t, const char *text) {
    char device[512] = "";
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char line[512], *field[3];
        int k = 0;
        if (n < sizeof line) {
            memcpy(line, p, n);
            line[n] = '\0';
            for (char *f = line; k < 3 && f; k++) {
                field[k] = f;
                f = strchr(f, '\t');
                if (f) *f++ = '\0';
            }
        }
        p += n + (end ? 1 : 0);
        if (n < sizeof line && line[0] == '@') {
            snprintf(device, sizeof device, "%s", line + 1);
            continue;
        }
        for (int i = 0; k == 3 && i < t->count; i++) {
            clnet_device *d = t->replicas[i]->d;
            if (strcmp(d->choice.tune_device, device) != 0) continue;
            int gemm = strncmp(field[0], "gemm ", 5) == 0;
            clnet_status s = gemm ? clnet_gemm_pin(d, field[0], atoi(field[1]), field[2])
                                  : pin_algorithm(d, field[0], field[2]);
            if (s != CLNET_OK)
                clnet_warn("the checkpoint's %s choice is not used: %s",
                           gemm ? "GEMM" : "convolution", clnet_last_error());
        }
    }
}
