/* Reading the command line: options and the numbers they take, for every command. The
 * commands call these; nothing here calls back into a command or the dispatcher. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cli_npy_files(const char *list, char paths[4][CLI_PATH_CAP], int *count) {
    *count = 0;
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (*count < 4) snprintf(paths[*count], CLI_PATH_CAP, "%.*s", (int)len, p);
        (*count)++;
        if (!comma) break;
        p = comma + 1;
    }
    if (*count == 2 || *count == 4) return 1;
    fprintf(stderr,
            "clnet: --data-npy takes X.npy,Y.npy or X.npy,Y.npy,TEST_X.npy,TEST_Y.npy, not '%s'\n",
            list);
    return 0;
}
