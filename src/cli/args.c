/* Reading the command line: each command's option table, parsed and printed as its
 * --help, and the numbers options take. The commands call these; nothing here calls
 * back into a command or the dispatcher. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define USAGE_WIDTH 80 /* a usage line lists every option while it fits in this */

static int visible(const cli_command *c, const cli_opt *o) {
    return !o->only || strcmp(o->only, c->name) == 0;
}

static void *field(void *dest, size_t at) {
    return (char *)dest + at - 1;
}

/* The index of `text` among the choices; else "expected a, b or c". */
static int choose(const cli_opt *o, const char *text, int *index) {
    int n = 0;
    for (; o->choices[n]; n++)
        if (strcmp(text, o->choices[n]) == 0) {
            *index = n;
            return 1;
        }
    fprintf(stderr, "clnet: %s: expected ", o->name);
    for (int k = 0; k < n; k++)
        fprintf(stderr, "%s%s", k == 0 ? "" : k == n - 1 ? " or " : ", ", o->choices[k]);
    fprintf(stderr, ", got '%s'\n", text);
    return 0;
}

/* Stores `text` (NULL for a flag) as o's value: 1, or 0 after a message. */
static int store(const cli_opt *o, const char *text, void *dest) {
    void *p = field(dest, o->at);
    switch (o->type) {
    case CLI_FLAG:
        *(int *)p = 1;
        return 1;
    case CLI_TEXT:
        *(const char **)p = text;
        return 1;
    case CLI_INT:
        return cli_int(o->name, text, (long)o->min, (long)o->max, p);
    case CLI_FLOAT:
        return cli_float(o->name, text, o->min, o->max, p);
    case CLI_CHOICE:
        return choose(o, text, p);
    case CLI_CUSTOM:
        return o->parse(o->name, text, p);
    }
    return 0;
}

int cli_store(const cli_opt *o, const char *text, void *dest) {
    return store(o, text, dest);
}

void cli_csv_field(FILE *f, const char *text, size_t len) {
    size_t plain = 0;
    while (plain < len && text[plain] != ',' && text[plain] != '"' && text[plain] != '\r' &&
           text[plain] != '\n')
        plain++;
    if (plain == len) {
        fprintf(f, "%.*s", (int)len, text);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '"') fputc('"', f);
        fputc(text[i], f);
    }
    fputc('"', f);
}

int cli_writable(const char *option, const char *path) {
    struct stat st;
    if (!path) return 1;
    if (!*path) {
        fprintf(stderr, "clnet: %s: an empty path\n", option);
        return 0;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "clnet: %s %s: that is a folder; name a file in it\n", option, path);
        return 0;
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "clnet: %s %s: the folder %s does not exist\n", option, path, dir);
        return 0;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "clnet: %s %s: the folder %s takes no new files (permission denied)\n",
                option, path, dir);
        return 0;
    }
    if (access(path, F_OK) == 0 && access(path, W_OK) != 0) {
        fprintf(stderr, "clnet: %s %s: the file cannot be written (permission denied)\n", option,
                path);
        return 0;
    }
    return 1;
}

int cli_given(int argc, char **argv, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], name, n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '=')) return 1;
    return 0;
}

/* The option at argv[*i], with its value, into dest: 1 when it is one of c's, 0 when
 * c has no such option, -1 after a message on a missing or bad value. */
static int read_option(const cli_command *c, int argc, char **argv, int *i, void *dest) {
    for (const cli_opt *o = c->opts; o && o->name; o++) {
        const char *v = NULL;
        if (!visible(c, o)) continue;
        if (o->type == CLI_FLAG ? strcmp(argv[*i], o->name) != 0
                                : !cli_option(argc, argv, i, o->name, &v))
            continue;
        if ((o->type != CLI_FLAG && !v) || !store(o, v, dest)) return -1;
        if (o->given) *(int *)field(dest, o->given) = 1;
        return 1;
    }
    return 0;
}

static int read_positional(const cli_command *c, const char *arg, void *dest) {
    const char **p = field(dest, c->positional_at);
    if (*p) {
        fprintf(stderr, "clnet: one %s only ('%s' and '%s')\n", c->positional_what, *p, arg);
        return 0;
    }
    *p = arg;
    return 1;
}

/* Appends to a line that stops growing at its capacity. */
static void append(char *line, size_t cap, size_t *used, const char *fmt, ...) {
    if (*used >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (n > 0) *used += (size_t)n;
}

/* "usage: clnet CMD POSITIONAL --required R [--other O] ...", or "[options]" in place
 * of the optional ones where listing them would not fit a line. */
static void usage_line(const cli_command *c, FILE *out) {
    char head[256], rest[1024] = "";
    size_t h = 0, r = 0;
    append(head, sizeof head, &h, "usage: clnet %s", c->name);
    if (c->positional) append(head, sizeof head, &h, " %s", c->positional);
    for (const cli_opt *o = c->opts; o && o->name; o++) {
        if (!visible(c, o)) continue;
        const char *space = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
        if (o->required)
            append(head, sizeof head, &h, " %s%s%s", o->name, space, arg);
        else
            append(rest, sizeof rest, &r, " [%s%s%s]", o->name, space, arg);
    }
    fprintf(out, "%s%s\n", head, h + r <= USAGE_WIDTH ? rest : " [options]");
}

/* "  --name ARG          help", continued lines under the help's first column. */
static void help_entry(const cli_opt *o, FILE *out) {
    char head[64];
    snprintf(head, sizeof head, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    fprintf(out, "  %-18s  ", head);
    for (const char *p = o->help ? o->help : ""; *p; p++) {
        fputc(*p, out);
        if (*p == '\n') fprintf(out, "%22s", "");
    }
    if (o->def) fprintf(out, " (default %s)", o->def);
    fputc('\n', out);
}

void cli_help(const cli_command *c, FILE *out) {
    usage_line(c, out);
    for (const cli_opt *o = c->opts; o && o->name; o++)
        if (visible(c, o)) help_entry(o, out);
    if (c->footer) fputs(c->footer, out);
}

int cli_parse(const cli_command *c, int argc, char **argv, void *dest, int *exit_code) {
    *exit_code = 2;
    for (const cli_opt *o = c->opts; o && o->name; o++)
        if (visible(c, o) && o->def && !store(o, o->def, dest)) return 0; /* the table's fault */
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' && c->positional) {
            if (!read_positional(c, arg, dest)) return 0;
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            cli_help(c, stdout);
            *exit_code = 0;
            return 0;
        } else {
            int found = read_option(c, argc, argv, &i, dest);
            if (found < 0) return 0;
            if (found == 0) {
                fprintf(stderr, "clnet %s: unknown option '%s' (clnet %s --help)\n", c->name, arg,
                        c->name);
                usage_line(c, stderr);
                return 0;
            }
        }
    }
    return !c->check || (*exit_code = c->check(dest)) == 0;
}

