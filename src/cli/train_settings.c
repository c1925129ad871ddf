/* A run's settings in its checkpoints ("run" in the metadata, one
 * "key=value" a line: the option's name without its dashes, and its value as
 * typed back), and --resume taking them back: what the command line leaves
 * out comes from the checkpoint, what it gives must agree with it unless
 * --override names it. The values are read through train's own option
 * table, so a setting means exactly what its option means. */
#include "train_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a run records, in this order. The optimizer's own hyperparameters
 * are marked: with the optimizer overridden, they keep the command's values
 * and defaults (SGD's learning rate would not suit Adam). A checkpoint made
 * before a setting was recorded (warmup ... min-delta came last) has none
 * of it: its resume takes the command's value, the default, as that run did. */
static const struct {
    const char *key;
    int optimizer_own;
} SETTINGS[] = {
    {"optimizer", 0},
    {"lr", 1},
    {"momentum", 1},
    {"nesterov", 1},
    {"wd", 1},
    {"beta1", 1},
    {"beta2", 1},
    {"eps", 1},
    {"schedule", 0},
    {"step-size", 0},
    {"gamma", 0},
    {"batch", 0},
    {"epochs", 0},
    {"mean", 0},
    {"std", 0},
    {"data", 0},
    {"data-npy", 0},
    {"train-limit", 0},
    {"resize", 0},
    {"center-crop", 0},
    {"augment", 0},
    {"val-split", 0},
    {"warmup", 0},
    {"warmup-factor", 0},
    {"pct-start", 0},
    {"div-factor", 0},
    {"final-div-factor", 0},
    {"no-cycle-momentum", 0},
    {"base-momentum", 0},
    {"max-momentum", 0},
    {"clip-grad-norm", 0},
    {"label-smoothing", 0}, /* the loss's (-1: the model file's) */
    {"monitor", 0},
    {"plateau", 0},
    {"plateau-factor", 0},
    {"plateau-threshold", 0},
    {"plateau-cooldown", 0},
    {"min-lr", 0},
    {"early-stop", 0},
    {"min-delta", 0},
};
#define NSETTINGS (int)(sizeof SETTINGS / sizeof *SETTINGS)

static const cli_opt *row_of(const char *key) {
    char name[64];
    snprintf(name, sizeof name, "--%s", key);
    for (const cli_opt *o = cli_train_cmd.opts; o->name; o++)
        if (strcmp(o->name, name) == 0 && (!o->only || strcmp(o->only, "train") == 0)) return o;
    return NULL;
}

static const void *field_of(const train_options *o, const cli_opt *row) {
    return (const char *)o + row->at - 1;
}

static void *field_in(train_options *o, const cli_opt *row) {
    return (char *)o + row->at - 1;
}

/* The value of row's field in o, as text that reads back to the same value. */
static void value_text(const train_options *o, const cli_opt *row, char *out, size_t cap) {
    const void *v = field_of(o, row);
    switch (row->type) {
    case CLI_FLAG:
        snprintf(out, cap, "%d", *(const int *)v != 0);
        return;
    case CLI_TEXT:
        snprintf(out, cap, "%s", *(const char *const *)v ? *(const char *const *)v : "");
        return;
    case CLI_INT:
        snprintf(out, cap, "%ld", *(const long *)v);
        return;
    case CLI_FLOAT: { /* the shortest text that reads back to the same double */
        double d = *(const double *)v;
        for (int digits = 6; digits <= 17; digits++) {
            snprintf(out, cap, "%.*g", digits, d);
            if (strtod(out, NULL) == d) break;
        }
        return;
    }
    case CLI_CHOICE:
        snprintf(out, cap, "%s", row->choices[*(const int *)v]);
        return;
    case CLI_CUSTOM: { /* --data-npy's paths, or --mean's and --std's values */
        if (row->parse != cli_npy_files) {
            cli_floats_text(v, out, cap);
            return;
        }
        const cli_npy *npy = v;
        size_t used = 0;
        out[0] = '\0';
        for (int k = 0; k < npy->count && used < cap; k++)
            used += (size_t)snprintf(out + used, cap - used, "%s%s", k ? "," : "", npy->paths[k]);
        return;
    }
    }
}

void train_settings_write(const train_options *o, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < NSETTINGS && used < cap; i++) {
        const cli_opt *row = row_of(SETTINGS[i].key);
        char value[CLI_PATH_CAP * 4 + 8];
        value_text(o, row, value, sizeof value);
        if (strchr(value, '\n')) continue; /* a path no line can hold: not recorded */
        used += (size_t)snprintf(out + used, cap - used, "%s=%s\n", SETTINGS[i].key, value);
    }
    if (used >= cap) out[0] = '\0'; /* cut short: none rather than a part */
}

/* Stores `text`, as recorded, as row's value in o (a flag's "0" or "1", a
 * number below its option's range, such as --step-size's default 0, too):
 * 1, or 0 when it does not read (the caller says so). */
