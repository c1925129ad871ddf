/* The kernel log (kernel_log.h). */
#include "kernel_log.h"
#include "fileio.h"
#include "sources.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards the files and the list */
static char written[64][64]; /* the programs whose source this process wrote */
static int written_count, warned;

static void warn(const char *path) {
    if (!warned) fprintf(stderr, "clnet: CLNET_KERNEL_LOG: cannot write %s\n", path);
    warned = 1;
}

/* DIR/<program>.cl, once a process (under lock), through a file of this
 * process's renamed over it: processes that log into one folder at once
 * (the tests) each write whole files. */
static void write_source(const clnet_device *d, const char *dir, const char *program) {
    for (int i = 0; i < written_count; i++)
        if (strcmp(written[i], program) == 0) return;
    char path[4200], tmp[4300], *text = NULL;
    snprintf(path, sizeof path, "%s/%s.cl", dir, program);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = NULL;
    int ok = clnet_kernel_source(program, d->env->kernel_dir, &text) == CLNET_OK &&
             (f = fopen(tmp, "w")) && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) == 0) {
        if (written_count < 64)
            snprintf(written[written_count++], sizeof written[0], "%s", program);
    } else {
        remove(tmp);
        warn(path);
    }
    free(text);
}

void clnet_kernel_log(const clnet_device *d, const char *family, const char *options,
                      const char *name, int dims, const size_t *local) {
    const char *dir = d->env->kernel_log;
    if (!dir || !*dir) return;
    if (!options) options = "";
    const char *program = clnet_program_of(family, options);
    char size[64] = "-", path[4200];
    if (local)
        snprintf(size, sizeof size, "%zux%zux%zu", local[0], dims > 1 ? local[1] : 1,
                 dims > 2 ? local[2] : 1);
    snprintf(path, sizeof path, "%s/kernels.tsv", dir);
    pthread_mutex_lock(&lock);
    if (clnet_make_dirs(dir) != 0) warn(dir);
    write_source(d, dir, program);
    /* one line a write (appended whole, whoever else appends) */
    FILE *f = fopen(path, "a");
    if (!f || fprintf(f, "%s\t%s\t%s\t%s\n", program, options, name, size) < 0) warn(path);
    if (f) fclose(f);
    pthread_mutex_unlock(&lock);
}
