/* A fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput once on every
 * file named on the command line and on every file in the folders named
 * there, in name order, and prints how many it ran. A target that crashes or
 * that a sanitizer stops fails the run, naming the input it was given last. */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 0;
    }
    size_t cap = 4096, size = 0;
    uint8_t *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + size, 1, cap - size, f)) > 0) {
        size += got;
        if (size == cap) {
            uint8_t *bigger = realloc(data, cap *= 2);
            if (!bigger) free(data);
            data = bigger;
        }
    }
    fclose(f);
    if (!data) {
        fprintf(stderr, "replay: out of memory for %s\n", path);
        return 0;
    }
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 1;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of a folder, in name order: the inputs it ran, or -1. */
static int run_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) return -1;
    char **names = NULL;
    int count = 0, ran = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char **more = realloc(names, (size_t)(count + 1) * sizeof *names);
        if (!more) break;
        names = more;
        names[count] = malloc(strlen(path) + strlen(e->d_name) + 2);
        if (!names[count]) break;
        sprintf(names[count++], "%s/%s", path, e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)count, sizeof *names, by_name);
    for (int i = 0; i < count; i++) {
        ran += run_file(names[i]);
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
        return 2;
    }
    int ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            return 1;
        }
        int n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
        if (n < 0) {
            fprintf(stderr, "replay: cannot read the folder %s\n", argv[i]);
            return 1;
        }
        ran += n;
    }
    printf("replay: %d inputs ran\n", ran);
    return ran > 0 ? 0 : 1;
}
