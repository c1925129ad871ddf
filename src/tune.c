/* The tuning database file (see tune.h for its format). */
#include "tune.h"
#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define MAGIC     "clnet-tune-1"
#define FIELDS    8
#define MAX_BYTES (16u << 20) /* a file beyond this is not ours */
#define LINE_CAP  1024

void clnet_tune_db_path(const char *folder, char *out, size_t cap) {
    snprintf(out, cap, "%s/tune.db", folder);
}

int clnet_tune_bucket(int n) {
    if (n <= 0) return 0;
    int b = 1;
    while (b < n && b < (1 << 30)) b *= 2;
    return b;
}

/* The whole file as a NUL-terminated string; *text = NULL when there is none. */
static clnet_status read_all(const char *path, char **text) {
    clnet_status status = CLNET_OK;
    *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return CLNET_OK;
        clnet_warn("tuning database %s: %s; using no tuned choices", path, strerror(errno));
        return CLNET_OK;
    }
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        clnet_warn("tuning database %s: cannot read it; using no tuned choices", path);
        goto cleanup;
    }
    if ((unsigned long)size > MAX_BYTES) {
        clnet_warn("tuning database %s is over %u MiB: ignored (delete it)", path, MAX_BYTES >> 20);
        goto cleanup;
    }
    char *buf = clnet_malloc((size_t)size + 1);
    if (!buf) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
    size_t n = fread(buf, 1, (size_t)size, f); /* a file shortened meanwhile: what is there */
    buf[n] = '\0';
    *text = buf;
cleanup:
    fclose(f);
    return status;
}

typedef struct {
    char *field[FIELDS];
} parsed_line;

/* Splits one line (without its newline) in place; 1 when well formed and its
 * CRC matches. */
static int parse_line(char *line, parsed_line *out) {
    char *tab = strrchr(line, '\t');
    if (!tab) return 0;
    char *end = NULL;
    unsigned long want = strtoul(tab + 1, &end, 16);
    if (end == tab + 1 || *end || want != clnet_crc32(line, (size_t)(tab - line))) return 0;
    int k = 0;
    for (char *p = line; k < FIELDS; k++) {
        out->field[k] = p;
        char *t = strchr(p, '\t');
        if (!t) break;
        *t = '\0';
        p = t + 1;
    }
    return k == FIELDS - 1 && strcmp(out->field[0], MAGIC) == 0;
}

static int entry_from(const parsed_line *l, clnet_tune_entry *e) {
    char *end = NULL;
    memset(e, 0, sizeof *e);
    if (strlen(l->field[3]) >= sizeof e->key || strlen(l->field[5]) >= sizeof e->choice) return 0;
    strcpy(e->key, l->field[3]);
    long b = strtol(l->field[4], &end, 10);
    if (*end || b < 0 || b > (1 << 30)) return 0;
    e->bucket = (int)b;
    strcpy(e->choice, l->field[5]);
    e->us = strtod(l->field[6], &end);
    return *end == '\0' && e->us >= 0;
}

/* Calls `other` for every valid line of another device and `mine` for every
 * valid, current entry of this one (either may be NULL); warns about the rest. */
typedef struct {
    const char *path, *device, *space;
    int discarded;
    void (*other)(void *user, const char *line);
    void *other_user;
    clnet_status (*mine)(void *user, const clnet_tune_entry *e);
    void *mine_user;
} scan;

static clnet_status scan_text(scan *s, char *text) {
    clnet_status status = CLNET_OK;
    int number = 0, stale = 0;
    char copy[LINE_CAP];
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        number++;
        int complete = nl != NULL;
        if (nl) *nl = '\0';
        parsed_line l;
        size_t len = strlen(line);
        int ok = complete && len < sizeof copy;
        if (ok) {
            memcpy(copy, line, len + 1);
            ok = parse_line(line, &l);
        }
        clnet_tune_entry e;
        if (!ok || !entry_from(&l, &e)) {
            clnet_warn("tuning database %s, line %d: damaged or truncated; discarded (clnet tune "
                       "measures it again)",
                       s->path, number);
            s->discarded++;
        } else if (strcmp(l.field[1], s->device) != 0) {
            if (s->other) s->other(s->other_user, copy);
        } else if (strcmp(l.field[2], s->space) != 0) {
            stale++; /* one warning for them all, below: a changed kernel stales every line */
            s->discarded++;
        } else {
            if (s->mine) TRY(s->mine(s->mine_user, &e));
        }
        line = nl ? nl + 1 : NULL;
    }
    if (stale)
        clnet_warn("tuning database %s: %d entr%s on %s %s measured with other kernels (stale); "
                   "discarded (clnet tune measures %s again)",
                   s->path, stale, stale == 1 ? "y" : "ies", s->device, stale == 1 ? "was" : "were",
                   stale == 1 ? "it" : "them");
cleanup:
    return status;
}

static clnet_status add_to_table(void *user, const clnet_tune_entry *e) {
    return clnet_tune_table_set(user, e);
}

