/* clnet layers [KIND]: the model-file reference, printed from the tables the
 * model-file parser itself reads (so it says what the parser does). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* Text in lines of at most `width` characters, each after `indent`
 * spaces, broken at spaces (a word longer than a line stands alone). */
static void print_wrapped(const char *text, int indent, int width) {
    while (*text) {
        int len = (int)strlen(text), cut = len;
        if (len > width) {
            cut = width;
            while (cut > 0 && text[cut] != ' ') cut--;
            if (cut == 0) cut = (int)strcspn(text, " ");
        }
        printf("%*s%.*s\n", indent, "", cut, text);
        text += cut;
        while (*text == ' ') text++;
    }
}

/* A kind: what it computes, then its options, one per line (the key, its
 * default, what it takes), each with its help on a line of its own. */
static int print_kind(const char *kind) {
    int count = 0;
    const char *about = "";
    if (clnet_layer_kind_options(kind, &count) != CLNET_OK ||
        clnet_layer_kind_about(kind, &about) != CLNET_OK) {
        fprintf(stderr, "clnet layers: %s\n", clnet_last_error());
        return 2;
    }
    printf("%s\n", kind);
    print_wrapped(about, 2, 76);
    printf("  %-12s %-24s %s\n", "option", "default", "takes");
    for (int i = 0; i < count; i++) {
        clnet_layer_option_info o;
        if (clnet_layer_kind_option(kind, i, &o) != CLNET_OK) {
            fprintf(stderr, "clnet layers: %s\n", clnet_last_error());
            return 1;
        }
        printf("  %-12s %-24s %s\n  %-12s %s\n", o.name, *o.default_text ? o.default_text : "-",
               o.type, "", o.help);
    }
    return 0;
}

typedef struct {
    const char *kind;
} layers_options;

const cli_command cli_layers_cmd = {
    .name = "layers",
    .size = sizeof(layers_options),
    .positional = "[KIND]",
    .positional_what = "layer kind",
    .positional_at = CLI_AT(layers_options, kind),
    .footer = "the layer kinds a model file may use, each with its options: its default,\n"
              "what it takes and what it does (KIND: that kind alone)\n",
};

int cmd_layers(int argc, char **argv) {
    layers_options o = {0};
    int rc;
    if (!cli_parse(&cli_layers_cmd, argc, argv, &o, &rc)) return rc;
    if (o.kind) return print_kind(o.kind);
    const char *name;
    int status = 0;
    for (int i = 0; status == 0 && (name = clnet_layer_kind_name(i)); i++) {
        if (i) printf("\n");
        status = print_kind(name);
    }
    return status;
}
