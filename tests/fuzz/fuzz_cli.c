/* The command line: every command's option table (numbers and their ranges,
 * choices, --data-npy's lists, the positional argument, --help) and the
 * command's checks between options. The input is the words, one per line;
 * the first names the command. Nothing runs: the words are only read. */
#include "cli.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1), *words[MAX_WORDS];
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    int n = 0;
    for (char *p = text; n < MAX_WORDS;) {
        words[n++] = p;
        char *end = strchr(p, '\n');
        if (!end) break;
        *end = '\0';
        p = end + 1;
    }
    for (int i = 0; cli_commands[i]; i++) {
        const cli_command *c = cli_commands[i];
        if (strcmp(words[0], c->name) != 0) continue;
        void *options = calloc(1, c->size);
        int rc;
        if (options) (void)cli_parse(c, n - 1, words + 1, options, &rc);
        free(options);
    }
    fflush(stdout); /* --help's text */
    free(text);
    return 0;
}
