/* The kernel cache's entry reader: header, lengths, both CRCs, the key. The
 * input is the file the cache holds for the key "fuzz-key"; a damaged one is
 * deleted, so each input writes it again. */
#include "fuzz.h"
#include "kcache.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    clnet_cache_config cfg = {.enabled = 1};
    const char *dir = fuzz_dir();
    if (!dir) return 0;
    snprintf(cfg.dir, sizeof cfg.dir, "%s", dir);
    char path[4200];
    clnet_kcache_path(&cfg, "fuzz-key", path, sizeof path);
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t wrote = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || wrote != size) return 0;
    unsigned char *bin = NULL;
    size_t len = 0;
    if (clnet_kcache_load(&cfg, "fuzz-key", &bin, &len)) fuzz_use(bin, len);
    free(bin);
    return 0;
}