static int store(train_options *o, const cli_opt *row, const char *text) {
    if (row->type == CLI_FLAG) {
        *(int *)field_in(o, row) = strcmp(text, "1") == 0;
        return 1;
    }
    if (row->type == CLI_CUSTOM && row->parse == cli_npy_files && !*text) { /* no --data-npy */
        memset(field_in(o, row), 0, sizeof(cli_npy));
        return 1;
    }
    if (row->type == CLI_TEXT && !*text) {
        *(const char **)field_in(o, row) = NULL;
        return 1;
    }
    char *end = NULL;
    if (row->type == CLI_INT) {
        long v = strtol(text, &end, 10);
        if (end == text || *end) return 0;
        *(long *)field_in(o, row) = v;
        return 1;
    }
    if (row->type == CLI_FLOAT) {
        double v = strtod(text, &end);
        if (end == text || *end) return 0;
        *(double *)field_in(o, row) = v;
        return 1;
    }
    return cli_store(row, text, o);
}

/* Whether the comma list `keys` names key. */
static int listed(const char *keys, const char *key) {
    size_t n = strlen(key);
    for (const char *p = keys; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, key, n) == 0) return 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* Every key of --override is a setting: 1, else 0 after a message. */
static int overrides_known(const char *keys) {
    for (const char *p = keys; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int known = 0;
        for (int i = 0; i < NSETTINGS && !known; i++)
            known = strlen(SETTINGS[i].key) == len && strncmp(p, SETTINGS[i].key, len) == 0;
        if (!known) {
            fprintf(stderr, "clnet: --override: '%.*s' is not a setting a checkpoint records (",
                    (int)len, p);
            for (int i = 0; i < NSETTINGS; i++)
                fprintf(stderr, "%s%s", i ? ", " : "", SETTINGS[i].key);
            fprintf(stderr, ")\n");
            return 0;
        }
        p = comma ? comma + 1 : NULL;
    }
    return 1;
}

/* The recorded lines of run, split in place in o->run (where the text
 * values taken from it live on): up to NSETTINGS keys and values. */
typedef struct {
    const char *key[NSETTINGS], *value[NSETTINGS];
    int n;
} recorded;

static void split_lines(train_options *o, const char *run, recorded *r) {
    snprintf(o->run, sizeof o->run, "%s", run);
    r->n = 0;
    for (char *line = o->run; line && *line && r->n < NSETTINGS;) {
        char *end = strchr(line, '\n'), *eq = strchr(line, '=');
        if (end) *end = '\0';
        if (eq && (!end || eq < end)) {
            *eq = '\0';
            r->key[r->n] = line, r->value[r->n++] = eq + 1;
        }
        line = end ? end + 1 : NULL;
    }
}

static const char *value_of(const recorded *r, const char *key) {
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->key[i], key) == 0) return r->value[i];
    return NULL;
}

static int unreadable(const train_options *o, const cli_opt *row, const char *value) {
    fprintf(stderr, "clnet: %s %s: its recorded %s '%s' does not read\n",
            o->resume ? "--resume" : "--weights", o->resume ? o->resume : o->weights, row->name,
            value);
    return 2;
}

int train_settings_evaluate(train_options *o, const char *run) {
    static const char *const KEYS[] = {"mean", "std", "resize", "center-crop", "label-smoothing"};
    recorded r;
    split_lines(o, run, &r);
    for (size_t i = 0; i < sizeof KEYS / sizeof *KEYS; i++) {
        const char *value = value_of(&r, KEYS[i]);
        const cli_opt *row = row_of(KEYS[i]);
        if (!value || cli_given(o->argc, o->argv, row->name)) continue;
        if (!store(o, row, value)) return unreadable(o, row, value);
    }
    return 0;
}

int train_settings_resume(train_options *o, const char *run) {
    if (!overrides_known(o->override)) return 2;
    if (!*run) return 0; /* a checkpoint from before clnet recorded them */
    train_options old = *o;
    recorded r;
    split_lines(o, run, &r);
    int optimizer_changed = 0, refused = 0;
    for (int i = 0; i < NSETTINGS; i++) {
        const char *key = SETTINGS[i].key, *value = value_of(&r, key);
        const cli_opt *row = row_of(key);
        if (!value || (SETTINGS[i].optimizer_own && optimizer_changed)) continue;
        if (!cli_given(o->argc, o->argv, row->name)) { /* left out: the checkpoint's */
            if (!store(o, row, value)) return unreadable(o, row, value);
            continue;
        }
        char had[CLI_PATH_CAP * 4 + 8], now[sizeof had];
        if (!store(&old, row, value)) return unreadable(o, row, value);
        value_text(&old, row, had, sizeof had);
        value_text(o, row, now, sizeof now);
        if (strcmp(had, now) == 0) continue;
        if (listed(o->override, key)) {
            fprintf(stderr, "clnet: note: %s %s, where the checkpoint's run had %s (--override)\n",
                    row->name, *now ? now : "(none)", *had ? had : "(none)");
            optimizer_changed |= strcmp(key, "optimizer") == 0;
            continue;
        }
        fprintf(stderr,
                "clnet: --resume %s: the run was trained with %s %s, this command gives %s "
                "(--override %s resumes with the new value; leave the option out to keep the "
                "checkpoint's)\n",
                o->resume, row->name, *had ? had : "(none)", *now ? now : "(none)", key);
        refused = 1;
    }
    return refused ? 2 : 0;
}
