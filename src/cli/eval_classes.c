/* clnet eval --top-k K and --confusion FILE.csv: the test set's top-K accuracy
 * and confusion matrix (clnet_net_evaluate_classes), the classes named as the
 * checkpoint records them (its class_names), else as the test set names them,
 * else by number. */
#include "eval_classes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* On stderr too when there are at most this many classes. */
#define PRINT_MAX_CLASSES 20

int eval_classes_check(const train_options *o, const clnet_net *net) {
    if (!o->top_k && !o->confusion) return 0;
    const char *which = o->top_k ? "--top-k" : "--confusion";
    if (!clnet_net_is_classifier(net)) {
        fprintf(stderr, "clnet eval: %s: %s has no classes (its loss is a regression's)\n", which,
                o->model);
        return 2;
    }
    int classes = clnet_net_classes(net);
    if (o->top_k > classes) {
        fprintf(stderr, "clnet eval: --top-k %ld: %s has %d classes (K is 1 to %d)\n", o->top_k,
                o->model, classes, classes);
        return 2;
    }
    return cli_writable("--confusion", o->confusion) ? 0 : 2;
}

/* Class k's name: line k of the checkpoint's class_names, else the data set's, else its
 * number (in `number`). */
static const char *class_name(const char *names, const clnet_dataset *ds, int k, char *number,
                              size_t cap, size_t *len) {
    const char *line = names;
    for (int i = 0; line && *line && i < k; i++) {
        line = strchr(line, '\n');
        if (line) line++;
    }
    if (line && *line) {
        const char *end = strchr(line, '\n');
        *len = end ? (size_t)(end - line) : strlen(line);
        return line;
    }
    const char *name = clnet_dataset_class_name(ds, k);
    if (!name) {
        snprintf(number, cap, "%d", k);
        name = number;
    }
    *len = strlen(name);
    return name;
}

/* The matrix as CSV: a header "true\predicted,<class>,...", then a row per true class. */
static int write_csv(const char *path, const int64_t *m, int K, const char *names,
                     const clnet_dataset *ds) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "clnet eval: --confusion: cannot write %s\n", path);
        return 1;
    }
    char number[16];
    size_t len;
    fprintf(f, "true\\predicted");
    for (int j = 0; j < K; j++) {
        fputc(',', f);
        const char *name = class_name(names, ds, j, number, sizeof number, &len);
        cli_csv_field(f, name, len);
    }
    fputc('\n', f);
    for (int i = 0; i < K; i++) {
        const char *name = class_name(names, ds, i, number, sizeof number, &len);
        cli_csv_field(f, name, len);
        for (int j = 0; j < K; j++) fprintf(f, ",%lld", (long long)m[(size_t)i * K + j]);
        fputc('\n', f);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "clnet eval: --confusion: writing %s failed\n", path);
        return 1;
    }
    return 0;
}

/* The matrix on stderr, columns as wide as the largest count (the classes by number
 * above them; by name too at the left, where they have names). */
static void print_matrix(const int64_t *m, int K, const char *names, const clnet_dataset *ds) {
    int64_t most = 0;
    for (size_t i = 0; i < (size_t)K * K; i++) most = m[i] > most ? m[i] : most;
    int width = snprintf(NULL, 0, "%lld", (long long)most);
    if (width < snprintf(NULL, 0, "%d", K - 1)) width = snprintf(NULL, 0, "%d", K - 1);
    int named = names[0] || clnet_dataset_class_name(ds, 0);
    size_t label = 0, len;
    char number[16];
    for (int i = 0; i < K && named; i++) {
        class_name(names, ds, i, number, sizeof number, &len);
        label = len > label ? len : label;
    }
    if (label > 24) label = 24;
    fprintf(stderr, "confusion (rows: true class, columns: predicted)\n%*s",
            (int)label + (named ? 4 : 3), "");
    for (int j = 0; j < K; j++) fprintf(stderr, " %*d", width, j);
    fprintf(stderr, "\n");
    for (int i = 0; i < K; i++) {
        const char *name = class_name(names, ds, i, number, sizeof number, &len);
        if (named)
            fprintf(stderr, "%-*.*s %2d:", (int)label, (int)(len < label ? len : label), name, i);
        else
            fprintf(stderr, "%2d:", i);
        for (int j = 0; j < K; j++)
            fprintf(stderr, " %*lld", width, (long long)m[(size_t)i * K + j]);
        fprintf(stderr, "\n");
    }
}

int eval_classes(const train_options *o, train_session *s) {
    if (!o->top_k && !o->confusion) return 0;
    int K = clnet_net_classes(s->net), rc = 0;
    int64_t *m = calloc((size_t)K * K, sizeof *m);
    clnet_progress *p = calloc(1, sizeof *p);
    if (!m || !p) {
        free(m), free(p);
        fprintf(stderr, "clnet eval: out of memory for the confusion matrix\n");
        return 1;
    }
    clnet_loader_config cfg;
    train_eval_config(o, s, &cfg); /* as train_evaluate prepares it */
    clnet_class_counts c;
    if (clnet_net_evaluate_classes(s->net, s->test, &cfg, o->top_k ? (int)o->top_k : 1, &c, m) !=
        CLNET_OK) {
        rc = train_fail("--top-k and --confusion");
        goto done;
    }
    if (!train_is_root()) goto done;
    if (clnet_checkpoint_progress(o->weights, p) != CLNET_OK) p->class_names[0] = '\0';
    if (o->top_k) printf("test_top%ld_accuracy=%.4f\n", o->top_k, c.top_k_accuracy);
    if (o->confusion) {
        if (K <= PRINT_MAX_CLASSES) print_matrix(m, K, p->class_names, s->test);
        rc = write_csv(o->confusion, m, K, p->class_names, s->test);
    }
done:
    free(m), free(p);
    return rc;
}