int cli_exit_code(clnet_status s) {
    return s == CLNET_ERR_BAD_DEVICE_SPEC ? 2 : 1;
}

int cli_which_model(const char *command) {
    fprintf(stderr, "clnet %s: which model? e.g. clnet %s examples/models/lenet.cfg\n", command,
            command);
    return 2;
}

int cli_option(int argc, char **argv, int *i, const char *name, const char **value) {
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return 0;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != '\0') return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "clnet: %s needs a value\n", name);
        *value = NULL;
        return 1;
    }
    *value = argv[++*i];
    return 1;
}

int cli_int(const char *name, const char *text, long min, long max, long *out) {
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < min || v > max) {
        fprintf(stderr, "clnet: %s: expected a whole number from %ld to %ld, got '%s'\n", name, min,
                max, text);
        return 0;
    }
    *out = v;
    return 1;
}

int cli_float(const char *name, const char *text, double min, double max, double *out) {
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end || !(v >= min && v <= max)) {
        fprintf(stderr, "clnet: %s: expected a number from %g to %g, got '%s'\n", name, min, max,
                text);
        return 0;
    }
    *out = v;
    return 1;
}

static int float_list(const char *name, const char *list, double min, double max, void *dest) {
    cli_floats *f = dest, got = {0};
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[64];
        if (got.count == CLNET_MAX_NORM_CHANNELS) {
            fprintf(stderr, "clnet: %s: more than %d values (one a channel)\n", name,
                    CLNET_MAX_NORM_CHANNELS);
            return 0;
        }
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
        if (len >= sizeof item || !cli_float(name, item, min, max, &got.v[got.count])) return 0;
        got.count++;
        if (!comma) break;
        p = comma + 1;
    }
    *f = got;
    return 1;
}

int cli_mean_values(const char *name, const char *list, void *dest) {
    return float_list(name, list, -1e3, 1e3, dest);
}

int cli_std_values(const char *name, const char *list, void *dest) {
    return float_list(name, list, 1e-6, 1e3, dest);
}

void cli_floats_text(const cli_floats *f, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < f->count && used < cap; k++) {
        char one[32];
        for (int digits = 6; digits <= 17; digits++) { /* the shortest that reads back */
            snprintf(one, sizeof one, "%.*g", digits, f->v[k]);
            if (strtod(one, NULL) == f->v[k]) break;
        }
        used += (size_t)snprintf(out + used, cap - used, "%s%s", k ? "," : "", one);
    }
}

int cli_normalisation(const cli_floats *mean, const cli_floats *std, int channels,
                      clnet_loader_config *cfg) {
    int m = mean->count ? mean->count : 1, s = std->count ? std->count : 1;
    cfg->mean = mean->count ? (float)mean->v[0] : 0.0f;
    cfg->std = std->count ? (float)std->v[0] : 1.0f;
    cfg->norm_channels = 0;
    if (m == 1 && s == 1) return 0;
    const char *bad = m != 1 && m != channels ? "--mean" : s != 1 && s != channels ? "--std" : NULL;
    if (bad) {
        fprintf(stderr,
                "clnet: %s gives %d values, but the data has %d channel%s: give one, or "
                "one a channel\n",
                bad, bad[2] == 'm' ? m : s, channels, channels == 1 ? "" : "s");
        return 2;
    }
    cfg->norm_channels = channels;
    for (int c = 0; c < channels; c++) {
        cfg->channel_mean[c] = (float)mean->v[m == 1 ? 0 : c];
        cfg->channel_std[c] = (float)std->v[s == 1 ? 0 : c];
    }
    return 0;
}

int cli_npy_files(const char *name, const char *list, void *dest) {
    cli_npy *npy = dest;
    int count = 0;
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len >= CLI_PATH_CAP) {
            fprintf(stderr, "clnet: %s: a path of %zu characters (at most %d)\n", name, len,
                    CLI_PATH_CAP - 1);
            return 0;
        }
        if (count < 4) snprintf(npy->paths[count], CLI_PATH_CAP, "%.*s", (int)len, p);
        count++;
        if (!comma) break;
        p = comma + 1;
    }
    npy->count = count == 2 || count == 4 ? count : 0;
    if (npy->count) return 1;
    fprintf(stderr, "clnet: %s takes X.npy,Y.npy or X.npy,Y.npy,TEST_X.npy,TEST_Y.npy, not '%s'\n",
            name, list);
    return 0;
}
