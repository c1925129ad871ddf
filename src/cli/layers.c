/* clnet layers [KIND]: the model-file reference, printed from the tables the
 * model-file parser itself reads (so it says what the parser does). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* A kind and its options, one per line (the key, its default, what it
 * takes), each with its help on a line of its own. */
static int print_kind(const char *kind) {
    int count = 0;
    if (clnet_layer_kind_options(kind, &count) != CLNET_OK) {
        fprintf(stderr, "clnet layers: %s\n", clnet_last_error());
        return 2;
    }
    printf("%s\n  %-12s %-24s %s\n", kind, "option", "default", "takes");
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

int cmd_layers(int argc, char **argv) {
    if (argc > 1 || (argc == 1 && argv[0][0] == '-')) {
        int help = argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0);
        fprintf(help ? stdout : stderr,
                "usage: clnet layers [KIND]\n"
                "the layer kinds a model file may use, each with its options: its default,\n"
                "what it takes and what it does (KIND: that kind alone)\n");
        return help ? 0 : 2;
    }
    if (argc == 1) return print_kind(argv[0]);
    const char *name;
    int status = 0;
    for (int i = 0; status == 0 && (name = clnet_layer_kind_name(i)); i++) {
        if (i) printf("\n");
        status = print_kind(name);
    }
    return status;
}
