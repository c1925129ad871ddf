/* `clnet summary MODEL`: every layer's kind, output shape, parameters, multiply-adds and
 * activation memory, and the totals, as torchinfo prints a PyTorch module's summary. No
 * device is opened: the model file alone says all of it. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *model, *input;
    long batch;
} summary_options;

#define AT(field) CLI_AT(summary_options, field)

static const cli_opt summary_opts[] = {
    {.name = "--batch",
     .arg = "B",
     .type = CLI_INT,
     .at = AT(batch),
     .min = 1,
     .max = 1 << 20,
     .def = "256",
     .help = "the batch the activation memory is counted at"},
    {.name = "--input",
     .arg = "HxW",
     .type = CLI_TEXT,
     .at = AT(input),
     .help = "the model at another input height and width than its file's\n"
             "(d2l's networks at 224, 96 or 28)"},
    {0},
};

const cli_command cli_summary_cmd = {
    .name = "summary",
    .size = sizeof(summary_options),
    CLI_MODEL(summary_options),
    .opts = summary_opts,
    .footer = "Multiply-adds count the weights of convolutions and linear layers, one\n"
              "sample's forward pass (as torchinfo counts them); activations are each\n"
              "layer's output (views share their input's). stdout ends with\n"
              "  summary: params=<n> buffers=<n> mult_adds=<n> activation_bytes=<n per sample>\n",
};

/* The model file's text with its input line's height and width set to h and w, in a
 * temporary file (its path into tmp): 0, or 1 after a message. */
static int with_input(const char *model, int h, int w, char *tmp, size_t cap) {
    FILE *in = fopen(model, "r");
    if (!in) {
        fprintf(stderr, "clnet summary: %s: %s\n", model, strerror(errno));
        return 1;
    }
    snprintf(tmp, cap, "/tmp/clnet-summary-XXXXXX");
    int fd = mkstemp(tmp);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!out) {
        fprintf(stderr, "clnet summary: cannot make a temporary model file: %s\n", strerror(errno));
        fclose(in);
        return 1;
    }
    char line[4096];
    int done = 0;
    while (fgets(line, sizeof line, in)) {
        const char *p = line + strspn(line, " \t");
        if (done || strncmp(p, "input", 5) != 0 || (p[5] != ' ' && p[5] != '\t')) {
            fputs(line, out);
            continue;
        }
        /* the input line: its channels= kept, height= and width= the new ones */
        const char *channels = strstr(p, "channels=");
        int c = channels ? atoi(channels + 9) : 1;
        fprintf(out, "input channels=%d height=%d width=%d\n", c, h, w);
        done = 1;
    }
    fclose(in);
    if (fclose(out) != 0 || !done) {
        fprintf(stderr, "clnet summary: %s: %s\n", model,
                done ? "cannot write the temporary model file" : "has no input line");
        unlink(tmp);
        return 1;
    }
    return 0;
}

static void shape_text(const clnet_layer_info *l, char *out, size_t cap) {
    size_t used = (size_t)snprintf(out, cap, "%d", l->out_shape[0]);
    for (int d = 1; d < l->out_rank && used < cap; d++)
        used += (size_t)snprintf(out + used, cap - used, "x%d", l->out_shape[d]);
}

/* n with thousands separated by commas, into out. */
static const char *grouped(size_t n, char *out, size_t cap) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%zu", n), at = 0;
    for (int i = 0; i < len && at + 2 < (int)cap; i++) {
        if (i && (len - i) % 3 == 0) out[at++] = ',';
        out[at++] = digits[i];
    }
    out[at] = '\0';
    return out;
}

static const char *bytes_text(double b, char *out, size_t cap) {
    if (b >= 1 << 30)
        snprintf(out, cap, "%.2f GiB", b / (1 << 30));
    else if (b >= 1 << 20)
        snprintf(out, cap, "%.2f MiB", b / (1 << 20));
    else
        snprintf(out, cap, "%.1f KiB", b / 1024);
    return out;
}

static void print_table(const clnet_net *net, long batch) {
    size_t macs = 0, activations = 0;
    char a[32], b[32], c[32], shape[48];
    printf("%-24s %-22s %-16s %12s %15s %12s\n", "layer", "kind", "output", "params", "mult-adds",
           "activations");
    for (int i = 0; i < clnet_net_layer_count(net); i++) {
        clnet_layer_info l;
        if (clnet_net_layer_info(net, i, &l) != CLNET_OK) continue;
        size_t values = 1;
        for (int d = 0; d < l.out_rank; d++) values *= (size_t)l.out_shape[d];
        size_t bytes = l.is_view ? 0 : values * sizeof(float);
        shape_text(&l, shape, sizeof shape);
        printf("%-24s %-22s %-16s %12s %15s %12s\n", l.name, l.kind, shape,
               grouped(l.params, a, sizeof a), grouped(l.macs, b, sizeof b),
               l.is_view ? "(view)" : bytes_text((double)bytes * (double)batch, c, sizeof c));
        macs += l.macs;
        activations += bytes;
    }
    size_t params = clnet_net_param_count(net), buffers = clnet_net_buffer_count(net);
    printf("\nparameters %s (%s), buffers %s, mult-adds %s a sample\n",
           grouped(params, a, sizeof a), bytes_text((double)params * 4, b, sizeof b),
           grouped(buffers, c, sizeof c), grouped(macs, shape, sizeof shape));
    printf("activations %s a sample, %s at batch %ld (training keeps about as much again in "
           "gradients)\n",
           bytes_text((double)activations, a, sizeof a),
           bytes_text((double)activations * (double)batch, b, sizeof b), batch);
    printf("summary: params=%zu buffers=%zu mult_adds=%zu activation_bytes=%zu\n", params, buffers,
           macs, activations);
}

int cmd_summary(int argc, char **argv) {
    summary_options o = {0};
    int rc;
    if (!cli_parse(&cli_summary_cmd, argc, argv, &o, &rc)) return rc;
    char tmp[64] = "";
    const char *path = o.model;
    int h = 0, w = 0;
    if (o.input) {
        if ((rc = cli_size("--input", o.input, &h, &w)) != 0) return rc;
        if (with_input(o.model, h, w, tmp, sizeof tmp)) return 1;
        path = tmp;
    }
    clnet_net *net = NULL;
    clnet_status st = clnet_net_load(&net, path);
    if (*tmp) unlink(tmp);
    if (st != CLNET_OK) {
        fprintf(stderr, "clnet summary: %s: %s\n", o.model, clnet_last_error());
        return 1;
    }
    print_table(net, o.batch);
    clnet_net_free(net);
    return 0;
}