clnet_status clnet_tune_db_read(const char *path, const char *device, const char *space,
                                clnet_tune_table *table, int *discarded) {
    clnet_status status = CLNET_OK;
    char *text = NULL;
    scan s = {path, device, space, 0, NULL, NULL, add_to_table, table};
    TRY(read_all(path, &text));
    if (text) TRY(scan_text(&s, text));
    if (discarded) *discarded = s.discarded;
cleanup:
    free(text);
    return status;
}

/* ---- writing ---- */

static void keep_other(void *user, const char *line) {
    clnet_text_printf(user, "%s\n", line);
}

/* Replaces tabs and newlines in a name, so it stays one field. */
static void clean_field(const char *in, char *out, size_t cap) {
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++) out[i] = in[i] == '\t' || in[i] == '\n' ? ' ' : in[i];
    out[i] = '\0';
}

static void append_entry(clnet_text *o, const char *device, const char *space,
                         const clnet_tune_entry *e) {
    char line[LINE_CAP], dev[512];
    clean_field(device, dev, sizeof dev);
    int n = snprintf(line, sizeof line, "%s\t%s\t%s\t%s\t%d\t%s\t%.1f", MAGIC, dev, space, e->key,
                     e->bucket, e->choice, e->us);
    if (n < 0 || (size_t)n + 12 >= sizeof line) return;
    snprintf(line + n, sizeof line - (size_t)n, "\t%08x\n", clnet_crc32(line, (size_t)n));
    clnet_text_str(o, line);
}

clnet_status clnet_tune_db_write(const char *path, const char *device, const char *space,
                                 const clnet_tune_entry *entries, int count) {
    clnet_status status = CLNET_OK;
    clnet_tune_table mine = {0};
    clnet_text o = {0};
    char *text = NULL, lock_path[4200];
    clnet_atomic_file f = {0};
    snprintf(lock_path, sizeof lock_path, "%s.lock", path);
    char folder[4200];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (slash && slash != folder) {
        *slash = '\0';
        clnet_make_dirs(folder); /* a fresh cache folder: open says what failed */
    }
    int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lock < 0)
        FAIL(CLNET_ERR_IO, "tuning database: cannot open %s: %s", lock_path, strerror(errno));
    if (flock(lock, LOCK_EX) != 0)
        FAIL(CLNET_ERR_IO, "tuning database: cannot lock %s: %s", lock_path, strerror(errno));
    /* under the lock: what is there now, then ours over it */
    TRY(read_all(path, &text));
    scan s = {path, device, space, 0, keep_other, &o, add_to_table, &mine};
    if (text) TRY(scan_text(&s, text));
    for (int i = 0; i < count; i++) TRY(clnet_tune_table_set(&mine, &entries[i]));
    for (int i = 0; i < mine.count; i++) append_entry(&o, device, space, &mine.entries[i]);
    if (o.failed) FAIL(CLNET_ERR_OUT_OF_MEMORY, "out of memory writing %s", path);
    TRY(clnet_atomic_open(&f, path));
    TRY(clnet_atomic_write(&f, o.buf ? o.buf : "", o.len));
    TRY(clnet_atomic_commit(&f));
cleanup:
    clnet_atomic_abort(&f);
    if (lock >= 0) close(lock); /* releases the lock */
    free(text);
    clnet_text_free(&o);
    clnet_tune_table_free(&mine);
    if (status != CLNET_OK) clnet_error_context(status, "saving tuned choices");
    return status;
}

/* ---- tables ---- */

clnet_status clnet_tune_table_set(clnet_tune_table *t, const clnet_tune_entry *e) {
    for (int i = 0; i < t->count; i++)
        if (t->entries[i].bucket == e->bucket && strcmp(t->entries[i].key, e->key) == 0) {
            t->entries[i] = *e;
            return CLNET_OK;
        }
    if (t->count == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        clnet_tune_entry *n = clnet_realloc(t->entries, (size_t)cap * sizeof *n);
        if (!n) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory for tuned choices");
        t->entries = n;
        t->cap = cap;
    }
    t->entries[t->count++] = *e;
    return CLNET_OK;
}

static int log2_distance(int a, int b) {
    int d = 0;
    if (a <= 0 || b <= 0) return a == b ? 0 : 64;
    while (a < b) a *= 2, d++;
    while (b < a) b *= 2, d++;
    return d;
}

const clnet_tune_entry *clnet_tune_table_find(const clnet_tune_table *t, const char *key,
                                              int bucket) {
    const clnet_tune_entry *best = NULL;
    int best_d = 0;
    for (int i = 0; t && i < t->count; i++) {
        const clnet_tune_entry *e = &t->entries[i];
        if (strcmp(e->key, key) != 0) continue;
        int d = log2_distance(e->bucket, bucket);
        if (!best || d < best_d || (d == best_d && e->bucket > best->bucket)) best = e, best_d = d;
    }
    return best;
}

void clnet_tune_table_free(clnet_tune_table *t) {
    free(t->entries);
    *t = (clnet_tune_table){0};
}
