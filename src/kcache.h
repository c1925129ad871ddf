/* The on-disk cache of built kernel binaries.
 *
 * One file per key, named by a hash of the key. Every file starts with its
 * own header, checked before the binary is handed to the driver (PoCL 3
 * aborts the process on a damaged binary):
 *
 *   offset size
 *   0      8    magic "CLNETKC\0"
 *   8      4    format version (1), little endian
 *   12     4    key length K
 *   16     8    payload length P
 *   24     4    CRC-32 of the payload
 *   28     4    CRC-32 of bytes 0..27 and the key
 *   32     K    the full key (text)
 *   32+K   P    the driver's binary
 *
 * Files are written to a temporary name and renamed into place, so readers
 * never see half a file. */
#ifndef CLNET_KCACHE_H
#define CLNET_KCACHE_H

#include "device.h"

/* The key: a hash of the source and everything that changes the binary. */
char *clnet_kcache_key(const clnet_device *d, const char *source, const char *options);

/* 1 and a malloc'd binary on a hit; 0 on a miss. A damaged entry is deleted,
 * with a warning, and counts as a miss. */
int clnet_kcache_load(const clnet_cache_config *cfg, const char *key, unsigned char **bin,
                      size_t *len);

/* Stores a binary; 1 when stored. Failures only warn (the cache is an
 * optimisation). */
int clnet_kcache_store(const clnet_cache_config *cfg, const char *key, const unsigned char *bin,
                       size_t len);

/* The file a key is stored in (for tests and tools). */
void clnet_kcache_path(const clnet_cache_config *cfg, const char *key, char *out, size_t cap);

#endif
