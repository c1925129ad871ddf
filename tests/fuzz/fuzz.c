/* What every fuzz target shares: scratch files and quiet warnings. */
#include "fuzz.h"

#include "clnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[512];

static void remove_dir(void) {
    char cmd[600];
    if (!dir[0]) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", dir);
}

const char *fuzz_dir(void) {
    if (dir[0]) return dir;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/clnet-fuzz-%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    if (mkdir(dir, 0700) != 0 && access(dir, W_OK) != 0) {
        dir[0] = '\0';
        return NULL;
    }
    atexit(remove_dir);
    return dir;
}

const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
    static char paths[4][600];
    static const char *names[4];
    int slot = 0;
    while (slot < 3 && names[slot] && strcmp(names[slot], name) != 0) slot++;
    names[slot] = name;
    if (!fuzz_dir()) return NULL;
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", dir, name);
    FILE *f = fopen(paths[slot], "wb");
    if (!f) return NULL;
    size_t wrote = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || wrote != size) return NULL;
    return paths[slot];
}

volatile unsigned char fuzz_sink; /* what fuzz_use reads ends here */

void fuzz_use(const void *p, size_t bytes) {
    const unsigned char *b = p;
    unsigned char x = 0;
    for (size_t i = 0; i < bytes; i++) x ^= b[i];
    fuzz_sink = x;
}

static void drop(const char *message, void *user) {
    (void)message;
    (void)user;
}

void fuzz_quiet(void) {
    clnet_set_log_handler(drop, NULL);
}
