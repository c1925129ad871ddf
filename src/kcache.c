/* On-disk kernel binary cache. */
#include "alloc.h"
#include "kcache.h"
#include "bytes.h"
#include "fileio.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define HEADER_BYTES    32
#define FORMAT_VERSION  1
#define MAX_ENTRY_BYTES (512u << 20)
static const char MAGIC[8] = "CLNETKC";

char *clnet_kcache_key(const clnet_device *d, const char *source, const char *options) {
    size_t n = strlen(source);
    /* Two independent hashes of the source make an accidental match of a
     * changed source vanishingly unlikely; the rest of the key is verbatim. */
    unsigned long long h = (unsigned long long)clnet_fnv1a(source, n, CLNET_FNV_BASIS);
    unsigned long c = (unsigned long)clnet_crc32(source, n);
    const char *fmt = "clnet kernel cache key\n"
                      "source: %zu bytes, fnv1a %016llx, crc32 %08lx\n"
                      "options: %s\n"
                      "device: %s\n"
                      "device version: %s\n"
                      "driver: %s\n"
                      "platform: %s\n"
                      "platform version: %s\n";
    int len = snprintf(NULL, 0, fmt, n, h, c, options, d->info.name, d->info.device_version,
                       d->info.driver_version, d->info.platform_name, d->info.platform_version);
    char *key = clnet_malloc((size_t)len + 1);
    if (!key) return NULL;
    snprintf(key, (size_t)len + 1, fmt, n, h, c, options, d->info.name, d->info.device_version,
             d->info.driver_version, d->info.platform_name, d->info.platform_version);
    return key;
}

void clnet_kcache_path(const clnet_cache_config *cfg, const char *key, char *out, size_t cap) {
    unsigned long long h = (unsigned long long)clnet_fnv1a(key, strlen(key), CLNET_FNV_BASIS);
    snprintf(out, cap, "%s/%016llx.clbin", cfg->dir, h);
}

/* Reads a whole file; -1 when it cannot be opened, -2 when too large. */
static int read_file(const char *path, unsigned char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_ENTRY_BYTES) {
                free(buf);
                fclose(f);
                return -2;
            }
            cap = cap ? cap * 2 : 65536;
            unsigned char *grown = clnet_realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    *data = buf;
    *len = n;
    return 0;
}

/* Why an entry is unusable, or NULL when it is sound and matches key. */
static const char *check_entry(const unsigned char *f, size_t n, const char *key, int *other_key) {
    size_t keylen = strlen(key);
    *other_key = 0;
    if (n < HEADER_BYTES) return "shorter than its header (truncated)";
    if (memcmp(f, MAGIC, 8) != 0) return "bad magic (not a clnet cache file)";
    if (clnet_get_le32(f + 8) != FORMAT_VERSION) return "unknown format version";
    uint64_t klen = clnet_get_le32(f + 12), plen = clnet_get_le64(f + 16);
    if (klen > n || plen > n || HEADER_BYTES + klen + plen != n)
        return "length does not match its header (truncated or extended)";
    unsigned char head[HEADER_BYTES];
    memcpy(head, f, HEADER_BYTES);
    clnet_put_le32(head + 28, 0);
    uint32_t hc = clnet_crc32(head, HEADER_BYTES);
    hc = (uint32_t)crc32(hc, f + HEADER_BYTES, (uInt)klen);
    if (hc != clnet_get_le32(f + 28)) return "header checksum mismatch (corrupt)";
    if (clnet_crc32(f + HEADER_BYTES + klen, plen) != clnet_get_le32(f + 24))
        return "payload checksum mismatch (corrupt)";
    if (klen != keylen || memcmp(f + HEADER_BYTES, key, keylen) != 0) *other_key = 1;
    return NULL;
}

int clnet_kcache_load(const clnet_cache_config *cfg, const char *key, unsigned char **bin,
                      size_t *len) {
    if (!cfg->enabled) return 0;
    char path[4200];
    clnet_kcache_path(cfg, key, path, sizeof path);
    unsigned char *file = NULL;
    size_t n = 0;
    int r = read_file(path, &file, &n);
    if (r == -1) return 0;
    const char *why = r == -2 ? "larger than any kernel binary" : NULL;
    int other_key = 0;
    if (!why) why = check_entry(file, n, key, &other_key);
    if (why) {
        clnet_warn("discarding kernel cache entry %s: %s; rebuilding", path, why);
        unlink(path);
        free(file);
        return 0;
    }
    if (other_key) { /* a hash collision: sound, but another kernel's */
        free(file);
        return 0;
    }
    size_t off = HEADER_BYTES + strlen(key);
    *len = n - off;
    *bin = clnet_malloc(*len ? *len : 1);
    if (!*bin) {
        free(file);
        return 0;
    }
    memcpy(*bin, file + off, *len);
    free(file);
    return 1;
}

int clnet_kcache_store(const clnet_cache_config *cfg, const char *key, const unsigned char *bin,
                       size_t len) {
    if (!cfg->enabled) return 0;
    char path[4200];
    if (clnet_make_dirs(cfg->dir) != 0) {
        clnet_warn("cannot create kernel cache folder %s: %s", cfg->dir, strerror(errno));
        return 0;
    }
    clnet_kcache_path(cfg, key, path, sizeof path);
    size_t keylen = strlen(key);
    unsigned char head[HEADER_BYTES] = {0};
    memcpy(head, MAGIC, 8);
    clnet_put_le32(head + 8, FORMAT_VERSION);
    clnet_put_le32(head + 12, (uint32_t)keylen);
    clnet_put_le64(head + 16, len);
    clnet_put_le32(head + 24, clnet_crc32(bin, len));
    uint32_t hc = clnet_crc32(head, HEADER_BYTES);
    hc = (uint32_t)crc32(hc, (const unsigned char *)key, (uInt)keylen);
    clnet_put_le32(head + 28, hc);
    clnet_atomic_file f;
    clnet_status s = clnet_atomic_open(&f, path);
    if (s == CLNET_OK) s = clnet_atomic_write(&f, head, HEADER_BYTES);
    if (s == CLNET_OK) s = clnet_atomic_write(&f, key, keylen);
    if (s == CLNET_OK) s = clnet_atomic_write(&f, bin, len);
    if (s == CLNET_OK) s = clnet_atomic_commit(&f);
    clnet_atomic_abort(&f);
    if (s != CLNET_OK) { /* the cache is an optimisation: say so and go on */
        clnet_warn("cannot write kernel cache entry: %s", clnet_last_error());
        return 0;
    }
    return 1;
}
